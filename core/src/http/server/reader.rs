//! The request body as the handler reads it.

use core::ops::Range;
use core::sync::atomic::Ordering;

use embedded_io::{Error as _, ErrorType};
use httparse::Header;

use super::{CONTINUE, Shared};
use crate::http::body::BodyKind;
use crate::http::error::{HttpError, io_error};
use crate::http::incoming::BodyState;
use crate::http::timed::write_all;
use crate::rt::Stream;

/// The request body: `Content-Length` or chunked, streamed from the connection buffer.
///
/// [`BodyReader::next_chunk`] hands out slices of the buffer (zero copy);
/// [`BodyReader::read`] (also the `embedded-io-async` `Read` impl) copies. The first read that
/// needs bytes from the network sends `100 Continue` if the client asked for it.
#[derive(Debug)]
pub struct BodyReader<'c, S> {
    pub(crate) state: BodyState<'c>,
    pub(crate) shared: &'c Shared<S>,
}

impl<S: Stream> BodyReader<'_, S> {
    /// How the body is framed (`None` for no body).
    pub fn kind(&self) -> BodyKind {
        self.state.kind()
    }

    /// The declared `Content-Length`, if any.
    pub fn content_length(&self) -> Option<u64> {
        match self.state.kind() {
            BodyKind::Length(n) => Some(n),
            _ => None,
        }
    }

    /// Whether the whole body (and its trailers) has been read.
    pub fn is_done(&self) -> bool {
        self.state.is_done()
    }

    /// Body bytes received so far.
    pub fn received(&self) -> u64 {
        self.state.total()
    }

    /// The next run of body bytes, borrowed from the connection buffer; `None` at the end.
    pub async fn next_chunk(&mut self) -> Result<Option<&[u8]>, HttpError> {
        let r = self.next_range(usize::MAX, true).await?;
        Ok(r.map(|r| self.state.slice(r)))
    }

    /// Copy body bytes into `buf`; `0` at the end (or if `buf` is empty).
    pub async fn read(&mut self, buf: &mut [u8]) -> Result<usize, HttpError> {
        let Some(r) = self.next_range(buf.len(), true).await? else {
            return Ok(0);
        };
        let src = self.state.slice(r);
        let n = src.len();
        if let Some(dst) = buf.get_mut(..n) {
            dst.copy_from_slice(src);
        }
        Ok(n)
    }

    /// As [`read`](Self::read), but a `Content-Length` body with nothing buffered is read
    /// from the connection straight into `buf`, not through the connection buffer: the body
    /// is copied once (by the kernel) instead of twice, in reads as large as `buf` rather than
    /// the connection buffer (twice the head limit: 32 KiB by default). `0` at the end.
    pub async fn read_direct(&mut self, buf: &mut [u8]) -> Result<usize, HttpError> {
        let Some(remaining) = self.direct_ready().await? else {
            return self.read(buf).await;
        };
        let n = usize::try_from(remaining)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let Some(dst) = buf.get_mut(..n).filter(|d| !d.is_empty()) else {
            return Ok(0);
        };
        let read = match self.shared.io.try_lock() {
            Some(mut io) => io.read_send(dst).await.map_err(|e| io_error(e.kind())),
            None => Err(Shared::<S>::busy()),
        };
        let r = match read {
            Ok(0) => Err(HttpError::UnexpectedEof),
            Ok(n) => self.state.skip(n as u64).map(|()| n),
            Err(e) => Err(e),
        };
        match &r {
            Ok(_) => self.shared.continue_sent.store(true, Ordering::Relaxed),
            Err(e) => {
                self.shared.body_failed.store(true, Ordering::Relaxed);
                if matches!(e, HttpError::Io(_)) {
                    self.shared.broken.store(true, Ordering::Relaxed);
                }
            }
        }
        self.shared.publish(&self.state);
        r
    }

    /// `Length` bodies with nothing buffered: send `100 Continue` if it is due and return the
    /// bytes still to come, to move past this reader (with [`BodyReader::read_direct`], or a
    /// splice when relaying); `None` otherwise.
    pub(crate) async fn direct_ready(&mut self) -> Result<Option<u64>, HttpError> {
        if !self.state.can_skip() || self.state.remaining() == 0 {
            return Ok(None);
        }
        if self.shared.continue_pending() {
            if self.shared.response_started.load(Ordering::Relaxed) {
                return Err(HttpError::Usage(
                    "request body read after the response, without 100 Continue",
                ));
            }
            let mut io = self.shared.io.try_lock().ok_or_else(Shared::<S>::busy)?;
            if let Err(e) = write_all(&mut *io, CONTINUE).await {
                self.shared.broken.store(true, Ordering::Relaxed);
                return Err(e);
            }
            self.shared.continue_sent.store(true, Ordering::Relaxed);
        }
        Ok(Some(self.state.remaining()))
    }

    /// The trailer fields of a chunked body (empty until it is done, or if there were none).
    pub fn trailers<'s, 'h>(
        &'s self,
        storage: &'h mut [Header<'s>],
    ) -> Result<&'h [Header<'s>], HttpError> {
        self.state.trailers(storage)
    }

    pub(crate) async fn next_range(
        &mut self,
        max: usize,
        may_continue: bool,
    ) -> Result<Option<Range<usize>>, HttpError> {
        let r = self.next_inner(max, may_continue).await;
        if r.is_err() {
            self.shared.body_failed.store(true, Ordering::Relaxed);
        }
        if self.state.total() > 0 {
            // The client is sending without waiting: no 100 is due any more.
            self.shared.continue_sent.store(true, Ordering::Relaxed);
        }
        self.shared.publish(&self.state);
        r
    }

    async fn next_inner(
        &mut self,
        max: usize,
        may_continue: bool,
    ) -> Result<Option<Range<usize>>, HttpError> {
        loop {
            if let Some(r) = self.state.take(max)? {
                return Ok(Some(r));
            }
            if !self.state.needs_input() || max == 0 {
                return Ok(None);
            }
            let mut io = self.shared.io.try_lock().ok_or_else(Shared::<S>::busy)?;
            if self.shared.continue_pending() {
                if !may_continue || self.shared.response_started.load(Ordering::Relaxed) {
                    // The client waits for a 100 that will never come: it may not send the body.
                    return Err(HttpError::Usage(
                        "request body read after the response, without 100 Continue",
                    ));
                }
                let sent = write_all(&mut *io, CONTINUE).await;
                if let Err(e) = sent {
                    self.shared.broken.store(true, Ordering::Relaxed);
                    return Err(e);
                }
                self.shared.continue_sent.store(true, Ordering::Relaxed);
            }
            let filled = self.state.fill(&mut *io).await;
            if let Err(HttpError::Io(_)) = filled {
                self.shared.broken.store(true, Ordering::Relaxed);
            }
            filled?;
        }
    }

    /// Discard the rest of the body, up to `limit` bytes; whether it ended within the limit.
    pub(crate) async fn drain(&mut self, limit: u64) -> bool {
        let start = self.state.total();
        loop {
            match self.next_range(usize::MAX, false).await {
                Ok(Some(_)) if self.state.total() - start <= limit => {}
                Ok(None) => return self.state.is_done(),
                _ => return false,
            }
        }
    }
}

impl<S: Stream> ErrorType for BodyReader<'_, S> {
    type Error = HttpError;
}

impl<S: Stream> embedded_io_async::Read for BodyReader<'_, S> {
    async fn read(&mut self, buf: &mut [u8]) -> Result<usize, HttpError> {
        BodyReader::read(self, buf).await
    }
}
