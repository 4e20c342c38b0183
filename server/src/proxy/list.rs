//! Listings across backends: ListObjects (v1, v2), ListMultipartUploads and
//! ListObjectVersions, fanned out and k-way merged. (A key lives on one backend, so all of its
//! uploads, or versions, come from one backend in that backend's order.)
//!
//! Every backend lists the same range (prefix, delimiter, "after" position) with the client's
//! page size; the pages are merged in key order, common prefixes reported by several backends
//! are kept once, and a backend whose page runs out while it still has more is asked for its
//! next page before the merge goes past it. The page ends after `max-keys` entries; it is
//! truncated only if some backend still has an entry after the last one returned, so
//! `IsTruncated` is exact.
//!
//! Where to continue is one position for all backends: the last key (or common prefix)
//! returned. ListObjectsV2 continuation tokens carry it, authenticated with an HMAC under the
//! proxy's token key (opaque to clients, tampering detected, and valid on any proxy with the
//! same key). Continuing after a common prefix asks backends to start after the prefix
//! followed by U+10FFFF characters, which sorts after every key under it; this works with any
//! S3 server, not only Ferry nodes.

use std::borrow::Cow;
use std::collections::VecDeque;

use base64::Engine as _;
use ferry_core::http::server::ResponseWriter;
use ferry_core::rt::{Runtime, Stream};
use ferry_core::s3::listing::{
    ListCommon, ListObjectsQuery, ListObjectsV2Query, ListUploadsQuery, ListVersionsQuery,
    ObjectListing,
};

use ferry_core::s3::uri;
use ferry_core::s3::xml::{
    ListBucketResult, ListMultipartUploadsResult, ListVersion, ListVersionsResult, ObjectEntry,
    Owner, UploadEntry, VersionEntry,
};
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};
use hmac::{KeyInit as _, Mac as _};

use super::client::bucket_path;
use super::context::Cx;
use super::forward::{Call, Reply};
use super::reissue::Leave;
use super::upload_tag::{self, UploadId};
use crate::front::Headers;

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// Bytes of HMAC tag in a continuation token.
const TAG_LEN: usize = 16;
/// Longest key S3 accepts, in bytes.
const MAX_KEY_LEN: usize = 1024;

const TOKEN_B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// One entry of a listing page.
#[derive(Debug, Clone)]
enum Item {
    Object(ObjectEntry<'static>),
    Upload(UploadEntry<'static>),
    Version(VersionEntry<'static>),
    Prefix(String),
}

impl Item {
    fn name(&self) -> &str {
        match self {
            Self::Object(o) => &o.key,
            Self::Upload(u) => &u.key,
            Self::Version(v) => &v.key,
            Self::Prefix(p) => p,
        }
    }

    fn is_prefix(&self) -> bool {
        matches!(self, Self::Prefix(_))
    }

    /// Where a backend continues after this entry.
    fn resume(&self) -> Resume {
        Resume {
            name: self.name().to_owned(),
            upload_id: match self {
                Self::Upload(u) => Some(u.upload_id.to_string()),
                Self::Version(v) => Some(v.version_id.to_string()),
                _ => None,
            },
            is_prefix: self.is_prefix(),
            with_name: false,
        }
    }
}

/// A position to list after.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Resume {
    name: String,
    /// ListMultipartUploads: the upload of `name` to continue after; ListObjectVersions: its
    /// version.
    upload_id: Option<String>,
    /// `name` is a common prefix: continue after everything under it.
    is_prefix: bool,
    /// ListMultipartUploads: list every upload of `name` too (a backend after the one where a
    /// page ended inside `name`'s uploads).
    with_name: bool,
}

/// Which listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Objects,
    Uploads,
    Versions,
}

/// The listing's parameters, the same for every backend.
#[derive(Debug, Clone)]
struct Params {
    kind: Kind,
    bucket: String,
    prefix: String,
    delimiter: Option<String>,
    fetch_owner: bool,
}

/// A string after every key that starts with `prefix` (see the module documentation).
fn past_prefix(prefix: &str) -> String {
    let mut s = prefix.to_owned();
    loop {
        s.push('\u{10FFFF}');
        if s.len() + 4 > MAX_KEY_LEN {
            return s;
        }
    }
}

/// A string just before `name`: every key from `name` on sorts after it, and next to nothing
/// else does (a `key-marker` excludes the key it names).
fn just_before(name: &str) -> String {
    let mut s = name.to_owned();
    let Some(last) = s.pop() else {
        return s;
    };
    let Some(prev) = (last as u32).checked_sub(1) else {
        return s;
    };
    // Below the surrogates comes U+D7FF.
    s.push(char::from_u32(prev).unwrap_or('\u{D7FF}'));
    past_prefix(&s)
}

/// Whether `marker` is exactly a common prefix of this listing (what `NextMarker` and
/// `NextKeyMarker` hold after a page that ended on one).
fn is_common_prefix(marker: &str, prefix: &str, delimiter: Option<&str>) -> bool {
    let Some(d) = delimiter.filter(|d| !d.is_empty()) else {
        return false;
    };
    let Some(rest) = marker.strip_prefix(prefix) else {
        return false;
    };
    rest.find(d).is_some_and(|i| i + d.len() == rest.len())
}

fn push_param(q: &mut String, name: &str, value: &str) {
    use std::fmt::Write as _;
    if !q.is_empty() {
        q.push('&');
    }
    let _ = write!(q, "{name}={}", uri::encode(value));
}

/// The backend request for one page.
fn page_call(params: &Params, resume: Option<&Resume>, max: u32) -> Call {
    let mut q = String::new();
    match params.kind {
        Kind::Objects => {
            q.push_str("list-type=2&encoding-type=url");
            push_param(&mut q, "max-keys", &max.to_string());
            if params.fetch_owner {
                q.push_str("&fetch-owner=true");
            }
        }
        Kind::Uploads => {
            q.push_str("uploads&encoding-type=url");
            push_param(&mut q, "max-uploads", &max.to_string());
        }
        Kind::Versions => {
            q.push_str("versions&encoding-type=url");
            push_param(&mut q, "max-keys", &max.to_string());
        }
    }
    if !params.prefix.is_empty() {
        push_param(&mut q, "prefix", &params.prefix);
    }
    if let Some(d) = &params.delimiter {
        push_param(&mut q, "delimiter", d);
    }
    if let Some(r) = resume {
        let after = if r.is_prefix {
            past_prefix(&r.name)
        } else {
            r.name.clone()
        };
        match params.kind {
            Kind::Objects => push_param(&mut q, "start-after", &after),
            Kind::Uploads if r.with_name => push_param(&mut q, "key-marker", &just_before(&r.name)),
            Kind::Uploads => {
                push_param(&mut q, "key-marker", &after);
                if let Some(u) = r.upload_id.as_deref().filter(|_| !r.is_prefix) {
                    push_param(&mut q, "upload-id-marker", u);
                }
            }
            Kind::Versions => {
                push_param(&mut q, "key-marker", &after);
                if let Some(v) = r.upload_id.as_deref().filter(|_| !r.is_prefix) {
                    push_param(&mut q, "version-id-marker", v);
                }
            }
        }
    }
    Call::get(&bucket_path(&params.bucket), &q)
}

fn own(c: Cow<'_, str>) -> Cow<'static, str> {
    Cow::Owned(c.into_owned())
}

fn own_owner(o: Option<Owner<'_>>) -> Option<Owner<'static>> {
    o.map(|o| Owner {
        id: own(o.id),
        display_name: o.display_name.map(own),
    })
}

/// Merge two sorted runs (entries, prefixes) into one sorted run.
fn interleave(entries: Vec<Item>, prefixes: Vec<String>) -> Vec<Item> {
    let mut out = Vec::with_capacity(entries.len() + prefixes.len());
    let mut e = entries.into_iter().peekable();
    let mut p = prefixes.into_iter().peekable();
    loop {
        let take_entry = match (e.peek(), p.peek()) {
            (Some(a), Some(b)) => a.name() <= b.as_str(),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return out,
        };
        if take_entry {
            out.extend(e.next());
        } else {
            out.extend(p.next().map(Item::Prefix));
        }
    }
}

/// Parse one backend page into sorted items and whether it was truncated.
fn parse_page(kind: Kind, reply: &Reply) -> S3Result<(Vec<Item>, bool)> {
    if !reply.ok() {
        return Err(reply.to_error());
    }
    match kind {
        Kind::Objects => {
            let doc = ListBucketResult::parse_xml(&reply.body)?;
            let entries = doc
                .contents
                .into_iter()
                .map(|o| {
                    Item::Object(ObjectEntry {
                        key: own(o.key),
                        last_modified_unix: o.last_modified_unix,
                        etag: own(o.etag),
                        size: o.size,
                        storage_class: own(o.storage_class),
                        owner: own_owner(o.owner),
                    })
                })
                .collect();
            let prefixes = doc
                .common_prefixes
                .into_iter()
                .map(Cow::into_owned)
                .collect();
            Ok((interleave(entries, prefixes), doc.is_truncated))
        }
        Kind::Uploads => {
            let doc = ListMultipartUploadsResult::parse_xml(&reply.body)?;
            let entries = doc
                .uploads
                .into_iter()
                .map(|u| {
                    Item::Upload(UploadEntry {
                        key: own(u.key),
                        upload_id: own(u.upload_id),
                        initiator: own_owner(u.initiator),
                        owner: own_owner(u.owner),
                        storage_class: own(u.storage_class),
                        initiated_unix: u.initiated_unix,
                    })
                })
                .collect();
            let prefixes = doc
                .common_prefixes
                .into_iter()
                .map(Cow::into_owned)
                .collect();
            Ok((interleave(entries, prefixes), doc.is_truncated))
        }
        Kind::Versions => {
            let doc = ListVersionsResult::parse_xml(&reply.body)?;
            let entries = doc
                .entries
                .into_iter()
                .map(|v| {
                    Item::Version(VersionEntry {
                        key: own(v.key),
                        version_id: own(v.version_id),
                        is_latest: v.is_latest,
                        last_modified_unix: v.last_modified_unix,
                        delete_marker: v.delete_marker,
                        etag: own(v.etag),
                        size: v.size,
                        storage_class: own(v.storage_class),
                        owner: own_owner(v.owner),
                    })
                })
                .collect();
            let prefixes = doc
                .common_prefixes
                .into_iter()
                .map(Cow::into_owned)
                .collect();
            Ok((interleave(entries, prefixes), doc.is_truncated))
        }
    }
}

/// One backend's part of the merge.
#[derive(Debug)]
struct Source {
    items: VecDeque<Item>,
    truncated: bool,
    /// Where its next page starts.
    resume: Option<Resume>,
}

/// The last entry returned: its name, whether it is a common prefix, and the backend it came
/// from (`None` for where a page starts).
type Last = (String, bool, Option<usize>);

/// Whether `item`, from backend `from`, was returned already (or sorts before what was): it
/// is skipped.
fn seen(kind: Kind, item: &Item, from: usize, last: Option<&Last>) -> bool {
    let Some((name, was_prefix, last_from)) = last else {
        return false;
    };
    match item.name().cmp(name.as_str()) {
        std::cmp::Ordering::Less => true,
        std::cmp::Ordering::Greater => false,
        std::cmp::Ordering::Equal => match kind {
            _ if item.is_prefix() || *was_prefix => true,
            Kind::Objects => true,
            // Several uploads of one key are distinct entries, wherever they are.
            Kind::Uploads => false,
            // A key's versions are listed from one backend only (see `owner_rank`).
            Kind::Versions => last_from.is_some_and(|l| l != from),
        },
    }
}

/// Which backend's entry for `name` a listing of objects or versions keeps when several list
/// it (a layout being drained): the key's current owner, then its owners under the earlier
/// layouts, newest first, then the others by index. Uploads come from every backend.
fn owner_rank<R: Runtime>(
    p: &super::Proxy<R>,
    (i, name): &(usize, &str),
    params: &Params,
) -> (usize, usize) {
    if params.kind == Kind::Uploads {
        return (0, *i);
    }
    let owners = p.owners(&params.bucket, name);
    let rank = owners.iter().position(|o| o == i).unwrap_or(owners.len());
    (rank, *i)
}

/// Where each of `n` backends starts listing after `after`: the backends `keeps_id` picks are
/// given its upload (version) id; the others do not know it, and list from the key after.
fn starts_after(
    n: usize,
    after: Option<&Resume>,
    keeps_id: impl Fn(usize) -> bool,
) -> Vec<Option<Resume>> {
    (0..n)
        .map(|i| {
            let mut r = after.cloned();
            if let Some(r) = r.as_mut().filter(|_| !keeps_id(i)) {
                r.upload_id = None;
            }
            r
        })
        .collect()
}

/// The merged page: at most `max` items after `after`, each backend starting where `starts`
/// says, and whether more follow. Uploads leave with their ids tagged (`upload`).
async fn merged<R: Runtime>(
    cx: &Cx<'_, R>,
    params: &Params,
    after: Option<Resume>,
    starts: Vec<Option<Resume>>,
    max: u32,
) -> S3Result<(Vec<Item>, bool)> {
    let p = cx.p;
    if let Some(b) = p.backends.iter().find(|b| !b.is_up()) {
        // A listing without one backend's keys would be silently wrong.
        return Err(b.unavailable());
    }
    if max == 0 {
        return Ok((Vec::new(), false));
    }
    let client = cx.client();
    // Each page is the client's listing, with its headers (for the nodes' policy conditions).
    let page = |r: Option<&Resume>| {
        let mut call = page_call(params, r, max);
        call.carry(cx, Leave::Nothing);
        call
    };
    let mut calls = Vec::with_capacity(p.backends.len());
    for (i, r) in starts.iter().enumerate() {
        calls.push(client.spawn(i, page(r.as_ref())));
    }
    let mut sources = Vec::with_capacity(calls.len());
    for (call, start) in calls.into_iter().zip(starts) {
        let (items, truncated) = parse_page(params.kind, &call.await?)?;
        let resume = items.last().map(Item::resume).or(start);
        sources.push(Source {
            items: items.into(),
            truncated,
            resume,
        });
    }
    let mut out: Vec<Item> = Vec::new();
    let mut last: Option<Last> = after.map(|r| (r.name, r.is_prefix, None));
    loop {
        for (i, s) in sources.iter_mut().enumerate() {
            loop {
                while s
                    .items
                    .front()
                    .is_some_and(|it| seen(params.kind, it, i, last.as_ref()))
                {
                    s.items.pop_front();
                }
                if !s.items.is_empty() || !s.truncated {
                    break;
                }
                let reply = client.send(i, &page(s.resume.as_ref())).await?;
                let (items, truncated) = parse_page(params.kind, &reply)?;
                // A truncated page with nothing in it would loop forever.
                s.truncated = truncated && !items.is_empty();
                if let Some(r) = items.last().map(Item::resume) {
                    s.resume = Some(r);
                }
                s.items = items.into();
            }
        }
        let best = sources
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.items.front().map(|it| (i, it.name())))
            // A key listed by several backends (a layout being drained): the best-ranked
            // backend's entries are the ones kept (the others are then skipped as seen).
            .min_by(|a, b| {
                a.1.cmp(b.1)
                    .then_with(|| owner_rank(p, a, params).cmp(&owner_rank(p, b, params)))
            })
            .map(|(i, _)| i);
        let Some(i) = best else {
            return Ok((out, false));
        };
        if out.len() >= max as usize {
            return Ok((out, true));
        }
        let Some(mut item) = sources.get_mut(i).and_then(|s| s.items.pop_front()) else {
            return Ok((out, false));
        };
        last = Some((item.name().to_owned(), item.is_prefix(), Some(i)));
        if let (Item::Upload(u), Some(b)) = (&mut item, p.backends.get(i)) {
            u.upload_id = Cow::Owned(upload_tag::carried(b, &u.upload_id));
        }
        out.push(item);
    }
}

fn tag(key: &[u8; 32], bucket: &str, kind: u8, name: &str) -> HmacSha256 {
    let Ok(mut mac) = HmacSha256::new_from_slice(key) else {
        unreachable!("HMAC takes keys of any length")
    };
    mac.update(bucket.as_bytes());
    mac.update(&[0, kind]);
    mac.update(name.as_bytes());
    mac
}

/// A continuation token for continuing after `name` (a key, or a common prefix) in `bucket`.
fn make_token(key: &[u8; 32], bucket: &str, name: &str, is_prefix: bool) -> String {
    let kind = u8::from(is_prefix);
    let mac = tag(key, bucket, kind, name).finalize().into_bytes();
    let mut raw = Vec::with_capacity(TAG_LEN + 1 + name.len());
    raw.extend_from_slice(mac.get(..TAG_LEN).unwrap_or_default());
    raw.push(kind);
    raw.extend_from_slice(name.as_bytes());
    TOKEN_B64.encode(raw)
}

/// The position a token continues after; `InvalidArgument` if it was not made by a proxy with
/// this key for this bucket.
fn read_token(key: &[u8; 32], bucket: &str, token: &str) -> S3Result<(String, bool)> {
    let bad = || {
        S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            "The continuation token provided is incorrect",
        )
    };
    let raw = TOKEN_B64.decode(token).map_err(|_| bad())?;
    if raw.len() < TAG_LEN + 1 {
        return Err(bad());
    }
    let (mac, rest) = raw.split_at(TAG_LEN);
    let (kind, name) = rest.split_first().ok_or_else(bad)?;
    if *kind > 1 {
        return Err(bad());
    }
    let name = std::str::from_utf8(name).map_err(|_| bad())?;
    tag(key, bucket, *kind, name)
        .verify_truncated_left(mac)
        .map_err(|_| bad())?;
    Ok((name.to_owned(), *kind == 1))
}

/// ListObjects (v1) and ListObjectsV2 over every backend.
pub(crate) async fn list_objects<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    bucket: &str,
    listing: ObjectListing<'_, '_>,
    res: &mut ResponseWriter<'_, S>,
) -> S3Result<()> {
    let ListCommon {
        prefix,
        delimiter,
        max_keys,
        encoding_type_url: url,
    } = listing.common();
    let (max_keys, url, fetch_owner) = (*max_keys, *url, listing.fetch_owner());
    let delimiter = delimiter.as_deref();
    let after = match listing {
        ObjectListing::V1(ListObjectsQuery {
            marker: Some(m), ..
        }) => Some(Resume {
            name: m.to_string(),
            upload_id: None,
            is_prefix: is_common_prefix(m, prefix, delimiter),
            with_name: false,
        }),
        ObjectListing::V2(ListObjectsV2Query {
            continuation_token: Some(t),
            ..
        }) => {
            let (name, is_prefix) = read_token(&cx.p.shared.token_key, bucket, t)?;
            Some(Resume {
                name,
                upload_id: None,
                is_prefix,
                with_name: false,
            })
        }
        ObjectListing::V2(ListObjectsV2Query {
            start_after: Some(s),
            ..
        }) => Some(Resume {
            name: s.to_string(),
            upload_id: None,
            is_prefix: false,
            with_name: false,
        }),
        ObjectListing::V1(_) | ObjectListing::V2(_) => None,
    };
    let params = Params {
        kind: Kind::Objects,
        bucket: bucket.to_owned(),
        prefix: prefix.to_string(),
        delimiter: delimiter.map(str::to_owned),
        fetch_owner,
    };
    let starts = starts_after(cx.p.backends.len(), after.as_ref(), |_| false);
    let (items, truncated) = merged(cx, &params, after, starts, max_keys).await?;
    let last = items.last().map(|i| (i.name().to_owned(), i.is_prefix()));
    let mut contents = Vec::new();
    let mut common_prefixes = Vec::new();
    for it in items {
        match it {
            Item::Object(mut o) => {
                if !fetch_owner {
                    o.owner = None;
                }
                contents.push(o);
            }
            Item::Prefix(p) => common_prefixes.push(Cow::Owned(p)),
            Item::Upload(_) | Item::Version(_) => {}
        }
    }
    let last = last.filter(|_| truncated);
    let version = match listing {
        ObjectListing::V2(q) => ListVersion::V2 {
            continuation_token: q.continuation_token.as_deref().map(Cow::Borrowed),
            next_continuation_token: last
                .as_ref()
                .map(|(n, p)| Cow::Owned(make_token(&cx.p.shared.token_key, bucket, n, *p))),
            start_after: q.start_after.as_deref().map(Cow::Borrowed),
        },
        ObjectListing::V1(q) => ListVersion::V1 {
            marker: Cow::Borrowed(q.marker.as_deref().unwrap_or_default()),
            // S3 sends NextMarker only with a delimiter (without one, the last key is it).
            next_marker: last
                .filter(|_| delimiter.is_some())
                .map(|(n, _)| Cow::Owned(n)),
        },
    };
    let doc = ListBucketResult {
        name: Cow::Borrowed(bucket),
        prefix: Cow::Borrowed(prefix),
        delimiter: delimiter.map(Cow::Borrowed),
        max_keys,
        is_truncated: truncated,
        encoding_type_url: url,
        contents,
        common_prefixes,
        version,
    };
    let mut xml = Vec::new();
    doc.write_xml(&mut xml);
    cx.front.send_xml(res, Headers::new(), &xml).await
}

/// ListMultipartUploads over every backend.
pub(crate) async fn list_uploads<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    bucket: &str,
    q: &ListUploadsQuery<'_>,
    res: &mut ResponseWriter<'_, S>,
) -> S3Result<()> {
    let ListUploadsQuery {
        common:
            ListCommon {
                prefix,
                delimiter,
                max_keys: max_uploads,
                encoding_type_url,
            },
        key_marker,
        upload_id_marker,
    } = q;
    let delimiter = delimiter.as_deref();
    let after = key_marker.as_deref().map(|k| Resume {
        name: k.to_owned(),
        upload_id: None,
        is_prefix: is_common_prefix(k, prefix, delimiter),
        with_name: false,
    });
    let n = cx.p.backends.len();
    // S3 ignores upload-id-marker without key-marker. A key's uploads are merged backend by
    // backend (`owner_rank`): those before the marker's backend are past the key, those after
    // it list all of the key's uploads.
    let marker = upload_id_marker
        .as_deref()
        .filter(|_| after.as_ref().is_some_and(|r| !r.is_prefix));
    let starts = match (after.as_ref(), marker.map(|id| upload_tag::parse(cx.p, id))) {
        (Some(r), Some(UploadId::At(m, own))) => (0..n)
            .map(|i| {
                let mut r = r.clone();
                match i.cmp(&m) {
                    std::cmp::Ordering::Less => {}
                    std::cmp::Ordering::Equal => r.upload_id = Some(own.to_owned()),
                    std::cmp::Ordering::Greater => r.with_name = true,
                }
                Some(r)
            })
            .collect(),
        // An untagged id is its key's owner's (as before tags).
        (Some(r), Some(UploadId::Plain)) => {
            let owner = cx.p.pick(bucket, &r.name);
            let mut starts = starts_after(n, after.as_ref(), |_| false);
            if let Some(Some(s)) = starts.get_mut(owner) {
                s.upload_id = marker.map(str::to_owned);
            }
            starts
        }
        _ => starts_after(n, after.as_ref(), |_| false),
    };
    let params = Params {
        kind: Kind::Uploads,
        bucket: bucket.to_owned(),
        prefix: prefix.to_string(),
        delimiter: delimiter.map(str::to_owned),
        fetch_owner: false,
    };
    let (items, truncated) = merged(cx, &params, after, starts, *max_uploads).await?;
    let (next_key, next_upload) = match items.last().filter(|_| truncated) {
        Some(Item::Upload(u)) => (
            Some(Cow::Owned(u.key.to_string())),
            Some(Cow::Owned(u.upload_id.to_string())),
        ),
        Some(it) => (Some(Cow::Owned(it.name().to_owned())), None),
        None => (None, None),
    };
    let mut uploads = Vec::new();
    let mut common_prefixes = Vec::new();
    for it in items {
        match it {
            Item::Upload(u) => uploads.push(u),
            Item::Prefix(p) => common_prefixes.push(Cow::Owned(p)),
            Item::Object(_) | Item::Version(_) => {}
        }
    }
    let doc = ListMultipartUploadsResult {
        bucket: Cow::Borrowed(bucket),
        key_marker: Cow::Borrowed(key_marker.as_deref().unwrap_or_default()),
        upload_id_marker: Cow::Borrowed(upload_id_marker.as_deref().unwrap_or_default()),
        next_key_marker: next_key,
        next_upload_id_marker: next_upload,
        prefix: Cow::Borrowed(prefix),
        delimiter: delimiter.map(Cow::Borrowed),
        max_uploads: *max_uploads,
        is_truncated: truncated,
        encoding_type_url: *encoding_type_url,
        uploads,
        common_prefixes,
    };
    let mut xml = Vec::new();
    doc.write_xml(&mut xml);
    cx.front.send_xml(res, Headers::new(), &xml).await
}

/// ListObjectVersions over every backend: a key's versions all come from its backend, newest
/// first; keys and common prefixes are merged as in ListObjects. A key listed by several
/// backends (a layout being drained) is listed from one of them only: its current owner, else
/// its newest earlier owner that lists it (`owner_rank`).
pub(crate) async fn list_versions<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    bucket: &str,
    q: &ListVersionsQuery<'_>,
    res: &mut ResponseWriter<'_, S>,
) -> S3Result<()> {
    let ListVersionsQuery {
        common:
            ListCommon {
                prefix,
                delimiter,
                max_keys,
                encoding_type_url,
            },
        key_marker,
        version_id_marker,
    } = q;
    let delimiter = delimiter.as_deref();
    let after = key_marker.as_deref().map(|k| {
        let is_prefix = is_common_prefix(k, prefix, delimiter);
        Resume {
            name: k.to_owned(),
            upload_id: version_id_marker
                .filter(|_| !is_prefix)
                .map(|v| v.to_string()),
            is_prefix,
            with_name: false,
        }
    });
    // The version id is that of the backend the key's versions are listed from.
    let owners = match (key_marker.as_deref(), version_id_marker) {
        (Some(k), Some(_)) => vec![lister_of(cx, bucket, k).await?],
        (Some(k), None) => vec![cx.p.pick(bucket, k)],
        (None, _) => Vec::new(),
    };
    let params = Params {
        kind: Kind::Versions,
        bucket: bucket.to_owned(),
        prefix: prefix.to_string(),
        delimiter: delimiter.map(str::to_owned),
        fetch_owner: false,
    };
    let starts = starts_after(cx.p.backends.len(), after.as_ref(), |i| owners.contains(&i));
    let (items, truncated) = merged(cx, &params, after, starts, *max_keys).await?;
    let (next_key, next_version) = match items.last().filter(|_| truncated) {
        Some(Item::Version(v)) => (
            Some(Cow::Owned(v.key.to_string())),
            Some(Cow::Owned(v.version_id.to_string())),
        ),
        Some(it) => (Some(Cow::Owned(it.name().to_owned())), None),
        None => (None, None),
    };
    let mut entries = Vec::new();
    let mut common_prefixes = Vec::new();
    for it in items {
        match it {
            Item::Version(v) => entries.push(v),
            Item::Prefix(p) => common_prefixes.push(Cow::Owned(p)),
            Item::Object(_) | Item::Upload(_) => {}
        }
    }
    let doc = ListVersionsResult {
        name: Cow::Borrowed(bucket),
        prefix: Cow::Borrowed(prefix),
        key_marker: Cow::Borrowed(key_marker.as_deref().unwrap_or_default()),
        version_id_marker: Cow::Owned(version_id_marker.map(|v| v.to_string()).unwrap_or_default()),
        next_key_marker: next_key,
        next_version_id_marker: next_version,
        delimiter: delimiter.map(Cow::Borrowed),
        max_keys: *max_keys,
        is_truncated: truncated,
        encoding_type_url: *encoding_type_url,
        entries,
        common_prefixes,
    };
    let mut xml = Vec::new();
    doc.write_xml(&mut xml);
    cx.front.send_xml(res, Headers::new(), &xml).await
}

/// The backend whose versions of `key` a ListObjectVersions lists (`owner_rank`): the first
/// of its owners that lists the key (a one-entry listing of the key as prefix: the key itself
/// sorts first), else its current owner. Asked only while a layout is drained.
async fn lister_of<R: Runtime>(cx: &Cx<'_, R>, bucket: &str, key: &str) -> S3Result<usize> {
    let owners = cx.p.owners(bucket, key);
    let current = owners.first().copied().unwrap_or_default();
    if owners.len() < 2 {
        return Ok(current);
    }
    for &i in &owners {
        let mut q = String::from("versions&max-keys=1&encoding-type=url");
        push_param(&mut q, "prefix", key);
        let list = Call::get(&bucket_path(bucket), &q);
        let reply = cx.client().send(i, &list).await?;
        let (items, _) = parse_page(Kind::Versions, &reply)?;
        if items.first().is_some_and(|it| it.name() == key) {
            return Ok(i);
        }
    }
    Ok(current)
}

/// A token for the ListBuckets union (continuing after a bucket name).
pub(crate) fn bucket_token(key: &[u8; 32], after: &str) -> String {
    make_token(key, "", after, false)
}

/// The bucket name a ListBuckets token continues after.
pub(crate) fn read_bucket_token(key: &[u8; 32], token: &str) -> S3Result<String> {
    read_token(key, "", token).map(|(n, _)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_detect_tampering() {
        let key = [7u8; 32];
        for (name, p) in [("", false), ("a/b", true), ("ü x\u{1}", false)] {
            let t = make_token(&key, "bkt", name, p);
            assert_eq!(read_token(&key, "bkt", &t).unwrap(), (name.to_owned(), p));
            // Another bucket, another key: refused.
            assert!(read_token(&key, "other", &t).is_err());
            assert!(read_token(&[8u8; 32], "bkt", &t).is_err());
        }
        let t = make_token(&key, "bkt", "key-1", false);
        let mut raw = TOKEN_B64.decode(&t).unwrap();
        *raw.last_mut().unwrap() = b'2';
        let forged = TOKEN_B64.encode(&raw);
        let e = read_token(&key, "bkt", &forged).unwrap_err();
        assert_eq!(e.code, S3ErrorCode::InvalidArgument);
        for junk in ["", "!!", "AAAA", &TOKEN_B64.encode([0u8; 40])] {
            assert!(read_token(&key, "bkt", junk).is_err(), "{junk}");
        }
    }

    #[test]
    fn past_prefix_sorts_after_every_key_under_it() {
        let p = "photos/";
        let after = past_prefix(p);
        assert!(after.len() <= MAX_KEY_LEN && after.len() > MAX_KEY_LEN - 4);
        for k in [
            "photos/",
            "photos/a",
            "photos/\u{FFFF}\u{FFFF}",
            "photos/zzzz/x",
        ] {
            assert!(k < after.as_str(), "{k}");
        }
        assert!(after.as_str() < "photos0");
        assert!(after.as_str() < "photosa");
    }

    #[test]
    fn just_before_sorts_before_the_key_and_after_what_precedes_it() {
        for k in ["k", "photos/a.jpg", "a\u{E000}", "é"] {
            let before = just_before(k);
            assert!(before.as_str() < k, "{k}");
            let shorter = &k[..k.len() - k.chars().last().unwrap().len_utf8()];
            assert!(shorter < before.as_str(), "{k}");
        }
        assert_eq!(just_before("a\0"), "a");
        assert_eq!(just_before(""), "");
    }

    #[test]
    fn common_prefix_markers() {
        assert!(is_common_prefix("b/", "", Some("/")));
        assert!(is_common_prefix("p/x/", "p/", Some("/")));
        assert!(!is_common_prefix("b/1", "", Some("/")));
        assert!(!is_common_prefix("b/", "", None));
        assert!(!is_common_prefix("a/b/", "", Some("/")));
        assert!(!is_common_prefix("q/", "p/", Some("/")));
    }

    #[test]
    fn interleave_keeps_order() {
        let obj = |k: &str| {
            Item::Object(ObjectEntry {
                key: Cow::Owned(k.to_owned()),
                last_modified_unix: 0,
                etag: Cow::Borrowed(""),
                size: 0,
                storage_class: Cow::Borrowed("STANDARD"),
                owner: None,
            })
        };
        let out = interleave(
            vec![obj("a"), obj("c"), obj("e")],
            vec!["b/".into(), "d/".into()],
        );
        let names: Vec<&str> = out.iter().map(Item::name).collect();
        assert_eq!(names, ["a", "b/", "c", "d/", "e"]);
    }
}
