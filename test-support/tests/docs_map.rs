//! docs/architecture.md's crate map (the diagram and the table) and the path
//! of one frame, held to the workspace: `cargo metadata` gives the members,
//! their folders and their dependencies; every file the frame's path names
//! must exist.
#![allow(clippy::unwrap_used)] // tests may panic

mod common;

use std::collections::BTreeSet;

use common::{architecture, members, root, section, table_rows};

/// (name, folder) of the diagram's nodes, and its edges as (from, to,
/// optional), names resolved.
type Diagram = (BTreeSet<(String, String)>, BTreeSet<(String, String, bool)>);

fn diagram(map: &str) -> Diagram {
    let start = map.find("```mermaid\n").expect("a mermaid block") + "```mermaid\n".len();
    let block = &map[start..start + map[start..].find("```").expect("its end")];
    let mut ids = std::collections::BTreeMap::new();
    let mut nodes = BTreeSet::new();
    let mut edges = Vec::new();
    for line in block.lines().map(str::trim) {
        if let Some((id, rest)) = line.split_once("[\"") {
            let label = rest.trim_end_matches("\"]");
            let (name, folder) = label.split_once("<br/>").expect("name<br/>folder");
            ids.insert(id.to_owned(), name.to_owned());
            nodes.insert((name.to_owned(), folder.to_owned()));
        } else if let Some((a, b)) = line.split_once(" --> ") {
            edges.push((a.to_owned(), b.to_owned(), false));
        } else if let Some((a, b)) = line.split_once(" -.-> ") {
            edges.push((a.to_owned(), b.to_owned(), true));
        } else {
            assert!(
                line.is_empty() || line.starts_with("graph "),
                "a line the test does not read: {line}"
            );
        }
    }
    let name = |id: &str| {
        ids.get(id)
            .unwrap_or_else(|| panic!("edge to an undeclared node {id}"))
            .clone()
    };
    let edges = edges
        .into_iter()
        .map(|(a, b, optional)| (name(&a), name(&b), optional))
        .collect();
    (nodes, edges)
}

#[test]
fn the_crate_map_is_the_workspace() {
    let doc = architecture();
    let map = section(&doc, "## Crate map");
    let members = members();
    let want_nodes: BTreeSet<_> = members
        .iter()
        .map(|m| (m.name.clone(), m.folder.clone()))
        .collect();
    let want_edges: BTreeSet<_> = members
        .iter()
        .flat_map(|m| {
            m.deps
                .iter()
                .map(|(d, optional)| (m.name.clone(), d.clone(), *optional))
        })
        .collect();
    let (nodes, edges) = diagram(map);
    assert_eq!(nodes, want_nodes, "the diagram's crates and folders");
    let missing: Vec<_> = want_edges.difference(&edges).collect();
    let extra: Vec<_> = edges.difference(&want_edges).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "the diagram's arrows (from, to, optional): missing {missing:?}, not in the manifests {extra:?}"
    );
    let table: BTreeSet<_> = table_rows(map)
        .into_iter()
        .map(|r| (r[0].clone(), r[1].clone()))
        .collect();
    assert_eq!(table, want_nodes, "the table's crates and folders");
}

#[test]
fn every_file_the_frame_path_names_exists() {
    let doc = architecture();
    let path = section(&doc, "## The path of one frame");
    let files: Vec<&str> = path
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|t| t.contains('/') && (t.ends_with(".rs") || t.ends_with('/')))
        .collect();
    assert!(files.len() >= 10, "the path names its files: {files:?}");
    let root = root();
    let gone: Vec<_> = files.iter().filter(|f| !root.join(f).exists()).collect();
    assert!(
        gone.is_empty(),
        "named in 'The path of one frame' but not in the tree: {gone:?}"
    );
}
