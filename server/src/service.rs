//! A server running on a runtime of its own thread: start it, wait until it is ready, stop it.
//!
//! `ferry node` and `ferry proxy` share this life cycle; their handles hold a [`ServiceThread`].

use std::io;
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;

use ferry_core::rt::Signal;

/// The thread a server's runtime runs on, and the signal that stops it.
#[derive(Debug)]
pub(crate) struct ServiceThread {
    stop: Arc<Signal>,
    thread: Option<JoinHandle<()>>,
}

impl ServiceThread {
    /// Set the stop signal and wait for the runtime's thread to finish.
    pub(crate) fn shutdown(&mut self) {
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
pub(crate) fn spawn_service<T, F>(name: &str, body: F) -> io::Result<(T, ServiceThread)>
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
