//! Redaction, by rule, of everything that leaves the process: driver configurations in
//! recordings, and credentials in error messages.
//!
//! Spark properties are redacted as Spark's own UI does (`Utils.redact`): a property whose
//! key or value matches `spark.redaction.regex` (default `(?i)secret|password|token|
//! access[.]?key`) has its value replaced by `*********(redacted)`. The app's own
//! `spark.redaction.regex`, when set, is applied **in addition** to the default (a stricter
//! app regex redacts more; a laxer one never reveals what the default hides). Environment
//! variables passed through the configuration (`spark.kubernetes.driverEnv.*`,
//! `spark.executorEnv.*`, `spark.yarn.appMasterEnv.*`) are always redacted: their names say
//! nothing about what they hold.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;
/// Spark's replacement text (`Utils.REDACTION_REPLACEMENT_TEXT`).
pub use spark_triage_core::text::REDACTED;

/// Spark's default `spark.redaction.regex`.
pub const SPARK_DEFAULT_REGEX: &str = "(?i)secret|password|token|access[.]?key";

static DEFAULT: LazyLock<Regex> = LazyLock::new(|| {
    #[allow(clippy::unwrap_used)] // a constant that compiles (tested)
    Regex::new(SPARK_DEFAULT_REGEX).unwrap()
});

/// Key fragments whose values are environment variables.
const ENV_KEYS: [&str; 3] = [".driverEnv.", ".executorEnv.", ".appMasterEnv."];

/// Redacts a driver's Spark properties in place. Returns how many values were redacted.
pub fn properties(props: &mut BTreeMap<String, String>) -> usize {
    let app = props
        .get("spark.redaction.regex")
        .filter(|r| r.len() <= 4096)
        .and_then(|r| regex::RegexBuilder::new(r).size_limit(1 << 20).build().ok());
    let mut n = 0;
    for (key, value) in props.iter_mut() {
        if key == "spark.redaction.regex" || value == REDACTED {
            continue;
        }
        let sensitive = |re: &Regex| re.is_match(key) || re.is_match(value);
        let env = ENV_KEYS.iter().any(|k| key.contains(k));
        if env || sensitive(&DEFAULT) || app.as_ref().is_some_and(sensitive) {
            *value = REDACTED.to_owned();
            n += 1;
        }
    }
    n
}

use spark_triage_core::text;
/// `text` with anything that looks like a credential replaced by `*********(redacted)`
/// (bearer tokens, JWTs, a `token`, `password` or `secret` field, basic auth in a URL).
pub use spark_triage_core::text::credentials;
/// `text` with control characters and bidirectional overrides from cluster data made
/// visible (`\u{1b}`), so a pod's termination message cannot change a terminal's title,
/// clear its screen, move its cursor or reverse a line. Newlines and tabs are kept.
pub use spark_triage_core::text::escape_controls;

/// One line for a message: controls escaped, line breaks joined with " / "
/// ([`spark_triage_core::text::field`], trimmed).
pub fn one_line(text: &str) -> String {
    text::field(text.trim()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn spark_secrets_are_redacted_as_sparks_ui_does() {
        let mut p = props(&[
            ("spark.authenticate.secret", "s3cr3t-auth"),
            ("spark.hadoop.fs.s3a.secret.key", "AKIAsecret"),
            ("spark.hadoop.fs.s3a.access.key", "AKIAID"),
            ("spark.kubernetes.driverEnv.DB_PASSWORD", "hunter2"),
            ("spark.executorEnv.API_TOKEN", "tok-123"),
            ("spark.executorEnv.LOG_LEVEL", "debug"),
            ("spark.kubernetes.authenticate.submission.oauthToken", "abc"),
            ("spark.some.url", "jdbc:x?password=pw"),
            ("spark.kubernetes.executor.deleteOnTermination", "false"),
            ("spark.executor.memory", "4g"),
        ]);
        assert_eq!(properties(&mut p), 8);
        for (k, v) in &p {
            let kept = matches!(
                k.as_str(),
                "spark.kubernetes.executor.deleteOnTermination" | "spark.executor.memory"
            );
            assert_eq!(v == REDACTED, !kept, "{k}={v}");
        }
        // Idempotent.
        assert_eq!(properties(&mut p), 0);
    }

    #[test]
    fn the_apps_own_regex_redacts_more_never_less() {
        let mut p = props(&[
            ("spark.redaction.regex", "(?i)internal"),
            ("spark.internal.endpoint", "10.0.0.1"),
            ("spark.db.password", "pw"),
            ("spark.app.name", "etl"),
        ]);
        assert_eq!(properties(&mut p), 2);
        assert_eq!(p["spark.internal.endpoint"], REDACTED);
        assert_eq!(p["spark.db.password"], REDACTED);
        assert_eq!(p["spark.app.name"], "etl");
        // A regex that does not compile is ignored; the default still applies.
        let mut bad = props(&[("spark.redaction.regex", "("), ("a.token", "t")]);
        assert_eq!(properties(&mut bad), 1);
    }

    #[test]
    fn control_characters_from_the_cluster_are_made_visible() {
        let msg = "OOM\u{1b}]0;pwned\u{7}\u{1b}[2J\r\u{9b}31m done\n\tnext";
        let out = escape_controls(msg);
        assert!(!out.contains(|c: char| c.is_control() && c != '\n' && c != '\t'));
        assert_eq!(
            out,
            "OOM\\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\u{d}\\u{9b}31m done\n\tnext"
        );
        assert!(matches!(
            escape_controls("plain"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(one_line("a\n\n  b\r\n\u{1b}c"), "a / b / \\u{1b}c");
    }

    #[test]
    fn credentials_in_error_text_are_scrubbed() {
        let cases = [
            (
                r#"{"kind":"ExecCredential","status":{"token":"abc.DEF-123"}}"#,
                "abc.DEF",
            ),
            ("Authorization: Bearer sekret-token-1", "sekret"),
            ("token: sekret-yaml", "sekret"),
            ("password=hunter2 rest", "hunter2"),
            ("https://admin:hunter2@10.0.0.1:6443/api", "hunter2"),
            (
                "jwt eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln here",
                "eyJzdWIi",
            ),
        ];
        for (text, secret) in cases {
            let out = credentials(text);
            assert!(!out.contains(secret), "{text} → {out}");
            assert!(out.contains(REDACTED), "{text} → {out}");
        }
        assert_eq!(
            credentials("connection refused (os error 111)"),
            "connection refused (os error 111)"
        );
    }
}
