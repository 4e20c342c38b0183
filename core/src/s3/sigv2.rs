//! AWS Signature Version 2 for S3 (the legacy `Authorization: AWS AKID:signature` header and
//! `AWSAccessKeyId`/`Expires`/`Signature` presigned URLs), as plain functions.
//!
//! Still produced by aws-cli v1's `aws s3 presign`, s3cmd, boto3 with `signature_version="s3"`
//! and many older tools. The algorithm is the one of AWS's "Signing and authenticating REST
//! requests":
//!
//! ```text
//! StringToSign = Method \n Content-MD5 \n Content-Type \n Date \n
//!                CanonicalizedAmzHeaders CanonicalizedResource
//! Signature    = Base64(HMAC-SHA1(secret, StringToSign))
//! ```
//!
//! `Date` is the `Date` header, empty when `x-amz-date` is present (which then appears among
//! the `x-amz-*` headers), and the `Expires` parameter for presigned URLs. The canonicalized
//! resource is `/bucket` for a virtual-hosted request, then the path as sent (still encoded),
//! then the sub-resources ([`is_signed`]) sorted by name, their values decoded.
//!
//! The payload is not signed: a SigV2 request's body is checked only by what its headers ask
//! (`Content-MD5`, checksums, or an `x-amz-content-sha256` hash when one is sent).

use alloc::borrow::Cow;
use alloc::string::String;
use alloc::vec::Vec;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{KeyInit as _, Mac as _};
use subtle::ConstantTimeEq as _;

use super::sigv4::{
    AuthKind, CredentialStore, MAX_CLOCK_SKEW, PayloadHash, RequestParts, VerifiedRequest,
};
use super::uri::decode;
use super::{S3Error, S3ErrorCode, S3Result};
use crate::http::{Header, find_header};
use crate::s3::header;
use crate::time::DateTime;

type HmacSha1 = hmac::Hmac<sha1::Sha1>;

/// The `Authorization` scheme of SigV2: `AWS AKID:signature`.
pub const SCHEME: &str = "AWS";

/// Query parameter names of SigV2 presigned URLs.
pub mod query {
    /// `AWSAccessKeyId`.
    pub const ACCESS_KEY_ID: &str = "AWSAccessKeyId";
    /// `Expires`: Unix seconds.
    pub const EXPIRES: &str = "Expires";
    /// `Signature`: base64, percent-encoded.
    pub const SIGNATURE: &str = "Signature";
}

/// AWS's list of sub-resources and response overrides, with the later ones (`cors`, `tagging`,
/// ...) that S3 and the SDKs sign as well (botocore's `HmacV1Auth.QSAOfInterest`): what AWS
/// clients sign. Sorted.
pub const AWS_SUBRESOURCES: [&str; 37] = [
    "accelerate",
    "acl",
    "analytics",
    "cors",
    "defaultObjectAcl",
    "delete",
    "inventory",
    "legal-hold",
    "lifecycle",
    "location",
    "logging",
    "metrics",
    "notification",
    "object-lock",
    "partNumber",
    "policy",
    "replication",
    "requestPayment",
    "response-cache-control",
    "response-content-disposition",
    "response-content-encoding",
    "response-content-language",
    "response-content-type",
    "response-expires",
    "restore",
    "retention",
    "select",
    "select-type",
    "storageClass",
    "tagging",
    "torrent",
    "uploadId",
    "uploads",
    "versionId",
    "versioning",
    "versions",
    "website",
];

/// Whether a query parameter is part of the canonicalized resource when present: one of
/// [`AWS_SUBRESOURCES`], or a sub-resource the router knows (`request::SUBRESOURCES`, which
/// it dispatches on, and `request::UNSUPPORTED_SUBRESOURCES`, which it refuses or the proxy
/// forwards). A parameter that chooses what a request does is always signed, so that none
/// can be added to a signed request: AWS signs its newer sub-resources too (`object-lock`,
/// `encryption`, ...), which clients that sign only the older list get refused for.
pub fn is_signed(name: &str) -> bool {
    AWS_SUBRESOURCES.binary_search(&name).is_ok()
        || super::request::SUBRESOURCES.contains(&name)
        || super::request::UNSUPPORTED_SUBRESOURCES.contains(&name)
}

/// The longest string to sign built (method, headers, resource): past it the request is
/// refused rather than hashed (a head is bounded anyway; this bounds the copy).
pub const MAX_STRING_TO_SIGN: usize = 64 * 1024;

/// How a request is signed, from its `Authorization` header and query parameters alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// No signature at all.
    Anonymous,
    /// SigV2: `Authorization: AWS ...` or `Signature`/`AWSAccessKeyId` query parameters.
    V2,
    /// Anything else that carries a signature: SigV4 (or an unknown scheme SigV4 refuses).
    V4,
}

/// Whether a request is signed with SigV2, SigV4 or not at all. Cheap: looks at the
/// `Authorization` header's scheme and the query's parameter names only.
pub fn scheme(req: &RequestParts<'_>) -> Scheme {
    if let Some(v) = find_header(req.headers, header::AUTHORIZATION) {
        // `AWS ` then the key: SigV4's `AWS4-HMAC-SHA256 ` has no space after `AWS`.
        return if v.trim_ascii_start().starts_with(b"AWS ") {
            Scheme::V2
        } else {
            Scheme::V4
        };
    }
    let mut v2 = false;
    for piece in req.query.split('&') {
        let name = piece.split_once('=').map_or(piece, |(n, _)| n);
        if name.eq_ignore_ascii_case("X-Amz-Algorithm")
            || name.eq_ignore_ascii_case("X-Amz-Credential")
            || name.eq_ignore_ascii_case("X-Amz-Signature")
        {
            return Scheme::V4;
        }
        v2 |= name == query::SIGNATURE || name == query::ACCESS_KEY_ID;
    }
    if v2 { Scheme::V2 } else { Scheme::Anonymous }
}

fn access_denied(msg: &'static str) -> S3Error {
    S3Error::with_message(S3ErrorCode::AccessDenied, msg)
}

/// The `Date` field and the request time of header auth: `x-amz-date` (then the field is
/// empty) or `Date`.
fn header_date<'h>(headers: &[Header<'h>]) -> S3Result<(&'h str, DateTime)> {
    let invalid = || access_denied("AWS authentication requires a valid Date or x-amz-date header");
    let text = |v: &'h [u8]| {
        core::str::from_utf8(v)
            .map(str::trim)
            .map_err(|_| invalid())
    };
    if let Some(v) = find_header(headers, header::X_AMZ_DATE) {
        let t = parse_date(text(v)?).ok_or_else(invalid)?;
        return Ok(("", t));
    }
    let v = text(find_header(headers, header::DATE).ok_or_else(invalid)?)?;
    Ok((v, parse_date(v).ok_or_else(invalid)?))
}

/// An HTTP date (`GMT`, or the `+0000` that s3cmd and AWS's examples write), or SigV4's
/// `yyyymmddThhmmssZ`.
pub fn parse_date(s: &str) -> Option<DateTime> {
    let s = s.trim();
    if let Some(t) = DateTime::parse_http(s) {
        return Some(t);
    }
    if let Some(head) = s.strip_suffix(" +0000") {
        let mut gmt = String::with_capacity(head.len() + 4);
        gmt.push_str(head);
        gmt.push_str(" GMT");
        return DateTime::parse_http(&gmt);
    }
    DateTime::parse_amz(s)
}

/// A value of the string to sign, trimmed, newlines and the white space around them folded to
/// one space (header values cannot hold newlines; a signature must not let one smuggle a line).
fn push_value(out: &mut String, v: &[u8]) -> S3Result<()> {
    let v = core::str::from_utf8(v.trim_ascii()).map_err(|_| {
        S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            "A header signed with SigV2 is not valid UTF-8",
        )
    })?;
    let mut pieces = v
        .split(['\r', '\n'])
        .map(str::trim)
        .filter(|p| !p.is_empty());
    if let Some(first) = pieces.next() {
        out.push_str(first);
        for p in pieces {
            out.push(' ');
            out.push_str(p);
        }
    }
    Ok(())
}

fn too_long() -> S3Error {
    S3Error::with_message(
        S3ErrorCode::InvalidRequest,
        "The request is too large to be signed with SigV2",
    )
}

/// The canonicalized resource: `/bucket` when the bucket came from the Host
/// (`virtual_bucket`), the path as sent, then the sub-resources of the query sorted by name
/// (values percent-decoded; a parameter sent without a value, or with an empty one, is its
/// name alone).
pub fn canonical_resource(
    path: &str,
    raw_query: &str,
    virtual_bucket: Option<&str>,
) -> S3Result<String> {
    resource(path, raw_query, virtual_bucket, false)
}

/// Whether a path-style resource is a bucket alone, `/bucket`: botocore signs it as
/// `/bucket/` (as AWS's virtual-hosted examples do), other clients as sent; both name the
/// same bucket, so both are accepted.
fn is_bare_bucket(path: &str, virtual_bucket: Option<&str>) -> bool {
    virtual_bucket.is_none()
        && path
            .strip_prefix('/')
            .is_some_and(|b| !b.is_empty() && !b.contains('/'))
}

fn resource(
    path: &str,
    raw_query: &str,
    virtual_bucket: Option<&str>,
    bucket_slash: bool,
) -> S3Result<String> {
    let mut out = String::with_capacity(path.len() + 32);
    if let Some(b) = virtual_bucket {
        out.push('/');
        out.push_str(b);
    }
    out.push_str(path);
    if bucket_slash {
        out.push('/');
    }
    let mut subs: Vec<(Cow<'_, str>, Cow<'_, str>)> = Vec::new();
    for piece in raw_query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = piece.split_once('=').unwrap_or((piece, ""));
        let name = decode(name, true)?;
        if is_signed(&name) {
            subs.push((name, decode(value, true)?));
        }
    }
    // Stable: a repeated name keeps the order it was sent in.
    subs.sort_by(|a, b| a.0.cmp(&b.0));
    for (i, (name, value)) in subs.iter().enumerate() {
        out.push(if i == 0 { '?' } else { '&' });
        out.push_str(name);
        if !value.is_empty() {
            out.push('=');
            out.push_str(value);
        }
    }
    if out.len() > MAX_STRING_TO_SIGN {
        return Err(too_long());
    }
    Ok(out)
}

/// The string to sign of `req`, with `date` as its Date field (the `Date` header, empty, or a
/// presigned URL's `Expires`).
pub fn string_to_sign(
    req: &RequestParts<'_>,
    date: &str,
    virtual_bucket: Option<&str>,
) -> S3Result<String> {
    string_to_sign_as(req, date, virtual_bucket, false)
}

fn string_to_sign_as(
    req: &RequestParts<'_>,
    date: &str,
    virtual_bucket: Option<&str>,
    bucket_slash: bool,
) -> S3Result<String> {
    let mut s = String::with_capacity(256);
    s.push_str(req.method);
    s.push('\n');
    for name in [header::CONTENT_MD5, header::CONTENT_TYPE] {
        if let Some(v) = find_header(req.headers, name) {
            push_value(&mut s, v)?;
        }
        s.push('\n');
    }
    s.push_str(date);
    s.push('\n');
    // x-amz-* headers: lower-case names, sorted, repeated ones joined with commas.
    let mut amz: Vec<(String, usize)> = req
        .headers
        .iter()
        .enumerate()
        .filter(|(_, h)| {
            h.name
                .as_bytes()
                .get(..header::X_AMZ_PREFIX.len())
                .is_some_and(|p| p.eq_ignore_ascii_case(header::X_AMZ_PREFIX.as_bytes()))
        })
        .map(|(i, h)| (h.name.to_ascii_lowercase(), i))
        .collect();
    amz.sort();
    let mut prev: Option<&str> = None;
    for (name, i) in &amz {
        let Some(h) = req.headers.get(*i) else {
            continue;
        };
        if prev == Some(name.as_str()) {
            s.push(',');
        } else {
            if prev.is_some() {
                s.push('\n');
            }
            s.push_str(name);
            s.push(':');
        }
        push_value(&mut s, h.value)?;
        prev = Some(name);
        if s.len() > MAX_STRING_TO_SIGN {
            return Err(too_long());
        }
    }
    if prev.is_some() {
        s.push('\n');
    }
    s.push_str(&resource(
        req.path,
        req.query,
        virtual_bucket,
        bucket_slash,
    )?);
    if s.len() > MAX_STRING_TO_SIGN {
        return Err(too_long());
    }
    Ok(s)
}

/// `Base64(HMAC-SHA1(secret, string_to_sign))`: 28 characters.
pub fn signature(secret: &str, string_to_sign: &str) -> String {
    let Ok(mut mac) = HmacSha1::new_from_slice(secret.as_bytes()) else {
        unreachable!("HMAC takes any key length")
    };
    mac.update(string_to_sign.as_bytes());
    BASE64.encode(mac.finalize().into_bytes())
}

/// Whether `provided` is `expected`, compared in constant time (the length is not secret).
pub(crate) fn same_signature(provided: &[u8], expected: &str) -> bool {
    provided.len() == expected.len() && bool::from(provided.ct_eq(expected.as_bytes()))
}

fn secret_of<'s>(store: &'s impl CredentialStore, id: &str) -> S3Result<Cow<'s, str>> {
    store
        .secret_key(id)
        .ok_or_else(|| S3Error::new(S3ErrorCode::InvalidAccessKeyId))
}

/// The SigV2 parameters of a presigned URL, percent-decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PresignedV2<'a> {
    /// `AWSAccessKeyId`.
    pub access_key_id: Cow<'a, str>,
    /// `Expires`, as sent (it is the string to sign's Date field).
    pub expires: Cow<'a, str>,
    /// `Signature`, base64.
    pub signature: Cow<'a, str>,
}

/// Find the SigV2 presigned parameters of a raw query. `Ok(None)` when none is there; some
/// but not all, or one repeated, is `AccessDenied`, as S3 answers.
pub fn parse_presigned(raw_query: &str) -> S3Result<Option<PresignedV2<'_>>> {
    const NAMES: [&str; 3] = [query::ACCESS_KEY_ID, query::EXPIRES, query::SIGNATURE];
    let mut found: [Option<Cow<'_, str>>; 3] = Default::default();
    for piece in raw_query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = piece.split_once('=').unwrap_or((piece, ""));
        let Some(i) = NAMES.iter().position(|n| *n == name) else {
            continue;
        };
        // A base64 signature has no spaces: a `+` left unencoded (some tools do) is a `+`.
        let value = decode(value, name != query::SIGNATURE)?;
        if let Some(slot) = found.get_mut(i)
            && slot.replace(value).is_some()
        {
            return Err(S3Error::with_message(
                S3ErrorCode::InvalidArgument,
                "A query-string authentication parameter is repeated",
            ));
        }
    }
    let [id, expires, signature] = found;
    match (id, expires, signature) {
        (None, None, None) => Ok(None),
        (Some(access_key_id), Some(expires), Some(signature)) => Ok(Some(PresignedV2 {
            access_key_id,
            expires,
            signature,
        })),
        _ => Err(access_denied(
            "Query-string authentication requires the Signature, Expires and AWSAccessKeyId parameters",
        )),
    }
}

/// Parse `Authorization: AWS AKID:signature` into the key id and the signature.
pub fn parse_authorization(value: &[u8]) -> S3Result<(&str, &str)> {
    let invalid = || {
        S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            "AWS authorization header is invalid.  Expected AwsAccessKeyId:signature",
        )
    };
    let v = core::str::from_utf8(value).map_err(|_| invalid())?.trim();
    let rest = v
        .strip_prefix(SCHEME)
        .and_then(|r| r.strip_prefix(' '))
        .ok_or_else(invalid)?;
    let (id, sig) = rest.trim().rsplit_once(':').ok_or_else(invalid)?;
    if id.is_empty() || sig.is_empty() {
        return Err(invalid());
    }
    Ok((id, sig))
}

fn verified(id: &str, kind: AuthKind, headers: &[Header<'_>]) -> S3Result<VerifiedRequest> {
    // SigV2 signs no payload; an `x-amz-content-sha256` that names one (signed as an x-amz-*
    // header) is held to it. aws-chunked with signed chunks needs SigV4's key: refused.
    let payload = match find_header(headers, header::X_AMZ_CONTENT_SHA256) {
        None => PayloadHash::Unsigned,
        Some(v) => {
            let v =
                core::str::from_utf8(v).map_err(|_| S3Error::new(S3ErrorCode::InvalidArgument))?;
            let p = PayloadHash::parse(v.trim())?;
            if p.streaming().is_some_and(|m| m.is_signed()) {
                return Err(S3Error::with_message(
                    S3ErrorCode::InvalidRequest,
                    "Signed aws-chunked payloads need SigV4 (AWS4-HMAC-SHA256)",
                ));
            }
            p
        }
    };
    Ok(VerifiedRequest {
        access_key_id: id.into(),
        kind,
        payload,
        signing: None,
    })
}

/// Check `provided` against the signature of `req` (a bare `/bucket` also as `/bucket/`).
fn check(
    req: &RequestParts<'_>,
    date: &str,
    virtual_bucket: Option<&str>,
    secret: &str,
    provided: &str,
) -> S3Result<()> {
    let sts = string_to_sign(req, date, virtual_bucket)?;
    if same_signature(provided.as_bytes(), &signature(secret, &sts)) {
        return Ok(());
    }
    if is_bare_bucket(req.path, virtual_bucket) {
        let sts = string_to_sign_as(req, date, virtual_bucket, true)?;
        if same_signature(provided.as_bytes(), &signature(secret, &sts)) {
            return Ok(());
        }
    }
    Err(S3Error::new(S3ErrorCode::SignatureDoesNotMatch))
}

/// Verify a SigV2 request: header auth or a presigned URL (see [`scheme`]). `virtual_bucket`
/// is the bucket the Host header names, if the request is virtual-hosted; `now` is Unix
/// seconds. Both mechanisms at once is `InvalidArgument`.
pub fn verify_request(
    req: &RequestParts<'_>,
    virtual_bucket: Option<&str>,
    now: i64,
    store: &impl CredentialStore,
) -> S3Result<VerifiedRequest> {
    let presigned = parse_presigned(req.query)?;
    match (find_header(req.headers, header::AUTHORIZATION), presigned) {
        (Some(_), Some(_)) => Err(S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature \
             query string parameter or the Authorization header should be specified",
        )),
        (Some(value), None) => {
            let (id, provided) = parse_authorization(value)?;
            let (date, time) = header_date(req.headers)?;
            if now.abs_diff(time.to_unix()) > MAX_CLOCK_SKEW.unsigned_abs() {
                return Err(S3Error::new(S3ErrorCode::RequestTimeTooSkewed));
            }
            let secret = secret_of(store, id)?;
            check(req, date, virtual_bucket, &secret, provided)?;
            verified(id, AuthKind::HeaderV2, req.headers)
        }
        (None, Some(p)) => {
            let expires_at = (!p.expires.is_empty() && p.expires.len() <= 18)
                .then(|| p.expires.parse::<i64>().ok())
                .flatten()
                .filter(|e| *e >= 0)
                .ok_or_else(|| access_denied("Invalid date (should be seconds since epoch)"))?;
            if now > expires_at {
                return Err(access_denied("Request has expired"));
            }
            let secret = secret_of(store, &p.access_key_id)?;
            check(req, &p.expires, virtual_bucket, &secret, &p.signature)?;
            verified(
                &p.access_key_id,
                AuthKind::PresignedV2 { expires_at },
                req.headers,
            )
        }
        (None, None) => Err(S3Error::new(S3ErrorCode::AccessDenied)),
    }
}

/// Client side: the `Authorization` value of `req` signed with (`access_key_id`, `secret`),
/// the Date field taken from its headers. For tests and tools; Ferry itself signs with SigV4.
pub fn authorization(
    req: &RequestParts<'_>,
    virtual_bucket: Option<&str>,
    access_key_id: &str,
    secret: &str,
) -> S3Result<String> {
    let (date, _) = header_date(req.headers)?;
    let sts = string_to_sign(req, date, virtual_bucket)?;
    Ok(alloc::format!(
        "{SCHEME} {access_key_id}:{}",
        signature(secret, &sts)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::s3::sigv4::MemoryCredentials;

    const ID: &str = "AKIAIOSFODNN7EXAMPLE";
    const SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

    fn h<'a>(name: &'a str, value: &'a str) -> Header<'a> {
        Header {
            name,
            value: value.as_bytes(),
        }
    }

    fn parts<'a>(method: &'a str, target: &'a str, headers: &'a [Header<'a>]) -> RequestParts<'a> {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        RequestParts {
            method,
            path,
            query,
            headers,
        }
    }

    #[test]
    fn subresources_are_sorted() {
        assert!(AWS_SUBRESOURCES.windows(2).all(|w| w[0] < w[1]));
        let routed = crate::s3::request::SUBRESOURCES;
        assert!(routed.windows(2).all(|w| w[0] < w[1]));
    }

    /// Every sub-resource the router knows (those it serves and those it refuses, which the
    /// proxy may forward) changes the string to sign when added to a request, with or without
    /// a value, alone or after other parameters, on a bucket and on an object: none can be
    /// added to a SigV2-signed request (a presigned DeleteBucket URL made a
    /// DeleteBucketEncryption with `&encryption`).
    #[test]
    fn every_subresource_the_router_knows_is_signed() {
        use crate::s3::request::{SUBRESOURCES, UNSUPPORTED_SUBRESOURCES};
        use alloc::format;
        let date = "Tue, 27 Mar 2007 19:36:42 +0000";
        let hs = [h("Host", "s3.amazonaws.com"), h("Date", date)];
        let routed = SUBRESOURCES.iter().chain(UNSUPPORTED_SUBRESOURCES);
        let mut n = 0;
        for name in routed {
            for (method, path, query) in [
                ("DELETE", "/b", ""),
                ("GET", "/b", "prefix=p&max-keys=5"),
                ("GET", "/b/k", ""),
                ("PUT", "/b/k", "x-id=PutObject"),
            ] {
                let base = string_to_sign(&parts(method, path, &hs), date, None).unwrap();
                let target = |q: &str| format!("{path}?{q}");
                let plain = string_to_sign(&parts(method, &target(query), &hs), date, None);
                assert_eq!(plain.unwrap(), base, "{method} {path}?{query}");
                let sep = if query.is_empty() { "" } else { "&" };
                for added in [
                    format!("{query}{sep}{name}"),
                    format!("{query}{sep}{name}="),
                    format!("{query}{sep}{name}=v"),
                    format!("{name}&{query}"),
                ] {
                    let t = target(&added);
                    let signed = string_to_sign(&parts(method, &t, &hs), date, None).unwrap();
                    assert_ne!(
                        signed, base,
                        "{method} {t} signs as {method} {path}?{query}"
                    );
                    n += 1;
                }
            }
        }
        assert!(n >= 16 * 20, "{n}");
        // AWS's own list stays signed (what AWS clients sign).
        assert!(AWS_SUBRESOURCES.iter().all(|name| is_signed(name)));
        for listing in [
            "prefix",
            "max-keys",
            "list-type",
            "marker",
            "x-id",
            "delimiter",
        ] {
            assert!(!is_signed(listing), "{listing}");
        }
    }

    // The examples of AWS's "Signing and authenticating REST requests" (virtual-hosted
    // requests to bucket `johnsmith`).
    #[test]
    fn aws_documentation_examples() {
        let get = [
            h("Host", "johnsmith.s3.amazonaws.com"),
            h("Date", "Tue, 27 Mar 2007 19:36:42 +0000"),
        ];
        let r = parts("GET", "/photos/puppy.jpg", &get);
        assert_eq!(
            string_to_sign(&r, "Tue, 27 Mar 2007 19:36:42 +0000", Some("johnsmith")).unwrap(),
            "GET\n\n\nTue, 27 Mar 2007 19:36:42 +0000\n/johnsmith/photos/puppy.jpg"
        );
        assert_eq!(
            authorization(&r, Some("johnsmith"), ID, SECRET).unwrap(),
            "AWS AKIAIOSFODNN7EXAMPLE:bWq2s1WEIj+Ydj0vQ697zp+IXMU="
        );

        let put = [
            h("Content-Type", "image/jpeg"),
            h("Content-Length", "94328"),
            h("Host", "johnsmith.s3.amazonaws.com"),
            h("Date", "Tue, 27 Mar 2007 21:15:45 +0000"),
        ];
        let r = parts("PUT", "/photos/puppy.jpg", &put);
        assert_eq!(
            authorization(&r, Some("johnsmith"), ID, SECRET).unwrap(),
            "AWS AKIAIOSFODNN7EXAMPLE:MyyxeRY7whkBe+bq8fHCL/2kKUg="
        );

        let list = [
            h("User-Agent", "Mozilla/5.0"),
            h("Host", "johnsmith.s3.amazonaws.com"),
            h("Date", "Tue, 27 Mar 2007 19:42:41 +0000"),
        ];
        let r = parts("GET", "/?prefix=photos&max-keys=50&marker=puppy", &list);
        assert_eq!(
            authorization(&r, Some("johnsmith"), ID, SECRET).unwrap(),
            "AWS AKIAIOSFODNN7EXAMPLE:htDYFYduRNen8P9ZfE/s9SuKy0U="
        );

        let acl = [
            h("Host", "johnsmith.s3.amazonaws.com"),
            h("Date", "Tue, 27 Mar 2007 19:44:46 +0000"),
        ];
        let r = parts("GET", "/?acl", &acl);
        assert_eq!(
            string_to_sign(&r, "Tue, 27 Mar 2007 19:44:46 +0000", Some("johnsmith")).unwrap(),
            "GET\n\n\nTue, 27 Mar 2007 19:44:46 +0000\n/johnsmith/?acl"
        );
        assert_eq!(
            authorization(&r, Some("johnsmith"), ID, SECRET).unwrap(),
            "AWS AKIAIOSFODNN7EXAMPLE:c2WLPFtWHVgbEmeEG93a4cG37dM="
        );

        let upload = [
            h("Host", "static.example.com"),
            h("Date", "Tue, 27 Mar 2007 21:06:08 +0000"),
            h("x-amz-acl", "public-read"),
            h("content-type", "application/x-download"),
            h("Content-MD5", "4gJE4saaMU4BqNR0kLY+lw=="),
            h("X-Amz-Meta-ReviewedBy", "joe@example.com"),
            h("X-Amz-Meta-ReviewedBy", "jane@example.com"),
            h("X-Amz-Meta-FileChecksum", "0x02661779"),
            h("X-Amz-Meta-ChecksumAlgorithm", "crc32"),
            h("Content-Disposition", "attachment; filename=database.dat"),
            h("Content-Encoding", "gzip"),
            h("Content-Length", "5913339"),
        ];
        let r = parts("PUT", "/db-backup.dat.gz", &upload);
        assert_eq!(
            string_to_sign(
                &r,
                "Tue, 27 Mar 2007 21:06:08 +0000",
                Some("static.example.com")
            )
            .unwrap(),
            "PUT\n4gJE4saaMU4BqNR0kLY+lw==\napplication/x-download\n\
             Tue, 27 Mar 2007 21:06:08 +0000\nx-amz-acl:public-read\n\
             x-amz-meta-checksumalgorithm:crc32\nx-amz-meta-filechecksum:0x02661779\n\
             x-amz-meta-reviewedby:joe@example.com,jane@example.com\n/static.example.com/db-backup.dat.gz"
        );
        assert_eq!(
            authorization(&r, Some("static.example.com"), ID, SECRET).unwrap(),
            "AWS AKIAIOSFODNN7EXAMPLE:jtBQa0Aq+DkULFI8qrpwIjGEx0E="
        );
    }

    #[test]
    fn resource_keeps_subresources_only_sorted_and_decoded() {
        assert_eq!(
            canonical_resource(
                "/b/my%20key",
                "uploadId=a%2Fb&partNumber=2&list-type=2&response-content-type=text%2Fplain&uploads",
                None
            )
            .unwrap(),
            "/b/my%20key?partNumber=2&response-content-type=text/plain&uploadId=a/b&uploads"
        );
        assert_eq!(canonical_resource("/", "", Some("b")).unwrap(), "/b/");
        assert_eq!(canonical_resource("/k", "acl=", None).unwrap(), "/k?acl");
    }

    #[test]
    fn x_amz_date_empties_the_date_field() {
        let hs = [
            h("Date", "Tue, 27 Mar 2007 21:20:27 +0000"),
            h("x-amz-date", "Tue, 27 Mar 2007 21:20:26 +0000"),
        ];
        let r = parts("DELETE", "/johnsmith/photos/puppy.jpg", &hs);
        let (date, t) = header_date(&hs).unwrap();
        assert_eq!(date, "");
        assert_eq!(t.to_unix(), 1_175_030_426);
        assert_eq!(
            string_to_sign(&r, date, None).unwrap(),
            "DELETE\n\n\n\nx-amz-date:Tue, 27 Mar 2007 21:20:26 +0000\n/johnsmith/photos/puppy.jpg"
        );
    }

    #[test]
    fn scheme_detection() {
        let v2 = [h("Authorization", "AWS a:b")];
        let v4 = [h("Authorization", "AWS4-HMAC-SHA256 Credential=x")];
        assert_eq!(scheme(&parts("GET", "/b", &v2)), Scheme::V2);
        assert_eq!(scheme(&parts("GET", "/b", &v4)), Scheme::V4);
        assert_eq!(scheme(&parts("GET", "/b?acl", &[])), Scheme::Anonymous);
        assert_eq!(
            scheme(&parts(
                "GET",
                "/b?AWSAccessKeyId=a&Expires=1&Signature=x",
                &[]
            )),
            Scheme::V2
        );
        assert_eq!(
            scheme(&parts("GET", "/b?X-Amz-Algorithm=x&Signature=x", &[])),
            Scheme::V4
        );
    }

    #[test]
    fn header_auth_verifies_and_refuses() {
        let store = MemoryCredentials::new().with(ID, SECRET);
        let now = 1_175_024_202; // Tue, 27 Mar 2007 19:36:42 GMT
        let date = "Tue, 27 Mar 2007 19:36:42 GMT";
        let base = [h("Host", "johnsmith.s3.amazonaws.com"), h("Date", date)];
        let auth =
            authorization(&parts("GET", "/k", &base), Some("johnsmith"), ID, SECRET).unwrap();
        let hs = [base[0], base[1], h("Authorization", &auth)];
        let ok = verify_request(&parts("GET", "/k", &hs), Some("johnsmith"), now, &store).unwrap();
        assert_eq!(ok.access_key_id, ID);
        assert_eq!(ok.kind, AuthKind::HeaderV2);
        assert_eq!(ok.payload, PayloadHash::Unsigned);
        assert!(ok.signing.is_none());
        let code = |r: S3Result<VerifiedRequest>| r.unwrap_err().code;
        // Another resource, another bucket, a skewed clock, another key, a bad header.
        assert_eq!(
            code(verify_request(
                &parts("GET", "/j", &hs),
                Some("johnsmith"),
                now,
                &store
            )),
            S3ErrorCode::SignatureDoesNotMatch
        );
        assert_eq!(
            code(verify_request(&parts("GET", "/k", &hs), None, now, &store)),
            S3ErrorCode::SignatureDoesNotMatch
        );
        assert_eq!(
            code(verify_request(
                &parts("GET", "/k", &hs),
                Some("johnsmith"),
                now + 901,
                &store
            )),
            S3ErrorCode::RequestTimeTooSkewed
        );
        let other = MemoryCredentials::new().with("OTHER", SECRET);
        assert_eq!(
            code(verify_request(
                &parts("GET", "/k", &hs),
                Some("johnsmith"),
                now,
                &other
            )),
            S3ErrorCode::InvalidAccessKeyId
        );
        let bad = [base[0], base[1], h("Authorization", "AWS nocolon")];
        assert_eq!(
            code(verify_request(&parts("GET", "/k", &bad), None, now, &store)),
            S3ErrorCode::InvalidArgument
        );
        // An unsigned x-amz-* header changes the string to sign.
        let added = [hs[0], hs[1], hs[2], h("x-amz-copy-source", "/b/other")];
        assert_eq!(
            code(verify_request(
                &parts("PUT", "/k", &added),
                Some("johnsmith"),
                now,
                &store
            )),
            S3ErrorCode::SignatureDoesNotMatch
        );
        // A bucket alone, path-style, signed as `/b` or as `/b/` (botocore).
        for resource in ["/b", "/b/"] {
            let sts = alloc::format!("PUT\n\n\n{date}\n{resource}");
            let auth = alloc::format!("AWS {ID}:{}", signature(SECRET, &sts));
            let hs = [base[1], h("Authorization", &auth)];
            let ok = verify_request(&parts("PUT", "/b", &hs), None, now, &store);
            assert!(ok.is_ok(), "{resource}");
            let other = verify_request(&parts("PUT", "/c", &hs), None, now, &store);
            assert_eq!(code(other), S3ErrorCode::SignatureDoesNotMatch);
        }
        let no_date = [base[0], h("Authorization", &auth)];
        assert_eq!(
            code(verify_request(
                &parts("GET", "/k", &no_date),
                None,
                now,
                &store
            )),
            S3ErrorCode::AccessDenied
        );
    }

    #[test]
    fn presigned_verifies_expires_and_refuses() {
        let store = MemoryCredentials::new().with(ID, SECRET);
        // AWS's query-string authentication example.
        let hs = [h("Host", "johnsmith.s3.amazonaws.com")];
        let target = alloc::format!(
            "/photos/puppy.jpg?AWSAccessKeyId={ID}&Expires=1175139620&\
             Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D"
        );
        let r = parts("GET", &target, &hs);
        let ok = verify_request(&r, Some("johnsmith"), 1_175_139_000, &store).unwrap();
        assert_eq!(
            ok.kind,
            AuthKind::PresignedV2 {
                expires_at: 1_175_139_620
            }
        );
        let e = verify_request(&r, Some("johnsmith"), 1_175_139_621, &store).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_ref()),
            (S3ErrorCode::AccessDenied, "Request has expired")
        );
        let e = verify_request(&r, None, 1_175_139_000, &store).unwrap_err();
        assert_eq!(e.code, S3ErrorCode::SignatureDoesNotMatch);
        // The signature's `+` unencoded.
        let raw_plus = target.replace("%2B", "+");
        let r = parts("GET", &raw_plus, &hs);
        assert!(verify_request(&r, Some("johnsmith"), 1_175_139_000, &store).is_ok());
        let partial = parts("GET", "/k?AWSAccessKeyId=a&Signature=b", &hs);
        assert_eq!(
            verify_request(&partial, None, 0, &store).unwrap_err().code,
            S3ErrorCode::AccessDenied
        );
        let both_hs = [hs[0], h("Authorization", "AWS a:b")];
        let both = parts("GET", &target, &both_hs);
        assert_eq!(
            verify_request(&both, None, 0, &store).unwrap_err().code,
            S3ErrorCode::InvalidArgument
        );
    }
}
