//! The syntax tree of the Cypher subset, and its printer.
//!
//! `Display` prints text that parses back to an equal tree: expressions are printed with the
//! fewest parentheses their precedence needs, names are backtick-quoted when they would
//! otherwise read as keywords or not lex as one word.

mod print;

pub(crate) use print::is_reserved;

/// A whole query: an optional EXPLAIN/PROFILE prefix and its clauses.
#[derive(Clone, Debug, PartialEq)]
pub struct Statement {
    pub mode: Mode,
    pub clauses: Vec<Clause>,
    /// `UNION [ALL]` and the clauses of each further query (read-only queries only).
    pub unions: Vec<UnionPart>,
}

/// One query after `UNION` (`all`: `UNION ALL`, keeping duplicates).
#[derive(Clone, Debug, PartialEq)]
pub struct UnionPart {
    pub all: bool,
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

    /// The expressions the clause holds (for walks over a subquery's body).
    pub fn exprs(&self) -> Vec<&Expr> {
        fn projection(p: &Projection) -> Vec<&Expr> {
            p.items
                .iter()
                .map(|i| &i.expr)
                .chain(p.order_by.iter().map(|s| &s.expr))
                .chain(p.skip.as_ref())
                .chain(p.limit.as_ref())
                .collect()
        }
        match self {
            Clause::Match(m) => m
                .patterns
                .iter()
                .flat_map(PathPattern::property_exprs)
                .chain(m.where_.as_ref())
                .collect(),
            Clause::Unwind(u) => vec![&u.expr],
            Clause::With(w) => {
                let mut out = projection(&w.projection);
                out.extend(w.where_.as_ref());
                out
            }
            Clause::Return(p) => projection(p),
            // Write clauses never stand in a subquery.
            _ => Vec::new(),
        }
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

#[derive(Clone, Debug)]
pub struct ProjectionItem {
    pub expr: Expr,
    pub alias: Option<String>,
    /// The expression as written, for the column name of an unaliased RETURN item
    /// (`RETURN cOuNt( * )` names its column `cOuNt( * )`); None when built in code.
    pub text: Option<String>,
}

impl ProjectionItem {
    /// The item's column name: its alias, else its text as written, else its printed form.
    pub fn column_name(&self) -> String {
        match (&self.alias, &self.text, &self.expr) {
            (Some(a), _, _) => a.clone(),
            (None, _, Expr::Variable(v)) => v.clone(),
            (None, Some(t), _) => t.clone(),
            (None, None, e) => e.to_string(),
        }
    }
}

/// Items are equal when they compute the same expression under the same column name (the
/// printer writes a text that differs from the printed expression as an alias).
impl PartialEq for ProjectionItem {
    fn eq(&self, other: &Self) -> bool {
        self.expr == other.expr && self.column_name() == other.column_name()
    }
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
    /// `p = (a)-->(b)`: the path's variable.
    pub variable: Option<String>,
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

impl PathPattern {
    /// The expressions of the pattern's property maps.
    pub fn property_exprs(&self) -> Vec<&Expr> {
        let mut out: Vec<&Expr> = self.start.properties.iter().map(|(_, e)| e).collect();
        for (rel, node) in &self.hops {
            out.extend(rel.properties.iter().map(|(_, e)| e));
            out.extend(node.properties.iter().map(|(_, e)| e));
        }
        out
    }

    /// The variables the pattern names (nodes, relationships, the path).
    pub fn variables(&self) -> Vec<&str> {
        let mut out: Vec<&str> = self.variable.as_deref().into_iter().collect();
        out.extend(self.start.variable.as_deref());
        for (rel, node) in &self.hops {
            out.extend(rel.variable.as_deref());
            out.extend(node.variable.as_deref());
        }
        out
    }
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
    /// `list[from..to]` (either bound may be left out).
    Slice(Box<Expr>, Option<Box<Expr>>, Option<Box<Expr>>),
    /// `[x IN list WHERE predicate | projection]`
    Comprehension {
        variable: String,
        list: Box<Expr>,
        predicate: Option<Box<Expr>>,
        projection: Option<Box<Expr>>,
    },
    /// `all(x IN list WHERE predicate)`, `any`, `none`, `single`
    Quantified {
        quantifier: Quantifier,
        variable: String,
        list: Box<Expr>,
        predicate: Box<Expr>,
    },
    /// `reduce(acc = init, x IN list | expr)`
    Reduce {
        accumulator: String,
        init: Box<Expr>,
        variable: String,
        list: Box<Expr>,
        expr: Box<Expr>,
    },
    /// A pattern as an expression, `(a)-[:R]->(b)`: whether it matches (with `size()`, how
    /// many times).
    Pattern(Box<PathPattern>),
    /// `[p = (a)-->(b) WHERE predicate | projection]`
    PatternComprehension {
        pattern: Box<PathPattern>,
        predicate: Option<Box<Expr>>,
        projection: Box<Expr>,
    },
    /// `EXISTS { (a)-->(b) WHERE ... }` (`short`: written as a pattern) or
    /// `EXISTS { MATCH ... [WITH ...] [RETURN ...] }`: whether the read-only subquery has a row.
    Exists {
        clauses: Vec<Clause>,
        short: bool,
    },
    /// `CASE [operand] WHEN a THEN b ... [ELSE c] END`
    Case {
        operand: Option<Box<Expr>>,
        whens: Vec<(Expr, Expr)>,
        else_: Option<Box<Expr>>,
    },
}

/// The list predicates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantifier {
    All,
    Any,
    None,
    Single,
}

impl Quantifier {
    pub fn keyword(self) -> &'static str {
        match self {
            Quantifier::All => "all",
            Quantifier::Any => "any",
            Quantifier::None => "none",
            Quantifier::Single => "single",
        }
    }
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
            Expr::Property(..) | Expr::Index(..) | Expr::Slice(..) | Expr::HasLabels { .. } => {
                prec::POSTFIX
            }
            // A pattern is parenthesised as any operand: `(a)-->(b) - 1` would read its `-` as
            // the start of another relationship.
            Expr::Pattern(_) => 0,
            // A negative integer literal (only -9223372036854775808 is parsed as one) prints
            // with its sign.
            Expr::Literal(Literal::Int(i)) if *i < 0 => prec::UNARY,
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
        for c in self.children() {
            c.walk(f);
        }
    }

    /// The direct sub-expressions (for walks that must not recurse).
    pub fn children(&self) -> Vec<&Expr> {
        match self {
            Expr::Literal(_) | Expr::Param(_) | Expr::Variable(_) | Expr::CountStar => vec![],
            Expr::Property(e, _)
            | Expr::Unary(_, e)
            | Expr::IsNull { expr: e, .. }
            | Expr::HasLabels { expr: e, .. } => vec![e],
            Expr::Index(a, b) | Expr::Binary(_, a, b) => vec![a, b],
            Expr::List(items) | Expr::Call { args: items, .. } => items.iter().collect(),
            Expr::Map(entries) => entries.iter().map(|(_, e)| e).collect(),
            Expr::Slice(a, b, c) => std::iter::once(&**a)
                .chain(b.as_deref())
                .chain(c.as_deref())
                .collect(),
            Expr::Comprehension {
                list,
                predicate,
                projection,
                ..
            } => std::iter::once(&**list)
                .chain(predicate.as_deref())
                .chain(projection.as_deref())
                .collect(),
            Expr::Quantified {
                list, predicate, ..
            } => vec![list, predicate],
            Expr::Reduce {
                init, list, expr, ..
            } => vec![init, list, expr],
            Expr::Case {
                operand,
                whens,
                else_,
            } => operand
                .as_deref()
                .into_iter()
                .chain(whens.iter().flat_map(|(w, t)| [w, t]))
                .chain(else_.as_deref())
                .collect(),
            Expr::Pattern(p) => p.property_exprs(),
            Expr::Exists { clauses, .. } => clauses.iter().flat_map(Clause::exprs).collect(),
            Expr::PatternComprehension {
                pattern,
                predicate,
                projection,
            } => {
                let mut out = pattern.property_exprs();
                out.extend(predicate.as_deref());
                out.push(projection);
                out
            }
        }
    }
}
