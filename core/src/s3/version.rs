//! Object version ids and bucket versioning states.
//!
//! A Ferry version id is 16 lowercase hex digits: the bitwise inverse of the version's
//! sequence number (a store-wide counter of microseconds that only grows), so that newer
//! versions sort first as strings, as AWS lists them. `null` is the version of an object
//! written while its bucket was unversioned or versioning was suspended.

use core::fmt;

use super::{S3Error, S3ErrorCode, S3Result};

/// Length of a non-null version id.
pub const VERSION_ID_LEN: usize = 16;

/// An object version: `null`, or a sequence number (larger: newer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VersionId {
    /// The null version.
    Null,
    /// A version written while versioning was enabled.
    Seq(u64),
}

impl VersionId {
    /// Parse a `versionId` parameter (or `<VersionId>`): `null`, or a Ferry id; anything else
    /// is `InvalidArgument` ("Invalid version id specified"), as AWS answers a malformed id.
    pub fn parse(s: &str) -> S3Result<Self> {
        let invalid =
            || S3Error::with_message(S3ErrorCode::InvalidArgument, "Invalid version id specified");
        if s == "null" {
            return Ok(Self::Null);
        }
        if s.len() != VERSION_ID_LEN
            || !s
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err(invalid());
        }
        u64::from_str_radix(s, 16)
            .map(|inv| Self::Seq(!inv))
            .map_err(|_| invalid())
    }

    /// Whether this is the null version.
    pub fn is_null(self) -> bool {
        self == Self::Null
    }

    /// Its order among a key's versions, for a non-null version (larger: newer).
    pub fn seq(self) -> Option<u64> {
        match self {
            Self::Null => None,
            Self::Seq(s) => Some(s),
        }
    }
}

impl fmt::Display for VersionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Null => f.write_str("null"),
            Self::Seq(seq) => write!(f, "{:016x}", !seq),
        }
    }
}

/// A bucket's versioning state (`<VersioningConfiguration><Status>`). A bucket that never
/// had one is unversioned; once set, it can only move between these two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Versioning {
    /// Every write creates a new version.
    Enabled,
    /// Writes replace the null version; older versions are kept.
    Suspended,
}

impl Versioning {
    /// `Enabled` / `Suspended`, as in the XML and as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Enabled => "Enabled",
            Self::Suspended => "Suspended",
        }
    }

    /// The state `s` names (exactly as AWS spells it); `None` otherwise.
    pub fn parse(s: &[u8]) -> Option<Self> {
        match s {
            b"Enabled" => Some(Self::Enabled),
            b"Suspended" => Some(Self::Suspended),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn ids_round_trip_and_newer_sorts_first() {
        for seq in [0, 1, 1_700_000_000_000_000, u64::MAX] {
            let id = VersionId::Seq(seq).to_string();
            assert_eq!(id.len(), VERSION_ID_LEN);
            assert_eq!(VersionId::parse(&id).unwrap(), VersionId::Seq(seq));
        }
        let older = VersionId::Seq(100).to_string();
        let newer = VersionId::Seq(101).to_string();
        assert!(newer < older);
        assert_eq!(VersionId::parse("null").unwrap(), VersionId::Null);
        assert_eq!(VersionId::Null.to_string(), "null");
    }

    #[test]
    fn malformed_ids_are_invalid_arguments() {
        for bad in [
            "",
            "NULL",
            "3HL4kqtJlcpXroDTDmJ",
            "0123456789abcdeF",
            "0123456789abcde",
            "0123456789abcdef0",
            "+123456789abcdef",
        ] {
            assert_eq!(
                VersionId::parse(bad).unwrap_err().code,
                S3ErrorCode::InvalidArgument,
                "{bad}"
            );
        }
    }

    #[test]
    fn versioning_states() {
        assert_eq!(Versioning::parse(b"Enabled"), Some(Versioning::Enabled));
        assert_eq!(Versioning::parse(b"Suspended"), Some(Versioning::Suspended));
        assert_eq!(Versioning::parse(b"enabled"), None);
        assert_eq!(Versioning::Suspended.as_str(), "Suspended");
    }
}
