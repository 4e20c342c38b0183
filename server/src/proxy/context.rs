//! What every proxy operation gets: the proxy and the request.

use std::sync::Arc;

use ferry_core::http::head::RequestHead;
use ferry_core::rt::Runtime;
use ferry_core::s3::sigv4::VerifiedRequest;
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

    /// The access key the client signed with.
    pub fn client_key(&self) -> &str {
        &self.verified.access_key_id
    }
}
