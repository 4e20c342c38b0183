//! Metadata records and their encoding: postcard, behind a leading format byte.
//!
//! postcard is compact and fast but not self-describing, so a record's layout is fixed by its
//! format byte: changing a record's fields means a new format byte and keeping a decoder for the
//! old one.
//!
//! What only some records carry (an object's tags; later its ACL) goes in optional
//! [`Extension`] entries after the fixed fields, each `(kind, postcard bytes)`. A record without
//! any is byte for byte what builds before extensions wrote, so their records read as "no
//! extensions"; a reader skips kinds it does not know, and builds before extensions ignore the
//! entries altogether (decoding ignores trailing bytes).

use ferry_core::md5::{ETag, Md5Digest};
use ferry_core::s3::version::VersionId;
use ferry_core::s3::xml::lock::{Retention, RetentionMode};
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};
use serde::{Deserialize, Serialize};

use super::files::FileId;
use super::sse::Encryption;
use super::types::{Checksum, MultipartChecksum, ObjectMeta};

/// The format byte every record starts with.
const FORMAT_V1: u8 = 1;

/// An optional part of a record, stored after its fixed fields. Kinds are stored numbers
/// ([`Extension::kind`]): never reuse one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Extension {
    /// An object's (or a multipart upload's) tags, in the order given; never empty (no tags,
    /// no entry).
    Tags(Vec<(String, String)>),
    /// An object's (or a multipart upload's) ACL document.
    Acl(Vec<u8>),
    /// Which version of its key an object record is (records of buckets that were never
    /// versioned have none: they are the null version).
    Version(VersionStamp),
    /// An object version's (or a multipart upload's) object lock retention: COMPLIANCE
    /// (`true`) or GOVERNANCE, and its retain-until date in Unix seconds.
    Retention((bool, i64)),
    /// An object version's (or a multipart upload's) legal hold, when on.
    LegalHold,
    /// A multipart upload's checksum algorithm and type; on the completed object, with its
    /// parts' checksums.
    MultipartChecksum(MultipartChecksum),
    /// An uploaded part's checksum (of its upload's algorithm).
    PartChecksum(Checksum),
    /// How an object's data is encrypted (see [`super::sse`]). A store holding one is marked
    /// [`super::ENCRYPTED_LAYOUT`], which builds that do not know this kind refuse to open:
    /// skipping it, they would serve ciphertext.
    Encryption(Encryption),
    /// An uploaded part's own random seed (its key is derived from it and its upload's data
    /// key), when its upload is encrypted.
    PartSeed([u8; 32]),
    /// An encrypted multipart object's part seeds, in part order ([`Encryption::parts`]);
    /// stored after its [`Extension::Encryption`].
    PartSeeds(Vec<[u8; 32]>),
}

/// The stored kind of [`Extension::Tags`].
const EXT_TAGS: u32 = 1;
/// The stored kind of [`Extension::Acl`].
const EXT_ACL: u32 = 2;
/// The stored kind of [`Extension::Version`].
const EXT_VERSION: u32 = 3;
/// The stored kind of [`Extension::Retention`].
const EXT_RETENTION: u32 = 6;
/// The stored kind of [`Extension::LegalHold`].
const EXT_LEGAL_HOLD: u32 = 7;
/// The stored kind of [`Extension::MultipartChecksum`].
const EXT_MULTIPART_CHECKSUM: u32 = 4;
/// The stored kind of [`Extension::PartChecksum`].
const EXT_PART_CHECKSUM: u32 = 5;
/// The stored kind of [`Extension::Encryption`].
const EXT_ENCRYPTION: u32 = 8;
/// The stored kind of [`Extension::PartSeed`].
const EXT_PART_SEED: u32 = 9;
/// The stored kind of [`Extension::PartSeeds`].
const EXT_PART_SEEDS: u32 = 10;

/// An extension as stored: its kind, and its value in postcard.
#[derive(Serialize, Deserialize)]
struct ExtensionEntry<'a> {
    kind: u32,
    #[serde(borrow)]
    body: &'a [u8],
}

impl Extension {
    fn kind(&self) -> u32 {
        match self {
            Extension::Tags(_) => EXT_TAGS,
            Extension::Acl(_) => EXT_ACL,
            Extension::Version(_) => EXT_VERSION,
            Extension::Retention(_) => EXT_RETENTION,
            Extension::LegalHold => EXT_LEGAL_HOLD,
            Extension::MultipartChecksum(_) => EXT_MULTIPART_CHECKSUM,
            Extension::PartChecksum(_) => EXT_PART_CHECKSUM,
            Extension::Encryption(_) => EXT_ENCRYPTION,
            Extension::PartSeed(_) => EXT_PART_SEED,
            Extension::PartSeeds(_) => EXT_PART_SEEDS,
        }
    }

    fn body(&self) -> Result<Vec<u8>, postcard::Error> {
        match self {
            Extension::Tags(tags) => postcard::to_allocvec(tags),
            Extension::Acl(doc) => postcard::to_allocvec(doc),
            Extension::Version(stamp) => postcard::to_allocvec(stamp),
            Extension::Retention(r) => postcard::to_allocvec(r),
            Extension::LegalHold => Ok(Vec::new()),
            Extension::MultipartChecksum(c) => postcard::to_allocvec(c),
            Extension::PartChecksum(c) => postcard::to_allocvec(c),
            Extension::Encryption(e) => postcard::to_allocvec(e),
            Extension::PartSeed(s) => postcard::to_allocvec(s),
            Extension::PartSeeds(s) => postcard::to_allocvec(s),
        }
    }

    /// The extension an entry holds; `None` for a kind this build does not know.
    fn from_entry(entry: &ExtensionEntry<'_>) -> Result<Option<Self>, postcard::Error> {
        Ok(match entry.kind {
            EXT_TAGS => Some(Extension::Tags(postcard::from_bytes(entry.body)?)),
            EXT_ACL => Some(Extension::Acl(postcard::from_bytes(entry.body)?)),
            EXT_VERSION => Some(Extension::Version(postcard::from_bytes(entry.body)?)),
            EXT_RETENTION => Some(Extension::Retention(postcard::from_bytes(entry.body)?)),
            EXT_LEGAL_HOLD => Some(Extension::LegalHold),
            EXT_MULTIPART_CHECKSUM => Some(Extension::MultipartChecksum(postcard::from_bytes(
                entry.body,
            )?)),
            EXT_PART_CHECKSUM => Some(Extension::PartChecksum(postcard::from_bytes(entry.body)?)),
            EXT_ENCRYPTION => Some(Extension::Encryption(postcard::from_bytes(entry.body)?)),
            EXT_PART_SEED => Some(Extension::PartSeed(postcard::from_bytes(entry.body)?)),
            EXT_PART_SEEDS => Some(Extension::PartSeeds(postcard::from_bytes(entry.body)?)),
            _ => None,
        })
    }
}

/// A stored record: its fixed fields are its serde form, and it may carry [`Extension`]s.
pub(crate) trait Record {
    /// Whether entries after the fixed fields are read: only for records that carry
    /// extensions (views of a leading subset of fields, such as [`ListFields`], skip them).
    const EXTENSIBLE: bool = false;

    /// The extensions to store after the fixed fields.
    fn extensions(&self) -> Vec<Extension> {
        Vec::new()
    }

    /// Take an extension read back.
    fn apply(&mut self, _ext: Extension) {}
}

/// Encode `value` as `[FORMAT_V1] ++ postcard(value) ++ its extension entries`.
pub(crate) fn encode<T: Serialize + Record>(value: &T) -> S3Result<Vec<u8>> {
    let mut out = postcard::to_extend(value, vec![FORMAT_V1]).map_err(|e| corrupt(&e))?;
    for ext in value.extensions() {
        let body = ext.body().map_err(|e| corrupt(&e))?;
        let entry = ExtensionEntry {
            kind: ext.kind(),
            body: &body,
        };
        out = postcard::to_extend(&entry, out).map_err(|e| corrupt(&e))?;
    }
    Ok(out)
}

/// Decode a record written by [`encode`] (or by a build before extensions). Trailing bytes
/// are ignored unless the record is [`Record::EXTENSIBLE`], which lets a reader decode a leading
/// subset of a record's fields (see [`ListFields`]).
pub(crate) fn decode<'a, T: Deserialize<'a> + Record>(bytes: &'a [u8]) -> S3Result<T> {
    match bytes.split_first() {
        Some((&FORMAT_V1, rest)) if T::EXTENSIBLE => decode_extended(rest).map_err(|e| corrupt(&e)),
        Some((&FORMAT_V1, rest)) => postcard::from_bytes(rest).map_err(|e| corrupt(&e)),
        Some((v, _)) => Err(S3Error::with_message(
            S3ErrorCode::InternalError,
            format!("metadata record has unknown format {v}"),
        )),
        None => Err(S3Error::with_message(
            S3ErrorCode::InternalError,
            "empty metadata record",
        )),
    }
}

fn decode_extended<'a, T: Deserialize<'a> + Record>(bytes: &'a [u8]) -> postcard::Result<T> {
    let (mut value, mut rest) = postcard::take_from_bytes::<T>(bytes)?;
    while !rest.is_empty() {
        let (entry, more) = postcard::take_from_bytes::<ExtensionEntry<'_>>(rest)?;
        if let Some(ext) = Extension::from_entry(&entry)? {
            value.apply(ext);
        }
        rest = more;
    }
    Ok(value)
}

fn corrupt(e: &postcard::Error) -> S3Error {
    S3Error::with_message(S3ErrorCode::InternalError, format!("metadata record: {e}"))
}

/// A bucket.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct BucketRecord {
    /// Creation time, Unix seconds.
    pub created: i64,
}

impl Record for BucketRecord {}

/// A committed object (its tags in an [`Extension`]). The first three fields are what listings need ([`ListFields`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ObjectRecord {
    pub size: u64,
    pub etag: String,
    pub last_modified: i64,
    pub meta: ObjectMeta,
    pub data: DataLayout,
    /// Its version, in an [`Extension`]; `None` in buckets that were never versioned.
    #[serde(skip)]
    pub version: Option<VersionStamp>,
    /// How its data is encrypted, in an [`Extension`]; `None`: plaintext.
    #[serde(skip)]
    pub encryption: Option<Encryption>,
}

/// Which version of its key an object record (or delete marker) is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct VersionStamp {
    /// Orders the key's versions (larger: newer); a non-null version's id is made of it.
    pub seq: u64,
    /// The null version (written while versioning was suspended).
    pub null: bool,
    /// A delete marker (no data).
    pub delete_marker: bool,
}

impl ObjectRecord {
    /// A delete marker stamped `stamp`.
    pub fn delete_marker(stamp: VersionStamp, last_modified: i64) -> Self {
        ObjectRecord {
            size: 0,
            etag: String::new(),
            last_modified,
            meta: ObjectMeta::default(),
            data: DataLayout::Parts(Vec::new()),
            version: Some(stamp),
            encryption: None,
        }
    }

    /// Where it sorts among its key's versions (larger: newer): its stamp's sequence, or
    /// for a record written before its bucket was versioned, its modification time in
    /// microseconds (every later sequence is larger).
    pub fn order(&self) -> u64 {
        match self.version {
            Some(v) => v.seq,
            None => u64::try_from(self.last_modified)
                .unwrap_or(0)
                .saturating_mul(1_000_000),
        }
    }

    /// Whether it is the null version.
    pub fn is_null(&self) -> bool {
        self.version.is_none_or(|v| v.null)
    }

    /// Whether it is a delete marker.
    pub fn is_delete_marker(&self) -> bool {
        self.version.is_some_and(|v| v.delete_marker)
    }

    /// Its version id (`null` for a record without a stamp).
    pub fn version_id(&self) -> VersionId {
        match self.version {
            Some(v) if !v.null => VersionId::Seq(v.seq),
            _ => VersionId::Null,
        }
    }
}

/// The leading fields of an [`ObjectRecord`], decoded without the rest for listings.
#[derive(Debug, Deserialize)]
pub(crate) struct ListFields<'a> {
    pub size: u64,
    pub etag: &'a str,
    pub last_modified: i64,
}

impl Record for ObjectRecord {
    const EXTENSIBLE: bool = true;

    fn extensions(&self) -> Vec<Extension> {
        let mut out = tags_extension(&self.meta);
        out.extend(self.version.map(Extension::Version));
        out.extend(encryption_extensions(self.encryption.as_ref()));
        out
    }

    fn apply(&mut self, ext: Extension) {
        match ext {
            Extension::Version(v) => self.version = Some(v),
            ext => apply_encryption(&mut self.encryption, ext, &mut self.meta),
        }
    }
}

/// An encryption's extensions: itself, then its part seeds (if it has parts).
fn encryption_extensions(enc: Option<&Encryption>) -> Vec<Extension> {
    let mut out = Vec::new();
    if let Some(e) = enc {
        out.push(Extension::Encryption(e.clone()));
        if !e.parts.is_empty() {
            out.push(Extension::PartSeeds(e.parts.clone()));
        }
    }
    out
}

/// Take an encryption extension read back (part seeds follow their encryption); others go to
/// `meta`.
fn apply_encryption(enc: &mut Option<Encryption>, ext: Extension, meta: &mut ObjectMeta) {
    match ext {
        Extension::Encryption(e) => *enc = Some(e),
        Extension::PartSeeds(seeds) => {
            if let Some(e) = enc {
                e.parts = seeds;
            }
        }
        ext => apply_to_meta(meta, ext),
    }
}

fn tags_extension(meta: &ObjectMeta) -> Vec<Extension> {
    let mut out = Vec::new();
    if !meta.tags.is_empty() {
        out.push(Extension::Tags(meta.tags.clone()));
    }
    if let Some(acl) = &meta.acl {
        out.push(Extension::Acl(acl.clone()));
    }
    if let Some(r) = &meta.retention {
        out.push(Extension::Retention((
            r.mode == RetentionMode::Compliance,
            r.until,
        )));
    }
    if meta.legal_hold {
        out.push(Extension::LegalHold);
    }
    if let Some(c) = &meta.multipart_checksum {
        out.push(Extension::MultipartChecksum(c.clone()));
    }
    out
}

fn apply_to_meta(meta: &mut ObjectMeta, ext: Extension) {
    match ext {
        Extension::Tags(tags) => meta.tags = tags,
        Extension::Acl(doc) => meta.acl = Some(doc),
        // Only object records carry one.
        Extension::Version(_) => {}
        Extension::Retention((compliance, until)) => {
            meta.retention = Some(Retention {
                mode: if compliance {
                    RetentionMode::Compliance
                } else {
                    RetentionMode::Governance
                },
                until,
            });
        }
        Extension::LegalHold => meta.legal_hold = true,
        Extension::MultipartChecksum(c) => meta.multipart_checksum = Some(c),
        // Only object records, uploads and parts carry these.
        Extension::PartChecksum(_)
        | Extension::Encryption(_)
        | Extension::PartSeed(_)
        | Extension::PartSeeds(_) => {}
    }
}

impl Record for ListFields<'_> {}

/// Where an object's bytes are.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum DataLayout {
    /// One data file holds all the bytes.
    Single(FileId),
    /// The bytes are the concatenation of these part files (a completed multipart upload).
    Parts(Vec<PartLoc>),
}

/// One part file of a multipart object.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct PartLoc {
    pub file: FileId,
    pub size: u64,
}

impl DataLayout {
    /// The data files, in byte order.
    pub fn files(&self) -> Vec<FileId> {
        match self {
            DataLayout::Single(f) => vec![*f],
            DataLayout::Parts(parts) => parts.iter().map(|p| p.file).collect(),
        }
    }
}

/// An in-progress multipart upload (the tags the object will get in an [`Extension`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct UploadRecord {
    /// Creation time, Unix seconds.
    pub initiated: i64,
    /// The metadata the completed object will get.
    pub meta: ObjectMeta,
    /// How its parts are encrypted (each with a key of its own derived from this one's data
    /// key), in an [`Extension`]; `None`: plaintext.
    #[serde(skip)]
    pub encryption: Option<Encryption>,
}

impl Record for UploadRecord {
    const EXTENSIBLE: bool = true;

    fn extensions(&self) -> Vec<Extension> {
        let mut out = tags_extension(&self.meta);
        out.extend(encryption_extensions(self.encryption.as_ref()));
        out
    }

    fn apply(&mut self, ext: Extension) {
        apply_encryption(&mut self.encryption, ext, &mut self.meta);
    }
}

/// An uploaded part (its checksum in an [`Extension`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct PartRecord {
    pub file: FileId,
    pub size: u64,
    /// Its ETag's digest: the MD5 of its data, or for a part of an SSE-C upload the opaque
    /// digest made from it (`sse::etag_digest`).
    pub md5: Md5Digest,
    pub last_modified: i64,
    /// Its checksum, when its upload has a checksum algorithm.
    #[serde(skip)]
    pub checksum: Option<Checksum>,
    /// Its own random seed, when its upload is encrypted (in an [`Extension`]).
    #[serde(skip)]
    pub seed: Option<[u8; 32]>,
}

/// A completed multipart upload, kept for a while so that a retried complete gets the same
/// answer (see `store::multipart`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct CompletedRecord {
    /// `bucket ++ \0 ++ key`.
    pub object_key: Vec<u8>,
    /// The part list it was completed with: numbers and ETags.
    pub parts: Vec<(u32, String)>,
    pub etag: String,
    pub size: u64,
    /// When it completed, Unix seconds.
    pub completed: i64,
}

impl Record for CompletedRecord {}

impl Record for PartRecord {
    const EXTENSIBLE: bool = true;

    fn extensions(&self) -> Vec<Extension> {
        let mut out: Vec<Extension> = self
            .checksum
            .iter()
            .map(|c| Extension::PartChecksum(c.clone()))
            .collect();
        out.extend(self.seed.map(Extension::PartSeed));
        out
    }

    fn apply(&mut self, ext: Extension) {
        match ext {
            Extension::PartChecksum(c) => self.checksum = Some(c),
            Extension::PartSeed(s) => self.seed = Some(s),
            _ => {}
        }
    }
}

/// A bucket fence (see `store::fence`): who holds it, and until when.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct FenceRecord {
    pub token: String,
    /// When it lapses, Unix milliseconds.
    pub expires_ms: u64,
}

impl Record for FenceRecord {}

/// Parse an ETag this store wrote.
pub(crate) fn stored_etag(s: &str) -> S3Result<ETag> {
    ETag::parse(s).ok_or_else(|| {
        S3Error::with_message(S3ErrorCode::InternalError, "stored ETag is malformed")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::types::Checksum;

    fn sample() -> ObjectRecord {
        ObjectRecord {
            size: 1 << 40,
            etag: ETag::single(&[7; 16]).as_str().to_owned(),
            last_modified: 1_700_000_000,
            meta: ObjectMeta {
                content_type: Some("text/plain".into()),
                user_metadata: vec![("b".into(), "2".into()), ("a".into(), "1".into())],
                checksums: vec![Checksum {
                    algorithm: "CRC32".into(),
                    value: "AAAAAA==".into(),
                }],
                ..ObjectMeta::default()
            },
            data: DataLayout::Parts(vec![
                PartLoc {
                    file: u128::MAX,
                    size: 5,
                },
                PartLoc { file: 1, size: 0 },
            ]),
            version: None,
            encryption: None,
        }
    }

    #[test]
    fn object_record_round_trips() {
        let rec = sample();
        let bytes = encode(&rec).unwrap();
        assert_eq!(bytes[0], FORMAT_V1);
        let back: ObjectRecord = decode(&bytes).unwrap();
        assert_eq!(back.size, rec.size);
        assert_eq!(back.etag, rec.etag);
        assert_eq!(back.meta, rec.meta);
        assert_eq!(back.data.files(), vec![u128::MAX, 1]);
    }

    #[test]
    fn list_fields_are_a_prefix_of_the_object_record() {
        let rec = sample();
        let bytes = encode(&rec).unwrap();
        let f: ListFields<'_> = decode(&bytes).unwrap();
        assert_eq!(f.size, rec.size);
        assert_eq!(f.etag, rec.etag);
        assert_eq!(f.last_modified, rec.last_modified);
    }

    /// `ObjectMeta` and `ObjectRecord` as builds before extensions declared them.
    #[derive(Serialize, Deserialize)]
    struct OldMeta {
        content_type: Option<String>,
        content_encoding: Option<String>,
        content_disposition: Option<String>,
        content_language: Option<String>,
        cache_control: Option<String>,
        expires: Option<String>,
        user_metadata: Vec<(String, String)>,
        checksums: Vec<Checksum>,
    }

    #[derive(Serialize, Deserialize)]
    struct OldObjectRecord {
        size: u64,
        etag: String,
        last_modified: i64,
        meta: OldMeta,
        data: DataLayout,
    }

    #[derive(Serialize, Deserialize)]
    struct OldUploadRecord {
        initiated: i64,
        meta: OldMeta,
    }

    fn old_meta(m: &ObjectMeta) -> OldMeta {
        OldMeta {
            content_type: m.content_type.clone(),
            content_encoding: m.content_encoding.clone(),
            content_disposition: m.content_disposition.clone(),
            content_language: m.content_language.clone(),
            cache_control: m.cache_control.clone(),
            expires: m.expires.clone(),
            user_metadata: m.user_metadata.clone(),
            checksums: m.checksums.clone(),
        }
    }

    fn old_encoding(rec: &ObjectRecord) -> Vec<u8> {
        let old = OldObjectRecord {
            size: rec.size,
            etag: rec.etag.clone(),
            last_modified: rec.last_modified,
            meta: old_meta(&rec.meta),
            data: rec.data.clone(),
        };
        postcard::to_extend(&old, vec![FORMAT_V1]).unwrap()
    }

    fn tags() -> Vec<(String, String)> {
        vec![
            ("project".into(), "blue sky".into()),
            ("é".into(), String::new()),
        ]
    }

    #[test]
    fn records_written_before_extensions_read_as_untagged() {
        let rec = sample();
        let old = old_encoding(&rec);
        let back: ObjectRecord = decode(&old).unwrap();
        assert_eq!(back.meta, rec.meta);
        assert!(back.meta.tags.is_empty());
        assert_eq!(back.data.files(), rec.data.files());
        // An untagged record is written byte for byte as before.
        assert_eq!(encode(&rec).unwrap(), old);

        let up = UploadRecord {
            initiated: 7,
            meta: rec.meta.clone(),
            encryption: None,
        };
        let old_up = postcard::to_extend(
            &OldUploadRecord {
                initiated: 7,
                meta: old_meta(&rec.meta),
            },
            vec![FORMAT_V1],
        )
        .unwrap();
        let back: UploadRecord = decode(&old_up).unwrap();
        assert_eq!(back.meta, up.meta);
        assert_eq!(encode(&up).unwrap(), old_up);
    }

    #[test]
    fn tags_round_trip_in_an_extension() {
        let mut rec = sample();
        rec.meta.tags = tags();
        let bytes = encode(&rec).unwrap();
        assert!(bytes.starts_with(&old_encoding(&rec)));
        let back: ObjectRecord = decode(&bytes).unwrap();
        assert_eq!(back.meta.tags, tags());
        assert_eq!(back.meta, rec.meta);
        // Listings and builds before extensions read the fixed fields and ignore the rest.
        let f: ListFields<'_> = decode(&bytes).unwrap();
        assert_eq!((f.size, f.etag), (rec.size, rec.etag.as_str()));
        let old: OldObjectRecord = postcard::from_bytes(&bytes[1..]).unwrap();
        assert_eq!(old.meta.user_metadata, rec.meta.user_metadata);

        let up = UploadRecord {
            initiated: 9,
            meta: rec.meta.clone(),
            encryption: None,
        };
        let back: UploadRecord = decode(&encode(&up).unwrap()).unwrap();
        assert_eq!(back.meta.tags, tags());
    }

    #[test]
    fn version_stamps_round_trip_and_unstamped_records_are_null() {
        let mut rec = sample();
        assert!(rec.is_null() && !rec.is_delete_marker());
        assert_eq!(rec.version_id(), VersionId::Null);
        assert_eq!(rec.order(), 1_700_000_000_000_000);
        let stamp = VersionStamp {
            seq: 42,
            null: false,
            delete_marker: false,
        };
        rec.version = Some(stamp);
        rec.meta.tags = tags();
        let bytes = encode(&rec).unwrap();
        // Builds before versions read the same record, tags included.
        assert!(bytes.starts_with(&old_encoding(&rec)));
        let back: ObjectRecord = decode(&bytes).unwrap();
        assert_eq!(back.version, Some(stamp));
        assert_eq!(back.meta.tags, tags());
        assert_eq!(back.version_id(), VersionId::Seq(42));
        assert_eq!(back.order(), 42);
        let f: ListFields<'_> = decode(&bytes).unwrap();
        assert_eq!(f.size, rec.size);

        let marker = ObjectRecord::delete_marker(
            VersionStamp {
                seq: 43,
                null: true,
                delete_marker: true,
            },
            5,
        );
        let back: ObjectRecord = decode(&encode(&marker).unwrap()).unwrap();
        assert!(back.is_delete_marker() && back.is_null());
        assert_eq!(back.version_id(), VersionId::Null);
        assert!(back.data.files().is_empty());
    }

    #[test]
    fn checksums_round_trip_in_extensions() {
        // A part written before extensions (no checksum) reads as one without.
        #[derive(Serialize)]
        struct OldPartRecord {
            file: FileId,
            size: u64,
            md5: Md5Digest,
            last_modified: i64,
        }
        let old = postcard::to_extend(
            &OldPartRecord {
                file: 3,
                size: 10,
                md5: [1; 16],
                last_modified: 5,
            },
            vec![FORMAT_V1],
        )
        .unwrap();
        let back: PartRecord = decode(&old).unwrap();
        assert_eq!((back.file, back.size, &back.checksum), (3, 10, &None));
        let mut part = back.clone();
        part.checksum = Some(Checksum {
            algorithm: "SHA256".into(),
            value: "x".into(),
        });
        assert_eq!(
            encode(&back).unwrap(),
            old,
            "no checksum: written as before"
        );
        let bytes = encode(&part).unwrap();
        assert!(bytes.starts_with(&old));
        let again: PartRecord = decode(&bytes).unwrap();
        assert_eq!(again.checksum, part.checksum);

        let mut rec = sample();
        rec.meta.multipart_checksum = Some(MultipartChecksum {
            algorithm: "CRC32".into(),
            full_object: true,
            parts: vec![(1, "AAAAAA==".into()), (2, "AAAAAQ==".into())],
        });
        rec.meta.tags = tags();
        let bytes = encode(&rec).unwrap();
        let back: ObjectRecord = decode(&bytes).unwrap();
        assert_eq!(back.meta, rec.meta);
        // Builds before this extension read the record, tags and all, without it.
        let old: OldObjectRecord = postcard::from_bytes(&bytes[1..]).unwrap();
        assert_eq!(old.meta.checksums, rec.meta.checksums);
    }

    #[test]
    fn encryption_and_part_seeds_round_trip_in_extensions() {
        use crate::store::sse::{EncryptWith, KeySource, Keyring, MasterKey};
        struct Master(MasterKey);
        impl KeySource for Master {
            fn master_key(&self) -> S3Result<&MasterKey> {
                Ok(&self.0)
            }
            fn keyring(&self) -> Option<&Keyring> {
                None
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let master = Master(MasterKey::load_or_create(&dir.path().join("k")).unwrap());
        let (mut enc, _) = Encryption::new(&EncryptWith::SseS3, &master).unwrap();

        // An upload keeps its encryption; its object adds its parts' seeds.
        let up = UploadRecord {
            initiated: 9,
            meta: ObjectMeta::default(),
            encryption: Some(enc.clone()),
        };
        let back: UploadRecord = decode(&encode(&up).unwrap()).unwrap();
        assert_eq!(back.encryption, up.encryption);

        enc.parts = vec![[1; 32], [2; 32]];
        let mut rec = sample();
        rec.meta.tags = tags();
        rec.encryption = Some(enc.clone());
        let bytes = encode(&rec).unwrap();
        let back: ObjectRecord = decode(&bytes).unwrap();
        assert_eq!(back.encryption, Some(enc));
        assert_eq!(back.meta.tags, tags());

        let part = PartRecord {
            file: 3,
            size: 10,
            md5: [1; 16],
            last_modified: 5,
            checksum: None,
            seed: Some([9; 32]),
        };
        let back: PartRecord = decode(&encode(&part).unwrap()).unwrap();
        assert_eq!((back.seed, back.checksum), (Some([9; 32]), None));
    }

    #[test]
    fn unknown_extensions_are_skipped_and_broken_ones_refused() {
        let mut rec = sample();
        rec.meta.tags = tags();
        let mut bytes = encode(&rec).unwrap();
        let later = ExtensionEntry {
            kind: 77,
            body: b"a later build's extension",
        };
        bytes = postcard::to_extend(&later, bytes).unwrap();
        let back: ObjectRecord = decode(&bytes).unwrap();
        assert_eq!(back.meta.tags, tags());
        // A truncated entry is corruption, not "no tags".
        let mut cut = encode(&rec).unwrap();
        cut.pop();
        assert_eq!(
            decode::<ObjectRecord>(&cut).unwrap_err().code,
            S3ErrorCode::InternalError
        );
    }

    #[test]
    fn unknown_format_and_garbage_are_internal_errors() {
        let mut bytes = encode(&BucketRecord { created: 5 }).unwrap();
        bytes[0] = 9;
        let e = decode::<BucketRecord>(&bytes).unwrap_err();
        assert_eq!(e.code, S3ErrorCode::InternalError);
        assert!(decode::<BucketRecord>(&[]).is_err());
        assert!(decode::<ObjectRecord>(&[FORMAT_V1, 0xff]).is_err());
    }
}
