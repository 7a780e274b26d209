//! The column families of the store, declared once. Every key of every family starts with the
//! 8-byte workspace id (see `keys`), so each family is partitioned by workspace.

/// A column family of the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cf {
    /// Store-wide metadata: format version, id sequence. Keys are one tag byte.
    Meta,
    /// Node records: labels and properties.
    Nodes,
    /// Edge records: type, endpoints and properties.
    Edges,
    /// Adjacency lists in both directions; values are empty.
    Adjacency,
    /// One roaring bitmap of node ids per (workspace, label), updated by merge deltas.
    Labels,
    /// Declared property indexes (equality and ordered); values are empty.
    PropIndex,
    /// Identity index: normalised email / phone / external id -> the customer resolution answers.
    Identity,
    /// Typed domain records (JSON) by (workspace, kind, id).
    Records,
    /// Secondary lookups of records; values are empty.
    RecordIndex,
    /// Counters the writer keeps exact in the same batch as the data they count: per-node,
    /// per-type degrees and per-index value-type counts. Values are i64 totals, updated by
    /// merge deltas (`svc_count_v1`).
    Counts,
}

impl Cf {
    pub const ALL: [Cf; 10] = [
        Cf::Meta,
        Cf::Nodes,
        Cf::Edges,
        Cf::Adjacency,
        Cf::Labels,
        Cf::PropIndex,
        Cf::Identity,
        Cf::Records,
        Cf::RecordIndex,
        Cf::Counts,
    ];

    /// The RocksDB name of the family. Never change one: it is part of the on-disk format.
    pub fn name(self) -> &'static str {
        match self {
            Cf::Meta => "meta",
            Cf::Nodes => "nodes",
            Cf::Edges => "edges",
            Cf::Adjacency => "adjacency",
            Cf::Labels => "labels",
            Cf::PropIndex => "prop_index",
            Cf::Identity => "identity",
            Cf::Records => "records",
            Cf::RecordIndex => "record_index",
            Cf::Counts => "counts",
        }
    }
}
