//! Object keys that say what the object holds: `<prefix><id as 16 hex digits>-<size>`.
//!
//! A reader parses the id and the size back from the key and regenerates the expected bytes
//! from `(seed, id)` without any shared state with the writer.

/// The key of object `id` of `size` bytes under `prefix`.
pub fn object_key(prefix: &str, id: u64, size: u64) -> String {
    format!("{prefix}{id:016x}-{size}")
}

/// The `(id, size)` a key made by [`object_key`] encodes, whatever its prefix.
pub fn parse_object_key(key: &str) -> Option<(u64, u64)> {
    let (head, size) = key.rsplit_once('-')?;
    let hex = head.get(head.len().checked_sub(16)?..)?;
    if !hex.bytes().all(|b| b.is_ascii_hexdigit()) || !size.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((u64::from_str_radix(hex, 16).ok()?, size.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn examples() {
        assert_eq!(object_key("p/", 42, 1024), "p/000000000000002a-1024");
        assert_eq!(
            parse_object_key("p/000000000000002a-1024"),
            Some((42, 1024))
        );
        assert_eq!(parse_object_key("000000000000002a-0"), Some((42, 0)));
        for bad in [
            "",
            "-1",
            "2a-1",
            "p/000000000000002a-",
            "p/00000000000000zz-1",
            "x-+1",
        ] {
            assert_eq!(parse_object_key(bad), None, "{bad:?}");
        }
    }

    proptest! {
        #[test]
        fn round_trips(prefix in "[a-z0-9/_.-]{0,20}", id: u64, size: u64) {
            prop_assert_eq!(parse_object_key(&object_key(&prefix, id, size)), Some((id, size)));
        }
    }
}
