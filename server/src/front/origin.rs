//! Where a request comes from, for the nodes' policy conditions (`aws:SourceIp`,
//! `aws:SecureTransport`, `s3:TlsVersion`, `s3:signatureAge`): the connection's peer and its
//! own signature, or, in a request the cluster sealed, what the cluster's proxy says of its own
//! client (`x-ferry-client-ip`, `x-ferry-client-tls`, `x-ferry-client-tls-version`,
//! `x-ferry-client-signed-at`), which the proxy tells with every request it makes for a
//! client.

use std::net::IpAddr;

use ferry_core::http::{Header, find_header_str};
use ferry_core::s3::header;

/// Where a request comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Origin {
    /// The client's address, if known.
    pub ip: Option<IpAddr>,
    /// Whether it came over TLS.
    pub secure: bool,
    /// The TLS version, if TLS and known (`"1.2"`, `"1.3"`).
    pub tls_version: Option<&'static str>,
    /// When the client signed the request (Unix seconds), if a proxy says so: the node then
    /// judges the signature's age by it rather than by the proxy's own signature.
    pub signed_at: Option<i64>,
}

impl Origin {
    /// The origin of a request from `peer` on a connection that is `secure` or not, with
    /// `headers`: a proxy speaks for its client in a request the cluster `sealed`.
    pub(crate) fn of(
        peer: Option<IpAddr>,
        tls_version: Option<&'static str>,
        secure: bool,
        headers: &[Header<'_>],
        sealed: bool,
    ) -> Self {
        let direct = Self {
            ip: peer,
            secure,
            tls_version,
            signed_at: None,
        };
        if !sealed {
            return direct;
        }
        let Some(ip) = find_header_str(headers, header::X_FERRY_CLIENT_IP)
            .and_then(|v| v.trim().parse::<IpAddr>().ok())
        else {
            return direct;
        };
        let secure = find_header_str(headers, header::X_FERRY_CLIENT_TLS)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
        let tls_version = find_header_str(headers, header::X_FERRY_CLIENT_TLS_VERSION)
            .and_then(|v| TLS_VERSIONS.iter().copied().find(|t| *t == v.trim()))
            .filter(|_| secure);
        let signed_at = find_header_str(headers, header::X_FERRY_CLIENT_SIGNED_AT)
            .and_then(|v| v.trim().parse::<i64>().ok());
        Self {
            ip: Some(ip),
            secure,
            tls_version,
            signed_at,
        }
    }

    /// The headers that tell a backend where the request came from.
    pub(crate) fn headers(&self) -> impl Iterator<Item = (&'static str, String)> + '_ {
        let ip = self
            .ip
            .map(|ip| (header::X_FERRY_CLIENT_IP, ip.to_string()));
        let tls = (
            header::X_FERRY_CLIENT_TLS,
            String::from(if self.secure { "true" } else { "false" }),
        );
        let version = self
            .tls_version
            .map(|v| (header::X_FERRY_CLIENT_TLS_VERSION, v.to_owned()));
        let signed = self
            .signed_at
            .map(|t| (header::X_FERRY_CLIENT_SIGNED_AT, t.to_string()));
        ip.into_iter()
            .chain(std::iter::once(tls))
            .chain(version)
            .chain(signed)
    }
}

/// The TLS versions a proxy may name.
const TLS_VERSIONS: [&str; 4] = ["1.0", "1.1", "1.2", "1.3"];
