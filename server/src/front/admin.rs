//! The admin listener of the node and the proxy: `/healthz` (the process runs), `/readyz` (the
//! server can serve: [`S3Api::readiness`]), Prometheus `/metrics` (the front's and the
//! server's), CPU profiles (`/debug/pprof/profile`, see [`crate::profile`]), heap profiles
//! (`/debug/pprof/heap`, see [`crate::heap`]) and, on the proxy, `POST /admin/reload`
//! ([`S3Api::reload`]). No authentication: it listens on 127.0.0.1 by default.

use std::sync::{Arc, mpsc};
use std::time::Duration;

use ferry_core::http::Header;
use ferry_core::http::HttpError;
use ferry_core::http::head::RequestHead;
use ferry_core::http::server::{BodyReader, Handler, ResponseWriter};
use ferry_core::rt::{Runtime, Stream};

use super::{Front, S3Api};
use crate::heap::{self, HeapError, HeapFormat};
use crate::profile::{self, ProfileError, ProfileRequest, Running};

/// Serves the admin endpoints of one server.
pub(crate) struct AdminHandler<A, R> {
    front: Arc<Front<A>>,
    rt: R,
}

impl<A: S3Api, R: Runtime> AdminHandler<A, R> {
    /// The admin side of `front`; profiles are taken on `rt`'s blocking pool.
    pub(crate) fn new(front: Arc<Front<A>>, rt: R) -> Self {
        Self { front, rt }
    }
}

impl<A, R> std::fmt::Debug for AdminHandler<A, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminHandler").finish_non_exhaustive()
    }
}

const TEXT: Header<'static> = Header {
    name: "Content-Type",
    value: b"text/plain; charset=utf-8",
};

impl<A: S3Api, R: Runtime> Handler for AdminHandler<A, R> {
    type Error = HttpError;

    async fn handle<S: Stream>(
        &self,
        req: &RequestHead<'_, '_>,
        _body: &mut BodyReader<'_, S>,
        res: &mut ResponseWriter<'_, S>,
    ) -> Result<(), HttpError> {
        let (path, query) = req.target.split_once('?').unwrap_or((req.target, ""));
        if path == "/admin/reload" {
            return self.reload(req.method, res).await;
        }
        if req.method != "GET" && req.method != "HEAD" {
            res.send(405, &[TEXT], b"method not allowed\n").await?;
            return Ok(());
        }
        match path {
            "/healthz" => res.send(200, &[TEXT], b"ok\n").await?,
            "/readyz" => {
                let (ready, body) = self.front.api().readiness();
                let status = if ready { 200 } else { 503 };
                res.send(status, &[TEXT], body.as_bytes()).await?;
            }
            "/metrics" => {
                let body = self.front.render_metrics();
                let h = Header {
                    name: "Content-Type",
                    value: b"text/plain; version=0.0.4; charset=utf-8",
                };
                res.send(200, &[h], body.as_bytes()).await?;
            }
            "/debug/pprof/profile" => self.profile(query, res).await?,
            "/debug/pprof/heap" => self.heap(query, res).await?,
            "/debug/pprof" | "/debug/pprof/" => {
                let state = if Running::is_running() {
                    "a profile is being taken now"
                } else {
                    "no profile is being taken now"
                };
                let body = format!(
                    "CPU profiles of this process (one at a time; {state}):\n\
                     /debug/pprof/profile?seconds=N           gzipped pprof protobuf (N: 1 to {}, default {})\n\
                     /debug/pprof/profile?seconds=N&format=svg  flamegraph\n\
                     Heap profiles (jemalloc's sampled allocations still live):\n\
                     /debug/pprof/heap                          gzipped pprof protobuf (inuse_space, bytes)\n\
                     /debug/pprof/heap?format=svg               flamegraph of the bytes in use\n",
                    profile::MAX_SECONDS,
                    profile::DEFAULT_SECONDS,
                );
                res.send(200, &[TEXT], body.as_bytes()).await?;
            }
            _ => res.send(404, &[TEXT], b"not found\n").await?,
        }
        Ok(())
    }
}

impl<A: S3Api, R: Runtime> AdminHandler<A, R> {
    /// `GET /debug/pprof/heap`: dump jemalloc's sampled heap off the reactor and answer it.
    async fn heap<S: Stream>(
        &self,
        query: &str,
        res: &mut ResponseWriter<'_, S>,
    ) -> Result<(), HttpError> {
        let format = match HeapFormat::from_query(query) {
            Ok(f) => f,
            Err(msg) => return res.send(400, &[TEXT], format!("{msg}\n").as_bytes()).await,
        };
        match self.rt.unblock(move || heap::take(format)).await {
            Ok(body) => {
                let (ty, disposition): (&[u8], &[u8]) = match format {
                    HeapFormat::Pprof => (
                        b"application/octet-stream",
                        b"attachment; filename=\"heap\"",
                    ),
                    HeapFormat::Svg => (b"image/svg+xml", b"inline; filename=\"heap.svg\""),
                };
                let h = [
                    Header {
                        name: "Content-Type",
                        value: ty,
                    },
                    Header {
                        name: "Content-Disposition",
                        value: disposition,
                    },
                ];
                res.send(200, &h, &body).await
            }
            Err(HeapError::Unavailable(why)) => {
                res.send(503, &[TEXT], format!("no heap profile: {why}\n").as_bytes())
                    .await
            }
            Err(HeapError::Failed(msg)) => {
                tracing::warn!(error = %msg, "heap profile failed");
                res.send(500, &[TEXT], format!("{msg}\n").as_bytes()).await
            }
        }
    }
    /// `POST /admin/reload`: 200 with what changed, 400 with why the configuration was refused
    /// (the one in use is kept), 404 from a server that does not reload.
    async fn reload<S: Stream>(
        &self,
        method: &str,
        res: &mut ResponseWriter<'_, S>,
    ) -> Result<(), HttpError> {
        if method != "POST" {
            let allow = Header {
                name: "Allow",
                value: b"POST",
            };
            return res.send(405, &[TEXT, allow], b"POST /admin/reload\n").await;
        }
        match self.front.api().reload().await {
            None => {
                res.send(404, &[TEXT], b"this server does not reload\n")
                    .await
            }
            Some(Ok(summary)) => {
                let body = format!("reloaded\n{summary}");
                res.send(200, &[TEXT], body.as_bytes()).await
            }
            Some(Err(why)) => {
                let body = format!("refused; the configuration in use is kept: {why}\n");
                res.send(400, &[TEXT], body.as_bytes()).await
            }
        }
    }

    /// `GET /debug/pprof/profile`: sample for the seconds asked, off the reactor, then answer.
    async fn profile<S: Stream>(
        &self,
        query: &str,
        res: &mut ResponseWriter<'_, S>,
    ) -> Result<(), HttpError> {
        let req = match ProfileRequest::from_query(query) {
            Ok(r) => r,
            Err(msg) => return res.send(400, &[TEXT], format!("{msg}\n").as_bytes()).await,
        };
        let Some(running) = Running::try_start() else {
            let msg = b"a CPU profile is already being taken; retry when it is done\n";
            return res.send(409, &[TEXT], msg).await;
        };
        tracing::info!(seconds = req.seconds, format = %req.format.as_str(), "CPU profile started");
        // Dropping the sender (this request going away) ends the profile early.
        let (cancel, cancelled) = mpsc::channel::<()>();
        let duration = Duration::from_secs(req.seconds);
        let taken = self
            .rt
            .unblock(move || {
                let r = profile::take(duration, req.format, &cancelled);
                drop(running);
                r
            })
            .await;
        drop(cancel);
        match taken {
            Ok(body) => {
                tracing::info!(bytes = body.len(), "CPU profile done");
                let h = Header {
                    name: "Content-Type",
                    value: req.format.content_type().as_bytes(),
                };
                let disposition = Header {
                    name: "Content-Disposition",
                    value: match req.format {
                        profile::Format::Pprof => b"attachment; filename=\"profile\"",
                        profile::Format::Svg => b"inline; filename=\"profile.svg\"",
                    },
                };
                res.send(200, &[h, disposition], &body).await
            }
            Err(ProfileError::Cancelled) => {
                res.send(503, &[TEXT], b"the profile was cancelled\n").await
            }
            Err(ProfileError::Failed(msg)) => {
                tracing::warn!(error = %msg, "CPU profile failed");
                res.send(500, &[TEXT], format!("{msg}\n").as_bytes()).await
            }
        }
    }
}
