//! Multipart upload ids that carry their backend: an upload started under a layout that is then
//! removed from the configuration completes on its backend (and its object moves to the key's
//! owner); ids round-trip through ListParts and ListMultipartUploads (pages ending inside one
//! key's uploads on two backends); an id naming no configured backend is `NoSuchUpload`; an
//! untagged id (a backend's own) is still found while a layout places its key there; the AWS
//! SDK's multipart upload works as ever; a user's upload (not the bucket owner's) completed away
//! from its key's owner replaces the owner's older copy, and one whose move fails (the owner's
//! disk full) stays whole where it completed. Passthrough and re-signing (nodes with keys of
//! their own), on both runtimes. Through a passthrough proxy every step of an upload goes to its
//! node as the client sent it (bucket policy conditions on the signature hold, nothing is
//! re-signed).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use aws_sdk_s3::presigning::{PresignedRequest, PresigningConfig};
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use ferry_core::md5::md5;
use ferry_core::s3::uri::encode;
use ferry_server::proxy::{Layout, ReloadSource};
use ferry_server::{ProxyConfig, RuntimeKind};

use crate::support::http::{Client, Payload, Response, http_request, plain_get, target_of};
use crate::support::node::Node;
use crate::support::proxy::{Auth, Setup};
use crate::support::sdk;
use crate::support::tmpfs::Tmpfs;

on_both_runtimes!(
    uploads_outlive_their_layout_passthrough,
    uploads_outlive_their_layout_resigned,
    upload_steps_pass_through,
    a_users_upload_completes_away_from_its_owner,
    a_move_that_fails_leaves_the_upload_where_it_completed,
);

fn uploads_outlive_their_layout_passthrough(runtime: RuntimeKind) {
    uploads_outlive_their_layout(runtime, Auth::Passthrough);
}

fn uploads_outlive_their_layout_resigned(runtime: RuntimeKind) {
    uploads_outlive_their_layout(runtime, Auth::OwnKeys);
}

/// A proxy over two nodes whose configuration the test changes and reloads.
struct Reloadable {
    s: Setup,
    cfg: Arc<Mutex<ProxyConfig>>,
}

impl Reloadable {
    /// Every key on node 0 at first (node 1 declared, weight 0).
    fn start(runtime: RuntimeKind, auth: Auth) -> Self {
        Self::start_with(runtime, auth, None, |_| {})
    }

    /// [`Reloadable::start`], with `tweak` adjusting the proxy's configuration first and
    /// `node` the nodes'.
    fn start_with(
        runtime: RuntimeKind,
        auth: Auth,
        node: Option<&dyn Fn(&mut Node)>,
        tweak: impl FnOnce(&mut ProxyConfig),
    ) -> Self {
        let shared: Arc<Mutex<Option<Arc<Mutex<ProxyConfig>>>>> = Arc::default();
        let slot = shared.clone();
        let s = Setup::start_with_nodes(runtime, 2, auth, node, move |cfg| {
            tweak(cfg);
            cfg.backends[1].weight = 0;
            let cfg_now = Arc::new(Mutex::new(cfg.clone()));
            let source = cfg_now.clone();
            cfg.reload = Some(ReloadSource::new(move || {
                Ok(source
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone())
            }));
            *slot.lock().unwrap() = Some(cfg_now);
        });
        let cfg = shared.lock().unwrap().take().unwrap();
        Self { s, cfg }
    }

    /// Current layout (version `version`): `current`'s node alone; `previous`: an earlier
    /// layout with that node alone.
    fn reload(&self, version: u64, current: usize, previous: Option<usize>) {
        {
            let mut cfg = self.cfg.lock().unwrap();
            for (i, b) in cfg.backends.iter_mut().enumerate() {
                b.weight = u32::from(i == current);
            }
            cfg.layout_version = version;
            cfg.previous_layouts = previous
                .map(|p| Layout {
                    version: version - 1,
                    weights: vec![(self.s.nodes[p].id.clone(), 1)],
                })
                .into_iter()
                .collect();
        }
        let changed = self.s.proxy.as_ref().unwrap().reload().expect("reload");
        assert!(changed.contains(&format!("-> {version}")), "{changed}");
    }
}

fn create(c: &mut Client, key: &str) -> String {
    let r = c.request("POST", &format!("/mpu/{key}?uploads"), &[], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    r.xml_value("UploadId").expect("UploadId")
}

fn part(c: &mut Client, key: &str, id: &str, n: u32, data: &[u8], payload: Payload) -> String {
    let target = format!("/mpu/{key}?partNumber={n}&uploadId={}", encode(id));
    let r = c.send("PUT", &target, &[], data, payload);
    assert_eq!(r.status, 200, "part {n}: {}", r.text());
    r.header("etag").unwrap().to_owned()
}

fn complete(c: &mut Client, key: &str, id: &str, etags: &[String]) -> Response {
    complete_in(c, "mpu", key, id, etags)
}

fn complete_in(c: &mut Client, bucket: &str, key: &str, id: &str, etags: &[String]) -> Response {
    let parts: String = etags
        .iter()
        .enumerate()
        .map(|(i, e)| {
            format!(
                "<Part><PartNumber>{}</PartNumber><ETag>{e}</ETag></Part>",
                i + 1
            )
        })
        .collect();
    let doc = format!("<CompleteMultipartUpload>{parts}</CompleteMultipartUpload>");
    let target = format!("/{bucket}/{key}?uploadId={}", encode(id));
    c.request("POST", &target, &[], doc.as_bytes())
}

/// Every (key, upload id) a ListMultipartUploads of `mpu` lists, `page` at a time.
fn list_uploads(c: &mut Client, page: u32) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut markers = String::new();
    loop {
        let r = c.get(&format!("/mpu?uploads&max-uploads={page}{markers}"));
        assert_eq!(r.status, 200, "{}", r.text());
        let keys = r.xml_values("Key");
        let ids = r.xml_values("UploadId");
        out.extend(keys.into_iter().zip(ids));
        if r.xml_value("IsTruncated").as_deref() != Some("true") {
            return out;
        }
        let (k, u) = (
            r.xml_value("NextKeyMarker").unwrap(),
            r.xml_value("NextUploadIdMarker").unwrap(),
        );
        markers = format!("&key-marker={}&upload-id-marker={}", encode(&k), encode(&u));
    }
}

fn uploads_outlive_their_layout(runtime: RuntimeKind, auth: Auth) {
    let p = Reloadable::start(runtime, auth);
    let (mut n0, mut n1) = (p.s.nodes[0].client(), p.s.nodes[1].client());
    let mut c = p.s.client();
    assert_eq!(c.put("/mpu", b"").status, 200);

    // Layout 1: every key on node 0. Two uploads of `k`, one of `j`.
    let u1 = create(&mut c, "k");
    let u2 = create(&mut c, "k");
    let uj = create(&mut c, "j");
    // The proxy's id is the node's own behind a tag.
    let on_node = n0.get("/mpu?uploads");
    let own = on_node.xml_values("UploadId");
    assert_eq!(own.len(), 3, "{}", on_node.text());
    for id in [&u1, &u2, &uj] {
        let (tag, inner) = id
            .split_once('~')
            .unwrap_or_else(|| panic!("untagged id {id}"));
        assert_eq!(tag.len(), 8, "{id}");
        assert!(own.iter().any(|o| o == inner), "{id} not in {own:?}");
    }
    let first = vec![7u8; 5 << 20];
    let mut etags = vec![part(
        &mut c,
        "k",
        &u1,
        1,
        &first,
        Payload::ChunkedSignedTrailer,
    )];

    // Layout 2, node 1 alone, layout 1 still drained: an untagged id (the node's own, as a
    // proxy from before tags gave) is found on the key's previous owner.
    p.reload(2, 1, Some(0));
    let r = n0.request("POST", "/mpu/legacy?uploads", &[], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let legacy = r.xml_value("UploadId").unwrap();
    assert!(!legacy.contains('~'));
    part(&mut c, "legacy", &legacy, 1, b"old id", Payload::Signed);
    let r = c.get(&format!("/mpu/legacy?uploadId={}", encode(&legacy)));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.xml_value("UploadId").as_deref(), Some(legacy.as_str()));
    let target = format!("/mpu/legacy?uploadId={}", encode(&legacy));
    assert_eq!(c.request("DELETE", &target, &[], b"").status, 204);

    // Layout 3, node 1 alone, and layout 1 gone from the configuration (node 0 still
    // declared): the uploads go on on node 0.
    p.reload(3, 1, None);
    let u3 = create(&mut c, "k");
    assert_eq!(n1.get("/mpu?uploads").xml_values("Key"), ["k"]);
    etags.push(part(&mut c, "k", &u1, 2, b"the last part", Payload::Signed));
    let r = c.get(&format!("/mpu/k?uploadId={}", encode(&u1)));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.xml_value("UploadId").as_deref(), Some(u1.as_str()));
    assert_eq!(r.xml_values("PartNumber"), ["1", "2"]);

    // Listed with the ids the clients got, in pages that end inside k's uploads on either
    // node (node 0's first, then node 1's).
    // (Node ids sort by their creation time.)
    let want: Vec<(String, String)> = [("j", &uj), ("k", &u1), ("k", &u2), ("k", &u3)]
        .iter()
        .map(|(k, u)| ((*k).to_owned(), (*u).clone()))
        .collect();
    for page in [1, 2, 3, 1000] {
        assert_eq!(list_uploads(&mut c, page), want, "pages of {page}");
    }

    // Completed on node 0, where it started; the object then moves to its owner, node 1.
    let r = complete(&mut c, "k", &u1, &etags);
    assert_eq!(r.status, 200, "{}", r.text());
    let etag = r.xml_value("ETag").unwrap().replace("&quot;", "\"");
    assert!(etag.ends_with("-2\""), "{}", r.text());
    let mut whole = first.clone();
    whole.extend_from_slice(b"the last part");
    let got = c.get("/mpu/k");
    assert_eq!(got.status, 200, "{}", got.text());
    assert_eq!(md5(&got.body), md5(&whole));
    assert_eq!(got.header("etag"), Some(etag.as_str()));
    assert_eq!(md5(&n1.get("/mpu/k").body), md5(&whole));
    n0.get("/mpu/k").expect_error(404, "NoSuchKey");

    // Ids that name no configured backend reach none.
    for forged in [
        "ffffffff~0000000000000000".to_owned(),
        format!("ffffffff~{}", u2.split_once('~').unwrap().1),
    ] {
        assert!(!u2.starts_with("ffffffff"));
        let q = format!("uploadId={}", encode(&forged));
        // (Refused before its body: on a connection of its own.)
        p.s.client()
            .put(&format!("/mpu/k?partNumber=1&{q}"), b"x")
            .expect_error(404, "NoSuchUpload");
        c.get(&format!("/mpu/k?{q}"))
            .expect_error(404, "NoSuchUpload");
        complete(&mut p.s.client(), "k", &forged, &etags).expect_error(404, "NoSuchUpload");
        c.request("DELETE", &format!("/mpu/k?{q}"), &[], b"")
            .expect_error(404, "NoSuchUpload");
    }
    // A known tag with an id its backend does not have: the backend's answer.
    let wrong = format!("{}~0000000000000000", u2.split_once('~').unwrap().0);
    c.get(&format!("/mpu/k?uploadId={}", encode(&wrong)))
        .expect_error(404, "NoSuchUpload");

    for (key, id) in [("k", &u2), ("k", &u3), ("j", &uj)] {
        let target = format!("/mpu/{key}?uploadId={}", encode(id));
        let r = c.request("DELETE", &target, &[], b"");
        assert_eq!(r.status, 204, "{}", r.text());
    }
    assert!(list_uploads(&mut c, 1000).is_empty());
    assert!(n0.get("/mpu?uploads").xml_values("UploadId").is_empty());

    // The AWS SDK, as it is.
    sdk::block_on(sdk_multipart(p.s.addr));
}

/// An upload by a user who does not own the bucket, completed on the node it started on after
/// the key's owner changed, while the new owner holds an older copy of the key (the bucket
/// owner wrote it meanwhile): the proxy moves the object as the bucket's owner (the user may
/// write it but not read it), and the older copy is replaced, not the new object deleted with
/// the stale copies.
fn a_users_upload_completes_away_from_its_owner(runtime: RuntimeKind) {
    use crate::support::ALICE;
    use ferry_core::s3::sigv4::Credentials;
    let p = Reloadable::start_with(runtime, Auth::Passthrough, None, |cfg| {
        cfg.users = vec![ALICE.user()];
    });
    let (mut n0, mut n1) = (p.s.nodes[0].client(), p.s.nodes[1].client());
    let mut c = p.s.client();
    assert_eq!(c.put("/mpu", b"").status, 200);
    let grant = format!("id=\"{}\"", ALICE.canonical_id());
    let acl = [
        ("x-amz-grant-read", grant.as_str()),
        ("x-amz-grant-write", &grant),
    ];
    let r = c.request("PUT", "/mpu?acl", &acl, b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let mut alice = p.s.client();
    alice.credentials = Credentials::new(ALICE.access_key, ALICE.secret_key);

    // Started and uploaded under layout 1 (node 0), completed under layout 2 (node 1, node 0
    // drained), after the bucket owner wrote the key to node 1.
    let id = create(&mut alice, "a");
    let first = vec![5u8; 5 << 20];
    let etags = vec![
        part(&mut alice, "a", &id, 1, &first, Payload::Signed),
        part(
            &mut alice,
            "a",
            &id,
            2,
            b"alice's last part",
            Payload::Signed,
        ),
    ];
    p.reload(2, 1, Some(0));
    assert_eq!(c.put("/mpu/a", b"older").status, 200);
    assert_eq!(n1.get("/mpu/a").body, b"older");
    let r = complete(&mut alice, "a", &id, &etags);
    assert_eq!(r.status, 200, "{}", r.text());
    let etag = r.xml_value("ETag").unwrap().replace("&quot;", "\"");
    let mut whole = first;
    whole.extend_from_slice(b"alice's last part");
    // (The bucket owner's object now, as on S3, which alice was not granted to read.)
    for (who, got) in [("the owner", c.get("/mpu/a")), ("node 1", n1.get("/mpu/a"))] {
        assert_eq!(got.status, 200, "{who}: {}", got.text());
        assert_eq!(md5(&got.body), md5(&whole), "{who}");
        assert_eq!(got.header("etag"), Some(etag.as_str()), "{who}");
    }
    n0.get("/mpu/a").expect_error(404, "NoSuchKey");
}

/// An upload whose move fails (its key's owner has a full disk), completed away from that owner
/// while the owner holds an older copy of the key: the object stays where it completed, whole,
/// not deleted with the earlier owners' copies, which a clean-up after the failed move took
/// the owner's older copy as leave to do. (Until a `ferry rebalance` moves it, the owner's
/// older copy is the one read through the proxy, as README says.)
fn a_move_that_fails_leaves_the_upload_where_it_completed(runtime: RuntimeKind) {
    let disk = Tmpfs::mount(64 << 20);
    let on_disk: &dyn Fn(&mut Node) = &|n| {
        if n.id == "node-2" {
            n.dir = tempfile::tempdir_in(disk.path()).expect("data dir on the tmpfs");
        }
    };
    let p = Reloadable::start_with(runtime, Auth::Passthrough, Some(on_disk), |_| {});
    let (mut n0, mut n1) = (p.s.nodes[0].client(), p.s.nodes[1].client());
    let mut c = p.s.client();
    assert_eq!(c.put("/mpu", b"").status, 200);
    let id = create(&mut c, "f");
    let data = vec![6u8; 1 << 20];
    let etags = vec![part(&mut c, "f", &id, 1, &data, Payload::Signed)];

    p.reload(2, 1, Some(0));
    assert_eq!(c.put("/mpu/f", b"older").status, 200);
    let _filler = disk.fill("filler");
    let r = complete(&mut c, "f", &id, &etags);
    assert_eq!(r.status, 200, "{}", r.text());
    let got = n0.get("/mpu/f");
    assert_eq!(got.status, 200, "{}", got.text());
    assert_eq!(md5(&got.body), md5(&data));
    assert_eq!(n1.get("/mpu/f").body, b"older");
}

async fn sdk_multipart(addr: std::net::SocketAddr) {
    let c = sdk::client(addr);
    let id = c
        .create_multipart_upload()
        .bucket("mpu")
        .key("sdk")
        .send()
        .await
        .expect("create")
        .upload_id()
        .expect("UploadId")
        .to_owned();
    let data = [vec![1u8; 5 << 20], b"tail".to_vec()];
    let mut parts = Vec::new();
    for (i, d) in data.iter().enumerate() {
        let n = i as i32 + 1;
        let out = c
            .upload_part()
            .bucket("mpu")
            .key("sdk")
            .upload_id(&id)
            .part_number(n)
            .body(ByteStream::from(d.clone()))
            .send()
            .await
            .expect("upload part");
        parts.push(
            CompletedPart::builder()
                .part_number(n)
                .e_tag(out.e_tag().unwrap())
                .build(),
        );
    }
    let listed = c
        .list_parts()
        .bucket("mpu")
        .key("sdk")
        .upload_id(&id)
        .send()
        .await
        .expect("list parts");
    assert_eq!(listed.upload_id(), Some(id.as_str()));
    assert_eq!(listed.parts().len(), 2);
    let uploads = c
        .list_multipart_uploads()
        .bucket("mpu")
        .send()
        .await
        .expect("list uploads");
    let ids: Vec<&str> = uploads
        .uploads()
        .iter()
        .filter_map(|u| u.upload_id())
        .collect();
    assert_eq!(ids, [id.as_str()]);
    c.complete_multipart_upload()
        .bucket("mpu")
        .key("sdk")
        .upload_id(&id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .set_parts(Some(parts))
                .build(),
        )
        .send()
        .await
        .expect("complete");
    let got = c
        .get_object()
        .bucket("mpu")
        .key("sdk")
        .send()
        .await
        .expect("get");
    let body = sdk::body_bytes(got.body).await;
    assert_eq!(body.len(), (5 << 20) + 4);
    assert_eq!(&body[body.len() - 4..], b"tail");
}

/// A policy a re-signed step would break: parts of `chunked` only with signed chunks (or a
/// whole body's hash), every step of an upload of `presigned` only by presigned URL.
const SIGNATURE_POLICY: &str = r#"{"Version": "2012-10-17", "Statement": [
  {"Effect": "Deny", "Principal": "*", "Action": "s3:PutObject",
   "Resource": "arn:aws:s3:::pass/chunked",
   "Condition": {"StringNotLike": {"s3:x-amz-content-sha256": [
     "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
     "????????????????????????????????????????????????????????????????"]}}},
  {"Effect": "Deny", "Principal": "*",
   "Action": ["s3:PutObject", "s3:ListMultipartUploadParts", "s3:AbortMultipartUpload"],
   "Resource": "arn:aws:s3:::pass/presigned",
   "Condition": {"StringNotEquals": {"s3:authType": "REST-QUERY-STRING"}}}]}"#;

/// Through a passthrough proxy, the steps of an upload (tagged ids in their signed query) go to
/// the node as the client sent them: parts signed chunk by chunk and presigned URLs satisfy a
/// bucket policy that a re-signed request would not, and the proxy re-signs no request.
fn upload_steps_pass_through(runtime: RuntimeKind) {
    let s = Setup::start(runtime, 2, Auth::Passthrough);
    let mut c = s.client();
    assert_eq!(c.put("/pass", b"").status, 200);
    let r = c.request("PUT", "/pass?policy", &[], SIGNATURE_POLICY.as_bytes());
    assert_eq!(r.status, 204, "{}", r.text());

    // Parts signed chunk by chunk; a part copied from the same node.
    let src = s.key_on("pass", "src", s.node_of("pass", "chunked"));
    assert_eq!(c.put(&format!("/pass/{src}"), b"copied").status, 200);
    let id = c.request("POST", "/pass/chunked?uploads", &[], b"");
    assert_eq!(id.status, 200, "{}", id.text());
    let id = id.xml_value("UploadId").unwrap();
    assert!(id.contains('~'), "{id}");
    let first = vec![3u8; 200 << 10];
    let target = format!("/pass/chunked?partNumber=1&uploadId={}", encode(&id));
    let r = c.send("PUT", &target, &[], &first, Payload::ChunkedSigned);
    assert_eq!(r.status, 200, "{}", r.text());
    let etags = [r.header("etag").unwrap().to_owned(), {
        let target = format!("/pass/chunked?partNumber=2&uploadId={}", encode(&id));
        let source = format!("/pass/{src}");
        let r = c.request("PUT", &target, &[("x-amz-copy-source", &source)], b"");
        assert_eq!(r.status, 200, "{}", r.text());
        r.xml_value("ETag").unwrap().replace("&quot;", "\"")
    }];
    let r = c.get(&format!("/pass/chunked?uploadId={}", encode(&id)));
    assert_eq!(r.xml_value("UploadId").as_deref(), Some(id.as_str()));
    let r = complete_in(&mut c, "pass", "chunked", &id, &etags);
    assert_eq!(r.status, 200, "{}", r.text());
    let mut whole = first;
    whole.extend_from_slice(b"copied");
    assert_eq!(md5(&c.get("/pass/chunked").body), md5(&whole));
    // (Unsigned chunks, as a re-signed part would be sent: refused.)
    let id = c.request("POST", "/pass/chunked?uploads", &[], b"");
    let id = id.xml_value("UploadId").unwrap();
    let target = format!("/pass/chunked?partNumber=1&uploadId={}", encode(&id));
    c.send("PUT", &target, &[], b"x", Payload::ChunkedUnsignedCrc32)
        .expect_error(403, "AccessDenied");
    let target = format!("/pass/chunked?uploadId={}", encode(&id));
    assert_eq!(c.request("DELETE", &target, &[], b"").status, 204);

    presigned_steps(&s);

    let m = plain_get(s.admin(), "/metrics").text();
    let forwarded = |auth: &str| -> Vec<u64> {
        let want = format!("auth=\"{auth}\"}}");
        m.lines()
            .filter(|l| l.starts_with("ferry_proxy_backend_forwarded_total{") && l.contains(&want))
            .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
            .collect()
    };
    assert_eq!(forwarded("resigned"), [0, 0], "{m}");
    // (At least the upload steps above.)
    assert!(forwarded("passthrough").iter().sum::<u64>() >= 14, "{m}");
}

/// Every step of an upload by presigned URL (the part's made by the AWS SDK), fetched by the
/// raw client.
fn presigned_steps(s: &Setup) {
    let mut c = s.client();
    // Refused signed in a header.
    c.request("POST", "/pass/presigned?uploads", &[], b"")
        .expect_error(403, "AccessDenied");
    let r = c.presigned("POST", "/pass/presigned?uploads", b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let id = r.xml_value("UploadId").unwrap();
    let q = format!("uploadId={}", encode(&id));

    let sdk = sdk::client(s.addr);
    let mut url = None;
    sdk::block_on(async {
        let cfg = PresigningConfig::expires_in(Duration::from_secs(300)).unwrap();
        let req = sdk.upload_part().bucket("pass").key("presigned");
        let req = req.upload_id(&id).part_number(1).presigned(cfg).await;
        url = Some(req.expect("presign"));
    });
    let url: PresignedRequest = url.unwrap();
    let headers: Vec<(&str, &str)> = url.headers().collect();
    let target = target_of(url.uri());
    let r = http_request(s.addr, url.method(), target, &headers, b"by URL");
    assert_eq!(r.status, 200, "{}", r.text());
    let etag = r.header("etag").unwrap().to_owned();

    let r = c.presigned("GET", &format!("/pass/presigned?{q}"), b"");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.xml_value("UploadId").as_deref(), Some(id.as_str()));
    assert_eq!(r.xml_values("PartNumber"), ["1"]);
    let doc = format!(
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>{etag}</ETag></Part></CompleteMultipartUpload>"
    );
    let r = c.presigned("POST", &format!("/pass/presigned?{q}"), doc.as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(c.get("/pass/presigned").body, b"by URL");

    let r = c.presigned("POST", "/pass/presigned?uploads", b"");
    let q = format!("uploadId={}", encode(&r.xml_value("UploadId").unwrap()));
    let r = c.presigned("DELETE", &format!("/pass/presigned?{q}"), b"");
    assert_eq!(r.status, 204, "{}", r.text());
}
