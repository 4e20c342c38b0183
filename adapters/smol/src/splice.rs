//! splice(2) between two sockets through a pipe, on smol's readiness.

use std::net::TcpStream;

use ferry_core::pipe::Pipe;
use ferry_core::rt::SpliceError;
use smol::Async;

/// Move up to `max` bytes from `src` to `dst`: wait until `src` has some, move what it has
/// (up to the pipe's size) into the pipe, then all of it out to `dst`.
pub(crate) async fn round(
    src: &Async<TcpStream>,
    dst: &Async<TcpStream>,
    pipe: &mut Pipe,
    max: u64,
) -> Result<u64, SpliceError<embedded_io::ErrorKind>> {
    let kind = |e: std::io::Error| embedded_io::Error::kind(&e);
    let n = src
        .read_with(|s| pipe.fill_from(s, max))
        .await
        .map_err(|e| SpliceError::Source(kind(e)))?;
    while !pipe.is_empty() {
        dst.write_with(|s| pipe.drain_to(s))
            .await
            .map_err(|e| SpliceError::Sink(kind(e)))?;
    }
    Ok(n as u64)
}
