//! The access event of each S3 request (one line per request on the target
//! [`ACCESS_TARGET`], off unless asked for).

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use ferry_core::s3::request::S3Request;

use crate::logging::ACCESS_TARGET;

/// Whether access events are logged (checked before collecting what only they need).
pub(crate) fn access_enabled() -> bool {
    tracing::enabled!(target: ACCESS_TARGET, tracing::Level::INFO)
}

/// What the access event of a request needs from its parsed form.
#[derive(Debug)]
pub(crate) struct RequestLog {
    /// The S3 operation (`Endpoint::name`), `unknown` until the request is parsed.
    pub op: &'static str,
    /// Bucket and key (empty when absent), kept only when access events are on.
    pub names: Option<(String, String)>,
    /// Keep `names`.
    access: bool,
}

impl RequestLog {
    /// Nothing known yet; `access`: whether the access event will be logged.
    pub fn new(access: bool) -> Self {
        Self {
            op: "unknown",
            names: None,
            access,
        }
    }

    /// Whether the access event will be logged.
    pub fn access(&self) -> bool {
        self.access
    }

    /// Take the operation (and, for the access event, the names) of `s3`.
    pub fn parsed(&mut self, s3: &S3Request<'_>) {
        self.op = s3.endpoint.name();
        if self.access {
            self.names = Some((s3.bucket_str().to_owned(), s3.key_str().to_owned()));
        }
    }

    /// The bucket, or `""`.
    pub fn bucket(&self) -> &str {
        self.names.as_ref().map_or("", |(b, _)| b)
    }

    /// The key, or `""`.
    pub fn key(&self) -> &str {
        self.names.as_ref().map_or("", |(_, k)| k)
    }
}

/// One finished S3 request.
#[derive(Debug)]
pub(crate) struct Access<'a> {
    /// `proxy` or `node` (a local cluster runs both in one process).
    pub server: &'static str,
    pub log: &'a RequestLog,
    pub status: u16,
    /// Request body bytes received.
    pub bytes_in: u64,
    /// Response body bytes sent.
    pub bytes_out: u64,
    pub duration: Duration,
    /// Backend id (proxy), `*` for fan-outs, `-` for none.
    pub backend: &'a str,
    pub peer: Option<SocketAddr>,
    pub request_id: &'a str,
}

/// An address or `-`.
struct Peer(Option<SocketAddr>);

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(a) => a.fmt(f),
            None => f.write_str("-"),
        }
    }
}

/// Emit the access event of `a`.
pub(crate) fn access(a: &Access<'_>) {
    tracing::info!(
        target: ACCESS_TARGET,
        server = %a.server,
        op = %a.log.op,
        bucket = a.log.bucket(),
        key = a.log.key(),
        status = a.status,
        bytes_in = a.bytes_in,
        bytes_out = a.bytes_out,
        duration_us = u64::try_from(a.duration.as_micros()).unwrap_or(u64::MAX),
        backend = %a.backend,
        peer = %Peer(a.peer),
        request_id = %a.request_id,
        "request"
    );
}
