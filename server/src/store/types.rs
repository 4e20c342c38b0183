//! The storage engine's public inputs and outputs.

use ferry_core::md5::ETag;
use ferry_core::s3::version::VersionId;
use ferry_core::s3::xml::lock::Retention;
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};
use ferry_core::time::DateTime;
use serde::{Deserialize, Serialize};

use super::MAX_PARTS;

/// A checksum computed by the caller: algorithm name (`CRC32`, `CRC32C`, `SHA1`, `SHA256`,
/// `CRC64NVME`) and its base64 value, stored and returned as given.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Checksum {
    /// The algorithm, as in `x-amz-checksum-<algorithm>` (case kept as given).
    pub algorithm: String,
    /// The base64 value.
    pub value: String,
}

/// A multipart upload's checksum (`x-amz-checksum-algorithm` and `x-amz-checksum-type` of
/// CreateMultipartUpload), and on the completed object its parts' checksums.
///
/// Stored in the record's extension (`store::codec`), not in the fixed fields.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct MultipartChecksum {
    /// The algorithm (`CRC32`, `CRC32C`, `CRC64NVME`, `SHA1`, `SHA256`).
    pub algorithm: String,
    /// `FULL_OBJECT` (a CRC of the whole object, combined from the parts') rather than
    /// `COMPOSITE` (the checksum of the parts' checksums).
    pub full_object: bool,
    /// On a completed object: each part's number and base64 checksum, in order (empty on an
    /// upload).
    pub parts: Vec<(u32, String)>,
}

/// What a client says about an object besides its bytes: content headers, user metadata,
/// checksums. Stored with the object (or the multipart upload) and returned by GET/HEAD.
///
/// Serialized as is into metadata records: changing its serialized fields needs a new record
/// format. `tags` is not among them: records carry it in an extension entry (`store::codec`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ObjectMeta {
    /// `Content-Type`.
    pub content_type: Option<String>,
    /// `Content-Encoding`.
    pub content_encoding: Option<String>,
    /// `Content-Disposition`.
    pub content_disposition: Option<String>,
    /// `Content-Language`.
    pub content_language: Option<String>,
    /// `Cache-Control`.
    pub cache_control: Option<String>,
    /// `Expires`, as sent.
    pub expires: Option<String>,
    /// `x-amz-meta-*` pairs (name without the prefix), in the order given.
    pub user_metadata: Vec<(String, String)>,
    /// Checksums the caller computed over the body.
    pub checksums: Vec<Checksum>,
    /// Tags (key, value), in the order given: at most 10, checked by the caller
    /// (`ferry_core::s3::tagging::check`). Stored in the record's extension, not here.
    #[serde(skip)]
    pub tags: Vec<(String, String)>,
    /// The object's ACL (an `AccessControlPolicy` document as Ferry writes it), if it has one
    /// of its own; checked by the caller. Stored in the record's extension, not here.
    #[serde(skip)]
    pub acl: Option<Vec<u8>>,
    /// The checksum of a multipart upload and of the object it completes. Stored in the
    /// record's extension, not here.
    #[serde(skip)]
    pub multipart_checksum: Option<MultipartChecksum>,
    /// The object lock retention of this version, if it has one; checked by the caller.
    /// Stored in the record's extension, not here.
    #[serde(skip)]
    pub retention: Option<Retention>,
    /// Whether a legal hold is on this version. Stored in the record's extension, not here.
    #[serde(skip)]
    pub legal_hold: bool,
}

/// What a copy takes from its request, never from its source (CopyObject).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestOwned {
    /// The copy's ACL document (`None`: private).
    pub acl: Option<Vec<u8>>,
    /// The copy's object lock retention.
    pub retention: Option<Retention>,
    /// Whether the copy gets a legal hold.
    pub legal_hold: bool,
    /// How the copy is encrypted (`None`: plaintext).
    pub encryption: Option<super::EncryptWith>,
    /// The checksum the copy asks for (`x-amz-checksum-algorithm`), computed over the copied
    /// bytes; `None` keeps the source's full-object checksum.
    pub checksum: Option<ferry_core::s3::checksum::ChecksumAlgorithm>,
}

/// Conditions of a conditional write, checked atomically with the write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteConditions {
    /// `If-None-Match: *`: fail with `PreconditionFailed` if the key exists.
    pub if_none_match_star: bool,
    /// `If-Match: <etag>`: fail with `PreconditionFailed` if the current ETag differs, and with
    /// `NoSuchKey` if there is no object (as S3 does).
    pub if_match: Option<ETag>,
    /// Where the write goes in its key's history, when it is placed there rather than new
    /// (Ferry's own headers, for versions the proxy's rebalance moves between nodes).
    pub placed: Placed,
}

/// Conditions of a DeleteObject, judged in its transaction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeleteConditions {
    /// `If-Match: <etag>`: only if the object (or the version named) has this ETag.
    pub if_match: Option<ETag>,
    /// A delete marker placed in the key's history (moved from another node) instead of new.
    pub placed: Placed,
}

/// A write placed in its key's history instead of added as its newest version: a version moved
/// from another node keeps its id, its place among the key's versions and its date
/// (`x-ferry-version-id`, `x-ferry-version-order`, `x-ferry-last-modified`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Placed {
    /// The version's order among its key's versions (for a non-null version, what its id is
    /// made of); `None`: a new version, newer than all. Needs a versioned bucket.
    pub seq: Option<u64>,
    /// With `seq`: the version is the key's null version.
    pub null: bool,
    /// Its modification time (Unix seconds) instead of the commit's.
    pub last_modified: Option<i64>,
}

/// The result of a committed write (PUT, copy, complete multipart upload).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PutResult {
    /// The new object's ETag.
    pub etag: ETag,
    /// Its size in bytes.
    pub size: u64,
    /// Its modification time.
    pub last_modified: DateTime,
    /// Its version id (`x-amz-version-id`), in a bucket that has a versioning state; `None`
    /// in one that never had.
    pub version_id: Option<VersionId>,
    /// Its full-object checksum, for a copy's result (`None` elsewhere: a PUT's response
    /// has it from the request's body).
    pub checksum: Option<Checksum>,
    /// Its tags, for the lifecycle rules that filter on them (`x-amz-expiration`).
    pub tags: Vec<(String, String)>,
}

/// What a DELETE did (`x-amz-version-id`, `x-amz-delete-marker`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DeleteOutcome {
    /// The version created (a delete marker) or removed; `None` in a bucket that never had a
    /// versioning state, when no version was named.
    pub version_id: Option<VersionId>,
    /// The delete created a delete marker, or removed one.
    pub delete_marker: bool,
}

/// A ListObjectVersions request as the store serves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VersionsQuery<'a> {
    /// Only keys starting with this.
    pub prefix: &'a str,
    /// Roll keys up to the first occurrence of this after the prefix.
    pub delimiter: Option<&'a str>,
    /// Only versions of keys after this one (or of this key, after `version_id_marker`).
    pub key_marker: Option<&'a str>,
    /// With `key_marker`: versions of that key older than this one.
    pub version_id_marker: Option<VersionId>,
    /// At most this many versions, delete markers and common prefixes (clamped to 1000).
    pub max_keys: usize,
}

/// One version (or delete marker) in a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionEntry {
    /// The key.
    pub key: String,
    /// Its version id.
    pub version_id: VersionId,
    /// Whether it is the key's current version.
    pub is_latest: bool,
    /// A delete marker (no ETag, size 0).
    pub delete_marker: bool,
    /// ETag (`None` for a delete marker).
    pub etag: Option<ETag>,
    /// Size in bytes.
    pub size: u64,
    /// Modification time.
    pub last_modified: DateTime,
}

/// A page of [`Store::list_versions`](super::Store::list_versions).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VersionsPage {
    /// Versions and delete markers, by key, newest first within a key.
    pub entries: Vec<VersionEntry>,
    /// Common prefixes, sorted.
    pub common_prefixes: Vec<String>,
    /// Whether more follow.
    pub is_truncated: bool,
    /// When truncated: `NextKeyMarker` (a key, or a common prefix).
    pub next_key_marker: Option<String>,
    /// When truncated on a version: `NextVersionIdMarker`.
    pub next_version_id_marker: Option<VersionId>,
}

/// An object's metadata as GET/HEAD return it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectInfo {
    /// Size in bytes.
    pub size: u64,
    /// ETag (`"<md5>"`, or `"<hex>-N"` for a multipart object).
    pub etag: ETag,
    /// Modification time.
    pub last_modified: DateTime,
    /// Content headers, user metadata and checksums.
    pub meta: ObjectMeta,
    /// Sizes of the parts of a multipart object, in order; empty for a single-part object.
    pub part_sizes: Vec<u64>,
    /// Its version id, in a bucket that has a versioning state (or when asked for by id).
    pub version_id: Option<VersionId>,
    /// How its data is encrypted at rest (`None`: plaintext).
    pub encryption: Option<super::EncryptionInfo>,
}

impl ObjectInfo {
    /// The `x-amz-mp-parts-count` of a multipart object; `None` for a single-part object.
    pub fn parts_count(&self) -> Option<u32> {
        if self.part_sizes.is_empty() {
            None
        } else {
            u32::try_from(self.part_sizes.len()).ok()
        }
    }

    /// The inclusive byte range of part `n` (1-based) of a multipart object; `None` if the
    /// object has no such part (or is single-part) or the part is empty.
    pub fn part_range(&self, n: u32) -> Option<(u64, u64)> {
        let idx = usize::try_from(n).ok()?.checked_sub(1)?;
        let size = *self.part_sizes.get(idx)?;
        let start: u64 = self.part_sizes.get(..idx)?.iter().sum();
        (size > 0).then(|| (start, start + size - 1))
    }
}

/// Which bytes of an object a GET reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadRange {
    /// The whole object (HTTP 200).
    #[default]
    All,
    /// `bytes=first-` (to the end).
    From(u64),
    /// `bytes=first-last`, both inclusive; `last` past the end is clamped to the last byte.
    Inclusive(u64, u64),
    /// `bytes=-n`: the last `n` bytes (the whole object if it is shorter).
    Suffix(u64),
    /// `partNumber=n`: part `n` of a multipart object (part 1 of a single-part object is all of it).
    Part(u32),
}

impl ReadRange {
    /// The inclusive range this selects in `info`'s bytes: `Ok(None)` for a whole-object read,
    /// `InvalidRange` (416) when it selects nothing. A syntactically invalid range
    /// (`first > last`) is also `InvalidRange`: the HTTP layer drops such headers before calling.
    pub fn resolve(self, info: &ObjectInfo) -> S3Result<Option<(u64, u64)>> {
        let size = info.size;
        let invalid = || S3Error::new(S3ErrorCode::InvalidRange);
        match self {
            ReadRange::All => Ok(None),
            ReadRange::From(first) if first < size => Ok(Some((first, size - 1))),
            ReadRange::Inclusive(first, last) if first <= last && first < size => {
                Ok(Some((first, last.min(size - 1))))
            }
            ReadRange::Suffix(n) if n > 0 && size > 0 => Ok(Some((size - n.min(size), size - 1))),
            ReadRange::From(_) | ReadRange::Inclusive(..) | ReadRange::Suffix(_) => Err(invalid()),
            ReadRange::Part(n) => {
                if n == 0 || n > MAX_PARTS {
                    return Err(S3Error::with_message(
                        S3ErrorCode::InvalidArgument,
                        "Part number must be an integer between 1 and 10000, inclusive",
                    ));
                }
                let not_satisfiable = || S3Error::new(S3ErrorCode::InvalidPartNumber);
                if info.part_sizes.is_empty() {
                    // A single-part object is its own part 1.
                    return match (n, size) {
                        (1, 0) => Ok(None),
                        (1, _) => Ok(Some((0, size - 1))),
                        _ => Err(not_satisfiable()),
                    };
                }
                if n as usize > info.part_sizes.len() {
                    return Err(not_satisfiable());
                }
                // An empty (last) part selects no bytes.
                info.part_range(n).map(Some).ok_or_else(not_satisfiable)
            }
        }
    }
}

/// One bucket in a bucket listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketInfo {
    /// The bucket's name.
    pub name: String,
    /// When it was created.
    pub created: DateTime,
}

/// A page of [`Store::list_buckets`](super::Store::list_buckets).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BucketsPage {
    /// Buckets sorted by name.
    pub buckets: Vec<BucketInfo>,
    /// Whether more buckets follow the last one.
    pub is_truncated: bool,
}

/// A ListObjects (v1 or v2) request as the store serves it.
///
/// v1 `marker` and v2 `start-after` / continuation token all map to `start_after`; feed
/// [`ObjectsPage::next_start_after`] back in to continue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ListQuery<'a> {
    /// Only keys starting with this.
    pub prefix: &'a str,
    /// Roll keys up to the first occurrence of this after the prefix (`None` or empty: no roll-up).
    pub delimiter: Option<&'a str>,
    /// Only keys (and common prefixes) after this. A value that is itself a rolled-up common
    /// prefix skips every key under it, so a page ending on a common prefix continues past it.
    pub start_after: Option<&'a str>,
    /// At most this many keys plus common prefixes (clamped to 1000; 0 returns an empty page).
    pub max_keys: usize,
}

/// One object in a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectEntry {
    /// The key.
    pub key: String,
    /// Size in bytes.
    pub size: u64,
    /// ETag.
    pub etag: ETag,
    /// Modification time.
    pub last_modified: DateTime,
    /// Always `"STANDARD"`.
    pub storage_class: &'static str,
}

/// A page of [`Store::list_objects`](super::Store::list_objects).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ObjectsPage {
    /// Objects, sorted by key.
    pub objects: Vec<ObjectEntry>,
    /// Common prefixes (each counted once toward `max_keys`), sorted.
    pub common_prefixes: Vec<String>,
    /// Whether more keys or prefixes follow.
    pub is_truncated: bool,
    /// When truncated: the last key or common prefix of this page, to pass as `start_after`
    /// (v1 `NextMarker`, v2 continuation token).
    pub next_start_after: Option<String>,
}

/// A ListMultipartUploads request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UploadsQuery<'a> {
    /// Only keys starting with this.
    pub prefix: &'a str,
    /// Roll keys up to the first occurrence of this after the prefix.
    pub delimiter: Option<&'a str>,
    /// Only uploads of keys after this one (or of this key, after `upload_id_marker`).
    pub key_marker: Option<&'a str>,
    /// With `key_marker`: uploads of that key started after this upload; ignored without it.
    pub upload_id_marker: Option<&'a str>,
    /// At most this many uploads plus common prefixes (clamped to 1000).
    pub max_uploads: usize,
}

/// One in-progress multipart upload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadEntry {
    /// The key it will create.
    pub key: String,
    /// Its upload id.
    pub upload_id: String,
    /// When it was created.
    pub initiated: DateTime,
}

/// A page of [`Store::list_uploads`](super::Store::list_uploads).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UploadsPage {
    /// Uploads sorted by key, then by initiation.
    pub uploads: Vec<UploadEntry>,
    /// Common prefixes, sorted.
    pub common_prefixes: Vec<String>,
    /// Whether more follow.
    pub is_truncated: bool,
    /// When truncated: `NextKeyMarker`.
    pub next_key_marker: Option<String>,
    /// When truncated on an upload (not a common prefix): `NextUploadIdMarker`.
    pub next_upload_id_marker: Option<String>,
}

/// One uploaded part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartEntry {
    /// Its part number (1..=10000).
    pub part_number: u32,
    /// Its ETag (MD5 of its bytes).
    pub etag: ETag,
    /// Its size in bytes.
    pub size: u64,
    /// When it was uploaded.
    pub last_modified: DateTime,
    /// Its checksum, when its upload has a checksum algorithm.
    pub checksum: Option<Checksum>,
}

/// A page of [`Store::list_parts`](super::Store::list_parts).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PartsPage {
    /// Parts sorted by number.
    pub parts: Vec<PartEntry>,
    /// Whether more parts follow.
    pub is_truncated: bool,
    /// When truncated: the last part number of this page (`NextPartNumberMarker`).
    pub next_part_number_marker: Option<u32>,
    /// The upload's checksum algorithm and type, if it has one.
    pub checksum: Option<MultipartChecksum>,
}

/// A part named in CompleteMultipartUpload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletedPart {
    /// Part number.
    pub part_number: u32,
    /// The ETag the client got when it uploaded the part.
    pub etag: ETag,
    /// The checksums the request gives for the part (`ChecksumCRC32` & co.).
    pub checksums: Vec<Checksum>,
}

/// What a CompleteMultipartUpload says of its object's checksum, to be checked against the
/// upload: `x-amz-checksum-*` (the value, `-N` after a composite one) and `x-amz-checksum-type`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExpectedChecksum {
    /// The object's checksum.
    pub checksum: Option<Checksum>,
    /// `FULL_OBJECT` (true) or `COMPOSITE` (false).
    pub full_object: Option<bool>,
}

/// What CompleteMultipartUpload made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompleteResult {
    /// The object's ETag, size and time.
    pub put: PutResult,
    /// Its checksum (`base64-N` when composite), if its upload had an algorithm.
    pub checksum: Option<Checksum>,
    /// Whether that checksum is `FULL_OBJECT` rather than `COMPOSITE`.
    pub full_object: bool,
    /// How the object is encrypted (`None`: plaintext, or a retried complete).
    pub encryption: Option<super::EncryptionInfo>,
}

/// Where a server-side copy reads from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopySource<'a> {
    /// Source bucket.
    pub bucket: &'a str,
    /// Source key.
    pub key: &'a str,
    /// `x-amz-copy-source-range` (inclusive), for UploadPartCopy only; CopyObject rejects it.
    pub range: Option<(u64, u64)>,
    /// The version to copy (`None`: the current one).
    pub version_id: Option<VersionId>,
    /// The source's SSE-C key (`x-amz-copy-source-server-side-encryption-customer-*`).
    pub customer: Option<&'a super::CustomerKey>,
}

/// `x-amz-metadata-directive` of CopyObject.
// One value per CopyObject, moved once: its size does not matter, a `Box` would only add an
// allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum MetadataDirective {
    /// Keep the source's content headers, user metadata and checksums.
    #[default]
    Copy,
    /// Take these instead.
    Replace(ObjectMeta),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(size: u64, part_sizes: &[u64]) -> ObjectInfo {
        ObjectInfo {
            size,
            etag: ETag::single(&[0; 16]),
            last_modified: DateTime::from_unix(0),
            meta: ObjectMeta::default(),
            part_sizes: part_sizes.to_vec(),
            version_id: None,
            encryption: None,
        }
    }

    #[test]
    fn part_ranges_follow_part_sizes() {
        let i = info(10, &[4, 5, 1]);
        assert_eq!(i.parts_count(), Some(3));
        assert_eq!(i.part_range(1), Some((0, 3)));
        assert_eq!(i.part_range(2), Some((4, 8)));
        assert_eq!(i.part_range(3), Some((9, 9)));
        assert_eq!(i.part_range(0), None);
        assert_eq!(i.part_range(4), None);
        assert_eq!(info(10, &[]).parts_count(), None);
    }

    #[test]
    fn ranges_resolve_as_http_says() {
        let i = info(100, &[]);
        let r = |range: ReadRange| range.resolve(&i).map_err(|e| e.code);
        assert_eq!(r(ReadRange::All), Ok(None));
        assert_eq!(r(ReadRange::From(99)), Ok(Some((99, 99))));
        assert_eq!(r(ReadRange::Inclusive(0, u64::MAX)), Ok(Some((0, 99))));
        assert_eq!(r(ReadRange::Suffix(u64::MAX)), Ok(Some((0, 99))));
        assert_eq!(r(ReadRange::Suffix(1)), Ok(Some((99, 99))));
        assert_eq!(r(ReadRange::From(100)), Err(S3ErrorCode::InvalidRange));
        assert_eq!(
            r(ReadRange::Inclusive(3, 2)),
            Err(S3ErrorCode::InvalidRange)
        );
        assert_eq!(r(ReadRange::Suffix(0)), Err(S3ErrorCode::InvalidRange));
        assert_eq!(r(ReadRange::Part(1)), Ok(Some((0, 99))));
        assert_eq!(r(ReadRange::Part(2)), Err(S3ErrorCode::InvalidPartNumber));
        assert_eq!(
            r(ReadRange::Part(10_001)),
            Err(S3ErrorCode::InvalidArgument)
        );
        let mp = info(10, &[9, 1, 0]);
        assert_eq!(ReadRange::Part(2).resolve(&mp), Ok(Some((9, 9))));
        // An empty last part selects nothing.
        assert!(ReadRange::Part(3).resolve(&mp).is_err());
        assert_eq!(ReadRange::Part(1).resolve(&info(0, &[])), Ok(None));
    }
}

/// How a GET reads an object ([`Store::get_object`](super::Store::get_object)): the default
/// reads all of the current version, with no SSE-C key.
#[derive(Debug, Clone, Copy, Default)]
pub struct GetOptions<'a> {
    /// The version to read (`None`: the current one).
    pub version: Option<VersionId>,
    /// Which bytes.
    pub range: ReadRange,
    /// The SSE-C key the request came with: an encrypted object's data is decrypted with it
    /// (errors as `Store::data_key`).
    pub customer: Option<&'a super::CustomerKey>,
}

/// How a HEAD reads an object's metadata ([`Store::head_object`](super::Store::head_object)):
/// the default reads the current version's, checking no SSE-C key (the node's own look-ups).
#[derive(Debug, Clone, Copy, Default)]
pub struct HeadOptions<'a> {
    /// The version to read (`None`: the current one).
    pub version: Option<VersionId>,
    /// Whether `customer` is checked as a GET checks it (a client's HEAD): an SSE-C object
    /// without its key, or a key for an object that is not SSE-C, is refused.
    pub check_key: bool,
    /// The SSE-C key the request came with.
    pub customer: Option<&'a super::CustomerKey>,
}

/// How a DeleteObject goes ([`Store::delete_object`](super::Store::delete_object)): the
/// default deletes the key (a delete marker in a versioned bucket), unconditionally.
#[derive(Clone, Copy, Default)]
pub struct DeleteOptions<'a> {
    /// The version to delete for good (`None`: the key, as a DeleteObject without one).
    pub version: Option<VersionId>,
    /// Only if the object (or the version named) has an ETag, and a delete marker placed in
    /// the key's history.
    pub conditions: DeleteConditions,
    /// What the removal of a version for good (not a delete marker's) is first put to, with
    /// the version's metadata, in the deleting transaction: object lock refuses it there
    /// (`AccessDenied`), so no change of retention or hold can slip between the check and
    /// the delete. `None`: nothing refuses it.
    pub guard: Option<&'a DeleteGuard<'a>>,
}

/// What refuses the removal of a version for good ([`DeleteOptions::guard`]).
pub type DeleteGuard<'a> = dyn Fn(&ObjectMeta) -> S3Result<()> + 'a;

impl std::fmt::Debug for DeleteOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeleteOptions")
            .field("version", &self.version)
            .field("conditions", &self.conditions)
            .field("guard", &self.guard.is_some())
            .finish()
    }
}

/// How a CopyObject makes its copy ([`Store::copy_object`](super::Store::copy_object)): the
/// default keeps the source's metadata and tags, private, unconditionally.
#[derive(Debug, Clone, Default)]
pub struct CopyOptions {
    /// The copy's metadata.
    pub directive: MetadataDirective,
    /// The copy's tags: `None` keeps the source's (`x-amz-tagging-directive: COPY`), `Some`
    /// gives these (`REPLACE`).
    pub tags: Option<Vec<(String, String)>>,
    /// What the copy takes from its request, never from its source: its ACL document
    /// (`None`: private), object lock, encryption and checksum algorithm.
    pub own: RequestOwned,
    /// Checked against the destination at commit.
    pub conditions: WriteConditions,
}

/// How a CompleteMultipartUpload checks its request
/// ([`Store::complete_multipart_upload`](super::Store::complete_multipart_upload)): the
/// default checks no checksum and no SSE-C key, unconditionally.
#[derive(Debug, Clone, Default)]
pub struct CompleteOptions {
    /// As for a PUT.
    pub conditions: WriteConditions,
    /// The object checksum the request gives (`x-amz-checksum-*`, `x-amz-checksum-type`).
    pub expected: ExpectedChecksum,
    /// The SSE-C key the request came with: it must be the upload's (checked as a GET's).
    pub customer: Option<super::CustomerKey>,
}

/// The part an UploadPart or UploadPartCopy writes
/// ([`Store::part_writer`](super::Store::part_writer),
/// [`Store::upload_part_copy`](super::Store::upload_part_copy)).
#[derive(Debug, Clone, Copy)]
pub struct PartOf<'a> {
    /// The upload's id.
    pub upload_id: &'a str,
    /// The part's number (1..=10000).
    pub part_number: u32,
    /// The SSE-C key the request came with: a part of an encrypted upload is encrypted with a
    /// key of its own; an SSE-C upload's part needs the upload's key (errors as a GET's).
    pub customer: Option<&'a super::CustomerKey>,
}
