//! The canonical request and the string to sign, exactly as S3 defines them.
//!
//! Everything is written through a [`Sink`]: the public functions fill a `Vec`, verification
//! feeds the bytes straight into SHA-256 / HMAC, so a request is checked without building it.

use alloc::borrow::Cow;
use alloc::string::String;
use alloc::vec::Vec;
use percent_encoding::percent_encode;
use sha2::digest::Update;

use super::{ALGORITHM, CredentialScope, Hex64, RequestParts, SCOPE_TERMINATOR, query, sha256};
use crate::http::Header;
use crate::s3::S3Result;
use crate::s3::uri::{AWS_ENCODE, AWS_ENCODE_PATH, decode_bytes};
use crate::time::DateTime;

/// Where canonical bytes go: a buffer, or a hash / MAC that consumes them as they come.
pub(crate) trait Sink {
    /// Append `bytes`.
    fn put(&mut self, bytes: &[u8]);
}

impl Sink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

/// A [`Sink`] that hashes (SHA-256) or MACs (HMAC) what is put into it.
pub(crate) struct Hashing<D>(pub(crate) D);

impl<D: Update> Sink for Hashing<D> {
    fn put(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

/// Split `s` at every `sep` byte (ASCII), as `str::split(char)` does but with the `memchr`
/// crate's search (`core`'s char searcher costs a call per piece and a byte loop).
pub(crate) fn split_ascii(s: &str, sep: u8) -> impl Iterator<Item = &str> {
    let mut rest = Some(s);
    core::iter::from_fn(move || {
        let r = rest?;
        match memchr::memchr(sep, r.as_bytes()) {
            Some(i) => {
                // `sep` is ASCII, so both sides are on char boundaries.
                rest = r.get(i + 1..);
                r.get(..i)
            }
            None => {
                rest = None;
                Some(r)
            }
        }
    })
}

/// Split `s` at its first `sep` byte (ASCII), as `str::split_once(char)` does.
pub(crate) fn split_once_ascii(s: &str, sep: u8) -> Option<(&str, &str)> {
    let i = memchr::memchr(sep, s.as_bytes())?;
    Some((s.get(..i)?, s.get(i + 1..)?))
}

/// `time` in SigV4's basic form `yyyymmddThhmmssZ`, written without `fmt`.
///
/// `None` for years outside `0..=9999`, which `DateTime::amz` writes with more or other digits.
pub(crate) fn amz_bytes(t: DateTime) -> Option<[u8; 16]> {
    let year = u16::try_from(t.year).ok().filter(|y| *y <= 9999)?;
    let two = |n: u8| [b'0' + n / 10 % 10, b'0' + n % 10];
    let [y0, y1] = two((year / 100) as u8);
    let [y2, y3] = two((year % 100) as u8);
    let [mo0, mo1] = two(t.month);
    let [d0, d1] = two(t.day);
    let [h0, h1] = two(t.hour);
    let [mi0, mi1] = two(t.minute);
    let [s0, s1] = two(t.second);
    let ok = t.month < 100 && t.day < 100 && t.hour < 100 && t.minute < 100 && t.second < 100;
    ok.then_some([
        y0, y1, y2, y3, mo0, mo1, d0, d1, b'T', h0, h1, mi0, mi1, s0, s1, b'Z',
    ])
}

/// Append the canonical URI of a raw (percent-encoded, as sent) path.
///
/// S3 decodes the path and encodes it once again with SigV4's `UriEncode` (keeping `/`); there
/// is no second encoding and no dot-segment normalisation. An empty path is `/`.
pub fn canonical_path(raw_path: &str, out: &mut Vec<u8>) -> S3Result<()> {
    write_path(raw_path, out)
}

fn write_path(raw_path: &str, out: &mut impl Sink) -> S3Result<()> {
    if raw_path.is_empty() {
        out.put(b"/");
        return Ok(());
    }
    if is_unreserved(raw_path.as_bytes(), true) {
        out.put(raw_path.as_bytes());
        return Ok(());
    }
    let decoded = decode_bytes(raw_path.as_bytes(), false)?;
    for chunk in percent_encode(&decoded, AWS_ENCODE_PATH) {
        out.put(chunk.as_bytes());
    }
    Ok(())
}

/// Append the canonical query string of a raw query (as sent, without `?`).
///
/// Each name and value is decoded (`+` as space, as S3 reads query strings) and encoded again
/// with `UriEncode`; pairs are sorted by encoded name, then value; a missing value is `name=`.
/// With `skip_signature` the `X-Amz-Signature` parameter is left out (presigned URLs).
pub fn canonical_query(raw_query: &str, skip_signature: bool, out: &mut Vec<u8>) -> S3Result<()> {
    write_query(raw_query, skip_signature, out)
}

/// Whether decoding and `UriEncode` both leave `raw` as it is: only `A-Z a-z 0-9 - _ . ~`
/// (and `/` with `keep_slash`).
fn is_unreserved(raw: &[u8], keep_slash: bool) -> bool {
    // Comparisons only, no early exit: it runs a vector at a time.
    raw.iter().fold(true, |ok, &b| {
        let letter = (b | 0x20).wrapping_sub(b'a') < 26;
        let digit = b.wrapping_sub(b'0') < 10;
        let mark = (b == b'-') | (b == b'_') | (b == b'.') | (b == b'~');
        ok & (letter | digit | mark | (keep_slash & (b == b'/')))
    })
}

/// A query name or value, decoded (`+` as space) and `UriEncode`d again.
struct Component<'a> {
    decoded: Cow<'a, [u8]>,
    encoded: Cow<'a, str>,
}

fn component(raw: &str) -> S3Result<Component<'_>> {
    if is_unreserved(raw.as_bytes(), false) {
        return Ok(Component {
            decoded: Cow::Borrowed(raw.as_bytes()),
            encoded: Cow::Borrowed(raw),
        });
    }
    let decoded = decode_bytes(raw.as_bytes(), true)?;
    let encoded = Cow::Owned(percent_encode(&decoded, AWS_ENCODE).collect::<String>());
    Ok(Component { decoded, encoded })
}

/// Query pairs sorted on the stack; more go to the heap (requests carry a few at most).
const INLINE_PAIRS: usize = 8;

fn write_query(raw_query: &str, skip_signature: bool, out: &mut impl Sink) -> S3Result<()> {
    type Pair<'a> = (Cow<'a, str>, Cow<'a, str>);
    let mut inline: [Pair<'_>; INLINE_PAIRS] = Default::default();
    let mut len = 0;
    let mut heap: Vec<Pair<'_>> = Vec::new();
    for piece in split_ascii(raw_query, b'&').filter(|p| !p.is_empty()) {
        let (name, value) = split_once_ascii(piece, b'=').unwrap_or((piece, ""));
        let name = component(name)?;
        if skip_signature && *name.decoded == *query::X_AMZ_SIGNATURE.as_bytes() {
            continue;
        }
        let pair = (name.encoded, component(value)?.encoded);
        match inline.get_mut(len) {
            Some(slot) if heap.is_empty() => {
                *slot = pair;
                len += 1;
            }
            _ => {
                if heap.is_empty() {
                    heap.extend(inline.iter_mut().map(core::mem::take));
                }
                heap.push(pair);
            }
        }
    }
    let pairs = if heap.is_empty() {
        inline.get_mut(..len).unwrap_or_default()
    } else {
        &mut heap[..]
    };
    pairs.sort_unstable();
    for (i, (n, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.put(b"&");
        }
        out.put(n.as_bytes());
        out.put(b"=");
        out.put(v.as_bytes());
    }
    Ok(())
}

/// Append the canonical headers for a `;`-separated signed-header list, one `name:value\n` each.
///
/// Names are lower-cased; values are trimmed and inner runs of spaces collapsed to one; a header
/// sent several times has its values joined with `,` in the order sent. A signed header that is
/// absent contributes an empty value.
pub fn canonical_headers(headers: &[Header<'_>], signed_headers: &str, out: &mut Vec<u8>) {
    SignedHeaders::new(signed_headers, headers).write(out);
}

/// Signed names and request headers matched without allocating; longer lists are scanned
/// instead (SDK requests carry about ten of each).
const INLINE_NAMES: usize = 32;
const INLINE_HEADERS: usize = 64;
const NOT_SIGNED: u8 = u8::MAX;

/// A signed-header list matched once against the request's headers, for both the check that
/// `x-amz-*` headers are signed and the canonical headers (instead of a scan of one list per
/// entry of the other, twice).
pub(crate) struct SignedHeaders<'l, 'h, 'b> {
    list: &'l str,
    headers: &'h [Header<'b>],
    inline: Option<Matched<'l>>,
}

struct Matched<'l> {
    names: [&'l str; INLINE_NAMES],
    len: usize,
    /// Per request header: the first signed name equal to its name, or `NOT_SIGNED`.
    owner: [u8; INLINE_HEADERS],
    /// Whether some name needs lower-casing.
    has_upper: bool,
}

impl<'l, 'h, 'b> SignedHeaders<'l, 'h, 'b> {
    /// Match `list` (`;`-separated names, any case) against `headers`.
    pub(crate) fn new(list: &'l str, headers: &'h [Header<'b>]) -> Self {
        Self {
            list,
            headers,
            inline: Matched::new(list, headers),
        }
    }

    /// The list as sent.
    pub(crate) fn list(&self) -> &'l str {
        self.list
    }

    /// Whether the list holds exactly `name`.
    pub(crate) fn lists(&self, name: &str) -> bool {
        match &self.inline {
            Some(m) => m.names.get(..m.len).unwrap_or_default().contains(&name),
            None => split_ascii(self.list, b';').any(|n| n == name),
        }
    }

    /// Whether request header `i` is named in the list (ASCII case-insensitive).
    pub(crate) fn is_signed(&self, i: usize) -> bool {
        match &self.inline {
            Some(m) => m.owner.get(i).is_some_and(|&o| o != NOT_SIGNED),
            None => self.headers.get(i).is_some_and(|h| {
                split_ascii(self.list, b';').any(|n| n.eq_ignore_ascii_case(h.name))
            }),
        }
    }

    /// The canonical headers: for each listed name, in list order, the lower-cased name, `:`,
    /// the normalised values of the headers so named, in the order sent, joined by `,`, `\n`.
    fn write(&self, out: &mut impl Sink) {
        let Some(m) = &self.inline else {
            for name in split_ascii(self.list, b';') {
                put_lowercase(name, out);
                out.put(b":");
                let named = self
                    .headers
                    .iter()
                    .filter(|h| h.name.eq_ignore_ascii_case(name));
                put_values(named, out);
            }
            return;
        };
        let names = m.names.get(..m.len).unwrap_or_default();
        for name in names {
            if m.has_upper {
                put_lowercase(name, out);
            } else {
                out.put(name.as_bytes());
            }
            out.put(b":");
            // A name listed twice owns its headers through its first occurrence.
            let first = names.iter().position(|n| n.eq_ignore_ascii_case(name));
            let first = first.map_or(NOT_SIGNED, |k| k as u8);
            let named = self
                .headers
                .iter()
                .zip(&m.owner)
                .filter(|&(_, &o)| o == first)
                .map(|(h, _)| h);
            put_values(named, out);
        }
    }
}

impl<'l> Matched<'l> {
    fn new(list: &'l str, headers: &[Header<'_>]) -> Option<Self> {
        if headers.len() > INLINE_HEADERS {
            return None;
        }
        let mut names = [""; INLINE_NAMES];
        let mut len = 0;
        for name in split_ascii(list, b';') {
            *names.get_mut(len)? = name;
            len += 1;
        }
        let listed = names.get(..len)?;
        let mut owner = [NOT_SIGNED; INLINE_HEADERS];
        for (o, h) in owner.iter_mut().zip(headers) {
            if let Some(k) = listed
                .iter()
                .position(|n| n.len() == h.name.len() && same_name(n, h.name))
            {
                // `k` < INLINE_NAMES < NOT_SIGNED.
                *o = k as u8;
            }
        }
        Some(Self {
            names,
            len,
            owner,
            has_upper: list.bytes().fold(false, |u, b| u | b.is_ascii_uppercase()),
        })
    }
}

/// ASCII case-insensitive equality, trying the exact match SDKs (lower-case names) give first.
fn same_name(a: &str, b: &str) -> bool {
    a == b || a.eq_ignore_ascii_case(b)
}

fn put_lowercase(name: &str, out: &mut impl Sink) {
    if name.bytes().any(|b| b.is_ascii_uppercase()) {
        for b in name.bytes() {
            out.put(&[b.to_ascii_lowercase()]);
        }
    } else {
        out.put(name.as_bytes());
    }
}

/// The values of `named`, normalised and joined by `,`, then `\n`.
fn put_values<'b>(named: impl Iterator<Item = &'b Header<'b>>, out: &mut impl Sink) {
    for (i, h) in named.enumerate() {
        if i > 0 {
            out.put(b",");
        }
        put_normalized_value(h.value, out);
    }
    out.put(b"\n");
}

/// Trim spaces and tabs at both ends and collapse inner runs of spaces to one.
fn put_normalized_value(value: &[u8], out: &mut impl Sink) {
    let is_ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = value.iter().position(|b| !is_ows(b)).unwrap_or(value.len());
    let end = value
        .iter()
        .rposition(|b| !is_ows(b))
        .map_or(start, |i| i + 1);
    let mut rest = value.get(start..end).unwrap_or_default();
    // Most values hold no space at all: one branch-free pass tells.
    if !rest.iter().fold(false, |space, &b| space | (b == b' ')) {
        out.put(rest);
        return;
    }
    // Copy up to and including each space, then skip the spaces that follow it; the trimmed
    // value does not end with a space, so nothing is left dangling.
    while let Some(i) = memchr::memchr(b' ', rest) {
        let (run, tail) = rest.split_at(i + 1);
        out.put(run);
        let skip = tail.iter().take_while(|&&b| b == b' ').count();
        rest = tail.get(skip..).unwrap_or_default();
    }
    out.put(rest);
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
    let signed = SignedHeaders::new(signed_headers, req.headers);
    write_canonical_request(req, &signed, payload_hash, presigned, &mut out)?;
    Ok(out)
}

/// [`canonical_request`] into any sink; `signed` matches `req.headers`.
fn write_canonical_request(
    req: &RequestParts<'_>,
    signed: &SignedHeaders<'_, '_, '_>,
    payload_hash: &str,
    presigned: bool,
    out: &mut impl Sink,
) -> S3Result<()> {
    out.put(req.method.as_bytes());
    out.put(b"\n");
    write_path(req.path, out)?;
    out.put(b"\n");
    write_query(req.query, presigned, out)?;
    out.put(b"\n");
    signed.write(out);
    out.put(b"\n");
    out.put(signed.list().as_bytes());
    out.put(b"\n");
    out.put(payload_hash.as_bytes());
    Ok(())
}

/// The SHA-256 of the canonical request, computed as it is written (no buffer).
///
/// `signed` must have been matched against `req.headers`.
pub(crate) fn canonical_request_sha256(
    req: &RequestParts<'_>,
    signed: &SignedHeaders<'_, '_, '_>,
    payload_hash: &str,
    presigned: bool,
) -> S3Result<[u8; 32]> {
    let mut h = Hashing(sha2::Sha256::default());
    write_canonical_request(req, signed, payload_hash, presigned, &mut h)?;
    Ok(sha2::Digest::finalize(h.0).into())
}

/// The string to sign: algorithm, request time, scope and the hex SHA-256 of the canonical request.
pub fn string_to_sign(time: DateTime, scope: &CredentialScope, canonical_request: &[u8]) -> String {
    let mut s = String::with_capacity(128);
    write_string_to_sign(time, scope, &sha256(canonical_request), |piece| {
        s.push_str(piece);
    });
    s
}

/// The pieces of the string to sign, given the canonical request's SHA-256, in order.
pub(crate) fn write_string_to_sign(
    time: DateTime,
    scope: &CredentialScope,
    canonical_sha256: &[u8; 32],
    mut put: impl FnMut(&str),
) {
    put(ALGORITHM);
    put("\n");
    match amz_bytes(time) {
        Some(b) => put(core::str::from_utf8(&b).unwrap_or_default()),
        None => put(&alloc::string::ToString::to_string(&time.amz())),
    }
    put("\n");
    put(&scope.date);
    put("/");
    put(&scope.region);
    put("/");
    put(&scope.service);
    put("/");
    put(SCOPE_TERMINATOR);
    put("\n");
    put(Hex64::of(canonical_sha256).as_str());
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

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
        // More pairs than are sorted on the stack.
        let many: Vec<String> = (0..2 * INLINE_PAIRS)
            .rev()
            .map(|i| alloc::format!("k{i:02}=v+{i}"))
            .collect();
        let many = many.join("&");
        assert_eq!(
            query(&many, false),
            reference::query(&many, false).expect("valid")
        );
        assert!(query(&many, false).starts_with("k00=v%200&k01=v%201&"));
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

    /// The straightforward forms (a scan of all headers per signed name, byte-at-a-time value
    /// normalisation, `fmt` encoding), kept as oracles for the streaming code above.
    mod reference {
        use super::*;
        use core::fmt::Write as _;

        pub fn headers(headers: &[Header<'_>], signed: &str) -> Vec<u8> {
            let mut out = Vec::new();
            for name in signed.split(';') {
                out.extend(name.bytes().map(|b| b.to_ascii_lowercase()));
                out.push(b':');
                let mut first = true;
                for h in headers.iter().filter(|h| h.name.eq_ignore_ascii_case(name)) {
                    if !first {
                        out.push(b',');
                    }
                    first = false;
                    let is_ows = |b: &u8| *b == b' ' || *b == b'\t';
                    let v = h.value;
                    let start = v.iter().position(|b| !is_ows(b)).unwrap_or(v.len());
                    let end = v.iter().rposition(|b| !is_ows(b)).map_or(start, |i| i + 1);
                    let mut prev_space = false;
                    for &b in &v[start..end] {
                        if !(b == b' ' && prev_space) {
                            out.push(b);
                        }
                        prev_space = b == b' ';
                    }
                }
                out.push(b'\n');
            }
            out
        }

        pub fn path(raw: &str) -> S3Result<String> {
            if raw.is_empty() {
                return Ok("/".into());
            }
            let decoded = decode_bytes(raw.as_bytes(), false)?;
            Ok(percent_encode(&decoded, AWS_ENCODE_PATH).to_string())
        }

        pub fn query(raw: &str, skip_signature: bool) -> S3Result<String> {
            let mut pairs: Vec<(String, String)> = Vec::new();
            for piece in raw.split('&').filter(|p| !p.is_empty()) {
                let (name, value) = piece.split_once('=').unwrap_or((piece, ""));
                let name = decode_bytes(name.as_bytes(), true)?;
                if skip_signature && *name == *query::X_AMZ_SIGNATURE.as_bytes() {
                    continue;
                }
                let value = decode_bytes(value.as_bytes(), true)?;
                let (mut n, mut v) = (String::new(), String::new());
                let _ = write!(n, "{}", percent_encode(&name, AWS_ENCODE));
                let _ = write!(v, "{}", percent_encode(&value, AWS_ENCODE));
                pairs.push((n, v));
            }
            pairs.sort_unstable();
            let joined: Vec<String> = pairs
                .iter()
                .map(|(n, v)| alloc::format!("{n}={v}"))
                .collect();
            Ok(joined.join("&"))
        }
    }

    #[test]
    fn amz_bytes_match_display() {
        for t in [0, 1_369_353_600, 253_402_300_799, -62_167_219_200] {
            let dt = DateTime::from_unix(t);
            let b = amz_bytes(dt).expect("year in 0..=9999");
            assert_eq!(core::str::from_utf8(&b), Ok(dt.amz().to_string().as_str()));
        }
        // Years Display writes with other than four digits are left to Display.
        assert_eq!(amz_bytes(DateTime::from_unix(253_402_300_800)), None);
        assert_eq!(amz_bytes(DateTime::from_unix(-62_167_219_201)), None);
        let far = DateTime::from_unix(253_402_300_800);
        let mut sts = String::new();
        write_string_to_sign(far, &CredentialScope::new(far, "r"), &[0; 32], |p| {
            sts.push_str(p);
        });
        assert!(sts.contains("\n100000101T000000Z\n"), "{sts}");
    }

    #[test]
    fn splitting_matches_str_split() {
        for s in ["", ";", "a", "a;b", ";a;;b;", "host;x-amz-date"] {
            let ours: Vec<&str> = split_ascii(s, b';').collect();
            assert_eq!(ours, s.split(';').collect::<Vec<_>>(), "{s:?}");
            assert_eq!(split_once_ascii(s, b';'), s.split_once(';'), "{s:?}");
        }
    }

    use proptest::prelude::*;

    fn header_name() -> impl Strategy<Value = String> {
        // Few distinct names in mixed case, so lists and headers often meet.
        ("[aAbB]{1,2}(-[xX])?", any::<bool>()).prop_map(
            |(n, host)| {
                if host { "Host".into() } else { n }
            },
        )
    }

    proptest! {
        /// Inline matching (and its fallback past the inline capacities) agrees with scanning.
        #[test]
        fn canonical_headers_agree_with_reference(
            headers in proptest::collection::vec(
                (header_name(), "[ \ta,]{0,8}"),
                0..(INLINE_HEADERS + 8),
            ),
            names in proptest::collection::vec(header_name(), 1..(INLINE_NAMES + 8)),
        ) {
            let hs: Vec<Header<'_>> = headers
                .iter()
                .map(|(n, v)| Header { name: n, value: v.as_bytes() })
                .collect();
            let list = names.join(";");
            let mut ours = Vec::new();
            canonical_headers(&hs, &list, &mut ours);
            prop_assert_eq!(ours, reference::headers(&hs, &list));
            let signed = SignedHeaders::new(&list, &hs);
            for (i, h) in hs.iter().enumerate() {
                let listed = list.split(';').any(|n| n.eq_ignore_ascii_case(h.name));
                prop_assert_eq!(signed.is_signed(i), listed);
            }
            prop_assert!(!signed.is_signed(hs.len()));
            for name in names.iter().map(String::as_str).chain(["host", "a-x", "zz", ""]) {
                prop_assert_eq!(signed.lists(name), list.split(';').any(|n| n == name));
            }
        }

        /// Copying unreserved paths as they are gives what decoding and encoding them gives.
        #[test]
        fn canonical_path_agrees_with_reference(raw in "([aZ09~._/+*@\\[`{ -]|%[0-9a-fA-F]{2}|%){0,16}") {
            let mut ours = Vec::new();
            let got = canonical_path(&raw, &mut ours).map(|()| ours);
            prop_assert_eq!(got, reference::path(&raw).map(String::into_bytes));
        }

        /// Borrowing unchanged components gives the same canonical query as re-encoding all.
        #[test]
        fn canonical_query_agrees_with_reference(
            raw in "([aZ0~._\\-+*/= ]|%[0-9a-fA-F]{2}|%|X-Amz-Signature|&){0,24}",
            skip in any::<bool>(),
        ) {
            let mut ours = Vec::new();
            let got = canonical_query(&raw, skip, &mut ours).map(|()| ours);
            let want = reference::query(&raw, skip).map(String::into_bytes);
            prop_assert_eq!(got, want);
        }
    }
}
