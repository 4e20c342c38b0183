//! The listings' parameters, parsed and validated by the router and handed to the operations
//! whole ([`super::request::Endpoint`]'s list variants): what every listing of keys shares
//! ([`ListCommon`]) and what each one adds.

use alloc::borrow::Cow;

use super::query::Query;
use super::version::VersionId;
use super::{S3Error, S3ErrorCode, S3Result, validate};

/// The largest page S3 returns for object, upload and part listings.
pub const MAX_LIST_PAGE: u32 = 1000;
/// The largest `max-buckets` of ListBuckets.
pub const MAX_BUCKETS_PAGE: u32 = 10_000;

/// What the listings of keys (objects, versions, uploads) share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListCommon<'a> {
    /// `prefix` (empty when absent).
    pub prefix: Cow<'a, str>,
    /// `delimiter` (an empty one counts as absent).
    pub delimiter: Option<Cow<'a, str>>,
    /// The page's size: `max-keys` (`max-uploads` for uploads), default 1000, clamped to 1000.
    pub max_keys: u32,
    /// `encoding-type=url`.
    pub encoding_type_url: bool,
}

impl<'a> ListCommon<'a> {
    /// Read from the query, the page's size from `page`.
    pub(super) fn parse(q: &Query<'a>, page: &'static str) -> S3Result<Self> {
        Ok(Self {
            prefix: q.get_cow("prefix").unwrap_or_default(),
            delimiter: non_empty(q, "delimiter"),
            max_keys: page_size(q, page)?,
            encoding_type_url: encoding_type_url(q)?,
        })
    }
}

/// ListBuckets (`GET /`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListBucketsQuery<'a> {
    /// `prefix`.
    pub prefix: Option<Cow<'a, str>>,
    /// `continuation-token`.
    pub continuation_token: Option<Cow<'a, str>>,
    /// `max-buckets` (1..=10000); none means all.
    pub max_buckets: Option<u32>,
}

impl<'a> ListBucketsQuery<'a> {
    pub(super) fn parse(q: &Query<'a>) -> S3Result<Self> {
        let max_buckets = q
            .get("max-buckets")
            .map(|v| {
                validate::int_param("max-buckets", v)
                    .ok()
                    .filter(|n| (1..=MAX_BUCKETS_PAGE).contains(n))
                    .ok_or_else(|| {
                        S3Error::with_message(
                            S3ErrorCode::InvalidArgument,
                            "max-buckets must be an integer between 1 and 10000",
                        )
                    })
            })
            .transpose()?;
        Ok(Self {
            prefix: non_empty(q, "prefix"),
            continuation_token: non_empty(q, "continuation-token"),
            max_buckets,
        })
    }
}

/// ListObjects (v1, `GET /bucket`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListObjectsQuery<'a> {
    /// Prefix, delimiter, `max-keys`, encoding.
    pub common: ListCommon<'a>,
    /// `marker`.
    pub marker: Option<Cow<'a, str>>,
}

/// ListObjectsV2 (`GET /bucket?list-type=2`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListObjectsV2Query<'a> {
    /// Prefix, delimiter, `max-keys`, encoding.
    pub common: ListCommon<'a>,
    /// `continuation-token` (never empty: an empty one starts from the beginning, as AWS
    /// does).
    pub continuation_token: Option<Cow<'a, str>>,
    /// `start-after`.
    pub start_after: Option<Cow<'a, str>>,
    /// `fetch-owner=true`.
    pub fetch_owner: bool,
}

impl<'a> ListObjectsV2Query<'a> {
    pub(super) fn parse(q: &Query<'a>, common: ListCommon<'a>) -> S3Result<Self> {
        let fetch_owner = match q.get("fetch-owner") {
            None => false,
            Some(v) if v.eq_ignore_ascii_case("true") => true,
            Some(v) if v.eq_ignore_ascii_case("false") => false,
            Some(_) => {
                return Err(S3Error::with_message(
                    S3ErrorCode::InvalidArgument,
                    "Invalid value for fetch-owner",
                ));
            }
        };
        Ok(Self {
            common,
            continuation_token: non_empty(q, "continuation-token"),
            start_after: non_empty(q, "start-after"),
            fetch_owner,
        })
    }
}

/// Either listing of objects, for the operations that serve both.
#[derive(Debug, Clone, Copy)]
pub enum ObjectListing<'q, 'a> {
    /// ListObjects.
    V1(&'q ListObjectsQuery<'a>),
    /// ListObjectsV2.
    V2(&'q ListObjectsV2Query<'a>),
}

impl<'q, 'a> ObjectListing<'q, 'a> {
    /// What both share.
    pub fn common(self) -> &'q ListCommon<'a> {
        match self {
            Self::V1(q) => &q.common,
            Self::V2(q) => &q.common,
        }
    }

    /// Whether each object's owner is listed (always in v1; with `fetch-owner` in v2).
    pub fn fetch_owner(self) -> bool {
        match self {
            Self::V1(_) => true,
            Self::V2(q) => q.fetch_owner,
        }
    }
}

/// ListObjectVersions (`GET /bucket?versions`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListVersionsQuery<'a> {
    /// Prefix, delimiter, `max-keys`, encoding.
    pub common: ListCommon<'a>,
    /// `key-marker`.
    pub key_marker: Option<Cow<'a, str>>,
    /// `version-id-marker` (only with `key-marker`).
    pub version_id_marker: Option<VersionId>,
}

impl<'a> ListVersionsQuery<'a> {
    pub(super) fn parse(q: &Query<'a>) -> S3Result<Self> {
        let key_marker = non_empty(q, "key-marker");
        let version_id_marker = match q.get("version-id-marker").filter(|v| !v.is_empty()) {
            None => None,
            Some(_) if key_marker.is_none() => {
                return Err(S3Error::with_message(
                    S3ErrorCode::InvalidArgument,
                    "A version-id marker cannot be specified without a key marker.",
                ));
            }
            Some(v) => Some(VersionId::parse(v)?),
        };
        Ok(Self {
            common: ListCommon::parse(q, "max-keys")?,
            key_marker,
            version_id_marker,
        })
    }
}

/// ListMultipartUploads (`GET /bucket?uploads`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListUploadsQuery<'a> {
    /// Prefix, delimiter, `max-uploads`, encoding.
    pub common: ListCommon<'a>,
    /// `key-marker`.
    pub key_marker: Option<Cow<'a, str>>,
    /// `upload-id-marker`.
    pub upload_id_marker: Option<Cow<'a, str>>,
}

impl<'a> ListUploadsQuery<'a> {
    pub(super) fn parse(q: &Query<'a>) -> S3Result<Self> {
        Ok(Self {
            key_marker: non_empty(q, "key-marker"),
            upload_id_marker: non_empty(q, "upload-id-marker"),
            common: ListCommon::parse(q, "max-uploads")?,
        })
    }
}

/// ListParts (`GET /bucket/key?uploadId=U`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListPartsQuery<'a> {
    /// `uploadId`.
    pub upload_id: Cow<'a, str>,
    /// `max-parts`, default 1000, clamped to 1000.
    pub max_parts: u32,
    /// `part-number-marker`.
    pub part_number_marker: Option<u32>,
    /// `encoding-type=url`.
    pub encoding_type_url: bool,
}

impl<'a> ListPartsQuery<'a> {
    pub(super) fn parse(q: &Query<'a>, upload_id: Cow<'a, str>) -> S3Result<Self> {
        Ok(Self {
            upload_id,
            max_parts: page_size(q, "max-parts")?,
            part_number_marker: q
                .get("part-number-marker")
                .map(|v| validate::int_param("part-number-marker", v))
                .transpose()?,
            encoding_type_url: encoding_type_url(q)?,
        })
    }
}

/// A page size parameter: default and maximum 1000, larger values clamped.
fn page_size(q: &Query<'_>, name: &'static str) -> S3Result<u32> {
    Ok(q.get(name)
        .map(|v| validate::int_param(name, v))
        .transpose()?
        .map_or(MAX_LIST_PAGE, |n| n.min(MAX_LIST_PAGE)))
}

fn encoding_type_url(q: &Query<'_>) -> S3Result<bool> {
    match q.get("encoding-type") {
        None => Ok(false),
        Some(v) if v.eq_ignore_ascii_case("url") => Ok(true),
        Some(_) => Err(S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            "Invalid Encoding Method specified in Request",
        )),
    }
}

pub(super) fn non_empty<'a>(q: &Query<'a>, name: &str) -> Option<Cow<'a, str>> {
    q.get_cow(name).filter(|v| !v.is_empty())
}
