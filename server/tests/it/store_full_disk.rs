//! A full disk, on a small tmpfs: a metadata commit that fails leaves the store refusing writes
//! with a clear error (507 InsufficientStorage) and reporting it (readiness, the S3 listener's
//! `/healthz`, so a proxy marks the node down), and the store reopens its metadata by itself
//! once space is freed: the next write succeeds without a restart, every acknowledged object
//! reads back byte for byte, and no partial object ever shows. A data file that meets the full
//! disk fails its upload cleanly.

use std::collections::BTreeMap;
use std::fs;
use std::time::Duration;

use ferry_core::s3::{S3ErrorCode, S3Result};
use ferry_server::store::{
    GetOptions, ListQuery, ObjectMeta, ReadRange, Store, StoreConfig, Writability, WriteConditions,
};
use ferry_server::{BackendConfig, ProxyConfig, RuntimeKind, start_node, start_proxy};

use crate::support;
use crate::support::http::{Client, Payload, plain_get, wait_until};
use crate::support::node::node_config;
use crate::support::store::{data_files, get, random_bytes, temp_files};
use crate::support::tmpfs::Tmpfs;

/// The tmpfs: room for the store and a few objects.
const DISK: u64 = 8 << 20;

fn put(s: &Store, key: &str, data: &[u8]) -> S3Result<()> {
    let mut w = s.object_writer("b", key, None)?;
    w.write(data)?;
    w.commit(ObjectMeta::default(), WriteConditions::default())
        .map(|_| ())
}

/// Wait (at most 20 s) until `cond` holds (the store's recovery runs in the background).
fn wait_for(what: &str, cond: impl FnMut() -> bool) {
    wait_until(what, Duration::from_secs(20), cond);
}

/// Zero-byte objects until a metadata commit meets the full disk (their data files take no
/// space, so only the metadata can fail); the keys acknowledged, and the one that failed.
fn put_until_commit_fails(
    s: &Store,
    acked: &mut BTreeMap<String, Vec<u8>>,
    prefix: &str,
) -> String {
    for i in 0..200_000 {
        let key = format!("{prefix}-{i:06}");
        match put(s, &key, b"") {
            Ok(()) => {
                acked.insert(key, Vec::new());
            }
            Err(e) => {
                assert_eq!(e.code, S3ErrorCode::InsufficientStorage, "{e}");
                assert_eq!(e.status(), 507);
                return key;
            }
        }
    }
    panic!("no commit failed on a full disk");
}

/// Every object of the store is an acknowledged one (or, with its right bytes, one whose commit
/// failed: a failed commit may land), and every acknowledged one reads back.
fn check_contents(s: &Store, acked: &BTreeMap<String, Vec<u8>>, failed: &[&str]) {
    let mut listed = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let q = ListQuery {
            start_after: after.as_deref(),
            max_keys: 1000,
            ..ListQuery::default()
        };
        let page = s.list_objects("b", &q).unwrap();
        listed.extend(page.objects.iter().map(|o| o.key.clone()));
        if !page.is_truncated {
            break;
        }
        after = page.next_start_after;
    }
    for key in &listed {
        if failed.contains(&key.as_str()) {
            assert!(get(s, "b", key, ReadRange::All).is_empty());
        } else {
            assert!(acked.contains_key(key), "{key} was never acknowledged");
        }
    }
    for (key, data) in acked {
        assert!(get(s, "b", key, ReadRange::All) == *data, "{key} differs");
    }
    assert_eq!(s.stats().objects, listed.len() as u64);
    // Every data file is an object's: the failed commit's went unless it landed.
    let files = data_files(s.dir());
    assert_eq!(files, listed.len(), "data files vs objects");
    assert_eq!(temp_files(s.dir()), 0);
}

#[test]
fn store_reopens_its_metadata_after_a_full_disk() {
    let disk = Tmpfs::mount(DISK);
    let cfg = StoreConfig {
        fsync: true,
        ..StoreConfig::default()
    };
    let s = Store::open_with(disk.path().join("store"), cfg).unwrap();
    s.create_bucket("b").unwrap();
    let mut acked = BTreeMap::new();
    for i in 0..8 {
        let data = random_bytes(i, 20_000 + i as usize);
        let key = format!("data-{i}");
        put(&s, &key, &data).unwrap();
        acked.insert(key, data);
    }
    // A reader opened before the failure streams its version to the end, across the reopen.
    let mut reader = s.get_object("b", "data-3", GetOptions::default()).unwrap();

    let filler = disk.fill("filler");
    let failed = put_until_commit_fails(&s, &mut acked, "empty");
    assert_eq!(
        s.writability(),
        Writability::MetadataFailed { disk_full: true }
    );
    assert!(!s.is_writable());
    assert!(!s.stats().writable);
    // Every write now answers 507 at once, without touching the disk; reads go on.
    let e = put(&s, "more", b"x").unwrap_err();
    assert_eq!(e.code, S3ErrorCode::InsufficientStorage, "{e}");
    assert_eq!(
        s.create_bucket("other").unwrap_err().code,
        S3ErrorCode::InsufficientStorage
    );
    assert_eq!(get(&s, "b", "data-1", ReadRange::All), acked["data-1"]);
    assert!(s.is_readable());

    // Space is back: the store reopens its metadata by itself.
    fs::remove_file(&filler).unwrap();
    wait_for("the store takes writes again", || s.is_writable());
    let mut rest = Vec::new();
    std::io::Read::read_to_end(&mut reader, &mut rest).unwrap();
    assert!(rest == acked["data-3"], "the reader kept its version");
    drop(reader);
    put(&s, "after", b"written after the reopen").unwrap();
    acked.insert("after".into(), b"written after the reopen".to_vec());
    check_contents(&s, &acked, &[&failed]);

    // The same again, a second time round, without waiting for the background: the next write
    // reopens the store itself.
    let filler = disk.fill("filler");
    let failed2 = put_until_commit_fails(&s, &mut acked, "again");
    fs::remove_file(&filler).unwrap();
    put(&s, "after-2", b"again").unwrap();
    acked.insert("after-2".into(), b"again".to_vec());
    assert!(s.is_writable());
    let failed = [failed.as_str(), failed2.as_str()];
    check_contents(&s, &acked, &failed);
    assert_eq!(s.stats().metadata_reopens, 2);
    drop(s);

    // And what was acknowledged is there after a restart too.
    let s = Store::open_with(disk.path().join("store"), cfg).unwrap();
    check_contents(&s, &acked, &failed);
}

/// Writers and readers keep going while the disk fills up and empties a few times: no reader
/// fails or sees a partial object, every acknowledged write is there at the end, and a write
/// that failed either is there whole or not at all.
#[test]
fn readers_and_writers_across_reopens() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    let disk = Tmpfs::mount(DISK);
    let cfg = StoreConfig {
        fsync: true,
        ..StoreConfig::default()
    };
    let s = Store::open_with(disk.path().join("store"), cfg).unwrap();
    s.create_bucket("b").unwrap();
    let seeds: Vec<Vec<u8>> = (0..4).map(|i| random_bytes(i, 30_000)).collect();
    for (i, data) in seeds.iter().enumerate() {
        put(&s, &format!("seed-{i}"), data).unwrap();
    }
    let seeds = Arc::new(seeds);
    let stop = Arc::new(AtomicBool::new(false));
    // What the threads have done so far: writes acknowledged, writes refused, and each
    // reader's passes (the test waits on these, not on time, for each phase to be exercised).
    let acks = Arc::new(AtomicU64::new(0));
    let refusals = Arc::new(AtomicU64::new(0));
    let passes: Arc<[AtomicU64; 2]> = Arc::default();
    let writers: Vec<_> = (0..2u64)
        .map(|w| {
            let (s, stop) = (s.clone(), stop.clone());
            let (acks, refusals) = (acks.clone(), refusals.clone());
            std::thread::spawn(move || {
                // (key, bytes, acknowledged)
                let mut tried = Vec::new();
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let key = format!("w{w}-{i:05}");
                    // Empty objects: their metadata meets the full disk, not their data (and
                    // the writers do not fill the disk themselves once space is freed).
                    let data = Vec::new();
                    let ok = match put(&s, &key, &data) {
                        Ok(()) => {
                            acks.fetch_add(1, Ordering::SeqCst);
                            true
                        }
                        Err(e) => {
                            refusals.fetch_add(1, Ordering::SeqCst);
                            let expected = matches!(
                                e.code,
                                S3ErrorCode::InsufficientStorage
                                    | S3ErrorCode::ServiceUnavailable
                                    | S3ErrorCode::SlowDown
                            );
                            assert!(expected, "{key}: {e}");
                            std::thread::sleep(Duration::from_millis(2));
                            false
                        }
                    };
                    tried.push((key, data, ok));
                    i += 1;
                    std::thread::sleep(Duration::from_millis(1));
                }
                tried
            })
        })
        .collect();
    let readers: Vec<_> = (0..2)
        .map(|n| {
            let (s, stop, seeds) = (s.clone(), stop.clone(), seeds.clone());
            let passes = passes.clone();
            std::thread::spawn(move || {
                let mut reads = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    for (i, data) in seeds.iter().enumerate() {
                        let got = get(&s, "b", &format!("seed-{i}"), ReadRange::All);
                        assert!(got == *data, "seed-{i} differs");
                    }
                    let q = ListQuery {
                        max_keys: 50,
                        ..ListQuery::default()
                    };
                    for o in s.list_objects("b", &q).unwrap().objects {
                        // Listed means whole: its bytes match its listed size.
                        if let Ok(mut r) = s.get_object("b", &o.key, GetOptions::default()) {
                            let mut v = Vec::new();
                            std::io::Read::read_to_end(&mut r, &mut v).unwrap();
                            assert_eq!(v.len() as u64, o.size, "{}", o.key);
                        }
                    }
                    reads += 1;
                    passes[n].fetch_add(1, Ordering::SeqCst);
                }
                reads
            })
        })
        .collect();
    // `what` has happened again since `before` (a count read earlier).
    let again = |n: &AtomicU64, before: u64| n.load(Ordering::SeqCst) > before;
    let read_again =
        |before: [u64; 2]| (0..2).all(|i| passes[i].load(Ordering::SeqCst) > before[i]);
    let passes_now = || [0, 1].map(|i| passes[i].load(Ordering::SeqCst));
    for _ in 0..3 {
        // Writes acknowledged on a disk with room, then the disk fills.
        let acked = acks.load(Ordering::SeqCst);
        wait_for("a write is acknowledged", || again(&acks, acked));
        let filler = disk.fill("filler");
        wait_for("a write fails", || !s.is_writable());
        // Writes refused and reads served while the store is closed to writes.
        let (refused, read) = (refusals.load(Ordering::SeqCst), passes_now());
        wait_for("a write is refused on the full disk", || {
            again(&refusals, refused)
        });
        wait_for("every reader reads on the full disk", || read_again(read));
        fs::remove_file(&filler).unwrap();
        wait_for("the store takes writes again", || s.is_writable());
    }
    // And after the last reopen: writes acknowledged, reads served.
    let (acked, read) = (acks.load(Ordering::SeqCst), passes_now());
    wait_for("a write is acknowledged after the reopen", || {
        again(&acks, acked)
    });
    wait_for("every reader reads after the reopen", || read_again(read));
    stop.store(true, Ordering::Relaxed);
    let tried: Vec<_> = writers
        .into_iter()
        .flat_map(|w| w.join().expect("writer"))
        .collect();
    for r in readers {
        assert!(r.join().expect("reader") > 0);
    }
    assert!(tried.iter().any(|t| !t.2), "no write failed");
    assert_eq!(s.stats().metadata_reopens, 3);
    for (key, data, acked) in &tried {
        match s.get_object("b", key, GetOptions::default()) {
            Ok(mut r) => {
                let mut v = Vec::new();
                std::io::Read::read_to_end(&mut r, &mut v).unwrap();
                assert!(v == *data, "{key} differs");
            }
            Err(e) => {
                assert!(!acked, "acknowledged {key} is missing: {e}");
                assert_eq!(e.code, S3ErrorCode::NoSuchKey);
            }
        }
    }
}

/// A data file that meets the full disk fails its upload with 507 and leaves nothing behind;
/// uploads are refused before their body until the disk has room again.
#[test]
fn a_full_disk_fails_an_upload_cleanly() {
    let disk = Tmpfs::mount(DISK);
    let cfg = StoreConfig {
        fsync: true,
        ..StoreConfig::default()
    };
    let s = Store::open_with(disk.path().join("store"), cfg).unwrap();
    s.create_bucket("b").unwrap();
    let data = random_bytes(1, 100_000);
    put(&s, "kept", &data).unwrap();
    let filler = disk.fill("filler");
    let big = random_bytes(2, 2 << 20);
    let e = put(&s, "big", &big).unwrap_err();
    assert_eq!(e.code, S3ErrorCode::InsufficientStorage, "{e}");
    assert_eq!(temp_files(s.dir()), 0, "temp file left");
    assert_eq!(data_files(s.dir()), 1);
    assert_eq!(s.writability(), Writability::DiskFull);
    // Refused before the body.
    assert_eq!(
        s.object_writer("b", "next", None).unwrap_err().code,
        S3ErrorCode::InsufficientStorage
    );
    assert_eq!(get(&s, "b", "kept", ReadRange::All), data);
    fs::remove_file(&filler).unwrap();
    assert_eq!(s.writability(), Writability::Writable);
    put(&s, "big", &big).unwrap();
    assert!(get(&s, "b", "big", ReadRange::All) == big);
    assert_eq!(get(&s, "b", "kept", ReadRange::All), data);
}

/// Whether the proxy's readiness lists its one backend as `state` (`up` or `down`).
fn proxy_sees(admin: std::net::SocketAddr, state: &str) -> bool {
    plain_get(admin, "/readyz")
        .text()
        .contains(&format!(" {state}\n"))
}

/// The same over HTTP, through a proxy: 507 InsufficientStorage for the writes, readiness and
/// the S3 listener's `/healthz` report the store, the proxy marks the node down, and everything
/// comes back without a restart once space is freed.
fn node_on_a_full_disk(rt: RuntimeKind) {
    let disk = Tmpfs::mount(DISK);
    let mut cfg = node_config(&disk.path().join("node"), rt);
    cfg.fsync = true;
    cfg.threads = 1;
    let node = start_node(cfg).expect("node starts");
    let admin = node.admin_addr().expect("admin");
    let backend = BackendConfig::new("node-1", format!("http://{}", node.local_addr()));
    let mut pcfg = ProxyConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        vec![backend],
        support::ACCESS_KEY,
        support::SECRET_KEY,
    );
    pcfg.cluster_keys = Some(crate::support::cluster_keys());
    pcfg.runtime = rt;
    pcfg.threads = 1;
    pcfg.health_interval = Duration::from_millis(100);
    let proxy = start_proxy(pcfg).expect("proxy starts");
    let proxy_admin = proxy.admin_addr().expect("proxy admin");
    let mut c = Client::connect(proxy.local_addr());
    assert_eq!(c.put("/full", b"").status, 200);
    let mut acked: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for i in 0..5 {
        let data = random_bytes(10 + i, 50_000);
        let key = format!("data-{i}");
        assert_eq!(c.put(&format!("/full/{key}"), &data).status, 200);
        acked.insert(key, data);
    }

    let filler = disk.fill("filler");
    // Small writes through the proxy until one meets the full disk in its metadata commit.
    let mut failed = None;
    for i in 0..200_000 {
        let key = format!("empty-{i:06}");
        let r = c.put(&format!("/full/{key}"), b"");
        if r.status == 200 {
            acked.insert(key, Vec::new());
            continue;
        }
        r.expect_error(507, "InsufficientStorage");
        failed = Some(key);
        break;
    }
    let failed = failed.expect("a write failed on the full disk");
    // An upload is refused before its body (no 100 Continue).
    let mut n = Client::connect(node.local_addr());
    let big = random_bytes(3, 2 << 20);
    let req = n.encode(
        "PUT",
        "/full/big",
        &[("Expect", "100-continue")],
        &big,
        Payload::Unsigned,
    );
    let split = req.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    n.send_raw(&req[..split]);
    n.read_response(false)
        .expect_error(507, "InsufficientStorage");
    let mut n = Client::connect(node.local_addr());
    n.request("PUT", "/full2", &[], b"")
        .expect_error(507, "InsufficientStorage");
    // Reads go on.
    assert!(n.get("/full/data-1").body == acked["data-1"]);
    // The node says it cannot write: readiness, the S3 listener's health, the metrics.
    let r = plain_get(admin, "/readyz");
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(r.text().contains("cannot write"), "{}", r.text());
    let r = plain_get(node.local_addr(), "/healthz");
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(r.text().contains("metadata commit failed"), "{}", r.text());
    assert_eq!(plain_get(admin, "/healthz").status, 200, "the process runs");
    let m = plain_get(admin, "/metrics").text();
    assert!(m.contains("\nferry_node_store_writable 0\n"), "{m}");
    // So the proxy marks it down, and answers 503 SlowDown (after its retry window).
    wait_for("the proxy marks the node down", || {
        proxy_sees(proxy_admin, "down")
    });
    c.get("/full/data-1").expect_error(503, "SlowDown");

    // Space is back: the node reopens its store by itself, the proxy marks it up.
    fs::remove_file(&filler).unwrap();
    wait_for("the proxy marks the node up", || {
        proxy_sees(proxy_admin, "up")
    });
    assert_eq!(plain_get(admin, "/readyz").status, 200);
    assert_eq!(plain_get(node.local_addr(), "/healthz").status, 200);
    let m = plain_get(admin, "/metrics").text();
    assert!(m.contains("\nferry_node_store_writable 1\n"), "{m}");
    assert!(
        m.contains("\nferry_node_store_metadata_reopens_total 1\n"),
        "{m}"
    );
    let r = c.put("/full/after", b"written after the disk filled");
    assert_eq!(r.status, 200, "{}", r.text());
    acked.insert("after".into(), b"written after the disk filled".to_vec());
    for (key, data) in &acked {
        let r = c.get(&format!("/full/{key}"));
        assert_eq!(r.status, 200, "{key}");
        assert!(r.body == *data, "{key} differs");
    }
    let listed = c.get("/full?list-type=2&max-keys=1000").xml_values("Key");
    for key in &listed {
        assert!(
            acked.contains_key(key) || *key == failed,
            "{key} was never acknowledged"
        );
    }
    proxy.stop();
    node.stop();
}

on_both_runtimes!(node_on_a_full_disk);
