//! ListObjects (v1) and ListObjectsV2 through the AWS SDK for Rust, on a node and through the
//! proxy, on both runtimes, checked against a naive model of S3's listing: prefix, delimiter,
//! common prefixes, pagination with small page sizes across a few hundred keys, start-after,
//! encoding-type=url, fetch-owner; the wire forms AWS gives (ceph s3-tests' cases): `/` kept by
//! encoding-type=url, v1's prefix as sent, an empty continuation token starting over.

use aws_sdk_s3::Client;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::EncodingType;

use crate::support::sdk::{self, Target, TestNode, assert_code, decode_url, etag_of, show};

on_every_target!(
    v2_pages_match_the_model,
    v1_pages_match_the_model,
    start_after_and_prefix,
    object_fields_and_owner,
    encoding_type_url,
    listed_as_aws_lists_them,
    boto3_lists_as_aws_does,
);

/// One listing entry: an object key or a common prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    Key(String),
    Prefix(String),
}

/// The keys of the big listing tests: 300 in a three-level tree, and neighbours whose order
/// matters (`dir1` < `dir1/` < `dir10`, `a` < `a/` < `a/b`, non-ASCII after ASCII).
fn tree_keys() -> Vec<String> {
    let mut keys = Vec::new();
    for d in 0..10 {
        for s in 0..3 {
            for f in 0..10 {
                keys.push(format!("dir{d}/sub{s}/file{f:02}"));
            }
        }
    }
    for k in [
        "a",
        "a/",
        "a/b",
        "b.txt",
        "c d",
        "dir1",
        "dir10",
        "dir1-x/y",
        "z-last",
        "ünïcode/x",
        "ünïcode/y",
        "~tilde",
    ] {
        keys.push(k.to_owned());
    }
    keys
}

/// S3's listing as a model: keys after `after` that start with `prefix`, in UTF-8 byte order,
/// those with `delimiter` after the prefix rolled up into one common prefix each.
fn model(
    keys: &[String],
    prefix: &str,
    delimiter: Option<&str>,
    after: Option<&str>,
) -> Vec<Entry> {
    let mut sorted: Vec<&String> = keys.iter().collect();
    sorted.sort();
    let mut out: Vec<Entry> = Vec::new();
    for k in sorted {
        if !k.starts_with(prefix) || after.is_some_and(|a| k.as_str() <= a) {
            continue;
        }
        let rest = &k[prefix.len()..];
        let entry = match delimiter.and_then(|d| rest.find(d).map(|i| i + d.len())) {
            Some(end) => Entry::Prefix(k[..prefix.len() + end].to_owned()),
            None => Entry::Key(k.clone()),
        };
        if out.last() != Some(&entry) {
            out.push(entry);
        }
    }
    out
}

/// Put every key (its own name as the body), 16 at a time.
async fn put_all(client: &Client, bucket: &str, keys: &[String]) {
    let mut set = tokio::task::JoinSet::new();
    for chunk in keys.chunks(keys.len().div_ceil(16).max(1)) {
        let client = client.clone();
        let bucket = bucket.to_owned();
        let chunk = chunk.to_vec();
        set.spawn(async move {
            for k in chunk {
                client
                    .put_object()
                    .bucket(&bucket)
                    .key(&k)
                    .body(ByteStream::from(k.clone().into_bytes()))
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("put {k:?}: {}", show(&e)));
            }
        });
    }
    while let Some(r) = set.join_next().await {
        r.expect("put task");
    }
}

/// ListObjectsV2 page by page; returns the entries in order (per page: keys and common
/// prefixes merged in key order, as S3 interleaves them) and checks every page's fields.
async fn list_v2(
    client: &Client,
    bucket: &str,
    prefix: &str,
    delimiter: Option<&str>,
    max_keys: i32,
) -> Vec<Entry> {
    let mut all = Vec::new();
    let mut token: Option<String> = None;
    for page_no in 0.. {
        assert!(page_no < 10_000, "pagination does not end");
        let page = client
            .list_objects_v2()
            .bucket(bucket)
            .prefix(prefix)
            .set_delimiter(delimiter.map(str::to_owned))
            .max_keys(max_keys)
            .set_continuation_token(token.clone())
            .send()
            .await
            .unwrap_or_else(|e| panic!("list v2: {}", show(&e)));
        assert_eq!(page.name(), Some(bucket));
        assert_eq!(page.max_keys(), Some(max_keys));
        assert_eq!(page.continuation_token(), token.as_deref());
        if !prefix.is_empty() {
            assert_eq!(page.prefix(), Some(prefix));
        }
        assert_eq!(page.delimiter(), delimiter);
        let mut entries: Vec<Entry> = page
            .contents()
            .iter()
            .map(|o| Entry::Key(o.key().expect("key").to_owned()))
            .chain(
                page.common_prefixes()
                    .iter()
                    .map(|p| Entry::Prefix(p.prefix().expect("prefix").to_owned())),
            )
            .collect();
        entries.sort_by(|a, b| entry_name(a).cmp(entry_name(b)));
        let count = entries.len() as i32;
        assert_eq!(page.key_count(), Some(count));
        assert!(count <= max_keys, "{count} > {max_keys}");
        all.extend(entries);
        if page.is_truncated() == Some(true) {
            assert_eq!(count, max_keys, "a truncated page is full");
            let next = page.next_continuation_token().expect("next token");
            assert!(!next.is_empty());
            token = Some(next.to_owned());
        } else {
            assert_eq!(page.next_continuation_token(), None);
            break;
        }
    }
    all
}

/// ListObjects (v1) page by page with markers, like [`list_v2`].
async fn list_v1(
    client: &Client,
    bucket: &str,
    prefix: &str,
    delimiter: Option<&str>,
    max_keys: i32,
) -> Vec<Entry> {
    let mut all = Vec::new();
    let mut marker: Option<String> = None;
    for page_no in 0.. {
        assert!(page_no < 10_000, "pagination does not end");
        let page = client
            .list_objects()
            .bucket(bucket)
            .prefix(prefix)
            .set_delimiter(delimiter.map(str::to_owned))
            .max_keys(max_keys)
            .set_marker(marker.clone())
            .send()
            .await
            .unwrap_or_else(|e| panic!("list v1: {}", show(&e)));
        assert_eq!(page.name(), Some(bucket));
        assert_eq!(page.max_keys(), Some(max_keys));
        if let Some(m) = &marker {
            assert_eq!(page.marker(), Some(m.as_str()));
        }
        let mut entries: Vec<Entry> = page
            .contents()
            .iter()
            .map(|o| Entry::Key(o.key().expect("key").to_owned()))
            .chain(
                page.common_prefixes()
                    .iter()
                    .map(|p| Entry::Prefix(p.prefix().expect("prefix").to_owned())),
            )
            .collect();
        entries.sort_by(|a, b| entry_name(a).cmp(entry_name(b)));
        assert!(entries.len() as i32 <= max_keys);
        let last = entries.last().map(|e| entry_name(e).to_owned());
        all.extend(entries);
        if page.is_truncated() == Some(true) {
            // NextMarker comes with a delimiter; without one the last key is the marker.
            let next = match (delimiter, page.next_marker()) {
                (_, Some(m)) => m.to_owned(),
                (None, None) => last.clone().expect("a truncated page has entries"),
                (Some(_), None) => panic!("NextMarker missing with a delimiter"),
            };
            if let Some(l) = &last {
                assert_eq!(&next, l, "NextMarker is the last entry");
            }
            marker = Some(next);
        } else {
            break;
        }
    }
    all
}

fn entry_name(e: &Entry) -> &str {
    match e {
        Entry::Key(k) | Entry::Prefix(k) => k,
    }
}

async fn v2_pages_match_the_model(target: Target) {
    let n = TestNode::start(target);
    n.bucket("tree").await;
    let keys = tree_keys();
    put_all(&n.client, "tree", &keys).await;
    // (prefix, delimiter, page size)
    for (prefix, delimiter, max) in [
        ("", None, 7),
        ("", None, 1000),
        ("", Some("/"), 3),
        ("", Some("/"), 1),
        ("dir3/", Some("/"), 2),
        ("dir3/", None, 11),
        ("dir1", Some("/"), 2),
        ("dir", Some("sub1"), 4),
        ("a", Some("/"), 1),
        ("a/", Some("/"), 1),
        ("nothing-here/", Some("/"), 5),
        ("ünïcode/", None, 1),
    ] {
        let got = list_v2(&n.client, "tree", prefix, delimiter, max).await;
        let want = model(&keys, prefix, delimiter, None);
        assert_eq!(
            got, want,
            "prefix {prefix:?} delimiter {delimiter:?} max {max}"
        );
    }
    // The root with "/" has exactly these entries.
    let root = model(&keys, "", Some("/"), None);
    let names: Vec<&str> = root.iter().map(entry_name).collect();
    assert_eq!(
        names,
        [
            "a",
            "a/",
            "b.txt",
            "c d",
            "dir0/",
            "dir1",
            "dir1-x/",
            "dir1/",
            "dir10",
            "dir2/",
            "dir3/",
            "dir4/",
            "dir5/",
            "dir6/",
            "dir7/",
            "dir8/",
            "dir9/",
            "z-last",
            "~tilde",
            "ünïcode/",
        ]
    );
    // The SDK's paginator walks the same keys.
    let mut pages = n
        .client
        .list_objects_v2()
        .bucket("tree")
        .max_keys(50)
        .into_paginator()
        .send();
    let mut via_paginator = Vec::new();
    while let Some(page) = pages.next().await {
        let page = page.unwrap_or_else(|e| panic!("paginator: {}", show(&e)));
        via_paginator.extend(
            page.contents()
                .iter()
                .filter_map(|o| o.key().map(str::to_owned)),
        );
    }
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(via_paginator, sorted);
    // A continuation token that is not one the node issued is refused.
    assert_code(
        n.client
            .list_objects_v2()
            .bucket("tree")
            .continuation_token("not-a-token!")
            .send()
            .await,
        400,
        "InvalidArgument",
    );
}

async fn v1_pages_match_the_model(target: Target) {
    let n = TestNode::start(target);
    n.bucket("tree").await;
    let keys = tree_keys();
    put_all(&n.client, "tree", &keys).await;
    for (prefix, delimiter, max) in [
        ("", None, 9),
        ("", Some("/"), 4),
        ("dir5/", Some("/"), 1),
        ("dir", Some("/"), 3),
        ("dir2/sub2/", None, 3),
    ] {
        let got = list_v1(&n.client, "tree", prefix, delimiter, max).await;
        let want = model(&keys, prefix, delimiter, None);
        assert_eq!(
            got, want,
            "prefix {prefix:?} delimiter {delimiter:?} max {max}"
        );
    }
    // A marker starts strictly after it, even when it is not a key.
    let page = n
        .client
        .list_objects()
        .bucket("tree")
        .marker("dir9/sub2/file05")
        .send()
        .await
        .expect("list with marker");
    let got: Vec<&str> = page.contents().iter().filter_map(|o| o.key()).collect();
    let want = model(&keys, "", None, Some("dir9/sub2/file05"));
    let want: Vec<&str> = want.iter().map(entry_name).collect();
    assert_eq!(got, want);
    assert_eq!(page.is_truncated(), Some(false));
}

async fn start_after_and_prefix(target: Target) {
    let n = TestNode::start(target);
    n.bucket("tree").await;
    let keys = tree_keys();
    put_all(&n.client, "tree", &keys).await;
    for (prefix, after) in [
        ("", "dir4/sub1/file05"),
        ("", "dir4/sub1/file05x"),
        ("", "a/"),
        ("dir7/", "dir7/sub0/file09"),
        ("dir7/", "a"),
        ("", "zzzz"),
        ("", "ünïcode/x"),
    ] {
        let mut got = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let page = n
                .client
                .list_objects_v2()
                .bucket("tree")
                .prefix(prefix)
                .start_after(after)
                .max_keys(13)
                .set_continuation_token(token.clone())
                .send()
                .await
                .unwrap_or_else(|e| panic!("list start-after: {}", show(&e)));
            assert_eq!(page.start_after(), Some(after));
            got.extend(
                page.contents()
                    .iter()
                    .filter_map(|o| o.key().map(str::to_owned)),
            );
            match page.next_continuation_token() {
                Some(t) => token = Some(t.to_owned()),
                None => break,
            }
        }
        let want: Vec<String> = model(&keys, prefix, None, Some(after))
            .iter()
            .map(|e| entry_name(e).to_owned())
            .collect();
        assert_eq!(got, want, "prefix {prefix:?} start-after {after:?}");
    }
}

async fn object_fields_and_owner(target: Target) {
    let n = TestNode::start(target);
    n.bucket("fields").await;
    let bodies = [("one", 1usize), ("two", 2000), ("three", 0)];
    for (k, len) in bodies {
        n.put("fields", k, sdk::pattern(len, 3)).await;
    }
    let v2 = n
        .client
        .list_objects_v2()
        .bucket("fields")
        .send()
        .await
        .expect("list v2");
    assert_eq!(v2.is_truncated(), Some(false));
    assert_eq!(v2.key_count(), Some(3));
    let keys: Vec<&str> = v2.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(keys, ["one", "three", "two"]);
    for o in v2.contents() {
        let (_, len) = bodies
            .iter()
            .find(|(k, _)| Some(*k) == o.key())
            .expect("listed key was put");
        assert_eq!(o.size(), Some(*len as i64));
        assert_eq!(o.e_tag(), Some(etag_of(&sdk::pattern(*len, 3)).as_str()));
        assert!(o.last_modified().is_some());
        assert_eq!(
            o.storage_class().map(|c| c.as_str()),
            Some("STANDARD"),
            "{o:?}"
        );
        // V2 leaves the owner out unless asked.
        assert!(o.owner().is_none(), "{o:?}");
    }
    let owned = n
        .client
        .list_objects_v2()
        .bucket("fields")
        .fetch_owner(true)
        .send()
        .await
        .expect("list v2 fetch-owner");
    let owner_ids: Vec<&str> = owned
        .contents()
        .iter()
        .map(|o| o.owner().and_then(|w| w.id()).expect("owner id"))
        .collect();
    assert_eq!(owner_ids.len(), 3);
    assert!(
        owner_ids
            .iter()
            .all(|id| !id.is_empty() && *id == owner_ids[0])
    );
    // The owner is the bucket owner ListBuckets reports.
    let buckets = n.client.list_buckets().send().await.expect("list buckets");
    assert_eq!(buckets.owner().and_then(|o| o.id()), Some(owner_ids[0]));
    // V1 always includes the owner.
    let v1 = n
        .client
        .list_objects()
        .bucket("fields")
        .send()
        .await
        .expect("list v1");
    assert!(
        v1.contents()
            .iter()
            .all(|o| o.owner().and_then(|w| w.id()) == Some(owner_ids[0])),
        "{:?}",
        v1.contents()
    );
    // An empty bucket lists nothing.
    n.bucket("void").await;
    let empty = n
        .client
        .list_objects_v2()
        .bucket("void")
        .send()
        .await
        .expect("list empty");
    assert_eq!(empty.key_count(), Some(0));
    assert!(empty.contents().is_empty() && empty.common_prefixes().is_empty());
    assert_eq!(empty.is_truncated(), Some(false));
}

async fn encoding_type_url(target: Target) {
    let n = TestNode::start(target);
    n.bucket("enc").await;
    // Keys XML 1.0 cannot carry (control characters) and keys with characters that mean
    // something in URLs or XML.
    let keys: Vec<String> = [
        "ctrl\u{1}char",
        "tab\tkey",
        "new\nline",
        "space key",
        "plus+key",
        "percent%41",
        "amp&<>\"'",
        "ünï/x",
        "ünï/y y",
        "dir/a+b/c",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    put_all(&n.client, "enc", &keys).await;
    let mut sorted = keys.clone();
    sorted.sort();

    let v2 = n
        .client
        .list_objects_v2()
        .bucket("enc")
        .encoding_type(EncodingType::Url)
        .send()
        .await
        .unwrap_or_else(|e| panic!("list v2 url: {}", show(&e)));
    assert_eq!(v2.encoding_type(), Some(&EncodingType::Url));
    let got: Vec<String> = v2
        .contents()
        .iter()
        .map(|o| decode_url(o.key().expect("key")))
        .collect();
    assert_eq!(got, sorted);
    for o in v2.contents() {
        let raw = o.key().expect("key");
        assert!(
            raw.bytes().all(|b| b.is_ascii_graphic()),
            "an encoded key is printable ASCII: {raw:?}"
        );
    }

    // Prefix, delimiter and common prefixes are encoded too, page by page.
    let mut entries = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let page = n
            .client
            .list_objects_v2()
            .bucket("enc")
            .delimiter("/")
            .encoding_type(EncodingType::Url)
            .max_keys(2)
            .set_continuation_token(token.clone())
            .send()
            .await
            .unwrap_or_else(|e| panic!("list v2 url page: {}", show(&e)));
        let mut page_entries: Vec<Entry> = page
            .contents()
            .iter()
            .map(|o| Entry::Key(decode_url(o.key().expect("key"))))
            .chain(
                page.common_prefixes()
                    .iter()
                    .map(|p| Entry::Prefix(decode_url(p.prefix().expect("prefix")))),
            )
            .collect();
        page_entries.sort_by(|a, b| entry_name(a).cmp(entry_name(b)));
        entries.extend(page_entries);
        match page.next_continuation_token() {
            Some(t) => token = Some(t.to_owned()),
            None => break,
        }
    }
    assert_eq!(entries, model(&keys, "", Some("/"), None));

    let with_prefix = n
        .client
        .list_objects_v2()
        .bucket("enc")
        .prefix("ünï/")
        .encoding_type(EncodingType::Url)
        .send()
        .await
        .expect("list v2 url prefix");
    assert_eq!(
        with_prefix.prefix().map(decode_url).as_deref(),
        Some("ünï/")
    );
    let got: Vec<String> = with_prefix
        .contents()
        .iter()
        .map(|o| decode_url(o.key().expect("key")))
        .collect();
    assert_eq!(got, ["ünï/x", "ünï/y y"]);

    let v1 = n
        .client
        .list_objects()
        .bucket("enc")
        .encoding_type(EncodingType::Url)
        .send()
        .await
        .unwrap_or_else(|e| panic!("list v1 url: {}", show(&e)));
    let got: Vec<String> = v1
        .contents()
        .iter()
        .map(|o| decode_url(o.key().expect("key")))
        .collect();
    assert_eq!(got, sorted);

    // Without encoding-type, XML escaping carries the printable awkward keys.
    let plain = n
        .client
        .list_objects_v2()
        .bucket("enc")
        .prefix("amp")
        .send()
        .await
        .expect("list plain");
    let got: Vec<&str> = plain.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(got, ["amp&<>\"'"]);
}

/// What ceph s3-tests check against AWS: with encoding-type=url `/` is not encoded (keys
/// `foo+1/bar`, `quux ab/thud` list as prefixes `foo%2B1/`, `quux%20ab/`), ListObjects (v1)
/// returns its prefix as sent, and an empty `continuation-token=` starts from the beginning.
async fn listed_as_aws_lists_them(target: Target) {
    let n = TestNode::start(target);
    n.bucket("aws").await;
    let keys: Vec<String> = [
        "quux ab/thud",
        "asdf+b",
        "foo+1/bar",
        "foo/bar/xyzzy",
        "foo/bar/baz",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    put_all(&n.client, "aws", &keys).await;

    let v1 = n
        .client
        .list_objects()
        .bucket("aws")
        .delimiter("/")
        .encoding_type(EncodingType::Url)
        .send()
        .await
        .unwrap_or_else(|e| panic!("list v1: {}", show(&e)));
    assert_eq!(v1.delimiter(), Some("/"));
    let keys_v1: Vec<&str> = v1.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(keys_v1, ["asdf%2Bb"]);
    let prefixes: Vec<&str> = v1
        .common_prefixes()
        .iter()
        .filter_map(|p| p.prefix())
        .collect();
    assert_eq!(prefixes, ["foo%2B1/", "foo/", "quux%20ab/"]);

    let v2 = n
        .client
        .list_objects_v2()
        .bucket("aws")
        .delimiter("/")
        .encoding_type(EncodingType::Url)
        .send()
        .await
        .unwrap_or_else(|e| panic!("list v2: {}", show(&e)));
    let prefixes: Vec<&str> = v2
        .common_prefixes()
        .iter()
        .filter_map(|p| p.prefix())
        .collect();
    assert_eq!(prefixes, ["foo%2B1/", "foo/", "quux%20ab/"]);

    // v1 gives its prefix back as sent; v2 encodes it.
    let v1 = n
        .client
        .list_objects()
        .bucket("aws")
        .prefix("quux ab/")
        .encoding_type(EncodingType::Url)
        .send()
        .await
        .expect("list v1 prefix");
    assert_eq!(v1.prefix(), Some("quux ab/"));
    let keys_v1: Vec<&str> = v1.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(keys_v1, ["quux%20ab/thud"]);
    let v2 = n
        .client
        .list_objects_v2()
        .bucket("aws")
        .prefix("quux ab/")
        .encoding_type(EncodingType::Url)
        .send()
        .await
        .expect("list v2 prefix");
    assert_eq!(v2.prefix(), Some("quux%20ab/"));

    // An empty continuation token lists from the start: on the wire, then through the SDK.
    let mut raw = crate::support::http::Client::connect(n.addr);
    let r = raw.get("/aws?list-type=2&continuation-token=");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("<Key>asdf+b</Key>"), "{}", r.text());
    assert_eq!(
        r.text().matches("<Key>").count(),
        keys.len(),
        "{}",
        r.text()
    );
    let all = n
        .client
        .list_objects_v2()
        .bucket("aws")
        .continuation_token("")
        .send()
        .await
        .unwrap_or_else(|e| panic!("empty token: {}", show(&e)));
    let mut want = keys.clone();
    want.sort();
    let got: Vec<&str> = all.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(got, want);
}

/// The same wire forms through boto3, which leaves values encoded when the caller asked for
/// encoding-type=url (as ceph s3-tests read them), and bucket names AWS refuses.
async fn boto3_lists_as_aws_does(target: Target) {
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
keys = ["quux ab/thud", "asdf+b", "foo+1/bar", "foo/bar/xyzzy", "foo/bar/baz"]
for k in keys:
    c.put_object(Bucket="boto", Key=k, Body=b"x")
r = c.list_objects(Bucket="boto", Delimiter="/", EncodingType="url")
assert r["Delimiter"] == "/", r
assert [o["Key"] for o in r["Contents"]] == ["asdf%2Bb"], r
assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["foo%2B1/", "foo/", "quux%20ab/"], r
r = c.list_objects_v2(Bucket="boto", Delimiter="/", EncodingType="url")
assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["foo%2B1/", "foo/", "quux%20ab/"], r
# Without encoding-type, botocore asks for it itself and decodes: the keys come back whole.
r = c.list_objects_v2(Bucket="boto")
assert [o["Key"] for o in r["Contents"]] == sorted(keys), r
for bad in ["doc-.bucket", "doc.-bucket", "doc..bucket", "192.168.5.4"]:
    try:
        c.create_bucket(Bucket=bad)
    except c.exceptions.ClientError as e:
        assert e.response["Error"]["Code"] == "InvalidBucketName", (bad, e.response)
    else:
        raise SystemExit("created " + bad)
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
