//! ferry-load: an exact S3 load tester.
pub mod client;
pub mod config;
pub mod embedded;
pub mod keys;
pub mod report;
pub mod run;
pub mod rusage;
pub mod size;
pub mod stats;
