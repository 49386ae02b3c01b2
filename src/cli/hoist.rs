//! kubectl's habit: cluster flags before the command (`spark-triage -n NS status`,
//! `kubectl spark-triage --kubeconfig F status`). The live view's flags given before a
//! command that takes them too are moved after the command's name; one it does not take is
//! an error that says which commands take it.

use std::ffi::OsString;

/// The arguments with the flags before a command moved after its name, when the command
/// takes every one of them; `Err` (a usage message) when it does not. Without a command, or
/// with nothing before it, the arguments are returned as they are.
pub fn hoist(args: Vec<OsString>, cmd: &clap::Command) -> Result<Vec<OsString>, String> {
    let mut i = 1;
    // (start, end, flag, whether the live view's): a command's own flag is looked up again
    // in the command found after it (`-o` is a value of `status`'s, a file of `export`'s).
    let mut before: Vec<(usize, usize, clap::Id, bool)> = Vec::new();
    let sub = loop {
        let Some(a) = args.get(i).and_then(|a| a.to_str()) else {
            return Ok(args);
        };
        if a == "--" || !a.starts_with('-') || a == "-" {
            match cmd.find_subcommand(a) {
                Some(s) => break s,
                // A misspelt command after flags (`-n ns staus`): the word first, so clap
                // says it is no command and suggests the one meant.
                None if !before.is_empty() && a != "--" && a != "-" => {
                    let mut out = vec![args[0].clone(), args[i].clone()];
                    out.extend(args[1..i].iter().cloned());
                    out.extend(args[i + 1..].iter().cloned());
                    return Ok(out);
                }
                None => return Ok(args),
            }
        }
        // The live view's flag, else a command's (`-o json status`, as kubectl takes `-o`
        // anywhere): the command found after says whether it takes it.
        let live = top_flag(cmd, a);
        let Some((arg, inline)) = live.or_else(|| {
            cmd.get_subcommands()
                .find_map(|s| top_flag(s, a).filter(|(arg, _)| !arg.is_global_set()))
        }) else {
            return Ok(args); // no command's either: clap says what it is
        };
        let takes = arg.get_action().takes_values();
        if inline && !takes && !a.starts_with("--") {
            return Ok(args); // bundled short flags (`-Al sel`): clap reads them
        }
        let end = if takes && !inline { i + 2 } else { i + 1 };
        before.push((i, end.min(args.len()), arg.get_id().clone(), live.is_some()));
        i = end;
    };
    if before.is_empty() {
        return Ok(args);
    }
    let token = |start: usize| args[start].to_str().unwrap_or_default();
    let takes = |(start, _, id, live): &(usize, usize, clap::Id, bool)| match live {
        true => sub.get_arguments().any(|a| a.get_id() == id),
        false => top_flag(sub, token(*start)).is_some(),
    };
    if let Some((start, _, id, live)) = before.iter().find(|b| !takes(b)) {
        let named = |a: &clap::Arg| match (a.get_long(), a.get_short()) {
            (Some(l), _) => format!("--{l}"),
            (None, Some(s)) => format!("-{s}"),
            _ => id.to_string(),
        };
        let flag = match live {
            true => cmd.get_arguments().find(|a| a.get_id() == id).map(named),
            false => cmd
                .get_subcommands()
                .find_map(|s| top_flag(s, token(*start)))
                .map(|(a, _)| named(a)),
        }
        .unwrap_or_else(|| id.to_string());
        let mut with: Vec<&str> = cmd
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
            .filter(|s| match live {
                true => s.get_arguments().any(|a| a.get_id() == id),
                false => top_flag(s, token(*start)).is_some(),
            })
            .map(|s| s.get_name())
            .collect();
        with.sort_unstable();
        let live = *live;
        return Err(format!(
            "{flag} is not a flag of `{}`; it applies to {}{}",
            sub.get_name(),
            if live {
                "the live view (no command) and to: "
            } else {
                ""
            },
            with.join(", ")
        ));
    }
    let name = i;
    let mut out = Vec::with_capacity(args.len());
    out.push(args[0].clone());
    out.push(args[name].clone());
    out.extend(args[1..name].iter().cloned());
    out.extend(args[name + 1..].iter().cloned());
    Ok(out)
}

/// The top-level flag a token names (`--namespace`, `--namespace=x`, `-n`, `-nx`), and
/// whether its value is in the token.
fn top_flag<'a>(cmd: &'a clap::Command, token: &str) -> Option<(&'a clap::Arg, bool)> {
    if let Some(long) = token.strip_prefix("--") {
        let (name, inline) = match long.split_once('=') {
            Some((n, _)) => (n, true),
            None => (long, false),
        };
        return cmd
            .get_arguments()
            .find(|a| {
                a.get_long() == Some(name)
                    || a.get_all_aliases().is_some_and(|al| al.contains(&name))
            })
            .map(|a| (a, inline));
    }
    let mut chars = token.strip_prefix('-')?.chars();
    let short = chars.next()?;
    let rest = chars.as_str();
    cmd.get_arguments()
        .find(|a| a.get_short() == Some(short))
        .map(|a| (a, !rest.is_empty()))
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    fn hoisted(args: &[&str]) -> Result<Vec<String>, String> {
        let args: Vec<OsString> = std::iter::once("spark-triage")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        hoist(args, &super::super::Cli::command())
            .map(|v| v.into_iter().map(|a| a.into_string().unwrap()).collect())
    }

    #[test]
    fn flags_before_a_command_that_takes_them_move_after_its_name() {
        assert_eq!(
            hoisted(&["-n", "spark-jobs", "status", "-o", "json"]).unwrap(),
            ["spark-triage", "status", "-n", "spark-jobs", "-o", "json"]
        );
        assert_eq!(
            hoisted(&[
                "--kubeconfig=/k",
                "-A",
                "--context",
                "prod",
                "kill",
                "--app",
                "x",
                "1"
            ])
            .unwrap(),
            [
                "spark-triage",
                "kill",
                "--kubeconfig=/k",
                "-A",
                "--context",
                "prod",
                "--app",
                "x",
                "1"
            ]
        );
        // Nothing before the command, or no command: as given.
        assert_eq!(
            hoisted(&["status", "-n", "a"]).unwrap(),
            ["spark-triage", "status", "-n", "a"]
        );
        assert_eq!(hoisted(&["-n", "a"]).unwrap(), ["spark-triage", "-n", "a"]);
    }

    /// kubectl takes `-o` anywhere: before the command it is the command's.
    #[test]
    fn a_commands_own_flag_before_it_moves_after_its_name() {
        assert_eq!(
            hoisted(&["-o", "json", "status", "-n", "a"]).unwrap(),
            ["spark-triage", "status", "-o", "json", "-n", "a"]
        );
        assert_eq!(
            hoisted(&["-n", "a", "-ojson", "status"]).unwrap(),
            ["spark-triage", "status", "-n", "a", "-ojson"]
        );
        let e = hoisted(&["-o", "json", "demo"]).unwrap_err();
        assert!(
            e.starts_with("--output is not a flag of `demo`; it applies to "),
            "{e}"
        );
        assert!(!e.contains("live view"), "{e}");
    }

    /// A misspelt command after flags is put first, for clap to name it and suggest.
    #[test]
    fn a_misspelt_command_after_flags_comes_first() {
        assert_eq!(
            hoisted(&["-n", "spark-jobs", "staus"]).unwrap(),
            ["spark-triage", "staus", "-n", "spark-jobs"]
        );
        // Bundled short flags are clap's to read, as before.
        assert_eq!(
            hoisted(&["-Al", "sel", "status"]).unwrap(),
            ["spark-triage", "-Al", "sel", "status"]
        );
    }

    /// `-o` is each command's own: a file for `export`, a format for `status`.
    #[test]
    fn a_commands_flag_is_looked_up_in_the_command_found() {
        assert_eq!(
            hoisted(&["-o", "out.parquet", "export", "DIR"]).unwrap(),
            ["spark-triage", "export", "-o", "out.parquet", "DIR"]
        );
    }

    #[test]
    fn a_flag_the_command_does_not_take_says_which_do() {
        let e = hoisted(&["-n", "a", "report", "x.rec"]).unwrap_err();
        assert!(e.starts_with("--namespace is not a flag of `report`; it applies to the live view (no command) and to: "), "{e}");
        assert!(e.contains("status") && e.contains("kill"), "{e}");
    }
}
