//! What a store writes is its owner's alone: every directory it makes is 0700 and every file
//! 0600 whatever the process umask lets through (checked on a fresh store after a PUT, a
//! multipart upload, completed and pending, and an SSE-S3 write, and on a `ferry node`'s data
//! directory with its generated credentials), by walking its directory. A data directory that
//! exists open to others is left as it is, with a warning.

use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use ferry_server::store::{
    CompleteOptions, CompletedPart, EncryptWith, ObjectMeta, PartOf, WriteConditions,
};

use crate::support::process::{ready_addr, spawn_ferry, stop};
use crate::support::store::open_with;

/// This process's umask, as Linux reports it (`?` elsewhere): what would have leaked.
fn umask() -> String {
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:").map(|v| v.trim().to_owned()))
        })
        .unwrap_or_else(|| "?".to_owned())
}

/// (path, mode, is a directory) of everything under `dir`.
fn walk(dir: &Path) -> Vec<(String, u32, bool)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let meta = fs::symlink_metadata(e.path()).unwrap();
            let name = e.path().strip_prefix(dir).unwrap().display().to_string();
            out.push((name, meta.permissions().mode() & 0o777, meta.is_dir()));
            if meta.is_dir() {
                stack.push(e.path());
            }
        }
    }
    out
}

#[test]
fn a_fresh_store_is_its_owners_alone() {
    let top = tempfile::tempdir().unwrap();
    // Directories the store makes itself, parents included.
    let root = top.path().join("node").join("store");
    let s = open_with(&root, 64 << 10);
    s.create_bucket("b").unwrap();
    let put = |key: &str, with: Option<EncryptWith>| {
        let mut w = match &with {
            Some(with) => s.object_writer("b", key, Some(with)).unwrap(),
            None => s.object_writer("b", key, None).unwrap(),
        };
        w.write(&vec![7u8; 300 << 10]).unwrap();
        w.commit(ObjectMeta::default(), WriteConditions::default())
            .unwrap();
    };
    put("plain", None);
    put("secret", Some(EncryptWith::SseS3));
    let part = |id: &str, key: &str, n: u32| {
        let mut w = s
            .part_writer(
                "b",
                key,
                PartOf {
                    upload_id: id,
                    part_number: n,
                    customer: None,
                },
            )
            .unwrap();
        w.write(&vec![n as u8; 64 << 10]).unwrap();
        let p = w.commit().unwrap();
        CompletedPart {
            part_number: p.part_number,
            etag: p.etag,
            checksums: Vec::new(),
        }
    };
    let done = s
        .create_multipart_upload("b", "multi", ObjectMeta::default(), None)
        .unwrap();
    let parts = [part(&done, "multi", 1), part(&done, "multi", 2)];
    s.complete_multipart_upload("b", "multi", &done, &parts, CompleteOptions::default())
        .map(|r| r.put)
        .unwrap();
    let pending = s
        .create_multipart_upload("b", "pending", ObjectMeta::default(), None)
        .unwrap();
    part(&pending, "pending", 1);

    let found = walk(top.path());
    let names: Vec<&str> = found.iter().map(|f| f.0.as_str()).collect();
    for want in [
        "node",
        "node/store",
        "node/store/meta.redb",
        "node/store/sse-master.key",
    ] {
        assert!(names.contains(&want), "{want} not found in {names:?}");
    }
    // plain, secret, two parts of `multi`, the pending part: five data files at least.
    let data_files = found
        .iter()
        .filter(|f| !f.2 && f.0.starts_with("node/store/data/"))
        .count();
    assert!(data_files >= 5, "{found:?}");
    let open = not_private(top.path());
    assert!(
        open.is_empty(),
        "not the owner's alone (umask {}): {open:?}",
        umask()
    );
}

/// The modes of everything under `dir` that are not the owner's alone.
fn not_private(dir: &Path) -> Vec<String> {
    walk(dir)
        .into_iter()
        .filter(|(_, mode, dir)| *mode != if *dir { 0o700 } else { 0o600 })
        .map(|(name, mode, _)| format!("{name} {mode:04o}"))
        .collect()
}

/// `ferry node` on `data` until it is ready, then stopped: its stderr.
fn node_run(data: &Path) -> String {
    let data = data.to_str().unwrap();
    let args = [
        "node",
        "--data",
        data,
        "--listen",
        "127.0.0.1:0",
        "--no-fsync",
    ];
    // No key in the environment: the node makes its credentials file in its data directory.
    let mut child = spawn_ferry(&args, &[]);
    ready_addr(&mut child, "ferry node listening on http://");
    stop(child, "-TERM")
}

#[test]
fn a_node_makes_its_data_directory_private_and_warns_of_a_shared_one() {
    let top = tempfile::tempdir().unwrap();
    let fresh = top.path().join("fresh").join("data");
    node_run(&fresh);
    let made = walk(top.path());
    let names: Vec<&str> = made.iter().map(|f| f.0.as_str()).collect();
    assert!(names.contains(&"fresh/data/credentials"), "{names:?}");
    assert!(names.contains(&"fresh/data/meta.redb"), "{names:?}");
    let open = not_private(top.path());
    assert!(open.is_empty(), "umask {}: {open:?}", umask());

    // A data directory its operator opened to a group: warned of, left as it is.
    let shared = top.path().join("shared");
    fs::create_dir(&shared).unwrap();
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o750)).unwrap();
    let stderr = node_run(&shared);
    let warned = stderr.lines().any(|l| {
        l.contains("open to other local accounts")
            && l.contains(&*shared.to_string_lossy())
            && l.contains("0750")
    });
    assert!(
        warned,
        "no warning naming {} 0750:\n{stderr}",
        shared.display()
    );
    let mode = fs::metadata(&shared).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o750);
    // What the node made inside it is private all the same.
    let inside: Vec<String> = not_private(&shared);
    assert!(inside.is_empty(), "{inside:?}");
}
