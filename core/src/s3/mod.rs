//! S3: errors, request model, SigV4, XML.

pub mod acl;
pub mod address;
pub mod body;
pub mod bucket_config;
pub mod checksum;
pub mod cluster;
pub mod conditions;
pub mod error;
pub mod header;
pub mod listing;
pub mod outbound;
pub mod policy;
pub mod post;
pub mod query;
pub mod range;
pub mod request;
pub mod sigv2;
pub mod sigv4;
pub mod sse;
pub mod tagging;
pub mod upload_id;
pub mod uri;
pub mod validate;
pub mod version;
pub mod xml;

pub use error::{S3Error, S3ErrorCode, S3Result};
