//! The incremental message-body reader the server and client engines build on.
//!
//! Body bytes are read into the spare part of the connection's pooled buffer and handed out as
//! slices of it (zero copy); the bytes that follow a body (a pipelined request) stay buffered.

use core::ops::Range;

use embedded_io::Error as _;
use httparse::Header;

use super::body::BodyKind;
use super::chunked::ChunkedDecoder;
use super::error::{HttpError, ProtocolError, ProtocolErrorKind, io_error};
use crate::rt::Stream;

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
    HttpError::Protocol(ProtocolError::new(
        ProtocolErrorKind::BodyTooLarge,
        alloc::format!("body exceeds {limit} bytes"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::testing::Duplex;
    use crate::rt::tests::block_on;
    use alloc::vec::Vec;

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
    fn chunked_limit_is_body_too_large() {
        let mut decoder = ChunkedDecoder::default();
        let mut spare = [0u8; 8];
        let pre = b"8\r\n12345678\r\n";
        let mut s = BodyState::new(BodyKind::Chunked, &mut decoder, pre, &mut spare, 7);
        let e = s.take(64).unwrap_err();
        let HttpError::Protocol(e) = e else { panic!() };
        assert_eq!(e.kind, ProtocolErrorKind::BodyTooLarge);
    }

    #[test]
    fn bad_chunk_is_a_protocol_error() {
        let (r, _) = read_all(BodyKind::Chunked, b"zz\r\n", b"", 0, 64);
        assert!(matches!(r, Err(HttpError::Protocol(e)) if e.status() == 400));
    }
}
