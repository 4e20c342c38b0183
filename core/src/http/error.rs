//! What goes wrong in HTTP: the peer's bytes break the protocol or a limit ([`ProtocolError`],
//! with the status to answer), the transport fails, a timer runs out, or the caller misuses an
//! engine ([`HttpError`]); and which side of a relay failed ([`RelayError`]).
//!
//! HTTP knows nothing of S3: the S3 layer maps these to its own error codes where a handler
//! answers (`impl From<HttpError> for S3Error` in `crate::s3`).

use alloc::borrow::Cow;
use core::fmt;

use embedded_io::ErrorKind;

use crate::rt::{SpliceError, TimedOut};

/// Which rule of HTTP the peer broke; each has the status a server answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProtocolErrorKind {
    /// Malformed syntax or framing (a request-smuggling shape, a bad chunk): 400.
    Malformed,
    /// The head or a trailer section is larger than allowed, or has too many fields: 431.
    HeadTooLarge,
    /// The request-target is longer than allowed: 414.
    TargetTooLong,
    /// The body is longer than allowed: 413.
    BodyTooLarge,
}

impl ProtocolErrorKind {
    /// The kind's name, for logs and reports.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Malformed => "Malformed",
            Self::HeadTooLarge => "HeadTooLarge",
            Self::TargetTooLong => "TargetTooLong",
            Self::BodyTooLarge => "BodyTooLarge",
        }
    }

    /// The HTTP status a server answers this with.
    pub const fn status(self) -> u16 {
        match self {
            Self::Malformed => 400,
            Self::HeadTooLarge => 431,
            Self::TargetTooLong => 414,
            Self::BodyTooLarge => 413,
        }
    }
}

/// The peer's bytes broke HTTP framing or a limit: what, and in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError {
    /// The rule broken.
    pub kind: ProtocolErrorKind,
    /// What exactly, for the error response and the log.
    pub message: Cow<'static, str>,
}

impl ProtocolError {
    /// An error of `kind` described by `message`.
    pub fn new(kind: ProtocolErrorKind, message: impl Into<Cow<'static, str>>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// Malformed syntax or framing.
    pub fn malformed(message: &'static str) -> Self {
        Self::new(ProtocolErrorKind::Malformed, message)
    }

    /// The HTTP status a server answers this with.
    pub const fn status(&self) -> u16 {
        self.kind.status()
    }
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.status(),
            self.kind.as_str(),
            self.message
        )
    }
}

impl core::error::Error for ProtocolError {}

/// Why an HTTP exchange failed; each variant says what the connection can still do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpError {
    /// The peer broke HTTP framing or a limit; answer with the error's status, then close.
    Protocol(ProtocolError),
    /// The peer closed the connection before the message ended; close.
    UnexpectedEof,
    /// A read or write did not complete within its timeout; close.
    TimedOut,
    /// The transport failed (reset, broken pipe, ...); close.
    Io(ErrorKind),
    /// The caller misused the engine (e.g. more body than the declared length); close.
    Usage(&'static str),
}

impl HttpError {
    /// Whether the error came from the peer's bytes (as opposed to the transport or the caller).
    pub fn is_protocol(&self) -> bool {
        matches!(self, Self::Protocol(_))
    }

    /// The status a server answers with: the protocol error's own, 408 for a timeout, 400 for
    /// a body cut short, 500 for the rest (nothing the peer did).
    pub fn status(&self) -> u16 {
        match self {
            Self::Protocol(e) => e.status(),
            Self::TimedOut => 408,
            Self::UnexpectedEof => 400,
            Self::Io(_) | Self::Usage(_) => 500,
        }
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Protocol(e) => write!(f, "{e}"),
            Self::UnexpectedEof => f.write_str("connection closed before the message ended"),
            Self::TimedOut => f.write_str("timed out"),
            Self::Io(kind) => write!(f, "I/O error: {kind:?}"),
            Self::Usage(what) => write!(f, "HTTP engine misuse: {what}"),
        }
    }
}

impl core::error::Error for HttpError {}

impl embedded_io::Error for HttpError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::Protocol(_) => ErrorKind::InvalidData,
            Self::UnexpectedEof => ErrorKind::ConnectionAborted,
            Self::TimedOut => ErrorKind::TimedOut,
            Self::Io(kind) => *kind,
            Self::Usage(_) => ErrorKind::InvalidInput,
        }
    }
}

impl From<ProtocolError> for HttpError {
    fn from(e: ProtocolError) -> Self {
        Self::Protocol(e)
    }
}

impl From<TimedOut> for HttpError {
    fn from(_: TimedOut) -> Self {
        Self::TimedOut
    }
}

/// Why relaying a body from one connection to another stopped: which side failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RelayError {
    /// The body being read (its framing, its peer, its transport).
    Source(HttpError),
    /// The message being written.
    Sink(HttpError),
}

impl RelayError {
    /// The error, whichever side it came from.
    pub fn into_inner(self) -> HttpError {
        match self {
            Self::Source(e) | Self::Sink(e) => e,
        }
    }

    /// A failed splice, by side.
    pub(crate) fn spliced(e: SpliceError<ErrorKind>) -> Self {
        match e {
            SpliceError::Source(k) => Self::Source(io_error(k)),
            SpliceError::Sink(k) => Self::Sink(io_error(k)),
        }
    }
}

impl From<RelayError> for HttpError {
    fn from(e: RelayError) -> Self {
        e.into_inner()
    }
}

/// Map a stream error: timeouts keep their meaning, everything else is transport failure.
pub(crate) fn io_error(kind: ErrorKind) -> HttpError {
    match kind {
        ErrorKind::TimedOut => HttpError::TimedOut,
        kind => HttpError::Io(kind),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_stream_errors() {
        let e = ProtocolError::new(ProtocolErrorKind::TargetTooLong, "long");
        assert_eq!(HttpError::from(e).status(), 414);
        assert_eq!(ProtocolErrorKind::HeadTooLarge.status(), 431);
        assert_eq!(HttpError::TimedOut.status(), 408);
        assert_eq!(io_error(ErrorKind::TimedOut), HttpError::TimedOut);
        assert_eq!(
            io_error(ErrorKind::ConnectionReset),
            HttpError::Io(ErrorKind::ConnectionReset)
        );
    }
}
