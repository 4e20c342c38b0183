//! Giving freed heap memory back to the system after a burst.
//!
//! glibc's malloc keeps what a burst freed inside its per-thread arenas: it returns memory by
//! itself only from the top of the main heap, so after 10,000 idle connections came and went
//! through `ferry proxy` its resident size stayed at 3.5x the idle baseline (25 of 32 MiB, in
//! two arenas; see the flood figures in `benches/README.md`). `malloc_trim(0)` hands every
//! whole free page of every arena back (`madvise(MADV_DONTNEED)`). The listeners call it after
//! each trim of the buffer pool (every 10 s, `ServerConfig::after_trim`). Neither `rustix` nor
//! `nix` wraps `malloc_trim`, an allocator call rather than a system call, so this module calls
//! it through `libc`, its only unsafe code.

/// Ask the allocator to return freed memory to the system (glibc on Linux; elsewhere nothing).
/// Where jemalloc is the allocator (`ferry` with feature `jemalloc`) this trims only what C code
/// left in glibc's heap: jemalloc's background threads purge its own freed pages after
/// `dirty_decay_ms` (10 s) by themselves (`crate::heap::MALLOC_CONF`).
pub(crate) fn release_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    // SAFETY: malloc_trim takes a plain integer (the padding to keep at the top of the heap),
    // touches only the allocator's own state under its arena locks, and may be called from any
    // thread at any time; it returns whether memory was released, which changes nothing here.
    unsafe {
        libc::malloc_trim(0);
    }
}
