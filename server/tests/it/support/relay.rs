//! A recording relay on 127.0.0.1 between a proxy and one of its backends: real TCP both ways,
//! every byte passed on unchanged. It reads the requests going to the backend as they pass
//! (heads, body framing) and records each one: method, target, headers and the body as it went
//! on. It can also fail the way a backend does: close a connection once a request's head came,
//! before any of it reaches the backend, or once part of its body went on.
//!
//! What it records is what the backend received: [`super::sigv4_oracle`] checks the
//! signatures on it with AWS's own signer, the retry tests count the attempts.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sha2::{Digest, Sha256};

/// Bodies longer than this are counted and hashed but not kept.
const KEEP_BODY: usize = 8 << 20;

/// A request as the relay saw it go to the backend.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The method.
    pub method: String,
    /// The request target, as sent.
    pub target: String,
    /// The headers, as sent (names as sent, in order).
    pub headers: Vec<(String, String)>,
    /// The body's bytes as they went on (its framing included: aws-chunked stays encoded,
    /// HTTP chunking is removed); `None` past [`KEEP_BODY`].
    pub body: Option<Vec<u8>>,
    /// How many body bytes went on.
    pub body_len: u64,
    /// The hex SHA-256 of the body's bytes, once it all went on.
    pub sha256: Option<String>,
    /// Whether the whole body went on (its declared length, or the last chunk).
    pub complete: bool,
    /// What the relay did to it, if anything.
    pub fault: Option<Fault>,
}

impl Recorded {
    /// The first header named `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A failure the relay makes, once, for the next request of `method` whose target starts with
/// `prefix`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Close the connection (both ways) once the request's head came in, before any of it went
    /// on to the backend: to the proxy, a connection that failed before any answer.
    CloseAtHead {
        /// The request's method.
        method: String,
        /// The start of its target.
        prefix: String,
    },
    /// Pass the head and `after` bytes of the body on, then close the connection both ways:
    /// a backend that went away while the body was flowing.
    CutBody {
        /// The request's method.
        method: String,
        /// The start of its target.
        prefix: String,
        /// Body bytes passed on before the cut.
        after: u64,
    },
}

impl Fault {
    fn matches(&self, method: &str, target: &str) -> bool {
        let (m, p) = match self {
            Self::CloseAtHead { method, prefix } | Self::CutBody { method, prefix, .. } => {
                (method, prefix)
            }
        };
        m == method && target.starts_with(p.as_str())
    }
}

struct Shared {
    upstream: SocketAddr,
    log: Mutex<Vec<Recorded>>,
    faults: Mutex<Vec<Fault>>,
    /// Every open connection's sockets (client side, backend side), to close them all.
    conns: Mutex<std::collections::HashMap<u64, (TcpStream, TcpStream)>>,
    next_conn: std::sync::atomic::AtomicU64,
    stop: AtomicBool,
}

/// A relay listening on 127.0.0.1 in front of `upstream`; it stops when dropped.
pub struct Relay {
    /// Where it listens: the address to give the proxy as the backend's.
    pub addr: SocketAddr,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Relay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relay")
            .field("addr", &self.addr)
            .field("upstream", &self.shared.upstream)
            .finish_non_exhaustive()
    }
}

impl Relay {
    /// Start a relay in front of `upstream`.
    pub fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("relay binds");
        let addr = listener.local_addr().expect("relay address");
        let shared = Arc::new(Shared {
            upstream,
            log: Mutex::new(Vec::new()),
            faults: Mutex::new(Vec::new()),
            conns: Mutex::new(std::collections::HashMap::new()),
            next_conn: std::sync::atomic::AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let s = shared.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(down) = conn else { continue };
                let s = s.clone();
                std::thread::spawn(move || serve(&s, down));
            }
        });
        Self { addr, shared }
    }

    /// The backend URL for a proxy's configuration.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Make `fault` once, for the next request it matches.
    pub fn fault(&self, fault: Fault) {
        self.shared.faults.lock().unwrap().push(fault);
    }

    /// Every request recorded so far.
    pub fn recorded(&self) -> Vec<Recorded> {
        self.shared.log.lock().unwrap().clone()
    }

    /// The recorded requests of `method` whose target starts with `prefix`.
    pub fn requests(&self, method: &str, prefix: &str) -> Vec<Recorded> {
        self.recorded()
            .into_iter()
            .filter(|r| r.method == method && r.target.starts_with(prefix))
            .collect()
    }

    /// Close every connection open now, both ways (a backend restarting): what the proxy keeps
    /// in its pool is dead.
    pub fn sever_all(&self) {
        for (_, (down, up)) in self.shared.conns.lock().unwrap().drain() {
            let _ = down.shutdown(Shutdown::Both);
            let _ = up.shutdown(Shutdown::Both);
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the accepting thread.
        let _ = TcpStream::connect(self.addr);
        self.sever_all();
    }
}

/// Relay one connection: answers go back as they come, requests are read, recorded and passed
/// on (or failed).
fn serve(s: &Arc<Shared>, mut down: TcpStream) {
    let Ok(mut up) = TcpStream::connect(s.upstream) else {
        return;
    };
    if s.stop.load(Ordering::SeqCst) {
        return;
    }
    let _ = down.set_nodelay(true);
    let _ = up.set_nodelay(true);
    // A connection nobody uses ends on its own (no thread stays forever).
    let idle = Some(Duration::from_secs(120));
    let _ = down.set_read_timeout(idle);
    let _ = up.set_read_timeout(idle);
    let (Ok(d2), Ok(u2)) = (down.try_clone(), up.try_clone()) else {
        return;
    };
    let id = s.next_conn.fetch_add(1, Ordering::Relaxed);
    if let (Ok(d3), Ok(u3)) = (down.try_clone(), up.try_clone()) {
        s.conns.lock().unwrap().insert(id, (d3, u3));
    }
    // Answers: bytes as they come.
    std::thread::spawn(move || {
        let (mut from, mut to) = (u2, d2);
        let _ = std::io::copy(&mut from, &mut to);
        let _ = to.shutdown(Shutdown::Write);
    });
    let mut buf = Vec::new();
    while pass_request(s, &mut down, &mut up, &mut buf) {}
    let _ = up.shutdown(Shutdown::Write);
    s.conns.lock().unwrap().remove(&id);
}

/// Read more from `from` into `buf`; `false` at its end (or an error).
fn fill(from: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 64 * 1024];
    match from.read(&mut chunk) {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            true
        }
    }
}

/// Close both sides of a connection.
fn cut(down: &TcpStream, up: &TcpStream) {
    let _ = down.shutdown(Shutdown::Both);
    let _ = up.shutdown(Shutdown::Both);
}

/// Pass one request on; `false` when the connection is done.
fn pass_request(s: &Shared, down: &mut TcpStream, up: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    let head_len = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if !fill(down, buf) {
            return false;
        }
    };
    let mut storage = [httparse::EMPTY_HEADER; 128];
    let mut req = httparse::Request::new(&mut storage);
    let Ok(httparse::Status::Complete(_)) = req.parse(&buf[..head_len]) else {
        // Not HTTP the relay understands: pass the rest through as it is.
        let _ = up.write_all(buf);
        let _ = std::io::copy(down, up);
        return false;
    };
    let method = req.method.unwrap_or_default().to_owned();
    let target = req.path.unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = req
        .headers
        .iter()
        .map(|h| {
            let value = String::from_utf8_lossy(h.value).into_owned();
            (h.name.to_owned(), value)
        })
        .collect();
    let fault = {
        let mut faults = s.faults.lock().unwrap();
        let i = faults.iter().position(|f| f.matches(&method, &target));
        i.map(|i| faults.remove(i))
    };
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    let chunked = header("transfer-encoding").is_some_and(|v| v.contains("chunked"));
    let length: u64 = header("content-length").map_or(0, |v| v.trim().parse().unwrap_or(0));
    let index = {
        let mut log = s.log.lock().unwrap();
        log.push(Recorded {
            method,
            target,
            headers,
            body: Some(Vec::new()),
            body_len: 0,
            sha256: None,
            complete: false,
            fault: fault.clone(),
        });
        log.len() - 1
    };
    if matches!(fault, Some(Fault::CloseAtHead { .. })) {
        cut(down, up);
        return false;
    }
    let cut_after = match fault {
        Some(Fault::CutBody { after, .. }) => Some(after),
        _ => None,
    };
    if up.write_all(&buf[..head_len]).is_err() {
        return false;
    }
    buf.drain(..head_len);
    let mut body = BodyPass {
        s,
        index,
        passed: 0,
        cut_after,
        hash: Sha256::new(),
    };
    let done = if chunked {
        body.chunked(down, up, buf)
    } else {
        body.length(down, up, buf, length)
    };
    if done {
        let sum = body.hash.finalize();
        let mut log = s.log.lock().unwrap();
        log[index].complete = true;
        log[index].sha256 = Some(sum.iter().map(|b| format!("{b:02x}")).collect());
    }
    done
}

/// A request body on its way to the backend.
struct BodyPass<'a> {
    s: &'a Shared,
    index: usize,
    passed: u64,
    cut_after: Option<u64>,
    hash: Sha256,
}

impl BodyPass<'_> {
    /// Pass `bytes` on (the body's bytes are `data`: the same, or the content of a chunk);
    /// `false` once the connection was cut.
    fn send(&mut self, up: &mut TcpStream, down: &TcpStream, bytes: &[u8], data: &[u8]) -> bool {
        if let Some(after) = self.cut_after {
            let room = usize::try_from(after.saturating_sub(self.passed)).unwrap_or(usize::MAX);
            if bytes.len() >= room {
                let _ = up.write_all(&bytes[..room]);
                let _ = up.flush();
                self.record(&data[..room.min(data.len())]);
                cut(down, up);
                return false;
            }
        }
        self.record(data);
        up.write_all(bytes).is_ok()
    }

    fn record(&mut self, data: &[u8]) {
        self.passed += data.len() as u64;
        self.hash.update(data);
        let mut log = self.s.log.lock().unwrap();
        let r = &mut log[self.index];
        r.body_len += data.len() as u64;
        if let Some(b) = &mut r.body {
            if b.len() + data.len() <= KEEP_BODY {
                b.extend_from_slice(data);
            } else {
                r.body = None;
            }
        }
    }

    /// A body of `length` bytes; `true` once it all went on.
    fn length(
        &mut self,
        down: &mut TcpStream,
        up: &mut TcpStream,
        buf: &mut Vec<u8>,
        length: u64,
    ) -> bool {
        let mut left = length;
        while left > 0 {
            if buf.is_empty() && !fill(down, buf) {
                return false;
            }
            let n = usize::try_from(left).unwrap_or(usize::MAX).min(buf.len());
            let piece: Vec<u8> = buf.drain(..n).collect();
            if !self.send(up, down, &piece, &piece) {
                return false;
            }
            left -= n as u64;
        }
        true
    }

    /// A line of the chunked framing (with its CRLF), passed on as it is.
    fn line(&mut self, down: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Vec<u8>> {
        loop {
            if let Some(i) = buf.windows(2).position(|w| w == b"\r\n") {
                return Some(buf.drain(..i + 2).collect());
            }
            if !fill(down, buf) {
                return None;
            }
        }
    }

    /// An HTTP-chunked body; `true` once its last chunk and trailers went on.
    fn chunked(&mut self, down: &mut TcpStream, up: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
        loop {
            let Some(line) = self.line(down, buf) else {
                return false;
            };
            let text = String::from_utf8_lossy(&line);
            let size = text.split(';').next().unwrap_or("").trim();
            let Ok(size) = usize::from_str_radix(size, 16) else {
                return false;
            };
            if up.write_all(&line).is_err() {
                return false;
            }
            if size == 0 {
                // Trailers, then the empty line.
                loop {
                    let Some(line) = self.line(down, buf) else {
                        return false;
                    };
                    if up.write_all(&line).is_err() {
                        return false;
                    }
                    if line == b"\r\n" {
                        return true;
                    }
                }
            }
            while buf.len() < size + 2 {
                if !fill(down, buf) {
                    return false;
                }
            }
            let piece: Vec<u8> = buf.drain(..size + 2).collect();
            if !self.send(up, down, &piece, &piece[..size]) {
                return false;
            }
        }
    }
}
