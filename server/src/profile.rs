//! CPU profiles of the whole process for `GET /debug/pprof/profile` on the admin listener:
//! the `pprof` crate's sampler (SIGPROF at 99 Hz), rendered as a gzipped pprof protobuf (what
//! Go's `net/http/pprof` serves) or as a flamegraph SVG.
//!
//! Profiling is process-wide, so one profile runs at a time ([`Running`]). The wait and the
//! rendering block, so they run off the reactor ([`Runtime::unblock`]); a profile whose
//! request goes away (the connection dropped, the server stopping) ends early.
//!
//! Samples are not labelled by S3 operation: pprof-rs records stacks and thread names only
//! (no per-sample labels like Go's `pprof.Do`).
//!
//! [`Runtime::unblock`]: ferry_core::rt::Runtime::unblock

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use pprof::protos::Message as _;

/// Profile length without `seconds` (Go's default).
pub(crate) const DEFAULT_SECONDS: u64 = 30;
/// The longest profile served.
pub(crate) const MAX_SECONDS: u64 = 300;
/// Samples per second of CPU time: Go's 100, less one so that sampling does not run in
/// lockstep with periodic work.
const FREQUENCY: i32 = 99;
/// Libraries whose code a sample may not start in: libgcc's unwinder is not signal-safe from
/// there, and some vdso builds carry wrong unwind tables (pprof-rs's advice). Samples taken
/// inside them (libc's memcpy, syscall wrappers) are dropped.
const BLOCKLIST: [&str; 4] = ["libc", "libgcc", "pthread", "vdso"];

/// What the profile is rendered as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// gzipped pprof protobuf (`go tool pprof` reads it).
    Pprof,
    /// A flamegraph (SVG).
    Svg,
}

impl Format {
    /// The name `format=` takes.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Pprof => "pprof",
            Self::Svg => "svg",
        }
    }

    /// The response's `Content-Type`.
    pub(crate) fn content_type(self) -> &'static str {
        match self {
            Self::Pprof => "application/octet-stream",
            Self::Svg => "image/svg+xml",
        }
    }
}

/// A profile request: how long, in what format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProfileRequest {
    pub seconds: u64,
    pub format: Format,
}

impl ProfileRequest {
    /// From the query string: `seconds` (1 to [`MAX_SECONDS`], default [`DEFAULT_SECONDS`]) and
    /// `format` (`svg`; `pprof`, `proto` or absent for the protobuf). Other parameters are
    /// ignored; a bad value is an error message for a 400.
    pub(crate) fn from_query(query: &str) -> Result<Self, String> {
        let mut req = Self {
            seconds: DEFAULT_SECONDS,
            format: Format::Pprof,
        };
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            match name {
                "seconds" => {
                    req.seconds = value
                        .parse::<u64>()
                        .ok()
                        .filter(|s| (1..=MAX_SECONDS).contains(s))
                        .ok_or_else(|| {
                            format!(
                                "seconds must be a whole number from 1 to {MAX_SECONDS}, not {value:?}"
                            )
                        })?;
                }
                "format" => {
                    req.format = match value {
                        "svg" => Format::Svg,
                        "pprof" | "proto" => Format::Pprof,
                        other => {
                            return Err(format!("format must be svg or pprof, not {other:?}"));
                        }
                    };
                }
                _ => {}
            }
        }
        Ok(req)
    }
}

/// Set while a profile is being taken.
static RUNNING: AtomicBool = AtomicBool::new(false);

/// The right to take the process's one profile; released when dropped.
#[derive(Debug)]
pub(crate) struct Running(());

impl Running {
    /// The right, unless another profile is running.
    pub(crate) fn try_start() -> Option<Self> {
        RUNNING
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .ok()
            .map(|_| Self(()))
    }

    /// Whether a profile is being taken now.
    pub(crate) fn is_running() -> bool {
        RUNNING.load(Ordering::Acquire)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING.store(false, Ordering::Release);
    }
}

/// Why no profile came out.
#[derive(Debug)]
pub(crate) enum ProfileError {
    /// The requester went away first.
    Cancelled,
    /// The profiler or the rendering failed.
    Failed(String),
}

/// Sample the process for `duration`, or until `cancel`'s sender is dropped, then render the
/// profile as `format`. Blocks: run it off the reactor.
pub(crate) fn take(
    duration: Duration,
    format: Format,
    cancel: &mpsc::Receiver<()>,
) -> Result<Vec<u8>, ProfileError> {
    let failed =
        |what: &str, e: &dyn std::fmt::Display| ProfileError::Failed(format!("{what}: {e}"));
    let guard = pprof::ProfilerGuardBuilder::default()
        .frequency(FREQUENCY)
        .blocklist(&BLOCKLIST)
        .build()
        .map_err(|e| failed("cannot start the profiler", &e))?;
    match cancel.recv_timeout(duration) {
        Err(mpsc::RecvTimeoutError::Timeout) => {}
        Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => return Err(ProfileError::Cancelled),
    }
    let report = guard
        .report()
        .build()
        .map_err(|e| failed("cannot build the report", &e))?;
    // Sampling stops before rendering, which is not part of what was asked for.
    drop(guard);
    // The renderers unwrap internally; a panic there is an error for this request only.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        render(&report, format, duration)
    }))
    .unwrap_or_else(|_| {
        Err(ProfileError::Failed(
            "rendering the profile panicked".into(),
        ))
    })
}

fn render(
    report: &pprof::Report,
    format: Format,
    duration: Duration,
) -> Result<Vec<u8>, ProfileError> {
    let failed =
        |what: &str, e: &dyn std::fmt::Display| ProfileError::Failed(format!("{what}: {e}"));
    match format {
        Format::Pprof => {
            let profile = report
                .pprof()
                .map_err(|e| failed("cannot encode the profile", &e))?;
            let raw = profile.encode_to_vec();
            let mut gz = flate2::write::GzEncoder::new(
                Vec::with_capacity(raw.len() / 4),
                flate2::Compression::default(),
            );
            gz.write_all(&raw)
                .map_err(|e| failed("cannot compress the profile", &e))?;
            gz.finish()
                .map_err(|e| failed("cannot compress the profile", &e))
        }
        Format::Svg => {
            let title = format!("ferry CPU profile, {} s", duration.as_secs());
            if report.data.is_empty() {
                // inferno draws nothing without samples; a page that says so instead.
                return Ok(format!(
                    "<?xml version=\"1.0\" standalone=\"no\"?>\n<svg version=\"1.1\" width=\"600\" height=\"60\" xmlns=\"http://www.w3.org/2000/svg\"><text x=\"10\" y=\"24\">{title}</text><text x=\"10\" y=\"48\">No samples: the process used no CPU time.</text></svg>\n"
                )
                .into_bytes());
            }
            let mut options = pprof::flamegraph::Options::default();
            options.title = title;
            let mut svg = Vec::new();
            report
                .flamegraph_with_options(&mut svg, &mut options)
                .map_err(|e| failed("cannot draw the flamegraph", &e))?;
            Ok(svg)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_parameters() {
        let req = |q: &str| ProfileRequest::from_query(q);
        assert_eq!(
            req("").unwrap(),
            ProfileRequest {
                seconds: DEFAULT_SECONDS,
                format: Format::Pprof
            }
        );
        assert_eq!(
            req("seconds=5&format=svg&debug=1").unwrap(),
            ProfileRequest {
                seconds: 5,
                format: Format::Svg
            }
        );
        assert_eq!(req("seconds=300").unwrap().seconds, MAX_SECONDS);
        assert_eq!(req("format=proto").unwrap().format, Format::Pprof);
        for bad in [
            "seconds=0",
            "seconds=301",
            "seconds=-1",
            "seconds=abc",
            "seconds=",
            "seconds",
            "seconds=99999999999999999999999",
            "format=xml",
        ] {
            assert!(req(bad).is_err(), "{bad}");
        }
    }
}
