//! The model-column path of the customer search: the untouched Customer rows of the read
//! model, tested column by column (a text search once per distinct string of a column).

use std::borrow::Cow;

use svc_engine::{ColumnView, ModelView, Value, NO_CODE};

use super::{in_range, number, text_key, Hit, Key, Needle, Prepared, STAGE_KEYS};
use svc_core::vocabulary::{prop, CUSTOMER};

/// Per distinct string of a column, whether the search matches it.
fn dict_matches(needle: &Needle, key: &str, dict: &[String]) -> Vec<bool> {
    dict.iter().map(|s| needle.matches(key, s)).collect()
}

/// The hits among the model's untouched Customer rows.
pub(super) fn model_hits<'m>(m: &'m ModelView, p: &Prepared, hits: &mut Vec<Hit<'m>>) {
    let Some(label) = m.label(CUSTOMER) else {
        return;
    };
    let q = p.q;
    // The text test per column: strings by dictionary, anything else per row.
    enum TextCol<'c> {
        Codes(&'c [u32], Vec<bool>),
        Values(&'c str, &'c [Option<Value>]),
    }
    let text_cols: Vec<TextCol> = match &p.needle {
        None => Vec::new(),
        Some(needle) => label
            .columns()
            .filter_map(|(k, c)| match c {
                ColumnView::Strings { codes, dict } => {
                    let pass = dict_matches(needle, k, dict);
                    pass.iter()
                        .any(|b| *b)
                        .then_some(TextCol::Codes(codes, pass))
                }
                ColumnView::Values(v) => Some(TextCol::Values(k, v)),
                _ => None,
            })
            .collect(),
    };
    let stage_cols: Vec<ColumnView> = STAGE_KEYS.iter().filter_map(|k| label.column(k)).collect();
    let score = label.column(prop::SCORE);
    let churn = label.column(prop::CHURN_SCORE);
    let sort_col = label.column(q.sort.property());
    let has_col = q.has.as_deref().map(|k| label.column(k));
    let num_at = |c: &Option<ColumnView>, row: usize| -> Option<f64> {
        match c {
            Some(ColumnView::Floats(v)) => v.get(row).copied().filter(|f| !f.is_nan()),
            Some(c) => c.get(row).as_ref().and_then(number),
            None => None,
        }
    };
    for (row, &d) in label.rows().iter().enumerate() {
        if m.is_touched(d) {
            continue;
        }
        let id = m.id(d);
        if let Some(needle) = &p.needle {
            let text = text_cols.iter().any(|c| match c {
                TextCol::Codes(codes, pass) => codes
                    .get(row)
                    .is_some_and(|&code| code != NO_CODE && pass[code as usize]),
                TextCol::Values(k, v) => v
                    .get(row)
                    .and_then(Option::as_ref)
                    .is_some_and(|v| needle.matches_value(k, v)),
            });
            if !text && !p.id_matches(id) {
                continue;
            }
        }
        if q.stage.is_some() {
            let own = stage_cols.iter().find_map(|c| match c {
                ColumnView::Strings { codes, dict } => codes
                    .get(row)
                    .filter(|&&code| code != NO_CODE)
                    .map(|&code| Cow::Borrowed(dict[code as usize].as_str())),
                other => match other.get(row) {
                    Some(Value::String(s)) => Some(Cow::Owned(s)),
                    _ => None,
                },
            });
            if !p.stage_ok(own.as_deref(), id) {
                continue;
            }
        }
        let has = match &has_col {
            None => true,
            Some(None) => false,
            Some(Some(c)) => !c.is_absent(row),
        };
        if !has
            || !p.campaign_ok(id)
            || !in_range(num_at(&score, row), q.min_score, q.max_score)
            || !in_range(num_at(&churn, row), q.min_churn, q.max_churn)
        {
            continue;
        }
        let key = match &sort_col {
            None => Key::None,
            Some(ColumnView::Strings { codes, dict }) => match codes.get(row) {
                Some(&code) if code != NO_CODE => text_key(&dict[code as usize]),
                _ => Key::None,
            },
            Some(ColumnView::Floats(v)) => match v.get(row) {
                Some(f) if !f.is_nan() => Key::Float(*f),
                _ => Key::None,
            },
            Some(c) => match c.get(row) {
                Some(Value::DateTime(t)) | Some(Value::Int(t)) => Key::Int(t),
                Some(Value::Float(f)) if !f.is_nan() => Key::Float(f),
                Some(Value::String(s)) => Key::Text(Cow::Owned(s.to_lowercase())),
                _ => Key::None,
            },
        };
        hits.push(Hit { id, key });
    }
}
