//! Layout changes through the proxy: objects written under one layout stay readable, listable
//! and deletable under the next while the old layout is drained; overwrites leave no stale copy
//! behind; a key on two backends is listed once, as its current owner has it; two proxies with
//! one configuration agree; a backend added to the layout gets the existing buckets. A reader
//! that may not list the bucket (told `403`, not `404`, for a key that is not there) still
//! reads a key from its earlier owner.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use ferry_core::md5::{content_md5, md5};
use ferry_core::place::Placement;
use ferry_server::proxy::Layout;
use ferry_server::{BackendConfig, ProxyConfig, ProxyHandle, RuntimeKind, start_proxy};

use crate::support::http::{Client, xml_values};
use crate::support::node::Node;
use crate::support::proxy::{Auth, Setup};
use crate::support::{ACCESS_KEY, SECRET_KEY};

on_both_runtimes!(
    growing_keeps_every_object,
    removing_a_backend_keeps_its_objects,
    new_backend_gets_bucket_settings,
    backend_checked_again_when_it_comes_back,
    versions_listed_from_one_backend,
    a_key_on_two_backends_is_listed_once_from_its_owner,
    two_proxies_with_one_configuration_agree,
    governance_bypass_reaches_earlier_owners,
    readers_that_may_not_list_reach_earlier_owners,
);

fn body_of(i: usize) -> Vec<u8> {
    format!("object {i} ").repeat(i % 7 + 1).into_bytes()
}

fn weights(nodes: &[Node], ids: &[usize]) -> Vec<(String, u32)> {
    ids.iter().map(|&i| (nodes[i].id.clone(), 1)).collect()
}

/// A proxy over every node of `nodes` whose current layout (version 2) has the nodes
/// `current` and whose previous layout (version 1) has the nodes `previous`.
fn proxy_with_layouts(
    runtime: RuntimeKind,
    nodes: &[Node],
    current: &[usize],
    previous: &[usize],
) -> ProxyHandle {
    let backends: Vec<BackendConfig> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let mut b = BackendConfig::new(&n.id, format!("http://{}", n.addr));
            b.weight = u32::from(current.contains(&i));
            b
        })
        .collect();
    let mut cfg = ProxyConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        backends,
        ACCESS_KEY,
        SECRET_KEY,
    );
    cfg.cluster_keys = Some(crate::support::cluster_keys());
    cfg.runtime = runtime;
    cfg.threads = 2;
    cfg.health_interval = Duration::from_millis(100);
    cfg.layout_version = 2;
    cfg.previous_layouts = vec![Layout {
        version: 1,
        weights: weights(nodes, previous),
    }];
    start_proxy(cfg).expect("proxy starts")
}

fn placement(nodes: &[Node], ids: &[usize]) -> Placement {
    let w: Vec<(String, u32)> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.id.clone(), u32::from(ids.contains(&i))))
        .collect();
    Placement::new(&w).unwrap()
}

/// Every key of `bucket` a ListObjectsV2 through `c` returns, paging by `page`.
fn list_all(c: &mut Client, bucket: &str, page: u32) -> Vec<String> {
    let mut out = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut target = format!("/{bucket}?list-type=2&max-keys={page}");
        if let Some(t) = &token {
            target.push_str(&format!(
                "&continuation-token={}",
                ferry_core::s3::uri::encode(t)
            ));
        }
        let r = c.get(&target);
        assert_eq!(r.status, 200, "{}", r.text());
        out.extend(r.xml_values("Key"));
        if r.xml_value("IsTruncated").as_deref() != Some("true") {
            return out;
        }
        token = r.xml_value("NextContinuationToken");
        assert!(token.is_some());
    }
}

/// Wait (bounded) until node `n` has `bucket`.
fn wait_for_bucket(n: &Node, bucket: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut c = n.client();
    loop {
        let r = c.request("HEAD", &format!("/{bucket}"), &[], b"");
        if r.status == 200 {
            return;
        }
        assert!(Instant::now() < deadline, "{} never got {bucket}", n.id);
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The issue's scenario: 200 objects through a proxy over three nodes, then a proxy over the
/// same three and a fourth, with the three-node layout as the previous one.
fn growing_keeps_every_object(runtime: RuntimeKind) {
    let s = Setup::start_with(runtime, 4, Auth::Passthrough, |cfg| {
        cfg.backends.truncate(3)
    });
    let mut old = s.client();
    assert_eq!(old.put("/grow", b"").status, 200);
    let keys: Vec<String> = (0..200).map(|i| format!("k/{i:03}")).collect();
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(old.put(&format!("/grow/{k}"), &body_of(i)).status, 200);
    }
    let (before, after) = (
        placement(&s.nodes, &[0, 1, 2]),
        placement(&s.nodes, &[0, 1, 2, 3]),
    );
    let moved: Vec<usize> = (0..keys.len())
        .filter(|&i| before.pick("grow", &keys[i]) != after.pick("grow", &keys[i]))
        .collect();
    assert!(moved.len() > 10, "only {} keys move", moved.len());

    let proxy = proxy_with_layouts(runtime, &s.nodes, &[0, 1, 2, 3], &[0, 1, 2]);
    let mut c = Client::connect(proxy.local_addr());
    // The new backend gets the bucket.
    wait_for_bucket(&s.nodes[3], "grow");
    for (i, k) in keys.iter().enumerate() {
        let r = c.get(&format!("/grow/{k}"));
        assert_eq!(r.status, 200, "{k}: {}", r.text());
        assert_eq!(r.body, body_of(i), "{k}");
        let r = c.request("HEAD", &format!("/grow/{k}"), &[], b"");
        assert_eq!(r.status, 200, "{k}");
        let r = c.get(&format!("/grow/{k}?tagging"));
        assert_eq!(r.status, 200, "{k}: {}", r.text());
    }
    let missing = c.get("/grow/never-written");
    missing.expect_error(404, "NoSuchKey");
    let expected: Vec<String> = keys
        .iter()
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(list_all(&mut c, "grow", 1000), expected);
    assert_eq!(list_all(&mut c, "grow", 7), expected);

    // An overwrite of a moved key goes to its new owner and removes the old copy.
    let m = moved[0];
    let (k, from, to) = (
        &keys[m],
        before.pick("grow", &keys[m]),
        after.pick("grow", &keys[m]),
    );
    assert_eq!(c.put(&format!("/grow/{k}"), b"fresh").status, 200);
    assert_eq!(c.get(&format!("/grow/{k}")).body, b"fresh");
    assert_eq!(
        s.nodes[to].client().get(&format!("/grow/{k}")).body,
        b"fresh"
    );
    s.nodes[from]
        .client()
        .get(&format!("/grow/{k}"))
        .expect_error(404, "NoSuchKey");
    // Through the old proxy too, nothing stale is left: its owner has no copy any more.
    old.get(&format!("/grow/{k}"))
        .expect_error(404, "NoSuchKey");
    assert_eq!(list_all(&mut c, "grow", 1000), expected);

    // A DELETE removes a key wherever it may live.
    let k = &keys[moved[1]];
    let from = before.pick("grow", k);
    let r = c.request("DELETE", &format!("/grow/{k}"), &[], b"");
    assert_eq!(r.status, 204, "{}", r.text());
    c.get(&format!("/grow/{k}")).expect_error(404, "NoSuchKey");
    s.nodes[from]
        .client()
        .get(&format!("/grow/{k}"))
        .expect_error(404, "NoSuchKey");
    let listed = list_all(&mut c, "grow", 1000);
    assert_eq!(listed.len(), expected.len() - 1);
    assert!(!listed.contains(k));
    // So does DeleteObjects, per key.
    let k = &keys[moved[3]];
    let from = before.pick("grow", k);
    let xml = format!("<Delete><Object><Key>{k}</Key></Object></Delete>");
    let md5h = content_md5(&md5(xml.as_bytes())).to_string();
    let r = c.request(
        "POST",
        "/grow?delete",
        &[("Content-MD5", &md5h)],
        xml.as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    c.get(&format!("/grow/{k}")).expect_error(404, "NoSuchKey");
    s.nodes[from]
        .client()
        .get(&format!("/grow/{k}"))
        .expect_error(404, "NoSuchKey");
    assert_eq!(list_all(&mut c, "grow", 1000).len(), expected.len() - 2);

    // A copy of a moved key (the source found on its old owner) lands on the new owner.
    let src = &keys[moved[2]];
    let r = c.request(
        "PUT",
        "/grow/copied",
        &[("x-amz-copy-source", &format!("/grow/{src}"))],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(c.get("/grow/copied").body, body_of(moved[2]));

    // A tagging write of a moved key goes where the object is.
    let k = &keys[moved[4]];
    let tags = b"<Tagging><TagSet><Tag><Key>t</Key><Value>v</Value></Tag></TagSet></Tagging>";
    let md5h = content_md5(&md5(tags)).to_string();
    let r = c.request(
        "PUT",
        &format!("/grow/{k}?tagging"),
        &[("Content-MD5", &md5h)],
        tags,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = c.get(&format!("/grow/{k}?tagging"));
    assert_eq!(r.xml_values("Value"), ["v"]);

    // A multipart upload started under the old layout completes on the backend it started on,
    // and its object then moves to the key's new owner.
    let m = moved[5];
    let k = &keys[m];
    let r = old.request("POST", &format!("/grow/{k}?uploads"), &[], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let id = r.xml_value("UploadId").unwrap();
    let q = format!("uploadId={}", ferry_core::s3::uri::encode(&id));
    let r = c.put(&format!("/grow/{k}?partNumber=1&{q}"), b"one part");
    assert_eq!(r.status, 200, "{}", r.text());
    let etag = r.header("etag").unwrap().to_owned();
    let r = c.get(&format!("/grow/{k}?{q}"));
    assert_eq!(r.status, 200, "{}", r.text());
    let done = format!(
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>{etag}</ETag></Part>\
         </CompleteMultipartUpload>"
    );
    let r = c.request("POST", &format!("/grow/{k}?{q}"), &[], done.as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(c.get(&format!("/grow/{k}")).body, b"one part");
    assert_eq!(
        s.nodes[after.pick("grow", k)]
            .client()
            .get(&format!("/grow/{k}"))
            .body,
        b"one part"
    );
    s.nodes[before.pick("grow", k)]
        .client()
        .get(&format!("/grow/{k}"))
        .expect_error(404, "NoSuchKey");

    // Bucket-level calls see the bucket on every backend.
    assert_eq!(c.request("HEAD", "/grow", &[], b"").status, 200);
    let r = c.get("/");
    assert!(xml_values(&r.text(), "Name").contains(&"grow".to_owned()));
    proxy.stop();
}

/// A backend left out of the current layout but kept in the previous one still serves its
/// objects; new writes no longer go to it.
fn removing_a_backend_keeps_its_objects(runtime: RuntimeKind) {
    let s = Setup::start(runtime, 3, Auth::Passthrough);
    let mut old = s.client();
    assert_eq!(old.put("/shrink", b"").status, 200);
    let keys: Vec<String> = (0..60).map(|i| format!("s{i:02}")).collect();
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(old.put(&format!("/shrink/{k}"), &body_of(i)).status, 200);
    }
    assert!(keys.iter().any(|k| s.node_of("shrink", k) == 2));
    let proxy = proxy_with_layouts(runtime, &s.nodes, &[0, 1], &[0, 1, 2]);
    let mut c = Client::connect(proxy.local_addr());
    for (i, k) in keys.iter().enumerate() {
        let r = c.get(&format!("/shrink/{k}"));
        assert_eq!(r.status, 200, "{k}: {}", r.text());
        assert_eq!(r.body, body_of(i));
    }
    assert_eq!(list_all(&mut c, "shrink", 1000), keys);
    // An overwrite of a key that lived on the removed backend moves it off it.
    let k = keys.iter().find(|k| s.node_of("shrink", k) == 2).unwrap();
    assert_eq!(c.put(&format!("/shrink/{k}"), b"moved").status, 200);
    assert_eq!(c.get(&format!("/shrink/{k}")).body, b"moved");
    s.nodes[2]
        .client()
        .get(&format!("/shrink/{k}"))
        .expect_error(404, "NoSuchKey");
    assert_eq!(list_all(&mut c, "shrink", 1000), keys);
    proxy.stop();
}

/// `doc` with its `Content-MD5` (and `extra` headers) through `c`.
fn put_doc(c: &mut Client, target: &str, doc: &[u8], extra: &[(&str, &str)]) {
    let md5h = content_md5(&md5(doc)).to_string();
    let mut hs = vec![("Content-MD5", md5h.as_str())];
    hs.extend_from_slice(extra);
    let r = c.request("PUT", target, &hs, doc);
    assert!(r.status == 200 || r.status == 204, "{target}: {}", r.text());
}

const POLICY: &str = r#"{"Version":"2012-10-17","Statement":[{"Sid":"pub","Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::conf/public/*"}]}"#;

/// A bucket with every setting, made through `c`.
fn bucket_with_every_setting(c: &mut Client) {
    let r = c.request(
        "PUT",
        "/conf",
        &[("x-amz-bucket-object-lock-enabled", "true")],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    put_doc(c, "/conf?policy", POLICY.as_bytes(), &[]);
    put_doc(c, "/conf?acl", b"", &[("x-amz-acl", "public-read")]);
    put_doc(
        c,
        "/conf?cors",
        b"<CORSConfiguration><CORSRule><AllowedOrigin>https://app.example</AllowedOrigin>\
          <AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>",
        &[],
    );
    put_doc(
        c,
        "/conf?lifecycle",
        b"<LifecycleConfiguration><Rule><ID>old-logs</ID><Filter><Prefix>logs/</Prefix>\
          </Filter><Status>Enabled</Status><Expiration><Days>30</Days></Expiration></Rule>\
          </LifecycleConfiguration>",
        &[],
    );
    put_doc(
        c,
        "/conf?encryption",
        b"<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault>\
          <SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule>\
          </ServerSideEncryptionConfiguration>",
        &[],
    );
    put_doc(
        c,
        "/conf?tagging",
        b"<Tagging><TagSet><Tag><Key>team</Key><Value>storage</Value></Tag></TagSet></Tagging>",
        &[],
    );
    put_doc(
        c,
        "/conf?object-lock",
        b"<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule>\
          <DefaultRetention><Mode>GOVERNANCE</Mode><Days>1</Days></DefaultRetention></Rule>\
          </ObjectLockConfiguration>",
        &[],
    );
}

/// Node `n` has every setting of [`bucket_with_every_setting`].
fn has_every_setting(n: &Node) {
    let mut c = n.client();
    let r = c.get("/conf?policy");
    assert_eq!(r.status, 200, "{}: {}", n.id, r.text());
    assert!(
        r.text().contains("arn:aws:s3:::conf/public/*"),
        "{}",
        r.text()
    );
    let r = c.get("/conf?acl");
    assert!(r.text().contains("AllUsers"), "{}: {}", n.id, r.text());
    let r = c.get("/conf?cors");
    assert_eq!(
        r.xml_values("AllowedOrigin"),
        ["https://app.example"],
        "{}",
        n.id
    );
    let r = c.get("/conf?lifecycle");
    assert_eq!(r.xml_values("ID"), ["old-logs"], "{}: {}", n.id, r.text());
    let r = c.get("/conf?encryption");
    assert_eq!(
        r.xml_values("SSEAlgorithm"),
        ["AES256"],
        "{}: {}",
        n.id,
        r.text()
    );
    let r = c.get("/conf?tagging");
    assert_eq!(r.xml_values("Value"), ["storage"], "{}: {}", n.id, r.text());
    let r = c.get("/conf?object-lock");
    assert_eq!(
        r.xml_values("Mode"),
        ["GOVERNANCE"],
        "{}: {}",
        n.id,
        r.text()
    );
    let r = c.get("/conf?versioning");
    assert_eq!(
        r.xml_values("Status"),
        ["Enabled"],
        "{}: {}",
        n.id,
        r.text()
    );
}

/// A PUT of `key` through `c` is encrypted by the bucket's default, as node `n` stores it.
fn encrypted_by_default(c: &mut Client, n: &Node, key: &str) {
    let data = b"written after the backend joined";
    let md5h = content_md5(&md5(data)).to_string();
    let r = c.request(
        "PUT",
        &format!("/conf/{key}"),
        &[("Content-MD5", &md5h)],
        data,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("x-amz-server-side-encryption"), Some("AES256"));
    let r = n
        .client()
        .request("HEAD", &format!("/conf/{key}"), &[], b"");
    assert_eq!(r.status, 200, "{} does not hold {key}", n.id);
    assert_eq!(
        r.header("x-amz-server-side-encryption"),
        Some("AES256"),
        "{}",
        n.id
    );
}

/// A backend added to the layout gets every bucket with all of its settings before it takes
/// traffic: the first write after the proxy starts, to a key the new backend owns, is
/// encrypted by the bucket's default there.
fn new_backend_gets_bucket_settings(runtime: RuntimeKind) {
    let s = Setup::start_with(runtime, 3, Auth::Passthrough, |cfg| {
        cfg.backends.truncate(2)
    });
    bucket_with_every_setting(&mut s.client());
    let mut fresh = s.nodes[2].client();
    assert_eq!(fresh.request("HEAD", "/conf", &[], b"").status, 404);
    let proxy = proxy_with_layouts(runtime, &s.nodes, &[0, 1, 2], &[0, 1]);
    let mut c = Client::connect(proxy.local_addr());
    let after = placement(&s.nodes, &[0, 1, 2]);
    let key = (0..)
        .map(|i| format!("new-{i}"))
        .find(|k| after.pick("conf", k) == 2)
        .unwrap();
    // At once: the write waits for the new backend's check.
    encrypted_by_default(&mut c, &s.nodes[2], &key);
    has_every_setting(&s.nodes[2]);
    proxy.stop();
}

/// A backend that comes back after it was down is checked again before it takes traffic: a
/// default encryption it lost meanwhile is copied to it from the others.
fn backend_checked_again_when_it_comes_back(runtime: RuntimeKind) {
    let mut s = Setup::start(runtime, 2, Auth::Passthrough);
    let mut c = s.client();
    bucket_with_every_setting(&mut c);
    // Lost on node-2 (restored from an old backup, say) while it is away.
    let r = s.nodes[1]
        .client()
        .request("DELETE", "/conf?encryption", &[], b"");
    assert_eq!(r.status, 204, "{}", r.text());
    s.nodes[1].stop();
    let admin = s.admin();
    let state = |want: &str| {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let body = crate::support::http::plain_get(admin, "/readyz").text();
            if body
                .lines()
                .any(|l| l.starts_with("node-2 ") && l.ends_with(want))
            {
                return;
            }
            assert!(Instant::now() < deadline, "node-2 never {want}: {body}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    state(" down");
    s.nodes[1].restart();
    state(" up");
    let key = s.key_on("conf", "back-", 1);
    encrypted_by_default(&mut c, &s.nodes[1], &key);
    has_every_setting(&s.nodes[1]);
}

/// Every `(key, version id)` a ListObjectVersions of `bucket` through `c` lists, `page` at a
/// time.
fn versions_all(c: &mut Client, bucket: &str, page: u32) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut marker: Option<(String, String)> = None;
    loop {
        let mut target = format!("/{bucket}?versions&max-keys={page}");
        if let Some((k, v)) = &marker {
            let enc = ferry_core::s3::uri::encode;
            target.push_str(&format!(
                "&key-marker={}&version-id-marker={}",
                enc(k),
                enc(v)
            ));
        }
        let r = c.get(&target);
        assert_eq!(r.status, 200, "{}", r.text());
        let (keys, ids) = (r.xml_values("Key"), r.xml_values("VersionId"));
        assert_eq!(keys.len(), ids.len(), "{}", r.text());
        out.extend(keys.into_iter().zip(ids));
        if r.xml_value("IsTruncated").as_deref() != Some("true") {
            return out;
        }
        marker = Some((
            r.xml_value("NextKeyMarker").unwrap(),
            r.xml_value("NextVersionIdMarker").unwrap(),
        ));
    }
}

/// ListObjectVersions while a layout is drained lists a key's versions from one backend
/// only: its current owner once it has the key, else its earlier owner. Pages agree with the
/// whole listing.
fn versions_listed_from_one_backend(runtime: RuntimeKind) {
    let s = Setup::start_with(runtime, 3, Auth::Passthrough, |cfg| {
        cfg.backends.truncate(2)
    });
    let mut old = s.client();
    assert_eq!(old.put("/ver", b"").status, 200);
    let on = b"<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>";
    assert_eq!(old.put("/ver?versioning", on).status, 200);
    let keys: Vec<String> = (0..40).map(|i| format!("v/{i:02}")).collect();
    for k in &keys {
        for n in 0..2 {
            let r = old.put(&format!("/ver/{k}"), format!("{k} {n}").as_bytes());
            assert_eq!(r.status, 200, "{}", r.text());
        }
    }
    let (before, after) = (
        placement(&s.nodes, &[0, 1]),
        placement(&s.nodes, &[0, 1, 2]),
    );
    let moved: Vec<&String> = keys
        .iter()
        .filter(|k| before.pick("ver", k) != after.pick("ver", k))
        .collect();
    assert!(moved.len() >= 4, "only {} keys move", moved.len());
    let proxy = proxy_with_layouts(runtime, &s.nodes, &[0, 1, 2], &[0, 1]);
    let mut c = Client::connect(proxy.local_addr());
    // Half the moved keys are written again: the new owner has one version, the old owner
    // its two and the delete marker that hid them.
    let rewritten: Vec<&String> = moved.iter().step_by(2).copied().collect();
    for k in &rewritten {
        assert_eq!(c.put(&format!("/ver/{k}"), b"moved").status, 200);
        // The old copy is hidden by the time of the answer.
        let r = s.nodes[before.pick("ver", k)]
            .client()
            .get(&format!("/ver?versions&prefix={k}"));
        assert_eq!(r.xml_values("VersionId").len(), 3, "{}", r.text());
    }
    let all = versions_all(&mut c, "ver", 1000);
    for k in &keys {
        let n = all.iter().filter(|(key, _)| key == k).count();
        let want = if rewritten.contains(&k) { 1 } else { 2 };
        assert_eq!(n, want, "{k}: {all:?}");
    }
    assert_eq!(all.len(), keys.len() * 2 - rewritten.len());
    for page in [1, 3] {
        assert_eq!(versions_all(&mut c, "ver", page), all, "pages of {page}");
    }
    proxy.stop();
}

/// Three nodes, `count` keys (`{bucket}/NN`, bodies `body_of(NN)`) written into `bucket` through
/// a proxy over the first two; the placements over those two and over all three.
fn written_over_two_of_three(
    runtime: RuntimeKind,
    bucket: &str,
    count: usize,
) -> (Setup, Vec<String>, Placement, Placement) {
    let s = Setup::start_with(runtime, 3, Auth::Passthrough, |cfg| {
        cfg.backends.truncate(2)
    });
    let mut old = s.client();
    assert_eq!(old.put(&format!("/{bucket}"), b"").status, 200);
    let keys: Vec<String> = (0..count).map(|i| format!("{bucket}/{i:02}")).collect();
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(old.put(&format!("/{bucket}/{k}"), &body_of(i)).status, 200);
    }
    let (before, after) = (
        placement(&s.nodes, &[0, 1]),
        placement(&s.nodes, &[0, 1, 2]),
    );
    (s, keys, before, after)
}

/// (key, ETag, size) of every object of `bucket` a listing through `c` returns: ListObjectsV2
/// (`v2`) or ListObjects, paging by `page`.
fn entries_all(c: &mut Client, bucket: &str, page: u32, v2: bool) -> Vec<(String, String, u64)> {
    let mut out: Vec<(String, String, u64)> = Vec::new();
    let mut next: Option<String> = None;
    loop {
        let enc = ferry_core::s3::uri::encode;
        let target = match (&next, v2) {
            (None, true) => format!("/{bucket}?list-type=2&max-keys={page}"),
            (Some(t), true) => {
                format!(
                    "/{bucket}?list-type=2&max-keys={page}&continuation-token={}",
                    enc(t)
                )
            }
            (None, false) => format!("/{bucket}?max-keys={page}"),
            (Some(m), false) => format!("/{bucket}?max-keys={page}&marker={}", enc(m)),
        };
        let r = c.get(&target);
        assert_eq!(r.status, 200, "{}", r.text());
        let (keys, etags, sizes) = (
            r.xml_values("Key"),
            r.xml_values("ETag"),
            r.xml_values("Size"),
        );
        assert!(
            keys.len() == etags.len() && keys.len() == sizes.len(),
            "{}",
            r.text()
        );
        out.extend(
            keys.into_iter()
                .zip(etags)
                .zip(sizes)
                .map(|((k, e), n)| (k, e.replace("&quot;", "\""), n.parse().unwrap())),
        );
        if r.xml_value("IsTruncated").as_deref() != Some("true") {
            return out;
        }
        next = if v2 {
            r.xml_value("NextContinuationToken")
        } else {
            out.last().map(|e| e.0.clone())
        };
        assert!(next.is_some(), "{}", r.text());
    }
}

/// While a layout is drained, a key whose previous owner holds another copy than its current
/// owner (a stale write there: a proxy still on the old layout, say) is listed once, with the
/// current owner's ETag and size, by ListObjectsV2 and ListObjects, whole and in pages of one
/// and two; a GET reads that copy.
fn a_key_on_two_backends_is_listed_once_from_its_owner(runtime: RuntimeKind) {
    let (s, keys, before, after) = written_over_two_of_three(runtime, "twice", 30);
    let moved: Vec<&String> = keys
        .iter()
        .filter(|k| before.pick("twice", k) != after.pick("twice", k))
        .take(3)
        .collect();
    assert_eq!(moved.len(), 3, "too few keys move");
    let proxy = proxy_with_layouts(runtime, &s.nodes, &[0, 1, 2], &[0, 1]);
    let mut c = Client::connect(proxy.local_addr());
    wait_for_bucket(&s.nodes[2], "twice");
    let fresh = b"the current owner's copy".to_vec();
    for k in &moved {
        assert_eq!(c.put(&format!("/twice/{k}"), &fresh).status, 200);
        let mut prev = s.nodes[before.pick("twice", k)].client();
        // The proxy removed the old copy before its answer: the stale one comes after.
        let r = prev.request("HEAD", &format!("/twice/{k}"), &[], b"");
        assert_eq!(r.status, 404, "the old copy of {k} stays");
        let stale = prev.put(
            &format!("/twice/{k}"),
            b"a stale copy, longer than the fresh one",
        );
        assert_eq!(stale.status, 200);
    }
    let fresh_etag = format!("\"{:032x}\"", u128::from_be_bytes(md5(&fresh)));
    let whole = entries_all(&mut c, "twice", 1000, true);
    assert_eq!(whole.len(), keys.len(), "{whole:?}");
    for (i, k) in keys.iter().enumerate() {
        let listed: Vec<_> = whole.iter().filter(|e| &e.0 == k).collect();
        assert_eq!(listed.len(), 1, "{k}: {whole:?}");
        let (etag, size) = if moved.contains(&k) {
            (fresh_etag.clone(), fresh.len())
        } else {
            let body = body_of(i);
            (
                format!("\"{:032x}\"", u128::from_be_bytes(md5(&body))),
                body.len(),
            )
        };
        assert_eq!((&listed[0].1, listed[0].2), (&etag, size as u64), "{k}");
    }
    for (page, v2) in [(1, true), (2, true), (1000, false), (1, false), (2, false)] {
        assert_eq!(
            entries_all(&mut c, "twice", page, v2),
            whole,
            "pages of {page}, v2 {v2}"
        );
    }
    for k in &moved {
        assert_eq!(c.get(&format!("/twice/{k}")).body, fresh, "{k}");
    }
    proxy.stop();
}

/// Two proxies started with the same configuration (a layout being drained) in front of the
/// same nodes agree without talking to each other: what one writes, overwrites or deletes, the
/// other reads so, old keys still on their previous owners included, and their listings are
/// the same, whole and in pages.
fn two_proxies_with_one_configuration_agree(runtime: RuntimeKind) {
    let (s, keys, before, after) = written_over_two_of_three(runtime, "agree", 40);
    let moved: Vec<usize> = (0..keys.len())
        .filter(|&i| before.pick("agree", &keys[i]) != after.pick("agree", &keys[i]))
        .collect();
    assert!(moved.len() >= 4, "only {} keys move", moved.len());
    let proxies = [
        proxy_with_layouts(runtime, &s.nodes, &[0, 1, 2], &[0, 1]),
        proxy_with_layouts(runtime, &s.nodes, &[0, 1, 2], &[0, 1]),
    ];
    let mut clients: Vec<Client> = proxies
        .iter()
        .map(|p| Client::connect(p.local_addr()))
        .collect();
    let mut want: Vec<Option<Vec<u8>>> = (0..keys.len()).map(|i| Some(body_of(i))).collect();
    // Each proxy in turn writes (new keys, overwrites of moved keys) and deletes.
    let mut extra = Vec::new();
    for (n, &m) in moved.iter().enumerate() {
        let c = &mut clients[n % 2];
        if n % 3 == 2 {
            let r = c.request("DELETE", &format!("/agree/{}", keys[m]), &[], b"");
            assert_eq!(r.status, 204, "{}", r.text());
            want[m] = None;
        } else {
            let body = format!("rewritten through proxy {}", n % 2).into_bytes();
            assert_eq!(c.put(&format!("/agree/{}", keys[m]), &body).status, 200);
            want[m] = Some(body);
        }
        let k = format!("b/{n}");
        assert_eq!(c.put(&format!("/agree/{k}"), k.as_bytes()).status, 200);
        extra.push(k);
    }
    for c in &mut clients {
        for (k, body) in keys.iter().zip(&want) {
            let r = c.get(&format!("/agree/{k}"));
            match body {
                Some(b) => assert_eq!((r.status, &r.body), (200, b), "{k}"),
                None => r.expect_error(404, "NoSuchKey"),
            }
        }
        for k in &extra {
            assert_eq!(c.get(&format!("/agree/{k}")).body, k.as_bytes());
        }
    }
    let mut listed: Vec<String> = keys
        .iter()
        .zip(&want)
        .filter(|(_, b)| b.is_some())
        .map(|(k, _)| k.clone())
        .chain(extra.iter().cloned())
        .collect();
    listed.sort();
    let first = entries_all(&mut clients[0], "agree", 1000, true);
    assert_eq!(
        first.iter().map(|e| e.0.clone()).collect::<Vec<_>>(),
        listed
    );
    for c in &mut clients {
        for (page, v2) in [(1000, true), (7, true), (1000, false), (7, false)] {
            assert_eq!(entries_all(c, "agree", page, v2), first, "pages of {page}");
        }
    }
    for p in proxies {
        p.stop();
    }
}

/// A GOVERNANCE version deleted with the bypass (`x-amz-bypass-governance-retention`) through a
/// proxy draining a layout, by DeleteObject and by DeleteObjects, is deleted on its key's
/// earlier owner too, which gets the client's header: no version the client deleted stays
/// there to be read.
fn governance_bypass_reaches_earlier_owners(runtime: RuntimeKind) {
    let s = Setup::start_with(runtime, 3, Auth::Passthrough, |cfg| {
        cfg.backends.truncate(2)
    });
    let mut old = s.client();
    let lock = [("x-amz-bucket-object-lock-enabled", "true")];
    let r = old.request("PUT", "/locked", &lock, b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let (before, after) = (
        placement(&s.nodes, &[0, 1]),
        placement(&s.nodes, &[0, 1, 2]),
    );
    let moved: Vec<String> = (0..)
        .map(|i| format!("m/{i}"))
        .filter(|k| before.pick("locked", k) != after.pick("locked", k))
        .take(2)
        .collect();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let until = ferry_core::time::DateTime::from_unix(now as i64 + 86_400)
        .iso8601()
        .to_string();
    let body = b"governed";
    let md5h = content_md5(&md5(body)).to_string();
    let mut ids = Vec::new();
    for k in &moved {
        let headers = [
            ("x-amz-object-lock-mode", "GOVERNANCE"),
            ("x-amz-object-lock-retain-until-date", until.as_str()),
            ("Content-MD5", md5h.as_str()),
        ];
        let r = old.request("PUT", &format!("/locked/{k}"), &headers, body);
        assert_eq!(r.status, 200, "{}", r.text());
        ids.push(r.header("x-amz-version-id").expect("a version").to_owned());
    }
    let proxy = proxy_with_layouts(runtime, &s.nodes, &[0, 1, 2], &[0, 1]);
    wait_for_bucket(&s.nodes[2], "locked");
    let mut c = Client::connect(proxy.local_addr());
    let bypass = [("x-amz-bypass-governance-retention", "true")];
    let one = format!("/locked/{}?versionId={}", moved[0], ids[0]);
    let r = c.request("DELETE", &one, &bypass, b"");
    assert_eq!(r.status, 204, "{}", r.text());
    let xml = format!(
        "<Delete><Object><Key>{}</Key><VersionId>{}</VersionId></Object></Delete>",
        moved[1], ids[1]
    );
    let md5h = content_md5(&md5(xml.as_bytes())).to_string();
    let r = c.request(
        "POST",
        "/locked?delete",
        &[bypass[0], ("Content-MD5", &md5h)],
        xml.as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.xml_values("Key"), [moved[1].clone()], "{}", r.text());
    for (k, id) in moved.iter().zip(&ids) {
        let version = format!("/locked/{k}?versionId={id}");
        let r = c.get(&version);
        assert_eq!(r.status, 404, "{k} {id} through the proxy: {}", r.text());
        let r = s.nodes[before.pick("locked", k)].client().get(&version);
        assert_eq!(r.status, 404, "{k} {id} on its earlier owner: {}", r.text());
    }
    proxy.stop();
}

/// An anonymous reader that a policy lets read objects but not list the bucket: the current
/// owner of a key written under the earlier layout answers it `403` (absent, to one that may
/// not know), and the proxy still tries the earlier owner, which serves it; a key nowhere is
/// `403 AccessDenied` for it (the owner's `404`), with nothing of the cluster's in the answer.
fn readers_that_may_not_list_reach_earlier_owners(runtime: RuntimeKind) {
    use crate::support::http::http_request;
    let s = Setup::start_with(runtime, 3, Auth::Passthrough, |cfg| {
        cfg.backends.truncate(2)
    });
    let mut old = s.client();
    let r = old.request("PUT", "/pub", &[], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let policy = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::pub/*"}]}"#;
    put_doc(&mut old, "/pub?policy", policy.as_bytes(), &[]);
    let (before, after) = (
        placement(&s.nodes, &[0, 1]),
        placement(&s.nodes, &[0, 1, 2]),
    );
    let moved: Vec<String> = (0..)
        .map(|i| format!("m/{i}"))
        .filter(|k| before.pick("pub", k) != after.pick("pub", k))
        .take(2)
        .collect();
    for k in &moved {
        put_doc(&mut old, &format!("/pub/{k}"), k.as_bytes(), &[]);
    }
    let proxy = proxy_with_layouts(runtime, &s.nodes, &[0, 1, 2], &[0, 1]);
    wait_for_bucket(&s.nodes[2], "pub");
    let addr = proxy.local_addr();
    for k in &moved {
        // Its current owner has it not, and says so only to the cluster.
        let owner = after.pick("pub", k);
        let direct = http_request(s.nodes[owner].addr, "GET", &format!("/pub/{k}"), &[], b"");
        direct.expect_error(403, "AccessDenied");
        assert_eq!(direct.header("x-ferry-missing"), None);
        let r = http_request(addr, "GET", &format!("/pub/{k}"), &[], b"");
        assert_eq!(r.status, 200, "{k}: {}", r.text());
        assert_eq!(r.body, k.as_bytes());
        let r = http_request(addr, "HEAD", &format!("/pub/{k}"), &[], b"");
        assert_eq!(r.status, 200, "{k}");
    }
    let r = http_request(addr, "GET", "/pub/m/nowhere", &[], b"");
    r.expect_error(403, "AccessDenied");
    assert!(
        r.headers
            .iter()
            .all(|(n, _)| !n.to_ascii_lowercase().starts_with("x-ferry-")),
        "{r:?}"
    );
    assert_eq!(
        http_request(addr, "HEAD", "/pub/m/nowhere", &[], b"").status,
        403
    );
    // The owner (who may list) is told 404.
    let mut c = Client::connect(addr);
    assert_eq!(c.get("/pub/m/nowhere").status, 404);
    proxy.stop();
}
