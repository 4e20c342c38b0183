//! Moving one object, or one key's versions, from the backend it is on to its owner: copy
//! (GET streamed into a PUT), check, then delete the old copy — each step as the module
//! comment of `rebalance` says, for the races with clients.

use std::borrow::Cow;
use std::sync::atomic::Ordering;

use ferry_core::http::{Header, find_header_str};
use ferry_core::rt::Runtime;
use ferry_core::s3::acl::Acl;
use ferry_core::s3::checksum::{ChecksumAlgorithm, ChecksumType};
use ferry_core::s3::header;
use ferry_core::s3::outbound::OutHeader;
use ferry_core::s3::version::VersionId;
use ferry_core::s3::xml::{
    Checksums, CompleteMultipartUpload, CompleteMultipartUploadResult, CompletedPart, ErrorResponse,
};
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};

use super::super::context::Caller;
use super::super::forward::Call;
use super::super::transfer::{
    Extent, Keep, KeepChecksum, Lock, Meter, Read, Transfer, Write, Written, etag_is_md5, etag_md5,
    transfer,
};
use super::progress::Progress;
use super::throttle::Throttle;
use super::{Bucket, Entry, Rebalancer, about};

/// What the move's bytes pass: the bandwidth bound and the count of bytes sent (and of those
/// the bound let through, and of its waits).
struct MoveMeter<'a, R: Runtime> {
    throttle: Option<&'a Throttle<R>>,
    progress: &'a Progress,
}

impl<R: Runtime> Meter for MoveMeter<'_, R> {
    async fn pass(&mut self, n: usize) {
        let p = self.progress;
        if let Some(t) = self.throttle {
            if t.pass(n).await {
                p.throttle_waits.fetch_add(1, Ordering::Relaxed);
            }
            p.throttled_bytes.fetch_add(n as u64, Ordering::Relaxed);
        }
        p.sent_bytes.fetch_add(n as u64, Ordering::Relaxed);
    }
}

impl<R: Runtime> Rebalancer<R> {
    /// [`transfer`] as `b`'s owner, its bytes through the bandwidth bound and counted.
    async fn transfer(
        &self,
        b: &Bucket,
        from_to: (usize, usize),
        read: &Read<'_>,
        keep: Keep,
        write: Write<'_>,
    ) -> S3Result<Transfer> {
        let mut meter = MoveMeter {
            throttle: self.throttle.as_ref(),
            progress: &self.progress,
        };
        transfer(&self.client(b), from_to, read, keep, write, &mut meter).await
    }

    /// The headers of a read on backend `from` that asks a Ferry node for an SSE-KMS object's
    /// encryption context (`x-ferry-encryption-context-mode`, sealed), which its copy keeps.
    fn context_mode(&self, from: usize) -> Vec<OutHeader<'static>> {
        let ask = self.is_ferry(from);
        ask.then(|| {
            (
                Cow::Borrowed(header::X_FERRY_ENCRYPTION_CONTEXT_MODE),
                Cow::Borrowed(&b"ENABLED"[..]),
            )
        })
        .into_iter()
        .collect()
    }
}

/// What a move keeps of the object: all the rebalance's module comment says.
const MOVED: Keep = Keep {
    metadata: true,
    checksum: KeepChecksum::Object,
    encryption: true,
    tags: true,
    lock: true,
};

/// How the copy is placed on its new owner.
#[derive(Debug, Clone, Default)]
struct Place {
    /// `If-None-Match: *`: only if the owner has no such key (unversioned buckets).
    create_only: bool,
    /// Ferry's placement headers (a Ferry owner): the date, and the version's id and order.
    headers: Vec<(&'static str, String)>,
}

impl Place {
    /// The headers of a write placed so.
    fn headers(&self) -> impl Iterator<Item = (&'static str, &str)> {
        let create_only = self.create_only.then_some(("If-None-Match", "*"));
        create_only
            .into_iter()
            .chain(self.headers.iter().map(|(n, v)| (*n, v.as_str())))
    }
}

/// What became of a copy.
#[derive(Debug)]
enum Copied {
    /// Copied and checked: the source's ETag and lock, and the copy's ETag and version id.
    Done {
        source_etag: String,
        lock: Lock,
        etag: String,
        version: Option<String>,
        size: u64,
    },
    /// The owner has the key (`If-None-Match`) or the version (its place) already.
    There { source_etag: String, lock: Lock },
    /// The source is gone (a client deleted it).
    Gone,
    /// An SSE-C object: not readable without its key.
    SseC,
}

impl<R: Runtime> Rebalancer<R> {
    /// For the proxy: the object a CompleteMultipartUpload just made on backend `from` (its
    /// `etag`, and `version` in a versioned bucket), which is not its key's current owner `to`:
    /// copied there as `caller` (part by part, so it keeps its ETag), then deleted on `from`.
    /// Unlike a rebalance's move, the copy replaces what the owner has: it is the newest write
    /// of the key. Returns the copy's version id.
    pub(crate) async fn move_completed(
        &self,
        bucket: &str,
        caller: &Caller,
        key: &str,
        etag: &str,
        version: Option<&str>,
        (from, to): (usize, usize),
    ) -> S3Result<Option<String>> {
        let b = Bucket {
            name: bucket.to_owned(),
            caller: caller.clone(),
            on: vec![from, to],
            versioned: version.is_some(),
        };
        let e = Entry {
            key: key.to_owned(),
            size: 0,
            etag: etag.to_owned(),
            last_modified: 0,
            version_id: version.map(str::to_owned),
            delete_marker: false,
        };
        let copied = self
            .copy_one(&b, &e, version, from, to, &Place::default())
            .await?;
        let Copied::Done {
            source_etag,
            version: copy_version,
            ..
        } = copied
        else {
            return Err(S3Error::with_message(
                S3ErrorCode::InternalError,
                format!(
                    "the object on {} could not be read: {copied:?}",
                    self.id(from)
                ),
            ));
        };
        // The version itself, or the key while it is still what was copied.
        let if_match = version.is_none().then_some(source_etag.as_str());
        let status = self.delete(&b, key, version, if_match, false, from).await?;
        if !(200..300).contains(&status) && status != 404 {
            tracing::warn!(
                bucket,
                key,
                backend = self.id(from),
                status,
                "an upload's object was copied to its owner, but could not be deleted where it was completed"
            );
        }
        Ok(copy_version)
    }
}

/// A multipart object's checksum, from its HEAD in checksum mode: what the copy's upload asks
/// for, and the value the copy must come out with (a COMPOSITE one ends in `-N`).
#[derive(Debug)]
struct ObjectChecksum {
    algorithm: ChecksumAlgorithm,
    kind: ChecksumType,
    value: String,
}

impl ObjectChecksum {
    fn of(headers: &[Header<'_>]) -> Option<Self> {
        let (algorithm, value) = headers.iter().find_map(|h| {
            let value = std::str::from_utf8(h.value).ok()?.trim();
            Some((
                ChecksumAlgorithm::from_header_name(h.name)?,
                value.to_owned(),
            ))
        })?;
        // Without a type: a composite value is the one with `-N` (base64 has no `-`).
        let kind = find_header_str(headers, header::X_AMZ_CHECKSUM_TYPE)
            .and_then(|t| ChecksumType::parse(t.trim()))
            .unwrap_or(if value.contains('-') {
                ChecksumType::Composite
            } else {
                ChecksumType::FullObject
            });
        Some(Self {
            algorithm,
            kind,
            value,
        })
    }
}

/// A completed copy of a multipart object: its ETag, version id, size and checksum value.
#[derive(Debug)]
struct Completed {
    etag: String,
    version: Option<String>,
    size: u64,
    checksum: Option<String>,
}

impl<R: Runtime> Rebalancer<R> {
    /// An unversioned bucket's object: copy it to its owner unless the owner has the key, then
    /// delete it where it was if it is still what was copied.
    pub(crate) async fn move_object(&self, b: &Bucket, e: &Entry, from: usize, to: usize) {
        let key = &e.key;
        let mut place = Place {
            create_only: true,
            headers: Vec::new(),
        };
        if self.is_ferry(to) {
            place
                .headers
                .push((header::X_FERRY_LAST_MODIFIED, e.last_modified.to_string()));
        }
        // A copy there already (a move run before, or a client's write) costs a HEAD, not the
        // object's bytes.
        let copied = match self.head(b, key, None, to).await {
            Ok(Some((etag, _))) => Ok(Copied::There {
                source_etag: e.etag.clone(),
                lock: Lock::default(),
            })
            .map(|c| (c, Some(etag))),
            Ok(None) => self
                .copy_one(b, e, None, from, to, &place)
                .await
                .map(|c| (c, None)),
            Err(err) => Err(err),
        };
        let p = &self.progress;
        match copied {
            Err(err) => p.error(about(&b.name, key, &err)),
            Ok((Copied::Gone, _)) => {
                p.superseded.fetch_add(1, Ordering::Relaxed);
            }
            Ok((Copied::SseC, _)) => {
                p.skipped_sse_c.fetch_add(1, Ordering::Relaxed);
            }
            Ok((Copied::There { source_etag, .. }, owner_etag)) => {
                let owner_etag = match owner_etag {
                    Some(t) => Some(t),
                    None => self
                        .head(b, key, None, to)
                        .await
                        .ok()
                        .flatten()
                        .map(|h| h.0),
                };
                // The owner's copy wins: the source goes if it is still what the listing saw.
                match self.delete(b, key, None, Some(&source_etag), false, from).await {
                    Ok(s) if (200..300).contains(&s) => {
                        if owner_etag.as_deref() == Some(source_etag.as_str()) {
                            // A move interrupted after its copy: finished now.
                            p.moved_objects.fetch_add(1, Ordering::Relaxed);
                            p.moved_bytes.fetch_add(e.size, Ordering::Relaxed);
                        } else {
                            p.superseded.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    Ok(404) => {
                        p.superseded.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(s) => p.error(format!(
                        "{}/{key}: its copy on {} could not be deleted ({s}): the owner has a newer one",
                        b.name,
                        self.id(from)
                    )),
                    Err(err) => p.error(about(&b.name, key, &err)),
                }
            }
            Ok((
                Copied::Done {
                    source_etag,
                    etag,
                    size,
                    ..
                },
                _,
            )) => match self
                .delete(b, key, None, Some(&source_etag), false, from)
                .await
            {
                Ok(s) if (200..300).contains(&s) => {
                    p.moved_objects.fetch_add(1, Ordering::Relaxed);
                    p.moved_bytes.fetch_add(size, Ordering::Relaxed);
                }
                Ok(404) => {
                    // A client deleted it while it moved: the copy goes too, if still ours.
                    self.undo(b, key, None, &etag, to).await;
                    p.superseded.fetch_add(1, Ordering::Relaxed);
                }
                Ok(412) => {
                    // Written again where it was (a proxy on the old layout): ours is older.
                    self.undo(b, key, None, &etag, to).await;
                    p.error(format!(
                        "{}/{key}: changed on {} while it moved (a proxy still on the old layout?); run again",
                        b.name,
                        self.id(from)
                    ));
                }
                Ok(s) => p.error(format!(
                    "{}/{key}: copied, but its old copy on {} could not be deleted ({s})",
                    b.name,
                    self.id(from)
                )),
                Err(err) => p.error(about(&b.name, key, &err)),
            },
        }
    }

    /// A versioned bucket's key: every version and delete marker (`versions`, newest first as
    /// listed). To a Ferry owner each is placed by its id, newest first (so the owner's current
    /// version is the right one at every step); to another S3 server they are written oldest
    /// first, with new ids. Then each copied one is deleted where it was.
    pub(crate) async fn move_versions(
        &self,
        b: &Bucket,
        versions: &[Entry],
        from: usize,
        to: usize,
    ) {
        let Some(key) = versions.first().map(|v| v.key.clone()) else {
            return;
        };
        let placing = self.is_ferry(to);
        let orders = orders(versions);
        let mut steps: Vec<usize> = (0..versions.len()).collect();
        if !placing {
            steps.reverse();
        }
        let p = &self.progress;
        // (entry, the owner's version id of its copy, source ETag, lock) of each copied one.
        let mut copied: Vec<(&Entry, Option<String>, String, Lock)> = Vec::new();
        for n in steps {
            let v = &versions[n];
            let Some(id) = v.version_id.as_deref() else {
                continue;
            };
            let mut place = Place::default();
            if placing {
                place
                    .headers
                    .push((header::X_FERRY_VERSION_ID, id.to_owned()));
                if id == "null" {
                    place
                        .headers
                        .push((header::X_FERRY_VERSION_ORDER, orders[n].to_string()));
                }
                place
                    .headers
                    .push((header::X_FERRY_LAST_MODIFIED, v.last_modified.to_string()));
            }
            if v.delete_marker {
                match self.place_marker(b, &key, &place, to).await {
                    Ok(version) => copied.push((v, version, String::new(), Lock::default())),
                    Err(err) => p.error(about(&b.name, &key, &err)),
                }
                continue;
            }
            match self.copy_one(b, v, Some(id), from, to, &place).await {
                Ok(Copied::Done {
                    source_etag,
                    lock,
                    version,
                    ..
                }) => copied.push((v, version, source_etag, lock)),
                Ok(Copied::There { source_etag, lock }) => {
                    copied.push((v, Some(id.to_owned()), source_etag, lock));
                }
                Ok(Copied::Gone) => {
                    p.superseded.fetch_add(1, Ordering::Relaxed);
                }
                Ok(Copied::SseC) => {
                    p.skipped_sse_c.fetch_add(1, Ordering::Relaxed);
                }
                Err(err) => p.error(about(&b.name, &format!("{key}?versionId={id}"), &err)),
            }
        }
        let now = self.p.shared.rt.unix_time();
        for (v, copy_version, source_etag, lock) in copied {
            let id = v.version_id.as_deref();
            let what = format!("{key}?versionId={}", id.unwrap_or("null"));
            if lock.compliance_until_after(now) {
                p.skipped_locked.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            if lock.legal_hold
                && let Err(err) = self.legal_hold(b, &key, id, false, from).await
            {
                p.error(about(&b.name, &what, &err));
                continue;
            }
            if v.delete_marker {
                // A delete of a missing version succeeds, so whether a client deleted the
                // marker meanwhile is asked first (405: a delete marker is there).
                let head = Call::head_object(&b.name, &key, id);
                if self
                    .client(b)
                    .send(from, &head)
                    .await
                    .is_ok_and(|r| r.status == 404)
                {
                    if let Some(cv) = &copy_version {
                        let _ = self.delete(b, &key, Some(cv), None, false, to).await;
                    }
                    p.superseded.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
            }
            let if_match = (!v.delete_marker).then_some(source_etag.as_str());
            match self
                .delete(b, &key, id, if_match, lock.governance(), from)
                .await
            {
                Ok(s) if (200..300).contains(&s) => {
                    p.moved_objects.fetch_add(1, Ordering::Relaxed);
                    p.moved_bytes.fetch_add(v.size, Ordering::Relaxed);
                }
                Ok(404) => {
                    // A client deleted this version while it moved: so does the move, on the owner.
                    if let Some(cv) = &copy_version {
                        let _ = self.delete(b, &key, Some(cv), None, true, to).await;
                    }
                    p.superseded.fetch_add(1, Ordering::Relaxed);
                }
                Ok(s) => p.error(format!(
                    "{}/{what}: copied, but its old copy on {} could not be deleted ({s})",
                    b.name,
                    self.id(from)
                )),
                Err(err) => p.error(about(&b.name, &what, &err)),
            }
        }
    }

    /// A delete marker on backend `to` (placed by its id on a Ferry node): the owner's version
    /// id of it.
    async fn place_marker(
        &self,
        b: &Bucket,
        key: &str,
        place: &Place,
        to: usize,
    ) -> S3Result<Option<String>> {
        let mut del = Call::delete_object(&b.name, key, None, None);
        for (n, v) in &place.headers {
            del.header(*n, v.clone());
        }
        let reply = self.client(b).send(to, &del).await?;
        let version = reply.header(header::X_AMZ_VERSION_ID).map(str::to_owned);
        let status = reply.status;
        if status == 412 {
            // In its place already (a move run before).
            return Ok(wanted_version(place));
        }
        if !reply.ok() {
            return Err(reply.to_error());
        }
        if let Some(want) = wanted_version(place)
            && version.as_deref() != Some(want.as_str())
        {
            return Err(placement_ignored(self.id(to)));
        }
        Ok(version)
    }

    /// Copy the listed object `e` (version `version`) from `from` to `to`: a GET streamed into a
    /// PUT, the object's headers kept (module comment), placed as `place` says; then checked.
    /// A multipart object is copied part by part into a multipart upload, so that it keeps its
    /// ETag.
    async fn copy_one(
        &self,
        b: &Bucket,
        e: &Entry,
        version: Option<&str>,
        from: usize,
        to: usize,
        place: &Place,
    ) -> S3Result<Copied> {
        let key = e.key.as_str();
        // A version already in its place costs a HEAD. (Not the null version: the owner's may
        // be a newer one, which the placed write is refused by, as superseded.)
        if version.is_some_and(|v| v != "null")
            && !place.headers.is_empty()
            && let Some((etag, _)) = self.head(b, key, version, to).await?
        {
            let source = self.head(b, key, version, from).await?;
            return Ok(match source {
                Some((source_etag, lock)) if source_etag == etag => {
                    Copied::There { source_etag, lock }
                }
                Some(_) => {
                    return Err(S3Error::with_message(
                        S3ErrorCode::InternalError,
                        format!("the version on {} differs from its source", self.id(to)),
                    ));
                }
                None => Copied::Gone,
            });
        }
        // Its ACL goes on the write (grant headers), so that the copy never exists without it.
        let Some(grants) = self.grants(b, key, version, from).await? else {
            return Ok(Copied::Gone);
        };
        if let Some(parts) = parts_of(&e.etag) {
            return self
                .copy_multipart(b, key, version, parts, &grants, from, to, place)
                .await;
        }
        let read = Read {
            headers: self.context_mode(from),
            ..Read::whole(&b.name, key, version)
        };
        let own = grants
            .iter()
            .map(|(n, v)| (*n, v.as_str()))
            .chain(place.headers())
            .map(|(n, v)| (Cow::Borrowed(n), Cow::Borrowed(v.as_bytes())))
            .collect();
        let write = Write::object(&b.name, key, own);
        let Written {
            source,
            lock_later,
            answer,
            ..
        } = match self.transfer(b, (from, to), &read, MOVED, write).await? {
            Transfer::Written(w) => w,
            Transfer::Refused(r) if r.status == 404 => return Ok(Copied::Gone),
            // What S3 answers a read of an SSE-C object without its key.
            Transfer::Refused(r)
                if r.status == 400 && r.error_code().as_deref() == Some("InvalidRequest") =>
            {
                return Ok(Copied::SseC);
            }
            Transfer::Refused(r) => return Err(r.to_error()),
        };
        let (source_etag, lock) = (source.etag, source.lock);
        if answer.status == 412 {
            return Ok(Copied::There { source_etag, lock });
        }
        if !answer.ok() {
            return Err(answer.to_error());
        }
        let etag = answer.header(header::ETAG).unwrap_or_default().to_owned();
        let copy_version = answer.header(header::X_AMZ_VERSION_ID).map(str::to_owned);
        if let Some(want) = wanted_version(place)
            && copy_version.as_deref() != Some(want.as_str())
        {
            // A node that does not place versions made a new one: take it back.
            if let Some(v) = &copy_version {
                let _ = self.delete(b, key, Some(v), None, true, to).await;
            }
            return Err(placement_ignored(self.id(to)));
        }
        // Check: an MD5 ETag on both sides must be the same MD5.
        if source.md5.is_some() && etag_md5(&etag).is_some() && etag != source_etag {
            self.undo(b, key, copy_version.as_deref(), &etag, to).await;
            return Err(S3Error::with_message(
                S3ErrorCode::InternalError,
                format!("the copy's ETag {etag} is not the source's {source_etag}"),
            ));
        }
        if lock_later {
            self.lock_copy(b, key, copy_version.as_deref(), &lock, to)
                .await?;
        }
        Ok(Copied::Done {
            source_etag,
            lock,
            etag,
            version: copy_version,
            size: source.len,
        })
    }

    /// [`Self::copy_one`] of a multipart object of `parts` parts: CreateMultipartUpload on the
    /// owner with the object's headers (from a HEAD in checksum mode), its checksum's algorithm
    /// and type and its ACL's `grants`, each part streamed from a GET of `partNumber` into an
    /// UploadPart with the part's checksum, then CompleteMultipartUpload placed as `place` says
    /// (`If-None-Match`, a version id): the same parts make the same ETag and checksum, which
    /// are checked. Its lock is set after.
    #[allow(clippy::too_many_arguments)]
    async fn copy_multipart(
        &self,
        b: &Bucket,
        key: &str,
        version: Option<&str>,
        parts: u32,
        grants: &[(&'static str, String)],
        from: usize,
        to: usize,
        place: &Place,
    ) -> S3Result<Copied> {
        let mut head = Call::head_object(&b.name, key, version);
        head.header(header::X_AMZ_CHECKSUM_MODE, "ENABLED");
        for (n, v) in self.context_mode(from) {
            head.header(n, String::from_utf8_lossy(&v).into_owned());
        }
        let head = self.client(b).send(from, &head).await?;
        match head.status {
            200 => {}
            404 => return Ok(Copied::Gone),
            // An SSE-C object answers a HEAD without its key so.
            400 => return Ok(Copied::SseC),
            _ => return Err(head.to_error()),
        }
        let source_etag = head.header(header::ETAG).unwrap_or_default().to_owned();
        let views = head.header_views();
        let lock = Lock::of(&views);
        let checksum = ObjectChecksum::of(&views);
        let mut create = Call::create_upload(&b.name, key);
        for h in MOVED.headers(&views) {
            create.header(
                h.name.to_owned(),
                String::from_utf8_lossy(h.value).into_owned(),
            );
        }
        if let Some(c) = &checksum {
            create.header(header::X_AMZ_CHECKSUM_ALGORITHM, c.algorithm.as_str());
            create.header(header::X_AMZ_CHECKSUM_TYPE, c.kind.as_str());
        }
        for (n, v) in grants {
            create.header(*n, v.clone());
        }
        let read = Read::whole(&b.name, key, version);
        if let Some(tags) = MOVED.tags(&self.client(b), from, &read, &views).await? {
            create.header(header::X_AMZ_TAGGING, tags);
        }
        let created = self.client(b).send(to, &create).await?;
        if !created.ok() {
            return Err(created.to_error());
        }
        let upload = ferry_core::s3::xml::InitiateMultipartUploadResult::parse_xml(&created.body)?
            .upload_id
            .into_owned();
        let result = self
            .upload_parts(
                b,
                key,
                version,
                parts,
                &upload,
                checksum.as_ref(),
                from,
                to,
                place,
            )
            .await;
        let done = match result {
            Ok(done) => done,
            Err(e) => {
                let abort = Call::abort_upload(&b.name, key, &upload);
                let _ = self.client(b).send(to, &abort).await;
                return Err(e);
            }
        };
        let Some(done) = done else {
            return Ok(Copied::There { source_etag, lock });
        };
        if let Some(want) = wanted_version(place)
            && done.version.as_deref() != Some(want.as_str())
        {
            if let Some(v) = &done.version {
                let _ = self.delete(b, key, Some(v), None, true, to).await;
            }
            return Err(placement_ignored(self.id(to)));
        }
        let etag = done.etag;
        if etag != source_etag && etag_is_md5(&views) {
            self.undo(b, key, done.version.as_deref(), &etag, to).await;
            return Err(S3Error::with_message(
                S3ErrorCode::InternalError,
                format!("the copy's ETag {etag} is not the source's {source_etag}"),
            ));
        }
        // The checksum the owner made of the parts' must be the source's (a FULL_OBJECT one it
        // has checked itself; a COMPOSITE one is only known once made).
        if let (Some(want), Some(got)) = (&checksum, &done.checksum)
            && *got != want.value
        {
            self.undo(b, key, done.version.as_deref(), &etag, to).await;
            return Err(S3Error::with_message(
                S3ErrorCode::InternalError,
                format!(
                    "the copy's {} {got} is not the source's {}",
                    want.algorithm.header_name(),
                    want.value
                ),
            ));
        }
        if lock.is_some() {
            self.lock_copy(b, key, done.version.as_deref(), &lock, to)
                .await?;
        }
        Ok(Copied::Done {
            source_etag,
            lock,
            etag,
            version: done.version,
            size: done.size,
        })
    }

    /// The parts of [`Self::copy_multipart`] (each with its checksum when the upload has one)
    /// and its completion (with the object's checksum when it is FULL_OBJECT); `None` when the
    /// owner has the key or version already (412).
    #[allow(clippy::too_many_arguments)]
    async fn upload_parts(
        &self,
        b: &Bucket,
        key: &str,
        version: Option<&str>,
        parts: u32,
        upload: &str,
        checksum: Option<&ObjectChecksum>,
        from: usize,
        to: usize,
        place: &Place,
    ) -> S3Result<Option<Completed>> {
        let mut done_parts = Vec::with_capacity(parts as usize);
        let mut size = 0u64;
        for n in 1..=parts {
            let read = Read {
                extent: Extent::Part {
                    number: n,
                    last: n == parts,
                },
                ..Read::whole(&b.name, key, version)
            };
            // The part's checksum, which a COMPOSITE one is made of (a FULL_OBJECT upload
            // computes a part's that comes without).
            let keep = Keep {
                checksum: checksum.map_or(KeepChecksum::No, |c| KeepChecksum::Part {
                    algorithm: c.algorithm,
                    required: c.kind == ChecksumType::Composite,
                }),
                ..Keep::default()
            };
            let write = Write::part(&b.name, key, upload, n);
            let part = match self.transfer(b, (from, to), &read, keep, write).await? {
                Transfer::Written(w) => w,
                Transfer::Refused(r) => {
                    return Err(S3Error::with_message(
                        S3ErrorCode::InternalError,
                        format!("part {n} of the source answered {}", r.status),
                    ));
                }
            };
            if !part.answer.ok() {
                return Err(part.answer.to_error());
            }
            let etag = part
                .answer
                .header(header::ETAG)
                .unwrap_or_default()
                .to_owned();
            done_parts.push(CompletedPart {
                part_number: u16::try_from(n).map_err(|_| {
                    S3Error::with_message(S3ErrorCode::InternalError, "a part number over 10000")
                })?,
                etag: etag.into(),
                checksums: part
                    .checksum
                    .map_or_else(Checksums::default, |(alg, v)| Checksums::one(alg, v)),
            });
            size += part.source.len;
        }
        let parts = CompleteMultipartUpload { parts: done_parts };
        let mut complete = Call::complete_upload(&b.name, key, upload, &parts);
        if let Some(c) = checksum {
            complete.header(header::X_AMZ_CHECKSUM_TYPE, c.kind.as_str());
            if c.kind == ChecksumType::FullObject {
                complete.header(c.algorithm.header_name(), c.value.clone());
            }
        }
        for (n, v) in place.headers() {
            complete.header(n, v.to_owned());
        }
        let done = self.client(b).send(to, &complete).await?;
        // A CompleteMultipartUpload can fail with a 200 and an error document.
        let failed = ErrorResponse::parse_xml(&done.body).ok();
        if done.status == 412
            || failed
                .as_ref()
                .is_some_and(|e| e.code == "PreconditionFailed")
        {
            return Ok(None);
        }
        if !done.ok() || failed.is_some() {
            return Err(done.to_error());
        }
        let result = CompleteMultipartUploadResult::parse_xml(&done.body)?;
        Ok(Some(Completed {
            etag: result.etag.into_owned(),
            version: done.header(header::X_AMZ_VERSION_ID).map(str::to_owned),
            size,
            checksum: checksum
                .and_then(|c| result.checksums.get(c.algorithm))
                .map(str::to_owned),
        }))
    }

    /// ETag and lock of `key` (version) on backend `on`, `None` if it has none.
    async fn head(
        &self,
        b: &Bucket,
        key: &str,
        version: Option<&str>,
        on: usize,
    ) -> S3Result<Option<(String, Lock)>> {
        let head = Call::head_object(&b.name, key, version);
        let reply = self.client(b).send(on, &head).await?;
        match reply.status {
            200..=299 => {
                let views = reply.header_views();
                Ok(Some((
                    reply.header(header::ETAG).unwrap_or_default().to_owned(),
                    Lock::of(&views),
                )))
            }
            // A delete marker (405 for a version that is one), or nothing.
            404 | 405 => Ok(None),
            // An SSE-C object answers a HEAD without its key with 400: the GET says so.
            400 => Ok(None),
            _ => Err(reply.to_error()),
        }
    }

    /// The grant headers (`x-amz-grant-*`) that give a copy the ACL `key` (version) has on
    /// backend `on`: none for the default one (its owner alone) or from a backend without ACLs
    /// (501); `None` if the object is gone.
    async fn grants(
        &self,
        b: &Bucket,
        key: &str,
        version: Option<&str>,
        on: usize,
    ) -> S3Result<Option<Vec<(&'static str, String)>>> {
        let get = Call::get_object_setting(&b.name, key, "acl", version);
        let reply = self.client(b).send(on, &get).await?;
        match reply.status {
            404 => return Ok(None),
            501 => return Ok(Some(Vec::new())),
            _ if !reply.ok() => return Err(reply.to_error()),
            _ => {}
        }
        let acl = Acl::parse_xml(&reply.body)?;
        Ok(Some(if acl.is_private() {
            Vec::new()
        } else {
            acl.grant_headers()
        }))
    }

    /// DeleteObject of `key` (version) on backend `on`, with `If-Match`; its status.
    async fn delete(
        &self,
        b: &Bucket,
        key: &str,
        version: Option<&str>,
        if_match: Option<&str>,
        bypass: bool,
        on: usize,
    ) -> S3Result<u16> {
        let mut del = Call::delete_object(&b.name, key, version, if_match);
        if bypass {
            del.header(header::X_AMZ_BYPASS_GOVERNANCE_RETENTION, "true");
        }
        Ok(self.client(b).send(on, &del).await?.status)
    }

    /// Take back the copy made on `on` (its version, or the key while it still has `etag`):
    /// the move found its source gone or changed.
    async fn undo(&self, b: &Bucket, key: &str, version: Option<&str>, etag: &str, on: usize) {
        let done = match version {
            Some(v) => self.delete(b, key, Some(v), None, true, on).await,
            None => self.delete(b, key, None, Some(etag), false, on).await,
        };
        if let Err(e) = done {
            tracing::warn!(bucket = %b.name, key, error = %e, "rebalance: could not take back a copy");
        }
    }

    /// Turn the legal hold of `key` (version) on backend `on` on or off.
    async fn legal_hold(
        &self,
        b: &Bucket,
        key: &str,
        version: Option<&str>,
        on_off: bool,
        on: usize,
    ) -> S3Result<()> {
        let status = if on_off { "ON" } else { "OFF" };
        let body = format!("<LegalHold><Status>{status}</Status></LegalHold>");
        self.put_document(b, key, version, "legal-hold", body.into_bytes(), false, on)
            .await
    }

    /// Set `lock` on the copy of `key` (version) on backend `on`, after its PUT.
    async fn lock_copy(
        &self,
        b: &Bucket,
        key: &str,
        version: Option<&str>,
        lock: &Lock,
        on: usize,
    ) -> S3Result<()> {
        if let Some((mode, until)) = &lock.retention {
            let body = format!(
                "<Retention><Mode>{mode}</Mode><RetainUntilDate>{until}</RetainUntilDate></Retention>"
            );
            self.put_document(b, key, version, "retention", body.into_bytes(), true, on)
                .await?;
        }
        if lock.legal_hold {
            self.legal_hold(b, key, version, true, on).await?;
        }
        Ok(())
    }

    /// PUT a small document to `key?sub` (version) on backend `on`.
    #[allow(clippy::too_many_arguments)]
    async fn put_document(
        &self,
        b: &Bucket,
        key: &str,
        version: Option<&str>,
        sub: &str,
        body: Vec<u8>,
        bypass: bool,
        on: usize,
    ) -> S3Result<()> {
        let mut put = Call::put_object_setting(&b.name, key, sub, version, &body);
        if bypass {
            put.header(header::X_AMZ_BYPASS_GOVERNANCE_RETENTION, "true");
        }
        let reply = self.client(b).send(on, &put).await?;
        if reply.ok() {
            Ok(())
        } else {
            Err(reply.to_error())
        }
    }
}

/// The parts of a multipart object, from its ETag (`"...-N"`); `None` for a single-part one.
fn parts_of(etag: &str) -> Option<u32> {
    let n: u32 = etag
        .trim()
        .trim_matches('"')
        .rsplit_once('-')?
        .1
        .parse()
        .ok()?;
    (n > 0).then_some(n)
}

/// The version id a placed write asks for.
fn wanted_version(place: &Place) -> Option<String> {
    place
        .headers
        .iter()
        .find(|(n, _)| *n == header::X_FERRY_VERSION_ID)
        .map(|(_, v)| v.clone())
}

fn placement_ignored(backend: &str) -> S3Error {
    S3Error::with_message(
        S3ErrorCode::NotImplemented,
        format!(
            "backend {backend} did not keep the version id (a Ferry node from before placed writes?)"
        ),
    )
}

/// The order of each version among its key's (`versions`, newest first): a Ferry id's own;
/// for the null version, whose id says nothing, one between its neighbours — after the older
/// one, before the newer one, at its modification time if that fits (what a record written
/// before versioning sorts by).
fn orders(versions: &[Entry]) -> Vec<u64> {
    let seq = |v: &Entry| {
        v.version_id
            .as_deref()
            .and_then(|id| VersionId::parse(id).ok())
            .and_then(VersionId::seq)
    };
    let mut out: Vec<u64> = versions.iter().map(|v| seq(v).unwrap_or(0)).collect();
    for (i, v) in versions.iter().enumerate() {
        if seq(v).is_some() {
            continue;
        }
        let at = u64::try_from(v.last_modified)
            .unwrap_or(0)
            .saturating_mul(1_000_000);
        let older = versions.get(i + 1).and_then(seq);
        let newer = i.checked_sub(1).and_then(|j| versions.get(j)).and_then(seq);
        let mut order = older.map_or(at, |o| at.max(o + 1));
        if let Some(n) = newer {
            order = order.min(n.saturating_sub(1));
        }
        out[i] = order;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(id: &str, lm: i64) -> Entry {
        Entry {
            key: "k".into(),
            size: 1,
            etag: String::new(),
            last_modified: lm,
            version_id: Some(id.into()),
            delete_marker: false,
        }
    }

    #[test]
    fn a_null_version_goes_between_its_neighbours() {
        let id = |seq: u64| VersionId::Seq(seq).to_string();
        let t = 1_700_000_000i64;
        let us = |s: i64| u64::try_from(s).unwrap() * 1_000_000;
        // Newest first: a version after the null one, the null one, an older version in the
        // same second as the null one.
        let list = [
            v(&id(us(t) + 900_000), t),
            v("null", t),
            v(&id(us(t) + 500_000), t),
        ];
        let o = orders(&list);
        assert_eq!(o[0], us(t) + 900_000);
        assert_eq!(o[2], us(t) + 500_000);
        assert!(o[2] < o[1] && o[1] < o[0], "{o:?}");
        // Alone, or only older versions: its modification time.
        assert_eq!(orders(&[v("null", t)]), [us(t)]);
        let o = orders(&[v("null", t), v(&id(us(t - 10)), t - 10)]);
        assert_eq!(o[0], us(t));
    }
}
