//! Profiles as the admin listener serves them (`/debug/pprof/profile`, `/debug/pprof/heap`):
//! a gzipped pprof protobuf, decoded with the pprof crate's own protos.

use std::io::Read as _;

use pprof::protos::Message as _;

use super::http::Response;

/// The profile of a 200 answer: gzipped protobuf, `application/octet-stream`.
pub fn decode(r: &Response) -> pprof::protos::Profile {
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("application/octet-stream"));
    assert_eq!(r.body.get(..2), Some(&[0x1f, 0x8b][..]), "a gzip stream");
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(r.body.as_slice())
        .read_to_end(&mut raw)
        .expect("gunzip");
    pprof::protos::Profile::decode(raw.as_slice()).expect("a pprof Profile")
}

/// Its sample types, as (type, unit) names.
pub fn sample_types(p: &pprof::protos::Profile) -> Vec<(String, String)> {
    let string = |i: i64| {
        usize::try_from(i)
            .ok()
            .and_then(|i| p.string_table.get(i))
            .cloned()
            .unwrap_or_default()
    };
    p.sample_type
        .iter()
        .map(|t| (string(t.ty), string(t.unit)))
        .collect()
}

/// Whether a function of Ferry's own is named: the stacks were symbolized.
pub fn names_ferry(p: &pprof::protos::Profile) -> bool {
    p.string_table.iter().any(|s| s.contains("ferry"))
}
