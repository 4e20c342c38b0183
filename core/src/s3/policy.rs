//! Bucket policies: AWS's policy grammar, the part S3 bucket policies use, parsed and checked
//! once when a policy is stored, and evaluated per request.
//!
//! Evaluation is AWS's: a matching `Deny` statement wins over everything, then a matching
//! `Allow`; with neither the policy says nothing ([`Decision::Default`]) and the caller's
//! ownership (or an ACL) decides. A statement matches when its principal, action, resource
//! and every condition match the request.
//!
//! What is supported: `Version` 2012-10-17 or 2008-10-17; `Statement` (one or a list) with
//! `Sid`, `Effect`, `Principal` (`"*"`, `{"AWS": ...}` with `*`, user ARNs
//! `arn:aws:iam::ACCOUNT:user/NAME`, account ARNs `arn:aws:iam::ACCOUNT:root` or a bare
//! account id, `{"CanonicalUser": ...}`, `{"Service": ...}`), `Action` / `NotAction` and
//! `Resource` / `NotResource` with `*` and `?` wildcards, and `Condition` with the operators
//! `String(Not)Equals(IgnoreCase)`, `String(Not)Like`, `(Not)IpAddress`, `Bool`, `Numeric*`,
//! `Date*`, `Arn(Not)Equals`, `Arn(Not)Like`, `Null`, the `...IfExists` forms and the
//! `ForAnyValue:` / `ForAllValues:` set qualifiers, over the keys of [`CONDITION_KEYS`].
//! Anything else (`NotPrincipal`, policy variables, other keys) is refused when the policy is
//! stored, with `MalformedPolicy` saying what.
//!
//! Who the request's principal is, and the values of its condition keys, are the caller's to
//! say ([`PolicyRequest`]): this module does no I/O and believes what it is told. A service
//! principal ([`PolicyRequest::service`]) is what the server itself acts as (delivering
//! server access logs), never what a client claims.
//!
//! A policy is at most [`MAX_POLICY_LEN`] bytes (S3's limit).

use alloc::borrow::ToOwned;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::net::IpAddr;

use serde_json::{Map, Value};

use super::{S3Error, S3ErrorCode, S3Result};

/// The largest policy document S3 takes (20 KB).
pub const MAX_POLICY_LEN: usize = 20 * 1024;

/// The condition keys a policy may use (compared without regard to case); the `/<tag key>`
/// of `s3:ExistingObjectTag/` and `s3:RequestObjectTag/` is any tag key.
pub const CONDITION_KEYS: &[&str] = &[
    "aws:SourceIp",
    "aws:SecureTransport",
    "aws:UserAgent",
    "aws:Referer",
    "aws:username",
    "aws:PrincipalType",
    "aws:PrincipalAccount",
    "aws:SourceArn",
    "aws:SourceAccount",
    "aws:CurrentTime",
    "aws:EpochTime",
    "s3:prefix",
    "s3:delimiter",
    "s3:max-keys",
    "s3:versionid",
    "s3:x-amz-acl",
    "s3:x-amz-content-sha256",
    "s3:x-amz-server-side-encryption",
    "s3:x-amz-server-side-encryption-aws-kms-key-id",
    "s3:x-amz-server-side-encryption-customer-algorithm",
    "s3:x-amz-copy-source",
    "s3:x-amz-metadata-directive",
    "s3:x-amz-grant-read",
    "s3:x-amz-grant-write",
    "s3:x-amz-grant-read-acp",
    "s3:x-amz-grant-write-acp",
    "s3:x-amz-grant-full-control",
    "s3:x-amz-storage-class",
    "s3:object-lock-mode",
    "s3:object-lock-retain-until-date",
    "s3:object-lock-remaining-retention-days",
    "s3:object-lock-legal-hold",
    "s3:RequestObjectTagKeys",
    "s3:authType",
    "s3:signatureversion",
    "s3:signatureAge",
    "s3:TlsVersion",
    "s3:ExistingObjectTag/",
    "s3:RequestObjectTag/",
    // Known so that AWS's examples parse, never present in a request to Ferry (no MFA, no
    // organizations, no VPC endpoints): a condition on them is evaluated as on AWS for a
    // request without them.
    "aws:MultiFactorAuthPresent",
    "aws:MultiFactorAuthAge",
    "aws:PrincipalOrgID",
    "aws:SourceVpc",
    "aws:SourceVpce",
];

/// The service principal that delivers server access logs (`{"Service": ...}`).
pub const LOGGING_SERVICE: &str = "logging.s3.amazonaws.com";

/// The S3 actions a policy's `Action` may name (each pattern must match one of them).
pub const ACTIONS: &[&str] = &[
    "s3:AbortMultipartUpload",
    "s3:BypassGovernanceRetention",
    "s3:CreateBucket",
    "s3:DeleteBucket",
    "s3:DeleteBucketPolicy",
    "s3:DeleteObject",
    "s3:DeleteObjectTagging",
    "s3:DeleteObjectVersion",
    "s3:DeleteObjectVersionTagging",
    "s3:GetBucketAcl",
    "s3:GetBucketCORS",
    "s3:GetBucketLocation",
    "s3:GetBucketObjectLockConfiguration",
    "s3:GetBucketOwnershipControls",
    "s3:GetBucketPolicy",
    "s3:GetBucketPolicyStatus",
    "s3:GetBucketPublicAccessBlock",
    "s3:GetBucketTagging",
    "s3:GetBucketVersioning",
    "s3:GetEncryptionConfiguration",
    "s3:GetLifecycleConfiguration",
    "s3:GetObject",
    "s3:GetObjectAcl",
    "s3:GetObjectAttributes",
    "s3:GetObjectLegalHold",
    "s3:GetObjectRetention",
    "s3:GetObjectTagging",
    "s3:GetObjectVersion",
    "s3:GetObjectVersionAcl",
    "s3:GetObjectVersionAttributes",
    "s3:GetObjectVersionTagging",
    "s3:ListAllMyBuckets",
    "s3:ListBucket",
    "s3:ListBucketMultipartUploads",
    "s3:ListBucketVersions",
    "s3:ListMultipartUploadParts",
    "s3:PutBucketAcl",
    "s3:PutBucketCORS",
    "s3:PutBucketObjectLockConfiguration",
    "s3:PutBucketOwnershipControls",
    "s3:PutBucketPolicy",
    "s3:PutBucketPublicAccessBlock",
    "s3:PutBucketTagging",
    "s3:PutBucketVersioning",
    "s3:PutEncryptionConfiguration",
    "s3:PutLifecycleConfiguration",
    "s3:PutObject",
    "s3:PutObjectAcl",
    "s3:PutObjectLegalHold",
    "s3:PutObjectRetention",
    "s3:PutObjectTagging",
    "s3:PutObjectVersionAcl",
    "s3:PutObjectVersionTagging",
];

/// What a policy says about a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// A `Deny` statement matches: refused, whoever asks.
    Deny,
    /// An `Allow` statement matches and no `Deny` does.
    Allow,
    /// No statement matches.
    Default,
}

/// Who asks: `None` for an anonymous request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Principal<'a> {
    /// The user's name (matched by `arn:aws:iam::ACCOUNT:user/NAME`).
    pub name: &'a str,
    /// The user's canonical id (matched by `{"CanonicalUser": ID}`).
    pub canonical_id: &'a str,
    /// The user's account id (matched by `arn:aws:iam::ACCOUNT:root` and a bare `ACCOUNT`).
    pub account: &'a str,
}

/// One request as a policy sees it.
#[derive(Debug, Clone)]
pub struct PolicyRequest<'a> {
    /// The signer, or `None` for an anonymous request (or a service's).
    pub principal: Option<Principal<'a>>,
    /// The service principal the server itself acts as (`logging.s3.amazonaws.com`
    /// delivering access logs), matched by `{"Service": ...}`; `None` for every request a
    /// client makes, whatever it sends.
    pub service: Option<&'a str>,
    /// The action, as `s3:GetObject`.
    pub action: &'a str,
    /// The resource's ARN: `arn:aws:s3:::bucket` or `arn:aws:s3:::bucket/key`.
    pub resource: &'a str,
    /// Condition keys present in the request and their values (key compared without regard
    /// to case).
    pub context: &'a [(&'a str, &'a str)],
}

impl PolicyRequest<'_> {
    fn values(&self, key: &str) -> Vec<&str> {
        self.context
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| *v)
            .collect()
    }
}

/// A checked bucket policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    statements: Vec<Statement>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Statement {
    allow: bool,
    principal: PrincipalSet,
    actions: Patterns,
    resources: Patterns,
    conditions: Vec<Condition>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum PrincipalSet {
    /// `"*"` or `{"AWS": "*"}`: everyone, anonymous included.
    Anyone,
    /// User ARNs' names, canonical ids, accounts (`arn:aws:iam::ACCOUNT:root`) and
    /// services.
    Some {
        user_names: Vec<String>,
        canonical_ids: Vec<String>,
        accounts: Vec<String>,
        services: Vec<String>,
    },
}

/// `Action` or `NotAction` (and the same for resources): patterns with `*` and `?`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Patterns {
    negated: bool,
    patterns: Vec<String>,
}

impl Patterns {
    fn matches(&self, value: &str, ignore_case: bool) -> bool {
        let any = self
            .patterns
            .iter()
            .any(|p| wildcard_match(p, value, ignore_case));
        any != self.negated
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Condition {
    op: Op,
    negated: bool,
    if_exists: bool,
    /// `ForAnyValue:` / `ForAllValues:`; `None` for a single-valued test.
    set: Option<SetOp>,
    key: String,
    values: Vec<String>,
}

/// The set qualifiers of multi-valued keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SetOp {
    /// `ForAnyValue:`: at least one of the request's values passes (none: fails).
    AnyValue,
    /// `ForAllValues:`: every one of the request's values passes (none: holds).
    AllValues,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    StringEquals,
    StringEqualsIgnoreCase,
    StringLike,
    IpAddress,
    Bool,
    NumericEquals,
    NumericLessThan,
    NumericLessThanEquals,
    NumericGreaterThan,
    NumericGreaterThanEquals,
    DateEquals,
    DateLessThan,
    DateLessThanEquals,
    DateGreaterThan,
    DateGreaterThanEquals,
    ArnEquals,
    ArnLike,
    Null,
}

fn malformed(message: impl Into<String>) -> S3Error {
    S3Error::with_message(S3ErrorCode::MalformedPolicy, message.into())
}

impl Policy {
    /// Parse and check a policy for `bucket`: every resource must be the bucket or objects in
    /// it. `MalformedPolicy` says what is wrong.
    pub fn parse(text: &[u8], bucket: &str) -> S3Result<Self> {
        if text.len() > MAX_POLICY_LEN {
            return Err(malformed(format!(
                "Policies must be {MAX_POLICY_LEN} bytes or less"
            )));
        }
        let doc: Value = serde_json::from_slice(text)
            .map_err(|e| malformed(format!("This policy contains invalid JSON: {e}")))?;
        let Value::Object(doc) = doc else {
            return Err(malformed("A policy must be a JSON object"));
        };
        for key in doc.keys() {
            if !matches!(key.as_str(), "Version" | "Id" | "Statement") {
                return Err(malformed(format!("Unknown field {key}")));
            }
        }
        match doc.get("Version") {
            None => {}
            Some(Value::String(v)) if v == "2012-10-17" || v == "2008-10-17" => {}
            Some(_) => {
                return Err(malformed(
                    "Version must be \"2012-10-17\" or \"2008-10-17\"",
                ));
            }
        }
        let statements = match doc.get("Statement") {
            Some(Value::Array(list)) if !list.is_empty() => list.iter().collect(),
            Some(s @ Value::Object(_)) => alloc::vec![s],
            _ => return Err(malformed("Missing required field Statement")),
        };
        let statements = statements
            .into_iter()
            .map(|s| parse_statement(s, bucket))
            .collect::<S3Result<Vec<_>>>()?;
        Ok(Self { statements })
    }

    /// What the policy says about `req`.
    pub fn evaluate(&self, req: &PolicyRequest<'_>) -> Decision {
        let mut allowed = false;
        for s in &self.statements {
            if s.matches(req) {
                if !s.allow {
                    return Decision::Deny;
                }
                allowed = true;
            }
        }
        if allowed {
            Decision::Allow
        } else {
            Decision::Default
        }
    }

    /// Whether a condition of the policy uses a key starting with `prefix` (compared without
    /// regard to case): the caller gathers costly values (an object's tags) only then.
    pub fn uses_key_prefix(&self, prefix: &str) -> bool {
        self.statements.iter().any(|s| {
            s.conditions
                .iter()
                .any(|c| starts_with_ignore_case(&c.key, prefix))
        })
    }

    /// Whether the policy makes the bucket public, as AWS decides it for
    /// GetBucketPolicyStatus, `BlockPublicPolicy` and `RestrictPublicBuckets`: some `Allow`
    /// statement grants a "bad action" (one that reads, lists, writes or deletes: `s3:Get*`,
    /// `s3:List*`, `s3:Put*`, `s3:Delete*`, `s3:AbortMultipartUpload`, `s3:RestoreObject`) to
    /// anyone (`"*"`, `{"AWS": "*"}`) without a condition that fixes who: `IpAddress` on
    /// `aws:SourceIp` with no `/0` range, or a fixed value (an equality without wildcards, not
    /// `...IfExists`) of one of [`FIXING_KEYS`].
    pub fn is_public(&self) -> bool {
        self.statements.iter().any(|s| {
            s.allow
                && s.principal == PrincipalSet::Anyone
                && s.grants_bad_action()
                && !s.conditions.iter().any(Condition::fixes_who)
        })
    }
}

/// The condition keys whose fixed value makes a statement for anyone non-public, as AWS lists
/// them (those Ferry's requests never carry match nothing: a statement conditioned on them
/// lets no one in).
pub const FIXING_KEYS: &[&str] = &[
    "aws:PrincipalAccount",
    "aws:PrincipalArn",
    "aws:PrincipalOrgID",
    "aws:SourceAccount",
    "aws:SourceArn",
    "aws:SourceOwner",
    "aws:SourceVpc",
    "aws:SourceVpce",
    "aws:userid",
    "s3:DataAccessPointAccount",
    "s3:DataAccessPointArn",
    "s3:x-amz-server-side-encryption-aws-kms-key-id",
];

/// The actions AWS calls bad for a public policy (they expose the bucket's data).
const BAD_ACTIONS: &[&str] = &[
    "s3:Get*",
    "s3:List*",
    "s3:Put*",
    "s3:Delete*",
    "s3:AbortMultipartUpload",
    "s3:RestoreObject",
];

impl Condition {
    /// Whether this condition fixes who may use the statement (see [`Policy::is_public`]).
    fn fixes_who(&self) -> bool {
        if self.negated || self.if_exists || self.values.is_empty() {
            return false;
        }
        if self.key.eq_ignore_ascii_case("aws:SourceIp") {
            return self.op == Op::IpAddress
                && self
                    .values
                    .iter()
                    .all(|v| parse_cidr(v).is_some_and(|(_, bits)| bits > 0));
        }
        // (`ForAllValues:` holds on a request without the key: it fixes nothing.)
        let fixed_op = matches!(
            self.op,
            Op::StringEquals
                | Op::StringEqualsIgnoreCase
                | Op::StringLike
                | Op::ArnEquals
                | Op::ArnLike
        ) && self.set != Some(SetOp::AllValues);
        let no_wildcard = self.values.iter().all(|v| !v.contains(['*', '?']));
        let role_pattern = self.key.eq_ignore_ascii_case("aws:userid")
            && self.values.iter().any(|v| v.ends_with(":*"));
        fixed_op
            && no_wildcard
            && !role_pattern
            && FIXING_KEYS
                .iter()
                .any(|k| k.eq_ignore_ascii_case(&self.key))
    }
}

impl Statement {
    /// Whether the statement's actions include one of [`BAD_ACTIONS`].
    fn grants_bad_action(&self) -> bool {
        ACTIONS
            .iter()
            .chain(["s3:RestoreObject"].iter())
            .filter(|a| BAD_ACTIONS.iter().any(|b| wildcard_match(b, a, true)))
            .any(|a| self.actions.matches(a, true))
    }

    fn matches(&self, req: &PolicyRequest<'_>) -> bool {
        let principal = match &self.principal {
            PrincipalSet::Anyone => true,
            PrincipalSet::Some {
                user_names,
                canonical_ids,
                accounts,
                services,
            } => {
                let user = req.principal.is_some_and(|p| {
                    user_names.iter().any(|n| n == p.name)
                        || canonical_ids.iter().any(|c| c == p.canonical_id)
                        || accounts.iter().any(|a| a.eq_ignore_ascii_case(p.account))
                });
                let service = req
                    .service
                    .is_some_and(|s| services.iter().any(|x| x.eq_ignore_ascii_case(s)));
                user || service
            }
        };
        principal
            // Action names are case-insensitive in AWS; ARNs are not.
            && self.actions.matches(req.action, true)
            && self.resources.matches(req.resource, false)
            && self.conditions.iter().all(|c| c.holds(req))
    }
}

fn parse_statement(v: &Value, bucket: &str) -> S3Result<Statement> {
    let Value::Object(s) = v else {
        return Err(malformed("Each statement must be a JSON object"));
    };
    for key in s.keys() {
        match key.as_str() {
            "Sid" | "Effect" | "Principal" | "Action" | "NotAction" | "Resource"
            | "NotResource" | "Condition" => {}
            "NotPrincipal" => return Err(malformed("NotPrincipal is not supported")),
            other => return Err(malformed(format!("Unknown field {other}"))),
        }
    }
    let allow = match s.get("Effect") {
        Some(Value::String(e)) if e == "Allow" => true,
        Some(Value::String(e)) if e == "Deny" => false,
        Some(_) => return Err(malformed("Effect must be \"Allow\" or \"Deny\"")),
        None => return Err(malformed("Missing required field Effect")),
    };
    let principal = parse_principal(
        s.get("Principal")
            .ok_or_else(|| malformed("Missing required field Principal"))?,
    )?;
    let actions = one_of(s, "Action", "NotAction")?;
    for a in &actions.patterns {
        let known = a == "*" || ACTIONS.iter().any(|name| wildcard_match(a, name, true));
        if !known {
            return Err(malformed(format!("Policy has invalid action: {a}")));
        }
    }
    let resources = one_of(s, "Resource", "NotResource")?;
    for r in &resources.patterns {
        check_resource(r, bucket)?;
    }
    let conditions = match s.get("Condition") {
        None => Vec::new(),
        Some(Value::Object(c)) => parse_conditions(c)?,
        Some(_) => return Err(malformed("Condition must be a JSON object")),
    };
    Ok(Statement {
        allow,
        principal,
        actions,
        resources,
        conditions,
    })
}

/// Exactly one of `name` and `not_name`, as a string or a non-empty list of strings.
fn one_of(s: &Map<String, Value>, name: &str, not_name: &str) -> S3Result<Patterns> {
    let (value, negated) = match (s.get(name), s.get(not_name)) {
        (Some(v), None) => (v, false),
        (None, Some(v)) => (v, true),
        (None, None) => return Err(malformed(format!("Missing required field {name}"))),
        (Some(_), Some(_)) => {
            return Err(malformed(format!(
                "A statement cannot have both {name} and {not_name}"
            )));
        }
    };
    let patterns = strings(value).ok_or_else(|| {
        malformed(format!(
            "{name} must be a string or a non-empty list of strings"
        ))
    })?;
    Ok(Patterns { negated, patterns })
}

/// A string, or a non-empty list of strings.
fn strings(v: &Value) -> Option<Vec<String>> {
    match v {
        Value::String(s) => Some(alloc::vec![s.clone()]),
        Value::Array(list) if !list.is_empty() => list
            .iter()
            .map(|x| x.as_str().map(ToOwned::to_owned))
            .collect(),
        _ => None,
    }
}

/// Condition values may also be booleans and numbers (`"Bool": {"aws:SecureTransport": false}`).
fn condition_values(v: &Value) -> Option<Vec<String>> {
    let one = |x: &Value| match x {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(if *b { "true" } else { "false" }.to_owned()),
        Value::Number(n) => Some(format!("{n}")),
        _ => None,
    };
    match v {
        Value::Array(list) if !list.is_empty() => list.iter().map(one).collect(),
        Value::Array(_) => None,
        x => one(x).map(|s| alloc::vec![s]),
    }
}

fn parse_principal(v: &Value) -> S3Result<PrincipalSet> {
    let invalid = || malformed("Invalid principal in policy");
    match v {
        Value::String(s) if s == "*" => Ok(PrincipalSet::Anyone),
        Value::Object(m) if !m.is_empty() => {
            let mut user_names = Vec::new();
            let mut canonical_ids = Vec::new();
            let mut accounts = Vec::new();
            let mut services = Vec::new();
            for (kind, value) in m {
                let list = strings(value).ok_or_else(invalid)?;
                match kind.as_str() {
                    "AWS" => {
                        for p in list {
                            if p == "*" {
                                return Ok(PrincipalSet::Anyone);
                            }
                            match aws_principal(&p) {
                                Some(AwsPrincipal::User(name)) => user_names.push(name),
                                Some(AwsPrincipal::Account(id)) => accounts.push(id),
                                None => {
                                    return Err(malformed(format!(
                                        "Invalid principal in policy: {p} (expected *, an \
                                         account id, arn:aws:iam::ACCOUNT:root or \
                                         arn:aws:iam::ACCOUNT:user/NAME)"
                                    )));
                                }
                            }
                        }
                    }
                    "CanonicalUser" => {
                        for id in list {
                            if !is_canonical_id(&id) {
                                return Err(malformed(format!(
                                    "Invalid principal in policy: canonical id {id}"
                                )));
                            }
                            canonical_ids.push(id.to_ascii_lowercase());
                        }
                    }
                    "Service" => {
                        for name in list {
                            let ok = !name.is_empty()
                                && name.len() <= 128
                                && name
                                    .bytes()
                                    .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-');
                            if !ok {
                                return Err(malformed(format!(
                                    "Invalid principal in policy: service {name}"
                                )));
                            }
                            services.push(name);
                        }
                    }
                    _ => return Err(invalid()),
                }
            }
            Ok(PrincipalSet::Some {
                user_names,
                canonical_ids,
                accounts,
                services,
            })
        }
        _ => Err(invalid()),
    }
}

fn is_canonical_id(id: &str) -> bool {
    id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// An account id: AWS's 12 digits, or a canonical id (64 hex digits; what Ferry's users'
/// accounts are).
fn is_account_id(id: &str) -> bool {
    (id.len() == 12 && id.bytes().all(|b| b.is_ascii_digit())) || is_canonical_id(id)
}

enum AwsPrincipal {
    /// `arn:aws:iam::ACCOUNT:user/NAME` (any account: the name says who).
    User(String),
    /// `arn:aws:iam::ACCOUNT:root` or a bare `ACCOUNT`: whoever's account it is.
    Account(String),
}

fn aws_principal(p: &str) -> Option<AwsPrincipal> {
    if is_account_id(p) {
        return Some(AwsPrincipal::Account(p.to_ascii_lowercase()));
    }
    let rest = p.strip_prefix("arn:aws:iam::")?;
    let (account, resource) = rest.split_once(':')?;
    if resource == "root" {
        return is_account_id(account).then(|| AwsPrincipal::Account(account.to_ascii_lowercase()));
    }
    let name = resource.strip_prefix("user/")?;
    // A path before the name (`user/division/NAME`) is allowed: the name is the last part.
    let name = name.rsplit('/').next()?;
    (!name.is_empty()).then(|| AwsPrincipal::User(name.to_owned()))
}

/// A resource must be `arn:aws:s3:::BUCKET` or `arn:aws:s3:::BUCKET/...` of this bucket (a
/// wildcard may stand for the bucket name only if it matches it).
fn check_resource(r: &str, bucket: &str) -> S3Result<()> {
    let invalid = || malformed(format!("Policy has invalid resource: {r}"));
    let rest = r.strip_prefix("arn:aws:s3:::").ok_or_else(invalid)?;
    let name = rest.split('/').next().unwrap_or_default();
    if name.is_empty() || !wildcard_match(name, bucket, false) {
        return Err(invalid());
    }
    Ok(())
}

fn parse_conditions(c: &Map<String, Value>) -> S3Result<Vec<Condition>> {
    let mut out = Vec::new();
    for (op_name, block) in c {
        let (set, rest) = if let Some(r) = op_name.strip_prefix("ForAnyValue:") {
            (Some(SetOp::AnyValue), r)
        } else if let Some(r) = op_name.strip_prefix("ForAllValues:") {
            (Some(SetOp::AllValues), r)
        } else {
            (None, op_name.as_str())
        };
        let (base, if_exists) = match rest.strip_suffix("IfExists") {
            Some(b) => (b, true),
            None => (rest, false),
        };
        let (op, negated) = match base {
            "StringEquals" => (Op::StringEquals, false),
            "StringNotEquals" => (Op::StringEquals, true),
            "StringEqualsIgnoreCase" => (Op::StringEqualsIgnoreCase, false),
            "StringNotEqualsIgnoreCase" => (Op::StringEqualsIgnoreCase, true),
            "StringLike" => (Op::StringLike, false),
            "StringNotLike" => (Op::StringLike, true),
            "IpAddress" => (Op::IpAddress, false),
            "NotIpAddress" => (Op::IpAddress, true),
            "Bool" => (Op::Bool, false),
            "NumericEquals" => (Op::NumericEquals, false),
            "NumericNotEquals" => (Op::NumericEquals, true),
            "NumericLessThan" => (Op::NumericLessThan, false),
            "NumericLessThanEquals" => (Op::NumericLessThanEquals, false),
            "NumericGreaterThan" => (Op::NumericGreaterThan, false),
            "NumericGreaterThanEquals" => (Op::NumericGreaterThanEquals, false),
            "DateEquals" => (Op::DateEquals, false),
            "DateNotEquals" => (Op::DateEquals, true),
            "DateLessThan" => (Op::DateLessThan, false),
            "DateLessThanEquals" => (Op::DateLessThanEquals, false),
            "DateGreaterThan" => (Op::DateGreaterThan, false),
            "DateGreaterThanEquals" => (Op::DateGreaterThanEquals, false),
            "ArnEquals" => (Op::ArnEquals, false),
            "ArnNotEquals" => (Op::ArnEquals, true),
            "ArnLike" => (Op::ArnLike, false),
            "ArnNotLike" => (Op::ArnLike, true),
            // `Null` tests presence: neither a set nor "if it exists" means anything to it.
            "Null" if !if_exists && set.is_none() => (Op::Null, false),
            _ => {
                return Err(malformed(format!(
                    "Policy has an invalid condition operator: {op_name}"
                )));
            }
        };
        let Value::Object(block) = block else {
            return Err(malformed(format!(
                "{op_name} must map condition keys to values"
            )));
        };
        for (key, values) in block {
            let known = CONDITION_KEYS.iter().any(|k| {
                if k.ends_with('/') {
                    key.len() > k.len() && starts_with_ignore_case(key, k)
                } else {
                    key.eq_ignore_ascii_case(k)
                }
            });
            if !known {
                return Err(malformed(format!(
                    "Policy has an invalid condition key: {key}"
                )));
            }
            let values = condition_values(values)
                .ok_or_else(|| malformed(format!("Invalid value for condition key {key}")))?;
            for v in &values {
                check_value(op, key, v)?;
            }
            out.push(Condition {
                op,
                negated,
                if_exists,
                set,
                key: key.clone(),
                values,
            });
        }
    }
    Ok(out)
}

fn starts_with_ignore_case(s: &str, prefix: &str) -> bool {
    s.len() >= prefix.len() && s.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

fn check_value(op: Op, key: &str, v: &str) -> S3Result<()> {
    let ok = match op {
        Op::IpAddress => parse_cidr(v).is_some(),
        Op::Bool | Op::Null => v == "true" || v == "false",
        Op::NumericEquals
        | Op::NumericLessThan
        | Op::NumericLessThanEquals
        | Op::NumericGreaterThan
        | Op::NumericGreaterThanEquals => v.parse::<f64>().is_ok(),
        Op::DateEquals
        | Op::DateLessThan
        | Op::DateLessThanEquals
        | Op::DateGreaterThan
        | Op::DateGreaterThanEquals => parse_date(v).is_some(),
        Op::ArnEquals | Op::ArnLike => v == "*" || arn_parts(v).is_some(),
        Op::StringEquals | Op::StringEqualsIgnoreCase | Op::StringLike => true,
    };
    if ok {
        Ok(())
    } else {
        Err(malformed(format!(
            "Invalid value {v} for condition key {key}"
        )))
    }
}

/// A policy's date: ISO 8601 (`2026-01-31T12:00:00Z`, with or without fractions, or a day
/// `2026-01-31`, its midnight UTC) or Unix seconds; as Unix milliseconds.
pub fn parse_date(v: &str) -> Option<i64> {
    let v = v.trim();
    if !v.is_empty() && v.len() <= 12 && v.bytes().all(|b| b.is_ascii_digit()) {
        return v.parse::<i64>().ok()?.checked_mul(1000);
    }
    let b = v.as_bytes();
    let dt = if b.len() == 10 {
        crate::time::DateTime::parse_iso8601(&format!("{v}T00:00:00Z"))?
    } else {
        crate::time::DateTime::parse_iso8601(v)?
    };
    let millis = match b.get(19) {
        Some(b'.') => {
            let frac = &v[20..v.len() - 1];
            let mut ms = 0i64;
            for (i, d) in frac.bytes().take(3).enumerate() {
                ms += i64::from(d - b'0') * [100, 10, 1][i];
            }
            ms
        }
        _ => 0,
    };
    dt.to_unix().checked_mul(1000)?.checked_add(millis)
}

/// An ARN's six parts (`arn:partition:service:region:account:resource`).
fn arn_parts(v: &str) -> Option<Vec<&str>> {
    let parts: Vec<&str> = v.splitn(6, ':').collect();
    (parts.len() == 6 && parts[0] == "arn").then_some(parts)
}

impl Condition {
    fn holds(&self, req: &PolicyRequest<'_>) -> bool {
        let present = req.values(&self.key);
        if self.op == Op::Null {
            // `"Null": {"key": "true"}` holds when the key is absent.
            let want_absent = self.values.iter().any(|v| v == "true");
            return present.is_empty() == want_absent;
        }
        // One of the request's values passes: it matches one of the policy's (a negated
        // operator: it matches none of them).
        let passes =
            |have: &&str| self.values.iter().any(|want| self.test(have, want)) != self.negated;
        match self.set {
            // AWS: ForAllValues holds for a key absent from the request (an empty set);
            // ForAnyValue does not, unless `...IfExists`.
            Some(SetOp::AllValues) => present.iter().all(passes),
            Some(SetOp::AnyValue) if present.is_empty() => self.if_exists,
            Some(SetOp::AnyValue) => present.iter().any(passes),
            None if present.is_empty() => {
                // Absent: `...IfExists` holds, a negated operator holds, a positive one does
                // not.
                self.if_exists || self.negated
            }
            None => {
                let any = present
                    .iter()
                    .any(|have| self.values.iter().any(|want| self.test(have, want)));
                any != self.negated
            }
        }
    }

    fn test(&self, have: &str, want: &str) -> bool {
        match self.op {
            Op::StringEquals => have == want,
            Op::StringEqualsIgnoreCase => have.eq_ignore_ascii_case(want),
            Op::StringLike => wildcard_match(want, have, false),
            Op::IpAddress => match (have.parse::<IpAddr>(), parse_cidr(want)) {
                (Ok(ip), Some((net, bits))) => in_network(ip, net, bits),
                _ => false,
            },
            Op::Bool => have.eq_ignore_ascii_case(want),
            Op::NumericEquals
            | Op::NumericLessThan
            | Op::NumericLessThanEquals
            | Op::NumericGreaterThan
            | Op::NumericGreaterThanEquals => {
                let (Ok(h), Ok(w)) = (have.parse::<f64>(), want.parse::<f64>()) else {
                    return false;
                };
                match self.op {
                    Op::NumericEquals => h == w,
                    Op::NumericLessThan => h < w,
                    Op::NumericLessThanEquals => h <= w,
                    Op::NumericGreaterThan => h > w,
                    _ => h >= w,
                }
            }
            Op::DateEquals
            | Op::DateLessThan
            | Op::DateLessThanEquals
            | Op::DateGreaterThan
            | Op::DateGreaterThanEquals => {
                let (Some(h), Some(w)) = (parse_date(have), parse_date(want)) else {
                    return false;
                };
                match self.op {
                    Op::DateEquals => h == w,
                    Op::DateLessThan => h < w,
                    Op::DateLessThanEquals => h <= w,
                    Op::DateGreaterThan => h > w,
                    _ => h >= w,
                }
            }
            // ARNs compare part by part (a wildcard stays within its part), case-sensitively;
            // `ArnEquals` takes wildcards as `ArnLike` does (AWS: the two are one).
            Op::ArnEquals | Op::ArnLike => {
                if want == "*" {
                    return true;
                }
                let (Some(h), Some(w)) = (arn_parts(have), arn_parts(want)) else {
                    return false;
                };
                h.iter().zip(&w).all(|(h, w)| wildcard_match(w, h, false))
            }
            Op::Null => false,
        }
    }
}

/// `a.b.c.d/n`, `a.b.c.d`, or IPv6 likewise.
fn parse_cidr(s: &str) -> Option<(IpAddr, u8)> {
    let (addr, bits) = match s.split_once('/') {
        Some((a, b)) => (a, Some(b.parse::<u8>().ok()?)),
        None => (s, None),
    };
    let ip: IpAddr = addr.parse().ok()?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let bits = bits.unwrap_or(max);
    (bits <= max).then_some((ip, bits))
}

fn in_network(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    let to_v6 = |a: IpAddr| match a {
        IpAddr::V4(v4) => (u128::from(v4.to_ipv6_mapped()), 96),
        IpAddr::V6(v6) => (u128::from(v6), 0),
    };
    let (ip, _) = to_v6(match ip {
        // An IPv4-mapped client address is its IPv4 address.
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    });
    let (net, offset) = to_v6(net);
    let bits = u32::from(bits) + offset;
    if bits == 0 {
        return true;
    }
    let mask = u128::MAX << (128 - bits.min(128));
    ip & mask == net & mask
}

/// `pattern` with `*` (any run) and `?` (any one character) against `value`.
pub fn wildcard_match(pattern: &str, value: &str, ignore_case: bool) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let v: Vec<char> = value.chars().collect();
    let eq = |a: char, b: char| {
        if ignore_case {
            a.eq_ignore_ascii_case(&b)
        } else {
            a == b
        }
    };
    // Iterative matching with one backtrack point: linear in practice, never exponential.
    let (mut pi, mut vi) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while vi < v.len() {
        if pi < p.len() && (p[pi] == '?' || (p[pi] != '*' && eq(p[pi], v[vi]))) {
            pi += 1;
            vi += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, vi));
            pi += 1;
        } else if let Some((sp, sv)) = star {
            pi = sp + 1;
            vi = sv + 1;
            star = Some((sp, sv + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALICE: Principal<'static> = Principal {
        name: "alice",
        canonical_id: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        account: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    };
    const BOB: Principal<'static> = Principal {
        name: "bob",
        canonical_id: "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
        account: "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
    };

    fn req<'a>(
        principal: Option<Principal<'a>>,
        action: &'a str,
        resource: &'a str,
        context: &'a [(&'a str, &'a str)],
    ) -> PolicyRequest<'a> {
        PolicyRequest {
            principal,
            service: None,
            action,
            resource,
            context,
        }
    }

    fn policy(json: &str) -> Policy {
        Policy::parse(json.as_bytes(), "docs").unwrap_or_else(|e| panic!("{json}: {e:?}"))
    }

    fn refused(json: &str) -> String {
        let e = Policy::parse(json.as_bytes(), "docs").unwrap_err();
        assert_eq!(e.code, S3ErrorCode::MalformedPolicy, "{json}");
        e.message.into_owned()
    }

    #[test]
    fn wildcards() {
        assert!(wildcard_match("s3:Get*", "s3:GetObject", false));
        assert!(wildcard_match("s3:*Object", "s3:PutObject", false));
        assert!(wildcard_match("a?c", "abc", false));
        assert!(!wildcard_match("a?c", "ac", false));
        assert!(wildcard_match("*", "", false));
        assert!(wildcard_match("a*b*c", "axxbyyc", false));
        assert!(!wildcard_match("a*b*c", "axxbyy", false));
        assert!(wildcard_match("S3:getobject", "s3:GetObject", true));
        assert!(!wildcard_match("S3:getobject", "s3:GetObject", false));
        assert!(wildcard_match(
            "arn:aws:s3:::docs/*",
            "arn:aws:s3:::docs/a/b",
            false
        ));
    }

    /// "Public" as AWS defines it: an Allow of a bad action to anyone, unless a condition fixes
    /// who (a CIDR set, a fixed value of one of the keys AWS lists).
    #[test]
    fn public_is_what_aws_calls_public() {
        let with = |principal: &str, action: &str, condition: &str| {
            let condition = if condition.is_empty() {
                String::new()
            } else {
                format!(r#","Condition":{condition}"#)
            };
            policy(&format!(
                r#"{{"Statement":[{{"Effect":"Allow","Principal":{principal},
                "Action":"{action}","Resource":"arn:aws:s3:::docs/*"{condition}}}]}}"#
            ))
        };
        let anyone = r#""*""#;
        assert!(with(anyone, "s3:GetObject", "").is_public());
        assert!(with(r#"{"AWS":"*"}"#, "s3:*", "").is_public());
        assert!(with(anyone, "s3:Put*", "").is_public());
        // A fixed principal is not public, whatever it may do.
        let alice = r#"{"AWS":"arn:aws:iam::123456789012:user/alice"}"#;
        assert!(!with(alice, "s3:*", "").is_public());
        // Only "bad actions" make a statement for anyone public.
        assert!(!with(anyone, "s3:BypassGovernanceRetention", "").is_public());
        // A set of CIDRs fixes who; everything (/0), a negation or IfExists does not.
        let ip = |op: &str, cidr: &str| format!(r#"{{"{op}":{{"aws:SourceIp":"{cidr}"}}}}"#);
        assert!(!with(anyone, "s3:GetObject", &ip("IpAddress", "10.0.0.0/8")).is_public());
        assert!(with(anyone, "s3:GetObject", &ip("IpAddress", "0.0.0.0/0")).is_public());
        assert!(with(anyone, "s3:GetObject", &ip("NotIpAddress", "10.0.0.0/8")).is_public());
        assert!(
            with(
                anyone,
                "s3:GetObject",
                &ip("IpAddressIfExists", "10.0.0.0/8")
            )
            .is_public()
        );
        // Conditions that narrow nothing about who asks leave it public.
        for condition in [
            r#"{"StringEquals":{"aws:username":"alice"}}"#,
            r#"{"Bool":{"aws:SecureTransport":"true"}}"#,
            r#"{"StringLike":{"s3:prefix":"home/"}}"#,
        ] {
            assert!(
                with(anyone, "s3:GetObject", condition).is_public(),
                "{condition}"
            );
        }
        // A Deny never makes a bucket public.
        let deny = policy(
            r#"{"Statement":[{"Effect":"Deny","Principal":"*","Action":"s3:*",
            "Resource":"arn:aws:s3:::docs/*"}]}"#,
        );
        assert!(!deny.is_public());
        // The fixing keys, by name (the keys themselves are parsed as CONDITION_KEYS allows).
        let fixed = |key: &str, op: Op, value: &str| Condition {
            op,
            negated: false,
            if_exists: false,
            set: None,
            key: key.into(),
            values: alloc::vec![value.into()],
        };
        assert!(fixed("aws:SourceArn", Op::StringEquals, "arn:aws:s3:::src").fixes_who());
        assert!(fixed("aws:SourceArn", Op::ArnEquals, "arn:aws:s3:::src").fixes_who());
        assert!(fixed("aws:SourceArn", Op::ArnLike, "arn:aws:s3:::src").fixes_who());
        assert!(!fixed("aws:SourceArn", Op::ArnLike, "arn:aws:s3:::*").fixes_who());
        assert!(fixed("aws:SourceAccount", Op::StringEquals, "123456789012").fixes_who());
        assert!(!fixed("aws:SourceArn", Op::StringLike, "arn:aws:s3:::*").fixes_who());
        assert!(!fixed("aws:userid", Op::StringEquals, "AROLEID:*").fixes_who());
        assert!(!fixed("aws:username", Op::StringEquals, "alice").fixes_who());
    }

    #[test]
    fn public_read_allows_anyone_to_get_and_nothing_else() {
        let p = policy(
            r#"{"Version":"2012-10-17","Statement":[{"Sid":"PublicRead","Effect":"Allow",
            "Principal":"*","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::docs/*"]}]}"#,
        );
        let get = req(None, "s3:GetObject", "arn:aws:s3:::docs/a.txt", &[]);
        assert_eq!(p.evaluate(&get), Decision::Allow);
        let put = req(None, "s3:PutObject", "arn:aws:s3:::docs/a.txt", &[]);
        assert_eq!(p.evaluate(&put), Decision::Default);
        let list = req(Some(BOB), "s3:ListBucket", "arn:aws:s3:::docs", &[]);
        assert_eq!(p.evaluate(&list), Decision::Default);
        assert!(p.is_public());
    }

    #[test]
    fn deny_wins_and_principals_name_users() {
        let p = policy(
            r#"{"Statement":[
              {"Effect":"Allow","Principal":{"AWS":["arn:aws:iam::123456789012:user/bob"]},
               "Action":"s3:*","Resource":["arn:aws:s3:::docs","arn:aws:s3:::docs/*"]},
              {"Effect":"Deny","Principal":"*","Action":"s3:DeleteObject",
               "Resource":"arn:aws:s3:::docs/keep/*"}]}"#,
        );
        let del =
            |p: Principal<'static>, key: &'static str| req(Some(p), "s3:DeleteObject", key, &[]);
        assert_eq!(
            p.evaluate(&del(BOB, "arn:aws:s3:::docs/tmp/x")),
            Decision::Allow
        );
        assert_eq!(
            p.evaluate(&del(BOB, "arn:aws:s3:::docs/keep/x")),
            Decision::Deny
        );
        assert_eq!(
            p.evaluate(&del(ALICE, "arn:aws:s3:::docs/keep/x")),
            Decision::Deny
        );
        assert_eq!(
            p.evaluate(&del(ALICE, "arn:aws:s3:::docs/tmp/x")),
            Decision::Default
        );
        assert_eq!(
            p.evaluate(&req(None, "s3:GetObject", "arn:aws:s3:::docs/a", &[])),
            Decision::Default
        );
        assert!(!p.is_public());
        let by_id = policy(&format!(
            r#"{{"Statement":{{"Effect":"Allow","Principal":{{"CanonicalUser":"{}"}},
            "Action":"s3:GetObject","Resource":"arn:aws:s3:::docs/*"}}}}"#,
            ALICE.canonical_id
        ));
        let get = |p| req(Some(p), "s3:GetObject", "arn:aws:s3:::docs/a", &[]);
        assert_eq!(by_id.evaluate(&get(ALICE)), Decision::Allow);
        assert_eq!(by_id.evaluate(&get(BOB)), Decision::Default);
    }

    #[test]
    fn not_action_and_not_resource() {
        let p = policy(
            r#"{"Statement":[{"Effect":"Deny","Principal":"*","NotAction":"s3:Get*",
            "NotResource":"arn:aws:s3:::docs/public/*"}]}"#,
        );
        let r = |a: &'static str, k: &'static str| req(Some(BOB), a, k, &[]);
        assert_eq!(
            p.evaluate(&r("s3:PutObject", "arn:aws:s3:::docs/x")),
            Decision::Deny
        );
        assert_eq!(
            p.evaluate(&r("s3:GetObject", "arn:aws:s3:::docs/x")),
            Decision::Default
        );
        assert_eq!(
            p.evaluate(&r("s3:PutObject", "arn:aws:s3:::docs/public/x")),
            Decision::Default
        );
    }

    #[test]
    fn conditions() {
        let p = policy(
            r#"{"Statement":[
              {"Effect":"Allow","Principal":"*","Action":"s3:ListBucket","Resource":"arn:aws:s3:::docs",
               "Condition":{"StringLike":{"s3:prefix":["home/*","public/*"]},
                            "NumericLessThanEquals":{"s3:max-keys":"100"}}},
              {"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::docs/*",
               "Condition":{"Bool":{"aws:SecureTransport":false}}},
              {"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::docs/*",
               "Condition":{"IpAddress":{"aws:SourceIp":["10.0.0.0/8","2001:db8::/32"]},
                            "StringEquals":{"s3:ExistingObjectTag/class":"public"}}},
              {"Effect":"Allow","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::docs/*",
               "Condition":{"StringEquals":{"s3:x-amz-acl":"bucket-owner-full-control"},
                            "NotIpAddress":{"aws:SourceIp":"10.9.0.0/16"}}}]}"#,
        );
        let list = |ctx: &[(&str, &str)]| {
            p.evaluate(&req(None, "s3:ListBucket", "arn:aws:s3:::docs", ctx))
        };
        assert_eq!(
            list(&[("s3:prefix", "home/x"), ("s3:max-keys", "50")]),
            Decision::Allow
        );
        assert_eq!(
            list(&[("s3:prefix", "home/x"), ("s3:max-keys", "500")]),
            Decision::Default
        );
        assert_eq!(
            list(&[("s3:prefix", "private/"), ("s3:max-keys", "50")]),
            Decision::Default
        );
        assert_eq!(list(&[("s3:max-keys", "50")]), Decision::Default);

        let get = |ctx: &[(&str, &str)]| {
            p.evaluate(&req(None, "s3:GetObject", "arn:aws:s3:::docs/a", ctx))
        };
        let tls = ("aws:SecureTransport", "true");
        let plain = ("aws:SecureTransport", "false");
        let public = ("s3:ExistingObjectTag/class", "public");
        assert_eq!(
            get(&[tls, ("aws:SourceIp", "10.1.2.3"), public]),
            Decision::Allow
        );
        assert_eq!(
            get(&[tls, ("aws:SourceIp", "2001:db8::7"), public]),
            Decision::Allow
        );
        assert_eq!(
            get(&[tls, ("aws:SourceIp", "11.1.2.3"), public]),
            Decision::Default
        );
        assert_eq!(
            get(&[
                tls,
                ("aws:SourceIp", "10.1.2.3"),
                ("s3:ExistingObjectTag/class", "x")
            ]),
            Decision::Default
        );
        assert_eq!(
            get(&[plain, ("aws:SourceIp", "10.1.2.3"), public]),
            Decision::Deny
        );

        let put = |ctx: &[(&str, &str)]| {
            p.evaluate(&req(Some(BOB), "s3:PutObject", "arn:aws:s3:::docs/a", ctx))
        };
        let acl = ("s3:x-amz-acl", "bucket-owner-full-control");
        assert_eq!(
            put(&[tls, acl, ("aws:SourceIp", "127.0.0.1")]),
            Decision::Allow
        );
        assert_eq!(
            put(&[tls, acl, ("aws:SourceIp", "10.9.1.1")]),
            Decision::Default
        );
        assert_eq!(
            put(&[tls, ("aws:SourceIp", "127.0.0.1")]),
            Decision::Default
        );
        // An IPv4 client seen through an IPv6 socket is its IPv4 address.
        assert_eq!(
            put(&[tls, acl, ("aws:SourceIp", "::ffff:10.9.1.1")]),
            Decision::Default
        );
    }

    #[test]
    fn absent_keys_and_if_exists() {
        let p = policy(
            r#"{"Statement":[{"Effect":"Deny","Principal":"*","Action":"s3:PutObject",
            "Resource":"arn:aws:s3:::docs/*",
            "Condition":{"StringNotEqualsIfExists":{"s3:x-amz-acl":"private"}}},
            {"Effect":"Deny","Principal":"*","Action":"s3:GetObject",
            "Resource":"arn:aws:s3:::docs/*","Condition":{"Null":{"aws:UserAgent":"true"}}}]}"#,
        );
        let put = |ctx: &[(&str, &str)]| {
            p.evaluate(&req(Some(BOB), "s3:PutObject", "arn:aws:s3:::docs/a", ctx))
        };
        // `...IfExists` holds when the key is absent (AWS: "evaluate the condition as true").
        assert_eq!(put(&[]), Decision::Deny);
        assert_eq!(put(&[("s3:x-amz-acl", "private")]), Decision::Default);
        assert_eq!(put(&[("s3:x-amz-acl", "public-read")]), Decision::Deny);
        let get = |ctx: &[(&str, &str)]| {
            p.evaluate(&req(Some(BOB), "s3:GetObject", "arn:aws:s3:::docs/a", ctx))
        };
        assert_eq!(get(&[]), Decision::Deny);
        assert_eq!(get(&[("aws:UserAgent", "curl")]), Decision::Default);
    }

    /// AWS's "deny unencrypted uploads" policies: a write without
    /// `x-amz-server-side-encryption` (the key absent), or with another algorithm, is denied.
    #[test]
    fn encryption_header_conditions() {
        let p = policy(
            r#"{"Statement":[{"Effect":"Deny","Principal":"*","Action":"s3:PutObject",
            "Resource":"arn:aws:s3:::docs/*",
            "Condition":{"Null":{"s3:x-amz-server-side-encryption":"true"}}},
            {"Effect":"Deny","Principal":"*","Action":"s3:PutObject",
            "Resource":"arn:aws:s3:::docs/*",
            "Condition":{"StringNotEqualsIfExists":{"s3:x-amz-server-side-encryption":"AES256"}}}]}"#,
        );
        let put = |ctx: &[(&str, &str)]| {
            p.evaluate(&req(Some(BOB), "s3:PutObject", "arn:aws:s3:::docs/a", ctx))
        };
        assert_eq!(put(&[]), Decision::Deny);
        assert_eq!(
            put(&[("s3:x-amz-server-side-encryption", "aws:kms")]),
            Decision::Deny
        );
        assert_eq!(
            put(&[("s3:x-amz-server-side-encryption", "AES256")]),
            Decision::Default
        );
    }

    #[test]
    fn malformed_policies_say_what_is_wrong() {
        let ok_statement = r#""Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::docs/*""#;
        assert!(refused("not json").contains("invalid JSON"));
        assert!(refused("[]").contains("JSON object"));
        assert!(refused(r#"{"Version":"2012-10-17"}"#).contains("Statement"));
        assert!(refused(r#"{"Version":"2020-01-01","Statement":[]}"#).contains("Version"));
        let with = |s: &str| format!(r#"{{"Statement":[{{{s}}}]}}"#);
        assert!(refused(&with(&ok_statement.replace("Allow", "Permit"))).contains("Effect"));
        assert!(
            refused(&with(
                r#""Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::docs/*""#
            ))
            .contains("Principal")
        );
        assert!(
            refused(&with(&ok_statement.replace("s3:GetObject", "s3:Fly")))
                .contains("invalid action")
        );
        assert!(
            refused(&with(
                &ok_statement.replace("arn:aws:s3:::docs/*", "arn:aws:s3:::other/*")
            ))
            .contains("invalid resource")
        );
        assert!(
            refused(&with(
                &ok_statement.replace("arn:aws:s3:::docs/*", "docs/*")
            ))
            .contains("invalid resource")
        );
        assert!(
            refused(&with(&format!(
                r#"{ok_statement},"NotAction":"s3:PutObject""#
            )))
            .contains("both")
        );
        assert!(
            refused(&with(&format!(
                r#"{ok_statement},"Condition":{{"StringFoo":{{"s3:prefix":"a"}}}}"#
            )))
            .contains("operator")
        );
        assert!(
            refused(&with(&format!(
                r#"{ok_statement},"Condition":{{"StringEquals":{{"s3:colour":"a"}}}}"#
            )))
            .contains("condition key")
        );
        assert!(
            refused(&with(&format!(
                r#"{ok_statement},"Condition":{{"IpAddress":{{"aws:SourceIp":"10.0.0.0/40"}}}}"#
            )))
            .contains("Invalid value")
        );
        assert!(
            refused(&with(&ok_statement.replace("\"*\"", r#"{"AWS":"bob"}"#)))
                .contains("principal")
        );
        assert!(
            refused(&with(&ok_statement.replace("Principal", "NotPrincipal")))
                .contains("NotPrincipal")
        );
        let big = format!(
            r#"{{"Statement":[{{{ok_statement},"Sid":"{}"}}]}}"#,
            "x".repeat(MAX_POLICY_LEN)
        );
        assert!(refused(&big).contains("bytes or less"));
        // A wildcard bucket that covers this one is fine.
        policy(&with(
            &ok_statement.replace("arn:aws:s3:::docs/*", "arn:aws:s3:::do*"),
        ));
    }

    /// AWS's documented example policies (`core/tests/fixtures/policies`, bucket
    /// `amzn-s3-demo-bucket`): each parses and allows or denies what AWS says it does.
    mod aws_examples {
        use super::*;

        const BUCKET: &str = "amzn-s3-demo-bucket";
        const OBJECT: &str = "arn:aws:s3:::amzn-s3-demo-bucket/doc.txt";
        const DAVE: Principal<'static> = Principal {
            name: "Dave",
            canonical_id: "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd",
            account: "111122223333",
        };
        const JOHN: Principal<'static> = Principal {
            name: "JohnDoe",
            canonical_id: "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee",
            account: "444455556666",
        };

        macro_rules! fixture {
            ($name:literal) => {
                Policy::parse(
                    include_bytes!(concat!("../../tests/fixtures/policies/", $name, ".json")),
                    BUCKET,
                )
                .unwrap_or_else(|e| panic!("{}: {e:?}", $name))
            };
        }

        fn put(p: &Policy, who: Option<Principal<'_>>, ctx: &[(&str, &str)]) -> Decision {
            p.evaluate(&req(who, "s3:PutObject", OBJECT, ctx))
        }

        #[test]
        fn encryption() {
            let p = fixture!("require-sse-kms");
            assert_eq!(put(&p, Some(BOB), &[]), Decision::Deny);
            let kms = ("s3:x-amz-server-side-encryption-aws-kms-key-id", "alias/k");
            assert_eq!(put(&p, Some(BOB), &[kms]), Decision::Default);

            let p = fixture!("require-sse-kms-key");
            let key = "arn:aws:kms:us-east-2:111122223333:key/01234567-89ab-cdef-0123-456789abcdef";
            let k = "s3:x-amz-server-side-encryption-aws-kms-key-id";
            assert_eq!(put(&p, Some(BOB), &[(k, key)]), Decision::Default);
            assert_eq!(
                put(
                    &p,
                    Some(BOB),
                    &[(k, "arn:aws:kms:us-east-2:111122223333:key/other")]
                ),
                Decision::Deny
            );
            // ...IfExists holds when the key is absent (AWS: "evaluate the condition element
            // as true"); a key id that is not an ARN is never equal.
            assert_eq!(put(&p, Some(BOB), &[]), Decision::Deny);
            assert_eq!(put(&p, Some(BOB), &[(k, "alias/k")]), Decision::Deny);

            let p = fixture!("deny-unencrypted-uploads");
            let sse = "s3:x-amz-server-side-encryption";
            assert_eq!(put(&p, Some(BOB), &[]), Decision::Deny);
            assert_eq!(put(&p, Some(BOB), &[(sse, "aws:kms")]), Decision::Deny);
            assert_eq!(put(&p, Some(BOB), &[(sse, "AES256")]), Decision::Default);

            let p = fixture!("deny-sse-c");
            let c = "s3:x-amz-server-side-encryption-customer-algorithm";
            assert_eq!(put(&p, Some(BOB), &[(c, "AES256")]), Decision::Deny);
            assert_eq!(put(&p, Some(BOB), &[(sse, "AES256")]), Decision::Default);
        }

        #[test]
        fn copy_source_and_metadata_directive() {
            let p = fixture!("copy-source-prefix");
            let src = "s3:x-amz-copy-source";
            let ok = (src, "amzn-s3-demo-source-bucket/public/a.txt");
            assert_eq!(put(&p, Some(DAVE), &[ok]), Decision::Allow);
            let private = (src, "amzn-s3-demo-source-bucket/private/a.txt");
            assert_eq!(put(&p, Some(DAVE), &[private]), Decision::Deny);
            // Not a copy: Dave may only copy (as AWS's example says: the key is absent, so
            // StringNotLike holds).
            assert_eq!(put(&p, Some(DAVE), &[]), Decision::Deny);
            assert_eq!(put(&p, Some(BOB), &[private]), Decision::Default);

            let p = fixture!("metadata-directive");
            let d = "s3:x-amz-metadata-directive";
            assert_eq!(put(&p, Some(BOB), &[(d, "REPLACE")]), Decision::Deny);
            assert_eq!(put(&p, Some(BOB), &[(d, "COPY")]), Decision::Default);
            assert_eq!(put(&p, Some(BOB), &[]), Decision::Default);
        }

        #[test]
        fn grants_and_acl() {
            let p = fixture!("grant-full-control");
            let g = "s3:x-amz-grant-full-control";
            let id = "id=79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be";
            assert_eq!(put(&p, Some(DAVE), &[(g, id)]), Decision::Allow);
            assert_eq!(put(&p, Some(DAVE), &[(g, "id=00")]), Decision::Deny);
            assert_eq!(put(&p, Some(DAVE), &[]), Decision::Deny);
            assert_eq!(put(&p, None, &[(g, id)]), Decision::Default);

            // An account's root: every user of that account, no one else.
            let p = fixture!("bucket-owner-full-control");
            let acl = ("s3:x-amz-acl", "bucket-owner-full-control");
            assert_eq!(put(&p, Some(DAVE), &[acl]), Decision::Allow);
            assert_eq!(
                put(&p, Some(DAVE), &[("s3:x-amz-acl", "private")]),
                Decision::Default
            );
            assert_eq!(put(&p, Some(JOHN), &[acl]), Decision::Default);
            assert_eq!(put(&p, None, &[acl]), Decision::Default);

            // A bare account id is the account's root.
            let p = fixture!("storage-class");
            let sc = "s3:x-amz-storage-class";
            assert_eq!(put(&p, Some(DAVE), &[(sc, "STANDARD_IA")]), Decision::Allow);
            assert_eq!(put(&p, Some(DAVE), &[(sc, "STANDARD")]), Decision::Default);
            assert_eq!(put(&p, Some(DAVE), &[]), Decision::Default);
            assert_eq!(
                put(&p, Some(JOHN), &[(sc, "STANDARD_IA")]),
                Decision::Default
            );
        }

        #[test]
        fn request_tags() {
            let k = "s3:RequestObjectTagKeys";
            let p = fixture!("tag-keys-allowed");
            assert_eq!(put(&p, Some(JOHN), &[(k, "Owner")]), Decision::Allow);
            assert_eq!(
                put(&p, Some(JOHN), &[(k, "Owner"), (k, "CreationDate")]),
                Decision::Allow
            );
            assert_eq!(
                put(&p, Some(JOHN), &[(k, "Owner"), (k, "Secret")]),
                Decision::Default
            );
            // ForAllValues over no values holds (AWS: an empty set).
            assert_eq!(put(&p, Some(JOHN), &[]), Decision::Allow);
            let tagging = |ctx: &[(&str, &str)]| {
                p.evaluate(&req(Some(JOHN), "s3:PutObjectTagging", OBJECT, ctx))
            };
            assert_eq!(tagging(&[(k, "Secret")]), Decision::Default);

            let p = fixture!("tag-key-required");
            let project = |v| [(k, "Project"), ("s3:RequestObjectTag/Project", v)];
            assert_eq!(put(&p, None, &project("X")), Decision::Allow);
            assert_eq!(put(&p, None, &project("Y")), Decision::Default);
            assert_eq!(put(&p, None, &[(k, "Owner")]), Decision::Deny);
            assert_eq!(put(&p, None, &[]), Decision::Deny);
            let mut two = project("X").to_vec();
            two.push((k, "Owner"));
            assert_eq!(put(&p, None, &two), Decision::Allow);
        }

        #[test]
        fn transport_signature_and_time() {
            let get = |p: &Policy, ctx: &[(&str, &str)]| {
                p.evaluate(&req(Some(BOB), "s3:GetObject", OBJECT, ctx))
            };
            let p = fixture!("tls-version");
            assert_eq!(get(&p, &[("s3:TlsVersion", "1.3")]), Decision::Default);
            assert_eq!(get(&p, &[("s3:TlsVersion", "1.2")]), Decision::Default);
            assert_eq!(get(&p, &[("s3:TlsVersion", "1.1")]), Decision::Deny);
            // Plain HTTP has no TLS version: a positive operator does not hold.
            assert_eq!(get(&p, &[]), Decision::Default);
            let list = req(
                Some(BOB),
                "s3:ListBucket",
                "arn:aws:s3:::amzn-s3-demo-bucket",
                &[("s3:TlsVersion", "1.0")],
            );
            assert_eq!(p.evaluate(&list), Decision::Deny);

            let p = fixture!("https-only");
            assert_eq!(get(&p, &[("aws:SecureTransport", "false")]), Decision::Deny);
            assert_eq!(
                get(&p, &[("aws:SecureTransport", "true")]),
                Decision::Default
            );

            let p = fixture!("signature-age");
            assert_eq!(get(&p, &[("s3:signatureAge", "599999")]), Decision::Default);
            assert_eq!(get(&p, &[("s3:signatureAge", "600001")]), Decision::Deny);
            assert_eq!(get(&p, &[]), Decision::Default);

            let p = fixture!("current-time");
            let at = |t| [("aws:CurrentTime", t)];
            assert_eq!(get(&p, &at("2020-05-01T12:00:00Z")), Decision::Allow);
            assert_eq!(get(&p, &at("2020-05-01T12:00:00.250Z")), Decision::Allow);
            assert_eq!(get(&p, &at("2020-03-31T23:59:59Z")), Decision::Default);
            assert_eq!(get(&p, &at("2020-07-01T00:00:00Z")), Decision::Default);

            let p = fixture!("mfa-required");
            let tax = "arn:aws:s3:::amzn-s3-demo-bucket/taxdocuments/2020.pdf";
            assert_eq!(
                p.evaluate(&req(Some(BOB), "s3:GetObject", tax, &[])),
                Decision::Deny
            );
            assert_eq!(get(&p, &[]), Decision::Default);
        }

        #[test]
        fn object_lock() {
            let p = fixture!("object-lock-retention-limit");
            let r = |ctx: &[(&str, &str)]| {
                p.evaluate(&req(Some(BOB), "s3:PutObjectRetention", OBJECT, ctx))
            };
            let mode = ("s3:object-lock-mode", "GOVERNANCE");
            let days = |d| [mode, ("s3:object-lock-remaining-retention-days", d)];
            assert_eq!(r(&days("5")), Decision::Default);
            assert_eq!(r(&days("11")), Decision::Deny);
            let compliance = [
                ("s3:object-lock-mode", "COMPLIANCE"),
                ("s3:object-lock-remaining-retention-days", "1"),
            ];
            assert_eq!(r(&compliance), Decision::Deny);
        }

        /// Server access logs: the logging service, for the named source bucket and account
        /// only; no user, however named, is the service.
        #[test]
        fn logging_delivery() {
            let p = fixture!("server-access-logging");
            let target = "arn:aws:s3:::amzn-s3-demo-bucket/EXAMPLE-LOGGING-PREFIX2026-01-01";
            let source = ("aws:SourceArn", "arn:aws:s3:::amzn-s3-demo-source-bucket");
            let account = ("aws:SourceAccount", "111122223333");
            let deliver = |service: Option<&str>, who, ctx: &[(&str, &str)]| {
                p.evaluate(&PolicyRequest {
                    principal: who,
                    service,
                    action: "s3:PutObject",
                    resource: target,
                    context: ctx,
                })
            };
            let logging = Some(LOGGING_SERVICE);
            assert_eq!(deliver(logging, None, &[source, account]), Decision::Allow);
            assert_eq!(
                deliver(
                    logging,
                    None,
                    &[source, ("aws:SourceAccount", "444455556666")]
                ),
                Decision::Default
            );
            assert_eq!(
                deliver(
                    logging,
                    None,
                    &[("aws:SourceArn", "arn:aws:s3:::other"), account]
                ),
                Decision::Default
            );
            assert_eq!(deliver(logging, None, &[account]), Decision::Default);
            assert_eq!(
                deliver(Some("cloudtrail.amazonaws.com"), None, &[source, account]),
                Decision::Default
            );
            // A client, with every fact a client could send, is not the service.
            assert_eq!(
                deliver(None, Some(DAVE), &[source, account]),
                Decision::Default
            );
            assert_eq!(deliver(None, None, &[source, account]), Decision::Default);
            let elsewhere = PolicyRequest {
                principal: None,
                service: logging,
                action: "s3:PutObject",
                resource: OBJECT,
                context: &[source, account],
            };
            assert_eq!(p.evaluate(&elsewhere), Decision::Default);
        }
    }

    #[test]
    fn set_operators() {
        let p = policy(
            r#"{"Statement":[
              {"Effect":"Allow","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::docs/*",
               "Condition":{"ForAnyValue:StringLike":{"s3:RequestObjectTagKeys":["team-*"]}}},
              {"Effect":"Deny","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::docs/*",
               "Condition":{"ForAnyValue:StringEquals":{"s3:RequestObjectTagKeys":["secret"]}}}]}"#,
        );
        let k = "s3:RequestObjectTagKeys";
        let put = |ctx: &[(&str, &str)]| {
            p.evaluate(&req(Some(BOB), "s3:PutObject", "arn:aws:s3:::docs/a", ctx))
        };
        assert_eq!(put(&[(k, "x"), (k, "team-a")]), Decision::Allow);
        assert_eq!(put(&[(k, "x")]), Decision::Default);
        // ForAnyValue over no values fails.
        assert_eq!(put(&[]), Decision::Default);
        assert_eq!(put(&[(k, "team-a"), (k, "secret")]), Decision::Deny);
        let p = policy(
            r#"{"Statement":[{"Effect":"Deny","Principal":"*","Action":"s3:PutObject",
            "Resource":"arn:aws:s3:::docs/*",
            "Condition":{"ForAnyValue:StringNotLikeIfExists":{"s3:RequestObjectTagKeys":["a*"]}}}]}"#,
        );
        let put = |ctx: &[(&str, &str)]| {
            p.evaluate(&req(Some(BOB), "s3:PutObject", "arn:aws:s3:::docs/a", ctx))
        };
        assert_eq!(put(&[]), Decision::Deny);
        assert_eq!(put(&[(k, "ab"), (k, "ac")]), Decision::Default);
        assert_eq!(put(&[(k, "ab"), (k, "b")]), Decision::Deny);
        assert!(refused(&format!(
            r#"{{"Statement":{{"Effect":"Deny","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::docs/*","Condition":{{"ForAnyValue:Null":{{"{k}":"true"}}}}}}}}"#
        )).contains("operator"));
    }

    #[test]
    fn dates_and_epoch_time() {
        assert_eq!(parse_date("1970-01-02"), Some(86_400_000));
        assert_eq!(parse_date("86400"), Some(86_400_000));
        assert_eq!(parse_date("1970-01-01T00:00:01.5Z"), Some(1_500));
        assert_eq!(parse_date("1970-01-01T00:00:01+01:00"), None);
        assert_eq!(parse_date("soon"), None);
        let p = policy(
            r#"{"Statement":[{"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::docs/*",
            "Condition":{"DateGreaterThanEquals":{"aws:EpochTime":"2030-01-01"}}},
            {"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::docs/*",
            "Condition":{"NumericLessThan":{"aws:EpochTime":946684800}}}]}"#,
        );
        let get = |t| {
            p.evaluate(&req(
                Some(BOB),
                "s3:GetObject",
                "arn:aws:s3:::docs/a",
                &[("aws:EpochTime", t)],
            ))
        };
        assert_eq!(get("1893456000"), Decision::Deny);
        assert_eq!(get("1893455999"), Decision::Default);
        assert_eq!(get("946684799"), Decision::Deny);
        let bad = r#"{"Statement":{"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::docs/*","Condition":{"DateLessThan":{"aws:CurrentTime":"tomorrow"}}}}"#;
        assert!(refused(bad).contains("Invalid value"));
    }

    #[test]
    fn principals_by_account_and_service() {
        let p = policy(&format!(
            r#"{{"Statement":[{{"Effect":"Allow","Principal":{{"AWS":["arn:aws:iam::{}:root"]}},
            "Action":"s3:GetObject","Resource":"arn:aws:s3:::docs/*"}},
            {{"Effect":"Allow","Principal":{{"Service":["logging.s3.amazonaws.com"]}},
            "Action":"s3:PutObject","Resource":"arn:aws:s3:::docs/logs/*"}}]}}"#,
            ALICE.account.to_ascii_uppercase()
        ));
        let get = |who| p.evaluate(&req(who, "s3:GetObject", "arn:aws:s3:::docs/a", &[]));
        assert_eq!(get(Some(ALICE)), Decision::Allow);
        assert_eq!(get(Some(BOB)), Decision::Default);
        assert_eq!(get(None), Decision::Default);
        let log = |service, who| {
            p.evaluate(&PolicyRequest {
                principal: who,
                service,
                action: "s3:PutObject",
                resource: "arn:aws:s3:::docs/logs/x",
                context: &[],
            })
        };
        assert_eq!(log(Some(LOGGING_SERVICE), None), Decision::Allow);
        assert_eq!(log(None, Some(ALICE)), Decision::Default);
        assert_eq!(log(None, None), Decision::Default);
        assert!(!p.is_public());
        for bad in [
            r#"{"AWS":"arn:aws:iam::12345:root"}"#,
            r#"{"AWS":"arn:aws:iam::123456789012:group/x"}"#,
            r#"{"Service":"logging s3"}"#,
            r#"{"Federated":"cognito-identity.amazonaws.com"}"#,
        ] {
            let doc = format!(
                r#"{{"Statement":{{"Effect":"Allow","Principal":{bad},"Action":"s3:GetObject","Resource":"arn:aws:s3:::docs/*"}}}}"#
            );
            assert!(refused(&doc).contains("principal"), "{bad}");
        }
    }

    #[test]
    fn arn_operators_compare_part_by_part() {
        let p = policy(
            r#"{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::docs/*",
            "Condition":{"ArnLike":{"aws:SourceArn":"arn:aws:s3:::src-*"}}}]}"#,
        );
        let put = |arn| {
            p.evaluate(&req(
                None,
                "s3:PutObject",
                "arn:aws:s3:::docs/a",
                &[("aws:SourceArn", arn)],
            ))
        };
        assert_eq!(put("arn:aws:s3:::src-1"), Decision::Allow);
        assert_eq!(put("arn:aws:s3:::other"), Decision::Default);
        assert_eq!(put("arn:aws:s3:us-east-1::src-1"), Decision::Default);
        assert_eq!(put("not an arn"), Decision::Default);
    }
}
