//! S3: errors, request model, SigV4, XML.

pub mod error;
pub mod uri;

pub use error::{S3Error, S3ErrorCode, S3Result};
