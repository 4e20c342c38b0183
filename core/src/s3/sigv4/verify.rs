//! Server side: verify header auth and presigned URLs against a credential store.

use alloc::borrow::Cow;
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use core::fmt;

use hmac::Mac as _;
use subtle::ConstantTimeEq as _;

use super::canonical::{
    SignedHeaders, amz_bytes, canonical_request_sha256, split_ascii, split_once_ascii,
    write_string_to_sign,
};
use super::{
    ALGORITHM, CredentialScope, KeyCache, MAX_CLOCK_SKEW, MAX_PRESIGNED_EXPIRES, PayloadHash,
    RequestParts, SCOPE_TERMINATOR, SERVICE, Signature, SigningContext, SigningKey, StreamingMode,
    UNSIGNED_PAYLOAD, query,
};
use crate::http::find_header;
use crate::s3::header;
use crate::s3::uri::decode;
use crate::s3::{S3Error, S3ErrorCode, S3Result};
use crate::time::DateTime;

/// Looks up secret access keys by access key id.
pub trait CredentialStore {
    /// The secret for `access_key_id`, or `None` if there is no such key.
    fn secret_key(&self, access_key_id: &str) -> Option<Cow<'_, str>>;
}

impl<T: CredentialStore + ?Sized> CredentialStore for &T {
    fn secret_key(&self, access_key_id: &str) -> Option<Cow<'_, str>> {
        (**self).secret_key(access_key_id)
    }
}

/// An in-memory credential store.
#[derive(Clone, Default)]
pub struct MemoryCredentials {
    keys: BTreeMap<String, String>,
}

impl fmt::Debug for MemoryCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Key ids only: secrets stay out of logs.
        f.debug_set().entries(self.keys.keys()).finish()
    }
}

impl MemoryCredentials {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add or replace a key.
    pub fn insert(&mut self, access_key_id: impl Into<String>, secret: impl Into<String>) {
        self.keys.insert(access_key_id.into(), secret.into());
    }

    /// Builder form of [`insert`](Self::insert).
    pub fn with(mut self, access_key_id: impl Into<String>, secret: impl Into<String>) -> Self {
        self.insert(access_key_id, secret);
        self
    }
}

impl CredentialStore for MemoryCredentials {
    fn secret_key(&self, access_key_id: &str) -> Option<Cow<'_, str>> {
        self.keys
            .get(access_key_id)
            .map(|s| Cow::Borrowed(s.as_str()))
    }
}

/// How a request was authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthKind {
    /// `Authorization` header.
    Header,
    /// Presigned URL, valid until `expires_at` (Unix seconds).
    Presigned {
        /// When the URL stops being valid.
        expires_at: i64,
    },
    /// No signature at all: an anonymous request (see [`VerifiedRequest::anonymous`]).
    Anonymous,
    /// SigV2 `Authorization: AWS ...` header (`s3::sigv2`).
    HeaderV2,
    /// SigV2 presigned URL (`AWSAccessKeyId`, `Expires`, `Signature`), valid until `expires_at`.
    PresignedV2 {
        /// When the URL stops being valid.
        expires_at: i64,
    },
}

impl AuthKind {
    /// Whether the request was signed with SigV2.
    pub fn is_sigv2(self) -> bool {
        matches!(self, Self::HeaderV2 | Self::PresignedV2 { .. })
    }
}

/// A request whose signature checked out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedRequest {
    /// Who signed it.
    pub access_key_id: String,
    /// Header auth or presigned URL.
    pub kind: AuthKind,
    /// What `x-amz-content-sha256` promised about the body (still to be checked by the body reader).
    pub payload: PayloadHash,
    /// Key, scope, time and seed signature, for aws-chunked chunk signatures; `None` for
    /// SigV2, which has none.
    pub signing: Option<SigningContext>,
}

impl VerifiedRequest {
    /// An anonymous request (no signature, no key): `access_key_id` is empty and the body is
    /// what `x-amz-content-sha256` says (unsigned when absent; a SHA-256 is still checked).
    /// The signed aws-chunked forms need a signature: `AccessDenied`.
    pub fn anonymous(headers: &[crate::http::Header<'_>]) -> S3Result<Self> {
        let payload = match crate::http::find_header_str(headers, header::X_AMZ_CONTENT_SHA256) {
            None => PayloadHash::Unsigned,
            Some(v) => PayloadHash::parse(v.trim())?,
        };
        if matches!(
            payload,
            PayloadHash::Streaming(StreamingMode::Signed | StreamingMode::SignedTrailer)
        ) {
            return Err(S3Error::with_message(
                S3ErrorCode::AccessDenied,
                "A signed aws-chunked body needs a signed request",
            ));
        }
        Ok(Self {
            access_key_id: String::new(),
            kind: AuthKind::Anonymous,
            payload,
            signing: None,
        })
    }

    /// Whether the request is anonymous.
    pub fn is_anonymous(&self) -> bool {
        self.kind == AuthKind::Anonymous
    }
}

/// The parts of an `Authorization: AWS4-HMAC-SHA256 ...` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuthorizationHeader<'a> {
    /// The access key id.
    pub access_key_id: &'a str,
    /// Scope date, `yyyymmdd`.
    pub date: &'a str,
    /// Scope region.
    pub region: &'a str,
    /// Scope service.
    pub service: &'a str,
    /// `;`-separated signed header names.
    pub signed_headers: &'a str,
    /// The signature as sent.
    pub signature: &'a str,
}

struct Credential<'a> {
    access_key_id: &'a str,
    date: &'a str,
    region: &'a str,
    service: &'a str,
}

/// Split `<key id>/<yyyymmdd>/<region>/<service>/aws4_request` (the key id may hold `/`).
fn parse_credential(s: &str) -> Option<Credential<'_>> {
    let mut slashes = memchr::memrchr_iter(b'/', s.as_bytes());
    let (t, v, r, d) = (
        slashes.next()?,
        slashes.next()?,
        slashes.next()?,
        slashes.next()?,
    );
    let terminator = s.get(t + 1..)?;
    let service = s.get(v + 1..t)?;
    let region = s.get(r + 1..v)?;
    let date = s.get(d + 1..r)?;
    let access_key_id = s.get(..d)?;
    let ok = terminator == SCOPE_TERMINATOR
        && !service.is_empty()
        && !region.is_empty()
        && !access_key_id.is_empty()
        && date.len() == 8
        && date.bytes().all(|b| b.is_ascii_digit());
    ok.then_some(Credential {
        access_key_id,
        date,
        region,
        service,
    })
}

fn malformed(msg: impl Into<Cow<'static, str>>) -> S3Error {
    S3Error::with_message(S3ErrorCode::AuthorizationHeaderMalformed, msg)
}

fn query_error(msg: impl Into<Cow<'static, str>>) -> S3Error {
    S3Error::with_message(S3ErrorCode::AuthorizationQueryParametersError, msg)
}

/// Bytes of a signed header list: lower-case `tchar`s and the `;` between names.
const SIGNED_LIST_BYTE: [bool; 256] = {
    let allowed = b"!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz;";
    let mut t = [false; 256];
    let mut i = 0;
    while i < allowed.len() {
        t[allowed[i] as usize] = true;
        i += 1;
    }
    t
};

/// Signed header lists are lower-case header names joined by `;`.
fn valid_signed_headers(list: &str) -> bool {
    let b = list.as_bytes();
    let (Some(&first), Some(&last)) = (b.first(), b.last()) else {
        return false;
    };
    // Folds without early exit run a vector at a time on these ~100-byte lists.
    let allowed = b
        .iter()
        .fold(true, |ok, &c| ok & SIGNED_LIST_BYTE[usize::from(c)]);
    let next = b.get(1..).unwrap_or_default();
    let empty_name = b
        .iter()
        .zip(next)
        .fold(false, |e, (&x, &y)| e | ((x == b';') & (y == b';')));
    allowed && first != b';' && last != b';' && !empty_name
}

/// Parse the value of an `Authorization` header.
///
/// Another algorithm (SigV2's `AWS ...`, SigV4a) is `InvalidRequest`; anything else that does not
/// have exactly `Credential=`, `SignedHeaders=` and `Signature=` is `AuthorizationHeaderMalformed`.
pub fn parse_authorization(value: &str) -> S3Result<AuthorizationHeader<'_>> {
    let value = value.trim();
    let (algorithm, rest) = split_once_ascii(value, b' ')
        .ok_or_else(|| malformed("The authorization header is malformed."))?;
    if algorithm != ALGORITHM {
        return Err(S3Error::with_message(
            S3ErrorCode::InvalidRequest,
            "The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.",
        ));
    }
    let (mut credential, mut signed_headers, mut signature) = (None, None, None);
    for part in split_ascii(rest, b',') {
        let part = part.trim();
        let (k, v) = split_once_ascii(part, b'=').ok_or_else(|| {
            malformed("The authorization header is malformed; each component must be key=value.")
        })?;
        let slot = match k {
            "Credential" => &mut credential,
            "SignedHeaders" => &mut signed_headers,
            "Signature" => &mut signature,
            _ => {
                return Err(malformed(format!(
                    "The authorization header is malformed; unknown component '{}'.",
                    k.escape_debug()
                )));
            }
        };
        if slot.replace(v).is_some() {
            return Err(malformed(
                "The authorization header is malformed; a component is repeated.",
            ));
        }
    }
    let (Some(credential), Some(signed_headers), Some(signature)) =
        (credential, signed_headers, signature)
    else {
        return Err(malformed(
            "The authorization header is malformed; it needs Credential, SignedHeaders and Signature.",
        ));
    };
    let c = parse_credential(credential).ok_or_else(|| {
        malformed(
            "The authorization header is malformed; the Credential is mal-formed; expecting \
             \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\".",
        )
    })?;
    if !valid_signed_headers(signed_headers) {
        return Err(malformed(
            "The authorization header is malformed; SignedHeaders must be lower-case names separated by ';'.",
        ));
    }
    Ok(AuthorizationHeader {
        access_key_id: c.access_key_id,
        date: c.date,
        region: c.region,
        service: c.service,
        signed_headers,
        signature,
    })
}

/// The SigV4 parameters of a presigned URL, percent-decoded and checked for form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PresignedQuery<'a> {
    /// `X-Amz-Credential`.
    pub credential: Cow<'a, str>,
    /// `X-Amz-Date`.
    pub time: DateTime,
    /// `X-Amz-Expires`, seconds.
    pub expires: u64,
    /// `X-Amz-SignedHeaders`.
    pub signed_headers: Cow<'a, str>,
    /// `X-Amz-Signature` as sent.
    pub signature: Cow<'a, str>,
    /// `X-Amz-Content-Sha256`, if the URL carries one (else the payload is `UNSIGNED-PAYLOAD`).
    pub content_sha256: Option<Cow<'a, str>>,
}

/// Find and check the presigned-URL parameters of a raw query string.
///
/// `Ok(None)` when none of `X-Amz-Algorithm`, `X-Amz-Credential` and `X-Amz-Signature` is present
/// (not a presigned URL). Missing, repeated or ill-formed parameters are
/// `AuthorizationQueryParametersError`.
pub fn parse_presigned(raw_query: &str) -> S3Result<Option<PresignedQuery<'_>>> {
    let mut found: [Option<Cow<'_, str>>; 7] = Default::default();
    const NAMES: [&str; 7] = [
        query::X_AMZ_ALGORITHM,
        query::X_AMZ_CREDENTIAL,
        query::X_AMZ_DATE,
        query::X_AMZ_EXPIRES,
        query::X_AMZ_SIGNED_HEADERS,
        query::X_AMZ_SIGNATURE,
        query::X_AMZ_CONTENT_SHA256,
    ];
    for piece in split_ascii(raw_query, b'&').filter(|p| !p.is_empty()) {
        let (name, value) = split_once_ascii(piece, b'=').unwrap_or((piece, ""));
        let name = decode(name, true)?;
        let Some(i) = NAMES.iter().position(|n| *n == name) else {
            continue;
        };
        let value = decode(value, true)
            .map_err(|_| query_error(format!("{} is not valid percent-encoded UTF-8", NAMES[i])))?;
        if let Some(slot) = found.get_mut(i)
            && slot.replace(value).is_some()
        {
            return Err(query_error(format!("{} is repeated", NAMES[i])));
        }
    }
    let [
        algorithm,
        credential,
        date,
        expires,
        signed_headers,
        signature,
        content_sha256,
    ] = found;
    if algorithm.is_none() && credential.is_none() && signature.is_none() {
        return Ok(None);
    }
    let (
        Some(algorithm),
        Some(credential),
        Some(date),
        Some(expires),
        Some(signed_headers),
        Some(signature),
    ) = (
        algorithm,
        credential,
        date,
        expires,
        signed_headers,
        signature,
    )
    else {
        return Err(query_error(
            "Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, \
             X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.",
        ));
    };
    if algorithm != ALGORITHM {
        return Err(query_error(
            "X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\"",
        ));
    }
    if parse_credential(&credential).is_none() {
        return Err(query_error(
            "Error parsing the X-Amz-Credential parameter; the Credential is mal-formed; \
             expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\".",
        ));
    }
    let time = DateTime::parse_amz(&date).ok_or_else(|| {
        query_error("X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"")
    })?;
    let expires = parse_expires(&expires)?;
    if !valid_signed_headers(&signed_headers) {
        return Err(query_error(
            "X-Amz-SignedHeaders must be lower-case names separated by ';'",
        ));
    }
    Ok(Some(PresignedQuery {
        credential,
        time,
        expires,
        signed_headers,
        signature,
        content_sha256,
    }))
}

fn parse_expires(s: &str) -> S3Result<u64> {
    if s.is_empty() || s.len() > 19 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(query_error("X-Amz-Expires should be a number"));
    }
    let n = s
        .parse::<u64>()
        .map_err(|_| query_error("X-Amz-Expires should be a number"))?;
    if n > MAX_PRESIGNED_EXPIRES {
        return Err(query_error(
            "X-Amz-Expires must be less than a week (in seconds) that is 604800",
        ));
    }
    Ok(n)
}

/// Verify a request signed with either mechanism.
///
/// `Ok(None)` for an anonymous request (neither an `Authorization` header nor presigned
/// parameters); both at once is `InvalidArgument`. `now` is Unix seconds; with `region`, a scope
/// for another region is rejected.
pub fn verify_request(
    req: &RequestParts<'_>,
    now: i64,
    region: Option<&str>,
    store: &impl CredentialStore,
    cache: &mut impl KeyCache,
) -> S3Result<Option<VerifiedRequest>> {
    let auth = find_header(req.headers, header::AUTHORIZATION);
    let presigned = parse_presigned(req.query);
    let both = match &presigned {
        Ok(p) => p.is_some(),
        // Presigned parameters are there, if incomplete.
        Err(e) => e.code == S3ErrorCode::AuthorizationQueryParametersError,
    };
    match (auth, presigned) {
        (Some(_), _) if both => Err(S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature \
             query string parameter or the Authorization header should be specified",
        )),
        (Some(value), _) => verify_header_auth(req, value, now, region, store, cache).map(Some),
        (None, Ok(Some(p))) => verify_presigned(req, &p, now, region, store, cache).map(Some),
        (None, Ok(None)) => Ok(None),
        (None, Err(e)) => Err(e),
    }
}

fn check_scope(
    service: &str,
    scope_region: &str,
    region: Option<&str>,
    err: fn(Cow<'static, str>) -> S3Error,
) -> S3Result<()> {
    if service != SERVICE {
        return Err(err(format!(
            "Credential should be scoped to correct service: '{SERVICE}', not '{}'.",
            service.escape_debug()
        )
        .into()));
    }
    if let Some(expected) = region
        && scope_region != expected
    {
        return Err(err(format!(
            "The region '{}' is wrong; expecting '{expected}'",
            scope_region.escape_debug()
        )
        .into()));
    }
    Ok(())
}

fn lookup_secret<'s>(store: &'s impl CredentialStore, id: &str) -> S3Result<Cow<'s, str>> {
    store
        .secret_key(id)
        .ok_or_else(|| S3Error::new(S3ErrorCode::InvalidAccessKeyId))
}

/// Whether `provided` is the hex (either case) of `computed`, compared in constant time.
///
/// Compares against the lower-case hex of `computed` with `A`-`F` folded to `a`-`f` (any other
/// byte is left as is, so it cannot match a hex digit): cheaper than decoding `provided`.
fn check_signature(provided: &str, computed: Signature) -> S3Result<()> {
    let provided = provided.as_bytes();
    let expected = computed.to_hex();
    let same = provided.len() == expected.as_bytes().len() && {
        let diff = provided
            .iter()
            .zip(expected.as_bytes())
            .fold(0u8, |acc, (&p, &e)| {
                let upper_hex = u8::from(p.wrapping_sub(b'A') < 6);
                acc | ((p | (upper_hex << 5)) ^ e)
            });
        bool::from(diff.ct_eq(&0))
    };
    if same {
        Ok(())
    } else {
        Err(S3Error::new(S3ErrorCode::SignatureDoesNotMatch))
    }
}

/// Verify `Authorization` header auth; `value` is the header's value.
pub fn verify_header_auth(
    req: &RequestParts<'_>,
    value: &[u8],
    now: i64,
    region: Option<&str>,
    store: &impl CredentialStore,
    cache: &mut impl KeyCache,
) -> S3Result<VerifiedRequest> {
    let value = core::str::from_utf8(value)
        .map_err(|_| malformed("The authorization header is malformed; it is not UTF-8."))?;
    let auth = parse_authorization(value)?;
    check_scope(auth.service, auth.region, region, malformed)?;
    let signed = SignedHeaders::new(auth.signed_headers, req.headers);
    if !signed.lists(header::HOST) {
        return Err(malformed(
            "'Host' must be a 'SignedHeader' in the AWS Authorization.",
        ));
    }

    let time = request_time(req)?;
    if !is_date_stamp_of(auth.date, time) {
        return Err(malformed(format!(
            "Invalid credential date \"{}\". This date is not the same as X-Amz-Date: \"{}\".",
            auth.date,
            time.date_stamp()
        )));
    }
    if now.abs_diff(time.to_unix()) > MAX_CLOCK_SKEW.unsigned_abs() {
        return Err(S3Error::new(S3ErrorCode::RequestTimeTooSkewed));
    }

    let content_sha256 = find_header(req.headers, header::X_AMZ_CONTENT_SHA256)
        .ok_or_else(|| {
            S3Error::with_message(
                S3ErrorCode::InvalidRequest,
                "Missing required header for this request: x-amz-content-sha256",
            )
        })
        .and_then(|v| {
            core::str::from_utf8(v).map_err(|_| S3Error::new(S3ErrorCode::InvalidArgument))
        })?;
    let payload = PayloadHash::parse(content_sha256)?;

    refuse_unsigned_amz_headers(req, &signed)?;

    let secret = lookup_secret(store, auth.access_key_id)?;
    let scope = CredentialScope {
        date: auth.date.into(),
        region: auth.region.into(),
        service: auth.service.into(),
    };
    let key = cache.signing_key(auth.access_key_id, &secret, &scope);
    let creq_sha256 = canonical_request_sha256(req, &signed, content_sha256, false)?;
    let computed = request_signature(&key, time, &scope, &creq_sha256);
    check_signature(auth.signature, computed)?;
    Ok(VerifiedRequest {
        access_key_id: auth.access_key_id.into(),
        kind: AuthKind::Header,
        payload,
        signing: Some(SigningContext {
            key,
            scope,
            time,
            seed_signature: computed,
        }),
    })
}

/// Whether `date` is the `yyyymmdd` date stamp of `time`.
fn is_date_stamp_of(date: &str, time: DateTime) -> bool {
    match amz_bytes(time) {
        Some(b) => b.get(..8) == Some(date.as_bytes()),
        None => date == alloc::string::ToString::to_string(&time.date_stamp()),
    }
}

/// `sign(key, string_to_sign(..))`, with the string to sign fed straight into the HMAC.
fn request_signature(
    key: &SigningKey,
    time: DateTime,
    scope: &CredentialScope,
    canonical_sha256: &[u8; 32],
) -> Signature {
    let mut mac = key.mac();
    // Gathered on the stack and fed in one piece, unless the scope is unusually long.
    let mut buf = [0u8; 192];
    let mut len = 0usize;
    let mut fits = true;
    write_string_to_sign(time, scope, canonical_sha256, |piece| {
        match buf.get_mut(len..len.saturating_add(piece.len())) {
            Some(dst) => {
                dst.copy_from_slice(piece.as_bytes());
                len += piece.len();
            }
            None => fits = false,
        }
    });
    if fits {
        mac.update(buf.get(..len).unwrap_or_default());
    } else {
        write_string_to_sign(time, scope, canonical_sha256, |piece| {
            mac.update(piece.as_bytes());
        });
    }
    Signature(mac.finalize().into_bytes().into())
}

/// The request time of header auth: `x-amz-date`, else `Date`.
fn request_time(req: &RequestParts<'_>) -> S3Result<DateTime> {
    let invalid = || {
        S3Error::with_message(
            S3ErrorCode::AccessDenied,
            "AWS authentication requires a valid Date or x-amz-date header",
        )
    };
    if let Some(v) = find_header(req.headers, header::X_AMZ_DATE) {
        let v = core::str::from_utf8(v).map_err(|_| invalid())?;
        DateTime::parse_amz(v.trim()).ok_or_else(invalid)
    } else if let Some(v) = find_header(req.headers, header::DATE) {
        let v = core::str::from_utf8(v).map_err(|_| invalid())?;
        DateTime::parse_http(v).ok_or_else(invalid)
    } else {
        Err(invalid())
    }
}

/// S3 refuses `x-amz-*` headers that are sent but not signed, with header auth and presigned
/// URLs alike: an added `x-amz-copy-source` would turn a presigned PUT into a copy.
fn refuse_unsigned_amz_headers(
    req: &RequestParts<'_>,
    signed: &SignedHeaders<'_, '_, '_>,
) -> S3Result<()> {
    let unsigned = req.headers.iter().enumerate().any(|(i, h)| {
        !signed.is_signed(i)
            && h.name
                .as_bytes()
                .get(..header::X_AMZ_PREFIX.len())
                .is_some_and(|p| p.eq_ignore_ascii_case(header::X_AMZ_PREFIX.as_bytes()))
    });
    if unsigned {
        return Err(S3Error::with_message(
            S3ErrorCode::AccessDenied,
            "There were headers present in the request which were not signed",
        ));
    }
    Ok(())
}

/// Verify a presigned URL whose parameters [`parse_presigned`] found.
pub fn verify_presigned(
    req: &RequestParts<'_>,
    params: &PresignedQuery<'_>,
    now: i64,
    region: Option<&str>,
    store: &impl CredentialStore,
    cache: &mut impl KeyCache,
) -> S3Result<VerifiedRequest> {
    let c = parse_credential(&params.credential).ok_or_else(|| {
        query_error("Error parsing the X-Amz-Credential parameter; the Credential is mal-formed.")
    })?;
    check_scope(c.service, c.region, region, query_error)?;
    let signed = SignedHeaders::new(&params.signed_headers, req.headers);
    if !signed.lists(header::HOST) {
        return Err(query_error(
            "'host' must be a signed header (X-Amz-SignedHeaders)",
        ));
    }
    if !is_date_stamp_of(c.date, params.time) {
        return Err(query_error(format!(
            "Invalid credential date \"{}\". This date is not the same as X-Amz-Date: \"{}\".",
            c.date,
            params.time.date_stamp()
        )));
    }
    let signed_at = params.time.to_unix();
    if signed_at.saturating_sub(now) > MAX_CLOCK_SKEW {
        return Err(S3Error::new(S3ErrorCode::RequestTimeTooSkewed));
    }
    // `expires` is at most a week, so this cannot overflow for any parseable date.
    let expires_at = signed_at.saturating_add_unsigned(params.expires);
    if now > expires_at {
        return Err(S3Error::with_message(
            S3ErrorCode::AccessDenied,
            "Request has expired",
        ));
    }
    let payload_str = params.content_sha256.as_deref().unwrap_or(UNSIGNED_PAYLOAD);
    let payload = PayloadHash::parse(payload_str)?;
    refuse_unsigned_amz_headers(req, &signed)?;

    let secret = lookup_secret(store, c.access_key_id)?;
    let scope = CredentialScope {
        date: c.date.into(),
        region: c.region.into(),
        service: c.service.into(),
    };
    let key = cache.signing_key(c.access_key_id, &secret, &scope);
    let creq_sha256 = canonical_request_sha256(req, &signed, payload_str, true)?;
    let computed = request_signature(&key, params.time, &scope, &creq_sha256);
    check_signature(&params.signature, computed)?;
    Ok(VerifiedRequest {
        access_key_id: c.access_key_id.into(),
        kind: AuthKind::Presigned { expires_at },
        payload,
        signing: Some(SigningContext {
            key,
            scope,
            time: params.time,
            seed_signature: computed,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorization_header_parses_with_and_without_spaces() {
        let v = "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, \
                 SignedHeaders=host;range;x-amz-date, \
                 Signature=fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024";
        let a = parse_authorization(v).expect("valid");
        assert_eq!(a.access_key_id, "AKIAIOSFODNN7EXAMPLE");
        assert_eq!(
            (a.date, a.region, a.service),
            ("20130524", "us-east-1", "s3")
        );
        assert_eq!(a.signed_headers, "host;range;x-amz-date");
        assert_eq!(
            a.signature,
            "fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024"
        );
        let compact = v.replace(", ", ",");
        assert_eq!(parse_authorization(&compact).expect("valid"), a);
    }

    #[test]
    fn authorization_header_errors() {
        let code = |v: &str| parse_authorization(v).expect_err(v).code;
        let ok_cred = "Credential=AK/20130524/us-east-1/s3/aws4_request";
        assert_eq!(
            code("AWS AKIAIOSFODNN7EXAMPLE:frJIUN8DYpKDtOLCwo//yllqDzg="),
            S3ErrorCode::InvalidRequest
        );
        for bad in [
            "AWS4-HMAC-SHA256".into(),
            format!("AWS4-HMAC-SHA256 {ok_cred},SignedHeaders=host"),
            format!("AWS4-HMAC-SHA256 {ok_cred},SignedHeaders=host,Signature=a,Signature=b"),
            format!("AWS4-HMAC-SHA256 {ok_cred},SignedHeaders=Host,Signature=a"),
            format!("AWS4-HMAC-SHA256 {ok_cred},SignedHeaders=host;;x,Signature=a"),
            format!("AWS4-HMAC-SHA256 {ok_cred},SignedHeaders=host,Signature=a,Extra=1"),
            "AWS4-HMAC-SHA256 Credential=AK/2013052/us-east-1/s3/aws4_request,SignedHeaders=host,Signature=a".into(),
            "AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws5_request,SignedHeaders=host,Signature=a".into(),
            "AWS4-HMAC-SHA256 Credential=/20130524/us-east-1/s3/aws4_request,SignedHeaders=host,Signature=a".into(),
            "AWS4-HMAC-SHA256 Credential=20130524/us-east-1/s3/aws4_request,SignedHeaders=host,Signature=a".into(),
        ] {
            assert_eq!(code(&bad), S3ErrorCode::AuthorizationHeaderMalformed, "{bad}");
        }
    }

    #[test]
    fn presigned_parameters() {
        assert_eq!(parse_presigned("").expect("valid"), None);
        assert_eq!(parse_presigned("uploads&x=1").expect("valid"), None);
        let base = "X-Amz-Algorithm=AWS4-HMAC-SHA256\
                    &X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request\
                    &X-Amz-Date=20130524T000000Z&X-Amz-SignedHeaders=host&X-Amz-Signature=ab";
        let q = format!("{base}&X-Amz-Expires=86400");
        let p = parse_presigned(&q).expect("valid").expect("presigned");
        assert_eq!(
            p.credential,
            "AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request"
        );
        assert_eq!(p.expires, 86_400);
        assert_eq!(p.time.to_unix(), 1_369_353_600);
        let err = |q: &str| parse_presigned(q).expect_err(q).code;
        for q in [
            format!("{base}&X-Amz-Expires=604801"),
            format!("{base}&X-Amz-Expires=-1"),
            format!("{base}&X-Amz-Expires=1e3"),
            format!("{base}&X-Amz-Expires=99999999999999999999999"),
            base.into(),
            format!("{base}&X-Amz-Expires=1&X-Amz-Expires=1"),
            base.replace("AWS4-HMAC-SHA256", "AWS4-HMAC-SHA512") + "&X-Amz-Expires=1",
            base.replace("20130524T000000Z", "2013-05-24") + "&X-Amz-Expires=1",
            base.replace("%2Faws4_request", "") + "&X-Amz-Expires=1",
            "X-Amz-Signature=ab".into(),
        ] {
            assert_eq!(
                err(&q),
                S3ErrorCode::AuthorizationQueryParametersError,
                "{q}"
            );
        }
        assert_eq!(
            parse_presigned(&format!("{base}&X-Amz-Expires=604800"))
                .expect("a week is allowed")
                .expect("presigned")
                .expires,
            604_800
        );
    }

    /// A scope too long for the string to sign's stack buffer takes the piecewise path.
    #[test]
    fn long_scopes_verify() {
        use super::super::{Credentials, NoKeyCache, sign_request};
        use crate::http::Header;
        let now = 1_369_353_600;
        let host = [Header {
            name: "Host",
            value: b"b.example",
        }];
        let unsigned = RequestParts {
            method: "GET",
            path: "/k",
            query: "",
            headers: &host,
        };
        let creds = Credentials::new("AK", "secret");
        let store = MemoryCredentials::new().with("AK", "secret");
        for region in ["us-east-1".into(), "r".repeat(300)] {
            let sig = sign_request(
                &unsigned,
                UNSIGNED_PAYLOAD,
                &creds,
                &region,
                now,
                &mut NoKeyCache,
            )
            .expect("signable");
            let mut bad = sig.authorization.clone();
            let last = if bad.ends_with('0') { "1" } else { "0" };
            bad.replace_range(bad.len() - 1.., last);
            for (auth, ok) in [(&sig.authorization, true), (&bad, false)] {
                let sent = [
                    host[0],
                    Header {
                        name: "x-amz-date",
                        value: sig.x_amz_date.as_bytes(),
                    },
                    Header {
                        name: "x-amz-content-sha256",
                        value: sig.x_amz_content_sha256.as_bytes(),
                    },
                    Header {
                        name: "Authorization",
                        value: auth.as_bytes(),
                    },
                ];
                let req = RequestParts {
                    headers: &sent,
                    ..unsigned
                };
                let got = verify_request(&req, now, Some(&region), &store, &mut NoKeyCache);
                match got {
                    Ok(Some(v)) => {
                        assert!(ok && v.signing.is_some_and(|s| s.scope.region == region))
                    }
                    Err(e) => assert!(!ok && e.code == S3ErrorCode::SignatureDoesNotMatch),
                    Ok(None) => panic!("signed request seen as anonymous"),
                }
            }
        }
    }

    use proptest::prelude::*;

    proptest! {
        /// The hex comparison accepts exactly what decoding with `Signature::from_hex` accepts.
        #[test]
        fn signature_check_agrees_with_decoding(
            bytes in any::<[u8; 32]>(),
            upper in any::<u64>(),
            // Bytes one bit away from hex digits, or anything.
            edit in proptest::option::of((0usize..66, prop_oneof![
                proptest::sample::select(&['\u{10}', '\u{19}', '@', 'G', '`', 'g', 'P', 'p', '/', ':'][..]),
                any::<char>(),
            ])),
        ) {
            let computed = Signature(bytes);
            let mut provided: alloc::vec::Vec<char> = computed
                .to_hex()
                .as_str()
                .chars()
                .enumerate()
                .map(|(i, c)| if (upper >> (i % 64)) & 1 == 1 { c.to_ascii_uppercase() } else { c })
                .collect();
            if let Some((at, c)) = edit {
                if at < provided.len() {
                    provided[at] = c;
                } else {
                    provided.push(c);
                }
            }
            let provided: String = provided.into_iter().collect();
            let decoded = Signature::from_hex(&provided) == Some(computed);
            prop_assert_eq!(check_signature(&provided, computed).is_ok(), decoded, "{}", provided);
        }

        /// The one-pass checks agree with the plain `split` forms they replace.
        #[test]
        fn list_and_credential_checks_agree_with_split(
            list in "(host|[a-z0-9_-]{1,3}|;|;|A| |[!-~\u{80}]){0,6}",
            credential in "[ab/]{0,4}(/[0-9]{7,9}){0,1}(/[a-z-]{0,3}){0,2}(/aws4_request)?",
        ) {
            let reference = !list.is_empty()
                && list.split(';').all(|n| {
                    !n.is_empty()
                        && n.bytes().all(|b| {
                            b.is_ascii_lowercase()
                                || b.is_ascii_digit()
                                || b"!#$%&'*+-.^_`|~".contains(&b)
                        })
                });
            prop_assert_eq!(valid_signed_headers(&list), reference);

            let mut it = credential.rsplitn(5, '/');
            let parts: alloc::vec::Vec<&str> = (&mut it).take(5).collect();
            let got = parse_credential(&credential)
                .map(|c| (c.access_key_id, c.date, c.region, c.service));
            let want = match parts.as_slice() {
                [t, s, r, d, id] if *t == SCOPE_TERMINATOR
                    && !s.is_empty() && !r.is_empty() && !id.is_empty()
                    && d.len() == 8 && d.bytes().all(|b| b.is_ascii_digit()) =>
                {
                    Some((*id, *d, *r, *s))
                }
                _ => None,
            };
            prop_assert_eq!(got, want);
        }
    }
}
