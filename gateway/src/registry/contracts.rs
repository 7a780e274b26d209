//! The contract of each capability: title, description, legacy scope, modes, MCP tool name,
//! draft 2020-12 input and output schemas and examples (cost, side effect, approval and the
//! required integration are the capability table's). One function per capability; [`describe`]
//! is the table.

use serde_json::{json, Value};

use super::{ApprovalBehavior, Descriptor, Example, CONTRACT_VERSION};
use svc_core::capabilities::{self, ApprovalKind, Capability};

fn object(properties: Value, required: &[&str]) -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

fn customer_ref() -> Value {
    json!({
        "type": "string", "minLength": 1, "maxLength": 320,
        "description": "Customer id (cus_...), email, phone or external id."
    })
}

fn quota_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "plan": {"type": "string"},
            "limit": {"type": "integer", "minimum": 0},
            "used": {"type": "integer", "minimum": 0},
            "remaining": {"type": "integer", "minimum": 0}
        },
        "required": ["plan", "limit", "used", "remaining"]
    })
}

const TS: &str = "2026-11-20T10:15:00.000Z";

struct Base {
    title: &'static str,
    description: &'static str,
    legacy_scope: &'static str,
    modes: &'static [&'static str],
    mcp: &'static str,
}

const READ_MODES: &[&str] = &["dry_run", "execute"];
const QUEUE_MODES: &[&str] = &["dry_run", "queue"];
const GATED_MODES: &[&str] = &["dry_run", "queue", "execute"];

fn approval_text(kind: ApprovalKind) -> &'static str {
    match kind {
        ApprovalKind::None => "Read-only; runs in execute mode without approval.",
        ApprovalKind::Direct => "Low-risk writeback; commits in execute mode.",
        ApprovalKind::QueueRequired => {
            "Always queued as an approval request; a person approves before it runs."
        }
        ApprovalKind::ApprovalGated => {
            "Execute commits only when the key has auto_run, workspace policy allows it and the \
             approval system auto-approves it; otherwise it is queued."
        }
    }
}

/// The contract of one capability.
pub(super) fn describe(c: Capability) -> Descriptor {
    let (base, input, output, examples) = contract(c);
    let id = c.id();
    Descriptor {
        id,
        title: base.title,
        description: base.description,
        version: CONTRACT_VERSION,
        grant: capabilities::grant_for(id),
        legacy_scope: base.legacy_scope,
        allowed_modes: base.modes.to_vec(),
        action_credit_cost: c.credit_cost(),
        side_effect: c.side_effect(),
        approval_behavior: ApprovalBehavior {
            kind: c.approval(),
            description: approval_text(c.approval()),
        },
        mcp_tool_name: base.mcp,
        requires_integration: c.requires_integration(),
        input_schema: input,
        output_schema: output,
        examples,
    }
}

type Contract = (Base, Value, Value, Vec<Example>);

fn contract(c: Capability) -> Contract {
    match c {
        Capability::ContextGet => context_get(),
        Capability::AccountGet => account_get(),
        Capability::EventsIngest => events_ingest(),
        Capability::MemoryWrite => memory_write(),
        Capability::ScoreChurn => score("churn"),
        Capability::ScoreConversion => score("conversion"),
        Capability::PlanGoal => plan_goal(),
        Capability::DraftOutreach => draft_outreach(),
        Capability::QueueOutreach => outreach(false),
        Capability::ExecuteOutreach => outreach(true),
        Capability::QueueCall => call(false),
        Capability::ExecuteCall => call(true),
        Capability::CrmMutate => crm_mutate(),
        Capability::CioWrite => cio_write(),
        Capability::ReportGenerate => report_generate(),
    }
}

fn context_get() -> Contract {
    let base = Base {
        title: "Get customer context",
        description: "The customer's current picture for choosing the next move: lifecycle stage, \
                      30-day sentiment trajectory, intent signals, open loops, blockers and recent \
                      agent decisions, derived from the customer's touchpoints, memory notes and \
                      the action ledger.",
        legacy_scope: "v1:context:read",
        modes: READ_MODES,
        mcp: "get_customer_context",
    };
    let input = object(json!({ "customer": customer_ref() }), &["customer"]);
    let item = json!({"type": "object", "properties": {
        "kind": {"type": "string"}, "text": {"type": "string"}, "since": {"type": "string"}
    }, "required": ["kind", "text", "since"]});
    let output = object(
        json!({
            "customer": {"type": "string"},
            "customer_id": {"type": "string", "pattern": "^cus_"},
            "lifecycle_stage": {"enum": ["lead", "engaged", "opportunity", "customer", "at_risk", "churned"]},
            "sentiment_trajectory": {"type": "object", "properties": {
                "window_days": {"const": 30},
                "direction": {"enum": ["improving", "declining", "stable"]},
                "trigger": {"type": ["string", "null"]},
                "recent_score": {"type": "number"},
                "prior_score": {"type": "number"},
                "trigger_touchpoint_id": {"type": ["string", "null"]},
                "method": {"type": "string"},
                "evidence": {"type": "array", "items": {"type": "object", "properties": {
                    "touchpoint_id": {"type": "string"}, "ts": {"type": "string"},
                    "score": {"type": "number", "minimum": -1, "maximum": 1},
                    "source": {"enum": ["text", "explicit", "action"]},
                    "text": {"type": "string"}
                }, "required": ["touchpoint_id", "ts", "score", "source"]}}
            }, "required": ["window_days", "direction", "trigger"]},
            "intent_signals": {"type": "array", "items": {"type": "string"}},
            "intent_evidence": {"type": "array", "items": {"type": "object", "properties": {
                "signal": {"type": "string"}, "touchpoint_id": {"type": "string"},
                "ts": {"type": "string"}
            }, "required": ["signal", "touchpoint_id"]}},
            "open_loops": {"type": "array", "items": item},
            "blockers": {"type": "array", "items": item},
            "recent_decisions": {"type": "array", "items": {"type": "object", "properties": {
                "agent": {"type": "string"}, "action": {"type": "string"},
                "outcome": {"type": "string"}, "ts": {"type": "string"}
            }, "required": ["agent", "action", "outcome", "ts"]}},
            "touchpoint_count": {"type": "integer", "minimum": 0},
            "last_seen": {"type": ["string", "null"]}
        }),
        &[
            "customer",
            "customer_id",
            "lifecycle_stage",
            "sentiment_trajectory",
            "intent_signals",
            "open_loops",
            "blockers",
            "recent_decisions",
        ],
    );
    let example = Example {
        title: "Context of a customer by email",
        mode: "execute",
        input: json!({"customer": "ada@example.com"}),
        output: Some(json!({
            "customer": "Ada Lovelace", "customer_id": "cus_3kTMd92jFpQ", "lifecycle_stage": "opportunity",
            "sentiment_trajectory": {"window_days": 30, "direction": "improving",
                "trigger": "meeting_booked", "recent_score": 1.0, "prior_score": 0.0},
            "intent_signals": ["pricing_viewed", "demo_requested"],
            "open_loops": [{"kind": "open_loop", "text": "demo_requested", "since": TS}],
            "blockers": [],
            "recent_decisions": [{"agent": "sdr-bot", "action": "memory.write",
                "outcome": "committed", "ts": TS}],
            "touchpoint_count": 7, "last_seen": TS
        })),
    };
    (base, input, output, vec![example])
}

fn account_get() -> Contract {
    let base = Base {
        title: "Get account",
        description: "The workspace account as the calling key sees it: plan, monthly action \
                      credits (limit, used, remaining), the key's own settings and usage, and \
                      counts of the workspace's graph.",
        legacy_scope: "v1:account:read",
        modes: READ_MODES,
        mcp: "get_account",
    };
    let input = object(json!({}), &[]);
    let output = object(
        json!({
            "workspace_id": {"type": "string", "pattern": "^ws_"},
            "workspace_name": {"type": "string"},
            "plan": {"type": "string"},
            "read_only": {"type": "boolean"},
            "month": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}$"},
            "quota": quota_schema(),
            "workspace_credits_used": {"type": "integer", "minimum": 0},
            "key": {"type": "object", "properties": {
                "id": {"type": "string"}, "agent": {"type": "string"},
                "grants": {"type": "array", "items": {"type": "string"}},
                "allowed_modes": {"type": "array", "items": {"type": "string"}},
                "auto_run": {"type": "boolean"},
                "quota_override_monthly": {"type": ["integer", "null"]},
                "credits_used": {"type": "integer", "minimum": 0}
            }, "required": ["id", "agent", "grants", "allowed_modes", "auto_run", "credits_used"]},
            "counts": {"type": "object", "properties": {
                "customers": {"type": "integer"}, "touchpoints": {"type": "integer"},
                "campaigns": {"type": "integer"}, "opportunities": {"type": "integer"},
                "memory_notes": {"type": "integer"}
            }, "required": ["customers", "touchpoints", "campaigns", "opportunities"]}
        }),
        &[
            "workspace_id",
            "plan",
            "month",
            "quota",
            "workspace_credits_used",
            "key",
            "counts",
        ],
    );
    let example = Example {
        title: "The account of the calling key",
        mode: "execute",
        input: json!({}),
        output: Some(json!({
            "workspace_id": "ws_00000000000000ff", "workspace_name": "Acme", "plan": "free",
            "read_only": false, "month": "2026-11",
            "quota": {"plan": "free", "limit": 100, "used": 4, "remaining": 96},
            "workspace_credits_used": 4,
            "key": {"id": "key_x", "agent": "sdr-bot", "grants": ["capability:account.get"],
                "allowed_modes": ["dry_run", "execute"], "auto_run": false,
                "quota_override_monthly": null, "credits_used": 4},
            "counts": {"customers": 12, "touchpoints": 80, "campaigns": 2, "opportunities": 1,
                "memory_notes": 3}
        })),
    };
    (base, input, output, vec![example])
}

fn events_ingest() -> Contract {
    let base = Base {
        title: "Ingest an event",
        description: "Records one marketing event and the resulting touchpoint in the customer \
                      timeline. Use for observations and actions that become customer history: \
                      pages observed, emails sent, calls placed, signals fired, imported activity.",
        legacy_scope: "v1:events:write",
        modes: READ_MODES,
        mcp: "ingest_event",
    };
    let s = |d: &str| json!({"type": "string", "minLength": 1, "description": d});
    let input = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "event": {"type": "string", "minLength": 1, "maxLength": 255, "description": "Stable event name."},
            "customer": s("Customer id, email, phone or external id."),
            "customerId": s("Canonical customer id."),
            "email": s("Identity match key."),
            "phone": s("Identity match key."),
            "external_id": s("External customer id."),
            "externalId": s("Alias of external_id."),
            "properties": {"type": "object", "description": "Free-form touchpoint properties."},
            "channel": {"type": "string", "minLength": 1, "maxLength": 255},
            "campaignId": {"type": "string", "minLength": 1, "maxLength": 255},
            "timestamp": {"type": "string", "description": "ISO-8601 with timezone; defaults to now."}
        },
        "required": ["event"],
        "anyOf": [
            {"required": ["customer"]}, {"required": ["customerId"]}, {"required": ["email"]},
            {"required": ["phone"]}, {"required": ["external_id"]}, {"required": ["externalId"]}
        ],
        "additionalProperties": false
    });
    let output = object(
        json!({
            "customer_id": {"type": "string"},
            "touchpoint_id": {"type": "string"},
            "is_new": {"type": "boolean"},
            "nodes_mutated": {"type": "integer", "minimum": 0},
            "received_at": {"type": "string"}
        }),
        &[
            "customer_id",
            "touchpoint_id",
            "is_new",
            "nodes_mutated",
            "received_at",
        ],
    );
    let example = Example {
        title: "A page view by email",
        mode: "execute",
        input: json!({"event": "pricing_viewed", "email": "ada@example.com",
            "channel": "web", "properties": {"path": "/pricing"}}),
        output: Some(
            json!({"customer_id": "cus_3kTMd92jFpQ", "touchpoint_id": "tp_0Vb7qXeR2Lm", "is_new": false,
            "nodes_mutated": 2, "received_at": TS}),
        ),
    };
    (base, input, output, vec![example])
}

fn memory_write() -> Contract {
    let base = Base {
        title: "Write a memory note",
        description: "Attaches a memory note to a customer: a plain note, an open loop to \
                      close, a blocker, or a decision taken. Notes feed context.get.",
        legacy_scope: "v1:memory:write",
        modes: READ_MODES,
        mcp: "write_memory",
    };
    let input = object(
        json!({
            "customer": customer_ref(),
            "text": {"type": "string", "minLength": 1, "maxLength": 4000},
            "kind": {"enum": ["note", "open_loop", "blocker", "decision"], "default": "note"},
            "tags": {"type": "array", "maxItems": 20,
                "items": {"type": "string", "minLength": 1, "maxLength": 60}}
        }),
        &["customer", "text"],
    );
    let output = object(
        json!({
            "memory_id": {"type": "string", "pattern": "^mem_"},
            "customer_id": {"type": "string", "pattern": "^cus_"},
            "kind": {"enum": ["note", "open_loop", "blocker", "decision"]},
            "created_at": {"type": "string"}
        }),
        &["memory_id", "customer_id", "kind", "created_at"],
    );
    let example = Example {
        title: "Record a blocker",
        mode: "execute",
        input: json!({"customer": "cus_3kTMd92jFpQ", "kind": "blocker",
            "text": "Security review pending", "tags": ["security"]}),
        output: Some(
            json!({"memory_id": "mem_0000000001", "customer_id": "cus_3kTMd92jFpQ",
            "kind": "blocker", "created_at": TS}),
        ),
    };
    (base, input, output, vec![example])
}

fn score(which: &'static str) -> Contract {
    let (title, description, mcp): (&str, &str, &str) = if which == "churn" {
        (
            "Score churn risk",
            "Churn-risk score of a customer (0 to 1) with the factors behind it.",
            "score_churn",
        )
    } else {
        (
            "Score conversion likelihood",
            "Conversion-likelihood score of a customer (0 to 1) with the factors behind it.",
            "score_conversion",
        )
    };
    let base = Base {
        title,
        description,
        legacy_scope: "v1:scores:read",
        modes: READ_MODES,
        mcp,
    };
    let (input, output) = (
        svc_domains::scoring::input_schema(),
        svc_domains::scoring::output_schema(),
    );
    let (example_input, example_output) = svc_domains::scoring::example();
    let example = Example {
        title: "Score one customer",
        mode: "execute",
        input: example_input,
        output: Some(example_output),
    };
    (base, input, output, vec![example])
}

fn plan_goal() -> Contract {
    let base = Base {
        title: "Plan toward a goal",
        description: "Ordered next steps toward a goal for a customer or segment.",
        legacy_scope: "v1:plans:read",
        modes: READ_MODES,
        mcp: "plan_goal",
    };
    let (input, output) = (
        svc_domains::planning::input_schema(),
        svc_domains::planning::output_schema(),
    );
    let (example_input, example_output) = svc_domains::planning::example();
    let example = Example {
        title: "Plan a renewal",
        mode: "execute",
        input: example_input,
        output: Some(example_output),
    };
    (base, input, output, vec![example])
}

fn draft_outreach() -> Contract {
    let base = Base {
        title: "Draft outreach",
        description:
            "Drafts an outreach message for one customer and an intent in the workspace's \
                      brand voice, from what is known about the customer (recent touchpoints, \
                      intent signals, open loops, the active playbook); names the facts it used. \
                      Deterministic; sends nothing.",
        legacy_scope: "v1:outreach:read",
        modes: READ_MODES,
        mcp: "draft_outreach",
    };
    let (input, output) = (
        svc_domains::outreach::draft::input_schema(),
        svc_domains::outreach::draft::output_schema(),
    );
    let (example_input, example_output) = svc_domains::outreach::draft::example();
    let example = Example {
        title: "Draft a follow-up email",
        mode: "execute",
        input: example_input,
        output: Some(example_output),
    };
    (base, input, output, vec![example])
}

fn outreach(execute: bool) -> Contract {
    let base = Base {
        title: if execute {
            "Send outreach"
        } else {
            "Queue outreach"
        },
        description: if execute {
            "Sends an outbound email to a customer; approval-gated."
        } else {
            "Queues an outbound email for a person to approve and send."
        },
        legacy_scope: "v1:outreach:write",
        modes: if execute { GATED_MODES } else { QUEUE_MODES },
        mcp: if execute {
            "execute_outreach"
        } else {
            "queue_outreach"
        },
    };
    let input = object(
        json!({
            "customer": customer_ref(),
            "subject": {"type": "string", "minLength": 1, "maxLength": 200},
            "body": {"type": "string", "minLength": 1, "maxLength": 20000}
        }),
        &["customer", "subject", "body"],
    );
    let output = outbound_output();
    let example = Example {
        title: "Email a customer",
        mode: if execute { "execute" } else { "queue" },
        input: json!({"customer": "cus_3kTMd92jFpQ", "subject": "Your trial", "body": "Hi Ada, ..."}),
        output: None,
    };
    (base, input, output, vec![example])
}

fn call(execute: bool) -> Contract {
    let base = Base {
        title: if execute {
            "Place a call"
        } else {
            "Queue a call"
        },
        description: if execute {
            "Places an outbound voice call with a script; approval-gated."
        } else {
            "Queues an outbound voice call for a person to approve."
        },
        legacy_scope: "v1:calls:write",
        modes: if execute { GATED_MODES } else { QUEUE_MODES },
        mcp: if execute {
            "execute_call"
        } else {
            "queue_call"
        },
    };
    let input = object(
        json!({
            "customer": customer_ref(),
            "script": {"type": "string", "minLength": 1, "maxLength": 8000},
            "objective": {"type": "string", "maxLength": 500}
        }),
        &["customer", "script"],
    );
    let output = outbound_output();
    let example = Example {
        title: "Call about a renewal",
        mode: if execute { "execute" } else { "queue" },
        input: json!({"customer": "cus_3kTMd92jFpQ", "script": "Introduce the renewal offer."}),
        output: None,
    };
    (base, input, output, vec![example])
}

fn crm_mutate() -> Contract {
    let base = Base {
        title: "Change a CRM record",
        description: "Sets or removes properties of a customer in the CRM graph, or creates and \
                      moves one of its opportunities (stage, amount, close won/lost); \
                      approval-gated.",
        legacy_scope: "v1:crm:write",
        modes: GATED_MODES,
        mcp: "mutate_crm",
    };
    let input = object(
        json!({
            "customer": customer_ref(),
            "set": {"type": "object", "maxProperties": 50,
                "propertyNames": {"pattern": "^[A-Za-z][A-Za-z0-9_]{0,63}$"}},
            "unset": {"type": "array", "maxItems": 50, "items": {"type": "string"}},
            "opportunity": {
                "type": "object",
                "description": "An operation on one of the customer's opportunities: create \
                    (opportunityId optional, generated when absent), set_stage (stage), \
                    set_amount (amount, currency units), close_won, close_lost; every \
                    operation but create names an opportunity of this customer.",
                "properties": {
                    "op": {"enum": ["create", "set_stage", "set_amount", "close_won", "close_lost"]},
                    "opportunityId": {"type": "string", "minLength": 1, "maxLength": 200},
                    "name": {"type": "string", "minLength": 1, "maxLength": 200},
                    "amount": {"type": "number", "minimum": 0},
                    "stage": {"type": "string", "minLength": 1, "maxLength": 100}
                },
                "required": ["op"],
                "additionalProperties": false,
                "allOf": [
                    {"if": {"properties": {"op": {"const": "set_stage"}}},
                     "then": {"required": ["opportunityId", "stage"]}},
                    {"if": {"properties": {"op": {"const": "set_amount"}}},
                     "then": {"required": ["opportunityId", "amount"]}},
                    {"if": {"properties": {"op": {"enum": ["close_won", "close_lost"]}}},
                     "then": {"required": ["opportunityId"]}}
                ]
            }
        }),
        &["customer"],
    );
    let output = object(
        json!({"customer_id": {"type": "string"},
            "changed": {"type": "array", "items": {"type": "string"}},
            "opportunity": {"type": "object", "properties": {
                "id": {"type": "string"}, "opportunityId": {"type": "string"},
                "name": {"type": ["string", "null"]}, "amount": {"type": ["number", "null"]},
                "stage": {"type": ["string", "null"]},
                "status": {"enum": ["open", "won", "lost"]},
                "customer_id": {"type": ["string", "null"]}
            }, "required": ["opportunityId", "status"]}}),
        &["customer_id", "changed"],
    );
    let example = Example {
        title: "Mark a customer's tier",
        mode: "queue",
        input: json!({"customer": "cus_3kTMd92jFpQ", "set": {"tier": "gold"}}),
        output: Some(json!({"customer_id": "cus_3kTMd92jFpQ", "changed": ["tier"]})),
    };
    (base, input, output, vec![example])
}

fn cio_write() -> Contract {
    let base = Base {
        title: "Write to Customer.io",
        description:
            "Identifies a customer in Customer.io (creates or updates its attributes; the \
                      email is added when known) or tracks an event on it, through the Track \
                      API of the connected customerio integration; approval-gated.",
        legacy_scope: "v1:campaigns:write",
        modes: GATED_MODES,
        mcp: "write_customerio",
    };
    let input = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "customer": customer_ref(),
            "action": {"enum": ["identify", "track"]},
            "attributes": {"type": "object", "maxProperties": 100},
            "event": {"type": "string", "minLength": 1, "maxLength": 100},
            "data": {"type": "object", "maxProperties": 100}
        },
        "required": ["customer", "action"],
        "additionalProperties": false,
        "if": {"properties": {"action": {"const": "track"}}},
        "then": {"required": ["event"]},
    });
    let examples = vec![
        Example {
            title: "Identify a customer with a plan attribute",
            mode: "queue",
            input: json!({"customer": "ada@example.com", "action": "identify",
                "attributes": {"plan": "growth"}}),
            output: None,
        },
        Example {
            title: "Track a renewal reminder event",
            mode: "execute",
            input: json!({"customer": "cus_3kTMd92jFpQ", "action": "track", "event": "renewal_reminder",
                "data": {"days_left": 14}}),
            output: None,
        },
    ];
    (base, input, outbound_output(), examples)
}

/// The result of an outbound capability: its outbound record.
fn outbound_output() -> Value {
    object(
        json!({
            "outbound_id": {"type": "string", "pattern": "^out_"},
            "state": {"enum": ["queued", "sending", "sent", "failed", "unknown", "cancelled"]},
            "customer_id": {"type": "string"},
            "kind": {"enum": ["email", "call", "cio"]},
            "provider_id": {"type": ["string", "null"]},
            "payload": {"type": "object"},
            "outcome": {"type": ["object", "null"]},
            "error": {"type": ["string", "null"]}
        }),
        &["outbound_id", "state", "customer_id", "kind"],
    )
}

fn report_generate() -> Contract {
    let base = Base {
        title: "Generate a report",
        description: "Builds and stores an activity report of the workspace over a window: \
                      touchpoints by action and channel, active and new customers.",
        legacy_scope: "v1:reports:write",
        modes: READ_MODES,
        mcp: "generate_report",
    };
    let input = object(
        json!({
            "kind": {"enum": ["activity"], "default": "activity"},
            "window_days": {"type": "integer", "minimum": 1, "maximum": 90, "default": 7}
        }),
        &[],
    );
    let counts = json!({"type": "object", "additionalProperties": {"type": "integer"}});
    let output = object(
        json!({
            "report_id": {"type": ["string", "null"]},
            "kind": {"const": "activity"},
            "window_days": {"type": "integer"},
            "from": {"type": "string"},
            "to": {"type": "string"},
            "touchpoints": {"type": "integer", "minimum": 0},
            "active_customers": {"type": "integer", "minimum": 0},
            "customers_total": {"type": "integer", "minimum": 0},
            "by_action": counts.clone(),
            "by_channel": counts,
            "truncated": {"type": "boolean"}
        }),
        &[
            "report_id",
            "kind",
            "window_days",
            "from",
            "to",
            "touchpoints",
            "active_customers",
            "customers_total",
            "by_action",
            "by_channel",
        ],
    );
    let example = Example {
        title: "Last week's activity",
        mode: "execute",
        input: json!({"kind": "activity", "window_days": 7}),
        output: Some(
            json!({"report_id": "rpt_0000000001", "kind": "activity", "window_days": 7,
            "from": "2026-11-13T10:15:00.000Z", "to": TS, "touchpoints": 40,
            "active_customers": 9, "customers_total": 12,
            "by_action": {"pricing_viewed": 30, "demo_requested": 10},
            "by_channel": {"web": 40}, "truncated": false}),
        ),
    };
    (base, input, output, vec![example])
}
