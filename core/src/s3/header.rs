//! Header names: every S3 and Ferry header name the code reads or writes, in one place.
//!
//! Lower-case, as the code compares them (names are compared ignoring ASCII case; the SSE-C
//! key-MD5 headers keep AWS's `-MD5` spelling, the one they are written with). A constant is
//! named after its header: upper-case, `-` as `_`, `server-side-encryption` as `SSE`; a
//! prefix (matched with a case-insensitive `starts_with`) ends in `_PREFIX`.
//!
//! Some names also serve as POST Object form fields (a form carries its headers as fields) and
//! SigV4 names its presigned query parameters after headers; those uses read the same text.
//! The title-case spellings of response headers (`ETag`, `Content-Type`, ...) that the code
//! writes as such are not here: changing a header's case changes the bytes sent.

// --- Standard HTTP headers, as S3 uses them -----------------------------------------------

/// `Authorization`.
pub const AUTHORIZATION: &str = "authorization";
/// `Host`.
pub const HOST: &str = "host";
/// `Date`, the fallback when `x-amz-date` is absent.
pub const DATE: &str = "date";
/// `User-Agent`.
pub const USER_AGENT: &str = "user-agent";
/// `Referer` (as HTTP spells it; `aws:Referer` in policies).
pub const REFERER: &str = "referer";
/// `Content-Length`.
pub const CONTENT_LENGTH: &str = "content-length";
/// `Content-MD5`: the base64 MD5 of a request's body.
pub const CONTENT_MD5: &str = "content-md5";
/// `Content-Type`.
pub const CONTENT_TYPE: &str = "content-type";
/// `Content-Encoding` (carries `aws-chunked`).
pub const CONTENT_ENCODING: &str = "content-encoding";
/// `Content-Disposition`.
pub const CONTENT_DISPOSITION: &str = "content-disposition";
/// `Content-Language`.
pub const CONTENT_LANGUAGE: &str = "content-language";
/// `Cache-Control`.
pub const CACHE_CONTROL: &str = "cache-control";
/// `Expires`.
pub const EXPIRES: &str = "expires";
/// `Range`.
pub const RANGE: &str = "range";
/// `Content-Range`.
pub const CONTENT_RANGE: &str = "content-range";
/// `ETag`.
pub const ETAG: &str = "etag";

// --- Request conditions -------------------------------------------------------------------

/// `If-Match`.
pub const IF_MATCH: &str = "if-match";
/// `If-None-Match`.
pub const IF_NONE_MATCH: &str = "if-none-match";
/// `If-Modified-Since`.
pub const IF_MODIFIED_SINCE: &str = "if-modified-since";
/// `If-Unmodified-Since`.
pub const IF_UNMODIFIED_SINCE: &str = "if-unmodified-since";
/// Prefix of the conditions S3 has beside the standard ones (`x-amz-if-*`).
pub const X_AMZ_IF_PREFIX: &str = "x-amz-if-";
/// CopyObject / UploadPartCopy: `If-Match` on the copy source.
pub const X_AMZ_COPY_SOURCE_IF_MATCH: &str = "x-amz-copy-source-if-match";
/// CopyObject / UploadPartCopy: `If-None-Match` on the copy source.
pub const X_AMZ_COPY_SOURCE_IF_NONE_MATCH: &str = "x-amz-copy-source-if-none-match";
/// CopyObject / UploadPartCopy: `If-Modified-Since` on the copy source.
pub const X_AMZ_COPY_SOURCE_IF_MODIFIED_SINCE: &str = "x-amz-copy-source-if-modified-since";
/// CopyObject / UploadPartCopy: `If-Unmodified-Since` on the copy source.
pub const X_AMZ_COPY_SOURCE_IF_UNMODIFIED_SINCE: &str = "x-amz-copy-source-if-unmodified-since";
/// An append's offset (S3 Express; refused elsewhere).
pub const X_AMZ_WRITE_OFFSET_BYTES: &str = "x-amz-write-offset-bytes";

// --- Signatures (SigV4, aws-chunked bodies, POST Object) ----------------------------------

/// Prefix of every header that must be signed when present (SigV2 signs them all).
pub const X_AMZ_PREFIX: &str = "x-amz-";
/// `x-amz-date`: the signature's time.
pub const X_AMZ_DATE: &str = "x-amz-date";
/// `x-amz-content-sha256`: the payload's hash, or how it is sent (`UNSIGNED-PAYLOAD`,
/// `STREAMING-*`).
pub const X_AMZ_CONTENT_SHA256: &str = "x-amz-content-sha256";
/// `x-amz-decoded-content-length` (length of an aws-chunked body once decoded).
pub const X_AMZ_DECODED_CONTENT_LENGTH: &str = "x-amz-decoded-content-length";
/// `x-amz-trailer` (the trailer an aws-chunked body ends with).
pub const X_AMZ_TRAILER: &str = "x-amz-trailer";
/// `x-amz-trailer-signature` (inside the trailer section).
pub const X_AMZ_TRAILER_SIGNATURE: &str = "x-amz-trailer-signature";
/// `x-amz-security-token` (temporary credentials).
pub const X_AMZ_SECURITY_TOKEN: &str = "x-amz-security-token";
/// POST Object's (and a presigned URL's) signing algorithm field.
pub const X_AMZ_ALGORITHM: &str = "x-amz-algorithm";
/// POST Object's (and a presigned URL's) credential field.
pub const X_AMZ_CREDENTIAL: &str = "x-amz-credential";
/// POST Object's (and a presigned URL's) signature field.
pub const X_AMZ_SIGNATURE: &str = "x-amz-signature";

// --- Checksums ----------------------------------------------------------------------------

/// Prefix of the checksum headers (`x-amz-checksum-crc32`, ..., `-algorithm`, `-type`,
/// `-mode`).
pub const X_AMZ_CHECKSUM_PREFIX: &str = "x-amz-checksum-";
/// The algorithm of a write's checksum (or of an upload's parts).
pub const X_AMZ_CHECKSUM_ALGORITHM: &str = "x-amz-checksum-algorithm";
/// The SDKs' name for the algorithm of a checksum sent as a trailer.
pub const X_AMZ_SDK_CHECKSUM_ALGORITHM: &str = "x-amz-sdk-checksum-algorithm";
/// `COMPOSITE` or `FULL_OBJECT`.
pub const X_AMZ_CHECKSUM_TYPE: &str = "x-amz-checksum-type";
/// A read's `ENABLED`: return the object's checksum.
pub const X_AMZ_CHECKSUM_MODE: &str = "x-amz-checksum-mode";
/// A CRC32 checksum (base64).
pub const X_AMZ_CHECKSUM_CRC32: &str = "x-amz-checksum-crc32";
/// A CRC32C checksum (base64).
pub const X_AMZ_CHECKSUM_CRC32C: &str = "x-amz-checksum-crc32c";
/// A CRC64NVME checksum (base64).
pub const X_AMZ_CHECKSUM_CRC64NVME: &str = "x-amz-checksum-crc64nvme";
/// A SHA-1 checksum (base64).
pub const X_AMZ_CHECKSUM_SHA1: &str = "x-amz-checksum-sha1";
/// A SHA-256 checksum (base64).
pub const X_AMZ_CHECKSUM_SHA256: &str = "x-amz-checksum-sha256";

// --- Server-side encryption ---------------------------------------------------------------

/// `x-amz-server-side-encryption`: request and response (`AES256`, `aws:kms`, ...); also the
/// prefix of the other SSE headers.
pub const X_AMZ_SSE: &str = "x-amz-server-side-encryption";
/// `x-amz-server-side-encryption-aws-kms-key-id`: request and response.
pub const X_AMZ_SSE_AWS_KMS_KEY_ID: &str = "x-amz-server-side-encryption-aws-kms-key-id";
/// `x-amz-server-side-encryption-context`: request and response.
pub const X_AMZ_SSE_CONTEXT: &str = "x-amz-server-side-encryption-context";
/// `x-amz-server-side-encryption-bucket-key-enabled`: request and response.
pub const X_AMZ_SSE_BUCKET_KEY_ENABLED: &str = "x-amz-server-side-encryption-bucket-key-enabled";
/// Prefix of the SSE-C headers.
pub const X_AMZ_SSE_CUSTOMER_PREFIX: &str = "x-amz-server-side-encryption-customer-";
/// `x-amz-server-side-encryption-customer-algorithm`: request and response.
pub const X_AMZ_SSE_CUSTOMER_ALGORITHM: &str = "x-amz-server-side-encryption-customer-algorithm";
/// `x-amz-server-side-encryption-customer-key`: request only.
pub const X_AMZ_SSE_CUSTOMER_KEY: &str = "x-amz-server-side-encryption-customer-key";
/// `x-amz-server-side-encryption-customer-key-MD5`: request and response.
pub const X_AMZ_SSE_CUSTOMER_KEY_MD5: &str = "x-amz-server-side-encryption-customer-key-MD5";
/// CopyObject / UploadPartCopy: prefix of the copy source's encryption headers.
pub const X_AMZ_COPY_SOURCE_SSE: &str = "x-amz-copy-source-server-side-encryption";
/// CopyObject / UploadPartCopy: prefix of the copy source's SSE-C headers.
pub const X_AMZ_COPY_SOURCE_SSE_CUSTOMER_PREFIX: &str =
    "x-amz-copy-source-server-side-encryption-customer-";
/// CopyObject / UploadPartCopy: the algorithm of the copy source's SSE-C key.
pub const X_AMZ_COPY_SOURCE_SSE_CUSTOMER_ALGORITHM: &str =
    "x-amz-copy-source-server-side-encryption-customer-algorithm";
/// CopyObject / UploadPartCopy: the copy source's SSE-C key.
pub const X_AMZ_COPY_SOURCE_SSE_CUSTOMER_KEY: &str =
    "x-amz-copy-source-server-side-encryption-customer-key";
/// CopyObject / UploadPartCopy: the MD5 of the copy source's SSE-C key.
pub const X_AMZ_COPY_SOURCE_SSE_CUSTOMER_KEY_MD5: &str =
    "x-amz-copy-source-server-side-encryption-customer-key-MD5";

// --- Copies -------------------------------------------------------------------------------

/// CopyObject / UploadPartCopy: the source (`bucket/key`, `?versionId=`).
pub const X_AMZ_COPY_SOURCE: &str = "x-amz-copy-source";
/// UploadPartCopy: the byte range of the source.
pub const X_AMZ_COPY_SOURCE_RANGE: &str = "x-amz-copy-source-range";
/// A copy's response: the version of the source copied.
pub const X_AMZ_COPY_SOURCE_VERSION_ID: &str = "x-amz-copy-source-version-id";
/// CopyObject: `COPY` or `REPLACE` the source's metadata.
pub const X_AMZ_METADATA_DIRECTIVE: &str = "x-amz-metadata-directive";
/// CopyObject's choice between the source's tags and the request's.
pub const X_AMZ_TAGGING_DIRECTIVE: &str = "x-amz-tagging-directive";
/// The expected owner of a copy's source bucket.
pub const X_AMZ_SOURCE_EXPECTED_BUCKET_OWNER: &str = "x-amz-source-expected-bucket-owner";

// --- Objects ------------------------------------------------------------------------------

/// Prefix of user metadata headers (`x-amz-meta-*`).
pub const X_AMZ_META_PREFIX: &str = "x-amz-meta-";
/// An object's version id (response; a proxy's backends answer with it).
pub const X_AMZ_VERSION_ID: &str = "x-amz-version-id";
/// A response's word that the version is (or made) a delete marker.
pub const X_AMZ_DELETE_MARKER: &str = "x-amz-delete-marker";
/// GetObject / HeadObject with `partNumber`: the object's number of parts.
pub const X_AMZ_MP_PARTS_COUNT: &str = "x-amz-mp-parts-count";
/// An object's storage class.
pub const X_AMZ_STORAGE_CLASS: &str = "x-amz-storage-class";
/// A website redirect (refused).
pub const X_AMZ_WEBSITE_REDIRECT_LOCATION: &str = "x-amz-website-redirect-location";
/// The request header that carries an object's tags on PutObject, CopyObject and
/// CreateMultipartUpload.
pub const X_AMZ_TAGGING: &str = "x-amz-tagging";
/// The response header of GetObject and HeadObject counting an object's tags.
pub const X_AMZ_TAGGING_COUNT: &str = "x-amz-tagging-count";
/// The response header of GetObject and HeadObject naming when an object expires.
pub const X_AMZ_EXPIRATION: &str = "x-amz-expiration";
/// GetObjectAttributes: the attributes asked for.
pub const X_AMZ_OBJECT_ATTRIBUTES: &str = "x-amz-object-attributes";
/// GetObjectAttributes: the most parts listed.
pub const X_AMZ_MAX_PARTS: &str = "x-amz-max-parts";
/// GetObjectAttributes: the part number after which parts are listed.
pub const X_AMZ_PART_NUMBER_MARKER: &str = "x-amz-part-number-marker";
/// MFA delete's device and code (refused).
pub const X_AMZ_MFA: &str = "x-amz-mfa";

// --- Object lock --------------------------------------------------------------------------

/// Prefix of a write's (and GET/HEAD's) object lock headers.
pub const X_AMZ_OBJECT_LOCK_PREFIX: &str = "x-amz-object-lock-";
/// A write's (and GET/HEAD's) retention mode header.
pub const X_AMZ_OBJECT_LOCK_MODE: &str = "x-amz-object-lock-mode";
/// A write's (and GET/HEAD's) retain-until date header (ISO 8601).
pub const X_AMZ_OBJECT_LOCK_RETAIN_UNTIL_DATE: &str = "x-amz-object-lock-retain-until-date";
/// A write's (and GET/HEAD's) legal hold header (`ON` or `OFF`).
pub const X_AMZ_OBJECT_LOCK_LEGAL_HOLD: &str = "x-amz-object-lock-legal-hold";
/// CreateBucket's request header that turns object lock on (and versioning with it).
pub const X_AMZ_BUCKET_OBJECT_LOCK_ENABLED: &str = "x-amz-bucket-object-lock-enabled";
/// The header that asks to bypass GOVERNANCE retention (with `s3:BypassGovernanceRetention`).
pub const X_AMZ_BYPASS_GOVERNANCE_RETENTION: &str = "x-amz-bypass-governance-retention";

// --- ACLs ---------------------------------------------------------------------------------

/// A canned ACL.
pub const X_AMZ_ACL: &str = "x-amz-acl";
/// Prefix of the grant headers.
pub const X_AMZ_GRANT_PREFIX: &str = "x-amz-grant-";
/// Grants `READ`.
pub const X_AMZ_GRANT_READ: &str = "x-amz-grant-read";
/// Grants `WRITE`.
pub const X_AMZ_GRANT_WRITE: &str = "x-amz-grant-write";
/// Grants `READ_ACP`.
pub const X_AMZ_GRANT_READ_ACP: &str = "x-amz-grant-read-acp";
/// Grants `WRITE_ACP`.
pub const X_AMZ_GRANT_WRITE_ACP: &str = "x-amz-grant-write-acp";
/// Grants `FULL_CONTROL`.
pub const X_AMZ_GRANT_FULL_CONTROL: &str = "x-amz-grant-full-control";
/// CreateBucket's object ownership (only `BucketOwnerEnforced`, the default, is taken).
pub const X_AMZ_OBJECT_OWNERSHIP: &str = "x-amz-object-ownership";

// --- Buckets, accounts and requests -------------------------------------------------------

/// HeadBucket's answer: the bucket's region.
pub const X_AMZ_BUCKET_REGION: &str = "x-amz-bucket-region";
/// The account expected to own the bucket.
pub const X_AMZ_EXPECTED_BUCKET_OWNER: &str = "x-amz-expected-bucket-owner";
/// Requester pays.
pub const X_AMZ_REQUEST_PAYER: &str = "x-amz-request-payer";
/// The id of a request, in its response.
pub const X_AMZ_REQUEST_ID: &str = "x-amz-request-id";

// --- Ferry's own (`x-ferry-*`): the cluster's alone ---------------------------------------

/// The prefix of Ferry's own headers and query parameters: the cluster's alone (a request
/// from outside that carries one is refused, unless sealed by a cluster member).
pub const X_FERRY_PREFIX: &str = "x-ferry-";
/// The header that carries a cluster member's seal (`s3::cluster`).
pub const X_FERRY_CLUSTER_AUTH: &str = "x-ferry-cluster-auth";
/// A proxy's word on its client's address (for a node's policy conditions).
pub const X_FERRY_CLIENT_IP: &str = "x-ferry-client-ip";
/// A proxy's word on whether its client's connection is TLS (`true` / `false`).
pub const X_FERRY_CLIENT_TLS: &str = "x-ferry-client-tls";
/// A proxy's word on its client's TLS version (`1.2`, `1.3`; for `s3:TlsVersion`).
pub const X_FERRY_CLIENT_TLS_VERSION: &str = "x-ferry-client-tls-version";
/// A proxy's word on when its client signed the request (Unix seconds; for `s3:signatureAge`,
/// the proxy's own signature being newer).
pub const X_FERRY_CLIENT_SIGNED_AT: &str = "x-ferry-client-signed-at";
/// A proxy's word, on the write of a copy it makes between two nodes, on the copy's
/// `x-amz-copy-source` (as the client sent it; for `s3:x-amz-copy-source`).
pub const X_FERRY_COPY_SOURCE: &str = "x-ferry-copy-source";
/// A proxy's word, on the write of a copy it makes between two nodes, on the copy's
/// `x-amz-metadata-directive` (for `s3:x-amz-metadata-directive`).
pub const X_FERRY_METADATA_DIRECTIVE: &str = "x-ferry-metadata-directive";
/// The header with which a DeleteBucket names the `BucketFence` it holds (the node deletes
/// only while that fence holds). Also the fence's sub-resource (`?x-ferry-fence=`).
pub const X_FERRY_FENCE: &str = "x-ferry-fence";
/// The header of a BucketFence's answer that says whether the fenced bucket is empty (`true`
/// or `false`): what the proxy's DeleteBucket needs to know of each node.
pub const X_FERRY_BUCKET_EMPTY: &str = "x-ferry-bucket-empty";
/// A node's `403 AccessDenied` to a read of an object that is not there, by a caller that may
/// not list its bucket (who must not learn that it is absent), in a request the cluster sealed:
/// the object is absent, no delete marker in its place (`NoSuchKey` or `NoSuchVersion`, what a
/// caller that may list is told), so a proxy draining earlier layouts tries its other owners,
/// as after a `404`, and a copy through the proxy answers as one beside its source does.
/// Never relayed to a client.
pub const X_FERRY_MISSING: &str = "x-ferry-missing";
/// A GetObject or HeadObject's `ENABLED` asks for an SSE-KMS object's encryption context in
/// [`X_AMZ_SSE_CONTEXT`], which reads do not return (as on AWS). The bucket owner's alone;
/// what the proxy's rebalance keeps a moved object's context with.
pub const X_FERRY_ENCRYPTION_CONTEXT_MODE: &str = "x-ferry-encryption-context-mode";
/// A PutObject, CompleteMultipartUpload or DeleteObject (a delete marker) in a versioned
/// bucket: write this version id (`null`, or a Ferry id) in its place among the key's versions
/// instead of a new newest version. The bucket owner's alone; what the proxy's rebalance moves
/// versions between nodes with.
pub const X_FERRY_VERSION_ID: &str = "x-ferry-version-id";
/// With [`X_FERRY_VERSION_ID`]: the version's order among its key's versions (what a non-null
/// id is made of; needed for `null`).
pub const X_FERRY_VERSION_ORDER: &str = "x-ferry-version-order";
/// The same writes: their modification time, in Unix seconds, instead of the commit's (a
/// moved object keeps its date). The bucket owner's alone.
pub const X_FERRY_LAST_MODIFIED: &str = "x-ferry-last-modified";
