//! The node ([`NodeApi`]: runtime, store, region, owner) and what every operation gets
//! ([`Cx`]: the node and the request).

use std::sync::atomic::AtomicU64;

use ferry_core::http::Header;
use ferry_core::rt::Runtime;

use ferry_core::s3::sigv4::{Hex64, sha256};

use super::NodeConfig;
use crate::front::Request;
use crate::store::Store;

/// The storage node: the S3 operations over its store, written once over any [`Runtime`].
#[derive(Debug)]
pub struct NodeApi<R> {
    pub(super) rt: R,
    pub(super) store: Store,
    pub(super) region: String,
    pub(super) owner_id: String,
    /// Whether GET bodies may go out with `sendfile(2)` (`NodeConfig::sendfile`).
    pub(super) sendfile: bool,
    /// Whether GET and HEAD look the object up on the runtime thread (`NodeConfig::open_inline`).
    pub(super) open_inline: bool,
    /// Body bytes sent with `sendfile(2)` (`ferry_node_sendfile_bytes_total`).
    pub(super) sendfile_bytes: AtomicU64,
}

impl<R: Runtime> NodeApi<R> {
    /// The node serving `store` on `rt`, with the region and owner of `cfg`.
    pub fn new(rt: R, store: Store, cfg: &NodeConfig) -> Self {
        Self {
            rt,
            store,
            region: cfg.region.clone(),
            owner_id: Hex64::of(&sha256(cfg.access_key.as_bytes()))
                .as_str()
                .to_owned(),
            sendfile: cfg.sendfile,
            open_inline: cfg.open_inline,
            sendfile_bytes: AtomicU64::new(0),
        }
    }
}

/// What every operation needs besides its parameters.
pub(crate) struct Cx<'a, R> {
    pub node: &'a NodeApi<R>,
    pub req: &'a Request<'a>,
    pub headers: &'a [Header<'a>],
    pub id: &'a str,
}

impl<'a, R: Runtime> Cx<'a, R> {
    pub(crate) fn new(node: &'a NodeApi<R>, req: &'a Request<'a>) -> Self {
        Self {
            node,
            req,
            headers: req.head.headers,
            id: req.id,
        }
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

    pub(crate) fn owner_id(&self) -> &str {
        &self.node.owner_id
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
}
