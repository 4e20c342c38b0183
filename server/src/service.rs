//! A server's life, shared by `ferry node` and `ferry proxy`: on a thread of its own, start the
//! chosen runtime, build the server there, serve its S3 front and admin listener, report ready,
//! serve until stopped, drain.

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

use ferry_core::rt::Signal;
use ferry_net::NetRuntime;
use ferry_runtime::{OnRuntime, RuntimeKind};

use crate::front::serve::{self, Listen};
use crate::front::{Auth, Front, S3Api};
use crate::waits::Metered;

/// How long a graceful stop lets requests in progress finish before dropping them.
const STOP_GRACE: Duration = Duration::from_secs(30);

/// A server behind the S3 front: built on the runtime it serves on.
pub(crate) trait Server: Send + 'static {
    /// What the front dispatches to, on runtime `R`.
    type Api<R: NetRuntime>: S3Api;

    /// `node` or `proxy`.
    const NAME: &'static str;

    /// Build the server on `rt`, and who may sign its requests. Work that runs beside the
    /// listeners (the proxy's health probes) is spawned here and ends when `stop` is set.
    fn build<R: NetRuntime>(self, rt: &R, stop: &Arc<Signal>) -> io::Result<(Self::Api<R>, Auth)>;
}

/// A running server; its runtime runs on threads of its own. Dropping it stops the server.
#[derive(Debug)]
pub struct ServiceHandle {
    local_addr: SocketAddr,
    admin_addr: Option<SocketAddr>,
    thread: ServiceThread,
}

impl ServiceHandle {
    /// The S3 listener's address (with the real port when port 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The admin listener's address, if it has one.
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.admin_addr
    }

    /// Graceful stop: stop accepting, let requests in progress finish (up to 30 s), close idle
    /// connections, and join the runtime's threads.
    pub fn stop(mut self) {
        self.thread.shutdown();
    }
}

/// Start `server` on `runtime` (`threads` workers, 0: one per CPU), listening as `listen`
/// says; returns once both listeners accept connections, or the error that stopped it.
pub(crate) fn start<S: Server>(
    server: S,
    runtime: RuntimeKind,
    threads: usize,
    listen: Listen,
) -> io::Result<ServiceHandle> {
    let name = format!("ferry-{}", S::NAME);
    let ((local_addr, admin_addr), thread) = spawn_service(&name, move |ready, stop| {
        let task = Task {
            server,
            runtime,
            listen,
            ready,
            stop,
        };
        ferry_runtime::block_on(runtime, threads, task)
    })?;
    Ok(ServiceHandle {
        local_addr,
        admin_addr,
        thread,
    })
}

type Ready = mpsc::Sender<io::Result<(SocketAddr, Option<SocketAddr>)>>;

/// A server's life, to run on the runtime its configuration names.
struct Task<S> {
    server: S,
    runtime: RuntimeKind,
    listen: Listen,
    ready: Ready,
    stop: Arc<Signal>,
}

impl<S: Server> OnRuntime for Task<S> {
    type Output = ();

    async fn run<R: NetRuntime>(self, rt: R) {
        let Self {
            server,
            runtime,
            listen,
            ready,
            stop,
        } = self;
        // Every blocking hand-off of the server is measured and charged to its request.
        let rt = Metered::new(rt);
        let (api, auth) = match server.build(&rt, &stop) {
            Ok(built) => built,
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        let front = Arc::new(Front::new(api, auth).with_blocking_pool(rt.stats()));
        let listeners = match serve::start(&rt, front, listen).await {
            Ok(l) => l,
            Err(e) => {
                stop.set();
                let _ = ready.send(Err(e));
                return;
            }
        };
        let (addr, admin) = listeners.addrs();
        if ready.send(Ok((addr, admin))).is_err() {
            // Nobody waits for the server any more.
            stop.set();
            listeners.abort();
            return;
        }
        let admin = admin.map_or_else(|| "none".to_owned(), |a| a.to_string());
        tracing::info!(
            listen = %addr, admin = %admin, runtime = %runtime, "{} listening", S::NAME
        );
        stop.wait().await;
        listeners.drain(&rt, STOP_GRACE, S::NAME).await;
    }
}

/// The thread a server's runtime runs on, and the signal that stops it.
#[derive(Debug)]
struct ServiceThread {
    stop: Arc<Signal>,
    thread: Option<JoinHandle<()>>,
}

impl ServiceThread {
    /// Set the stop signal and wait for the runtime's thread to finish.
    fn shutdown(&mut self) {
        self.stop.set();
        if let Some(t) = self.thread.take() {
            // A panic on the server thread has been reported already; nothing is left to stop.
            let _ = t.join();
        }
    }
}

impl Drop for ServiceThread {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Start `body` on a thread called `name` and wait for what it sends on its ready channel.
///
/// `body` gets the ready sender and the stop signal; an error it returns before reporting
/// ready (e.g. the runtime could not start) is returned here, as is an error it reports.
fn spawn_service<T, F>(name: &str, body: F) -> io::Result<(T, ServiceThread)>
where
    T: Send + 'static,
    F: FnOnce(mpsc::Sender<io::Result<T>>, Arc<Signal>) -> io::Result<()> + Send + 'static,
{
    let stop = Arc::new(Signal::new());
    let (ready_tx, ready_rx) = mpsc::channel::<io::Result<T>>();
    let body_stop = stop.clone();
    let thread = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            if let Err(e) = body(ready_tx.clone(), body_stop) {
                let _ = ready_tx.send(Err(e));
            }
        })?;
    match ready_rx.recv() {
        Ok(Ok(ready)) => Ok((
            ready,
            ServiceThread {
                stop,
                thread: Some(thread),
            },
        )),
        Ok(Err(e)) => {
            let _ = thread.join();
            Err(e)
        }
        Err(_) => {
            let _ = thread.join();
            Err(io::Error::other(format!(
                "{name} ended before it was ready"
            )))
        }
    }
}
