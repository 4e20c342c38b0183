//! The `ferry` binary's logs on stderr: JSON lines with the access event of each request
//! (`--access-log`), text lines with the same fields, and the level filter (`RUST_LOG` over
//! `--log-level`) with a backend going down logged at warn.

use std::net::TcpListener;

use ferry_server::RuntimeKind;
use serde_json::Value;

use crate::support::http::Client;
use crate::support::node::Node;
use crate::support::process::{KEY_ENV, ready_addr, spawn_ferry, stop};

/// Every stderr line as JSON (each must be one).
fn json_lines(stderr: &str) -> Vec<Value> {
    stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l:?}")))
        .collect()
}

fn access_events<'a>(events: &'a [Value], op: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["target"] == "ferry::access" && e["op"] == op)
        .collect()
}

#[test]
fn json_access_events_of_the_proxy() {
    let node = Node::start(RuntimeKind::Tokio);
    let backend = format!("n1=http://{}", node.addr);
    let mut child = spawn_ferry(
        &[
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "127.0.0.1:0",
            "--backend",
            &backend,
            "--threads",
            "1",
            "--log-format",
            "json",
            "--access-log",
        ],
        &KEY_ENV,
    );
    let addr = ready_addr(&mut child, "ferry proxy listening on http://");
    let mut c = Client::connect(addr);
    assert_eq!(c.put("/logs", b"").status, 200);
    assert_eq!(c.put("/logs/dir/obj.txt", b"hello").status, 200);
    let r = c.get("/logs/dir/obj.txt");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"hello"[..]));
    c.get("/logs/missing").expect_error(404, "NoSuchKey");
    let preflight = [
        ("Origin", "https://x.example"),
        ("Access-Control-Request-Method", "GET"),
    ];
    let r = crate::support::http::http_request(addr, "OPTIONS", "/logs/p", &preflight, b"");
    r.expect_error(403, "AccessForbidden");
    let client_port = c.stream.local_addr().unwrap().port();
    drop(c);
    let events = json_lines(&stop(child, "-TERM"));
    let options = access_events(&events, "PreflightRequest");
    assert_eq!(options.len(), 1, "{options:?}");
    assert_eq!(
        (
            &options[0]["bucket"],
            &options[0]["key"],
            &options[0]["status"]
        ),
        (&Value::from("logs"), &Value::from("p"), &Value::from(403))
    );

    let put = access_events(&events, "PutObject");
    assert_eq!(put.len(), 1, "{put:?}");
    let put = put[0];
    assert_eq!(put["level"], "INFO");
    assert_eq!(put["server"], "proxy");
    assert_eq!(put["bucket"], "logs");
    assert_eq!(put["key"], "dir/obj.txt");
    assert_eq!(put["status"], 200);
    assert_eq!(put["bytes_in"], 5);
    assert_eq!(put["backend"], "n1");
    assert_eq!(put["peer"], format!("127.0.0.1:{client_port}"));
    assert!(put["duration_us"].as_u64().is_some(), "{put}");
    assert!(put["request_id"].as_str().is_some_and(|s| !s.is_empty()));

    let gets = access_events(&events, "GetObject");
    let statuses: Vec<(&Value, &Value, &Value)> = gets
        .iter()
        .map(|e| (&e["key"], &e["status"], &e["bytes_out"]))
        .collect();
    assert_eq!(gets.len(), 2, "{gets:?}");
    assert_eq!(
        statuses[0],
        (
            &Value::from("dir/obj.txt"),
            &Value::from(200),
            &Value::from(5)
        )
    );
    assert_eq!(statuses[1].0, "missing");
    assert_eq!(statuses[1].1, 404);
    // Fan-outs name no single backend.
    let create = access_events(&events, "CreateBucket");
    assert_eq!(create.len(), 1);
    assert_eq!(
        (&create[0]["bucket"], &create[0]["backend"]),
        (&Value::from("logs"), &Value::from("*"))
    );

    // Startup and shutdown, with the listen addresses.
    let message = |m: &str| events.iter().find(|e| e["message"] == m);
    let listening = message("proxy listening").expect("startup event");
    assert_eq!(listening["listen"], addr.to_string());
    assert!(
        listening["admin"]
            .as_str()
            .is_some_and(|a| a.starts_with("127.0.0.1:"))
    );
    let configured = message("backend configured").expect("backend event");
    assert_eq!(configured["backend"], "n1");
    assert_eq!(
        message("stopping gracefully").expect("signal event")["signal"],
        "SIGTERM"
    );
    assert!(message("proxy stopped").is_some(), "{events:?}");
}

#[test]
fn text_lines_of_the_local_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_ferry(
        &[
            "--listen",
            "127.0.0.1:0",
            "--data",
            dir.path().to_str().unwrap(),
            "--access-log",
        ],
        &KEY_ENV,
    );
    let addr = ready_addr(&mut child, "Ferry is running: S3 endpoint http://");
    let mut c = Client::connect(addr);
    assert_eq!(c.put("/txt", b"").status, 200);
    assert_eq!(c.put("/txt/some-key", b"abc").status, 200);
    drop(c);
    let stderr = stop(child, "-TERM");
    for line in stderr.lines() {
        assert!(
            serde_json::from_str::<Value>(line).is_err(),
            "JSON in text mode: {line}"
        );
    }
    // The proxy's line and the node's line of the same PUT (one process runs both).
    let puts: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("ferry::access") && l.contains("op=PutObject"))
        .collect();
    assert_eq!(puts.len(), 2, "{stderr}");
    for want in [
        " INFO ",
        "bucket=\"txt\"",
        "key=\"some-key\"",
        "status=200",
        "bytes_in=3",
        "bytes_out=0",
        "duration_us=",
        "peer=127.0.0.1:",
    ] {
        assert!(puts.iter().all(|l| l.contains(want)), "{want} in {puts:#?}");
    }
    assert!(
        puts.iter()
            .any(|l| l.contains("server=proxy") && l.contains("backend=node-"))
    );
    assert!(
        puts.iter()
            .any(|l| l.contains("server=node") && l.contains("backend=-"))
    );
    assert!(stderr.contains("node listening"), "{stderr}");
    assert!(stderr.contains("proxy listening"), "{stderr}");
}

#[test]
fn rust_log_wins_and_a_dead_backend_is_a_warning() {
    // A port nothing listens on.
    let dead = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let backend = format!("gone=http://{dead}");
    let mut child = spawn_ferry(
        &[
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "none",
            "--backend",
            &backend,
            "--log-format",
            "json",
            "--log-level",
            "debug",
        ],
        &[KEY_ENV[0], KEY_ENV[1], KEY_ENV[2], ("RUST_LOG", "warn")],
    );
    let addr = ready_addr(&mut child, "ferry proxy listening on http://");
    let mut c = Client::connect(addr);
    c.put("/bkt/k", b"v").expect_error(503, "SlowDown");
    drop(c);
    let events = json_lines(&stop(child, "-TERM"));
    assert!(
        events
            .iter()
            .all(|e| e["level"] == "WARN" || e["level"] == "ERROR"),
        "RUST_LOG=warn, yet: {events:?}"
    );
    // No access events without --access-log.
    assert!(events.iter().all(|e| e["target"] != "ferry::access"));
    let down = events
        .iter()
        .find(|e| e["message"] == "backend down")
        .unwrap_or_else(|| panic!("no backend down event in {events:?}"));
    assert_eq!(down["backend"], "gone");
    assert_eq!(down["addr"], dead.to_string());
    assert!(down["reason"].as_str().is_some_and(|r| !r.is_empty()));
}

/// SSE-C keys never reach a log: two `ferry node`s and two `ferry proxy`s in front of them
/// (passing requests through, and re-signing them), every one logging at trace with access
/// events, serve SSE-C writes, reads (right, wrong and missing keys), copies and part copies
/// beside their source and across the nodes; neither key appears in any log line, in base64
/// or in hex.
#[test]
fn sse_c_keys_stay_out_of_the_logs() {
    use crate::sdk_sse::{Keyed, Mode, SourceKeyed, body, key_md5};
    use crate::support::sdk;

    const LOGS: [&str; 6] = [
        "--log-level",
        "trace",
        "--access-log",
        "--log-format",
        "json",
        "--no-fsync",
    ];
    let (key, other) = ([0x5a; 32], [0xa7; 32]);
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let mut nodes = Vec::new();
    let mut backends = Vec::new();
    for (i, dir) in dirs.iter().enumerate() {
        let data = dir.path().to_str().unwrap();
        let mut args = vec!["node", "--data", data, "--listen", "127.0.0.1:0"];
        args.extend(["--threads", "1", "--allow-sse-c-over-http"]);
        args.extend(LOGS);
        let mut child = spawn_ferry(&args, &KEY_ENV);
        let addr = ready_addr(&mut child, "ferry node listening on http://");
        backends.push(format!("n{}=http://{addr}", i + 1));
        nodes.push(child);
    }
    let placement = ferry_core::place::Placement::new(&[("n1", 1), ("n2", 1)]).unwrap();
    let mut proxies = Vec::new();
    for resign in [false, true] {
        let mut args = vec!["proxy", "--listen", "127.0.0.1:0", "--threads", "1"];
        args.extend(["--admin-listen", "127.0.0.1:0"]);
        let specs: Vec<String> = backends
            .iter()
            .map(|b| {
                if resign {
                    format!("{b},auth=resign")
                } else {
                    b.clone()
                }
            })
            .collect();
        for s in &specs {
            args.extend(["--backend", s.as_str()]);
        }
        args.extend(LOGS.iter().filter(|a| **a != "--no-fsync"));
        let mut child = spawn_ferry(&args, &KEY_ENV);
        let addr = ready_addr(&mut child, "ferry proxy listening on http://");
        let bucket = if resign {
            "keys-resigned"
        } else {
            "keys-passed"
        };
        // The source on one node; copies beside it and on the other node.
        let on = |want: usize, prefix: &str| {
            (0..)
                .map(|i| format!("{prefix}{i}"))
                .find(|k| placement.pick(bucket, k) == want)
                .unwrap()
        };
        let (src, near, far) = (on(0, "src-"), on(0, "near-"), on(1, "far-"));
        sdk::block_on(async {
            let c = sdk::client(addr);
            c.create_bucket()
                .bucket(bucket)
                .send()
                .await
                .expect("bucket");
            let data = body(200_000, 1);
            c.put_object()
                .bucket(bucket)
                .key(&src)
                .keyed(Mode::C(key))
                .body(data.clone().into())
                .send()
                .await
                .unwrap_or_else(|e| panic!("put: {}", sdk::show(&e)));
            let get = |mode: Mode| c.get_object().bucket(bucket).key(&src).keyed(mode).send();
            let got = get(Mode::C(key)).await.expect("get");
            assert!(sdk::body_bytes(got.body).await == data);
            sdk::assert_error(get(Mode::C(other)).await, 403, Some("AccessDenied"));
            sdk::assert_error(get(Mode::Plain).await, 400, Some("InvalidRequest"));
            let r = c
                .head_object()
                .bucket(bucket)
                .key(&src)
                .keyed(Mode::C(other));
            sdk::assert_error(r.send().await, 403, None);
            // A key with another key's MD5.
            let r = c
                .put_object()
                .bucket(bucket)
                .key("bad")
                .sse_customer_algorithm("AES256")
                .sse_customer_key(sdk::b64(&key))
                .sse_customer_key_md5(key_md5(&other))
                .body(b"x".to_vec().into())
                .send()
                .await;
            sdk::assert_error(r, 400, Some("InvalidArgument"));
            for dst in [&near, &far] {
                c.copy_object()
                    .bucket(bucket)
                    .key(dst)
                    .copy_source(format!("{bucket}/{src}"))
                    .source_keyed(Mode::C(key))
                    .keyed(Mode::C(other))
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("copy to {dst}: {}", sdk::show(&e)));
                let r = c
                    .copy_object()
                    .bucket(bucket)
                    .key(dst)
                    .copy_source(format!("{bucket}/{src}"))
                    .source_keyed(Mode::C(other))
                    .send()
                    .await;
                sdk::assert_error(r, 403, Some("AccessDenied"));
                let up = c
                    .create_multipart_upload()
                    .bucket(bucket)
                    .key(dst)
                    .keyed(Mode::C(other))
                    .send()
                    .await
                    .expect("create");
                let id = up.upload_id().expect("id");
                let part = c
                    .upload_part_copy()
                    .bucket(bucket)
                    .key(dst)
                    .upload_id(id)
                    .part_number(1)
                    .copy_source(format!("{bucket}/{src}"))
                    .source_keyed(Mode::C(key))
                    .keyed(Mode::C(other))
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("part copy to {dst}: {}", sdk::show(&e)));
                let etag = part
                    .copy_part_result()
                    .and_then(|p| p.e_tag())
                    .expect("etag");
                let parts = aws_sdk_s3::types::CompletedMultipartUpload::builder()
                    .parts(
                        aws_sdk_s3::types::CompletedPart::builder()
                            .part_number(1)
                            .e_tag(etag)
                            .build(),
                    )
                    .build();
                c.complete_multipart_upload()
                    .bucket(bucket)
                    .key(dst)
                    .upload_id(id)
                    .keyed(Mode::C(other))
                    .multipart_upload(parts)
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("complete {dst}: {}", sdk::show(&e)));
                let got = c
                    .get_object()
                    .bucket(bucket)
                    .key(dst)
                    .keyed(Mode::C(other))
                    .send()
                    .await
                    .expect("get copy");
                assert!(sdk::body_bytes(got.body).await == data, "{dst}");
            }
        });
        proxies.push(child);
    }
    let logs: Vec<String> = proxies
        .into_iter()
        .chain(nodes)
        .map(|child| stop(child, "-TERM"))
        .collect();
    for k in [key, other] {
        let b64 = sdk::b64(&k);
        let hex = sdk::hex(&k);
        // Without its padding, and in either case of hex.
        let forms = [b64.trim_end_matches('='), &hex, &hex.to_uppercase()];
        for (log, form) in logs.iter().flat_map(|l| forms.iter().map(move |f| (l, f))) {
            assert!(!log.contains(form), "an SSE-C key in a log:\n{log}");
        }
    }
    // The logs were on: each proxy logged its copies and part copies, at debug and below too.
    for log in &logs[..2] {
        let events = json_lines(log);
        for op in ["CopyObject", "UploadPartCopy", "GetObject"] {
            assert!(!access_events(&events, op).is_empty(), "no {op} in\n{log}");
        }
        assert!(events.iter().any(|e| e["level"] == "DEBUG"), "{log}");
    }
    for log in &logs[2..] {
        assert!(
            !access_events(&json_lines(log), "PutObject").is_empty(),
            "{log}"
        );
    }
}
