//! Object and bucket tagging: Put/Get/DeleteObjectTagging (the tags live in the object's
//! record, replaced by a metadata-only commit) and Put/Get/DeleteBucketTagging (a bucket
//! setting holding the `<Tagging>` document as Ferry writes it).

use std::borrow::Cow;

use ferry_core::http::server::{BodyReader, ResponseWriter};
use ferry_core::rt::{Runtime, Stream};
use ferry_core::s3::body::{BodyLimit, Checks};
use ferry_core::s3::tagging::{self, Tag, TagOwner};
use ferry_core::s3::xml::{MAX_TAGGING_BODY, Tagging};
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};

use super::access;
use super::context::Cx;
use super::response_headers::push_version;
use crate::front::Headers;
use crate::front::body::read_small;
use crate::store::{BucketSetting, VersionId};

/// Read and check a `<Tagging>` body against `owner`'s limits: its tags as owned pairs.
async fn read_tags<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    body: &mut BodyReader<'_, S>,
    owner: TagOwner,
) -> S3Result<Vec<(String, String)>> {
    let limit = BodyLimit::document(MAX_TAGGING_BODY as u64);
    let verifier = cx.front.body_verifier(body, Checks::All, limit)?;
    let (xml, _) = read_small(body, verifier).await?;
    let doc = Tagging::parse_xml(&xml)?;
    tagging::check(&doc.tags, owner)?;
    Ok(doc
        .tags
        .into_iter()
        .map(|t| (t.key.into_owned(), t.value.into_owned()))
        .collect())
}

/// The `<Tagging>` document of `tags`.
fn tagging_xml(tags: &[(String, String)]) -> Vec<u8> {
    let doc = Tagging {
        tags: tags
            .iter()
            .map(|(k, v)| Tag {
                key: Cow::Borrowed(k),
                value: Cow::Borrowed(v),
            })
            .collect(),
    };
    let mut xml = Vec::new();
    doc.write_xml(&mut xml);
    xml
}

/// GetObjectTagging: the object's tags (an empty `TagSet` when it has none).
pub(crate) async fn get_object<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
    key: &str,
    version: Option<VersionId>,
) -> S3Result<()> {
    let info = cx.head_version(bucket, key, version).await?;
    let xml = tagging_xml(&info.meta.tags);
    let mut h = Headers::new();
    push_version(&mut h, info.version_id);
    cx.front.send_xml(res, h, &xml).await
}

/// PutObjectTagging: replace the object's tags (data, ETag and modification time unchanged).
pub(crate) async fn put_object<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
    key: &str,
    version: Option<VersionId>,
) -> S3Result<()> {
    let tags = read_tags(cx, body, TagOwner::Object).await?;
    let facts = access::tag_facts(tags.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    access::document_facts(cx, bucket, key, version, "s3:PutObjectTagging", facts)?;
    let (b, k) = (bucket.to_owned(), key.to_owned());
    cx.unblock(move |store| store.put_object_tagging(&b, &k, version, tags))
        .await?;
    let mut h = Headers::new();
    push_version(&mut h, version);
    cx.front.send(res, 200, h, &[]).await
}

/// DeleteObjectTagging: remove the object's tags; 204.
pub(crate) async fn delete_object<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
    key: &str,
    version: Option<VersionId>,
) -> S3Result<()> {
    let (b, k) = (bucket.to_owned(), key.to_owned());
    cx.unblock(move |store| store.put_object_tagging(&b, &k, version, Vec::new()))
        .await?;
    let mut h = Headers::new();
    push_version(&mut h, version);
    cx.front.send(res, 204, h, &[]).await
}

/// GetBucketTagging: the bucket's tags; `NoSuchTagSet` (404) when it has none, as AWS answers.
pub(crate) async fn get_bucket<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
) -> S3Result<()> {
    let b = bucket.to_owned();
    let xml = cx
        .unblock(move |store| store.bucket_setting(&b, BucketSetting::Tagging))
        .await?
        .ok_or_else(|| S3Error::new(S3ErrorCode::NoSuchTagSet))?;
    cx.front.send_xml(res, Headers::new(), &xml).await
}

/// PutBucketTagging: replace the bucket's tags (an empty `TagSet` removes them); 204, as AWS.
pub(crate) async fn put_bucket<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
) -> S3Result<()> {
    let tags = read_tags(cx, body, TagOwner::Bucket).await?;
    // Stored as the document GetBucketTagging answers, written by us: checked and canonical.
    let xml = (!tags.is_empty()).then(|| tagging_xml(&tags));
    let b = bucket.to_owned();
    cx.unblock(move |store| store.set_bucket_setting(&b, BucketSetting::Tagging, xml.as_deref()))
        .await?;
    cx.front.send(res, 204, Headers::new(), &[]).await
}

/// DeleteBucketTagging: remove the bucket's tags (none is fine); 204.
pub(crate) async fn delete_bucket<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
) -> S3Result<()> {
    let b = bucket.to_owned();
    cx.unblock(move |store| store.set_bucket_setting(&b, BucketSetting::Tagging, None))
        .await?;
    cx.front.send(res, 204, Headers::new(), &[]).await
}
