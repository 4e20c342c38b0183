//! S3 addressing: how a request names its bucket and key, path-style (`/bucket/key`) or
//! virtual-hosted-style (`bucket.<base domain>` in the Host, then `/key`).

use alloc::borrow::Cow;
use alloc::string::String;
use alloc::vec::Vec;

use super::{S3Error, S3ErrorCode, S3Result, uri, validate};

/// How requests name their bucket.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddressingConfig {
    /// Domains under which `bucket.<domain>` is virtual-hosted-style (e.g. `s3.example.com`).
    ///
    /// A Host equal to one of them, or matching none, is path-style.
    pub base_domains: Vec<String>,
}

impl AddressingConfig {
    /// Path-style only.
    pub fn path_style() -> Self {
        Self::default()
    }

    /// Virtual-hosted-style under these base domains, path-style otherwise.
    pub fn with_base_domains<I, S>(domains: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            base_domains: domains.into_iter().map(Into::into).collect(),
        }
    }

    /// The bucket named by a Host header, if it is `bucket.<base domain>`.
    ///
    /// The port and a trailing dot are stripped; the longest matching base domain wins, and
    /// a Host equal to a base domain names no bucket.
    pub fn bucket_from_host<'h>(&self, host: &'h str) -> Option<&'h str> {
        let host = strip_port(host);
        let host = host.strip_suffix('.').unwrap_or(host);
        if self
            .base_domains
            .iter()
            .any(|d| host.eq_ignore_ascii_case(d))
        {
            return None;
        }
        self.base_domains
            .iter()
            .filter_map(|d| {
                let split = host.len().checked_sub(d.len())?.checked_sub(1)?;
                let (bucket, dot_domain) = host.split_at_checked(split)?;
                let domain = dot_domain.strip_prefix('.')?;
                domain.eq_ignore_ascii_case(d).then_some((d.len(), bucket))
            })
            .max_by_key(|(len, _)| *len)
            .map(|(_, bucket)| bucket)
    }

    /// The bucket a request names by its Host (or, in absolute-form, by the target's
    /// authority), as [`Address::parse`] finds it: what SigV2 puts in front of the resource.
    pub fn virtual_bucket<'a>(&self, target: &'a str, host: Option<&'a str>) -> Option<&'a str> {
        let host = split_absolute_form(target).map_or(host, |(h, _)| Some(h));
        host.and_then(|h| self.bucket_from_host(h))
    }
}

fn strip_port(host: &str) -> &str {
    let host = host.trim();
    if host.starts_with('[') {
        // IPv6 literal: never a virtual host; keep up to the bracket.
        return host.split_once(']').map_or(host, |(h, _)| h);
    }
    host.split_once(':').map_or(host, |(h, _)| h)
}

/// Where a request points: bucket and key, decoded and validated, and the raw target parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Address<'a> {
    /// The bucket, if any (none for ListBuckets).
    pub bucket: Option<Cow<'a, str>>,
    /// The key, if any: `/bucket` and `/bucket/` have none, `/bucket/key/` has `key/`.
    pub key: Option<Cow<'a, str>>,
    /// Whether the bucket came from the Host header.
    pub virtual_hosted: bool,
    /// The raw (still encoded) path, as SigV4 canonicalises it.
    pub raw_path: &'a str,
    /// The raw query string, without `?`.
    pub raw_query: &'a str,
}

impl<'a> Address<'a> {
    /// Split a request target (origin-form or absolute-form) and find bucket and key.
    ///
    /// `host` is the Host header; in absolute-form the target's authority is used instead
    /// (RFC 9112 §3.2.2).
    pub fn parse(target: &'a str, host: Option<&'a str>, cfg: &AddressingConfig) -> S3Result<Self> {
        let (host, origin) =
            split_absolute_form(target).map_or((host, target), |(h, o)| (Some(h), o));
        let (raw_path, raw_query) = origin.split_once('?').unwrap_or((origin, ""));
        let Some(path) = raw_path.strip_prefix('/') else {
            return Err(S3Error::with_message(
                S3ErrorCode::InvalidRequest,
                "The request target must be an absolute path",
            ));
        };
        let host_bucket = host.and_then(|h| cfg.bucket_from_host(h));
        let (bucket, raw_key) = match host_bucket {
            Some(b) => (Some(Cow::Borrowed(b)), path),
            None if path.is_empty() => (None, ""),
            None => {
                let (b, k) = path.split_once('/').unwrap_or((path, ""));
                (Some(uri::decode(b, false)?), k)
            }
        };
        if let Some(b) = &bucket {
            validate::bucket_name(b)?;
        }
        if bucket.is_none() && !raw_key.is_empty() {
            return Err(S3ErrorCode::InvalidBucketName.into());
        }
        let key = if raw_key.is_empty() {
            None
        } else {
            let k = uri::decode(raw_key, false)?;
            validate::object_key(&k)?;
            Some(k)
        };
        Ok(Self {
            bucket,
            key,
            virtual_hosted: host_bucket.is_some(),
            raw_path,
            raw_query,
        })
    }
}

/// `http://authority/path?q` → (authority, `/path?q`); `None` for origin-form.
fn split_absolute_form(target: &str) -> Option<(&str, &str)> {
    let scheme_len = ["http://", "https://"].into_iter().find_map(|s| {
        target
            .get(..s.len())
            .filter(|p| p.eq_ignore_ascii_case(s))
            .map(|_| s.len())
    })?;
    let rest = target.get(scheme_len..)?;
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, origin) = rest.split_at_checked(end)?;
    // `http://host?x` has an empty path, which means `/`; we only need the path to start with
    // `/`, so a bare query is reported as an invalid target by the caller's check.
    Some((authority, if origin.is_empty() { "/" } else { origin }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_matching() {
        let c = AddressingConfig::with_base_domains(["example.com", "s3.example.com"]);
        assert_eq!(c.bucket_from_host("b.s3.example.com"), Some("b"));
        assert_eq!(c.bucket_from_host("b.s3.example.com."), Some("b"));
        assert_eq!(c.bucket_from_host("B.S3.Example.COM:80"), Some("B"));
        assert_eq!(c.bucket_from_host("s3.example.com"), None);
        assert_eq!(c.bucket_from_host("x.example.com"), Some("x"));
        assert_eq!(c.bucket_from_host("example.com:9000"), None);
        assert_eq!(c.bucket_from_host("badexample.com"), None);
        assert_eq!(c.bucket_from_host(".example.com"), Some(""));
        assert_eq!(c.bucket_from_host("[::1]:9000"), None);
        assert_eq!(c.bucket_from_host("127.0.0.1"), None);
        assert_eq!(
            AddressingConfig::path_style().bucket_from_host("b.example.com"),
            None
        );
        // The Host header, or the authority of an absolute-form target, which wins.
        assert_eq!(
            c.virtual_bucket("/k", Some("b.example.com:9000")),
            Some("b")
        );
        assert_eq!(c.virtual_bucket("/b/k", Some("example.com")), None);
        assert_eq!(
            c.virtual_bucket("http://a.example.com/k", Some("b.example.com")),
            Some("a")
        );
        assert_eq!(
            c.virtual_bucket("http://127.0.0.1:9/b/k", Some("b.example.com")),
            None
        );
    }
}
