//! Consent: who may be contacted. An unsubscribed or bounced customer is never emailed or
//! called (409 `customer_suppressed`), and a workspace caps how often one customer is contacted
//! (409 `frequency_capped`). Both are checked when an action is queued and again when it runs;
//! neither charges credits.

use serde_json::{json, Value};
use svc_core::store::WorkspaceTxn;
use svc_engine::{Direction, GraphRead, Node};
use time::OffsetDateTime;

use svc_core::error::{Code, Error, Result};
use svc_core::plumbing::clock;
use svc_core::plumbing::ids::PublicIds;

use super::{OutboundKind, OutboundRecord, State};

/// Actions that withdraw consent (Customer.io `customerio.email.unsubscribed`, Segment
/// `Unsubscribed`, an `unsubscribed` event, bounces and spam complaints).
const WITHDRAW: &[&str] = &["unsubscrib", "bounce", "spam", "complain"];
/// Actions that give it back (`resubscribed`, `subscribed`): only a later one counts.
const RESTORE: &[&str] = &["resubscrib", "subscribed", "opted_in", "opt_in"];

/// Customer properties that suppress on their own (set by identify traits or crm.mutate).
fn suppressed_by_property(customer: &Node) -> Option<String> {
    for flag in ["unsubscribed", "suppressed", "bounced", "doNotContact"] {
        if matches!(
            customer.properties.get(flag),
            Some(svc_engine::Value::Bool(true))
        ) {
            return Some(format!("the customer's {flag} property is true"));
        }
    }
    for status in ["emailStatus", "email_status"] {
        if let Some(svc_engine::Value::String(s)) = customer.properties.get(status) {
            let s = s.to_ascii_lowercase();
            if WITHDRAW.iter().any(|w| s.contains(w)) {
                return Some(format!("the customer's {status} is {s}"));
            }
        }
    }
    None
}

fn matches(action: &str, words: &[&str]) -> bool {
    let a = action.to_ascii_lowercase();
    words.iter().any(|w| a.contains(w))
}

/// Why the customer may not be contacted, if they may not.
pub fn suppression(w: &WorkspaceTxn<'_, '_>, customer: &Node) -> Result<Option<String>> {
    if let Some(why) = suppressed_by_property(customer) {
        return Ok(Some(why));
    }
    // The latest consent event decides: an unsubscribe after a resubscribe suppresses.
    let mut latest: Option<(i64, bool, String)> = None;
    for adj in w.adjacent(
        customer.id,
        Direction::Outgoing,
        Some(svc_engine::schema::HAS_TOUCHPOINT),
    )? {
        let Some(tp) = w.node(adj.neighbour)? else {
            continue;
        };
        let Some(svc_engine::Value::String(action)) = tp.properties.get("action") else {
            continue;
        };
        let withdraws = matches(action, WITHDRAW);
        let restores = !withdraws && matches(action, RESTORE);
        if !withdraws && !restores {
            continue;
        }
        let ts = match tp.properties.get("ts") {
            Some(svc_engine::Value::DateTime(us)) => *us,
            _ => 0,
        };
        if latest.as_ref().is_none_or(|(t, _, _)| ts >= *t) {
            latest = Some((ts, withdraws, action.clone()));
        }
    }
    Ok(latest
        .filter(|(_, withdraws, _)| *withdraws)
        .map(|(_, _, action)| format!("the customer's latest consent event is {action}")))
}

/// Refuses a suppressed customer.
pub fn ensure_not_suppressed(
    ids: &PublicIds,
    w: &WorkspaceTxn<'_, '_>,
    customer: &Node,
) -> Result<()> {
    match suppression(w, customer)? {
        None => Ok(()),
        Some(why) => Err(Error::new(
            Code::CustomerSuppressed,
            format!("the customer may not be contacted: {why}; nothing was sent or charged"),
        )
        .with_details(json!({ "customer_id": ids.customer(customer.id), "reason": why }))),
    }
}

/// Emails and calls to the customer in the 7 days before `now` that count against the cap
/// (queued, sending, sent, unknown), other than `except` (the record being executed).
/// `references` are the forms of the customer's id records may hold
/// (`PublicIds::customer_references`, the current one first).
pub fn contacts_this_week(
    w: &WorkspaceTxn<'_, '_>,
    references: &[String],
    now: OffsetDateTime,
    except: Option<&str>,
) -> Result<u32> {
    let since = clock::rfc3339(now - time::Duration::days(7));
    let mut records = Vec::new();
    for reference in references {
        records.extend(w.find_records::<OutboundRecord>("customer", reference)?);
    }
    let n = records
        .iter()
        .filter(|r| matches!(r.kind, OutboundKind::Email | OutboundKind::Call))
        .filter(|r| {
            matches!(
                r.state,
                State::Queued | State::Sending | State::Sent | State::Unknown
            )
        })
        .filter(|r| r.created_at >= since)
        .filter(|r| except != Some(r.id.as_str()))
        .count();
    Ok(u32::try_from(n).unwrap_or(u32::MAX))
}

/// Refuses one more contact past the workspace's weekly cap.
pub fn ensure_under_cap(
    w: &WorkspaceTxn<'_, '_>,
    references: &[String],
    cap: u32,
    now: OffsetDateTime,
    except: Option<&str>,
) -> Result<()> {
    let used = contacts_this_week(w, references, now, except)?;
    let customer_id = references.first().map_or("", String::as_str);
    if used < cap {
        return Ok(());
    }
    Err(Error::new(
        Code::FrequencyCapped,
        format!(
            "the customer was contacted {used} times in the last 7 days; the workspace allows \
             {cap} (policy max_outreach_per_customer_per_week); nothing was sent or charged"
        ),
    )
    .with_details(json!({ "customer_id": customer_id, "contacts_this_week": used, "cap": cap })))
}

/// The consent picture a dry run shows.
pub fn preview(
    ids: &PublicIds,
    w: &WorkspaceTxn<'_, '_>,
    customer: &Node,
    cap: u32,
    now: OffsetDateTime,
) -> Result<Value> {
    let references = ids.customer_references(customer.id);
    Ok(json!({
        "suppressed": suppression(w, customer)?,
        "contacts_this_week": contacts_this_week(w, &references, now, None)?,
        "weekly_cap": cap,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{self, MarketingEvent};
    use crate::outbound::{self, NewRecord};
    use svc_core::store::Store;
    use svc_engine::WorkspaceId;
    use time::macros::datetime;

    const WS: WorkspaceId = WorkspaceId(11);

    fn open_store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open store");
        (dir, store)
    }

    async fn ingest(store: &Store, v: Value) {
        let at = datetime!(2026-03-10 12:00:00 UTC);
        let ev = MarketingEvent::from_json(v)
            .expect("event")
            .validate(store.ids(), at)
            .expect("valid");
        let ids = store.ids().clone();
        store
            .write(move |tx| events::apply(&ids, &mut tx.workspace(WS), &ev, at))
            .await
            .expect("ingest");
    }

    async fn suppressed(store: &Store, email: &'static str) -> Option<String> {
        let ids = store.ids().clone();
        store
            .write(move |tx| {
                let w = tx.workspace(WS);
                let customer = crate::crm::find_customer(&ids, &w, email)?;
                suppression(&w, &customer)
            })
            .await
            .expect("suppression")
    }

    #[tokio::test]
    async fn the_latest_consent_event_decides_and_properties_suppress_on_their_own() {
        let (_dir, store) = open_store();
        let at = |day: u8, event: &str| {
            json!({"event": event, "email": "ada@example.com",
                "timestamp": format!("2026-03-{day:02}T10:00:00Z")})
        };
        ingest(&store, at(1, "signup")).await;
        assert_eq!(suppressed(&store, "ada@example.com").await, None);
        ingest(&store, at(3, "customerio.email.unsubscribed")).await;
        assert!(suppressed(&store, "ada@example.com").await.is_some());
        // An older resubscribe does not lift a newer unsubscribe; a newer one does.
        ingest(&store, at(2, "resubscribed")).await;
        assert!(suppressed(&store, "ada@example.com").await.is_some());
        ingest(&store, at(5, "resubscribed")).await;
        assert_eq!(suppressed(&store, "ada@example.com").await, None);
        // A bounce status set by identify traits suppresses whatever the events say.
        ingest(
            &store,
            json!({"event": "identify", "email": "ada@example.com",
                "traits": {"emailStatus": "Bounced"}}),
        )
        .await;
        let why = suppressed(&store, "ada@example.com")
            .await
            .expect("suppressed");
        assert!(why.contains("emailStatus"), "{why}");
    }

    #[tokio::test]
    async fn the_weekly_cap_counts_emails_and_calls_of_the_last_seven_days() {
        let (_dir, store) = open_store();
        ingest(
            &store,
            json!({"event": "signup", "email": "bo@example.com"}),
        )
        .await;
        let now = datetime!(2026-03-10 12:00:00 UTC);
        let ids = store.ids().clone();
        let result = store
            .write(move |tx| {
                let mut w = tx.workspace(WS);
                let customer = crate::crm::find_customer(&ids, &w, "bo@example.com")?;
                let cid = ids.customer(customer.id);
                let refs = ids.customer_references(customer.id);
                let mut made = Vec::new();
                for (kind, state, days_ago) in [
                    (OutboundKind::Email, State::Sent, 1),
                    (OutboundKind::Call, State::Queued, 2),
                    (OutboundKind::Email, State::Sent, 8),
                    (OutboundKind::Email, State::Failed, 1),
                    (OutboundKind::Cio, State::Sent, 1),
                ] {
                    let r = outbound::create(
                        &mut w,
                        NewRecord {
                            kind,
                            customer_id: &cid,
                            state,
                            request_id: "req_test",
                            capability: "test",
                            pending_action_id: None,
                            payload: json!({}),
                            now: now - time::Duration::days(days_ago),
                        },
                    )?;
                    made.push(r.id);
                }
                let counted = contacts_this_week(&w, &refs, now, None)?;
                let under_three = ensure_under_cap(&w, &refs, 3, now, None).is_ok();
                let at_two = ensure_under_cap(&w, &refs, 2, now, None).map_err(|e| e.code);
                let except_one = ensure_under_cap(&w, &refs, 2, now, Some(&made[0])).is_ok();
                Ok((counted, under_three, at_two, except_one))
            })
            .await
            .expect("cap");
        assert_eq!(
            result.0, 2,
            "failed, Customer.io and older records do not count"
        );
        assert!(result.1);
        assert_eq!(result.2, Err(Code::FrequencyCapped));
        assert!(
            result.3,
            "the record being executed is not counted against itself"
        );
    }
}
