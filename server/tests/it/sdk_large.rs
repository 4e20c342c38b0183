//! Large and concurrent transfers through the AWS SDK for Rust, on a node and through the proxy, on
//! both runtimes: a 64 MiB object streamed up from a file (aws-chunked, CRC32 trailer) and down
//! chunk by chunk with its MD5 checked, and concurrent PUT/GET of generated objects.

use std::io::Write;

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::ChecksumMode;
use ferry_core::fill::ShardedFill;
use md5::{Digest, Md5};

use crate::support::sdk::{self, Target, TestNode, recording_client, show};

on_every_target!(sixty_four_mib_streamed, concurrent_puts_and_gets);

const LEN: u64 = 64 << 20;

async fn sixty_four_mib_streamed(target: Target) {
    let n = TestNode::start(target);
    n.bucket("large").await;
    let fill = ShardedFill::new(0x646d_6962);
    let obj = fill.object(64);
    let expected = sdk::hex(&obj.md5(LEN));

    // The body is a file, so the SDK streams it (no 64 MiB buffer on the way up).
    let tmp = tempfile::tempdir().expect("temp dir");
    let path = tmp.path().join("64mib");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
        let mut buf = vec![0u8; 1 << 20];
        for i in 0..(LEN >> 20) {
            obj.fill_at(i << 20, &mut buf);
            f.write_all(&buf).expect("write");
        }
        f.flush().expect("flush");
    }
    let (client, rec) = recording_client(n.addr);
    let put = client
        .put_object()
        .bucket("large")
        .key("sixty-four")
        .body(ByteStream::from_path(&path).await.expect("file body"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("put 64 MiB: {}", show(&e)));
    assert!(
        rec.header("content-encoding")
            .is_some_and(|e| e.contains("aws-chunked"))
    );
    assert_eq!(put.e_tag(), Some(format!("\"{expected}\"").as_str()));

    // Down, chunk by chunk: MD5 and a byte-exact check at every offset.
    let get = client
        .get_object()
        .bucket("large")
        .key("sixty-four")
        .checksum_mode(ChecksumMode::Enabled)
        .send()
        .await
        .unwrap_or_else(|e| panic!("get 64 MiB: {}", show(&e)));
    assert_eq!(get.content_length(), Some(LEN as i64));
    assert!(
        get.checksum_crc32().is_some(),
        "the trailer's CRC32 is kept"
    );
    let mut body = get.body;
    let mut md5 = Md5::new();
    let mut offset = 0u64;
    let mut chunks = 0u64;
    while let Some(chunk) = body.try_next().await.expect("body chunk") {
        obj.verify_at(offset, &chunk)
            .unwrap_or_else(|m| panic!("mismatch {m} (chunk at {offset})"));
        md5.update(&chunk);
        offset += chunk.len() as u64;
        chunks += 1;
    }
    assert_eq!(offset, LEN);
    assert!(chunks > 1, "the body came in pieces");
    assert_eq!(sdk::hex(&md5.finalize()), expected);

    // The last MiB by range.
    let tail = client
        .get_object()
        .bucket("large")
        .key("sixty-four")
        .range(format!("bytes={}-", LEN - (1 << 20)))
        .send()
        .await
        .expect("range");
    let bytes = sdk::body_bytes(tail.body).await;
    assert_eq!(bytes.len(), 1 << 20);
    obj.verify_at(LEN - (1 << 20), &bytes).expect("tail bytes");
}

async fn concurrent_puts_and_gets(target: Target) {
    let n = TestNode::start(target);
    n.bucket("many").await;
    let fill = std::sync::Arc::new(ShardedFill::new(42));
    // Sizes across block and buffer boundaries, up to 3 MiB.
    let sizes: Vec<usize> = (0..24u64)
        .map(|i| ((i * 2_654_435_761) % (3 << 20)) as usize + (i as usize % 3))
        .collect();
    let mut set = tokio::task::JoinSet::new();
    for (id, &len) in sizes.iter().enumerate() {
        let client = n.client.clone();
        let fill = fill.clone();
        set.spawn(async move {
            let (data, digest) = fill.object(id as u64).generate_with_md5(len);
            let out = client
                .put_object()
                .bucket("many")
                .key(format!("obj/{id:03}"))
                .body(ByteStream::from(data))
                .send()
                .await
                .unwrap_or_else(|e| panic!("put {id}: {}", show(&e)));
            assert_eq!(
                out.e_tag(),
                Some(format!("\"{}\"", sdk::hex(&digest)).as_str())
            );
        });
    }
    while let Some(r) = set.join_next().await {
        r.expect("put task");
    }
    let mut set = tokio::task::JoinSet::new();
    for (id, &len) in sizes.iter().enumerate() {
        let client = n.client.clone();
        let fill = fill.clone();
        set.spawn(async move {
            let out = client
                .get_object()
                .bucket("many")
                .key(format!("obj/{id:03}"))
                .send()
                .await
                .unwrap_or_else(|e| panic!("get {id}: {}", show(&e)));
            let body = sdk::body_bytes(out.body).await;
            assert_eq!(body.len(), len, "object {id}");
            fill.object(id as u64)
                .verify_at(0, &body)
                .unwrap_or_else(|m| panic!("object {id}: {m}"));
        });
    }
    while let Some(r) = set.join_next().await {
        r.expect("get task");
    }
}
