//! `/admin/response-times`: how long people took to answer, and what was lost, drawn on the server as SVG.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::{
    domain::stats::{Figures, PERIODS, ResponseTimes, short_duration},
    ui::{components::page_title::PageTitle, server_fns::load_response_times},
};

/// The chart's drawing box; it scales to the page's width.
const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 220.0;
const MARGIN: f64 = 40.0;

#[component]
pub fn ResponseTimesPage() -> impl IntoView {
    let query = use_query_map();
    let days = Memo::new(move |_| {
        query
            .with(|query| query.get("days").and_then(|days| days.parse::<u32>().ok()))
            .filter(|days| PERIODS.contains(days))
            .unwrap_or(30)
    });
    let figures = Resource::new(move || days.get(), load_response_times);
    view! {
        <PageTitle text="Response times · Anteroom" />
        <section class="response-times" aria-labelledby="times-heading">
            <h1 id="times-heading">"Response times"</h1>
            <nav class="queue-filter" aria-label="Period">
                {PERIODS
                    .iter()
                    .map(|period| {
                        let period = *period;
                        view! {
                            <a
                                href=format!("/admin/response-times?days={period}")
                                aria-current=move || (days.get() == period).then_some("page")
                            >
                                {format!("{period} days")}
                            </a>
                        }
                    })
                    .collect_view()}
            </nav>
            <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
                {move || {
                    figures
                        .get()
                        .map(|result| match result {
                            Err(error) => super::load_error(error).into_any(),
                            Ok(times) if times.daily.is_empty() => view! {
                                <p class="queue-empty">
                                    {format!("No question was asked in the last {} days.", times.days)}
                                </p>
                            }
                            .into_any(),
                            Ok(times) => report(times).into_any(),
                        })
                }}
            </Suspense>
        </section>
    }
}

fn report(times: ResponseTimes) -> impl IntoView {
    view! {
        {waiting_chart(&times.daily, times.days)}
        {lost_chart(&times.daily, times.days)}
        {table("By day", "Day", times.daily)}
        {table("By session", "Session", times.sessions)}
        {table("By server", "Server", times.servers)}
        {table("By person", "Person", times.people)}
    }
}

/// The x position of day `index` of `count`.
fn x_of(index: usize, count: usize) -> f64 {
    let span = WIDTH - 2.0 * MARGIN;
    if count <= 1 {
        MARGIN + span / 2.0
    } else {
        MARGIN + span * index as f64 / (count - 1) as f64
    }
}

/// Median (bars) and 95th percentile (line) time to answer per day.
fn waiting_chart(daily: &[Figures], days: u32) -> impl IntoView {
    let slowest = daily
        .iter()
        .filter_map(|day| day.p95_ms.or(day.median_ms))
        .max()
        .unwrap_or(1)
        .max(1);
    let top = slowest as f64;
    let y_of = |ms: i64| HEIGHT - MARGIN - (HEIGHT - 2.0 * MARGIN) * ms as f64 / top;
    let count = daily.len();
    let bar = ((WIDTH - 2.0 * MARGIN) / count.max(1) as f64 * 0.6).clamp(2.0, 24.0);
    let bars = daily
        .iter()
        .enumerate()
        .filter_map(|(index, day)| {
            let median = day.median_ms?;
            let x = x_of(index, count) - bar / 2.0;
            let y = y_of(median);
            Some(view! {
                <rect class="chart-median" x=format!("{x:.1}") y=format!("{y:.1}") width=format!("{bar:.1}")
                    height=format!("{:.1}", (HEIGHT - MARGIN - y).max(0.0))>
                    <title>{format!("{}: median {}", day.key, short_duration(median))}</title>
                </rect>
            })
        })
        .collect_view();
    let line: Vec<String> = daily
        .iter()
        .enumerate()
        .filter_map(|(index, day)| {
            day.p95_ms
                .map(|p95| format!("{:.1},{:.1}", x_of(index, count), y_of(p95)))
        })
        .collect();
    let summary = format!(
        "Median and 95th percentile time to answer per day over the last {days} days; the slowest 95th percentile was {}.",
        short_duration(slowest)
    );
    view! {
        <figure class="chart">
            <svg viewBox=format!("0 0 {WIDTH} {HEIGHT}") role="img" aria-labelledby="wait-title wait-desc">
                <title id="wait-title">"Time to answer per day"</title>
                <desc id="wait-desc">{summary.clone()}</desc>
                <line class="chart-axis" x1=MARGIN y1=HEIGHT - MARGIN x2=WIDTH - MARGIN y2=HEIGHT - MARGIN />
                <text class="chart-label" x="4" y=MARGIN>{short_duration(slowest)}</text>
                <text class="chart-label" x="4" y=HEIGHT - MARGIN>"0"</text>
                {bars}
                <polyline class="chart-p95" points=line.join(" ") />
                {daily.first().map(|day| view! { <text class="chart-label" x=MARGIN y=HEIGHT - 12.0>{day.key.clone()}</text> })}
                {daily.last().map(|day| view! { <text class="chart-label" x=WIDTH - MARGIN - 70.0 y=HEIGHT - 12.0>{day.key.clone()}</text> })}
            </svg>
            <figcaption>"Bars: median time to answer. Line: 95th percentile."</figcaption>
        </figure>
    }
}

/// The share of each day's questions that expired, and that were answered but never delivered.
fn lost_chart(daily: &[Figures], days: u32) -> impl IntoView {
    let count = daily.len();
    let bar = ((WIDTH - 2.0 * MARGIN) / count.max(1) as f64 * 0.6).clamp(2.0, 24.0);
    let height = HEIGHT - 2.0 * MARGIN;
    let bars = daily
        .iter()
        .enumerate()
        .map(|(index, day)| {
            let x = x_of(index, count) - bar / 2.0;
            let expired = height * day.expired_share;
            let undelivered = height * day.undelivered_share;
            let label = format!(
                "{}: {:.0}% expired, {:.0}% not delivered",
                day.key,
                day.expired_share * 100.0,
                day.undelivered_share * 100.0
            );
            view! {
                <g>
                    <title>{label}</title>
                    <rect class="chart-expired" x=format!("{x:.1}") y=format!("{:.1}", HEIGHT - MARGIN - expired)
                        width=format!("{bar:.1}") height=format!("{expired:.1}") />
                    <rect class="chart-undelivered" x=format!("{x:.1}")
                        y=format!("{:.1}", HEIGHT - MARGIN - expired - undelivered)
                        width=format!("{bar:.1}") height=format!("{undelivered:.1}") />
                </g>
            }
        })
        .collect_view();
    let worst = daily
        .iter()
        .map(|day| day.expired_share + day.undelivered_share)
        .fold(0.0, f64::max);
    view! {
        <figure class="chart">
            <svg viewBox=format!("0 0 {WIDTH} {HEIGHT}") role="img" aria-labelledby="lost-title lost-desc">
                <title id="lost-title">"Questions lost per day"</title>
                <desc id="lost-desc">
                    {format!(
                        "Share of each day's questions that expired or were answered but never delivered, over the last {days} days; at worst {:.0}%.",
                        worst * 100.0
                    )}
                </desc>
                <line class="chart-axis" x1=MARGIN y1=HEIGHT - MARGIN x2=WIDTH - MARGIN y2=HEIGHT - MARGIN />
                <text class="chart-label" x="4" y=MARGIN>"100%"</text>
                <text class="chart-label" x="4" y=HEIGHT - MARGIN>"0%"</text>
                {bars}
            </svg>
            <figcaption>"Dark: expired unanswered (or nobody available). Light: answered, never delivered."</figcaption>
        </figure>
    }
}

fn table(heading: &'static str, first: &'static str, rows: Vec<Figures>) -> impl IntoView {
    let show = |ms: Option<i64>| ms.map_or_else(|| "—".to_owned(), short_duration);
    view! {
        <h2>{heading}</h2>
        <div class="table-scroll" tabindex="0" role="region" aria-label=heading>
            <table class="deliveries">
                <thead>
                    <tr>
                        <th scope="col">{first}</th>
                        <th scope="col">"Asked"</th>
                        <th scope="col">"Answered"</th>
                        <th scope="col">"Median"</th>
                        <th scope="col">"95th pct."</th>
                        <th scope="col">"Expired"</th>
                        <th scope="col">"Not delivered"</th>
                    </tr>
                </thead>
                <tbody>
                    {rows
                        .into_iter()
                        .map(|row| {
                            let key = if row.key.is_empty() { "(none)".to_owned() } else { row.key.clone() };
                            view! {
                                <tr>
                                    <th scope="row">{key}</th>
                                    <td>{row.asked}</td>
                                    <td>{row.answered}</td>
                                    <td>{show(row.median_ms)}</td>
                                    <td>{show(row.p95_ms)}</td>
                                    <td>{format!("{:.0}%", row.expired_share * 100.0)}</td>
                                    <td>{format!("{:.0}%", row.undelivered_share * 100.0)}</td>
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table>
        </div>
    }
}
