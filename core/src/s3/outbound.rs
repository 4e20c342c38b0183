//! Requests Ferry sends to an S3 server (the proxy to its backends, the load tester to the
//! server it loads): one builder that collects the headers and signs them with SigV4.
//!
//! Headers borrow where they can (a proxy forwards most of its client's headers unchanged) and
//! own what signing adds. [`OutboundRequest::views`] hands them to the HTTP client engine.

use alloc::borrow::Cow;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::S3Result;
use super::sigv4::{Credentials, KeyCache, RequestParts, SigningContext, query, sign_request};
use crate::http::Header;
use crate::s3::header;

/// One header of an outbound request.
pub type OutHeader<'a> = (Cow<'a, str>, Cow<'a, [u8]>);

/// Headers that signing sets: a client's are dropped when a request is signed anew.
const AUTH_HEADERS: [&str; 6] = [
    header::HOST,
    header::AUTHORIZATION,
    header::X_AMZ_DATE,
    header::X_AMZ_CONTENT_SHA256,
    header::X_AMZ_SECURITY_TOKEN,
    header::DATE,
];

/// Presigned-URL parameters (SigV4's, then SigV2's): dropped from the query when a request is
/// signed anew with header auth.
const PRESIGN_PARAMS: [&str; 11] = [
    query::X_AMZ_ALGORITHM,
    query::X_AMZ_CREDENTIAL,
    query::X_AMZ_DATE,
    query::X_AMZ_EXPIRES,
    query::X_AMZ_SIGNED_HEADERS,
    query::X_AMZ_SIGNATURE,
    query::X_AMZ_SECURITY_TOKEN,
    query::X_AMZ_CONTENT_SHA256,
    super::sigv2::query::ACCESS_KEY_ID,
    super::sigv2::query::EXPIRES,
    super::sigv2::query::SIGNATURE,
];

/// Whether a client header is replaced when the request is signed anew.
pub fn is_auth_header(name: &str) -> bool {
    AUTH_HEADERS.iter().any(|n| n.eq_ignore_ascii_case(name))
}

/// The raw query without presigned-URL parameters (the rest stays as sent).
///
/// Names are compared percent-decoded, as the verifier reads them: `X%2DAmz%2DSignature` is
/// the signature too.
pub fn strip_presign(raw_query: &str) -> Cow<'_, str> {
    let is_presign = |pair: &str| {
        let name = pair.split_once('=').map_or(pair, |(n, _)| n);
        // A name that does not decode is no parameter of ours; the verifier refused it anyway.
        super::uri::decode(name, true).is_ok_and(|n| PRESIGN_PARAMS.contains(&n.as_ref()))
    };
    if !raw_query.split('&').any(is_presign) {
        return Cow::Borrowed(raw_query);
    }
    let kept: Vec<&str> = raw_query
        .split('&')
        .filter(|p| !p.is_empty() && !is_presign(p))
        .collect();
    Cow::Owned(kept.join("&"))
}

/// A request to an S3 server: method, encoded path, raw query and headers, signed with
/// [`OutboundRequest::sign`] before it goes out.
#[derive(Debug, Clone)]
pub struct OutboundRequest<'a> {
    /// The method.
    pub method: &'a str,
    /// The path, already percent-encoded as it goes on the wire.
    pub path: Cow<'a, str>,
    /// The raw query, without `?` (empty for none).
    pub query: Cow<'a, str>,
    /// The headers, in order; no framing headers (the HTTP engine writes those).
    pub headers: Vec<OutHeader<'a>>,
}

impl<'a> OutboundRequest<'a> {
    /// A request with no headers yet.
    pub fn new(
        method: &'a str,
        path: impl Into<Cow<'a, str>>,
        query: impl Into<Cow<'a, str>>,
    ) -> Self {
        Self {
            method,
            path: path.into(),
            query: query.into(),
            headers: Vec::with_capacity(8),
        }
    }

    /// Add a header.
    pub fn header(
        &mut self,
        name: impl Into<Cow<'a, str>>,
        value: impl Into<Cow<'a, [u8]>>,
    ) -> &mut Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sign with header auth for `host` (the `Host` header, first) and `payload_hash`
    /// (`UNSIGNED-PAYLOAD`, a `STREAMING-*` value or the body's hex SHA-256): adds `Host`,
    /// `x-amz-date`, `x-amz-content-sha256` and `Authorization`, which the headers must not
    /// hold yet. Returns the signing context, for aws-chunked chunk signatures.
    pub fn sign(
        &mut self,
        host: &str,
        payload_hash: &str,
        credentials: &Credentials,
        region: &str,
        now: i64,
        cache: &mut impl KeyCache,
    ) -> S3Result<SigningContext> {
        self.headers.insert(
            0,
            (
                Cow::Borrowed(header::HOST),
                Cow::Owned(host.as_bytes().to_vec()),
            ),
        );
        let sig = {
            let views = self.views();
            let parts = RequestParts {
                method: self.method,
                path: &self.path,
                query: &self.query,
                headers: &views,
            };
            sign_request(&parts, payload_hash, credentials, region, now, cache)?
        };
        let owned = |s: String| Cow::Owned(s.into_bytes());
        self.headers
            .push((Cow::Borrowed(header::X_AMZ_DATE), owned(sig.x_amz_date)));
        self.headers.push((
            Cow::Borrowed(header::X_AMZ_CONTENT_SHA256),
            owned(sig.x_amz_content_sha256),
        ));
        self.headers.push((
            Cow::Borrowed(header::AUTHORIZATION),
            owned(sig.authorization),
        ));
        Ok(sig.signing)
    }

    /// Send anonymously (an anonymous client's request, forwarded as such): adds `Host` (first)
    /// and `x-amz-content-sha256`, and no signature.
    pub fn unsigned(&mut self, host: &str, payload_hash: &str) {
        self.headers.insert(
            0,
            (
                Cow::Borrowed(header::HOST),
                Cow::Owned(host.as_bytes().to_vec()),
            ),
        );
        self.headers.push((
            Cow::Borrowed(header::X_AMZ_CONTENT_SHA256),
            Cow::Owned(payload_hash.as_bytes().to_vec()),
        ));
    }

    /// The request-target: `path` or `path?query`.
    pub fn target(&self) -> Cow<'_, str> {
        if self.query.is_empty() {
            Cow::Borrowed(&self.path)
        } else {
            Cow::Owned(format!("{}?{}", self.path, self.query))
        }
    }

    /// The headers as the HTTP engine takes them.
    pub fn views(&self) -> Vec<Header<'_>> {
        self.headers
            .iter()
            .map(|(n, v)| Header {
                name: n.as_ref(),
                value: v.as_ref(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::find_header_str;
    use crate::s3::sigv4::{
        MemoryCredentials, NoKeyCache, PayloadHash, UNSIGNED_PAYLOAD, verify_request,
    };

    #[test]
    fn presign_parameters_are_stripped() {
        assert_eq!(strip_presign("uploads"), "uploads");
        assert_eq!(
            strip_presign(
                "partNumber=1&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=a%2Fb&\
                 X-Amz-Date=x&X-Amz-Expires=60&X-Amz-SignedHeaders=host&uploadId=u&\
                 X-Amz-Signature=00"
            ),
            "partNumber=1&uploadId=u"
        );
        assert_eq!(strip_presign("X-Amz-Signature=1"), "");
        assert_eq!(
            strip_presign("AWSAccessKeyId=A&Expires=9&uploadId=u&Signature=a%2Bb%3D"),
            "uploadId=u"
        );
        // Encoded names are the same parameters to the verifier, so they go too.
        assert_eq!(
            strip_presign("X%2DAmz%2DSignature=00&uploadId=u&X-Amz-%44ate=x"),
            "uploadId=u"
        );
        assert!(is_auth_header("X-Amz-Date"));
        assert!(is_auth_header("Host"));
        assert!(!is_auth_header("content-type"));
    }

    #[test]
    fn signed_requests_verify_and_tampering_does_not() {
        let creds = Credentials::new("AKIDEXAMPLE", "secret/key");
        let store = MemoryCredentials::new().with("AKIDEXAMPLE", "secret/key");
        let now = 1_700_000_000;
        let mut req = OutboundRequest::new("PUT", "/bucket/my%20key", "partNumber=2&uploadId=u");
        req.header("content-md5", &b"1B2M2Y8AsgTpgAmY7PhCfg=="[..]);
        req.sign(
            "s3.local:9000",
            UNSIGNED_PAYLOAD,
            &creds,
            "us-east-1",
            now,
            &mut NoKeyCache,
        )
        .expect("signed");
        assert_eq!(req.target(), "/bucket/my%20key?partNumber=2&uploadId=u");
        let views = req.views();
        assert_eq!(views.first().map(|h| h.name), Some("host"));
        assert!(find_header_str(&views, "authorization").is_some());
        let verify = |headers: &[Header<'_>], path: &str| {
            let parts = RequestParts {
                method: "PUT",
                path,
                query: &req.query,
                headers,
            };
            verify_request(&parts, now, Some("us-east-1"), &store, &mut NoKeyCache)
        };
        let ok = verify(&views, &req.path)
            .expect("verifies")
            .expect("signed");
        assert_eq!(ok.payload, PayloadHash::Unsigned);
        assert!(verify(&views, "/bucket/other").is_err());
        let mut tampered = views.clone();
        tampered[1].value = b"kAFQmDzST7DWlj99KOF/cg==";
        assert!(verify(&tampered, &req.path).is_err());
    }
}
