//! S3: errors, request model, SigV4, XML.

pub mod checksum;
pub mod error;
pub mod sigv4;
pub mod uri;

pub use error::{S3Error, S3ErrorCode, S3Result};
