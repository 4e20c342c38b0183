//! Server-side encryption request headers: SSE-S3, SSE-KMS, DSSE-KMS and SSE-C (customer keys).
//!
//! Parsing and checking only, as AWS documents and answers them (PutObject, CopyObject,
//! CreateMultipartUpload, UploadPart, GetObject, HeadObject); no encryption happens here. The
//! checks run in the order S3 was recorded running them: SSE-C's headers against
//! `x-amz-server-side-encryption` first, then the SSE-C triple (algorithm present, algorithm
//! value, key present, key-MD5 present, key decoded, MD5 compared, key length), then
//! `x-amz-server-side-encryption` and the KMS headers that need it.
//!
//! An SSE-C key is held in a [`CustomerKey`], which never prints the key and zeroes it when
//! dropped. (The request's header buffer, which holds the key's base64, is the caller's.)
//!
//! Limits: header values are bounded by the request head's size; a KMS key id is 1 to 2048
//! characters (KMS's own limit); an SSE-C key decodes into at most [`MAX_DECODED_KEY`] bytes.

use alloc::string::String;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use core::fmt;
use subtle::ConstantTimeEq as _;
use zeroize::Zeroize as _;

use super::{S3Error, S3ErrorCode, S3Result};
use crate::http::{Header, find_header};
use crate::s3::header;

/// The only SSE-C algorithm (and the SSE-S3 value of `x-amz-server-side-encryption`).
pub const AES256: &str = "AES256";
/// The longest KMS key id (key id, key ARN, alias name or alias ARN), as KMS bounds it.
pub const MAX_KMS_KEY_ID: usize = 2048;
/// The most bytes an SSE-C key is decoded into: room past 32 so that a wrong-length key with a
/// wrong MD5 is answered as a mismatch, as S3 checks the MD5 before the length.
pub const MAX_DECODED_KEY: usize = 64;

// S3's messages, as its answers were recorded (AWS documents the codes, not all the words).
const MSG_INCOMPATIBLE: &str = "Server Side Encryption with Customer provided key is incompatible with the encryption method specified";
const MSG_NO_ALGORITHM: &str = "Requests specifying Server Side Encryption with Customer provided keys must provide a valid encryption algorithm.";
const MSG_NO_KEY: &str = "Requests specifying Server Side Encryption with Customer provided keys must provide an appropriate secret key.";
const MSG_NO_KEY_MD5: &str = "Requests specifying Server Side Encryption with Customer provided keys must provide the client calculated MD5 of the secret key.";
const MSG_ALGORITHM: &str =
    "The Encryption request you specified is not valid. Supported value: AES256.";
const MSG_INVALID_KEY: &str = "The secret key was invalid for the specified algorithm.";
const MSG_MD5_MISMATCH: &str =
    "The calculated MD5 hash of the key did not match the hash that was provided.";
const MSG_UNSUPPORTED: &str = "The encryption method specified is not supported";
const MSG_KMS_REQUIRED: &str = "Server Side Encryption with AWS KMS managed key requires HTTP header x-amz-server-side-encryption : aws:kms";
const MSG_CONTEXT: &str = "The header 'x-amz-server-side-encryption-context' shall be Base64-encoded UTF-8 string holding JSON which represents a string-string map";

fn invalid_argument(message: &'static str) -> S3Error {
    S3Error::with_message(S3ErrorCode::InvalidArgument, message)
}

/// `x-amz-server-side-encryption` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Sse {
    /// `AES256`: SSE-S3, keys S3 manages.
    Aes256,
    /// `aws:kms`: SSE-KMS.
    AwsKms,
    /// `aws:kms:dsse`: dual-layer SSE-KMS.
    AwsKmsDsse,
}

impl Sse {
    /// The header value.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Aes256 => AES256,
            Self::AwsKms => "aws:kms",
            Self::AwsKmsDsse => "aws:kms:dsse",
        }
    }

    /// A header value, exactly as S3 spells it (`aws:fsx` and `aws:backup` name S3 access
    /// points of FSx and AWS Backup, not something a bucket's objects take).
    pub fn parse(value: &[u8]) -> Option<Self> {
        match value {
            b"AES256" => Some(Self::Aes256),
            b"aws:kms" => Some(Self::AwsKms),
            b"aws:kms:dsse" => Some(Self::AwsKmsDsse),
            _ => None,
        }
    }

    /// Whether the KMS headers (key id, context, bucket key) apply.
    pub fn is_kms(&self) -> bool {
        matches!(self, Self::AwsKms | Self::AwsKmsDsse)
    }
}

impl fmt::Display for Sse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An SSE-C key as sent: 32 bytes and the MD5 the client gave (checked against the key).
///
/// `Debug` prints only the key's MD5; the key is zeroed when dropped.
#[derive(Clone)]
pub struct CustomerKey {
    key: [u8; 32],
    key_md5: [u8; 16],
}

impl CustomerKey {
    /// A key from its 32 bytes, its MD5 computed (what a client does before sending it).
    pub fn new(key: [u8; 32]) -> Self {
        let key_md5 = crate::md5::md5(&key);
        Self { key, key_md5 }
    }

    /// The 256-bit key.
    pub fn key(&self) -> &[u8; 32] {
        &self.key
    }

    /// The MD5 of the key.
    pub fn key_md5(&self) -> &[u8; 16] {
        &self.key_md5
    }

    /// The MD5 of the key in base64: the `x-amz-server-side-encryption-customer-key-MD5`
    /// value responses echo.
    pub fn key_md5_base64(&self) -> String {
        BASE64.encode(self.key_md5)
    }
}

/// Keys compare in constant time.
impl PartialEq for CustomerKey {
    fn eq(&self, other: &Self) -> bool {
        self.key.ct_eq(&other.key).into()
    }
}

impl Eq for CustomerKey {}

impl fmt::Debug for CustomerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CustomerKey")
            .field("key_md5", &self.key_md5_base64())
            .finish_non_exhaustive()
    }
}

impl Drop for CustomerKey {
    fn drop(&mut self) {
        wipe(&mut self.key);
    }
}

/// Zero `buf` with writes the compiler may not remove as dead stores.
fn wipe(buf: &mut [u8]) {
    buf.zeroize();
}

/// What a request asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseRequest {
    /// `x-amz-server-side-encryption`.
    pub sse: Option<Sse>,
    /// `x-amz-server-side-encryption-aws-kms-key-id` (only with `aws:kms` / `aws:kms:dsse`).
    pub kms_key_id: Option<String>,
    /// `x-amz-server-side-encryption-context`: the base64 text as sent, checked to be base64
    /// of a JSON object whose values are strings (only with `aws:kms` / `aws:kms:dsse`).
    pub context: Option<String>,
    /// `x-amz-server-side-encryption-bucket-key-enabled` (only with `aws:kms` /
    /// `aws:kms:dsse`).
    pub bucket_key_enabled: Option<bool>,
    /// SSE-C: `x-amz-server-side-encryption-customer-{algorithm,key,key-MD5}`.
    pub customer: Option<CustomerKey>,
}

impl SseRequest {
    /// Whether the request names no server-side encryption at all.
    pub fn is_empty(&self) -> bool {
        self.sse.is_none()
            && self.kms_key_id.is_none()
            && self.context.is_none()
            && self.bucket_key_enabled.is_none()
            && self.customer.is_none()
    }
}

/// The server-side encryption a request asks for, checked.
///
/// Header names are matched ignoring case and values are trimmed. Errors are S3's: 400
/// `InvalidArgument` for SSE-C headers with `x-amz-server-side-encryption`, an incomplete or
/// inconsistent SSE-C triple, an unknown `x-amz-server-side-encryption` value, KMS headers
/// without `aws:kms` / `aws:kms:dsse`, or a malformed KMS header; 400
/// `InvalidEncryptionAlgorithmError` for an SSE-C algorithm other than `AES256`.
pub fn parse_request(headers: &[Header<'_>]) -> S3Result<SseRequest> {
    let get = |name: &str| find_header(headers, name).map(<[u8]>::trim_ascii);
    let sse_value = get(header::X_AMZ_SSE);
    let triple = [
        get(header::X_AMZ_SSE_CUSTOMER_ALGORITHM),
        get(header::X_AMZ_SSE_CUSTOMER_KEY),
        get(header::X_AMZ_SSE_CUSTOMER_KEY_MD5),
    ];
    if sse_value.is_some() && triple.iter().any(Option::is_some) {
        return Err(invalid_argument(MSG_INCOMPATIBLE));
    }
    let customer = customer_key(triple)?;
    let sse = sse_value
        .map(|v| Sse::parse(v).ok_or_else(|| invalid_argument(MSG_UNSUPPORTED)))
        .transpose()?;
    let kms = sse.is_some_and(|s| s.is_kms());
    let kms_header = |name: &str| match get(name) {
        Some(_) if !kms => Err(invalid_argument(MSG_KMS_REQUIRED)),
        v => Ok(v),
    };
    let kms_key_id = kms_header(header::X_AMZ_SSE_AWS_KMS_KEY_ID)?
        .map(parse_kms_key_id)
        .transpose()?;
    let context = kms_header(header::X_AMZ_SSE_CONTEXT)?
        .map(parse_context)
        .transpose()?;
    let bucket_key_enabled = kms_header(header::X_AMZ_SSE_BUCKET_KEY_ENABLED)?
        .map(parse_bool)
        .transpose()?;
    Ok(SseRequest {
        sse,
        kms_key_id,
        context,
        bucket_key_enabled,
        customer,
    })
}

/// The copy source's SSE-C key
/// (`x-amz-copy-source-server-side-encryption-customer-{algorithm,key,key-MD5}`), checked as
/// [`parse_request`] checks the request's own; `None` when none of the three is sent.
pub fn parse_copy_source_key(headers: &[Header<'_>]) -> S3Result<Option<CustomerKey>> {
    let get = |name: &str| find_header(headers, name).map(<[u8]>::trim_ascii);
    customer_key([
        get(header::X_AMZ_COPY_SOURCE_SSE_CUSTOMER_ALGORITHM),
        get(header::X_AMZ_COPY_SOURCE_SSE_CUSTOMER_KEY),
        get(header::X_AMZ_COPY_SOURCE_SSE_CUSTOMER_KEY_MD5),
    ])
}

/// An SSE-C triple (algorithm, key, key-MD5; values trimmed) checked in S3's order: the MD5 is
/// compared before the key's length is.
fn customer_key([algorithm, key, key_md5]: [Option<&[u8]>; 3]) -> S3Result<Option<CustomerKey>> {
    let Some(algorithm) = algorithm else {
        return match key.or(key_md5) {
            Some(_) => Err(invalid_argument(MSG_NO_ALGORITHM)),
            None => Ok(None),
        };
    };
    if algorithm != AES256.as_bytes() {
        return Err(S3Error::with_message(
            S3ErrorCode::InvalidEncryptionAlgorithmError,
            MSG_ALGORITHM,
        ));
    }
    let key = key.ok_or_else(|| invalid_argument(MSG_NO_KEY))?;
    let key_md5 = key_md5.ok_or_else(|| invalid_argument(MSG_NO_KEY_MD5))?;

    let mut decoded = [0u8; MAX_DECODED_KEY];
    let result = check_key(key, key_md5, &mut decoded);
    wipe(&mut decoded);
    result.map(Some)
}

/// Decode `key` into `buf` (the caller wipes it), check `key_md5` against it, then its length.
fn check_key(key: &[u8], key_md5: &[u8], buf: &mut [u8; MAX_DECODED_KEY]) -> S3Result<CustomerKey> {
    let len = BASE64
        .decode_slice(key, buf)
        .map_err(|_| invalid_argument(MSG_INVALID_KEY))?;
    let decoded = &buf[..len];
    let given = decode_md5(key_md5).ok_or_else(|| invalid_argument(MSG_MD5_MISMATCH))?;
    let computed = crate::md5::md5(decoded);
    if !bool::from(computed.ct_eq(&given)) {
        return Err(invalid_argument(MSG_MD5_MISMATCH));
    }
    let key: [u8; 32] = decoded
        .try_into()
        .map_err(|_| invalid_argument(MSG_INVALID_KEY))?;
    Ok(CustomerKey {
        key,
        key_md5: computed,
    })
}

/// Base64 of exactly 16 bytes.
fn decode_md5(value: &[u8]) -> Option<[u8; 16]> {
    // Room past 16 so that longer values are refused rather than truncated.
    let mut out = [0u8; 24];
    match BASE64.decode_slice(value, &mut out) {
        Ok(16) => out[..16].try_into().ok(),
        _ => None,
    }
}

/// A KMS key id: UTF-8, 1 to [`MAX_KMS_KEY_ID`] characters. Whether the key exists is KMS's
/// to say.
fn parse_kms_key_id(value: &[u8]) -> S3Result<String> {
    match core::str::from_utf8(value) {
        Ok(s) if !s.is_empty() && s.chars().count() <= MAX_KMS_KEY_ID => Ok(String::from(s)),
        _ => Err(invalid_argument(
            "The x-amz-server-side-encryption-aws-kms-key-id header must be 1 to 2048 characters.",
        )),
    }
}

/// An encryption context: base64 of a UTF-8 JSON object whose values are all strings. The
/// base64 text is kept as sent.
fn parse_context(value: &[u8]) -> S3Result<String> {
    let bad = || invalid_argument(MSG_CONTEXT);
    let text = core::str::from_utf8(value).map_err(|_| bad())?;
    let json = BASE64.decode(text).map_err(|_| bad())?;
    let doc: serde_json::Value = serde_json::from_slice(&json).map_err(|_| bad())?;
    match doc {
        serde_json::Value::Object(map) if map.values().all(serde_json::Value::is_string) => {
            Ok(String::from(text))
        }
        _ => Err(bad()),
    }
}

/// `true` or `false`, in any case.
fn parse_bool(value: &[u8]) -> S3Result<bool> {
    if value.eq_ignore_ascii_case(b"true") {
        Ok(true)
    } else if value.eq_ignore_ascii_case(b"false") {
        Ok(false)
    } else {
        Err(invalid_argument(
            "The x-amz-server-side-encryption-bucket-key-enabled header must be true or false.",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;
    use alloc::{format, vec};

    // Bytes 0..32, its base64 and the base64 of its MD5 (computed with Python's hashlib).
    const KEY_B64: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    const KEY_MD5_B64: &str = "tP/LI3N87DFaSk0aoqYgzg==";
    // Bytes 0..24 and its MD5: a wrong-length key whose MD5 matches.
    const SHORT_KEY_B64: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYX";
    const SHORT_KEY_MD5_B64: &str = "i9nI77usWHSJUcpaRc/Thg==";

    fn key_bytes() -> [u8; 32] {
        core::array::from_fn(|i| i as u8)
    }

    fn hs<'a>(pairs: &[(&'a str, &'a str)]) -> Vec<Header<'a>> {
        pairs
            .iter()
            .map(|&(name, value)| Header {
                name,
                value: value.as_bytes(),
            })
            .collect()
    }

    fn err(pairs: &[(&str, &str)]) -> S3Error {
        parse_request(&hs(pairs)).expect_err("should be refused")
    }

    fn assert_err(e: S3Error, code: S3ErrorCode, message: &str) {
        assert_eq!((e.code, &*e.message), (code, message));
        assert_eq!(e.status(), 400);
    }

    #[test]
    fn no_headers_no_encryption() {
        let r = parse_request(&hs(&[("content-type", "text/plain")])).unwrap();
        assert!(r.is_empty());
        assert_eq!(parse_copy_source_key(&hs(&[])).unwrap(), None);
    }

    #[test]
    fn sse_values() {
        for (v, sse) in [
            ("AES256", Sse::Aes256),
            ("aws:kms", Sse::AwsKms),
            ("aws:kms:dsse", Sse::AwsKmsDsse),
        ] {
            let r = parse_request(&hs(&[("X-Amz-Server-Side-Encryption", v)])).unwrap();
            assert_eq!(r.sse, Some(sse));
            assert_eq!(sse.as_str(), v);
            assert_eq!(Sse::parse(v.as_bytes()), Some(sse));
        }
        // Trimmed.
        let r = parse_request(&hs(&[(header::X_AMZ_SSE, "  aws:kms \t")])).unwrap();
        assert_eq!(r.sse, Some(Sse::AwsKms));
    }

    #[test]
    fn unknown_sse_value_is_invalid_argument() {
        for v in ["", "aes256", "AES512", "aes:kms", "aws:fsx", "aws:kms:"] {
            assert_err(
                err(&[(header::X_AMZ_SSE, v)]),
                S3ErrorCode::InvalidArgument,
                MSG_UNSUPPORTED,
            );
        }
    }

    #[test]
    fn sse_c_round_trip() {
        let r = parse_request(&hs(&[
            ("X-Amz-Server-Side-Encryption-Customer-Algorithm", "AES256"),
            ("x-amz-server-side-encryption-customer-key", KEY_B64),
            ("X-AMZ-SERVER-SIDE-ENCRYPTION-CUSTOMER-KEY-MD5", KEY_MD5_B64),
        ]))
        .unwrap();
        let c = r.customer.as_ref().unwrap();
        assert_eq!(c.key(), &key_bytes());
        assert_eq!(c.key_md5(), &crate::md5::md5(&key_bytes()));
        assert_eq!(c.key_md5_base64(), KEY_MD5_B64);
        assert_eq!(r.sse, None);
        assert_eq!(c, &CustomerKey::new(key_bytes()));
        assert_eq!(CustomerKey::new(key_bytes()).key_md5_base64(), KEY_MD5_B64);

        // A key generated here, its headers built as a client builds them.
        let key: [u8; 32] = core::array::from_fn(|i| (i as u8).wrapping_mul(37) ^ 0xa5);
        let key_b64 = BASE64.encode(key);
        let md5_b64 = BASE64.encode(crate::md5::md5(&key));
        let r = parse_request(&hs(&[
            (header::X_AMZ_SSE_CUSTOMER_ALGORITHM, " AES256 "),
            (header::X_AMZ_SSE_CUSTOMER_KEY, &key_b64),
            (header::X_AMZ_SSE_CUSTOMER_KEY_MD5, &md5_b64),
        ]))
        .unwrap();
        let c = r.customer.unwrap();
        assert_eq!(c.key(), &key);
        assert_eq!(c.key_md5_base64(), md5_b64);
    }

    #[test]
    fn customer_key_debug_hides_the_key() {
        let c = CustomerKey::new(key_bytes());
        let d = format!("{c:?}");
        assert!(d.contains(KEY_MD5_B64), "{d}");
        assert!(!d.contains(KEY_B64), "{d}");
        assert!(!d.contains("[0, 1, 2"), "{d}");
        let r = parse_request(&hs(&[
            (header::X_AMZ_SSE_CUSTOMER_ALGORITHM, "AES256"),
            (header::X_AMZ_SSE_CUSTOMER_KEY, KEY_B64),
            (header::X_AMZ_SSE_CUSTOMER_KEY_MD5, KEY_MD5_B64),
        ]))
        .unwrap();
        let d = format!("{r:?}");
        assert!(!d.contains(KEY_B64), "{d}");
        assert!(d.contains(KEY_MD5_B64), "{d}");
    }

    #[test]
    fn wipe_zeroes() {
        let mut buf = key_bytes();
        wipe(&mut buf);
        assert_eq!(buf, [0u8; 32]);
    }

    #[test]
    fn sse_c_incomplete_triple() {
        let no_alg = [
            vec![
                (header::X_AMZ_SSE_CUSTOMER_KEY, KEY_B64),
                (header::X_AMZ_SSE_CUSTOMER_KEY_MD5, KEY_MD5_B64),
            ],
            vec![(header::X_AMZ_SSE_CUSTOMER_KEY, KEY_B64)],
            vec![(header::X_AMZ_SSE_CUSTOMER_KEY_MD5, KEY_MD5_B64)],
        ];
        for pairs in &no_alg {
            assert_err(err(pairs), S3ErrorCode::InvalidArgument, MSG_NO_ALGORITHM);
        }
        for pairs in [
            vec![(header::X_AMZ_SSE_CUSTOMER_ALGORITHM, "AES256")],
            vec![
                (header::X_AMZ_SSE_CUSTOMER_ALGORITHM, "AES256"),
                (header::X_AMZ_SSE_CUSTOMER_KEY_MD5, KEY_MD5_B64),
            ],
        ] {
            assert_err(err(&pairs), S3ErrorCode::InvalidArgument, MSG_NO_KEY);
        }
        assert_err(
            err(&[
                (header::X_AMZ_SSE_CUSTOMER_ALGORITHM, "AES256"),
                (header::X_AMZ_SSE_CUSTOMER_KEY, KEY_B64),
            ]),
            S3ErrorCode::InvalidArgument,
            MSG_NO_KEY_MD5,
        );
    }

    #[test]
    fn sse_c_algorithm_must_be_aes256() {
        for alg in ["aws:kms", "AES128", "aes256", ""] {
            let e = err(&[
                (header::X_AMZ_SSE_CUSTOMER_ALGORITHM, alg),
                (header::X_AMZ_SSE_CUSTOMER_KEY, KEY_B64),
                (header::X_AMZ_SSE_CUSTOMER_KEY_MD5, KEY_MD5_B64),
            ]);
            assert_err(
                e,
                S3ErrorCode::InvalidEncryptionAlgorithmError,
                MSG_ALGORITHM,
            );
        }
        // Checked before the key's presence.
        assert_eq!(
            err(&[(header::X_AMZ_SSE_CUSTOMER_ALGORITHM, "AES128")]).code,
            S3ErrorCode::InvalidEncryptionAlgorithmError
        );
        assert_eq!(S3ErrorCode::InvalidEncryptionAlgorithmError.status(), 400);
        assert_eq!(
            S3ErrorCode::InvalidEncryptionAlgorithmError.as_str(),
            "InvalidEncryptionAlgorithmError"
        );
    }

    #[test]
    fn sse_c_key_must_be_base64_of_32_bytes() {
        let too_long = BASE64.encode([7u8; MAX_DECODED_KEY + 1]);
        for key in ["not base64!", "AAECAw", too_long.as_str()] {
            let e = err(&[
                (header::X_AMZ_SSE_CUSTOMER_ALGORITHM, "AES256"),
                (header::X_AMZ_SSE_CUSTOMER_KEY, key),
                (header::X_AMZ_SSE_CUSTOMER_KEY_MD5, KEY_MD5_B64),
            ]);
            assert_err(e, S3ErrorCode::InvalidArgument, MSG_INVALID_KEY);
        }
        // 24 bytes with their own MD5: the length is what is wrong.
        let e = err(&[
            (header::X_AMZ_SSE_CUSTOMER_ALGORITHM, "AES256"),
            (header::X_AMZ_SSE_CUSTOMER_KEY, SHORT_KEY_B64),
            (header::X_AMZ_SSE_CUSTOMER_KEY_MD5, SHORT_KEY_MD5_B64),
        ]);
        assert_err(e, S3ErrorCode::InvalidArgument, MSG_INVALID_KEY);
        // 24 bytes with another MD5: S3 compares the MD5 first.
        let e = err(&[
            (header::X_AMZ_SSE_CUSTOMER_ALGORITHM, "AES256"),
            (header::X_AMZ_SSE_CUSTOMER_KEY, SHORT_KEY_B64),
            (header::X_AMZ_SSE_CUSTOMER_KEY_MD5, KEY_MD5_B64),
        ]);
        assert_err(e, S3ErrorCode::InvalidArgument, MSG_MD5_MISMATCH);
    }

    #[test]
    fn sse_c_key_md5_must_match() {
        let other_md5 = BASE64.encode(crate::md5::md5(b"another key"));
        let long_md5 = BASE64.encode([1u8; 17]);
        let short_md5 = BASE64.encode([1u8; 15]);
        for md5 in [
            other_md5.as_str(),
            "not base64!",
            long_md5.as_str(),
            short_md5.as_str(),
            KEY_B64,
            "",
        ] {
            let e = err(&[
                (header::X_AMZ_SSE_CUSTOMER_ALGORITHM, "AES256"),
                (header::X_AMZ_SSE_CUSTOMER_KEY, KEY_B64),
                (header::X_AMZ_SSE_CUSTOMER_KEY_MD5, md5),
            ]);
            assert_err(e, S3ErrorCode::InvalidArgument, MSG_MD5_MISMATCH);
        }
    }

    #[test]
    fn sse_c_with_sse_header_is_incompatible() {
        for sse in ["AES256", "aws:kms", "bogus"] {
            let e = err(&[
                (header::X_AMZ_SSE, sse),
                (header::X_AMZ_SSE_CUSTOMER_ALGORITHM, "AES256"),
                (header::X_AMZ_SSE_CUSTOMER_KEY, KEY_B64),
                (header::X_AMZ_SSE_CUSTOMER_KEY_MD5, KEY_MD5_B64),
            ]);
            assert_err(e, S3ErrorCode::InvalidArgument, MSG_INCOMPATIBLE);
        }
        // Checked before the triple itself.
        assert_err(
            err(&[
                (header::X_AMZ_SSE, "AES256"),
                (header::X_AMZ_SSE_CUSTOMER_ALGORITHM, "AES128"),
            ]),
            S3ErrorCode::InvalidArgument,
            MSG_INCOMPATIBLE,
        );
        assert_err(
            err(&[
                (header::X_AMZ_SSE, "AES256"),
                (header::X_AMZ_SSE_CUSTOMER_KEY, KEY_B64),
            ]),
            S3ErrorCode::InvalidArgument,
            MSG_INCOMPATIBLE,
        );
    }

    #[test]
    fn kms_headers() {
        // {"a": "b", "c": "d"} in base64 (Python's json.dumps).
        let ctx = "eyJhIjogImIiLCAiYyI6ICJkIn0=";
        for sse in ["aws:kms", "aws:kms:dsse"] {
            let r = parse_request(&hs(&[
                (header::X_AMZ_SSE, sse),
                (
                    "X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id",
                    " alias/my-key ",
                ),
                ("x-amz-server-side-encryption-context", ctx),
                ("x-amz-server-side-encryption-bucket-key-enabled", "true"),
            ]))
            .unwrap();
            assert_eq!(r.kms_key_id.as_deref(), Some("alias/my-key"));
            assert_eq!(r.context.as_deref(), Some(ctx));
            assert_eq!(r.bucket_key_enabled, Some(true));
            assert!(r.customer.is_none());
        }
        let r = parse_request(&hs(&[
            (header::X_AMZ_SSE, "aws:kms"),
            (header::X_AMZ_SSE_BUCKET_KEY_ENABLED, "FALSE"),
        ]))
        .unwrap();
        assert_eq!(r.bucket_key_enabled, Some(false));
        assert_eq!((r.kms_key_id, r.context), (None, None));
    }

    #[test]
    fn kms_headers_need_kms() {
        let ctx = BASE64.encode(br#"{"k":"v"}"#);
        for header in [
            (header::X_AMZ_SSE_AWS_KMS_KEY_ID, "alias/my-key"),
            (header::X_AMZ_SSE_CONTEXT, ctx.as_str()),
            (header::X_AMZ_SSE_BUCKET_KEY_ENABLED, "true"),
        ] {
            assert_err(
                err(&[header]),
                S3ErrorCode::InvalidArgument,
                MSG_KMS_REQUIRED,
            );
            assert_err(
                err(&[(header::X_AMZ_SSE, "AES256"), header]),
                S3ErrorCode::InvalidArgument,
                MSG_KMS_REQUIRED,
            );
            // With SSE-C and no `x-amz-server-side-encryption`.
            assert_err(
                err(&[
                    (header::X_AMZ_SSE_CUSTOMER_ALGORITHM, "AES256"),
                    (header::X_AMZ_SSE_CUSTOMER_KEY, KEY_B64),
                    (header::X_AMZ_SSE_CUSTOMER_KEY_MD5, KEY_MD5_B64),
                    header,
                ]),
                S3ErrorCode::InvalidArgument,
                MSG_KMS_REQUIRED,
            );
        }
    }

    #[test]
    fn context_must_be_base64_json_object_of_strings() {
        for bad in [
            String::from("not base64!"),
            BASE64.encode(b"not json"),
            BASE64.encode(b"[\"a\"]"),
            BASE64.encode(br#"{"k":1}"#),
            BASE64.encode(br#"{"k":["v"]}"#),
            BASE64.encode(br#"{"k":null}"#),
            BASE64.encode(b"\"a string\""),
            String::new(),
        ] {
            assert_err(
                err(&[
                    (header::X_AMZ_SSE, "aws:kms"),
                    (header::X_AMZ_SSE_CONTEXT, &bad),
                ]),
                S3ErrorCode::InvalidArgument,
                MSG_CONTEXT,
            );
        }
        let empty = BASE64.encode(b"{}");
        let r = parse_request(&hs(&[
            (header::X_AMZ_SSE, "aws:kms"),
            (header::X_AMZ_SSE_CONTEXT, &empty),
        ]))
        .unwrap();
        assert_eq!(r.context.as_deref(), Some(empty.as_str()));
    }

    #[test]
    fn malformed_kms_values() {
        let long = "k".repeat(MAX_KMS_KEY_ID + 1);
        for id in ["", long.as_str()] {
            let e = err(&[
                (header::X_AMZ_SSE, "aws:kms"),
                (header::X_AMZ_SSE_AWS_KMS_KEY_ID, id),
            ]);
            assert_eq!((e.code, e.status()), (S3ErrorCode::InvalidArgument, 400));
        }
        let max = "k".repeat(MAX_KMS_KEY_ID);
        let r = parse_request(&hs(&[
            (header::X_AMZ_SSE, "aws:kms"),
            (header::X_AMZ_SSE_AWS_KMS_KEY_ID, &max),
        ]))
        .unwrap();
        assert_eq!(r.kms_key_id.map(|s| s.len()), Some(MAX_KMS_KEY_ID));
        let bad_utf8 = [
            Header {
                name: header::X_AMZ_SSE,
                value: b"aws:kms",
            },
            Header {
                name: header::X_AMZ_SSE_AWS_KMS_KEY_ID,
                value: b"\xff\xfe",
            },
        ];
        assert_eq!(
            parse_request(&bad_utf8).unwrap_err().code,
            S3ErrorCode::InvalidArgument
        );
        for v in ["yes", "1", ""] {
            let e = err(&[
                (header::X_AMZ_SSE, "aws:kms"),
                (header::X_AMZ_SSE_BUCKET_KEY_ENABLED, v),
            ]);
            assert_eq!(e.code, S3ErrorCode::InvalidArgument);
        }
    }

    #[test]
    fn copy_source_key() {
        let k = parse_copy_source_key(&hs(&[
            (
                "X-Amz-Copy-Source-Server-Side-Encryption-Customer-Algorithm",
                "AES256",
            ),
            (
                "x-amz-copy-source-server-side-encryption-customer-key",
                KEY_B64,
            ),
            (
                "x-amz-copy-source-server-side-encryption-customer-key-md5",
                KEY_MD5_B64,
            ),
            // The destination's headers are not the source's.
            (header::X_AMZ_SSE, "AES256"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(k.key(), &key_bytes());
        // The request's own triple is not the copy source's.
        let own = hs(&[
            (header::X_AMZ_SSE_CUSTOMER_ALGORITHM, "AES256"),
            (header::X_AMZ_SSE_CUSTOMER_KEY, KEY_B64),
            (header::X_AMZ_SSE_CUSTOMER_KEY_MD5, KEY_MD5_B64),
        ]);
        assert_eq!(parse_copy_source_key(&own).unwrap(), None);

        type Case<'a> = (&'a [(&'a str, &'a str)], S3ErrorCode, &'a str);
        let cases: [Case<'_>; 5] = [
            (
                &[(header::X_AMZ_COPY_SOURCE_SSE_CUSTOMER_KEY, KEY_B64)],
                S3ErrorCode::InvalidArgument,
                MSG_NO_ALGORITHM,
            ),
            (
                &[(header::X_AMZ_COPY_SOURCE_SSE_CUSTOMER_ALGORITHM, "AES128")],
                S3ErrorCode::InvalidEncryptionAlgorithmError,
                MSG_ALGORITHM,
            ),
            (
                &[(header::X_AMZ_COPY_SOURCE_SSE_CUSTOMER_ALGORITHM, "AES256")],
                S3ErrorCode::InvalidArgument,
                MSG_NO_KEY,
            ),
            (
                &[
                    (header::X_AMZ_COPY_SOURCE_SSE_CUSTOMER_ALGORITHM, "AES256"),
                    (header::X_AMZ_COPY_SOURCE_SSE_CUSTOMER_KEY, KEY_B64),
                    (
                        header::X_AMZ_COPY_SOURCE_SSE_CUSTOMER_KEY_MD5,
                        SHORT_KEY_MD5_B64,
                    ),
                ],
                S3ErrorCode::InvalidArgument,
                MSG_MD5_MISMATCH,
            ),
            (
                &[
                    (header::X_AMZ_COPY_SOURCE_SSE_CUSTOMER_ALGORITHM, "AES256"),
                    (header::X_AMZ_COPY_SOURCE_SSE_CUSTOMER_KEY, SHORT_KEY_B64),
                    (
                        header::X_AMZ_COPY_SOURCE_SSE_CUSTOMER_KEY_MD5,
                        SHORT_KEY_MD5_B64,
                    ),
                ],
                S3ErrorCode::InvalidArgument,
                MSG_INVALID_KEY,
            ),
        ];
        for (pairs, code, msg) in cases {
            assert_err(parse_copy_source_key(&hs(pairs)).unwrap_err(), code, msg);
        }
    }

    #[test]
    fn response_header_names() {
        assert_eq!(header::X_AMZ_SSE, "x-amz-server-side-encryption");
        assert_eq!(
            header::X_AMZ_SSE_CUSTOMER_ALGORITHM,
            "x-amz-server-side-encryption-customer-algorithm"
        );
        assert_eq!(
            header::X_AMZ_SSE_CUSTOMER_KEY_MD5,
            "x-amz-server-side-encryption-customer-key-MD5"
        );
        for name in [
            header::X_AMZ_SSE_AWS_KMS_KEY_ID,
            header::X_AMZ_SSE_CONTEXT,
            header::X_AMZ_SSE_BUCKET_KEY_ENABLED,
            header::X_AMZ_SSE_CUSTOMER_KEY,
        ] {
            assert!(name.starts_with("x-amz-server-side-encryption-"), "{name}");
        }
    }
}
