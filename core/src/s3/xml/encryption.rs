//! Bucket default encryption: `<ServerSideEncryptionConfiguration>` (PutBucketEncryption's
//! body, GetBucketEncryption's answer), checked as S3 checks it.
//!
//! S3 takes exactly one `Rule`, whose `ApplyServerSideEncryptionByDefault` names the
//! `SSEAlgorithm` (`AES256`, `aws:kms` or `aws:kms:dsse`) and, with a KMS algorithm only, a
//! `KMSMasterKeyID`; `BucketKeyEnabled` is optional (false). Anything malformed or missing is
//! `MalformedXML`, a key id beside `AES256` is `InvalidArgument`. Ferry does not implement
//! dual-layer SSE-KMS or blocked encryption types: those are `NotImplemented`.

use alloc::string::String;
use alloc::vec::Vec;

use super::parse::{Doc, malformed_because};
use super::write::XmlWriter;
use crate::s3::sse::{MAX_KMS_KEY_ID, Sse};
use crate::s3::{S3Error, S3ErrorCode, S3Result};

/// Largest PutBucketEncryption body accepted: room for a key id of [`MAX_KMS_KEY_ID`]
/// characters (up to 4 bytes each in UTF-8) and the markup around it.
pub const MAX_ENCRYPTION_BODY: usize = 4 * MAX_KMS_KEY_ID + 4096;
/// Elements of a configuration: the root, one rule and its five fields, and room for a few
/// blocked encryption types (more than that is `MalformedXML`).
const MAX_ENCRYPTION_ELEMENTS: usize = 16;

/// A bucket's default encryption: what a write that asks for none gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSideEncryptionConfiguration {
    /// `SSEAlgorithm`.
    pub algorithm: Sse,
    /// `KMSMasterKeyID` (only with `aws:kms`; none: the KMS default key).
    pub kms_master_key_id: Option<String>,
    /// `BucketKeyEnabled`.
    pub bucket_key_enabled: bool,
}

impl ServerSideEncryptionConfiguration {
    /// Parse and check a PutBucketEncryption body (at most [`MAX_ENCRYPTION_BODY`] bytes).
    pub fn parse_xml(body: &[u8]) -> S3Result<Self> {
        let doc = Doc::parse(body, MAX_ENCRYPTION_BODY, MAX_ENCRYPTION_ELEMENTS)?;
        let root = doc.root("ServerSideEncryptionConfiguration")?;
        let mut rules = root.all("Rule");
        let rule = rules
            .next()
            .ok_or_else(|| malformed_because("A configuration has one Rule"))?;
        if rules.next().is_some() {
            return Err(malformed_because("A configuration has only one Rule"));
        }
        let default = rule
            .child("ApplyServerSideEncryptionByDefault")
            .ok_or_else(|| {
                malformed_because("A Rule must have an ApplyServerSideEncryptionByDefault")
            })?;
        let algorithm = default
            .opt("SSEAlgorithm")
            .and_then(|a| Sse::parse(a.trim().as_bytes()))
            .ok_or_else(|| {
                malformed_because("SSEAlgorithm must be AES256, aws:kms or aws:kms:dsse")
            })?;
        let kms_master_key_id = match default.opt("KMSMasterKeyID") {
            None => None,
            Some(_) if !algorithm.is_kms() => {
                return Err(S3Error::with_message(
                    S3ErrorCode::InvalidArgument,
                    "a KMSMasterKeyID is not applicable if the default sse algorithm is not \
                     aws:kms or aws:kms:dsse",
                ));
            }
            Some(id) => {
                let id = id.trim();
                if id.is_empty() || id.chars().count() > MAX_KMS_KEY_ID {
                    return Err(S3Error::with_message(
                        S3ErrorCode::InvalidArgument,
                        "KMSMasterKeyID must be 1 to 2048 characters",
                    ));
                }
                Some(String::from(id))
            }
        };
        let bucket_key_enabled = rule.flag("BucketKeyEnabled")?.unwrap_or(false);
        if let Some(blocked) = rule.child("BlockedEncryptionTypes") {
            let blocks_something = blocked
                .all("EncryptionType")
                .any(|t| t.text().trim() != "NONE");
            if blocks_something {
                return Err(S3Error::with_message(
                    S3ErrorCode::NotImplemented,
                    "Blocking encryption types is not implemented",
                ));
            }
        }
        if algorithm == Sse::AwsKmsDsse {
            return Err(S3Error::with_message(
                S3ErrorCode::NotImplemented,
                "Dual-layer SSE-KMS (aws:kms:dsse) is not implemented",
            ));
        }
        Ok(Self {
            algorithm,
            kms_master_key_id,
            bucket_key_enabled,
        })
    }

    /// Append the document to `out`, as GetBucketEncryption answers it.
    pub fn write_xml(&self, out: &mut Vec<u8>) {
        let mut w = XmlWriter::document(out, "ServerSideEncryptionConfiguration", true);
        w.open("Rule");
        w.open("ApplyServerSideEncryptionByDefault");
        w.elem("SSEAlgorithm", self.algorithm.as_str());
        w.opt("KMSMasterKeyID", self.kms_master_key_id.as_deref());
        w.close("ApplyServerSideEncryptionByDefault");
        w.elem("BucketKeyEnabled", self.bucket_key_enabled);
        w.close("Rule");
        w.close("ServerSideEncryptionConfiguration");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    fn doc(rule: &str) -> String {
        format!(
            "<ServerSideEncryptionConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
             {rule}</ServerSideEncryptionConfiguration>"
        )
    }

    fn parse(rule: &str) -> S3Result<ServerSideEncryptionConfiguration> {
        ServerSideEncryptionConfiguration::parse_xml(doc(rule).as_bytes())
    }

    fn code(rule: &str) -> S3ErrorCode {
        parse(rule).expect_err(rule).code
    }

    #[test]
    fn sse_s3_round_trips() {
        let c = parse(
            "<Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm>\
             </ApplyServerSideEncryptionByDefault></Rule>",
        )
        .expect("parse");
        assert_eq!(
            c,
            ServerSideEncryptionConfiguration {
                algorithm: Sse::Aes256,
                kms_master_key_id: None,
                bucket_key_enabled: false,
            }
        );
        let mut out = Vec::new();
        c.write_xml(&mut out);
        let text = core::str::from_utf8(&out).expect("utf-8");
        assert!(
            text.contains(
                "<Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm>\
                 </ApplyServerSideEncryptionByDefault><BucketKeyEnabled>false</BucketKeyEnabled>\
                 </Rule>"
            ),
            "{text}"
        );
        assert_eq!(
            ServerSideEncryptionConfiguration::parse_xml(&out).expect("again"),
            c
        );
    }

    #[test]
    fn kms_with_key_and_bucket_key_round_trips() {
        let c = parse(
            "<Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>aws:kms</SSEAlgorithm>\
             <KMSMasterKeyID> arn:aws:kms:us-east-1:1234:key/k&amp;1 </KMSMasterKeyID>\
             </ApplyServerSideEncryptionByDefault><BucketKeyEnabled>true</BucketKeyEnabled></Rule>",
        )
        .expect("parse");
        assert_eq!(c.algorithm, Sse::AwsKms);
        assert_eq!(
            c.kms_master_key_id.as_deref(),
            Some("arn:aws:kms:us-east-1:1234:key/k&1")
        );
        assert!(c.bucket_key_enabled);
        let mut out = Vec::new();
        c.write_xml(&mut out);
        assert_eq!(
            ServerSideEncryptionConfiguration::parse_xml(&out).expect("again"),
            c
        );
    }

    #[test]
    fn malformed_documents_are_malformed_xml() {
        let aes = "<ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm>\
                   </ApplyServerSideEncryptionByDefault>";
        for rule in [
            String::new(),
            format!("<Rule>{aes}</Rule><Rule>{aes}</Rule>"),
            String::from("<Rule><BucketKeyEnabled>true</BucketKeyEnabled></Rule>"),
            String::from(
                "<Rule><ApplyServerSideEncryptionByDefault></ApplyServerSideEncryptionByDefault></Rule>",
            ),
            String::from(
                "<Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>aes256</SSEAlgorithm>\
                 </ApplyServerSideEncryptionByDefault></Rule>",
            ),
            format!("<Rule>{aes}<BucketKeyEnabled>maybe</BucketKeyEnabled></Rule>"),
            format!("<Rule>{aes}"),
        ] {
            assert_eq!(code(&rule), S3ErrorCode::MalformedXML, "{rule}");
        }
        for body in [
            &b"<Other/>"[..],
            b"",
            b"not xml",
            b"<!DOCTYPE x><ServerSideEncryptionConfiguration/>",
        ] {
            let e = ServerSideEncryptionConfiguration::parse_xml(body).expect_err("bad");
            assert_eq!(e.code, S3ErrorCode::MalformedXML);
        }
        let big = alloc::vec![b' '; MAX_ENCRYPTION_BODY + 1];
        let e = ServerSideEncryptionConfiguration::parse_xml(&big).expect_err("big");
        assert_eq!(e.code, S3ErrorCode::MalformedXML);
    }

    #[test]
    fn bad_combinations_are_refused_as_s3_does() {
        let with_key = |alg: &str, key: &str| {
            format!(
                "<Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>{alg}</SSEAlgorithm>\
                 <KMSMasterKeyID>{key}</KMSMasterKeyID></ApplyServerSideEncryptionByDefault></Rule>"
            )
        };
        assert_eq!(code(&with_key("AES256", "k")), S3ErrorCode::InvalidArgument);
        assert_eq!(code(&with_key("aws:kms", "")), S3ErrorCode::InvalidArgument);
        let long = "k".repeat(MAX_KMS_KEY_ID + 1);
        assert_eq!(
            code(&with_key("aws:kms", &long)),
            S3ErrorCode::InvalidArgument
        );
        let longest = "k".repeat(MAX_KMS_KEY_ID);
        assert!(parse(&with_key("aws:kms", &longest)).is_ok());
        assert_eq!(
            code(&with_key("aws:kms:dsse", "k")),
            S3ErrorCode::NotImplemented
        );
        assert_eq!(
            code(
                "<Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>aws:kms:dsse\
                 </SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule>"
            ),
            S3ErrorCode::NotImplemented
        );
        let aes = "<ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm>\
                   </ApplyServerSideEncryptionByDefault>";
        let blocked = |t: &str| {
            format!(
                "<Rule>{aes}<BlockedEncryptionTypes><EncryptionType>{t}</EncryptionType>\
                 </BlockedEncryptionTypes></Rule>"
            )
        };
        assert_eq!(code(&blocked("SSE-C")), S3ErrorCode::NotImplemented);
        assert!(parse(&blocked("NONE")).is_ok());
    }
}
