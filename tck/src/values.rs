//! The TCK's value notation (`1`, `1.5`, `'s'`, `[1, 2]`, `{k: 1}`, `(:L {k: 1})`,
//! `[:T {k: 1}]`, `<(:A)-[:T]->(:B)>`), our results converted into it, and the canonical
//! text both are compared by.
//!
//! Comparison follows the TCK: nodes and relationships by labels / type and properties (not
//! identity), integers and floats never equal (`1` is not `1.0`), floats exactly (NaN equals
//! NaN), maps by key, lists in order unless the step ignores list element order.

use std::collections::BTreeMap;

use svc_engine::Value;
use svc_query::{ResultNode, ResultRelationship, ResultValue};

use crate::TckError;

/// A value as the TCK writes it.
#[derive(Clone, Debug, PartialEq)]
pub enum TVal {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<TVal>),
    Map(BTreeMap<String, TVal>),
    Node {
        labels: Vec<String>,
        props: BTreeMap<String, TVal>,
    },
    Rel {
        rel_type: String,
        props: BTreeMap<String, TVal>,
    },
    /// A start node and hops of (relationship, pointing right?, node).
    Path {
        start: Box<TVal>,
        hops: Vec<(TVal, bool, TVal)>,
    },
}

struct P<'a> {
    s: &'a [u8],
    text: &'a str,
    i: usize,
    depth: u32,
}

/// Nesting the TCK's tables never come near; a guard on the recursion all the same.
const MAX_NESTING: u32 = 64;

fn bad(text: &str, what: &str) -> TckError {
    TckError::Value {
        text: text.to_owned(),
        message: what.to_owned(),
    }
}

impl P<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.i).copied()
    }
    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, c: u8) -> Result<(), TckError> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(bad(
                self.text,
                &format!("expected '{}' at {}", c as char, self.i),
            ))
        }
    }

    fn name(&mut self) -> Result<String, TckError> {
        self.ws();
        if self.eat(b'`') {
            let start = self.i;
            while self.i < self.s.len() && self.s[self.i] != b'`' {
                self.i += 1;
            }
            let n = self.text[start..self.i].to_owned();
            self.expect(b'`')?;
            return Ok(n);
        }
        let start = self.i;
        while self.i < self.s.len() {
            let c = self.s[self.i];
            if c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80 {
                self.i += 1;
            } else {
                break;
            }
        }
        if start == self.i {
            return Err(bad(self.text, &format!("expected a name at {start}")));
        }
        Ok(self.text[start..self.i].to_owned())
    }

    fn value(&mut self) -> Result<TVal, TckError> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(bad(self.text, "nested too deeply"));
        }
        let v = self.value_inner();
        self.depth -= 1;
        v
    }

    fn value_inner(&mut self) -> Result<TVal, TckError> {
        match self.peek() {
            None => Err(bad(self.text, "unexpected end")),
            Some(b'\'') | Some(b'"') => self.string().map(TVal::Str),
            Some(b'[') => {
                let save = self.i;
                self.i += 1;
                if self.peek() == Some(b':') {
                    self.i = save;
                    return self.rel();
                }
                let mut items = Vec::new();
                if !self.eat(b']') {
                    loop {
                        items.push(self.value()?);
                        if self.eat(b']') {
                            break;
                        }
                        self.expect(b',')?;
                    }
                }
                Ok(TVal::List(items))
            }
            Some(b'{') => self.map().map(TVal::Map),
            Some(b'(') => self.node(),
            Some(b'<') => self.path(),
            Some(_) => self.scalar(),
        }
    }

    fn string(&mut self) -> Result<String, TckError> {
        let quote = self.s[self.i];
        self.i += 1;
        let mut out = String::new();
        let rest = &self.text[self.i..];
        let mut chars = rest.char_indices();
        while let Some((k, c)) = chars.next() {
            if c == '\\' {
                match chars.next() {
                    Some((_, e)) => out.push(e),
                    None => break,
                }
            } else if c as u32 == u32::from(quote) {
                self.i += k + 1;
                return Ok(out);
            } else {
                out.push(c);
            }
        }
        Err(bad(self.text, "unterminated string"))
    }

    fn map(&mut self) -> Result<BTreeMap<String, TVal>, TckError> {
        self.expect(b'{')?;
        let mut m = BTreeMap::new();
        if self.eat(b'}') {
            return Ok(m);
        }
        loop {
            let k = self.name()?;
            self.expect(b':')?;
            let v = self.value()?;
            m.insert(k, v);
            if self.eat(b'}') {
                return Ok(m);
            }
            self.expect(b',')?;
        }
    }

    fn node(&mut self) -> Result<TVal, TckError> {
        self.expect(b'(')?;
        let mut labels = Vec::new();
        while self.eat(b':') {
            labels.push(self.name()?);
        }
        let props = if self.peek() == Some(b'{') {
            self.map()?
        } else {
            BTreeMap::new()
        };
        self.expect(b')')?;
        labels.sort();
        Ok(TVal::Node { labels, props })
    }

    fn rel(&mut self) -> Result<TVal, TckError> {
        self.expect(b'[')?;
        self.expect(b':')?;
        let rel_type = self.name()?;
        let props = if self.peek() == Some(b'{') {
            self.map()?
        } else {
            BTreeMap::new()
        };
        self.expect(b']')?;
        Ok(TVal::Rel { rel_type, props })
    }

    fn path(&mut self) -> Result<TVal, TckError> {
        self.expect(b'<')?;
        let start = Box::new(self.node()?);
        let mut hops = Vec::new();
        loop {
            if self.eat(b'>') {
                return Ok(TVal::Path { start, hops });
            }
            let left = self.eat(b'<');
            self.expect(b'-')?;
            let rel = self.rel()?;
            self.expect(b'-')?;
            let right = self.eat(b'>');
            if left == right {
                return Err(bad(self.text, "a path hop needs exactly one direction"));
            }
            let node = self.node()?;
            hops.push((rel, right, node));
        }
    }

    fn scalar(&mut self) -> Result<TVal, TckError> {
        self.ws();
        let start = self.i;
        while self.i < self.s.len() && !b",]}) \t\n".contains(&self.s[self.i]) {
            self.i += 1;
        }
        let word = &self.text[start..self.i];
        Ok(match word {
            "null" => TVal::Null,
            "true" => TVal::Bool(true),
            "false" => TVal::Bool(false),
            "NaN" => TVal::Float(f64::NAN),
            "Inf" | "Infinity" => TVal::Float(f64::INFINITY),
            "-Inf" | "-Infinity" => TVal::Float(f64::NEG_INFINITY),
            w => match w.parse::<i64>() {
                Ok(i) => TVal::Int(i),
                Err(_) => match w.parse::<f64>() {
                    Ok(f) if w.contains(['.', 'e', 'E']) => TVal::Float(f),
                    _ => return Err(bad(self.text, &format!("not a value: {w}"))),
                },
            },
        })
    }
}

/// Parses one value in the TCK's notation.
pub fn parse(text: &str) -> Result<TVal, TckError> {
    let mut p = P {
        s: text.as_bytes(),
        text,
        i: 0,
        depth: 0,
    };
    let v = p.value()?;
    p.ws();
    if p.i != p.s.len() {
        return Err(bad(text, "trailing text"));
    }
    Ok(v)
}

/// A parameter value (graph entities cannot be parameters).
pub fn to_param(v: &TVal) -> Result<Value, TckError> {
    Ok(match v {
        TVal::Null => Value::Null,
        TVal::Bool(b) => Value::Bool(*b),
        TVal::Int(i) => Value::Int(*i),
        TVal::Float(f) => Value::Float(*f),
        TVal::Str(s) => Value::String(s.clone()),
        TVal::List(l) => Value::List(l.iter().map(to_param).collect::<Result<_, _>>()?),
        TVal::Map(m) => Value::Map(
            m.iter()
                .map(|(k, v)| Ok((k.clone(), to_param(v)?)))
                .collect::<Result<_, TckError>>()?,
        ),
        other => {
            return Err(TckError::Value {
                text: format!("{other:?}"),
                message: "a graph entity cannot be a parameter".into(),
            })
        }
    })
}

fn props_of(p: &BTreeMap<String, ResultValue>) -> BTreeMap<String, TVal> {
    p.iter().map(|(k, v)| (k.clone(), from_result(v))).collect()
}

fn node_of(n: &ResultNode) -> TVal {
    let mut labels = n.labels.clone();
    labels.sort();
    TVal::Node {
        labels,
        props: props_of(&n.properties),
    }
}

fn rel_of(r: &ResultRelationship) -> TVal {
    TVal::Rel {
        rel_type: r.rel_type.clone(),
        props: props_of(&r.properties),
    }
}

/// One of our result values in the TCK's terms.
pub fn from_result(v: &ResultValue) -> TVal {
    match v {
        ResultValue::Null => TVal::Null,
        ResultValue::Bool(b) => TVal::Bool(*b),
        ResultValue::Int(i) => TVal::Int(*i),
        ResultValue::Float(f) => TVal::Float(*f),
        ResultValue::String(s) => TVal::Str(s.clone()),
        // The TCK writes temporal values as their ISO 8601 strings.
        ResultValue::DateTime(t) => TVal::Str(svc_query::result::cypher_datetime_text(*t)),
        ResultValue::Temporal(t) => TVal::Str(t.text.clone()),
        ResultValue::List(l) => TVal::List(l.iter().map(from_result).collect()),
        ResultValue::Map(m) => TVal::Map(props_of(m)),
        ResultValue::Node(n) => node_of(n),
        ResultValue::Relationship(r) => rel_of(r),
        ResultValue::Path(p) => {
            let Some(first) = p.nodes.first() else {
                return TVal::Null;
            };
            let mut at = first.id;
            let hops = p
                .relationships
                .iter()
                .zip(p.nodes.iter().skip(1))
                .map(|(r, n)| {
                    let right = r.start == at;
                    at = n.id;
                    (rel_of(r), right, node_of(n))
                })
                .collect();
            TVal::Path {
                start: Box::new(node_of(first)),
                hops,
            }
        }
    }
}

fn float_text(f: f64) -> String {
    if f.is_nan() {
        "NaN".into()
    } else if f.is_infinite() {
        if f > 0.0 { "Inf" } else { "-Inf" }.into()
    } else if f == 0.0 {
        // -0.0 equals 0.0.
        "0.0".into()
    } else {
        format!("{f:?}")
    }
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

fn props_text(p: &BTreeMap<String, TVal>, unordered_lists: bool) -> String {
    if p.is_empty() {
        return String::new();
    }
    let inner: Vec<String> = p
        .iter()
        .map(|(k, v)| format!("{k}: {}", canonical(v, unordered_lists)))
        .collect();
    format!(" {{{}}}", inner.join(", "))
}

/// The text two values are compared by: equal texts, equal values in the TCK's sense. With
/// `unordered_lists`, list elements are sorted by their own text first.
pub fn canonical(v: &TVal, unordered_lists: bool) -> String {
    match v {
        TVal::Null => "null".into(),
        TVal::Bool(b) => b.to_string(),
        TVal::Int(i) => i.to_string(),
        TVal::Float(f) => float_text(*f),
        TVal::Str(s) => quote(s),
        TVal::List(l) => {
            let mut items: Vec<String> = l.iter().map(|x| canonical(x, unordered_lists)).collect();
            if unordered_lists {
                items.sort();
            }
            format!("[{}]", items.join(", "))
        }
        TVal::Map(m) => {
            let inner: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{k}: {}", canonical(v, unordered_lists)))
                .collect();
            format!("{{{}}}", inner.join(", "))
        }
        TVal::Node { labels, props } => {
            let labels: String = labels.iter().map(|l| format!(":{l}")).collect();
            format!("({labels}{})", props_text(props, unordered_lists))
        }
        TVal::Rel { rel_type, props } => {
            format!("[:{rel_type}{}]", props_text(props, unordered_lists))
        }
        TVal::Path { start, hops } => {
            let mut out = format!("<{}", canonical(start, unordered_lists));
            for (rel, right, node) in hops {
                let r = canonical(rel, unordered_lists);
                if *right {
                    out.push_str(&format!("-{r}->"));
                } else {
                    out.push_str(&format!("<-{r}-"));
                }
                out.push_str(&canonical(node, unordered_lists));
            }
            out.push('>');
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_notation() {
        let v = parse("[1, 2.5, 'a\\'b', null, {k: [true]}, (:B:A {x: -1}), [:T]]").expect("ok");
        assert_eq!(
            canonical(&v, false),
            "[1, 2.5, 'a\\'b', null, {k: [true]}, (:A:B {x: -1}), [:T]]"
        );
        let p = parse("<(:A)-[:T {w: 1}]->()<-[:S]-(:C)>").expect("ok");
        assert_eq!(canonical(&p, false), "<(:A)-[:T {w: 1}]->()<-[:S]-(:C)>");
        assert_ne!(parse("1").ok(), parse("1.0").ok());
        assert_eq!(canonical(&parse("NaN").expect("ok"), false), "NaN");
        assert_eq!(
            canonical(&parse("[3, 1, 2]").expect("ok"), true),
            canonical(&parse("[1, 2, 3]").expect("ok"), true)
        );
        assert!(parse("[1, 2").is_err());
        assert!(parse(&"[".repeat(100)).is_err());
    }
}
