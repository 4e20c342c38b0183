//! Percent-decoding and AWS URI encoding of paths and query strings.
//!
//! Decoding is strict (S3 rejects `%` not followed by two hex digits, and keys must be UTF-8);
//! encoding follows SigV4's `UriEncode`: everything but `A-Z a-z 0-9 - _ . ~` is encoded, and
//! `/` too except in paths.

use alloc::borrow::Cow;
use alloc::vec::Vec;
use core::fmt;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_encode};

use super::{S3Error, S3ErrorCode, S3Result};

/// SigV4 `UriEncode` set for query names and values (and keys outside paths).
pub const AWS_ENCODE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// SigV4 `UriEncode` set for paths: as [`AWS_ENCODE`] but `/` is kept.
pub const AWS_ENCODE_PATH: &AsciiSet = &AWS_ENCODE.remove(b'/');

/// Percent-decode raw bytes; `%` must be followed by two hex digits.
///
/// With `plus_as_space` a `+` becomes a space (form encoding, as S3 does in query strings).
pub fn decode_bytes(raw: &[u8], plus_as_space: bool) -> S3Result<Cow<'_, [u8]>> {
    if !raw
        .iter()
        .any(|&b| b == b'%' || (plus_as_space && b == b'+'))
    {
        return Ok(Cow::Borrowed(raw));
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        match raw[i] {
            b'%' => {
                let hi = raw.get(i + 1).and_then(|&c| hex(c));
                let lo = raw.get(i + 2).and_then(|&c| hex(c));
                let (Some(hi), Some(lo)) = (hi, lo) else {
                    return Err(S3Error::with_message(
                        S3ErrorCode::InvalidArgument,
                        "invalid percent-encoding in the request URI",
                    ));
                };
                out.push(hi << 4 | lo);
                i += 3;
            }
            b'+' if plus_as_space => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Ok(Cow::Owned(out))
}

/// Percent-decode to UTF-8; invalid escapes or invalid UTF-8 are an `InvalidArgument` error.
pub fn decode(raw: &str, plus_as_space: bool) -> S3Result<Cow<'_, str>> {
    match decode_bytes(raw.as_bytes(), plus_as_space)? {
        Cow::Borrowed(_) => Ok(Cow::Borrowed(raw)),
        Cow::Owned(v) => alloc::string::String::from_utf8(v)
            .map(Cow::Owned)
            .map_err(|_| {
                S3Error::with_message(
                    S3ErrorCode::InvalidArgument,
                    "the request URI is not valid UTF-8",
                )
            }),
    }
}

/// SigV4 `UriEncode` of a query name or value (or anything where `/` must be encoded).
pub fn encode(s: &str) -> impl fmt::Display + '_ {
    percent_encode(s.as_bytes(), AWS_ENCODE)
}

/// SigV4 `UriEncode` of a path (`/` kept).
pub fn encode_path(s: &str) -> impl fmt::Display + '_ {
    percent_encode(s.as_bytes(), AWS_ENCODE_PATH)
}

fn hex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// The request-target without `scheme://authority` (absolute-form targets), as SigV4 and
/// routing read it.
pub fn origin_form(target: &str) -> &str {
    if target.starts_with('/') {
        return target;
    }
    let rest = target.split_once("://").map_or(target, |(_, r)| r);
    match rest.find(['/', '?']) {
        Some(i) => rest.get(i..).unwrap_or("/"),
        None => "/",
    }
}

/// The `Resource` of an error response: the request's decoded path (as sent if it does not
/// decode).
pub fn resource(target: &str) -> alloc::string::String {
    use alloc::borrow::ToOwned as _;
    let origin = origin_form(target);
    let path = origin.split_once('?').map_or(origin, |(p, _)| p);
    decode(path, false).map_or_else(|_| path.to_owned(), Cow::into_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origin_form_and_resource() {
        assert_eq!(origin_form("/b/k?x=1"), "/b/k?x=1");
        assert_eq!(origin_form("http://h:9000/b/k?x"), "/b/k?x");
        assert_eq!(origin_form("http://h"), "/");
        assert_eq!(resource("/b/my%20key?acl"), "/b/my key");
        assert_eq!(resource("/b/%zz"), "/b/%zz");
    }
    use alloc::string::ToString;

    #[test]
    fn decodes_strictly() {
        assert_eq!(decode("a%20b%2Fc", false).expect("valid"), "a b/c");
        assert_eq!(decode("a+b", true).expect("valid"), "a b");
        assert_eq!(decode("a+b", false).expect("valid"), "a+b");
        assert!(decode("a%2", false).is_err());
        assert!(decode("a%zz", false).is_err());
        assert!(decode("%C3%28", false).is_err(), "invalid UTF-8");
        assert_eq!(decode("caf%C3%A9", false).expect("valid"), "café");
    }

    #[test]
    fn encodes_like_sigv4() {
        assert_eq!(encode("a b/c~d_e.f-g*").to_string(), "a%20b%2Fc~d_e.f-g%2A");
        assert_eq!(
            encode_path("/photos/my pic+1.jpg").to_string(),
            "/photos/my%20pic%2B1.jpg"
        );
        assert_eq!(encode("café").to_string(), "caf%C3%A9");
    }

    #[test]
    fn decode_inverts_encode() {
        for s in ["", "plain", "spaces and / slashes", "ünïcødé ☃", "%41+=&?#"] {
            let e = encode(s).to_string();
            assert_eq!(decode(&e, false).expect("encoded input decodes"), s);
        }
    }
}
