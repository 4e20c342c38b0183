#![no_main]
//! aws-chunked decoding of arbitrary bodies in every framing, fed in arbitrary pieces; and,
//! as an oracle, encode → decode of arbitrary data must give the data back.
//!
//! Input: [mode/trailer byte, length hi, length lo, piece size, body...].

use ferry_core::s3::sigv4::aws_chunked::{AwsChunkedDecoder, AwsChunkedEncoder};
use ferry_core::s3::checksum::ChecksumAlgorithm;
use ferry_core::s3::sigv4::{
    CredentialScope, Signature, SigningContext, StreamingMode, derive_signing_key,
};
use ferry_core::time::DateTime;
use libfuzzer_sys::fuzz_target;

fn context() -> SigningContext {
    let time = DateTime::from_unix(1_369_353_600);
    SigningContext {
        key: derive_signing_key("secret", "20130524", "us-east-1", "s3"),
        scope: CredentialScope::new(time, "us-east-1"),
        time,
        seed_signature: Signature([7; 32]),
    }
}

fn decode_pieces(dec: &mut AwsChunkedDecoder, body: &[u8], piece: usize) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut pending: Vec<u8> = Vec::new();
    for chunk in body.chunks(piece.max(1)) {
        pending.extend_from_slice(chunk);
        loop {
            let step = dec.decode(&pending).ok()?;
            assert!(step.consumed <= pending.len());
            out.extend_from_slice(step.data);
            let (consumed, done) = (step.consumed, step.done);
            pending.drain(..consumed);
            if done {
                return Some(out);
            }
            if pending.is_empty() {
                break;
            }
            assert!(consumed > 0, "the decoder must make progress");
        }
    }
    dec.finish().ok()?;
    Some(out)
}

fuzz_target!(|data: &[u8]| {
    let [sel, hi, lo, piece, body @ ..] = data else {
        return;
    };
    let mode = match sel % 3 {
        0 => StreamingMode::Signed,
        1 => StreamingMode::SignedTrailer,
        _ => StreamingMode::UnsignedTrailer,
    };
    let trailer = match (mode, (sel / 3) % 6) {
        (StreamingMode::Signed, _) | (_, 5) => None,
        (_, i) => ChecksumAlgorithm::ALL.get(usize::from(i)).copied(),
    };
    let ctx = context();
    let piece = usize::from(*piece) + 1;

    // Arbitrary bytes as a body: must never panic.
    let len = u64::from(u16::from_be_bytes([*hi, *lo]));
    if let Ok(mut dec) = AwsChunkedDecoder::new(mode, len, trailer, Some(&ctx)) {
        if let Some(out) = decode_pieces(&mut dec, body, piece) {
            assert_eq!(out.len() as u64, len);
        }
    }

    // Oracle: the encoder's output decodes back to the data.
    if sel & 0x80 != 0 {
        let chunk = usize::from(*hi) + 1;
        let mut enc = match mode {
            StreamingMode::UnsignedTrailer => AwsChunkedEncoder::unsigned(trailer),
            _ => AwsChunkedEncoder::signed(&ctx, trailer),
        };
        let mode = enc.mode();
        let mut encoded = Vec::new();
        for c in body.chunks(chunk) {
            enc.encode_chunk(c, &mut encoded);
        }
        enc.finish(&mut encoded);
        assert_eq!(
            AwsChunkedEncoder::encoded_len(mode, trailer, body.len() as u64, chunk as u64),
            Some(encoded.len() as u64)
        );
        let mut dec = AwsChunkedDecoder::new(mode, body.len() as u64, trailer, Some(&ctx))
            .expect("valid setup");
        assert_eq!(
            decode_pieces(&mut dec, &encoded, piece).as_deref(),
            Some(body)
        );
    }
});
