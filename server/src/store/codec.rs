//! Metadata records and their encoding: postcard, behind a leading format byte.
//!
//! postcard is compact and fast but not self-describing, so a record's layout is fixed by its
//! format byte: changing a record means a new format byte and keeping a decoder for the old one.

use ferry_core::md5::{ETag, Md5Digest};
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};
use serde::{Deserialize, Serialize};

use super::files::FileId;
use super::types::ObjectMeta;

/// The format byte every record starts with.
const FORMAT_V1: u8 = 1;

/// Encode `value` as `[FORMAT_V1] ++ postcard(value)`.
pub(crate) fn encode<T: Serialize>(value: &T) -> S3Result<Vec<u8>> {
    postcard::to_extend(value, vec![FORMAT_V1]).map_err(|e| corrupt(&e))
}

/// Decode a record written by [`encode`]. Trailing bytes are ignored, which lets a reader decode
/// a leading subset of a record's fields (see [`ListFields`]).
pub(crate) fn decode<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> S3Result<T> {
    match bytes.split_first() {
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

fn corrupt(e: &postcard::Error) -> S3Error {
    S3Error::with_message(S3ErrorCode::InternalError, format!("metadata record: {e}"))
}

/// A bucket.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct BucketRecord {
    /// Creation time, Unix seconds.
    pub created: i64,
}

/// A committed object. The first three fields are what listings need ([`ListFields`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ObjectRecord {
    pub size: u64,
    pub etag: String,
    pub last_modified: i64,
    pub meta: ObjectMeta,
    pub data: DataLayout,
}

/// The leading fields of an [`ObjectRecord`], decoded without the rest for listings.
#[derive(Debug, Deserialize)]
pub(crate) struct ListFields<'a> {
    pub size: u64,
    pub etag: &'a str,
    pub last_modified: i64,
}

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

/// An in-progress multipart upload.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct UploadRecord {
    /// Creation time, Unix seconds.
    pub initiated: i64,
    /// The metadata the completed object will get.
    pub meta: ObjectMeta,
}

/// An uploaded part.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct PartRecord {
    pub file: FileId,
    pub size: u64,
    pub md5: Md5Digest,
    pub last_modified: i64,
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

/// A bucket fence (see `store::fence`): who holds it, and until when.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct FenceRecord {
    pub token: String,
    /// When it lapses, Unix milliseconds.
    pub expires_ms: u64,
}

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
