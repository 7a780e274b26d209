//! The outbound executors (queue/execute outreach and calls, cio.write): resolve the customer,
//! render exactly what will be sent, check the integration and consent, and record the action
//! (`queued`, or `sending` with a [`Dispatch`] the gateway performs after the commit).

use serde_json::{json, Map, Value};
use svc_core::store::WorkspaceTxn;
use svc_engine::{GraphRead, Node};

use super::{customer_of, Ctx, Outcome, Phase};
use svc_core::capabilities::Capability;
use svc_core::error::{Code, Error, Result};
use svc_core::integration_kind::Kind;
use svc_core::plumbing::ids::PublicIds;
use svc_core::workspaces;
use svc_domains::brand;
use svc_domains::crm::{prop_str, str_field};
use svc_domains::integrations::{self, smtp};
use svc_domains::outbound::delivery::{CioWrite, Dispatch, Job};
use svc_domains::outbound::{self, consent, NewRecord, OutboundKind, OutboundRecord, State};

/// 409 `integration_not_connected`, naming the integration and the route that connects it.
fn not_connected(kind: Kind) -> Error {
    Error::new(
        Code::IntegrationNotConnected,
        format!(
            "the {} integration is not connected; connect it with {} (dry_run works without it)",
            kind.as_str(),
            kind.connect_route()
        ),
    )
    .with_details(json!({ "integration": kind.as_str(), "connect": kind.connect_route() }))
}

fn integration_state(kind: Kind, connected: bool) -> Value {
    json!({ "kind": kind.as_str(), "connected": connected, "connect": kind.connect_route() })
}

/// The domain of Message-IDs: the public URL's host (ids stay unique per request id).
fn message_domain(public_url: &str) -> String {
    let rest = public_url.split_once("://").map_or(public_url, |(_, r)| r);
    let host = rest.split(['/', ':']).next().unwrap_or_default();
    if host.is_empty() || host.parse::<std::net::IpAddr>().is_ok() {
        "svc.local".to_owned()
    } else {
        host.to_owned()
    }
}

/// Where the voice provider reports a call's outcome.
fn status_callback(ctx: &Ctx<'_>) -> String {
    format!(
        "{}/api/webhooks/voice/{}/status",
        ctx.public_url.trim_end_matches('/'),
        workspaces::render_id(ctx.key.workspace_id())
    )
}

/// Consent and the weekly cap, for a contact that is about to be queued or made.
fn ensure_contactable(
    w: &WorkspaceTxn<'_, '_>,
    ctx: &Ctx<'_>,
    customer: &Node,
    except: Option<&str>,
) -> Result<()> {
    consent::ensure_not_suppressed(ctx.ids, w, customer)?;
    consent::ensure_under_cap(
        w,
        &ctx.ids.customer_references(customer.id),
        ctx.settings.policy.max_outreach_per_customer_per_week,
        ctx.now,
        except,
    )
}

/// One rendered action, before it is recorded.
struct Rendered<'a> {
    kind: OutboundKind,
    customer_id: &'a str,
    payload: Value,
    job: Job,
}

/// Records the action for a queue or a commit and says what the invocation returns.
fn record(
    phase: Phase,
    w: &mut WorkspaceTxn<'_, '_>,
    ctx: &Ctx<'_>,
    c: Capability,
    action: Rendered<'_>,
) -> Result<Outcome> {
    let Rendered {
        kind,
        customer_id,
        payload,
        job,
    } = action;
    let state = if phase == Phase::Queue {
        State::Queued
    } else {
        State::Sending
    };
    let r = outbound::create(
        w,
        NewRecord {
            kind,
            customer_id,
            state,
            request_id: ctx.request_id,
            capability: c.id(),
            pending_action_id: ctx.pending_action_id,
            payload: payload.clone(),
            now: ctx.now,
        },
    )?;
    Ok(Outcome {
        result: json!({
            "outbound_id": r.id,
            "state": state.as_str(),
            "customer_id": customer_id,
            "kind": kind.as_str(),
            "payload": payload,
        }),
        customer_id: Some(customer_id.to_owned()),
        stream: None,
        dispatch: (phase == Phase::Commit).then(|| Dispatch {
            outbound_id: r.id.clone(),
            job,
        }),
    })
}

fn preview(
    w: &WorkspaceTxn<'_, '_>,
    ctx: &Ctx<'_>,
    kind: Kind,
    connected: bool,
    customer: &Node,
    payload: Value,
    with_consent: bool,
) -> Result<Outcome> {
    let customer_id = ctx.ids.customer(customer.id);
    let consent = if with_consent {
        consent::preview(
            ctx.ids,
            w,
            customer,
            ctx.settings.policy.max_outreach_per_customer_per_week,
            ctx.now,
        )?
    } else {
        Value::Null
    };
    Ok(Outcome::of(
        json!({
            "customer_id": customer_id,
            "would_send": payload,
            "integration": integration_state(kind, connected),
            "consent": consent,
        }),
        Some(customer_id),
    ))
}

/// What an outbound executor rendered, before the phase decides what becomes of it.
struct Action<'n, C> {
    integration: Kind,
    kind: OutboundKind,
    customer: &'n Node,
    /// The integration's config, when connected.
    config: Option<C>,
    payload: Value,
    make_job: fn(C, &Value) -> Result<Job>,
    /// Emails and calls contact the customer: consent and the weekly cap apply.
    contacts: bool,
}

/// Preview, queue or commit a rendered action: the checks every outbound capability shares.
fn carry_out<C>(
    phase: Phase,
    w: &mut WorkspaceTxn<'_, '_>,
    ctx: &Ctx<'_>,
    c: Capability,
    a: Action<'_, C>,
) -> Result<Outcome> {
    if phase == Phase::Preview {
        let connected = a.config.is_some();
        return preview(
            w,
            ctx,
            a.integration,
            connected,
            a.customer,
            a.payload,
            a.contacts,
        );
    }
    let config = a.config.ok_or_else(|| not_connected(a.integration))?;
    if a.contacts {
        ensure_contactable(w, ctx, a.customer, None)?;
    }
    let job = (a.make_job)(config, &a.payload)?;
    let customer_id = ctx.ids.customer(a.customer.id);
    let rendered = Rendered {
        kind: a.kind,
        customer_id: &customer_id,
        payload: a.payload,
        job,
    };
    record(phase, w, ctx, c, rendered)
}

/// The customer's `property` (their email or phone) when `valid`, else a 400 naming `what`.
fn contact_point(
    ids: &PublicIds,
    customer: &Node,
    property: &str,
    valid: fn(&str) -> bool,
    what: &str,
) -> Result<String> {
    prop_str(customer, property)
        .filter(|v| valid(v))
        .map(str::to_owned)
        .ok_or_else(|| {
            Error::invalid_input(format!(
                "customer {} has no {what}",
                ids.customer(customer.id)
            ))
        })
}

/// A text field of a recorded payload (rendered by this module, so missing is a bug).
fn payload_text(payload: &Value, key: &str) -> Result<String> {
    payload
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| Error::internal(format!("an outbound payload lacks {key}")))
}

// ---- email ----

fn email_job(config: integrations::SmtpConfig, payload: &Value) -> Result<Job> {
    let text = |k: &str| payload.get(k).and_then(Value::as_str).map(str::to_owned);
    let required = |k: &str| payload_text(payload, k);
    Ok(Job::Email {
        email: smtp::Email {
            to: required("to")?,
            to_name: text("to_name"),
            subject: required("subject")?,
            text: required("text")?,
            html: required("html")?,
            message_id: required("message_id")?,
            reply_to: text("reply_to"),
            headers: Vec::new(),
        },
        config,
    })
}

/// queue.outreach / execute.outreach: the agent's subject and body in the brand's email frame.
pub(super) fn email(
    phase: Phase,
    w: &mut WorkspaceTxn<'_, '_>,
    ctx: &Ctx<'_>,
    c: Capability,
    input: &Value,
) -> Result<Outcome> {
    let customer = customer_of(ctx.ids, w, input)?;
    let to = contact_point(
        ctx.ids,
        &customer,
        "email",
        smtp::is_address,
        "valid email address to send to",
    )?;
    let brand = brand::load_in(w, ctx.sealer)?;
    let rendered = svc_domains::outreach::draft::render_email(
        &brand,
        str_field(input, "subject").unwrap_or_default(),
        str_field(input, "body").unwrap_or_default(),
    );
    let config = integrations::load_smtp_in(w, ctx.sealer)?;
    let payload = json!({
        "to": to,
        "to_name": prop_str(&customer, "name"),
        "from": config.as_ref().map(|c| c.from.clone()),
        "reply_to": config.as_ref().and_then(|c| c.reply_to.clone()),
        "subject": rendered.subject,
        "text": rendered.text,
        "html": rendered.html,
        "message_id": format!("{}@{}", ctx.request_id, message_domain(ctx.public_url)),
    });
    let action = Action {
        integration: Kind::Smtp,
        kind: OutboundKind::Email,
        customer: &customer,
        config,
        payload,
        make_job: email_job,
        contacts: true,
    };
    carry_out(phase, w, ctx, c, action)
}

// ---- calls ----

fn call_job(config: integrations::VoiceConfig, payload: &Value) -> Result<Job> {
    Ok(Job::Call {
        to: payload_text(payload, "to")?,
        script: payload_text(payload, "script")?,
        status_callback: payload_text(payload, "status_callback")?,
        config,
    })
}

/// queue.call / execute.call: a call to the customer's phone with the agent's script.
pub(super) fn call(
    phase: Phase,
    w: &mut WorkspaceTxn<'_, '_>,
    ctx: &Ctx<'_>,
    c: Capability,
    input: &Value,
) -> Result<Outcome> {
    let customer = customer_of(ctx.ids, w, input)?;
    let to = contact_point(
        ctx.ids,
        &customer,
        "phone",
        integrations::is_e164,
        "E.164 phone number to call",
    )?;
    let config = integrations::load_voice_in(w, ctx.sealer)?;
    let payload = json!({
        "to": to,
        "from": config.as_ref().map(|c| c.from_number.clone()),
        "script": str_field(input, "script").unwrap_or_default(),
        "objective": str_field(input, "objective"),
        "status_callback": status_callback(ctx),
    });
    let action = Action {
        integration: Kind::Voice,
        kind: OutboundKind::Call,
        customer: &customer,
        config,
        payload,
        make_job: call_job,
        contacts: true,
    };
    carry_out(phase, w, ctx, c, action)
}

// ---- Customer.io ----

fn object_field(input: &Value, name: &str) -> Map<String, Value> {
    input
        .get(name)
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

fn cio_job(config: integrations::CustomerioConfig, payload: &Value) -> Result<Job> {
    let cio_customer_id = payload_text(payload, "cio_customer_id")?;
    let write = match payload.get("action").and_then(Value::as_str) {
        Some("identify") => CioWrite::Identify {
            attributes: object_field(payload, "attributes"),
        },
        _ => CioWrite::Track {
            name: payload
                .get("event")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            data: object_field(payload, "data"),
        },
    };
    Ok(Job::Cio {
        config,
        cio_customer_id,
        write,
    })
}

/// cio.write: identify the customer in Customer.io (attributes; the email is added when known)
/// or track an event on them. A CRM write, not a contact: consent does not gate it.
pub(super) fn cio(
    phase: Phase,
    w: &mut WorkspaceTxn<'_, '_>,
    ctx: &Ctx<'_>,
    c: Capability,
    input: &Value,
) -> Result<Outcome> {
    let customer = customer_of(ctx.ids, w, input)?;
    // Customer.io may already know a customer from before opaque ids by its decimal id.
    let cio_customer_id = prop_str(&customer, "cio_id")
        .map(str::to_owned)
        .unwrap_or_else(|| ctx.ids.original_customer(customer.id));
    let action = str_field(input, "action").unwrap_or("identify");
    let payload = if action == "identify" {
        let mut attributes = object_field(input, "attributes");
        if let Some(email) = prop_str(&customer, "email") {
            attributes
                .entry("email")
                .or_insert_with(|| Value::String(email.to_owned()));
        }
        json!({"action": "identify", "cio_customer_id": cio_customer_id,
            "attributes": attributes})
    } else {
        let event = str_field(input, "event")
            .ok_or_else(|| Error::invalid_field("input.event", "", "track needs the event name"))?;
        json!({"action": "track", "cio_customer_id": cio_customer_id, "event": event,
            "data": object_field(input, "data")})
    };
    let action = Action {
        integration: Kind::Customerio,
        kind: OutboundKind::Cio,
        customer: &customer,
        config: integrations::load_customerio_in(w, ctx.sealer)?,
        payload,
        make_job: cio_job,
        contacts: false,
    };
    carry_out(phase, w, ctx, c, action)
}

// ---- approved requests ----

/// Sends an approved request's queued record as it was queued, after checking again what may
/// have changed since (the integration, consent, the weekly cap).
pub(super) fn send_queued(
    w: &mut WorkspaceTxn<'_, '_>,
    ctx: &Ctx<'_>,
    mut r: OutboundRecord,
) -> Result<Outcome> {
    if r.state != State::Queued {
        return Err(Error::new(
            Code::Conflict,
            format!(
                "outbound record {} is {}, not queued",
                r.id,
                r.state.as_str()
            ),
        ));
    }
    let node_id = ctx
        .ids
        .parse_customer(&r.customer_id)
        .ok_or_else(|| Error::not_found("customer (the queued action names no customer)"))?;
    let customer = w
        .node(node_id)?
        .ok_or_else(|| Error::not_found("customer (deleted since the action was queued)"))?;
    let job = match r.kind {
        OutboundKind::Email => {
            let config = integrations::load_smtp_in(w, ctx.sealer)?
                .ok_or_else(|| not_connected(Kind::Smtp))?;
            ensure_contactable(w, ctx, &customer, Some(&r.id))?;
            email_job(config, &r.payload)?
        }
        OutboundKind::Call => {
            let config = integrations::load_voice_in(w, ctx.sealer)?
                .ok_or_else(|| not_connected(Kind::Voice))?;
            ensure_contactable(w, ctx, &customer, Some(&r.id))?;
            call_job(config, &r.payload)?
        }
        OutboundKind::Cio => {
            let config = integrations::load_customerio_in(w, ctx.sealer)?
                .ok_or_else(|| not_connected(Kind::Customerio))?;
            cio_job(config, &r.payload)?
        }
    };
    outbound::transition(w, &mut r, State::Sending, ctx.now)?;
    Ok(Outcome {
        result: json!({
            "outbound_id": r.id,
            "state": State::Sending.as_str(),
            "customer_id": r.customer_id,
            "kind": r.kind.as_str(),
            "payload": r.payload,
        }),
        customer_id: Some(r.customer_id.clone()),
        stream: None,
        dispatch: Some(Dispatch {
            outbound_id: r.id.clone(),
            job,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_ids_take_the_public_host() {
        assert_eq!(
            message_domain("https://svc.example.com/base"),
            "svc.example.com"
        );
        assert_eq!(message_domain("http://127.0.0.1:8080"), "svc.local");
        assert_eq!(message_domain("http://localhost:8080"), "localhost");
        assert_eq!(message_domain(""), "svc.local");
    }
}
