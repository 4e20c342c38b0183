//! What every proxy operation gets: the proxy and the request.

use std::borrow::Cow;
use std::net::IpAddr;
use std::sync::Arc;

use ferry_core::http::head::RequestHead;
use ferry_core::rt::Runtime;
use ferry_core::s3::header;
use ferry_core::s3::sigv4::VerifiedRequest;
use ferry_core::s3::uri::{self, origin_form};
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
    /// Who the request is from, as the backends are told.
    pub caller: Caller,
    /// The raw query backends get instead of the client's, when the proxy changed it (a tagged
    /// upload id given back as its backend's own, for a backend the proxy re-signs for:
    /// `upload`). Such a request is re-signed, never passed through: the client's signature
    /// covers its query.
    pub query: Option<String>,
}

/// Who a request is from, told to the backends with every request made for it: the key the
/// client signed with (the proxy signs with the same key where the backend shares it), and
/// where it came from, for the nodes' policy conditions (`x-ferry-client-ip` and
/// `x-ferry-client-tls`, which a node takes only in a request the cluster sealed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Caller {
    /// The access key the client signed with.
    pub key: String,
    /// The client's address.
    pub ip: Option<IpAddr>,
    /// Whether the client came over TLS.
    pub secure: bool,
}

impl Caller {
    /// The proxy itself, asking with `key` (no client's address to tell).
    pub fn of_key(key: &str) -> Self {
        Self {
            key: key.to_owned(),
            ip: None,
            secure: false,
        }
    }

    /// The headers that tell a backend where the request came from.
    pub fn headers(&self) -> impl Iterator<Item = (&'static str, String)> + '_ {
        let ip = self
            .ip
            .map(|ip| (header::X_FERRY_CLIENT_IP, ip.to_string()));
        let tls = (
            header::X_FERRY_CLIENT_TLS,
            String::from(if self.secure { "true" } else { "false" }),
        );
        ip.into_iter().chain(std::iter::once(tls))
    }
}

impl<'a, R: Runtime> Cx<'a, R> {
    /// This request, with `query` (raw) sent to backends instead of the client's (`None`: the
    /// client's).
    pub fn with_query(&self, query: Option<String>) -> Self {
        Self {
            p: self.p,
            front: self.front,
            req: self.req,
            verified: self.verified,
            virtual_bucket: self.virtual_bucket,
            caller: self.caller.clone(),
            query,
        }
    }

    /// The raw query of the request as backends get it (presigned-URL parameters included).
    pub fn raw_query(&self) -> &str {
        match &self.query {
            Some(q) => q,
            None => origin_form(self.req.target)
                .split_once('?')
                .map_or("", |(_, q)| q),
        }
    }

    /// Backend `idx`.
    pub fn backend(&self, idx: usize) -> S3Result<&Backend<R>> {
        self.p
            .backends
            .get(idx)
            .map(|b| &**b)
            .ok_or_else(|| S3Error::with_message(S3ErrorCode::InternalError, "no such backend"))
    }

    /// Remember the backend the request goes to (by its slot, which names it whatever
    /// configuration is in use when the request is logged), or `front::ALL_BACKENDS`.
    pub fn set_backend(&self, idx: usize) {
        self.front
            .set_backend(self.p.backends.get(idx).map_or(idx, |b| b.slot));
    }

    /// The request's raw path as a backend takes it: path-style, `/bucket` put in front when
    /// the client addressed the bucket by its Host.
    pub fn backend_path<'p>(&self, raw_path: &'p str) -> Cow<'p, str> {
        match self.virtual_bucket {
            Some(b) => Cow::Owned(format!("/{}{raw_path}", uri::encode_path(b))),
            None => Cow::Borrowed(raw_path),
        }
    }

    /// Whether the client's request can go to a passthrough backend unchanged: SigV4,
    /// path-style (which a node accepts whatever its own `--domain`s and `--no-sigv2`) and its
    /// query as sent. Others are re-signed with the client's own key, which passthrough
    /// backends share.
    pub fn passes_through(&self) -> bool {
        self.virtual_bucket.is_none() && !self.verified.kind.is_sigv2() && self.query.is_none()
    }

    /// The access key the client signed with.
    pub fn client_key(&self) -> &str {
        &self.caller.key
    }

    /// Who the request is from.
    pub fn caller(&self) -> &Caller {
        &self.caller
    }
}
