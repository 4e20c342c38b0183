//! What a coordinator and its agents say to each other (JSON inside sealed frames).

use serde::{Deserialize, Serialize};

use crate::config::LoadConfig;
use crate::control::SeriesAt;
use crate::report::Prepared;
use crate::rusage::CpuUsage;
use crate::stats::Recorder;

/// Messages that are only there to show the connection is alive.
pub trait Heartbeat {
    /// The heartbeat message.
    fn heartbeat() -> Self;
    /// Whether this is one.
    fn is_heartbeat(&self) -> bool;
}

/// Coordinator to agent.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "m", rename_all = "snake_case")]
pub enum ToAgent {
    /// Still here (every second when nothing else is sent).
    Heartbeat,
    /// What time is it on your clock? (One round trip of the offset measurement.)
    Clock,
    /// The run to prepare.
    Work(Box<Work>),
    /// Start the measured phase at this time of the agent's clock (Unix nanoseconds).
    Start {
        /// When, on the agent's clock.
        at_unix_ns: i64,
    },
    /// End the run now (before the start: after preparation).
    Stop {
        /// Why (for the agent's report).
        reason: String,
    },
}

/// A run for one agent: the whole run's configuration with this agent's share of it.
#[derive(Debug, Serialize, Deserialize)]
pub struct Work {
    /// Names the run in the agents' own JSON files.
    pub run_id: String,
    /// What to do (its `share` says which part is this agent's).
    pub config: LoadConfig,
}

/// Agent to coordinator.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "m", rename_all = "snake_case")]
pub enum ToCoordinator {
    /// Still here.
    Heartbeat,
    /// The first sealed message: who the agent is.
    Welcome {
        /// The agent machine's host name.
        host: String,
        /// Its ferry-load version.
        version: String,
    },
    /// The answer to [`ToAgent::Clock`]: when it arrived and when the answer left, Unix
    /// nanoseconds of the agent's clock.
    Clock {
        /// The question arrived.
        received_ns: i64,
        /// The answer left.
        sent_ns: i64,
    },
    /// Preparation is done; waiting for [`ToAgent::Start`].
    Ready {
        /// What preparation put.
        prepared: Option<Prepared>,
    },
    /// What an interval of the measured phase recorded.
    Interval(Box<Chunk>),
    /// The measured phase is over and every interval has been sent: the agent's results are
    /// complete. Its cleanup follows, then [`ToCoordinator::Done`].
    Measured(Box<Finished>),
    /// The run is over, cleanup included.
    Done {
        /// How long the cleanup took, seconds (none with `--keep-data`).
        cleanup_s: Option<f64>,
        /// What the cleanup has to say (deletes that failed, ...).
        notes: Vec<String>,
    },
    /// The run could not be done.
    Failed {
        /// Why.
        error: String,
    },
}

/// One interval of an agent's measured phase (see [`crate::control::Interval`]).
#[derive(Debug, Serialize, Deserialize)]
pub struct Chunk {
    /// The reporter's tick, from 1.
    pub tick: u64,
    /// Where it goes in the series.
    pub at: Option<SeriesAt>,
    /// What it recorded.
    pub delta: Recorder,
    /// The last interval of the run.
    pub last: bool,
}

/// The end of an agent's measured phase: what is not in its intervals.
#[derive(Debug, Serialize, Deserialize)]
pub struct Finished {
    /// Start of the measured phase, Unix seconds.
    pub started_unix: i64,
    /// The same instant, Unix nanoseconds of the agent's clock (as read when the measured
    /// phase began: the coordinator compares it with the instant it named).
    #[serde(default)]
    pub started_unix_ns: Option<i64>,
    /// Length of the measured phase, seconds.
    pub elapsed_s: f64,
    /// The agent's CPU time during it.
    pub cpu: CpuUsage,
    /// The agent's notes (a late start, a stop, ...; the cleanup's come with `Done`).
    pub notes: Vec<String>,
}

impl Heartbeat for ToAgent {
    fn heartbeat() -> Self {
        Self::Heartbeat
    }
    fn is_heartbeat(&self) -> bool {
        matches!(self, Self::Heartbeat)
    }
}

impl Heartbeat for ToCoordinator {
    fn heartbeat() -> Self {
        Self::Heartbeat
    }
    fn is_heartbeat(&self) -> bool {
        matches!(self, Self::Heartbeat)
    }
}
