//! What only the cluster may ask a node: Ferry's own `x-ferry-*` headers and query parameters
//! (placing a version by id, dating a write, fencing a bucket, reading an SSE-KMS encryption
//! context, telling a node the client's address and transport), sealed with a MAC under a key
//! that a cluster's nodes, proxies and `ferry rebalance` share.
//!
//! A node takes such a header or parameter only in a request that carries a valid seal
//! ([`header::X_FERRY_CLUSTER_AUTH`]): an HMAC-SHA256 under one of the cluster keys over the
//! method, the request-target (path and raw query, as sent), every `x-ferry-*` header and a
//! timestamp within [`WINDOW_SECS`] of the node's clock. A user's signature, a bucket's ownership
//! or a source address never stand in for it: anyone may own a bucket, add a header to a
//! presigned URL, or share an address.
//!
//! The string the MAC covers:
//!
//! ```text
//! FERRY-CLUSTER-HMAC-SHA256\n
//! <unix seconds>\n
//! <METHOD>\n
//! <request-target>\n
//! <name>:<value>\n        (each x-ferry-* header but the seal: name lowercased, value trimmed,
//!                          sorted by name, repeated names in their order)
//! ```
//!
//! and the seal is `x-ferry-cluster-auth: FERRY1 <unix seconds> <64 hex digits>`.
//!
//! Keys: 32 random bytes each, written as 64 hex digits a line. The first key seals; every key
//! verifies, so a key is rotated without a moment where nodes and proxies disagree: add the new
//! key second everywhere, then first everywhere, then remove the old one.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::fmt::Write as _;

use hmac::Mac as _;
use subtle::ConstantTimeEq as _;
use zeroize::Zeroizing;

use super::sigv4::key::HmacSha256;
use crate::http::Header;
use crate::s3::header;

/// How far a seal's time may be from the verifier's clock, either way, in seconds: the bound
/// on replaying a sealed request (the nodes' and proxies' clocks must agree this well).
pub const WINDOW_SECS: i64 = 300;
/// The most keys a key list holds (rotation needs two).
pub const MAX_KEYS: usize = 8;

const SCHEME: &str = "FERRY1";
const ALGORITHM: &str = "FERRY-CLUSTER-HMAC-SHA256";

/// Whether `name` is one of Ferry's own headers or query parameters (`x-ferry-*`, any case).
pub fn is_internal(name: &str) -> bool {
    name.len() >= header::X_FERRY_PREFIX.len()
        && name.as_bytes()[..header::X_FERRY_PREFIX.len()]
            .eq_ignore_ascii_case(header::X_FERRY_PREFIX.as_bytes())
}

/// A cluster key: 32 bytes, zeroed when dropped, and its HMAC state keyed once (what every seal
/// starts from: two of a small request's four SHA-256 blocks); `Debug` prints neither.
#[derive(Clone)]
pub struct ClusterKey {
    bytes: Zeroizing<[u8; 32]>,
    keyed: HmacSha256,
}

impl fmt::Debug for ClusterKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClusterKey(..)")
    }
}

impl ClusterKey {
    /// The key of these bytes (from a system random source: core draws no randomness).
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        let bytes = Zeroizing::new(bytes);
        let keyed = <HmacSha256 as hmac::KeyInit>::new_from_slice(bytes.as_slice())
            .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
        Self { bytes, keyed }
    }

    /// The key as a key file's line: 64 lowercase hex digits (ASCII), zeroed when dropped.
    pub fn to_hex(&self) -> Zeroizing<[u8; 64]> {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = Zeroizing::new([0u8; 64]);
        for (pair, b) in out.chunks_exact_mut(2).zip(self.bytes.iter()) {
            pair[0] = DIGITS[usize::from(b >> 4)];
            pair[1] = DIGITS[usize::from(b & 15)];
        }
        out
    }

    fn mac(&self) -> HmacSha256 {
        self.keyed.clone()
    }
}

/// Why a request's seal was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SealError {
    /// `x-ferry-*` headers or parameters without a seal.
    Missing,
    /// The verifier has no cluster key: it takes no cluster requests.
    NoKey,
    /// The seal header is not `FERRY1 <time> <hex>`, or is repeated.
    Malformed,
    /// The seal's time is more than [`WINDOW_SECS`] from the verifier's clock.
    Expired,
    /// No key gives this MAC: another cluster's key, or the request changed.
    Mismatch,
}

impl SealError {
    /// The message a refused client reads (nothing of the keys).
    pub fn message(self) -> &'static str {
        match self {
            Self::Missing => {
                "x-ferry-* headers and parameters are the cluster's own: this request carries \
                 no cluster seal"
            }
            Self::NoKey => {
                "x-ferry-* headers and parameters are the cluster's own, and this server has no \
                 cluster key"
            }
            Self::Malformed => "The cluster seal (x-ferry-cluster-auth) is malformed",
            Self::Expired => "The cluster seal is too old or too far in the future",
            Self::Mismatch => "The cluster seal does not match the request",
        }
    }
}

/// A cluster's keys: the first seals, all verify.
#[derive(Clone, Debug)]
pub struct ClusterKeys {
    keys: Vec<ClusterKey>,
}

impl ClusterKeys {
    /// One key.
    pub fn new(key: ClusterKey) -> Self {
        Self {
            keys: alloc::vec![key],
        }
    }

    /// Keys from a key file's text (or an environment variable's): one key of 64 hex digits a
    /// line (or separated by commas or spaces), `#` starting a comment; the first seals. At
    /// least one, at most [`MAX_KEYS`]. The error never quotes the text.
    pub fn parse(text: &str) -> Result<Self, &'static str> {
        let mut keys = Vec::new();
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("");
            for word in line
                .split(|c: char| c == ',' || c.is_ascii_whitespace())
                .filter(|w| !w.is_empty())
            {
                let mut bytes = Zeroizing::new([0u8; 32]);
                if word.len() != 64 || hex::decode_to_slice(word, bytes.as_mut_slice()).is_err() {
                    return Err("a cluster key is 64 hex digits");
                }
                if keys.len() == MAX_KEYS {
                    return Err("more than 8 cluster keys");
                }
                keys.push(ClusterKey::from_bytes(*bytes));
            }
        }
        if keys.is_empty() {
            return Err("no cluster key in it");
        }
        Ok(Self { keys })
    }

    /// The key that seals.
    pub fn current(&self) -> &ClusterKey {
        &self.keys[0]
    }

    /// The seal (the value of [`header::X_FERRY_CLUSTER_AUTH`]) of a request with `method`,
    /// `target` (path and raw query, as it goes on the wire) and `headers` (those that are not
    /// `x-ferry-*` are ignored, as is a seal already there), at `now` (unix seconds).
    pub fn seal<'h>(
        &self,
        method: &str,
        target: &str,
        headers: impl IntoIterator<Item = (&'h str, &'h [u8])>,
        now: i64,
    ) -> String {
        let mac = mac_of(self.current(), method, target, headers, now);
        let mut s = String::with_capacity(SCHEME.len() + 2 + 20 + 64);
        let _ = write!(s, "{SCHEME} {now} ");
        for b in mac {
            let _ = write!(s, "{b:02x}");
        }
        s
    }

    /// Check the seal of a request with `method`, `target` and `headers` at `now`: `Ok(true)`
    /// when it carries a valid one, `Ok(false)` when it has neither a seal nor anything the
    /// cluster alone may send (`internal_params`: whether its query has an `x-ferry-*`
    /// parameter), and the reason otherwise.
    pub fn check(
        keys: Option<&Self>,
        method: &str,
        target: &str,
        headers: &[Header<'_>],
        internal_params: bool,
        now: i64,
    ) -> Result<bool, SealError> {
        let mut seals = headers
            .iter()
            .filter(|h| h.name.eq_ignore_ascii_case(header::X_FERRY_CLUSTER_AUTH));
        let seal = seals.next();
        if seals.next().is_some() {
            return Err(SealError::Malformed);
        }
        let Some(seal) = seal else {
            if internal_params || headers.iter().any(|h| is_internal(h.name)) {
                return Err(SealError::Missing);
            }
            return Ok(false);
        };
        let keys = keys.ok_or(SealError::NoKey)?;
        let (time, want) = parse_seal(seal.value).ok_or(SealError::Malformed)?;
        if now.abs_diff(time) > WINDOW_SECS.unsigned_abs() {
            return Err(SealError::Expired);
        }
        let views = headers.iter().map(|h| (h.name, h.value));
        let mut found = false;
        for key in &keys.keys {
            let got = mac_of(key, method, target, views.clone(), time);
            // Every key is tried, in constant time each: which key matched is not timed.
            found |= bool::from(got.ct_eq(&want));
        }
        if found {
            Ok(true)
        } else {
            Err(SealError::Mismatch)
        }
    }
}

/// `FERRY1 <time> <64 hex>` read: the time and the MAC.
fn parse_seal(value: &[u8]) -> Option<(i64, [u8; 32])> {
    let text = core::str::from_utf8(value).ok()?.trim();
    let mut words = text.split(' ');
    if words.next()? != SCHEME {
        return None;
    }
    let time = words.next()?;
    if time.is_empty() || time.len() > 19 || !time.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let time: i64 = time.parse().ok()?;
    let hex_mac = words.next()?;
    if words.next().is_some() || hex_mac.len() != 64 {
        return None;
    }
    let mut mac = [0u8; 32];
    hex::decode_to_slice(hex_mac, &mut mac).ok()?;
    Some((time, mac))
}

fn mac_of<'h>(
    key: &ClusterKey,
    method: &str,
    target: &str,
    headers: impl IntoIterator<Item = (&'h str, &'h [u8])>,
    time: i64,
) -> [u8; 32] {
    let mut internal: Vec<(String, &[u8])> = headers
        .into_iter()
        .filter(|(n, _)| is_internal(n) && !n.eq_ignore_ascii_case(header::X_FERRY_CLUSTER_AUTH))
        .map(|(n, v)| (n.to_ascii_lowercase(), v.trim_ascii()))
        .collect();
    // Stable: repeated names keep their order.
    internal.sort_by(|a, b| a.0.cmp(&b.0));
    let mut mac = key.mac();
    let mut head = String::with_capacity(64 + target.len());
    let _ = write!(head, "{ALGORITHM}\n{time}\n{method}\n{target}\n");
    mac.update(head.as_bytes());
    for (n, v) in &internal {
        mac.update(n.as_bytes());
        mac.update(b":");
        mac.update(v);
        mac.update(b"\n");
    }
    mac.finalize().into_bytes().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(n: u8) -> ClusterKeys {
        ClusterKeys::new(ClusterKey::from_bytes([n; 32]))
    }

    fn h<'a>(name: &'a str, value: &'a str) -> Header<'a> {
        Header {
            name,
            value: value.as_bytes(),
        }
    }

    fn sealed(k: &ClusterKeys, method: &str, target: &str, hs: &[Header<'_>], now: i64) -> String {
        k.seal(method, target, hs.iter().map(|h| (h.name, h.value)), now)
    }

    #[test]
    fn a_sealed_request_verifies_and_any_change_does_not() {
        let k = keys(7);
        let hs = [
            h("x-ferry-version-id", "00000000000000ff"),
            h("Host", "n1"),
            h("X-Ferry-Last-Modified", "1700000000"),
        ];
        let seal = sealed(&k, "PUT", "/b/k?x=1", &hs, 1000);
        fn with<'a>(hs: &[Header<'a>], seal: &'a str) -> Vec<Header<'a>> {
            let mut v: Vec<Header<'a>> = hs.to_vec();
            v.push(Header {
                name: header::X_FERRY_CLUSTER_AUTH,
                value: seal.as_bytes(),
            });
            v
        }
        let check = |m: &str, t: &str, hs: &[Header<'_>], now: i64| {
            ClusterKeys::check(Some(&k), m, t, hs, false, now)
        };
        let all = with(&hs, &seal);
        assert_eq!(check("PUT", "/b/k?x=1", &all, 1000), Ok(true));
        // Headers that are not Ferry's are not covered; their order does not matter.
        let mut reordered = all.clone();
        reordered.swap(0, 2);
        reordered[1] = h("Host", "elsewhere");
        assert_eq!(check("PUT", "/b/k?x=1", &reordered, 1000), Ok(true));
        // Method, target, every x-ferry header's value, an added x-ferry header: each refused.
        assert_eq!(
            check("POST", "/b/k?x=1", &all, 1000),
            Err(SealError::Mismatch)
        );
        assert_eq!(
            check("PUT", "/b/k?x=2", &all, 1000),
            Err(SealError::Mismatch)
        );
        assert_eq!(
            check("PUT", "/b/j?x=1", &all, 1000),
            Err(SealError::Mismatch)
        );
        let mut changed = all.clone();
        changed[0] = h("x-ferry-version-id", "00000000000000fe");
        assert_eq!(
            check("PUT", "/b/k?x=1", &changed, 1000),
            Err(SealError::Mismatch)
        );
        let mut added = all.clone();
        added.push(h("x-ferry-client-ip", "10.0.0.1"));
        assert_eq!(
            check("PUT", "/b/k?x=1", &added, 1000),
            Err(SealError::Mismatch)
        );
        // Another cluster's key.
        assert_eq!(
            ClusterKeys::check(Some(&keys(8)), "PUT", "/b/k?x=1", &all, false, 1000),
            Err(SealError::Mismatch)
        );
        // The window, both ways.
        assert_eq!(check("PUT", "/b/k?x=1", &all, 1000 + WINDOW_SECS), Ok(true));
        assert_eq!(
            check("PUT", "/b/k?x=1", &all, 1001 + WINDOW_SECS),
            Err(SealError::Expired)
        );
        assert_eq!(
            check("PUT", "/b/k?x=1", &all, 999 - WINDOW_SECS),
            Err(SealError::Expired)
        );
    }

    #[test]
    fn internal_headers_and_parameters_need_a_seal() {
        let k = keys(1);
        let plain = [h("host", "n1"), h("x-amz-date", "x")];
        assert_eq!(
            ClusterKeys::check(Some(&k), "GET", "/b", &plain, false, 0),
            Ok(false)
        );
        assert_eq!(
            ClusterKeys::check(None, "GET", "/b", &plain, false, 0),
            Ok(false)
        );
        assert_eq!(
            ClusterKeys::check(Some(&k), "POST", "/b?x-ferry-fence=t", &plain, true, 0),
            Err(SealError::Missing)
        );
        for name in ["x-ferry-client-ip", "X-FERRY-anything", "x-ferry-"] {
            let hs = [h(name, "1")];
            assert_eq!(
                ClusterKeys::check(Some(&k), "GET", "/b", &hs, false, 0),
                Err(SealError::Missing),
                "{name}"
            );
        }
        // A node without a key takes no sealed request at all.
        let seal = sealed(&k, "GET", "/b", &[], 0);
        let hs = [h(header::X_FERRY_CLUSTER_AUTH, &seal)];
        assert_eq!(
            ClusterKeys::check(None, "GET", "/b", &hs, false, 0),
            Err(SealError::NoKey)
        );
        // A seal alone (nothing internal besides it) still verifies.
        assert_eq!(
            ClusterKeys::check(Some(&k), "GET", "/b", &hs, false, 0),
            Ok(true)
        );
        // Twice: refused, even when both are good.
        let twice = [
            h(header::X_FERRY_CLUSTER_AUTH, &seal),
            h(header::X_FERRY_CLUSTER_AUTH, &seal),
        ];
        assert_eq!(
            ClusterKeys::check(Some(&k), "GET", "/b", &twice, false, 0),
            Err(SealError::Malformed)
        );
    }

    #[test]
    fn malformed_seals_are_refused() {
        let k = keys(1);
        let good = sealed(&k, "GET", "/", &[], 5);
        let hex_part = String::from(good.rsplit(' ').next().unwrap_or_default());
        for bad in [
            String::new(),
            "FERRY1".into(),
            "FERRY1 5".into(),
            alloc::format!("FERRY2 5 {hex_part}"),
            alloc::format!("FERRY1 -5 {hex_part}"),
            alloc::format!("FERRY1 5 {}", &hex_part[1..]),
            alloc::format!("FERRY1 5 {hex_part} x"),
            alloc::format!("FERRY1 99999999999999999999 {hex_part}"),
            alloc::format!("FERRY1 5 {}", "zz".repeat(32)),
        ] {
            let hs = [h(header::X_FERRY_CLUSTER_AUTH, &bad)];
            assert_eq!(
                ClusterKeys::check(Some(&k), "GET", "/", &hs, false, 5),
                Err(SealError::Malformed),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn every_key_verifies_and_the_first_seals() {
        let a = ClusterKey::from_bytes([0xaa; 32]);
        let b = ClusterKey::from_bytes([0xbb; 32]);
        let hex = |k: &ClusterKey| String::from_utf8(k.to_hex().to_vec()).expect("ascii");
        let text = alloc::format!("# rotating\n{}\n{}  # old\n", hex(&b), hex(&a));
        let both = ClusterKeys::parse(&text).expect("two keys");
        let old = ClusterKeys::new(a);
        let new = ClusterKeys::new(b);
        for sealer in [&old, &new, &both] {
            let seal = sealed(sealer, "GET", "/", &[], 9);
            let hs = [h(header::X_FERRY_CLUSTER_AUTH, &seal)];
            assert_eq!(
                ClusterKeys::check(Some(&both), "GET", "/", &hs, false, 9),
                Ok(true)
            );
        }
        // `both` seals with its first key: the new one, which `old` alone does not know.
        let seal = sealed(&both, "GET", "/", &[], 9);
        let hs = [h(header::X_FERRY_CLUSTER_AUTH, &seal)];
        assert_eq!(
            ClusterKeys::check(Some(&new), "GET", "/", &hs, false, 9),
            Ok(true)
        );
        assert_eq!(
            ClusterKeys::check(Some(&old), "GET", "/", &hs, false, 9),
            Err(SealError::Mismatch)
        );
    }

    #[test]
    fn key_lists_parse_strictly() {
        let k = "0f".repeat(32);
        assert!(ClusterKeys::parse(&k).is_ok());
        assert!(ClusterKeys::parse(&alloc::format!("{k},{k} {k}")).is_ok());
        for bad in [
            String::new(),
            "# only a comment\n".into(),
            "0f".repeat(31),
            "0f".repeat(33),
            "zz".repeat(32),
            core::iter::repeat_n(k.as_str(), MAX_KEYS + 1)
                .collect::<Vec<_>>()
                .join("\n"),
        ] {
            let e = ClusterKeys::parse(&bad).expect_err("refused");
            assert!(!e.contains(&"0f".repeat(4)), "the error quotes no key");
        }
    }

    #[test]
    fn the_mac_is_over_the_documented_string() {
        // An independent computation of the documented string to sign, with hmac directly.
        let key = [3u8; 32];
        let k = ClusterKeys::new(ClusterKey::from_bytes(key));
        let hs = [
            h("X-Ferry-B", " 2 "),
            h("x-ferry-a", "1"),
            h("x-ferry-b", "0"),
        ];
        let seal = sealed(&k, "DELETE", "/b/k", &hs, 42);
        let want = {
            let mut m = <HmacSha256 as hmac::KeyInit>::new_from_slice(&key).expect("key");
            m.update(b"FERRY-CLUSTER-HMAC-SHA256\n42\nDELETE\n/b/k\nx-ferry-a:1\nx-ferry-b:2\nx-ferry-b:0\n");
            let mut s = String::new();
            for b in m.finalize().into_bytes() {
                let _ = write!(s, "{b:02x}");
            }
            s
        };
        assert_eq!(seal, alloc::format!("FERRY1 42 {want}"));
        assert!(
            is_internal("X-Ferry-Fence") && !is_internal("x-ferr") && !is_internal("x-amz-ferry-")
        );
    }
}
