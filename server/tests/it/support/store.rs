//! The storage node's store on a temporary directory, and seeded test data for it.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use ferry_core::s3::{S3Error, S3ErrorCode};
use ferry_server::store::{GetOptions, ReadRange, Store, StoreConfig};

/// A store on `dir` with the default part size, without fsync (the crash test covers
/// durability).
pub fn open(dir: &Path) -> Store {
    open_with(dir, StoreConfig::default().min_part_size)
}

/// [`open`] with parts of at least `min_part_size` bytes.
pub fn open_with(dir: &Path, min_part_size: u64) -> Store {
    let cfg = StoreConfig {
        min_part_size,
        fsync: false,
        ..StoreConfig::default()
    };
    Store::open_with(dir, cfg).unwrap()
}

/// Read `range` of `b/k` to the end (the reader must then have nothing left).
pub fn get(s: &Store, b: &str, k: &str, range: ReadRange) -> Vec<u8> {
    let mut r = s
        .get_object(
            b,
            k,
            GetOptions {
                range,
                ..GetOptions::default()
            },
        )
        .unwrap();
    let mut v = Vec::new();
    r.read_to_end(&mut v).unwrap();
    assert_eq!(r.remaining(), 0);
    v
}

/// The S3 error code of a failure.
pub fn code<T: std::fmt::Debug>(r: Result<T, S3Error>) -> S3ErrorCode {
    r.unwrap_err().code
}

/// Every regular file under `dir`, recursively (none if `dir` does not exist).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if !dir.exists() {
        return out;
    }
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path());
            }
        }
    }
    out
}

/// How many object and part files the store on `dir` holds.
pub fn data_files(dir: &Path) -> usize {
    files_under(&dir.join("data"))
        .iter()
        .filter(|p| !is_temp(p))
        .count()
}

fn is_temp(p: &Path) -> bool {
    p.extension().is_some_and(|e| e == "tmp")
}

/// Files being written (or left by an interrupted write) in the store at `dir`: `*.tmp`
/// beside the data files, and anything in `tmp/`.
pub fn temp_files(dir: &Path) -> usize {
    let beside = files_under(&dir.join("data"))
        .iter()
        .filter(|p| is_temp(p))
        .count();
    beside + files_under(&dir.join("tmp")).len()
}

/// splitmix64: a small seeded generator, so failures replay.
#[derive(Debug, Clone)]
pub struct SplitMix(pub u64);

impl SplitMix {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// One of `xs`.
    pub fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

/// `len` deterministic bytes that differ by `seed`.
pub fn random_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut rng = SplitMix(seed);
    (0..len).map(|_| rng.next() as u8).collect()
}
