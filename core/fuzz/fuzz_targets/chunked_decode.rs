#![no_main]

//! The zero-copy and copying chunked decoders, fed the same input in random splits, must agree;
//! a body that decodes must re-encode and decode to the same bytes and trailers.

use ferry_core::http::Header;
use ferry_core::http::chunked::{
    ChunkedDecoder, ChunkedLimits, MAX_TRAILERS, write_chunk, write_last_chunk,
};
use libfuzzer_sys::fuzz_target;

const EMPTY_HEADER: Header<'static> = Header {
    name: "",
    value: b"",
};

/// Body bytes, input consumed, and trailers (name, value) — or the error code.
type Outcome = Result<(Vec<u8>, usize, Vec<(String, Vec<u8>)>), &'static str>;

fn trailers(d: &ChunkedDecoder) -> Vec<(String, Vec<u8>)> {
    let mut hs = [EMPTY_HEADER; MAX_TRAILERS];
    d.trailers(&mut hs)
        .expect("trailers checked while decoding")
        .iter()
        .map(|h| (h.name.to_owned(), h.value.to_vec()))
        .collect()
}

fn borrowed(input: &[u8], cuts: &[usize], limits: ChunkedLimits) -> Outcome {
    let mut d = ChunkedDecoder::new(limits);
    let (mut body, mut at) = (Vec::new(), 0);
    for &end in cuts {
        while !d.is_done() && at <= end {
            let s = d
                .decode_borrowed(&input[at..end])
                .map_err(|e| e.kind.as_str())?;
            body.extend_from_slice(s.data);
            at += s.consumed;
            if s.consumed == 0 {
                break;
            }
        }
    }
    if !d.is_done() {
        return Err("incomplete");
    }
    Ok((body, at, trailers(&d)))
}

fn copying(input: &[u8], cuts: &[usize], out_len: usize, limits: ChunkedLimits) -> Outcome {
    let mut d = ChunkedDecoder::new(limits);
    let (mut body, mut at) = (Vec::new(), 0);
    let mut out = vec![0u8; out_len];
    for &end in cuts {
        while !d.is_done() && at <= end {
            let p = d
                .decode(&input[at..end], &mut out)
                .map_err(|e| e.kind.as_str())?;
            body.extend_from_slice(&out[..p.produced]);
            at += p.consumed;
            if p.consumed == 0 {
                break;
            }
        }
    }
    if !d.is_done() {
        return Err("incomplete");
    }
    Ok((body, at, trailers(&d)))
}

fuzz_target!(|data: &[u8]| {
    let Some((&ctl, rest)) = data.split_first() else {
        return;
    };
    let n_splits = usize::from(ctl & 7).min(rest.len());
    let (split_bytes, input) = rest.split_at(n_splits);
    let out_len = usize::from(ctl >> 3) + 1;
    let limits = if ctl & 0x80 != 0 {
        ChunkedLimits {
            max_line_len: 16,
            max_trailer_len: 64,
        }
    } else {
        ChunkedLimits::default()
    };
    let mut cuts: Vec<usize> = split_bytes
        .iter()
        .map(|&b| usize::from(b) * input.len() / 256)
        .collect();
    cuts.sort_unstable();
    cuts.push(input.len());

    let a = borrowed(input, &cuts, limits);
    let b = copying(input, &cuts, out_len, limits);
    assert_eq!(a, b);
    // Whole input at once must agree with the splits.
    assert_eq!(a, borrowed(input, &[input.len()], limits));

    if let Ok((body, _, fields)) = a {
        let mut wire = Vec::new();
        for piece in body.chunks(out_len) {
            write_chunk(&mut wire, piece);
        }
        let hs: Vec<Header<'_>> = fields
            .iter()
            .map(|(n, v)| Header { name: n, value: v })
            .collect();
        if write_last_chunk(&mut wire, &hs).is_ok() {
            // Re-encoding may add a space after each trailer colon: lift the trailer limit.
            let roomy = ChunkedLimits {
                max_trailer_len: usize::MAX,
                ..ChunkedLimits::default()
            };
            let again = borrowed(&wire, &[wire.len()], roomy);
            assert_eq!(again, Ok((body, wire.len(), fields)));
        }
    }
});
