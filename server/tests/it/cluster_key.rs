//! The cluster key as the `ferry` binary takes it: the local cluster makes its own on the first
//! start and keeps it; a proxy in front of Ferry nodes refuses to start without one; a key file
//! others may read is refused; `ferry cluster-key new` makes a file a node and a proxy share.

use std::os::unix::fs::PermissionsExt as _;

use crate::support::http::Client;
use crate::support::process::{KEY_ENV, ready_addr, spawn_ferry, stop};

/// The local cluster with no key in its environment makes `DATA/cluster.key` (0600) and works:
/// a DeleteBucket, whose fences the proxy seals with it, goes through; started again on the
/// same data it keeps the same key.
#[test]
fn the_local_cluster_makes_its_key_and_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    let keyless = [KEY_ENV[0], KEY_ENV[1]];
    let args = ["--listen", "127.0.0.1:0", "--data", data];
    let first = {
        let mut child = spawn_ferry(&args, &keyless);
        let addr = ready_addr(&mut child, "Ferry is running: S3 endpoint http://");
        let mut c = Client::connect(addr);
        assert_eq!(c.put("/made", b"").status, 200);
        assert_eq!(c.put("/made/k", b"v").status, 200);
        assert_eq!(c.request("DELETE", "/made/k", &[], b"").status, 204);
        let r = c.request("DELETE", "/made", &[], b"");
        assert_eq!(r.status, 204, "{}", r.text());
        assert_eq!(c.put("/kept", b"").status, 200);
        drop(c);
        stop(child, "-TERM");
        let path = dir.path().join("cluster.key");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        std::fs::read_to_string(&path).unwrap()
    };
    assert!(
        first
            .lines()
            .any(|l| l.len() == 64 && l.bytes().all(|b| b.is_ascii_hexdigit())),
        "a key line"
    );
    let mut child = spawn_ferry(&args, &keyless);
    let addr = ready_addr(&mut child, "Ferry is running: S3 endpoint http://");
    let mut c = Client::connect(addr);
    let r = c.request("DELETE", "/kept", &[], b"");
    assert_eq!(r.status, 204, "{}", r.text());
    drop(c);
    stop(child, "-TERM");
    let again = std::fs::read_to_string(dir.path().join("cluster.key")).unwrap();
    assert_eq!(first, again, "the key is kept");
}

/// `ferry proxy` in front of a Ferry node without a cluster key does not start, and says why;
/// with a key file others may read, neither does `ferry node`, naming the file.
#[test]
fn no_key_or_an_open_key_file_is_refused_at_start() {
    let keyless = [KEY_ENV[0], KEY_ENV[1]];
    let child = spawn_ferry(
        &[
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "none",
            "--backend",
            "n1=http://127.0.0.1:9",
        ],
        &keyless,
    );
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cluster key") && err.contains("n1"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("open.key");
    let made = std::process::Command::new(env!("CARGO_BIN_EXE_ferry"))
        .args(["cluster-key", "new", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let data = dir.path().join("node");
    let child = spawn_ferry(
        &[
            "node",
            "--data",
            data.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
            "--cluster-key",
            file.to_str().unwrap(),
        ],
        &keyless,
    );
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("open.key") && err.contains("too open"),
        "{err}"
    );
}

/// A node and a proxy started as processes with one `ferry cluster-key new` file: the proxy's
/// sealed requests are taken (DeleteBucket's fences), and the node refuses the same headers
/// from a client.
#[test]
fn a_node_and_a_proxy_share_a_key_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cluster.key");
    let made = std::process::Command::new(env!("CARGO_BIN_EXE_ferry"))
        .args(["cluster-key", "new", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    let keyless = [KEY_ENV[0], KEY_ENV[1]];
    let data = dir.path().join("node");
    let key = file.to_str().unwrap();
    let mut node = spawn_ferry(
        &[
            "node",
            "--data",
            data.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
            "--threads",
            "1",
            "--cluster-key",
            key,
        ],
        &keyless,
    );
    let node_addr = ready_addr(&mut node, "ferry node listening on http://");
    let backend = format!("n1=http://{node_addr}");
    let mut proxy = spawn_ferry(
        &[
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "none",
            "--threads",
            "1",
            "--backend",
            &backend,
            "--cluster-key",
            key,
        ],
        &keyless,
    );
    let proxy_addr = ready_addr(&mut proxy, "ferry proxy listening on http://");
    let mut c = Client::connect(proxy_addr);
    assert_eq!(c.put("/shared", b"").status, 200);
    let r = c.request("DELETE", "/shared", &[], b"");
    assert_eq!(r.status, 204, "{}", r.text());
    // A client's own fence, at the node: refused (it has no seal), the bucket writable.
    let mut direct = Client::connect(node_addr);
    assert_eq!(direct.put("/shared", b"").status, 200);
    direct
        .request("POST", "/shared?x-ferry-fence=t&lease-seconds=60", &[], b"")
        .expect_error(403, "AccessDenied");
    assert_eq!(direct.put("/shared/k", b"v").status, 200);
    drop((c, direct));
    stop(proxy, "-TERM");
    stop(node, "-TERM");
}
