//! What responses carry out of an object: its version id, validators, content headers, user
//! metadata, lock, encryption and checksum headers (the writers; what requests carry in is
//! `request_headers`).

use base64::Engine as _;
use ferry_core::md5::ETag;
use ferry_core::s3::checksum::{ChecksumAlgorithm, ChecksumType};
use ferry_core::s3::header;
use ferry_core::s3::validate::ContentHeaders;
use ferry_core::time::DateTime;

use crate::front::Headers;
use crate::store::{Checksum, ObjectInfo, ObjectMeta, VersionId};

/// The `Content-Type` S3 gives objects stored without one.
pub(crate) const DEFAULT_CONTENT_TYPE: &str = "binary/octet-stream";

/// `x-amz-version-id`, when the object has a version id.
pub(crate) fn push_version(h: &mut Headers, version: Option<VersionId>) {
    if let Some(v) = version {
        h.push(header::X_AMZ_VERSION_ID, v.to_string());
    }
}

/// The `x-amz-checksum-*` header of a stored checksum.
pub(crate) fn push_checksum(h: &mut Headers, c: &Checksum) {
    if let Some(alg) = ChecksumAlgorithm::parse(&c.algorithm) {
        h.push(alg.header_name(), c.value.clone());
    }
}

/// The checksum of part `n` of a multipart object whose upload had a checksum algorithm, for
/// a GET or HEAD of that part (`partNumber`) in checksum mode: the part's own checksum, which
/// describes the bytes sent.
pub(crate) fn push_part_checksum(h: &mut Headers, m: &ObjectMeta, n: u16) {
    let Some(mc) = &m.multipart_checksum else {
        return;
    };
    let part = usize::from(n).checked_sub(1).and_then(|i| mc.parts.get(i));
    if let (Some(alg), Some((_, value))) = (ChecksumAlgorithm::parse(&mc.algorithm), part) {
        h.push(alg.header_name(), value.clone());
    }
}

/// The type of an object's checksum: `COMPOSITE` for a multipart object whose upload asked
/// for it, `FULL_OBJECT` otherwise.
pub(crate) fn checksum_type(m: &ObjectMeta) -> ChecksumType {
    match &m.multipart_checksum {
        Some(c) if !c.full_object => ChecksumType::Composite,
        _ => ChecksumType::FullObject,
    }
}

/// `ETag` and `Last-Modified`: what 304 responses carry too.
pub(crate) fn push_validators(h: &mut Headers, etag: &ETag, last_modified: DateTime) {
    h.push("ETag", etag.as_str().to_owned());
    h.push("Last-Modified", last_modified.http().to_string());
}

/// The headers GET and HEAD return for an object: validators, content headers (with the
/// request's `response-*` overrides), user metadata and, when asked for and they describe the
/// bytes sent, checksums.
pub(crate) fn object_headers(
    info: &ObjectInfo,
    overrides: Option<&ContentHeaders<'_>>,
    with_checksums: bool,
) -> Headers {
    let mut h = Headers::new();
    push_validators(&mut h, &info.etag, info.last_modified);
    h.push("Accept-Ranges", "bytes");
    let m = &info.meta;
    let stored = [
        ("Content-Type", &m.content_type),
        ("Content-Encoding", &m.content_encoding),
        ("Content-Disposition", &m.content_disposition),
        ("Content-Language", &m.content_language),
        ("Cache-Control", &m.cache_control),
        ("Expires", &m.expires),
    ];
    for (name, value) in stored {
        if let Some(v) = value {
            h.push(name, header_safe(v));
        }
    }
    if m.content_type.is_none() {
        h.push("Content-Type", DEFAULT_CONTENT_TYPE);
    }
    if let Some(o) = overrides {
        for (name, v) in o.iter() {
            h.set(name, header_safe(v));
        }
    }
    for (name, value) in &m.user_metadata {
        h.push(
            format!("{}{name}", header::X_AMZ_META_PREFIX),
            header_safe(value),
        );
    }
    if !m.tags.is_empty() {
        h.push(header::X_AMZ_TAGGING_COUNT, m.tags.len().to_string());
    }
    super::lock::push_headers(&mut h, m);
    super::sse::push_encryption(&mut h, info.encryption.as_ref());
    if with_checksums {
        for c in &m.checksums {
            push_checksum(&mut h, c);
        }
        if !m.checksums.is_empty() {
            h.push(header::X_AMZ_CHECKSUM_TYPE, checksum_type(m).as_str());
        }
    }
    h
}

/// A stored value as a header value: as is when printable ASCII, else RFC 2047 `B`-encoded
/// UTF-8 (what S3 returns for non-ASCII metadata).
pub(crate) fn header_safe(value: &str) -> String {
    if value
        .bytes()
        .all(|b| b == b'\t' || (0x20..0x7f).contains(&b))
    {
        value.to_owned()
    } else {
        format!(
            "=?UTF-8?B?{}?=",
            base64::engine::general_purpose::STANDARD.encode(value)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::request_headers::rfc2047_decode;

    #[test]
    fn non_ascii_values_go_out_rfc2047_encoded() {
        assert_eq!(header_safe("plain value"), "plain value");
        let out = header_safe("café");
        assert_eq!(out, "=?UTF-8?B?Y2Fmw6k=?=");
        // And what goes out comes back in as the same value.
        assert_eq!(rfc2047_decode(&out), "café");
        assert_eq!(header_safe("a\r\nb"), "=?UTF-8?B?YQ0KYg==?=");
    }
}
