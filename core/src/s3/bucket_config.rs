//! Bucket configurations, one table: which there are (by subresource), and for the documents a
//! bucket keeps whole (CORS, lifecycle, default encryption, public access block, ownership
//! controls) the rules of their Put and Get — the
//! largest body, how a body is checked and written as Ferry stores it, and the error of a bucket
//! without one. The node serves those documents from this table (`node::settings`), the proxy
//! sets them on every backend with it (`proxy::buckets`) and copies each kind to a backend that
//! lacks it (`proxy::sync`).

use alloc::vec::Vec;

use super::xml::{
    CorsConfiguration, LifecycleConfiguration, MAX_CORS_BODY, MAX_ENCRYPTION_BODY,
    MAX_LIFECYCLE_BODY, MAX_PUBLIC_ACCESS_BODY, OwnershipControls, PublicAccessBlock,
    ServerSideEncryptionConfiguration,
};
use super::{S3ErrorCode, S3Result};

/// A kind of bucket configuration, named by its subresource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigKind {
    /// `?versioning`.
    Versioning,
    /// `?object-lock`.
    ObjectLock,
    /// `?encryption`: the default encryption.
    Encryption,
    /// `?policy`.
    Policy,
    /// `?cors`.
    Cors,
    /// `?lifecycle`.
    Lifecycle,
    /// `?tagging`: the bucket's tags.
    Tagging,
    /// `?acl`.
    Acl,
    /// `?publicAccessBlock`.
    PublicAccessBlock,
    /// `?ownershipControls`.
    OwnershipControls,
}

impl ConfigKind {
    /// Its subresource (the query of its Get, Put and Delete).
    pub const fn subresource(self) -> &'static str {
        match self {
            Self::Versioning => "versioning",
            Self::ObjectLock => "object-lock",
            Self::Encryption => "encryption",
            Self::Policy => "policy",
            Self::Cors => "cors",
            Self::Lifecycle => "lifecycle",
            Self::Tagging => "tagging",
            Self::Acl => "acl",
            Self::PublicAccessBlock => "publicAccessBlock",
            Self::OwnershipControls => "ownershipControls",
        }
    }
}

/// A configuration document a bucket keeps whole: a Put checks its body and stores it as Ferry
/// writes it, a Get answers what was stored, a Delete removes it.
#[derive(Debug)]
pub struct ConfigDocument {
    /// Which configuration it is.
    pub kind: ConfigKind,
    /// The largest body a Put takes.
    pub max_body: usize,
    /// A Put's body parsed and checked, and written as Ferry stores it.
    pub normalise: fn(&[u8]) -> S3Result<Vec<u8>>,
    /// What a Get answers for a bucket without one.
    pub missing: S3ErrorCode,
}

impl ConfigDocument {
    /// Its subresource.
    pub const fn subresource(&self) -> &'static str {
        self.kind.subresource()
    }
}

/// Put/Get/DeleteBucketCors: at most 64 KiB; a Get without one answers
/// `NoSuchCORSConfiguration`.
pub const CORS: ConfigDocument = ConfigDocument {
    kind: ConfigKind::Cors,
    max_body: MAX_CORS_BODY,
    normalise: |xml| {
        let mut doc = Vec::with_capacity(xml.len());
        CorsConfiguration::parse_xml(xml)?.write_xml(&mut doc);
        Ok(doc)
    },
    missing: S3ErrorCode::NoSuchCORSConfiguration,
};

/// Put/Get/DeleteBucketLifecycleConfiguration: at most 512 KiB; a Get without one answers
/// `NoSuchLifecycleConfiguration`.
pub const LIFECYCLE: ConfigDocument = ConfigDocument {
    kind: ConfigKind::Lifecycle,
    max_body: MAX_LIFECYCLE_BODY,
    normalise: |xml| {
        let mut doc = Vec::with_capacity(xml.len());
        LifecycleConfiguration::parse_xml(xml)?.write_xml(&mut doc);
        Ok(doc)
    },
    missing: S3ErrorCode::NoSuchLifecycleConfiguration,
};

/// Put/Get/DeleteBucketEncryption, the bucket's default encryption: a Get without one answers
/// `ServerSideEncryptionConfigurationNotFoundError` (Ferry does not encrypt unless asked, so a
/// bucket has no default until one is put).
pub const ENCRYPTION: ConfigDocument = ConfigDocument {
    kind: ConfigKind::Encryption,
    max_body: MAX_ENCRYPTION_BODY,
    normalise: |xml| {
        let mut doc = Vec::with_capacity(xml.len());
        ServerSideEncryptionConfiguration::parse_xml(xml)?.write_xml(&mut doc);
        Ok(doc)
    },
    missing: S3ErrorCode::ServerSideEncryptionConfigurationNotFoundError,
};

/// Put/Get/DeletePublicAccessBlock: a Get without one answers
/// `NoSuchPublicAccessBlockConfiguration`; the node enforces it (`node::access`).
pub const PUBLIC_ACCESS_BLOCK: ConfigDocument = ConfigDocument {
    kind: ConfigKind::PublicAccessBlock,
    max_body: MAX_PUBLIC_ACCESS_BODY,
    normalise: |xml| {
        let mut doc = Vec::with_capacity(256);
        PublicAccessBlock::parse_xml(xml)?.write_xml(&mut doc);
        Ok(doc)
    },
    missing: S3ErrorCode::NoSuchPublicAccessBlockConfiguration,
};

/// Put/Get/DeleteBucketOwnershipControls: a Get without them answers
/// `OwnershipControlsNotFoundError`. (The node checks more before a Put: `BucketOwnerEnforced`
/// over an ACL that grants others is `InvalidBucketAclWithObjectOwnership`.)
pub const OWNERSHIP_CONTROLS: ConfigDocument = ConfigDocument {
    kind: ConfigKind::OwnershipControls,
    max_body: MAX_PUBLIC_ACCESS_BODY,
    normalise: |xml| {
        let mut doc = Vec::with_capacity(256);
        OwnershipControls::parse_xml(xml)?.write_xml(&mut doc);
        Ok(doc)
    },
    missing: S3ErrorCode::OwnershipControlsNotFoundError,
};

/// The documents kept whole.
pub const DOCUMENTS: [&ConfigDocument; 5] = [
    &CORS,
    &LIFECYCLE,
    &ENCRYPTION,
    &PUBLIC_ACCESS_BLOCK,
    &OWNERSHIP_CONTROLS,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_are_normalised_and_refused_alike() {
        let cors = b"<CORSConfiguration><CORSRule><AllowedMethod>GET</AllowedMethod>\
            <AllowedOrigin>*</AllowedOrigin></CORSRule></CORSConfiguration>";
        let stored = (CORS.normalise)(cors).unwrap();
        assert!(stored.starts_with(b"<?xml"));
        assert_eq!((CORS.normalise)(&stored).unwrap(), stored);
        for doc in DOCUMENTS {
            let e = (doc.normalise)(b"<Nonsense/>").unwrap_err();
            assert_eq!(e.code, S3ErrorCode::MalformedXML, "{}", doc.subresource());
        }
        let subresources: Vec<&str> = DOCUMENTS.iter().map(|d| d.subresource()).collect();
        assert_eq!(
            subresources,
            [
                "cors",
                "lifecycle",
                "encryption",
                "publicAccessBlock",
                "ownershipControls"
            ]
        );
    }
}
