//! The proxy's side of the upload ids it gives clients (`ferry_core::s3::upload_id`: a tag
//! naming the backend, then the backend's own id): which of its backends an id names, and the
//! id a client gets for a backend's upload. (Apart from `upload`, whose steps use them, so that
//! listings can too.)

use ferry_core::rt::Runtime;
use ferry_core::s3::upload_id;

use super::Proxy;
use super::backend::Backend;

/// The id a client gets for upload `id` of backend `b` (tagged once: an id a node echoed as it
/// was sent keeps its one tag).
pub(crate) fn carried<R: Runtime>(b: &Backend<R>, id: &str) -> String {
    upload_id::join(&b.upload_tag, id)
}

/// What an upload id a client sent says of where the upload is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UploadId<'a> {
    /// On backend `.0` (an index of the proxy's backends), whose own id is `.1`.
    At(usize, &'a str),
    /// Tagged with a tag no configured backend has.
    Unknown,
    /// Untagged: some backend's own id.
    Plain,
}

/// Read `id` against the backends of `p`.
pub(crate) fn parse<'a, R: Runtime>(p: &Proxy<R>, id: &'a str) -> UploadId<'a> {
    let Some((t, own)) = upload_id::split(id) else {
        return UploadId::Plain;
    };
    match p.backends.iter().position(|b| b.upload_tag == t) {
        Some(i) => UploadId::At(i, own),
        None => UploadId::Unknown,
    }
}
