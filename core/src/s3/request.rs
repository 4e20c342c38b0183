//! S3 request model: one [`Endpoint`] enum, over the addressing of [`super::address`].
//!
//! Routing is method + bucket/key presence + query keyword, as in Garage's `router.rs`.
//! Anything we do not serve is `NotImplemented` (501), never a wrong operation: unknown methods,
//! known subresources where they mean nothing (`POST /bucket?cors`), and subresources we do not
//! serve (`?website`, `?restore`, ...). The last are routed all the same, as
//! [`Endpoint::Unknown`] with the [`Scope`] they touch, and the 501 is kept in
//! [`S3Request::refused`] with the refusals of feature headers ([`unsupported_header`]):
//! [`Endpoint::parse`] answers it (the node), [`Endpoint::route`] leaves it to a caller that
//! may forward the request whole to a server that serves it (the proxy).
//!
//! Choices where S3 leaves room:
//! - `+` in the path is a literal `+` (RFC 3986); in the query it is a space.
//! - `versionId` (on objects and in `x-amz-copy-source`) is `null` or a Ferry version id
//!   ([`VersionId`]); anything else is `InvalidArgument` ("Invalid version id specified"), as
//!   S3 answers a malformed id.
//! - `max-keys`, `max-uploads`, `max-parts` above 1000 are clamped to 1000, as S3 does.

use alloc::borrow::Cow;
use alloc::string::String;

use super::address::{Address, AddressingConfig};
use super::conditions::Conditions;
use super::listing::{
    ListBucketsQuery, ListCommon, ListObjectsQuery, ListObjectsV2Query, ListPartsQuery,
    ListUploadsQuery, ListVersionsQuery, MAX_LIST_PAGE,
};
use super::query::Query;
use super::range::{ByteRange, CopySourceRange};
use super::validate::{self, ContentHeaders};
use super::version::VersionId;
use super::{S3Error, S3ErrorCode, S3Result, uri};
use crate::http::{Header, find_header, find_header_str};
use crate::s3::header;

/// The longest token of a [`Endpoint::BucketFence`].
pub const MAX_FENCE_TOKEN: usize = 64;
/// The longest lease of a [`Endpoint::BucketFence`], in seconds.
pub const MAX_FENCE_LEASE_SECONDS: u32 = 300;

/// The sub-resources the router serves: the query parameters whose presence names the
/// operation (`?acl`, `?uploads`, ...) or the object, version, part or upload it is on
/// (`versionId`, `partNumber`, `uploadId`), whatever their value. The router names each
/// one it reads through `sub!`, which fails the build for a name missing here; SigV2 signs
/// every one of them, and every one of [`UNSUPPORTED_SUBRESOURCES`]
/// (`sigv2::is_signed`), so that none can be added to a signed request unnoticed. A listing's
/// parameters (`prefix`, `max-keys`, `list-type`, ...) are not sub-resources: AWS leaves
/// them unsigned, and they choose no other action.
///
/// Sorted.
pub const SUBRESOURCES: &[&str] = &[
    "acl",
    "attributes",
    "cors",
    "delete",
    "encryption",
    "legal-hold",
    "lifecycle",
    "location",
    "object-lock",
    "ownershipControls",
    "partNumber",
    "policy",
    "policyStatus",
    "publicAccessBlock",
    "retention",
    "tagging",
    "uploadId",
    "uploads",
    "versionId",
    "versioning",
    "versions",
    "x-ferry-fence",
];

/// Whether `a` and `b` are the same string (`==` is not `const`).
const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Whether `name` is one of [`SUBRESOURCES`] (at compile time, for `sub!`).
const fn is_subresource(name: &str) -> bool {
    let mut i = 0;
    while i < SUBRESOURCES.len() {
        if same(SUBRESOURCES[i], name) {
            return true;
        }
        i += 1;
    }
    false
}

/// A sub-resource's name as the router reads it: the build fails unless it is one of
/// [`SUBRESOURCES`], which SigV2 signs.
macro_rules! sub {
    ($name:literal) => {{
        const NAME: &str = $name;
        const _: () = assert!(
            is_subresource(NAME),
            concat!("the router reads ", $name, ", which SUBRESOURCES lacks")
        );
        NAME
    }};
}

/// Subresources we do not serve; their presence makes any request `NotImplemented` (SigV2 signs
/// them too: the proxy forwards some of them to backends that serve them).
///
/// Sorted for reading; searched linearly, as comparing lengths first beats a binary search's
/// string comparisons on this short list.
pub const UNSUPPORTED_SUBRESOURCES: &[&str] = &[
    "abac",
    "accelerate",
    "analytics",
    "attributes",
    "intelligent-tiering",
    "inventory",
    "logging",
    "metadataConfiguration",
    "metadataInventoryTable",
    "metadataJournalTable",
    "metadataTable",
    "metrics",
    "notification",
    "renameObject",
    "replication",
    "requestPayment",
    "restore",
    "select",
    "session",
    "torrent",
    "website",
];

/// Query parameters the router reads, or harmless ones clients add (`x-id`, the AWS SDKs'
/// operation name). A parameter without a value that is not one of these is a subresource
/// Ferry does not serve: `NotImplemented`, never a wrong operation. Other valued parameters are
/// ignored, as S3 ignores them (cache busters and the like).
const KNOWN_PARAMETERS: &[&str] = &[
    "acl",
    "continuation-token",
    "cors",
    "delete",
    "delimiter",
    "encoding-type",
    "encryption",
    "fetch-owner",
    "key-marker",
    "legal-hold",
    "lifecycle",
    "list-type",
    "location",
    "marker",
    "max-buckets",
    "max-keys",
    "max-parts",
    "max-uploads",
    "object-lock",
    "ownershipControls",
    "part-number-marker",
    "partNumber",
    "policy",
    "policyStatus",
    "prefix",
    "publicAccessBlock",
    "retention",
    "start-after",
    "tagging",
    "upload-id-marker",
    "uploadId",
    "uploads",
    "version-id-marker",
    "versionId",
    "versioning",
    "versions",
    "x-id",
];

/// What a request header asks for that Ferry does not do. Such a request is answered with the
/// error, never served with the header ignored: a client that asked for encryption, a lock or
/// ACL grants must not believe it got them. POST Object asks the same of its form fields.
/// (The value decides nothing today; `x-amz-object-ownership` is CreateBucket's, read there.)
pub fn unsupported_header(name: &str, _value: &[u8]) -> Option<S3Error> {
    let lower = |p: &str| starts_with_ignore_case(name, p);
    let is = |n: &str| name.eq_ignore_ascii_case(n);
    if lower(header::X_AMZ_SSE) || lower(header::X_AMZ_COPY_SOURCE_SSE) {
        return Some(not_implemented(
            "Server-side encryption is not implemented for this request",
        ));
    }
    if is(header::X_AMZ_MFA) {
        return Some(not_implemented("MFA delete is not implemented"));
    }
    if is(header::X_AMZ_WEBSITE_REDIRECT_LOCATION) {
        return Some(not_implemented("Website redirects are not implemented"));
    }
    if is(header::X_AMZ_WRITE_OFFSET_BYTES) {
        return Some(not_implemented("Appending to objects is not implemented"));
    }
    None
}

/// Whether `endpoint` takes this server-side-encryption header (checked then by
/// [`super::sse`]): the operations that write an object's data (PutObject, CopyObject,
/// CreateMultipartUpload) take SSE-S3, SSE-KMS and SSE-C ([`write_encryption_taken`]); those
/// that read or add to an SSE-C object (GetObject, HeadObject, GetObjectAttributes, UploadPart,
/// CompleteMultipartUpload) its SSE-C key; the copies (CopyObject, UploadPartCopy) their
/// source's SSE-C key. Everything else about encryption (DSSE-KMS, SSE on other operations)
/// is still refused by [`unsupported_header`].
fn sse_header_taken(endpoint: &Endpoint<'_>, name: &str, value: &[u8]) -> bool {
    let customer = starts_with_ignore_case(name, header::X_AMZ_SSE_CUSTOMER_PREFIX);
    let source = starts_with_ignore_case(name, header::X_AMZ_COPY_SOURCE_SSE_CUSTOMER_PREFIX);
    match endpoint {
        Endpoint::PutObject { .. } | Endpoint::CreateMultipartUpload => {
            write_encryption_taken(name, value)
        }
        Endpoint::CopyObject { .. } => write_encryption_taken(name, value) || source,
        Endpoint::GetObject { .. }
        | Endpoint::HeadObject { .. }
        | Endpoint::GetObjectAttributes { .. }
        | Endpoint::UploadPart { .. }
        | Endpoint::CompleteMultipartUpload { .. } => customer,
        Endpoint::UploadPartCopy { .. } => customer || source,
        _ => false,
    }
}

/// A read of an object (GetObject, HeadObject) that names an encryption other than its SSE-C
/// key (`x-amz-server-side-encryption`, the SSE-KMS key id, context or bucket key): S3's `400
/// InvalidArgument`, as AWS answers it (an object's encryption is the writer's to choose; a
/// reader of an SSE-S3 or SSE-KMS object sends no encryption header).
fn encryption_header_of_read(endpoint: &Endpoint<'_>, name: &str) -> Option<S3Error> {
    if !matches!(
        endpoint,
        Endpoint::GetObject { .. } | Endpoint::HeadObject { .. }
    ) || !starts_with_ignore_case(name, header::X_AMZ_SSE)
        || starts_with_ignore_case(name, header::X_AMZ_SSE_CUSTOMER_PREFIX)
    {
        return None;
    }
    Some(S3Error::with_message(
        S3ErrorCode::InvalidArgument,
        "x-amz-server-side-encryption header is not supported for this operation.",
    ))
}

/// Whether a write of an object's data (PutObject, CopyObject, CreateMultipartUpload, and POST
/// Object's form fields) takes this encryption header: SSE-S3 (`AES256`), SSE-KMS (`aws:kms`
/// and its key id, context and bucket-key headers, which without `aws:kms` are S3's `400`) and
/// SSE-C.
pub fn write_encryption_taken(name: &str, value: &[u8]) -> bool {
    let is = |n: &str| name.eq_ignore_ascii_case(n);
    starts_with_ignore_case(name, header::X_AMZ_SSE_CUSTOMER_PREFIX)
        || (is(header::X_AMZ_SSE) && matches!(value.trim_ascii(), b"AES256" | b"aws:kms"))
        || is(header::X_AMZ_SSE_AWS_KMS_KEY_ID)
        || is(header::X_AMZ_SSE_CONTEXT)
        || is(header::X_AMZ_SSE_BUCKET_KEY_ENABLED)
}

/// Whether a write names its encryption (SSE-S3, SSE-KMS or an SSE-C key): a copy of an
/// object onto itself that does changes it, as on AWS.
fn sets_encryption(headers: &[Header<'_>]) -> bool {
    headers.iter().any(|h| {
        h.name.eq_ignore_ascii_case(header::X_AMZ_SSE)
            || h.name
                .eq_ignore_ascii_case(header::X_AMZ_SSE_CUSTOMER_ALGORITHM)
    })
}

/// ACL headers on an operation that does not take them: only the canned ACLs that grant
/// nothing more than the owner has pass (as when ACLs are disabled on AWS). The operations that
/// create a bucket or an object, and those that set an ACL, take them.
fn unsupported_acl_header(endpoint: &Endpoint<'_>, name: &str, value: &[u8]) -> Option<S3Error> {
    if matches!(
        endpoint,
        Endpoint::CreateBucket
            | Endpoint::PutBucketAcl
            | Endpoint::PutObject { .. }
            | Endpoint::CopyObject { .. }
            | Endpoint::CreateMultipartUpload
            | Endpoint::PutObjectAcl { .. }
    ) {
        return None;
    }
    let value = value.trim_ascii();
    let owner_only = |v: &[u8]| {
        v.eq_ignore_ascii_case(b"private") || v.eq_ignore_ascii_case(b"bucket-owner-full-control")
    };
    let grant = starts_with_ignore_case(name, header::X_AMZ_GRANT_PREFIX);
    if grant || (name.eq_ignore_ascii_case(header::X_AMZ_ACL) && !owner_only(value)) {
        return Some(S3Error::new(S3ErrorCode::AccessControlListNotSupported));
    }
    None
}

fn starts_with_ignore_case(s: &str, prefix: &str) -> bool {
    s.as_bytes()
        .get(..prefix.len())
        .is_some_and(|b| b.eq_ignore_ascii_case(prefix.as_bytes()))
}

/// `x-amz-copy-metadata-directive`: whether CopyObject keeps or replaces metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MetadataDirective {
    /// Keep the source's metadata (the default).
    #[default]
    Copy,
    /// Use the metadata of this request.
    Replace,
}

/// `x-amz-copy-source`: the object to copy from, decoded and validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopySource<'a> {
    /// Source bucket.
    pub bucket: Cow<'a, str>,
    /// Source key.
    pub key: Cow<'a, str>,
    /// `?versionId=`: the version to copy (none: the current one).
    pub version_id: Option<VersionId>,
}

impl<'a> CopySource<'a> {
    /// Parse `[/]bucket/key[?versionId=id]` (URL-encoded).
    ///
    /// A malformed `versionId`, access-point ARNs and malformed values are `InvalidArgument`.
    pub fn parse(value: &'a [u8]) -> S3Result<Self> {
        let invalid = || {
            S3Error::with_message(
                S3ErrorCode::InvalidArgument,
                "Copy Source must mention the source bucket and key: sourcebucket/sourcekey",
            )
        };
        let v = core::str::from_utf8(value).map_err(|_| invalid())?.trim();
        let (path, query) = v.split_once('?').unwrap_or((v, ""));
        let path = path.strip_prefix('/').unwrap_or(path);
        let (bucket, key) = path.split_once('/').ok_or_else(invalid)?;
        if key.is_empty() {
            return Err(invalid());
        }
        let bucket = uri::decode(bucket, false)?;
        validate::bucket_name(&bucket)?;
        let key = uri::decode(key, false)?;
        validate::object_key(&key)?;
        let version_id = version_id(&Query::parse(query)?)?;
        Ok(Self {
            bucket,
            key,
            version_id,
        })
    }
}

/// The `versionId` parameter of an object request: `InvalidArgument` if malformed.
fn version_id(q: &Query<'_>) -> S3Result<Option<VersionId>> {
    q.get(sub!("versionId")).map(VersionId::parse).transpose()
}

/// A parsed request: where it points, what it does, and its sorted query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Request<'a> {
    /// The bucket, if any.
    pub bucket: Option<Cow<'a, str>>,
    /// The key, if any.
    pub key: Option<Cow<'a, str>>,
    /// The operation and its parameters.
    pub endpoint: Endpoint<'a>,
    /// The decoded, sorted query string.
    pub query: Query<'a>,
    /// Whether the bucket came from the Host header.
    pub virtual_hosted: bool,
    /// The raw (still encoded) path.
    pub raw_path: &'a str,
    /// What the router refuses in this request: a subresource it does not serve
    /// ([`Endpoint::Unknown`], `501`), or a header asking for what Ferry does not do
    /// ([`unsupported_header`]: `501`; ACL headers where no ACL is set: `400
    /// AccessControlListNotSupported`). [`Endpoint::parse`] answers it; [`Endpoint::route`]
    /// leaves it here.
    pub refused: Option<S3Error>,
}

impl S3Request<'_> {
    /// The bucket, or `""` when the operation has none (ListBuckets).
    pub fn bucket_str(&self) -> &str {
        self.bucket.as_deref().unwrap_or("")
    }

    /// The key, or `""` for bucket-level operations.
    pub fn key_str(&self) -> &str {
        self.key.as_deref().unwrap_or("")
    }
}

/// What a request the router does not serve ([`Endpoint::Unknown`]) touches, from the path
/// alone: where a proxy sends it without understanding it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// No bucket: the service (`GET /?session`).
    Service,
    /// A bucket and no key: the bucket's configuration or state (`?website`, `?notification`,
    /// `?replication`, `?publicAccessBlock`, ...), which every backend of a proxy holds.
    BucketConfig,
    /// A bucket and a key: one object (`?restore`, `?torrent`, `?select`), which lives on the
    /// backend that owns the key.
    Object,
}

/// The S3 operations Ferry serves, each with its parameters parsed and validated.
///
/// Bodies (Delete, CompleteMultipartUpload) are parsed later by [`super::xml`]; user metadata
/// and content headers of writes are read from the headers with
/// [`validate::user_metadata`] and [`ContentHeaders::from_headers`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint<'a> {
    /// `GET /`.
    ListBuckets(ListBucketsQuery<'a>),
    /// `PUT /bucket`.
    CreateBucket,
    /// `DELETE /bucket`.
    DeleteBucket,
    /// `POST /bucket?x-ferry-fence=T&lease-seconds=N`: Ferry's own, not S3's. Closes the bucket
    /// to writes for N seconds under token T (renewed if T holds it), or lifts T's fence when
    /// N is 0. The proxy's DeleteBucket fences every node first, so that no PUT lands between
    /// its emptiness check and its deletes.
    BucketFence {
        /// `x-ferry-fence`: who holds the fence (1 to [`MAX_FENCE_TOKEN`] letters, digits, `-`
        /// or `_`).
        token: Cow<'a, str>,
        /// `lease-seconds`: how long it holds (up to [`MAX_FENCE_LEASE_SECONDS`]); 0 lifts it.
        lease_seconds: u32,
    },
    /// `HEAD /bucket`.
    HeadBucket,
    /// `GET /bucket?location`.
    GetBucketLocation,
    /// `GET /bucket?versioning`.
    GetBucketVersioning,
    /// `PUT /bucket?versioning` (body: `<VersioningConfiguration>`).
    PutBucketVersioning {
        /// `Content-MD5`, decoded.
        content_md5: Option<[u8; 16]>,
    },
    /// `GET /bucket?versions`.
    ListObjectVersions(ListVersionsQuery<'a>),
    /// `PUT /bucket?policy` (body: the policy, JSON).
    PutBucketPolicy,
    /// `GET /bucket?policy`.
    GetBucketPolicy,
    /// `DELETE /bucket?policy`.
    DeleteBucketPolicy,
    /// `GET /bucket?policyStatus`.
    GetBucketPolicyStatus,
    /// `GET /bucket?publicAccessBlock`.
    GetPublicAccessBlock,
    /// `PUT /bucket?publicAccessBlock` (body: `<PublicAccessBlockConfiguration>`).
    PutPublicAccessBlock {
        /// `Content-MD5` (this or an `x-amz-checksum-*` is required).
        content_md5: Option<[u8; 16]>,
    },
    /// `DELETE /bucket?publicAccessBlock`.
    DeletePublicAccessBlock,
    /// `GET /bucket?ownershipControls`.
    GetBucketOwnershipControls,
    /// `PUT /bucket?ownershipControls` (body: `<OwnershipControls>`).
    PutBucketOwnershipControls {
        /// `Content-MD5` (this or an `x-amz-checksum-*` is required).
        content_md5: Option<[u8; 16]>,
    },
    /// `DELETE /bucket?ownershipControls`.
    DeleteBucketOwnershipControls,
    /// `GET /bucket?acl`.
    GetBucketAcl,
    /// `PUT /bucket?acl` (an `AccessControlPolicy` body, or `x-amz-acl` / `x-amz-grant-*`).
    PutBucketAcl,
    /// `GET /bucket?cors`.
    GetBucketCors,
    /// `PUT /bucket?cors` (the body is read by the operation).
    PutBucketCors {
        /// `Content-MD5` (this or an `x-amz-checksum-*` is required).
        content_md5: Option<[u8; 16]>,
    },
    /// `DELETE /bucket?cors`.
    DeleteBucketCors,
    /// `GET /bucket?tagging`.
    GetBucketTagging,
    /// `PUT /bucket?tagging` (body: `<Tagging>`).
    PutBucketTagging,
    /// `DELETE /bucket?tagging`.
    DeleteBucketTagging,
    /// `GET /bucket?object-lock`.
    GetObjectLockConfiguration,
    /// `PUT /bucket?object-lock` (body: `<ObjectLockConfiguration>`).
    PutObjectLockConfiguration,
    /// `GET /bucket?lifecycle`.
    GetBucketLifecycleConfiguration,
    /// `PUT /bucket?lifecycle` (body: `<LifecycleConfiguration>`, read by the operation).
    PutBucketLifecycleConfiguration {
        /// `Content-MD5` (this or an `x-amz-checksum-*` is required).
        content_md5: Option<[u8; 16]>,
    },
    /// `DELETE /bucket?lifecycle`.
    DeleteBucketLifecycle,
    /// `GET /bucket?encryption`.
    GetBucketEncryption,
    /// `PUT /bucket?encryption` (body: `<ServerSideEncryptionConfiguration>`, read by the
    /// operation).
    PutBucketEncryption {
        /// `Content-MD5` (this or an `x-amz-checksum-*` is required).
        content_md5: Option<[u8; 16]>,
    },
    /// `DELETE /bucket?encryption`.
    DeleteBucketEncryption,
    /// `GET /bucket` (v1).
    ListObjects(ListObjectsQuery<'a>),
    /// `GET /bucket?list-type=2`.
    ListObjectsV2(ListObjectsV2Query<'a>),
    /// `GET /bucket?uploads`.
    ListMultipartUploads(ListUploadsQuery<'a>),
    /// `POST /bucket` with a `multipart/form-data` body: a browser upload (POST Object), its
    /// key, authentication and metadata in the form (`super::post`).
    PostObject,
    /// `POST /bucket?delete` (body: `<Delete>`).
    DeleteObjects {
        /// `Content-MD5`, decoded.
        content_md5: Option<[u8; 16]>,
    },
    /// `GET /bucket/key`.
    GetObject {
        /// `Range`, when S3 would honour it.
        range: Option<ByteRange>,
        /// `If-*` headers.
        conditions: Conditions<'a>,
        /// `partNumber` (1..=10000).
        part_number: Option<u16>,
        /// `response-content-type` & co.
        response_overrides: ContentHeaders<'a>,
        /// `versionId`.
        version_id: Option<VersionId>,
    },
    /// `HEAD /bucket/key`.
    HeadObject {
        /// `Range`, when S3 would honour it.
        range: Option<ByteRange>,
        /// `If-*` headers.
        conditions: Conditions<'a>,
        /// `partNumber` (1..=10000).
        part_number: Option<u16>,
        /// `versionId`.
        version_id: Option<VersionId>,
    },
    /// `PUT /bucket/key`.
    PutObject {
        /// `Content-MD5`, decoded.
        content_md5: Option<[u8; 16]>,
    },
    /// `GET /bucket/key?attributes`.
    GetObjectAttributes {
        /// `x-amz-object-attributes`: what to return.
        attributes: ObjectAttributes,
        /// `x-amz-max-parts`, default 1000, clamped to 1000.
        max_parts: u32,
        /// `x-amz-part-number-marker`: parts after this one.
        part_number_marker: u32,
        /// `versionId`.
        version_id: Option<VersionId>,
    },
    /// `PUT /bucket/key` with `x-amz-copy-source`.
    CopyObject {
        /// The source object.
        source: CopySource<'a>,
        /// `x-amz-metadata-directive`.
        metadata_directive: MetadataDirective,
        /// `x-amz-copy-source-if-*`.
        source_conditions: Conditions<'a>,
    },
    /// `DELETE /bucket/key`.
    DeleteObject {
        /// `versionId`.
        version_id: Option<VersionId>,
    },
    /// `GET /bucket/key?tagging`.
    GetObjectTagging {
        /// `versionId`.
        version_id: Option<VersionId>,
    },
    /// `GET /bucket/key?acl`.
    GetObjectAcl {
        /// `versionId`.
        version_id: Option<VersionId>,
    },
    /// `PUT /bucket/key?acl` (an `AccessControlPolicy` body, or `x-amz-acl` / `x-amz-grant-*`).
    PutObjectAcl {
        /// `versionId`.
        version_id: Option<VersionId>,
    },
    /// `PUT /bucket/key?tagging` (body: `<Tagging>`).
    PutObjectTagging {
        /// `versionId`.
        version_id: Option<VersionId>,
    },
    /// `DELETE /bucket/key?tagging`.
    DeleteObjectTagging {
        /// `versionId`.
        version_id: Option<VersionId>,
    },
    /// `GET /bucket/key?retention`.
    GetObjectRetention {
        /// `versionId`.
        version_id: Option<VersionId>,
    },
    /// `PUT /bucket/key?retention` (body: `<Retention>`).
    PutObjectRetention {
        /// `versionId`.
        version_id: Option<VersionId>,
    },
    /// `GET /bucket/key?legal-hold`.
    GetObjectLegalHold {
        /// `versionId`.
        version_id: Option<VersionId>,
    },
    /// `PUT /bucket/key?legal-hold` (body: `<LegalHold>`).
    PutObjectLegalHold {
        /// `versionId`.
        version_id: Option<VersionId>,
    },
    /// `POST /bucket/key?uploads`.
    CreateMultipartUpload,
    /// `PUT /bucket/key?partNumber=N&uploadId=U`.
    UploadPart(UploadPartQuery<'a>),
    /// `PUT /bucket/key?partNumber=N&uploadId=U` with `x-amz-copy-source`.
    UploadPartCopy(UploadPartCopyQuery<'a>),
    /// `POST /bucket/key?uploadId=U` (body: `<CompleteMultipartUpload>`).
    CompleteMultipartUpload {
        /// `uploadId`.
        upload_id: Cow<'a, str>,
    },
    /// `DELETE /bucket/key?uploadId=U`.
    AbortMultipartUpload {
        /// `uploadId`.
        upload_id: Cow<'a, str>,
    },
    /// `GET /bucket/key?uploadId=U`.
    ListParts(ListPartsQuery<'a>),
    /// GET, HEAD, PUT, POST or DELETE with a subresource Ferry does not serve (`?website`,
    /// `?restore`, `?select&select-type=2`, or any parameter without a value that is not one of
    /// ours): refused with `501 NotImplemented` ([`S3Request::refused`]) by a node; forwarded
    /// by its scope by a proxy.
    Unknown {
        /// What it touches.
        scope: Scope,
        /// The first subresource the router does not serve (in the query's sorted order).
        subresource: Cow<'a, str>,
    },
}

/// UploadPart's parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadPartQuery<'a> {
    /// `uploadId`.
    pub upload_id: Cow<'a, str>,
    /// `partNumber`.
    pub part_number: u16,
    /// `Content-MD5`, decoded.
    pub content_md5: Option<[u8; 16]>,
}

/// UploadPartCopy's parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadPartCopyQuery<'a> {
    /// `uploadId`.
    pub upload_id: Cow<'a, str>,
    /// `partNumber`.
    pub part_number: u16,
    /// The source object.
    pub source: CopySource<'a>,
    /// `x-amz-copy-source-range`.
    pub source_range: Option<CopySourceRange>,
    /// `x-amz-copy-source-if-*`.
    pub source_conditions: Conditions<'a>,
}

fn not_implemented(what: &'static str) -> S3Error {
    S3Error::with_message(S3ErrorCode::NotImplemented, what)
}

impl<'a> Endpoint<'a> {
    /// Route a request: method, request target and headers to bucket, key and operation; what
    /// [`Endpoint::route`] finds refused ([`S3Request::refused`]) is the error.
    pub fn parse(
        method: &str,
        target: &'a str,
        headers: &[Header<'a>],
        cfg: &AddressingConfig,
    ) -> S3Result<S3Request<'a>> {
        let mut req = Self::route(method, target, headers, cfg)?;
        match req.refused.take() {
            Some(e) => Err(e),
            None => Ok(req),
        }
    }

    /// Route a request as [`Endpoint::parse`] does, but keep what Ferry refuses in
    /// [`S3Request::refused`] instead of failing: a subresource it does not serve routes to
    /// [`Endpoint::Unknown`], a request with a feature header to its operation. Malformed
    /// requests (a bad bucket name, parameter or header value) are still errors.
    pub fn route(
        method: &str,
        target: &'a str,
        headers: &[Header<'a>],
        cfg: &AddressingConfig,
    ) -> S3Result<S3Request<'a>> {
        let addr = Address::parse(target, find_header_str(headers, header::HOST), cfg)?;
        let query = Query::parse(addr.raw_query)?;
        // `?attributes` is served on an object only (GetObjectAttributes).
        let object_attributes = |n: &str| n == sub!("attributes") && addr.key.is_some();
        let unknown_subresource = |&(n, v): &(&str, &str)| {
            !object_attributes(n)
                && (UNSUPPORTED_SUBRESOURCES.contains(&n)
                    || (v.is_empty()
                        && !KNOWN_PARAMETERS.contains(&n)
                        && !starts_with_ignore_case(n, header::X_AMZ_PREFIX)
                        && !n.starts_with("response-")))
        };
        let unknown = query
            .iter()
            .find(unknown_subresource)
            .map(|(n, _)| String::from(n));
        if let Some(name) = unknown {
            // Only S3's methods: anything else is no request a server behind us would take.
            if !matches!(method, "GET" | "HEAD" | "PUT" | "POST" | "DELETE") {
                return Err(not_implemented("This subresource is not implemented"));
            }
            let scope = match (&addr.bucket, &addr.key) {
                (None, _) => Scope::Service,
                (Some(_), None) => Scope::BucketConfig,
                (Some(_), Some(_)) => Scope::Object,
            };
            let endpoint = Self::Unknown {
                scope,
                subresource: Cow::Owned(name),
            };
            return Ok(S3Request {
                bucket: addr.bucket,
                key: addr.key,
                endpoint,
                query,
                virtual_hosted: addr.virtual_hosted,
                raw_path: addr.raw_path,
                refused: Some(not_implemented("This subresource is not implemented")),
            });
        }
        let endpoint = match (&addr.bucket, &addr.key) {
            (None, _) => Self::service(method, &query)?,
            (Some(_), None) => Self::bucket(method, &query, headers)?,
            (Some(bucket), Some(key)) => Self::object(method, &query, headers, bucket, key)?,
        };
        let refused = headers
            .iter()
            .find_map(|h| encryption_header_of_read(&endpoint, h.name))
            .or_else(|| {
                headers
                    .iter()
                    .filter(|h| !sse_header_taken(&endpoint, h.name, h.value))
                    .find_map(|h| unsupported_header(h.name, h.value))
            })
            .or_else(|| {
                headers
                    .iter()
                    .find_map(|h| unsupported_acl_header(&endpoint, h.name, h.value))
            });
        Ok(S3Request {
            bucket: addr.bucket,
            key: addr.key,
            endpoint,
            query,
            virtual_hosted: addr.virtual_hosted,
            raw_path: addr.raw_path,
            refused,
        })
    }

    fn service(method: &str, q: &Query<'a>) -> S3Result<Self> {
        if method != "GET" {
            return Err(not_implemented("Only GET is implemented without a bucket"));
        }
        // A bucket's or an object's subresource without a bucket is no operation.
        let subresources = [
            sub!("acl"),
            sub!("cors"),
            sub!("tagging"),
            sub!("lifecycle"),
            sub!("encryption"),
            sub!("location"),
            sub!("versioning"),
            sub!("versions"),
            sub!("policy"),
            sub!("policyStatus"),
            sub!("uploads"),
            sub!("delete"),
            sub!("uploadId"),
            sub!("object-lock"),
            sub!("retention"),
            sub!("legal-hold"),
            sub!("publicAccessBlock"),
            sub!("ownershipControls"),
        ];
        if subresources.iter().any(|k| q.has(k)) {
            return Err(not_implemented("This operation is not implemented"));
        }
        Ok(Self::ListBuckets(ListBucketsQuery::parse(q)?))
    }

    fn bucket(method: &str, q: &Query<'a>, headers: &[Header<'a>]) -> S3Result<Self> {
        const KEYWORDS: [&str; 18] = [
            sub!("acl"),
            sub!("object-lock"),
            sub!("location"),
            sub!("cors"),
            sub!("lifecycle"),
            sub!("encryption"),
            sub!("versioning"),
            sub!("versions"),
            sub!("policy"),
            sub!("policyStatus"),
            sub!("tagging"),
            sub!("uploads"),
            sub!("delete"),
            sub!("uploadId"),
            sub!("partNumber"),
            sub!("x-ferry-fence"),
            sub!("publicAccessBlock"),
            sub!("ownershipControls"),
        ];
        let mut present = KEYWORDS.iter().filter(|k| q.has(k));
        let keyword = present.next().copied();
        if present.next().is_some() {
            return Err(not_implemented("Conflicting subresources"));
        }
        Ok(match (method, keyword) {
            ("GET", Some("location")) => Self::GetBucketLocation,
            ("GET", Some("versioning")) => Self::GetBucketVersioning,
            ("PUT", Some("versioning")) => Self::PutBucketVersioning {
                content_md5: validate::find_content_md5(headers)?,
            },
            ("GET", Some("versions")) => Self::ListObjectVersions(ListVersionsQuery::parse(q)?),
            ("PUT", Some("policy")) => Self::PutBucketPolicy,
            ("GET", Some("policy")) => Self::GetBucketPolicy,
            ("DELETE", Some("policy")) => Self::DeleteBucketPolicy,
            ("GET", Some("policyStatus")) => Self::GetBucketPolicyStatus,
            ("GET", Some("publicAccessBlock")) => Self::GetPublicAccessBlock,
            ("PUT", Some("publicAccessBlock")) => Self::PutPublicAccessBlock {
                content_md5: validate::find_content_md5(headers)?,
            },
            ("DELETE", Some("publicAccessBlock")) => Self::DeletePublicAccessBlock,
            ("GET", Some("ownershipControls")) => Self::GetBucketOwnershipControls,
            ("PUT", Some("ownershipControls")) => Self::PutBucketOwnershipControls {
                content_md5: validate::find_content_md5(headers)?,
            },
            ("DELETE", Some("ownershipControls")) => Self::DeleteBucketOwnershipControls,
            ("GET", Some("acl")) => Self::GetBucketAcl,
            ("PUT", Some("acl")) => Self::PutBucketAcl,
            ("GET", Some("cors")) => Self::GetBucketCors,
            ("PUT", Some("cors")) => Self::PutBucketCors {
                content_md5: validate::find_content_md5(headers)?,
            },
            ("DELETE", Some("cors")) => Self::DeleteBucketCors,
            ("GET", Some("tagging")) => Self::GetBucketTagging,
            ("PUT", Some("tagging")) => Self::PutBucketTagging,
            ("DELETE", Some("tagging")) => Self::DeleteBucketTagging,
            ("GET", Some("object-lock")) => Self::GetObjectLockConfiguration,
            ("PUT", Some("object-lock")) => Self::PutObjectLockConfiguration,
            ("GET", Some("lifecycle")) => Self::GetBucketLifecycleConfiguration,
            ("PUT", Some("lifecycle")) => Self::PutBucketLifecycleConfiguration {
                content_md5: validate::find_content_md5(headers)?,
            },
            ("DELETE", Some("lifecycle")) => Self::DeleteBucketLifecycle,
            ("GET", Some("encryption")) => Self::GetBucketEncryption,
            ("PUT", Some("encryption")) => Self::PutBucketEncryption {
                content_md5: validate::find_content_md5(headers)?,
            },
            ("DELETE", Some("encryption")) => Self::DeleteBucketEncryption,
            ("GET", Some("uploads")) => Self::ListMultipartUploads(ListUploadsQuery::parse(q)?),
            ("GET", None) => Self::list_objects(q)?,
            ("HEAD", None) => Self::HeadBucket,
            ("PUT", None) => Self::CreateBucket,
            ("DELETE", None) => Self::DeleteBucket,
            ("POST", Some("delete")) => Self::DeleteObjects {
                content_md5: validate::find_content_md5(headers)?,
            },
            ("POST", Some("x-ferry-fence")) => Self::bucket_fence(q)?,
            ("POST", None)
                if crate::http::find_header_str(headers, header::CONTENT_TYPE)
                    .and_then(super::post::form_boundary)
                    .is_some() =>
            {
                Self::PostObject
            }
            _ => return Err(not_implemented("This bucket operation is not implemented")),
        })
    }

    fn bucket_fence(q: &Query<'a>) -> S3Result<Self> {
        let invalid =
            |what: &'static str| S3Error::with_message(S3ErrorCode::InvalidArgument, what);
        let token = q.get_cow(sub!("x-ferry-fence")).unwrap_or_default();
        let token_ok = (1..=MAX_FENCE_TOKEN).contains(&token.len())
            && token
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !token_ok {
            return Err(invalid(
                "x-ferry-fence must be 1 to 64 letters, digits, '-' or '_'",
            ));
        }
        let lease_seconds = q
            .get("lease-seconds")
            .and_then(|v| validate::int_param("lease-seconds", v).ok())
            .filter(|n| *n <= MAX_FENCE_LEASE_SECONDS)
            .ok_or_else(|| invalid("lease-seconds must be an integer between 0 and 300"))?;
        Ok(Self::BucketFence {
            token,
            lease_seconds,
        })
    }

    fn list_objects(q: &Query<'a>) -> S3Result<Self> {
        let common = ListCommon::parse(q, "max-keys")?;
        match q.get("list-type") {
            None => Ok(Self::ListObjects(ListObjectsQuery {
                common,
                marker: q.get_cow("marker").filter(|v| !v.is_empty()),
            })),
            Some("2") => Ok(Self::ListObjectsV2(ListObjectsV2Query::parse(q, common)?)),
            Some(_) => Err(S3Error::with_message(
                S3ErrorCode::InvalidArgument,
                "Invalid list-type",
            )),
        }
    }

    fn object(
        method: &str,
        q: &Query<'a>,
        headers: &[Header<'a>],
        bucket: &str,
        key: &str,
    ) -> S3Result<Self> {
        // Bucket-level keywords on an object path are no operation of ours.
        if [
            sub!("location"),
            sub!("versioning"),
            sub!("versions"),
            sub!("delete"),
            sub!("policy"),
            sub!("policyStatus"),
            sub!("cors"),
            sub!("object-lock"),
            sub!("lifecycle"),
            sub!("encryption"),
            sub!("publicAccessBlock"),
            sub!("ownershipControls"),
        ]
        .iter()
        .any(|k| q.has(k))
        {
            return Err(not_implemented("This object operation is not implemented"));
        }
        let upload_id = q.get_cow(sub!("uploadId"));
        let uploads = q.has(sub!("uploads"));
        if q.has(sub!("acl")) {
            if upload_id.is_some() || uploads || q.has(sub!("tagging")) || q.has(sub!("partNumber"))
            {
                return Err(not_implemented("Conflicting subresources"));
            }
            let version_id = version_id(q)?;
            return Ok(match method {
                "GET" => Self::GetObjectAcl { version_id },
                "PUT" => Self::PutObjectAcl { version_id },
                _ => return Err(not_implemented("This object operation is not implemented")),
            });
        }
        if q.has(sub!("tagging")) {
            return Self::object_tagging(method, q, upload_id.is_some() || uploads);
        }
        type Make<'a> = fn(Option<VersionId>) -> Endpoint<'a>;
        let locks: [(&str, Make<'a>, Make<'a>); 2] = [
            (
                sub!("retention"),
                |version_id| Self::GetObjectRetention { version_id },
                |version_id| Self::PutObjectRetention { version_id },
            ),
            (
                sub!("legal-hold"),
                |version_id| Self::GetObjectLegalHold { version_id },
                |version_id| Self::PutObjectLegalHold { version_id },
            ),
        ];
        for (name, get, put) in locks {
            if !q.has(name) {
                continue;
            }
            if upload_id.is_some() || uploads || q.has(sub!("partNumber")) || q.has(sub!("acl")) {
                return Err(not_implemented("Conflicting subresources"));
            }
            let version_id = version_id(q)?;
            return Ok(match method {
                "GET" => get(version_id),
                "PUT" => put(version_id),
                _ => return Err(not_implemented("This object operation is not implemented")),
            });
        }
        if q.has(sub!("attributes")) {
            if upload_id.is_some() || uploads || q.has(sub!("partNumber")) || method != "GET" {
                return Err(not_implemented("This object operation is not implemented"));
            }
            // versionId as GetObject takes it.
            let version_id = version_id(q)?;
            return Ok(Self::GetObjectAttributes {
                version_id,
                attributes: ObjectAttributes::from_headers(headers)?,
                max_parts: header_page_size(headers, header::X_AMZ_MAX_PARTS)?,
                part_number_marker: find_header_str(headers, header::X_AMZ_PART_NUMBER_MARKER)
                    .map(|v| validate::int_param(header::X_AMZ_PART_NUMBER_MARKER, v.trim()))
                    .transpose()?
                    .unwrap_or(0),
            });
        }
        if uploads && upload_id.is_some() {
            return Err(not_implemented("Conflicting subresources"));
        }
        let part_number = q
            .get(sub!("partNumber"))
            .map(validate::part_number)
            .transpose()?;
        let copy_source = find_header(headers, header::X_AMZ_COPY_SOURCE);
        Ok(match (method, upload_id, uploads) {
            ("GET", None, false) => {
                let version_id = version_id(q)?;
                let (range, conditions) = read_params(headers, part_number)?;
                Self::GetObject {
                    version_id,
                    range,
                    conditions,
                    part_number,
                    response_overrides: ContentHeaders::from_response_overrides(q),
                }
            }
            ("HEAD", None, false) => {
                let version_id = version_id(q)?;
                let (range, conditions) = read_params(headers, part_number)?;
                Self::HeadObject {
                    version_id,
                    range,
                    conditions,
                    part_number,
                }
            }
            ("GET", Some(upload_id), false) => {
                Self::ListParts(ListPartsQuery::parse(q, upload_id)?)
            }
            ("PUT", None, false) => {
                if part_number.is_some() {
                    return Err(S3Error::with_message(
                        S3ErrorCode::InvalidArgument,
                        "partNumber requires uploadId",
                    ));
                }
                match copy_source {
                    Some(src) => {
                        let source = CopySource::parse(src)?;
                        let metadata_directive = metadata_directive(headers)?;
                        if source.bucket == bucket
                            && source.key == key
                            && source.version_id.is_none()
                            && metadata_directive == MetadataDirective::Copy
                            && !sets_encryption(headers)
                        {
                            return Err(S3Error::with_message(
                                S3ErrorCode::InvalidRequest,
                                "This copy request is illegal because it is trying to copy an \
                                 object to itself without changing the object's metadata, storage \
                                 class, website redirect location or encryption attributes.",
                            ));
                        }
                        Self::CopyObject {
                            source,
                            metadata_directive,
                            source_conditions: Conditions::from_copy_source_headers(headers),
                        }
                    }
                    None => Self::PutObject {
                        content_md5: validate::find_content_md5(headers)?,
                    },
                }
            }
            ("PUT", Some(upload_id), false) => {
                let part_number = part_number.ok_or_else(|| {
                    S3Error::with_message(
                        S3ErrorCode::InvalidArgument,
                        "uploadId requires partNumber",
                    )
                })?;
                match copy_source {
                    Some(src) => Self::UploadPartCopy(UploadPartCopyQuery {
                        part_number,
                        upload_id,
                        source: CopySource::parse(src)?,
                        source_range: find_header(headers, header::X_AMZ_COPY_SOURCE_RANGE)
                            .map(CopySourceRange::parse)
                            .transpose()?,
                        source_conditions: Conditions::from_copy_source_headers(headers),
                    }),
                    None => Self::UploadPart(UploadPartQuery {
                        part_number,
                        upload_id,
                        content_md5: validate::find_content_md5(headers)?,
                    }),
                }
            }
            ("POST", None, true) => Self::CreateMultipartUpload,
            ("POST", Some(upload_id), false) => Self::CompleteMultipartUpload { upload_id },
            ("DELETE", None, false) => Self::DeleteObject {
                version_id: version_id(q)?,
            },
            ("DELETE", Some(upload_id), false) => Self::AbortMultipartUpload { upload_id },
            _ => return Err(not_implemented("This object operation is not implemented")),
        })
    }

    /// `?tagging` on an object (of the version `versionId` names, if any).
    fn object_tagging(method: &str, q: &Query<'a>, multipart: bool) -> S3Result<Self> {
        if multipart || q.has(sub!("partNumber")) {
            return Err(not_implemented("Conflicting subresources"));
        }
        let version_id = version_id(q)?;
        Ok(match method {
            "GET" => Self::GetObjectTagging { version_id },
            "PUT" => Self::PutObjectTagging { version_id },
            "DELETE" => Self::DeleteObjectTagging { version_id },
            _ => return Err(not_implemented("This object operation is not implemented")),
        })
    }

    /// The object version the operation reads or writes, if its `versionId` names one.
    pub fn version_id(&self) -> Option<VersionId> {
        match self {
            Self::GetObject { version_id, .. }
            | Self::HeadObject { version_id, .. }
            | Self::GetObjectAttributes { version_id, .. }
            | Self::DeleteObject { version_id }
            | Self::GetObjectTagging { version_id }
            | Self::PutObjectTagging { version_id }
            | Self::DeleteObjectTagging { version_id }
            | Self::GetObjectAcl { version_id }
            | Self::PutObjectAcl { version_id }
            | Self::GetObjectRetention { version_id }
            | Self::PutObjectRetention { version_id }
            | Self::GetObjectLegalHold { version_id }
            | Self::PutObjectLegalHold { version_id } => *version_id,
            _ => None,
        }
    }

    /// The operation's name as in the S3 API reference (for logs and metrics).
    pub fn name(&self) -> &'static str {
        match self {
            Self::ListBuckets { .. } => "ListBuckets",
            Self::CreateBucket => "CreateBucket",
            Self::DeleteBucket => "DeleteBucket",
            Self::BucketFence { .. } => "BucketFence",
            Self::HeadBucket => "HeadBucket",
            Self::GetBucketLocation => "GetBucketLocation",
            Self::GetBucketVersioning => "GetBucketVersioning",
            Self::PutBucketVersioning { .. } => "PutBucketVersioning",
            Self::ListObjectVersions { .. } => "ListObjectVersions",
            Self::PutBucketPolicy => "PutBucketPolicy",
            Self::GetBucketPolicy => "GetBucketPolicy",
            Self::DeleteBucketPolicy => "DeleteBucketPolicy",
            Self::GetBucketPolicyStatus => "GetBucketPolicyStatus",
            Self::GetPublicAccessBlock => "GetPublicAccessBlock",
            Self::PutPublicAccessBlock { .. } => "PutPublicAccessBlock",
            Self::DeletePublicAccessBlock => "DeletePublicAccessBlock",
            Self::GetBucketOwnershipControls => "GetBucketOwnershipControls",
            Self::PutBucketOwnershipControls { .. } => "PutBucketOwnershipControls",
            Self::DeleteBucketOwnershipControls => "DeleteBucketOwnershipControls",
            Self::GetBucketAcl => "GetBucketAcl",
            Self::PutBucketAcl => "PutBucketAcl",
            Self::GetBucketCors => "GetBucketCors",
            Self::PutBucketCors { .. } => "PutBucketCors",
            Self::DeleteBucketCors => "DeleteBucketCors",
            Self::GetBucketTagging => "GetBucketTagging",
            Self::PutBucketTagging => "PutBucketTagging",
            Self::DeleteBucketTagging => "DeleteBucketTagging",
            Self::GetObjectLockConfiguration => "GetObjectLockConfiguration",
            Self::PutObjectLockConfiguration => "PutObjectLockConfiguration",
            Self::GetBucketLifecycleConfiguration => "GetBucketLifecycleConfiguration",
            Self::PutBucketLifecycleConfiguration { .. } => "PutBucketLifecycleConfiguration",
            Self::DeleteBucketLifecycle => "DeleteBucketLifecycle",
            Self::GetBucketEncryption => "GetBucketEncryption",
            Self::PutBucketEncryption { .. } => "PutBucketEncryption",
            Self::DeleteBucketEncryption => "DeleteBucketEncryption",
            Self::ListObjects { .. } => "ListObjects",
            Self::ListObjectsV2 { .. } => "ListObjectsV2",
            Self::ListMultipartUploads { .. } => "ListMultipartUploads",
            Self::DeleteObjects { .. } => "DeleteObjects",
            Self::PostObject => "PostObject",
            Self::GetObject { .. } => "GetObject",
            Self::HeadObject { .. } => "HeadObject",
            Self::GetObjectAttributes { .. } => "GetObjectAttributes",
            Self::PutObject { .. } => "PutObject",
            Self::CopyObject { .. } => "CopyObject",
            Self::DeleteObject { .. } => "DeleteObject",
            Self::GetObjectTagging { .. } => "GetObjectTagging",
            Self::GetObjectAcl { .. } => "GetObjectAcl",
            Self::PutObjectAcl { .. } => "PutObjectAcl",
            Self::PutObjectTagging { .. } => "PutObjectTagging",
            Self::DeleteObjectTagging { .. } => "DeleteObjectTagging",
            Self::GetObjectRetention { .. } => "GetObjectRetention",
            Self::PutObjectRetention { .. } => "PutObjectRetention",
            Self::GetObjectLegalHold { .. } => "GetObjectLegalHold",
            Self::PutObjectLegalHold { .. } => "PutObjectLegalHold",
            Self::CreateMultipartUpload => "CreateMultipartUpload",
            Self::UploadPart { .. } => "UploadPart",
            Self::UploadPartCopy { .. } => "UploadPartCopy",
            Self::CompleteMultipartUpload { .. } => "CompleteMultipartUpload",
            Self::AbortMultipartUpload { .. } => "AbortMultipartUpload",
            Self::ListParts { .. } => "ListParts",
            Self::Unknown { scope, .. } => match scope {
                Scope::Service => "UnknownServiceOperation",
                Scope::BucketConfig => "UnknownBucketOperation",
                Scope::Object => "UnknownObjectOperation",
            },
        }
    }
}

/// Range and conditions of GetObject/HeadObject; Range with partNumber is `InvalidRequest`.
fn read_params<'a>(
    headers: &[Header<'a>],
    part_number: Option<u16>,
) -> S3Result<(Option<ByteRange>, Conditions<'a>)> {
    let range = ByteRange::from_headers(headers);
    if range.is_some() && part_number.is_some() {
        return Err(S3Error::with_message(
            S3ErrorCode::InvalidRequest,
            "Cannot specify both Range header and partNumber query parameter",
        ));
    }
    Ok((range, Conditions::from_headers(headers)))
}

fn metadata_directive(headers: &[Header<'_>]) -> S3Result<MetadataDirective> {
    match find_header(headers, header::X_AMZ_METADATA_DIRECTIVE) {
        None => Ok(MetadataDirective::Copy),
        Some(v) if v.eq_ignore_ascii_case(b"COPY") => Ok(MetadataDirective::Copy),
        Some(v) if v.eq_ignore_ascii_case(b"REPLACE") => Ok(MetadataDirective::Replace),
        Some(_) => Err(S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            "Unknown metadata directive.",
        )),
    }
}

/// A page size parameter: default and maximum 1000, larger values clamped.
/// A page size given in a header (`x-amz-max-parts`): default and clamp 1000.
fn header_page_size(headers: &[Header<'_>], name: &'static str) -> S3Result<u32> {
    Ok(find_header_str(headers, name)
        .map(|v| validate::int_param(name, v.trim()))
        .transpose()?
        .map_or(MAX_LIST_PAGE, |n| n.min(MAX_LIST_PAGE)))
}

/// What a GetObjectAttributes asks for (`x-amz-object-attributes`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ObjectAttributes {
    /// `ETag`.
    pub etag: bool,
    /// `Checksum`.
    pub checksum: bool,
    /// `ObjectParts`.
    pub object_parts: bool,
    /// `StorageClass`.
    pub storage_class: bool,
    /// `ObjectSize`.
    pub object_size: bool,
}

impl ObjectAttributes {
    /// Parse every `x-amz-object-attributes` header (comma-separated names, at least one);
    /// a missing or empty list or an unknown name is `InvalidArgument`.
    pub fn from_headers(headers: &[Header<'_>]) -> S3Result<Self> {
        let mut a = Self::default();
        let mut any = false;
        let values = headers
            .iter()
            .filter(|h| h.name.eq_ignore_ascii_case(header::X_AMZ_OBJECT_ATTRIBUTES));
        for h in values {
            let text = core::str::from_utf8(h.value).map_err(|_| invalid_attribute())?;
            for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                let slot = match name {
                    "ETag" => &mut a.etag,
                    "Checksum" => &mut a.checksum,
                    "ObjectParts" => &mut a.object_parts,
                    "StorageClass" => &mut a.storage_class,
                    "ObjectSize" => &mut a.object_size,
                    _ => return Err(invalid_attribute()),
                };
                *slot = true;
                any = true;
            }
        }
        if !any {
            return Err(S3Error::with_message(
                S3ErrorCode::InvalidArgument,
                "The x-amz-object-attributes header specifying the attributes to be retrieved is either missing or empty",
            ));
        }
        Ok(a)
    }
}

fn invalid_attribute() -> S3Error {
    S3Error::with_message(
        S3ErrorCode::InvalidArgument,
        "Invalid attribute name specified.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;

    type Extra<'a> = &'a [(&'a str, &'a str)];
    /// (method, target, Host, extra headers, bucket, key, endpoint)
    type Case<'a> = (
        &'a str,
        &'a str,
        &'a str,
        Extra<'a>,
        Option<&'a str>,
        Option<&'a str>,
        Endpoint<'a>,
    );

    /// No query parameter the router reads besides its sub-resources (which SigV2 signs)
    /// makes a request another operation: a listing's parameters change what it lists, or are
    /// refused, and `list-type=2` makes a ListObjects a ListObjectsV2, the same action.
    #[test]
    fn only_subresources_choose_the_operation() {
        use alloc::format;
        let unsigned = KNOWN_PARAMETERS
            .iter()
            .filter(|n| !SUBRESOURCES.contains(n));
        let hs = [Header {
            name: "host",
            value: b"s3.amazonaws.com",
        }];
        for name in unsigned {
            for (method, path) in [
                ("GET", "/bkt"),
                ("HEAD", "/bkt"),
                ("PUT", "/bkt"),
                ("DELETE", "/bkt"),
                ("GET", "/bkt/k"),
                ("HEAD", "/bkt/k"),
                ("PUT", "/bkt/k"),
                ("DELETE", "/bkt/k"),
                ("POST", "/bkt/k"),
            ] {
                // A request that is no operation (POST on an object) stays none.
                let was = Endpoint::route(method, path, &hs, &cfg())
                    .ok()
                    .map(|r| r.endpoint.name());
                for value in ["", "1", "2", "x"] {
                    let target = format!("{path}?{name}={value}");
                    let Ok(got) = Endpoint::route(method, &target, &hs, &cfg()) else {
                        continue;
                    };
                    let is = Some(got.endpoint.name());
                    if (was, is) == (Some("ListObjects"), Some("ListObjectsV2"))
                        && *name == "list-type"
                    {
                        continue;
                    }
                    assert_eq!(was, is, "{method} {target}");
                }
            }
        }
    }

    fn cfg() -> AddressingConfig {
        AddressingConfig::with_base_domains(["s3.amazonaws.com", "s3.us-west-2.amazonaws.com"])
    }

    fn route<'a>(
        method: &str,
        target: &'a str,
        host: &'a str,
        extra: &[(&'a str, &'a str)],
    ) -> S3Result<S3Request<'a>> {
        let mut hs = vec![Header {
            name: "Host",
            value: host.as_bytes(),
        }];
        hs.extend(extra.iter().map(|&(name, v)| Header {
            name,
            value: v.as_bytes(),
        }));
        Endpoint::parse(method, target, &hs, &cfg())
    }

    fn common<'a>(
        prefix: &'a str,
        delimiter: Option<&'a str>,
        max_keys: u32,
        url: bool,
    ) -> ListCommon<'a> {
        ListCommon {
            prefix: b(prefix),
            delimiter: delimiter.map(b),
            max_keys,
            encoding_type_url: url,
        }
    }

    fn b(s: &str) -> Cow<'_, str> {
        Cow::Borrowed(s)
    }

    /// Requests from the examples of the S3 API reference (bucket names that the current
    /// naming rules reserve, such as `amzn-s3-demo-bucket`, replaced by `examplebucket`).
    #[test]
    fn aws_reference_examples() {
        let upload = "VCVsb2FkIElEIGZvciBlbZZpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZR";
        let all_attributes = ObjectAttributes {
            etag: true,
            checksum: true,
            object_parts: true,
            storage_class: true,
            object_size: true,
        };
        #[rustfmt::skip]
        let cases: Vec<Case<'_>> = vec![
            // GetObjectAttributes (the API reference's example)
            ("GET", "/example-object?attributes", "examplebucket.s3.amazonaws.com",
             &[("x-amz-object-attributes", "ETag,Checksum,ObjectParts,StorageClass,ObjectSize"),
               ("x-amz-max-parts", "2"), ("x-amz-part-number-marker", "1")],
             Some("examplebucket"), Some("example-object"),
             Endpoint::GetObjectAttributes { attributes: all_attributes, max_parts: 2, part_number_marker: 1, version_id: None }),
            ("GET", "/example-object?attributes&versionId=null", "examplebucket.s3.amazonaws.com",
             &[("x-amz-object-attributes", "ObjectSize"), ("x-amz-max-parts", "5000")],
             Some("examplebucket"), Some("example-object"),
             Endpoint::GetObjectAttributes {
                 attributes: ObjectAttributes { object_size: true, ..ObjectAttributes::default() },
                 max_parts: 1000, part_number_marker: 0, version_id: Some(VersionId::Null) }),
            // ListBuckets
            ("GET", "/", "s3.amazonaws.com", &[], None, None,
             Endpoint::ListBuckets(ListBucketsQuery::default())),
            ("GET", "/?max-buckets=100&continuation-token=abc&prefix=ex", "s3.us-west-2.amazonaws.com", &[], None, None,
             Endpoint::ListBuckets(ListBucketsQuery { prefix: Some(b("ex")), continuation_token: Some(b("abc")), max_buckets: Some(100) })),
            // CreateBucket / DeleteBucket / HeadBucket
            ("PUT", "/", "examplebucket.s3.amazonaws.com", &[], Some("examplebucket"), None, Endpoint::CreateBucket),
            ("DELETE", "/", "examplebucket.s3.amazonaws.com", &[], Some("examplebucket"), None, Endpoint::DeleteBucket),
            ("HEAD", "/", "bucket.s3.us-west-2.amazonaws.com", &[], Some("bucket"), None, Endpoint::HeadBucket),
            // GetBucketLocation / GetBucketVersioning
            ("GET", "/?location", "examplebucket.s3.amazonaws.com", &[], Some("examplebucket"), None, Endpoint::GetBucketLocation),
            ("GET", "/?versioning", "bucket.s3.us-west-2.amazonaws.com", &[], Some("bucket"), None, Endpoint::GetBucketVersioning),
            // PutBucketVersioning / ListObjectVersions
            ("PUT", "/?versioning", "bucket.s3.us-west-2.amazonaws.com", &[],
             Some("bucket"), None, Endpoint::PutBucketVersioning { content_md5: None }),
            ("GET", "/?versions", "bucketname.s3.us-west-2.amazonaws.com", &[], Some("bucketname"), None,
             Endpoint::ListObjectVersions(ListVersionsQuery { common: common("", None, 1000, false),
                                                              key_marker: None, version_id_marker: None })),
            ("GET", "/?versions&key-marker=key2&version-id-marker=fffffffffffffff0&max-keys=3&prefix=k&delimiter=/",
             "bucket.s3.us-west-2.amazonaws.com", &[], Some("bucket"), None,
             Endpoint::ListObjectVersions(ListVersionsQuery { common: common("k", Some("/"), 3, false), key_marker: Some(b("key2")),
                                                              version_id_marker: Some(VersionId::Seq(15)) })),
            // PutBucketPolicy / GetBucketPolicy / DeleteBucketPolicy / GetBucketPolicyStatus
            ("PUT", "/?policy", "bucket.s3.us-west-2.amazonaws.com", &[], Some("bucket"), None, Endpoint::PutBucketPolicy),
            ("GET", "/?policy", "bucket.s3.us-west-2.amazonaws.com", &[], Some("bucket"), None, Endpoint::GetBucketPolicy),
            ("DELETE", "/?policy", "bucket.s3.us-west-2.amazonaws.com", &[], Some("bucket"), None, Endpoint::DeleteBucketPolicy),
            ("GET", "/?policyStatus", "bucket.s3.us-west-2.amazonaws.com", &[], Some("bucket"), None, Endpoint::GetBucketPolicyStatus),
            // Put/Get/DeletePublicAccessBlock
            ("PUT", "/?publicAccessBlock", "bucket.s3.us-west-2.amazonaws.com", &[("Content-MD5", "1B2M2Y8AsgTpgAmY7PhCfg==")], Some("bucket"), None,
             Endpoint::PutPublicAccessBlock { content_md5: validate::parse_content_md5(b"1B2M2Y8AsgTpgAmY7PhCfg==").ok() }),
            ("GET", "/?publicAccessBlock", "bucket.s3.us-west-2.amazonaws.com", &[], Some("bucket"), None, Endpoint::GetPublicAccessBlock),
            ("DELETE", "/?publicAccessBlock", "bucket.s3.us-west-2.amazonaws.com", &[], Some("bucket"), None, Endpoint::DeletePublicAccessBlock),
            // Put/Get/DeleteBucketOwnershipControls
            ("PUT", "/?ownershipControls", "bucket.s3.us-west-2.amazonaws.com", &[], Some("bucket"), None,
             Endpoint::PutBucketOwnershipControls { content_md5: None }),
            ("GET", "/?ownershipControls", "bucket.s3.us-west-2.amazonaws.com", &[], Some("bucket"), None, Endpoint::GetBucketOwnershipControls),
            ("DELETE", "/?ownershipControls", "bucket.s3.us-west-2.amazonaws.com", &[], Some("bucket"), None, Endpoint::DeleteBucketOwnershipControls),
            // GetBucketAcl / PutBucketAcl
            ("GET", "/?acl", "bucket.s3.us-west-2.amazonaws.com", &[], Some("bucket"), None, Endpoint::GetBucketAcl),
            ("PUT", "/?acl", "bucket.s3.us-west-2.amazonaws.com", &[("x-amz-acl", "public-read")], Some("bucket"), None, Endpoint::PutBucketAcl),
            // GetBucketCors / PutBucketCors / DeleteBucketCors
            ("GET", "/?cors", "examplebucket.s3.amazonaws.com", &[], Some("examplebucket"), None, Endpoint::GetBucketCors),
            ("PUT", "/?cors", "examplebucket.s3.amazonaws.com", &[("Content-MD5", "1B2M2Y8AsgTpgAmY7PhCfg==")], Some("examplebucket"), None,
             Endpoint::PutBucketCors { content_md5: validate::parse_content_md5(b"1B2M2Y8AsgTpgAmY7PhCfg==").ok() }),
            ("DELETE", "/?cors", "examplebucket.s3.amazonaws.com", &[], Some("examplebucket"), None, Endpoint::DeleteBucketCors),
            // Get/PutBucketLifecycleConfiguration / DeleteBucketLifecycle
            ("GET", "/?lifecycle", "examplebucket.s3.amazonaws.com", &[], Some("examplebucket"), None, Endpoint::GetBucketLifecycleConfiguration),
            ("PUT", "/?lifecycle", "examplebucket.s3.amazonaws.com", &[("Content-MD5", "1B2M2Y8AsgTpgAmY7PhCfg==")], Some("examplebucket"), None,
             Endpoint::PutBucketLifecycleConfiguration { content_md5: validate::parse_content_md5(b"1B2M2Y8AsgTpgAmY7PhCfg==").ok() }),
            ("DELETE", "/?lifecycle", "examplebucket.s3.amazonaws.com", &[], Some("examplebucket"), None, Endpoint::DeleteBucketLifecycle),
            // Get/Put/DeleteBucketEncryption
            ("GET", "/?encryption", "examplebucket.s3.amazonaws.com", &[], Some("examplebucket"), None, Endpoint::GetBucketEncryption),
            ("PUT", "/?encryption", "examplebucket.s3.amazonaws.com", &[("Content-MD5", "1B2M2Y8AsgTpgAmY7PhCfg==")], Some("examplebucket"), None,
             Endpoint::PutBucketEncryption { content_md5: validate::parse_content_md5(b"1B2M2Y8AsgTpgAmY7PhCfg==").ok() }),
            ("DELETE", "/?encryption", "examplebucket.s3.amazonaws.com", &[], Some("examplebucket"), None, Endpoint::DeleteBucketEncryption),
            // ListObjects (v1)
            ("GET", "/?prefix=N&marker=Ned&max-keys=40", "quotes.s3.amazonaws.com", &[], Some("quotes"), None,
             Endpoint::ListObjects(ListObjectsQuery { common: common("N", None, 40, false), marker: Some(b("Ned")) })),
            ("GET", "/?delimiter=/", "example-bucket.s3.us-west-2.amazonaws.com", &[], Some("example-bucket"), None,
             Endpoint::ListObjects(ListObjectsQuery { common: common("", Some("/"), 1000, false), marker: None })),
            // ListObjectsV2
            ("GET", "/?list-type=2", "bucket.s3.us-west-2.amazonaws.com", &[], Some("bucket"), None,
             Endpoint::ListObjectsV2(ListObjectsV2Query { common: common("", None, 1000, false), continuation_token: None,
                                                                start_after: None, fetch_owner: false })),
            ("GET", "/?list-type=2&max-keys=3&prefix=E&start-after=ExampleGuide.pdf", "examplebucket.s3.amazonaws.com", &[],
             Some("examplebucket"), None,
             Endpoint::ListObjectsV2(ListObjectsV2Query { common: common("E", None, 3, false), continuation_token: None,
                                                                start_after: Some(b("ExampleGuide.pdf")), fetch_owner: false })),
            ("GET", "/?list-type=2&delimiter=/&prefix=photos/2006/", "examplebucket.s3.amazonaws.com", &[], Some("examplebucket"), None,
             Endpoint::ListObjectsV2(ListObjectsV2Query { common: common("photos/2006/", Some("/"), 1000, false), continuation_token: None,
                                                                start_after: None, fetch_owner: false })),
            ("GET", "/?list-type=2&continuation-token=1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=", "bucket.s3.amazonaws.com", &[],
             Some("bucket"), None,
             Endpoint::ListObjectsV2(ListObjectsV2Query { common: common("", None, 1000, false), continuation_token: Some(b("1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=")),
                                                                start_after: None, fetch_owner: false })),
            // An empty token starts from the beginning, as AWS does.
            ("GET", "/?list-type=2&continuation-token=", "bucket.s3.amazonaws.com", &[],
             Some("bucket"), None,
             Endpoint::ListObjectsV2(ListObjectsV2Query { common: common("", None, 1000, false), continuation_token: None,
                                                                start_after: None, fetch_owner: false })),
            ("GET", "/examplebucket?list-type=2&encoding-type=url&fetch-owner=true&max-keys=5000", "s3.amazonaws.com", &[],
             Some("examplebucket"), None,
             Endpoint::ListObjectsV2(ListObjectsV2Query { common: common("", None, 1000, true), continuation_token: None,
                                                                start_after: None, fetch_owner: true })),
            // ListMultipartUploads
            ("GET", "/?uploads&max-uploads=3", "example-bucket.s3.us-west-2.amazonaws.com", &[], Some("example-bucket"), None,
             Endpoint::ListMultipartUploads(ListUploadsQuery { common: common("", None, 3, false),
                                                               key_marker: None, upload_id_marker: None })),
            ("GET", "/?uploads&delimiter=/&prefix=photos/2006/", "example-bucket.s3.amazonaws.com", &[], Some("example-bucket"), None,
             Endpoint::ListMultipartUploads(ListUploadsQuery { common: common("photos/2006/", Some("/"), 1000, false),
                                                               key_marker: None, upload_id_marker: None })),
            // DeleteObjects (the reference writes the host as bucketname.S3.amazonaws.com)
            ("POST", "/?delete", "bucketname.S3.amazonaws.com", &[("Content-MD5", "p5/WA/oEr30qrEE121PAqw==")],
             Some("bucketname"), None,
             Endpoint::DeleteObjects { content_md5: Some([0xa7, 0x9f, 0xd6, 0x03, 0xfa, 0x04, 0xaf, 0x7d,
                                                          0x2a, 0xac, 0x41, 0x35, 0xdb, 0x53, 0xc0, 0xab]) }),
            // POST Object (the reference's browser-upload form)
            ("POST", "/", "sigv4examplebucket.s3.amazonaws.com",
             &[("Content-Type", "multipart/form-data; boundary=9431149156168")],
             Some("sigv4examplebucket"), None, Endpoint::PostObject),
            // GetObject / HeadObject
            ("GET", "/my-image.jpg", "bucket.s3.us-west-2.amazonaws.com", &[], Some("bucket"), Some("my-image.jpg"),
             Endpoint::GetObject { range: None, conditions: Conditions::default(), part_number: None,
                                   response_overrides: ContentHeaders::default(), version_id: None }),
            ("GET", "/example-object", "example-bucket.s3.us-west-2.amazonaws.com", &[("Range", "bytes=0-9")],
             Some("example-bucket"), Some("example-object"),
             Endpoint::GetObject { range: Some(ByteRange::FromTo(0, 9)), conditions: Conditions::default(), part_number: None,
                                   response_overrides: ContentHeaders::default(), version_id: None }),
            ("GET", "/Junk3.txt?response-cache-control=No-cache&response-content-disposition=attachment%3B%20filename%3Dtesting.txt&response-content-encoding=x-gzip&response-content-language=mi%2C%20en&response-expires=Thu%2C%2001%20Dec%201994%2016:00:00%20GMT",
             "bucket.s3.us-west-2.amazonaws.com", &[], Some("bucket"), Some("Junk3.txt"),
             Endpoint::GetObject { range: None, conditions: Conditions::default(), part_number: None,
                                   response_overrides: ContentHeaders {
                                       content_type: None,
                                       content_encoding: Some(b("x-gzip")),
                                       content_disposition: Some(b("attachment; filename=testing.txt")),
                                       content_language: Some(b("mi, en")),
                                       cache_control: Some(b("No-cache")),
                                       expires: Some(b("Thu, 01 Dec 1994 16:00:00 GMT")),
                                   }, version_id: None }),
            ("HEAD", "/my-image.jpg?partNumber=3", "bucket.s3.us-west-2.amazonaws.com",
             &[("If-None-Match", "\"fba9dede5f27731c9771645a39863328\"")], Some("bucket"), Some("my-image.jpg"),
             Endpoint::HeadObject { range: None,
                                    conditions: Conditions { if_none_match: Some("\"fba9dede5f27731c9771645a39863328\""), ..Conditions::default() },
                                    part_number: Some(3), version_id: None }),
            // PutObject / CopyObject / DeleteObject
            ("PUT", "/my-image.jpg", "examplebucket.s3.us-west-2.amazonaws.com", &[("Content-Type", "image/jpeg")],
             Some("examplebucket"), Some("my-image.jpg"), Endpoint::PutObject { content_md5: None }),
            ("PUT", "/my-second-image.jpg", "bucket.s3.us-west-2.amazonaws.com", &[("x-amz-copy-source", "/bucket/my-image.jpg")],
             Some("bucket"), Some("my-second-image.jpg"),
             Endpoint::CopyObject { source: CopySource { bucket: b("bucket"), key: b("my-image.jpg"), version_id: None },
                                    metadata_directive: MetadataDirective::Copy, source_conditions: Conditions::default() }),
            ("PUT", "/my-second-image.jpg", "bucket.s3.us-west-2.amazonaws.com",
             &[("x-amz-copy-source", "/bucket/my-image.jpg"), ("x-amz-metadata-directive", "REPLACE"),
                  ("x-amz-copy-source-if-match", "\"abc\"")],
             Some("bucket"), Some("my-second-image.jpg"),
             Endpoint::CopyObject { source: CopySource { bucket: b("bucket"), key: b("my-image.jpg"), version_id: None },
                                    metadata_directive: MetadataDirective::Replace,
                                    source_conditions: Conditions { if_match: Some("\"abc\""), ..Conditions::default() } }),
            ("DELETE", "/my-second-image.jpg", "bucket.s3.us-west-2.amazonaws.com", &[], Some("bucket"), Some("my-second-image.jpg"),
             Endpoint::DeleteObject { version_id: None }),
            // Object and bucket tagging
            ("GET", "/example-object?tagging", "examplebucket.s3.amazonaws.com", &[],
             Some("examplebucket"), Some("example-object"), Endpoint::GetObjectTagging { version_id: None }),
            ("GET", "/example-object?tagging&versionId=null", "examplebucket.s3.amazonaws.com", &[],
             Some("examplebucket"), Some("example-object"), Endpoint::GetObjectTagging { version_id: Some(VersionId::Null) }),
            ("PUT", "/object-key?tagging", "examplebucket.s3.amazonaws.com", &[("Content-Type", "text/plain")],
             Some("examplebucket"), Some("object-key"), Endpoint::PutObjectTagging { version_id: None }),
            ("DELETE", "/exampleobject?tagging", "examplebucket.s3.amazonaws.com", &[],
             Some("examplebucket"), Some("exampleobject"), Endpoint::DeleteObjectTagging { version_id: None }),
            ("GET", "/?tagging", "examplebucket.s3.amazonaws.com", &[], Some("examplebucket"), None, Endpoint::GetBucketTagging),
            ("PUT", "/?tagging", "examplebucket.s3.amazonaws.com", &[("Content-MD5", "8dYiLewFWZyGgV2Q5FNI4W==")],
             Some("examplebucket"), None, Endpoint::PutBucketTagging),
            ("DELETE", "/?tagging", "examplebucket.s3.amazonaws.com", &[], Some("examplebucket"), None, Endpoint::DeleteBucketTagging),
            // Object lock, from the examples of the S3 API reference.
            ("GET", "/?object-lock", "examplebucket.s3.amazonaws.com", &[], Some("examplebucket"), None, Endpoint::GetObjectLockConfiguration),
            ("PUT", "/?object-lock", "examplebucket.s3.amazonaws.com", &[], Some("examplebucket"), None, Endpoint::PutObjectLockConfiguration),
            ("GET", "/k?retention", "examplebucket.s3.amazonaws.com", &[], Some("examplebucket"), Some("k"), Endpoint::GetObjectRetention { version_id: None }),
            ("PUT", "/k?retention&versionId=null", "examplebucket.s3.amazonaws.com", &[("x-amz-bypass-governance-retention", "true")],
             Some("examplebucket"), Some("k"), Endpoint::PutObjectRetention { version_id: Some(VersionId::Null) }),
            ("GET", "/k?legal-hold", "examplebucket.s3.amazonaws.com", &[], Some("examplebucket"), Some("k"), Endpoint::GetObjectLegalHold { version_id: None }),
            ("PUT", "/k?legal-hold", "examplebucket.s3.amazonaws.com", &[], Some("examplebucket"), Some("k"), Endpoint::PutObjectLegalHold { version_id: None }),
            // Multipart uploads
            ("POST", "/example-object?uploads", "example-bucket.s3.us-west-2.amazonaws.com", &[],
             Some("example-bucket"), Some("example-object"), Endpoint::CreateMultipartUpload),
            ("PUT", "/my-movie.m2ts?partNumber=1&uploadId=VCVsb2FkIElEIGZvciBlbZZpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZR",
             "example-bucket.s3.us-west-2.amazonaws.com", &[], Some("example-bucket"), Some("my-movie.m2ts"),
             Endpoint::UploadPart(UploadPartQuery { part_number: 1, upload_id: b(upload), content_md5: None })),
            ("PUT", "/newobject?partNumber=2&uploadId=VCVsb2FkIElEIGZvciBlbZZpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZR",
             "target-bucket.s3.us-west-2.amazonaws.com",
             &[("x-amz-copy-source", "/source-bucket/sourceobject"), ("x-amz-copy-source-range", "bytes=500-6291456")],
             Some("target-bucket"), Some("newobject"),
             Endpoint::UploadPartCopy(UploadPartCopyQuery { part_number: 2, upload_id: b(upload),
                                        source: CopySource { bucket: b("source-bucket"), key: b("sourceobject"), version_id: None },
                                        source_range: Some(CopySourceRange { first: 500, last: 6_291_456 }),
                                        source_conditions: Conditions::default() })),
            ("POST", "/example-object?uploadId=AAAsb2FkIElEIGZvciBlbHZpbmcncyWeeS1tb3ZpZS5tMnRzIRRwbG9hZA",
             "example-bucket.s3.us-west-2.amazonaws.com", &[], Some("example-bucket"), Some("example-object"),
             Endpoint::CompleteMultipartUpload { upload_id: b("AAAsb2FkIElEIGZvciBlbHZpbmcncyWeeS1tb3ZpZS5tMnRzIRRwbG9hZA") }),
            ("DELETE", "/example-object?uploadId=VXBsb2FkIElEIGZvciBlbHZpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZ",
             "example-bucket.s3.us-west-2.amazonaws.com", &[], Some("example-bucket"), Some("example-object"),
             Endpoint::AbortMultipartUpload { upload_id: b("VXBsb2FkIElEIGZvciBlbHZpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZ") }),
            ("GET", "/example-object?uploadId=XXBsb2FkIElEIGZvciBlbHZpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA&max-parts=2&part-number-marker=1",
             "example-bucket.s3.us-west-2.amazonaws.com", &[], Some("example-bucket"), Some("example-object"),
             Endpoint::ListParts(ListPartsQuery { upload_id: b("XXBsb2FkIElEIGZvciBlbHZpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA"),
                                                  max_parts: 2, part_number_marker: Some(1), encoding_type_url: false })),
            // Path-style, with the SDKs' x-id parameter, which is ignored.
            ("GET", "/examplebucket/photos/2006/January/sample.jpg?x-id=GetObject", "s3.us-west-2.amazonaws.com:443", &[],
             Some("examplebucket"), Some("photos/2006/January/sample.jpg"),
             Endpoint::GetObject { range: None, conditions: Conditions::default(), part_number: None,
                                   response_overrides: ContentHeaders::default(), version_id: None }),
        ];
        for (method, target, host, extra, bucket, key, endpoint) in cases {
            let req = route(method, target, host, extra)
                .unwrap_or_else(|e| panic!("{method} {target} (Host {host}): {e}"));
            assert_eq!(req.endpoint, endpoint, "{method} {target}");
            assert_eq!(req.bucket.as_deref(), bucket, "{method} {target}");
            assert_eq!(req.key.as_deref(), key, "{method} {target}");
            assert!(!req.endpoint.name().is_empty());
        }
    }

    #[test]
    fn unsupported_requests_are_not_implemented() {
        #[rustfmt::skip]
        let cases: [(&str, &str, Extra<'_>); 37] = [
            ("GET", "/bucket?notification", &[]),
            ("POST", "/bucket?encryption", &[]),
            ("GET", "/bucket/key?encryption", &[]),
            ("GET", "/?encryption", &[]),
            // Only a multipart/form-data body is a POST Object.
            ("POST", "/bucket", &[("Content-Type", "application/x-www-form-urlencoded")]),
            ("POST", "/bucket", &[("Content-Type", "multipart/form-data")]),
            ("POST", "/bucket?ownershipControls", &[]),
            ("GET", "/bucket/key?cors", &[]),
            ("POST", "/bucket?cors", &[]),
            ("POST", "/bucket/key?acl", &[]),
            ("PUT", "/bucket/key?policy", &[]),
            ("POST", "/bucket/key?tagging", &[]),
            ("HEAD", "/bucket?tagging", &[]),
            ("PUT", "/bucket/key?tagging&uploadId=x", &[]),
            ("GET", "/bucket?tagging&location", &[]),
            ("POST", "/bucket?lifecycle", &[]),
            ("GET", "/bucket/key?lifecycle", &[]),
            ("GET", "/?acl", &[]),
            ("POST", "/bucket/key?restore", &[]),
            ("POST", "/bucket/key?select&select-type=2", &[]),
            ("POST", "/bucket?versioning", &[]),
            ("GET", "/bucket/key?versions", &[]),
            ("DELETE", "/bucket?uploads", &[]),
            ("POST", "/bucket", &[]),
            ("POST", "/bucket/key", &[]),
            ("POST", "/bucket/key?delete", &[]),
            ("PATCH", "/bucket/key", &[]),
            ("OPTIONS", "/bucket/key", &[]),
            ("get", "/bucket/key", &[]),
            ("PUT", "/", &[]),
            ("GET", "/bucket?location&versioning", &[]),
            ("GET", "/bucket?uploadId=x", &[]),
            ("GET", "/bucket/key?uploads", &[]),
            ("POST", "/bucket/key?uploads&uploadId=x", &[]),
            ("HEAD", "/bucket/key?uploadId=x", &[("Range", "bytes=0-1")]),
            ("PUT", "/bucket/key?attributes", &[("x-amz-object-attributes", "ETag")]),
            ("GET", "/bucket/key?attributes&uploadId=x", &[("x-amz-object-attributes", "ETag")]),
        ];
        for (method, target, extra) in cases {
            let e = route(method, target, "localhost:9000", extra).expect_err(target);
            assert_eq!(e.code, S3ErrorCode::NotImplemented, "{method} {target}");
            assert_eq!(e.status(), 501);
        }
    }

    /// Ferry's own bucket fence: POST only (GET, PUT or DELETE with it are no operation), a
    /// token of safe characters, a bounded lease.
    #[test]
    fn bucket_fences_route_and_check_their_parameters() {
        let fence = |target| route("POST", target, "localhost", &[]).map(|r| r.endpoint);
        assert_eq!(
            fence("/bkt?x-ferry-fence=a-B_9&lease-seconds=30"),
            Ok(Endpoint::BucketFence {
                token: b("a-B_9"),
                lease_seconds: 30
            })
        );
        assert_eq!(
            fence("/bkt?lease-seconds=0&x-ferry-fence=t"),
            Ok(Endpoint::BucketFence {
                token: b("t"),
                lease_seconds: 0
            })
        );
        let long = alloc::format!("/bkt?x-ferry-fence={}&lease-seconds=1", "t".repeat(65));
        for target in [
            "/bkt?x-ferry-fence=t",
            "/bkt?x-ferry-fence=t&lease-seconds=301",
            "/bkt?x-ferry-fence=t&lease-seconds=-1",
            "/bkt?x-ferry-fence=a%2Fb&lease-seconds=1",
            long.as_str(),
        ] {
            assert_eq!(
                fence(target).map_err(|e| e.code),
                Err(S3ErrorCode::InvalidArgument),
                "{target}"
            );
        }
        for method in ["GET", "PUT", "DELETE", "HEAD"] {
            let e = route(method, "/bkt?x-ferry-fence=t&lease-seconds=1", "h", &[]);
            assert_eq!(e.map_err(|e| e.code), Err(S3ErrorCode::NotImplemented));
        }
        let e = route(
            "POST",
            "/bkt?x-ferry-fence=t&lease-seconds=1&delete",
            "h",
            &[],
        );
        assert_eq!(e.map_err(|e| e.code), Err(S3ErrorCode::NotImplemented));
    }

    #[test]
    fn object_attributes_are_checked() {
        fn code(extra: Extra<'_>) -> Result<(ObjectAttributes, u32, u32), S3ErrorCode> {
            match route("GET", "/bucket/k?attributes", "h", extra).map(|r| r.endpoint) {
                Ok(Endpoint::GetObjectAttributes {
                    attributes,
                    max_parts,
                    part_number_marker,
                    ..
                }) => Ok((attributes, max_parts, part_number_marker)),
                Ok(other) => panic!("routed to {}", other.name()),
                Err(e) => Err(e.code),
            }
        }
        for extra in [
            &[][..],
            &[("x-amz-object-attributes", " , ")],
            &[("x-amz-object-attributes", "ETag,Size")],
            &[("x-amz-object-attributes", "etag")],
            &[
                ("x-amz-object-attributes", "ETag"),
                ("x-amz-max-parts", "-1"),
            ],
            &[
                ("x-amz-object-attributes", "ETag"),
                ("x-amz-part-number-marker", "x"),
            ],
        ] {
            assert_eq!(code(extra), Err(S3ErrorCode::InvalidArgument), "{extra:?}");
        }
        // Several headers and spaces after commas, as some clients send them.
        let both = ObjectAttributes {
            etag: true,
            object_size: true,
            checksum: true,
            ..ObjectAttributes::default()
        };
        assert_eq!(
            code(&[
                ("x-amz-object-attributes", "ETag, ObjectSize"),
                ("x-amz-object-attributes", "Checksum")
            ]),
            Ok((both, 1000, 0))
        );
        let e = route(
            "GET",
            "/bucket/k?attributes&versionId=v1",
            "h",
            &[("x-amz-object-attributes", "ETag")],
        );
        assert_eq!(e.map_err(|e| e.code), Err(S3ErrorCode::InvalidArgument));
    }

    #[test]
    fn unknown_subresources_are_not_implemented_and_other_parameters_pass() {
        for target in [
            "/bucket/key?foo",
            "/bucket?objectlambda",
            "/bucket?attributes",
            "/bucket/key?attributes&foo",
        ] {
            let e = route("GET", target, "h", &[]).expect_err(target);
            assert_eq!(e.code, S3ErrorCode::NotImplemented, "{target}");
        }
        // Valued parameters S3 ignores (a cache buster), the SDKs' x-id, response overrides.
        for target in [
            "/bucket/key?x-id=GetObject",
            "/bucket/key?_=1700000000",
            "/bucket/key?response-content-type=text%2Fplain",
            "/bucket?list-type=2&prefix=&delimiter=",
            "/bucket/key?versionId=null",
        ] {
            assert!(route("GET", target, "h", &[]).is_ok(), "{target}");
        }
    }

    /// Subresources the router does not serve, in the requests of the S3 API reference (and
    /// others' own): routed by what they touch, the 501 kept aside for the caller.
    #[test]
    fn unknown_subresources_route_by_scope() {
        use Scope::{BucketConfig, Object, Service};
        let bucket = "examplebucket.s3.amazonaws.com";
        #[rustfmt::skip]
        let cases: [(&str, &str, &str, Scope, &str); 32] = [
            // GetBucketWebsite / PutBucketWebsite / DeleteBucketWebsite
            ("GET", "/?website", bucket, BucketConfig, "website"),
            ("PUT", "/?website", bucket, BucketConfig, "website"),
            ("DELETE", "/?website", bucket, BucketConfig, "website"),
            // Get/PutBucketNotificationConfiguration, Get/PutBucketLogging
            ("GET", "/?notification", bucket, BucketConfig, "notification"),
            ("PUT", "/?notification", bucket, BucketConfig, "notification"),
            ("GET", "/?logging", bucket, BucketConfig, "logging"),
            ("PUT", "/?logging", bucket, BucketConfig, "logging"),
            // Request payment, transfer acceleration
            ("GET", "/?requestPayment", bucket, BucketConfig, "requestPayment"),
            ("PUT", "/?requestPayment", bucket, BucketConfig, "requestPayment"),
            ("GET", "/?accelerate", bucket, BucketConfig, "accelerate"),
            ("PUT", "/?accelerate", bucket, BucketConfig, "accelerate"),
            // Replication
            ("GET", "/?replication", bucket, BucketConfig, "replication"),
            ("PUT", "/?replication", bucket, BucketConfig, "replication"),
            ("DELETE", "/?replication", bucket, BucketConfig, "replication"),
            // Analytics, inventory, metrics, intelligent tiering: by id, and listed
            ("GET", "/?analytics&id=list1", bucket, BucketConfig, "analytics"),
            ("GET", "/?analytics", bucket, BucketConfig, "analytics"),
            ("PUT", "/?inventory&id=report1", bucket, BucketConfig, "inventory"),
            ("DELETE", "/?metrics&id=EntireBucket", bucket, BucketConfig, "metrics"),
            ("GET", "/?intelligent-tiering&id=tier1", bucket, BucketConfig, "intelligent-tiering"),
            // CreateSession names a bucket
            ("GET", "/?session", bucket, BucketConfig, "session"),
            // Path-style, and a parameter of nobody's
            ("GET", "/examplebucket?website", "s3.amazonaws.com", BucketConfig, "website"),
            ("GET", "/examplebucket?attributes", "s3.amazonaws.com", BucketConfig, "attributes"),
            ("HEAD", "/examplebucket?objectlambda", "s3.amazonaws.com", BucketConfig, "objectlambda"),
            // RestoreObject, SelectObjectContent, GetObjectTorrent, RenameObject
            ("POST", "/example-object?restore", bucket, Object, "restore"),
            ("POST", "/example-object?restore&versionId=null", bucket, Object, "restore"),
            ("POST", "/example-object?select&select-type=2", bucket, Object, "select"),
            ("GET", "/example-object?torrent", bucket, Object, "torrent"),
            ("PUT", "/example-object?renameObject", bucket, Object, "renameObject"),
            ("GET", "/examplebucket/dir/key?foo", "s3.amazonaws.com", Object, "foo"),
            ("GET", "/example-object?attributes&foo", bucket, Object, "foo"),
            // No bucket: the service
            ("GET", "/?foo", "s3.amazonaws.com", Service, "foo"),
            ("PUT", "/?website", "s3.amazonaws.com", Service, "website"),
        ];
        for (method, target, host, scope, sub) in cases {
            let req = Endpoint::route(
                method,
                target,
                &[Header {
                    name: "Host",
                    value: host.as_bytes(),
                }],
                &cfg(),
            )
            .unwrap_or_else(|e| panic!("{method} {target}: {e}"));
            assert_eq!(
                req.endpoint,
                Endpoint::Unknown {
                    scope,
                    subresource: b(sub)
                },
                "{method} {target}"
            );
            let refused = req.refused.as_ref().map(|e| e.code);
            assert_eq!(
                refused,
                Some(S3ErrorCode::NotImplemented),
                "{method} {target}"
            );
            // The node's router answers the 501 itself.
            let e = route(method, target, host, &[]).expect_err(target);
            assert_eq!(e.code, S3ErrorCode::NotImplemented, "{method} {target}");
        }
        // Other methods are nobody's requests.
        for method in ["PATCH", "OPTIONS", "get"] {
            let e = Endpoint::route(method, "/bkt?website", &[], &cfg()).expect_err(method);
            assert_eq!(e.code, S3ErrorCode::NotImplemented);
        }
        // Known operations with a refused header route to the operation, the refusal beside it.
        let refused: [(&str, &str, Extra<'_>, &str, S3ErrorCode); 3] = [
            (
                "PUT",
                "/bkt/k",
                &[("x-amz-website-redirect-location", "/x")],
                "PutObject",
                S3ErrorCode::NotImplemented,
            ),
            (
                "PUT",
                "/bkt/k",
                &[("x-amz-write-offset-bytes", "0")],
                "PutObject",
                S3ErrorCode::NotImplemented,
            ),
            (
                "DELETE",
                "/bkt/k",
                &[("x-amz-acl", "public-read")],
                "DeleteObject",
                S3ErrorCode::AccessControlListNotSupported,
            ),
        ];
        for (method, target, extra, name, code) in refused {
            let hs: Vec<Header<'_>> = extra
                .iter()
                .map(|&(name, v)| Header {
                    name,
                    value: v.as_bytes(),
                })
                .collect();
            let req = Endpoint::route(method, target, &hs, &cfg()).expect(target);
            assert_eq!(req.endpoint.name(), name, "{extra:?}");
            assert_eq!(req.refused.map(|e| e.code), Some(code), "{extra:?}");
        }
        // Nothing refused in a plain request; a malformed one is still an error.
        let req = Endpoint::route("GET", "/bkt/k", &[], &cfg()).unwrap();
        assert_eq!(req.refused, None);
        let e = Endpoint::route("GET", "/bkt/k?partNumber=0&torrent", &[], &cfg());
        assert!(
            e.is_ok(),
            "an unknown subresource is routed before its parameters are read"
        );
        let e = Endpoint::route("GET", "/Bad_Bucket?website", &[], &cfg()).unwrap_err();
        assert_eq!(e.code, S3ErrorCode::InvalidBucketName);
    }

    #[test]
    fn put_get_and_head_object_take_sse_headers() {
        let customer = [
            ("x-amz-server-side-encryption-customer-algorithm", "AES256"),
            ("x-amz-server-side-encryption-customer-key", "a2V5"),
            ("x-amz-server-side-encryption-customer-key-MD5", "bWQ1"),
        ];
        let kms = [
            ("x-amz-server-side-encryption", "aws:kms"),
            ("x-amz-server-side-encryption-aws-kms-key-id", "k1"),
            ("x-amz-server-side-encryption-context", "e30="),
            ("x-amz-server-side-encryption-bucket-key-enabled", "true"),
        ];
        for (method, extra) in [
            ("PUT", &[("x-amz-server-side-encryption", "AES256")][..]),
            ("PUT", &kms[..]),
            // A key id without aws:kms reaches the handler, for S3's 400.
            ("PUT", &kms[1..2]),
            ("PUT", &customer[..]),
            ("GET", &customer[..]),
            ("HEAD", &customer[..]),
        ] {
            let r = route(method, "/bkt/k", "h", extra).expect(method);
            assert!(
                matches!(
                    r.endpoint,
                    Endpoint::PutObject { .. }
                        | Endpoint::GetObject { .. }
                        | Endpoint::HeadObject { .. }
                ),
                "{method}"
            );
        }
        // SSE-S3 and SSE-KMS are asked for on writes only: a read that names them is S3's
        // 400 InvalidArgument.
        for (method, extra) in [
            ("GET", &[("x-amz-server-side-encryption", "AES256")][..]),
            ("HEAD", &[("x-amz-server-side-encryption", "AES256")][..]),
            ("GET", &kms[..1]),
            ("HEAD", &kms[..]),
            ("GET", &kms[1..2]),
            ("HEAD", &kms[2..3]),
            ("GET", &kms[3..]),
        ] {
            let e = route(method, "/bkt/k", "h", extra).expect_err(method);
            assert_eq!(e.code, S3ErrorCode::InvalidArgument, "{method} {extra:?}");
        }
        // Elsewhere (a listing), still not implemented.
        let e = route("GET", "/bkt", "h", &kms[..1]).expect_err("listing with SSE");
        assert_eq!(e.code, S3ErrorCode::NotImplemented);
    }

    #[test]
    fn encryption_headers_reach_the_operations_that_take_them() {
        let customer = ("x-amz-server-side-encryption-customer-algorithm", "AES256");
        let source = ("x-amz-copy-source-server-side-encryption-customer-key", "k");
        let sse_s3 = ("x-amz-server-side-encryption", "AES256");
        let taken: [(&str, &str, Extra<'_>); 10] = [
            ("PUT", "/bkt/k", &[sse_s3, customer]),
            ("POST", "/bkt/k?uploads", &[sse_s3, customer]),
            (
                "PUT",
                "/bkt/k",
                &[("x-amz-copy-source", "bkt/s"), sse_s3, customer, source],
            ),
            (
                "PUT",
                "/bkt/k?partNumber=1&uploadId=u",
                &[("x-amz-copy-source", "bkt/s"), customer, source],
            ),
            ("PUT", "/bkt/k?partNumber=1&uploadId=u", &[customer]),
            ("POST", "/bkt/k?uploadId=u", &[customer]),
            ("GET", "/bkt/k", &[customer]),
            ("HEAD", "/bkt/k", &[customer]),
            (
                "GET",
                "/bkt/k?attributes",
                &[customer, ("x-amz-object-attributes", "ETag")],
            ),
            // A copy onto itself that changes only its encryption is legal.
            ("PUT", "/bkt/k", &[("x-amz-copy-source", "bkt/k"), sse_s3]),
        ];
        for (method, target, extra) in taken {
            if let Err(e) = route(method, target, "h", extra) {
                panic!("{method} {target} {extra:?}: {e:?}");
            }
        }
        let e = route("PUT", "/bkt/k", "h", &[("x-amz-copy-source", "bkt/k")]).unwrap_err();
        assert_eq!(e.code, S3ErrorCode::InvalidRequest);
    }

    #[test]
    fn feature_headers_are_refused_not_ignored() {
        let not_implemented: [(&str, &str, Extra<'_>); 9] = [
            (
                "POST",
                "/bkt/k?uploads",
                &[("x-amz-server-side-encryption", "aws:kms:dsse")],
            ),
            (
                "PUT",
                "/bkt/k",
                &[("x-amz-server-side-encryption", "aws:kms:dsse")],
            ),
            // (On GetObject: 400 InvalidArgument, as AWS answers.)
            (
                "GET",
                "/bkt?list-type=2",
                &[("x-amz-server-side-encryption", "aws:kms")],
            ),
            // A part takes its upload's encryption, not one of its own.
            (
                "PUT",
                "/bkt/k?partNumber=1&uploadId=u",
                &[("X-Amz-Server-Side-Encryption", "AES256")],
            ),
            (
                "PUT",
                "/bkt/k",
                &[
                    ("x-amz-copy-source", "bkt/s"),
                    ("x-amz-server-side-encryption", "aws:kms:dsse"),
                ],
            ),
            // A source key where nothing is copied.
            (
                "GET",
                "/bkt/k",
                &[(
                    "x-amz-copy-source-server-side-encryption-customer-algorithm",
                    "AES256",
                )],
            ),
            (
                "PUT",
                "/bkt/k?partNumber=1&uploadId=u",
                &[("x-amz-server-side-encryption-aws-kms-key-id", "k")],
            ),
            (
                "PUT",
                "/bkt/k",
                &[("x-amz-website-redirect-location", "/x")],
            ),
            ("PUT", "/bkt/k", &[("x-amz-write-offset-bytes", "0")]),
        ];
        for (method, target, extra) in not_implemented {
            let e = route(method, target, "h", extra).expect_err(target);
            assert_eq!(e.code, S3ErrorCode::NotImplemented, "{extra:?}");
        }
        let acl: [(&str, &str, Extra<'_>); 5] = [
            (
                "PUT",
                "/bkt/k?partNumber=1&uploadId=u",
                &[("x-amz-acl", "public-read-write")],
            ),
            ("POST", "/bkt/k?uploadId=u", &[("x-amz-grant-read", "id=1")]),
            ("DELETE", "/bkt/k", &[("x-amz-acl", "public-read")]),
            (
                "PUT",
                "/bkt/k?tagging",
                &[("x-amz-grant-full-control", "id=1")],
            ),
            (
                "POST",
                "/bkt?delete",
                &[("x-amz-acl", "authenticated-read")],
            ),
        ];
        for (method, target, extra) in acl {
            let e = route(method, target, "h", extra).expect_err(target);
            assert_eq!(
                e.code,
                S3ErrorCode::AccessControlListNotSupported,
                "{extra:?}"
            );
            assert_eq!(e.status(), 400);
        }
        // What asks for nothing more than Ferry does passes: owner-only ACLs, no tags, lock off,
        // the checksums current SDKs send by default.
        let fine: [(&str, &str, Extra<'_>); 8] = [
            ("PUT", "/bkt/k", &[("x-amz-acl", "private")]),
            (
                "PUT",
                "/bkt/k",
                &[("x-amz-acl", "bucket-owner-full-control")],
            ),
            ("PUT", "/bkt/k", &[("x-amz-tagging", "a=b")]),
            (
                "PUT",
                "/bkt",
                &[("x-amz-bucket-object-lock-enabled", "false")],
            ),
            (
                "PUT",
                "/bkt",
                &[("x-amz-object-ownership", "BucketOwnerEnforced")],
            ),
            ("PUT", "/bkt", &[("x-amz-object-ownership", "ObjectWriter")]),
            (
                "PUT",
                "/bkt/k",
                &[
                    ("x-amz-checksum-crc32", "AAAAAA=="),
                    ("x-amz-sdk-checksum-algorithm", "CRC32"),
                ],
            ),
            ("GET", "/bkt/k", &[("x-amz-checksum-mode", "ENABLED")]),
        ];
        for (method, target, extra) in fine {
            assert!(route(method, target, "h", extra).is_ok(), "{extra:?}");
        }
    }

    #[test]
    fn invalid_requests_get_the_s3_error() {
        let long_key = alloc::format!("/bucket/{}", "k".repeat(1025));
        #[rustfmt::skip]
        let cases: [(&str, &str, Extra<'_>, S3ErrorCode); 31] = [
            ("GET", "/Bucket/key", &[], S3ErrorCode::InvalidBucketName),
            ("GET", "/b/key", &[], S3ErrorCode::InvalidBucketName),
            ("GET", "/192.168.5.4", &[], S3ErrorCode::InvalidBucketName),
            ("GET", "/doc-.bucket/key", &[], S3ErrorCode::InvalidBucketName),
            ("GET", "//key", &[], S3ErrorCode::InvalidBucketName),
            ("GET", long_key.as_str(), &[], S3ErrorCode::KeyTooLongError),
            ("GET", "/bucket?max-keys=-1", &[], S3ErrorCode::InvalidArgument),
            ("GET", "/bucket?list-type=2&max-keys=ten", &[], S3ErrorCode::InvalidArgument),
            ("GET", "/bucket?list-type=3", &[], S3ErrorCode::InvalidArgument),
            ("GET", "/bucket?list-type=2&fetch-owner=maybe", &[], S3ErrorCode::InvalidArgument),
            ("GET", "/bucket?encoding-type=base64", &[], S3ErrorCode::InvalidArgument),
            ("GET", "/?max-buckets=0", &[], S3ErrorCode::InvalidArgument),
            ("GET", "/?max-buckets=10001", &[], S3ErrorCode::InvalidArgument),
            ("GET", "/bucket/key?partNumber=0", &[], S3ErrorCode::InvalidArgument),
            ("PUT", "/bucket/key?partNumber=10001&uploadId=u", &[], S3ErrorCode::InvalidArgument),
            ("PUT", "/bucket/key?uploadId=u", &[], S3ErrorCode::InvalidArgument),
            ("PUT", "/bucket/key?partNumber=1", &[], S3ErrorCode::InvalidArgument),
            ("GET", "/bucket/key?partNumber=1", &[("Range", "bytes=0-1")], S3ErrorCode::InvalidRequest),
            ("GET", "/bucket/key?versionId=3HL4kqtJlcpXroDTDmJ", &[], S3ErrorCode::InvalidArgument),
            ("GET", "/bucket/key?tagging&versionId=3HL4kqtJlcpXroDTDmJ", &[], S3ErrorCode::InvalidArgument),
            ("PUT", "/bucket/key?tagging&versionId=v1", &[], S3ErrorCode::InvalidArgument),
            ("DELETE", "/bucket/key?tagging&versionId=v1", &[], S3ErrorCode::InvalidArgument),
            ("DELETE", "/bucket/key?versionId=", &[], S3ErrorCode::InvalidArgument),
            ("GET", "/bucket?versions&version-id-marker=null", &[], S3ErrorCode::InvalidArgument),
            ("GET", "/bucket?versions&key-marker=a&version-id-marker=zz", &[], S3ErrorCode::InvalidArgument),
            ("GET", "/bucket/%ZZ", &[], S3ErrorCode::InvalidArgument),
            ("GET", "/bucket/%C3%28", &[], S3ErrorCode::InvalidArgument),
            ("GET", "bucket/key", &[], S3ErrorCode::InvalidRequest),
            ("PUT", "/bucket/key", &[("x-amz-copy-source", "/bucket/key")], S3ErrorCode::InvalidRequest),
            ("PUT", "/bucket/key", &[("x-amz-copy-source", "/bucket/src"), ("x-amz-metadata-directive", "MERGE")],
             S3ErrorCode::InvalidArgument),
            ("PUT", "/bucket/key", &[("Content-MD5", "not-base64")], S3ErrorCode::InvalidDigest),
        ];
        for (method, target, extra, code) in cases {
            let e = route(method, target, "localhost", extra).expect_err(target);
            assert_eq!(e.code, code, "{method} {target}");
        }
    }

    #[test]
    fn path_distinctions() {
        let key = |t: &str| {
            route("GET", t, "localhost", &[])
                .map(|r| {
                    (
                        r.bucket.map(|b| b.into_owned()),
                        r.key.map(|k| k.into_owned()),
                    )
                })
                .expect(t)
        };
        let s = |v: &str| Some(String::from(v));
        assert_eq!(key("/"), (None, None));
        assert_eq!(key("/bucket"), (s("bucket"), None));
        assert_eq!(key("/bucket/"), (s("bucket"), None));
        assert_eq!(key("/bucket/key"), (s("bucket"), s("key")));
        assert_eq!(key("/bucket/key/"), (s("bucket"), s("key/")));
        assert_eq!(key("/bucket//key"), (s("bucket"), s("/key")));
        assert_eq!(key("/bucket/a%20b+c%2Fd"), (s("bucket"), s("a b+c/d")));
        assert_eq!(key("/bucket/caf%C3%A9?x=1"), (s("bucket"), s("café")));
        assert_eq!(key("/bucket/%3Fq"), (s("bucket"), s("?q")));
        // Absolute-form takes the authority as host.
        assert_eq!(
            key("http://s3.amazonaws.com/bucket/k"),
            (s("bucket"), s("k"))
        );
        assert_eq!(
            key("http://bucket.s3.amazonaws.com/k/"),
            (s("bucket"), s("k/"))
        );
        assert_eq!(key("HTTPS://bucket.s3.amazonaws.com"), (s("bucket"), None));
        // Virtual-hosted: the whole path is the key.
        let vh = |t: &str| {
            let r = route("GET", t, "my.bucket.s3.amazonaws.com:8443", &[]).expect(t);
            assert!(r.virtual_hosted);
            (
                r.bucket.map(|b| b.into_owned()),
                r.key.map(|k| k.into_owned()),
            )
        };
        assert_eq!(vh("/"), (s("my.bucket"), None));
        assert_eq!(vh("/key/"), (s("my.bucket"), s("key/")));
        assert_eq!(vh("//key"), (s("my.bucket"), s("/key")));
        assert_eq!(vh("/bucket/key"), (s("my.bucket"), s("bucket/key")));
    }

    #[test]
    fn an_invalid_virtual_host_is_an_error() {
        let c = AddressingConfig::with_base_domains(["example.com", "s3.example.com"]);
        // A host that names an invalid bucket is an error, not path-style.
        let e = Endpoint::parse(
            "GET",
            "/",
            &[Header {
                name: "host",
                value: b"Bad_Bucket.example.com",
            }],
            &c,
        )
        .expect_err("invalid bucket");
        assert_eq!(e.code, S3ErrorCode::InvalidBucketName);
    }

    #[test]
    fn copy_source_forms() {
        fn cs(v: &str) -> S3Result<CopySource<'_>> {
            CopySource::parse(v.as_bytes())
        }
        let ok = |b: &str, k: &str| {
            Ok(CopySource {
                bucket: Cow::Owned(String::from(b)),
                key: Cow::Owned(String::from(k)),
                version_id: None,
            })
        };
        assert_eq!(cs("/bucket/key"), ok("bucket", "key"));
        assert_eq!(cs("bucket/dir/key"), ok("bucket", "dir/key"));
        assert_eq!(
            cs("/bucket/a%20b%3Fc?versionId=null").map(|c| c.version_id),
            Ok(Some(VersionId::Null))
        );
        assert_eq!(
            cs("/bucket/k?versionId=fffffffffffffffe").map(|c| (c.key, c.version_id)),
            Ok((Cow::Borrowed("k"), Some(VersionId::Seq(1))))
        );
        assert_eq!(
            cs("/bucket/a%20b%3Fc").map(|c| c.key),
            Ok(Cow::Owned(String::from("a b?c")))
        );
        assert_eq!(cs("/bucket/a+b"), ok("bucket", "a+b"));
        for (bad, code) in [
            ("/bucket", S3ErrorCode::InvalidArgument),
            ("/bucket/", S3ErrorCode::InvalidArgument),
            ("", S3ErrorCode::InvalidArgument),
            ("/Bucket/key", S3ErrorCode::InvalidBucketName),
            ("/bucket/key?versionId=abc", S3ErrorCode::InvalidArgument),
            ("/bucket/%zz", S3ErrorCode::InvalidArgument),
            (
                "arn:aws:s3:us-west-2:123456789012:accesspoint/my-ap/object/key",
                S3ErrorCode::InvalidBucketName,
            ),
        ] {
            assert_eq!(cs(bad).expect_err(bad).code, code, "{bad}");
        }
        assert_eq!(
            CopySource::parse(b"/bucket/\xff")
                .expect_err("not utf-8")
                .code,
            S3ErrorCode::InvalidArgument
        );
    }

    #[test]
    fn query_is_kept_sorted() {
        let r = route(
            "GET",
            "/bucket?prefix=a&list-type=2&delimiter=%2F",
            "localhost",
            &[],
        )
        .expect("valid");
        let names: Vec<&str> = r.query.iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["delimiter", "list-type", "prefix"]);
        assert_eq!(r.raw_path, "/bucket");
        assert_eq!(r.bucket_str(), "bucket");
        assert_eq!(r.key_str(), "");
    }
}
