//! POST Object: browser uploads with an HTML form (`multipart/form-data`).
//!
//! The request itself is unsigned (the front sees it as anonymous): its authentication is in
//! the form, a SigV4 signature of the base64 `policy` field, or a SigV2 one unless the node
//! turned SigV2 off (`--no-sigv2`). The leading fields are read whole
//! (bounded: `ferry_core::s3::post::{MAX_FIELD_LEN, MAX_FIELDS, MAX_PRE_DATA}`), the signer
//! is checked against the node's users and the policy's conditions against the fields, the
//! write is authorized for the form's signer (anonymous without a signature), then the `file`
//! part is streamed into the store through pooled buffers, never held whole; fields after it
//! are ignored, as S3 does.

use std::sync::Arc;

use ferry_core::http::server::{BodyReader, ResponseWriter};
use ferry_core::http::{Header, find_header_str};
use ferry_core::pool::BufferPool;
use ferry_core::rt::system_unix_time;
use ferry_core::rt::{Runtime, Stream};
use ferry_core::s3::body::{BodyLimit, BodyVerifier, Checks};
use ferry_core::s3::header;
use ferry_core::s3::post::{self, FileScanner, Form, PostPolicy};
use ferry_core::s3::tagging::{self, TagOwner};
use ferry_core::s3::uri;
use ferry_core::s3::validate;
use ferry_core::s3::xml::Tagging;
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};

use super::access;
use super::context::Cx;
use super::request_headers::{object_meta, write_conditions};
use crate::front::Headers;
use crate::front::body::require_length;
use crate::store::{COPY_BUF_SIZE, ObjectMeta, ObjectWriter};
use crate::users::User;

/// Feed `chunk` through the verifier, handing the decoded bytes to `out`.
fn decode(
    verifier: &mut BodyVerifier,
    mut chunk: &[u8],
    mut out: impl FnMut(&[u8]) -> S3Result<()>,
) -> S3Result<()> {
    while !chunk.is_empty() {
        let step = verifier.feed(chunk)?;
        out(step.data)?;
        chunk = chunk.get(step.consumed..).unwrap_or_default();
    }
    Ok(())
}

/// The form's signer (`None`: an anonymous upload) and its policy, if it has one.
fn authenticate<'a, R: Runtime>(
    cx: &Cx<'a, R>,
    form: &Form,
) -> S3Result<(Option<&'a Arc<User>>, Option<PostPolicy>)> {
    let users = &cx.node.users;
    let signer = post::authenticate(form, cx.region(), cx.node.sigv2, |key| {
        users.by_access_key(key).map(|u| u.secret_key.as_str())
    })?;
    let user = signer
        .access_key
        .map(|key| {
            users
                .by_access_key(key)
                .ok_or_else(|| S3Error::new(S3ErrorCode::InvalidAccessKeyId))
        })
        .transpose()?;
    Ok((user, signer.policy))
}

/// The fields that become the object's metadata, as the headers PutObject would carry.
const META_FIELDS: [&str; 6] = [
    header::CONTENT_TYPE,
    header::CACHE_CONTROL,
    header::CONTENT_DISPOSITION,
    header::CONTENT_ENCODING,
    header::CONTENT_LANGUAGE,
    header::EXPIRES,
];

/// Stream the decoded body into the store through pooled buffers.
struct FileSink<'r, R> {
    rt: &'r R,
    writer: Option<ObjectWriter>,
    staged: Vec<u8>,
    size: u64,
    max: u64,
}

impl<R: Runtime> FileSink<'_, R> {
    fn take(&mut self, data: &[u8]) -> S3Result<()> {
        self.size += data.len() as u64;
        if self.size > self.max {
            return Err(S3Error::with_message(
                S3ErrorCode::EntityTooLarge,
                "Your proposed upload exceeds the maximum allowed size",
            ));
        }
        self.staged.extend_from_slice(data);
        Ok(())
    }

    /// Write full buffers (all that is staged with `all`) on a blocking thread.
    async fn flush(&mut self, all: bool) -> S3Result<()> {
        while self.staged.len() >= COPY_BUF_SIZE || (all && !self.staged.is_empty()) {
            let n = self.staged.len().min(COPY_BUF_SIZE);
            let mut buf = BufferPool::global().get(COPY_BUF_SIZE);
            buf.get_mut(..n)
                .ok_or_else(|| S3Error::new(S3ErrorCode::InternalError))?
                .copy_from_slice(self.staged.get(..n).unwrap_or_default());
            self.staged.drain(..n);
            let mut w = self
                .writer
                .take()
                .ok_or_else(|| S3Error::new(S3ErrorCode::InternalError))?;
            let (w, r) = self
                .rt
                .unblock(move || {
                    let r = w.write_buf(buf, n);
                    (w, r)
                })
                .await;
            self.writer = Some(w);
            r?;
        }
        Ok(())
    }
}

/// POST Object.
pub(crate) async fn post_object<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    body: &mut BodyReader<'_, S>,
    res: &mut ResponseWriter<'_, S>,
    bucket: &str,
) -> S3Result<()> {
    require_length(body)?;
    let boundary = find_header_str(cx.headers, header::CONTENT_TYPE)
        .and_then(post::form_boundary)
        .ok_or_else(|| {
            S3Error::with_message(
                S3ErrorCode::InvalidArgument,
                "POST Object needs a multipart/form-data body with a boundary",
            )
        })?
        .to_owned();
    let mut verifier = cx
        .front
        .body_verifier(body, Checks::All, BodyLimit::object())?;

    // The fields, up to the file's content.
    let (head, form, start) = read_fields(body, &mut verifier, &boundary).await?;

    let (key, range) = check_form(cx, &form, bucket)?;
    let meta = form_meta(cx, &form, bucket)?;
    // Encryption: the `x-amz-server-side-encryption*` fields, as PutObject's headers, or the
    // bucket's default encryption.
    let sse_fields: Vec<Header<'_>> = form
        .fields
        .iter()
        .filter(|(n, _)| n.starts_with(header::X_AMZ_SSE))
        .map(|(n, v)| Header {
            name: n,
            value: v.as_bytes(),
        })
        .collect();
    let encrypt = super::sse::write_encryption(cx, &sse_fields, bucket)?;
    let encryption = encrypt.as_ref().map(crate::store::EncryptWith::info);
    let conditions = write_conditions(cx.headers)?;
    let (min, max) = range.unwrap_or((0, u64::MAX));

    // The file, streamed.
    let (b, k) = (bucket.to_owned(), key.clone());
    let writer = cx
        .unblock(move |store| store.object_writer(&b, &k, encrypt.as_ref()))
        .await?;
    let mut sink = FileSink {
        rt: cx.rt(),
        writer: Some(writer),
        staged: Vec::with_capacity(COPY_BUF_SIZE),
        size: 0,
        max,
    };
    stream_file(body, &mut verifier, &boundary, head, start, &mut sink).await?;
    if sink.size < min {
        return Err(S3Error::with_message(
            S3ErrorCode::EntityTooSmall,
            "Your proposed upload is smaller than the minimum allowed size",
        ));
    }
    sink.flush(true).await?;
    let writer = sink
        .writer
        .take()
        .ok_or_else(|| S3Error::new(S3ErrorCode::InternalError))?;
    let put = cx.unblock(move |_| writer.commit(meta, conditions)).await?;
    respond(cx, res, &form, bucket, &key, &put, encryption.as_ref()).await
}

/// The form's fields, read whole up to the file's content: what was read (decoded), the form,
/// and where the file's content starts in it.
async fn read_fields<S: Stream>(
    body: &mut BodyReader<'_, S>,
    verifier: &mut BodyVerifier,
    boundary: &str,
) -> S3Result<(Vec<u8>, Form, usize)> {
    let mut head = Vec::new();
    let (form, start) = loop {
        let Some(chunk) = body.next_chunk().await? else {
            return Err(S3Error::with_message(
                S3ErrorCode::MalformedPOSTRequest,
                "The body of your POST request ended before the file field.",
            ));
        };
        decode(verifier, chunk, |d| {
            head.extend_from_slice(d);
            Ok(())
        })?;
        if let Some(found) = post::parse_fields(&head, boundary)? {
            break found;
        }
    };
    Ok((head, form, start))
}

/// The form checked and its write authorized: its signer and policy, its key, the policy's
/// conditions (the size range they allow, if any), the write the signer's, Ferry's own names
/// and what PutObject refuses as headers refused. The key and the size range.
fn check_form<R: Runtime>(
    cx: &Cx<'_, R>,
    form: &Form,
    bucket: &str,
) -> S3Result<(String, Option<(u64, u64)>)> {
    let (signer, policy) = authenticate(cx, form)?;
    let key = form.key()?;
    if key.is_empty() {
        return Err(S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            "User key must have a length greater than 0.",
        ));
    }
    validate::object_key(&key)?;
    let range = match &policy {
        Some(p) => p.check(form, bucket, system_unix_time())?,
        None => None,
    };
    // The write is the form signer's.
    let signer_cx = Cx {
        node: cx.node,
        front: cx.front,
        headers: cx.headers,
        id: cx.id,
        caller: signer,
        origin: cx.origin,
        form_sigv2: form.is_sigv2(),
    };
    let facts = access::form_facts(&form.fields, system_unix_time());
    access::may_put(&signer_cx, bucket, &key, &facts)?;
    // Ferry's own names are the cluster's, in a form as in headers: refused, never ignored.
    if form
        .fields
        .iter()
        .any(|(n, _)| ferry_core::s3::cluster::is_internal(n))
    {
        return Err(S3Error::with_message(
            S3ErrorCode::AccessDenied,
            "x-ferry-* fields are the cluster's own: a form may not carry them",
        ));
    }
    // A field asking for what PutObject refuses as a header (DSSE-KMS, website redirects, ...)
    // is refused the same way, never ignored; the encryption PutObject takes, taken.
    if let Some(e) = form
        .fields
        .iter()
        .filter(|(n, v)| !ferry_core::s3::request::write_encryption_taken(n, v.as_bytes()))
        .find_map(|(n, v)| ferry_core::s3::request::unsupported_header(n, v.as_bytes()))
    {
        return Err(e);
    }
    Ok((key, range))
}

/// The object's metadata from the form: the fields PutObject takes as headers, the `acl`,
/// object lock and `tagging` fields.
fn form_meta<R: Runtime>(cx: &Cx<'_, R>, form: &Form, bucket: &str) -> S3Result<ObjectMeta> {
    // Metadata: the fields PutObject takes as headers.
    let mut meta_headers: Vec<Header<'_>> = form
        .fields
        .iter()
        .filter(|(n, _)| {
            META_FIELDS.contains(&n.as_str()) || n.starts_with(header::X_AMZ_META_PREFIX)
        })
        .map(|(n, v)| Header {
            name: n,
            value: v.as_bytes(),
        })
        .collect();
    if form.get(header::CONTENT_TYPE).is_none()
        && let Some(t) = &form.file_content_type
    {
        meta_headers.push(Header {
            name: header::CONTENT_TYPE,
            value: t.as_bytes(),
        });
    }
    let mut meta = object_meta(&meta_headers)?;
    // The `acl` field (a canned ACL, as `x-amz-acl` on PutObject) and the `x-amz-grant-*`
    // fields: the object's ACL, checked as PutObject's (public access block, ownership
    // controls).
    let acl_fields: Vec<Header<'_>> = form
        .fields
        .iter()
        .filter_map(|(n, v)| {
            let name = if n.eq_ignore_ascii_case("acl") {
                header::X_AMZ_ACL
            } else if n.len() > header::X_AMZ_GRANT_PREFIX.len()
                && n[..header::X_AMZ_GRANT_PREFIX.len()]
                    .eq_ignore_ascii_case(header::X_AMZ_GRANT_PREFIX)
            {
                n.as_str()
            } else {
                return None;
            };
            Some(Header {
                name,
                value: v.as_bytes(),
            })
        })
        .collect();
    meta.acl = super::acl::form_object_acl(cx, bucket, &acl_fields)?;
    // Object lock: the `x-amz-object-lock-*` fields, as PutObject's headers, or the bucket's
    // default retention.
    let lock_fields: Vec<Header<'_>> = form
        .fields
        .iter()
        .filter(|(n, _)| n.starts_with(header::X_AMZ_OBJECT_LOCK_PREFIX))
        .map(|(n, v)| Header {
            name: n,
            value: v.as_bytes(),
        })
        .collect();
    super::lock::apply(
        &mut meta,
        super::lock::for_write(cx, bucket, &lock_fields, false)?,
    );
    if let Some(doc) = form.get("tagging") {
        let doc = Tagging::parse_xml(doc.as_bytes())?;
        tagging::check(&doc.tags, TagOwner::Object)?;
        meta.tags = doc
            .tags
            .iter()
            .map(|t| (t.key.to_string(), t.value.to_string()))
            .collect();
    }
    Ok(meta)
}

/// The `file` part streamed into `sink`: what was read past the fields (`head` from `start`),
/// then the rest of the body, decoded; the body must hold the whole file.
async fn stream_file<R: Runtime, S: Stream>(
    body: &mut BodyReader<'_, S>,
    verifier: &mut BodyVerifier,
    boundary: &str,
    head: Vec<u8>,
    start: usize,
    sink: &mut FileSink<'_, R>,
) -> S3Result<()> {
    let mut scanner = FileScanner::new(boundary);
    scanner.feed(head.get(start..).unwrap_or_default(), |d| sink.take(d))?;
    drop(head);
    while let Some(chunk) = body.next_chunk().await? {
        let mut decoded = Vec::new();
        decode(verifier, chunk, |d| {
            if !scanner.is_done() {
                decoded.extend_from_slice(d);
            }
            Ok(())
        })?;
        scanner.feed(&decoded, |d| sink.take(d))?;
        sink.flush(false).await?;
    }
    verifier.finish()?;
    if !scanner.is_done() {
        return Err(S3Error::with_message(
            S3ErrorCode::IncompleteBody,
            "The body of your POST request ended inside the file field.",
        ));
    }
    Ok(())
}

/// The answer: a redirect (`success_action_redirect`), or `success_action_status` (200, 201
/// with a `PostResponse` document, 204 otherwise).
async fn respond<R: Runtime, S: Stream>(
    cx: &Cx<'_, R>,
    res: &mut ResponseWriter<'_, S>,
    form: &Form,
    bucket: &str,
    key: &str,
    put: &crate::store::PutResult,
    encryption: Option<&crate::store::EncryptionInfo>,
) -> S3Result<()> {
    let etag = put.etag.as_str();
    let host = find_header_str(cx.headers, header::HOST).unwrap_or("localhost");
    let scheme = if cx.origin.secure { "https" } else { "http" };
    let location = if cx.front.virtual_hosted {
        format!("{scheme}://{host}/{}", uri::encode_path(key))
    } else {
        format!(
            "{scheme}://{host}/{}/{}",
            uri::encode(bucket),
            uri::encode_path(key)
        )
    };
    let mut h = Headers::new();
    h.push("ETag", etag.to_owned());
    super::response_headers::push_version(&mut h, put.version_id);
    super::sse::push_encryption(&mut h, encryption);
    let redirect = form
        .get("success_action_redirect")
        .or_else(|| form.get("redirect"))
        .filter(|u| u.starts_with("http://") || u.starts_with("https://"));
    if let Some(url) = redirect {
        let sep = if url.contains('?') { '&' } else { '?' };
        let to = format!(
            "{url}{sep}bucket={}&key={}&etag={}",
            uri::encode(bucket),
            uri::encode(key),
            uri::encode(etag)
        );
        h.push("Location", to);
        return cx.front.send(res, 303, h, &[]).await;
    }
    h.push("Location", location.clone());
    match form.get("success_action_status") {
        Some("200") => cx.front.send(res, 200, h, &[]).await,
        Some("201") => {
            let xml = format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<PostResponse><Location>{}</Location><Bucket>{}</Bucket><Key>{}</Key><ETag>{}</ETag></PostResponse>",
                xml_escape(&location),
                xml_escape(bucket),
                xml_escape(key),
                xml_escape(etag)
            );
            let h = h.with("Content-Type", "application/xml");
            cx.front.send(res, 201, h, xml.as_bytes()).await
        }
        _ => cx.front.send(res, 204, h, &[]).await,
    }
}

fn xml_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c => o.push(c),
        }
    }
    o
}
