//! The node's life: the `ferry node` binary (ready line, credentials, SIGTERM), graceful stop
//! of the library's `NodeHandle`, restart on the same data, bind errors.

use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

use ferry_server::{RuntimeKind, start_node};

use crate::support::http::{Client, Payload, wait_until};
use crate::support::node::{Node, node_config};
use crate::support::process::{KEY_ENV, StderrLines, ready_addr, signal, spawn_ferry, stop};
use crate::support::store::temp_files;

/// The first line `ferry node` prints.
const READY: &str = "ferry node listening on http://";

on_both_runtimes!(
    binary_serves_and_stops_on_sigterm,
    graceful_stop_finishes_requests_in_flight,
    data_survives_a_restart,
);

fn binary_serves_and_stops_on_sigterm(rt: RuntimeKind) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut child = spawn_ferry(
        &[
            "node",
            "--data",
            data.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
            "--runtime",
            rt.as_str(),
            "--no-fsync",
        ],
        &KEY_ENV,
    );
    let addr = ready_addr(&mut child, READY);
    let mut c = Client::connect(addr);
    assert_eq!(c.put("/from-binary", b"").status, 200);
    assert_eq!(c.put("/from-binary/k", b"v").status, 200);
    assert_eq!(c.get("/from-binary/k").body, b"v");
    drop(c);
    stop(child, "-TERM");
    // No generated credentials: the environment had them.
    assert!(!data.join("credentials").exists());
}

#[test]
fn binary_generates_credentials_once_and_stops_on_sigint() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap().to_owned();
    let args = [
        "node",
        "--data",
        &data,
        "--listen",
        "127.0.0.1:0",
        "--no-fsync",
    ];
    let mut child = spawn_ferry(&args, &[]);
    ready_addr(&mut child, READY);
    let stderr = stop(child, "-INT");
    let keys = std::fs::read_to_string(dir.path().join("credentials")).unwrap();
    let mut lines = keys.lines();
    let (access, secret) = (lines.next().unwrap(), lines.next().unwrap());
    assert!(
        stderr.contains(&format!("access key: {access}")),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("secret key: {secret}")),
        "{stderr}"
    );
    // The second start reuses them, prints no secret, and accepts requests signed with them.
    let mut child = spawn_ferry(&args, &[]);
    let addr = ready_addr(&mut child, READY);
    let mut c = Client::connect(addr);
    c.credentials = ferry_core::s3::sigv4::Credentials::new(access, secret);
    assert_eq!(c.get("/").status, 200);
    drop(c);
    let stderr = stop(child, "-TERM");
    assert!(!stderr.contains(secret), "{stderr}");
}

/// `ferry ARGS` (ready line `ready`) takes SIGHUP twice, logging that it has nothing to reload,
/// and still serves; SIGTERM then stops it cleanly.
fn sighup_is_logged_and_ignored(args: &[&str], ready: &str) {
    let mut child = spawn_ferry(args, &KEY_ENV);
    let addr = ready_addr(&mut child, ready);
    let mut stderr = StderrLines::take(&mut child);
    for _ in 0..2 {
        signal(&child, "-HUP");
        stderr.wait_for("nothing to reload");
    }
    let mut c = Client::connect(addr);
    assert_eq!(c.put("/after-hup", b"").status, 200);
    assert_eq!(c.put("/after-hup/k", b"v").status, 200);
    assert_eq!(c.get("/after-hup/k").body, b"v");
    drop(c);
    signal(&child, "-TERM");
    let status = child.wait().expect("exit");
    let stderr = stderr.rest();
    assert!(status.success(), "{status:?}; stderr:\n{stderr}");
    assert!(stderr.contains("stopping gracefully"), "{stderr}");
}

/// `kill -HUP $(pidof ferry)`, meant for the proxies on a machine, reaches its nodes and local
/// clusters too: they go on.
#[test]
fn sighup_stops_neither_a_node_nor_the_local_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let (node, cluster) = (dir.path().join("node"), dir.path().join("cluster"));
    sighup_is_logged_and_ignored(
        &[
            "node",
            "--data",
            node.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
            "--no-fsync",
        ],
        READY,
    );
    sighup_is_logged_and_ignored(
        &[
            "--data",
            cluster.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ],
        "Ferry is running: S3 endpoint http://",
    );
}

#[test]
fn binary_fails_cleanly_on_a_busy_address() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ferry"))
        .args([
            "node",
            "--data",
            dir.path().to_str().unwrap(),
            "--listen",
            &addr,
        ])
        .env("FERRY_ACCESS_KEY", "a")
        .env("FERRY_SECRET_KEY", "b")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&addr),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn graceful_stop_finishes_requests_in_flight(rt: RuntimeKind) {
    let mut node = Node::start(rt);
    let mut c = node.client();
    assert_eq!(c.put("/graceful", b"").status, 200);
    let body = vec![b'g'; 100_000];
    let req = c.encode("PUT", "/graceful/k", &[], &body, Payload::Signed);
    // The head and half the body, then stop the node while the rest is outstanding.
    let (first, rest) = req.split_at(req.len() - 50_000);
    c.send_raw(first);
    // The request has started (its upload's spool file is there) before the stop begins.
    let dir = node.dir.path().to_owned();
    wait_until("the PUT starts writing", Duration::from_secs(20), || {
        temp_files(&dir) == 1
    });
    let handle = node.handle.take().unwrap();
    let stopper = std::thread::spawn(move || handle.stop());
    // The stop has begun (the listener is closed) before the rest of the body comes.
    wait_until("the node stops listening", Duration::from_secs(20), || {
        TcpStream::connect(node.addr).is_err()
    });
    c.send_raw(rest);
    let r = c.read_response(false);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("connection"), Some("close"));
    stopper.join().unwrap();
    assert!(TcpStream::connect(node.addr).is_err(), "still listening");
    // The object was committed: a new node on the same data serves it.
    let mut cfg = node_config(node.dir.path(), rt);
    cfg.fsync = false;
    let again = start_node(cfg).unwrap();
    let mut c = Client::connect(again.local_addr());
    assert_eq!(c.get("/graceful/k").body, body);
    again.stop();
}

fn data_survives_a_restart(rt: RuntimeKind) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = |rt| node_config(dir.path(), rt);
    let node = start_node(cfg(rt)).unwrap();
    let mut c = Client::connect(node.local_addr());
    assert_eq!(c.put("/restart", b"").status, 200);
    assert_eq!(c.put("/restart/a", b"alpha").status, 200);
    drop(c);
    drop(node);
    // Restarted on the other runtime: same store, same answers.
    let other = match rt {
        RuntimeKind::Tokio => RuntimeKind::Smol,
        RuntimeKind::Smol => RuntimeKind::Tokio,
    };
    let node = start_node(cfg(other)).unwrap();
    let mut c = Client::connect(node.local_addr());
    assert_eq!(c.get("/restart/a").body, b"alpha");
    assert_eq!(c.get("/restart?list-type=2").xml_values("Key"), ["a"]);
    // A second node on the same data directory is refused (the store is locked).
    assert!(start_node(cfg(rt)).is_err());
    // Binding an address in use fails at start.
    let elsewhere = tempfile::tempdir().unwrap();
    let mut busy = cfg(rt);
    busy.data_dir = elsewhere.path().to_owned();
    busy.listen = node.local_addr();
    let err = start_node(busy).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
}
