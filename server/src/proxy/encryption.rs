//! Bucket default encryption through the proxy: every backend holds some of the bucket's
//! objects and encrypts the writes it takes, so Put and Delete go to all of them
//! ([`super::buckets::put_everywhere`]); GetBucketEncryption reads any one (in `handler`).

use ferry_core::s3::xml::{MAX_ENCRYPTION_BODY, ServerSideEncryptionConfiguration};

use super::buckets::Fanned;

/// Put/DeleteBucketEncryption.
pub(crate) const DOCUMENT: Fanned = Fanned {
    subresource: "encryption",
    max_body: MAX_ENCRYPTION_BODY,
    normalise: |xml| {
        let mut doc = Vec::with_capacity(xml.len());
        ServerSideEncryptionConfiguration::parse_xml(xml)?.write_xml(&mut doc);
        Ok(doc)
    },
};
