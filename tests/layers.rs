//! The import graph of the workspace, checked (#34):
//!
//! - **No circle between siblings.** In every directory of `src/` (the product's, the
//!   core's and the simulator's), the modules side by side (its files and subdirectories)
//!   form no import circle: if `a` uses `b`, nothing under `b` uses `a`. A module's own
//!   parts are not siblings of it: a child may use its parent's items and the parent its
//!   children (that is one module).
//! - **The layers**: source → store → (core's verdicts) → app → ui, the commands on top,
//!   `cli` above them all; a layer never uses one above it.
//! - **`commands/` holds only the commands**: no command uses another, none uses `cli`.
//! - **The core by its own name**: the product does not re-export the core or the simulator.
//!
//! Paths are read from the code (`use` trees, `crate::`/`super::`/`self::` paths) with
//! comments, strings and `#[cfg(test)]` modules left out; test files (`tests.rs`, a
//! `tests/` folder) are exempt.
#![allow(
    clippy::unwrap_used,
    reason = "a checker of the source tree fails loudly on what it cannot read"
)]

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

type Module = Vec<String>;

/// Every module of a crate's `src/`: its path (`["source", "live"]`) → its file.
fn modules(root: &Path) -> BTreeMap<Module, PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).expect("src/ reads").flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(root, &mut files);
    files
        .into_iter()
        .map(|f| {
            let rel = f.strip_prefix(root).unwrap().with_extension("");
            let mut m: Module = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(m.last().map(String::as_str), Some("mod" | "lib" | "main")) {
                m.pop();
            }
            (m, f)
        })
        .collect()
}

fn is_test(m: &Module, file: &Path) -> bool {
    m.iter().any(|s| s == "tests") || file.file_name().is_some_and(|n| n == "tests.rs")
}

/// The code without comments, string and char literals, and `#[cfg(test)]` items.
fn code_of(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if b[i] == b'"' {
            // A raw string's `r#"` leaves its `r#` behind: harmless.
            let hashes = b[..i].iter().rev().take_while(|&&c| c == b'#').count();
            let raw = i > hashes && b[i - hashes - 1] == b'r';
            i += 1;
            while i < b.len() {
                if !raw && b[i] == b'\\' {
                    i += 2;
                    continue;
                }
                if b[i] == b'"'
                    && b[i + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&c| c == b'#')
                        .count()
                        == hashes
                {
                    i += 1 + hashes;
                    break;
                }
                i += 1;
            }
            out.push_str("\"\"");
        } else if b[i] == b'\'' {
            // A char literal ('x', '│', '\n', '\''), or a lifetime (no closing quote).
            let rest = &text[i + 1..];
            let len = if let Some(escaped) = rest.strip_prefix('\\') {
                escaped.find('\'').map(|k| k + 1)
            } else {
                rest.chars()
                    .next()
                    .map(char::len_utf8)
                    .filter(|&n| rest[n..].starts_with('\''))
            };
            match len {
                Some(n) => i += 1 + n + 1,
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            let ch = text[i..].chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    drop_test_items(&out)
}

/// `#[cfg(test)] mod x;` and `#[cfg(test)] mod x { … }` (and any other item) removed.
fn drop_test_items(code: &str) -> String {
    let mut out = code.to_owned();
    while let Some(at) = out.find("#[cfg(test)]") {
        let rest = &out[at..];
        let semi = rest.find(';');
        let brace = rest.find('{');
        let end = match (semi, brace) {
            (Some(s), Some(b)) if s < b => at + s + 1,
            (_, Some(b)) => {
                let mut depth = 0;
                let mut end = out.len();
                for (k, c) in out[at + b..].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = at + b + k + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                end
            }
            (Some(s), None) => at + s + 1,
            (None, None) => out.len(),
        };
        out.replace_range(at..end, "");
    }
    out
}

/// `a::{b, c::{d, self}}` → `a::b`, `a::c::d`, `a::c`.
fn expand(tree: &str, out: &mut Vec<String>) {
    // `x as y` renames: the path is `x`.
    let words: Vec<&str> = tree.split_whitespace().collect();
    let mut kept = String::new();
    let mut k = 0;
    while k < words.len() {
        if words[k] == "as" {
            // The alias goes; what follows it (`,`, `}`) stays.
            if let Some(alias) = words.get(k + 1) {
                kept.push_str(alias.trim_start_matches(|c: char| c.is_alphanumeric() || c == '_'));
            }
            k += 2;
            continue;
        }
        kept.push_str(words[k]);
        k += 1;
    }
    let tree = kept;
    let Some(open) = tree.find('{') else {
        out.push(tree.trim_end_matches("::*").to_owned());
        return;
    };
    let prefix = &tree[..open];
    let body = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut depth = 0;
    let mut start = 0;
    let mut parts = Vec::new();
    for (k, c) in body.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&body[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    parts.push(&body[start..]);
    for p in parts.into_iter().filter(|p| !p.is_empty()) {
        if p == "self" {
            out.push(prefix.trim_end_matches("::").to_owned());
        } else {
            expand(&format!("{prefix}{p}"), out);
        }
    }
}

/// The paths a file's code names: `use` trees expanded, and inline paths.
fn paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = String::new();
    let mut i = 0;
    let words = |s: &str, at: usize| {
        at == 0 || !s.as_bytes()[at - 1].is_ascii_alphanumeric() && s.as_bytes()[at - 1] != b'_'
    };
    while let Some(k) = code[i..].find("use ") {
        let at = i + k;
        rest.push_str(&code[i..at]);
        if !words(code, at) {
            rest.push_str("use ");
            i = at + 4;
            continue;
        }
        let end = code[at..].find(';').map_or(code.len(), |e| at + e);
        expand(&code[at + 4..end], &mut out);
        i = end;
    }
    rest.push_str(&code[i..]);
    for start in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(k) = rest[from..].find(start) {
            let at = from + k;
            from = at + start.len();
            // Not the inner `super::` of `super::super::x` (the outer one reads it whole).
            if !words(&rest, at) || rest[..at].ends_with("::") {
                continue;
            }
            let path: String = rest[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            out.push(path.trim_end_matches(':').to_owned());
        }
    }
    out
}

/// The module a path names, as far as modules go (`crate::source::live::spawn` →
/// `["source", "live"]`), from module `me`; `None` for another crate's path.
fn resolve(mods: &BTreeMap<Module, PathBuf>, me: &Module, path: &str) -> Option<Module> {
    let segs: Vec<&str> = path.split("::").collect();
    let (mut cur, rest): (Module, &[&str]) = match segs[0] {
        "crate" => (Vec::new(), &segs[1..]),
        "self" => (me.clone(), &segs[1..]),
        "super" => {
            let mut base = me.clone();
            base.pop();
            (base, &segs[1..])
        }
        _ => {
            // A `use` path relative to this module (its child: `use args::X` in mod.rs),
            // else another crate's.
            let mut child = me.clone();
            child.push(segs[0].to_owned());
            if !mods.contains_key(&child) {
                return None;
            }
            (me.clone(), &segs[..])
        }
    };
    for s in rest {
        if *s == "super" {
            cur.pop();
            continue;
        }
        let mut next = cur.clone();
        next.push((*s).to_owned());
        if mods.contains_key(&next) {
            cur = next;
        } else {
            break;
        }
    }
    Some(cur)
}

/// Module → the modules it uses (test code left out).
fn graph(root: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let mods = modules(root);
    let mut g: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (m, file) in &mods {
        if is_test(m, file) {
            continue;
        }
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        let entry = g.entry(m.clone()).or_default();
        for p in paths(&code) {
            if let Some(to) = resolve(&mods, m, &p)
                && &to != m
            {
                entry.insert(to);
            }
        }
    }
    g
}

/// The circles among the children of `parent` (each module counted as the child of
/// `parent` it is under), as strongly connected components of two or more.
fn circles(g: &BTreeMap<Module, BTreeSet<Module>>, parent: &[String]) -> Vec<Vec<String>> {
    let child = |m: &Module| {
        (m.len() > parent.len() && m.starts_with(parent)).then(|| m[parent.len()].clone())
    };
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (a, tos) in g {
        let Some(ca) = child(a) else { continue };
        for b in tos {
            if let Some(cb) = child(b)
                && cb != ca
            {
                edges.entry(ca.clone()).or_default().insert(cb);
            }
        }
    }
    // Tarjan's strongly connected components.
    struct T<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<String, usize>,
        low: BTreeMap<String, usize>,
        stack: Vec<String>,
        on: BTreeSet<String>,
        out: Vec<Vec<String>>,
    }
    fn visit(t: &mut T, v: &str) {
        let n = t.index.len();
        t.index.insert(v.to_owned(), n);
        t.low.insert(v.to_owned(), n);
        t.stack.push(v.to_owned());
        t.on.insert(v.to_owned());
        let next: Vec<String> = t.edges.get(v).into_iter().flatten().cloned().collect();
        for w in next {
            if !t.index.contains_key(&w) {
                visit(t, &w);
                let lw = t.low[&w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.on.contains(&w) {
                let iw = t.index[&w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(&w);
                let done = w == v;
                comp.push(w);
                if done {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        edges: &edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    let nodes: Vec<String> = edges.keys().cloned().collect();
    for v in nodes {
        if !t.index.contains_key(&v) {
            visit(&mut t, &v);
        }
    }
    t.out
}

fn all_circles(root: &Path) -> Vec<String> {
    let g = graph(root);
    let dirs: BTreeSet<Module> = g
        .keys()
        .flat_map(|m| (0..m.len()).map(|k| m[..k].to_vec()))
        .collect();
    let mut found = Vec::new();
    for d in dirs {
        for c in circles(&g, &d) {
            let at = if d.is_empty() {
                "src".to_owned()
            } else {
                format!("src/{}", d.join("/"))
            };
            found.push(format!("{at}: {}", c.join(" ↔ ")));
        }
    }
    found
}

/// This checkout, or another one named by `LAYERS_WORKSPACE` (to see an older tree's circles).
fn workspace() -> PathBuf {
    std::env::var_os("LAYERS_WORKSPACE")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
}

#[test]
fn no_circle_between_sibling_modules_in_any_crate() {
    let mut found = Vec::new();
    for krate in [".", "crates/core", "crates/sim"] {
        for c in all_circles(&workspace().join(krate).join("src")) {
            found.push(format!("{krate}/{c}"));
        }
    }
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

/// (layer under src/, the layers it must not use)
const RULES: &[(&str, &[&str])] = &[
    (
        "failure",
        &[
            "storage", "source", "eventlog", "store", "evidence", "publish", "fleet", "record",
            "effect", "actions", "app", "ui", "tui", "flags", "output", "commands", "cli",
        ],
    ),
    (
        "settings",
        &[
            "storage", "source", "eventlog", "store", "evidence", "publish", "fleet", "record",
            "effect", "actions", "app", "ui", "tui", "flags", "output", "commands", "cli",
        ],
    ),
    // Files here or in an object store, read with bounds: under everything that reads them.
    (
        "storage",
        &[
            "source", "eventlog", "store", "evidence", "publish", "fleet", "record", "effect",
            "actions", "app", "ui", "tui", "flags", "output", "commands", "cli",
        ],
    ),
    (
        "source",
        &[
            "eventlog", "store", "evidence", "publish", "fleet", "record", "effect", "actions",
            "app", "ui", "tui", "flags", "output", "commands", "cli",
        ],
    ),
    // Spark's event logs, a source of the same events as the cluster's.
    (
        "eventlog",
        &[
            "store", "evidence", "publish", "fleet", "record", "effect", "actions", "app", "ui",
            "tui", "flags", "output", "commands", "cli",
        ],
    ),
    (
        "store",
        &[
            "evidence", "publish", "fleet", "record", "effect", "actions", "app", "ui", "tui",
            "flags", "output", "commands", "cli",
        ],
    ),
    // The evidence budget and the recorder's own reads: over the store, under the
    // recordings and the live view (both use it).
    (
        "evidence",
        &[
            "publish", "fleet", "record", "effect", "actions", "app", "ui", "tui", "flags",
            "output", "commands", "cli",
        ],
    ),
    // /metrics, the verdicts as series, and the Events writer: over the store, under the
    // recorder and the live view that serve them.
    (
        "publish",
        &[
            "fleet", "record", "effect", "actions", "app", "ui", "tui", "flags", "output",
            "commands", "cli",
        ],
    ),
    // The Parquet fleet tables: written by the recorder, read by the commands.
    (
        "fleet",
        &[
            "record", "effect", "actions", "app", "ui", "tui", "flags", "output", "commands", "cli",
        ],
    ),
    // Recordings: the format, segments, the lock, the recorder, and the post-mortem inputs
    // (recordings and event logs) opened as one timeline.
    (
        "record",
        &[
            "effect", "actions", "app", "ui", "tui", "flags", "output", "commands", "cli",
        ],
    ),
    (
        "effect",
        &[
            "store", "evidence", "publish", "fleet", "record", "eventlog", "storage", "actions",
            "app", "ui", "tui", "flags", "output", "commands", "cli",
        ],
    ),
    (
        "actions",
        &["app", "ui", "tui", "flags", "output", "commands", "cli"],
    ),
    (
        "app",
        &["ui", "tui", "actions", "flags", "output", "commands", "cli"],
    ),
    (
        "ui",
        &["tui", "actions", "flags", "output", "commands", "cli"],
    ),
    ("tui", &["flags", "output", "commands", "cli"]),
    ("output", &["tui", "flags", "commands", "cli"]),
    ("flags", &["output", "commands", "cli"]),
    ("commands", &["cli"]),
];

#[test]
fn no_module_uses_a_layer_above_it() {
    let g = graph(&workspace().join("src"));
    let mut broken = Vec::new();
    for (layer, above) in RULES {
        assert!(
            g.keys().any(|m| m.first().is_some_and(|f| f == layer)),
            "{layer}: no such module"
        );
        for (m, tos) in g
            .iter()
            .filter(|(m, _)| m.first().is_some_and(|f| f == layer))
        {
            for to in tos {
                if let Some(top) = to.first().filter(|t| above.contains(&t.as_str())) {
                    broken.push(format!("{} uses {top} ({})", m.join("::"), to.join("::")));
                }
            }
        }
    }
    assert!(
        broken.is_empty(),
        "layers used from below:\n{}",
        broken.join("\n")
    );
}

#[test]
fn commands_are_only_the_commands() {
    let g = graph(&workspace().join("src"));
    let mut broken = Vec::new();
    for (m, tos) in g.iter().filter(|(m, _)| m.len() == 2 && m[0] == "commands") {
        for to in tos {
            if to.len() >= 2 && to[0] == "commands" && to[1] != m[1] {
                broken.push(format!("commands::{} uses {}", m[1], to.join("::")));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "a command is a library for another:\n{}",
        broken.join("\n")
    );
}

#[test]
fn the_core_is_reached_by_its_own_name() {
    let lib = std::fs::read_to_string(workspace().join("src/lib.rs")).unwrap();
    let code = code_of(&lib);
    for other in ["spark_triage_core", "spark_triage_sim"] {
        assert!(
            !code.contains(&format!("pub use {other}")),
            "src/lib.rs re-exports {other}: reach it by its own name"
        );
    }
}

/// The checker itself: a circle planted in a copy of a small tree is found, and the
/// parent ↔ child pattern is not one.
#[test]
fn the_checker_finds_a_planted_circle() {
    let dir = std::env::temp_dir().join(format!("layers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("a")).unwrap();
    std::fs::write(dir.join("lib.rs"), "mod a;\nmod b;\n").unwrap();
    std::fs::write(
        dir.join("a/mod.rs"),
        "mod x;\nmod y;\npub struct S;\nuse x::f;\n",
    )
    .unwrap();
    // A child using its parent's item, the parent its child: one module, no circle.
    std::fs::write(dir.join("a/x.rs"), "use super::S;\npub fn f() {}\n").unwrap();
    std::fs::write(
        dir.join("a/y.rs"),
        "// use super::x;\nfn g() { let _ = \"crate::b\"; }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("b.rs"),
        "#[cfg(test)]\nmod t { use crate::a::S; }\n",
    )
    .unwrap();
    assert_eq!(all_circles(&dir), Vec::<String>::new());
    // Siblings in a circle: a ↔ b through a nested use tree (after a renaming) and an
    // inline path.
    std::fs::write(
        dir.join("b.rs"),
        "use crate::{a::S as T, a::{self, x::f}};\nfn c() -> char { '\\n' }\n",
    )
    .unwrap();
    std::fs::write(dir.join("a/y.rs"), "fn g() { crate::b::h(); }\n").unwrap();
    assert_eq!(all_circles(&dir), vec!["src: a ↔ b".to_owned()]);
    // And inside a directory: x ↔ y.
    std::fs::write(dir.join("b.rs"), "").unwrap();
    std::fs::write(dir.join("a/x.rs"), "pub fn f() { super::y::g(); }\n").unwrap();
    std::fs::write(dir.join("a/y.rs"), "pub fn g() { super::x::f(); }\n").unwrap();
    assert_eq!(all_circles(&dir), vec!["src/a: x ↔ y".to_owned()]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The cluster's clock is a value the connection owns (#53): no process-wide clock to
/// install or read (two processes' worth of state in one: a test's simulator clock could
/// win over another's), and none made anywhere but by the connection (one made elsewhere
/// would never be corrected by the API server's `Date`).
#[test]
fn the_clock_is_a_value_not_a_global() {
    let clock = workspace().join("src/source/clock.rs");
    let code = code_of(&std::fs::read_to_string(&clock).unwrap()).replace("'static", "");
    assert!(
        !code.contains("static "),
        "{}: a static clock is back",
        clock.display()
    );
    let mut calls = Vec::new();
    for (m, file) in modules(&workspace().join("src")) {
        if is_test(&m, &file) || m == ["source", "clock"] {
            continue;
        }
        let code = code_of(&std::fs::read_to_string(&file).unwrap());
        let makes = ["Clock::local(", "Clock::default(", "Clock::of_cluster("]
            .iter()
            .any(|c| code.contains(c));
        let made_here = m == ["source", "connection"] || m == ["commands", "demo"];
        if code.contains("clock::now(") || (makes && !made_here) {
            calls.push(file.display().to_string());
        }
    }
    assert!(
        calls.is_empty(),
        "a global clock read, or a clock made outside the connection, in: {calls:?}"
    );
}
