//! Multipart uploads: create, upload part (and part copy), list parts and uploads, abort,
//! complete. Completing copies no data: the object's record lists its part files in order.

use std::collections::HashSet;
use std::io::{self, Read, Write};

use ferry_core::md5::{ETag, Md5Digest, MultipartETag};
use ferry_core::pool::PooledBuf;
use ferry_core::s3::checksum::{self, ChecksumAlgorithm, Checksummer};
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};
use ferry_core::time::DateTime;
use redb::{ReadableTable, WriteTransaction};

use super::codec::{
    self, CompletedRecord, DataLayout, ObjectRecord, PartLoc, PartRecord, UploadRecord,
};
use super::fence::check_unfenced;
use super::files::{FileId, Spool};
use super::object::{HashingReader, put_record};
use super::sse::{self, EncryptWith, EncryptionInfo};
use super::types::{
    Checksum, CompleteOptions, CompleteResult, CompletedPart, CopySource, MultipartChecksum,
    ObjectInfo, ObjectMeta, PartEntry, PartOf, PartsPage, PutResult,
};
use super::{
    BUCKETS, COMPLETED, COMPLETED_TTL_SECS, ENCRYPTED_LAYOUT, MAX_LIST, MAX_PARTS, PARTS, Store,
    UPLOADS, bucket_exists, check_bucket_name, check_key, db_err, now, object_key, raise_layout,
    require_bucket,
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
    /// The upload's checksum algorithm and type, if it has one.
    upload_checksum: Option<MultipartChecksum>,
    /// The part's checksum, to store with it.
    checksum: Option<Checksum>,
    /// Encrypting: the upload's encryption, and the part's seed and key.
    crypt: Option<PartCrypt>,
}

/// A part of an encrypted upload: its upload's encryption, and its own seed and key.
struct PartCrypt {
    upload: sse::Encryption,
    seed: [u8; 32],
    key: [u8; 32],
}

impl std::fmt::Debug for PartCrypt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartCrypt")
            .field("upload", &self.upload.info())
            .finish_non_exhaustive()
    }
}

impl PartWriter {
    /// How the part is encrypted (its upload's encryption), for the response's headers.
    pub fn encryption(&self) -> Option<EncryptionInfo> {
        self.crypt.as_ref().map(|c| c.upload.info())
    }

    /// The checksum algorithm and type of the part's upload, if it has one: the part must
    /// carry (or be given) a checksum of that algorithm.
    pub fn upload_checksum(&self) -> Option<&MultipartChecksum> {
        self.upload_checksum.as_ref()
    }

    /// The part's checksum, verified by the caller, stored with the part if its upload has a
    /// checksum algorithm (and then of that algorithm).
    pub fn set_checksum(&mut self, checksum: Checksum) {
        self.checksum = Some(checksum);
    }

    /// Append a chunk of the part.
    /// A full disk is `InsufficientStorage`.
    pub fn write(&mut self, data: &[u8]) -> S3Result<()> {
        let inner = &self.store.inner;
        self.spool.write(data).map_err(|e| inner.io_failed(e))
    }

    /// The temp file being written, for streamed bodies' writes through the ring.
    pub(crate) fn spool(&mut self) -> &mut Spool {
        &mut self.spool
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
            upload_checksum,
            checksum,
            crypt,
        } = self;
        let checksum = match (&upload_checksum, checksum) {
            (Some(spec), Some(c)) if c.algorithm.eq_ignore_ascii_case(&spec.algorithm) => Some(c),
            (Some(spec), _) => {
                return Err(S3Error::with_message(
                    S3ErrorCode::InvalidRequest,
                    format!(
                        "The upload was created using a {} checksum: the part needs one",
                        spec.algorithm.to_ascii_lowercase()
                    ),
                ));
            }
            (None, _) => None,
        };
        let staged = spool.finish().map_err(|e| store.inner.io_failed(e))?;
        let md5 = match &crypt {
            Some(c) => sse::etag_digest(&c.upload, &c.key, &staged.md5),
            None => staged.md5,
        };
        let rec = PartRecord {
            file: staged.id,
            size: staged.size,
            md5,
            last_modified: now(),
            checksum,
            seed: crypt.map(|c| c.seed),
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
            checksum: rec.checksum,
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
    /// CreateMultipartUpload: start an upload of `bucket`/`key` whose object will get `meta`,
    /// encrypted as `with` says if given: each part is encrypted on its own, with a key derived
    /// from the upload's data key and a random seed of the part's (an SSE-C upload's parts need
    /// the upload's key). Returns the upload id.
    pub fn create_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        meta: ObjectMeta,
        with: Option<&EncryptWith>,
    ) -> S3Result<String> {
        check_bucket_name(bucket)?;
        check_key(key)?;
        let upload_id = new_upload_id()?;
        let encryption = match with {
            Some(w) => Some(sse::Encryption::new(w, &*self.inner)?.0),
            None => None,
        };
        let encrypted = encryption.is_some();
        let rec = codec::encode(&UploadRecord {
            initiated: now(),
            meta,
            encryption,
        })?;
        let k = object_key(bucket, key)?;
        self.update(None, |txn| {
            require_bucket(&txn.open_table(BUCKETS).map_err(db_err)?, bucket)?;
            check_unfenced(txn, bucket)?;
            if encrypted {
                raise_layout(txn, ENCRYPTED_LAYOUT)?;
            }
            let mut uploads = txn.open_table(UPLOADS).map_err(db_err)?;
            uploads
                .insert((k.as_slice(), upload_id.as_str()), rec.as_slice())
                .map_err(db_err)?;
            Ok(())
        })?;
        Ok(upload_id)
    }

    /// `NoSuchUpload` (or `NoSuchBucket`) unless `upload_id` is in progress for `bucket`/`key`.
    pub(crate) fn check_upload(&self, bucket: &str, key: &str, upload_id: &str) -> S3Result<()> {
        self.upload_record(bucket, key, upload_id).map(|_| ())
    }

    /// The record of `upload_id`, in progress for `bucket`/`key`; errors as [`Self::check_upload`].
    fn upload_record(&self, bucket: &str, key: &str, upload_id: &str) -> S3Result<UploadRecord> {
        let txn = self.read_txn()?;
        let uploads = txn.open_table(UPLOADS).map_err(db_err)?;
        let k = object_key(bucket, key)?;
        if let Some(v) = uploads.get((k.as_slice(), upload_id)).map_err(db_err)? {
            return codec::decode(v.value());
        }
        if bucket_exists(&txn.open_table(BUCKETS).map_err(db_err)?, bucket)? {
            Err(S3Error::new(S3ErrorCode::NoSuchUpload))
        } else {
            Err(S3Error::new(S3ErrorCode::NoSuchBucket))
        }
    }

    /// UploadPart: start writing `part` (its number 1..=10000) of its upload, with the SSE-C
    /// key it came with (if any): a part of an encrypted upload is encrypted with a key of its
    /// own; an SSE-C upload's part needs the upload's key (errors as a GET's, `Store::data_key`).
    pub fn part_writer(&self, bucket: &str, key: &str, part: PartOf<'_>) -> S3Result<PartWriter> {
        let PartOf {
            upload_id,
            part_number,
            customer,
        } = part;
        check_part_number(part_number)?;
        let upload = self.upload_record(bucket, key, upload_id)?;
        self.check_bucket_writable(bucket)?;
        self.check_room()?;
        let crypt = match (upload.encryption, customer) {
            (None, None) => None,
            (None, Some(_)) => return Err(sse::not_sse_c()),
            (Some(enc), customer) => {
                let data_key = enc.data_key(customer, &*self.inner)?;
                let (seed, key) = sse::new_part_key(&data_key)?;
                Some(PartCrypt {
                    upload: enc,
                    seed,
                    key,
                })
            }
        };
        let mut spool = Spool::create(&self.inner).map_err(|e| self.inner.io_failed(e))?;
        if let Some(c) = &crypt {
            spool.encrypt(&c.key);
        }
        Ok(PartWriter {
            store: self.clone(),
            bucket: bucket.to_owned(),
            object_key: object_key(bucket, key)?,
            upload_id: upload_id.to_owned(),
            part_number,
            spool,
            upload_checksum: upload.meta.multipart_checksum,
            checksum: None,
            crypt,
        })
    }

    /// UploadPartCopy: `part` of its upload is `range` (inclusive; all if `None`) of `src`.
    /// `check_source` sees the source's metadata first (copy-source conditions); a range
    /// outside the source is `InvalidArgument`. The part's SSE-C key (`customer`; the source's
    /// is in `src`) is as for [`Store::part_writer`]; also returned: how the part is encrypted.
    pub fn upload_part_copy(
        &self,
        bucket: &str,
        key: &str,
        part: PartOf<'_>,
        src: CopySource<'_>,
        check_source: impl FnOnce(&ObjectInfo) -> S3Result<()>,
    ) -> S3Result<(PartEntry, Option<EncryptionInfo>)> {
        let mut writer = self.part_writer(bucket, key, part)?;
        let encryption = writer.encryption();
        let mut reader = self.copy_reader(src, check_source)?;
        let want = reader.remaining();
        // An upload with a checksum algorithm gets the copied part's checksum computed here.
        let algorithm = writer
            .upload_checksum()
            .and_then(|c| ChecksumAlgorithm::parse(&c.algorithm));
        let mut hashing = HashingReader {
            inner: &mut reader,
            hasher: algorithm.map(Checksummer::new),
        };
        let n = writer.write_from(&mut hashing)?;
        if n != want {
            return Err(S3Error::with_message(
                S3ErrorCode::InternalError,
                "copy source ended early",
            ));
        }
        if let Some(h) = hashing.hasher.take() {
            let sum = h.finalize();
            writer.set_checksum(Checksum {
                algorithm: sum.algorithm().as_str().to_owned(),
                value: sum.to_base64().as_str().to_owned(),
            });
        }
        drop(reader);
        Ok((writer.commit()?, encryption))
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
        let upload: UploadRecord = match txn
            .open_table(UPLOADS)
            .map_err(db_err)?
            .get((k.as_slice(), upload_id))
            .map_err(db_err)?
        {
            Some(v) => codec::decode(v.value())?,
            None => {
                drop(txn);
                return self
                    .check_upload(bucket, key, upload_id)
                    .map(|()| PartsPage::default());
            }
        };
        let mut page = PartsPage {
            checksum: upload.meta.multipart_checksum,
            ..PartsPage::default()
        };
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
                checksum: rec.checksum,
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
    /// `NoSuchUpload`, and `opts.conditions` as for a PUT. Parts not named are deleted.
    ///
    /// An upload that has a checksum algorithm has its checksums checked: each part's checksum
    /// given in `parts` must be the stored one (`InvalidPart`; for a `COMPOSITE` upload every
    /// part must give one, `InvalidRequest`; part numbers must then run 1, 2, 3...,
    /// `InvalidPartOrder`), and the object gets its checksum, composite or full-object (the
    /// parts' CRCs combined, no data read). `opts.expected`, the object checksum the request
    /// gives (`x-amz-checksum-*`), must match it (`BadDigest`), and its type
    /// (`x-amz-checksum-type`) the upload's (`InvalidRequest`). An SSE-C key given
    /// (`opts.customer`) must be the upload's (checked as a GET's).
    pub fn complete_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        parts: &[CompletedPart],
        opts: CompleteOptions,
    ) -> S3Result<CompleteResult> {
        let CompleteOptions {
            conditions,
            expected,
            customer,
        } = opts;
        check_part_list(parts)?;
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
                            .map(|put| {
                                let r = CompleteResult {
                                    put,
                                    checksum: None,
                                    full_object: false,
                                    encryption: None,
                                };
                                (r, None, None)
                            })
                            .ok_or_else(|| S3Error::new(S3ErrorCode::NoSuchUpload));
                    }
                }
            };
            if let Some(c) = &customer {
                match &up.encryption {
                    Some(enc) => {
                        enc.data_key(Some(c), &*store.inner)?;
                    }
                    None => return Err(sse::not_sse_c()),
                }
            }
            let stored = take_parts(txn, upload_id)?;
            let mut sums =
                PartChecksums::new(up.meta.multipart_checksum.as_ref(), expected.full_object)?;
            let encrypted = up.encryption.is_some();
            let Matched {
                seeds,
                locs,
                etag,
                size,
            } = match_parts(&parts, &stored, min, encrypted, &mut sums)?;
            let used: HashSet<FileId> = locs.iter().map(|l| l.file).collect();
            let mut retired: Vec<FileId> = stored
                .iter()
                .map(|(_, p)| p.file)
                .filter(|f| !used.contains(f))
                .collect();
            let etag = etag.finish();
            let encryption = up.encryption.map(|mut e| {
                e.parts = seeds;
                e
            });
            let mut meta = up.meta;
            let object_checksum = sums.finish(&mut meta, expected.checksum.as_ref())?;
            let rec = ObjectRecord {
                size,
                etag: etag.as_str().to_owned(),
                last_modified,
                meta,
                data: DataLayout::Parts(locs),
                version: None,
                encryption,
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
            let result = CompleteResult {
                put: PutResult {
                    etag,
                    size,
                    last_modified: DateTime::from_unix(last_modified),
                    version_id: replaced.version_id,
                    checksum: None,
                    tags: rec.meta.tags.clone(),
                },
                checksum: object_checksum,
                full_object: rec
                    .meta
                    .multipart_checksum
                    .as_ref()
                    .is_some_and(|c| c.full_object),
                encryption: rec.encryption.as_ref().map(sse::Encryption::info),
            };
            Ok((result, Some(retired), replaced.size))
        })?;
        // `None`: a retry of a completed upload, which changed nothing.
        if let Some(retired) = retired {
            self.inner.counters.put(result.put.size, replaced);
            self.inner.retire(&retired);
        }
        Ok(result)
    }
}

/// CompleteMultipartUpload's list of parts: at least one (`MalformedXML`), part numbers
/// ascending (`InvalidPartOrder`).
fn check_part_list(parts: &[CompletedPart]) -> S3Result<()> {
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
    Ok(())
}

/// The parts of a completing upload, matched against those stored.
struct Matched {
    /// Each part's seed, when the upload is encrypted.
    seeds: Vec<[u8; 32]>,
    /// Where each part's data is.
    locs: Vec<PartLoc>,
    /// The parts' MD5s, for the object's ETag.
    etag: MultipartETag,
    /// The object's size.
    size: u64,
}

/// Match `parts` (the request's, ascending) against `stored` (ascending): each must be stored
/// with its ETag (`InvalidPart`) and, but the last, be at least `min` bytes (`EntityTooSmall`);
/// its checksum goes to `sums`, and its seed with it when the upload is `encrypted`.
fn match_parts(
    parts: &[CompletedPart],
    stored: &[(u32, PartRecord)],
    min: u64,
    encrypted: bool,
    sums: &mut PartChecksums,
) -> S3Result<Matched> {
    let mut seeds = Vec::new();
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
            Some((n, rec)) if *n == want.part_number && ETag::single(&rec.md5) == want.etag => rec,
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
        sums.push(i, want, rec)?;
        if encrypted {
            seeds.push(rec.seed.ok_or_else(|| {
                S3Error::with_message(
                    S3ErrorCode::InternalError,
                    "a part of an encrypted upload has no key",
                )
            })?);
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
    Ok(Matched {
        seeds,
        locs,
        etag,
        size,
    })
}

/// The checksums of a completing upload that has an algorithm: each part's checked against
/// the request, and the object's made from them.
struct PartChecksums {
    /// The upload's algorithm and whether it is full-object; `None` without one.
    spec: Option<(ChecksumAlgorithm, bool)>,
    /// Each part's number, size and checksum, in order.
    parts: Vec<(u32, u64, checksum::Checksum)>,
}

impl PartChecksums {
    /// The checks of an upload with `spec`, completed by a request that names the type
    /// `full_object` (`x-amz-checksum-type`), which must be the upload's.
    fn new(spec: Option<&MultipartChecksum>, full_object: Option<bool>) -> S3Result<Self> {
        if let Some(want) = full_object
            && spec.map(|c| c.full_object) != Some(want)
        {
            let mode = |full: Option<bool>| match full {
                Some(true) => "FULL_OBJECT",
                Some(false) => "COMPOSITE",
                None => "no",
            };
            return Err(S3Error::with_message(
                S3ErrorCode::InvalidRequest,
                format!(
                    "The upload was created using the {} checksum mode. The complete request \
                     must use the same checksum mode.",
                    mode(spec.map(|c| c.full_object))
                ),
            ));
        }
        let spec = match spec {
            None => None,
            Some(c) => {
                let algorithm = ChecksumAlgorithm::parse(&c.algorithm).ok_or_else(|| {
                    S3Error::with_message(S3ErrorCode::InternalError, "stored checksum algorithm")
                })?;
                Some((algorithm, c.full_object))
            }
        };
        Ok(Self {
            spec,
            parts: Vec::new(),
        })
    }

    /// Check part `index` of the request (`want`) against its record.
    fn push(&mut self, index: usize, want: &CompletedPart, rec: &PartRecord) -> S3Result<()> {
        let Some((algorithm, full_object)) = self.spec else {
            return Ok(());
        };
        let n = want.part_number;
        if usize::try_from(n).ok() != Some(index + 1) {
            return Err(S3Error::with_message(
                S3ErrorCode::InvalidPartOrder,
                "Parts of an upload with a checksum algorithm must be numbered 1, 2, 3 ... in order",
            ));
        }
        let stored = rec
            .checksum
            .as_ref()
            .and_then(|c| checksum::Checksum::from_base64(algorithm, &c.value))
            .ok_or_else(|| {
                S3Error::with_message(
                    S3ErrorCode::InvalidPart,
                    format!("Part {n} has no {algorithm} checksum"),
                )
            })?;
        let mut given = None;
        for c in &want.checksums {
            if !c.algorithm.eq_ignore_ascii_case(algorithm.as_str()) {
                return Err(S3Error::with_message(
                    S3ErrorCode::InvalidRequest,
                    format!(
                        "The upload was created using a {} checksum. The complete request must \
                         not include a {} checksum for part {n}.",
                        algorithm.lower_name(),
                        c.algorithm.to_ascii_lowercase()
                    ),
                ));
            }
            given = Some(c);
        }
        match given {
            Some(c) if c.value.trim() != stored.to_base64().as_str() => {
                return Err(S3Error::with_message(
                    S3ErrorCode::InvalidPart,
                    format!(
                        "One or more of the specified parts could not be found. The part may not \
                         have been uploaded, or the specified entity tag may not match the part's \
                         entity tag. (The {} checksum of part {n} does not match.)",
                        algorithm.lower_name()
                    ),
                ));
            }
            None if !full_object => {
                return Err(S3Error::with_message(
                    S3ErrorCode::InvalidRequest,
                    format!(
                        "The upload was created using a {} checksum. The complete request must \
                         include the checksum for each part. It was missing for part {n} in the \
                         request.",
                        algorithm.lower_name()
                    ),
                ));
            }
            _ => {}
        }
        self.parts.push((n, rec.size, stored));
        Ok(())
    }

    /// The object's checksum, put in `meta` (with the parts'), checked against `expected`.
    fn finish(
        self,
        meta: &mut ObjectMeta,
        expected: Option<&Checksum>,
    ) -> S3Result<Option<Checksum>> {
        let Some((algorithm, full_object)) = self.spec else {
            return Ok(None);
        };
        let value = if full_object {
            let mut acc: Option<checksum::Checksum> = None;
            for (_, size, sum) in &self.parts {
                acc = Some(match acc {
                    None => *sum,
                    Some(prev) => checksum::crc_combine(&prev, sum, *size).ok_or_else(|| {
                        S3Error::with_message(
                            S3ErrorCode::InternalError,
                            "a full-object checksum needs a CRC",
                        )
                    })?,
                });
            }
            acc.unwrap_or_else(|| algorithm.checksum(b""))
                .to_base64()
                .as_str()
                .to_owned()
        } else {
            let sum = checksum::composite(algorithm, self.parts.iter().map(|(_, _, c)| c));
            format!("{}-{}", sum.to_base64(), self.parts.len())
        };
        if let Some(want) = expected
            && (!want.algorithm.eq_ignore_ascii_case(algorithm.as_str()) || want.value != value)
        {
            return Err(S3Error::with_message(
                S3ErrorCode::BadDigest,
                format!(
                    "The {} you specified did not match the calculated checksum.",
                    algorithm.header_name()
                ),
            ));
        }
        let object = Checksum {
            algorithm: algorithm.as_str().to_owned(),
            value,
        };
        meta.checksums = vec![object.clone()];
        meta.multipart_checksum = Some(MultipartChecksum {
            algorithm: algorithm.as_str().to_owned(),
            full_object,
            parts: self
                .parts
                .iter()
                .map(|(n, _, c)| (*n, c.to_base64().as_str().to_owned()))
                .collect(),
        });
        Ok(Some(object))
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
        // Not remembered: a retried complete answers without them.
        version_id: None,
        checksum: None,
        tags: Vec::new(),
    }))
}
