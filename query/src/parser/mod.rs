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

mod clauses;
pub(crate) mod ddl;
mod expressions;
mod patterns;

use clauses::*;
use expressions::*;
use patterns::*;

/// How deeply expressions may nest (parentheses, lists, maps, calls, NOT and unary minus)
/// before the parser gives up: a guard against stack overflow on hostile input.
pub const MAX_DEPTH: u32 = 64;

/// How long the chains of binary operators, predicates and postfix lookups on one path of the
/// tree may grow in total (`a + b + c ...` nests to the left without recursing in the parser,
/// but printing and evaluating recurse over it).
pub const MAX_CHAIN: u32 = 128;

/// The deepest expression tree accepted, however it was written.
pub const MAX_TREE_DEPTH: u32 = 160;

/// How many node and relationship patterns one statement may hold in all. A pattern chain is
/// parsed by a loop, but the plan nests one operator per element and planning, printing,
/// running and dropping that plan recurse over it: without this bound a 25 KB chain of
/// `-->()` overflowed a worker's stack (issue 29). Real queries use a few dozen at most.
pub const MAX_PATTERN_ELEMENTS: u32 = 256;

/// How many clauses one statement may hold (each nests the plan a few operators deeper).
pub const MAX_CLAUSES: u32 = 64;

/// Parses one statement.
pub fn parse(text: &str) -> Result<Statement, QueryError> {
    let tokens = tokenize(text)?;
    let ctx = Ctx {
        text: text.to_owned(),
        depth: Cell::new(0),
        chain: Cell::new(0),
        elements: Cell::new(0),
        clauses: Cell::new(0),
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
                Fatal::TooLarge(what, limit) => QueryError::TooLarge {
                    position,
                    what,
                    limit,
                },
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
    /// The statement's text (for items named by their text as written).
    text: String,
    depth: Cell<u32>,
    chain: Cell<u32>,
    /// Node and relationship patterns parsed so far (never decremented: a pattern parsed on a
    /// path that later backtracks still counts, which only makes the bound stricter).
    elements: Cell<u32>,
    /// Clauses parsed so far.
    clauses: Cell<u32>,
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
    /// The query text of the tokens from this input's first up to `end`'s first.
    fn text_until(&self, end: Input<'_>) -> String {
        let consumed = self.toks.len().saturating_sub(end.toks.len());
        let (Some(first), Some(last)) = (
            self.toks.first(),
            consumed.checked_sub(1).and_then(|n| self.toks.get(n)),
        ) else {
            return String::new();
        };
        self.ctx
            .text
            .get(first.offset..last.end.max(first.offset))
            .unwrap_or("")
            .to_owned()
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
    TooLarge(&'static str, u32),
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

/// Counts one more of something a statement may only hold `limit` of (see `MAX_PATTERN_ELEMENTS`
/// and `MAX_CLAUSES`); fails once the limit is passed.
fn count_size(
    i: Input<'_>,
    counter: &Cell<u32>,
    what: &'static str,
    limit: u32,
) -> Result<(), nom::Err<PErr>> {
    let n = counter.get() + 1;
    if n > limit {
        return Err(i.fatal(Fatal::TooLarge(what, limit)));
    }
    counter.set(n);
    Ok(())
}

fn count_element(i: Input<'_>) -> Result<(), nom::Err<PErr>> {
    count_size(
        i,
        &i.ctx.elements,
        "node and relationship patterns",
        MAX_PATTERN_ELEMENTS,
    )
}

fn count_clause(i: Input<'_>) -> Result<(), nom::Err<PErr>> {
    count_size(i, &i.ctx.clauses, "clauses", MAX_CLAUSES)
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
