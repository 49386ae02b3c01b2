//! Time and size bounds on every request the kube client makes, as a tower layer under
//! kube's own stack (so reads, writes, access reviews, log fetches and the driver proxy are
//! all covered, whoever calls them).
//!
//! - A request that is not a watch must be answered **completely** (headers and the whole
//!   body) within the request timeout: a server that accepts and never answers, or drips
//!   one byte a second, ends in a clear error instead of a hang.
//! - A watch must send its headers within the timeout; after that it may stay quiet (kube's
//!   watcher has its own idle timeout and the poll's watchdog reports the silence).
//! - A response body over [`MAX_RESPONSE`] (not a watch) or a watch line over [`MAX_LINE`]
//!   ends the request: a server streaming an endless List cannot exhaust memory.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body::{Body, Frame, SizeHint};
use spark_triage_core::text;
use tokio::time::{Instant, Sleep};
use tower::{BoxError, Layer, Service};

/// The most one non-watch response may hold. A page of 500 executor pods is a few MB.
pub const MAX_RESPONSE: u64 = 64 * 1024 * 1024;
/// The longest line (one event) a watch may send.
pub const MAX_LINE: u64 = 16 * 1024 * 1024;

/// Why a request was cut short.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cut {
    /// No complete answer within the timeout.
    Timeout(Duration),
    /// The body grew past the limit.
    TooLarge(u64),
}

impl fmt::Display for Cut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Timeout(d) => write!(
                f,
                "no complete answer within {} (--request-timeout)",
                text::human_std_duration(*d)
            ),
            Self::TooLarge(n) => write!(f, "response larger than {} MiB", n / (1024 * 1024)),
        }
    }
}

impl std::error::Error for Cut {}

/// The bounds: `timeout` for every request (headers only for watches), and sizes.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub timeout: Duration,
    pub max_response: u64,
    pub max_line: u64,
}

/// The layer: the bounds, and the cluster's clock the API server's `Date` headers set.
#[derive(Debug, Clone)]
pub struct BoundsLayer {
    pub limits: Limits,
    pub clock: super::clock::Clock,
}

impl BoundsLayer {
    pub fn new(timeout: Duration, clock: super::clock::Clock) -> Self {
        Self {
            limits: Limits {
                timeout,
                max_response: MAX_RESPONSE,
                max_line: MAX_LINE,
            },
            clock,
        }
    }
}

impl<S> Layer<S> for BoundsLayer {
    type Service = Bounded<S>;
    fn layer(&self, inner: S) -> Bounded<S> {
        Bounded {
            inner,
            limits: self.limits,
            clock: self.clock.clone(),
        }
    }
}

/// The service the layer makes.
#[derive(Debug, Clone)]
pub struct Bounded<S> {
    inner: S,
    limits: Limits,
    clock: super::clock::Clock,
}

/// Whether a request is a watch (`watch=true` or `watch=1` in its query).
fn is_watch<B>(req: &Request<B>) -> bool {
    req.uri().query().is_some_and(|q| {
        q.split('&')
            .any(|kv| matches!(kv, "watch=true" | "watch=1" | "watch=True"))
    })
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, ReqBody, B> Service<Request<ReqBody>> for Bounded<S>
where
    S: Service<Request<ReqBody>, Response = Response<B>>,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Body<Data = Bytes> + Unpin + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<BoundedBody<B>>;
    type Error = BoxError;
    type Future = BoxFuture<Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<ReqBody>) -> Self::Future {
        let watch = is_watch(&req);
        // A proxied service's `Date` is its own host's clock, not the API server's.
        let proxied = req.uri().path().contains("/proxy/");
        let limits = self.limits;
        let clock = self.clock.clone();
        let deadline = Instant::now() + limits.timeout;
        let fut = self.inner.call(req);
        Box::pin(async move {
            let resp = match tokio::time::timeout_at(deadline, fut).await {
                Ok(r) => r.map_err(Into::into)?,
                Err(_) => return Err(Box::new(Cut::Timeout(limits.timeout)) as BoxError),
            };
            // The API server's clock, for ages on the cluster's time.
            if let Some(date) = resp.headers().get(http::header::DATE).filter(|_| !proxied) {
                clock.observe_date(date);
            }
            Ok(resp.map(|inner| BoundedBody {
                inner,
                deadline: (!watch).then(|| Box::pin(tokio::time::sleep_until(deadline))),
                timeout: limits.timeout,
                // A watch is bounded per line, anything else as a whole.
                max: if watch {
                    limits.max_line
                } else {
                    limits.max_response
                },
                per_line: watch,
                count: 0,
            }))
        })
    }
}

/// A response body that ends in an error at its deadline or past its size.
#[derive(Debug)]
pub struct BoundedBody<B> {
    inner: B,
    deadline: Option<Pin<Box<Sleep>>>,
    timeout: Duration,
    max: u64,
    /// Count bytes since the last newline (a watch) rather than in all.
    per_line: bool,
    count: u64,
}

impl<B> Body for BoundedBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        if let Some(d) = this.deadline.as_mut()
            && d.as_mut().poll(cx).is_ready()
        {
            return Poll::Ready(Some(Err(Box::new(Cut::Timeout(this.timeout)))));
        }
        let frame = match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e.into()))),
            Poll::Ready(Some(Ok(f))) => f,
        };
        if let Some(data) = frame.data_ref() {
            if this.per_line {
                match data.iter().rposition(|b| *b == b'\n') {
                    Some(i) => this.count = (data.len() - i - 1) as u64,
                    None => this.count += data.len() as u64,
                }
            } else {
                this.count += data.len() as u64;
            }
            if this.count > this.max {
                return Poll::Ready(Some(Err(Box::new(Cut::TooLarge(this.max)))));
            }
        }
        Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The bound that cut a request short, if one did (anywhere in the error's chain).
pub fn cut_of<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a Cut> {
    in_chain(e)
}

/// The first error of type `T` in an error's chain of causes.
pub fn in_chain<'a, T: std::error::Error + 'static>(
    e: &'a (dyn std::error::Error + 'static),
) -> Option<&'a T> {
    let mut cur: Option<&'a (dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(c) = err.downcast_ref::<T>() {
            return Some(c);
        }
        cur = err.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use http_body_util::{BodyExt, StreamBody};

    use super::*;

    type Chunks = futures::stream::Iter<std::vec::IntoIter<Result<Frame<Bytes>, BoxError>>>;

    fn body(chunks: Vec<&'static [u8]>) -> StreamBody<Chunks> {
        StreamBody::new(futures::stream::iter(
            chunks
                .into_iter()
                .map(|c| Ok(Frame::data(Bytes::from_static(c))))
                .collect::<Vec<_>>(),
        ))
    }

    fn bounded<B>(inner: B, per_line: bool, max: u64) -> BoundedBody<B> {
        BoundedBody {
            inner,
            deadline: None,
            timeout: Duration::from_secs(1),
            max,
            per_line,
            count: 0,
        }
    }

    #[tokio::test]
    async fn a_body_over_its_size_or_a_line_over_its_length_is_cut() {
        let whole = bounded(body(vec![b"12345", b"678"]), false, 7);
        let Err(err) = BodyExt::collect(whole).await else {
            panic!("over 7 bytes")
        };
        assert_eq!(cut_of(err.as_ref()), Some(&Cut::TooLarge(7)));
        // A watch: many short lines add up to more than the limit, and that is fine.
        let lines = bounded(body(vec![b"1234\n", b"5678\n", b"12\n34"]), true, 7);
        assert!(BodyExt::collect(lines).await.is_ok());
        let long = bounded(body(vec![b"1\n2345", b"6789"]), true, 7);
        assert!(BodyExt::collect(long).await.is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_drips_past_its_deadline_is_cut() {
        let drip = StreamBody::new(Box::pin(futures::stream::unfold(0u32, |n| async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Some((
                Ok::<_, BoxError>(Frame::data(Bytes::from_static(b"x"))),
                n + 1,
            ))
        })));
        let mut b = bounded(drip, false, u64::MAX);
        b.deadline = Some(Box::pin(tokio::time::sleep(Duration::from_secs(5))));
        let Err(err) = BodyExt::collect(b).await else {
            panic!("cut at the deadline")
        };
        assert_eq!(
            err.to_string(),
            "no complete answer within 1s (--request-timeout)"
        );
    }

    #[test]
    fn watches_are_told_apart_by_their_query() {
        let r = |uri: &str| Request::get(uri).body(()).unwrap();
        assert!(is_watch(&r("/api/v1/pods?watch=true&labelSelector=a")));
        assert!(is_watch(&r("/api/v1/pods?labelSelector=a&watch=1")));
        assert!(!is_watch(&r("/api/v1/pods?limit=500")));
        assert!(!is_watch(&r("/api/v1/namespaces/x/pods/p")));
    }
}
