//! docs/architecture.md's "Where `unsafe` is allowed", held to the source:
//! each crate root's `unsafe_code` lint, and every `#[allow(unsafe_code)]`
//! with the item it opens (`mod sys`, `fn buffer_planes`, ...).
#![allow(clippy::unwrap_used)] // tests may panic

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::{architecture, members, root, section, table_rows};

/// A crate root's `unsafe_code` lint: `forbid`, `deny` or `none`.
fn root_lint(source: &str) -> &'static str {
    if source.contains("#![forbid(unsafe_code)]") {
        "forbid"
    } else if source.contains("#![deny(unsafe_code)]") {
        "deny"
    } else {
        "none"
    }
}

/// The item an attribute at line `at` applies to: the next line that is
/// not an attribute, a comment or blank, as its keywords and name.
fn item_after(lines: &[&str], at: usize) -> String {
    let line = lines[at + 1..]
        .iter()
        .map(|l| l.trim())
        .find(|l| !l.is_empty() && !l.starts_with("#[") && !l.starts_with("//"))
        .expect("an item after the attribute");
    let line = line
        .trim_start_matches("pub(crate) ")
        .trim_start_matches("pub ");
    let end = line.find(['(', ';', '{', '<', ':']).unwrap_or(line.len());
    line[..end].trim().to_owned()
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn the_unsafe_list_is_the_source() {
    let root = root();
    let mut lints = BTreeSet::new();
    let mut allows = BTreeSet::new();
    for m in members() {
        let lib = std::fs::read_to_string(&m.lib_root).unwrap();
        lints.insert((m.name.clone(), root_lint(&lib).to_owned()));
        let mut files = Vec::new();
        rust_files(m.lib_root.parent().unwrap(), &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            for (n, line) in lines.iter().enumerate() {
                if line.trim_start().starts_with("#[allow(unsafe_code)]") {
                    let rel = file.strip_prefix(&root).unwrap().display().to_string();
                    allows.insert((rel, item_after(&lines, n)));
                }
            }
        }
    }
    let doc = architecture();
    let list = section(&doc, "## Where `unsafe` is allowed");
    let mut doc_lints = BTreeSet::new();
    let mut doc_allows = BTreeSet::new();
    for row in table_rows(list) {
        match row.len() {
            3 => {
                doc_lints.insert((row[0].clone(), row[1].clone()));
            }
            4 => {
                doc_allows.insert((row[1].clone(), row[2].clone()));
            }
            n => panic!("a row of {n} cells: {row:?}"),
        }
    }
    let show = |s: &BTreeSet<(String, String)>| {
        s.iter()
            .map(|(a, b)| format!("| `{a}` | `{b}` |"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        doc_lints,
        lints,
        "crate roots (crate, lint) in the source:\n{}",
        show(&lints)
    );
    assert_eq!(
        doc_allows,
        allows,
        "#[allow(unsafe_code)] (file, item) in the source:\n{}",
        show(&allows)
    );
}
