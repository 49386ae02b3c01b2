//! kube's errors as one human line: no Rust debug dumps, no `Output {…}` of an exec plugin
//! (whose stdout may hold a token), no credentials, no control characters.

use kube::client::AuthError;
use spark_triage_core::text;

use super::{Health, bounds};
use crate::redact;

/// One line saying what went wrong with a request.
pub fn error_line(e: &kube::Error) -> String {
    let text = match e {
        kube::Error::Api(s) => api_status(s.code, &s.reason, &s.message),
        kube::Error::Auth(a) => auth(a),
        other => match (bounds::cut_of(other), super::credentials::refused_of(other)) {
            (Some(cut), _) => cut.to_string(),
            (None, Some(refused)) => refused.to_string(),
            (None, None) => chain(other),
        },
    };
    redact::one_line(&redact::credentials(&readable_times(&text)))
}

/// rustls says a certificate's validity in UNIX seconds (`verification time 1764690000
/// (UNIX), but certificate is not valid after 1700000000 (64690000 seconds ago)`): said as
/// times and spans instead.
fn readable_times(text: &str) -> String {
    use std::sync::LazyLock;
    static UNIX: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(
            r"verification time (\d+) \(UNIX\), but (certificate|CRL) is not valid (after|before) (\d+) \((\d+) seconds (ago|in future)\)",
        )
        .expect("a valid pattern")
    });
    let at = |secs: &str| {
        secs.parse::<i64>()
            .ok()
            .and_then(|s| chrono::DateTime::from_timestamp(s, 0))
            .map_or_else(
                || secs.to_owned(),
                |t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            )
    };
    UNIX.replace_all(text, |c: &regex::Captures<'_>| {
        let span = c[5]
            .parse::<u64>()
            .map(|s| match s / 86_400 {
                days @ 2.. => format!("{days} days"),
                _ => text::human_std_duration(std::time::Duration::from_secs(s)),
            })
            .unwrap_or_else(|_| format!("{}s", &c[5]));
        let (what, edge, now) = (&c[2], &c[3], at(&c[1]));
        match &c[6] {
            "ago" => format!(
                "the {what} is not valid after {} ({span} before this machine's clock, {now})",
                at(&c[4])
            ),
            _ => format!(
                "the {what} is not valid {edge} {} ({span} after this machine's clock, {now}: is the clock right?)",
                at(&c[4])
            ),
        }
    })
    .into_owned()
}

/// `HTTP 500 InternalError: etcdserver: request timed out`.
fn api_status(code: u16, reason: &str, message: &str) -> String {
    let reason = if reason.is_empty() {
        http::StatusCode::from_u16(code)
            .ok()
            .and_then(|c| c.canonical_reason())
            .unwrap_or("")
    } else {
        reason
    };
    let mut out = format!("HTTP {code}");
    if !reason.is_empty() {
        out.push(' ');
        out.push_str(reason);
    }
    if !message.is_empty() {
        out.push_str(": ");
        out.push_str(message);
    }
    out
}

/// An exec credential plugin's failure says its exit status and its stderr, never its
/// stdout (which may hold the credential it printed before failing).
fn auth(a: &AuthError) -> String {
    match a {
        AuthError::AuthExecRun { out, .. } => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let first = stderr.lines().map(str::trim).find(|l| !l.is_empty());
            format!(
                "the kubeconfig's exec credential plugin failed ({}){}",
                out.status,
                first.map(|l| format!(": {l}")).unwrap_or_default()
            )
        }
        AuthError::AuthExecStart(io) => {
            format!("cannot run the kubeconfig's exec credential plugin: {io}")
        }
        AuthError::AuthExecParse(_) => {
            "the kubeconfig's exec credential plugin printed something that is not an ExecCredential"
                .to_owned()
        }
        other => chain(other),
    }
}

/// The error and its causes, each said once, without kube's type-name prefixes.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = String::new();
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        let text = err.to_string();
        let text = ["ServiceError: ", "HyperError: ", "ApiError: "]
            .iter()
            .fold(text.as_str(), |t, p| t.strip_prefix(p).unwrap_or(t))
            .to_owned();
        if !text.is_empty() && !out.contains(&text) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&text);
        }
        cur = err.source();
    }
    out
}

/// A failing source's health: forbidden (with the permission) or retrying (with the cause).
pub(super) fn health_of(err: &str, forbidden: Option<String>) -> Health {
    // Into the diagnostics log (the live view's status bar shows only the latest).
    match &forbidden {
        Some(p) => tracing::warn!("forbidden: needs {p}"),
        None => tracing::warn!("retrying: {}", masked_line(err)),
    }
    match forbidden {
        Some(permission) => Health::Forbidden { permission },
        None => Health::Retrying {
            error: masked_line(err),
        },
    }
}

/// The permission a 403 says is missing.
pub(super) fn forbidden_permission(
    e: &kube::Error,
    verb: &str,
    resource: &str,
    scope: &super::Scope,
) -> Option<String> {
    match e {
        kube::Error::Api(s) if s.code == 403 => {
            Some(format!("{verb} {resource} in {}", scope.describe()))
        }
        _ => None,
    }
}

/// A cause in one line, credentials masked (what a header or log line may show).
pub(super) fn masked_line(s: &str) -> String {
    redact::one_line(&redact::credentials(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_api_status_is_one_line_without_a_debug_dump() {
        let e = kube::Error::Api(Box::new(kube::core::Status {
            code: 500,
            reason: "InternalError".into(),
            message: "etcdserver: request timed out\nretry".into(),
            ..Default::default()
        }));
        assert_eq!(
            error_line(&e),
            "HTTP 500 InternalError: etcdserver: request timed out / retry"
        );
        let bare = kube::Error::Api(Box::new(kube::core::Status {
            code: 503,
            ..Default::default()
        }));
        assert_eq!(error_line(&bare), "HTTP 503 Service Unavailable");
    }

    #[cfg(unix)]
    #[test]
    fn an_exec_plugin_failure_never_shows_its_stdout() {
        use std::os::unix::process::ExitStatusExt;
        let out = std::process::Output {
            status: std::process::ExitStatus::from_raw(1 << 8),
            stdout: br#"{"kind":"ExecCredential","status":{"token":"tok-SECRET"}}"#.to_vec(),
            stderr: b"\nlogin expired; run `login`\nmore\n".to_vec(),
        };
        let e = kube::Error::Auth(AuthError::AuthExecRun {
            cmd: "\"/bin/plugin\" \"--token\" \"tok-SECRET\"".into(),
            out: Box::new(out),
        });
        let line = error_line(&e);
        assert!(!line.contains("SECRET"), "{line}");
        assert_eq!(
            line,
            "the kubeconfig's exec credential plugin failed (exit status: 1): login expired; run `login`"
        );
    }

    #[test]
    fn certificate_times_are_times_not_unix_seconds() {
        let rustls = "invalid peer certificate: certificate expired: verification time 1764690000 (UNIX), but certificate is not valid after 1700000000 (64690000 seconds ago)";
        assert_eq!(
            readable_times(rustls),
            "invalid peer certificate: certificate expired: the certificate is not valid after 2023-11-14T22:13:20Z (748 days before this machine's clock, 2025-12-02T15:40:00Z)"
        );
        let early = "certificate not valid yet: verification time 1700000000 (UNIX), but certificate is not valid before 1700003600 (3600 seconds in future)";
        assert_eq!(
            readable_times(early),
            "certificate not valid yet: the certificate is not valid before 2023-11-14T23:13:20Z (1h00m after this machine's clock, 2023-11-14T22:13:20Z: is the clock right?)"
        );
    }

    #[test]
    fn a_cut_request_says_which_bound() {
        let e = kube::Error::Service(Box::new(bounds::Cut::TooLarge(64 << 20)));
        assert_eq!(error_line(&e), "response larger than 64 MiB");
    }
}
