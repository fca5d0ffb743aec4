//! The HTTP surface: probes, the API, the server-rendered web app and its static files, browser sessions,
//! with one log line per request.

pub mod assets;
mod health;
pub mod site_files;

use std::{future::Future, sync::OnceLock, time::Duration};

use anteroom_app::{App, shell};
use axum::{
    Router,
    body::Body,
    extract::FromRef,
    http::{HeaderValue, Request, Response, StatusCode, header},
    routing::get,
};
use leptos::{
    config::LeptosOptions,
    prelude::{provide_context, use_context},
};
use leptos_axum::{
    AxumRouteListing, LeptosRoutes, generate_route_list, render_app_to_stream_in_order_with_context,
};
use tower_http::{
    compression::{
        CompressionLayer,
        predicate::{NotForContentType, Predicate, SizeAbove},
    },
    set_header::SetResponseHeaderLayer,
    trace::TraceLayer,
};
use tracing::Span;

use crate::{AppState, credentials};
use site_files::SiteFiles;

/// The pages' Content-Security-Policy: scripts only from this origin or inline with this response's nonce
/// (the hydration bootstrap and its data), WebAssembly compiled from this origin, nothing framing the pages
/// (the Accept button must not be clickable through another site's frame), forms posted only here.
pub fn content_security_policy(nonce: Option<&str>) -> String {
    let scripts = match nonce {
        Some(nonce) => format!("'self' 'nonce-{nonce}' 'wasm-unsafe-eval'"),
        None => "'self' 'wasm-unsafe-eval'".to_owned(),
    };
    format!(
        "default-src 'self'; script-src {scripts}; style-src 'self'; img-src 'self' data:; \
         connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )
}

/// In a page's render: sends the policy with the nonce Leptos put on this page's inline scripts.
fn page_policy_with_nonce() {
    let Some(nonce) = leptos::nonce::use_nonce() else {
        return;
    };
    if let (Some(options), Ok(policy)) = (
        use_context::<leptos_axum::ResponseOptions>(),
        HeaderValue::from_str(&content_security_policy(Some(&nonce))),
    ) {
        options.insert_header(header::CONTENT_SECURITY_POLICY, policy);
    }
}

/// What the Leptos routes and the static files need: the site's options (the API's state knows nothing of them).
#[derive(Clone)]
struct SiteState {
    leptos_options: LeptosOptions,
}

impl FromRef<SiteState> for LeptosOptions {
    fn from_ref(state: &SiteState) -> Self {
        state.leptos_options.clone()
    }
}

/// The web app's routes, walked once per process.
///
/// Walking them runs the app with a process-wide flag set (leptos_server's `SuppressResourceLoad`), and a page
/// resource first polled while it is set never resolves (leptos-rs/leptos#4773): building a second instance's
/// router while a first instance rendered a page could leave that page unanswered for good. Several instances
/// share one process in the tests and the benchmark. Walked once, before the first router exists, no page can
/// be rendering meanwhile.
fn app_routes() -> Vec<AxumRouteListing> {
    static ROUTES: OnceLock<Vec<AxumRouteListing>> = OnceLock::new();
    ROUTES.get_or_init(|| generate_route_list(App)).clone()
}

/// A public file (`/favicon.svg`, `/sw.js`) when the request names one, else the app's "not found" page.
async fn file_or_not_found<F>(
    files: SiteFiles,
    request: Request<Body>,
    not_found: F,
) -> Response<Body>
where
    F: Fn(Request<Body>) -> std::pin::Pin<Box<dyn Future<Output = Response<Body>> + Send>>,
{
    let mut lookup = Request::new(Body::empty());
    *lookup.method_mut() = request.method().clone();
    *lookup.uri_mut() = request.uri().clone();
    *lookup.headers_mut() = request.headers().clone();
    let file = files.serve(lookup).await;
    if file.status().is_success() || file.status() == StatusCode::NOT_MODIFIED {
        return file;
    }
    let mut page = not_found(request).await;
    // A page that decided its own status (a redirect) keeps it.
    if page.status() == StatusCode::OK {
        *page.status_mut() = StatusCode::NOT_FOUND;
    }
    page
}

/// Builds the whole router for one server instance.
pub fn router(
    state: AppState,
    mut leptos_options: LeptosOptions,
    files: SiteFiles,
    sign_in: &crate::pages::SignInSettings,
) -> Router {
    let site_assets = assets::SiteAssets::read(&files);
    leptos_options.output_name = site_assets.script.clone().into();
    let stylesheet = site_assets.stylesheet_href();
    let services = crate::pages::services(&state);
    let queue_feed = crate::pages::QueueFeed::new(services.clone(), state.events.clone());
    let sessions = crate::pages::session_layer(state.store.clone(), state.config.secure_cookies);
    let site = SiteState {
        leptos_options: leptos_options.clone(),
    };
    let choices = sign_in.choices();
    let shell_choices = choices.clone();
    let page_context = move || {
        provide_context(services.clone());
        provide_context(choices.clone());
        page_policy_with_nonce();
    };
    let page_shell = move || {
        shell(
            leptos_options.clone(),
            stylesheet.clone(),
            shell_choices.clone(),
        )
    };
    let not_found =
        render_app_to_stream_in_order_with_context(page_context.clone(), page_shell.clone());
    let public_files = files.clone();
    let pages = Router::new()
        .leptos_routes_with_context(&site, app_routes(), page_context, page_shell)
        .fallback(move |request: Request<Body>| {
            file_or_not_found(public_files.clone(), request, not_found.clone())
        })
        .with_state(site);
    let pages = assets::revalidate_every_time(pages).merge(assets::pkg_routes(files));

    Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .merge(crate::api::router(&state))
        .merge(crate::api::mcp::router(&state))
        .merge(crate::api::hooks::router(&state))
        .merge(anteroom_reach::routes())
        .route("/api/{*rest}", axum::routing::any(crate::api::not_found))
        .merge(crate::pages::routes(queue_feed, sign_in))
        .route("/metrics", get(crate::metrics::render))
        .with_state(state.clone())
        .merge(pages)
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::api::response_budget::guard,
        ))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::metrics::track,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::pages::attach_viewer,
        ))
        .layer(sessions)
        .layer(SetResponseHeaderLayer::if_not_present(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_str(&content_security_policy(None))
                .unwrap_or_else(|_| HeaderValue::from_static("default-src 'none'")),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            header::REFERRER_POLICY,
            HeaderValue::from_static("same-origin"),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            header::X_FRAME_OPTIONS,
            HeaderValue::from_static("DENY"),
        ))
        // HTML and JSON compressed for a client that accepts it. Small bodies (a poll's reply) are not worth
        // the CPU; event streams must reach the client as they are written; the site's files carry their own
        // precompressed copies (a response that already has an encoding is left alone).
        .layer(
            CompressionLayer::new().compress_when(
                SizeAbove::new(1024)
                    .and(NotForContentType::GRPC)
                    .and(NotForContentType::IMAGES)
                    .and(NotForContentType::SSE)
                    // A strong ETag names one body: the site's files come as stored, or not at all.
                    .and(
                        |_: StatusCode,
                         _: http::Version,
                         headers: &http::HeaderMap,
                         _: &http::Extensions| {
                            !headers.contains_key(header::ETAG)
                        },
                    ),
            ),
        )
        // One `tracing` line per request, written when the response is ready: the route template and the path
        // with every token cut to its prefix (producer tokens travel in paths).
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|request: &Request<Body>| {
                    tracing::info_span!(
                        "request",
                        method = %request.method(),
                        path = %credentials::MaskedCredentials(request.uri().path()),
                    )
                })
                .on_request(())
                .on_response(
                    |response: &Response<Body>, latency: Duration, _span: &Span| {
                        let route = response
                            .extensions()
                            .get::<crate::metrics::RouteTemplate>()
                            .map_or("unmatched", |route| &route.0);
                        tracing::info!(
                            route,
                            status = response.status().as_u16(),
                            latency_ms = latency.as_secs_f64() * 1000.0,
                            "served"
                        );
                    },
                )
                .on_failure(()),
        )
}
