//! Forms the post/redirect/get way: a successful POST answers `303 See Other` to a GET of the
//! page with a short outcome code in the query (a reload then repeats nothing); a refused one
//! answers the page again with the error status, the submitted values kept and the message
//! next to the field it is about.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::{html, Markup};

use svc_core::error::Error;

/// `303 See Other` to `location` (the page, its outcome code in the query).
pub fn see_other(location: &str) -> Response {
    Redirect::to(location).into_response()
}

/// The HTTP status a refused form answers with (a 4xx of the domain error, else 400).
pub fn refused_status(e: &Error) -> StatusCode {
    StatusCode::from_u16(e.code.status())
        .ok()
        .filter(StatusCode::is_client_error)
        .unwrap_or(StatusCode::BAD_REQUEST)
}

/// The request field an error is about: its `details.field`, else the word before the first
/// colon of the message (`name: must not be empty`), without an index or nested path.
pub fn error_field(e: &Error) -> Option<String> {
    let raw = e
        .details
        .as_ref()
        .and_then(|d| d.get("field"))
        .and_then(|f| f.as_str())
        .map(str::to_owned)
        .or_else(|| {
            let (head, _) = e.message.split_once(':')?;
            let head = head.trim();
            (!head.is_empty() && !head.contains(' ')).then(|| head.to_owned())
        })?;
    let first = raw.split(['.', '[']).next().unwrap_or_default();
    (!first.is_empty()).then(|| first.to_owned())
}

/// A refused form's message, placed where it is about.
#[derive(Clone, Debug, Default)]
pub struct Refusal {
    pub field: Option<String>,
    pub message: String,
}

impl Refusal {
    pub fn of(e: &Error) -> Refusal {
        Refusal {
            field: error_field(e),
            message: e.message.clone(),
        }
    }

    /// The message when it is about `field` (one of `aliases`: the request's names for it).
    pub fn at(&self, aliases: &[&str]) -> Option<Markup> {
        let f = self.field.as_deref()?;
        aliases
            .contains(&f)
            .then(|| html! { p.field-error role="alert" { (self.message) } })
    }

    /// The message at the top of the form when no field of `fields` claims it.
    pub fn general(&self, fields: &[&str]) -> Option<Markup> {
        let claimed = self.field.as_deref().is_some_and(|f| fields.contains(&f));
        (!claimed).then(|| html! { p.alert role="alert" { (self.message) } })
    }
}

/// A submitted value by name (trimmed), or empty.
pub fn value<'a>(form: &'a [(String, String)], name: &str) -> &'a str {
    form.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.trim())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_field_comes_from_details_or_the_message() {
        let e = Error::invalid_field("strategy.hypothesis", "", "must not be empty");
        assert_eq!(error_field(&e).as_deref(), Some("strategy"));
        let e = Error::invalid_input("name: is required");
        assert_eq!(error_field(&e).as_deref(), Some("name"));
        let e = Error::invalid_input("the run cannot start: no leads");
        assert_eq!(error_field(&e), None);
        let r = Refusal::of(&Error::invalid_input("name: is required"));
        assert!(r.at(&["name"]).is_some());
        assert!(r.at(&["mode"]).is_none());
        assert!(r.general(&["name"]).is_none());
        assert!(r.general(&["mode"]).is_some());
        assert_eq!(refused_status(&e), StatusCode::BAD_REQUEST);
        assert_eq!(
            value(&[("a".into(), " x ".into())], "a"),
            "x",
            "trimmed value"
        );
    }
}
