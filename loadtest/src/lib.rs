//! ferry-load: an exact S3 load tester.
//!
//! - [`client`]: the S3 operations over ferry-core's HTTP client and its signed-request
//!   builder, with request bodies generated as they are sent (`body`) and response bodies
//!   verified as they stream; [`multipart`] uploads in parts; [`endpoint`] is where requests
//!   go and how they are spread, [`error`] why an operation failed; [`payload`] is what object
//!   `id` holds, [`keys`] how its key names it.
//! - [`run`]: the engine (buckets, preparation, closed/open-loop workers, the per-second
//!   reporter, cleanup); [`config`] says what a run does.
//! - [`stats`], [`report`]: HDR histograms and the report (summary, JSON, CSV, merging);
//!   [`compare`] and [`plot`] read reports back; [`overhead`] sets two endpoints side by side.
//! - [`control`]: a run driven from outside (start gate, early stop, observers);
//!   [`autoterm`]: `--autoterm`; [`agents`]: runs across machines (agents and a coordinator).
//! - [`embedded`]: an in-process cluster to load (`--embedded`); [`cli`]: the command line.

pub mod agents;
pub mod autoterm;
mod body;
pub mod cli;
pub mod client;
pub mod compare;
pub mod config;
pub mod control;
pub mod digests;
pub mod embedded;
pub mod endpoint;
pub mod error;
pub mod keys;
pub mod multipart;
pub mod overhead;
pub mod payload;
pub mod plot;
pub mod report;
pub mod run;
pub mod rusage;
pub mod size;
pub mod stats;
