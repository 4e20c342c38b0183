//! AWS Signature Version 4 for S3, as plain functions.
//!
//! - [`canonical_request`], [`string_to_sign`], [`derive_signing_key`], [`sign`]: the algorithm
//!   exactly as the S3 API reference describes it (paths are decoded and re-encoded once; S3 does
//!   not double-encode).
//! - [`verify_request`]: server side, header auth (`Authorization: AWS4-HMAC-SHA256 ...`) and
//!   presigned URLs (`X-Amz-Signature=...`), against a [`CredentialStore`].
//! - [`sign_request`], [`presign`], [`ChunkSigner`]: client side (load tester, proxy re-signing).
//! - [`aws_chunked`]: streaming payloads (`STREAMING-*`), their chained chunk and trailer
//!   signatures, decoded and encoded.
//!
//! Everything is sans-IO: the request comes in as method, raw path, raw query and
//! `httparse::Header`s; time comes in as Unix seconds.

pub mod aws_chunked;
mod canonical;
pub(crate) mod key;
mod sign;
mod verify;

#[cfg(test)]
mod tests;

use alloc::string::String;
use core::fmt;
use subtle::ConstantTimeEq as _;

use super::{S3Error, S3ErrorCode, S3Result};
use crate::time::DateTime;

pub use canonical::{
    canonical_headers, canonical_path, canonical_query, canonical_request, string_to_sign,
};
#[cfg(feature = "std")]
pub use key::SharedSigningKeyCache;
pub use key::{KeyCache, NoKeyCache, SigningKey, SigningKeyCache, derive_signing_key, sign};
pub use sign::{
    ChunkSigner, Credentials, RequestSignature, chunk_string_to_sign, presign, sign_request,
    trailer_string_to_sign,
};
pub use verify::{
    AuthKind, AuthorizationHeader, CredentialStore, MemoryCredentials, PresignedQuery,
    VerifiedRequest, parse_authorization, parse_presigned, verify_header_auth, verify_presigned,
    verify_request,
};

/// The only signing algorithm we accept and produce.
pub const ALGORITHM: &str = "AWS4-HMAC-SHA256";
/// Algorithm line of a chunk's string to sign.
pub const CHUNK_ALGORITHM: &str = "AWS4-HMAC-SHA256-PAYLOAD";
/// Algorithm line of a trailer's string to sign.
pub const TRAILER_ALGORITHM: &str = "AWS4-HMAC-SHA256-TRAILER";
/// Last element of every credential scope.
pub const SCOPE_TERMINATOR: &str = "aws4_request";
/// The service name in S3 credential scopes.
pub const SERVICE: &str = "s3";

/// `x-amz-content-sha256` for a body that is not signed.
pub const UNSIGNED_PAYLOAD: &str = "UNSIGNED-PAYLOAD";
/// `x-amz-content-sha256` for aws-chunked with signed chunks.
pub const STREAMING_PAYLOAD: &str = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD";
/// `x-amz-content-sha256` for aws-chunked with signed chunks and a signed trailer.
pub const STREAMING_PAYLOAD_TRAILER: &str = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER";
/// `x-amz-content-sha256` for aws-chunked with unsigned chunks and a checksum trailer.
pub const STREAMING_UNSIGNED_PAYLOAD_TRAILER: &str = "STREAMING-UNSIGNED-PAYLOAD-TRAILER";
/// SHA-256 of the empty string, hex.
pub const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// The longest `X-Amz-Expires` S3 accepts: seven days.
pub const MAX_PRESIGNED_EXPIRES: u64 = 604_800;
/// The largest clock difference S3 tolerates, in seconds (15 minutes).
pub const MAX_CLOCK_SKEW: i64 = 900;

/// Query parameter names of presigned URLs.
pub mod query {
    /// `X-Amz-Algorithm`.
    pub const X_AMZ_ALGORITHM: &str = "X-Amz-Algorithm";
    /// `X-Amz-Credential`.
    pub const X_AMZ_CREDENTIAL: &str = "X-Amz-Credential";
    /// `X-Amz-Date`.
    pub const X_AMZ_DATE: &str = "X-Amz-Date";
    /// `X-Amz-Expires`.
    pub const X_AMZ_EXPIRES: &str = "X-Amz-Expires";
    /// `X-Amz-SignedHeaders`.
    pub const X_AMZ_SIGNED_HEADERS: &str = "X-Amz-SignedHeaders";
    /// `X-Amz-Signature`.
    pub const X_AMZ_SIGNATURE: &str = "X-Amz-Signature";
    /// `X-Amz-Security-Token`.
    pub const X_AMZ_SECURITY_TOKEN: &str = "X-Amz-Security-Token";
    /// `X-Amz-Content-Sha256` (optional in presigned URLs; `UNSIGNED-PAYLOAD` when absent).
    pub const X_AMZ_CONTENT_SHA256: &str = "X-Amz-Content-Sha256";
}

/// A 32-byte HMAC-SHA256 output: a request, chunk or trailer signature.
///
/// Equality is constant-time.
#[derive(Clone, Copy, Eq)]
pub struct Signature(pub [u8; 32]);

impl Signature {
    /// Parse 64 hex digits (either case).
    pub fn from_hex(s: &str) -> Option<Self> {
        let mut out = [0u8; 32];
        hex::decode_to_slice(s.as_bytes(), &mut out).ok()?;
        Some(Self(out))
    }

    /// The lower-case hex form, on the stack.
    pub fn to_hex(&self) -> Hex64 {
        Hex64::of(&self.0)
    }
}

impl PartialEq for Signature {
    fn eq(&self, other: &Self) -> bool {
        // OR of the byte differences, then one `subtle` comparison (its slice comparison puts
        // an optimisation barrier on every byte).
        let diff = self
            .0
            .iter()
            .zip(&other.0)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        diff.ct_eq(&0).into()
    }
}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.to_hex().as_str())
    }
}

impl fmt::Debug for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Signature({self})")
    }
}

/// 64 lower-case hex digits of a 32-byte value, without allocating.
#[derive(Clone, Copy)]
pub struct Hex64([u8; 64]);

impl Hex64 {
    /// Hex of `bytes`.
    pub fn of(bytes: &[u8; 32]) -> Self {
        let mut out = [0u8; 64];
        // Cannot fail: 64 = 2 * 32.
        let _ = hex::encode_to_slice(bytes, &mut out);
        Self(out)
    }

    /// The digits as bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The digits.
    pub fn as_str(&self) -> &str {
        core::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl fmt::Display for Hex64 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Hex64 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

/// SHA-256 of `data`.
pub fn sha256(data: &[u8]) -> [u8; 32] {
    use sha2::Digest as _;
    sha2::Sha256::digest(data).into()
}

/// The credential scope: `<yyyymmdd>/<region>/<service>/aws4_request`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CredentialScope {
    /// The date stamp, `yyyymmdd`.
    pub date: String,
    /// The region, e.g. `us-east-1`.
    pub region: String,
    /// The service, `s3` for us.
    pub service: String,
}

impl CredentialScope {
    /// The S3 scope for the day of `time` in `region`.
    pub fn new(time: DateTime, region: &str) -> Self {
        use alloc::string::ToString;
        Self {
            date: time.date_stamp().to_string(),
            region: region.into(),
            service: SERVICE.into(),
        }
    }
}

impl fmt::Display for CredentialScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}/{}/{SCOPE_TERMINATOR}",
            self.date, self.region, self.service
        )
    }
}

/// What aws-chunked needs after a request's signature was checked or made: the signing key,
/// the scope, the request time and the seed (request) signature that chunk signatures chain from.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningContext {
    /// The derived signing key.
    pub key: SigningKey,
    /// The credential scope.
    pub scope: CredentialScope,
    /// The request time (`x-amz-date`).
    pub time: DateTime,
    /// The request's own signature: the "previous signature" of the first chunk.
    pub seed_signature: Signature,
}

impl fmt::Debug for SigningContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningContext")
            .field("scope", &self.scope)
            .field("time", &self.time)
            .field("seed_signature", &self.seed_signature)
            .finish_non_exhaustive()
    }
}

/// How an aws-chunked body is framed and protected, from `x-amz-content-sha256`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StreamingMode {
    /// `STREAMING-AWS4-HMAC-SHA256-PAYLOAD`: every chunk signed.
    Signed,
    /// `STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER`: every chunk signed, then a signed trailer.
    SignedTrailer,
    /// `STREAMING-UNSIGNED-PAYLOAD-TRAILER`: plain chunks, then a checksum trailer.
    UnsignedTrailer,
}

impl StreamingMode {
    /// The `x-amz-content-sha256` value.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Signed => STREAMING_PAYLOAD,
            Self::SignedTrailer => STREAMING_PAYLOAD_TRAILER,
            Self::UnsignedTrailer => STREAMING_UNSIGNED_PAYLOAD_TRAILER,
        }
    }

    /// Whether chunks carry `chunk-signature`s.
    pub const fn is_signed(self) -> bool {
        matches!(self, Self::Signed | Self::SignedTrailer)
    }

    /// Whether the body ends with a trailer section.
    pub const fn has_trailer(self) -> bool {
        matches!(self, Self::SignedTrailer | Self::UnsignedTrailer)
    }
}

/// The meaning of an `x-amz-content-sha256` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PayloadHash {
    /// The hex SHA-256 of the whole body (to be checked by whoever reads the body).
    Sha256([u8; 32]),
    /// `UNSIGNED-PAYLOAD`.
    Unsigned,
    /// One of the aws-chunked `STREAMING-*` values.
    Streaming(StreamingMode),
}

impl PayloadHash {
    /// Parse an `x-amz-content-sha256` value.
    ///
    /// Anything else is `InvalidArgument`, except SigV4a's ECDSA streaming values, which are
    /// `NotImplemented`.
    pub fn parse(value: &str) -> S3Result<Self> {
        Ok(match value {
            UNSIGNED_PAYLOAD => Self::Unsigned,
            STREAMING_PAYLOAD => Self::Streaming(StreamingMode::Signed),
            STREAMING_PAYLOAD_TRAILER => Self::Streaming(StreamingMode::SignedTrailer),
            STREAMING_UNSIGNED_PAYLOAD_TRAILER => Self::Streaming(StreamingMode::UnsignedTrailer),
            v if v.starts_with("STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD") => {
                return Err(S3Error::with_message(
                    S3ErrorCode::NotImplemented,
                    "SigV4a (ECDSA) streaming payloads are not supported",
                ));
            }
            v if v.len() == 64 => {
                let mut out = [0u8; 32];
                hex::decode_to_slice(v.as_bytes(), &mut out)
                    .map_err(|_| invalid_content_sha256())?;
                Self::Sha256(out)
            }
            _ => return Err(invalid_content_sha256()),
        })
    }

    /// The aws-chunked mode, if this is a `STREAMING-*` value.
    pub fn streaming(self) -> Option<StreamingMode> {
        match self {
            Self::Streaming(m) => Some(m),
            _ => None,
        }
    }
}

fn invalid_content_sha256() -> S3Error {
    S3Error::with_message(
        S3ErrorCode::InvalidArgument,
        "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-UNSIGNED-PAYLOAD-TRAILER, \
         STREAMING-AWS4-HMAC-SHA256-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER, \
         or a valid sha256 value.",
    )
}

/// A request as SigV4 sees it: method, raw path and query as sent, headers.
#[derive(Debug, Clone, Copy)]
pub struct RequestParts<'a> {
    /// The method, e.g. `GET`.
    pub method: &'a str,
    /// The path of the request target as sent (percent-encoded), e.g. `/bucket/my%20key`.
    pub path: &'a str,
    /// The query string as sent, without `?`; empty when there is none.
    pub query: &'a str,
    /// All request headers.
    pub headers: &'a [crate::http::Header<'a>],
}
