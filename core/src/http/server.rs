//! HTTP/1.1 server: the per-connection engine and the accept loop, generic over [`Runtime`].
//!
//! [`serve_connection`] runs one connection: it reads heads into a pooled buffer, calls the
//! [`Handler`] with the parsed head (borrowed from that buffer), a [`BodyReader`] and a
//! [`ResponseWriter`], then keeps the connection for the next request (pipelined bytes stay
//! buffered) or closes it cleanly. [`serve`] binds, accepts, and spawns one such engine per
//! connection; the adapters only supply the runtime.
//!
//! Protocol errors (malformed or oversized head, smuggling shapes, bad chunks, timeouts) are
//! rendered by [`Handler::render_error`] and the connection is closed. Nothing the peer sends
//! can make the engine panic: every error is a value.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::future::Future;
use core::net::SocketAddr;
use core::ops::Range;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use core::time::Duration;

use embedded_io::{Error as _, ErrorKind, ErrorType};
use httparse::{EMPTY_HEADER, Header};

use super::body::{BodyKind, request_framing};
use super::chunked::{ChunkedDecoder, ChunkedLimits, write_chunk_header, write_last_chunk};
use super::client::ResponseBody;
use super::head::{HeadLimits, HeadParser, RequestHead, Status, Version};
use super::io::{BodyState, HttpError, RelayError, Src, Timed, write_all};
use super::write;
use crate::pool::BufferPool;
use crate::rt::{Clock, Either, Listener, Runtime, Signal, Stream, TimedOut, race, timeout};
use crate::s3::{S3Error, S3ErrorCode};

/// Header field storage per request; the effective cap is [`HeadLimits::max_headers`].
const MAX_HEADERS: usize = 128;
/// Responses up to this size (head and body) go out in one write.
const OUT_CAPACITY: usize = 16 * 1024;
/// A clean close discards at most this much late input before giving up.
const LINGER_BYTES: usize = 1 << 20;
const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

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

/// What a server does with requests.
///
/// `handle` gets the head (borrowed from the connection's buffer), the body and the response
/// writer. Returning `Err` before the response has started renders the error through
/// [`Handler::render_error`]; after it has started, the connection is closed. Both futures
/// are `Send`, so connections can be spawned on multi-threaded runtimes.
pub trait Handler: Send + Sync {
    /// Answer one request.
    fn handle<S: Stream>(
        &self,
        req: &RequestHead<'_, '_>,
        body: &mut BodyReader<'_, S>,
        res: &mut ResponseWriter<'_, S>,
    ) -> impl Future<Output = Result<(), S3Error>> + Send;

    /// Render an error response (the response has not started). `req` is `None` when the
    /// head itself could not be read. The default writes the bare status with no body; the
    /// S3 layer overrides it to write XML.
    fn render_error<S: Stream>(
        &self,
        req: Option<&RequestHead<'_, '_>>,
        error: &S3Error,
        res: &mut ResponseWriter<'_, S>,
    ) -> impl Future<Output = Result<(), HttpError>> + Send {
        let _ = req;
        let status = error.status();
        async move { res.send(status, &[], &[]).await }
    }
}

impl<H: Handler + ?Sized> Handler for Arc<H> {
    fn handle<S: Stream>(
        &self,
        req: &RequestHead<'_, '_>,
        body: &mut BodyReader<'_, S>,
        res: &mut ResponseWriter<'_, S>,
    ) -> impl Future<Output = Result<(), S3Error>> + Send {
        (**self).handle(req, body, res)
    }

    fn render_error<S: Stream>(
        &self,
        req: Option<&RequestHead<'_, '_>>,
        error: &S3Error,
        res: &mut ResponseWriter<'_, S>,
    ) -> impl Future<Output = Result<(), HttpError>> + Send {
        (**self).render_error(req, error, res)
    }
}

/// State the body reader and the response writer share (they run in the same task; atomics
/// only because the connection future must be `Send`).
#[derive(Debug)]
struct Shared<S> {
    /// The stream; taken without waiting (try-lock): reader and writer never run concurrently.
    io: spin::Mutex<S>,
    response_started: AtomicBool,
    expect_continue: AtomicBool,
    continue_sent: AtomicBool,
    body_done: AtomicBool,
    /// `Length` bodies: bytes not yet received; `u64::MAX` when unknown (chunked).
    body_remaining: AtomicU64,
    /// Body framing was lost (bad chunk, EOF, timeout): the connection must close.
    body_failed: AtomicBool,
    /// The transport failed: nothing more can be written.
    broken: AtomicBool,
}

impl<S> Shared<S> {
    fn new(io: S) -> Self {
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
    fn reset(&self, expect_continue: bool) {
        self.response_started.store(false, Ordering::Relaxed);
        self.expect_continue
            .store(expect_continue, Ordering::Relaxed);
        self.continue_sent.store(false, Ordering::Relaxed);
        self.body_failed.store(false, Ordering::Relaxed);
        self.body_done.store(true, Ordering::Relaxed);
        self.body_remaining.store(0, Ordering::Relaxed);
    }

    fn publish(&self, body: &BodyState<'_>) {
        self.body_done.store(body.is_done(), Ordering::Relaxed);
        let remaining = match body.kind() {
            BodyKind::Length(_) => body.remaining(),
            BodyKind::None => 0,
            BodyKind::Chunked | BodyKind::CloseDelimited => u64::MAX,
        };
        self.body_remaining.store(remaining, Ordering::Relaxed);
    }

    /// The client still waits for `100 Continue` before sending the body.
    fn continue_pending(&self) -> bool {
        self.expect_continue.load(Ordering::Relaxed)
            && !self.continue_sent.load(Ordering::Relaxed)
            && !self.body_done.load(Ordering::Relaxed)
    }

    fn busy() -> HttpError {
        HttpError::Usage("body reader and response writer used at the same time")
    }
}

/// The request body: `Content-Length` or chunked, streamed from the connection buffer.
///
/// [`BodyReader::next_chunk`] hands out slices of the buffer (zero copy);
/// [`BodyReader::read`] (also the `embedded-io-async` `Read` impl) copies. The first read that
/// needs bytes from the network sends `100 Continue` if the client asked for it.
#[derive(Debug)]
pub struct BodyReader<'c, S> {
    state: BodyState<'c>,
    shared: &'c Shared<S>,
}

impl<S: Stream> BodyReader<'_, S> {
    /// How the body is framed (`None` for no body).
    pub fn kind(&self) -> BodyKind {
        self.state.kind()
    }

    /// The declared `Content-Length`, if any.
    pub fn content_length(&self) -> Option<u64> {
        match self.state.kind() {
            BodyKind::Length(n) => Some(n),
            _ => None,
        }
    }

    /// Whether the whole body (and its trailers) has been read.
    pub fn is_done(&self) -> bool {
        self.state.is_done()
    }

    /// Body bytes received so far.
    pub fn received(&self) -> u64 {
        self.state.total()
    }

    /// The next run of body bytes, borrowed from the connection buffer; `None` at the end.
    pub async fn next_chunk(&mut self) -> Result<Option<&[u8]>, HttpError> {
        let r = self.next_range(usize::MAX, true).await?;
        Ok(r.map(|r| self.state.slice(r)))
    }

    /// Copy body bytes into `buf`; `0` at the end (or if `buf` is empty).
    pub async fn read(&mut self, buf: &mut [u8]) -> Result<usize, HttpError> {
        let Some(r) = self.next_range(buf.len(), true).await? else {
            return Ok(0);
        };
        let src = self.state.slice(r);
        let n = src.len();
        if let Some(dst) = buf.get_mut(..n) {
            dst.copy_from_slice(src);
        }
        Ok(n)
    }

    /// The trailer fields of a chunked body (empty until it is done, or if there were none).
    pub fn trailers<'s, 'h>(
        &'s self,
        storage: &'h mut [Header<'s>],
    ) -> Result<&'h [Header<'s>], HttpError> {
        self.state.trailers(storage)
    }

    async fn next_range(
        &mut self,
        max: usize,
        may_continue: bool,
    ) -> Result<Option<Range<usize>>, HttpError> {
        let r = self.next_inner(max, may_continue).await;
        if r.is_err() {
            self.shared.body_failed.store(true, Ordering::Relaxed);
        }
        if self.state.total() > 0 {
            // The client is sending without waiting: no 100 is due any more.
            self.shared.continue_sent.store(true, Ordering::Relaxed);
        }
        self.shared.publish(&self.state);
        r
    }

    async fn next_inner(
        &mut self,
        max: usize,
        may_continue: bool,
    ) -> Result<Option<Range<usize>>, HttpError> {
        loop {
            if let Some(r) = self.state.take(max)? {
                return Ok(Some(r));
            }
            if !self.state.needs_input() || max == 0 {
                return Ok(None);
            }
            let mut io = self.shared.io.try_lock().ok_or_else(Shared::<S>::busy)?;
            if self.shared.continue_pending() {
                if !may_continue || self.shared.response_started.load(Ordering::Relaxed) {
                    // The client waits for a 100 that will never come: it may not send the body.
                    return Err(HttpError::Usage(
                        "request body read after the response, without 100 Continue",
                    ));
                }
                let sent = write_all(&mut *io, CONTINUE).await;
                if let Err(e) = sent {
                    self.shared.broken.store(true, Ordering::Relaxed);
                    return Err(e);
                }
                self.shared.continue_sent.store(true, Ordering::Relaxed);
            }
            let filled = self.state.fill(&mut *io).await;
            if let Err(HttpError::Io(_)) = filled {
                self.shared.broken.store(true, Ordering::Relaxed);
            }
            filled?;
        }
    }

    /// Body bytes already buffered (no I/O); `None` when more must be read or it is done.
    pub(crate) fn take_buffered(&mut self) -> Result<Option<&[u8]>, HttpError> {
        let r = self.state.take(usize::MAX);
        if r.is_err() {
            self.shared.body_failed.store(true, Ordering::Relaxed);
        }
        self.shared.publish(&self.state);
        Ok(r?.map(|r| self.state.slice(r)))
    }

    /// `Length` bodies with nothing buffered: send `100 Continue` if it is due and return the
    /// bytes still to come, to move past this reader with [`BodyReader::splice_to`];
    /// `None` otherwise.
    pub(crate) async fn splice_ready(&mut self) -> Result<Option<u64>, HttpError> {
        if !self.state.can_skip() || self.state.remaining() == 0 {
            return Ok(None);
        }
        if self.shared.continue_pending() {
            if self.shared.response_started.load(Ordering::Relaxed) {
                return Err(HttpError::Usage(
                    "request body read after the response, without 100 Continue",
                ));
            }
            let mut io = self.shared.io.try_lock().ok_or_else(Shared::<S>::busy)?;
            if let Err(e) = write_all(&mut *io, CONTINUE).await {
                self.shared.broken.store(true, Ordering::Relaxed);
                return Err(e);
            }
            self.shared.continue_sent.store(true, Ordering::Relaxed);
        }
        Ok(Some(self.state.remaining()))
    }

    /// Splice up to `max` body bytes from the connection into `dst` (see
    /// [`Stream::splice_from`]) and account for them; `None` if these streams cannot.
    pub(crate) async fn splice_to<D: Stream>(
        &mut self,
        dst: &mut D,
        max: u64,
    ) -> Option<Result<u64, RelayError>> {
        let moved = {
            let Some(mut io) = self.shared.io.try_lock() else {
                return Some(Err(RelayError::Source(Shared::<S>::busy())));
            };
            dst.splice_from(&mut *io, max).await?
        };
        let r = match moved {
            Ok(0) => Err(RelayError::Source(HttpError::UnexpectedEof)),
            Ok(n) => self.state.skip(n).map(|()| n).map_err(RelayError::Source),
            Err(e) => Err(RelayError::spliced(e)),
        };
        if r.is_err() {
            self.shared.body_failed.store(true, Ordering::Relaxed);
            self.shared.broken.store(true, Ordering::Relaxed);
        } else {
            self.shared.continue_sent.store(true, Ordering::Relaxed);
        }
        self.shared.publish(&self.state);
        Some(r)
    }

    /// Discard the rest of the body, up to `limit` bytes; whether it ended within the limit.
    async fn drain(&mut self, limit: u64) -> bool {
        let start = self.state.total();
        loop {
            match self.next_range(usize::MAX, false).await {
                Ok(Some(_)) if self.state.total() - start <= limit => {}
                Ok(None) => return self.state.is_done(),
                _ => return false,
            }
        }
    }
}

impl<S: Stream> ErrorType for BodyReader<'_, S> {
    type Error = HttpError;
}

impl<S: Stream> embedded_io_async::Read for BodyReader<'_, S> {
    async fn read(&mut self, buf: &mut [u8]) -> Result<usize, HttpError> {
        BodyReader::read(self, buf).await
    }
}

/// Where the response is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RespState {
    Idle,
    Body { kind: BodyKind, remaining: u64 },
    Done,
    Failed,
}

/// What the writer needs to know about the request it answers.
#[derive(Debug, Clone, Copy)]
struct ReqInfo {
    head_only: bool,
    http10: bool,
    keep_alive: bool,
}

/// The response: status and headers, then a body with `Content-Length` or chunked.
///
/// The engine writes the framing headers (`Content-Length` / `Transfer-Encoding`), `Date`, and
/// `Connection` (`close` when the connection will close); the handler must not pass them.
/// The head is buffered and goes out with the first body bytes (one write for small
/// responses). Bodies of responses to `HEAD` are not sent.
#[derive(Debug)]
pub struct ResponseWriter<'c, S> {
    shared: &'c Shared<S>,
    out: &'c mut Vec<u8>,
    req: ReqInfo,
    stop: Option<&'c Signal>,
    drain_limit: u64,
    unix_time: i64,
    state: RespState,
    /// Keep the connection after this response (decided when it starts).
    persist: bool,
    close_requested: bool,
    /// The client's address, when the accept loop knows it.
    peer: Option<SocketAddr>,
    /// The status once started (0 before).
    status: u16,
    /// Body bytes handed to [`ResponseWriter::write`] and sent (not counted for `HEAD`).
    body_sent: u64,
}

impl<'c, S: Stream> ResponseWriter<'c, S> {
    fn new(
        shared: &'c Shared<S>,
        out: &'c mut Vec<u8>,
        req: ReqInfo,
        stop: Option<&'c Signal>,
        drain_limit: u64,
        unix_time: i64,
    ) -> Self {
        out.clear();
        Self {
            shared,
            out,
            req,
            stop,
            drain_limit,
            unix_time,
            state: RespState::Idle,
            persist: false,
            close_requested: false,
            peer: None,
            status: 0,
            body_sent: 0,
        }
    }

    /// The client's address, if known (connections served by [`serve`] know it).
    pub fn peer(&self) -> Option<SocketAddr> {
        self.peer
    }

    /// The status of the response once started; 0 before.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// Body bytes sent so far (framing excluded; none for responses to `HEAD`), for access
    /// logs.
    pub fn body_bytes(&self) -> u64 {
        self.body_sent
    }

    /// Whether the head has been written (or buffered).
    pub fn is_started(&self) -> bool {
        self.state != RespState::Idle
    }

    /// Whether the response is complete.
    pub fn is_finished(&self) -> bool {
        self.state == RespState::Done
    }

    /// Close the connection after this response (call before [`ResponseWriter::start`]).
    pub fn set_close(&mut self) {
        self.close_requested = true;
    }

    /// Whether the connection closes after this response (known once started).
    pub fn will_close(&self) -> bool {
        !self.persist
    }

    /// Whether the connection can stay open after a response starting now.
    fn can_persist(&self) -> bool {
        if !self.req.keep_alive
            || self.close_requested
            || self.stop.is_some_and(Signal::is_set)
            || self.shared.body_failed.load(Ordering::Relaxed)
        {
            return false;
        }
        if self.shared.body_done.load(Ordering::Relaxed) {
            return true;
        }
        // Unread body: kept only if it can be drained (known, small, and the client is not
        // waiting for a 100 it will not get).
        !self.shared.continue_pending()
            && self.shared.body_remaining.load(Ordering::Relaxed) <= self.drain_limit
    }

    /// Buffer the status line and headers; `body` says how the body is framed (`None` for an
    /// empty body). 204 and 304 take `BodyKind::None` and get no `Content-Length`.
    pub fn start(
        &mut self,
        status: u16,
        headers: &[Header<'_>],
        body: BodyKind,
    ) -> Result<(), HttpError> {
        if self.state != RespState::Idle {
            return Err(HttpError::Usage("response already started"));
        }
        if !(200..=999).contains(&status) {
            return Err(HttpError::Usage("response status must be 200..=999"));
        }
        let bodiless = matches!(status, 204 | 304);
        if bodiless && body != BodyKind::None {
            return Err(HttpError::Usage("204 and 304 responses have no body"));
        }
        let mut persist = self.can_persist();
        let mut kind = body;
        self.out.clear();
        write::status_line(self.out, Version::Http11, status).map_err(usage)?;
        write::date(self.out, self.unix_time);
        match body {
            _ if bodiless => {}
            BodyKind::None => write::content_length(self.out, 0),
            BodyKind::Length(n) => write::content_length(self.out, n),
            // HTTP/1.0 has no chunked coding: the body runs to the close instead.
            BodyKind::Chunked if self.req.http10 => {
                kind = BodyKind::CloseDelimited;
                persist = false;
            }
            BodyKind::Chunked => self
                .out
                .extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
            BodyKind::CloseDelimited => persist = false,
        }
        if !persist {
            self.out.extend_from_slice(b"Connection: close\r\n");
        } else if self.req.http10 {
            self.out.extend_from_slice(b"Connection: keep-alive\r\n");
        }
        for h in headers {
            let framing = ["content-length", "transfer-encoding", "connection", "date"]
                .iter()
                .any(|n| h.name.eq_ignore_ascii_case(n));
            if framing {
                self.out.clear();
                return Err(HttpError::Usage(
                    "framing headers are written by the engine",
                ));
            }
            if let Err(e) = write::header(self.out, h.name, h.value) {
                self.out.clear();
                return Err(usage(e));
            }
        }
        write::end_head(self.out);
        self.persist = persist;
        self.status = status;
        self.shared.response_started.store(true, Ordering::Relaxed);
        self.state = match kind {
            _ if self.req.head_only || bodiless => RespState::Done,
            BodyKind::None | BodyKind::Length(0) => RespState::Done,
            BodyKind::Length(n) => RespState::Body { kind, remaining: n },
            BodyKind::Chunked | BodyKind::CloseDelimited => RespState::Body { kind, remaining: 0 },
        };
        Ok(())
    }

    /// Send body bytes (one chunk, for chunked bodies). Ignored for responses to `HEAD`.
    pub async fn write(&mut self, data: &[u8]) -> Result<(), HttpError> {
        if data.is_empty() && self.state != RespState::Idle {
            return Ok(());
        }
        let (kind, remaining) = match self.state {
            RespState::Body { kind, remaining } => (kind, remaining),
            RespState::Done if self.req.head_only => return Ok(()),
            RespState::Idle => return Err(HttpError::Usage("body written before start")),
            RespState::Done | RespState::Failed => {
                return Err(HttpError::Usage("body written after the response ended"));
            }
        };
        self.body_sent += data.len() as u64;
        match kind {
            BodyKind::Length(_) => {
                let Some(left) = remaining.checked_sub(data.len() as u64) else {
                    self.state = RespState::Failed;
                    return Err(HttpError::Usage("body longer than its Content-Length"));
                };
                self.state = RespState::Body {
                    kind,
                    remaining: left,
                };
                self.push(data).await?;
                if left == 0 {
                    self.state = RespState::Done;
                    self.flush().await?;
                }
            }
            BodyKind::Chunked => {
                write_chunk_header(self.out, data.len() as u64);
                self.push(data).await?;
                self.out.extend_from_slice(b"\r\n");
            }
            BodyKind::CloseDelimited | BodyKind::None => self.push(data).await?,
        }
        Ok(())
    }

    /// Send a response the HTTP client is reading (a backend's, in a proxy) as this response's
    /// body, returning the bytes relayed. Between two `Content-Length` bodies the bytes move
    /// inside the kernel where the streams allow ([`Stream::splice_from`]); otherwise, and for
    /// what is already buffered, they are copied as by [`ResponseWriter::write`]. Does not
    /// [`finish`](ResponseWriter::finish).
    pub async fn relay<T: Stream>(
        &mut self,
        body: &mut ResponseBody<'_, T>,
    ) -> Result<u64, RelayError> {
        let start = body.received();
        let (src, sink) = (RelayError::Source, RelayError::Sink);
        if matches!(
            self.state,
            RespState::Body {
                kind: BodyKind::Length(_),
                ..
            }
        ) && matches!(body.kind(), BodyKind::Length(_))
        {
            while let Some(chunk) = body.take_buffered().map_err(src)? {
                self.write(chunk).await.map_err(sink)?;
            }
            while let Some(left) = body.skippable() {
                let RespState::Body { kind, remaining } = self.state else {
                    let e = HttpError::Usage("relayed body longer than the response");
                    return Err(sink(e));
                };
                self.flush().await.map_err(sink)?;
                let moved = {
                    let busy = || sink(Shared::<S>::busy());
                    let mut io = self.shared.io.try_lock().ok_or_else(busy)?;
                    io.splice_from(body.stream(), left.min(remaining)).await
                };
                let moved = match moved {
                    // Not for these streams: copy the rest below.
                    None => break,
                    Some(Ok(0)) => Err(src(HttpError::UnexpectedEof)),
                    Some(Ok(n)) if n <= remaining => Ok(n),
                    Some(Ok(_)) => Err(sink(HttpError::Usage("splice moved more than asked"))),
                    Some(Err(e)) => Err(RelayError::spliced(e)),
                };
                let n = match moved {
                    Ok(n) => n,
                    Err(e) => {
                        // Some bytes may have been moved: neither side can continue.
                        self.state = RespState::Failed;
                        self.shared.broken.store(true, Ordering::Relaxed);
                        let _ = body.skipped(Err(e.clone().into_inner()));
                        return Err(e);
                    }
                };
                body.skipped(Ok(n)).map_err(src)?;
                self.body_sent += n;
                self.state = match remaining - n {
                    0 => RespState::Done,
                    remaining => RespState::Body { kind, remaining },
                };
            }
        }
        while let Some(chunk) = body.next_chunk().await.map_err(src)? {
            self.write(chunk).await.map_err(sink)?;
        }
        Ok(body.received() - start)
    }

    /// End the body (the last chunk for chunked bodies) and send what is buffered.
    pub async fn finish(&mut self) -> Result<(), HttpError> {
        self.finish_with_trailers(&[]).await
    }

    /// End a chunked body with trailer fields (ignored for other bodies).
    pub async fn finish_with_trailers(&mut self, trailers: &[Header<'_>]) -> Result<(), HttpError> {
        match self.state {
            RespState::Body {
                kind: BodyKind::Length(_),
                ..
            } => {
                self.state = RespState::Failed;
                return Err(HttpError::Usage("body shorter than its Content-Length"));
            }
            RespState::Body {
                kind: BodyKind::Chunked,
                ..
            } => write_last_chunk(self.out, trailers).map_err(usage)?,
            RespState::Body { .. } | RespState::Done => {}
            RespState::Idle => return Err(HttpError::Usage("response finished before start")),
            RespState::Failed => return Err(HttpError::Usage("response already failed")),
        }
        self.state = RespState::Done;
        self.flush().await
    }

    /// A whole response with a `Content-Length` body, in one write when it is small.
    pub async fn send(
        &mut self,
        status: u16,
        headers: &[Header<'_>],
        body: &[u8],
    ) -> Result<(), HttpError> {
        let kind = if matches!(status, 204 | 304) {
            BodyKind::None
        } else {
            BodyKind::Length(body.len() as u64)
        };
        self.start(status, headers, kind)?;
        if kind != BodyKind::None {
            self.write(body).await?;
        }
        self.finish().await
    }

    /// Send what is buffered.
    pub async fn flush(&mut self) -> Result<(), HttpError> {
        if self.out.is_empty() {
            return Ok(());
        }
        let mut io = self.shared.io.try_lock().ok_or_else(Shared::<S>::busy)?;
        let r = write_all(&mut *io, self.out).await;
        self.out.clear();
        if r.is_err() {
            self.state = RespState::Failed;
            self.shared.broken.store(true, Ordering::Relaxed);
        }
        r
    }

    /// Append to the buffer, or write it out and then `data` directly when too big to copy.
    async fn push(&mut self, data: &[u8]) -> Result<(), HttpError> {
        if self.out.len() + data.len() <= OUT_CAPACITY {
            self.out.extend_from_slice(data);
            return Ok(());
        }
        self.flush().await?;
        let mut io = self.shared.io.try_lock().ok_or_else(Shared::<S>::busy)?;
        let r = write_all(&mut *io, data).await;
        if r.is_err() {
            self.state = RespState::Failed;
            self.shared.broken.store(true, Ordering::Relaxed);
        }
        r
    }

    /// After the handler: complete a body that needs no more data, or give up on it.
    async fn settle(&mut self) {
        if let RespState::Body { kind, .. } = self.state {
            if matches!(kind, BodyKind::Chunked | BodyKind::CloseDelimited) {
                let _ = self.finish().await;
            } else {
                self.state = RespState::Failed;
            }
        }
        if self.flush().await.is_err() {
            self.state = RespState::Failed;
        }
    }
}

impl<S: Stream> ErrorType for ResponseWriter<'_, S> {
    type Error = HttpError;
}

impl<S: Stream> embedded_io_async::Write for ResponseWriter<'_, S> {
    async fn write(&mut self, buf: &[u8]) -> Result<usize, HttpError> {
        ResponseWriter::write(self, buf).await?;
        Ok(buf.len())
    }

    async fn flush(&mut self) -> Result<(), HttpError> {
        ResponseWriter::flush(self).await
    }
}

fn usage(_: S3Error) -> HttpError {
    HttpError::Usage("invalid status or header for a response")
}

/// What to do after one request.
#[derive(Debug)]
enum Next {
    /// Keep the connection; these buffer bytes (absolute) are the start of the next request.
    KeepAlive(Range<usize>),
    /// Close cleanly (shut down writing, discard late input).
    Close,
    /// Close at once: the transport is gone or the peer left.
    Drop,
    /// The head could not be read: answer this error, then close cleanly.
    Fail(S3Error),
}

/// What every request of one connection needs.
struct ConnCx<'a, C, H: ?Sized> {
    clock: &'a C,
    config: &'a ServerConfig,
    handler: &'a H,
    stop: Option<&'a Signal>,
    peer: Option<SocketAddr>,
}

/// Serve one connection until it closes; returns the number of requests answered.
///
/// `stop`, once set, makes the connection close after the current request (or at once if it
/// is idle).
pub async fn serve_connection<C, S, H>(
    clock: C,
    stream: S,
    config: &ServerConfig,
    handler: &H,
    stop: Option<&Signal>,
) -> u64
where
    C: Clock,
    S: Stream,
    H: Handler + ?Sized,
{
    serve_connection_from(clock, stream, None, config, handler, stop).await
}

/// [`serve_connection`] for a client at `peer` (what [`ResponseWriter::peer`] tells handlers).
pub async fn serve_connection_from<C, S, H>(
    clock: C,
    stream: S,
    peer: Option<SocketAddr>,
    config: &ServerConfig,
    handler: &H,
    stop: Option<&Signal>,
) -> u64
where
    C: Clock,
    S: Stream,
    H: Handler + ?Sized,
{
    let cx = ConnCx {
        clock: &clock,
        config,
        handler,
        stop,
        peer,
    };
    let mut buf = config.pool.get(config.read_buffer_len());
    let head_window = config.head_limits.max_head_len.clamp(1, buf.len());
    let timed = Timed::new(
        clock.clone(),
        stream,
        config.read_timeout,
        config.write_timeout,
    );
    let mut shared = Shared::new(timed);
    let mut out = Vec::with_capacity(OUT_CAPACITY);
    let mut decoder = ChunkedDecoder::new(config.chunked_limits);
    let mut parser = HeadParser::new(config.head_limits);
    let mut end = 0;
    let mut served = 0;
    // The first head is timed from the connection's start.
    let mut deadline = clock.now() + config.header_timeout;
    loop {
        let next = loop {
            if end > 0 {
                let mut hs = [EMPTY_HEADER; MAX_HEADERS];
                let (filled, spare) = buf.split_at_mut(end);
                let filled: &[u8] = filled;
                match parser.parse_request(filled, &mut hs) {
                    Ok(Status::Complete(head)) => {
                        served += 1;
                        let parts = Parts {
                            shared: &shared,
                            out: &mut out,
                            decoder: &mut decoder,
                        };
                        break exchange(&cx, parts, &head, filled, spare).await;
                    }
                    Ok(Status::Partial) => {}
                    Err(e) => break Next::Fail(e),
                }
            }
            let Some(room) = buf.get_mut(end..head_window).filter(|r| !r.is_empty()) else {
                // The parser refuses heads longer than the window before this can happen.
                break Next::Fail(S3Error::new(S3ErrorCode::RequestHeaderSectionTooLarge));
            };
            let io = shared.io.get_mut();
            let read = if end == 0 {
                // Nothing of the next request yet: idle (or the first request's wait), which
                // a shutdown may cut short.
                let limit = if served == 0 {
                    deadline.saturating_sub(clock.now())
                } else {
                    config.idle_timeout
                };
                if stop.is_some_and(Signal::is_set) {
                    break Next::Drop;
                }
                let first = race(io.inner_mut().read_send(room), wait(stop));
                match timeout(&clock, limit, first).await {
                    Ok(Either::Left(r)) => r.map_err(|e| e.kind()),
                    Ok(Either::Right(())) | Err(TimedOut) => break Next::Drop,
                }
            } else {
                io.read_until(deadline, room).await
            };
            match read {
                Ok(0) => break Next::Drop,
                Ok(n) => {
                    if end == 0 && served > 0 {
                        deadline = clock.now() + config.header_timeout;
                    }
                    end += n;
                }
                Err(ErrorKind::TimedOut) => {
                    break Next::Fail(S3Error::new(S3ErrorCode::RequestTimeout));
                }
                Err(_) => break Next::Drop,
            }
        };
        match next {
            Next::KeepAlive(rest) if rest.end <= buf.len() => {
                end = rest.len();
                buf.copy_within(rest, 0);
                deadline = clock.now() + config.header_timeout;
            }
            Next::KeepAlive(_) | Next::Close => break,
            Next::Drop => return served,
            Next::Fail(e) => {
                let req = ReqInfo {
                    head_only: false,
                    http10: false,
                    keep_alive: false,
                };
                let mut res =
                    ResponseWriter::new(&shared, &mut out, req, stop, 0, clock.unix_time());
                render(handler, None, &e, &mut res).await;
                if res.state == RespState::Failed {
                    return served;
                }
                break;
            }
        }
    }
    clean_close(&clock, shared.io.get_mut(), &mut buf, config.linger).await;
    served
}

/// The connection's reusable parts lent to one exchange.
struct Parts<'a, S> {
    shared: &'a Shared<S>,
    out: &'a mut Vec<u8>,
    decoder: &'a mut ChunkedDecoder,
}

/// One request: framing, handler, error rendering, drain; says what to do next.
async fn exchange<C, S, H>(
    cx: &ConnCx<'_, C, H>,
    parts: Parts<'_, Timed<C, S>>,
    head: &RequestHead<'_, '_>,
    filled: &[u8],
    spare: &mut [u8],
) -> Next
where
    C: Clock,
    S: Stream,
    H: Handler + ?Sized,
{
    let Parts {
        shared,
        out,
        decoder,
    } = parts;
    let config = cx.config;
    let pre = filled.get(head.len..).unwrap_or_default();
    let filled_len = filled.len();
    let mut info = ReqInfo {
        head_only: head.method == "HEAD",
        http10: head.version == Version::Http10,
        keep_alive: false,
    };
    let framing = request_framing(head).and_then(|f| match f.body {
        BodyKind::Length(n) if n > config.max_body_len => Err(S3Error::with_message(
            S3ErrorCode::EntityTooLarge,
            alloc::format!("body exceeds {} bytes", config.max_body_len),
        )),
        _ => Ok(f),
    });
    let framing = match framing {
        Ok(f) => f,
        Err(e) => {
            // The body cannot be delimited: answer, then close.
            shared.reset(false);
            let mut res = ResponseWriter::new(shared, out, info, cx.stop, 0, cx.clock.unix_time());
            res.peer = cx.peer;
            render(cx.handler, Some(head), &e, &mut res).await;
            return if res.state == RespState::Failed {
                Next::Drop
            } else {
                Next::Close
            };
        }
    };
    info.keep_alive = framing.keep_alive;
    let state = BodyState::new(framing.body, decoder, pre, spare, config.max_body_len);
    shared.reset(framing.expect_continue);
    shared.publish(&state);
    let mut body = BodyReader { state, shared };
    let mut res = ResponseWriter::new(
        shared,
        out,
        info,
        cx.stop,
        config.drain_limit,
        cx.clock.unix_time(),
    );
    res.peer = cx.peer;
    let result = cx.handler.handle(head, &mut body, &mut res).await;
    match result {
        Ok(()) if res.is_started() => res.settle().await,
        Ok(()) => {
            let e = S3Error::with_message(S3ErrorCode::InternalError, "handler sent no response");
            render(cx.handler, Some(head), &e, &mut res).await;
        }
        Err(e) if !res.is_started() && !shared.broken.load(Ordering::Relaxed) => {
            render(cx.handler, Some(head), &e, &mut res).await;
        }
        Err(_) => res.state = RespState::Failed,
    }
    if shared.broken.load(Ordering::Relaxed) {
        return Next::Drop;
    }
    let persist =
        res.persist && res.state == RespState::Done && !shared.body_failed.load(Ordering::Relaxed);
    if !persist {
        return Next::Close;
    }
    if !body.is_done() && (shared.continue_pending() || !body.drain(config.drain_limit).await) {
        return Next::Close;
    }
    let (src, r) = body.state.leftover();
    let base = match src {
        Src::Pre => head.len,
        Src::Spare => filled_len,
    };
    Next::KeepAlive(base + r.start..base + r.end)
}

/// Let the handler render `error`; on failure, give up on the response.
async fn render<S: Stream, H: Handler + ?Sized>(
    handler: &H,
    req: Option<&RequestHead<'_, '_>>,
    error: &S3Error,
    res: &mut ResponseWriter<'_, S>,
) {
    let rendered = handler.render_error(req, error, res).await;
    if rendered.is_err() || !res.is_started() {
        res.state = RespState::Failed;
        return;
    }
    res.settle().await;
}

/// Wait for `stop`, or forever without one.
async fn wait(stop: Option<&Signal>) {
    match stop {
        Some(s) => s.wait().await,
        None => core::future::pending().await,
    }
}

/// Close so that the peer reads the whole response: stop sending (FIN), then discard what it
/// still sends, bounded in time and bytes, instead of resetting a connection with unread input.
async fn clean_close<C: Clock, S: Stream>(
    clock: &C,
    io: &mut Timed<C, S>,
    buf: &mut [u8],
    linger: Duration,
) {
    if io.shutdown_write().await.is_err() {
        return;
    }
    let deadline = clock.now() + linger;
    let mut discarded = 0;
    while discarded < LINGER_BYTES {
        match io.read_until(deadline, buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => discarded += n,
        }
    }
}

/// Counters and controls shared by the accept loop, its connections and the handle.
#[derive(Debug, Default)]
struct ServerShared {
    stop: Signal,
    abort: Signal,
    done: Signal,
    accepting: AtomicBool,
    accepted: AtomicU64,
    active: AtomicUsize,
}

impl ServerShared {
    fn connection_ended(&self) {
        if self.active.fetch_sub(1, Ordering::SeqCst) == 1 && !self.accepting.load(Ordering::SeqCst)
        {
            self.done.set();
        }
    }
}

/// Decrements the live-connection count even if the connection task panics.
struct ActiveGuard(Arc<ServerShared>);

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        self.0.connection_ended();
    }
}

/// A running server: its address, counters, and shutdown.
#[derive(Debug, Clone)]
pub struct ServerHandle {
    local_addr: SocketAddr,
    shared: Arc<ServerShared>,
}

impl ServerHandle {
    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// Connections open now.
    pub fn active(&self) -> usize {
        self.shared.active.load(Ordering::SeqCst)
    }

    /// Graceful stop: no new connections; idle ones close now, busy ones after their request.
    pub fn shutdown(&self) {
        self.shared.stop.set();
    }

    /// Hard stop: also drop the connections still serving a request.
    pub fn abort(&self) {
        self.shared.stop.set();
        self.shared.abort.set();
    }

    /// Wait until the listener is closed and every connection has ended.
    pub async fn stopped(&self) {
        self.shared.done.wait().await;
    }

    /// Shut down, give busy connections `grace` to finish, then abort the rest; whether every
    /// connection finished within the grace period.
    pub async fn stop<C: Clock>(&self, clock: &C, grace: Duration) -> bool {
        self.shutdown();
        if timeout(clock, grace, self.stopped()).await.is_ok() {
            return true;
        }
        self.abort();
        self.stopped().await;
        false
    }
}

/// Bind `addr` and serve every connection with `handler` on `rt` until the handle stops it.
pub async fn serve<R, H>(
    rt: &R,
    addr: SocketAddr,
    config: ServerConfig,
    handler: Arc<H>,
) -> Result<ServerHandle, ErrorKind>
where
    R: Runtime,
    H: Handler + 'static,
{
    let listener = rt.bind(addr).await?;
    serve_listener(rt, listener, config, handler)
}

/// Serve every connection `listener` accepts (a TLS listener from an adapter, say) with
/// `handler` on `rt` until the handle stops it.
///
/// Each connection is established ([`Listener::establish`]: the TLS handshake) in its own
/// task, within [`ServerConfig::header_timeout`]; one that fails or times out is dropped.
pub fn serve_listener<R, L, H>(
    rt: &R,
    listener: L,
    config: ServerConfig,
    handler: Arc<H>,
) -> Result<ServerHandle, ErrorKind>
where
    R: Runtime,
    L: Listener,
    H: Handler + 'static,
{
    let local_addr = listener.local_addr()?;
    let shared = Arc::new(ServerShared::default());
    shared.accepting.store(true, Ordering::SeqCst);
    // Dropping the join handle detaches the loop; the handle controls it.
    drop(rt.spawn(accept_loop(
        rt.clone(),
        listener,
        config,
        handler,
        shared.clone(),
    )));
    Ok(ServerHandle { local_addr, shared })
}

async fn accept_loop<R: Runtime, L: Listener, H: Handler + 'static>(
    rt: R,
    listener: L,
    config: ServerConfig,
    handler: Arc<H>,
    shared: Arc<ServerShared>,
) {
    let config = Arc::new(config);
    while !shared.stop.is_set() {
        match race(listener.accept(), shared.stop.wait()).await {
            Either::Left(Ok((accepted, peer))) => {
                shared.accepted.fetch_add(1, Ordering::SeqCst);
                shared.active.fetch_add(1, Ordering::SeqCst);
                let guard = ActiveGuard(shared.clone());
                let (clock, config, handler) = (rt.clone(), config.clone(), handler.clone());
                drop(rt.spawn(async move {
                    let stop = &guard.0.stop;
                    let conn = async {
                        // Plain TCP is ready at once (no timer); a connection still in its
                        // handshake has no request yet, so a stop drops it.
                        let setup = timeout(&clock, config.header_timeout, L::establish(accepted));
                        if let Either::Left(Ok(Ok(stream))) = race(setup, stop.wait()).await {
                            let (config, handler) = (&*config, &*handler);
                            serve_connection_from(
                                clock.clone(),
                                stream,
                                Some(peer),
                                config,
                                handler,
                                Some(stop),
                            )
                            .await;
                        }
                    };
                    race(conn, guard.0.abort.wait()).await;
                    drop(guard);
                }));
            }
            // Out of descriptors or a connection reset before accept: back off briefly.
            Either::Left(Err(_)) => {
                let _ = race(rt.sleep(Duration::from_millis(10)), shared.stop.wait()).await;
            }
            Either::Right(()) => break,
        }
    }
    drop(listener);
    shared.accepting.store(false, Ordering::SeqCst);
    if shared.active.load(Ordering::SeqCst) == 0 {
        shared.done.set();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::body::response_framing;
    use crate::http::io::tests::Duplex;
    use crate::pool::PoolConfig;
    use crate::rt::tests::{TestClock, block_on};
    use alloc::string::String;
    use alloc::vec;

    fn config() -> ServerConfig {
        let pool = BufferPool::leak(PoolConfig {
            max_class_log2: 17,
            max_per_class: 2,
            max_retained_bytes: 1 << 20,
            shards: 1,
        });
        ServerConfig::new(pool)
    }

    /// Routes by target; every route exercises one part of the engine.
    #[derive(Default)]
    struct TestHandler {
        stop: Option<Arc<Signal>>,
        /// What `/counted` saw after its response: peer, status, body bytes.
        counted: spin::Mutex<Vec<(Option<SocketAddr>, u16, u64)>>,
    }

    impl Handler for TestHandler {
        async fn handle<S: Stream>(
            &self,
            req: &RequestHead<'_, '_>,
            body: &mut BodyReader<'_, S>,
            res: &mut ResponseWriter<'_, S>,
        ) -> Result<(), S3Error> {
            match req.target {
                "/echo" => {
                    let mut got = Vec::new();
                    while let Some(c) = body.next_chunk().await? {
                        got.extend_from_slice(c);
                    }
                    let mut hs = [EMPTY_HEADER; 4];
                    let trailer = body.trailers(&mut hs)?.first().map(|h| h.value.to_vec());
                    let trailer = trailer.unwrap_or_default();
                    let hs = [Header {
                        name: "X-Trailer",
                        value: &trailer,
                    }];
                    res.send(200, &hs, &got).await?;
                }
                "/read" => {
                    // Small copying reads through the embedded-io trait.
                    let mut got = Vec::new();
                    let mut buf = [0u8; 3];
                    loop {
                        let n = embedded_io_async::Read::read(body, &mut buf).await?;
                        if n == 0 {
                            break;
                        }
                        got.extend_from_slice(&buf[..n]);
                    }
                    res.send(200, &[], &got).await?;
                }
                "/reject" => res.send(403, &[], b"no").await?,
                "/ignore" => res.send(200, &[], b"ok").await?,
                "/chunked" => {
                    res.start(200, &[], BodyKind::Chunked)?;
                    res.write(b"hello").await?;
                    res.write(b" world").await?;
                    let t = [Header {
                        name: "X-T",
                        value: b"v",
                    }];
                    res.finish_with_trailers(&t).await?;
                }
                "/big" => {
                    res.start(200, &[], BodyKind::Length(40_000))?;
                    for _ in 0..4 {
                        res.write(&[b'x'; 10_000]).await?;
                    }
                }
                "/counted" => {
                    res.start(201, &[], BodyKind::Chunked)?;
                    res.write(b"hello").await?;
                    res.write(b" world").await?;
                    res.finish().await?;
                    let seen = (res.peer(), res.status(), res.body_bytes());
                    self.counted.lock().push(seen);
                }
                "/err" => return Err(S3Error::new(S3ErrorCode::NoSuchKey)),
                "/silent" => {}
                "/stopping" => {
                    if let Some(s) = &self.stop {
                        s.set();
                    }
                    res.send(200, &[], b"bye").await?;
                }
                "/short" => {
                    res.start(200, &[], BodyKind::Length(10))?;
                    res.write(b"12345").await?;
                }
                "/framing" => {
                    let hs = [Header {
                        name: "Content-Length",
                        value: b"3",
                    }];
                    res.send(200, &hs, b"abc").await?;
                }
                _ => res.send(404, &[], b"").await?,
            }
            Ok(())
        }
    }

    #[derive(Debug)]
    struct Resp {
        status: u16,
        headers: Vec<(String, Vec<u8>)>,
        body: Vec<u8>,
    }

    impl Resp {
        fn header(&self, name: &str) -> Option<&[u8]> {
            self.headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_slice())
        }

        fn closes(&self) -> bool {
            self.header("connection") == Some(b"close")
        }
    }

    /// Split what the server wrote into responses (`methods` say which answer a HEAD).
    fn responses(mut out: &[u8], methods: &[&str]) -> Vec<Resp> {
        let mut all = Vec::new();
        for method in methods.iter().chain(core::iter::repeat(&"GET")) {
            if out.is_empty() {
                break;
            }
            let mut hs = [EMPTY_HEADER; 32];
            let Ok(Status::Complete(h)) = HeadParser::default().parse_response(out, &mut hs) else {
                panic!("bad response head in {:?}", String::from_utf8_lossy(out));
            };
            let framing = response_framing(&h, method).unwrap();
            let headers = h
                .headers
                .iter()
                .map(|x| (String::from(x.name), x.value.to_vec()))
                .collect();
            let rest = &out[h.len..];
            let (body, used) = match framing.body {
                BodyKind::None => (Vec::new(), 0),
                BodyKind::Length(n) => {
                    let n = (n as usize).min(rest.len());
                    (rest[..n].to_vec(), n)
                }
                BodyKind::CloseDelimited => (rest.to_vec(), rest.len()),
                BodyKind::Chunked => {
                    let mut d = ChunkedDecoder::default();
                    let (mut body, mut at) = (Vec::new(), 0);
                    while !d.is_done() {
                        let s = d.decode_borrowed(&rest[at..]).unwrap();
                        body.extend_from_slice(s.data);
                        at += s.consumed;
                    }
                    (body, at)
                }
            };
            all.push(Resp {
                status: h.status,
                headers,
                body,
            });
            out = &rest[used..];
        }
        all
    }

    /// Serve `input` (read `read_size` bytes at a time) to its end; the requests answered,
    /// the responses and the raw writes.
    fn serve_bytes(
        input: &[u8],
        read_size: usize,
        config: &ServerConfig,
        methods: &[&str],
    ) -> (u64, Vec<Resp>, Duplex) {
        let io = Duplex::new(input, read_size);
        let clock = TestClock::auto();
        let served = block_on(serve_connection(
            clock,
            io.clone(),
            config,
            &TestHandler::default(),
            None,
        ));
        let out = io.written();
        (served, responses(&out, methods), io)
    }

    #[test]
    fn connection_future_is_send() {
        fn assert_send<T: Send>(_: &T) {}
        let cfg = config();
        let h = TestHandler::default();
        let f = serve_connection(TestClock::auto(), Duplex::default(), &cfg, &h, None);
        assert_send(&f);
    }

    #[test]
    fn keep_alive_and_pipelining_in_order() {
        let input = b"GET /ignore HTTP/1.1\r\nHost: a\r\n\r\nPUT /echo HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET /chunked HTTP/1.1\r\n\r\nPOST /read HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nWiki\r\n5\r\npedia\r\n0\r\n\r\n";
        for read_size in [0, 1, 7, 64] {
            let (served, rs, _) = serve_bytes(input, read_size, &config(), &[]);
            assert_eq!(served, 4, "read_size {read_size}");
            let got: Vec<_> = rs.iter().map(|r| (r.status, r.body.as_slice())).collect();
            assert_eq!(
                got,
                vec![
                    (200, &b"ok"[..]),
                    (200, b"hello"),
                    (200, b"hello world"),
                    (200, b"Wikipedia")
                ]
            );
            assert!(rs.iter().all(|r| !r.closes() && r.header("date").is_some()));
        }
    }

    #[test]
    fn response_writer_reports_peer_status_and_body_bytes() {
        let input = b"GET /counted HTTP/1.1\r\n\r\nHEAD /counted HTTP/1.1\r\n\r\n";
        let peer: SocketAddr = "192.0.2.7:4242".parse().unwrap();
        let h = TestHandler::default();
        let cfg = config();
        let io = Duplex::new(input, 0);
        let served = block_on(serve_connection_from(
            TestClock::auto(),
            io.clone(),
            Some(peer),
            &cfg,
            &h,
            None,
        ));
        assert_eq!(served, 2);
        let rs = responses(&io.written(), &["GET", "HEAD"]);
        assert_eq!(rs[0].body, b"hello world");
        // Framing (chunk sizes) is not counted; nothing is sent for HEAD.
        let seen = h.counted.lock().clone();
        assert_eq!(seen, vec![(Some(peer), 201, 11), (Some(peer), 201, 0)]);
        // Without a peer (plain serve_connection), none is reported.
        let h = TestHandler::default();
        block_on(serve_connection(
            TestClock::auto(),
            Duplex::new(b"GET /counted HTTP/1.1\r\n\r\n", 0),
            &cfg,
            &h,
            None,
        ));
        assert_eq!(h.counted.lock()[0].0, None);
    }

    #[test]
    fn small_responses_are_one_write() {
        let (_, rs, io) = serve_bytes(b"GET /ignore HTTP/1.1\r\n\r\n", 0, &config(), &[]);
        assert_eq!(rs.len(), 1);
        assert_eq!(io.0.lock().writes.len(), 1);
        let (_, rs, _) = serve_bytes(b"GET /big HTTP/1.1\r\n\r\n", 0, &config(), &[]);
        assert_eq!(rs[0].body.len(), 40_000);
    }

    #[test]
    fn continue_is_sent_when_the_body_is_first_read() {
        let head = b"PUT /echo HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n";
        let mut input = head.to_vec();
        input.extend_from_slice(b"hello");
        // Reads of exactly the head: the body is not buffered when the handler starts.
        let (served, _, io) = serve_bytes(&input, head.len(), &config(), &[]);
        assert_eq!(served, 1);
        let out = io.written();
        assert!(out.starts_with(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"));
        let rs = responses(&out[CONTINUE.len()..], &[]);
        assert_eq!(rs[0].body, b"hello");
        assert!(!rs[0].closes());
        // Body bytes that came without waiting (all, or the first two): no 100 at all.
        for read_size in [0, head.len() + 2] {
            let (_, rs, io) = serve_bytes(&input, read_size, &config(), &[]);
            assert!(
                io.written().starts_with(b"HTTP/1.1 200 OK\r\n"),
                "{read_size}"
            );
            assert_eq!(rs[0].body, b"hello");
        }
    }

    #[test]
    fn rejecting_without_reading_sends_no_continue_and_closes() {
        let head = b"PUT /reject HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n";
        let mut input = head.to_vec();
        input.extend_from_slice(b"helloGET /ignore HTTP/1.1\r\n\r\n");
        let (served, rs, io) = serve_bytes(&input, head.len(), &config(), &[]);
        assert_eq!(served, 1);
        assert_eq!(rs.len(), 1);
        assert_eq!(rs[0].status, 403);
        assert!(rs[0].closes());
        assert!(io.0.lock().shut, "closed cleanly with a FIN");
    }

    #[test]
    fn unread_bodies_are_drained_up_to_the_limit() {
        let input = b"PUT /ignore HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789GET /ignore HTTP/1.1\r\n\r\n";
        let (served, rs, _) = serve_bytes(input, 4, &config(), &[]);
        assert_eq!(served, 2);
        assert!(!rs[0].closes());
        let mut small = config();
        small.drain_limit = 4;
        let (served, rs, _) = serve_bytes(input, 4, &small, &[]);
        assert_eq!(served, 1);
        assert!(rs[0].closes());
        // Chunked bodies left unread are drained too (when the response starts after the
        // body has arrived the connection is kept).
        let chunked = b"PUT /ignore HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET /ignore HTTP/1.1\r\n\r\n";
        let (_, rs, _) = serve_bytes(chunked, 0, &config(), &[]);
        assert!(rs[0].closes(), "unknown remaining length: close");
    }

    #[test]
    fn chunked_body_with_trailers() {
        let input = b"PUT /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4;x=y\r\nWiki\r\n5\r\npedia\r\n0\r\nX-Checksum: abc\r\n\r\n";
        for read_size in [0, 1, 5] {
            let (_, rs, _) = serve_bytes(input, read_size, &config(), &[]);
            assert_eq!(rs[0].body, b"Wikipedia");
            assert_eq!(rs[0].header("x-trailer"), Some(&b"abc"[..]));
        }
    }

    #[test]
    fn chunked_responses_and_http10() {
        let (_, rs, _) = serve_bytes(b"GET /chunked HTTP/1.1\r\n\r\n", 0, &config(), &[]);
        assert_eq!(rs[0].header("transfer-encoding"), Some(&b"chunked"[..]));
        assert_eq!(rs[0].body, b"hello world");
        // HTTP/1.0 has no chunked coding: the body is close-delimited.
        let (served, rs, _) = serve_bytes(
            b"GET /chunked HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /ignore HTTP/1.0\r\n\r\n",
            0,
            &config(),
            &[],
        );
        assert_eq!(served, 1);
        assert!(rs[0].closes());
        assert_eq!(rs[0].header("transfer-encoding"), None);
        assert_eq!(rs[0].body, b"hello world");
        let (served, rs, _) = serve_bytes(
            b"GET /ignore HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /ignore HTTP/1.0\r\n\r\n",
            0,
            &config(),
            &[],
        );
        assert_eq!(served, 2);
        assert_eq!(rs[0].header("connection"), Some(&b"keep-alive"[..]));
        assert!(rs[1].closes());
    }

    #[test]
    fn head_requests_get_no_body() {
        let (served, rs, _) = serve_bytes(
            b"HEAD /big HTTP/1.1\r\n\r\nGET /ignore HTTP/1.1\r\n\r\n",
            0,
            &config(),
            &["HEAD"],
        );
        assert_eq!(served, 2);
        assert_eq!(rs[0].header("content-length"), Some(&b"40000"[..]));
        assert!(rs[0].body.is_empty());
        assert_eq!(rs[1].body, b"ok");
    }

    #[test]
    fn handler_errors_are_rendered_and_keep_the_connection() {
        let (served, rs, _) = serve_bytes(
            b"GET /err HTTP/1.1\r\n\r\nGET /silent HTTP/1.1\r\n\r\nGET /ignore HTTP/1.1\r\n\r\n",
            0,
            &config(),
            &[],
        );
        assert_eq!(served, 3);
        let got: Vec<_> = rs.iter().map(|r| r.status).collect();
        assert_eq!(got, vec![404, 500, 200]);
    }

    #[test]
    fn broken_responses_close_the_connection() {
        let (served, _, io) = serve_bytes(
            b"GET /short HTTP/1.1\r\n\r\nGET /ignore HTTP/1.1\r\n\r\n",
            0,
            &config(),
            &[],
        );
        assert_eq!(served, 1);
        let out = io.written();
        assert!(
            out.ends_with(b"\r\n\r\n12345"),
            "{:?}",
            String::from_utf8_lossy(&out)
        );
        // A handler passing its own framing header gets an error, rendered as a 500.
        let (_, rs, _) = serve_bytes(b"GET /framing HTTP/1.1\r\n\r\n", 0, &config(), &[]);
        assert_eq!(rs[0].status, 500);
        assert_eq!(rs[0].header("content-length"), Some(&b"0"[..]));
    }

    #[test]
    fn protocol_errors_answer_and_close() {
        let cases: &[(&[u8], u16)] = &[
            (b"GET / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400),
            (b"GET / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 400),
            (b"GET / HTTP/1.1\nHost: a\r\n\r\n", 400),
            (b"GET / HTTP/2.0\r\n\r\n", 400),
            (b"PUT /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),
            (b"PUT /echo HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n", 400),
        ];
        for (input, status) in cases {
            let mut input = input.to_vec();
            input.extend_from_slice(b"GET /ignore HTTP/1.1\r\n\r\n");
            let (_, rs, io) = serve_bytes(&input, 0, &config(), &[]);
            assert_eq!(rs.len(), 1, "{:?}", String::from_utf8_lossy(&input));
            assert_eq!(
                rs[0].status,
                *status,
                "{:?}",
                String::from_utf8_lossy(&input)
            );
            assert!(rs[0].closes());
            assert!(io.0.lock().shut);
        }
        let mut huge = b"GET / HTTP/1.1\r\n".to_vec();
        while huge.len() < 70_000 {
            huge.extend_from_slice(b"X-Pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
        }
        let (_, rs, _) = serve_bytes(&huge, 0, &config(), &[]);
        assert_eq!(rs[0].status, 431);
        assert!(rs[0].closes());
    }

    #[test]
    fn head_timeouts_close() {
        // Silent peer: closed without a response.
        let io = Duplex::new(b"", 0);
        io.0.lock().hang = true;
        let cfg = config();
        let served = block_on(serve_connection(
            TestClock::auto(),
            io.clone(),
            &cfg,
            &TestHandler::default(),
            None,
        ));
        assert_eq!(served, 0);
        assert!(io.written().is_empty());
        // Half a head, then silence: 400 RequestTimeout, then close.
        let io = Duplex::new(b"GET / HTTP/1.1\r\nHost:", 0);
        io.0.lock().hang = true;
        block_on(serve_connection(
            TestClock::auto(),
            io.clone(),
            &cfg,
            &TestHandler::default(),
            None,
        ));
        let rs = responses(&io.written(), &[]);
        assert_eq!(rs[0].status, 400);
        assert!(rs[0].closes());
        // A body that stops arriving: the handler's read times out.
        let io = Duplex::new(b"PUT /echo HTTP/1.1\r\nContent-Length: 9\r\n\r\nabc", 0);
        io.0.lock().hang = true;
        let served = block_on(serve_connection(
            TestClock::auto(),
            io.clone(),
            &cfg,
            &TestHandler::default(),
            None,
        ));
        assert_eq!(served, 1);
        let rs = responses(&io.written(), &[]);
        assert_eq!(rs[0].status, 400);
        assert!(rs[0].closes());
    }

    #[test]
    fn stop_closes_after_the_current_request() {
        let stop = Arc::new(Signal::new());
        let handler = TestHandler {
            stop: Some(stop.clone()),
            ..TestHandler::default()
        };
        let io = Duplex::new(
            b"GET /stopping HTTP/1.1\r\n\r\nGET /ignore HTTP/1.1\r\n\r\n",
            0,
        );
        let cfg = config();
        let served = block_on(serve_connection(
            TestClock::auto(),
            io.clone(),
            &cfg,
            &handler,
            Some(&*stop),
        ));
        assert_eq!(served, 1);
        let rs = responses(&io.written(), &[]);
        assert_eq!(rs[0].body, b"bye");
        assert!(rs[0].closes());
        // A connection with nothing buffered closes at once while stopping.
        let io = Duplex::new(b"", 0);
        io.0.lock().hang = true;
        let served = block_on(serve_connection(
            TestClock::auto(),
            io.clone(),
            &cfg,
            &handler,
            Some(&*stop),
        ));
        assert_eq!(served, 0);
        assert!(io.written().is_empty());
    }
}
