//! splice(2) between two sockets through a pipe, on tokio's readiness.

use std::io;

use ferry_core::pipe::Pipe;
use ferry_core::rt::SpliceError;
use tokio::io::Interest;
use tokio::net::TcpStream;

/// Move up to `max` bytes from `src` to `dst`: wait until `src` has some, move what it has
/// (up to the pipe's size) into the pipe, then all of it out to `dst`.
pub(crate) async fn round(
    src: &TcpStream,
    dst: &TcpStream,
    pipe: &mut Pipe,
    max: u64,
) -> Result<u64, SpliceError<embedded_io::ErrorKind>> {
    let n = async {
        loop {
            src.readable().await?;
            match src.try_io(Interest::READABLE, || pipe.fill_from(src, max)) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                r => break r,
            }
        }
    }
    .await
    .map_err(|e| SpliceError::Source(embedded_io::Error::kind(&e)))?;
    async {
        while !pipe.is_empty() {
            dst.writable().await?;
            match dst.try_io(Interest::WRITABLE, || pipe.drain_to(dst)) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                r => r?,
            };
        }
        Ok::<_, io::Error>(())
    }
    .await
    .map_err(|e| SpliceError::Sink(embedded_io::Error::kind(&e)))?;
    Ok(n as u64)
}
