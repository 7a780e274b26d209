//! Statement and clause rules: MATCH, OPTIONAL MATCH, WHERE, UNWIND, WITH, RETURN (projection,
//! ORDER BY, SKIP, LIMIT) and the write clauses (CREATE, MERGE, SET, REMOVE, DELETE).

#[allow(unused_imports)]
use super::*;

/// Clause keywords outside the subset, refused with a clear message.
pub(super) const UNSUPPORTED_CLAUSES: &[&str] = &[
    "CALL",
    "LOAD",
    "FOREACH",
    "USE",
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
pub(super) fn statement(i: Input<'_>) -> PResult<'_, Statement> {
    let (i, mode) = if i.is_kw("EXPLAIN") {
        (i.advance(1), Mode::Explain)
    } else if i.is_kw("PROFILE") {
        (i.advance(1), Mode::Profile)
    } else {
        (i, Mode::Run)
    };
    let (mut i, clauses) = query_part(i)?;
    let mut unions = Vec::new();
    // union = { UNION [ALL] query_part }: read-only queries with one kind of UNION.
    while i.is_kw("UNION") {
        let at = i;
        let (j, all) = if i.is_kw_at(1, "ALL") {
            (i.advance(2), true)
        } else {
            (i.advance(1), false)
        };
        if unions.first().is_some_and(|u: &UnionPart| u.all != all) {
            return Err(at.fatal(Fatal::Invalid(
                "UNION and UNION ALL cannot be mixed in one query".into(),
            )));
        }
        let (j, part) = query_part(j)?;
        unions.push(UnionPart { all, clauses: part });
        i = j;
    }
    if !unions.is_empty() {
        let parts = std::iter::once(&clauses).chain(unions.iter().map(|u| &u.clauses));
        if let Some(w) = parts.flatten().find(|c| c.is_write()) {
            return Err(i.unsupported(format!("{} in a UNION", w.keyword())));
        }
    }
    let (i, _) = opt(punct(";"))(i)?;
    if !matches!(i.peek(), Tok::Eof) {
        return Err(i.expected("end of input"));
    }
    Ok((
        i,
        Statement {
            mode,
            clauses,
            unions,
        },
    ))
}

// query_part = clause { clause }   (ending in RETURN or a write)
fn query_part(i: Input<'_>) -> PResult<'_, Vec<Clause>> {
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
    if !last_ok && !i.is_kw("UNION") && matches!(i.peek(), Tok::Eof | Tok::Punct(";")) {
        return Err(i.expected("RETURN or an updating clause (CREATE, MERGE, SET, REMOVE, DELETE)"));
    }
    if !last_ok {
        if i.is_kw("UNION") {
            return Err(i.expected("RETURN"));
        }
        return Err(i.expected("end of input"));
    }
    Ok((i, clauses))
}

// clause = match | unwind | with | return | create | merge | set | remove | delete
pub(super) fn clause(i: Input<'_>) -> PResult<'_, Clause> {
    if !matches!(i.peek(), Tok::Eof | Tok::Punct(";")) {
        count_clause(i)?;
    }
    if let Tok::Ident(w) = i.peek() {
        if let Some(k) = UNSUPPORTED_CLAUSES
            .iter()
            .find(|k| k.eq_ignore_ascii_case(w))
        {
            return Err(i.unsupported(format!("the {k} clause")));
        }
        if (w.eq_ignore_ascii_case("CREATE") || w.eq_ignore_ascii_case("MERGE"))
            && matches!(i.peek_at(1), Tok::Ident(_))
            && !matches!(i.peek_at(2), Tok::Punct("="))
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
pub(super) fn match_clause(i: Input<'_>) -> PResult<'_, Clause> {
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
pub(super) fn opt_where(i: Input<'_>) -> PResult<'_, Option<Expr>> {
    if i.is_kw("WHERE") {
        let (i, e) = expr(i.advance(1))?;
        Ok((i, Some(e)))
    } else {
        i.expected("WHERE");
        Ok((i, None))
    }
}

// unwind = UNWIND expr AS variable
pub(super) fn unwind_clause(i: Input<'_>) -> PResult<'_, Clause> {
    let (i, _) = kw("UNWIND")(i)?;
    let (i, e) = expr(i)?;
    let (i, _) = kw("AS")(i)?;
    let (i, alias) = variable(i)?;
    Ok((i, Clause::Unwind(Unwind { expr: e, alias })))
}

// with = WITH projection [WHERE expr]
pub(super) fn with_clause(i: Input<'_>) -> PResult<'_, Clause> {
    let (i, _) = kw("WITH")(i)?;
    let (i, projection) = projection(i, false)?;
    let (i, where_) = opt_where(i)?;
    Ok((i, Clause::With(With { projection, where_ })))
}

// return = RETURN projection
pub(super) fn return_clause(i: Input<'_>) -> PResult<'_, Clause> {
    let (i, _) = kw("RETURN")(i)?;
    let (i, p) = projection(i, true)?;
    Ok((i, Clause::Return(p)))
}

// projection = [DISTINCT] ("*" ["," item_list] | item_list) [ORDER BY sort_list] [SKIP expr] [LIMIT expr]
pub(super) fn projection(i: Input<'_>, is_return: bool) -> PResult<'_, Projection> {
    let item = |i| projection_item(i, is_return);
    let (i, distinct) = opt(kw("DISTINCT"))(i)?;
    let (i, star, items) = if i.is_punct("*") {
        let i = i.advance(1);
        if i.is_punct(",") {
            let (i, items) = separated_list1(punct(","), item)(i.advance(1))?;
            (i, true, items)
        } else {
            (i, true, Vec::new())
        }
    } else {
        let (i, items) = separated_list1(punct(","), item)(i)?;
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
pub(super) fn projection_item(i: Input<'_>, keep_text: bool) -> PResult<'_, ProjectionItem> {
    let start = i;
    let (i, e) = expr(i)?;
    if i.is_kw("AS") {
        let (i, alias) = variable(i.advance(1))?;
        Ok((
            i,
            ProjectionItem {
                expr: e,
                alias: Some(alias),
                text: None,
            },
        ))
    } else {
        i.expected("AS");
        // An unaliased RETURN item is named by its text as written.
        let text = keep_text.then(|| start.text_until(i));
        Ok((
            i,
            ProjectionItem {
                expr: e,
                alias: None,
                text,
            },
        ))
    }
}

// sort_item = expr [ASC | ASCENDING | DESC | DESCENDING]
pub(super) fn sort_item(i: Input<'_>) -> PResult<'_, SortItem> {
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

/// Named paths are read-only for now: `CREATE p = ...` and `MERGE p = ...` are refused.
fn refuse_named_path(i: Input<'_>) -> Result<(), nom::Err<PErr>> {
    if matches!(i.peek(), Tok::Ident(_) | Tok::Quoted(_)) && matches!(i.peek_at(1), Tok::Punct("="))
    {
        return Err(i.unsupported("named paths in CREATE and MERGE"));
    }
    Ok(())
}

// create = CREATE pattern_list
pub(super) fn create_clause(i: Input<'_>) -> PResult<'_, Clause> {
    let (i, _) = kw("CREATE")(i)?;
    refuse_named_path(i)?;
    let (i, patterns) = pattern_list(i)?;
    Ok((i, Clause::Create(patterns)))
}

// merge = MERGE path_pattern { ON (CREATE | MATCH) SET set_item {"," set_item} }
pub(super) fn merge_clause(i: Input<'_>) -> PResult<'_, Clause> {
    let (i, _) = kw("MERGE")(i)?;
    refuse_named_path(i)?;
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
pub(super) fn set_clause(i: Input<'_>) -> PResult<'_, Clause> {
    let (i, _) = kw("SET")(i)?;
    let (i, items) = separated_list1(punct(","), set_item)(i)?;
    Ok((i, Clause::Set(items)))
}

// set_item = variable "." name "=" expr | variable "=" expr | variable "+=" expr | variable label_list
pub(super) fn set_item(i: Input<'_>) -> PResult<'_, SetItem> {
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
pub(super) fn label_list(i: Input<'_>) -> PResult<'_, Vec<String>> {
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
pub(super) fn remove_clause(i: Input<'_>) -> PResult<'_, Clause> {
    let (i, _) = kw("REMOVE")(i)?;
    let (i, items) = separated_list1(punct(","), remove_item)(i)?;
    Ok((i, Clause::Remove(items)))
}

// remove_item = variable "." name | variable label_list
pub(super) fn remove_item(i: Input<'_>) -> PResult<'_, RemoveItem> {
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
pub(super) fn delete_clause(i: Input<'_>) -> PResult<'_, Clause> {
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
