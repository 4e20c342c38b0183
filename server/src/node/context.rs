//! The node ([`NodeApi`]: runtime, store, region, owner) and what every operation gets
//! ([`Cx`]: the node and the request).

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use ferry_core::http::Header;
use ferry_core::rt::Runtime;
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};

use super::NodeConfig;
use super::lifecycle_worker::LifecycleStats;
use crate::front::Request;
use crate::front::origin::Origin;
use crate::store::{HeadOptions, ObjectInfo, Store, VersionId};
use crate::users::{User, Users};

/// The storage node: the S3 operations over its store, written once over any [`Runtime`].
#[derive(Debug)]
pub struct NodeApi<R> {
    pub(super) rt: R,
    pub(super) store: Store,
    pub(super) region: String,
    /// Who may sign requests, and who they are.
    pub(super) users: Users,
    /// The keys of the cluster's seals (`NodeConfig::cluster_keys`).
    pub(super) cluster: Option<ferry_core::s3::cluster::ClusterKeys>,
    /// Whether GET bodies may go out with `sendfile(2)` (`NodeConfig::sendfile`).
    pub(super) sendfile: bool,
    /// Whether GET and HEAD look the object up on the runtime thread (`NodeConfig::open_inline`).
    pub(super) open_inline: bool,
    /// Body bytes sent with `sendfile(2)` (`ferry_node_sendfile_bytes_total`).
    pub(super) sendfile_bytes: AtomicU64,
    /// Body bytes read from the page cache on a runtime thread, not handed to the blocking
    /// pool (`ferry_node_cached_read_bytes_total`).
    pub(super) cached_read_bytes: AtomicU64,
    /// The length of a lifecycle day in seconds (`NodeConfig::lifecycle_day_secs`).
    pub(super) day_secs: u64,
    /// What the lifecycle worker did (`ferry_node_lifecycle_*`).
    pub(super) lifecycle: Arc<LifecycleStats>,
    /// Whether SSE-C keys are taken over plain HTTP (`NodeConfig::allow_sse_c_over_http`).
    pub(super) sse_c_over_http: bool,
    /// Whether SigV2 is accepted (`NodeConfig::sigv2`): in POST forms as in requests.
    pub(super) sigv2: bool,
}

impl<R: Runtime> NodeApi<R> {
    /// The node serving `store` on `rt` for `users`, with the region of `cfg`.
    pub fn new(rt: R, store: Store, cfg: &NodeConfig, users: Users) -> Self {
        Self {
            rt,
            store,
            region: cfg.region.clone(),
            users,
            cluster: cfg.cluster_keys.clone(),
            sendfile: cfg.sendfile,
            open_inline: cfg.open_inline,
            sse_c_over_http: cfg.allow_sse_c_over_http,
            sigv2: cfg.sigv2,
            sendfile_bytes: AtomicU64::new(0),
            cached_read_bytes: AtomicU64::new(0),
            day_secs: cfg.lifecycle_day_secs.max(1),
            lifecycle: Arc::default(),
        }
    }
}

/// A node going away waits for a lifecycle pass in progress, which stops at its next batch:
/// its store is then closed with it (a node restarted on the same directory can open it).
impl<R> Drop for NodeApi<R> {
    fn drop(&mut self) {
        self.lifecycle.close();
    }
}

/// What every operation needs besides its parameters.
pub(crate) struct Cx<'a, R> {
    pub node: &'a NodeApi<R>,
    /// The front's request.
    pub front: &'a Request<'a>,
    /// Its headers (`front.head.headers`).
    pub headers: &'a [Header<'a>],
    /// Its id (`front.id`).
    pub id: &'a str,
    /// Who signed the request; `None` for an anonymous one.
    pub caller: Option<&'a Arc<User>>,
    /// Where it comes from.
    pub origin: Origin,
    /// Whether the caller is a POST Object form's signer who signed with SigV2 (its
    /// `s3:signatureversion` is `AWS`).
    pub form_sigv2: bool,
}

impl<'a, R: Runtime> Cx<'a, R> {
    /// The context of `req`: `AccessDenied` if its signer is not a user (the front checked the
    /// signature against the same users, so only a stale key could be).
    pub(crate) fn new(
        node: &'a NodeApi<R>,
        front: &'a Request<'a>,
        origin: Origin,
    ) -> S3Result<Self> {
        let caller = if front.verified.is_anonymous() {
            None
        } else {
            let user = node
                .users
                .by_access_key(&front.verified.access_key_id)
                .ok_or_else(|| S3Error::new(S3ErrorCode::AccessDenied))?;
            Some(user)
        };
        Ok(Self {
            node,
            front,
            headers: front.head.headers,
            id: front.id,
            caller,
            origin,
            form_sigv2: false,
        })
    }

    pub(crate) fn rt(&self) -> &R {
        &self.node.rt
    }

    pub(crate) fn store(&self) -> Store {
        self.node.store.clone()
    }

    pub(crate) fn region(&self) -> &str {
        &self.node.region
    }

    /// The signer: `AccessDenied` for an anonymous request (for what only users may do).
    pub(crate) fn user(&self) -> S3Result<&'a Arc<User>> {
        self.caller
            .ok_or_else(|| S3Error::new(S3ErrorCode::AccessDenied))
    }

    /// The signer's canonical id, if the request is signed.
    pub(crate) fn caller_id(&self) -> Option<&'a str> {
        self.caller.map(|u| u.canonical_id.as_str())
    }

    /// The users the node knows.
    pub(crate) fn users(&self) -> &Users {
        &self.node.users
    }

    /// Run a blocking store call off the reactor.
    pub(crate) async fn unblock<T, F>(&self, f: F) -> T
    where
        F: FnOnce(Store) -> T + Send + 'static,
        T: Send + 'static,
    {
        let store = self.store();
        self.node.rt.unblock(move || f(store)).await
    }

    /// The record of `version` of `bucket`/`key` (the current one if `None`), read on the
    /// blocking pool, for a subresource's Get (ACL, tags, retention): no SSE-C key is asked.
    pub(crate) async fn head_version(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionId>,
    ) -> S3Result<ObjectInfo> {
        let (b, k) = (bucket.to_owned(), key.to_owned());
        self.unblock(move |store| {
            store.head_object(
                &b,
                &k,
                HeadOptions {
                    version,
                    ..HeadOptions::default()
                },
            )
        })
        .await
    }
}
