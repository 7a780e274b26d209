//! `CountWhere` and `ReachCount`: one answer from the engine's read model, or, when the engine
//! has no model to answer from, the ordinary aggregation they carry as their fallback.

use super::*;

/// The single output row of an aggregation without keys: `n` in every slot.
fn count_row(width: usize, slots: &[usize], n: u64) -> Row {
    let mut row = vec![Val::Null; width];
    for s in slots {
        row[*s] = Val::Int(i64::try_from(n).unwrap_or(i64::MAX));
    }
    row
}

/// What a read-model operator does next.
enum State<'p> {
    Start,
    Answered,
    Fallback(BoxOp<'p>),
}

/// `Op::CountWhere` or `Op::ReachCount`: the model's count in one row, or the fallback's rows.
pub(super) struct ModelCount<'p> {
    plan: &'p Op,
    width: usize,
    profile: bool,
    state: State<'p>,
}

impl<'p> ModelCount<'p> {
    pub(super) fn new(plan: &'p Op, width: usize, profile: bool) -> Self {
        ModelCount {
            plan,
            width,
            profile,
            state: State::Start,
        }
    }

    /// The model's answer (None: no model to answer from).
    fn answer(&self, cx: &Cx<'_>) -> Result<Option<u64>, QueryError> {
        match self.plan {
            Op::CountWhere { label, tests, .. } => {
                cx.tick()?;
                Ok(cx.g.count_label_where(label, tests)?)
            }
            Op::ReachCount {
                from,
                hops,
                depth,
                fallback,
                ..
            } => {
                let Some(input) = crate::plan::reach_input(fallback, *depth) else {
                    return Ok(None);
                };
                let mut starts = Vec::new();
                // The starts through the batch path where a model exists (a filtered range
                // scan of thousands of nodes would otherwise read each from the store).
                let live = [*from];
                let a = Analysis::new(input, self.width, Some(&live));
                let mut rows = build_rows(input, self.width, self.profile, Some(&a));
                while let Some(row) = rows.next(cx)? {
                    cx.tick()?;
                    match &row[*from] {
                        Val::Node(id) => starts.push(*id),
                        Val::Null => {}
                        other => {
                            return Err(QueryError::type_err(format!(
                                "cannot expand from a {}",
                                other.type_name()
                            )))
                        }
                    }
                }
                Ok(cx.g.reach_count(&starts, hops)?)
            }
            _ => Ok(None),
        }
    }
}

impl Operator for ModelCount<'_> {
    fn next(&mut self, cx: &Cx<'_>) -> Result<Option<Row>, QueryError> {
        let (Op::CountWhere {
            slots, fallback, ..
        }
        | Op::ReachCount {
            slots, fallback, ..
        }) = self.plan
        else {
            return Ok(None);
        };
        if let State::Start = self.state {
            match self.answer(cx)? {
                Some(n) => {
                    self.state = State::Answered;
                    return Ok(Some(count_row(self.width, slots, n)));
                }
                None => self.state = State::Fallback(build(fallback, self.width, self.profile)),
            }
        }
        match &mut self.state {
            State::Fallback(op) => op.next(cx),
            _ => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    //! Read-model answers against the ordinary plans, on two stores given the same random
    //! writes: one with read models off, one with a model built half-way (so later writes go
    //! through its delta).

    use svc_engine::{
        Graph, GraphOptions, GraphRead, GraphWrite, NodeId, Properties, Value, WorkspaceId,
    };

    use crate::{parse, run_read, Limits, Params};

    const WS: WorkspaceId = WorkspaceId(3);
    const LABELS: [&str; 3] = ["Customer", "Touchpoint", "Campaign"];
    const TYPES: [&str; 3] = ["HAS_TOUCHPOINT", "INFLUENCED_BY", "KNOWS"];

    /// A small deterministic generator (xorshift; the crate has no `rand`).
    struct StdRng(u64);

    impl StdRng {
        fn seed_from_u64(seed: u64) -> StdRng {
            StdRng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
        }
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
        fn range(&mut self, lo: i64, hi: i64) -> i64 {
            lo + (self.next() % (hi - lo) as u64) as i64
        }
        fn coin(&mut self) -> bool {
            self.next() & 1 == 1
        }
    }

    fn value(rng: &mut StdRng) -> Option<Value> {
        Some(match rng.below(10) {
            0 => return None,
            1 => Value::Int(rng.range(-2, 3)),
            2 => Value::Float(rng.range(-4, 5) as f64 / 2.0),
            3 => Value::DateTime(rng.range(0, 4)),
            4 => Value::Bool(rng.coin()),
            // Datetimes between the microseconds, in two zones, next to the UTC ones.
            8 => zoned(rng),
            9 => Value::Date(rng.range(0, 3)),
            _ => Value::String(["view", "purchase", "a"][rng.below(3)].into()),
        })
    }

    fn zoned(rng: &mut StdRng) -> Value {
        // Paris was at +01:00 on 1970-01-01.
        let paris = rng.coin();
        Value::ZonedDateTime(Box::new(svc_engine::ZonedDateTime {
            seconds: 0,
            nanos: rng.range(0, 8) as u32 * 500,
            offset: if paris { 3600 } else { 0 },
            zone: paris.then(|| "Europe/Paris".to_owned()),
        }))
    }

    fn literal(rng: &mut StdRng) -> String {
        match rng.below(5) {
            0 => rng.range(-2, 3).to_string(),
            1 => format!("{:.1}", rng.range(-4, 5) as f64 / 2.0),
            2 => ["true", "false"][rng.below(2)].to_owned(),
            3 => "$t".to_owned(),
            _ => format!("'{}'", ["view", "purchase", "a"][rng.below(3)]),
        }
    }

    /// One batch of random writes, applied identically to both graphs.
    type Op = (u8, usize, usize, Option<Value>, usize, &'static str);

    fn apply(g: &Graph, ops: Vec<Op>) {
        g.write(move |t| -> Result<(), svc_engine::EngineError> {
            let mut w = t.workspace(WS);
            let mut all: Vec<NodeId> = w.all_nodes()?;
            for (kind, a, b, v, l, key) in ops {
                let pick = |i: usize| (!all.is_empty()).then(|| all[i % all.len()]);
                match (kind, pick(a), pick(b)) {
                    (0..=2, _, _) | (_, None, _) | (_, _, None) => {
                        let mut p = Properties::new();
                        if let Some(v) = v {
                            p.insert(key.into(), v);
                        }
                        all.push(w.create_node(&[LABELS[l]], p)?);
                    }
                    (3 | 4, Some(x), Some(y)) => {
                        w.create_edge(x, y, TYPES[l], Properties::new())?;
                    }
                    (5, Some(x), _) => w.set_node_property(x, key, v.unwrap_or(Value::Null))?,
                    (6, Some(x), _) => w.add_node_label(x, LABELS[l])?,
                    (_, Some(x), _) => {
                        w.detach_delete_node(x)?;
                        all.retain(|n| *n != x);
                    }
                }
            }
            Ok(())
        })
        .expect("write");
    }

    #[test]
    fn read_model_answers_equal_the_ordinary_plans() {
        let limits = Limits::default();
        for seed in 0..4u64 {
            let mut rng = StdRng::seed_from_u64(seed);
            let (d1, d2) = (
                tempfile::tempdir().expect("test step"),
                tempfile::tempdir().expect("test step"),
            );
            let plain = Graph::open(
                d1.path(),
                GraphOptions {
                    read_model_bytes: 0,
                    ..GraphOptions::default()
                },
            )
            .expect("test step");
            let model = Graph::open(d2.path(), GraphOptions::default()).expect("test step");
            for round in 0..3 {
                let ops: Vec<Op> = (0..60)
                    .map(|_| {
                        (
                            rng.below(8) as u8,
                            rng.below(1 << 20),
                            rng.below(1 << 20),
                            value(&mut rng),
                            rng.below(3),
                            ["action", "score", "lastSeen"][rng.below(3)],
                        )
                    })
                    .collect();
                apply(&plain, ops.clone());
                apply(&model, ops);
                if round == 0 {
                    assert!(model.prepare_read_model(WS).expect("test step").is_some());
                }
                let (a, b) = (plain.snapshot(WS), model.snapshot(WS));
                assert!(b.has_read_model() && !a.has_read_model());
                for _ in 0..25 {
                    let label = LABELS[rng.below(3)];
                    let key = ["action", "score", "lastSeen"][rng.below(3)];
                    let op = ["=", "<", "<=", ">", ">="][rng.below(5)];
                    let text = match rng.below(4) {
                        0 => format!(
                            "MATCH (n:{label}) WHERE n.{key} {op} {} RETURN count(n)",
                            literal(&mut rng)
                        ),
                        1 => format!(
                            "MATCH (n:{label}) WHERE {} {op} n.{key} AND n.action <> 'x' \
                             RETURN count(*)",
                            literal(&mut rng)
                        ),
                        2 => format!(
                            "MATCH (n:{label})-[:{}]->(:{})<-[:{}]-(c) RETURN count(DISTINCT c)",
                            TYPES[rng.below(3)],
                            LABELS[rng.below(3)],
                            TYPES[rng.below(3)],
                        ),
                        _ => format!(
                            "MATCH (n:{label}) WHERE n.{key} {op} {} RETURN count(n) AS a, count(*) AS b",
                            literal(&mut rng)
                        ),
                    };
                    let stmt = parse(&text).expect("test step");
                    let mut params = Params::new();
                    let t = if rng.coin() {
                        Value::DateTime(rng.range(0, 4))
                    } else {
                        zoned(&mut rng)
                    };
                    params.insert("t".into(), t);
                    let want = run_read(&a, &stmt, &params, &limits);
                    let got = run_read(&b, &stmt, &params, &limits);
                    match (want, got) {
                        (Ok(w), Ok(g)) => assert_eq!(w.rows, g.rows, "seed {seed} {text}"),
                        (Err(w), Err(g)) => assert_eq!(w.to_string(), g.to_string()),
                        (w, g) => panic!("{text}: {w:?} vs {g:?}"),
                    }
                }
            }
        }
    }

    #[test]
    fn the_shapes_are_answered_by_the_read_model() {
        let dir = tempfile::tempdir().expect("test step");
        let g = Graph::open(dir.path(), GraphOptions::default()).expect("test step");
        g.write(|t| -> Result<(), svc_engine::EngineError> {
            let mut w = t.workspace(WS);
            let k = w.create_node(&["Campaign"], Properties::new())?;
            let tp = w.create_node(&["Touchpoint"], Properties::new())?;
            let c = w.create_node(&["Customer"], Properties::new())?;
            w.create_edge(tp, k, "INFLUENCED_BY", Properties::new())?;
            w.create_edge(c, tp, "HAS_TOUCHPOINT", Properties::new())?;
            Ok(())
        })
        .expect("test step");
        g.prepare_read_model(WS).expect("test step");
        let snap = g.snapshot(WS);
        for (text, operator) in [
            (
                "MATCH (t:Touchpoint) WHERE t.action = 'purchase' RETURN count(t)",
                "NodeCountFromReadModel",
            ),
            (
                "MATCH (c:Customer) WHERE c.lastSeen >= 5 RETURN count(c)",
                "NodeCountFromReadModel",
            ),
            (
                "MATCH (k:Campaign)<-[:INFLUENCED_BY]-(:Touchpoint)<-[:HAS_TOUCHPOINT]-(c:Customer) \
                 RETURN count(DISTINCT c)",
                "ReachCountFromReadModel",
            ),
        ] {
            let stmt = parse(&format!("EXPLAIN {text}")).expect("test step");
            let r = run_read(&snap, &stmt, &Params::new(), &Limits::default()).expect("test step");
            let plan = format!("{:?}", r.plan);
            assert!(plan.contains(operator), "{text}: {plan}");
        }
    }
}
