//! Schema commands (Neo4j's syntax where it applies):
//!
//! ```text
//! CREATE [RANGE] INDEX [name] [IF NOT EXISTS] FOR (n:Label) ON (n.property)
//! DROP INDEX name [IF EXISTS]
//! SHOW [ALL | RANGE] INDEX | INDEXES
//! ```
//!
//! `CREATE INDEX` declares an equality index (exact lookups); `CREATE RANGE INDEX` an ordered
//! one (exact lookups, ranges and top-k). They are not Cypher clauses: `parse_schema` tells
//! whether a text is one, and the caller runs it against the store's index catalog.

use svc_engine::IndexKind;

use crate::error::{position_of, QueryError};
use crate::lexer::{tokenize, Tok, Token};

/// One schema command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SchemaCommand {
    CreateIndex {
        /// None: the store picks `index_<Label>_<property>`.
        name: Option<String>,
        label: String,
        property: String,
        kind: IndexKind,
        if_not_exists: bool,
    },
    DropIndex {
        name: String,
        if_exists: bool,
    },
    ShowIndexes,
}

impl SchemaCommand {
    /// Whether the command changes the catalog (CREATE, DROP) rather than reading it (SHOW).
    pub fn writes(&self) -> bool {
        !matches!(self, SchemaCommand::ShowIndexes)
    }
}

/// Ok(None) when `text` is not a schema command (parse it with `parse`); the command, or the
/// syntax error in it, otherwise.
pub fn parse_schema(text: &str) -> Result<Option<SchemaCommand>, QueryError> {
    let tokens = tokenize(text)?;
    let mut c = Cursor {
        text,
        toks: &tokens,
        at: 0,
    };
    let is_schema = match () {
        _ if c.kw_at(0, "CREATE") => {
            c.kw_at(1, "INDEX") || (c.kw_at(1, "RANGE") && c.kw_at(2, "INDEX"))
        }
        _ if c.kw_at(0, "DROP") => c.kw_at(1, "INDEX"),
        _ if c.kw_at(0, "SHOW") => true,
        _ => false,
    };
    if !is_schema {
        return Ok(None);
    }
    let cmd = if c.eat_kw("CREATE") {
        create(&mut c)?
    } else if c.eat_kw("DROP") {
        c.expect_kw("INDEX")?;
        let name = c.name("an index name")?;
        let if_exists = c.eat_kw("IF");
        if if_exists {
            c.expect_kw("EXISTS")?;
        }
        SchemaCommand::DropIndex { name, if_exists }
    } else {
        c.expect_kw("SHOW")?;
        if !c.eat_kw("ALL") {
            c.eat_kw("RANGE");
        }
        if !c.eat_kw("INDEXES") {
            if c.kw_at(0, "CONSTRAINTS") || c.kw_at(0, "CONSTRAINT") {
                return Err(c.unsupported("constraints"));
            }
            c.expect_kw("INDEX")?;
        }
        SchemaCommand::ShowIndexes
    };
    c.eat_punct(";");
    if !matches!(c.peek(), Tok::Eof) {
        if c.kw_at(0, "YIELD") || c.kw_at(0, "WHERE") || c.kw_at(0, "OPTIONS") {
            let what = format!("{} on a schema command", c.word().to_uppercase());
            return Err(c.unsupported(&what));
        }
        return Err(c.syntax("end of input"));
    }
    Ok(Some(cmd))
}

fn create(c: &mut Cursor<'_>) -> Result<SchemaCommand, QueryError> {
    let kind = if c.eat_kw("RANGE") {
        IndexKind::Ordered
    } else {
        IndexKind::Equality
    };
    c.expect_kw("INDEX")?;
    let name = if c.kw_at(0, "IF") || c.kw_at(0, "FOR") {
        None
    } else {
        Some(c.name("an index name, IF NOT EXISTS or FOR")?)
    };
    let if_not_exists = c.eat_kw("IF");
    if if_not_exists {
        c.expect_kw("NOT")?;
        c.expect_kw("EXISTS")?;
    }
    c.expect_kw("FOR")?;
    c.expect_punct("(")?;
    let after = if matches!(c.peek(), Tok::Punct(")")) {
        1
    } else {
        2
    };
    if matches!(c.peek_at(after), Tok::Punct("-") | Tok::Punct("<")) {
        return Err(c.unsupported("relationship indexes"));
    }
    let var = c.name("a variable")?;
    c.expect_punct(":")?;
    let label = c.name("a label")?;
    if c.is_punct(":") {
        return Err(c.unsupported("an index over several labels"));
    }
    c.expect_punct(")")?;
    c.expect_kw("ON")?;
    c.expect_punct("(")?;
    let owner = c.name("a variable")?;
    if owner != var {
        return Err(QueryError::Semantic(format!(
            "the indexed property must be of {var}, not of {owner}"
        )));
    }
    c.expect_punct(".")?;
    let property = c.name("a property key")?;
    if c.is_punct(",") {
        return Err(c.unsupported("composite indexes"));
    }
    c.expect_punct(")")?;
    Ok(SchemaCommand::CreateIndex {
        name,
        label,
        property,
        kind,
        if_not_exists,
    })
}

struct Cursor<'a> {
    text: &'a str,
    toks: &'a [Token],
    at: usize,
}

impl Cursor<'_> {
    fn peek_at(&self, n: usize) -> &Tok {
        self.toks.get(self.at + n).map_or(&Tok::Eof, |t| &t.tok)
    }
    fn peek(&self) -> &Tok {
        self.peek_at(0)
    }
    fn kw_at(&self, n: usize, word: &str) -> bool {
        matches!(self.peek_at(n), Tok::Ident(w) if w.eq_ignore_ascii_case(word))
    }
    fn word(&self) -> String {
        match self.peek() {
            Tok::Ident(w) => w.clone(),
            _ => String::new(),
        }
    }
    fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Tok::Punct(q) if *q == p)
    }
    fn eat_kw(&mut self, word: &str) -> bool {
        let hit = self.kw_at(0, word);
        self.at += usize::from(hit);
        hit
    }
    fn eat_punct(&mut self, p: &str) -> bool {
        let hit = self.is_punct(p);
        self.at += usize::from(hit);
        hit
    }
    fn expect_kw(&mut self, word: &'static str) -> Result<(), QueryError> {
        if self.eat_kw(word) {
            Ok(())
        } else {
            Err(self.syntax(word))
        }
    }
    fn expect_punct(&mut self, p: &'static str) -> Result<(), QueryError> {
        if self.eat_punct(p) {
            Ok(())
        } else {
            Err(self.syntax(&format!("'{p}'")))
        }
    }
    /// A bare word or a `quoted` one.
    fn name(&mut self, what: &str) -> Result<String, QueryError> {
        match self.peek().clone() {
            Tok::Ident(w) | Tok::Quoted(w) => {
                self.at += 1;
                Ok(w)
            }
            _ => Err(self.syntax(what)),
        }
    }
    fn offset(&self) -> usize {
        self.toks
            .get(self.at)
            .or(self.toks.last())
            .map_or(0, |t| t.offset)
    }
    fn syntax(&self, expected: &str) -> QueryError {
        QueryError::Syntax {
            position: position_of(self.text, self.offset()),
            expected: expected.to_owned(),
            found: self.peek().describe(),
        }
    }
    fn unsupported(&self, what: &str) -> QueryError {
        QueryError::Unsupported {
            position: position_of(self.text, self.offset()),
            what: what.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(name: Option<&str>, kind: IndexKind, if_not_exists: bool) -> SchemaCommand {
        SchemaCommand::CreateIndex {
            name: name.map(str::to_owned),
            label: "Touchpoint".into(),
            property: "action".into(),
            kind,
            if_not_exists,
        }
    }

    fn ok(text: &str) -> SchemaCommand {
        parse_schema(text)
            .unwrap_or_else(|e| panic!("{text}: {e}"))
            .unwrap_or_else(|| panic!("{text}: not a schema command"))
    }

    fn err(text: &str) -> QueryError {
        parse_schema(text).expect_err(text)
    }

    #[test]
    fn create_index_forms() {
        assert_eq!(
            ok("CREATE INDEX FOR (t:Touchpoint) ON (t.action)"),
            create(None, IndexKind::Equality, false)
        );
        assert_eq!(
            ok("create range index tp_action if not exists for (t:Touchpoint) on (t.action);"),
            create(Some("tp_action"), IndexKind::Ordered, true)
        );
        assert_eq!(
            ok("CREATE INDEX `my index` IF NOT EXISTS FOR (`t`:`Touchpoint`) ON (t.`action`)"),
            create(Some("my index"), IndexKind::Equality, true)
        );
    }

    #[test]
    fn drop_and_show() {
        assert_eq!(
            ok("DROP INDEX tp_action"),
            SchemaCommand::DropIndex {
                name: "tp_action".into(),
                if_exists: false
            }
        );
        assert_eq!(
            ok("drop index `x y` IF EXISTS"),
            SchemaCommand::DropIndex {
                name: "x y".into(),
                if_exists: true
            }
        );
        for text in [
            "SHOW INDEXES",
            "show index",
            "SHOW RANGE INDEXES;",
            "SHOW ALL INDEXES",
        ] {
            assert_eq!(ok(text), SchemaCommand::ShowIndexes, "{text}");
        }
        assert!(!SchemaCommand::ShowIndexes.writes());
        assert!(ok("DROP INDEX x").writes());
    }

    #[test]
    fn other_statements_are_not_schema_commands() {
        for text in [
            "CREATE (n:Index)",
            "MATCH (n) RETURN n",
            "CREATE (:Customer {name: 'index'})",
            "MERGE (i:INDEX) RETURN i",
        ] {
            assert_eq!(parse_schema(text).expect(text), None, "{text}");
        }
    }

    #[test]
    fn errors_say_where_and_what() {
        let e = err("CREATE INDEX FOR (t:Touchpoint) ON (t.action, t.ts)");
        assert_eq!(e.code(), "unsupported");
        let e = err("CREATE INDEX FOR ()-[r:KNOWS]-() ON (r.since)");
        assert_eq!(e.code(), "unsupported");
        assert_eq!(err("SHOW INDEXES YIELD name").code(), "unsupported");
        assert_eq!(err("SHOW CONSTRAINTS").code(), "unsupported");
        let e = err("CREATE INDEX FOR (t:Touchpoint) ON (u.action)");
        assert_eq!(e.code(), "semantic_error");
        match err("CREATE INDEX FOR (t:Touchpoint)\nON t.action") {
            QueryError::Syntax {
                position,
                expected,
                found,
            } => {
                assert_eq!((position.line, position.column), (2, 4));
                assert_eq!(expected, "'('");
                assert_eq!(found, "'t'");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(err("DROP INDEX").code(), "syntax_error");
        assert_eq!(err("DROP INDEX a b").code(), "syntax_error");
        assert_eq!(
            err("CREATE INDEX x IF EXISTS FOR (t:T) ON (t.p)").code(),
            "syntax_error"
        );
    }
}
