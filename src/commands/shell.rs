//! `completions`, `man` and the hidden `__complete`: the shell side, generated from the clap
//! definitions (`clap_complete`, `clap_mangen`) so they cannot drift from the commands.
//!
//! kubectl (1.26+) completes a plugin's arguments by running `kubectl_complete-<plugin>`
//! from PATH with the words typed so far, the last one the word being completed, and reads
//! Cobra's `__complete` format back: one candidate per line (`value<TAB>help`), then
//! `:<directive>`. `assets/kubectl_complete-spark_triage` runs `__complete` here.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use clap_complete::Shell;

use crate::failure::Failure;

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: ShellName,
    /// The command name to complete (default: the name this was run as, `spark-triage`
    /// or `kubectl-spark_triage`).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ShellName {
    Bash,
    Zsh,
    Fish,
    Powershell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write one page per command into this directory (`spark-triage.1`,
    /// `spark-triage-status.1`, …); without it, the main page goes to stdout.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CompleteArgs {
    /// The words after the command name; the last one is the word being completed.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub words: Vec<OsString>,
}

/// The binary's file name as run (`spark-triage`, `kubectl-spark_triage`).
fn invoked_name() -> String {
    std::env::args_os()
        .next()
        .and_then(|a| {
            std::path::Path::new(&a)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "spark-triage".to_owned())
}

/// bash, zsh and fish get clap_complete's dynamic registration: the shell runs this binary
/// (`COMPLETE=bash spark-triage -- WORDS`) at each Tab, so flag values are completed from
/// the cluster and the kubeconfig ([`crate::flags::completers`]); PowerShell gets the static script.
/// `cli` is the whole command line's definition (the dispatcher's).
pub(crate) fn completions(
    args: CompletionsArgs,
    cli: fn() -> clap::Command,
) -> Result<ExitCode, Failure> {
    use clap_complete::env::EnvCompleter;
    let name = args.name.unwrap_or_else(invoked_name);
    let completer = completer_path();
    let mut out = Vec::new();
    let written = match args.shell {
        ShellName::Bash => clap_complete::env::Bash.write_registration(
            COMPLETE_VAR,
            &name,
            &name,
            &completer,
            &mut out,
        ),
        ShellName::Zsh => clap_complete::env::Zsh.write_registration(
            COMPLETE_VAR,
            &name,
            &name,
            &completer,
            &mut out,
        ),
        ShellName::Fish => clap_complete::env::Fish.write_registration(
            COMPLETE_VAR,
            &name,
            &name,
            &completer,
            &mut out,
        ),
        ShellName::Powershell => {
            clap_complete::generate(Shell::PowerShell, &mut cli(), name.clone(), &mut out);
            Ok(())
        }
    };
    written.map_err(|e| Failure::Runtime(format!("cannot write the completion script: {e}")))?;
    super::write_stdout(&String::from_utf8_lossy(&out))?;
    Ok(ExitCode::SUCCESS)
}

/// The environment variable the registered scripts set when they ask for completions.
pub(crate) const COMPLETE_VAR: &str = "COMPLETE";

/// Answers the shell when it asks (`COMPLETE=bash spark-triage -- WORDS`) and exits; a
/// normal run goes on. Called first thing in `main`.
pub(crate) fn answer_the_shell(cli: fn() -> clap::Command) {
    clap_complete::CompleteEnv::with_factory(cli)
        .var(COMPLETE_VAR)
        .bin(invoked_name())
        .completer(completer_path())
        .complete();
}

/// What the shell runs to complete: the name when this was run from PATH, else the
/// binary's absolute path (`./target/release/spark-triage completions bash`).
fn completer_path() -> String {
    let arg0 = std::env::args_os().next().unwrap_or_default();
    let path = std::path::Path::new(&arg0);
    if path.components().count() <= 1 {
        return invoked_name();
    }
    std::env::current_dir()
        .map(|d| d.join(path))
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}

pub(crate) fn man(args: ManArgs, cmd: clap::Command) -> Result<ExitCode, Failure> {
    let Some(dir) = args.out else {
        let mut out = Vec::new();
        clap_mangen::Man::new(cmd)
            .render(&mut out)
            .map_err(|e| Failure::Runtime(format!("cannot render the man page: {e}")))?;
        super::write_stdout(&String::from_utf8_lossy(&out))?;
        return Ok(ExitCode::SUCCESS);
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| Failure::Runtime(format!("cannot create {}: {e}", dir.display())))?;
    let mut written = Vec::new();
    let mut pages = vec![(cmd.get_name().to_owned(), cmd.clone())];
    pages.extend(
        cmd.get_subcommands()
            .filter(|s| !s.is_hide_set())
            .map(|s| (format!("{}-{}", cmd.get_name(), s.get_name()), s.clone())),
    );
    for (name, page) in pages {
        let path = dir.join(format!("{name}.1"));
        let mut text = Vec::new();
        clap_mangen::Man::new(page.name(name.clone()))
            .render(&mut text)
            .and_then(|()| std::fs::write(&path, &text))
            .map_err(|e| Failure::Runtime(format!("cannot write {}: {e}", path.display())))?;
        written.push(path.display().to_string());
    }
    super::write_stdout(&(written.join("\n") + "\n"))?;
    Ok(ExitCode::SUCCESS)
}

/// Cobra's directive: no file completion.
const NO_FILE_COMP: u8 = 4;
/// Cobra's directive: the shell's default (files) when there is nothing better.
const DEFAULT_COMP: u8 = 0;

pub(crate) fn complete(args: CompleteArgs, mut cli: clap::Command) -> Result<ExitCode, Failure> {
    let mut words = args.words;
    if words.is_empty() {
        words.push(OsString::new());
    }
    let mut argv = vec![OsString::from("spark-triage")];
    argv.extend(words);
    let index = argv.len() - 1;
    let cwd = std::env::current_dir().ok();
    let candidates =
        clap_complete::engine::complete(&mut cli, argv, index, cwd.as_deref()).unwrap_or_default();
    let mut out = String::new();
    for c in candidates.iter().filter(|c| !c.is_hide_set()) {
        out.push_str(&c.get_value().to_string_lossy());
        if let Some(help) = c.get_help() {
            let help = help.to_string();
            if let Some(first) = help.lines().next().filter(|l| !l.is_empty()) {
                out.push('\t');
                out.push_str(first);
            }
        }
        out.push('\n');
    }
    let directive = if candidates.is_empty() {
        DEFAULT_COMP
    } else {
        NO_FILE_COMP
    };
    out.push_str(&format!(":{directive}\n"));
    std::io::stdout()
        .lock()
        .write_all(out.as_bytes())
        .map_err(|e| Failure::Runtime(format!("cannot write to stdout: {e}")))?;
    Ok(ExitCode::SUCCESS)
}
