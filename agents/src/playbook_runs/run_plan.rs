//! What a run does next and how the judge's pivots change it: the run's statuses, its plan
//! (lead source, delivery, the current variant / channel / cadence, the cursor and the
//! counters) and the steering rule that turns a pivot into one concrete change. Pure: no store,
//! no HTTP.

use serde::{Deserialize, Serialize};

/// Run statuses (SPEC.md gives `running` as the initial one; the others are this service's).
pub mod status {
    /// The executor works through the leads (or, when following a segment, waits for more).
    pub const RUNNING: &str = "running";
    /// Stopped by a person (`POST .../pause`); `resume` continues where it stopped.
    pub const PAUSED: &str = "paused";
    /// Stopped for good by a person (`POST .../cancel`); final.
    pub const CANCELLED: &str = "cancelled";
    /// Every lead was worked (and no segment is followed); final.
    pub const COMPLETED: &str = "completed";
    /// The workspace's monthly action credits cannot pay for the next lead's step; nothing
    /// past the limit was charged. `resume` (after credits were added) continues with that lead.
    pub const BLOCKED_CREDITS: &str = "blocked_credits";
    /// The run cannot go on until something outside it changes (the outbound integration is
    /// not connected, the workspace is read-only, policy forbids the capability); `error` says
    /// what. `resume` tries again.
    pub const FAILED: &str = "failed";

    pub const ALL: [&str; 6] = [
        RUNNING,
        PAUSED,
        CANCELLED,
        COMPLETED,
        BLOCKED_CREDITS,
        FAILED,
    ];

    /// Whether `resume` may move the run back to `running`.
    pub fn resumable(s: &str) -> bool {
        [PAUSED, BLOCKED_CREDITS, FAILED].contains(&s)
    }

    pub fn is_final(s: &str) -> bool {
        [CANCELLED, COMPLETED].contains(&s)
    }
}

/// Tones a pivot rotates through (the `tone` of `draft.outreach`); `brand` is no override.
pub const VARIANTS: [&str; 6] = [
    "brand",
    "direct",
    "warm",
    "casual",
    "formal",
    "enthusiastic",
];
pub const CHANNEL_EMAIL: &str = "email";
pub const CHANNEL_CALL: &str = "call";
/// A cadence pivot at least doubles the delay between leads, starting from one minute...
pub const CADENCE_PIVOT_FLOOR_MS: u64 = 60_000;
/// ... and never beyond one day.
pub const CADENCE_MAX_MS: u64 = 24 * 60 * 60 * 1000;

/// How a lead's message goes out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    /// `queue.outreach` / `queue.call`: a person approves each message (the default).
    Queue,
    /// `execute.outreach` / `execute.call`: sent at once when the workspace's `auto_approve`
    /// policy lists the capability, otherwise queued for approval by the gateway.
    Execute,
}

/// A run-level stop reason (`failed`, `blocked_credits`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunError {
    pub code: String,
    pub message: String,
}

/// Lead counters of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LeadCounts {
    /// Leads taken from the source (at most `sampleSize`).
    pub taken: u32,
    /// Outreach waiting for approval.
    pub queued: u32,
    /// Outreach the provider took (execute delivery, auto-approved).
    pub sent: u32,
    /// Leads not contacted: suppressed, frequency-capped, unknown customer (reason on the lead).
    pub skipped: u32,
    /// Leads whose outreach failed (reason on the lead).
    pub failed: u32,
}

/// The executor's state of a run: set at start, advanced lead by lead, changed by pivots.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunPlan {
    /// `manual`, `csv` or `crm-segment`.
    pub source: String,
    /// The segment id or Cypher query of a `crm-segment` source.
    pub query: Option<String>,
    /// At most this many leads are taken.
    pub sample_size: u32,
    /// Whether a `crm-segment` run keeps taking customers who join the segment later (until
    /// `sampleSize`), instead of completing once the current members are worked.
    pub follow: bool,
    pub delivery: Delivery,
    /// The `intent` of each draft (`draft.outreach`).
    pub intent: String,
    /// Current tone variant of the drafts (`brand`: the brand voice as it is).
    pub variant: String,
    /// Current channel: `email` or `call` (a call needs the voice integration).
    pub channel: String,
    /// Current delay between two leads, in milliseconds.
    pub cadence_ms: u64,
    /// The buddy whose internal principal acts (`campaign`: `int_campaign`).
    pub buddy: String,
    /// Who judges this run's outcomes: `builtin-statistical` or a model name.
    pub judge: String,
    /// Why that judge (e.g. a requested `judgeModel` that no connected model can serve).
    pub judge_note: Option<String>,
    /// Sequence number of the next lead to work.
    pub next_lead: u32,
    pub counts: LeadCounts,
    /// Credits the run's invocations charged (drafts and outreach).
    pub credits_charged: u64,
    /// Why the run stopped, for `failed` and `blocked_credits`.
    pub error: Option<RunError>,
    pub updated_at: String,
    pub finished_at: Option<String>,
}

/// What one pivot changed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PivotChange {
    /// `variant`, `channel` or `cadence`.
    pub field: String,
    pub from: String,
    pub to: String,
}

/// Turns the run's `n`-th pivot (0-based) into a change of the plan, and applies it. The
/// changes take turns: variant, then channel, then cadence, again and again; the channel turn
/// is used only when it can change something (email -> call needs the voice integration,
/// call -> email always can), otherwise the next turn is taken.
pub fn steer(plan: &mut RunPlan, n: usize, voice_connected: bool) -> PivotChange {
    let turns = ["variant", "channel", "cadence"];
    for i in 0..turns.len() {
        let change = match turns[(n + i) % turns.len()] {
            "variant" => {
                let at = VARIANTS.iter().position(|v| *v == plan.variant);
                let next = VARIANTS[at.map_or(1, |p| (p + 1) % VARIANTS.len())];
                swap(&mut plan.variant, "variant", next)
            }
            "channel" if plan.channel == CHANNEL_CALL => {
                swap(&mut plan.channel, "channel", CHANNEL_EMAIL)
            }
            "channel" if voice_connected => swap(&mut plan.channel, "channel", CHANNEL_CALL),
            "channel" => continue,
            _ => {
                let from = plan.cadence_ms;
                plan.cadence_ms = from
                    .saturating_mul(2)
                    .clamp(CADENCE_PIVOT_FLOOR_MS, CADENCE_MAX_MS);
                PivotChange {
                    field: "cadence".into(),
                    from: format!("{from}ms"),
                    to: format!("{}ms", plan.cadence_ms),
                }
            }
        };
        return change;
    }
    unreachable!("the variant turn always applies")
}

fn swap(slot: &mut String, field: &str, to: &str) -> PivotChange {
    let from = std::mem::replace(slot, to.to_owned());
    PivotChange {
        field: field.into(),
        from,
        to: to.to_owned(),
    }
}

/// The `tone` of a draft for a variant (`brand`: none).
pub fn tone(variant: &str) -> Option<&str> {
    (variant != "brand").then_some(variant)
}

/// A manual, queued email plan judged by `judge`, for the tests of the run modules.
#[cfg(test)]
pub(crate) fn sample_plan(judge: &str) -> RunPlan {
    RunPlan {
        source: "manual".into(),
        query: None,
        sample_size: 10,
        follow: false,
        delivery: Delivery::Queue,
        intent: "follow-up".into(),
        variant: "brand".into(),
        channel: CHANNEL_EMAIL.into(),
        cadence_ms: 0,
        buddy: "campaign".into(),
        judge: judge.into(),
        judge_note: None,
        next_lead: 0,
        counts: LeadCounts::default(),
        credits_charged: 0,
        error: None,
        updated_at: String::new(),
        finished_at: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> RunPlan {
        sample_plan("builtin-statistical")
    }

    #[test]
    fn pivots_take_turns_and_skip_an_impossible_channel() {
        let mut p = plan();
        let c = steer(&mut p, 0, false);
        assert_eq!(
            (c.field.as_str(), c.from.as_str(), c.to.as_str()),
            ("variant", "brand", "direct")
        );
        // No voice: the channel turn passes to cadence.
        let c = steer(&mut p, 1, false);
        assert_eq!(c.field, "cadence");
        assert_eq!(p.cadence_ms, CADENCE_PIVOT_FLOOR_MS);
        let c = steer(&mut p, 2, false);
        assert_eq!(c.field, "cadence");
        assert_eq!(p.cadence_ms, 2 * CADENCE_PIVOT_FLOOR_MS);
        let c = steer(&mut p, 4, true);
        assert_eq!((c.field.as_str(), c.to.as_str()), ("channel", "call"));
        let c = steer(&mut p, 4, false);
        assert_eq!(
            (c.field.as_str(), c.to.as_str()),
            ("channel", "email"),
            "back to email needs nothing"
        );
        assert_eq!(tone("brand"), None);
        assert_eq!(tone("warm"), Some("warm"));
    }

    #[test]
    fn variants_wrap_and_cadence_is_capped() {
        let mut p = plan();
        p.variant = "enthusiastic".into();
        assert_eq!(steer(&mut p, 0, false).to, "brand");
        p.cadence_ms = CADENCE_MAX_MS;
        steer(&mut p, 2, false);
        assert_eq!(p.cadence_ms, CADENCE_MAX_MS);
        assert!(
            status::resumable(status::BLOCKED_CREDITS) && !status::resumable(status::CANCELLED)
        );
    }
}
