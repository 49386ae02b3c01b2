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
//! - **Short enough to read** (#53): no function over 150 lines, no file over 600 outside
//!   its tests, in any crate, without a `// long: why` (`//! long: why`) beside it.
//! - **Imports at the top** (#53): the workspace's own code is imported by a `use` at the
//!   top of a module, never named inline (`crate::a::b`, `spark_triage_core::x` in a type,
//!   an expression, a macro's tokens, or a `use` inside a function), in every crate, its
//!   tests and benches.
//! - **The cluster's clock a value**: no static clock, none read or made outside the
//!   connection.
//!
//! Paths are read from the code as Rust (`syn`): `use` trees, `crate::`/`super::`/`self::`
//! paths in types and expressions, and the same in macros' tokens (`$crate::` too), with
//! `#[cfg(test)]` items left out; test files (`tests.rs`, a `tests/` folder) are exempt.
#![allow(
    clippy::unwrap_used,
    reason = "a checker of the source tree fails loudly on what it cannot read"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

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

/// A file read as Rust (a file that does not parse fails the test, naming it).
fn parse(file: &Path) -> syn::File {
    let text = std::fs::read_to_string(file).unwrap();
    syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// `#[cfg(test)]` among these attributes.
fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta
                .require_list()
                .is_ok_and(|l| l.tokens.to_string() == "test")
    })
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    use syn::Item as I;
    match item {
        I::Const(i) => &i.attrs,
        I::Enum(i) => &i.attrs,
        I::Fn(i) => &i.attrs,
        I::Impl(i) => &i.attrs,
        I::Macro(i) => &i.attrs,
        I::Mod(i) => &i.attrs,
        I::Static(i) => &i.attrs,
        I::Struct(i) => &i.attrs,
        I::Trait(i) => &i.attrs,
        I::Type(i) => &i.attrs,
        I::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// The paths a file's code names, its `#[cfg(test)]` items left out: `use` trees
/// expanded (`a::{b, c::{d, self}}` → `a::b`, `a::c::d`, `a::c`), `crate::`/`super::`/
/// `self::` paths in types and expressions, and the same inside macros' tokens.
#[derive(Default)]
struct Paths(Vec<String>);

impl Paths {
    fn of(file: &syn::File) -> Vec<String> {
        let mut p = Self::default();
        syn::visit::Visit::visit_file(&mut p, file);
        p.0
    }

    fn tree(&mut self, t: &syn::UseTree, prefix: &str) {
        let join = |s: &dyn std::fmt::Display| {
            if prefix.is_empty() {
                s.to_string()
            } else {
                format!("{prefix}::{s}")
            }
        };
        match t {
            syn::UseTree::Path(p) => self.tree(&p.tree, &join(&p.ident)),
            syn::UseTree::Name(n) if n.ident == "self" => self.0.push(prefix.to_owned()),
            syn::UseTree::Name(n) => self.0.push(join(&n.ident)),
            syn::UseTree::Rename(r) => self.0.push(join(&r.ident)),
            syn::UseTree::Glob(_) => self.0.push(prefix.to_owned()),
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| self.tree(t, prefix)),
        }
    }

    /// `crate :: a :: b` (or `$crate`, `super`, `self`) in a macro's tokens.
    fn tokens(&mut self, ts: proc_macro2::TokenStream) {
        use proc_macro2::TokenTree as T;
        let flat: Vec<T> = ts.into_iter().collect();
        let mut k = 0;
        while k < flat.len() {
            match &flat[k] {
                T::Group(g) => self.tokens(g.stream()),
                T::Ident(i) if matches!(i.to_string().as_str(), "crate" | "super" | "self") => {
                    let mut segs = vec![i.to_string()];
                    let mut j = k + 1;
                    while let (Some(T::Punct(a)), Some(T::Punct(b)), Some(T::Ident(n))) =
                        (flat.get(j), flat.get(j + 1), flat.get(j + 2))
                    {
                        if a.as_char() != ':' || b.as_char() != ':' {
                            break;
                        }
                        segs.push(n.to_string());
                        j += 3;
                    }
                    if segs.len() > 1 {
                        self.0.push(segs.join("::"));
                    }
                    k = j;
                    continue;
                }
                _ => {}
            }
            k += 1;
        }
    }
}

impl<'a> syn::visit::Visit<'a> for Paths {
    fn visit_item(&mut self, i: &'a syn::Item) {
        if !is_cfg_test(item_attrs(i)) {
            syn::visit::visit_item(self, i);
        }
    }
    fn visit_impl_item_fn(&mut self, i: &'a syn::ImplItemFn) {
        if !is_cfg_test(&i.attrs) {
            syn::visit::visit_impl_item_fn(self, i);
        }
    }
    fn visit_item_use(&mut self, u: &'a syn::ItemUse) {
        // `use ::x`: another crate's, always.
        if u.leading_colon.is_none() {
            self.tree(&u.tree, "");
        }
    }
    fn visit_path(&mut self, p: &'a syn::Path) {
        let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        if p.leading_colon.is_none()
            && segs.len() > 1
            && matches!(segs[0].as_str(), "crate" | "super" | "self")
        {
            self.0.push(segs.join("::"));
        }
        syn::visit::visit_path(self, p);
    }
    fn visit_macro(&mut self, m: &'a syn::Macro) {
        self.tokens(m.tokens.clone());
        syn::visit::visit_macro(self, m);
    }
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
        let entry = g.entry(m.clone()).or_default();
        for p in Paths::of(&parse(file)) {
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
    let lib = parse(&workspace().join("src/lib.rs"));
    for item in &lib.items {
        let syn::Item::Use(u) = item else { continue };
        if matches!(u.vis, syn::Visibility::Inherited) {
            continue;
        }
        let mut p = Paths::default();
        p.tree(&u.tree, "");
        for other in ["spark_triage_core", "spark_triage_sim"] {
            assert!(
                !p.0.iter().any(|p| p.split("::").next() == Some(other)),
                "src/lib.rs re-exports {other}: reach it by its own name"
            );
        }
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
    // Inside a macro's tokens and a macro_rules body (`$crate::`): seen too.
    std::fs::write(
        dir.join("a/x.rs"),
        "pub fn f() { println!(\"{}\", super::y::g()); }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("a/y.rs"),
        "macro_rules! m { () => { $crate::a::x::f() }; }\npub fn g() {}\n",
    )
    .unwrap();
    assert_eq!(all_circles(&dir), vec!["src/a: x ↔ y".to_owned()]);
    // In a #[cfg(test)] function of an impl: not.
    std::fs::write(
        dir.join("a/y.rs"),
        "pub struct Y;\nimpl Y {\n    #[cfg(test)]\n    fn t() { crate::a::x::f(); }\n}\npub fn g() {}\n",
    )
    .unwrap();
    assert_eq!(all_circles(&dir), Vec::<String>::new());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The cluster's clock is a value the connection owns (#53): no process-wide clock to
/// install or read (two processes' worth of state in one: a test's simulator clock could
/// win over another's), and none made anywhere but by the connection (one made elsewhere
/// would never be corrected by the API server's `Date`).
#[test]
fn the_clock_is_a_value_not_a_global() {
    /// Its statics, the clocks it reads (`clock::now`) and the clocks it makes.
    #[derive(Default)]
    struct Clocks {
        statics: usize,
        reads: usize,
        makes: usize,
    }
    impl<'a> syn::visit::Visit<'a> for Clocks {
        fn visit_item(&mut self, i: &'a syn::Item) {
            if !is_cfg_test(item_attrs(i)) {
                syn::visit::visit_item(self, i);
            }
        }
        fn visit_item_static(&mut self, i: &'a syn::ItemStatic) {
            self.statics += 1;
            syn::visit::visit_item_static(self, i);
        }
        fn visit_path(&mut self, p: &'a syn::Path) {
            let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
            let ends = |a: &str, b: &[&str]| {
                segs.len() >= 2 && segs[segs.len() - 2] == a && b.contains(&&*segs[segs.len() - 1])
            };
            self.reads += usize::from(ends("clock", &["now"]));
            self.makes += usize::from(ends("Clock", &["local", "default", "of_cluster"]));
            syn::visit::visit_path(self, p);
        }
    }
    let of = |file: &Path| {
        let mut c = Clocks::default();
        syn::visit::Visit::visit_file(&mut c, &parse(file));
        c
    };
    let clock = workspace().join("src/source/clock.rs");
    assert_eq!(
        of(&clock).statics,
        0,
        "{}: a static clock is back",
        clock.display()
    );
    let mut calls = Vec::new();
    for (m, file) in modules(&workspace().join("src")) {
        if is_test(&m, &file) || m == ["source", "clock"] {
            continue;
        }
        let c = of(&file);
        let made_here = m == ["source", "connection"] || m == ["commands", "demo"];
        if c.reads > 0 || (c.makes > 0 && !made_here) {
            calls.push(file.display().to_string());
        }
    }
    assert!(
        calls.is_empty(),
        "a global clock read, or a clock made outside the connection, in: {calls:?}"
    );
}

/// The longest a function may be, and a file outside its tests, without a reason (#53).
const LONG_FN: usize = 150;
const LONG_FILE: usize = 600;

/// What is over those lengths in one file and has no reason beside it: a `// long: …` line
/// just above a function (above or below its doc), a `//! long: …` line in a file's header.
fn too_long(file: &Path) -> Vec<String> {
    struct Fns<'t> {
        lines: &'t [&'t str],
        found: Vec<(usize, String, usize)>,
    }
    impl Fns<'_> {
        fn check(&mut self, attrs: &[syn::Attribute], sig: &syn::Signature, body: &syn::Block) {
            let at = sig.fn_token.span.start().line;
            let end = body.brace_token.span.close().start().line;
            let top = attrs
                .first()
                .map_or(at, |a| a.pound_token.span.start().line);
            let reason = (top.saturating_sub(1)..at)
                .filter_map(|l| self.lines.get(l.checked_sub(1)?))
                .any(|l| l.trim_start().starts_with("// long: "));
            let n = end + 1 - at;
            if n > LONG_FN && !reason {
                self.found.push((at, sig.ident.to_string(), n));
            }
        }
    }
    impl<'a> syn::visit::Visit<'a> for Fns<'_> {
        fn visit_item(&mut self, i: &'a syn::Item) {
            if !is_cfg_test(item_attrs(i)) {
                syn::visit::visit_item(self, i);
            }
        }
        fn visit_item_fn(&mut self, f: &'a syn::ItemFn) {
            self.check(&f.attrs, &f.sig, &f.block);
            syn::visit::visit_item_fn(self, f);
        }
        fn visit_impl_item_fn(&mut self, f: &'a syn::ImplItemFn) {
            if !is_cfg_test(&f.attrs) {
                self.check(&f.attrs, &f.sig, &f.block);
                syn::visit::visit_impl_item_fn(self, f);
            }
        }
        fn visit_trait_item_fn(&mut self, f: &'a syn::TraitItemFn) {
            if let Some(body) = &f.default {
                self.check(&f.attrs, &f.sig, body);
            }
            syn::visit::visit_trait_item_fn(self, f);
        }
    }
    let text = std::fs::read_to_string(file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let parsed = parse(file);
    let mut fns = Fns {
        lines: &lines,
        found: Vec::new(),
    };
    syn::visit::Visit::visit_file(&mut fns, &parsed);
    // Relative to the workspace when under it (`src/x.rs`, `crates/core/src/y.rs`).
    let ws = workspace();
    let rel = file.strip_prefix(&ws).unwrap_or(file);
    let shown = rel.strip_prefix(".").unwrap_or(rel).display();
    let mut out: Vec<String> = fns
        .found
        .into_iter()
        .map(|(at, name, n)| format!("{shown}:{at}: fn {name} is {n} lines"))
        .collect();
    // The file's own lines: all but its #[cfg(test)] modules'.
    let tests: usize = parsed
        .items
        .iter()
        .filter_map(|i| match i {
            syn::Item::Mod(m) if is_cfg_test(&m.attrs) => m.content.as_ref().map(|(b, _)| {
                let top = m.attrs[0].pound_token.span.start().line;
                b.span.close().start().line + 1 - top
            }),
            _ => None,
        })
        .sum();
    let own = lines.len() - tests;
    let reason = lines
        .iter()
        .take_while(|l| l.starts_with("//!") || l.trim().is_empty())
        .any(|l| l.starts_with("//! long: "));
    if own > LONG_FILE && !reason {
        out.push(format!("{shown}: {own} lines outside its tests"));
    }
    out
}

#[test]
fn no_long_function_or_file_without_a_reason_beside_it() {
    let mut found = Vec::new();
    for krate in [".", "crates/core", "crates/sim"] {
        for (m, file) in modules(&workspace().join(krate).join("src")) {
            if !is_test(&m, &file) {
                found.extend(too_long(&file));
            }
        }
    }
    assert!(
        found.is_empty(),
        "over {LONG_FN} lines a function, over {LONG_FILE} a file, with no `// long: why` \
         (`//! long: why` for a file) beside it: split it into its phases or say why not\n{}",
        found.join("\n")
    );
}

/// The length check itself, on planted files.
#[test]
fn the_length_check_counts_lines_and_reads_reasons() {
    let dir = std::env::temp_dir().join(format!("long-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let body = |n: usize| "    let _ = 1;\n".repeat(n - 2);
    let file = dir.join("f.rs");
    let long = format!("/// Doc.\nfn f() {{\n{}}}\n", body(LONG_FN + 1));
    std::fs::write(&file, &long).unwrap();
    assert_eq!(
        too_long(&file),
        [format!("{}:2: fn f is 151 lines", file.display())]
    );
    std::fs::write(
        &file,
        format!("// long: one match, one arm per code.\n{long}"),
    )
    .unwrap();
    assert_eq!(too_long(&file), Vec::<String>::new());
    // Exactly at the bound, and in a test module: not counted.
    let fine = format!("fn f() {{\n{}}}\n", body(LONG_FN));
    std::fs::write(&file, &fine).unwrap();
    assert_eq!(too_long(&file), Vec::<String>::new());
    let tests = format!(
        "#[cfg(test)]\nmod tests {{\n{long}\n{}}}\n",
        "\n".repeat(LONG_FILE)
    );
    std::fs::write(&file, &tests).unwrap();
    assert_eq!(too_long(&file), Vec::<String>::new());
    // A long file, then one that says why.
    let many = "const A: u8 = 0;\n".repeat(LONG_FILE + 1);
    std::fs::write(&file, &many).unwrap();
    assert_eq!(
        too_long(&file),
        [format!("{}: 601 lines outside its tests", file.display())]
    );
    std::fs::write(&file, format!("//! Doc.\n//! long: generated.\n\n{many}")).unwrap();
    assert_eq!(too_long(&file), Vec::<String>::new());
    let _ = std::fs::remove_dir_all(&dir);
}

/// docs/architecture.md's layout is true (#53): every path its layout block names exists,
/// and every module of the three crates' `src/` (their top level) is named there.
#[test]
fn the_architecture_docs_layout_names_what_is_there() {
    let ws = workspace();
    let doc = std::fs::read_to_string(ws.join("docs/architecture.md")).unwrap();
    let block = doc
        .split("## The layout")
        .nth(1)
        .and_then(|s| s.split("```").nth(1))
        .expect("a layout block");
    // `crates/x/` opens a crate; its entries are indented `  src/…`.
    let mut named = BTreeSet::new();
    let mut krate = String::new();
    for line in block.lines() {
        let Some(first) = line.split_whitespace().next() else {
            continue;
        };
        let indented = line.starts_with("  ");
        if !indented && first.starts_with("crates/") {
            krate = first.to_owned();
            named.insert(first.trim_end_matches('/').to_owned());
        } else if indented && first.starts_with("src/") {
            named.insert(format!("{krate}{}", first.trim_end_matches('/')));
        } else if !indented && first.contains(['/', '.']) {
            named.insert(first.trim_end_matches('/').to_owned());
        }
    }
    let missing: Vec<&String> = named.iter().filter(|p| !ws.join(p).exists()).collect();
    assert!(
        missing.is_empty(),
        "named in the layout, not there: {missing:?}"
    );
    let mut unnamed = Vec::new();
    for (prefix, src) in [
        ("", "src"),
        ("crates/core/", "crates/core/src"),
        ("crates/sim/", "crates/sim/src"),
    ] {
        for e in std::fs::read_dir(ws.join(src)).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let path = format!("{prefix}src/{name}");
            if (name != "lib.rs" || prefix.is_empty()) && !named.contains(&path) {
                unnamed.push(path);
            }
        }
    }
    unnamed.sort();
    assert!(
        unnamed.is_empty(),
        "in src/, not in the layout: {unnamed:?}"
    );
}

/// The roots of this workspace's own paths: `crate` and its crates' names.
const OWN_ROOTS: [&str; 4] = [
    "crate",
    "spark_triage",
    "spark_triage_core",
    "spark_triage_sim",
];

/// Where a file names this workspace's code inline instead of importing it at the top of
/// its module (#53): a `crate::a::b` or `spark_triage_core::a` path in a type, an
/// expression, a pattern or a macro's tokens, or a `use` of one inside a function. A
/// `macro_rules!` body (`$crate::` is its own), `pub(in crate::…)` and attributes are left
/// alone.
fn inline_paths(file: &Path) -> Vec<String> {
    #[derive(Default)]
    struct Inline {
        found: Vec<(usize, String)>,
        in_body: usize,
    }
    impl Inline {
        fn tokens(&mut self, ts: proc_macro2::TokenStream) {
            use proc_macro2::TokenTree as T;
            let flat: Vec<T> = ts.into_iter().collect();
            for (k, t) in flat.iter().enumerate() {
                match t {
                    T::Group(g) => self.tokens(g.stream()),
                    T::Ident(i) if OWN_ROOTS.contains(&i.to_string().as_str()) => {
                        let dollar =
                            k > 0 && matches!(&flat[k - 1], T::Punct(p) if p.as_char() == '$');
                        let joined =
                            k > 0 && matches!(&flat[k - 1], T::Punct(p) if p.as_char() == ':');
                        let colons = matches!(
                            (flat.get(k + 1), flat.get(k + 2)),
                            (Some(T::Punct(a)), Some(T::Punct(b))) if a.as_char() == ':' && b.as_char() == ':'
                        );
                        if colons && !dollar && !joined {
                            self.found.push((i.span().start().line, format!("{i}::…")));
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    impl<'a> syn::visit::Visit<'a> for Inline {
        fn visit_item_use(&mut self, u: &'a syn::ItemUse) {
            let root = match &u.tree {
                syn::UseTree::Path(p) => p.ident.to_string(),
                _ => String::new(),
            };
            if self.in_body > 0 && OWN_ROOTS.contains(&root.as_str()) {
                let line = u.use_token.span.start().line;
                self.found
                    .push((line, format!("use {root}::… inside a function")));
            }
        }
        fn visit_item_macro(&mut self, m: &'a syn::ItemMacro) {
            if !m.mac.path.is_ident("macro_rules") {
                syn::visit::visit_item_macro(self, m);
            }
        }
        fn visit_block(&mut self, b: &'a syn::Block) {
            self.in_body += 1;
            syn::visit::visit_block(self, b);
            self.in_body -= 1;
        }
        fn visit_item_mod(&mut self, m: &'a syn::ItemMod) {
            // A module's top is a top again, even inside a function.
            let body = std::mem::take(&mut self.in_body);
            syn::visit::visit_item_mod(self, m);
            self.in_body = body;
        }
        fn visit_visibility(&mut self, _: &'a syn::Visibility) {}
        fn visit_attribute(&mut self, _: &'a syn::Attribute) {}
        fn visit_path(&mut self, p: &'a syn::Path) {
            let first = p.segments.first().map(|s| s.ident.to_string());
            if p.leading_colon.is_none()
                && p.segments.len() > 1
                && first.as_deref().is_some_and(|f| OWN_ROOTS.contains(&f))
            {
                let line = p.segments[0].ident.span().start().line;
                self.found
                    .push((line, format!("{}::…", first.unwrap_or_default())));
            }
            syn::visit::visit_path(self, p);
        }
        fn visit_macro(&mut self, m: &'a syn::Macro) {
            self.tokens(m.tokens.clone());
            syn::visit::visit_macro(self, m);
        }
    }
    let mut v = Inline::default();
    syn::visit::Visit::visit_file(&mut v, &parse(file));
    let ws = workspace();
    let rel = file.strip_prefix(&ws).unwrap_or(file);
    let shown = rel.strip_prefix(".").unwrap_or(rel).display();
    v.found
        .into_iter()
        .map(|(line, what)| format!("{shown}:{line}: {what}"))
        .collect()
}

/// Every `.rs` file under a directory.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(rust_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out
}

/// A file's dependencies read from its top (#53): the workspace's own code is imported by
/// `use` at the top of a module, never named inline, in every crate, its tests and benches.
#[test]
fn imports_are_at_the_top_of_each_file() {
    let ws = workspace();
    let mut found = Vec::new();
    for dir in [
        "src",
        "tests",
        "benches",
        "crates/core/src",
        "crates/sim/src",
    ] {
        for file in rust_files(&ws.join(dir)) {
            found.extend(inline_paths(&file));
        }
    }
    found.sort();
    assert!(
        found.is_empty(),
        "the workspace's own paths named inline: import them at the top of the module\n{}",
        found.join("\n")
    );
}

/// The inline-path check itself, on a planted file.
#[test]
fn the_import_check_finds_inline_paths() {
    let dir = std::env::temp_dir().join(format!("inline-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("f.rs");
    let planted = "use crate::a::B;\n\
                   pub(in crate::a) fn f(_: crate::a::C) {\n\
                   \x20   use spark_triage_core::x;\n\
                   \x20   println!(\"{}\", crate::a::g());\n\
                   }\n\
                   macro_rules! m { () => { $crate::a::h() }; }\n\
                   fn g() -> B { let _ = \"crate::a::D\"; B }\n\
                   mod t {\n    use crate::a::E;\n}\n";
    std::fs::write(&file, planted).unwrap();
    let shown = file.display();
    assert_eq!(
        inline_paths(&file),
        [
            format!("{shown}:2: crate::…"),
            format!("{shown}:3: use spark_triage_core::… inside a function"),
            format!("{shown}:4: crate::…"),
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}
