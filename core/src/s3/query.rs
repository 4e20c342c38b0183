//! The query string, parsed once and kept sorted (as s3s `ordered_qs.rs` does).
//!
//! Names and values are percent-decoded strictly (`+` is a space, as S3 reads query strings)
//! and sorted by name, then value, so lookups are binary searches and the order is
//! deterministic. Pairs borrow from the request target unless decoding changed them.

use alloc::borrow::Cow;
use alloc::vec::Vec;

use super::S3Result;
use super::uri;

/// A decoded query string, sorted by name (then value).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query<'a> {
    pairs: Vec<(Cow<'a, str>, Cow<'a, str>)>,
}

impl<'a> Query<'a> {
    /// Parse a raw query string (the part after `?`, without it).
    ///
    /// Empty segments (`a&&b`) are skipped; a segment without `=` has an empty value
    /// (`?uploads`). Invalid percent-encoding or UTF-8 is an `InvalidArgument` error.
    pub fn parse(raw: &'a str) -> S3Result<Self> {
        let mut pairs = Vec::new();
        for segment in raw.split('&').filter(|s| !s.is_empty()) {
            let (name, value) = segment.split_once('=').unwrap_or((segment, ""));
            pairs.push((uri::decode(name, true)?, uri::decode(value, true)?));
        }
        pairs.sort_unstable();
        Ok(Self { pairs })
    }

    /// Number of pairs (duplicates counted).
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// Whether there are no pairs.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// Whether a parameter called `name` is present (with any value, even empty).
    pub fn has(&self, name: &str) -> bool {
        self.first_index(name).is_some()
    }

    /// The value of the first parameter called `name` (in value order if repeated).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.first_index(name)
            .and_then(|i| self.pairs.get(i))
            .map(|(_, v)| v.as_ref())
    }

    /// The value of `name`, keeping the borrow of the request target when possible.
    pub fn get_cow(&self, name: &str) -> Option<Cow<'a, str>> {
        self.first_index(name)
            .and_then(|i| self.pairs.get(i))
            .map(|(_, v)| v.clone())
    }

    /// All values of `name`, in sorted order.
    pub fn get_all<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'s str> + 's {
        let start = self.pairs.partition_point(|(n, _)| n.as_ref() < name);
        self.pairs
            .get(start..)
            .unwrap_or_default()
            .iter()
            .take_while(move |(n, _)| n == name)
            .map(|(_, v)| v.as_ref())
    }

    /// All pairs, sorted by name then value.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.pairs.iter().map(|(n, v)| (n.as_ref(), v.as_ref()))
    }

    fn first_index(&self, name: &str) -> Option<usize> {
        let i = self.pairs.partition_point(|(n, _)| n.as_ref() < name);
        (self.pairs.get(i)?.0 == name).then_some(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;
    use alloc::vec;
    use proptest::prelude::*;

    #[test]
    fn parses_sorted_and_decoded() {
        let q = Query::parse("prefix=photos%2F2006%2F&list-type=2&delimiter=/&uploads&a+b=c+d")
            .expect("valid query");
        let names: Vec<&str> = q.iter().map(|(n, _)| n).collect();
        assert_eq!(
            names,
            ["a b", "delimiter", "list-type", "prefix", "uploads"]
        );
        assert_eq!(q.get("prefix"), Some("photos/2006/"));
        assert_eq!(q.get("a b"), Some("c d"));
        assert_eq!(q.get("uploads"), Some(""));
        assert!(q.has("uploads"));
        assert!(!q.has("upload"));
        assert!(!q.has("uploadsx"));
        assert_eq!(q.get("missing"), None);
    }

    #[test]
    fn borrows_when_nothing_to_decode() {
        let raw = String::from("uploadId=abc&partNumber=3&k=a%20b");
        let q = Query::parse(&raw).expect("valid query");
        assert!(matches!(q.get_cow("uploadId"), Some(Cow::Borrowed("abc"))));
        assert!(matches!(q.get_cow("k"), Some(Cow::Owned(_))));
    }

    #[test]
    fn empty_segments_and_duplicates() {
        let q = Query::parse("&&b=2&&a&b=1&").expect("valid query");
        assert_eq!(q.len(), 3);
        assert_eq!(q.get("b"), Some("1"));
        assert_eq!(q.get_all("b").collect::<Vec<_>>(), vec!["1", "2"]);
        assert_eq!(q.get_all("zz").count(), 0);
        assert!(Query::parse("").expect("empty").is_empty());
    }

    #[test]
    fn value_may_contain_equals() {
        let q = Query::parse("continuation-token=abc==").expect("valid");
        assert_eq!(q.get("continuation-token"), Some("abc=="));
    }

    #[test]
    fn rejects_bad_encoding() {
        assert!(Query::parse("prefix=%zz").is_err());
        assert!(Query::parse("pre%fix=a").is_err());
        assert!(Query::parse("prefix=%C3%28").is_err());
    }

    proptest! {
        #[test]
        fn lookup_matches_linear_scan(pairs in proptest::collection::vec(("[a-e]{0,3}", "[a-z%+0-9]{0,4}"), 0..12)) {
            let raw: Vec<String> = pairs.iter().map(|(n, v)| alloc::format!("{n}={v}")).collect();
            let raw = raw.join("&");
            if let Ok(q) = Query::parse(&raw) {
                for name in ["", "a", "b", "ab", "e", "zz"] {
                    let linear = q.iter().filter(|(n, _)| *n == name).map(|(_, v)| v).min();
                    prop_assert_eq!(q.get(name), linear);
                    prop_assert_eq!(q.has(name), linear.is_some());
                }
            }
        }
    }
}
