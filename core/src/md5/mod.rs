//! Streaming MD5, S3 ETags and `Content-MD5` values; many messages at once in [`lanes`].
//!
//! [`Md5Sink`] is an `embedded_io::Write` over [`Md5State`] (`md-5`'s compression function),
//! so bodies can be hashed while they stream. [`lanes`] hashes many messages together in SIMD
//! lanes, and [`scheduler`] lets independent streams share those lanes; [`shared`] (with `std`) is
//! that scheduler behind a mutex, for threads that hash their streams together. ETags are formatted
//! into fixed-size stack strings: no allocation per object.

use core::fmt;

use embedded_io::{ErrorType, Write};

pub mod lanes;
#[cfg(feature = "alloc")]
pub mod scheduler;
#[cfg(feature = "std")]
pub mod shared;
mod simd;

pub use lanes::{Backend, BackendKind, Md5State};

/// An MD5 digest.
pub type Md5Digest = [u8; 16];

/// MD5 of `data` in one call.
pub fn md5(data: &[u8]) -> Md5Digest {
    let mut s = Md5State::new();
    s.update(data);
    s.finalize()
}

/// A streaming MD5 hasher that is an `embedded_io::Write` sink.
#[derive(Debug, Clone, Default)]
pub struct Md5Sink {
    state: Md5State,
}

impl Md5Sink {
    /// A sink that has seen no bytes.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed `data`.
    pub fn update(&mut self, data: &[u8]) {
        self.state.update(data);
    }

    /// Bytes fed so far.
    pub fn len(&self) -> u64 {
        self.state.len()
    }

    /// Whether no bytes were fed.
    pub fn is_empty(&self) -> bool {
        self.state.is_empty()
    }

    /// The digest of everything fed.
    pub fn finalize(self) -> Md5Digest {
        self.state.finalize()
    }
}

impl ErrorType for Md5Sink {
    type Error = core::convert::Infallible;
}

impl Write for Md5Sink {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        self.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// An S3 ETag as sent on the wire: quoted lower-case hex, with `-N` for multipart objects.
///
/// Held inline (at most `"` + 32 hex + `-10000` + `"` = 40 bytes).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ETag {
    buf: [u8; 40],
    len: u8,
}

impl ETag {
    /// The ETag of a single-part object: `"<md5 hex>"`.
    pub fn single(digest: &Md5Digest) -> Self {
        let mut e = Self {
            buf: [0; 40],
            len: 0,
        };
        e.push(b'"');
        e.push_hex(digest);
        e.push(b'"');
        e
    }

    /// The ETag of a multipart object from its parts' MD5 digests, in part order.
    pub fn multipart<'a>(part_digests: impl IntoIterator<Item = &'a Md5Digest>) -> Self {
        let mut m = MultipartETag::new();
        for d in part_digests {
            m.push_part(d);
        }
        m.finish()
    }

    /// The ETag as text, quotes included.
    pub fn as_str(&self) -> &str {
        // Only ASCII is ever pushed.
        core::str::from_utf8(&self.buf[..usize::from(self.len)]).unwrap_or_default()
    }

    /// The ETag without its surrounding quotes.
    pub fn unquoted(&self) -> &str {
        let s = self.as_str();
        s.strip_prefix('"')
            .and_then(|s| s.strip_suffix('"'))
            .unwrap_or(s)
    }

    /// Parse a quoted or unquoted ETag as clients send it back (e.g. in CompleteMultipartUpload).
    pub fn parse(s: &str) -> Option<Self> {
        let inner = s
            .strip_prefix('"')
            .and_then(|s| s.strip_suffix('"'))
            .unwrap_or(s);
        let (hex, parts) = match inner.split_once('-') {
            Some((h, n)) => (h, Some(n)),
            None => (inner, None),
        };
        if hex.len() != 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        if let Some(n) = parts
            && (n.is_empty() || n.len() > 5 || !n.bytes().all(|b| b.is_ascii_digit()))
        {
            return None;
        }
        let mut e = Self {
            buf: [0; 40],
            len: 0,
        };
        e.push(b'"');
        for b in inner.bytes() {
            e.push(b.to_ascii_lowercase());
        }
        e.push(b'"');
        Some(e)
    }

    fn push(&mut self, b: u8) {
        if let Some(slot) = self.buf.get_mut(usize::from(self.len)) {
            *slot = b;
            self.len += 1;
        }
    }

    fn push_hex(&mut self, bytes: &[u8]) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        for &b in bytes {
            self.push(HEX[usize::from(b >> 4)]);
            self.push(HEX[usize::from(b & 15)]);
        }
    }
}

impl fmt::Display for ETag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for ETag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ETag({})", self.as_str())
    }
}

/// Builds a multipart ETag part by part: MD5 of the concatenated binary part digests, then `-N`.
#[derive(Debug, Clone, Default)]
pub struct MultipartETag {
    hasher: Md5State,
    parts: u32,
}

impl MultipartETag {
    /// A builder with no parts.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add the next part's MD5 digest.
    pub fn push_part(&mut self, digest: &Md5Digest) {
        self.hasher.update(digest);
        self.parts += 1;
    }

    /// The finished `"<hex>-N"` ETag.
    pub fn finish(self) -> ETag {
        let digest = self.hasher.finalize();
        let mut e = ETag {
            buf: [0; 40],
            len: 0,
        };
        e.push(b'"');
        e.push_hex(&digest);
        e.push(b'-');
        let mut n = [0u8; 10];
        let mut i = n.len();
        let mut p = self.parts;
        loop {
            i -= 1;
            n[i] = b'0' + (p % 10) as u8;
            p /= 10;
            if p == 0 {
                break;
            }
        }
        for &d in &n[i..] {
            e.push(d);
        }
        e.push(b'"');
        e
    }
}

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// The `Content-MD5` header value of a digest: base64 of the 16 bytes (24 characters).
pub fn content_md5(digest: &Md5Digest) -> ContentMd5 {
    let mut buf = [0u8; 24];
    // 16 bytes always encode to exactly 24 base64 characters.
    let n = base64::Engine::encode_slice(&B64, digest, &mut buf).unwrap_or(0);
    ContentMd5 { buf, len: n as u8 }
}

/// A `Content-MD5` header value held inline.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ContentMd5 {
    buf: [u8; 24],
    len: u8,
}

impl ContentMd5 {
    /// The header value.
    pub fn as_str(&self) -> &str {
        core::str::from_utf8(&self.buf[..usize::from(self.len)]).unwrap_or_default()
    }
}

impl fmt::Display for ContentMd5 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for ContentMd5 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ContentMd5({})", self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::md5::Digest;
    use proptest::prelude::*;

    /// RFC 1321, appendix A.5 (also run through every lane kernel, `lanes::tests`).
    pub(super) const RFC1321: [(&[u8], &str); 7] = [
        (b"", "d41d8cd98f00b204e9800998ecf8427e"),
        (b"a", "0cc175b9c0f1b6a831c399e269772661"),
        (b"abc", "900150983cd24fb0d6963f7d28e17f72"),
        (b"message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
        (
            b"abcdefghijklmnopqrstuvwxyz",
            "c3fcd3d76192e4007dfb496cca67e13b",
        ),
        (
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
            "d174ab98d277d9f5a5611c2c9f419d9f",
        ),
        (
            b"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
            "57edf4a22be3c955ac49da2e2107b67a",
        ),
    ];

    fn hex(d: &Md5Digest) -> ETag {
        ETag::single(d)
    }

    #[test]
    fn rfc1321_test_suite() {
        for (input, want) in RFC1321 {
            assert_eq!(hex(&md5(input)).unquoted(), want);
            let reference: Md5Digest = ::md5::Md5::digest(input).into();
            assert_eq!(md5(input), reference);
            let mut sink = Md5Sink::new();
            for b in input {
                sink.write_all(core::slice::from_ref(b))
                    .expect("infallible");
            }
            assert_eq!(sink.len(), input.len() as u64);
            assert_eq!(hex(&sink.finalize()).unquoted(), want, "byte at a time");
        }
    }

    proptest! {
        #[test]
        fn streaming_equals_one_shot(
            data in proptest::collection::vec(any::<u8>(), 0..20_000),
            mut cuts in proptest::collection::vec(any::<usize>(), 0..16),
        ) {
            for c in &mut cuts { *c %= data.len() + 1; }
            cuts.sort_unstable();
            let mut sink = Md5Sink::new();
            let mut at = 0;
            for c in cuts.into_iter().chain([data.len()]) {
                sink.update(&data[at..c]);
                at = c;
            }
            let reference: Md5Digest = ::md5::Md5::digest(&data).into();
            prop_assert_eq!(sink.finalize(), reference);
        }
    }

    #[test]
    fn single_etag_is_quoted_hex() {
        let e = ETag::single(&md5(b"abc"));
        assert_eq!(e.as_str(), "\"900150983cd24fb0d6963f7d28e17f72\"");
        assert_eq!(alloc::format!("{e}"), e.as_str());
    }

    #[test]
    fn multipart_etag_by_hand() {
        // Three parts; the ETag is MD5(md5(p1) || md5(p2) || md5(p3)) in hex, then "-3".
        let parts: [&[u8]; 3] = [b"part one", b"part two", b"part three"];
        let digests: alloc::vec::Vec<Md5Digest> = parts.iter().map(|p| md5(p)).collect();
        let mut concat = alloc::vec::Vec::new();
        for d in &digests {
            concat.extend_from_slice(d);
        }
        let want = alloc::format!("\"{}-3\"", ETag::single(&md5(&concat)).unquoted());
        assert_eq!(ETag::multipart(&digests).as_str(), want);

        let mut many = MultipartETag::new();
        for _ in 0..10_000 {
            many.push_part(&digests[0]);
        }
        assert!(many.finish().as_str().ends_with("-10000\""));
    }

    #[test]
    fn etag_parse_accepts_what_clients_send_back() {
        let e = ETag::single(&md5(b"abc"));
        assert_eq!(ETag::parse(e.as_str()), Some(e));
        assert_eq!(ETag::parse(e.unquoted()), Some(e));
        assert_eq!(ETag::parse(&e.as_str().to_ascii_uppercase()), Some(e));
        let m = ETag::multipart([&md5(b"x")]);
        assert_eq!(ETag::parse(m.as_str()), Some(m));
        assert_eq!(ETag::parse("\"nothex\""), None);
        assert_eq!(ETag::parse("\"900150983cd24fb0d6963f7d28e17f72-\""), None);
        assert_eq!(
            ETag::parse("\"900150983cd24fb0d6963f7d28e17f72-123456\""),
            None
        );
    }

    #[test]
    fn content_md5_header_value() {
        // From RFC 1864's definition: base64 of the binary digest; MD5("abc") is well known.
        let header = content_md5(&md5(b"abc"));
        assert_eq!(header.as_str(), "kAFQmDzST7DWlj99KOF/cg==");
    }
}
