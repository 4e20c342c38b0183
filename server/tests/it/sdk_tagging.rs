//! Object and bucket tagging through the AWS SDK for Rust, on a node and through the proxy,
//! both runtimes: Put/Get/DeleteObjectTagging, `x-amz-tagging` on PutObject, CopyObject (with
//! the tagging directive, copies between nodes included) and CreateMultipartUpload,
//! `x-amz-tagging-count` on GET and HEAD, Put/Get/DeleteBucketTagging, AWS's limits, and boto3.

use aws_sdk_s3::Client;
use aws_sdk_s3::types::{
    CompletedMultipartUpload, CompletedPart, MetadataDirective, Tag, Tagging, TaggingDirective,
};

use crate::support::http::Client as RawClient;
use crate::support::sdk::{Target, TestNode, assert_code, show};

on_every_target!(
    object_tags_round_trip,
    object_tagging_keeps_data_and_validators,
    object_tagging_errors,
    copy_tagging_directive,
    multipart_upload_gets_its_tags,
    object_tag_limits,
    bucket_tagging,
    bucket_tag_limits,
    malformed_tagging_documents,
    boto3_tags_as_aws_does,
);

fn tag(k: &str, v: &str) -> Tag {
    Tag::builder().key(k).value(v).build().expect("tag")
}

fn tagging(tags: &[(&str, &str)]) -> Tagging {
    Tagging::builder()
        .set_tag_set(Some(tags.iter().map(|(k, v)| tag(k, v)).collect()))
        .build()
        .expect("tagging")
}

fn pairs(tags: &[Tag]) -> Vec<(String, String)> {
    tags.iter()
        .map(|t| (t.key().to_owned(), t.value().to_owned()))
        .collect()
}

fn owned(tags: &[(&str, &str)]) -> Vec<(String, String)> {
    tags.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

async fn tags_of(c: &Client, bucket: &str, key: &str) -> Vec<(String, String)> {
    let out = c
        .get_object_tagging()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .unwrap_or_else(|e| panic!("get tagging {bucket}/{key}: {}", show(&e)));
    pairs(out.tag_set())
}

async fn put_tags(c: &Client, bucket: &str, key: &str, tags: &[(&str, &str)]) {
    c.put_object_tagging()
        .bucket(bucket)
        .key(key)
        .tagging(tagging(tags))
        .send()
        .await
        .unwrap_or_else(|e| panic!("put tagging {bucket}/{key}: {}", show(&e)));
}

/// `x-amz-tagging-count` as GET and HEAD report it.
async fn counts(n: &TestNode, bucket: &str, key: &str) -> (Option<i32>, Option<i32>) {
    let get = n
        .client
        .get_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .unwrap_or_else(|e| panic!("get {bucket}/{key}: {}", show(&e)));
    (get.tag_count(), n.head(bucket, key).await.tag_count())
}

async fn object_tags_round_trip(target: Target) {
    let n = TestNode::start(target);
    n.bucket("tags").await;
    n.client
        .put_object()
        .bucket("tags")
        .key("k")
        .tagging("project=blue%20sky&team=a+b&empty=")
        .body(b"tagged".to_vec().into())
        .send()
        .await
        .unwrap_or_else(|e| panic!("put: {}", show(&e)));
    let want = owned(&[("project", "blue sky"), ("team", "a b"), ("empty", "")]);
    assert_eq!(tags_of(&n.client, "tags", "k").await, want);
    assert_eq!(counts(&n, "tags", "k").await, (Some(3), Some(3)));

    // Replaced whole, then removed.
    put_tags(
        &n.client,
        "tags",
        "k",
        &[("é", "ünïcode value"), ("x", "1")],
    )
    .await;
    assert_eq!(
        tags_of(&n.client, "tags", "k").await,
        owned(&[("é", "ünïcode value"), ("x", "1")])
    );
    assert_eq!(counts(&n, "tags", "k").await, (Some(2), Some(2)));
    n.client
        .delete_object_tagging()
        .bucket("tags")
        .key("k")
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete tagging: {}", show(&e)));
    assert!(tags_of(&n.client, "tags", "k").await.is_empty());
    assert_eq!(counts(&n, "tags", "k").await, (None, None));
    // An empty TagSet removes them too; deleting none is fine.
    put_tags(&n.client, "tags", "k", &[("a", "b")]).await;
    put_tags(&n.client, "tags", "k", &[]).await;
    assert!(tags_of(&n.client, "tags", "k").await.is_empty());
    n.client
        .delete_object_tagging()
        .bucket("tags")
        .key("k")
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete tagging again: {}", show(&e)));

    // An object put again without tags has none; its tags do not outlive it.
    put_tags(&n.client, "tags", "k", &[("a", "b")]).await;
    n.put("tags", "k", b"new".to_vec()).await;
    assert!(tags_of(&n.client, "tags", "k").await.is_empty());
    // And tags survive a restart.
    put_tags(&n.client, "tags", "k", &[("kept", "yes")]).await;
    let mut n = n;
    n.restart();
    assert_eq!(
        tags_of(&n.client, "tags", "k").await,
        owned(&[("kept", "yes")])
    );
}

async fn object_tagging_keeps_data_and_validators(target: Target) {
    let n = TestNode::start(target);
    n.bucket("keep").await;
    let etag = n.put("keep", "k", b"the bytes".to_vec()).await;
    let before = n.head("keep", "k").await;
    put_tags(&n.client, "keep", "k", &[("a", "1")]).await;
    let after = n.head("keep", "k").await;
    assert_eq!(after.e_tag(), Some(etag.as_str()));
    assert_eq!(after.last_modified(), before.last_modified());
    assert_eq!(after.content_length(), Some(9));
    assert_eq!(n.get("keep", "k").await, b"the bytes");
    // `versionId=null` names the only version there is.
    let out = n
        .client
        .get_object_tagging()
        .bucket("keep")
        .key("k")
        .version_id("null")
        .send()
        .await
        .unwrap_or_else(|e| panic!("get tagging of version null: {}", show(&e)));
    assert_eq!(pairs(out.tag_set()), owned(&[("a", "1")]));
    n.client
        .put_object_tagging()
        .bucket("keep")
        .key("k")
        .version_id("null")
        .tagging(tagging(&[("b", "2")]))
        .send()
        .await
        .unwrap_or_else(|e| panic!("put tagging of version null: {}", show(&e)));
    assert_eq!(tags_of(&n.client, "keep", "k").await, owned(&[("b", "2")]));
}

async fn object_tagging_errors(target: Target) {
    let n = TestNode::start(target);
    n.bucket("errs").await;
    n.put("errs", "k", b"x".to_vec()).await;
    let c = &n.client;
    assert_code(
        c.get_object_tagging()
            .bucket("errs")
            .key("missing")
            .send()
            .await,
        404,
        "NoSuchKey",
    );
    assert_code(
        c.put_object_tagging()
            .bucket("errs")
            .key("missing")
            .tagging(tagging(&[("a", "b")]))
            .send()
            .await,
        404,
        "NoSuchKey",
    );
    assert_code(
        c.delete_object_tagging()
            .bucket("errs")
            .key("missing")
            .send()
            .await,
        404,
        "NoSuchKey",
    );
    assert_code(
        c.get_object_tagging()
            .bucket("nobucket")
            .key("k")
            .send()
            .await,
        404,
        "NoSuchBucket",
    );
    // Buckets are unversioned: another version id is refused as on GetObject.
    assert_code(
        c.get_object_tagging()
            .bucket("errs")
            .key("k")
            .version_id("3HL4kqtJlcpXroDTDmJ")
            .send()
            .await,
        400,
        "InvalidArgument",
    );
    assert_code(
        c.put_object_tagging()
            .bucket("errs")
            .key("k")
            .version_id("3HL4kqtJlcpXroDTDmJ")
            .tagging(tagging(&[("a", "b")]))
            .send()
            .await,
        400,
        "InvalidArgument",
    );
    assert_code(
        c.delete_object_tagging()
            .bucket("errs")
            .key("k")
            .version_id("3HL4kqtJlcpXroDTDmJ")
            .send()
            .await,
        400,
        "InvalidArgument",
    );
    assert!(tags_of(c, "errs", "k").await.is_empty());
}

/// Destination keys in one bucket; behind the proxy, some live on another node than the
/// source, so their copies go through the proxy.
const COPY_KEYS: [&str; 6] = ["d0", "d1", "d2", "d3", "d4", "d5"];

async fn copy_tagging_directive(target: Target) {
    let n = TestNode::start(target);
    n.bucket("copies").await;
    n.client
        .put_object()
        .bucket("copies")
        .key("src")
        .tagging("colour=red&size=10")
        .body(b"copy me".to_vec().into())
        .send()
        .await
        .unwrap_or_else(|e| panic!("put: {}", show(&e)));
    let source = owned(&[("colour", "red"), ("size", "10")]);
    if target.proxy {
        let across = COPY_KEYS
            .iter()
            .filter(|k| n.apart(("copies", "src"), ("copies", k)) == Some(true));
        let near = COPY_KEYS
            .iter()
            .filter(|k| n.apart(("copies", "src"), ("copies", k)) == Some(false));
        assert!(
            across.count() > 0 && near.count() > 0,
            "copies on one node and between nodes"
        );
    }
    for key in COPY_KEYS {
        // COPY, the default: the source's tags, whatever the request says.
        n.copy("copies", key, "copies/src").await;
        assert_eq!(tags_of(&n.client, "copies", key).await, source, "{key}");
        n.client
            .copy_object()
            .bucket("copies")
            .key(key)
            .copy_source("copies/src")
            .tagging_directive(TaggingDirective::Copy)
            .tagging("ignored=yes")
            .send()
            .await
            .unwrap_or_else(|e| panic!("copy {key}: {}", show(&e)));
        assert_eq!(tags_of(&n.client, "copies", key).await, source, "{key}");
        // REPLACE: the request's tags, or none.
        n.client
            .copy_object()
            .bucket("copies")
            .key(key)
            .copy_source("copies/src")
            .tagging_directive(TaggingDirective::Replace)
            .tagging("new=tag%2Bplus")
            .send()
            .await
            .unwrap_or_else(|e| panic!("copy {key}: {}", show(&e)));
        assert_eq!(
            tags_of(&n.client, "copies", key).await,
            owned(&[("new", "tag+plus")]),
            "{key}"
        );
        assert_eq!(counts(&n, "copies", key).await, (Some(1), Some(1)), "{key}");
        n.client
            .copy_object()
            .bucket("copies")
            .key(key)
            .copy_source("copies/src")
            .tagging_directive(TaggingDirective::Replace)
            .send()
            .await
            .unwrap_or_else(|e| panic!("copy {key}: {}", show(&e)));
        assert!(tags_of(&n.client, "copies", key).await.is_empty(), "{key}");
        // The metadata directive does not decide the tags.
        n.client
            .copy_object()
            .bucket("copies")
            .key(key)
            .copy_source("copies/src")
            .metadata_directive(MetadataDirective::Replace)
            .content_type("text/plain")
            .send()
            .await
            .unwrap_or_else(|e| panic!("copy {key}: {}", show(&e)));
        assert_eq!(tags_of(&n.client, "copies", key).await, source, "{key}");
        assert_eq!(n.get("copies", key).await, b"copy me");
        // Bad tags in a REPLACE are refused and change nothing.
        assert_code(
            n.client
                .copy_object()
                .bucket("copies")
                .key(key)
                .copy_source("copies/src")
                .tagging_directive(TaggingDirective::Replace)
                .tagging("aws:reserved=1")
                .send()
                .await,
            400,
            "InvalidTag",
        );
        assert_eq!(tags_of(&n.client, "copies", key).await, source, "{key}");
    }
    // A copy of an untagged source has no tags.
    n.put("copies", "plain", b"p".to_vec()).await;
    for key in COPY_KEYS {
        n.copy("copies", key, "copies/plain").await;
        assert!(tags_of(&n.client, "copies", key).await.is_empty(), "{key}");
    }
    // An unknown directive is refused.
    let mut raw = RawClient::connect(n.addr);
    let r = raw.request(
        "PUT",
        "/copies/d0",
        &[
            ("x-amz-copy-source", "copies/src"),
            ("x-amz-tagging-directive", "MERGE"),
        ],
        b"",
    );
    r.expect_error(400, "InvalidArgument");
}

async fn multipart_upload_gets_its_tags(target: Target) {
    let n = TestNode::start(target);
    n.bucket("multi").await;
    let c = &n.client;
    let up = c
        .create_multipart_upload()
        .bucket("multi")
        .key("big")
        .tagging("stage=upload&n=1")
        .send()
        .await
        .unwrap_or_else(|e| panic!("create: {}", show(&e)));
    let id = up.upload_id().expect("upload id").to_owned();
    let part = c
        .upload_part()
        .bucket("multi")
        .key("big")
        .upload_id(&id)
        .part_number(1)
        .body(b"only part".to_vec().into())
        .send()
        .await
        .unwrap_or_else(|e| panic!("part: {}", show(&e)));
    // The object does not exist before the upload completes.
    assert_code(
        c.get_object_tagging()
            .bucket("multi")
            .key("big")
            .send()
            .await,
        404,
        "NoSuchKey",
    );
    c.complete_multipart_upload()
        .bucket("multi")
        .key("big")
        .upload_id(&id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .parts(
                    CompletedPart::builder()
                        .part_number(1)
                        .e_tag(part.e_tag().expect("etag"))
                        .build(),
                )
                .build(),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("complete: {}", show(&e)));
    assert_eq!(
        tags_of(c, "multi", "big").await,
        owned(&[("stage", "upload"), ("n", "1")])
    );
    assert_eq!(counts(&n, "multi", "big").await, (Some(2), Some(2)));
    // Bad tags refuse the upload before it starts.
    assert_code(
        c.create_multipart_upload()
            .bucket("multi")
            .key("bad")
            .tagging("a=1&a=2")
            .send()
            .await,
        400,
        "InvalidTag",
    );
    let uploads = c
        .list_multipart_uploads()
        .bucket("multi")
        .send()
        .await
        .unwrap_or_else(|e| panic!("list uploads: {}", show(&e)));
    assert!(uploads.uploads().is_empty());
}

async fn object_tag_limits(target: Target) {
    let n = TestNode::start(target);
    n.bucket("lim").await;
    n.put("lim", "k", b"x".to_vec()).await;
    let c = &n.client;
    let ten: Vec<(String, String)> = (0..10)
        .map(|i| (format!("k{i}"), format!("v{i}")))
        .collect();
    let refs: Vec<(&str, &str)> = ten.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    put_tags(c, "lim", "k", &refs).await;
    assert_eq!(tags_of(c, "lim", "k").await, ten);
    let key128 = "é".repeat(128);
    let value256 = "ü".repeat(256);
    put_tags(c, "lim", "k", &[(&key128, &value256)]).await;
    assert_eq!(
        tags_of(c, "lim", "k").await,
        vec![(key128.clone(), value256.clone())]
    );
    let eleven: Vec<(String, String)> = (0..11).map(|i| (format!("k{i}"), "v".into())).collect();
    let eleven_refs: Vec<(&str, &str)> = eleven
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let key129 = "k".repeat(129);
    let value257 = "v".repeat(257);
    let bad: Vec<Vec<(&str, &str)>> = vec![
        eleven_refs,
        vec![(&key129, "v")],
        vec![("k", &value257)],
        vec![("dup", "1"), ("dup", "2")],
        vec![("aws:created", "me")],
        vec![("", "empty key")],
        vec![("semi;colon", "v")],
    ];
    for tags in &bad {
        assert_code(
            c.put_object_tagging()
                .bucket("lim")
                .key("k")
                .tagging(tagging(tags))
                .send()
                .await,
            400,
            "InvalidTag",
        );
        // Nothing changed.
        assert_eq!(
            tags_of(c, "lim", "k").await,
            vec![(key128.clone(), value256.clone())]
        );
    }
    // The same limits on the header of a PUT, which then stores nothing.
    let header_eleven: String = (0..11)
        .map(|i| format!("k{i}=v"))
        .collect::<Vec<_>>()
        .join("&");
    for header in [
        header_eleven.as_str(),
        "a=1&a=2",
        "aws:x=1",
        &format!("{key129}=v"),
        &format!("k={value257}"),
    ] {
        assert_code(
            c.put_object()
                .bucket("lim")
                .key("refused")
                .tagging(header)
                .body(b"no".to_vec().into())
                .send()
                .await,
            400,
            "InvalidTag",
        );
    }
    // A header that is not URL-encoded UTF-8: AWS's InvalidArgument.
    assert_code(
        c.put_object()
            .bucket("lim")
            .key("refused")
            .tagging("a=%zz")
            .body(b"no".to_vec().into())
            .send()
            .await,
        400,
        "InvalidArgument",
    );
    assert_code(
        c.head_object().bucket("lim").key("refused").send().await,
        404,
        "NotFound",
    );
}

async fn bucket_tagging(target: Target) {
    let n = TestNode::start(target);
    n.bucket("btags").await;
    let c = &n.client;
    let get = || c.get_bucket_tagging().bucket("btags").send();
    assert_code(get().await, 404, "NoSuchTagSet");
    c.put_bucket_tagging()
        .bucket("btags")
        .tagging(tagging(&[("cost-center", "42"), ("owner", "ops team")]))
        .send()
        .await
        .unwrap_or_else(|e| panic!("put bucket tagging: {}", show(&e)));
    let out = get().await.unwrap_or_else(|e| panic!("get: {}", show(&e)));
    assert_eq!(
        pairs(out.tag_set()),
        owned(&[("cost-center", "42"), ("owner", "ops team")])
    );
    // Replaced whole.
    c.put_bucket_tagging()
        .bucket("btags")
        .tagging(tagging(&[("only", "this")]))
        .send()
        .await
        .unwrap_or_else(|e| panic!("put bucket tagging: {}", show(&e)));
    let out = get().await.unwrap_or_else(|e| panic!("get: {}", show(&e)));
    assert_eq!(pairs(out.tag_set()), owned(&[("only", "this")]));
    // Object tags and bucket tags are apart.
    n.put("btags", "k", b"x".to_vec()).await;
    assert!(tags_of(c, "btags", "k").await.is_empty());
    assert_eq!(counts(&n, "btags", "k").await, (None, None));
    c.delete_bucket_tagging()
        .bucket("btags")
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete bucket tagging: {}", show(&e)));
    assert_code(get().await, 404, "NoSuchTagSet");
    c.delete_bucket_tagging()
        .bucket("btags")
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete bucket tagging again: {}", show(&e)));
    // A bucket's tags go with it.
    c.put_bucket_tagging()
        .bucket("btags")
        .tagging(tagging(&[("gone", "soon")]))
        .send()
        .await
        .unwrap_or_else(|e| panic!("put bucket tagging: {}", show(&e)));
    c.delete_object()
        .bucket("btags")
        .key("k")
        .send()
        .await
        .expect("delete");
    c.delete_bucket()
        .bucket("btags")
        .send()
        .await
        .expect("delete bucket");
    n.bucket("btags").await;
    assert_code(get().await, 404, "NoSuchTagSet");
    // Missing buckets.
    assert_code(
        c.get_bucket_tagging().bucket("nobucket").send().await,
        404,
        "NoSuchBucket",
    );
    assert_code(
        c.put_bucket_tagging()
            .bucket("nobucket")
            .tagging(tagging(&[("a", "b")]))
            .send()
            .await,
        404,
        "NoSuchBucket",
    );
    assert_code(
        c.delete_bucket_tagging().bucket("nobucket").send().await,
        404,
        "NoSuchBucket",
    );
}

async fn bucket_tag_limits(target: Target) {
    let n = TestNode::start(target);
    n.bucket("btl").await;
    let c = &n.client;
    let fifty: Vec<(String, String)> = (0..50)
        .map(|i| (format!("k{i:02}"), format!("{i}")))
        .collect();
    let refs: Vec<(&str, &str)> = fifty
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    c.put_bucket_tagging()
        .bucket("btl")
        .tagging(tagging(&refs))
        .send()
        .await
        .unwrap_or_else(|e| panic!("put 50 tags: {}", show(&e)));
    let out = c
        .get_bucket_tagging()
        .bucket("btl")
        .send()
        .await
        .unwrap_or_else(|e| panic!("get: {}", show(&e)));
    assert_eq!(pairs(out.tag_set()), fifty);
    let mut fifty_one = refs.clone();
    fifty_one.push(("k50", "50"));
    let key129 = "k".repeat(129);
    let value257 = "v".repeat(257);
    for tags in [
        fifty_one,
        vec![(key129.as_str(), "v")],
        vec![("k", value257.as_str())],
        vec![("dup", "1"), ("dup", "2")],
        vec![("aws:x", "1")],
    ] {
        assert_code(
            c.put_bucket_tagging()
                .bucket("btl")
                .tagging(tagging(&tags))
                .send()
                .await,
            400,
            "InvalidTag",
        );
    }
    let out = c
        .get_bucket_tagging()
        .bucket("btl")
        .send()
        .await
        .unwrap_or_else(|e| panic!("get: {}", show(&e)));
    assert_eq!(pairs(out.tag_set()), fifty, "a refused put changed nothing");
}

async fn malformed_tagging_documents(target: Target) {
    let n = TestNode::start(target);
    n.bucket("mal").await;
    n.put("mal", "k", b"x".to_vec()).await;
    let mut c = RawClient::connect(n.addr);
    for path in ["/mal/k?tagging", "/mal?tagging"] {
        for body in [
            &b"<Tagging><TagSet><Tag><Key>a</Key>"[..],
            b"not xml",
            b"<Tagging></Tagging>",
            b"<Tagging><TagSet><Tag><Key>k</Key></Tag></TagSet></Tagging>",
            b"<Other/>",
            b"",
        ] {
            let r = c.request("PUT", path, &[], body);
            r.expect_error(400, "MalformedXML");
        }
    }
    assert!(tags_of(&n.client, "mal", "k").await.is_empty());
    assert_code(
        n.client.get_bucket_tagging().bucket("mal").send().await,
        404,
        "NoSuchTagSet",
    );
    // Escaped markup decodes, and `<` is then no tag character: refused.
    let doc = b"<Tagging xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><TagSet><Tag>\
        <Key>raw</Key><Value>&lt;no&gt;</Value></Tag></TagSet></Tagging>";
    for path in ["/mal/k?tagging", "/mal?tagging"] {
        c.request("PUT", path, &[], doc)
            .expect_error(400, "InvalidTag");
    }
    let doc =
        b"<Tagging><TagSet><Tag><Key>raw</Key><Value>a&amp;b</Value></Tag></TagSet></Tagging>";
    c.request("PUT", "/mal?tagging", &[], doc)
        .expect_error(400, "InvalidTag");
    let doc = b"<Tagging><TagSet><Tag><Key>raw</Key><Value>v w</Value></Tag></TagSet></Tagging>";
    let r = c.request("PUT", "/mal/k?tagging", &[], doc);
    assert_eq!(r.status, 200, "{}", r.text());
    let r = c.request("PUT", "/mal?tagging", &[], doc);
    assert_eq!(r.status, 204, "{}", r.text());
    for path in ["/mal/k?tagging", "/mal?tagging"] {
        let r = c.get(path);
        assert_eq!(r.status, 200, "{}", r.text());
        assert!(
            r.text()
                .contains("<TagSet><Tag><Key>raw</Key><Value>v w</Value></Tag></TagSet>"),
            "{}",
            r.text()
        );
    }
}

async fn boto3_tags_as_aws_does(target: Target) {
    let n = TestNode::start(target);
    let script = r#"
import sys
import boto3
from botocore.config import Config
ep, ak, sk = sys.argv[1:4]
c = boto3.client("s3", endpoint_url=ep, aws_access_key_id=ak, aws_secret_access_key=sk,
                 region_name="us-east-1",
                 config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
c.create_bucket(Bucket="boto")
c.put_object(Bucket="boto", Key="k", Body=b"x", Tagging="team=blue&note=a%20b")
r = c.get_object_tagging(Bucket="boto", Key="k")
assert r["TagSet"] == [{"Key": "team", "Value": "blue"}, {"Key": "note", "Value": "a b"}], r
assert c.head_object(Bucket="boto", Key="k")["ResponseMetadata"]["HTTPHeaders"]["x-amz-tagging-count"] == "2"
assert c.get_object(Bucket="boto", Key="k")["TagCount"] == 2
c.put_object_tagging(Bucket="boto", Key="k", Tagging={"TagSet": [{"Key": "x", "Value": "1"}]})
assert c.get_object_tagging(Bucket="boto", Key="k")["TagSet"] == [{"Key": "x", "Value": "1"}]
c.delete_object_tagging(Bucket="boto", Key="k")
assert c.get_object_tagging(Bucket="boto", Key="k")["TagSet"] == []
assert "TagCount" not in c.get_object(Bucket="boto", Key="k")
try:
    c.put_object_tagging(Bucket="boto", Key="k",
                         Tagging={"TagSet": [{"Key": "k%d" % i, "Value": "v"} for i in range(11)]})
except c.exceptions.ClientError as e:
    assert e.response["Error"]["Code"] == "InvalidTag", e.response
    assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 400, e.response
else:
    raise SystemExit("11 tags accepted")
try:
    c.get_bucket_tagging(Bucket="boto")
except c.exceptions.ClientError as e:
    assert e.response["Error"]["Code"] == "NoSuchTagSet", e.response
    assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 404, e.response
else:
    raise SystemExit("tags on a new bucket")
c.put_bucket_tagging(Bucket="boto", Tagging={"TagSet": [{"Key": "env", "Value": "test"}]})
assert c.get_bucket_tagging(Bucket="boto")["TagSet"] == [{"Key": "env", "Value": "test"}]
c.delete_bucket_tagging(Bucket="boto")
try:
    c.get_bucket_tagging(Bucket="boto")
except c.exceptions.ClientError as e:
    assert e.response["Error"]["Code"] == "NoSuchTagSet", e.response
else:
    raise SystemExit("tags after delete")
print("ok")
"#;
    let endpoint = format!("http://{}", n.addr);
    crate::support::sdk::run_python(
        script,
        vec![
            endpoint,
            crate::support::ACCESS_KEY.to_owned(),
            crate::support::SECRET_KEY.to_owned(),
        ],
    )
    .await;
}
