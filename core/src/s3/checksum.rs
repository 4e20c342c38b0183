//! Streaming checksums S3 understands: CRC32, CRC32C, CRC64NVME, SHA-1 and SHA-256.
//!
//! Used for the `x-amz-checksum-*` trailers of aws-chunked uploads and for the
//! `x-amz-checksum-*` headers of plain PUTs. Values travel base64-encoded (standard alphabet,
//! padded) of the big-endian digest bytes.
//!
//! With `std` the three CRCs come from `crc-fast` (AWS Labs' SIMD CRC library, the one the AWS
//! SDKs use): it folds with PCLMULQDQ/VPCLMULQDQ (x86) or PMULL (aarch64), detected at run time,
//! several times faster than table-driven code and faster than `crc32fast` for CRC32, which
//! matters because every SDK PutObject carries a CRC32 trailer we verify inline. Its `no_std`
//! build does not compile on x86_64 (1.10), so without `std` the `crc` crate's slice-by-16
//! tables are used instead.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use core::fmt;
use sha1::Digest as _;

use super::{S3Error, S3ErrorCode, S3Result};
use crate::http::Header;

/// A checksum algorithm S3 accepts in `x-amz-checksum-*` headers and trailers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChecksumAlgorithm {
    /// CRC-32 (ISO-HDLC, the zlib/Ethernet one).
    Crc32,
    /// CRC-32C (Castagnoli, iSCSI).
    Crc32c,
    /// CRC-64/NVME.
    Crc64Nvme,
    /// SHA-1.
    Sha1,
    /// SHA-256.
    Sha256,
}

/// The longest digest any algorithm produces (SHA-256).
pub const MAX_CHECKSUM_LEN: usize = 32;
/// The longest base64 form of a digest (`4 * ceil(32 / 3)`).
pub const MAX_CHECKSUM_BASE64_LEN: usize = 44;

impl ChecksumAlgorithm {
    /// Every algorithm, in S3's documentation order.
    pub const ALL: [Self; 5] = [
        Self::Crc32,
        Self::Crc32c,
        Self::Crc64Nvme,
        Self::Sha1,
        Self::Sha256,
    ];

    /// The value used in `x-amz-checksum-algorithm` / `x-amz-sdk-checksum-algorithm`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Crc32 => "CRC32",
            Self::Crc32c => "CRC32C",
            Self::Crc64Nvme => "CRC64NVME",
            Self::Sha1 => "SHA1",
            Self::Sha256 => "SHA256",
        }
    }

    /// The (lower-case) header or trailer name that carries this checksum.
    pub const fn header_name(self) -> &'static str {
        match self {
            Self::Crc32 => "x-amz-checksum-crc32",
            Self::Crc32c => "x-amz-checksum-crc32c",
            Self::Crc64Nvme => "x-amz-checksum-crc64nvme",
            Self::Sha1 => "x-amz-checksum-sha1",
            Self::Sha256 => "x-amz-checksum-sha256",
        }
    }

    /// Digest length in bytes.
    pub const fn digest_len(self) -> usize {
        match self {
            Self::Crc32 | Self::Crc32c => 4,
            Self::Crc64Nvme => 8,
            Self::Sha1 => 20,
            Self::Sha256 => 32,
        }
    }

    /// Length of the padded base64 form of a digest.
    pub const fn base64_len(self) -> usize {
        self.digest_len().div_ceil(3) * 4
    }

    /// Parse an `x-amz-checksum-algorithm` / `x-amz-sdk-checksum-algorithm` value
    /// (ASCII case-insensitive, surrounding whitespace ignored).
    pub fn parse(value: &str) -> Option<Self> {
        let value = value.trim();
        Self::ALL
            .into_iter()
            .find(|a| a.as_str().eq_ignore_ascii_case(value))
    }

    /// The algorithm whose header name is `name` (ASCII case-insensitive), e.g. from `x-amz-trailer`.
    pub fn from_header_name(name: &str) -> Option<Self> {
        let name = name.trim();
        Self::ALL
            .into_iter()
            .find(|a| a.header_name().eq_ignore_ascii_case(name))
    }

    /// A fresh streaming hasher for this algorithm.
    pub fn hasher(self) -> Checksummer {
        Checksummer::new(self)
    }

    /// The checksum of `data` in one go.
    pub fn checksum(self, data: &[u8]) -> Checksum {
        let mut h = self.hasher();
        h.update(data);
        h.finalize()
    }
}

impl fmt::Display for ChecksumAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(not(feature = "std"))]
mod table {
    use crc::{CRC_32_ISCSI, CRC_32_ISO_HDLC, CRC_64_NVME, Crc, Table};
    pub(super) static CRC32: Crc<u32, Table<16>> = Crc::<u32, Table<16>>::new(&CRC_32_ISO_HDLC);
    pub(super) static CRC32C: Crc<u32, Table<16>> = Crc::<u32, Table<16>>::new(&CRC_32_ISCSI);
    pub(super) static CRC64NVME: Crc<u64, Table<16>> = Crc::<u64, Table<16>>::new(&CRC_64_NVME);
}

#[derive(Clone)]
enum State {
    #[cfg(feature = "std")]
    Crc(crc_fast::Digest),
    #[cfg(not(feature = "std"))]
    Crc32(crc::Digest<'static, u32, crc::Table<16>>),
    #[cfg(not(feature = "std"))]
    Crc64(crc::Digest<'static, u64, crc::Table<16>>),
    Sha1(sha1::Sha1),
    Sha256(sha2::Sha256),
}

/// A streaming checksum: feed bytes with [`update`](Self::update), then [`finalize`](Self::finalize).
#[derive(Clone)]
pub struct Checksummer {
    algorithm: ChecksumAlgorithm,
    state: State,
}

impl fmt::Debug for Checksummer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Checksummer")
            .field("algorithm", &self.algorithm)
            .finish_non_exhaustive()
    }
}

impl Checksummer {
    /// A fresh hasher for `algorithm`.
    pub fn new(algorithm: ChecksumAlgorithm) -> Self {
        #[cfg(feature = "std")]
        use crc_fast::{CrcAlgorithm as C, Digest};
        let state = match algorithm {
            #[cfg(feature = "std")]
            ChecksumAlgorithm::Crc32 => State::Crc(Digest::new(C::Crc32IsoHdlc)),
            #[cfg(feature = "std")]
            ChecksumAlgorithm::Crc32c => State::Crc(Digest::new(C::Crc32Iscsi)),
            #[cfg(feature = "std")]
            ChecksumAlgorithm::Crc64Nvme => State::Crc(Digest::new(C::Crc64Nvme)),
            #[cfg(not(feature = "std"))]
            ChecksumAlgorithm::Crc32 => State::Crc32(table::CRC32.digest()),
            #[cfg(not(feature = "std"))]
            ChecksumAlgorithm::Crc32c => State::Crc32(table::CRC32C.digest()),
            #[cfg(not(feature = "std"))]
            ChecksumAlgorithm::Crc64Nvme => State::Crc64(table::CRC64NVME.digest()),
            ChecksumAlgorithm::Sha1 => State::Sha1(sha1::Sha1::new()),
            ChecksumAlgorithm::Sha256 => State::Sha256(sha2::Sha256::new()),
        };
        Self { algorithm, state }
    }

    /// The algorithm this hasher computes.
    pub fn algorithm(&self) -> ChecksumAlgorithm {
        self.algorithm
    }

    /// Feed more bytes.
    #[inline]
    pub fn update(&mut self, data: &[u8]) {
        match &mut self.state {
            #[cfg(feature = "std")]
            State::Crc(d) => d.update(data),
            #[cfg(not(feature = "std"))]
            State::Crc32(d) => d.update(data),
            #[cfg(not(feature = "std"))]
            State::Crc64(d) => d.update(data),
            State::Sha1(d) => d.update(data),
            State::Sha256(d) => d.update(data),
        }
    }

    /// The checksum of everything fed so far.
    pub fn finalize(self) -> Checksum {
        let mut bytes = [0u8; MAX_CHECKSUM_LEN];
        let len = self.algorithm.digest_len();
        match self.state {
            #[cfg(feature = "std")]
            State::Crc(d) => {
                // CRC32 values sit in the low 4 bytes of crc-fast's u64.
                let v = d.finalize().to_be_bytes();
                bytes[..len].copy_from_slice(&v[8 - len..]);
            }
            #[cfg(not(feature = "std"))]
            State::Crc32(d) => bytes[..4].copy_from_slice(&d.finalize().to_be_bytes()),
            #[cfg(not(feature = "std"))]
            State::Crc64(d) => bytes[..8].copy_from_slice(&d.finalize().to_be_bytes()),
            State::Sha1(d) => bytes[..len].copy_from_slice(&d.finalize()),
            State::Sha256(d) => bytes[..len].copy_from_slice(&d.finalize()),
        }
        Checksum {
            algorithm: self.algorithm,
            bytes,
        }
    }
}

impl embedded_io::ErrorType for Checksummer {
    type Error = core::convert::Infallible;
}

/// Hashing sink: write a body through it to checksum it.
impl embedded_io::Write for Checksummer {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        self.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// A finished checksum value.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Checksum {
    algorithm: ChecksumAlgorithm,
    bytes: [u8; MAX_CHECKSUM_LEN],
}

impl Checksum {
    /// The algorithm that produced this value.
    pub fn algorithm(&self) -> ChecksumAlgorithm {
        self.algorithm
    }

    /// The digest bytes (big-endian for the CRCs).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.algorithm.digest_len()]
    }

    /// The base64 form S3 puts in headers and trailers.
    pub fn to_base64(&self) -> Base64Checksum {
        let mut buf = [0u8; MAX_CHECKSUM_BASE64_LEN];
        // Cannot fail: the buffer fits the longest digest.
        let len = BASE64
            .encode_slice(self.as_bytes(), &mut buf)
            .unwrap_or_default();
        Base64Checksum {
            buf,
            len: len as u8,
        }
    }

    /// Parse a base64 header or trailer value for `algorithm`.
    ///
    /// Strict: standard alphabet, padded, exactly the algorithm's digest length.
    pub fn from_base64(algorithm: ChecksumAlgorithm, value: &str) -> Option<Self> {
        let value = value.trim().as_bytes();
        if value.len() != algorithm.base64_len() {
            return None;
        }
        let mut bytes = [0u8; MAX_CHECKSUM_LEN];
        let n = BASE64.decode_slice(value, &mut bytes).ok()?;
        (n == algorithm.digest_len()).then_some(Self { algorithm, bytes })
    }
}

impl fmt::Debug for Checksum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.algorithm, self.to_base64())
    }
}

/// The base64 text of a [`Checksum`], on the stack.
#[derive(Clone, Copy)]
pub struct Base64Checksum {
    buf: [u8; MAX_CHECKSUM_BASE64_LEN],
    len: u8,
}

impl Base64Checksum {
    /// The text.
    pub fn as_str(&self) -> &str {
        let bytes = self.buf.get(..usize::from(self.len)).unwrap_or_default();
        // base64 output is ASCII.
        core::str::from_utf8(bytes).unwrap_or_default()
    }
}

impl fmt::Display for Base64Checksum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Base64Checksum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq<&str> for Base64Checksum {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// The error S3 answers for an unparseable checksum value.
pub fn invalid_checksum_value(algorithm: ChecksumAlgorithm) -> S3Error {
    S3Error::with_message(
        S3ErrorCode::InvalidRequest,
        alloc::format!("Value for {} header is invalid.", algorithm.header_name()),
    )
}

/// The single `x-amz-checksum-<algorithm>` header of a request, parsed, if there is one.
///
/// Two different checksum headers, or a value that is not valid base64 of the right length,
/// are `InvalidRequest` (as S3 answers).
pub fn checksum_header(headers: &[Header<'_>]) -> S3Result<Option<Checksum>> {
    let mut found: Option<Checksum> = None;
    for h in headers {
        let Some(algorithm) = ChecksumAlgorithm::from_header_name(h.name) else {
            continue;
        };
        let value = core::str::from_utf8(h.value).map_err(|_| invalid_checksum_value(algorithm))?;
        let sum = Checksum::from_base64(algorithm, value)
            .ok_or_else(|| invalid_checksum_value(algorithm))?;
        match found {
            Some(prev) if prev.algorithm != algorithm => {
                return Err(S3Error::with_message(
                    S3ErrorCode::InvalidRequest,
                    "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.",
                ));
            }
            Some(prev) if prev != sum => return Err(invalid_checksum_value(algorithm)),
            _ => found = Some(sum),
        }
    }
    Ok(found)
}

/// The algorithm a request asks for in `x-amz-sdk-checksum-algorithm` or `x-amz-checksum-algorithm`.
pub fn requested_algorithm(headers: &[Header<'_>]) -> S3Result<Option<ChecksumAlgorithm>> {
    let mut found = None;
    for name in [
        super::sigv4::header::X_AMZ_SDK_CHECKSUM_ALGORITHM,
        super::sigv4::header::X_AMZ_CHECKSUM_ALGORITHM,
    ] {
        let Some(raw) = crate::http::find_header(headers, name) else {
            continue;
        };
        let algorithm = core::str::from_utf8(raw)
            .ok()
            .and_then(ChecksumAlgorithm::parse)
            .ok_or_else(|| {
                S3Error::with_message(
                    S3ErrorCode::InvalidRequest,
                    "Checksum algorithm provided is unsupported. Please try again with any of the valid types: [CRC32, CRC32C, CRC64NVME, SHA1, SHA256]",
                )
            })?;
        match found {
            Some(prev) if prev != algorithm => {
                return Err(S3Error::with_message(
                    S3ErrorCode::InvalidRequest,
                    "x-amz-sdk-checksum-algorithm and x-amz-checksum-algorithm disagree",
                ));
            }
            _ => found = Some(algorithm),
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;
    use proptest::prelude::*;

    // Check values of the CRC catalogue (reveng.sourceforge.io/crc-catalogue) for "123456789".
    const CHECK_INPUT: &[u8] = b"123456789";

    fn to_hex(b: &[u8]) -> alloc::string::String {
        b.iter().map(|b| alloc::format!("{b:02x}")).collect()
    }

    fn be(v: u64, len: usize) -> Vec<u8> {
        v.to_be_bytes()[8 - len..].to_vec()
    }

    #[test]
    fn crc_catalogue_check_values() {
        let cases = [
            (ChecksumAlgorithm::Crc32, 0xCBF4_3926u64),
            (ChecksumAlgorithm::Crc32c, 0xE306_9283),
            (ChecksumAlgorithm::Crc64Nvme, 0xAE8B_1486_0A79_9888),
        ];
        for (alg, want) in cases {
            let got = alg.checksum(CHECK_INPUT);
            assert_eq!(got.as_bytes(), be(want, alg.digest_len()), "{alg}");
        }
    }

    #[test]
    fn sha_known_answers() {
        // FIPS 180 "abc" vectors.
        let sha1 = ChecksumAlgorithm::Sha1.checksum(b"abc");
        assert_eq!(
            to_hex(sha1.as_bytes()),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        let sha256 = ChecksumAlgorithm::Sha256.checksum(b"abc");
        assert_eq!(
            to_hex(sha256.as_bytes()),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn aws_documented_crc32c_of_the_chunked_example() {
        // sigv4-streaming-trailers example: 66560 bytes of 'a' carry x-amz-checksum-crc32c:sOO8/Q==.
        let data = vec![b'a'; 66_560];
        let sum = ChecksumAlgorithm::Crc32c.checksum(&data);
        assert_eq!(sum.to_base64(), "sOO8/Q==");
        assert_eq!(
            Checksum::from_base64(ChecksumAlgorithm::Crc32c, "sOO8/Q=="),
            Some(sum)
        );
    }

    #[test]
    fn names_parse_both_ways() {
        for alg in ChecksumAlgorithm::ALL {
            assert_eq!(ChecksumAlgorithm::parse(alg.as_str()), Some(alg));
            assert_eq!(
                ChecksumAlgorithm::parse(&alg.as_str().to_ascii_lowercase()),
                Some(alg)
            );
            assert_eq!(
                ChecksumAlgorithm::from_header_name(&alg.header_name().to_ascii_uppercase()),
                Some(alg)
            );
            assert_eq!(
                alg.checksum(b"").to_base64().as_str().len(),
                alg.base64_len()
            );
        }
        assert_eq!(ChecksumAlgorithm::parse("MD5"), None);
        assert_eq!(
            ChecksumAlgorithm::from_header_name("x-amz-checksum-type"),
            None
        );
    }

    #[test]
    fn base64_parsing_is_strict() {
        let a = ChecksumAlgorithm::Crc32;
        assert!(Checksum::from_base64(a, "DUoRhQ==").is_some());
        assert!(Checksum::from_base64(a, "DUoRhQ=").is_none(), "short");
        assert!(Checksum::from_base64(a, "DUoRhQ").is_none(), "unpadded");
        assert!(Checksum::from_base64(a, "DUoR!Q==").is_none(), "alphabet");
        assert!(
            Checksum::from_base64(ChecksumAlgorithm::Sha1, "DUoRhQ==").is_none(),
            "wrong length for the algorithm"
        );
    }

    #[test]
    fn checksum_header_lookup() {
        let hs = [
            Header {
                name: "Content-Length",
                value: b"11",
            },
            Header {
                name: "X-Amz-Checksum-Crc32",
                value: b"DUoRhQ==",
            },
        ];
        let got = checksum_header(&hs).expect("valid").expect("present");
        // CRC-32 of "hello world" is 0x0d4a1185.
        assert_eq!(got, ChecksumAlgorithm::Crc32.checksum(b"hello world"));
        assert_eq!(got.as_bytes(), [0x0d, 0x4a, 0x11, 0x85]);

        let two = [
            hs[1],
            Header {
                name: "x-amz-checksum-sha1",
                value: b"Kq5sNclPz7QV2+lfQIuc6R7oRu0=",
            },
        ];
        let err = checksum_header(&two).expect_err("two algorithms");
        assert_eq!(err.code, S3ErrorCode::InvalidRequest);
        let bad = [Header {
            name: "x-amz-checksum-crc32",
            value: b"nope",
        }];
        assert_eq!(
            checksum_header(&bad).expect_err("bad value").code,
            S3ErrorCode::InvalidRequest
        );
        assert_eq!(checksum_header(&hs[..1]).expect("valid"), None);
    }

    #[test]
    fn requested_algorithm_headers() {
        let hs = [Header {
            name: "x-amz-sdk-checksum-algorithm",
            value: b"CRC32",
        }];
        assert_eq!(
            requested_algorithm(&hs).expect("valid"),
            Some(ChecksumAlgorithm::Crc32)
        );
        let bad = [Header {
            name: "x-amz-checksum-algorithm",
            value: b"MD5",
        }];
        assert!(requested_algorithm(&bad).is_err());
        assert_eq!(requested_algorithm(&[]).expect("valid"), None);
    }

    proptest! {
        #[test]
        fn streaming_equals_one_shot(data in proptest::collection::vec(any::<u8>(), 0..4096), cut in 0usize..4096) {
            let cut = cut.min(data.len());
            for alg in ChecksumAlgorithm::ALL {
                let mut h = alg.hasher();
                h.update(&data[..cut]);
                h.update(&data[cut..]);
                let streamed = h.finalize();
                prop_assert_eq!(streamed, alg.checksum(&data));
                let text = streamed.to_base64();
                prop_assert_eq!(Checksum::from_base64(alg, text.as_str()), Some(streamed));
            }
        }
    }
}
