//! Incremental HTTP/1.1 head parsing (request and response) on top of `httparse`.
//!
//! The caller appends bytes from the socket to one buffer and calls [`HeadParser::parse_request`]
//! (or [`HeadParser::parse_response`]) after each read. Until the blank line that ends the head
//! has arrived the answer is [`Status::Partial`]; the parser remembers how far it has searched,
//! so each byte is scanned for the end of head once, and `httparse` runs once on the complete
//! head. The first read of a message usually holds the whole head, so `httparse` is tried on it
//! directly (the scan then only checks for bare LFs); if that read was partial, it has been
//! parsed twice. The result borrows the caller's buffer and header storage (zero copy).
//!
//! Every error from this module means the byte stream can no longer be trusted: answer with the
//! error's status, send `Connection: close` and close the connection.

use httparse::Header;
pub use httparse::Status;

use super::error::{ProtocolError, ProtocolErrorKind};

/// The result of parsing: a value, or the rule the peer broke.
type ParseResult<T> = Result<T, ProtocolError>;

/// The HTTP version of a message; only HTTP/1.0 and HTTP/1.1 are spoken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Version {
    /// HTTP/1.0: close after each message unless `Connection: keep-alive`.
    Http10,
    /// HTTP/1.1: persistent unless `Connection: close`.
    Http11,
}

impl Version {
    /// The version as written on the wire (`HTTP/1.1`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Http10 => "HTTP/1.0",
            Self::Http11 => "HTTP/1.1",
        }
    }

    fn from_minor(minor: u8) -> ParseResult<Self> {
        match minor {
            0 => Ok(Self::Http10),
            1 => Ok(Self::Http11),
            _ => Err(malformed("unsupported HTTP version")),
        }
    }
}

/// Limits applied while parsing a head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeadLimits {
    /// Longest head (start line, fields and the blank line) accepted, in bytes.
    pub max_head_len: usize,
    /// Most header fields accepted (also capped by the caller's header storage).
    pub max_headers: usize,
    /// Longest request-target accepted, in bytes.
    pub max_target_len: usize,
}

impl Default for HeadLimits {
    fn default() -> Self {
        Self {
            max_head_len: 64 * 1024,
            max_headers: 100,
            max_target_len: 8 * 1024,
        }
    }
}

/// A parsed request head: views into the caller's buffer and header storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestHead<'b, 'h> {
    /// The method token, e.g. `PUT`.
    pub method: &'b str,
    /// The request-target exactly as sent (origin-form `/bucket/key?query` for S3).
    pub target: &'b str,
    /// HTTP/1.0 or HTTP/1.1.
    pub version: Version,
    /// The header fields, in order.
    pub headers: &'h [Header<'b>],
    /// Length of the head in the buffer, including the blank line; the body starts here.
    pub len: usize,
}

/// A parsed response head: views into the caller's buffer and header storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseHead<'b, 'h> {
    /// HTTP/1.0 or HTTP/1.1.
    pub version: Version,
    /// The three-digit status code.
    pub status: u16,
    /// The reason phrase (may be empty).
    pub reason: &'b str,
    /// The header fields, in order.
    pub headers: &'h [Header<'b>],
    /// Length of the head in the buffer, including the blank line; the body starts here.
    pub len: usize,
}

/// Incremental head parser: remembers how far it has searched for the end of the head.
///
/// Feed it the same growing buffer (the head always starts at byte 0) until it answers
/// `Complete` or an error; it then resets itself for the next message. Call
/// [`HeadParser::reset`] before reusing it on a different buffer.
#[derive(Debug, Clone)]
pub struct HeadParser {
    limits: HeadLimits,
    /// Bytes already scanned; every `\n` before this was preceded by `\r`.
    searched: usize,
    /// Where the start line begins, once leading empty lines have been skipped.
    start: Option<usize>,
    /// End of the start line (just past its `\n`), once seen.
    first_line_end: Option<usize>,
}

impl Default for HeadParser {
    fn default() -> Self {
        Self::new(HeadLimits::default())
    }
}

impl HeadParser {
    /// A parser with the given limits.
    pub const fn new(limits: HeadLimits) -> Self {
        Self {
            limits,
            searched: 0,
            start: None,
            first_line_end: None,
        }
    }

    /// The limits this parser applies.
    pub const fn limits(&self) -> &HeadLimits {
        &self.limits
    }

    /// Forget the search progress, to start on a new message or a new buffer.
    pub fn reset(&mut self) {
        self.searched = 0;
        self.start = None;
        self.first_line_end = None;
    }

    /// Where the head in `buf` ends, once it is complete; the scan state is reset when it is
    /// (or on error), ready for the next message.
    fn head_end(&mut self, buf: &[u8], request: bool) -> ParseResult<Option<usize>> {
        let end = self.scan(buf, request);
        if !matches!(end, Ok(Status::Partial)) {
            self.reset();
        }
        match end? {
            Status::Complete(end) => Ok(Some(end)),
            Status::Partial => Ok(None),
        }
    }

    /// Parse a request head from the start of `buf`, using `headers` as field storage.
    ///
    /// Returns `Partial` until the blank line has arrived. Errors: 431
    /// `RequestHeaderSectionTooLarge` (head or field count over the limit), 414
    /// `RequestUriTooLong`, 400 `InvalidRequest` (malformed); all of them must close.
    pub fn parse_request<'b, 'h>(
        &mut self,
        buf: &'b [u8],
        headers: &'h mut [Header<'b>],
    ) -> ParseResult<Status<RequestHead<'b, 'h>>> {
        if self.searched == 0 && self.start.is_none() {
            // First look at this message: the whole head usually came in one read, so let
            // `httparse` find its end, and check on top only what it lets through (bare LF).
            // Anything else (partial, error, limits) takes the scanning path below, which
            // gives the exact answer; a slow sender's first read is thus parsed twice at most.
            let limit = buf.len().min(self.limits.max_head_len);
            let n = headers.len().min(self.limits.max_headers);
            let parsed = {
                let mut req = httparse::Request::new(headers.get_mut(..n).unwrap_or_default());
                match req.parse(buf.get(..limit).unwrap_or_default()) {
                    Ok(Status::Complete(end)) => match (req.method, req.path, req.version) {
                        (Some(m), Some(t), Some(v)) => Some((m, t, v, req.headers.len(), end)),
                        _ => None,
                    },
                    _ => None,
                }
            };
            if let Some((method, target, minor, count, end)) = parsed
                && let (false, true, Ok(version)) = (
                    has_bare_lf(buf, 0, end),
                    target.len() <= self.limits.max_target_len,
                    Version::from_minor(minor),
                )
            {
                let headers: &'h [Header<'b>] = headers;
                return Ok(Status::Complete(RequestHead {
                    method,
                    target,
                    version,
                    // `httparse` fills the storage from its start.
                    headers: headers.get(..count).unwrap_or_default(),
                    len: end,
                }));
            }
        }
        self.parse_request_scanned(buf, headers)
    }

    /// [`Self::parse_request`] by scanning for the end of head first, then `httparse`.
    fn parse_request_scanned<'b, 'h>(
        &mut self,
        buf: &'b [u8],
        headers: &'h mut [Header<'b>],
    ) -> ParseResult<Status<RequestHead<'b, 'h>>> {
        let Some(end) = self.head_end(buf, true)? else {
            return Ok(Status::Partial);
        };
        let head = buf.get(..end).unwrap_or(buf);
        let n = headers.len().min(self.limits.max_headers);
        let storage = headers.get_mut(..n).unwrap_or_default();
        let mut req = httparse::Request::new(storage);
        let parsed = req
            .parse(head)
            .map_err(|e| from_httparse(e, &self.limits))?;
        if parsed != Status::Complete(end) {
            return Err(malformed("head does not end at its blank line"));
        }
        let (Some(method), Some(target), Some(minor)) = (req.method, req.path, req.version) else {
            return Err(malformed("incomplete request line"));
        };
        if target.len() > self.limits.max_target_len {
            return Err(target_too_long(&self.limits));
        }
        Ok(Status::Complete(RequestHead {
            method,
            target,
            version: Version::from_minor(minor)?,
            headers: req.headers,
            len: end,
        }))
    }

    /// Parse a response head from the start of `buf`, using `headers` as field storage.
    ///
    /// Returns `Partial` until the blank line has arrived. Errors: 431
    /// `RequestHeaderSectionTooLarge` (head or field count over the limit) and 400
    /// `InvalidRequest` (malformed); all of them must close.
    pub fn parse_response<'b, 'h>(
        &mut self,
        buf: &'b [u8],
        headers: &'h mut [Header<'b>],
    ) -> ParseResult<Status<ResponseHead<'b, 'h>>> {
        if self.searched == 0 && self.start.is_none() {
            // As in `parse_request`: `httparse` first on a message's first read.
            let limit = buf.len().min(self.limits.max_head_len);
            let n = headers.len().min(self.limits.max_headers);
            let parsed = {
                let mut res = httparse::Response::new(headers.get_mut(..n).unwrap_or_default());
                match res.parse(buf.get(..limit).unwrap_or_default()) {
                    Ok(Status::Complete(end)) => match (res.version, res.code, res.reason) {
                        (Some(v), Some(c), Some(r)) => Some((v, c, r, res.headers.len(), end)),
                        _ => None,
                    },
                    _ => None,
                }
            };
            if let Some((minor, status, reason, count, end)) = parsed
                && let (false, true, Ok(version)) = (
                    has_bare_lf(buf, 0, end),
                    status >= 100,
                    Version::from_minor(minor),
                )
            {
                let headers: &'h [Header<'b>] = headers;
                return Ok(Status::Complete(ResponseHead {
                    version,
                    status,
                    reason,
                    headers: headers.get(..count).unwrap_or_default(),
                    len: end,
                }));
            }
        }
        self.parse_response_scanned(buf, headers)
    }

    /// [`Self::parse_response`] by scanning for the end of head first, then `httparse`.
    fn parse_response_scanned<'b, 'h>(
        &mut self,
        buf: &'b [u8],
        headers: &'h mut [Header<'b>],
    ) -> ParseResult<Status<ResponseHead<'b, 'h>>> {
        let Some(end) = self.head_end(buf, false)? else {
            return Ok(Status::Partial);
        };
        let head = buf.get(..end).unwrap_or(buf);
        let n = headers.len().min(self.limits.max_headers);
        let storage = headers.get_mut(..n).unwrap_or_default();
        let mut res = httparse::Response::new(storage);
        let parsed = res
            .parse(head)
            .map_err(|e| from_httparse(e, &self.limits))?;
        if parsed != Status::Complete(end) {
            return Err(malformed("head does not end at its blank line"));
        }
        let (Some(minor), Some(status), Some(reason)) = (res.version, res.code, res.reason) else {
            return Err(malformed("incomplete status line"));
        };
        if status < 100 {
            return Err(malformed("status code below 100"));
        }
        Ok(Status::Complete(ResponseHead {
            version: Version::from_minor(minor)?,
            status,
            reason,
            headers: res.headers,
            len: end,
        }))
    }

    /// Find the end of the head (just past `\r\n\r\n`), scanning only bytes not seen before.
    ///
    /// Hand-written rather than left to `httparse` so that a slow sender costs one pass over
    /// its bytes, not one full re-parse per read. Bare LF is rejected here: `httparse`
    /// accepts it, and line-ending disagreements between hops are a smuggling vector.
    fn scan(&mut self, buf: &[u8], request: bool) -> ParseResult<Status<usize>> {
        if buf.len() < self.searched {
            // Not the buffer we were fed before: start over rather than trust stale progress.
            self.reset();
        }
        let limit = buf.len().min(self.limits.max_head_len);
        // Leading empty lines before the start line are ignored (RFC 9112 section 2.2).
        while self.start.is_none() && self.searched < limit {
            let at = self.searched;
            match (buf.get(at), buf.get(at + 1)) {
                (Some(b'\r'), None) => return Ok(Status::Partial),
                (Some(b'\r'), Some(b'\n')) => self.searched = at + 2,
                (Some(b'\n'), _) => return Err(malformed("bare LF in head")),
                _ => self.start = Some(at),
            }
        }
        if let Some(start) = self.start {
            let from = self.searched.max(start);
            let window = buf.get(from..limit).unwrap_or_default();
            // Only the line feeds need looking at: `memchr` finds them a vector at a time.
            for off in memchr::memchr_iter(b'\n', window) {
                let i = from + off;
                if i == 0 || buf.get(i - 1) != Some(&b'\r') {
                    return Err(malformed("bare LF in head"));
                }
                if self.first_line_end.is_none() {
                    self.first_line_end = Some(i + 1);
                } else if i >= start + 3 && buf.get(i - 3..i - 1) == Some(b"\r\n") {
                    self.searched = i + 1;
                    return Ok(Status::Complete(i + 1));
                }
            }
        }
        self.searched = limit;
        if buf.len() >= self.limits.max_head_len {
            if request && self.start.is_some() && self.first_line_end.is_none() {
                // Still inside the request line: its target is what is too long.
                return Err(target_too_long(&self.limits));
            }
            return Err(ProtocolError::new(
                ProtocolErrorKind::HeadTooLarge,
                alloc::format!("HTTP head exceeds {} bytes", self.limits.max_head_len),
            ));
        }
        Ok(Status::Partial)
    }
}

/// Whether `buf[from..to]` holds a `\n` that does not follow a `\r` (looking back before `from`).
fn has_bare_lf(buf: &[u8], from: usize, to: usize) -> bool {
    if from == 0 && buf.first() == Some(&b'\n') {
        return true;
    }
    let lo = from.max(1);
    let (Some(prev), Some(cur)) = (buf.get(lo - 1..to.saturating_sub(1)), buf.get(lo..to)) else {
        return false;
    };
    // Branch-free, so that it runs a vector at a time.
    prev.iter()
        .zip(cur)
        .fold(false, |bare, (&p, &c)| bare | ((c == b'\n') & (p != b'\r')))
}

fn malformed(what: &'static str) -> ProtocolError {
    ProtocolError::malformed(what)
}

fn target_too_long(limits: &HeadLimits) -> ProtocolError {
    ProtocolError::new(
        ProtocolErrorKind::TargetTooLong,
        alloc::format!("request-target exceeds {} bytes", limits.max_target_len),
    )
}

fn from_httparse(e: httparse::Error, limits: &HeadLimits) -> ProtocolError {
    let what = match e {
        httparse::Error::TooManyHeaders => {
            return ProtocolError::new(
                ProtocolErrorKind::HeadTooLarge,
                alloc::format!("more than {} header fields", limits.max_headers),
            );
        }
        httparse::Error::HeaderName => "malformed HTTP head: invalid header name",
        httparse::Error::HeaderValue => "malformed HTTP head: invalid header value",
        httparse::Error::NewLine => "malformed HTTP head: invalid line ending",
        httparse::Error::Status => "malformed HTTP head: invalid status",
        httparse::Error::Token => "malformed HTTP head: invalid token in start line",
        httparse::Error::Version => "malformed HTTP head: invalid HTTP version",
    };
    malformed(what)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;
    use httparse::EMPTY_HEADER;
    use proptest::prelude::*;

    const REQ: &[u8] = b"PUT /bucket/key?uploads HTTP/1.1\r\nHost: s3.local\r\nContent-Length: 5\r\nX-Amz-Meta-A:  v a \r\n\r\nhello";

    fn req_err(buf: &[u8], limits: HeadLimits) -> ProtocolError {
        let mut hs = [EMPTY_HEADER; 128];
        HeadParser::new(limits)
            .parse_request(buf, &mut hs)
            .expect_err("should fail")
    }

    #[test]
    fn parses_request_views() {
        let mut hs = [EMPTY_HEADER; 16];
        let mut p = HeadParser::default();
        let Status::Complete(h) = p.parse_request(REQ, &mut hs).unwrap() else {
            panic!("partial")
        };
        assert_eq!(h.method, "PUT");
        assert_eq!(h.target, "/bucket/key?uploads");
        assert_eq!(h.version, Version::Http11);
        assert_eq!(h.headers.len(), 3);
        assert_eq!(h.headers[0].name, "Host");
        assert_eq!(h.headers[2].value, b"v a");
        assert_eq!(&REQ[h.len..], b"hello");
    }

    #[test]
    fn parses_response_views() {
        let buf = b"HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n";
        let mut hs = [EMPTY_HEADER; 4];
        let Status::Complete(h) = HeadParser::default().parse_response(buf, &mut hs).unwrap()
        else {
            panic!("partial")
        };
        assert_eq!(
            (h.version, h.status, h.reason, h.len),
            (Version::Http10, 404, "Not Found", buf.len())
        );
        assert_eq!(h.headers.len(), 1);
    }

    #[test]
    fn incomplete_is_partial_at_every_prefix() {
        let head_len = REQ.len() - 5;
        let mut p = HeadParser::default();
        for n in 0..head_len {
            let mut hs = [EMPTY_HEADER; 16];
            assert_eq!(
                p.parse_request(&REQ[..n], &mut hs),
                Ok(Status::Partial),
                "prefix {n}"
            );
        }
        let mut hs = [EMPTY_HEADER; 16];
        let Status::Complete(h) = p.parse_request(&REQ[..head_len], &mut hs).unwrap() else {
            panic!("partial")
        };
        assert_eq!(h.len, head_len);
    }

    #[test]
    fn scan_resumes_where_it_stopped() {
        let mut p = HeadParser::default();
        let mut hs = [EMPTY_HEADER; 16];
        assert_eq!(p.parse_request(&REQ[..40], &mut hs), Ok(Status::Partial));
        assert_eq!(p.searched, 40);
        assert_eq!(p.first_line_end, Some(34));
    }

    #[test]
    fn leading_empty_lines_are_skipped() {
        let buf = b"\r\n\r\nGET / HTTP/1.1\r\n\r\n";
        let mut hs = [EMPTY_HEADER; 4];
        let mut p = HeadParser::default();
        let got = p.parse_request(buf, &mut hs).unwrap();
        let Status::Complete(h) = got else { panic!() };
        assert_eq!((h.method, h.target, h.len), ("GET", "/", buf.len()));
    }

    #[test]
    fn bare_lf_is_rejected() {
        for buf in [
            &b"GET / HTTP/1.1\nHost: a\r\n\r\n"[..],
            b"GET / HTTP/1.1\r\nHost: a\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\n\n",
            b"\nGET / HTTP/1.1\r\n\r\n",
        ] {
            let e = req_err(buf, HeadLimits::default());
            assert_eq!(e.kind, ProtocolErrorKind::Malformed, "{buf:?}");
        }
    }

    #[test]
    fn obs_fold_is_rejected() {
        let req = b"GET / HTTP/1.1\r\nX-A: one\r\n two\r\n\r\n";
        assert_eq!(
            req_err(req, HeadLimits::default()).kind,
            ProtocolErrorKind::Malformed
        );
        let res = b"HTTP/1.1 200 OK\r\nX-A: one\r\n\ttwo\r\n\r\n";
        let mut hs = [EMPTY_HEADER; 4];
        let e = HeadParser::default()
            .parse_response(res, &mut hs)
            .unwrap_err();
        assert_eq!(e.kind, ProtocolErrorKind::Malformed);
    }

    #[test]
    fn malformed_heads_are_400() {
        for buf in [
            &b"GET  / HTTP/1.1\r\n\r\n"[..],
            b"GET / HTTP/2.0\r\n\r\n",
            b"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n",
            b"GET / HTTP/1.1\r\nX: a\rb\r\n\r\n",
            b"G(T / HTTP/1.1\r\n\r\n",
            b"GET /\x01 HTTP/1.1\r\n\r\n",
        ] {
            let e = req_err(buf, HeadLimits::default());
            assert_eq!(e.status(), 400, "{buf:?}");
        }
    }

    #[test]
    fn head_size_limit_is_431() {
        let limits = HeadLimits {
            max_head_len: 64,
            ..HeadLimits::default()
        };
        let mut buf = b"GET / HTTP/1.1\r\n".to_vec();
        while buf.len() < 64 {
            buf.extend_from_slice(b"X-Pad: aaaa\r\n");
        }
        let e = req_err(&buf, limits);
        assert_eq!(e.kind, ProtocolErrorKind::HeadTooLarge);
        assert_eq!(e.status(), 431);
        // A head that ends within the limit passes even when body bytes follow it.
        let mut ok = b"GET / HTTP/1.1\r\n\r\n".to_vec();
        ok.resize(200, b'x');
        let mut hs = [EMPTY_HEADER; 4];
        assert!(matches!(
            HeadParser::new(limits).parse_request(&ok, &mut hs),
            Ok(Status::Complete(_))
        ));
    }

    #[test]
    fn header_count_limit_is_431() {
        let mut buf = b"GET / HTTP/1.1\r\n".to_vec();
        for _ in 0..5 {
            buf.extend_from_slice(b"A: b\r\n");
        }
        buf.extend_from_slice(b"\r\n");
        let limits = HeadLimits {
            max_headers: 4,
            ..HeadLimits::default()
        };
        assert_eq!(req_err(&buf, limits).status(), 431);
        let limits = HeadLimits {
            max_headers: 5,
            ..HeadLimits::default()
        };
        let mut hs = [EMPTY_HEADER; 8];
        let got = HeadParser::new(limits)
            .parse_request(&buf, &mut hs)
            .unwrap();
        let Status::Complete(h) = got else { panic!() };
        assert_eq!(h.headers.len(), 5);
        // Smaller caller storage caps the count too.
        let mut small = [EMPTY_HEADER; 2];
        let e = HeadParser::default()
            .parse_request(&buf, &mut small)
            .unwrap_err();
        assert_eq!(e.status(), 431);
    }

    #[test]
    fn target_limit_is_414() {
        let limits = HeadLimits {
            max_target_len: 10,
            ..HeadLimits::default()
        };
        assert_eq!(
            req_err(b"GET /0123456789 HTTP/1.1\r\n\r\n", limits).kind,
            ProtocolErrorKind::TargetTooLong
        );
        let mut hs = [EMPTY_HEADER; 4];
        assert!(matches!(
            HeadParser::new(limits).parse_request(b"GET /012345678 HTTP/1.1\r\n\r\n", &mut hs),
            Ok(Status::Complete(_))
        ));
        // A request line longer than the whole head limit is still reported as 414.
        let limits = HeadLimits {
            max_head_len: 32,
            max_target_len: 16,
            ..HeadLimits::default()
        };
        let mut long = b"GET /".to_vec();
        long.resize(40, b'a');
        let e = req_err(&long, limits);
        assert_eq!(e.status(), 414);
    }

    #[test]
    fn parser_resets_after_complete_and_error() {
        let mut p = HeadParser::default();
        let mut hs = [EMPTY_HEADER; 16];
        assert!(matches!(
            p.parse_request(REQ, &mut hs),
            Ok(Status::Complete(_))
        ));
        assert_eq!(p.searched, 0);
        let mut hs = [EMPTY_HEADER; 16];
        assert!(p.parse_request(b"GET / HTTP/1.1\n\n", &mut hs).is_err());
        let mut hs = [EMPTY_HEADER; 16];
        assert!(matches!(
            p.parse_request(REQ, &mut hs),
            Ok(Status::Complete(_))
        ));
    }

    /// The head length, `None` for partial, or the error code: comparable across runs.
    fn outcome(
        p: &mut HeadParser,
        buf: &[u8],
        response: bool,
    ) -> Result<Option<usize>, ProtocolErrorKind> {
        let mut hs = [EMPTY_HEADER; 32];
        let len = if response {
            match p.parse_response(buf, &mut hs) {
                Ok(Status::Complete(h)) => Ok(Some(h.len)),
                Ok(Status::Partial) => Ok(None),
                Err(e) => Err(e),
            }
        } else {
            match p.parse_request(buf, &mut hs) {
                Ok(Status::Complete(h)) => Ok(Some(h.len)),
                Ok(Status::Partial) => Ok(None),
                Err(e) => Err(e),
            }
        };
        len.map_err(|e| e.kind)
    }

    /// Full answer of the `httparse`-first path and of the scanning path, on fresh parsers.
    fn both_paths(buf: &[u8], limits: HeadLimits, response: bool) -> [alloc::string::String; 2] {
        let mut out = [0, 1].map(|_| alloc::string::String::new());
        for (scanned, o) in out.iter_mut().enumerate() {
            let mut p = HeadParser::new(limits);
            let mut hs = [EMPTY_HEADER; 8];
            *o = match (response, scanned == 1) {
                (false, false) => alloc::format!("{:?}", p.parse_request(buf, &mut hs)),
                (false, true) => alloc::format!("{:?}", p.parse_request_scanned(buf, &mut hs)),
                (true, false) => alloc::format!("{:?}", p.parse_response(buf, &mut hs)),
                (true, true) => alloc::format!("{:?}", p.parse_response_scanned(buf, &mut hs)),
            };
        }
        out
    }

    #[test]
    fn bare_lf_check_looks_back() {
        assert!(has_bare_lf(b"\n", 0, 1));
        assert!(has_bare_lf(b"a\r\n\n", 0, 4));
        assert!(!has_bare_lf(b"a\r\n\n", 0, 3));
        assert!(
            has_bare_lf(b"a\r\n\n", 3, 4),
            "the byte before `from` counts"
        );
        assert!(!has_bare_lf(b"\r\n", 1, 2));
        assert!(!has_bare_lf(b"\n", 1, 1));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        /// The `httparse`-first path answers exactly as scanning first does.
        #[test]
        fn fast_path_agrees_with_scanning(
            lines in proptest::collection::vec(
                prop_oneof![
                    6 => Just(&b"Host: a\r\n"[..]),
                    2 => Just(&b"X-A:  v  a \r\n"[..]),
                    2 => Just(&b"a:\r\n"[..]),
                    2 => Just(&b"\r\n"[..]),
                    1 => Just(&b"\n"[..]),
                    1 => Just(&b"\r"[..]),
                    1 => Just(&b" b\r\n"[..]),
                    1 => Just(&b"Bad Name: x\r\n"[..]),
                    1 => Just(&b"x"[..]),
                ],
                0..12,
            ),
            start in prop_oneof![
                Just(&b"GET /a HTTP/1.1\r\n"[..]),
                Just(&b"\r\nPUT /0123456789 HTTP/1.0\r\n"[..]),
                Just(&b"GET / HTTP/1.2\r\n"[..]),
                Just(&b"HTTP/1.1 200 OK\r\n"[..]),
                Just(&b"HTTP/1.0 404 \r\n"[..]),
                Just(&b"HTTP/1.1 099 X\r\n"[..]),
                Just(&b"\nGET / HTTP/1.1\r\n"[..]),
            ],
            end in prop_oneof![Just(&b"\r\n"[..]), Just(&b""[..])],
            limits in (16usize..120, 1usize..10, 1usize..12),
        ) {
            let mut buf = start.to_vec();
            for l in &lines {
                buf.extend_from_slice(l);
            }
            buf.extend_from_slice(end);
            let limits = HeadLimits {
                max_head_len: limits.0,
                max_headers: limits.1,
                max_target_len: limits.2,
            };
            for response in [false, true] {
                let [fast, scanned] = both_paths(&buf, limits, response);
                prop_assert_eq!(fast, scanned, "{:?}", alloc::string::String::from_utf8_lossy(&buf));
            }
        }
    }

    proptest! {
        /// Any split of the input into reads yields the same answer as parsing it whole.
        #[test]
        fn split_reads_agree_with_whole(
            bytes in proptest::collection::vec(
                prop_oneof![
                    Just(b'\r'), Just(b'\n'), Just(b' '), Just(b':'),
                    Just(b'a'), Just(b'/'), Just(b'G')
                ],
                0..80,
            ),
            prefix in prop_oneof![
                Just(&b"GET / HTTP/1.1\r\n"[..]),
                Just(&b"HTTP/1.1 200 OK\r\n"[..]),
                Just(&b""[..])
            ],
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..8),
        ) {
            let mut input = prefix.to_vec();
            input.extend_from_slice(&bytes);
            input.extend_from_slice(b"\r\n\r\n");
            let mut cuts: Vec<usize> = cuts.iter().map(|c| c.index(input.len())).collect();
            cuts.sort_unstable();
            for response in [false, true] {
                let whole = outcome(&mut HeadParser::default(), &input, response);
                let mut p = HeadParser::default();
                let mut split = Ok(None);
                for &n in cuts.iter().chain(core::iter::once(&input.len())) {
                    split = outcome(&mut p, &input[..n], response);
                    if split != Ok(None) {
                        break;
                    }
                }
                prop_assert_eq!(split, whole);
            }
        }
    }
}
