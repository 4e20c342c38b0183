//! Byte ranges: the `Range` header of GetObject/HeadObject and `x-amz-copy-source-range`.
//!
//! S3 ignores a `Range` it cannot parse and serves the whole object, and it does not serve
//! multiple ranges: a multi-range header is ignored as well (200 with the whole object).
//! A well-formed range that does not fit the object is `InvalidRange` (416).

use core::fmt;

use super::{S3Error, S3ErrorCode, S3Result};
use crate::http::{Header, find_header};
use crate::s3::header;

/// A single byte range as written in a `Range: bytes=...` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteRange {
    /// `bytes=first-last` (inclusive; `first <= last`).
    FromTo(u64, u64),
    /// `bytes=first-`.
    From(u64),
    /// `bytes=-n`: the last `n` bytes.
    Suffix(u64),
}

/// A range resolved against an object's length: `start..=end`, both inside the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResolvedRange {
    /// First byte offset.
    pub start: u64,
    /// Last byte offset (inclusive).
    pub end: u64,
}

impl ByteRange {
    /// Parse a `Range` value; `None` when S3 would ignore it (bad syntax, several ranges).
    pub fn parse(value: &[u8]) -> Option<Self> {
        let v = core::str::from_utf8(value).ok()?.trim();
        let unit = v.get(..6)?;
        if !unit.eq_ignore_ascii_case("bytes=") {
            return None;
        }
        let spec = v.get(6..)?.trim();
        if spec.contains(',') {
            return None;
        }
        let (first, last) = spec.split_once('-')?;
        match (digits(first), digits(last)) {
            (Some(f), Some(l)) if f <= l => Some(Self::FromTo(f, l)),
            (Some(f), None) if last.is_empty() => Some(Self::From(f)),
            (None, Some(n)) if first.is_empty() => Some(Self::Suffix(n)),
            _ => None,
        }
    }

    /// The request's `Range` header, if present and one S3 would honour.
    pub fn from_headers(headers: &[Header<'_>]) -> Option<Self> {
        find_header(headers, header::RANGE).and_then(Self::parse)
    }

    /// Resolve against an object of `len` bytes: the bytes to send, or `InvalidRange`.
    pub fn resolve(self, len: u64) -> S3Result<ResolvedRange> {
        let last = len.checked_sub(1).ok_or_else(|| unsatisfiable(len))?;
        match self {
            Self::FromTo(first, end) if first <= last => Ok(ResolvedRange {
                start: first,
                end: end.min(last),
            }),
            Self::From(first) if first <= last => Ok(ResolvedRange {
                start: first,
                end: last,
            }),
            Self::Suffix(n) if n > 0 => Ok(ResolvedRange {
                start: len.saturating_sub(n),
                end: last,
            }),
            _ => Err(unsatisfiable(len)),
        }
    }
}

impl ResolvedRange {
    /// Number of bytes in the range.
    pub fn len(self) -> u64 {
        // end >= start by construction; saturating keeps hand-built values panic-free.
        self.end.saturating_sub(self.start).saturating_add(1)
    }

    /// Whether the range is empty (never, for resolved ranges; for clippy's `len` rule).
    pub fn is_empty(self) -> bool {
        self.end < self.start
    }

    /// The `Content-Range` value for an object of `total` bytes: `bytes start-end/total`.
    pub fn content_range(self, total: u64) -> impl fmt::Display {
        ContentRange(self, total)
    }
}

struct ContentRange(ResolvedRange, u64);

impl fmt::Display for ContentRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bytes {}-{}/{}", self.0.start, self.0.end, self.1)
    }
}

fn unsatisfiable(len: u64) -> S3Error {
    S3Error::with_message(
        S3ErrorCode::InvalidRange,
        alloc::format!("The requested range is not satisfiable (object size {len})"),
    )
}

/// Decimal digits only; values past `u64::MAX` saturate (they are out of any object anyway).
fn digits(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(s.bytes().fold(0u64, |acc, b| {
        acc.saturating_mul(10).saturating_add(u64::from(b - b'0'))
    }))
}

/// `x-amz-copy-source-range` of UploadPartCopy: strictly `bytes=first-last`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopySourceRange {
    /// First byte offset.
    pub first: u64,
    /// Last byte offset (inclusive).
    pub last: u64,
}

impl CopySourceRange {
    /// Parse the header value; anything but `bytes=first-last` with `first <= last` is
    /// `InvalidArgument` (S3 does not ignore a bad copy range, unlike `Range`).
    pub fn parse(value: &[u8]) -> S3Result<Self> {
        match ByteRange::parse(value) {
            Some(ByteRange::FromTo(first, last)) => Ok(Self { first, last }),
            _ => Err(S3Error::with_message(
                S3ErrorCode::InvalidArgument,
                "The x-amz-copy-source-range value must be of the form bytes=first-last \
                 where first and last are the zero-based offsets of the first and last bytes to copy",
            )),
        }
    }

    /// Check against the source object's length; a range past its end is `416 InvalidRange`
    /// (as AWS answers UploadPartCopy).
    pub fn resolve(self, source_len: u64) -> S3Result<ResolvedRange> {
        if self.last >= source_len {
            return Err(S3Error::with_message(
                S3ErrorCode::InvalidRange,
                alloc::format!(
                    "Range specified is not valid for source object of size: {source_len}"
                ),
            ));
        }
        Ok(ResolvedRange {
            start: self.first,
            end: self.last,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use proptest::prelude::*;

    #[test]
    fn parses_the_three_forms() {
        assert_eq!(
            ByteRange::parse(b"bytes=0-499"),
            Some(ByteRange::FromTo(0, 499))
        );
        assert_eq!(
            ByteRange::parse(b"bytes=9500-"),
            Some(ByteRange::From(9500))
        );
        assert_eq!(
            ByteRange::parse(b"bytes=-500"),
            Some(ByteRange::Suffix(500))
        );
        assert_eq!(
            ByteRange::parse(b" Bytes=1-1 "),
            Some(ByteRange::FromTo(1, 1))
        );
        assert_eq!(
            ByteRange::parse(b"bytes=99999999999999999999999-"),
            Some(ByteRange::From(u64::MAX))
        );
    }

    #[test]
    fn ignores_what_s3_ignores() {
        for v in [
            &b"bytes=5-1"[..],
            b"bytes=-",
            b"bytes=",
            b"bytes=a-b",
            b"bytes=1-2-3",
            b"bytes=+1-2",
            b"items=0-1",
            b"bytes 0-1",
            b"bytes=0-1,3-4",
            b"bytes=-1,-2",
            b"\xff",
            b"",
        ] {
            assert_eq!(ByteRange::parse(v), None, "{:?}", core::str::from_utf8(v));
        }
    }

    #[test]
    fn resolves_against_length() {
        let r = |s: u64, e: u64| Ok(ResolvedRange { start: s, end: e });
        // Examples from RFC 9110 §14.1.2 on a 10000-byte representation.
        assert_eq!(ByteRange::FromTo(0, 499).resolve(10_000), r(0, 499));
        assert_eq!(ByteRange::FromTo(500, 999).resolve(10_000), r(500, 999));
        assert_eq!(ByteRange::Suffix(500).resolve(10_000), r(9500, 9999));
        assert_eq!(ByteRange::From(9500).resolve(10_000), r(9500, 9999));
        // Last position past the end is clamped; a suffix longer than the object is all of it.
        assert_eq!(ByteRange::FromTo(5, 100).resolve(10), r(5, 9));
        assert_eq!(ByteRange::Suffix(100).resolve(10), r(0, 9));
        for (range, len) in [
            (ByteRange::FromTo(10, 20), 10),
            (ByteRange::From(10), 10),
            (ByteRange::From(u64::MAX), 10),
            (ByteRange::Suffix(0), 10),
            (ByteRange::From(0), 0),
            (ByteRange::Suffix(5), 0),
        ] {
            let e = range.resolve(len).expect_err("unsatisfiable");
            assert_eq!(e.code, S3ErrorCode::InvalidRange);
            assert_eq!(e.status(), 416);
        }
    }

    #[test]
    fn content_range_and_len() {
        let r = ByteRange::FromTo(0, 499).resolve(1234).expect("fits");
        assert_eq!(r.len(), 500);
        assert!(!r.is_empty());
        assert_eq!(r.content_range(1234).to_string(), "bytes 0-499/1234");
    }

    #[test]
    fn copy_source_range_is_strict() {
        assert_eq!(
            CopySourceRange::parse(b"bytes=0-9"),
            Ok(CopySourceRange { first: 0, last: 9 })
        );
        for bad in [
            &b"bytes=0-"[..],
            b"bytes=-9",
            b"bytes=9-0",
            b"0-9",
            b"bytes=0-1,2-3",
        ] {
            assert_eq!(
                CopySourceRange::parse(bad).expect_err("bad").code,
                S3ErrorCode::InvalidArgument
            );
        }
        let r = CopySourceRange { first: 0, last: 9 };
        assert_eq!(r.resolve(10), Ok(ResolvedRange { start: 0, end: 9 }));
        assert_eq!(
            r.resolve(9).expect_err("past end").code,
            S3ErrorCode::InvalidRange
        );
    }

    proptest! {
        #[test]
        fn resolved_ranges_fit(v in "(bytes=)?[0-9]{0,3}-?[0-9]{0,3}", len in 0u64..2000) {
            if let Some(r) = ByteRange::parse(v.as_bytes())
                && let Ok(res) = r.resolve(len) {
                    prop_assert!(res.start <= res.end);
                    prop_assert!(res.end < len);
                    prop_assert_eq!(res.len(), res.end - res.start + 1);
                }
        }
    }
}
