//! Bucket fences on the node (what the proxy's DeleteBucket sets on every node): writes into a
//! fenced bucket answer 409 OperationAborted while reads, deletes and aborts go on; another
//! token can neither fence it nor delete it; the lease lapses; the holder lifts it or deletes
//! the bucket with it; it holds across a restart.

use std::time::Duration;

use ferry_server::RuntimeKind;

use crate::support::http::{Client, wait_until};
use crate::support::node::Node;

on_both_runtimes!(fence_closes_a_bucket_to_writes);

/// Set (or lift, with a lease of 0) a fence as the cluster does: sealed. An unsealed one is
/// refused first, whoever signs it (the bucket's owner here).
fn fence(c: &mut Client, bucket: &str, token: &str, lease: u32) -> u16 {
    let target = format!("/{bucket}?x-ferry-fence={token}&lease-seconds={lease}");
    c.request("POST", &target, &[], b"")
        .expect_error(403, "AccessDenied");
    let r = c.sealed("POST", &target, &[], b"");
    assert!(
        r.status == 204 || r.body.starts_with(b"<?xml"),
        "{}",
        r.text()
    );
    r.status
}

/// A DeleteBucket under fence `token`, sealed (an unsealed one is refused, fence or not).
fn delete_fenced(c: &mut Client, bucket: &str, token: &str) -> crate::support::http::Response {
    let target = format!("/{bucket}");
    let named = [("x-ferry-fence", token)];
    c.request("DELETE", &target, &named, b"")
        .expect_error(403, "AccessDenied");
    c.sealed("DELETE", &target, &named, b"")
}

/// The writes a fence refuses, each answering `status`.
fn writes_answer(c: &mut Client, upload: &str, status: u16) {
    let r = c.put("/fnc/k", b"v");
    assert_eq!(r.status, status, "PutObject: {}", r.text());
    let copy = [("x-amz-copy-source", "/fnc/kept")];
    let r = c.request("PUT", "/fnc/copy", &copy, b"");
    assert_eq!(r.status, status, "CopyObject: {}", r.text());
    let r = c.request("POST", "/fnc/other?uploads", &[], b"");
    assert_eq!(r.status, status, "CreateMultipartUpload: {}", r.text());
    let target = format!("/fnc/mp?partNumber=1&uploadId={upload}");
    let r = c.request("PUT", &target, &[], b"part one");
    assert_eq!(r.status, status, "UploadPart: {}", r.text());
    if status != 200 {
        for r in [
            c.put("/fnc/k", b"v"),
            c.request("POST", "/fnc/other?uploads", &[], b""),
        ] {
            r.expect_error(409, "OperationAborted");
        }
    }
}

/// Delete every object and abort every upload of `fnc` (reads and deletes pass a fence).
fn empty(c: &mut Client) {
    for key in c.get("/fnc?list-type=2").xml_values("Key") {
        assert_eq!(
            c.request("DELETE", &format!("/fnc/{key}"), &[], b"").status,
            204
        );
    }
    let r = c.get("/fnc?uploads");
    for (key, id) in r.xml_values("Key").iter().zip(r.xml_values("UploadId")) {
        let abort = format!("/fnc/{key}?uploadId={id}");
        assert_eq!(c.request("DELETE", &abort, &[], b"").status, 204);
    }
    assert!(c.get("/fnc?uploads").xml_values("UploadId").is_empty());
}

fn fence_closes_a_bucket_to_writes(rt: RuntimeKind) {
    let mut node = Node::start(rt);
    let mut c = node.client();
    assert_eq!(c.put("/fnc", b"").status, 200);
    assert_eq!(c.put("/fnc/kept", b"kept").status, 200);
    let r = c.request("POST", "/fnc/mp?uploads", &[], b"");
    let upload = r.xml_value("UploadId").expect("upload id");
    let part = format!("/fnc/mp?partNumber=1&uploadId={upload}");
    let r = c.request("PUT", &part, &[], b"part one");
    let etag = r.header("etag").expect("etag").to_owned();

    // Fenced: writes refused, reads and deletes go on.
    assert_eq!(fence(&mut c, "fnc", "t1", 60), 204);
    writes_answer(&mut c, &upload, 409);
    let complete = format!(
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>{etag}</ETag></Part>\
         </CompleteMultipartUpload>"
    );
    let target = format!("/fnc/mp?uploadId={upload}");
    c.request("POST", &target, &[], complete.as_bytes())
        .expect_error(409, "OperationAborted");
    assert_eq!(c.get("/fnc/kept").body, b"kept");
    assert_eq!(c.get("/fnc?list-type=2").xml_values("Key"), ["kept"]);
    assert_eq!(c.request("DELETE", "/fnc/k", &[], b"").status, 204);
    // Another token can neither fence nor delete it, nor can a client's DeleteBucket.
    assert_eq!(fence(&mut c, "fnc", "t2", 60), 409);
    c.request("DELETE", "/fnc", &[], b"")
        .expect_error(409, "OperationAborted");
    delete_fenced(&mut c, "fnc", "t2").expect_error(409, "OperationAborted");
    // The holder renews it for a second, and the lease lapses: a write is refused until it
    // does, then taken (the 20 s bound a hang guard, the lapse's time not asserted).
    assert_eq!(fence(&mut c, "fnc", "t1", 1), 204);
    wait_until(
        "the renewed 1 s lease lapses",
        Duration::from_secs(20),
        || {
            let r = c.put("/fnc/k", b"v");
            if r.status != 200 {
                r.expect_error(409, "OperationAborted");
            }
            r.status == 200
        },
    );
    writes_answer(&mut c, &upload, 200);
    // The refused completion left the upload as it was.
    let r = c.request("POST", &target, &[], complete.as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(c.get("/fnc/mp").body, b"part one");

    // Lifted by its holder only.
    assert_eq!(fence(&mut c, "fnc", "t3", 60), 204);
    assert_eq!(fence(&mut c, "fnc", "t3", 60), 204, "the holder renews it");
    assert_eq!(
        fence(&mut c, "fnc", "other", 0),
        204,
        "lifting another's is a no-op"
    );
    c.put("/fnc/k", b"v").expect_error(409, "OperationAborted");
    // It holds across a restart.
    node.stop();
    node.restart();
    let mut c = node.client();
    c.put("/fnc/k", b"v").expect_error(409, "OperationAborted");
    assert_eq!(fence(&mut c, "fnc", "t3", 0), 204);
    assert_eq!(c.put("/fnc/k", b"v").status, 200);

    // DeleteBucket under the holder's fence; it must still hold, and the bucket be empty.
    assert_eq!(fence(&mut c, "fnc", "t4", 60), 204);
    // A fence says whether the bucket is empty (what the proxy's DeleteBucket asks).
    let said = |c: &mut Client, token: &str| {
        let target = format!("/fnc?x-ferry-fence={token}&lease-seconds=60");
        let r = c.sealed("POST", &target, &[], b"");
        assert_eq!(r.status, 204, "{}", r.text());
        r.header("x-ferry-bucket-empty").map(str::to_owned)
    };
    assert_eq!(said(&mut c, "t4").as_deref(), Some("false"));
    delete_fenced(&mut c, "fnc", "t4").expect_error(409, "BucketNotEmpty");
    empty(&mut c);
    assert_eq!(said(&mut c, "t4").as_deref(), Some("true"));
    assert_eq!(fence(&mut c, "fnc", "t4", 0), 204);
    delete_fenced(&mut c, "fnc", "t4").expect_error(409, "OperationAborted");
    assert_eq!(fence(&mut c, "fnc", "t5", 60), 204);
    let r = delete_fenced(&mut c, "fnc", "t5");
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(c.request("HEAD", "/fnc", &[], b"").status, 404);
    // A bucket of the same name again starts unfenced.
    assert_eq!(c.put("/fnc", b"").status, 200);
    assert_eq!(c.put("/fnc/k", b"v").status, 200);

    // Fencing a bucket that does not exist, and bad parameters.
    assert_eq!(fence(&mut c, "nobucket", "t", 10), 404);
    for target in [
        "/fnc?x-ferry-fence=t&lease-seconds=301",
        "/fnc?x-ferry-fence=t",
        "/fnc?x-ferry-fence=bad%20token&lease-seconds=1",
    ] {
        c.sealed("POST", target, &[], b"")
            .expect_error(400, "InvalidArgument");
    }
}
