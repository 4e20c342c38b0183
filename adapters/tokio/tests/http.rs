//! The shared HTTP suite on tokio, plus the `Send` check that lets tokio spawn connections.

#[macro_use]
#[path = "../../suite/http.rs"]
mod suite;

run_suite!(ferry_tokio::block_on_threads);

use std::sync::Arc;

use ferry_core::http::server::{ServerConfig, serve_connection};
use ferry_core::rt::{Listener, Runtime};
use ferry_tokio::TokioListener;

/// A concrete handler's connection future is `Send`, so `tokio::spawn` takes it directly.
#[test]
fn connection_future_is_send_and_spawns() {
    fn assert_send<T: Send>(_: &T) {}
    ferry_tokio::block_on_threads(0, |rt| async move {
        let listener = rt.bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = rt.connect(addr).await.unwrap();
        let (accepted, _) = listener.accept().await.unwrap();
        let stream = TokioListener::establish(accepted).await.unwrap();
        let config = Arc::new(ServerConfig::default());
        let handler = Arc::new(suite::Suite::default());
        let conn = serve_connection(rt.clone(), stream, &config, &*handler, None);
        assert_send(&conn);
        drop(conn);
        let (clock, config2, handler2) = (rt.clone(), config.clone(), handler.clone());
        let (accepted, _) = {
            let _second = rt.connect(addr).await.unwrap();
            listener.accept().await.unwrap()
        };
        let stream = TokioListener::establish(accepted).await.unwrap();
        let task = tokio::spawn(async move {
            serve_connection(clock, stream, &config2, &*handler2, None).await
        });
        // The peer closed without a request: the connection ends having served none.
        assert_eq!(task.await.unwrap(), 0);
        drop(client);
    })
    .unwrap();
}
