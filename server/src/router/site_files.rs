//! Where the site's files (browser bundle, stylesheet, public files) come from: a folder, or the binary itself,
//! to which `cargo xtask dist` appends them as a tar archive, so that one file is all a server needs.
//!
//! An appended archive is found from the end of the executable: `[tar][archive length: u64 LE][MAGIC]`. It is
//! read once at start into memory (a release site is about 3 MB with its compressed copies) and served with the
//! same negotiation as a folder: the `.br` or `.gz` copy to a browser that accepts it, an `ETag` per copy.

use std::{
    collections::HashMap,
    fs::File,
    io::{self, Read, Seek, SeekFrom, Write},
    path::{Path, PathBuf},
    sync::Arc,
};

use axum::{
    body::{Body, Bytes},
    http::{HeaderMap, Method, Request, Response, StatusCode, header},
};
use sha2::{Digest, Sha256};
use tower::ServiceExt;
use tower_http::services::ServeDir;

/// Ends an executable that carries a site.
const MAGIC: &[u8; 16] = b"anteroom-site-v1";
/// The archive's length and [`MAGIC`].
const TRAILER_LEN: u64 = 8 + 16;
/// A larger archive is refused rather than read into memory (a debug site is about 40 MB).
const MAX_ARCHIVE_BYTES: u64 = 256 * 1024 * 1024;
/// More files than a site has; a bound on the map, whatever the archive says.
const MAX_FILES: usize = 10_000;

/// The site's files, from wherever this process serves them.
#[derive(Clone, Debug)]
pub enum SiteFiles {
    /// A folder laid out as `cargo xtask build` writes `target/site`.
    Folder(PathBuf),
    /// The archive appended to this binary.
    Embedded(Arc<EmbeddedSite>),
}

impl SiteFiles {
    /// `folder` when the operator named one (`ANTEROOM_SITE_ROOT`), else the site this binary carries, else
    /// `target/site` (a checkout's build). An archive that cannot be read is reported and not served.
    pub fn choose(folder: Option<&Path>) -> Self {
        if let Some(folder) = folder {
            return Self::Folder(folder.to_path_buf());
        }
        match EmbeddedSite::of_this_binary() {
            Ok(Some(site)) => Self::Embedded(Arc::new(site)),
            Ok(None) => Self::Folder(PathBuf::from("target/site")),
            Err(error) => {
                tracing::error!(%error, "the site appended to this binary is unreadable; serving target/site");
                Self::Folder(PathBuf::from("target/site"))
            }
        }
    }

    /// Whether there is a browser bundle to hydrate the pages with.
    pub fn has_bundle(&self) -> bool {
        match self {
            Self::Folder(folder) => folder.join("pkg").is_dir(),
            Self::Embedded(site) => site.files.keys().any(|name| name.starts_with("pkg/")),
        }
    }

    /// Where the files come from, for the log.
    pub fn describe(&self) -> String {
        match self {
            Self::Folder(folder) => folder.display().to_string(),
            Self::Embedded(site) => format!("this binary ({} files)", site.files.len()),
        }
    }

    /// A file's bytes, by its path under the site (`assets.json`).
    pub fn read(&self, name: &str) -> Option<Vec<u8>> {
        match self {
            Self::Folder(folder) => std::fs::read(folder.join(name)).ok(),
            Self::Embedded(site) => site.files.get(name).map(|file| file.identity.to_vec()),
        }
    }

    /// The file `request` names, or `404`/`405` when there is none.
    pub async fn serve(&self, request: Request<Body>) -> Response<Body> {
        match self {
            Self::Folder(folder) => ServeDir::new(folder)
                .precompressed_br()
                .precompressed_gzip()
                .oneshot(request)
                .await
                .map(|response| response.map(Body::new))
                .unwrap_or_else(|never| match never {}),
            Self::Embedded(site) => {
                site.respond(request.method(), request.uri().path(), request.headers())
            }
        }
    }
}

/// One file of an embedded site, with its compressed copies.
#[derive(Debug, Default)]
struct EmbeddedFile {
    identity: Bytes,
    brotli: Option<Bytes>,
    gzip: Option<Bytes>,
    /// A strong validator of the content: the first 16 hex digits of its SHA-256.
    digest: String,
}

/// A site read from an archive, kept in memory.
#[derive(Debug, Default)]
pub struct EmbeddedSite {
    files: HashMap<String, EmbeddedFile>,
}

impl EmbeddedSite {
    /// The site appended to the running executable, if it carries one.
    pub fn of_this_binary() -> io::Result<Option<Self>> {
        Self::appended_to(&std::env::current_exe()?)
    }

    /// The site appended to `executable`, if it carries one.
    pub fn appended_to(executable: &Path) -> io::Result<Option<Self>> {
        let mut file = File::open(executable)?;
        let Some((start, length)) = appended_archive(&mut file)? else {
            return Ok(None);
        };
        file.seek(SeekFrom::Start(start))?;
        let mut archive = Vec::with_capacity(usize::try_from(length).unwrap_or(0));
        file.take(length).read_to_end(&mut archive)?;
        Self::from_tar(&archive).map(Some)
    }

    /// The files of a tar archive, each `.br`/`.gz` joined to the file it compresses.
    pub fn from_tar(archive: &[u8]) -> io::Result<Self> {
        let mut site = Self::default();
        let mut seen = 0_usize;
        for entry in tar::Archive::new(archive).entries()? {
            let mut entry = entry?;
            if !entry.header().entry_type().is_file() {
                continue;
            }
            seen += 1;
            if seen > MAX_FILES {
                return Err(io::Error::other(format!("more than {MAX_FILES} files")));
            }
            let name = entry.path()?.to_string_lossy().replace('\\', "/");
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes)?;
            let bytes = Bytes::from(bytes);
            if let Some(plain) = name.strip_suffix(".br") {
                site.files.entry(plain.to_owned()).or_default().brotli = Some(bytes);
            } else if let Some(plain) = name.strip_suffix(".gz") {
                site.files.entry(plain.to_owned()).or_default().gzip = Some(bytes);
            } else {
                let file = site.files.entry(name).or_default();
                file.digest = hex_digest(&bytes);
                file.identity = bytes;
            }
        }
        // A compressed copy without its original is not a file of the site.
        site.files.retain(|_, file| !file.digest.is_empty());
        Ok(site)
    }

    /// The response to a `GET` or `HEAD` of `path`: the copy the request accepts, or `304` when it already has
    /// it; `404` for a path that is no file, `405` for another method.
    fn respond(&self, method: &Method, path: &str, headers: &HeaderMap) -> Response<Body> {
        let Some(file) = self.files.get(path.trim_start_matches('/')) else {
            return status_only(StatusCode::NOT_FOUND);
        };
        if method != Method::GET && method != Method::HEAD {
            return status_only(StatusCode::METHOD_NOT_ALLOWED);
        }
        let accepted = AcceptedEncodings::of(headers);
        let (bytes, encoding, tag) = match (&file.brotli, &file.gzip) {
            (Some(brotli), _) if accepted.brotli => (brotli, Some("br"), "-br"),
            (_, Some(gzip)) if accepted.gzip => (gzip, Some("gzip"), "-gz"),
            _ => (&file.identity, None, ""),
        };
        let etag = format!("\"{}{tag}\"", file.digest);
        let mut response = Response::builder().header(header::ETAG, &etag).header(
            header::CONTENT_TYPE,
            mime_guess::from_path(path).first_or_octet_stream().as_ref(),
        );
        if file.brotli.is_some() || file.gzip.is_some() {
            response = response.header(header::VARY, "accept-encoding");
        }
        if let Some(encoding) = encoding {
            response = response.header(header::CONTENT_ENCODING, encoding);
        }
        let fresh = headers
            .get(header::IF_NONE_MATCH)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|tags| {
                tags.split(',')
                    .map(|candidate| candidate.trim().trim_start_matches("W/"))
                    .any(|candidate| candidate == etag || candidate == "*")
            });
        let built = if fresh {
            response
                .status(StatusCode::NOT_MODIFIED)
                .body(Body::empty())
        } else if method == Method::HEAD {
            response
                .header(header::CONTENT_LENGTH, bytes.len())
                .body(Body::empty())
        } else {
            response.body(Body::from(bytes.clone()))
        };
        built.unwrap_or_else(|_| status_only(StatusCode::INTERNAL_SERVER_ERROR))
    }
}

fn status_only(status: StatusCode) -> Response<Body> {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = status;
    response
}

fn hex_digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .take(8)
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// Which compressed copies a request's `Accept-Encoding` takes (a coding with `q=0` is refused).
#[derive(Debug, Default, PartialEq, Eq)]
struct AcceptedEncodings {
    brotli: bool,
    gzip: bool,
}

impl AcceptedEncodings {
    fn of(headers: &HeaderMap) -> Self {
        let mut accepted = Self::default();
        for value in headers.get_all(header::ACCEPT_ENCODING) {
            let Ok(value) = value.to_str() else { continue };
            for coding in value.split(',') {
                let mut parts = coding.split(';').map(str::trim);
                let name = parts.next().unwrap_or_default().to_ascii_lowercase();
                let refused = parts.any(|parameter| {
                    parameter
                        .strip_prefix("q=")
                        .and_then(|q| q.trim().parse::<f32>().ok())
                        .is_some_and(|q| q <= 0.0)
                });
                match name.as_str() {
                    "br" => accepted.brotli = !refused,
                    "gzip" | "x-gzip" => accepted.gzip = !refused,
                    _ => {}
                }
            }
        }
        accepted
    }
}

/// Where the archive appended to `file` starts and how long it is, when the file ends with [`MAGIC`].
fn appended_archive(file: &mut File) -> io::Result<Option<(u64, u64)>> {
    let size = file.metadata()?.len();
    if size < TRAILER_LEN {
        return Ok(None);
    }
    file.seek(SeekFrom::Start(size - TRAILER_LEN))?;
    let mut trailer = [0_u8; 24];
    file.read_exact(&mut trailer)?;
    let (length, magic) = trailer.split_at(8);
    if magic != MAGIC {
        return Ok(None);
    }
    let mut length_bytes = [0_u8; 8];
    length_bytes.copy_from_slice(length);
    let length = u64::from_le_bytes(length_bytes);
    if length > MAX_ARCHIVE_BYTES || length > size - TRAILER_LEN {
        return Err(io::Error::other(format!(
            "the appended site claims {length} bytes, more than the file holds or {MAX_ARCHIVE_BYTES} allowed"
        )));
    }
    Ok(Some((size - TRAILER_LEN - length, length)))
}

/// Writes `executable` (without any site it already carries) with the folder `site` appended to `out`, which
/// is made executable; returns the bytes written. The archive is the same for the same files: sorted names,
/// no owners, no times.
pub fn write_with_site(executable: &Path, site: &Path, out: &Path) -> io::Result<u64> {
    let mut input = File::open(executable)?;
    let program_length = match appended_archive(&mut input)? {
        Some((start, _)) => start,
        None => input.metadata()?.len(),
    };
    input.seek(SeekFrom::Start(0))?;

    let mut archive = tar::Builder::new(Vec::new());
    let mut files = Vec::new();
    collect_files(site, site, &mut files)?;
    files.sort();
    for relative in &files {
        let bytes = std::fs::read(site.join(relative))?;
        let mut header = tar::Header::new_gnu();
        header.set_size(u64::try_from(bytes.len()).unwrap_or(u64::MAX));
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_cksum();
        archive.append_data(&mut header, relative, bytes.as_slice())?;
    }
    let archive = archive.into_inner()?;
    let archive_length = u64::try_from(archive.len()).unwrap_or(u64::MAX);
    if archive_length > MAX_ARCHIVE_BYTES {
        return Err(io::Error::other(format!(
            "the site is {archive_length} bytes, more than the {MAX_ARCHIVE_BYTES} a binary may carry"
        )));
    }

    let mut output = File::create(out)?;
    io::copy(&mut input.take(program_length), &mut output)?;
    output.write_all(&archive)?;
    output.write_all(&archive_length.to_le_bytes())?;
    output.write_all(MAGIC)?;
    output.sync_all()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(out, std::fs::Permissions::from_mode(0o755))?;
    }
    Ok(program_length + archive_length + TRAILER_LEN)
}

/// Every file under `dir`, as paths relative to `root` with `/` between their parts.
fn collect_files(root: &Path, dir: &Path, files: &mut Vec<String>) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect_files(root, &path, files)?;
        } else if let Ok(relative) = path.strip_prefix(root) {
            let parts: Vec<String> = relative
                .components()
                .map(|part| part.as_os_str().to_string_lossy().into_owned())
                .collect();
            files.push(parts.join("/"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn site_folder() -> tempfile::TempDir {
        let site = tempfile::tempdir().expect("dir");
        std::fs::create_dir_all(site.path().join("pkg")).expect("pkg");
        std::fs::write(site.path().join("pkg/app-1.js"), "export default 1;").expect("js");
        std::fs::write(site.path().join("pkg/app-1.js.br"), "BROTLI").expect("br");
        std::fs::write(site.path().join("pkg/app-1.js.gz"), "GZIP").expect("gz");
        std::fs::write(site.path().join("favicon.svg"), "<svg/>").expect("icon");
        std::fs::write(site.path().join("assets.json"), r#"{"script":"app-1"}"#).expect("manifest");
        site
    }

    fn get(site: &EmbeddedSite, path: &str, headers: &[(&'static str, &str)]) -> Response<Body> {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.append(*name, HeaderValue::from_str(value).expect("value"));
        }
        site.respond(&Method::GET, path, &map)
    }

    #[test]
    fn a_binary_carries_its_site_and_serves_the_copy_a_browser_accepts() {
        let site = site_folder();
        let dir = tempfile::tempdir().expect("dir");
        let program = dir.path().join("program");
        std::fs::write(&program, b"\x7fELF pretend program").expect("program");
        assert!(EmbeddedSite::appended_to(&program).expect("read").is_none());

        let bundled = dir.path().join("bundled");
        write_with_site(&program, site.path(), &bundled).expect("bundle");
        let bytes = std::fs::read(&bundled).expect("bundled");
        assert!(bytes.starts_with(b"\x7fELF pretend program"));
        let embedded = EmbeddedSite::appended_to(&bundled)
            .expect("read")
            .expect("a site");
        assert_eq!(embedded.files.len(), 3, "the .br and .gz join their file");

        // Bundling a bundled binary replaces its site instead of stacking a second one.
        std::fs::write(site.path().join("favicon.svg"), "<svg>new</svg>").expect("icon");
        let again = dir.path().join("again");
        write_with_site(&bundled, site.path(), &again).expect("bundle again");
        let again_site = EmbeddedSite::appended_to(&again)
            .expect("read")
            .expect("a site");
        assert_eq!(
            &again_site.files["favicon.svg"].identity[..],
            b"<svg>new</svg>"
        );
        assert!(std::fs::read(&again).expect("again").len() < bytes.len() + 100);

        let brotli = get(
            &embedded,
            "/pkg/app-1.js",
            &[("accept-encoding", "gzip, deflate, br")],
        );
        assert_eq!(brotli.status(), StatusCode::OK);
        assert_eq!(brotli.headers()[header::CONTENT_ENCODING], "br");
        assert_eq!(brotli.headers()[header::VARY], "accept-encoding");
        assert!(
            brotli.headers()[header::CONTENT_TYPE]
                .to_str()
                .expect("type")
                .contains("javascript")
        );
        let etag = brotli.headers()[header::ETAG]
            .to_str()
            .expect("etag")
            .to_owned();

        let no_brotli = get(
            &embedded,
            "/pkg/app-1.js",
            &[("accept-encoding", "br;q=0, gzip")],
        );
        assert_eq!(no_brotli.headers()[header::CONTENT_ENCODING], "gzip");
        let plain = get(&embedded, "/pkg/app-1.js", &[]);
        assert!(plain.headers().get(header::CONTENT_ENCODING).is_none());
        assert_ne!(
            plain.headers()[header::ETAG],
            etag.as_str(),
            "one tag per copy"
        );

        let revalidated = get(
            &embedded,
            "/pkg/app-1.js",
            &[("accept-encoding", "br"), ("if-none-match", &etag)],
        );
        assert_eq!(revalidated.status(), StatusCode::NOT_MODIFIED);

        assert_eq!(get(&embedded, "/favicon.svg", &[]).status(), StatusCode::OK);
        assert_eq!(
            get(&embedded, "/nothing.js", &[]).status(),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            get(&embedded, "/pkg/app-1.js.br", &[]).status(),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            embedded
                .respond(&Method::POST, "/favicon.svg", &HeaderMap::new())
                .status(),
            StatusCode::METHOD_NOT_ALLOWED
        );
    }

    #[test]
    fn a_trailer_that_lies_is_refused_and_a_plain_binary_carries_nothing() {
        let dir = tempfile::tempdir().expect("dir");
        let liar = dir.path().join("liar");
        let mut bytes = b"short".to_vec();
        bytes.extend_from_slice(&u64::MAX.to_le_bytes());
        bytes.extend_from_slice(MAGIC);
        std::fs::write(&liar, bytes).expect("liar");
        assert!(EmbeddedSite::appended_to(&liar).is_err());

        let tiny = dir.path().join("tiny");
        std::fs::write(&tiny, b"x").expect("tiny");
        assert!(EmbeddedSite::appended_to(&tiny).expect("read").is_none());
    }
}
