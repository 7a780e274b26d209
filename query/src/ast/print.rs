//! The printer: `Display` for every tree type, text that parses back to an equal tree (the
//! fewest parentheses precedence needs; names in backticks when they would read as keywords).

use std::fmt::{self, Display, Formatter, Write};

use super::*;

/// Words the parser treats as keywords where a variable could stand; such variable names are
/// printed in backticks.
pub(crate) const RESERVED: &[&str] = &[
    "AND",
    "AS",
    "ASC",
    "ASCENDING",
    "BY",
    "CALL",
    "CASE",
    "CONTAINS",
    "CREATE",
    "DELETE",
    "DESC",
    "DESCENDING",
    "DETACH",
    "DISTINCT",
    "ELSE",
    "END",
    "ENDS",
    "EXPLAIN",
    "FALSE",
    "FOREACH",
    "IN",
    "IS",
    "LIMIT",
    "LOAD",
    "MATCH",
    "MERGE",
    "NOT",
    "NULL",
    "ON",
    "OPTIONAL",
    "OR",
    "ORDER",
    "PROFILE",
    "REMOVE",
    "RETURN",
    "SET",
    "SKIP",
    "STARTS",
    "THEN",
    "TRUE",
    "UNION",
    "UNWIND",
    "USE",
    "WHEN",
    "WHERE",
    "WITH",
    "XOR",
];

pub(crate) fn is_reserved(word: &str) -> bool {
    RESERVED.iter().any(|k| k.eq_ignore_ascii_case(word))
}

pub(super) fn is_plain_word(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

/// A name in a position where keywords are not expected (labels, types, property keys).
struct Name<'a>(&'a str);

impl Display for Name<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if is_plain_word(self.0) {
            f.write_str(self.0)
        } else {
            write!(f, "`{}`", self.0.replace('`', "``"))
        }
    }
}

/// A variable name: also quoted when it would read as a keyword.
struct Var<'a>(&'a str);

impl Display for Var<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if is_plain_word(self.0) && !is_reserved(self.0) {
            f.write_str(self.0)
        } else {
            write!(f, "`{}`", self.0.replace('`', "``"))
        }
    }
}

pub(super) fn write_string_literal(f: &mut Formatter<'_>, s: &str) -> fmt::Result {
    f.write_char('\'')?;
    for c in s.chars() {
        match c {
            '\'' => f.write_str("\\'")?,
            '\\' => f.write_str("\\\\")?,
            '\n' => f.write_str("\\n")?,
            '\t' => f.write_str("\\t")?,
            '\r' => f.write_str("\\r")?,
            c if c.is_control() => write!(f, "\\u{:04x}", c as u32)?,
            c => f.write_char(c)?,
        }
    }
    f.write_char('\'')
}

pub(super) fn join<T: Display>(f: &mut Formatter<'_>, items: &[T], sep: &str) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(sep)?;
        }
        item.fmt(f)?;
    }
    Ok(())
}

impl Display for Literal {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Null => f.write_str("null"),
            Literal::Bool(b) => write!(f, "{b}"),
            Literal::Int(i) => write!(f, "{i}"),
            // `{:?}` always prints a '.' or an exponent, so the text lexes as a float again.
            Literal::Float(x) => write!(f, "{x:?}"),
            Literal::String(s) => write_string_literal(f, s),
        }
    }
}

/// Prints `e`, in parentheses when it binds looser than `min`.
struct Operand<'a>(&'a Expr, u8);

impl Display for Operand<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if self.0.precedence() < self.1 {
            write!(f, "({})", self.0)
        } else {
            self.0.fmt(f)
        }
    }
}

pub(super) fn write_map(f: &mut Formatter<'_>, entries: &[(String, Expr)]) -> fmt::Result {
    f.write_char('{')?;
    for (i, (k, v)) in entries.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{}: {v}", Name(k))?;
    }
    f.write_char('}')
}

impl Display for Expr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Literal(l) => l.fmt(f),
            Expr::Param(p) => write!(f, "${}", p),
            Expr::Variable(v) => Var(v).fmt(f),
            Expr::Property(e, k) => write!(f, "{}.{}", Operand(e, prec::POSTFIX), Name(k)),
            Expr::Index(e, i) => write!(f, "{}[{i}]", Operand(e, prec::POSTFIX)),
            Expr::List(items) => {
                f.write_char('[')?;
                // `[x IN list]` would read back as a list comprehension.
                match items.first() {
                    Some(first @ Expr::Binary(BinaryOp::In, a, _))
                        if matches!(**a, Expr::Variable(_)) =>
                    {
                        write!(f, "({first})")?;
                        if items.len() > 1 {
                            f.write_str(", ")?;
                            join(f, &items[1..], ", ")?;
                        }
                    }
                    _ => join(f, items, ", ")?,
                }
                f.write_char(']')
            }
            Expr::Slice(e, from, to) => {
                write!(f, "{}[", Operand(e, prec::POSTFIX))?;
                if let Some(x) = from {
                    x.fmt(f)?;
                }
                f.write_str("..")?;
                if let Some(x) = to {
                    x.fmt(f)?;
                }
                f.write_char(']')
            }
            Expr::Comprehension {
                variable,
                list,
                predicate,
                projection,
            } => {
                write!(f, "[{} IN {list}", Var(variable))?;
                if let Some(p) = predicate {
                    write!(f, " WHERE {p}")?;
                }
                if let Some(p) = projection {
                    write!(f, " | {p}")?;
                }
                f.write_char(']')
            }
            Expr::Quantified {
                quantifier,
                variable,
                list,
                predicate,
            } => write!(
                f,
                "{}({} IN {list} WHERE {predicate})",
                quantifier.keyword(),
                Var(variable)
            ),
            Expr::Reduce {
                accumulator,
                init,
                variable,
                list,
                expr,
            } => write!(
                f,
                "reduce({} = {init}, {} IN {list} | {expr})",
                Var(accumulator),
                Var(variable)
            ),
            Expr::Pattern(p) => p.fmt(f),
            Expr::Exists { clauses, short } => {
                f.write_str("EXISTS { ")?;
                match (short, clauses.as_slice()) {
                    (true, [Clause::Match(m)]) => {
                        join(f, &m.patterns, ", ")?;
                        if let Some(w) = &m.where_ {
                            write!(f, " WHERE {w}")?;
                        }
                    }
                    _ => join(f, clauses, " ")?,
                }
                f.write_str(" }")
            }
            Expr::PatternComprehension {
                pattern,
                predicate,
                projection,
            } => {
                write!(f, "[{pattern}")?;
                if let Some(p) = predicate {
                    write!(f, " WHERE {p}")?;
                }
                write!(f, " | {projection}]")
            }
            Expr::Case {
                operand,
                whens,
                else_,
            } => {
                f.write_str("CASE")?;
                if let Some(o) = operand {
                    write!(f, " {o}")?;
                }
                for (w, t) in whens {
                    write!(f, " WHEN {w} THEN {t}")?;
                }
                if let Some(e) = else_ {
                    write!(f, " ELSE {e}")?;
                }
                f.write_str(" END")
            }
            Expr::Map(entries) => write_map(f, entries),
            Expr::Unary(UnaryOp::Not, e) => write!(f, "NOT {}", Operand(e, prec::NOT)),
            Expr::Unary(UnaryOp::Neg, e) => write!(f, "-{}", Operand(e, prec::UNARY)),
            Expr::Unary(UnaryOp::Plus, e) => write!(f, "+{}", Operand(e, prec::UNARY)),
            Expr::Binary(op, l, r) => {
                let p = op.precedence();
                // Left-associative: the right operand needs parentheses at equal precedence.
                // Comparisons chain (`a < b < c` is `a < b AND b < c`), so a comparison as the
                // left operand of another needs them too.
                let left = if p == prec::COMPARISON { p + 1 } else { p };
                write!(
                    f,
                    "{} {} {}",
                    Operand(l, left),
                    op.symbol(),
                    Operand(r, p + 1)
                )
            }
            Expr::IsNull { expr, negated } => {
                write!(
                    f,
                    "{} IS {}NULL",
                    Operand(expr, prec::PREDICATE),
                    if *negated { "NOT " } else { "" }
                )
            }
            Expr::Call {
                name,
                distinct,
                args,
            } => {
                // A namespaced name (`date.truncate`) prints its words joined by dots.
                if name.contains('.') && name.split('.').all(is_plain_word) {
                    write!(f, "{name}(")?;
                } else {
                    write!(f, "{}(", Name(name))?;
                }
                if *distinct {
                    f.write_str("DISTINCT ")?;
                }
                // `all(x IN l ...)` and `reduce(a = b, ...)` read back as list predicates.
                match args.split_first() {
                    Some((first @ Expr::Binary(BinaryOp::In | BinaryOp::Eq, a, _), rest))
                        if matches!(**a, Expr::Variable(_)) =>
                    {
                        write!(f, "({first})")?;
                        for x in rest {
                            write!(f, ", {x}")?;
                        }
                    }
                    _ => join(f, args, ", ")?,
                }
                f.write_char(')')
            }
            Expr::CountStar => f.write_str("count(*)"),
            Expr::HasLabels { expr, labels } => {
                // `(n:A):B` would print as `n:A:B`, which reads back as one label list.
                let min = if matches!(**expr, Expr::HasLabels { .. }) {
                    prec::ATOM + 1
                } else {
                    prec::POSTFIX
                };
                Operand(expr, min).fmt(f)?;
                labels.iter().try_for_each(|l| write!(f, ":{}", Name(l)))
            }
        }
    }
}

impl Display for NodePattern {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_char('(')?;
        if let Some(v) = &self.variable {
            Var(v).fmt(f)?;
        }
        for l in &self.labels {
            write!(f, ":{}", Name(l))?;
        }
        if !self.properties.is_empty() {
            if self.variable.is_some() || !self.labels.is_empty() {
                f.write_char(' ')?;
            }
            write_map(f, &self.properties)?;
        }
        f.write_char(')')
    }
}

impl Display for RelPattern {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(if self.direction == RelDirection::Left {
            "<-"
        } else {
            "-"
        })?;
        let bare = self.variable.is_none()
            && self.types.is_empty()
            && self.length.is_none()
            && self.properties.is_empty();
        if !bare {
            f.write_char('[')?;
            if let Some(v) = &self.variable {
                Var(v).fmt(f)?;
            }
            for (i, t) in self.types.iter().enumerate() {
                f.write_str(if i == 0 { ":" } else { "|" })?;
                Name(t).fmt(f)?;
            }
            if let Some(len) = &self.length {
                f.write_char('*')?;
                match (len.min, len.max) {
                    (Some(a), Some(b)) if a == b => write!(f, "{a}")?,
                    (min, max) => {
                        if let Some(a) = min {
                            write!(f, "{a}")?;
                        }
                        if min.is_some() || max.is_some() {
                            f.write_str("..")?;
                        }
                        if let Some(b) = max {
                            write!(f, "{b}")?;
                        }
                    }
                }
            }
            if !self.properties.is_empty() {
                f.write_char(' ')?;
                write_map(f, &self.properties)?;
            }
            f.write_char(']')?;
        }
        f.write_str(if self.direction == RelDirection::Right {
            "->"
        } else {
            "-"
        })
    }
}

impl Display for PathPattern {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if let Some(v) = &self.variable {
            write!(f, "{} = ", Var(v))?;
        }
        self.start.fmt(f)?;
        for (rel, node) in &self.hops {
            write!(f, "{rel}{node}")?;
        }
        Ok(())
    }
}

impl Display for ProjectionItem {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let printed = self.expr.to_string();
        f.write_str(&printed)?;
        let name = self.column_name();
        if self.alias.is_some() || (name != printed && !matches!(self.expr, Expr::Variable(_))) {
            write!(f, " AS {}", Var(&name))?;
        }
        Ok(())
    }
}

impl Display for SortItem {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        self.expr.fmt(f)?;
        if self.descending {
            f.write_str(" DESC")?;
        }
        Ok(())
    }
}

impl Display for Projection {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if self.distinct {
            f.write_str("DISTINCT ")?;
        }
        if self.star {
            f.write_char('*')?;
            if !self.items.is_empty() {
                f.write_str(", ")?;
            }
        }
        join(f, &self.items, ", ")?;
        if !self.order_by.is_empty() {
            f.write_str(" ORDER BY ")?;
            join(f, &self.order_by, ", ")?;
        }
        if let Some(s) = &self.skip {
            write!(f, " SKIP {s}")?;
        }
        if let Some(l) = &self.limit {
            write!(f, " LIMIT {l}")?;
        }
        Ok(())
    }
}

impl Display for SetItem {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            SetItem::Property {
                variable,
                key,
                value,
            } => write!(f, "{}.{} = {value}", Var(variable), Name(key)),
            SetItem::Replace { variable, value } => write!(f, "{} = {value}", Var(variable)),
            SetItem::Merge { variable, value } => write!(f, "{} += {value}", Var(variable)),
            SetItem::Labels { variable, labels } => {
                Var(variable).fmt(f)?;
                labels.iter().try_for_each(|l| write!(f, ":{}", Name(l)))
            }
        }
    }
}

impl Display for RemoveItem {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            RemoveItem::Property { variable, key } => write!(f, "{}.{}", Var(variable), Name(key)),
            RemoveItem::Labels { variable, labels } => {
                Var(variable).fmt(f)?;
                labels.iter().try_for_each(|l| write!(f, ":{}", Name(l)))
            }
        }
    }
}

impl Display for Clause {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Clause::Match(m) => {
                f.write_str(if m.optional {
                    "OPTIONAL MATCH "
                } else {
                    "MATCH "
                })?;
                join(f, &m.patterns, ", ")?;
                if let Some(w) = &m.where_ {
                    write!(f, " WHERE {w}")?;
                }
                Ok(())
            }
            Clause::Unwind(u) => write!(f, "UNWIND {} AS {}", u.expr, Var(&u.alias)),
            Clause::With(w) => {
                write!(f, "WITH {}", w.projection)?;
                if let Some(e) = &w.where_ {
                    write!(f, " WHERE {e}")?;
                }
                Ok(())
            }
            Clause::Return(p) => write!(f, "RETURN {p}"),
            Clause::Create(patterns) => {
                f.write_str("CREATE ")?;
                join(f, patterns, ", ")
            }
            Clause::Merge(m) => {
                write!(f, "MERGE {}", m.pattern)?;
                for a in &m.actions {
                    f.write_str(if a.on_create {
                        " ON CREATE SET "
                    } else {
                        " ON MATCH SET "
                    })?;
                    join(f, &a.items, ", ")?;
                }
                Ok(())
            }
            Clause::Set(items) => {
                f.write_str("SET ")?;
                join(f, items, ", ")
            }
            Clause::Remove(items) => {
                f.write_str("REMOVE ")?;
                join(f, items, ", ")
            }
            Clause::Delete(d) => {
                f.write_str(if d.detach {
                    "DETACH DELETE "
                } else {
                    "DELETE "
                })?;
                join(f, &d.exprs, ", ")
            }
        }
    }
}

impl Display for Statement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self.mode {
            Mode::Run => {}
            Mode::Explain => f.write_str("EXPLAIN ")?,
            Mode::Profile => f.write_str("PROFILE ")?,
        }
        join(f, &self.clauses, " ")?;
        for u in &self.unions {
            f.write_str(if u.all { " UNION ALL " } else { " UNION " })?;
            join(f, &u.clauses, " ")?;
        }
        Ok(())
    }
}

impl Statement {
    /// Whether the statement can change the graph, decided from the tree (never from the text).
    pub fn is_read_only(&self) -> bool {
        !self.clauses.iter().any(Clause::is_write)
    }

    /// The first write clause, if any (for error messages).
    pub fn first_write_clause(&self) -> Option<&'static str> {
        self.clauses
            .iter()
            .find(|c| c.is_write())
            .map(Clause::keyword)
    }
}
