//! The one hand-written HTTP/1.1 client of the tests, over a blocking `std::net::TcpStream`:
//! raw bytes on the wire, responses read one by one (keep-alive, pipelining, 1xx), presigned
//! URLs fetched by something that is not the SDK, and requests signed with ferry-core's SigV4
//! in every body framing a client may use.
//!
//! Blocking is fine inside the SDK tests' async functions: the servers run on threads of their
//! own, and nothing else is waiting on the test's runtime meanwhile.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::ops::{Deref, DerefMut};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ferry_core::http::Header;
use ferry_core::s3::checksum::ChecksumAlgorithm;
use ferry_core::s3::sigv4::aws_chunked::AwsChunkedEncoder;
use ferry_core::s3::sigv4::{
    Credentials, Hex64, NoKeyCache, RequestParts, SigningContext, UNSIGNED_PAYLOAD, presign,
    sha256, sign_request,
};
use ferry_core::s3::xml::ErrorResponse;

use super::{ACCESS_KEY, REGION, SECRET_KEY};

/// A response as read off the wire.
#[derive(Debug, Clone)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Headers, names as sent.
    pub headers: Vec<(String, String)>,
    /// The whole body (decoded if it came chunked).
    pub body: Vec<u8>,
}

impl Response {
    /// The first header named `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The S3 error code of an XML error body.
    pub fn error_code(&self) -> Option<String> {
        ErrorResponse::parse_xml(&self.body)
            .ok()
            .map(|e| e.code.into_owned())
    }

    /// The `<Error>` document, which must have a code, a message, a resource and a request id
    /// equal to the `x-amz-request-id` header.
    pub fn expect_error(&self, status: u16, code: &str) {
        assert_eq!(self.status, status, "{self:?} {}", self.text());
        let e = ErrorResponse::parse_xml(&self.body)
            .unwrap_or_else(|e| panic!("not an error document ({e}): {}", self.text()));
        assert_eq!(e.code, code, "{}", self.text());
        assert!(!e.message.is_empty());
        assert!(e.resource.is_some(), "{}", self.text());
        let id = self.header("x-amz-request-id").expect("x-amz-request-id");
        assert_eq!(e.request_id.as_deref(), Some(id));
    }

    /// The text of the first `<name>` element of an XML body.
    pub fn xml_value(&self, name: &str) -> Option<String> {
        xml_values(&self.text(), name).into_iter().next()
    }

    /// The text of every `<name>` element of an XML body.
    pub fn xml_values(&self, name: &str) -> Vec<String> {
        xml_values(&self.text(), name)
    }
}

/// Every `<name>text</name>` in `xml` (no nesting inside `name`), entities left as sent.
pub fn xml_values(xml: &str, name: &str) -> Vec<String> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(i) = rest.find(&open) {
        rest = &rest[i + open.len()..];
        let Some(j) = rest.find(&close) else { break };
        out.push(rest[..j].to_owned());
        rest = &rest[j + close.len()..];
    }
    out
}

/// One connection: write any bytes, read responses one by one.
#[derive(Debug)]
pub struct Conn {
    /// The server's address.
    pub addr: SocketAddr,
    /// The socket, for what the methods do not cover.
    pub stream: TcpStream,
    /// Bytes read past the last response.
    buf: Vec<u8>,
}

impl Conn {
    /// Connect to `addr`; a read waits 30 s at most, so nothing hangs forever.
    pub fn connect(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("read timeout");
        stream.set_nodelay(true).expect("nodelay");
        Self {
            addr,
            stream,
            buf: Vec::new(),
        }
    }

    /// Write `bytes` as they are (the caller frames them).
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("send");
    }

    /// Close the writing half (the server sees end of input).
    pub fn shutdown_write(&self) {
        let _ = self.stream.shutdown(Shutdown::Write);
    }

    /// Read one response (`head`: it answers a HEAD, so no body follows).
    pub fn read_response(&mut self, head: bool) -> Response {
        self.try_read_response(head).expect("a response")
    }

    /// One response (a 1xx too), or `None` if the connection closed before a response head.
    pub fn try_read_response(&mut self, head: bool) -> Option<Response> {
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 64];
            let mut res = httparse::Response::new(&mut headers);
            if let httparse::Status::Complete(len) = res.parse(&self.buf).expect("response head") {
                let status = res.code.expect("status");
                let headers: Vec<(String, String)> = res
                    .headers
                    .iter()
                    .map(|h| {
                        let value = String::from_utf8_lossy(h.value).into_owned();
                        (h.name.to_owned(), value)
                    })
                    .collect();
                self.buf.drain(..len);
                let mut r = Response {
                    status,
                    headers,
                    body: Vec::new(),
                };
                if head || status < 200 || status == 204 || status == 304 {
                    return Some(r);
                }
                if r.header("transfer-encoding").is_some() {
                    r.body = self.chunked_body();
                } else if let Some(cl) = r.header("content-length") {
                    let cl: usize = cl.parse().expect("content-length");
                    while self.buf.len() < cl {
                        assert!(self.fill(), "connection closed inside a response body");
                    }
                    r.body = self.buf.drain(..cl).collect();
                } else {
                    r.body = self.read_to_end();
                }
                return Some(r);
            }
            if !self.fill() {
                assert!(self.buf.is_empty(), "partial response head: {:?}", self.buf);
                return None;
            }
        }
    }

    /// Read until the peer closes; what came in.
    pub fn read_to_end(&mut self) -> Vec<u8> {
        while self.fill() {}
        std::mem::take(&mut self.buf)
    }

    /// Whether the server closed the connection (reads end without a byte).
    pub fn is_closed(&mut self) -> bool {
        self.buf.is_empty() && !self.fill()
    }

    /// Read more bytes; `false` at end of input (a reset counts as one).
    fn fill(&mut self) -> bool {
        let mut chunk = [0u8; 64 * 1024];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return n > 0;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return false,
                Err(e) => panic!("read: {e}"),
            }
        }
    }

    fn line(&mut self) -> String {
        loop {
            if let Some(i) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let line = String::from_utf8(self.buf[..i].to_vec()).expect("chunk line");
                self.buf.drain(..i + 2);
                return line;
            }
            assert!(self.fill(), "connection closed inside a chunked body");
        }
    }

    fn chunked_body(&mut self) -> Vec<u8> {
        let mut body = Vec::new();
        loop {
            let size_line = self.line();
            let size = usize::from_str_radix(size_line.split(';').next().unwrap_or("").trim(), 16)
                .expect("chunk size");
            if size == 0 {
                // Trailers, then the empty line.
                while !self.line().is_empty() {}
                return body;
            }
            while self.buf.len() < size + 2 {
                assert!(self.fill(), "connection closed inside a chunk");
            }
            body.extend(self.buf.drain(..size));
            self.buf.drain(..2);
        }
    }
}

/// A request line and headers, with the blank line that ends them.
fn head<'a>(
    method: &str,
    target: &str,
    headers: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<u8> {
    let mut out = format!("{method} {target} HTTP/1.1\r\n");
    for (n, v) in headers {
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.into_bytes()
}

/// A request head with `Host` and then `headers`.
pub fn request_head(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
) -> Vec<u8> {
    let host = addr.to_string();
    head(
        method,
        target,
        std::iter::once(("Host", host.as_str())).chain(headers.iter().copied()),
    )
}

/// One unsigned request on a fresh connection (`Connection: close`); `Content-Length` is added
/// for a body, and for any PUT or POST.
pub fn http_request(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Response {
    let mut all = vec![("Connection", "close")];
    all.extend_from_slice(headers);
    let len = body.len().to_string();
    if !body.is_empty() || matches!(method, "PUT" | "POST") {
        all.push(("Content-Length", &len));
    }
    let mut bytes = request_head(addr, method, target, &all);
    bytes.extend_from_slice(body);
    let mut conn = Conn::connect(addr);
    conn.send_raw(&bytes);
    conn.read_response(method == "HEAD")
}

/// The metrics of the admin listener at `admin` once its server (metric names starting with
/// `prefix`) has counted `n` S3 requests: a request is counted just after its response went
/// out, so a scrape right after the last answer may come first.
pub fn metrics_after(admin: SocketAddr, prefix: &str, n: u64) -> String {
    let family = format!("{prefix}_requests_total{{");
    let counted = |m: &str| -> u64 {
        m.lines()
            .filter(|l| l.starts_with(&family))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    };
    for _ in 0..500 {
        let m = plain_get(admin, "/metrics").text();
        if counted(&m) >= n {
            return m;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("{prefix} never counted {n} requests");
}

/// The sum of the values of the lines of a metrics exposition `text` that start with
/// `line_start` (a metric's name, or its name and the start of its labels); 0 if none does.
pub fn metric_sum(text: &str, line_start: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(line_start))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// [`metric_sum`] of the metrics the admin listener at `admin` serves now, as a count.
pub fn metric_now(admin: SocketAddr, line_start: &str) -> u64 {
    metric_sum(&plain_get(admin, "/metrics").text(), line_start) as u64
}

/// Poll `cond` every 10 ms until it holds; fail the test, saying `what` was awaited, once
/// `within` has passed without it.
pub fn wait_until(what: &str, within: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + within;
    while !cond() {
        assert!(
            std::time::Instant::now() < deadline,
            "not within {within:?}: {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `GET target` without a signature (the admin listener, health checks).
pub fn plain_get(addr: SocketAddr, target: &str) -> Response {
    http_request(addr, "GET", target, &[], b"")
}

/// Split an absolute URL (a presigned one) into its origin-form target (`/path?query`).
pub fn target_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.find('/').map_or("/", |i| &rest[i..])
}

/// Seconds since the epoch, now.
pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// `target` (path and query) presigned with SigV4 for `method` at `host`, valid for 300 s: the
/// path and the query to send, which anyone holding it may use (only `Host` is signed).
pub fn presign_target(host: &str, credentials: &Credentials, method: &str, target: &str) -> String {
    let hs = [Header {
        name: "host",
        value: host.as_bytes(),
    }];
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let parts = RequestParts {
        method,
        path,
        query,
        headers: &hs,
    };
    let q = presign(&parts, credentials, REGION, now(), 300, &mut NoKeyCache).expect("presign");
    format!("{path}?{q}")
}

/// How a request's body is sent and signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payload {
    /// `x-amz-content-sha256` = the body's SHA-256.
    Signed,
    /// `UNSIGNED-PAYLOAD`.
    Unsigned,
    /// aws-chunked, `STREAMING-UNSIGNED-PAYLOAD-TRAILER` with a CRC32 trailer (the SDK default).
    ChunkedUnsignedCrc32,
    /// aws-chunked, `STREAMING-AWS4-HMAC-SHA256-PAYLOAD`.
    ChunkedSigned,
    /// aws-chunked, `STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER` with a CRC32C trailer.
    ChunkedSignedTrailer,
}

/// A keep-alive connection that signs its requests with SigV4 (the [`Conn`] below it stays
/// at hand for raw bytes).
#[derive(Debug)]
pub struct Client {
    conn: Conn,
    /// The key requests are signed with.
    pub credentials: Credentials,
}

impl Deref for Client {
    type Target = Conn;

    fn deref(&self) -> &Conn {
        &self.conn
    }
}

impl DerefMut for Client {
    fn deref_mut(&mut self) -> &mut Conn {
        &mut self.conn
    }
}

impl Client {
    /// Connect to `addr`, signing with the test key.
    pub fn connect(addr: SocketAddr) -> Self {
        Self {
            conn: Conn::connect(addr),
            credentials: Credentials::new(ACCESS_KEY, SECRET_KEY),
        }
    }

    /// The `Host` header's value.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    /// Sign and send a request with a `Content-Length` body; read its response.
    pub fn request(
        &mut self,
        method: &str,
        target: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Response {
        self.send(method, target, headers, body, Payload::Signed)
    }

    /// A signed request that the cluster sealed too (`x-ferry-cluster-auth` over its
    /// `x-ferry-*` headers and target, with the tests' cluster key): what a proxy sends.
    pub fn sealed(
        &mut self,
        method: &str,
        target: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Response {
        let seal = super::seal(method, target, headers);
        let mut all = headers.to_vec();
        all.push(("x-ferry-cluster-auth", seal.as_str()));
        self.request(method, target, &all, body)
    }

    /// A signed GET.
    pub fn get(&mut self, target: &str) -> Response {
        self.request("GET", target, &[], b"")
    }

    /// A signed PUT.
    pub fn put(&mut self, target: &str, body: &[u8]) -> Response {
        self.request("PUT", target, &[], body)
    }

    /// The signed head of a request: headers to send (signature included) and the context
    /// for chunk signatures.
    pub fn sign(
        &self,
        method: &str,
        target: &str,
        headers: &[(&str, &str)],
        payload_hash: &str,
    ) -> (Vec<(String, String)>, SigningContext) {
        let host = self.host();
        let mut hs: Vec<(String, String)> = vec![("Host".into(), host)];
        hs.extend(
            headers
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned())),
        );
        let views: Vec<Header<'_>> = hs
            .iter()
            .map(|(n, v)| Header {
                name: n,
                value: v.as_bytes(),
            })
            .collect();
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let parts = RequestParts {
            method,
            path,
            query,
            headers: &views,
        };
        let sig = sign_request(
            &parts,
            payload_hash,
            &self.credentials,
            REGION,
            now(),
            &mut NoKeyCache,
        )
        .expect("sign");
        drop(views);
        hs.push(("x-amz-date".into(), sig.x_amz_date));
        hs.push(("x-amz-content-sha256".into(), sig.x_amz_content_sha256));
        hs.push(("Authorization".into(), sig.authorization));
        (hs, sig.signing)
    }

    /// Send a request authenticated by a presigned URL (no `Authorization` header; `target`'s
    /// query kept); read its response.
    pub fn presigned(&mut self, method: &str, target: &str, body: &[u8]) -> Response {
        let host = self.host();
        let url = presign_target(&host, &self.credentials, method, target);
        let len = body.len().to_string();
        let mut req = head(
            method,
            &url,
            [("Host", host.as_str()), ("Content-Length", len.as_str())],
        );
        req.extend_from_slice(body);
        self.send_raw(&req);
        self.read_response(method == "HEAD")
    }

    /// Send a request whose body is framed and signed as `payload` says.
    pub fn send(
        &mut self,
        method: &str,
        target: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        payload: Payload,
    ) -> Response {
        let bytes = self.encode(method, target, headers, body, payload);
        self.send_raw(&bytes);
        self.read_response(method == "HEAD")
    }

    /// The bytes of a signed request.
    pub fn encode(
        &self,
        method: &str,
        target: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        payload: Payload,
    ) -> Vec<u8> {
        let (mut hs, wire_body) = match payload {
            Payload::Signed | Payload::Unsigned => {
                let hash = if payload == Payload::Signed {
                    Hex64::of(&sha256(body)).as_str().to_owned()
                } else {
                    UNSIGNED_PAYLOAD.to_owned()
                };
                let (hs, _) = self.sign(method, target, headers, &hash);
                (hs, body.to_vec())
            }
            Payload::ChunkedUnsignedCrc32 => {
                let decoded = body.len().to_string();
                let mut extra = headers.to_vec();
                extra.push(("Content-Encoding", "aws-chunked"));
                extra.push(("x-amz-decoded-content-length", &decoded));
                extra.push(("x-amz-trailer", "x-amz-checksum-crc32"));
                let mut enc = AwsChunkedEncoder::unsigned(Some(ChecksumAlgorithm::Crc32));
                let (hs, _) = self.sign(method, target, &extra, enc.mode().as_str());
                let mut wire = Vec::new();
                for c in body.chunks(64 * 1024) {
                    enc.encode_chunk(c, &mut wire);
                }
                enc.finish(&mut wire);
                (hs, wire)
            }
            Payload::ChunkedSigned | Payload::ChunkedSignedTrailer => {
                let decoded = body.len().to_string();
                let mut extra = headers.to_vec();
                extra.push(("Content-Encoding", "aws-chunked"));
                extra.push(("x-amz-decoded-content-length", &decoded));
                let trailer =
                    (payload == Payload::ChunkedSignedTrailer).then_some(ChecksumAlgorithm::Crc32c);
                if trailer.is_some() {
                    extra.push(("x-amz-trailer", "x-amz-checksum-crc32c"));
                }
                let mode = if trailer.is_some() {
                    "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
                } else {
                    "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
                };
                let (hs, ctx) = self.sign(method, target, &extra, mode);
                let mut enc = AwsChunkedEncoder::signed(&ctx, trailer);
                let mut wire = Vec::new();
                for c in body.chunks(64 * 1024) {
                    enc.encode_chunk(c, &mut wire);
                }
                enc.finish(&mut wire);
                (hs, wire)
            }
        };
        if !wire_body.is_empty() || matches!(method, "PUT" | "POST") {
            hs.push(("Content-Length".into(), wire_body.len().to_string()));
        }
        let mut out = head(
            method,
            target,
            hs.iter().map(|(n, v)| (n.as_str(), v.as_str())),
        );
        out.extend_from_slice(&wire_body);
        out
    }
}
