//! ferry-load: an exact S3 load tester.
pub mod keys;
pub mod size;
pub mod stats;
