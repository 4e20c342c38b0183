//! Access control lists: S3's grants of READ, WRITE, READ_ACP, WRITE_ACP and FULL_CONTROL to
//! users (by canonical id) and to the AllUsers and AuthenticatedUsers groups, from canned ACLs
//! (`x-amz-acl`), grant headers (`x-amz-grant-*`) or an `AccessControlPolicy` document, and
//! what they allow.
//!
//! Grants by e-mail address (`emailAddress=`, `AmazonCustomerByEmail`) are `NotImplemented`:
//! Ferry's users have no e-mail addresses.

use alloc::borrow::{Cow, ToOwned};
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::xml::{AclDocument, S3_NS};
use super::{S3Error, S3ErrorCode, S3Result};
use crate::http::{Header, find_header_str};
use crate::s3::header;

/// The AllUsers group (anyone, anonymous requests included).
pub const ALL_USERS: &str = "http://acs.amazonaws.com/groups/global/AllUsers";
/// The AuthenticatedUsers group (any signed request).
pub const AUTHENTICATED_USERS: &str = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers";
/// The LogDelivery group (accepted and kept; Ferry delivers no logs).
pub const LOG_DELIVERY: &str = "http://acs.amazonaws.com/groups/s3/LogDelivery";

/// Most grants in one ACL (S3's limit).
pub const MAX_GRANTS: usize = 100;
/// The largest `AccessControlPolicy` document read.
pub const MAX_ACL_BODY: usize = 64 * 1024;

/// The grant headers of a write or Put*Acl, and the permission each gives.
const GRANT_HEADERS: [(&str, Permission); 5] = [
    (header::X_AMZ_GRANT_READ, Permission::Read),
    (header::X_AMZ_GRANT_WRITE, Permission::Write),
    (header::X_AMZ_GRANT_READ_ACP, Permission::ReadAcp),
    (header::X_AMZ_GRANT_WRITE_ACP, Permission::WriteAcp),
    (header::X_AMZ_GRANT_FULL_CONTROL, Permission::FullControl),
];

/// A permission, as S3 names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permission {
    /// Read the object; list the bucket.
    Read,
    /// Write objects in the bucket.
    Write,
    /// Read the ACL.
    ReadAcp,
    /// Replace the ACL.
    WriteAcp,
    /// All of them.
    FullControl,
}

impl Permission {
    /// The name in documents and headers' order.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "READ",
            Self::Write => "WRITE",
            Self::ReadAcp => "READ_ACP",
            Self::WriteAcp => "WRITE_ACP",
            Self::FullControl => "FULL_CONTROL",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "READ" => Self::Read,
            "WRITE" => Self::Write,
            "READ_ACP" => Self::ReadAcp,
            "WRITE_ACP" => Self::WriteAcp,
            "FULL_CONTROL" => Self::FullControl,
            _ => return None,
        })
    }

    /// Whether a grant of `self` gives `want`.
    fn covers(self, want: Permission) -> bool {
        self == want || self == Self::FullControl
    }
}

/// Who a grant is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grantee {
    /// A user, by canonical id.
    User(String),
    /// A group, by URI ([`ALL_USERS`], [`AUTHENTICATED_USERS`], [`LOG_DELIVERY`]).
    Group(String),
}

/// One grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// Who.
    pub grantee: Grantee,
    /// What.
    pub permission: Permission,
}

impl Grant {
    /// Whether it grants to AllUsers or AuthenticatedUsers.
    pub fn is_public(&self) -> bool {
        matches!(&self.grantee, Grantee::Group(u) if u == ALL_USERS || u == AUTHENTICATED_USERS)
    }
}

/// An ACL: the resource's owner and its grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acl {
    /// The owner's canonical id.
    pub owner: String,
    /// The grants, in order.
    pub grants: Vec<Grant>,
}

/// Who asks, for [`Acl::allows`]: `None` for an anonymous request.
pub type Requester<'a> = Option<&'a str>;

fn invalid(message: impl Into<Cow<'static, str>>) -> S3Error {
    S3Error::with_message(S3ErrorCode::InvalidArgument, message)
}

impl Acl {
    /// The owner alone, with FULL_CONTROL (the `private` canned ACL).
    pub fn private(owner: &str) -> Self {
        Self {
            owner: owner.to_owned(),
            grants: alloc::vec![Grant {
                grantee: Grantee::User(owner.to_owned()),
                permission: Permission::FullControl,
            }],
        }
    }

    /// A canned ACL for a resource of `owner` in a bucket of `bucket_owner`: `InvalidArgument`
    /// for a name S3 does not know.
    pub fn canned(name: &str, owner: &str, bucket_owner: &str) -> S3Result<Self> {
        let mut acl = Self::private(owner);
        let mut grant = |grantee: Grantee, permission| {
            acl.grants.push(Grant {
                grantee,
                permission,
            })
        };
        match name {
            "private" => {}
            "public-read" => grant(Grantee::Group(ALL_USERS.into()), Permission::Read),
            "public-read-write" => {
                grant(Grantee::Group(ALL_USERS.into()), Permission::Read);
                grant(Grantee::Group(ALL_USERS.into()), Permission::Write);
            }
            "authenticated-read" => {
                grant(Grantee::Group(AUTHENTICATED_USERS.into()), Permission::Read);
            }
            "bucket-owner-read" if bucket_owner != owner => {
                grant(Grantee::User(bucket_owner.into()), Permission::Read);
            }
            "bucket-owner-full-control" if bucket_owner != owner => {
                grant(Grantee::User(bucket_owner.into()), Permission::FullControl);
            }
            "bucket-owner-read" | "bucket-owner-full-control" => {}
            "log-delivery-write" => {
                grant(Grantee::Group(LOG_DELIVERY.into()), Permission::Write);
                grant(Grantee::Group(LOG_DELIVERY.into()), Permission::ReadAcp);
            }
            "aws-exec-read" => {
                return Err(S3Error::with_message(
                    S3ErrorCode::NotImplemented,
                    "The aws-exec-read canned ACL is not supported",
                ));
            }
            other => {
                return Err(invalid(format!("Unknown canned ACL {other}")));
            }
        }
        Ok(acl)
    }

    /// The ACL a request asks for with `x-amz-acl` or `x-amz-grant-*` headers (not both:
    /// `InvalidRequest`), for a resource of `owner` in a bucket of `bucket_owner`; `None` if
    /// it asks for none.
    pub fn from_headers(
        headers: &[Header<'_>],
        owner: &str,
        bucket_owner: &str,
    ) -> S3Result<Option<Self>> {
        let canned = find_header_str(headers, header::X_AMZ_ACL).map(str::trim);
        let mut grants = Vec::new();
        for (header, permission) in GRANT_HEADERS {
            for h in headers
                .iter()
                .filter(|h| h.name.eq_ignore_ascii_case(header))
            {
                let value = core::str::from_utf8(h.value)
                    .map_err(|_| invalid(format!("{header} is not UTF-8")))?;
                for grantee in parse_grantees(value)? {
                    grants.push(Grant {
                        grantee,
                        permission,
                    });
                }
            }
        }
        match (canned, grants.is_empty()) {
            (Some(_), false) => Err(S3Error::with_message(
                S3ErrorCode::InvalidRequest,
                "Specifying both Canned ACLs and Header Grants is not allowed",
            )),
            (Some(name), true) => Self::canned(name, owner, bucket_owner).map(Some),
            (None, false) => {
                if grants.len() > MAX_GRANTS {
                    return Err(invalid("An ACL may have at most 100 grants"));
                }
                Ok(Some(Self {
                    owner: owner.to_owned(),
                    grants,
                }))
            }
            (None, true) => Ok(None),
        }
    }

    /// Whether `who` (a canonical id; `None`: anonymous) holds `want`. The owner always may
    /// read and replace the ACL, as in S3.
    pub fn allows(&self, who: Requester<'_>, want: Permission) -> bool {
        if who == Some(self.owner.as_str())
            && matches!(want, Permission::ReadAcp | Permission::WriteAcp)
        {
            return true;
        }
        self.grants.iter().any(|g| {
            g.permission.covers(want)
                && match &g.grantee {
                    Grantee::User(id) => who == Some(id.as_str()),
                    Grantee::Group(uri) if uri == ALL_USERS => true,
                    Grantee::Group(uri) if uri == AUTHENTICATED_USERS => who.is_some(),
                    Grantee::Group(_) => false,
                }
        })
    }

    /// Whether the ACL is public as AWS's public access block defines it: it grants anything
    /// to AllUsers or AuthenticatedUsers.
    pub fn is_public(&self) -> bool {
        self.grants.iter().any(Grant::is_public)
    }

    /// The ACL without its public grants (what `IgnorePublicAcls` leaves of it).
    pub fn without_public(&self) -> Self {
        Self {
            owner: self.owner.clone(),
            grants: self
                .grants
                .iter()
                .filter(|g| !g.is_public())
                .cloned()
                .collect(),
        }
    }

    /// Whether the ACL grants nothing but FULL_CONTROL to `owner` (the bucket's owner): what
    /// `bucket-owner-full-control` or `private` gives an object of the bucket owner's, and
    /// the only ACL a bucket with ACLs disabled takes.
    pub fn is_owner_full_control(&self, owner: &str) -> bool {
        self.grants.iter().all(|g| {
            g.permission == Permission::FullControl
                && matches!(&g.grantee, Grantee::User(id) if id == owner)
        })
    }

    /// Whether this is the `private` ACL: its owner alone, with FULL_CONTROL (what a resource
    /// written without an ACL has).
    pub fn is_private(&self) -> bool {
        *self == Self::private(&self.owner)
    }

    /// The grant headers (`x-amz-grant-*`, one per permission given) that ask a write for
    /// these grants: what [`Self::from_headers`] reads back as them, permission by permission.
    pub fn grant_headers(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        for (header, permission) in GRANT_HEADERS {
            let mut value = String::new();
            for g in self.grants.iter().filter(|g| g.permission == permission) {
                if !value.is_empty() {
                    value.push_str(", ");
                }
                let (kind, who) = match &g.grantee {
                    Grantee::User(id) => ("id", id),
                    Grantee::Group(uri) => ("uri", uri),
                };
                value.push_str(&format!("{kind}=\"{who}\""));
            }
            if !value.is_empty() {
                out.push((header, value));
            }
        }
        out
    }

    /// The `AccessControlPolicy` document; `display_name` names users it knows.
    pub fn write_xml(&self, out: &mut Vec<u8>, display_name: &dyn Fn(&str) -> Option<String>) {
        let mut s = String::with_capacity(512);
        s.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<AccessControlPolicy xmlns=\"");
        s.push_str(S3_NS);
        s.push_str("\"><Owner><ID>");
        escape(&mut s, &self.owner);
        s.push_str("</ID>");
        if let Some(n) = display_name(&self.owner) {
            s.push_str("<DisplayName>");
            escape(&mut s, &n);
            s.push_str("</DisplayName>");
        }
        s.push_str("</Owner><AccessControlList>");
        for g in &self.grants {
            s.push_str("<Grant>");
            match &g.grantee {
                Grantee::User(id) => {
                    s.push_str(
                        "<Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" \
                         xsi:type=\"CanonicalUser\"><ID>",
                    );
                    escape(&mut s, id);
                    s.push_str("</ID>");
                    if let Some(n) = display_name(id) {
                        s.push_str("<DisplayName>");
                        escape(&mut s, &n);
                        s.push_str("</DisplayName>");
                    }
                }
                Grantee::Group(uri) => {
                    s.push_str(
                        "<Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" \
                         xsi:type=\"Group\"><URI>",
                    );
                    escape(&mut s, uri);
                    s.push_str("</URI>");
                }
            }
            s.push_str("</Grantee><Permission>");
            s.push_str(g.permission.as_str());
            s.push_str("</Permission></Grant>");
        }
        s.push_str("</AccessControlList></AccessControlPolicy>");
        out.extend_from_slice(s.as_bytes());
    }

    /// Parse an `AccessControlPolicy` document (PutBucketAcl, PutObjectAcl):
    /// `MalformedACLError` for what is not one; the grantee's kind is told by its child
    /// (`ID`, `URI`, `EmailAddress`).
    pub fn parse_xml(body: &[u8]) -> S3Result<Self> {
        let malformed = |_: S3Error| {
            S3Error::with_message(
                S3ErrorCode::MalformedACLError,
                "The XML you provided was not well-formed or did not validate against our \
                 published schema",
            )
        };
        let doc = AclDocument::parse_xml(body, MAX_ACL_BODY, MAX_GRANTS + 1).map_err(malformed)?;
        if doc.grants.len() > MAX_GRANTS {
            return Err(invalid("An ACL may have at most 100 grants"));
        }
        let mut grants = Vec::with_capacity(doc.grants.len());
        for g in &doc.grants {
            let grantee = match (&g.id, &g.uri, &g.email) {
                (Some(id), None, None) if !id.is_empty() => Grantee::User(id.to_string()),
                (None, Some(uri), None) => group(uri)?,
                (None, None, Some(_)) => return Err(email_grants()),
                _ => return Err(malformed(S3Error::new(S3ErrorCode::MalformedACLError))),
            };
            let permission = Permission::parse(&g.permission)
                .ok_or_else(|| malformed(S3Error::new(S3ErrorCode::MalformedACLError)))?;
            grants.push(Grant {
                grantee,
                permission,
            });
        }
        if doc.owner.is_empty() {
            return Err(malformed(S3Error::new(S3ErrorCode::MalformedACLError)));
        }
        Ok(Self {
            owner: doc.owner.to_string(),
            grants,
        })
    }
}

fn email_grants() -> S3Error {
    S3Error::with_message(
        S3ErrorCode::NotImplemented,
        "Grants by e-mail address are not supported",
    )
}

fn group(uri: &str) -> S3Result<Grantee> {
    match uri {
        ALL_USERS | AUTHENTICATED_USERS | LOG_DELIVERY => Ok(Grantee::Group(uri.to_owned())),
        other => Err(invalid(format!("Invalid group uri {other}"))),
    }
}

/// `id="...", uri="...", emailAddress="..."`, comma-separated.
fn parse_grantees(value: &str) -> S3Result<Vec<Grantee>> {
    let mut out = Vec::new();
    for part in value.split(',') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let (kind, v) = part
            .split_once('=')
            .ok_or_else(|| invalid(format!("Invalid grantee {part}")))?;
        let v = v.trim().trim_matches('"');
        match kind.trim() {
            "id" if !v.is_empty() => out.push(Grantee::User(v.to_owned())),
            "uri" => out.push(group(v)?),
            "emailAddress" => return Err(email_grants()),
            _ => return Err(invalid(format!("Invalid grantee {part}"))),
        }
    }
    Ok(out)
}

fn escape(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALICE: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const BOB: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

    fn h<'a>(pairs: &'a [(&'a str, &'a str)]) -> Vec<Header<'a>> {
        pairs
            .iter()
            .map(|(n, v)| Header {
                name: n,
                value: v.as_bytes(),
            })
            .collect()
    }

    #[test]
    fn canned_acls_grant_what_s3_says() {
        let private = Acl::canned("private", ALICE, ALICE).unwrap();
        assert!(private.allows(Some(ALICE), Permission::Read));
        assert!(!private.allows(Some(BOB), Permission::Read));
        assert!(!private.allows(None, Permission::Read));
        let public = Acl::canned("public-read", ALICE, ALICE).unwrap();
        assert!(public.allows(None, Permission::Read));
        assert!(!public.allows(None, Permission::Write));
        assert!(public.is_public());
        let rw = Acl::canned("public-read-write", ALICE, ALICE).unwrap();
        assert!(rw.allows(None, Permission::Write));
        let auth = Acl::canned("authenticated-read", ALICE, ALICE).unwrap();
        assert!(auth.allows(Some(BOB), Permission::Read));
        assert!(!auth.allows(None, Permission::Read));
        // Public as the public access block means it: AllUsers or AuthenticatedUsers.
        assert!(auth.is_public());
        assert!(!private.is_public());
        assert!(!auth.without_public().allows(Some(BOB), Permission::Read));
        assert!(auth.without_public().allows(Some(ALICE), Permission::Read));
        assert!(private.is_owner_full_control(ALICE));
        assert!(!auth.is_owner_full_control(ALICE));
        // An object bob writes into alice's bucket.
        let full = Acl::canned("bucket-owner-full-control", BOB, ALICE).unwrap();
        assert!(full.allows(Some(ALICE), Permission::WriteAcp));
        let read = Acl::canned("bucket-owner-read", BOB, ALICE).unwrap();
        assert!(read.allows(Some(ALICE), Permission::Read));
        assert!(!read.allows(Some(ALICE), Permission::Write));
        assert_eq!(
            Acl::canned("world-writable", ALICE, ALICE)
                .unwrap_err()
                .code,
            S3ErrorCode::InvalidArgument
        );
        // The owner may always read and replace the ACL, whatever it grants.
        let none = Acl {
            owner: ALICE.into(),
            grants: Vec::new(),
        };
        assert!(none.allows(Some(ALICE), Permission::WriteAcp));
        assert!(!none.allows(Some(ALICE), Permission::Read));
    }

    #[test]
    fn grant_headers() {
        let acl = Acl::from_headers(
            &h(&[
                (
                    "x-amz-grant-read",
                    &format!("id=\"{BOB}\", uri=\"{ALL_USERS}\""),
                ),
                ("x-amz-grant-full-control", &format!("id={ALICE}")),
            ]),
            ALICE,
            ALICE,
        )
        .unwrap()
        .unwrap();
        assert_eq!(acl.grants.len(), 3);
        assert!(acl.allows(Some(BOB), Permission::Read));
        assert!(acl.allows(None, Permission::Read));
        assert!(!acl.allows(Some(BOB), Permission::Write));
        assert!(acl.allows(Some(ALICE), Permission::Write));
        assert!(Acl::from_headers(&h(&[]), ALICE, ALICE).unwrap().is_none());
        let both = Acl::from_headers(
            &h(&[("x-amz-acl", "private"), ("x-amz-grant-read", "id=x")]),
            ALICE,
            ALICE,
        );
        assert_eq!(both.unwrap_err().code, S3ErrorCode::InvalidRequest);
        let email = Acl::from_headers(
            &h(&[("x-amz-grant-read", "emailAddress=\"a@b\"")]),
            ALICE,
            ALICE,
        );
        assert_eq!(email.unwrap_err().code, S3ErrorCode::NotImplemented);
        let bad = Acl::from_headers(
            &h(&[("x-amz-grant-read", "uri=\"http://x/\"")]),
            ALICE,
            ALICE,
        );
        assert_eq!(bad.unwrap_err().code, S3ErrorCode::InvalidArgument);
    }

    #[test]
    fn documents_round_trip() {
        let acl = Acl {
            owner: ALICE.into(),
            grants: alloc::vec![
                Grant {
                    grantee: Grantee::User(ALICE.into()),
                    permission: Permission::FullControl,
                },
                Grant {
                    grantee: Grantee::Group(AUTHENTICATED_USERS.into()),
                    permission: Permission::Read,
                },
                Grant {
                    grantee: Grantee::User(BOB.into()),
                    permission: Permission::WriteAcp,
                },
                Grant {
                    grantee: Grantee::User(BOB.into()),
                    permission: Permission::Read,
                },
            ],
        };
        let mut xml = Vec::new();
        acl.write_xml(&mut xml, &|id| (id == ALICE).then(|| "alice".to_string()));
        let text = core::str::from_utf8(&xml).unwrap();
        assert!(text.contains("<DisplayName>alice</DisplayName>"), "{text}");
        assert!(text.contains("xsi:type=\"Group\""), "{text}");
        assert_eq!(Acl::parse_xml(&xml).unwrap(), acl);
        // As grant headers, the same grants, in the headers' order of permissions.
        assert!(!acl.is_private() && Acl::private(BOB).is_private());
        let headers = acl.grant_headers();
        let views: Vec<Header<'_>> = headers
            .iter()
            .map(|(n, v)| Header {
                name: n,
                value: v.as_bytes(),
            })
            .collect();
        let back = Acl::from_headers(&views, ALICE, ALICE).unwrap().unwrap();
        assert_eq!(back.owner, acl.owner);
        let sorted = |a: &Acl| {
            let mut g: Vec<String> = a.grants.iter().map(|g| format!("{g:?}")).collect();
            g.sort();
            g
        };
        assert_eq!(sorted(&back), sorted(&acl));
        for bad in [
            &b"<AccessControlPolicy/>"[..],
            b"<AccessControlPolicy><Owner><ID>x</ID></Owner></AccessControlPolicy>",
            b"<AccessControlPolicy><Owner><ID>x</ID></Owner><AccessControlList><Grant><Grantee><ID>y</ID></Grantee><Permission>ALL</Permission></Grant></AccessControlList></AccessControlPolicy>",
            b"not xml",
        ] {
            assert_eq!(
                Acl::parse_xml(bad).unwrap_err().code,
                S3ErrorCode::MalformedACLError,
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        let email = b"<AccessControlPolicy><Owner><ID>x</ID></Owner><AccessControlList><Grant><Grantee><EmailAddress>a@b</EmailAddress></Grantee><Permission>READ</Permission></Grant></AccessControlList></AccessControlPolicy>";
        assert_eq!(
            Acl::parse_xml(email).unwrap_err().code,
            S3ErrorCode::NotImplemented
        );
    }
}
