//! A bucket's public access block and its object ownership: `<PublicAccessBlockConfiguration>`
//! (Put/GetPublicAccessBlock) and `<OwnershipControls>` (Put/GetBucketOwnershipControls), and
//! the values of `x-amz-object-ownership` (CreateBucket).
//!
//! A public access block has four optional flags (`BlockPublicAcls`, `IgnorePublicAcls`,
//! `BlockPublicPolicy`, `RestrictPublicBuckets`), each false when absent, as on AWS. Ownership
//! controls have exactly one `Rule` whose `ObjectOwnership` is `BucketOwnerEnforced`,
//! `BucketOwnerPreferred` or `ObjectWriter`. Anything else is `MalformedXML`.

use alloc::vec::Vec;

use super::parse::{Doc, malformed_because};
use super::write::XmlWriter;
use crate::s3::S3Result;

/// Largest PutPublicAccessBlock or PutBucketOwnershipControls body accepted.
pub const MAX_PUBLIC_ACCESS_BODY: usize = 4096;
/// Elements of either document: the root and its few fields, with room to spare.
const MAX_ELEMENTS: usize = 16;

/// A bucket's public access block: what it refuses or ignores of public ACLs and policies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PublicAccessBlock {
    /// `BlockPublicAcls`: a request that sets a public ACL is refused (403).
    pub block_public_acls: bool,
    /// `IgnorePublicAcls`: public grants of ACLs count for nothing.
    pub ignore_public_acls: bool,
    /// `BlockPublicPolicy`: a PutBucketPolicy of a public policy is refused (403).
    pub block_public_policy: bool,
    /// `RestrictPublicBuckets`: a public policy lets in none but the owner's account.
    pub restrict_public_buckets: bool,
}

impl PublicAccessBlock {
    /// Parse a PutPublicAccessBlock body (at most [`MAX_PUBLIC_ACCESS_BODY`] bytes).
    pub fn parse_xml(body: &[u8]) -> S3Result<Self> {
        let doc = Doc::parse(body, MAX_PUBLIC_ACCESS_BODY, MAX_ELEMENTS)?;
        let root = doc.root("PublicAccessBlockConfiguration")?;
        for child in root.children() {
            if !FLAGS.contains(&child.name()) {
                return Err(malformed_because(
                    "Unknown element in PublicAccessBlockConfiguration",
                ));
            }
        }
        let flag = |name| root.flag(name).map(|f| f.unwrap_or(false));
        Ok(Self {
            block_public_acls: flag("BlockPublicAcls")?,
            ignore_public_acls: flag("IgnorePublicAcls")?,
            block_public_policy: flag("BlockPublicPolicy")?,
            restrict_public_buckets: flag("RestrictPublicBuckets")?,
        })
    }

    /// Append the document to `out`, as GetPublicAccessBlock answers it.
    pub fn write_xml(&self, out: &mut Vec<u8>) {
        let mut w = XmlWriter::document(out, "PublicAccessBlockConfiguration", true);
        w.elem("BlockPublicAcls", self.block_public_acls);
        w.elem("IgnorePublicAcls", self.ignore_public_acls);
        w.elem("BlockPublicPolicy", self.block_public_policy);
        w.elem("RestrictPublicBuckets", self.restrict_public_buckets);
        w.close("PublicAccessBlockConfiguration");
    }
}

const FLAGS: [&str; 4] = [
    "BlockPublicAcls",
    "IgnorePublicAcls",
    "BlockPublicPolicy",
    "RestrictPublicBuckets",
];

/// Who owns the objects of a bucket, and whether ACLs count (`ObjectOwnership`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectOwnership {
    /// ACLs are disabled: the bucket owner owns every object, ACLs grant nothing and ACL
    /// writes other than `bucket-owner-full-control` are `AccessControlListNotSupported`.
    BucketOwnerEnforced,
    /// The bucket owner owns every object; ACLs are honoured.
    BucketOwnerPreferred,
    /// The writer owns the object it writes, and its ACL; ACLs are honoured.
    ObjectWriter,
}

impl ObjectOwnership {
    /// The value as S3 names it (`x-amz-object-ownership`, `ObjectOwnership`), case-sensitive
    /// as on AWS.
    pub fn parse(value: &str) -> Option<Self> {
        Some(match value {
            "BucketOwnerEnforced" => Self::BucketOwnerEnforced,
            "BucketOwnerPreferred" => Self::BucketOwnerPreferred,
            "ObjectWriter" => Self::ObjectWriter,
            _ => return None,
        })
    }

    /// Its name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::BucketOwnerEnforced => "BucketOwnerEnforced",
            Self::BucketOwnerPreferred => "BucketOwnerPreferred",
            Self::ObjectWriter => "ObjectWriter",
        }
    }

    /// Whether ACLs are disabled.
    pub const fn acls_disabled(self) -> bool {
        matches!(self, Self::BucketOwnerEnforced)
    }
}

/// A bucket's ownership controls: one rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OwnershipControls {
    /// The rule's `ObjectOwnership`.
    pub object_ownership: ObjectOwnership,
}

impl OwnershipControls {
    /// Parse a PutBucketOwnershipControls body (at most [`MAX_PUBLIC_ACCESS_BODY`] bytes).
    pub fn parse_xml(body: &[u8]) -> S3Result<Self> {
        let doc = Doc::parse(body, MAX_PUBLIC_ACCESS_BODY, MAX_ELEMENTS)?;
        let root = doc.root("OwnershipControls")?;
        let mut rules = root.all("Rule");
        let rule = rules
            .next()
            .ok_or_else(|| malformed_because("OwnershipControls has one Rule"))?;
        if rules.next().is_some() {
            return Err(malformed_because("OwnershipControls has only one Rule"));
        }
        let object_ownership = rule
            .opt("ObjectOwnership")
            .and_then(|v| ObjectOwnership::parse(v.trim()))
            .ok_or_else(|| {
                malformed_because(
                    "ObjectOwnership must be BucketOwnerEnforced, BucketOwnerPreferred or \
                     ObjectWriter",
                )
            })?;
        Ok(Self { object_ownership })
    }

    /// Append the document to `out`, as GetBucketOwnershipControls answers it.
    pub fn write_xml(&self, out: &mut Vec<u8>) {
        let mut w = XmlWriter::document(out, "OwnershipControls", true);
        w.open("Rule");
        w.elem("ObjectOwnership", self.object_ownership.as_str());
        w.close("Rule");
        w.close("OwnershipControls");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::s3::S3ErrorCode;

    #[test]
    fn public_access_block_round_trips_with_absent_flags_false() {
        let c = PublicAccessBlock::parse_xml(
            b"<PublicAccessBlockConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
              <BlockPublicAcls>true</BlockPublicAcls>\
              <RestrictPublicBuckets>TRUE</RestrictPublicBuckets>\
              </PublicAccessBlockConfiguration>",
        )
        .expect("parse");
        assert_eq!(
            c,
            PublicAccessBlock {
                block_public_acls: true,
                restrict_public_buckets: true,
                ..PublicAccessBlock::default()
            }
        );
        let mut out = Vec::new();
        c.write_xml(&mut out);
        let text = core::str::from_utf8(&out).expect("utf-8");
        assert!(
            text.contains(
                "<BlockPublicAcls>true</BlockPublicAcls><IgnorePublicAcls>false\
                 </IgnorePublicAcls><BlockPublicPolicy>false</BlockPublicPolicy>\
                 <RestrictPublicBuckets>true</RestrictPublicBuckets>"
            ),
            "{text}"
        );
        assert_eq!(PublicAccessBlock::parse_xml(&out).expect("again"), c);
    }

    #[test]
    fn bad_public_access_blocks_are_malformed() {
        for body in [
            &b"<Nonsense/>"[..],
            b"<PublicAccessBlockConfiguration><BlockPublicAcls>yes</BlockPublicAcls>\
              </PublicAccessBlockConfiguration>",
            b"<PublicAccessBlockConfiguration><BlockEverything>true</BlockEverything>\
              </PublicAccessBlockConfiguration>",
            b"<PublicAccessBlockConfiguration>",
        ] {
            let e = PublicAccessBlock::parse_xml(body).expect_err("malformed");
            assert_eq!(e.code, S3ErrorCode::MalformedXML);
        }
    }

    #[test]
    fn ownership_controls_round_trip() {
        for o in [
            ObjectOwnership::BucketOwnerEnforced,
            ObjectOwnership::BucketOwnerPreferred,
            ObjectOwnership::ObjectWriter,
        ] {
            let c = OwnershipControls {
                object_ownership: o,
            };
            let mut out = Vec::new();
            c.write_xml(&mut out);
            let text = core::str::from_utf8(&out).expect("utf-8");
            assert!(text.contains(o.as_str()), "{text}");
            assert_eq!(OwnershipControls::parse_xml(&out).expect("again"), c);
            assert_eq!(ObjectOwnership::parse(o.as_str()), Some(o));
        }
        assert!(ObjectOwnership::BucketOwnerEnforced.acls_disabled());
        assert!(!ObjectOwnership::ObjectWriter.acls_disabled());
    }

    #[test]
    fn bad_ownership_controls_are_malformed() {
        let rule = "<Rule><ObjectOwnership>ObjectWriter</ObjectOwnership></Rule>";
        for body in [
            alloc::string::String::from("<OwnershipControls></OwnershipControls>"),
            alloc::format!("<OwnershipControls>{rule}{rule}</OwnershipControls>"),
            alloc::string::String::from(
                "<OwnershipControls><Rule><ObjectOwnership>objectwriter</ObjectOwnership>\
                 </Rule></OwnershipControls>",
            ),
            alloc::string::String::from("<OwnershipControls><Rule/></OwnershipControls>"),
        ] {
            let e = OwnershipControls::parse_xml(body.as_bytes()).expect_err(&body);
            assert_eq!(e.code, S3ErrorCode::MalformedXML, "{body}");
        }
    }
}
