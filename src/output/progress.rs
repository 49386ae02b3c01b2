//! Progress on long work, only when stderr is a terminal: an `indicatif` spinner with one
//! line of what is happening, cleared before the answer is written. Without a terminal (CI,
//! cron, journald, a pipe) it draws nothing: the commands print their own plain lines.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// A spinner, or nothing off a terminal.
pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    /// When the message was last set (messages are throttled: an event burst is not a
    /// redraw per event).
    last: Option<Instant>,
}

impl Progress {
    const EVERY: Duration = Duration::from_millis(200);

    /// A spinner showing `message`, when stderr is a terminal.
    pub(crate) fn spinner(message: impl Into<String>) -> Self {
        Self::new(std::io::stderr().is_terminal(), message)
    }

    fn new(on: bool, message: impl Into<String>) -> Self {
        let bar = on.then(|| {
            let bar = ProgressBar::new_spinner().with_message(message.into());
            bar.set_style(
                ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        Self { bar, last: None }
    }

    /// Whether it draws (a terminal).
    pub(crate) fn shown(&self) -> bool {
        self.bar.is_some()
    }

    /// Changes the line now.
    pub(crate) fn set(&mut self, message: impl Into<String>) {
        if let Some(bar) = &self.bar {
            bar.set_message(message.into());
            self.last = Some(Instant::now());
        }
    }

    /// Changes the line unless it changed in the last 200 ms; the message is only built
    /// when it will be shown.
    pub(crate) fn update(&mut self, message: impl FnOnce() -> String) {
        if self.bar.is_some() && self.last.is_none_or(|t| t.elapsed() >= Self::EVERY) {
            self.set(message());
        }
    }

    /// Removes the spinner (before the answer is printed).
    pub(crate) fn clear(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_a_terminal_it_draws_nothing_and_builds_no_message() {
        let mut p = Progress::new(false, "waiting");
        assert!(!p.shown());
        p.update(|| unreachable!("no message is built off a terminal"));
        p.set("x");
        p.clear();
    }

    #[test]
    fn messages_are_throttled() {
        let mut p = Progress::new(true, "waiting");
        assert!(p.shown());
        let mut built = 0;
        for _ in 0..1000 {
            p.update(|| {
                built += 1;
                format!("{built} events")
            });
        }
        assert_eq!(built, 1, "one message per 200 ms, not one per event");
        p.clear();
        assert!(!p.shown());
    }
}
