//! Event recording: the customer an event's keys resolve to, the touchpoint it writes with its
//! HAS_TOUCHPOINT edge, the campaign (merged by id) with INFLUENCED_BY, and `lastSeen`.

use crate::codec::{EdgeRecord, NodeRecord};
use crate::error::EngineError;
use crate::model::{EdgeId, NodeId, Properties, Value};
use crate::read::{GraphRead, GraphWrite};
use crate::schema;
use crate::txn::{check_name, check_properties, WorkspaceTxn};

use super::{EventInput, EventOutcome};

impl WorkspaceTxn<'_, '_> {
    /// Records one event: resolves the customer, creates the touchpoint, its HAS_TOUCHPOINT
    /// edge, the campaign (merged by id) with INFLUENCED_BY, and moves `lastSeen` forward
    /// (unless the event is `outbound`: not the customer's own activity).
    pub fn record_event(&mut self, ev: &EventInput) -> Result<EventOutcome, EngineError> {
        check_name("event name", &ev.action)?;
        if let Some(c) = &ev.channel {
            check_name("channel", c)?;
        }
        if let Some(c) = &ev.campaign_id {
            check_name("campaign id", c)?;
        }
        check_properties(&ev.properties)?;

        let mut r = self.plan_identity(&ev.keys)?;
        let newer = !ev.outbound
            && match r.new.properties.get("lastSeen") {
                Some(Value::DateTime(seen)) => ev.ts > *seen,
                _ => true,
            };
        if newer {
            r.new
                .properties
                .insert("lastSeen".into(), Value::DateTime(ev.ts));
        }
        let customer_written = r.old.as_ref() != Some(&r.new);
        if customer_written {
            self.write_node(r.id, r.old.as_ref(), Some(&r.new))?;
        }

        let mut tp = Properties::new();
        tp.insert("action".into(), Value::String(ev.action.clone()));
        if let Some(c) = &ev.channel {
            tp.insert("channel".into(), Value::String(c.clone()));
        }
        tp.insert("ts".into(), Value::DateTime(ev.ts));
        if let Some(c) = &ev.campaign_id {
            tp.insert("campaignId".into(), Value::String(c.clone()));
        }
        if !ev.properties.is_empty() {
            tp.insert("properties".into(), Value::Map(ev.properties.clone()));
        }
        let tp_rec = NodeRecord {
            labels: vec![schema::TOUCHPOINT.to_owned()],
            properties: tp,
        };
        let tp_id = NodeId(self.alloc_id()?);
        self.write_node(tp_id, None, Some(&tp_rec))?;
        // Both ends were just written by this transaction: no existence checks needed.
        let has_tp = EdgeId(self.alloc_id()?);
        self.insert_edge(
            has_tp,
            &EdgeRecord {
                rel_type: schema::HAS_TOUCHPOINT.into(),
                start: r.id,
                end: tp_id,
                properties: Properties::new(),
            },
            (&r.new.labels, &tp_rec.labels),
        );

        let mut campaign_node = None;
        let mut campaign_created = false;
        if let Some(campaign) = &ev.campaign_id {
            let value = Value::String(campaign.clone());
            let existing = self
                .view()
                .index_seek(schema::CAMPAIGN, "campaignId", &value)?
                .unwrap_or_default();
            let (campaign_id, campaign_labels) = match existing.first() {
                Some(id) => (*id, self.labels_of(*id)?),
                None => {
                    let mut p = Properties::new();
                    p.insert("campaignId".into(), value);
                    campaign_created = true;
                    (
                        self.create_node(&[schema::CAMPAIGN], p)?,
                        vec![schema::CAMPAIGN.to_owned()],
                    )
                }
            };
            let influenced = EdgeId(self.alloc_id()?);
            let edge = EdgeRecord {
                rel_type: schema::INFLUENCED_BY.into(),
                start: tp_id,
                end: campaign_id,
                properties: Properties::new(),
            };
            self.insert_edge(influenced, &edge, (&tp_rec.labels, &campaign_labels));
            campaign_node = Some(campaign_id);
        }
        Ok(EventOutcome {
            customer_id: r.id,
            touchpoint_id: tp_id,
            is_new: r.is_new,
            customer_written,
            campaign_id: campaign_node,
            campaign_created,
            nodes_mutated: u32::from(customer_written) + 1 + u32::from(campaign_created),
        })
    }
}
