//! A binary picks its runtime at run time: one generic `app`, and a `run` that parses the
//! `--runtime` value and hands the app to `ferry_runtime::block_on` (both adapters are always
//! compiled in).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ferry_core::http::head::RequestHead;
use ferry_core::http::server::{BodyReader, Handler, ResponseWriter, ServerConfig, serve};
use ferry_core::http::{EMPTY_HEADER, client};
use ferry_core::rt::{Runtime, Stream};
use ferry_core::s3::S3Error;
use ferry_net::NetRuntime;
use ferry_runtime::{OnRuntime, RuntimeKind};

struct Hello;

impl Handler for Hello {
    type Error = S3Error;

    async fn handle<S: Stream>(
        &self,
        _req: &RequestHead<'_, '_>,
        _body: &mut BodyReader<'_, S>,
        res: &mut ResponseWriter<'_, S>,
    ) -> Result<(), S3Error> {
        res.send(200, &[], b"hello").await?;
        Ok(())
    }
}

/// The whole program, written once over `Runtime`: serve, fetch once, stop.
async fn app<R: Runtime>(rt: R) -> (u16, Vec<u8>) {
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let server = serve(&rt, addr, ServerConfig::default(), Arc::new(Hello))
        .await
        .unwrap();
    let mut conn = client::connect(&rt, server.local_addr(), client::ClientConfig::default())
        .await
        .unwrap();
    conn.send_request("GET", "/", &[], b"").await.unwrap();
    let mut hs = [EMPTY_HEADER; 16];
    let mut r = conn.response(&mut hs).await.unwrap();
    let status = r.head.status;
    let body = r
        .body
        .next_chunk()
        .await
        .unwrap()
        .unwrap_or_default()
        .to_vec();
    server.stop(&rt, Duration::from_secs(5)).await;
    (status, body)
}

/// The app as a task for whichever runtime is picked.
struct App;

impl OnRuntime for App {
    type Output = (u16, Vec<u8>);

    async fn run<R: NetRuntime>(self, rt: R) -> (u16, Vec<u8>) {
        app(rt).await
    }
}

/// What `fn main` does with `--runtime NAME`.
fn run(runtime: &str) -> std::io::Result<(u16, Vec<u8>)> {
    let kind: RuntimeKind = runtime
        .parse()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    ferry_runtime::block_on(kind, 0, App)
}

#[test]
fn the_same_app_runs_on_either_runtime() {
    for name in ["tokio", "smol"] {
        assert_eq!(run(name).unwrap(), (200, b"hello".to_vec()), "{name}");
    }
    assert!(run("glommio").is_err());
}
