//! Relaying a body from one HTTP connection to another (a proxy's work): a client's request
//! body into a request to a backend, a backend's response body into the response to the
//! client. Between two plain `Content-Length` bodies the bytes move inside the kernel where
//! the streams allow ([`Stream::splice_from`]); otherwise they are copied through the
//! connection buffers. Either way a failure says which side it came from ([`RelayError`]).
//!
//! This module sits above both engines: it is the only place where the server's
//! [`BodyReader`] meets the client's [`RequestWriter`], and the client's [`ResponseBody`] the
//! server's [`ResponseWriter`].

use core::sync::atomic::Ordering;

use super::body::BodyKind;
use super::client::conn::Phase;
use super::client::{RequestWriter, ResponseBody};
use super::error::{HttpError, RelayError};
use super::server::response::RespState;
use super::server::{BodyReader, ResponseWriter, Shared};
use crate::rt::{Clock, Stream};

impl<C: Clock, S: Stream> RequestWriter<'_, C, S> {
    /// Send a request body the HTTP server is reading (a client's, in a proxy) as this
    /// request's body, returning the bytes relayed. Between two `Content-Length` bodies the
    /// bytes move inside the kernel where the streams allow ([`Stream::splice_from`]);
    /// otherwise, and for what is already buffered, they are copied as by
    /// [`RequestWriter::write`]. Does not [`finish`](RequestWriter::finish).
    pub async fn relay<T: Stream>(
        &mut self,
        body: &mut BodyReader<'_, T>,
    ) -> Result<u64, RelayError> {
        let start = body.received();
        let (src, sink) = (RelayError::Source, RelayError::Sink);
        if matches!(self.kind, BodyKind::Length(_))
            && matches!(body.kind(), BodyKind::Length(_))
            && !self.finished
        {
            while let Some(chunk) = body.take_buffered().map_err(src)? {
                self.write(chunk).await.map_err(sink)?;
            }
            while let Some(left) = body.direct_ready().await.map_err(src)? {
                self.conn.flush().await.map_err(sink)?;
                let max = left.min(self.remaining);
                if max == 0 {
                    self.conn.phase = Phase::Broken;
                    return Err(sink(HttpError::Usage(
                        "body longer than its Content-Length",
                    )));
                }
                match body.splice_to(&mut self.conn.io, max).await {
                    // Not for these streams: copy the rest below.
                    None => break,
                    Some(Ok(n)) => self.remaining -= n.min(self.remaining),
                    Some(Err(e)) => {
                        self.conn.phase = Phase::Broken;
                        return Err(e);
                    }
                }
            }
        }
        while let Some(chunk) = body.next_chunk().await.map_err(src)? {
            self.write(chunk).await.map_err(sink)?;
        }
        Ok(body.received() - start)
    }
}

impl<S: Stream> ResponseWriter<'_, S> {
    /// Send a response the HTTP client is reading (a backend's, in a proxy) as this response's
    /// body, returning the bytes relayed. Between two `Content-Length` bodies the bytes move
    /// inside the kernel where the streams allow ([`Stream::splice_from`]); otherwise, and for
    /// what is already buffered, they are copied as by [`ResponseWriter::write`]. Does not
    /// [`finish`](ResponseWriter::finish).
    pub async fn relay<T: Stream>(
        &mut self,
        body: &mut ResponseBody<'_, T>,
    ) -> Result<u64, RelayError> {
        let start = body.received();
        let (src, sink) = (RelayError::Source, RelayError::Sink);
        if matches!(
            self.state,
            RespState::Body {
                kind: BodyKind::Length(_),
                ..
            }
        ) && matches!(body.kind(), BodyKind::Length(_))
        {
            while let Some(chunk) = body.take_buffered().map_err(src)? {
                self.write(chunk).await.map_err(sink)?;
            }
            while let Some(left) = body.skippable() {
                let RespState::Body { kind, remaining } = self.state else {
                    let e = HttpError::Usage("relayed body longer than the response");
                    return Err(sink(e));
                };
                self.flush().await.map_err(sink)?;
                let moved = {
                    let busy = || sink(Shared::<S>::busy());
                    let mut io = self.shared.io.try_lock().ok_or_else(busy)?;
                    io.splice_from(body.stream(), left.min(remaining)).await
                };
                let moved = match moved {
                    // Not for these streams: copy the rest below.
                    None => break,
                    Some(Ok(0)) => Err(src(HttpError::UnexpectedEof)),
                    Some(Ok(n)) if n <= remaining => Ok(n),
                    Some(Ok(_)) => Err(sink(HttpError::Usage("splice moved more than asked"))),
                    Some(Err(e)) => Err(RelayError::spliced(e)),
                };
                let n = match moved {
                    Ok(n) => n,
                    Err(e) => {
                        // Some bytes may have been moved: neither side can continue.
                        self.state = RespState::Failed;
                        self.shared.broken.store(true, Ordering::Relaxed);
                        let _ = body.skipped(Err(e.clone().into_inner()));
                        return Err(e);
                    }
                };
                body.skipped(Ok(n)).map_err(src)?;
                self.body_sent += n;
                self.state = match remaining - n {
                    0 => RespState::Done,
                    remaining => RespState::Body { kind, remaining },
                };
            }
        }
        while let Some(chunk) = body.next_chunk().await.map_err(src)? {
            self.write(chunk).await.map_err(sink)?;
        }
        Ok(body.received() - start)
    }
}

/// What relaying needs of the server's body reader: the buffered bytes, then a splice.
impl<S: Stream> BodyReader<'_, S> {
    /// Body bytes already buffered (no I/O); `None` when more must be read or it is done.
    fn take_buffered(&mut self) -> Result<Option<&[u8]>, HttpError> {
        let r = self.state.take(usize::MAX);
        if r.is_err() {
            self.shared.body_failed.store(true, Ordering::Relaxed);
        }
        self.shared.publish(&self.state);
        Ok(r?.map(|r| self.state.slice(r)))
    }

    /// Splice up to `max` body bytes from the connection into `dst` (see
    /// [`Stream::splice_from`]) and account for them; `None` if these streams cannot.
    async fn splice_to<D: Stream>(
        &mut self,
        dst: &mut D,
        max: u64,
    ) -> Option<Result<u64, RelayError>> {
        let moved = {
            let Some(mut io) = self.shared.io.try_lock() else {
                return Some(Err(RelayError::Source(Shared::<S>::busy())));
            };
            io.splice_to(dst, max).await?
        };
        let r = match moved {
            Ok(0) => Err(RelayError::Source(HttpError::UnexpectedEof)),
            Ok(n) => self.state.skip(n).map(|()| n).map_err(RelayError::Source),
            Err(e) => Err(RelayError::spliced(e)),
        };
        if r.is_err() {
            self.shared.body_failed.store(true, Ordering::Relaxed);
            self.shared.broken.store(true, Ordering::Relaxed);
        } else {
            self.shared.continue_sent.store(true, Ordering::Relaxed);
        }
        self.shared.publish(&self.state);
        Some(r)
    }
}

/// What relaying needs of the client's response body: the buffered bytes, then a splice.
impl<T: Stream> ResponseBody<'_, T> {
    /// Body bytes already buffered (no I/O); `None` when more must be read or it is done.
    fn take_buffered(&mut self) -> Result<Option<&[u8]>, HttpError> {
        let r = self.state.take(usize::MAX);
        if r.is_err() {
            *self.phase = Phase::Broken;
        } else {
            self.settle();
        }
        Ok(r?.map(|r| self.state.slice(r)))
    }

    /// `Length` bodies with nothing buffered: bytes still to come (to move past this reader
    /// with [`ResponseBody::skipped`]); `None` otherwise.
    fn skippable(&self) -> Option<u64> {
        self.state
            .can_skip()
            .then(|| self.state.remaining())
            .filter(|&n| n > 0)
    }

    /// The stream the body comes from.
    fn stream(&mut self) -> &mut T {
        self.io
    }

    /// Account for `n` body bytes moved from the stream by someone else, or for the failure
    /// of that move (`Err`: the connection cannot be reused).
    fn skipped(&mut self, moved: Result<u64, HttpError>) -> Result<(), HttpError> {
        let r = moved.and_then(|n| self.state.skip(n));
        if r.is_err() {
            *self.phase = Phase::Broken;
        } else {
            self.settle();
        }
        r
    }
}
