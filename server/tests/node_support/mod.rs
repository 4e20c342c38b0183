//! Shared by the node tests: start a node on either runtime, and a small blocking HTTP/1.1
//! client over `std::net::TcpStream` that signs requests with SigV4 (or sends raw bytes).

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ferry_core::http::head::{HeadParser, Status};
use ferry_core::http::{EMPTY_HEADER, Header};
use ferry_core::s3::checksum::ChecksumAlgorithm;
use ferry_core::s3::sigv4::aws_chunked::AwsChunkedEncoder;
use ferry_core::s3::sigv4::{
    Credentials, Hex64, NoKeyCache, RequestParts, SigningContext, UNSIGNED_PAYLOAD, sha256,
    sign_request,
};
use ferry_core::s3::xml::ErrorResponse;
use ferry_server::{NodeConfig, NodeHandle, RuntimeKind, start_node};

pub const ACCESS_KEY: &str = "AKIDEXAMPLE";
pub const SECRET_KEY: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
pub const REGION: &str = "us-east-1";
/// Small parts so multipart tests stay small.
pub const MIN_PART: u64 = 1024;

/// Generate one `#[test]` per runtime for each listed test function `fn(RuntimeKind)`.
#[macro_export]
macro_rules! on_both_runtimes {
    ($($name:ident),* $(,)?) => {
        mod tokio {
            $(#[test] fn $name() { super::$name(ferry_server::RuntimeKind::Tokio) })*
        }
        mod smol {
            $(#[test] fn $name() { super::$name(ferry_server::RuntimeKind::Smol) })*
        }
    };
}

/// A running node on a fresh data directory.
pub struct Node {
    pub handle: Option<NodeHandle>,
    pub addr: SocketAddr,
    pub dir: tempfile::TempDir,
}

impl Node {
    pub fn start(runtime: RuntimeKind) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut cfg = NodeConfig::new(
            dir.path(),
            "127.0.0.1:0".parse().unwrap(),
            ACCESS_KEY,
            SECRET_KEY,
        );
        cfg.runtime = runtime;
        cfg.fsync = false;
        cfg.min_part_size = MIN_PART;
        cfg.threads = 2;
        let handle = start_node(cfg).expect("node starts");
        let addr = handle.local_addr();
        Self {
            handle: Some(handle),
            addr,
            dir,
        }
    }

    pub fn client(&self) -> Client {
        Client::connect(self.addr)
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            h.stop();
        }
    }
}

/// A parsed response.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

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

/// Seconds since the epoch, now.
pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
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

/// One keep-alive connection.
pub struct Client {
    pub addr: SocketAddr,
    pub stream: TcpStream,
    pub credentials: Credentials,
    /// Bytes read past the last response.
    buf: Vec<u8>,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        Self {
            addr,
            stream,
            credentials: Credentials::new(ACCESS_KEY, SECRET_KEY),
            buf: Vec::new(),
        }
    }

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

    pub fn get(&mut self, target: &str) -> Response {
        self.request("GET", target, &[], b"")
    }

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
        self.stream.write_all(&bytes).expect("send");
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
        let (hs, wire_body) = match payload {
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
        let mut out = format!("{method} {target} HTTP/1.1\r\n").into_bytes();
        for (n, v) in &hs {
            out.extend_from_slice(n.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(v.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        if !wire_body.is_empty() || matches!(method, "PUT" | "POST") {
            out.extend_from_slice(format!("Content-Length: {}\r\n", wire_body.len()).as_bytes());
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&wire_body);
        out
    }

    /// Send raw bytes (the caller frames them).
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("send");
    }

    /// Read one response (`head`: the request was HEAD, so no body follows).
    pub fn read_response(&mut self, head: bool) -> Response {
        self.try_read_response(head).expect("a response")
    }

    /// One response, or `None` if the connection closed first.
    pub fn try_read_response(&mut self, head: bool) -> Option<Response> {
        loop {
            let mut hs = [EMPTY_HEADER; 64];
            let mut parser = HeadParser::default();
            if let Ok(Status::Complete(h)) = parser.parse_response(&self.buf, &mut hs) {
                let status = h.status;
                let headers: Vec<(String, String)> = h
                    .headers
                    .iter()
                    .map(|x| {
                        (
                            x.name.to_owned(),
                            String::from_utf8_lossy(x.value).into_owned(),
                        )
                    })
                    .collect();
                let head_len = h.len;
                let len: usize = headers
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
                    .map_or(0, |(_, v)| v.parse().expect("content-length"));
                let len = if head || status == 304 || status == 204 {
                    0
                } else {
                    len
                };
                while self.buf.len() < head_len + len {
                    if self.fill() == 0 {
                        panic!("connection closed inside a response body");
                    }
                }
                let body = self.buf[head_len..head_len + len].to_vec();
                self.buf.drain(..head_len + len);
                return Some(Response {
                    status,
                    headers,
                    body,
                });
            }
            if self.fill() == 0 {
                assert!(self.buf.is_empty(), "partial response before close");
                return None;
            }
        }
    }

    fn fill(&mut self) -> usize {
        let mut chunk = [0u8; 64 * 1024];
        match self.stream.read(&mut chunk) {
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                n
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => 0,
            Err(e) => panic!("read: {e}"),
        }
    }

    /// Whether the server closed the connection (reads end without a byte).
    pub fn is_closed(&mut self) -> bool {
        self.buf.is_empty() && self.fill() == 0
    }

    pub fn shutdown_write(&self) {
        let _ = self.stream.shutdown(Shutdown::Write);
    }
}
