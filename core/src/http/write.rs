//! Writing HTTP/1.1 heads into a caller-owned buffer.
//!
//! A head is a start line ([`request_line`] or [`status_line`]), any number of [`header`]s
//! (or the [`content_length`] and [`date`] helpers), then [`end_head`]. Everything is appended
//! to a `Vec<u8>` the caller owns (typically pooled), so writing a head never allocates beyond
//! growing that buffer. Names and values are checked so that no caller can inject a line break.

use alloc::vec::Vec;
use core::fmt::{self, Write as _};

use super::error::HttpError;
use super::head::Version;
use crate::time::DateTime;

/// Append `METHOD target HTTP/1.x\r\n`.
///
/// The method must be a token and the target visible ASCII (percent-encode everything else);
/// otherwise nothing is written and the error is [`HttpError::Usage`].
pub fn request_line(
    out: &mut Vec<u8>,
    method: &str,
    target: &str,
    version: Version,
) -> Result<(), HttpError> {
    if !is_token(method.as_bytes()) {
        return Err(refuse("request method is not a token"));
    }
    if target.is_empty() || !target.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(refuse("request-target must be non-empty visible ASCII"));
    }
    out.extend_from_slice(method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(target.as_bytes());
    out.push(b' ');
    out.extend_from_slice(version.as_str().as_bytes());
    out.extend_from_slice(b"\r\n");
    Ok(())
}

/// Append `HTTP/1.x status Reason\r\n` with the standard reason phrase for `status`.
///
/// `status` must have three digits (100..=999), otherwise nothing is written and the error is
/// [`HttpError::Usage`].
pub fn status_line(out: &mut Vec<u8>, version: Version, status: u16) -> Result<(), HttpError> {
    if !(100..=999).contains(&status) {
        return Err(refuse("status code must have three digits"));
    }
    out.extend_from_slice(version.as_str().as_bytes());
    out.push(b' ');
    push_decimal(out, u64::from(status));
    out.push(b' ');
    out.extend_from_slice(reason_phrase(status).as_bytes());
    out.extend_from_slice(b"\r\n");
    Ok(())
}

/// Append `name: value\r\n`.
///
/// The name must be a token; the value may hold visible ASCII, obs-text, spaces and tabs but no
/// other control bytes (so no CR or LF). Otherwise nothing is written and the error is
/// [`HttpError::Usage`].
pub fn header(out: &mut Vec<u8>, name: &str, value: &[u8]) -> Result<(), HttpError> {
    if !is_token(name.as_bytes()) {
        return Err(refuse("header name is not a token"));
    }
    if !value
        .iter()
        .all(|&b| b == b'\t' || (b' '..=b'~').contains(&b) || b >= 0x80)
    {
        return Err(refuse("header value holds a control byte"));
    }
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
    Ok(())
}

/// Append `Content-Length: len\r\n`.
pub fn content_length(out: &mut Vec<u8>, len: u64) {
    out.extend_from_slice(b"Content-Length: ");
    push_decimal(out, len);
    out.extend_from_slice(b"\r\n");
}

/// Append `Date: <IMF-fixdate>\r\n` for `now` (Unix seconds, passed in: core has no clock).
pub fn date(out: &mut Vec<u8>, now: i64) {
    out.extend_from_slice(b"Date: ");
    // Writing into a Vec cannot fail.
    let _ = write!(VecWriter(out), "{}", DateTime::from_unix(now).http());
    out.extend_from_slice(b"\r\n");
}

/// Append the blank line that ends the head.
pub fn end_head(out: &mut Vec<u8>) {
    out.extend_from_slice(b"\r\n");
}

/// The standard reason phrase for `status` (RFC 9110 section 15), or `""` if it has none.
pub const fn reason_phrase(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        203 => "Non-Authoritative Information",
        204 => "No Content",
        205 => "Reset Content",
        206 => "Partial Content",
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        305 => "Use Proxy",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        421 => "Misdirected Request",
        422 => "Unprocessable Content",
        426 => "Upgrade Required",
        428 => "Precondition Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}

/// Append `n` in decimal; hand-written because `fmt` is slow for the one number every head has.
pub(crate) fn push_decimal(out: &mut Vec<u8>, n: u64) {
    push_radix(out, n, 10);
}

/// Append `n` in lowercase hex (chunk sizes).
pub(crate) fn push_hex(out: &mut Vec<u8>, n: u64) {
    push_radix(out, n, 16);
}

fn push_radix(out: &mut Vec<u8>, mut n: u64, radix: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        // `n % radix` < 16 and at most 20 digits fit a u64 in base 10, so neither index fails.
        buf[i] = DIGITS[(n % radix) as usize];
        n /= radix;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// RFC 9110 `token`: one or more tchar.
pub(crate) fn is_token(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(|&b| is_tchar(b))
}

/// RFC 9110 `tchar`.
pub(crate) const fn is_tchar(b: u8) -> bool {
    matches!(b,
        b'!' | b'#' | b'$' | b'%' | b'&' | b'\'' | b'*' | b'+' | b'-' | b'.' | b'^' | b'_' | b'`'
        | b'|' | b'~' | b'0'..=b'9' | b'a'..=b'z' | b'A'..=b'Z')
}

/// The caller asked for a head HTTP cannot carry.
fn refuse(what: &'static str) -> HttpError {
    HttpError::Usage(what)
}

/// `fmt::Write` over a byte vector, for the `Display`-based date formatter.
struct VecWriter<'a>(&'a mut Vec<u8>);

impl fmt::Write for VecWriter<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::head::{HeadParser, Status};
    use alloc::string::String;
    use alloc::vec;
    use httparse::EMPTY_HEADER;
    use proptest::prelude::*;

    #[test]
    fn writes_a_response_head() {
        let mut out = Vec::new();
        status_line(&mut out, Version::Http11, 200).unwrap();
        // 784111777 is 1994-11-06 08:49:37 UTC, RFC 9110's own example date.
        date(&mut out, 784_111_777);
        content_length(&mut out, 1234);
        header(&mut out, "ETag", b"\"abc\"").unwrap();
        end_head(&mut out);
        assert_eq!(
            out,
            b"HTTP/1.1 200 OK\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nContent-Length: 1234\r\nETag: \"abc\"\r\n\r\n"
        );
    }

    #[test]
    fn numbers_match_fmt() {
        for n in [
            0,
            1,
            9,
            10,
            15,
            16,
            255,
            4096,
            1 << 40,
            u64::MAX - 1,
            u64::MAX,
        ] {
            let (mut d, mut h) = (Vec::new(), Vec::new());
            push_decimal(&mut d, n);
            push_hex(&mut h, n);
            assert_eq!(d, alloc::format!("{n}").into_bytes());
            assert_eq!(h, alloc::format!("{n:x}").into_bytes());
        }
    }

    #[test]
    fn refuses_injection_and_writes_nothing() {
        let mut out = vec![b'x'];
        assert!(header(&mut out, "X-A", b"a\r\nX-B: b").is_err());
        assert!(header(&mut out, "X-A", b"a\nb").is_err());
        assert!(header(&mut out, "X-A", b"a\0b").is_err());
        assert!(header(&mut out, "X A", b"a").is_err());
        assert!(header(&mut out, "", b"a").is_err());
        assert!(request_line(&mut out, "GET", "/a b", Version::Http11).is_err());
        assert!(request_line(&mut out, "GET", "", Version::Http11).is_err());
        assert!(request_line(&mut out, "G T", "/", Version::Http11).is_err());
        assert!(status_line(&mut out, Version::Http11, 99).is_err());
        assert!(status_line(&mut out, Version::Http11, 1000).is_err());
        assert_eq!(out, b"x");
    }

    #[test]
    fn unknown_status_has_empty_reason() {
        let mut out = Vec::new();
        status_line(&mut out, Version::Http10, 599).unwrap();
        assert_eq!(out, b"HTTP/1.0 599 \r\n");
    }

    fn token() -> impl Strategy<Value = String> {
        "[!#$%&'*+.^_`|~0-9A-Za-z-]{1,12}"
    }

    /// Header values as httparse returns them: no leading or trailing whitespace.
    fn value() -> impl Strategy<Value = Vec<u8>> {
        let inner = prop_oneof![
            8 => 0x21u8..=0x7e,
            1 => Just(b' '),
            1 => Just(b'\t'),
            1 => 0x80u8..=0xff
        ];
        let edge = prop_oneof![(0x21u8..=0x7e), (0x80u8..=0xff)];
        prop_oneof![
            Just(Vec::new()),
            (edge.clone(), proptest::collection::vec(inner, 0..20), edge).prop_map(
                |(a, mut mid, b)| {
                    mid.insert(0, a);
                    mid.push(b);
                    mid
                }
            )
        ]
    }

    fn version() -> impl Strategy<Value = Version> {
        prop_oneof![Just(Version::Http10), Just(Version::Http11)]
    }

    proptest! {
        #[test]
        fn request_round_trips(
            method in token(),
            target in "/[!-~]{0,40}",
            version in version(),
            headers in proptest::collection::vec((token(), value()), 0..10),
            len in any::<u64>(),
        ) {
            let mut out = Vec::new();
            request_line(&mut out, &method, &target, version).unwrap();
            for (n, v) in &headers {
                header(&mut out, n, v).unwrap();
            }
            content_length(&mut out, len);
            end_head(&mut out);
            let mut hs = [EMPTY_HEADER; 16];
            let Status::Complete(h) = HeadParser::default().parse_request(&out, &mut hs).unwrap()
            else {
                panic!("partial");
            };
            prop_assert_eq!(h.method, method.as_str());
            prop_assert_eq!(h.target, target.as_str());
            prop_assert_eq!(h.version, version);
            prop_assert_eq!(h.len, out.len());
            prop_assert_eq!(h.headers.len(), headers.len() + 1);
            for (got, (n, v)) in h.headers.iter().zip(&headers) {
                prop_assert_eq!(got.name, n.as_str());
                prop_assert_eq!(got.value, v.as_slice());
            }
            let cl = crate::http::find_header_str(h.headers, "content-length").unwrap();
            prop_assert_eq!(cl.parse::<u64>().unwrap(), len);
        }

        #[test]
        fn response_round_trips(
            status in 100u16..=999,
            version in version(),
            headers in proptest::collection::vec((token(), value()), 0..10),
            now in 0i64..=253_402_300_799,
        ) {
            let mut out = Vec::new();
            status_line(&mut out, version, status).unwrap();
            date(&mut out, now);
            for (n, v) in &headers {
                header(&mut out, n, v).unwrap();
            }
            end_head(&mut out);
            let mut hs = [EMPTY_HEADER; 16];
            let Status::Complete(h) = HeadParser::default().parse_response(&out, &mut hs).unwrap()
            else {
                panic!("partial");
            };
            prop_assert_eq!(h.status, status);
            prop_assert_eq!(h.reason, reason_phrase(status));
            prop_assert_eq!(h.version, version);
            prop_assert_eq!(h.len, out.len());
            let d = crate::http::find_header_str(h.headers, "date").unwrap();
            prop_assert_eq!(DateTime::parse_http(d).map(DateTime::to_unix), Some(now));
            for (got, (n, v)) in h.headers[1..].iter().zip(&headers) {
                prop_assert_eq!(got.name, n.as_str());
                prop_assert_eq!(got.value, v.as_slice());
            }
        }
    }
}
