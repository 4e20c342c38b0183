//! CopyObject and UploadPartCopy between two backends: the proxy GETs the source from one and
//! streams it into a PUT to the other (`transfer`, the rebalance's mechanism too), the copy's
//! headers read as S3 reads them: which of the source's and of the request's go with the
//! write.

use std::borrow::Cow;
use std::sync::atomic::Ordering;

use ferry_core::http::server::ResponseWriter;
use ferry_core::http::{Header, find_header};
use ferry_core::rt::{Runtime, Stream};
use ferry_core::s3::checksum::ChecksumAlgorithm;
use ferry_core::s3::header;
use ferry_core::s3::outbound::{OutHeader, strip_presign};
use ferry_core::s3::request::{CopySource, MetadataDirective, S3Request, UploadPartCopyQuery};
use ferry_core::s3::tagging::{self, TaggingDirective};
use ferry_core::s3::uri::origin_form;
use ferry_core::s3::xml::{Checksums, CopyKind, CopyResult};
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};

use super::context::Cx;
use super::transfer::{
    Extent, Framing, Keep, KeepChecksum, Read, Transfer, Unmetered, Write, is_encryption_header,
    is_object_header, starts_with_ignore_case, transfer,
};
use crate::front::Headers;

/// What a copy copies: CopyObject's source with its metadata directive, or UploadPartCopy's
/// source with its range.
#[derive(Debug, Clone, Copy)]
pub(crate) enum CopyOf<'q, 'a> {
    /// CopyObject.
    Object {
        source: &'q CopySource<'a>,
        metadata_directive: MetadataDirective,
    },
    /// UploadPartCopy.
    Part(&'q UploadPartCopyQuery<'a>),
}

impl<'q, 'a> CopyOf<'q, 'a> {
    /// The object copied.
    pub(crate) fn source(self) -> &'q CopySource<'a> {
        match self {
            Self::Object { source, .. } => source,
            Self::Part(q) => &q.source,
        }
    }
}

/// The copy's headers that go with its read of the source, and as what: what a node's policy
/// conditions see (`aws:UserAgent`, `aws:Referer`) and the source's expected owner.
const CARRIED_TO_SOURCE: [(&str, &str); 4] = [
    (header::USER_AGENT, header::USER_AGENT),
    (header::REFERER, header::REFERER),
    (header::X_AMZ_REQUEST_PAYER, header::X_AMZ_REQUEST_PAYER),
    (
        header::X_AMZ_SOURCE_EXPECTED_BUCKET_OWNER,
        header::X_AMZ_EXPECTED_BUCKET_OWNER,
    ),
];

/// The copy's headers that go with its write of the destination, besides the object's own.
const CARRIED_TO_DESTINATION: [&str; 4] = [
    header::USER_AGENT,
    header::REFERER,
    header::X_AMZ_REQUEST_PAYER,
    header::X_AMZ_EXPECTED_BUCKET_OWNER,
];

/// The SSE-C header of a GET that a copy's `x-amz-copy-source-server-side-encryption-customer-*`
/// header is, when it is one.
fn source_key_header(name: &str) -> Option<String> {
    const SOURCE: &str = header::X_AMZ_COPY_SOURCE_SSE_CUSTOMER_PREFIX;
    starts_with_ignore_case(name, SOURCE).then(|| {
        format!(
            "{}{}",
            header::X_AMZ_SSE_CUSTOMER_PREFIX,
            &name[SOURCE.len()..]
        )
    })
}

/// The headers of a copy's read of its source, from the copy's request: the copy-source
/// conditions as ordinary ones, an SSE-C source's key (which the copy gives as the source's),
/// and the client's headers that a node's policy sees.
fn read_headers<'h>(client: &'h [Header<'h>]) -> Vec<OutHeader<'h>> {
    let mut out: Vec<OutHeader<'h>> = Vec::new();
    for (from, to) in [
        (header::X_AMZ_COPY_SOURCE_IF_MATCH, "If-Match"),
        (header::X_AMZ_COPY_SOURCE_IF_NONE_MATCH, "If-None-Match"),
        (
            header::X_AMZ_COPY_SOURCE_IF_MODIFIED_SINCE,
            "If-Modified-Since",
        ),
        (
            header::X_AMZ_COPY_SOURCE_IF_UNMODIFIED_SINCE,
            "If-Unmodified-Since",
        ),
    ] {
        if let Some(v) = find_header(client, from) {
            out.push((Cow::Borrowed(to), Cow::Borrowed(v)));
        }
    }
    for h in client {
        if let Some(name) = source_key_header(h.name) {
            out.push((Cow::Owned(name), Cow::Borrowed(h.value)));
        }
    }
    for (from, to) in CARRIED_TO_SOURCE {
        if let Some(v) = find_header(client, from) {
            out.push((Cow::Borrowed(to), Cow::Borrowed(v)));
        }
    }
    out
}

/// Whether a header of a copy's request (of `kind`, its directives these) goes with its write:
/// of an object, its metadata when the request replaces the source's, its tags when it
/// replaces theirs, its storage class and conditions, and its ACL and object lock (never the
/// source's); of both kinds, its encryption (the destination node decides, as for a PUT: its
/// own key, an SSE-C key in flight, or its bucket's default) and the headers a node's policy
/// sees.
fn goes_to_destination(
    name: &str,
    kind: CopyKind,
    directive: MetadataDirective,
    tagging: TaggingDirective,
) -> bool {
    let is = |n: &str| name.eq_ignore_ascii_case(n);
    let object = kind == CopyKind::Object
        && ((directive == MetadataDirective::Replace && is_object_header(name))
            || (tagging == TaggingDirective::Replace && is(header::X_AMZ_TAGGING))
            || [
                header::X_AMZ_STORAGE_CLASS,
                header::IF_MATCH,
                header::IF_NONE_MATCH,
                header::X_AMZ_ACL,
            ]
            .into_iter()
            .any(is)
            || starts_with_ignore_case(name, header::X_AMZ_GRANT_PREFIX)
            || starts_with_ignore_case(name, header::X_AMZ_OBJECT_LOCK_PREFIX));
    object || is_encryption_header(name) || CARRIED_TO_DESTINATION.into_iter().any(is)
}

/// Copy from backend `src` to backend `dst` (they differ).
pub(crate) async fn copy_across<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    s3: &S3Request<'_>,
    copy: CopyOf<'_, '_>,
    src: usize,
    dst: usize,
) -> S3Result<()> {
    // The proxy writes the copy with the headers it knows: what the router refused would be
    // dropped on the way, not refused by the backend.
    if let Some(e) = &s3.refused {
        return Err(e.clone());
    }
    let (source, directive, range, kind) = match copy {
        CopyOf::Object {
            source,
            metadata_directive,
        } => (source, metadata_directive, None, CopyKind::Object),
        CopyOf::Part(q) => (
            &q.source,
            MetadataDirective::Replace,
            q.source_range,
            CopyKind::Part,
        ),
    };
    let client_headers = cx.head.headers;
    let tagging_directive = match kind {
        CopyKind::Object => {
            TaggingDirective::parse(find_header(client_headers, header::X_AMZ_TAGGING_DIRECTIVE))?
        }
        CopyKind::Part => TaggingDirective::Replace,
    };
    // Bad tags are refused before anything is read (the destination would refuse them too).
    if tagging_directive == TaggingDirective::Replace
        && let Some(v) = find_header(client_headers, header::X_AMZ_TAGGING)
    {
        tagging::parse_header(v)?;
    }

    // A checksum the copy asks for is computed by the proxy as it streams, and sent as the
    // PUT's aws-chunked trailer, which the destination checks and stores (as a node computes
    // it for a copy it makes itself).
    let requested = match kind {
        CopyKind::Object => ferry_core::s3::checksum::requested_algorithm(client_headers)?,
        CopyKind::Part => None,
    };

    let version = source.version_id.as_ref().map(ToString::to_string);
    let read = Read {
        extent: range.map_or(Extent::Whole, Extent::Range),
        headers: read_headers(client_headers),
        ..Read::whole(&source.bucket, &source.key, version.as_deref())
    };
    // A copy with the COPY directive keeps the source's metadata and checksum, as on one
    // node; its tags with the COPY tagging directive.
    let copies_source = kind == CopyKind::Object && directive == MetadataDirective::Copy;
    let keep = Keep {
        metadata: copies_source,
        checksum: if copies_source && requested.is_none() {
            KeepChecksum::Object
        } else {
            KeepChecksum::No
        },
        tags: kind == CopyKind::Object && tagging_directive == TaggingDirective::Copy,
        ..Keep::default()
    };

    // The destination: a PUT (object or part) with the request's own headers, and what the
    // destination's policy would have seen of the copy (its source and directive: sealed).
    let mut own: Vec<OutHeader<'_>> = client_headers
        .iter()
        .filter(|h| goes_to_destination(h.name, kind, directive, tagging_directive))
        .map(|h| (Cow::Borrowed(h.name), Cow::Borrowed(h.value)))
        .collect();
    for (from, to) in [
        (header::X_AMZ_COPY_SOURCE, header::X_FERRY_COPY_SOURCE),
        (
            header::X_AMZ_METADATA_DIRECTIVE,
            header::X_FERRY_METADATA_DIRECTIVE,
        ),
    ] {
        if let Some(v) = find_header(client_headers, from) {
            own.push((Cow::Borrowed(to), Cow::Borrowed(v)));
        }
    }
    let origin = origin_form(cx.head.target);
    let dst_path = origin.split_once('?').map_or(origin, |(p, _)| p);
    let write = Write {
        path: cx.backend_path(dst_path),
        query: strip_presign(cx.raw_query()),
        headers: own,
        framing: match requested {
            Some(algorithm) => Framing::Trailer {
                algorithm,
                chunk: cx.p.shared.buffer_size,
            },
            None => Framing::Plain,
        },
    };
    let client = cx.client();
    let done = transfer(&client, (src, dst), &read, keep, write, &mut Unmetered).await?;
    let written = match done {
        Transfer::Written(w) => w,
        Transfer::Refused(r) if matches!(r.status, 304 | 412) => {
            return Err(S3Error::new(S3ErrorCode::PreconditionFailed));
        }
        // A source its node says is absent (to a caller that may not list its bucket): what
        // a copy beside its source answers, `404`.
        Transfer::Refused(r) if r.status == 403 && r.header(header::X_FERRY_MISSING).is_some() => {
            let code = match r.header(header::X_FERRY_MISSING) {
                Some("NoSuchVersion") => S3ErrorCode::NoSuchVersion,
                _ => S3ErrorCode::NoSuchKey,
            };
            return Err(S3Error::new(code));
        }
        Transfer::Refused(r) => return Err(r.to_error()),
    };
    let answer = &written.answer;
    let etag = answer.header(header::ETAG).map(str::to_owned);
    // The copy's checksum, as its backend stored it.
    let checksum = answer.headers.iter().find_map(|(n, v)| {
        let alg = ChecksumAlgorithm::from_header_name(n)?;
        Some((alg, v.trim().to_owned()))
    });
    // The versions of the source read and of the copy written, when their buckets have them.
    let mut h = Headers::new();
    if let Some(v) = written.source.version.clone() {
        h.push(header::X_AMZ_COPY_SOURCE_VERSION_ID, v);
    }
    if let Some(v) = answer
        .header(header::X_AMZ_VERSION_ID)
        .filter(|_| kind == CopyKind::Object)
    {
        h.push(header::X_AMZ_VERSION_ID, v.to_owned());
    }
    // The lifecycle rule that will expire the copy, as its backend says.
    if let Some(v) = answer
        .header(header::X_AMZ_EXPIRATION)
        .filter(|_| kind == CopyKind::Object)
    {
        h.push(header::X_AMZ_EXPIRATION, v.to_owned());
    }
    // How the copy is encrypted, as its backend says.
    for (name, value) in answer
        .headers
        .iter()
        .filter(|(n, _)| is_encryption_header(n))
    {
        h.push(name.clone(), value.clone());
    }
    if !answer.ok() {
        return Err(answer.to_error());
    }
    cx.p.shared
        .copied
        .fetch_add(written.source.len, Ordering::Relaxed);
    let doc = CopyResult {
        kind,
        etag: Cow::Owned(etag.unwrap_or_default()),
        last_modified_unix: cx.p.shared.rt.unix_time(),
        checksum_type: checksum
            .as_ref()
            .filter(|_| kind == CopyKind::Object)
            .map(|_| Cow::Borrowed("FULL_OBJECT")),
        checksums: checksum
            .map(|(alg, v)| Checksums::one(alg, v))
            .unwrap_or_default(),
    };
    let mut xml = Vec::new();
    doc.write_xml(&mut xml);
    cx.front.send_xml(res, h, &xml).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_of_a_copys_request_goes_with_its_write() {
        use MetadataDirective::{Copy, Replace};
        let object = |name, directive, tagging| {
            goes_to_destination(name, CopyKind::Object, directive, tagging)
        };
        let part =
            |name| goes_to_destination(name, CopyKind::Part, Replace, TaggingDirective::Replace);
        assert!(object("Content-Type", Replace, TaggingDirective::Copy));
        assert!(!object("Content-Type", Copy, TaggingDirective::Copy));
        assert!(object("x-amz-tagging", Copy, TaggingDirective::Replace));
        assert!(!object("x-amz-tagging", Copy, TaggingDirective::Copy));
        for name in [
            "X-Amz-Grant-Read",
            "x-amz-acl",
            "x-amz-object-lock-mode",
            "If-Match",
        ] {
            assert!(object(name, Copy, TaggingDirective::Copy), "{name}");
            assert!(!part(name), "{name}");
        }
        for name in ["x-amz-server-side-encryption-customer-key", "User-Agent"] {
            assert!(
                object(name, Copy, TaggingDirective::Copy) && part(name),
                "{name}"
            );
        }
        for name in ["x-amz-copy-source", "Authorization", "x-amz-meta-a"] {
            assert!(!part(name), "{name}");
        }
    }
}
