//! Reading the workspace and docs/architecture.md for the docs tests.
#![allow(dead_code, clippy::unwrap_used)] // each test binary uses its part

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace's root folder.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// A workspace member as `cargo metadata` describes it.
pub struct Member {
    /// The package name.
    pub name: String,
    /// Its folder, relative to the root (`tensor/`).
    pub folder: String,
    /// Its library target's root file.
    pub lib_root: PathBuf,
    /// Normal dependencies on other members: (name, optional).
    pub deps: Vec<(String, bool)>,
    /// Its Cargo features and what each turns on (`default` among them).
    pub features: std::collections::BTreeMap<String, Vec<String>>,
}

/// Every workspace member (`cargo metadata --no-deps`).
pub fn members() -> Vec<Member> {
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = meta["packages"].as_array().unwrap();
    let names: Vec<&str> = packages
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    let root = root();
    packages
        .iter()
        .map(|p| {
            let manifest = Path::new(p["manifest_path"].as_str().unwrap());
            let dir = manifest.parent().unwrap();
            let folder = format!("{}/", dir.strip_prefix(&root).unwrap().display());
            let lib_root = p["targets"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| {
                    t["kind"].as_array().unwrap().iter().any(|k| {
                        matches!(k.as_str(), Some("lib" | "cdylib" | "staticlib" | "rlib"))
                    })
                })
                .map(|t| PathBuf::from(t["src_path"].as_str().unwrap()))
                .unwrap_or_else(|| panic!("{} has no library target", p["name"]));
            let mut deps: Vec<(String, bool)> = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].is_null())
                .filter(|d| names.contains(&d["name"].as_str().unwrap()))
                .filter(|d| d["name"] != p["name"])
                .map(|d| {
                    (
                        d["name"].as_str().unwrap().to_owned(),
                        d["optional"].as_bool().unwrap(),
                    )
                })
                .collect();
            deps.sort();
            let features = p["features"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(name, on)| {
                    let on = on.as_array().unwrap().iter();
                    let on = on.map(|f| f.as_str().unwrap().to_owned()).collect();
                    (name.clone(), on)
                })
                .collect();
            Member {
                name: p["name"].as_str().unwrap().to_owned(),
                folder,
                lib_root,
                deps,
                features,
            }
        })
        .collect()
}

/// docs/architecture.md.
pub fn architecture() -> String {
    read("docs/architecture.md")
}

/// The file at `path` under the root.
pub fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The text of section `heading` (a `## ` line) up to the next `## ` line.
pub fn section<'a>(doc: &'a str, heading: &str) -> &'a str {
    let start = doc
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("docs/architecture.md has no '{heading}'"));
    let body = &doc[start + heading.len() + 2..];
    let end = body.find("\n## ").unwrap_or(body.len());
    &body[..end]
}

/// The cells of the table rows of `text` whose first cell starts with a
/// backtick (the header and separator rows are skipped).
pub fn table_rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            l.trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().trim_matches('`').to_owned())
                .collect()
        })
        .collect()
}
