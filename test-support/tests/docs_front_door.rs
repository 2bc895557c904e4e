//! The front door held to the tree: the facade's features as its docs,
//! README and docs/architecture.md name them; README's crate table against
//! the workspace; the outputs table (the facade's docs, README,
//! docs/architecture.md) against each other and the types it names; the
//! examples written against the facade alone.
#![allow(clippy::unwrap_used)] // tests may panic

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::{members, read, root, section};

/// `(features, defaults)` in `text`: each backticked name, and those
/// followed by ` (default)`.
fn named_features(text: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut all = BTreeSet::new();
    let mut defaults = BTreeSet::new();
    let mut rest = text;
    while let Some(start) = rest.find('`') {
        let after = &rest[start + 1..];
        let Some(end) = after.find('`') else { break };
        let name = after[..end].to_owned();
        rest = &after[end + 1..];
        if rest.starts_with(" (default)") {
            defaults.insert(name.clone());
        }
        all.insert(name);
    }
    (all, defaults)
}

/// The text from `marker` up to the end of its sentence or table cell.
fn after<'a>(text: &'a str, marker: &str, end: &[char]) -> &'a str {
    let start = text
        .find(marker)
        .unwrap_or_else(|| panic!("no '{marker}' in {text:.200}"))
        + marker.len();
    let rest = &text[start..];
    &rest[..rest.find(end).unwrap_or(rest.len())]
}

/// The facade's doc comment, its `//! ` prefixes gone.
fn facade_docs() -> String {
    read("zerocam/src/lib.rs")
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_facades_documented_features_are_its_cargo_features() {
    let facade = members().into_iter().find(|m| m.name == "zerocam").unwrap();
    let cargo: BTreeSet<String> = facade
        .features
        .keys()
        .filter(|f| *f != "default")
        .cloned()
        .collect();
    let cargo_defaults: BTreeSet<String> = facade.features["default"].iter().cloned().collect();
    let docs = facade_docs();
    let readme = read("README.md");
    let zerocam_row = |doc: &str, start: &str| -> String {
        doc.lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no row '{start}'"))
            .to_owned()
    };
    let places = [
        (
            "the facade's docs",
            after(&docs, "\nFeatures:", &['.']).to_owned(),
        ),
        (
            "README's crate table",
            after(
                &zerocam_row(&readme, "| [`zerocam`](zerocam/)"),
                "; features ",
                &['|'],
            )
            .to_owned(),
        ),
        (
            "docs/architecture.md's crate table",
            after(
                &zerocam_row(&read("docs/architecture.md"), "| `zerocam` | `zerocam/` |"),
                "; features ",
                &['|'],
            )
            .to_owned(),
        ),
    ];
    for (place, text) in places {
        let (named, defaults) = named_features(&text);
        assert_eq!(named, cargo, "{place} names these features: {text}");
        assert_eq!(defaults, cargo_defaults, "{place}'s defaults: {text}");
    }
    // Each feature has its `## ` doc line in the manifest.
    let manifest = read("zerocam/Cargo.toml");
    let lines: Vec<&str> = manifest.lines().collect();
    for feature in &cargo {
        let at = lines
            .iter()
            .position(|l| l.starts_with(&format!("{feature} = ")))
            .unwrap();
        assert!(
            at > 0 && lines[at - 1].starts_with("## "),
            "zerocam/Cargo.toml: feature `{feature}` has no `## ` line saying what it is"
        );
    }
}

#[test]
fn readmes_crate_table_is_the_workspace() {
    let readme = read("README.md");
    let rows: BTreeSet<(String, String)> = readme
        .lines()
        .filter_map(|l| l.strip_prefix("| [`"))
        .map(|l| {
            let (name, rest) = l.split_once("`](").unwrap();
            let folder = &rest[..rest.find(')').unwrap()];
            (name.to_owned(), folder.to_owned())
        })
        .collect();
    let want: BTreeSet<(String, String)> =
        members().into_iter().map(|m| (m.name, m.folder)).collect();
    assert_eq!(rows, want, "README's crate table (name, folder)");
}

/// The rows of the `| output | where | feature |` table in `doc`.
fn outputs(doc: &str, place: &str) -> Vec<[String; 3]> {
    let start = doc
        .find("| output | where | feature |")
        .unwrap_or_else(|| panic!("{place} has no outputs table"));
    doc[start..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with("| "))
        .map(|l| {
            let cells: Vec<String> = l
                .trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().trim_matches('`').to_owned())
                .collect();
            assert_eq!(cells.len(), 3, "{place}: {l}");
            [cells[0].clone(), cells[1].clone(), cells[2].clone()]
        })
        .collect()
}

/// Every Rust file under `dir`, into `files`.
fn rust_files(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// Whether `path` (`crate::module::Type`, the facade's module names) names
/// a public type in that module's files (its folder's, all the way down).
fn resolves(path: &str) -> Result<(), String> {
    let segments: Vec<&str> = path.split("::").collect();
    let (ty, modules) = segments.split_last().unwrap();
    let (krate, modules) = modules.split_first().ok_or("no crate")?;
    let member = members()
        .into_iter()
        .find(|m| m.name == format!("zerocam-{krate}"))
        .ok_or(format!("no crate zerocam-{krate}"))?;
    let mut dir = root().join(&member.folder).join("src");
    for m in modules {
        dir = dir.join(m);
    }
    let mut files = Vec::new();
    if dir.is_dir() {
        rust_files(&dir, &mut files);
    } else {
        files.push(dir.with_extension("rs"));
    }
    let wanted = format!("pub struct {ty}");
    let found = files.iter().any(|f| {
        std::fs::read_to_string(f).is_ok_and(|t| {
            t.lines().any(|l| {
                l.starts_with(&format!("{wanted} ")) || l.starts_with(&format!("{wanted}<"))
            })
        })
    });
    found
        .then_some(())
        .ok_or(format!("no `{wanted}` in {}", dir.display()))
}

#[test]
fn every_output_is_named_alike_and_exists() {
    let facade = outputs(&facade_docs(), "the facade's docs");
    let readme = outputs(&read("README.md"), "README");
    let arch = read("docs/architecture.md");
    let architecture = outputs(section(&arch, "## Frames out"), "docs/architecture.md");
    assert_eq!(readme, facade, "README's outputs and the facade's");
    assert_eq!(
        architecture, facade,
        "docs/architecture.md's outputs and the facade's"
    );
    assert!(facade.len() >= 5, "{facade:?}");
    let features = members()
        .into_iter()
        .find(|m| m.name == "zerocam")
        .unwrap()
        .features;
    for [what, path, feature] in &facade {
        resolves(path).unwrap_or_else(|e| panic!("{what}: {path}: {e}"));
        assert!(
            feature == "always" || features.contains_key(feature),
            "{what}: `{feature}` is not a feature of zerocam"
        );
    }
}

/// The `zerocam_*` crate paths in `dir`'s Rust files other than `allowed`.
fn inner_crate_uses(dir: &Path, allowed: &[&str], found: &mut Vec<String>) {
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, line) in text.lines().enumerate() {
            for (at, _) in line.match_indices("zerocam_") {
                let name: String = line[at..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                let word_start =
                    !line[..at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
                if word_start && !allowed.contains(&name.as_str()) {
                    found.push(format!("{}:{}: {name}", path.display(), i + 1));
                }
            }
        }
    }
}

#[test]
fn the_examples_are_written_against_the_facade_alone() {
    let examples = members()
        .into_iter()
        .find(|m| m.name == "zerocam-examples")
        .unwrap();
    let deps: Vec<_> = examples.deps.iter().map(|(d, _)| d.as_str()).collect();
    assert_eq!(deps, ["zerocam"], "zerocam-examples' zerocam dependencies");
    let mut found = Vec::new();
    let allowed = ["zerocam_examples", "zerocam_test_support"];
    for dir in ["examples/src", "examples/tests", "zerocam/examples"] {
        inner_crate_uses(&root().join(dir), &allowed, &mut found);
    }
    assert!(
        found.is_empty(),
        "examples reach past the facade (use zerocam::…): {found:#?}"
    );
}
