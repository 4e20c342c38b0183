//! Signing keys: derivation, HMAC, and a small cache.
//!
//! A signing key depends only on (secret, date, region, service), so a server sees the same few
//! keys all day; caching them saves four HMACs per request. The cache is a plain bounded struct
//! the caller owns (`no_std`); with `std`, [`SharedSigningKeyCache`] wraps it in a mutex.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use hmac::{KeyInit as _, Mac as _};
use subtle::ConstantTimeEq as _;

use super::{CredentialScope, SCOPE_TERMINATOR, Signature};

pub(crate) type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// A derived SigV4 signing key (`kSigning`). `Debug` does not print it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SigningKey(pub [u8; 32]);

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SigningKey(..)")
    }
}

impl SigningKey {
    /// An HMAC-SHA256 instance keyed with this key (clone it to sign many messages).
    pub(crate) fn mac(&self) -> HmacSha256 {
        // HMAC accepts keys of any length.
        <HmacSha256 as hmac::KeyInit>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC takes any key length"))
    }
}

pub(crate) fn hmac_sha256(key: &[u8], data: &[u8]) -> [u8; 32] {
    let Ok(mut mac) = HmacSha256::new_from_slice(key) else {
        unreachable!("HMAC takes any key length")
    };
    mac.update(data);
    mac.finalize().into_bytes().into()
}

/// Derive `kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region), service), "aws4_request")`.
pub fn derive_signing_key(secret: &str, date: &str, region: &str, service: &str) -> SigningKey {
    let mut k_secret = Vec::with_capacity(4 + secret.len());
    k_secret.extend_from_slice(b"AWS4");
    k_secret.extend_from_slice(secret.as_bytes());
    let k_date = hmac_sha256(&k_secret, date.as_bytes());
    let k_region = hmac_sha256(&k_date, region.as_bytes());
    let k_service = hmac_sha256(&k_region, service.as_bytes());
    SigningKey(hmac_sha256(&k_service, SCOPE_TERMINATOR.as_bytes()))
}

/// The signature of a string to sign: `HMAC(kSigning, string_to_sign)`.
pub fn sign(key: &SigningKey, string_to_sign: &[u8]) -> Signature {
    Signature(hmac_sha256(&key.0, string_to_sign))
}

/// Where verification and signing get signing keys from.
pub trait KeyCache {
    /// The signing key for `access_key_id` with `secret` in `scope`, derived or remembered.
    fn signing_key(
        &mut self,
        access_key_id: &str,
        secret: &str,
        scope: &CredentialScope,
    ) -> SigningKey;
}

impl<T: KeyCache + ?Sized> KeyCache for &mut T {
    fn signing_key(&mut self, id: &str, secret: &str, scope: &CredentialScope) -> SigningKey {
        (**self).signing_key(id, secret, scope)
    }
}

/// No caching: derive every time.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoKeyCache;

impl KeyCache for NoKeyCache {
    fn signing_key(&mut self, _id: &str, secret: &str, scope: &CredentialScope) -> SigningKey {
        derive_signing_key(secret, &scope.date, &scope.region, &scope.service)
    }
}

struct Entry {
    access_key_id: String,
    // Kept so a rotated secret never hits a stale key.
    secret: String,
    scope: CredentialScope,
    key: SigningKey,
}

/// A bounded cache of signing keys keyed by (key id, date, region, service), owned by the caller.
///
/// When full, the oldest entry is replaced (keys change daily, so age is what matters).
pub struct SigningKeyCache {
    entries: Vec<Entry>,
    capacity: usize,
    next: usize,
}

impl fmt::Debug for SigningKeyCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKeyCache")
            .field("len", &self.entries.len())
            .field("capacity", &self.capacity)
            .finish()
    }
}

impl Default for SigningKeyCache {
    fn default() -> Self {
        Self::new(Self::DEFAULT_CAPACITY)
    }
}

impl SigningKeyCache {
    /// Entries kept by [`Default`].
    pub const DEFAULT_CAPACITY: usize = 64;

    /// A cache holding at most `capacity` keys (at least one).
    pub fn new(capacity: usize) -> Self {
        Self {
            entries: Vec::new(),
            capacity: capacity.max(1),
            next: 0,
        }
    }

    /// Number of cached keys.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn get(&self, id: &str, secret: &str, scope: &CredentialScope) -> Option<SigningKey> {
        self.entries
            .iter()
            .find(|e| {
                e.access_key_id == id
                    && e.scope == *scope
                    && same_secret(e.secret.as_bytes(), secret.as_bytes())
            })
            .map(|e| e.key)
    }

    fn insert(&mut self, id: &str, secret: &str, scope: &CredentialScope, key: SigningKey) {
        let entry = Entry {
            access_key_id: id.into(),
            secret: secret.into(),
            scope: scope.clone(),
            key,
        };
        // A rotated secret replaces its old entry rather than taking a second slot.
        if let Some(e) = self
            .entries
            .iter_mut()
            .find(|e| e.access_key_id == id && e.scope == *scope)
        {
            *e = entry;
        } else if self.entries.len() < self.capacity {
            self.entries.push(entry);
        } else if let Some(slot) = self.entries.get_mut(self.next) {
            *slot = entry;
            self.next = (self.next + 1) % self.capacity;
        }
    }
}

/// Constant-time equality of two secrets (only their lengths may leak).
///
/// The byte differences are OR-ed together and only the result goes through `subtle`:
/// `subtle`'s slice comparison puts an optimisation barrier on every byte.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    diff.ct_eq(&0).into()
}

impl KeyCache for SigningKeyCache {
    fn signing_key(&mut self, id: &str, secret: &str, scope: &CredentialScope) -> SigningKey {
        if let Some(k) = self.get(id, secret, scope) {
            return k;
        }
        let k = derive_signing_key(secret, &scope.date, &scope.region, &scope.service);
        self.insert(id, secret, scope, k);
        k
    }
}

/// A [`SigningKeyCache`] shared between threads (a mutex held only for the lookup and insert).
#[cfg(feature = "std")]
#[derive(Debug, Default)]
pub struct SharedSigningKeyCache(std::sync::Mutex<SigningKeyCache>);

#[cfg(feature = "std")]
impl SharedSigningKeyCache {
    /// A shared cache holding at most `capacity` keys.
    pub fn new(capacity: usize) -> Self {
        Self(std::sync::Mutex::new(SigningKeyCache::new(capacity)))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SigningKeyCache> {
        // A panic elsewhere cannot leave the cache inconsistent: every update is one assignment.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(feature = "std")]
impl KeyCache for &SharedSigningKeyCache {
    fn signing_key(&mut self, id: &str, secret: &str, scope: &CredentialScope) -> SigningKey {
        if let Some(k) = self.lock().get(id, secret, scope) {
            return k;
        }
        // Derive outside the lock.
        let k = derive_signing_key(secret, &scope.date, &scope.region, &scope.service);
        self.lock().insert(id, secret, scope, k);
        k
    }
}

#[cfg(feature = "std")]
impl KeyCache for SharedSigningKeyCache {
    fn signing_key(&mut self, id: &str, secret: &str, scope: &CredentialScope) -> SigningKey {
        (&*self).signing_key(id, secret, scope)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    fn scope(date: &str) -> CredentialScope {
        CredentialScope {
            date: date.into(),
            region: "us-east-1".into(),
            service: "s3".into(),
        }
    }

    #[test]
    fn cache_returns_the_derived_key_and_tracks_secret_changes() {
        let mut cache = SigningKeyCache::new(2);
        let s = scope("20130524");
        let k1 = cache.signing_key("id", "secret", &s);
        assert_eq!(
            k1,
            derive_signing_key("secret", "20130524", "us-east-1", "s3")
        );
        assert_eq!(cache.signing_key("id", "secret", &s), k1);
        assert_eq!(cache.len(), 1);
        let k2 = cache.signing_key("id", "rotated", &s);
        assert_ne!(k1, k2, "a new secret must not hit the old key");
        assert_eq!(cache.len(), 1, "the rotated secret replaced its entry");
        for d in ["20130525", "20130526", "20130527"] {
            let k = cache.signing_key("id", "secret", &scope(d));
            assert_eq!(k, derive_signing_key("secret", d, "us-east-1", "s3"));
        }
        assert_eq!(cache.len(), 2, "bounded");
        assert_eq!(format!("{k1:?}"), "SigningKey(..)");
    }

    #[cfg(feature = "std")]
    #[test]
    fn shared_cache_is_usable_from_threads() {
        let cache = std::sync::Arc::new(SharedSigningKeyCache::new(8));
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let cache = cache.clone();
                std::thread::spawn(move || {
                    let s = scope(if i % 2 == 0 { "20130524" } else { "20130525" });
                    (&*cache).signing_key("id", "secret", &s)
                })
            })
            .collect();
        for (i, h) in handles.into_iter().enumerate() {
            let d = if i % 2 == 0 { "20130524" } else { "20130525" };
            assert_eq!(
                h.join().expect("thread"),
                derive_signing_key("secret", d, "us-east-1", "s3")
            );
        }
    }
}
