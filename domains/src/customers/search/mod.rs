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
use svc_engine::{Direction, GraphRead, ModelView, Node, NodeId, Value};

mod model;
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
            model::model_hits(m, &prepared, &mut hits);
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

#[cfg(test)]
mod tests;
