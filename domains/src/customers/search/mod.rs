//! Every customer of a workspace, searched, filtered, sorted and paged on the server (issue
//! 28): the customers list of the API and the dashboard, and every reader that needs "the
//! customers matching X" instead of the most recently seen hundred.
//!
//! One pass over the workspace's customers. With the snapshot's in-memory read model (the
//! usual case) the pass reads columns: a text search tests each distinct string of a column
//! once (its dictionary) and then compares codes, so 100,000 customers answer in milliseconds
//! (`benches/benches/customers.rs`). Customers a commit touched since the model was built, and
//! every customer when there is no model yet, are read from the snapshot itself, so the answer
//! is exact either way. Only the returned page is materialised.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::HashSet;

use serde::Serialize;
use svc_engine::{ColumnView, Direction, GraphRead, ModelView, Node, NodeId, Value, NO_CODE};

mod query;

pub use query::{CustomerQuery, CustomerSort, OFFSET_MAX, PAGE_DEFAULT, PAGE_MAX, QUERY_MAX};

use super::{customer_view, CustomerView};
use crate::graph_api::node_with_label;
use svc_core::error::Result;
use svc_core::plumbing::ids::PublicIds;
use svc_core::vocabulary::{
    prop, AT_STAGE, CAMPAIGN, CUSTOMER, HAS_TOUCHPOINT, INFLUENCED_BY, STAGE, TOUCHPOINT,
};

/// One page of customers and how many match in all.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct CustomerList {
    /// The page, in the order asked for (most recently seen first by default).
    pub customers: Vec<CustomerView>,
    /// Customers matching the search and filters, in the whole workspace.
    pub total: usize,
    pub offset: usize,
    pub limit: usize,
}

/// A matching customer and its sort value.
struct Hit<'a> {
    id: NodeId,
    key: Key<'a>,
}

enum Key<'a> {
    None,
    Int(i64),
    Float(f64),
    Text(Cow<'a, str>),
}

/// A text sort key: lower case, borrowed when it already is (most emails), so sorting 100,000
/// of them compares bytes instead of case-folding on every comparison.
fn text_key(s: &str) -> Key<'_> {
    if s.chars().any(char::is_uppercase) {
        Key::Text(Cow::Owned(s.to_lowercase()))
    } else {
        Key::Text(Cow::Borrowed(s))
    }
}

/// Present values before absent ones whatever the direction; ties by id ascending.
fn cmp_hits(a: &Hit, b: &Hit, ascending: bool) -> Ordering {
    let dir = |o: Ordering| if ascending { o } else { o.reverse() };
    let by_key = match (&a.key, &b.key) {
        (Key::None, Key::None) => Ordering::Equal,
        (Key::None, _) => Ordering::Greater,
        (_, Key::None) => Ordering::Less,
        (Key::Int(x), Key::Int(y)) => dir(x.cmp(y)),
        (Key::Float(x), Key::Float(y)) => dir(x.total_cmp(y)),
        (Key::Text(x), Key::Text(y)) => dir(x.cmp(y)),
        // Mixed types in one property: numbers before text, in either direction.
        (Key::Text(_), _) => Ordering::Greater,
        (_, Key::Text(_)) => Ordering::Less,
        (Key::Int(x), Key::Float(y)) => dir((*x as f64).total_cmp(y)),
        (Key::Float(x), Key::Int(y)) => dir(x.total_cmp(&(*y as f64))),
    };
    by_key.then(a.id.cmp(&b.id))
}

/// The search text, prepared once.
struct Needle {
    lower: String,
    /// The digits, when the text looks like a phone number (three digits or more, nothing but
    /// digits, spaces and `+-().`).
    digits: Option<String>,
    /// A `cus_...` id.
    id: Option<NodeId>,
}

impl Needle {
    fn new(ids: &PublicIds, q: &str) -> Option<Needle> {
        if q.is_empty() {
            return None;
        }
        let digits: String = q.chars().filter(char::is_ascii_digit).collect();
        let phone_like = digits.len() >= 3
            && q.chars()
                .all(|c| c.is_ascii_digit() || " +-().".contains(c));
        Some(Needle {
            lower: q.to_lowercase(),
            digits: phone_like.then_some(digits),
            id: ids.parse_customer(q),
        })
    }

    fn matches(&self, key: &str, s: &str) -> bool {
        if contains_ci(s, &self.lower) {
            return true;
        }
        match &self.digits {
            Some(d) if key == prop::PHONE => {
                let own: String = s.chars().filter(char::is_ascii_digit).collect();
                own.contains(d.as_str())
            }
            _ => false,
        }
    }

    fn matches_value(&self, key: &str, v: &Value) -> bool {
        match v {
            Value::String(s) => self.matches(key, s),
            _ => false,
        }
    }
}

/// Whether `hay` contains `needle_lower` (already lower case), ignoring case; no allocation
/// for ASCII text.
fn contains_ci(hay: &str, needle_lower: &str) -> bool {
    let n = needle_lower.as_bytes();
    if hay.is_ascii() && needle_lower.is_ascii() {
        return n.is_empty()
            || hay
                .as_bytes()
                .windows(n.len())
                .any(|w| w.eq_ignore_ascii_case(n));
    }
    hay.to_lowercase().contains(needle_lower)
}

fn in_range(v: Option<f64>, min: Option<f64>, max: Option<f64>) -> bool {
    if min.is_none() && max.is_none() {
        return true;
    }
    v.is_some_and(|v| min.is_none_or(|m| v >= m) && max.is_none_or(|m| v <= m))
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Float(f) if !f.is_nan() => Some(*f),
        Value::Int(i) => Some(*i as f64),
        _ => None,
    }
}

/// The filters, prepared once against the snapshot.
struct Prepared<'q> {
    q: &'q CustomerQuery,
    needle: Option<Needle>,
    /// Customers AT_STAGE a Stage of the asked name (they match when they carry no
    /// `lifecycle_stage` of their own).
    staged: HashSet<NodeId>,
    /// Customers reached by the campaign, when a campaign is asked for.
    campaign: Option<HashSet<NodeId>>,
}

const STAGE_KEYS: [&str; 2] = [prop::LIFECYCLE_STAGE, "lifecycleStage"];

impl Prepared<'_> {
    fn stage_ok(&self, own: Option<&str>, id: NodeId) -> bool {
        let Some(want) = &self.q.stage else {
            return true;
        };
        match own.map(str::trim).filter(|s| !s.is_empty()) {
            Some(s) => s.eq_ignore_ascii_case(want) || s.to_lowercase() == want.to_lowercase(),
            None => self.staged.contains(&id),
        }
    }

    fn campaign_ok(&self, id: NodeId) -> bool {
        self.campaign.as_ref().is_none_or(|set| set.contains(&id))
    }

    fn id_matches(&self, id: NodeId) -> bool {
        self.needle.as_ref().is_some_and(|n| n.id == Some(id))
    }

    /// The hit for a customer read from the snapshot, None when it does not match.
    fn node_hit<'a>(&self, n: &'a Node) -> Option<Hit<'a>> {
        let q = self.q;
        if let Some(needle) = &self.needle {
            let text = n.properties.iter().any(|(k, v)| needle.matches_value(k, v));
            if !text && !self.id_matches(n.id) {
                return None;
            }
        }
        let own_stage = STAGE_KEYS
            .iter()
            .find_map(|k| n.get(k).and_then(Value::as_str));
        if !self.stage_ok(own_stage, n.id) || !self.campaign_ok(n.id) {
            return None;
        }
        if let Some(key) = &q.has {
            if matches!(n.get(key), None | Some(Value::Null)) {
                return None;
            }
        }
        let num = |k: &str| n.get(k).and_then(number);
        if !in_range(num(prop::SCORE), q.min_score, q.max_score)
            || !in_range(num(prop::CHURN_SCORE), q.min_churn, q.max_churn)
        {
            return None;
        }
        let key = match n.get(q.sort.property()) {
            None | Some(Value::Null) => Key::None,
            Some(Value::DateTime(t)) | Some(Value::Int(t)) => Key::Int(*t),
            Some(Value::Float(f)) if !f.is_nan() => Key::Float(*f),
            Some(Value::String(s)) => text_key(s),
            Some(_) => Key::None,
        };
        Some(Hit { id: n.id, key })
    }
}

/// The customers a campaign reached: Campaign (by `campaignId`, else name) <-INFLUENCED_BY-
/// Touchpoint <-HAS_TOUCHPOINT- Customer.
fn campaign_reach<R: GraphRead + ?Sized>(r: &R, campaign: &str) -> Result<HashSet<NodeId>> {
    let value = Value::String(campaign.to_owned());
    let mut campaigns = r
        .index_seek(CAMPAIGN, prop::CAMPAIGN_ID, &value)?
        .unwrap_or_default();
    if campaigns.is_empty() {
        campaigns = r
            .index_seek(CAMPAIGN, prop::NAME, &value)?
            .unwrap_or_default();
    }
    let mut out = HashSet::new();
    for c in campaigns {
        for tp in r.adjacent(c, Direction::Incoming, Some(INFLUENCED_BY))? {
            if !r.has_label(tp.neighbour, TOUCHPOINT)? {
                continue;
            }
            for owner in r.adjacent(tp.neighbour, Direction::Incoming, Some(HAS_TOUCHPOINT))? {
                out.insert(owner.neighbour);
            }
        }
    }
    Ok(out)
}

/// Customers AT_STAGE a Stage named `stage` (case-insensitive).
fn staged<R: GraphRead + ?Sized>(r: &R, stage: &str) -> Result<HashSet<NodeId>> {
    let mut out = HashSet::new();
    for s in r.label_scan(STAGE)? {
        let Some(node) = node_with_label(r, s, STAGE)? else {
            continue;
        };
        let named = node
            .get(prop::NAME)
            .and_then(Value::as_str)
            .is_some_and(|n| n.trim().to_lowercase() == stage.to_lowercase());
        if named {
            for a in r.adjacent(s, Direction::Incoming, Some(AT_STAGE))? {
                out.insert(a.neighbour);
            }
        }
    }
    Ok(out)
}

/// One page of the customers matching `q`, read from one snapshot (or transaction). The query
/// must have been [`checked`](CustomerQuery::checked).
pub fn search_in<R: GraphRead + ?Sized>(
    ids: &PublicIds,
    r: &R,
    q: &CustomerQuery,
) -> Result<CustomerList> {
    search_with(ids, r, r.model_view(), q)
}

/// [`search_in`] with the read model given (None: read every customer from `r`), so tests can
/// compare both paths on one snapshot.
fn search_with<R: GraphRead + ?Sized>(
    ids: &PublicIds,
    r: &R,
    model: Option<ModelView>,
    q: &CustomerQuery,
) -> Result<CustomerList> {
    let prepared = Prepared {
        q,
        needle: Needle::new(ids, &q.q),
        staged: match &q.stage {
            Some(s) => staged(r, s)?,
            None => HashSet::new(),
        },
        campaign: q
            .campaign
            .as_deref()
            .map(|c| campaign_reach(r, c))
            .transpose()?,
    };
    // Nodes read from the snapshot live here so that hits can borrow their sort text.
    let mut read: Vec<Node> = Vec::new();
    let mut hits: Vec<Hit> = Vec::new();
    match &model {
        Some(m) => {
            for &id in m.touched_ids() {
                if let Some(n) = node_with_label(r, NodeId(id), CUSTOMER)? {
                    read.push(n);
                }
            }
            model_hits(m, &prepared, &mut hits);
        }
        None => {
            for id in r.label_scan(CUSTOMER)? {
                if let Some(n) = r.node(id)? {
                    read.push(n);
                }
            }
        }
    }
    hits.extend(read.iter().filter_map(|n| prepared.node_hit(n)));
    let total = hits.len();
    let end = q.offset.saturating_add(q.limit).min(total);
    let page_ids: Vec<NodeId> = if q.offset >= total {
        Vec::new()
    } else {
        // Only the first `end` need ordering.
        let cmp = |a: &Hit, b: &Hit| cmp_hits(a, b, q.ascending);
        if end < total {
            hits.select_nth_unstable_by(end, cmp);
            hits.truncate(end);
        }
        hits.sort_unstable_by(cmp);
        hits[q.offset..end].iter().map(|h| h.id).collect()
    };
    drop(hits);
    let mut customers = Vec::with_capacity(page_ids.len());
    for id in page_ids {
        if let Some(n) = r.node(id)? {
            customers.push(customer_view(ids, &n));
        }
    }
    Ok(CustomerList {
        customers,
        total,
        offset: q.offset,
        limit: q.limit,
    })
}

/// Per distinct string of a column, whether the search matches it.
fn dict_matches(needle: &Needle, key: &str, dict: &[String]) -> Vec<bool> {
    dict.iter().map(|s| needle.matches(key, s)).collect()
}

/// The hits among the model's untouched Customer rows.
fn model_hits<'m>(m: &'m ModelView, p: &Prepared, hits: &mut Vec<Hit<'m>>) {
    let Some(label) = m.label(CUSTOMER) else {
        return;
    };
    let q = p.q;
    // The text test per column: strings by dictionary, anything else per row.
    enum TextCol<'c> {
        Codes(&'c [u32], Vec<bool>),
        Values(&'c str, &'c [Option<Value>]),
    }
    let text_cols: Vec<TextCol> = match &p.needle {
        None => Vec::new(),
        Some(needle) => label
            .columns()
            .filter_map(|(k, c)| match c {
                ColumnView::Strings { codes, dict } => {
                    let pass = dict_matches(needle, k, dict);
                    pass.iter()
                        .any(|b| *b)
                        .then_some(TextCol::Codes(codes, pass))
                }
                ColumnView::Values(v) => Some(TextCol::Values(k, v)),
                _ => None,
            })
            .collect(),
    };
    let stage_cols: Vec<ColumnView> = STAGE_KEYS.iter().filter_map(|k| label.column(k)).collect();
    let score = label.column(prop::SCORE);
    let churn = label.column(prop::CHURN_SCORE);
    let sort_col = label.column(q.sort.property());
    let has_col = q.has.as_deref().map(|k| label.column(k));
    let num_at = |c: &Option<ColumnView>, row: usize| -> Option<f64> {
        match c {
            Some(ColumnView::Floats(v)) => v.get(row).copied().filter(|f| !f.is_nan()),
            Some(c) => c.get(row).as_ref().and_then(number),
            None => None,
        }
    };
    for (row, &d) in label.rows().iter().enumerate() {
        if m.is_touched(d) {
            continue;
        }
        let id = m.id(d);
        if let Some(needle) = &p.needle {
            let text = text_cols.iter().any(|c| match c {
                TextCol::Codes(codes, pass) => codes
                    .get(row)
                    .is_some_and(|&code| code != NO_CODE && pass[code as usize]),
                TextCol::Values(k, v) => v
                    .get(row)
                    .and_then(Option::as_ref)
                    .is_some_and(|v| needle.matches_value(k, v)),
            });
            if !text && !p.id_matches(id) {
                continue;
            }
        }
        if q.stage.is_some() {
            let own = stage_cols.iter().find_map(|c| match c {
                ColumnView::Strings { codes, dict } => codes
                    .get(row)
                    .filter(|&&code| code != NO_CODE)
                    .map(|&code| Cow::Borrowed(dict[code as usize].as_str())),
                other => match other.get(row) {
                    Some(Value::String(s)) => Some(Cow::Owned(s)),
                    _ => None,
                },
            });
            if !p.stage_ok(own.as_deref(), id) {
                continue;
            }
        }
        let has = match &has_col {
            None => true,
            Some(None) => false,
            Some(Some(c)) => !c.is_absent(row),
        };
        if !has
            || !p.campaign_ok(id)
            || !in_range(num_at(&score, row), q.min_score, q.max_score)
            || !in_range(num_at(&churn, row), q.min_churn, q.max_churn)
        {
            continue;
        }
        let key = match &sort_col {
            None => Key::None,
            Some(ColumnView::Strings { codes, dict }) => match codes.get(row) {
                Some(&code) if code != NO_CODE => text_key(&dict[code as usize]),
                _ => Key::None,
            },
            Some(ColumnView::Floats(v)) => match v.get(row) {
                Some(f) if !f.is_nan() => Key::Float(*f),
                _ => Key::None,
            },
            Some(c) => match c.get(row) {
                Some(Value::DateTime(t)) | Some(Value::Int(t)) => Key::Int(t),
                Some(Value::Float(f)) if !f.is_nan() => Key::Float(f),
                Some(Value::String(s)) => Key::Text(Cow::Owned(s.to_lowercase())),
                _ => Key::None,
            },
        };
        hits.push(Hit { id, key });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use svc_core::store::{Store, WorkspaceId};
    use svc_engine::{GraphWrite, Properties};

    const WS: WorkspaceId = WorkspaceId(5);

    fn props(pairs: &[(&str, Value)]) -> Properties {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    }

    /// 60 customers with every kind of property, a campaign reaching some, a stage holding
    /// some; then a few changed after the read model was built.
    async fn seeded() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        store
            .write(|tx| {
                let mut w = tx.workspace(WS);
                let campaign = w.create_node(
                    &[CAMPAIGN],
                    props(&[
                        ("campaignId", Value::from("spring")),
                        ("name", Value::from("Spring")),
                    ]),
                )?;
                let stage = w.create_node(&[STAGE], props(&[("name", Value::from("Trial"))]))?;
                for i in 0..60i64 {
                    let mut p = vec![
                        (
                            "email",
                            Value::from(format!("user{i}@Corp.example").as_str()),
                        ),
                        ("lastSeen", Value::DateTime(1_000_000 * (i % 17))),
                    ];
                    if i % 3 == 0 {
                        p.push(("name", Value::from(format!("Tanaka {i}").as_str())));
                    }
                    if i % 4 == 0 {
                        p.push(("phone", Value::from(format!("+81 90-1234-{i:04}").as_str())));
                    }
                    if i % 5 == 0 {
                        p.push(("score", Value::Float(i as f64 / 100.0)));
                        p.push(("churnScore", Value::Float(1.0 - i as f64 / 100.0)));
                    }
                    if i % 7 == 0 {
                        p.push(("plan", Value::from("Enterprise")));
                    }
                    if i % 11 == 0 {
                        p.push(("lifecycle_stage", Value::from("customer")));
                    }
                    if i == 13 {
                        // A mixed-type column: read per row.
                        p.push(("externalId", Value::Int(7)));
                    } else if i % 2 == 0 {
                        p.push(("externalId", Value::from(format!("ext-{i}").as_str())));
                    }
                    let c = w.create_node(&[CUSTOMER], props(&p))?;
                    if i % 6 == 0 {
                        let tp = w.create_node(
                            &[TOUCHPOINT],
                            props(&[("action", Value::from("page_viewed"))]),
                        )?;
                        w.create_edge(c, tp, HAS_TOUCHPOINT, Properties::new())?;
                        w.create_edge(tp, campaign, INFLUENCED_BY, Properties::new())?;
                    }
                    if i % 9 == 0 {
                        w.create_edge(c, stage, AT_STAGE, Properties::new())?;
                    }
                }
                Ok(())
            })
            .await
            .expect("seed");
        store
            .graph()
            .expect("graph")
            .prepare_read_model(WS)
            .expect("model")
            .expect("built");
        // Changes after the model: a renamed customer, a deleted one, a new one.
        store
            .write(|tx| {
                let mut w = tx.workspace(WS);
                let first = w.label_scan(CUSTOMER)?[1];
                w.set_node_property(first, "name", Value::from("Tanaka Renamed"))?;
                let second = w.label_scan(CUSTOMER)?[2];
                w.detach_delete_node(second)?;
                w.create_node(
                    &[CUSTOMER],
                    props(&[
                        ("email", Value::from("late@corp.example")),
                        ("name", Value::from("Late Tanaka")),
                        ("score", Value::Float(0.5)),
                    ]),
                )?;
                Ok(())
            })
            .await
            .expect("changes");
        (dir, store)
    }

    fn both(store: &Store, q: &CustomerQuery) -> (CustomerList, CustomerList) {
        let graph = store.graph().expect("graph");
        let snap = graph.snapshot(WS);
        let model = snap.model_view();
        assert!(model.is_some(), "the snapshot has a read model");
        let q = q.clone().checked().expect("valid");
        let with = search_with(store.ids(), &snap, model, &q).expect("model path");
        let without = search_with(store.ids(), &snap, None, &q).expect("row path");
        (with, without)
    }

    fn ids_of(p: &CustomerList) -> Vec<String> {
        p.customers.iter().map(|c| c.id.clone()).collect()
    }

    #[tokio::test]
    async fn model_and_row_paths_agree_on_every_filter_and_sort() {
        let (_dir, store) = seeded().await;
        let mut queries = Vec::new();
        for q in [
            "",
            "tanaka",
            "CORP",
            "user1",
            "enterprise",
            "1234-0008",
            "90 1234 0012",
            "ext-4",
            "zzz",
        ] {
            for sort in [
                CustomerSort::LastSeen,
                CustomerSort::Email,
                CustomerSort::Name,
                CustomerSort::Phone,
                CustomerSort::Score,
                CustomerSort::Churn,
            ] {
                for ascending in [false, true] {
                    queries.push(CustomerQuery {
                        q: q.into(),
                        sort,
                        ascending,
                        limit: 7,
                        offset: 3,
                        ..CustomerQuery::default()
                    });
                }
            }
        }
        queries.push(CustomerQuery {
            stage: Some("trial".into()),
            ..CustomerQuery::default()
        });
        queries.push(CustomerQuery {
            stage: Some("Customer".into()),
            ..CustomerQuery::default()
        });
        queries.push(CustomerQuery {
            campaign: Some("spring".into()),
            min_score: Some(0.1),
            ..CustomerQuery::default()
        });
        queries.push(CustomerQuery {
            has: Some("phone".into()),
            sort: CustomerSort::Phone,
            ascending: true,
            ..CustomerQuery::default()
        });
        queries.push(CustomerQuery {
            min_churn: Some(0.5),
            max_churn: Some(0.8),
            sort: CustomerSort::Churn,
            ..CustomerQuery::default()
        });
        for q in &queries {
            let (a, b) = both(&store, q);
            assert_eq!((ids_of(&a), a.total), (ids_of(&b), b.total), "{q:?}");
        }
    }

    #[tokio::test]
    async fn search_finds_across_the_workspace_with_totals() {
        let (_dir, store) = seeded().await;
        let run = |q: CustomerQuery| both(&store, &q).0;
        // Every customer, the deleted one gone and the new one in.
        assert_eq!(run(CustomerQuery::default()).total, 60);
        // Names: 20 "Tanaka n" (one renamed, still Tanaka, one deleted is id 2 = i 2: no name)
        // plus the new one.
        let tanaka = run(CustomerQuery {
            q: "TANAKA".into(),
            limit: 500,
            ..CustomerQuery::default()
        });
        assert_eq!(tanaka.total, 22);
        assert!(tanaka
            .customers
            .iter()
            .any(|c| c.name.as_deref() == Some("Late Tanaka")));
        // An exact email, whatever its case.
        let one = run(CustomerQuery {
            q: "user42@corp.example".into(),
            ..CustomerQuery::default()
        });
        assert_eq!(one.total, 1);
        assert_eq!(
            one.customers[0].email.as_deref(),
            Some("user42@Corp.example")
        );
        // A cus_ id.
        let by_id = run(CustomerQuery {
            q: one.customers[0].id.clone(),
            ..CustomerQuery::default()
        });
        assert_eq!(ids_of(&by_id), ids_of(&one));
        // A phone typed differently.
        assert_eq!(
            run(CustomerQuery {
                q: "(90) 1234 0016".into(),
                ..CustomerQuery::default()
            })
            .total,
            1
        );
        // A trait.
        assert_eq!(
            run(CustomerQuery {
                q: "enterprise".into(),
                ..CustomerQuery::default()
            })
            .total,
            9
        );
        // Paging: disjoint pages covering everything, in order.
        let mut seen = Vec::new();
        for page in 0..7 {
            let p = run(CustomerQuery {
                sort: CustomerSort::Email,
                ascending: true,
                offset: page * 10,
                limit: 10,
                ..CustomerQuery::default()
            });
            seen.extend(
                p.customers
                    .into_iter()
                    .map(|c| c.email.unwrap_or_default().to_lowercase()),
            );
        }
        assert_eq!(seen.len(), 60);
        let mut sorted = seen.clone();
        sorted.sort();
        assert_eq!(seen, sorted);
        // Score filter and sort: scored customers only, highest first.
        let scored = run(CustomerQuery {
            sort: CustomerSort::Score,
            min_score: Some(0.3),
            limit: 500,
            ..CustomerQuery::default()
        });
        let scores: Vec<f64> = scored
            .customers
            .iter()
            .map(|c| c.properties["score"].as_f64().unwrap_or(-1.0))
            .collect();
        assert!(scores.iter().all(|s| *s >= 0.3));
        assert!(scores.windows(2).all(|w| w[0] >= w[1]));
        // Lifecycle stage: own property first, else AT_STAGE (customers 0 and 33 and 66.. carry
        // "customer", so of i % 9 == 0 those with i % 11 == 0 are not "trial").
        let trial = run(CustomerQuery {
            stage: Some("TRIAL".into()),
            limit: 500,
            ..CustomerQuery::default()
        });
        assert_eq!(trial.total, 6);
        // Campaign reach.
        let spring = run(CustomerQuery {
            campaign: Some("Spring".into()),
            ..CustomerQuery::default()
        });
        assert_eq!(spring.total, 10);
    }

    #[test]
    fn limits_are_checked() {
        let bad = |q: CustomerQuery| q.checked().is_err();
        assert!(bad(CustomerQuery {
            limit: PAGE_MAX + 1,
            ..CustomerQuery::default()
        }));
        assert!(bad(CustomerQuery {
            q: "x".repeat(QUERY_MAX + 1),
            ..CustomerQuery::default()
        }));
        assert!(bad(CustomerQuery {
            min_score: Some(f64::NAN),
            ..CustomerQuery::default()
        }));
        let parsed = CustomerQuery::from_params([
            ("q", " ada "),
            ("sort", "churn"),
            ("order", "asc"),
            ("min_score", "0.5"),
            ("offset", "20"),
            ("limit", "10"),
            ("stage", ""),
            ("other", "x"),
        ])
        .expect("parsed");
        assert_eq!(
            (
                parsed.q.as_str(),
                parsed.sort,
                parsed.ascending,
                parsed.min_score
            ),
            ("ada", CustomerSort::Churn, true, Some(0.5))
        );
        assert_eq!((parsed.offset, parsed.limit, parsed.stage), (20, 10, None));
        for bad in [
            ("sort", "x"),
            ("order", "up"),
            ("limit", "0"),
            ("offset", "-1"),
            ("max_churn", "NaN"),
            ("min_score", "x"),
            ("sort", ""),
            ("offset", "4294967296"),
        ] {
            assert!(CustomerQuery::from_params([bad]).is_err(), "{bad:?}");
        }
        let ok = CustomerQuery::default().checked().expect("default");
        assert_eq!(ok.limit, PAGE_DEFAULT);
        assert_eq!(CustomerSort::parse("churn"), Some(CustomerSort::Churn));
        assert_eq!(CustomerSort::parse("nope"), None);
    }
}
