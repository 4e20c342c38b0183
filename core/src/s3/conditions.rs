//! Conditional requests: `If-Match`, `If-None-Match`, `If-Modified-Since`,
//! `If-Unmodified-Since`, and their `x-amz-copy-source-if-*` twins of CopyObject/UploadPartCopy.
//!
//! Evaluation follows RFC 9110 §13.2.2, which is also what S3 documents: `If-Match` decides
//! alone when present (`If-Unmodified-Since` is then ignored), and `If-None-Match` likewise
//! overrides `If-Modified-Since`. For the copy source every failure is 412.

use super::{S3Error, S3ErrorCode, S3Result};
use crate::http::{Header, find_header};
use crate::s3::header;
use crate::time::DateTime;

/// The outcome of evaluating conditions against an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precondition {
    /// Serve (or copy) the object.
    Proceed,
    /// 304 Not Modified (reads only).
    NotModified,
    /// 412 Precondition Failed.
    Failed,
}

/// The conditional headers of a request; dates are Unix seconds.
///
/// Invalid dates are ignored, as RFC 9110 requires (and S3 does). An ETag list that is not
/// UTF-8 is kept as an empty list, which matches nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Conditions<'a> {
    /// `If-Match`: a list of ETags or `*`.
    pub if_match: Option<&'a str>,
    /// `If-None-Match`: a list of ETags or `*`.
    pub if_none_match: Option<&'a str>,
    /// `If-Modified-Since`.
    pub if_modified_since: Option<i64>,
    /// `If-Unmodified-Since`.
    pub if_unmodified_since: Option<i64>,
}

impl<'a> Conditions<'a> {
    /// The standard conditional headers of GetObject/HeadObject.
    pub fn from_headers(headers: &[Header<'a>]) -> Self {
        Self::with_names(
            headers,
            [
                header::IF_MATCH,
                header::IF_NONE_MATCH,
                header::IF_MODIFIED_SINCE,
                header::IF_UNMODIFIED_SINCE,
            ],
        )
    }

    /// The `x-amz-copy-source-if-*` headers of CopyObject/UploadPartCopy.
    pub fn from_copy_source_headers(headers: &[Header<'a>]) -> Self {
        Self::with_names(
            headers,
            [
                header::X_AMZ_COPY_SOURCE_IF_MATCH,
                header::X_AMZ_COPY_SOURCE_IF_NONE_MATCH,
                header::X_AMZ_COPY_SOURCE_IF_MODIFIED_SINCE,
                header::X_AMZ_COPY_SOURCE_IF_UNMODIFIED_SINCE,
            ],
        )
    }

    fn with_names(headers: &[Header<'a>], [m, nm, ms, us]: [&str; 4]) -> Self {
        let list = |name| find_header(headers, name).map(|v| core::str::from_utf8(v).unwrap_or(""));
        let date = |name| {
            find_header(headers, name)
                .and_then(|v| core::str::from_utf8(v).ok())
                .and_then(DateTime::parse_http)
                .map(DateTime::to_unix)
        };
        Self {
            if_match: list(m),
            if_none_match: list(nm),
            if_modified_since: date(ms),
            if_unmodified_since: date(us),
        }
    }

    /// Whether no condition is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Evaluate for a read (GET/HEAD) of an object with this ETag (quoted or not) and
    /// last-modified time.
    pub fn evaluate(&self, etag: &str, last_modified: i64) -> Precondition {
        if let Some(list) = self.if_match {
            if !etag_list_matches(list, etag, false) {
                return Precondition::Failed;
            }
        } else if self.if_unmodified_since.is_some_and(|t| last_modified > t) {
            return Precondition::Failed;
        }
        if let Some(list) = self.if_none_match {
            if etag_list_matches(list, etag, true) {
                return Precondition::NotModified;
            }
        } else if self.if_modified_since.is_some_and(|t| last_modified <= t) {
            return Precondition::NotModified;
        }
        Precondition::Proceed
    }

    /// [`evaluate`](Self::evaluate) as a result: `NotModified` (304) or
    /// `PreconditionFailed` (412).
    pub fn check(&self, etag: &str, last_modified: i64) -> S3Result<()> {
        match self.evaluate(etag, last_modified) {
            Precondition::Proceed => Ok(()),
            Precondition::NotModified => Err(S3ErrorCode::NotModified.into()),
            Precondition::Failed => Err(S3ErrorCode::PreconditionFailed.into()),
        }
    }

    /// Evaluate copy-source conditions: as for reads, but any failure is 412.
    pub fn check_copy_source(&self, etag: &str, last_modified: i64) -> S3Result<()> {
        match self.evaluate(etag, last_modified) {
            Precondition::Proceed => Ok(()),
            Precondition::NotModified | Precondition::Failed => Err(S3Error::with_message(
                S3ErrorCode::PreconditionFailed,
                "At least one of the pre-conditions you specified did not hold for the copy source",
            )),
        }
    }
}

/// Whether an ETag list (`*` or `"a", W/"b", c`) contains `etag`.
///
/// Weak comparison ignores `W/`; strong comparison never matches a weak entry. Entries
/// without quotes are accepted, as S3 accepts them.
fn etag_list_matches(list: &str, etag: &str, weak: bool) -> bool {
    let etag = unquote(etag.strip_prefix("W/").unwrap_or(etag));
    let mut rest = list.trim();
    if rest == "*" {
        return true;
    }
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            return false;
        }
        let (is_weak, body) = match rest.strip_prefix("W/") {
            Some(b) => (true, b),
            None => (false, rest),
        };
        // A quoted entry ends at its closing quote (commas may appear inside); a bare one at
        // the next comma.
        let (entry, after) = match body.strip_prefix('"') {
            Some(inner) => match inner.find('"') {
                Some(end) => (
                    inner.get(..end).unwrap_or(""),
                    inner.get(end + 1..).unwrap_or(""),
                ),
                None => (inner, ""),
            },
            None => match body.find(',') {
                Some(end) => (
                    body.get(..end).unwrap_or("").trim_end(),
                    body.get(end..).unwrap_or(""),
                ),
                None => (body.trim_end(), ""),
            },
        };
        if (weak || !is_weak) && entry == etag {
            return true;
        }
        rest = after;
    }
}

fn unquote(s: &str) -> &str {
    s.strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ETAG: &str = "\"fba9dede5f27731c9771645a39863328\"";
    // Sun, 06 Nov 1994 08:49:37 GMT
    const T: i64 = 784_111_777;

    fn h<'a>(name: &'a str, value: &'a str) -> Header<'a> {
        Header {
            name,
            value: value.as_bytes(),
        }
    }

    #[test]
    fn parses_headers() {
        let hs = [
            h("If-Match", ETAG),
            h("If-Modified-Since", "Sun, 06 Nov 1994 08:49:37 GMT"),
            h("If-Unmodified-Since", "not a date"),
            h("x-amz-copy-source-if-none-match", "*"),
        ];
        let c = Conditions::from_headers(&hs);
        assert_eq!(c.if_match, Some(ETAG));
        assert_eq!(c.if_none_match, None);
        assert_eq!(c.if_modified_since, Some(T));
        assert_eq!(c.if_unmodified_since, None, "invalid dates are ignored");
        let cs = Conditions::from_copy_source_headers(&hs);
        assert_eq!(cs.if_none_match, Some("*"));
        assert_eq!(cs.if_match, None);
        assert!(Conditions::from_headers(&[]).is_empty());
        assert!(!cs.is_empty());
    }

    #[test]
    fn etag_lists() {
        let e = "\"abc\"";
        assert!(etag_list_matches("*", e, false));
        assert!(etag_list_matches("\"abc\"", e, false));
        assert!(
            etag_list_matches("abc", e, false),
            "bare ETags as S3 accepts them"
        );
        assert!(etag_list_matches("\"x\", \"abc\"", e, false));
        assert!(etag_list_matches("\"x\",abc", e, false));
        assert!(etag_list_matches("\"a,b\", \"abc\"", e, false));
        assert!(!etag_list_matches("\"a,b\"", e, false));
        assert!(!etag_list_matches("\"abcd\"", e, false));
        assert!(!etag_list_matches("", e, false));
        assert!(
            !etag_list_matches("W/\"abc\"", e, false),
            "strong comparison"
        );
        assert!(etag_list_matches("W/\"abc\"", e, true), "weak comparison");
        assert!(etag_list_matches("\"abc", e, true), "unterminated quote");
        assert!(
            etag_list_matches("\"abc\"", "abc", false),
            "unquoted object ETag"
        );
    }

    #[test]
    fn rfc9110_precedence() {
        use Precondition::*;
        let c = |m: Option<&'static str>,
                 nm: Option<&'static str>,
                 ms: Option<i64>,
                 us: Option<i64>| Conditions {
            if_match: m,
            if_none_match: nm,
            if_modified_since: ms,
            if_unmodified_since: us,
        };
        let other = Some("\"other\"");
        // (conditions, expected) for an object with ETAG modified at T.
        let cases = [
            (c(None, None, None, None), Proceed),
            (c(Some(ETAG), None, None, None), Proceed),
            (c(other, None, None, None), Failed),
            (c(Some("*"), None, None, None), Proceed),
            (c(None, None, None, Some(T)), Proceed),
            (c(None, None, None, Some(T - 1)), Failed),
            // S3: If-Match true and If-Unmodified-Since false -> 200.
            (c(Some(ETAG), None, None, Some(T - 1)), Proceed),
            (c(None, Some(ETAG), None, None), NotModified),
            (c(None, Some("*"), None, None), NotModified),
            (c(None, other, None, None), Proceed),
            (c(None, None, Some(T), None), NotModified),
            (c(None, None, Some(T + 10), None), NotModified),
            (c(None, None, Some(T - 1), None), Proceed),
            // S3: If-None-Match false and If-Modified-Since true -> 304.
            (c(None, Some(ETAG), Some(T - 1), None), NotModified),
            // If-None-Match true overrides a failing If-Modified-Since.
            (c(None, other, Some(T), None), Proceed),
            // If-Match failing wins over If-None-Match.
            (c(other, Some(ETAG), None, None), Failed),
            (c(None, Some(ETAG), None, Some(T - 1)), Failed),
        ];
        for (i, (cond, want)) in cases.iter().enumerate() {
            assert_eq!(cond.evaluate(ETAG, T), *want, "case {i}: {cond:?}");
        }
    }

    #[test]
    fn results_and_copy_source() {
        let not_mod = Conditions {
            if_none_match: Some(ETAG),
            ..Conditions::default()
        };
        assert_eq!(
            not_mod.check(ETAG, T).expect_err("304").code,
            S3ErrorCode::NotModified
        );
        // S3: copy-source If-None-Match false and If-Modified-Since true -> 412.
        let copy = Conditions {
            if_none_match: Some(ETAG),
            if_modified_since: Some(T - 1),
            ..Conditions::default()
        };
        assert_eq!(
            copy.check_copy_source(ETAG, T).expect_err("412").status(),
            412
        );
        let failed = Conditions {
            if_match: Some("\"x\""),
            ..Conditions::default()
        };
        assert_eq!(failed.check(ETAG, T).expect_err("412").status(), 412);
        assert_eq!(Conditions::default().check(ETAG, T), Ok(()));
        assert_eq!(Conditions::default().check_copy_source(ETAG, T), Ok(()));
    }
}
