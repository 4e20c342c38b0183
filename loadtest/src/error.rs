//! Why an operation failed: the kinds reports count errors under.

use std::fmt;

use ferry_core::http::HttpError;

use crate::stats::MismatchReport;

/// Why an operation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpError {
    /// A non-success status, with the S3 error code when the body had one.
    Http {
        /// The HTTP status.
        status: u16,
        /// `<Code>` of the error document.
        code: Option<String>,
    },
    /// The connection failed (refused, reset, timed out, malformed response).
    Transport(String),
    /// The response was well-formed but its content was wrong.
    Verify(VerifyError),
}

/// What verification found wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyError {
    /// A body byte differs from the regenerated content.
    Mismatch(MismatchReport),
    /// The body length is not the object's size.
    Length {
        /// The key.
        key: String,
        /// Its size.
        expected: u64,
        /// Bytes received (or the `Content-Length` of a HEAD).
        got: u64,
    },
    /// The ETag is not the MD5 the body must have.
    ETag {
        /// The key.
        key: String,
        /// The ETag computed from the content.
        expected: String,
        /// The ETag received.
        got: String,
    },
    /// A response document could not be parsed.
    Document(String),
}

/// S3 and AWS error codes that mean "slow down" whatever their status (the AWS SDKs' list of
/// throttling errors, the ones an S3 service or gateway sends).
const THROTTLING_CODES: [&str; 9] = [
    "SlowDown",
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "RequestThrottled",
    "RequestThrottledException",
    "TooManyRequestsException",
    "RequestLimitExceeded",
    "BandwidthLimitExceeded",
];

impl OpError {
    /// Whether the server asked us to slow down: `503` (SlowDown, ServiceUnavailable), `429`,
    /// or a throttling error code. Such answers are their own result, not failures: the
    /// server is shedding load it was offered.
    pub fn is_throttling(&self) -> bool {
        match self {
            Self::Http { status, code } => {
                *status == 503
                    || *status == 429
                    || code
                        .as_deref()
                        .is_some_and(|c| THROTTLING_CODES.contains(&c))
            }
            Self::Transport(_) | Self::Verify(_) => false,
        }
    }

    /// Whether the operation may succeed if sent again after a pause: a throttling answer or
    /// a lost connection. Other failures (4xx, wrong content) would only fail again.
    pub fn is_retryable(&self) -> bool {
        self.is_throttling() || matches!(self, Self::Transport(_))
    }

    /// The kind this error is counted under in reports.
    pub fn kind(&self) -> String {
        match self {
            Self::Http {
                status,
                code: Some(c),
            } => format!("s3 {c}/{status}"),
            Self::Http { status, code: None } => format!("http {status}"),
            Self::Transport(what) => format!("transport {what}"),
            Self::Verify(VerifyError::Mismatch(_)) => "verify content".into(),
            Self::Verify(VerifyError::Length { .. }) => "verify length".into(),
            Self::Verify(VerifyError::ETag { .. }) => "verify etag".into(),
            Self::Verify(VerifyError::Document(_)) => "verify document".into(),
        }
    }
}

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Verify(VerifyError::Mismatch(m)) => write!(
                f,
                "{}: byte {} differs: expected {:#04x}, found {:#04x}",
                m.key, m.offset, m.expected, m.found
            ),
            Self::Verify(VerifyError::Length { key, expected, got }) => {
                write!(f, "{key}: {got} bytes, expected {expected}")
            }
            Self::Verify(VerifyError::ETag { key, expected, got }) => {
                write!(f, "{key}: ETag {got}, expected {expected}")
            }
            Self::Verify(VerifyError::Document(what)) => write!(f, "bad document: {what}"),
            other => f.write_str(&other.kind()),
        }
    }
}

impl From<HttpError> for OpError {
    fn from(e: HttpError) -> Self {
        Self::Transport(match e {
            HttpError::Protocol(e) => format!("protocol {}", e.kind.as_str()),
            HttpError::UnexpectedEof => "closed early".into(),
            HttpError::TimedOut => "timed out".into(),
            HttpError::Io(kind) => format!("{kind:?}"),
            HttpError::Usage(what) => format!("usage {what}"),
        })
    }
}

/// An error met on a connection, before it is reported: an HTTP error stays typed until core
/// has said whether it only means a stale kept-alive connection.
#[derive(Debug)]
pub(crate) enum CallError {
    /// The HTTP engine failed.
    Http(HttpError),
    /// Anything else: an error status, a signing failure, wrong content.
    Op(OpError),
}

impl From<HttpError> for CallError {
    fn from(e: HttpError) -> Self {
        Self::Http(e)
    }
}

impl From<OpError> for CallError {
    fn from(e: OpError) -> Self {
        Self::Op(e)
    }
}

impl From<CallError> for OpError {
    fn from(e: CallError) -> Self {
        match e {
            CallError::Http(e) => e.into(),
            CallError::Op(e) => e,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_kinds() {
        let e = OpError::Http {
            status: 404,
            code: Some("NoSuchKey".into()),
        };
        assert_eq!(e.kind(), "s3 NoSuchKey/404");
        assert_eq!(
            OpError::Http {
                status: 502,
                code: None
            }
            .kind(),
            "http 502"
        );
        assert_eq!(
            OpError::from(HttpError::TimedOut).kind(),
            "transport timed out"
        );
    }

    #[test]
    fn throttling_answers() {
        let http = |status, code: Option<&str>| OpError::Http {
            status,
            code: code.map(str::to_string),
        };
        for e in [
            http(503, Some("SlowDown")),
            http(503, Some("ServiceUnavailable")),
            http(503, None),
            http(429, None),
            http(400, Some("Throttling")),
            http(200, Some("SlowDown")),
        ] {
            assert!(e.is_throttling() && e.is_retryable(), "{e:?}");
        }
        for e in [
            http(500, Some("InternalError")),
            http(404, Some("NoSuchKey")),
            http(403, Some("AccessDenied")),
        ] {
            assert!(!e.is_throttling() && !e.is_retryable(), "{e:?}");
        }
        let lost = OpError::from(HttpError::UnexpectedEof);
        assert!(!lost.is_throttling() && lost.is_retryable());
    }
}
