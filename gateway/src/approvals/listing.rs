//! Listing the workspace's actions: the `status` filter's values, the query a route reads, and
//! one page with its total.

use svc_engine::WorkspaceId;

use super::{expire_due, PendingAction, PendingList, PendingView, MAX_LISTED};
use svc_core::error::{Error, Result};
use svc_core::plumbing::clock;
use svc_core::store::{RecordScan, Store};

/// The states `list` filters by (the route's `status` parameter states them).
pub const STATES: [&str; 7] = [
    "pending", "approved", "executed", "failed", "unknown", "rejected", "expired",
];

/// The `status` filter's values beyond the states: `decided` is every state but `pending`,
/// `approved_any` every approved one (`approved`, `executed`, `failed`, `unknown`).
pub const GROUPS: [&str; 2] = ["decided", "approved_any"];

/// The page size when none is asked for (the list's historical cut).
pub const PAGE_DEFAULT: usize = MAX_LISTED;
/// Largest page.
pub const PAGE_MAX: usize = 500;

/// Which actions to list.
#[derive(Clone, Debug, PartialEq)]
pub struct ApprovalQuery {
    /// The states to list; empty lists every state.
    pub statuses: Vec<String>,
    pub capability: Option<String>,
    pub offset: usize,
    pub limit: usize,
}

impl Default for ApprovalQuery {
    fn default() -> Self {
        ApprovalQuery {
            statuses: Vec::new(),
            capability: None,
            offset: 0,
            limit: PAGE_DEFAULT,
        }
    }
}

impl ApprovalQuery {
    /// The states a `status` value stands for: one of [`STATES`] or [`GROUPS`].
    pub fn states_of(status: &str) -> Result<Vec<String>> {
        let states: Vec<&str> =
            match status {
                "decided" => STATES.iter().copied().filter(|s| *s != "pending").collect(),
                "approved_any" => vec!["approved", "executed", "failed", "unknown"],
                s if STATES.contains(&s) => vec![s],
                other => return Err(Error::invalid_field(
                    "status",
                    other,
                    "expected pending, approved, executed, failed, unknown, rejected, expired, \
                     decided or approved_any",
                )),
            };
        Ok(states.into_iter().map(str::to_owned).collect())
    }

    /// `status`, `capability`, `offset`, `limit` (1 to [`PAGE_MAX`]); unknown names ignored.
    pub fn from_params<'p>(params: impl IntoIterator<Item = (&'p str, &'p str)>) -> Result<Self> {
        let mut q = ApprovalQuery::default();
        for (name, value) in params {
            let value = value.trim();
            match name {
                "status" => q.statuses = Self::states_of(value)?,
                "capability" if !value.is_empty() => {
                    q.capability = Some(svc_core::plumbing::paging::text(name, value, 200)?)
                }
                "offset" => q.offset = svc_core::plumbing::paging::offset(name, value)?,
                "limit" => q.limit = svc_core::plumbing::paging::limit(name, value, PAGE_MAX)?,
                _ => {}
            }
        }
        Ok(q)
    }
}

/// One page of the workspace's actions (every state by default), newest first, with the
/// total; overdue ones are expired first.
pub async fn list(store: &Store, ws: WorkspaceId, q: ApprovalQuery) -> Result<PendingList> {
    for s in &q.statuses {
        ApprovalQuery::states_of(s)?;
    }
    let limit = q.limit.clamp(1, PAGE_MAX);
    store
        .write(move |txn| {
            let now = clock::now();
            let mut w = txn.workspace(ws);
            expire_due(&mut w, now)?;
            let mut actions = if q.statuses.is_empty() {
                w.scan_records::<PendingAction>(&RecordScan::default())?
            } else {
                let mut all = Vec::new();
                for s in &q.statuses {
                    all.extend(w.find_records::<PendingAction>("status", s)?);
                }
                all
            };
            let mut capabilities: Vec<String> =
                actions.iter().map(|a| a.capability.clone()).collect();
            capabilities.sort();
            capabilities.dedup();
            if let Some(c) = &q.capability {
                actions.retain(|a| &a.capability == c);
            }
            // Ids are time-ordered: newest first.
            actions.sort_by(|a, b| b.id.cmp(&a.id));
            let total = actions.len();
            Ok(PendingList {
                actions: actions
                    .iter()
                    .skip(q.offset)
                    .take(limit)
                    .map(PendingView::new)
                    .collect(),
                total,
                offset: q.offset,
                limit,
                capabilities,
            })
        })
        .await
}
