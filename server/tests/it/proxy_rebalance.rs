//! `ferry rebalance` against real nodes: objects move to their owner under the current layout
//! with their metadata, tags, checksums (full-object, and a multipart object's composite or
//! full-object one with its parts'), ACLs, versions and encryption (an SSE-KMS context too);
//! SSE-C objects stay and are reported; a second run moves nothing; the bandwidth bound holds;
//! clients' writes and deletes during a move win; a run killed mid-way is finished by the next.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use ferry_core::place::Placement;
use ferry_core::s3::header;
use ferry_core::time::DateTime;
use ferry_server::proxy::Layout;
use ferry_server::proxy::rebalance::{Progress, RebalanceOptions, rebalance, rebalance_with};
use ferry_server::{BackendConfig, ProxyConfig, RuntimeKind, start_proxy};

use crate::support::http::{Client, Response, metric_sum, wait_until};
use crate::support::node::Node;
use crate::support::{ACCESS_KEY, SECRET_KEY};

on_both_runtimes!(
    growing_moves_every_object_with_its_metadata,
    versions_keep_their_ids_order_and_dates,
    the_bandwidth_bound_meters_every_move,
    encrypted_objects_keep_their_mode_and_sse_c_stays,
    client_writes_and_deletes_during_a_move_win,
    a_killed_run_is_finished_by_the_next,
    object_lock_moves_with_the_version,
    uploads_in_progress_name_their_backend,
    full_object_checksums_move_with_the_object,
    multipart_checksums_move_with_the_object,
    acls_and_kms_contexts_move_with_the_object,
);

/// `count` nodes behind a proxy, `node-1` first.
fn nodes(runtime: RuntimeKind, count: usize) -> Vec<Node> {
    (1..=count)
        .map(|i| Node::backend(&format!("node-{i}"), runtime, (ACCESS_KEY, SECRET_KEY)))
        .collect()
}

/// The configuration over every node whose current layout (version 2) has the nodes
/// `current` and whose previous layout (version 1) has `previous` (none: no previous layout).
pub fn layout_config(
    runtime: RuntimeKind,
    nodes: &[Node],
    current: &[usize],
    previous: &[usize],
) -> ProxyConfig {
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
    if !previous.is_empty() {
        cfg.previous_layouts = vec![Layout {
            version: 1,
            weights: previous.iter().map(|&i| (nodes[i].id.clone(), 1)).collect(),
        }];
    }
    cfg
}

fn placement(nodes: &[Node], ids: &[usize]) -> Placement {
    let w: Vec<(String, u32)> = ids.iter().map(|&i| (nodes[i].id.clone(), 1)).collect();
    Placement::new(&w).unwrap()
}

/// A placement's pick as an index into `nodes` (`ids` are the nodes it places over).
fn owner(nodes: &[Node], ids: &[usize], bucket: &str, key: &str) -> usize {
    ids[placement(nodes, ids).pick(bucket, key)]
}

fn body_of(i: usize) -> Vec<u8> {
    format!("moving object {i} ")
        .repeat(1 + i % 40)
        .into_bytes()
}

/// Every key of `bucket` on node `n`.
fn keys_on(n: &Node, bucket: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut c = n.client();
    let mut after = String::new();
    loop {
        let r = c.get(&format!("/{bucket}?list-type=2&start-after={after}"));
        assert_eq!(r.status, 200, "{}", r.text());
        let page = r.xml_values("Key");
        out.extend(page.iter().cloned());
        if r.xml_value("IsTruncated").as_deref() != Some("true") {
            return out;
        }
        after = ferry_core::s3::uri::encode(page.last().unwrap()).to_string();
    }
}

/// A multipart upload of `parts` parts of 2 KiB through `c`: its ETag and its bytes.
fn multipart_upload(c: &mut Client, bucket: &str, key: &str, parts: usize) -> (String, Vec<u8>) {
    let r = c.request("POST", &format!("/{bucket}/{key}?uploads"), &[], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let id = r.xml_value("UploadId").unwrap();
    let q = format!("uploadId={}", ferry_core::s3::uri::encode(&id));
    let mut all = Vec::new();
    let mut xml = String::from("<CompleteMultipartUpload>");
    for n in 1..=parts {
        let part = vec![b'a' + n as u8; 2048];
        let r = c.put(&format!("/{bucket}/{key}?partNumber={n}&{q}"), &part);
        assert_eq!(r.status, 200, "{}", r.text());
        let etag = r.header("etag").unwrap().to_owned();
        xml.push_str(&format!(
            "<Part><PartNumber>{n}</PartNumber><ETag>{etag}</ETag></Part>"
        ));
        all.extend_from_slice(&part);
    }
    xml.push_str("</CompleteMultipartUpload>");
    let r = c.request("POST", &format!("/{bucket}/{key}?{q}"), &[], xml.as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    let etag = r.xml_value("ETag").unwrap().replace("&quot;", "\"");
    assert!(etag.ends_with(&format!("-{parts}\"")), "{etag}");
    (etag, all)
}

fn header<'a>(r: &'a Response, name: &str) -> Option<&'a str> {
    r.header(name)
}

/// Objects written over three nodes, then a rebalance to four: every moved key is on its new
/// owner only, byte for byte with its content headers, metadata, tags and date; the others did
/// not move; a second run moves nothing; a dry run before counts exactly what moves.
fn growing_moves_every_object_with_its_metadata(runtime: RuntimeKind) {
    let nodes = nodes(runtime, 4);
    let mut before = layout_config(runtime, &nodes, &[0, 1, 2], &[]);
    before.layout_version = 1;
    let proxy = start_proxy(before).unwrap();
    let mut c = Client::connect(proxy.local_addr());
    assert_eq!(c.put("/grow", b"").status, 200);
    let keys: Vec<String> = (0..150).map(|i| format!("k/{i:03}")).collect();
    for (i, k) in keys.iter().enumerate() {
        let tags = format!("n={i}");
        let r = c.request(
            "PUT",
            &format!("/grow/{k}"),
            &[
                ("Content-Type", "text/x-ferry"),
                ("Cache-Control", "max-age=7"),
                ("x-amz-meta-index", &i.to_string()),
                ("x-amz-tagging", &tags),
            ],
            &body_of(i),
        );
        assert_eq!(r.status, 200, "{}", r.text());
    }
    // A multipart object among the moved ones.
    let mp = (0..)
        .map(|i| format!("mp/{i}"))
        .find(|k| owner(&nodes, &[0, 1, 2], "grow", k) != owner(&nodes, &[0, 1, 2, 3], "grow", k))
        .unwrap();
    let (mp_etag, mp_body) = multipart_upload(&mut c, "grow", &mp, 3);
    // Dates as the old owners have them.
    let dates: BTreeMap<&String, String> = keys
        .iter()
        .map(|k| {
            let n = owner(&nodes, &[0, 1, 2], "grow", k);
            let r = nodes[n]
                .client()
                .request("HEAD", &format!("/grow/{k}"), &[], b"");
            (k, r.header("last-modified").unwrap().to_owned())
        })
        .collect();
    proxy.stop();
    let moved: Vec<&String> = keys
        .iter()
        .filter(|k| owner(&nodes, &[0, 1, 2], "grow", k) != owner(&nodes, &[0, 1, 2, 3], "grow", k))
        .collect();
    assert!(moved.len() > 10, "only {} keys move", moved.len());
    // The dates must be kept, not just be the same second again: the moves start once the
    // clock has left the latest of them.
    let latest = dates
        .values()
        .map(|d| DateTime::parse_http(d).expect("an HTTP date").to_unix())
        .max()
        .unwrap();
    wait_until(
        "the clock passes the second the objects were written in",
        Duration::from_secs(10),
        || crate::support::http::now() > latest,
    );

    let cfg = layout_config(runtime, &nodes, &[0, 1, 2, 3], &[0, 1, 2]);
    let dry = rebalance(
        cfg.clone(),
        RebalanceOptions {
            dry_run: true,
            ..RebalanceOptions::default()
        },
    )
    .unwrap();
    assert_eq!(dry.planned_objects, moved.len() as u64 + 1, "{dry:?}");
    assert_eq!(dry.in_place, (keys.len() - moved.len()) as u64);
    assert_eq!(dry.moved_objects, 0);
    assert!(!dry.previous_layouts_removable());
    assert_eq!(
        keys_on(&nodes[3], "grow").len(),
        0,
        "a dry run moves nothing"
    );

    let report = rebalance(cfg.clone(), RebalanceOptions::default()).unwrap();
    assert_eq!(report.moved_objects, moved.len() as u64 + 1, "{report:?}");
    let bytes: u64 = moved
        .iter()
        .map(|k| body_of(keys.iter().position(|x| x == *k).unwrap()).len() as u64)
        .sum();
    assert_eq!(report.moved_bytes, bytes + mp_body.len() as u64);
    assert_eq!(report.errors, 0, "{:?}", report.error_messages);
    assert!(report.previous_layouts_removable(), "{}", report.summary());
    assert!(report.summary().contains("can now be removed"));
    // No bandwidth bound: no byte went through one.
    assert_eq!((report.throttled_bytes, report.throttle_waits), (0, 0));
    assert_eq!(report.sent_bytes, report.moved_bytes);

    // Every key on its owner alone, as it was.
    for (i, k) in keys.iter().enumerate() {
        let n = owner(&nodes, &[0, 1, 2, 3], "grow", k);
        let r = nodes[n].client().get(&format!("/grow/{k}"));
        assert_eq!((r.status, &r.body), (200, &body_of(i)), "{k} on node {n}");
        assert_eq!(header(&r, "content-type"), Some("text/x-ferry"), "{k}");
        assert_eq!(header(&r, "cache-control"), Some("max-age=7"), "{k}");
        assert_eq!(header(&r, "x-amz-meta-index"), Some(i.to_string().as_str()));
        assert_eq!(header(&r, "last-modified"), Some(dates[k].as_str()), "{k}");
        let t = nodes[n].client().get(&format!("/grow/{k}?tagging"));
        assert_eq!(t.xml_values("Value"), [i.to_string()], "{k}");
        for (m, node) in nodes.iter().enumerate().filter(|(m, _)| *m != n) {
            let r = node
                .client()
                .request("HEAD", &format!("/grow/{k}"), &[], b"");
            assert_eq!(r.status, 404, "{k} is still on node {m}");
        }
    }
    // The multipart object kept its ETag (copied part by part).
    let n = owner(&nodes, &[0, 1, 2, 3], "grow", &mp);
    let r = nodes[n].client().get(&format!("/grow/{mp}"));
    assert_eq!((r.status, &r.body), (200, &mp_body));
    assert_eq!(r.header("etag"), Some(mp_etag.as_str()));
    let total: usize = nodes.iter().map(|n| keys_on(n, "grow").len()).sum();
    assert_eq!(total, keys.len() + 1);

    // Again: nothing to move.
    let again = rebalance(cfg, RebalanceOptions::default()).unwrap();
    assert_eq!(
        (again.planned_objects, again.moved_objects, again.errors),
        (0, 0, 0),
        "{again:?}"
    );
    assert_eq!(again.in_place, keys.len() as u64 + 1);
    assert!(again.previous_layouts_removable());
}

const ENABLED: &[u8] = br#"<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>Enabled</Status></VersioningConfiguration>"#;
const SUSPENDED: &[u8] = br#"<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>Suspended</Status></VersioningConfiguration>"#;

/// (key, version id, is latest, ETag, last modified, delete marker) of every version of
/// `bucket` on node `n`, in listing order.
fn versions_on(n: &Node, bucket: &str) -> Vec<(String, String, String, String, String, bool)> {
    let r = n.client().get(&format!("/{bucket}?versions"));
    assert_eq!(r.status, 200, "{}", r.text());
    let text = r.text();
    let mut out = Vec::new();
    let mut rest = text.as_str();
    loop {
        let v = rest.find("<Version>");
        let m = rest.find("<DeleteMarker>");
        let (start, marker) = match (v, m) {
            (Some(v), Some(m)) if m < v => (m, true),
            (Some(v), _) => (v, false),
            (None, Some(m)) => (m, true),
            (None, None) => return out,
        };
        let end_tag = if marker {
            "</DeleteMarker>"
        } else {
            "</Version>"
        };
        let end = rest[start..].find(end_tag).unwrap() + start;
        let entry = &rest[start..end];
        let field = |name: &str| {
            crate::support::http::xml_values(entry, name)
                .into_iter()
                .next()
                .unwrap_or_default()
        };
        out.push((
            field("Key"),
            field("VersionId"),
            field("IsLatest"),
            field("ETag"),
            field("LastModified"),
            marker,
        ));
        rest = &rest[end..];
    }
}

/// A versioned bucket's keys — several versions each, a null version from before versioning,
/// a delete marker, a null version written while suspended, tags on an old version — move with
/// every version, its id, its place and its date: the new owner lists exactly what the old one
/// did, and the old one has nothing left.
fn versions_keep_their_ids_order_and_dates(runtime: RuntimeKind) {
    let nodes = nodes(runtime, 3);
    let mut before = layout_config(runtime, &nodes, &[0, 1], &[]);
    before.layout_version = 1;
    let proxy = start_proxy(before).unwrap();
    let mut c = Client::connect(proxy.local_addr());
    assert_eq!(c.put("/vers", b"").status, 200);
    // Keys that move from node-1 or node-2 to node-3.
    let keys: Vec<String> = (0..)
        .map(|i| format!("v/{i}"))
        .filter(|k| owner(&nodes, &[0, 1, 2], "vers", k) == 2)
        .take(6)
        .collect();
    for k in &keys {
        assert_eq!(
            c.put(&format!("/vers/{k}"), b"before versioning").status,
            200
        );
    }
    assert_eq!(c.put("/vers?versioning", ENABLED).status, 200);
    for (i, k) in keys.iter().enumerate() {
        for n in 0..3 {
            let body = format!("{k} version {n}");
            assert_eq!(c.put(&format!("/vers/{k}"), body.as_bytes()).status, 200);
        }
        if i % 3 == 1 {
            assert_eq!(
                c.request("DELETE", &format!("/vers/{k}"), &[], b"").status,
                204
            );
        }
    }
    // An old version with tags.
    let first = &keys[0];
    let r = c.get(&format!("/vers?versions&prefix={first}"));
    let ids = crate::support::http::xml_values(&r.text(), "VersionId");
    let old_id = ids[2].clone();
    let tags = b"<Tagging><TagSet><Tag><Key>old</Key><Value>yes</Value></Tag></TagSet></Tagging>";
    let md5h = ferry_core::md5::content_md5(&ferry_core::md5::md5(tags)).to_string();
    let r = c.request(
        "PUT",
        &format!("/vers/{first}?tagging&versionId={old_id}"),
        &[("Content-MD5", &md5h)],
        tags,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    // A null version written while suspended, on top.
    assert_eq!(c.put("/vers?versioning", SUSPENDED).status, 200);
    assert_eq!(
        c.put(&format!("/vers/{}", keys[5]), b"suspended null")
            .status,
        200
    );
    assert_eq!(c.put("/vers?versioning", ENABLED).status, 200);
    proxy.stop();

    let listed_before: Vec<_> = [0, 1]
        .iter()
        .flat_map(|&n| versions_on(&nodes[n], "vers"))
        .filter(|v| keys.contains(&v.0))
        .collect();
    assert!(listed_before.len() >= 6 * 4, "{listed_before:?}");
    let cfg = layout_config(runtime, &nodes, &[0, 1, 2], &[0, 1]);
    let report = rebalance(cfg.clone(), RebalanceOptions::default()).unwrap();
    assert_eq!(report.errors, 0, "{:?}", report.error_messages);
    assert_eq!(
        report.moved_objects,
        listed_before.len() as u64,
        "{report:?}"
    );
    let mut listed_after = versions_on(&nodes[2], "vers");
    let mut want = listed_before.clone();
    want.sort();
    listed_after.sort();
    assert_eq!(listed_after, want);
    for n in [0, 1] {
        assert!(
            versions_on(&nodes[n], "vers")
                .iter()
                .all(|v| !keys.contains(&v.0)),
            "node {n} still has versions"
        );
    }
    // Bytes of every version, and the old version's tags.
    for k in &keys {
        for v in listed_after.iter().filter(|v| &v.0 == k && !v.5) {
            let r = nodes[2]
                .client()
                .get(&format!("/vers/{k}?versionId={}", v.1));
            assert_eq!(r.status, 200, "{k} {}", v.1);
            assert_eq!(
                format!("\"{:032x}\"", md5_of(&r.body)),
                v.3.replace("&quot;", "\"")
            );
        }
    }
    let t = nodes[2]
        .client()
        .get(&format!("/vers/{first}?tagging&versionId={old_id}"));
    assert_eq!(t.xml_values("Value"), ["yes"]);
    let again = rebalance(cfg, RebalanceOptions::default()).unwrap();
    assert_eq!((again.planned_objects, again.errors), (0, 0), "{again:?}");
}

fn md5_of(data: &[u8]) -> u128 {
    u128::from_be_bytes(ferry_core::md5::md5(data))
}

/// `--max-bandwidth`: every byte the moves send passes the bound (each move's bytes wait
/// their turn in one token bucket shared by all moves), and every object still moves. That the
/// bucket lets through no more than its burst plus the rate times the time is tested on a
/// virtual clock (`rebalance::throttle`); what the rate comes to on a real run is a figure
/// (`benches/proxy/rebalance.sh` with `MAX_BANDWIDTH`, in benches/README.md).
fn the_bandwidth_bound_meters_every_move(runtime: RuntimeKind) {
    let nodes = nodes(runtime, 2);
    let mut before = layout_config(runtime, &nodes, &[0], &[]);
    before.layout_version = 1;
    let proxy = start_proxy(before).unwrap();
    let mut c = Client::connect(proxy.local_addr());
    assert_eq!(c.put("/slow", b"").status, 200);
    let keys: Vec<String> = (0..)
        .map(|i| format!("s/{i}"))
        .filter(|k| owner(&nodes, &[0, 1], "slow", k) == 1)
        .take(12)
        .collect();
    let body = vec![7u8; 64 * 1024];
    for k in &keys {
        assert_eq!(c.put(&format!("/slow/{k}"), &body).status, 200);
    }
    proxy.stop();
    let mut cfg = layout_config(runtime, &nodes, &[0, 1], &[0]);
    // Small buffers: the burst is a quarter second's worth, and 12 × 64 KiB three seconds'.
    cfg.buffer_size = 16 * 1024;
    let opts = RebalanceOptions {
        max_bandwidth: Some(256 * 1024),
        concurrency: 4,
        ..RebalanceOptions::default()
    };
    let report = rebalance(cfg, opts).unwrap();
    assert_eq!(report.moved_objects, keys.len() as u64, "{report:?}");
    assert_eq!(report.moved_bytes, (keys.len() * body.len()) as u64);
    assert_eq!(report.sent_bytes, report.moved_bytes);
    // Through the bound, all of it. (How often it held a move back is the machine's speed
    // against the rate: `throttle_waits`, not asserted.)
    assert_eq!(report.throttled_bytes, report.sent_bytes, "{report:?}");
}

/// Keys of `bucket` that move from node-1 to node-2 when node-2 joins.
fn keys_moving_to_second(nodes: &[Node], bucket: &str, prefix: &str, n: usize) -> Vec<String> {
    (0..)
        .map(|i| format!("{prefix}{i}"))
        .filter(|k| owner(nodes, &[0, 1], bucket, k) == 1)
        .take(n)
        .collect()
}

/// Whether any file under `dir` holds `needle`.
fn any_file_holds(dir: &std::path::Path, needle: &[u8]) -> bool {
    crate::support::store::files_under(dir).iter().any(|f| {
        std::fs::read(f)
            .map(|d| d.windows(needle.len()).any(|w| w == needle))
            .unwrap_or(false)
    })
}

/// An SSE-KMS keyring file in `dir` with the keys `k1` (the default) and `k2`.
fn write_keyring(dir: &std::path::Path) -> std::path::PathBuf {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let keyring = dir.join("keyring.toml");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&keyring)
        .unwrap();
    let hex = |b: u8| format!("{b:02x}").repeat(32);
    write!(
        f,
        "default = \"k1\"\n[keys]\nk1 = \"{}\"\nk2 = \"{}\"\n",
        hex(1),
        hex(2)
    )
    .unwrap();
    keyring
}

/// An SSE-S3 object moves and is encrypted again by its new owner (its data file holds no
/// plaintext); an SSE-KMS one keeps its key id; an SSE-C one cannot be read without its key, so
/// it stays where it is, counted, and the report keeps the previous layout.
fn encrypted_objects_keep_their_mode_and_sse_c_stays(runtime: RuntimeKind) {
    let dir = tempfile::tempdir().unwrap();
    let keyring = write_keyring(dir.path());
    let mut nodes = nodes(runtime, 2);
    for n in &mut nodes {
        n.stop();
        n.allow_sse_c_over_http = true;
        n.sse_kms_keyring = Some(keyring.clone());
        n.restart();
    }
    let mut c = nodes[0].client();
    assert_eq!(c.put("/enc", b"").status, 200);
    assert_eq!(nodes[1].client().put("/enc", b"").status, 200);
    let keys = keys_moving_to_second(&nodes, "enc", "e/", 3);
    let plain = b"PLAINTEXT-MARKER-0123456789".repeat(100);
    let r = c.request(
        "PUT",
        &format!("/enc/{}", keys[0]),
        &[("x-amz-server-side-encryption", "AES256")],
        &plain,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = c.request(
        "PUT",
        &format!("/enc/{}", keys[1]),
        &[
            ("x-amz-server-side-encryption", "aws:kms"),
            ("x-amz-server-side-encryption-aws-kms-key-id", "k2"),
        ],
        b"kms data",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let customer = [9u8; 32];
    let b64 = |b: &[u8]| {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(b)
    };
    let (key64, md564) = (b64(&customer), b64(&ferry_core::md5::md5(&customer)));
    let sse_c = [
        ("x-amz-server-side-encryption-customer-algorithm", "AES256"),
        ("x-amz-server-side-encryption-customer-key", key64.as_str()),
        (
            "x-amz-server-side-encryption-customer-key-MD5",
            md564.as_str(),
        ),
    ];
    let r = c.request(
        "PUT",
        &format!("/enc/{}", keys[2]),
        &sse_c,
        b"customer data",
    );
    assert_eq!(r.status, 200, "{}", r.text());

    let cfg = layout_config(runtime, &nodes, &[0, 1], &[0]);
    let report = rebalance(cfg, RebalanceOptions::default()).unwrap();
    assert_eq!(
        (report.moved_objects, report.skipped_sse_c, report.errors),
        (2, 1, 0),
        "{report:?}"
    );
    assert!(!report.previous_layouts_removable());
    assert!(
        report.summary().contains("1 SSE-C objects were left"),
        "{}",
        report.summary()
    );

    let mut to = nodes[1].client();
    let r = to.get(&format!("/enc/{}", keys[0]));
    assert_eq!((r.status, &r.body), (200, &plain));
    assert_eq!(r.header("x-amz-server-side-encryption"), Some("AES256"));
    assert!(
        !any_file_holds(nodes[1].dir.path(), b"PLAINTEXT-MARKER-0123456789"),
        "the moved SSE-S3 object is stored in the clear"
    );
    let r = to.get(&format!("/enc/{}", keys[1]));
    assert_eq!((r.status, r.body.as_slice()), (200, &b"kms data"[..]));
    assert_eq!(r.header("x-amz-server-side-encryption"), Some("aws:kms"));
    assert_eq!(
        r.header("x-amz-server-side-encryption-aws-kms-key-id"),
        Some("k2")
    );
    // The SSE-C object is where it was, readable with its key, and nowhere else.
    let r = c.request("GET", &format!("/enc/{}", keys[2]), &sse_c, b"");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"customer data"[..]));
    let r = to.request("HEAD", &format!("/enc/{}", keys[2]), &[], b"");
    assert_eq!(r.status, 404);
}

/// The proxies' clients go on during a move: one that overwrites a key while it is being
/// copied keeps its write (the move's `If-None-Match` fails), one that deletes a key while it
/// is copied does not see it come back (the move removes the copy it made). The moves are slowed
/// by the bandwidth bound, so the client's request lands while the copy's bytes still flow.
fn client_writes_and_deletes_during_a_move_win(runtime: RuntimeKind) {
    let nodes = nodes(runtime, 2);
    let mut c = nodes[0].client();
    assert_eq!(c.put("/race", b"").status, 200);
    assert_eq!(nodes[1].client().put("/race", b"").status, 200);
    let keys = keys_moving_to_second(&nodes, "race", "r/", 2);
    let big = vec![3u8; 192 * 1024];
    // The proxy clients use, already on the new layout.
    let cfg = layout_config(runtime, &nodes, &[0, 1], &[0]);
    let proxy = start_proxy(cfg.clone()).unwrap();
    let mut client = Client::connect(proxy.local_addr());
    let mut slow = cfg;
    slow.buffer_size = 16 * 1024;
    // One object to move per run: the one the client races.
    for (n, k) in keys.iter().enumerate() {
        assert_eq!(c.put(&format!("/race/{k}"), &big).status, 200);
        let progress = Arc::new(Progress::default());
        let opts = RebalanceOptions {
            // 192 KiB at 64 KiB/s: about three seconds of copying.
            max_bandwidth: Some(64 * 1024),
            concurrency: 1,
            ..RebalanceOptions::default()
        };
        let run = {
            let (slow, progress) = (slow.clone(), progress.clone());
            std::thread::spawn(move || rebalance_with(slow, opts, progress))
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while progress.sent_bytes.load(Ordering::Relaxed) == 0 {
            assert!(Instant::now() < deadline, "the move never started");
            std::thread::sleep(Duration::from_millis(5));
        }
        if n == 0 {
            assert_eq!(
                client.put(&format!("/race/{k}"), b"the client's").status,
                200
            );
        } else {
            let r = client.request("DELETE", &format!("/race/{k}"), &[], b"");
            assert_eq!(r.status, 204);
        }
        let report = run.join().unwrap().unwrap();
        assert_eq!(report.errors, 0, "{:?}", report.error_messages);
        assert!(report.superseded >= 1, "{report:?}");
    }
    let r = client.get(&format!("/race/{}", keys[0]));
    assert_eq!(r.body, b"the client's");
    assert_eq!(
        nodes[1].client().get(&format!("/race/{}", keys[0])).body,
        b"the client's"
    );
    client
        .get(&format!("/race/{}", keys[1]))
        .expect_error(404, "NoSuchKey");
    for n in &nodes {
        for k in &keys[1..] {
            let r = n.client().request("HEAD", &format!("/race/{k}"), &[], b"");
            assert_eq!(r.status, 404, "{k} came back on {}", n.id);
        }
        let r = n
            .client()
            .request("HEAD", &format!("/race/{}", keys[0]), &[], b"");
        assert_eq!(r.status, if n.id == "node-1" { 404 } else { 200 });
    }
    proxy.stop();
}

/// `ferry rebalance` killed with SIGKILL in the middle of its moves leaves every object
/// readable (on its old owner, its new one, or both), and the next run finishes the job: every
/// object on its owner alone, byte for byte.
fn a_killed_run_is_finished_by_the_next(runtime: RuntimeKind) {
    use crate::support::process::{KEY_ENV, spawn_ferry};
    let nodes = nodes(runtime, 2);
    let mut c = nodes[0].client();
    assert_eq!(c.put("/kill", b"").status, 200);
    let keys = keys_moving_to_second(&nodes, "kill", "k/", 16);
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(
            c.put(&format!("/kill/{k}"), &vec![i as u8; 40 * 1024])
                .status,
            200
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("proxy.toml");
    let toml = format!(
        "buffer_size = 16384\n\
         [[backend]]\nid = \"node-1\"\nurl = \"http://{}\"\n\
         [[backend]]\nid = \"node-2\"\nurl = \"http://{}\"\n\
         [[layout]]\nversion = 2\nbackends = {{ \"node-1\" = 1, \"node-2\" = 1 }}\n\
         [[layout]]\nversion = 1\nbackends = {{ \"node-1\" = 1 }}\n",
        nodes[0].addr, nodes[1].addr
    );
    std::fs::write(&path, toml).unwrap();
    let metrics = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let (config, metrics_arg) = (path.to_str().unwrap(), metrics.to_string());
    let mut child = spawn_ferry(
        &[
            "rebalance",
            "--runtime",
            runtime.as_str(),
            "--config",
            config,
            "--max-bandwidth",
            "64KiB",
            "--concurrency",
            "2",
            "--metrics-listen",
            &metrics_arg,
        ],
        &KEY_ENV,
    );
    // Killed once some objects have moved, and while more are moving.
    let moved = |m: &str| -> u64 {
        m.lines()
            .find(|l| l.starts_with("ferry_rebalance_objects_moved_total "))
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
            .unwrap_or(0)
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let m = loop {
        let m = std::net::TcpStream::connect(metrics)
            .ok()
            .map(|_| crate::support::http::plain_get(metrics, "/metrics").text())
            .unwrap_or_default();
        if moved(&m) >= 2 {
            break m;
        }
        assert!(Instant::now() < deadline, "no object moved");
        assert!(child.try_wait().unwrap().is_none(), "ended before the kill");
        std::thread::sleep(Duration::from_millis(20));
    };
    // `--max-bandwidth` is applied: bytes passed the bound. (That all of them do is asserted
    // on the report, where the counts are final: the_bandwidth_bound_meters_every_move.)
    let sent = metric_sum(&m, "ferry_rebalance_bytes_sent_total ");
    let throttled = metric_sum(&m, "ferry_rebalance_bytes_throttled_total ");
    assert!(sent > 0.0 && throttled > 0.0, "{m}");
    child.kill().unwrap();
    child.wait().unwrap();
    // Every object is readable through a proxy on the new layout meanwhile.
    let cfg = layout_config(runtime, &nodes, &[0, 1], &[0]);
    let proxy = start_proxy(cfg.clone()).unwrap();
    let mut client = Client::connect(proxy.local_addr());
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(
            client.get(&format!("/kill/{k}")).body,
            vec![i as u8; 40 * 1024]
        );
    }
    proxy.stop();
    let left_on_old = keys_on(&nodes[0], "kill").len();
    assert!(
        left_on_old > 0 && left_on_old < keys.len(),
        "{left_on_old} left"
    );
    let report = rebalance(cfg, RebalanceOptions::default()).unwrap();
    assert_eq!(report.errors, 0, "{:?}", report.error_messages);
    assert!(report.previous_layouts_removable(), "{report:?}");
    assert_eq!(keys_on(&nodes[0], "kill").len(), 0);
    for (i, k) in keys.iter().enumerate() {
        let r = nodes[1].client().get(&format!("/kill/{k}"));
        assert_eq!((r.status, r.body), (200, vec![i as u8; 40 * 1024]), "{k}");
    }
}

/// Object lock moves with the version: a GOVERNANCE retention and a legal hold are set on the
/// copy, and the old copy is then deleted (the retention bypassed, the hold lifted); a version
/// under COMPLIANCE retention is copied but stays where it was, counted, and keeps the previous
/// layout.
fn object_lock_moves_with_the_version(runtime: RuntimeKind) {
    let nodes = nodes(runtime, 2);
    for n in &nodes {
        let r = n.client().request(
            "PUT",
            "/locks",
            &[("x-amz-bucket-object-lock-enabled", "true")],
            b"",
        );
        assert_eq!(r.status, 200, "{}", r.text());
    }
    let keys = keys_moving_to_second(&nodes, "locks", "l/", 2);
    let until = ferry_core::time::DateTime::from_unix(crate::support::http::now() + 86_400)
        .iso8601()
        .to_string();
    let mut c = nodes[0].client();
    let body = b"locked data".to_vec();
    let md5h = ferry_core::md5::content_md5(&ferry_core::md5::md5(&body)).to_string();
    for (k, mode) in keys.iter().zip(["GOVERNANCE", "COMPLIANCE"]) {
        let r = c.request(
            "PUT",
            &format!("/locks/{k}"),
            &[
                ("x-amz-object-lock-mode", mode),
                ("x-amz-object-lock-retain-until-date", &until),
                ("x-amz-object-lock-legal-hold", "ON"),
                ("Content-MD5", &md5h),
            ],
            &body,
        );
        assert_eq!(r.status, 200, "{}", r.text());
    }
    let cfg = layout_config(runtime, &nodes, &[0, 1], &[0]);
    let report = rebalance(cfg, RebalanceOptions::default()).unwrap();
    assert_eq!(report.errors, 0, "{:?}", report.error_messages);
    assert_eq!(
        (report.moved_objects, report.skipped_locked),
        (1, 1),
        "{report:?}"
    );
    assert!(!report.previous_layouts_removable());
    for (k, mode) in keys.iter().zip(["GOVERNANCE", "COMPLIANCE"]) {
        let r = nodes[1].client().get(&format!("/locks/{k}"));
        assert_eq!((r.status, &r.body), (200, &body), "{k}");
        assert_eq!(r.header("x-amz-object-lock-mode"), Some(mode));
        assert_eq!(r.header("x-amz-object-lock-legal-hold"), Some("ON"));
        let left = c.request("HEAD", &format!("/locks/{k}"), &[], b"").status;
        assert_eq!(left, if mode == "COMPLIANCE" { 200 } else { 404 }, "{k}");
    }
}

/// A multipart upload in progress on the old owner of its key cannot be moved: it is counted
/// and its backend named (to keep declared), but the previous layout may go (its id names its
/// backend, and the proxy moves its object when it completes: `proxy_uploads.rs`).
fn uploads_in_progress_name_their_backend(runtime: RuntimeKind) {
    let nodes = nodes(runtime, 2);
    let mut c = nodes[0].client();
    assert_eq!(c.put("/ups", b"").status, 200);
    let key = &keys_moving_to_second(&nodes, "ups", "u/", 1)[0];
    let r = c.request("POST", &format!("/ups/{key}?uploads"), &[], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let id = r.xml_value("UploadId").unwrap();
    let cfg = layout_config(runtime, &nodes, &[0, 1], &[0]);
    let report = rebalance(cfg.clone(), RebalanceOptions::default()).unwrap();
    assert_eq!(report.uploads_elsewhere, 1, "{report:?}");
    assert_eq!(report.upload_backends, [nodes[0].id.clone()]);
    assert!(report.previous_layouts_removable());
    assert!(
        report
            .summary()
            .contains("1 multipart uploads are in progress")
    );
    let q = format!("uploadId={}", ferry_core::s3::uri::encode(&id));
    assert_eq!(
        c.request("DELETE", &format!("/ups/{key}?{q}"), &[], b"")
            .status,
        204
    );
    let report = rebalance(cfg, RebalanceOptions::default()).unwrap();
    assert!(report.previous_layouts_removable(), "{report:?}");
}

/// The stored full-object checksum of a key (or one of its versions) on node `n`: the
/// `x-amz-checksum-*` header a HEAD in checksum mode answers, and `x-amz-checksum-type`.
fn checksum_on(n: &Node, target: &str) -> Vec<(String, String)> {
    let r = n
        .client()
        .request("HEAD", target, &[("x-amz-checksum-mode", "ENABLED")], b"");
    // A part's read (`partNumber`) answers 206.
    assert!(
        matches!(r.status, 200 | 206),
        "HEAD {target} on {}: {} {:?}",
        n.id,
        r.status,
        r.headers
    );
    let mut out: Vec<(String, String)> = r
        .headers
        .iter()
        .filter(|(name, _)| name.to_ascii_lowercase().starts_with("x-amz-checksum-"))
        .map(|(name, v)| (name.to_ascii_lowercase(), v.clone()))
        .collect();
    out.sort();
    out
}

/// A full-object checksum stored with an object (each algorithm S3 has; two versions of a
/// versioned key, each with its own) is on the moved copy, the same value and type, and the
/// new owner answers it as the old one did.
fn full_object_checksums_move_with_the_object(runtime: RuntimeKind) {
    use ferry_core::s3::checksum::ChecksumAlgorithm;
    let nodes = nodes(runtime, 2);
    for n in &nodes {
        assert_eq!(n.client().put("/sums", b"").status, 200);
        assert_eq!(n.client().put("/sumv", b"").status, 200);
        assert_eq!(n.client().put("/sumv?versioning", ENABLED).status, 200);
    }
    let mut c = nodes[0].client();
    let keys = keys_moving_to_second(&nodes, "sums", "c/", ChecksumAlgorithm::ALL.len());
    let mut targets = Vec::new();
    for (i, (k, alg)) in keys.iter().zip(ChecksumAlgorithm::ALL).enumerate() {
        let body = body_of(i);
        let sum = alg.checksum(&body).to_base64();
        let target = format!("/sums/{k}");
        let r = c.request("PUT", &target, &[(alg.header_name(), sum.as_str())], &body);
        assert_eq!(r.status, 200, "{alg:?}: {}", r.text());
        let stored = checksum_on(&nodes[0], &target);
        assert!(
            stored.contains(&(alg.header_name().to_owned(), sum.as_str().to_owned())),
            "{stored:?}"
        );
        targets.push((target, stored));
    }
    let key = &keys_moving_to_second(&nodes, "sumv", "v/", 1)[0];
    for (i, alg) in [ChecksumAlgorithm::Crc32c, ChecksumAlgorithm::Sha256]
        .into_iter()
        .enumerate()
    {
        let body = body_of(10 + i);
        let sum = alg.checksum(&body).to_base64();
        let r = c.request(
            "PUT",
            &format!("/sumv/{key}"),
            &[(alg.header_name(), sum.as_str())],
            &body,
        );
        assert_eq!(r.status, 200, "{}", r.text());
        let id = r.header("x-amz-version-id").unwrap().to_owned();
        let target = format!("/sumv/{key}?versionId={}", ferry_core::s3::uri::encode(&id));
        let stored = checksum_on(&nodes[0], &target);
        assert!(
            stored.iter().any(|(n, _)| n == alg.header_name()),
            "{stored:?}"
        );
        targets.push((target, stored));
    }

    let cfg = layout_config(runtime, &nodes, &[0, 1], &[0]);
    let report = rebalance(cfg, RebalanceOptions::default()).unwrap();
    assert_eq!(report.errors, 0, "{:?}", report.error_messages);
    assert_eq!(report.moved_objects, targets.len() as u64, "{report:?}");
    for (target, stored) in &targets {
        assert_eq!(&checksum_on(&nodes[1], target), stored, "{target}");
        let r = c.request("HEAD", target, &[], b"");
        assert_eq!(r.status, 404, "{target} is still on node-1");
    }
}

/// A multipart upload through `c` to `target` (`/bucket/key`) of `parts`, created with
/// `headers`; with `checksum`, each part is sent with its checksum and listed with it in the
/// completion. Its version id, if the bucket is versioned.
fn upload(
    c: &mut Client,
    target: &str,
    headers: &[(&str, &str)],
    checksum: Option<ferry_core::s3::checksum::ChecksumAlgorithm>,
    parts: &[Vec<u8>],
) -> Option<String> {
    let r = c.request("POST", &format!("{target}?uploads"), headers, b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let id = r.xml_value("UploadId").unwrap();
    let q = format!("uploadId={}", ferry_core::s3::uri::encode(&id));
    let mut xml = String::from("<CompleteMultipartUpload>");
    for (i, part) in parts.iter().enumerate() {
        let n = i + 1;
        let sum = checksum.map(|a| (a, a.checksum(part).to_base64()));
        let sent: Vec<(&str, &str)> = sum
            .iter()
            .map(|(a, v)| (a.header_name(), v.as_str()))
            .collect();
        let r = c.request("PUT", &format!("{target}?partNumber={n}&{q}"), &sent, part);
        assert_eq!(r.status, 200, "{}", r.text());
        let etag = r.header("etag").unwrap();
        let listed = sum.map_or_else(String::new, |(a, v)| {
            format!("<Checksum{0}>{1}</Checksum{0}>", a.as_str(), v.as_str())
        });
        xml.push_str(&format!(
            "<Part><PartNumber>{n}</PartNumber><ETag>{etag}</ETag>{listed}</Part>"
        ));
    }
    xml.push_str("</CompleteMultipartUpload>");
    let r = c.request("POST", &format!("{target}?{q}"), &[], xml.as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.error_code().is_none(), "{}", r.text());
    r.header("x-amz-version-id").map(str::to_owned)
}

/// What node `n` answers of a multipart object (`target`, `parts` parts) in checksum mode: its
/// ETag, its checksum and type, and each part's checksum.
fn multipart_answers(n: &Node, target: &str, parts: usize) -> Vec<(String, String)> {
    let r = n.client().request("HEAD", target, &[], b"");
    assert_eq!(r.status, 200, "HEAD {target} on {}", n.id);
    let mut out = vec![("etag".to_owned(), r.header("etag").unwrap().to_owned())];
    out.extend(checksum_on(n, target));
    let sep = if target.contains('?') { '&' } else { '?' };
    for p in 1..=parts {
        for (name, v) in checksum_on(n, &format!("{target}{sep}partNumber={p}")) {
            out.push((format!("part {p} {name}"), v));
        }
    }
    out
}

/// A multipart object's checksums move with it (it is copied part by part into an upload of
/// the same algorithm and type): for each algorithm in each type S3 allows it, an empty
/// one-part object and a versioned key's noncurrent multipart version, the new owner answers
/// the same ETag, the same object checksum and type (a COMPOSITE one with its `-N`) and the
/// same checksum for each part.
fn multipart_checksums_move_with_the_object(runtime: RuntimeKind) {
    use ferry_core::s3::checksum::ChecksumAlgorithm as A;
    use ferry_core::s3::checksum::ChecksumType as T;
    const KINDS: [(A, T); 7] = [
        (A::Crc32, T::Composite),
        (A::Crc32c, T::Composite),
        (A::Sha1, T::Composite),
        (A::Sha256, T::Composite),
        (A::Crc32, T::FullObject),
        (A::Crc32c, T::FullObject),
        (A::Crc64Nvme, T::FullObject),
    ];
    let nodes = nodes(runtime, 2);
    for n in &nodes {
        assert_eq!(n.client().put("/mps", b"").status, 200);
        assert_eq!(n.client().put("/mpv", b"").status, 200);
        assert_eq!(n.client().put("/mpv?versioning", ENABLED).status, 200);
    }
    let mut c = nodes[0].client();
    let two = |i: usize| vec![vec![b'a' + i as u8; 2048], vec![b'A' + i as u8; 700]];
    let keys = keys_moving_to_second(&nodes, "mps", "m/", KINDS.len() + 1);
    // (target, parts) of each object.
    let mut targets = Vec::new();
    for (i, (k, (alg, kind))) in keys.iter().zip(KINDS).enumerate() {
        let target = format!("/mps/{k}");
        let create = [
            ("x-amz-checksum-algorithm", alg.as_str()),
            ("x-amz-checksum-type", kind.as_str()),
        ];
        upload(&mut c, &target, &create, Some(alg), &two(i));
        targets.push((target, 2));
    }
    let target = format!("/mps/{}", keys[KINDS.len()]);
    let create = [("x-amz-checksum-algorithm", "CRC32")];
    upload(&mut c, &target, &create, Some(A::Crc32), &[Vec::new()]);
    // Its empty part has no read (416): its checksum is in the object's.
    targets.push((target, 0));
    let key = &keys_moving_to_second(&nodes, "mpv", "v/", 1)[0];
    let target = format!("/mpv/{key}");
    let create = [("x-amz-checksum-algorithm", "SHA256")];
    let id = upload(&mut c, &target, &create, Some(A::Sha256), &two(9)).expect("a version id");
    assert_eq!(c.put(&target, b"the current version").status, 200);
    targets.push((
        format!("{target}?versionId={}", ferry_core::s3::uri::encode(&id)),
        2,
    ));
    let before: Vec<_> = targets
        .iter()
        .map(|(t, parts)| multipart_answers(&nodes[0], t, *parts))
        .collect();
    let has = |answers: &[(String, String)], name: &str, pred: &dyn Fn(&str) -> bool| {
        answers.iter().any(|(n, v)| n == name && pred(v))
    };
    assert!(
        has(&before[0], "x-amz-checksum-crc32", &|v| v.ends_with("-2"))
            && has(&before[0], "x-amz-checksum-type", &|v| v == "COMPOSITE")
            && has(&before[0], "part 2 x-amz-checksum-crc32", &|v| !v
                .contains('-')),
        "{:?}",
        before[0]
    );
    assert!(
        has(&before[6], "x-amz-checksum-type", &|v| v == "FULL_OBJECT"),
        "{:?}",
        before[6]
    );

    let cfg = layout_config(runtime, &nodes, &[0, 1], &[0]);
    let report = rebalance(cfg, RebalanceOptions::default()).unwrap();
    assert_eq!(report.errors, 0, "{:?}", report.error_messages);
    // And the versioned key's current version.
    assert_eq!(report.moved_objects, targets.len() as u64 + 1, "{report:?}");
    for ((target, parts), want) in targets.iter().zip(&before) {
        assert_eq!(
            &multipart_answers(&nodes[1], target, *parts),
            want,
            "{target}"
        );
        let r = c.request("HEAD", target, &[], b"");
        assert_eq!(r.status, 404, "{target} is still on node-1");
    }
}

/// The grants of the ACL node `n` answers for `target` (`/bucket/key`, a version), sorted, and
/// its owner.
fn acl_on(n: &Node, target: &str) -> (String, Vec<String>) {
    let sep = if target.contains('?') { '&' } else { '?' };
    let r = n.client().get(&format!("{target}{sep}acl"));
    assert_eq!(r.status, 200, "{target}: {}", r.text());
    let acl = ferry_core::s3::acl::Acl::parse_xml(&r.body).unwrap();
    let mut grants: Vec<String> = acl.grants.iter().map(|g| format!("{g:?}")).collect();
    grants.sort();
    (acl.owner, grants)
}

/// An object's ACL moves with it (on the copy's write, so the copy never exists without it): a
/// canned public-read on a single-part and on a multipart object, a grant to another user, and
/// a grant on a noncurrent version; after the move an anonymous read of the public ones through
/// a proxy works and the other user may read what it was granted. An SSE-KMS object keeps its
/// encryption context (single-part and multipart): its owner unwraps the key with it, and gives
/// it back when the cluster asks (`x-ferry-encryption-context-mode`, sealed), to no one else:
/// not the bucket's owner, nor another user.
fn acls_and_kms_contexts_move_with_the_object(runtime: RuntimeKind) {
    use crate::support::ALICE;
    let dir = tempfile::tempdir().unwrap();
    let keyring = write_keyring(dir.path());
    let mut nodes = nodes(runtime, 2);
    for n in &mut nodes {
        n.stop();
        n.sse_kms_keyring = Some(keyring.clone());
        n.users = vec![ALICE.user()];
        n.restart();
        assert_eq!(n.client().put("/acl", b"").status, 200);
        assert_eq!(n.client().put("/aclv", b"").status, 200);
        assert_eq!(n.client().put("/aclv?versioning", ENABLED).status, 200);
    }
    let mut c = nodes[0].client();
    let keys = keys_moving_to_second(&nodes, "acl", "a/", 5);
    let t: Vec<String> = keys.iter().map(|k| format!("/acl/{k}")).collect();
    let grant = format!("id=\"{}\"", ALICE.canonical_id());
    let public = [("x-amz-acl", "public-read")];
    let r = c.request("PUT", &t[0], &public, b"public data");
    assert_eq!(r.status, 200, "{}", r.text());
    let r = c.request("PUT", &t[1], &[("x-amz-grant-read", &grant)], b"alice's");
    assert_eq!(r.status, 200, "{}", r.text());
    let parts = vec![vec![b'p'; 2048], vec![b'q'; 10]];
    upload(&mut c, &t[2], &public, None, &parts);
    let ctx = {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(br#"{"team":"ferry"}"#)
    };
    let kms = [
        ("x-amz-server-side-encryption", "aws:kms"),
        ("x-amz-server-side-encryption-aws-kms-key-id", "k2"),
        ("x-amz-server-side-encryption-context", ctx.as_str()),
    ];
    let r = c.request("PUT", &t[3], &kms, b"kms data");
    assert_eq!(r.status, 200, "{}", r.text());
    upload(&mut c, &t[4], &kms, None, &parts);
    let key = &keys_moving_to_second(&nodes, "aclv", "v/", 1)[0];
    let r = c.put(&format!("/aclv/{key}"), b"old");
    let old = format!(
        "/aclv/{key}?versionId={}",
        r.header("x-amz-version-id").unwrap()
    );
    let r = c.request(
        "PUT",
        &format!("{old}&acl"),
        &[("x-amz-grant-read", &grant)],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(c.put(&format!("/aclv/{key}"), b"new").status, 200);
    let with_acls = [&t[0], &t[1], &t[2], &old];
    let before: Vec<_> = with_acls.iter().map(|t| acl_on(&nodes[0], t)).collect();
    let names =
        |(_, grants): &(String, Vec<String>), who: &str| grants.iter().any(|g| g.contains(who));
    let (everyone, alice_id) = (ferry_core::s3::acl::ALL_USERS, ALICE.canonical_id());
    assert!(
        names(&before[0], everyone)
            && names(&before[1], &alice_id)
            && names(&before[2], everyone)
            && names(&before[3], &alice_id),
        "{before:?}"
    );

    let cfg = layout_config(runtime, &nodes, &[0, 1], &[0]);
    let report = rebalance(cfg.clone(), RebalanceOptions::default()).unwrap();
    assert_eq!(report.errors, 0, "{:?}", report.error_messages);
    assert_eq!(report.moved_objects, 7, "{report:?}");
    for (target, want) in with_acls.iter().zip(&before) {
        assert_eq!(&acl_on(&nodes[1], target), want, "{target}");
    }
    assert_eq!(acl_on(&nodes[1], &format!("/aclv/{key}")).1.len(), 1);
    let proxy = start_proxy(cfg).unwrap();
    let anonymous = |target: &str| crate::support::http::plain_get(proxy.local_addr(), target);
    assert_eq!(anonymous(&t[0]).body, b"public data");
    assert_eq!(anonymous(&t[2]).body, parts.concat());
    assert_eq!(anonymous(&t[1]).status, 403);
    proxy.stop();
    let mut alice = nodes[1].client();
    alice.credentials = ferry_core::s3::sigv4::Credentials::new(ALICE.access_key, ALICE.secret_key);
    assert_eq!(alice.get(&t[1]).body, b"alice's");
    alice
        .request(
            "GET",
            &t[1],
            &[(header::X_FERRY_ENCRYPTION_CONTEXT_MODE, "ENABLED")],
            b"",
        )
        .expect_error(403, "AccessDenied");

    let mut to = nodes[1].client();
    for (target, body) in [(&t[3], b"kms data".to_vec()), (&t[4], parts.concat())] {
        let ask = [(header::X_FERRY_ENCRYPTION_CONTEXT_MODE, "ENABLED")];
        to.request("GET", target, &ask, b"")
            .expect_error(403, "AccessDenied");
        let r = to.sealed("GET", target, &ask, b"");
        assert_eq!((r.status, &r.body), (200, &body), "{target}");
        assert_eq!(
            r.header(header::X_AMZ_SSE_CONTEXT),
            Some(ctx.as_str()),
            "{target}"
        );
        assert_eq!(
            r.header("x-amz-server-side-encryption-aws-kms-key-id"),
            Some("k2")
        );
        // As on AWS, reads do not say it unless asked.
        assert_eq!(
            to.get(target).header(header::X_AMZ_SSE_CONTEXT),
            None,
            "{target}"
        );
    }
}
