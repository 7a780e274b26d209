//! Where a run's customers come from, and the run request that can name them.
//!
//! - `manual`: the run request's `leads`, else `leadSource.query` as a list of references
//!   separated by commas or new lines (customer id, email, phone or external id, resolved like
//!   every customer reference; one that matches nobody is recorded as a skipped lead).
//! - `csv` (the run request carries `csv` text): a header line naming a reference column
//!   (`customer`, `customer_id`, `id`, `email`, `phone`, `external_id` or `externalId`, the
//!   first found), then one lead per line. Quoted fields are not supported.
//! - `crm-segment`: `leadSource.query` is either a segment id of `GET /v1/segments` (the same
//!   rules: `recency:active_7d`, `recency:active_30d`, `recency:dormant_90d`, `recency:lapsed`,
//!   `recency:never_seen`, `lifecycle:<stage>`) or `all`, or a read-only Cypher query of the
//!   graph subset whose first column is a Customer node or a customer reference.
//! - `cio-segment` and `orange-slice` need outside providers this service does not reach
//!   (Customer.io's App API for segment membership; the Orange Slice lead database): a run of
//!   such a spec is refused with 400 unless the request carries `leads` or `csv` (for example
//!   an export of that segment).
//!
//! Every source is bounded by `leadSource.sampleSize`; a customer is taken once per run.

use std::collections::HashSet;

use serde::Deserialize;
use serde_json::json;
use svc_engine::schema::CUSTOMER;
use svc_engine::{Direction, GraphRead, Node, NodeId, Value};
use svc_query::{Limits, Params, ResultValue};

use super::run_plan::{Delivery, CADENCE_MAX_MS};
use svc_core::error::{Error, Result};
use svc_core::plumbing::ids::PublicIds;
use svc_domains::crm;
use svc_domains::graph_api::node_with_label;
use svc_domains::graph_api::query::{id_codec, query_error};
use svc_domains::playbooks::{LeadSourceKind, Playbook};

/// Most leads a request may list, the largest `sampleSize`.
pub const MAX_LEADS: usize = 5000;
/// Longest reference.
pub const REFERENCE_CHARS: usize = 320;
/// Longest `csv` text.
pub const CSV_CHARS: usize = 1_000_000;
/// Longest `intent`.
pub const INTENT_CHARS: usize = 200;
/// Intent of the drafts when the request names none.
pub const DEFAULT_INTENT: &str = "follow-up";
const DAY_US: i64 = 24 * 60 * 60 * 1_000_000;

/// Body of `POST /v1/playbooks/:id/run` (optional; every field optional).
#[derive(Clone, Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RunRequest {
    /// Customer references to work (a `manual` run; takes precedence over the spec's source).
    pub leads: Option<Vec<String>>,
    /// CSV text with a header line naming a reference column (a `csv` run).
    pub csv: Option<String>,
    /// `queue` (default: a person approves each message) or `execute`.
    pub delivery: Option<Delivery>,
    /// What the messages are for (`draft.outreach` intent); default `follow-up`.
    pub intent: Option<String>,
    /// `crm-segment` runs: keep taking customers who join the segment later, until
    /// `sampleSize` (default false: complete once the current members are worked).
    pub follow: Option<bool>,
    /// Delay between two leads in milliseconds (default 0, at most one day).
    pub cadence_ms: Option<u64>,
}

/// A run request after its checks.
#[derive(Clone, Debug)]
pub struct Checked {
    pub source: Source,
    pub delivery: Delivery,
    pub intent: String,
    pub follow: bool,
    pub cadence_ms: u64,
}

/// The source a run takes its leads from.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// References, from the request or the spec's query (`manual`) or from CSV rows (`csv`).
    References {
        kind: &'static str,
        refs: Vec<String>,
    },
    /// A segment id or Cypher query over the customer graph.
    Segment(String),
}

impl Source {
    pub fn kind(&self) -> &'static str {
        match self {
            Source::References { kind, .. } => kind,
            Source::Segment(_) => "crm-segment",
        }
    }
}

fn refs_of(list: Vec<String>, field: &str) -> Result<Vec<String>> {
    if list.len() > MAX_LEADS {
        return Err(Error::invalid_field(
            field,
            &list.len().to_string(),
            &format!("at most {MAX_LEADS} leads"),
        ));
    }
    let mut out = Vec::with_capacity(list.len());
    for (i, r) in list.into_iter().enumerate() {
        let r = r.trim().to_owned();
        if r.is_empty() || r.chars().count() > REFERENCE_CHARS {
            return Err(Error::invalid_field(
                &format!("{field}[{i}]"),
                &r,
                &format!("a customer reference of 1 to {REFERENCE_CHARS} characters"),
            ));
        }
        out.push(r);
    }
    Ok(out)
}

/// The references of CSV text (see the module documentation).
pub fn csv_references(text: &str) -> Result<Vec<String>> {
    if text.chars().count() > CSV_CHARS {
        return Err(Error::invalid_field(
            "csv",
            "(too long)",
            &format!("at most {CSV_CHARS} characters"),
        ));
    }
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<String> = lines
        .next()
        .unwrap_or_default()
        .split(',')
        .map(|h| h.trim().to_ascii_lowercase())
        .collect();
    let column = [
        "customer",
        "customer_id",
        "id",
        "email",
        "phone",
        "external_id",
        "externalid",
    ]
    .iter()
    .find_map(|name| header.iter().position(|h| h == name))
    .ok_or_else(|| {
        Error::invalid_field(
            "csv",
            &header.join(","),
            "the header line must name a reference column: customer, customer_id, id, email, \
             phone, external_id or externalId",
        )
    })?;
    let refs = lines
        .filter_map(|l| l.split(',').nth(column).map(|v| v.trim().to_owned()))
        .filter(|v| !v.is_empty())
        .collect();
    refs_of(refs, "csv")
}

/// Checks a run request against the spec: the source, the options and their bounds.
pub fn check(pb: &Playbook, req: RunRequest) -> Result<Checked> {
    let source = match (req.leads, req.csv) {
        (Some(_), Some(_)) => {
            return Err(Error::invalid_input("give either leads or csv, not both"))
        }
        (Some(leads), None) => Source::References {
            kind: "manual",
            refs: refs_of(leads, "leads")?,
        },
        (None, Some(csv)) => Source::References {
            kind: "csv",
            refs: csv_references(&csv)?,
        },
        (None, None) => spec_source(pb)?,
    };
    let intent = req.intent.map(|s| s.trim().to_owned());
    if let Some(i) = &intent {
        if i.is_empty() || i.chars().count() > INTENT_CHARS {
            return Err(Error::invalid_field(
                "intent",
                i,
                &format!("1 to {INTENT_CHARS} characters"),
            ));
        }
    }
    let cadence_ms = req.cadence_ms.unwrap_or(0);
    if cadence_ms > CADENCE_MAX_MS {
        return Err(Error::invalid_field(
            "cadenceMs",
            &cadence_ms.to_string(),
            &format!("at most {CADENCE_MAX_MS} (one day)"),
        ));
    }
    Ok(Checked {
        follow: req.follow.unwrap_or(false) && matches!(source, Source::Segment(_)),
        source,
        delivery: req.delivery.unwrap_or(Delivery::Queue),
        intent: intent.unwrap_or_else(|| DEFAULT_INTENT.to_owned()),
        cadence_ms,
    })
}

fn spec_source(pb: &Playbook) -> Result<Source> {
    let query = pb
        .lead_source
        .query
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty());
    let unsupported = |what: &str| {
        Err(Error::invalid_input(format!(
            "leadSource.kind {} needs {what}, which this service does not reach; give the run \
             its leads (`leads` or `csv` in the run request, e.g. an export of that segment) or \
             use crm-segment",
            pb.lead_source.kind.as_str()
        ))
        .with_details(
            json!({"field": "leadSource.kind", "value": pb.lead_source.kind.as_str(),
                             "supported": ["manual", "crm-segment", "csv (run request)"]}),
        ))
    };
    match pb.lead_source.kind {
        LeadSourceKind::Manual => Ok(Source::References {
            kind: "manual",
            refs: refs_of(
                query
                    .unwrap_or_default()
                    .split([',', '\n'])
                    .map(str::trim)
                    .filter(|r| !r.is_empty())
                    .map(str::to_owned)
                    .collect(),
                "leadSource.query",
            )?,
        }),
        LeadSourceKind::CrmSegment => match query {
            Some(q) => {
                if looks_like_cypher(q) {
                    let stmt = svc_query::parse(q).map_err(query_error)?;
                    if !stmt.is_read_only() {
                        return Err(Error::invalid_field(
                            "leadSource.query",
                            q,
                            "a lead query must only read (no CREATE, MERGE, SET, REMOVE, DELETE)",
                        ));
                    }
                } else {
                    segment_rule(q)?;
                }
                Ok(Source::Segment(q.to_owned()))
            }
            None => Err(Error::invalid_field(
                "leadSource.query",
                "",
                "a crm-segment run needs a segment id (see GET /v1/segments), `all`, or a \
                 read-only Cypher query returning customers",
            )),
        },
        LeadSourceKind::CioSegment => {
            unsupported("Customer.io's App API (segment membership; the Customer.io integration only writes through the Track API)")
        }
        LeadSourceKind::OrangeSlice => unsupported("the Orange Slice lead database"),
    }
}

fn looks_like_cypher(q: &str) -> bool {
    let head = q.trim_start().to_ascii_uppercase();
    ["MATCH", "OPTIONAL", "WITH", "UNWIND", "RETURN", "CALL"]
        .iter()
        .any(|k| head.starts_with(k))
}

/// A segment rule: which customers belong.
#[derive(Clone, Debug, PartialEq)]
enum SegmentRule {
    All,
    /// `lastSeen` at most `max_days` and more than `min_days` ago (whole days, as
    /// `/v1/segments` buckets them).
    Recency {
        min_days: i64,
        max_days: i64,
    },
    NeverSeen,
    Stage(String),
}

fn segment_rule(q: &str) -> Result<SegmentRule> {
    let rule = match q {
        "all" => Some(SegmentRule::All),
        "recency:active_7d" => Some(SegmentRule::Recency {
            min_days: -1,
            max_days: 7,
        }),
        "recency:active_30d" => Some(SegmentRule::Recency {
            min_days: 7,
            max_days: 30,
        }),
        "recency:dormant_90d" => Some(SegmentRule::Recency {
            min_days: 30,
            max_days: 90,
        }),
        "recency:lapsed" => Some(SegmentRule::Recency {
            min_days: 90,
            max_days: i64::MAX,
        }),
        "recency:never_seen" => Some(SegmentRule::NeverSeen),
        _ => q
            .strip_prefix("lifecycle:")
            .filter(|s| !s.trim().is_empty())
            .map(|s| SegmentRule::Stage(s.trim().to_owned())),
    };
    rule.ok_or_else(|| {
        Error::invalid_field(
            "leadSource.query",
            q,
            "a segment id of GET /v1/segments (recency:active_7d, recency:active_30d, \
             recency:dormant_90d, recency:lapsed, recency:never_seen, lifecycle:<stage>), `all`, \
             or a read-only Cypher query (MATCH ... RETURN c)",
        )
    })
}

/// The lifecycle stage `/v1/segments` uses: `lifecycle_stage`, else the AT_STAGE Stage's name.
fn stage_of<R: GraphRead + ?Sized>(r: &R, c: &Node) -> Result<Option<String>> {
    if let Some(Value::String(s)) = c.get("lifecycle_stage") {
        if !s.trim().is_empty() {
            return Ok(Some(s.trim().to_owned()));
        }
    }
    for adj in r.adjacent(c.id, Direction::Outgoing, Some("AT_STAGE"))? {
        if let Some(stage) = node_with_label(r, adj.neighbour, "Stage")? {
            if let Some(Value::String(name)) = stage.get("name") {
                return Ok(Some(name.clone()));
            }
        }
    }
    Ok(None)
}

fn in_segment<R: GraphRead + ?Sized>(
    r: &R,
    rule: &SegmentRule,
    c: &Node,
    now_us: i64,
) -> Result<bool> {
    Ok(match rule {
        SegmentRule::All => true,
        SegmentRule::NeverSeen => !matches!(c.get("lastSeen"), Some(Value::DateTime(_))),
        SegmentRule::Recency { min_days, max_days } => match c.get("lastSeen") {
            Some(Value::DateTime(seen)) => {
                let days = now_us.saturating_sub(*seen).max(0) / DAY_US;
                days > *min_days && days <= *max_days
            }
            _ => false,
        },
        SegmentRule::Stage(want) => stage_of(r, c)?.as_deref() == Some(want.as_str()),
    })
}

/// The customers of a `crm-segment` query (segment id or Cypher), in a stable order (node
/// order for segments, row order for queries), at most `limit`.
pub fn segment_members<R: GraphRead>(
    ids: &PublicIds,
    r: &R,
    query: &str,
    now_us: i64,
    limit: usize,
) -> Result<Vec<NodeId>> {
    let mut out = Vec::new();
    if looks_like_cypher(query) {
        // Through the process-wide caches: a playbook's lead query runs again on every run.
        let cache = svc_query::PlanCache::shared();
        let stmt = cache.statement(query).map_err(query_error)?;
        if !stmt.is_read_only() {
            return Err(Error::invalid_input("a lead query must only read"));
        }
        // The ids the query reads and shows are the tenant's Cypher ids, as on
        // `/v1/graph/query` (a spec may name a node by an id seen there).
        let limits = Limits {
            ids: id_codec(ids),
            ..Limits::default()
        };
        let result = cache
            .run_read(r, query, &Params::new(), &limits)
            .map_err(query_error)?;
        let mut seen = HashSet::new();
        for row in result.rows {
            let id = match row.first() {
                Some(ResultValue::Node(n)) if n.labels.iter().any(|l| l == CUSTOMER) => {
                    Some(limits.ids.node_id(n.id as i64))
                }
                Some(ResultValue::String(s)) => crm::find_customer(ids, r, s).ok().map(|n| n.id),
                _ => None,
            };
            if let Some(id) = id.filter(|id| seen.insert(*id)) {
                out.push(id);
                if out.len() >= limit {
                    break;
                }
            }
        }
        return Ok(out);
    }
    let rule = segment_rule(query)?;
    for id in r.label_scan(CUSTOMER)? {
        let Some(c) = r.node(id)? else { continue };
        if in_segment(r, &rule, &c, now_us)? {
            out.push(id);
            if out.len() >= limit {
                break;
            }
        }
    }
    Ok(out)
}

/// One lead as the source yields it: the reference and the customer it resolved to.
#[derive(Clone, Debug, PartialEq)]
pub struct Lead {
    pub reference: String,
    pub customer_id: Option<String>,
}

/// The leads of a reference list: resolved, a customer taken once, at most `limit`.
pub fn resolve_references<R: GraphRead>(
    ids: &PublicIds,
    r: &R,
    refs: &[String],
    limit: usize,
) -> Result<Vec<Lead>> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for reference in refs {
        if out.len() >= limit {
            break;
        }
        let customer_id = match crm::find_customer(ids, r, reference) {
            Ok(n) => Some(ids.customer(n.id)),
            Err(e) if e.code == svc_core::error::Code::NotFound => None,
            Err(e) => return Err(e),
        };
        if let Some(c) = &customer_id {
            if !seen.insert(c.clone()) {
                continue;
            }
        }
        out.push(Lead {
            reference: reference.clone(),
            customer_id,
        });
    }
    Ok(out)
}

/// The leads of a source, at most `limit`.
pub fn leads<R: GraphRead>(
    ids: &PublicIds,
    r: &R,
    source: &Source,
    now_us: i64,
    limit: usize,
) -> Result<Vec<Lead>> {
    match source {
        Source::References { refs, .. } => resolve_references(ids, r, refs, limit),
        Source::Segment(q) => Ok(segment_members(ids, r, q, now_us, limit)?
            .into_iter()
            .map(|id| {
                let c = ids.customer(id);
                Lead {
                    reference: c.clone(),
                    customer_id: Some(c),
                }
            })
            .collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_takes_the_first_reference_column() {
        let refs =
            csv_references("name,Email\nAda,ada@x.test\n\nBob,bob@x.test\nNo,\n").expect("csv");
        assert_eq!(refs, vec!["ada@x.test", "bob@x.test"]);
        let e = csv_references("name,company\nAda,Acme\n").expect_err("no column");
        assert!(e.message.contains("reference column"), "{}", e.message);
    }

    #[test]
    fn segment_ids_and_queries_are_recognised() {
        assert_eq!(segment_rule("all").expect("all"), SegmentRule::All);
        assert_eq!(
            segment_rule("lifecycle:trial").expect("stage"),
            SegmentRule::Stage("trial".into())
        );
        assert!(segment_rule("recency:someday").is_err());
        assert!(looks_like_cypher("  match (c:Customer) return c"));
        assert!(!looks_like_cypher("recency:active_7d"));
    }

    #[test]
    fn a_segment_query_reads_the_tenants_cypher_ids() {
        let mut g = svc_query::model::ModelGraph::new();
        let create = svc_query::parse(
            "CREATE (:Customer {email: 'a@x.test'}), (:Other), (:Customer {email: 'b@x.test'})",
        )
        .expect("parse");
        svc_query::run_write(&mut g, &create, &Params::new(), &Limits::default()).expect("create");
        let ids = PublicIds::new(&[5; svc_core::plumbing::ids::KEY_BYTES], 0);
        let customers = g.label_scan(CUSTOMER).expect("scan");
        let all = "MATCH (c:Customer) RETURN c ORDER BY c.email";
        assert_eq!(
            segment_members(&ids, &g, all, 0, 10).expect("members"),
            customers
        );
        // A customer named by the id the query endpoint shows for it.
        let shown = id_codec(&ids).node(customers[1]);
        assert_ne!(shown as u64, customers[1].0);
        let one = format!("MATCH (c:Customer) WHERE id(c) = {shown} RETURN c");
        assert_eq!(
            segment_members(&ids, &g, &one, 0, 10).expect("members"),
            vec![customers[1]]
        );
    }
}
