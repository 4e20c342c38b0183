//! aws-chunked bodies (`Content-Encoding: aws-chunked`): a streaming decoder and an encoder.
//!
//! Three framings, chosen by `x-amz-content-sha256`:
//!
//! ```text
//! STREAMING-AWS4-HMAC-SHA256-PAYLOAD           STREAMING-UNSIGNED-PAYLOAD-TRAILER
//! 10000;chunk-signature=<sig>\r\n              10000\r\n
//! <65536 bytes>\r\n                            <65536 bytes>\r\n
//! 400;chunk-signature=<sig>\r\n                400\r\n
//! <1024 bytes>\r\n                             <1024 bytes>\r\n
//! 0;chunk-signature=<sig>\r\n                  0\r\n
//! \r\n                                         x-amz-checksum-crc32:<base64>\r\n
//!                                              \r\n
//! ```
//!
//! `STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER` is the signed framing whose final chunk is
//! followed, as in the unsigned one, by the checksum trailer, then
//! `x-amz-trailer-signature:<sig>\r\n` and `\r\n` (how the AWS SDKs send it). Each chunk signature
//! chains from the previous one, starting at the request's seed signature; the trailer signature
//! chains from the final chunk's.
//!
//! The decoder is sans-IO with bounded state: give it whatever bytes arrived, it hands back
//! slices of *that input* as decoded data (no copy) and buffers at most one framing line. Data
//! is provisional until [`Decoded::done`]: signatures and the trailer checksum are checked as
//! the chunks and the trailer end, so a caller must not commit an object before then.

use alloc::vec::Vec;
use core::fmt::Write as _;
use sha2::Digest as _;

use super::{ChunkSigner, Signature, SigningContext, StreamingMode, VerifiedRequest};
use crate::http::{Header, find_header};
use crate::s3::checksum::{Checksum, ChecksumAlgorithm, Checksummer, invalid_checksum_value};
use crate::s3::header;
use crate::s3::{S3Error, S3ErrorCode, S3Result};

/// Longest framing line (chunk header or trailer) accepted, without its CRLF.
pub const MAX_LINE: usize = 256;
/// What ends every chunk's data.
pub const CHUNK_END: &[u8] = b"\r\n";
const CHUNK_SIGNATURE: &str = "chunk-signature=";

fn malformed(msg: &'static str) -> S3Error {
    S3Error::with_message(S3ErrorCode::InvalidRequest, msg)
}

fn bad_trailer(msg: &'static str) -> S3Error {
    S3Error::with_message(S3ErrorCode::MalformedTrailerError, msg)
}

fn bad_signature(msg: &'static str) -> S3Error {
    S3Error::with_message(S3ErrorCode::SignatureDoesNotMatch, msg)
}

/// The outcome of one [`AwsChunkedDecoder::decode`] call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decoded<'a> {
    /// Input bytes used; the rest must be passed again (with more appended) only when `done` is
    /// false and `consumed < input.len()`, which happens only right after `data` was returned.
    pub consumed: usize,
    /// Decoded payload: a slice of the input, possibly empty.
    pub data: &'a [u8],
    /// The body ended and everything checked out; bytes after `consumed` are not part of it.
    pub done: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Expecting `<hex-size>[;chunk-signature=<sig>]`.
    ChunkHeader,
    /// Inside a chunk's data.
    Data,
    /// Expecting the empty line that ends a chunk's data.
    DataEnd,
    /// Signed framing without trailer: expecting the empty line after the final chunk.
    FinalEnd,
    /// Reading trailer lines until an empty one.
    Trailers,
    Done,
    Failed,
}

/// Streaming decoder of one aws-chunked body.
pub struct AwsChunkedDecoder {
    mode: StreamingMode,
    state: State,
    signer: Option<ChunkSigner>,
    chunk_hash: sha2::Sha256,
    chunk_signature: Option<Signature>,
    trailer: Option<ChecksumAlgorithm>,
    checksum: Option<Checksummer>,
    expected_len: u64,
    decoded_len: u64,
    remaining: u64,
    line: [u8; MAX_LINE + 1],
    line_len: usize,
    trailer_lines: u32,
    skipped_blank: bool,
    trailer_value: Option<Checksum>,
    trailer_signature: Option<Signature>,
    trailer_hash: sha2::Sha256,
    verified: Option<Checksum>,
}

impl core::fmt::Debug for AwsChunkedDecoder {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("AwsChunkedDecoder")
            .field("mode", &self.mode)
            .field("state", &self.state)
            .field("trailer", &self.trailer)
            .field("expected_len", &self.expected_len)
            .field("decoded_len", &self.decoded_len)
            .finish_non_exhaustive()
    }
}

impl AwsChunkedDecoder {
    /// A decoder for a body of `mode` that must decode to exactly `decoded_len` bytes.
    ///
    /// `trailer` is the checksum named by `x-amz-trailer` (only with a trailer mode); `signing`
    /// is required for the signed modes (from [`VerifiedRequest::signing`]).
    pub fn new(
        mode: StreamingMode,
        decoded_len: u64,
        trailer: Option<ChecksumAlgorithm>,
        signing: Option<&SigningContext>,
    ) -> S3Result<Self> {
        if trailer.is_some() && !mode.has_trailer() {
            return Err(malformed(
                "x-amz-trailer needs a *-TRAILER x-amz-content-sha256 value",
            ));
        }
        let signer = match (mode.is_signed(), signing) {
            (true, Some(ctx)) => Some(ChunkSigner::new(ctx)),
            (true, None) => {
                return Err(S3Error::with_message(
                    S3ErrorCode::AccessDenied,
                    "a signed aws-chunked body needs a request signed with header auth",
                ));
            }
            (false, _) => None,
        };
        Ok(Self {
            mode,
            state: State::ChunkHeader,
            signer,
            chunk_hash: sha2::Sha256::new(),
            chunk_signature: None,
            trailer,
            checksum: trailer.map(Checksummer::new),
            expected_len: decoded_len,
            decoded_len: 0,
            remaining: 0,
            line: [0; MAX_LINE + 1],
            line_len: 0,
            trailer_lines: 0,
            skipped_blank: false,
            trailer_value: None,
            trailer_signature: None,
            trailer_hash: sha2::Sha256::new(),
            verified: None,
        })
    }

    /// A decoder set up from the request headers and, for signed modes, its verified signature.
    ///
    /// Reads the mode from the verified payload hash (or `x-amz-content-sha256` when the request
    /// was not verified), `x-amz-decoded-content-length` (required: `MissingContentLength`) and
    /// `x-amz-trailer`.
    pub fn from_request(
        headers: &[Header<'_>],
        verified: Option<&VerifiedRequest>,
    ) -> S3Result<Self> {
        let payload = match verified {
            Some(v) => v.payload,
            None => {
                let v = find_header(headers, header::X_AMZ_CONTENT_SHA256).unwrap_or_default();
                super::PayloadHash::parse(core::str::from_utf8(v).unwrap_or_default())?
            }
        };
        let mode = payload
            .streaming()
            .ok_or_else(|| malformed("x-amz-content-sha256 is not a STREAMING-* value"))?;
        let len = find_header(headers, header::X_AMZ_DECODED_CONTENT_LENGTH)
            .ok_or_else(|| S3Error::new(S3ErrorCode::MissingContentLength))?;
        let len = parse_decimal(len).ok_or_else(|| {
            S3Error::with_message(
                S3ErrorCode::InvalidArgument,
                "x-amz-decoded-content-length must be a number",
            )
        })?;
        let trailer = match find_header(headers, header::X_AMZ_TRAILER) {
            None => None,
            Some(v) => Some(
                core::str::from_utf8(v)
                    .ok()
                    .and_then(ChecksumAlgorithm::from_header_name)
                    .ok_or_else(|| {
                        malformed(
                            "The value specified in the x-amz-trailer header is not supported",
                        )
                    })?,
            ),
        };
        Self::new(
            mode,
            len,
            trailer,
            verified.and_then(|v| v.signing.as_ref()),
        )
    }

    /// The framing being decoded.
    pub fn mode(&self) -> StreamingMode {
        self.mode
    }

    /// Decoded bytes so far.
    pub fn decoded_len(&self) -> u64 {
        self.decoded_len
    }

    /// Whether the body ended and checked out.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// The trailer checksum, once it matched the decoded data.
    pub fn checksum(&self) -> Option<Checksum> {
        self.verified
    }

    /// Decode as much of `input` as possible, returning at most one data slice.
    ///
    /// Framing lines split across calls are buffered (at most [`MAX_LINE`] bytes), so all input
    /// is consumed except what follows a returned data slice or the end of the body. After an
    /// error the decoder refuses further input.
    pub fn decode<'a>(&mut self, input: &'a [u8]) -> S3Result<Decoded<'a>> {
        if self.state == State::Failed {
            return Err(malformed("aws-chunked decoding already failed"));
        }
        let r = self.decode_inner(input);
        if r.is_err() {
            self.state = State::Failed;
        }
        r
    }

    /// Decode all of `input`, appending data to `out`; returns the bytes consumed (less than
    /// `input.len()` only when the body ended before the input did).
    pub fn decode_into(&mut self, input: &[u8], out: &mut Vec<u8>) -> S3Result<usize> {
        let mut pos = 0;
        loop {
            let rest = input.get(pos..).unwrap_or_default();
            let step = self.decode(rest)?;
            out.extend_from_slice(step.data);
            pos += step.consumed;
            if step.done || pos >= input.len() {
                return Ok(pos);
            }
        }
    }

    /// The input ended: succeed only if the body is complete.
    ///
    /// A trailer section cut off right after a complete line (no final empty line, as the
    /// documentation's example prints it) is accepted once everything in it checks out.
    pub fn finish(&mut self) -> S3Result<()> {
        let r = match self.state {
            State::Done => Ok(()),
            // Also "0\r\n\r\n" then the end when a trailer was expected: the trailer is missing.
            State::Trailers
                if self.line_len == 0 && (self.trailer_lines > 0 || self.skipped_blank) =>
            {
                self.end_trailers()
            }
            State::Failed => Err(malformed("aws-chunked decoding already failed")),
            _ => Err(S3Error::new(S3ErrorCode::IncompleteBody)),
        };
        if r.is_err() {
            self.state = State::Failed;
        }
        r
    }

    fn decode_inner<'a>(&mut self, input: &'a [u8]) -> S3Result<Decoded<'a>> {
        let mut pos = 0usize;
        loop {
            match self.state {
                State::Done => {
                    return Ok(Decoded {
                        consumed: pos,
                        data: &[],
                        done: true,
                    });
                }
                State::Data => {
                    let rest = input.get(pos..).unwrap_or_default();
                    if rest.is_empty() {
                        return Ok(Decoded {
                            consumed: pos,
                            data: &[],
                            done: false,
                        });
                    }
                    let n =
                        usize::try_from(self.remaining).map_or(rest.len(), |r| r.min(rest.len()));
                    let data = rest.get(..n).unwrap_or_default();
                    if self.signer.is_some() {
                        self.chunk_hash.update(data);
                    }
                    if let Some(c) = &mut self.checksum {
                        c.update(data);
                    }
                    // n <= remaining and decoded + remaining <= expected, so neither overflows.
                    self.remaining = self.remaining.saturating_sub(n as u64);
                    self.decoded_len = self.decoded_len.saturating_add(n as u64);
                    if self.remaining == 0 {
                        self.state = State::DataEnd;
                    }
                    return Ok(Decoded {
                        consumed: pos + n,
                        data,
                        done: false,
                    });
                }
                _ => {
                    if !self.fill_line(input, &mut pos)? {
                        return Ok(Decoded {
                            consumed: pos,
                            data: &[],
                            done: false,
                        });
                    }
                    let (buf, len) = (self.line, self.line_len);
                    self.line_len = 0;
                    // The line buffer holds everything up to '\n'; it must end in '\r'.
                    let line = match buf.get(..len) {
                        Some([line @ .., b'\r']) => line,
                        _ => return Err(malformed("aws-chunked lines must end with CRLF")),
                    };
                    self.on_line(line)?;
                }
            }
        }
    }

    /// Move input into the line buffer up to a '\n'; true once a whole line is buffered.
    fn fill_line(&mut self, input: &[u8], pos: &mut usize) -> S3Result<bool> {
        let rest = input.get(*pos..).unwrap_or_default();
        let (take, complete) = match rest.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (rest.len(), false),
        };
        let end = self
            .line_len
            .checked_add(take)
            .filter(|&e| e <= self.line.len())
            .ok_or_else(|| malformed("aws-chunked framing line too long"))?;
        let (Some(dst), Some(src)) = (self.line.get_mut(self.line_len..end), rest.get(..take))
        else {
            return Err(malformed("aws-chunked framing line too long"));
        };
        dst.copy_from_slice(src);
        self.line_len = end;
        *pos += take + usize::from(complete);
        Ok(complete)
    }

    fn on_line(&mut self, line: &[u8]) -> S3Result<()> {
        match self.state {
            State::ChunkHeader => {
                let (size, signature) = parse_chunk_header(line)?;
                if self.mode.is_signed() {
                    self.chunk_signature =
                        Some(signature.ok_or_else(|| bad_signature("missing chunk-signature"))?);
                }
                if size > self.expected_len.saturating_sub(self.decoded_len) {
                    return Err(S3Error::with_message(
                        S3ErrorCode::InvalidRequest,
                        "aws-chunked body is longer than x-amz-decoded-content-length",
                    ));
                }
                if size == 0 {
                    self.verify_chunk()?;
                    if self.decoded_len != self.expected_len {
                        return Err(S3Error::new(S3ErrorCode::IncompleteBody));
                    }
                    self.state = if self.mode.has_trailer() {
                        State::Trailers
                    } else {
                        State::FinalEnd
                    };
                } else {
                    self.remaining = size;
                    self.state = State::Data;
                }
            }
            State::DataEnd => {
                if !line.is_empty() {
                    return Err(malformed("aws-chunked data longer than its chunk size"));
                }
                self.verify_chunk()?;
                self.state = State::ChunkHeader;
            }
            State::FinalEnd => {
                if !line.is_empty() {
                    return Err(malformed(
                        "aws-chunked body continues after its final chunk",
                    ));
                }
                self.state = State::Done;
            }
            State::Trailers => self.on_trailer_line(line)?,
            State::Data | State::Done | State::Failed => {}
        }
        Ok(())
    }

    fn verify_chunk(&mut self) -> S3Result<()> {
        let Some(signer) = &mut self.signer else {
            return Ok(());
        };
        let hash: [u8; 32] = self.chunk_hash.finalize_reset().into();
        let computed = signer.sign_chunk(&hash);
        match self.chunk_signature.take() {
            Some(declared) if declared == computed => Ok(()),
            _ => Err(bad_signature(
                "The chunk signature we calculated does not match the signature you provided.",
            )),
        }
    }

    fn on_trailer_line(&mut self, line: &[u8]) -> S3Result<()> {
        if line.is_empty() {
            // Some writers (the documentation's example) put an empty line between the final
            // chunk and the trailer: skip one before any trailer when a trailer is expected.
            if self.trailer_lines == 0 && self.trailer.is_some() && !self.skipped_blank {
                self.skipped_blank = true;
                return Ok(());
            }
            return self.end_trailers();
        }
        self.trailer_lines = self.trailer_lines.saturating_add(1);
        let line = core::str::from_utf8(line).map_err(|_| bad_trailer("trailer is not UTF-8"))?;
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| bad_trailer("trailer line without ':'"))?;
        // Only HTTP's optional whitespace (space, tab) surrounds a field; any other control
        // byte is malformed, not trimmed.
        let ows: &[char] = &[' ', '\t'];
        let (name, value) = (name.trim_matches(ows), value.trim_matches(ows));
        if name.eq_ignore_ascii_case(header::X_AMZ_TRAILER_SIGNATURE) {
            if !self.mode.is_signed() || self.trailer_signature.is_some() {
                return Err(bad_trailer("unexpected x-amz-trailer-signature"));
            }
            self.trailer_signature =
                Some(Signature::from_hex(value).ok_or_else(|| {
                    bad_signature("x-amz-trailer-signature is not 64 hex digits")
                })?);
            return Ok(());
        }
        let Some(algorithm) = self
            .trailer
            .filter(|a| a.header_name().eq_ignore_ascii_case(name))
        else {
            return Err(bad_trailer(
                "trailer does not match the x-amz-trailer header of the request",
            ));
        };
        if self.trailer_value.is_some() || self.trailer_signature.is_some() {
            return Err(bad_trailer(
                "trailer repeated or after the trailer signature",
            ));
        }
        self.trailer_value = Some(
            Checksum::from_base64(algorithm, value)
                .ok_or_else(|| invalid_checksum_value(algorithm))?,
        );
        // Canonical trailer for the trailer signature: `name:value\n`, name lower-cased.
        self.trailer_hash.update(algorithm.header_name().as_bytes());
        self.trailer_hash.update(b":");
        self.trailer_hash.update(value.as_bytes());
        self.trailer_hash.update(b"\n");
        Ok(())
    }

    fn end_trailers(&mut self) -> S3Result<()> {
        if self.trailer.is_some() && self.trailer_value.is_none() {
            return Err(bad_trailer("the trailer named by x-amz-trailer is missing"));
        }
        if let Some(signer) = &mut self.signer {
            let declared = self
                .trailer_signature
                .ok_or_else(|| bad_signature("missing x-amz-trailer-signature"))?;
            let hash: [u8; 32] = self.trailer_hash.finalize_reset().into();
            if signer.sign_trailer(&hash) != declared {
                return Err(bad_signature(
                    "The trailer signature we calculated does not match the signature you provided.",
                ));
            }
        }
        if let (Some(provided), Some(hasher)) = (self.trailer_value, self.checksum.take()) {
            let computed = hasher.finalize();
            if computed != provided {
                return Err(S3Error::with_message(
                    S3ErrorCode::BadDigest,
                    alloc::format!(
                        "The {} you specified did not match the calculated checksum.",
                        provided.algorithm().header_name()
                    ),
                ));
            }
            self.verified = Some(computed);
        }
        self.state = State::Done;
        Ok(())
    }
}

/// `<hex-size>[;name=value]*`: the size and the `chunk-signature`, if any. Other extensions are
/// ignored.
fn parse_chunk_header(line: &[u8]) -> S3Result<(u64, Option<Signature>)> {
    let mut parts = line.split(|&b| b == b';');
    let size = parts.next().unwrap_or_default();
    if size.is_empty() || size.len() > 16 {
        return Err(malformed("invalid aws-chunked chunk size"));
    }
    let mut n: u64 = 0;
    for &c in size {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => return Err(malformed("invalid aws-chunked chunk size")),
        };
        // At most 16 digits: fits in u64.
        n = (n << 4) | u64::from(d);
    }
    let mut signature = None;
    for ext in parts {
        if let Some(v) = ext.strip_prefix(CHUNK_SIGNATURE.as_bytes()) {
            let sig = core::str::from_utf8(v)
                .ok()
                .and_then(Signature::from_hex)
                .ok_or_else(|| bad_signature("chunk-signature is not 64 hex digits"))?;
            if signature.replace(sig).is_some() {
                return Err(malformed("chunk-signature repeated"));
            }
        }
    }
    Ok((n, signature))
}

fn parse_decimal(v: &[u8]) -> Option<u64> {
    let v = v.trim_ascii();
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    v.iter().try_fold(0u64, |n, &c| {
        n.checked_mul(10)?.checked_add(u64::from(c - b'0'))
    })
}

/// Encoder of aws-chunked bodies (the client side of [`AwsChunkedDecoder`]).
///
/// Call [`chunk_header`](Self::chunk_header) (then write the data and [`CHUNK_END`]) or
/// [`encode_chunk`](Self::encode_chunk) for each chunk, then [`finish`](Self::finish).
pub struct AwsChunkedEncoder {
    mode: StreamingMode,
    signer: Option<ChunkSigner>,
    trailer: Option<ChecksumAlgorithm>,
    checksum: Option<Checksummer>,
}

impl core::fmt::Debug for AwsChunkedEncoder {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("AwsChunkedEncoder")
            .field("mode", &self.mode)
            .field("trailer", &self.trailer)
            .finish_non_exhaustive()
    }
}

impl AwsChunkedEncoder {
    /// `STREAMING-UNSIGNED-PAYLOAD-TRAILER`, with a checksum trailer if `trailer` is given.
    pub fn unsigned(trailer: Option<ChecksumAlgorithm>) -> Self {
        Self {
            mode: StreamingMode::UnsignedTrailer,
            signer: None,
            trailer,
            checksum: trailer.map(Checksummer::new),
        }
    }

    /// Signed chunks chained from `ctx` (see `sigv4::sign_request`):
    /// `STREAMING-AWS4-HMAC-SHA256-PAYLOAD`, or `...-PAYLOAD-TRAILER` when `trailer` is given.
    pub fn signed(ctx: &SigningContext, trailer: Option<ChecksumAlgorithm>) -> Self {
        Self {
            mode: if trailer.is_some() {
                StreamingMode::SignedTrailer
            } else {
                StreamingMode::Signed
            },
            signer: Some(ChunkSigner::new(ctx)),
            trailer,
            checksum: trailer.map(Checksummer::new),
        }
    }

    /// The framing (its `x-amz-content-sha256` value is `mode().as_str()`).
    pub fn mode(&self) -> StreamingMode {
        self.mode
    }

    /// The checksum trailer (its name is the `x-amz-trailer` value).
    pub fn trailer(&self) -> Option<ChecksumAlgorithm> {
        self.trailer
    }

    /// Append the header line of a chunk holding `data`; the caller then writes `data` and
    /// [`CHUNK_END`]. Empty `data` writes nothing and returns false (the final chunk is
    /// [`finish`](Self::finish)'s).
    pub fn chunk_header(&mut self, data: &[u8], out: &mut Vec<u8>) -> bool {
        if data.is_empty() {
            return false;
        }
        if let Some(c) = &mut self.checksum {
            c.update(data);
        }
        self.header_line(data, out);
        true
    }

    /// Append one whole chunk: header line, `data`, CRLF. Empty `data` appends nothing.
    pub fn encode_chunk(&mut self, data: &[u8], out: &mut Vec<u8>) {
        if self.chunk_header(data, out) {
            out.extend_from_slice(data);
            out.extend_from_slice(CHUNK_END);
        }
    }

    fn header_line(&mut self, data: &[u8], out: &mut Vec<u8>) {
        let mut w = VecWriter(out);
        let _ = write!(w, "{:x}", data.len());
        if let Some(signer) = &mut self.signer {
            let sig = signer.sign_chunk(&sha2::Sha256::digest(data).into());
            let _ = write!(w, ";{CHUNK_SIGNATURE}{sig}");
        }
        w.0.extend_from_slice(CHUNK_END);
    }

    /// Append the final (empty) chunk and the trailer section.
    pub fn finish(mut self, out: &mut Vec<u8>) {
        self.header_line(&[], out);
        let (Some(hasher), Some(algorithm)) = (self.checksum.take(), self.trailer) else {
            out.extend_from_slice(CHUNK_END);
            return;
        };
        let value = hasher.finalize().to_base64();
        let name = algorithm.header_name();
        let mut w = VecWriter(out);
        let _ = write!(w, "{name}:{value}\r\n");
        if let Some(signer) = &mut self.signer {
            let canonical = alloc::format!("{name}:{value}\n");
            let sig = signer.sign_trailer(&sha2::Sha256::digest(canonical.as_bytes()).into());
            let _ = write!(w, "{}:{sig}\r\n", header::X_AMZ_TRAILER_SIGNATURE);
        }
        w.0.extend_from_slice(CHUNK_END);
    }

    /// The encoded length of a `decoded_len`-byte body cut into `chunk_size`-byte chunks (the
    /// last one shorter), for `Content-Length`. `None` on overflow or a zero chunk size.
    pub fn encoded_len(
        mode: StreamingMode,
        trailer: Option<ChecksumAlgorithm>,
        decoded_len: u64,
        chunk_size: u64,
    ) -> Option<u64> {
        if chunk_size == 0 {
            return None;
        }
        let sig_ext = if mode.is_signed() {
            (1 + CHUNK_SIGNATURE.len() + 64) as u64
        } else {
            0
        };
        let crlf = CHUNK_END.len() as u64;
        let chunk = |size: u64| -> Option<u64> {
            hex_digits(size)
                .checked_add(sig_ext)?
                .checked_add(crlf)?
                .checked_add(size)?
                .checked_add(crlf)
        };
        let full = decoded_len / chunk_size;
        let rest = decoded_len % chunk_size;
        let mut total = full.checked_mul(chunk(chunk_size)?)?;
        if rest > 0 {
            total = total.checked_add(chunk(rest)?)?;
        }
        // Final chunk line, trailer lines, closing CRLF.
        total = total.checked_add(1 + sig_ext + crlf + crlf)?;
        if let Some(t) = trailer {
            total =
                total.checked_add((t.header_name().len() + 1 + t.base64_len()) as u64 + crlf)?;
            if mode.is_signed() {
                total = total
                    .checked_add((header::X_AMZ_TRAILER_SIGNATURE.len() + 1 + 64) as u64 + crlf)?;
            }
        }
        Some(total)
    }
}

fn hex_digits(n: u64) -> u64 {
    u64::from((64 - n.leading_zeros()).div_ceil(4).max(1))
}

/// `fmt::Write` into a byte vector.
struct VecWriter<'a>(&'a mut Vec<u8>);

impl core::fmt::Write for VecWriter<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::s3::sigv4::{
        self, CredentialScope, MemoryCredentials, NoKeyCache, RequestParts, derive_signing_key,
    };
    use crate::time::DateTime;
    use alloc::string::String;
    use alloc::vec;
    use proptest::prelude::*;

    const NOW: i64 = 1_369_353_600; // 20130524T000000Z
    const SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

    fn h<'a>(name: &'a str, value: &'a str) -> Header<'a> {
        Header {
            name,
            value: value.as_bytes(),
        }
    }

    /// Feed `body` in pieces of the given sizes (cycled), as a socket would deliver it, keeping
    /// unconsumed bytes like a caller's read buffer; `finish` at the end of input.
    fn decode_split(
        dec: &mut AwsChunkedDecoder,
        body: &[u8],
        splits: &[usize],
    ) -> S3Result<Vec<u8>> {
        let mut out = Vec::new();
        let mut buf: Vec<u8> = Vec::new();
        let mut fed = 0;
        for i in 0.. {
            if fed < body.len() {
                let n = splits[i % splits.len()].clamp(1, body.len() - fed);
                buf.extend_from_slice(&body[fed..fed + n]);
                fed += n;
            }
            while !buf.is_empty() {
                let step = dec.decode(&buf)?;
                // Zero copy: data is a slice of the input.
                assert!(step.data.is_empty() || buf.as_ptr_range().contains(&step.data.as_ptr()));
                out.extend_from_slice(step.data);
                let (consumed, done) = (step.consumed, step.done);
                buf.drain(..consumed);
                if done {
                    return Ok(out);
                }
                assert!(consumed > 0, "no progress on {} bytes", buf.len());
            }
            if fed == body.len() {
                dec.finish()?;
                return Ok(out);
            }
        }
        unreachable!()
    }

    // --- The documentation's chunked upload (sigv4-streaming) ---------------------------------

    const DOC_SEED: &str = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9";
    const DOC_CHUNK_SIGS: [&str; 3] = [
        "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
        "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
        "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
    ];

    fn doc_body() -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(b"10000;chunk-signature=");
        b.extend_from_slice(DOC_CHUNK_SIGS[0].as_bytes());
        b.extend_from_slice(b"\r\n");
        b.extend_from_slice(&[b'a'; 65_536]);
        b.extend_from_slice(b"\r\n400;chunk-signature=");
        b.extend_from_slice(DOC_CHUNK_SIGS[1].as_bytes());
        b.extend_from_slice(b"\r\n");
        b.extend_from_slice(&[b'a'; 1024]);
        b.extend_from_slice(b"\r\n0;chunk-signature=");
        b.extend_from_slice(DOC_CHUNK_SIGS[2].as_bytes());
        b.extend_from_slice(b"\r\n\r\n");
        b
    }

    fn doc_auth(signed: &str, seed: &str) -> String {
        alloc::format!(
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,\
             SignedHeaders={signed},Signature={seed}"
        )
    }

    /// Verify the documented seed request and return what aws-chunked needs.
    fn verify_doc(headers: &[Header<'_>]) -> VerifiedRequest {
        let req = RequestParts {
            method: "PUT",
            path: "/examplebucket/chunkObject.txt",
            query: "",
            headers,
        };
        let store = MemoryCredentials::new().with("AKIAIOSFODNN7EXAMPLE", SECRET);
        sigv4::verify_request(&req, NOW, Some("us-east-1"), &store, &mut NoKeyCache)
            .expect("documented request verifies")
            .expect("authenticated")
    }

    #[test]
    fn documented_chunked_upload_decodes_and_encodes() {
        let auth = doc_auth(
            "content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;\
             x-amz-decoded-content-length;x-amz-storage-class",
            DOC_SEED,
        );
        let headers = [
            h("Host", "s3.amazonaws.com"),
            h("x-amz-date", "20130524T000000Z"),
            h("x-amz-storage-class", "REDUCED_REDUNDANCY"),
            h("Authorization", &auth),
            h("x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"),
            h("Content-Encoding", "aws-chunked"),
            h("x-amz-decoded-content-length", "66560"),
            h("Content-Length", "66824"),
        ];
        let verified = verify_doc(&headers);
        let body = doc_body();
        assert_eq!(body.len(), 66_824, "the documented Content-Length");
        assert_eq!(
            AwsChunkedEncoder::encoded_len(StreamingMode::Signed, None, 66_560, 65_536),
            Some(66_824)
        );
        for splits in [&[usize::MAX][..], &[1], &[7, 3], &[777], &[65_000, 90]] {
            let mut dec = AwsChunkedDecoder::from_request(&headers, Some(&verified)).expect("new");
            let data = decode_split(&mut dec, &body, splits).expect("decodes");
            assert_eq!(data, vec![b'a'; 66_560]);
            assert!(dec.is_done());
        }

        // The encoder writes the documented body byte for byte.
        let mut enc = AwsChunkedEncoder::signed(verified.signing.as_ref().expect("SigV4"), None);
        assert_eq!(enc.mode().as_str(), "STREAMING-AWS4-HMAC-SHA256-PAYLOAD");
        let mut out = Vec::new();
        enc.encode_chunk(&[b'a'; 65_536], &mut out);
        enc.encode_chunk(&[b'a'; 1024], &mut out);
        enc.finish(&mut out);
        assert_eq!(out, body);

        // One byte changed: data, each chunk signature, the final CRLF.
        let data_at = body.len() - 100;
        let mut tampered = body.clone();
        tampered[data_at] = b'b';
        let mut cases = vec![(tampered, S3ErrorCode::SignatureDoesNotMatch)];
        for sig in DOC_CHUNK_SIGS {
            let at = body
                .windows(64)
                .position(|w| w == sig.as_bytes())
                .expect("signature in body");
            let mut t = body.clone();
            t[at + 10] = if t[at + 10] == b'0' { b'1' } else { b'0' };
            cases.push((t, S3ErrorCode::SignatureDoesNotMatch));
        }
        let mut t = body.clone();
        t.truncate(body.len() - 1);
        cases.push((t, S3ErrorCode::IncompleteBody));
        for (t, code) in cases {
            let mut dec = AwsChunkedDecoder::from_request(&headers, Some(&verified)).expect("new");
            let err = decode_split(&mut dec, &t, &[4096]).expect_err("tampered");
            assert_eq!(err.code, code);
            assert!(
                dec.decode(b"0\r\n").is_err(),
                "a failed decoder stays failed"
            );
        }
    }

    // --- The documentation's chunked upload with a trailer (sigv4-streaming-trailers) ---------

    const TRAILER_SEED: &str = "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e";
    const TRAILER_CHUNK_SIGS: [&str; 3] = [
        "b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2",
        "1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7",
        "2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992",
    ];
    const TRAILER_SIG: &str = "d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435";

    /// The documented chunks; `blank` puts an empty line between the final chunk and the
    /// trailer (as the documentation prints it), `closed` ends with the empty line (as SDKs do).
    fn trailer_body(blank: bool, closed: bool) -> Vec<u8> {
        let mut b = Vec::new();
        for (sig, len) in TRAILER_CHUNK_SIGS.iter().zip([65_536usize, 1024, 0]) {
            let _ = write!(VecWriter(&mut b), "{len:x};chunk-signature={sig}\r\n");
            if len > 0 {
                b.extend(core::iter::repeat_n(b'a', len));
                b.extend_from_slice(b"\r\n");
            }
        }
        if blank {
            b.extend_from_slice(b"\r\n");
        }
        b.extend_from_slice(b"x-amz-checksum-crc32c:sOO8/Q==\r\n");
        b.extend_from_slice(b"x-amz-trailer-signature:");
        b.extend_from_slice(TRAILER_SIG.as_bytes());
        b.extend_from_slice(b"\r\n");
        if closed {
            b.extend_from_slice(b"\r\n");
        }
        b
    }

    #[test]
    fn documented_trailer_upload_decodes_and_encodes() {
        let auth = doc_auth(
            "content-encoding;host;x-amz-content-sha256;x-amz-date;\
             x-amz-decoded-content-length;x-amz-storage-class;x-amz-trailer",
            TRAILER_SEED,
        );
        let headers = [
            h("Host", "s3.amazonaws.com"),
            h("x-amz-date", "20130524T000000Z"),
            h("x-amz-storage-class", "REDUCED_REDUNDANCY"),
            h("Authorization", &auth),
            h(
                "x-amz-content-sha256",
                "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
            ),
            h("Content-Encoding", "aws-chunked"),
            h("x-amz-decoded-content-length", "66560"),
            h("x-amz-trailer", "x-amz-checksum-crc32c"),
        ];
        let verified = verify_doc(&headers);
        for (blank, closed) in [(false, true), (true, true), (true, false), (false, false)] {
            let body = trailer_body(blank, closed);
            for splits in [&[usize::MAX][..], &[1], &[333]] {
                let mut dec =
                    AwsChunkedDecoder::from_request(&headers, Some(&verified)).expect("new");
                let data = decode_split(&mut dec, &body, splits)
                    .unwrap_or_else(|e| panic!("blank={blank} closed={closed}: {e}"));
                assert_eq!(data.len(), 66_560);
                assert!(data.iter().all(|&b| b == b'a'));
                let sum = dec.checksum().expect("verified checksum");
                assert_eq!(sum.to_base64(), "sOO8/Q==");
            }
        }

        let mut enc = AwsChunkedEncoder::signed(
            verified.signing.as_ref().expect("SigV4"),
            Some(ChecksumAlgorithm::Crc32c),
        );
        assert_eq!(enc.mode(), StreamingMode::SignedTrailer);
        let mut out = Vec::new();
        let data = [b'a'; 65_536];
        assert!(enc.chunk_header(&data, &mut out));
        out.extend_from_slice(&data);
        out.extend_from_slice(CHUNK_END);
        enc.encode_chunk(&data[..1024], &mut out);
        enc.finish(&mut out);
        assert_eq!(
            out,
            trailer_body(false, true),
            "SDK framing, documented signatures"
        );
        assert_eq!(
            AwsChunkedEncoder::encoded_len(
                StreamingMode::SignedTrailer,
                Some(ChecksumAlgorithm::Crc32c),
                66_560,
                65_536
            ),
            Some(out.len() as u64)
        );

        // The trailer is signed: another value (even a "valid" one) or signature is refused.
        let body = trailer_body(false, true);
        let s = |from: &str, to: &str| {
            let text = String::from_utf8(body.clone()).expect("ascii");
            text.replacen(from, to, 1).into_bytes()
        };
        for t in [
            s("sOO8/Q==", "sOO8/A=="),
            s(&TRAILER_SIG[..8], "00000000"),
            s("x-amz-trailer-signature:", "x-amz-trailer-signaturf:"),
            s("x-amz-checksum-crc32c", "x-amz-checksum-crc32"),
        ] {
            let mut dec = AwsChunkedDecoder::from_request(&headers, Some(&verified)).expect("new");
            let err = decode_split(&mut dec, &t, &[usize::MAX]).expect_err("tampered trailer");
            assert!(
                matches!(
                    err.code,
                    S3ErrorCode::SignatureDoesNotMatch | S3ErrorCode::MalformedTrailerError
                ),
                "{err}"
            );
        }
    }

    // --- Unsigned payload with a checksum trailer (what current SDKs send on PutObject) --------

    fn unsigned_headers<'a>(len: &'a str, trailer: &'a str) -> [Header<'a>; 4] {
        [
            h("Content-Encoding", "aws-chunked"),
            h("x-amz-content-sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER"),
            h("x-amz-decoded-content-length", len),
            h("x-amz-trailer", trailer),
        ]
    }

    fn decode_unsigned(len: &str, trailer: &str, body: &[u8]) -> S3Result<Vec<u8>> {
        let mut dec = AwsChunkedDecoder::from_request(&unsigned_headers(len, trailer), None)?;
        decode_split(&mut dec, body, &[usize::MAX])
    }

    #[test]
    fn unsigned_trailer_as_sdks_frame_it() {
        // CRC-32 of "hello world" is 0x0d4a1185, base64 DUoRhQ==.
        let ok = b"B\r\nhello world\r\n0\r\nx-amz-checksum-crc32:DUoRhQ==\r\n\r\n";
        let crc = "x-amz-checksum-crc32";
        assert_eq!(
            decode_unsigned("11", crc, ok).expect("valid"),
            b"hello world"
        );
        // Several chunks, lower-case hex, chunk extensions ignored.
        let split = b"6;x=y\r\nhello \r\n5\r\nworld\r\n0\r\nx-amz-checksum-crc32:DUoRhQ==\r\n\r\n";
        assert_eq!(
            decode_unsigned("11", crc, split).expect("valid"),
            b"hello world"
        );

        let code = |len: &str, trailer: &str, body: &[u8]| {
            decode_unsigned(len, trailer, body)
                .expect_err("invalid")
                .code
        };
        let wrong = b"B\r\nhello world\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n";
        assert_eq!(code("11", crc, wrong), S3ErrorCode::BadDigest);
        let other = b"B\r\nhello world\r\n0\r\nx-amz-checksum-crc32c:AAAAAA==\r\n\r\n";
        assert_eq!(code("11", crc, other), S3ErrorCode::MalformedTrailerError);
        let missing = b"B\r\nhello world\r\n0\r\n\r\n";
        assert_eq!(code("11", crc, missing), S3ErrorCode::MalformedTrailerError);
        let garbled = b"B\r\nhello world\r\n0\r\nx-amz-checksum-crc32:DUoR\r\n\r\n";
        assert_eq!(code("11", crc, garbled), S3ErrorCode::InvalidRequest);
        // x-amz-decoded-content-length is enforced both ways.
        assert_eq!(code("12", crc, ok), S3ErrorCode::IncompleteBody);
        assert_eq!(code("10", crc, ok), S3ErrorCode::InvalidRequest);
        // Framing: bare LF, data longer than its size, bad size, over-long line, truncation.
        assert_eq!(
            code("11", crc, b"B\nhello world\r\n0\r\n\r\n"),
            S3ErrorCode::InvalidRequest
        );
        assert_eq!(
            code("11", crc, b"A\r\nhello world\r\n0\r\n\r\n"),
            S3ErrorCode::InvalidRequest
        );
        assert_eq!(code("11", crc, b"xyz\r\n"), S3ErrorCode::InvalidRequest);
        assert_eq!(code("11", crc, &[b'1'; 300]), S3ErrorCode::InvalidRequest);
        assert_eq!(code("11", crc, &ok[..20]), S3ErrorCode::IncompleteBody);
        // An unknown x-amz-trailer, a missing decoded length.
        assert_eq!(
            code("11", "x-amz-checksum-md5", ok),
            S3ErrorCode::InvalidRequest
        );
        let no_len = [h(
            "x-amz-content-sha256",
            "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
        )];
        assert_eq!(
            AwsChunkedDecoder::from_request(&no_len, None)
                .expect_err("no length")
                .code,
            S3ErrorCode::MissingContentLength
        );
        // Signed framing without a verified request cannot be checked.
        let signed = [
            h("x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"),
            h("x-amz-decoded-content-length", "1"),
        ];
        assert_eq!(
            AwsChunkedDecoder::from_request(&signed, None)
                .expect_err("unverified")
                .code,
            S3ErrorCode::AccessDenied
        );
    }

    #[test]
    fn bytes_after_the_body_are_left_alone() {
        let body = b"3\r\nabc\r\n0\r\n\r\nNEXT REQUEST";
        let mut dec =
            AwsChunkedDecoder::new(StreamingMode::UnsignedTrailer, 3, None, None).expect("new");
        let mut out = Vec::new();
        let used = dec.decode_into(body, &mut out).expect("valid");
        assert_eq!(out, b"abc");
        assert_eq!(&body[used..], b"NEXT REQUEST");
        assert!(dec.is_done());
        assert_eq!(dec.decode(b"more").expect("done").consumed, 0);
    }

    // --- Properties ----------------------------------------------------------------------------

    fn test_context() -> SigningContext {
        let time = DateTime::from_unix(NOW);
        SigningContext {
            key: derive_signing_key(SECRET, "20130524", "us-east-1", "s3"),
            scope: CredentialScope::new(time, "us-east-1"),
            time,
            seed_signature: sigv4::Signature([7; 32]),
        }
    }

    /// Encode `data` in `chunk`-byte chunks; also return where each data byte landed.
    fn encode(
        mode: StreamingMode,
        trailer: Option<ChecksumAlgorithm>,
        data: &[u8],
        chunk: usize,
    ) -> (Vec<u8>, Vec<usize>) {
        let ctx = test_context();
        let mut enc = match mode {
            StreamingMode::UnsignedTrailer => AwsChunkedEncoder::unsigned(trailer),
            _ => AwsChunkedEncoder::signed(&ctx, trailer),
        };
        assert_eq!(enc.mode(), mode);
        let mut out = Vec::new();
        let mut positions = Vec::new();
        for c in data.chunks(chunk) {
            assert!(enc.chunk_header(c, &mut out));
            positions.extend(out.len()..out.len() + c.len());
            out.extend_from_slice(c);
            out.extend_from_slice(CHUNK_END);
        }
        enc.finish(&mut out);
        (out, positions)
    }

    fn decoder(
        mode: StreamingMode,
        trailer: Option<ChecksumAlgorithm>,
        len: usize,
    ) -> AwsChunkedDecoder {
        let ctx = test_context();
        AwsChunkedDecoder::new(mode, len as u64, trailer, mode.is_signed().then_some(&ctx))
            .expect("new")
    }

    fn mode_and_trailer() -> impl Strategy<Value = (StreamingMode, Option<ChecksumAlgorithm>)> {
        let alg = prop::sample::select(ChecksumAlgorithm::ALL.to_vec());
        prop_oneof![
            Just((StreamingMode::Signed, None)),
            alg.clone()
                .prop_map(|a| (StreamingMode::SignedTrailer, Some(a))),
            alg.prop_map(|a| (StreamingMode::UnsignedTrailer, Some(a))),
            Just((StreamingMode::UnsignedTrailer, None)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn encode_then_decode_round_trips(
            (mode, trailer) in mode_and_trailer(),
            data in proptest::collection::vec(any::<u8>(), 0..3000),
            chunk in 1usize..700,
            splits in proptest::collection::vec(1usize..300, 1..6),
        ) {
            let (body, _) = encode(mode, trailer, &data, chunk);
            prop_assert_eq!(
                AwsChunkedEncoder::encoded_len(mode, trailer, data.len() as u64, chunk as u64),
                Some(body.len() as u64)
            );
            let mut dec = decoder(mode, trailer, data.len());
            let got = decode_split(&mut dec, &body, &splits).map_err(|e| TestCaseError::fail(alloc::format!("{e}")))?;
            prop_assert_eq!(got, data.clone());
            prop_assert!(dec.is_done());
            prop_assert_eq!(dec.checksum(), trailer.map(|a| a.checksum(&data)));
        }

        #[test]
        fn tampered_data_is_rejected(
            (mode, trailer) in mode_and_trailer().prop_filter("detectable", |(m, t)| m.is_signed() || t.is_some()),
            data in proptest::collection::vec(any::<u8>(), 1..2000),
            chunk in 1usize..500,
            pick in any::<prop::sample::Index>(),
            flip in 1u8..=255,
            splits in proptest::collection::vec(1usize..300, 1..6),
        ) {
            let (mut body, positions) = encode(mode, trailer, &data, chunk);
            body[positions[pick.index(positions.len())]] ^= flip;
            let mut dec = decoder(mode, trailer, data.len());
            let err = decode_split(&mut dec, &body, &splits).expect_err("tampered data");
            let want = if mode.is_signed() { S3ErrorCode::SignatureDoesNotMatch } else { S3ErrorCode::BadDigest };
            prop_assert_eq!(err.code, want);
        }

        #[test]
        fn tampered_signatures_are_rejected(
            (mode, trailer) in mode_and_trailer().prop_filter("signed", |(m, _)| m.is_signed()),
            data in proptest::collection::vec(any::<u8>(), 0..1500),
            chunk in 1usize..500,
            pick in any::<prop::sample::Index>(),
            digit in 0usize..64,
        ) {
            let (mut body, _) = encode(mode, trailer, &data, chunk);
            // Every signature in the body: after `chunk-signature=` and `x-amz-trailer-signature:`.
            let starts: Vec<usize> = (0..body.len())
                .filter_map(|i| {
                    let rest = &body[i..];
                    [&b"chunk-signature="[..], b"x-amz-trailer-signature:"]
                        .iter()
                        .find(|p| rest.starts_with(p))
                        .map(|p| i + p.len())
                })
                .collect();
            let at = starts[pick.index(starts.len())] + digit;
            body[at] = if body[at] == b'0' { b'1' } else { b'0' };
            let mut dec = decoder(mode, trailer, data.len());
            let err = decode_split(&mut dec, &body, &[97]).expect_err("tampered signature");
            prop_assert_eq!(err.code, S3ErrorCode::SignatureDoesNotMatch);
        }

        #[test]
        fn arbitrary_bytes_never_panic(
            (mode, trailer) in mode_and_trailer(),
            body in proptest::collection::vec(any::<u8>(), 0..600),
            len in 0u64..1000,
        ) {
            let ctx = test_context();
            let mut dec = AwsChunkedDecoder::new(mode, len, trailer, Some(&ctx)).expect("new");
            let _ = decode_split(&mut dec, &body, &[13]);
        }
    }
}
