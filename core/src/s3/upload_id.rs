//! Multipart upload ids that name the backend holding the upload: `<tag>~<backend's own id>`.
//!
//! A proxy gives its clients such ids (the tag, [`TAG_LEN`] lowercase hex digits, names one of
//! its backends), so that every step of an upload goes to the backend it started on. A node
//! takes them as well as its own ids (which never hold [`SEPARATOR`]) and uses the part after
//! the tag: the proxy can then pass a client's request on unchanged, although the id is in the
//! query the client signed.

use alloc::string::String;

/// Hex digits of a tag.
pub const TAG_LEN: usize = 8;

/// Between the tag and the backend's own id.
pub const SEPARATOR: char = '~';

/// `(tag, backend's own id)` of a tagged id: exactly [`TAG_LEN`] lowercase hex digits, then
/// [`SEPARATOR`], then a non-empty rest. `None` for anything else (an untagged id).
pub fn split(id: &str) -> Option<(&str, &str)> {
    let tag = id.get(..TAG_LEN)?;
    let own = id.get(TAG_LEN..)?.strip_prefix(SEPARATOR)?;
    let hex = tag.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    (hex && !own.is_empty()).then_some((tag, own))
}

/// The backend's own id in `id`: what follows a tag, or `id` itself when it has none.
pub fn own(id: &str) -> &str {
    split(id).map_or(id, |(_, own)| own)
}

/// The tag of the backend a proxy configures with `backend_id`: a hash of the id, so that it
/// says nothing of the configuration and needs no escaping.
pub fn tag(backend_id: &str) -> String {
    const DOMAIN: &[u8] = b"ferry upload backend\0";
    let mut material = alloc::vec::Vec::with_capacity(DOMAIN.len() + backend_id.len());
    material.extend_from_slice(DOMAIN);
    material.extend_from_slice(backend_id.as_bytes());
    let digest = super::sigv4::sha256(&material);
    let mut tag = String::with_capacity(TAG_LEN);
    for b in digest.iter().take(TAG_LEN / 2) {
        for nibble in [b >> 4, b & 0xf] {
            tag.push(char::from_digit(u32::from(nibble), 16).unwrap_or('0'));
        }
    }
    tag
}

/// Backend id `own` behind `tag`, unless it is behind that tag already.
pub fn join(tag: &str, own: &str) -> String {
    if split(own).is_some_and(|(t, _)| t == tag) {
        return own.into();
    }
    let mut id = String::with_capacity(tag.len() + 1 + own.len());
    id.push_str(tag);
    id.push(SEPARATOR);
    id.push_str(own);
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_shape_is_tagged() {
        let own = "0123456789abcdef0123456789abcdef";
        assert_eq!(split("deadbeef~x"), Some(("deadbeef", "x")));
        assert_eq!(split("deadbeef~a~b"), Some(("deadbeef", "a~b")));
        for untagged in [
            own,
            "",
            "deadbeef",
            "deadbeef~",
            "DEADBEEF~x",
            "deadbee~x",
            "deadbeef0~x",
            "deadbeeg~x",
            "deadbeef-x",
            "deadbeé~x",
        ] {
            assert_eq!(split(untagged), None, "{untagged}");
            assert_eq!(self::own(untagged), untagged);
        }
        assert_eq!(self::own("deadbeef~a~b"), "a~b");
    }

    #[test]
    fn tags_are_short_stable_hex() {
        let t = tag("n1");
        // The first 4 bytes of SHA-256("ferry upload backend\0n1"): ids given before stay valid.
        assert_eq!(t, "3b4403d8");
        assert_eq!(split(&join(&t, "x")), Some((t.as_str(), "x")));
        assert_ne!(t, tag("n2"));
    }

    #[test]
    fn join_tags_once() {
        assert_eq!(join("deadbeef", "x"), "deadbeef~x");
        assert_eq!(split(&join("deadbeef", "x")), Some(("deadbeef", "x")));
        assert_eq!(join("deadbeef", "deadbeef~x"), "deadbeef~x");
        // Another backend's tag is part of an id, as any other byte.
        assert_eq!(join("deadbeef", "0badf00d~x"), "deadbeef~0badf00d~x");
    }
}
