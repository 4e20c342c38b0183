//! Request bodies, verified in one place: [`BodyVerifier`] decodes and checks every body a
//! server accepts, and [`Reframer`] re-frames a decoded aws-chunked body for a re-signed
//! request.
//!
//! # The invariant
//!
//! **Nothing is completed before the body is verified**: no object is committed, no forwarded
//! body is finished, no document is acted on until every check the request promises has
//! passed — the payload's SHA-256, every aws-chunked chunk and trailer signature, the trailer
//! checksum, `x-amz-checksum-*`, `Content-MD5` — and the body has exactly its declared length
//! and at most its size limit. The verifier enforces its half:
//!
//! - [`BodyVerifier::feed`] hands back decoded data as slices of the input (no copy). Data is
//!   provisional: a [`Step`] says `done` only once the body is complete *and* verified, which
//!   happens inside the same call that takes its last bytes. A caller that passes each fed
//!   input on only after `feed` returned (a proxy forwarding raw bytes) therefore never
//!   completes an unverified body.
//! - [`BodyVerifier::finish`] (at the end of the input) runs the checks not yet run and returns
//!   a [`VerifiedBody`], which is the proof the completing steps ask for: a store commits with
//!   its checksum, and [`Reframer::finish`], which releases the bytes that complete a
//!   re-framed body, takes it as an argument.
//!
//! Everything here is sans-IO: the caller reads the bytes and writes the results.

use alloc::boxed::Box;
use alloc::vec::Vec;

use sha2::Digest as _;

use super::checksum::{
    Checksum, ChecksumAlgorithm, Checksummer, checksum_header, requested_algorithm,
};
use super::sigv4::aws_chunked::{AwsChunkedDecoder, AwsChunkedEncoder, CHUNK_END};
use super::sigv4::{PayloadHash, VerifiedRequest};
use super::validate::find_content_md5;
use super::{S3Error, S3ErrorCode, S3Result};
use crate::http::{Header, find_header_str};
use crate::md5::{Md5Digest, Md5Sink};
use crate::s3::header;

/// The largest object (and part) S3 accepts in one request: 5 GiB.
pub const MAX_OBJECT_SIZE: u64 = 5 << 30;

/// What a verifier checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checks {
    /// Everything the request promises about its body: what its signature covers (see
    /// [`Checks::Signature`]) and `x-amz-checksum-*` and `Content-MD5`; and the checksum
    /// `x-amz-checksum-algorithm` asks the server to compute. For bodies the server keeps or
    /// acts on.
    All,
    /// What the signature covers: the payload's SHA-256, or the aws-chunked chunk and trailer
    /// signatures and the trailer checksum. For a proxy forwarding the body: the backend gets
    /// the same `x-amz-checksum-*` and `Content-MD5` headers and checks them itself.
    Signature,
    /// What the signature covers and `Content-MD5`, not `x-amz-checksum-*`: for a
    /// CompleteMultipartUpload, whose checksum headers are the object's (a composite one ends
    /// in `-N`), not its body's.
    AllButChecksums,
}

/// The most decoded bytes a body may have, and the error for more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyLimit {
    /// Most decoded bytes.
    pub max: u64,
    /// What a longer body is answered with.
    pub error: S3Error,
}

impl BodyLimit {
    /// An object or part: [`MAX_OBJECT_SIZE`], `EntityTooLarge`; a declared length above it is
    /// refused before the body is read.
    pub fn object() -> Self {
        Self {
            max: MAX_OBJECT_SIZE,
            error: S3Error::new(S3ErrorCode::EntityTooLarge),
        }
    }

    /// An XML document of at most `max` bytes: `MalformedXML` above.
    pub fn document(max: u64) -> Self {
        Self {
            max,
            error: S3Error::with_message(
                S3ErrorCode::MalformedXML,
                "The request body is too large",
            ),
        }
    }
}

/// Running hashes over the decoded body.
///
/// They can be taken out of the verifier ([`BodyVerifier::take_digests`]) and updated
/// elsewhere — a storage node hashes on the thread that writes the data — and must be put back
/// before [`BodyVerifier::finish`].
#[derive(Debug, Default)]
pub struct BodyDigests {
    /// SHA-256, for a payload signed with its hex hash.
    sha256: Option<sha2::Sha256>,
    /// The checksum named by `x-amz-checksum-*` or asked for by algorithm (not a trailer's:
    /// the aws-chunked decoder checks that one).
    checksum: Option<Checksummer>,
    /// MD5, for a `Content-MD5` the caller does not check against a digest of its own.
    md5: Option<Md5Sink>,
}

impl BodyDigests {
    /// Hash the next decoded bytes.
    pub fn update(&mut self, data: &[u8]) {
        if let Some(h) = &mut self.sha256 {
            h.update(data);
        }
        if let Some(c) = &mut self.checksum {
            c.update(data);
        }
        if let Some(m) = &mut self.md5 {
            m.update(data);
        }
    }

    /// Whether there is anything to hash.
    pub fn is_empty(&self) -> bool {
        self.sha256.is_none() && self.checksum.is_none() && self.md5.is_none()
    }
}

/// What one [`BodyVerifier::feed`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step<'a> {
    /// Input bytes used; feed the rest again (the aws-chunked decoder returns at most one run
    /// of data per call).
    pub consumed: usize,
    /// Decoded body bytes: a slice of the input, possibly empty. Provisional until verified.
    pub data: &'a [u8],
    /// The body is complete and every check passed (only when its raw length was declared,
    /// and the digests were in the verifier; otherwise [`BodyVerifier::finish`] tells).
    pub done: bool,
}

/// A body that was read to its end and checked: what [`BodyVerifier::finish`] returns, and the
/// proof that completing steps ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedBody {
    /// Decoded bytes.
    pub len: u64,
    /// The checksum to store with the object: a verified header or trailer value, or one
    /// computed for `x-amz-checksum-algorithm` ([`Checks::All`] only).
    pub checksum: Option<Checksum>,
    /// The body's MD5, when the verifier computed one (to check `Content-MD5`).
    pub md5: Option<Md5Digest>,
}

#[derive(Debug, Clone)]
enum State {
    Open,
    Verified(VerifiedBody),
    Failed,
}

/// Decodes and verifies one request body; see the [module docs](self) for the invariant.
#[derive(Debug)]
pub struct BodyVerifier {
    /// The aws-chunked decoder, for `STREAMING-*` payloads (boxed: it holds a line buffer).
    decoder: Option<Box<AwsChunkedDecoder>>,
    /// In the verifier, or taken out to be updated elsewhere.
    digests: Option<BodyDigests>,
    expected_sha256: Option<[u8; 32]>,
    expected_checksum: Option<Checksum>,
    content_md5: Option<Md5Digest>,
    /// Raw (wire) length, when declared; the body completes when it is reached.
    raw_len: Option<u64>,
    raw_seen: u64,
    decoded: u64,
    // The decoded length the request declares (`Content-Length`, or
    // `x-amz-decoded-content-length` of an aws-chunked body), if it does.
    declared: Option<u64>,
    limit: BodyLimit,
    state: State,
}

impl BodyVerifier {
    /// The verifier of a request's body.
    ///
    /// `headers` are the request's, `verified` its checked signature (its payload hash says
    /// how the body is framed and signed), `raw_len` the body's `Content-Length` on the wire if
    /// it has one. An object whose declared length is above the limit, and malformed
    /// checksum or `Content-MD5` headers ([`Checks::All`]), are refused here, before any byte
    /// of the body is read.
    pub fn new(
        headers: &[Header<'_>],
        verified: &VerifiedRequest,
        raw_len: Option<u64>,
        checks: Checks,
        limit: BodyLimit,
    ) -> S3Result<Self> {
        let (decoder, declared) = match verified.payload {
            PayloadHash::Streaming(_) => {
                let d = AwsChunkedDecoder::from_request(headers, Some(verified))?;
                let declared = find_header_str(headers, header::X_AMZ_DECODED_CONTENT_LENGTH)
                    .and_then(|v| v.trim().parse::<u64>().ok());
                if declared.is_some_and(|n| n > limit.max) {
                    return Err(limit.error);
                }
                (Some(Box::new(d)), declared)
            }
            _ => {
                if raw_len.is_some_and(|n| n > limit.max) {
                    return Err(limit.error);
                }
                (None, raw_len)
            }
        };
        let expected_sha256 = match verified.payload {
            PayloadHash::Sha256(want) => Some(want),
            _ => None,
        };
        let (expected_checksum, algorithm, content_md5) = match checks {
            Checks::Signature => (None, None, None),
            Checks::AllButChecksums => (None, None, find_content_md5(headers)?),
            Checks::All => {
                let expected = checksum_header(headers)?;
                let trailer =
                    decoder.is_some() && find_header_str(headers, header::X_AMZ_TRAILER).is_some();
                let algorithm = match (expected, trailer) {
                    (Some(c), _) => Some(c.algorithm()),
                    (None, true) => None,
                    (None, false) => requested_algorithm(headers)?,
                };
                (expected, algorithm, find_content_md5(headers)?)
            }
        };
        let digests = BodyDigests {
            sha256: expected_sha256.map(|_| sha2::Sha256::new()),
            checksum: algorithm.map(ChecksumAlgorithm::hasher),
            md5: content_md5.map(|_| Md5Sink::new()),
        };
        Ok(Self {
            decoder,
            digests: Some(digests),
            expected_sha256,
            expected_checksum,
            content_md5,
            raw_len,
            declared,
            raw_seen: 0,
            decoded: 0,
            limit,
            state: State::Open,
        })
    }

    /// The caller hashes the decoded body with MD5 itself (a store computes one for the ETag)
    /// and passes it to [`BodyVerifier::finish_with_md5`]: the verifier does not hash twice.
    pub fn with_external_md5(mut self) -> Self {
        if let Some(d) = &mut self.digests {
            d.md5 = None;
        }
        self
    }

    /// Compute the body's `algorithm` checksum too, when the request carries none (a part of a
    /// multipart upload whose checksum the server makes itself); [`VerifiedBody::checksum`]
    /// has it. A checksum the request carries is kept.
    pub fn with_computed_checksum(mut self, algorithm: ChecksumAlgorithm) -> Self {
        if let Some(d) = &mut self.digests
            && d.checksum.is_none()
        {
            d.checksum = Some(algorithm.hasher());
        }
        self
    }

    /// Whether the body passes through unchanged with nothing to check on the way (plain,
    /// unsigned, no digest asked for): it can be relayed without being looked at.
    pub fn is_transparent(&self) -> bool {
        self.decoder.is_none()
            && self.expected_sha256.is_none()
            && self.expected_checksum.is_none()
            && self.content_md5.is_none()
            && self.digests.as_ref().is_some_and(BodyDigests::is_empty)
    }

    /// Whether the body is aws-chunked (decoded data differs from the wire bytes).
    pub fn is_aws_chunked(&self) -> bool {
        self.decoder.is_some()
    }

    /// The decoded length the request declares, if it does (a hint: the store reserves that
    /// much disk space up front).
    pub fn declared_len(&self) -> Option<u64> {
        self.declared
    }

    /// Decoded bytes so far.
    pub fn decoded_len(&self) -> u64 {
        self.decoded
    }

    /// Take the running digests out, to update them elsewhere with the decoded data (in the
    /// same order); until they are back, `feed` never reports `done`.
    pub fn take_digests(&mut self) -> Option<BodyDigests> {
        self.digests.take()
    }

    /// Put the digests back.
    pub fn restore_digests(&mut self, digests: BodyDigests) {
        self.digests = Some(digests);
    }

    /// Decode and check the next input bytes; see [`Step`].
    ///
    /// After an error the verifier refuses further input.
    pub fn feed<'a>(&mut self, input: &'a [u8]) -> S3Result<Step<'a>> {
        match &self.state {
            State::Open => {}
            State::Verified(_) if input.is_empty() => {
                return Ok(Step {
                    consumed: 0,
                    data: &[],
                    done: true,
                });
            }
            State::Verified(_) => return Err(self.fail(trailing_data())),
            State::Failed => return Err(failed()),
        }
        match self.feed_open(input) {
            Ok(step) => Ok(step),
            Err(e) => Err(self.fail(e)),
        }
    }

    fn feed_open<'a>(&mut self, input: &'a [u8]) -> S3Result<Step<'a>> {
        let (consumed, data) = match self.decoder.as_deref_mut() {
            None => {
                if self
                    .raw_len
                    .is_some_and(|n| self.raw_seen + input.len() as u64 > n)
                {
                    return Err(trailing_data());
                }
                (input.len(), input)
            }
            Some(d) => {
                if input.is_empty() {
                    return Ok(Step {
                        consumed: 0,
                        data: &[],
                        done: false,
                    });
                }
                if d.is_done() {
                    return Err(trailing_data());
                }
                let step = d.decode(input)?;
                if step.done && step.consumed < input.len() {
                    return Err(trailing_data());
                }
                if step.consumed == 0 && step.data.is_empty() && !step.done {
                    // The decoder consumes all input it does not hand back; never spin.
                    return Err(S3Error::with_message(
                        S3ErrorCode::InternalError,
                        "aws-chunked decoding made no progress",
                    ));
                }
                (step.consumed, step.data)
            }
        };
        self.raw_seen += consumed as u64;
        self.decoded += data.len() as u64;
        if self.decoded > self.limit.max {
            return Err(self.limit.error.clone());
        }
        if let Some(d) = &mut self.digests {
            d.update(data);
        }
        // The bytes that complete a declared length are verified before they are handed back.
        let complete = self.raw_len == Some(self.raw_seen) && self.digests.is_some();
        if complete {
            self.verify(None)?;
        }
        Ok(Step {
            consumed,
            data,
            done: complete,
        })
    }

    /// The input ended: run the remaining checks. Idempotent once verified.
    pub fn finish(&mut self) -> S3Result<VerifiedBody> {
        self.finish_inner(None)
    }

    /// [`BodyVerifier::finish`], with the MD5 of the decoded body computed by the caller (see
    /// [`BodyVerifier::with_external_md5`]) to check `Content-MD5` against.
    pub fn finish_with_md5(&mut self, md5: &Md5Digest) -> S3Result<VerifiedBody> {
        self.finish_inner(Some(md5))
    }

    fn finish_inner(&mut self, md5: Option<&Md5Digest>) -> S3Result<VerifiedBody> {
        match &self.state {
            State::Verified(v) => return Ok(v.clone()),
            State::Failed => return Err(failed()),
            State::Open => {}
        }
        if self.raw_len.is_some_and(|n| self.raw_seen < n) {
            return Err(self.fail(S3Error::new(S3ErrorCode::IncompleteBody)));
        }
        self.verify(md5).map_err(|e| self.fail(e))
    }

    /// Every check, now that all bytes went through; the verdict is kept.
    fn verify(&mut self, external_md5: Option<&Md5Digest>) -> S3Result<VerifiedBody> {
        if let Some(d) = self.decoder.as_deref_mut()
            && !d.is_done()
        {
            d.finish()?;
        }
        let digests = self.digests.take().ok_or_else(|| {
            S3Error::with_message(S3ErrorCode::InternalError, "body digests not restored")
        })?;
        if let (Some(want), Some(h)) = (self.expected_sha256, digests.sha256) {
            let got: [u8; 32] = h.finalize().into();
            if got != want {
                return Err(S3Error::new(S3ErrorCode::XAmzContentSHA256Mismatch));
            }
        }
        let computed = digests.checksum.map(Checksummer::finalize);
        if let (Some(want), Some(got)) = (self.expected_checksum, computed)
            && want != got
        {
            return Err(S3Error::with_message(
                S3ErrorCode::BadDigest,
                alloc::format!(
                    "The {} you specified did not match the calculated checksum.",
                    want.algorithm().header_name()
                ),
            ));
        }
        let md5 = digests.md5.map(Md5Sink::finalize);
        if let Some(want) = self.content_md5 {
            let got = md5.as_ref().or(external_md5).ok_or_else(|| {
                S3Error::with_message(S3ErrorCode::InternalError, "no MD5 to check Content-MD5")
            })?;
            if *got != want {
                return Err(S3Error::with_message(
                    S3ErrorCode::BadDigest,
                    "The Content-MD5 you specified did not match what we received.",
                ));
            }
        }
        let trailer = self.decoder.as_ref().and_then(|d| d.checksum());
        let v = VerifiedBody {
            len: self.decoded,
            checksum: trailer.or(computed),
            md5,
        };
        self.state = State::Verified(v.clone());
        Ok(v)
    }

    fn fail(&mut self, e: S3Error) -> S3Error {
        self.state = State::Failed;
        e
    }
}

fn trailing_data() -> S3Error {
    S3Error::with_message(
        S3ErrorCode::InvalidRequest,
        "data after the end of the request body",
    )
}

fn failed() -> S3Error {
    S3Error::with_message(
        S3ErrorCode::InvalidRequest,
        "request body verification already failed",
    )
}

/// Bytes to write, in order: up to three pieces, each possibly empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Emit<'a> {
    /// The pieces: a chunk header line, the data, what ends it.
    pub parts: [&'a [u8]; 3],
}

impl Emit<'_> {
    /// Total bytes.
    pub fn len(&self) -> usize {
        self.parts.iter().map(|p| p.len()).sum()
    }

    /// Whether there is nothing to write.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Re-frames a decoded body for a re-signed request: into fixed-size aws-chunked chunks
/// (`STREAMING-UNSIGNED-PAYLOAD-TRAILER`, with the checksum trailer the client sent), or as
/// plain bytes (`encoder: None`), so that its length is known up front.
///
/// It holds back up to one buffer of data: a full buffer goes out only when more data follows
/// it, and the last one only from [`Reframer::finish`], which asks for the [`VerifiedBody`].
/// So the bytes that complete the outgoing body never leave before the incoming one is
/// verified.
#[derive(Debug)]
pub struct Reframer<B> {
    encoder: Option<AwsChunkedEncoder>,
    buf: B,
    filled: usize,
    /// The last emit came from `buf`: empty it before taking more.
    sent: bool,
    line: Vec<u8>,
    end: Vec<u8>,
}

impl<B: AsRef<[u8]> + AsMut<[u8]>> Reframer<B> {
    /// A re-framer collecting chunks of `buf`'s size (at least 1 byte) in `buf`.
    pub fn new(encoder: Option<AwsChunkedEncoder>, buf: B) -> Self {
        Self {
            encoder,
            buf,
            filled: 0,
            sent: false,
            line: Vec::with_capacity(96),
            end: Vec::new(),
        }
    }

    /// Take decoded data: the bytes used (feed the rest again) and, when a full chunk must go
    /// out first, what to write (then call again with the same data).
    pub fn push(&mut self, data: &[u8]) -> (usize, Option<Emit<'_>>) {
        if self.sent {
            self.filled = 0;
            self.sent = false;
        }
        if data.is_empty() {
            return (0, None);
        }
        let size = self.buf.as_ref().len();
        if self.filled >= size {
            // Full, and more data follows: these are not the final bytes, they may go.
            self.sent = true;
            return (0, Some(self.emit_buf(false)));
        }
        let n = data.len().min(size - self.filled);
        if let (Some(dst), Some(src)) = (
            self.buf.as_mut().get_mut(self.filled..self.filled + n),
            data.get(..n),
        ) {
            dst.copy_from_slice(src);
        }
        self.filled += n;
        (n, None)
    }

    /// The end of the body, once it is verified: the held-back data, and for aws-chunked the
    /// final chunk and the trailer.
    pub fn finish(&mut self, verified: &VerifiedBody) -> Emit<'_> {
        let _proof = verified;
        if self.sent {
            self.filled = 0;
            self.sent = false;
        }
        self.sent = true;
        self.emit_buf(true)
    }

    fn emit_buf(&mut self, last: bool) -> Emit<'_> {
        self.line.clear();
        self.end.clear();
        let data = self.buf.as_ref().get(..self.filled).unwrap_or_default();
        let Some(enc) = self.encoder.as_mut() else {
            return Emit {
                parts: [&[], data, &[]],
            };
        };
        if enc.chunk_header(data, &mut self.line) {
            self.end.extend_from_slice(CHUNK_END);
        }
        if last && let Some(enc) = self.encoder.take() {
            enc.finish(&mut self.end);
        }
        Emit {
            parts: [&self.line, data, &self.end],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::s3::outbound::OutboundRequest;
    use crate::s3::sigv4::{
        Credentials, Hex64, MemoryCredentials, NoKeyCache, RequestParts, SigningContext,
        StreamingMode, UNSIGNED_PAYLOAD, sha256, verify_request,
    };
    use alloc::string::{String, ToString};
    use alloc::vec;
    use proptest::prelude::*;

    const NOW: i64 = 1_700_000_000;

    /// A signed request: its headers (owned) and what verifying it says.
    struct Signed {
        headers: Vec<(String, Vec<u8>)>,
        verified: VerifiedRequest,
        signing: SigningContext,
    }

    impl Signed {
        fn views(&self) -> Vec<Header<'_>> {
            self.headers
                .iter()
                .map(|(n, v)| Header { name: n, value: v })
                .collect()
        }

        fn verifier(&self, raw_len: Option<u64>, checks: Checks) -> S3Result<BodyVerifier> {
            BodyVerifier::new(
                &self.views(),
                &self.verified,
                raw_len,
                checks,
                BodyLimit::object(),
            )
        }
    }

    fn sign(payload_hash: &str, extra: &[(&str, &str)]) -> Signed {
        let creds = Credentials::new("AKIDBODY", "body/secret");
        let mut req = OutboundRequest::new("PUT", "/b/k", "");
        for (n, v) in extra {
            req.header(*n, v.as_bytes());
        }
        let signing = req
            .sign("h", payload_hash, &creds, "us-east-1", NOW, &mut NoKeyCache)
            .expect("signs");
        let headers: Vec<(String, Vec<u8>)> = req
            .headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_vec()))
            .collect();
        let views: Vec<Header<'_>> = headers
            .iter()
            .map(|(n, v)| Header { name: n, value: v })
            .collect();
        let parts = RequestParts {
            method: "PUT",
            path: "/b/k",
            query: "",
            headers: &views,
        };
        let store = MemoryCredentials::new().with("AKIDBODY", "body/secret");
        let verified = verify_request(&parts, NOW, Some("us-east-1"), &store, &mut NoKeyCache)
            .expect("verifies")
            .expect("signed");
        Signed {
            headers,
            verified,
            signing,
        }
    }

    fn data(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 31 % 251) as u8).collect()
    }

    /// Feed `wire` in pieces of the given sizes (cycled), as a caller forwarding raw bytes
    /// does; returns the decoded data, the index of the feed that said `done` (if any), how
    /// many feeds there were, and the first error.
    fn feed_all(
        v: &mut BodyVerifier,
        wire: &[u8],
        splits: &[usize],
    ) -> (Vec<u8>, Option<usize>, usize, Option<S3Error>) {
        let (mut out, mut done_at, mut feeds) = (Vec::new(), None, 0);
        let mut pos = 0;
        let mut turn = 0;
        while pos < wire.len() {
            let n = splits[turn % splits.len()].clamp(1, wire.len() - pos);
            turn += 1;
            let mut piece = &wire[pos..pos + n];
            pos += n;
            while !piece.is_empty() {
                feeds += 1;
                match v.feed(piece) {
                    Ok(step) => {
                        assert!(done_at.is_none(), "input after done was accepted");
                        out.extend_from_slice(step.data);
                        if step.done {
                            done_at = Some(feeds);
                        }
                        piece = &piece[step.consumed..];
                    }
                    Err(e) => return (out, done_at, feeds, Some(e)),
                }
            }
        }
        (out, done_at, feeds, None)
    }

    #[test]
    fn a_signed_payload_completes_only_when_its_hash_matches() {
        let body = data(10_000);
        let hash = Hex64::of(&sha256(&body));
        let s = sign(hash.as_str(), &[]);
        for splits in [&[1usize][..], &[7, 4096], &[10_000]] {
            let mut v = s.verifier(Some(10_000), Checks::Signature).unwrap();
            assert!(!v.is_transparent());
            let (out, done_at, feeds, err) = feed_all(&mut v, &body, splits);
            assert_eq!(
                (out.as_slice(), done_at, err),
                (&body[..], Some(feeds), None)
            );
            assert_eq!(v.finish().unwrap().len, 10_000);
            // One byte changed anywhere: the completing feed fails, and nothing said done.
            let mut bad = body.clone();
            bad[9_999 - splits[0] % 9_999] ^= 1;
            let mut v = s.verifier(Some(10_000), Checks::Signature).unwrap();
            let (_, done_at, _, err) = feed_all(&mut v, &bad, splits);
            assert_eq!(done_at, None);
            assert_eq!(err.unwrap().code, S3ErrorCode::XAmzContentSHA256Mismatch);
            assert!(v.finish().is_err(), "a failed verifier stays failed");
        }
    }

    #[test]
    fn a_short_or_long_body_is_refused() {
        let s = sign(UNSIGNED_PAYLOAD, &[]);
        let mut v = s.verifier(Some(10), Checks::All).unwrap();
        assert!(v.is_transparent());
        assert!(!v.feed(b"12345").unwrap().done);
        assert_eq!(v.finish().unwrap_err().code, S3ErrorCode::IncompleteBody);
        let mut v = s.verifier(Some(3), Checks::All).unwrap();
        assert_eq!(
            v.feed(b"1234").unwrap_err().code,
            S3ErrorCode::InvalidRequest
        );
        let mut v = s.verifier(Some(3), Checks::All).unwrap();
        assert!(v.feed(b"123").unwrap().done);
        assert!(v.feed(b"").unwrap().done);
        assert_eq!(v.feed(b"4").unwrap_err().code, S3ErrorCode::InvalidRequest);
    }

    #[test]
    fn limits_are_checked_before_and_while_reading() {
        let s = sign(UNSIGNED_PAYLOAD, &[]);
        let e = s
            .verifier(Some(MAX_OBJECT_SIZE + 1), Checks::All)
            .unwrap_err();
        assert_eq!(e.code, S3ErrorCode::EntityTooLarge);
        let mut v = BodyVerifier::new(
            &s.views(),
            &s.verified,
            None,
            Checks::All,
            BodyLimit::document(4),
        )
        .unwrap();
        assert!(v.feed(b"1234").is_ok());
        assert_eq!(v.feed(b"5").unwrap_err().code, S3ErrorCode::MalformedXML);
        let len = (MAX_OBJECT_SIZE + 1).to_string();
        let s = sign(
            StreamingMode::UnsignedTrailer.as_str(),
            &[
                ("x-amz-decoded-content-length", &len),
                ("content-encoding", "aws-chunked"),
            ],
        );
        assert_eq!(
            s.verifier(None, Checks::Signature).unwrap_err().code,
            S3ErrorCode::EntityTooLarge
        );
    }

    #[test]
    fn checksums_and_content_md5_with_all_checks() {
        let body = b"hello checksums";
        let crc = ChecksumAlgorithm::Crc32.checksum(body).to_base64();
        let md5 = crate::md5::content_md5(&crate::md5::md5(body));
        let s = sign(
            UNSIGNED_PAYLOAD,
            &[
                ("x-amz-checksum-crc32", crc.as_str()),
                ("content-md5", md5.as_str()),
            ],
        );
        // A proxy forwarding the body leaves these to the backend.
        assert!(
            s.verifier(None, Checks::Signature)
                .unwrap()
                .is_transparent()
        );
        let mut v = s.verifier(Some(body.len() as u64), Checks::All).unwrap();
        assert!(v.feed(body).unwrap().done);
        let got = v.finish().unwrap();
        assert_eq!(got.checksum, Some(ChecksumAlgorithm::Crc32.checksum(body)));
        assert_eq!(got.md5, Some(crate::md5::md5(body)));
        let mut v = s.verifier(None, Checks::All).unwrap();
        v.feed(b"hello checksumz").unwrap();
        assert_eq!(v.finish().unwrap_err().code, S3ErrorCode::BadDigest);
        // The MD5 computed by the caller, digests updated outside the verifier.
        let s = sign(UNSIGNED_PAYLOAD, &[("content-md5", md5.as_str())]);
        let mut v = s
            .verifier(Some(body.len() as u64), Checks::All)
            .unwrap()
            .with_external_md5();
        let mut d = v.take_digests().unwrap();
        let step = v.feed(body).unwrap();
        assert!(!step.done, "not done while the digests are out");
        d.update(step.data);
        v.restore_digests(d);
        assert!(v.finish_with_md5(&crate::md5::md5(body)).is_ok());
        let mut v = s.verifier(None, Checks::All).unwrap().with_external_md5();
        v.feed(body).unwrap();
        let wrong = crate::md5::md5(b"other");
        assert_eq!(
            v.finish_with_md5(&wrong).unwrap_err().code,
            S3ErrorCode::BadDigest
        );
        // A checksum computed because the request asked for one.
        let s = sign(UNSIGNED_PAYLOAD, &[("x-amz-checksum-algorithm", "CRC32C")]);
        let mut v = s.verifier(None, Checks::All).unwrap();
        v.feed(body).unwrap();
        let want = ChecksumAlgorithm::Crc32c.checksum(body);
        assert_eq!(v.finish().unwrap().checksum, Some(want));
    }

    #[test]
    fn checksum_headers_can_be_left_to_the_operation() {
        // A CompleteMultipartUpload names the object's composite checksum: not the body's.
        let body = b"<CompleteMultipartUpload/>";
        let md5 = crate::md5::content_md5(&crate::md5::md5(body));
        let s = sign(
            UNSIGNED_PAYLOAD,
            &[
                ("x-amz-checksum-sha256", "not-a-body-checksum-3"),
                ("content-md5", md5.as_str()),
            ],
        );
        assert!(s.verifier(None, Checks::All).is_err());
        let mut v = s.verifier(None, Checks::AllButChecksums).unwrap();
        v.feed(body).unwrap();
        assert_eq!(v.finish().unwrap().checksum, None);
        let mut v = s.verifier(None, Checks::AllButChecksums).unwrap();
        v.feed(b"<other/>").unwrap();
        assert_eq!(v.finish().unwrap_err().code, S3ErrorCode::BadDigest);
    }

    /// An aws-chunked body as an SDK sends it: signed chunks of `chunk` bytes and a CRC32
    /// trailer, with its request.
    fn streaming(body: &[u8], chunk: usize) -> (Signed, Vec<u8>) {
        let len = body.len().to_string();
        let s = sign(
            StreamingMode::SignedTrailer.as_str(),
            &[
                ("content-encoding", "aws-chunked"),
                ("x-amz-decoded-content-length", &len),
                ("x-amz-trailer", "x-amz-checksum-crc32"),
            ],
        );
        let mut enc = AwsChunkedEncoder::signed(&s.signing, Some(ChecksumAlgorithm::Crc32));
        let mut wire = Vec::new();
        for c in body.chunks(chunk) {
            enc.encode_chunk(c, &mut wire);
        }
        enc.finish(&mut wire);
        (s, wire)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Any split: the data comes out whole, `done` comes with the last wire byte; any one
        /// byte changed: no feed says `done`.
        #[test]
        fn aws_chunked_bodies_complete_only_verified(
            len in 0usize..5000,
            chunk in 1usize..2000,
            splits in proptest::collection::vec(1usize..700, 1..5),
            flip in any::<prop::sample::Index>(),
        ) {
            let body = data(len);
            let (s, wire) = streaming(&body, chunk);
            let mut v = s.verifier(Some(wire.len() as u64), Checks::All).unwrap();
            prop_assert!(v.is_aws_chunked());
            let (out, done_at, feeds, err) = feed_all(&mut v, &wire, &splits);
            prop_assert_eq!(err, None);
            prop_assert_eq!(&out, &body);
            prop_assert_eq!(done_at, Some(feeds));
            let got = v.finish().unwrap();
            prop_assert_eq!(got.checksum, Some(ChecksumAlgorithm::Crc32.checksum(&body)));
            let mut bad = wire.clone();
            let i = flip.index(bad.len());
            bad[i] ^= 0x01;
            let mut v = s.verifier(Some(bad.len() as u64), Checks::All).unwrap();
            let (_, done_at, _, err) = feed_all(&mut v, &bad, &splits);
            prop_assert_eq!(done_at, None);
            prop_assert!(err.is_some() || v.finish().is_err());
        }

        /// Decoded, re-framed (unsigned, same trailer, other chunk size) and decoded again:
        /// the same bytes and checksum; the tail leaves only with the proof of verification.
        #[test]
        fn reframed_bodies_decode_to_the_original(
            len in 0usize..5000,
            chunk in 1usize..2000,
            out_chunk in 1usize..3000,
            plain in any::<bool>(),
        ) {
            let body = data(len);
            let (s, wire) = streaming(&body, chunk);
            let mut v = s.verifier(Some(wire.len() as u64), Checks::Signature).unwrap();
            let trailer = Some(ChecksumAlgorithm::Crc32);
            let encoder = (!plain).then(|| AwsChunkedEncoder::unsigned(trailer));
            let mut r = Reframer::new(encoder, vec![0u8; out_chunk]);
            let mut sent = Vec::new();
            let mut rest = &wire[..];
            while !rest.is_empty() {
                let step = v.feed(rest).unwrap();
                let mut data = step.data;
                while !data.is_empty() {
                    let (n, emit) = r.push(data);
                    if let Some(e) = emit {
                        for p in e.parts {
                            sent.extend_from_slice(p);
                        }
                    }
                    data = &data[n..];
                }
                rest = &rest[step.consumed..];
            }
            let held = if plain { body.len() - sent.len() } else { 1 };
            prop_assert!(held > 0 || body.is_empty(), "the tail waits for finish");
            let proof = v.finish().unwrap();
            for p in r.finish(&proof).parts {
                sent.extend_from_slice(p);
            }
            if plain {
                prop_assert_eq!(&sent, &body);
            } else {
                let want_len = AwsChunkedEncoder::encoded_len(
                    StreamingMode::UnsignedTrailer, trailer, len as u64, out_chunk as u64,
                );
                prop_assert_eq!(Some(sent.len() as u64), want_len);
                let mut d = AwsChunkedDecoder::new(
                    StreamingMode::UnsignedTrailer, len as u64, trailer, None,
                ).unwrap();
                let mut again = Vec::new();
                let used = d.decode_into(&sent, &mut again).unwrap();
                prop_assert_eq!(used, sent.len());
                d.finish().unwrap();
                prop_assert_eq!(&again, &body);
                prop_assert_eq!(d.checksum(), Some(ChecksumAlgorithm::Crc32.checksum(&body)));
            }
        }
    }
}
