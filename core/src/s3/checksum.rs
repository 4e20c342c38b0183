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
use crate::s3::header;

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
            Self::Crc32 => header::X_AMZ_CHECKSUM_CRC32,
            Self::Crc32c => header::X_AMZ_CHECKSUM_CRC32C,
            Self::Crc64Nvme => header::X_AMZ_CHECKSUM_CRC64NVME,
            Self::Sha1 => header::X_AMZ_CHECKSUM_SHA1,
            Self::Sha256 => header::X_AMZ_CHECKSUM_SHA256,
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

impl ChecksumAlgorithm {
    /// Whether this is one of the CRCs (which combine, so a multipart object may have a
    /// full-object checksum of this algorithm).
    pub const fn is_crc(self) -> bool {
        matches!(self, Self::Crc32 | Self::Crc32c | Self::Crc64Nvme)
    }

    /// The name in lower case, as AWS writes it in error messages (`crc32`, `sha256`).
    pub const fn lower_name(self) -> &'static str {
        match self {
            Self::Crc32 => "crc32",
            Self::Crc32c => "crc32c",
            Self::Crc64Nvme => "crc64nvme",
            Self::Sha1 => "sha1",
            Self::Sha256 => "sha256",
        }
    }

    /// The checksum type of a multipart upload that names this algorithm and no type:
    /// `FULL_OBJECT` for CRC64NVME (it has no composite form), `COMPOSITE` for the others.
    pub const fn default_multipart_type(self) -> ChecksumType {
        match self {
            Self::Crc64Nvme => ChecksumType::FullObject,
            _ => ChecksumType::Composite,
        }
    }
}

/// How a multipart object's checksum is computed (`x-amz-checksum-type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChecksumType {
    /// The checksum of the concatenated part checksums, with `-N` (N parts) after it.
    Composite,
    /// The checksum of the whole object's bytes (CRCs only: combined from the parts').
    FullObject,
}

impl ChecksumType {
    /// The header and XML value.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Composite => "COMPOSITE",
            Self::FullObject => "FULL_OBJECT",
        }
    }

    /// Parse an `x-amz-checksum-type` value (ASCII case-insensitive).
    pub fn parse(value: &str) -> Option<Self> {
        let value = value.trim();
        [Self::Composite, Self::FullObject]
            .into_iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(value))
    }
}

impl fmt::Display for ChecksumType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The checksum a CreateMultipartUpload asks for (`x-amz-checksum-algorithm` and
/// `x-amz-checksum-type`), with AWS's rules: a type needs an algorithm, `FULL_OBJECT` only
/// with a CRC, `COMPOSITE` not with CRC64NVME; no type is the algorithm's default.
pub fn multipart_checksum(
    headers: &[Header<'_>],
) -> S3Result<Option<(ChecksumAlgorithm, ChecksumType)>> {
    let algorithm = requested_algorithm(headers)?;
    let kind = match crate::http::find_header(headers, header::X_AMZ_CHECKSUM_TYPE) {
        None => None,
        Some(raw) => Some(
            core::str::from_utf8(raw)
                .ok()
                .and_then(ChecksumType::parse)
                .ok_or_else(|| {
                    S3Error::with_message(
                        S3ErrorCode::InvalidRequest,
                        "Value for x-amz-checksum-type header is invalid.",
                    )
                })?,
        ),
    };
    let Some(algorithm) = algorithm else {
        return match kind {
            None => Ok(None),
            Some(_) => Err(S3Error::with_message(
                S3ErrorCode::InvalidRequest,
                "The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header.",
            )),
        };
    };
    let kind = kind.unwrap_or(algorithm.default_multipart_type());
    let allowed = match kind {
        ChecksumType::FullObject => algorithm.is_crc(),
        ChecksumType::Composite => algorithm != ChecksumAlgorithm::Crc64Nvme,
    };
    if !allowed {
        return Err(S3Error::with_message(
            S3ErrorCode::InvalidRequest,
            alloc::format!(
                "The {} checksum type cannot be used with the {} checksum algorithm.",
                kind,
                algorithm.lower_name()
            ),
        ));
    }
    Ok(Some((algorithm, kind)))
}

/// The composite checksum of a multipart object: the checksum, with the same algorithm, of
/// its parts' raw checksums concatenated in part order (S3 writes it with `-N` after it).
pub fn composite<'c>(
    algorithm: ChecksumAlgorithm,
    parts: impl IntoIterator<Item = &'c Checksum>,
) -> Checksum {
    let mut h = algorithm.hasher();
    for p in parts {
        h.update(p.as_bytes());
    }
    h.finalize()
}

/// The CRC of `A ++ B` from the CRCs of `A` (`first`) and `B` (`second`, of the same
/// algorithm) and the length of `B`: how a full-object checksum is made from the parts'
/// without reading the data again. `None` unless both are the same CRC algorithm.
pub fn crc_combine(first: &Checksum, second: &Checksum, second_len: u64) -> Option<Checksum> {
    let algorithm = first.algorithm;
    if second.algorithm != algorithm || !algorithm.is_crc() {
        return None;
    }
    let (a, b) = (first.crc_value(), second.crc_value());
    let combined = combine_crc_values(algorithm, a, b, second_len);
    let len = algorithm.digest_len();
    let mut bytes = [0u8; MAX_CHECKSUM_LEN];
    bytes[..len].copy_from_slice(&combined.to_be_bytes()[8 - len..]);
    Some(Checksum { algorithm, bytes })
}

/// crc-fast's combination (the one the AWS SDKs use).
#[cfg(feature = "std")]
fn combine_crc_values(algorithm: ChecksumAlgorithm, a: u64, b: u64, b_len: u64) -> u64 {
    use crc_fast::CrcAlgorithm as C;
    let c = match algorithm {
        ChecksumAlgorithm::Crc32 => C::Crc32IsoHdlc,
        ChecksumAlgorithm::Crc32c => C::Crc32Iscsi,
        _ => C::Crc64Nvme,
    };
    crc_fast::checksum_combine(c, a, b, b_len)
}

/// Without `std` there is no crc-fast (and the `crc` crate has no combination): zlib's
/// method, for reflected CRCs whose init equals their xorout (all three here).
#[cfg(not(feature = "std"))]
fn combine_crc_values(algorithm: ChecksumAlgorithm, a: u64, b: u64, b_len: u64) -> u64 {
    let (poly, width) = reflected_poly(algorithm);
    gf2::combine(poly, width, a, b, b_len)
}

/// The reflected polynomial and width of a CRC algorithm.
#[cfg(any(not(feature = "std"), test))]
const fn reflected_poly(algorithm: ChecksumAlgorithm) -> (u64, u32) {
    match algorithm {
        ChecksumAlgorithm::Crc32 => (0xEDB8_8320, 32),
        ChecksumAlgorithm::Crc32c => (0x82F6_3B78, 32),
        _ => (0x9A6C_9329_AC4B_C9B5, 64),
    }
}

/// CRC combination by polynomial arithmetic modulo the CRC's polynomial (zlib's
/// `crc32_combine`, for any width up to 64): `crc(A ++ B) = crc(A) * x^(8 * len(B)) + crc(B)`.
#[cfg(any(not(feature = "std"), test))]
mod gf2 {
    /// `a * b mod p`, in the reflected representation (the top bit is `x^0`).
    fn mult_mod(poly: u64, width: u32, a: u64, mut b: u64) -> u64 {
        let mut m = 1u64 << (width - 1);
        let mut p = 0u64;
        while m != 0 {
            if a & m != 0 {
                p ^= b;
                if a & (m - 1) == 0 {
                    break;
                }
            }
            m >>= 1;
            b = if b & 1 != 0 { (b >> 1) ^ poly } else { b >> 1 };
        }
        p
    }

    /// `x^(8 * len) mod p`, by squaring.
    fn x_pow_8n(poly: u64, width: u32, mut len: u64) -> u64 {
        let one = 1u64 << (width - 1);
        let mut result = one;
        let mut sq = one >> 8; // x^8
        while len != 0 {
            if len & 1 != 0 {
                result = mult_mod(poly, width, sq, result);
            }
            sq = mult_mod(poly, width, sq, sq);
            len >>= 1;
        }
        result
    }

    pub(super) fn combine(poly: u64, width: u32, a: u64, b: u64, b_len: u64) -> u64 {
        mult_mod(poly, width, x_pow_8n(poly, width, b_len), a) ^ b
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

    /// A CRC's value as a number (0 for the SHAs).
    fn crc_value(&self) -> u64 {
        let mut v = [0u8; 8];
        let len = self.algorithm.digest_len();
        if len <= 8 {
            v[8 - len..].copy_from_slice(self.as_bytes());
        }
        u64::from_be_bytes(v)
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

/// The algorithm of the checksum a request's body carries: its `x-amz-checksum-*` header, or
/// the trailer its `x-amz-trailer` names.
pub fn carried_algorithm(headers: &[Header<'_>]) -> S3Result<Option<ChecksumAlgorithm>> {
    if let Some(c) = checksum_header(headers)? {
        return Ok(Some(c.algorithm()));
    }
    Ok(crate::http::find_header(headers, header::X_AMZ_TRAILER)
        .and_then(|v| core::str::from_utf8(v).ok())
        .and_then(ChecksumAlgorithm::from_header_name))
}

/// The algorithm a request asks for in `x-amz-sdk-checksum-algorithm` or `x-amz-checksum-algorithm`.
pub fn requested_algorithm(headers: &[Header<'_>]) -> S3Result<Option<ChecksumAlgorithm>> {
    let mut found = None;
    for name in [
        header::X_AMZ_SDK_CHECKSUM_ALGORITHM,
        header::X_AMZ_CHECKSUM_ALGORITHM,
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

    fn h<'a>(name: &'a str, value: &'a str) -> Header<'a> {
        Header {
            name,
            value: value.as_bytes(),
        }
    }

    #[test]
    fn multipart_checksum_follows_aws_rules() {
        use ChecksumAlgorithm as A;
        use ChecksumType as T;
        let get = |hs: &[Header<'_>]| multipart_checksum(hs).map_err(|e| e.code);
        assert_eq!(get(&[]), Ok(None));
        let alg = |v| h("x-amz-checksum-algorithm", v);
        let kind = |v| h("x-amz-checksum-type", v);
        assert_eq!(get(&[alg("SHA256")]), Ok(Some((A::Sha256, T::Composite))));
        assert_eq!(get(&[alg("crc32")]), Ok(Some((A::Crc32, T::Composite))));
        assert_eq!(
            get(&[alg("CRC64NVME")]),
            Ok(Some((A::Crc64Nvme, T::FullObject)))
        );
        assert_eq!(
            get(&[alg("CRC32C"), kind("FULL_OBJECT")]),
            Ok(Some((A::Crc32c, T::FullObject)))
        );
        assert_eq!(
            get(&[alg("SHA1"), kind("COMPOSITE")]),
            Ok(Some((A::Sha1, T::Composite)))
        );
        let refused = |hs: &[Header<'_>], msg: &str| {
            let e = multipart_checksum(hs).expect_err("refused");
            assert_eq!(e.code, S3ErrorCode::InvalidRequest);
            assert_eq!(e.message, msg);
        };
        refused(
            &[alg("SHA256"), kind("FULL_OBJECT")],
            "The FULL_OBJECT checksum type cannot be used with the sha256 checksum algorithm.",
        );
        refused(
            &[alg("CRC64NVME"), kind("COMPOSITE")],
            "The COMPOSITE checksum type cannot be used with the crc64nvme checksum algorithm.",
        );
        refused(
            &[kind("COMPOSITE")],
            "The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header.",
        );
        refused(
            &[alg("CRC32"), kind("PARTIAL")],
            "Value for x-amz-checksum-type header is invalid.",
        );
    }

    #[test]
    fn composite_is_the_checksum_of_the_raw_part_checksums() {
        let parts = [b"first part".as_slice(), b"second", b""];
        for alg in ChecksumAlgorithm::ALL {
            let sums: Vec<Checksum> = parts.iter().map(|p| alg.checksum(p)).collect();
            let raw: Vec<u8> = sums.iter().flat_map(|c| c.as_bytes().to_vec()).collect();
            assert_eq!(composite(alg, &sums), alg.checksum(&raw), "{alg}");
        }
    }

    #[test]
    fn crc_combine_refuses_shas_and_mixed_algorithms() {
        let a = ChecksumAlgorithm::Crc32.checksum(b"a");
        let c = ChecksumAlgorithm::Crc32c.checksum(b"a");
        let s = ChecksumAlgorithm::Sha1.checksum(b"a");
        assert_eq!(crc_combine(&a, &c, 1), None);
        assert_eq!(crc_combine(&s, &s, 1), None);
    }

    proptest! {
        /// The full-object CRC made from the parts' CRCs and lengths is the CRC of the whole
        /// data, for any cut into parts (empty ones too); so is the hand-written combination
        /// used without `std`.
        #[test]
        fn combined_crcs_equal_the_crc_of_the_whole(
            data in proptest::collection::vec(any::<u8>(), 0..3000),
            cuts in proptest::collection::vec(0usize..3000, 0..5),
        ) {
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(data.len())).collect();
            cuts.push(0);
            cuts.push(data.len());
            cuts.sort_unstable();
            for alg in [ChecksumAlgorithm::Crc32, ChecksumAlgorithm::Crc32c, ChecksumAlgorithm::Crc64Nvme] {
                let mut acc: Option<Checksum> = None;
                let mut by_hand: Option<u64> = None;
                let (poly, width) = reflected_poly(alg);
                for w in cuts.windows(2) {
                    let part = &data[w[0]..w[1]];
                    let sum = alg.checksum(part);
                    acc = Some(match acc {
                        None => sum,
                        Some(prev) => crc_combine(&prev, &sum, part.len() as u64).unwrap(),
                    });
                    by_hand = Some(match by_hand {
                        None => sum.crc_value(),
                        Some(prev) => gf2::combine(poly, width, prev, sum.crc_value(), part.len() as u64),
                    });
                }
                let whole = alg.checksum(&data);
                prop_assert_eq!(acc, Some(whole));
                prop_assert_eq!(by_hand, Some(whole.crc_value()));
            }
        }
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
