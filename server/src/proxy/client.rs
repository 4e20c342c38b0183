//! The proxy's own S3 client: the requests it makes of its backends itself — a backend's check
//! (`sync`), the rebalance's listings and moves, DeleteBucket's fences and checks, the settings
//! it fans out, an upload's owner, a key's copies under earlier layouts — as typed requests
//! ([`Call`]'s constructors here: the paths, queries and bodies S3 wants, in one place), sent by
//! a [`Client`] over the call layer (`forward::call`: every request signed as its caller by
//! `sign::sign_as`, and sealed for the cluster where it carries `x-ferry-*` names).

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use ferry_core::md5::{content_md5, md5};
use ferry_core::rt::Runtime;
use ferry_core::s3::header;
use ferry_core::s3::xml::{
    CompleteMultipartUpload, ListAllMyBucketsResult, ObjectIdentifier, S3_NS, Tagging,
};
use ferry_core::s3::{S3Result, tagging, uri, xml};

use super::Proxy;
use super::context::{Caller, Cx};
use super::forward::{Call, Reply, call, call_for_check};

/// A bucket's path (path-style, encoded).
pub(crate) fn bucket_path(bucket: &str) -> String {
    format!("/{}", uri::encode_path(bucket))
}

/// An object's path (path-style, encoded).
pub(crate) fn object_path(bucket: &str, key: &str) -> String {
    format!("/{}/{}", uri::encode_path(bucket), uri::encode_path(key))
}

/// `versionId=...`, or nothing.
fn version_query(version: Option<&str>) -> String {
    version.map_or_else(String::new, |v| format!("versionId={}", uri::encode(v)))
}

/// The query of subresource `sub` of an object's version (`acl&versionId=...`).
fn sub_query(sub: &str, version: Option<&str>) -> String {
    match version {
        Some(v) => format!("{sub}&versionId={}", uri::encode(v)),
        None => sub.to_owned(),
    }
}

/// `&name=value` (the value encoded) when there is a value.
fn push_param(query: &mut String, name: &str, value: Option<&str>) {
    if let Some(v) = value {
        let sep = if query.is_empty() { "" } else { "&" };
        let _ = write!(query, "{sep}{name}={}", uri::encode(v));
    }
}

/// The CreateBucket body for a backend in `region` (none for us-east-1, S3's default).
fn create_bucket_body(region: &str) -> Vec<u8> {
    if region == "us-east-1" {
        return Vec::new();
    }
    let mut b = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><CreateBucketConfiguration xmlns="{S3_NS}"><LocationConstraint>"#
    )
    .into_bytes();
    xml::escape(&mut b, region);
    b.extend_from_slice(b"</LocationConstraint></CreateBucketConfiguration>");
    b
}

/// The `<Delete>` body of a DeleteObjects of `objects`.
fn delete_body(quiet: bool, objects: &[&ObjectIdentifier<'_>]) -> Vec<u8> {
    let mut b =
        format!(r#"<?xml version="1.0" encoding="UTF-8"?><Delete xmlns="{S3_NS}">"#).into_bytes();
    if quiet {
        b.extend_from_slice(b"<Quiet>true</Quiet>");
    }
    for o in objects {
        b.extend_from_slice(b"<Object><Key>");
        xml::escape(&mut b, &o.key);
        b.extend_from_slice(b"</Key>");
        if let Some(v) = &o.version_id {
            b.extend_from_slice(b"<VersionId>");
            xml::escape(&mut b, v);
            b.extend_from_slice(b"</VersionId>");
        }
        b.extend_from_slice(b"</Object>");
    }
    b.extend_from_slice(b"</Delete>");
    b
}

/// The requests the proxy makes itself, typed.
impl Call {
    /// ListBuckets: those starting with `prefix`, at most `max`, after `token`.
    pub fn list_buckets(prefix: Option<&str>, max: Option<u32>, token: Option<&str>) -> Self {
        let mut query = String::new();
        push_param(
            &mut query,
            "max-buckets",
            max.map(|n| n.to_string()).as_deref(),
        );
        push_param(&mut query, "prefix", prefix);
        push_param(&mut query, "continuation-token", token);
        Self::new("GET", "/".into(), query)
    }

    /// CreateBucket on a backend in `region`.
    pub fn create_bucket(bucket: &str, region: &str) -> Self {
        let mut c = Self::new("PUT", bucket_path(bucket), String::new());
        c.body = create_bucket_body(region);
        c
    }

    /// DeleteBucket.
    pub fn delete_bucket(bucket: &str) -> Self {
        Self::new("DELETE", bucket_path(bucket), String::new())
    }

    /// A DeleteBucket's fence on a Ferry node (`Endpoint::BucketFence`), held under `token`
    /// for `lease` (none: lifted).
    pub fn fence(bucket: &str, token: &str, lease: Duration) -> Self {
        let query = format!(
            "{}={token}&lease-seconds={}",
            header::X_FERRY_FENCE,
            lease.as_secs()
        );
        Self::new("POST", bucket_path(bucket), query)
    }

    /// A GET of `path?query` (a bucket setting's document, say).
    pub fn get(path: &str, query: &str) -> Self {
        Self::new("GET", path.to_owned(), query.to_owned())
    }

    /// The PUT that sets the document `doc` at `path?query`, with its `Content-MD5` and
    /// `content_type` (XML when not said).
    pub fn put(path: &str, query: &str, doc: &[u8], content_type: Option<&str>) -> Self {
        let mut put = Self::new("PUT", path.to_owned(), query.to_owned());
        put.header("Content-MD5", content_md5(&md5(doc)).as_str().to_owned());
        let ct = content_type.unwrap_or("application/xml");
        put.header("Content-Type", ct.to_owned());
        put.body = doc.to_vec();
        put
    }

    /// A DELETE of `path?query`.
    pub fn delete(path: &str, query: &str) -> Self {
        Self::new("DELETE", path.to_owned(), query.to_owned())
    }

    /// The bucket's setting `sub` (a subresource: `versioning`, `cors`, `acl`...).
    pub fn get_setting(bucket: &str, sub: &str) -> Self {
        Self::get(&bucket_path(bucket), sub)
    }

    /// Set the bucket's setting `sub` to `doc` ([`Call::put_document`]).
    pub fn put_setting(bucket: &str, sub: &str, doc: &[u8], content_type: Option<&str>) -> Self {
        Self::put(&bucket_path(bucket), sub, doc, content_type)
    }

    /// Delete the bucket's setting `sub`.
    pub fn delete_setting(bucket: &str, sub: &str) -> Self {
        Self::delete(&bucket_path(bucket), sub)
    }

    /// A page of ListObjectsV2: at most `max_keys`, after the key `start_after`.
    pub fn list_objects(bucket: &str, max_keys: u32, start_after: Option<&str>) -> Self {
        let mut query = format!("list-type=2&max-keys={max_keys}");
        push_param(&mut query, "start-after", start_after);
        Self::new("GET", bucket_path(bucket), query)
    }

    /// A page of ListObjectVersions: at most `max_keys`, after the markers.
    pub fn list_versions(
        bucket: &str,
        max_keys: u32,
        key_marker: Option<&str>,
        version_marker: Option<&str>,
    ) -> Self {
        let mut query = format!("versions&max-keys={max_keys}");
        push_param(&mut query, "key-marker", key_marker);
        push_param(&mut query, "version-id-marker", version_marker);
        Self::new("GET", bucket_path(bucket), query)
    }

    /// A page of ListMultipartUploads: at most `max`, after the markers.
    pub fn list_uploads(
        bucket: &str,
        max: u32,
        key_marker: Option<&str>,
        upload_marker: Option<&str>,
    ) -> Self {
        let mut query = format!("uploads&max-uploads={max}");
        push_param(&mut query, "key-marker", key_marker);
        push_param(&mut query, "upload-id-marker", upload_marker);
        Self::new("GET", bucket_path(bucket), query)
    }

    /// DeleteObjects of `objects` (`quiet`: only the errors answered).
    pub fn delete_objects(bucket: &str, quiet: bool, objects: &[&ObjectIdentifier<'_>]) -> Self {
        let xml = delete_body(quiet, objects);
        let mut c = Self::new("POST", bucket_path(bucket), "delete".into());
        c.header("Content-MD5", content_md5(&md5(&xml)).as_str().to_owned());
        c.header("Content-Type", "application/xml");
        c.body = xml;
        c
    }

    /// HeadObject of `key` (`version`).
    pub fn head_object(bucket: &str, key: &str, version: Option<&str>) -> Self {
        Self::new("HEAD", object_path(bucket, key), version_query(version))
    }

    /// DeleteObject of `key` (`version`), only while its ETag is `if_match` when given.
    pub fn delete_object(
        bucket: &str,
        key: &str,
        version: Option<&str>,
        if_match: Option<&str>,
    ) -> Self {
        let mut c = Self::new("DELETE", object_path(bucket, key), version_query(version));
        if let Some(etag) = if_match {
            c.header("If-Match", etag.to_owned());
        }
        c
    }

    /// The document `sub` of an object's version (`acl`, `tagging`).
    pub fn get_object_setting(bucket: &str, key: &str, sub: &str, version: Option<&str>) -> Self {
        Self::get(&object_path(bucket, key), &sub_query(sub, version))
    }

    /// Set the document `sub` of an object's version (`retention`, `legal-hold`) to `doc`.
    pub fn put_object_setting(
        bucket: &str,
        key: &str,
        sub: &str,
        version: Option<&str>,
        doc: &[u8],
    ) -> Self {
        Self::put(
            &object_path(bucket, key),
            &sub_query(sub, version),
            doc,
            None,
        )
    }

    /// CreateMultipartUpload.
    pub fn create_upload(bucket: &str, key: &str) -> Self {
        Self::new("POST", object_path(bucket, key), "uploads".into())
    }

    /// ListParts of `upload`, at most `max`.
    pub fn list_parts(bucket: &str, key: &str, upload: &str, max: u32) -> Self {
        let query = format!("max-parts={max}&uploadId={}", uri::encode(upload));
        Self::new("GET", object_path(bucket, key), query)
    }

    /// CompleteMultipartUpload of `upload` with `parts`.
    pub fn complete_upload(
        bucket: &str,
        key: &str,
        upload: &str,
        parts: &CompleteMultipartUpload<'_>,
    ) -> Self {
        let query = format!("uploadId={}", uri::encode(upload));
        let mut c = Self::new("POST", object_path(bucket, key), query);
        parts.write_xml(&mut c.body);
        c
    }

    /// AbortMultipartUpload of `upload`.
    pub fn abort_upload(bucket: &str, key: &str, upload: &str) -> Self {
        let query = format!("uploadId={}", uri::encode(upload));
        Self::new("DELETE", object_path(bucket, key), query)
    }
}

/// What a backend has of a bucket setting (a subresource's document): what a write changes
/// and may have to put back (`buckets::relay_everywhere`), and what a backend's check copies
/// to it (`sync`).
#[derive(Debug, Clone)]
pub(crate) enum Setting {
    /// This document (and its `Content-Type`).
    Doc(Vec<u8>, Option<String>),
    /// None (a 404 other than `NoSuchBucket`).
    Absent,
    /// It could not be read.
    Unknown,
}

impl Setting {
    /// What the answer to a GET of the subresource says.
    pub fn of(reply: S3Result<Reply>) -> Self {
        match reply {
            Ok(r) if r.ok() => {
                let content_type = r.header(header::CONTENT_TYPE).map(str::to_owned);
                Self::Doc(r.body, content_type)
            }
            Ok(r) if r.status == 404 && r.error_code().as_deref() != Some("NoSuchBucket") => {
                Self::Absent
            }
            _ => Self::Unknown,
        }
    }
}

impl<R: Runtime> Cx<'_, R> {
    /// The client of the requests the proxy makes for this one, as its caller.
    pub fn client(&self) -> Client<'_, R> {
        Client::new(self.p, &self.caller)
    }
}

/// Who sends the proxy's own requests, and how: as `caller`, and for a backend's check (see
/// `forward::call_for_check`) of backend `checked`, patient with that one only.
pub(crate) struct Client<'a, R: Runtime> {
    p: &'a Arc<Proxy<R>>,
    caller: &'a Caller,
    checked: Option<usize>,
}

impl<'a, R: Runtime> Client<'a, R> {
    /// Requests as `caller`.
    pub fn new(p: &'a Arc<Proxy<R>>, caller: &'a Caller) -> Self {
        Self {
            p,
            caller,
            checked: None,
        }
    }

    /// Requests as `caller` for the check of backend `checked` (`sync`): they may go to a
    /// backend that does not take traffic yet, and only `checked` is waited for.
    pub fn for_check(p: &'a Arc<Proxy<R>>, caller: &'a Caller, checked: usize) -> Self {
        Self {
            p,
            caller,
            checked: Some(checked),
        }
    }

    /// The proxy the requests go from.
    pub fn proxy(&self) -> &'a Arc<Proxy<R>> {
        self.p
    }

    /// Who the requests are from.
    pub fn caller(&self) -> &'a Caller {
        self.caller
    }

    /// Send `c` to backend `on`; its whole answer.
    pub async fn send(&self, on: usize, c: &Call) -> S3Result<Reply> {
        match self.checked {
            None => call(self.p, on, self.caller, c).await,
            Some(checked) => call_for_check(self.p, on, self.caller, c, on == checked).await,
        }
    }

    /// [`Client::send`] on a task of its own, so that requests to several backends run at
    /// once.
    pub fn spawn(
        &self,
        on: usize,
        c: Call,
    ) -> impl Future<Output = S3Result<Reply>> + Send + 'static + use<'a, R> {
        let (p, caller) = (self.p.clone(), self.caller.clone());
        self.p
            .shared
            .rt
            .spawn(async move { call(&p, on, &caller, &c).await })
    }

    /// Every bucket backend `on` lists, page by page.
    pub async fn list_buckets(&self, on: usize) -> S3Result<Vec<String>> {
        let mut names = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let reply = self
                .send(on, &Call::list_buckets(None, None, token.as_deref()))
                .await?;
            if !reply.ok() {
                return Err(reply.to_error());
            }
            let list = ListAllMyBucketsResult::parse_xml(&reply.body)?;
            names.extend(list.buckets.iter().map(|b| b.name.to_string()));
            match list.continuation_token {
                Some(t) if !t.is_empty() => token = Some(t.into_owned()),
                _ => return Ok(names),
            }
        }
    }

    /// What backend `on` has of `bucket`'s setting `sub`.
    pub async fn setting(&self, on: usize, bucket: &str, sub: &str) -> Setting {
        Setting::of(self.send(on, &Call::get_setting(bucket, sub)).await)
    }

    /// The tags of `key` (`version`) on backend `on`, in the `x-amz-tagging` form.
    pub async fn tags(
        &self,
        on: usize,
        bucket: &str,
        key: &str,
        version: Option<&str>,
    ) -> S3Result<String> {
        let get = Call::get_object_setting(bucket, key, "tagging", version);
        let reply = self.send(on, &get).await?;
        if !reply.ok() {
            return Err(reply.to_error());
        }
        let doc = Tagging::parse_xml(&reply.body)?;
        Ok(tagging::header_value(
            doc.tags.iter().map(|t| (t.key.as_ref(), t.value.as_ref())),
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use ferry_core::s3::S3Error;
    use ferry_core::s3::S3ErrorCode;
    use ferry_core::s3::xml::Delete;

    use super::*;

    #[test]
    fn what_a_backend_answers_of_a_setting() {
        let reply = |status, body: &str| {
            Ok(Reply {
                status,
                headers: vec![("Content-Type".into(), "application/json".into())],
                body: body.as_bytes().to_vec(),
            })
        };
        let missing = "<Error><Code>NoSuchBucketPolicy</Code><Message>m</Message></Error>";
        let no_bucket = "<Error><Code>NoSuchBucket</Code><Message>m</Message></Error>";
        assert!(matches!(
            Setting::of(reply(200, "{}")),
            Setting::Doc(d, Some(ct)) if d == b"{}" && ct == "application/json"
        ));
        assert!(matches!(Setting::of(reply(404, missing)), Setting::Absent));
        // A bucket that is not there has no setting to put back; neither has a refusal.
        assert!(matches!(
            Setting::of(reply(404, no_bucket)),
            Setting::Unknown
        ));
        assert!(matches!(Setting::of(reply(501, "")), Setting::Unknown));
        assert!(matches!(
            Setting::of(Err(S3Error::new(S3ErrorCode::SlowDown))),
            Setting::Unknown
        ));
        let put = Call::put("/b", "policy", b"{}", Some("application/json"));
        assert_eq!(
            (put.method, put.query.as_str(), put.body.as_slice()),
            ("PUT", "policy", &b"{}"[..])
        );
        assert!(put.has_header("content-md5") && put.has_header("content-type"));
    }

    #[test]
    fn requests_say_what_s3_wants() {
        let c = Call::list_buckets(Some("a b"), Some(1), None);
        assert_eq!(
            (c.path.as_str(), c.query.as_str()),
            ("/", "max-buckets=1&prefix=a%20b")
        );
        assert_eq!(
            Call::list_buckets(None, None, Some("t/1")).query,
            "continuation-token=t%2F1"
        );
        assert_eq!(Call::list_buckets(None, None, None).query, "");
        let c = Call::list_versions("b", 1000, Some("k"), Some("v"));
        assert_eq!(
            c.query,
            "versions&max-keys=1000&key-marker=k&version-id-marker=v"
        );
        assert_eq!(
            Call::list_objects("b", 1, None).query,
            "list-type=2&max-keys=1"
        );
        assert_eq!(
            Call::list_uploads("b", 1, None, None).query,
            "uploads&max-uploads=1"
        );
        let c = Call::fence("b", "t0", Duration::from_secs(30));
        assert_eq!(
            (c.method, c.path.as_str(), c.query.as_str()),
            ("POST", "/b", "x-ferry-fence=t0&lease-seconds=30")
        );
        let c = Call::delete_object("b", "a key", Some("v1"), Some("\"e\""));
        assert_eq!(
            (c.path.as_str(), c.query.as_str()),
            ("/b/a%20key", "versionId=v1")
        );
        assert!(c.has_header("if-match"));
        let c = Call::get_object_setting("b", "k", "acl", Some("v"));
        assert_eq!(c.query, "acl&versionId=v");
        assert!(Call::create_bucket("b", "us-east-1").body.is_empty());
        assert!(!Call::create_bucket("b", "eu-west-1").body.is_empty());
    }

    #[test]
    fn delete_body_round_trips_through_the_parser() {
        let keys = ["plain", "a&b<c>\"d'", "ctl\u{1}x", "ü/€ space"];
        let ids: Vec<ObjectIdentifier<'_>> = keys
            .iter()
            .map(|k| ObjectIdentifier {
                key: Cow::Borrowed(k),
                version_id: None,
            })
            .collect();
        let refs: Vec<&ObjectIdentifier<'_>> = ids.iter().collect();
        let xml = delete_body(true, &refs);
        let parsed = Delete::parse_xml(&xml).unwrap();
        assert!(parsed.quiet);
        let got: Vec<&str> = parsed.objects.iter().map(|o| o.key.as_ref()).collect();
        assert_eq!(got, keys);
    }
}
