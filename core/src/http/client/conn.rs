//! One connection: write a request, read its response.

use alloc::vec::Vec;
use core::net::SocketAddr;
use core::time::Duration;

use embedded_io::{ErrorKind, ErrorType};
use httparse::{EMPTY_HEADER, Header};

use super::ClientConfig;
use crate::http::body::{BodyKind, response_framing};
use crate::http::chunked::{ChunkedDecoder, write_chunk_header, write_last_chunk};
use crate::http::error::{HttpError, ProtocolError, ProtocolErrorKind, io_error};
use crate::http::head::{HeadParser, ResponseHead, Status, Version};
use crate::http::incoming::BodyState;
use crate::http::timed::{Timed, write_all};
use crate::http::write;
use crate::pool::PooledBuf;
use crate::rt::{Clock, Stream};

/// Header field storage used while looking for the final response head.
const MAX_HEADERS: usize = 128;
/// Requests up to this size (head and body) go out in one write.
const OUT_CAPACITY: usize = 16 * 1024;

/// Where a connection is in its request/response cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
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
    pub(crate) io: Timed<C, S>,
    pub(crate) config: ClientConfig,
    pub(crate) peer: Option<SocketAddr>,
    /// Read buffer, held only while a request is in flight.
    pub(crate) buf: Option<PooledBuf<'static>>,
    /// Response bytes buffered at `buf[..end]`.
    pub(crate) end: usize,
    pub(crate) out: Vec<u8>,
    pub(crate) decoder: ChunkedDecoder,
    pub(crate) parser: HeadParser,
    pub(crate) phase: Phase,
    /// The request in flight is a `HEAD` (its response has no body).
    pub(crate) head_request: bool,
    /// Some byte of an answer to the request in flight has arrived.
    pub(crate) answered: bool,
    /// The request body was not (fully) sent: the connection cannot be reused.
    pub(crate) body_unsent: bool,
    pub(crate) requests: u64,
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

    /// Whether `error`, met by the request in flight, may only mean that the server closed this
    /// kept-alive connection while it sat idle: the connection served requests before and no
    /// byte of an answer arrived, then it ended or failed. Such a request is worth sending
    /// once more on a new connection (see `ClientPool::replace_stale`), if its body can be
    /// sent again.
    pub fn is_stale(&self, error: &HttpError) -> bool {
        self.requests > 1
            && !self.answered
            && matches!(error, HttpError::UnexpectedEof | HttpError::Io(_))
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
    pub(crate) fn release_buffer(&mut self) {
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

    pub(crate) async fn flush(&mut self) -> Result<(), HttpError> {
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
                        return Err(HttpError::Protocol(ProtocolError::new(
                            ProtocolErrorKind::Malformed,
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
                return Err(HttpError::Protocol(ProtocolError::new(
                    ProtocolErrorKind::HeadTooLarge,
                    "response head too large",
                )));
            };
            let n = match deadline {
                Some(d) => match self.io.read_until(d, room).await {
                    Err(ErrorKind::TimedOut) => return Ok(HeadEvent::TimedOut),
                    r => r.map_err(HttpError::Io)?,
                },
                None => Stream::read_send(&mut self.io, room)
                    .await
                    .map_err(io_error)?,
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
    pub(crate) conn: &'c mut ClientConn<C, S>,
    pub(crate) kind: BodyKind,
    pub(crate) remaining: u64,
    pub(crate) expect: bool,
    pub(crate) finished: bool,
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
                    return Err(e);
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
    pub(crate) state: BodyState<'a>,
    pub(crate) io: &'a mut T,
    pub(crate) phase: &'a mut Phase,
    pub(crate) end: &'a mut usize,
    pub(crate) reusable: bool,
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
    pub(crate) fn settle(&mut self) {
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
