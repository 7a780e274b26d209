//! Lexer: query text -> tokens with byte offsets, built from nom combinators over `&str`.
//!
//! Keywords are not recognised here: every bare word is an `Ident` and the parser compares it
//! case-insensitively. So a word written with look-alike Unicode letters (a Cyrillic `С`, a
//! full-width `ＣＲＥＡＴＥ`) is just an identifier and can never act as a keyword.

use nom::bytes::complete::{tag, take_until, take_while, take_while1};
use nom::character::complete::{anychar, char, digit1, one_of};
use nom::combinator::{opt, recognize};
use nom::sequence::{pair, tuple};
use nom::IResult;

use crate::error::{position_of, QueryError};

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tok {
    /// A bare word: identifier or keyword.
    Ident(String),
    /// A `backtick quoted` name: always a name, never a keyword.
    Quoted(String),
    /// Digits of an integer literal (range-checked by the parser, which knows about the sign).
    Integer(String),
    Float(f64),
    Str(String),
    /// `$name`
    Param(String),
    Punct(&'static str),
    Eof,
}

impl Tok {
    /// How the token is shown in "found X" messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("'{s}'"),
            Tok::Quoted(s) => format!("`{s}`"),
            Tok::Integer(s) => format!("'{s}'"),
            Tok::Float(f) => format!("'{f}'"),
            Tok::Str(_) => "a string literal".to_owned(),
            Tok::Param(p) => format!("'${p}'"),
            Tok::Punct(p) => format!("'{p}'"),
            Tok::Eof => "end of input".to_owned(),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Token {
    pub tok: Tok,
    /// Byte offset of the token's first character in the query text.
    pub offset: usize,
    /// Byte offset just past the token's last character.
    pub end: usize,
}

/// Punctuation, longest first so that `<=` wins over `<`.
const PUNCT: &[&str] = &[
    "..", "<>", "<=", ">=", "+=", "=~", "(", ")", "[", "]", "{", "}", ",", ".", ":", ";", "|", "=",
    "<", ">", "+", "-", "*", "/", "%", "^",
];

type LexResult<'a, T> = IResult<&'a str, T, LexError>;

/// A lexing failure at a byte offset (taken from the remaining input's length).
#[derive(Debug)]
pub(crate) struct LexError {
    remaining: usize,
    message: Option<String>,
}

impl<'a> nom::error::ParseError<&'a str> for LexError {
    fn from_error_kind(input: &'a str, _kind: nom::error::ErrorKind) -> Self {
        LexError {
            remaining: input.len(),
            message: None,
        }
    }
    fn append(_input: &'a str, _kind: nom::error::ErrorKind, other: Self) -> Self {
        other
    }
}

fn fail<T>(input: &str, message: impl Into<String>) -> LexResult<'_, T> {
    Err(nom::Err::Failure(LexError {
        remaining: input.len(),
        message: Some(message.into()),
    }))
}

/// Splits the whole text into tokens, ending with `Eof`.
pub(crate) fn tokenize(text: &str) -> Result<Vec<Token>, QueryError> {
    // About one token per five bytes of a typical statement.
    let mut tokens = Vec::with_capacity(text.len() / 5 + 2);
    let mut rest = text;
    loop {
        rest = match skip_trivia(rest) {
            Ok((r, ())) => r,
            Err(e) => return Err(lex_error(text, e)),
        };
        let offset = text.len() - rest.len();
        if rest.is_empty() {
            tokens.push(Token {
                tok: Tok::Eof,
                offset,
                end: offset,
            });
            return Ok(tokens);
        }
        match token(rest) {
            Ok((r, tok)) => {
                let end = text.len() - r.len();
                tokens.push(Token { tok, offset, end });
                rest = r;
            }
            Err(e) => return Err(lex_error(text, e)),
        }
    }
}

fn lex_error(text: &str, e: nom::Err<LexError>) -> QueryError {
    let (remaining, message) = match e {
        nom::Err::Error(e) | nom::Err::Failure(e) => (e.remaining, e.message),
        nom::Err::Incomplete(_) => (0, None),
    };
    let offset = text.len().saturating_sub(remaining);
    let found = text
        .get(offset..)
        .and_then(|s| s.chars().next())
        .map_or("end of input".to_owned(), |c| format!("'{c}'"));
    QueryError::InvalidToken {
        position: position_of(text, offset),
        message: message.unwrap_or_else(|| format!("unexpected character {found}")),
    }
}

// trivia = { whitespace | "//" ... newline | "/*" ... "*/" }
fn skip_trivia(mut input: &str) -> LexResult<'_, ()> {
    loop {
        let trimmed = input.trim_start();
        if let Some(after) = trimmed.strip_prefix("//") {
            input = after.find('\n').map_or("", |i| &after[i..]);
        } else if let Some(after) = trimmed.strip_prefix("/*") {
            match take_until::<_, _, LexError>("*/")(after) {
                Ok((r, _)) => input = &r[2..],
                Err(_) => return fail(trimmed, "unterminated /* comment"),
            }
        } else {
            return Ok((trimmed, ()));
        }
    }
}

// token = number | string | quoted_name | parameter | word | punctuation
//
// The alternatives start with disjoint characters, so the first one picks the only rule that
// can match (trying them in turn, as `alt` would, costs a failed parse each: it was half of
// the lexer's time).
fn token(input: &str) -> LexResult<'_, Tok> {
    let mut chars = input.chars();
    match chars.next() {
        Some(c) if c.is_ascii_digit() => number(input),
        Some('.') if chars.next().is_some_and(|c| c.is_ascii_digit()) => number(input),
        Some('\'' | '"') => string_literal(input),
        Some('`') => quoted_name(input),
        Some('$') => parameter(input),
        Some(c) if is_word_start(c) => word(input),
        _ => punctuation(input),
    }
}

fn is_word_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

// word = (letter | "_") { letter | digit | "_" }
fn word(input: &str) -> LexResult<'_, Tok> {
    let (rest, w) = recognize(pair(take_while1(is_word_start), take_while(is_word_char)))(input)?;
    Ok((rest, Tok::Ident(w.to_owned())))
}

// parameter = "$" (word | digits)
fn parameter(input: &str) -> LexResult<'_, Tok> {
    let (rest, _) = char('$')(input)?;
    match take_while1::<_, _, LexError>(is_word_char)(rest) {
        Ok((rest, name)) => Ok((rest, Tok::Param(name.to_owned()))),
        Err(_) => fail(rest, "expected a parameter name after '$'"),
    }
}

// quoted_name = "`" { any char except "`" | "``" } "`"
fn quoted_name(input: &str) -> LexResult<'_, Tok> {
    let (mut rest, _) = char('`')(input)?;
    let mut name = String::new();
    loop {
        match rest.find('`') {
            None => return fail(input, "unterminated `quoted name`"),
            Some(i) => {
                name.push_str(&rest[..i]);
                rest = &rest[i + 1..];
                if let Some(r) = rest.strip_prefix('`') {
                    name.push('`');
                    rest = r;
                } else {
                    break;
                }
            }
        }
    }
    if name.is_empty() {
        return fail(input, "empty `quoted name`");
    }
    Ok((rest, Tok::Quoted(name)))
}

// number = digits [ "." digits ] [ ("e" | "E") ["+" | "-"] digits ]   (a "." must be followed by a digit)
// hex = "0x" hexdigits; octal = "0o" octdigits   (as decimal digits in the token)
fn number(input: &str) -> LexResult<'_, Tok> {
    for (prefix, radix) in [("0x", 16), ("0X", 16), ("0o", 8)] {
        let Some(body) = input.strip_prefix(prefix) else {
            continue;
        };
        let len = body
            .find(|c: char| !c.is_digit(radix))
            .unwrap_or(body.len());
        let (digits, rest) = body.split_at(len);
        if digits.is_empty() || rest.starts_with(is_word_start) || rest.starts_with(is_word_char) {
            return fail(input, format!("invalid {prefix} number literal"));
        }
        return match u128::from_str_radix(digits, radix) {
            Ok(v) => Ok((rest, Tok::Integer(v.to_string()))),
            Err(_) => fail(
                input,
                format!("integer literal {prefix}{digits} is out of range"),
            ),
        };
    }
    // `.5` is a float too (`..` and `.name` are punctuation).
    let fraction_only =
        input.starts_with('.') && input[1..].starts_with(|c: char| c.is_ascii_digit());
    let (rest, text) = if fraction_only {
        recognize(tuple((
            pair(char('.'), digit1),
            opt(tuple((one_of("eE"), opt(one_of("+-")), digit1))),
        )))(input)?
    } else {
        recognize(tuple((
            digit1,
            opt(pair(char('.'), digit1)),
            opt(tuple((one_of("eE"), opt(one_of("+-")), digit1))),
        )))(input)?
    };
    if rest.starts_with(is_word_start) {
        return fail(rest, "a number must not run into a name");
    }
    if text.contains(['.', 'e', 'E']) {
        match text.parse::<f64>() {
            Ok(f) if f.is_finite() => Ok((rest, Tok::Float(f))),
            _ => fail(input, format!("float literal {text} is out of range")),
        }
    } else {
        Ok((rest, Tok::Integer(text.to_owned())))
    }
}

// string = "'" { char | escape } "'" | '"' { char | escape } '"'
// escape = "\" ( "\" | "'" | '"' | "n" | "t" | "r" | "b" | "f" | "u" hex{4} )
fn string_literal(input: &str) -> LexResult<'_, Tok> {
    let (mut rest, quote) = one_of("'\"")(input)?;
    let mut out = String::new();
    loop {
        let (r, c) = match anychar::<_, LexError>(rest) {
            Ok(v) => v,
            Err(_) => return fail(input, "unterminated string literal"),
        };
        rest = r;
        if c == quote {
            return Ok((rest, Tok::Str(out)));
        }
        if c != '\\' {
            out.push(c);
            continue;
        }
        let (r, e) = match anychar::<_, LexError>(rest) {
            Ok(v) => v,
            Err(_) => return fail(input, "unterminated string literal"),
        };
        rest = r;
        match e {
            '\\' | '\'' | '"' => out.push(e),
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{c}'),
            'u' => {
                let hex = rest
                    .get(..4)
                    .filter(|h| h.chars().all(|c| c.is_ascii_hexdigit()));
                let ch = hex
                    .and_then(|h| u32::from_str_radix(h, 16).ok())
                    .and_then(char::from_u32);
                match ch {
                    Some(ch) => {
                        out.push(ch);
                        rest = &rest[4..];
                    }
                    None => {
                        return fail(
                            rest,
                            "invalid \\u escape (expected four hex digits of a valid character)",
                        )
                    }
                }
            }
            other => return fail(rest, format!("invalid escape sequence \\{other}")),
        }
    }
}

// punctuation = one of PUNCT
fn punctuation(input: &str) -> LexResult<'_, Tok> {
    for p in PUNCT {
        if let Ok((rest, _)) = tag::<_, _, LexError>(*p)(input) {
            return Ok((rest, Tok::Punct(p)));
        }
    }
    Err(nom::Err::Error(LexError {
        remaining: input.len(),
        message: None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<Tok> {
        tokenize(text)
            .expect("lexes")
            .into_iter()
            .map(|t| t.tok)
            .collect()
    }

    #[test]
    fn words_numbers_and_punctuation() {
        assert_eq!(
            kinds("MATCH (n)-->(m) WHERE n.x <= 1.5e3 // c\n RETURN $p"),
            vec![
                Tok::Ident("MATCH".into()),
                Tok::Punct("("),
                Tok::Ident("n".into()),
                Tok::Punct(")"),
                Tok::Punct("-"),
                Tok::Punct("-"),
                Tok::Punct(">"),
                Tok::Punct("("),
                Tok::Ident("m".into()),
                Tok::Punct(")"),
                Tok::Ident("WHERE".into()),
                Tok::Ident("n".into()),
                Tok::Punct("."),
                Tok::Ident("x".into()),
                Tok::Punct("<="),
                Tok::Float(1500.0),
                Tok::Ident("RETURN".into()),
                Tok::Param("p".into()),
                Tok::Eof,
            ]
        );
    }

    #[test]
    fn ranges_are_not_floats() {
        assert_eq!(
            kinds("*1..3"),
            vec![
                Tok::Punct("*"),
                Tok::Integer("1".into()),
                Tok::Punct(".."),
                Tok::Integer("3".into()),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn strings_and_escapes() {
        assert_eq!(
            kinds(r#"'a\'b' "c\"\n\u00e9""#),
            vec![Tok::Str("a'b".into()), Tok::Str("c\"\né".into()), Tok::Eof]
        );
        assert_eq!(
            kinds("`we``ird`"),
            vec![Tok::Quoted("we`ird".into()), Tok::Eof]
        );
        assert_eq!(
            kinds("/* x */ a /* y */"),
            vec![Tok::Ident("a".into()), Tok::Eof]
        );
    }

    #[test]
    fn errors_carry_positions() {
        let e = tokenize("MATCH\n  'abc").expect_err("unterminated");
        assert_eq!(e.position().map(|p| (p.line, p.column)), Some((2, 3)));
        let e = tokenize("RETURN '\\q'").expect_err("bad escape");
        assert_eq!(e.code(), "syntax_error");
        assert!(tokenize("RETURN 1 /* open").is_err());
        assert!(tokenize("RETURN #").is_err());
    }

    #[test]
    fn lookalike_letters_are_plain_words() {
        assert_eq!(
            kinds("ＣＲＥＡＴＥ"),
            vec![Tok::Ident("ＣＲＥＡＴＥ".into()), Tok::Eof]
        );
    }
}
