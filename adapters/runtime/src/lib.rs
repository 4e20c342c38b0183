//! The runtime picked at run time (quinn's `default_runtime()`, but chosen by `--runtime`):
//! [`RuntimeKind`] names it, [`block_on`] runs an [`OnRuntime`] task on it.
//!
//! Both adapters are always compiled in; a program is written once, generic over
//! `ferry_net::NetRuntime`, and this is the one place that turns the name into a runtime.

use std::fmt;
use std::future::Future;
use std::io;
use std::str::FromStr;

use ferry_net::NetRuntime;

/// Which async runtime runs a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RuntimeKind {
    /// tokio, multi-threaded.
    #[default]
    Tokio,
    /// smol: an `async-executor` run by one thread per worker.
    Smol,
}

impl RuntimeKind {
    /// Every runtime, in the order the command lines list them.
    pub const ALL: [Self; 2] = [Self::Tokio, Self::Smol];

    /// The name `--runtime` takes.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Tokio => "tokio",
            Self::Smol => "smol",
        }
    }
}

impl FromStr for RuntimeKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "tokio" => Ok(Self::Tokio),
            "smol" => Ok(Self::Smol),
            other => Err(format!(
                "unknown runtime {other:?} (expected tokio or smol)"
            )),
        }
    }
}

impl fmt::Display for RuntimeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A task to run on whichever runtime [`block_on`] picks.
///
/// A trait rather than a closure: a closure cannot be generic over the runtime type, a trait
/// method can (the task is usually a struct of the arguments of one generic `async fn`).
pub trait OnRuntime {
    /// What the task returns.
    type Output;

    /// The task, on runtime `rt`.
    fn run<R: NetRuntime>(self, rt: R) -> impl Future<Output = Self::Output>;
}

/// Start runtime `kind` with `threads` worker threads (0: one per CPU), run `task` on it to
/// completion and stop the runtime; an error only if the runtime cannot start.
pub fn block_on<T: OnRuntime>(kind: RuntimeKind, threads: usize, task: T) -> io::Result<T::Output> {
    match kind {
        RuntimeKind::Tokio => ferry_tokio::block_on_threads(threads, |rt| task.run(rt)),
        RuntimeKind::Smol => ferry_smol::block_on_threads(threads, |rt| task.run(rt)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for kind in RuntimeKind::ALL {
            assert_eq!(kind.as_str().parse::<RuntimeKind>(), Ok(kind));
            assert_eq!(kind.to_string(), kind.as_str());
        }
        let err = "glommio".parse::<RuntimeKind>().unwrap_err();
        assert!(err.contains("expected tokio or smol"), "{err}");
        assert_eq!(RuntimeKind::default(), RuntimeKind::Tokio);
    }
}
