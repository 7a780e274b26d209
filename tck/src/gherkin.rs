//! The subset of Gherkin the TCK's feature files use: `Feature`, `Background`, `Scenario`,
//! `Scenario Outline` with `Examples` tables, steps with doc strings (`"""`) and data tables
//! (`| a | b |`). Outlines are expanded here, one scenario per example row.

use crate::TckError;

/// One step: its keyword-less text (`executing query:`), with its doc string or table.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    pub text: String,
    pub doc: Option<String>,
    pub table: Vec<Vec<String>>,
}

/// One runnable scenario (an outline's example row is one scenario of its own).
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// Stable id: `<feature path without .feature> [<number>]`, with `.<row>` for outline rows.
    pub id: String,
    /// The scenario's name as written (placeholders filled in).
    pub name: String,
    /// The TCK area: the feature's folder under `features/` (`clauses/match`, ...).
    pub area: String,
    /// Background steps first, then the scenario's own.
    pub steps: Vec<Step>,
}

fn err(file: &str, line: usize, msg: impl Into<String>) -> TckError {
    TckError::Feature {
        file: file.to_owned(),
        line,
        message: msg.into(),
    }
}

/// Splits a table line `| a | b\|c |` into its trimmed cells.
fn cells(line: &str) -> Vec<String> {
    let inner = line.trim();
    let inner = inner.strip_prefix('|').unwrap_or(inner);
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('|') => cur.push('|'),
                Some('n') => cur.push('\n'),
                Some('\\') => cur.push('\\'),
                Some(other) => {
                    cur.push('\\');
                    cur.push(other);
                }
                None => cur.push('\\'),
            },
            '|' => out.push(std::mem::take(&mut cur).trim().to_owned()),
            c => cur.push(c),
        }
    }
    out.push(cur.trim().to_owned());
    out
}

enum Block {
    Background,
    Scenario { outline: bool },
}

struct Raw {
    name: String,
    outline: bool,
    steps: Vec<Step>,
    examples: Vec<Vec<String>>,
}

const STEP_KEYWORDS: [&str; 5] = ["Given ", "When ", "Then ", "And ", "But "];

/// Parses one feature file; `rel` is its path under `features/` (for ids and areas).
pub fn parse_feature(rel: &str, text: &str) -> Result<Vec<Scenario>, TckError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut background: Vec<Step> = Vec::new();
    let mut raws: Vec<Raw> = Vec::new();
    let mut block: Option<Block> = None;
    let mut in_examples = false;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim();
        i += 1;
        if line.is_empty() || line.starts_with('#') || line.starts_with('@') {
            continue;
        }
        if line.starts_with("Feature:") {
            continue;
        }
        if line.starts_with("Background:") {
            block = Some(Block::Background);
            in_examples = false;
            continue;
        }
        let heading = [("Scenario Outline:", true), ("Scenario:", false)]
            .into_iter()
            .find_map(|(p, outline)| line.strip_prefix(p).map(|rest| (rest, outline)));
        if let Some((rest, outline)) = heading {
            block = Some(Block::Scenario { outline });
            raws.push(Raw {
                name: rest.trim().to_owned(),
                outline,
                steps: Vec::new(),
                examples: Vec::new(),
            });
            in_examples = false;
            continue;
        }
        if line.starts_with("Examples:") {
            if !matches!(block, Some(Block::Scenario { outline: true, .. })) {
                return Err(err(rel, i, "Examples outside a Scenario Outline"));
            }
            in_examples = true;
            continue;
        }
        if line.starts_with('|') {
            if in_examples {
                let raw = raws.last_mut().ok_or_else(|| err(rel, i, "stray table"))?;
                raw.examples.push(cells(line));
                continue;
            }
            let steps = match &block {
                Some(Block::Background) => &mut background,
                Some(Block::Scenario { .. }) => match raws.last_mut() {
                    Some(r) => &mut r.steps,
                    None => return Err(err(rel, i, "table outside a scenario")),
                },
                None => return Err(err(rel, i, "table outside a scenario")),
            };
            let step = steps
                .last_mut()
                .ok_or_else(|| err(rel, i, "table before any step"))?;
            step.table.push(cells(line));
            continue;
        }
        if line.starts_with("\"\"\"") {
            // A doc string: its lines lose the indentation of the opening quotes.
            let indent = lines[i - 1].len() - lines[i - 1].trim_start().len();
            let mut doc = Vec::new();
            loop {
                let Some(l) = lines.get(i) else {
                    return Err(err(rel, i, "unterminated doc string"));
                };
                i += 1;
                if l.trim() == "\"\"\"" {
                    break;
                }
                let cut = l.len() - l.trim_start().len();
                doc.push(l.get(cut.min(indent)..).unwrap_or(""));
            }
            let steps = match &block {
                Some(Block::Background) => &mut background,
                _ => match raws.last_mut() {
                    Some(r) => &mut r.steps,
                    None => return Err(err(rel, i, "doc string outside a scenario")),
                },
            };
            let step = steps
                .last_mut()
                .ok_or_else(|| err(rel, i, "doc string before any step"))?;
            step.doc = Some(doc.join("\n"));
            continue;
        }
        if let Some(kw) = STEP_KEYWORDS.iter().find(|k| line.starts_with(**k)) {
            let step = Step {
                text: line[kw.len()..].trim().to_owned(),
                doc: None,
                table: Vec::new(),
            };
            match &block {
                Some(Block::Background) => background.push(step),
                Some(Block::Scenario { .. }) => match raws.last_mut() {
                    Some(r) => r.steps.push(step),
                    None => return Err(err(rel, i, "step outside a scenario")),
                },
                None => return Err(err(rel, i, "step outside a scenario")),
            }
            continue;
        }
        return Err(err(rel, i, format!("unrecognised line: {line}")));
    }

    let stem = rel.strip_suffix(".feature").unwrap_or(rel);
    let area = match stem.rfind('/') {
        Some(cut) => stem[..cut].to_owned(),
        None => String::new(),
    };
    let mut out = Vec::new();
    for (ordinal, raw) in raws.into_iter().enumerate() {
        let number = raw
            .name
            .strip_prefix('[')
            .and_then(|r| r.split(']').next())
            .map_or_else(|| (ordinal + 1).to_string(), str::to_owned);
        let mut steps = background.clone();
        steps.extend(raw.steps);
        if !raw.outline {
            out.push(Scenario {
                id: format!("{stem} [{number}]"),
                name: raw.name,
                area: area.clone(),
                steps,
            });
            continue;
        }
        let Some((header, rows)) = raw.examples.split_first() else {
            return Err(err(rel, 0, format!("outline {} has no examples", raw.name)));
        };
        for (k, row) in rows.iter().enumerate() {
            let fill = |s: &str| {
                let mut s = s.to_owned();
                for (h, v) in header.iter().zip(row) {
                    s = s.replace(&format!("<{h}>"), v);
                }
                s
            };
            out.push(Scenario {
                id: format!("{stem} [{number}.{}]", k + 1),
                name: fill(&raw.name),
                area: area.clone(),
                steps: steps
                    .iter()
                    .map(|st| Step {
                        text: fill(&st.text),
                        doc: st.doc.as_deref().map(fill),
                        table: st
                            .table
                            .iter()
                            .map(|r| r.iter().map(|c| fill(c)).collect())
                            .collect(),
                    })
                    .collect(),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FEATURE: &str = r#"
Feature: F1 - example

  Background:
    Given an empty graph

  Scenario: [1] Plain
    When executing query:
      """
      MATCH (n)
        RETURN n
      """
    Then the result should be, in any order:
      | n |
      | 'a\|b' |

  Scenario Outline: [2] Outline <x>
    When executing query:
      """
      RETURN <x> AS v
      """
    Then the result should be, in any order:
      | v   |
      | <y> |

    Examples:
      | x | y |
      | 1 | 1 |
      | 2 | 2 |
"#;

    #[test]
    fn parses_backgrounds_doc_strings_tables_and_outlines() {
        let s = parse_feature("clauses/x/F1.feature", FEATURE).expect("parses");
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].id, "clauses/x/F1 [1]");
        assert_eq!(s[0].area, "clauses/x");
        assert_eq!(s[0].steps[0].text, "an empty graph");
        assert_eq!(s[0].steps[1].doc.as_deref(), Some("MATCH (n)\n  RETURN n"));
        assert_eq!(s[0].steps[2].table[1], vec!["'a|b'".to_owned()]);
        assert_eq!(s[2].id, "clauses/x/F1 [2.2]");
        assert_eq!(s[2].name, "[2] Outline 2");
        assert_eq!(s[2].steps[1].doc.as_deref(), Some("RETURN 2 AS v"));
        assert_eq!(s[2].steps[2].table[1], vec!["2".to_owned()]);
    }
}
