//! Objects: streaming writes, snapshot reads, delete, server-side copy.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::FileExt as _;
use std::sync::atomic::{AtomicBool, Ordering};

use ferry_core::md5::{ETag, Md5Digest};
use ferry_core::pool::PooledBuf;
use ferry_core::s3::checksum::Checksummer;
use ferry_core::s3::xml::lock::{self, Retention};
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};
use ferry_core::time::DateTime;
use redb::{ReadableTable as _, WriteTransaction};

use super::codec::{self, DataLayout, ObjectRecord, stored_etag};
use super::fence::check_unfenced;
use super::files::{self, FileId, PinGuard, Pins, Spool};
use super::sse::{self, CustomerKey, EncryptWith};
use super::types::{
    Checksum, CopyOptions, CopySource, GetOptions, HeadOptions, MetadataDirective, ObjectInfo,
    ObjectMeta, PutResult, WriteConditions,
};
use super::version::{find_version, make_room, stamp_id, versioning_in};
use super::{
    BUCKETS, ENCRYPTED_LAYOUT, OBJECTS, Store, VERSIONS, VersionId, bucket_exists,
    check_bucket_name, check_key, db_err, io_err, now, object_key, raise_layout,
};

/// A PUT in progress: bytes stream into a temp file (hashed as they go, in the store's MD5
/// lanes) until [`commit`](Self::commit). Dropped without commit, it deletes its temp file and
/// changes nothing.
#[derive(Debug)]
pub struct ObjectWriter {
    store: Store,
    bucket: String,
    key: String,
    spool: Spool,
    /// Encrypting: what the record keeps, and the data key (for an SSE-C ETag).
    encryption: Option<(sse::Encryption, [u8; 32])>,
}

impl ObjectWriter {
    /// How the object will be encrypted, as responses describe it (`None`: plaintext), with
    /// what the store chose filled in (an SSE-KMS write's default key).
    pub fn encryption_info(&self) -> Option<sse::EncryptionInfo> {
        self.encryption.as_ref().map(|(enc, _)| enc.info())
    }

    /// Append a chunk of the body.
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

    /// The temp file being written, for streamed bodies' writes through the ring.
    pub(crate) fn spool(&mut self) -> &mut Spool {
        &mut self.spool
    }

    /// Append everything `r` yields until its end, reading straight into the write buffer.
    /// Returns the bytes read.
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

    /// MD5 of the bytes written (to check `Content-MD5` before committing).
    ///
    /// Ends the writing (no write may follow); an I/O error meanwhile is reported by `commit`.
    pub fn digest(&mut self) -> Md5Digest {
        self.spool.digest()
    }

    /// Make the object durable and visible, replacing any object under its key.
    ///
    /// Fails with `NoSuchBucket` if the bucket was deleted meanwhile, `PreconditionFailed` or
    /// `NoSuchKey` if `conditions` do not hold at commit time; the written bytes are then dropped.
    pub fn commit(self, meta: ObjectMeta, conditions: WriteConditions) -> S3Result<PutResult> {
        let ObjectWriter {
            store,
            bucket,
            key,
            spool,
            encryption,
        } = self;
        let staged = spool.finish().map_err(|e| store.inner.io_failed(e))?;
        let digest = match &encryption {
            Some((enc, data_key)) => sse::etag_digest(enc, data_key, &staged.md5),
            None => staged.md5,
        };
        let rec = ObjectRecord {
            size: staged.size,
            etag: ETag::single(&digest).as_str().to_owned(),
            last_modified: now(),
            meta,
            data: DataLayout::Single(staged.id),
            version: None,
            encryption: encryption.map(|(enc, _)| enc),
        };
        store.commit_object(bucket, key, Some(staged), rec, conditions)
    }
}

impl Write for ObjectWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.spool.write(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Streams a byte range of one version of an object (`std::io::Read`).
///
/// The version's data files are pinned: overwriting or deleting the key meanwhile does not
/// disturb the reader, and the old files are deleted when it is dropped.
#[derive(Debug)]
pub struct ObjectReader {
    info: ObjectInfo,
    pins: PinGuard,
    range: Option<(u64, u64)>,
    /// Index of the current data file in `pins.ids`.
    idx: usize,
    /// Offset in the current data file.
    offset: u64,
    remaining: u64,
    file: Option<File>,
    /// Decrypting: the data is ciphertext chunks ([`ferry_core::sse`]).
    crypt: Option<Box<ReadCrypt>>,
}

/// An encrypted object's keys (one per data file), the cipher of the file being read, and the
/// chunk last decrypted.
struct ReadCrypt {
    keys: Vec<[u8; 32]>,
    /// Which data file `cipher` is keyed for.
    keyed: usize,
    cipher: ferry_core::sse::ObjectCipher,
    chunk: Vec<u8>,
    /// Which chunk `chunk` holds, and its plaintext bytes.
    index: Option<u64>,
    plain: usize,
}

impl std::fmt::Debug for ReadCrypt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadCrypt")
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

impl ObjectReader {
    fn new(
        info: ObjectInfo,
        pins: PinGuard,
        range: Option<(u64, u64)>,
        keys: Option<Vec<[u8; 32]>>,
    ) -> S3Result<Self> {
        let (start, len) = match range {
            Some((first, last)) => (first, last - first + 1),
            None => (0, info.size),
        };
        let mut r = ObjectReader {
            info,
            pins,
            range,
            idx: 0,
            offset: start,
            remaining: len,
            file: None,
            crypt: None,
        };
        if let Some(keys) = keys {
            let first = keys.first().ok_or_else(|| {
                S3Error::with_message(S3ErrorCode::InternalError, "an encrypted object has no key")
            })?;
            if keys.len() != r.pins.ids.len() {
                return Err(S3Error::with_message(
                    S3ErrorCode::InternalError,
                    "an encrypted object's keys do not match its data files",
                ));
            }
            r.crypt = Some(Box::new(ReadCrypt {
                cipher: ferry_core::sse::ObjectCipher::new(first),
                keyed: 0,
                keys,
                chunk: vec![0; ferry_core::sse::DISK_CHUNK],
                index: None,
                plain: 0,
            }));
        }
        // Find the file holding `start` (zero-size parts are skipped on the way).
        while r.idx < r.pins.ids.len() && r.offset >= r.file_size(r.idx) {
            r.offset -= r.file_size(r.idx);
            r.idx += 1;
        }
        if r.remaining > 0 {
            // Open now, so a missing file is an error of the GET, not of the body.
            r.open_current().map_err(io_err)?;
        }
        Ok(r)
    }

    fn file_size(&self, i: usize) -> u64 {
        if self.info.part_sizes.is_empty() {
            self.info.size
        } else {
            self.info.part_sizes.get(i).copied().unwrap_or(0)
        }
    }

    fn open_current(&mut self) -> io::Result<&mut File> {
        self.open_current_for(Wait::Block)
    }

    /// The current data file, opened if it is not (only a blocking read may open one).
    fn open_current_for(&mut self, wait: Wait) -> io::Result<&mut File> {
        if self.file.is_none() {
            if wait == Wait::Cached {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let id: FileId = *self
                .pins
                .ids
                .get(self.idx)
                .ok_or_else(|| io::Error::other("read past the object's data files"))?;
            // Read at `offset` (`pread`), never from the file's position: `advance` moves
            // the reader without reading.
            self.file = Some(File::open(files::data_path(&self.pins.inner.data, id))?);
        }
        self.file
            .as_mut()
            .ok_or_else(|| io::Error::other("data file not open"))
    }

    /// Open the data file holding the next byte (past files it has read whole), if it is not
    /// open: file I/O, for a blocking thread. A no-op once the range is read.
    pub fn open_next(&mut self) -> io::Result<()> {
        if self.remaining == 0 {
            return Ok(());
        }
        while self.file_size(self.idx) <= self.offset {
            self.idx += 1;
            self.offset = 0;
            self.file = None;
            if self.idx >= self.pins.ids.len() {
                return Err(io::Error::other("object shorter than its metadata"));
            }
        }
        self.open_current().map(drop)
    }

    /// The bytes to send next, for `sendfile(2)`: the open data file, the offset in it and how
    /// many bytes of the range it holds from there. `None` once the range is read, or when the
    /// next file is not open yet ([`ObjectReader::open_next`]). Call
    /// [`ObjectReader::advance`] with what was sent.
    pub fn segment(&self) -> Option<(&File, u64, u64)> {
        if self.crypt.is_some() {
            // Ciphertext is not what the client reads.
            return None;
        }
        let in_file = self.file_size(self.idx).saturating_sub(self.offset);
        let len = in_file.min(self.remaining);
        let file = self.file.as_ref().filter(|_| len > 0)?;
        Some((file, self.offset, len))
    }

    /// Count `n` bytes of the current [`ObjectReader::segment`] as sent (at most its length);
    /// the file is closed once sent to its end.
    pub fn advance(&mut self, n: u64) {
        let in_file = self.file_size(self.idx).saturating_sub(self.offset);
        let n = n.min(in_file).min(self.remaining);
        self.offset += n;
        self.remaining -= n;
        if self.offset >= self.file_size(self.idx) {
            self.file = None;
        }
    }

    /// The object's metadata (of the version being read).
    pub fn info(&self) -> &ObjectInfo {
        &self.info
    }

    /// The metadata, dropping the reader.
    pub fn into_info(self) -> ObjectInfo {
        self.info
    }

    /// The inclusive byte range being read (for `Content-Range`); `None` for a whole-object read.
    pub fn range(&self) -> Option<(u64, u64)> {
        self.range
    }

    /// Bytes not read yet (the `Content-Length` before the first read).
    pub fn remaining(&self) -> u64 {
        self.remaining
    }

    /// Whether the data is decrypted on the way (no `sendfile(2)` then).
    pub fn is_encrypted(&self) -> bool {
        self.crypt.is_some()
    }

    /// Whether a read into `room` bytes decrypts in that buffer: always for a plain object;
    /// for an encrypted one, unless the next read starts a chunk that, with its tag, does not
    /// fit (it would then be decrypted aside and copied, and every later read would start
    /// mid-chunk and copy too). Block readers stop short of such a read.
    pub fn read_fits(&self, room: usize) -> bool {
        use ferry_core::sse::{PLAIN_CHUNK, TAG_LEN, chunk_plain_len};
        if self.crypt.is_none() {
            return true;
        }
        // Where the next read starts: past the current file's end, the next one's start.
        let (mut idx, mut offset) = (self.idx, self.offset);
        while idx < self.pins.ids.len() && offset >= self.file_size(idx) {
            idx += 1;
            offset = 0;
        }
        if offset % PLAIN_CHUNK as u64 != 0 {
            return true;
        }
        let whole = chunk_plain_len(self.file_size(idx), offset / PLAIN_CHUNK as u64);
        self.remaining < whole as u64 || room >= whole + TAG_LEN
    }

    /// Read from an encrypted object: decrypt the chunk holding `offset` (unless it is the one
    /// decrypted last) and copy from it. A chunk that fails authentication (the file was
    /// altered, truncated or swapped) is an error, never bytes.
    fn read_decrypted(&mut self, buf: &mut [u8], wait: Wait) -> io::Result<usize> {
        use ferry_core::sse::{ObjectCipher, PLAIN_CHUNK, TAG_LEN, chunk_plain_len};
        // Past the current file's end: the next one (a multipart object's next part).
        while self.offset >= self.file_size(self.idx) {
            self.idx += 1;
            self.offset = 0;
            self.file = None;
            if self.idx >= self.pins.ids.len() {
                return Err(io::Error::other("object shorter than its metadata"));
            }
        }
        // Each data file (part) has a key of its own.
        if let Some(crypt) = self.crypt.as_deref_mut()
            && crypt.keyed != self.idx
        {
            let key = crypt
                .keys
                .get(self.idx)
                .ok_or_else(|| io::Error::other("no key for a data file"))?;
            crypt.cipher = ObjectCipher::new(key);
            crypt.keyed = self.idx;
            crypt.index = None;
        }
        let size = self.file_size(self.idx);
        let index = self.offset / PLAIN_CHUNK as u64;
        let within = (self.offset % PLAIN_CHUNK as u64) as usize;
        let whole = chunk_plain_len(size, index);
        // A whole chunk wanted, and room for it with its tag: it is decrypted in the caller's
        // buffer (the next one overwrites the tag), without a copy.
        let in_place =
            within == 0 && self.remaining >= whole as u64 && buf.len() >= whole + TAG_LEN;
        if in_place || self.crypt.as_ref().is_some_and(|c| c.index != Some(index)) {
            self.open_current_for(wait)?;
            let (Some(file), Some(crypt)) = (self.file.as_ref(), self.crypt.as_deref_mut()) else {
                return Err(io::Error::other("not encrypted"));
            };
            if in_place {
                let n = read_chunk(file, &crypt.cipher, size, index, buf, wait)?;
                self.offset += n as u64;
                self.remaining -= n as u64;
                return Ok(n);
            }
            crypt.index = None;
            crypt.plain = read_chunk(file, &crypt.cipher, size, index, &mut crypt.chunk, wait)?;
            crypt.index = Some(index);
        }
        let crypt = self
            .crypt
            .as_deref()
            .ok_or_else(|| io::Error::other("not encrypted"))?;
        let avail = crypt.plain.saturating_sub(within);
        let want = (buf.len() as u64).min(avail as u64).min(self.remaining) as usize;
        if want == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "encrypted data shorter than its metadata",
            ));
        }
        buf[..want].copy_from_slice(&crypt.chunk[within..within + want]);
        self.offset += want as u64;
        self.remaining -= want as u64;
        Ok(want)
    }

    /// Close the data file and unpin the object's files without touching the file system
    /// beyond `close(2)`; files this reader was the last to pin come back for a blocking thread
    /// to delete ([`files::Unpinned::remove`]). Dropping the reader does both at once.
    pub(crate) fn release(self) -> Option<files::Unpinned> {
        let ObjectReader { pins, file, .. } = self;
        drop(file);
        pins.release()
    }
}

/// Read chunk `index` of an encrypted data file holding `size` bytes of plaintext into `dst`
/// and decrypt it there; its plaintext length. A chunk that fails authentication (the file
/// was altered, truncated or swapped) is an error, never bytes.
fn read_chunk(
    file: &File,
    cipher: &ferry_core::sse::ObjectCipher,
    size: u64,
    index: u64,
    dst: &mut [u8],
    wait: Wait,
) -> io::Result<usize> {
    use ferry_core::sse::{TAG_LEN, chunk_offset, chunk_plain_len, chunks};
    let chunk = dst
        .get_mut(..chunk_plain_len(size, index) + TAG_LEN)
        .ok_or_else(|| io::Error::other("chunk larger than its buffer"))?;
    read_exact_at(file, chunk, chunk_offset(index), wait)?;
    let last = index + 1 == chunks(size);
    cipher.open(index, last, chunk).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "an encrypted chunk failed authentication",
        )
    })
}

/// Whether a read may wait for the disk (and open files), or takes only what the page cache
/// holds, for a runtime thread ([`ObjectReader::read_cached`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wait {
    Block,
    Cached,
}

/// Set once `RWF_NOWAIT` is found unsupported (a kernel or file system without it): cached
/// reads are then not tried, rather than failing once per block.
static NOWAIT_UNSUPPORTED: AtomicBool = AtomicBool::new(false);

/// `pread(2)`, or with [`Wait::Cached`] `preadv2(2)` with `RWF_NOWAIT`: `WouldBlock` unless
/// the page cache holds the first bytes wanted (and for a file system that cannot tell).
fn read_at(file: &File, buf: &mut [u8], offset: u64, wait: Wait) -> io::Result<usize> {
    match wait {
        Wait::Block => file.read_at(buf, offset),
        Wait::Cached if NOWAIT_UNSUPPORTED.load(Ordering::Relaxed) => {
            Err(io::ErrorKind::WouldBlock.into())
        }
        Wait::Cached => {
            use rustix::io::{Errno, ReadWriteFlags, preadv2};
            match preadv2(
                file,
                &mut [io::IoSliceMut::new(buf)],
                offset,
                ReadWriteFlags::NOWAIT,
            ) {
                Ok(n) => Ok(n),
                Err(Errno::AGAIN) => Err(io::ErrorKind::WouldBlock.into()),
                Err(Errno::OPNOTSUPP | Errno::NOSYS) => {
                    NOWAIT_UNSUPPORTED.store(true, Ordering::Relaxed);
                    Err(io::ErrorKind::WouldBlock.into())
                }
                Err(e) => Err(e.into()),
            }
        }
    }
}

/// All of `buf` from `offset`: with [`Wait::Cached`], `WouldBlock` unless the page cache holds
/// all of it (a short read is the part that was cached, or the file's end: the blocking read
/// that follows tells which).
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64, wait: Wait) -> io::Result<()> {
    match wait {
        Wait::Block => file.read_exact_at(buf, offset),
        Wait::Cached => match read_at(file, buf, offset, wait)? {
            n if n == buf.len() => Ok(()),
            _ => Err(io::ErrorKind::WouldBlock.into()),
        },
    }
}

impl ObjectReader {
    /// Read as [`Read::read`] does, but only what the page cache holds and from the data file
    /// already open: never waiting for the disk, so a runtime thread may call it (and decrypt
    /// there) instead of handing the read to a blocking one. `WouldBlock` (nothing read,
    /// nothing changed) when the next bytes are not cached or the next file is not open.
    pub fn read_cached(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_with(buf, Wait::Cached)
    }

    fn read_with(&mut self, buf: &mut [u8], wait: Wait) -> io::Result<usize> {
        if self.remaining == 0 || buf.is_empty() {
            return Ok(0);
        }
        if self.crypt.is_some() {
            return self.read_decrypted(buf, wait);
        }
        loop {
            let left_in_file = self.file_size(self.idx).saturating_sub(self.offset);
            if left_in_file == 0 {
                self.idx += 1;
                self.offset = 0;
                self.file = None;
                if self.idx >= self.pins.ids.len() {
                    return Err(io::Error::other("object shorter than its metadata"));
                }
                continue;
            }
            let want = (buf.len() as u64).min(left_in_file).min(self.remaining) as usize;
            let offset = self.offset;
            let n = read_at(self.open_current_for(wait)?, &mut buf[..want], offset, wait)?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "data file shorter than its metadata",
                ));
            }
            self.offset += n as u64;
            self.remaining -= n as u64;
            return Ok(n);
        }
    }
}

impl Read for ObjectReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_with(buf, Wait::Block)
    }
}

/// The public view of a record, and the files holding its bytes. Its version id is given
/// when it has a stamp (its bucket has a versioning state).
pub(crate) fn info_of(rec: ObjectRecord) -> S3Result<(ObjectInfo, Vec<FileId>)> {
    let version_id = rec.version.map(|_| rec.version_id());
    let files = rec.data.files();
    let part_sizes = match &rec.data {
        DataLayout::Single(_) => Vec::new(),
        DataLayout::Parts(parts) => parts.iter().map(|p| p.size).collect(),
    };
    let info = ObjectInfo {
        size: rec.size,
        etag: stored_etag(&rec.etag)?,
        last_modified: DateTime::from_unix(rec.last_modified),
        meta: rec.meta,
        part_sizes,
        version_id,
        encryption: rec.encryption.as_ref().map(sse::Encryption::info),
    };
    Ok((info, files))
}

/// The version a commit removed (its files, to retire after the commit, and size), and the
/// new version's id.
#[derive(Debug, Default)]
pub(crate) struct Replaced {
    pub files: Vec<FileId>,
    pub size: Option<u64>,
    /// The new version's id, in a bucket with a versioning state.
    pub version_id: Option<VersionId>,
}

/// In `txn`: store `rec` (encoded as `bytes`) under `bucket`/`key` if the bucket exists and
/// `conditions` hold against the current object. In a bucket that never had a versioning
/// state it replaces that object, which is returned; in a versioned one it becomes a new
/// version (see `store::version`).
pub(crate) fn put_record(
    store: &Store,
    txn: &WriteTransaction,
    bucket: &str,
    key: &str,
    rec: &ObjectRecord,
    bytes: &[u8],
    conditions: WriteConditions,
) -> S3Result<Replaced> {
    let buckets = txn.open_table(BUCKETS).map_err(db_err)?;
    if !bucket_exists(&buckets, bucket)? {
        return Err(S3Error::new(S3ErrorCode::NoSuchBucket));
    }
    check_unfenced(txn, bucket)?;
    if rec.encryption.is_some() {
        raise_layout(txn, ENCRYPTED_LAYOUT)?;
    }
    let state = versioning_in(store, txn, bucket)?;
    let k = object_key(bucket, key)?;
    let mut objects = txn.open_table(OBJECTS).map_err(db_err)?;
    let placed = conditions.placed;
    super::version::check_placed(&placed)?;
    // A moved version keeps its date.
    let dated;
    let (rec, bytes) = match placed.last_modified {
        Some(at) => {
            let mut r = rec.clone();
            r.last_modified = at;
            dated = (codec::encode(&r)?, r);
            (&dated.1, dated.0.as_slice())
        }
        None => (rec, bytes),
    };
    let Some(state) = state else {
        if placed.seq.is_some() {
            return Err(super::version::unversioned_placement());
        }
        // Insert first and judge the replaced record: a refusal aborts the transaction anyway.
        let old = match objects.insert(k.as_slice(), bytes).map_err(db_err)? {
            Some(v) => Some(codec::decode::<ObjectRecord>(v.value())?),
            None => None,
        };
        check_conditions(old.as_ref(), conditions)?;
        return Ok(old.map_or_else(Replaced::default, |o| Replaced {
            size: Some(o.size),
            files: o.data.files(),
            version_id: None,
        }));
    };
    let old = match objects.get(k.as_slice()).map_err(db_err)? {
        Some(v) => {
            let bytes = v.value().to_vec();
            Some((codec::decode::<ObjectRecord>(&bytes)?, bytes))
        }
        None => None,
    };
    check_conditions(old.as_ref().map(|(r, _)| r), conditions)?;
    if let Some(seq) = placed.seq {
        drop(old);
        let (stamp, dropped) =
            super::version::place(txn, &mut objects, &k, seq, placed.null, rec.clone(), false)?;
        return Ok(Replaced {
            files: dropped.files,
            size: dropped.size,
            version_id: Some(stamp_id(stamp)),
        });
    }
    let (stamp, dropped) = make_room(txn, &k, state, old, false)?;
    let mut rec = rec.clone();
    rec.version = Some(stamp);
    objects
        .insert(k.as_slice(), codec::encode(&rec)?.as_slice())
        .map_err(db_err)?;
    Ok(Replaced {
        files: dropped.files,
        size: dropped.size,
        version_id: Some(stamp_id(stamp)),
    })
}

/// `If-None-Match: *` and `If-Match` against the current object `old`.
fn check_conditions(old: Option<&ObjectRecord>, conditions: WriteConditions) -> S3Result<()> {
    if conditions.if_none_match_star && old.is_some() {
        return Err(S3Error::new(S3ErrorCode::PreconditionFailed));
    }
    if let Some(want) = conditions.if_match {
        match &old {
            None => return Err(S3Error::new(S3ErrorCode::NoSuchKey)),
            Some(o) if stored_etag(&o.etag)? != want => {
                return Err(S3Error::new(S3ErrorCode::PreconditionFailed));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

impl Store {
    /// Start a PUT of `bucket`/`key`: `NoSuchBucket` if the bucket does not exist,
    /// `OperationAborted` while a fence holds it (both checked again at commit),
    /// `InsufficientStorage` while the disk is full. With `encryption`, its data is encrypted
    /// as that says ([`sse`]): the file holds ciphertext, the record how to get the data key
    /// back.
    pub fn object_writer(
        &self,
        bucket: &str,
        key: &str,
        encryption: Option<&EncryptWith>,
    ) -> S3Result<ObjectWriter> {
        check_bucket_name(bucket)?;
        check_key(key)?;
        self.check_bucket_writable(bucket)?;
        self.check_room()?;
        let mut w = ObjectWriter {
            store: self.clone(),
            bucket: bucket.to_owned(),
            key: key.to_owned(),
            spool: Spool::create(&self.inner).map_err(|e| self.inner.io_failed(e))?,
            encryption: None,
        };
        if let Some(with) = encryption {
            let (enc, data_key) = sse::Encryption::new(with, &*self.inner)?;
            w.spool.encrypt(&data_key);
            w.encryption = Some((enc, data_key));
        }
        Ok(w)
    }

    /// `with`, with what the store would choose filled in and checked
    /// ([`EncryptWith::resolved`]): its `info` is then what responses say. No I/O.
    pub fn resolve_encryption(&self, with: EncryptWith) -> S3Result<EncryptWith> {
        with.resolved(&*self.inner)
    }

    /// Commit `rec` (whose data file is `staged`, if new) in the next group commit and retire
    /// what it replaced.
    pub(crate) fn commit_object(
        &self,
        bucket: String,
        key: String,
        staged: Option<files::Staged>,
        rec: ObjectRecord,
        conditions: WriteConditions,
    ) -> S3Result<PutResult> {
        let mut result = PutResult {
            etag: stored_etag(&rec.etag)?,
            size: rec.size,
            last_modified: DateTime::from_unix(rec.last_modified),
            version_id: None,
            checksum: None,
            tags: rec.meta.tags.clone(),
        };
        let bytes = codec::encode(&rec)?;
        let store = self.clone();
        let old = self.update_grouped(staged, move |txn| {
            put_record(&store, txn, &bucket, &key, &rec, &bytes, conditions)
        })?;
        self.inner.counters.put(result.size, old.size);
        self.inner.retire(&old.files);
        result.version_id = old.version_id;
        Ok(result)
    }

    /// The record of `bucket`/`key` (of `version`, if named) in a fresh snapshot: `NoSuchKey`,
    /// `NoSuchVersion`, `MethodNotAllowed` for a delete marker named by its id, or
    /// `NoSuchBucket` if the bucket does not exist. With `pin`, its files are pinned in the same
    /// snapshot.
    fn object_record(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionId>,
        pin: bool,
    ) -> S3Result<(ObjectRecord, Option<PinGuard>)> {
        let k = object_key(bucket, key)?;
        let mut pins = pin.then(|| Pins::lock(&self.inner.pins));
        let txn = self.read_txn()?;
        let objects = txn.open_table(OBJECTS).map_err(db_err)?;
        let found = match version {
            None => match objects.get(k.as_slice()).map_err(db_err)? {
                Some(v) => Some(codec::decode::<ObjectRecord>(v.value())?),
                None => None,
            },
            Some(v) => {
                let versions = txn.open_table(VERSIONS).map_err(db_err)?;
                match find_version(&objects, &versions, &k, v)? {
                    Some((_, rec)) if rec.is_delete_marker() => {
                        return Err(S3Error::new(S3ErrorCode::MethodNotAllowed));
                    }
                    Some((_, mut rec)) => {
                        // Asked for by id: the answer names it, `null` included.
                        rec.version.get_or_insert(super::codec::VersionStamp {
                            seq: rec.order(),
                            null: true,
                            delete_marker: false,
                        });
                        Some(rec)
                    }
                    None => None,
                }
            }
        };
        let Some(rec) = found else {
            drop(pins);
            let buckets = txn.open_table(BUCKETS).map_err(db_err)?;
            return Err(if !bucket_exists(&buckets, bucket)? {
                S3Error::new(S3ErrorCode::NoSuchBucket)
            } else if version.is_some() {
                S3Error::new(S3ErrorCode::NoSuchVersion)
            } else {
                S3Error::new(S3ErrorCode::NoSuchKey)
            });
        };
        let guard = match pins.as_mut() {
            Some(p) => {
                let ids = rec.data.files();
                p.pin(&ids);
                Some(PinGuard::new(self.inner.clone(), ids))
            }
            None => None,
        };
        Ok((rec, guard))
    }

    /// HEAD: the metadata of `bucket`/`key`, of the version `opts` names (the current one if
    /// `None`): `NoSuchVersion` if it does not exist, `MethodNotAllowed` if it is a delete
    /// marker; with `check_key`, the SSE-C key checked as a GET checks it.
    pub fn head_object(
        &self,
        bucket: &str,
        key: &str,
        opts: HeadOptions<'_>,
    ) -> S3Result<ObjectInfo> {
        let (rec, _) = self.object_record(bucket, key, opts.version, false)?;
        if opts.check_key {
            self.data_key(&rec, opts.customer)?;
        }
        Ok(info_of(rec)?.0)
    }

    /// GET: the metadata of `bucket`/`key` and a reader of the bytes `opts` asks for, of the
    /// version it names (the current one if `None`; errors as [`Store::head_object`]); an
    /// encrypted object's data is decrypted on the way with the SSE-C key given (if any;
    /// errors as [`Store::data_key`]).
    ///
    /// The data file is opened before this returns; the reader streams this version to its end
    /// whatever happens to the key meanwhile. Check GET conditions (`If-Match`, ...) against
    /// [`ObjectReader::info`] and drop the reader if they fail.
    pub fn get_object(
        &self,
        bucket: &str,
        key: &str,
        opts: GetOptions<'_>,
    ) -> S3Result<ObjectReader> {
        let (rec, pins) = self.object_record(bucket, key, opts.version, true)?;
        let pins = pins.ok_or_else(|| S3Error::new(S3ErrorCode::InternalError))?;
        let keys = self.file_keys(&rec, opts.customer)?;
        let (info, _) = info_of(rec)?;
        let range = opts.range.resolve(&info)?;
        ObjectReader::new(info, pins, range, keys)
    }

    /// The data key of `rec`'s data (`None`: plaintext), given the SSE-C key a request came
    /// with: `400 InvalidRequest` for an SSE-C object read without its key, or a key for an
    /// object that is not SSE-C; `403 AccessDenied` for a wrong key.
    fn data_key(
        &self,
        rec: &ObjectRecord,
        customer: Option<&CustomerKey>,
    ) -> S3Result<Option<[u8; 32]>> {
        match (&rec.encryption, customer) {
            (None, None) => Ok(None),
            (None, Some(_)) => Err(sse::not_sse_c()),
            (Some(enc), customer) => enc.data_key(customer, &*self.inner).map(Some),
        }
    }

    /// The keys of `rec`'s data files, in order (`None`: plaintext), given the SSE-C key a
    /// request came with; errors as [`Store::data_key`].
    fn file_keys(
        &self,
        rec: &ObjectRecord,
        customer: Option<&CustomerKey>,
    ) -> S3Result<Option<Vec<[u8; 32]>>> {
        let key = self.data_key(rec, customer)?;
        Ok(key
            .zip(rec.encryption.as_ref())
            .map(|(k, e)| e.file_keys(k)))
    }

    /// Replace the ACL of version `version` of `bucket`/`key` (the current one if `None`; a
    /// document the caller checked) without touching its data, ETag or modification time, as
    /// [`Store::put_object_tagging`] does its tags.
    pub fn put_object_acl(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionId>,
        acl: Vec<u8>,
    ) -> S3Result<()> {
        self.update_version_meta(bucket, key, version, move |meta| {
            meta.acl = Some(acl.clone());
            Ok(())
        })
    }

    /// Set the object lock retention of version `version` of `bucket`/`key` (the current one
    /// if `None`; `None` removes it) in a metadata-only commit, judged at `now` against the
    /// retention it has in that commit's transaction: extending is always allowed, shortening
    /// or removing an active GOVERNANCE retention only with `bypass`, an active COMPLIANCE one
    /// never (`AccessDenied`).
    pub fn put_object_retention(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionId>,
        retention: Option<Retention>,
        now: i64,
        bypass: bool,
    ) -> S3Result<()> {
        self.update_version_meta(bucket, key, version, move |meta| {
            lock::check_retention_change(meta.retention.as_ref(), retention.as_ref(), now, bypass)?;
            meta.retention = retention;
            Ok(())
        })
    }

    /// Put a legal hold on version `version` of `bucket`/`key` (the current one if `None`), or
    /// lift it, in a metadata-only commit.
    pub fn put_object_legal_hold(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionId>,
        on: bool,
    ) -> S3Result<()> {
        self.update_version_meta(bucket, key, version, move |meta| {
            meta.legal_hold = on;
            Ok(())
        })
    }

    /// Replace the tags of version `version` of `bucket`/`key` (the current one if `None`;
    /// empty: remove them) without touching its data, ETag or modification time: a
    /// metadata-only commit in the next group commit. `NoSuchBucket`, `NoSuchKey`,
    /// `NoSuchVersion` if the version does not exist, `MethodNotAllowed` if it is a delete
    /// marker, or `OperationAborted` while a fence holds the bucket. The caller checks the tags
    /// (`ferry_core::s3::tagging::check`).
    pub fn put_object_tagging(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionId>,
        tags: Vec<(String, String)>,
    ) -> S3Result<()> {
        // Judged against the record current in the group's transaction, so a PUT committed
        // just before is the object tagged, and one just after replaces it whole.
        self.update_version_meta(bucket, key, version, move |meta| {
            meta.tags.clone_from(&tags);
            Ok(())
        })
    }

    /// CopyObject: copy `src` to `bucket`/`key`, streaming through one pooled buffer.
    ///
    /// `check_source` sees the source's metadata (the version being copied) first: evaluate the
    /// `x-amz-copy-source-if-*` conditions there. `opts` gives the new object's metadata
    /// (`directive`), tags, and what it takes from its request; its `conditions` are checked
    /// against the destination at commit. Copying an object onto itself needs
    /// [`MetadataDirective::Replace`] (`InvalidRequest` otherwise, as in S3).
    pub fn copy_object(
        &self,
        src: CopySource<'_>,
        bucket: &str,
        key: &str,
        opts: CopyOptions,
        check_source: impl FnOnce(&ObjectInfo) -> S3Result<()>,
    ) -> S3Result<PutResult> {
        let CopyOptions {
            directive,
            tags,
            own,
            conditions,
        } = opts;
        // Copying an older version onto its key is how a version is restored, as in S3.
        if src.bucket == bucket
            && src.key == key
            && src.version_id.is_none()
            && directive == MetadataDirective::Copy
            && own.encryption.is_none()
        {
            return Err(S3Error::with_message(
                S3ErrorCode::InvalidRequest,
                "This copy request is illegal because it is trying to copy an object to itself \
                 without changing the object's metadata, storage class, website redirect location \
                 or encryption attributes.",
            ));
        }
        if src.range.is_some() {
            return Err(S3Error::with_message(
                S3ErrorCode::InvalidArgument,
                "x-amz-copy-source-range is only allowed in UploadPartCopy",
            ));
        }
        let mut reader = self.copy_reader(src, check_source)?;
        let mut writer = self.object_writer(bucket, key, own.encryption.as_ref())?;
        let mut hashing = HashingReader {
            inner: &mut reader,
            hasher: own.checksum.map(Checksummer::new),
        };
        let n = writer.write_from(&mut hashing)?;
        let computed = hashing.hasher.take().map(|h| {
            let sum = h.finalize();
            Checksum {
                algorithm: sum.algorithm().as_str().to_owned(),
                value: sum.to_base64().as_str().to_owned(),
            }
        });
        let info = reader.into_info();
        if n != info.size {
            return Err(S3Error::with_message(
                S3ErrorCode::InternalError,
                "copy source ended early",
            ));
        }
        let source_tags = info.meta.tags.clone();
        let mut meta = match directive {
            MetadataDirective::Copy => info.meta,
            MetadataDirective::Replace(m) => m,
        };
        meta.tags = tags.unwrap_or(source_tags);
        // The copy is one part: a composite checksum (of the source's parts) does not describe
        // it; a full-object one still does.
        if let Some(m) = meta.multipart_checksum.take()
            && !m.full_object
        {
            meta.checksums.clear();
        }
        if let Some(c) = computed {
            meta.checksums = vec![c];
        }
        let checksum = meta.checksums.first().cloned();
        // A copy gets the ACL of its request (none: private), never its source's, as in S3.
        meta.acl = own.acl;
        meta.retention = own.retention;
        meta.legal_hold = own.legal_hold;
        let mut put = writer.commit(meta, conditions)?;
        put.checksum = checksum;
        Ok(put)
    }

    /// Open a reader of `src` (its `range`, or all of it) after `check_source` accepted its
    /// metadata.
    pub(crate) fn copy_reader(
        &self,
        src: CopySource<'_>,
        check_source: impl FnOnce(&ObjectInfo) -> S3Result<()>,
    ) -> S3Result<ObjectReader> {
        let (rec, pins) = self
            .object_record(src.bucket, src.key, src.version_id, true)
            .map_err(|e| match e.code {
                S3ErrorCode::MethodNotAllowed => S3Error::with_message(
                    S3ErrorCode::InvalidRequest,
                    "The source of a copy request may not specifically refer to a delete marker \
                     by version id.",
                ),
                _ => e,
            })?;
        let pins = pins.ok_or_else(|| S3Error::new(S3ErrorCode::InternalError))?;
        // An SSE-C source needs its key (`x-amz-copy-source-server-side-encryption-customer-*`),
        // checked as a GET's.
        let keys = self.file_keys(&rec, src.customer)?;
        let (info, _) = info_of(rec)?;
        check_source(&info)?;
        let range = match src.range {
            None if info.size == 0 => None,
            None => Some((0, info.size - 1)),
            Some((first, last)) if first <= last && last < info.size => Some((first, last)),
            Some((first, last)) => {
                // Past the source's end: `416 InvalidRange`, as AWS answers UploadPartCopy.
                let code = if first <= last {
                    S3ErrorCode::InvalidRange
                } else {
                    S3ErrorCode::InvalidArgument
                };
                return Err(S3Error::with_message(
                    code,
                    format!(
                        "Range specified is not valid for source object of size: {}",
                        info.size
                    ),
                ));
            }
        };
        ObjectReader::new(info, pins, range, keys)
    }
}

/// A reader that checksums what it reads (a copy that asks for a checksum, an UploadPartCopy
/// into an upload with an algorithm).
pub(crate) struct HashingReader<'r> {
    pub inner: &'r mut dyn Read,
    pub hasher: Option<Checksummer>,
}

impl Read for HashingReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let (Some(h), Some(read)) = (&mut self.hasher, buf.get(..n)) {
            h.update(read);
        }
        Ok(n)
    }
}
