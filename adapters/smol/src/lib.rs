//! Ferry on smol (work in progress).
