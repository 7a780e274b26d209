//! Expression rules, lowest precedence first (OR, XOR, AND, NOT, comparison, predicates,
//! arithmetic, unary, postfix, atoms), under the depth and tree-size guards.

#[allow(unused_imports)]
use super::*;

// expr = or_expr
pub(super) fn expr(i: Input<'_>) -> PResult<'_, Expr> {
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
pub(super) fn tree_depth(e: &Expr) -> usize {
    let mut max = 0;
    let mut stack = vec![(e, 1usize)];
    while let Some((e, d)) = stack.pop() {
        max = max.max(d);
        stack.extend(e.children().into_iter().map(|x| (x, d + 1)));
    }
    max
}

/// One left-associative binary level: `next { op next }`.
pub(super) fn binary_level<'a>(
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
pub(super) fn or_expr(i: Input<'_>) -> PResult<'_, Expr> {
    binary_level(i, xor_expr, &[("OR", BinaryOp::Or)])
}

// xor_expr = and_expr { XOR and_expr }
pub(super) fn xor_expr(i: Input<'_>) -> PResult<'_, Expr> {
    binary_level(i, and_expr, &[("XOR", BinaryOp::Xor)])
}

// and_expr = not_expr { AND not_expr }
pub(super) fn and_expr(i: Input<'_>) -> PResult<'_, Expr> {
    binary_level(i, not_expr, &[("AND", BinaryOp::And)])
}

// not_expr = NOT not_expr | comparison
pub(super) fn not_expr(i: Input<'_>) -> PResult<'_, Expr> {
    if i.is_kw("NOT") {
        let _guard = DepthGuard::enter(i)?;
        let (i, e) = not_expr(i.advance(1))?;
        return Ok((i, Expr::Unary(UnaryOp::Not, Box::new(e))));
    }
    comparison(i)
}

// comparison = predicate { ("=" | "<>" | "<" | "<=" | ">" | ">=") predicate }
// A chain `a < b <= c` means `a < b AND b <= c`.
pub(super) fn comparison(i: Input<'_>) -> PResult<'_, Expr> {
    const OPS: [(&str, BinaryOp); 6] = [
        ("=", BinaryOp::Eq),
        ("<>", BinaryOp::Ne),
        ("<=", BinaryOp::Le),
        (">=", BinaryOp::Ge),
        ("<", BinaryOp::Lt),
        (">", BinaryOp::Gt),
    ];
    let (mut i, mut left) = predicate(i)?;
    let mut previous: Option<Expr> = None;
    let mut guards = Vec::new();
    while let Some((_, op)) = OPS.iter().find(|(p, _)| i.is_punct(p)) {
        guards.push(DepthGuard::chain(i)?);
        let (j, right) = predicate(i.advance(1))?;
        left = match previous.take() {
            None => Expr::Binary(*op, Box::new(left), Box::new(right.clone())),
            Some(middle) => Expr::Binary(
                BinaryOp::And,
                Box::new(left),
                Box::new(Expr::Binary(*op, Box::new(middle), Box::new(right.clone()))),
            ),
        };
        previous = Some(right);
        i = j;
    }
    i.expected("an operator");
    if i.is_punct("=~") {
        return Err(i.unsupported("regular expression matching (=~)"));
    }
    Ok((i, left))
}

// predicate = additive { IN additive | STARTS WITH additive | ENDS WITH additive
//                      | CONTAINS additive | IS [NOT] NULL }
pub(super) fn predicate(i: Input<'_>) -> PResult<'_, Expr> {
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
pub(super) fn additive(i: Input<'_>) -> PResult<'_, Expr> {
    binary_level(
        i,
        multiplicative,
        &[("+", BinaryOp::Add), ("-", BinaryOp::Sub)],
    )
}

// multiplicative = power { ("*" | "/" | "%") power }
pub(super) fn multiplicative(i: Input<'_>) -> PResult<'_, Expr> {
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
pub(super) fn power(i: Input<'_>) -> PResult<'_, Expr> {
    binary_level(i, unary, &[("^", BinaryOp::Pow)])
}

// unary = ("-" | "+") unary | postfix
pub(super) fn unary(i: Input<'_>) -> PResult<'_, Expr> {
    // The smallest integer has no positive literal of its own.
    if i.is_punct("-") && matches!(i.peek_at(1), Tok::Integer(d) if d == "9223372036854775808") {
        return Ok((i.advance(2), Expr::Literal(Literal::Int(i64::MIN))));
    }
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
pub(super) fn postfix(i: Input<'_>) -> PResult<'_, Expr> {
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
            // `[index]` or a slice `[from..to]` (either bound optional)
            let j = i.advance(1);
            let (j, from) = if j.is_punct("..") {
                (j, None)
            } else {
                let (j, x) = expr(j)?;
                (j, Some(x))
            };
            if j.is_punct("..") {
                let j = j.advance(1);
                let (j, to) = if j.is_punct("]") {
                    (j, None)
                } else {
                    let (j, x) = expr(j)?;
                    (j, Some(Box::new(x)))
                };
                let (j, _) = punct("]")(j)?;
                e = Expr::Slice(Box::new(e), from.map(Box::new), to);
                i = j;
                continue;
            }
            let (j, _) = punct("]")(j)?;
            let Some(index) = from else {
                return Err(j.expected("an expression"));
            };
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
pub(super) fn atom(i: Input<'_>) -> PResult<'_, Expr> {
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
            // A pattern with at least one relationship is a pattern expression.
            if let Ok((j, p)) = path_pattern(i) {
                if !p.hops.is_empty() {
                    return Ok((j, Expr::Pattern(Box::new(p))));
                }
            }
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
pub(super) fn word_atom<'a>(i: Input<'a>, w: &str) -> PResult<'a, Expr> {
    let upper = w.to_ascii_uppercase();
    match upper.as_str() {
        "TRUE" => return Ok((i.advance(1), Expr::Literal(Literal::Bool(true)))),
        "FALSE" => return Ok((i.advance(1), Expr::Literal(Literal::Bool(false)))),
        "NULL" => return Ok((i.advance(1), Expr::Literal(Literal::Null))),
        "CASE" => return case_expr(i),
        "EXISTS" if matches!(i.peek_at(1), Tok::Punct("{")) => return exists_subquery(i),
        "COUNT" | "COLLECT" if matches!(i.peek_at(1), Tok::Punct("{")) => {
            return Err(i.unsupported("COUNT and COLLECT subqueries"))
        }
        "ALL" | "ANY" | "NONE" | "SINGLE"
            if matches!(i.peek_at(1), Tok::Punct("("))
                && is_variable_token(i.peek_at(2))
                && i.is_kw_at(3, "IN") =>
        {
            return quantified(i, &upper);
        }
        "REDUCE"
            if matches!(i.peek_at(1), Tok::Punct("("))
                && is_variable_token(i.peek_at(2))
                && matches!(i.peek_at(3), Tok::Punct("=")) =>
        {
            return reduce_expr(i);
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
        // A namespaced function (`date.truncate(...)`): the words joined by dots.
        let name = (0..n)
            .step_by(2)
            .filter_map(|k| match i.peek_at(k) {
                Tok::Ident(w) => Some(w.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join(".");
        return call_after(i, name, n + 1);
    }
    variable(i).map(|(i, v)| (i, Expr::Variable(v)))
}

pub(super) fn function_call<'a>(i: Input<'a>, w: &str) -> PResult<'a, Expr> {
    call_after(i, w.to_owned(), 2)
}

/// The rest of a call whose name (`name`) and "(" take the first `skip` tokens.
fn call_after(i: Input<'_>, name: String, skip: usize) -> PResult<'_, Expr> {
    let _guard = DepthGuard::enter(i)?;
    let i = i.advance(skip);
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
            name,
            distinct: distinct.is_some(),
            args,
        },
    ))
}

// list = "[" [expr {"," expr}] "]" | comprehension
// comprehension = "[" variable IN expr [WHERE expr] ["|" expr] "]"
pub(super) fn list_literal(i: Input<'_>) -> PResult<'_, Expr> {
    let _guard = DepthGuard::enter(i)?;
    let i = i.advance(1);
    if i.is_punct("]") {
        return Ok((i.advance(1), Expr::List(Vec::new())));
    }
    if is_variable_token(i.peek()) && i.is_kw_at(1, "IN") {
        let (i, variable) = variable(i)?;
        let (i, list) = expr(i.advance(1))?;
        let (i, predicate) = opt_where(i)?;
        let (i, projection) = if i.is_punct("|") {
            let (i, e) = expr(i.advance(1))?;
            (i, Some(Box::new(e)))
        } else {
            i.expected("|");
            (i, None)
        };
        let (i, _) = punct("]")(i)?;
        return Ok((
            i,
            Expr::Comprehension {
                variable,
                list: Box::new(list),
                predicate: predicate.map(Box::new),
                projection,
            },
        ));
    }
    // pattern_comprehension = "[" path_pattern [WHERE expr] "|" expr "]"
    let named = is_variable_token(i.peek()) && matches!(i.peek_at(1), Tok::Punct("="));
    if i.is_punct("(") || named {
        if let Ok((j, pattern)) = path_pattern(i) {
            if !pattern.hops.is_empty() && (j.is_kw("WHERE") || j.is_punct("|")) {
                let (j, predicate) = opt_where(j)?;
                let (j, _) = punct("|")(j)?;
                let (j, projection) = expr(j)?;
                let (j, _) = punct("]")(j)?;
                return Ok((
                    j,
                    Expr::PatternComprehension {
                        pattern: Box::new(pattern),
                        predicate: predicate.map(Box::new),
                        projection: Box::new(projection),
                    },
                ));
            }
        }
    }
    let (i, items) = separated_list1(punct(","), expr)(i)?;
    let (i, _) = punct("]")(i)?;
    Ok((i, Expr::List(items)))
}

/// Whether the token can name a variable (a word that is not a keyword, or a quoted name).
fn is_variable_token(t: &Tok) -> bool {
    match t {
        Tok::Ident(w) => !is_reserved(w),
        Tok::Quoted(_) => true,
        _ => false,
    }
}

// exists = EXISTS "{" ( pattern_list [WHERE expr] | clause { clause } ) "}"
fn exists_subquery(i: Input<'_>) -> PResult<'_, Expr> {
    let _guard = DepthGuard::enter(i)?;
    let i = i.advance(2);
    let full = i.is_kw("MATCH") || i.is_kw("OPTIONAL") || i.is_kw("WITH") || i.is_kw("UNWIND");
    if !full {
        let (i, patterns) = pattern_list(i)?;
        let (i, where_) = opt_where(i)?;
        let (i, _) = punct("}")(i)?;
        let m = Match {
            optional: false,
            patterns,
            where_,
        };
        return Ok((
            i,
            Expr::Exists {
                clauses: vec![Clause::Match(m)],
                short: true,
            },
        ));
    }
    let mut clauses = Vec::new();
    let mut i = i;
    while !i.is_punct("}") {
        let at = i;
        let (j, c) = clause(i)?;
        // The body only reads: read-only-ness stays decided by the statement's clauses.
        if c.is_write() {
            return Err(at.fatal(Fatal::Invalid(format!(
                "{} is not allowed inside EXISTS {{ }}",
                c.keyword()
            ))));
        }
        let is_return = matches!(c, Clause::Return(_));
        clauses.push(c);
        i = j;
        if is_return {
            break;
        }
    }
    let (i, _) = punct("}")(i)?;
    Ok((
        i,
        Expr::Exists {
            clauses,
            short: false,
        },
    ))
}

// quantified = (ALL | ANY | NONE | SINGLE) "(" variable IN expr WHERE expr ")"
fn quantified<'a>(i: Input<'a>, upper: &str) -> PResult<'a, Expr> {
    let _guard = DepthGuard::enter(i)?;
    let quantifier = match upper {
        "ALL" => Quantifier::All,
        "ANY" => Quantifier::Any,
        "NONE" => Quantifier::None,
        _ => Quantifier::Single,
    };
    let (i, variable) = variable(i.advance(2))?;
    let (i, list) = expr(i.advance(1))?;
    let (i, _) = kw("WHERE")(i)?;
    let (i, predicate) = expr(i)?;
    let (i, _) = punct(")")(i)?;
    Ok((
        i,
        Expr::Quantified {
            quantifier,
            variable,
            list: Box::new(list),
            predicate: Box::new(predicate),
        },
    ))
}

// reduce = REDUCE "(" variable "=" expr "," variable IN expr "|" expr ")"
fn reduce_expr(i: Input<'_>) -> PResult<'_, Expr> {
    let _guard = DepthGuard::enter(i)?;
    let (i, accumulator) = variable(i.advance(2))?;
    let (i, _) = punct("=")(i)?;
    let (i, init) = expr(i)?;
    let (i, _) = punct(",")(i)?;
    let (i, variable) = variable(i)?;
    let (i, _) = kw("IN")(i)?;
    let (i, list) = expr(i)?;
    let (i, _) = punct("|")(i)?;
    let (i, body) = expr(i)?;
    let (i, _) = punct(")")(i)?;
    Ok((
        i,
        Expr::Reduce {
            accumulator,
            init: Box::new(init),
            variable,
            list: Box::new(list),
            expr: Box::new(body),
        },
    ))
}

// case = CASE [expr] WHEN expr THEN expr { WHEN expr THEN expr } [ELSE expr] END
fn case_expr(i: Input<'_>) -> PResult<'_, Expr> {
    let _guard = DepthGuard::enter(i)?;
    let i = i.advance(1);
    let (mut i, operand) = if i.is_kw("WHEN") {
        (i, None)
    } else {
        let (i, e) = expr(i)?;
        (i, Some(Box::new(e)))
    };
    let mut whens = Vec::new();
    while i.is_kw("WHEN") {
        let (j, w) = expr(i.advance(1))?;
        let (j, _) = kw("THEN")(j)?;
        let (j, t) = expr(j)?;
        whens.push((w, t));
        i = j;
    }
    if whens.is_empty() {
        return Err(i.expected("WHEN"));
    }
    let (i, else_) = if i.is_kw("ELSE") {
        let (i, e) = expr(i.advance(1))?;
        (i, Some(Box::new(e)))
    } else {
        i.expected("ELSE");
        (i, None)
    };
    let (i, _) = kw("END")(i)?;
    Ok((
        i,
        Expr::Case {
            operand,
            whens,
            else_,
        },
    ))
}

// map = "{" [name ":" expr {"," name ":" expr}] "}"
pub(super) fn map_entries(i: Input<'_>) -> PResult<'_, Vec<(String, Expr)>> {
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
pub(super) fn map_entry(i: Input<'_>) -> PResult<'_, (String, Expr)> {
    let (i, k) = name(i)?;
    let (i, _) = punct(":")(i)?;
    let (i, v) = expr(i)?;
    Ok((i, (k, v)))
}
