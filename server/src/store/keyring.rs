//! The SSE-KMS keyring: named 256-bit keys in a local file, standing in for AWS KMS.
//!
//! The file (`ferry node --sse-kms-keyring PATH`) is TOML:
//!
//! ```toml
//! default = "k2"
//! [keys]
//! k1 = "<64 hex digits>"
//! k2 = "<64 hex digits>"
//! ```
//!
//! It must be readable by its owner only (no group or other permission bits, as ssh asks of
//! private keys), or the node refuses to start. Every SSE-KMS object keeps the id of the key
//! its data key is wrapped under: adding a key and making it the default rotates new writes
//! onto it while older objects keep reading through theirs; removing a key makes its objects
//! unreadable.
//!
//! A request names a key by its id or by a key ARN (`arn:aws:kms:REGION:ACCOUNT:key/ID`, the
//! region and account ignored); `alias/aws/s3` (and its alias ARN), the name of AWS's own S3
//! key, names the default key. Other aliases name nothing.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::{self, Read as _};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};
use serde::Deserialize;
use zeroize::{Zeroize as _, Zeroizing};

/// The longest key id a keyring takes.
pub const MAX_KEY_ID: usize = 256;
/// The most keys a keyring holds.
pub const MAX_KEYS: usize = 1024;
/// The largest key file read (a keyring, a master key file).
const MAX_FILE: u64 = 1 << 20;
/// The alias of AWS's managed S3 key: here, the keyring's default key.
const AWS_S3_ALIAS: &str = "alias/aws/s3";

/// The text of the key file `path` (named `what` in errors), zeroed when dropped; `None` if
/// it does not exist. Refused (`InvalidData`, naming the file) when group or others may read
/// or write it, or when it is larger than 1 MiB: both checked before a byte of it is read.
pub(crate) fn read_key_file(path: &Path, what: &str) -> io::Result<Option<Zeroizing<String>>> {
    let bad = |why: String| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{what} {}: {why}", path.display()),
        )
    };
    let mut file = match fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(bad(e.to_string())),
    };
    let meta = file.metadata().map_err(|e| bad(e.to_string()))?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(bad(format!(
            "permissions {mode:04o} are too open: it must be readable by its owner only \
             (chmod 600)"
        )));
    }
    if meta.len() > MAX_FILE {
        return Err(bad(format!("larger than {MAX_FILE} bytes")));
    }
    // Room for all of it at once: a growing buffer would leave copies behind, unzeroed.
    let mut text = Zeroizing::new(String::with_capacity(
        usize::try_from(meta.len()).unwrap_or(0) + 1,
    ));
    file.read_to_string(&mut text)
        .map_err(|e| bad(e.to_string()))?;
    Ok(Some(text))
}

/// Named 256-bit keys and which of them is the default. `Debug` prints the ids only; the
/// keys are zeroed when dropped.
pub struct Keyring {
    default: String,
    keys: BTreeMap<String, [u8; 32]>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyringFile {
    default: String,
    keys: BTreeMap<String, String>,
}

impl Keyring {
    /// Read the keyring in `path`: refused (`InvalidData`, with a message naming the file)
    /// when group or others may read or write it, or when it is not a keyring.
    pub fn load(path: &Path) -> io::Result<Self> {
        let what = "SSE-KMS keyring";
        let text = read_key_file(path, what)?.ok_or_else(|| {
            let gone = io::Error::from(io::ErrorKind::NotFound);
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{what} {}: {gone}", path.display()),
            )
        })?;
        Self::parse(&text).map_err(|why| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{what} {}: {why}", path.display()),
            )
        })
    }

    /// A keyring from the file's text.
    pub fn parse(text: &str) -> Result<Self, String> {
        // toml's own Display quotes the offending line, which may hold a key: the message
        // and the line number only.
        let mut file: KeyringFile = toml::from_str(text).map_err(|e| {
            let before = e
                .span()
                .map_or(&[][..], |s| &text.as_bytes()[..s.start.min(text.len())]);
            let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
            format!("line {line}: {}", e.message())
        })?;
        if file.keys.is_empty() {
            return Err("[keys] names no key".into());
        }
        if file.keys.len() > MAX_KEYS {
            return Err(format!("more than {MAX_KEYS} keys"));
        }
        let mut keys = BTreeMap::new();
        for (id, hex) in &mut file.keys {
            if !valid_id(id) {
                return Err(format!(
                    "key id {id:?}: 1 to {MAX_KEY_ID} letters, digits, '-', '_' or '.'"
                ));
            }
            let key = parse_hex(hex.trim())
                .ok_or_else(|| format!("key {id:?}: not a 256-bit key in hex (64 hex digits)"));
            hex.zeroize();
            keys.insert(id.clone(), key?);
        }
        if !keys.contains_key(&file.default) {
            return Err(format!(
                "the default key {:?} is not in [keys]",
                file.default
            ));
        }
        Ok(Self {
            default: file.default,
            keys,
        })
    }

    /// The id of the default key.
    pub fn default_id(&self) -> &str {
        &self.default
    }

    /// The key a request names (`None`: the default), as its keyring id: `400
    /// KMS.NotFoundException` when it names none of this keyring's keys.
    pub fn resolve(&self, requested: Option<&str>) -> S3Result<&str> {
        let Some(requested) = requested else {
            return Ok(&self.default);
        };
        let id = key_id_of(requested);
        match id {
            Some(AWS_S3_ALIAS) => Ok(&self.default),
            Some(id) => self
                .keys
                .get_key_value(id)
                .map(|(id, _)| id.as_str())
                .ok_or_else(|| not_found(requested)),
            None => Err(not_found(requested)),
        }
    }

    /// The key with this id.
    pub(crate) fn key(&self, id: &str) -> Option<&[u8; 32]> {
        self.keys.get(id)
    }
}

impl Drop for Keyring {
    fn drop(&mut self) {
        for key in self.keys.values_mut() {
            key.zeroize();
        }
    }
}

impl fmt::Debug for Keyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keyring")
            .field("default", &self.default)
            .field("ids", &self.keys.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// What a request's key id names: a plain id, a key ARN's id, or `alias/aws/s3` (plain or as
/// an alias ARN). `None`: a malformed ARN.
fn key_id_of(requested: &str) -> Option<&str> {
    let Some(rest) = requested.strip_prefix("arn:") else {
        return Some(requested);
    };
    // arn:PARTITION:kms:REGION:ACCOUNT:RESOURCE
    let mut parts = rest.splitn(5, ':');
    let (_partition, service, _region, _account, resource) = (
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
    );
    if service != "kms" {
        return None;
    }
    if resource == AWS_S3_ALIAS {
        return Some(AWS_S3_ALIAS);
    }
    resource.strip_prefix("key/")
}

/// S3's answer to a KMS key that does not exist.
pub(crate) fn not_found(requested: &str) -> S3Error {
    S3Error::with_message(
        S3ErrorCode::KmsNotFound,
        format!("Key '{requested}' does not exist"),
    )
}

fn valid_id(id: &str) -> bool {
    (1..=MAX_KEY_ID).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn parse_hex(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 {
        return None;
    }
    let mut key = [0u8; 32];
    for (i, b) in key.iter_mut().enumerate() {
        *b = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    const K1: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
    const K2: &str = "ff0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1eff";

    fn ring() -> Keyring {
        Keyring::parse(&format!(
            "default = \"k2\"\n[keys]\nk1 = \"{K1}\"\nk2 = \"{K2}\"\n"
        ))
        .unwrap()
    }

    #[test]
    fn keys_and_default_are_read() {
        let r = ring();
        assert_eq!(r.default_id(), "k2");
        assert_eq!(r.key("k1").unwrap()[31], 0x1f);
        assert_eq!(r.key("k2").unwrap()[0], 0xff);
        assert!(r.key("k3").is_none());
        let shown = format!("{r:?}");
        assert!(shown.contains("k1") && !shown.contains("0102"), "{shown}");
    }

    #[test]
    fn requests_name_keys_by_id_or_arn() {
        let r = ring();
        assert_eq!(r.resolve(None).unwrap(), "k2");
        assert_eq!(r.resolve(Some("k1")).unwrap(), "k1");
        assert_eq!(
            r.resolve(Some("arn:aws:kms:us-east-1:111122223333:key/k1"))
                .unwrap(),
            "k1"
        );
        assert_eq!(r.resolve(Some("alias/aws/s3")).unwrap(), "k2");
        assert_eq!(
            r.resolve(Some("arn:aws:kms:eu-west-1:111122223333:alias/aws/s3"))
                .unwrap(),
            "k2"
        );
        for missing in [
            "k3",
            "alias/other",
            "arn:aws:kms:us-east-1:111122223333:key/k3",
            "arn:aws:kms:us-east-1:111122223333:alias/k1",
            "arn:aws:s3:::k1",
            "arn:aws:kms",
        ] {
            let e = r.resolve(Some(missing)).unwrap_err();
            assert_eq!(e.code, S3ErrorCode::KmsNotFound, "{missing}");
            assert_eq!(e.status(), 400);
            assert_eq!(e.code.as_str(), "KMS.NotFoundException");
            assert!(e.message.contains(missing));
        }
    }

    #[test]
    fn malformed_keyrings_are_refused() {
        for bad in [
            String::new(),
            "default = \"k1\"\n[keys]\n".to_owned(),
            format!("default = \"k9\"\n[keys]\nk1 = \"{K1}\"\n"),
            format!("[keys]\nk1 = \"{K1}\"\n"),
            "default = \"k1\"\n[keys]\nk1 = \"abcd\"\n".to_owned(),
            format!("default = \"k1\"\n[keys]\nk1 = \"{}zz\"\n", &K1[..62]),
            format!("default = \"a/b\"\n[keys]\n\"a/b\" = \"{K1}\"\n"),
            format!("default = \"k1\"\nother = 1\n[keys]\nk1 = \"{K1}\"\n"),
            format!("default = \"k1\"\n[keys]\nk1 = 7\n{K1}"),
        ] {
            assert!(Keyring::parse(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn errors_do_not_quote_keys() {
        let e = Keyring::parse(&format!("default = \"k1\"\n[keys]\nk1 = {K1}\n")).unwrap_err();
        assert!(!e.contains(&K1[..16]), "{e}");
        assert!(e.starts_with("line 3"), "{e}");
    }

    #[test]
    fn a_keyring_others_may_read_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keyring.toml");
        fs::write(&path, format!("default = \"k1\"\n[keys]\nk1 = \"{K1}\"\n")).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        let e = Keyring::load(&path).unwrap_err();
        assert!(e.to_string().contains("too open"), "{e}");
        assert!(e.to_string().contains("keyring.toml"), "{e}");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(Keyring::load(&path).unwrap().default_id(), "k1");
        fs::write(&path, "default = 3").unwrap();
        assert!(Keyring::load(&path).is_err());
        assert!(Keyring::load(&dir.path().join("missing")).is_err());
    }
}
