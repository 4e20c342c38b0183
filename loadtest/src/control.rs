//! How a run is driven from outside its workers: a start gate (an agent starts at the instant
//! its coordinator names), an early stop (a coordinator's, `--autoterm`'s), and an observer of
//! what each interval recorded (an agent sends it to its coordinator as the run goes).
//!
//! The control is shared between the run's tasks and plain threads (an agent's connection to
//! its coordinator): its waits go through [`Signal`], which wakes tasks of either runtime from
//! any thread.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use ferry_core::rt::Signal;
use serde::{Deserialize, Serialize};

use crate::autoterm::{Autoterm, AutotermSpec};
use crate::report::{Prepared, RunReport};
use crate::stats::Recorder;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding these locks; a poisoned one still holds valid data.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Where an interval's results go in the series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SeriesAt {
    /// The second of the run it is, from 0: a new one, or the last one again (a sliver of a
    /// second at the end of the run joins the second before it). Whatever step a series has
    /// coarsened to, this says which of its points takes the interval
    /// ([`crate::report::Series::add`]).
    pub index: usize,
    /// End of the interval, seconds since the start of the measured phase.
    pub t_s: f64,
    /// Length of the interval, seconds.
    pub dt_s: f64,
}

/// What one interval (about a second) of the measured phase recorded.
#[derive(Debug)]
pub struct Interval<'a> {
    /// The reporter's tick, from 1: the same tick of every agent covers the same second.
    pub tick: u64,
    /// Where it goes in the series; `None` for an empty sliver at the end, which adds no
    /// point.
    pub at: Option<SeriesAt>,
    /// What was recorded in it (only in it: totals are the sum of the intervals).
    pub delta: &'a Recorder,
    /// The measured phase is over: this is the last interval.
    pub last: bool,
}

impl Interval<'_> {
    /// Operations (counting in totals: parts are inside their uploads) and their bytes.
    pub fn counted(&self) -> (u64, u64) {
        counted(self.delta)
    }
}

/// Operations and bytes of `rec` that count in totals (parts are inside their uploads).
pub fn counted(rec: &Recorder) -> (u64, u64) {
    rec.entries()
        .filter(|(op, _, _)| op.counts_in_total())
        .fold((0, 0), |(n, b), (_, _, s)| (n + s.ops, b + s.bytes))
}

/// Something that wants to know how a run goes.
pub trait Observer: Send + Sync {
    /// Preparation is over (`prepared` says what it put, if the workload prepares); the
    /// measured phase starts once the gate opens.
    fn prepared(&self, _prepared: Option<&Prepared>) {}

    /// The measured phase begins now (the gate, if any, has opened and its instant passed).
    fn started(&self) {}

    /// An interval of the measured phase ended.
    fn interval(&self, _interval: &Interval<'_>, _control: &RunControl) {}

    /// The measured phase is over and every interval has been given: `report` is the run's
    /// result before its cleanup (which follows).
    fn measured(&self, _report: &RunReport) {}
}

/// Where the measured phase waits for its start.
#[derive(Debug, Default)]
pub struct StartGate {
    state: Mutex<Option<Result<Instant, String>>>,
    signal: Signal,
}

impl StartGate {
    /// Start the measured phase at `at` (at once if it has passed).
    pub fn open(&self, at: Instant) {
        lock(&self.state).get_or_insert(Ok(at));
        self.signal.set();
    }

    /// Do not start: the run ends after preparation, for `why`.
    pub fn cancel(&self, why: impl Into<String>) {
        lock(&self.state).get_or_insert(Err(why.into()));
        self.signal.set();
    }

    /// Wait until the gate opens (the start instant) or is cancelled (why).
    pub async fn wait(&self) -> Result<Instant, String> {
        self.signal.wait().await;
        lock(&self.state)
            .clone()
            .unwrap_or_else(|| Err("the start gate was set without a state".into()))
    }
}

/// How a run is driven from outside (see the module documentation).
pub struct RunControl {
    stop: AtomicBool,
    reason: Mutex<Option<String>>,
    gate: Option<StartGate>,
    observers: Vec<Box<dyn Observer>>,
}

impl std::fmt::Debug for RunControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunControl")
            .field("stopped", &self.stopped())
            .field("gate", &self.gate)
            .field("observers", &self.observers.len())
            .finish()
    }
}

impl Default for RunControl {
    fn default() -> Self {
        Self::new()
    }
}

impl RunControl {
    /// A run that starts at once after preparation and stops by its own limits.
    pub fn new() -> Self {
        Self {
            stop: AtomicBool::new(false),
            reason: Mutex::new(None),
            gate: None,
            observers: Vec::new(),
        }
    }

    /// The control of a local run with `autoterm` (`--autoterm`), if given.
    pub fn local(autoterm: Option<AutotermSpec>) -> Self {
        let mut c = Self::new();
        if let Some(spec) = autoterm {
            c = c.with_observer(AutotermObserver(Mutex::new(Autoterm::new(spec))));
        }
        c
    }

    /// The measured phase waits for [`RunControl::gate`] to open.
    pub fn with_gate(mut self) -> Self {
        self.gate = Some(StartGate::default());
        self
    }

    /// `o` is told how the run goes.
    pub fn with_observer(mut self, o: impl Observer + 'static) -> Self {
        self.observers.push(Box::new(o));
        self
    }

    /// The start gate, when the run has one.
    pub fn gate(&self) -> Option<&StartGate> {
        self.gate.as_ref()
    }

    /// End the measured phase now (operations in flight finish), for `why`; the first reason
    /// given is kept. Before the start, the run ends after preparation.
    pub fn stop(&self, why: impl Into<String>) {
        lock(&self.reason).get_or_insert_with(|| why.into());
        self.stop.store(true, Ordering::SeqCst);
        if let Some(g) = &self.gate {
            g.cancel("stopped before the start");
        }
    }

    /// Whether [`RunControl::stop`] was called.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Why the run was stopped, if it was.
    pub fn stop_reason(&self) -> Option<String> {
        lock(&self.reason).clone()
    }

    pub(crate) fn prepared(&self, p: Option<&Prepared>) {
        for o in &self.observers {
            o.prepared(p);
        }
    }

    pub(crate) fn started(&self) {
        for o in &self.observers {
            o.started();
        }
    }

    pub(crate) fn interval(&self, i: &Interval<'_>) {
        for o in &self.observers {
            o.interval(i, self);
        }
    }

    pub(crate) fn measured(&self, report: &RunReport) {
        for o in &self.observers {
            o.measured(report);
        }
    }
}

/// `--autoterm` in a local run: the detector fed with each full interval.
struct AutotermObserver(Mutex<Autoterm>);

impl Observer for AutotermObserver {
    fn interval(&self, i: &Interval<'_>, control: &RunControl) {
        // The last interval ends the run anyway; slivers say nothing of a second's rate.
        let Some(at) = i.at.filter(|_| !i.last) else {
            return;
        };
        let (ops, bytes) = i.counted();
        let dt = at.dt_s;
        if let Some(why) = lock(&self.0).push(ops, bytes, dt) {
            control.stop(why);
        }
    }
}
