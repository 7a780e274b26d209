//! Playbook specs (SPEC.md "PlaybookSpec", "Playbooks"): create with defaults and bounds, read,
//! partial update with shallow merges, delete. No HTTP types. Runs, their execution and
//! adaptation are the agents' (`playbook_runs`); drafting reads the active specs.
//!
//! Records: `playbook` keyed by a time-ordered `pb_` id (a scan lists them in creation order).

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value as Json};

use svc_core::error::{Error, Result};
use svc_core::fields::{self, Given};
use svc_core::plumbing::{clock, ids};
use svc_core::store::{Record, RecordScan, Store, WorkspaceId};
use svc_core::wire_enum;
use svc_core::workspaces::ensure_writable;

wire_enum!(
    /// Lifecycle of a spec; any valid value may be set by update (SPEC.md "States").
    Status as "PlaybookStatus" { Draft = "draft", Active = "active", Paused = "paused", Archived = "archived" }
);
wire_enum!(Mode as "PlaybookMode" { Inbound = "inbound", Outbound = "outbound", Hybrid = "hybrid" });
wire_enum!(
    /// The four specialist agents (buddies). The orchestrator is deliberately not one of them:
    /// it is never a playbook's target.
    Buddy { Insights = "insights", Prospect = "prospect", Campaign = "campaign", Pipeline = "pipeline" }
);
wire_enum!(LeadSourceKind {
    OrangeSlice = "orange-slice",
    CrmSegment = "crm-segment",
    CioSegment = "cio-segment",
    Manual = "manual",
});
wire_enum!(StrategyKind { PmfResearch = "pmf-research", GtmExecution = "gtm-execution", Hybrid = "hybrid" });
wire_enum!(SuccessMetric {
    ReplyRate = "reply_rate",
    MeetingBooked = "meeting_booked",
    PipelineArr = "pipeline_arr",
    Custom = "custom",
});

/// Bounds of SPEC.md's PlaybookSpec table (and of `judgeModel`, which SPEC.md leaves open).
pub mod bounds {
    pub const NAME_CHARS: usize = 200;
    pub const QUERY_CHARS: usize = 1000;
    pub const SAMPLE_SIZE: (u32, u32) = (1, 5000);
    pub const HYPOTHESIS_CHARS: usize = 2000;
    pub const CHANNELS: usize = 12;
    pub const CHANNEL_CHARS: usize = 60;
    pub const CADENCE_CHARS: usize = 500;
    pub const MIN_SAMPLE_SIZE: (u32, u32) = (1, 10_000);
    pub const PIVOT_WINDOW_DAYS: (u32, u32) = (1, 90);
    pub const MAX_PIVOTS_PER_WEEK: (u32, u32) = (0, 20);
    pub const JUDGE_MODEL_CHARS: usize = 200;
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LeadSource {
    /// Default `manual`.
    pub kind: LeadSourceKind,
    /// At most 1000 characters.
    pub query: Option<String>,
    /// 1 to 5000; default 50.
    pub sample_size: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Strategy {
    /// Default `gtm-execution`.
    pub kind: StrategyKind,
    /// Required; at most 2000 characters.
    pub hypothesis: String,
    /// At most 12 free-form tags of at most 60 characters.
    pub channels: Vec<String>,
    /// At most 500 characters.
    pub cadence: Option<String>,
    pub success_metric: Option<SuccessMetric>,
    /// At least 0, in the unit of `successMetric` (rates as fractions from 0 to 1).
    pub success_target: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Adaptation {
    /// Default true.
    pub enabled: bool,
    /// 1 to 10000; default 50.
    pub min_sample_size: u32,
    /// 1 to 90; default 3.
    pub pivot_window_days: u32,
    /// 0 to 20; default 2.
    pub max_pivots_per_week: u32,
    /// Overrides the default judge model for this spec's pivots (at most 200 characters).
    pub judge_model: Option<String>,
}

impl Default for Adaptation {
    fn default() -> Self {
        Adaptation {
            enabled: true,
            min_sample_size: 50,
            pivot_window_days: 3,
            max_pivots_per_week: 2,
            judge_model: None,
        }
    }
}

/// A playbook spec as stored and served.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Playbook {
    /// `pb_...`, time-ordered.
    pub id: String,
    pub name: String,
    pub status: Status,
    pub mode: Mode,
    pub buddy_id: Buddy,
    pub lead_source: LeadSource,
    pub strategy: Strategy,
    pub adaptation: Adaptation,
    pub created_at: String,
    pub updated_at: String,
    /// The user (`usr_...`) or agent key (`key_...`) that created it.
    pub created_by: String,
}

impl Record for Playbook {
    const KIND: &'static str = "playbook";
    fn id(&self) -> String {
        self.id.clone()
    }
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct PlaybookList {
    /// Oldest first.
    pub playbooks: Vec<Playbook>,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct PlaybookEnvelope {
    pub playbook: Playbook,
}

/// `<prefix>_` + 11 base62 digits of the microsecond clock + 9 random: unique, and ids sort in
/// creation order.
pub fn time_ordered_id(prefix: &str) -> String {
    let micros = (clock::now().unix_timestamp_nanos() / 1000).max(0) as u64;
    format!(
        "{prefix}_{}{}",
        ids::base62_fixed(micros, 11),
        ids::random_base62(9)
    )
}

fn missing(field: &str, why: &str) -> Error {
    Error::invalid_input(format!("{field}: {why}")).with_details(json!({ "field": field }))
}

/// A required text field: present, a string, not blank, within its bound.
fn required_text(obj: &Map<String, Json>, path: &str, key: &str, max: usize) -> Result<String> {
    match fields::text(obj, path, key, max)? {
        Given::Value(s) if !fields::trim_blank(&s).is_empty() => Ok(s),
        _ => Err(missing(path, "required (a non-empty string)")),
    }
}

/// A new spec from a create body: required fields checked, defaults applied, then the body's
/// optional fields applied exactly as an update would.
pub fn build(body: &Json, id: String, actor: String, now: &str) -> Result<Playbook> {
    let obj = body
        .as_object()
        .ok_or_else(|| Error::invalid_input("the body must be a JSON object"))?;
    let name = required_text(obj, "name", "name", bounds::NAME_CHARS)?;
    let mode = fields::choice(obj, "mode", Mode::parse)
        .ok_or_else(|| missing("mode", &format!("required, one of {}", Mode::choices())))?;
    let buddy_id = fields::choice(obj, "buddyId", Buddy::parse).ok_or_else(|| {
        missing(
            "buddyId",
            &format!(
                "required, one of {} (specialists only; the orchestrator is never a target)",
                Buddy::choices()
            ),
        )
    })?;
    let strategy = fields::object(obj, "strategy", "strategy")?;
    let hypothesis = strategy
        .map(|s| {
            required_text(
                s,
                "strategy.hypothesis",
                "hypothesis",
                bounds::HYPOTHESIS_CHARS,
            )
        })
        .unwrap_or_else(|| {
            Err(missing(
                "strategy.hypothesis",
                "required (a non-empty string)",
            ))
        })?;
    let mut pb = Playbook {
        id,
        name,
        status: Status::Draft,
        mode,
        buddy_id,
        lead_source: LeadSource {
            kind: LeadSourceKind::Manual,
            query: None,
            sample_size: 50,
        },
        strategy: Strategy {
            kind: StrategyKind::GtmExecution,
            hypothesis,
            channels: Vec::new(),
            cadence: None,
            success_metric: None,
            success_target: None,
        },
        adaptation: Adaptation::default(),
        created_at: now.to_owned(),
        updated_at: now.to_owned(),
        created_by: actor,
    };
    merge(&mut pb, obj)?;
    Ok(pb)
}

/// Applies a partial spec: nested `leadSource`, `strategy` and `adaptation` merge field by
/// field; unknown fields are dropped; invalid enum values leave the field as it is; bounds and
/// types are checked (400 naming the field). Nothing is changed when any field is refused.
pub fn merge(pb: &mut Playbook, obj: &Map<String, Json>) -> Result<()> {
    let mut next = pb.clone();
    if let Given::Value(name) = fields::text(obj, "name", "name", bounds::NAME_CHARS)? {
        if fields::trim_blank(&name).is_empty() {
            return Err(missing("name", "must not be blank"));
        }
        next.name = name;
    }
    if let Some(v) = fields::choice(obj, "status", Status::parse) {
        next.status = v;
    }
    if let Some(v) = fields::choice(obj, "mode", Mode::parse) {
        next.mode = v;
    }
    if let Some(v) = fields::choice(obj, "buddyId", Buddy::parse) {
        next.buddy_id = v;
    }
    if let Some(ls) = fields::object(obj, "leadSource", "leadSource")? {
        let l = &mut next.lead_source;
        if let Some(v) = fields::choice(ls, "kind", LeadSourceKind::parse) {
            l.kind = v;
        }
        fields::text(ls, "leadSource.query", "query", bounds::QUERY_CHARS)?
            .apply_optional(&mut l.query);
        let (lo, hi) = bounds::SAMPLE_SIZE;
        fields::integer(ls, "leadSource.sampleSize", "sampleSize", lo, hi)?
            .apply(&mut l.sample_size);
    }
    if let Some(st) = fields::object(obj, "strategy", "strategy")? {
        let s = &mut next.strategy;
        if let Some(v) = fields::choice(st, "kind", StrategyKind::parse) {
            s.kind = v;
        }
        if let Given::Value(h) = fields::text(
            st,
            "strategy.hypothesis",
            "hypothesis",
            bounds::HYPOTHESIS_CHARS,
        )? {
            if h.trim().is_empty() {
                return Err(missing("strategy.hypothesis", "must not be blank"));
            }
            s.hypothesis = h;
        }
        fields::string_list(
            st,
            "strategy.channels",
            "channels",
            bounds::CHANNELS,
            bounds::CHANNEL_CHARS,
        )?
        .apply(&mut s.channels);
        fields::text(st, "strategy.cadence", "cadence", bounds::CADENCE_CHARS)?
            .apply_optional(&mut s.cadence);
        match st.get("successMetric") {
            Some(Json::Null) => s.success_metric = None,
            Some(Json::String(m)) => {
                if let Some(v) = SuccessMetric::parse(m) {
                    s.success_metric = Some(v);
                }
            }
            _ => {}
        }
        fields::number_at_least(st, "strategy.successTarget", "successTarget", 0.0)?
            .apply_optional(&mut s.success_target);
    }
    if let Some(ad) = fields::object(obj, "adaptation", "adaptation")? {
        let a = &mut next.adaptation;
        fields::boolean(ad, "adaptation.enabled", "enabled")?.apply(&mut a.enabled);
        let (lo, hi) = bounds::MIN_SAMPLE_SIZE;
        fields::integer(ad, "adaptation.minSampleSize", "minSampleSize", lo, hi)?
            .apply(&mut a.min_sample_size);
        let (lo, hi) = bounds::PIVOT_WINDOW_DAYS;
        fields::integer(ad, "adaptation.pivotWindowDays", "pivotWindowDays", lo, hi)?
            .apply(&mut a.pivot_window_days);
        let (lo, hi) = bounds::MAX_PIVOTS_PER_WEEK;
        fields::integer(
            ad,
            "adaptation.maxPivotsPerWeek",
            "maxPivotsPerWeek",
            lo,
            hi,
        )?
        .apply(&mut a.max_pivots_per_week);
        fields::text(
            ad,
            "adaptation.judgeModel",
            "judgeModel",
            bounds::JUDGE_MODEL_CHARS,
        )?
        .apply_optional(&mut a.judge_model);
    }
    *pb = next;
    Ok(())
}

/// Every spec of the workspace, oldest first.
pub async fn list(store: &Store, ws: WorkspaceId) -> Result<PlaybookList> {
    let playbooks = store.scan::<Playbook>(ws, RecordScan::default()).await?;
    Ok(PlaybookList { playbooks })
}

/// The workspace's active specs (for the agents' playbook block).
pub async fn active(store: &Store, ws: WorkspaceId) -> Result<Vec<Playbook>> {
    Ok(list(store, ws)
        .await?
        .playbooks
        .into_iter()
        .filter(|p| p.status == Status::Active)
        .collect())
}

pub async fn get(store: &Store, ws: WorkspaceId, id: &str) -> Result<Playbook> {
    store
        .get::<Playbook>(ws, id)
        .await?
        .ok_or_else(|| Error::not_found("playbook"))
}

pub async fn create(store: &Store, ws: WorkspaceId, actor: String, body: Json) -> Result<Playbook> {
    let pb = build(&body, time_ordered_id("pb"), actor, &clock::now_rfc3339())?;
    store
        .write(move |tx| {
            ensure_writable(tx, ws)?;
            tx.put(ws, &pb)?;
            Ok(pb)
        })
        .await
}

pub async fn update(store: &Store, ws: WorkspaceId, id: String, body: Json) -> Result<Playbook> {
    let obj = match body {
        Json::Object(m) => m,
        _ => return Err(Error::invalid_input("the body must be a JSON object")),
    };
    store
        .write(move |tx| {
            ensure_writable(tx, ws)?;
            let mut pb = tx
                .get::<Playbook>(ws, &id)?
                .ok_or_else(|| Error::not_found("playbook"))?;
            merge(&mut pb, &obj)?;
            pb.updated_at = clock::now_rfc3339();
            tx.put(ws, &pb)?;
            Ok(pb)
        })
        .await
}

/// Deletes the spec. Its runs stay stored (readable by id) but are no longer listed.
pub async fn delete(store: &Store, ws: WorkspaceId, id: String) -> Result<()> {
    store
        .write(move |tx| {
            ensure_writable(tx, ws)?;
            if tx.get::<Playbook>(ws, &id)?.is_none() {
                return Err(Error::not_found("playbook"));
            }
            tx.delete::<Playbook>(ws, &id)
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create_body() -> Json {
        json!({"name": "Q3 outbound", "mode": "outbound", "buddyId": "prospect",
               "strategy": {"hypothesis": "CFOs reply to cost angles"}})
    }

    fn built(body: Json) -> Result<Playbook> {
        build(
            &body,
            "pb_1".into(),
            "usr_1".into(),
            "2026-01-01T00:00:00.000Z",
        )
    }

    #[test]
    fn create_applies_spec_defaults() {
        let pb = built(create_body()).expect("valid");
        assert_eq!(pb.status, Status::Draft);
        assert_eq!(pb.lead_source.kind, LeadSourceKind::Manual);
        assert_eq!(pb.lead_source.sample_size, 50);
        assert_eq!(pb.strategy.kind, StrategyKind::GtmExecution);
        assert_eq!(pb.adaptation, Adaptation::default());
        assert_eq!(
            (pb.adaptation.enabled, pb.adaptation.min_sample_size),
            (true, 50)
        );
        assert_eq!(
            (
                pb.adaptation.pivot_window_days,
                pb.adaptation.max_pivots_per_week
            ),
            (3, 2)
        );
    }

    #[test]
    fn create_names_each_missing_required_field() {
        for (field, remove) in [
            ("name", "/name"),
            ("mode", "/mode"),
            ("buddyId", "/buddyId"),
            ("strategy.hypothesis", "/strategy"),
        ] {
            let mut body = create_body();
            let (parent, key) = remove.rsplit_once('/').expect("path");
            body.pointer_mut(if parent.is_empty() { "" } else { parent })
                .and_then(Json::as_object_mut)
                .expect("object")
                .remove(key);
            let e = built(body).expect_err(field);
            assert_eq!(e.details.as_ref().expect("details")["field"], field);
        }
        let mut body = create_body();
        body["buddyId"] = json!("orchestrator");
        let e = built(body).expect_err("orchestrator");
        assert!(e.message.contains("orchestrator"), "{}", e.message);
    }

    #[test]
    fn invalid_enums_keep_values_and_bad_bounds_change_nothing() {
        let mut pb = built(create_body()).expect("valid");
        let before = pb.clone();
        let patch = json!({"status": "bogus", "mode": "sideways", "buddyId": "orchestrator",
                           "leadSource": {"kind": "nope"}, "unknown": 1});
        merge(&mut pb, patch.as_object().expect("obj")).expect("ignored");
        assert_eq!(pb, before);
        let patch = json!({"name": "renamed", "adaptation": {"maxPivotsPerWeek": 21}});
        let e = merge(&mut pb, patch.as_object().expect("obj")).expect_err("bound");
        assert!(
            e.message.contains("adaptation.maxPivotsPerWeek"),
            "{}",
            e.message
        );
        assert_eq!(pb, before, "a refused update changes nothing");
    }

    #[test]
    fn nested_objects_merge_shallowly() {
        let mut pb = built(json!({"name": "n", "mode": "hybrid", "buddyId": "campaign",
            "strategy": {"hypothesis": "h", "cadence": "weekly", "channels": ["email"]},
            "leadSource": {"kind": "crm-segment", "query": "vip"}}))
        .expect("valid");
        let patch = json!({"strategy": {"cadence": null, "successMetric": "reply_rate"},
                           "leadSource": {"sampleSize": 10}});
        merge(&mut pb, patch.as_object().expect("obj")).expect("merge");
        assert_eq!(pb.strategy.hypothesis, "h");
        assert_eq!(pb.strategy.channels, vec!["email".to_owned()]);
        assert_eq!(pb.strategy.cadence, None);
        assert_eq!(pb.strategy.success_metric, Some(SuccessMetric::ReplyRate));
        assert_eq!(pb.lead_source.kind, LeadSourceKind::CrmSegment);
        assert_eq!(pb.lead_source.query.as_deref(), Some("vip"));
        assert_eq!(pb.lead_source.sample_size, 10);
    }

    #[test]
    fn time_ordered_ids_sort_by_creation() {
        let a = time_ordered_id("pb");
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = time_ordered_id("pb");
        assert!(a < b, "{a} {b}");
        assert_eq!(a.len(), "pb_".len() + 20);
    }
}
