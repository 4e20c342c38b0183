//! Bucket lifecycle configuration through the proxy: every backend holds the bucket (and runs
//! its own lifecycle worker over the objects it holds), so Put and Delete go to all of them
//! ([`super::buckets::put_everywhere`]); GetBucketLifecycleConfiguration reads any one (in
//! `handler`).

use ferry_core::s3::xml::{LifecycleConfiguration, MAX_LIFECYCLE_BODY};

use super::buckets::Fanned;

/// Put/DeleteBucketLifecycleConfiguration.
pub(crate) const DOCUMENT: Fanned = Fanned {
    subresource: "lifecycle",
    max_body: MAX_LIFECYCLE_BODY,
    normalise: |xml| {
        let mut doc = Vec::with_capacity(xml.len());
        LifecycleConfiguration::parse_xml(xml)?.write_xml(&mut doc);
        Ok(doc)
    },
};
