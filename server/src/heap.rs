//! Heap profiles for `GET /debug/pprof/heap` on the admin listener: jemalloc's sampling
//! profiler (feature `jemalloc`, on by default), its dump read by `jemalloc_pprof` into a
//! symbolized pprof protobuf (gzipped, what Go's `net/http/pprof` serves), or drawn as a
//! flamegraph of the bytes in use.
//!
//! jemalloc samples one allocation every 2^19 bytes allocated on average
//! (`lg_prof_sample:19`), recording its stack; a dump lists the sampled allocations still live,
//! scaled to estimate all bytes in use by stack (`inuse_space`). The cost is a stack walk per
//! half MiB allocated. `_RJEM_MALLOC_CONF=prof_active:false` in the environment turns sampling
//! off at start (the endpoint then answers 503); a build with `--no-default-features` uses the
//! system allocator and has no heap profiles.
//!
//! [`global_allocator!`](crate::global_allocator) puts jemalloc and these options into a binary
//! (`ferry`, the server's test binary): the allocator is the binary's to choose, not a library's.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};

use pprof::protos::Message as _;

/// jemalloc's options, compiled into the binary by [`global_allocator!`](crate::global_allocator):
/// the heap profiler on and sampling from the start, and background threads that give freed
/// pages back to the system after `dirty_decay_ms` (what `malloc_trim` did for glibc).
#[doc(hidden)]
pub const MALLOC_CONF: &[u8] =
    b"prof:true,prof_active:true,lg_prof_sample:19,background_thread:true\0";

/// jemalloc as the global allocator with heap profiling on ([`MALLOC_CONF`]), when
/// `ferry-server` is built with its `jemalloc` feature (the default); nothing otherwise.
/// Invoked once, at the root of a binary.
#[cfg(feature = "jemalloc")]
#[macro_export]
macro_rules! global_allocator {
    () => {
        #[global_allocator]
        static GLOBAL: $crate::heap::Jemalloc = $crate::heap::Jemalloc;

        /// What jemalloc reads its options from at start (`malloc_conf`, with the prefix of
        /// tikv-jemallocator's symbols): a pointer to a C string.
        #[allow(unsafe_code, non_upper_case_globals)]
        // SAFETY: jemalloc declares `const char *_rjem_malloc_conf` and only reads it: a thin
        // pointer to the first byte of a NUL-terminated, 'static byte string is that type.
        #[unsafe(export_name = "_rjem_malloc_conf")]
        static _rjem_malloc_conf: &u8 = &$crate::heap::MALLOC_CONF[0];
    };
}

/// jemalloc as the global allocator: not in this build (no `jemalloc` feature).
#[cfg(not(feature = "jemalloc"))]
#[macro_export]
macro_rules! global_allocator {
    () => {};
}

#[cfg(feature = "jemalloc")]
#[doc(hidden)]
pub use tikv_jemallocator::Jemalloc;

/// What the heap profile is rendered as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeapFormat {
    /// gzipped pprof protobuf, sample type `inuse_space` in bytes.
    Pprof,
    /// A flamegraph of the bytes in use (SVG).
    Svg,
}

impl HeapFormat {
    /// From the query string's `format` (`svg`; `pprof`, `proto` or absent for the protobuf);
    /// other parameters are ignored (Go's `gc=1`, `debug=0`).
    pub(crate) fn from_query(query: &str) -> Result<Self, String> {
        let mut format = Self::Pprof;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            if name == "format" {
                format = match value {
                    "svg" => Self::Svg,
                    "pprof" | "proto" => Self::Pprof,
                    other => return Err(format!("format must be svg or pprof, not {other:?}")),
                };
            }
        }
        Ok(format)
    }
}

/// Why there is no heap profile.
#[derive(Debug)]
pub(crate) enum HeapError {
    /// This process samples no heap: the system allocator, or jemalloc's profiler off.
    Unavailable(&'static str),
    /// Dumping or rendering failed.
    Failed(String),
}

/// Whether this process's heap is sampled, and if not why.
pub(crate) fn availability() -> Result<(), &'static str> {
    #[cfg(feature = "jemalloc")]
    {
        match jemalloc_pprof::PROF_CTL.as_ref() {
            None => Err(
                "jemalloc's heap profiler is off in this process (`prof:false` in its options, or \
                 jemalloc is not the allocator of this binary)",
            ),
            Some(ctl) if !ctl.blocking_lock().activated() => {
                Err("jemalloc's heap sampling is inactive (`prof_active:false`)")
            }
            Some(_) => Ok(()),
        }
    }
    #[cfg(not(feature = "jemalloc"))]
    {
        Err(
            "this ferry was built without the `jemalloc` feature: the system allocator keeps no heap profile",
        )
    }
}

/// Dump the sampled heap and render it as `format`. Blocks (a file is written and read, the
/// stacks symbolized): run it off the reactor.
pub(crate) fn take(format: HeapFormat) -> Result<Vec<u8>, HeapError> {
    availability().map_err(HeapError::Unavailable)?;
    let gz = dump_pprof()?;
    match format {
        HeapFormat::Pprof => Ok(gz),
        HeapFormat::Svg => flamegraph(&gz),
    }
}

#[cfg(feature = "jemalloc")]
fn dump_pprof() -> Result<Vec<u8>, HeapError> {
    let ctl = jemalloc_pprof::PROF_CTL
        .as_ref()
        .ok_or(HeapError::Unavailable("jemalloc's heap profiler is off"))?;
    // The library unwraps internally (a mapping it cannot read); a panic fails this request only.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        ctl.blocking_lock().dump_pprof()
    }))
    .map_err(|_| HeapError::Failed("dumping the heap profile panicked".into()))?
    .map_err(|e| HeapError::Failed(format!("cannot dump the heap profile: {e:#}")))
}

#[cfg(not(feature = "jemalloc"))]
fn dump_pprof() -> Result<Vec<u8>, HeapError> {
    Err(HeapError::Unavailable("no jemalloc in this build"))
}

/// Decode a gzipped pprof protobuf.
pub(crate) fn decode(gz: &[u8]) -> Result<pprof::protos::Profile, String> {
    let mut raw = Vec::with_capacity(gz.len() * 4);
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut raw)
        .map_err(|e| format!("not gzip: {e}"))?;
    pprof::protos::Profile::decode(raw.as_slice()).map_err(|e| format!("not a pprof profile: {e}"))
}

/// The folded stacks of a profile (`root;...;leaf value`, inferno's input), from its first
/// sample value; stacks whose functions have no names show their addresses.
pub(crate) fn folded(p: &pprof::protos::Profile) -> Vec<String> {
    let string = |i: i64| {
        usize::try_from(i)
            .ok()
            .and_then(|i| p.string_table.get(i))
            .map_or("?", String::as_str)
    };
    let functions: BTreeMap<u64, &str> =
        p.function.iter().map(|f| (f.id, string(f.name))).collect();
    let mut names: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for l in &p.location {
        // A location's lines go from the innermost inlined function outwards.
        let mut frames: Vec<String> = l
            .line
            .iter()
            .rev()
            .filter_map(|line| functions.get(&line.function_id).map(|s| (*s).to_owned()))
            .collect();
        if frames.is_empty() {
            frames.push(format!("{:#x}", l.address));
        }
        names.insert(l.id, frames);
    }
    let mut stacks: BTreeMap<String, i64> = BTreeMap::new();
    for s in &p.sample {
        let Some(value) = s.value.first().copied().filter(|v| *v > 0) else {
            continue;
        };
        // Samples list their locations leaf first; a flamegraph reads root first.
        let frames: Vec<&str> = s
            .location_id
            .iter()
            .rev()
            .filter_map(|id| names.get(id))
            .flatten()
            .map(|f| f.as_str())
            .collect();
        // `;` separates frames and a space the value: neither may appear inside one.
        let stack = frames
            .iter()
            .map(|f| f.replace([';', ' '], "_"))
            .collect::<Vec<_>>()
            .join(";");
        *stacks.entry(stack).or_default() += value;
    }
    stacks
        .into_iter()
        .map(|(s, v)| format!("{s} {v}"))
        .collect()
}

fn flamegraph(gz: &[u8]) -> Result<Vec<u8>, HeapError> {
    let profile = decode(gz).map_err(HeapError::Failed)?;
    let lines = folded(&profile);
    let title = "ferry heap profile: bytes in use (sampled)";
    if lines.is_empty() {
        return Ok(format!(
            "<?xml version=\"1.0\" standalone=\"no\"?>\n<svg version=\"1.1\" width=\"600\" height=\"60\" xmlns=\"http://www.w3.org/2000/svg\"><text x=\"10\" y=\"24\">{title}</text><text x=\"10\" y=\"48\">No samples: no sampled allocation is live.</text></svg>\n"
        )
        .into_bytes());
    }
    let mut options = pprof::flamegraph::Options::default();
    options.title = title.to_owned();
    options.count_name = "bytes".to_owned();
    let mut svg = Vec::new();
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pprof::flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), &mut svg)
    }))
    .map_err(|_| HeapError::Failed("drawing the heap flamegraph panicked".into()))?
    .map_err(|e| HeapError::Failed(format!("cannot draw the heap flamegraph: {e}")))?;
    let _ = svg.flush();
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pprof::protos::{Function, Line, Location, Profile, Sample};

    #[test]
    fn format_parameter() {
        assert_eq!(HeapFormat::from_query("").unwrap(), HeapFormat::Pprof);
        assert_eq!(
            HeapFormat::from_query("gc=1&format=svg").unwrap(),
            HeapFormat::Svg
        );
        assert_eq!(
            HeapFormat::from_query("format=proto").unwrap(),
            HeapFormat::Pprof
        );
        assert!(HeapFormat::from_query("format=xml").is_err());
    }

    #[test]
    fn folded_stacks_read_root_first_and_sum() {
        let strings = ["", "main", "alloc;er", "leaf"].map(String::from).to_vec();
        let f = |id, name| Function {
            id,
            name,
            ..Default::default()
        };
        let loc = |id, function_id| Location {
            id,
            line: vec![Line {
                function_id,
                ..Default::default()
            }],
            ..Default::default()
        };
        let sample = |ids: Vec<u64>, v| Sample {
            location_id: ids,
            value: vec![v],
            ..Default::default()
        };
        let p = Profile {
            string_table: strings,
            function: vec![f(1, 1), f(2, 2), f(3, 3)],
            location: vec![
                loc(1, 1),
                loc(2, 2),
                loc(3, 3),
                Location {
                    id: 4,
                    address: 0x10,
                    ..Default::default()
                },
            ],
            sample: vec![
                sample(vec![3, 2, 1], 100),
                sample(vec![3, 2, 1], 50),
                sample(vec![4, 1], 7),
                sample(vec![2, 1], 0),
            ],
            ..Default::default()
        };
        assert_eq!(
            folded(&p),
            vec![
                "main;0x10 7".to_owned(),
                "main;alloc_er;leaf 150".to_owned()
            ]
        );
    }
}
