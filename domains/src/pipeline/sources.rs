//! Which events say something about an opportunity, and what (docs/intelligence.md
//! "Pipeline"). The webhook normalizers (`events::webhooks`) keep the platform's fields in the
//! touchpoint properties; this reads them back from the validated event:
//!
//! - generic `opportunity_created` / `opportunity_stage_changed`: `properties.opportunityId`
//!   (required; the workspace's own id, as it is), `name`, `amount` (currency units), `stage`;
//! - HubSpot `hubspot.deal.creation`, `hubspot.deal.propertyChange` (`dealstage`, `amount`,
//!   `dealname`) and `hubspot.deal.associationChange` (deal to contact): `hubspot:<dealId>`;
//! - Stripe `stripe.invoice.paid` / `stripe.invoice.payment_succeeded` (won, the amount paid)
//!   and `stripe.customer.subscription.created` / `.updated` (won when `active` or `past_due`,
//!   open at stage `trialing` while trialing): `stripe:<subscription id>`, else
//!   `stripe:<invoice id>`; Stripe's minor units become currency units.

use svc_engine::{EventInput, Properties, Value};

use super::{OpportunityChange, Status, CREATED, STAGE_CHANGED, WON_STAGE};
use svc_core::error::{Error, Result};
use svc_core::vocabulary::prop;

/// ISO 4217 currencies Stripe treats as zero-decimal (amounts are already whole units).
const ZERO_DECIMAL: &[&str] = &[
    "bif", "clp", "djf", "gnf", "jpy", "kmf", "krw", "mga", "pyg", "rwf", "ugx", "vnd", "vuv",
    "xaf", "xof", "xpf",
];

/// The prefix of the placeholder external id a HubSpot deal event names before its contact is
/// known (`hubspot:deal:<id>`).
pub const HUBSPOT_DEAL_PLACEHOLDER: &str = "hubspot:deal:";

fn text(p: &Properties, key: &str) -> Option<String> {
    match p.get(key)? {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        Value::Int(i) => Some(i.to_string()),
        _ => None,
    }
}

fn number(p: &Properties, key: &str) -> Result<Option<f64>> {
    let n = match p.get(key) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Int(i)) => *i as f64,
        Some(Value::Float(f)) => *f,
        Some(Value::String(s)) if s.trim().is_empty() => return Ok(None),
        Some(Value::String(s)) => s
            .trim()
            .parse::<f64>()
            .map_err(|_| Error::invalid_field(&format!("properties.{key}"), s, "not a number"))?,
        Some(other) => {
            return Err(Error::invalid_field(
                &format!("properties.{key}"),
                &format!("{other:?}"),
                "not a number",
            ))
        }
    };
    if !n.is_finite() || n < 0.0 {
        return Err(Error::invalid_field(
            &format!("properties.{key}"),
            &n.to_string(),
            "must be a finite number of at least 0",
        ));
    }
    Ok(Some(n))
}

/// Minor units (Stripe's cents) to currency units.
pub fn from_minor_units(amount: f64, currency: Option<&str>) -> f64 {
    let zero_decimal =
        currency.is_some_and(|c| ZERO_DECIMAL.contains(&c.to_ascii_lowercase().as_str()));
    if zero_decimal {
        amount
    } else {
        amount / 100.0
    }
}

/// The opportunity change an event carries, if any; an opportunity event missing its id is
/// `invalid_input`.
pub fn change_of(event: &EventInput) -> Result<Option<OpportunityChange>> {
    let p = &event.properties;
    let action = event.action.as_str();
    match action {
        CREATED | STAGE_CHANGED => generic(p).map(Some),
        a if a.starts_with("hubspot.deal.") || a == "hubspot.contact.associationChange" => {
            Ok(hubspot(a, p))
        }
        a if a.starts_with("stripe.") => stripe(a, p),
        _ => Ok(None),
    }
}

fn generic(p: &Properties) -> Result<OpportunityChange> {
    let id = text(p, prop::OPPORTUNITY_ID).ok_or_else(|| {
        Error::invalid_input(
            "properties.opportunityId: opportunity events need the opportunity's id",
        )
        .with_details(serde_json::json!({"field": "properties.opportunityId"}))
    })?;
    Ok(OpportunityChange {
        opportunity_id: id,
        name: text(p, prop::NAME),
        amount: number(p, prop::AMOUNT)?,
        currency: text(p, prop::CURRENCY),
        stage: text(p, prop::STAGE),
        source: "api".to_owned(),
        ..OpportunityChange::default()
    })
}

fn hubspot(action: &str, p: &Properties) -> Option<OpportunityChange> {
    let deal = text(p, "dealId")?;
    let mut change = OpportunityChange {
        opportunity_id: format!("hubspot:{deal}"),
        source: "hubspot".to_owned(),
        follow_owner: true,
        ..OpportunityChange::default()
    };
    match action {
        "hubspot.deal.creation" => {}
        "hubspot.deal.associationChange" | "hubspot.contact.associationChange" => {
            // The event names the contact: it owns the deal from now on.
            change.follow_owner = false;
            change.merge_placeholder = Some(format!("{HUBSPOT_DEAL_PLACEHOLDER}{deal}"));
        }
        "hubspot.deal.propertyChange" => {
            let value = text(p, "propertyValue");
            match text(p, "propertyName").as_deref() {
                Some("dealstage") => change.stage = value,
                Some("dealname") => change.name = value,
                // HubSpot amounts are in currency units already.
                Some("amount") => change.amount = value.and_then(|v| v.parse::<f64>().ok()),
                _ => return None,
            }
        }
        _ => return None,
    }
    Some(change)
}

fn stripe(action: &str, p: &Properties) -> Result<Option<OpportunityChange>> {
    let object_id = text(p, "stripe_object_id");
    let subscription = text(p, "stripe_subscription");
    let currency = text(p, prop::CURRENCY);
    let amount = number(p, prop::AMOUNT)?.map(|a| from_minor_units(a, currency.as_deref()));
    let (id, name, status, stage) = match action {
        "stripe.invoice.paid" | "stripe.invoice.payment_succeeded" => {
            let name = match &subscription {
                Some(s) => format!("Stripe subscription {s}"),
                None => format!("Stripe invoice {}", object_id.clone().unwrap_or_default()),
            };
            (subscription.or(object_id), name, Status::Won, WON_STAGE)
        }
        "stripe.customer.subscription.created" | "stripe.customer.subscription.updated" => {
            let (status, stage) = match text(p, "stripe_status").as_deref() {
                Some("active" | "past_due") => (Status::Won, WON_STAGE),
                Some("trialing") => (Status::Open, "trialing"),
                _ => return Ok(None),
            };
            let name = format!(
                "Stripe subscription {}",
                object_id.clone().unwrap_or_default()
            );
            (object_id, name, status, stage)
        }
        _ => return Ok(None),
    };
    let Some(id) = id else { return Ok(None) };
    Ok(Some(OpportunityChange {
        opportunity_id: format!("stripe:{id}"),
        name: Some(name),
        amount,
        currency,
        stage: Some(stage.to_owned()),
        status: Some(status),
        source: "stripe".to_owned(),
        ..OpportunityChange::default()
    }))
}
