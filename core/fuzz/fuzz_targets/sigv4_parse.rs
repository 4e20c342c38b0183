#![no_main]
//! SigV4 parsing and canonicalisation over arbitrary input: the `Authorization` header, the
//! presigned query parameters, canonical path/query/headers, and full verification.
//!
//! Input lines (split on `\n`): Authorization value, raw path, raw query, then `name:value`
//! headers (values may be any bytes).

use ferry_core::http::Header;
use ferry_core::s3::sigv4::{self, MemoryCredentials, PayloadHash, RequestParts, SigningKeyCache};
use libfuzzer_sys::fuzz_target;

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
    if !auth.is_empty() {
        headers.push(Header {
            name: "Authorization",
            value: auth,
        });
    }

    if let Ok(a) = core::str::from_utf8(auth) {
        if let Ok(parsed) = sigv4::parse_authorization(a) {
            let req = RequestParts {
                method: "GET",
                path,
                query,
                headers: &headers,
            };
            let _ = sigv4::canonical_request(&req, parsed.signed_headers, parsed.signature, false);
        }
        let _ = PayloadHash::parse(a);
    }
    let _ = sigv4::parse_presigned(query);
    let mut out = Vec::new();
    let _ = sigv4::canonical_path(path, &mut out);
    out.clear();
    let _ = sigv4::canonical_query(query, true, &mut out);
    out.clear();
    sigv4::canonical_headers(&headers, "host;x-amz-date;range", &mut out);

    let store = MemoryCredentials::new().with("AKIAIOSFODNN7EXAMPLE", "secret");
    let mut cache = SigningKeyCache::new(4);
    let req = RequestParts {
        method: "PUT",
        path,
        query,
        headers: &headers,
    };
    for now in [1_369_353_600, i64::MIN, i64::MAX] {
        let _ = sigv4::verify_request(&req, now, Some("us-east-1"), &store, &mut cache);
    }
});
