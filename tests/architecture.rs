//! ARCHITECTURE.md's invariants, checked on the source: the modules of each crate import
//! only downward (no circle), `sim` names no model, `models` never prints, and a filesystem
//! is known outside its own folder only to the few shared files the walk-through lists.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The `.rs` files under `dir`, recursively, in name order.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            out.extend(rust_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out
}

/// A file's text without `//` comments (doc comments name other modules freely).
fn code_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The identifiers `prefix` is followed by in `code` (`crate::` → `device`, `btrfs`, …),
/// including the first segment of each path inside `use crate::{a::x, b::y}`.
fn referenced(code: &str, prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    for (i, _) in code.match_indices(prefix) {
        let rest = &code[i + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for path in group.split(',') {
                let first = ident(path.trim());
                if path.contains("::") && !first.is_empty() {
                    out.insert(first);
                }
            }
        } else {
            let first = ident(rest);
            if !first.is_empty() {
                out.insert(first);
            }
        }
    }
    out
}

/// Top-level module → the sibling modules it names through `crate::`.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in rust_files(src) {
        let rel = f.strip_prefix(src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_string();
        if module == "lib" || module == "main" {
            continue;
        }
        let deps = referenced(&code_of(&f), "crate::");
        let e = g.entry(module.clone()).or_default();
        e.extend(deps.into_iter().filter(|d| *d != module));
    }
    g
}

/// A circle in `g`, if there is one (depth-first search; the path of the first back edge).
fn find_circle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        path.push(n.to_string());
        for d in g.get(n).into_iter().flatten() {
            match state.get(d.as_str()).copied().unwrap_or(0) {
                1 => {
                    let at = path.iter().position(|p| p == d).unwrap();
                    let mut c = path[at..].to_vec();
                    c.push(d.clone());
                    return Some(c);
                }
                0 => {
                    if let Some(c) = visit(d, g, state, path) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        path.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in g.keys() {
        if state.get(n.as_str()).copied().unwrap_or(0) == 0 {
            let mut path = Vec::new();
            if let Some(c) = visit(n, g, &mut state, &mut path) {
                return Some(c);
            }
        }
    }
    None
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn no_import_circle_between_modules_of_any_crate() {
    for krate in ["sim/src", "models/src", "reports/src", "src"] {
        let g = module_graph(&root().join(krate));
        assert!(
            find_circle(&g).is_none(),
            "{krate}: import circle {:?}",
            find_circle(&g)
        );
    }
}

#[test]
fn the_circle_finder_finds_a_circle() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("c".into());
    assert!(find_circle(&g).is_none());
    g.entry("c".into()).or_default().insert("a".into());
    assert_eq!(find_circle(&g).unwrap(), ["a", "b", "c", "a"]);
    let code =
        "use crate::{device::Device, vfs::{Op, Metrics}};\nlet x = crate::btrfs::Btrfs::new();";
    let r = referenced(code, "crate::");
    assert!(
        r.contains("device") && r.contains("vfs") && r.contains("btrfs"),
        "{r:?}"
    );
}

/// The layers of `models`, lowest first, as ARCHITECTURE.md's invariant lists them: a module
/// imports only modules listed before it.
const MODELS_ORDER: [&str; 14] = [
    "units", "device", "block", "vfs", "jbd2", "ext4", "btrfs", "kernel", "mount", "scenario",
    "sweep", "shrink", "workload", "validate",
];

#[test]
fn models_import_only_downward() {
    let g = module_graph(&root().join("models/src"));
    for (m, deps) in &g {
        let at = MODELS_ORDER
            .iter()
            .position(|x| x == m)
            .unwrap_or_else(|| panic!("module {m} is not in MODELS_ORDER (ARCHITECTURE.md)"));
        for d in deps {
            let dl = MODELS_ORDER.iter().position(|x| x == d);
            assert!(
                dl.is_some_and(|dl| dl < at),
                "models::{m} imports models::{d}, which is not below it"
            );
        }
    }
}

#[test]
fn sim_names_no_model_and_models_never_print() {
    for f in rust_files(&root().join("sim/src")) {
        let code = code_of(&f).to_lowercase();
        for word in ["btrfs", "ext4", "jbd2", "models::"] {
            assert!(!code.contains(word), "{} names {word}", f.display());
        }
    }
    for f in rust_files(&root().join("models/src")) {
        let code = code_of(&f);
        for mac in ["println!", "print!(", "eprintln!", "eprint!("] {
            assert!(!code.contains(mac), "{} prints ({mac})", f.display());
        }
    }
}

/// The walk-through "Adding a filesystem": besides its own folder, a filesystem is named by
/// `mount.rs` (kind, options, `Mounted` arm), `kernel.rs` (its part of a release preset),
/// `lib.rs` (the module) and `reports/src/vocab.rs` (`list --metrics`). ext3/ext4 (with its
/// journal) is the proof: no other file imports it or matches its `Mounted` arm.
#[test]
fn a_filesystem_is_known_to_four_shared_files() {
    let allowed = [
        "models/src/mount.rs",
        "models/src/kernel.rs",
        "models/src/lib.rs",
        "reports/src/vocab.rs",
    ];
    let mut naming = Vec::new();
    for krate in ["models/src", "reports/src", "src"] {
        for f in rust_files(&root().join(krate)) {
            let rel = f
                .strip_prefix(root())
                .unwrap()
                .to_string_lossy()
                .to_string();
            if rel.starts_with("models/src/ext4/") || rel.starts_with("models/src/jbd2/") {
                continue;
            }
            let code = code_of(&f);
            let named = ["crate::ext4", "crate::jbd2", "models::ext4", "models::jbd2"]
                .iter()
                .any(|p| code.contains(p))
                || code.contains("Mounted::Ext4")
                || code.contains("mod ext4;")
                || code.contains("mod jbd2;");
            if named {
                naming.push(rel);
            }
        }
    }
    for f in &naming {
        assert!(allowed.contains(&f.as_str()), "{f} names ext4/jbd2");
    }
    assert!(naming.len() <= 4, "{naming:?}");
}
