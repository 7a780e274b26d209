//! EXPLAIN / PROFILE rendering: the plan as a `PlanTree` (with per-operator figures when profiled)
//! and the scan details shown in it.

use super::*;

/// Renders the plan of a statement as a tree (last stage at the root).
pub(crate) fn render(planned: &Planned, profile: Option<&[(u64, u64)]>) -> PlanTree {
    render_stage(planned, planned.stages.len().saturating_sub(1), profile)
}

fn figures(id: usize, profile: Option<&[(u64, u64)]>) -> (Option<u64>, Option<u64>) {
    match profile.and_then(|p| p.get(id)) {
        Some((rows, nanos)) => (Some(*rows), Some(nanos / 1000)),
        None => (None, None),
    }
}

fn render_stage(planned: &Planned, index: usize, profile: Option<&[(u64, u64)]>) -> PlanTree {
    let previous = |i: usize| {
        if i == 0 {
            Vec::new()
        } else {
            vec![render_stage(planned, i - 1, profile)]
        }
    };
    match &planned.stages[index] {
        Stage::Read(p) => {
            let mut tree = render_plan(p, profile, &mut || previous(index));
            if index == planned.stages.len() - 1 {
                let (rows, time_us) = (tree.rows, None);
                tree = PlanTree {
                    operator: "ProduceResults".into(),
                    details: planned.columns.join(", "),
                    rows,
                    time_us,
                    children: vec![tree],
                };
            }
            tree
        }
        Stage::Write { id, details, op } => {
            let name = match op {
                WriteOp::Create(_) => "Create",
                WriteOp::Merge { .. } => "Merge",
                WriteOp::Set(_) => "SetProperties",
                WriteOp::Remove(_) => "Remove",
                WriteOp::Delete { detach: true, .. } => "DetachDelete",
                WriteOp::Delete { .. } => "Delete",
            };
            let (rows, time_us) = figures(*id, profile);
            let mut children = previous(index);
            if let WriteOp::Merge { matcher, .. } = op {
                children.push(render_plan(matcher, profile, &mut Vec::new));
            }
            PlanTree {
                operator: name.into(),
                details: details.clone(),
                rows,
                time_us,
                children,
            }
        }
    }
}

fn render_plan(
    p: &Plan,
    profile: Option<&[(u64, u64)]>,
    stage_input: &mut dyn FnMut() -> Vec<PlanTree>,
) -> PlanTree {
    let (name, children): (&str, Vec<PlanTree>) = match &p.op {
        Op::Once => ("Start", Vec::new()),
        Op::Argument { .. } => ("Argument", Vec::new()),
        Op::StageInput => ("Eager", stage_input()),
        Op::Scan { input, source, .. } => (
            match source {
                ScanSource::AllNodes => "AllNodesScan",
                ScanSource::ById { .. } => "NodeByIdSeek",
                ScanSource::Label(_) => "NodeByLabelScan",
                ScanSource::Seek { .. } => "NodeIndexSeek",
                ScanSource::Range { .. } => "NodeIndexRangeScan",
            },
            vec![render_plan(input, profile, stage_input)],
        ),
        Op::Expand {
            input, hops, into, ..
        } => (
            match (hops.is_some(), *into) {
                (true, _) => "VarLengthExpand",
                (false, true) => "ExpandInto",
                (false, false) => "Expand",
            },
            vec![render_plan(input, profile, stage_input)],
        ),
        Op::Filter { input, .. } => ("Filter", vec![render_plan(input, profile, stage_input)]),
        Op::Project { input, .. } => ("Projection", vec![render_plan(input, profile, stage_input)]),
        Op::Aggregate { input, .. } => (
            "Aggregation",
            vec![render_plan(input, profile, stage_input)],
        ),
        Op::Distinct { input, .. } => ("Distinct", vec![render_plan(input, profile, stage_input)]),
        Op::Sort { input, .. } => ("Sort", vec![render_plan(input, profile, stage_input)]),
        Op::TopK { input, .. } => ("Top", vec![render_plan(input, profile, stage_input)]),
        Op::Skip { input, .. } => ("Skip", vec![render_plan(input, profile, stage_input)]),
        Op::Limit { input, .. } => ("Limit", vec![render_plan(input, profile, stage_input)]),
        Op::Unwind { input, .. } => ("Unwind", vec![render_plan(input, profile, stage_input)]),
        Op::Union { inputs, .. } => (
            "Union",
            inputs
                .iter()
                .map(|(p, _)| render_plan(p, profile, stage_input))
                .collect(),
        ),
        Op::Optional { input, inner, .. } => (
            "OptionalMatch",
            vec![
                render_plan(input, profile, stage_input),
                render_plan(inner, profile, &mut Vec::new),
            ],
        ),
        Op::ScanFilter { input, .. } => (
            "NodeByLabelScan",
            vec![render_plan(input, profile, stage_input)],
        ),
        Op::ExpandCount { input, .. } => (
            "ExpandCount",
            vec![render_plan(input, profile, stage_input)],
        ),
        Op::CountLabel { .. } => ("NodeCountFromCountStore", Vec::new()),
        Op::CountWhere { fallback, .. } => (
            "NodeCountFromReadModel",
            vec![render_plan(fallback, profile, stage_input)],
        ),
        Op::ReachCount { fallback, .. } => (
            "ReachCountFromReadModel",
            vec![render_plan(fallback, profile, stage_input)],
        ),
    };
    let (rows, time_us) = figures(p.id, profile);
    PlanTree {
        operator: name.to_owned(),
        details: p.details.clone(),
        rows,
        time_us,
        children,
    }
}

pub(super) fn scan_details(source: &ScanSource, scope: &[(String, usize)], slot: usize) -> String {
    let var = scope
        .iter()
        .rev()
        .find(|(_, s)| *s == slot)
        .map_or("_", |(n, _)| n.as_str());
    match source {
        ScanSource::AllNodes => format!("({var})"),
        ScanSource::ById { .. } => format!("({var}) id({var}) = ?"),
        ScanSource::Label(l) => format!("({var}:{l})"),
        ScanSource::Seek { label, key, .. } => format!("({var}:{label}) {var}.{key} = ?"),
        ScanSource::Range {
            label,
            key,
            lower,
            upper,
            ..
        } => {
            let show = |b: &Bound<Val>, lo: bool| match b {
                Bound::Included(v) => format!("{}{}", if lo { ">= " } else { "<= " }, short(v)),
                Bound::Excluded(v) => format!("{}{}", if lo { "> " } else { "< " }, short(v)),
                Bound::Unbounded => String::new(),
            };
            format!(
                "({var}:{label}) {var}.{key} {} {}",
                show(lower, true),
                show(upper, false)
            )
            .trim_end()
            .to_owned()
        }
    }
}

fn short(v: &Val) -> String {
    match v {
        Val::Int(i) => i.to_string(),
        Val::Float(f) => format!("{f:?}"),
        Val::DateTime(t) => crate::result::format_datetime(*t),
        other => other.type_name().to_owned(),
    }
}
