//! Outbound requests: which client headers go to a backend, and re-signing them.

use std::borrow::Cow;

use ferry_core::http::Header;
use ferry_core::rt::Runtime;
use ferry_core::s3::S3Result;
use ferry_core::s3::sigv4::{Credentials, RequestParts, query, sign_request};

use super::Proxy;
use super::backend::Backend;

/// Header list of an outbound request: borrowed from the client's head where possible.
pub(crate) type OutHeaders<'a> = Vec<(Cow<'a, str>, Cow<'a, [u8]>)>;

/// Hop-by-hop and framing headers: never forwarded (the engines write framing themselves).
const HOP_BY_HOP: [&str; 11] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
    "expect",
];

/// Replaced when a request is re-signed.
const AUTH_HEADERS: [&str; 6] = [
    "host",
    "authorization",
    "x-amz-date",
    "x-amz-content-sha256",
    "x-amz-security-token",
    "date",
];

/// Presigned-URL parameters: dropped from the query when re-signing with header auth.
const PRESIGN_PARAMS: [&str; 8] = [
    query::X_AMZ_ALGORITHM,
    query::X_AMZ_CREDENTIAL,
    query::X_AMZ_DATE,
    query::X_AMZ_EXPIRES,
    query::X_AMZ_SIGNED_HEADERS,
    query::X_AMZ_SIGNATURE,
    query::X_AMZ_SECURITY_TOKEN,
    query::X_AMZ_CONTENT_SHA256,
];

fn listed(list: &[&str], name: &str) -> bool {
    list.iter().any(|n| n.eq_ignore_ascii_case(name))
}

/// Whether a header is hop-by-hop or framing (not forwarded in either direction).
pub(crate) fn is_hop_by_hop(name: &str) -> bool {
    listed(&HOP_BY_HOP, name)
}

/// Whether a client header is replaced by re-signing.
pub(crate) fn is_auth_header(name: &str) -> bool {
    listed(&AUTH_HEADERS, name)
}

/// The raw query without presigned-URL parameters (the rest stays as sent).
pub(crate) fn strip_presign(raw_query: &str) -> Cow<'_, str> {
    let is_presign = |pair: &str| {
        let name = pair.split_once('=').map_or(pair, |(n, _)| n);
        PRESIGN_PARAMS.contains(&name)
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

/// Views of `h` for the HTTP engine and SigV4.
pub(crate) fn views<'h>(h: &'h OutHeaders<'_>) -> Vec<Header<'h>> {
    h.iter()
        .map(|(n, v)| Header {
            name: n.as_ref(),
            value: v.as_ref(),
        })
        .collect()
}

/// One owned header.
pub(crate) fn owned(
    name: &'static str,
    value: impl Into<String>,
) -> (Cow<'static, str>, Cow<'static, [u8]>) {
    (Cow::Borrowed(name), Cow::Owned(value.into().into_bytes()))
}

/// Sign `headers` (which must not hold `Host` or any auth header) for backend `b` with
/// `creds`: `Host`, `x-amz-date`, `x-amz-content-sha256` and `Authorization` are added.
#[allow(clippy::too_many_arguments)]
pub(crate) fn sign_into<R: Runtime>(
    p: &Proxy<R>,
    b: &Backend<R>,
    creds: &Credentials,
    method: &str,
    path: &str,
    raw_query: &str,
    headers: &mut OutHeaders<'_>,
    payload_hash: &str,
) -> S3Result<()> {
    headers.insert(0, owned("Host", b.host.clone()));
    let sig = {
        let v = views(headers);
        let parts = RequestParts {
            method,
            path,
            query: raw_query,
            headers: &v,
        };
        let mut keys = &p.keys;
        sign_request(
            &parts,
            payload_hash,
            creds,
            &b.region,
            p.rt.unix_time(),
            &mut keys,
        )?
    };
    headers.push(owned("x-amz-date", sig.x_amz_date));
    headers.push(owned("x-amz-content-sha256", sig.x_amz_content_sha256));
    headers.push(owned("Authorization", sig.authorization));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(is_hop_by_hop("Transfer-Encoding"));
        assert!(!is_hop_by_hop("content-type"));
        assert!(is_auth_header("X-Amz-Date"));
    }
}
