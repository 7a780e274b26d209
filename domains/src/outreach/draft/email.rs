//! The email as sent: [`render_email`], HTML escaping, links and the brand footer.

use super::SUBJECT_CHARS;
use crate::brand::BrandContext;

/// The email as sent: subject, plain text and HTML, both with the brand footer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenderedEmail {
    pub subject: String,
    pub text: String,
    pub html: String,
}

/// HTML text escaping (also safe inside double- and single-quoted attributes).
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// A subject fit for a mail header: control characters (CR/LF included) become spaces,
/// whitespace collapses, at most [`SUBJECT_CHARS`] characters.
pub fn clean_subject(s: &str) -> String {
    let spaced: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    spaced
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(SUBJECT_CHARS)
        .collect()
}

fn is_url_start(token: &str) -> bool {
    let lower = token.to_ascii_lowercase();
    lower.starts_with("https://") || lower.starts_with("http://")
}

/// One line of text as HTML: escaped, with http(s) URLs as links (trailing punctuation stays
/// outside the link).
fn linkify(line: &str) -> String {
    let mut out = String::new();
    for piece in line.split_inclusive(' ') {
        let (token, space) = match piece.strip_suffix(' ') {
            Some(t) => (t, " "),
            None => (piece, ""),
        };
        if is_url_start(token) {
            let url = token.trim_end_matches(['.', ',', ';', ':', '!', '?', ')']);
            let rest = &token[url.len()..];
            let url_html = escape_html(url);
            out.push_str(&format!("<a href=\"{url_html}\">{url_html}</a>"));
            out.push_str(&escape_html(rest));
        } else {
            out.push_str(&escape_html(token));
        }
        out.push_str(space);
    }
    out
}

/// Footer lines shared by both renderings: (label, text, url).
fn footer(brand: &BrandContext) -> Vec<(&'static str, String, Option<String>)> {
    let mut lines = Vec::new();
    let name = brand
        .business_name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty());
    if let Some(n) = name {
        lines.push(("", n.to_owned(), None));
    }
    if let Some(w) = brand
        .website
        .as_deref()
        .map(str::trim)
        .filter(|w| !w.is_empty())
    {
        lines.push(("", w.to_owned(), is_url_start(w).then(|| w.to_owned())));
    }
    if let Some(l) = &brand.links {
        if let Some(p) = &l.privacy {
            lines.push(("Privacy policy", p.clone(), Some(p.clone())));
        }
        if let Some(t) = &l.terms {
            lines.push(("Terms", t.clone(), Some(t.clone())));
        }
    }
    lines
}

/// The email exactly as the outreach capabilities send it, for an agent-written (or drafted)
/// body: the HTML version has the escaped text in paragraphs (blank lines separate them, line
/// breaks stay, URLs become links) and a footer with the business name, website, privacy and
/// terms links; the plain-text version carries the same footer after a `-- ` separator.
pub fn render_email(brand: &BrandContext, subject: &str, body_text: &str) -> RenderedEmail {
    let subject = clean_subject(subject);
    let body = body_text.replace("\r\n", "\n");
    let body = body.trim();
    let foot = footer(brand);

    let mut text = body.to_owned();
    if !foot.is_empty() {
        text.push_str("\n\n-- \n");
        let lines: Vec<String> = foot
            .iter()
            .map(|(label, value, _)| {
                if label.is_empty() {
                    value.clone()
                } else {
                    format!("{label}: {value}")
                }
            })
            .collect();
        text.push_str(&lines.join("\n"));
    }
    text.push('\n');

    let mut html = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
    );
    html.push_str(&format!("<title>{}</title>\n", escape_html(&subject)));
    html.push_str(
        "</head>\n<body style=\"font-family: -apple-system, 'Segoe UI', Helvetica, Arial, \
         sans-serif; font-size: 15px; line-height: 1.5; color: #222222;\">\n",
    );
    for para in body.split("\n\n").map(str::trim).filter(|p| !p.is_empty()) {
        let lines: Vec<String> = para.lines().map(linkify).collect();
        html.push_str(&format!("<p>{}</p>\n", lines.join("<br>\n")));
    }
    if !foot.is_empty() {
        html.push_str(
            "<hr style=\"border: none; border-top: 1px solid #dddddd; margin: 24px 0 12px;\">\n\
             <p style=\"font-size: 12px; color: #777777;\">",
        );
        let parts: Vec<String> = foot
            .iter()
            .map(|(label, value, url)| {
                let shown = if label.is_empty() {
                    escape_html(value)
                } else {
                    escape_html(label)
                };
                match url {
                    Some(u) => format!("<a href=\"{}\">{shown}</a>", escape_html(u)),
                    None => shown,
                }
            })
            .collect();
        html.push_str(&parts.join(" &middot; "));
        html.push_str("</p>\n");
    }
    html.push_str("</body>\n</html>\n");
    RenderedEmail {
        subject,
        text,
        html,
    }
}
