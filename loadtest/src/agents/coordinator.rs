//! `ferry-load <workload> --agents A,B,C`: this process drives agents instead of loading the
//! endpoints itself.
//!
//! 1. Connect to every agent, authenticate (see [`super::wire`]) and measure its clock offset
//!    ([`super::clock`]); refuse to go on if any is unreachable, refuses the token, or has an
//!    offset above `--max-clock-offset`.
//! 2. Send each its share of the run ([`crate::config::Share`]: its own object ids and random
//!    streams, its part of `--ops`, `--objects` and `--rate`), and wait until every one has
//!    prepared.
//! 3. Name one start instant, on each agent's own clock (corrected by its offset).
//! 4. Merge the intervals the agents stream as they come: totals and series exactly (HDR
//!    histograms add; a point of the series is the sum of the agents' same second), progress
//!    summed over agents once every agent has sent a second, `--autoterm` on the merged
//!    throughput.
//! 5. An agent lost (its connection closed or silent past `--agent-timeout`) is reported at
//!    once; `--on-agent-loss stop` stops the others, `continue` goes on without it. Either way
//!    the results are complete when every agent has sent its last or is lost: nothing waits
//!    on a dead peer.
//! 6. The results go to the caller at once (with how long they took to arrive after the end of
//!    the measured phase); then the agents' cleanup is waited for, and timed.
//!
//! Each agent has two threads (its link); this thread merges. Memory: the run's totals, its
//! series (at most [`crate::report::MAX_SERIES_POINTS`] points), each agent's totals, and the
//! few seconds not yet received from every agent.

use std::collections::BTreeMap;
use std::net::TcpStream;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::time::{Duration, Instant};

use super::clock::{self, Offset, RoundTrip, unix_ns};
use super::link::{Event, Link};
use super::messages::{Finished, ToAgent, ToCoordinator, Work};
use super::wire::{Channel, Token, WireError, connect};
use crate::autoterm::Autoterm;
use crate::config::{LoadConfig, Share};
use crate::control::counted;
use crate::endpoint::canonical_url;
use crate::report::{AgentEntry, Prepared, RunReport, Series, SeriesPoint};
use crate::run::{Progress, run_info};
use crate::rusage::CpuUsage;
use crate::stats::{OpStats, Recorder};

/// What to do when an agent is lost mid-run (`--on-agent-loss`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum OnAgentLoss {
    /// Stop the other agents and report what was measured.
    #[default]
    Stop,
    /// Go on with the others.
    Continue,
}

/// How the coordinator drives its agents.
#[derive(Debug, Clone)]
pub struct CoordinatorOptions {
    /// The agents, `host[:port]` (port [`super::DEFAULT_PORT`] by default).
    pub agents: Vec<String>,
    /// The shared token.
    pub token: Token,
    /// Largest clock offset accepted.
    pub max_clock_offset: Duration,
    /// What an agent lost does to the run.
    pub on_loss: OnAgentLoss,
    /// How long an agent may stay silent (it sends a heartbeat every second).
    pub timeout: Duration,
}

/// How long connecting to an agent may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The start instant is at least this far ahead when it is sent.
const START_LEAD: Duration = Duration::from_secs(1);

/// Where an agent is in the run.
#[derive(Debug, Clone, PartialEq)]
enum State {
    Preparing,
    Ready,
    /// Its results are all in; it is cleaning up.
    Cleaning,
    Done,
    Failed(String),
    Lost(String),
}

struct Agent {
    address: String,
    host: String,
    offset: Offset,
    link: Option<Link<ToAgent>>,
    state: State,
    prepared: Option<Prepared>,
    finished: Option<Finished>,
    totals: Recorder,
    last_tick: u64,
    /// When it was lost, seconds into the measured phase.
    lost_at_s: Option<f64>,
    /// When its measured phase began, milliseconds after the instant named.
    start_ms: Option<f64>,
    /// When its last results arrived.
    measured_at: Option<Instant>,
    /// Its cleanup, seconds, once it is over (as it measured it).
    cleanup_s: Option<f64>,
    /// What its cleanup had to say.
    cleanup_notes: Vec<String>,
}

impl Agent {
    fn live(&self) -> bool {
        matches!(self.state, State::Preparing | State::Ready)
    }

    fn send(&self, msg: ToAgent) -> bool {
        self.link.as_ref().is_some_and(|l| l.send(msg))
    }

    /// `ev` from an agent cleaning up: the end of its cleanup, or its loss or failure (its
    /// results are in all the same).
    fn cleaned(&mut self, ev: Event<ToCoordinator>) {
        let note = match ev {
            Event::Msg(ToCoordinator::Done { cleanup_s, notes }) => {
                self.cleanup_s = cleanup_s;
                self.cleanup_notes = notes;
                None
            }
            Event::Msg(ToCoordinator::Failed { error }) => {
                Some(format!("failed during its cleanup: {error}"))
            }
            Event::Lost(e) => Some(format!(
                "lost during its cleanup ({e}): some of its objects may be left"
            )),
            Event::Msg(_) => return,
        };
        self.cleanup_notes.extend(note);
        self.state = State::Done;
    }
}

/// The agents' intervals of one second, until every running agent has sent its own.
#[derive(Default)]
struct Second {
    delta: Recorder,
    t_s: f64,
    dt_s: f64,
    last: bool,
}

/// Connect, authenticate, and measure the clock of the agent at `address`.
fn reach(address: &str, token: &Token) -> Result<(Channel, String, Offset), String> {
    let addrs = super::resolve(address, super::DEFAULT_PORT)?;
    let stream = addrs
        .iter()
        .find_map(|a| TcpStream::connect_timeout(a, CONNECT_TIMEOUT).ok())
        .ok_or_else(|| format!("cannot connect (within {} s)", CONNECT_TIMEOUT.as_secs()))?;
    let mut ch = connect(stream, token).map_err(|e| e.to_string())?;
    let host = match ch.recv::<ToCoordinator>() {
        Ok(ToCoordinator::Welcome { host, version }) => {
            if version != env!("CARGO_PKG_VERSION") {
                eprintln!(
                    "ferry-load: agent {address} is ferry-load {version}, this is {}",
                    env!("CARGO_PKG_VERSION")
                );
            }
            host
        }
        Ok(ToCoordinator::Failed { error }) => return Err(format!("refused: {error}")),
        Ok(other) => return Err(format!("unexpected first message {other:?}")),
        // A sealed frame that does not open: the agent does not hold our token.
        Err(WireError::Bad(_)) => {
            return Err("its answer does not open: it holds another token".into());
        }
        Err(e) => return Err(e.to_string()),
    };
    let mut trips = Vec::with_capacity(clock::ROUNDS);
    for _ in 0..clock::ROUNDS {
        let t0 = unix_ns();
        ch.send(&ToAgent::Clock).map_err(|e| e.to_string())?;
        let (t1, t2) = match ch.recv::<ToCoordinator>().map_err(|e| e.to_string())? {
            ToCoordinator::Clock {
                received_ns,
                sent_ns,
            } => (received_ns, sent_ns),
            other => return Err(format!("expected the clock, got {other:?}")),
        };
        trips.push(RoundTrip {
            t0,
            t1,
            t2,
            t3: unix_ns(),
        });
    }
    let offset = clock::estimate(&trips).ok_or("no clock round trip")?;
    Ok((ch, host, offset))
}

fn ms(ns: i64) -> f64 {
    ns as f64 / 1e6
}

/// Drive `opts.agents` through the run `cfg` describes; the merged report. `on_results` has it
/// as soon as every agent's results are in, before their cleanup is over.
pub fn coordinate(
    mut cfg: LoadConfig,
    opts: &CoordinatorOptions,
    on_results: impl FnOnce(&RunReport),
) -> Result<RunReport, String> {
    let (n, urls) = checked(&mut cfg, opts)?;

    // 1. Reach every agent at once.
    let channels = reach_all(opts)?;

    // 2. Give each its share.
    let (events_tx, events) = sync_channel(1024);
    let mut agents = hand_out(&cfg, n, urls.len(), channels, events_tx, opts)?;

    // 3, 4, 5: one loop until every agent has finished or is lost.
    let mut merge = Merge::new(&cfg, urls.len());
    merge.run(&mut agents, &events, opts)?;
    let Merge {
        progress,
        totals,
        series,
        notes,
        started,
        stopped_at,
        ..
    } = merge;
    progress.finish();
    let merged_at = Instant::now();
    let Some(started) = started else {
        close(&mut agents);
        return Err(did_not_start(&agents, &notes));
    };
    let end = measured_end(&cfg, started, stopped_at, &agents);
    let mut r = report(&cfg, n, urls, totals, series, &agents, notes);
    r.collection_s = end.map(|e| merged_at.saturating_duration_since(e).as_secs_f64());
    for (entry, a) in r.agents.iter_mut().zip(&agents) {
        entry.collection_s = end
            .zip(a.measured_at)
            .map(|(e, at)| at.saturating_duration_since(e).as_secs_f64());
    }
    on_results(&r);
    wait_for_cleanup(&mut r, &mut agents, &events, &progress);
    if cfg.cleanup {
        r.cleanup_s = Some(merged_at.elapsed().as_secs_f64());
    }
    close(&mut agents);
    Ok(r)
}

/// What `cfg` must be for `opts.agents` to share it: validated, its `--ca-cert` read (the agents
/// get the PEM); the number of agents and the endpoints' canonical URLs.
fn checked(cfg: &mut LoadConfig, opts: &CoordinatorOptions) -> Result<(u32, Vec<String>), String> {
    cfg.validate()?;
    let n = u32::try_from(opts.agents.len())
        .ok()
        .filter(|&n| n > 0 && n <= Share::MAX_COUNT)
        .ok_or_else(|| format!("--agents takes 1..={} agents", Share::MAX_COUNT))?;
    if cfg.workload.prepares() && cfg.objects < u64::from(n) {
        return Err(format!(
            "--objects {} cannot be shared by {n} agents: at least one each",
            cfg.objects
        ));
    }
    if let Some(p) = cfg.ca_cert.take() {
        let pem =
            std::fs::read_to_string(&p).map_err(|e| format!("--ca-cert {}: {e}", p.display()))?;
        cfg.ca_pem = Some(pem);
    }
    let urls = cfg
        .endpoints
        .iter()
        .map(|u| canonical_url(u))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((n, urls))
}

/// An agent reached: its address, its channel, its host name and its clock offset.
type Reached = (String, Channel, String, Offset);

/// Step 1: reach every agent at once ([`reach`]); every one, or why the run cannot start (an
/// agent unreachable, refusing, or with its clock offset above `--max-clock-offset`).
fn reach_all(opts: &CoordinatorOptions) -> Result<Vec<Reached>, String> {
    let reached: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = opts
            .agents
            .iter()
            .map(|a| s.spawn(|| reach(a, &opts.token)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("panicked".into())))
            .collect()
    });
    let mut problems = Vec::new();
    let mut channels = Vec::new();
    for (address, r) in opts.agents.iter().zip(reached) {
        match r {
            Ok((ch, host, offset)) => {
                eprintln!(
                    "agent {address} ({host}): clock offset {:+.3} ms (round trip {:.3} ms)",
                    ms(offset.offset_ns),
                    ms(offset.round_trip_ns)
                );
                let bound = i64::try_from(opts.max_clock_offset.as_nanos()).unwrap_or(i64::MAX);
                if offset.offset_ns.abs() > bound {
                    problems.push(format!(
                        "agent {address}: clock offset {:+.3} ms is above --max-clock-offset \
                         {} ms: synchronise the clocks (NTP, chrony) or raise the bound",
                        ms(offset.offset_ns),
                        opts.max_clock_offset.as_millis()
                    ));
                }
                channels.push((address.clone(), ch, host, offset));
            }
            Err(e) => problems.push(format!("agent {address}: {e}")),
        }
    }
    if !problems.is_empty() {
        // Dropping the channels closes them: the agents go back to waiting.
        return Err(format!(
            "the run cannot start:\n  {}",
            problems.join("\n  ")
        ));
    }
    Ok(channels)
}

/// Step 2: start each agent's link (its events to `events_tx`) and send it its share of `cfg`
/// (`n` agents, `endpoints` endpoints).
fn hand_out(
    cfg: &LoadConfig,
    n: u32,
    endpoints: usize,
    channels: Vec<Reached>,
    events_tx: SyncSender<(usize, Event<ToCoordinator>)>,
    opts: &CoordinatorOptions,
) -> Result<Vec<Agent>, String> {
    let run_id = run_id();
    let mut agents = Vec::new();
    for (i, (address, ch, host, offset)) in channels.into_iter().enumerate() {
        let link = Link::start(ch, i, events_tx.clone(), opts.timeout)
            .map_err(|e| format!("agent {address}: {e}"))?;
        agents.push(Agent {
            address,
            host,
            offset,
            link: Some(link),
            state: State::Preparing,
            prepared: None,
            finished: None,
            totals: Recorder::new(endpoints),
            last_tick: 0,
            lost_at_s: None,
            start_ms: None,
            measured_at: None,
            cleanup_s: None,
            cleanup_notes: Vec::new(),
        });
    }
    drop(events_tx);
    for (i, a) in agents.iter().enumerate() {
        let share = Share {
            index: i as u32,
            count: n,
        };
        let mut c = cfg.clone();
        c.share = Some(share);
        c.ops = cfg.ops.map(|o| share.part_of(o));
        if cfg.workload.prepares() {
            c.objects = share.part_of(cfg.objects);
        }
        c.rate = cfg.rate.map(|r| r / f64::from(n));
        c.autoterm = None;
        let work = Work {
            run_id: run_id.clone(),
            config: c,
        };
        a.send(ToAgent::Work(Box::new(work)));
    }
    Ok(agents)
}

/// Steps 3 to 5: what the loop over the agents' events keeps, from their shares handed out until
/// every agent has finished or is lost.
struct Merge {
    progress: Progress,
    autoterm: Option<Autoterm>,
    /// The endpoints' count (a [`Recorder`]'s size).
    endpoints: usize,
    totals: Recorder,
    series: Series,
    seconds: BTreeMap<u64, Second>,
    notes: Vec<String>,
    started: Option<Instant>,
    /// The start instant named, Unix nanoseconds of this clock.
    start_at: Option<i64>,
    stopping: bool,
    /// When the agents were told to stop after the start was named.
    stopped_at: Option<Instant>,
}

impl Merge {
    fn new(cfg: &LoadConfig, endpoints: usize) -> Self {
        Self {
            progress: Progress::new(cfg.progress),
            autoterm: cfg.autoterm.map(Autoterm::new),
            endpoints,
            totals: Recorder::new(endpoints),
            series: Series::default(),
            seconds: BTreeMap::new(),
            notes: Vec::new(),
            started: None,
            start_at: None,
            stopping: false,
            stopped_at: None,
        }
    }

    /// One loop until every agent has finished or is lost: each event merged ([`Self::event`]),
    /// a loss reported ([`Self::lose`]), the start named once every agent has prepared
    /// ([`Self::start_when_ready`]), the seconds every agent has sent shown
    /// ([`Self::complete_seconds`]).
    fn run(
        &mut self,
        agents: &mut [Agent],
        events: &Receiver<(usize, Event<ToCoordinator>)>,
        opts: &CoordinatorOptions,
    ) -> Result<(), String> {
        while agents.iter().any(Agent::live) {
            let (i, ev) = match events.recv_timeout(Duration::from_secs(1)) {
                Ok(ev) => ev,
                Err(RecvTimeoutError::Timeout) => continue,
                // Every link's reader has ended: whoever was still live is gone.
                Err(RecvTimeoutError::Disconnected) => {
                    for a in agents.iter_mut().filter(|a| a.live()) {
                        a.state = State::Lost("its connection ended".into());
                    }
                    break;
                }
            };
            if agents[i].state == State::Cleaning {
                agents[i].cleaned(ev);
                continue;
            }
            if let Some(why) = self.event(agents, i, ev)? {
                self.lose(agents, i, &why, opts.on_loss);
            }
            self.start_when_ready(agents);
            self.complete_seconds(agents);
        }
        Ok(())
    }

    /// Agent `i`'s event `ev` merged; why the agent is lost if it is.
    fn event(
        &mut self,
        agents: &mut [Agent],
        i: usize,
        ev: Event<ToCoordinator>,
    ) -> Result<Option<String>, String> {
        let loss = match ev {
            Event::Msg(ToCoordinator::Ready { prepared }) if agents[i].live() => {
                agents[i].state = State::Ready;
                agents[i].prepared = prepared;
                None
            }
            Event::Msg(ToCoordinator::Interval(chunk)) => {
                let a = &mut agents[i];
                a.totals.merge(&chunk.delta);
                a.last_tick = a.last_tick.max(chunk.tick);
                self.totals.merge(&chunk.delta);
                if let Some(at) = &chunk.at {
                    // By the second it is: the agent's own series may be at another step.
                    let point = SeriesPoint::from_interval(at.t_s, at.dt_s, &chunk.delta);
                    self.series
                        .add(at.index, &point)
                        .map_err(|e| format!("agent {}: {e}", a.address))?;
                }
                let endpoints = self.endpoints;
                let s = self.seconds.entry(chunk.tick).or_insert_with(|| Second {
                    delta: Recorder::new(endpoints),
                    ..Second::default()
                });
                s.delta.merge(&chunk.delta);
                if let Some(at) = chunk.at {
                    s.t_s = s.t_s.max(at.t_s);
                    if !chunk.last {
                        s.dt_s = s.dt_s.max(at.dt_s);
                    }
                }
                s.last |= chunk.last;
                None
            }
            Event::Msg(ToCoordinator::Measured(f)) if agents[i].live() => {
                let a = &mut agents[i];
                // Its reading less its offset: the offset's error cancels (the agent aimed
                // with the same offset), what is left is how late its timer woke it. (What an
                // agent says must not overflow here, however large.)
                a.start_ms = self.start_at.zip(f.started_unix_ns).map(|(at, began)| {
                    ms(began.saturating_sub(a.offset.offset_ns).saturating_sub(at))
                });
                a.state = State::Cleaning;
                a.finished = Some(*f);
                a.measured_at = Some(Instant::now());
                None
            }
            // Only if its results never said they were complete (its run went wrong).
            Event::Msg(ToCoordinator::Done { .. }) if agents[i].live() => {
                agents[i].state = State::Done;
                None
            }
            Event::Msg(ToCoordinator::Failed { error }) => {
                // Agents stopped before the start fail by design.
                let expected = self.stopping && self.started.is_none();
                let was_live = agents[i].live();
                agents[i].state = State::Failed(error.clone());
                (was_live && !expected).then_some(error)
            }
            Event::Msg(_) => None,
            Event::Lost(e) if agents[i].live() => Some(e.to_string()),
            Event::Lost(_) => None,
        };
        Ok(loss)
    }

    /// Agent `i` lost (`why`): said at once, noted, and the others stopped or not as `on_loss`
    /// says.
    fn lose(&mut self, agents: &mut [Agent], i: usize, why: &str, on_loss: OnAgentLoss) {
        let at_s = self
            .started
            .map(|t0| Instant::now().saturating_duration_since(t0).as_secs_f64());
        let when = match at_s {
            Some(s) => format!("{s:.1}s into the run"),
            None => "before the start".into(),
        };
        let a = &mut agents[i];
        a.lost_at_s = at_s;
        if a.live() {
            a.state = State::Lost(format!("{when}: {why}"));
        }
        let lost = format!("agent {} lost {when}: {why}", a.address);
        self.progress.finish();
        eprintln!("ferry-load: {lost}");
        let others = agents.iter().filter(|a| a.live()).count();
        match on_loss {
            OnAgentLoss::Stop if !self.stopping => {
                self.stopping = true;
                self.stopped_at = self.started.map(|_| Instant::now());
                for a in agents.iter().filter(|a| a.live()) {
                    a.send(ToAgent::Stop {
                        reason: lost.clone(),
                    });
                }
                self.notes.push(format!(
                    "{lost}; the run was stopped (--on-agent-loss stop)"
                ));
            }
            OnAgentLoss::Stop => self.notes.push(lost),
            OnAgentLoss::Continue => self.notes.push(format!(
                "{lost}; the run went on with {others} agents (--on-agent-loss continue)"
            )),
        }
    }

    /// Every agent that is still there has prepared: name the start.
    fn start_when_ready(&mut self, agents: &[Agent]) {
        if self.started.is_none()
            && !self.stopping
            && agents.iter().any(|a| a.state == State::Ready)
            && agents.iter().all(|a| a.state != State::Preparing)
        {
            let longest = agents
                .iter()
                .map(|a| a.offset.round_trip_ns)
                .max()
                .unwrap_or(0);
            let lead = START_LEAD.max(Duration::from_nanos(10 * longest.max(0) as u64));
            let at = unix_ns() + i64::try_from(lead.as_nanos()).unwrap_or(i64::MAX);
            for a in agents.iter().filter(|a| a.state == State::Ready) {
                a.send(ToAgent::Start {
                    at_unix_ns: at + a.offset.offset_ns,
                });
            }
            self.started = Some(Instant::now() + lead);
            self.start_at = Some(at);
        }
    }

    /// Seconds every running agent has sent: progress and --autoterm.
    fn complete_seconds(&mut self, agents: &[Agent]) {
        let running: Vec<u64> = agents
            .iter()
            .filter(|a| a.live())
            .map(|a| a.last_tick)
            .collect();
        let complete = running.iter().copied().min().unwrap_or(u64::MAX);
        while let Some(entry) = self.seconds.first_entry() {
            if *entry.key() > complete {
                break;
            }
            let s = entry.remove();
            let point = SeriesPoint::from_interval(s.t_s, s.dt_s, &s.delta);
            let present = agents
                .iter()
                .filter(|a| !matches!(a.state, State::Lost(_) | State::Failed(_)))
                .count();
            let what = format!(" {present} agents");
            // The sliver that ends the run says nothing per second (the summary follows).
            if s.dt_s > 0.0 {
                self.progress.show(&point, &what, &self.totals);
            }
            if let Some(at) = self.autoterm.as_mut().filter(|_| !s.last && !self.stopping) {
                let (ops, bytes) = counted(&s.delta);
                if let Some(why) = at.push(ops, bytes, s.dt_s) {
                    self.stopping = true;
                    self.stopped_at = Some(Instant::now());
                    for a in agents.iter().filter(|a| a.live()) {
                        a.send(ToAgent::Stop {
                            reason: why.clone(),
                        });
                    }
                    self.notes
                        .push(format!("stopped after {:.1}s: {why}", s.t_s));
                }
            }
        }
    }
}

/// Why a run whose start was never named did not start: each agent failed or lost, and the
/// notes.
fn did_not_start(agents: &[Agent], notes: &[String]) -> String {
    let why: Vec<String> = agents
        .iter()
        .filter_map(|a| match &a.state {
            State::Failed(e) | State::Lost(e) => Some(format!("agent {}: {e}", a.address)),
            _ => None,
        })
        .collect();
    let mut msg = format!("the run did not start:\n  {}", why.join("\n  "));
    if !notes.is_empty() {
        msg.push_str(&format!("\n  {}", notes.join("\n  ")));
    }
    msg
}

/// Send what is queued to every agent and close its link.
fn close(agents: &mut [Agent]) {
    for a in agents {
        if let Some(l) = a.link.take() {
            l.close();
        }
    }
}

/// The end of the measured phase: the named start plus the duration, or the stop, or (a run
/// that ends by `--ops`) the last agent's own end, whichever comes first.
fn measured_end(
    cfg: &LoadConfig,
    started: Instant,
    stopped_at: Option<Instant>,
    agents: &[Agent],
) -> Option<Instant> {
    let deadline = cfg.duration_limit().and_then(|d| started.checked_add(d));
    let own = agents
        .iter()
        .filter_map(|a| {
            let f = a.finished.as_ref()?;
            let s = a.start_ms.unwrap_or(0.0) / 1e3 + f.elapsed_s;
            // What an agent says must not panic here, however large.
            started.checked_add(Duration::try_from_secs_f64(s.max(0.0)).ok()?)
        })
        .max();
    [deadline, stopped_at, own].into_iter().flatten().min()
}

/// Wait until every agent whose results are in has cleaned up (or is lost: nothing waits on a
/// dead peer), a progress line a second; then each one's cleanup time and notes go into `r`.
fn wait_for_cleanup(
    r: &mut RunReport,
    agents: &mut [Agent],
    events: &Receiver<(usize, Event<ToCoordinator>)>,
    progress: &Progress,
) {
    let began = Instant::now();
    let n = agents.len();
    let mut shown = false;
    loop {
        let left = agents.iter().filter(|a| a.state == State::Cleaning).count();
        if left == 0 {
            break;
        }
        match events.recv_timeout(Duration::from_secs(1)) {
            Ok((i, ev)) if agents[i].state == State::Cleaning => agents[i].cleaned(ev),
            Ok(_) => {}
            Err(RecvTimeoutError::Timeout) => {
                progress.line(&format!(
                    "[cleanup {:>5.1}s] {left} of {n} agents still deleting what they wrote",
                    began.elapsed().as_secs_f64()
                ));
                shown = true;
            }
            // Every link's reader has ended.
            Err(RecvTimeoutError::Disconnected) => {
                for a in agents.iter_mut().filter(|a| a.state == State::Cleaning) {
                    a.cleaned(Event::Lost(WireError::Closed));
                }
            }
        }
    }
    if shown {
        progress.finish();
    }
    for (entry, a) in r.agents.iter_mut().zip(agents.iter()) {
        entry.cleanup_s = a.cleanup_s;
        r.notes.extend(
            a.cleanup_notes
                .iter()
                .map(|n| format!("agent {}: {n}", a.address)),
        );
    }
}

/// A run id for the agents' own files: the start time and a random part.
fn run_id() -> String {
    let mut r = [0u8; 4];
    let _ = ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut r);
    format!("{}-{}", unix_ns() / 1_000_000_000, hex::encode(r))
}

fn report(
    cfg: &LoadConfig,
    n: u32,
    urls: Vec<String>,
    totals: Recorder,
    series: Series,
    agents: &[Agent],
    mut notes: Vec<String>,
) -> RunReport {
    let mut info = run_info(cfg, &cfg.bucket_names(), false);
    info.concurrency = cfg.concurrency * n as usize;
    let mut r = RunReport::new(info, urls, &totals);
    r.set_size_classes(&cfg.size.classes(), &totals);
    r.set_series(series);
    let mut prepared: Option<Prepared> = None;
    let mut cpu = CpuUsage::default();
    let mut started = i64::MAX;
    for a in agents {
        if let Some(p) = a.prepared {
            let q = prepared.get_or_insert_with(Prepared::default);
            q.objects += p.objects;
            q.bytes += p.bytes;
            q.seconds = q.seconds.max(p.seconds);
        }
        if let Some(f) = &a.finished {
            r.elapsed_s = r.elapsed_s.max(f.elapsed_s);
            cpu.add(&f.cpu);
            started = started.min(f.started_unix);
            for note in &f.notes {
                // Why the coordinator stopped them is said once, below.
                if !note.starts_with("stopped after") {
                    notes.push(format!("agent {}: {note}", a.address));
                }
            }
        }
    }
    if r.elapsed_s == 0.0 {
        r.elapsed_s = r.series.last().map_or(0.0, |p| p.t_s);
    }
    r.started_unix = if started == i64::MAX { 0 } else { started };
    r.cpu = cpu;
    r.prepared = prepared;
    r.notes = notes;
    r.agents = agents
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let mut total = OpStats::default();
            for (op, _, s) in a.totals.entries() {
                if op.counts_in_total() {
                    total.merge(s);
                }
            }
            AgentEntry {
                address: a.address.clone(),
                host: a.host.clone(),
                share: i as u32,
                clock_offset_ms: ms(a.offset.offset_ns),
                round_trip_ms: ms(a.offset.round_trip_ns),
                start_ms: a.start_ms,
                elapsed_s: a
                    .finished
                    .as_ref()
                    .map(|f| f.elapsed_s)
                    .or(a.lost_at_s)
                    .unwrap_or(0.0),
                cpu: a
                    .finished
                    .as_ref()
                    .map_or_else(CpuUsage::default, |f| f.cpu),
                total,
                lost: match &a.state {
                    State::Lost(why) => Some(why.clone()),
                    State::Failed(why) => Some(format!("failed: {why}")),
                    _ => None,
                },
                collection_s: None,
                cleanup_s: None,
            }
        })
        .collect();
    r
}
