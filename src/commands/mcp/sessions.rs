//! MCP over HTTP's sessions, at most [`MAX_SESSIONS`] at once: each `initialize` made one of
//! about 61 KB with no bound (20,000 in 12 s took the server from 29 MB to 1.2 GB, and it
//! kept the memory). One past the bound is refused with an answer that says so (a 503 that
//! names the bound, before rmcp sees the request: [`refuse_when_full`]; a race past that
//! check is still refused, under a lock, by rmcp's 500); a session idle for [`IDLE`] ends
//! (rmcp's keep-alive), which frees its place.

use std::time::Duration;

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, SessionConfig,
};
use rmcp::transport::streamable_http_server::session::{
    RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};

/// The most sessions at once (a few MB in all; an agent host holds one or two).
pub(crate) const MAX_SESSIONS: usize = 64;
/// A session with no request for this long ends.
pub(crate) const IDLE: Duration = Duration::from_secs(300);

/// Why a session was not made or used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    #[error(
        "{0} MCP sessions are open, the most this server keeps: end one (HTTP DELETE), or wait for an idle one to end"
    )]
    Full(usize),
    #[error(transparent)]
    Session(#[from] LocalSessionManagerError),
}

/// rmcp's local sessions, at most [`MAX_SESSIONS`].
pub(crate) struct Capped {
    inner: LocalSessionManager,
    max: usize,
    /// Held from the count to the session's creation: concurrent `initialize`s do not
    /// pass the bound together.
    creating: tokio::sync::Mutex<()>,
}

impl Capped {
    pub(crate) fn new(max: usize) -> Self {
        let mut inner = LocalSessionManager::default();
        let mut config = SessionConfig::default();
        config.keep_alive = Some(IDLE);
        inner.session_config = config;
        Capped {
            inner,
            max,
            creating: tokio::sync::Mutex::new(()),
        }
    }
}

impl Capped {
    /// Sessions open now.
    pub(crate) async fn open(&self) -> usize {
        self.inner.sessions.read().await.len()
    }
}

/// A request that would make a session (a POST with no session id: an `initialize`) while
/// every place is taken: answered 503, with the reason and when to try again, not passed on.
pub(crate) async fn refuse_when_full(
    axum::extract::State(sessions): axum::extract::State<std::sync::Arc<Capped>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let new =
        req.method() == axum::http::Method::POST && !req.headers().contains_key("mcp-session-id");
    if new {
        let open = sessions.open().await;
        if open >= sessions.max {
            tracing::warn!("mcp: a session refused: {open} open");
            return (
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                [(axum::http::header::RETRY_AFTER, "30")],
                format!("{}\n", Error::Full(open)),
            )
                .into_response();
        }
    }
    next.run(req).await
}

impl SessionManager for Capped {
    type Error = Error;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let _one = self.creating.lock().await;
        let open = self.inner.sessions.read().await.len();
        if open >= self.max {
            tracing::warn!("mcp: a session refused: {open} open");
            return Err(Error::Full(open));
        }
        Ok(self.inner.create_session().await?)
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.resume(id, last_event_id).await?)
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        Ok(self.inner.restore_session(id).await?)
    }

    fn event_store(
        &self,
    ) -> Option<std::sync::Arc<dyn rmcp::transport::streamable_http_server::session::EventStore>>
    {
        self.inner.event_store()
    }
}
