//! What every proxy operation gets: the proxy and the request.

use std::borrow::Cow;
use std::sync::Arc;

use ferry_core::http::head::RequestHead;
use ferry_core::rt::Runtime;
use ferry_core::s3::sigv4::VerifiedRequest;
use ferry_core::s3::uri;
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};

use super::Proxy;
use super::backend::Backend;
use crate::front::Request;

/// What every operation needs besides its parameters.
pub(crate) struct Cx<'a, R: Runtime> {
    pub p: &'a Arc<Proxy<R>>,
    pub front: &'a Request<'a>,
    pub req: &'a RequestHead<'a, 'a>,
    pub verified: &'a VerifiedRequest,
    /// The bucket, when the Host named it (virtual-hosted-style): backends get path-style.
    pub virtual_bucket: Option<&'a str>,
}

impl<R: Runtime> Cx<'_, R> {
    /// Backend `idx`.
    pub fn backend(&self, idx: usize) -> S3Result<&Backend<R>> {
        self.p
            .backends
            .get(idx)
            .ok_or_else(|| S3Error::with_message(S3ErrorCode::InternalError, "no such backend"))
    }

    /// Remember the backend the request goes to.
    pub fn set_backend(&self, idx: usize) {
        self.front.set_backend(idx);
    }

    /// The request's raw path as a backend takes it: path-style, `/bucket` put in front when
    /// the client addressed the bucket by its Host.
    pub fn backend_path<'p>(&self, raw_path: &'p str) -> Cow<'p, str> {
        match self.virtual_bucket {
            Some(b) => Cow::Owned(format!("/{}{raw_path}", uri::encode_path(b))),
            None => Cow::Borrowed(raw_path),
        }
    }

    /// Whether the client's request can go to a passthrough backend unchanged: SigV4 and
    /// path-style, which a node accepts whatever its own `--domain`s and `--no-sigv2`. Others
    /// are re-signed with the client's own key, which passthrough backends share.
    pub fn passes_through(&self) -> bool {
        self.virtual_bucket.is_none() && !self.verified.kind.is_sigv2()
    }

    /// The access key the client signed with.
    pub fn client_key(&self) -> &str {
        &self.verified.access_key_id
    }
}
