//! Active health probes: every backend, every interval. A failed probe marks it down, a
//! successful one up again; failed connections mark it down in between (see
//! [`Backend::conn`](super::backend::Backend::conn)).

use std::sync::Arc;
use std::time::Duration;

use ferry_core::http::HttpError;
use ferry_core::http::{EMPTY_HEADER, Header};
use ferry_core::rt::{Either, Runtime, Signal, race, timeout};

use super::Proxy;
use super::backend::Backend;
use super::config::BackendKind;

/// Probe every backend now and then every `interval` until `stop` is set.
pub(crate) async fn probe_loop<R: Runtime>(
    p: Arc<Proxy<R>>,
    stop: Arc<Signal>,
    interval: Duration,
) {
    while !stop.is_set() {
        for i in 0..p.backends.len() {
            let p2 = p.clone();
            // Detached: a slow backend does not delay the others' probes.
            drop(p.rt.spawn(async move {
                if let Some(b) = p2.backends.get(i) {
                    probe(&p2.rt, b).await;
                }
            }));
        }
        if let Either::Right(()) = race(p.rt.sleep(interval), stop.wait()).await {
            break;
        }
    }
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
