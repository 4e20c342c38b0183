//! The client's headers on the requests the proxy makes in its place: a DeleteObjects split by
//! backend, the deletes of a key's copies under earlier layouts, a bucket setting fanned out to
//! every backend, a DeleteBucket, a listing merged from every backend. Each is the client's
//! request as far as the nodes can tell, so it carries every end-to-end header the client
//! sent that may change what it means or how a node's policy judges it
//! (`x-amz-bypass-governance-retention`, `x-amz-expected-bucket-owner`,
//! `x-amz-request-payer`, `User-Agent` and `Referer` for `aws:UserAgent` and `aws:Referer`,
//! ...), not only those the proxy knows of.

use ferry_core::rt::Runtime;
use ferry_core::s3::cluster;
use ferry_core::s3::header;
use ferry_core::s3::outbound::is_auth_header;

use super::context::Cx;
use super::forward::Call;
use super::sign::is_hop_by_hop;

/// Which of the client's headers a request made in its place leaves out besides those no such
/// request carries (see [`Call::carry`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Leave {
    /// None: the request is the client's, split or fanned out.
    Nothing,
    /// Its conditions (`If-*`, `x-amz-if-*`): a delete of a key's other copies, which the
    /// client's conditions (judged where the object is) are not about.
    Conditions,
}

fn starts_with_ignore_case(s: &str, prefix: &str) -> bool {
    s.get(..prefix.len())
        .is_some_and(|p| p.eq_ignore_ascii_case(prefix))
}

/// Whether a client's header goes with a request the proxy makes in its place: not framing or
/// hop-by-hop ones, the signature and the `Host` (the request is signed anew), Ferry's own
/// (`x-ferry-*`: what the proxy tells its nodes, never a client's), nor those of the client's
/// body (`Content-*`, checksums, aws-chunked framing): the request has a body of its own, or
/// none.
pub(crate) fn is_carried(name: &str, leave: Leave) -> bool {
    let body = starts_with_ignore_case(name, "content-")
        || starts_with_ignore_case(name, header::X_AMZ_CHECKSUM_PREFIX)
        || [
            header::X_AMZ_SDK_CHECKSUM_ALGORITHM,
            header::X_AMZ_TRAILER,
            header::X_AMZ_DECODED_CONTENT_LENGTH,
        ]
        .iter()
        .any(|n| name.eq_ignore_ascii_case(n));
    let condition = starts_with_ignore_case(name, "if-")
        || starts_with_ignore_case(name, header::X_AMZ_IF_PREFIX);
    !(is_hop_by_hop(name)
        || is_auth_header(name)
        || cluster::is_internal(name)
        || body
        || (leave == Leave::Conditions && condition))
}

impl Call {
    /// Add the client's headers that go with this request made in its place ([`is_carried`]),
    /// but for those the call sets itself.
    pub fn carry<R: Runtime>(&mut self, cx: &Cx<'_, R>, leave: Leave) {
        for h in cx.head.headers {
            if !is_carried(h.name, leave) || self.has_header(h.name) {
                continue;
            }
            // A head's values are visible ASCII (the parser checked them).
            let value = String::from_utf8_lossy(h.value).into_owned();
            self.header(h.name.to_owned(), value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_request_made_for_the_client_carries() {
        for name in [
            "x-amz-bypass-governance-retention",
            "X-Amz-Expected-Bucket-Owner",
            "x-amz-request-payer",
            "User-Agent",
            "referer",
            "x-amz-meta-anything",
            "If-Match",
        ] {
            assert!(is_carried(name, Leave::Nothing), "{name}");
        }
        for name in [
            "Content-MD5",
            "content-type",
            "Content-Length",
            "x-amz-checksum-crc32",
            "x-amz-sdk-checksum-algorithm",
            "x-amz-trailer",
            "x-amz-decoded-content-length",
            "x-amz-content-sha256",
            "Authorization",
            "x-amz-date",
            "x-amz-security-token",
            "Host",
            "Transfer-Encoding",
            "Connection",
            "Expect",
            "x-ferry-client-ip",
            "x-ferry-fence",
            "x-ferry-version-id",
        ] {
            assert!(!is_carried(name, Leave::Nothing), "{name}");
        }
        for name in ["If-Match", "if-none-match", "x-amz-if-match-size"] {
            assert!(!is_carried(name, Leave::Conditions), "{name}");
        }
        assert!(is_carried(
            "x-amz-bypass-governance-retention",
            Leave::Conditions
        ));
    }
}
