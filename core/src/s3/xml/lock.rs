//! Object lock (WORM): a bucket's `<ObjectLockConfiguration>`, an object version's
//! `<Retention>` and `<LegalHold>`, the `x-amz-object-lock-*` headers of writes, and the rules
//! that say whether a version may be deleted or its retention changed — sans-IO, as S3
//! documents them ("Locking objects with Object Lock").
//!
//! Times are Unix seconds; a retention's date is kept to the second (S3 answers dates to the
//! millisecond, and `.000` is what it answers for dates given to the second).

use alloc::string::String;
use alloc::vec::Vec;

use super::parse::{Doc, malformed_because};
use super::write::XmlWriter;
use crate::s3::{S3Error, S3ErrorCode, S3Result};
use crate::time::DateTime;

/// Largest PutObjectLockConfiguration, PutObjectRetention or PutObjectLegalHold body accepted.
pub const MAX_LOCK_BODY: usize = 16 << 10;
const MAX_LOCK_ELEMENTS: usize = 64;
/// The longest default retention S3 accepts, in days (and [`MAX_RETENTION_YEARS`] in years).
pub const MAX_RETENTION_DAYS: u32 = 36_500;
/// The longest default retention S3 accepts, in years.
pub const MAX_RETENTION_YEARS: u32 = 100;
const DAY: i64 = 86_400;

/// How a retention protects a version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetentionMode {
    /// Users with `s3:BypassGovernanceRetention` may shorten or remove it, and delete the
    /// version, by asking with
    /// [`x-amz-bypass-governance-retention`](crate::s3::header::X_AMZ_BYPASS_GOVERNANCE_RETENTION).
    Governance,
    /// Nobody may shorten or remove it, or delete the version, until it ends.
    Compliance,
}

impl RetentionMode {
    /// As S3 writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            RetentionMode::Governance => "GOVERNANCE",
            RetentionMode::Compliance => "COMPLIANCE",
        }
    }

    /// `GOVERNANCE` or `COMPLIANCE` (exactly, as S3 wants).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "GOVERNANCE" => Some(RetentionMode::Governance),
            "COMPLIANCE" => Some(RetentionMode::Compliance),
            _ => None,
        }
    }
}

/// A default retention's period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetentionPeriod {
    /// `Days`.
    Days(u32),
    /// `Years` (of 365 days, as S3 counts them).
    Years(u32),
}

impl RetentionPeriod {
    /// The period in seconds.
    pub fn seconds(self) -> i64 {
        match self {
            RetentionPeriod::Days(d) => i64::from(d) * DAY,
            RetentionPeriod::Years(y) => i64::from(y) * 365 * DAY,
        }
    }
}

/// The `<DefaultRetention>` of a bucket's lock rule: what every new version gets unless its
/// write says otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DefaultRetention {
    /// `Mode`.
    pub mode: RetentionMode,
    /// `Days` or `Years`.
    pub period: RetentionPeriod,
}

/// A bucket's `<ObjectLockConfiguration>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ObjectLockConfiguration {
    /// The default retention, if the configuration has a rule.
    pub default_retention: Option<DefaultRetention>,
}

/// A version's retention: until when, and how, it is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// `Mode`.
    pub mode: RetentionMode,
    /// `RetainUntilDate`, in Unix seconds.
    pub until: i64,
}

impl Retention {
    /// Whether it still protects its version at `now`.
    pub fn active(&self, now: i64) -> bool {
        self.until > now
    }

    /// The header value of its date.
    pub fn until_header(&self) -> String {
        alloc::format!("{}", DateTime::from_unix(self.until).iso8601())
    }
}

fn invalid_argument(why: &'static str) -> S3Error {
    S3Error::with_message(S3ErrorCode::InvalidArgument, why)
}

fn locked() -> S3Error {
    S3Error::with_message(
        S3ErrorCode::AccessDenied,
        "Access Denied because object protected by object lock.",
    )
}

/// The error of a lock call, or of lock headers, on a bucket without object lock.
pub fn missing_lock_configuration() -> S3Error {
    S3Error::with_message(
        S3ErrorCode::InvalidRequest,
        "Bucket is missing Object Lock Configuration",
    )
}

fn past_date() -> S3Error {
    invalid_argument("The retain until date must be in the future!")
}

/// A default retention period that is not positive or is over 100 years.
fn bad_period() -> S3Error {
    S3Error::with_message(
        S3ErrorCode::InvalidRetentionPeriod,
        "Default retention period must be a positive integer value of at most 100 years.",
    )
}

impl ObjectLockConfiguration {
    /// Parse and check a PutObjectLockConfiguration body: `ObjectLockEnabled` must be
    /// `Enabled`; a rule's `DefaultRetention` needs a mode and exactly one of `Days` and `Years`
    /// (`MalformedXML` otherwise, as the schema); a period that is not positive, or longer
    /// than 100 years, is `InvalidRetentionPeriod` (as AWS answers it).
    pub fn parse_xml(body: &[u8]) -> S3Result<Self> {
        let doc = Doc::parse(body, MAX_LOCK_BODY, MAX_LOCK_ELEMENTS)?;
        let root = doc.root("ObjectLockConfiguration")?;
        if root.opt("ObjectLockEnabled").as_deref().map(str::trim) != Some("Enabled") {
            return Err(malformed_because("ObjectLockEnabled must be Enabled"));
        }
        let Some(rule) = root.child("Rule") else {
            return Ok(Self::default());
        };
        let retention = rule
            .child("DefaultRetention")
            .ok_or_else(|| malformed_because("A Rule needs a DefaultRetention"))?;
        let mode = retention
            .opt("Mode")
            .and_then(|m| RetentionMode::parse(m.trim()))
            .ok_or_else(|| malformed_because("Mode must be GOVERNANCE or COMPLIANCE"))?;
        let period = match (
            retention.num::<i64>("Days")?,
            retention.num::<i64>("Years")?,
        ) {
            (Some(d), None) => RetentionPeriod::Days(
                u32::try_from(d)
                    .ok()
                    .filter(|d| (1..=MAX_RETENTION_DAYS).contains(d))
                    .ok_or_else(bad_period)?,
            ),
            (None, Some(y)) => RetentionPeriod::Years(
                u32::try_from(y)
                    .ok()
                    .filter(|y| (1..=MAX_RETENTION_YEARS).contains(y))
                    .ok_or_else(bad_period)?,
            ),
            _ => {
                return Err(malformed_because(
                    "DefaultRetention needs exactly one of Days and Years",
                ));
            }
        };
        Ok(Self {
            default_retention: Some(DefaultRetention { mode, period }),
        })
    }

    /// Append the GetObjectLockConfiguration document.
    pub fn write_xml(&self, out: &mut Vec<u8>) {
        let mut w = XmlWriter::document(out, "ObjectLockConfiguration", true);
        w.elem("ObjectLockEnabled", "Enabled");
        if let Some(d) = &self.default_retention {
            w.open("Rule");
            w.open("DefaultRetention");
            w.elem("Mode", d.mode.as_str());
            match d.period {
                RetentionPeriod::Days(n) => w.elem("Days", n),
                RetentionPeriod::Years(n) => w.elem("Years", n),
            }
            w.close("DefaultRetention");
            w.close("Rule");
        }
        w.close("ObjectLockConfiguration");
    }

    /// The retention a new version written at `now` gets from the default rule.
    pub fn default_for(&self, now: i64) -> Option<Retention> {
        self.default_retention.map(|d| Retention {
            mode: d.mode,
            until: now.saturating_add(d.period.seconds()),
        })
    }

    /// A compact stored form (`Enabled`, or `GOVERNANCE:D30` / `COMPLIANCE:Y1`).
    pub fn to_stored(&self) -> String {
        match &self.default_retention {
            None => String::from("Enabled"),
            Some(d) => match d.period {
                RetentionPeriod::Days(n) => alloc::format!("{}:D{n}", d.mode.as_str()),
                RetentionPeriod::Years(n) => alloc::format!("{}:Y{n}", d.mode.as_str()),
            },
        }
    }

    /// Read back [`to_stored`](Self::to_stored)'s form.
    pub fn from_stored(s: &str) -> Option<Self> {
        if s == "Enabled" {
            return Some(Self::default());
        }
        let (mode, period) = s.split_once(':')?;
        let mode = RetentionMode::parse(mode)?;
        let period = match period.split_at_checked(1)? {
            ("D", n) => RetentionPeriod::Days(n.parse().ok()?),
            ("Y", n) => RetentionPeriod::Years(n.parse().ok()?),
            _ => return None,
        };
        Some(Self {
            default_retention: Some(DefaultRetention { mode, period }),
        })
    }
}

/// Parse a PutObjectRetention body: `Some` retention, or `None` for an empty `<Retention/>`
/// (which removes a GOVERNANCE retention, with the bypass). A mode without a date, or the
/// other way round, or an unknown mode, is `MalformedXML`; a date in the past (at `now`) is
/// `InvalidArgument`.
pub fn parse_retention_xml(body: &[u8], now: i64) -> S3Result<Option<Retention>> {
    let doc = Doc::parse(body, MAX_LOCK_BODY, MAX_LOCK_ELEMENTS)?;
    let root = doc.root("Retention")?;
    let mode = root.opt("Mode");
    let until = root.opt("RetainUntilDate");
    match (mode, until) {
        (None, None) => Ok(None),
        (Some(mode), Some(until)) => {
            let mode = RetentionMode::parse(mode.trim())
                .ok_or_else(|| malformed_because("Mode must be GOVERNANCE or COMPLIANCE"))?;
            let until = DateTime::parse_iso8601(until.trim())
                .ok_or_else(|| malformed_because("RetainUntilDate is not an ISO 8601 date"))?
                .to_unix();
            if until <= now {
                return Err(past_date());
            }
            Ok(Some(Retention { mode, until }))
        }
        _ => Err(malformed_because(
            "A Retention needs both Mode and RetainUntilDate, or neither",
        )),
    }
}

/// Append the GetObjectRetention document.
pub fn write_retention_xml(retention: &Retention, out: &mut Vec<u8>) {
    let mut w = XmlWriter::document(out, "Retention", true);
    w.elem("Mode", retention.mode.as_str());
    w.elem(
        "RetainUntilDate",
        DateTime::from_unix(retention.until).iso8601(),
    );
    w.close("Retention");
}

/// Parse a PutObjectLegalHold body: `Status` `ON` (true) or `OFF` (false); anything else is
/// `MalformedXML`.
pub fn parse_legal_hold_xml(body: &[u8]) -> S3Result<bool> {
    let doc = Doc::parse(body, MAX_LOCK_BODY, MAX_LOCK_ELEMENTS)?;
    let root = doc.root("LegalHold")?;
    match root.opt("Status").as_deref().map(str::trim) {
        Some("ON") => Ok(true),
        Some("OFF") => Ok(false),
        _ => Err(malformed_because("Status must be ON or OFF")),
    }
}

/// Append the GetObjectLegalHold document.
pub fn write_legal_hold_xml(on: bool, out: &mut Vec<u8>) {
    let mut w = XmlWriter::document(out, "LegalHold", true);
    w.elem("Status", if on { "ON" } else { "OFF" });
    w.close("LegalHold");
}

/// The lock a write asks for in its headers (PutObject, CopyObject, CreateMultipartUpload,
/// POST Object fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LockRequest {
    /// `x-amz-object-lock-mode` with `x-amz-object-lock-retain-until-date`.
    pub retention: Option<Retention>,
    /// `x-amz-object-lock-legal-hold`, if given.
    pub legal_hold: Option<bool>,
}

impl LockRequest {
    /// Whether the write asks for any lock.
    pub fn is_empty(&self) -> bool {
        self.retention.is_none() && self.legal_hold.is_none()
    }

    /// Read the three headers (`mode`, `until`, `hold`: their values, if present), as S3
    /// checks them: mode and date come together, the mode is `GOVERNANCE` or `COMPLIANCE`,
    /// the date is ISO 8601 and after `now`, the hold is `ON` or `OFF` — `InvalidArgument`
    /// with S3's messages otherwise.
    pub fn from_headers(
        mode: Option<&[u8]>,
        until: Option<&[u8]>,
        hold: Option<&[u8]>,
        now: i64,
    ) -> S3Result<Self> {
        fn text(v: &[u8]) -> Option<&str> {
            core::str::from_utf8(v).map(str::trim).ok()
        }
        let retention = match (mode, until) {
            (None, None) => None,
            (Some(mode), Some(until)) => {
                let mode = text(mode)
                    .and_then(RetentionMode::parse)
                    .ok_or_else(|| invalid_argument("Unknown wormMode directive."))?;
                let until = text(until)
                    .and_then(DateTime::parse_iso8601)
                    .ok_or_else(|| {
                        invalid_argument(
                            "The retain until date must be provided in ISO 8601 format",
                        )
                    })?
                    .to_unix();
                if until <= now {
                    return Err(past_date());
                }
                Some(Retention { mode, until })
            }
            _ => {
                return Err(invalid_argument(
                    "x-amz-object-lock-retain-until-date and x-amz-object-lock-mode must both \
                     be supplied",
                ));
            }
        };
        let legal_hold = match hold.map(|h| text(h).unwrap_or("")) {
            None => None,
            Some("ON") => Some(true),
            Some("OFF") => Some(false),
            Some(_) => {
                return Err(invalid_argument(
                    "Legal Hold must be either of 'ON' or 'OFF'",
                ));
            }
        };
        Ok(Self {
            retention,
            legal_hold,
        })
    }
}

/// Whether `x-amz-bypass-governance-retention` asks for the bypass (`true`, any case).
pub fn bypass_requested(value: Option<&[u8]>) -> bool {
    value.is_some_and(|v| v.trim_ascii().eq_ignore_ascii_case(b"true"))
}

/// May a version with `retention` and `legal_hold` be deleted at `now`? A legal hold, or an
/// active COMPLIANCE retention, forbid it; an active GOVERNANCE retention forbids it unless
/// `bypass` (the request asked, and the caller may). `AccessDenied` as S3 answers.
pub fn check_delete(
    retention: Option<&Retention>,
    legal_hold: bool,
    now: i64,
    bypass: bool,
) -> S3Result<()> {
    if legal_hold {
        return Err(locked());
    }
    match retention {
        Some(r) if r.active(now) => match r.mode {
            RetentionMode::Compliance => Err(locked()),
            RetentionMode::Governance if bypass => Ok(()),
            RetentionMode::Governance => Err(locked()),
        },
        _ => Ok(()),
    }
}

/// May a version's retention go from `old` to `new` at `now`? Extending it (a later date, or
/// GOVERNANCE becoming COMPLIANCE) is always allowed; an active COMPLIANCE retention can never
/// be shortened, weakened or removed; an active GOVERNANCE one only with `bypass`.
pub fn check_retention_change(
    old: Option<&Retention>,
    new: Option<&Retention>,
    now: i64,
    bypass: bool,
) -> S3Result<()> {
    let Some(old) = old.filter(|o| o.active(now)) else {
        return Ok(());
    };
    let extends = new.is_some_and(|n| {
        n.until >= old.until
            && (n.mode == RetentionMode::Compliance || old.mode == RetentionMode::Governance)
    });
    match old.mode {
        _ if extends => Ok(()),
        RetentionMode::Compliance => Err(locked()),
        RetentionMode::Governance if bypass => Ok(()),
        RetentionMode::Governance => Err(locked()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000;

    fn config(body: &str) -> S3Result<ObjectLockConfiguration> {
        ObjectLockConfiguration::parse_xml(body.as_bytes())
    }

    #[test]
    fn configuration_round_trips() {
        let c = config(
            "<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule>\
             <DefaultRetention><Mode>GOVERNANCE</Mode><Days>30</Days></DefaultRetention>\
             </Rule></ObjectLockConfiguration>",
        )
        .unwrap();
        let d = c.default_retention.unwrap();
        assert_eq!(d.mode, RetentionMode::Governance);
        assert_eq!(d.period, RetentionPeriod::Days(30));
        let mut out = Vec::new();
        c.write_xml(&mut out);
        assert_eq!(ObjectLockConfiguration::parse_xml(&out).unwrap(), c);
        assert_eq!(
            ObjectLockConfiguration::from_stored(&c.to_stored()),
            Some(c)
        );
        let bare = config(
            "<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled>\
             </ObjectLockConfiguration>",
        )
        .unwrap();
        assert_eq!(bare.default_retention, None);
        assert_eq!(
            ObjectLockConfiguration::from_stored(&bare.to_stored()),
            Some(bare)
        );
        let years = config(
            "<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule>\
             <DefaultRetention><Mode>COMPLIANCE</Mode><Years>2</Years></DefaultRetention>\
             </Rule></ObjectLockConfiguration>",
        )
        .unwrap();
        assert_eq!(
            years.default_for(NOW),
            Some(Retention {
                mode: RetentionMode::Compliance,
                until: NOW + 2 * 365 * DAY
            })
        );
    }

    #[test]
    fn configuration_errors_are_s3s() {
        let code = |body: &str| config(body).unwrap_err().code;
        let rule = |inner: &str| {
            alloc::format!(
                "<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule>\
                 <DefaultRetention>{inner}</DefaultRetention></Rule></ObjectLockConfiguration>"
            )
        };
        assert_eq!(
            code(
                "<ObjectLockConfiguration><ObjectLockEnabled>Disabled</ObjectLockEnabled></ObjectLockConfiguration>"
            ),
            S3ErrorCode::MalformedXML
        );
        assert_eq!(code(&rule("<Days>1</Days>")), S3ErrorCode::MalformedXML);
        assert_eq!(
            code(&rule("<Mode>LOCKED</Mode><Days>1</Days>")),
            S3ErrorCode::MalformedXML
        );
        assert_eq!(
            code(&rule(
                "<Mode>GOVERNANCE</Mode><Days>1</Days><Years>1</Years>"
            )),
            S3ErrorCode::MalformedXML
        );
        assert_eq!(
            code(&rule("<Mode>GOVERNANCE</Mode>")),
            S3ErrorCode::MalformedXML
        );
        assert_eq!(
            code(&rule("<Mode>GOVERNANCE</Mode><Days>0</Days>")),
            S3ErrorCode::InvalidRetentionPeriod
        );
        assert_eq!(
            code(&rule("<Mode>GOVERNANCE</Mode><Years>-1</Years>")),
            S3ErrorCode::InvalidRetentionPeriod
        );
        assert_eq!(
            code(&rule("<Mode>GOVERNANCE</Mode><Years>101</Years>")),
            S3ErrorCode::InvalidRetentionPeriod
        );
        assert_eq!(
            code(&rule("<Mode>GOVERNANCE</Mode><Days>x</Days>")),
            S3ErrorCode::MalformedXML
        );
    }

    #[test]
    fn retention_and_legal_hold_documents() {
        let r = parse_retention_xml(
            b"<Retention><Mode>COMPLIANCE</Mode><RetainUntilDate>2030-01-02T03:04:05.000Z\
              </RetainUntilDate></Retention>",
            NOW,
        )
        .unwrap()
        .unwrap();
        assert_eq!(r.mode, RetentionMode::Compliance);
        assert_eq!(
            r.until,
            DateTime::parse_iso8601("2030-01-02T03:04:05Z")
                .unwrap()
                .to_unix()
        );
        let mut out = Vec::new();
        write_retention_xml(&r, &mut out);
        assert_eq!(parse_retention_xml(&out, NOW).unwrap(), Some(r));
        assert_eq!(parse_retention_xml(b"<Retention/>", NOW).unwrap(), None);
        assert_eq!(
            parse_retention_xml(
                b"<Retention><Mode>GOVERNANCE</Mode><RetainUntilDate>2001-01-01T00:00:00Z\
                  </RetainUntilDate></Retention>",
                NOW
            )
            .unwrap_err()
            .code,
            S3ErrorCode::InvalidArgument
        );
        assert_eq!(
            parse_retention_xml(b"<Retention><Mode>GOVERNANCE</Mode></Retention>", NOW)
                .unwrap_err()
                .code,
            S3ErrorCode::MalformedXML
        );
        for on in [true, false] {
            let mut out = Vec::new();
            write_legal_hold_xml(on, &mut out);
            assert_eq!(parse_legal_hold_xml(&out).unwrap(), on);
        }
        assert_eq!(
            parse_legal_hold_xml(b"<LegalHold><Status>on</Status></LegalHold>")
                .unwrap_err()
                .code,
            S3ErrorCode::MalformedXML
        );
    }

    #[test]
    fn headers_are_checked_as_s3_checks_them() {
        let future = b"2030-01-01T00:00:00Z";
        let ok =
            LockRequest::from_headers(Some(b"GOVERNANCE"), Some(future), Some(b"ON"), NOW).unwrap();
        assert_eq!(ok.retention.unwrap().mode, RetentionMode::Governance);
        assert_eq!(ok.legal_hold, Some(true));
        assert!(
            LockRequest::from_headers(None, None, None, NOW)
                .unwrap()
                .is_empty()
        );
        let err = |m: Option<&[u8]>, u: Option<&[u8]>, h: Option<&[u8]>| {
            LockRequest::from_headers(m, u, h, NOW).unwrap_err().code
        };
        assert_eq!(
            err(Some(b"GOVERNANCE"), None, None),
            S3ErrorCode::InvalidArgument
        );
        assert_eq!(err(None, Some(future), None), S3ErrorCode::InvalidArgument);
        assert_eq!(
            err(Some(b"WORM"), Some(future), None),
            S3ErrorCode::InvalidArgument
        );
        assert_eq!(
            err(Some(b"COMPLIANCE"), Some(b"2030-01-01"), None),
            S3ErrorCode::InvalidArgument
        );
        assert_eq!(
            err(Some(b"COMPLIANCE"), Some(b"2001-01-01T00:00:00Z"), None),
            S3ErrorCode::InvalidArgument
        );
        assert_eq!(err(None, None, Some(b"YES")), S3ErrorCode::InvalidArgument);
        assert!(bypass_requested(Some(b"True")));
        assert!(!bypass_requested(Some(b"false")));
        assert!(!bypass_requested(None));
    }

    #[test]
    fn deletes_respect_holds_and_retentions() {
        let gov = Retention {
            mode: RetentionMode::Governance,
            until: NOW + 10,
        };
        let comp = Retention {
            mode: RetentionMode::Compliance,
            until: NOW + 10,
        };
        assert!(check_delete(None, false, NOW, false).is_ok());
        assert_eq!(
            check_delete(None, true, NOW, true).unwrap_err().code,
            S3ErrorCode::AccessDenied
        );
        assert!(check_delete(Some(&gov), false, NOW, false).is_err());
        assert!(check_delete(Some(&gov), false, NOW, true).is_ok());
        assert!(check_delete(Some(&comp), false, NOW, true).is_err());
        // Once the date has passed, nothing protects the version.
        assert!(check_delete(Some(&comp), false, NOW + 10, false).is_ok());
    }

    #[test]
    fn retention_may_grow_and_only_governance_may_shrink() {
        let r = |mode, until| Retention { mode, until };
        let gov = r(RetentionMode::Governance, NOW + 100);
        let comp = r(RetentionMode::Compliance, NOW + 100);
        let change = |old: &Retention, new: Option<Retention>, bypass| {
            check_retention_change(Some(old), new.as_ref(), NOW, bypass).is_ok()
        };
        // Extending.
        assert!(change(
            &gov,
            Some(r(RetentionMode::Governance, NOW + 200)),
            false
        ));
        assert!(change(
            &comp,
            Some(r(RetentionMode::Compliance, NOW + 200)),
            false
        ));
        assert!(change(
            &gov,
            Some(r(RetentionMode::Compliance, NOW + 100)),
            false
        ));
        // Shortening, weakening, removing.
        assert!(!change(
            &gov,
            Some(r(RetentionMode::Governance, NOW + 50)),
            false
        ));
        assert!(change(
            &gov,
            Some(r(RetentionMode::Governance, NOW + 50)),
            true
        ));
        assert!(!change(&gov, None, false));
        assert!(change(&gov, None, true));
        assert!(!change(
            &comp,
            Some(r(RetentionMode::Compliance, NOW + 50)),
            true
        ));
        assert!(!change(
            &comp,
            Some(r(RetentionMode::Governance, NOW + 200)),
            true
        ));
        assert!(!change(&comp, None, true));
        // An expired retention is no retention.
        assert!(check_retention_change(Some(&comp), None, NOW + 100, false).is_ok());
    }
}
