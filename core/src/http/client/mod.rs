//! HTTP/1.1 client: one request at a time over a kept-alive connection ([`conn`]), and a
//! per-address pool of idle connections ([`pool`]). Used by the proxy (towards storage nodes)
//! and the load tester.
//!
//! A request is written with [`ClientConn::request`] (head buffered, body streamed by the
//! caller through [`RequestWriter`]), then [`ClientConn::response`] reads the head with the
//! incremental parser and hands out a [`ResponseBody`] reader. A connection is reusable only
//! once its response has been read to the end and both sides keep it alive.

pub(crate) mod conn;
mod pool;
#[cfg(test)]
mod tests;

use core::time::Duration;

use super::chunked::ChunkedLimits;
use super::head::HeadLimits;
use crate::pool::BufferPool;

pub use conn::{ClientConn, Continue, RequestWriter, Response, ResponseBody};
pub use pool::{ClientPool, connect, connect_with};

/// Limits and timeouts of the client.
#[derive(Debug, Clone, Copy)]
pub struct ClientConfig {
    /// Where read buffers come from (`2 * max_head_len` bytes while a request is in flight).
    pub pool: &'static BufferPool,
    /// Response head limits.
    pub head_limits: HeadLimits,
    /// Chunk line and trailer limits.
    pub chunked_limits: ChunkedLimits,
    /// Connecting (with a TLS handshake, if any) must complete within this.
    pub connect_timeout: Duration,
    /// Each read (response head or body) must complete within this.
    pub read_timeout: Duration,
    /// Each write of the request must complete within this.
    pub write_timeout: Duration,
    /// How long [`RequestWriter::wait_continue`] waits for `100 Continue`.
    pub continue_timeout: Duration,
    /// Idle pooled connections older than this are closed instead of reused.
    pub idle_timeout: Duration,
    /// Most idle connections kept per address.
    pub max_idle_per_addr: usize,
    /// Largest chunked response body accepted.
    pub max_body_len: u64,
}

impl ClientConfig {
    /// Defaults (5 s connect, 30 s I/O, 1 s continue, 20 s idle, 32 idle per address) with
    /// buffers from `pool`.
    pub fn new(pool: &'static BufferPool) -> Self {
        Self {
            pool,
            head_limits: HeadLimits::default(),
            chunked_limits: ChunkedLimits::default(),
            connect_timeout: Duration::from_secs(5),
            read_timeout: Duration::from_secs(30),
            write_timeout: Duration::from_secs(30),
            continue_timeout: Duration::from_secs(1),
            idle_timeout: Duration::from_secs(20),
            max_idle_per_addr: 32,
            max_body_len: u64::MAX,
        }
    }

    fn read_buffer_len(&self) -> usize {
        self.head_limits
            .max_head_len
            .saturating_mul(2)
            .max(8 * 1024)
    }
}

#[cfg(feature = "std")]
impl Default for ClientConfig {
    fn default() -> Self {
        Self::new(BufferPool::global())
    }
}
