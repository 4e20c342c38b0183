//! HTTP/1.1 server: the per-connection engine and the accept loop, generic over [`Runtime`].
//!
//! [`serve_connection`] runs one connection ([`conn`]): it reads heads into a pooled buffer,
//! calls the [`Handler`] with the parsed head (borrowed from that buffer), a [`BodyReader`]
//! ([`reader`]) and a [`ResponseWriter`] ([`response`]), then keeps the connection for the
//! next request (pipelined bytes stay buffered) or closes it cleanly. While it waits for a
//! request it holds no buffer: they come from the pool with the first bytes. [`serve`]
//! ([`accept`]) binds, accepts, and spawns one such engine per connection, up to
//! [`ServerConfig::max_connections`]; the adapters only supply the runtime.
//!
//! Every wait is bounded: a head by [`ServerConfig::header_timeout`], a body by a minimum
//! rate ([`ServerConfig::min_body_rate`] after [`ServerConfig::body_timeout`]), discarding an
//! unread body by [`ServerConfig::drain_timeout`] and [`ServerConfig::drain_limit`], an idle
//! connection by [`ServerConfig::idle_timeout`].
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
    /// The reads of one request body may wait this long in all, plus one second for every
    /// [`ServerConfig::min_body_rate`] bytes received (see [`ReadBudget`]): a client sending
    /// slower than that is cut off (408) once the grace is used up.
    ///
    /// [`ReadBudget`]: crate::http::timed::ReadBudget
    pub body_timeout: Duration,
    /// The slowest a request body may come, in bytes per second, after
    /// [`ServerConfig::body_timeout`]; `0`: the body timeout bounds the whole body.
    pub min_body_rate: u64,
    /// Each write of a response must complete within this.
    pub write_timeout: Duration,
    /// A clean close waits at most this long for the peer to finish sending before closing.
    pub linger: Duration,
    /// Largest request body accepted (S3 `EntityTooLarge` above).
    pub max_body_len: u64,
    /// A request body the handler left unread is discarded up to this many bytes to keep the
    /// connection; a longer one closes it.
    pub drain_limit: u64,
    /// Discarding an unread body must end within this, or the connection closes.
    pub drain_timeout: Duration,
    /// Most connections a listener keeps open ([`serve`]). At the cap a new connection takes
    /// the place of the one that has waited longest for a request, which is closed; with none
    /// waiting, the new one is closed at once.
    pub max_connections: usize,
    /// Idle bytes the pool keeps when the listener trims it ([`BufferPool::trim`], every
    /// [`POOL_TRIM_INTERVAL`]), so that memory taken by a burst goes back; `usize::MAX` never
    /// trims.
    pub pool_idle_bytes: usize,
    /// Called after each trim of the pool: where the allocator under the pool can be asked to
    /// give freed memory back too (the server's `malloc_trim`), which `no_std` core cannot do.
    pub after_trim: Option<fn()>,
}

/// How often a listener trims the buffer pool to [`ServerConfig::pool_idle_bytes`].
pub const POOL_TRIM_INTERVAL: Duration = Duration::from_secs(10);

impl ServerConfig {
    /// Defaults with buffers from `pool`: 64 KiB heads, 5 GiB bodies; 10 s for a head, 60 s
    /// idle, 30 s per read or write; bodies at 1 KiB/s at least after 30 s; unread bodies
    /// discarded up to 1 MiB within 5 s; 1024 connections; 16 MiB of idle buffers kept.
    pub fn new(pool: &'static BufferPool) -> Self {
        Self {
            pool,
            head_limits: HeadLimits::default(),
            chunked_limits: ChunkedLimits::default(),
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            read_timeout: Duration::from_secs(30),
            body_timeout: Duration::from_secs(30),
            min_body_rate: 1024,
            write_timeout: Duration::from_secs(30),
            linger: Duration::from_secs(2),
            max_body_len: 5 << 30,
            drain_limit: 1 << 20,
            drain_timeout: Duration::from_secs(5),
            max_connections: 1024,
            pool_idle_bytes: 16 << 20,
            after_trim: None,
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
