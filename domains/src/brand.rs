//! The per-workspace brand and voice profile (SPEC.md "BrandContext", "Brand context"), stored
//! sealed (DESIGN.md §4: `sealed`, record kind `brand_context` bound as associated data), and
//! the brand block it contributes to every buddy's system prompt (SPEC.md "What the service
//! does" 8; see `buddies`). No HTTP types.
//!
//! Update rules: top-level fields replace, `voice` and `links` merge key by key, unknown fields
//! are dropped, over-long strings and wrongly typed values are 400 naming the field, an invalid
//! `industry` is ignored (the old value stays), voice values are rounded and clamped to 1-5 with
//! 3 for any missing one, a link that is not an `http://` / `https://` URL of at most 300
//! characters is dropped (the old link stays), `null` clears a field, `industryOther` is kept
//! only while `industry` is `other`, and every update is `manual` unless it says `auto-detect`,
//! which also stamps `enrichedAt`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};
use svc_core::store::WorkspaceTxn;

use svc_core::error::{Error, Result};
use svc_core::fields;
use svc_core::plumbing::clock;
use svc_core::plumbing::reseal::{reseal_all, SealedRecord};
use svc_core::plumbing::sealed::{Sealed, Sealer};
use svc_core::store::{Record, Store, WorkspaceId};
use svc_core::wire_enum;
use svc_core::workspaces::ensure_writable;

/// Record kind, also bound into the sealed value's associated data.
pub const KIND: &str = "brand_context";
const RECORD_ID: &str = "brand";

pub const BUSINESS_NAME_CHARS: usize = 200;
pub const WEBSITE_CHARS: usize = 300;
pub const INDUSTRY_OTHER_CHARS: usize = 120;
pub const DESCRIPTION_CHARS: usize = 2000;
pub const AUDIENCE_CHARS: usize = 1000;
pub const LINK_CHARS: usize = 300;
pub const VOICE_DEFAULT: u8 = 3;

wire_enum!(Industry {
    Saas = "saas",
    Ecommerce = "ecommerce",
    Fintech = "fintech",
    Healthcare = "healthcare",
    Education = "education",
    Media = "media",
    Marketplace = "marketplace",
    Agency = "agency",
    Devtools = "devtools",
    Consumer = "consumer",
    Hardware = "hardware",
    Nonprofit = "nonprofit",
    Other = "other",
});
wire_enum!(EnrichedSource { Manual = "manual", AutoDetect = "auto-detect" });

/// Voice dials, each 1 to 5.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Voice {
    pub formality: u8,
    pub humor: u8,
    pub respect: u8,
    pub energy: u8,
}

impl Default for Voice {
    fn default() -> Self {
        Voice {
            formality: VOICE_DEFAULT,
            humor: VOICE_DEFAULT,
            respect: VOICE_DEFAULT,
            energy: VOICE_DEFAULT,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Links {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub privacy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terms: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pricing: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub download: Option<String>,
}

/// The profile. Every field is optional: `{}` is a workspace that never configured one.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BrandContext {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub business_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub industry: Option<Industry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub industry_other: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voice: Option<Voice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub links: Option<Links>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enriched_source: Option<EnrichedSource>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enriched_at: Option<String>,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct BrandEnvelope {
    pub context: BrandContext,
}

/// What is stored: the profile sealed, and when it changed (not secret).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BrandRecord {
    sealed: Sealed,
    updated_at: String,
}

impl Record for BrandRecord {
    const KIND: &'static str = KIND;
    fn id(&self) -> String {
        RECORD_ID.to_owned()
    }
}

/// A voice dial: numbers are rounded and clamped to 1-5; anything else reads as missing.
fn dial(v: Option<&Json>) -> Option<u8> {
    let f = v?.as_f64()?;
    Some(f.round().clamp(1.0, 5.0) as u8)
}

/// A link kept only when it is an http(s) URL of at most 300 characters.
fn link(v: &Json) -> Option<String> {
    let s = v.as_str()?.trim();
    let lower = s.to_ascii_lowercase();
    let scheme_ok = ["http://", "https://"]
        .iter()
        .any(|p| lower.starts_with(p) && lower.len() > p.len());
    (scheme_ok && s.chars().count() <= LINK_CHARS).then(|| s.to_owned())
}

/// Merges an update body into `ctx` by the rules in the module documentation.
pub fn merge(ctx: &mut BrandContext, body: &Json, now: &str) -> Result<()> {
    let obj = body
        .as_object()
        .ok_or_else(|| Error::invalid_input("the body must be a JSON object"))?;
    let mut next = ctx.clone();
    let texts: [(&str, usize, &mut Option<String>); 5] = [
        ("businessName", BUSINESS_NAME_CHARS, &mut next.business_name),
        ("website", WEBSITE_CHARS, &mut next.website),
        (
            "industryOther",
            INDUSTRY_OTHER_CHARS,
            &mut next.industry_other,
        ),
        ("description", DESCRIPTION_CHARS, &mut next.description),
        ("audience", AUDIENCE_CHARS, &mut next.audience),
    ];
    for (key, max, slot) in texts {
        fields::text(obj, key, key, max)?.apply_optional(slot);
    }
    match obj.get("industry") {
        Some(Json::Null) => next.industry = None,
        Some(v) => {
            if let Some(i) = v.as_str().and_then(Industry::parse) {
                next.industry = Some(i);
            }
        }
        None => {}
    }
    if next.industry != Some(Industry::Other) {
        next.industry_other = None;
    }
    let voice_patch = fields::object(obj, "voice", "voice")?;
    let mut voice = next.voice.take().unwrap_or_default();
    if let Some(p) = voice_patch {
        let dials = [
            ("formality", &mut voice.formality),
            ("humor", &mut voice.humor),
            ("respect", &mut voice.respect),
            ("energy", &mut voice.energy),
        ];
        for (key, slot) in dials {
            if let Some(d) = dial(p.get(key)) {
                *slot = d;
            }
        }
    }
    next.voice = Some(voice);
    if let Some(p) = fields::object(obj, "links", "links")? {
        let links = next.links.get_or_insert_with(Links::default);
        merge_links(links, p);
        if *links == Links::default() {
            next.links = None;
        }
    } else if obj.get("links") == Some(&Json::Null) {
        next.links = None;
    }
    let source = fields::choice(obj, "enrichedSource", EnrichedSource::parse)
        .unwrap_or(EnrichedSource::Manual);
    next.enriched_source = Some(source);
    if source == EnrichedSource::AutoDetect {
        next.enriched_at = Some(now.to_owned());
    }
    *ctx = next;
    Ok(())
}

fn merge_links(links: &mut Links, patch: &Map<String, Json>) {
    let slots = [
        ("privacy", &mut links.privacy),
        ("terms", &mut links.terms),
        ("pricing", &mut links.pricing),
        ("download", &mut links.download),
    ];
    for (key, slot) in slots {
        match patch.get(key) {
            Some(Json::Null) => *slot = None,
            Some(v) => {
                if let Some(url) = link(v) {
                    *slot = Some(url);
                }
            }
            None => {}
        }
    }
}

fn open(sealer: &Sealer, ws: WorkspaceId, record: Option<BrandRecord>) -> Result<BrandContext> {
    match record {
        None => Ok(BrandContext::default()),
        Some(r) => Ok(sealer.open_json(ws, KIND, &r.sealed)?),
    }
}

/// The workspace's profile (`{}` when never configured).
pub async fn get(store: &Store, sealer: &Sealer, ws: WorkspaceId) -> Result<BrandContext> {
    let record = store.get::<BrandRecord>(ws, RECORD_ID).await?;
    open(sealer, ws, record)
}

/// The workspace's profile read inside a write transaction (`{}` when never configured): for
/// executors, which run on the writer thread and cannot await [`get`].
pub fn load_in(w: &WorkspaceTxn<'_, '_>, sealer: &Sealer) -> Result<BrandContext> {
    let record = w.get_record::<BrandRecord>(RECORD_ID)?;
    open(sealer, w.workspace_id(), record)
}

/// Merges `body` into the stored profile and stores the result sealed.
pub async fn put(
    store: &Store,
    sealer: Sealer,
    ws: WorkspaceId,
    body: Json,
) -> Result<BrandContext> {
    store
        .write(move |tx| {
            ensure_writable(tx, ws)?;
            let mut ctx = open(&sealer, ws, tx.get::<BrandRecord>(ws, RECORD_ID)?)?;
            let now = clock::now_rfc3339();
            merge(&mut ctx, &body, &now)?;
            let record = BrandRecord {
                sealed: sealer.seal_json(ws, KIND, &ctx)?,
                updated_at: now,
            };
            tx.put(ws, &record)?;
            Ok(ctx)
        })
        .await
}

/// Forgets the profile (idempotent).
pub async fn delete(store: &Store, ws: WorkspaceId) -> Result<()> {
    store
        .write(move |tx| {
            ensure_writable(tx, ws)?;
            tx.delete::<BrandRecord>(ws, RECORD_ID)
        })
        .await
}

/// The brand block that opens every buddy's system prompt; `None` when there is no profile.
pub fn prompt_block(ctx: &BrandContext) -> Option<String> {
    if *ctx == BrandContext::default() {
        return None;
    }
    let mut lines = vec!["## Brand".to_owned()];
    let mut line = |label: &str, value: Option<&str>| {
        if let Some(v) = value.map(str::trim).filter(|v| !v.is_empty()) {
            lines.push(format!("{label}: {v}"));
        }
    };
    line("Business", ctx.business_name.as_deref());
    line("Website", ctx.website.as_deref());
    let industry = match (ctx.industry, ctx.industry_other.as_deref()) {
        (Some(Industry::Other), Some(other)) => Some(other.to_owned()),
        (Some(i), _) => Some(i.as_str().to_owned()),
        (None, _) => None,
    };
    line("Industry", industry.as_deref());
    line("What the business does", ctx.description.as_deref());
    line("Audience", ctx.audience.as_deref());
    if let Some(v) = &ctx.voice {
        lines.push(format!(
            "Voice (1-5): formality {}, humor {}, respect {}, energy {}",
            v.formality, v.humor, v.respect, v.energy
        ));
    }
    if let Some(l) = &ctx.links {
        let named = [
            ("privacy", &l.privacy),
            ("terms", &l.terms),
            ("pricing", &l.pricing),
            ("download", &l.download),
        ];
        let parts: Vec<String> = named
            .iter()
            .filter_map(|(k, v)| v.as_ref().map(|u| format!("{k} {u}")))
            .collect();
        if !parts.is_empty() {
            lines.push(format!("Links: {}", parts.join(", ")));
        }
    }
    Some(lines.join("\n"))
}

impl SealedRecord for BrandRecord {
    fn seal_context(&self) -> String {
        KIND.to_owned()
    }
    fn sealed_mut(&mut self) -> &mut Sealed {
        &mut self.sealed
    }
}

/// Re-seals the workspace's brand context under the sealer's current key (master-key
/// rotation, `svcd admin`); returns how many values were rewritten.
pub async fn reseal(store: &Store, sealer: &Sealer, ws: WorkspaceId) -> Result<usize> {
    reseal_all::<BrandRecord>(store, sealer, ws).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: &str = "2026-01-01T00:00:00.000Z";

    fn merged(start: BrandContext, body: Json) -> Result<BrandContext> {
        let mut ctx = start;
        merge(&mut ctx, &body, NOW)?;
        Ok(ctx)
    }

    #[test]
    fn voice_is_clamped_rounded_and_defaulted() {
        let ctx = merged(
            BrandContext::default(),
            json!({"voice": {"formality": 9, "humor": -2, "respect": 3.6, "energy": "loud"}}),
        )
        .expect("ok");
        assert_eq!(
            ctx.voice,
            Some(Voice {
                formality: 5,
                humor: 1,
                respect: 4,
                energy: 3
            })
        );
        let again = merged(ctx, json!({"voice": {"energy": 2}})).expect("ok");
        assert_eq!(
            again.voice.as_ref().map(|v| (v.formality, v.energy)),
            Some((5, 2))
        );
    }

    #[test]
    fn links_keep_only_http_urls_within_bound_and_merge() {
        let long = format!("https://x.io/{}", "a".repeat(300));
        let ctx = merged(
            BrandContext::default(),
            json!({"links": {"privacy": "https://acme.io/privacy", "terms": "ftp://acme.io/t",
                              "pricing": long, "download": "javascript:alert(1)"}}),
        )
        .expect("ok");
        let links = ctx.links.clone().expect("links");
        assert_eq!(links.privacy.as_deref(), Some("https://acme.io/privacy"));
        assert_eq!(
            (links.terms, links.pricing, links.download),
            (None, None, None)
        );
        let ctx = merged(
            ctx,
            json!({"links": {"terms": "http://acme.io/terms", "privacy": "nope"}}),
        )
        .expect("ok");
        let links = ctx.links.expect("links");
        assert_eq!(links.privacy.as_deref(), Some("https://acme.io/privacy"));
        assert_eq!(links.terms.as_deref(), Some("http://acme.io/terms"));
    }

    #[test]
    fn strings_are_bounded_enums_ignored_and_industry_other_needs_other() {
        let e = merged(
            BrandContext::default(),
            json!({"description": "d".repeat(2001)}),
        )
        .expect_err("too long");
        assert!(e.message.starts_with("description"), "{}", e.message);
        let ctx = merged(
            BrandContext::default(),
            json!({"industry": "other", "industryOther": "space tourism", "unknown": 1}),
        )
        .expect("ok");
        assert_eq!(ctx.industry_other.as_deref(), Some("space tourism"));
        let ctx = merged(ctx, json!({"industry": "rocketry"})).expect("ok");
        assert_eq!(ctx.industry, Some(Industry::Other), "invalid enum ignored");
        let ctx = merged(ctx, json!({"industry": "saas"})).expect("ok");
        assert_eq!(ctx.industry_other, None);
    }

    #[test]
    fn auto_detect_stamps_enriched_at_and_manual_is_the_default() {
        let ctx = merged(
            BrandContext::default(),
            json!({"enrichedSource": "auto-detect"}),
        )
        .expect("ok");
        assert_eq!(ctx.enriched_source, Some(EnrichedSource::AutoDetect));
        assert_eq!(ctx.enriched_at.as_deref(), Some(NOW));
        let ctx = merged(ctx, json!({"businessName": "Acme"})).expect("ok");
        assert_eq!(ctx.enriched_source, Some(EnrichedSource::Manual));
        assert_eq!(
            ctx.enriched_at.as_deref(),
            Some(NOW),
            "last enrichment time kept"
        );
    }

    #[test]
    fn prompt_block_names_the_profile() {
        assert_eq!(prompt_block(&BrandContext::default()), None);
        let ctx = merged(
            BrandContext::default(),
            json!({"businessName": "Acme Rockets", "industry": "other", "industryOther": "space",
                   "voice": {"humor": 5}, "links": {"pricing": "https://acme.io/pricing"}}),
        )
        .expect("ok");
        let block = prompt_block(&ctx).expect("block");
        assert!(block.contains("Business: Acme Rockets"), "{block}");
        assert!(block.contains("Industry: space"), "{block}");
        assert!(block.contains("humor 5"), "{block}");
        assert!(block.contains("pricing https://acme.io/pricing"), "{block}");
    }

    #[test]
    fn stored_form_is_sealed_to_the_workspace() {
        let sealer = Sealer::new([4u8; 32], &[]);
        let ctx = merged(BrandContext::default(), json!({"businessName": "Acme"})).expect("ok");
        let record = BrandRecord {
            sealed: sealer.seal_json(WorkspaceId(1), KIND, &ctx).expect("seal"),
            updated_at: NOW.into(),
        };
        let text = serde_json::to_string(&record).expect("json");
        assert!(!text.contains("Acme"), "{text}");
        assert_eq!(
            open(&sealer, WorkspaceId(1), Some(record.clone())).expect("open"),
            ctx
        );
        assert!(open(&sealer, WorkspaceId(2), Some(record)).is_err());
    }
}
