//! HTTP/1.1 on the wire, with requests authorised by SDK-presigned URLs and written by hand, on a
//! node and through the proxy, on both runtimes: `Expect: 100-continue` (accepted and refused),
//! pipelining, keep-alive after errors, `Connection: close`, a body cut short, and a PUT without a
//! length.

use std::time::Duration;

use aws_sdk_s3::Client;
use aws_sdk_s3::presigning::PresigningConfig;

use crate::support::http::{Conn, request_head, target_of};
use crate::support::sdk::{self, Target, TestNode, assert_code, pattern};

on_every_target!(
    expect_continue_accepted,
    expect_continue_refused_without_body,
    pipelined_requests_answered_in_order,
    keep_alive_after_errors,
    connection_close_honoured,
    truncated_body_stores_nothing,
    put_without_length_refused,
    too_large_refused_before_the_body,
);

fn config() -> PresigningConfig {
    PresigningConfig::expires_in(Duration::from_secs(600)).expect("presigning config")
}

async fn presigned_get(c: &Client, bucket: &str, key: &str) -> String {
    let req = c
        .get_object()
        .bucket(bucket)
        .key(key)
        .presigned(config())
        .await
        .expect("presign GET");
    target_of(req.uri()).to_owned()
}

async fn presigned_put(c: &Client, bucket: &str, key: &str) -> String {
    let req = c
        .put_object()
        .bucket(bucket)
        .key(key)
        .presigned(config())
        .await
        .expect("presign PUT");
    assert_eq!(req.headers().count(), 0, "nothing but the URL is signed");
    target_of(req.uri()).to_owned()
}

async fn expect_continue_accepted(target: Target) {
    let n = TestNode::start(target);
    n.bucket("wire").await;
    let target = presigned_put(&n.client, "wire", "continued").await;
    let data = pattern(300_000, 50);
    let len = data.len().to_string();
    let mut conn = Conn::connect(n.addr);
    conn.send_raw(&request_head(
        n.addr,
        "PUT",
        &target,
        &[("Content-Length", &len), ("Expect", "100-continue")],
    ));
    // The server asks for the body before it is sent.
    let interim = conn.try_read_response(false).expect("interim response");
    assert_eq!(interim.status, 100, "{interim:?}");
    conn.send_raw(&data);
    let done = conn.try_read_response(false).expect("final response");
    assert_eq!(done.status, 200, "{done:?}");
    assert_eq!(done.header("etag"), Some(sdk::etag_of(&data).as_str()));
    assert_eq!(n.get("wire", "continued").await, data);
}

async fn expect_continue_refused_without_body(target: Target) {
    let n = TestNode::start(target);
    n.bucket("wire").await;
    let target = presigned_put(&n.client, "wire", "refused").await;
    // Break the signature: the server must answer at once, without asking for the body.
    let bad = target.replace("X-Amz-Signature=", "X-Amz-Signature=0");
    let mut conn = Conn::connect(n.addr);
    conn.send_raw(&request_head(
        n.addr,
        "PUT",
        &bad,
        &[("Content-Length", "1000000"), ("Expect", "100-continue")],
    ));
    let r = conn.try_read_response(false).expect("response");
    assert_eq!(r.status, 403, "{r:?}");
    assert!(
        String::from_utf8_lossy(&r.body).contains("<Code>SignatureDoesNotMatch</Code>"),
        "{r:?}"
    );
    assert_code(
        n.client
            .head_object()
            .bucket("wire")
            .key("refused")
            .send()
            .await,
        404,
        "NotFound",
    );
}

async fn pipelined_requests_answered_in_order(target: Target) {
    let n = TestNode::start(target);
    n.bucket("wire").await;
    let bodies: Vec<Vec<u8>> = (0..4).map(|i| pattern(10_000 * i + 1, i as u8)).collect();
    let mut batch = Vec::new();
    for (i, b) in bodies.iter().enumerate() {
        let key = format!("p{i}");
        n.put("wire", &key, b.clone()).await;
        let target = presigned_get(&n.client, "wire", &key).await;
        batch.extend(request_head(n.addr, "GET", &target, &[]));
    }
    // A presigned HEAD in the middle of the pipeline, and a missing key.
    let head = n
        .client
        .head_object()
        .bucket("wire")
        .key("p1")
        .presigned(config())
        .await
        .expect("presign HEAD");
    batch.extend(request_head(n.addr, "HEAD", target_of(head.uri()), &[]));
    let missing = presigned_get(&n.client, "wire", "missing").await;
    batch.extend(request_head(n.addr, "GET", &missing, &[]));
    let mut conn = Conn::connect(n.addr);
    conn.send_raw(&batch);
    for (i, b) in bodies.iter().enumerate() {
        let r = conn.try_read_response(false).expect("response");
        assert_eq!(r.status, 200, "request {i}: {r:?}");
        assert_eq!(&r.body, b, "request {i}");
    }
    let r = conn.try_read_response(true).expect("HEAD response");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-length"), Some("10001"));
    let r = conn.try_read_response(false).expect("404 response");
    assert_eq!(r.status, 404);
    assert!(String::from_utf8_lossy(&r.body).contains("<Code>NoSuchKey</Code>"));
}

async fn keep_alive_after_errors(target: Target) {
    let n = TestNode::start(target);
    n.bucket("wire").await;
    n.put("wire", "there", b"here I am".to_vec()).await;
    let mut conn = Conn::connect(n.addr);
    // Unsigned: 403 with a body; the connection stays usable.
    conn.send_raw(&request_head(n.addr, "GET", "/wire/there", &[]));
    let r = conn.try_read_response(false).expect("403");
    assert_eq!(r.status, 403);
    let missing = presigned_get(&n.client, "wire", "not-there").await;
    conn.send_raw(&request_head(n.addr, "GET", &missing, &[]));
    let r = conn.try_read_response(false).expect("404");
    assert_eq!(r.status, 404);
    let there = presigned_get(&n.client, "wire", "there").await;
    conn.send_raw(&request_head(n.addr, "GET", &there, &[]));
    let r = conn.try_read_response(false).expect("200");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"here I am");
}

async fn connection_close_honoured(target: Target) {
    let n = TestNode::start(target);
    n.bucket("wire").await;
    n.put("wire", "k", b"v".to_vec()).await;
    let target = presigned_get(&n.client, "wire", "k").await;
    let mut conn = Conn::connect(n.addr);
    conn.send_raw(&request_head(
        n.addr,
        "GET",
        &target,
        &[("Connection", "close")],
    ));
    let r = conn.try_read_response(false).expect("response");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"v");
    assert!(
        conn.is_closed(),
        "the server closes after Connection: close"
    );
}

async fn truncated_body_stores_nothing(target: Target) {
    let n = TestNode::start(target);
    n.bucket("wire").await;
    let target = presigned_put(&n.client, "wire", "cut").await;
    let data = pattern(200_000, 51);
    let mut conn = Conn::connect(n.addr);
    conn.send_raw(&request_head(
        n.addr,
        "PUT",
        &target,
        &[("Content-Length", "400000")],
    ));
    conn.send_raw(&data);
    conn.shutdown_write();
    // Whatever the server says (an error, or nothing), it must not store the half body.
    if let Some(r) = conn.try_read_response(false) {
        assert!(r.status >= 400, "{r:?}");
    }
    assert_code(
        n.client.get_object().bucket("wire").key("cut").send().await,
        404,
        "NoSuchKey",
    );
    let listed = n
        .client
        .list_objects_v2()
        .bucket("wire")
        .send()
        .await
        .expect("list");
    assert_eq!(listed.key_count(), Some(0));
}

async fn put_without_length_refused(target: Target) {
    let n = TestNode::start(target);
    n.bucket("wire").await;
    // Neither Content-Length nor Transfer-Encoding: S3 documents 411 MissingContentLength.
    let target = presigned_put(&n.client, "wire", "unframed").await;
    let mut conn = Conn::connect(n.addr);
    conn.send_raw(&request_head(n.addr, "PUT", &target, &[]));
    let r = conn.try_read_response(false).expect("response");
    assert_eq!(r.status, 411, "{r:?}");
    assert!(
        String::from_utf8_lossy(&r.body).contains("<Code>MissingContentLength</Code>"),
        "{r:?}"
    );
    assert_code(
        n.client
            .get_object()
            .bucket("wire")
            .key("unframed")
            .send()
            .await,
        404,
        "NoSuchKey",
    );

    // A chunked body: S3 refuses it (411, or 501 for the Transfer-Encoding); a server that
    // takes it must store exactly the decoded bytes.
    let target = presigned_put(&n.client, "wire", "chunked").await;
    let mut conn = Conn::connect(n.addr);
    let mut req = request_head(n.addr, "PUT", &target, &[("Transfer-Encoding", "chunked")]);
    req.extend_from_slice(b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
    conn.send_raw(&req);
    let r = conn.try_read_response(false).expect("response");
    match r.status {
        200 => assert_eq!(n.get("wire", "chunked").await, b"hello world"),
        411 | 501 => assert_code(
            n.client
                .get_object()
                .bucket("wire")
                .key("chunked")
                .send()
                .await,
            404,
            "NoSuchKey",
        ),
        _ => panic!("{r:?}"),
    }
}

async fn too_large_refused_before_the_body(target: Target) {
    let n = TestNode::start(target);
    n.bucket("wire").await;
    let target = presigned_put(&n.client, "wire", "huge").await;
    let mut conn = Conn::connect(n.addr);
    // One byte over S3's 5 GiB single-PUT limit; only the head is sent.
    let len = ((5u64 << 30) + 1).to_string();
    conn.send_raw(&request_head(
        n.addr,
        "PUT",
        &target,
        &[("Content-Length", &len)],
    ));
    let r = conn
        .try_read_response(false)
        .expect("response before the body");
    assert_eq!(r.status, 400, "{r:?}");
    assert!(
        String::from_utf8_lossy(&r.body).contains("<Code>EntityTooLarge</Code>"),
        "{r:?}"
    );
}
