//! The client's unit tests, over in-memory connections.

use super::*;
use crate::http::HttpError;
use crate::http::body::BodyKind;
use crate::http::testing::Duplex;
use crate::pool::PoolConfig;
use crate::rt::Listener;
use crate::rt::tests::{TestClock, block_on};
use crate::rt::{Clock, Runtime, Stream};
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::future::Future;
use core::net::SocketAddr;
use core::sync::atomic::{AtomicUsize, Ordering};
use core::time::Duration;
use embedded_io::ErrorKind;
use httparse::{EMPTY_HEADER, Header};

fn config() -> ClientConfig {
    let pool = BufferPool::leak(PoolConfig {
        max_class_log2: 17,
        max_per_class: 2,
        max_retained_bytes: 1 << 20,
        shards: 1,
    });
    ClientConfig::new(pool)
}

fn conn(input: &[u8], read_size: usize) -> (ClientConn<TestClock, Duplex>, Duplex) {
    replying(&[], input, read_size)
}

/// A connection whose peer has `input` ready and answers each write with a reply.
fn replying(
    replies: &[&[u8]],
    input: &[u8],
    read_size: usize,
) -> (ClientConn<TestClock, Duplex>, Duplex) {
    let io = Duplex::replying(replies, read_size);
    io.0.lock().input.extend(input);
    let c = ClientConn::new(TestClock::auto(), io.clone(), None, config());
    (c, io)
}

/// Read a whole response: status, body, first trailer value.
async fn read_response<C: Clock, S: Stream>(
    c: &mut ClientConn<C, S>,
) -> Result<(u16, Vec<u8>, Option<Vec<u8>>), HttpError> {
    let mut hs = [EMPTY_HEADER; 16];
    let mut r = c.response(&mut hs).await?;
    let mut body = Vec::new();
    while let Some(chunk) = r.body.next_chunk().await? {
        body.extend_from_slice(chunk);
    }
    let mut ts = [EMPTY_HEADER; 4];
    let trailer = r.body.trailers(&mut ts)?.first().map(|h| h.value.to_vec());
    Ok((r.head.status, body, trailer))
}

const OK5: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";

#[test]
fn keep_alive_reuse_and_request_bytes() {
    let chunked =
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-S: 1\r\n\r\n";
    for read_size in [0, 1, 6] {
        let (mut c, io) = replying(&[OK5, chunked], b"", read_size);
        let host = [Header {
            name: "Host",
            value: b"a",
        }];
        block_on(async {
            c.send_request("PUT", "/b/k", &host, b"data").await.unwrap();
            assert!(!c.is_reusable());
            let got = read_response(&mut c).await.unwrap();
            assert_eq!(got, (200, b"hello".to_vec(), None));
            assert!(c.is_reusable());
            c.send_request("GET", "/b/k", &host, b"").await.unwrap();
            let got = read_response(&mut c).await.unwrap();
            assert_eq!(got, (200, b"abc".to_vec(), Some(b"1".to_vec())));
            assert!(c.is_reusable());
        });
        assert_eq!(c.requests(), 2);
        let writes = io.0.lock().writes.clone();
        assert_eq!(writes.len(), 2, "one write per small request");
        assert_eq!(
            writes[0],
            b"PUT /b/k HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\ndata"
        );
        assert_eq!(writes[1], b"GET /b/k HTTP/1.1\r\nHost: a\r\n\r\n");
    }
}

#[test]
fn bodiless_and_interim_responses() {
    let (mut c, _) = replying(
        &[
            b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n",
            b"HTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
            b"HTTP/1.1 304 Not Modified\r\nContent-Length: 3\r\n\r\n",
        ],
        b"",
        0,
    );
    block_on(async {
        c.send_request("HEAD", "/", &[], b"").await.unwrap();
        let got = read_response(&mut c).await.unwrap();
        assert_eq!((got.0, got.1.len()), (200, 0));
        c.send_request("GET", "/", &[], b"").await.unwrap();
        assert_eq!(read_response(&mut c).await.unwrap().0, 204);
        c.send_request("GET", "/", &[], b"").await.unwrap();
        assert_eq!(read_response(&mut c).await.unwrap().0, 304);
        assert!(c.is_reusable());
    });
}

#[test]
fn what_makes_a_connection_unusable() {
    block_on(async {
        // Close-delimited: read to EOF, then gone.
        let (mut c, _) = conn(b"HTTP/1.1 200 OK\r\n\r\nall of it", 3);
        c.send_request("GET", "/", &[], b"").await.unwrap();
        let got = read_response(&mut c).await.unwrap();
        assert_eq!(got.1, b"all of it");
        assert!(!c.is_reusable());
        // Connection: close.
        let (mut c, _) = conn(
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            0,
        );
        c.send_request("GET", "/", &[], b"").await.unwrap();
        read_response(&mut c).await.unwrap();
        assert!(!c.is_reusable());
        // Body not read to the end.
        let (mut c, _) = conn(OK5, 0);
        c.send_request("GET", "/", &[], b"").await.unwrap();
        {
            let mut hs = [EMPTY_HEADER; 4];
            let r = c.response(&mut hs).await.unwrap();
            assert_eq!(r.body.content_length(), Some(5));
        }
        assert!(!c.is_reusable());
        assert!(c.request("GET", "/", &[], BodyKind::None, false).is_err());
        // Request body abandoned half-way.
        let (mut c, _) = conn(OK5, 0);
        let mut w = c
            .request("PUT", "/", &[], BodyKind::Length(10), false)
            .unwrap();
        w.write(b"12345").await.unwrap();
        drop(w);
        assert!(!c.is_reusable());
        // Bytes after the response that no request asked for: out of sync.
        let (mut c, _) = replying(&[&[OK5, OK5].concat()], b"", 0);
        c.send_request("GET", "/", &[], b"").await.unwrap();
        assert_eq!(read_response(&mut c).await.unwrap().1, b"hello");
        assert!(!c.is_reusable());
        // Truncated response body.
        let (mut c, _) = conn(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc", 0);
        c.send_request("GET", "/", &[], b"").await.unwrap();
        assert_eq!(read_response(&mut c).await, Err(HttpError::UnexpectedEof));
        assert!(!c.is_reusable());
    });
}

#[test]
fn malformed_responses_are_errors() {
    for input in [
        &b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"[..],
        b"HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n",
        b"HTTP/1.1 101 Switching Protocols\r\n\r\n",
    ] {
        let (mut c, _) = conn(input, 0);
        let r = block_on(async {
            c.send_request("GET", "/", &[], b"").await.unwrap();
            read_response(&mut c).await
        });
        assert!(
            matches!(r, Err(HttpError::Protocol(_))),
            "{:?}: {r:?}",
            String::from_utf8_lossy(input)
        );
        assert!(!c.is_reusable());
    }
}

#[test]
fn continue_then_body() {
    let input = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    let (mut c, io) = conn(input, 0);
    block_on(async {
        let mut w = c
            .request("PUT", "/k", &[], BodyKind::Chunked, true)
            .unwrap();
        assert_eq!(w.wait_continue().await.unwrap(), Continue::Proceed);
        w.write(b"Wiki").await.unwrap();
        w.write(b"pedia").await.unwrap();
        let t = [Header {
            name: "X-Sum",
            value: b"9",
        }];
        w.finish_with_trailers(&t).await.unwrap();
        assert_eq!(read_response(&mut c).await.unwrap().0, 200);
        assert!(c.is_reusable());
    });
    let writes = io.0.lock().writes.clone();
    assert_eq!(
        writes[0],
        b"PUT /k HTTP/1.1\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n"
    );
    assert_eq!(
        writes[1..].concat(),
        b"4\r\nWiki\r\n5\r\npedia\r\n0\r\nX-Sum: 9\r\n\r\n"
    );
}

#[test]
fn early_final_response_skips_the_body() {
    let (mut c, io) = conn(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 2\r\n\r\nno", 0);
    block_on(async {
        let mut w = c
            .request("PUT", "/k", &[], BodyKind::Length(5), true)
            .unwrap();
        assert_eq!(w.wait_continue().await.unwrap(), Continue::Final);
        assert!(w.write(b"hello").await.is_err());
        w.finish().await.unwrap();
        let got = read_response(&mut c).await.unwrap();
        assert_eq!((got.0, got.1), (403, b"no".to_vec()));
        assert!(!c.is_reusable(), "the server may still expect the body");
    });
    assert!(!io.written().ends_with(b"hello"));
}

#[test]
fn continue_timeout_proceeds() {
    let (mut c, io) = conn(b"", 0);
    io.0.lock().hang = true;
    block_on(async {
        let mut w = c
            .request("PUT", "/k", &[], BodyKind::Length(2), true)
            .unwrap();
        assert_eq!(w.wait_continue().await.unwrap(), Continue::TimedOut);
        w.write(b"ok").await.unwrap();
        w.finish().await.unwrap();
    });
    assert!(io.written().ends_with(b"\r\n\r\nok"));
}

#[test]
fn request_misuse_is_refused() {
    let (mut c, _) = conn(b"", 0);
    let cl = [Header {
        name: "content-length",
        value: b"1",
    }];
    assert!(c.request("GET", "/", &cl, BodyKind::None, false).is_err());
    assert!(c.request("GET", "/ x", &[], BodyKind::None, false).is_err());
    assert!(
        c.request("GET", "/", &[], BodyKind::CloseDelimited, false)
            .is_err()
    );
    assert!(c.is_reusable());
    block_on(async {
        let mut w = c
            .request("PUT", "/", &[], BodyKind::Length(2), false)
            .unwrap();
        assert!(w.write(b"abc").await.is_err());
    });
    assert!(!c.is_reusable());
}

/// A runtime whose connections are in-memory peers that answer `OK5` to each request.
#[derive(Debug, Clone, Default)]
struct TestRt {
    clock: TestClock,
    connects: Arc<AtomicUsize>,
}

#[derive(Debug)]
struct NoListener;

impl Listener for NoListener {
    type Stream = Duplex;
    type Accepted = Duplex;
    async fn accept(&self) -> Result<(Duplex, SocketAddr), ErrorKind> {
        Err(ErrorKind::Unsupported)
    }
    async fn establish(accepted: Duplex) -> Result<Duplex, ErrorKind> {
        Ok(accepted)
    }
    fn local_addr(&self) -> Result<SocketAddr, ErrorKind> {
        Err(ErrorKind::Unsupported)
    }
}

impl Clock for TestRt {
    fn now(&self) -> Duration {
        self.clock.now()
    }
    fn unix_time(&self) -> i64 {
        self.clock.unix_time()
    }
    fn sleep(&self, d: Duration) -> impl Future<Output = ()> + Send + 'static {
        self.clock.sleep(d)
    }
}

impl Runtime for TestRt {
    type Stream = Duplex;
    type Listener = NoListener;
    async fn connect(&self, _: SocketAddr) -> Result<Duplex, ErrorKind> {
        self.connects.fetch_add(1, Ordering::SeqCst);
        Ok(Duplex::replying(&[OK5; 4], 0))
    }
    async fn bind(&self, _: SocketAddr) -> Result<NoListener, ErrorKind> {
        Err(ErrorKind::Unsupported)
    }
    fn unblock<T, F>(&self, f: F) -> impl Future<Output = T> + Send + 'static
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        core::future::ready(f())
    }
    fn spawn<T, F>(&self, future: F) -> impl Future<Output = T> + Send + 'static
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        future
    }
}

#[test]
fn pool_reuses_bounds_and_expires() {
    let rt = TestRt::default();
    let mut cfg = config();
    cfg.max_idle_per_addr = 2;
    let pool = ClientPool::new(rt.clone(), cfg);
    let a: SocketAddr = "127.0.0.1:1".parse().unwrap();
    let b: SocketAddr = "127.0.0.1:2".parse().unwrap();
    let used = |addr| {
        block_on(async {
            let mut c = pool.get(addr).await.unwrap();
            c.send_request("GET", "/", &[], b"").await.unwrap();
            read_response(&mut c).await.unwrap();
            c
        })
    };
    let c = used(a);
    assert_eq!(rt.connects.load(Ordering::SeqCst), 1);
    pool.put(c);
    assert_eq!(pool.idle_count(), 1);
    let c = used(a);
    assert_eq!((c.requests(), rt.connects.load(Ordering::SeqCst)), (2, 1));
    pool.put(c);
    // Another address gets its own connection.
    pool.put(used(b));
    assert_eq!(rt.connects.load(Ordering::SeqCst), 2);
    // At most two idle per address.
    let extra: Vec<_> = (0..3).map(|_| used(a)).collect();
    for c in extra {
        pool.put(c);
    }
    assert_eq!(pool.idle_count(), 3);
    // A connection whose response was not read is not kept.
    let c = block_on(async {
        let mut c = pool.get(b).await.unwrap();
        c.send_request("GET", "/", &[], b"").await.unwrap();
        c
    });
    pool.put(c);
    assert_eq!(pool.idle_count(), 2);
    // Idle past the timeout: closed, not reused.
    rt.clock.advance(cfg.idle_timeout);
    let before = rt.connects.load(Ordering::SeqCst);
    let c = used(a);
    assert_eq!(c.requests(), 1);
    assert_eq!(rt.connects.load(Ordering::SeqCst), before + 1);
    assert_eq!(pool.idle_count(), 0);
}

#[test]
fn a_request_on_a_connection_closed_while_idle_goes_once_more() {
    let rt = TestRt::default();
    let pool = ClientPool::new(rt.clone(), config());
    let addr: SocketAddr = "127.0.0.1:1".parse().unwrap();
    let get = |c: &mut ClientConn<TestRt, Duplex>| {
        block_on(async {
            c.send_request("GET", "/", &[], b"").await?;
            read_response(c).await
        })
    };
    // One answer, then the server closes the idle connection: the second request meets EOF.
    let mut c = ClientConn::new(
        rt.clone(),
        Duplex::replying(&[OK5], 0),
        Some(addr),
        config(),
    );
    assert!(get(&mut c).is_ok());
    let e = get(&mut c).unwrap_err();
    assert_eq!(e, HttpError::UnexpectedEof);
    assert!(c.is_stale(&e));
    assert_eq!(block_on(pool.replace_stale(&mut c, &e)), Ok(true));
    assert_eq!(rt.connects.load(Ordering::SeqCst), 1);
    assert!(get(&mut c).is_ok());
    // The first request of a connection is never retried: the server did fail it.
    let mut fresh = ClientConn::new(rt.clone(), Duplex::replying(&[], 0), Some(addr), config());
    let e = get(&mut fresh).unwrap_err();
    assert!(!fresh.is_stale(&e));
    assert_eq!(block_on(pool.replace_stale(&mut fresh, &e)), Ok(false));
    // Nor a request that was partly answered: the server saw it.
    let partial: &[u8] = b"HTTP/1.1 200 OK\r\n";
    let mut c = ClientConn::new(
        rt.clone(),
        Duplex::replying(&[OK5, partial], 0),
        Some(addr),
        config(),
    );
    assert!(get(&mut c).is_ok());
    let e = get(&mut c).unwrap_err();
    assert!(!c.is_stale(&e));
    assert_eq!(rt.connects.load(Ordering::SeqCst), 1);
}
