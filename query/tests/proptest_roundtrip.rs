//! Random valid statements: printing and parsing them back gives the same tree; random text
//! never panics the parser.

use proptest::prelude::*;
use svc_query::ast::*;
use svc_query::parse;

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec!["a", "b", "n", "customer", "x1", "_y"]).prop_map(String::from),
        // keywords and odd characters force backtick quoting
        prop::sample::select(vec![
            "match", "Return", "count", "end", "a b", "we`ird", "é", "null"
        ])
        .prop_map(String::from),
    ]
}

fn literal() -> impl Strategy<Value = Literal> {
    prop_oneof![
        Just(Literal::Null),
        any::<bool>().prop_map(Literal::Bool),
        (0i64..i64::MAX).prop_map(Literal::Int),
        prop::sample::select(vec![0.0, 0.5, 1.0, 2.25, 1e-7, 1e300, 123456.789])
            .prop_map(Literal::Float),
        "[a-z'\"\\\\ \\t\\n\u{e9}\u{1}]{0,6}".prop_map(Literal::String),
    ]
}

fn binary_op() -> impl Strategy<Value = BinaryOp> {
    use BinaryOp::*;
    prop::sample::select(vec![
        Or, Xor, And, Eq, Ne, Lt, Le, Gt, Ge, In, StartsWith, EndsWith, Contains, Add, Sub, Mul,
        Div, Mod, Pow,
    ])
}

fn expr() -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![
        literal().prop_map(Expr::Literal),
        name().prop_map(Expr::Variable),
        prop::sample::select(vec!["p", "limit", "x2"]).prop_map(|p| Expr::Param(p.to_string())),
        Just(Expr::CountStar),
    ];
    leaf.prop_recursive(5, 48, 4, |inner| {
        prop_oneof![
            (inner.clone(), name()).prop_map(|(e, k)| Expr::Property(Box::new(e), k)),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Expr::Index(Box::new(a), Box::new(b))),
            prop::collection::vec(inner.clone(), 0..3).prop_map(Expr::List),
            prop::collection::vec((name(), inner.clone()), 0..3).prop_map(Expr::Map),
            (
                prop::sample::select(vec![UnaryOp::Not, UnaryOp::Neg, UnaryOp::Plus]),
                inner.clone()
            )
                .prop_map(|(op, e)| Expr::Unary(op, Box::new(e))),
            (binary_op(), inner.clone(), inner.clone()).prop_map(|(op, a, b)| Expr::Binary(
                op,
                Box::new(a),
                Box::new(b)
            )),
            (inner.clone(), any::<bool>()).prop_map(|(e, negated)| Expr::IsNull {
                expr: Box::new(e),
                negated
            }),
            (inner.clone(), prop::collection::vec(name(), 1..3)).prop_map(|(e, labels)| {
                Expr::HasLabels {
                    expr: Box::new(e),
                    labels,
                }
            }),
            (
                prop::sample::select(vec![
                    "count", "sum", "toLower", "coalesce", "f", "all", "reduce"
                ]),
                any::<bool>(),
                prop::collection::vec(inner.clone(), 0..3)
            )
                .prop_map(|(n, distinct, args)| Expr::Call {
                    name: n.to_string(),
                    distinct,
                    args
                }),
            (
                inner.clone(),
                prop::option::of(inner.clone()),
                prop::option::of(inner.clone())
            )
                .prop_map(|(e, a, b)| Expr::Slice(
                    Box::new(e),
                    a.map(Box::new),
                    b.map(Box::new)
                )),
            (
                name(),
                inner.clone(),
                prop::option::of(inner.clone()),
                prop::option::of(inner.clone())
            )
                .prop_map(|(variable, list, p, q)| Expr::Comprehension {
                    variable,
                    list: Box::new(list),
                    predicate: p.map(Box::new),
                    projection: q.map(Box::new),
                }),
            (
                prop::sample::select(vec![
                    Quantifier::All,
                    Quantifier::Any,
                    Quantifier::None,
                    Quantifier::Single
                ]),
                name(),
                inner.clone(),
                inner.clone()
            )
                .prop_map(|(quantifier, variable, list, p)| Expr::Quantified {
                    quantifier,
                    variable,
                    list: Box::new(list),
                    predicate: Box::new(p),
                }),
            (name(), inner.clone(), name(), inner.clone(), inner.clone()).prop_map(
                |(accumulator, init, variable, list, e)| Expr::Reduce {
                    accumulator,
                    init: Box::new(init),
                    variable,
                    list: Box::new(list),
                    expr: Box::new(e),
                }
            ),
            (
                prop::option::of(inner.clone()),
                prop::collection::vec((inner.clone(), inner.clone()), 1..3),
                prop::option::of(inner)
            )
                .prop_map(|(operand, whens, else_)| Expr::Case {
                    operand: operand.map(Box::new),
                    whens,
                    else_: else_.map(Box::new),
                }),
        ]
    })
}

fn props() -> impl Strategy<Value = Vec<(String, Expr)>> {
    prop::collection::vec((name(), expr()), 0..2)
}

fn node() -> impl Strategy<Value = NodePattern> {
    (
        prop::option::of(name()),
        prop::collection::vec(name(), 0..2),
        props(),
    )
        .prop_map(|(variable, labels, properties)| NodePattern {
            variable,
            labels,
            properties,
        })
}

fn rel() -> impl Strategy<Value = RelPattern> {
    let length = prop::option::of(
        (prop::option::of(0u32..5), prop::option::of(0u32..5))
            .prop_map(|(min, max)| VarLength { min, max }),
    );
    (
        prop::option::of(name()),
        prop::collection::vec(name(), 0..3),
        prop::sample::select(vec![
            RelDirection::Left,
            RelDirection::Right,
            RelDirection::Both,
        ]),
        length,
        props(),
    )
        .prop_map(
            |(variable, types, direction, length, properties)| RelPattern {
                variable,
                types,
                direction,
                length,
                properties,
            },
        )
}

fn path() -> impl Strategy<Value = PathPattern> {
    (node(), prop::collection::vec((rel(), node()), 0..3)).prop_map(|(start, hops)| PathPattern {
        variable: None,
        start,
        hops,
    })
}

/// A MATCH pattern, which may be a named path.
fn match_path() -> impl Strategy<Value = PathPattern> {
    (prop::option::of(name()), path()).prop_map(|(variable, p)| PathPattern { variable, ..p })
}

fn projection() -> impl Strategy<Value = Projection> {
    (
        any::<bool>(),
        any::<bool>(),
        prop::collection::vec(
            (expr(), prop::option::of(name())).prop_map(|(expr, alias)| ProjectionItem {
                expr,
                alias,
                text: None,
            }),
            1..3,
        ),
        prop::collection::vec(
            (expr(), any::<bool>()).prop_map(|(expr, descending)| SortItem { expr, descending }),
            0..2,
        ),
        prop::option::of(expr()),
        prop::option::of(expr()),
    )
        .prop_map(
            |(distinct, star, items, order_by, skip, limit)| Projection {
                distinct,
                star,
                items,
                order_by,
                skip,
                limit,
            },
        )
}

fn set_item() -> impl Strategy<Value = SetItem> {
    prop_oneof![
        (name(), name(), expr()).prop_map(|(variable, key, value)| SetItem::Property {
            variable,
            key,
            value
        }),
        (name(), expr()).prop_map(|(variable, value)| SetItem::Replace { variable, value }),
        (name(), expr()).prop_map(|(variable, value)| SetItem::Merge { variable, value }),
        (name(), prop::collection::vec(name(), 1..3))
            .prop_map(|(variable, labels)| SetItem::Labels { variable, labels }),
    ]
}

fn reading_clause() -> impl Strategy<Value = Clause> {
    prop_oneof![
        (
            any::<bool>(),
            prop::collection::vec(match_path(), 1..3),
            prop::option::of(expr())
        )
            .prop_map(|(optional, patterns, where_)| Clause::Match(Match {
                optional,
                patterns,
                where_
            })),
        (expr(), name()).prop_map(|(expr, alias)| Clause::Unwind(Unwind { expr, alias })),
        (projection(), prop::option::of(expr()))
            .prop_map(|(projection, where_)| Clause::With(With { projection, where_ })),
        prop::collection::vec(path(), 1..2).prop_map(Clause::Create),
        (
            path(),
            prop::collection::vec(
                (any::<bool>(), prop::collection::vec(set_item(), 1..3)),
                0..2
            )
        )
            .prop_map(|(pattern, actions)| {
                Clause::Merge(Merge {
                    pattern,
                    actions: actions
                        .into_iter()
                        .map(|(on_create, items)| MergeAction { on_create, items })
                        .collect(),
                })
            }),
        prop::collection::vec(set_item(), 1..3).prop_map(Clause::Set),
        prop::collection::vec(
            prop_oneof![
                (name(), name()).prop_map(|(variable, key)| RemoveItem::Property { variable, key }),
                (name(), prop::collection::vec(name(), 1..3))
                    .prop_map(|(variable, labels)| RemoveItem::Labels { variable, labels }),
            ],
            1..3
        )
        .prop_map(Clause::Remove),
        (any::<bool>(), prop::collection::vec(expr(), 1..3))
            .prop_map(|(detach, exprs)| Clause::Delete(Delete { detach, exprs })),
    ]
}

fn statement() -> impl Strategy<Value = Statement> {
    (
        prop::sample::select(vec![Mode::Run, Mode::Explain, Mode::Profile]),
        prop::collection::vec(reading_clause(), 0..4),
        projection(),
    )
        .prop_map(|(mode, mut clauses, ret)| {
            // A statement ends with RETURN or a write clause.
            if !clauses.last().is_some_and(Clause::is_write) {
                clauses.push(Clause::Return(ret));
            }
            Statement {
                mode,
                clauses,
                unions: Vec::new(),
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn printed_statements_parse_back_to_the_same_tree(stmt in statement()) {
        let text = stmt.to_string();
        let parsed = parse(&text).map_err(|e| TestCaseError::fail(format!("{text}\n{e}")))?;
        prop_assert_eq!(parsed, stmt, "text: {}", text);
    }

    #[test]
    fn random_text_never_panics(text in "[ -~\u{e9}\u{ff23}\n]{0,80}") {
        let _ = parse(&text);
    }

    #[test]
    fn random_token_soup_never_panics(words in prop::collection::vec(prop::sample::select(vec![
        "MATCH", "(", ")", "-", "->", "<-", "[", "]", ":", "n", "RETURN", "WHERE", "=", "1", "'s'", "{", "}", ",",
        "*", "..", "AS", "WITH", "CREATE", "SET", ".", "x", "NOT", "AND", "$p", "count", "DISTINCT", "ORDER", "BY",
    ]), 0..30)) {
        let text = words.join(" ");
        if let Ok(stmt) = parse(&text) {
            let again = parse(&stmt.to_string());
            prop_assert_eq!(again.ok(), Some(stmt));
        }
    }
}
