//! S3 XML bodies: request bodies parsed, responses written (and parsed back for the proxy
//! and the load tester).
//!
//! Parsing runs over the `no_std` `xmlparser` tokenizer. DOCTYPE and entity declarations are
//! rejected (no XXE, no entity expansion); the five predefined entities and numeric
//! character references are decoded. Anything malformed is `MalformedXML`.
//!
//! Writers append to a caller-owned `Vec<u8>`, escaping `& < > " '` and control characters
//! (as numeric references, which XML 1.0 text cannot hold literally). Documents are plain
//! structs with `Cow` strings, so the storage node builds them from borrowed data and the
//! parsers return them borrowing from the body.

use alloc::borrow::Cow;
use alloc::vec::Vec;

use super::checksum::ChecksumAlgorithm;
use super::{S3Error, S3ErrorCode, S3Result};

mod cors;
mod encryption;
mod lifecycle;
pub mod lock;
mod parse;
mod public_access;
mod versions;
mod write;

pub use cors::{
    CORS_METHODS, CORS_VARY, CorsConfiguration, CorsRule, MAX_CORS_BODY, MAX_CORS_RULE_ID,
    MAX_CORS_RULES, cors_headers, requested_headers,
};
pub use encryption::{MAX_ENCRYPTION_BODY, ServerSideEncryptionConfiguration};
pub use lifecycle::{
    DAY_SECS, Expiration, LifecycleConfiguration, LifecycleFilter, LifecycleRule,
    MAX_LIFECYCLE_BODY, MAX_LIFECYCLE_PREFIX, MAX_LIFECYCLE_RULE_ID, MAX_LIFECYCLE_RULES,
    MAX_NEWER_NONCURRENT_VERSIONS, NoncurrentVersionExpiration, expiration_header,
    expiry_after_days,
};
pub use parse::{AclDocument, AclDocumentGrant};
pub use public_access::{
    MAX_PUBLIC_ACCESS_BODY, ObjectOwnership, OwnershipControls, PublicAccessBlock,
};
pub use versions::{
    ListVersionsResult, MAX_VERSIONING_BODY, VersionEntry, VersioningConfiguration,
};

pub use write::{escape, write_location_constraint, write_versioning_configuration};

/// The S3 XML namespace of response documents.
pub const S3_NS: &str = "http://s3.amazonaws.com/doc/2006-03-01/";
/// At most this many keys in one DeleteObjects request (more is `MalformedXML`, as in S3).
pub const MAX_DELETE_OBJECTS: usize = 1000;
/// Largest DeleteObjects body we parse: 1000 keys of 1024 bytes with room for markup.
pub const MAX_DELETE_BODY: usize = 2 << 20;
/// Largest CompleteMultipartUpload body we parse: 10000 parts with checksums.
pub const MAX_COMPLETE_BODY: usize = 4 << 20;
/// Largest response document the listing parsers accept.
pub const MAX_RESPONSE_BODY: usize = 16 << 20;

/// The checksums a part or object may carry (base64 values as sent).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checksums<'a> {
    /// `ChecksumCRC32`.
    pub crc32: Option<Cow<'a, str>>,
    /// `ChecksumCRC32C`.
    pub crc32c: Option<Cow<'a, str>>,
    /// `ChecksumCRC64NVME`.
    pub crc64nvme: Option<Cow<'a, str>>,
    /// `ChecksumSHA1`.
    pub sha1: Option<Cow<'a, str>>,
    /// `ChecksumSHA256`.
    pub sha256: Option<Cow<'a, str>>,
}

impl<'a> Checksums<'a> {
    /// Only `algorithm`'s value.
    pub fn one(algorithm: ChecksumAlgorithm, value: impl Into<Cow<'a, str>>) -> Self {
        let mut c = Self::default();
        *c.slot(algorithm) = Some(value.into());
        c
    }

    fn slot(&mut self, algorithm: ChecksumAlgorithm) -> &mut Option<Cow<'a, str>> {
        match algorithm {
            ChecksumAlgorithm::Crc32 => &mut self.crc32,
            ChecksumAlgorithm::Crc32c => &mut self.crc32c,
            ChecksumAlgorithm::Crc64Nvme => &mut self.crc64nvme,
            ChecksumAlgorithm::Sha1 => &mut self.sha1,
            ChecksumAlgorithm::Sha256 => &mut self.sha256,
        }
    }

    /// `algorithm`'s value, if given.
    pub fn get(&self, algorithm: ChecksumAlgorithm) -> Option<&str> {
        match algorithm {
            ChecksumAlgorithm::Crc32 => self.crc32.as_deref(),
            ChecksumAlgorithm::Crc32c => self.crc32c.as_deref(),
            ChecksumAlgorithm::Crc64Nvme => self.crc64nvme.as_deref(),
            ChecksumAlgorithm::Sha1 => self.sha1.as_deref(),
            ChecksumAlgorithm::Sha256 => self.sha256.as_deref(),
        }
    }

    /// The algorithms whose values are given, in documentation order.
    pub fn algorithms(&self) -> impl Iterator<Item = ChecksumAlgorithm> + '_ {
        ChecksumAlgorithm::ALL
            .into_iter()
            .filter(|a| self.get(*a).is_some())
    }
}

/// One `<Part>` of a CompleteMultipartUpload request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletedPart<'a> {
    /// `PartNumber` (1..=10000).
    pub part_number: u16,
    /// `ETag`, as sent (usually quoted).
    pub etag: Cow<'a, str>,
    /// Optional checksums of the part.
    pub checksums: Checksums<'a>,
}

/// The `<CompleteMultipartUpload>` request body: parts in strictly ascending order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompleteMultipartUpload<'a> {
    /// The parts, at least one, part numbers strictly ascending.
    pub parts: Vec<CompletedPart<'a>>,
}

/// One `<Object>` of a DeleteObjects request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectIdentifier<'a> {
    /// `Key`, exactly as sent (not trimmed; may be empty or too long: per-key errors).
    pub key: Cow<'a, str>,
    /// `VersionId`.
    pub version_id: Option<Cow<'a, str>>,
}

/// Largest CreateBucketConfiguration body accepted (S3's own documents are a few hundred bytes).
pub const MAX_CREATE_BUCKET_BODY: usize = 64 << 10;

/// The region where CreateBucket of a bucket its caller already owns answers `200` (AWS's
/// legacy behaviour there, the bucket's ACL reset), not `409 BucketAlreadyOwnedByYou`.
pub const LEGACY_CREATE_REGION: &str = "us-east-1";

/// The `<CreateBucketConfiguration>` request body of CreateBucket.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CreateBucketConfiguration<'a> {
    /// The region asked for; `None` or empty means us-east-1.
    pub location_constraint: Option<Cow<'a, str>>,
}

impl CreateBucketConfiguration<'_> {
    /// Check a CreateBucket body against the `region` this endpoint serves: an empty body
    /// means us-east-1's default, any other region asked for is
    /// `IllegalLocationConstraintException` (as a regional S3 endpoint answers).
    pub fn check_region(xml: &[u8], region: &str) -> S3Result<()> {
        if xml.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        let config = CreateBucketConfiguration::parse_xml(xml)?;
        let asked = config.location_constraint.as_deref().unwrap_or("");
        let asked = if asked.is_empty() { "us-east-1" } else { asked };
        if asked != region {
            return Err(S3Error::with_message(
                S3ErrorCode::IllegalLocationConstraintException,
                alloc::format!(
                    "The {asked} location constraint is incompatible for the region specific endpoint this request was sent to ({region})."
                ),
            ));
        }
        Ok(())
    }
}

/// Largest `<Tagging>` body we parse: 50 tags of the longest keys and values, in four-byte
/// characters, with room for markup.
pub const MAX_TAGGING_BODY: usize = 256 << 10;

/// `<Tagging>`: the body of PutObjectTagging and PutBucketTagging, and the answer of their
/// Gets. Parsing checks the XML only; the limits are [`crate::s3::tagging::check`]'s.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tagging<'a> {
    /// The `<TagSet>`, in document order.
    pub tags: Vec<crate::s3::tagging::Tag<'a>>,
}

/// The `<Delete>` request body of DeleteObjects.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Delete<'a> {
    /// `Quiet`: report only errors.
    pub quiet: bool,
    /// The objects, 1..=1000.
    pub objects: Vec<ObjectIdentifier<'a>>,
}

/// `<Owner>`, `<Initiator>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner<'a> {
    /// `ID`.
    pub id: Cow<'a, str>,
    /// `DisplayName`.
    pub display_name: Option<Cow<'a, str>>,
}

/// One `<Bucket>` of ListAllMyBucketsResult.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketEntry<'a> {
    /// `Name`.
    pub name: Cow<'a, str>,
    /// `CreationDate`, Unix seconds.
    pub creation_date_unix: i64,
    /// `BucketRegion`.
    pub region: Option<Cow<'a, str>>,
}

/// `<ListAllMyBucketsResult>` (ListBuckets).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListAllMyBucketsResult<'a> {
    /// `Owner`.
    pub owner: Option<Owner<'a>>,
    /// `Buckets/Bucket`.
    pub buckets: Vec<BucketEntry<'a>>,
    /// `ContinuationToken`: where the next page starts, when truncated.
    pub continuation_token: Option<Cow<'a, str>>,
    /// `Prefix`, echoed.
    pub prefix: Option<Cow<'a, str>>,
}

/// One `<Contents>` of a ListBucketResult.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectEntry<'a> {
    /// `Key`.
    pub key: Cow<'a, str>,
    /// `LastModified`, Unix seconds.
    pub last_modified_unix: i64,
    /// `ETag`, quoted as in the HTTP header.
    pub etag: Cow<'a, str>,
    /// `Size`.
    pub size: u64,
    /// `StorageClass`.
    pub storage_class: Cow<'a, str>,
    /// `Owner` (v1 always in S3; v2 only with `fetch-owner=true`).
    pub owner: Option<Owner<'a>>,
}

/// What differs between ListObjects v1 and v2 results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListVersion<'a> {
    /// ListObjects (v1).
    V1 {
        /// `Marker`, echoed (empty when absent).
        marker: Cow<'a, str>,
        /// `NextMarker` (S3 sends it only with a delimiter, when truncated).
        next_marker: Option<Cow<'a, str>>,
    },
    /// ListObjectsV2.
    V2 {
        /// `ContinuationToken`, echoed.
        continuation_token: Option<Cow<'a, str>>,
        /// `NextContinuationToken`, when truncated.
        next_continuation_token: Option<Cow<'a, str>>,
        /// `StartAfter`, echoed.
        start_after: Option<Cow<'a, str>>,
    },
}

/// `<ListBucketResult>` of ListObjects (v1) and ListObjectsV2.
///
/// `KeyCount` (v2) is written as `contents.len() + common_prefixes.len()` and not stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListBucketResult<'a> {
    /// `Name`: the bucket.
    pub name: Cow<'a, str>,
    /// `Prefix` (empty when none).
    pub prefix: Cow<'a, str>,
    /// `Delimiter`.
    pub delimiter: Option<Cow<'a, str>>,
    /// `MaxKeys`.
    pub max_keys: u32,
    /// `IsTruncated`.
    pub is_truncated: bool,
    /// `EncodingType=url`: keys, prefixes, delimiter, markers are URL-encoded in the XML.
    pub encoding_type_url: bool,
    /// `Contents`.
    pub contents: Vec<ObjectEntry<'a>>,
    /// `CommonPrefixes/Prefix`.
    pub common_prefixes: Vec<Cow<'a, str>>,
    /// v1 or v2 fields.
    pub version: ListVersion<'a>,
}

/// `<InitiateMultipartUploadResult>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitiateMultipartUploadResult<'a> {
    /// `Bucket`.
    pub bucket: Cow<'a, str>,
    /// `Key`.
    pub key: Cow<'a, str>,
    /// `UploadId`.
    pub upload_id: Cow<'a, str>,
}

/// `<CompleteMultipartUploadResult>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompleteMultipartUploadResult<'a> {
    /// `Location`: the object's URL.
    pub location: Cow<'a, str>,
    /// `Bucket`.
    pub bucket: Cow<'a, str>,
    /// `Key`.
    pub key: Cow<'a, str>,
    /// `ETag` of the whole object (`"md5-of-md5s-N"`).
    pub etag: Cow<'a, str>,
    /// The object's checksum (`ChecksumCRC32` & co.), if its upload had an algorithm.
    pub checksums: Checksums<'a>,
    /// `ChecksumType` (`COMPOSITE` or `FULL_OBJECT`).
    pub checksum_type: Option<Cow<'a, str>>,
}

/// One `<Part>` of ListPartsResult.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartEntry<'a> {
    /// `PartNumber`.
    pub part_number: u16,
    /// `LastModified`, Unix seconds.
    pub last_modified_unix: i64,
    /// `ETag`, quoted.
    pub etag: Cow<'a, str>,
    /// `Size`.
    pub size: u64,
    /// The part's checksum (`ChecksumCRC32` & co.).
    pub checksums: Checksums<'a>,
}

/// `<ListPartsResult>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListPartsResult<'a> {
    /// `Bucket`.
    pub bucket: Cow<'a, str>,
    /// `Key` (URL-encoded in the XML with `encoding_type_url`).
    pub key: Cow<'a, str>,
    /// `UploadId`.
    pub upload_id: Cow<'a, str>,
    /// `Initiator`.
    pub initiator: Option<Owner<'a>>,
    /// `Owner`.
    pub owner: Option<Owner<'a>>,
    /// `StorageClass`.
    pub storage_class: Cow<'a, str>,
    /// `PartNumberMarker`.
    pub part_number_marker: u32,
    /// `NextPartNumberMarker`, when truncated.
    pub next_part_number_marker: Option<u32>,
    /// `MaxParts`.
    pub max_parts: u32,
    /// `IsTruncated`.
    pub is_truncated: bool,
    /// `EncodingType=url`.
    pub encoding_type_url: bool,
    /// `Part`.
    pub parts: Vec<PartEntry<'a>>,
    /// `ChecksumAlgorithm` of the upload.
    pub checksum_algorithm: Option<Cow<'a, str>>,
    /// `ChecksumType` of the upload.
    pub checksum_type: Option<Cow<'a, str>>,
}

/// `<GetObjectAttributesResponse>`: the attributes asked for, each `None` when not asked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GetObjectAttributesResponse<'a> {
    /// `ETag` (without quotes, as S3 writes it here).
    pub etag: Option<Cow<'a, str>>,
    /// `Checksum`: the object's checksum and its `ChecksumType`.
    pub checksum: Option<(Checksums<'a>, Cow<'a, str>)>,
    /// `ObjectParts`, for a multipart object.
    pub object_parts: Option<ObjectAttributesParts<'a>>,
    /// `StorageClass`.
    pub storage_class: Option<Cow<'a, str>>,
    /// `ObjectSize`.
    pub object_size: Option<u64>,
}

/// `<ObjectParts>` of GetObjectAttributes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectAttributesParts<'a> {
    /// `PartsCount` (the SDKs' `TotalPartsCount`).
    pub total_parts_count: u32,
    /// The page of parts, with its markers: only for an object whose parts have checksums
    /// (S3 lists no parts otherwise).
    pub page: Option<ObjectPartsPage<'a>>,
}

/// A page of `<Part>`s of GetObjectAttributes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectPartsPage<'a> {
    /// `PartNumberMarker`.
    pub part_number_marker: u32,
    /// `NextPartNumberMarker`.
    pub next_part_number_marker: Option<u32>,
    /// `MaxParts`.
    pub max_parts: u32,
    /// `IsTruncated`.
    pub is_truncated: bool,
    /// `Part`: number, size, checksum.
    pub parts: Vec<(u32, u64, Checksums<'a>)>,
}

/// One `<Upload>` of ListMultipartUploadsResult.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadEntry<'a> {
    /// `Key`.
    pub key: Cow<'a, str>,
    /// `UploadId`.
    pub upload_id: Cow<'a, str>,
    /// `Initiator`.
    pub initiator: Option<Owner<'a>>,
    /// `Owner`.
    pub owner: Option<Owner<'a>>,
    /// `StorageClass`.
    pub storage_class: Cow<'a, str>,
    /// `Initiated`, Unix seconds.
    pub initiated_unix: i64,
}

/// `<ListMultipartUploadsResult>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListMultipartUploadsResult<'a> {
    /// `Bucket`.
    pub bucket: Cow<'a, str>,
    /// `KeyMarker`, echoed (empty when none).
    pub key_marker: Cow<'a, str>,
    /// `UploadIdMarker`, echoed (empty when none).
    pub upload_id_marker: Cow<'a, str>,
    /// `NextKeyMarker`, when truncated.
    pub next_key_marker: Option<Cow<'a, str>>,
    /// `NextUploadIdMarker`, when truncated.
    pub next_upload_id_marker: Option<Cow<'a, str>>,
    /// `Prefix` (empty when none).
    pub prefix: Cow<'a, str>,
    /// `Delimiter`.
    pub delimiter: Option<Cow<'a, str>>,
    /// `MaxUploads`.
    pub max_uploads: u32,
    /// `IsTruncated`.
    pub is_truncated: bool,
    /// `EncodingType=url`: keys, prefixes, delimiter and key markers URL-encoded.
    pub encoding_type_url: bool,
    /// `Upload`.
    pub uploads: Vec<UploadEntry<'a>>,
    /// `CommonPrefixes/Prefix`.
    pub common_prefixes: Vec<Cow<'a, str>>,
}

/// Which document a [`CopyResult`] is: CopyObject's or UploadPartCopy's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyKind {
    /// `<CopyObjectResult>`.
    Object,
    /// `<CopyPartResult>`.
    Part,
}

/// `<CopyObjectResult>` / `<CopyPartResult>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyResult<'a> {
    /// Which root element.
    pub kind: CopyKind,
    /// `ETag` of the new object or part, quoted.
    pub etag: Cow<'a, str>,
    /// `LastModified`, Unix seconds.
    pub last_modified_unix: i64,
    /// `ChecksumType` (CopyObjectResult only: `FULL_OBJECT`), when the copy has a checksum.
    pub checksum_type: Option<Cow<'a, str>>,
    /// The copy's checksum (`ChecksumCRC32` & co.), of its plaintext.
    pub checksums: Checksums<'a>,
}

/// One `<Deleted>` of DeleteResult.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeletedEntry<'a> {
    /// `Key`.
    pub key: Cow<'a, str>,
    /// `VersionId`.
    pub version_id: Option<Cow<'a, str>>,
    /// `DeleteMarker`: the delete created a delete marker, or removed one.
    pub delete_marker: bool,
    /// `DeleteMarkerVersionId`: the version id of that delete marker.
    pub delete_marker_version_id: Option<Cow<'a, str>>,
}

/// One `<Error>` of DeleteResult.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteError<'a> {
    /// `Key`.
    pub key: Cow<'a, str>,
    /// `VersionId`.
    pub version_id: Option<Cow<'a, str>>,
    /// `Code`.
    pub code: Cow<'a, str>,
    /// `Message`.
    pub message: Cow<'a, str>,
}

/// `<DeleteResult>` of DeleteObjects.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteResult<'a> {
    /// `Deleted` (left empty in quiet mode).
    pub deleted: Vec<DeletedEntry<'a>>,
    /// `Error`.
    pub errors: Vec<DeleteError<'a>>,
}

/// The `<Error>` document of a failed request.
///
/// `code` is a string, not an `S3ErrorCode`: a backend may answer with codes we do not know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorResponse<'a> {
    /// `Code`.
    pub code: Cow<'a, str>,
    /// `Message`.
    pub message: Cow<'a, str>,
    /// `Resource`: the bucket or object path.
    pub resource: Option<Cow<'a, str>>,
    /// `RequestId`.
    pub request_id: Option<Cow<'a, str>>,
}

impl<'a> ErrorResponse<'a> {
    /// The document for an [`S3Error`](super::S3Error).
    pub fn from_error(
        err: &'a super::S3Error,
        resource: Option<&'a str>,
        request_id: Option<&'a str>,
    ) -> Self {
        Self {
            code: Cow::Borrowed(err.code.as_str()),
            message: Cow::Borrowed(&err.message),
            resource: resource.map(Cow::Borrowed),
            request_id: request_id.map(Cow::Borrowed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::s3::S3ErrorCode;
    use alloc::string::String;
    use alloc::vec;
    use proptest::prelude::*;

    fn code<T: core::fmt::Debug>(r: crate::s3::S3Result<T>) -> S3ErrorCode {
        r.expect_err("should fail").code
    }

    fn s(v: &str) -> Cow<'_, str> {
        Cow::Borrowed(v)
    }

    #[test]
    fn create_bucket_configuration() {
        // The AWS API reference example, then an empty constraint, then junk.
        let body = br#"<CreateBucketConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
            <LocationConstraint>eu-west-1</LocationConstraint>
        </CreateBucketConfiguration>"#;
        let c = CreateBucketConfiguration::parse_xml(body).expect("valid");
        assert_eq!(c.location_constraint.as_deref(), Some("eu-west-1"));
        let c =
            CreateBucketConfiguration::parse_xml(b"<CreateBucketConfiguration/>").expect("valid");
        assert_eq!(c.location_constraint, None);
        let e = CreateBucketConfiguration::parse_xml(b"<Other/>").expect_err("wrong root");
        assert_eq!(e.code, S3ErrorCode::MalformedXML);
    }

    #[test]
    fn complete_multipart_upload_reference_example() {
        // The request body of the CompleteMultipartUpload example in the S3 API reference.
        let body = br#"<CompleteMultipartUpload>
  <Part>
    <PartNumber>1</PartNumber>
    <ETag>"a54357aff0632cce46d942af68356b38"</ETag>
  </Part>
  <Part>
    <PartNumber>2</PartNumber>
    <ETag>"0c78aef83f66abc1fa1e8477f296d394"</ETag>
  </Part>
  <Part>
    <PartNumber>3</PartNumber>
    <ETag>"acbd18db4cc2f85cedef654fccc4a4d8"</ETag>
  </Part>
</CompleteMultipartUpload>"#;
        let c = CompleteMultipartUpload::parse_xml(body).expect("valid");
        let numbers: Vec<u16> = c.parts.iter().map(|p| p.part_number).collect();
        assert_eq!(numbers, [1, 2, 3]);
        assert_eq!(c.parts[1].etag, "\"0c78aef83f66abc1fa1e8477f296d394\"");
        assert!(
            matches!(c.parts[0].etag, Cow::Borrowed(_)),
            "no copy when nothing to decode"
        );
        assert_eq!(c.parts[0].checksums, Checksums::default());
    }

    #[test]
    fn complete_multipart_upload_written_parses_back() {
        let doc = CompleteMultipartUpload {
            parts: alloc::vec![
                CompletedPart {
                    part_number: 1,
                    etag: Cow::Borrowed("\"e1\""),
                    checksums: Checksums::one(ChecksumAlgorithm::Sha256, "c2hh"),
                },
                CompletedPart {
                    part_number: 3,
                    etag: Cow::Borrowed("\"e3\""),
                    checksums: Checksums::default(),
                },
            ],
        };
        let mut xml = Vec::new();
        doc.write_xml(&mut xml);
        assert_eq!(
            CompleteMultipartUpload::parse_xml(&xml).expect("valid"),
            doc
        );
    }

    #[test]
    fn complete_multipart_upload_variants_and_errors() {
        let ns = br#"<?xml version="1.0" encoding="UTF-8"?>
<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Part><ETag>&quot;e1&quot;</ETag><PartNumber> 7 </PartNumber><ChecksumCRC32>AAAAAA==</ChecksumCRC32></Part><!-- c --><Part><PartNumber>10000</PartNumber><ETag>e2</ETag></Part></CompleteMultipartUpload>"#;
        let c = CompleteMultipartUpload::parse_xml(ns).expect("valid");
        assert_eq!(c.parts[0].part_number, 7);
        assert_eq!(c.parts[0].etag, "\"e1\"");
        assert_eq!(c.parts[0].checksums.crc32.as_deref(), Some("AAAAAA=="));
        assert_eq!(c.parts[1].part_number, 10_000);
        let p = |parts: &str| {
            alloc::format!("<CompleteMultipartUpload>{parts}</CompleteMultipartUpload>")
        };
        let part =
            |n: &str| alloc::format!("<Part><PartNumber>{n}</PartNumber><ETag>x</ETag></Part>");
        let cases = [
            (p(""), S3ErrorCode::MalformedXML),
            (
                p(&[part("2"), part("1")].concat()),
                S3ErrorCode::InvalidPartOrder,
            ),
            (
                p(&[part("1"), part("1")].concat()),
                S3ErrorCode::InvalidPartOrder,
            ),
            (p(&part("0")), S3ErrorCode::InvalidArgument),
            (p(&part("10001")), S3ErrorCode::InvalidArgument),
            (p(&part("one")), S3ErrorCode::MalformedXML),
            (p(&part("-1")), S3ErrorCode::MalformedXML),
            (
                p("<Part><PartNumber>1</PartNumber></Part>"),
                S3ErrorCode::MalformedXML,
            ),
            (p("<Part><ETag>x</ETag></Part>"), S3ErrorCode::MalformedXML),
            (
                String::from(
                    "<Complete><Part><PartNumber>1</PartNumber><ETag>x</ETag></Part></Complete>",
                ),
                S3ErrorCode::MalformedXML,
            ),
        ];
        for (body, want) in cases {
            assert_eq!(
                code(CompleteMultipartUpload::parse_xml(body.as_bytes())),
                want,
                "{body}"
            );
        }
    }

    #[test]
    fn delete_reference_examples() {
        let body = br#"<?xml version="1.0" encoding="UTF-8"?>
<Delete>
    <Quiet>true</Quiet>
    <Object>
         <Key>Key</Key>
    </Object>
    <Object>
         <Key>Key</Key>
         <VersionId>VersionId</VersionId>
    </Object>
</Delete>"#;
        let d = Delete::parse_xml(body).expect("valid");
        assert!(d.quiet);
        assert_eq!(
            d.objects,
            [
                ObjectIdentifier {
                    key: s("Key"),
                    version_id: None
                },
                ObjectIdentifier {
                    key: s("Key"),
                    version_id: Some(s("VersionId"))
                },
            ]
        );
        let body = b"<Delete><Object><Key>sample1.txt</Key></Object><Object><Key>sample2.txt</Key></Object></Delete>";
        let d = Delete::parse_xml(body).expect("valid");
        assert!(!d.quiet);
        assert_eq!(d.objects.len(), 2);
    }

    #[test]
    fn delete_keys_are_exact() {
        let body = "<Delete><Quiet>FALSE</Quiet><Object><Key> a&amp;b&lt;&#x1;&#233;+%20 </Key></Object>\
                    <Object><Key><![CDATA[x<y>&z]]></Key></Object><Object><Key>a<!-- c -->b</Key></Object>\
                    <Object><Key></Key></Object></Delete>";
        let d = Delete::parse_xml(body.as_bytes()).expect("valid");
        let keys: Vec<&str> = d.objects.iter().map(|o| o.key.as_ref()).collect();
        assert_eq!(keys, [" a&b<\u{1}é+%20 ", "x<y>&z", "ab", ""]);
    }

    #[test]
    fn delete_limits() {
        let object = "<Object><Key>k</Key></Object>";
        let body = |n: usize| alloc::format!("<Delete>{}</Delete>", object.repeat(n));
        assert_eq!(
            Delete::parse_xml(body(1000).as_bytes())
                .expect("1000 keys")
                .objects
                .len(),
            1000
        );
        assert_eq!(
            code(Delete::parse_xml(body(1001).as_bytes())),
            S3ErrorCode::MalformedXML
        );
        assert_eq!(
            code(Delete::parse_xml(body(0).as_bytes())),
            S3ErrorCode::MalformedXML
        );
        assert_eq!(
            code(Delete::parse_xml(
                b"<Delete><Quiet>yes</Quiet><Object><Key>k</Key></Object></Delete>"
            )),
            S3ErrorCode::MalformedXML
        );
        assert_eq!(
            code(Delete::parse_xml(
                b"<Delete><Object><VersionId>v</VersionId></Object></Delete>"
            )),
            S3ErrorCode::MalformedXML
        );
        let mut big = body(1).into_bytes();
        big.resize(MAX_DELETE_BODY + 1, b' ');
        assert_eq!(code(Delete::parse_xml(&big)), S3ErrorCode::MalformedXML);
    }

    #[test]
    fn bodies_of_empty_elements_stop_at_an_element_cap() {
        // Within the size limits, but hundreds of thousands of elements: refused while parsing,
        // before a tree some 25 times the body is built.
        let many = |root: &str, el: &str, limit: usize| {
            let mut b = alloc::format!("<{root}>");
            while b.len() + el.len() + root.len() + 3 <= limit {
                b.push_str(el);
            }
            b.push_str(&alloc::format!("</{root}>"));
            b.into_bytes()
        };
        let delete = many("Delete", "<a/>", MAX_DELETE_BODY);
        let e = Delete::parse_xml(&delete).expect_err("too many elements");
        assert!(e.message.contains("too many elements"), "{e}");
        let complete = many("CompleteMultipartUpload", "<Part/>", MAX_COMPLETE_BODY);
        let e = CompleteMultipartUpload::parse_xml(&complete).expect_err("too many elements");
        assert!(e.message.contains("too many elements"), "{e}");
        // The largest real documents still parse: 10,000 parts with every field.
        let part = |n: usize| {
            alloc::format!(
                "<Part><PartNumber>{n}</PartNumber><ETag>\"{:032x}\"</ETag>\
                 <ChecksumCRC32>AAAAAA==</ChecksumCRC32></Part>",
                n
            )
        };
        let body: String = (1..=10_000).map(part).collect();
        let body = alloc::format!("<CompleteMultipartUpload>{body}</CompleteMultipartUpload>");
        let parsed = CompleteMultipartUpload::parse_xml(body.as_bytes()).expect("10,000 parts");
        assert_eq!(parsed.parts.len(), 10_000);
    }

    #[test]
    fn rejects_dtd_entities_and_malformed_xml() {
        let cases: [&[u8]; 17] = [
            br#"<?xml version="1.0"?><!DOCTYPE foo [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><Delete><Object><Key>&xxe;</Key></Object></Delete>"#,
            br#"<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]><Delete><Object><Key>&lol2;</Key></Object></Delete>"#,
            br#"<!DOCTYPE Delete SYSTEM "http://example.com/x.dtd"><Delete><Object><Key>k</Key></Object></Delete>"#,
            b"<Delete><Object><Key>&xxe;</Key></Object></Delete>",
            b"<Delete><Object><Key>a & b</Key></Object></Delete>",
            b"<Delete><Object><Key>&#xD800;</Key></Object></Delete>",
            b"<Delete><Object><Key>&#x110000;</Key></Object></Delete>",
            b"<Delete><Object><Key>&#;</Key></Object></Delete>",
            b"<Delete><Object><Key>&#x+1;</Key></Object></Delete>",
            b"<Delete><Object><Key>k</Object></Key></Delete>",
            b"<Delete><Object><Key>k</Key></Object>",
            b"<Delete><Object><Key>k</Key></Object></Delete><Delete/>",
            b"<Delete><Object><Key>k</Key></Object></Delete>trailing",
            b"<Delete><Object><Key>\xff</Key></Object></Delete>",
            b"<Delete><Object><Key>k</Key></Object>&bogus;</Delete>",
            b"",
            b"not xml",
        ];
        for body in cases {
            assert_eq!(
                code(Delete::parse_xml(body)),
                S3ErrorCode::MalformedXML,
                "{}",
                String::from_utf8_lossy(body)
            );
        }
        let deep = alloc::format!("{}{}", "<a>".repeat(100), "</a>".repeat(100));
        assert_eq!(
            code(ErrorResponse::parse_xml(deep.as_bytes())),
            S3ErrorCode::MalformedXML
        );
    }

    #[test]
    fn parses_reference_list_objects_v2_response() {
        let body = br#"<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
    <Name>bucket</Name>
    <Prefix/>
    <KeyCount>205</KeyCount>
    <MaxKeys>1000</MaxKeys>
    <IsTruncated>false</IsTruncated>
    <Contents>
        <Key>my-image.jpg</Key>
        <LastModified>2009-10-12T17:50:30.000Z</LastModified>
        <ETag>&quot;fba9dede5f27731c9771645a39863328&quot;</ETag>
        <Size>434234</Size>
        <StorageClass>STANDARD</StorageClass>
    </Contents>
</ListBucketResult>"#;
        let l = ListBucketResult::parse_xml(body).expect("valid");
        assert_eq!(l.name, "bucket");
        assert_eq!(l.prefix, "");
        assert_eq!(l.max_keys, 1000);
        assert!(!l.is_truncated);
        assert!(matches!(l.version, ListVersion::V2 { .. }));
        assert_eq!(
            l.contents,
            [ObjectEntry {
                key: s("my-image.jpg"),
                // 2009-10-12T17:50:30Z, computed independently.
                last_modified_unix: 1_255_369_830,
                etag: s("\"fba9dede5f27731c9771645a39863328\""),
                size: 434_234,
                storage_class: s("STANDARD"),
                owner: None,
            }]
        );
    }

    #[test]
    fn parses_reference_error_response() {
        let body = br#"<?xml version="1.0" encoding="UTF-8"?>
<Error>
  <Code>NoSuchKey</Code>
  <Message>The resource you requested does not exist</Message>
  <Resource>/mybucket/myfoto.jpg</Resource>
  <RequestId>4442587FB7D0A2F9</RequestId>
</Error>"#;
        let e = ErrorResponse::parse_xml(body).expect("valid");
        assert_eq!(e.code, "NoSuchKey");
        assert_eq!(e.resource.as_deref(), Some("/mybucket/myfoto.jpg"));
        assert_eq!(e.request_id.as_deref(), Some("4442587FB7D0A2F9"));
    }

    /// PutObjectTagging's example in the S3 API reference, written back and parsed again.
    #[test]
    fn tagging_parses_the_reference_example_and_round_trips() {
        use crate::s3::tagging::Tag;
        let body = br#"<Tagging xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
   <TagSet>
     <Tag>
       <Key>tag1</Key>
       <Value>val1</Value>
     </Tag>
     <Tag>
       <Key>tag2</Key>
       <Value></Value>
     </Tag>
   </TagSet>
</Tagging>"#;
        let t = Tagging::parse_xml(body).expect("valid");
        let tag = |k: &'static str, v: &'static str| Tag {
            key: s(k),
            value: s(v),
        };
        assert_eq!(t.tags, vec![tag("tag1", "val1"), tag("tag2", "")]);
        let tricky = Tagging {
            tags: vec![tag("a b", "<&>'\""), tag("é", "")],
        };
        assert_eq!(
            Tagging::parse_xml(&written(|o| tricky.write_xml(o))),
            Ok(tricky)
        );
        let empty = Tagging::default();
        let out = written(|o| empty.write_xml(o));
        assert!(out.ends_with(b"<TagSet></TagSet></Tagging>"));
        assert_eq!(Tagging::parse_xml(&out), Ok(empty));
        for bad in [
            &b"<Tagging></Tagging>"[..],
            b"<Tagging><TagSet><Tag><Key>k</Key></Tag></TagSet></Tagging>",
            b"<Tagging><TagSet><Tag><Value>v</Value></Tag></TagSet></Tagging>",
            b"<Other><TagSet/></Other>",
            b"<Tagging><TagSet>",
            b"",
        ] {
            assert_eq!(
                Tagging::parse_xml(bad).map_err(|e| e.code),
                Err(S3ErrorCode::MalformedXML)
            );
        }
    }

    fn owner() -> Owner<'static> {
        Owner {
            id: s("75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6caea54ba06a"),
            display_name: Some(s("webfile")),
        }
    }

    const TRICKY: &str = "dir/a b+c%41&<>\"'\u{1}\r\n\té☃";

    fn object(key: &str) -> ObjectEntry<'_> {
        ObjectEntry {
            key: s(key),
            last_modified_unix: 1_138_985_109,
            etag: s("\"828ef3fdfa96f00ad9f27c383fc9ac7f\""),
            size: 5,
            storage_class: s("STANDARD"),
            owner: Some(owner()),
        }
    }

    fn listing(url: bool, version: ListVersion<'static>) -> ListBucketResult<'static> {
        ListBucketResult {
            name: s("examplebucket"),
            prefix: s("dir/"),
            delimiter: Some(s("/")),
            max_keys: 2,
            is_truncated: true,
            encoding_type_url: url,
            contents: vec![object("dir/a"), object(TRICKY), object(" ")],
            common_prefixes: vec![s("dir/sub/"), s("dir/x y&z/")],
            version,
        }
    }

    fn written(f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let mut out = Vec::new();
        f(&mut out);
        out
    }

    #[test]
    fn list_bucket_result_round_trips() {
        let versions = [
            ListVersion::V1 {
                marker: s(""),
                next_marker: None,
            },
            ListVersion::V1 {
                marker: s("dir/0 &"),
                next_marker: Some(s(TRICKY)),
            },
            ListVersion::V2 {
                continuation_token: None,
                next_continuation_token: Some(s("1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=")),
                start_after: Some(s("dir/ä b")),
            },
            ListVersion::V2 {
                continuation_token: Some(s("tok")),
                next_continuation_token: None,
                start_after: None,
            },
        ];
        for url in [false, true] {
            for v in versions.clone() {
                let l = listing(url, v);
                let xml = written(|o| l.write_xml(o));
                let back = ListBucketResult::parse_xml(&xml)
                    .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&xml)));
                assert_eq!(back, l, "{}", String::from_utf8_lossy(&xml));
            }
        }
    }

    #[test]
    fn list_bucket_result_url_encoding_on_the_wire() {
        let mut l = listing(
            true,
            ListVersion::V2 {
                continuation_token: None,
                next_continuation_token: None,
                start_after: None,
            },
        );
        l.contents = vec![object("a b/ü"), object("asdf+b")];
        // As AWS lists them (ceph s3-tests `test_bucket_list_encoding_basic`): `/` is kept.
        l.common_prefixes = vec![s("foo+1/"), s("quux ab/")];
        l.prefix = s("d r/");
        let xml = String::from_utf8(written(|o| l.write_xml(o))).expect("utf-8");
        assert!(xml.contains("<Key>a%20b/%C3%BC</Key>"), "{xml}");
        assert!(xml.contains("<Key>asdf%2Bb</Key>"), "{xml}");
        assert!(xml.contains("<Prefix>foo%2B1/</Prefix>"), "{xml}");
        assert!(xml.contains("<Prefix>quux%20ab/</Prefix>"), "{xml}");
        assert!(xml.contains("<Prefix>d%20r/</Prefix>"), "{xml}");
        assert!(xml.contains("<Delimiter>/</Delimiter>"), "{xml}");
        assert!(xml.contains("<EncodingType>url</EncodingType>"), "{xml}");
        assert!(xml.contains("<KeyCount>4</KeyCount>"), "{xml}");
        // ListObjects v1 returns its prefix as sent.
        l.version = ListVersion::V1 {
            marker: s(""),
            next_marker: None,
        };
        let xml = String::from_utf8(written(|o| l.write_xml(o))).expect("utf-8");
        assert!(
            xml.contains("<Name>examplebucket</Name><Prefix>d r/</Prefix>"),
            "{xml}"
        );
        assert!(xml.contains("<Key>asdf%2Bb</Key>"), "{xml}");
        l.encoding_type_url = false;
        let xml = String::from_utf8(written(|o| l.write_xml(o))).expect("utf-8");
        assert!(xml.contains("<Key>a b/ü</Key>"), "{xml}");
        assert!(!xml.contains("EncodingType"), "{xml}");
    }

    #[test]
    fn other_documents_round_trip() {
        let buckets = ListAllMyBucketsResult {
            owner: Some(owner()),
            buckets: vec![
                BucketEntry {
                    name: s("quotes"),
                    creation_date_unix: 1_138_985_109,
                    region: None,
                },
                BucketEntry {
                    name: s("samples"),
                    creation_date_unix: 1_289_422_113,
                    region: Some(s("us-west-2")),
                },
            ],
            continuation_token: Some(s("next&page")),
            prefix: Some(s("q")),
        };
        assert_eq!(
            ListAllMyBucketsResult::parse_xml(&written(|o| buckets.write_xml(o))),
            Ok(buckets.clone())
        );
        let empty = ListAllMyBucketsResult::default();
        assert_eq!(
            ListAllMyBucketsResult::parse_xml(&written(|o| empty.write_xml(o))),
            Ok(empty)
        );

        let init = InitiateMultipartUploadResult {
            bucket: s("example-bucket"),
            key: s(TRICKY),
            upload_id: s("VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA"),
        };
        assert_eq!(
            InitiateMultipartUploadResult::parse_xml(&written(|o| init.write_xml(o))),
            Ok(init.clone())
        );

        let done = CompleteMultipartUploadResult {
            location: s("http://example-bucket.s3.amazonaws.com/Example-Object"),
            bucket: s("example-bucket"),
            key: s("Example-Object"),
            etag: s("\"3858f62230ac3c915f300c664312c11f-9\""),
            checksums: Checksums::one(
                ChecksumAlgorithm::Sha256,
                "aI8EoktCdotjU8Bq46DrPCxQCGuGcPIhJ51noWs6hvk=-3",
            ),
            checksum_type: Some(s("COMPOSITE")),
        };
        assert_eq!(
            CompleteMultipartUploadResult::parse_xml(&written(|o| done.write_xml(o))),
            Ok(done.clone())
        );

        for url in [false, true] {
            let parts = ListPartsResult {
                bucket: s("example-bucket"),
                key: s(TRICKY),
                upload_id: s("XXBsb2FkIElEIGZvciBlbHZpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA"),
                initiator: Some(owner()),
                owner: Some(Owner {
                    id: s("o"),
                    display_name: None,
                }),
                storage_class: s("STANDARD"),
                part_number_marker: 1,
                next_part_number_marker: Some(3),
                max_parts: 2,
                is_truncated: true,
                encoding_type_url: url,
                parts: vec![
                    PartEntry {
                        part_number: 2,
                        last_modified_unix: 1_289_422_113,
                        etag: s("\"7778aef83f66abc1fa1e8477f296d394\""),
                        size: 10_485_760,
                        checksums: Checksums::one(ChecksumAlgorithm::Crc32, "AAAAAA=="),
                    },
                    PartEntry {
                        part_number: 3,
                        last_modified_unix: 1_289_422_113,
                        etag: s("\"aaaa18db4cc2f85cedef654fccc4a4x8\""),
                        size: 10_485_760,
                        checksums: Checksums::default(),
                    },
                ],
                checksum_algorithm: Some(s("CRC32")),
                checksum_type: Some(s("FULL_OBJECT")),
            };
            assert_eq!(
                ListPartsResult::parse_xml(&written(|o| parts.write_xml(o))),
                Ok(parts.clone())
            );

            let uploads = ListMultipartUploadsResult {
                bucket: s("bucket"),
                key_marker: s("my movie&.m2ts"),
                upload_id_marker: s(""),
                next_key_marker: Some(s(TRICKY)),
                next_upload_id_marker: Some(s("YW55IGlkZWEgd2h5IGVsdmluZydzIHVwbG9hZCBmYWlsZWQ")),
                prefix: s("photos/"),
                delimiter: Some(s("/")),
                max_uploads: 3,
                is_truncated: true,
                encoding_type_url: url,
                uploads: vec![UploadEntry {
                    key: s(TRICKY),
                    upload_id: s("VXBsb2FkIElEIGZvciBlbHZpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA"),
                    initiator: Some(owner()),
                    owner: Some(owner()),
                    storage_class: s("STANDARD"),
                    initiated_unix: 1_289_422_113,
                }],
                common_prefixes: vec![s("photos/2006/")],
            };
            assert_eq!(
                ListMultipartUploadsResult::parse_xml(&written(|o| uploads.write_xml(o))),
                Ok(uploads.clone())
            );
        }

        for (kind, checksum_type) in [
            (CopyKind::Object, Some(s("FULL_OBJECT"))),
            (CopyKind::Part, None),
        ] {
            let c = CopyResult {
                kind,
                etag: s("\"9b2cf535f27731c974343645a3985328\""),
                last_modified_unix: 1_255_369_830,
                checksum_type,
                checksums: Checksums::one(ChecksumAlgorithm::Crc32c, "yZRlqg=="),
            };
            assert_eq!(
                CopyResult::parse_xml(&written(|o| c.write_xml(o))),
                Ok(c.clone())
            );
        }

        let del = DeleteResult {
            deleted: vec![
                DeletedEntry {
                    key: s("sample1.txt"),
                    version_id: None,
                    delete_marker: false,
                    delete_marker_version_id: None,
                },
                DeletedEntry {
                    key: s("sample2.txt"),
                    version_id: None,
                    delete_marker: true,
                    delete_marker_version_id: Some(s("fffe7a6b5c4d3e2f")),
                },
            ],
            errors: vec![DeleteError {
                key: s(TRICKY),
                version_id: Some(s("v")),
                code: s("AccessDenied"),
                message: s("Access Denied"),
            }],
        };
        assert_eq!(
            DeleteResult::parse_xml(&written(|o| del.write_xml(o))),
            Ok(del.clone())
        );

        let err = crate::s3::S3Error::new(S3ErrorCode::NoSuchKey);
        let doc = ErrorResponse::from_error(&err, Some("/bucket/a&b"), Some("req-1"));
        let back = written(|o| doc.write_xml(o));
        let parsed = ErrorResponse::parse_xml(&back).expect("valid");
        assert_eq!(parsed, doc);
        assert_eq!(parsed.code, "NoSuchKey");
    }

    #[test]
    fn object_attributes_are_written_as_s3_writes_them() {
        let doc = GetObjectAttributesResponse {
            etag: Some(s("d41d8cd98f00b204e9800998ecf8427e-2")),
            checksum: Some((
                Checksums::one(ChecksumAlgorithm::Sha256, "aI8E="),
                s("COMPOSITE"),
            )),
            object_parts: Some(ObjectAttributesParts {
                total_parts_count: 2,
                page: Some(ObjectPartsPage {
                    part_number_marker: 0,
                    next_part_number_marker: Some(1),
                    max_parts: 1,
                    is_truncated: true,
                    parts: vec![(1, 5, Checksums::one(ChecksumAlgorithm::Sha256, "p1="))],
                }),
            }),
            storage_class: Some(s("STANDARD")),
            object_size: Some(10),
        };
        let xml = String::from_utf8(written(|o| doc.write_xml(o))).unwrap();
        assert!(xml.ends_with(
            "<GetObjectAttributesResponse xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
             <ETag>d41d8cd98f00b204e9800998ecf8427e-2</ETag>\
             <Checksum><ChecksumSHA256>aI8E=</ChecksumSHA256><ChecksumType>COMPOSITE</ChecksumType></Checksum>\
             <ObjectParts><PartsCount>2</PartsCount><PartNumberMarker>0</PartNumberMarker>\
             <NextPartNumberMarker>1</NextPartNumberMarker><MaxParts>1</MaxParts>\
             <IsTruncated>true</IsTruncated>\
             <Part><PartNumber>1</PartNumber><Size>5</Size><ChecksumSHA256>p1=</ChecksumSHA256></Part>\
             </ObjectParts><StorageClass>STANDARD</StorageClass><ObjectSize>10</ObjectSize>\
             </GetObjectAttributesResponse>"
        ), "{xml}");
        // Only what was asked for; no parts listed without their checksums.
        let size_only = GetObjectAttributesResponse {
            object_size: Some(3),
            object_parts: Some(ObjectAttributesParts {
                total_parts_count: 4,
                page: None,
            }),
            ..GetObjectAttributesResponse::default()
        };
        let xml = String::from_utf8(written(|o| size_only.write_xml(o))).unwrap();
        assert!(
            xml.ends_with(
                "<ObjectParts><PartsCount>4</PartsCount></ObjectParts><ObjectSize>3</ObjectSize>\
             </GetObjectAttributesResponse>"
            ),
            "{xml}"
        );
    }

    #[test]
    fn copy_result_roots_are_distinct() {
        let c = CopyResult {
            kind: CopyKind::Part,
            etag: s("\"e\""),
            last_modified_unix: 0,
            checksum_type: None,
            checksums: Checksums::default(),
        };
        let xml = written(|o| c.write_xml(o));
        assert!(String::from_utf8_lossy(&xml).contains("<CopyPartResult"));
        assert_eq!(
            CopyResult::parse_xml(&xml).map(|r| r.kind),
            Ok(CopyKind::Part)
        );
        assert_eq!(
            code(CopyResult::parse_xml(
                b"<CopyResult><ETag>e</ETag></CopyResult>"
            )),
            S3ErrorCode::MalformedXML
        );
    }

    proptest! {
        #[test]
        fn any_key_round_trips(key in "\\PC*|[\\x00-\\x1f &<>\"'%+/]*", url: bool, v1: bool) {
            let version = if v1 {
                ListVersion::V1 { marker: Cow::Owned(key.clone()), next_marker: None }
            } else {
                ListVersion::V2 { continuation_token: None, next_continuation_token: None, start_after: Some(Cow::Owned(key.clone())) }
            };
            let mut l = listing(url, version);
            l.contents = vec![object(&key)];
            l.common_prefixes = vec![Cow::Owned(key.clone())];
            let xml = written(|o| l.write_xml(o));
            prop_assert_eq!(ListBucketResult::parse_xml(&xml), Ok(l));
        }
    }
}
