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
pub(super) fn comparison(i: Input<'_>) -> PResult<'_, Expr> {
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

pub(super) fn function_call<'a>(i: Input<'a>, w: &str) -> PResult<'a, Expr> {
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
pub(super) fn list_literal(i: Input<'_>) -> PResult<'_, Expr> {
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
