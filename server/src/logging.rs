//! Logs: the events the servers emit with `tracing`, and the subscriber `ferry` installs.
//!
//! The library only emits events (without a subscriber each costs a cached check) and never
//! installs a subscriber: only the `ferry` program does, through [`init`], writing text or
//! JSON lines to stderr. Access events (one per S3 request, emitted by the S3 front,
//! `crate::front::access`) go to the target [`ACCESS_TARGET`] at `INFO` and are off unless
//! `--access-log` (or a `RUST_LOG` directive for that target) turns them on, so a server
//! under load does not format a line per request.

use clap::{Args, ValueEnum};

/// The target of access events (one per S3 request).
pub const ACCESS_TARGET: &str = "ferry::access";

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines: time, level, target, message, `field=value` pairs.
    #[default]
    Text,
    /// One JSON object per line, fields at the top level.
    Json,
}

/// The logging options of every `ferry` command.
#[derive(Debug, Clone, Default, Args)]
pub struct LogArgs {
    /// Format of the log lines on stderr.
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = LogFormat::Text, global = true)]
    pub log_format: LogFormat,
    /// Lowest level logged (error, warn, info, debug, trace), or filter directives as in
    /// RUST_LOG (e.g. "info,ferry_server::proxy=debug"); RUST_LOG wins when set [default: info].
    #[arg(long, value_name = "LEVEL", global = true)]
    pub log_level: Option<String>,
    /// Log one line per S3 request (target ferry::access, level info).
    #[arg(long, global = true)]
    pub access_log: bool,
}

/// Level names `--log-level` takes alone.
const LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];

/// The filter directives for `args`, given `RUST_LOG`'s value: `RUST_LOG` (when set and not
/// empty), else `--log-level`, else `info`; then access events on or off as `--access-log`
/// says, unless the directives name the access target themselves.
///
/// A single word must be a level name: the filter would take any other word for a target and
/// silently log (almost) nothing.
pub fn filter_directives(args: &LogArgs, rust_log: Option<&str>) -> Result<String, String> {
    let base = rust_log
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .or(args.log_level.as_deref().map(str::trim))
        .unwrap_or("info");
    let single = !base.contains([',', '=']);
    if single && !LEVELS.iter().any(|l| l.eq_ignore_ascii_case(base)) {
        return Err(format!(
            "unknown log level {base:?} (expected one of {}, or filter directives)",
            LEVELS.join(", ")
        ));
    }
    if base.contains(ACCESS_TARGET) {
        return Ok(base.to_owned());
    }
    let access = if args.access_log { "info" } else { "off" };
    Ok(format!("{base},{ACCESS_TARGET}={access}"))
}

/// Install the process's subscriber: lines on stderr, as `args` (and `RUST_LOG`) say.
///
/// Fails if the filter does not parse or a subscriber is installed already.
pub fn init(args: &LogArgs) -> Result<(), String> {
    use tracing_subscriber::EnvFilter;

    let rust_log = std::env::var("RUST_LOG").ok();
    let directives = filter_directives(args, rust_log.as_deref())?;
    let filter = EnvFilter::builder()
        .parse(&directives)
        .map_err(|e| format!("bad log filter {directives:?}: {e}"))?;
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter);
    let installed = match args.log_format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
    installed.map_err(|e| format!("cannot install the logger: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_follow_rust_log_then_options() {
        let filter_directives = |a: &LogArgs, r: Option<&str>| filter_directives(a, r).unwrap();
        let mut args = LogArgs::default();
        assert_eq!(filter_directives(&args, None), "info,ferry::access=off");
        args.log_level = Some("warn".into());
        args.access_log = true;
        assert_eq!(filter_directives(&args, None), "warn,ferry::access=info");
        assert_eq!(
            filter_directives(&args, Some("debug")),
            "debug,ferry::access=info"
        );
        // An empty RUST_LOG counts as unset.
        assert_eq!(
            filter_directives(&args, Some(" ")),
            "warn,ferry::access=info"
        );
        // RUST_LOG naming the access target decides alone.
        assert_eq!(
            filter_directives(&args, Some("error,ferry::access=info")),
            "error,ferry::access=info"
        );
        // A lone word that is no level is refused; directives pass through.
        args.log_level = Some("verbose".into());
        assert!(super::filter_directives(&args, None).is_err());
        args.log_level = Some("ferry_server=debug".into());
        assert_eq!(
            filter_directives(&args, None),
            "ferry_server=debug,ferry::access=info"
        );
    }
}
