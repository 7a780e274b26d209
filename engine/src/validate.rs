//! `validate()`: cross-checks every index against the primary data. Run by tests, the crash
//! test and fuzzing; cheap enough for an operator to run on a copy of production data.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use roaring::RoaringTreemap;

use crate::bitmap;
use crate::catalog::{self, IndexState};
use crate::codec;
use crate::columns::Cf;
use crate::error::EngineError;
use crate::keys;
use crate::model::{Direction, NodeId, WorkspaceId};
use crate::schema;
use crate::store::KvRead;
use crate::writer::Shared;

/// What validation looked at and what it found wrong (empty `problems`: consistent).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ValidationReport {
    pub nodes: u64,
    pub edges: u64,
    pub property_index_entries: u64,
    pub identity_entries: u64,
    pub problems: Vec<String>,
}

impl ValidationReport {
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }

    fn problem(&mut self, p: String) {
        const MAX_REPORTED: usize = 100;
        if self.problems.len() < MAX_REPORTED {
            self.problems.push(p);
        }
    }
}

type LabelMap = HashMap<(WorkspaceId, String), RoaringTreemap>;

fn scan_all(kv: &dyn KvRead, cf: Cf, mut f: impl FnMut(&[u8], &[u8])) -> Result<(), EngineError> {
    kv.scan(cf, &[], None, false, &mut |k, v| {
        f(k, v);
        true
    })
}

fn compare_labels(
    report: &mut ValidationReport,
    what: &str,
    expected: &LabelMap,
    actual: &LabelMap,
) {
    let keys: BTreeSet<&(WorkspaceId, String)> = expected.keys().chain(actual.keys()).collect();
    let empty = RoaringTreemap::new();
    for k in keys {
        let (e, a) = (
            expected.get(k).unwrap_or(&empty),
            actual.get(k).unwrap_or(&empty),
        );
        if e != a {
            report.problem(format!(
                "{what} label bitmap {:?} of {} differs from the nodes: {} expected, {} present",
                k.1,
                k.0,
                e.len(),
                a.len()
            ));
        }
    }
}

pub(crate) fn validate(shared: &Shared) -> Result<ValidationReport, EngineError> {
    let (snap, memory_labels) = {
        let _g = shared.visibility.read();
        (shared.store.snapshot(), shared.labels.all())
    };
    let mut report = ValidationReport::default();
    let mut expected_labels: LabelMap = HashMap::new();
    let mut expected_index: BTreeSet<Vec<u8>> = BTreeSet::new();
    let mut max_id = 0u64;

    let mut node_failures = Vec::new();
    let mut labels_of: HashMap<(WorkspaceId, u64), Vec<String>> = HashMap::new();
    let mut expected_counts: BTreeMap<Vec<u8>, i64> = BTreeMap::new();
    // Declared indexes: ONLINE ones are checked like built-in ones; the entries and counters
    // of those still being built or dropped are partial by design and not compared.
    let declared = catalog::all_declared(&snap)?;
    let mut unchecked: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    for (ws, d) in declared
        .iter()
        .filter(|(_, d)| d.state != IndexState::Online)
    {
        let mut count = keys::index_count_key(*ws, &d.label, &d.property, 0);
        count.pop();
        unchecked.push((keys::prop_index_prefix(*ws, &d.label, &d.property), count));
    }
    let is_unchecked = |k: &[u8]| {
        unchecked
            .iter()
            .any(|(entries, counts)| k.starts_with(entries) || k.starts_with(counts))
    };
    scan_all(&snap, Cf::Nodes, |k, v| {
        report.nodes += 1;
        let Some((ws, id)) = keys::decode_id_key(k) else {
            node_failures.push(format!("malformed node key {k:?}"));
            return;
        };
        max_id = max_id.max(id);
        match codec::decode_node(v) {
            Ok(rec) => {
                labels_of.insert((ws, id), rec.labels.clone());
                for l in rec
                    .labels
                    .iter()
                    .map(String::as_str)
                    .chain([schema::ALL_NODES])
                {
                    expected_labels
                        .entry((ws, l.to_owned()))
                        .or_default()
                        .insert(id);
                }
                for d in schema::indexes_for_labels(&rec.labels) {
                    if let Some(val) = rec.properties.get(d.property).and_then(keys::index_value) {
                        expected_index.insert(keys::prop_index_key(
                            ws,
                            d.label,
                            d.property,
                            &val,
                            NodeId(id),
                        ));
                    }
                }
                for (_, d) in declared.iter().filter(|(dws, d)| {
                    *dws == ws && d.state == IndexState::Online && rec.labels.contains(&d.label)
                }) {
                    if let Some(val) = rec.properties.get(&d.property).and_then(keys::index_value) {
                        expected_index.insert(keys::prop_index_key(
                            ws,
                            &d.label,
                            &d.property,
                            &val,
                            NodeId(id),
                        ));
                    }
                }
            }
            Err(e) => node_failures.push(format!("node {id} of {ws}: {e}")),
        }
    })?;
    node_failures.into_iter().for_each(|p| report.problem(p));

    let memory: LabelMap = memory_labels
        .into_iter()
        .flat_map(|(ws, labels)| {
            std::sync::Arc::unwrap_or_clone(labels)
                .into_iter()
                .map(move |(l, b)| ((ws, l), (*b).clone()))
        })
        .collect();
    compare_labels(&mut report, "in-memory", &expected_labels, &memory);
    let mut persisted: LabelMap = HashMap::new();
    let mut label_failures = Vec::new();
    scan_all(&snap, Cf::Labels, |k, v| {
        match (keys::decode_label_key(k), bitmap::decode_full(v)) {
            (Some(key), Some(bits)) => {
                persisted.insert(key, bits);
            }
            _ => label_failures.push(format!("undecodable label bitmap {k:?}")),
        }
    })?;
    label_failures.into_iter().for_each(|p| report.problem(p));
    compare_labels(&mut report, "persisted", &expected_labels, &persisted);

    let mut actual_index = BTreeSet::new();
    scan_all(&snap, Cf::PropIndex, |k, _| {
        if !is_unchecked(k) {
            actual_index.insert(k.to_vec());
        }
    })?;
    report.property_index_entries = actual_index.len() as u64;
    for k in expected_index.difference(&actual_index) {
        report.problem(format!(
            "missing property index entry {:?}",
            keys::decode_prop_index_key(k)
        ));
    }
    for k in actual_index.difference(&expected_index) {
        report.problem(format!(
            "stale property index entry {:?}",
            keys::decode_prop_index_key(k)
        ));
    }

    let node_exists = |ws: WorkspaceId, id: NodeId| {
        expected_labels
            .get(&(ws, schema::ALL_NODES.to_owned()))
            .is_some_and(|b| b.contains(id.0))
    };
    let mut expected_adjacency = BTreeSet::new();
    let mut edge_problems = Vec::new();
    scan_all(&snap, Cf::Edges, |k, v| {
        report.edges += 1;
        let Some((ws, id)) = keys::decode_id_key(k) else {
            edge_problems.push(format!("malformed edge key {k:?}"));
            return;
        };
        max_id = max_id.max(id);
        match codec::decode_edge(v) {
            Ok(e) => {
                *expected_counts
                    .entry(keys::type_count_key(ws, &e.rel_type))
                    .or_default() += 1;
                for (n, side) in [(e.start, Direction::Outgoing), (e.end, Direction::Incoming)] {
                    for l in labels_of.get(&(ws, n.0)).into_iter().flatten() {
                        *expected_counts
                            .entry(keys::endpoint_label_key(ws, &e.rel_type, side, l))
                            .or_default() += 1;
                    }
                }
                for n in [e.start, e.end] {
                    if !node_exists(ws, n) {
                        edge_problems.push(format!("edge {id} of {ws} points at missing node {n}"));
                    }
                }
                for (node, direction, neighbour) in [
                    (e.start, Direction::Outgoing, e.end),
                    (e.end, Direction::Incoming, e.start),
                ] {
                    expected_adjacency.insert(keys::adjacency_key(&keys::AdjacencyKey {
                        ws,
                        node,
                        direction,
                        rel_type: e.rel_type.clone(),
                        neighbour,
                        edge: crate::model::EdgeId(id),
                    }));
                }
            }
            Err(e) => edge_problems.push(format!("edge {id} of {ws}: {e}")),
        }
    })?;
    edge_problems.into_iter().for_each(|p| report.problem(p));
    let mut actual_adjacency = BTreeSet::new();
    scan_all(&snap, Cf::Adjacency, |k, _| {
        actual_adjacency.insert(k.to_vec());
    })?;
    for k in expected_adjacency.difference(&actual_adjacency) {
        report.problem(format!(
            "missing adjacency entry {:?}",
            keys::decode_adjacency_key(k)
        ));
    }
    for k in actual_adjacency.difference(&expected_adjacency) {
        report.problem(format!(
            "adjacency entry without its edge {:?}",
            keys::decode_adjacency_key(k)
        ));
    }

    // Counters: every degree, index value-type, type and endpoint-label count equals what the
    // primary data implies (a missing counter and a zero are the same).
    for k in &expected_adjacency {
        if let Some(a) = keys::decode_adjacency_key(k) {
            *expected_counts
                .entry(keys::degree_key_of_adjacency(&a))
                .or_default() += 1;
        }
    }
    for k in &expected_index {
        if let Some(c) = keys::index_count_key_of_entry(k) {
            *expected_counts.entry(c).or_default() += 1;
        }
    }
    let mut actual_counts: BTreeMap<Vec<u8>, i64> = BTreeMap::new();
    let mut count_failures = Vec::new();
    scan_all(&snap, Cf::Counts, |k, v| match keys::read_count(v) {
        Some(0) => {}
        Some(_) if is_unchecked(k) => {}
        Some(n) => {
            actual_counts.insert(k.to_vec(), n);
        }
        None => count_failures.push(format!("undecodable counter {k:?}")),
    })?;
    count_failures.into_iter().for_each(|p| report.problem(p));
    let counter_keys: BTreeSet<&Vec<u8>> =
        expected_counts.keys().chain(actual_counts.keys()).collect();
    for k in counter_keys {
        let (e, a) = (
            expected_counts.get(k).copied().unwrap_or(0),
            actual_counts.get(k).copied().unwrap_or(0),
        );
        if e != a {
            let what = keys::decode_degree_key(k)
                .map(|d| format!("degree {d:?}"))
                .unwrap_or_else(|| format!("index counter {k:?}"));
            report.problem(format!("{what} is {a}, the data says {e}"));
        }
    }

    let customers = |ws: WorkspaceId| expected_labels.get(&(ws, schema::CUSTOMER.to_owned()));
    let mut identity_problems = Vec::new();
    scan_all(&snap, Cf::Identity, |k, v| {
        report.identity_entries += 1;
        match (keys::decode_identity_key(k), keys::read_u64(v)) {
            (Some((ws, kind, value)), Some(id)) => {
                if !customers(ws).is_some_and(|b| b.contains(id)) {
                    identity_problems.push(format!(
                        "identity {kind:?} {value:?} of {ws} names {id}, which is not a customer"
                    ));
                }
            }
            _ => identity_problems.push(format!("malformed identity entry {k:?}")),
        }
    })?;
    identity_problems
        .into_iter()
        .for_each(|p| report.problem(p));

    let next = snap
        .get(Cf::Meta, keys::meta::NEXT_ID)?
        .and_then(|b| keys::read_u64(&b))
        .unwrap_or(1);
    if report.nodes + report.edges > 0 && next <= max_id {
        report.problem(format!("id sequence at {next} but id {max_id} is in use"));
    }
    Ok(report)
}
