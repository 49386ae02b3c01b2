//! The HTTP servers the tool runs for others (`/metrics` and its probes, MCP over HTTP),
//! with the bounds that keep one client from taking the server from the others.

use std::{
    collections::BTreeMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use tokio::sync::Notify;

/// The bounds on a server's connections.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    /// At most this many served at once, and as many more waiting to send a request
    /// ([`Places`]).
    pub max_connections: usize,
    /// A request's head must arrive within this (slowloris), a keep-alive's next one too.
    pub header_timeout: Duration,
    /// No connection lives longer than this, however it behaves (`None`: an event stream
    /// may last as long as its session).
    pub lifetime: Option<Duration>,
}

/// `/healthz`, `/readyz` and `/metrics`: answers are immediate, so no connection needs long.
pub(crate) const ENDPOINTS: Bounds = Bounds {
    max_connections: 64,
    header_timeout: Duration::from_secs(5),
    lifetime: Some(Duration::from_secs(30)),
};

/// What the server knows of one connection: requests under way on it (their bodies still
/// being sent), whether it ever sent one, and how it is told to end.
#[derive(Clone, Default)]
struct Conn {
    busy: Arc<AtomicUsize>,
    spoke: Arc<AtomicBool>,
    stop: Arc<Notify>,
}

/// The connections served (a place each, oldest first), and those that came with every
/// place taken and wait to send a request before they get one.
///
/// A connection that sends a request takes the place of one that never did (oldest first),
/// else of one idle between requests; one that sends nothing never takes a place from
/// another. So a client that holds every place, and opens again each one closed, cannot
/// keep a kubelet's probe from being read (it did: the recorder was restarted for failing
/// `/healthz`, and recorded nothing meanwhile), and its holders, waiting silent, do not
/// drive each other out in a loop.
#[derive(Default)]
struct Places {
    held: BTreeMap<u64, Conn>,
    waiting: BTreeMap<u64, Arc<Notify>>,
    next: u64,
}

impl Places {
    /// A new connection: its number, and whether it has a place now (else it waits to
    /// speak; the oldest waiting one past `max` is told to end).
    fn arrive(&mut self, max: usize, c: &Conn) -> (u64, bool) {
        self.next += 1;
        let id = self.next;
        if self.held.len() < max {
            self.held.insert(id, c.clone());
            return (id, true);
        }
        self.waiting.insert(id, c.stop.clone());
        if self.waiting.len() > max
            && let Some((_, oldest)) = self.waiting.pop_first()
        {
            oldest.notify_one();
        }
        (id, false)
    }

    /// A waiting connection sent its request: a place, taken from one that never spoke,
    /// else from one idle between requests; `false` when every place is answering.
    fn claim(&mut self, id: u64, max: usize, c: &Conn) -> bool {
        if self.waiting.remove(&id).is_none() {
            return false;
        }
        if self.held.len() >= max {
            let silent = self
                .held
                .iter()
                .find(|(_, h)| !h.spoke.load(Ordering::SeqCst))
                .or_else(|| {
                    self.held
                        .iter()
                        .find(|(_, h)| h.busy.load(Ordering::SeqCst) == 0)
                })
                .map(|(k, _)| *k);
            let Some(victim) = silent.and_then(|k| self.held.remove(&k)) else {
                return false;
            };
            victim.stop.notify_one();
        }
        self.held.insert(id, c.clone());
        true
    }

    fn leave(&mut self, id: u64) {
        self.held.remove(&id);
        self.waiting.remove(&id);
    }
}

/// Gives a connection's place back when its task ends, however it ends.
struct Leave(Arc<Mutex<Places>>, u64);

impl Drop for Leave {
    fn drop(&mut self) {
        lock(&self.0).leave(self.1);
    }
}

fn lock(places: &Mutex<Places>) -> std::sync::MutexGuard<'_, Places> {
    places
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A request under way on its connection (the connection is not idle while it lives).
struct Busy(Arc<AtomicUsize>);

impl Busy {
    fn enter(c: &Conn) -> Self {
        c.spoke.store(true, Ordering::SeqCst);
        c.busy.fetch_add(1, Ordering::SeqCst);
        Busy(c.busy.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A response's body, its connection busy until the body is sent.
struct Sending<B> {
    body: B,
    _busy: Busy,
}

impl<B: http_body::Body + Unpin> http_body::Body for Sending<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// Serves `app` on `listener` until `stop` completes, one task per connection, within
/// `bounds` ([`Places`]): idle or slow clients cannot use up the process's file descriptors
/// (the recorder needs them to rotate) nor keep the server from answering the others.
pub(crate) async fn bounded(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    bounds: Bounds,
    stop: impl std::future::Future<Output = ()>,
) {
    let places = Arc::new(Mutex::new(Places::default()));
    let mut stop = std::pin::pin!(stop);
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            () = &mut stop => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            // Out of descriptors or a connection reset before it was taken: wait, go on.
            Err(e) => {
                tracing::debug!("http: accept: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        // Finished connections' tasks are reaped as new ones come.
        while tasks.try_join_next().is_some() {}
        let conn = Conn::default();
        let (id, placed) = lock(&places).arrive(bounds.max_connections, &conn);
        tasks.spawn(connection(
            stream,
            app.clone(),
            bounds,
            (places.clone(), id, placed),
            conn,
        ));
    }
    tasks.abort_all();
}

/// One connection: a place (at once, or once it sends a request), then served until it
/// ends, its lifetime passes, or its place is given to another.
async fn connection(
    stream: tokio::net::TcpStream,
    app: axum::Router,
    bounds: Bounds,
    (places, id, placed): (Arc<Mutex<Places>>, u64, bool),
    conn: Conn,
) {
    use hyper_util::rt::{TokioIo, TokioTimer};
    let _leave = Leave(places.clone(), id);
    if !placed {
        let mut first = [0u8; 1];
        let spoke = tokio::select! {
            r = tokio::time::timeout(bounds.header_timeout, stream.peek(&mut first)) => {
                matches!(r, Ok(Ok(n)) if n > 0)
            }
            () = conn.stop.notified() => false,
        };
        if !spoke || !lock(&places).claim(id, bounds.max_connections, &conn) {
            return;
        }
    }
    let on = conn.clone();
    let service = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
        let busy = Busy::enter(&on);
        let answer = tower::ServiceExt::oneshot(app.clone(), req);
        // Busy until the body is sent: an event stream is a request under way.
        async move {
            answer
                .await
                .map(|r| r.map(|body| Sending { body, _busy: busy }))
        }
    });
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(bounds.header_timeout);
    let served = http.serve_connection(TokioIo::new(stream), service);
    let lifetime = async {
        match bounds.lifetime {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = served => {}
        () = lifetime => {}
        () = conn.stop.notified() => {}
    }
}
