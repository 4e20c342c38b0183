//! Runs across machines: `ferry-load agent` processes run the load, one `ferry-load
//! <workload> --agents ...` process coordinates them and merges their results exactly.
//!
//! - [`wire`]: the authenticated, sealed, bounded control channel; [`messages`]: what travels
//!   on it; [`link`]: a channel in use (a writer with heartbeats, a reader, loss detection).
//! - [`clock`]: clock offsets by round trips; [`agent`]: the agent's side; [`coordinator`]:
//!   the coordinator's.
//!
//! The load itself runs on the runtime the run names (`--runtime tokio|smol`), exactly as a
//! local run does ([`crate::run`]); the control channel uses plain threads and blocking
//! sockets (see [`wire`] for why).

pub mod agent;
pub mod clock;
pub mod coordinator;
pub mod link;
pub mod messages;
pub mod wire;

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

/// The port agents listen on when none is given.
pub const DEFAULT_PORT: u16 = 7761;

/// The addresses of `host[:port]` (`[v6]:port`, a bare IPv6 address, a name), `port` by
/// default.
pub fn resolve(addr: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
    let addr = addr.trim();
    let found: Vec<SocketAddr> = if let Ok(a) = addr.parse::<SocketAddr>() {
        vec![a]
    } else if let Ok(ip) = addr.trim_matches(['[', ']']).parse::<IpAddr>() {
        vec![SocketAddr::new(ip, port)]
    } else if addr
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        addr.to_socket_addrs()
            .map_err(|e| format!("{addr}: {e}"))?
            .collect()
    } else {
        (addr, port)
            .to_socket_addrs()
            .map_err(|e| format!("{addr}: {e}"))?
            .collect()
    };
    if found.is_empty() {
        return Err(format!("{addr}: no address"));
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_resolve_with_a_default_port() {
        let one = |s: &str| resolve(s, 7761).unwrap()[0];
        assert_eq!(one("127.0.0.1:9"), "127.0.0.1:9".parse().unwrap());
        assert_eq!(one("127.0.0.1"), "127.0.0.1:7761".parse().unwrap());
        assert_eq!(one("::1"), "[::1]:7761".parse().unwrap());
        assert_eq!(one("[::1]"), "[::1]:7761".parse().unwrap());
        assert_eq!(one("[::1]:9"), "[::1]:9".parse().unwrap());
        assert_eq!(one("localhost:9").port(), 9);
        assert_eq!(one("localhost").port(), 7761);
        assert!(resolve("no such host.invalid", 1).is_err());
    }
}
