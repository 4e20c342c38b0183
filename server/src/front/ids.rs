//! Request ids (`x-amz-request-id`).

use std::sync::atomic::{AtomicU64, Ordering};

/// Request ids: unique in the process (a counter, scrambled by a bijection so ids do not look
/// sequential), different across restarts (a random seed).
#[derive(Debug)]
pub(crate) struct RequestIds {
    seed: u64,
    next: AtomicU64,
}

impl RequestIds {
    /// Ids seeded from the system's randomness.
    pub(crate) fn new() -> Self {
        Self {
            seed: getrandom::u64().unwrap_or(0x5eed_f00d_cafe_d00d),
            next: AtomicU64::new(1),
        }
    }

    /// The next id: 16 upper-case hex digits.
    pub(crate) fn next(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        // Multiplying by an odd constant is a bijection on u64: distinct counters, distinct ids.
        format!("{:016X}", self.seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_distinct_hex() {
        let ids = RequestIds::new();
        let a = ids.next();
        let b = ids.next();
        assert_ne!(a, b);
        assert_eq!(a.len(), 16);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
    }
}
