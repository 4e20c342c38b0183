//! Clock offsets between a coordinator and its agents, measured as NTP does: a few round
//! trips, each giving an offset whose error is at most half its round trip, and the one with
//! the shortest round trip kept.

use std::time::{SystemTime, UNIX_EPOCH};

/// Round trips measured per agent.
pub const ROUNDS: usize = 8;

/// Nanoseconds since the Unix epoch on this machine's clock (0 before 1970, saturating).
pub fn unix_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// One round trip, nanoseconds: sent (`t0`) and answered (`t3`) on the coordinator's clock,
/// received (`t1`) and answered (`t2`) on the agent's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoundTrip {
    /// The coordinator sent its question.
    pub t0: i64,
    /// The agent received it.
    pub t1: i64,
    /// The agent sent its answer.
    pub t2: i64,
    /// The coordinator received the answer.
    pub t3: i64,
}

impl RoundTrip {
    /// The agent's clock minus the coordinator's, as this round trip sees it.
    pub fn offset_ns(&self) -> i64 {
        ((self.t1 - self.t0) + (self.t2 - self.t3)) / 2
    }

    /// Time on the network both ways (the agent's own time taken out); the offset is right
    /// within half of it.
    pub fn delay_ns(&self) -> i64 {
        ((self.t3 - self.t0) - (self.t2 - self.t1)).max(0)
    }
}

/// An agent's clock offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Offset {
    /// The agent's clock minus the coordinator's, nanoseconds.
    pub offset_ns: i64,
    /// The round trip it was measured with, nanoseconds (the offset's error is at most half).
    pub round_trip_ns: i64,
}

/// The offset of the round trip with the shortest delay (`None` without any).
pub fn estimate(trips: &[RoundTrip]) -> Option<Offset> {
    trips.iter().min_by_key(|t| t.delay_ns()).map(|t| Offset {
        offset_ns: t.offset_ns(),
        round_trip_ns: t.delay_ns(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A round trip at coordinator time `at` to an agent `skew` ahead, `out` and `back` ns on
    /// the network, `busy` ns in the agent.
    fn trip(at: i64, skew: i64, out: i64, busy: i64, back: i64) -> RoundTrip {
        RoundTrip {
            t0: at,
            t1: at + out + skew,
            t2: at + out + busy + skew,
            t3: at + out + busy + back,
        }
    }

    #[test]
    fn symmetric_trips_give_the_offset_exactly() {
        let t = trip(1_000, 200_000_000, 50_000, 7_000, 50_000);
        assert_eq!(t.offset_ns(), 200_000_000);
        assert_eq!(t.delay_ns(), 100_000);
    }

    #[test]
    fn the_shortest_trip_wins_and_the_error_is_within_half_of_it() {
        let skew = -35_000_000;
        let trips = [
            trip(0, skew, 9_000_000, 1_000, 100_000),
            trip(10, skew, 300_000, 1_000, 200_000),
            trip(20, skew, 100_000, 1_000, 5_000_000),
        ];
        let e = estimate(&trips).unwrap();
        assert_eq!(e.round_trip_ns, 500_000);
        assert!((e.offset_ns - skew).abs() <= e.round_trip_ns / 2, "{e:?}");
        for t in &trips {
            assert!(
                (t.offset_ns() - skew).abs() <= t.delay_ns() / 2 + 1,
                "{t:?}"
            );
        }
        assert_eq!(estimate(&[]), None);
    }
}
