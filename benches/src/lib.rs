//! The comparisons behind Ferry's benchmarks: each hot path beside its physical baseline.
//!
//! Criterion (`cargo bench -p ferry-benches`) and the `report` binary run the same [`Case`]s, so
//! the quick table and the detailed statistics always measure the same code.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferry_core::fill::ShardedFill;
use ferry_core::http::chunked::{self, ChunkedDecoder};
use ferry_core::http::head::{HeadParser, Status, Version};
use ferry_core::http::{Header, write};
use ferry_core::md5::Md5Sink;
use ferry_core::md5::lanes::{Backend, md5_many};
use ferry_core::md5::scheduler::Md5Scheduler;
use ferry_core::pool::{BufferPool, PoolConfig};
use ferry_core::s3::address::AddressingConfig;
use ferry_core::s3::body::{BodyLimit, BodyVerifier, Checks};
use ferry_core::s3::checksum::ChecksumAlgorithm;
use ferry_core::s3::header;
use ferry_core::s3::outbound::OutboundRequest;
use ferry_core::s3::request::Endpoint;
use ferry_core::s3::sigv4::aws_chunked::{AwsChunkedDecoder, AwsChunkedEncoder};
use ferry_core::s3::sigv4::{
    Credentials, MemoryCredentials, NoKeyCache, RequestParts, STREAMING_UNSIGNED_PAYLOAD_TRAILER,
    SigningKeyCache, StreamingMode, sign_request, verify_request,
};
use ferry_core::sse::{self, ObjectCipher};
use ferry_core::stats::{MannWhitney, Summary, mann_whitney, summarize};
use ferry_core::time::DateTime;
use md5::{Digest, Md5};
use rand_core::{Rng, SeedableRng};
use rand_pcg::Pcg64;

/// What one iteration of a case moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Bytes per iteration (reported as GB/s).
    Bytes(u64),
    /// Operations per iteration (reported as Mops/s).
    Ops(u64),
}

/// A timed routine: run `iters` iterations and return the wall time they took.
pub type Routine = Box<dyn FnMut(u64) -> Duration + Send>;

/// One comparison: Ferry's code and its baseline, doing the same amount of work per iteration.
pub struct Case {
    /// Criterion group name, e.g. `fill/256KiB`.
    pub name: String,
    /// What an iteration moves.
    pub unit: Unit,
    /// Ferry's hot path.
    pub ferry: Routine,
    /// The physical baseline.
    pub baseline: Routine,
}

impl std::fmt::Debug for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Case")
            .field("name", &self.name)
            .field("unit", &self.unit)
            .finish()
    }
}

fn timed(mut body: impl FnMut() + Send + 'static) -> Routine {
    Box::new(move |iters| {
        let start = Instant::now();
        for _ in 0..iters {
            body();
        }
        start.elapsed()
    })
}

/// Run `body` on `threads` threads, `iters` times each, and return the wall time.
fn timed_threads(threads: usize, body: impl Fn() + Send + Sync + 'static) -> Routine {
    let body = Arc::new(body);
    Box::new(move |iters| {
        let barrier = Arc::new(std::sync::Barrier::new(threads + 1));
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let (body, barrier) = (body.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    for _ in 0..iters {
                        body();
                    }
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        for h in handles {
            h.join().expect("bench thread");
        }
        start.elapsed()
    })
}

fn size_name(n: usize) -> String {
    if n >= 1 << 20 {
        format!("{}MiB", n >> 20)
    } else {
        format!("{}KiB", n >> 10)
    }
}

/// Fill a caller's buffer (the XOR fill) vs `copy_from_slice` of the same length.
pub fn fill_cases() -> Vec<Case> {
    let fill = Arc::new(ShardedFill::new(1));
    [64 << 10, 256 << 10, 1 << 20, 16 << 20]
        .into_iter()
        .map(|n: usize| {
            let f = fill.clone();
            let mut dst = vec![1u8; n];
            let mut id = 0u64;
            let mut dst2 = vec![1u8; n];
            let src = fill.object(u64::MAX).generate(n);
            Case {
                name: format!("fill/{}", size_name(n)),
                unit: Unit::Bytes(n as u64),
                ferry: timed(move || {
                    id = id.wrapping_add(1);
                    f.fill(black_box(id), 0, black_box(&mut dst));
                }),
                baseline: timed(move || black_box(&mut dst2).copy_from_slice(black_box(&src))),
            }
        })
        .collect()
}

/// The table-copy generator that `ShardedFill` used before the XOR fill (issue 12, item 7),
/// kept here so the two can be compared side by side (`report fill`): 256 PCG shards of 4 KiB
/// (a 1 MiB table); block `b` of object `id` is a shard rotated by whole 64-byte lines, both
/// chosen by word `b` of a PCG stream of the object, copied out in one or two `memcpy`s. (The
/// original also prefetched the next block's shard, measured ±0; left out.)
pub struct TableFill {
    table: Box<[u8]>,
    seed: u64,
}

impl std::fmt::Debug for TableFill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableFill")
            .field("seed", &self.seed)
            .finish_non_exhaustive()
    }
}

fn splitmix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl TableFill {
    const SHARD: usize = 4096;

    /// The 1 MiB table for `seed`.
    pub fn new(seed: u64) -> Self {
        let mut table = vec![0u8; 256 * Self::SHARD].into_boxed_slice();
        Pcg64::seed_from_u64(seed).fill_bytes(&mut table);
        Self { table, seed }
    }

    /// Fill `buf` with object `id` from offset 0.
    pub fn fill(&self, id: u64, buf: &mut [u8]) {
        let seed = self.seed;
        let state =
            u128::from(splitmix(seed ^ splitmix(id))) << 64 | u128::from(splitmix(!seed ^ id));
        let mut rng = Pcg64::new(state, u128::from(id));
        for block in buf.chunks_mut(Self::SHARD) {
            let word = rng.next_u64();
            let s = (word & 0xff) as usize * Self::SHARD;
            let shard = &self.table[s..s + Self::SHARD];
            // Rotations are whole cache lines: a misaligned source splits every vector load.
            let start = ((word >> 8) as usize & 63) * 64;
            let first = block.len().min(Self::SHARD - start);
            let (a, b) = block.split_at_mut(first);
            a.copy_from_slice(&shard[start..start + first]);
            b.copy_from_slice(&shard[..b.len()]);
        }
    }
}

/// [`TableFill`] (the old generator) vs `copy_from_slice` of the same length, beside `fill/*`.
pub fn fill_table_cases() -> Vec<Case> {
    let fill = Arc::new(TableFill::new(1));
    [64 << 10, 256 << 10, 1 << 20, 16 << 20]
        .into_iter()
        .map(|n: usize| {
            let f = fill.clone();
            let mut dst = vec![1u8; n];
            let mut id = 0u64;
            let mut dst2 = vec![1u8; n];
            let src = ShardedFill::new(1).object(u64::MAX).generate(n);
            Case {
                name: format!("fill_table/{}", size_name(n)),
                unit: Unit::Bytes(n as u64),
                ferry: timed(move || {
                    id = id.wrapping_add(1);
                    f.fill(black_box(id), black_box(&mut dst));
                }),
                baseline: timed(move || black_box(&mut dst2).copy_from_slice(black_box(&src))),
            }
        })
        .collect()
}

/// A fresh object (allocate + fill) vs a fresh zeroed `vec![0u8; n]`.
pub fn fresh_object_cases() -> Vec<Case> {
    let fill = Arc::new(ShardedFill::new(2));
    [1 << 20, 16 << 20]
        .into_iter()
        .map(|n: usize| {
            let f = fill.clone();
            let mut id = 0u64;
            Case {
                name: format!("fresh_object/{}", size_name(n)),
                unit: Unit::Bytes(n as u64),
                ferry: timed(move || {
                    id = id.wrapping_add(1);
                    black_box(f.object(id).generate(n));
                }),
                baseline: timed(move || {
                    black_box(vec![0u8; black_box(n)]);
                }),
            }
        })
        .collect()
}

/// Streaming MD5 in 64 KiB updates vs one-shot `Md5::digest` of 1 MiB.
pub fn md5_cases() -> Vec<Case> {
    let n = 1 << 20;
    let data: Arc<[u8]> = ShardedFill::new(3).object(0).generate(n).into();
    let d2 = data.clone();
    vec![Case {
        name: "md5/1MiB_in_64KiB_updates".into(),
        unit: Unit::Bytes(n as u64),
        ferry: timed(move || {
            let mut sink = Md5Sink::new();
            for chunk in data.chunks(64 << 10) {
                sink.update(black_box(chunk));
            }
            black_box(sink.finalize());
        }),
        baseline: timed(move || {
            black_box(Md5::digest(black_box(&d2[..])));
        }),
    }]
}

/// Multi-lane MD5 (issue 12): 16 messages of 1 MiB hashed together, and one stream through the
/// lane scheduler, each vs `md-5` on the same bytes.
pub fn md5_lanes_cases() -> Vec<Case> {
    const N: usize = 1 << 20;
    let fill = ShardedFill::new(3);
    let bodies: Arc<Vec<Vec<u8>>> =
        Arc::new((0..16).map(|id| fill.object(id).generate(N)).collect());
    let b2 = bodies.clone();
    let backend = Backend::detect();
    let one: Arc<[u8]> = fill.object(100).generate(N).into();
    let one2 = one.clone();
    vec![
        Case {
            name: "md5/lanes_16x1MiB".into(),
            unit: Unit::Bytes(16 * N as u64),
            ferry: timed(move || {
                let msgs: Vec<&[u8]> = bodies.iter().map(|b| black_box(&b[..])).collect();
                let mut out = [[0u8; 16]; 16];
                md5_many(backend, &msgs, &mut out);
                black_box(out);
            }),
            baseline: timed(move || {
                for b in b2.iter() {
                    black_box(Md5::digest(black_box(&b[..])));
                }
            }),
        },
        // An upload's 64 KiB chunks, each submitted and driven as it arrives, alone.
        Case {
            name: "md5/lanes_1_stream".into(),
            unit: Unit::Bytes(N as u64),
            ferry: timed(move || {
                let mut sched = Md5Scheduler::<&[u8]>::with_backend(backend);
                let id = sched.open();
                for chunk in one.chunks(64 << 10) {
                    sched.submit(id, black_box(chunk)).expect("open");
                    sched.run_once();
                }
                sched.finish(id).expect("open");
                black_box(sched.take_digest(id).expect("open"));
            }),
            baseline: timed(move || {
                black_box(Md5::digest(black_box(&one2[..])));
            }),
        },
    ]
}

/// Generate + MD5 of 16 objects of 1 MiB, generated 16 KiB at a time beside the lanes (the
/// load tester's `--md5`), vs `md-5` of the same bytes already generated.
pub fn generate_md5_cases() -> Vec<Case> {
    const N: u64 = 1 << 20;
    let fill = Arc::new(ShardedFill::new(7));
    let objects: Vec<(u64, u64)> = (0..16).map(|id| (id, N)).collect();
    let bodies: Vec<Vec<u8>> = objects
        .iter()
        .map(|&(id, n)| fill.object(id).generate(n as usize))
        .collect();
    vec![Case {
        name: "generate_md5/16x1MiB".into(),
        unit: Unit::Bytes(16 * N),
        ferry: timed(move || {
            black_box(fill.md5_many(black_box(&objects)));
        }),
        baseline: timed(move || {
            for b in &bodies {
                black_box(Md5::digest(black_box(&b[..])));
            }
        }),
    }]
}

/// Pool `get` + drop of 256 KiB vs a fresh `vec![0u8; 256 KiB]`, on 1 and 2 threads.
pub fn pool_cases() -> Vec<Case> {
    const N: usize = 256 << 10;
    [1usize, 2]
        .into_iter()
        .map(|threads| {
            let pool = BufferPool::leak(PoolConfig::default());
            Case {
                name: format!(
                    "pool_256KiB/{threads}_thread{}",
                    if threads > 1 { "s" } else { "" }
                ),
                unit: Unit::Ops(threads as u64),
                ferry: timed_threads(threads, move || drop(black_box(pool.get(black_box(N))))),
                baseline: timed_threads(threads, || drop(black_box(vec![0u8; black_box(N)]))),
            }
        })
        .collect()
}

/// Chunked decode of a 1 MiB body sent in 64 KiB chunks (copying out) vs memcpy of 1 MiB.
pub fn chunked_cases() -> Vec<Case> {
    let n = 1 << 20;
    let body = ShardedFill::new(4).object(0).generate(n);
    let mut wire = Vec::with_capacity(n + 1024);
    for chunk in body.chunks(64 << 10) {
        chunked::write_chunk(&mut wire, chunk);
    }
    chunked::write_last_chunk(&mut wire, &[]).expect("no trailers");
    let mut out = vec![0u8; n];
    let mut out2 = vec![0u8; n];
    vec![Case {
        name: "chunked_decode/1MiB_64KiB_chunks".into(),
        unit: Unit::Bytes(n as u64),
        ferry: timed(move || {
            let mut dec = ChunkedDecoder::default();
            let p = dec
                .decode(black_box(&wire), black_box(&mut out))
                .expect("valid body");
            assert!(p.done && p.produced == n);
        }),
        baseline: timed(move || black_box(&mut out2).copy_from_slice(black_box(&body))),
    }]
}

const ACCESS_KEY: &str = "AKIAIOSFODNN7EXAMPLE";
const SECRET_KEY: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
const NOW: i64 = 1_700_000_000;

/// A PutObject head as the AWS SDK for Rust sends it, signed (`STREAMING-UNSIGNED-PAYLOAD-TRAILER`).
pub fn signed_put_head() -> Vec<u8> {
    let date = DateTime::from_unix(NOW).amz().to_string();
    let fixed: [(&str, &str); 9] = [
        (header::HOST, "127.0.0.1:7001"),
        (
            header::USER_AGENT,
            "aws-sdk-rust/1.3.9 os/linux lang/rust/1.95.0",
        ),
        (header::CONTENT_TYPE, "application/octet-stream"),
        (header::CONTENT_ENCODING, "aws-chunked"),
        (
            header::X_AMZ_CONTENT_SHA256,
            "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
        ),
        (header::X_AMZ_DATE, &date),
        (header::X_AMZ_DECODED_CONTENT_LENGTH, "1048576"),
        (header::X_AMZ_SDK_CHECKSUM_ALGORITHM, "CRC32"),
        (header::X_AMZ_TRAILER, header::X_AMZ_CHECKSUM_CRC32),
    ];
    let headers: Vec<Header<'_>> = fixed
        .iter()
        .map(|(n, v)| Header {
            name: n,
            value: v.as_bytes(),
        })
        .collect();
    let (path, query) = (
        "/bench-bucket/photos/2026/11/object-000123.bin",
        "x-id=PutObject",
    );
    let parts = RequestParts {
        method: "PUT",
        path,
        query,
        headers: &headers,
    };
    let creds = Credentials::new(ACCESS_KEY, SECRET_KEY);
    let sig = sign_request(
        &parts,
        STREAMING_UNSIGNED_PAYLOAD_TRAILER,
        &creds,
        "us-east-1",
        NOW,
        &mut NoKeyCache,
    )
    .expect("signable");
    let mut out = Vec::new();
    write::request_line(&mut out, "PUT", &format!("{path}?{query}"), Version::Http11)
        .expect("valid");
    for h in &headers {
        write::header(&mut out, h.name, h.value).expect("valid");
    }
    write::header(
        &mut out,
        header::AUTHORIZATION,
        sig.authorization.as_bytes(),
    )
    .expect("valid");
    write::header(&mut out, header::CONTENT_LENGTH, b"1048700").expect("valid");
    write::header(
        &mut out,
        "amz-sdk-invocation-id",
        b"2b8a6a6e-4d1f-4c1e-9a47-5f0c3c9d6e11",
    )
    .expect("valid");
    write::header(&mut out, "amz-sdk-request", b"attempt=1; max=3").expect("valid");
    write::end_head(&mut out);
    out
}

/// Parse a signed head, route it to its `Endpoint` and verify its signature: what a server does
/// before the body. Panics if any step rejects the request (the bench would be meaningless).
pub fn parse_route_verify(
    head: &[u8],
    creds: &MemoryCredentials,
    cache: &mut SigningKeyCache,
    cfg: &AddressingConfig,
) -> usize {
    let mut storage = [Header {
        name: "",
        value: b"",
    }; 32];
    let Ok(Status::Complete(req)) = HeadParser::default().parse_request(head, &mut storage) else {
        panic!("bench request must parse");
    };
    let routed = Endpoint::parse(req.method, req.target, req.headers, cfg).expect("routable");
    let (path, query) = req.target.split_once('?').unwrap_or((req.target, ""));
    let parts = RequestParts {
        method: req.method,
        path,
        query,
        headers: req.headers,
    };
    let verified =
        verify_request(&parts, NOW, Some("us-east-1"), creds, cache).expect("valid signature");
    assert!(verified.is_some() && matches!(routed.endpoint, Endpoint::PutObject { .. }));
    req.len
}

/// A signed request fully checked (head parse + Endpoint + SigV4) vs `httparse` alone on it.
pub fn request_cases() -> Vec<Case> {
    let head = signed_put_head();
    let head2 = head.clone();
    let mut creds = MemoryCredentials::new();
    creds.insert(ACCESS_KEY, SECRET_KEY);
    let mut cache = SigningKeyCache::new(16);
    let cfg = AddressingConfig::path_style();
    vec![Case {
        name: "signed_request/parse+route+sigv4".into(),
        unit: Unit::Ops(1),
        ferry: timed(move || {
            black_box(parse_route_verify(
                black_box(&head),
                &creds,
                &mut cache,
                &cfg,
            ));
        }),
        baseline: timed(move || {
            let mut storage = [httparse::EMPTY_HEADER; 32];
            let mut req = httparse::Request::new(&mut storage);
            black_box(req.parse(black_box(&head2)).expect("valid"));
        }),
    }]
}

/// The cluster's seal of a request the proxy forwards to a node (its client's address and
/// transport, `ferry_core::s3::cluster`): made by the proxy and checked by the node, vs the
/// head parse, route and SigV4 check the node makes of the same request anyway — the seal's
/// share of a request's authentication.
pub fn cluster_seal_cases() -> Vec<Case> {
    use ferry_core::s3::cluster::{ClusterKey, ClusterKeys};
    let keys = ClusterKeys::new(ClusterKey::from_bytes([0x5a; 32]));
    let target = "/bench-bucket/photos/2026/11/object-000123.bin?x-id=PutObject";
    let head = signed_put_head();
    let mut creds = MemoryCredentials::new();
    creds.insert(ACCESS_KEY, SECRET_KEY);
    let mut cache = SigningKeyCache::new(16);
    let cfg = AddressingConfig::path_style();
    vec![Case {
        name: "cluster_seal/seal+check".into(),
        unit: Unit::Ops(1),
        ferry: timed(move || {
            let said: [(&str, &[u8]); 2] = [
                (header::X_FERRY_CLIENT_IP, b"203.0.113.7"),
                (header::X_FERRY_CLIENT_TLS, b"true"),
            ];
            let seal = keys.seal("PUT", target, said, NOW);
            let headers = [
                Header {
                    name: said[0].0,
                    value: said[0].1,
                },
                Header {
                    name: said[1].0,
                    value: said[1].1,
                },
                Header {
                    name: header::X_FERRY_CLUSTER_AUTH,
                    value: seal.as_bytes(),
                },
            ];
            let sealed = ClusterKeys::check(Some(&keys), "PUT", target, &headers, false, NOW);
            assert_eq!(black_box(sealed), Ok(true));
        }),
        baseline: timed(move || {
            black_box(parse_route_verify(
                black_box(&head),
                &creds,
                &mut cache,
                &cfg,
            ));
        }),
    }]
}

/// aws-chunked `STREAMING-UNSIGNED-PAYLOAD-TRAILER` (CRC32 trailer, 64 KiB chunks, as the SDKs
/// send it) decoded to borrowed slices, and decoded with a copy out, vs memcpy of the payload.
pub fn aws_chunked_cases() -> Vec<Case> {
    let n = 1 << 20;
    let body: Arc<[u8]> = ShardedFill::new(6).object(0).generate(n).into();
    let mut enc = AwsChunkedEncoder::unsigned(Some(ChecksumAlgorithm::Crc32));
    let mut wire = Vec::with_capacity(n + 4096);
    for chunk in body.chunks(64 << 10) {
        enc.encode_chunk(chunk, &mut wire);
    }
    enc.finish(&mut wire);
    let wire: Arc<[u8]> = wire.into();
    let verifier = unsigned_trailer_verifier(n as u64);
    let decoder = move || {
        AwsChunkedDecoder::new(
            StreamingMode::UnsignedTrailer,
            n as u64,
            Some(ChecksumAlgorithm::Crc32),
            None,
        )
        .expect("valid mode")
    };
    let mut cases = Vec::new();
    for copy in [false, true] {
        let wire = wire.clone();
        let body = body.clone();
        let mut out = vec![0u8; n];
        let mut out2 = vec![0u8; n];
        cases.push(Case {
            name: format!(
                "aws_chunked_crc32/{}",
                if copy {
                    "decode_copy"
                } else {
                    "decode_borrowed"
                }
            ),
            unit: Unit::Bytes(n as u64),
            ferry: timed(move || {
                let mut dec = decoder();
                let (mut pos, mut at) = (0, 0);
                loop {
                    let d = dec.decode(black_box(&wire[pos..])).expect("valid body");
                    if copy {
                        out[at..at + d.data.len()].copy_from_slice(d.data);
                    } else {
                        black_box(d.data);
                    }
                    at += d.data.len();
                    pos += d.consumed;
                    if d.done {
                        break;
                    }
                }
                assert_eq!(at, n);
            }),
            baseline: timed(move || black_box(&mut out2).copy_from_slice(black_box(&body))),
        });
    }
    // The same body through the one verifier every server path uses: its cost over the bare
    // decoder is what the single place for body checks adds.
    let mut out = vec![0u8; n];
    cases.push(Case {
        name: "aws_chunked_crc32/verifier".into(),
        unit: Unit::Bytes(n as u64),
        ferry: timed(move || {
            let mut v = verifier();
            let mut rest: &[u8] = black_box(&wire);
            while !rest.is_empty() {
                let step = v.feed(rest).expect("valid body");
                black_box(step.data);
                rest = &rest[step.consumed..];
            }
            assert_eq!(v.finish().expect("verified").len, n as u64);
        }),
        baseline: timed(move || black_box(&mut out).copy_from_slice(black_box(&body))),
    });
    cases
}

fn header_views(h: &[(String, Vec<u8>)]) -> Vec<Header<'_>> {
    h.iter()
        .map(|(n, v)| Header { name: n, value: v })
        .collect()
}

/// A verifier factory for an SDK-style unsigned aws-chunked upload of `len` bytes with a CRC32
/// trailer (the request signed and verified once, here).
fn unsigned_trailer_verifier(len: u64) -> impl Fn() -> BodyVerifier + Send + 'static {
    let creds = Credentials::new("AKIDBENCH", "bench/secret");
    let now = 1_700_000_000;
    let len_s = len.to_string();
    let mut req = OutboundRequest::new("PUT", "/b/k", "");
    req.header(header::CONTENT_ENCODING, &b"aws-chunked"[..])
        .header(header::X_AMZ_DECODED_CONTENT_LENGTH, len_s.as_bytes())
        .header(
            header::X_AMZ_TRAILER,
            header::X_AMZ_CHECKSUM_CRC32.as_bytes(),
        );
    req.sign(
        "h",
        STREAMING_UNSIGNED_PAYLOAD_TRAILER,
        &creds,
        "us-east-1",
        now,
        &mut NoKeyCache,
    )
    .expect("signs");
    let headers: Vec<(String, Vec<u8>)> = req
        .headers
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_vec()))
        .collect();
    let hs = header_views(&headers);
    let parts = RequestParts {
        method: "PUT",
        path: "/b/k",
        query: "",
        headers: &hs,
    };
    let store = MemoryCredentials::new().with("AKIDBENCH", "bench/secret");
    let verified = verify_request(&parts, now, Some("us-east-1"), &store, &mut NoKeyCache)
        .expect("verifies")
        .expect("signed");
    drop(hs);
    // Five header views per body of 1 MiB: the verifier's construction as a server pays it.
    move || {
        let hs = header_views(&headers);
        BodyVerifier::new(&hs, &verified, None, Checks::All, BodyLimit::object())
            .expect("a valid request")
    }
}

/// Server-side encryption of 1 MiB laid out as on disk: every chunk sealed in place, then every
/// chunk opened (a PUT's and a GET's work on the same bytes), vs `copy_from_slice` of 1 MiB.
/// The rate counts plaintext bytes once, so each byte is encrypted and decrypted per byte counted.
pub fn sse_cases() -> Vec<Case> {
    const N: usize = 1 << 20;
    let len = N as u64;
    let chunks = sse::chunks(len);
    let plain = ShardedFill::new(11).object(0).generate(N);
    let mut disk = vec![0u8; sse::disk_len(len) as usize];
    for i in 0..chunks {
        let off = sse::chunk_offset(i) as usize;
        let p = sse::chunk_plain_len(len, i);
        let src = i as usize * sse::PLAIN_CHUNK;
        disk[off..off + p].copy_from_slice(&plain[src..src + p]);
    }
    let cipher = ObjectCipher::new(&[0x5a; 32]);
    let bounds: Vec<(u64, usize, usize)> = (0..chunks)
        .map(|i| {
            let off = sse::chunk_offset(i) as usize;
            (i, off, off + sse::chunk_plain_len(len, i) + sse::TAG_LEN)
        })
        .collect();
    let mut dst = vec![0u8; N];
    vec![Case {
        name: "sse/aes256gcm_1MiB".into(),
        unit: Unit::Bytes(len),
        // Opening restores the plaintext in place, so every iteration seals the same bytes.
        ferry: timed(move || {
            for &(i, a, b) in &bounds {
                cipher
                    .seal(i, i == chunks - 1, black_box(&mut disk[a..b]))
                    .expect("seals");
            }
            for &(i, a, b) in &bounds {
                black_box(
                    cipher
                        .open(i, i == chunks - 1, black_box(&mut disk[a..b]))
                        .expect("opens"),
                );
            }
        }),
        baseline: timed(move || black_box(&mut dst).copy_from_slice(black_box(&plain))),
    }]
}

/// Every case, in report order.
pub fn all_cases() -> Vec<Case> {
    let mut v = fill_cases();
    v.extend(fill_table_cases());
    v.extend(fresh_object_cases());
    v.extend(md5_cases());
    v.extend(md5_lanes_cases());
    v.extend(generate_md5_cases());
    v.extend(pool_cases());
    v.extend(chunked_cases());
    v.extend(aws_chunked_cases());
    v.extend(request_cases());
    v.extend(cluster_seal_cases());
    v.extend(sse_cases());
    v
}

/// Rate of `iters` iterations of `unit` in `elapsed`: GB/s for bytes, Mops/s for operations.
pub fn rate(unit: Unit, iters: u64, elapsed: Duration) -> f64 {
    let per_iter = match unit {
        Unit::Bytes(b) => b as f64 / 1e9,
        Unit::Ops(o) => o as f64 / 1e6,
    };
    per_iter * iters as f64 / elapsed.as_secs_f64().max(1e-12)
}

/// Iterations of `routine` that take about `target` (at least one).
pub fn calibrate(routine: &mut Routine, target: Duration) -> u64 {
    let mut iters = 1u64;
    loop {
        let t = routine(iters);
        if t >= target / 4 || iters >= 1 << 40 {
            let scale = target.as_secs_f64() / t.as_secs_f64().max(1e-9);
            return ((iters as f64 * scale) as u64).max(1);
        }
        iters *= 4;
    }
}

/// Ferry's and the baseline's rates, measured in alternating rounds (median of `rounds`).
pub fn measure(case: &mut Case, per_round: Duration, rounds: usize) -> (f64, f64) {
    let (mut f, mut b) = measure_rounds(case, per_round, rounds);
    (median(&mut f), median(&mut b))
}

/// Ferry's and the baseline's rate in each of `rounds` alternating rounds, so that drift (a
/// neighbour's build) hits both alike.
pub fn measure_rounds(case: &mut Case, per_round: Duration, rounds: usize) -> (Vec<f64>, Vec<f64>) {
    let fi = calibrate(&mut case.ferry, per_round);
    let bi = calibrate(&mut case.baseline, per_round);
    let mut f = Vec::with_capacity(rounds);
    let mut b = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        f.push(rate(case.unit, fi, (case.ferry)(fi)));
        b.push(rate(case.unit, bi, (case.baseline)(bi)));
    }
    (f, b)
}

/// One row of `report --runs N`: Ferry's and the baseline's rates over their runs, each as its
/// median ± median absolute deviation, the ratio of the medians, and the two-sided
/// Mann-Whitney U test of Ferry's runs against the baseline's (none with fewer than 2 runs a
/// side, which could never be significant).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunsRow {
    /// Ferry's runs.
    pub ferry: Summary,
    /// The baseline's runs.
    pub baseline: Summary,
    /// Ferry's median over the baseline's.
    pub ratio: f64,
    /// The test, with 2 runs a side or more.
    pub test: Option<MannWhitney>,
}

impl RunsRow {
    /// The row of `ferry`'s rates against `baseline`'s.
    pub fn new(ferry: &[f64], baseline: &[f64]) -> Self {
        let (f, b) = (summarize(ferry), summarize(baseline));
        Self {
            ferry: f,
            baseline: b,
            ratio: f.median / b.median,
            test: (ferry.len() >= 2 && baseline.len() >= 2).then(|| mann_whitney(ferry, baseline)),
        }
    }

    /// Whether the difference is significant at 5% (never without a test).
    pub fn significant(&self) -> bool {
        self.test.is_some_and(|t| t.significant())
    }

    /// The line `report` prints: name, both sides, the ratio, `~` when not significant, p.
    pub fn line(&self, name: &str, unit: &str) -> String {
        let side = |s: &Summary| format!("{:.2} ± {:.2}", s.median, s.mad);
        let mark = if self.significant() { ' ' } else { '~' };
        let p = self
            .test
            .map_or_else(|| "-".to_owned(), |t| format!("{:.3}", t.p));
        format!(
            "{name:<34} {:>17} {:>17} {:>7.2}x {mark} {p:>6}  {unit}",
            side(&self.ferry),
            side(&self.baseline),
            self.ratio
        )
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_runs_and_reports_a_positive_rate() {
        for mut case in all_cases() {
            let (f, b) = measure(&mut case, Duration::from_millis(2), 1);
            assert!(f > 0.0 && b > 0.0, "{}: {f} {b}", case.name);
        }
    }

    #[test]
    fn runs_rows_give_medians_spreads_ratio_and_significance() {
        // 5 runs a side, fully separated: Ferry twice the baseline, p = 2/252 (exact).
        let row = RunsRow::new(
            &[20.0, 21.0, 19.0, 20.5, 19.5],
            &[10.0, 10.5, 9.5, 10.25, 9.75],
        );
        assert_eq!((row.ferry.median, row.ferry.mad), (20.0, 0.5));
        assert_eq!((row.baseline.median, row.baseline.mad), (10.0, 0.25));
        assert_eq!(row.ratio, 2.0);
        let t = row.test.unwrap();
        assert!(t.exact && (t.p - 2.0 / 252.0).abs() < 1e-12, "{t:?}");
        assert!(row.significant());
        assert_eq!(
            row.line("md5/256KiB", "GB/s"),
            format!(
                "{:<34} {:>17} {:>17} {:>7}x {} {:>6}  GB/s",
                "md5/256KiB", "20.00 ± 0.50", "10.00 ± 0.25", "2.00", ' ', "0.008"
            )
        );

        // 10 against 10, fully separated: p ≈ 1.1e-5, shown as 0.000.
        let f: Vec<f64> = (0..10).map(|i| 30.0 + f64::from(i)).collect();
        let b: Vec<f64> = (0..10).map(|i| 10.0 + f64::from(i)).collect();
        let row = RunsRow::new(&f, &b);
        let p = row.test.unwrap().p;
        assert!(p > 1e-5 && p < 2e-5, "{p}");
        assert!(row.line("x", "GB/s").contains("  0.000  GB/s"));

        // Overlapping sides: a ratio, but `~`.
        let row = RunsRow::new(
            &[10.0, 12.0, 11.0, 9.0, 13.0],
            &[11.5, 10.5, 12.5, 9.5, 11.0],
        );
        assert!(!row.significant() && row.test.unwrap().p > 0.5, "{row:?}");
        assert!(row.line("x", "Mops/s").contains(" ~ "));

        // One run a side: no test, `~` and `-`.
        let row = RunsRow::new(&[3.0], &[1.5]);
        assert_eq!((row.ratio, row.test), (2.0, None));
        assert!(!row.significant());
        assert!(row.line("x", "GB/s").ends_with("2.00x ~      -  GB/s"));
    }

    #[test]
    fn rate_units() {
        assert_eq!(
            rate(Unit::Bytes(1_000_000_000), 2, Duration::from_secs(1)),
            2.0
        );
        assert_eq!(rate(Unit::Ops(3), 1_000_000, Duration::from_secs(3)), 1.0);
    }
}
