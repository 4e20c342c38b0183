//! Tags of objects and buckets: the `x-amz-tagging` header and the limits AWS sets.
//!
//! The `<Tagging>` document itself is in [`super::xml`]; both forms end up as a list of
//! [`Tag`]s checked by [`check`].

use alloc::borrow::Cow;
use alloc::vec::Vec;

use super::{S3Error, S3ErrorCode, S3Result, uri};

/// The most tags an object may carry.
pub const MAX_OBJECT_TAGS: usize = 10;
/// The most tags a bucket may carry.
pub const MAX_BUCKET_TAGS: usize = 50;
/// The longest tag key, in Unicode characters.
pub const MAX_KEY_CHARS: usize = 128;
/// The longest tag value, in Unicode characters.
pub const MAX_VALUE_CHARS: usize = 256;

/// One tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag<'a> {
    /// `Key`.
    pub key: Cow<'a, str>,
    /// `Value` (may be empty).
    pub value: Cow<'a, str>,
}

/// What carries the tags: the limits differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TagOwner {
    /// An object: at most [`MAX_OBJECT_TAGS`].
    Object,
    /// A bucket: at most [`MAX_BUCKET_TAGS`].
    Bucket,
}

/// `x-amz-tagging-directive` of CopyObject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TaggingDirective {
    /// Keep the source's tags (the default).
    #[default]
    Copy,
    /// Take the request's `x-amz-tagging` (none if absent).
    Replace,
}

impl TaggingDirective {
    /// Parse the header's value (`COPY` or `REPLACE`; `InvalidArgument` otherwise).
    pub fn parse(value: Option<&[u8]>) -> S3Result<Self> {
        match value.map(<[u8]>::trim_ascii) {
            None => Ok(Self::Copy),
            Some(v) if v.eq_ignore_ascii_case(b"COPY") => Ok(Self::Copy),
            Some(v) if v.eq_ignore_ascii_case(b"REPLACE") => Ok(Self::Replace),
            Some(_) => Err(S3Error::with_message(
                S3ErrorCode::InvalidArgument,
                "Unknown tagging directive.",
            )),
        }
    }
}

fn invalid(why: &'static str) -> S3Error {
    S3Error::with_message(S3ErrorCode::InvalidTag, why)
}

fn bad_tagging_header() -> S3Error {
    S3Error::with_message(
        S3ErrorCode::InvalidArgument,
        "The header 'x-amz-tagging' shall be encoded as UTF-8 then URLEncoded URL query \
         parameters without tag name duplicates.",
    )
}

/// Parse `x-amz-tagging` (`k1=v1&k2=v2`, URL-encoded as a query string: `+` is a space) and
/// [`check`] it against the object limits. An empty value is no tags; a pair without `=` is
/// a key with an empty value. A value that is not URL-encoded UTF-8 is `InvalidArgument`, with
/// AWS's message.
pub fn parse_header(value: &[u8]) -> S3Result<Vec<Tag<'_>>> {
    let text = core::str::from_utf8(value)
        .map_err(|_| bad_tagging_header())?
        .trim();
    let mut tags = Vec::new();
    for pair in text.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        tags.push(Tag {
            key: uri::decode(k, true).map_err(|_| bad_tagging_header())?,
            value: uri::decode(v, true).map_err(|_| bad_tagging_header())?,
        });
    }
    check(&tags, TagOwner::Object)?;
    Ok(tags)
}

/// Write `tags` in the `x-amz-tagging` form (each key and value URL-encoded).
pub fn header_value<'t>(
    tags: impl IntoIterator<Item = (&'t str, &'t str)>,
) -> alloc::string::String {
    use core::fmt::Write as _;
    let mut out = alloc::string::String::new();
    for (i, (k, v)) in tags.into_iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        let _ = write!(out, "{}={}", uri::encode(k), uri::encode(v));
    }
    out
}

/// Whether `c` may appear in a tag: Unicode letters, digits and white space, and
/// `_ . : / = + - @` (AWS's rule for S3 tags).
fn allowed(c: char) -> bool {
    c.is_alphanumeric() || c.is_whitespace() || "_.:/=+-@".contains(c)
}

/// Check a tag set against AWS's limits: at most 10 tags on an object and 50 on a bucket,
/// keys of 1 to 128 characters not starting with `aws:`, values up to 256, only the allowed
/// characters, no key twice. Every failure is `InvalidTag` (400).
pub fn check(tags: &[Tag<'_>], owner: TagOwner) -> S3Result<()> {
    match owner {
        TagOwner::Object if tags.len() > MAX_OBJECT_TAGS => {
            return Err(invalid("Object tags cannot be greater than 10"));
        }
        TagOwner::Bucket if tags.len() > MAX_BUCKET_TAGS => {
            return Err(invalid("Bucket tag count cannot be greater than 50"));
        }
        _ => {}
    }
    for (i, t) in tags.iter().enumerate() {
        let key_chars = t.key.chars().count();
        if key_chars == 0 || !t.key.chars().all(allowed) {
            return Err(invalid("The TagKey you have provided is invalid"));
        }
        if key_chars > MAX_KEY_CHARS {
            return Err(invalid("The TagKey you have provided is too long, max 128"));
        }
        if t.key
            .get(..4)
            .is_some_and(|p| p.eq_ignore_ascii_case("aws:"))
        {
            return Err(invalid("Your TagKey cannot be prefixed with aws:"));
        }
        if !t.value.chars().all(allowed) {
            return Err(invalid("The TagValue you have provided is invalid"));
        }
        if t.value.chars().count() > MAX_VALUE_CHARS {
            return Err(invalid(
                "The TagValue you have provided is too long, max 256",
            ));
        }
        if tags
            .get(..i)
            .is_some_and(|before| before.iter().any(|b| b.key == t.key))
        {
            return Err(invalid("Cannot provide multiple Tags with the same key"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;
    use alloc::vec;

    fn tag(k: &str, v: &str) -> Tag<'static> {
        Tag {
            key: Cow::Owned(k.into()),
            value: Cow::Owned(v.into()),
        }
    }

    fn code(r: S3Result<()>) -> Option<S3ErrorCode> {
        r.err().map(|e| e.code)
    }

    #[test]
    fn header_form_decodes_as_a_query_string() {
        let tags = parse_header(b"project=blue%20sky&team=a+b&empty=&bare").unwrap();
        assert_eq!(
            tags,
            vec![
                tag("project", "blue sky"),
                tag("team", "a b"),
                tag("empty", ""),
                tag("bare", "")
            ]
        );
        assert!(parse_header(b"").unwrap().is_empty());
        assert!(parse_header(b"  ").unwrap().is_empty());
        let e = parse_header(b"a=1&a=2").unwrap_err();
        assert_eq!(e.code, S3ErrorCode::InvalidTag);
        assert_eq!(
            parse_header(b"a=%zz").unwrap_err().code,
            S3ErrorCode::InvalidArgument
        );
        assert_eq!(
            parse_header(&[0xff]).unwrap_err().code,
            S3ErrorCode::InvalidArgument
        );
    }

    #[test]
    fn header_value_round_trips() {
        let pairs = [("a b", "c/d"), ("é", "=+@")];
        let v = header_value(pairs.iter().map(|(k, v)| (*k, *v)));
        assert_eq!(v, "a%20b=c%2Fd&%C3%A9=%3D%2B%40");
        let back = parse_header(v.as_bytes()).unwrap();
        assert_eq!(back, vec![tag("a b", "c/d"), tag("é", "=+@")]);
    }

    #[test]
    fn limits_are_aws_limits() {
        let n = |count: usize| {
            (0..count)
                .map(|i| tag(&alloc::format!("k{i}"), "v"))
                .collect::<Vec<_>>()
        };
        assert_eq!(code(check(&n(10), TagOwner::Object)), None);
        assert_eq!(
            code(check(&n(11), TagOwner::Object)),
            Some(S3ErrorCode::InvalidTag)
        );
        assert_eq!(code(check(&n(50), TagOwner::Bucket)), None);
        assert_eq!(
            code(check(&n(51), TagOwner::Bucket)),
            Some(S3ErrorCode::InvalidTag)
        );
        let long = |c: usize| "é".repeat(c);
        assert_eq!(
            code(check(&[tag(&long(128), &long(256))], TagOwner::Object)),
            None
        );
        for bad in [
            tag(&long(129), ""),
            tag("k", &long(257)),
            tag("", "v"),
            tag("aws:x", "v"),
            tag("AWS:x", "v"),
            tag("a<b", "v"),
            tag("k", "v&w"),
        ] {
            assert_eq!(
                code(check(core::slice::from_ref(&bad), TagOwner::Bucket)),
                Some(S3ErrorCode::InvalidTag),
                "{bad:?}"
            );
        }
        let ok: String = "Aa 1_.:/=+-@日本".into();
        assert_eq!(code(check(&[tag(&ok, &ok)], TagOwner::Object)), None);
        assert_eq!(
            code(check(&[tag("a", "1"), tag("a", "2")], TagOwner::Bucket)),
            Some(S3ErrorCode::InvalidTag)
        );
    }

    #[test]
    fn directive() {
        assert_eq!(TaggingDirective::parse(None), Ok(TaggingDirective::Copy));
        assert_eq!(
            TaggingDirective::parse(Some(b"replace")),
            Ok(TaggingDirective::Replace)
        );
        assert_eq!(
            TaggingDirective::parse(Some(b"COPY")),
            Ok(TaggingDirective::Copy)
        );
        assert_eq!(
            TaggingDirective::parse(Some(b"MOVE")).unwrap_err().code,
            S3ErrorCode::InvalidArgument
        );
    }
}
