//! An in-memory connection for the engines' unit tests.

use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::future::poll_fn;
use core::task::Poll;
use core::time::Duration;

use embedded_io::{ErrorKind, ErrorType};

use crate::rt::tests::TestClock;
use crate::rt::{Clock, Stream};

/// What an in-memory peer sends and has received.
#[derive(Debug, Default)]
pub(crate) struct Wire {
    /// Bytes to hand out, in reads of at most `read_size` (0: unbounded).
    pub input: VecDeque<u8>,
    pub read_size: usize,
    /// Every write call's bytes, in order.
    pub writes: Vec<Vec<u8>>,
    pub shut: bool,
    /// Reads past the input: `Pending` forever instead of EOF (a silent peer).
    pub hang: bool,
    /// Each write appends the next of these to the input (a peer that answers requests).
    pub replies: VecDeque<Vec<u8>>,
    /// Bytes sent later: each `(at, bytes)` joins the input once `clock` reads `at`; reads
    /// wait for them (a slow peer).
    pub later: VecDeque<(Duration, Vec<u8>)>,
    pub clock: Option<TestClock>,
}

impl Wire {
    /// Move what has arrived by now into the input; whether a read must wait.
    fn must_wait(&mut self) -> bool {
        if let Some(now) = self.clock.as_ref().map(Clock::now) {
            while self.later.front().is_some_and(|(at, _)| *at <= now) {
                let (_, bytes) = self.later.pop_front().unwrap_or_default();
                self.input.extend(bytes);
            }
        }
        self.input.is_empty() && (self.hang || !self.later.is_empty())
    }
}

/// One side of an in-memory connection (a pair of buffers); clones share the wire, so a
/// test keeps a handle on what the engine wrote.
#[derive(Debug, Clone, Default)]
pub(crate) struct Duplex(pub Arc<spin::Mutex<Wire>>);

impl Duplex {
    pub(crate) fn new(input: &[u8], read_size: usize) -> Self {
        Self(Arc::new(spin::Mutex::new(Wire {
            input: input.iter().copied().collect(),
            read_size,
            ..Wire::default()
        })))
    }

    /// A peer that sends `replies[i]` after the i-th write.
    pub(crate) fn replying(replies: &[&[u8]], read_size: usize) -> Self {
        let d = Self::new(b"", read_size);
        d.0.lock().replies = replies.iter().map(|r| r.to_vec()).collect();
        d
    }

    /// A peer that sends `first` now, then each of `later` at its time on `clock`.
    pub(crate) fn timed(first: &[u8], later: &[(Duration, &[u8])], clock: &TestClock) -> Self {
        let d = Self::new(first, 0);
        {
            let mut w = d.0.lock();
            w.later = later.iter().map(|(at, b)| (*at, b.to_vec())).collect();
            w.clock = Some(clock.clone());
        }
        d
    }

    pub(crate) fn written(&self) -> Vec<u8> {
        self.0.lock().writes.concat()
    }

    pub(crate) fn rest(&self) -> Vec<u8> {
        self.0.lock().input.iter().copied().collect()
    }
}

impl ErrorType for Duplex {
    type Error = ErrorKind;
}

impl embedded_io_async::Read for Duplex {
    async fn read(&mut self, buf: &mut [u8]) -> Result<usize, ErrorKind> {
        poll_fn(|_| match self.0.lock().must_wait() {
            true => Poll::Pending,
            false => Poll::Ready(()),
        })
        .await;
        let mut w = self.0.lock();
        let mut n = buf.len().min(w.input.len());
        if w.read_size > 0 {
            n = n.min(w.read_size);
        }
        for (dst, src) in buf.iter_mut().zip(w.input.drain(..n)) {
            *dst = src;
        }
        Ok(n)
    }
}

impl embedded_io_async::Write for Duplex {
    async fn write(&mut self, buf: &[u8]) -> Result<usize, ErrorKind> {
        let mut w = self.0.lock();
        if w.shut {
            return Err(ErrorKind::BrokenPipe);
        }
        w.writes.push(buf.to_vec());
        if let Some(reply) = w.replies.pop_front() {
            w.input.extend(reply);
        }
        Ok(buf.len())
    }

    async fn flush(&mut self) -> Result<(), ErrorKind> {
        Ok(())
    }
}

impl Stream for Duplex {
    async fn read_send(&mut self, buf: &mut [u8]) -> Result<usize, ErrorKind> {
        embedded_io_async::Read::read(self, buf).await
    }
    async fn write_send(&mut self, buf: &[u8]) -> Result<usize, ErrorKind> {
        embedded_io_async::Write::write(self, buf).await
    }
    async fn flush_send(&mut self) -> Result<(), ErrorKind> {
        Ok(())
    }
    async fn shutdown_write(&mut self) -> Result<(), ErrorKind> {
        self.0.lock().shut = true;
        Ok(())
    }

    async fn readable(&mut self) -> Result<(), ErrorKind> {
        poll_fn(|_| match self.0.lock().must_wait() {
            true => Poll::Pending,
            false => Poll::Ready(Ok(())),
        })
        .await
    }
}
