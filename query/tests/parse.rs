//! Parser behaviour through the public API: errors with positions, the recursion guard,
//! read-only classification and printer round trips of tricky input.

use svc_query::ast::{Clause, Expr, Literal};
use svc_query::{parse, QueryError, Statement};

/// Parses, prints, parses again: both trees must be equal and printing must be stable.
fn verified(text: &str) -> Statement {
    let first = parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    let printed = first.to_string();
    let second = parse(&printed).unwrap_or_else(|e| panic!("printed {printed}: {e}"));
    assert_eq!(first, second, "round trip of {text} via {printed}");
    assert_eq!(second.to_string(), printed, "printing is stable");
    first
}

fn syntax_error(text: &str) -> (u32, u32, String, String) {
    match parse(text) {
        Err(QueryError::Syntax {
            position,
            expected,
            found,
        }) => (position.line, position.column, expected, found),
        other => panic!("{text}: expected a syntax error, got {other:?}"),
    }
}

#[test]
fn errors_say_what_was_expected_and_where() {
    let (line, col, expected, found) = syntax_error("MATCH (c:Customer RETURN c");
    assert_eq!((line, col), (1, 19));
    assert!(
        expected.contains("')'") || expected.contains(")"),
        "{expected}"
    );
    assert_eq!(found, "'RETURN'");

    let (line, col, _, found) = syntax_error("MATCH (c)\nWHERE c.x = \n  RETURN c");
    assert_eq!((line, col), (3, 3));
    assert_eq!(found, "'RETURN'");

    let (_, _, expected, found) = syntax_error("MATCH (c) RETURN c LIMT 5");
    assert!(expected.contains("LIMIT"), "{expected}");
    assert_eq!(found, "'LIMT'");

    let (_, _, expected, found) = syntax_error("MATCH (c)");
    assert!(expected.contains("RETURN"), "{expected}");
    assert_eq!(found, "end of input");

    let e = parse("MATCH (c) RETURN c n").expect_err("stray word");
    assert_eq!(e.code(), "syntax_error");
    assert!(e.to_string().contains("expected"), "{e}");
}

#[test]
fn unsupported_constructs_name_themselves() {
    for (text, what) in [
        ("CALL db.labels()", "CALL"),
        ("LOAD CSV FROM 'x' AS l RETURN l", "LOAD"),
        ("MATCH (n) FOREACH (x IN [1] | SET n.a = x)", "FOREACH"),
        (
            "MATCH (n) WHERE COUNT { MATCH (n) } > 1 RETURN n",
            "subqueries",
        ),
        (
            "CREATE CONSTRAINT c FOR (n:X) REQUIRE n.id IS UNIQUE",
            "schema",
        ),
        ("match (n) return n union create (m) return m", "UNION"),
    ] {
        match parse(text) {
            Err(e @ QueryError::Unsupported { .. }) => {
                assert!(e.to_string().contains(what), "{text}: {e}")
            }
            other => panic!("{text}: expected unsupported, got {other:?}"),
        }
    }
}

#[test]
fn deep_nesting_is_refused_not_a_crash() {
    // Just inside the guard, the tree is printed, planned and evaluated on a test thread's
    // small stack without trouble.
    let g = svc_query::model::ModelGraph::new();
    for ok in [
        format!("RETURN {}1{} AS x", "(".repeat(60), ")".repeat(60)),
        format!("RETURN {}1{} AS x", "[".repeat(30), "]".repeat(30)),
        format!("RETURN 1{} AS x", " + 1".repeat(120)),
        format!("RETURN true{} AS x", " AND true".repeat(120)),
        format!("RETURN {{a: 1}}{} AS x", ".a".repeat(120)),
        format!("RETURN {}true AS x", "NOT ".repeat(60)),
        // a tree close to MAX_TREE_DEPTH: unary nesting over a long chain
        format!("RETURN {}(1{}) AS x", "-".repeat(60), " + 1".repeat(95)),
        // both guards nearly full on one path
        format!(
            "RETURN {}1{}{} AS x",
            "(".repeat(60),
            " + 1".repeat(110),
            ")".repeat(60)
        ),
    ] {
        let stmt = verified(&ok);
        let _ = svc_query::run_read(
            &g,
            &stmt,
            &svc_query::Params::new(),
            &svc_query::Limits::default(),
        );
    }
    for text in [
        format!("RETURN {}1{}", "(".repeat(5000), ")".repeat(5000)),
        format!("RETURN {}1{}", "[".repeat(5000), "]".repeat(5000)),
        format!("RETURN {}true", "NOT ".repeat(5000)),
        format!("RETURN {}1", "-".repeat(5000)),
        format!("RETURN {}", "{a: ".repeat(5000)),
        format!("RETURN 1{}", " + 1".repeat(5000)),
        format!("RETURN 1{}", " AND true".repeat(5000)),
        format!("RETURN n{}", ".a".repeat(5000)),
        format!("RETURN [1]{}", "[0]".repeat(5000)),
        // chains inside parentheses stack up: 60 levels of 100 operators
        format!(
            "RETURN {}1{}",
            "(".repeat(60),
            format!("{})", " + 1".repeat(100)).repeat(60)
        ),
        format!("RETURN 1{}", " IN [1]".repeat(5000)),
    ] {
        let e = parse(&text).expect_err("too deep");
        assert_eq!(e.code(), "syntax_error", "{e}");
    }
}

#[test]
fn read_only_is_decided_from_the_tree() {
    for text in [
        "MATCH (n) RETURN n",
        "MATCH (n) WHERE n.name = 'CREATE (x)' RETURN n",
        "MATCH (n) RETURN n // DELETE n",
        "MATCH (n) /* SET n.x = 1 */ RETURN n.`delete`",
        "MATCH (`create`) RETURN `create`.set AS removed",
        "EXPLAIN MATCH (n) RETURN n",
    ] {
        assert!(parse(text).expect("parses").is_read_only(), "{text}");
    }
    for text in [
        "CREATE (n)",
        "MATCH (n) SET n.x = 1",
        "MATCH (n) DETACH DELETE n",
        "MERGE (n:X)",
        "MATCH (n) REMOVE n:X",
        "match (n) with n create (m) return m",
        "EXPLAIN CREATE (n)",
    ] {
        assert!(!parse(text).expect("parses").is_read_only(), "{text}");
    }
}

#[test]
fn tricky_text_round_trips() {
    for text in [
        "MATCH (`match`:`Weird Label` {`key with space`: 'it\\'s'}) RETURN `match`.`order` AS `return`",
        "RETURN -1 - -2, 2 ^ -1, -(1 + 2) * 3, NOT NOT true, NOT (1 = 2) = false",
        "RETURN 1 = 2 = 3, (1 = 2) = 3, 1 = (2 = 3), a IS NULL IS NULL",
        "RETURN [1, 2.5, 'x', null, true, {a: [1]}][0].a",
        "MATCH (a)<-[r:T|U*2..5 {w: 1}]-(b)-->(c)--(d)<--(e)-[*]-(f)-[*..3]->(g)-[*2..]->(h) RETURN a",
        "MATCH (a) WHERE a.x STARTS WITH 'a' AND a.y ENDS WITH 'b' OR a.z CONTAINS 'c' XOR a.w IN [1] RETURN count(DISTINCT a), count(*)",
        "UNWIND $list AS x WITH DISTINCT x ORDER BY x DESC SKIP 1 LIMIT 2 WHERE x > 0 RETURN *, x AS y",
        "MERGE (a:A {k: 1}) ON CREATE SET a.c = 1, a:B ON MATCH SET a += {m: 2}, a = {}",
        "MATCH (a) REMOVE a.x, a:L:M DETACH DELETE a",
        "PROFILE OPTIONAL MATCH (n) RETURN n ORDER BY n.x ASC, n.y DESCENDING",
        "RETURN 1e300, 0.5, 1.0E-7, 'tab\\t\\u0001'",
        // found by the proptest: nested label predicates need parentheses
        "MATCH (n) WHERE (n:A):B AND n:C:D RETURN n:E, n.x:F",
        // the language of the TCK: comprehensions, list predicates, CASE, slices, patterns
        "RETURN [x IN [1, 2] WHERE x > 1 | x * 2], [(x IN [1])], all(x IN [1] WHERE x > 0), reduce(a = 0, x IN [1] | a + x)",
        "RETURN CASE WHEN 1 < 2 < 3 THEN [1, 2, 3][1..] ELSE [][..-1] END, CASE 1 WHEN 1 THEN 0x1F END, -9223372036854775808, .5",
        "MATCH p = (a)-[r*]->(b) WHERE (a)-->(b) AND NOT (a)<--() OR exists((b)-->()) RETURN [q = (a)-->(c) WHERE c.x | length(q)], nodes(p), date.truncate('day', date())",
        "MATCH (n) RETURN cOuNt( * ), n.x + 1, toUpper( n.name )",
        "MATCH (n) RETURN n.x AS x UNION MATCH (m) RETURN m.y AS x UNION RETURN 1 AS x",
        "RETURN 1 AS a UNION ALL UNWIND [2] AS a RETURN a",
    ] {
        verified(text);
    }
}

#[test]
fn keywords_are_case_insensitive_and_names_keep_case() {
    let s = verified("mAtCh (N:Customer) wHeRe N.Name = 'x' ReTuRn N");
    let Clause::Match(m) = &s.clauses[0] else {
        panic!("match")
    };
    assert_eq!(m.patterns[0].start.variable.as_deref(), Some("N"));
    assert_eq!(m.patterns[0].start.labels, vec!["Customer".to_string()]);
}

#[test]
fn negative_numbers_are_unary_minus() {
    let s = verified("RETURN -5");
    let Clause::Return(p) = &s.clauses[0] else {
        panic!("return")
    };
    assert_eq!(
        p.items[0].expr,
        Expr::Unary(
            svc_query::ast::UnaryOp::Neg,
            Box::new(Expr::Literal(Literal::Int(5)))
        )
    );
}
