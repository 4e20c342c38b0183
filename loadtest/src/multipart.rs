//! Multipart uploads: initiate, a window of part uploads in flight at once (each timed on its
//! own), complete, and abort when any step fails.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use ferry_core::http::EMPTY_HEADER;
use ferry_core::md5::{Md5Digest, MultipartETag};
use ferry_core::s3::uri::encode;
use ferry_core::s3::xml::{
    CompleteMultipartUploadResult, ErrorResponse, InitiateMultipartUploadResult,
};
use ferry_net::NetRuntime;

use crate::body::Body;
use crate::client::{
    MAX_ERROR_BODY, OpResult, S3Client, Target, check_etag, object_path, on_conn, read_all, success,
};
use crate::digests::BATCH;
use crate::error::{OpError, VerifyError};

/// One UploadPart of a multipart upload, with its own timing.
#[derive(Debug, Clone)]
pub struct PartResult {
    /// What the request did.
    pub result: OpResult,
    /// When it started and ended (runtime clock).
    pub started: Duration,
    /// When it ended.
    pub ended: Duration,
}

impl<R: NetRuntime> S3Client<R> {
    /// Upload object `id` (`parts` parts of `part_size` bytes) as `key` with at most
    /// `in_flight` parts at once; the whole upload's result and each part's.
    pub async fn multipart_upload(
        self: &Arc<Self>,
        bucket: &str,
        key: &str,
        id: u64,
        part_size: u64,
        parts: u32,
        in_flight: usize,
    ) -> (OpResult, Vec<PartResult>) {
        let ep = self.endpoints.pick();
        let path: Arc<str> = object_path(bucket, key).into();
        let mut res = OpResult {
            endpoint: ep,
            ..OpResult::default()
        };
        let mut results = Vec::with_capacity(parts as usize);
        let upload_id = match self.initiate(ep, &path, &mut res).await {
            Ok(u) => u,
            Err(e) => {
                res.error = Some(e);
                return (res, results);
            }
        };
        let upload: Arc<str> = upload_id.into();
        // A window of spawned part uploads, awaited oldest first.
        let mut window = VecDeque::new();
        let mut etags: Vec<(u32, String, Option<Md5Digest>)> = Vec::new();
        let mut failed = None;
        let mut next_part = 1u32;
        // With `--md5`, parts before this one have their digests hashed ahead.
        let mut hashed_to = 1u32;
        while next_part <= parts || !window.is_empty() {
            while next_part <= parts && window.len() < in_flight.max(1) && failed.is_none() {
                let (c, p, u) = (self.clone(), path.clone(), upload.clone());
                let n = next_part;
                let offset = u64::from(n - 1) * part_size;
                if self.options().md5 && n >= hashed_to {
                    hashed_to = parts.min(n + BATCH as u32 - 1) + 1;
                    let ranges: Vec<_> = (n..hashed_to)
                        .map(|k| (id, u64::from(k - 1) * part_size, part_size))
                        .collect();
                    let t = crate::stats::CpuMark::now();
                    self.digests.hash_ahead(&self.fill, &ranges);
                    res.costs.hash_ns += crate::stats::elapsed_ns(t);
                }
                window.push_back(self.runtime().spawn(async move {
                    c.upload_part(ep, &p, &u, n, (id, offset, part_size)).await
                }));
                next_part += 1;
            }
            let Some(handle) = window.pop_front() else {
                break;
            };
            let (part, n, etag, md5) = handle.await;
            // The part's own costs are reported with the part (`OpKind::Part`), not again here.
            match (&part.result.error, etag) {
                (None, Some(etag)) => etags.push((n, etag, md5)),
                (Some(e), _) => failed = failed.or(Some(e.clone())),
                (None, None) => {
                    failed = failed.or(Some(OpError::Verify(VerifyError::Document(
                        "UploadPart answered without an ETag".into(),
                    ))));
                }
            }
            results.push(part);
        }
        let outcome = match failed {
            Some(e) => Err(e),
            None => {
                self.complete(ep, &path, key, &upload, &etags, &mut res)
                    .await
            }
        };
        match outcome {
            Ok(()) => res.bytes = part_size * u64::from(parts),
            Err(e) => {
                res.error = Some(e);
                let query = format!("uploadId={}", encode(&upload));
                let _ = self.simple("DELETE", &path, &query).await;
            }
        }
        (res, results)
    }

    async fn initiate(&self, ep: usize, path: &str, res: &mut OpResult) -> Result<String, OpError> {
        on_conn!(self, ep, res, |conn| -> String {
            self.send(
                conn,
                ep,
                Target {
                    method: "POST",
                    path,
                    query: "uploads=",
                },
                Body::Empty,
                &mut res.costs,
            )
            .await?;
            let mut hs = [EMPTY_HEADER; 32];
            let mut resp = success(conn.response(&mut hs).await?).await?;
            let doc = read_all(&mut resp.body, MAX_ERROR_BODY).await?;
            let init = InitiateMultipartUploadResult::parse_xml(&doc)
                .map_err(|e| OpError::Verify(VerifyError::Document(e.message.to_string())))?;
            Ok(init.upload_id.to_string())
        })
    }

    /// Part `n` of `upload`: the bytes `(object id, offset, length)` of the payload, as the
    /// digests key them.
    async fn upload_part(
        &self,
        ep: usize,
        path: &str,
        upload: &str,
        n: u32,
        (id, offset, len): (u64, u64, u64),
    ) -> (PartResult, u32, Option<String>, Option<Md5Digest>) {
        let started = self.runtime().now();
        let mut res = OpResult::default();
        let query = format!("partNumber={n}&uploadId={}", encode(upload));
        let out = on_conn!(
            self,
            ep,
            res,
            |conn| -> (Option<String>, Option<Md5Digest>) {
                let body = Body::Object {
                    obj: self.payload(id),
                    offset,
                    len,
                };
                let md5 = self
                    .send(
                        conn,
                        ep,
                        Target {
                            method: "PUT",
                            path,
                            query: &query,
                        },
                        body,
                        &mut res.costs,
                    )
                    .await?;
                let etag = self.write_response(conn, &mut res, path, md5).await?;
                Ok((etag, md5))
            }
        );
        let (etag, md5) = match out {
            Ok((etag, md5)) => {
                res.bytes = len;
                (etag, md5)
            }
            Err(e) => {
                res.error = Some(e);
                (None, None)
            }
        };
        let ended = self.runtime().now();
        let part = PartResult {
            result: res,
            started,
            ended,
        };
        (part, n, etag, md5)
    }

    async fn complete(
        &self,
        ep: usize,
        path: &str,
        key: &str,
        upload: &str,
        etags: &[(u32, String, Option<Md5Digest>)],
        res: &mut OpResult,
    ) -> Result<(), OpError> {
        // Core parses this document (server side) but has no writer for it: a client-only need.
        let mut doc = String::from("<CompleteMultipartUpload>");
        for (n, etag, _) in etags {
            doc.push_str(&format!(
                "<Part><PartNumber>{n}</PartNumber><ETag>{}</ETag></Part>",
                etag.replace('&', "&amp;").replace('<', "&lt;")
            ));
        }
        doc.push_str("</CompleteMultipartUpload>");
        let query = format!("uploadId={}", encode(upload));
        let expected = etags
            .iter()
            .map(|(_, _, d)| *d)
            .collect::<Option<Vec<_>>>()
            .filter(|d| !d.is_empty())
            .map(|digests| {
                let mut m = MultipartETag::new();
                for d in &digests {
                    m.push_part(d);
                }
                m.finish()
            });
        on_conn!(self, ep, res, |conn| -> () {
            let body = Body::Bytes(doc.as_bytes());
            self.send(
                conn,
                ep,
                Target {
                    method: "POST",
                    path,
                    query: &query,
                },
                body,
                &mut res.costs,
            )
            .await?;
            let mut hs = [EMPTY_HEADER; 32];
            let resp = conn.response(&mut hs).await?;
            res.head_at = Some(self.runtime().now());
            let mut resp = success(resp).await?;
            let doc = read_all(&mut resp.body, MAX_ERROR_BODY).await?;
            // S3 may answer 200 and still fail the completion in the body.
            if let Ok(err) = ErrorResponse::parse_xml(&doc) {
                return Err(OpError::Http {
                    status: 200,
                    code: Some(err.code.to_string()),
                }
                .into());
            }
            let done = CompleteMultipartUploadResult::parse_xml(&doc)
                .map_err(|e| OpError::Verify(VerifyError::Document(e.message.to_string())))?;
            if let Some(want) = expected {
                check_etag(key, &want, Some(&done.etag))?;
            }
            Ok(())
        })
    }
}
