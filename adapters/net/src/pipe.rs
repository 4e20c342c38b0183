//! A kernel pipe for moving bytes between two sockets with `splice(2)` (Linux): the bytes go
//! socket -> pipe -> socket as page references and never through user space; and
//! `sendfile(2)` from a file to a socket, which needs no pipe.
//!
//! The system calls are non-blocking on the socket; one `round` (one `send_file`) waits for
//! the sockets' readiness through the [`Adapter`] (see `Stream::splice_from`,
//! `Stream::send_file`).

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};

use embedded_io::ErrorKind;
use ferry_core::rt::SpliceError;
use rustix::pipe::{PipeFlags, SpliceFlags, fcntl_setpipe_size, pipe_with, splice};

use crate::{Adapter, kind};

/// The pipe size asked for: one of the proxy's default copy buffers (the kernel may refuse
/// it, above `/proc/sys/fs/pipe-max-size`; the default 64 KiB then stays).
pub const PIPE_SIZE: usize = 256 * 1024;

/// A non-blocking pipe and the number of bytes in it.
#[derive(Debug)]
pub struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
    len: usize,
    capacity: usize,
}

impl Pipe {
    /// A new empty pipe (close-on-exec, non-blocking) of up to [`PIPE_SIZE`] bytes.
    pub fn new() -> io::Result<Self> {
        let (read, write) = pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK)?;
        let capacity = fcntl_setpipe_size(&write, PIPE_SIZE).unwrap_or(64 * 1024);
        Ok(Self {
            read,
            write,
            len: 0,
            capacity,
        })
    }

    /// Bytes in the pipe, not yet moved out.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the pipe is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Move up to `max` bytes from `src` into the (empty) pipe; `Ok(0)` at the end of `src`,
    /// `WouldBlock` when it has nothing yet.
    pub fn fill_from(&mut self, src: impl AsFd, max: u64) -> io::Result<usize> {
        let room = self.capacity.saturating_sub(self.len);
        let want = usize::try_from(max).unwrap_or(usize::MAX).min(room);
        let flags = SpliceFlags::MOVE | SpliceFlags::NONBLOCK;
        let n = splice(src, None, &self.write, None, want, flags)?;
        self.len += n;
        Ok(n)
    }

    /// Move bytes from the pipe to `dst`; `WouldBlock` when `dst` cannot take any now.
    pub fn drain_to(&mut self, dst: impl AsFd) -> io::Result<usize> {
        let flags = SpliceFlags::MOVE | SpliceFlags::NONBLOCK;
        let n = splice(&self.read, None, dst, None, self.len, flags)?;
        if n == 0 && self.len > 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        self.len -= n;
        Ok(n)
    }
}

/// A connection's pipe: made on first use, kept while rounds succeed, dropped after a failed
/// one (bytes may be left in it).
#[derive(Debug, Default)]
pub struct PipeSlot(Option<Pipe>);

impl PipeSlot {
    /// The pipe, made now if needed; `None` if the system refuses one (the caller copies).
    pub fn get(&mut self) -> Option<&mut Pipe> {
        match &mut self.0 {
            Some(p) => Some(p),
            empty => Pipe::new().ok().map(|p| empty.insert(p)),
        }
    }

    /// Keep the pipe after a round only if it succeeded.
    pub fn keep_if<T, E>(&mut self, round: &Result<T, E>) {
        if round.is_err() {
            self.0 = None;
        }
    }
}

/// Move up to `max` bytes from `src` to `dst`: wait until `src` has some, move what it has (up
/// to the pipe's size) into the pipe, then all of it out to `dst`.
pub(crate) async fn round<A: Adapter>(
    src: &A::Socket,
    dst: &A::Socket,
    pipe: &mut Pipe,
    max: u64,
) -> Result<u64, SpliceError<ErrorKind>> {
    let n = A::read_with(src, |fd| pipe.fill_from(fd, max))
        .await
        .map_err(|e| SpliceError::Source(kind(e)))?;
    while !pipe.is_empty() {
        A::write_with(dst, |fd| pipe.drain_to(fd))
            .await
            .map_err(|e| SpliceError::Sink(kind(e)))?;
    }
    Ok(n as u64)
}

/// The most one `sendfile(2)` moves (Linux stops at 0x7ffff000 bytes anyway).
const SEND_FILE_MAX: u64 = 1 << 30;

/// Send up to `len` bytes of `file` from `offset` to `dst`: wait until `dst` can take bytes,
/// then send what it takes at once. `Ok(0)` when the file ends before `offset`. Reading the
/// file may wait for the disk (the page cache usually has it).
pub(crate) async fn send_file<A: Adapter>(
    dst: &A::Socket,
    file: &File,
    offset: u64,
    len: u64,
) -> io::Result<u64> {
    if len == 0 {
        return Ok(0);
    }
    let count = usize::try_from(len.min(SEND_FILE_MAX)).unwrap_or(usize::MAX);
    A::write_with(dst, |fd| {
        let mut at = offset;
        rustix::fs::sendfile(fd, file, Some(&mut at), count).map_err(io::Error::from)
    })
    .await
    .map(|n| n as u64)
}
