//! Reloading the proxy's configuration while it runs (SIGHUP, `POST /admin/reload`,
//! [`ProxyHandle::reload`](super::ProxyHandle::reload)).
//!
//! The configuration is read again from its [`ReloadSource`] and checked whole — parsed,
//! validated, every backend URL resolved, every `ca_cert` loaded — on the blocking pool, before
//! anything changes; a configuration that fails any check is refused, the one in use kept, and
//! the reason logged at `warn` (and answered to the admin endpoint). A good one replaces the
//! [`Live`] snapshot in one step: requests already running finish on the snapshot they
//! started with, new ones see the new one whole.
//!
//! What reloads: the backends (added, removed, their URL, kind, auth, keys, region, TLS
//! options), their weights and the layouts, and the per-backend settings (connect and I/O
//! timeouts, connection and in-flight limits, retry window). A backend whose configuration,
//! address and trust anchors are unchanged keeps its [`Backend`] — its pooled connections,
//! health and counters; a new or changed one gets a fresh one (given the existing buckets and
//! their settings before the swap, then probed and checked again before it takes traffic,
//! `proxy::sync`); a removed or replaced one stops being probed
//! and goes once the last request holding it ends. Everything else (listeners, TLS of the
//! listener, runtime and threads, region, credentials and users, buffer size, token secret,
//! client connection limits, SigV2, domains, health probe timings) needs a restart: a reload
//! that changes it applies the rest and says what it did not apply.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError, RwLock};

use async_lock::Semaphore;
use ferry_core::rt::{Either, Runtime, Signal, race};
use ferry_net::NetRuntime;

use super::backend::Backend;
use super::config::ProxyConfig;
use super::health::{self, Schedule};
use super::{Proxy, Resolved, resolve, snapshot};

/// Where a reload reads the configuration from: for `ferry proxy`, its command line, its
/// `--config` file and its environment, read again; for a proxy started from the library,
/// whatever the embedder says.
#[derive(Clone)]
pub struct ReloadSource(Arc<dyn Fn() -> Result<ProxyConfig, String> + Send + Sync>);

impl ReloadSource {
    /// A source that calls `load` (on the blocking pool) for each reload.
    pub fn new(load: impl Fn() -> Result<ProxyConfig, String> + Send + Sync + 'static) -> Self {
        Self(Arc::new(load))
    }

    /// The TOML file at `path`, as `ferry proxy --config` reads it (the credentials must be in
    /// the file: the environment is not read).
    pub fn file(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        Self::new(move || {
            let text =
                std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            ProxyConfig::from_toml(&text).map_err(|e| format!("{}: {e}", path.display()))
        })
    }

    fn load(&self) -> Result<ProxyConfig, String> {
        (self.0)()
    }
}

impl std::fmt::Debug for ReloadSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReloadSource")
    }
}

/// The snapshot requests take: replaced whole by a reload.
pub(crate) struct Live<R: Runtime> {
    current: RwLock<Arc<Proxy<R>>>,
}

impl<R: Runtime> Live<R> {
    pub fn new(p: Proxy<R>) -> Self {
        Self {
            current: RwLock::new(Arc::new(p)),
        }
    }

    /// The configuration in use now (a request takes it once and keeps it).
    pub fn load(&self) -> Arc<Proxy<R>> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn store(&self, p: Arc<Proxy<R>>) -> Arc<Proxy<R>> {
        let mut current = self.current.write().unwrap_or_else(PoisonError::into_inner);
        std::mem::replace(&mut *current, p)
    }
}

/// The answer to one reload request, waited for by a thread (SIGHUP, `ProxyHandle::reload`)
/// or a task (the admin endpoint).
#[derive(Debug, Default)]
pub(crate) struct Reply {
    result: Mutex<Option<Result<String, String>>>,
    ready: Condvar,
    done: Signal,
}

impl Reply {
    fn set(&self, r: Result<String, String>) {
        *self.result.lock().unwrap_or_else(PoisonError::into_inner) = Some(r);
        self.ready.notify_all();
        self.done.set();
    }

    fn take(&self) -> Result<String, String> {
        self.result
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .unwrap_or_else(|| Err("no answer".into()))
    }

    /// Block the thread until the reload is done.
    pub fn wait(&self) -> Result<String, String> {
        let mut r = self.result.lock().unwrap_or_else(PoisonError::into_inner);
        while r.is_none() {
            r = self.ready.wait(r).unwrap_or_else(PoisonError::into_inner);
        }
        r.clone().unwrap_or_else(|| Err("no answer".into()))
    }

    /// Wait (asynchronously) until the reload is done.
    pub async fn done(&self) -> Result<String, String> {
        self.done.wait().await;
        self.take()
    }
}

/// Reloads asked for and not yet done, from any thread; served in order, one at a time, on
/// the proxy's runtime ([`serve`]).
#[derive(Debug)]
pub(crate) struct Requests {
    queue: Mutex<VecDeque<Arc<Reply>>>,
    waiting: Semaphore,
    /// Set once the proxy stops: later requests are answered at once.
    closed: AtomicBool,
}

impl Default for Requests {
    fn default() -> Self {
        Self {
            queue: Mutex::default(),
            waiting: Semaphore::new(0),
            closed: AtomicBool::new(false),
        }
    }
}

/// At most this many reloads wait at once (a burst of SIGHUPs needs one, not hundreds).
const MAX_QUEUED_RELOADS: usize = 16;

impl Requests {
    /// Ask for a reload; its answer comes in the reply.
    pub fn request(&self) -> Arc<Reply> {
        let reply = Arc::new(Reply::default());
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        if self.closed.load(Ordering::SeqCst) {
            reply.set(Err("the proxy is stopping".into()));
        } else if queue.len() >= MAX_QUEUED_RELOADS {
            reply.set(Err(format!(
                "{MAX_QUEUED_RELOADS} reloads are already waiting; try again once they are done"
            )));
        } else {
            queue.push_back(reply.clone());
            self.waiting.add_permits(1);
        }
        reply
    }

    fn next(&self) -> Option<Arc<Reply>> {
        self.queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front()
    }

    fn close(&self) {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        self.closed.store(true, Ordering::SeqCst);
        for r in queue.drain(..) {
            r.set(Err("the proxy is stopping".into()));
        }
    }
}

/// Serve reload requests until `stop` is set.
pub(crate) async fn serve<R: NetRuntime>(reloader: Arc<Reloader<R>>, requests: Arc<Requests>) {
    loop {
        let permit = race(requests.waiting.acquire(), reloader.stop.wait()).await;
        let Either::Left(permit) = permit else {
            break;
        };
        permit.forget();
        let Some(reply) = requests.next() else {
            continue;
        };
        match race(reloader.reload(), reloader.stop.wait()).await {
            Either::Left(result) => reply.set(result),
            Either::Right(()) => {
                reply.set(Err("the proxy is stopping".into()));
                break;
            }
        }
    }
    requests.close();
}

/// Reload counters and the state of the last one, for `/metrics`.
#[derive(Debug, Default)]
pub(crate) struct ReloadStats {
    pub applied: AtomicU64,
    pub refused: AtomicU64,
    /// Whether the last reload was applied (true before any).
    pub last_failed: AtomicBool,
}

/// What a reload needs beside the snapshot: the runtime to probe new backends on, the stop
/// signal, the configuration in effect (to tell what changed) and the source to read again.
pub(crate) struct Reloader<R: Runtime> {
    rt: R,
    stop: Arc<Signal>,
    live: Arc<Live<R>>,
    /// The configuration in effect: the settings that need a restart stay as the proxy started
    /// with them, so that every reload says they are not applied.
    running: Mutex<ProxyConfig>,
    health: Schedule,
    pub stats: ReloadStats,
}

impl<R: Runtime> std::fmt::Debug for Reloader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reloader").finish_non_exhaustive()
    }
}

impl<R: NetRuntime> Reloader<R> {
    pub fn new(
        rt: R,
        stop: Arc<Signal>,
        live: Arc<Live<R>>,
        running: ProxyConfig,
        health: Schedule,
    ) -> Self {
        Self {
            rt,
            stop,
            live,
            running: Mutex::new(running),
            health,
            stats: ReloadStats::default(),
        }
    }

    /// Read the configuration again, check it, and apply it; what changed, or why it was
    /// refused (then nothing changed). Logged either way.
    pub async fn reload(&self) -> Result<String, String> {
        let source = self
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .reload
            .clone();
        let result = match source {
            None => Err("this proxy has no configuration source to reload from".to_owned()),
            Some(source) => {
                // Reading, resolving and loading files block: off the runtime's threads.
                let loaded = self
                    .rt
                    .unblock(move || -> Result<(ProxyConfig, Vec<Resolved>), String> {
                        let cfg = source.load()?;
                        cfg.validate()?;
                        let resolved = resolve(&cfg).map_err(|e| e.to_string())?;
                        Ok((cfg, resolved))
                    })
                    .await;
                match loaded {
                    Ok((cfg, resolved)) => self.apply(cfg, &resolved).await,
                    Err(e) => Err(e),
                }
            }
        };
        match &result {
            Ok(summary) => {
                self.stats.applied.fetch_add(1, Ordering::Relaxed);
                self.stats.last_failed.store(false, Ordering::Relaxed);
                tracing::info!(summary = %summary.trim_end().replace('\n', "; "), "configuration reloaded");
            }
            Err(why) => {
                self.stats.refused.fetch_add(1, Ordering::Relaxed);
                self.stats.last_failed.store(true, Ordering::Relaxed);
                tracing::warn!(error = %why, "configuration reload refused; the configuration in use is kept");
            }
        }
        result
    }

    /// Swap in the snapshot of `cfg` (checked and resolved), keeping the backends that did
    /// not change; what changed, as the admin endpoint says it. A backend it adds gets the
    /// buckets before the swap, so that no request meets it without them.
    async fn apply(&self, cfg: ProxyConfig, resolved: &[Resolved]) -> Result<String, String> {
        let old = self.live.load();
        let next = Arc::new(snapshot(&old.shared, &cfg, resolved, &old.backends)?);
        let kept = |b: &Arc<Backend<R>>, among: &[Arc<Backend<R>>]| {
            among.iter().any(|o| Arc::ptr_eq(o, b))
        };
        if next.backends.iter().any(|b| !kept(b, &old.backends))
            && let Err(e) = super::sync::check_all(&next).await
        {
            // Their probes check them again before they take traffic.
            tracing::warn!(error = %e, "the buckets could not be created on every new backend before the reload");
        }
        let mut added = Vec::new();
        let mut changed = Vec::new();
        for b in next.backends.iter().filter(|b| !kept(b, &old.backends)) {
            super::log_configured(b);
            let live = self.live.clone();
            health::spawn_probe(
                &self.rt,
                b.clone(),
                self.stop.clone(),
                self.health,
                move || live.load(),
            );
            if old.backends.iter().any(|o| o.id == b.id) {
                changed.push(b.id.clone());
            } else {
                added.push(b.id.clone());
            }
        }
        let mut removed = Vec::new();
        for b in old.backends.iter().filter(|b| !kept(b, &next.backends)) {
            b.retire();
            if !next.backends.iter().any(|n| n.id == b.id) {
                removed.push(b.id.clone());
            }
        }
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        let not_applied = needs_restart(&running, &cfg);
        let layouts = |c: &ProxyConfig| {
            let mut l = vec![(c.layout_version, weights(c))];
            l.extend(c.previous_layouts.iter().map(|p| {
                let mut w = p.weights.clone();
                w.sort();
                (p.version, w)
            }));
            l
        };
        let layouts_changed = layouts(&running) != layouts(&cfg);
        let previous = cfg.previous_layouts.len();
        let mut out = String::new();
        let list = |ids: &[String]| {
            if ids.is_empty() {
                "-".to_owned()
            } else {
                ids.join(", ")
            }
        };
        let _ = writeln!(
            out,
            "layout: {} -> {} ({previous} previous layout{} being drained{})",
            running.layout_version,
            cfg.layout_version,
            if previous == 1 { "" } else { "s" },
            if layouts_changed { "" } else { ", unchanged" },
        );
        let _ = writeln!(out, "backends added: {}", list(&added));
        let _ = writeln!(out, "backends removed: {}", list(&removed));
        let _ = writeln!(out, "backends changed: {}", list(&changed));
        if !not_applied.is_empty() {
            let _ = writeln!(
                out,
                "not applied until a restart: {}",
                not_applied.join(", ")
            );
            tracing::warn!(settings = %not_applied.join(", "), "settings changed in the configuration need a restart of the proxy");
        }
        let dropped = self.live.store(next);
        // The old snapshot goes with the last request that holds it.
        drop(dropped);
        running.backends = cfg.backends;
        running.layout_version = cfg.layout_version;
        running.previous_layouts = cfg.previous_layouts;
        running.backend_max_connections = cfg.backend_max_connections;
        running.backend_max_in_flight = cfg.backend_max_in_flight;
        running.retry_window = cfg.retry_window;
        running.connect_timeout = cfg.connect_timeout;
        running.io_timeout = cfg.io_timeout;
        drop(running);
        Ok(out)
    }
}

/// The current layout's weights, sorted by id.
fn weights(c: &ProxyConfig) -> Vec<(String, u32)> {
    let mut w: Vec<(String, u32)> = c
        .backends
        .iter()
        .map(|b| (b.id.clone(), b.weight))
        .collect();
    w.sort();
    w
}

/// The settings `next` changes that a reload does not apply.
fn needs_restart(running: &ProxyConfig, next: &ProxyConfig) -> Vec<&'static str> {
    let mut out = Vec::new();
    let mut check = |name: &'static str, changed: bool| {
        if changed {
            out.push(name);
        }
    };
    check("listen", running.listen != next.listen);
    check("admin_listen", running.admin_listen != next.admin_listen);
    check("tls_cert/tls_key", running.tls != next.tls);
    check("runtime", running.runtime != next.runtime);
    check("threads", running.threads != next.threads);
    check("region", running.region != next.region);
    check("buffer_size", running.buffer_size != next.buffer_size);
    check("credentials", running.credentials != next.credentials);
    check("users", running.users != next.users);
    check("token_secret", running.token_secret != next.token_secret);
    check("connection limits", running.limits != next.limits);
    check("sigv2", running.sigv2 != next.sigv2);
    check("domains", running.domains != next.domains);
    check(
        "health_interval_ms/health_jitter_ms",
        running.health_interval != next.health_interval
            || running.health_jitter != next.health_jitter,
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy::BackendConfig;

    fn cfg() -> ProxyConfig {
        ProxyConfig::new(
            "127.0.0.1:0".parse().unwrap(),
            vec![BackendConfig::new("a", "http://127.0.0.1:1")],
            "AK",
            "SK",
        )
    }

    #[test]
    fn settings_that_need_a_restart_are_named() {
        let running = cfg();
        let mut next = cfg();
        assert!(needs_restart(&running, &next).is_empty());
        // Backends, weights, layouts and per-backend settings reload.
        next.backends
            .push(BackendConfig::new("b", "http://127.0.0.1:2"));
        next.retry_window = std::time::Duration::from_secs(5);
        next.backend_max_in_flight = 7;
        assert!(needs_restart(&running, &next).is_empty());
        next.listen = "127.0.0.1:9".parse().unwrap();
        next.credentials
            .push(ferry_core::s3::sigv4::Credentials::new("B", "S"));
        next.buffer_size = 64 * 1024;
        assert_eq!(
            needs_restart(&running, &next),
            ["listen", "buffer_size", "credentials"]
        );
    }

    #[test]
    fn requests_are_answered_once_closed() {
        let r = Requests::default();
        let first = r.request();
        r.close();
        assert_eq!(first.wait(), Err("the proxy is stopping".into()));
        assert_eq!(r.request().wait(), Err("the proxy is stopping".into()));
        let r = Requests::default();
        let queued: Vec<_> = (0..MAX_QUEUED_RELOADS).map(|_| r.request()).collect();
        assert!(r.request().wait().unwrap_err().contains("already waiting"));
        assert_eq!(queued.len(), MAX_QUEUED_RELOADS);
    }
}
