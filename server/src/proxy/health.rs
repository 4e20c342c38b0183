//! Active health probes: each backend on its own schedule, every interval plus a random
//! jitter (proxies and backends started together do not probe in step), four times as often
//! while it is down. A failed probe marks it down, a successful one up again; failed
//! connections mark it down in between (see [`Backend::conn`](super::backend::Backend::conn)),
//! but only a probe brings it back: traffic returns to a restarted backend once a probe has
//! found it answering and its buckets have been brought up to date (`proxy::sync`), which the
//! backend's probe loop does before its next probe.

use std::hash::BuildHasher;
use std::sync::Arc;
use std::time::Duration;

use ferry_core::http::HttpError;
use ferry_core::http::{EMPTY_HEADER, Header};
use ferry_core::rt::{Runtime, Signal, race, timeout};

use super::Proxy;
use super::backend::Backend;
use super::config::BackendKind;
use super::sync;

/// How often backends are probed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Schedule {
    /// Between two probes of a backend that is up.
    pub interval: Duration,
    /// Up to this much more, at random.
    pub jitter: Duration,
}

/// Probe backend `b` now and then on its own jittered schedule (a task of its own: a slow
/// backend does not delay the others' probes), until `stop` is set or a reload retires it;
/// while it is checking, bring its buckets up to those of the other backends of `current()`
/// (the configuration in use) and admit it.
pub(crate) fn spawn_probe<R: Runtime>(
    rt: &R,
    b: Arc<Backend<R>>,
    stop: Arc<Signal>,
    schedule: Schedule,
    current: impl Fn() -> Arc<Proxy<R>> + Send + Sync + 'static,
) {
    let rt2 = rt.clone();
    let probes = async move {
        let ended = race(stop.wait(), b.retired());
        let each = async {
            loop {
                probe(&rt2, &b).await;
                // Answering, but not taking traffic before its buckets are up to date: checked
                // against the configuration in use (a backend a reload adds is in it once the
                // reload has swapped it in).
                if b.is_checking() {
                    let p = current();
                    if let Some(i) = p.backends.iter().position(|o| Arc::ptr_eq(o, &b)) {
                        sync::check_and_admit(&p, i).await;
                    }
                }
                rt2.sleep(next_wait(b.is_up(), schedule.interval, schedule.jitter))
                    .await;
            }
        };
        race(ended, each).await;
    };
    // Detached: it ends by itself.
    drop(rt.spawn(probes));
}

/// The wait before the next probe: `interval` plus up to `jitter`, both divided by 4 for a
/// backend that is down (it is waited for by requests within the retry window).
fn next_wait(up: bool, interval: Duration, jitter: Duration) -> Duration {
    let (base, spread) = if up {
        (interval, jitter)
    } else {
        (interval / 4, jitter / 4)
    };
    base + random_fraction(spread)
}

/// A random duration in `0..=max` (std's per-map random keys are enough for a jitter).
fn random_fraction(max: Duration) -> Duration {
    let nanos = u64::try_from(max.as_nanos()).unwrap_or(u64::MAX);
    if nanos == 0 {
        return Duration::ZERO;
    }
    let r = std::collections::hash_map::RandomState::new().hash_one(0u8);
    Duration::from_nanos(r % (nanos.saturating_add(1).max(1)))
}

/// One probe of `b`, bounded in time; its verdict is applied.
pub(crate) async fn probe<R: Runtime>(rt: &R, b: &Backend<R>) {
    let limit = b
        .client_config()
        .connect_timeout
        .max(Duration::from_secs(1))
        * 2;
    match timeout(rt, limit, check(b)).await {
        Ok(Ok(())) => b.mark_up(),
        Ok(Err(why)) => b.mark_down(&format_args!("health probe: {why}")),
        Err(_) => b.mark_down(&format_args!("health probe: no answer within {limit:?}")),
    }
}

/// A Ferry node must answer `GET /healthz` with 200 (it answers 503 while its store cannot
/// write, a full disk say, so that writes stop coming); another S3 server any answer to
/// `HEAD /`. The error says what went wrong, with the node's reason (it is logged when the
/// backend goes down).
async fn check<R: Runtime>(b: &Backend<R>) -> Result<(), String> {
    let failed = |what: &str, e: HttpError| format!("{what}: {e}");
    let mut conn = b
        .connect_fresh()
        .await
        .map_err(|why| format!("connect: {why}"))?;
    let host = [Header {
        name: "Host",
        value: b.host.as_bytes(),
    }];
    let (method, target) = match b.kind {
        BackendKind::Ferry => ("GET", "/healthz"),
        BackendKind::S3 => ("HEAD", "/"),
    };
    conn.send_request(method, target, &host, &[])
        .await
        .map_err(|e| failed("send", e))?;
    let mut storage = [EMPTY_HEADER; 64];
    let mut resp = conn
        .response(&mut storage)
        .await
        .map_err(|e| failed("response", e))?;
    let status = resp.head.status;
    // The start of the body, for the reason of a refusal.
    let mut why = Vec::new();
    while let Some(chunk) = resp
        .body
        .next_chunk()
        .await
        .map_err(|e| failed("response body", e))?
    {
        let room = MAX_REASON.saturating_sub(why.len());
        why.extend_from_slice(chunk.get(..room.min(chunk.len())).unwrap_or_default());
    }
    match b.kind {
        BackendKind::Ferry if status != 200 => {
            let why = String::from_utf8_lossy(&why);
            Err(format!(
                "{method} {target} answered {status} {}",
                why.trim()
            ))
        }
        _ => Ok(()),
    }
}

/// Bytes of a refusing health answer kept for the log.
const MAX_REASON: usize = 512;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_are_jittered_and_bounded() {
        let (i, j) = (Duration::from_secs(2), Duration::from_millis(500));
        let waits: Vec<Duration> = (0..64).map(|_| next_wait(true, i, j)).collect();
        assert!(waits.iter().all(|w| *w >= i && *w <= i + j), "{waits:?}");
        assert!(waits.iter().any(|w| *w != waits[0]), "no jitter: {waits:?}");
        let down = next_wait(false, i, j);
        assert!(down >= i / 4 && down <= (i + j) / 4, "{down:?}");
        assert_eq!(next_wait(true, i, Duration::ZERO), i);
    }
}
