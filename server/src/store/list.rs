//! Listings of objects and multipart uploads: range scans over the B-tree, seeking past each
//! rolled-up common prefix instead of walking the keys under it.

use std::ops::Bound;

use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};
use ferry_core::time::DateTime;

use super::codec::{self, ListFields, stored_etag};
use super::types::{ListQuery, ObjectEntry, ObjectsPage, UploadEntry, UploadsPage, UploadsQuery};
use super::{BUCKETS, MAX_LIST, OBJECTS, Store, UPLOADS, bucket_prefix, db_err, require_bucket};

/// The storage class every object has.
const STANDARD: &str = "STANDARD";

/// The smallest byte string greater than every string that starts with `prefix`
/// (`None` if there is none: `prefix` is all `0xff`).
pub(crate) fn successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut s = prefix.to_vec();
    while let Some(last) = s.pop() {
        if last < 0xff {
            s.push(last + 1);
            return Some(s);
        }
    }
    None
}

/// First occurrence of a non-empty `needle` in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    match needle {
        [b] => hay.iter().position(|x| x == b),
        _ => hay.windows(needle.len()).position(|w| w == needle),
    }
}

/// If `key` rolls up under `prefix` and `delim`: the length of its common prefix
/// (`prefix`, then up to and including the first `delim` after it).
pub(crate) fn rolled_prefix(key: &[u8], prefix: &[u8], delim: &[u8]) -> Option<usize> {
    let rest = key.strip_prefix(prefix)?;
    find(rest, delim).map(|at| prefix.len() + at + delim.len())
}

fn utf8(b: &[u8]) -> S3Result<String> {
    String::from_utf8(b.to_vec())
        .map_err(|_| S3Error::with_message(S3ErrorCode::InternalError, "stored key is not UTF-8"))
}

fn concat(a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(a.len() + b.len());
    v.extend_from_slice(a);
    v.extend_from_slice(b);
    v
}

fn borrow_bound(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(v) => Bound::Included(v.as_slice()),
        Bound::Excluded(v) => Bound::Excluded(v.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// The leading field of an `UploadRecord`.
#[derive(serde::Deserialize)]
struct UploadListFields {
    initiated: i64,
}

impl codec::Record for UploadListFields {}

impl Store {
    /// ListObjects (v1 and v2): keys of `bucket` matching `q`, sorted, with common prefixes.
    pub fn list_objects(&self, bucket: &str, q: &ListQuery<'_>) -> S3Result<ObjectsPage> {
        let max = q.max_keys.min(MAX_LIST);
        let txn = self.read_txn()?;
        require_bucket(&txn.open_table(BUCKETS).map_err(db_err)?, bucket)?;
        let mut page = ObjectsPage::default();
        if max == 0 {
            return Ok(page);
        }
        let objects = txn.open_table(OBJECTS).map_err(db_err)?;
        let base = bucket_prefix(bucket);
        let prefix = q.prefix.as_bytes();
        let delim = q.delimiter.filter(|d| !d.is_empty()).map(str::as_bytes);
        let full_prefix = concat(&base, prefix);

        let mut from = Bound::Included(full_prefix.clone());
        if let Some(sa) = q.start_after.map(str::as_bytes) {
            let sa_full = concat(&base, sa);
            if sa_full >= full_prefix {
                from = match delim.and_then(|d| rolled_prefix(sa, prefix, d)) {
                    // Continuing after a common prefix: skip every key under it.
                    Some(n) if n == sa.len() => match successor(&sa_full) {
                        Some(s) => Bound::Included(s),
                        None => return Ok(page),
                    },
                    _ => Bound::Excluded(sa_full),
                };
            }
        }

        let mut last_was_prefix = false;
        'scan: loop {
            let mut seek = None;
            let range = objects
                .range::<&[u8]>((borrow_bound(&from), Bound::Unbounded))
                .map_err(db_err)?;
            for item in range {
                let (k, v) = item.map_err(db_err)?;
                let full = k.value();
                if !full.starts_with(&full_prefix) {
                    break 'scan;
                }
                if page.objects.len() + page.common_prefixes.len() == max {
                    page.is_truncated = true;
                    break 'scan;
                }
                let key = &full[base.len()..];
                if let Some(n) = delim.and_then(|d| rolled_prefix(key, prefix, d)) {
                    page.common_prefixes.push(utf8(&key[..n])?);
                    last_was_prefix = true;
                    seek = Some(successor(&full[..base.len() + n]));
                    break;
                }
                let f: ListFields<'_> = codec::decode(v.value())?;
                page.objects.push(ObjectEntry {
                    key: utf8(key)?,
                    size: f.size,
                    etag: stored_etag(f.etag)?,
                    last_modified: DateTime::from_unix(f.last_modified),
                    storage_class: STANDARD,
                });
                last_was_prefix = false;
            }
            match seek {
                Some(Some(s)) => from = Bound::Included(s),
                // The scan ran out of keys, or nothing sorts after the prefix.
                _ => break,
            }
        }
        if page.is_truncated {
            page.next_start_after = if last_was_prefix {
                page.common_prefixes.last().cloned()
            } else {
                page.objects.last().map(|o| o.key.clone())
            };
        }
        Ok(page)
    }

    /// ListMultipartUploads: in-progress uploads of `bucket` matching `q`, sorted by key and then
    /// by initiation.
    pub fn list_uploads(&self, bucket: &str, q: &UploadsQuery<'_>) -> S3Result<UploadsPage> {
        let max = q.max_uploads.min(MAX_LIST);
        let txn = self.read_txn()?;
        require_bucket(&txn.open_table(BUCKETS).map_err(db_err)?, bucket)?;
        let mut page = UploadsPage::default();
        if max == 0 {
            return Ok(page);
        }
        let uploads = txn.open_table(UPLOADS).map_err(db_err)?;
        let base = bucket_prefix(bucket);
        let prefix = q.prefix.as_bytes();
        let delim = q.delimiter.filter(|d| !d.is_empty()).map(str::as_bytes);
        let full_prefix = concat(&base, prefix);

        // (key, upload id) to start from; `true` if inclusive.
        let mut from: (Vec<u8>, String, bool) = (full_prefix.clone(), String::new(), true);
        if let Some(km) = q.key_marker.map(str::as_bytes) {
            let km_full = concat(&base, km);
            if km_full >= full_prefix {
                from = match (
                    delim.and_then(|d| rolled_prefix(km, prefix, d)),
                    q.upload_id_marker,
                ) {
                    (Some(n), _) if n == km.len() => match successor(&km_full) {
                        Some(s) => (s, String::new(), true),
                        None => return Ok(page),
                    },
                    (_, Some(id)) => (km_full, id.to_owned(), false),
                    // The first key after the marker: the marker followed by NUL.
                    (_, None) => (concat(&km_full, &[0]), String::new(), true),
                };
            }
        }

        let mut last_was_prefix = false;
        'scan: loop {
            let mut seek = None;
            let lower = (from.0.as_slice(), from.1.as_str());
            let lower = if from.2 {
                Bound::Included(lower)
            } else {
                Bound::Excluded(lower)
            };
            for item in uploads
                .range::<(&[u8], &str)>((lower, Bound::Unbounded))
                .map_err(db_err)?
            {
                let (k, v) = item.map_err(db_err)?;
                let (full, upload_id) = k.value();
                if !full.starts_with(&full_prefix) {
                    break 'scan;
                }
                if page.uploads.len() + page.common_prefixes.len() == max {
                    page.is_truncated = true;
                    break 'scan;
                }
                let key = &full[base.len()..];
                if let Some(n) = delim.and_then(|d| rolled_prefix(key, prefix, d)) {
                    page.common_prefixes.push(utf8(&key[..n])?);
                    last_was_prefix = true;
                    seek = Some(successor(&full[..base.len() + n]));
                    break;
                }
                let f: UploadListFields = codec::decode(v.value())?;
                page.uploads.push(UploadEntry {
                    key: utf8(key)?,
                    upload_id: upload_id.to_owned(),
                    initiated: DateTime::from_unix(f.initiated),
                });
                last_was_prefix = false;
            }
            match seek {
                Some(Some(s)) => from = (s, String::new(), true),
                _ => break,
            }
        }
        if page.is_truncated {
            if last_was_prefix {
                page.next_key_marker = page.common_prefixes.last().cloned();
            } else if let Some(u) = page.uploads.last() {
                page.next_key_marker = Some(u.key.clone());
                page.next_upload_id_marker = Some(u.upload_id.clone());
            }
        }
        Ok(page)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn successor_bounds_every_extension() {
        assert_eq!(successor(b"a/"), Some(b"a0".to_vec()));
        assert_eq!(successor(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(successor(b"\xff\xff"), None);
        let s = successor(b"ab").unwrap();
        for ext in [&b""[..], b"\0", b"zzz", b"\xff\xff\xff"] {
            assert!(concat(b"ab", ext) < s);
        }
        assert!(b"ac".to_vec() >= s);
    }

    #[test]
    fn common_prefix_is_up_to_the_first_delimiter_after_the_prefix() {
        assert_eq!(rolled_prefix(b"a/b/c", b"", b"/"), Some(2));
        assert_eq!(rolled_prefix(b"a/b/c", b"a/", b"/"), Some(4));
        assert_eq!(rolled_prefix(b"a/b/c", b"a/b/", b"/"), None);
        assert_eq!(rolled_prefix(b"x--y--z", b"x", b"--"), Some(3));
        assert_eq!(rolled_prefix(b"b/c", b"a", b"/"), None);
    }
}
