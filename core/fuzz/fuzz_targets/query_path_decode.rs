#![no_main]

//! Endpoint::parse on arbitrary request targets and headers, plus the helpers that read
//! headers of a parsed request. Input: one byte picking the method, then the target, then
//! `name:value` header lines, all separated by `\n`.

use ferry_core::http::Header;
use ferry_core::s3::conditions::Conditions;
use ferry_core::s3::query::Query;
use ferry_core::s3::range::ByteRange;
use ferry_core::s3::address::AddressingConfig;
use ferry_core::s3::request::{CopySource, Endpoint};
use ferry_core::s3::validate::{self, ContentHeaders};
use libfuzzer_sys::fuzz_target;

const METHODS: [&str; 8] = ["GET", "HEAD", "PUT", "POST", "DELETE", "PATCH", "OPTIONS", "get"];

fuzz_target!(|data: &[u8]| {
    let Some((&m, rest)) = data.split_first() else {
        return;
    };
    let method = METHODS[usize::from(m) % METHODS.len()];
    let mut lines = rest.split(|&b| b == b'\n');
    let Some(target) = lines.next().and_then(|t| std::str::from_utf8(t).ok()) else {
        return;
    };
    let headers: Vec<Header<'_>> = lines
        .take(32)
        .filter_map(|line| {
            let colon = line.iter().position(|&b| b == b':')?;
            let name = std::str::from_utf8(&line[..colon]).ok()?;
            Some(Header { name, value: &line[colon + 1..] })
        })
        .collect();
    let cfg = AddressingConfig::with_base_domains(["s3.example.com", "example.com"]);

    let _ = Query::parse(target);
    for h in &headers {
        let _ = ByteRange::parse(h.value);
        let _ = CopySource::parse(h.value);
    }
    let _ = validate::user_metadata(&headers);
    let _ = ContentHeaders::from_headers(&headers);

    if let Ok(req) = Endpoint::parse(method, target, &headers, &cfg) {
        // What parse accepted must satisfy the validation it claims to have done.
        if let Some(b) = &req.bucket {
            assert!(validate::bucket_name(b).is_ok(), "accepted invalid bucket {b:?}");
        }
        if let Some(k) = &req.key {
            assert!(!k.is_empty() && k.len() <= validate::MAX_KEY_LEN);
        }
        let _ = req.endpoint.name();
        let conditions = Conditions::from_headers(&headers);
        let _ = conditions.evaluate("\"etag\"", 1_700_000_000);
        if let Some(r) = ByteRange::from_headers(&headers) {
            for len in [0, 1, 10, u64::MAX] {
                if let Ok(res) = r.resolve(len) {
                    assert!(res.start <= res.end && res.end < len);
                }
            }
        }
    }
});
