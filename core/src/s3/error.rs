//! One S3 error type: the code, the HTTP status and a message.
//!
//! Every S3 layer (request model, SigV4, XML, storage) reports failures as an [`S3Error`];
//! HTTP's own errors map to S3 codes here, where an S3 handler answers them.

use alloc::borrow::Cow;
use alloc::string::String;
use core::fmt;

use crate::http::server::HandlerError;
use crate::http::{HttpError, ProtocolError, ProtocolErrorKind, RelayError};

macro_rules! s3_error_codes {
    (@code $name:ident) => { stringify!($name) };
    (@code $name:ident $code:literal) => { $code };
    ($($name:ident $(($code:literal))? => $status:literal, $msg:literal;)*) => {
        /// An S3 error code, as named in the S3 API reference ("Error responses").
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum S3ErrorCode {
            $(#[doc = $msg] $name,)*
        }

        impl S3ErrorCode {
            /// The code as it appears in `<Code>` of the XML error body.
            pub const fn as_str(self) -> &'static str {
                match self { $(Self::$name => s3_error_codes!(@code $name $($code)?),)* }
            }

            /// The HTTP status S3 answers this code with.
            pub const fn status(self) -> u16 {
                match self { $(Self::$name => $status,)* }
            }

            /// The default message (S3's own wording where it has one).
            pub const fn default_message(self) -> &'static str {
                match self { $(Self::$name => $msg,)* }
            }

            /// Every code, for tests and documentation.
            pub const ALL: &'static [S3ErrorCode] = &[$(Self::$name,)*];
        }
    };
}

s3_error_codes! {
    AccessControlListNotSupported => 400, "The bucket does not allow ACLs";
    AccessDenied => 403, "Access Denied";
    AccessForbidden => 403, "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec.";
    AuthorizationHeaderMalformed => 400, "The authorization header is malformed.";
    AuthorizationQueryParametersError => 400, "Error parsing the X-Amz-Credential parameter.";
    BadDigest => 400, "The Content-MD5 or checksum you specified did not match what we received.";
    BadRequest => 400, "Bad Request";
    BucketAlreadyExists => 409, "The requested bucket name is not available.";
    BucketAlreadyOwnedByYou => 409, "Your previous request to create the named bucket succeeded and you already own it.";
    BucketNotEmpty => 409, "The bucket you tried to delete is not empty.";
    EntityTooLarge => 400, "Your proposed upload exceeds the maximum allowed object size.";
    EntityTooSmall => 400, "Your proposed upload is smaller than the minimum allowed object size.";
    ExpiredToken => 400, "The provided token has expired.";
    IllegalLocationConstraintException => 400, "The location constraint you specified is not the region this endpoint serves.";
    IncorrectNumberOfFilesInPostRequest => 400, "POST requires exactly one file upload per request.";
    IncompleteBody => 400, "You did not provide the number of bytes specified by the Content-Length HTTP header.";
    InsufficientStorage => 507, "There is not enough space left on the storage to complete the request.";
    InternalError => 500, "We encountered an internal error. Please try again.";
    InvalidAccessKeyId => 403, "The AWS access key ID you provided does not exist in our records.";
    InvalidBucketState => 409, "The request is not valid with the current state of the bucket.";
    InvalidArgument => 400, "Invalid Argument";
    InvalidBucketAclWithObjectOwnership => 400, "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting";
    InvalidBucketName => 400, "The specified bucket is not valid.";
    InvalidDigest => 400, "The Content-MD5 you specified is not valid.";
    InvalidEncryptionAlgorithmError => 400, "The encryption request that you specified is not valid. The valid value is AES256.";
    InvalidPart => 400, "One or more of the specified parts could not be found.";
    InvalidPartNumber => 416, "The requested partnumber is not satisfiable";
    InvalidPartOrder => 400, "The list of parts was not in ascending order.";
    InvalidPolicyDocument => 400, "The content of the form does not meet the conditions specified in the policy document.";
    InvalidRange => 416, "The requested range is not satisfiable";
    InvalidRequest => 400, "Invalid Request";
    InvalidRetentionPeriod => 400, "The retention period must be a positive integer, of at most 100 years.";
    InvalidTag => 400, "The tag provided was not a valid tag.";
    // S3 answers a KMS key that does not exist with KMS's error, prefixed (not an identifier).
    KmsNotFound("KMS.NotFoundException") => 400, "The specified KMS key does not exist.";
    KeyTooLongError => 400, "Your key is too long.";
    MalformedACLError => 400, "The XML you provided was not well-formed or did not validate against our published schema.";
    MalformedPolicy => 400, "Policies must be valid JSON and the first byte must be '{'";
    MalformedPOSTRequest => 400, "The body of your POST request is not well-formed multipart/form-data.";
    MalformedTrailerError => 400, "The request contained trailing data that was not well-formed or did not conform to our published schema.";
    MalformedXML => 400, "The XML you provided was not well-formed or did not validate against our published schema.";
    MaxPostPreDataLengthExceeded => 400, "Your POST request fields preceding the upload file were too large.";
    MetadataTooLarge => 400, "Your metadata headers exceed the maximum allowed metadata size.";
    MethodNotAllowed => 405, "The specified method is not allowed against this resource.";
    MissingContentLength => 411, "You must provide the Content-Length HTTP header.";
    MissingSecurityHeader => 400, "Your request is missing a required header.";
    NoSuchCORSConfiguration => 404, "The CORS configuration does not exist";
    NoSuchBucket => 404, "The specified bucket does not exist.";
    NoSuchBucketPolicy => 404, "The bucket policy does not exist";
    NoSuchObjectLockConfiguration => 404, "The specified object does not have a ObjectLock configuration";
    NoSuchKey => 404, "The specified key does not exist.";
    NoSuchLifecycleConfiguration => 404, "The lifecycle configuration does not exist";
    NoSuchPublicAccessBlockConfiguration => 404, "The public access block configuration was not found";
    NoSuchTagSet => 404, "The TagSet does not exist";
    NoSuchUpload => 404, "The specified multipart upload does not exist.";
    NoSuchVersion => 404, "The specified version does not exist.";
    NotImplemented => 501, "A header or query you provided implies functionality that is not implemented.";
    NotModified => 304, "Not Modified";
    ObjectLockConfigurationNotFoundError => 404, "Object Lock configuration does not exist for this bucket";
    OperationAborted => 409, "A conflicting conditional operation is currently in progress against this resource. Try again.";
    OwnershipControlsNotFoundError => 404, "The bucket ownership controls were not found";
    PreconditionFailed => 412, "At least one of the preconditions you specified did not hold.";
    RequestHeaderSectionTooLarge => 431, "Your request header section exceeds the maximum allowed size.";
    RequestTimeTooSkewed => 403, "The difference between the request time and the server's time is too large.";
    RequestTimeout => 400, "Your socket connection to the server was not read from or written to within the timeout period.";
    RequestUriTooLong => 414, "The request URI is too long.";
    ServerSideEncryptionConfigurationNotFoundError => 404, "The server side encryption configuration was not found";
    ServiceUnavailable => 503, "Service is unable to handle request.";
    SignatureDoesNotMatch => 403, "The request signature we calculated does not match the signature you provided.";
    SlowDown => 503, "Please reduce your request rate.";
    UnexpectedContent => 400, "This request does not support content.";
    XAmzContentSHA256Mismatch => 400, "The provided 'x-amz-content-sha256' header does not match what was computed.";
}

impl fmt::Display for S3ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An S3 error: code (which fixes the status) and a message for the `<Message>` element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Error {
    /// The S3 error code.
    pub code: S3ErrorCode,
    /// Human-readable detail; the code's default message unless a caller said more.
    pub message: Cow<'static, str>,
}

impl S3Error {
    /// An error with the code's default message.
    pub const fn new(code: S3ErrorCode) -> Self {
        Self {
            code,
            message: Cow::Borrowed(code.default_message()),
        }
    }

    /// An error with a specific message.
    pub fn with_message(code: S3ErrorCode, message: impl Into<Cow<'static, str>>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// The HTTP status to answer with.
    pub const fn status(&self) -> u16 {
        self.code.status()
    }

    /// Whether it is a 503 that asks the client to come back (`ServiceUnavailable`,
    /// `SlowDown`): answered with `Retry-After`, and SDKs retry it after a back-off.
    pub const fn is_unavailable(&self) -> bool {
        matches!(
            self.code,
            S3ErrorCode::ServiceUnavailable | S3ErrorCode::SlowDown
        )
    }

    /// Replace the message, keeping the code.
    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.message = Cow::Owned(message.into());
        self
    }
}

/// How an HTTP failure is reported to an S3 client: S3's own codes for the limits, for
/// timeouts and for bodies cut short.
impl From<HttpError> for S3Error {
    fn from(e: HttpError) -> Self {
        match e {
            HttpError::Protocol(e) => e.into(),
            HttpError::UnexpectedEof => S3Error::new(S3ErrorCode::IncompleteBody),
            HttpError::TimedOut => S3Error::new(S3ErrorCode::RequestTimeout),
            HttpError::Io(_) => {
                S3Error::with_message(S3ErrorCode::InternalError, "connection failed")
            }
            HttpError::Usage(what) => S3Error::with_message(S3ErrorCode::InternalError, what),
        }
    }
}

impl From<ProtocolError> for S3Error {
    fn from(e: ProtocolError) -> Self {
        let code = match e.kind {
            ProtocolErrorKind::Malformed => S3ErrorCode::InvalidRequest,
            ProtocolErrorKind::HeadTooLarge => S3ErrorCode::RequestHeaderSectionTooLarge,
            ProtocolErrorKind::TargetTooLong => S3ErrorCode::RequestUriTooLong,
            // S3 answers an oversized body with 400 EntityTooLarge, not HTTP's 413.
            ProtocolErrorKind::BodyTooLarge => S3ErrorCode::EntityTooLarge,
        };
        S3Error::with_message(code, e.message)
    }
}

impl From<RelayError> for S3Error {
    fn from(e: RelayError) -> Self {
        e.into_inner().into()
    }
}

/// S3 handlers answer in S3 errors; the HTTP engine's own failures become one.
impl HandlerError for S3Error {
    fn status(&self) -> u16 {
        self.code.status()
    }
}

impl From<S3ErrorCode> for S3Error {
    fn from(code: S3ErrorCode) -> Self {
        Self::new(code)
    }
}

impl fmt::Display for S3Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.code,
            self.code.status(),
            self.message
        )
    }
}

impl core::error::Error for S3Error {}

/// Shorthand for results whose error is an [`S3Error`].
pub type S3Result<T> = Result<T, S3Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_have_s3_statuses() {
        assert_eq!(S3ErrorCode::NoSuchKey.status(), 404);
        assert_eq!(S3ErrorCode::NoSuchKey.as_str(), "NoSuchKey");
        assert_eq!(S3ErrorCode::InvalidRange.status(), 416);
        assert_eq!(S3ErrorCode::NotImplemented.status(), 501);
        assert_eq!(S3ErrorCode::RequestTimeTooSkewed.status(), 403);
        assert_eq!(S3ErrorCode::KmsNotFound.as_str(), "KMS.NotFoundException");
        assert_eq!(S3ErrorCode::KmsNotFound.status(), 400);
        for code in S3ErrorCode::ALL {
            let s = code.status();
            assert!((300..600).contains(&s), "{code} has status {s}");
            assert!(!code.default_message().is_empty());
        }
    }

    #[test]
    fn http_errors_map_to_s3_codes() {
        assert_eq!(
            S3Error::from(HttpError::TimedOut).code,
            S3ErrorCode::RequestTimeout
        );
        assert_eq!(
            S3Error::from(HttpError::UnexpectedEof).code,
            S3ErrorCode::IncompleteBody
        );
        let cases = [
            (ProtocolErrorKind::Malformed, S3ErrorCode::InvalidRequest),
            (
                ProtocolErrorKind::HeadTooLarge,
                S3ErrorCode::RequestHeaderSectionTooLarge,
            ),
            (
                ProtocolErrorKind::TargetTooLong,
                S3ErrorCode::RequestUriTooLong,
            ),
            (ProtocolErrorKind::BodyTooLarge, S3ErrorCode::EntityTooLarge),
        ];
        for (kind, code) in cases {
            let e = S3Error::from(HttpError::Protocol(ProtocolError::new(kind, "why")));
            assert_eq!((e.code, &*e.message), (code, "why"));
        }
    }

    #[test]
    fn error_message_overrides_default() {
        let e = S3Error::new(S3ErrorCode::InvalidArgument).message("max-keys must be a number");
        assert_eq!(e.status(), 400);
        assert_eq!(e.message, "max-keys must be a number");
    }
}
