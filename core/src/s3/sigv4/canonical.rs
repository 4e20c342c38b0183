//! The canonical request and the string to sign, exactly as S3 defines them.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write as _;
use percent_encoding::percent_encode;

use super::{ALGORITHM, CredentialScope, Hex64, RequestParts, query, sha256};
use crate::http::Header;
use crate::s3::S3Result;
use crate::s3::uri::{AWS_ENCODE, AWS_ENCODE_PATH, decode_bytes};
use crate::time::DateTime;

/// Append the canonical URI of a raw (percent-encoded, as sent) path.
///
/// S3 decodes the path and encodes it once again with SigV4's `UriEncode` (keeping `/`); there
/// is no second encoding and no dot-segment normalisation. An empty path is `/`.
pub fn canonical_path(raw_path: &str, out: &mut Vec<u8>) -> S3Result<()> {
    if raw_path.is_empty() {
        out.push(b'/');
        return Ok(());
    }
    let decoded = decode_bytes(raw_path.as_bytes(), false)?;
    // Writing into a Vec through fmt cannot fail.
    let _ = write!(
        VecWriter(out),
        "{}",
        percent_encode(&decoded, AWS_ENCODE_PATH)
    );
    Ok(())
}

/// Append the canonical query string of a raw query (as sent, without `?`).
///
/// Each name and value is decoded (`+` as space, as S3 reads query strings) and encoded again
/// with `UriEncode`; pairs are sorted by encoded name, then value; a missing value is `name=`.
/// With `skip_signature` the `X-Amz-Signature` parameter is left out (presigned URLs).
pub fn canonical_query(raw_query: &str, skip_signature: bool, out: &mut Vec<u8>) -> S3Result<()> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for piece in raw_query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = piece.split_once('=').unwrap_or((piece, ""));
        let name = decode_bytes(name.as_bytes(), true)?;
        if skip_signature && *name == *query::X_AMZ_SIGNATURE.as_bytes() {
            continue;
        }
        let value = decode_bytes(value.as_bytes(), true)?;
        let mut n = String::with_capacity(name.len());
        let mut v = String::with_capacity(value.len());
        let _ = write!(n, "{}", percent_encode(&name, AWS_ENCODE));
        let _ = write!(v, "{}", percent_encode(&value, AWS_ENCODE));
        pairs.push((n, v));
    }
    pairs.sort_unstable();
    for (i, (n, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push(b'&');
        }
        out.extend_from_slice(n.as_bytes());
        out.push(b'=');
        out.extend_from_slice(v.as_bytes());
    }
    Ok(())
}

/// Append the canonical headers for a `;`-separated signed-header list, one `name:value\n` each.
///
/// Names are lower-cased; values are trimmed and inner runs of spaces collapsed to one; a header
/// sent several times has its values joined with `,` in the order sent. A signed header that is
/// absent contributes an empty value.
pub fn canonical_headers(headers: &[Header<'_>], signed_headers: &str, out: &mut Vec<u8>) {
    for name in signed_headers.split(';') {
        out.extend(name.bytes().map(|b| b.to_ascii_lowercase()));
        out.push(b':');
        let mut first = true;
        for h in headers.iter().filter(|h| h.name.eq_ignore_ascii_case(name)) {
            if !first {
                out.push(b',');
            }
            first = false;
            push_normalized_value(h.value, out);
        }
        out.push(b'\n');
    }
}

fn push_normalized_value(value: &[u8], out: &mut Vec<u8>) {
    let is_ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = value.iter().position(|b| !is_ows(b)).unwrap_or(value.len());
    let end = value
        .iter()
        .rposition(|b| !is_ows(b))
        .map_or(start, |i| i + 1);
    let mut prev_space = false;
    for &b in value.get(start..end).unwrap_or_default() {
        if b == b' ' {
            if !prev_space {
                out.push(b' ');
            }
            prev_space = true;
        } else {
            out.push(b);
            prev_space = false;
        }
    }
}

/// The canonical request (bytes: header values need not be UTF-8).
///
/// `signed_headers` is the `;`-separated lower-case list as it appears in `SignedHeaders=`;
/// `payload_hash` is the `x-amz-content-sha256` value (or `UNSIGNED-PAYLOAD` for presigned URLs);
/// with `presigned`, `X-Amz-Signature` is left out of the query.
pub fn canonical_request(
    req: &RequestParts<'_>,
    signed_headers: &str,
    payload_hash: &str,
    presigned: bool,
) -> S3Result<Vec<u8>> {
    let mut out = Vec::with_capacity(
        req.method.len() + req.path.len() + req.query.len() + 2 * signed_headers.len() + 256,
    );
    out.extend_from_slice(req.method.as_bytes());
    out.push(b'\n');
    canonical_path(req.path, &mut out)?;
    out.push(b'\n');
    canonical_query(req.query, presigned, &mut out)?;
    out.push(b'\n');
    canonical_headers(req.headers, signed_headers, &mut out);
    out.push(b'\n');
    out.extend_from_slice(signed_headers.as_bytes());
    out.push(b'\n');
    out.extend_from_slice(payload_hash.as_bytes());
    Ok(out)
}

/// The string to sign: algorithm, request time, scope and the hex SHA-256 of the canonical request.
pub fn string_to_sign(time: DateTime, scope: &CredentialScope, canonical_request: &[u8]) -> String {
    let hash = Hex64::of(&sha256(canonical_request));
    let mut s = String::with_capacity(128);
    let _ = write!(s, "{ALGORITHM}\n{}\n{scope}\n{hash}", time.amz());
    s
}

/// `fmt::Write` into a byte vector (percent-encoded output is ASCII).
struct VecWriter<'a>(&'a mut Vec<u8>);

impl core::fmt::Write for VecWriter<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(raw: &str, skip: bool) -> String {
        let mut out = Vec::new();
        canonical_query(raw, skip, &mut out).expect("valid query");
        String::from_utf8(out).expect("ascii")
    }

    fn path(raw: &str) -> String {
        let mut out = Vec::new();
        canonical_path(raw, &mut out).expect("valid path");
        String::from_utf8(out).expect("ascii")
    }

    #[test]
    fn path_is_encoded_once() {
        assert_eq!(path(""), "/");
        assert_eq!(path("/test.txt"), "/test.txt");
        // `$` sent raw or encoded canonicalises the same (the AWS PUT example's key).
        assert_eq!(path("/test$file.text"), "/test%24file.text");
        assert_eq!(path("/test%24file.text"), "/test%24file.text");
        // No double encoding: `%20` stays `%20`, not `%2520`.
        assert_eq!(path("/b/my%20key"), "/b/my%20key");
        assert_eq!(path("/b/a+b"), "/b/a%2Bb", "`+` in a path is a plus");
        assert_eq!(path("/b/caf%C3%A9"), "/b/caf%C3%A9");
        assert_eq!(
            path("/b/%2F/x"),
            "/b///x",
            "S3 keys are decoded, slashes included"
        );
        assert_eq!(
            path("/b/./../c"),
            "/b/./../c",
            "no dot-segment normalisation"
        );
        let mut out = Vec::new();
        assert!(canonical_path("/bad%zz", &mut out).is_err());
    }

    #[test]
    fn query_is_sorted_and_reencoded() {
        assert_eq!(query("", false), "");
        assert_eq!(query("prefix=J&max-keys=2", false), "max-keys=2&prefix=J");
        assert_eq!(query("lifecycle", false), "lifecycle=");
        assert_eq!(query("acl=", false), "acl=");
        assert_eq!(query("b=2&a=2&a=1", false), "a=1&a=2&b=2");
        assert_eq!(query("prefix=a b*~", false), "prefix=a%20b%2A~");
        assert_eq!(query("prefix=a+b&x=%2B", false), "prefix=a%20b&x=%2B");
        assert_eq!(query("k=%7e%2f", false), "k=~%2F");
        assert_eq!(query("a=1&&b=2&", false), "a=1&b=2");
        assert_eq!(
            query("X-Amz-Signature=abc&X-Amz-Date=1", true),
            "X-Amz-Date=1"
        );
        assert_eq!(
            query("X-Amz-Signature=abc&X-Amz-Date=1", false),
            "X-Amz-Date=1&X-Amz-Signature=abc"
        );
        // Sorted by encoded name: `%` (0x25) sorts before letters.
        assert_eq!(query("b=1&%21=2", false), "%21=2&b=1");
        let mut out = Vec::new();
        assert!(canonical_query("a=%", false, &mut out).is_err());
    }

    #[test]
    fn header_values_are_trimmed_and_collapsed() {
        let hs = [
            Header {
                name: "Host",
                value: b"example.com",
            },
            Header {
                name: "My-Header1",
                value: b"    value1",
            },
            Header {
                name: "my-header2",
                value: b"\"a   b   c\"  ",
            },
            Header {
                name: "my-header1",
                value: b"value2  ",
            },
        ];
        let mut out = Vec::new();
        canonical_headers(&hs, "host;my-header1;my-header2;x-absent", &mut out);
        assert_eq!(
            core::str::from_utf8(&out).expect("ascii"),
            "host:example.com\nmy-header1:value1,value2\nmy-header2:\"a b c\"\nx-absent:\n"
        );
    }
}
