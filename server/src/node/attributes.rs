//! GetObjectAttributes: an object's ETag, checksum, parts, storage class and size, without its
//! bytes.

use std::borrow::Cow;

use ferry_core::http::server::ResponseWriter;
use ferry_core::rt::{Runtime, Stream};
use ferry_core::s3::S3Result;
use ferry_core::s3::checksum::ChecksumAlgorithm;
use ferry_core::s3::request::ObjectAttributes;
use ferry_core::s3::xml::{
    Checksums, GetObjectAttributesResponse, ObjectAttributesParts, ObjectPartsPage,
};

use super::context::Cx;
use super::response_headers::checksum_type;
use crate::front::Headers;
use crate::store::{CustomerKey, HeadOptions, ObjectInfo, VersionId};

/// What GetObjectAttributes asks for: the attributes and the page of `ObjectParts`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AttributesQuery {
    pub attributes: ObjectAttributes,
    pub max_parts: u32,
    pub part_number_marker: u32,
}

/// GetObjectAttributes.
pub(crate) async fn get<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
    key: &str,
    q: AttributesQuery,
    version: Option<VersionId>,
) -> S3Result<()> {
    let (b, k) = (bucket.to_owned(), key.to_owned());
    // An SSE-C object's attributes need its key, as its HEAD does.
    let customer = super::sse::read_key(cx)?;
    let info = if cx.node.open_inline {
        cx.node
            .store
            .head_object(&b, &k, head_options(version, customer.as_ref()))
    } else {
        cx.unblock(move |store| store.head_object(&b, &k, head_options(version, customer.as_ref())))
            .await
    };
    let info = match info {
        Ok(info) => info,
        Err(mut error) => {
            // Absent: 404 or 403, as the caller may list the bucket.
            let mut extra = Headers::new();
            super::access::hide_absence(cx, bucket, &mut error, &mut extra);
            return cx.front.send_error(res, &error, extra).await;
        }
    };
    let doc = response(&info, q);
    let mut xml = Vec::new();
    doc.write_xml(&mut xml);
    let mut h = Headers::new();
    h.push("Last-Modified", info.last_modified.http().to_string());
    super::response_headers::push_version(&mut h, info.version_id);
    cx.front.send_xml(res, h, &xml).await
}

/// The document for `info`: only the attributes asked for.
fn response(info: &ObjectInfo, q: AttributesQuery) -> GetObjectAttributesResponse<'_> {
    let a = q.attributes;
    let meta = &info.meta;
    let checksum = meta.checksums.first().and_then(|c| {
        let algorithm = ChecksumAlgorithm::parse(&c.algorithm)?;
        // A composite value is written `base64-N` in GET's headers; here without the count.
        let value = match &meta.multipart_checksum {
            Some(m) if !m.full_object => c.value.rsplit_once('-').map_or(&*c.value, |(v, _)| v),
            _ => &c.value,
        };
        Some((
            Checksums::one(algorithm, value),
            Cow::Borrowed(checksum_type(meta).as_str()),
        ))
    });
    let object_parts = info.parts_count().map(|total| ObjectAttributesParts {
        total_parts_count: total,
        page: meta
            .multipart_checksum
            .as_ref()
            .filter(|m| !m.parts.is_empty())
            .and_then(|m| {
                let algorithm = ChecksumAlgorithm::parse(&m.algorithm)?;
                Some(parts_page(info, &m.parts, algorithm, q))
            }),
    });
    GetObjectAttributesResponse {
        etag: a
            .etag
            .then(|| Cow::Borrowed(info.etag.as_str().trim_matches('"'))),
        checksum: checksum.filter(|_| a.checksum),
        object_parts: object_parts.filter(|_| a.object_parts),
        storage_class: a.storage_class.then_some(Cow::Borrowed("STANDARD")),
        object_size: a.object_size.then_some(info.size),
    }
}

/// The parts after `part_number_marker`, at most `max_parts`, with their sizes and checksums.
fn parts_page<'a>(
    info: &ObjectInfo,
    parts: &'a [(u32, String)],
    algorithm: ChecksumAlgorithm,
    q: AttributesQuery,
) -> ObjectPartsPage<'a> {
    let max = q.max_parts as usize;
    let mut after = parts
        .iter()
        .zip(&info.part_sizes)
        .filter(|((n, _), _)| *n > q.part_number_marker);
    let page: Vec<(u32, u64, Checksums<'a>)> = after
        .by_ref()
        .take(max)
        .map(|((n, sum), size)| (*n, *size, Checksums::one(algorithm, sum.as_str())))
        .collect();
    let is_truncated = after.next().is_some();
    ObjectPartsPage {
        part_number_marker: q.part_number_marker,
        // As S3 does, the last part listed, truncated or not.
        next_part_number_marker: page.last().map(|p| p.0),
        max_parts: q.max_parts,
        is_truncated,
        parts: page,
    }
}

/// A client's HEAD of `version` with the SSE-C key it came with (checked as a GET's).
fn head_options(version: Option<VersionId>, customer: Option<&CustomerKey>) -> HeadOptions<'_> {
    HeadOptions {
        version,
        check_key: true,
        customer,
    }
}
