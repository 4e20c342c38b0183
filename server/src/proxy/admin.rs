//! The admin listener: `/healthz` (the process runs), `/readyz` (a backend is up), and
//! Prometheus `/metrics`. No authentication: it listens on 127.0.0.1 by default.

use std::sync::Arc;

use ferry_core::http::Header;
use ferry_core::http::head::RequestHead;
use ferry_core::http::server::{BodyReader, Handler, ResponseWriter};
use ferry_core::rt::{Runtime, Stream};
use ferry_core::s3::S3Error;

use super::Proxy;

/// Serves the admin endpoints of one proxy.
pub(crate) struct AdminHandler<R: Runtime> {
    p: Arc<Proxy<R>>,
}

impl<R: Runtime> AdminHandler<R> {
    pub(crate) fn new(p: Arc<Proxy<R>>) -> Self {
        Self { p }
    }
}

impl<R: Runtime> std::fmt::Debug for AdminHandler<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminHandler").finish_non_exhaustive()
    }
}

const TEXT: Header<'static> = Header {
    name: "Content-Type",
    value: b"text/plain; charset=utf-8",
};

impl<R: Runtime> Handler for AdminHandler<R> {
    async fn handle<S: Stream>(
        &self,
        req: &RequestHead<'_, '_>,
        _body: &mut BodyReader<'_, S>,
        res: &mut ResponseWriter<'_, S>,
    ) -> Result<(), S3Error> {
        let path = req.target.split_once('?').map_or(req.target, |(p, _)| p);
        if req.method != "GET" && req.method != "HEAD" {
            res.send(405, &[TEXT], b"method not allowed\n").await?;
            return Ok(());
        }
        match path {
            "/healthz" => res.send(200, &[TEXT], b"ok\n").await?,
            "/readyz" => {
                let mut body = String::new();
                for b in &self.p.backends {
                    let state = if b.is_up() { "up" } else { "down" };
                    body.push_str(&format!("{} {} {state}\n", b.id, b.addr));
                }
                let ready = self.p.backends.iter().any(|b| b.is_up());
                let status = if ready { 200 } else { 503 };
                res.send(status, &[TEXT], body.as_bytes()).await?;
            }
            "/metrics" => {
                let body = self.p.metrics.render(&self.p);
                let h = Header {
                    name: "Content-Type",
                    value: b"text/plain; version=0.0.4; charset=utf-8",
                };
                res.send(200, &[h], body.as_bytes()).await?;
            }
            _ => res.send(404, &[TEXT], b"not found\n").await?,
        }
        Ok(())
    }
}
