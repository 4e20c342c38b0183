#![no_main]
//! SigV4 parsing and canonicalisation over arbitrary input, each with a property:
//!
//! - an `Authorization` value that parses renders back to one that parses the same;
//! - presigned query parameters that parse render back to a query that parses the same;
//! - the canonical path and query are canonical: canonicalising them again changes nothing,
//!   and the query's does not depend on the order of its parameters (pieces vs whole);
//! - the canonical request is deterministic and is, line by line, the canonical parts made
//!   one by one; the string to sign is its algorithm, date, scope and hash;
//! - what `sign_request` and `presign` produce for the input's request verifies (the whole
//!   canonical request signed, its streamed hash verified), and a changed signature does not;
//! - verification of the request as given never panics, whatever the time.
//!
//! Input lines (split on `\n`): Authorization value, raw path, raw query, then `name:value`
//! headers (values may be any bytes).

use ferry_core::http::Header;
use ferry_core::s3::S3ErrorCode;
use ferry_core::s3::sigv4::{
    self, CredentialScope, Credentials, MemoryCredentials, NoKeyCache, PayloadHash, RequestParts,
    SigningKeyCache, UNSIGNED_PAYLOAD,
};
use ferry_core::s3::uri;
use ferry_core::time::DateTime;
use libfuzzer_sys::fuzz_target;

const ACCESS_KEY: &str = "AKIAIOSFODNN7EXAMPLE";
const SECRET: &str = "secret";
const REGION: &str = "us-east-1";
const NOW: i64 = 1_369_353_600;

/// `value` parsed, rendered as a client writes it, parsed again: the same parts.
fn authorization_round_trip(value: &str) {
    let Ok(a) = sigv4::parse_authorization(value) else {
        return;
    };
    let rendered = format!(
        "{} Credential={}/{}/{}/{}/{},SignedHeaders={},Signature={}",
        sigv4::ALGORITHM,
        a.access_key_id,
        a.date,
        a.region,
        a.service,
        sigv4::SCOPE_TERMINATOR,
        a.signed_headers,
        a.signature
    );
    let again = sigv4::parse_authorization(&rendered)
        .unwrap_or_else(|e| panic!("{rendered:?} does not parse: {e:?}"));
    assert_eq!(again, a, "{rendered:?}");
}

/// Presigned parameters parsed, written as a query (each value encoded), parsed again: the same.
fn presigned_round_trip(query: &str) {
    let Ok(Some(p)) = sigv4::parse_presigned(query) else {
        return;
    };
    let mut rendered = format!(
        "X-Amz-Algorithm={}&X-Amz-Credential={}&X-Amz-Date={}&X-Amz-Expires={}\
         &X-Amz-SignedHeaders={}&X-Amz-Signature={}",
        sigv4::ALGORITHM,
        uri::encode(&p.credential),
        p.time.amz(),
        p.expires,
        uri::encode(&p.signed_headers),
        uri::encode(&p.signature)
    );
    if let Some(c) = &p.content_sha256 {
        rendered.push_str(&format!("&X-Amz-Content-Sha256={}", uri::encode(c)));
    }
    let again = sigv4::parse_presigned(&rendered)
        .unwrap_or_else(|e| panic!("{rendered:?} does not parse: {e:?}"))
        .unwrap_or_else(|| panic!("{rendered:?} is not presigned"));
    assert_eq!(again, p, "{rendered:?}");
}

/// The canonical path and query of `path` and `query`, if they have one; checked canonical.
fn canonical_parts(path: &str, query: &str) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut cpath = Vec::new();
    let path_ok = sigv4::canonical_path(path, &mut cpath).is_ok();
    if path_ok {
        let s = std::str::from_utf8(&cpath).expect("a canonical path is ASCII");
        let mut again = Vec::new();
        sigv4::canonical_path(s, &mut again).expect("a canonical path is a path");
        assert_eq!(again, cpath, "canonical path of {path:?}");
    }
    let mut cquery = Vec::new();
    let query_ok = sigv4::canonical_query(query, false, &mut cquery).is_ok();
    if query_ok {
        let s = std::str::from_utf8(&cquery).expect("a canonical query is ASCII");
        let mut again = Vec::new();
        sigv4::canonical_query(s, false, &mut again).expect("a canonical query is a query");
        assert_eq!(again, cquery, "canonical query of {query:?}");
        // Its parameters in the other order: the same canonical query.
        let mut pieces: Vec<&str> = query.split('&').collect();
        pieces.reverse();
        let reversed = pieces.join("&");
        let mut other = Vec::new();
        sigv4::canonical_query(&reversed, false, &mut other)
            .expect("the same parameters in another order");
        assert_eq!(other, cquery, "{query:?} vs {reversed:?}");
    }
    (path_ok && query_ok).then_some((cpath, cquery))
}

/// The canonical request of `req` for `signed` (a valid list): deterministic, and its lines
/// the parts made one by one.
fn canonical_request_of(req: &RequestParts<'_>, signed: &str, parts: &(Vec<u8>, Vec<u8>)) {
    let Ok(creq) = sigv4::canonical_request(req, signed, UNSIGNED_PAYLOAD, false) else {
        panic!("the path and query have canonical forms, so the request has one");
    };
    let twice = sigv4::canonical_request(req, signed, UNSIGNED_PAYLOAD, false).expect("again");
    assert_eq!(creq, twice, "the canonical request is deterministic");
    let mut want = Vec::new();
    want.extend_from_slice(req.method.as_bytes());
    want.push(b'\n');
    want.extend_from_slice(&parts.0);
    want.push(b'\n');
    want.extend_from_slice(&parts.1);
    want.push(b'\n');
    sigv4::canonical_headers(req.headers, signed, &mut want);
    want.push(b'\n');
    want.extend_from_slice(signed.as_bytes());
    want.push(b'\n');
    want.extend_from_slice(UNSIGNED_PAYLOAD.as_bytes());
    assert_eq!(creq, want);
    let time = DateTime::from_unix(NOW);
    let scope = CredentialScope::new(time, REGION);
    let sts = sigv4::string_to_sign(time, &scope, &creq);
    let hash = sigv4::Hex64::of(&sigv4::sha256(&creq));
    assert_eq!(
        sts,
        format!("{}\n{}\n{scope}\n{hash}", sigv4::ALGORITHM, time.amz())
    );
}

/// Headers a signer may sign as they are: names that are tokens, none that signing writes.
fn signable(h: &Header<'_>) -> bool {
    const WRITTEN: [&str; 6] = [
        "authorization",
        "host",
        "date",
        "x-amz-date",
        "x-amz-content-sha256",
        "x-amz-security-token",
    ];
    !h.name.is_empty()
        && h.name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
        && !WRITTEN.iter().any(|w| h.name.eq_ignore_ascii_case(w))
}

/// Sign `method path?query` with `headers` (and a Host) both ways; each verifies, and a
/// changed signature does not.
fn sign_then_verify(path: &str, query: &str, headers: &[Header<'_>]) {
    // Parameters named as a presigned URL's are the signer's to write (a query with some
    // would be presigned twice, or both kinds at once).
    let mut cquery = Vec::new();
    if sigv4::canonical_query(query, false, &mut cquery).is_err()
        || cquery
            .split(|&b| b == b'&')
            .any(|pair| pair.starts_with(b"X-Amz-"))
    {
        return;
    }
    let mut hs: Vec<Header<'_>> = headers.iter().filter(|h| signable(h)).copied().collect();
    hs.push(Header {
        name: "Host",
        value: b"bucket.s3.example.com",
    });
    let req = RequestParts {
        method: "PUT",
        path,
        query,
        headers: &hs,
    };
    let creds = Credentials::new(ACCESS_KEY, SECRET);
    let store = MemoryCredentials::new().with(ACCESS_KEY, SECRET);
    let Ok(sig) = sigv4::sign_request(&req, UNSIGNED_PAYLOAD, &creds, REGION, NOW, &mut NoKeyCache)
    else {
        return;
    };
    let verify = |authorization: &str| {
        let mut signed = hs.clone();
        signed.push(Header {
            name: "x-amz-date",
            value: sig.x_amz_date.as_bytes(),
        });
        signed.push(Header {
            name: "x-amz-content-sha256",
            value: sig.x_amz_content_sha256.as_bytes(),
        });
        signed.push(Header {
            name: "Authorization",
            value: authorization.as_bytes(),
        });
        let req = RequestParts {
            headers: &signed,
            ..req
        };
        let mut cache = SigningKeyCache::new(4);
        sigv4::verify_request(&req, NOW, Some(REGION), &store, &mut cache)
    };
    let v = verify(&sig.authorization)
        .unwrap_or_else(|e| panic!("signed {req:?}: {e:?} ({})", sig.authorization))
        .expect("signed, not anonymous");
    assert_eq!(v.access_key_id, ACCESS_KEY);
    assert_eq!(v.payload, PayloadHash::Unsigned);
    let tampered = flip_last_hex(&sig.authorization);
    let e = verify(&tampered).expect_err("a changed signature verifies");
    assert_eq!(e.code, S3ErrorCode::SignatureDoesNotMatch, "{e:?}");

    // A presigned URL's parameters are read as text: its others must decode to UTF-8 (a
    // header-signed request's query need not).
    let text = query
        .split(['&', '='])
        .all(|part| uri::decode(part, true).is_ok());
    if !text {
        return;
    }
    let Ok(presigned) = sigv4::presign(&req, &creds, REGION, NOW, 3600, &mut NoKeyCache) else {
        return;
    };
    let verify = |query: &str| {
        let req = RequestParts { query, ..req };
        sigv4::verify_request(&req, NOW, Some(REGION), &store, &mut NoKeyCache)
    };
    let v = verify(&presigned)
        .unwrap_or_else(|e| panic!("presigned {req:?}: {e:?} ({presigned})"))
        .expect("presigned, not anonymous");
    assert_eq!(v.access_key_id, ACCESS_KEY);
    let e = verify(&flip_last_hex(&presigned)).expect_err("a changed signature verifies");
    assert_eq!(e.code, S3ErrorCode::SignatureDoesNotMatch, "{e:?}");
}

/// `s` with its last character (a hex digit of the signature) changed to another hex digit.
fn flip_last_hex(s: &str) -> String {
    let mut out = s.to_owned();
    let last = out.pop().expect("a signature");
    out.push(if last == '0' { '1' } else { '0' });
    out
}

fuzz_target!(|data: &[u8]| {
    let mut lines = data.split(|&b| b == b'\n');
    let auth = lines.next().unwrap_or_default();
    let path = core::str::from_utf8(lines.next().unwrap_or_default()).unwrap_or("/");
    let query = core::str::from_utf8(lines.next().unwrap_or_default()).unwrap_or("");
    let mut headers: Vec<Header<'_>> = lines
        .filter_map(|l| {
            let i = l.iter().position(|&b| b == b':')?;
            let name = core::str::from_utf8(&l[..i]).ok()?;
            Some(Header {
                name,
                value: &l[i + 1..],
            })
        })
        .collect();
    let parts = canonical_parts(path, query);
    if let Some(parts) = &parts {
        canonical_request_of(
            &RequestParts {
                method: "GET",
                path,
                query,
                headers: &headers,
            },
            "host;x-amz-date;range",
            parts,
        );
    }
    presigned_round_trip(query);
    sign_then_verify(path, query, &headers);

    if !auth.is_empty() {
        headers.push(Header {
            name: "Authorization",
            value: auth,
        });
    }
    if let Ok(a) = core::str::from_utf8(auth) {
        authorization_round_trip(a);
        if let (Ok(parsed), Some(parts)) = (sigv4::parse_authorization(a), &parts) {
            let req = RequestParts {
                method: "GET",
                path,
                query,
                headers: &headers,
            };
            canonical_request_of(&req, parsed.signed_headers, parts);
        }
        let _ = PayloadHash::parse(a);
    }

    // Whatever the input, verifying it answers (no panic), at any time.
    let store = MemoryCredentials::new().with(ACCESS_KEY, SECRET);
    let mut cache = SigningKeyCache::new(4);
    let req = RequestParts {
        method: "PUT",
        path,
        query,
        headers: &headers,
    };
    for now in [NOW, i64::MIN, i64::MAX] {
        let _ = sigv4::verify_request(&req, now, Some(REGION), &store, &mut cache);
    }
});
