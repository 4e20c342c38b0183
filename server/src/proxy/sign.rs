//! Outbound requests to backends: which client headers go on, and signing with the backend's
//! key (the builder and the SigV4 rules are core's `s3::outbound`).

use std::borrow::Cow;

use ferry_core::rt::Runtime;
use ferry_core::s3::S3Result;
use ferry_core::s3::cluster;
use ferry_core::s3::header;
use ferry_core::s3::outbound::OutboundRequest;
use ferry_core::s3::sigv4::Credentials;

use super::Proxy;
use super::backend::Backend;
use super::config::BackendKind;

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
    header::CONTENT_LENGTH,
    "expect",
];

/// Whether a header is hop-by-hop or framing (not forwarded in either direction).
pub(crate) fn is_hop_by_hop(name: &str) -> bool {
    HOP_BY_HOP.iter().any(|n| n.eq_ignore_ascii_case(name))
}

/// Seal `req` (going to backend `b` as `target`) for the cluster when it carries Ferry's own
/// `x-ferry-*` headers and `b` is a Ferry node: the node takes them from nothing else
/// (`ferry_core::s3::cluster`). Other backends get no seal: it means nothing to them.
pub(crate) fn seal<R: Runtime>(
    p: &Proxy<R>,
    b: &Backend<R>,
    target: &str,
    req: &mut OutboundRequest<'_>,
) {
    if b.kind != BackendKind::Ferry {
        return;
    }
    let Some(keys) = &p.cluster else {
        // `ProxyConfig::validate` refuses Ferry backends without a key.
        return;
    };
    if !req.headers.iter().any(|(n, _)| cluster::is_internal(n)) {
        return;
    }
    let headers = req.headers.iter().map(|(n, v)| (n.as_ref(), v.as_ref()));
    let value = keys.seal(req.method, target, headers, p.shared.rt.unix_time());
    req.headers.push((
        Cow::Borrowed(header::X_FERRY_CLUSTER_AUTH),
        Cow::Owned(value.into_bytes()),
    ));
}

/// Sign `req` for backend `b` as `caller` (with the backend's key, or the caller's where the
/// backend shares it); an anonymous caller's request goes unsigned, never with a key of the
/// proxy's. What it carries of the cluster's is sealed first ([`seal`]).
pub(crate) fn sign_as<R: Runtime>(
    p: &Proxy<R>,
    b: &Backend<R>,
    caller_key: &str,
    req: &mut OutboundRequest<'_>,
    payload_hash: &str,
) -> S3Result<()> {
    let target = req.target().into_owned();
    seal(p, b, &target, req);
    if caller_key.is_empty() {
        req.unsigned(&b.host, payload_hash);
        return Ok(());
    }
    let creds = p.credentials_for(b, caller_key)?;
    sign(p, b, &creds, req, payload_hash)
}

/// Sign `req` (whose headers hold no `Host` or auth header) for backend `b` with `creds`.
pub(crate) fn sign<R: Runtime>(
    p: &Proxy<R>,
    b: &Backend<R>,
    creds: &Credentials,
    req: &mut OutboundRequest<'_>,
    payload_hash: &str,
) -> S3Result<()> {
    let mut keys = &p.shared.keys;
    req.sign(
        &b.host,
        payload_hash,
        creds,
        &b.region,
        p.shared.rt.unix_time(),
        &mut keys,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_by_hop_headers() {
        assert!(is_hop_by_hop("Transfer-Encoding"));
        assert!(is_hop_by_hop("expect"));
        assert!(!is_hop_by_hop("content-type"));
    }
}
