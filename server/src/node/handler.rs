//! The storage node behind the S3 front: its operations over the local store.

use std::sync::Arc;

use ferry_core::http::head::RequestHead;
use ferry_core::rt::{Runtime, Stream};
use ferry_core::s3::bucket_config::{
    CORS, ENCRYPTION, LIFECYCLE, OWNERSHIP_CONTROLS, PUBLIC_ACCESS_BLOCK,
};
use ferry_core::s3::listing::ObjectListing;
use ferry_core::s3::request::{Endpoint, S3Request};
use ferry_core::s3::xml::CorsConfiguration;
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};

use super::context::{Cx, NodeApi};
use super::{
    access, acl, attributes, buckets, expected_owner, lock, multipart, objects, policy, post,
    settings, tagging,
};
use crate::front::origin::Origin;
use crate::front::{Op, S3Api};
use crate::store::BucketSetting;

impl<R: Runtime> S3Api for NodeApi<R> {
    const SERVER: &'static str = "node";

    /// The cluster's seal (`access::sealed`).
    fn admit(&self, head: &RequestHead<'_, '_>, s3: &S3Request<'_>) -> S3Result<bool> {
        access::sealed(self, head, s3)
    }

    /// Run the operation `s3` names.
    async fn dispatch<S: Stream>(&self, op: Op<'_, '_, '_, S>) -> S3Result<()> {
        let Op { req, s3, body, res } = op;
        // The front answers these itself (`S3Api::TAKES_REFUSED` is false for the node).
        if let Some(e) = &s3.refused {
            return Err(e.clone());
        }
        let peer = res.peer().map(|a| a.ip());
        let origin = Origin::of(
            peer,
            res.tls_version(),
            res.is_secure(),
            req.head.headers,
            req.sealed,
        );
        let cx = &Cx::new(self, req, origin)?;
        access::authorize(cx, s3)?;
        expected_owner::check(cx, s3)?;
        let bucket = s3.bucket_str();
        let key = s3.key_str();
        match &s3.endpoint {
            Endpoint::ListBuckets(q) => buckets::list_buckets(cx, res, q).await,
            Endpoint::CreateBucket => buckets::create(cx, body, res, bucket).await,
            Endpoint::DeleteBucket => buckets::delete(cx, res, bucket).await,
            Endpoint::BucketFence {
                token,
                lease_seconds,
            } => buckets::fence(cx, res, bucket, token, *lease_seconds).await,
            Endpoint::HeadBucket => buckets::head(cx, res, bucket).await,
            Endpoint::GetBucketLocation => buckets::location(cx, res, bucket).await,
            Endpoint::GetBucketVersioning => buckets::versioning(cx, res, bucket).await,
            Endpoint::PutBucketVersioning { .. } => {
                buckets::put_versioning(cx, body, res, bucket).await
            }
            Endpoint::ListObjectVersions(q) => buckets::list_versions(cx, res, bucket, q).await,
            Endpoint::PutBucketPolicy => policy::put(cx, body, res, bucket).await,
            Endpoint::GetBucketPolicy => policy::get(cx, res, bucket).await,
            Endpoint::DeleteBucketPolicy => policy::delete(cx, res, bucket).await,
            Endpoint::GetBucketPolicyStatus => policy::status(cx, res, bucket).await,
            Endpoint::GetPublicAccessBlock => {
                settings::get(cx, res, bucket, &PUBLIC_ACCESS_BLOCK).await
            }
            Endpoint::PutPublicAccessBlock { content_md5 } => {
                settings::put(cx, body, res, bucket, *content_md5, &PUBLIC_ACCESS_BLOCK).await
            }
            Endpoint::DeletePublicAccessBlock => {
                settings::delete(cx, res, bucket, &PUBLIC_ACCESS_BLOCK).await
            }
            Endpoint::GetBucketOwnershipControls => {
                settings::get(cx, res, bucket, &OWNERSHIP_CONTROLS).await
            }
            Endpoint::PutBucketOwnershipControls { content_md5 } => {
                let check = |doc: &[u8]| acl::check_ownership(cx, bucket, doc);
                let doc = &OWNERSHIP_CONTROLS;
                settings::put_checked(cx, body, res, bucket, *content_md5, doc, check).await
            }
            Endpoint::DeleteBucketOwnershipControls => {
                settings::delete(cx, res, bucket, &OWNERSHIP_CONTROLS).await
            }
            Endpoint::GetBucketAcl => acl::get_bucket(cx, res, bucket).await,
            Endpoint::GetObjectAcl { version_id } => {
                acl::get_object(cx, res, bucket, key, *version_id).await
            }
            Endpoint::PutObjectAcl { version_id } => {
                acl::put_object(cx, body, res, bucket, key, *version_id).await
            }
            Endpoint::PutBucketAcl => acl::put_bucket(cx, body, res, bucket).await,
            Endpoint::GetBucketCors => settings::get(cx, res, bucket, &CORS).await,
            Endpoint::PutBucketCors { content_md5 } => {
                settings::put(cx, body, res, bucket, *content_md5, &CORS).await
            }
            Endpoint::DeleteBucketCors => settings::delete(cx, res, bucket, &CORS).await,
            Endpoint::GetBucketTagging => tagging::get_bucket(cx, res, bucket).await,
            Endpoint::PutBucketTagging => tagging::put_bucket(cx, body, res, bucket).await,
            Endpoint::DeleteBucketTagging => tagging::delete_bucket(cx, res, bucket).await,
            Endpoint::GetObjectLockConfiguration => lock::get_configuration(cx, res, bucket).await,
            Endpoint::PutObjectLockConfiguration => {
                lock::put_configuration(cx, body, res, bucket).await
            }
            Endpoint::GetObjectRetention { version_id } => {
                lock::get_retention(cx, res, bucket, key, *version_id).await
            }
            Endpoint::PutObjectRetention { version_id } => {
                lock::put_retention(cx, body, res, bucket, key, *version_id).await
            }
            Endpoint::GetObjectLegalHold { version_id } => {
                lock::get_legal_hold(cx, res, bucket, key, *version_id).await
            }
            Endpoint::PutObjectLegalHold { version_id } => {
                lock::put_legal_hold(cx, body, res, bucket, key, *version_id).await
            }
            Endpoint::GetBucketLifecycleConfiguration => {
                settings::get(cx, res, bucket, &LIFECYCLE).await
            }
            Endpoint::PutBucketLifecycleConfiguration { content_md5 } => {
                settings::put(cx, body, res, bucket, *content_md5, &LIFECYCLE).await
            }
            Endpoint::DeleteBucketLifecycle => settings::delete(cx, res, bucket, &LIFECYCLE).await,
            Endpoint::GetBucketEncryption => settings::get(cx, res, bucket, &ENCRYPTION).await,
            Endpoint::PutBucketEncryption { content_md5 } => {
                settings::put(cx, body, res, bucket, *content_md5, &ENCRYPTION).await
            }
            Endpoint::DeleteBucketEncryption => {
                settings::delete(cx, res, bucket, &ENCRYPTION).await
            }
            Endpoint::ListObjects(q) => {
                buckets::list_objects(cx, res, bucket, ObjectListing::V1(q)).await
            }
            Endpoint::ListObjectsV2(q) => {
                buckets::list_objects(cx, res, bucket, ObjectListing::V2(q)).await
            }
            Endpoint::ListMultipartUploads(q) => multipart::list_uploads(cx, res, bucket, q).await,
            Endpoint::PostObject => post::post_object(cx, body, res, bucket).await,
            Endpoint::DeleteObjects { content_md5 } => {
                objects::delete_objects(cx, body, res, bucket, *content_md5).await
            }
            Endpoint::GetObject {
                range,
                conditions,
                part_number,
                response_overrides,
                version_id,
            } => {
                let read = objects::Read {
                    range: *range,
                    conditions,
                    part_number: *part_number,
                    overrides: Some(response_overrides),
                    head: false,
                    version: *version_id,
                };
                objects::get(cx, res, bucket, key, read).await
            }
            Endpoint::HeadObject {
                range,
                conditions,
                part_number,
                version_id,
            } => {
                let read = objects::Read {
                    range: *range,
                    conditions,
                    part_number: *part_number,
                    overrides: None,
                    head: true,
                    version: *version_id,
                };
                objects::get(cx, res, bucket, key, read).await
            }
            Endpoint::GetObjectAttributes {
                attributes: wanted,
                max_parts,
                part_number_marker,
                version_id,
            } => {
                let q = attributes::AttributesQuery {
                    attributes: *wanted,
                    max_parts: *max_parts,
                    part_number_marker: *part_number_marker,
                };
                attributes::get(cx, res, bucket, key, q, *version_id).await
            }
            // Content-MD5 is checked with the body, by its verifier.
            Endpoint::PutObject { content_md5: _ } => {
                objects::put(cx, body, res, bucket, key).await
            }
            Endpoint::CopyObject {
                source,
                metadata_directive,
                source_conditions,
            } => {
                objects::copy(
                    cx,
                    res,
                    bucket,
                    key,
                    source,
                    *metadata_directive,
                    source_conditions,
                )
                .await
            }
            Endpoint::DeleteObject { version_id } => {
                objects::delete(cx, res, bucket, key, *version_id).await
            }
            Endpoint::GetObjectTagging { version_id } => {
                tagging::get_object(cx, res, bucket, key, *version_id).await
            }
            Endpoint::PutObjectTagging { version_id } => {
                tagging::put_object(cx, body, res, bucket, key, *version_id).await
            }
            Endpoint::DeleteObjectTagging { version_id } => {
                tagging::delete_object(cx, res, bucket, key, *version_id).await
            }
            Endpoint::CreateMultipartUpload => multipart::create(cx, res, bucket, key).await,
            // Content-MD5 is checked with the body, by its verifier.
            Endpoint::UploadPart(q) => multipart::upload_part(cx, body, res, bucket, key, q).await,
            Endpoint::UploadPartCopy(q) => {
                multipart::upload_part_copy(cx, res, bucket, key, q).await
            }
            Endpoint::CompleteMultipartUpload { upload_id } => {
                multipart::complete(cx, body, res, bucket, key, upload_id).await
            }
            Endpoint::AbortMultipartUpload { upload_id } => {
                multipart::abort(cx, res, bucket, key, upload_id).await
            }
            Endpoint::ListParts(q) => multipart::list_parts(cx, res, bucket, key, q).await,
            Endpoint::Unknown { .. } => Err(S3Error::with_message(
                S3ErrorCode::NotImplemented,
                "This subresource is not implemented",
            )),
        }
    }

    /// The stored configuration (checked when it was put), parsed. Looked up where the node
    /// looks objects up (`NodeConfig::open_inline`): a short read, cheaper than a trip to the
    /// blocking pool.
    async fn bucket_cors(&self, bucket: &str) -> S3Result<Option<Arc<CorsConfiguration>>> {
        let doc = if self.open_inline {
            self.store.bucket_setting(bucket, BucketSetting::Cors)?
        } else {
            let (store, b) = (self.store.clone(), bucket.to_owned());
            self.rt
                .unblock(move || store.bucket_setting(&b, BucketSetting::Cors))
                .await?
        };
        doc.map(|d| CorsConfiguration::parse_xml(&d).map(Arc::new))
            .transpose()
    }

    fn readiness(&self) -> (bool, String) {
        super::metrics::readiness(&self.store)
    }

    /// Unhealthy while the store cannot write, so that a proxy's probe marks the node down.
    fn health(&self) -> Result<(), String> {
        match super::metrics::readiness(&self.store) {
            (true, _) => Ok(()),
            (false, why) => Err(why),
        }
    }

    fn render_metrics(&self, out: &mut String, prefix: &str) {
        super::metrics::render(&self.store, out, prefix);
        super::metrics::render_reads(&self.sendfile_bytes, &self.cached_read_bytes, out, prefix);
        self.lifecycle.render(out, prefix);
    }
}
