//! The workspace's opportunities, searched, filtered, sorted and paged on the server with the
//! number matching in all (issue 28): `GET /v1/opportunities` and the dashboard's list. Without
//! parameters the first page is what the API always answered: highest score first, then the
//! unscored ones by amount, largest first.
//!
//! One pass over the Opportunity label of one snapshot; an opportunity's stage, status and
//! owner are read per opportunity, the owner's email and name only when the search needs them
//! or for the page. Only the page is materialised.

use std::cmp::Ordering;
use std::collections::HashMap;

use serde::Serialize;
use serde_json::{Map, Value as Json};
use svc_engine::{GraphRead, Node, NodeId, Value};

use super::{props_except, str_prop};
use crate::events::value_to_json;
use crate::pipeline::{self, funnel_rank, Status, UPDATED_AT};
use svc_core::error::{Error, Result};
use svc_core::plumbing::ids::PublicIds;
use svc_core::plumbing::paging;
use svc_core::vocabulary::{prop, CUSTOMER, OPPORTUNITY};

/// Largest page.
pub const PAGE_MAX: usize = 500;
/// The page size when none is asked for (the API's historical 50).
pub const PAGE_DEFAULT: usize = 50;
/// Longest search text, in characters.
pub const QUERY_MAX: usize = 200;

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct OpportunityView {
    /// `node_...`
    pub id: String,
    /// The source's id, namespaced (`hubspot:123`, `stripe:sub_...`; the workspace's own ids
    /// as they are).
    #[serde(rename = "opportunityId")]
    pub opportunity_id: Option<String>,
    pub name: Option<String>,
    /// The models' confidence that it closes (0..1), once scored.
    #[schema(value_type = Option<f64>)]
    pub score: Json,
    /// Currency units.
    #[schema(value_type = Option<f64>)]
    pub amount: Json,
    /// Name of the stage it is AT_STAGE.
    pub stage: Option<String>,
    /// `open`, `won` or `lost`.
    pub status: String,
    /// The customer it belongs to (HAS_OPPORTUNITY), `cus_...`.
    pub customer_id: Option<String>,
    /// That customer's email and name, for people reading the list.
    pub customer_email: Option<String>,
    pub customer_name: Option<String>,
    /// When it last changed (RFC 3339; absent for opportunities not changed since this was
    /// recorded).
    #[serde(rename = "updatedAt")]
    pub updated_at: Option<String>,
    #[schema(value_type = Object)]
    pub properties: Map<String, Json>,
}

/// One page of opportunities and how many match in all.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct OpportunityList {
    /// The page, in the order asked for (by default highest score first, then the unscored
    /// ones by amount, largest first).
    pub opportunities: Vec<OpportunityView>,
    /// Opportunities matching the search and filters, in the whole workspace.
    pub total: usize,
    pub offset: usize,
    pub limit: usize,
}

/// The column a page is sorted by.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum OpportunitySort {
    /// The models' confidence (`score`; the default), ties by amount.
    #[default]
    Score,
    Amount,
    /// Stage in funnel order (lead, qualified, discovery, demo, proposal, ...).
    Stage,
    Name,
    /// When it last changed.
    Updated,
}

impl OpportunitySort {
    pub fn parse(s: &str) -> Option<OpportunitySort> {
        Some(match s {
            "score" | "confidence" => OpportunitySort::Score,
            "amount" => OpportunitySort::Amount,
            "stage" => OpportunitySort::Stage,
            "name" => OpportunitySort::Name,
            "updated" | "updated_at" | "updatedAt" => OpportunitySort::Updated,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            OpportunitySort::Score => "score",
            OpportunitySort::Amount => "amount",
            OpportunitySort::Stage => "stage",
            OpportunitySort::Name => "name",
            OpportunitySort::Updated => "updated",
        }
    }

    /// The order a column starts in: names and stages A-Z / first stage first, numbers and
    /// times highest first.
    pub fn natural_ascending(self) -> bool {
        matches!(self, OpportunitySort::Name | OpportunitySort::Stage)
    }
}

/// What to list. `Default` is the API's historical first page.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OpportunityQuery {
    /// Case-insensitive text in the opportunity's name or id, or its customer's email or name.
    pub q: String,
    pub sort: OpportunitySort,
    /// Ascending instead of descending. Opportunities without the sort value come last either
    /// way; ties go by id.
    pub ascending: bool,
    /// Stage name (case-insensitive).
    pub stage: Option<String>,
    pub status: Option<Status>,
    /// Amount range, inclusive; opportunities without an amount are left out when given.
    pub min_amount: Option<f64>,
    pub max_amount: Option<f64>,
    pub offset: usize,
    /// Page size, 1..=[`PAGE_MAX`] (0 means [`PAGE_DEFAULT`]).
    pub limit: usize,
}

impl OpportunityQuery {
    /// The query of URL parameters: `q`, `sort` (see [`OpportunitySort::parse`]), `order`
    /// (`asc`/`desc`), `stage`, `status` (`open`, `won`, `lost`), `min_amount`, `max_amount`,
    /// `offset`, `limit`. Empty text filters count as absent; unknown names are ignored.
    pub fn from_params<'p>(
        params: impl IntoIterator<Item = (&'p str, &'p str)>,
    ) -> Result<OpportunityQuery> {
        let mut q = OpportunityQuery::default();
        for (name, value) in params {
            let value = value.trim();
            // Empty text counts as absent; an empty choice (`status=`) is refused like any
            // value outside the choices.
            if value.is_empty() && matches!(name, "q" | "stage") {
                continue;
            }
            match name {
                "q" => q.q = paging::text(name, value, QUERY_MAX)?,
                "sort" => {
                    q.sort = OpportunitySort::parse(value).ok_or_else(|| {
                        Error::invalid_field(
                            "sort",
                            value,
                            "one of score, amount, stage, name, updated",
                        )
                    })?
                }
                "order" | "dir" => q.ascending = paging::ascending(name, value)?,
                "stage" => q.stage = Some(value.to_owned()),
                "status" => {
                    q.status =
                        Some(Status::parse(value).ok_or_else(|| {
                            Error::invalid_field(name, value, "open, won or lost")
                        })?)
                }
                "min_amount" => q.min_amount = Some(paging::number(name, value)?),
                "max_amount" => q.max_amount = Some(paging::number(name, value)?),
                "offset" => q.offset = paging::offset(name, value)?,
                "limit" => q.limit = paging::limit(name, value, PAGE_MAX)?,
                _ => {}
            }
        }
        q.checked()
    }

    /// The query with its limits checked.
    pub fn checked(mut self) -> Result<OpportunityQuery> {
        self.q = paging::text("q", &self.q, QUERY_MAX)?;
        if self.limit == 0 {
            self.limit = PAGE_DEFAULT;
        }
        if self.limit > PAGE_MAX {
            return Err(Error::invalid_field(
                "limit",
                &self.limit.to_string(),
                &format!("at most {PAGE_MAX}"),
            ));
        }
        if self.offset > paging::OFFSET_MAX {
            return Err(Error::invalid_field(
                "offset",
                &self.offset.to_string(),
                &format!("at most {}", paging::OFFSET_MAX),
            ));
        }
        for (name, v) in [
            ("min_amount", self.min_amount),
            ("max_amount", self.max_amount),
        ] {
            if v.is_some_and(|v| !v.is_finite()) {
                return Err(Error::invalid_field(name, &format!("{v:?}"), "a number"));
            }
        }
        self.stage = self
            .stage
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty());
        Ok(self)
    }
}

/// A sort value; absent ones sort last whatever the direction.
#[derive(Clone, Debug, PartialEq)]
enum Key {
    None,
    Num(f64),
    Text(String),
    Rank((u8, u64, String)),
}

fn cmp_key(a: &Key, b: &Key, ascending: bool) -> Ordering {
    let dir = |o: Ordering| if ascending { o } else { o.reverse() };
    match (a, b) {
        (Key::None, Key::None) => Ordering::Equal,
        (Key::None, _) => Ordering::Greater,
        (_, Key::None) => Ordering::Less,
        (Key::Num(x), Key::Num(y)) => dir(x.total_cmp(y)),
        (Key::Text(x), Key::Text(y)) => dir(x.cmp(y)),
        (Key::Rank(x), Key::Rank(y)) => dir(x.cmp(y)),
        // One column holds one kind of key; anything else keeps its place.
        _ => Ordering::Equal,
    }
}

struct Hit {
    id: NodeId,
    key: Key,
    /// The score sort's tie-break: amount, in the same direction.
    then: Key,
}

fn number(n: &Node, key: &str) -> Option<f64> {
    n.get(key).and_then(Value::as_f64).filter(|v| !v.is_nan())
}

fn num_key(v: Option<f64>) -> Key {
    v.map_or(Key::None, Key::Num)
}

/// An owner's email and name (cached: customers often own several opportunities).
type Owners = HashMap<NodeId, (Option<String>, Option<String>)>;

fn owner_names<R: GraphRead + ?Sized>(
    r: &R,
    owners: &mut Owners,
    id: NodeId,
) -> Result<(Option<String>, Option<String>)> {
    if let Some(o) = owners.get(&id) {
        return Ok(o.clone());
    }
    let names = match r.node(id)?.filter(|n| n.has_label(CUSTOMER)) {
        Some(c) => (str_prop(&c, prop::EMAIL), str_prop(&c, prop::NAME)),
        None => (None, None),
    };
    owners.insert(id, names.clone());
    Ok(names)
}

fn contains_ci(hay: Option<&str>, needle_lower: &str) -> bool {
    hay.is_some_and(|h| h.to_lowercase().contains(needle_lower))
}

/// One page of the opportunities matching `q` (checked), read from one snapshot.
pub fn search_in<R: GraphRead + ?Sized>(
    ids: &PublicIds,
    r: &R,
    q: &OpportunityQuery,
) -> Result<OpportunityList> {
    let needle = (!q.q.is_empty()).then(|| q.q.to_lowercase());
    let stage_want = q.stage.as_ref().map(|s| s.to_lowercase());
    let mut owners: Owners = HashMap::new();
    let mut hits = Vec::new();
    for id in r.label_scan(OPPORTUNITY)? {
        let Some(n) = r.node(id)?.filter(|n| n.has_label(OPPORTUNITY)) else {
            continue;
        };
        let amount = number(&n, prop::AMOUNT);
        if q.min_amount.is_some() || q.max_amount.is_some() {
            let inside = amount.is_some_and(|a| {
                q.min_amount.is_none_or(|m| a >= m) && q.max_amount.is_none_or(|m| a <= m)
            });
            if !inside {
                continue;
            }
        }
        let stage = if stage_want.is_some() || q.sort == OpportunitySort::Stage {
            pipeline::stage_of(r, &n)?
        } else {
            None
        };
        if let Some(want) = &stage_want {
            if stage.as_ref().map(|s| s.trim().to_lowercase()).as_ref() != Some(want) {
                continue;
            }
        }
        if let Some(status) = q.status {
            if pipeline::status_of(r, &n)? != status {
                continue;
            }
        }
        if let Some(needle) = &needle {
            let own = contains_ci(str_prop(&n, prop::NAME).as_deref(), needle)
                || contains_ci(str_prop(&n, prop::OPPORTUNITY_ID).as_deref(), needle);
            let found = own
                || match pipeline::owner(r, id)? {
                    Some(c) => {
                        let (email, name) = owner_names(r, &mut owners, c)?;
                        contains_ci(email.as_deref(), needle)
                            || contains_ci(name.as_deref(), needle)
                    }
                    None => false,
                };
            if !found {
                continue;
            }
        }
        let key = match q.sort {
            OpportunitySort::Score => num_key(number(&n, prop::SCORE)),
            OpportunitySort::Amount => num_key(amount),
            OpportunitySort::Stage => stage
                .as_deref()
                .map_or(Key::None, |s| Key::Rank(funnel_rank(s))),
            OpportunitySort::Name => {
                str_prop(&n, prop::NAME).map_or(Key::None, |s| Key::Text(s.to_lowercase()))
            }
            OpportunitySort::Updated => match n.get(UPDATED_AT) {
                Some(Value::DateTime(t)) => Key::Num(*t as f64),
                _ => Key::None,
            },
        };
        let then = match q.sort {
            OpportunitySort::Score => num_key(amount),
            _ => Key::None,
        };
        hits.push(Hit { id, key, then });
    }
    hits.sort_by(|a, b| {
        cmp_key(&a.key, &b.key, q.ascending)
            .then_with(|| cmp_key(&a.then, &b.then, q.ascending))
            .then(a.id.cmp(&b.id))
    });
    let total = hits.len();
    let page = paging::window(hits, q.offset, q.limit);
    let mut opportunities = Vec::with_capacity(page.len());
    for hit in page {
        let Some(n) = r.node(hit.id)? else { continue };
        opportunities.push(view(ids, r, &n, &mut owners)?);
    }
    Ok(OpportunityList {
        opportunities,
        total,
        offset: q.offset,
        limit: q.limit,
    })
}

fn view<R: GraphRead + ?Sized>(
    ids: &PublicIds,
    r: &R,
    n: &Node,
    owners: &mut Owners,
) -> Result<OpportunityView> {
    let owner = pipeline::owner(r, n.id)?;
    let (customer_email, customer_name) = match owner {
        Some(c) => owner_names(r, owners, c)?,
        None => (None, None),
    };
    Ok(OpportunityView {
        id: ids.node(&n.labels, n.id),
        opportunity_id: str_prop(n, prop::OPPORTUNITY_ID),
        name: str_prop(n, prop::NAME),
        score: n.get(prop::SCORE).map(value_to_json).unwrap_or(Json::Null),
        amount: n.get(prop::AMOUNT).map(value_to_json).unwrap_or(Json::Null),
        stage: pipeline::stage_of(r, n)?,
        status: pipeline::status_of(r, n)?.as_str().to_owned(),
        customer_id: owner.map(|c| ids.customer(c)),
        customer_email,
        customer_name,
        updated_at: str_prop(n, UPDATED_AT),
        properties: props_except(
            n,
            &[
                prop::NAME,
                prop::SCORE,
                prop::OPPORTUNITY_ID,
                prop::AMOUNT,
                prop::STATUS,
                UPDATED_AT,
            ],
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use svc_core::store::{Store, WorkspaceId};
    use svc_core::vocabulary::{AT_STAGE, HAS_OPPORTUNITY, STAGE};
    use svc_engine::{GraphWrite, Properties};

    const WS: WorkspaceId = WorkspaceId(7);
    const STAGES: [&str; 5] = ["proposal", "lead", "closedwon", "demo", "qualified"];

    fn props(pairs: &[(&str, Value)]) -> Properties {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    }

    /// 120 opportunities over five stages (named out of funnel order), owned by 12 customers;
    /// every third scored, every seventh without an amount.
    async fn seeded() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        store
            .write(|tx| {
                let mut w = tx.workspace(WS);
                let stages: Vec<NodeId> = STAGES
                    .iter()
                    .map(|s| w.create_node(&[STAGE], props(&[("name", Value::from(*s))])))
                    .collect::<std::result::Result<_, _>>()?;
                let customers: Vec<NodeId> = (0..12)
                    .map(|c| {
                        w.create_node(
                            &[CUSTOMER],
                            props(&[
                                (
                                    "email",
                                    Value::from(format!("owner{c}@corp.example").as_str()),
                                ),
                                ("name", Value::from(format!("Owner Tanaka {c}").as_str())),
                            ]),
                        )
                    })
                    .collect::<std::result::Result<_, _>>()?;
                for i in 0..120i64 {
                    let stage = STAGES[i as usize % STAGES.len()];
                    let mut p = vec![
                        ("opportunityId", Value::from(format!("D-{i}").as_str())),
                        ("name", Value::from(format!("Deal {i:03}").as_str())),
                        ("stage", Value::from(stage)),
                        (
                            "status",
                            Value::from(if stage == "closedwon" { "won" } else { "open" }),
                        ),
                        (UPDATED_AT, Value::DateTime(1_000_000 * ((i * 37) % 120))),
                    ];
                    if i % 7 != 0 {
                        p.push(("amount", Value::Int(1000 + (i * 750) % 24_000)));
                    }
                    if i % 3 == 0 {
                        p.push(("score", Value::Float((i % 10) as f64 / 10.0)));
                    }
                    let o = w.create_node(&[OPPORTUNITY], props(&p))?;
                    w.create_edge(
                        o,
                        stages[i as usize % STAGES.len()],
                        AT_STAGE,
                        Properties::new(),
                    )?;
                    w.create_edge(
                        customers[i as usize % 12],
                        o,
                        HAS_OPPORTUNITY,
                        Properties::new(),
                    )?;
                }
                Ok(())
            })
            .await
            .expect("seed");
        (dir, store)
    }

    fn run(store: &Store, q: OpportunityQuery) -> OpportunityList {
        let graph = store.graph().expect("graph");
        let snap = graph.snapshot(WS);
        search_in(store.ids(), &snap, &q.checked().expect("valid")).expect("search")
    }

    fn amounts(l: &OpportunityList) -> Vec<Option<f64>> {
        l.opportunities.iter().map(|o| o.amount.as_f64()).collect()
    }

    #[tokio::test]
    async fn pages_cover_everything_once_in_order_with_the_total() {
        let (_dir, store) = seeded().await;
        let mut seen = Vec::new();
        for page in 0..3 {
            let p = run(
                &store,
                OpportunityQuery {
                    sort: OpportunitySort::Amount,
                    offset: page * 50,
                    ..OpportunityQuery::default()
                },
            );
            assert_eq!((p.total, p.limit, p.offset), (120, 50, page * 50));
            seen.extend(
                p.opportunities
                    .into_iter()
                    .map(|o| (o.id, o.amount.as_f64())),
            );
        }
        assert_eq!(seen.len(), 120);
        let mut unique: Vec<&String> = seen.iter().map(|(id, _)| id).collect();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 120, "no opportunity on two pages");
        // Largest first, the ones without an amount last.
        let values: Vec<Option<f64>> = seen.iter().map(|(_, a)| *a).collect();
        let present = values.iter().take_while(|a| a.is_some()).count();
        assert_eq!(present, 120 - 18);
        assert!(values[present..].iter().all(Option::is_none));
        assert!(values[..present].windows(2).all(|w| w[0] >= w[1]));
        // Ascending keeps the absent ones last too.
        let asc = run(
            &store,
            OpportunityQuery {
                sort: OpportunitySort::Amount,
                ascending: true,
                limit: 500,
                ..OpportunityQuery::default()
            },
        );
        let a = amounts(&asc);
        assert!(a[..present].windows(2).all(|w| w[0] <= w[1]));
        assert!(a[present..].iter().all(Option::is_none));
        // Past the end: an empty page, the total still right.
        let past = run(
            &store,
            OpportunityQuery {
                offset: 500,
                ..OpportunityQuery::default()
            },
        );
        assert_eq!((past.opportunities.len(), past.total), (0, 120));
    }

    #[tokio::test]
    async fn default_is_score_then_amount_and_stage_sorts_in_funnel_order() {
        let (_dir, store) = seeded().await;
        let first = run(&store, OpportunityQuery::default());
        assert_eq!(first.opportunities.len(), 50);
        let scores: Vec<Option<f64>> = first
            .opportunities
            .iter()
            .map(|o| o.score.as_f64())
            .collect();
        // 40 scored, highest first; then unscored by amount, largest first.
        assert!(scores[..40].iter().all(Option::is_some));
        assert!(scores[..40].windows(2).all(|w| w[0] >= w[1]));
        assert!(scores[40..].iter().all(Option::is_none));
        let rest = amounts(&first);
        assert!(rest[40..].windows(2).all(|w| w[0] >= w[1]));

        let by_stage = run(
            &store,
            OpportunityQuery {
                sort: OpportunitySort::Stage,
                ascending: true,
                limit: 500,
                ..OpportunityQuery::default()
            },
        );
        let mut stages: Vec<String> = by_stage
            .opportunities
            .iter()
            .filter_map(|o| o.stage.clone())
            .collect();
        stages.dedup();
        assert_eq!(
            stages,
            ["lead", "qualified", "demo", "proposal", "closedwon"]
        );
        // Ties by id: the same query twice gives the same page.
        let again = run(
            &store,
            OpportunityQuery {
                sort: OpportunitySort::Stage,
                ascending: true,
                limit: 500,
                ..OpportunityQuery::default()
            },
        );
        let ids = |l: &OpportunityList| {
            l.opportunities
                .iter()
                .map(|o| o.id.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(&by_stage), ids(&again));

        let updated = run(
            &store,
            OpportunityQuery {
                sort: OpportunitySort::Updated,
                limit: 3,
                ..OpportunityQuery::default()
            },
        );
        let times: Vec<String> = updated
            .opportunities
            .iter()
            .filter_map(|o| o.updated_at.clone())
            .collect();
        assert_eq!(times.len(), 3);
        assert!(times.windows(2).all(|w| w[0] > w[1]), "{times:?}");
    }

    #[tokio::test]
    async fn search_and_filters_narrow_the_total() {
        let (_dir, store) = seeded().await;
        let count = |q: OpportunityQuery| run(&store, q).total;
        // By the owner's email or name, any case.
        assert_eq!(
            count(OpportunityQuery {
                q: "OWNER3@corp".into(),
                ..OpportunityQuery::default()
            }),
            10
        );
        assert_eq!(
            count(OpportunityQuery {
                q: "tanaka 11".into(),
                ..OpportunityQuery::default()
            }),
            10
        );
        // By its own name.
        assert_eq!(
            count(OpportunityQuery {
                q: "deal 10".into(),
                ..OpportunityQuery::default()
            }),
            10
        );
        assert_eq!(
            count(OpportunityQuery {
                stage: Some("DEMO".into()),
                ..OpportunityQuery::default()
            }),
            24
        );
        assert_eq!(
            count(OpportunityQuery {
                status: Some(Status::Won),
                ..OpportunityQuery::default()
            }),
            24
        );
        let ranged = run(
            &store,
            OpportunityQuery {
                min_amount: Some(5000.0),
                max_amount: Some(10_000.0),
                limit: 500,
                ..OpportunityQuery::default()
            },
        );
        assert!(ranged.total > 0 && ranged.total < 120);
        assert!(amounts(&ranged)
            .iter()
            .all(|a| a.is_some_and(|a| (5000.0..=10_000.0).contains(&a))));
        let page = run(
            &store,
            OpportunityQuery {
                q: "owner3@".into(),
                ..OpportunityQuery::default()
            },
        );
        assert!(page
            .opportunities
            .iter()
            .all(
                |o| o.customer_email.as_deref() == Some("owner3@corp.example")
                    && o.customer_name.as_deref() == Some("Owner Tanaka 3")
            ));
    }

    #[test]
    fn parameters_are_checked() {
        let q = OpportunityQuery::from_params([
            ("q", " acme "),
            ("sort", "stage"),
            ("order", "asc"),
            ("status", "open"),
            ("stage", ""),
            ("min_amount", "100"),
            ("q", ""),
            ("offset", "50"),
            ("limit", "50"),
            ("other", "x"),
        ])
        .expect("parsed");
        assert_eq!(
            (
                q.q.as_str(),
                q.sort,
                q.ascending,
                q.status,
                q.stage,
                q.min_amount
            ),
            (
                "acme",
                OpportunitySort::Stage,
                true,
                Some(Status::Open),
                None,
                Some(100.0)
            )
        );
        assert_eq!((q.offset, q.limit), (50, 50));
        assert_eq!(
            OpportunityQuery::from_params([]).expect("default").limit,
            PAGE_DEFAULT
        );
        for bad in [
            ("sort", "color"),
            ("order", "up"),
            ("status", "maybe"),
            ("status", ""),
            ("limit", "0"),
            ("limit", "501"),
            ("offset", "-1"),
            ("min_amount", "NaN"),
            ("max_amount", "x"),
        ] {
            assert!(OpportunityQuery::from_params([bad]).is_err(), "{bad:?}");
        }
        assert!(OpportunityQuery::from_params([("q", "x".repeat(201).as_str())]).is_err());
    }
}
