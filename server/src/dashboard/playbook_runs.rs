//! A playbook's runs and a run's leads, each paged on the server with its total, sortable by
//! its columns and filtered by status (`runs::list`, `leads::list`: the API's lists).

use axum::extract::{Path, Query, State};
use axum::Extension;
use maud::{html, Markup};

use super::format::{self, count, url_part};
use super::layout::page;
use super::paging::{
    count_line, list_href, next_order, pager, query_params, sort_header, typed, PAGE,
};
use super::playbooks::{did, lead, run_error, run_href, short_id, status_words};
use super::respond::{failed, Failure};
use super::session::Session;
use crate::state::AppState;
use svc_agents::playbook_runs::leads::{self, LeadList, LeadQuery, LeadSort};
use svc_agents::playbook_runs::run_plan;
use svc_agents::playbook_runs::runs::{self, RunList, RunQuery, RunSort};
use svc_domains::playbooks;

type Params = Query<Vec<(String, String)>>;

/// A link to `base` with the sort, order, kept filters and offset.
fn status_filter(id: &str, current: &str, values: &[&str]) -> Markup {
    html! {
        div.field {
            label for=(id) { "Status" }
            select id=(id) name="status" {
                option value="" { "any" }
                @for v in values { option value=(v) selected[current == *v] { (v) } }
            }
        }
    }
}

/// A column's header; times start newest first, the rest in ascending order.
fn header(
    label: &str,
    key: &str,
    current: &str,
    ascending: bool,
    link: impl Fn(&str, bool) -> String,
) -> Markup {
    let is = current == key;
    let next = next_order(is, ascending, key != "started" && key != "updated");
    sort_header(label, is, ascending, &link(key, next))
}

/// `GET /app/playbooks/{id}/runs`: every run of the playbook, newest first by default.
pub async fn runs(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    Path(id): Path<String>,
    Query(params): Params,
) -> Result<Markup, Failure> {
    let ws = s.user.workspace;
    let explicit_order = params.iter().any(|(k, _)| k == "order");
    let mut q = RunQuery::from_params(query_params(&params)).map_err(|e| failed(&s, e))?;
    if !explicit_order {
        q.ascending = false;
    }
    q.limit = PAGE;
    let p = playbooks::get(&state.store, ws, &id)
        .await
        .map_err(|e| failed(&s, e))?;
    let list: RunList = runs::list(&state.store, ws, &id, &q)
        .await
        .map_err(|e| failed(&s, e))?;
    let base = format!("/app/playbooks/{}/runs", url_part(&id));
    let kept = [("status", typed(&params, "status"))];
    let link = |sort: &str, asc: bool| list_href(&base, sort, asc, &kept, 0);
    let (offset, shown, total) = (list.offset, list.runs.len(), list.total);
    let counted = count_line("run-count", ("run", "runs"), offset, shown, total);
    let pages = pager("runs", offset, shown, total, |o| {
        list_href(&base, q.sort.as_str(), q.ascending, &kept, o)
    });
    let h =
        |label: &str, key: RunSort| header(label, key.as_str(), q.sort.as_str(), q.ascending, link);
    Ok(page(
        Some(&s),
        &format!("Runs of “{}”", p.name),
        "/app/playbooks",
        &[],
        html! {
            p { a href=(format!("/app/playbooks#{}", url_part(&p.id))) { "← " (p.name) } }
            form.filters method="get" action=(base) {
                (status_filter("run-status", &typed(&params, "status"), &run_plan::status::ALL))
                input type="hidden" name="sort" value=(q.sort.as_str());
                input type="hidden" name="order" value=(if q.ascending { "asc" } else { "desc" });
                button type="submit" { "Filter" }
            }
            (counted)
            div.table-wrap {
                table.runs {
                    caption.visually-hidden { "Runs" }
                    thead { tr {
                        (h("Started", RunSort::Started))
                        (h("Status", RunSort::Status))
                        th scope="col" { "What it did" }
                        (h("Outcomes", RunSort::Samples))
                    } }
                    tbody id="run-rows" {
                        @for r in &list.runs {
                            tr data-run=(r.id) {
                                td { a href=(run_href(&p.id, &r.id)) { (format::time(&r.started_at)) } br; span.hint title=(r.id) { "run " (short_id(&r.id)) } }
                                td { (status_words(&r.status)) }
                                td { (did(r)) }
                                td {
                                    @if r.metrics.samples == 0 { span.hint { "no outcomes reported yet" } }
                                    @else { (count(r.metrics.samples)) " contacted · " (count(r.metrics.successes)) " succeeded" }
                                }
                            }
                        }
                    }
                }
            }
            (pages)
        },
    ))
}

/// `GET /app/playbooks/{id}/runs/{run_id}`: the run and its leads, paged.
pub async fn run(
    State(state): State<AppState>,
    Extension(s): Extension<Session>,
    Path((id, run_id)): Path<(String, String)>,
    Query(params): Params,
) -> Result<Markup, Failure> {
    let ws = s.user.workspace;
    let mut q = LeadQuery::from_params(query_params(&params)).map_err(|e| failed(&s, e))?;
    q.limit = PAGE;
    let r = runs::get(&state.store, ws, &id, &run_id)
        .await
        .map_err(|e| failed(&s, e))?;
    // The run outlives a deleted playbook: its name when it still exists.
    let name = playbooks::get(&state.store, ws, &id)
        .await
        .map(|p| p.name)
        .unwrap_or_else(|_| id.clone());
    let list: LeadList = leads::list(&state.store, ws, &id, &run_id, &q)
        .await
        .map_err(|e| failed(&s, e))?;
    let base = run_href(&id, &run_id);
    let kept = [("q", q.q.clone()), ("status", typed(&params, "status"))];
    let link = |sort: &str, asc: bool| list_href(&base, sort, asc, &kept, 0);
    let (offset, shown, total) = (list.offset, list.leads.len(), list.total);
    let counted = count_line("lead-count", ("lead", "leads"), offset, shown, total);
    let pages = pager("leads", offset, shown, total, |o| {
        list_href(&base, q.sort.as_str(), q.ascending, &kept, o)
    });
    let h = |label: &str, key: LeadSort| {
        header(label, key.as_str(), q.sort.as_str(), q.ascending, link)
    };
    Ok(page(
        Some(&s),
        &format!("Run of “{name}”"),
        "/app/playbooks",
        &[],
        html! {
            p { a href=(format!("/app/playbooks/{}/runs", url_part(&id))) { "← Runs of " (name) } }
            p.meta {
                "Started " (format::time(&r.started_at)) " · " strong { (status_words(&r.status)) }
                " · " span.hint title=(r.id) { "run " (short_id(&r.id)) }
            }
            @if let Some(e) = r.plan.as_ref().and_then(|pl| pl.error.as_ref()) {
                p.hint { (run_error(&r.status, &e.message)) }
            }
            p { (did(&r)) }
            form.search.filters role="search" method="get" action=(base) {
                div.field {
                    label for="q" { "Search leads" }
                    input id="q" name="q" type="search" value=(q.q) placeholder="email, phone, customer id…";
                }
                (status_filter("lead-status", &typed(&params, "status"), &leads::STATUSES))
                input type="hidden" name="sort" value=(q.sort.as_str());
                input type="hidden" name="order" value=(if q.ascending { "asc" } else { "desc" });
                button type="submit" { "Filter" }
            }
            (counted)
            div.table-wrap {
                table {
                    caption.visually-hidden { "Leads" }
                    thead { tr {
                        (h("#", LeadSort::Seq))
                        (h("Lead", LeadSort::Reference))
                        (h("Status", LeadSort::Status))
                        (h("Credits", LeadSort::Credits))
                        (h("Updated", LeadSort::Updated))
                    } }
                    tbody id="lead-rows" {
                        @for l in &list.leads {
                            tr {
                                td.num { (l.seq + 1) }
                                td { (lead(l)) }
                                td { (l.status) }
                                td.num { (count(l.credits)) }
                                td { (format::time(&l.updated_at)) }
                            }
                        }
                    }
                }
            }
            (pages)
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_keep_filters_and_headers_start_in_their_natural_order() {
        assert_eq!(
            list_href(
                "/app/x",
                "status",
                false,
                &[("q", "a b".into()), ("status", String::new())],
                50
            ),
            "/app/x?sort=status&order=desc&q=a%20b&offset=50"
        );
        let link = |k: &str, asc: bool| format!("/l?sort={k}&asc={asc}");
        let started = header("Started", "started", "status", true, link).into_string();
        assert!(started.contains("sort=started&amp;asc=false"), "{started}");
        let status = header("Status", "status", "status", true, link).into_string();
        assert!(
            status.contains("asc=false") && status.contains("aria-sort=\"ascending\""),
            "{status}"
        );
    }
}
