//! Pieces shared by the server and client engines: the error type, a stream with per-operation
//! timeouts, and the incremental body reader both sides build on.
//!
//! Body bytes are read into the spare part of the connection's pooled buffer and handed out as
//! slices of it (zero copy); the bytes that follow a body (a pipelined request) stay buffered.

use core::fmt;
use core::future::Future;
use core::ops::Range;
use core::time::Duration;

use embedded_io::{Error as _, ErrorKind, ErrorType};
use httparse::Header;

use super::body::BodyKind;
use super::chunked::ChunkedDecoder;
use crate::rt::{Clock, SpliceError, Stream, TimedOut, timeout, timeout_at};
use crate::s3::{S3Error, S3ErrorCode};

/// Why an HTTP exchange failed; each variant says what the connection can still do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpError {
    /// The peer broke HTTP framing or a limit; answer with the error's status, then close.
    Protocol(S3Error),
    /// The peer closed the connection before the message ended; close.
    UnexpectedEof,
    /// A read or write did not complete within its timeout; close.
    TimedOut,
    /// The transport failed (reset, broken pipe, ...); close.
    Io(ErrorKind),
    /// The caller misused the engine (e.g. more body than the declared length); close.
    Usage(&'static str),
}

impl HttpError {
    /// Whether the error came from the peer's bytes (as opposed to the transport or the caller).
    pub fn is_protocol(&self) -> bool {
        matches!(self, Self::Protocol(_))
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Protocol(e) => write!(f, "{}: {}", e.code, e.message),
            Self::UnexpectedEof => f.write_str("connection closed before the message ended"),
            Self::TimedOut => f.write_str("timed out"),
            Self::Io(kind) => write!(f, "I/O error: {kind:?}"),
            Self::Usage(what) => write!(f, "HTTP engine misuse: {what}"),
        }
    }
}

impl core::error::Error for HttpError {}

impl embedded_io::Error for HttpError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::Protocol(_) => ErrorKind::InvalidData,
            Self::UnexpectedEof => ErrorKind::ConnectionAborted,
            Self::TimedOut => ErrorKind::TimedOut,
            Self::Io(kind) => *kind,
            Self::Usage(_) => ErrorKind::InvalidInput,
        }
    }
}

impl From<S3Error> for HttpError {
    fn from(e: S3Error) -> Self {
        Self::Protocol(e)
    }
}

impl From<TimedOut> for HttpError {
    fn from(_: TimedOut) -> Self {
        Self::TimedOut
    }
}

/// How an HTTP failure is reported to an S3 client (S3's own codes for timeouts and short bodies).
impl From<HttpError> for S3Error {
    fn from(e: HttpError) -> Self {
        match e {
            HttpError::Protocol(e) => e,
            HttpError::UnexpectedEof => S3Error::new(S3ErrorCode::IncompleteBody),
            HttpError::TimedOut => S3Error::new(S3ErrorCode::RequestTimeout),
            HttpError::Io(_) => {
                S3Error::with_message(S3ErrorCode::InternalError, "connection failed")
            }
            HttpError::Usage(what) => S3Error::with_message(S3ErrorCode::InternalError, what),
        }
    }
}

/// Why relaying a body from one connection to another stopped: which side failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RelayError {
    /// The body being read (its framing, its peer, its transport).
    Source(HttpError),
    /// The message being written.
    Sink(HttpError),
}

impl RelayError {
    /// The error, whichever side it came from.
    pub fn into_inner(self) -> HttpError {
        match self {
            Self::Source(e) | Self::Sink(e) => e,
        }
    }

    /// A failed splice, by side.
    pub(crate) fn spliced(e: SpliceError<ErrorKind>) -> Self {
        match e {
            SpliceError::Source(k) => Self::Source(io_error(k)),
            SpliceError::Sink(k) => Self::Sink(io_error(k)),
        }
    }
}

impl From<RelayError> for S3Error {
    fn from(e: RelayError) -> Self {
        e.into_inner().into()
    }
}

/// Map a stream error: timeouts keep their meaning, everything else is transport failure.
pub(crate) fn io_error(kind: ErrorKind) -> HttpError {
    match kind {
        ErrorKind::TimedOut => HttpError::TimedOut,
        kind => HttpError::Io(kind),
    }
}

/// Write all of `buf` to a [`Stream`].
pub(crate) async fn write_all<S: Stream>(io: &mut S, mut buf: &[u8]) -> Result<(), HttpError> {
    while !buf.is_empty() {
        let n = io.write_send(buf).await.map_err(|e| io_error(e.kind()))?;
        // A zero-length write would loop forever; std calls it `WriteZero`.
        buf = buf
            .get(n..)
            .filter(|_| n > 0)
            .ok_or(HttpError::Io(ErrorKind::WriteZero))?;
    }
    Ok(())
}

/// A stream whose every read and write has a timeout; its errors are [`ErrorKind`]s.
#[derive(Debug)]
pub struct Timed<C, S> {
    clock: C,
    inner: S,
    read_timeout: Duration,
    write_timeout: Duration,
}

impl<C: Clock, S: Stream> Timed<C, S> {
    /// Wrap `inner`, bounding each read by `read_timeout` and each write by `write_timeout`.
    pub fn new(clock: C, inner: S, read_timeout: Duration, write_timeout: Duration) -> Self {
        Self {
            clock,
            inner,
            read_timeout,
            write_timeout,
        }
    }

    /// The clock the timeouts run on.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// The wrapped stream.
    pub fn inner_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// Unwrap the stream.
    pub fn into_inner(self) -> S {
        self.inner
    }

    /// Read with a deadline of its own (a [`Clock::now`] value) instead of the read timeout.
    pub async fn read_until(
        &mut self,
        deadline: Duration,
        buf: &mut [u8],
    ) -> Result<usize, ErrorKind> {
        match timeout_at(&self.clock, deadline, self.inner.read_send(buf)).await {
            Ok(r) => r.map_err(|e| e.kind()),
            Err(TimedOut) => Err(ErrorKind::TimedOut),
        }
    }

    /// Write all of `buf`, each write bounded by the write timeout.
    pub async fn write_all(&mut self, buf: &[u8]) -> Result<(), HttpError> {
        write_all(self, buf).await
    }

    async fn bounded<T, E: embedded_io::Error>(
        clock: &C,
        limit: Duration,
        op: impl Future<Output = Result<T, E>>,
    ) -> Result<T, ErrorKind> {
        match timeout(clock, limit, op).await {
            Ok(r) => r.map_err(|e| e.kind()),
            Err(TimedOut) => Err(ErrorKind::TimedOut),
        }
    }
}

impl<C, S> ErrorType for Timed<C, S> {
    type Error = ErrorKind;
}

impl<C: Clock, S: Stream> embedded_io_async::Read for Timed<C, S> {
    async fn read(&mut self, buf: &mut [u8]) -> Result<usize, ErrorKind> {
        self.read_send(buf).await
    }
}

impl<C: Clock, S: Stream> embedded_io_async::Write for Timed<C, S> {
    async fn write(&mut self, buf: &[u8]) -> Result<usize, ErrorKind> {
        self.write_send(buf).await
    }

    async fn flush(&mut self) -> Result<(), ErrorKind> {
        self.flush_send().await
    }
}

impl<C: Clock, S: Stream> Stream for Timed<C, S> {
    async fn read_send(&mut self, buf: &mut [u8]) -> Result<usize, ErrorKind> {
        Self::bounded(&self.clock, self.read_timeout, self.inner.read_send(buf)).await
    }

    async fn write_send(&mut self, buf: &[u8]) -> Result<usize, ErrorKind> {
        Self::bounded(&self.clock, self.write_timeout, self.inner.write_send(buf)).await
    }

    async fn flush_send(&mut self) -> Result<(), ErrorKind> {
        Self::bounded(&self.clock, self.write_timeout, self.inner.flush_send()).await
    }

    async fn shutdown_write(&mut self) -> Result<(), ErrorKind> {
        Self::bounded(&self.clock, self.write_timeout, self.inner.shutdown_write()).await
    }

    fn as_any_mut(&mut self) -> Option<&mut dyn core::any::Any> {
        self.inner.as_any_mut()
    }

    /// One splice round waits for the source and then writes: it is bounded by the longer of
    /// the two timeouts, and running out of it counts as the source's (a stalled sender is the
    /// usual case).
    async fn splice_from<T: Stream>(
        &mut self,
        src: &mut T,
        max: u64,
    ) -> Option<Result<u64, SpliceError<ErrorKind>>> {
        let limit = self.read_timeout.max(self.write_timeout);
        match timeout(&self.clock, limit, self.inner.splice_from(src, max)).await {
            Ok(r) => r,
            Err(TimedOut) => Some(Err(SpliceError::Source(ErrorKind::TimedOut))),
        }
    }
}

/// Which part of the connection buffer the read window is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Src {
    /// The bytes that arrived with the head (after it).
    Pre,
    /// The free space after them, refilled from the stream.
    Spare,
}

/// An incremental message-body reader over the connection buffer (no I/O of its own).
///
/// `pre` holds the bytes read along with the head, `spare` is the free rest of the buffer that
/// reads refill from its start once everything before has been handed out.
#[derive(Debug)]
pub(crate) struct BodyState<'c> {
    kind: BodyKind,
    /// `Length`: bytes still to come.
    remaining: u64,
    decoder: &'c mut ChunkedDecoder,
    pre: &'c [u8],
    spare: &'c mut [u8],
    src: Src,
    /// Unread window `[pos, end)` in `src`.
    pos: usize,
    end: usize,
    /// Chunk data decoded but not yet handed out, in `src`.
    pending: Range<usize>,
    /// Body bytes handed out or decoded so far.
    total: u64,
    /// Most body bytes accepted (chunked bodies; lengths are checked before reading).
    limit: u64,
    /// The framing says the body has ended.
    framing_done: bool,
}

impl<'c> BodyState<'c> {
    pub(crate) fn new(
        kind: BodyKind,
        decoder: &'c mut ChunkedDecoder,
        pre: &'c [u8],
        spare: &'c mut [u8],
        limit: u64,
    ) -> Self {
        decoder.reset();
        let (remaining, framing_done) = match kind {
            BodyKind::None => (0, true),
            BodyKind::Length(n) => (n, n == 0),
            BodyKind::Chunked | BodyKind::CloseDelimited => (0, false),
        };
        Self {
            kind,
            remaining,
            decoder,
            end: pre.len(),
            pre,
            spare,
            src: Src::Pre,
            pos: 0,
            pending: 0..0,
            total: 0,
            limit,
            framing_done,
        }
    }

    pub(crate) fn kind(&self) -> BodyKind {
        self.kind
    }

    /// Every body byte has been handed out.
    pub(crate) fn is_done(&self) -> bool {
        self.framing_done && self.pending.is_empty()
    }

    /// Body bytes handed out or decoded so far.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// `Length` bodies: bytes not yet handed out.
    pub(crate) fn remaining(&self) -> u64 {
        self.remaining
    }

    /// A `Length` body with nothing buffered: the rest can be moved past this reader (see
    /// [`BodyState::skip`]).
    pub(crate) fn can_skip(&self) -> bool {
        matches!(self.kind, BodyKind::Length(_)) && self.pending.is_empty() && self.pos >= self.end
    }

    /// Account for `n` body bytes moved from the stream by someone else (a splice); only when
    /// [`BodyState::can_skip`].
    pub(crate) fn skip(&mut self, n: u64) -> Result<(), HttpError> {
        if !self.can_skip() || n > self.remaining {
            return Err(HttpError::Usage(
                "body bytes moved past a body that cannot skip",
            ));
        }
        self.remaining -= n;
        self.framing_done = self.remaining == 0;
        self.total = self.total.saturating_add(n);
        Ok(())
    }

    /// Whether the next call needs input from the stream.
    pub(crate) fn needs_input(&self) -> bool {
        !self.framing_done && self.pending.is_empty() && self.pos >= self.end
    }

    /// The bytes after the body that are already buffered, once it is done.
    pub(crate) fn leftover(&self) -> (Src, Range<usize>) {
        (self.src, self.pos..self.end)
    }

    pub(crate) fn slice(&self, r: Range<usize>) -> &[u8] {
        let src: &[u8] = match self.src {
            Src::Pre => self.pre,
            Src::Spare => self.spare,
        };
        src.get(r).unwrap_or_default()
    }

    pub(crate) fn trailers<'s, 'h>(
        &'s self,
        storage: &'h mut [Header<'s>],
    ) -> Result<&'h [Header<'s>], HttpError> {
        Ok(self.decoder.trailers(storage)?)
    }

    /// Hand out up to `max` buffered body bytes as a range of the current source; `None` if
    /// the body is done or more input is needed.
    pub(crate) fn take(&mut self, max: usize) -> Result<Option<Range<usize>>, HttpError> {
        if !self.pending.is_empty() {
            let n = self.pending.len().min(max);
            let r = self.pending.start..self.pending.start + n;
            self.pending.start += n;
            return Ok(Some(r));
        }
        if self.framing_done || self.pos >= self.end || max == 0 {
            return Ok(None);
        }
        match self.kind {
            BodyKind::None => Ok(None),
            BodyKind::Length(_) | BodyKind::CloseDelimited => {
                let avail = self.end - self.pos;
                let mut n = avail.min(max);
                if self.kind != BodyKind::CloseDelimited {
                    n = n.min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
                    self.remaining -= n as u64;
                    self.framing_done = self.remaining == 0;
                }
                let r = self.pos..self.pos + n;
                self.pos += n;
                self.total = self.total.saturating_add(n as u64);
                Ok(Some(r))
            }
            BodyKind::Chunked => {
                while self.pos < self.end && !self.framing_done {
                    let window = match self.src {
                        Src::Pre => self.pre.get(self.pos..self.end),
                        Src::Spare => self.spare.get(self.pos..self.end),
                    }
                    .unwrap_or_default();
                    let d = self.decoder.decode_borrowed(window)?;
                    let start = self.pos + d.consumed - d.data.len();
                    let len = d.data.len();
                    self.pos += d.consumed;
                    self.framing_done = d.done;
                    if len > 0 {
                        self.total = self.total.saturating_add(len as u64);
                        if self.total > self.limit {
                            return Err(too_large(self.limit));
                        }
                        self.pending = start..start + len;
                        return self.take(max);
                    }
                    if d.consumed == 0 {
                        break;
                    }
                }
                Ok(None)
            }
        }
    }

    /// Refill the window from `stream` (only when [`BodyState::needs_input`]).
    pub(crate) async fn fill<S: Stream>(&mut self, stream: &mut S) -> Result<(), HttpError> {
        if self.spare.is_empty() {
            return Err(HttpError::Usage("no buffer space left for the body"));
        }
        let n = stream
            .read_send(self.spare)
            .await
            .map_err(|e| io_error(e.kind()))?;
        self.src = Src::Spare;
        self.pos = 0;
        self.end = n;
        if n == 0 {
            if self.kind == BodyKind::CloseDelimited {
                self.framing_done = true;
            } else {
                return Err(HttpError::UnexpectedEof);
            }
        }
        Ok(())
    }

    /// The next run of body bytes (at most `max`), reading from `stream` as needed.
    pub(crate) async fn next<S: Stream>(
        &mut self,
        stream: &mut S,
        max: usize,
    ) -> Result<Option<Range<usize>>, HttpError> {
        loop {
            if let Some(r) = self.take(max)? {
                return Ok(Some(r));
            }
            if !self.needs_input() || max == 0 {
                return Ok(None);
            }
            self.fill(stream).await?;
        }
    }
}

fn too_large(limit: u64) -> HttpError {
    HttpError::Protocol(S3Error::with_message(
        S3ErrorCode::EntityTooLarge,
        alloc::format!("body exceeds {limit} bytes"),
    ))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::rt::tests::block_on;
    use alloc::collections::VecDeque;
    use alloc::sync::Arc;
    use alloc::vec::Vec;

    /// What an in-memory peer sends and has received.
    #[derive(Debug, Default)]
    pub(crate) struct Wire {
        /// Bytes to hand out, in reads of at most `read_size` (0: unbounded).
        pub input: VecDeque<u8>,
        pub read_size: usize,
        /// Every write call's bytes, in order.
        pub writes: Vec<Vec<u8>>,
        pub shut: bool,
        /// Reads past the input: `Pending` forever instead of EOF (a silent peer).
        pub hang: bool,
        /// Each write appends the next of these to the input (a peer that answers requests).
        pub replies: VecDeque<Vec<u8>>,
    }

    /// One side of an in-memory connection (a pair of buffers); clones share the wire, so a
    /// test keeps a handle on what the engine wrote.
    #[derive(Debug, Clone, Default)]
    pub(crate) struct Duplex(pub Arc<spin::Mutex<Wire>>);

    impl Duplex {
        pub(crate) fn new(input: &[u8], read_size: usize) -> Self {
            Self(Arc::new(spin::Mutex::new(Wire {
                input: input.iter().copied().collect(),
                read_size,
                ..Wire::default()
            })))
        }

        /// A peer that sends `replies[i]` after the i-th write.
        pub(crate) fn replying(replies: &[&[u8]], read_size: usize) -> Self {
            let d = Self::new(b"", read_size);
            d.0.lock().replies = replies.iter().map(|r| r.to_vec()).collect();
            d
        }

        pub(crate) fn written(&self) -> Vec<u8> {
            self.0.lock().writes.concat()
        }

        pub(crate) fn rest(&self) -> Vec<u8> {
            self.0.lock().input.iter().copied().collect()
        }
    }

    impl ErrorType for Duplex {
        type Error = ErrorKind;
    }

    impl embedded_io_async::Read for Duplex {
        async fn read(&mut self, buf: &mut [u8]) -> Result<usize, ErrorKind> {
            let hang = {
                let w = self.0.lock();
                w.input.is_empty() && w.hang
            };
            if hang {
                core::future::pending::<()>().await;
            }
            let mut w = self.0.lock();
            let mut n = buf.len().min(w.input.len());
            if w.read_size > 0 {
                n = n.min(w.read_size);
            }
            for (dst, src) in buf.iter_mut().zip(w.input.drain(..n)) {
                *dst = src;
            }
            Ok(n)
        }
    }

    impl embedded_io_async::Write for Duplex {
        async fn write(&mut self, buf: &[u8]) -> Result<usize, ErrorKind> {
            let mut w = self.0.lock();
            if w.shut {
                return Err(ErrorKind::BrokenPipe);
            }
            w.writes.push(buf.to_vec());
            if let Some(reply) = w.replies.pop_front() {
                w.input.extend(reply);
            }
            Ok(buf.len())
        }

        async fn flush(&mut self) -> Result<(), ErrorKind> {
            Ok(())
        }
    }

    impl Stream for Duplex {
        async fn read_send(&mut self, buf: &mut [u8]) -> Result<usize, ErrorKind> {
            embedded_io_async::Read::read(self, buf).await
        }
        async fn write_send(&mut self, buf: &[u8]) -> Result<usize, ErrorKind> {
            embedded_io_async::Write::write(self, buf).await
        }
        async fn flush_send(&mut self) -> Result<(), ErrorKind> {
            Ok(())
        }
        async fn shutdown_write(&mut self) -> Result<(), ErrorKind> {
            self.0.lock().shut = true;
            Ok(())
        }
    }

    /// Read a whole body through `BodyState` with reads of at most `max` bytes.
    fn read_all(
        kind: BodyKind,
        pre: &[u8],
        rest: &[u8],
        read_size: usize,
        max: usize,
    ) -> (Result<Vec<u8>, HttpError>, Vec<u8>) {
        let mut decoder = ChunkedDecoder::default();
        let mut spare = [0u8; 16];
        let mut s = BodyState::new(kind, &mut decoder, pre, &mut spare, 1 << 20);
        let mut io = Duplex::new(rest, read_size);
        let mut body = Vec::new();
        let got = block_on(async {
            while let Some(r) = s.next(&mut io, max).await? {
                assert!(r.len() <= max);
                body.extend_from_slice(s.slice(r));
            }
            Ok(())
        });
        let (src, r) = s.leftover();
        let mut left = match src {
            Src::Pre => pre.get(r).unwrap_or_default().to_vec(),
            Src::Spare => s.slice(r).to_vec(),
        };
        left.extend(io.rest());
        (got.map(|()| body), left)
    }

    #[test]
    fn length_body_across_pre_and_reads_keeps_what_follows() {
        for read_size in [1, 3, 0] {
            for max in [1, 5, usize::MAX] {
                let (body, left) = read_all(
                    BodyKind::Length(20),
                    b"0123456",
                    b"789abcdefghijNEXT",
                    read_size,
                    max,
                );
                assert_eq!(body.unwrap(), b"0123456789abcdefghij");
                assert_eq!(left, b"NEXT", "read_size {read_size} max {max}");
            }
        }
    }

    #[test]
    fn chunked_body_split_anywhere() {
        let wire = b"4\r\nWiki\r\n5\r\npedia\r\n0\r\nX-T: 1\r\n\r\nGET";
        for cut in 0..wire.len() {
            for max in [1, 2, usize::MAX] {
                let (body, left) = read_all(BodyKind::Chunked, &wire[..cut], &wire[cut..], 5, max);
                assert_eq!(body.unwrap(), b"Wikipedia", "cut {cut} max {max}");
                assert_eq!(left, b"GET", "cut {cut} max {max}");
            }
        }
    }

    #[test]
    fn eof_mid_body_is_unexpected_except_close_delimited() {
        let (r, _) = read_all(BodyKind::Length(10), b"abc", b"de", 0, 64);
        assert_eq!(r, Err(HttpError::UnexpectedEof));
        let (r, _) = read_all(BodyKind::Chunked, b"5\r\nab", b"", 0, 64);
        assert_eq!(r, Err(HttpError::UnexpectedEof));
        let (r, left) = read_all(
            BodyKind::CloseDelimited,
            b"abc",
            b"defghijklmnopqrstuvwxyz",
            4,
            64,
        );
        assert_eq!(r.unwrap(), b"abcdefghijklmnopqrstuvwxyz");
        assert!(left.is_empty());
        let (r, _) = read_all(BodyKind::None, b"", b"zzz", 0, 64);
        assert_eq!(r.unwrap(), b"");
    }

    #[test]
    fn chunked_limit_is_entity_too_large() {
        let mut decoder = ChunkedDecoder::default();
        let mut spare = [0u8; 8];
        let pre = b"8\r\n12345678\r\n";
        let mut s = BodyState::new(BodyKind::Chunked, &mut decoder, pre, &mut spare, 7);
        let e = s.take(64).unwrap_err();
        let HttpError::Protocol(e) = e else { panic!() };
        assert_eq!(e.code, S3ErrorCode::EntityTooLarge);
    }

    #[test]
    fn bad_chunk_is_a_protocol_error() {
        let (r, _) = read_all(BodyKind::Chunked, b"zz\r\n", b"", 0, 64);
        assert!(matches!(r, Err(HttpError::Protocol(e)) if e.status() == 400));
    }

    #[test]
    fn errors_map_to_s3_codes() {
        assert_eq!(
            S3Error::from(HttpError::TimedOut).code,
            S3ErrorCode::RequestTimeout
        );
        assert_eq!(
            S3Error::from(HttpError::UnexpectedEof).code,
            S3ErrorCode::IncompleteBody
        );
        assert_eq!(io_error(ErrorKind::TimedOut), HttpError::TimedOut);
        assert_eq!(
            io_error(ErrorKind::ConnectionReset),
            HttpError::Io(ErrorKind::ConnectionReset)
        );
    }
}
