//! What a request's headers say of the object it writes or deletes: content headers, user
//! metadata, tags, conditions, placement (the readers; what responses carry out is
//! `response_headers`).

use std::borrow::Cow;

use base64::Engine as _;
use ferry_core::http::{Header, find_header, find_header_str};
use ferry_core::md5::ETag;
use ferry_core::s3::header;
use ferry_core::s3::tagging;
use ferry_core::s3::validate::{self, ContentHeaders};
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};

use crate::store::{ObjectMeta, Placed, VersionId, WriteConditions};

/// What a write request says about its object: content headers and user metadata.
///
/// Non-ASCII metadata values are RFC 2047-decoded before they are stored, as S3 does; the
/// `aws-chunked` coding is removed from `Content-Encoding` (it describes the request only).
pub(crate) fn object_meta(headers: &[Header<'_>]) -> S3Result<ObjectMeta> {
    let content = ContentHeaders::from_headers(headers)?;
    let user = validate::user_metadata(headers)?;
    let own = |v: Option<Cow<'_, str>>| v.map(Cow::into_owned);
    Ok(ObjectMeta {
        content_type: own(content.content_type),
        content_encoding: content
            .content_encoding
            .as_deref()
            .and_then(without_aws_chunked),
        content_disposition: own(content.content_disposition),
        content_language: own(content.content_language),
        cache_control: own(content.cache_control),
        expires: own(content.expires),
        user_metadata: user
            .iter()
            .map(|m| (m.name.to_ascii_lowercase(), rfc2047_decode(m.value)))
            .collect(),
        checksums: Vec::new(),
        tags: object_tags(headers)?,
        // Set by the operation, which knows the bucket's owner (`node::acl::request_object_acl`).
        acl: None,
        // Set by the operation, which knows the bucket's lock (`node::lock::for_write`).
        retention: None,
        legal_hold: false,
        // Set by CreateMultipartUpload (`x-amz-checksum-algorithm`, `x-amz-checksum-type`).
        multipart_checksum: None,
    })
}

/// The tags of `x-amz-tagging` (none without it), checked against the object limits.
pub(crate) fn object_tags(headers: &[Header<'_>]) -> S3Result<Vec<(String, String)>> {
    let Some(value) = find_header(headers, header::X_AMZ_TAGGING) else {
        return Ok(Vec::new());
    };
    Ok(tagging::parse_header(value)?
        .into_iter()
        .map(|t| (t.key.into_owned(), t.value.into_owned()))
        .collect())
}

/// `Content-Encoding` without its `aws-chunked` coding; `None` if nothing else is left.
fn without_aws_chunked(value: &str) -> Option<String> {
    let kept: Vec<&str> = value
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty() && !c.eq_ignore_ascii_case("aws-chunked"))
        .collect();
    (!kept.is_empty()).then(|| kept.join(","))
}

/// `If-None-Match: *` and `If-Match` of a PutObject, CopyObject or CompleteMultipartUpload.
///
/// S3 only implements `*` for `If-None-Match` on writes; any other value is `NotImplemented`.
pub(crate) fn write_conditions(headers: &[Header<'_>]) -> S3Result<WriteConditions> {
    let if_none_match_star = match find_header(headers, header::IF_NONE_MATCH) {
        None => false,
        Some(v) if v.trim_ascii() == b"*" => true,
        Some(_) => {
            return Err(S3Error::with_message(
                S3ErrorCode::NotImplemented,
                "If-None-Match on writes only supports *",
            ));
        }
    };
    Ok(WriteConditions {
        if_none_match_star,
        if_match: if_match(headers)?,
        placed: Placed::default(),
    })
}

/// Ferry's placement headers of a write or a delete marker (`x-ferry-version-id`,
/// `x-ferry-version-order`, `x-ferry-last-modified`: see `ferry_core::s3::version`); who may
/// send them is the operation's check (`access::placement`).
pub(crate) fn placed(headers: &[Header<'_>]) -> S3Result<Placed> {
    let bad = |m: &str| S3Error::with_message(S3ErrorCode::InvalidArgument, m.to_owned());
    let number = |name: &str| -> S3Result<Option<u64>> {
        find_header_str(headers, name)
            .map(|v| {
                v.trim()
                    .parse::<u64>()
                    .map_err(|_| bad(&format!("{name} must be a number")))
            })
            .transpose()
    };
    let order = number(header::X_FERRY_VERSION_ORDER)?;
    let (seq, null) = match find_header_str(headers, header::X_FERRY_VERSION_ID).map(str::trim) {
        None if order.is_some() => {
            return Err(bad("x-ferry-version-order goes with x-ferry-version-id"));
        }
        None => (None, false),
        Some(id) => match VersionId::parse(id)? {
            VersionId::Null => match order {
                Some(o) => (Some(o), true),
                None => return Err(bad("a null version needs x-ferry-version-order")),
            },
            VersionId::Seq(s) if order.is_none_or(|o| o == s) => (Some(s), false),
            VersionId::Seq(_) => {
                return Err(bad("x-ferry-version-order differs from the version id's"));
            }
        },
    };
    // Year 9999 at most, as dates are written.
    let last_modified = match number(header::X_FERRY_LAST_MODIFIED)? {
        Some(t) if t <= 253_402_300_799 => i64::try_from(t).ok(),
        Some(_) => return Err(bad("x-ferry-last-modified is too far in the future")),
        None => None,
    };
    Ok(Placed {
        seq,
        null,
        last_modified,
    })
}

/// `If-Match: <etag>` of a write or a DeleteObject.
pub(crate) fn if_match(headers: &[Header<'_>]) -> S3Result<Option<ETag>> {
    match find_header_str(headers, header::IF_MATCH).map(str::trim) {
        None => Ok(None),
        Some(v) => ETag::parse(v).map(Some).ok_or_else(|| {
            // An ETag we never issue matches no object.
            S3Error::new(S3ErrorCode::PreconditionFailed)
        }),
    }
}

/// Whether the request asks for checksums in the response (`x-amz-checksum-mode: ENABLED`).
pub(crate) fn checksum_mode(headers: &[Header<'_>]) -> bool {
    find_header(headers, header::X_AMZ_CHECKSUM_MODE)
        .is_some_and(|v| v.eq_ignore_ascii_case(b"ENABLED"))
}

/// Decode a value made of RFC 2047 encoded words (`=?UTF-8?B?...?=`, `=?UTF-8?Q?...?=`); any
/// other value, or one that does not decode to UTF-8, is returned unchanged.
///
/// Hand-written: the crates for this pull in charset tables for encodings S3 clients never use.
pub(crate) fn rfc2047_decode(value: &str) -> String {
    let trimmed = value.trim();
    if !trimmed.starts_with("=?") || !trimmed.ends_with("?=") {
        return value.to_owned();
    }
    let mut out = Vec::new();
    // Encoded words separated by whitespace concatenate (RFC 2047 section 6.2).
    for word in trimmed.split_ascii_whitespace() {
        match decode_word(word) {
            Some(bytes) => out.extend_from_slice(&bytes),
            None => return value.to_owned(),
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| value.to_owned())
}

/// One encoded word: `=?charset?encoding?text?=` with a UTF-8 or US-ASCII charset.
fn decode_word(word: &str) -> Option<Vec<u8>> {
    let inner = word.strip_prefix("=?")?.strip_suffix("?=")?;
    let mut parts = inner.splitn(3, '?');
    let charset = parts.next()?;
    let encoding = parts.next()?;
    let text = parts.next()?;
    // `charset*language` (RFC 2231) keeps the charset before the star.
    let charset = charset.split('*').next()?;
    if !charset.eq_ignore_ascii_case("utf-8") && !charset.eq_ignore_ascii_case("us-ascii") {
        return None;
    }
    if encoding.eq_ignore_ascii_case("b") {
        base64::engine::general_purpose::STANDARD.decode(text).ok()
    } else if encoding.eq_ignore_ascii_case("q") {
        let mut out = Vec::with_capacity(text.len());
        let mut bytes = text.bytes();
        while let Some(b) = bytes.next() {
            match b {
                b'_' => out.push(b' '),
                b'=' => {
                    let hi = hex_digit(bytes.next()?)?;
                    let lo = hex_digit(bytes.next()?)?;
                    out.push(hi << 4 | lo);
                }
                b => out.push(b),
            }
        }
        Some(out)
    } else {
        None
    }
}

fn hex_digit(b: u8) -> Option<u8> {
    char::from(b)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h<'a>(name: &'a str, value: &'a str) -> Header<'a> {
        Header {
            name,
            value: value.as_bytes(),
        }
    }

    #[test]
    fn metadata_is_lowercased_decoded_and_stripped_of_aws_chunked() {
        let hs = [
            h("X-Amz-Meta-Name", "=?UTF-8?B?Y2Fmw6k=?="),
            h("x-amz-meta-q", "=?utf-8?Q?a_b=C3=A9?="),
            h("x-amz-meta-plain", "=?not encoded"),
            h("Content-Encoding", "aws-chunked, gzip"),
            h("Content-Type", "text/plain"),
        ];
        let m = object_meta(&hs).unwrap();
        assert_eq!(
            m.user_metadata,
            [
                ("name".to_owned(), "café".to_owned()),
                ("q".to_owned(), "a bé".to_owned()),
                ("plain".to_owned(), "=?not encoded".to_owned()),
            ]
        );
        assert_eq!(m.content_encoding.as_deref(), Some("gzip"));
        assert_eq!(m.content_type.as_deref(), Some("text/plain"));
        let only = object_meta(&[h("content-encoding", "aws-chunked")]).unwrap();
        assert_eq!(only.content_encoding, None);
    }

    #[test]
    fn bad_encoded_words_are_kept_as_sent() {
        for v in [
            "=?UTF-8?B?###?=",
            "=?latin1?B?Y2Fm?=",
            "=?UTF-8?Q?=ZZ?=",
            "=?UTF-8?B?/w==?=",
        ] {
            assert_eq!(rfc2047_decode(v), v);
        }
    }

    #[test]
    fn write_conditions_from_headers() {
        let c = write_conditions(&[h("If-None-Match", "*")]).unwrap();
        assert!(c.if_none_match_star);
        let etag = "\"0123456789abcdef0123456789abcdef\"";
        let c = write_conditions(&[h("if-match", etag)]).unwrap();
        assert_eq!(c.if_match.map(|e| e.as_str().to_owned()), Some(etag.into()));
        let e = write_conditions(&[h("if-none-match", etag)]).unwrap_err();
        assert_eq!(e.code, S3ErrorCode::NotImplemented);
        let e = write_conditions(&[h("if-match", "nonsense")]).unwrap_err();
        assert_eq!(e.code, S3ErrorCode::PreconditionFailed);
    }
}
