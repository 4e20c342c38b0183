//! Bucket tagging through the proxy: every backend holds the bucket, so Put and Delete go to
//! all of them (Delete: `buckets::delete_everywhere`; GetBucketTagging reads any one, and
//! object tagging goes by key, in `handler`).

use ferry_core::http::server::{BodyReader, ResponseWriter};
use ferry_core::rt::{Runtime, Stream};
use ferry_core::s3::S3Result;
use ferry_core::s3::bucket_config::ConfigKind;
use ferry_core::s3::request::S3Request;
use ferry_core::s3::tagging::{self, TagOwner};
use ferry_core::s3::xml::{MAX_TAGGING_BODY, Tagging};

use super::buckets::{read_small, relay_everywhere, require_all_up};
use super::context::Cx;
use super::forward::Call;
use super::reissue::Leave;

/// PutBucketTagging on every backend: the document is checked here first (a bad one changes
/// nothing anywhere), then sent as Ferry writes it, all or nothing
/// (`buckets::relay_everywhere`). Every backend must be up.
pub(crate) async fn put_bucket<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    s3: &S3Request<'_>,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
) -> S3Result<()> {
    let (xml, _) = read_small(cx, body, MAX_TAGGING_BODY).await?;
    let doc = Tagging::parse_xml(&xml)?;
    tagging::check(&doc.tags, TagOwner::Bucket)?;
    let mut out = Vec::new();
    doc.write_xml(&mut out);
    require_all_up(cx)?;
    let sub = ConfigKind::Tagging.subresource();
    let mut call = Call::put_setting(s3.bucket_str(), sub, &out, None);
    call.carry(cx, Leave::Nothing);
    relay_everywhere(cx, &call, res).await
}
