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

/// A bound on how long a run of reads (one request body, one drain) may wait in all: a grace
/// period plus `1 / min_rate` seconds for every byte read.
///
/// Only the time spent waiting in reads counts: a handler that is slow to read (a busy disk, a
/// slow backend) does not use up its client's budget, while a client sending below the rate
/// runs out of it however it spaces its bytes, which a timeout per read cannot catch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadBudget {
    grace: Duration,
    min_rate: u64,
    waited: Duration,
    bytes: u64,
}

impl ReadBudget {
    /// `grace` in all, plus one second for every `min_rate` bytes read (`0`: nothing per byte,
    /// a fixed total).
    pub const fn new(grace: Duration, min_rate: u64) -> Self {
        Self {
            grace,
            min_rate,
            waited: Duration::ZERO,
            bytes: 0,
        }
    }

    /// How long the next read may wait.
    pub fn left(&self) -> Duration {
        let earned = match self.min_rate {
            0 => Duration::ZERO,
            rate => {
                let nanos = u128::from(self.bytes) * 1_000_000_000 / u128::from(rate);
                let secs = u64::try_from(nanos / 1_000_000_000).unwrap_or(u64::MAX);
                // Below one second: fits in u32.
                Duration::new(secs, (nanos % 1_000_000_000) as u32)
            }
        };
        self.grace
            .saturating_add(earned)
            .saturating_sub(self.waited)
    }

    /// Bytes read so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    fn spend(&mut self, waited: Duration, bytes: usize) {
        self.waited = self.waited.saturating_add(waited);
        self.bytes = self.bytes.saturating_add(bytes as u64);
    }
}

/// A stream whose every read and write has a timeout; its errors are [`ErrorKind`]s.
///
/// A [`ReadBudget`] may bound a run of reads as a whole on top of the timeout per read.
#[derive(Debug)]
pub struct Timed<C, S> {
    clock: C,
    inner: S,
    read_timeout: Duration,
    write_timeout: Duration,
    budget: Option<ReadBudget>,
}

impl<C: Clock, S: Stream> Timed<C, S> {
    /// Wrap `inner`, bounding each read by `read_timeout` and each write by `write_timeout`.
    pub fn new(clock: C, inner: S, read_timeout: Duration, write_timeout: Duration) -> Self {
        Self {
            clock,
            inner,
            read_timeout,
            write_timeout,
            budget: None,
        }
    }

    /// Bound the reads from now on by `budget` as well (`None`: by their timeout only).
    pub fn set_budget(&mut self, budget: Option<ReadBudget>) {
        self.budget = budget;
    }

    /// The budget of the reads, with what they have spent of it.
    pub fn budget(&self) -> Option<ReadBudget> {
        self.budget
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
        let Some(mut budget) = self.budget else {
            return Self::bounded(&self.clock, self.read_timeout, self.inner.read_send(buf)).await;
        };
        let start = self.clock.now();
        let limit = self.read_timeout.min(budget.left());
        let r = Self::bounded(&self.clock, limit, self.inner.read_send(buf)).await;
        let waited = self.clock.now().saturating_sub(start);
        budget.spend(waited, *r.as_ref().unwrap_or(&0));
        self.budget = Some(budget);
        r
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

    async fn readable(&mut self) -> Result<(), ErrorKind> {
        self.inner.readable().await.map_err(|e| e.kind())
    }

    fn as_any_mut(&mut self) -> Option<&mut dyn core::any::Any> {
        self.inner.as_any_mut()
    }

    fn is_secure(&self) -> bool {
        self.inner.is_secure()
    }

    fn tls_version(&self) -> Option<&'static str> {
        self.inner.tls_version()
    }

    #[cfg(feature = "std")]
    fn can_send_file(&self) -> bool {
        self.inner.can_send_file()
    }

    /// Each `sendfile` (waiting until the client takes bytes, then sending) is a write: it is
    /// bounded by the write timeout.
    #[cfg(feature = "std")]
    async fn send_file(
        &mut self,
        file: &std::fs::File,
        offset: u64,
        len: u64,
    ) -> Option<Result<u64, ErrorKind>> {
        let send = self.inner.send_file(file, offset, len);
        match timeout(&self.clock, self.write_timeout, send).await {
            Ok(r) => Some(r?.map_err(|e| e.kind())),
            Err(TimedOut) => Some(Err(ErrorKind::TimedOut)),
        }
    }

    /// A splice out of this stream spends its read budget (the whole round: waiting for the
    /// bytes, then writing them); running out of it counts as this side's timeout.
    async fn splice_to<D: Stream>(
        &mut self,
        dst: &mut D,
        max: u64,
    ) -> Option<Result<u64, SpliceError<ErrorKind>>> {
        let Some(mut budget) = self.budget else {
            return dst.splice_from(&mut self.inner, max).await;
        };
        let start = self.clock.now();
        let r = match timeout(
            &self.clock,
            budget.left(),
            dst.splice_from(&mut self.inner, max),
        )
        .await
        {
            Ok(r) => r?,
            Err(TimedOut) => Err(SpliceError::Source(ErrorKind::TimedOut)),
        };
        let moved = r
            .as_ref()
            .map_or(0, |&n| usize::try_from(n).unwrap_or(usize::MAX));
        budget.spend(self.clock.now().saturating_sub(start), moved);
        self.budget = Some(budget);
        Some(r)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_budget_grows_with_bytes_and_shrinks_with_waiting() {
        let secs = Duration::from_secs;
        let mut b = ReadBudget::new(secs(10), 100);
        assert_eq!(b.left(), secs(10));
        b.spend(secs(4), 250);
        assert_eq!(b.left(), Duration::from_millis(8_500));
        b.spend(secs(20), 0);
        assert_eq!(b.left(), Duration::ZERO);
        assert_eq!(b.bytes(), 250);
        // No rate: a fixed total, however many bytes come.
        let mut fixed = ReadBudget::new(secs(5), 0);
        fixed.spend(secs(1), 1 << 30);
        assert_eq!(fixed.left(), secs(4));
        // Huge counts saturate instead of overflowing.
        let mut big = ReadBudget::new(Duration::MAX, 1);
        big.spend(Duration::ZERO, usize::MAX);
        assert_eq!(big.left(), Duration::MAX);
    }
}
