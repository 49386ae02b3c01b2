//! The layers, checked: source → store → (core's verdicts) → app → ui, and the commands on
//! top. A module may use the layers below it, never one above, so there is no import
//! circle (the core and the simulator are crates of their own: they cannot reach the
//! product at all). Test code (`tests.rs`, `#[cfg(test)]` modules) is exempt.

use std::path::Path;

/// (layer directory or file under src/, the modules it must not use)
const RULES: &[(&str, &[&str])] = &[
    ("source", &["store", "app", "ui", "tui", "commands", "cli"]),
    ("store", &["app", "ui", "tui", "commands", "cli", "effect"]),
    ("record", &["app", "ui", "tui", "commands", "cli"]),
    (
        "effect",
        &["store", "app", "ui", "tui", "commands", "cli", "actions"],
    ),
    ("app", &["ui", "tui", "commands", "cli", "actions"]),
    ("ui", &["tui", "commands", "cli", "actions"]),
];

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    if dir.is_file() {
        out.push(dir.to_owned());
        return;
    }
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        files(&e.path(), out);
    }
}

#[test]
fn no_module_uses_a_layer_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut broken = Vec::new();
    for (layer, above) in RULES {
        let mut all = Vec::new();
        let dir = src.join(layer);
        files(if dir.exists() { &dir } else { &src }, &mut all);
        assert!(!all.is_empty(), "{layer}: no files");
        for f in all {
            if f.extension().is_none_or(|e| e != "rs")
                || f.file_name().is_some_and(|n| n == "tests.rs")
            {
                continue;
            }
            let text = std::fs::read_to_string(&f).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for m in *above {
                for pat in [
                    format!("crate::{m}::"),
                    format!("crate::{m},"),
                    format!("crate::{{{m}"),
                ] {
                    if code.contains(&pat) {
                        broken.push(format!(
                            "{} uses {m}",
                            f.strip_prefix(&src).unwrap().display()
                        ));
                    }
                }
                // Inside `use crate::{ … }` lists.
                if code.contains("use crate::{") && code.contains(&format!("\n    {m}::")) {
                    broken.push(format!(
                        "{} uses {m} (in a use list)",
                        f.strip_prefix(&src).unwrap().display()
                    ));
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
