//! Opportunities: every opportunity of the workspace, searched (name, id, the customer's email
//! or name), filtered (stage, status, amount range), sorted by its columns and paged on the
//! server with the total (`customers::opportunities`, the API's list).

use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use maud::{html, Markup};

use super::format::{self, money, person, probability, url_part};
use super::layout::page;
use super::paging::{
    count_line, list_href, next_order, pager, query_params, sort_header, typed, PAGE,
};
use super::respond::{failed, is_htmx, Failure};
use super::session::Session;
use crate::state::AppState;
use svc_domains::customers::{
    self, OpportunityList, OpportunityQuery, OpportunitySort, OpportunityView,
};

/// The filters a link keeps, as they were typed.
const KEPT: [&str; 5] = ["q", "stage", "status", "min_amount", "max_amount"];

/// `GET /app/opportunities`; htmx's live search gets the results block alone.
pub async fn list(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    headers: HeaderMap,
    Query(params): Query<Vec<(String, String)>>,
) -> Result<Response, Failure> {
    let typed = |k: &str| typed(&params, k);
    let mut q = OpportunityQuery::from_params(query_params(&params)).map_err(|e| failed(&s, e))?;
    q.limit = PAGE;
    let found = customers::opportunities(&state.store, s.user.workspace, q.clone())
        .await
        .map_err(|e| failed(&s, e))?;
    let view = ListView {
        q: &q,
        kept: KEPT.iter().map(|k| (*k, typed(k))).collect(),
    };
    let results = view.results(&found);
    if is_htmx(&headers) {
        return Ok(results.into_response());
    }
    let value = |k: &str| typed(k);
    let status = value("status");
    Ok(page(
        Some(&s),
        "Opportunities",
        "/app/opportunities",
        &[],
        html! {
            form.search.filters role="search" method="get" action="/app/opportunities"
                hx-get="/app/opportunities" hx-target="#opportunity-results" hx-push-url="true"
                hx-trigger="input changed delay:250ms from:#q, search from:#q, change, submit" {
                div.field {
                    label for="q" { "Search opportunities" }
                    input id="q" name="q" type="search" value=(q.q)
                        placeholder="deal name, id, customer email or name…";
                }
                div.field {
                    label for="stage" { "Stage" }
                    input id="stage" name="stage" type="text" value=(value("stage")) placeholder="any";
                }
                div.field {
                    label for="status" { "Status" }
                    select id="status" name="status" {
                        option value="" { "any" }
                        @for st in ["open", "won", "lost"] {
                            option value=(st) selected[status == st] { (st) }
                        }
                    }
                }
                div.field {
                    label for="min_amount" { "Amount from" }
                    input id="min_amount" name="min_amount" type="number" min="0" step="any" value=(value("min_amount"));
                }
                div.field {
                    label for="max_amount" { "to" }
                    input id="max_amount" name="max_amount" type="number" min="0" step="any" value=(value("max_amount"));
                }
                input type="hidden" name="sort" value=(q.sort.as_str());
                input type="hidden" name="order" value=(if q.ascending { "asc" } else { "desc" });
                button type="submit" { "Filter" }
            }
            div id="opportunity-results" aria-live="polite" { (results) }
        },
    )
    .into_response())
}

/// The list's state, for links that keep the search and filters.
struct ListView<'a> {
    q: &'a OpportunityQuery,
    kept: Vec<(&'static str, String)>,
}

impl ListView<'_> {
    /// The URL of this list with another sort, order or offset.
    fn href(&self, sort: OpportunitySort, ascending: bool, offset: usize) -> String {
        list_href(
            "/app/opportunities",
            sort.as_str(),
            ascending,
            &self.kept,
            offset,
        )
    }

    /// The count, the table and the pager.
    fn results(&self, found: &OpportunityList) -> Markup {
        let q = self.q;
        let header = |key: OpportunitySort, label: &str| {
            let current = q.sort == key;
            let next = next_order(current, q.ascending, key.natural_ascending());
            sort_header(label, current, q.ascending, &self.href(key, next, 0))
        };
        let (offset, shown, total) = (found.offset, found.opportunities.len(), found.total);
        html! {
            (count_line("opportunity-count", ("opportunity", "opportunities"), offset, shown, total))
            div.table-wrap {
                table {
                    caption.visually-hidden { "Opportunities" }
                    thead { tr {
                        (header(OpportunitySort::Name, "Opportunity"))
                        th scope="col" { "Customer" }
                        (header(OpportunitySort::Amount, "Amount"))
                        (header(OpportunitySort::Stage, "Stage"))
                        th scope="col" { "Status" }
                        (header(OpportunitySort::Score, "Confidence"))
                        (header(OpportunitySort::Updated, "Updated"))
                    } }
                    tbody id="opportunity-rows" { (rows(&found.opportunities)) }
                }
            }
            (pager("opportunities", offset, shown, total, |o| self.href(q.sort, q.ascending, o)))
        }
    }
}

fn rows(list: &[OpportunityView]) -> Markup {
    html! {
        @if list.is_empty() {
            tr { td colspan="7" { "No opportunities match." } }
        }
        @for o in list {
            tr data-id=(o.id) {
                td { (o.name.as_deref().or(o.opportunity_id.as_deref()).unwrap_or(&o.id)) }
                td {
                    @if let Some(c) = &o.customer_id {
                        a href=(format!("/app/customers/{}", url_part(c))) {
                            (person(o.customer_name.as_deref(), o.customer_email.as_deref(), c))
                        }
                    }
                }
                td.num {
                    @if let Some(a) = o.amount.as_f64() {
                        (money(a, o.properties.get("currency").and_then(|c| c.as_str())))
                    }
                }
                td { (o.stage.as_deref().unwrap_or("")) }
                td { (o.status) }
                td.num { @if let Some(p) = o.score.as_f64() { (probability(p)) } }
                td { @if let Some(t) = &o.updated_at { (format::time(t)) } }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_keep_the_filters_and_columns_start_in_their_natural_order() {
        let q = OpportunityQuery {
            sort: OpportunitySort::Amount,
            ..OpportunityQuery::default()
        };
        let view = ListView {
            q: &q,
            kept: vec![("q", "Ada Lovelace".into()), ("stage", String::new())],
        };
        assert_eq!(
            view.href(OpportunitySort::Stage, true, 50),
            "/app/opportunities?sort=stage&order=asc&q=Ada%20Lovelace&offset=50"
        );
        let page = view
            .results(&OpportunityList {
                opportunities: Vec::new(),
                total: 120,
                offset: 0,
                limit: PAGE,
            })
            .into_string();
        // The current column flips; another starts in its natural order.
        assert!(page.contains("sort=amount&amp;order=asc"), "{page}");
        assert!(page.contains("sort=name&amp;order=asc"), "{page}");
        assert!(page.contains("sort=updated&amp;order=desc"), "{page}");
        assert!(page.contains("Page 1 of 3"), "{page}");
    }
}
