//! Pattern rules: paths, node patterns with labels and property maps, relationship patterns
//! with types, directions and variable lengths.

#[allow(unused_imports)]
use super::*;

// pattern_list = path_pattern { "," path_pattern }
pub(super) fn pattern_list(i: Input<'_>) -> PResult<'_, Vec<PathPattern>> {
    separated_list1(punct(","), path_pattern)(i)
}

// path_pattern = [variable "="] node_pattern { rel_pattern node_pattern }
pub(super) fn path_pattern(i: Input<'_>) -> PResult<'_, PathPattern> {
    let mut i = i;
    let mut path_variable = None;
    if matches!(i.peek(), Tok::Ident(_) | Tok::Quoted(_)) && matches!(i.peek_at(1), Tok::Punct("="))
    {
        let (j, v) = variable(i)?;
        path_variable = Some(v);
        i = j.advance(1);
    }
    if matches!(i.peek(), Tok::Ident(_) | Tok::Quoted(_)) && matches!(i.peek_at(1), Tok::Punct("("))
    {
        return Err(i.unsupported("path functions such as shortestPath"));
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
    Ok((
        i,
        PathPattern {
            variable: path_variable,
            start,
            hops,
        },
    ))
}

// node_pattern = "(" [variable] [label_list] [property_map] ")"
pub(super) fn node_pattern(i: Input<'_>) -> PResult<'_, NodePattern> {
    let (i, _) = punct("(")(i)?;
    count_element(i)?;
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
pub(super) fn opt_property_map(i: Input<'_>) -> PResult<'_, Vec<(String, Expr)>> {
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
pub(super) fn rel_pattern(i: Input<'_>) -> PResult<'_, RelPattern> {
    let (i, left) = opt(punct("<"))(i)?;
    let (i, _) = punct("-")(i)?;
    count_element(i)?;
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
pub(super) fn rel_detail(i: Input<'_>) -> PResult<'_, RelDetail> {
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
pub(super) fn var_length(i: Input<'_>) -> PResult<'_, VarLength> {
    let (i, min) = opt(unsigned)(i)?;
    if i.is_punct("..") {
        let (i, max) = opt(unsigned)(i.advance(1))?;
        return Ok((i, VarLength { min, max }));
    }
    Ok((i, VarLength { min, max: min }))
}
