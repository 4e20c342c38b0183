//! Validation of names, keys and numeric parameters, and the header helpers of writes.
//!
//! Each check fails with the S3 error code S3 itself answers with.

use alloc::borrow::Cow;
use alloc::vec::Vec;

use super::{S3Error, S3ErrorCode, S3Result};
use crate::http::Header;
use crate::md5::Md5Digest;
use crate::s3::header;

/// The longest key S3 accepts, in UTF-8 bytes.
pub const MAX_KEY_LEN: usize = 1024;
/// The largest user metadata (`x-amz-meta-*` names without the prefix, plus values), in bytes.
pub const MAX_USER_METADATA: usize = 2048;
/// The highest part number of a multipart upload.
pub const MAX_PART_NUMBER: u16 = 10_000;

/// Check a bucket name against the S3 naming rules for general purpose buckets.
///
/// 3–63 characters of `a-z 0-9 . -`, starting and ending with a letter or digit, no `..`,
/// not an IPv4 address, none of the reserved prefixes and suffixes.
pub fn bucket_name(name: &str) -> S3Result<()> {
    const RESERVED_PREFIXES: [&str; 3] = ["xn--", "sthree-", "amzn-s3-demo-"];
    const RESERVED_SUFFIXES: [&str; 5] = ["-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"];
    let b = name.as_bytes();
    let bad = |why: &'static str| Err(S3Error::with_message(S3ErrorCode::InvalidBucketName, why));
    if !(3..=63).contains(&b.len()) {
        return bad("Bucket names must be between 3 and 63 characters long.");
    }
    if !b
        .iter()
        .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'.' || c == b'-')
    {
        return bad(
            "Bucket names can consist only of lowercase letters, numbers, dots and hyphens.",
        );
    }
    let alnum = |c: Option<&u8>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if !alnum(b.first()) || !alnum(b.last()) {
        return bad("Bucket names must begin and end with a letter or number.");
    }
    if name.contains("..") {
        return bad("Bucket names must not contain two adjacent periods.");
    }
    // Each dot-separated label begins and ends with a letter or number (DNS rules).
    if name.contains("-.") || name.contains(".-") {
        return bad("Bucket names must not have a hyphen next to a period.");
    }
    if name.parse::<core::net::Ipv4Addr>().is_ok() {
        return bad("Bucket names must not be formatted as an IP address.");
    }
    if RESERVED_PREFIXES.iter().any(|p| name.starts_with(p))
        || RESERVED_SUFFIXES.iter().any(|s| name.ends_with(s))
    {
        return bad("Bucket names must not use a reserved prefix or suffix.");
    }
    Ok(())
}

/// Check an object key: at most [`MAX_KEY_LEN`] bytes (UTF-8 is guaranteed by `&str`).
pub fn object_key(key: &str) -> S3Result<()> {
    if key.len() > MAX_KEY_LEN {
        return Err(S3ErrorCode::KeyTooLongError.into());
    }
    Ok(())
}

/// Parse a non-negative decimal integer parameter as S3 reads them (`max-keys`, markers).
///
/// Non-numeric, negative or above `i32::MAX` is `InvalidArgument` (S3 checks the Java int
/// range); `name` goes into the message.
pub fn int_param(name: &'static str, value: &str) -> S3Result<u32> {
    value
        .parse::<u32>()
        .ok()
        .filter(|&n| i32::try_from(n).is_ok())
        .ok_or_else(|| {
            S3Error::with_message(
                S3ErrorCode::InvalidArgument,
                alloc::format!("Provided {name} not an integer or within integer range"),
            )
        })
}

/// Parse a part number: an integer in `1..=10000`, else `InvalidArgument`.
pub fn part_number(value: &str) -> S3Result<u16> {
    value
        .parse::<u16>()
        .ok()
        .filter(|n| (1..=MAX_PART_NUMBER).contains(n))
        .ok_or_else(|| {
            S3Error::with_message(
                S3ErrorCode::InvalidArgument,
                "Part number must be an integer between 1 and 10000, inclusive",
            )
        })
}

/// The `Content-MD5` header of a request, decoded, if present.
pub fn find_content_md5(headers: &[Header<'_>]) -> S3Result<Option<Md5Digest>> {
    crate::http::find_header(headers, header::CONTENT_MD5)
        .map(parse_content_md5)
        .transpose()
}

/// Decode a `Content-MD5` header value; anything but base64 of 16 bytes is `InvalidDigest`.
pub fn parse_content_md5(value: &[u8]) -> S3Result<Md5Digest> {
    // Room for a longer decode, so that 17+ byte values are detected rather than truncated.
    let mut out = [0u8; 24];
    let b64 = base64::engine::general_purpose::STANDARD;
    match base64::Engine::decode_slice(&b64, value.trim_ascii(), &mut out) {
        Ok(16) => {
            let mut d = [0u8; 16];
            d.copy_from_slice(&out[..16]);
            Ok(d)
        }
        _ => Err(S3Error::new(S3ErrorCode::InvalidDigest)),
    }
}

/// One user metadata entry: the name after `x-amz-meta-` (as sent) and the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetaEntry<'a> {
    /// The name without the `x-amz-meta-` prefix, in the case it was sent (compare ignoring case).
    pub name: &'a str,
    /// The value (header values are trimmed by the HTTP parser).
    pub value: &'a str,
}

/// Collect the `x-amz-meta-*` headers of a write, checking S3's 2 KB limit.
///
/// The size is the sum of the UTF-8 lengths of names (without the prefix) and values; above
/// [`MAX_USER_METADATA`] it is `MetadataTooLarge`. Values that are not UTF-8 are
/// `InvalidArgument` (SDKs RFC 2047-encode non-ASCII values).
pub fn user_metadata<'a>(headers: &[Header<'a>]) -> S3Result<Vec<MetaEntry<'a>>> {
    let mut out = Vec::new();
    let mut size = 0usize;
    for h in headers {
        let Some(prefix) = h.name.get(..header::X_AMZ_META_PREFIX.len()) else {
            continue;
        };
        if !prefix.eq_ignore_ascii_case(header::X_AMZ_META_PREFIX) {
            continue;
        }
        let name = h
            .name
            .get(header::X_AMZ_META_PREFIX.len()..)
            .unwrap_or_default();
        let value = core::str::from_utf8(h.value).map_err(|_| {
            S3Error::with_message(
                S3ErrorCode::InvalidArgument,
                "user metadata values must be UTF-8",
            )
        })?;
        size = size.saturating_add(name.len()).saturating_add(value.len());
        if size > MAX_USER_METADATA {
            return Err(S3ErrorCode::MetadataTooLarge.into());
        }
        out.push(MetaEntry { name, value });
    }
    Ok(out)
}

/// The standard content headers S3 stores with an object and returns on reads.
///
/// Also the shape of GetObject's `response-*` overrides, which name the same six headers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContentHeaders<'a> {
    /// `Content-Type`.
    pub content_type: Option<Cow<'a, str>>,
    /// `Content-Encoding`.
    pub content_encoding: Option<Cow<'a, str>>,
    /// `Content-Disposition`.
    pub content_disposition: Option<Cow<'a, str>>,
    /// `Content-Language`.
    pub content_language: Option<Cow<'a, str>>,
    /// `Cache-Control`.
    pub cache_control: Option<Cow<'a, str>>,
    /// `Expires`, as sent (S3 stores and returns the string).
    pub expires: Option<Cow<'a, str>>,
}

impl<'a> ContentHeaders<'a> {
    /// The header names, in field order.
    pub const NAMES: [&'static str; 6] = [
        header::CONTENT_TYPE,
        header::CONTENT_ENCODING,
        header::CONTENT_DISPOSITION,
        header::CONTENT_LANGUAGE,
        header::CACHE_CONTROL,
        header::EXPIRES,
    ];

    /// Read the standard content headers of a write; non-UTF-8 values are `InvalidArgument`.
    pub fn from_headers(headers: &[Header<'a>]) -> S3Result<Self> {
        let get = |name: &str| -> S3Result<Option<Cow<'a, str>>> {
            crate::http::find_header(headers, name)
                .map(|v| {
                    core::str::from_utf8(v).map(Cow::Borrowed).map_err(|_| {
                        S3Error::with_message(
                            S3ErrorCode::InvalidArgument,
                            "header values must be UTF-8",
                        )
                    })
                })
                .transpose()
        };
        let [ct, ce, cd, cl, cc, ex] = Self::NAMES;
        Ok(Self {
            content_type: get(ct)?,
            content_encoding: get(ce)?,
            content_disposition: get(cd)?,
            content_language: get(cl)?,
            cache_control: get(cc)?,
            expires: get(ex)?,
        })
    }

    /// GetObject's `response-content-type` & co. from the query.
    pub fn from_response_overrides(query: &super::query::Query<'a>) -> Self {
        Self {
            content_type: query.get_cow("response-content-type"),
            content_encoding: query.get_cow("response-content-encoding"),
            content_disposition: query.get_cow("response-content-disposition"),
            content_language: query.get_cow("response-content-language"),
            cache_control: query.get_cow("response-cache-control"),
            expires: query.get_cow("response-expires"),
        }
    }

    /// Whether no header is set.
    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }

    /// The headers that are set, as `(lowercase name, value)`.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &str)> {
        let fields = [
            &self.content_type,
            &self.content_encoding,
            &self.content_disposition,
            &self.content_language,
            &self.cache_control,
            &self.expires,
        ];
        Self::NAMES
            .into_iter()
            .zip(fields)
            .filter_map(|(n, v)| v.as_deref().map(|v| (n, v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;

    fn h<'a>(name: &'a str, value: &'a str) -> Header<'a> {
        Header {
            name,
            value: value.as_bytes(),
        }
    }

    #[test]
    fn bucket_names_follow_s3_rules() {
        for ok in [
            "docexamplebucket1",
            "log-delivery-march-2020",
            "my-hosted-content",
            "abc",
            "a.b-c.d1",
            "192.168.5",
            "1.2.3.4.5",
        ] {
            assert_eq!(bucket_name(ok), Ok(()), "{ok}");
        }
        let long = "a".repeat(64);
        for bad in [
            "ab",
            long.as_str(),
            "doc_example_bucket",
            "DocExampleBucket",
            "doc-example-bucket-",
            "-doc",
            ".doc",
            "doc..bucket",
            "doc-.bucket",
            "doc.-bucket",
            "192.168.5.4",
            "xn--bucket",
            "sthree-bucket",
            "amzn-s3-demo-bucket",
            "bucket-s3alias",
            "bucket--ol-s3",
            "bucket.mrap",
            "bucket--x-s3",
            "bucket--table-s3",
            "bück",
        ] {
            let e = bucket_name(bad).expect_err(bad);
            assert_eq!(e.code, S3ErrorCode::InvalidBucketName, "{bad}");
        }
        assert_eq!(bucket_name(&"a".repeat(63)), Ok(()));
    }

    #[test]
    fn key_length_limit() {
        assert!(object_key(&"k".repeat(1024)).is_ok());
        let e = object_key(&"k".repeat(1025)).expect_err("too long");
        assert_eq!(e.code, S3ErrorCode::KeyTooLongError);
        // Multi-byte characters count in bytes: 342 * 3 = 1026.
        assert!(object_key(&"€".repeat(342)).is_err());
    }

    #[test]
    fn integers_and_part_numbers() {
        assert_eq!(int_param("max-keys", "0"), Ok(0));
        assert_eq!(int_param("max-keys", "2147483647"), Ok(2_147_483_647));
        for bad in [
            "-1",
            "",
            "abc",
            "1.5",
            "2147483648",
            " 1",
            "99999999999999999999",
        ] {
            let e = int_param("max-keys", bad).expect_err(bad);
            assert_eq!(e.code, S3ErrorCode::InvalidArgument);
        }
        assert_eq!(part_number("1"), Ok(1));
        assert_eq!(part_number("10000"), Ok(10_000));
        for bad in ["0", "10001", "-1", "x", "", "65537"] {
            assert_eq!(
                part_number(bad).expect_err(bad).code,
                S3ErrorCode::InvalidArgument
            );
        }
    }

    #[test]
    fn content_md5_decodes_16_bytes() {
        // MD5("") = d41d8cd98f00b204e9800998ecf8427e, base64 1B2M2Y8AsgTpgAmY7PhCfg==.
        let d = parse_content_md5(b"1B2M2Y8AsgTpgAmY7PhCfg==").expect("valid");
        let abc = crate::md5::md5(b"abc");
        let header = crate::md5::content_md5(&abc);
        assert_eq!(parse_content_md5(header.as_str().as_bytes()), Ok(abc));
        assert_eq!(d[0], 0xd4);
        assert_eq!(d[15], 0x7e);
        for bad in [
            &b"1B2M2Y8AsgTpgAmY7PhC"[..],
            b"not base64!",
            b"",
            b"1B2M2Y8AsgTpgAmY7PhCfgAA",
            b"1B2M2Y8AsgTpgAmY7PhCfg==1B2M2Y8AsgTpgAmY7PhCfg==",
        ] {
            assert_eq!(
                parse_content_md5(bad).expect_err("invalid").code,
                S3ErrorCode::InvalidDigest
            );
        }
        let hs = [h("Content-MD5", "1B2M2Y8AsgTpgAmY7PhCfg==")];
        assert_eq!(find_content_md5(&hs), Ok(Some(d)));
        assert_eq!(find_content_md5(&[]), Ok(None));
    }

    #[test]
    fn user_metadata_collects_and_limits() {
        let hs = [
            h("X-Amz-Meta-Color", "blue"),
            h("content-type", "text/plain"),
            h("x-amz-meta-", "empty name"),
            h("x-amz-metadata-directive", "COPY"),
            h("x-amz-meta-size", "10"),
        ];
        let m = user_metadata(&hs).expect("small");
        assert_eq!(
            m,
            [
                MetaEntry {
                    name: "Color",
                    value: "blue"
                },
                MetaEntry {
                    name: "",
                    value: "empty name"
                },
                MetaEntry {
                    name: "size",
                    value: "10"
                },
            ]
        );
        // Exactly 2048 bytes: 4 (name) + 2044 (value) passes; one more byte fails.
        let v: String = "v".repeat(2044);
        assert!(user_metadata(&[h("x-amz-meta-name", &v)]).is_ok());
        let e = user_metadata(&[h("x-amz-meta-names", &v)]).expect_err("2049 bytes");
        assert_eq!(e.code, S3ErrorCode::MetadataTooLarge);
        let v2: String = "v".repeat(1020);
        let e = user_metadata(&[
            h("x-amz-meta-a1", &v2),
            h("x-amz-meta-a2", &v2[..]),
            h("x-amz-meta-b", "123456"),
        ])
        .expect_err("over 2 KB in total");
        assert_eq!(e.code, S3ErrorCode::MetadataTooLarge);
        let bad = [Header {
            name: "x-amz-meta-x",
            value: b"\xff",
        }];
        assert_eq!(
            user_metadata(&bad).expect_err("not utf-8").code,
            S3ErrorCode::InvalidArgument
        );
    }

    #[test]
    fn content_headers_read_and_iterate() {
        let hs = [
            h("Content-Type", "image/jpeg"),
            h("Cache-Control", "no-cache"),
            h("x-amz-meta-a", "b"),
        ];
        let c = ContentHeaders::from_headers(&hs).expect("utf-8");
        assert_eq!(c.content_type.as_deref(), Some("image/jpeg"));
        assert_eq!(c.expires, None);
        let set: Vec<_> = c.iter().collect();
        assert_eq!(
            set,
            [
                ("content-type", "image/jpeg"),
                ("cache-control", "no-cache")
            ]
        );
        assert!(ContentHeaders::from_headers(&[]).expect("empty").is_empty());
        let q = super::super::query::Query::parse(
            "response-content-type=text%2Fplain&response-expires=Thu%2C%2001%20Dec%201994",
        )
        .expect("valid");
        let o = ContentHeaders::from_response_overrides(&q);
        assert_eq!(o.content_type.as_deref(), Some("text/plain"));
        assert_eq!(o.expires.as_deref(), Some("Thu, 01 Dec 1994"));
        assert_eq!(o.iter().count(), 2);
    }
}
