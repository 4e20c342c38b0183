//! Lifecycle: a bucket's `<LifecycleConfiguration>` (PutBucketLifecycleConfiguration,
//! GetBucketLifecycleConfiguration), checked as S3 checks it, and the evaluation of its rules
//! against an object or an upload, sans-IO: time comes in as Unix seconds, and the length of a
//! lifecycle "day" too (86,400 s, or less as a testing aid).
//!
//! What is checked and how it is refused follows S3: what the schema wants (a rule without a
//! `Status`, without a `Filter` or a `Prefix` or with both, a filter with two conditions
//! outside `And`, an `And` with fewer than two, an action without its field, `Days` and
//! `Date` together, no rule, more than 1,000) is `MalformedXML`; a bad value (`Days` not
//! positive, a `Date` not at midnight UTC, an ID over 255 characters) is `InvalidArgument`;
//! what S3 refuses beyond (two rules with one ID, a rule with no action, a prefix over 1,024
//! bytes, a tag too long or twice, AbortIncompleteMultipartUpload with a tag or size filter)
//! is `InvalidRequest`. Transitions (storage classes) are `NotImplemented`.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt::Write as _;

use super::parse::{Doc, El, malformed_because};
use super::write::XmlWriter;
use crate::s3::{S3Error, S3ErrorCode, S3Result};
use crate::time::DateTime;

/// Largest PutBucketLifecycleConfiguration body accepted (1,000 rules of about 500 bytes).
pub const MAX_LIFECYCLE_BODY: usize = 512 << 10;
/// Most rules in one configuration (S3's limit, not adjustable there either).
pub const MAX_LIFECYCLE_RULES: usize = 1000;
/// Longest rule `ID` (S3's limit).
pub const MAX_LIFECYCLE_RULE_ID: usize = 255;
/// Longest prefix in a filter, in bytes (a key's longest).
pub const MAX_LIFECYCLE_PREFIX: usize = 1024;
/// Longest tag key in a filter, in characters.
const MAX_TAG_KEY: usize = 128;
/// Longest tag value in a filter, in characters.
const MAX_TAG_VALUE: usize = 256;
/// Most `NewerNoncurrentVersions` (S3's limit).
pub const MAX_NEWER_NONCURRENT_VERSIONS: u32 = 100;
/// Elements in a body of the largest size: an empty element takes at least four bytes.
const MAX_LIFECYCLE_ELEMENTS: usize = MAX_LIFECYCLE_BODY / 4;
/// A real lifecycle day, in seconds.
pub const DAY_SECS: u64 = 86_400;

/// Which objects a rule applies to, in the form it was given (so that Get answers what Put
/// sent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LifecycleFilter {
    /// The legacy form: a `<Prefix>` directly in the rule.
    LegacyPrefix(String),
    /// `<Filter/>`: every object.
    Empty,
    /// `<Filter><Prefix>`.
    Prefix(String),
    /// `<Filter><Tag>`.
    Tag(String, String),
    /// `<Filter><ObjectSizeGreaterThan>`.
    SizeGreaterThan(u64),
    /// `<Filter><ObjectSizeLessThan>`.
    SizeLessThan(u64),
    /// `<Filter><And>`: every condition given.
    And {
        /// `Prefix`.
        prefix: Option<String>,
        /// `Tag`s, each of which the object must carry.
        tags: Vec<(String, String)>,
        /// `ObjectSizeGreaterThan`.
        greater_than: Option<u64>,
        /// `ObjectSizeLessThan`.
        less_than: Option<u64>,
    },
}

impl LifecycleFilter {
    /// The key prefix objects must start with (empty: any).
    pub fn prefix(&self) -> &str {
        match self {
            Self::LegacyPrefix(p) | Self::Prefix(p) => p,
            Self::And {
                prefix: Some(p), ..
            } => p,
            _ => "",
        }
    }

    /// Whether the filter names tags (an object's tags must then be read to match it).
    pub fn has_tags(&self) -> bool {
        match self {
            Self::Tag(..) => true,
            Self::And { tags, .. } => !tags.is_empty(),
            _ => false,
        }
    }

    /// Whether the filter has a size condition.
    pub fn has_size(&self) -> bool {
        match self {
            Self::SizeGreaterThan(_) | Self::SizeLessThan(_) => true,
            Self::And {
                greater_than,
                less_than,
                ..
            } => greater_than.is_some() || less_than.is_some(),
            _ => false,
        }
    }

    /// Whether an object of `key`, `size` bytes and `tags` matches.
    pub fn matches(&self, key: &str, size: u64, tags: &[(String, String)]) -> bool {
        let has = |k: &str, v: &str| tags.iter().any(|(tk, tv)| tk == k && tv == v);
        match self {
            Self::LegacyPrefix(p) | Self::Prefix(p) => key.starts_with(p.as_str()),
            Self::Empty => true,
            Self::Tag(k, v) => has(k, v),
            Self::SizeGreaterThan(n) => size > *n,
            Self::SizeLessThan(n) => size < *n,
            Self::And {
                prefix,
                tags: wanted,
                greater_than,
                less_than,
            } => {
                prefix.as_deref().is_none_or(|p| key.starts_with(p))
                    && wanted.iter().all(|(k, v)| has(k, v))
                    && greater_than.is_none_or(|n| size > n)
                    && less_than.is_none_or(|n| size < n)
            }
        }
    }
}

/// `<Expiration>`: exactly one of its three fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiration {
    /// `Days` after the object's creation (rounded up to the next midnight UTC).
    Days(u32),
    /// `Date`, at midnight UTC (Unix seconds).
    Date(i64),
    /// `ExpiredObjectDeleteMarker`: remove a delete marker with no versions behind it
    /// (versioned buckets only).
    ExpiredObjectDeleteMarker(bool),
}

/// `<NoncurrentVersionExpiration>` (versioned buckets only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoncurrentVersionExpiration {
    /// `NoncurrentDays`: days after a version became noncurrent.
    pub noncurrent_days: u32,
    /// `NewerNoncurrentVersions`: keep this many newer noncurrent versions.
    pub newer_noncurrent_versions: Option<u32>,
}

/// One `<Rule>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LifecycleRule {
    /// `ID` (up to 255 characters; unique in the configuration).
    pub id: Option<String>,
    /// `Status`: `Enabled` (`true`) or `Disabled`.
    pub enabled: bool,
    /// `Filter` or the legacy `Prefix`.
    pub filter: LifecycleFilter,
    /// `Expiration`.
    pub expiration: Option<Expiration>,
    /// `NoncurrentVersionExpiration`.
    pub noncurrent_version_expiration: Option<NoncurrentVersionExpiration>,
    /// `AbortIncompleteMultipartUpload`'s `DaysAfterInitiation`.
    pub abort_incomplete_days: Option<u32>,
}

/// A bucket's `<LifecycleConfiguration>`: 1 to [`MAX_LIFECYCLE_RULES`] rules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LifecycleConfiguration {
    /// The rules, in the order given.
    pub rules: Vec<LifecycleRule>,
}

fn invalid_argument(message: String) -> S3Error {
    S3Error::with_message(S3ErrorCode::InvalidArgument, message)
}

fn invalid_request(message: String) -> S3Error {
    S3Error::with_message(S3ErrorCode::InvalidRequest, message)
}

/// A positive number of days (`InvalidArgument` otherwise; not a number at all, or one past
/// 32 bits, is `MalformedXML`, as the schema's integer).
fn positive_days(el: El<'_, '_>, name: &str, what: &str) -> S3Result<Option<u32>> {
    let Some(n) = el.num::<i64>(name)? else {
        return Ok(None);
    };
    if n <= 0 {
        return Err(invalid_argument(format!(
            "'{name}' for {what} action must be a positive integer"
        )));
    }
    u32::try_from(n)
        .ok()
        .filter(|n| i32::try_from(*n).is_ok())
        .map(Some)
        .ok_or_else(|| malformed_because("A number of days is out of range"))
}

fn size(el: El<'_, '_>, name: &str) -> S3Result<Option<u64>> {
    let Some(n) = el.num::<i64>(name)? else {
        return Ok(None);
    };
    u64::try_from(n)
        .map(Some)
        .map_err(|_| invalid_argument(format!("'{name}' must be a non-negative integer")))
}

fn check_prefix(p: &str) -> S3Result<()> {
    if p.len() > MAX_LIFECYCLE_PREFIX {
        return Err(invalid_request(String::from(
            "The maximum size of a prefix is 1024.",
        )));
    }
    Ok(())
}

fn tag_of(el: El<'_, '_>) -> S3Result<(String, String)> {
    let key = el
        .opt("Key")
        .ok_or_else(|| malformed_because("A Tag must have a Key"))?;
    let value = el.opt("Value").unwrap_or_default();
    if key.is_empty() || key.chars().count() > MAX_TAG_KEY {
        return Err(invalid_request(String::from(
            "The TagKey you have provided is invalid",
        )));
    }
    if value.chars().count() > MAX_TAG_VALUE {
        return Err(invalid_request(String::from(
            "The TagValue you have provided is invalid",
        )));
    }
    Ok((key.into_owned(), value.into_owned()))
}

fn filter_of(f: El<'_, '_>) -> S3Result<LifecycleFilter> {
    const CONDITIONS: [&str; 5] = [
        "Prefix",
        "Tag",
        "ObjectSizeGreaterThan",
        "ObjectSizeLessThan",
        "And",
    ];
    let given = CONDITIONS.iter().map(|c| f.all(c).count()).sum::<usize>();
    if given > 1 {
        return Err(malformed_because(
            "A Filter can have only one of Prefix, Tag, ObjectSizeGreaterThan, \
             ObjectSizeLessThan or And",
        ));
    }
    if let Some(p) = f.opt("Prefix") {
        check_prefix(&p)?;
        return Ok(LifecycleFilter::Prefix(p.into_owned()));
    }
    if let Some(t) = f.child("Tag") {
        let (k, v) = tag_of(t)?;
        return Ok(LifecycleFilter::Tag(k, v));
    }
    if let Some(n) = size(f, "ObjectSizeGreaterThan")? {
        return Ok(LifecycleFilter::SizeGreaterThan(n));
    }
    if let Some(n) = size(f, "ObjectSizeLessThan")? {
        return Ok(LifecycleFilter::SizeLessThan(n));
    }
    let Some(and) = f.child("And") else {
        return Ok(LifecycleFilter::Empty);
    };
    let prefix = and.opt("Prefix").map(|p| p.into_owned());
    if let Some(p) = &prefix {
        check_prefix(p)?;
    }
    let mut tags: Vec<(String, String)> = Vec::new();
    for t in and.all("Tag") {
        let tag = tag_of(t)?;
        if tags.iter().any(|(k, _)| *k == tag.0) {
            return Err(invalid_request(String::from(
                "Duplicate Tag Keys are not allowed.",
            )));
        }
        tags.push(tag);
    }
    let greater_than = size(and, "ObjectSizeGreaterThan")?;
    let less_than = size(and, "ObjectSizeLessThan")?;
    let conditions = usize::from(prefix.is_some())
        + tags.len()
        + usize::from(greater_than.is_some())
        + usize::from(less_than.is_some());
    if conditions < 2 {
        return Err(malformed_because(
            "An And filter must have at least two conditions",
        ));
    }
    if let (Some(gt), Some(lt)) = (greater_than, less_than)
        && gt >= lt
    {
        return Err(invalid_argument(format!(
            "ObjectSizeGreaterThan ({gt}) must be less than ObjectSizeLessThan ({lt})"
        )));
    }
    Ok(LifecycleFilter::And {
        prefix,
        tags,
        greater_than,
        less_than,
    })
}

fn expiration_of(e: El<'_, '_>) -> S3Result<Expiration> {
    let days = positive_days(e, "Days", "Expiration")?;
    let date = e
        .opt("Date")
        .map(|d| {
            DateTime::parse_iso8601(d.trim())
                .ok_or_else(|| invalid_argument(String::from("Invalid 'Date' in Expiration")))
        })
        .transpose()?;
    let marker = e.flag("ExpiredObjectDeleteMarker")?;
    match (days, date, marker) {
        (Some(_), Some(_), _) => Err(malformed_because(
            "Expiration can have only one of Days or Date",
        )),
        (Some(_), None, Some(_)) | (None, Some(_), Some(_)) => Err(invalid_argument(String::from(
            "ExpiredObjectDeleteMarker cannot be specified with Days or Date in a \
                 Lifecycle Expiration Policy",
        ))),
        (Some(d), None, None) => Ok(Expiration::Days(d)),
        (None, Some(d), None) => {
            if (d.hour, d.minute, d.second) != (0, 0, 0) {
                return Err(invalid_argument(String::from(
                    "'Date' must be at midnight GMT",
                )));
            }
            Ok(Expiration::Date(d.to_unix()))
        }
        (None, None, Some(m)) => Ok(Expiration::ExpiredObjectDeleteMarker(m)),
        (None, None, None) => Err(malformed_because(
            "Expiration must have one of Days, Date or ExpiredObjectDeleteMarker",
        )),
    }
}

fn noncurrent_of(e: El<'_, '_>) -> S3Result<NoncurrentVersionExpiration> {
    let noncurrent_days = positive_days(e, "NoncurrentDays", "NoncurrentVersionExpiration")?
        .ok_or_else(|| malformed_because("NoncurrentVersionExpiration must have NoncurrentDays"))?;
    let newer = e.num::<i64>("NewerNoncurrentVersions")?;
    let newer_noncurrent_versions = newer
        .map(|n| {
            u32::try_from(n)
                .ok()
                .filter(|n| (1..=MAX_NEWER_NONCURRENT_VERSIONS).contains(n))
                .ok_or_else(|| {
                    invalid_argument(String::from(
                        "'NewerNoncurrentVersions' must be between 1 and 100",
                    ))
                })
        })
        .transpose()?;
    Ok(NoncurrentVersionExpiration {
        noncurrent_days,
        newer_noncurrent_versions,
    })
}

fn rule_of(r: El<'_, '_>) -> S3Result<LifecycleRule> {
    if r.child("Transition").is_some()
        || r.child("Transitions").is_some()
        || r.child("NoncurrentVersionTransition").is_some()
        || r.child("NoncurrentVersionTransitions").is_some()
    {
        return Err(S3Error::with_message(
            S3ErrorCode::NotImplemented,
            "Lifecycle transitions to other storage classes are not implemented",
        ));
    }
    // An empty ID is no ID: one is given (see `LifecycleConfiguration::parse_xml`).
    let id = r
        .opt("ID")
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty());
    if id
        .as_ref()
        .is_some_and(|id| id.chars().count() > MAX_LIFECYCLE_RULE_ID)
    {
        return Err(invalid_argument(String::from(
            "ID length should not exceed allowed limit of 255",
        )));
    }
    let enabled = match r.opt("Status").as_deref().map(str::trim) {
        Some("Enabled") => true,
        Some("Disabled") => false,
        _ => {
            return Err(malformed_because(
                "A rule's Status must be Enabled or Disabled",
            ));
        }
    };
    let filter = match (r.opt("Prefix"), r.child("Filter")) {
        (Some(_), Some(_)) => {
            return Err(malformed_because(
                "A rule can have a Filter or a Prefix, not both",
            ));
        }
        (None, None) => {
            return Err(malformed_because("A rule must have a Filter or a Prefix"));
        }
        (Some(p), None) => {
            check_prefix(&p)?;
            LifecycleFilter::LegacyPrefix(p.into_owned())
        }
        (None, Some(f)) => filter_of(f)?,
    };
    let expiration = r.child("Expiration").map(expiration_of).transpose()?;
    let noncurrent_version_expiration = r
        .child("NoncurrentVersionExpiration")
        .map(noncurrent_of)
        .transpose()?;
    let abort_incomplete_days =
        r.child("AbortIncompleteMultipartUpload")
            .map(|a| {
                positive_days(a, "DaysAfterInitiation", "AbortIncompleteMultipartUpload")?
                    .ok_or_else(|| {
                        malformed_because(
                            "AbortIncompleteMultipartUpload must have DaysAfterInitiation",
                        )
                    })
            })
            .transpose()?;
    if expiration.is_none()
        && noncurrent_version_expiration.is_none()
        && abort_incomplete_days.is_none()
    {
        return Err(invalid_request(String::from(
            "At least one action needs to be specified in a rule",
        )));
    }
    if abort_incomplete_days.is_some() && (filter.has_tags() || filter.has_size()) {
        return Err(invalid_request(String::from(
            "AbortIncompleteMultipartUpload cannot be specified with Tags or object size \
             filters.",
        )));
    }
    if matches!(expiration, Some(Expiration::ExpiredObjectDeleteMarker(_))) && filter.has_tags() {
        return Err(invalid_request(String::from(
            "ExpiredObjectDeleteMarker cannot be specified with Tags.",
        )));
    }
    Ok(LifecycleRule {
        id,
        enabled,
        filter,
        expiration,
        noncurrent_version_expiration,
        abort_incomplete_days,
    })
}

/// When an object last modified at `last_modified` expires under `Days`: that many lifecycle
/// days later, rounded up to the next day boundary (midnight UTC for real days), as S3 counts.
pub fn expiry_after_days(last_modified: i64, days: u32, day_secs: u64) -> i64 {
    let day = i64::try_from(day_secs.max(1)).unwrap_or(i64::MAX);
    let later = last_modified.saturating_add(day.saturating_mul(i64::from(days) + 1));
    later - later.rem_euclid(day)
}

/// The `x-amz-expiration` value: `expiry-date="<HTTP date>", rule-id="<id>"`.
pub fn expiration_header(expiry: i64, rule_id: &str) -> String {
    let id = rule_id.replace('\\', "\\\\").replace('"', "\\\"");
    format!(
        "expiry-date=\"{}\", rule-id=\"{id}\"",
        DateTime::from_unix(expiry).http()
    )
}

impl LifecycleRule {
    /// When this rule expires a current object of `key`, `size` bytes, `tags`, last modified
    /// at `last_modified` (Unix seconds); `None` if it does not (disabled, another filter, no
    /// current-object expiration).
    pub fn expiry(
        &self,
        key: &str,
        size: u64,
        tags: &[(String, String)],
        last_modified: i64,
        day_secs: u64,
    ) -> Option<i64> {
        if !self.enabled || !self.filter.matches(key, size, tags) {
            return None;
        }
        match self.expiration? {
            Expiration::Days(d) => Some(expiry_after_days(last_modified, d, day_secs)),
            Expiration::Date(t) => Some(t),
            Expiration::ExpiredObjectDeleteMarker(_) => None,
        }
    }

    /// The rule's ID for `x-amz-expiration` (empty when it has none).
    pub fn id(&self) -> &str {
        self.id.as_deref().unwrap_or_default()
    }
}

impl LifecycleConfiguration {
    /// Parse and check a PutBucketLifecycleConfiguration body (at most
    /// [`MAX_LIFECYCLE_BODY`] bytes); see the module's documentation for what is refused how.
    pub fn parse_xml(body: &[u8]) -> S3Result<Self> {
        let doc = Doc::parse(body, MAX_LIFECYCLE_BODY, MAX_LIFECYCLE_ELEMENTS)?;
        let root = doc.root("LifecycleConfiguration")?;
        let mut rules: Vec<LifecycleRule> = Vec::new();
        for r in root.all("Rule") {
            if rules.len() >= MAX_LIFECYCLE_RULES {
                return Err(malformed_because(
                    "A lifecycle configuration can have at most 1000 rules",
                ));
            }
            let rule = rule_of(r)?;
            if let Some(id) = &rule.id
                && rules.iter().any(|o| o.id.as_ref() == Some(id))
            {
                return Err(invalid_request(String::from(
                    "Rule ID must be unique. Found same ID for more than one rule",
                )));
            }
            rules.push(rule);
        }
        if rules.is_empty() {
            return Err(malformed_because(
                "A lifecycle configuration must have at least one Rule",
            ));
        }
        // A rule without an ID gets one, as S3 gives: derived from the rule and its place, so
        // that every node given the same document (the proxy's fan-out) gives the same.
        for (i, rule) in rules.iter_mut().enumerate() {
            if rule.id.is_some() {
                continue;
            }
            let mut doc = Vec::new();
            let mut w = XmlWriter::document(&mut doc, "Rule", false);
            write_rule_fields(&mut w, rule);
            w.close("Rule");
            doc.extend_from_slice(&(i as u64).to_be_bytes());
            let mut id = String::with_capacity(32);
            for b in crate::md5::md5(&doc) {
                let _ = write!(id, "{b:02x}");
            }
            rule.id = Some(id);
        }
        Ok(Self { rules })
    }

    /// The earliest expiry of a current object under the enabled rules, and the rule that
    /// sets it (what `x-amz-expiration` says and when the worker removes the object).
    pub fn expiry(
        &self,
        key: &str,
        size: u64,
        tags: &[(String, String)],
        last_modified: i64,
        day_secs: u64,
    ) -> Option<(i64, &LifecycleRule)> {
        self.rules
            .iter()
            .filter_map(|r| {
                r.expiry(key, size, tags, last_modified, day_secs)
                    .map(|t| (t, r))
            })
            .min_by_key(|(t, _)| *t)
    }

    /// Whether an enabled rule with a current-object expiration needs the objects' tags.
    pub fn expiration_needs_tags(&self) -> bool {
        self.rules
            .iter()
            .any(|r| r.enabled && r.expiration.is_some() && r.filter.has_tags())
    }

    /// Whether an enabled rule expires current objects (by `Days` or `Date`).
    pub fn expires_objects(&self) -> bool {
        self.rules.iter().any(|r| {
            r.enabled
                && matches!(
                    r.expiration,
                    Some(Expiration::Days(_) | Expiration::Date(_))
                )
        })
    }

    /// The fewest lifecycle days after which an enabled rule aborts an incomplete upload of
    /// `key`.
    pub fn abort_after(&self, key: &str) -> Option<u32> {
        self.rules
            .iter()
            .filter(|r| r.enabled && key.starts_with(r.filter.prefix()))
            .filter_map(|r| r.abort_incomplete_days)
            .min()
    }

    /// Whether an enabled rule aborts incomplete uploads.
    pub fn aborts_uploads(&self) -> bool {
        self.rules
            .iter()
            .any(|r| r.enabled && r.abort_incomplete_days.is_some())
    }

    /// Whether an enabled rule's NoncurrentVersionExpiration removes, at `now`, a noncurrent
    /// version of `key` (`size` bytes, `tags`) that became noncurrent at `since` (when the next
    /// newer version or delete marker of its key was written) and has `newer` noncurrent
    /// versions newer than it: `NoncurrentDays` days after `since` (rounded up to the next day
    /// boundary, as S3 counts), unless it is one of the `NewerNoncurrentVersions` newest.
    #[allow(clippy::too_many_arguments)] // The version's facts, each a plain value.
    pub fn noncurrent_expired(
        &self,
        key: &str,
        size: u64,
        tags: &[(String, String)],
        since: i64,
        newer: u32,
        now: i64,
        day_secs: u64,
    ) -> bool {
        self.rules.iter().any(|r| {
            r.enabled
                && r.noncurrent_version_expiration.is_some_and(|n| {
                    newer >= n.newer_noncurrent_versions.unwrap_or(0)
                        && expiry_after_days(since, n.noncurrent_days, day_secs) <= now
                })
                && r.filter.matches(key, size, tags)
        })
    }

    /// Whether an enabled rule removes, at `now`, an expired object delete marker of `key`
    /// (the current version of its key, and its only one) written at `last_modified`:
    /// `ExpiredObjectDeleteMarker`, or, as on S3, an `Expiration` by `Days` or `Date` whose
    /// time has come for the marker. A marker has no tags and no size.
    pub fn removes_delete_marker(
        &self,
        key: &str,
        last_modified: i64,
        now: i64,
        day_secs: u64,
    ) -> bool {
        self.rules.iter().any(|r| match r.expiration {
            Some(Expiration::ExpiredObjectDeleteMarker(on)) => {
                on && r.enabled && r.filter.matches(key, 0, &[])
            }
            Some(_) => r
                .expiry(key, 0, &[], last_modified, day_secs)
                .is_some_and(|at| at <= now),
            None => false,
        })
    }

    /// Whether an enabled rule acts on versions kept besides the current objects: a
    /// NoncurrentVersionExpiration, or an Expiration (which removes expired object delete
    /// markers).
    pub fn expires_versions(&self) -> bool {
        self.rules.iter().any(|r| {
            r.enabled
                && (r.noncurrent_version_expiration.is_some()
                    || matches!(
                        r.expiration,
                        Some(
                            Expiration::Days(_)
                                | Expiration::Date(_)
                                | Expiration::ExpiredObjectDeleteMarker(true)
                        )
                    ))
        })
    }

    /// Whether an enabled NoncurrentVersionExpiration rule needs the versions' tags.
    pub fn noncurrent_needs_tags(&self) -> bool {
        self.rules
            .iter()
            .any(|r| r.enabled && r.noncurrent_version_expiration.is_some() && r.filter.has_tags())
    }

    /// The most `NewerNoncurrentVersions` of an enabled rule (0 if none): how far the newer
    /// noncurrent versions of a version need counting.
    pub fn newer_noncurrent_needed(&self) -> u32 {
        self.rules
            .iter()
            .filter(|r| r.enabled)
            .filter_map(|r| r.noncurrent_version_expiration?.newer_noncurrent_versions)
            .max()
            .unwrap_or(0)
    }

    /// The GetBucketLifecycleConfiguration document.
    pub fn write_xml(&self, out: &mut Vec<u8>) {
        let mut w = XmlWriter::document(out, "LifecycleConfiguration", true);
        for r in &self.rules {
            w.open("Rule");
            write_rule_fields(&mut w, r);
            w.close("Rule");
        }
        w.close("LifecycleConfiguration");
    }
}

/// A rule's elements, in the order S3 writes them.
fn write_rule_fields(w: &mut XmlWriter<'_>, r: &LifecycleRule) {
    if let Some(e) = r.expiration {
        w.open("Expiration");
        match e {
            Expiration::Days(d) => w.elem("Days", d),
            Expiration::Date(t) => w.elem("Date", DateTime::from_unix(t).iso8601()),
            Expiration::ExpiredObjectDeleteMarker(m) => {
                w.elem("ExpiredObjectDeleteMarker", m);
            }
        }
        w.close("Expiration");
    }
    w.opt("ID", r.id.as_deref());
    write_filter(w, &r.filter);
    w.elem("Status", if r.enabled { "Enabled" } else { "Disabled" });
    if let Some(n) = r.noncurrent_version_expiration {
        w.open("NoncurrentVersionExpiration");
        w.elem("NoncurrentDays", n.noncurrent_days);
        if let Some(v) = n.newer_noncurrent_versions {
            w.elem("NewerNoncurrentVersions", v);
        }
        w.close("NoncurrentVersionExpiration");
    }
    if let Some(d) = r.abort_incomplete_days {
        w.open("AbortIncompleteMultipartUpload");
        w.elem("DaysAfterInitiation", d);
        w.close("AbortIncompleteMultipartUpload");
    }
}

fn write_tag(w: &mut XmlWriter<'_>, k: &str, v: &str) {
    w.open("Tag");
    w.elem("Key", k);
    w.elem("Value", v);
    w.close("Tag");
}

fn write_filter(w: &mut XmlWriter<'_>, f: &LifecycleFilter) {
    if let LifecycleFilter::LegacyPrefix(p) = f {
        w.elem("Prefix", p);
        return;
    }
    w.open("Filter");
    match f {
        LifecycleFilter::LegacyPrefix(_) | LifecycleFilter::Empty => {}
        LifecycleFilter::Prefix(p) => w.elem("Prefix", p),
        LifecycleFilter::Tag(k, v) => write_tag(w, k, v),
        LifecycleFilter::SizeGreaterThan(n) => w.elem("ObjectSizeGreaterThan", n),
        LifecycleFilter::SizeLessThan(n) => w.elem("ObjectSizeLessThan", n),
        LifecycleFilter::And {
            prefix,
            tags,
            greater_than,
            less_than,
        } => {
            w.open("And");
            w.opt("Prefix", prefix.as_deref());
            for (k, v) in tags {
                write_tag(w, k, v);
            }
            if let Some(n) = greater_than {
                w.elem("ObjectSizeGreaterThan", n);
            }
            if let Some(n) = less_than {
                w.elem("ObjectSizeLessThan", n);
            }
            w.close("And");
        }
    }
    w.close("Filter");
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    /// AWS's example (the user guide's "Lifecycle configuration elements"), without its
    /// transition.
    const AWS_EXAMPLE: &[u8] = br#"<LifecycleConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Rule>
    <ID>example-id</ID>
    <Filter>
       <And>
          <Prefix>logs/</Prefix>
          <Tag><Key>key1</Key><Value>value1</Value></Tag>
          <ObjectSizeGreaterThan>500</ObjectSizeGreaterThan>
       </And>
    </Filter>
    <Status>Enabled</Status>
    <Expiration><Days>365</Days></Expiration>
  </Rule>
  <Rule>
    <ID>uploads</ID>
    <Prefix>tmp/</Prefix>
    <Status>Disabled</Status>
    <AbortIncompleteMultipartUpload><DaysAfterInitiation>7</DaysAfterInitiation></AbortIncompleteMultipartUpload>
    <NoncurrentVersionExpiration><NoncurrentDays>30</NoncurrentDays><NewerNoncurrentVersions>2</NewerNoncurrentVersions></NoncurrentVersionExpiration>
  </Rule>
  <Rule>
    <Filter/>
    <Status>Enabled</Status>
    <Expiration><Date>2030-01-01T00:00:00.000Z</Date></Expiration>
  </Rule>
</LifecycleConfiguration>"#;

    fn code(body: &str) -> S3ErrorCode {
        LifecycleConfiguration::parse_xml(body.as_bytes())
            .expect_err("should be refused")
            .code
    }

    fn one_rule(inner: &str) -> String {
        format!("<LifecycleConfiguration><Rule>{inner}</Rule></LifecycleConfiguration>")
    }

    fn expire_days(filter: &str, days: &str) -> String {
        one_rule(&format!(
            "<Status>Enabled</Status>{filter}<Expiration><Days>{days}</Days></Expiration>"
        ))
    }

    #[test]
    fn aws_example_parses_and_round_trips() {
        let c = LifecycleConfiguration::parse_xml(AWS_EXAMPLE).expect("parses");
        assert_eq!(c.rules.len(), 3);
        assert_eq!(
            c.rules[0].filter,
            LifecycleFilter::And {
                prefix: Some("logs/".into()),
                tags: vec![("key1".into(), "value1".into())],
                greater_than: Some(500),
                less_than: None,
            }
        );
        assert_eq!(c.rules[0].expiration, Some(Expiration::Days(365)));
        assert!(!c.rules[1].enabled);
        assert_eq!(
            c.rules[1].filter,
            LifecycleFilter::LegacyPrefix("tmp/".into())
        );
        assert_eq!(c.rules[1].abort_incomplete_days, Some(7));
        assert_eq!(
            c.rules[1].noncurrent_version_expiration,
            Some(NoncurrentVersionExpiration {
                noncurrent_days: 30,
                newer_noncurrent_versions: Some(2)
            })
        );
        assert_eq!(c.rules[2].filter, LifecycleFilter::Empty);
        let date = DateTime::parse_iso8601("2030-01-01T00:00:00Z").expect("date");
        assert_eq!(
            c.rules[2].expiration,
            Some(Expiration::Date(date.to_unix()))
        );
        let mut out = Vec::new();
        c.write_xml(&mut out);
        assert_eq!(LifecycleConfiguration::parse_xml(&out).expect("again"), c);
    }

    #[test]
    fn schema_breaches_are_malformed() {
        use S3ErrorCode::MalformedXML;
        for bad in [
            String::from("<LifecycleConfiguration/>"),
            one_rule("<Filter/><Expiration><Days>1</Days></Expiration>"),
            one_rule("<Status>On</Status><Filter/><Expiration><Days>1</Days></Expiration>"),
            one_rule("<Status>Enabled</Status><Expiration><Days>1</Days></Expiration>"),
            expire_days("<Prefix>a</Prefix><Filter/>", "1"),
            expire_days(
                "<Filter><Prefix>a</Prefix><Tag><Key>k</Key><Value>v</Value></Tag></Filter>",
                "1",
            ),
            expire_days("<Filter><And><Prefix>a</Prefix></And></Filter>", "1"),
            expire_days(
                "<Filter><And><Tag><Key>k</Key><Value>v</Value></Tag></And></Filter>",
                "1",
            ),
            expire_days("<Filter/>", "x"),
            expire_days("<Filter/>", "99999999999"),
            one_rule("<Status>Enabled</Status><Filter/><Expiration></Expiration>"),
            one_rule(
                "<Status>Enabled</Status><Filter/><Expiration><Days>1</Days>\
                 <Date>2030-01-01T00:00:00Z</Date></Expiration>",
            ),
            one_rule(
                "<Status>Enabled</Status><Filter/><NoncurrentVersionExpiration>\
                 </NoncurrentVersionExpiration>",
            ),
            one_rule(
                "<Status>Enabled</Status><Filter/><AbortIncompleteMultipartUpload>\
                 </AbortIncompleteMultipartUpload>",
            ),
            String::from("<Lifecycle><Rule/></Lifecycle>"),
        ] {
            assert_eq!(code(&bad), MalformedXML, "{bad}");
        }
        let mut many = String::from("<LifecycleConfiguration>");
        for i in 0..=MAX_LIFECYCLE_RULES {
            many.push_str(&format!(
                "<Rule><ID>r{i}</ID><Status>Enabled</Status><Filter/>\
                 <Expiration><Days>1</Days></Expiration></Rule>"
            ));
        }
        many.push_str("</LifecycleConfiguration>");
        assert_eq!(code(&many), MalformedXML);
    }

    #[test]
    fn bad_values_are_invalid_arguments() {
        use S3ErrorCode::InvalidArgument;
        let long_id = "i".repeat(256);
        for bad in [
            expire_days("<Filter/>", "0"),
            expire_days("<Filter/>", "-3"),
            one_rule(&format!(
                "<ID>{long_id}</ID><Status>Enabled</Status><Filter/>\
                 <Expiration><Days>1</Days></Expiration>"
            )),
            one_rule(
                "<Status>Enabled</Status><Filter/>\
                 <Expiration><Date>2030-01-01T12:00:00Z</Date></Expiration>",
            ),
            one_rule(
                "<Status>Enabled</Status><Filter/><NoncurrentVersionExpiration>\
                 <NoncurrentDays>0</NoncurrentDays></NoncurrentVersionExpiration>",
            ),
            one_rule(
                "<Status>Enabled</Status><Filter/><NoncurrentVersionExpiration>\
                 <NoncurrentDays>1</NoncurrentDays><NewerNoncurrentVersions>101\
                 </NewerNoncurrentVersions></NoncurrentVersionExpiration>",
            ),
            one_rule(
                "<Status>Enabled</Status><Filter/><AbortIncompleteMultipartUpload>\
                 <DaysAfterInitiation>0</DaysAfterInitiation></AbortIncompleteMultipartUpload>",
            ),
            one_rule(
                "<Status>Enabled</Status><Filter/><Expiration><Days>1</Days>\
                 <ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration>",
            ),
            expire_days(
                "<Filter><And><ObjectSizeGreaterThan>10</ObjectSizeGreaterThan>\
                 <ObjectSizeLessThan>10</ObjectSizeLessThan></And></Filter>",
                "1",
            ),
        ] {
            assert_eq!(code(&bad), InvalidArgument, "{bad}");
        }
        let ok_id = "i".repeat(255);
        LifecycleConfiguration::parse_xml(
            one_rule(&format!(
                "<ID>{ok_id}</ID><Status>Enabled</Status><Filter/>\
                 <Expiration><Days>1</Days></Expiration>"
            ))
            .as_bytes(),
        )
        .expect("255 characters is fine");
    }

    #[test]
    fn what_s3_refuses_beyond_the_schema_is_an_invalid_request() {
        use S3ErrorCode::InvalidRequest;
        let rule = |id: &str| {
            format!(
                "<Rule><ID>{id}</ID><Status>Enabled</Status><Filter/>\
                 <Expiration><Days>1</Days></Expiration></Rule>"
            )
        };
        let dup = format!(
            "<LifecycleConfiguration>{}{}</LifecycleConfiguration>",
            rule("same"),
            rule("same")
        );
        let long_prefix = "p".repeat(1025);
        for bad in [
            dup,
            one_rule("<ID>x</ID><Status>Enabled</Status><Filter/>"),
            expire_days(&format!("<Prefix>{long_prefix}</Prefix>"), "1"),
            expire_days(
                &format!("<Filter><Prefix>{long_prefix}</Prefix></Filter>"),
                "1",
            ),
            expire_days(
                &format!(
                    "<Filter><Tag><Key>{}</Key><Value>v</Value></Tag></Filter>",
                    "k".repeat(129)
                ),
                "1",
            ),
            expire_days(
                "<Filter><And><Tag><Key>k</Key><Value>a</Value></Tag>\
                 <Tag><Key>k</Key><Value>b</Value></Tag></And></Filter>",
                "1",
            ),
            one_rule(
                "<Status>Enabled</Status><Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter>\
                 <AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation>\
                 </AbortIncompleteMultipartUpload>",
            ),
            one_rule(
                "<Status>Enabled</Status><Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter>\
                 <Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration>",
            ),
        ] {
            assert_eq!(code(&bad), InvalidRequest, "{bad}");
        }
    }

    #[test]
    fn rules_without_an_id_get_a_stable_one() {
        let same = "<Status>Enabled</Status><Filter/><Expiration><Days>1</Days></Expiration>";
        let body = format!(
            "<LifecycleConfiguration><Rule>{same}</Rule><Rule><ID></ID>{same}</Rule>\
             </LifecycleConfiguration>"
        );
        let c = LifecycleConfiguration::parse_xml(body.as_bytes()).expect("parses");
        let ids: Vec<&str> = c.rules.iter().map(LifecycleRule::id).collect();
        assert!(
            ids.iter()
                .all(|id| id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())),
            "{ids:?}"
        );
        assert_ne!(ids[0], ids[1], "two rules alike, two IDs");
        let again = LifecycleConfiguration::parse_xml(body.as_bytes()).expect("parses");
        assert_eq!(again, c, "the same document, the same IDs");
        let mut out = Vec::new();
        c.write_xml(&mut out);
        assert_eq!(LifecycleConfiguration::parse_xml(&out).expect("again"), c);
    }

    #[test]
    fn transitions_are_not_implemented() {
        for action in [
            "<Transition><Days>30</Days><StorageClass>GLACIER</StorageClass></Transition>",
            "<NoncurrentVersionTransition><NoncurrentDays>30</NoncurrentDays>\
             <StorageClass>GLACIER</StorageClass></NoncurrentVersionTransition>",
        ] {
            let body = one_rule(&format!("<Status>Enabled</Status><Filter/>{action}"));
            assert_eq!(code(&body), S3ErrorCode::NotImplemented, "{body}");
        }
    }

    #[test]
    fn filters_match_prefix_tags_and_sizes() {
        let tags = vec![("k".to_string(), "v".to_string()), ("a".into(), "b".into())];
        let and = LifecycleFilter::And {
            prefix: Some("logs/".into()),
            tags: vec![("k".into(), "v".into())],
            greater_than: Some(10),
            less_than: Some(100),
        };
        assert!(and.matches("logs/x", 50, &tags));
        assert!(!and.matches("data/x", 50, &tags));
        assert!(!and.matches("logs/x", 10, &tags));
        assert!(!and.matches("logs/x", 100, &tags));
        assert!(!and.matches("logs/x", 50, &tags[1..]));
        assert!(LifecycleFilter::Tag("a".into(), "b".into()).matches("x", 0, &tags));
        assert!(!LifecycleFilter::Tag("a".into(), "c".into()).matches("x", 0, &tags));
        assert!(LifecycleFilter::SizeLessThan(5).matches("x", 4, &[]));
        assert!(LifecycleFilter::Empty.matches("anything", 0, &[]));
    }

    #[test]
    fn days_round_up_to_the_next_midnight() {
        // AWS's example: created 2014-01-15 10:30 UTC, 3 days: gone at 2014-01-19 00:00 UTC.
        let created = DateTime::parse_iso8601("2014-01-15T10:30:00Z").expect("date");
        let expiry = expiry_after_days(created.to_unix(), 3, DAY_SECS);
        let want = DateTime::parse_iso8601("2014-01-19T00:00:00Z").expect("date");
        assert_eq!(expiry, want.to_unix());
        // A scaled day of 10 s: 2 days after 105 s is the boundary after 125 s.
        assert_eq!(expiry_after_days(105, 2, 10), 130);
        assert_eq!(
            expiration_header(want.to_unix(), "logs \"old\""),
            "expiry-date=\"Sun, 19 Jan 2014 00:00:00 GMT\", rule-id=\"logs \\\"old\\\"\""
        );
    }

    #[test]
    fn the_earliest_enabled_rule_sets_the_expiry() {
        let c = LifecycleConfiguration::parse_xml(AWS_EXAMPLE).expect("parses");
        let tags = vec![("key1".to_string(), "value1".to_string())];
        let (t, rule) = c
            .expiry("logs/a", 1000, &tags, 0, DAY_SECS)
            .expect("expires");
        // 365 days after 1970 come before the 2030 date.
        assert_eq!(rule.id(), "example-id");
        assert_eq!(t, expiry_after_days(0, 365, DAY_SECS));
        let (_, rule) = c.expiry("other", 1, &[], 0, DAY_SECS).expect("by date");
        assert_eq!(rule.id(), c.rules[2].id());
        // The upload rule is disabled.
        assert_eq!(c.abort_after("tmp/x"), None);
        assert!(!c.aborts_uploads());
        assert!(c.expiration_needs_tags());
    }

    #[test]
    fn noncurrent_versions_and_expired_markers() {
        let rule = |body: &str| {
            let doc = format!(
                "<LifecycleConfiguration><Rule><ID>r</ID><Status>Enabled</Status>{body}</Rule>\
                 </LifecycleConfiguration>"
            );
            LifecycleConfiguration::parse_xml(doc.as_bytes()).expect("parses")
        };
        let day = 10;
        let c = rule(
            "<Filter><Prefix>a/</Prefix></Filter><NoncurrentVersionExpiration>\
             <NoncurrentDays>2</NoncurrentDays><NewerNoncurrentVersions>3\
             </NewerNoncurrentVersions></NoncurrentVersionExpiration>",
        );
        assert!(c.expires_versions());
        assert_eq!(c.newer_noncurrent_needed(), 3);
        assert!(!c.noncurrent_needs_tags());
        // Noncurrent since 5: due at 30 (2 days, rounded up to the next day).
        assert!(c.noncurrent_expired("a/k", 1, &[], 5, 3, 30, day));
        assert!(!c.noncurrent_expired("a/k", 1, &[], 5, 3, 29, day));
        assert!(
            !c.noncurrent_expired("a/k", 1, &[], 5, 2, 30, day),
            "kept: 3 newest"
        );
        assert!(
            !c.noncurrent_expired("b/k", 1, &[], 5, 3, 30, day),
            "another prefix"
        );
        assert!(!c.removes_delete_marker("a/k", 0, 1000, day));

        let c = rule(
            "<Filter/><Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration>",
        );
        assert!(c.expires_versions());
        assert!(c.removes_delete_marker("k", 100, 100, day));
        assert!(!c.noncurrent_expired("k", 1, &[], 0, 0, 1000, day));
        let c = rule(
            "<Filter/><Expiration><ExpiredObjectDeleteMarker>false</ExpiredObjectDeleteMarker></Expiration>",
        );
        assert!(!c.expires_versions());
        assert!(!c.removes_delete_marker("k", 100, 1000, day));
        // Days also remove an expired marker, once its days have passed.
        let c = rule("<Filter/><Expiration><Days>1</Days></Expiration>");
        assert!(c.expires_versions());
        assert!(!c.removes_delete_marker("k", 5, 19, day));
        assert!(c.removes_delete_marker("k", 5, 20, day));
    }
}
