//! The site's files as a browser gets them: the fingerprinted names the build chose (`assets.json`), served
//! from their precompressed `.br`/`.gz` copies and cached for a year, while pages are revalidated every time.

use axum::{
    Router,
    body::Body,
    http::{HeaderValue, Request, Response, header},
    routing::get,
};
use serde::Deserialize;
use tower_http::set_header::SetResponseHeaderLayer;

use super::site_files::SiteFiles;

/// The name a site built without fingerprints (or by hand) uses for the bundle and stylesheet.
const PLAIN_NAME: &str = "anteroom";

/// What `cargo xtask build` named the bundle and the stylesheet (xtask/src/assets.rs writes it).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SiteAssets {
    /// The bundle's file stem: `pkg/{script}.js` and `pkg/{script}_bg.wasm`.
    pub script: String,
    /// The stylesheet's file name in `pkg/`.
    pub stylesheet: String,
}

impl SiteAssets {
    /// The names in the site's `assets.json`, or the plain names when there is no readable manifest.
    pub fn read(files: &SiteFiles) -> Self {
        files
            .read("assets.json")
            .and_then(|bytes| serde_json::from_slice::<Self>(&bytes).ok())
            .filter(|assets| {
                is_plain_file_name(&assets.script) && is_plain_file_name(&assets.stylesheet)
            })
            .unwrap_or_else(|| Self {
                script: PLAIN_NAME.to_owned(),
                stylesheet: format!("{PLAIN_NAME}.css"),
            })
    }

    /// The stylesheet's path as the page links it.
    pub fn stylesheet_href(&self) -> String {
        format!("/pkg/{}", self.stylesheet)
    }
}

/// A name that stays inside `pkg/` and needs no escaping in a URL.
fn is_plain_file_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !name.starts_with('.')
}

/// `/pkg/…`: the bundle and stylesheet. Their names change with their content, so a browser may keep them a
/// year without asking again; the `.br` or `.gz` copy is sent to a browser that accepts it.
pub fn pkg_routes<S: Clone + Send + Sync + 'static>(files: SiteFiles) -> Router<S> {
    Router::new()
        .route(
            "/pkg/{*file}",
            get(move |request: Request<Body>| {
                let files = files.clone();
                async move { files.serve(request).await }
            }),
        )
        .layer(SetResponseHeaderLayer::overriding(
            header::CACHE_CONTROL,
            |response: &Response<_>| {
                // A missing file must not be remembered for a year.
                response
                    .status()
                    .is_success()
                    .then(|| HeaderValue::from_static("public, max-age=31536000, immutable"))
            },
        ))
}

/// Pages and the other public files: always revalidated, so a new build's page (naming a new bundle) is
/// seen at once.
pub fn revalidate_every_time<S: Clone + Send + Sync + 'static>(router: Router<S>) -> Router<S> {
    router.layer(SetResponseHeaderLayer::if_not_present(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifest_names_the_files_and_a_missing_or_odd_one_falls_back_to_plain_names() {
        let site = tempfile::tempdir().expect("dir");
        let files = SiteFiles::Folder(site.path().to_path_buf());
        let plain = SiteAssets::read(&files);
        assert_eq!(plain.script, "anteroom");
        assert_eq!(plain.stylesheet_href(), "/pkg/anteroom.css");

        std::fs::write(
            site.path().join("assets.json"),
            r#"{"script": "anteroom-0123abcd", "stylesheet": "anteroom-89ef.css"}"#,
        )
        .expect("manifest");
        let hashed = SiteAssets::read(&files);
        assert_eq!(hashed.script, "anteroom-0123abcd");
        assert_eq!(hashed.stylesheet_href(), "/pkg/anteroom-89ef.css");

        std::fs::write(
            site.path().join("assets.json"),
            r#"{"script": "../../etc/passwd", "stylesheet": "a\"><script>.css"}"#,
        )
        .expect("manifest");
        assert_eq!(SiteAssets::read(&files), plain);
    }
}
