//! The pod watch's stream: kube's watcher's states, events and errors (`watcher::Event`,
//! `watcher::Error`: `backoff.rs` and `live.rs` take it as they took kube's watcher), with
//! its LIST pipelined.
//!
//! kube's watcher asks for a page only once the page before is decoded, on its own task;
//! at 100,000 executor pods (201 pages, 330 MB of JSON) that one thread's decode was most
//! of the first view. Here the next page is asked for as soon as a page has arrived and its
//! `continue` is read (a list's `metadata` comes before its `items`: the decode sends it on
//! at once), and pages decode on the blocking pool, a few at most (the channel's
//! [`AHEAD`], the one the fetcher is handing on, the one being delivered), each delivered
//! whole and in order; one that is decoding when the stream is dropped still finishes. A page whose metadata comes last is simply
//! not overlapped. The watch that follows is kube's: from the list's resourceVersion, a 410
//! relists, a stream that ends or idles past its timeout is watched again from the last
//! version seen.

use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use kube::api::{ListParams, WatchEvent, WatchParams};
use kube::runtime::watcher::{Error, Event};
use kube::{Api, Client, Resource};
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::lean::LeanPod;

/// Pages decoded or decoding waiting in the channel for the reader.
const AHEAD: usize = 2;
/// Pods a page asks for (kube's watcher's page size).
const PAGE: u32 = 500;
/// How long a watch may be silent past its own timeout before it is taken as dropped
/// (kube's margin; the server ends a watch after 290 s).
const IDLE: Duration = Duration::from_secs(290 + 5);

/// Watches the pods `api` reads with `selector`, as `kube::runtime::watcher` does.
pub fn watch(
    api: Api<LeanPod>,
    client: Client,
    selector: Option<String>,
) -> impl Stream<Item = Result<Event<LeanPod>, Error>> + Send + 'static {
    let ctx = Ctx {
        url: api.resource_url().to_owned(),
        api,
        client,
        selector,
    };
    futures::stream::unfold((ctx, State::Empty), |(ctx, state)| async move {
        let (item, next) = step(&ctx, state).await;
        Some((item, (ctx, next)))
    })
}

struct Ctx {
    api: Api<LeanPod>,
    client: Client,
    url: String,
    selector: Option<String>,
}

enum State {
    Empty,
    Listing(Listing),
    Listed {
        resource_version: String,
    },
    Watching {
        resource_version: String,
        stream: BoxStream<'static, kube::Result<WatchEvent<LeanPod>>>,
    },
}

/// A LIST being read: the pages asked for, the page being handed out.
struct Listing {
    pages: mpsc::Receiver<Job>,
    items: VecDeque<LeanPod>,
    resource_version: Option<String>,
    /// Whether the last page delivered named a next one.
    more: bool,
    _fetching: Aborting,
}

/// The page fetcher's task, ended with the stream that reads it.
struct Aborting(JoinHandle<()>);

impl Drop for Aborting {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A page asked for: decoding, or the request's failure.
enum Job {
    Decoding(JoinHandle<serde_json::Result<Page>>),
    Failed(kube::Error),
}

/// One page of the LIST.
#[derive(Debug)]
struct Page {
    items: Vec<LeanPod>,
    resource_version: Option<String>,
    next: Option<String>,
}

/// One step: an item to hand out (none: step again) and the state after it.
async fn step(ctx: &Ctx, mut state: State) -> (Result<Event<LeanPod>, Error>, State) {
    loop {
        let (item, next) = step_once(ctx, state).await;
        state = next;
        if let Some(item) = item {
            return (item, state);
        }
    }
}

async fn step_once(ctx: &Ctx, state: State) -> (Option<Result<Event<LeanPod>, Error>>, State) {
    match state {
        State::Empty => {
            let (tx, pages) = mpsc::channel(AHEAD);
            let lp = ListParams {
                label_selector: ctx.selector.clone(),
                limit: Some(PAGE),
                ..ListParams::default()
            };
            let fetching = tokio::spawn(fetch(ctx.client.clone(), ctx.url.clone(), lp, tx));
            let listing = Listing {
                pages,
                items: VecDeque::new(),
                resource_version: None,
                more: true,
                _fetching: Aborting(fetching),
            };
            (Some(Ok(Event::Init)), State::Listing(listing))
        }
        State::Listing(mut l) => {
            if let Some(pod) = l.items.pop_front() {
                return (Some(Ok(Event::InitApply(pod))), State::Listing(l));
            }
            let page = match l.pages.recv().await {
                Some(Job::Decoding(decoding)) => match decoding.await {
                    Ok(Ok(page)) => page,
                    Ok(Err(e)) => return failed(kube::Error::SerdeError(e)),
                    Err(e) => return failed(kube::Error::Service(Box::new(e))),
                },
                Some(Job::Failed(e)) => return failed(e),
                // The fetcher stops after the last page, or when a page cannot be decoded
                // (that page's job says why); a list cut short otherwise is no list.
                None if l.more => return failed(kube::Error::Service(Box::new(CutShort))),
                None => {
                    return match l.resource_version {
                        Some(resource_version) => (
                            Some(Ok(Event::InitDone)),
                            State::Listed { resource_version },
                        ),
                        None => (Some(Err(Error::NoResourceVersion)), State::Empty),
                    };
                }
            };
            if page.resource_version.is_none() && page.next.is_none() {
                return (Some(Err(Error::NoResourceVersion)), State::Empty);
            }
            l.resource_version = page.resource_version.or(l.resource_version);
            l.more = page.next.is_some();
            l.items = page.items.into();
            (None, State::Listing(l))
        }
        State::Listed { resource_version } => {
            let wp = WatchParams {
                label_selector: ctx.selector.clone(),
                ..WatchParams::default()
            };
            match ctx.api.watch(&wp, &resource_version).await {
                Ok(stream) => (
                    None,
                    State::Watching {
                        resource_version,
                        stream: stream.boxed(),
                    },
                ),
                Err(e) => (
                    Some(Err(Error::WatchStartFailed(e))),
                    State::Listed { resource_version },
                ),
            }
        }
        State::Watching {
            resource_version,
            mut stream,
        } => {
            let next = tokio::time::timeout(IDLE, stream.next())
                .await
                .ok()
                .flatten();
            match next {
                Some(Ok(WatchEvent::Added(pod) | WatchEvent::Modified(pod))) => {
                    watched(pod, Event::Apply, stream)
                }
                Some(Ok(WatchEvent::Deleted(pod))) => watched(pod, Event::Delete, stream),
                Some(Ok(WatchEvent::Bookmark(b))) => (
                    None,
                    State::Watching {
                        resource_version: b.metadata.resource_version,
                        stream,
                    },
                ),
                // 410 Gone: the version is past the server's window; list again.
                Some(Ok(WatchEvent::Error(e))) if e.code == 410 => {
                    (Some(Err(Error::WatchError(e))), State::Empty)
                }
                Some(Ok(WatchEvent::Error(e))) => (
                    Some(Err(Error::WatchError(e))),
                    State::Watching {
                        resource_version,
                        stream,
                    },
                ),
                Some(Err(e)) => (
                    Some(Err(Error::WatchFailed(e))),
                    State::Watching {
                        resource_version,
                        stream,
                    },
                ),
                // Ended, or silent past its timeout: watch again from the last version.
                None => (None, State::Listed { resource_version }),
            }
        }
    }
}

fn failed(e: kube::Error) -> (Option<Result<Event<LeanPod>, Error>>, State) {
    (Some(Err(Error::InitialListFailed(e))), State::Empty)
}

/// A pod the watch sent, and the version to resume from after it.
fn watched(
    pod: LeanPod,
    event: fn(LeanPod) -> Event<LeanPod>,
    stream: BoxStream<'static, kube::Result<WatchEvent<LeanPod>>>,
) -> (Option<Result<Event<LeanPod>, Error>>, State) {
    match pod
        .meta()
        .resource_version
        .clone()
        .filter(|v| !v.is_empty())
    {
        Some(resource_version) => (
            Some(Ok(event(pod))),
            State::Watching {
                resource_version,
                stream,
            },
        ),
        None => (Some(Err(Error::NoResourceVersion)), State::Empty),
    }
}

/// The LIST ended before a page said it was the last.
#[derive(Debug)]
struct CutShort;

impl fmt::Display for CutShort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the list ended before its last page")
    }
}

impl std::error::Error for CutShort {}

/// Asks for the pages one after another, each as soon as the one before names it, and
/// hands each to the blocking pool to decode; stops after the last page, at a failure, or
/// when the reader is gone.
async fn fetch(client: Client, url: String, mut lp: ListParams, pages: mpsc::Sender<Job>) {
    loop {
        let text = match kube::core::Request::new(&url).list(&lp) {
            Ok(request) => client.request_text(request).await,
            Err(e) => Err(kube::Error::BuildRequest(e)),
        };
        let text = match text {
            Ok(text) => text,
            Err(e) => {
                let _ = pages.send(Job::Failed(e)).await;
                return;
            }
        };
        let (head, next) = oneshot::channel();
        let decoding = tokio::task::spawn_blocking(move || decode_page(&text, head));
        if pages.send(Job::Decoding(decoding)).await.is_err() {
            return;
        }
        // No head: the page could not be read that far (its job says why).
        match next.await.ok().flatten() {
            Some(token) => lp.continue_token = Some(token),
            None => return,
        }
    }
}

/// Decodes a page, sending its `continue` (or `None`, the last page) through `head` as
/// soon as its metadata is read.
fn decode_page(text: &str, head: oneshot::Sender<Option<String>>) -> serde_json::Result<Page> {
    let mut de = serde_json::Deserializer::from_str(text);
    let page = PageSeed { head: Some(head) }.deserialize(&mut de)?;
    de.end()?;
    Ok(page)
}

struct PageSeed {
    head: Option<oneshot::Sender<Option<String>>>,
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum Key {
    Metadata,
    Items,
    #[serde(other)]
    Other,
}

fn next_of(meta: &ListMeta) -> Option<String> {
    meta.continue_.clone().filter(|c| !c.is_empty())
}

impl<'de> DeserializeSeed<'de> for PageSeed {
    type Value = Page;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Page, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for PageSeed {
    type Value = Page;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of pods")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Page, A::Error> {
        let mut meta: Option<ListMeta> = None;
        let mut items = None;
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                // The first metadata counts (the continue already sent on is its).
                Key::Metadata if meta.is_none() => {
                    let m: ListMeta = map.next_value()?;
                    if let Some(head) = self.head.take() {
                        let _ = head.send(next_of(&m));
                    }
                    meta = Some(m);
                }
                Key::Items => items = map.next_value::<Option<Vec<LeanPod>>>()?,
                Key::Metadata | Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let meta = meta.unwrap_or_default();
        if let Some(head) = self.head.take() {
            let _ = head.send(next_of(&meta));
        }
        Ok(Page {
            items: items.unwrap_or_default(),
            next: next_of(&meta),
            resource_version: meta.resource_version.filter(|v| !v.is_empty()),
        })
    }
}

#[cfg(test)]
mod tests;
