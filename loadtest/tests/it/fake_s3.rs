//! A tiny in-memory S3 server on ferry-core's HTTP engine that can corrupt GET bodies or stall
//! a request.
//!
//! It checks no signatures: it exists to misbehave on purpose (the real node is tested in
//! `workloads.rs`).

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ferry_core::http::body::BodyKind;
use ferry_core::http::head::RequestHead;
use ferry_core::http::server::{BodyReader, Handler, ResponseWriter, ServerConfig, ServerHandle};
use ferry_core::http::{Header, find_header};
use ferry_core::md5::{ETag, md5};
use ferry_core::rt::{Clock, Runtime, Stream};
use ferry_core::s3::query::Query;
use ferry_core::s3::uri::decode;
use ferry_core::s3::xml::{
    CompleteMultipartUploadResult, InitiateMultipartUploadResult, ListBucketResult, ListVersion,
    ObjectEntry,
};
use ferry_core::s3::{S3Error, S3ErrorCode};

/// How the fake misbehaves.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// Flip the lowest bit of the byte at this offset in every GET body.
    pub corrupt_at: Option<u64>,
    /// When the n-th GET (counting from 0) arrives, stall the whole server for this long:
    /// every request that arrives before the stall ends waits for its end.
    pub stall: Option<(u64, Duration)>,
    /// Answer GETs with the ETag of an empty object.
    pub wrong_etag: bool,
    /// Close kept-alive connections idle this long (as servers do, without telling).
    pub idle_close: Option<Duration>,
}

#[derive(Debug, Clone)]
struct Stored {
    data: Vec<u8>,
    etag: String,
}

/// The fake S3 server's handler.
#[derive(Debug)]
pub struct FakeS3<C> {
    clock: C,
    faults: Faults,
    objects: Mutex<BTreeMap<(String, String), Stored>>,
    uploads: Mutex<HashMap<String, BTreeMap<u32, Vec<u8>>>>,
    next_upload: AtomicU64,
    gets: AtomicU64,
    /// End of the stall (runtime clock, nanoseconds), 0 before it starts.
    stall_until: AtomicU64,
    /// Requests served.
    pub requests: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl<C: Clock> FakeS3<C> {
    pub fn new(clock: C, faults: Faults) -> Self {
        Self {
            clock,
            faults,
            objects: Mutex::default(),
            uploads: Mutex::default(),
            next_upload: AtomicU64::new(1),
            gets: AtomicU64::new(0),
            stall_until: AtomicU64::new(0),
            requests: AtomicU64::new(0),
        }
    }

    /// Keys stored in `bucket`.
    pub fn keys(&self, bucket: &str) -> Vec<String> {
        lock(&self.objects)
            .keys()
            .filter(|(b, _)| b == bucket)
            .map(|(_, k)| k.clone())
            .collect()
    }

    /// The bytes stored under `bucket/key`.
    pub fn object(&self, bucket: &str, key: &str) -> Option<Vec<u8>> {
        lock(&self.objects)
            .get(&(bucket.to_string(), key.to_string()))
            .map(|s| s.data.clone())
    }
}

async fn read_body<S: Stream>(body: &mut BodyReader<'_, S>) -> Result<Vec<u8>, S3Error> {
    let mut out = Vec::new();
    while let Some(chunk) = body.next_chunk().await? {
        out.extend_from_slice(chunk);
    }
    Ok(out)
}

fn not_found() -> S3Error {
    S3Error::new(S3ErrorCode::NoSuchKey)
}

impl<C: Clock> Handler for FakeS3<C> {
    type Error = S3Error;

    async fn handle<S: Stream>(
        &self,
        req: &RequestHead<'_, '_>,
        body: &mut BodyReader<'_, S>,
        res: &mut ResponseWriter<'_, S>,
    ) -> Result<(), S3Error> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let until = Duration::from_nanos(self.stall_until.load(Ordering::SeqCst));
        let now = self.clock.now();
        if until > now {
            self.clock.sleep(until - now).await;
        }
        if find_header(req.headers, "authorization").is_none() {
            return Err(S3Error::new(S3ErrorCode::AccessDenied));
        }
        let (raw_path, raw_query) = req.target.split_once('?').unwrap_or((req.target, ""));
        let path = decode(raw_path, false)?.into_owned();
        let query = Query::parse(raw_query)?;
        let mut segs = path.trim_start_matches('/').splitn(2, '/');
        let bucket = segs.next().unwrap_or_default().to_string();
        let key = segs.next().map(str::to_string);
        match (req.method, key) {
            ("PUT", None) => res.send(200, &[], b"").await?,
            ("DELETE", None) => res.send(204, &[], b"").await?,
            ("GET", None) => {
                let prefix = query.get_cow("prefix").unwrap_or_default().into_owned();
                let after = query
                    .get_cow("continuation-token")
                    .map(|t| t.into_owned())
                    .unwrap_or_default();
                let max: usize = query
                    .get("max-keys")
                    .and_then(|m| m.parse().ok())
                    .unwrap_or(1000);
                let all: Vec<(String, u64, String)> = lock(&self.objects)
                    .iter()
                    .filter(|((b, k), _)| *b == bucket && k.starts_with(&prefix) && *k > after)
                    .map(|((_, k), s)| (k.clone(), s.data.len() as u64, s.etag.clone()))
                    .collect();
                let truncated = all.len() > max;
                let page = &all[..all.len().min(max)];
                let doc = ListBucketResult {
                    name: bucket.as_str().into(),
                    prefix: prefix.as_str().into(),
                    delimiter: None,
                    max_keys: max as u32,
                    is_truncated: truncated,
                    encoding_type_url: false,
                    contents: page
                        .iter()
                        .map(|(k, size, etag)| ObjectEntry {
                            key: k.as_str().into(),
                            last_modified_unix: 0,
                            etag: etag.as_str().into(),
                            size: *size,
                            storage_class: "STANDARD".into(),
                            owner: None,
                        })
                        .collect(),
                    common_prefixes: Vec::new(),
                    version: ListVersion::V2 {
                        continuation_token: None,
                        next_continuation_token: truncated
                            .then(|| page.last().map(|(k, _, _)| k.as_str().into()))
                            .flatten(),
                        start_after: None,
                    },
                };
                let mut out = Vec::new();
                doc.write_xml(&mut out);
                res.send(200, &[], &out).await?;
            }
            ("POST", Some(key)) if query.has("uploads") => {
                let id = self.next_upload.fetch_add(1, Ordering::Relaxed).to_string();
                lock(&self.uploads).insert(id.clone(), BTreeMap::new());
                let mut out = Vec::new();
                InitiateMultipartUploadResult {
                    bucket: bucket.as_str().into(),
                    key: key.as_str().into(),
                    upload_id: id.as_str().into(),
                }
                .write_xml(&mut out);
                res.send(200, &[], &out).await?;
            }
            ("PUT", Some(key)) => {
                let data = read_body(body).await?;
                let digest = md5(&data);
                let etag = ETag::single(&digest);
                if let (Some(n), Some(upload)) = (query.get("partNumber"), query.get("uploadId")) {
                    let n: u32 = n
                        .parse()
                        .map_err(|_| S3Error::new(S3ErrorCode::InvalidArgument))?;
                    lock(&self.uploads)
                        .get_mut(upload)
                        .ok_or_else(|| S3Error::new(S3ErrorCode::NoSuchUpload))?
                        .insert(n, data);
                } else {
                    lock(&self.objects).insert(
                        (bucket, key),
                        Stored {
                            data,
                            etag: etag.as_str().to_string(),
                        },
                    );
                }
                let hs = [Header {
                    name: "ETag",
                    value: etag.as_str().as_bytes(),
                }];
                res.send(200, &hs, b"").await?;
            }
            ("POST", Some(key)) if query.has("uploadId") => {
                let _doc = read_body(body).await?;
                let upload = query.get("uploadId").unwrap_or_default().to_string();
                let parts = lock(&self.uploads)
                    .remove(&upload)
                    .ok_or_else(|| S3Error::new(S3ErrorCode::NoSuchUpload))?;
                let digests: Vec<_> = parts.values().map(|p| md5(p)).collect();
                let etag = ETag::multipart(&digests);
                let data = parts.into_values().flatten().collect();
                lock(&self.objects).insert(
                    (bucket.clone(), key.clone()),
                    Stored {
                        data,
                        etag: etag.as_str().to_string(),
                    },
                );
                let mut out = Vec::new();
                CompleteMultipartUploadResult {
                    location: "".into(),
                    bucket: bucket.as_str().into(),
                    key: key.as_str().into(),
                    etag: etag.as_str().into(),
                    checksums: Default::default(),
                    checksum_type: None,
                }
                .write_xml(&mut out);
                res.send(200, &[], &out).await?;
            }
            ("GET", Some(key)) => {
                let n = self.gets.fetch_add(1, Ordering::Relaxed);
                if let Some((at, pause)) = self.faults.stall.filter(|&(at, _)| at == n) {
                    let _ = at;
                    let until = self.clock.now() + pause;
                    self.stall_until
                        .store(until.as_nanos() as u64, Ordering::SeqCst);
                    self.clock.sleep(pause).await;
                }
                let stored = lock(&self.objects)
                    .get(&(bucket, key))
                    .cloned()
                    .ok_or_else(not_found)?;
                let mut data = stored.data;
                if let Some(b) = self
                    .faults
                    .corrupt_at
                    .and_then(|o| data.get_mut(usize::try_from(o).ok()?))
                {
                    *b ^= 1;
                }
                let empty = ETag::single(&md5(b""));
                let etag = if self.faults.wrong_etag {
                    empty.as_str()
                } else {
                    stored.etag.as_str()
                };
                let hs = [Header {
                    name: "ETag",
                    value: etag.as_bytes(),
                }];
                res.send(200, &hs, &data).await?;
            }
            ("HEAD", Some(key)) => {
                let stored = lock(&self.objects)
                    .get(&(bucket, key))
                    .cloned()
                    .ok_or_else(not_found)?;
                let hs = [Header {
                    name: "ETag",
                    value: stored.etag.as_bytes(),
                }];
                res.start(200, &hs, BodyKind::Length(stored.data.len() as u64))?;
                res.finish().await?;
            }
            ("DELETE", Some(key)) => {
                if let Some(upload) = query.get("uploadId") {
                    lock(&self.uploads).remove(upload);
                } else {
                    lock(&self.objects).remove(&(bucket, key));
                }
                res.send(204, &[], b"").await?;
            }
            _ => return Err(S3Error::new(S3ErrorCode::NotImplemented)),
        }
        Ok(())
    }

    async fn render_error<S: Stream>(
        &self,
        _req: Option<&RequestHead<'_, '_>>,
        error: &S3Error,
        res: &mut ResponseWriter<'_, S>,
    ) -> Result<(), ferry_core::http::HttpError> {
        let mut out = Vec::new();
        ferry_core::s3::xml::ErrorResponse::from_error(error, None, None).write_xml(&mut out);
        res.send(error.status(), &[], &out).await
    }
}

/// Start the fake on `rt` at a free port.
pub async fn start_fake<R: Runtime>(rt: &R, faults: Faults) -> (ServerHandle, Arc<FakeS3<R>>) {
    let fake = Arc::new(FakeS3::new(rt.clone(), faults));
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let mut config = ServerConfig::default();
    if let Some(idle) = fake.faults.idle_close {
        config.idle_timeout = idle;
    }
    let server = ferry_core::http::server::serve(rt, addr, config, fake.clone())
        .await
        .expect("bind the fake S3 server");
    (server, fake)
}
