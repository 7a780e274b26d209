//! The seeded read graph of `tools/bench/gen.py` (37,574 customers, 200,000 touchpoints, 50
//! campaigns, 5,000 opportunities, 6 stages), loaded from its `seed/*.csv` files through the
//! engine's public write API, with the answers of the benchmark queries computed from the CSV
//! files alone (so a benchmark checks its answer against data the engine never touched).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use svc_engine::{EngineError, Graph, GraphWrite, NodeId, Properties, Value, WorkspaceId};

/// One CSV file: header names and rows of fields (empty field = null).
struct Csv {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Csv {
    fn read(path: &Path) -> std::io::Result<Csv> {
        let text = std::fs::read_to_string(path)?;
        let mut lines = text.lines().map(split_csv_line);
        let header = lines.next().unwrap_or_default();
        Ok(Csv {
            header,
            rows: lines.collect(),
        })
    }

    fn col(&self, name: &str) -> usize {
        self.header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("column {name} missing from {:?}", self.header))
    }
}

/// Splits one line of Python's csv module output (quotes only around fields that need them).
fn split_csv_line(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut field)),
            (c, _) => field.push(c),
        }
    }
    out.push(field);
    out
}

/// Where the seed lives: `$SVC_BENCH_DATA`, else `<tmp>/svc-bench-data`; generated with
/// `python3 tools/bench/gen.py --out <dir>` (default arguments) when missing.
pub fn seed_dir() -> PathBuf {
    let dir = std::env::var_os("SVC_BENCH_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("svc-bench-data"));
    if !dir.join("seed").join("touchpoints.csv").exists() {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tools/bench/gen.py");
        let status = Command::new("python3")
            .arg(&script)
            .arg("--out")
            .arg(&dir)
            .status()
            .expect("run python3 tools/bench/gen.py");
        assert!(status.success(), "gen.py failed");
    }
    dir
}

/// Answers of the benchmark queries, computed from the CSV files.
#[derive(Clone, Debug, Default)]
pub struct SeedFacts {
    pub customers: u64,
    pub touchpoints: u64,
    /// A customer with an email and at least 5 touchpoints, and how many he has.
    pub sample_email: String,
    pub sample_touchpoints: u64,
    /// The campaign with the most touchpoints, and that number.
    pub big_campaign: String,
    pub big_campaign_touchpoints: u64,
    /// Distinct customers with a touchpoint influenced by `big_campaign`.
    pub big_campaign_reach: u64,
    /// The ten highest customer scores, descending.
    pub top10_scores: Vec<f64>,
    /// The five highest per-campaign touchpoint counts, descending.
    pub top5_campaign_counts: Vec<u64>,
    /// Touchpoints whose action is `purchase`.
    pub purchases: u64,
    /// `lastSeen` of the customer at the 90th percentile (microseconds), and how many customers
    /// were seen at or after it.
    pub seen_since_us: i64,
    pub seen_since_count: u64,
    /// Opportunities per stage name.
    pub per_stage: BTreeMap<String, u64>,
}

fn props(pairs: Vec<(&str, Value)>) -> Properties {
    pairs
        .into_iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
}

fn text(s: &str) -> Value {
    if s.is_empty() {
        Value::Null
    } else {
        Value::String(s.to_owned())
    }
}

fn num<T: std::str::FromStr>(s: &str) -> T {
    s.parse()
        .unwrap_or_else(|_| panic!("not a number in the seed: {s:?}"))
}

fn ms_to_us(s: &str) -> Value {
    if s.is_empty() {
        Value::Null
    } else {
        Value::DateTime(num::<i64>(s) * 1000)
    }
}

const CHUNK: usize = 5_000;

/// Loads `dir/seed/*.csv` into workspace `ws` and returns the facts the queries must answer.
pub fn load_seed(graph: &Graph, ws: WorkspaceId, dir: &Path) -> Result<SeedFacts, EngineError> {
    let seed = dir.join("seed");
    let read = |name: &str| Csv::read(&seed.join(name)).expect("read seed csv");
    let (customers, touchpoints, campaigns, stages, opportunities) = (
        read("customers.csv"),
        read("touchpoints.csv"),
        read("campaigns.csv"),
        read("stages.csv"),
        read("opportunities.csv"),
    );
    let (has_tp, influenced, at_stage) = (
        read("has_touchpoint.csv"),
        read("influenced_by.csv"),
        read("at_stage.csv"),
    );

    // Nodes, in chunks of one write each.
    fn create_all(
        graph: &Graph,
        ws: WorkspaceId,
        label: &'static str,
        nodes: Vec<(String, Properties)>,
    ) -> Result<HashMap<String, NodeId>, EngineError> {
        let mut ids = HashMap::with_capacity(nodes.len());
        let mut nodes = nodes.into_iter().peekable();
        while nodes.peek().is_some() {
            let chunk: Vec<(String, Properties)> = nodes.by_ref().take(CHUNK).collect();
            let created = graph.write(move |txn| {
                let mut w = txn.workspace(ws);
                chunk
                    .into_iter()
                    .map(|(key, p)| Ok((key, w.create_node(&[label], p)?)))
                    .collect::<Result<Vec<_>, EngineError>>()
            })?;
            ids.extend(created);
        }
        Ok(ids)
    }

    let c = |n: &str| customers.col(n);
    let customer_rows: Vec<(String, Properties)> = customers
        .rows
        .iter()
        .map(|r| {
            (
                r[c("cid")].clone(),
                props(vec![
                    ("name", text(&r[c("name")])),
                    ("email", text(&r[c("email")])),
                    ("phone", text(&r[c("phone")])),
                    ("externalId", text(&r[c("externalId")])),
                    ("score", Value::Float(num(&r[c("score")]))),
                    ("lastSeen", ms_to_us(&r[c("lastSeen")])),
                ]),
            )
        })
        .collect();
    let customer_ids = create_all(graph, ws, "Customer", customer_rows)?;
    let t = |n: &str| touchpoints.col(n);
    let tp_rows: Vec<(String, Properties)> = touchpoints
        .rows
        .iter()
        .map(|r| {
            (
                r[t("tid")].clone(),
                props(vec![
                    ("action", text(&r[t("action")])),
                    ("channel", text(&r[t("channel")])),
                    ("ts", ms_to_us(&r[t("ts")])),
                ]),
            )
        })
        .collect();
    let tp_ids = create_all(graph, ws, "Touchpoint", tp_rows)?;
    let campaign_ids = create_all(
        graph,
        ws,
        "Campaign",
        campaigns
            .rows
            .iter()
            .map(|r| {
                (
                    r[0].clone(),
                    props(vec![("campaignId", text(&r[0])), ("name", text(&r[1]))]),
                )
            })
            .collect(),
    )?;
    let stage_ids = create_all(
        graph,
        ws,
        "Stage",
        stages
            .rows
            .iter()
            .map(|r| {
                (
                    r[0].clone(),
                    props(vec![
                        ("name", text(&r[1])),
                        ("progress", Value::Float(num(&r[2]))),
                    ]),
                )
            })
            .collect(),
    )?;
    let opp_ids = create_all(
        graph,
        ws,
        "Opportunity",
        opportunities
            .rows
            .iter()
            .map(|r| {
                (
                    r[0].clone(),
                    props(vec![
                        ("name", text(&r[1])),
                        ("score", Value::Float(num(&r[2]))),
                        ("amount", Value::Int(num(&r[3]))),
                    ]),
                )
            })
            .collect(),
    )?;

    // Edges.
    let edges = |csv: &Csv,
                 from: &HashMap<String, NodeId>,
                 to: &HashMap<String, NodeId>,
                 rel: &'static str| {
        csv.rows
            .iter()
            .map(|r| (from[&r[0]], to[&r[1]], rel))
            .collect::<Vec<_>>()
    };
    let mut all_edges = edges(&has_tp, &customer_ids, &tp_ids, "HAS_TOUCHPOINT");
    all_edges.extend(edges(&influenced, &tp_ids, &campaign_ids, "INFLUENCED_BY"));
    all_edges.extend(edges(&at_stage, &opp_ids, &stage_ids, "AT_STAGE"));
    for chunk in all_edges.chunks(CHUNK) {
        let chunk = chunk.to_vec();
        graph.write(move |txn| {
            let mut w = txn.workspace(ws);
            for (s, e, rel) in chunk {
                w.create_edge(s, e, rel, Properties::new())?;
            }
            Ok::<_, EngineError>(())
        })?;
    }

    // The answers, from the CSV files.
    let mut facts = SeedFacts {
        customers: customers.rows.len() as u64,
        touchpoints: touchpoints.rows.len() as u64,
        ..Default::default()
    };
    let mut tps_of: HashMap<&str, u64> = HashMap::new();
    let mut customer_of_tp: HashMap<&str, &str> = HashMap::new();
    for r in &has_tp.rows {
        *tps_of.entry(&r[0]).or_default() += 1;
        customer_of_tp.insert(&r[1], &r[0]);
    }
    let sample = customers
        .rows
        .iter()
        .find(|r| !r[c("email")].is_empty() && tps_of.get(r[0].as_str()).copied() >= Some(5))
        .expect("a customer with an email and 5 touchpoints");
    facts.sample_email = sample[c("email")].clone();
    facts.sample_touchpoints = tps_of[sample[0].as_str()];
    let mut per_campaign: BTreeMap<&str, u64> = BTreeMap::new();
    for r in &influenced.rows {
        *per_campaign.entry(&r[1]).or_default() += 1;
    }
    let mut counts: Vec<(u64, &str)> = per_campaign.iter().map(|(k, n)| (*n, *k)).collect();
    counts.sort_by(|a, b| b.cmp(a));
    facts.big_campaign = counts[0].1.to_owned();
    facts.big_campaign_touchpoints = counts[0].0;
    facts.top5_campaign_counts = counts.iter().take(5).map(|(n, _)| *n).collect();
    facts.big_campaign_reach = influenced
        .rows
        .iter()
        .filter(|r| r[1] == facts.big_campaign)
        .filter_map(|r| customer_of_tp.get(r[0].as_str()))
        .collect::<HashSet<_>>()
        .len() as u64;
    let mut scores: Vec<f64> = customers.rows.iter().map(|r| num(&r[c("score")])).collect();
    scores.sort_by(|a, b| b.total_cmp(a));
    facts.top10_scores = scores[..10].to_vec();
    facts.purchases = touchpoints
        .rows
        .iter()
        .filter(|r| r[t("action")] == "purchase")
        .count() as u64;
    let mut seen: Vec<i64> = customers
        .rows
        .iter()
        .filter(|r| !r[c("lastSeen")].is_empty())
        .map(|r| num::<i64>(&r[c("lastSeen")]) * 1000)
        .collect();
    seen.sort_unstable();
    facts.seen_since_us = seen[seen.len() * 9 / 10];
    facts.seen_since_count = seen.iter().filter(|s| **s >= facts.seen_since_us).count() as u64;
    let stage_name: HashMap<&str, &str> = stages
        .rows
        .iter()
        .map(|r| (r[0].as_str(), r[1].as_str()))
        .collect();
    for r in &at_stage.rows {
        *facts
            .per_stage
            .entry(stage_name[r[1].as_str()].to_owned())
            .or_default() += 1;
    }
    Ok(facts)
}

#[cfg(test)]
mod tests {
    use super::split_csv_line;

    #[test]
    fn csv_lines_split_like_pythons_writer() {
        assert_eq!(split_csv_line("a,,b"), vec!["a", "", "b"]);
        assert_eq!(
            split_csv_line(r#"1,"x, ""y""",2"#),
            vec!["1", r#"x, "y""#, "2"]
        );
    }
}
