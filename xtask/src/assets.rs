//! Fingerprints and precompresses the site's files: the bundle and stylesheet get names that carry a hash of
//! their content (so a browser may keep them for a year), and every file gets a `.br` and a `.gz` beside it
//! (so the server sends compressed bytes without compressing on each request).

use std::{
    fs,
    io::Write,
    path::{Path, PathBuf},
};

use anyhow::{Context, Result};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::Profile;

/// The file, beside the site's `pkg/` folder, that tells the server the fingerprinted names.
pub const MANIFEST: &str = "assets.json";

/// Hex digits of the content hash in a name: 64 bits, plenty to tell builds apart.
const HASH_DIGITS: usize = 16;

/// Renames `pkg/{name}.js`, `pkg/{name}_bg.wasm` and `pkg/{name}.css` to fingerprinted names, writes the
/// manifest the server reads, and precompresses everything under `site`.
pub fn fingerprint_and_compress(site: &Path, name: &str, profile: Profile) -> Result<()> {
    let pkg = site.join("pkg");
    let js = pkg.join(format!("{name}.js"));
    let wasm = pkg.join(format!("{name}_bg.wasm"));
    let css = pkg.join(format!("{name}.css"));

    // The script and the wasm load as a pair, so they share one hash of both.
    let script = format!("{name}-{}", content_hash(&[&js, &wasm])?);
    let stylesheet = format!("{name}-{}.css", content_hash(&[&css])?);
    rename(&js, &pkg.join(format!("{script}.js")))?;
    rename(&wasm, &pkg.join(format!("{script}_bg.wasm")))?;
    rename(&css, &pkg.join(&stylesheet))?;
    let manifest = json!({"script": script, "stylesheet": stylesheet});
    fs::write(site.join(MANIFEST), serde_json::to_vec_pretty(&manifest)?)
        .with_context(|| format!("cannot write {}", site.join(MANIFEST).display()))?;

    let level = match profile {
        // A debug bundle is large and rebuilt often: compress it quickly; a release is compressed once, fully.
        Profile::Debug => Level { brotli: 4, gzip: 6 },
        Profile::Release => Level {
            brotli: 11,
            gzip: 9,
        },
    };
    for file in files_under(site)? {
        if file.file_name().and_then(|n| n.to_str()) == Some(MANIFEST) {
            continue;
        }
        compress(&file, level)?;
    }
    Ok(())
}

/// The first [`HASH_DIGITS`] hex digits of the SHA-256 of the files' contents, in order.
fn content_hash(files: &[&Path]) -> Result<String> {
    let mut hasher = Sha256::new();
    for file in files {
        hasher.update(fs::read(file).with_context(|| format!("cannot read {}", file.display()))?);
    }
    let digest = hasher.finalize();
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    Ok(hex.chars().take(HASH_DIGITS).collect())
}

fn rename(from: &Path, to: &Path) -> Result<()> {
    fs::rename(from, to)
        .with_context(|| format!("cannot rename {} to {}", from.display(), to.display()))
}

/// Every file under `dir` that is not itself a compressed copy.
fn files_under(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            files.extend(files_under(&path)?);
        } else if !path
            .extension()
            .is_some_and(|ext| ext == "br" || ext == "gz")
        {
            files.push(path);
        }
    }
    Ok(files)
}

#[derive(Clone, Copy)]
struct Level {
    brotli: u32,
    gzip: u32,
}

/// Writes `file.br` and `file.gz`.
fn compress(file: &Path, level: Level) -> Result<()> {
    let bytes = fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    let with_suffix = |suffix: &str| {
        let mut name = file.as_os_str().to_owned();
        name.push(suffix);
        PathBuf::from(name)
    };

    let mut brotli = Vec::new();
    {
        let mut writer = brotli::CompressorWriter::new(&mut brotli, 64 * 1024, level.brotli, 22);
        writer.write_all(&bytes)?;
    }
    fs::write(with_suffix(".br"), brotli)?;

    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level.gzip));
    gzip.write_all(&bytes)?;
    fs::write(with_suffix(".gz"), gzip.finish()?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder of its own under the system's temporary folder, removed when dropped. Not the `tempfile`
    /// crate: as a dev-dependency it changes the features of crates wasm-bindgen shares with it, and
    /// `cargo xtask test` then compiles wasm-bindgen a second time (40 s of every test run).
    struct ScratchDir(PathBuf);

    impl ScratchDir {
        fn new(label: &str) -> Self {
            // The process and a count of this run's folders tell concurrent tests and runs apart.
            static MADE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let made = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let dir =
                std::env::temp_dir().join(format!("xtask-{label}-{}-{made}", std::process::id()));
            // A folder left by an earlier process with the same id is not this test's.
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).expect("scratch dir");
            Self(dir)
        }

        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for ScratchDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn fingerprinted_names_follow_content_and_every_file_gets_compressed_copies() {
        let site = ScratchDir::new("site");
        let pkg = site.path().join("pkg");
        fs::create_dir_all(&pkg).expect("pkg");
        fs::write(pkg.join("app.js"), "export default function init() {}").expect("js");
        fs::write(pkg.join("app_bg.wasm"), [0u8, 97, 115, 109]).expect("wasm");
        fs::write(pkg.join("app.css"), "body { color: black; }".repeat(50)).expect("css");
        fs::write(site.path().join("favicon.svg"), "<svg/>").expect("icon");

        fingerprint_and_compress(site.path(), "app", Profile::Debug).expect("assets");

        let manifest: serde_json::Value =
            serde_json::from_slice(&fs::read(site.path().join(MANIFEST)).expect("manifest"))
                .expect("json");
        let script = manifest["script"].as_str().expect("script");
        let stylesheet = manifest["stylesheet"].as_str().expect("stylesheet");
        assert!(script.starts_with("app-") && script.len() == 4 + HASH_DIGITS);
        for name in [
            format!("{script}.js"),
            format!("{script}_bg.wasm"),
            stylesheet.to_owned(),
        ] {
            assert!(pkg.join(&name).is_file(), "{name}");
            assert!(pkg.join(format!("{name}.br")).is_file(), "{name}.br");
            assert!(pkg.join(format!("{name}.gz")).is_file(), "{name}.gz");
        }
        assert!(!pkg.join("app.js").exists(), "the plain name is gone");
        assert!(site.path().join("favicon.svg.br").is_file());

        // The compressed copies decode to the original.
        let mut decoded = Vec::new();
        brotli::BrotliDecompress(
            &mut fs::read(pkg.join(format!("{stylesheet}.br")))
                .expect("br")
                .as_slice(),
            &mut decoded,
        )
        .expect("brotli");
        assert_eq!(decoded, fs::read(pkg.join(stylesheet)).expect("css"));

        // Another stylesheet, another name; the script's name does not move.
        let again = ScratchDir::new("again");
        let pkg2 = again.path().join("pkg");
        fs::create_dir_all(&pkg2).expect("pkg");
        fs::write(pkg2.join("app.js"), "export default function init() {}").expect("js");
        fs::write(pkg2.join("app_bg.wasm"), [0u8, 97, 115, 109]).expect("wasm");
        fs::write(pkg2.join("app.css"), "body { color: red; }").expect("css");
        fingerprint_and_compress(again.path(), "app", Profile::Debug).expect("assets");
        let second: serde_json::Value =
            serde_json::from_slice(&fs::read(again.path().join(MANIFEST)).expect("manifest"))
                .expect("json");
        assert_eq!(second["script"], manifest["script"]);
        assert_ne!(second["stylesheet"], manifest["stylesheet"]);
    }
}
