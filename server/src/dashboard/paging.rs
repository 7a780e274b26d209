//! What every paged list page shares: the count ("Showing 1–50 of N customers"), the pager,
//! sortable column headers and the URL parameters a list page reads.

use maud::{html, Markup};

use super::format::{count, url_part};

/// Rows per page of every list page.
pub const PAGE: usize = 50;

/// The URL's parameters for a list's query: the page sets its own `limit`, and the forms send
/// empty fields for "any".
pub fn query_params(params: &[(String, String)]) -> impl Iterator<Item = (&str, &str)> {
    params
        .iter()
        .filter(|(k, v)| k != "limit" && !v.trim().is_empty())
        .map(|(k, v)| (k.as_str(), v.as_str()))
}

/// A parameter as it was typed (trimmed; empty when absent), for the form and the links.
pub fn typed(params: &[(String, String)], k: &str) -> String {
    params
        .iter()
        .find(|(n, _)| n == k)
        .map_or("", |(_, v)| v.as_str())
        .trim()
        .to_owned()
}

fn n(v: usize) -> String {
    count(v as u64)
}

/// "Showing 51–100 of 120 leads" (`what`: singular and plural), "No leads match." when none.
pub fn count_line(
    id: &str,
    what: (&str, &str),
    offset: usize,
    shown: usize,
    total: usize,
) -> Markup {
    html! {
        p.count id=(id) {
            @if total == 0 {
                "No " (what.1) " match."
            } @else if shown == 0 {
                "Nothing on this page; " strong { (n(total)) } " in all."
            } @else {
                "Showing " (n(offset + 1)) "–" (n(offset + shown)) " of " strong { (n(total)) }
                " " @if total == 1 { (what.0) } @else { (what.1) }
            }
        }
    }
}

/// Previous, "Page 2 of 3" and Next (`link(offset)`), when there is more than one page.
pub fn pager(
    what: &str,
    offset: usize,
    shown: usize,
    total: usize,
    link: impl Fn(usize) -> String,
) -> Markup {
    let pages = total.div_ceil(PAGE).max(1);
    html! {
        @if pages > 1 {
            // A navigation landmark, but not a `nav` element: the main navigation's link style
            // (no underline) would leave these links told apart by colour alone.
            div.pager role="navigation" aria-label=(format!("Pages of {what}")) {
                @if offset > 0 { a rel="prev" href=(link(offset.saturating_sub(PAGE))) { "← Previous" } }
                span { "Page " (n(offset / PAGE + 1)) " of " (n(pages)) }
                @if offset + shown < total { a rel="next" href=(link(offset + PAGE)) { "Next →" } }
            }
        }
    }
}

/// A sortable column's header: a link to the list sorted by it, `aria-sort` on the current one.
pub fn sort_header(label: &str, current: bool, ascending: bool, href: &str) -> Markup {
    let aria = current.then_some(if ascending { "ascending" } else { "descending" });
    html! { th scope="col" aria-sort=[aria] { a href=(href) { (label) } } }
}

/// The order a click on a header asks for: the current column flips, another starts in its
/// natural order.
pub fn next_order(current: bool, ascending: bool, natural_ascending: bool) -> bool {
    if current {
        !ascending
    } else {
        natural_ascending
    }
}

/// The address of a list page with another sort, order or offset, keeping the page's other
/// parameters (`kept`; empty values left out).
pub fn list_href<V: AsRef<str>>(
    base: &str,
    sort: &str,
    ascending: bool,
    kept: &[(&str, V)],
    offset: usize,
) -> String {
    let mut url = format!(
        "{base}?sort={sort}&order={}",
        if ascending { "asc" } else { "desc" }
    );
    for (k, v) in kept {
        let v = v.as_ref();
        if !v.is_empty() {
            url.push_str(&format!("&{k}={}", url_part(v)));
        }
    }
    if offset > 0 {
        url.push_str(&format!("&offset={offset}"));
    }
    url
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_pages_read_as_people_count() {
        let c = |offset, shown, total| {
            count_line("c", ("lead", "leads"), offset, shown, total).into_string()
        };
        assert!(c(50, 50, 1200).contains("Showing 51–100 of <strong>1,200</strong> leads"));
        assert!(c(0, 1, 1).contains("Showing 1–1 of <strong>1</strong> lead<"));
        assert!(c(0, 0, 0).contains("No leads match."));
        assert!(c(500, 0, 120).contains("Nothing on this page"));
        let p = pager("leads", 50, 50, 120, |o| format!("/p?offset={o}")).into_string();
        assert!(
            p.contains("Page 2 of 3") && p.contains("/p?offset=0") && p.contains("/p?offset=100"),
            "{p}"
        );
        assert!(pager("leads", 0, 20, 20, |o| o.to_string())
            .into_string()
            .is_empty());
        assert!(!pager("leads", 100, 20, 120, |o| o.to_string())
            .into_string()
            .contains("rel=\"next\""));
        let q = [
            ("q".to_owned(), " ".to_owned()),
            ("limit".to_owned(), "9".to_owned()),
            ("sort".to_owned(), "name".to_owned()),
        ];
        assert_eq!(query_params(&q).collect::<Vec<_>>(), [("sort", "name")]);
        assert!(!next_order(true, true, true) && next_order(false, false, true));
    }
}
