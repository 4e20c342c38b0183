//! A stream whose every read and write has a timeout, and writing all of a buffer.

use core::future::Future;
use core::time::Duration;

use embedded_io::{Error as _, ErrorKind, ErrorType};

use super::error::{HttpError, io_error};
use crate::rt::{Clock, SpliceError, Stream, TimedOut, timeout, timeout_at};

/// Write all of `buf` to a [`Stream`].
pub(crate) async fn write_all<S: Stream>(io: &mut S, mut buf: &[u8]) -> Result<(), HttpError> {
    while !buf.is_empty() {
        let n = io.write_send(buf).await.map_err(|e| io_error(e.kind()))?;
        // A zero-length write would loop forever; std calls it `WriteZero`.
        buf = buf
            .get(n..)
            .filter(|_| n > 0)
            .ok_or(HttpError::Io(ErrorKind::WriteZero))?;
    }
    Ok(())
}

/// A stream whose every read and write has a timeout; its errors are [`ErrorKind`]s.
#[derive(Debug)]
pub struct Timed<C, S> {
    clock: C,
    inner: S,
    read_timeout: Duration,
    write_timeout: Duration,
}

impl<C: Clock, S: Stream> Timed<C, S> {
    /// Wrap `inner`, bounding each read by `read_timeout` and each write by `write_timeout`.
    pub fn new(clock: C, inner: S, read_timeout: Duration, write_timeout: Duration) -> Self {
        Self {
            clock,
            inner,
            read_timeout,
            write_timeout,
        }
    }

    /// The clock the timeouts run on.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// The wrapped stream.
    pub fn inner_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// Unwrap the stream.
    pub fn into_inner(self) -> S {
        self.inner
    }

    /// Read with a deadline of its own (a [`Clock::now`] value) instead of the read timeout.
    pub async fn read_until(
        &mut self,
        deadline: Duration,
        buf: &mut [u8],
    ) -> Result<usize, ErrorKind> {
        match timeout_at(&self.clock, deadline, self.inner.read_send(buf)).await {
            Ok(r) => r.map_err(|e| e.kind()),
            Err(TimedOut) => Err(ErrorKind::TimedOut),
        }
    }

    /// Write all of `buf`, each write bounded by the write timeout.
    pub async fn write_all(&mut self, buf: &[u8]) -> Result<(), HttpError> {
        write_all(self, buf).await
    }

    async fn bounded<T, E: embedded_io::Error>(
        clock: &C,
        limit: Duration,
        op: impl Future<Output = Result<T, E>>,
    ) -> Result<T, ErrorKind> {
        match timeout(clock, limit, op).await {
            Ok(r) => r.map_err(|e| e.kind()),
            Err(TimedOut) => Err(ErrorKind::TimedOut),
        }
    }
}

impl<C, S> ErrorType for Timed<C, S> {
    type Error = ErrorKind;
}

impl<C: Clock, S: Stream> embedded_io_async::Read for Timed<C, S> {
    async fn read(&mut self, buf: &mut [u8]) -> Result<usize, ErrorKind> {
        self.read_send(buf).await
    }
}

impl<C: Clock, S: Stream> embedded_io_async::Write for Timed<C, S> {
    async fn write(&mut self, buf: &[u8]) -> Result<usize, ErrorKind> {
        self.write_send(buf).await
    }

    async fn flush(&mut self) -> Result<(), ErrorKind> {
        self.flush_send().await
    }
}

impl<C: Clock, S: Stream> Stream for Timed<C, S> {
    async fn read_send(&mut self, buf: &mut [u8]) -> Result<usize, ErrorKind> {
        Self::bounded(&self.clock, self.read_timeout, self.inner.read_send(buf)).await
    }

    async fn write_send(&mut self, buf: &[u8]) -> Result<usize, ErrorKind> {
        Self::bounded(&self.clock, self.write_timeout, self.inner.write_send(buf)).await
    }

    async fn flush_send(&mut self) -> Result<(), ErrorKind> {
        Self::bounded(&self.clock, self.write_timeout, self.inner.flush_send()).await
    }

    async fn shutdown_write(&mut self) -> Result<(), ErrorKind> {
        Self::bounded(&self.clock, self.write_timeout, self.inner.shutdown_write()).await
    }

    fn as_any_mut(&mut self) -> Option<&mut dyn core::any::Any> {
        self.inner.as_any_mut()
    }

    /// One splice round waits for the source and then writes: it is bounded by the longer of
    /// the two timeouts, and running out of it counts as the source's (a stalled sender is the
    /// usual case).
    async fn splice_from<T: Stream>(
        &mut self,
        src: &mut T,
        max: u64,
    ) -> Option<Result<u64, SpliceError<ErrorKind>>> {
        let limit = self.read_timeout.max(self.write_timeout);
        match timeout(&self.clock, limit, self.inner.splice_from(src, max)).await {
            Ok(r) => r,
            Err(TimedOut) => Some(Err(SpliceError::Source(ErrorKind::TimedOut))),
        }
    }
}
