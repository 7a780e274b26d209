//! Stages in funnel order: stages carry no order of their own in the graph, so their names
//! decide (shared by the pipeline report, the opportunities list and the dashboard).

/// The name under which opportunities without a stage are grouped.
pub const NO_STAGE: &str = "(none)";

/// Stage words in the order a sales funnel passes them (letters only, lower-cased, matched
/// as a prefix or contained word). Stages carry no order of their own in the graph.
const FUNNEL: &[&str] = &[
    "new", "lead", "prospect", "mql", "contact", "sql", "qualif", "discover", "meeting", "demo",
    "trial", "evaluat", "poc", "pilot", "solution", "proposal", "quote", "negotiat", "contract",
    "commit", "decision", "closing", "won", "lost",
];

/// Sort key of a stage: a leading number (`"2. Demo"`) first, else its place in [`FUNNEL`],
/// else after every known stage by name; the no-stage group last.
pub fn funnel_rank(stage: &str) -> (u8, u64, String) {
    let name = stage.trim().to_lowercase();
    if stage == NO_STAGE {
        return (3, 0, name);
    }
    let digits: String = name.chars().take_while(char::is_ascii_digit).collect();
    if let Ok(n) = digits.parse::<u64>() {
        return (0, n, name);
    }
    let squashed: String = name.chars().filter(char::is_ascii_alphabetic).collect();
    match FUNNEL.iter().position(|w| squashed.contains(w)) {
        Some(i) => (1, i as u64, name),
        None => (2, 0, name),
    }
}
