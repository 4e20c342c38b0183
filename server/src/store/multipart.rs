//! Multipart uploads: create, upload part (and part copy), list parts and uploads, abort,
//! complete. Completing copies no data: the object's record lists its part files in order.

use std::collections::HashSet;
use std::io::{self, Read, Write};

use ferry_core::md5::{ETag, Md5Digest, MultipartETag};
use ferry_core::pool::PooledBuf;
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};
use ferry_core::time::DateTime;
use redb::{ReadableTable, WriteTransaction};

use super::codec::{
    self, CompletedRecord, DataLayout, ObjectRecord, PartLoc, PartRecord, UploadRecord,
};
use super::fence::check_unfenced;
use super::files::{FileId, Spool};
use super::object::put_record;
use super::types::{
    CompletedPart, CopySource, ObjectInfo, ObjectMeta, PartEntry, PartsPage, PutResult,
    WriteConditions,
};
use super::{
    BUCKETS, COMPLETED, COMPLETED_TTL_SECS, MAX_LIST, MAX_PARTS, PARTS, Store, UPLOADS,
    bucket_exists, check_bucket_name, check_key, db_err, now, object_key,
};

/// An UploadPart in progress: like [`ObjectWriter`](super::ObjectWriter), for one part.
#[derive(Debug)]
pub struct PartWriter {
    store: Store,
    bucket: String,
    object_key: Vec<u8>,
    upload_id: String,
    part_number: u32,
    spool: Spool,
}

impl PartWriter {
    /// Append a chunk of the part.
    /// A full disk is `InsufficientStorage`.
    pub fn write(&mut self, data: &[u8]) -> S3Result<()> {
        let inner = &self.store.inner;
        self.spool.write(data).map_err(|e| inner.io_failed(e))
    }

    /// Append `buf[..len]`, handing the pooled buffer itself on (it is written, hashed and
    /// goes back to the pool; nothing is copied). A full disk is `InsufficientStorage`.
    pub fn write_buf(&mut self, buf: PooledBuf<'static>, len: usize) -> S3Result<()> {
        let inner = &self.store.inner;
        self.spool
            .write_buf(buf, len)
            .map_err(|e| inner.io_failed(e))
    }

    /// Append everything `r` yields until its end; returns the bytes read.
    pub fn write_from(&mut self, r: &mut dyn Read) -> S3Result<u64> {
        let inner = &self.store.inner;
        self.spool.write_from(r).map_err(|e| inner.io_failed(e))
    }

    /// Bytes written so far.
    pub fn len(&self) -> u64 {
        self.spool.len()
    }

    /// Whether nothing was written yet.
    pub fn is_empty(&self) -> bool {
        self.spool.len() == 0
    }

    /// MD5 of the bytes written.
    ///
    /// Ends the writing (no write may follow); an I/O error meanwhile is reported by `commit`.
    pub fn digest(&mut self) -> Md5Digest {
        self.spool.digest()
    }

    /// Make the part durable and record it, replacing an earlier upload of the same part number.
    /// `NoSuchUpload` if the upload was completed or aborted meanwhile, `OperationAborted` while
    /// a fence holds the bucket.
    pub fn commit(self) -> S3Result<PartEntry> {
        let PartWriter {
            store,
            bucket,
            object_key,
            upload_id,
            part_number,
            spool,
        } = self;
        let staged = spool.finish().map_err(|e| store.inner.io_failed(e))?;
        let rec = PartRecord {
            file: staged.id,
            size: staged.size,
            md5: staged.md5,
            last_modified: now(),
        };
        let bytes = codec::encode(&rec)?;
        let old = store.update_grouped(Some(staged), move |txn| {
            let uploads = txn.open_table(UPLOADS).map_err(db_err)?;
            if uploads
                .get((object_key.as_slice(), upload_id.as_str()))
                .map_err(db_err)?
                .is_none()
            {
                return Err(S3Error::new(S3ErrorCode::NoSuchUpload));
            }
            check_unfenced(txn, &bucket)?;
            let mut parts = txn.open_table(PARTS).map_err(db_err)?;
            let old = match parts
                .insert((upload_id.as_str(), part_number), bytes.as_slice())
                .map_err(db_err)?
            {
                Some(v) => vec![codec::decode::<PartRecord>(v.value())?.file],
                None => Vec::new(),
            };
            Ok(old)
        })?;
        store.inner.retire(&old);
        Ok(PartEntry {
            part_number,
            etag: ETag::single(&rec.md5),
            size: rec.size,
            last_modified: DateTime::from_unix(rec.last_modified),
        })
    }
}

impl Write for PartWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.spool.write(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn check_part_number(n: u32) -> S3Result<()> {
    if n == 0 || n > MAX_PARTS {
        return Err(S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            "Part number must be an integer between 1 and 10000, inclusive",
        ));
    }
    Ok(())
}

/// A fresh upload id: creation time in nanoseconds, then 64 random bits, in hex, so that ids of
/// one key sort by initiation as ListMultipartUploads wants.
fn new_upload_id() -> S3Result<String> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let random = getrandom::u64()
        .map_err(|e| S3Error::with_message(S3ErrorCode::InternalError, e.to_string()))?;
    Ok(format!("{nanos:016x}{random:016x}"))
}

/// Remove every part of `upload_id` in `txn`, returning them by part number.
fn take_parts(txn: &WriteTransaction, upload_id: &str) -> S3Result<Vec<(u32, PartRecord)>> {
    let mut parts = txn.open_table(PARTS).map_err(db_err)?;
    let mut out = Vec::new();
    for item in parts
        .range::<(&str, u32)>((upload_id, 0)..=(upload_id, u32::MAX))
        .map_err(db_err)?
    {
        let (k, v) = item.map_err(db_err)?;
        out.push((k.value().1, codec::decode::<PartRecord>(v.value())?));
    }
    parts
        .retain_in::<(&str, u32), _>((upload_id, 0)..=(upload_id, u32::MAX), |_, _| false)
        .map_err(db_err)?;
    Ok(out)
}

impl Store {
    /// CreateMultipartUpload: start an upload of `bucket`/`key` whose object will get `meta`.
    /// Returns the upload id.
    pub fn create_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        meta: ObjectMeta,
    ) -> S3Result<String> {
        check_bucket_name(bucket)?;
        check_key(key)?;
        let upload_id = new_upload_id()?;
        let rec = codec::encode(&UploadRecord {
            initiated: now(),
            meta,
        })?;
        let k = object_key(bucket, key)?;
        self.update(None, |txn| {
            if !bucket_exists(&txn.open_table(BUCKETS).map_err(db_err)?, bucket)? {
                return Err(S3Error::new(S3ErrorCode::NoSuchBucket));
            }
            check_unfenced(txn, bucket)?;
            let mut uploads = txn.open_table(UPLOADS).map_err(db_err)?;
            uploads
                .insert((k.as_slice(), upload_id.as_str()), rec.as_slice())
                .map_err(db_err)?;
            Ok(())
        })?;
        Ok(upload_id)
    }

    /// `NoSuchUpload` (or `NoSuchBucket`) unless `upload_id` is in progress for `bucket`/`key`.
    fn check_upload(&self, bucket: &str, key: &str, upload_id: &str) -> S3Result<()> {
        let txn = self.read_txn()?;
        let uploads = txn.open_table(UPLOADS).map_err(db_err)?;
        let k = object_key(bucket, key)?;
        if uploads
            .get((k.as_slice(), upload_id))
            .map_err(db_err)?
            .is_some()
        {
            return Ok(());
        }
        if bucket_exists(&txn.open_table(BUCKETS).map_err(db_err)?, bucket)? {
            Err(S3Error::new(S3ErrorCode::NoSuchUpload))
        } else {
            Err(S3Error::new(S3ErrorCode::NoSuchBucket))
        }
    }

    /// UploadPart: start writing part `part_number` (1..=10000) of `upload_id`.
    pub fn part_writer(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part_number: u32,
    ) -> S3Result<PartWriter> {
        check_part_number(part_number)?;
        self.check_upload(bucket, key, upload_id)?;
        self.check_bucket_writable(bucket)?;
        self.check_room()?;
        Ok(PartWriter {
            store: self.clone(),
            bucket: bucket.to_owned(),
            object_key: object_key(bucket, key)?,
            upload_id: upload_id.to_owned(),
            part_number,
            spool: Spool::create(&self.inner).map_err(|e| self.inner.io_failed(e))?,
        })
    }

    /// UploadPartCopy: part `part_number` of `upload_id` is `range` (inclusive; all if `None`)
    /// of `src`. `check_source` sees the source's metadata first (copy-source conditions); a
    /// range outside the source is `InvalidArgument`.
    pub fn upload_part_copy(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part_number: u32,
        src: CopySource<'_>,
        check_source: impl FnOnce(&ObjectInfo) -> S3Result<()>,
    ) -> S3Result<PartEntry> {
        let mut writer = self.part_writer(bucket, key, upload_id, part_number)?;
        let mut reader = self.copy_reader(src, check_source)?;
        let want = reader.remaining();
        let n = writer.write_from(&mut reader)?;
        if n != want {
            return Err(S3Error::with_message(
                S3ErrorCode::InternalError,
                "copy source ended early",
            ));
        }
        drop(reader);
        writer.commit()
    }

    /// ListParts: parts of `upload_id` after `part_number_marker`, at most `max_parts` (clamped
    /// to 1000; 0 returns an empty page).
    pub fn list_parts(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part_number_marker: u32,
        max_parts: usize,
    ) -> S3Result<PartsPage> {
        let max = max_parts.min(MAX_LIST);
        let txn = self.read_txn()?;
        let k = object_key(bucket, key)?;
        if txn
            .open_table(UPLOADS)
            .map_err(db_err)?
            .get((k.as_slice(), upload_id))
            .map_err(db_err)?
            .is_none()
        {
            drop(txn);
            return self
                .check_upload(bucket, key, upload_id)
                .map(|()| PartsPage::default());
        }
        let mut page = PartsPage::default();
        let Some(first) = part_number_marker.checked_add(1) else {
            return Ok(page);
        };
        if max == 0 {
            return Ok(page);
        }
        let parts = txn.open_table(PARTS).map_err(db_err)?;
        for item in parts
            .range::<(&str, u32)>((upload_id, first)..=(upload_id, u32::MAX))
            .map_err(db_err)?
        {
            let (k, v) = item.map_err(db_err)?;
            if page.parts.len() == max {
                page.is_truncated = true;
                page.next_part_number_marker = page.parts.last().map(|p| p.part_number);
                break;
            }
            let rec: PartRecord = codec::decode(v.value())?;
            page.parts.push(PartEntry {
                part_number: k.value().1,
                etag: ETag::single(&rec.md5),
                size: rec.size,
                last_modified: DateTime::from_unix(rec.last_modified),
            });
        }
        Ok(page)
    }

    /// AbortMultipartUpload: forget `upload_id` and delete its parts.
    pub fn abort_multipart_upload(&self, bucket: &str, key: &str, upload_id: &str) -> S3Result<()> {
        let k = object_key(bucket, key)?;
        let files = self.update(None, |txn| {
            let mut uploads = txn.open_table(UPLOADS).map_err(db_err)?;
            if uploads
                .remove((k.as_slice(), upload_id))
                .map_err(db_err)?
                .is_none()
            {
                return Err(S3Error::new(S3ErrorCode::NoSuchUpload));
            }
            Ok(take_parts(txn, upload_id)?
                .into_iter()
                .map(|(_, p)| p.file)
                .collect::<Vec<_>>())
        })?;
        self.inner.retire(&files);
        Ok(())
    }

    /// CompleteMultipartUpload: the object `bucket`/`key` becomes `parts` of `upload_id`, in order.
    ///
    /// Errors as S3: `MalformedXML` for no parts, `InvalidPartOrder` unless part numbers ascend,
    /// `InvalidPart` if a part is missing or its ETag differs, `EntityTooSmall` if a part but the
    /// last is under [`StoreConfig::min_part_size`](super::StoreConfig::min_part_size),
    /// `NoSuchUpload`, and `conditions` as for a PUT. Parts not named are deleted.
    pub fn complete_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        parts: &[CompletedPart],
        conditions: WriteConditions,
    ) -> S3Result<PutResult> {
        if parts.is_empty() {
            return Err(S3Error::with_message(
                S3ErrorCode::MalformedXML,
                "You must specify at least one part",
            ));
        }
        if parts
            .windows(2)
            .any(|w| w[0].part_number >= w[1].part_number)
        {
            return Err(S3Error::new(S3ErrorCode::InvalidPartOrder));
        }
        let min = self.inner.config.min_part_size;
        let last_modified = now();
        let k = object_key(bucket, key)?;
        let (bucket, key, upload_id) = (bucket.to_owned(), key.to_owned(), upload_id.to_owned());
        let parts = parts.to_vec();
        let store = self.clone();
        let (result, retired, replaced) = self.update_grouped(None, move |txn| {
            let (bucket, key, upload_id) = (bucket.as_str(), key.as_str(), upload_id.as_str());
            let up: UploadRecord = {
                let mut uploads = txn.open_table(UPLOADS).map_err(db_err)?;
                let removed = uploads.remove((k.as_slice(), upload_id)).map_err(db_err)?;
                match removed {
                    Some(v) => codec::decode(v.value())?,
                    None => {
                        // Completed already, with these parts: the same answer again, and
                        // nothing changes.
                        let done = completed_before(txn, upload_id, &k, &parts, last_modified)?;
                        return done
                            .map(|r| (r, None, None))
                            .ok_or_else(|| S3Error::new(S3ErrorCode::NoSuchUpload));
                    }
                }
            };
            let stored = take_parts(txn, upload_id)?;
            let mut locs = Vec::with_capacity(parts.len());
            let mut etag = MultipartETag::new();
            let mut size = 0u64;
            let mut j = 0;
            for (i, want) in parts.iter().enumerate() {
                // Both lists ascend: one merge pass.
                while stored.get(j).is_some_and(|(n, _)| *n < want.part_number) {
                    j += 1;
                }
                let rec = match stored.get(j) {
                    Some((n, rec))
                        if *n == want.part_number && ETag::single(&rec.md5) == want.etag =>
                    {
                        rec
                    }
                    _ => {
                        return Err(S3Error::with_message(
                            S3ErrorCode::InvalidPart,
                            format!(
                                "Part {} could not be found or its ETag does not match",
                                want.part_number
                            ),
                        ));
                    }
                };
                if i + 1 < parts.len() && rec.size < min {
                    return Err(S3Error::with_message(
                        S3ErrorCode::EntityTooSmall,
                        format!(
                            "Part {} is smaller than the minimum of {min} bytes",
                            want.part_number
                        ),
                    ));
                }
                etag.push_part(&rec.md5);
                locs.push(PartLoc {
                    file: rec.file,
                    size: rec.size,
                });
                size = size
                    .checked_add(rec.size)
                    .ok_or_else(|| S3Error::new(S3ErrorCode::EntityTooLarge))?;
            }
            let used: HashSet<FileId> = locs.iter().map(|l| l.file).collect();
            let mut retired: Vec<FileId> = stored
                .iter()
                .map(|(_, p)| p.file)
                .filter(|f| !used.contains(f))
                .collect();
            let etag = etag.finish();
            let rec = ObjectRecord {
                size,
                etag: etag.as_str().to_owned(),
                last_modified,
                meta: up.meta,
                data: DataLayout::Parts(locs),
                version: None,
            };
            let bytes = codec::encode(&rec)?;
            let replaced = put_record(&store, txn, bucket, key, &rec, &bytes, conditions)?;
            retired.extend(replaced.files);
            remember_completed(
                txn,
                upload_id,
                &k,
                &parts,
                etag.as_str(),
                size,
                last_modified,
            )?;
            let result = PutResult {
                etag,
                size,
                last_modified: DateTime::from_unix(last_modified),
                version_id: replaced.version_id,
            };
            Ok((result, Some(retired), replaced.size))
        })?;
        // `None`: a retry of a completed upload, which changed nothing.
        if let Some(retired) = retired {
            self.inner.counters.put(result.size, replaced);
            self.inner.retire(&retired);
        }
        Ok(result)
    }
}

/// Most expired completed-upload records one complete removes (the oldest first).
const COMPLETED_SWEEP: usize = 16;

/// Remember that `upload_id` completed `object_key` with `parts`, and forget a few completions
/// older than [`COMPLETED_TTL_SECS`] (upload ids sort by creation, so the oldest come first).
fn remember_completed(
    txn: &WriteTransaction,
    upload_id: &str,
    object_key: &[u8],
    parts: &[CompletedPart],
    etag: &str,
    size: u64,
    now: i64,
) -> S3Result<()> {
    let mut table = txn.open_table(COMPLETED).map_err(db_err)?;
    let mut expired = Vec::new();
    for item in table.iter().map_err(db_err)?.take(COMPLETED_SWEEP) {
        let (id, v) = item.map_err(db_err)?;
        let rec: CompletedRecord = codec::decode(v.value())?;
        if now - rec.completed > COMPLETED_TTL_SECS {
            expired.push(id.value().to_owned());
        }
    }
    for id in expired {
        table.remove(id.as_str()).map_err(db_err)?;
    }
    let rec = CompletedRecord {
        object_key: object_key.to_vec(),
        parts: parts
            .iter()
            .map(|p| (p.part_number, p.etag.as_str().to_owned()))
            .collect(),
        etag: etag.to_owned(),
        size,
        completed: now,
    };
    table
        .insert(upload_id, codec::encode(&rec)?.as_slice())
        .map_err(db_err)?;
    Ok(())
}

/// The answer `upload_id` got when it completed `object_key` with the same `parts`, if it did
/// within [`COMPLETED_TTL_SECS`].
fn completed_before(
    txn: &WriteTransaction,
    upload_id: &str,
    object_key: &[u8],
    parts: &[CompletedPart],
    now: i64,
) -> S3Result<Option<PutResult>> {
    let table = txn.open_table(COMPLETED).map_err(db_err)?;
    let Some(v) = table.get(upload_id).map_err(db_err)? else {
        return Ok(None);
    };
    let rec: CompletedRecord = codec::decode(v.value())?;
    let same_parts = rec.parts.len() == parts.len()
        && rec
            .parts
            .iter()
            .zip(parts)
            .all(|((n, e), p)| *n == p.part_number && e == p.etag.as_str());
    if rec.object_key != object_key || !same_parts || now - rec.completed > COMPLETED_TTL_SECS {
        return Ok(None);
    }
    Ok(Some(PutResult {
        etag: codec::stored_etag(&rec.etag)?,
        size: rec.size,
        last_modified: DateTime::from_unix(rec.completed),
        // Not remembered: a retried complete answers without it.
        version_id: None,
    }))
}
