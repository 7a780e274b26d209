//! The syntax tree of the Cypher subset, and its printer.
//!
//! `Display` prints text that parses back to an equal tree: expressions are printed with the
//! fewest parentheses their precedence needs, names are backtick-quoted when they would
//! otherwise read as keywords or not lex as one word.

use std::fmt::{self, Display, Formatter, Write};

/// A whole query: an optional EXPLAIN/PROFILE prefix and its clauses.
#[derive(Clone, Debug, PartialEq)]
pub struct Statement {
    pub mode: Mode,
    pub clauses: Vec<Clause>,
}

/// Whether to run the query, only plan it, or run it and measure each operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mode {
    #[default]
    Run,
    Explain,
    Profile,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Clause {
    Match(Match),
    Unwind(Unwind),
    With(With),
    Return(Projection),
    Create(Vec<PathPattern>),
    Merge(Merge),
    Set(Vec<SetItem>),
    Remove(Vec<RemoveItem>),
    Delete(Delete),
}

impl Clause {
    /// Whether this clause changes the graph.
    pub fn is_write(&self) -> bool {
        matches!(
            self,
            Clause::Create(_)
                | Clause::Merge(_)
                | Clause::Set(_)
                | Clause::Remove(_)
                | Clause::Delete(_)
        )
    }

    /// The clause keyword, for messages.
    pub fn keyword(&self) -> &'static str {
        match self {
            Clause::Match(m) if m.optional => "OPTIONAL MATCH",
            Clause::Match(_) => "MATCH",
            Clause::Unwind(_) => "UNWIND",
            Clause::With(_) => "WITH",
            Clause::Return(_) => "RETURN",
            Clause::Create(_) => "CREATE",
            Clause::Merge(_) => "MERGE",
            Clause::Set(_) => "SET",
            Clause::Remove(_) => "REMOVE",
            Clause::Delete(d) if d.detach => "DETACH DELETE",
            Clause::Delete(_) => "DELETE",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Match {
    pub optional: bool,
    pub patterns: Vec<PathPattern>,
    pub where_: Option<Expr>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Unwind {
    pub expr: Expr,
    pub alias: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct With {
    pub projection: Projection,
    pub where_: Option<Expr>,
}

/// The body shared by WITH and RETURN.
#[derive(Clone, Debug, PartialEq)]
pub struct Projection {
    pub distinct: bool,
    /// `*`: every variable in scope (may be combined with further items).
    pub star: bool,
    pub items: Vec<ProjectionItem>,
    pub order_by: Vec<SortItem>,
    pub skip: Option<Expr>,
    pub limit: Option<Expr>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ProjectionItem {
    pub expr: Expr,
    pub alias: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SortItem {
    pub expr: Expr,
    pub descending: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Merge {
    pub pattern: PathPattern,
    pub actions: Vec<MergeAction>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MergeAction {
    pub on_create: bool,
    pub items: Vec<SetItem>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum SetItem {
    /// `n.key = expr`
    Property {
        variable: String,
        key: String,
        value: Expr,
    },
    /// `n = {map}`: replaces every property.
    Replace { variable: String, value: Expr },
    /// `n += {map}`: merges into the properties.
    Merge { variable: String, value: Expr },
    /// `n:Label:Other`
    Labels {
        variable: String,
        labels: Vec<String>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub enum RemoveItem {
    Property {
        variable: String,
        key: String,
    },
    Labels {
        variable: String,
        labels: Vec<String>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Delete {
    pub detach: bool,
    pub exprs: Vec<Expr>,
}

/// `(a)-[r]->(b)<-(c)...`: a start node and a chain of hops.
#[derive(Clone, Debug, PartialEq)]
pub struct PathPattern {
    pub start: NodePattern,
    pub hops: Vec<(RelPattern, NodePattern)>,
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct NodePattern {
    pub variable: Option<String>,
    pub labels: Vec<String>,
    pub properties: Vec<(String, Expr)>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct RelPattern {
    pub variable: Option<String>,
    pub types: Vec<String>,
    pub direction: RelDirection,
    /// `*min..max`; `None` for a single hop.
    pub length: Option<VarLength>,
    pub properties: Vec<(String, Expr)>,
}

/// Direction as written, left to right.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelDirection {
    /// `-->`
    Right,
    /// `<--`
    Left,
    /// `--`
    Both,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VarLength {
    pub min: Option<u32>,
    pub max: Option<u32>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    Null,
    Bool(bool),
    /// Always non-negative as parsed; `-1` is `Neg(1)`.
    Int(i64),
    Float(f64),
    String(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    Or,
    Xor,
    And,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
    StartsWith,
    EndsWith,
    Contains,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    Not,
    Neg,
    Plus,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Literal(Literal),
    Param(String),
    Variable(String),
    Property(Box<Expr>, String),
    Index(Box<Expr>, Box<Expr>),
    List(Vec<Expr>),
    Map(Vec<(String, Expr)>),
    Unary(UnaryOp, Box<Expr>),
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    /// `e IS NULL` (negated: `e IS NOT NULL`)
    IsNull {
        expr: Box<Expr>,
        negated: bool,
    },
    /// A function or aggregate call; the name keeps the case it was written in.
    Call {
        name: String,
        distinct: bool,
        args: Vec<Expr>,
    },
    /// `count(*)`
    CountStar,
    /// `n:Label:Other`: whether the node carries every label.
    HasLabels {
        expr: Box<Expr>,
        labels: Vec<String>,
    },
}

/// Binding strength, loosest first. Used by the parser's levels and by the printer.
pub(crate) mod prec {
    pub const OR: u8 = 1;
    pub const XOR: u8 = 2;
    pub const AND: u8 = 3;
    pub const NOT: u8 = 4;
    pub const COMPARISON: u8 = 5;
    pub const PREDICATE: u8 = 6;
    pub const ADDITIVE: u8 = 7;
    pub const MULTIPLICATIVE: u8 = 8;
    pub const POWER: u8 = 9;
    pub const UNARY: u8 = 10;
    pub const POSTFIX: u8 = 11;
    pub const ATOM: u8 = 12;
}

impl BinaryOp {
    pub(crate) fn precedence(self) -> u8 {
        use BinaryOp::*;
        match self {
            Or => prec::OR,
            Xor => prec::XOR,
            And => prec::AND,
            Eq | Ne | Lt | Le | Gt | Ge => prec::COMPARISON,
            In | StartsWith | EndsWith | Contains => prec::PREDICATE,
            Add | Sub => prec::ADDITIVE,
            Mul | Div | Mod => prec::MULTIPLICATIVE,
            Pow => prec::POWER,
        }
    }

    pub(crate) fn symbol(self) -> &'static str {
        use BinaryOp::*;
        match self {
            Or => "OR",
            Xor => "XOR",
            And => "AND",
            Eq => "=",
            Ne => "<>",
            Lt => "<",
            Le => "<=",
            Gt => ">",
            Ge => ">=",
            In => "IN",
            StartsWith => "STARTS WITH",
            EndsWith => "ENDS WITH",
            Contains => "CONTAINS",
            Add => "+",
            Sub => "-",
            Mul => "*",
            Div => "/",
            Mod => "%",
            Pow => "^",
        }
    }
}

impl Expr {
    pub(crate) fn precedence(&self) -> u8 {
        match self {
            Expr::Binary(op, _, _) => op.precedence(),
            Expr::Unary(UnaryOp::Not, _) => prec::NOT,
            Expr::Unary(_, _) => prec::UNARY,
            Expr::IsNull { .. } => prec::PREDICATE,
            Expr::Property(..) | Expr::Index(..) | Expr::HasLabels { .. } => prec::POSTFIX,
            _ => prec::ATOM,
        }
    }

    /// Whether the expression contains an aggregate call anywhere.
    pub fn contains_aggregate(&self) -> bool {
        let mut found = false;
        self.walk(&mut |e| {
            if e.is_aggregate_call() {
                found = true;
            }
        });
        found
    }

    pub(crate) fn is_aggregate_call(&self) -> bool {
        match self {
            Expr::CountStar => true,
            Expr::Call { name, .. } => crate::functions::is_aggregate(name),
            _ => false,
        }
    }

    /// Visits this expression and every sub-expression, parents first.
    pub fn walk(&self, f: &mut dyn FnMut(&Expr)) {
        f(self);
        match self {
            Expr::Literal(_) | Expr::Param(_) | Expr::Variable(_) | Expr::CountStar => {}
            Expr::Property(e, _)
            | Expr::Unary(_, e)
            | Expr::IsNull { expr: e, .. }
            | Expr::HasLabels { expr: e, .. } => e.walk(f),
            Expr::Index(a, b) | Expr::Binary(_, a, b) => {
                a.walk(f);
                b.walk(f);
            }
            Expr::List(items) | Expr::Call { args: items, .. } => {
                items.iter().for_each(|e| e.walk(f))
            }
            Expr::Map(entries) => entries.iter().for_each(|(_, e)| e.walk(f)),
        }
    }
}

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

fn is_plain_word(name: &str) -> bool {
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

fn write_string_literal(f: &mut Formatter<'_>, s: &str) -> fmt::Result {
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

fn join<T: Display>(f: &mut Formatter<'_>, items: &[T], sep: &str) -> fmt::Result {
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

fn write_map(f: &mut Formatter<'_>, entries: &[(String, Expr)]) -> fmt::Result {
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
                join(f, items, ", ")?;
                f.write_char(']')
            }
            Expr::Map(entries) => write_map(f, entries),
            Expr::Unary(UnaryOp::Not, e) => write!(f, "NOT {}", Operand(e, prec::NOT)),
            Expr::Unary(UnaryOp::Neg, e) => write!(f, "-{}", Operand(e, prec::UNARY)),
            Expr::Unary(UnaryOp::Plus, e) => write!(f, "+{}", Operand(e, prec::UNARY)),
            Expr::Binary(op, l, r) => {
                let p = op.precedence();
                // Left-associative: the right operand needs parentheses at equal precedence.
                write!(f, "{} {} {}", Operand(l, p), op.symbol(), Operand(r, p + 1))
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
                write!(f, "{}(", Name(name))?;
                if *distinct {
                    f.write_str("DISTINCT ")?;
                }
                join(f, args, ", ")?;
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
        self.start.fmt(f)?;
        for (rel, node) in &self.hops {
            write!(f, "{rel}{node}")?;
        }
        Ok(())
    }
}

impl Display for ProjectionItem {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        self.expr.fmt(f)?;
        if let Some(a) = &self.alias {
            write!(f, " AS {}", Var(a))?;
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
        join(f, &self.clauses, " ")
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
