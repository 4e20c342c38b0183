//! Server-side encryption at rest: the on-disk format and its key handling, without I/O.
//!
//! # Format
//! An object's plaintext is cut into chunks of [`PLAIN_CHUNK`] bytes (the last one shorter,
//! possibly empty); each is sealed with AES-256-GCM under the object's own data key and stored
//! as ciphertext followed by its [`TAG_LEN`]-byte tag, so every chunk but the last fills exactly
//! [`DISK_CHUNK`] bytes on disk and chunk `i` starts at `i * DISK_CHUNK` ([`chunk_offset`]). A
//! ranged GET reads and opens only the chunks the range touches ([`chunk_span`]).
//!
//! The nonce of chunk `i` is `i` (64-bit big-endian) followed by `[last, 0, 0, 0]`, `last` being
//! 1 on the object's final chunk only. Each chunk is thus bound to its position (a chunk moved
//! elsewhere fails), and the end of the object is authenticated: a file cut at a chunk boundary
//! makes the new final chunk fail (it was sealed as non-final), and an empty object still has one
//! sealed chunk of 0 bytes, so an emptied file is detected too. Nonces are unique per key because
//! every object (every version, every write) gets a fresh random data key ([`random_key`]);
//! a data key must never seal two different plaintexts at the same index.
//!
//! # Keys
//! - SSE-S3 / SSE-KMS: the random data key is stored wrapped under a master key
//!   ([`wrap_key`] / [`unwrap_key`]; the key id is the additional authenticated data).
//! - SSE-C: the customer sends the key with every request; the data key is derived from it and a
//!   random per-object seed ([`customer_object_key`]), and only a salted HMAC of the customer's
//!   key is stored ([`customer_key_check`], compared with [`check_matches`]) so that a wrong key
//!   is refused as AWS does, with a clear error rather than a tag failure.
//! - The ETag of an SSE-C/SSE-KMS object is not the MD5 of its plaintext (AWS says so too):
//!   [`opaque_etag_digest`] keys it with the data key so it reveals nothing without the key.
//!
//! # Why ring
//! `ring` is already in the tree (rustls' crypto provider), so this adds no crate; its AES-GCM
//! is BoringSSL's assembly (AES-NI + PCLMULQDQ, and VAES/VPCLMULQDQ on AVX-512 or AVX2 CPUs),
//! far faster than a portable implementation, and it provides HMAC-SHA256 and the system RNG.

use alloc::vec::Vec;
use core::fmt;
use core::ops::RangeInclusive;

use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};
use subtle::ConstantTimeEq as _;

/// Bytes of one chunk on disk (ciphertext and tag); every chunk but the last is this long.
pub const DISK_CHUNK: usize = 65536;
/// Bytes of an AES-GCM tag.
pub const TAG_LEN: usize = 16;
/// Plaintext bytes per chunk (every chunk but the last).
pub const PLAIN_CHUNK: usize = DISK_CHUNK - TAG_LEN;
/// Bytes of a wrapped data key: nonce, ciphertext of the 32-byte key, tag.
pub const WRAPPED_KEY_LEN: usize = NONCE_LEN + 32 + TAG_LEN;

const PLAIN: u64 = PLAIN_CHUNK as u64;

/// Chunks of an object of `plain_len` bytes: at least one (an empty object is one chunk of 0
/// bytes + tag, so an emptied file is detected).
pub fn chunks(plain_len: u64) -> u64 {
    plain_len.div_ceil(PLAIN).max(1)
}

/// Bytes on disk for `plain_len` bytes of plaintext: `plain_len + TAG_LEN * chunks(plain_len)`
/// (saturating at `u64::MAX`, far above any object size Ferry accepts).
pub fn disk_len(plain_len: u64) -> u64 {
    plain_len.saturating_add(TAG_LEN as u64 * chunks(plain_len))
}

/// Plaintext bytes in chunk `index` of an object of `plain_len` bytes (0 past the last chunk).
pub fn chunk_plain_len(plain_len: u64, index: u64) -> usize {
    let start = index.saturating_mul(PLAIN);
    // At most PLAIN_CHUNK, so the cast cannot truncate.
    plain_len.saturating_sub(start).min(PLAIN) as usize
}

/// Disk offset of chunk `index`: `index * DISK_CHUNK` (saturating at `u64::MAX`).
pub fn chunk_offset(index: u64) -> u64 {
    index.saturating_mul(DISK_CHUNK as u64)
}

/// The chunks a plaintext range `[start, end)` touches: `first..=last` (for ranged GETs).
///
/// `end` must be greater than `start`; an empty range is treated as the one byte at `start`.
pub fn chunk_span(start: u64, end: u64) -> RangeInclusive<u64> {
    let last_byte = end.saturating_sub(1).max(start);
    start / PLAIN..=last_byte / PLAIN
}

/// Why a chunk or a key could not be sealed or opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SseError {
    /// Authentication failed: wrong key, wrong position, truncated or altered data.
    Tampered,
    /// A buffer of a length the format does not allow.
    BadLength,
    /// The system random number generator failed.
    Rng,
}

impl fmt::Display for SseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SseError::Tampered => "encrypted data failed authentication",
            SseError::BadLength => "encrypted data of an invalid length",
            SseError::Rng => "the system random number generator failed",
        })
    }
}

impl core::error::Error for SseError {}

/// An object's data key (AES-256-GCM), sealing and opening its chunks.
pub struct ObjectCipher {
    key: LessSafeKey,
}

impl fmt::Debug for ObjectCipher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the key bytes.
        f.debug_struct("ObjectCipher").finish_non_exhaustive()
    }
}

impl ObjectCipher {
    /// The cipher of the data key `key`.
    pub fn new(key: &[u8; 32]) -> Self {
        Self { key: aes_key(key) }
    }

    /// Encrypt chunk `index` in place: `chunk[..chunk.len() - TAG_LEN]` is plaintext, the tag
    /// goes in the last `TAG_LEN` bytes. `last`: this is the object's final chunk.
    ///
    /// [`SseError::BadLength`] if the chunk is shorter than a tag, longer than [`DISK_CHUNK`],
    /// or not exactly `DISK_CHUNK` while not `last` (the layout [`chunk_offset`] relies on).
    pub fn seal(&self, index: u64, last: bool, chunk: &mut [u8]) -> Result<(), SseError> {
        let n = chunk.len();
        if !(TAG_LEN..=DISK_CHUNK).contains(&n) || (!last && n != DISK_CHUNK) {
            return Err(SseError::BadLength);
        }
        let (plain, tag) = chunk.split_at_mut(n - TAG_LEN);
        let t = self
            .key
            .seal_in_place_separate_tag(chunk_nonce(index, last), Aad::empty(), plain)
            .map_err(|_| SseError::BadLength)?;
        tag.copy_from_slice(t.as_ref());
        Ok(())
    }

    /// Decrypt chunk `index` in place (ciphertext then tag): `Ok(plaintext length)`, the
    /// plaintext in `chunk[..len]`, or [`SseError::Tampered`] with the whole buffer zeroed, so
    /// unauthenticated bytes are never left behind as plaintext.
    pub fn open(&self, index: u64, last: bool, chunk: &mut [u8]) -> Result<usize, SseError> {
        if !(TAG_LEN..=DISK_CHUNK).contains(&chunk.len()) {
            chunk.fill(0);
            return Err(SseError::BadLength);
        }
        // A length that is wrong for the position is caught by the tag (the nonce differs, or
        // GCM's length block does), so every mismatch reads as Tampered.
        match self
            .key
            .open_in_place(chunk_nonce(index, last), Aad::empty(), chunk)
        {
            Ok(plain) => Ok(plain.len()),
            Err(_) => {
                // ring leaves the buffer unspecified on failure: it may hold decrypted bytes.
                chunk.fill(0);
                Err(SseError::Tampered)
            }
        }
    }
}

fn aes_key(key: &[u8; 32]) -> LessSafeKey {
    // A 32-byte key is always valid for AES-256-GCM.
    LessSafeKey::new(UnboundKey::new(&AES_256_GCM, key).expect("32-byte AES-256 key"))
}

fn chunk_nonce(index: u64, last: bool) -> Nonce {
    let mut n = [0u8; NONCE_LEN];
    n[..8].copy_from_slice(&index.to_be_bytes());
    n[8] = u8::from(last);
    Nonce::assume_unique_for_key(n)
}

/// 32 random bytes (a data key, a seed, a salt) from the system RNG.
pub fn random_key() -> Result<[u8; 32], SseError> {
    let mut k = [0u8; 32];
    SystemRandom::new()
        .fill(&mut k)
        .map_err(|_| SseError::Rng)?;
    Ok(k)
}

fn hmac_sha256(key: &[u8; 32], label: &[u8], data: &[u8]) -> [u8; 32] {
    let mut ctx = hmac::Context::with_key(&hmac::Key::new(hmac::HMAC_SHA256, key));
    ctx.update(label);
    ctx.update(data);
    let mut out = [0u8; 32];
    out.copy_from_slice(ctx.sign().as_ref());
    out
}

/// SSE-C: the object's data key derived from the customer's key and the object's random seed:
/// `HMAC-SHA256(customer_key, b"ferry sse-c object key\0" ++ seed)`.
pub fn customer_object_key(customer_key: &[u8; 32], seed: &[u8; 32]) -> [u8; 32] {
    hmac_sha256(customer_key, b"ferry sse-c object key\0", seed)
}

/// A multipart object's part key, derived from the object's (upload's) data key and the part's
/// own random seed: `HMAC-SHA256(object_key, b"ferry part key\0" ++ seed)`. Every upload of a
/// part gets a fresh seed, so a part uploaded again never reuses the nonces of the first under
/// the same key.
pub fn part_key(object_key: &[u8; 32], seed: &[u8; 32]) -> [u8; 32] {
    hmac_sha256(object_key, b"ferry part key\0", seed)
}

/// SSE-C: the salted check value stored instead of the key:
/// `HMAC-SHA256(customer_key, b"ferry sse-c key check\0" ++ salt)`.
pub fn customer_key_check(customer_key: &[u8; 32], salt: &[u8; 32]) -> [u8; 32] {
    hmac_sha256(customer_key, b"ferry sse-c key check\0", salt)
}

/// Constant-time equality of two check values.
///
/// Through `subtle`, as the SigV2/SigV4 secret comparisons in this crate: `ring::constant_time`
/// is deprecated in ring 0.17, and `subtle`'s optimisation barrier is maintained where a hand
/// loop with `black_box` is only a best effort (its docs promise nothing).
pub fn check_matches(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a[..].ct_eq(&b[..]).into()
}

/// SSE-S3 / SSE-KMS: a data key wrapped under a master key: AES-256-GCM with a random 12-byte
/// nonce and `aad` (e.g. the key id), output nonce ++ ciphertext ++ tag ([`WRAPPED_KEY_LEN`]).
pub fn wrap_key(master: &[u8; 32], aad: &[u8], data_key: &[u8; 32]) -> Result<Vec<u8>, SseError> {
    let mut nonce = [0u8; NONCE_LEN];
    SystemRandom::new()
        .fill(&mut nonce)
        .map_err(|_| SseError::Rng)?;
    let mut out = Vec::with_capacity(WRAPPED_KEY_LEN);
    out.extend_from_slice(&nonce);
    out.extend_from_slice(data_key);
    let tag = aes_key(master)
        .seal_in_place_separate_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(aad),
            &mut out[NONCE_LEN..],
        )
        .map_err(|_| SseError::BadLength)?;
    out.extend_from_slice(tag.as_ref());
    Ok(out)
}

/// The data key in `wrapped` (from [`wrap_key`] with the same master key and `aad`).
/// [`SseError::BadLength`] if it is not [`WRAPPED_KEY_LEN`] bytes, [`SseError::Tampered`] if
/// the master key or `aad` differ or the bytes were altered.
pub fn unwrap_key(master: &[u8; 32], aad: &[u8], wrapped: &[u8]) -> Result<[u8; 32], SseError> {
    if wrapped.len() != WRAPPED_KEY_LEN {
        return Err(SseError::BadLength);
    }
    let mut nonce = [0u8; NONCE_LEN];
    nonce.copy_from_slice(&wrapped[..NONCE_LEN]);
    let mut buf = [0u8; 32 + TAG_LEN];
    buf.copy_from_slice(&wrapped[NONCE_LEN..]);
    let opened = aes_key(master).open_in_place(
        Nonce::assume_unique_for_key(nonce),
        Aad::from(aad),
        &mut buf,
    );
    let mut key = [0u8; 32];
    match opened {
        Ok(plain) => key.copy_from_slice(plain),
        Err(_) => {
            buf.fill(0);
            return Err(SseError::Tampered);
        }
    }
    buf.fill(0);
    Ok(key)
}

/// The ETag digest of an SSE-C or SSE-KMS object (AWS: not the MD5 of the data): the first 16
/// bytes of `HMAC-SHA256(data_key, b"ferry etag\0" ++ md5_of_plaintext)`, so it reveals nothing
/// about the plaintext to someone without the key.
pub fn opaque_etag_digest(data_key: &[u8; 32], plaintext_md5: &[u8; 16]) -> [u8; 16] {
    let mac = hmac_sha256(data_key, b"ferry etag\0", plaintext_md5);
    let mut out = [0u8; 16];
    out.copy_from_slice(&mac[..16]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use proptest::prelude::*;

    const KEY: [u8; 32] = [7; 32];

    /// `plain` sealed as the disk file: each chunk at its offset, sealed in place.
    fn seal_object(c: &ObjectCipher, plain: &[u8]) -> Vec<u8> {
        let len = plain.len() as u64;
        let n = chunks(len);
        let mut disk = vec![0u8; disk_len(len) as usize];
        for i in 0..n {
            let p = chunk_plain_len(len, i);
            let off = chunk_offset(i) as usize;
            let src = i as usize * PLAIN_CHUNK;
            disk[off..off + p].copy_from_slice(&plain[src..src + p]);
            c.seal(i, i == n - 1, &mut disk[off..off + p + TAG_LEN])
                .expect("seals");
        }
        disk
    }

    /// Chunk `i` of the disk file `disk`, as a reader would slice it.
    fn disk_chunk(disk: &mut [u8], i: u64) -> &mut [u8] {
        let off = chunk_offset(i) as usize;
        let end = (off + DISK_CHUNK).min(disk.len());
        &mut disk[off..end]
    }

    fn open_object(c: &ObjectCipher, len: u64, disk: &mut [u8]) -> Result<Vec<u8>, SseError> {
        let n = chunks(len);
        let mut out = Vec::new();
        for i in 0..n {
            let ch = disk_chunk(disk, i);
            let p = c.open(i, i == n - 1, ch)?;
            assert_eq!(p, chunk_plain_len(len, i));
            out.extend_from_slice(&ch[..p]);
        }
        Ok(out)
    }

    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 31 % 251) as u8).collect()
    }

    #[test]
    fn round_trips_at_chunk_boundaries() {
        let c = ObjectCipher::new(&KEY);
        for len in [0, 1, 65519, 65520, 65521, 2 * 65520, (1 << 20) + 3] {
            let plain = pattern(len);
            let mut disk = seal_object(&c, &plain);
            assert_eq!(disk.len() as u64, disk_len(len as u64), "{len}");
            if len > 0 {
                assert_ne!(
                    &disk[..len.min(PLAIN_CHUNK)],
                    &plain[..len.min(PLAIN_CHUNK)]
                );
            }
            let got = open_object(&c, len as u64, &mut disk).expect("opens");
            assert_eq!(got, plain, "{len}");
        }
    }

    #[test]
    fn layout_examples() {
        assert_eq!(chunks(0), 1);
        assert_eq!(disk_len(0), 16);
        assert_eq!(chunks(65520), 1);
        assert_eq!(disk_len(65520), 65536);
        assert_eq!(chunks(65521), 2);
        assert_eq!(disk_len(65521), 65536 + 17);
        assert_eq!(chunk_plain_len(65521, 0), 65520);
        assert_eq!(chunk_plain_len(65521, 1), 1);
        assert_eq!(chunk_plain_len(65521, 2), 0);
        assert_eq!(chunk_plain_len(0, 0), 0);
        assert_eq!(chunk_span(0, 1), 0..=0);
        assert_eq!(chunk_span(65519, 65521), 0..=1);
        assert_eq!(chunk_span(65520, 131040), 1..=1);
        assert_eq!(chunk_offset(3), 3 * 65536);
        // Huge values saturate instead of overflowing.
        assert_eq!(disk_len(u64::MAX), u64::MAX);
        assert_eq!(chunk_offset(u64::MAX), u64::MAX);
        let top = (u64::MAX - 1) / PLAIN;
        assert_eq!(chunk_span(u64::MAX - 1, u64::MAX), top..=top);
        assert_eq!(chunk_span(5, 5), 0..=0);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn layout_matches_brute_force(len in 0u64..2_000_000, a in 0u64..2_000_000, b in 1u64..100_000) {
            // Chunks by walking the plaintext PLAIN_CHUNK bytes at a time.
            let mut walked = vec![];
            let mut left = len;
            loop {
                let p = left.min(PLAIN);
                walked.push(p);
                left -= p;
                if left == 0 { break; }
            }
            prop_assert_eq!(chunks(len), walked.len() as u64);
            let mut off = 0u64;
            for (i, &p) in walked.iter().enumerate() {
                prop_assert_eq!(chunk_plain_len(len, i as u64) as u64, p);
                prop_assert_eq!(chunk_offset(i as u64), off);
                off += p + TAG_LEN as u64;
            }
            prop_assert_eq!(disk_len(len), off);
            prop_assert_eq!(chunk_plain_len(len, walked.len() as u64), 0);
            // The chunks holding the first and last byte of [a, a + b).
            let (start, end) = (a, a + b);
            let find = |byte: u64| {
                let mut i = 0u64;
                while (i + 1) * PLAIN <= byte { i += 1; }
                i
            };
            prop_assert_eq!(chunk_span(start, end), find(start)..=find(end - 1));
        }
    }

    #[test]
    fn any_flipped_byte_is_tampered() {
        let c = ObjectCipher::new(&KEY);
        // Two chunks: a full one and a short final one; flip bytes in both, tag included.
        let len = PLAIN_CHUNK as u64 + 100;
        let plain = pattern(len as usize);
        let clean = seal_object(&c, &plain);
        let positions: Vec<usize> = (0..clean.len())
            .step_by(997)
            .chain([
                PLAIN_CHUNK - 1,
                PLAIN_CHUNK,
                DISK_CHUNK - 1,
                DISK_CHUNK,
                clean.len() - TAG_LEN - 1,
                clean.len() - 1,
            ])
            .collect();
        for pos in positions {
            let mut disk = clean.clone();
            disk[pos] ^= 0x01;
            let i = pos as u64 / DISK_CHUNK as u64;
            let ch = disk_chunk(&mut disk, i);
            assert_eq!(c.open(i, i == 1, ch), Err(SseError::Tampered), "byte {pos}");
            assert!(
                ch.iter().all(|&b| b == 0),
                "buffer zeroed after failure at {pos}"
            );
        }
    }

    #[test]
    fn every_flipped_byte_of_a_small_object_is_tampered() {
        let c = ObjectCipher::new(&KEY);
        let clean = seal_object(&c, &pattern(100));
        for pos in 0..clean.len() {
            for bit in [0x01, 0x80] {
                let mut disk = clean.clone();
                disk[pos] ^= bit;
                assert_eq!(
                    c.open(0, true, &mut disk),
                    Err(SseError::Tampered),
                    "byte {pos}"
                );
            }
        }
    }

    #[test]
    fn wrong_index_truncation_and_wrong_key_are_tampered() {
        let c = ObjectCipher::new(&KEY);
        let len = 3 * PLAIN_CHUNK as u64; // three full chunks, the last one final
        let disk = seal_object(&c, &pattern(len as usize));
        let attempt = |cipher: &ObjectCipher, sealed_at: u64, index: u64, last: bool| {
            let mut d = disk.clone();
            cipher.open(index, last, disk_chunk(&mut d, sealed_at))
        };
        assert!(attempt(&c, 1, 1, false).is_ok());
        assert!(attempt(&c, 2, 2, true).is_ok());
        // Chunk 1 read as chunk 0 or chunk 2 (moved or swapped).
        assert_eq!(attempt(&c, 1, 0, false), Err(SseError::Tampered));
        assert_eq!(attempt(&c, 1, 2, false), Err(SseError::Tampered));
        // Truncation: a non-final chunk taken for the final one.
        assert_eq!(attempt(&c, 1, 1, true), Err(SseError::Tampered));
        // Extension: the final chunk taken for a non-final one.
        assert_eq!(attempt(&c, 2, 2, false), Err(SseError::Tampered));
        // Another object's key.
        let other = ObjectCipher::new(&[8; 32]);
        assert_eq!(attempt(&other, 1, 1, false), Err(SseError::Tampered));
        // A short final chunk opened as non-final is tampered too.
        let mut short = seal_object(&c, &pattern(10));
        assert_eq!(c.open(0, false, &mut short), Err(SseError::Tampered));
        // An emptied file: the empty object's one chunk is authenticated.
        let mut empty = seal_object(&c, &[]);
        assert_eq!(c.open(0, true, &mut empty), Ok(0));
        let mut none = [0u8; TAG_LEN];
        assert_eq!(c.open(0, true, &mut none), Err(SseError::Tampered));
    }

    #[test]
    fn bad_lengths() {
        let c = ObjectCipher::new(&KEY);
        assert_eq!(
            c.seal(0, true, &mut [0u8; TAG_LEN - 1]),
            Err(SseError::BadLength)
        );
        assert_eq!(
            c.seal(0, true, &mut vec![0u8; DISK_CHUNK + 1]),
            Err(SseError::BadLength)
        );
        assert_eq!(
            c.seal(0, false, &mut vec![0u8; DISK_CHUNK - 1]),
            Err(SseError::BadLength)
        );
        assert_eq!(
            c.open(0, true, &mut [0u8; TAG_LEN - 1]),
            Err(SseError::BadLength)
        );
        assert_eq!(
            c.open(0, true, &mut vec![0u8; DISK_CHUNK + 1]),
            Err(SseError::BadLength)
        );
    }

    #[test]
    fn debug_hides_the_key() {
        let s = alloc::format!("{:?}", ObjectCipher::new(&[0xab; 32]));
        assert_eq!(s, "ObjectCipher { .. }");
    }

    #[test]
    fn wrap_unwrap() {
        let master = random_key().expect("rng");
        let data = random_key().expect("rng");
        assert_ne!(master, data);
        let w = wrap_key(&master, b"key-1", &data).expect("wraps");
        assert_eq!(w.len(), WRAPPED_KEY_LEN);
        assert_eq!(unwrap_key(&master, b"key-1", &w), Ok(data));
        // A fresh nonce each time.
        assert_ne!(w, wrap_key(&master, b"key-1", &data).expect("wraps"));
        assert_eq!(unwrap_key(&[1; 32], b"key-1", &w), Err(SseError::Tampered));
        assert_eq!(unwrap_key(&master, b"key-2", &w), Err(SseError::Tampered));
        let mut bent = w.clone();
        bent[20] ^= 4;
        assert_eq!(
            unwrap_key(&master, b"key-1", &bent),
            Err(SseError::Tampered)
        );
        assert_eq!(
            unwrap_key(&master, b"key-1", &w[1..]),
            Err(SseError::BadLength)
        );
    }

    #[test]
    fn customer_keys_and_checks() {
        let (k1, k2) = ([1u8; 32], [2u8; 32]);
        let (s1, s2) = ([10u8; 32], [11u8; 32]);
        let c = customer_key_check(&k1, &s1);
        assert_eq!(c, customer_key_check(&k1, &s1));
        assert_ne!(c, customer_key_check(&k1, &s2), "per salt");
        assert_ne!(c, customer_key_check(&k2, &s1), "per key");
        assert!(check_matches(&c, &customer_key_check(&k1, &s1)));
        assert!(!check_matches(&c, &customer_key_check(&k2, &s1)));
        // The object key is neither the customer key nor the check value.
        let ok = customer_object_key(&k1, &s1);
        assert_ne!(ok, k1);
        assert_ne!(ok, c);
        assert_ne!(ok, customer_object_key(&k1, &s2));
        assert_ne!(ok, customer_object_key(&k2, &s1));
    }

    #[test]
    fn opaque_etag_differs_per_key_and_md5() {
        let md5 = [3u8; 16];
        let e = opaque_etag_digest(&[1; 32], &md5);
        assert_eq!(e, opaque_etag_digest(&[1; 32], &md5));
        assert_ne!(e, opaque_etag_digest(&[2; 32], &md5));
        assert_ne!(e, opaque_etag_digest(&[1; 32], &[4; 16]));
        assert_ne!(e, md5);
    }

    #[test]
    fn nonce_is_index_then_last_flag() {
        let c = ObjectCipher::new(&KEY);
        let mut chunk = pattern(40);
        let mut expected = chunk[..24].to_vec();
        c.seal(0x0102_0304_0506_0708, true, &mut chunk)
            .expect("seals");
        let nonce = [1, 2, 3, 4, 5, 6, 7, 8, 1, 0, 0, 0];
        let tag = aes_key(&KEY)
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::empty(),
                &mut expected,
            )
            .expect("seals");
        expected.extend_from_slice(tag.as_ref());
        assert_eq!(chunk, expected);
    }

    #[test]
    fn hmac_is_over_label_then_data() {
        let key = [0x0bu8; 32];
        let whole = hmac::sign(
            &hmac::Key::new(hmac::HMAC_SHA256, &key),
            b"ferry etag\0\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03",
        );
        assert_eq!(&whole.as_ref()[..16], &opaque_etag_digest(&key, &[3; 16]));
    }
}
