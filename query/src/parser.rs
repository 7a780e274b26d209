//! Parser: tokens -> [`Statement`], one nom function per grammar rule.
//!
//! The input is the token slice produced by the lexer. Every primitive that fails records what
//! it expected at the furthest position reached; when the statement does not parse, that
//! furthest point becomes the "expected X, found Y" error (the approach of sqlparser-rs, in
//! nom's combinator style). Constructs outside the subset fail hard (`nom::Err::Failure`)
//! with an `unsupported` error, so no alternative can swallow them.

use std::cell::{Cell, RefCell};

use nom::combinator::opt;
use nom::multi::separated_list1;
use nom::{IResult, InputLength};

use crate::ast::*;
use crate::error::{position_of, QueryError};
use crate::lexer::{tokenize, Tok, Token};

/// How deeply expressions may nest (parentheses, lists, maps, calls, NOT and unary minus)
/// before the parser gives up: a guard against stack overflow on hostile input.
pub const MAX_DEPTH: u32 = 64;

/// How long the chains of binary operators, predicates and postfix lookups on one path of the
/// tree may grow in total (`a + b + c ...` nests to the left without recursing in the parser,
/// but printing and evaluating recurse over it).
pub const MAX_CHAIN: u32 = 128;

/// The deepest expression tree accepted, however it was written.
pub const MAX_TREE_DEPTH: u32 = 160;

/// Parses one statement.
pub fn parse(text: &str) -> Result<Statement, QueryError> {
    let tokens = tokenize(text)?;
    let ctx = Ctx {
        depth: Cell::new(0),
        chain: Cell::new(0),
        furthest: RefCell::new((usize::MAX, Vec::new())),
    };
    let input = Input {
        toks: &tokens,
        ctx: &ctx,
    };
    match statement(input) {
        Ok((_, stmt)) => Ok(stmt),
        Err(nom::Err::Failure(PErr::Fatal { offset, kind }))
        | Err(nom::Err::Error(PErr::Fatal { offset, kind })) => {
            let position = position_of(text, offset);
            Err(match kind {
                Fatal::Unsupported(what) => QueryError::Unsupported { position, what },
                Fatal::Invalid(message) => QueryError::InvalidToken { position, message },
                Fatal::TooDeep(limit) => QueryError::TooDeep { position, limit },
            })
        }
        Err(_) => {
            let (remaining, expected) = ctx.furthest.take();
            let index = tokens
                .len()
                .saturating_sub(remaining)
                .min(tokens.len().saturating_sub(1));
            let token = &tokens[index];
            Err(QueryError::Syntax {
                position: position_of(text, token.offset),
                expected: describe_expected(expected),
                found: token.tok.describe(),
            })
        }
    }
}

fn describe_expected(mut expected: Vec<&'static str>) -> String {
    let mut seen = Vec::new();
    expected.retain(|e| {
        let fresh = !seen.contains(e);
        seen.push(*e);
        fresh
    });
    match expected.len() {
        0 => "something else".to_owned(),
        1 => expected[0].to_owned(),
        n => format!("{} or {}", expected[..n - 1].join(", "), expected[n - 1]),
    }
}

struct Ctx {
    depth: Cell<u32>,
    chain: Cell<u32>,
    /// (tokens remaining at the furthest failure, what was expected there)
    furthest: RefCell<(usize, Vec<&'static str>)>,
}

#[derive(Clone, Copy)]
struct Input<'a> {
    toks: &'a [Token],
    ctx: &'a Ctx,
}

impl std::fmt::Debug for Input<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Input({:?})", self.toks.first())
    }
}

impl InputLength for Input<'_> {
    fn input_len(&self) -> usize {
        self.toks.len()
    }
}

impl<'a> Input<'a> {
    fn peek(&self) -> &'a Tok {
        self.toks.first().map_or(&Tok::Eof, |t| &t.tok)
    }
    fn peek_at(&self, n: usize) -> &'a Tok {
        self.toks.get(n).map_or(&Tok::Eof, |t| &t.tok)
    }
    fn offset(&self) -> usize {
        self.toks.first().map_or(0, |t| t.offset)
    }
    fn advance(self, n: usize) -> Self {
        Input {
            toks: self.toks.get(n..).unwrap_or(&[]),
            ctx: self.ctx,
        }
    }
    fn is_kw(&self, word: &str) -> bool {
        matches!(self.peek(), Tok::Ident(w) if w.eq_ignore_ascii_case(word))
    }
    fn is_kw_at(&self, n: usize, word: &str) -> bool {
        matches!(self.peek_at(n), Tok::Ident(w) if w.eq_ignore_ascii_case(word))
    }
    fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Tok::Punct(q) if *q == p)
    }

    /// Records a failed expectation here and returns the backtracking error.
    fn expected(self, what: &'static str) -> nom::Err<PErr> {
        let mut furthest = self.ctx.furthest.borrow_mut();
        let remaining = self.toks.len();
        if remaining < furthest.0 {
            *furthest = (remaining, vec![what]);
        } else if remaining == furthest.0 {
            furthest.1.push(what);
        }
        nom::Err::Error(PErr::Backtrack)
    }

    fn fatal(self, kind: Fatal) -> nom::Err<PErr> {
        nom::Err::Failure(PErr::Fatal {
            offset: self.offset(),
            kind,
        })
    }

    fn unsupported(self, what: impl Into<String>) -> nom::Err<PErr> {
        self.fatal(Fatal::Unsupported(what.into()))
    }
}

#[derive(Debug)]
enum PErr {
    Backtrack,
    Fatal { offset: usize, kind: Fatal },
}

#[derive(Debug)]
enum Fatal {
    Unsupported(String),
    Invalid(String),
    TooDeep(u32),
}

impl<'a> nom::error::ParseError<Input<'a>> for PErr {
    fn from_error_kind(_input: Input<'a>, _kind: nom::error::ErrorKind) -> Self {
        PErr::Backtrack
    }
    fn append(_input: Input<'a>, _kind: nom::error::ErrorKind, other: Self) -> Self {
        other
    }
    fn or(self, other: Self) -> Self {
        match self {
            PErr::Fatal { .. } => self,
            PErr::Backtrack => other,
        }
    }
}

type PResult<'a, T> = IResult<Input<'a>, T, PErr>;

/// Counts nesting while alive; fails once `MAX_DEPTH` is passed.
struct DepthGuard<'a>(&'a Cell<u32>);

impl<'a> DepthGuard<'a> {
    fn enter(i: Input<'a>) -> Result<Self, nom::Err<PErr>> {
        Self::count(i, &i.ctx.depth, MAX_DEPTH)
    }

    fn chain(i: Input<'a>) -> Result<Self, nom::Err<PErr>> {
        Self::count(i, &i.ctx.chain, MAX_CHAIN)
    }

    fn count(i: Input<'a>, counter: &'a Cell<u32>, limit: u32) -> Result<Self, nom::Err<PErr>> {
        let n = counter.get() + 1;
        if n > limit {
            return Err(i.fatal(Fatal::TooDeep(limit)));
        }
        counter.set(n);
        Ok(DepthGuard(counter))
    }
}

impl Drop for DepthGuard<'_> {
    fn drop(&mut self) {
        self.0.set(self.0.get().saturating_sub(1));
    }
}

// ---- primitives -------------------------------------------------------------------------------

/// A keyword, in any letter case.
fn kw<'a>(word: &'static str) -> impl Fn(Input<'a>) -> PResult<'a, ()> {
    move |i: Input<'a>| {
        if i.is_kw(word) {
            Ok((i.advance(1), ()))
        } else {
            Err(i.expected(word))
        }
    }
}

fn punct<'a>(p: &'static str) -> impl Fn(Input<'a>) -> PResult<'a, ()> {
    move |i: Input<'a>| {
        if i.is_punct(p) {
            Ok((i.advance(1), ()))
        } else {
            Err(i.expected(p))
        }
    }
}

// variable = word that is not a keyword | quoted_name
fn variable(i: Input<'_>) -> PResult<'_, String> {
    match i.peek() {
        Tok::Ident(w) if !is_reserved(w) => Ok((i.advance(1), w.clone())),
        Tok::Quoted(w) => Ok((i.advance(1), w.clone())),
        _ => Err(i.expected("a variable name")),
    }
}

// name = word | quoted_name      (labels, relationship types, property keys: keywords allowed)
fn name(i: Input<'_>) -> PResult<'_, String> {
    match i.peek() {
        Tok::Ident(w) | Tok::Quoted(w) => Ok((i.advance(1), w.clone())),
        _ => Err(i.expected("a name")),
    }
}

// unsigned = digits   (a small non-negative integer, for hop bounds)
fn unsigned(i: Input<'_>) -> PResult<'_, u32> {
    match i.peek() {
        Tok::Integer(d) => match d.parse::<u32>() {
            Ok(n) => Ok((i.advance(1), n)),
            Err(_) => Err(i.fatal(Fatal::Invalid(format!("hop count {d} is too large")))),
        },
        _ => Err(i.expected("an integer")),
    }
}

// ---- statement and clauses --------------------------------------------------------------------

/// Clause keywords outside the subset, refused with a clear message.
const UNSUPPORTED_CLAUSES: &[&str] = &[
    "CALL",
    "LOAD",
    "FOREACH",
    "USE",
    "UNION",
    "DROP",
    "SHOW",
    "START",
    "STOP",
    "GRANT",
    "DENY",
    "REVOKE",
    "ALTER",
    "TERMINATE",
    "FINISH",
    "INSERT",
    "FILTER",
    "LET",
    "ENABLE",
    "RENAME",
];

// statement = [EXPLAIN | PROFILE] clause { clause } [";"] end_of_input
fn statement(i: Input<'_>) -> PResult<'_, Statement> {
    let (i, mode) = if i.is_kw("EXPLAIN") {
        (i.advance(1), Mode::Explain)
    } else if i.is_kw("PROFILE") {
        (i.advance(1), Mode::Profile)
    } else {
        (i, Mode::Run)
    };
    let mut clauses = Vec::new();
    let mut i = i;
    loop {
        match clause(i) {
            Ok((rest, c)) => {
                let is_return = matches!(c, Clause::Return(_));
                clauses.push(c);
                i = rest;
                if is_return {
                    // RETURN ends a query.
                    break;
                }
            }
            Err(nom::Err::Error(_)) => break,
            Err(e) => return Err(e),
        }
    }
    if clauses.is_empty() {
        return Err(nom::Err::Error(PErr::Backtrack));
    }
    let last_ok =
        matches!(clauses.last(), Some(c) if c.is_write() || matches!(c, Clause::Return(_)));
    if i.is_kw("UNION") {
        return Err(i.unsupported("UNION"));
    }
    let (i, _) = opt(punct(";"))(i)?;
    if !matches!(i.peek(), Tok::Eof) {
        return Err(i.expected("end of input"));
    }
    if !last_ok {
        return Err(i.expected("RETURN or an updating clause (CREATE, MERGE, SET, REMOVE, DELETE)"));
    }
    Ok((i, Statement { mode, clauses }))
}

// clause = match | unwind | with | return | create | merge | set | remove | delete
fn clause(i: Input<'_>) -> PResult<'_, Clause> {
    if let Tok::Ident(w) = i.peek() {
        if let Some(k) = UNSUPPORTED_CLAUSES
            .iter()
            .find(|k| k.eq_ignore_ascii_case(w))
        {
            return Err(i.unsupported(format!("the {k} clause")));
        }
        if (w.eq_ignore_ascii_case("CREATE") || w.eq_ignore_ascii_case("MERGE"))
            && matches!(i.peek_at(1), Tok::Ident(_))
        {
            return Err(i.unsupported("schema and administration commands"));
        }
    }
    if i.is_kw("OPTIONAL") || i.is_kw("MATCH") {
        return match_clause(i);
    }
    if i.is_kw("UNWIND") {
        return unwind_clause(i);
    }
    if i.is_kw("WITH") {
        return with_clause(i);
    }
    if i.is_kw("RETURN") {
        return return_clause(i);
    }
    if i.is_kw("CREATE") {
        return create_clause(i);
    }
    if i.is_kw("MERGE") {
        return merge_clause(i);
    }
    if i.is_kw("SET") {
        return set_clause(i);
    }
    if i.is_kw("REMOVE") {
        return remove_clause(i);
    }
    if i.is_kw("DELETE") || i.is_kw("DETACH") {
        return delete_clause(i);
    }
    for k in [
        "MATCH",
        "OPTIONAL MATCH",
        "UNWIND",
        "WITH",
        "RETURN",
        "CREATE",
        "MERGE",
        "SET",
        "REMOVE",
        "DELETE",
    ] {
        i.expected(k);
    }
    Err(nom::Err::Error(PErr::Backtrack))
}

// match = [OPTIONAL] MATCH pattern_list [WHERE expr]
fn match_clause(i: Input<'_>) -> PResult<'_, Clause> {
    let (i, optional) = opt(kw("OPTIONAL"))(i)?;
    let (i, _) = kw("MATCH")(i)?;
    let (i, patterns) = pattern_list(i)?;
    let (i, where_) = opt_where(i)?;
    Ok((
        i,
        Clause::Match(Match {
            optional: optional.is_some(),
            patterns,
            where_,
        }),
    ))
}

// opt_where = [WHERE expr]
fn opt_where(i: Input<'_>) -> PResult<'_, Option<Expr>> {
    if i.is_kw("WHERE") {
        let (i, e) = expr(i.advance(1))?;
        Ok((i, Some(e)))
    } else {
        i.expected("WHERE");
        Ok((i, None))
    }
}

// unwind = UNWIND expr AS variable
fn unwind_clause(i: Input<'_>) -> PResult<'_, Clause> {
    let (i, _) = kw("UNWIND")(i)?;
    let (i, e) = expr(i)?;
    let (i, _) = kw("AS")(i)?;
    let (i, alias) = variable(i)?;
    Ok((i, Clause::Unwind(Unwind { expr: e, alias })))
}

// with = WITH projection [WHERE expr]
fn with_clause(i: Input<'_>) -> PResult<'_, Clause> {
    let (i, _) = kw("WITH")(i)?;
    let (i, projection) = projection(i)?;
    let (i, where_) = opt_where(i)?;
    Ok((i, Clause::With(With { projection, where_ })))
}

// return = RETURN projection
fn return_clause(i: Input<'_>) -> PResult<'_, Clause> {
    let (i, _) = kw("RETURN")(i)?;
    let (i, p) = projection(i)?;
    Ok((i, Clause::Return(p)))
}

// projection = [DISTINCT] ("*" ["," item_list] | item_list) [ORDER BY sort_list] [SKIP expr] [LIMIT expr]
fn projection(i: Input<'_>) -> PResult<'_, Projection> {
    let (i, distinct) = opt(kw("DISTINCT"))(i)?;
    let (i, star, items) = if i.is_punct("*") {
        let i = i.advance(1);
        if i.is_punct(",") {
            let (i, items) = separated_list1(punct(","), projection_item)(i.advance(1))?;
            (i, true, items)
        } else {
            (i, true, Vec::new())
        }
    } else {
        let (i, items) = separated_list1(punct(","), projection_item)(i)?;
        (i, false, items)
    };
    let (i, order_by) = if i.is_kw("ORDER") {
        let (i, _) = kw("BY")(i.advance(1))?;
        separated_list1(punct(","), sort_item)(i)?
    } else {
        i.expected("ORDER BY");
        (i, Vec::new())
    };
    let (i, skip) = if i.is_kw("SKIP") {
        let (i, e) = expr(i.advance(1))?;
        (i, Some(e))
    } else {
        i.expected("SKIP");
        (i, None)
    };
    let (i, limit) = if i.is_kw("LIMIT") {
        let (i, e) = expr(i.advance(1))?;
        (i, Some(e))
    } else {
        i.expected("LIMIT");
        (i, None)
    };
    Ok((
        i,
        Projection {
            distinct: distinct.is_some(),
            star,
            items,
            order_by,
            skip,
            limit,
        },
    ))
}

// projection_item = expr [AS variable]
fn projection_item(i: Input<'_>) -> PResult<'_, ProjectionItem> {
    let (i, e) = expr(i)?;
    if i.is_kw("AS") {
        let (i, alias) = variable(i.advance(1))?;
        Ok((
            i,
            ProjectionItem {
                expr: e,
                alias: Some(alias),
            },
        ))
    } else {
        i.expected("AS");
        Ok((
            i,
            ProjectionItem {
                expr: e,
                alias: None,
            },
        ))
    }
}

// sort_item = expr [ASC | ASCENDING | DESC | DESCENDING]
fn sort_item(i: Input<'_>) -> PResult<'_, SortItem> {
    let (i, e) = expr(i)?;
    if i.is_kw("DESC") || i.is_kw("DESCENDING") {
        return Ok((
            i.advance(1),
            SortItem {
                expr: e,
                descending: true,
            },
        ));
    }
    if i.is_kw("ASC") || i.is_kw("ASCENDING") {
        return Ok((
            i.advance(1),
            SortItem {
                expr: e,
                descending: false,
            },
        ));
    }
    i.expected("ASC");
    i.expected("DESC");
    Ok((
        i,
        SortItem {
            expr: e,
            descending: false,
        },
    ))
}

// create = CREATE pattern_list
fn create_clause(i: Input<'_>) -> PResult<'_, Clause> {
    let (i, _) = kw("CREATE")(i)?;
    let (i, patterns) = pattern_list(i)?;
    Ok((i, Clause::Create(patterns)))
}

// merge = MERGE path_pattern { ON (CREATE | MATCH) SET set_item {"," set_item} }
fn merge_clause(i: Input<'_>) -> PResult<'_, Clause> {
    let (i, _) = kw("MERGE")(i)?;
    let (mut i, pattern) = path_pattern(i)?;
    let mut actions = Vec::new();
    while i.is_kw("ON") {
        let j = i.advance(1);
        let on_create = if j.is_kw("CREATE") {
            true
        } else if j.is_kw("MATCH") {
            false
        } else {
            j.expected("CREATE");
            return Err(j.expected("MATCH"));
        };
        let (j, _) = kw("SET")(j.advance(1))?;
        let (j, items) = separated_list1(punct(","), set_item)(j)?;
        actions.push(MergeAction { on_create, items });
        i = j;
    }
    i.expected("ON");
    Ok((i, Clause::Merge(Merge { pattern, actions })))
}

// set = SET set_item { "," set_item }
fn set_clause(i: Input<'_>) -> PResult<'_, Clause> {
    let (i, _) = kw("SET")(i)?;
    let (i, items) = separated_list1(punct(","), set_item)(i)?;
    Ok((i, Clause::Set(items)))
}

// set_item = variable "." name "=" expr | variable "=" expr | variable "+=" expr | variable label_list
fn set_item(i: Input<'_>) -> PResult<'_, SetItem> {
    let (i, v) = variable(i)?;
    if i.is_punct(".") {
        let (i, key) = name(i.advance(1))?;
        if i.is_punct(".") {
            return Err(i.unsupported("setting a nested property"));
        }
        let (i, _) = punct("=")(i)?;
        let (i, value) = expr(i)?;
        return Ok((
            i,
            SetItem::Property {
                variable: v,
                key,
                value,
            },
        ));
    }
    if i.is_punct("=") {
        let (i, value) = expr(i.advance(1))?;
        return Ok((i, SetItem::Replace { variable: v, value }));
    }
    if i.is_punct("+=") {
        let (i, value) = expr(i.advance(1))?;
        return Ok((i, SetItem::Merge { variable: v, value }));
    }
    if i.is_punct(":") {
        let (i, labels) = label_list(i)?;
        return Ok((
            i,
            SetItem::Labels {
                variable: v,
                labels,
            },
        ));
    }
    for e in [".", "=", "+=", ":"] {
        i.expected(e);
    }
    Err(nom::Err::Error(PErr::Backtrack))
}

// label_list = ":" name { ":" name }
fn label_list(i: Input<'_>) -> PResult<'_, Vec<String>> {
    let (mut i, first) = {
        let (i, _) = punct(":")(i)?;
        name(i)?
    };
    let mut labels = vec![first];
    while i.is_punct(":") {
        let (j, l) = name(i.advance(1))?;
        labels.push(l);
        i = j;
    }
    Ok((i, labels))
}

// remove = REMOVE remove_item { "," remove_item }
fn remove_clause(i: Input<'_>) -> PResult<'_, Clause> {
    let (i, _) = kw("REMOVE")(i)?;
    let (i, items) = separated_list1(punct(","), remove_item)(i)?;
    Ok((i, Clause::Remove(items)))
}

// remove_item = variable "." name | variable label_list
fn remove_item(i: Input<'_>) -> PResult<'_, RemoveItem> {
    let (i, v) = variable(i)?;
    if i.is_punct(".") {
        let (i, key) = name(i.advance(1))?;
        return Ok((i, RemoveItem::Property { variable: v, key }));
    }
    if i.is_punct(":") {
        let (i, labels) = label_list(i)?;
        return Ok((
            i,
            RemoveItem::Labels {
                variable: v,
                labels,
            },
        ));
    }
    i.expected(".");
    Err(i.expected(":"))
}

// delete = [DETACH] DELETE expr { "," expr }
fn delete_clause(i: Input<'_>) -> PResult<'_, Clause> {
    let (i, detach) = opt(kw("DETACH"))(i)?;
    let (i, _) = kw("DELETE")(i)?;
    let (i, exprs) = separated_list1(punct(","), expr)(i)?;
    Ok((
        i,
        Clause::Delete(Delete {
            detach: detach.is_some(),
            exprs,
        }),
    ))
}

// ---- patterns ---------------------------------------------------------------------------------

// pattern_list = path_pattern { "," path_pattern }
fn pattern_list(i: Input<'_>) -> PResult<'_, Vec<PathPattern>> {
    separated_list1(punct(","), path_pattern)(i)
}

// path_pattern = node_pattern { rel_pattern node_pattern }
fn path_pattern(i: Input<'_>) -> PResult<'_, PathPattern> {
    if matches!(i.peek(), Tok::Ident(_) | Tok::Quoted(_)) {
        if matches!(i.peek_at(1), Tok::Punct("=")) {
            return Err(i.unsupported("named paths"));
        }
        if matches!(i.peek_at(1), Tok::Punct("(")) {
            return Err(i.unsupported("path functions such as shortestPath"));
        }
    }
    let (mut i, start) = node_pattern(i)?;
    let mut hops = Vec::new();
    while i.is_punct("-") || i.is_punct("<") {
        let (j, rel) = rel_pattern(i)?;
        let (j, node) = node_pattern(j)?;
        hops.push((rel, node));
        i = j;
    }
    i.expected("a relationship pattern");
    Ok((i, PathPattern { start, hops }))
}

// node_pattern = "(" [variable] [label_list] [property_map] ")"
fn node_pattern(i: Input<'_>) -> PResult<'_, NodePattern> {
    let (i, _) = punct("(")(i)?;
    let (i, variable) = opt(variable)(i)?;
    let (i, labels) = if i.is_punct(":") {
        label_list(i)?
    } else {
        (i, Vec::new())
    };
    let (i, properties) = opt_property_map(i)?;
    if i.is_kw("WHERE") {
        return Err(i.unsupported("WHERE inside a node pattern"));
    }
    if !i.is_punct(")") {
        if variable.is_none() && labels.is_empty() {
            i.expected("a variable name");
        }
        i.expected(":");
        i.expected("{");
    }
    let (i, _) = punct(")")(i)?;
    Ok((
        i,
        NodePattern {
            variable,
            labels,
            properties,
        },
    ))
}

// property_map = map_literal      (a parameter in its place is refused)
fn opt_property_map(i: Input<'_>) -> PResult<'_, Vec<(String, Expr)>> {
    if i.is_punct("{") {
        return map_entries(i);
    }
    if matches!(i.peek(), Tok::Param(_)) {
        return Err(
            i.unsupported("a parameter as a whole property map in a pattern (use {key: $param})")
        );
    }
    Ok((i, Vec::new()))
}

// rel_pattern = ("<-" | "-") ["[" rel_detail "]"] ("->" | "-")
fn rel_pattern(i: Input<'_>) -> PResult<'_, RelPattern> {
    let (i, left) = opt(punct("<"))(i)?;
    let (i, _) = punct("-")(i)?;
    let (i, detail) = if i.is_punct("[") {
        let (i, d) = rel_detail(i.advance(1))?;
        let (i, _) = punct("]")(i)?;
        (i, d)
    } else {
        (i, (None, Vec::new(), None, Vec::new()))
    };
    let (i, _) = punct("-")(i)?;
    let (i, right) = opt(punct(">"))(i)?;
    let direction = match (left.is_some(), right.is_some()) {
        (false, true) => RelDirection::Right,
        (true, false) => RelDirection::Left,
        _ => RelDirection::Both,
    };
    let (variable, types, length, properties) = detail;
    Ok((
        i,
        RelPattern {
            variable,
            types,
            direction,
            length,
            properties,
        },
    ))
}

type RelDetail = (
    Option<String>,
    Vec<String>,
    Option<VarLength>,
    Vec<(String, Expr)>,
);

// rel_detail = [variable] [":" name { "|" [":"] name }] [var_length] [property_map]
fn rel_detail(i: Input<'_>) -> PResult<'_, RelDetail> {
    let (i, variable) = opt(variable)(i)?;
    let (mut i, types) = if i.is_punct(":") {
        let (mut i, first) = name(i.advance(1))?;
        let mut types = vec![first];
        while i.is_punct("|") {
            let j = i.advance(1);
            let j = if j.is_punct(":") { j.advance(1) } else { j };
            let (j, t) = name(j)?;
            types.push(t);
            i = j;
        }
        (i, types)
    } else {
        i.expected(":");
        (i, Vec::new())
    };
    let mut length = None;
    if i.is_punct("*") {
        let (j, l) = var_length(i.advance(1))?;
        length = Some(l);
        i = j;
    }
    let (i, properties) = opt_property_map(i)?;
    if i.is_kw("WHERE") {
        return Err(i.unsupported("WHERE inside a relationship pattern"));
    }
    Ok((i, (variable, types, length, properties)))
}

// var_length = "*" [unsigned] [".." [unsigned]]     ("*n" means exactly n hops)
fn var_length(i: Input<'_>) -> PResult<'_, VarLength> {
    let (i, min) = opt(unsigned)(i)?;
    if i.is_punct("..") {
        let (i, max) = opt(unsigned)(i.advance(1))?;
        return Ok((i, VarLength { min, max }));
    }
    Ok((i, VarLength { min, max: min }))
}

// ---- expressions ------------------------------------------------------------------------------

// expr = or_expr
fn expr(i: Input<'_>) -> PResult<'_, Expr> {
    let guard = DepthGuard::enter(i)?;
    let outermost = i.ctx.depth.get() == 1;
    let (rest, e) = or_expr(i)?;
    drop(guard);
    // Chains inside parentheses stack up (`((a + b) + c) + d`), so check the finished tree.
    if outermost && tree_depth(&e) > MAX_TREE_DEPTH as usize {
        return Err(i.fatal(Fatal::TooDeep(MAX_TREE_DEPTH)));
    }
    Ok((rest, e))
}

/// Depth of an expression tree, without recursion (the tree may be too deep to recurse over).
fn tree_depth(e: &Expr) -> usize {
    let mut max = 0;
    let mut stack = vec![(e, 1usize)];
    while let Some((e, d)) = stack.pop() {
        max = max.max(d);
        match e {
            Expr::Literal(_) | Expr::Param(_) | Expr::Variable(_) | Expr::CountStar => {}
            Expr::Property(x, _)
            | Expr::Unary(_, x)
            | Expr::IsNull { expr: x, .. }
            | Expr::HasLabels { expr: x, .. } => stack.push((x, d + 1)),
            Expr::Index(a, b) | Expr::Binary(_, a, b) => {
                stack.push((a, d + 1));
                stack.push((b, d + 1));
            }
            Expr::List(items) | Expr::Call { args: items, .. } => {
                stack.extend(items.iter().map(|x| (x, d + 1)))
            }
            Expr::Map(entries) => stack.extend(entries.iter().map(|(_, x)| (x, d + 1))),
        }
    }
    max
}

/// One left-associative binary level: `next { op next }`.
fn binary_level<'a>(
    i: Input<'a>,
    next: fn(Input<'a>) -> PResult<'a, Expr>,
    ops: &[(&'static str, BinaryOp)],
) -> PResult<'a, Expr> {
    let (mut i, mut left) = next(i)?;
    // Each chained operator deepens the tree by one (left-associative), so it counts
    // against the recursion guard too: printing and evaluating recurse over that depth.
    let mut guards = Vec::new();
    'outer: loop {
        for (word, op) in ops {
            let matched = if word.chars().all(|c| c.is_ascii_alphabetic()) {
                i.is_kw(word)
            } else {
                i.is_punct(word)
            };
            if matched {
                guards.push(DepthGuard::chain(i)?);
                let (j, right) = next(i.advance(1))?;
                left = Expr::Binary(*op, Box::new(left), Box::new(right));
                i = j;
                continue 'outer;
            }
        }
        i.expected("an operator");
        return Ok((i, left));
    }
}

// or_expr = xor_expr { OR xor_expr }
fn or_expr(i: Input<'_>) -> PResult<'_, Expr> {
    binary_level(i, xor_expr, &[("OR", BinaryOp::Or)])
}

// xor_expr = and_expr { XOR and_expr }
fn xor_expr(i: Input<'_>) -> PResult<'_, Expr> {
    binary_level(i, and_expr, &[("XOR", BinaryOp::Xor)])
}

// and_expr = not_expr { AND not_expr }
fn and_expr(i: Input<'_>) -> PResult<'_, Expr> {
    binary_level(i, not_expr, &[("AND", BinaryOp::And)])
}

// not_expr = NOT not_expr | comparison
fn not_expr(i: Input<'_>) -> PResult<'_, Expr> {
    if i.is_kw("NOT") {
        let _guard = DepthGuard::enter(i)?;
        let (i, e) = not_expr(i.advance(1))?;
        return Ok((i, Expr::Unary(UnaryOp::Not, Box::new(e))));
    }
    comparison(i)
}

// comparison = predicate { ("=" | "<>" | "<" | "<=" | ">" | ">=") predicate }
fn comparison(i: Input<'_>) -> PResult<'_, Expr> {
    let (i, e) = binary_level(
        i,
        predicate,
        &[
            ("=", BinaryOp::Eq),
            ("<>", BinaryOp::Ne),
            ("<=", BinaryOp::Le),
            (">=", BinaryOp::Ge),
            ("<", BinaryOp::Lt),
            (">", BinaryOp::Gt),
        ],
    )?;
    if i.is_punct("=~") {
        return Err(i.unsupported("regular expression matching (=~)"));
    }
    Ok((i, e))
}

// predicate = additive { IN additive | STARTS WITH additive | ENDS WITH additive
//                      | CONTAINS additive | IS [NOT] NULL }
fn predicate(i: Input<'_>) -> PResult<'_, Expr> {
    let (mut i, mut left) = additive(i)?;
    let mut guards = Vec::new();
    loop {
        if i.is_kw("IN")
            || i.is_kw("STARTS")
            || i.is_kw("ENDS")
            || i.is_kw("CONTAINS")
            || i.is_kw("IS")
        {
            guards.push(DepthGuard::chain(i)?);
        }
        let op = if i.is_kw("IN") {
            Some((BinaryOp::In, 1))
        } else if i.is_kw("STARTS") && i.is_kw_at(1, "WITH") {
            Some((BinaryOp::StartsWith, 2))
        } else if i.is_kw("ENDS") && i.is_kw_at(1, "WITH") {
            Some((BinaryOp::EndsWith, 2))
        } else if i.is_kw("CONTAINS") {
            Some((BinaryOp::Contains, 1))
        } else {
            None
        };
        if let Some((op, width)) = op {
            let (j, right) = additive(i.advance(width))?;
            left = Expr::Binary(op, Box::new(left), Box::new(right));
            i = j;
            continue;
        }
        if i.is_kw("IS") {
            let j = i.advance(1);
            let (j, negated) = if j.is_kw("NOT") {
                (j.advance(1), true)
            } else {
                (j, false)
            };
            let (j, _) = kw("NULL")(j)?;
            left = Expr::IsNull {
                expr: Box::new(left),
                negated,
            };
            i = j;
            continue;
        }
        return Ok((i, left));
    }
}

// additive = multiplicative { ("+" | "-") multiplicative }
fn additive(i: Input<'_>) -> PResult<'_, Expr> {
    binary_level(
        i,
        multiplicative,
        &[("+", BinaryOp::Add), ("-", BinaryOp::Sub)],
    )
}

// multiplicative = power { ("*" | "/" | "%") power }
fn multiplicative(i: Input<'_>) -> PResult<'_, Expr> {
    binary_level(
        i,
        power,
        &[
            ("*", BinaryOp::Mul),
            ("/", BinaryOp::Div),
            ("%", BinaryOp::Mod),
        ],
    )
}

// power = unary { "^" unary }
fn power(i: Input<'_>) -> PResult<'_, Expr> {
    binary_level(i, unary, &[("^", BinaryOp::Pow)])
}

// unary = ("-" | "+") unary | postfix
fn unary(i: Input<'_>) -> PResult<'_, Expr> {
    let op = if i.is_punct("-") {
        Some(UnaryOp::Neg)
    } else if i.is_punct("+") {
        Some(UnaryOp::Plus)
    } else {
        None
    };
    match op {
        Some(op) => {
            let _guard = DepthGuard::enter(i)?;
            let (i, e) = unary(i.advance(1))?;
            Ok((i, Expr::Unary(op, Box::new(e))))
        }
        None => postfix(i),
    }
}

// postfix = atom { "." name | "[" expr "]" | label_list }
fn postfix(i: Input<'_>) -> PResult<'_, Expr> {
    let (mut i, mut e) = atom(i)?;
    let mut guards = Vec::new();
    loop {
        if i.is_punct(".") || i.is_punct("[") || i.is_punct(":") {
            guards.push(DepthGuard::chain(i)?);
        }
        if i.is_punct(".") {
            let (j, key) = name(i.advance(1))?;
            e = Expr::Property(Box::new(e), key);
            i = j;
        } else if i.is_punct("[") {
            let (j, index) = expr(i.advance(1))?;
            if j.is_punct("..") {
                return Err(j.unsupported("list slicing"));
            }
            let (j, _) = punct("]")(j)?;
            e = Expr::Index(Box::new(e), Box::new(index));
            i = j;
        } else if i.is_punct(":") {
            let (j, labels) = label_list(i)?;
            e = Expr::HasLabels {
                expr: Box::new(e),
                labels,
            };
            i = j;
        } else {
            i.expected(".");
            return Ok((i, e));
        }
    }
}

// atom = literal | parameter | count_star | function_call | variable | list | map | "(" expr ")"
fn atom(i: Input<'_>) -> PResult<'_, Expr> {
    match i.peek() {
        Tok::Integer(digits) => match digits.parse::<i64>() {
            Ok(n) => Ok((i.advance(1), Expr::Literal(Literal::Int(n)))),
            Err(_) => Err(i.fatal(Fatal::Invalid(format!(
                "integer literal {digits} is out of range"
            )))),
        },
        Tok::Float(f) => Ok((i.advance(1), Expr::Literal(Literal::Float(*f)))),
        Tok::Str(s) => Ok((i.advance(1), Expr::Literal(Literal::String(s.clone())))),
        Tok::Param(p) => Ok((i.advance(1), Expr::Param(p.clone()))),
        Tok::Punct("[") => list_literal(i),
        Tok::Punct("{") => {
            let (i, entries) = map_entries(i)?;
            Ok((i, Expr::Map(entries)))
        }
        Tok::Punct("(") => {
            let (i, e) = expr(i.advance(1))?;
            let (i, _) = punct(")")(i)?;
            Ok((i, e))
        }
        Tok::Ident(w) => word_atom(i, w),
        Tok::Quoted(w) => Ok((i.advance(1), Expr::Variable(w.clone()))),
        _ => Err(i.expected("an expression")),
    }
}

// word_atom = TRUE | FALSE | NULL | count_star | function_call | variable
// count_star = COUNT "(" "*" ")"
// function_call = name "(" [DISTINCT] [expr {"," expr}] ")"
fn word_atom<'a>(i: Input<'a>, w: &str) -> PResult<'a, Expr> {
    let upper = w.to_ascii_uppercase();
    match upper.as_str() {
        "TRUE" => return Ok((i.advance(1), Expr::Literal(Literal::Bool(true)))),
        "FALSE" => return Ok((i.advance(1), Expr::Literal(Literal::Bool(false)))),
        "NULL" => return Ok((i.advance(1), Expr::Literal(Literal::Null))),
        "CASE" => return Err(i.unsupported("CASE expressions")),
        "EXISTS" | "COUNT" | "COLLECT" if matches!(i.peek_at(1), Tok::Punct("{")) => {
            return Err(i.unsupported("subqueries"))
        }
        "ALL" | "ANY" | "NONE" | "SINGLE" | "REDUCE" if matches!(i.peek_at(1), Tok::Punct("(")) => {
            return Err(i.unsupported(format!("the {upper} list predicate")))
        }
        _ => {}
    }
    if matches!(i.peek_at(1), Tok::Punct("(")) {
        if upper == "COUNT"
            && matches!(i.peek_at(2), Tok::Punct("*"))
            && matches!(i.peek_at(3), Tok::Punct(")"))
        {
            return Ok((i.advance(4), Expr::CountStar));
        }
        return function_call(i, w);
    }
    // `a.b.c(` is a namespaced function or procedure call.
    let mut n = 1;
    while matches!(i.peek_at(n), Tok::Punct(".")) && matches!(i.peek_at(n + 1), Tok::Ident(_)) {
        n += 2;
    }
    if n > 1 && matches!(i.peek_at(n), Tok::Punct("(")) {
        return Err(i.unsupported("procedures and namespaced functions"));
    }
    variable(i).map(|(i, v)| (i, Expr::Variable(v)))
}

fn function_call<'a>(i: Input<'a>, w: &str) -> PResult<'a, Expr> {
    let _guard = DepthGuard::enter(i)?;
    let i = i.advance(2);
    let (i, distinct) = opt(kw("DISTINCT"))(i)?;
    let (i, args) = if i.is_punct(")") {
        (i, Vec::new())
    } else {
        separated_list1(punct(","), expr)(i)?
    };
    let (i, _) = punct(")")(i)?;
    Ok((
        i,
        Expr::Call {
            name: w.to_owned(),
            distinct: distinct.is_some(),
            args,
        },
    ))
}

// list = "[" [expr {"," expr}] "]"
fn list_literal(i: Input<'_>) -> PResult<'_, Expr> {
    let _guard = DepthGuard::enter(i)?;
    let i = i.advance(1);
    if i.is_punct("]") {
        return Ok((i.advance(1), Expr::List(Vec::new())));
    }
    let (i, items) = separated_list1(punct(","), expr)(i)?;
    if i.is_punct("|") || i.is_kw("WHERE") {
        return Err(i.unsupported("list comprehensions"));
    }
    let (i, _) = punct("]")(i)?;
    Ok((i, Expr::List(items)))
}

// map = "{" [name ":" expr {"," name ":" expr}] "}"
fn map_entries(i: Input<'_>) -> PResult<'_, Vec<(String, Expr)>> {
    let _guard = DepthGuard::enter(i)?;
    let (i, _) = punct("{")(i)?;
    if i.is_punct("}") {
        return Ok((i.advance(1), Vec::new()));
    }
    let (i, entries) = separated_list1(punct(","), map_entry)(i)?;
    let (i, _) = punct("}")(i)?;
    Ok((i, entries))
}

// map_entry = name ":" expr
fn map_entry(i: Input<'_>) -> PResult<'_, (String, Expr)> {
    let (i, k) = name(i)?;
    let (i, _) = punct(":")(i)?;
    let (i, v) = expr(i)?;
    Ok((i, (k, v)))
}
