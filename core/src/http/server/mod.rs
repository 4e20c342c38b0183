//! HTTP/1.1 server: the per-connection engine and the accept loop, generic over [`Runtime`].
//!
//! [`serve_connection`] runs one connection ([`conn`]): it reads heads into a pooled buffer,
//! calls the [`Handler`] with the parsed head (borrowed from that buffer), a [`BodyReader`]
//! ([`reader`]) and a [`ResponseWriter`] ([`response`]), then keeps the connection for the
//! next request (pipelined bytes stay buffered) or closes it cleanly. [`serve`] ([`accept`])
//! binds, accepts, and spawns one such engine per connection; the adapters only supply the
//! runtime.
//!
//! Protocol errors (malformed or oversized head, smuggling shapes, bad chunks, timeouts) are
//! rendered by [`Handler::render_error`] and the connection is closed. Nothing the peer sends
//! can make the engine panic: every error is a value.
//!
//! [`Runtime`]: crate::rt::Runtime

mod accept;
mod conn;
mod reader;
pub(crate) mod response;
#[cfg(test)]
mod tests;

use alloc::sync::Arc;
use core::future::Future;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use core::time::Duration;

use super::body::BodyKind;
use super::chunked::ChunkedLimits;
use super::error::HttpError;
use super::head::{HeadLimits, RequestHead};
use super::incoming::BodyState;
use crate::pool::BufferPool;
use crate::rt::Stream;

pub use accept::{ServerHandle, serve, serve_listener};
pub use conn::{serve_connection, serve_connection_from};
pub use reader::BodyReader;
pub use response::ResponseWriter;

/// Responses up to this size (head and body) go out in one write.
const OUT_CAPACITY: usize = 16 * 1024;
pub(crate) const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// Limits and timeouts of the server engine.
#[derive(Debug, Clone, Copy)]
pub struct ServerConfig {
    /// Where connection read buffers come from (`2 * max_head_len` bytes each).
    pub pool: &'static BufferPool,
    /// Head size, field count and target length limits (431/414).
    pub head_limits: HeadLimits,
    /// Chunk line and trailer limits.
    pub chunked_limits: ChunkedLimits,
    /// A whole head must arrive within this, counted from the connection's start (first
    /// request) or from the head's first byte (later requests). A connection's set-up (the
    /// TLS handshake) must also complete within this.
    pub header_timeout: Duration,
    /// How long a kept-alive connection may wait for the next request's first byte.
    pub idle_timeout: Duration,
    /// Each read of a request body must complete within this.
    pub read_timeout: Duration,
    /// Each write of a response must complete within this.
    pub write_timeout: Duration,
    /// A clean close waits at most this long for the peer to finish sending before closing.
    pub linger: Duration,
    /// Largest request body accepted (S3 `EntityTooLarge` above).
    pub max_body_len: u64,
    /// A request body the handler left unread is discarded up to this many bytes to keep the
    /// connection; a longer one closes it.
    pub drain_limit: u64,
}

impl ServerConfig {
    /// Defaults (64 KiB heads, 5 GiB bodies, 1 MiB drain, 10 s head / 60 s idle / 30 s I/O
    /// timeouts) with buffers from `pool`.
    pub fn new(pool: &'static BufferPool) -> Self {
        Self {
            pool,
            head_limits: HeadLimits::default(),
            chunked_limits: ChunkedLimits::default(),
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            read_timeout: Duration::from_secs(30),
            write_timeout: Duration::from_secs(30),
            linger: Duration::from_secs(2),
            max_body_len: 5 << 30,
            drain_limit: 1 << 20,
        }
    }

    /// Bytes of the per-connection read buffer: room for a whole head and as much body again.
    pub fn read_buffer_len(&self) -> usize {
        self.head_limits
            .max_head_len
            .saturating_mul(2)
            .max(8 * 1024)
    }
}

#[cfg(feature = "std")]
impl Default for ServerConfig {
    fn default() -> Self {
        Self::new(BufferPool::global())
    }
}

/// An error a [`Handler`] answers with: what the engine's own failures become, and the
/// status to send when nothing more specific is rendered.
pub trait HandlerError: From<HttpError> + Send + Sync {
    /// The HTTP status of this error.
    fn status(&self) -> u16;
}

impl HandlerError for HttpError {
    fn status(&self) -> u16 {
        HttpError::status(self)
    }
}

/// What a server does with requests.
///
/// `handle` gets the head (borrowed from the connection's buffer), the body and the response
/// writer. Returning `Err` before the response has started renders the error through
/// [`Handler::render_error`]; after it has started, the connection is closed. Both futures
/// are `Send`, so connections can be spawned on multi-threaded runtimes.
pub trait Handler: Send + Sync {
    /// What requests fail with; the engine's own failures (a bad head, a timeout) become one.
    type Error: HandlerError;

    /// Answer one request.
    fn handle<S: Stream>(
        &self,
        req: &RequestHead<'_, '_>,
        body: &mut BodyReader<'_, S>,
        res: &mut ResponseWriter<'_, S>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Render an error response (the response has not started). `req` is `None` when the
    /// head itself could not be read. The default writes the bare status with no body; the
    /// S3 layer overrides it to write XML.
    fn render_error<S: Stream>(
        &self,
        req: Option<&RequestHead<'_, '_>>,
        error: &Self::Error,
        res: &mut ResponseWriter<'_, S>,
    ) -> impl Future<Output = Result<(), HttpError>> + Send {
        let _ = req;
        let status = error.status();
        async move { res.send(status, &[], &[]).await }
    }
}

impl<H: Handler + ?Sized> Handler for Arc<H> {
    type Error = H::Error;

    fn handle<S: Stream>(
        &self,
        req: &RequestHead<'_, '_>,
        body: &mut BodyReader<'_, S>,
        res: &mut ResponseWriter<'_, S>,
    ) -> impl Future<Output = Result<(), H::Error>> + Send {
        (**self).handle(req, body, res)
    }

    fn render_error<S: Stream>(
        &self,
        req: Option<&RequestHead<'_, '_>>,
        error: &H::Error,
        res: &mut ResponseWriter<'_, S>,
    ) -> impl Future<Output = Result<(), HttpError>> + Send {
        (**self).render_error(req, error, res)
    }
}

/// State the body reader and the response writer share (they run in the same task; atomics
/// only because the connection future must be `Send`).
#[derive(Debug)]
pub(crate) struct Shared<S> {
    /// The stream; taken without waiting (try-lock): reader and writer never run concurrently.
    pub(crate) io: spin::Mutex<S>,
    pub(crate) response_started: AtomicBool,
    pub(crate) expect_continue: AtomicBool,
    pub(crate) continue_sent: AtomicBool,
    pub(crate) body_done: AtomicBool,
    /// `Length` bodies: bytes not yet received; `u64::MAX` when unknown (chunked).
    pub(crate) body_remaining: AtomicU64,
    /// Body framing was lost (bad chunk, EOF, timeout): the connection must close.
    pub(crate) body_failed: AtomicBool,
    /// The transport failed: nothing more can be written.
    pub(crate) broken: AtomicBool,
}

impl<S> Shared<S> {
    pub(crate) fn new(io: S) -> Self {
        Self {
            io: spin::Mutex::new(io),
            response_started: AtomicBool::new(false),
            expect_continue: AtomicBool::new(false),
            continue_sent: AtomicBool::new(false),
            body_done: AtomicBool::new(true),
            body_remaining: AtomicU64::new(0),
            body_failed: AtomicBool::new(false),
            broken: AtomicBool::new(false),
        }
    }

    /// Forget the previous request's flags.
    pub(crate) fn reset(&self, expect_continue: bool) {
        self.response_started.store(false, Ordering::Relaxed);
        self.expect_continue
            .store(expect_continue, Ordering::Relaxed);
        self.continue_sent.store(false, Ordering::Relaxed);
        self.body_failed.store(false, Ordering::Relaxed);
        self.body_done.store(true, Ordering::Relaxed);
        self.body_remaining.store(0, Ordering::Relaxed);
    }

    pub(crate) fn publish(&self, body: &BodyState<'_>) {
        self.body_done.store(body.is_done(), Ordering::Relaxed);
        let remaining = match body.kind() {
            BodyKind::Length(_) => body.remaining(),
            BodyKind::None => 0,
            BodyKind::Chunked | BodyKind::CloseDelimited => u64::MAX,
        };
        self.body_remaining.store(remaining, Ordering::Relaxed);
    }

    /// The client still waits for `100 Continue` before sending the body.
    pub(crate) fn continue_pending(&self) -> bool {
        self.expect_continue.load(Ordering::Relaxed)
            && !self.continue_sent.load(Ordering::Relaxed)
            && !self.body_done.load(Ordering::Relaxed)
    }

    pub(crate) fn busy() -> HttpError {
        HttpError::Usage("body reader and response writer used at the same time")
    }
}
