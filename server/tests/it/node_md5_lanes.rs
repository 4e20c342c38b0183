//! Concurrent writes through the node's MD5 lanes, over real TCP on both runtimes, with
//! streamed bodies written through `io_uring` and through the blocking pool: every ETag is the
//! body's MD5, bad `Content-MD5`s are refused, every byte written (PUTs, a part, a copy) was
//! hashed by the lane scheduler, every full buffer of a streamed body went through the ring
//! when it was on, and, when it was off, every body's wait for its hashing was counted.

use std::net::SocketAddr;
use std::sync::{Arc, Barrier};
use std::thread;

use ferry_core::md5::{ETag, content_md5, md5};
use ferry_server::RuntimeKind;

use crate::support::http::{Client, metrics_after};
use crate::support::node::Node;

on_both_runtimes!(concurrent_puts_hash_in_lanes, without_io_uring);

const THREADS: usize = 16;

/// The value of the sample `name` (no labels) in a text exposition.
fn sample(metrics: &str, name: &str) -> u64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} in\n{metrics}"))
}

/// xorshift64*: sizes and bytes that differ per thread, the same on every run.
fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    move || {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn body(seed: u64, len: usize) -> Vec<u8> {
    let mut next = rng(seed);
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        v.extend_from_slice(&next().to_le_bytes());
    }
    v.truncate(len);
    v
}

/// The bytes of a streamed body of `len` that go out in full 256 KiB buffers (through the
/// ring when it is on; the last partial buffer takes the blocking pool).
fn full_buffers(len: u64) -> u64 {
    len / (256 << 10) * (256 << 10)
}

/// One thread's uploads: a PUT with a good `Content-MD5`, one with a wrong one (refused, so
/// its key stays absent), one without. Returns the bytes sent and their full buffers' bytes.
fn uploads(addr: SocketAddr, t: usize, start: &Barrier) -> (u64, u64) {
    let mut c = Client::connect(addr);
    let mut size = rng(1000 + t as u64);
    let mut sent = 0u64;
    let mut full = 0u64;
    start.wait();
    for (round, check) in ["good", "wrong", "none"].into_iter().enumerate() {
        // 64 KiB .. 3 MiB, not multiples of the 256 KiB buffers.
        let len = 65_536 + (size() % (3 << 20)) as usize;
        let data = body((t * 10 + round) as u64, len);
        let key = format!("/lanes/t{t}-{check}");
        let digest = match check {
            "good" => Some(content_md5(&md5(&data)).to_string()),
            "wrong" => Some(content_md5(&md5(b"something else")).to_string()),
            _ => None,
        };
        let headers: Vec<(&str, &str)> = digest
            .as_deref()
            .map(|d| ("Content-MD5", d))
            .into_iter()
            .collect();
        let r = c.request("PUT", &key, &headers, &data);
        sent += len as u64;
        full += full_buffers(len as u64);
        if check == "wrong" {
            r.expect_error(400, "BadDigest");
            c.get(&key).expect_error(404, "NoSuchKey");
            continue;
        }
        assert_eq!(r.status, 200, "{key}: {}", r.text());
        let want = ETag::single(&md5(&data));
        assert_eq!(r.header("etag"), Some(want.as_str()), "{key}");
        let got = c.get(&key);
        assert_eq!(got.header("etag"), Some(want.as_str()), "{key}");
        assert!(got.body == data, "{key}: the bytes stored");
    }
    (sent, full)
}

fn concurrent_puts_hash_in_lanes(rt: RuntimeKind) {
    puts_hash_in_lanes(Node::start(rt), true);
}

fn without_io_uring(rt: RuntimeKind) {
    puts_hash_in_lanes(Node::without_io_uring(rt), false);
}

fn puts_hash_in_lanes(node: Node, ring: bool) {
    let admin = node
        .handle
        .as_ref()
        .and_then(|h| h.admin_addr())
        .expect("admin");
    let mut c = node.client();
    assert_eq!(c.put("/lanes", b"").status, 200);

    let start = Arc::new(Barrier::new(THREADS));
    let addr = node.addr;
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let start = start.clone();
            thread::spawn(move || uploads(addr, t, &start))
        })
        .collect();
    let (mut sent, mut full) = threads
        .into_iter()
        .map(|h| h.join().expect("uploader"))
        .fold((0, 0), |(s, f), (a, b)| (s + a, f + b));

    // A copy and a part go through the lanes as well.
    let r = c.request(
        "PUT",
        "/lanes/copy",
        &[("x-amz-copy-source", "/lanes/t3-good")],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let src = c.get("/lanes/t3-good").body;
    sent += src.len() as u64;
    assert_eq!(
        c.get("/lanes/copy").header("etag"),
        Some(ETag::single(&md5(&src)).as_str())
    );
    let r = c.request("POST", "/lanes/mp?uploads", &[], b"");
    let upload = r.xml_value("UploadId").expect("UploadId");
    let part = body(77, 300_001);
    let r = c.request(
        "PUT",
        &format!("/lanes/mp?partNumber=1&uploadId={upload}"),
        &[],
        &part,
    );
    assert_eq!(r.header("etag"), Some(ETag::single(&md5(&part)).as_str()));
    sent += part.len() as u64;
    full += full_buffers(part.len() as u64);

    // The bucket; a PUT and a GET per upload; the copy, two GETs, the upload and its part.
    let m = metrics_after(admin, "ferry_node", 1 + THREADS as u64 * 6 + 5);
    assert_eq!(
        sample(&m, "ferry_node_md5_lane_bytes_total"),
        sent,
        "every byte written was hashed by the lanes"
    );
    let batches = sample(&m, "ferry_node_md5_lane_batches_total");
    let streams = sample(&m, "ferry_node_md5_lane_streams_total");
    // Each of the 50 bodies is in one batch at least; concurrent uploads often share one
    // (how often is timing: the core's `shared` tests pin the sharing itself down).
    assert!(batches >= 1 && streams >= 50 && streams >= batches, "{m}");
    assert!(sample(&m, "ferry_node_md5_lane_widest_batch") >= 1);
    // The copy's bytes are read from a file on a blocking thread, not streamed: never the ring.
    assert_eq!(
        sample(&m, "ferry_node_store_ring_write_bytes_total"),
        if ring { full } else { 0 },
        "full buffers of streamed bodies go through io_uring when it is on (this machine's \
         kernel has it, and the test's temp directory takes O_DIRECT)"
    );
    assert!(sample(&m, "ferry_node_store_direct_write_bytes_total") >= full);
    // A buffer handed to the blocking pool waits there until the lanes have hashed it, and
    // that wait is counted (even when nothing was left to wait for): every body's buffers, so
    // at least one per stream. Through the ring a write waits only when another thread's
    // batch holds its last chunks: how often is timing.
    let waits = sample(&m, "ferry_node_md5_lane_wait_seconds_count");
    if !ring {
        assert!(waits >= streams, "{waits} waits for {streams} streams\n{m}");
    }
}
