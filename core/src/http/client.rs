//! HTTP/1.1 client: one request at a time over a kept-alive connection, and a per-address
//! pool of idle connections. Used by the proxy (towards storage nodes) and the load tester.
//!
//! A request is written with [`ClientConn::request`] (head buffered, body streamed by the
//! caller through [`RequestWriter`]), then [`ClientConn::response`] reads the head with the
//! incremental parser and hands out a [`ResponseBody`] reader. A connection is reusable only
//! once its response has been read to the end and both sides keep it alive.

use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;
use core::net::SocketAddr;
use core::time::Duration;

use embedded_io::{ErrorKind, ErrorType};
use httparse::{EMPTY_HEADER, Header};

use super::body::{BodyKind, response_framing};
use super::chunked::{ChunkedDecoder, ChunkedLimits, write_chunk_header, write_last_chunk};
use super::head::{HeadLimits, HeadParser, ResponseHead, Status, Version};
use super::io::{BodyState, HttpError, RelayError, Timed, write_all};
use super::server::BodyReader;
use super::write;
use crate::pool::{BufferPool, PooledBuf};
use crate::rt::{Clock, Connector, Runtime, Stream, Tcp, TimedOut, timeout};

/// Header field storage used while looking for the final response head.
const MAX_HEADERS: usize = 128;
/// Requests up to this size (head and body) go out in one write.
const OUT_CAPACITY: usize = 16 * 1024;

/// Limits and timeouts of the client.
#[derive(Debug, Clone, Copy)]
pub struct ClientConfig {
    /// Where read buffers come from (`2 * max_head_len` bytes while a request is in flight).
    pub pool: &'static BufferPool,
    /// Response head limits.
    pub head_limits: HeadLimits,
    /// Chunk line and trailer limits.
    pub chunked_limits: ChunkedLimits,
    /// Connecting (with a TLS handshake, if any) must complete within this.
    pub connect_timeout: Duration,
    /// Each read (response head or body) must complete within this.
    pub read_timeout: Duration,
    /// Each write of the request must complete within this.
    pub write_timeout: Duration,
    /// How long [`RequestWriter::wait_continue`] waits for `100 Continue`.
    pub continue_timeout: Duration,
    /// Idle pooled connections older than this are closed instead of reused.
    pub idle_timeout: Duration,
    /// Most idle connections kept per address.
    pub max_idle_per_addr: usize,
    /// Largest chunked response body accepted.
    pub max_body_len: u64,
}

impl ClientConfig {
    /// Defaults (5 s connect, 30 s I/O, 1 s continue, 20 s idle, 32 idle per address) with
    /// buffers from `pool`.
    pub fn new(pool: &'static BufferPool) -> Self {
        Self {
            pool,
            head_limits: HeadLimits::default(),
            chunked_limits: ChunkedLimits::default(),
            connect_timeout: Duration::from_secs(5),
            read_timeout: Duration::from_secs(30),
            write_timeout: Duration::from_secs(30),
            continue_timeout: Duration::from_secs(1),
            idle_timeout: Duration::from_secs(20),
            max_idle_per_addr: 32,
            max_body_len: u64::MAX,
        }
    }

    fn read_buffer_len(&self) -> usize {
        self.head_limits
            .max_head_len
            .saturating_mul(2)
            .max(8 * 1024)
    }
}

#[cfg(feature = "std")]
impl Default for ClientConfig {
    fn default() -> Self {
        Self::new(BufferPool::global())
    }
}

/// Where a connection is in its request/response cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Free for a new request.
    Ready,
    /// A request is being written.
    Writing,
    /// The request is written (or a final response came early); the response is next.
    AwaitingResponse,
    /// The response body is being read.
    ReadingBody,
    /// Unusable: an error, an unread body, or the server closes it.
    Broken,
}

/// What [`RequestWriter::wait_continue`] saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Continue {
    /// `100 Continue` (or no expectation was sent): send the body.
    Proceed,
    /// No answer within the continue timeout: send the body anyway (RFC 9110 section 10.1.1).
    TimedOut,
    /// A final response arrived: do not send the body; read it with [`ClientConn::response`].
    /// The connection will not be reused.
    Final,
}

/// One HTTP/1.1 connection to a server.
#[derive(Debug)]
pub struct ClientConn<C: Clock, S: Stream> {
    io: Timed<C, S>,
    config: ClientConfig,
    peer: Option<SocketAddr>,
    /// Read buffer, held only while a request is in flight.
    buf: Option<PooledBuf<'static>>,
    /// Response bytes buffered at `buf[..end]`.
    end: usize,
    out: Vec<u8>,
    decoder: ChunkedDecoder,
    parser: HeadParser,
    phase: Phase,
    /// The request in flight is a `HEAD` (its response has no body).
    head_request: bool,
    /// Some byte of an answer to the request in flight has arrived.
    answered: bool,
    /// The request body was not (fully) sent: the connection cannot be reused.
    body_unsent: bool,
    requests: u64,
}

impl<C: Clock, S: Stream> ClientConn<C, S> {
    /// Wrap a connected stream (`peer` is the pool key, if pooled).
    pub fn new(clock: C, stream: S, peer: Option<SocketAddr>, config: ClientConfig) -> Self {
        Self {
            io: Timed::new(clock, stream, config.read_timeout, config.write_timeout),
            config,
            peer,
            buf: None,
            end: 0,
            out: Vec::new(),
            decoder: ChunkedDecoder::new(config.chunked_limits),
            parser: HeadParser::new(config.head_limits),
            phase: Phase::Ready,
            head_request: false,
            answered: false,
            body_unsent: false,
            requests: 0,
        }
    }

    /// The address it is connected to, if known.
    pub fn peer(&self) -> Option<SocketAddr> {
        self.peer
    }

    /// Requests started on this connection (more than 1: it was reused; a failure on a reused
    /// connection may just mean the server closed it while idle).
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// Whether any byte of an answer to the request in flight has arrived. A request on a
    /// reused connection that fails before that may only have met a server that closed the
    /// connection while it was idle: worth once more on a new connection.
    pub fn answered(&self) -> bool {
        self.answered
    }

    /// Whether a new request may be sent: the last response was read to its end and both
    /// sides keep the connection alive.
    pub fn is_reusable(&self) -> bool {
        self.phase == Phase::Ready
    }

    /// The stream, with its timeouts.
    pub fn stream_mut(&mut self) -> &mut Timed<C, S> {
        &mut self.io
    }

    /// Give the read buffer back to the pool while idle.
    fn release_buffer(&mut self) {
        if self.end == 0 {
            self.buf = None;
        }
    }

    /// Start a request: buffer its head (sent with the first body bytes or at
    /// [`RequestWriter::finish`]). The engine writes `Content-Length` or
    /// `Transfer-Encoding: chunked` from `body`, and `Expect: 100-continue` when asked; the
    /// caller passes every other header (`Host` included) and no framing headers.
    pub fn request(
        &mut self,
        method: &str,
        target: &str,
        headers: &[Header<'_>],
        body: BodyKind,
        expect_continue: bool,
    ) -> Result<RequestWriter<'_, C, S>, HttpError> {
        if self.phase != Phase::Ready {
            return Err(HttpError::Usage("connection is busy or not reusable"));
        }
        if body == BodyKind::CloseDelimited {
            return Err(HttpError::Usage("requests cannot be close-delimited"));
        }
        let has_body =
            matches!(body, BodyKind::Chunked) || matches!(body, BodyKind::Length(n) if n > 0);
        self.out.clear();
        let written = self.write_head(method, target, headers, body, expect_continue && has_body);
        if let Err(e) = written {
            self.out.clear();
            return Err(e);
        }
        if self.buf.is_none() {
            self.buf = Some(self.config.pool.get(self.config.read_buffer_len()));
            self.end = 0;
        }
        self.phase = Phase::Writing;
        self.head_request = method == "HEAD";
        self.answered = false;
        self.body_unsent = false;
        self.requests += 1;
        let remaining = match body {
            BodyKind::Length(n) => n,
            _ => 0,
        };
        Ok(RequestWriter {
            conn: self,
            kind: body,
            remaining,
            expect: expect_continue && has_body,
            finished: false,
        })
    }

    fn write_head(
        &mut self,
        method: &str,
        target: &str,
        headers: &[Header<'_>],
        body: BodyKind,
        expect: bool,
    ) -> Result<(), HttpError> {
        let bad = |_| HttpError::Usage("invalid method, target or header for a request");
        write::request_line(&mut self.out, method, target, Version::Http11).map_err(bad)?;
        for h in headers {
            let framing = ["content-length", "transfer-encoding", "expect"]
                .iter()
                .any(|n| h.name.eq_ignore_ascii_case(n));
            if framing {
                return Err(HttpError::Usage(
                    "framing headers are written by the engine",
                ));
            }
            write::header(&mut self.out, h.name, h.value).map_err(bad)?;
        }
        match body {
            BodyKind::Length(n) => write::content_length(&mut self.out, n),
            BodyKind::Chunked => self
                .out
                .extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
            BodyKind::None | BodyKind::CloseDelimited => {}
        }
        if expect {
            self.out.extend_from_slice(b"Expect: 100-continue\r\n");
        }
        write::end_head(&mut self.out);
        Ok(())
    }

    /// A whole request with a `Content-Length` body (none if `body` is empty), sent in one
    /// write when small.
    pub async fn send_request(
        &mut self,
        method: &str,
        target: &str,
        headers: &[Header<'_>],
        body: &[u8],
    ) -> Result<(), HttpError> {
        let kind = if body.is_empty() {
            BodyKind::None
        } else {
            BodyKind::Length(body.len() as u64)
        };
        let mut req = self.request(method, target, headers, kind, false)?;
        req.write(body).await?;
        req.finish().await
    }

    async fn flush(&mut self) -> Result<(), HttpError> {
        if self.out.is_empty() {
            return Ok(());
        }
        let r = write_all(&mut self.io, &self.out).await;
        self.out.clear();
        if r.is_err() {
            self.phase = Phase::Broken;
        }
        r
    }

    async fn push(&mut self, data: &[u8]) -> Result<(), HttpError> {
        if self.out.len() + data.len() <= OUT_CAPACITY {
            self.out.extend_from_slice(data);
            return Ok(());
        }
        self.flush().await?;
        let r = write_all(&mut self.io, data).await;
        if r.is_err() {
            self.phase = Phase::Broken;
        }
        r
    }

    /// Read until a final response head is buffered (skipping 1xx), or until `100 Continue`
    /// if `until_continue`, or the deadline.
    async fn read_head(
        &mut self,
        until_continue: bool,
        deadline: Option<Duration>,
    ) -> Result<HeadEvent, HttpError> {
        let Some(buf) = self.buf.as_mut() else {
            return Err(HttpError::Usage("no request in flight"));
        };
        let window = self.config.head_limits.max_head_len.clamp(1, buf.len());
        loop {
            if self.end > 0 {
                let mut scratch = [EMPTY_HEADER; MAX_HEADERS];
                let filled = buf.get(..self.end).unwrap_or_default();
                match self.parser.parse_response(filled, &mut scratch)? {
                    Status::Complete(h) if h.status == 101 => {
                        return Err(HttpError::Protocol(crate::s3::S3Error::with_message(
                            crate::s3::S3ErrorCode::InvalidRequest,
                            "protocol upgrades are not supported",
                        )));
                    }
                    Status::Complete(h) if h.status < 200 => {
                        // Interim response: drop it from the buffer.
                        let (len, status) = (h.len, h.status);
                        buf.copy_within(len..self.end, 0);
                        self.end -= len;
                        if status == 100 && until_continue {
                            return Ok(HeadEvent::Continue);
                        }
                        continue;
                    }
                    Status::Complete(_) => return Ok(HeadEvent::Final),
                    Status::Partial => {}
                }
            }
            let Some(room) = buf.get_mut(self.end..window).filter(|r| !r.is_empty()) else {
                return Err(HttpError::Protocol(crate::s3::S3Error::new(
                    crate::s3::S3ErrorCode::RequestHeaderSectionTooLarge,
                )));
            };
            let n = match deadline {
                Some(d) => match self.io.read_until(d, room).await {
                    Err(ErrorKind::TimedOut) => return Ok(HeadEvent::TimedOut),
                    r => r.map_err(HttpError::Io)?,
                },
                None => Stream::read_send(&mut self.io, room)
                    .await
                    .map_err(super::io::io_error)?,
            };
            if n == 0 {
                return Err(HttpError::UnexpectedEof);
            }
            self.answered = true;
            self.end += n;
        }
    }

    /// Read the response head (skipping interim 1xx responses) into `headers` and return it
    /// with a reader for its body.
    pub async fn response<'a, 'h>(
        &'a mut self,
        headers: &'h mut [Header<'a>],
    ) -> Result<Response<'a, 'h, Timed<C, S>>, HttpError> {
        if self.phase != Phase::AwaitingResponse {
            return Err(HttpError::Usage("no finished request awaits a response"));
        }
        match self.read_head(false, None).await {
            Ok(_) => {}
            Err(e) => {
                self.phase = Phase::Broken;
                return Err(e);
            }
        }
        let Self {
            io,
            config,
            buf,
            end,
            decoder,
            parser,
            phase,
            head_request,
            body_unsent,
            ..
        } = self;
        let Some(buf) = buf.as_mut() else {
            return Err(HttpError::Usage("no request in flight"));
        };
        let (filled, spare) = buf.split_at_mut(*end);
        let filled: &'a [u8] = filled;
        // Parsed again with the caller's storage: the first parse only found where it ends.
        let head = match parser.parse_response(filled, headers) {
            Ok(Status::Complete(h)) => h,
            Ok(Status::Partial) => {
                *phase = Phase::Broken;
                return Err(HttpError::Usage("response head vanished"));
            }
            Err(e) => {
                *phase = Phase::Broken;
                return Err(e.into());
            }
        };
        let method = if *head_request { "HEAD" } else { "GET" };
        let framing = match response_framing(&head, method) {
            Ok(f) => f,
            Err(e) => {
                *phase = Phase::Broken;
                return Err(e.into());
            }
        };
        let pre = filled.get(head.len..).unwrap_or_default();
        let state = BodyState::new(framing.body, decoder, pre, spare, config.max_body_len);
        *phase = Phase::ReadingBody;
        let mut body = ResponseBody {
            state,
            io,
            phase,
            end,
            reusable: framing.keep_alive && !*body_unsent,
        };
        body.settle();
        Ok(Response { head, body })
    }
}

/// What [`ClientConn::read_head`] stopped at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HeadEvent {
    Continue,
    Final,
    TimedOut,
}

/// The body of a request being sent; see [`ClientConn::request`].
#[derive(Debug)]
pub struct RequestWriter<'c, C: Clock, S: Stream> {
    conn: &'c mut ClientConn<C, S>,
    kind: BodyKind,
    remaining: u64,
    expect: bool,
    finished: bool,
}

impl<C: Clock, S: Stream> RequestWriter<'_, C, S> {
    /// Send the head and wait for `100 Continue`, a final response, or the continue timeout.
    /// Without an expectation this returns [`Continue::Proceed`] at once.
    pub async fn wait_continue(&mut self) -> Result<Continue, HttpError> {
        if !self.expect || self.finished {
            return Ok(Continue::Proceed);
        }
        self.expect = false;
        self.conn.flush().await?;
        let deadline = self.conn.io.clock().now() + self.conn.config.continue_timeout;
        match self.conn.read_head(true, Some(deadline)).await {
            Ok(HeadEvent::Continue) => Ok(Continue::Proceed),
            Ok(HeadEvent::TimedOut) => Ok(Continue::TimedOut),
            Ok(HeadEvent::Final) => {
                self.finished = true;
                self.conn.body_unsent = true;
                self.conn.phase = Phase::AwaitingResponse;
                Ok(Continue::Final)
            }
            Err(e) => {
                self.conn.phase = Phase::Broken;
                Err(e)
            }
        }
    }

    /// Send body bytes (one chunk, for chunked bodies).
    pub async fn write(&mut self, data: &[u8]) -> Result<(), HttpError> {
        if self.finished {
            return Err(HttpError::Usage("request body written after it ended"));
        }
        if data.is_empty() {
            return Ok(());
        }
        match self.kind {
            BodyKind::Length(_) => {
                let Some(left) = self.remaining.checked_sub(data.len() as u64) else {
                    self.conn.phase = Phase::Broken;
                    return Err(HttpError::Usage("body longer than its Content-Length"));
                };
                self.remaining = left;
                self.conn.push(data).await
            }
            BodyKind::Chunked => {
                write_chunk_header(&mut self.conn.out, data.len() as u64);
                self.conn.push(data).await?;
                self.conn.out.extend_from_slice(b"\r\n");
                Ok(())
            }
            BodyKind::None | BodyKind::CloseDelimited => {
                Err(HttpError::Usage("request has no body"))
            }
        }
    }

    /// Send a request body the HTTP server is reading (a client's, in a proxy) as this
    /// request's body, returning the bytes relayed. Between two `Content-Length` bodies the
    /// bytes move inside the kernel where the streams allow ([`Stream::splice_from`]);
    /// otherwise, and for what is already buffered, they are copied as by
    /// [`RequestWriter::write`]. Does not [`finish`](RequestWriter::finish).
    pub async fn relay<T: Stream>(
        &mut self,
        body: &mut BodyReader<'_, T>,
    ) -> Result<u64, RelayError> {
        let start = body.received();
        let (src, sink) = (RelayError::Source, RelayError::Sink);
        if matches!(self.kind, BodyKind::Length(_))
            && matches!(body.kind(), BodyKind::Length(_))
            && !self.finished
        {
            while let Some(chunk) = body.take_buffered().map_err(src)? {
                self.write(chunk).await.map_err(sink)?;
            }
            while let Some(left) = body.splice_ready().await.map_err(src)? {
                self.conn.flush().await.map_err(sink)?;
                let max = left.min(self.remaining);
                if max == 0 {
                    self.conn.phase = Phase::Broken;
                    return Err(sink(HttpError::Usage(
                        "body longer than its Content-Length",
                    )));
                }
                match body.splice_to(&mut self.conn.io, max).await {
                    // Not for these streams: copy the rest below.
                    None => break,
                    Some(Ok(n)) => self.remaining -= n.min(self.remaining),
                    Some(Err(e)) => {
                        self.conn.phase = Phase::Broken;
                        return Err(e);
                    }
                }
            }
        }
        while let Some(chunk) = body.next_chunk().await.map_err(src)? {
            self.write(chunk).await.map_err(sink)?;
        }
        Ok(body.received() - start)
    }

    /// End the body and send what is buffered; the response is next.
    pub async fn finish(self) -> Result<(), HttpError> {
        self.finish_with_trailers(&[]).await
    }

    /// End a chunked body with trailer fields (ignored for other bodies).
    pub async fn finish_with_trailers(mut self, trailers: &[Header<'_>]) -> Result<(), HttpError> {
        if self.finished {
            // A final response arrived early: nothing more is sent.
            return Ok(());
        }
        self.finished = true;
        match self.kind {
            BodyKind::Length(_) if self.remaining > 0 => {
                self.conn.phase = Phase::Broken;
                return Err(HttpError::Usage("body shorter than its Content-Length"));
            }
            BodyKind::Chunked => {
                if let Err(e) = write_last_chunk(&mut self.conn.out, trailers) {
                    self.conn.phase = Phase::Broken;
                    return Err(e.into());
                }
            }
            _ => {}
        }
        self.conn.flush().await?;
        self.conn.phase = Phase::AwaitingResponse;
        Ok(())
    }
}

impl<C: Clock, S: Stream> Drop for RequestWriter<'_, C, S> {
    fn drop(&mut self) {
        // Abandoned mid-body: the server would read the next request as body bytes.
        if !self.finished && self.conn.phase == Phase::Writing {
            self.conn.phase = Phase::Broken;
        }
    }
}

/// A response: its head (borrowed from the connection buffer) and its body.
#[derive(Debug)]
pub struct Response<'a, 'h, T> {
    /// Status, reason, version and header fields.
    pub head: ResponseHead<'a, 'h>,
    /// The body reader (already done for `HEAD`, 1xx, 204 and 304).
    pub body: ResponseBody<'a, T>,
}

/// A response body: `Content-Length`, chunked or close-delimited, streamed from the connection.
#[derive(Debug)]
pub struct ResponseBody<'a, T> {
    state: BodyState<'a>,
    io: &'a mut T,
    phase: &'a mut Phase,
    end: &'a mut usize,
    reusable: bool,
}

impl<T: Stream> ResponseBody<'_, T> {
    /// How the body is framed.
    pub fn kind(&self) -> BodyKind {
        self.state.kind()
    }

    /// The `Content-Length`, if the body has one.
    pub fn content_length(&self) -> Option<u64> {
        match self.state.kind() {
            BodyKind::Length(n) => Some(n),
            _ => None,
        }
    }

    /// Whether the whole body has been read.
    pub fn is_done(&self) -> bool {
        self.state.is_done()
    }

    /// Body bytes received so far.
    pub fn received(&self) -> u64 {
        self.state.total()
    }

    /// The next run of body bytes, borrowed from the connection buffer; `None` at the end.
    pub async fn next_chunk(&mut self) -> Result<Option<&[u8]>, HttpError> {
        let r = self.next_range(usize::MAX).await?;
        Ok(r.map(|r| self.state.slice(r)))
    }

    /// Copy body bytes into `buf`; `0` at the end.
    pub async fn read(&mut self, buf: &mut [u8]) -> Result<usize, HttpError> {
        let Some(r) = self.next_range(buf.len()).await? else {
            return Ok(0);
        };
        let src = self.state.slice(r);
        let n = src.len();
        if let Some(dst) = buf.get_mut(..n) {
            dst.copy_from_slice(src);
        }
        Ok(n)
    }

    /// Read and discard the rest of the body (so the connection can be reused); the bytes
    /// discarded.
    pub async fn discard(&mut self) -> Result<u64, HttpError> {
        let start = self.state.total();
        while self.next_range(usize::MAX).await?.is_some() {}
        Ok(self.state.total() - start)
    }

    /// The trailer fields of a chunked body (empty until it is done, or if there were none).
    pub fn trailers<'s, 'h>(
        &'s self,
        storage: &'h mut [Header<'s>],
    ) -> Result<&'h [Header<'s>], HttpError> {
        self.state.trailers(storage)
    }

    /// Body bytes already buffered (no I/O); `None` when more must be read or it is done.
    pub(crate) fn take_buffered(&mut self) -> Result<Option<&[u8]>, HttpError> {
        let r = self.state.take(usize::MAX);
        if r.is_err() {
            *self.phase = Phase::Broken;
        } else {
            self.settle();
        }
        Ok(r?.map(|r| self.state.slice(r)))
    }

    /// `Length` bodies with nothing buffered: bytes still to come (to move past this reader
    /// with [`ResponseBody::skipped`]); `None` otherwise.
    pub(crate) fn skippable(&self) -> Option<u64> {
        self.state
            .can_skip()
            .then(|| self.state.remaining())
            .filter(|&n| n > 0)
    }

    /// The stream the body comes from.
    pub(crate) fn stream(&mut self) -> &mut T {
        self.io
    }

    /// Account for `n` body bytes moved from the stream by someone else, or for the failure
    /// of that move (`Err`: the connection cannot be reused).
    pub(crate) fn skipped(&mut self, moved: Result<u64, HttpError>) -> Result<(), HttpError> {
        let r = moved.and_then(|n| self.state.skip(n));
        if r.is_err() {
            *self.phase = Phase::Broken;
        } else {
            self.settle();
        }
        r
    }

    async fn next_range(
        &mut self,
        max: usize,
    ) -> Result<Option<core::ops::Range<usize>>, HttpError> {
        let r = self.state.next(self.io, max).await;
        if r.is_err() {
            *self.phase = Phase::Broken;
        } else {
            self.settle();
        }
        r
    }

    /// Once the body is done, free the connection for the next request (or not).
    fn settle(&mut self) {
        if *self.phase != Phase::ReadingBody || !self.state.is_done() {
            return;
        }
        // Bytes after a response we did not ask for: the stream is out of sync.
        let (_, rest) = self.state.leftover();
        if self.reusable && rest.is_empty() {
            *self.phase = Phase::Ready;
            *self.end = 0;
        } else {
            *self.phase = Phase::Broken;
        }
    }
}

impl<T: Stream> ErrorType for ResponseBody<'_, T> {
    type Error = HttpError;
}

impl<T: Stream> embedded_io_async::Read for ResponseBody<'_, T> {
    async fn read(&mut self, buf: &mut [u8]) -> Result<usize, HttpError> {
        ResponseBody::read(self, buf).await
    }
}

/// Connect to `addr` within the configured connect timeout.
pub async fn connect<R: Runtime>(
    rt: &R,
    addr: SocketAddr,
    config: ClientConfig,
) -> Result<ClientConn<R, R::Stream>, HttpError> {
    connect_with(rt, &Tcp, addr, config).await
}

/// Connect to `addr` with `connector` (TLS, say) within the configured connect timeout.
pub async fn connect_with<R: Runtime, K: Connector<R>>(
    rt: &R,
    connector: &K,
    addr: SocketAddr,
    config: ClientConfig,
) -> Result<ClientConn<R, R::Stream>, HttpError> {
    let stream = match timeout(rt, config.connect_timeout, connector.connect(rt, addr)).await {
        Ok(r) => r.map_err(HttpError::Io)?,
        Err(TimedOut) => return Err(HttpError::TimedOut),
    };
    Ok(ClientConn::new(rt.clone(), stream, Some(addr), config))
}

/// Idle connections of one address, oldest first, with the time each went idle.
type IdleQueue<R> = VecDeque<(Duration, ClientConn<R, <R as Runtime>::Stream>)>;

/// Idle keep-alive connections per address, bounded and expiring.
///
/// [`ClientPool::get`] reuses the most recently idle connection that has not expired (or
/// connects with its [`Connector`], plain TCP by default); [`ClientPool::put`] keeps a
/// connection only if it is reusable.
pub struct ClientPool<R: Runtime, K = Tcp> {
    rt: R,
    connector: K,
    config: ClientConfig,
    idle: spin::Mutex<BTreeMap<SocketAddr, IdleQueue<R>>>,
}

impl<R: Runtime, K: Connector<R>> core::fmt::Debug for ClientPool<R, K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ClientPool")
            .field("config", &self.config)
            .field("idle", &self.idle_count())
            .finish()
    }
}

impl<R: Runtime> ClientPool<R> {
    /// An empty pool connecting with `rt` over plain TCP.
    pub fn new(rt: R, config: ClientConfig) -> Self {
        Self::with_connector(rt, Tcp, config)
    }
}

impl<R: Runtime, K: Connector<R>> ClientPool<R, K> {
    /// An empty pool opening connections with `connector`.
    pub fn with_connector(rt: R, connector: K, config: ClientConfig) -> Self {
        Self {
            rt,
            connector,
            config,
            idle: spin::Mutex::new(BTreeMap::new()),
        }
    }

    /// The runtime connections are made with.
    pub fn runtime(&self) -> &R {
        &self.rt
    }

    /// The configuration new connections get.
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// A new connection to `addr`, never an idle one (to retry on after a kept-alive connection
    /// turned out closed).
    pub async fn connect(&self, addr: SocketAddr) -> Result<ClientConn<R, R::Stream>, HttpError> {
        connect_with(&self.rt, &self.connector, addr, self.config).await
    }

    /// A connection to `addr`: an idle one if any is fresh enough, else a new one.
    pub async fn get(&self, addr: SocketAddr) -> Result<ClientConn<R, R::Stream>, HttpError> {
        if let Some(conn) = self.take_idle(addr) {
            return Ok(conn);
        }
        self.connect(addr).await
    }

    fn take_idle(&self, addr: SocketAddr) -> Option<ClientConn<R, R::Stream>> {
        let now = self.rt.now();
        let mut expired = Vec::new();
        let conn = {
            let mut idle = self.idle.lock();
            let queue = idle.get_mut(&addr)?;
            while queue
                .front()
                .is_some_and(|(since, _)| now.saturating_sub(*since) >= self.config.idle_timeout)
            {
                expired.extend(queue.pop_front());
            }
            // The empty queue stays: re-creating it on every put would allocate per request.
            queue.pop_back().map(|(_, c)| c)
        };
        // Sockets are closed outside the lock.
        drop(expired);
        conn
    }

    /// Return a connection after use; kept only if reusable and there is room.
    pub fn put(&self, mut conn: ClientConn<R, R::Stream>) {
        let Some(addr) = conn.peer().filter(|_| conn.is_reusable()) else {
            return;
        };
        if self.config.max_idle_per_addr == 0 {
            return;
        }
        conn.release_buffer();
        let now = self.rt.now();
        let evicted = {
            let mut idle = self.idle.lock();
            let queue = idle.entry(addr).or_default();
            queue.push_back((now, conn));
            if queue.len() > self.config.max_idle_per_addr {
                queue.pop_front()
            } else {
                None
            }
        };
        drop(evicted);
    }

    /// Idle connections held now, over all addresses.
    pub fn idle_count(&self) -> usize {
        self.idle.lock().values().map(VecDeque::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::io::tests::Duplex;
    use crate::pool::PoolConfig;
    use crate::rt::Listener;
    use crate::rt::tests::{TestClock, block_on};
    use alloc::string::String;
    use alloc::sync::Arc;
    use core::future::Future;
    use core::sync::atomic::{AtomicUsize, Ordering};

    fn config() -> ClientConfig {
        let pool = BufferPool::leak(PoolConfig {
            max_class_log2: 17,
            max_per_class: 2,
            max_retained_bytes: 1 << 20,
            shards: 1,
        });
        ClientConfig::new(pool)
    }

    fn conn(input: &[u8], read_size: usize) -> (ClientConn<TestClock, Duplex>, Duplex) {
        replying(&[], input, read_size)
    }

    /// A connection whose peer has `input` ready and answers each write with a reply.
    fn replying(
        replies: &[&[u8]],
        input: &[u8],
        read_size: usize,
    ) -> (ClientConn<TestClock, Duplex>, Duplex) {
        let io = Duplex::replying(replies, read_size);
        io.0.lock().input.extend(input);
        let c = ClientConn::new(TestClock::auto(), io.clone(), None, config());
        (c, io)
    }

    /// Read a whole response: status, body, first trailer value.
    async fn read_response<C: Clock, S: Stream>(
        c: &mut ClientConn<C, S>,
    ) -> Result<(u16, Vec<u8>, Option<Vec<u8>>), HttpError> {
        let mut hs = [EMPTY_HEADER; 16];
        let mut r = c.response(&mut hs).await?;
        let mut body = Vec::new();
        while let Some(chunk) = r.body.next_chunk().await? {
            body.extend_from_slice(chunk);
        }
        let mut ts = [EMPTY_HEADER; 4];
        let trailer = r.body.trailers(&mut ts)?.first().map(|h| h.value.to_vec());
        Ok((r.head.status, body, trailer))
    }

    const OK5: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";

    #[test]
    fn keep_alive_reuse_and_request_bytes() {
        let chunked =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-S: 1\r\n\r\n";
        for read_size in [0, 1, 6] {
            let (mut c, io) = replying(&[OK5, chunked], b"", read_size);
            let host = [Header {
                name: "Host",
                value: b"a",
            }];
            block_on(async {
                c.send_request("PUT", "/b/k", &host, b"data").await.unwrap();
                assert!(!c.is_reusable());
                let got = read_response(&mut c).await.unwrap();
                assert_eq!(got, (200, b"hello".to_vec(), None));
                assert!(c.is_reusable());
                c.send_request("GET", "/b/k", &host, b"").await.unwrap();
                let got = read_response(&mut c).await.unwrap();
                assert_eq!(got, (200, b"abc".to_vec(), Some(b"1".to_vec())));
                assert!(c.is_reusable());
            });
            assert_eq!(c.requests(), 2);
            let writes = io.0.lock().writes.clone();
            assert_eq!(writes.len(), 2, "one write per small request");
            assert_eq!(
                writes[0],
                b"PUT /b/k HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\ndata"
            );
            assert_eq!(writes[1], b"GET /b/k HTTP/1.1\r\nHost: a\r\n\r\n");
        }
    }

    #[test]
    fn bodiless_and_interim_responses() {
        let (mut c, _) = replying(
            &[
                b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n",
                b"HTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
                b"HTTP/1.1 304 Not Modified\r\nContent-Length: 3\r\n\r\n",
            ],
            b"",
            0,
        );
        block_on(async {
            c.send_request("HEAD", "/", &[], b"").await.unwrap();
            let got = read_response(&mut c).await.unwrap();
            assert_eq!((got.0, got.1.len()), (200, 0));
            c.send_request("GET", "/", &[], b"").await.unwrap();
            assert_eq!(read_response(&mut c).await.unwrap().0, 204);
            c.send_request("GET", "/", &[], b"").await.unwrap();
            assert_eq!(read_response(&mut c).await.unwrap().0, 304);
            assert!(c.is_reusable());
        });
    }

    #[test]
    fn what_makes_a_connection_unusable() {
        block_on(async {
            // Close-delimited: read to EOF, then gone.
            let (mut c, _) = conn(b"HTTP/1.1 200 OK\r\n\r\nall of it", 3);
            c.send_request("GET", "/", &[], b"").await.unwrap();
            let got = read_response(&mut c).await.unwrap();
            assert_eq!(got.1, b"all of it");
            assert!(!c.is_reusable());
            // Connection: close.
            let (mut c, _) = conn(
                b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
                0,
            );
            c.send_request("GET", "/", &[], b"").await.unwrap();
            read_response(&mut c).await.unwrap();
            assert!(!c.is_reusable());
            // Body not read to the end.
            let (mut c, _) = conn(OK5, 0);
            c.send_request("GET", "/", &[], b"").await.unwrap();
            {
                let mut hs = [EMPTY_HEADER; 4];
                let r = c.response(&mut hs).await.unwrap();
                assert_eq!(r.body.content_length(), Some(5));
            }
            assert!(!c.is_reusable());
            assert!(c.request("GET", "/", &[], BodyKind::None, false).is_err());
            // Request body abandoned half-way.
            let (mut c, _) = conn(OK5, 0);
            let mut w = c
                .request("PUT", "/", &[], BodyKind::Length(10), false)
                .unwrap();
            w.write(b"12345").await.unwrap();
            drop(w);
            assert!(!c.is_reusable());
            // Bytes after the response that no request asked for: out of sync.
            let (mut c, _) = replying(&[&[OK5, OK5].concat()], b"", 0);
            c.send_request("GET", "/", &[], b"").await.unwrap();
            assert_eq!(read_response(&mut c).await.unwrap().1, b"hello");
            assert!(!c.is_reusable());
            // Truncated response body.
            let (mut c, _) = conn(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc", 0);
            c.send_request("GET", "/", &[], b"").await.unwrap();
            assert_eq!(read_response(&mut c).await, Err(HttpError::UnexpectedEof));
            assert!(!c.is_reusable());
        });
    }

    #[test]
    fn malformed_responses_are_errors() {
        for input in [
            &b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n",
            b"HTTP/1.1 101 Switching Protocols\r\n\r\n",
        ] {
            let (mut c, _) = conn(input, 0);
            let r = block_on(async {
                c.send_request("GET", "/", &[], b"").await.unwrap();
                read_response(&mut c).await
            });
            assert!(
                matches!(r, Err(HttpError::Protocol(_))),
                "{:?}: {r:?}",
                String::from_utf8_lossy(input)
            );
            assert!(!c.is_reusable());
        }
    }

    #[test]
    fn continue_then_body() {
        let input = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        let (mut c, io) = conn(input, 0);
        block_on(async {
            let mut w = c
                .request("PUT", "/k", &[], BodyKind::Chunked, true)
                .unwrap();
            assert_eq!(w.wait_continue().await.unwrap(), Continue::Proceed);
            w.write(b"Wiki").await.unwrap();
            w.write(b"pedia").await.unwrap();
            let t = [Header {
                name: "X-Sum",
                value: b"9",
            }];
            w.finish_with_trailers(&t).await.unwrap();
            assert_eq!(read_response(&mut c).await.unwrap().0, 200);
            assert!(c.is_reusable());
        });
        let writes = io.0.lock().writes.clone();
        assert_eq!(
            writes[0],
            b"PUT /k HTTP/1.1\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n"
        );
        assert_eq!(
            writes[1..].concat(),
            b"4\r\nWiki\r\n5\r\npedia\r\n0\r\nX-Sum: 9\r\n\r\n"
        );
    }

    #[test]
    fn early_final_response_skips_the_body() {
        let (mut c, io) = conn(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 2\r\n\r\nno", 0);
        block_on(async {
            let mut w = c
                .request("PUT", "/k", &[], BodyKind::Length(5), true)
                .unwrap();
            assert_eq!(w.wait_continue().await.unwrap(), Continue::Final);
            assert!(w.write(b"hello").await.is_err());
            w.finish().await.unwrap();
            let got = read_response(&mut c).await.unwrap();
            assert_eq!((got.0, got.1), (403, b"no".to_vec()));
            assert!(!c.is_reusable(), "the server may still expect the body");
        });
        assert!(!io.written().ends_with(b"hello"));
    }

    #[test]
    fn continue_timeout_proceeds() {
        let (mut c, io) = conn(b"", 0);
        io.0.lock().hang = true;
        block_on(async {
            let mut w = c
                .request("PUT", "/k", &[], BodyKind::Length(2), true)
                .unwrap();
            assert_eq!(w.wait_continue().await.unwrap(), Continue::TimedOut);
            w.write(b"ok").await.unwrap();
            w.finish().await.unwrap();
        });
        assert!(io.written().ends_with(b"\r\n\r\nok"));
    }

    #[test]
    fn request_misuse_is_refused() {
        let (mut c, _) = conn(b"", 0);
        let cl = [Header {
            name: "content-length",
            value: b"1",
        }];
        assert!(c.request("GET", "/", &cl, BodyKind::None, false).is_err());
        assert!(c.request("GET", "/ x", &[], BodyKind::None, false).is_err());
        assert!(
            c.request("GET", "/", &[], BodyKind::CloseDelimited, false)
                .is_err()
        );
        assert!(c.is_reusable());
        block_on(async {
            let mut w = c
                .request("PUT", "/", &[], BodyKind::Length(2), false)
                .unwrap();
            assert!(w.write(b"abc").await.is_err());
        });
        assert!(!c.is_reusable());
    }

    /// A runtime whose connections are in-memory peers that answer `OK5` to each request.
    #[derive(Debug, Clone, Default)]
    struct TestRt {
        clock: TestClock,
        connects: Arc<AtomicUsize>,
    }

    #[derive(Debug)]
    struct NoListener;

    impl Listener for NoListener {
        type Stream = Duplex;
        type Accepted = Duplex;
        async fn accept(&self) -> Result<(Duplex, SocketAddr), ErrorKind> {
            Err(ErrorKind::Unsupported)
        }
        async fn establish(accepted: Duplex) -> Result<Duplex, ErrorKind> {
            Ok(accepted)
        }
        fn local_addr(&self) -> Result<SocketAddr, ErrorKind> {
            Err(ErrorKind::Unsupported)
        }
    }

    impl Clock for TestRt {
        fn now(&self) -> Duration {
            self.clock.now()
        }
        fn unix_time(&self) -> i64 {
            self.clock.unix_time()
        }
        fn sleep(&self, d: Duration) -> impl Future<Output = ()> + Send + 'static {
            self.clock.sleep(d)
        }
    }

    impl Runtime for TestRt {
        type Stream = Duplex;
        type Listener = NoListener;
        async fn connect(&self, _: SocketAddr) -> Result<Duplex, ErrorKind> {
            self.connects.fetch_add(1, Ordering::SeqCst);
            Ok(Duplex::replying(&[OK5; 4], 0))
        }
        async fn bind(&self, _: SocketAddr) -> Result<NoListener, ErrorKind> {
            Err(ErrorKind::Unsupported)
        }
        fn unblock<T, F>(&self, f: F) -> impl Future<Output = T> + Send + 'static
        where
            F: FnOnce() -> T + Send + 'static,
            T: Send + 'static,
        {
            core::future::ready(f())
        }
        fn spawn<T, F>(&self, future: F) -> impl Future<Output = T> + Send + 'static
        where
            F: Future<Output = T> + Send + 'static,
            T: Send + 'static,
        {
            future
        }
    }

    #[test]
    fn pool_reuses_bounds_and_expires() {
        let rt = TestRt::default();
        let mut cfg = config();
        cfg.max_idle_per_addr = 2;
        let pool = ClientPool::new(rt.clone(), cfg);
        let a: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:2".parse().unwrap();
        let used = |addr| {
            block_on(async {
                let mut c = pool.get(addr).await.unwrap();
                c.send_request("GET", "/", &[], b"").await.unwrap();
                read_response(&mut c).await.unwrap();
                c
            })
        };
        let c = used(a);
        assert_eq!(rt.connects.load(Ordering::SeqCst), 1);
        pool.put(c);
        assert_eq!(pool.idle_count(), 1);
        let c = used(a);
        assert_eq!((c.requests(), rt.connects.load(Ordering::SeqCst)), (2, 1));
        pool.put(c);
        // Another address gets its own connection.
        pool.put(used(b));
        assert_eq!(rt.connects.load(Ordering::SeqCst), 2);
        // At most two idle per address.
        let extra: Vec<_> = (0..3).map(|_| used(a)).collect();
        for c in extra {
            pool.put(c);
        }
        assert_eq!(pool.idle_count(), 3);
        // A connection whose response was not read is not kept.
        let c = block_on(async {
            let mut c = pool.get(b).await.unwrap();
            c.send_request("GET", "/", &[], b"").await.unwrap();
            c
        });
        pool.put(c);
        assert_eq!(pool.idle_count(), 2);
        // Idle past the timeout: closed, not reused.
        rt.clock.advance(cfg.idle_timeout);
        let before = rt.connects.load(Ordering::SeqCst);
        let c = used(a);
        assert_eq!(c.requests(), 1);
        assert_eq!(rt.connects.load(Ordering::SeqCst), before + 1);
        assert_eq!(pool.idle_count(), 0);
    }
}
