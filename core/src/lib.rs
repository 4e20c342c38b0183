//! Ferry's core: everything that is not I/O.
//!
//! `no_std` by default in spirit: `alloc` (on by default) brings the buffer pool and owned
//! buffers, `std` brings the process-wide pool and `std::io` interop. Streaming pieces speak
//! `embedded-io` (`Read` for generated bodies, `Write` for hashing sinks) so they can be
//! driven by any runtime.
#![no_std]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

#[cfg(feature = "alloc")]
pub mod fill;
pub mod md5;
#[cfg(feature = "alloc")]
pub mod pool;
#[cfg(feature = "alloc")]
pub mod rt;
pub mod time;

#[cfg(feature = "alloc")]
pub mod http;
#[cfg(feature = "alloc")]
pub mod place;
#[cfg(feature = "alloc")]
pub mod s3;
