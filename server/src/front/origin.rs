//! Where a request comes from, for the nodes' policy conditions (`aws:SourceIp`,
//! `aws:SecureTransport`): the connection's peer, or, in a request the cluster sealed, what
//! the cluster's proxy says of its own client (`x-ferry-client-ip`, `x-ferry-client-tls`),
//! which the proxy tells with every request it makes for a client.

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
}

impl Origin {
    /// The origin of a request from `peer` on a connection that is `secure` or not, with
    /// `headers`: a proxy speaks for its client in a request the cluster `sealed`.
    pub(crate) fn of(
        peer: Option<IpAddr>,
        secure: bool,
        headers: &[Header<'_>],
        sealed: bool,
    ) -> Self {
        let direct = Self { ip: peer, secure };
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
        Self {
            ip: Some(ip),
            secure,
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
        ip.into_iter().chain(std::iter::once(tls))
    }
}
