//! Limits on a server's client connections, shared by `ferry node` and `ferry proxy`: how many
//! may be open at once, how long each may take over a head, a body or an idle wait; and the
//! open-file limit the connection cap is derived from.
//!
//! The engine ([`ServerConfig`]) enforces them: a connection past the cap takes the place of
//! the one idle longest, or is closed at once; heads have a total deadline, bodies a minimum
//! rate after a grace period, idle connections a timeout.

use std::io;
use std::time::Duration;

use ferry_core::http::server::ServerConfig;
use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

/// Descriptors left out of the connection cap: listeners, the store's database and the files
/// being read or written, log output, the runtime's own.
pub const RESERVED_FDS: u64 = 64;

/// The smallest derived cap, whatever the open-file limit says.
const MIN_DERIVED_CONNECTIONS: usize = 16;

/// Limits on the S3 listener's client connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnLimits {
    /// Most client connections open at once; `None` derives it from the open-file limit when
    /// the server starts (see [`default_max_connections`]).
    pub max_connections: Option<usize>,
    /// A request head must arrive whole within this, counted from the connection's start for
    /// the first request and from the head's first byte after (default 10 s).
    pub header_timeout: Duration,
    /// A kept-alive connection waiting for its next request closes after this (default 60 s).
    pub idle_timeout: Duration,
    /// How long the reads of one request body may wait in all before
    /// [`ConnLimits::min_body_rate`] must be met (default 30 s).
    pub body_timeout: Duration,
    /// The slowest a request body may come, in bytes per second: each byte received allows
    /// `1 / rate` seconds more waiting beyond the body timeout (default 1024; 0: the body
    /// timeout bounds the whole body).
    pub min_body_rate: u64,
}

impl Default for ConnLimits {
    fn default() -> Self {
        let engine = ServerConfig::default();
        Self {
            max_connections: None,
            header_timeout: engine.header_timeout,
            idle_timeout: engine.idle_timeout,
            body_timeout: engine.body_timeout,
            min_body_rate: engine.min_body_rate,
        }
    }
}

impl ConnLimits {
    /// Set these limits on the engine's `config`; a connection of this server may hold up to
    /// `fds_per_connection` descriptors (for the derived cap).
    pub(crate) fn apply(&self, config: &mut ServerConfig, fds_per_connection: u64) {
        config.max_connections = self
            .max_connections
            .unwrap_or_else(|| default_max_connections(fds_per_connection));
        config.header_timeout = self.header_timeout;
        config.idle_timeout = self.idle_timeout;
        config.body_timeout = self.body_timeout;
        config.min_body_rate = self.min_body_rate;
    }

    /// Check what a server cannot start with.
    pub fn validate(&self) -> Result<(), String> {
        if self.max_connections == Some(0) {
            return Err("max_connections must be at least 1".into());
        }
        let zero = [
            ("header_timeout", self.header_timeout),
            ("idle_timeout", self.idle_timeout),
            ("body_timeout", self.body_timeout),
        ];
        match zero.iter().find(|(_, d)| d.is_zero()) {
            Some((name, _)) => Err(format!("{name} must be more than 0 ms")),
            None => Ok(()),
        }
    }
}

/// The process's open-file limit (the soft one, which applies), if it is finite.
pub fn fd_limit() -> Option<u64> {
    getrlimit(Resource::Nofile).current
}

/// Raise the soft open-file limit to the hard one, as `ferry` does when it starts: a server's
/// connections, backend connections and files all need descriptors, and the soft limit is
/// often a tenth of what the system allows. Returns the soft limit before and after.
pub fn raise_fd_limit() -> io::Result<(Option<u64>, Option<u64>)> {
    let limit = getrlimit(Resource::Nofile);
    if limit.current == limit.maximum {
        return Ok((limit.current, limit.current));
    }
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        },
    )?;
    Ok((limit.current, fd_limit()))
}

/// The default connection cap: the open-file limit less [`RESERVED_FDS`], shared by the
/// descriptors one connection may hold (a node's: its socket and a file; a proxy's: its
/// socket, a backend connection and their splice pipes), and at least 16.
pub fn default_max_connections(fds_per_connection: u64) -> usize {
    let limit = fd_limit().unwrap_or(1 << 20);
    let share = limit.saturating_sub(RESERVED_FDS) / fds_per_connection.max(1);
    usize::try_from(share)
        .unwrap_or(usize::MAX)
        .max(MIN_DERIVED_CONNECTIONS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_reach_the_engine_and_the_cap_follows_the_file_limit() {
        let mut config = ServerConfig::default();
        let limits = ConnLimits {
            max_connections: Some(7),
            header_timeout: Duration::from_millis(100),
            idle_timeout: Duration::from_millis(200),
            body_timeout: Duration::from_millis(300),
            min_body_rate: 5,
        };
        limits.apply(&mut config, 2);
        assert_eq!(config.max_connections, 7);
        assert_eq!(config.header_timeout, Duration::from_millis(100));
        assert_eq!(config.idle_timeout, Duration::from_millis(200));
        assert_eq!(config.body_timeout, Duration::from_millis(300));
        assert_eq!(config.min_body_rate, 5);
        let derived = ConnLimits::default();
        derived.apply(&mut config, 2);
        let fds = fd_limit().expect("a finite open-file limit");
        let want = (fds.saturating_sub(RESERVED_FDS) / 2).max(16);
        assert_eq!(config.max_connections as u64, want);
        assert!(default_max_connections(4) <= default_max_connections(2));
        assert!(ConnLimits::default().validate().is_ok());
        let zero = ConnLimits {
            idle_timeout: Duration::ZERO,
            ..ConnLimits::default()
        };
        assert!(zero.validate().unwrap_err().contains("idle_timeout"));
    }
}
