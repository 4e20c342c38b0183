//! XML writers: each document appends itself to a caller-owned buffer.

use alloc::vec::Vec;
use core::fmt::{self, Display, Write as _};

use super::*;
use crate::s3::uri;
use crate::time::DateTime;

const DECLARATION: &str = r#"<?xml version="1.0" encoding="UTF-8"?>"#;

/// Appends escaped text: `& < > " '` as entities, control characters (and the non-characters
/// U+FFFE/U+FFFF) as numeric references, since XML 1.0 text cannot hold them literally.
pub(super) struct Escaper<'o>(pub(super) &'o mut Vec<u8>);

impl fmt::Write for Escaper<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let mut rest = s;
        while let Some(i) = rest.find(|c: char| {
            matches!(c, '&' | '<' | '>' | '"' | '\'' | '\u{FFFE}' | '\u{FFFF}') || c < ' '
        }) {
            let (plain, tail) = rest.split_at(i);
            self.0.extend_from_slice(plain.as_bytes());
            let mut chars = tail.chars();
            let Some(c) = chars.next() else { break };
            match c {
                '&' => self.0.extend_from_slice(b"&amp;"),
                '<' => self.0.extend_from_slice(b"&lt;"),
                '>' => self.0.extend_from_slice(b"&gt;"),
                '"' => self.0.extend_from_slice(b"&quot;"),
                '\'' => self.0.extend_from_slice(b"&apos;"),
                c => {
                    let mut raw = Raw(self.0);
                    write!(raw, "&#x{:X};", u32::from(c))?;
                }
            }
            rest = chars.as_str();
        }
        self.0.extend_from_slice(rest.as_bytes());
        Ok(())
    }
}

/// Append `text` to `out` escaped as XML text (what every writer here does), for a caller
/// that builds a document of its own, such as a request body.
pub fn escape(out: &mut Vec<u8>, text: &str) {
    let _ = Escaper(out).write_str(text);
}

/// Appends without escaping (markup we generate).
struct Raw<'o>(&'o mut Vec<u8>);

impl fmt::Write for Raw<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// A minimal element writer over the caller's buffer.
pub(super) struct XmlWriter<'o> {
    out: &'o mut Vec<u8>,
}

impl<'o> XmlWriter<'o> {
    /// Start a document: declaration and root element, with the S3 namespace if `ns`.
    pub(super) fn document(out: &'o mut Vec<u8>, root: &str, ns: bool) -> Self {
        out.extend_from_slice(DECLARATION.as_bytes());
        let mut w = Self { out };
        w.raw("<");
        w.raw(root);
        if ns {
            w.raw(" xmlns=\"");
            w.raw(S3_NS);
            w.raw("\"");
        }
        w.raw(">");
        w
    }

    fn raw(&mut self, s: &str) {
        self.out.extend_from_slice(s.as_bytes());
    }

    pub(super) fn open(&mut self, name: &str) {
        self.raw("<");
        self.raw(name);
        self.raw(">");
    }

    pub(super) fn close(&mut self, name: &str) {
        self.raw("</");
        self.raw(name);
        self.raw(">");
    }

    /// `<name>escaped value</name>`.
    pub(super) fn elem(&mut self, name: &str, value: impl Display) {
        self.open(name);
        // Writing into a Vec cannot fail; a Display impl that errors only truncates its text.
        let _ = write!(Escaper(self.out), "{value}");
        self.close(name);
    }

    pub(super) fn opt(&mut self, name: &str, value: Option<&str>) {
        if let Some(v) = value {
            self.elem(name, v);
        }
    }

    /// A value that `encoding-type=url` encodes, as AWS does: every byte but the unreserved
    /// ones and `/` (a key `foo+1/bar` lists as `foo%2B1/bar`).
    pub(super) fn encoded(&mut self, name: &str, value: &str, url: bool) {
        if url {
            self.elem(name, uri::encode_path(value));
        } else {
            self.elem(name, value);
        }
    }

    pub(super) fn time(&mut self, name: &str, unix: i64) {
        self.elem(name, DateTime::from_unix(unix).iso8601());
    }

    pub(super) fn owner(&mut self, name: &str, owner: Option<&Owner<'_>>) {
        if let Some(o) = owner {
            self.open(name);
            self.elem("ID", &o.id);
            self.opt("DisplayName", o.display_name.as_deref());
            self.close(name);
        }
    }

    pub(super) fn common_prefixes(&mut self, prefixes: &[Cow<'_, str>], url: bool) {
        for p in prefixes {
            self.open("CommonPrefixes");
            self.encoded("Prefix", p, url);
            self.close("CommonPrefixes");
        }
    }

    /// `<ChecksumCRC32>` & co., those given.
    fn checksums(&mut self, c: &Checksums<'_>) {
        for (name, value) in [
            ("ChecksumCRC32", &c.crc32),
            ("ChecksumCRC32C", &c.crc32c),
            ("ChecksumCRC64NVME", &c.crc64nvme),
            ("ChecksumSHA1", &c.sha1),
            ("ChecksumSHA256", &c.sha256),
        ] {
            self.opt(name, value.as_deref());
        }
    }

    pub(super) fn encoding_type(&mut self, url: bool) {
        if url {
            self.elem("EncodingType", "url");
        }
    }
}

impl ListAllMyBucketsResult<'_> {
    /// Append the document to `out`.
    pub fn write_xml(&self, out: &mut Vec<u8>) {
        let mut w = XmlWriter::document(out, "ListAllMyBucketsResult", true);
        w.owner("Owner", self.owner.as_ref());
        w.open("Buckets");
        for b in &self.buckets {
            w.open("Bucket");
            w.elem("Name", &b.name);
            w.time("CreationDate", b.creation_date_unix);
            w.opt("BucketRegion", b.region.as_deref());
            w.close("Bucket");
        }
        w.close("Buckets");
        w.opt("ContinuationToken", self.continuation_token.as_deref());
        w.opt("Prefix", self.prefix.as_deref());
        w.close("ListAllMyBucketsResult");
    }
}

impl ListBucketResult<'_> {
    /// Append the document to `out`, URL-encoding keys, prefixes, delimiter and markers
    /// when `encoding_type_url` is set.
    pub fn write_xml(&self, out: &mut Vec<u8>) {
        let url = self.encoding_type_url;
        let mut w = XmlWriter::document(out, "ListBucketResult", true);
        w.elem("Name", &self.name);
        // ListObjects (v1) returns the prefix as sent; v2 encodes it.
        let v2 = matches!(self.version, ListVersion::V2 { .. });
        w.encoded("Prefix", &self.prefix, url && v2);
        if let Some(d) = &self.delimiter {
            w.encoded("Delimiter", d, url);
        }
        w.elem("MaxKeys", self.max_keys);
        w.encoding_type(url);
        w.elem("IsTruncated", self.is_truncated);
        match &self.version {
            ListVersion::V1 {
                marker,
                next_marker,
            } => {
                w.encoded("Marker", marker, url);
                if let Some(m) = next_marker {
                    w.encoded("NextMarker", m, url);
                }
            }
            ListVersion::V2 {
                continuation_token,
                next_continuation_token,
                start_after,
            } => {
                let key_count = self
                    .contents
                    .len()
                    .saturating_add(self.common_prefixes.len());
                w.elem("KeyCount", key_count);
                w.opt("ContinuationToken", continuation_token.as_deref());
                w.opt("NextContinuationToken", next_continuation_token.as_deref());
                if let Some(s) = start_after {
                    w.encoded("StartAfter", s, url);
                }
            }
        }
        for o in &self.contents {
            w.open("Contents");
            w.encoded("Key", &o.key, url);
            w.time("LastModified", o.last_modified_unix);
            w.elem("ETag", &o.etag);
            w.elem("Size", o.size);
            w.owner("Owner", o.owner.as_ref());
            w.elem("StorageClass", &o.storage_class);
            w.close("Contents");
        }
        w.common_prefixes(&self.common_prefixes, url);
        w.close("ListBucketResult");
    }
}

impl InitiateMultipartUploadResult<'_> {
    /// Append the document to `out`.
    pub fn write_xml(&self, out: &mut Vec<u8>) {
        let mut w = XmlWriter::document(out, "InitiateMultipartUploadResult", true);
        w.elem("Bucket", &self.bucket);
        w.elem("Key", &self.key);
        w.elem("UploadId", &self.upload_id);
        w.close("InitiateMultipartUploadResult");
    }
}

impl CompleteMultipartUpload<'_> {
    /// Append the request body to `out` (a client's: the rebalance's copy of a multipart
    /// object).
    pub fn write_xml(&self, out: &mut Vec<u8>) {
        let mut w = XmlWriter::document(out, "CompleteMultipartUpload", true);
        for p in &self.parts {
            w.open("Part");
            w.elem("PartNumber", p.part_number);
            w.elem("ETag", &p.etag);
            w.checksums(&p.checksums);
            w.close("Part");
        }
        w.close("CompleteMultipartUpload");
    }
}

impl CompleteMultipartUploadResult<'_> {
    /// Append the document to `out`.
    pub fn write_xml(&self, out: &mut Vec<u8>) {
        let mut w = XmlWriter::document(out, "CompleteMultipartUploadResult", true);
        w.elem("Location", &self.location);
        w.elem("Bucket", &self.bucket);
        w.elem("Key", &self.key);
        w.elem("ETag", &self.etag);
        w.checksums(&self.checksums);
        w.opt("ChecksumType", self.checksum_type.as_deref());
        w.close("CompleteMultipartUploadResult");
    }
}

impl ListPartsResult<'_> {
    /// Append the document to `out`.
    pub fn write_xml(&self, out: &mut Vec<u8>) {
        let mut w = XmlWriter::document(out, "ListPartsResult", true);
        w.elem("Bucket", &self.bucket);
        w.encoded("Key", &self.key, self.encoding_type_url);
        w.elem("UploadId", &self.upload_id);
        w.owner("Initiator", self.initiator.as_ref());
        w.owner("Owner", self.owner.as_ref());
        w.elem("StorageClass", &self.storage_class);
        w.elem("PartNumberMarker", self.part_number_marker);
        if let Some(n) = self.next_part_number_marker {
            w.elem("NextPartNumberMarker", n);
        }
        w.elem("MaxParts", self.max_parts);
        w.elem("IsTruncated", self.is_truncated);
        w.encoding_type(self.encoding_type_url);
        for p in &self.parts {
            w.open("Part");
            w.elem("PartNumber", p.part_number);
            w.time("LastModified", p.last_modified_unix);
            w.elem("ETag", &p.etag);
            w.elem("Size", p.size);
            w.checksums(&p.checksums);
            w.close("Part");
        }
        w.opt("ChecksumAlgorithm", self.checksum_algorithm.as_deref());
        w.opt("ChecksumType", self.checksum_type.as_deref());
        w.close("ListPartsResult");
    }
}

impl GetObjectAttributesResponse<'_> {
    /// Append the document to `out`.
    pub fn write_xml(&self, out: &mut Vec<u8>) {
        let mut w = XmlWriter::document(out, "GetObjectAttributesResponse", true);
        w.opt("ETag", self.etag.as_deref());
        if let Some((sums, kind)) = &self.checksum {
            w.open("Checksum");
            w.checksums(sums);
            w.elem("ChecksumType", kind);
            w.close("Checksum");
        }
        if let Some(p) = &self.object_parts {
            w.open("ObjectParts");
            w.elem("PartsCount", p.total_parts_count);
            if let Some(page) = &p.page {
                w.elem("PartNumberMarker", page.part_number_marker);
                if let Some(n) = page.next_part_number_marker {
                    w.elem("NextPartNumberMarker", n);
                }
                w.elem("MaxParts", page.max_parts);
                w.elem("IsTruncated", page.is_truncated);
                for (number, size, sums) in &page.parts {
                    w.open("Part");
                    w.elem("PartNumber", number);
                    w.elem("Size", size);
                    w.checksums(sums);
                    w.close("Part");
                }
            }
            w.close("ObjectParts");
        }
        w.opt("StorageClass", self.storage_class.as_deref());
        if let Some(n) = self.object_size {
            w.elem("ObjectSize", n);
        }
        w.close("GetObjectAttributesResponse");
    }
}

impl ListMultipartUploadsResult<'_> {
    /// Append the document to `out`.
    pub fn write_xml(&self, out: &mut Vec<u8>) {
        let url = self.encoding_type_url;
        let mut w = XmlWriter::document(out, "ListMultipartUploadsResult", true);
        w.elem("Bucket", &self.bucket);
        w.encoded("KeyMarker", &self.key_marker, url);
        w.elem("UploadIdMarker", &self.upload_id_marker);
        if let Some(m) = &self.next_key_marker {
            w.encoded("NextKeyMarker", m, url);
        }
        w.opt("NextUploadIdMarker", self.next_upload_id_marker.as_deref());
        w.encoded("Prefix", &self.prefix, url);
        if let Some(d) = &self.delimiter {
            w.encoded("Delimiter", d, url);
        }
        w.elem("MaxUploads", self.max_uploads);
        w.elem("IsTruncated", self.is_truncated);
        w.encoding_type(url);
        for u in &self.uploads {
            w.open("Upload");
            w.encoded("Key", &u.key, url);
            w.elem("UploadId", &u.upload_id);
            w.owner("Initiator", u.initiator.as_ref());
            w.owner("Owner", u.owner.as_ref());
            w.elem("StorageClass", &u.storage_class);
            w.time("Initiated", u.initiated_unix);
            w.close("Upload");
        }
        w.common_prefixes(&self.common_prefixes, url);
        w.close("ListMultipartUploadsResult");
    }
}

impl CopyResult<'_> {
    /// Append the document (`CopyObjectResult` or `CopyPartResult`) to `out`.
    pub fn write_xml(&self, out: &mut Vec<u8>) {
        let root = match self.kind {
            CopyKind::Object => "CopyObjectResult",
            CopyKind::Part => "CopyPartResult",
        };
        let mut w = XmlWriter::document(out, root, true);
        w.elem("ETag", &self.etag);
        w.time("LastModified", self.last_modified_unix);
        if self.kind == CopyKind::Object {
            w.opt("ChecksumType", self.checksum_type.as_deref());
        }
        w.checksums(&self.checksums);
        w.close(root);
    }
}

impl DeleteResult<'_> {
    /// Append the document to `out`.
    pub fn write_xml(&self, out: &mut Vec<u8>) {
        let mut w = XmlWriter::document(out, "DeleteResult", true);
        for d in &self.deleted {
            w.open("Deleted");
            w.elem("Key", &d.key);
            w.opt("VersionId", d.version_id.as_deref());
            if d.delete_marker {
                w.elem("DeleteMarker", "true");
            }
            w.opt(
                "DeleteMarkerVersionId",
                d.delete_marker_version_id.as_deref(),
            );
            w.close("Deleted");
        }
        for e in &self.errors {
            w.open("Error");
            w.elem("Key", &e.key);
            w.opt("VersionId", e.version_id.as_deref());
            w.elem("Code", &e.code);
            w.elem("Message", &e.message);
            w.close("Error");
        }
        w.close("DeleteResult");
    }
}

impl Tagging<'_> {
    /// Append the document to `out`.
    pub fn write_xml(&self, out: &mut Vec<u8>) {
        let mut w = XmlWriter::document(out, "Tagging", true);
        w.open("TagSet");
        for t in &self.tags {
            w.open("Tag");
            w.elem("Key", &t.key);
            w.elem("Value", &t.value);
            w.close("Tag");
        }
        w.close("TagSet");
        w.close("Tagging");
    }
}

impl ErrorResponse<'_> {
    /// Append the document to `out` (S3 writes `<Error>` without a namespace).
    pub fn write_xml(&self, out: &mut Vec<u8>) {
        let mut w = XmlWriter::document(out, "Error", false);
        w.elem("Code", &self.code);
        w.elem("Message", &self.message);
        w.opt("Resource", self.resource.as_deref());
        w.opt("RequestId", self.request_id.as_deref());
        w.close("Error");
    }
}

/// Append GetBucketLocation's `<LocationConstraint>`; `us-east-1` (or empty) is written as
/// an empty element, as S3 does.
pub fn write_location_constraint(out: &mut Vec<u8>, region: &str) {
    let mut w = XmlWriter::document(out, "LocationConstraint", true);
    if region != "us-east-1" {
        let _ = write!(Escaper(w.out), "{region}");
    }
    w.close("LocationConstraint");
}

/// Append GetBucketVersioning's `<VersioningConfiguration>`; no status for a bucket that
/// never had versioning (ours), else `Enabled` / `Suspended`.
pub fn write_versioning_configuration(out: &mut Vec<u8>, status: Option<&str>) {
    let mut w = XmlWriter::document(out, "VersioningConfiguration", true);
    w.opt("Status", status);
    w.close("VersioningConfiguration");
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;

    fn escaped(s: &str) -> String {
        let mut out = Vec::new();
        let _ = write!(Escaper(&mut out), "{s}");
        String::from_utf8(out).expect("escaping keeps UTF-8")
    }

    #[test]
    fn escapes_markup_and_controls() {
        assert_eq!(escaped("plain"), "plain");
        assert_eq!(escaped(r#"a&b<c>d"e'f"#), "a&amp;b&lt;c&gt;d&quot;e&apos;f");
        assert_eq!(escaped("x\u{1}y\r\n\t"), "x&#x1;y&#xD;&#xA;&#x9;");
        assert_eq!(escaped("\u{FFFF}é☃"), "&#xFFFF;é☃");
    }

    #[test]
    fn error_document_matches_s3_shape() {
        let mut out = Vec::new();
        ErrorResponse {
            code: "NoSuchKey".into(),
            message: "The resource you requested does not exist".into(),
            resource: Some("/mybucket/myfoto.jpg".into()),
            request_id: Some("4442587FB7D0A2F9".into()),
        }
        .write_xml(&mut out);
        assert_eq!(
            core::str::from_utf8(&out).expect("utf-8"),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>NoSuchKey</Code>\
             <Message>The resource you requested does not exist</Message>\
             <Resource>/mybucket/myfoto.jpg</Resource><RequestId>4442587FB7D0A2F9</RequestId></Error>"
        );
    }

    #[test]
    fn location_and_versioning() {
        let mut out = Vec::new();
        write_location_constraint(&mut out, "us-east-1");
        assert!(out.ends_with(
            b"<LocationConstraint xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"></LocationConstraint>"
        ));
        out.clear();
        write_location_constraint(&mut out, "eu-west-1");
        assert!(out.ends_with(b"\">eu-west-1</LocationConstraint>"));
        out.clear();
        write_versioning_configuration(&mut out, None);
        assert!(out.ends_with(b"\"></VersioningConfiguration>"));
        out.clear();
        write_versioning_configuration(&mut out, Some("Enabled"));
        assert!(out.ends_with(b"<Status>Enabled</Status></VersioningConfiguration>"));
    }

    #[test]
    fn appends_to_existing_buffer() {
        let mut out = Vec::from(&b"prefix"[..]);
        DeleteResult::default().write_xml(&mut out);
        assert!(out.starts_with(b"prefix<?xml"));
    }
}
