//! Body framing decisions from a parsed head (RFC 9112 section 6), with smuggling defences.
//!
//! Ambiguous framing is refused rather than guessed at, for requests and responses alike:
//! a front proxy and the node behind it must never disagree on where a message ends. Every
//! error is 400 `InvalidRequest` and means the connection must be closed.
//!
//! Repeated `Content-Length` values that are identical (`Content-Length: 5, 5`, or the same
//! value on two lines) are accepted as one, as RFC 9110 section 8.6 allows: they leave no
//! ambiguity, and ferry re-writes framing headers rather than forwarding them.

use httparse::Header;

use super::error::ProtocolError;
use super::head::{RequestHead, ResponseHead, Version};

/// A value, or the rule of HTTP the peer broke.
type ParseResult<T> = Result<T, ProtocolError>;

/// How a message body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BodyKind {
    /// No body: no framing headers on a request, or a response that never has one.
    None,
    /// Exactly this many bytes follow the head.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Responses only: the body runs until the server closes the connection.
    CloseDelimited,
}

/// What the head of a request says about its body and the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestFraming {
    /// How the body is delimited (never `CloseDelimited`).
    pub body: BodyKind,
    /// Whether the connection may carry another request after this one.
    pub keep_alive: bool,
    /// The client sent `Expect: 100-continue` over HTTP/1.1 and waits for `100 Continue`.
    pub expect_continue: bool,
}

/// What the head of a response says about its body and the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseFraming {
    /// How the body is delimited.
    pub body: BodyKind,
    /// Whether the connection may carry another request after this response.
    pub keep_alive: bool,
}

/// Decide how a request body is framed (RFC 9112 section 6.3).
///
/// Refused with 400: both `Content-Length` and `Transfer-Encoding`; differing or non-numeric
/// `Content-Length` values; a `Transfer-Encoding` other than a single `chunked`;
/// `Transfer-Encoding` on HTTP/1.0.
pub fn request_framing(head: &RequestHead<'_, '_>) -> ParseResult<RequestFraming> {
    let body = match framing_headers(head.version, head.headers)? {
        Framing::Chunked => BodyKind::Chunked,
        Framing::Length(n) => BodyKind::Length(n),
        Framing::Absent => BodyKind::None,
    };
    Ok(RequestFraming {
        body,
        keep_alive: keep_alive(head.version, head.headers),
        expect_continue: head.version == Version::Http11 && expects_continue(head.headers),
    })
}

/// Decide how a response body is framed, given the method of the request it answers.
///
/// Responses to `HEAD`, 1xx, 204, 304 and 2xx to `CONNECT` have no body whatever their headers
/// say. Otherwise the same rules as [`request_framing`] apply, and a response without framing
/// headers is close-delimited. After a 1xx response the real response is still to come.
pub fn response_framing(
    head: &ResponseHead<'_, '_>,
    request_method: &str,
) -> ParseResult<ResponseFraming> {
    let no_body = request_method == "HEAD"
        || matches!(head.status, 100..=199 | 204 | 304)
        || (request_method == "CONNECT" && (200..300).contains(&head.status));
    let body = if no_body {
        BodyKind::None
    } else {
        match framing_headers(head.version, head.headers)? {
            Framing::Chunked => BodyKind::Chunked,
            Framing::Length(n) => BodyKind::Length(n),
            Framing::Absent => BodyKind::CloseDelimited,
        }
    };
    Ok(ResponseFraming {
        body,
        keep_alive: body != BodyKind::CloseDelimited && keep_alive(head.version, head.headers),
    })
}

/// Whether the connection persists after this message, from its version and `Connection` tokens.
///
/// HTTP/1.1 persists unless a `close` token is present; HTTP/1.0 closes unless a `keep-alive`
/// token is present (and `close` wins over `keep-alive`).
pub fn keep_alive(version: Version, headers: &[Header<'_>]) -> bool {
    let (mut close, mut keep) = (false, false);
    for token in list_elements(headers, "connection") {
        close |= token.eq_ignore_ascii_case(b"close");
        keep |= token.eq_ignore_ascii_case(b"keep-alive");
    }
    !close && (version == Version::Http11 || keep)
}

/// Whether any `Expect` header asks for `100-continue`.
///
/// Other expectations are ignored: S3 clients send none, and answering 417 would only break them.
fn expects_continue(headers: &[Header<'_>]) -> bool {
    list_elements(headers, "expect").any(|t| t.eq_ignore_ascii_case(b"100-continue"))
}

/// What the framing headers say, before the message type decides what "absent" means.
enum Framing {
    Absent,
    Length(u64),
    Chunked,
}

fn framing_headers(version: Version, headers: &[Header<'_>]) -> ParseResult<Framing> {
    let length = content_length(headers)?;
    let chunked = transfer_encoding(headers)?;
    match (chunked, length) {
        (true, Some(_)) => Err(bad("both Transfer-Encoding and Content-Length")),
        (true, None) if version == Version::Http10 => Err(bad("Transfer-Encoding on HTTP/1.0")),
        (true, None) => Ok(Framing::Chunked),
        (false, Some(n)) => Ok(Framing::Length(n)),
        (false, None) => Ok(Framing::Absent),
    }
}

/// The `Content-Length`, if any: every element of every such header must be the same number.
fn content_length(headers: &[Header<'_>]) -> ParseResult<Option<u64>> {
    let mut found = None;
    for h in headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("content-length"))
    {
        for element in h.value.split(|&b| b == b',') {
            let n = parse_decimal(trim_ows(element))?;
            if found.is_some_and(|m| m != n) {
                return Err(bad("differing Content-Length values"));
            }
            found = Some(n);
        }
    }
    Ok(found)
}

/// Whether `Transfer-Encoding` is present; if so it must be exactly one `chunked` coding.
fn transfer_encoding(headers: &[Header<'_>]) -> ParseResult<bool> {
    let mut present = false;
    let mut codings = 0usize;
    for h in headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("transfer-encoding"))
    {
        present = true;
        for element in h.value.split(|&b| b == b',').map(trim_ows) {
            // Empty list elements are allowed and ignored (RFC 9110 section 5.6.1).
            if element.is_empty() {
                continue;
            }
            codings += 1;
            if codings > 1 || !element.eq_ignore_ascii_case(b"chunked") {
                return Err(bad("Transfer-Encoding must be exactly \"chunked\""));
            }
        }
    }
    if present && codings == 0 {
        return Err(bad("empty Transfer-Encoding"));
    }
    Ok(present)
}

/// The non-empty, trimmed elements of every `name` header's comma-separated list.
fn list_elements<'a>(
    headers: &'a [Header<'_>],
    name: &'static str,
) -> impl Iterator<Item = &'a [u8]> {
    headers
        .iter()
        .filter(move |h| h.name.eq_ignore_ascii_case(name))
        .flat_map(|h| h.value.split(|&b| b == b','))
        .map(trim_ows)
        .filter(|t| !t.is_empty())
}

/// A `1*DIGIT` decimal that fits a `u64`.
fn parse_decimal(digits: &[u8]) -> ParseResult<u64> {
    if digits.is_empty() {
        return Err(bad("empty Content-Length"));
    }
    digits.iter().try_fold(0u64, |n, &b| {
        if !b.is_ascii_digit() {
            return Err(bad("Content-Length is not a number"));
        }
        n.checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(b - b'0')))
            .ok_or_else(|| bad("Content-Length overflows"))
    })
}

fn trim_ows(s: &[u8]) -> &[u8] {
    let is_ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = s.iter().position(|b| !is_ows(b)).unwrap_or(s.len());
    let end = s.iter().rposition(|b| !is_ows(b)).map_or(start, |i| i + 1);
    s.get(start..end).unwrap_or_default()
}

fn bad(what: &'static str) -> ProtocolError {
    ProtocolError::malformed(what)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::ProtocolErrorKind;
    use crate::http::head::{HeadParser, Status};
    use alloc::vec::Vec;
    use httparse::EMPTY_HEADER;

    fn req(version: &str, fields: &[&str]) -> ParseResult<RequestFraming> {
        let mut buf = Vec::new();
        buf.extend_from_slice(b"PUT /b/k ");
        buf.extend_from_slice(version.as_bytes());
        buf.extend_from_slice(b"\r\n");
        for f in fields {
            buf.extend_from_slice(f.as_bytes());
            buf.extend_from_slice(b"\r\n");
        }
        buf.extend_from_slice(b"\r\n");
        let mut hs = [EMPTY_HEADER; 16];
        let Ok(Status::Complete(h)) = HeadParser::default().parse_request(&buf, &mut hs) else {
            panic!("test head did not parse");
        };
        request_framing(&h)
    }

    fn res(method: &str, status_line: &str, fields: &[&str]) -> ParseResult<ResponseFraming> {
        let mut buf = Vec::new();
        buf.extend_from_slice(status_line.as_bytes());
        buf.extend_from_slice(b"\r\n");
        for f in fields {
            buf.extend_from_slice(f.as_bytes());
            buf.extend_from_slice(b"\r\n");
        }
        buf.extend_from_slice(b"\r\n");
        let mut hs = [EMPTY_HEADER; 16];
        let Ok(Status::Complete(h)) = HeadParser::default().parse_response(&buf, &mut hs) else {
            panic!("test head did not parse");
        };
        response_framing(&h, method)
    }

    fn body(r: ParseResult<RequestFraming>) -> BodyKind {
        r.unwrap().body
    }

    #[test]
    fn request_bodies() {
        assert_eq!(body(req("HTTP/1.1", &[])), BodyKind::None);
        assert_eq!(
            body(req("HTTP/1.1", &["Content-Length: 0"])),
            BodyKind::Length(0)
        );
        assert_eq!(
            body(req("HTTP/1.1", &["content-length: 18446744073709551615"])),
            BodyKind::Length(u64::MAX)
        );
        assert_eq!(
            body(req("HTTP/1.1", &["Transfer-Encoding: chunked"])),
            BodyKind::Chunked
        );
        assert_eq!(
            body(req("HTTP/1.1", &["Transfer-Encoding: CHUNKED"])),
            BodyKind::Chunked
        );
        assert_eq!(
            body(req("HTTP/1.1", &["Transfer-Encoding: , chunked"])),
            BodyKind::Chunked
        );
    }

    #[test]
    fn identical_repeated_lengths_are_one() {
        assert_eq!(
            body(req("HTTP/1.1", &["Content-Length: 5, 5"])),
            BodyKind::Length(5)
        );
        assert_eq!(
            body(req("HTTP/1.1", &["Content-Length: 5", "Content-Length: 5"])),
            BodyKind::Length(5)
        );
    }

    #[test]
    fn smuggling_shapes_are_refused() {
        let cases: &[&[&str]] = &[
            &["Content-Length: 5", "Transfer-Encoding: chunked"],
            &["Transfer-Encoding: chunked", "Content-Length: 0"],
            &["Content-Length: 5", "Content-Length: 6"],
            &["Content-Length: 5, 6"],
            &["Content-Length: 5,"],
            &["Content-Length: +5"],
            &["Content-Length: -1"],
            &["Content-Length: 0x10"],
            &["Content-Length: 1 2"],
            &["Content-Length:"],
            &["Content-Length: 18446744073709551616"],
            &["Content-Length: 99999999999999999999999"],
            &["Transfer-Encoding: gzip"],
            &["Transfer-Encoding: chunked, gzip"],
            &["Transfer-Encoding: gzip, chunked"],
            &["Transfer-Encoding: chunked, chunked"],
            &["Transfer-Encoding: chunked", "Transfer-Encoding: chunked"],
            &["Transfer-Encoding: chunked;q=1"],
            &["Transfer-Encoding: xchunked"],
            &["Transfer-Encoding:"],
        ];
        for fields in cases {
            let e = req("HTTP/1.1", fields).expect_err("must be refused");
            assert_eq!(e.kind, ProtocolErrorKind::Malformed, "{fields:?}");
            assert_eq!(e.status(), 400);
        }
        let e = req("HTTP/1.0", &["Transfer-Encoding: chunked"]).unwrap_err();
        assert_eq!(e.status(), 400);
    }

    #[test]
    fn keep_alive_by_version_and_tokens() {
        let ka = |v, f: &[&str]| req(v, f).unwrap().keep_alive;
        assert!(ka("HTTP/1.1", &[]));
        assert!(!ka("HTTP/1.1", &["Connection: close"]));
        assert!(!ka("HTTP/1.1", &["Connection: Upgrade, CLOSE"]));
        assert!(!ka("HTTP/1.1", &["Connection: te", "Connection: close"]));
        assert!(!ka("HTTP/1.0", &[]));
        assert!(ka("HTTP/1.0", &["Connection: Keep-Alive"]));
        assert!(!ka("HTTP/1.0", &["Connection: keep-alive, close"]));
        assert!(!ka("HTTP/1.0", &["Connection: keep-alives"]));
    }

    #[test]
    fn expect_continue_only_on_1_1() {
        let ec = |v, f: &[&str]| req(v, f).unwrap().expect_continue;
        assert!(ec("HTTP/1.1", &["Expect: 100-continue"]));
        assert!(ec("HTTP/1.1", &["expect: 100-Continue"]));
        assert!(!ec("HTTP/1.1", &[]));
        assert!(!ec("HTTP/1.1", &["Expect: 200-ok"]));
        assert!(!ec("HTTP/1.0", &["Expect: 100-continue"]));
    }

    #[test]
    fn response_bodies() {
        let b = |m, s, f: &[&str]| res(m, s, f).unwrap().body;
        assert_eq!(
            b("GET", "HTTP/1.1 200 OK", &["Content-Length: 3"]),
            BodyKind::Length(3)
        );
        assert_eq!(
            b("GET", "HTTP/1.1 200 OK", &["Transfer-Encoding: chunked"]),
            BodyKind::Chunked
        );
        assert_eq!(b("GET", "HTTP/1.1 200 OK", &[]), BodyKind::CloseDelimited);
        assert_eq!(
            b("HEAD", "HTTP/1.1 200 OK", &["Content-Length: 3"]),
            BodyKind::None
        );
        assert_eq!(b("PUT", "HTTP/1.1 100 Continue", &[]), BodyKind::None);
        assert_eq!(b("GET", "HTTP/1.1 204 No Content", &[]), BodyKind::None);
        assert_eq!(
            b("GET", "HTTP/1.1 304 Not Modified", &["Content-Length: 9"]),
            BodyKind::None
        );
        assert_eq!(b("CONNECT", "HTTP/1.1 200 OK", &[]), BodyKind::None);
        assert!(
            res(
                "GET",
                "HTTP/1.1 200 OK",
                &["Content-Length: 3", "Transfer-Encoding: chunked"]
            )
            .is_err()
        );
        assert!(res("GET", "HTTP/1.0 200 OK", &["Transfer-Encoding: chunked"]).is_err());
    }

    #[test]
    fn close_delimited_response_never_keeps_alive() {
        let ka = |s, f: &[&str]| res("GET", s, f).unwrap().keep_alive;
        assert!(!ka("HTTP/1.1 200 OK", &[]));
        assert!(ka("HTTP/1.1 200 OK", &["Content-Length: 0"]));
        assert!(!ka(
            "HTTP/1.1 200 OK",
            &["Content-Length: 0", "Connection: close"]
        ));
        assert!(ka(
            "HTTP/1.0 200 OK",
            &["Content-Length: 0", "Connection: keep-alive"]
        ));
        assert!(!ka("HTTP/1.0 200 OK", &["Content-Length: 0"]));
    }

    #[test]
    fn trim_ows_edges() {
        assert_eq!(trim_ows(b""), b"");
        assert_eq!(trim_ows(b" \t "), b"");
        assert_eq!(trim_ows(b" a b\t"), b"a b");
    }
}
