//! Ferry on smol: [`Smol`] is a `ferry_net::Adapter` (`async-io`'s `Async` TCP sockets and their
//! readiness, timers, an executor, `blocking`), and [`block_on_threads`] runs a future with that
//! executor on one thread per CPU, given `Net<Smol>`.
//!
//! `ferry-net` makes the runtime, streams, listeners, TLS and splice of it, `ferry-core` has the
//! accept loop, the HTTP engines and timeouts; a binary picks this runtime or `ferry-tokio`.

use std::future::Future;
use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
#[cfg(target_os = "linux")]
use std::os::fd::{AsFd, BorrowedFd};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use ferry_net::{Adapter, Net, NetListener, NetStream};
use smol::{Async, Executor, Task, Timer};

/// A TCP connection on smol, plain or TLS.
pub type SmolStream = NetStream<Smol>;
/// A listening socket on smol, plain or TLS.
pub type SmolListener = NetListener<Smol>;

/// The smol runtime: an executor shared by the threads that run it.
#[derive(Debug, Clone)]
pub struct Smol {
    executor: Arc<Executor<'static>>,
}

impl Smol {
    /// A runtime spawning onto `executor` (which the caller runs, e.g. with
    /// [`block_on_threads`]).
    pub fn new(executor: Arc<Executor<'static>>) -> Self {
        Self { executor }
    }

    /// The executor tasks are spawned onto.
    pub fn executor(&self) -> &Arc<Executor<'static>> {
        &self.executor
    }
}

impl Adapter for Smol {
    type Socket = Async<TcpStream>;
    type TcpListener = Async<TcpListener>;

    async fn connect_tcp(&self, addr: SocketAddr) -> io::Result<Async<TcpStream>> {
        let tcp = Async::<TcpStream>::connect(addr).await?;
        tcp.get_ref().set_nodelay(true)?;
        Ok(tcp)
    }

    async fn bind_tcp(&self, addr: SocketAddr) -> io::Result<Async<TcpListener>> {
        Async::new(ferry_net::bind_tcp_listener(addr)?)
    }

    async fn accept_tcp(
        listener: &Async<TcpListener>,
    ) -> io::Result<(Async<TcpStream>, SocketAddr)> {
        let (tcp, peer) = listener.accept().await?;
        tcp.get_ref().set_nodelay(true)?;
        Ok((tcp, peer))
    }

    fn listener_addr(listener: &Async<TcpListener>) -> io::Result<SocketAddr> {
        listener.get_ref().local_addr()
    }

    // `Async`'s futures-io close only flushes.
    async fn shutdown_write(socket: &mut Async<TcpStream>) -> io::Result<()> {
        socket.get_ref().shutdown(Shutdown::Write)
    }

    async fn readable(socket: &Async<TcpStream>) -> io::Result<()> {
        socket.readable().await
    }

    #[cfg(target_os = "linux")]
    async fn read_with<T: Send>(
        socket: &Async<TcpStream>,
        mut op: impl FnMut(BorrowedFd<'_>) -> io::Result<T> + Send,
    ) -> io::Result<T> {
        socket.read_with(|tcp| op(tcp.as_fd())).await
    }

    #[cfg(target_os = "linux")]
    async fn write_with<T: Send>(
        socket: &Async<TcpStream>,
        mut op: impl FnMut(BorrowedFd<'_>) -> io::Result<T> + Send,
    ) -> io::Result<T> {
        socket.write_with(|tcp| op(tcp.as_fd())).await
    }

    fn now(&self) -> Duration {
        static ORIGIN: OnceLock<Instant> = OnceLock::new();
        ORIGIN.get_or_init(Instant::now).elapsed()
    }

    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + Send + 'static {
        let timer = Timer::after(duration);
        async move {
            timer.await;
        }
    }

    fn unblock<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> impl Future<Output = T> + Send + 'static {
        smol::unblock(f)
    }

    fn spawn<T: Send + 'static>(
        &self,
        future: impl Future<Output = T> + Send + 'static,
    ) -> impl Future<Output = T> + Send + 'static {
        JoinHandle(Some(self.executor.spawn(future)))
    }
}

/// A smol task that is detached, not cancelled, when its handle is dropped (as on tokio).
struct JoinHandle<T>(Option<Task<T>>);

impl<T> Future for JoinHandle<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        match self.0.as_mut() {
            Some(task) => Pin::new(task).poll(cx),
            None => Poll::Pending,
        }
    }
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        if let Some(task) = self.0.take() {
            task.detach();
        }
    }
}

/// Run `main` with a new executor driven by `threads` threads in all (0: one per CPU), the
/// calling thread among them, and return its output; the other threads stop when `main`
/// returns.
pub fn block_on_threads<Fut: Future>(
    threads: usize,
    main: impl FnOnce(Net<Smol>) -> Fut,
) -> io::Result<Fut::Output> {
    let threads = match threads {
        0 => std::thread::available_parallelism().map_or(1, usize::from),
        n => n,
    };
    let executor = Arc::new(Executor::new());
    let (stop, stopped) = smol::channel::bounded::<()>(1);
    let mut workers = Vec::new();
    for i in 1..threads {
        let (executor, stopped) = (executor.clone(), stopped.clone());
        let worker = std::thread::Builder::new()
            .name(format!("ferry-smol-{i}"))
            .spawn(move || smol::block_on(executor.run(stopped.recv())));
        match worker {
            Ok(w) => workers.push(w),
            Err(e) => {
                drop(stop);
                return Err(e);
            }
        }
    }
    let smol = Smol::new(executor.clone());
    let out = smol::block_on(executor.run(main(Net::new(smol))));
    // Closing the channel ends every worker's `run`.
    drop(stop);
    for w in workers {
        let _ = w.join();
    }
    Ok(out)
}
