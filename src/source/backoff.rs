//! The watches' backoff. kube's `default_backoff` resets on every `Ok` item, and a watcher
//! yields `Ok(Event::Init)` before each (re)list, so a list that fails every time (a 403 on
//! events) was retried at the first step forever, several times a second. Here only a
//! delivery (a watch event, or a list that completed) resets it; `Init` and a list's pages
//! do not.

use std::time::Duration;

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use kube::runtime::watcher;

/// What one item of a watch says about the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Something was delivered: the watch works.
    Delivered,
    /// The watch failed (it will be retried after the backoff).
    Failed,
    /// A (re)list begins: says nothing yet.
    Starting,
    /// One watch line could not be read (malformed JSON): the stream is up and goes on;
    /// it says nothing about the connection.
    Garbled,
}

/// The outcome of a watch item.
pub fn outcome<K>(item: &Result<watcher::Event<K>, watcher::Error>) -> Outcome {
    match item {
        Err(watcher::Error::WatchFailed(kube::Error::SerdeError(_))) => Outcome::Garbled,
        Err(_) => Outcome::Failed,
        // A list's pages are not yet a list: it may still fail (a timeout, an expired
        // continue token), and then the wait must grow.
        Ok(watcher::Event::Init | watcher::Event::InitApply(_)) => Outcome::Starting,
        Ok(watcher::Event::InitDone | watcher::Event::Apply(_) | watcher::Event::Delete(_)) => {
            Outcome::Delivered
        }
    }
}

/// Exponential from 800 ms to 30 s, doubling, with up to a quarter of jitter (so many
/// watches that fail together do not retry together).
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new()
    }
}

impl Backoff {
    const FIRST: Duration = Duration::from_millis(800);
    const MAX: Duration = Duration::from_secs(30);

    pub fn new() -> Self {
        Self { next: Self::FIRST }
    }

    pub fn reset(&mut self) {
        self.next = Self::FIRST;
    }

    /// The next wait (before jitter, it doubles each time up to the maximum).
    pub fn step(&mut self) -> Duration {
        let base = self.next;
        self.next = (self.next * 2).min(Self::MAX);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        base + base.mul_f64(f64::from(nanos % 1000) / 4000.0)
    }
}

/// A watcher stream whose failures are followed by a growing wait, reset only by a
/// delivery.
pub fn watch_backoff<K: Send + 'static>(
    stream: impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
) -> BoxStream<'static, Result<watcher::Event<K>, watcher::Error>> {
    futures::stream::unfold(
        (stream.boxed(), Backoff::new(), None::<Duration>),
        |(mut stream, mut backoff, wait)| async move {
            if let Some(wait) = wait {
                tokio::time::sleep(wait).await;
            }
            let item = stream.next().await?;
            let wait = match outcome(&item) {
                Outcome::Failed => Some(backoff.step()),
                Outcome::Delivered => {
                    backoff.reset();
                    None
                }
                Outcome::Starting | Outcome::Garbled => None,
            };
            Some((item, (stream, backoff, wait)))
        },
    )
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_watch_line_is_not_a_connection_failure() {
        let garbled = serde_json::from_str::<u8>("{").unwrap_err();
        let item: Result<watcher::Event<()>, _> = Err(watcher::Error::WatchFailed(
            kube::Error::SerdeError(garbled),
        ));
        assert_eq!(outcome(&item), Outcome::Garbled);
        let item: Result<watcher::Event<()>, _> = Err(watcher::Error::NoResourceVersion);
        assert_eq!(outcome(&item), Outcome::Failed);
    }

    #[test]
    fn the_backoff_doubles_to_its_maximum_and_resets() {
        let mut b = Backoff::new();
        let steps: Vec<Duration> = (0..8).map(|_| b.step()).collect();
        for (i, s) in steps.iter().enumerate() {
            let base = Duration::from_millis(800 * (1 << i)).min(Backoff::MAX);
            assert!(*s >= base && *s <= base + base / 4, "step {i}: {s:?}");
        }
        b.reset();
        assert!(b.step() < Duration::from_secs(1));
    }

    /// A list that fails after every `Init` (a 403) is retried further and further apart:
    /// `Init` does not reset the backoff, a delivery does.
    #[tokio::test(start_paused = true)]
    async fn init_does_not_reset_the_backoff_a_delivery_does() {
        let forbidden = || Err::<watcher::Event<()>, _>(watcher::Error::NoResourceVersion);
        let items = vec![
            Ok(watcher::Event::Init),
            forbidden(),
            Ok(watcher::Event::Init),
            forbidden(),
            Ok(watcher::Event::Init),
            forbidden(),
            Ok(watcher::Event::Init),
            Ok(watcher::Event::InitApply(())),
            forbidden(),
            Ok(watcher::Event::Init),
            Ok(watcher::Event::InitDone),
            forbidden(),
            forbidden(),
        ];
        let mut s = watch_backoff(futures::stream::iter(items));
        let start = tokio::time::Instant::now();
        let mut failed_at = Vec::new();
        while let Some(item) = s.next().await {
            if item.is_err() {
                failed_at.push(start.elapsed());
            }
        }
        let gaps: Vec<Duration> = failed_at.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps[0] >= Duration::from_millis(800), "{gaps:?}");
        assert!(gaps[1] >= Duration::from_millis(1600), "it grows: {gaps:?}");
        // A list's page is not a delivery: the wait goes on growing.
        assert!(gaps[2] >= Duration::from_millis(3200), "{gaps:?}");
        assert!(gaps[3] >= Duration::from_millis(6400), "{gaps:?}");
        // A completed list is: the wait after the next failure is the first again.
        assert!(gaps[4] < Duration::from_millis(1100), "{gaps:?}");
    }
}
