//! The response as the handler writes it.

use alloc::vec::Vec;
use core::net::SocketAddr;
use core::sync::atomic::Ordering;

use embedded_io::ErrorType;
#[cfg(feature = "std")]
use embedded_io::{Error as _, ErrorKind};
use httparse::Header;

use super::{OUT_CAPACITY, Shared};
use crate::http::body::BodyKind;
use crate::http::chunked::{write_chunk_header, write_last_chunk};
use crate::http::error::HttpError;
#[cfg(feature = "std")]
use crate::http::error::io_error;
use crate::http::head::Version;
use crate::http::timed::write_all;
use crate::http::write;
use crate::rt::{Signal, Stream};

/// Where the response is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RespState {
    Idle,
    Body { kind: BodyKind, remaining: u64 },
    Done,
    Failed,
}

/// What the writer needs to know about the request it answers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReqInfo {
    pub(crate) head_only: bool,
    pub(crate) http10: bool,
    pub(crate) keep_alive: bool,
}

/// The response: status and headers, then a body with `Content-Length` or chunked.
///
/// The engine writes the framing headers (`Content-Length` / `Transfer-Encoding`), `Date`, and
/// `Connection` (`close` when the connection will close); the handler must not pass them.
/// The head is buffered and goes out with the first body bytes (one write for small
/// responses). Bodies of responses to `HEAD` are not sent.
#[derive(Debug)]
pub struct ResponseWriter<'c, S> {
    pub(crate) shared: &'c Shared<S>,
    pub(crate) out: &'c mut Vec<u8>,
    pub(crate) req: ReqInfo,
    pub(crate) stop: Option<&'c Signal>,
    pub(crate) drain_limit: u64,
    pub(crate) unix_time: i64,
    pub(crate) state: RespState,
    /// Keep the connection after this response (decided when it starts).
    pub(crate) persist: bool,
    pub(crate) close_requested: bool,
    /// The client's address, when the accept loop knows it.
    pub(crate) peer: Option<SocketAddr>,
    /// Whether the connection is TLS.
    pub(crate) secure: bool,
    /// Its TLS version, if TLS (`"1.2"`, `"1.3"`).
    pub(crate) tls_version: Option<&'static str>,
    /// The status once started (0 before).
    pub(crate) status: u16,
    /// Body bytes handed to [`ResponseWriter::write`] and sent (not counted for `HEAD`).
    pub(crate) body_sent: u64,
    /// Header lines added to whatever response starts ([`ResponseWriter::add_header`]).
    pub(crate) extra: Vec<u8>,
}

impl<'c, S: Stream> ResponseWriter<'c, S> {
    pub(crate) fn new(
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
            secure: false,
            tls_version: None,
            status: 0,
            body_sent: 0,
            extra: Vec::new(),
        }
    }

    /// Add `name: value` to the response, whichever starts (an operation's answer, an error
    /// rendered for it, a relayed one): for headers that depend on the request rather than on
    /// the operation, such as CORS's. Call before [`ResponseWriter::start`].
    pub fn add_header(&mut self, name: &str, value: &[u8]) -> Result<(), HttpError> {
        if self.state != RespState::Idle {
            return Err(HttpError::Usage("response already started"));
        }
        let mark = self.extra.len();
        write::header(&mut self.extra, name, value).map_err(|e| {
            self.extra.truncate(mark);
            usage(e)
        })
    }

    /// The client's address, if known (connections served by [`serve`] know it).
    pub fn peer(&self) -> Option<SocketAddr> {
        self.peer
    }

    /// Whether the connection is TLS.
    pub fn is_secure(&self) -> bool {
        self.secure
    }

    /// The connection's TLS version, if TLS (`"1.2"`, `"1.3"`): what `s3:TlsVersion` tells.
    pub fn tls_version(&self) -> Option<&'static str> {
        self.tls_version
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

    /// Keep the connection after this response only if at most `limit` bytes of an unread
    /// request body are left to discard (call before [`ResponseWriter::start`]); it can only
    /// lower the server's drain limit. For a client not worth reading a large body for (one
    /// that failed to authenticate, say): `0` closes whenever the body is unread.
    pub fn set_drain_limit(&mut self, limit: u64) {
        self.drain_limit = self.drain_limit.min(limit);
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
        // At once to its full size: the connection frees it while idle.
        self.out.reserve(OUT_CAPACITY);
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
        self.out.extend_from_slice(&self.extra);
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

    /// Whether [`ResponseWriter::send_file`] will send (a plain TCP connection on Linux), to
    /// ask before reading a body into memory.
    #[cfg(feature = "std")]
    pub fn can_send_file(&self) -> bool {
        self.shared
            .io
            .try_lock()
            .is_some_and(|io| io.can_send_file())
    }

    /// Send `len` body bytes of `file` from `offset` with `sendfile(2)`, the kernel moving them
    /// (a `Content-Length` or close-delimited body): the buffered head goes first, then the
    /// file's bytes, each `sendfile` bounded by the write timeout. `Ok(false)` when the
    /// connection cannot ([`ResponseWriter::can_send_file`]; a chunked body): nothing was
    /// sent, copy instead. Ignored for responses to `HEAD`. The bytes count in
    /// [`ResponseWriter::body_bytes`] as they go.
    #[cfg(feature = "std")]
    pub async fn send_file(
        &mut self,
        file: &std::fs::File,
        offset: u64,
        len: u64,
    ) -> Result<bool, HttpError> {
        let remaining = match self.state {
            _ if len == 0 && self.state != RespState::Idle => return Ok(true),
            RespState::Body {
                kind: BodyKind::Length(_),
                remaining,
            } => Some(remaining),
            RespState::Body {
                kind: BodyKind::CloseDelimited,
                ..
            } => None,
            RespState::Body { .. } => return Ok(false),
            RespState::Done if self.req.head_only => return Ok(true),
            RespState::Idle => return Err(HttpError::Usage("body written before start")),
            RespState::Done | RespState::Failed => {
                return Err(HttpError::Usage("body written after the response ended"));
            }
        };
        if !self.can_send_file() {
            return Ok(false);
        }
        if remaining.is_some_and(|r| r < len) {
            self.state = RespState::Failed;
            return Err(HttpError::Usage("body longer than its Content-Length"));
        }
        self.flush().await?;
        let mut io = self.shared.io.try_lock().ok_or_else(Shared::<S>::busy)?;
        let (mut offset, mut left) = (offset, len);
        while left > 0 {
            let r = match io.send_file(file, offset, left).await {
                Some(Ok(0)) => Err(HttpError::Io(ErrorKind::Other)),
                Some(Ok(n)) => Ok(n.min(left)),
                Some(Err(e)) => Err(io_error(e.kind())),
                None => Err(HttpError::Usage("the stream stopped sending files")),
            };
            let n = match r {
                Ok(n) => n,
                Err(e) => {
                    self.state = RespState::Failed;
                    self.shared.broken.store(true, Ordering::Relaxed);
                    return Err(e);
                }
            };
            self.body_sent += n;
            offset += n;
            left -= n;
        }
        drop(io);
        if let RespState::Body {
            kind: kind @ BodyKind::Length(_),
            remaining,
        } = self.state
        {
            let remaining = remaining - len;
            self.state = if remaining == 0 {
                RespState::Done
            } else {
                RespState::Body { kind, remaining }
            };
        }
        Ok(true)
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
    pub(crate) async fn settle(&mut self) {
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

fn usage(_: HttpError) -> HttpError {
    HttpError::Usage("invalid status or header for a response")
}
