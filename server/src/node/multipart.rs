//! Multipart uploads: create, upload part (and part copy), complete, abort, list parts and
//! uploads.
//!
//! An upload id may come tagged as a proxy gives it to its clients (`<tag>~<our id>`,
//! `ferry_core::s3::upload_id`): every step uses the id after the tag, so that a proxy passes
//! its clients' requests on unchanged (their signature covers the id). Answers carry our own id.

use std::borrow::Cow;

use ferry_core::http::find_header_str;
use ferry_core::http::server::{BodyReader, ResponseWriter};
use ferry_core::md5::ETag;
use ferry_core::rt::{Runtime, Stream};
use ferry_core::s3::body::{BodyLimit, Checks};
use ferry_core::s3::checksum::{self, ChecksumAlgorithm, ChecksumType};
use ferry_core::s3::header;
use ferry_core::s3::listing::{ListCommon, ListPartsQuery, ListUploadsQuery};
use ferry_core::s3::request::{UploadPartCopyQuery, UploadPartQuery};
use ferry_core::s3::xml::{
    Checksums, CompleteMultipartUpload, CompleteMultipartUploadResult, CopyKind, CopyResult,
    InitiateMultipartUploadResult, ListMultipartUploadsResult, ListPartsResult, MAX_COMPLETE_BODY,
    PartEntry, UploadEntry,
};
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result, upload_id as tagged, uri};

use super::body::stream_into;
use super::buckets::owner;
use super::context::Cx;
use super::objects::{OwnedConditions, stored_checksum};
use super::request_headers::{object_meta, write_conditions};
use super::response_headers::push_checksum;
use crate::front::Headers;
use crate::front::body::{read_small, require_length};
use crate::store::{
    self, Checksum, CompleteOptions, CompletedPart, ExpectedChecksum, MultipartChecksum, PartOf,
    UploadsQuery,
};

/// The storage class of every upload.
const STANDARD: &str = "STANDARD";

/// CreateMultipartUpload: the object's metadata is taken now.
pub(crate) async fn create<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
    key: &str,
) -> S3Result<()> {
    let mut meta = object_meta(cx.headers)?;
    meta.acl = super::acl::request_object_acl(cx, bucket)?;
    super::lock::apply(
        &mut meta,
        super::lock::for_write(cx, bucket, cx.headers, false)?,
    );
    let checksum = checksum::multipart_checksum(cx.headers)?;
    meta.multipart_checksum = checksum.map(|(algorithm, kind)| MultipartChecksum {
        algorithm: algorithm.as_str().to_owned(),
        full_object: kind == ChecksumType::FullObject,
        parts: Vec::new(),
    });
    let encryption = super::sse::write_encryption(cx, cx.headers, bucket)?;
    let info = encryption.as_ref().map(store::EncryptWith::info);
    let (b, k) = (bucket.to_owned(), key.to_owned());
    let upload_id = cx
        .unblock(move |store| store.create_multipart_upload(&b, &k, meta, encryption.as_ref()))
        .await?;
    let doc = InitiateMultipartUploadResult {
        bucket: Cow::Borrowed(bucket),
        key: Cow::Borrowed(key),
        upload_id: Cow::Borrowed(&upload_id),
    };
    let mut xml = Vec::new();
    doc.write_xml(&mut xml);
    let mut h = Headers::new();
    if let Some((algorithm, kind)) = checksum {
        h.push(header::X_AMZ_CHECKSUM_ALGORITHM, algorithm.as_str());
        h.push(header::X_AMZ_CHECKSUM_TYPE, kind.as_str());
    }
    super::sse::push_encryption(&mut h, info.as_ref());
    super::sse::push_kms_context(&mut h, info.as_ref());
    cx.front.send_xml(res, h, &xml).await
}

/// The checksum an UploadPart into an upload with `spec` must carry: the upload's algorithm
/// (AWS's `InvalidRequest` for another, or for none when the upload is `COMPOSITE`); a part of a
/// `FULL_OBJECT` upload that carries none gets it computed. Returns the algorithm to compute.
fn part_checksum(
    headers: &[ferry_core::http::Header<'_>],
    spec: &MultipartChecksum,
) -> S3Result<Option<ChecksumAlgorithm>> {
    let want = ChecksumAlgorithm::parse(&spec.algorithm)
        .ok_or_else(|| S3Error::with_message(S3ErrorCode::InternalError, "stored algorithm"))?;
    let carried = checksum::carried_algorithm(headers)?;
    match carried {
        Some(a) if a == want => Ok(None),
        None if spec.full_object => Ok(Some(want)),
        other => Err(S3Error::with_message(
            S3ErrorCode::InvalidRequest,
            format!(
                "Checksum Type mismatch occurred, expected checksum Type: {}, actual checksum Type: {}",
                want.lower_name(),
                other.map_or("null", ChecksumAlgorithm::lower_name)
            ),
        )),
    }
}

/// UploadPart: streamed like PutObject, into the upload's part.
pub(crate) async fn upload_part<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
    key: &str,
    q: &UploadPartQuery<'_>,
) -> S3Result<()> {
    let part_number = q.part_number;
    require_length(body)?;
    let mut verifier = cx
        .front
        .body_verifier(body, Checks::All, BodyLimit::object())?;
    let customer = super::sse::read_key(cx)?;
    let (b, k, u) = (
        bucket.to_owned(),
        key.to_owned(),
        tagged::own(&q.upload_id).to_owned(),
    );
    let writer = cx
        .unblock(move |store| {
            let part = PartOf {
                upload_id: &u,
                part_number: u32::from(part_number),
                customer: customer.as_ref(),
            };
            store.part_writer(&b, &k, part)
        })
        .await?;
    let encryption = writer.encryption();
    if let Some(spec) = writer.upload_checksum()
        && let Some(algorithm) = part_checksum(cx.headers, spec)?
    {
        verifier = verifier.with_computed_checksum(algorithm);
    }
    let (mut writer, done) = stream_into(cx.rt(), body, verifier, writer).await?;
    if let Some(c) = &done.checksum {
        writer.set_checksum(stored_checksum(c));
    }
    let part = cx.unblock(move |_| writer.commit()).await?;
    let mut h = Headers::new();
    h.push("ETag", part.etag.as_str().to_owned());
    if let Some(c) = &done.checksum {
        push_checksum(&mut h, &stored_checksum(c));
    }
    super::sse::push_encryption(&mut h, encryption.as_ref());
    cx.front.send(res, 200, h, &[]).await
}

/// UploadPartCopy: the part is (a range of) another object.
pub(crate) async fn upload_part_copy<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
    key: &str,
    copy: &UploadPartCopyQuery<'_>,
) -> S3Result<()> {
    let source_conditions = OwnedConditions::new(&copy.source_conditions);
    let (sb, sk, sv) = (
        copy.source.bucket.to_string(),
        copy.source.key.to_string(),
        copy.source.version_id,
    );
    let (b, k) = (bucket.to_owned(), key.to_owned());
    let u = tagged::own(&copy.upload_id).to_owned();
    let range = copy.source_range.map(|r| (r.first, r.last));
    let part_number = u32::from(copy.part_number);
    let customer = super::sse::read_key(cx)?;
    let source_key = super::sse::copy_source_key(cx)?;
    let ((part, encryption), source_version) = cx
        .unblock(move |store| {
            let src = store::CopySource {
                bucket: &sb,
                key: &sk,
                range,
                version_id: sv,
                customer: source_key.as_ref(),
            };
            let mut source_version = None;
            let part = PartOf {
                upload_id: &u,
                part_number,
                customer: customer.as_ref(),
            };
            let part = store.upload_part_copy(&b, &k, part, src, |info| {
                source_version = info.version_id;
                source_conditions.check_copy_source(info)
            })?;
            Ok::<_, S3Error>((part, source_version))
        })
        .await?;
    let doc = CopyResult {
        kind: CopyKind::Part,
        etag: Cow::Borrowed(part.etag.as_str()),
        last_modified_unix: part.last_modified.to_unix(),
        checksum_type: None,
        checksums: super::objects::copy_checksums(part.checksum.as_ref()),
    };
    let mut xml = Vec::new();
    doc.write_xml(&mut xml);
    let mut h = Headers::new();
    if let Some(v) = source_version {
        h.push(header::X_AMZ_COPY_SOURCE_VERSION_ID, v.to_string());
    }
    super::sse::push_encryption(&mut h, encryption.as_ref());
    cx.front.send_xml(res, h, &xml).await
}

/// The parts a CompleteMultipartUpload names: `InvalidPart` for an ETag that is not one.
fn completed_parts(request: &CompleteMultipartUpload<'_>) -> S3Result<Vec<CompletedPart>> {
    request
        .parts
        .iter()
        .map(|p| {
            let etag = ETag::parse(&p.etag).ok_or_else(|| {
                S3Error::with_message(
                    S3ErrorCode::InvalidPart,
                    format!("Part {} has an invalid ETag", p.part_number),
                )
            })?;
            Ok(CompletedPart {
                part_number: u32::from(p.part_number),
                etag,
                checksums: p
                    .checksums
                    .algorithms()
                    .map(|a| Checksum {
                        algorithm: a.as_str().to_owned(),
                        value: p.checksums.get(a).unwrap_or_default().to_owned(),
                    })
                    .collect(),
            })
        })
        .collect()
}

/// CompleteMultipartUpload, with `If-None-Match: *` / `If-Match` as for PutObject.
pub(crate) async fn complete<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
    key: &str,
    upload_id: &str,
) -> S3Result<()> {
    let mut conditions = write_conditions(cx.headers)?;
    conditions.placed = super::access::placement(cx)?;
    let limit = BodyLimit::document(MAX_COMPLETE_BODY as u64);
    // Its x-amz-checksum-* are the object's checksum, checked by the store.
    let verifier = cx
        .front
        .body_verifier(body, Checks::AllButChecksums, limit)?;
    let (xml, _) = read_small(body, verifier).await?;
    let request = CompleteMultipartUpload::parse_xml(&xml)?;
    let parts = match completed_parts(&request) {
        Ok(parts) => parts,
        Err(e) => {
            // An unknown upload is `NoSuchUpload` whatever its part list, as AWS answers.
            let (b, k, id) = (bucket.to_owned(), key.to_owned(), upload_id.to_owned());
            cx.unblock(move |store| store.check_upload(&b, &k, tagged::own(&id)))
                .await?;
            return Err(e);
        }
    };
    let expected = expected_object_checksum(cx.headers)?;
    let customer = super::sse::read_key(cx)?;
    let (b, k, u) = (
        bucket.to_owned(),
        key.to_owned(),
        tagged::own(upload_id).to_owned(),
    );
    let done = cx
        .unblock(move |store| {
            let opts = CompleteOptions {
                conditions,
                expected,
                customer,
            };
            store.complete_multipart_upload(&b, &k, &u, &parts, opts)
        })
        .await?;
    let put = done.put;
    // The object's URL as the client addressed it: `BUCKET.DOMAIN/key` or `HOST/BUCKET/key`.
    let location = if cx.front.virtual_hosted {
        format!("http://{}/{}", cx.front.host(), uri::encode_path(key))
    } else {
        format!(
            "http://{}/{}/{}",
            cx.front.host(),
            uri::encode(bucket),
            uri::encode_path(key)
        )
    };
    let doc = CompleteMultipartUploadResult {
        location: Cow::Owned(location),
        bucket: Cow::Borrowed(bucket),
        key: Cow::Borrowed(key),
        etag: Cow::Borrowed(put.etag.as_str()),
        checksums: done
            .checksum
            .as_ref()
            .and_then(|c| {
                Some(Checksums::one(
                    ChecksumAlgorithm::parse(&c.algorithm)?,
                    &c.value,
                ))
            })
            .unwrap_or_default(),
        checksum_type: done.checksum.as_ref().map(|_| {
            let kind = if done.full_object {
                ChecksumType::FullObject
            } else {
                ChecksumType::Composite
            };
            Cow::Borrowed(kind.as_str())
        }),
    };
    let mut out = Vec::new();
    doc.write_xml(&mut out);
    let mut h = Headers::new();
    super::response_headers::push_version(&mut h, put.version_id);
    super::sse::push_encryption(&mut h, done.encryption.as_ref());
    super::lifecycle::expiration_of_write(cx, bucket, key, &put, &mut h);
    cx.front.send_xml(res, h, &out).await
}

/// The object checksum a CompleteMultipartUpload gives in `x-amz-checksum-*`, as sent (a
/// composite one ends in `-N`), and its `x-amz-checksum-type`: the store checks them against
/// the upload and the checksum it makes.
fn expected_object_checksum(
    headers: &[ferry_core::http::Header<'_>],
) -> S3Result<ExpectedChecksum> {
    let checksum = headers.iter().find_map(|h| {
        let algorithm = ChecksumAlgorithm::from_header_name(h.name)?;
        Some(Checksum {
            algorithm: algorithm.as_str().to_owned(),
            value: std::str::from_utf8(h.value).ok()?.trim().to_owned(),
        })
    });
    let full_object = match find_header_str(headers, header::X_AMZ_CHECKSUM_TYPE) {
        None => None,
        Some(v) => match ChecksumType::parse(v) {
            Some(t) => Some(t == ChecksumType::FullObject),
            None => {
                return Err(S3Error::with_message(
                    S3ErrorCode::InvalidRequest,
                    "Value for x-amz-checksum-type header is invalid.",
                ));
            }
        },
    };
    Ok(ExpectedChecksum {
        checksum,
        full_object,
    })
}

/// AbortMultipartUpload: 204; `NoSuchUpload` if it is not in progress.
pub(crate) async fn abort<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
    key: &str,
    upload_id: &str,
) -> S3Result<()> {
    let (b, k, u) = (
        bucket.to_owned(),
        key.to_owned(),
        tagged::own(upload_id).to_owned(),
    );
    cx.unblock(move |store| store.abort_multipart_upload(&b, &k, &u))
        .await?;
    cx.front.send(res, 204, Headers::new(), &[]).await
}

/// ListParts.
pub(crate) async fn list_parts<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
    key: &str,
    q: &ListPartsQuery<'_>,
) -> S3Result<()> {
    let ListPartsQuery {
        upload_id,
        max_parts,
        part_number_marker,
        encoding_type_url,
    } = q;
    let upload_id = tagged::own(upload_id);
    let marker = part_number_marker.unwrap_or(0);
    let max = *max_parts;
    let (b, k, u) = (bucket.to_owned(), key.to_owned(), upload_id.to_owned());
    let page = cx
        .unblock(move |store| store.list_parts(&b, &k, &u, marker, max as usize))
        .await?;
    let doc = ListPartsResult {
        bucket: Cow::Borrowed(bucket),
        key: Cow::Borrowed(key),
        upload_id: Cow::Borrowed(upload_id),
        initiator: Some(owner(cx, bucket)?),
        owner: Some(owner(cx, bucket)?),
        storage_class: Cow::Borrowed(STANDARD),
        part_number_marker: marker,
        next_part_number_marker: page.next_part_number_marker,
        max_parts: max,
        is_truncated: page.is_truncated,
        encoding_type_url: *encoding_type_url,
        parts: page
            .parts
            .iter()
            .map(|p| PartEntry {
                // Part numbers are 1..=10000 by construction.
                part_number: u16::try_from(p.part_number).unwrap_or(u16::MAX),
                last_modified_unix: p.last_modified.to_unix(),
                etag: Cow::Borrowed(p.etag.as_str()),
                size: p.size,
                checksums: p
                    .checksum
                    .as_ref()
                    .and_then(|c| {
                        Some(Checksums::one(
                            ChecksumAlgorithm::parse(&c.algorithm)?,
                            c.value.as_str(),
                        ))
                    })
                    .unwrap_or_default(),
            })
            .collect(),
        checksum_algorithm: page
            .checksum
            .as_ref()
            .map(|c| Cow::Borrowed(c.algorithm.as_str())),
        checksum_type: page.checksum.as_ref().map(|c| {
            Cow::Borrowed(if c.full_object {
                ChecksumType::FullObject.as_str()
            } else {
                ChecksumType::Composite.as_str()
            })
        }),
    };
    let mut xml = Vec::new();
    doc.write_xml(&mut xml);
    cx.front.send_xml(res, Headers::new(), &xml).await
}

/// ListMultipartUploads.
pub(crate) async fn list_uploads<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
    q: &ListUploadsQuery<'_>,
) -> S3Result<()> {
    let ListUploadsQuery {
        common:
            ListCommon {
                prefix,
                delimiter,
                max_keys: max_uploads,
                encoding_type_url,
            },
        key_marker,
        upload_id_marker,
    } = q;
    let upload_id_marker = upload_id_marker.as_deref().map(tagged::own);
    let owned = |v: &Option<Cow<'_, str>>| v.as_deref().map(str::to_owned);
    let (b, p, d, km, um) = (
        bucket.to_owned(),
        prefix.to_string(),
        owned(delimiter),
        owned(key_marker),
        upload_id_marker.map(str::to_owned),
    );
    let max = *max_uploads;
    let page = cx
        .unblock(move |store| {
            let q = UploadsQuery {
                prefix: &p,
                delimiter: d.as_deref(),
                key_marker: km.as_deref(),
                upload_id_marker: um.as_deref(),
                max_uploads: max as usize,
            };
            store.list_uploads(&b, &q)
        })
        .await?;
    let bucket_owner = owner(cx, bucket)?;
    let doc = ListMultipartUploadsResult {
        bucket: Cow::Borrowed(bucket),
        key_marker: Cow::Borrowed(key_marker.as_deref().unwrap_or_default()),
        upload_id_marker: Cow::Borrowed(upload_id_marker.unwrap_or_default()),
        next_key_marker: page.next_key_marker.as_deref().map(Cow::Borrowed),
        next_upload_id_marker: page.next_upload_id_marker.as_deref().map(Cow::Borrowed),
        prefix: Cow::Borrowed(prefix),
        delimiter: delimiter.as_deref().map(Cow::Borrowed),
        max_uploads: max,
        is_truncated: page.is_truncated,
        encoding_type_url: *encoding_type_url,
        uploads: page
            .uploads
            .iter()
            .map(|u| UploadEntry {
                key: Cow::Borrowed(&u.key),
                upload_id: Cow::Borrowed(&u.upload_id),
                initiator: Some(bucket_owner.clone()),
                owner: Some(bucket_owner.clone()),
                storage_class: Cow::Borrowed(STANDARD),
                initiated_unix: u.initiated.to_unix(),
            })
            .collect(),
        common_prefixes: page
            .common_prefixes
            .iter()
            .map(|p| Cow::Borrowed(p.as_str()))
            .collect(),
    };
    let mut xml = Vec::new();
    doc.write_xml(&mut xml);
    cx.front.send_xml(res, Headers::new(), &xml).await
}
