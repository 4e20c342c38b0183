//! Browser uploads (POST Object): the `multipart/form-data` form, its policy document and its
//! form signature: SigV4 (`x-amz-signature`), or SigV2 (`AWSAccessKeyId` and `signature`, the
//! base64 HMAC-SHA1 of the base64 policy) unless the server turned SigV2 off.
//!
//! The form's fields come first and are small; the `file` part comes last and is streamed:
//! [`parse_fields`] reads the leading fields out of the first bytes of the body (bounded by
//! [`MAX_FIELD_LEN`], [`MAX_FIELDS`] and [`MAX_PRE_DATA`]), and [`FileScanner`] finds the end
//! of the file's content in the rest without holding it.
//!
//! A proxy that signs for its backends with keys of their own checks a form as a node does
//! ([`authenticate`], [`PostPolicy::check`]) and signs it again: [`PostPolicy::rebind`] and
//! [`form_signature`] make the new fields, [`with_values`] puts them in the fields' place. A
//! SigV2 form becomes a SigV4 form so ([`edit_fields`]): its backends need no SigV2.

use alloc::borrow::ToOwned;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::ops::Range;

use base64::Engine as _;
use serde_json::Value;

use super::sigv2;
use super::sigv4::{Signature, derive_signing_key, sign};
use super::{S3Error, S3ErrorCode, S3Result};
use crate::s3::header;
use crate::time::DateTime;

/// The longest value of one form field before the file (bytes).
pub const MAX_FIELD_LEN: usize = 20 * 1024;
/// The most form fields before the file.
pub const MAX_FIELDS: usize = 100;
/// The most bytes of the body before the file's content (fields and part headers).
pub const MAX_PRE_DATA: usize = 256 * 1024;
/// The SigV2 form field naming the signer's access key (lower case, as [`Form`] keeps names).
pub const AWS_ACCESS_KEY_ID: &str = "awsaccesskeyid";
/// The SigV2 form field holding the signature.
pub const SIGNATURE: &str = "signature";
/// The field holding the base64 policy document.
pub const POLICY: &str = "policy";

/// The longest header block of one part.
const MAX_PART_HEADERS: usize = 8 * 1024;

fn malformed(what: &str) -> S3Error {
    S3Error::with_message(S3ErrorCode::MalformedPOSTRequest, what.to_owned())
}

fn too_large() -> S3Error {
    S3Error::new(S3ErrorCode::MaxPostPreDataLengthExceeded)
}

/// The boundary of a `multipart/form-data` content type; `None` for any other type.
pub fn form_boundary(content_type: &str) -> Option<&str> {
    let mut parts = content_type.split(';');
    let mime = parts.next()?.trim();
    if !mime.eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    for p in parts {
        let (name, value) = p.trim().split_once('=')?;
        if name.trim().eq_ignore_ascii_case("boundary") {
            let v = value.trim().trim_matches('"');
            return (!v.is_empty() && v.len() <= 70).then_some(v);
        }
    }
    None
}

/// The leading fields of a form, and the file part's header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Form {
    /// (name in lower case, value), in the order sent; the `file` part is not one.
    pub fields: Vec<(String, String)>,
    /// The file part's `filename`.
    pub filename: String,
    /// The file part's `Content-Type`, if it had one.
    pub file_content_type: Option<String>,
}

impl Form {
    /// The value of field `name` (lower case).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether the form is signed with SigV2: an `AWSAccessKeyId` or a `signature` field, and
    /// no SigV4 `x-amz-signature` (with one, the form is SigV4 and SigV2's fields are fields as
    /// any other, which the policy must cover).
    pub fn is_sigv2(&self) -> bool {
        self.get(header::X_AMZ_SIGNATURE).is_none()
            && (self.get(AWS_ACCESS_KEY_ID).is_some() || self.get(SIGNATURE).is_some())
    }

    /// The object key: the `key` field with `${filename}` replaced by the file's name.
    pub fn key(&self) -> S3Result<String> {
        let key = self.get("key").ok_or_else(|| {
            S3Error::with_message(
                S3ErrorCode::InvalidArgument,
                "Bucket POST must contain a field named 'key'.  If it is specified, please check the order of the fields.",
            )
        })?;
        Ok(key.replace("${filename}", &self.filename))
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(hay, needle)
}

/// One parameter (`name="..."`) of a `Content-Disposition` value.
fn disposition_param<'a>(value: &'a str, want: &str) -> Option<&'a str> {
    for p in value.split(';').skip(1) {
        let (n, v) = p.trim().split_once('=')?;
        if n.trim().eq_ignore_ascii_case(want) {
            let v = v.trim();
            return Some(
                v.strip_prefix('"')
                    .and_then(|v| v.strip_suffix('"'))
                    .unwrap_or(v),
            );
        }
    }
    None
}

/// Read the fields before the file out of `buf`, the start of the body: `Ok(None)` while
/// more bytes are needed; `Ok(Some((form, n)))` when the file part's headers end at `n`, where
/// the file's content starts.
pub fn parse_fields(buf: &[u8], boundary: &str) -> S3Result<Option<(Form, usize)>> {
    Ok(parse_fields_at(buf, boundary)?.map(|(form, _, n)| (form, n)))
}

/// Where the values of a form's fields lie in the bytes read: one range per field of
/// [`Form::fields`], in their order.
pub type ValueSpans = Vec<Range<usize>>;

/// [`parse_fields`], with where each field's value lies in `buf`.
pub fn parse_fields_at(buf: &[u8], boundary: &str) -> S3Result<Option<(Form, ValueSpans, usize)>> {
    let dash = format!("--{boundary}");
    let delim = format!("\r\n--{boundary}");
    // The first boundary (a preamble before it is ignored).
    let Some(first) = find(buf, dash.as_bytes()) else {
        return if buf.len() > MAX_PRE_DATA {
            Err(malformed("no boundary found"))
        } else {
            Ok(None)
        };
    };
    let mut pos = first + dash.len();
    let mut form = Form::default();
    let mut spans = Vec::new();
    loop {
        if pos > MAX_PRE_DATA {
            return Err(too_large());
        }
        let Some(after) = buf.get(pos..pos + 2) else {
            return Ok(None);
        };
        if after == b"--" {
            return Err(S3Error::new(
                S3ErrorCode::IncorrectNumberOfFilesInPostRequest,
            ));
        }
        if after != b"\r\n" {
            return Err(malformed("a boundary is not followed by CRLF"));
        }
        pos += 2;
        let rest = buf.get(pos..).unwrap_or_default();
        let Some(end) = find(rest, b"\r\n\r\n") else {
            if rest.len() > MAX_PART_HEADERS {
                return Err(malformed("part headers too long"));
            }
            return Ok(None);
        };
        let headers = core::str::from_utf8(rest.get(..end).unwrap_or_default())
            .map_err(|_| malformed("part headers are not UTF-8"))?;
        let mut name = None;
        let mut filename = None;
        let mut content_type = None;
        for line in headers.split("\r\n") {
            let Some((h, v)) = line.split_once(':') else {
                continue;
            };
            if h.trim().eq_ignore_ascii_case(header::CONTENT_DISPOSITION) {
                name = disposition_param(v, "name").map(str::to_owned);
                filename = disposition_param(v, "filename").map(str::to_owned);
            } else if h.trim().eq_ignore_ascii_case(header::CONTENT_TYPE) {
                content_type = Some(v.trim().to_owned());
            }
        }
        let name = name
            .ok_or_else(|| malformed("a part has no Content-Disposition name"))?
            .to_ascii_lowercase();
        pos += end + 4;
        if name == "file" {
            form.filename = filename.unwrap_or_default();
            form.file_content_type = content_type;
            return Ok(Some((form, spans, pos)));
        }
        let rest = buf.get(pos..).unwrap_or_default();
        let Some(len) = find(rest, delim.as_bytes()) else {
            if rest.len() > MAX_FIELD_LEN + delim.len() {
                return Err(too_large());
            }
            return Ok(None);
        };
        if len > MAX_FIELD_LEN {
            return Err(too_large());
        }
        if form.fields.len() == MAX_FIELDS {
            return Err(too_large());
        }
        let value = core::str::from_utf8(rest.get(..len).unwrap_or_default())
            .map_err(|_| malformed("a field is not UTF-8"))?;
        form.fields.push((name, value.to_owned()));
        spans.push(pos..pos + len);
        pos += len + delim.len();
    }
}

/// `head`, the start of a form's body as [`parse_fields_at`] read it into `form` and `spans`,
/// with the values of the fields `values` names (lower case) replaced; every other byte as it
/// was.
pub fn with_values(
    head: &[u8],
    form: &Form,
    spans: &[Range<usize>],
    values: &[(&str, &str)],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(head.len() + 512);
    let mut at = 0;
    for ((name, _), span) in form.fields.iter().zip(spans) {
        if let Some((_, v)) = values.iter().find(|(n, _)| n == name) {
            out.extend_from_slice(head.get(at..span.start).unwrap_or_default());
            out.extend_from_slice(v.as_bytes());
            at = span.end;
        }
    }
    out.extend_from_slice(head.get(at..).unwrap_or_default());
    out
}

/// `head`, the start of a form's body as [`parse_fields_at`] read it into `form` and `spans`
/// (its parts delimited by `boundary`), with the values of the fields `set` names replaced,
/// the fields `remove` names taken out and the fields of `add` put after the last field
/// (before the file part); every other byte as it was. Names are lower case.
pub fn edit_fields(
    head: &[u8],
    form: &Form,
    spans: &[Range<usize>],
    boundary: &str,
    set: &[(&str, &str)],
    remove: &[&str],
    add: &[(&str, &str)],
) -> Vec<u8> {
    let dash = format!("--{boundary}");
    let first = find(head, dash.as_bytes()).unwrap_or_default();
    let mut out = Vec::with_capacity(head.len() + 1024);
    let mut at = 0;
    let mut prev_end = None;
    for ((name, _), span) in form.fields.iter().zip(spans) {
        if remove.contains(&name.as_str()) {
            // The part from the delimiter before it (the first: from its boundary, with the
            // CRLF after its value) to its value's end.
            let (from, to) = match prev_end {
                Some(end) => (end, span.end),
                None => (first, span.end + 2),
            };
            out.extend_from_slice(head.get(at..from).unwrap_or_default());
            at = to.min(head.len()).max(from);
        } else {
            if let Some((_, v)) = set.iter().find(|(n, _)| n == name) {
                out.extend_from_slice(head.get(at..span.start).unwrap_or_default());
                out.extend_from_slice(v.as_bytes());
                at = span.end;
            }
            prev_end = Some(span.end);
        }
    }
    // The added fields after the last one kept (the first part, if none is).
    let (insert, lead) = match prev_end {
        Some(end) => (end, true),
        None => (at.max(first), false),
    };
    out.extend_from_slice(head.get(at..insert.max(at)).unwrap_or_default());
    for (i, (name, value)) in add.iter().enumerate() {
        if lead || i > 0 {
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(dash.as_bytes());
        out.extend_from_slice(b"\r\nContent-Disposition: form-data; name=\"");
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b"\"\r\n\r\n");
        out.extend_from_slice(value.as_bytes());
    }
    if !lead && !add.is_empty() {
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(head.get(insert.max(at)..).unwrap_or_default());
    out
}

/// Finds where the file's content ends (`\r\n--boundary`) in the bytes after its headers,
/// holding back only what could be the start of the delimiter.
#[derive(Debug)]
pub struct FileScanner {
    delim: Vec<u8>,
    held: Vec<u8>,
    done: bool,
}

impl FileScanner {
    /// A scanner for the form with `boundary`.
    pub fn new(boundary: &str) -> Self {
        Self {
            delim: format!("\r\n--{boundary}").into_bytes(),
            held: Vec::new(),
            done: false,
        }
    }

    /// Whether the delimiter was found (what follows is ignored).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Take `input`; call `out` with the file content that is certain. Nothing more is given
    /// once the delimiter is found.
    pub fn feed(
        &mut self,
        input: &[u8],
        mut out: impl FnMut(&[u8]) -> S3Result<()>,
    ) -> S3Result<()> {
        if self.done {
            return Ok(());
        }
        self.held.extend_from_slice(input);
        if let Some(i) = find(&self.held, &self.delim) {
            out(self.held.get(..i).unwrap_or_default())?;
            self.held.clear();
            self.done = true;
            return Ok(());
        }
        let keep = self.delim.len() - 1;
        if self.held.len() > keep {
            let n = self.held.len() - keep;
            out(self.held.get(..n).unwrap_or_default())?;
            self.held.drain(..n);
        }
        Ok(())
    }
}

/// One condition of a policy document.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Condition {
    /// Field (lower case, without `$`) equals the value; `bucket` is the bucket.
    Eq(String, String),
    /// Field starts with the prefix (empty: anything).
    StartsWith(String, String),
    /// The file's length, inclusive.
    Range(u64, u64),
}

/// A POST policy document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostPolicy {
    expiration: i64,
    conditions: Vec<(Condition, String)>,
}

fn invalid_policy(what: &str) -> S3Error {
    S3Error::with_message(
        S3ErrorCode::InvalidPolicyDocument,
        format!("Invalid Policy: {what}"),
    )
}

fn denied(what: String) -> S3Error {
    S3Error::with_message(
        S3ErrorCode::AccessDenied,
        format!("Invalid according to Policy: {what}"),
    )
}

fn field_name(v: &str) -> String {
    v.strip_prefix('$').unwrap_or(v).to_ascii_lowercase()
}

fn number(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

impl PostPolicy {
    /// Parse the base64 `policy` field.
    pub fn parse(b64: &str) -> S3Result<Self> {
        let json = base64::engine::general_purpose::STANDARD
            .decode(b64.trim())
            .map_err(|_| invalid_policy("Invalid Base64 encoding"))?;
        let doc: Value =
            serde_json::from_slice(&json).map_err(|_| invalid_policy("Invalid JSON."))?;
        let exp = doc
            .get("expiration")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid_policy("Policy missing expiration."))?;
        let expiration = DateTime::parse_iso8601(exp)
            .ok_or_else(|| invalid_policy("Invalid 'expiration' value."))?
            .to_unix();
        let list = doc
            .get("conditions")
            .and_then(Value::as_array)
            .ok_or_else(|| invalid_policy("Policy missing conditions."))?;
        let mut conditions = Vec::with_capacity(list.len());
        for c in list {
            let text = c.to_string();
            match c {
                Value::Object(m) => {
                    for (k, v) in m {
                        let v = v
                            .as_str()
                            .ok_or_else(|| invalid_policy("Invalid simple condition value."))?;
                        conditions.push((Condition::Eq(field_name(k), v.to_owned()), text.clone()));
                    }
                }
                Value::Array(a) => {
                    let op = a.first().and_then(Value::as_str).unwrap_or_default();
                    let cond = match (op.to_ascii_lowercase().as_str(), a.len()) {
                        ("eq", 3) | ("starts-with", 3) => {
                            let (Some(f), Some(v)) = (a[1].as_str(), a[2].as_str()) else {
                                return Err(invalid_policy("Invalid condition."));
                            };
                            if op.eq_ignore_ascii_case("eq") {
                                Condition::Eq(field_name(f), v.to_owned())
                            } else {
                                Condition::StartsWith(field_name(f), v.to_owned())
                            }
                        }
                        ("content-length-range", 3) => {
                            let (Some(min), Some(max)) = (number(&a[1]), number(&a[2])) else {
                                return Err(invalid_policy("Invalid content-length-range."));
                            };
                            Condition::Range(min, max)
                        }
                        _ => return Err(invalid_policy(&format!("Invalid condition: {text}"))),
                    };
                    conditions.push((cond, text));
                }
                _ => return Err(invalid_policy("Invalid condition.")),
            }
        }
        Ok(Self {
            expiration,
            conditions,
        })
    }

    /// Check `form` for `bucket` at `now`: every condition holds and every field is covered.
    /// Returns the `content-length-range` to enforce on the file, if any.
    pub fn check(&self, form: &Form, bucket: &str, now: i64) -> S3Result<Option<(u64, u64)>> {
        if now >= self.expiration {
            return Err(denied("Policy expired.".to_owned()));
        }
        let value = |f: &str| -> Option<&str> {
            if f == "bucket" {
                Some(bucket)
            } else {
                form.get(f)
            }
        };
        let mut range = None;
        for (c, text) in &self.conditions {
            let ok = match c {
                Condition::Eq(f, v) => value(f) == Some(v.as_str()),
                Condition::StartsWith(f, p) => value(f).unwrap_or_default().starts_with(p.as_str()),
                Condition::Range(min, max) => {
                    range = Some((*min, *max));
                    true
                }
            };
            if !ok {
                return Err(denied(format!("Policy Condition failed: {text}")));
            }
        }
        let covered = |name: &str| {
            self.conditions.iter().any(|(c, _)| match c {
                Condition::Eq(f, _) | Condition::StartsWith(f, _) => f == name,
                Condition::Range(..) => false,
            })
        };
        // The signature's own fields need no condition: SigV4's `x-amz-signature`, SigV2's
        // `AWSAccessKeyId` and `signature` (AWS's "HTML forms (AWS signature version 2)").
        let v2 = form.is_sigv2();
        let extra: Vec<&str> = form
            .fields
            .iter()
            .map(|(n, _)| n.as_str())
            .filter(|n| {
                let exempt = matches!(*n, header::X_AMZ_SIGNATURE | "file" | POLICY)
                    || (v2 && matches!(*n, AWS_ACCESS_KEY_ID | SIGNATURE))
                    || n.starts_with("x-ignore-");
                !exempt && !covered(n)
            })
            .collect();
        if !extra.is_empty() {
            return Err(denied(format!("Extra input fields: {}", extra.join(", "))));
        }
        Ok(range)
    }

    /// The base64 policy `b64` for other values of the fields `values` names (lower case,
    /// without `$`: a new signer's `x-amz-credential` and `x-amz-date`): each condition on one
    /// of them (`{"field": ..}`, `["eq", "$field", ..]`, `["starts-with", "$field", ..]`) now
    /// names its new value, and one `{"field": value}` is added for a field no condition names;
    /// conditions on the fields `remove` names are taken out (a SigV2 form's `AWSAccessKeyId`
    /// and `signature` once it is a SigV4 form); the rest of the document is kept.
    pub fn rebind(b64: &str, values: &[(&str, &str)], remove: &[&str]) -> S3Result<String> {
        let engine = base64::engine::general_purpose::STANDARD;
        let json = engine
            .decode(b64.trim())
            .map_err(|_| invalid_policy("Invalid Base64 encoding"))?;
        let mut doc: Value =
            serde_json::from_slice(&json).map_err(|_| invalid_policy("Invalid JSON."))?;
        let new_value = |field: &str| {
            let name = field_name(field);
            values
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| Value::String((*v).to_owned()))
        };
        let conditions = doc
            .get_mut("conditions")
            .and_then(Value::as_array_mut)
            .ok_or_else(|| invalid_policy("Policy missing conditions."))?;
        let removed = |field: &str| remove.contains(&field_name(field).as_str());
        conditions.retain_mut(|c| match c {
            Value::Object(m) => {
                m.retain(|k, _| !removed(k));
                !m.is_empty()
            }
            Value::Array(a) if a.len() == 3 => {
                let op = a[0].as_str().unwrap_or_default();
                let named = op.eq_ignore_ascii_case("eq") || op.eq_ignore_ascii_case("starts-with");
                !(named && a[1].as_str().is_some_and(removed))
            }
            _ => true,
        });
        let mut seen: Vec<String> = Vec::new();
        for c in conditions.iter_mut() {
            match c {
                Value::Object(m) => {
                    for (k, v) in m.iter_mut() {
                        if let Some(new) = new_value(k) {
                            *v = new;
                            seen.push(field_name(k));
                        }
                    }
                }
                Value::Array(a) if a.len() == 3 => {
                    let op = a[0].as_str().unwrap_or_default();
                    let field = (op.eq_ignore_ascii_case("eq")
                        || op.eq_ignore_ascii_case("starts-with"))
                    .then(|| a[1].as_str().map(field_name))
                    .flatten();
                    if let Some(f) = field
                        && let Some(new) = new_value(&f)
                    {
                        a[2] = new;
                        seen.push(f);
                    }
                }
                _ => {}
            }
        }
        for (name, value) in values {
            if !seen.iter().any(|s| s == name) {
                let mut m = serde_json::Map::new();
                m.insert((*name).to_owned(), Value::String((*value).to_owned()));
                conditions.push(Value::Object(m));
            }
        }
        let json = serde_json::to_vec(&doc).map_err(|_| invalid_policy("Invalid JSON."))?;
        Ok(engine.encode(json))
    }
}

/// Who signed a form, by [`authenticate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormSigner<'f> {
    /// Its access key; `None`: an anonymous form (no signature).
    pub access_key: Option<&'f str>,
    /// Its policy, if it has one.
    pub policy: Option<PostPolicy>,
}

fn invalid(what: &str) -> S3Error {
    S3Error::with_message(S3ErrorCode::InvalidArgument, what.to_owned())
}

/// Check the authentication fields of `form` for a server in `region`: a SigV4 form signature,
/// or a SigV2 one if `sigv2` (else `403 AccessDenied`, as a SigV2 request on a server with
/// `--no-sigv2`), checked against the secret `secret_of` gives for its access key (`None`:
/// `403 InvalidAccessKeyId`). A form without a signature is anonymous. (Its policy's
/// conditions are [`PostPolicy::check`]'s.)
pub fn authenticate<'f, S: AsRef<str>>(
    form: &'f Form,
    region: &str,
    sigv2: bool,
    secret_of: impl FnOnce(&str) -> Option<S>,
) -> S3Result<FormSigner<'f>> {
    let policy_text = form.get(POLICY).filter(|p| !p.is_empty());
    if form.is_sigv2() {
        if !sigv2 {
            return Err(S3Error::with_message(
                S3ErrorCode::AccessDenied,
                "Signature Version 2 is turned off on this server (--no-sigv2); sign the form \
                 with AWS4-HMAC-SHA256",
            ));
        }
        return authenticate_v2(form, policy_text, secret_of);
    }
    let policy = policy_text.map(PostPolicy::parse).transpose()?;
    let Some(signature) = form.get(header::X_AMZ_SIGNATURE) else {
        if form.get(header::X_AMZ_CREDENTIAL).is_some() {
            return Err(invalid(
                "Bucket POST must contain a field named 'x-amz-signature'.",
            ));
        }
        return Ok(FormSigner {
            access_key: None,
            policy,
        });
    };
    let need = |name: &'static str, what: &'static str| form.get(name).ok_or_else(|| invalid(what));
    let policy_text = policy_text.ok_or_else(|| {
        invalid("Bucket POST must contain a field named 'policy'.  If it is specified, please check the order of the fields.")
    })?;
    let algorithm = need(
        header::X_AMZ_ALGORITHM,
        "Bucket POST must contain a field named 'x-amz-algorithm'.",
    )?;
    if algorithm != "AWS4-HMAC-SHA256" {
        return Err(invalid(
            "Unsupported x-amz-algorithm: use AWS4-HMAC-SHA256.",
        ));
    }
    need(
        header::X_AMZ_DATE,
        "Bucket POST must contain a field named 'x-amz-date'.",
    )?;
    let credential = need(
        header::X_AMZ_CREDENTIAL,
        "Bucket POST must contain a field named 'x-amz-credential'.",
    )?;
    let (access_key, date, cred_region, service) = parse_credential(credential)
        .ok_or_else(|| invalid("Error parsing the X-Amz-Credential field."))?;
    if service != "s3" || cred_region != region {
        return Err(S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            format!(
                "Error parsing the X-Amz-Credential field; the region '{cred_region}' is wrong; expecting '{region}'"
            ),
        ));
    }
    let secret =
        secret_of(access_key).ok_or_else(|| S3Error::new(S3ErrorCode::InvalidAccessKeyId))?;
    if !form_signature_matches(
        secret.as_ref(),
        date,
        region,
        service,
        policy_text,
        signature,
    ) {
        return Err(S3Error::new(S3ErrorCode::SignatureDoesNotMatch));
    }
    Ok(FormSigner {
        access_key: Some(access_key),
        policy,
    })
}

/// A SigV2 form: `AWSAccessKeyId`, `signature` (base64 HMAC-SHA1 of the base64 `policy` field
/// as sent, by the key's secret) and `policy`, all three needed.
fn authenticate_v2<'f, S: AsRef<str>>(
    form: &'f Form,
    policy_text: Option<&str>,
    secret_of: impl FnOnce(&str) -> Option<S>,
) -> S3Result<FormSigner<'f>> {
    let access_key = form.get(AWS_ACCESS_KEY_ID).ok_or_else(|| {
        invalid("Bucket POST must contain a field named 'AWSAccessKeyId'.  If it is specified, please check the order of the fields.")
    })?;
    let signature = form.get(SIGNATURE).ok_or_else(|| {
        invalid("Bucket POST must contain a field named 'Signature'.  If it is specified, please check the order of the fields.")
    })?;
    let policy_text = policy_text.ok_or_else(|| {
        invalid("Bucket POST must contain a field named 'policy'.  If it is specified, please check the order of the fields.")
    })?;
    let policy = PostPolicy::parse(policy_text)?;
    let secret =
        secret_of(access_key).ok_or_else(|| S3Error::new(S3ErrorCode::InvalidAccessKeyId))?;
    if !form_signature_v2_matches(secret.as_ref(), policy_text, signature) {
        return Err(S3Error::new(S3ErrorCode::SignatureDoesNotMatch));
    }
    Ok(FormSigner {
        access_key: Some(access_key),
        policy: Some(policy),
    })
}

/// Whether `signature` is the SigV2 form signature of `policy` (the base64 field as sent) by
/// `secret`: `Base64(HMAC-SHA1(secret, policy))`, compared in constant time.
pub fn form_signature_v2_matches(secret: &str, policy: &str, signature: &str) -> bool {
    sigv2::same_signature(
        signature.trim().as_bytes(),
        &sigv2::signature(secret, policy),
    )
}

/// The parts of an `x-amz-credential` field: (access key id, date, region, service).
pub fn parse_credential(s: &str) -> Option<(&str, &str, &str, &str)> {
    let mut it = s.rsplitn(5, '/');
    let term = it.next()?;
    let service = it.next()?;
    let region = it.next()?;
    let date = it.next()?;
    let key = it.next()?;
    let ok = term == "aws4_request"
        && !key.is_empty()
        && date.len() == 8
        && date.bytes().all(|b| b.is_ascii_digit());
    ok.then_some((key, date, region, service))
}

/// Whether `signature` (hex) is the SigV4 form signature of `policy` (the base64 field as
/// sent) by `secret` for the credential scope (date, region, service); compared in constant
/// time.
pub fn form_signature_matches(
    secret: &str,
    date: &str,
    region: &str,
    service: &str,
    policy: &str,
    signature: &str,
) -> bool {
    let computed = form_signature(secret, date, region, service, policy);
    Signature::from_hex(signature.trim()).is_some_and(|s| s == computed)
}

/// The SigV4 form signature of `policy` (the base64 field) by `secret` for the credential
/// scope (date, region, service).
pub fn form_signature(
    secret: &str,
    date: &str,
    region: &str,
    service: &str,
    policy: &str,
) -> Signature {
    let key = derive_signing_key(secret, date, region, service);
    sign(&key, policy.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn fields_then_file() {
        let body = b"--xx\r\nContent-Disposition: form-data; name=\"Key\"\r\n\r\na/${filename}\r\n--xx\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f.txt\"\r\nContent-Type: text/plain\r\n\r\nhello\r\n--xx--\r\n";
        for cut in 0..body.len() {
            if let Some((_, n)) = parse_fields(&body[..cut], "xx").unwrap() {
                assert!(n <= cut);
            }
        }
        let (form, n) = parse_fields(body, "xx").unwrap().unwrap();
        assert_eq!(form.key().unwrap(), "a/f.txt");
        assert_eq!(form.file_content_type.as_deref(), Some("text/plain"));
        let mut out = Vec::new();
        let mut s = FileScanner::new("xx");
        for b in &body[n..] {
            s.feed(&[*b], |d| {
                out.extend_from_slice(d);
                Ok(())
            })
            .unwrap();
        }
        assert!(s.is_done());
        assert_eq!(out, b"hello");
    }

    #[test]
    fn no_file() {
        let body = b"--xx\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nk\r\n--xx--\r\n";
        let e = parse_fields(body, "xx").unwrap_err();
        assert_eq!(e.code, S3ErrorCode::IncorrectNumberOfFilesInPostRequest);
    }

    #[test]
    fn limits() {
        let field = |name: &str, len: usize| {
            let mut f = format!("--xx\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n");
            f.push_str(&"a".repeat(len));
            f.push_str("\r\n");
            f
        };
        let big = field("key", MAX_FIELD_LEN + 1) + "--xx";
        let e = parse_fields(big.as_bytes(), "xx").unwrap_err();
        assert_eq!(e.code, S3ErrorCode::MaxPostPreDataLengthExceeded);
        let mut many: String = (0..=MAX_FIELDS)
            .map(|i| field(&format!("x-ignore-{i}"), 1))
            .collect();
        many.push_str("--xx");
        let e = parse_fields(many.as_bytes(), "xx").unwrap_err();
        assert_eq!(e.code, S3ErrorCode::MaxPostPreDataLengthExceeded);
        assert_eq!(
            form_boundary("multipart/form-data; boundary=\"ab\""),
            Some("ab")
        );
        assert_eq!(form_boundary("multipart/form-data"), None);
        assert_eq!(form_boundary("text/plain; boundary=ab"), None);
    }

    #[test]
    fn policy_conditions() {
        let doc = r#"{"expiration":"2030-01-01T00:00:00Z","conditions":[{"bucket":"b"},["starts-with","$key","u/"],["content-length-range",1,10]]}"#;
        let p = PostPolicy::parse(&base64::engine::general_purpose::STANDARD.encode(doc)).unwrap();
        let mut form = Form {
            fields: vec![("key".into(), "u/x".into())],
            ..Form::default()
        };
        assert_eq!(p.check(&form, "b", 0).unwrap(), Some((1, 10)));
        assert_eq!(
            p.check(&form, "c", 0).unwrap_err().code,
            S3ErrorCode::AccessDenied
        );
        let e = p.check(&form, "b", 1_900_000_000).unwrap_err();
        assert_eq!(e.message, "Invalid according to Policy: Policy expired.");
        form.fields.push(("x-amz-meta-a".into(), "1".into()));
        let e = p.check(&form, "b", 0).unwrap_err();
        assert_eq!(
            e.message,
            "Invalid according to Policy: Extra input fields: x-amz-meta-a"
        );
    }

    #[test]
    fn signed_again() {
        let body = b"--xx\r\nContent-Disposition: form-data; name=\"X-Amz-Credential\"\r\n\r\nAK/20260101/r/s3/aws4_request\r\n--xx\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nk\r\n--xx\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n\r\ndata";
        let (form, spans, n) = parse_fields_at(body, "xx").unwrap().unwrap();
        assert_eq!(spans.len(), 2);
        assert_eq!(&body[spans[1].clone()], b"k");
        let out = with_values(
            body,
            &form,
            &spans,
            &[("x-amz-credential", "OTHER/20260102/r2/s3/aws4_request")],
        );
        let (again, _, m) = parse_fields_at(&out, "xx").unwrap().unwrap();
        assert_eq!(
            again.get("x-amz-credential"),
            Some("OTHER/20260102/r2/s3/aws4_request")
        );
        assert_eq!(again.get("key"), Some("k"));
        // The rest byte for byte: the field's name as sent, the file's start.
        assert!(out.windows(16).any(|w| w == b"X-Amz-Credential"));
        assert_eq!(&out[m..], &body[n..]);

        let doc = r#"{"expiration":"2030-01-01T00:00:00Z","conditions":[{"bucket":"b"},{"X-Amz-Credential":"AK/20260101/r/s3/aws4_request"},["starts-with","$x-amz-date","2026"],["eq","$key","k"],["content-length-range",1,10]]}"#;
        let b64 = base64::engine::general_purpose::STANDARD.encode(doc);
        let cred = ("x-amz-credential", "OTHER/20260102/r2/s3/aws4_request");
        let date = ("x-amz-date", "20260102T000000Z");
        let rebound = PostPolicy::rebind(&b64, &[cred, date], &[]).unwrap();
        let p = PostPolicy::parse(&rebound).unwrap();
        let form = Form {
            fields: vec![
                ("x-amz-credential".into(), cred.1.into()),
                ("x-amz-date".into(), date.1.into()),
                ("key".into(), "k".into()),
            ],
            ..Form::default()
        };
        assert_eq!(p.check(&form, "b", 0).unwrap(), Some((1, 10)));
        let mut old = form.clone();
        old.fields[0].1 = "AK/20260101/r/s3/aws4_request".into();
        assert!(p.check(&old, "b", 0).is_err());
        assert!(PostPolicy::rebind("not base64!", &[cred], &[]).is_err());
    }

    #[test]
    fn authenticated() {
        let doc = r#"{"expiration":"2030-01-01T00:00:00Z","conditions":[]}"#;
        let policy = base64::engine::general_purpose::STANDARD.encode(doc);
        let sig = form_signature("secret", "20260101", "r", "s3", &policy).to_hex();
        let mut form = Form {
            fields: vec![
                ("policy".into(), policy.clone()),
                ("x-amz-algorithm".into(), "AWS4-HMAC-SHA256".into()),
                (
                    "x-amz-credential".into(),
                    "AK/20260101/r/s3/aws4_request".into(),
                ),
                ("x-amz-date".into(), "20260101T000000Z".into()),
                ("x-amz-signature".into(), sig.as_str().into()),
            ],
            ..Form::default()
        };
        let secret = |k: &str| (k == "AK").then_some("secret");
        let who = authenticate(&form, "r", true, secret).unwrap();
        assert_eq!(who.access_key, Some("AK"));
        assert!(who.policy.is_some());
        let e = authenticate(&form, "other", true, secret).unwrap_err();
        assert_eq!(e.code, S3ErrorCode::InvalidArgument);
        form.fields[4].1 = "0".repeat(64);
        let e = authenticate(&form, "r", true, secret).unwrap_err();
        assert_eq!(e.code, S3ErrorCode::SignatureDoesNotMatch);
        form.fields.truncate(1);
        assert_eq!(
            authenticate(&form, "r", true, secret).unwrap().access_key,
            None
        );
        form.fields.push(("signature".into(), "v2".into()));
        let e = authenticate(&form, "r", true, secret).unwrap_err();
        assert_eq!(e.code, S3ErrorCode::InvalidArgument);
    }

    #[test]
    fn authenticated_v2() {
        let doc = r#"{"expiration":"2030-01-01T00:00:00Z","conditions":[{"bucket":"b"}]}"#;
        let policy = base64::engine::general_purpose::STANDARD.encode(doc);
        // The signature of AWS's documented SigV2 form example, computed independently.
        let sig = sigv2::signature("secret", &policy);
        let mut form = Form {
            fields: vec![
                ("awsaccesskeyid".into(), "AK".into()),
                ("policy".into(), policy.clone()),
                ("signature".into(), sig.clone()),
            ],
            ..Form::default()
        };
        assert!(form.is_sigv2());
        let secret = |k: &str| (k == "AK").then_some("secret");
        let who = authenticate(&form, "r", true, secret).unwrap();
        assert_eq!(who.access_key, Some("AK"));
        // The signature's own fields need no condition.
        assert_eq!(who.policy.unwrap().check(&form, "b", 0).unwrap(), None);
        // Turned off: refused as any SigV2 request is.
        let e = authenticate(&form, "r", false, secret).unwrap_err();
        assert_eq!(e.code, S3ErrorCode::AccessDenied);
        // Another key, another secret, a changed policy: refused.
        form.fields[0].1 = "OTHER".into();
        let e = authenticate(&form, "r", true, secret).unwrap_err();
        assert_eq!(e.code, S3ErrorCode::InvalidAccessKeyId);
        form.fields[0].1 = "AK".into();
        let e = authenticate(&form, "r", true, |_: &str| Some("wrong")).unwrap_err();
        assert_eq!(e.code, S3ErrorCode::SignatureDoesNotMatch);
        let other = r#"{"expiration":"2030-01-01T00:00:00Z","conditions":[{"bucket":"c"}]}"#;
        form.fields[1].1 = base64::engine::general_purpose::STANDARD.encode(other);
        let e = authenticate(&form, "r", true, secret).unwrap_err();
        assert_eq!(e.code, S3ErrorCode::SignatureDoesNotMatch);
        // Each of the three is needed.
        for i in 0..3 {
            let mut f = form.clone();
            f.fields.remove(i);
            let e = authenticate(&f, "r", true, secret).unwrap_err();
            assert_eq!(e.code, S3ErrorCode::InvalidArgument, "without {i}");
        }
        // Beside an x-amz-signature it is a SigV4 form.
        form.fields.push(("x-amz-signature".into(), "0".repeat(64)));
        assert!(!form.is_sigv2());
    }

    #[test]
    fn v2_form_made_v4() {
        let body = b"--xx\r\nContent-Disposition: form-data; name=\"AWSAccessKeyId\"\r\n\r\nAK\r\n--xx\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nk\r\n--xx\r\nContent-Disposition: form-data; name=\"policy\"\r\n\r\nP\r\n--xx\r\nContent-Disposition: form-data; name=\"signature\"\r\n\r\nS\r\n--xx\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n\r\ndata";
        let (form, spans, n) = parse_fields_at(body, "xx").unwrap().unwrap();
        let out = edit_fields(
            body,
            &form,
            &spans,
            "xx",
            &[("policy", "Q")],
            &[AWS_ACCESS_KEY_ID, SIGNATURE],
            &[
                ("x-amz-algorithm", "AWS4-HMAC-SHA256"),
                ("x-amz-signature", "Z"),
            ],
        );
        let (again, _, m) = parse_fields_at(&out, "xx").unwrap().unwrap();
        let names: Vec<&str> = again.fields.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["key", "policy", "x-amz-algorithm", "x-amz-signature"]
        );
        assert_eq!(again.get("policy"), Some("Q"));
        assert_eq!(again.get("x-amz-signature"), Some("Z"));
        assert_eq!(&out[m..], &body[n..]);
        // Only fields removed, or the last one removed: still a well-formed form.
        let out = edit_fields(body, &form, &spans, "xx", &[], &[SIGNATURE], &[]);
        let (again, _, _) = parse_fields_at(&out, "xx").unwrap().unwrap();
        assert_eq!(again.fields.len(), 3);
        assert_eq!(again.get("policy"), Some("P"));
        let all = ["awsaccesskeyid", "key", "policy", "signature"];
        let out = edit_fields(body, &form, &spans, "xx", &[], &all, &[("a", "1")]);
        let (again, _, m) = parse_fields_at(&out, "xx").unwrap().unwrap();
        assert_eq!(again.fields, vec![("a".to_string(), "1".to_string())]);
        assert_eq!(&out[m..], &body[n..]);

        let doc = r#"{"expiration":"2030-01-01T00:00:00Z","conditions":[{"bucket":"b"},{"AWSAccessKeyId":"AK"},["eq","$signature","S"],["starts-with","$key",""]]}"#;
        let b64 = base64::engine::general_purpose::STANDARD.encode(doc);
        let cred = ("x-amz-credential", "AK/20260102/r/s3/aws4_request");
        let rebound = PostPolicy::rebind(&b64, &[cred], &[AWS_ACCESS_KEY_ID, SIGNATURE]).unwrap();
        let json = base64::engine::general_purpose::STANDARD
            .decode(rebound)
            .unwrap();
        let v: Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(
            v["conditions"].to_string(),
            r#"[{"bucket":"b"},["starts-with","$key",""],{"x-amz-credential":"AK/20260102/r/s3/aws4_request"}]"#
        );
    }

    #[test]
    fn signature() {
        // A form signed with the derived key verifies; any change does not.
        let key = derive_signing_key("secret", "20260101", "us-east-1", "s3");
        let sig = sign(&key, b"cG9saWN5").to_hex();
        let sig = sig.as_str();
        assert!(form_signature_matches(
            "secret",
            "20260101",
            "us-east-1",
            "s3",
            "cG9saWN5",
            sig
        ));
        assert!(!form_signature_matches(
            "secret",
            "20260102",
            "us-east-1",
            "s3",
            "cG9saWN5",
            sig
        ));
        assert!(!form_signature_matches(
            "other",
            "20260101",
            "us-east-1",
            "s3",
            "cG9saWN5",
            sig
        ));
        assert_eq!(
            parse_credential("AK/20260101/us-east-1/s3/aws4_request"),
            Some(("AK", "20260101", "us-east-1", "s3"))
        );
    }
}
