//! The HTTP servers the tool runs for others (`/metrics` and its probes, MCP over HTTP),
//! with the bounds that keep one client from taking the server from the others.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

/// The bounds on a server's connections.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    /// At most this many served at once, and as many more waiting to send a request
    /// ([`Places`]).
    pub max_connections: usize,
    /// At most this many of them (served or waiting) from one address.
    pub per_peer: usize,
    /// A request's head must arrive within this (slowloris), a keep-alive's next one too.
    pub header_timeout: Duration,
    /// No connection lives longer than this, however it behaves (`None`: an event stream
    /// may last as long as its session).
    pub lifetime: Option<Duration>,
}

/// `/healthz`, `/readyz` and `/metrics`: answers are immediate, so no connection needs long.
pub(crate) const ENDPOINTS: Bounds = Bounds {
    max_connections: 64,
    per_peer: 16,
    header_timeout: Duration::from_secs(5),
    lifetime: Some(Duration::from_secs(30)),
};

/// What the server knows of one connection: requests under way on it (their bodies still
/// being sent), whether it ever sent one, and how it is told to end.
#[derive(Clone)]
struct Conn {
    busy: Arc<AtomicUsize>,
    spoke: Arc<AtomicBool>,
    /// When its last answer was handed to hyper (ms after `born`, plus one; 0: never):
    /// hyper takes the body before it is all written, so a connection is idle only a while
    /// after.
    answered: Arc<std::sync::atomic::AtomicU64>,
    born: std::time::Instant,
    stop: Arc<Notify>,
    /// Where it comes from: no one address takes more than its share of the places.
    peer: std::net::IpAddr,
}

impl Conn {
    fn from(peer: std::net::IpAddr) -> Self {
        Conn {
            busy: Arc::default(),
            spoke: Arc::default(),
            answered: Arc::default(),
            born: std::time::Instant::now(),
            stop: Arc::default(),
            peer,
        }
    }

    fn spoke(&self) -> bool {
        self.spoke.load(Ordering::SeqCst)
    }

    /// No request under way, and none answered for [`WAITED_ENOUGH`] (its body may still be
    /// on its way out).
    fn idle(&self) -> bool {
        let answered = self.answered.load(Ordering::SeqCst);
        self.busy.load(Ordering::SeqCst) == 0
            && (answered == 0
                || self.ms().saturating_sub(answered - 1) >= WAITED_ENOUGH.as_millis() as u64)
    }

    fn ms(&self) -> u64 {
        u64::try_from(self.born.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

/// The connections served (a place each, oldest first), and those that came with every
/// place taken and wait to send a request before they get one.
///
/// A connection that sends a request takes the place of one that never did (oldest first),
/// else of one idle between requests; one that sends nothing never takes a place from
/// another, and waits at most [`Bounds::header_timeout`]. When every wait is taken, the
/// address that waits the most gives a wait up to one that waits less, else the oldest
/// wait gives way once it has waited [`WAITED_ENOUGH`]. No address holds more than
/// [`Bounds::per_peer`] places and waits: past it, its own oldest silent connection gives
/// way to its new one that spoke, and a silent one takes only its own wait that is old
/// enough (else it is closed at once). So clients that hold every place they can, and open
/// again each one closed, cannot keep a kubelet's probe from being read (it did: the
/// recorder was restarted for failing `/healthz`, and recorded nothing meanwhile), and
/// their holders do not drive each other out in a loop.
#[derive(Default)]
struct Places {
    held: BTreeMap<u64, Conn>,
    waiting: BTreeMap<u64, (std::time::Instant, Conn)>,
    /// Places held and waits, per address.
    per_peer: std::collections::HashMap<std::net::IpAddr, usize>,
    next: u64,
}

/// A waiting connection gives way to a newer one only after this long: silent clients that
/// open again each one closed would otherwise close each other in a loop (and a probe
/// among them, before its request is read).
const WAITED_ENOUGH: Duration = Duration::from_secs(1);

impl Places {
    fn count(&mut self, peer: std::net::IpAddr, up: bool) {
        let n = self.per_peer.entry(peer).or_default();
        if up {
            *n += 1;
        } else {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.per_peer.remove(&peer);
            }
        }
    }

    /// Ends a held connection (its place given to another).
    fn evict(&mut self, id: u64) {
        if let Some(c) = self.held.remove(&id) {
            c.stop.notify_one();
            self.count(c.peer, false);
        } else if let Some((_, c)) = self.waiting.remove(&id) {
            c.stop.notify_one();
            self.count(c.peer, false);
        }
    }

    /// A new connection (`spoke`: its request is there already): its number, and whether
    /// it has a place now (else it waits to speak); `None`: closed at once.
    fn arrive(&mut self, b: &Bounds, c: &Conn, spoke: bool) -> Option<(u64, bool)> {
        self.next += 1;
        let id = self.next;
        // Every place answering: a request cannot have one (nothing is given up for it).
        let full = self.held.len() >= b.max_connections
            && !self.held.values().any(|h| !h.spoke() || h.idle());
        if spoke && full {
            return None;
        }
        if self.per_peer.get(&c.peer).copied().unwrap_or(0) >= b.per_peer {
            // Its own give way: to a request, a silent one (waiting, then held), else one
            // idle between requests; to a silent newcomer, only a wait a second old.
            let own = |c2: &Conn| c2.peer == c.peer;
            let victim = if spoke {
                self.waiting
                    .iter()
                    .find(|(_, (_, w))| own(w))
                    .map(|(k, _)| *k)
                    .or_else(|| {
                        self.held
                            .iter()
                            .find(|(_, h)| own(h) && !h.spoke())
                            .map(|(k, _)| *k)
                    })
                    .or_else(|| {
                        self.held
                            .iter()
                            .find(|(_, h)| own(h) && h.idle())
                            .map(|(k, _)| *k)
                    })
            } else {
                self.waiting
                    .iter()
                    .find(|(_, (since, w))| own(w) && since.elapsed() >= WAITED_ENOUGH)
                    .map(|(k, _)| *k)
            }?;
            self.evict(victim);
        }
        if self.held.len() < b.max_connections || spoke {
            return self.place(id, b.max_connections, c).then_some((id, true));
        }
        if self.waiting.len() >= b.max_connections {
            // The address that waits the most gives a wait up to one that waits less (a
            // node's probe among pods' floods), else the oldest gives way after a while.
            let mut waits: std::collections::HashMap<std::net::IpAddr, usize> = Default::default();
            for (_, w) in self.waiting.values() {
                *waits.entry(w.peer).or_default() += 1;
            }
            let mine = waits.get(&c.peer).copied().unwrap_or(0);
            let most = waits
                .iter()
                .max_by_key(|(_, n)| **n)
                .filter(|(_, n)| **n > mine + 1)
                .map(|(peer, _)| *peer);
            let victim = match most {
                Some(peer) => self
                    .waiting
                    .iter()
                    .find(|(_, (_, w))| w.peer == peer)
                    .map(|(k, _)| *k),
                None => self
                    .waiting
                    .first_key_value()
                    .filter(|(_, (since, _))| since.elapsed() >= WAITED_ENOUGH)
                    .map(|(k, _)| *k),
            };
            self.evict(victim?);
        }
        self.waiting
            .insert(id, (std::time::Instant::now(), c.clone()));
        self.count(c.peer, true);
        Some((id, false))
    }

    /// A waiting connection sent its request: a place, as [`Places::place`] gives one.
    fn claim(&mut self, id: u64, max: usize, c: &Conn) -> bool {
        if self.waiting.remove(&id).is_none() {
            return false;
        }
        self.count(c.peer, false);
        self.place(id, max, c)
    }

    /// A place for a connection, taken if need be from one that never spoke, else from one
    /// idle between requests; `false` when every place is answering.
    fn place(&mut self, id: u64, max: usize, c: &Conn) -> bool {
        if self.held.len() >= max {
            let victim = self
                .held
                .iter()
                .find(|(_, h)| !h.spoke())
                .or_else(|| self.held.iter().find(|(_, h)| h.idle()))
                .map(|(k, _)| *k);
            let Some(victim) = victim else {
                return false;
            };
            self.evict(victim);
        }
        self.held.insert(id, c.clone());
        self.count(c.peer, true);
        true
    }

    fn leave(&mut self, id: u64) {
        if let Some(c) = self.held.remove(&id) {
            self.count(c.peer, false);
        }
        if let Some((_, c)) = self.waiting.remove(&id) {
            self.count(c.peer, false);
        }
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
struct Busy(Conn);

impl Busy {
    fn enter(c: &Conn) -> Self {
        // Busy before spoke: never "spoke and idle" while a request starts.
        c.busy.fetch_add(1, Ordering::SeqCst);
        c.spoke.store(true, Ordering::SeqCst);
        Busy(c.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0
            .answered
            .store(self.0.ms().saturating_add(1), Ordering::SeqCst);
        self.0.busy.fetch_sub(1, Ordering::SeqCst);
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
        let (stream, peer) = match accepted {
            Ok((stream, peer)) => (stream, peer.ip()),
            // Out of descriptors or a connection reset before it was taken: wait, go on.
            Err(e) => {
                tracing::debug!("http: accept: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        // Finished connections' tasks are reaped as new ones come.
        while tasks.try_join_next().is_some() {}
        // Whether its request came with it: a probe that waited behind a flood in the
        // listen queue has sent it by now, and takes a place at once.
        let Ok(std_stream) = stream.into_std() else {
            continue;
        };
        let spoke = matches!(std_stream.peek(&mut [0u8; 1]), Ok(n) if n > 0);
        let Ok(stream) = tokio::net::TcpStream::from_std(std_stream) else {
            continue;
        };
        let conn = Conn::from(peer);
        let Some((id, placed)) = lock(&places).arrive(&bounds, &conn, spoke) else {
            continue;
        };
        tasks.spawn(connection(
            stream,
            app.clone(),
            bounds,
            (places.clone(), id, placed),
            conn,
        ));
    }
    // No one new; what is under way gets a few seconds to finish (event streams were told
    // to end by `stop`'s own future), each connection ended as soon as it is idle.
    drop(listener);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !tasks.is_empty() && tokio::time::Instant::now() < deadline {
        {
            let p = lock(&places);
            let waiting = p.waiting.values().map(|(_, c)| c);
            for c in p.held.values().chain(waiting) {
                if c.busy.load(Ordering::SeqCst) == 0 {
                    c.stop.notify_one();
                }
            }
        }
        let _ = tokio::time::timeout(Duration::from_millis(100), tasks.join_next()).await;
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

#[cfg(test)]
mod tests {
    use super::*;

    const B: Bounds = Bounds {
        max_connections: 4,
        per_peer: 2,
        header_timeout: Duration::from_secs(5),
        lifetime: None,
    };

    fn peer(n: u8) -> std::net::IpAddr {
        std::net::IpAddr::from([10, 0, 0, n])
    }

    /// The counts per address are the places and waits each holds, whatever happens.
    fn consistent(p: &Places, b: &Bounds) {
        let mut want: std::collections::HashMap<std::net::IpAddr, usize> = Default::default();
        for c in p.held.values().chain(p.waiting.values().map(|(_, c)| c)) {
            *want.entry(c.peer).or_default() += 1;
        }
        assert_eq!(p.per_peer, want);
        assert!(p.held.len() <= b.max_connections && p.waiting.len() <= b.max_connections);
        assert!(
            p.per_peer.values().all(|n| *n <= b.per_peer),
            "{:?}",
            p.per_peer
        );
    }

    #[test]
    fn a_request_takes_a_silent_connections_place_and_a_share_holds() {
        let mut p = Places::default();
        // Two silent holders from each of two addresses: every place taken.
        let silent: Vec<Conn> = (0..4).map(|n| Conn::from(peer(1 + n / 2))).collect();
        for c in &silent {
            assert_eq!(p.arrive(&B, c, false).map(|(_, placed)| placed), Some(true));
        }
        // A third from the first address is over its share: closed at once.
        assert_eq!(p.arrive(&B, &Conn::from(peer(1)), false), None);
        // From another address: it waits, then its request takes the oldest silent place.
        let probe = Conn::from(peer(9));
        let (id, placed) = p.arrive(&B, &probe, false).expect("waits");
        assert!(!placed);
        assert!(p.claim(id, B.max_connections, &probe));
        assert!(p.held.contains_key(&id));
        consistent(&p, &B);
        // A request already there at accept takes a place at once.
        let (id, placed) = p.arrive(&B, &Conn::from(peer(8)), true).expect("placed");
        assert!(placed && p.held.contains_key(&id));
        consistent(&p, &B);
        // Every place answering: one more is closed.
        for c in p.held.values() {
            c.busy.fetch_add(1, Ordering::SeqCst);
            c.spoke.store(true, Ordering::SeqCst);
        }
        assert_eq!(p.arrive(&B, &Conn::from(peer(7)), true), None);
        consistent(&p, &B);
    }

    #[test]
    fn the_address_that_waits_the_most_gives_a_wait_up() {
        let b = Bounds {
            max_connections: 2,
            per_peer: 4,
            ..B
        };
        let mut p = Places::default();
        for _ in 0..2 {
            assert_eq!(
                p.arrive(&b, &Conn::from(peer(1)), false).map(|x| x.1),
                Some(true)
            );
        }
        let waits: Vec<u64> = (0..2)
            .map(|_| p.arrive(&b, &Conn::from(peer(1)), false).expect("waits").0)
            .collect();
        // Every wait is taken, by one address: a newcomer from another takes one.
        let (id, placed) = p
            .arrive(&b, &Conn::from(peer(3)), false)
            .expect("a wait given up");
        assert!(!placed && p.waiting.contains_key(&id));
        assert!(!p.waiting.contains_key(&waits[0]) && p.waiting.contains_key(&waits[1]));
        // Now each waits as much as the other: a fresh wait is not given up.
        assert_eq!(p.arrive(&b, &Conn::from(peer(2)), false), None);
        consistent(&p, &b);
        // Every place answering: a request is refused without closing anyone's wait.
        for c in p.held.values() {
            c.busy.fetch_add(1, Ordering::SeqCst);
            c.spoke.store(true, Ordering::SeqCst);
        }
        let before = p.waiting.len();
        assert_eq!(p.arrive(&b, &Conn::from(peer(1)), true), None);
        assert_eq!(p.waiting.len(), before);
    }

    #[test]
    fn the_counts_hold_through_any_sequence() {
        let mut rng = fastrand::Rng::with_seed(53);
        let mut p = Places::default();
        let mut live: Vec<(u64, Conn)> = Vec::new();
        for _ in 0..20_000 {
            match rng.u8(0..5) {
                0 | 1 => {
                    let c = Conn::from(peer(rng.u8(1..5)));
                    if let Some((id, _)) = p.arrive(&B, &c, rng.bool()) {
                        live.push((id, c));
                    }
                }
                2 if !live.is_empty() => {
                    let (id, c) = live[rng.usize(0..live.len())].clone();
                    let _ = p.claim(id, B.max_connections, &c);
                }
                3 if !live.is_empty() => {
                    let (id, _) = live.swap_remove(rng.usize(0..live.len()));
                    p.leave(id);
                }
                _ if !live.is_empty() => {
                    let (_, c) = &live[rng.usize(0..live.len())];
                    if rng.bool() {
                        c.busy.fetch_add(1, Ordering::SeqCst);
                    } else {
                        c.busy.store(0, Ordering::SeqCst);
                        c.spoke.store(true, Ordering::SeqCst);
                    }
                }
                _ => {}
            }
            consistent(&p, &B);
        }
    }
}
