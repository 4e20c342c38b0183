#![no_main]

//! Head parsing fed in random splits must agree with parsing the whole input at once; a parsed
//! head must survive framing decisions and, when the writer accepts it, write → parse unchanged.

use ferry_core::http::Header;
use ferry_core::http::body::{request_framing, response_framing};
use ferry_core::http::head::{HeadLimits, HeadParser, Status};
use ferry_core::http::write;
use libfuzzer_sys::fuzz_target;

const EMPTY_HEADER: Header<'static> = Header {
    name: "",
    value: b"",
};

/// Comparable outcome: head length, `None` while partial, or the error code.
type Outcome = Result<Option<usize>, &'static str>;

fn request(p: &mut HeadParser, buf: &[u8]) -> Outcome {
    let mut hs = [EMPTY_HEADER; 64];
    match p.parse_request(buf, &mut hs) {
        Ok(Status::Complete(h)) => {
            let _ = request_framing(&h);
            round_trip_request(h.method, h.target, h.version, h.headers);
            Ok(Some(h.len))
        }
        Ok(Status::Partial) => Ok(None),
        Err(e) => Err(e.kind.as_str()),
    }
}

fn response(p: &mut HeadParser, buf: &[u8]) -> Outcome {
    let mut hs = [EMPTY_HEADER; 64];
    match p.parse_response(buf, &mut hs) {
        Ok(Status::Complete(h)) => {
            let _ = response_framing(&h, "GET");
            let _ = response_framing(&h, "HEAD");
            Ok(Some(h.len))
        }
        Ok(Status::Partial) => Ok(None),
        Err(e) => Err(e.kind.as_str()),
    }
}

fn round_trip_request(
    method: &str,
    target: &str,
    version: ferry_core::http::head::Version,
    headers: &[Header<'_>],
) {
    let mut out = Vec::new();
    if write::request_line(&mut out, method, target, version).is_err() {
        return;
    }
    for h in headers {
        if write::header(&mut out, h.name, h.value).is_err() {
            return;
        }
    }
    write::end_head(&mut out);
    let mut hs = [EMPTY_HEADER; 64];
    let Ok(Status::Complete(again)) = HeadParser::default().parse_request(&out, &mut hs) else {
        panic!("written head does not parse");
    };
    assert_eq!(
        (again.method, again.target, again.version),
        (method, target, version)
    );
    assert_eq!(again.headers, headers);
}

fuzz_target!(|data: &[u8]| {
    let Some((&ctl, rest)) = data.split_first() else {
        return;
    };
    // Low bit: request or response; the next bits: how many split points lead the input.
    let response_mode = ctl & 1 == 1;
    let n_splits = usize::from((ctl >> 1) & 7).min(rest.len());
    let (split_bytes, input) = rest.split_at(n_splits);
    let limits = if ctl & 0x80 != 0 {
        HeadLimits {
            max_head_len: 256,
            max_headers: 8,
            max_target_len: 32,
        }
    } else {
        HeadLimits::default()
    };
    let parse = |p: &mut HeadParser, buf: &[u8]| {
        if response_mode {
            response(p, buf)
        } else {
            request(p, buf)
        }
    };

    let whole = parse(&mut HeadParser::new(limits), input);

    let mut cuts: Vec<usize> = split_bytes
        .iter()
        .map(|&b| usize::from(b) * input.len() / 256)
        .collect();
    cuts.sort_unstable();
    cuts.push(input.len());
    let mut p = HeadParser::new(limits);
    let mut split = Ok(None);
    for &n in &cuts {
        split = parse(&mut p, &input[..n]);
        if split != Ok(None) {
            break;
        }
    }
    assert_eq!(split, whole);
});
