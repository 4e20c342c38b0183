//! Server-side encryption of object data: which key an object is encrypted with, and the
//! node's master key.
//!
//! The format of the data (AES-256-GCM in chunks, each chunk's index and whether it is the
//! last in its nonce) is [`ferry_core::sse`]'s; this module decides the key:
//!
//! - **SSE-S3**: a random data key per object, wrapped (AES-256-GCM) under the store's master
//!   key and kept in the object's record with the master key's id.
//! - **SSE-C**: the customer's key is never stored. The data key is derived from it and a
//!   random per-object seed; the record keeps a salted check value (HMAC-SHA256 of the key)
//!   to tell a wrong key (`403`) from the right one, and the key's MD5 to echo.
//! - **SSE-KMS**: a random data key per object, wrapped under a key of the node's keyring
//!   ([`Keyring`]) and kept in the record with that key's id; the wrapping also binds the
//!   encryption context, so a record's context cannot be altered without the unwrap failing.
//!
//! Every encrypted object has its own data key, so the chunk nonces (chunk index and last
//! flag) never repeat under one key, and a chunk moved from another object fails to decrypt.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use ferry_core::md5::Md5Digest;
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};
use ferry_core::sse as format;
use serde::{Deserialize, Serialize};

pub use super::keyring::Keyring;

/// How a write asks for its data to be encrypted.
#[derive(Clone, PartialEq, Eq)]
pub enum EncryptWith {
    /// SSE-S3 (`x-amz-server-side-encryption: AES256`): a data key wrapped by the master key.
    SseS3,
    /// SSE-C: the customer's 256-bit key and its MD5 (checked by the caller).
    SseC(CustomerKey),
    /// SSE-KMS (`aws:kms`): a data key wrapped by a key of the keyring.
    SseKms {
        /// The keyring key as the request named it (id, key ARN or `alias/aws/s3`); `None`:
        /// the keyring's default.
        key_id: Option<String>,
        /// The encryption context (base64 of a JSON object, as sent), bound to the data key.
        context: Option<String>,
        /// `x-amz-server-side-encryption-bucket-key-enabled`, kept and echoed.
        bucket_key: bool,
    },
}

impl EncryptWith {
    /// How responses will describe the object.
    pub fn info(&self) -> EncryptionInfo {
        match self {
            Self::SseS3 => EncryptionInfo::SseS3,
            Self::SseC(c) => EncryptionInfo::SseC { key_md5: c.key_md5 },
            Self::SseKms {
                key_id,
                context,
                bucket_key,
            } => EncryptionInfo::SseKms {
                key_id: key_id.clone(),
                context: context.clone(),
                bucket_key: *bucket_key,
            },
        }
    }
}

impl EncryptWith {
    /// This encryption with what the store would choose filled in (an SSE-KMS write's key id:
    /// the keyring's id of the key named, or of its default key), checked: an SSE-KMS key the
    /// keyring does not have is refused here, before any data is read.
    pub(crate) fn resolved(self, keys: &impl KeySource) -> S3Result<Self> {
        match self {
            Self::SseKms {
                key_id,
                context,
                bucket_key,
            } => {
                let keyring = keys.keyring().ok_or_else(no_keyring)?;
                let id = keyring.resolve(key_id.as_deref())?.to_owned();
                Ok(Self::SseKms {
                    key_id: Some(id),
                    context,
                    bucket_key,
                })
            }
            other => Ok(other),
        }
    }
}

impl std::fmt::Debug for EncryptWith {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::SseS3 => f.write_str("SseS3"),
            Self::SseC(k) => f.debug_tuple("SseC").field(k).finish(),
            Self::SseKms {
                key_id,
                context,
                bucket_key,
            } => f
                .debug_struct("SseKms")
                .field("key_id", key_id)
                .field("context", context)
                .field("bucket_key", bucket_key)
                .finish(),
        }
    }
}

/// An SSE-C key as the store takes it (never stored, never printed; compared in constant time).
#[derive(Clone)]
pub struct CustomerKey {
    /// The key.
    pub key: [u8; 32],
    /// Its MD5 (what responses echo).
    pub key_md5: Md5Digest,
}

impl std::fmt::Debug for CustomerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CustomerKey")
            .field("key_md5", &self.key_md5)
            .finish_non_exhaustive()
    }
}

impl PartialEq for CustomerKey {
    fn eq(&self, other: &Self) -> bool {
        format::check_matches(&self.key, &other.key)
    }
}

impl Eq for CustomerKey {}

/// How a stored object is encrypted, as responses describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EncryptionInfo {
    /// SSE-S3 (`AES256`).
    SseS3,
    /// SSE-C, with the MD5 of the key it was written with.
    SseC {
        /// The key's MD5.
        key_md5: Md5Digest,
    },
    /// SSE-KMS (`aws:kms`).
    SseKms {
        /// The keyring key's id (a stored object's always names one; `None` only from
        /// [`EncryptWith::info`] of a write that left it to the default, before the store
        /// resolved it: see [`super::ObjectWriter::encryption_info`]).
        key_id: Option<String>,
        /// The encryption context, as the write sent it.
        context: Option<String>,
        /// Whether the write asked for an S3 bucket key.
        bucket_key: bool,
    },
}

/// What an encrypted object's record keeps (an extension of the record).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Encryption {
    /// The per-object random value the data key is derived from (SSE-C) or bound to.
    pub seed: [u8; 32],
    pub mode: Mode,
    /// A multipart object's: each part's own random seed, in the object's part order (its
    /// key is [`format::part_key`] of the data key and the seed). Empty for an object of one
    /// data file. Stored in an extension of its own (`codec`), not here.
    #[serde(skip)]
    pub parts: Vec<[u8; 32]>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Mode {
    /// The data key, wrapped under the master key `key_id`.
    SseS3 { key_id: String, wrapped: Vec<u8> },
    /// The key's check value under `salt`, and its MD5.
    SseC {
        salt: [u8; 32],
        check: [u8; 32],
        key_md5: Md5Digest,
    },
    /// The data key, wrapped under the keyring's key `key_id` with the encryption context
    /// bound ([`kms_wrap_aad`]).
    SseKms {
        key_id: String,
        wrapped: Vec<u8>,
        context: Option<String>,
        bucket_key: bool,
    },
}

/// Where the keys that wrap data keys come from: the SSE-S3 master key (made on first use) and
/// the SSE-KMS keyring, if the node has one.
pub(crate) trait KeySource {
    /// The SSE-S3 master key.
    fn master_key(&self) -> S3Result<&MasterKey>;
    /// The SSE-KMS keyring.
    fn keyring(&self) -> Option<&Keyring>;
}

impl Encryption {
    /// A new object's encryption and its data key.
    pub fn new(with: &EncryptWith, keys: &impl KeySource) -> S3Result<(Self, [u8; 32])> {
        let seed = format::random_key().map_err(sse_err)?;
        match with {
            EncryptWith::SseS3 => {
                let master = keys.master_key()?;
                let key = format::random_key().map_err(sse_err)?;
                let wrapped = format::wrap_key(&master.key, &wrap_aad(&master.id, &seed), &key)
                    .map_err(sse_err)?;
                let mode = Mode::SseS3 {
                    key_id: master.id.clone(),
                    wrapped,
                };
                Ok((Self::of(seed, mode), key))
            }
            EncryptWith::SseC(c) => {
                let salt = format::random_key().map_err(sse_err)?;
                let mode = Mode::SseC {
                    salt,
                    check: format::customer_key_check(&c.key, &salt),
                    key_md5: c.key_md5,
                };
                let key = format::customer_object_key(&c.key, &seed);
                Ok((Self::of(seed, mode), key))
            }
            EncryptWith::SseKms {
                key_id,
                context,
                bucket_key,
            } => {
                let keyring = keys.keyring().ok_or_else(no_keyring)?;
                let id = keyring.resolve(key_id.as_deref())?;
                let kek = keyring
                    .key(id)
                    .ok_or_else(|| super::keyring::not_found(id))?;
                let key = format::random_key().map_err(sse_err)?;
                let aad = kms_wrap_aad(id, &seed, context.as_deref());
                let wrapped = format::wrap_key(kek, &aad, &key).map_err(sse_err)?;
                let mode = Mode::SseKms {
                    key_id: id.to_owned(),
                    wrapped,
                    context: context.clone(),
                    bucket_key: *bucket_key,
                };
                Ok((Self::of(seed, mode), key))
            }
        }
    }

    fn of(seed: [u8; 32], mode: Mode) -> Self {
        Self {
            seed,
            mode,
            parts: Vec::new(),
        }
    }

    /// The keys of the object's data files, in order, given its data key: the data key for
    /// an object of one file, each part's key for a multipart object.
    pub fn file_keys(&self, data_key: [u8; 32]) -> Vec<[u8; 32]> {
        if self.parts.is_empty() {
            vec![data_key]
        } else {
            self.parts
                .iter()
                .map(|seed| format::part_key(&data_key, seed))
                .collect()
        }
    }

    /// How responses describe it.
    pub fn info(&self) -> EncryptionInfo {
        match &self.mode {
            Mode::SseS3 { .. } => EncryptionInfo::SseS3,
            Mode::SseC { key_md5, .. } => EncryptionInfo::SseC { key_md5: *key_md5 },
            Mode::SseKms {
                key_id,
                context,
                bucket_key,
                ..
            } => EncryptionInfo::SseKms {
                key_id: Some(key_id.clone()),
                context: context.clone(),
                bucket_key: *bucket_key,
            },
        }
    }

    /// The data key, given the SSE-C key a read came with (if any): `400 InvalidRequest`
    /// when an SSE-C object is read without its key or another object with one, `403
    /// AccessDenied` for a wrong key, or for an SSE-KMS object whose keyring key is gone.
    pub fn data_key(
        &self,
        given: Option<&CustomerKey>,
        keys: &impl KeySource,
    ) -> S3Result<[u8; 32]> {
        match (&self.mode, given) {
            (Mode::SseC { .. }, None) => Err(S3Error::with_message(
                S3ErrorCode::InvalidRequest,
                "The object was stored using a form of Server Side Encryption. The correct \
                 parameters must be provided to retrieve the object.",
            )),
            (Mode::SseC { salt, check, .. }, Some(c)) => {
                if format::check_matches(&format::customer_key_check(&c.key, salt), check) {
                    Ok(format::customer_object_key(&c.key, &self.seed))
                } else {
                    Err(S3Error::with_message(
                        S3ErrorCode::AccessDenied,
                        "The SSE-C key does not match the key the object was stored with.",
                    ))
                }
            }
            (Mode::SseS3 { .. } | Mode::SseKms { .. }, Some(_)) => Err(not_sse_c()),
            (
                Mode::SseKms {
                    key_id,
                    wrapped,
                    context,
                    ..
                },
                None,
            ) => {
                // S3's answer when the object's KMS key no longer exists.
                let kek = keys.keyring().and_then(|k| k.key(key_id)).ok_or_else(|| {
                    S3Error::with_message(
                        S3ErrorCode::AccessDenied,
                        "The ciphertext refers to a customer master key that does not exist, \
                         does not exist in this region, or you are not allowed to access.",
                    )
                })?;
                let aad = kms_wrap_aad(key_id, &self.seed, context.as_deref());
                format::unwrap_key(kek, &aad, wrapped).map_err(sse_err)
            }
            (Mode::SseS3 { key_id, wrapped }, None) => {
                let master = keys.master_key()?.key_for(key_id).ok_or_else(|| {
                    S3Error::with_message(
                        S3ErrorCode::InternalError,
                        "the object's data key is wrapped by a master key the key file no \
                         longer holds",
                    )
                })?;
                format::unwrap_key(master, &wrap_aad(key_id, &self.seed), wrapped).map_err(sse_err)
            }
        }
    }
}

/// The error of an SSE-C key given for an object that is not SSE-C.
pub(crate) fn not_sse_c() -> S3Error {
    S3Error::with_message(
        S3ErrorCode::InvalidRequest,
        "The encryption parameters are not applicable to this object.",
    )
}

/// What a wrapped data key is bound to: the master key's id and the object's seed, so a
/// wrapped key cannot be moved to another object's record.
fn wrap_aad(key_id: &str, seed: &[u8; 32]) -> Vec<u8> {
    let mut aad = key_id.as_bytes().to_vec();
    aad.push(0);
    aad.extend_from_slice(seed);
    aad
}

/// What an SSE-KMS data key is bound to: the keyring key's id, the object's seed and the
/// encryption context (absent and empty differ), each part length-prefixed so no two
/// different triples give the same bytes.
fn kms_wrap_aad(key_id: &str, seed: &[u8; 32], context: Option<&str>) -> Vec<u8> {
    let mut aad = b"ferry-sse-kms\0".to_vec();
    aad.extend_from_slice(&(key_id.len() as u64).to_be_bytes());
    aad.extend_from_slice(key_id.as_bytes());
    aad.extend_from_slice(seed);
    match context {
        None => aad.push(0),
        Some(c) => {
            aad.push(1);
            aad.extend_from_slice(&(c.len() as u64).to_be_bytes());
            aad.extend_from_slice(c.as_bytes());
        }
    }
    aad
}

/// SSE-KMS asked of a node without a keyring: as S3 answers a key that does not exist.
fn no_keyring() -> S3Error {
    S3Error::with_message(
        S3ErrorCode::KmsNotFound,
        "SSE-KMS is not available: this node has no keyring (ferry node --sse-kms-keyring)",
    )
}

fn sse_err(e: format::SseError) -> S3Error {
    S3Error::with_message(S3ErrorCode::InternalError, format!("encryption: {e}"))
}

/// A new part of an encrypted upload: its random seed and its key.
pub(crate) fn new_part_key(data_key: &[u8; 32]) -> S3Result<([u8; 32], [u8; 32])> {
    let seed = format::random_key().map_err(sse_err)?;
    Ok((seed, format::part_key(data_key, &seed)))
}

/// The ETag of an encrypted object (or part, with the part's key): SSE-S3 keeps the MD5 of the
/// plaintext (as AWS does, so clients comparing it with their own MD5 keep working); SSE-C's
/// and SSE-KMS's are derived from it under the data key, so they reveal nothing about the
/// plaintext (AWS: "not an MD5 digest").
pub(crate) fn etag_digest(enc: &Encryption, data_key: &[u8; 32], md5: &Md5Digest) -> Md5Digest {
    match enc.mode {
        Mode::SseS3 { .. } => *md5,
        Mode::SseC { .. } | Mode::SseKms { .. } => format::opaque_etag_digest(data_key, md5),
    }
}

/// The store's master key for SSE-S3: 32 random bytes in a file of mode 0600, made on first
/// use; its id (the hex of the first 8 bytes of its SHA-256) is kept with every key it wraps.
/// The file may hold older keys on the lines after the first (rotation): new writes use the
/// first, reads find theirs by id.
pub struct MasterKey {
    pub(crate) id: String,
    key: [u8; 32],
    /// Keys rotated out, by id: they unwrap what they wrapped, and wrap nothing new.
    older: Vec<(String, [u8; 32])>,
}

impl Drop for MasterKey {
    fn drop(&mut self) {
        use zeroize::Zeroize;
        self.key.zeroize();
        for (_, k) in &mut self.older {
            k.zeroize();
        }
    }
}

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MasterKey")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// A master key's id: the hex of the first 8 bytes of its SHA-256.
fn key_id(key: &[u8; 32]) -> String {
    use sha2::Digest;
    let h = sha2::Sha256::digest(key);
    h.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// The default master key file, in the store's directory.
pub(crate) fn default_master_key_path(root: &Path) -> PathBuf {
    root.join("sse-master.key")
}

impl MasterKey {
    /// The key with this id: the current one or an older one.
    fn key_for(&self, id: &str) -> Option<&[u8; 32]> {
        if id == self.id {
            return Some(&self.key);
        }
        self.older.iter().find(|(i, _)| i == id).map(|(_, k)| k)
    }

    /// Read the keys in `path` (64 hex digits a line, the current one first; blank lines and
    /// `#` comments skipped), or make one there (mode 0600, synced) if the
    /// file does not exist. The new key is written whole to a file of its own and linked to
    /// `path` only then, so writers racing to make it (two first SSE-S3 PUTs) all end up with
    /// the one that was linked, and a crash never leaves a partial key behind.
    pub fn load_or_create(path: &Path) -> io::Result<Self> {
        match Self::load(path) {
            Ok(Some(key)) => Ok(key),
            Ok(None) => {
                let key = format::random_key().map_err(io::Error::other)?;
                let nonce: String = format::random_key()
                    .map_err(io::Error::other)?
                    .iter()
                    .take(8)
                    .map(|b| format!("{b:02x}"))
                    .collect();
                let tmp = path.with_extension(format!("new-{nonce}"));
                let made = (|| {
                    let mut f = fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .mode(0o600)
                        .open(&tmp)?;
                    let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
                    f.write_all(hex.as_bytes())?;
                    f.write_all(b"\n")?;
                    f.sync_all()?;
                    fs::hard_link(&tmp, path)
                })();
                let _ = fs::remove_file(&tmp);
                match made {
                    Ok(()) => {}
                    // Another writer linked its key first: that one is the key.
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                        return Self::load_or_create(path);
                    }
                    Err(e) => return Err(e),
                }
                if let Some(dir) = path.parent() {
                    super::files::sync_dir(dir)?;
                }
                Ok(Self::from_key(key))
            }
            Err(e) => Err(e),
        }
    }

    /// Read the keys in `path`, if it exists: refused (`InvalidData`, naming the file) when
    /// group or others may read or write it (as the SSE-KMS keyring is), or when it does not
    /// hold keys.
    pub fn load(path: &Path) -> io::Result<Option<Self>> {
        let what = "SSE-S3 master key file";
        let Some(text) = super::keyring::read_key_file(path, what)? else {
            return Ok(None);
        };
        Self::parse(&text).map(Some).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{what} {}: not 256-bit keys in hex, one a line (the current one first)",
                    path.display()
                ),
            )
        })
    }

    fn parse(text: &str) -> Option<Self> {
        let mut keys = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|hex| {
                if hex.len() != 64 {
                    return None;
                }
                let mut key = [0u8; 32];
                for (i, b) in key.iter_mut().enumerate() {
                    *b = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
                }
                Some((key_id(&key), key))
            });
        let (id, key) = keys.next()??;
        let older = keys.collect::<Option<Vec<_>>>()?;
        Some(Self { id, key, older })
    }

    fn from_key(key: [u8; 32]) -> Self {
        Self {
            id: key_id(&key),
            key,
            older: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    struct TestKeys<'a> {
        master: &'a MasterKey,
        keyring: Option<Keyring>,
    }

    impl KeySource for TestKeys<'_> {
        fn master_key(&self) -> S3Result<&MasterKey> {
            Ok(self.master)
        }
        fn keyring(&self) -> Option<&Keyring> {
            self.keyring.as_ref()
        }
    }

    fn keyring(default: &str, keys: &[(&str, u8)]) -> Keyring {
        let mut text = format!("default = \"{default}\"\n[keys]\n");
        for (id, byte) in keys {
            text.push_str(&format!(
                "{id} = \"{}\"\n",
                format!("{byte:02x}").repeat(32)
            ));
        }
        Keyring::parse(&text).unwrap()
    }

    fn kms(key_id: Option<&str>, context: Option<&str>) -> EncryptWith {
        EncryptWith::SseKms {
            key_id: key_id.map(str::to_owned),
            context: context.map(str::to_owned),
            bucket_key: false,
        }
    }

    #[test]
    fn kms_data_keys_come_back_only_under_their_keyring_key() {
        let dir = tempfile::tempdir().unwrap();
        let master = MasterKey::load_or_create(&dir.path().join("k")).unwrap();
        let keys = TestKeys {
            master: &master,
            keyring: Some(keyring("k1", &[("k1", 1), ("k2", 2)])),
        };
        // The default key, then a named one (by id and by key ARN).
        let (enc, key) = Encryption::new(&kms(None, None), &keys).unwrap();
        assert_eq!(enc.data_key(None, &keys).unwrap(), key);
        let info = enc.info();
        assert_eq!(
            info,
            EncryptionInfo::SseKms {
                key_id: Some("k1".into()),
                context: None,
                bucket_key: false
            }
        );
        let ctx = "eyJhIjoiYiJ9"; // {"a":"b"}
        let arn = "arn:aws:kms:us-east-1:111122223333:key/k2";
        let (enc2, key2) = Encryption::new(&kms(Some(arn), Some(ctx)), &keys).unwrap();
        assert_ne!(key, key2);
        assert_eq!(enc2.data_key(None, &keys).unwrap(), key2);
        assert!(matches!(&enc2.mode, Mode::SseKms { key_id, context, .. }
            if key_id == "k2" && context.as_deref() == Some(ctx)));

        // An unknown key, or no keyring at all: KMS.NotFoundException, nothing made.
        let e = Encryption::new(&kms(Some("k3"), None), &keys).unwrap_err();
        assert_eq!((e.code, e.status()), (S3ErrorCode::KmsNotFound, 400));
        let none = TestKeys {
            master: &master,
            keyring: None,
        };
        let e = Encryption::new(&kms(None, None), &none).unwrap_err();
        assert_eq!(e.code, S3ErrorCode::KmsNotFound);

        // The keyring's key under the same id changed: the unwrap fails.
        let changed = TestKeys {
            master: &master,
            keyring: Some(keyring("k1", &[("k1", 9), ("k2", 2)])),
        };
        assert_eq!(
            enc.data_key(None, &changed).unwrap_err().code,
            S3ErrorCode::InternalError
        );
        // The key removed from the keyring (or the keyring gone): 403, as S3 answers a
        // deleted KMS key.
        let removed = TestKeys {
            master: &master,
            keyring: Some(keyring("k2", &[("k2", 2)])),
        };
        assert_eq!(
            enc.data_key(None, &removed).unwrap_err().code,
            S3ErrorCode::AccessDenied
        );
        assert_eq!(
            enc.data_key(None, &none).unwrap_err().code,
            S3ErrorCode::AccessDenied
        );

        // An altered context, a context added or dropped, the wrapped key moved to another
        // object (another seed) or to another key id: all fail to unwrap.
        let mut altered = enc2.clone();
        if let Mode::SseKms { context, .. } = &mut altered.mode {
            *context = Some("eyJhIjoiYyJ9".into()); // {"a":"c"}
        }
        assert!(altered.data_key(None, &keys).is_err());
        let mut dropped = enc2.clone();
        if let Mode::SseKms { context, .. } = &mut dropped.mode {
            *context = None;
        }
        assert!(dropped.data_key(None, &keys).is_err());
        let mut added = enc.clone();
        if let Mode::SseKms { context, .. } = &mut added.mode {
            *context = Some(String::new());
        }
        assert!(added.data_key(None, &keys).is_err());
        let mut moved = enc2.clone();
        moved.seed = enc.seed;
        assert!(moved.data_key(None, &keys).is_err());
        let same_bytes = TestKeys {
            master: &master,
            keyring: Some(keyring("k1", &[("k1", 2), ("k2", 2)])),
        };
        let mut renamed = enc2.clone();
        if let Mode::SseKms { key_id, .. } = &mut renamed.mode {
            *key_id = "k1".into();
        }
        assert!(renamed.data_key(None, &same_bytes).is_err());

        // An SSE-C key for a KMS object: as for SSE-S3.
        let c = CustomerKey {
            key: [3; 32],
            key_md5: ferry_core::md5::md5(&[3; 32]),
        };
        assert_eq!(
            enc.data_key(Some(&c), &keys).unwrap_err().code,
            S3ErrorCode::InvalidRequest
        );
        // The ETag is not the MD5 of the data.
        let md5 = ferry_core::md5::md5(b"data");
        assert_ne!(etag_digest(&enc, &key, &md5), md5);
    }

    #[test]
    fn the_master_key_is_made_once_private_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k");
        let made = MasterKey::load_or_create(&path).unwrap();
        let mode = fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let again = MasterKey::load_or_create(&path).unwrap();
        assert_eq!((made.id.clone(), made.key), (again.id.clone(), again.key));
        assert_eq!(made.id.len(), 16);
        assert!(!format!("{made:?}").contains(&format!("{:02x}", made.key[0]).repeat(2)));
        fs::write(&path, "not a key").unwrap();
        assert!(MasterKey::load_or_create(&path).is_err());
    }

    #[test]
    fn a_rotated_master_key_still_unwraps_what_it_wrapped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k");
        let old = MasterKey::load_or_create(&path).unwrap();
        let keys = TestKeys {
            master: &old,
            keyring: None,
        };
        let (enc, key) = Encryption::new(&EncryptWith::SseS3, &keys).unwrap();
        // A new key on the first line, the old one kept below it.
        let old_line = fs::read_to_string(&path).unwrap();
        let new_line = "ab".repeat(32);
        fs::write(&path, format!("# rotated\n{new_line}\n\n{old_line}")).unwrap();
        let rotated = MasterKey::load_or_create(&path).unwrap();
        assert_ne!(rotated.id, old.id);
        let keys = TestKeys {
            master: &rotated,
            keyring: None,
        };
        assert_eq!(enc.data_key(None, &keys).unwrap(), key);
        // New writes are wrapped by the new key.
        let (fresh, _) = Encryption::new(&EncryptWith::SseS3, &keys).unwrap();
        assert!(matches!(&fresh.mode, Mode::SseS3 { key_id, .. } if *key_id == rotated.id));
        // Without the old key, the old object cannot be read.
        fs::write(&path, format!("{new_line}\n")).unwrap();
        let dropped = MasterKey::load_or_create(&path).unwrap();
        let keys = TestKeys {
            master: &dropped,
            keyring: None,
        };
        assert_eq!(
            enc.data_key(None, &keys).unwrap_err().code,
            S3ErrorCode::InternalError
        );
        // A bad line anywhere makes the file unusable.
        fs::write(&path, format!("{new_line}\nnot a key\n")).unwrap();
        assert!(MasterKey::load_or_create(&path).is_err());
    }

    #[test]
    fn writers_racing_to_make_the_master_key_all_get_the_same_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k");
        let ids: Vec<String> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| s.spawn(|| MasterKey::load_or_create(&path).unwrap().id.clone()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
        assert_eq!(MasterKey::load_or_create(&path).unwrap().id, ids[0]);
        // Only the key file is left.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn data_keys_come_back_only_with_the_right_key() {
        let dir = tempfile::tempdir().unwrap();
        let master = MasterKey::load_or_create(&dir.path().join("k")).unwrap();
        let other = MasterKey::load_or_create(&dir.path().join("other")).unwrap();
        let m = &TestKeys {
            master: &master,
            keyring: None,
        };
        let (enc, key) = Encryption::new(&EncryptWith::SseS3, m).unwrap();
        assert_eq!(enc.data_key(None, m).unwrap(), key);
        assert_eq!(
            enc.data_key(
                None,
                &TestKeys {
                    master: &other,
                    keyring: None
                }
            )
            .unwrap_err()
            .code,
            S3ErrorCode::InternalError
        );
        let c = CustomerKey {
            key: [3; 32],
            key_md5: ferry_core::md5::md5(&[3; 32]),
        };
        assert_eq!(
            enc.data_key(Some(&c), m).unwrap_err().code,
            S3ErrorCode::InvalidRequest
        );
        let (enc_c, key_c) = Encryption::new(&EncryptWith::SseC(c.clone()), m).unwrap();
        assert_eq!(enc_c.data_key(Some(&c), m).unwrap(), key_c);
        assert_eq!(
            enc_c.data_key(None, m).unwrap_err().code,
            S3ErrorCode::InvalidRequest
        );
        let wrong = CustomerKey {
            key: [4; 32],
            key_md5: ferry_core::md5::md5(&[4; 32]),
        };
        assert_eq!(
            enc_c.data_key(Some(&wrong), m).unwrap_err().code,
            S3ErrorCode::AccessDenied
        );
        // Two objects under one customer key get different data keys.
        let (_, key_c2) = Encryption::new(&EncryptWith::SseC(c.clone()), m).unwrap();
        assert_ne!(key_c, key_c2);
        assert_eq!(enc_c.info(), EncryptionInfo::SseC { key_md5: c.key_md5 });
    }
}
