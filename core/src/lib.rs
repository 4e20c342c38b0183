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

// Whether the CPU has an x86 feature: run-time detection with `std`, compile-time without.
// Shared by the SIMD kernels (`md5::simd`, `fill`); defined before the modules that use it.
macro_rules! x86_feature {
    ($f:tt) => {{
        #[cfg(all(target_arch = "x86_64", feature = "std"))]
        let on = std::is_x86_feature_detected!($f);
        #[cfg(all(target_arch = "x86_64", not(feature = "std")))]
        let on = cfg!(target_feature = $f);
        #[cfg(not(target_arch = "x86_64"))]
        let on = false;
        on
    }};
}

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
#[cfg(feature = "sse")]
pub mod sse;
#[cfg(feature = "alloc")]
pub mod stats;
