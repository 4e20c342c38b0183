//! `ferry-load agent`: waits for a coordinator that knows the token, answers its clock
//! questions, runs its share of the coordinator's run on the runtime the run names, and
//! streams what each second recorded back as the run goes. One run at a time; after a run
//! (or a lost coordinator) it waits for the next.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{RecvTimeoutError, sync_channel};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::clock::unix_ns;
use super::link::{Event, Link, LinkSender};
use super::messages::{Chunk, Finished, ToAgent, ToCoordinator};
use super::wire::{Channel, Token, WireError, accept};
use crate::config::ProgressMode;
use crate::control::{Interval, Observer, RunControl};
use crate::report::{Prepared, RunReport};

/// Handshakes in progress at most; more connections are closed at once.
const MAX_HANDSHAKES: usize = 16;

/// How an agent runs.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// The shared token.
    pub token: Token,
    /// Where to write each run's own report (`<run>-agent<N>.json`), if anywhere.
    pub json_dir: Option<PathBuf>,
    /// How long the coordinator may stay silent (it sends a heartbeat every second).
    pub timeout: Duration,
    /// Test hook: this agent's clock reads this many nanoseconds ahead (negative: behind).
    pub clock_skew_ns: i64,
}

impl AgentOptions {
    /// The agent's clock (with the test skew), Unix nanoseconds.
    fn now_ns(&self) -> i64 {
        skewed_now_ns(self.clock_skew_ns)
    }
}

/// The clock read `skew_ns` ahead, Unix nanoseconds.
fn skewed_now_ns(skew_ns: i64) -> i64 {
    unix_ns().saturating_add(skew_ns)
}

/// Serve coordinators on `listener` until the process ends.
pub fn serve(listener: TcpListener, opts: AgentOptions) -> Result<(), String> {
    let opts = Arc::new(opts);
    let busy = Arc::new(AtomicBool::new(false));
    let handshakes = Arc::new(AtomicUsize::new(0));
    for conn in listener.incoming() {
        let stream = match conn {
            Ok(s) => s,
            Err(e) => {
                eprintln!("ferry-load agent: accept: {e}");
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        if handshakes.fetch_add(1, Ordering::SeqCst) >= MAX_HANDSHAKES {
            handshakes.fetch_sub(1, Ordering::SeqCst);
            continue;
        }
        let (opts, busy, handshakes) = (opts.clone(), busy.clone(), handshakes.clone());
        let spawned = std::thread::Builder::new()
            .name("ferry-load-agent".into())
            .spawn(move || connection(stream, &opts, &busy, &handshakes));
        if let Err(e) = spawned {
            eprintln!("ferry-load agent: cannot start a thread: {e}");
        }
    }
    Ok(())
}

fn connection(stream: TcpStream, opts: &AgentOptions, busy: &AtomicBool, handshakes: &AtomicUsize) {
    let peer = stream
        .peer_addr()
        .map_or_else(|_| "?".to_string(), |a| a.to_string());
    let ch = accept(stream, &opts.token);
    handshakes.fetch_sub(1, Ordering::SeqCst);
    let mut ch = match ch {
        Ok(ch) => ch,
        Err(e) => {
            eprintln!("ferry-load agent: coordinator {peer} turned away: {e}");
            return;
        }
    };
    // Only an authenticated coordinator learns that another one has us.
    if busy.swap(true, Ordering::SeqCst) {
        let _ = ch.send(&ToCoordinator::Failed {
            error: "busy with another coordinator's run".into(),
        });
        return;
    }
    eprintln!("ferry-load agent: coordinator {peer} connected");
    let done = || busy.store(false, Ordering::SeqCst);
    match session(ch, opts, &done) {
        Ok(()) => eprintln!("ferry-load agent: coordinator {peer} done"),
        Err(e) => eprintln!("ferry-load agent: coordinator {peer}: {e}"),
    }
    done();
}

/// One coordinator's session; `free` is called once the run is over, before its end is
/// reported, so that the coordinator's next run finds the agent free.
fn session(mut ch: Channel, opts: &AgentOptions, free: &dyn Fn()) -> Result<(), String> {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    ch.send(&ToCoordinator::Welcome {
        host,
        version: env!("CARGO_PKG_VERSION").into(),
    })
    .map_err(|e| e.to_string())?;
    ch.stream()
        .set_read_timeout(Some(opts.timeout))
        .map_err(|e| e.to_string())?;
    // Before the work, clock questions, answered here at once: nothing queues the answer.
    let work = loop {
        match ch.recv::<ToAgent>().map_err(|e| e.to_string())? {
            ToAgent::Clock => {
                let received_ns = opts.now_ns();
                ch.send(&ToCoordinator::Clock {
                    received_ns,
                    sent_ns: opts.now_ns(),
                })
                .map_err(|e| e.to_string())?;
            }
            ToAgent::Heartbeat => {}
            ToAgent::Work(w) => break w,
            ToAgent::Stop { .. } => return Ok(()),
            ToAgent::Start { .. } => return Err("told to start before any work".into()),
        }
    };
    let mut cfg = work.config;
    let share = cfg.share.ok_or("the work has no share")?;
    // The coordinator decides when to stop; the agent shows nothing.
    cfg.autoterm = None;
    cfg.progress = ProgressMode::Off;
    eprintln!(
        "ferry-load agent: run {}: {} as share {} of {}",
        work.run_id, cfg.workload, share.index, share.count
    );
    let (events_tx, events) = sync_channel(64);
    let link: Link<ToCoordinator> =
        Link::start(ch, 0, events_tx, opts.timeout).map_err(|e| e.to_string())?;
    let notes: Arc<Mutex<Vec<String>>> = Arc::default();
    let measured_notes = Arc::new(OnceLock::new());
    let observer = Streamer {
        tx: link.sender().ok_or("the link closed at once")?,
        clock_skew_ns: opts.clock_skew_ns,
        started_ns: OnceLock::new(),
        notes: notes.clone(),
        measured_notes: measured_notes.clone(),
    };
    let control = Arc::new(RunControl::new().with_gate().with_observer(observer));
    let run = {
        let (cfg, control) = (cfg.clone(), control.clone());
        std::thread::Builder::new()
            .name("ferry-load-agent-run".into())
            .spawn(move || crate::run::run_controlled(cfg, false, control))
            .map_err(|e| e.to_string())?
    };
    let mut lost = None;
    while !run.is_finished() {
        match events.recv_timeout(Duration::from_millis(100)) {
            Ok((_, Event::Msg(ToAgent::Start { at_unix_ns }))) => {
                let wait_ns = at_unix_ns.saturating_sub(opts.now_ns());
                if wait_ns < 0 {
                    let late = format!(
                        "started {:.1} ms after the coordinator's start instant",
                        -wait_ns as f64 / 1e6
                    );
                    notes.lock().unwrap_or_else(|e| e.into_inner()).push(late);
                }
                let wait = Duration::from_nanos(u64::try_from(wait_ns).unwrap_or(0));
                if let Some(g) = control.gate() {
                    g.open(Instant::now() + wait);
                }
            }
            Ok((_, Event::Msg(ToAgent::Stop { reason }))) => control.stop(reason),
            Ok((_, Event::Msg(_))) => {}
            Ok((_, Event::Lost(e))) => {
                control.stop(format!("the coordinator was lost: {e}"));
                lost.get_or_insert(e);
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                control.stop("the coordinator's link ended");
                lost.get_or_insert(WireError::Closed);
            }
        }
    }
    let result = run
        .join()
        .unwrap_or_else(|_| Err("the run panicked".into()));
    // The run's observer holds a sender of the link: gone, the link closes without waiting.
    drop(control);
    free();
    let outcome = match result {
        Ok(mut report) => {
            // The notes the results went with were sent; the cleanup's follow them.
            let sent = measured_notes.get().copied().unwrap_or(0);
            let cleanup_notes = report.notes.get(sent..).unwrap_or_default().to_vec();
            let mut notes = std::mem::take(&mut *notes.lock().unwrap_or_else(|e| e.into_inner()));
            report.notes.append(&mut notes);
            if let Some(dir) = &opts.json_dir {
                let path = dir.join(format!("{}-agent{}.json", work.run_id, share.index));
                match serde_json::to_string_pretty(&report) {
                    Ok(json) => {
                        if let Err(e) = std::fs::write(&path, json) {
                            report
                                .notes
                                .push(format!("agent: writing {}: {e}", path.display()));
                        }
                    }
                    Err(e) => report.notes.push(format!("agent: its JSON: {e}")),
                }
            }
            link.send(ToCoordinator::Done {
                cleanup_s: report.cleanup_s,
                notes: cleanup_notes,
            });
            Ok(summary_line(&report))
        }
        Err(e) => {
            link.send(ToCoordinator::Failed { error: e.clone() });
            Err(e)
        }
    };
    link.close();
    match (lost, outcome) {
        (Some(e), _) => Err(format!(
            "the coordinator was lost ({e}); the run was stopped"
        )),
        (None, Ok(summary)) => {
            eprintln!("ferry-load agent: run {}: {summary}", work.run_id);
            Ok(())
        }
        (None, Err(e)) => Err(format!("run {}: {e}", work.run_id)),
    }
}

fn summary_line(r: &RunReport) -> String {
    let t = r.total();
    format!(
        "{} operations, {:.1} MB, {} errors, {} throttled in {:.2}s",
        t.ops,
        t.bytes as f64 / 1e6,
        t.error_count(),
        t.throttled,
        r.elapsed_s
    )
}

/// Sends the run's progress to the coordinator: preparation done, each interval, then the end
/// of the measured phase (before the cleanup, so the coordinator need not wait for it).
struct Streamer {
    tx: LinkSender<ToCoordinator>,
    clock_skew_ns: i64,
    /// When the measured phase began, on this agent's clock.
    started_ns: OnceLock<i64>,
    /// The session's own notes (a late start).
    notes: Arc<Mutex<Vec<String>>>,
    /// How many of the run's notes went with the results.
    measured_notes: Arc<OnceLock<usize>>,
}

impl Observer for Streamer {
    fn prepared(&self, prepared: Option<&Prepared>) {
        self.tx.send(ToCoordinator::Ready {
            prepared: prepared.copied(),
        });
    }

    fn started(&self) {
        let _ = self.started_ns.set(skewed_now_ns(self.clock_skew_ns));
    }

    fn interval(&self, i: &Interval<'_>, control: &RunControl) {
        let chunk = Chunk {
            tick: i.tick,
            at: i.at,
            delta: i.delta.clone(),
            last: i.last,
        };
        if !self.tx.send(ToCoordinator::Interval(Box::new(chunk))) {
            // Results that cannot go anywhere are not worth measuring.
            control.stop("the coordinator does not take the results");
        }
    }

    fn measured(&self, report: &RunReport) {
        let _ = self.measured_notes.set(report.notes.len());
        let mut notes = report.notes.clone();
        notes.extend(self.notes.lock().unwrap_or_else(|e| e.into_inner()).clone());
        self.tx.send(ToCoordinator::Measured(Box::new(Finished {
            started_unix: report.started_unix,
            started_unix_ns: self.started_ns.get().copied(),
            elapsed_s: report.elapsed_s,
            cpu: report.cpu,
            notes,
        })));
    }
}

/// `ferry-load agent --listen ADDR`: bind, say where, serve.
pub fn listen(addr: &str, opts: AgentOptions) -> Result<(), String> {
    let addrs: Vec<SocketAddr> = super::resolve(addr, super::DEFAULT_PORT)?;
    let listener = TcpListener::bind(&addrs[..]).map_err(|e| format!("--listen {addr}: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    // Scripts (and the tests) read the address from this line.
    println!("ferry-load agent listening on {local}");
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    serve(listener, opts)
}
