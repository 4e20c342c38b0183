//! XML parsing: the `xmlparser` tokens become a small arena tree, which the document parsers
//! walk by element name.
//!
//! The tree is hand-built because `xmlparser` is only a tokenizer (no nesting check, no
//! entity decoding), and a tree keeps each document parser a few lines of lookups.
//! Namespaces are ignored: elements are matched by local name.

use alloc::borrow::Cow;
use alloc::string::String;
use alloc::vec::Vec;
use core::str::FromStr;

use super::*;
use crate::s3::{S3Error, S3ErrorCode, S3Result, uri, validate};
use crate::time::DateTime;
use xmlparser::{ElementEnd, Token, Tokenizer};

/// Nesting deeper than any S3 document is refused.
const MAX_DEPTH: usize = 32;
/// Elements of a `<Delete>`: the root, `Quiet`, and per object `Object` and its five fields.
const MAX_DELETE_ELEMENTS: usize = 2 + MAX_DELETE_OBJECTS * 6;
/// Elements of a `<CompleteMultipartUpload>`: the root, and per part `Part`, `PartNumber`,
/// `ETag` and five checksums.
const MAX_COMPLETE_ELEMENTS: usize = 1 + 10_000 * 8;
/// Elements of a `<CreateBucketConfiguration>`.
const MAX_CREATE_BUCKET_ELEMENTS: usize = 64;
/// Elements of a `<Tagging>`: the root, `TagSet`, and per tag `Tag`, `Key` and `Value`, for
/// up to 1,000 tags (more than any limit, so that too many tags are `InvalidTag`).
const MAX_TAGGING_ELEMENTS: usize = 2 + 1000 * 3;
/// Elements of a response document (a listing page of 1,000 entries, 10,000 buckets).
pub(super) const MAX_RESPONSE_ELEMENTS: usize = 1 << 16;

pub(super) fn malformed() -> S3Error {
    S3ErrorCode::MalformedXML.into()
}

pub(super) fn malformed_because(why: &'static str) -> S3Error {
    S3Error::with_message(S3ErrorCode::MalformedXML, why)
}

struct Node<'a> {
    prefix: &'a str,
    name: &'a str,
    text: Cow<'a, str>,
    first_child: Option<usize>,
    last_child: Option<usize>,
    next_sibling: Option<usize>,
}

/// A parsed document: the root is node 0.
pub(super) struct Doc<'a> {
    nodes: Vec<Node<'a>>,
}

impl<'a> Doc<'a> {
    /// Parse `body` (at most `max_len` bytes) into at most `max_elements` elements: a tree
    /// node per element costs about a hundred bytes, so a body of empty elements would
    /// otherwise grow some 25 times in memory.
    pub(super) fn parse(body: &'a [u8], max_len: usize, max_elements: usize) -> S3Result<Self> {
        if body.len() > max_len {
            return Err(malformed_because("The XML body is too large"));
        }
        let text = core::str::from_utf8(body).map_err(|_| malformed())?;
        let mut nodes: Vec<Node<'a>> = Vec::new();
        let mut stack: Vec<usize> = Vec::new();
        for token in Tokenizer::from(text) {
            match token.map_err(|_| malformed())? {
                Token::Declaration { .. }
                | Token::ProcessingInstruction { .. }
                | Token::Comment { .. }
                | Token::Attribute { .. } => {}
                Token::DtdStart { .. }
                | Token::EmptyDtd { .. }
                | Token::EntityDeclaration { .. }
                | Token::DtdEnd { .. } => {
                    return Err(malformed_because("DOCTYPE declarations are not allowed"));
                }
                Token::ElementStart { prefix, local, .. } => {
                    if stack.is_empty() && !nodes.is_empty() {
                        return Err(malformed_because("More than one root element"));
                    }
                    if stack.len() >= MAX_DEPTH {
                        return Err(malformed_because("The XML is nested too deeply"));
                    }
                    if nodes.len() >= max_elements {
                        return Err(malformed_because("The XML has too many elements"));
                    }
                    let idx = nodes.len();
                    if let Some(&p) = stack.last() {
                        let prev = nodes.get(p).and_then(|n| n.last_child);
                        if let Some(prev) = prev.and_then(|i| nodes.get_mut(i)) {
                            prev.next_sibling = Some(idx);
                        }
                        if let Some(parent) = nodes.get_mut(p) {
                            parent.first_child.get_or_insert(idx);
                            parent.last_child = Some(idx);
                        }
                    }
                    nodes.push(Node {
                        prefix: prefix.as_str(),
                        name: local.as_str(),
                        text: Cow::Borrowed(""),
                        first_child: None,
                        last_child: None,
                        next_sibling: None,
                    });
                    stack.push(idx);
                }
                Token::ElementEnd { end, .. } => match end {
                    ElementEnd::Open => {}
                    ElementEnd::Empty => {
                        stack.pop().ok_or_else(malformed)?;
                    }
                    ElementEnd::Close(prefix, local) => {
                        let open = stack
                            .pop()
                            .and_then(|i| nodes.get(i))
                            .ok_or_else(malformed)?;
                        if open.prefix != prefix.as_str() || open.name != local.as_str() {
                            return Err(malformed_because("Mismatched closing tag"));
                        }
                    }
                },
                Token::Text { text } => {
                    let raw = text.as_str();
                    match stack.last().and_then(|&i| nodes.get_mut(i)) {
                        Some(node) => {
                            let text = decode_entities(raw)?;
                            // Text beside child elements (indentation) is not content.
                            if node.first_child.is_none() {
                                append(&mut node.text, text);
                            }
                        }
                        None if raw.trim_ascii().is_empty() => {}
                        None => return Err(malformed_because("Text outside the root element")),
                    }
                }
                Token::Cdata { text, .. } => {
                    let node = stack
                        .last()
                        .and_then(|&i| nodes.get_mut(i))
                        .ok_or_else(malformed)?;
                    append(&mut node.text, Cow::Borrowed(text.as_str()));
                }
            }
        }
        if !stack.is_empty() || nodes.is_empty() {
            return Err(malformed_because("The XML is incomplete"));
        }
        Ok(Self { nodes })
    }

    /// The root element, whatever its name.
    pub(super) fn any_root(&self) -> Option<El<'_, 'a>> {
        self.nodes.first().map(|node| El { doc: self, node })
    }

    pub(super) fn root(&self, name: &str) -> S3Result<El<'_, 'a>> {
        let node = self.nodes.first().ok_or_else(malformed)?;
        if node.name != name {
            return Err(malformed_because("Unexpected root element"));
        }
        Ok(El { doc: self, node })
    }
}

fn append<'a>(text: &mut Cow<'a, str>, more: Cow<'a, str>) {
    if text.is_empty() {
        *text = more;
    } else {
        text.to_mut().push_str(&more);
    }
}

/// Decode the five predefined entities and numeric character references.
///
/// Any other entity is refused: there is no DTD to define it. Character references may
/// name control characters, which our writer emits for keys that contain them.
pub(crate) fn decode_entities(raw: &str) -> S3Result<Cow<'_, str>> {
    if !raw.contains('&') {
        return Ok(Cow::Borrowed(raw));
    }
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(amp) = rest.find('&') {
        let (plain, tail) = rest.split_at(amp);
        out.push_str(plain);
        let semi = tail.find(';').ok_or_else(malformed)?;
        let name = tail.get(1..semi).ok_or_else(malformed)?;
        let c = match name {
            "lt" => '<',
            "gt" => '>',
            "amp" => '&',
            "quot" => '"',
            "apos" => '\'',
            _ => {
                let num = name.strip_prefix('#').ok_or_else(|| {
                    malformed_because(
                        "Entity references other than the predefined five are not allowed",
                    )
                })?;
                let (digits, radix) = match num.strip_prefix('x') {
                    Some(hex) => (hex, 16),
                    None => (num, 10),
                };
                // from_str_radix accepts a leading '+', which XML does not.
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(malformed());
                }
                u32::from_str_radix(digits, radix)
                    .ok()
                    .and_then(char::from_u32)
                    .ok_or_else(malformed)?
            }
        };
        out.push(c);
        rest = tail.get(semi + 1..).unwrap_or_default();
    }
    out.push_str(rest);
    Ok(Cow::Owned(out))
}

/// An element of a parsed document.
#[derive(Clone, Copy)]
pub(super) struct El<'d, 'a> {
    doc: &'d Doc<'a>,
    node: &'d Node<'a>,
}

impl<'d, 'a> El<'d, 'a> {
    pub(super) fn children(self) -> impl Iterator<Item = El<'d, 'a>> {
        let doc = self.doc;
        core::iter::successors(
            self.node.first_child.and_then(|i| doc.nodes.get(i)),
            move |n| n.next_sibling.and_then(|i| doc.nodes.get(i)),
        )
        .map(move |node| El { doc, node })
    }

    pub(super) fn all(self, name: &'d str) -> impl Iterator<Item = El<'d, 'a>> {
        self.children().filter(move |c| c.node.name == name)
    }

    pub(super) fn child(self, name: &str) -> Option<El<'d, 'a>> {
        self.children().find(|c| c.node.name == name)
    }

    /// The element's local name.
    pub(super) fn name(self) -> &'a str {
        self.node.name
    }

    pub(super) fn text(self) -> Cow<'a, str> {
        self.node.text.clone()
    }

    pub(super) fn opt(self, name: &str) -> Option<Cow<'a, str>> {
        self.child(name).map(El::text)
    }

    pub(super) fn req(self, name: &str) -> S3Result<Cow<'a, str>> {
        self.opt(name).ok_or_else(malformed)
    }

    pub(super) fn num<T: FromStr>(self, name: &str) -> S3Result<Option<T>> {
        self.child(name)
            .map(|c| c.node.text.trim().parse().map_err(|_| malformed()))
            .transpose()
    }

    pub(super) fn flag(self, name: &str) -> S3Result<Option<bool>> {
        self.child(name)
            .map(|c| match c.node.text.trim() {
                t if t.eq_ignore_ascii_case("true") => Ok(true),
                t if t.eq_ignore_ascii_case("false") => Ok(false),
                _ => Err(malformed()),
            })
            .transpose()
    }

    pub(super) fn time(self, name: &str) -> S3Result<Option<i64>> {
        self.child(name)
            .map(|c| {
                DateTime::parse_iso8601(c.node.text.trim())
                    .map(DateTime::to_unix)
                    .ok_or_else(malformed)
            })
            .transpose()
    }

    pub(super) fn owner(self, name: &str) -> S3Result<Option<Owner<'a>>> {
        self.child(name)
            .map(|o| {
                Ok(Owner {
                    id: o.req("ID")?,
                    display_name: o.opt("DisplayName"),
                })
            })
            .transpose()
    }

    pub(super) fn encoding_url(self) -> bool {
        self.opt("EncodingType")
            .is_some_and(|e| e.trim().eq_ignore_ascii_case("url"))
    }

    pub(super) fn common_prefixes(self, url: bool) -> S3Result<Vec<Cow<'a, str>>> {
        self.all("CommonPrefixes")
            .map(|c| url_decoded(c.req("Prefix")?, url))
            .collect()
    }
}

/// Undo `encoding-type=url` (S3 may write spaces as `+`, so `+` decodes to a space).
pub(super) fn url_decoded(value: Cow<'_, str>, url: bool) -> S3Result<Cow<'_, str>> {
    if !url {
        return Ok(value);
    }
    let bad = |_| malformed_because("Invalid URL encoding in the XML");
    match value {
        Cow::Borrowed(s) => uri::decode(s, true).map_err(bad),
        Cow::Owned(s) => uri::decode(&s, true)
            .map(|c| Cow::Owned(c.into_owned()))
            .map_err(bad),
    }
}

pub(super) fn opt_url(value: Option<Cow<'_, str>>, url: bool) -> S3Result<Option<Cow<'_, str>>> {
    value.map(|v| url_decoded(v, url)).transpose()
}

fn checksums<'a>(el: El<'_, 'a>) -> Checksums<'a> {
    Checksums {
        crc32: el.opt("ChecksumCRC32"),
        crc32c: el.opt("ChecksumCRC32C"),
        crc64nvme: el.opt("ChecksumCRC64NVME"),
        sha1: el.opt("ChecksumSHA1"),
        sha256: el.opt("ChecksumSHA256"),
    }
}

fn trimmed(value: Cow<'_, str>) -> Cow<'_, str> {
    match value {
        Cow::Borrowed(s) => Cow::Borrowed(s.trim()),
        Cow::Owned(s) if s.trim().len() == s.len() => Cow::Owned(s),
        Cow::Owned(s) => Cow::Owned(String::from(s.trim())),
    }
}

impl<'a> CompleteMultipartUpload<'a> {
    /// Parse the request body (at most [`MAX_COMPLETE_BODY`] bytes).
    ///
    /// Missing parts or fields are `MalformedXML`; a part number outside 1..=10000 is
    /// `InvalidArgument`; parts not in strictly ascending order are `InvalidPartOrder`.
    pub fn parse_xml(body: &'a [u8]) -> S3Result<Self> {
        let doc = Doc::parse(body, MAX_COMPLETE_BODY, MAX_COMPLETE_ELEMENTS)?;
        let root = doc.root("CompleteMultipartUpload")?;
        let mut parts: Vec<CompletedPart<'a>> = Vec::new();
        for p in root.all("Part") {
            let number = p.req("PartNumber")?;
            let number = number.trim();
            if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
                return Err(malformed());
            }
            let part_number = validate::part_number(number)?;
            if parts
                .last()
                .is_some_and(|last| last.part_number >= part_number)
            {
                return Err(S3ErrorCode::InvalidPartOrder.into());
            }
            parts.push(CompletedPart {
                part_number,
                etag: trimmed(p.req("ETag")?),
                checksums: checksums(p),
            });
        }
        if parts.is_empty() {
            return Err(malformed_because("You must specify at least one part"));
        }
        Ok(Self { parts })
    }
}

impl<'a> CreateBucketConfiguration<'a> {
    /// Parse the CreateBucket body (at most [`MAX_CREATE_BUCKET_BODY`] bytes).
    pub fn parse_xml(body: &'a [u8]) -> S3Result<Self> {
        let doc = Doc::parse(body, MAX_CREATE_BUCKET_BODY, MAX_CREATE_BUCKET_ELEMENTS)?;
        let root = doc.root("CreateBucketConfiguration")?;
        Ok(Self {
            location_constraint: root.opt("LocationConstraint").map(trimmed),
        })
    }
}

impl<'a> Tagging<'a> {
    /// Parse a `<Tagging>` document (at most [`MAX_TAGGING_BODY`] bytes): a `TagSet` is
    /// required, and each `Tag` needs a `Key` and a `Value`; keys and values are kept as sent.
    pub fn parse_xml(body: &'a [u8]) -> S3Result<Self> {
        let doc = Doc::parse(body, MAX_TAGGING_BODY, MAX_TAGGING_ELEMENTS)?;
        let root = doc.root("Tagging")?;
        let set = root
            .child("TagSet")
            .ok_or_else(|| malformed_because("The TagSet element is missing"))?;
        let tags = set
            .all("Tag")
            .map(|t| {
                Ok(crate::s3::tagging::Tag {
                    key: t.req("Key")?,
                    value: t.req("Value")?,
                })
            })
            .collect::<S3Result<_>>()?;
        Ok(Self { tags })
    }
}

impl<'a> Delete<'a> {
    /// Parse the DeleteObjects body (at most [`MAX_DELETE_BODY`] bytes, 1..=1000 objects).
    pub fn parse_xml(body: &'a [u8]) -> S3Result<Self> {
        let doc = Doc::parse(body, MAX_DELETE_BODY, MAX_DELETE_ELEMENTS)?;
        let root = doc.root("Delete")?;
        let quiet = root.flag("Quiet")?.unwrap_or(false);
        let mut objects = Vec::new();
        for o in root.all("Object") {
            if objects.len() >= MAX_DELETE_OBJECTS {
                return Err(malformed_because(
                    "The request must contain no more than 1000 keys",
                ));
            }
            objects.push(ObjectIdentifier {
                key: o.req("Key")?,
                version_id: o.opt("VersionId").map(trimmed),
            });
        }
        if objects.is_empty() {
            return Err(malformed_because(
                "The request must contain at least one key",
            ));
        }
        Ok(Self { quiet, objects })
    }
}

impl<'a> ListAllMyBucketsResult<'a> {
    /// Parse a ListBuckets response.
    pub fn parse_xml(body: &'a [u8]) -> S3Result<Self> {
        let doc = Doc::parse(body, MAX_RESPONSE_BODY, MAX_RESPONSE_ELEMENTS)?;
        let root = doc.root("ListAllMyBucketsResult")?;
        let buckets = match root.child("Buckets") {
            None => Vec::new(),
            Some(bs) => bs
                .all("Bucket")
                .map(|b| {
                    Ok(BucketEntry {
                        name: b.req("Name")?,
                        creation_date_unix: b.time("CreationDate")?.ok_or_else(malformed)?,
                        region: b.opt("BucketRegion"),
                    })
                })
                .collect::<S3Result<_>>()?,
        };
        Ok(Self {
            owner: root.owner("Owner")?,
            buckets,
            continuation_token: root.opt("ContinuationToken"),
            prefix: root.opt("Prefix"),
        })
    }
}

impl<'a> ListBucketResult<'a> {
    /// Parse a ListObjects (v1) or ListObjectsV2 response, undoing `encoding-type=url`.
    ///
    /// v2 is recognised by `KeyCount`, which S3 always sends in v2 and never in v1.
    pub fn parse_xml(body: &'a [u8]) -> S3Result<Self> {
        let doc = Doc::parse(body, MAX_RESPONSE_BODY, MAX_RESPONSE_ELEMENTS)?;
        let root = doc.root("ListBucketResult")?;
        let url = root.encoding_url();
        let contents = root
            .all("Contents")
            .map(|c| {
                Ok(ObjectEntry {
                    key: url_decoded(c.req("Key")?, url)?,
                    last_modified_unix: c.time("LastModified")?.ok_or_else(malformed)?,
                    etag: c.opt("ETag").unwrap_or_default(),
                    size: c.num("Size")?.ok_or_else(malformed)?,
                    storage_class: c.opt("StorageClass").unwrap_or_default(),
                    owner: c.owner("Owner")?,
                })
            })
            .collect::<S3Result<_>>()?;
        let version = if root.child("KeyCount").is_some() {
            ListVersion::V2 {
                continuation_token: root.opt("ContinuationToken"),
                next_continuation_token: root.opt("NextContinuationToken"),
                start_after: opt_url(root.opt("StartAfter"), url)?,
            }
        } else {
            ListVersion::V1 {
                marker: url_decoded(root.opt("Marker").unwrap_or_default(), url)?,
                next_marker: opt_url(root.opt("NextMarker"), url)?,
            }
        };
        Ok(Self {
            name: root.req("Name")?,
            prefix: url_decoded(root.opt("Prefix").unwrap_or_default(), url)?,
            delimiter: opt_url(root.opt("Delimiter"), url)?,
            max_keys: root.num("MaxKeys")?.unwrap_or(1000),
            is_truncated: root.flag("IsTruncated")?.unwrap_or(false),
            encoding_type_url: url,
            contents,
            common_prefixes: root.common_prefixes(url)?,
            version,
        })
    }
}

impl<'a> InitiateMultipartUploadResult<'a> {
    /// Parse a CreateMultipartUpload response.
    pub fn parse_xml(body: &'a [u8]) -> S3Result<Self> {
        let doc = Doc::parse(body, MAX_RESPONSE_BODY, MAX_RESPONSE_ELEMENTS)?;
        let root = doc.root("InitiateMultipartUploadResult")?;
        Ok(Self {
            bucket: root.req("Bucket")?,
            key: root.req("Key")?,
            upload_id: root.req("UploadId")?,
        })
    }
}

impl<'a> CompleteMultipartUploadResult<'a> {
    /// Parse a CompleteMultipartUpload response.
    pub fn parse_xml(body: &'a [u8]) -> S3Result<Self> {
        let doc = Doc::parse(body, MAX_RESPONSE_BODY, MAX_RESPONSE_ELEMENTS)?;
        let root = doc.root("CompleteMultipartUploadResult")?;
        Ok(Self {
            location: root.opt("Location").unwrap_or_default(),
            bucket: root.req("Bucket")?,
            key: root.req("Key")?,
            etag: root.req("ETag")?,
            checksums: checksums(root),
            checksum_type: root.opt("ChecksumType"),
        })
    }
}

impl<'a> ListPartsResult<'a> {
    /// Parse a ListParts response.
    pub fn parse_xml(body: &'a [u8]) -> S3Result<Self> {
        let doc = Doc::parse(body, MAX_RESPONSE_BODY, MAX_RESPONSE_ELEMENTS)?;
        let root = doc.root("ListPartsResult")?;
        let url = root.encoding_url();
        let parts = root
            .all("Part")
            .map(|p| {
                Ok(PartEntry {
                    part_number: p.num("PartNumber")?.ok_or_else(malformed)?,
                    last_modified_unix: p.time("LastModified")?.ok_or_else(malformed)?,
                    etag: p.opt("ETag").unwrap_or_default(),
                    size: p.num("Size")?.ok_or_else(malformed)?,
                    checksums: checksums(p),
                })
            })
            .collect::<S3Result<_>>()?;
        Ok(Self {
            bucket: root.req("Bucket")?,
            key: url_decoded(root.req("Key")?, url)?,
            upload_id: root.req("UploadId")?,
            initiator: root.owner("Initiator")?,
            owner: root.owner("Owner")?,
            storage_class: root.opt("StorageClass").unwrap_or_default(),
            part_number_marker: root.num("PartNumberMarker")?.unwrap_or(0),
            next_part_number_marker: root.num("NextPartNumberMarker")?,
            max_parts: root.num("MaxParts")?.unwrap_or(1000),
            is_truncated: root.flag("IsTruncated")?.unwrap_or(false),
            encoding_type_url: url,
            parts,
            checksum_algorithm: root.opt("ChecksumAlgorithm"),
            checksum_type: root.opt("ChecksumType"),
        })
    }
}

impl<'a> ListMultipartUploadsResult<'a> {
    /// Parse a ListMultipartUploads response, undoing `encoding-type=url`.
    pub fn parse_xml(body: &'a [u8]) -> S3Result<Self> {
        let doc = Doc::parse(body, MAX_RESPONSE_BODY, MAX_RESPONSE_ELEMENTS)?;
        let root = doc.root("ListMultipartUploadsResult")?;
        let url = root.encoding_url();
        let uploads = root
            .all("Upload")
            .map(|u| {
                Ok(UploadEntry {
                    key: url_decoded(u.req("Key")?, url)?,
                    upload_id: u.req("UploadId")?,
                    initiator: u.owner("Initiator")?,
                    owner: u.owner("Owner")?,
                    storage_class: u.opt("StorageClass").unwrap_or_default(),
                    initiated_unix: u.time("Initiated")?.ok_or_else(malformed)?,
                })
            })
            .collect::<S3Result<_>>()?;
        Ok(Self {
            bucket: root.req("Bucket")?,
            key_marker: url_decoded(root.opt("KeyMarker").unwrap_or_default(), url)?,
            upload_id_marker: root.opt("UploadIdMarker").unwrap_or_default(),
            next_key_marker: opt_url(root.opt("NextKeyMarker"), url)?,
            next_upload_id_marker: root.opt("NextUploadIdMarker"),
            prefix: url_decoded(root.opt("Prefix").unwrap_or_default(), url)?,
            delimiter: opt_url(root.opt("Delimiter"), url)?,
            max_uploads: root.num("MaxUploads")?.unwrap_or(1000),
            is_truncated: root.flag("IsTruncated")?.unwrap_or(false),
            encoding_type_url: url,
            uploads,
            common_prefixes: root.common_prefixes(url)?,
        })
    }
}

impl<'a> CopyResult<'a> {
    /// Parse a CopyObject or UploadPartCopy response.
    pub fn parse_xml(body: &'a [u8]) -> S3Result<Self> {
        let doc = Doc::parse(body, MAX_RESPONSE_BODY, MAX_RESPONSE_ELEMENTS)?;
        let (kind, root) = match doc.root("CopyObjectResult") {
            Ok(r) => (CopyKind::Object, r),
            Err(_) => (CopyKind::Part, doc.root("CopyPartResult")?),
        };
        Ok(Self {
            kind,
            etag: root.req("ETag")?,
            last_modified_unix: root.time("LastModified")?.ok_or_else(malformed)?,
            checksum_type: root.opt("ChecksumType"),
            checksums: checksums(root),
        })
    }
}

impl<'a> DeleteResult<'a> {
    /// Parse a DeleteObjects response.
    pub fn parse_xml(body: &'a [u8]) -> S3Result<Self> {
        let doc = Doc::parse(body, MAX_RESPONSE_BODY, MAX_RESPONSE_ELEMENTS)?;
        let root = doc.root("DeleteResult")?;
        let deleted = root
            .all("Deleted")
            .map(|d| {
                Ok(DeletedEntry {
                    key: d.req("Key")?,
                    version_id: d.opt("VersionId"),
                    delete_marker: d.flag("DeleteMarker")?.unwrap_or(false),
                    delete_marker_version_id: d.opt("DeleteMarkerVersionId"),
                })
            })
            .collect::<S3Result<_>>()?;
        let errors = root
            .all("Error")
            .map(|e| {
                Ok(DeleteError {
                    key: e.req("Key")?,
                    version_id: e.opt("VersionId"),
                    code: e.req("Code")?,
                    message: e.opt("Message").unwrap_or_default(),
                })
            })
            .collect::<S3Result<_>>()?;
        Ok(Self { deleted, errors })
    }
}

impl<'a> ErrorResponse<'a> {
    /// Parse an `<Error>` document.
    pub fn parse_xml(body: &'a [u8]) -> S3Result<Self> {
        let doc = Doc::parse(body, MAX_RESPONSE_BODY, MAX_RESPONSE_ELEMENTS)?;
        let root = doc.root("Error")?;
        Ok(Self {
            code: root.req("Code")?,
            message: root.opt("Message").unwrap_or_default(),
            resource: root.opt("Resource"),
            request_id: root.opt("RequestId"),
        })
    }
}

/// An `AccessControlPolicy` document as written: the owner's id and each grant's grantee
/// (by `ID`, `URI` or `EmailAddress`) and permission, unchecked (`s3::acl` checks them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclDocument<'a> {
    /// `Owner/ID`.
    pub owner: Cow<'a, str>,
    /// The grants, in order.
    pub grants: Vec<AclDocumentGrant<'a>>,
}

/// One `Grant` of an [`AclDocument`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclDocumentGrant<'a> {
    /// `Grantee/ID` (a canonical user).
    pub id: Option<Cow<'a, str>>,
    /// `Grantee/URI` (a group).
    pub uri: Option<Cow<'a, str>>,
    /// `Grantee/EmailAddress`.
    pub email: Option<Cow<'a, str>>,
    /// `Permission`.
    pub permission: Cow<'a, str>,
}

impl<'a> AclDocument<'a> {
    /// Parse an `AccessControlPolicy` of at most `max_len` bytes and `max_grants` grants.
    pub fn parse_xml(body: &'a [u8], max_len: usize, max_grants: usize) -> S3Result<Self> {
        let doc = Doc::parse(body, max_len, 8 + max_grants * 8)?;
        let root = doc.root("AccessControlPolicy")?;
        let owner = root.child("Owner").ok_or_else(malformed)?.req("ID")?;
        let list = root.child("AccessControlList").ok_or_else(malformed)?;
        let mut grants = Vec::new();
        for g in list.all("Grant") {
            let grantee = g.child("Grantee").ok_or_else(malformed)?;
            grants.push(AclDocumentGrant {
                id: grantee.opt("ID").map(trimmed),
                uri: grantee.opt("URI").map(trimmed),
                email: grantee.opt("EmailAddress").map(trimmed),
                permission: trimmed(g.req("Permission")?),
            });
        }
        Ok(Self {
            owner: trimmed(owner),
            grants,
        })
    }
}
