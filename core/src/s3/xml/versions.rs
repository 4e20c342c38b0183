//! Versioning documents: `<VersioningConfiguration>` (PutBucketVersioning's body) and
//! `<ListVersionsResult>` (ListObjectVersions), written and parsed back (the proxy merges
//! its backends' pages).

use alloc::borrow::Cow;
use alloc::vec::Vec;

use super::parse::{
    Doc, El, MAX_RESPONSE_ELEMENTS, malformed, malformed_because, opt_url, url_decoded,
};
use super::write::XmlWriter;
use super::{MAX_RESPONSE_BODY, Owner};
#[cfg(test)]
use crate::s3::S3ErrorCode;
use crate::s3::S3Result;
use crate::s3::version::Versioning;

/// Largest `<VersioningConfiguration>` body we parse.
pub const MAX_VERSIONING_BODY: usize = 4096;
/// Elements of a `<VersioningConfiguration>`: the root, `Status` and `MfaDelete`.
const MAX_VERSIONING_ELEMENTS: usize = 8;
/// Elements of a GetBucketVersioning answer read leniently ([`VersioningConfiguration::status_of`]).
const MAX_ANSWER_ELEMENTS: usize = 32;

/// `<VersioningConfiguration>` of PutBucketVersioning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersioningConfiguration<'a> {
    /// `Status`.
    pub status: Versioning,
    /// `MfaDelete`, if given (Ferry does not implement MFA delete).
    pub mfa_delete: Option<Cow<'a, str>>,
}

impl<'a> VersioningConfiguration<'a> {
    /// Parse a PutBucketVersioning body: `Status` must be `Enabled` or `Suspended`
    /// (`MalformedXML` otherwise, as AWS answers).
    pub fn parse_xml(body: &'a [u8]) -> S3Result<Self> {
        let doc = Doc::parse(body, MAX_VERSIONING_BODY, MAX_VERSIONING_ELEMENTS)?;
        let root = doc.root("VersioningConfiguration")?;
        let status = root
            .opt("Status")
            .and_then(|s| Versioning::parse(s.trim().as_bytes()))
            .ok_or_else(|| malformed_because("Status must be Enabled or Suspended"))?;
        Ok(Self {
            status,
            mfa_delete: root.opt("MfaDelete"),
        })
    }

    /// Append the document to `out` (without `MfaDelete`).
    pub fn write_xml(&self, out: &mut Vec<u8>) {
        let mut w = XmlWriter::document(out, "VersioningConfiguration", true);
        w.elem("Status", self.status.as_str());
        w.close("VersioningConfiguration");
    }

    /// The state a GetBucketVersioning answer gives, read leniently: the first `Status` element
    /// (at any depth, under any root: some servers answer under another one, as moto's
    /// `<GetBucketVersioningResponse>`) that names a state. `None` for a bucket never
    /// versioned (no `Status`) or a body that is not XML.
    pub fn status_of(body: &[u8]) -> Option<Versioning> {
        fn find(el: El<'_, '_>) -> Option<Versioning> {
            el.children().find_map(|c| match c.name() {
                "Status" => Versioning::parse(c.text().trim().as_bytes()),
                _ => find(c),
            })
        }
        let doc = Doc::parse(body, MAX_VERSIONING_BODY, MAX_ANSWER_ELEMENTS).ok()?;
        // Any root: its name is not read.
        find(doc.any_root()?)
    }
}

/// One `<Version>` or `<DeleteMarker>` of a ListVersionsResult.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionEntry<'a> {
    /// `Key`.
    pub key: Cow<'a, str>,
    /// `VersionId` (`null` for the null version).
    pub version_id: Cow<'a, str>,
    /// `IsLatest`.
    pub is_latest: bool,
    /// `LastModified`, Unix seconds.
    pub last_modified_unix: i64,
    /// A `<DeleteMarker>` (no ETag, size or storage class).
    pub delete_marker: bool,
    /// `ETag`, quoted (empty for a delete marker).
    pub etag: Cow<'a, str>,
    /// `Size`.
    pub size: u64,
    /// `StorageClass`.
    pub storage_class: Cow<'a, str>,
    /// `Owner`.
    pub owner: Option<Owner<'a>>,
}

/// `<ListVersionsResult>` of ListObjectVersions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListVersionsResult<'a> {
    /// `Name`: the bucket.
    pub name: Cow<'a, str>,
    /// `Prefix` (empty when none).
    pub prefix: Cow<'a, str>,
    /// `KeyMarker`, echoed (empty when none).
    pub key_marker: Cow<'a, str>,
    /// `VersionIdMarker`, echoed (empty when none).
    pub version_id_marker: Cow<'a, str>,
    /// `NextKeyMarker`, when truncated.
    pub next_key_marker: Option<Cow<'a, str>>,
    /// `NextVersionIdMarker`, when truncated on a version (not a common prefix).
    pub next_version_id_marker: Option<Cow<'a, str>>,
    /// `Delimiter`.
    pub delimiter: Option<Cow<'a, str>>,
    /// `MaxKeys`.
    pub max_keys: u32,
    /// `IsTruncated`.
    pub is_truncated: bool,
    /// `EncodingType=url`: keys, prefixes, delimiter and key markers URL-encoded.
    pub encoding_type_url: bool,
    /// `Version` and `DeleteMarker` entries, in order (by key, newest first).
    pub entries: Vec<VersionEntry<'a>>,
    /// `CommonPrefixes/Prefix`.
    pub common_prefixes: Vec<Cow<'a, str>>,
}

impl ListVersionsResult<'_> {
    /// Append the document to `out`.
    pub fn write_xml(&self, out: &mut Vec<u8>) {
        let url = self.encoding_type_url;
        let mut w = XmlWriter::document(out, "ListVersionsResult", true);
        w.elem("Name", &self.name);
        w.encoded("Prefix", &self.prefix, url);
        w.encoded("KeyMarker", &self.key_marker, url);
        w.elem("VersionIdMarker", &self.version_id_marker);
        if let Some(m) = &self.next_key_marker {
            w.encoded("NextKeyMarker", m, url);
        }
        w.opt(
            "NextVersionIdMarker",
            self.next_version_id_marker.as_deref(),
        );
        w.elem("MaxKeys", self.max_keys);
        if let Some(d) = &self.delimiter {
            w.encoded("Delimiter", d, url);
        }
        w.elem("IsTruncated", self.is_truncated);
        w.encoding_type(url);
        for e in &self.entries {
            let name = if e.delete_marker {
                "DeleteMarker"
            } else {
                "Version"
            };
            w.open(name);
            w.encoded("Key", &e.key, url);
            w.elem("VersionId", &e.version_id);
            w.elem("IsLatest", e.is_latest);
            w.time("LastModified", e.last_modified_unix);
            if !e.delete_marker {
                w.elem("ETag", &e.etag);
                w.elem("Size", e.size);
                w.elem("StorageClass", &e.storage_class);
            }
            w.owner("Owner", e.owner.as_ref());
            w.close(name);
        }
        w.common_prefixes(&self.common_prefixes, url);
        w.close("ListVersionsResult");
    }
}

impl<'a> ListVersionsResult<'a> {
    /// Parse a ListObjectVersions response, undoing `encoding-type=url`.
    pub fn parse_xml(body: &'a [u8]) -> S3Result<Self> {
        let doc = Doc::parse(body, MAX_RESPONSE_BODY, MAX_RESPONSE_ELEMENTS)?;
        let root = doc.root("ListVersionsResult")?;
        let url = root.encoding_url();
        let mut entries = Vec::new();
        for el in root.children() {
            let delete_marker = match el.name() {
                "Version" => false,
                "DeleteMarker" => true,
                _ => continue,
            };
            entries.push(entry(el, delete_marker, url)?);
        }
        Ok(Self {
            name: root.req("Name")?,
            prefix: url_decoded(root.opt("Prefix").unwrap_or_default(), url)?,
            key_marker: url_decoded(root.opt("KeyMarker").unwrap_or_default(), url)?,
            version_id_marker: root.opt("VersionIdMarker").unwrap_or_default(),
            next_key_marker: opt_url(root.opt("NextKeyMarker"), url)?,
            next_version_id_marker: root.opt("NextVersionIdMarker"),
            delimiter: opt_url(root.opt("Delimiter"), url)?,
            max_keys: root.num("MaxKeys")?.unwrap_or(1000),
            is_truncated: root.flag("IsTruncated")?.unwrap_or(false),
            encoding_type_url: url,
            entries,
            common_prefixes: root.common_prefixes(url)?,
        })
    }
}

fn entry<'a>(el: El<'_, 'a>, delete_marker: bool, url: bool) -> S3Result<VersionEntry<'a>> {
    Ok(VersionEntry {
        key: url_decoded(el.req("Key")?, url)?,
        version_id: el.req("VersionId")?,
        is_latest: el.flag("IsLatest")?.unwrap_or(false),
        last_modified_unix: el.time("LastModified")?.ok_or_else(malformed)?,
        delete_marker,
        etag: el.opt("ETag").unwrap_or_default(),
        size: el.num("Size")?.unwrap_or(0),
        storage_class: el.opt("StorageClass").unwrap_or_default(),
        owner: el.owner("Owner")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn versioning_configuration_parses_as_aws_sends_it() {
        let body = br#"<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>Enabled</Status></VersioningConfiguration>"#;
        let c = VersioningConfiguration::parse_xml(body).unwrap();
        assert_eq!(c.status, Versioning::Enabled);
        assert_eq!(c.mfa_delete, None);
        let body = b"<VersioningConfiguration><Status>Suspended</Status><MfaDelete>Disabled</MfaDelete></VersioningConfiguration>";
        let c = VersioningConfiguration::parse_xml(body).unwrap();
        assert_eq!(c.status, Versioning::Suspended);
        assert_eq!(c.mfa_delete.as_deref(), Some("Disabled"));
        for bad in [
            &b"<VersioningConfiguration/>"[..],
            b"<VersioningConfiguration><Status>On</Status></VersioningConfiguration>",
            b"<Versioning><Status>Enabled</Status></Versioning>",
            b"<VersioningConfiguration><Status>Enabled</Status>",
        ] {
            assert_eq!(
                VersioningConfiguration::parse_xml(bad).unwrap_err().code,
                S3ErrorCode::MalformedXML
            );
        }
        let mut out = Vec::new();
        c.write_xml(&mut out);
        let back = VersioningConfiguration::parse_xml(&out).unwrap();
        assert_eq!(back.status, Versioning::Suspended);
    }

    #[test]
    fn an_answers_status_is_read_whatever_its_root() {
        let status = VersioningConfiguration::status_of;
        let aws = br#"<?xml version="1.0" encoding="UTF-8"?><VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>Enabled</Status></VersioningConfiguration>"#;
        assert_eq!(status(aws), Some(Versioning::Enabled));
        // moto's root, and a wrapped document.
        let moto = b"<GetBucketVersioningResponse xmlns=\"x\"><Status>Suspended</Status>\
            </GetBucketVersioningResponse>";
        assert_eq!(status(moto), Some(Versioning::Suspended));
        let wrapped = b"<R><VersioningConfiguration><MfaDelete>Enabled</MfaDelete>\
            <Status> Enabled </Status></VersioningConfiguration></R>";
        assert_eq!(status(wrapped), Some(Versioning::Enabled));
        // Never versioned, an MFA delete state alone, a state that is none, not XML.
        for none in [
            &br#"<VersioningConfiguration xmlns="x"/>"#[..],
            b"<VersioningConfiguration><MfaDelete>Enabled</MfaDelete></VersioningConfiguration>",
            b"<VersioningConfiguration><Status>On</Status></VersioningConfiguration>",
            b"Enabled",
            b"",
        ] {
            assert_eq!(status(none), None);
        }
    }

    #[test]
    fn list_versions_result_round_trips() {
        let s = |v: &'static str| Cow::Borrowed(v);
        for url in [false, true] {
            let doc = ListVersionsResult {
                name: s("bucket"),
                prefix: s("a b/"),
                key_marker: s("a b/k+1"),
                version_id_marker: s("fffe000000000000"),
                next_key_marker: Some(s("a b/z&<")),
                next_version_id_marker: Some(s("null")),
                delimiter: Some(s("/")),
                max_keys: 3,
                is_truncated: true,
                encoding_type_url: url,
                entries: vec![
                    VersionEntry {
                        key: s("a b/k+2"),
                        version_id: s("fffe000000000001"),
                        is_latest: true,
                        last_modified_unix: 1_700_000_000,
                        delete_marker: true,
                        etag: s(""),
                        size: 0,
                        storage_class: s(""),
                        owner: Some(Owner {
                            id: s("abc"),
                            display_name: None,
                        }),
                    },
                    VersionEntry {
                        key: s("a b/k+2"),
                        version_id: s("null"),
                        is_latest: false,
                        last_modified_unix: 1_600_000_000,
                        delete_marker: false,
                        etag: s("\"9b2cf535f27731c974343645a3985328\""),
                        size: 12,
                        storage_class: s("STANDARD"),
                        owner: None,
                    },
                ],
                common_prefixes: vec![s("a b/p/")],
            };
            let mut out = Vec::new();
            doc.write_xml(&mut out);
            assert_eq!(ListVersionsResult::parse_xml(&out), Ok(doc));
        }
    }
}
