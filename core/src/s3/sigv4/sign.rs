//! Client side: sign requests (header auth), presign URLs, sign aws-chunked chunks and trailers.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write as _};
use hmac::Mac as _;

use super::key::HmacSha256;
use super::{
    ALGORITHM, CHUNK_ALGORITHM, CredentialScope, EMPTY_SHA256, Hex64, KeyCache,
    MAX_PRESIGNED_EXPIRES, RequestParts, Signature, SigningContext, TRAILER_ALGORITHM,
    UNSIGNED_PAYLOAD, canonical_query, canonical_request, query, sign, string_to_sign,
};
use crate::http::{Header, find_header};
use crate::s3::header;
use crate::s3::uri::encode;
use crate::s3::{S3Error, S3ErrorCode, S3Result};
use crate::time::DateTime;

/// An access key id and its secret. `Debug` does not print the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The access key id.
    pub access_key_id: String,
    /// The secret access key.
    pub secret_access_key: String,
}

impl Credentials {
    /// Credentials from an id and a secret.
    pub fn new(access_key_id: impl Into<String>, secret_access_key: impl Into<String>) -> Self {
        Self {
            access_key_id: access_key_id.into(),
            secret_access_key: secret_access_key.into(),
        }
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key_id", &self.access_key_id)
            .finish_non_exhaustive()
    }
}

/// What [`sign_request`] produced: the headers to add and the context for chunk signing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestSignature {
    /// The `Authorization` header value.
    pub authorization: String,
    /// The `x-amz-date` header value.
    pub x_amz_date: String,
    /// The `x-amz-content-sha256` header value (the payload hash that was signed).
    pub x_amz_content_sha256: String,
    /// The `;`-separated signed header names.
    pub signed_headers: String,
    /// Key, scope, time and seed signature, for aws-chunked chunk signatures.
    pub signing: SigningContext,
}

// Not signed: hop-by-hop or rewritten by intermediaries (the AWS SDKs skip these too).
const UNSIGNED_HEADERS: [&str; 6] = [
    header::AUTHORIZATION,
    header::USER_AGENT,
    "expect",
    "transfer-encoding",
    "connection",
    "x-amzn-trace-id",
];

fn is_signable(name: &str) -> bool {
    !UNSIGNED_HEADERS
        .iter()
        .any(|u| u.eq_ignore_ascii_case(name))
        && !name.eq_ignore_ascii_case(header::X_AMZ_DATE)
        && !name.eq_ignore_ascii_case(header::X_AMZ_CONTENT_SHA256)
}

fn signed_header_list(headers: &[Header<'_>]) -> String {
    let mut names: Vec<String> = headers
        .iter()
        .map(|h| h.name.to_ascii_lowercase())
        .collect();
    names.sort_unstable();
    names.dedup();
    names.join(";")
}

fn require_host(headers: &[Header<'_>]) -> S3Result<()> {
    find_header(headers, header::HOST)
        .map(|_| ())
        .ok_or_else(|| {
            S3Error::with_message(
                S3ErrorCode::InvalidArgument,
                "a Host header is required to sign",
            )
        })
}

/// Sign a request with header auth.
///
/// Signs every header in `req.headers` (except `Authorization`, `User-Agent`, `Expect`,
/// `Transfer-Encoding`, `Connection`, `X-Amzn-Trace-Id`) plus the `x-amz-date` and
/// `x-amz-content-sha256` it returns, which the caller must send. `payload_hash` is
/// [`UNSIGNED_PAYLOAD`], a `STREAMING-*` value, or the hex SHA-256 of the body. `Host` must be in
/// `req.headers`.
pub fn sign_request(
    req: &RequestParts<'_>,
    payload_hash: &str,
    credentials: &Credentials,
    region: &str,
    now: i64,
    cache: &mut impl KeyCache,
) -> S3Result<RequestSignature> {
    require_host(req.headers)?;
    let time = DateTime::from_unix(now);
    let x_amz_date = alloc::string::ToString::to_string(&time.amz());
    let mut headers: Vec<Header<'_>> = req
        .headers
        .iter()
        .filter(|h| is_signable(h.name))
        .copied()
        .collect();
    headers.push(Header {
        name: header::X_AMZ_DATE,
        value: x_amz_date.as_bytes(),
    });
    headers.push(Header {
        name: header::X_AMZ_CONTENT_SHA256,
        value: payload_hash.as_bytes(),
    });
    let signed_headers = signed_header_list(&headers);
    let parts = RequestParts {
        headers: &headers,
        ..*req
    };
    let scope = CredentialScope::new(time, region);
    let key = cache.signing_key(
        &credentials.access_key_id,
        &credentials.secret_access_key,
        &scope,
    );
    let creq = canonical_request(&parts, &signed_headers, payload_hash, false)?;
    let signature = sign(&key, string_to_sign(time, &scope, &creq).as_bytes());
    let mut authorization = String::with_capacity(200);
    let _ = write!(
        authorization,
        "{ALGORITHM} Credential={}/{scope},SignedHeaders={signed_headers},Signature={signature}",
        credentials.access_key_id
    );
    Ok(RequestSignature {
        authorization,
        x_amz_date,
        x_amz_content_sha256: payload_hash.into(),
        signed_headers,
        signing: SigningContext {
            key,
            scope,
            time,
            seed_signature: signature,
        },
    })
}

/// Presign a request: the query string (without `?`) to send instead of `req.query`.
///
/// It holds `req.query`'s parameters plus `X-Amz-Algorithm`, `X-Amz-Credential`, `X-Amz-Date`,
/// `X-Amz-Expires`, `X-Amz-SignedHeaders` (all of `req.headers`, which must include `Host`),
/// canonically encoded and sorted, then `X-Amz-Signature`. The payload is `UNSIGNED-PAYLOAD`.
pub fn presign(
    req: &RequestParts<'_>,
    credentials: &Credentials,
    region: &str,
    now: i64,
    expires: u64,
    cache: &mut impl KeyCache,
) -> S3Result<String> {
    if expires > MAX_PRESIGNED_EXPIRES {
        return Err(S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            "X-Amz-Expires must be less than a week (in seconds) that is 604800",
        ));
    }
    require_host(req.headers)?;
    let headers: Vec<Header<'_>> = req
        .headers
        .iter()
        .filter(|h| is_signable(h.name))
        .copied()
        .collect();
    let signed_headers = signed_header_list(&headers);
    let time = DateTime::from_unix(now);
    let scope = CredentialScope::new(time, region);
    let mut raw_query = String::with_capacity(req.query.len() + 256);
    raw_query.push_str(req.query);
    if !raw_query.is_empty() {
        raw_query.push('&');
    }
    let credential = alloc::format!("{}/{scope}", credentials.access_key_id);
    let _ = write!(
        raw_query,
        "{}={ALGORITHM}&{}={}&{}={}&{}={expires}&{}={}",
        query::X_AMZ_ALGORITHM,
        query::X_AMZ_CREDENTIAL,
        encode(&credential),
        query::X_AMZ_DATE,
        time.amz(),
        query::X_AMZ_EXPIRES,
        query::X_AMZ_SIGNED_HEADERS,
        encode(&signed_headers),
    );
    let parts = RequestParts {
        query: &raw_query,
        headers: &headers,
        ..*req
    };
    let key = cache.signing_key(
        &credentials.access_key_id,
        &credentials.secret_access_key,
        &scope,
    );
    let creq = canonical_request(&parts, &signed_headers, UNSIGNED_PAYLOAD, true)?;
    let signature = sign(&key, string_to_sign(time, &scope, &creq).as_bytes());
    let mut out = Vec::with_capacity(raw_query.len() + 90);
    canonical_query(&raw_query, true, &mut out)?;
    // The canonical query is ASCII (percent-encoded), so this cannot fail.
    let mut out = String::from_utf8(out).unwrap_or_default();
    let _ = write!(out, "&{}={signature}", query::X_AMZ_SIGNATURE);
    Ok(out)
}

/// The string to sign of one aws-chunked chunk (`AWS4-HMAC-SHA256-PAYLOAD`).
pub fn chunk_string_to_sign(
    time: DateTime,
    scope: &CredentialScope,
    previous: &Signature,
    data_sha256: &[u8; 32],
) -> String {
    alloc::format!(
        "{CHUNK_ALGORITHM}\n{}\n{scope}\n{previous}\n{EMPTY_SHA256}\n{}",
        time.amz(),
        Hex64::of(data_sha256)
    )
}

/// The string to sign of an aws-chunked trailer section (`AWS4-HMAC-SHA256-TRAILER`).
///
/// `trailers_sha256` is the SHA-256 of the canonical trailers, `name:value\n` for each.
pub fn trailer_string_to_sign(
    time: DateTime,
    scope: &CredentialScope,
    previous: &Signature,
    trailers_sha256: &[u8; 32],
) -> String {
    alloc::format!(
        "{TRAILER_ALGORITHM}\n{}\n{scope}\n{previous}\n{}",
        time.amz(),
        Hex64::of(trailers_sha256)
    )
}

/// Chained aws-chunked signatures: each chunk's signature covers the previous one, starting
/// from the request's seed signature.
///
/// Allocation-free per chunk: the HMAC is keyed once and the `time\nscope\n` part kept.
#[derive(Clone)]
pub struct ChunkSigner {
    mac: HmacSha256,
    time_scope: String,
    previous: Signature,
}

impl fmt::Debug for ChunkSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChunkSigner")
            .field("previous", &self.previous)
            .finish_non_exhaustive()
    }
}

impl ChunkSigner {
    /// A signer chaining from `ctx.seed_signature`.
    pub fn new(ctx: &SigningContext) -> Self {
        Self {
            mac: ctx.key.mac(),
            time_scope: alloc::format!("{}\n{}\n", ctx.time.amz(), ctx.scope),
            previous: ctx.seed_signature,
        }
    }

    /// The last signature in the chain (the seed before any chunk).
    pub fn previous(&self) -> Signature {
        self.previous
    }

    fn mac_with(&self, algorithm: &str) -> HmacSha256 {
        let mut mac = self.mac.clone();
        mac.update(algorithm.as_bytes());
        mac.update(b"\n");
        mac.update(self.time_scope.as_bytes());
        mac.update(self.previous.to_hex().as_bytes());
        mac.update(b"\n");
        mac
    }

    /// Sign the next chunk, given the SHA-256 of its data, and advance the chain.
    pub fn sign_chunk(&mut self, data_sha256: &[u8; 32]) -> Signature {
        let mut mac = self.mac_with(CHUNK_ALGORITHM);
        mac.update(EMPTY_SHA256.as_bytes());
        mac.update(b"\n");
        mac.update(Hex64::of(data_sha256).as_bytes());
        self.previous = Signature(mac.finalize().into_bytes().into());
        self.previous
    }

    /// Sign the trailer section, given the SHA-256 of its canonical form, and advance the chain.
    pub fn sign_trailer(&mut self, trailers_sha256: &[u8; 32]) -> Signature {
        let mut mac = self.mac_with(TRAILER_ALGORITHM);
        mac.update(Hex64::of(trailers_sha256).as_bytes());
        self.previous = Signature(mac.finalize().into_bytes().into());
        self.previous
    }
}
