//! Ferry on tokio (work in progress).
