//! What the people deciding on actions see beyond the masked input: each action's recipient in
//! full and where it came from (for grouping), read from one snapshot.

use std::collections::HashMap;

use serde::Serialize;
use svc_core::error::Result;
use svc_core::ledger;
use svc_core::store::Store;
use svc_core::vocabulary::{prop, CUSTOMER};
use svc_engine::{GraphRead, Value as V, WorkspaceId};

/// Who an action is for, in full: for the people who decide on it (the dashboard's inbox and
/// `GET /api/v1/approvals` are for signed-in users, who may approve). Agent keys still see the
/// masked input.
#[derive(Clone, Debug, Default, Serialize, utoipa::ToSchema)]
pub struct Recipient {
    pub customer_id: String,
    pub email: Option<String>,
    pub name: Option<String>,
    pub phone: Option<String>,
}

/// Where an action came from, for grouping: a playbook run, an action card, or the agent.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Origin {
    /// `run:<run id>`, `card:<card id>` or `agent:<agent>`.
    pub key: String,
    /// The run id when the action is a playbook run's.
    pub run_id: Option<String>,
}

/// The recipients of `customer_ids` (`cus_...`) and the origins of `request_ids`, from one
/// snapshot. Unknown customers (deleted since) are left out.
pub async fn details(
    store: &Store,
    ws: WorkspaceId,
    customer_ids: Vec<String>,
    requests: Vec<(String, String)>,
) -> Result<(HashMap<String, Recipient>, HashMap<String, Origin>)> {
    let ids = store.ids().clone();
    store
        .read(ws, move |snap| {
            let mut recipients = HashMap::new();
            for id in customer_ids {
                let Some(node_id) = ids.parse_customer(&id) else {
                    continue;
                };
                let Some(n) = snap.node(node_id)?.filter(|n| n.has_label(CUSTOMER)) else {
                    continue;
                };
                let text = |k: &str| match n.get(k) {
                    Some(V::String(s)) if !s.trim().is_empty() => Some(s.clone()),
                    _ => None,
                };
                recipients.insert(
                    id.clone(),
                    Recipient {
                        // A stored legacy id is shown as the id the customer has now.
                        customer_id: ids.current(&id),
                        email: text(prop::EMAIL),
                        name: text(prop::NAME),
                        phone: text(prop::PHONE),
                    },
                );
            }
            let mut origins = HashMap::new();
            for (request_id, agent) in requests {
                let key =
                    ledger::row_by_request(snap, &request_id)?.and_then(|r| r.idempotency_key);
                let origin = match key.as_deref().and_then(|k| k.split_once(':')) {
                    Some(("pbrun", rest)) => {
                        let run = rest.split(':').next().unwrap_or(rest).to_owned();
                        Origin {
                            key: format!("run:{run}"),
                            run_id: Some(run),
                        }
                    }
                    Some(("card", rest)) => Origin {
                        key: format!("card:{}", rest.split(':').next().unwrap_or(rest)),
                        run_id: None,
                    },
                    _ => Origin {
                        key: format!("agent:{agent}"),
                        run_id: None,
                    },
                };
                origins.insert(request_id, origin);
            }
            Ok((recipients, origins))
        })
        .await
}
