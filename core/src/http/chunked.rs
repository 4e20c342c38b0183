//! `Transfer-Encoding: chunked` (RFC 9112 section 7.1): a streaming decoder and an encoder.
//!
//! The decoder is sans-IO with bounded state: it never holds body data, only the position in
//! the framing, and (if the sender adds any) the trailer section, up to a limit. Two ways to
//! drive it:
//! - [`ChunkedDecoder::decode_borrowed`] hands back data as slices of the caller's input, with
//!   no copy (the hot path: hash or forward the slice directly);
//! - [`ChunkedDecoder::decode`] copies data into a caller buffer.
//!
//! Hand-written because `httparse::parse_chunk_size` accepts any bytes as extensions, bare LF
//! and unbounded lines, and no crate offers a resumable, zero-copy decoder over caller buffers.
//! Every error means the stream is unusable: answer it and close the connection.

use alloc::vec::Vec;
use httparse::{EMPTY_HEADER, Header};

use super::error::{HttpError, ProtocolError, ProtocolErrorKind};
use super::write::{header, is_tchar, push_hex};

/// A value, or the rule of HTTP the peer broke.
type ParseResult<T> = Result<T, ProtocolError>;

/// Most trailer fields accepted in one trailer section.
pub const MAX_TRAILERS: usize = 32;

/// Limits applied while decoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkedLimits {
    /// Longest chunk line (size and extensions, without CRLF), in bytes.
    pub max_line_len: usize,
    /// Longest trailer section (all fields with their CRLFs), in bytes.
    pub max_trailer_len: usize,
}

impl Default for ChunkedLimits {
    fn default() -> Self {
        Self {
            max_line_len: 4 * 1024,
            max_trailer_len: 8 * 1024,
        }
    }
}

/// What one [`ChunkedDecoder::decode`] call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Input bytes used; the rest is for the next call (or, once `done`, the next message).
    pub consumed: usize,
    /// Body bytes written to the start of the output buffer.
    pub produced: usize,
    /// The last chunk and trailer section have been read.
    pub done: bool,
}

/// What one [`ChunkedDecoder::decode_borrowed`] call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataSlice<'a> {
    /// Input bytes used, including `data`; the rest is for the next call.
    pub consumed: usize,
    /// Body bytes, borrowed from the input (ends at `consumed`); may be empty.
    pub data: &'a [u8],
    /// The last chunk and trailer section have been read.
    pub done: bool,
}

/// Where the decoder is in the chunked framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading the hex chunk size; `digits` says whether any has been seen.
    Size { digits: bool },
    /// Between extensions: BWS, `;` or (if no whitespace is pending) CR.
    ExtSep { ws: bool },
    /// After `;`: BWS, then an extension name.
    ExtNameStart,
    /// In an extension name.
    ExtName,
    /// After an extension name and whitespace: BWS, `=`, `;` or (if no whitespace) CR.
    ExtAfterName { ws: bool },
    /// After `=`: BWS, then a token or a quoted string.
    ExtValueStart,
    /// In a token extension value.
    ExtToken,
    /// In a quoted-string extension value; `escape` after a backslash.
    ExtQuoted { escape: bool },
    /// Saw the CR ending a chunk line.
    LineLf,
    /// In chunk data.
    Data { remaining: u64 },
    /// Expecting the CR after chunk data.
    DataCr,
    /// Expecting the LF after chunk data.
    DataLf,
    /// At the start of a trailer line (or of the final empty line).
    TrailerStart,
    /// Inside a trailer field line.
    TrailerLine,
    /// Saw a CR in the trailer section; `last` if it began an empty line.
    TrailerLf { last: bool },
    /// The body is complete.
    Done,
    /// An error was returned; the stream cannot be resumed.
    Failed,
}

/// A streaming decoder for one chunked body.
#[derive(Debug, Clone)]
pub struct ChunkedDecoder {
    limits: ChunkedLimits,
    state: State,
    /// Size of the chunk whose line is being read.
    size: u64,
    /// Bytes of the current chunk line so far.
    line_len: usize,
    /// The raw trailer section (field lines with CRLFs, then the final CRLF once done).
    trailer: Vec<u8>,
}

impl Default for ChunkedDecoder {
    fn default() -> Self {
        Self::new(ChunkedLimits::default())
    }
}

impl ChunkedDecoder {
    /// A decoder at the start of a chunked body.
    pub const fn new(limits: ChunkedLimits) -> Self {
        Self {
            limits,
            state: State::Size { digits: false },
            size: 0,
            line_len: 0,
            trailer: Vec::new(),
        }
    }

    /// Start over for a new body, keeping the trailer buffer's allocation.
    pub fn reset(&mut self) {
        self.state = State::Size { digits: false };
        self.size = 0;
        self.line_len = 0;
        self.trailer.clear();
    }

    /// Whether the whole body, trailers included, has been decoded.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Decode from `input`, copying body bytes into `out`.
    ///
    /// Stops when the input is used up, `out` is full or the body is done. Errors are 400
    /// `InvalidRequest` (malformed framing) or 431 `RequestHeaderSectionTooLarge` (trailers).
    pub fn decode(&mut self, input: &[u8], out: &mut [u8]) -> ParseResult<Progress> {
        let (mut consumed, mut produced) = (0, 0);
        loop {
            let rest = input.get(consumed..).unwrap_or_default();
            let room = out.len().saturating_sub(produced);
            let (used, data) = self.step(rest, room)?;
            if let Some(dst) = out.get_mut(produced..produced + data.len()) {
                dst.copy_from_slice(data);
            }
            consumed += used;
            produced += data.len();
            if used == 0 || self.is_done() {
                break;
            }
        }
        Ok(Progress {
            consumed,
            produced,
            done: self.is_done(),
        })
    }

    /// Decode from `input` up to the next run of body bytes, returned as a slice of `input`.
    ///
    /// Call again with `&input[consumed..]` until `consumed` is 0 (more input needed) or
    /// `done`. Errors as for [`ChunkedDecoder::decode`].
    pub fn decode_borrowed<'a>(&mut self, input: &'a [u8]) -> ParseResult<DataSlice<'a>> {
        let (consumed, data) = self.step(input, usize::MAX)?;
        Ok(DataSlice {
            consumed,
            data,
            done: self.is_done(),
        })
    }

    /// The trailer fields, parsed into `headers` (at least [`MAX_TRAILERS`] long to be safe).
    ///
    /// Empty until the decoder is done or if the sender sent none.
    pub fn trailers<'s, 'h>(
        &'s self,
        headers: &'h mut [Header<'s>],
    ) -> ParseResult<&'h [Header<'s>]> {
        if !self.is_done() || self.trailer.is_empty() {
            return Ok(&[]);
        }
        match httparse::parse_headers(&self.trailer, headers) {
            Ok(httparse::Status::Complete((_, fields))) => Ok(fields),
            Ok(httparse::Status::Partial) => Err(bad("incomplete trailer section")),
            Err(httparse::Error::TooManyHeaders) => Err(too_many_trailers()),
            Err(_) => Err(bad("malformed trailer field")),
        }
    }

    /// Consume framing bytes until body data, the end of input or the end of the body; then
    /// take at most `max_data` data bytes. Returns bytes consumed and the data taken.
    fn step<'a>(&mut self, input: &'a [u8], max_data: usize) -> ParseResult<(usize, &'a [u8])> {
        let mut i = 0;
        loop {
            match self.state {
                State::Done => return Ok((i, &[])),
                State::Failed => return Err(bad("chunked body already failed")),
                State::Data { remaining } => {
                    let rest = input.get(i..).unwrap_or_default();
                    let cap = u64::try_from(rest.len().min(max_data)).unwrap_or(u64::MAX);
                    let n = usize::try_from(remaining.min(cap)).unwrap_or(0);
                    let data = rest.get(..n).unwrap_or_default();
                    if !data.is_empty() {
                        let left = remaining.saturating_sub(n as u64);
                        self.state = if left == 0 {
                            State::DataCr
                        } else {
                            State::Data { remaining: left }
                        };
                    }
                    return Ok((i + data.len(), data));
                }
                _ => {
                    let Some(&b) = input.get(i) else {
                        return Ok((i, &[]));
                    };
                    if let Err(e) = self.byte(b) {
                        self.state = State::Failed;
                        return Err(e);
                    }
                    i += 1;
                }
            }
        }
    }

    /// Advance the framing state machine by one byte (never called in `Data`).
    fn byte(&mut self, b: u8) -> ParseResult<()> {
        if matches!(
            self.state,
            State::Size { .. }
                | State::ExtSep { .. }
                | State::ExtNameStart
                | State::ExtName
                | State::ExtAfterName { .. }
                | State::ExtValueStart
                | State::ExtToken
                | State::ExtQuoted { .. }
        ) && b != b'\r'
        {
            self.line_len += 1;
            if self.line_len > self.limits.max_line_len {
                return Err(ProtocolError::new(
                    ProtocolErrorKind::Malformed,
                    alloc::format!("chunk line exceeds {} bytes", self.limits.max_line_len),
                ));
            }
        }
        self.state = match (self.state, b) {
            (_, b'\n')
                if !matches!(
                    self.state,
                    State::LineLf | State::DataLf | State::TrailerLf { .. }
                ) =>
            {
                return Err(bad("bare LF in chunked body"));
            }
            (State::Size { .. }, b) if b.is_ascii_hexdigit() => {
                // is_ascii_hexdigit guarantees to_digit succeeds; 0 is never used.
                let d = u64::from(char::from(b).to_digit(16).unwrap_or(0));
                self.size = self
                    .size
                    .checked_mul(16)
                    .and_then(|s| s.checked_add(d))
                    .ok_or_else(|| bad("chunk size overflows"))?;
                State::Size { digits: true }
            }
            (State::Size { digits: false }, _) => return Err(bad("chunk size is not hex")),
            (State::Size { digits: true }, b) => return self.ext_sep(false, b),
            (State::ExtSep { ws }, b) => return self.ext_sep(ws, b),
            (State::ExtNameStart, b' ' | b'\t') => State::ExtNameStart,
            (State::ExtNameStart, b) if is_tchar(b) => State::ExtName,
            (State::ExtName, b) if is_tchar(b) => State::ExtName,
            (State::ExtName, b' ' | b'\t') => State::ExtAfterName { ws: true },
            (State::ExtName | State::ExtAfterName { .. }, b'=') => State::ExtValueStart,
            (State::ExtName, b) => return self.ext_sep(false, b),
            (State::ExtAfterName { ws }, b) => return self.ext_sep(ws, b),
            (State::ExtValueStart, b' ' | b'\t') => State::ExtValueStart,
            (State::ExtValueStart, b'"') => State::ExtQuoted { escape: false },
            (State::ExtValueStart, b) if is_tchar(b) => State::ExtToken,
            (State::ExtToken, b) if is_tchar(b) => State::ExtToken,
            (State::ExtToken, b) => return self.ext_sep(false, b),
            (State::ExtQuoted { escape: false }, b'"') => State::ExtSep { ws: false },
            (State::ExtQuoted { escape: false }, b'\\') => State::ExtQuoted { escape: true },
            // qdtext: HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text.
            (State::ExtQuoted { escape: false }, b'\t' | b' '..=b'~' | 0x80..) => {
                State::ExtQuoted { escape: false }
            }
            // quoted-pair: "\" ( HTAB / SP / VCHAR / obs-text ).
            (State::ExtQuoted { escape: true }, b'\t' | b' '..=b'~' | 0x80..) => {
                State::ExtQuoted { escape: false }
            }
            (State::LineLf, b'\n') => {
                self.line_len = 0;
                match self.size {
                    0 => State::TrailerStart,
                    n => State::Data { remaining: n },
                }
            }
            (State::DataCr, b'\r') => State::DataLf,
            (State::DataLf, b'\n') => {
                self.size = 0;
                State::Size { digits: false }
            }
            (State::DataCr | State::DataLf, _) => {
                return Err(bad("missing CRLF after chunk data"));
            }
            (State::TrailerStart, b'\r') => State::TrailerLf { last: true },
            (State::TrailerLine, b'\r') => {
                self.push_trailer(b)?;
                State::TrailerLf { last: false }
            }
            (State::TrailerStart | State::TrailerLine, b) => {
                self.push_trailer(b)?;
                State::TrailerLine
            }
            (State::TrailerLf { last: false }, b'\n') => {
                self.push_trailer(b)?;
                State::TrailerStart
            }
            (State::TrailerLf { last: true }, b'\n') => {
                self.finish_trailers()?;
                State::Done
            }
            (State::LineLf | State::TrailerLf { .. }, _) => return Err(bad("CR without LF")),
            _ => return Err(bad("malformed chunk extension")),
        };
        Ok(())
    }

    /// Between extensions: whitespace, `;`, or CR ending the line (not after whitespace).
    fn ext_sep(&mut self, ws: bool, b: u8) -> ParseResult<()> {
        self.state = match b {
            b' ' | b'\t' => State::ExtSep { ws: true },
            b';' => State::ExtNameStart,
            b'\r' if !ws => State::LineLf,
            b'\n' => return Err(bad("bare LF in chunked body")),
            _ => return Err(bad("malformed chunk extension")),
        };
        Ok(())
    }

    fn push_trailer(&mut self, b: u8) -> ParseResult<()> {
        if self.trailer.len() >= self.limits.max_trailer_len {
            return Err(ProtocolError::new(
                ProtocolErrorKind::HeadTooLarge,
                alloc::format!(
                    "trailer section exceeds {} bytes",
                    self.limits.max_trailer_len
                ),
            ));
        }
        self.trailer.push(b);
        Ok(())
    }

    /// Close the trailer section and check it parses, so errors surface while decoding.
    fn finish_trailers(&mut self) -> ParseResult<()> {
        if self.trailer.is_empty() {
            return Ok(());
        }
        self.trailer.extend_from_slice(b"\r\n");
        let mut storage = [EMPTY_HEADER; MAX_TRAILERS];
        match httparse::parse_headers(&self.trailer, &mut storage) {
            Ok(httparse::Status::Complete((n, _))) if n == self.trailer.len() => Ok(()),
            Ok(_) => Err(bad("malformed trailer section")),
            Err(httparse::Error::TooManyHeaders) => Err(too_many_trailers()),
            Err(_) => Err(bad("malformed trailer field")),
        }
    }
}

/// Append the line that starts a chunk of `len` bytes: `{len:x}\r\n`.
///
/// The data and then [`write_chunk_end`] must follow. A `len` of 0 is the last-chunk line:
/// use [`write_last_chunk`] for that.
pub fn write_chunk_header(out: &mut Vec<u8>, len: u64) {
    push_hex(out, len);
    out.extend_from_slice(b"\r\n");
}

/// Append the CRLF that ends a chunk's data.
pub fn write_chunk_end(out: &mut Vec<u8>) {
    out.extend_from_slice(b"\r\n");
}

/// Append a whole chunk holding `data` (header, data, CRLF); nothing if `data` is empty.
pub fn write_chunk(out: &mut Vec<u8>, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    write_chunk_header(out, data.len() as u64);
    out.extend_from_slice(data);
    write_chunk_end(out);
}

/// Append the last chunk, the trailer fields and the final CRLF, which end the body.
///
/// Trailer names and values are checked as by [`super::write::header`]; on error nothing is
/// written.
pub fn write_last_chunk(out: &mut Vec<u8>, trailers: &[Header<'_>]) -> Result<(), HttpError> {
    let start = out.len();
    out.extend_from_slice(b"0\r\n");
    for t in trailers {
        if let Err(e) = header(out, t.name, t.value) {
            out.truncate(start);
            return Err(e);
        }
    }
    out.extend_from_slice(b"\r\n");
    Ok(())
}

fn bad(what: &'static str) -> ProtocolError {
    ProtocolError::malformed(what)
}

fn too_many_trailers() -> ProtocolError {
    ProtocolError::new(
        ProtocolErrorKind::HeadTooLarge,
        alloc::format!("more than {MAX_TRAILERS} trailer fields"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;
    use alloc::vec;
    use proptest::prelude::*;

    /// Body, trailer fields and bytes used, from [`decode_all`].
    type Decoded = (Vec<u8>, Vec<(String, Vec<u8>)>, usize);

    /// Decode all of `input` in one go with `decode_borrowed`.
    fn decode_all(input: &[u8]) -> ParseResult<Decoded> {
        let mut d = ChunkedDecoder::default();
        let mut body = Vec::new();
        let mut at = 0;
        loop {
            let s = d.decode_borrowed(&input[at..])?;
            body.extend_from_slice(s.data);
            at += s.consumed;
            if s.done {
                break;
            }
            if s.consumed == 0 {
                return Err(bad("test: input ended early"));
            }
        }
        let mut hs = [EMPTY_HEADER; MAX_TRAILERS];
        let trailers = d
            .trailers(&mut hs)?
            .iter()
            .map(|h| (String::from(h.name), h.value.to_vec()))
            .collect();
        Ok((body, trailers, at))
    }

    #[test]
    fn decodes_rfc_example_with_trailer() {
        let input = b"4\r\nWiki\r\n5;name=value\r\npedia\r\nE; a ; b = \"q\\\"x\"\r\n in\r\n\r\nchunks.\r\n0\r\nX-Checksum: abc\r\n\r\nNEXT";
        let (body, trailers, used) = decode_all(input).unwrap();
        assert_eq!(body, b"Wikipedia in\r\n\r\nchunks.");
        assert_eq!(
            trailers,
            vec![(String::from("X-Checksum"), b"abc".to_vec())]
        );
        assert_eq!(&input[used..], b"NEXT");
    }

    #[test]
    fn borrowed_data_is_a_slice_of_the_input() {
        let input = b"a\r\n0123456789\r\n0\r\n\r\n";
        let mut d = ChunkedDecoder::default();
        let s = d.decode_borrowed(input).unwrap();
        assert_eq!(s.data, b"0123456789");
        assert_eq!(s.data.as_ptr(), input[3..].as_ptr());
        assert_eq!((s.consumed, s.done), (13, false));
        let s = d.decode_borrowed(&input[13..]).unwrap();
        assert_eq!((s.consumed, s.data, s.done), (7, &b""[..], true));
    }

    #[test]
    fn decode_respects_small_output() {
        let input = b"a\r\n0123456789\r\n0\r\n\r\n";
        let mut d = ChunkedDecoder::default();
        let mut out = [0u8; 4];
        let p = d.decode(input, &mut out).unwrap();
        assert_eq!((p.consumed, p.produced, p.done), (7, 4, false));
        assert_eq!(&out, b"0123");
    }

    #[test]
    fn accepts_leading_zeros_and_upper_hex() {
        let (body, _, _) = decode_all(b"000A\r\n0123456789\r\n00\r\n\r\n").unwrap();
        assert_eq!(body, b"0123456789");
    }

    #[test]
    fn rejects_malformed_framing() {
        let cases: &[&[u8]] = &[
            b"g\r\n",
            b"\r\n",
            b";a\r\n",
            b"0x5\r\n",
            b"-1\r\n",
            b"10000000000000000\r\n",
            b"1 \r\nx\r\n0\r\n\r\n",
            b"1;\r\nx\r\n",
            b"1;=v\r\nx\r\n",
            b"1;a=\r\nx\r\n",
            b"1;a=\"x\r\nx\r\n",
            b"1;a=\"\\\x01\"\r\nx\r\n",
            b"1;a b\r\nx\r\n",
            b"1;a=b \r\nx\r\n",
            b"1;a=b c\r\nx\r\n",
            b"1;a@\r\nx\r\n",
            b"1\nx\r\n",
            b"1\r\rx\r\n",
            b"1\r\nxy\r\n",
            b"1\r\nx\n0\r\n\r\n",
            b"1\r\nx\rX",
            b"0\r\nX: a\n\r\n",
            b"0\r\n\n",
            b"0\r\nBad Name: a\r\n\r\n",
            b"0\r\nX: a\r\n folded\r\n\r\n",
        ];
        for &input in cases {
            let e = decode_all(input).expect_err(&alloc::format!("{input:?}"));
            assert_eq!(e.kind, ProtocolErrorKind::Malformed, "{input:?}: {e}");
        }
    }

    #[test]
    fn errors_are_sticky() {
        let mut d = ChunkedDecoder::default();
        assert!(d.decode_borrowed(b"z").is_err());
        assert!(d.decode_borrowed(b"0\r\n\r\n").is_err());
        d.reset();
        assert!(d.decode_borrowed(b"0\r\n\r\n").unwrap().done);
    }

    #[test]
    fn line_and_trailer_limits() {
        let limits = ChunkedLimits {
            max_line_len: 8,
            max_trailer_len: 16,
        };
        let mut d = ChunkedDecoder::new(limits);
        assert!(d.decode_borrowed(b"1;abcdef\r\n").is_ok());
        let mut d = ChunkedDecoder::new(limits);
        let e = d.decode_borrowed(b"1;abcdefg\r\n").unwrap_err();
        assert_eq!(e.kind, ProtocolErrorKind::Malformed);
        // Leading zeros count too: the line, not the value, is bounded.
        let mut d = ChunkedDecoder::new(limits);
        assert!(d.decode_borrowed(b"000000001\r\n").is_err());

        let mut d = ChunkedDecoder::new(limits);
        assert!(
            d.decode_borrowed(b"0\r\nX: 0123456789\r\n\r\n")
                .unwrap()
                .done
        );
        let mut d = ChunkedDecoder::new(limits);
        let e = d
            .decode_borrowed(b"0\r\nX: 012345678901\r\n\r\n")
            .unwrap_err();
        assert_eq!(e.status(), 431);
    }

    #[test]
    fn too_many_trailers_is_431() {
        let mut input = b"0\r\n".to_vec();
        for _ in 0..=MAX_TRAILERS {
            input.extend_from_slice(b"A: b\r\n");
        }
        input.extend_from_slice(b"\r\n");
        assert_eq!(decode_all(&input).unwrap_err().status(), 431);
    }

    #[test]
    fn encoder_writes_wire_format() {
        let mut out = Vec::new();
        write_chunk(&mut out, b"hello world, this is 31 bytes!!");
        write_chunk(&mut out, b"");
        write_chunk_header(&mut out, 2);
        out.extend_from_slice(b"ok");
        write_chunk_end(&mut out);
        let t = [Header {
            name: "x-amz-checksum-crc32",
            value: b"AAAAAA==",
        }];
        write_last_chunk(&mut out, &t).unwrap();
        assert_eq!(
            out,
            b"1f\r\nhello world, this is 31 bytes!!\r\n2\r\nok\r\n0\r\nx-amz-checksum-crc32: AAAAAA==\r\n\r\n"
        );
        let before = out.len();
        let bad = [Header {
            name: "x",
            value: b"a\r\nb",
        }];
        assert!(write_last_chunk(&mut out, &bad).is_err());
        assert_eq!(out.len(), before);
    }

    /// Valid chunk extensions, as a sender might write them.
    fn extension() -> impl Strategy<Value = &'static str> {
        prop_oneof![
            Just(""),
            Just(";a"),
            Just(";name=value"),
            Just(" ; n = v ;m"),
            Just(";q=\"quoted \\\" ;=\""),
            Just(";chunk-signature=0123abcd"),
        ]
    }

    fn trailer_field() -> impl Strategy<Value = (String, Vec<u8>)> {
        (
            "[A-Za-z][A-Za-z0-9-]{0,10}",
            proptest::collection::vec(0x21u8..=0x7e, 0..12),
        )
    }

    proptest! {
        /// Random data in random chunks, encoded, then read back through random splits.
        #[test]
        fn encode_decode_round_trip(
            data in proptest::collection::vec(any::<u8>(), 0..3000),
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..12),
            exts in proptest::collection::vec(extension(), 12),
            zeros in 0usize..3,
            trailers in proptest::collection::vec(trailer_field(), 0..4),
            reads in proptest::collection::vec(any::<prop::sample::Index>(), 0..16),
            out_len in 1usize..600,
        ) {
            // Chunk the data at random points.
            let mut bounds: Vec<usize> = cuts.iter().map(|c| c.index(data.len() + 1)).collect();
            bounds.push(0);
            bounds.push(data.len());
            bounds.sort_unstable();
            bounds.dedup();
            let mut wire = Vec::new();
            for (n, w) in bounds.windows(2).enumerate() {
                let chunk = &data[w[0]..w[1]];
                if n % 2 == 0 && !exts[n % exts.len()].is_empty() {
                    // By hand, to exercise extensions and leading zeros the encoder never writes.
                    wire.extend(core::iter::repeat_n(b'0', zeros));
                    push_hex(&mut wire, chunk.len() as u64);
                    wire.extend_from_slice(exts[n % exts.len()].as_bytes());
                    wire.extend_from_slice(b"\r\n");
                    wire.extend_from_slice(chunk);
                    write_chunk_end(&mut wire);
                } else {
                    write_chunk(&mut wire, chunk);
                }
            }
            let fields: Vec<Header<'_>> = trailers
                .iter()
                .map(|(n, v)| Header { name: n.as_str(), value: v.as_slice() })
                .collect();
            write_last_chunk(&mut wire, &fields).unwrap();
            let body_end = wire.len();
            wire.extend_from_slice(b"GET /next HTTP/1.1\r\n");

            // Split the encoded stream into reads at random points.
            let mut splits: Vec<usize> = reads.iter().map(|r| r.index(wire.len() + 1)).collect();
            splits.push(wire.len());
            splits.sort_unstable();

            // Zero-copy path: feed each read; unconsumed bytes carry into the next read.
            let mut borrowed = ChunkedDecoder::default();
            let mut got = Vec::new();
            let mut at = 0;
            for &end in &splits {
                while !borrowed.is_done() {
                    let s = borrowed.decode_borrowed(&wire[at..end.max(at)])?;
                    got.extend_from_slice(s.data);
                    at += s.consumed;
                    if s.consumed == 0 {
                        break;
                    }
                }
            }
            prop_assert!(borrowed.is_done());
            prop_assert_eq!(at, body_end);
            prop_assert_eq!(&got, &data);

            // Copying path, with a small output buffer.
            let mut copying = ChunkedDecoder::default();
            let mut got = Vec::new();
            let mut out = vec![0u8; out_len];
            let mut at = 0;
            for &end in &splits {
                while !copying.is_done() {
                    let p = copying.decode(&wire[at..end.max(at)], &mut out)?;
                    got.extend_from_slice(&out[..p.produced]);
                    at += p.consumed;
                    if p.consumed == 0 && p.produced == 0 {
                        break;
                    }
                }
            }
            prop_assert!(copying.is_done());
            prop_assert_eq!(at, body_end);
            prop_assert_eq!(&got, &data);

            let mut hs = [EMPTY_HEADER; MAX_TRAILERS];
            let back = copying.trailers(&mut hs)?;
            prop_assert_eq!(back.len(), fields.len());
            for (a, b) in back.iter().zip(&fields) {
                prop_assert_eq!(a.name, b.name);
                prop_assert_eq!(a.value, b.value);
            }
        }
    }
}
