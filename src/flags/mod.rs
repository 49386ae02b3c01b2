//! The flags the commands share (cluster, watch, write, view, read limits, windows), their
//! value parsers and completers, and the configuration file under them: every setting's
//! one lane from the command line or the file to the value a command is handed.

mod args;
pub mod completers;
pub(crate) mod config;

pub use args::{ClusterArgs, LiveArgs, ReadLimits, ViewArgs, WatchArgs, WindowArgs, WriteArgs};
pub(crate) use args::{parse_duration, parse_interval, parse_size, parse_timeout, parse_ttl};

use crate::failure::Failure;
use crate::settings::ReadOnly;
use crate::source::switch::Reconfigure;

/// The flags, with the configuration file under them (for the context in use).
pub(crate) fn configured(
    mut live: LiveArgs,
    given: &std::collections::BTreeSet<String>,
) -> Result<LiveArgs, Failure> {
    let file = config::Config::load(live.config.as_deref())?;
    // The kubeconfig is read for its current context only when a section could apply.
    let context = match &live.context {
        Some(c) => Some(c.clone()),
        None if !file.top.context.is_empty() => current_context(&live),
        None => None,
    };
    let settings = file.for_context(context.as_deref());
    config::apply(&mut live, &settings, &|id| given.contains(id));
    live.view = config::view_settings(&settings, live.view.clone());
    // Read-only is only ever added: a context the default file makes read-only stays so
    // whatever `--config` or `$SPARK_TRIAGE_CONFIG` names instead.
    if !live.readonly.on()
        && let Some(default) = config::default_path().filter(|d| file.path.as_ref() != Some(d))
        && default.exists()
    {
        // Its sections apply by the kubeconfig's context, whatever the other file has.
        let context = live.context.clone().or_else(|| current_context(&live));
        match config::Config::load(Some(&default)) {
            Ok(home) => {
                let s = home.for_context(context.as_deref());
                if s.readonly == Some(true) {
                    live.readonly = ReadOnly::On(format!(
                        "readonly = true in {}; another configuration file cannot lift it",
                        s.readonly_from
                            .unwrap_or_else(|| default.display().to_string())
                    ));
                }
            }
            // It may make this context read-only: unreadable, it does.
            Err(_) => {
                live.readonly = ReadOnly::On(format!(
                    "{} cannot be read, and it may make this context read-only",
                    default.display()
                ));
            }
        }
    }
    Ok(live)
}

/// `:ctx NAME` in the live view: the flags and the configuration file worked out again for
/// that context. `-n`/`-A` named a namespace of the first context, so the new one starts in
/// its own (or its configuration section's); `--readonly` and the file's read-only hold.
pub(crate) fn switch_context(
    raw: LiveArgs,
    given: &std::collections::BTreeSet<String>,
) -> Reconfigure {
    let mut given = given.clone();
    for id in ["namespace", "all_namespaces", "context"] {
        given.remove(id);
    }
    std::sync::Arc::new(move |name: &str| {
        let mut args = raw.clone();
        args.context = Some(name.to_owned());
        args.namespace = None;
        args.all_namespaces = false;
        let l = configured(args, &given).map_err(|e| e.to_string())?;
        Ok((l.options(), l.readonly.clone()))
    })
}

/// The kubeconfig's current context (the section of the configuration file that applies
/// when no `--context` is given); unreadable = none (connecting says why).
fn current_context(live: &LiveArgs) -> Option<String> {
    let kc = match &live.kubeconfig {
        Some(p) => kube::config::Kubeconfig::read_from(p).ok()?,
        None => kube::config::Kubeconfig::read().ok()?,
    };
    kc.current_context
}
