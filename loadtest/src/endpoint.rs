//! Where operations go: endpoint URLs parsed and resolved (with the TLS name of `https://`
//! ones), and the policy that spreads operations over them.

use std::net::{SocketAddr, ToSocketAddrs};
use std::ops::Index;
use std::sync::atomic::{AtomicUsize, Ordering};

use ferry_net::rustls::pki_types::ServerName;
use serde::{Deserialize, Serialize};

/// One S3 endpoint: where to connect, what to send as `Host`, and whether it speaks TLS.
#[derive(Debug)]
pub struct Endpoint {
    /// The URL as given (`http://127.0.0.1:7001`, `https://s3.example:443`).
    pub url: String,
    /// The resolved address.
    pub addr: SocketAddr,
    /// The `Host` header value (`host:port` as given).
    pub host: String,
    /// For `https://`: the name its certificate must have (and SNI), the URL's host.
    pub tls: Option<ServerName<'static>>,
    in_flight: AtomicUsize,
}

/// The scheme, the authority (`host[:port]`) and the scheme's default port of an endpoint URL.
fn split_url(url: &str) -> Result<(&'static str, &str, u16), String> {
    let (scheme, rest, default_port) = if let Some(r) = url.strip_prefix("http://") {
        ("http", r, 80)
    } else if let Some(r) = url.strip_prefix("https://") {
        ("https", r, 443)
    } else if url.contains("://") {
        return Err(format!(
            "{url}: only http:// and https:// endpoints are supported"
        ));
    } else {
        ("http", url, 80)
    };
    let authority = rest.trim_end_matches('/');
    if authority.is_empty() || authority.contains('/') {
        return Err(format!(
            "{url}: an endpoint is {scheme}://host[:port] without a path"
        ));
    }
    Ok((scheme, authority, default_port))
}

/// An endpoint URL as reports name it (`scheme://host[:port]`), without resolving it: a
/// coordinator names the endpoints its agents resolve.
pub fn canonical_url(url: &str) -> Result<String, String> {
    let (scheme, authority, _) = split_url(url)?;
    Ok(format!("{scheme}://{authority}"))
}

impl Endpoint {
    /// Parse and resolve `http://host[:port]` or `https://host[:port]` (the scheme is
    /// optional: http; the port defaults to 80 or 443).
    pub fn parse(url: &str) -> Result<Self, String> {
        let (scheme, authority, default_port) = split_url(url)?;
        let host_only = match authority.rsplit_once(':') {
            Some((h, p))
                if !h.ends_with(':') && !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) =>
            {
                Some(h)
            }
            _ => None,
        };
        let with_port = match host_only {
            Some(_) => authority.to_string(),
            None => format!("{authority}:{default_port}"),
        };
        let tls = match scheme {
            "https" => Some(
                ferry_net::server_name(host_only.unwrap_or(authority))
                    .map_err(|e| format!("{url}: not a TLS server name: {e}"))?,
            ),
            _ => None,
        };
        let addr = with_port
            .to_socket_addrs()
            .map_err(|e| format!("{url}: cannot resolve: {e}"))?
            .next()
            .ok_or_else(|| format!("{url}: no address"))?;
        let mut ep = Self::new(
            format!("{scheme}://{authority}"),
            addr,
            authority.to_string(),
        );
        ep.tls = tls;
        Ok(ep)
    }

    /// A plain-HTTP endpoint at `addr` with `host` as its `Host` header.
    pub fn new(url: String, addr: SocketAddr, host: String) -> Self {
        Self {
            url,
            addr,
            host,
            tls: None,
            in_flight: AtomicUsize::new(0),
        }
    }

    /// An endpoint for a local address (`http://IP:PORT`).
    pub fn from_addr(addr: SocketAddr) -> Self {
        Self::new(format!("http://{addr}"), addr, addr.to_string())
    }

    /// Requests in flight to it now.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }
}

/// How requests are spread over endpoints (`--endpoint-policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum EndpointPolicy {
    /// Each operation goes to the next endpoint in turn.
    #[default]
    RoundRobin,
    /// Each operation goes to the endpoint with the fewest requests in flight.
    LeastBusy,
}

/// A client's endpoints and the turn its policy picks the next one by.
#[derive(Debug)]
pub(crate) struct Endpoints {
    list: Vec<Endpoint>,
    policy: EndpointPolicy,
    next: AtomicUsize,
}

impl Endpoints {
    /// `list` (at least one), spread over by `policy`.
    pub(crate) fn new(list: Vec<Endpoint>, policy: EndpointPolicy) -> Self {
        Self {
            list,
            policy,
            next: AtomicUsize::new(0),
        }
    }

    /// The endpoints, in the order given.
    pub(crate) fn list(&self) -> &[Endpoint] {
        &self.list
    }

    /// The policy.
    pub(crate) fn policy(&self) -> EndpointPolicy {
        self.policy
    }

    /// The index of the endpoint the next operation goes to.
    pub(crate) fn pick(&self) -> usize {
        let n = self.list.len().max(1);
        let turn = self.next.fetch_add(1, Ordering::Relaxed);
        match self.policy {
            EndpointPolicy::RoundRobin => turn % n,
            // Starting at a rotating index spreads ties.
            EndpointPolicy::LeastBusy => (0..n)
                .map(|k| (turn + k) % n)
                .min_by_key(|&i| self.list[i].in_flight())
                .unwrap_or(0),
        }
    }

    /// Take endpoint `index` for one operation: it counts as in flight until the lease drops.
    pub(crate) fn lease(&self, index: usize) -> Lease<'_> {
        let ep = &self.list[index];
        ep.in_flight.fetch_add(1, Ordering::Relaxed);
        Lease { ep, index }
    }
}

impl Index<usize> for Endpoints {
    type Output = Endpoint;

    fn index(&self, index: usize) -> &Endpoint {
        &self.list[index]
    }
}

/// An endpoint taken for one operation; its in-flight count drops with it.
pub(crate) struct Lease<'a> {
    /// The endpoint.
    pub(crate) ep: &'a Endpoint,
    /// Its index.
    pub(crate) index: usize,
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        self.ep.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_parse() {
        let e = Endpoint::parse("http://127.0.0.1:7001").unwrap();
        assert_eq!(e.addr, "127.0.0.1:7001".parse().unwrap());
        assert_eq!(
            (e.host.as_str(), e.url.as_str()),
            ("127.0.0.1:7001", "http://127.0.0.1:7001")
        );
        assert!(e.tls.is_none());
        let e = Endpoint::parse("127.0.0.1").unwrap();
        assert_eq!(e.addr.port(), 80);
        let e = Endpoint::parse("http://[::1]:9000/").unwrap();
        assert_eq!(e.addr, "[::1]:9000".parse().unwrap());
        // https: port 443 by default, the host (without its port) is the TLS name.
        let e = Endpoint::parse("https://localhost:8443").unwrap();
        assert_eq!((e.addr.port(), e.host.as_str()), (8443, "localhost:8443"));
        assert_eq!(e.tls, Some(ServerName::try_from("localhost").unwrap()));
        let e = Endpoint::parse("https://127.0.0.1").unwrap();
        assert_eq!((e.addr.port(), e.url.as_str()), (443, "https://127.0.0.1"));
        assert_eq!(e.tls, Some(ServerName::try_from("127.0.0.1").unwrap()));
        let e = Endpoint::parse("https://[::1]:9443").unwrap();
        assert_eq!(e.tls, Some(ServerName::try_from("::1").unwrap()));
        assert!(Endpoint::parse("ftp://x").is_err());
        assert!(Endpoint::parse("http://127.0.0.1:1/bucket").is_err());
        assert!(Endpoint::parse("https://127.0.0.1:1/bucket").is_err());
        assert_eq!(
            canonical_url("s3.example:9000/").as_deref(),
            Ok("http://s3.example:9000")
        );
        assert!(canonical_url("ftp://x").is_err());
    }
}
