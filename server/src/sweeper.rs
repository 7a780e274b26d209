//! The periodic sweep of time-bound data, across every workspace:
//! - pending actions past their 72-hour deadline are expired and refunded
//!   ([`approvals::expire_overdue`], the same code path as the lazy expiry on read);
//! - stored idempotent responses older than 24 hours are deleted
//!   ([`idempotency::purge`]);
//! - `messageId` dedupe records older than their 24-hour window are deleted
//!   ([`events::purge_seen_messages`]);
//! - MCP OAuth codes and tokens a day past their expiry are deleted
//!   ([`svc_core::oauth::purge_expired`]).
//!
//! The rules live in those domain modules; this module only walks the workspaces. The server
//! runs [`sweep`] from its one background task (`AppState`) every `Config::sweep_interval`,
//! and once at start-up. No HTTP types here.

use time::OffsetDateTime;

use svc_core::error::Result;
use svc_core::store::{Store, WorkspaceId};
use svc_core::workspaces;
use svc_domains::events;
use svc_gateway::approvals;
use svc_gateway::idempotency;

/// What one sweep did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SweepReport {
    pub workspaces: usize,
    pub expired_actions: usize,
    pub idempotency_purged: usize,
    pub messages_purged: usize,
    /// MCP OAuth codes and tokens a day past their expiry (`svc_core::oauth::purge_expired`).
    pub oauth_purged: usize,
    /// Workspaces whose sweep failed (logged; the next sweep tries again).
    pub failed: usize,
}

/// Sweeps every workspace as of `now`. A failure in one workspace is logged and does not stop
/// the others; only failing to list the workspaces is an error.
pub async fn sweep(store: &Store, now: OffsetDateTime) -> Result<SweepReport> {
    let mut report = SweepReport::default();
    for ws in workspaces::all_ids(store).await? {
        report.workspaces += 1;
        if let Err(e) = sweep_workspace(store, ws, now, &mut report).await {
            report.failed += 1;
            tracing::warn!(workspace = %ws, error = %e, "sweeping a workspace failed");
        }
    }
    // Codes and tokens live in the global scope (a request names no workspace).
    match svc_core::oauth::purge_expired(store, now).await {
        Ok(n) => report.oauth_purged += n,
        Err(e) => {
            report.failed += 1;
            tracing::warn!(error = %e, "purging expired OAuth codes and tokens failed");
        }
    }
    Ok(report)
}

async fn sweep_workspace(
    store: &Store,
    ws: WorkspaceId,
    now: OffsetDateTime,
    report: &mut SweepReport,
) -> Result<()> {
    report.expired_actions += approvals::expire_overdue(store, ws, now).await?;
    report.idempotency_purged += idempotency::purge(store, ws, now).await?;
    report.messages_purged += events::purge_seen_messages(store, ws, now).await?;
    Ok(())
}

/// One tick of the background task: sweeps as of the wall clock and logs what it did.
pub async fn run(store: &Store) {
    match sweep(store, svc_core::plumbing::clock::now()).await {
        Ok(r)
            if r.expired_actions
                + r.idempotency_purged
                + r.messages_purged
                + r.oauth_purged
                + r.failed
                > 0 =>
        {
            tracing::info!(
                workspaces = r.workspaces,
                expired_actions = r.expired_actions,
                idempotency_purged = r.idempotency_purged,
                messages_purged = r.messages_purged,
                oauth_purged = r.oauth_purged,
                failed = r.failed,
                "sweep done"
            );
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "sweep failed; will retry at the next tick"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use svc_core::workspaces::WorkspaceEntry;
    use svc_domains::events::MarketingEvent;

    #[tokio::test]
    async fn sweeps_every_workspace() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        // 2026-01-01T00:00:00Z
        let t0 = OffsetDateTime::from_unix_timestamp(1_767_225_600).expect("valid");
        for n in [5_u64, 6] {
            let ws = WorkspaceId(n);
            let entry = WorkspaceEntry {
                id: workspaces::render_id(ws),
                number: n,
                name: format!("w{n}"),
                owner_user_id: "usr_t".into(),
                created_at: svc_core::plumbing::clock::rfc3339(t0),
            };
            let ev = MarketingEvent::from_json(
                serde_json::json!({"event": "e", "email": "a@x.io", "messageId": "m"}),
            )
            .and_then(|e| e.validate(store.ids(), t0))
            .expect("event");
            let ids = store.ids().clone();
            store
                .write(move |tx| {
                    workspaces::create_in(tx, &entry, &svc_core::plumbing::clock::rfc3339(t0))?;
                    events::apply(&ids, &mut tx.workspace(ws), &ev, t0)
                })
                .await
                .expect("workspace with one event");
        }
        let h = time::Duration::hours;
        let early = sweep(&store, t0 + h(23)).await.expect("sweep");
        assert_eq!(
            early,
            SweepReport {
                workspaces: 2,
                ..SweepReport::default()
            }
        );
        let late = sweep(&store, t0 + h(25)).await.expect("sweep");
        assert_eq!((late.workspaces, late.messages_purged), (2, 2));
        assert_eq!(late.failed, 0);
        store.close();
    }
}
