//! Listings compared with a naive model over a few thousand random keys: prefixes, delimiters,
//! start-after, pagination at several page sizes; and multipart upload listings.

use std::collections::BTreeMap;

use ferry_core::s3::S3ErrorCode;
use ferry_server::store::{
    DeleteOptions, ListQuery, ObjectMeta, ObjectsPage, Store, UploadsQuery, WriteConditions,
};

use crate::support::store::{SplitMix, open};

/// Keys built from a few segments, so prefixes and delimiters collide a lot.
const SEGMENTS: &[&str] = &["a", "b", "ab", "/", "a/", "b/", "-", "x-y", "é", "ü/", "z"];

fn random_key(rng: &mut SplitMix) -> String {
    let n = 1 + rng.below(6);
    (0..n).map(|_| rng.pick(SEGMENTS)).collect()
}

/// One item of a listing: a key or a common prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Item {
    Key(String, u64),
    Prefix(String),
}

/// The listing semantics written as plainly as possible: walk every key in order.
fn model_page(
    keys: &BTreeMap<String, u64>,
    prefix: &str,
    delim: Option<&str>,
    start_after: Option<&str>,
    max: usize,
) -> (Vec<Item>, bool) {
    let roll = |k: &str| -> Option<String> {
        let d = delim?;
        let rest = k.strip_prefix(prefix)?;
        rest.find(d)
            .map(|at| k[..prefix.len() + at + d.len()].to_owned())
    };
    // A start-after that is itself a common prefix continues past everything under it.
    let skip_under = start_after.filter(|sa| roll(sa).as_deref() == Some(*sa));
    let mut items: Vec<Item> = Vec::new();
    for (k, &size) in keys {
        if !k.starts_with(prefix) {
            continue;
        }
        if start_after.is_some_and(|sa| k.as_str() <= sa) {
            continue;
        }
        if skip_under.is_some_and(|cp| k.starts_with(cp)) {
            continue;
        }
        let item = match roll(k) {
            Some(cp) => Item::Prefix(cp),
            None => Item::Key(k.clone(), size),
        };
        // Keys under one common prefix are adjacent in key order.
        if items.last() != Some(&item) {
            items.push(item);
        }
    }
    let truncated = items.len() > max;
    items.truncate(max);
    (items, truncated)
}

fn store_items(page: &ObjectsPage) -> Vec<Item> {
    // Merge keys and prefixes back into one ordered list, as S3 interleaves them.
    let mut items: Vec<(String, Item)> = page
        .objects
        .iter()
        .map(|o| (o.key.clone(), Item::Key(o.key.clone(), o.size)))
        .chain(
            page.common_prefixes
                .iter()
                .map(|p| (p.clone(), Item::Prefix(p.clone()))),
        )
        .collect();
    items.sort_by(|a, b| a.0.cmp(&b.0));
    items.into_iter().map(|(_, i)| i).collect()
}

fn item_name(i: &Item) -> &str {
    match i {
        Item::Key(k, _) | Item::Prefix(k) => k,
    }
}

/// Page through the whole listing: the pages must be consecutive chunks of the model's full
/// listing, each continuing from the previous page's `next_start_after`.
fn compare_all_pages(
    s: &Store,
    keys: &BTreeMap<String, u64>,
    prefix: &str,
    delim: Option<&str>,
    max: usize,
) -> usize {
    let (full, _) = model_page(keys, prefix, delim, None, usize::MAX);
    let mut chunks = full.chunks(max).peekable();
    let mut after: Option<String> = None;
    loop {
        let q = ListQuery {
            prefix,
            delimiter: delim,
            start_after: after.as_deref(),
            max_keys: max,
        };
        let page = s.list_objects("b", &q).unwrap();
        let want = chunks.next().unwrap_or_default();
        assert_eq!(store_items(&page), want, "{q:?}");
        assert_eq!(page.is_truncated, chunks.peek().is_some(), "{q:?}");
        if !page.is_truncated {
            assert_eq!(page.next_start_after, None);
            return full.len();
        }
        let next = page.next_start_after.clone().unwrap();
        assert_eq!(Some(next.as_str()), want.last().map(item_name));
        after = Some(next);
    }
}

#[test]
fn listing_matches_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.create_bucket("b").unwrap();
    // Neighbour buckets must never leak into "b"'s listing.
    s.create_bucket("a").unwrap();
    s.create_bucket("b0").unwrap();
    let mut rng = SplitMix(0x5eed);
    let mut keys = BTreeMap::new();
    while keys.len() < 3000 {
        let k = random_key(&mut rng);
        let size = rng.below(40) as u64;
        let mut w = s.object_writer("b", &k, None).unwrap();
        w.write(&vec![7u8; size as usize]).unwrap();
        w.commit(ObjectMeta::default(), WriteConditions::default())
            .unwrap();
        keys.insert(k, size);
    }
    for b in ["a", "b0"] {
        let mut w = s.object_writer(b, "a", None).unwrap();
        w.write(b"x").unwrap();
        w.commit(ObjectMeta::default(), WriteConditions::default())
            .unwrap();
    }

    let prefixes = ["", "a", "a/", "ab", "b/a", "é", "ü/", "zz-nothing"];
    let delims = [None, Some("/"), Some("-"), Some("ab"), Some("ü")];
    for prefix in prefixes {
        for delim in delims {
            for max in [1, 2, 7, 1000] {
                compare_all_pages(&s, &keys, prefix, delim, max);
            }
        }
    }

    // Arbitrary start-after values, including common prefixes and keys that do not exist.
    for _ in 0..300 {
        let sa = if rng.below(2) == 0 {
            random_key(&mut rng)
        } else {
            keys.keys().nth(rng.below(keys.len())).unwrap().clone()
        };
        let prefix = rng.pick(&prefixes);
        let delim = delims[rng.below(delims.len())];
        let max = 1 + rng.below(20);
        let q = ListQuery {
            prefix,
            delimiter: delim,
            start_after: Some(&sa),
            max_keys: max,
        };
        let page = s.list_objects("b", &q).unwrap();
        let (want, truncated) = model_page(&keys, prefix, delim, Some(&sa), max);
        assert_eq!(store_items(&page), want, "{q:?}");
        assert_eq!(page.is_truncated, truncated);
    }

    // Deletes are visible to the next listing.
    let victims: Vec<String> = keys.keys().step_by(3).cloned().collect();
    for k in &victims {
        s.delete_object("b", k, DeleteOptions::default()).unwrap();
        keys.remove(k);
    }
    for delim in delims {
        compare_all_pages(&s, &keys, "", delim, 50);
    }
}

#[test]
fn listing_entries_and_limits() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.create_bucket("b").unwrap();
    let mut w = s.object_writer("b", "k", None).unwrap();
    w.write(b"hello").unwrap();
    let put = w
        .commit(ObjectMeta::default(), WriteConditions::default())
        .unwrap();
    let page = s
        .list_objects(
            "b",
            &ListQuery {
                max_keys: 10,
                ..ListQuery::default()
            },
        )
        .unwrap();
    let e = &page.objects[0];
    assert_eq!(
        (e.key.as_str(), e.size, e.etag, e.last_modified),
        ("k", 5, put.etag, put.last_modified)
    );
    assert_eq!(e.storage_class, "STANDARD");
    // max-keys 0: nothing, and nothing to continue from.
    let empty = s.list_objects("b", &ListQuery::default()).unwrap();
    assert!(empty.objects.is_empty() && !empty.is_truncated);
    // More than 1000 is clamped to 1000.
    for i in 0..1001 {
        let mut w = s.object_writer("b", &format!("n{i:04}"), None).unwrap();
        w.write(b"").unwrap();
        w.commit(ObjectMeta::default(), WriteConditions::default())
            .unwrap();
    }
    let page = s
        .list_objects(
            "b",
            &ListQuery {
                max_keys: 5000,
                ..ListQuery::default()
            },
        )
        .unwrap();
    assert_eq!(page.objects.len(), 1000);
    assert!(page.is_truncated);
}

#[test]
fn upload_listing_matches_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.create_bucket("b").unwrap();
    s.create_bucket("b0").unwrap();
    s.create_multipart_upload("b0", "a", ObjectMeta::default(), None)
        .unwrap();
    let mut rng = SplitMix(42);
    // (key, upload id) in creation order; several uploads per key.
    let mut uploads: Vec<(String, String)> = Vec::new();
    for _ in 0..300 {
        let k = random_key(&mut rng);
        let n = 1 + rng.below(3);
        for _ in 0..n {
            let id = s
                .create_multipart_upload("b", &k, ObjectMeta::default(), None)
                .unwrap();
            uploads.push((k.clone(), id));
        }
    }
    // S3 order: by key, then by initiation (a stable sort keeps creation order within a key).
    let mut model = uploads.clone();
    model.sort_by(|a, b| a.0.cmp(&b.0));

    for prefix in ["", "a", "a/", "ü/"] {
        for delim in [None, Some("/")] {
            for max in [1, 3, 1000] {
                // Expected items: uploads, or common prefixes each once.
                let mut want: Vec<(String, Option<String>)> = Vec::new();
                for (k, id) in &model {
                    if !k.starts_with(prefix) {
                        continue;
                    }
                    let cp = delim.and_then(|d| {
                        k[prefix.len()..]
                            .find(d)
                            .map(|at| k[..prefix.len() + at + d.len()].to_owned())
                    });
                    let item = match cp {
                        Some(cp) => (cp, None),
                        None => (k.clone(), Some(id.clone())),
                    };
                    if want.last() != Some(&item) {
                        want.push(item);
                    }
                }
                let mut got: Vec<(String, Option<String>)> = Vec::new();
                let (mut km, mut uim): (Option<String>, Option<String>) = (None, None);
                loop {
                    let q = UploadsQuery {
                        prefix,
                        delimiter: delim,
                        key_marker: km.as_deref(),
                        upload_id_marker: uim.as_deref(),
                        max_uploads: max,
                    };
                    let page = s.list_uploads("b", &q).unwrap();
                    assert!(page.uploads.len() + page.common_prefixes.len() <= max);
                    let mut items: Vec<(String, Option<String>)> = page
                        .uploads
                        .iter()
                        .map(|u| (u.key.clone(), Some(u.upload_id.clone())))
                        .chain(page.common_prefixes.iter().map(|p| (p.clone(), None)))
                        .collect();
                    items.sort();
                    got.extend(items);
                    if !page.is_truncated {
                        break;
                    }
                    km = page.next_key_marker;
                    uim = page.next_upload_id_marker;
                }
                assert_eq!(got, want, "prefix {prefix:?} delim {delim:?} max {max}");
            }
        }
    }
    assert_eq!(
        s.list_uploads("nope", &UploadsQuery::default())
            .unwrap_err()
            .code,
        S3ErrorCode::NoSuchBucket
    );
}
