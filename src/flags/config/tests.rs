//! One test per precedence rule (built-in < file < context section < flag) and the bad
//! files, through the real command line (clap's matches, `given`, `configured`).

use std::io::Write;
use std::time::Duration;

use clap::{CommandFactory, FromArgMatches};

use super::super::{LiveArgs, configured};
use super::*;
use crate::cli::{Cli, Command, given};
use crate::effect::Denied;

struct Tmp(PathBuf);
impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tmp(name: &str) -> Tmp {
    let d = std::env::temp_dir().join(format!("spark-triage-config-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("tmp");
    Tmp(d)
}

fn write(dir: &Tmp, name: &str, text: &str) -> String {
    let p = dir.0.join(name);
    std::fs::File::create(&p)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .expect("write");
    p.display().to_string()
}

/// `status ARGS` as the binary would run it: the flags, then the file under them.
fn status(args: &[&str]) -> Result<LiveArgs, Failure> {
    let m = Cli::command()
        .try_get_matches_from([&["spark-triage", "status"][..], args].concat())
        .expect("parses");
    let given = given(&m);
    let cli = Cli::from_arg_matches(&m).expect("cli");
    let Some(Command::Status(s)) = cli.command else {
        panic!("status")
    };
    configured(LiveArgs::of(&s.cluster, Some(&s.watch), None, None), &given)
}

const FILE: &str = r#"
poll-interval = "5s"
namespace = "spark-jobs"
readonly = false

[context."prod-eu"]
readonly = true
namespace = "spark-prod"
poll-interval = "1m"
"#;

/// The live view's settings, each held once: `time_zone` in the file turns UTC on unless
/// `--utc` was given (it cannot be turned off by a flag that was not), and `--metrics-addr`
/// stays as given under the file.
#[test]
fn the_views_time_zone_and_metrics_address_are_held_once_in_the_view_settings() {
    let d = tmp("view");
    let f = write(&d, "c.toml", "time-zone = \"utc\"\n");
    let m = Cli::command()
        .try_get_matches_from(["spark-triage", "--config", &f, "--metrics-addr", "9464"])
        .expect("parses");
    let given = given(&m);
    let cli = Cli::from_arg_matches(&m).expect("cli");
    let live = LiveArgs::of(
        &cli.cluster,
        Some(&cli.watch),
        Some(&cli.write),
        Some(&cli.view),
    );
    assert!(!live.view.utc);
    let l = configured(live, &given).expect("ok");
    assert!(l.view.utc, "the file's time zone");
    assert_eq!(
        l.view.metrics_addr.map(|a| a.port()),
        Some(9464),
        "the flag's address"
    );
}

#[test]
fn built_in_defaults_without_a_file() {
    let d = tmp("none");
    let empty = write(&d, "empty.toml", "");
    let l = status(&["--config", &empty, "--context", "dev"]).expect("ok");
    assert_eq!(l.poll_interval, Duration::from_secs(30));
    assert_eq!(l.namespace, None);
    assert!(!l.readonly.on());
}

#[test]
fn the_file_overrides_built_in_defaults() {
    let d = tmp("file");
    let f = write(&d, "c.toml", FILE);
    let l = status(&["--config", &f, "--context", "dev"]).expect("ok");
    assert_eq!(l.poll_interval, Duration::from_secs(5));
    assert_eq!(l.namespace.as_deref(), Some("spark-jobs"));
    assert!(!l.readonly.on());
}

#[test]
fn the_context_section_overrides_the_file_also_as_the_kubeconfig_s_current_context() {
    let d = tmp("context");
    let f = write(&d, "c.toml", FILE);
    let l = status(&["--config", &f, "--context", "prod-eu"]).expect("ok");
    assert!(l.readonly.on(), "production is read-only by default");
    // The refusal says what made it read-only (it said `--readonly`, a flag never given).
    let why = Denied::read_only(&l.readonly).expect("refused").to_string();
    assert_eq!(
        why,
        format!("read-only mode (readonly = true in [context.\"prod-eu\"] of {f})")
    );
    assert_eq!(l.namespace.as_deref(), Some("spark-prod"));
    assert_eq!(l.poll_interval, Duration::from_secs(60));
    // Without --context: the kubeconfig's current context picks the section.
    let kc = write(
        &d,
        "kc",
        "apiVersion: v1\nkind: Config\ncurrent-context: prod-eu\ncontexts: []\nclusters: []\nusers: []\n",
    );
    let l = status(&["--config", &f, "--kubeconfig", &kc]).expect("ok");
    assert!(l.readonly.on());
}

#[test]
fn flags_override_the_context_section() {
    let d = tmp("flags");
    let f = write(&d, "c.toml", FILE);
    let l = status(&[
        "--config",
        &f,
        "--context",
        "prod-eu",
        "-n",
        "mine",
        "--poll-interval",
        "7s",
    ])
    .expect("ok");
    assert_eq!(l.namespace.as_deref(), Some("mine"));
    assert_eq!(l.poll_interval, Duration::from_secs(7));
    assert!(l.readonly.on(), "no flag turns read-only off");
    let l = status(&["--config", &f, "--context", "prod-eu", "-A"]).expect("ok");
    assert!(
        l.all_namespaces && l.namespace.is_none(),
        "-A beats the file's namespace"
    );
}

#[test]
fn a_bad_file_is_a_usage_error_with_line_and_column() {
    let d = tmp("bad");
    for (text, want) in [
        ("poll-interval = \"5s\"\nnamespace = [\n", ":2:14:"),
        ("readonly = true\npoll-intervl = \"5s\"\n", ":2:1:"),
        ("poll-interval = \"soon\"\n", ":1:17:"),
        ("[context.prod]\nreadonly = \"yes\"\n", ":2:12:"),
    ] {
        let f = write(&d, "bad.toml", text);
        let err = status(&["--config", &f, "--context", "x"]).expect_err(text);
        let Failure::Usage(msg) = &err else {
            panic!("a usage error (exit 2): {err:?}")
        };
        assert!(!msg.contains('\n'), "one line: {msg:?}");
        assert!(msg.starts_with(&format!("{f}{want}")), "{text:?}: {msg}");
    }
    let err = status(&["--config", "/nonexistent/c.toml"]).expect_err("missing");
    assert!(matches!(err, Failure::Usage(_)), "{err:?}");
}

#[test]
fn the_shipped_example_parses_with_every_setting_uncommented() {
    let text = include_str!("../../../assets/config.toml");
    let uncommented: String = text
        .lines()
        .map(|l| match l.strip_prefix("# ") {
            Some(rest) if rest.contains(" = ") || rest.starts_with('[') => rest,
            _ => l,
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let c = Config::parse(&uncommented, "assets/config.toml").expect("parses");
    assert_eq!(c.top.poll_interval, Some(Duration::from_secs(30)));
    assert_eq!(c.top.time_zone, Some(TimeZone::Local));
    assert_eq!(c.top.theme, Some(ThemeName::Dark));
    assert_eq!(c.top.hold_ttl, Some(Duration::from_secs(2 * 3600)));
    assert_eq!(c.top.log_tail_lines, Some(200));
    assert_eq!(c.top.keys.len(), 2);
    let prod = c.for_context(Some("prod-eu"));
    assert_eq!(prod.readonly, Some(true));
    assert!(
        Config::parse(text, "assets/config.toml").is_ok(),
        "as shipped"
    );
}

#[test]
fn keys_and_log_tail_lines_parse_and_merge_per_context() {
    let c = Config::parse(
        "log-tail-lines = 500\n[keys]\nkill = \"X\"\nlogs = [\"l\", \"L\"]\n\
         [context.prod]\nlog-tail-lines = 50\n[context.prod.keys]\nhold = \"F9\"\n",
        "c.toml",
    )
    .expect("parses");
    use crossterm::event::KeyCode;
    let top = c.for_context(None);
    assert_eq!(top.log_tail_lines, Some(500));
    assert_eq!(top.keys[&Action::Kill], Keys(vec![KeyCode::Char('X')]));
    assert_eq!(
        top.keys[&Action::Logs],
        Keys(vec![KeyCode::Char('l'), KeyCode::Char('L')])
    );
    let prod = c.for_context(Some("prod"));
    assert_eq!(prod.log_tail_lines, Some(50));
    assert_eq!(
        prod.keys.len(),
        3,
        "the section adds to the top level's keys"
    );
    assert_eq!(prod.keys[&Action::Hold], Keys(vec![KeyCode::F(9)]));
}

#[test]
fn bad_keys_and_tail_lengths_are_usage_errors() {
    for (text, want) in [
        ("[keys]\nkil = \"X\"\n", "c.toml:2:1: unknown variant `kil`"),
        (
            "[keys]\nkill = \"Ctrl-x\"\n",
            "c.toml:2:8: unknown key \"Ctrl-x\"",
        ),
        (
            "[keys]\nkill = []\n",
            "c.toml:2:8: an action needs at least one key",
        ),
        (
            "log-tail-lines = 0\n",
            "c.toml:1:18: log-tail-lines is 0: 1 to 5000",
        ),
        (
            "log-tail-lines = 9000\n",
            "c.toml:1:18: log-tail-lines is 9000",
        ),
        (
            "[keys]\nkill = \"l\"\n",
            "c.toml: [keys]: \"l\" is bound to both kill and logs",
        ),
        (
            "[context.prod.keys]\nkill = \"q\"\n",
            "c.toml: [keys]: \"q\" is bound to both quit and kill (context \"prod\")",
        ),
    ] {
        let Err(Failure::Usage(msg)) = Config::parse(text, "c.toml") else {
            panic!("{text:?}: a usage error")
        };
        assert!(msg.starts_with(want), "{text:?}: {msg}");
        assert!(!msg.contains('\n'), "one line: {msg:?}");
    }
}
