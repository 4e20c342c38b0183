//! The signatures a backend received, checked by something that is not Ferry: each request a
//! [`Relay`](super::relay::Relay) recorded is signed again with `aws-sigv4` (AWS's SigV4 signer
//! of the AWS SDK for Rust) from its method, target, signed headers, `x-amz-date` and
//! `x-amz-content-sha256`, with the backend's secret, and the `Authorization` header must be
//! the one the proxy sent: same credential, same signed headers, same signature. A payload
//! hash must be the body's SHA-256; aws-chunked bodies signed chunk by chunk
//! (`STREAMING-AWS4-HMAC-SHA256-PAYLOAD*`) have each chunk's signature, and the trailer's,
//! computed with aws-sigv4's key derivation and HMAC from the strings to sign AWS documents.

use std::time::{Duration, UNIX_EPOCH};

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{
    PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings,
    UriPathNormalizationMode, sign,
};
use aws_sigv4::sign::v4;
use sha2::{Digest, Sha256};

use super::relay::Recorded;

/// What [`check`] found: how many requests carried a signature that aws-sigv4 reproduced, and
/// the requests without any, which the caller judges.
#[derive(Debug, Default)]
pub struct Checked {
    /// Requests whose signature was reproduced (browser uploads' form signatures included).
    pub signed: usize,
    /// Of those, browser uploads (POST Object) whose form signature was reproduced.
    pub forms: usize,
    /// Of those, aws-chunked bodies whose chunk signatures were reproduced.
    pub chunk_signed: usize,
    /// The payload hashes seen (`UNSIGNED-PAYLOAD`, `STREAMING-…`, or `sha256` for a hex hash).
    pub payloads: std::collections::BTreeSet<String>,
    /// Requests without a signature.
    pub unsigned: Vec<Recorded>,
}

fn field<'a>(auth: &'a str, name: &str) -> &'a str {
    let start = auth
        .find(name)
        .unwrap_or_else(|| panic!("no {name} in {auth}"))
        + name.len();
    auth[start..].split(',').next().unwrap_or_default().trim()
}

/// Whether `r` is a browser upload without a signature, as an anonymous client sends it: a
/// POST of a `multipart/form-data` form with a key and no signature fields.
pub fn anonymous_form(r: &Recorded) -> bool {
    let Some(fields) = form_fields(r).filter(|_| r.method == "POST") else {
        return false;
    };
    let has = |n: &str| fields.iter().any(|(k, _)| k == n);
    has("key") && !has("x-amz-signature") && !has("signature") && !has("policy")
}

/// The fields of a `multipart/form-data` body: name and value.
fn form_fields(r: &Recorded) -> Option<Vec<(String, String)>> {
    let ct = r
        .header("content-type")
        .filter(|t| t.starts_with("multipart/form-data"))?;
    let boundary = ct.split("boundary=").nth(1)?.trim_matches('"');
    let body = String::from_utf8_lossy(r.body.as_deref()?).into_owned();
    let sep = format!("--{boundary}");
    let mut out = Vec::new();
    for part in body.split(sep.as_str()).skip(1) {
        let Some((head, value)) = part.split_once("\r\n\r\n") else {
            continue;
        };
        let Some(name) = head
            .split("name=\"")
            .nth(1)
            .and_then(|n| n.split('"').next())
        else {
            continue;
        };
        let value = value.strip_suffix("\r\n").unwrap_or(value);
        out.push((name.to_lowercase(), value.to_owned()));
    }
    Some(out)
}

/// A browser upload (POST Object) signed with SigV4 in its form: its signature must be
/// aws-sigv4's HMAC of the form's policy with the signing key of its credential, one of
/// `keys`. `false` if `r` is no such form.
fn check_form(what: &str, r: &Recorded, keys: &[(&str, &str)], region: &str) -> bool {
    let Some(fields) = form_fields(r).filter(|_| r.method == "POST") else {
        return false;
    };
    let get = |n: &str| fields.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
    let Some(signature) = get("x-amz-signature") else {
        return false;
    };
    assert_eq!(get("x-amz-algorithm"), Some("AWS4-HMAC-SHA256"), "{what}");
    let credential = get("x-amz-credential").expect("x-amz-credential");
    let policy = get("policy").expect("policy");
    let date = get("x-amz-date").expect("x-amz-date");
    let access_key = credential.split('/').next().unwrap_or_default();
    let (_, secret) = keys
        .iter()
        .find(|(a, _)| *a == access_key)
        .unwrap_or_else(|| panic!("{what}: form signed with {access_key}, not a backend's key"));
    let time = ferry_core::time::DateTime::parse_amz(date).expect("an x-amz-date");
    let time = UNIX_EPOCH + Duration::from_secs(u64::try_from(time.to_unix()).unwrap());
    assert_eq!(
        credential.split('/').nth(2),
        Some(region),
        "{what}: {credential}"
    );
    let key = v4::generate_signing_key(secret, time, region, "s3");
    let want = v4::calculate_signature(key, policy.as_bytes());
    assert_eq!(
        signature, want,
        "{what}: the form's signature is not aws-sigv4's"
    );
    true
}

fn hex_sha256(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Check every request in `recorded`, each signed with one of `keys` (access key, secret)
/// for `region`; panics on the first signature aws-sigv4 does not reproduce.
pub fn check(recorded: &[Recorded], keys: &[(&str, &str)], region: &str) -> Checked {
    let mut out = Checked::default();
    for r in recorded {
        let what = format!("{} {}", r.method, r.target);
        let Some(auth) = r.header("authorization") else {
            if check_form(&what, r, keys, region) {
                out.forms += 1;
                out.signed += 1;
            } else {
                out.unsigned.push(r.clone());
            }
            continue;
        };
        assert!(auth.starts_with("AWS4-HMAC-SHA256 "), "{what}: {auth}");
        let credential = field(auth, "Credential=");
        let signed_headers = field(auth, "SignedHeaders=");
        let signature = field(auth, "Signature=");
        let mut scope = credential.split('/');
        let access_key = scope.next().unwrap_or_default();
        let (_, secret) = keys
            .iter()
            .find(|(a, _)| *a == access_key)
            .unwrap_or_else(|| panic!("{what}: signed with {access_key}, not a backend's key"));
        let date = r.header("x-amz-date").expect("x-amz-date");
        let payload = r
            .header("x-amz-content-sha256")
            .unwrap_or_else(|| panic!("{what}: no x-amz-content-sha256"))
            .to_owned();
        let time = ferry_core::time::DateTime::parse_amz(date).expect("an x-amz-date");
        let time = UNIX_EPOCH + Duration::from_secs(u64::try_from(time.to_unix()).unwrap());

        // Only the headers it signed, as received (repeated ones too, in order).
        let names: Vec<&str> = signed_headers.split(';').collect();
        let headers: Vec<(&str, &str)> = r
            .headers
            .iter()
            .filter(|(n, _)| names.iter().any(|s| n.eq_ignore_ascii_case(s)))
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let host = r.header("host").expect("Host");
        let url = format!("http://{host}{}", r.target);
        let identity = Credentials::new(access_key, *secret, None, None, "oracle").into();
        let mut settings = SigningSettings::default();
        settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
        settings.percent_encoding_mode = PercentEncodingMode::Single;
        settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
        // Sign exactly what the request says it signed.
        settings.excluded_headers = None;
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(region)
            .name("s3")
            .time(time)
            .settings(settings)
            .build()
            .expect("signing params")
            .into();
        let request = SignableRequest::new(
            &r.method,
            &url,
            headers.iter().copied(),
            SignableBody::Precomputed(payload.clone()),
        )
        .unwrap_or_else(|e| panic!("{what}: not signable: {e}"));
        let (instructions, expected) = sign(request, &params)
            .unwrap_or_else(|e| panic!("{what}: aws-sigv4: {e}"))
            .into_parts();
        let (hs, _) = instructions.into_parts();
        let theirs = hs
            .iter()
            .find(|h| h.name() == "authorization")
            .map(|h| h.value().to_owned())
            .expect("aws-sigv4's authorization");
        assert_eq!(
            (
                field(&theirs, "SignedHeaders="),
                field(&theirs, "Credential=")
            ),
            (signed_headers, credential),
            "{what}: headers {:?}",
            r.headers
        );
        assert_eq!(
            signature, expected,
            "{what}: the signature the backend received is not aws-sigv4's; headers {:?}",
            r.headers
        );

        // The payload.
        let body = r.body.as_deref();
        if payload.len() == 64 && payload.bytes().all(|b| b.is_ascii_hexdigit()) {
            if r.complete {
                assert_eq!(r.sha256.as_ref(), Some(&payload), "{what}: payload hash");
            }
            out.payloads.insert("sha256".into());
        } else {
            if payload.starts_with("STREAMING-AWS4-HMAC-SHA256-PAYLOAD") && r.complete {
                let key = v4::generate_signing_key(secret, time, region, "s3");
                let scope = credential.split_once('/').map_or("", |(_, s)| s);
                let body = body.unwrap_or_else(|| panic!("{what}: body not kept"));
                check_chunks(&what, body, key.as_ref(), date, scope, signature);
                out.chunk_signed += 1;
            }
            out.payloads.insert(payload);
        }
        out.signed += 1;
    }
    out
}

/// Every chunk signature of an aws-chunked `body` (and its trailer's, if any), chained from
/// `seed`.
fn check_chunks(what: &str, body: &[u8], key: &[u8], date: &str, scope: &str, seed: &str) {
    let empty = hex_sha256(b"");
    let mut prev = seed.to_owned();
    let mut rest = body;
    let line = |rest: &mut &[u8]| -> String {
        let i = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .unwrap_or_else(|| panic!("{what}: a chunk line"));
        let l = String::from_utf8(rest[..i].to_vec()).expect("chunk line");
        *rest = &rest[i + 2..];
        l
    };
    loop {
        let l = line(&mut rest);
        let (size, sig) = l
            .split_once(";chunk-signature=")
            .unwrap_or_else(|| panic!("{what}: unsigned chunk {l:?}"));
        let size = usize::from_str_radix(size, 16).expect("chunk size");
        let data = &rest[..size];
        let sts = format!(
            "AWS4-HMAC-SHA256-PAYLOAD\n{date}\n{scope}\n{prev}\n{empty}\n{}",
            hex_sha256(data)
        );
        let want = v4::calculate_signature(key, sts.as_bytes());
        assert_eq!(sig, want, "{what}: chunk signature");
        prev = want;
        if size == 0 {
            break;
        }
        assert_eq!(&rest[size..size + 2], b"\r\n", "{what}: chunk end");
        rest = &rest[size + 2..];
    }
    // A trailer: its headers, then its signature, then the empty line.
    let mut trailer = String::new();
    loop {
        let l = line(&mut rest);
        if l.is_empty() {
            assert!(
                trailer.is_empty(),
                "{what}: a trailer without its signature"
            );
            return;
        }
        if let Some(sig) = l.strip_prefix("x-amz-trailer-signature:") {
            let sts = format!(
                "AWS4-HMAC-SHA256-TRAILER\n{date}\n{scope}\n{prev}\n{}",
                hex_sha256(trailer.as_bytes())
            );
            let want = v4::calculate_signature(key, sts.as_bytes());
            assert_eq!(sig, want, "{what}: trailer signature");
            assert_eq!(line(&mut rest), "", "{what}: the end after the trailer");
            assert!(rest.is_empty(), "{what}: bytes after the trailer");
            return;
        }
        trailer.push_str(&l);
        trailer.push('\n');
    }
}
