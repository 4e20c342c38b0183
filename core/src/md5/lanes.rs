//! Multi-lane MD5: many independent messages hashed together, one per SIMD lane.
//!
//! MD5 is serial within a message (each 64-byte block needs the previous one's result), but a
//! server or a load tester always has many messages in flight. [`update_lanes`] takes several
//! messages' states ([`Md5State`]) and a way to pull each one's next bytes, and compresses one
//! block of up to 16 messages per pass ([`Backend`]: AVX-512 16 lanes, AVX2 8 lanes, else one).
//!
//! Messages need not be the same length nor arrive in the same pieces: a lane whose message
//! has nothing more is given to the next message, and when a single message is left it
//! finishes on the one-lane path (`md-5`'s compression function) — a message never waits
//! for others, and a lone message goes exactly as fast as `md-5`. Padding is always one-lane
//! ([`Md5State::finalize`]): one or two blocks per message.
//!
//! Results are bit-identical to `md-5` (property tests below, every backend).

use super::Md5Digest;
use super::simd::{self, LaneInput, LaneStates, MAX_LANES, split_blocks};

pub use super::simd::{Backend, BackendKind};

const INIT: [u32; 4] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];

/// The streaming state of one message: chaining value, a partial block, the length so far.
#[derive(Clone)]
pub struct Md5State {
    state: [u32; 4],
    buf: [u8; 64],
    buf_len: u8,
    len: u64,
}

impl core::fmt::Debug for Md5State {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Md5State")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl Default for Md5State {
    fn default() -> Self {
        Self::new()
    }
}

impl Md5State {
    /// The state of an empty message.
    pub const fn new() -> Self {
        Self {
            state: INIT,
            buf: [0; 64],
            buf_len: 0,
            len: 0,
        }
    }

    /// Bytes fed so far.
    pub const fn len(&self) -> u64 {
        self.len
    }

    /// Whether no bytes were fed.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Feed `data` on the one-lane path (`md-5`'s compression function).
    pub fn update(&mut self, data: &[u8]) {
        let rest = self.absorb_head(data);
        if self.buf_len == 64 {
            ::md5::block_api::compress(&mut self.state, core::slice::from_ref(&self.buf));
            self.buf_len = 0;
        }
        // Otherwise `data` ended inside the partial block.
        if self.buf_len == 0 {
            let (blocks, tail) = split_blocks(rest);
            ::md5::block_api::compress(&mut self.state, blocks);
            self.keep_tail(tail);
        }
    }

    /// The digest of everything fed (RFC 1321 padding, on the one-lane path).
    pub fn finalize(mut self) -> Md5Digest {
        let bits = self.len.wrapping_mul(8);
        let used = usize::from(self.buf_len);
        let mut block = [0u8; 64];
        block[..used].copy_from_slice(&self.buf[..used]);
        block[used] = 0x80;
        if used >= 56 {
            ::md5::block_api::compress(&mut self.state, core::slice::from_ref(&block));
            block = [0; 64];
        }
        block[56..].copy_from_slice(&bits.to_le_bytes());
        ::md5::block_api::compress(&mut self.state, core::slice::from_ref(&block));
        let mut out = [0u8; 16];
        for (o, w) in out.chunks_exact_mut(4).zip(self.state) {
            o.copy_from_slice(&w.to_le_bytes());
        }
        out
    }

    /// Count `data` and top the partial block up from it; what is left of `data` is returned
    /// (empty unless the partial block is now full or was empty).
    fn absorb_head<'d>(&mut self, data: &'d [u8]) -> &'d [u8] {
        self.len = self.len.wrapping_add(data.len() as u64);
        if self.buf_len == 0 {
            return data;
        }
        let used = usize::from(self.buf_len);
        let take = (64 - used).min(data.len());
        self.buf[used..used + take].copy_from_slice(&data[..take]);
        self.buf_len += take as u8;
        &data[take..]
    }

    /// Keep fewer than 64 bytes as the partial block (which is empty).
    fn keep_tail(&mut self, tail: &[u8]) {
        self.buf[..tail.len()].copy_from_slice(tail);
        self.buf_len = tail.len() as u8;
    }
}

/// Hash the pieces of several messages together, one message per lane.
///
/// `next(i)` gives message `i`'s next piece (of any length), or `None` when it has nothing
/// more for now; it is not called again for `i` after `None`. Each `states[i]` ends as if
/// [`Md5State::update`] had been called with its pieces in order, so a message may go through
/// many calls (e.g. once per scheduler round) before [`Md5State::finalize`].
///
/// Messages take lanes in index order as lanes free up. With a one-lane backend, or when one
/// message is left with data, the rest goes on the one-lane path at `md-5`'s speed.
pub fn update_lanes<'d>(
    backend: Backend,
    states: &mut [Md5State],
    mut next: impl FnMut(usize) -> Option<&'d [u8]>,
) {
    let lanes = backend.lanes();
    if lanes == 1 || states.len() <= 1 {
        for (i, s) in states.iter_mut().enumerate() {
            while let Some(piece) = next(i) {
                s.update(piece);
            }
        }
        return;
    }
    let mut soa: LaneStates = [[0; MAX_LANES]; 4];
    let mut slots: [Slot<'d>; MAX_LANES] = core::array::from_fn(|_| Slot::IDLE);
    let mut unassigned = 0..states.len();
    loop {
        // Give idle lanes to the next messages that have a whole block to hash.
        for (l, slot) in slots.iter_mut().enumerate().take(lanes) {
            while slot.stream == IDLE {
                let Some(i) = unassigned.next() else { break };
                slot.stream = i;
                slot.ended = false;
                slot.pull(&mut states[i], &mut next);
                if slot.count == 0 {
                    // It ended within its partial block: nothing for a lane.
                    slot.stream = IDLE;
                } else {
                    for (w, v) in soa.iter_mut().zip(states[i].state) {
                        w[l] = v;
                    }
                }
            }
        }
        let busy = || slots[..lanes].iter().filter(|s| s.stream != IDLE);
        let Some(first) = busy().next() else { break };
        if busy().count() == 1 && unassigned.is_empty() {
            // A lone message: the one-lane path is faster than a mostly empty pass.
            let l = slots[..lanes]
                .iter()
                .position(|s| s.stream != IDLE)
                .unwrap_or(0);
            let slot = &mut slots[l];
            let st = &mut states[slot.stream];
            for (v, w) in st.state.iter_mut().zip(&soa) {
                *v = w[l];
            }
            for seg in &slot.segs[..slot.count] {
                let blocks = match *seg {
                    Seg::Pending => core::slice::from_ref(&slot.pending),
                    Seg::Blocks(b) => b,
                };
                ::md5::block_api::compress(&mut st.state, blocks);
            }
            if !slot.ended {
                while let Some(piece) = next(slot.stream) {
                    st.update(piece);
                }
            }
            break;
        }
        let n = busy().map(Slot::blocks).min().unwrap_or(0);
        let spare = first.input();
        let inputs: [LaneInput<'_>; MAX_LANES] = core::array::from_fn(|l| match slots.get(l) {
            Some(s) if l < lanes && s.stream != IDLE => s.input(),
            // Idle lanes hash a busy lane's blocks into a state nobody reads.
            _ => spare,
        });
        simd::compress(backend, &mut soa, &inputs, n);
        for (l, slot) in slots.iter_mut().enumerate().take(lanes) {
            if slot.stream == IDLE {
                continue;
            }
            slot.advance(n);
            let st = &mut states[slot.stream];
            slot.pull(st, &mut next);
            if slot.count == 0 {
                for (v, w) in st.state.iter_mut().zip(&soa) {
                    *v = w[l];
                }
                slot.stream = IDLE;
            }
        }
    }
}

/// The digests of `messages`, hashed together: `out[i]` is the MD5 of `messages[i]`.
///
/// Panics if `out` is shorter than `messages`.
pub fn md5_many(backend: Backend, messages: &[&[u8]], out: &mut [Md5Digest]) {
    assert!(out.len() >= messages.len(), "one digest per message");
    for (msgs, outs) in messages.chunks(MAX_LANES).zip(out.chunks_mut(MAX_LANES)) {
        let mut states: [Md5State; MAX_LANES] = core::array::from_fn(|_| Md5State::new());
        let mut given = [false; MAX_LANES];
        update_lanes(backend, &mut states[..msgs.len()], |i| {
            (!core::mem::replace(&mut given[i], true)).then_some(msgs[i])
        });
        for (o, s) in outs.iter_mut().zip(states) {
            *o = s.finalize();
        }
    }
}

const IDLE: usize = usize::MAX;

/// A run of blocks ready for a lane.
#[derive(Clone, Copy)]
enum Seg<'d> {
    /// The lane's `pending` block (a partial block completed from the next piece).
    Pending,
    /// Whole blocks of a piece, hashed in place.
    Blocks(&'d [[u8; 64]]),
}

impl Seg<'_> {
    fn len(&self) -> usize {
        match self {
            Seg::Pending => 1,
            Seg::Blocks(b) => b.len(),
        }
    }
}

/// One lane: which message it hashes and the next (at most two) runs of blocks.
///
/// Two runs let a lane cross from one piece to the next inside one pass (a rotated fill block
/// comes in two pieces); a pending block only ever occupies the first run.
struct Slot<'d> {
    stream: usize,
    segs: [Seg<'d>; 2],
    count: usize,
    pending: [u8; 64],
    ended: bool,
}

impl<'d> Slot<'d> {
    const IDLE: Self = Self {
        stream: IDLE,
        segs: [Seg::Pending; 2],
        count: 0,
        pending: [0; 64],
        ended: true,
    };

    fn blocks(&self) -> usize {
        self.segs[..self.count].iter().map(Seg::len).sum()
    }

    fn input(&self) -> LaneInput<'_> {
        let resolve = |seg: Option<&Seg<'d>>| match seg {
            Some(Seg::Pending) => core::slice::from_ref(&self.pending),
            Some(Seg::Blocks(b)) => *b,
            None => &[],
        };
        let segs = &self.segs[..self.count];
        (resolve(segs.first()), resolve(segs.get(1)))
    }

    /// Drop the first `n` blocks (the lane just hashed them).
    fn advance(&mut self, mut n: usize) {
        while n > 0 && self.count > 0 {
            let len = self.segs[0].len();
            if n >= len {
                n -= len;
                self.segs[0] = self.segs[1];
                self.count -= 1;
            } else {
                if let Seg::Blocks(b) = self.segs[0] {
                    self.segs[0] = Seg::Blocks(&b[n..]);
                }
                n = 0;
            }
        }
    }

    /// Pull pieces of the lane's message while they fit in the two runs.
    ///
    /// A piece needs two runs when the message has a partial block (that block, completed,
    /// then the piece's whole blocks), one otherwise; so a pending block is always run 0.
    fn pull(&mut self, st: &mut Md5State, next: &mut impl FnMut(usize) -> Option<&'d [u8]>) {
        while !self.ended {
            let needs = if st.buf_len > 0 { 2 } else { 1 };
            if self.count + needs > 2 {
                break;
            }
            let Some(piece) = next(self.stream) else {
                self.ended = true;
                break;
            };
            let rest = st.absorb_head(piece);
            if st.buf_len == 64 {
                self.pending = st.buf;
                st.buf_len = 0;
                self.segs[self.count] = Seg::Pending;
                self.count += 1;
            }
            if st.buf_len == 0 {
                let (blocks, tail) = split_blocks(rest);
                if !blocks.is_empty() {
                    self.segs[self.count] = Seg::Blocks(blocks);
                    self.count += 1;
                }
                st.keep_tail(tail);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::md5::{Digest, Md5};
    use alloc::vec::Vec;
    use proptest::prelude::*;

    fn reference(data: &[u8]) -> Md5Digest {
        Md5::digest(data).into()
    }

    use super::super::tests::RFC1321;

    fn hex(d: &Md5Digest) -> alloc::string::String {
        d.iter().map(|b| alloc::format!("{b:02x}")).collect()
    }

    /// RFC 1321's padded blocks of `msg`.
    fn padded(msg: &[u8]) -> Vec<[u8; 64]> {
        let mut v = msg.to_vec();
        v.push(0x80);
        while v.len() % 64 != 56 {
            v.push(0);
        }
        v.extend_from_slice(&(msg.len() as u64 * 8).to_le_bytes());
        split_blocks(&v).0.to_vec()
    }

    #[test]
    fn every_kernel_passes_rfc1321_in_every_lane() {
        // The kernel alone: each padded vector in all lanes, the state is the digest.
        assert!(Backend::available().count() >= 1);
        for backend in Backend::available() {
            for (msg, want) in RFC1321 {
                let blocks = padded(msg);
                let mut soa: LaneStates = [[0; MAX_LANES]; 4];
                for (w, v) in soa.iter_mut().zip(INIT) {
                    *w = [v; MAX_LANES];
                }
                let inputs = [(&blocks[..], &[][..]); MAX_LANES];
                simd::compress(backend, &mut soa, &inputs, blocks.len());
                for l in 0..backend.lanes() {
                    let mut d = [0u8; 16];
                    for (o, w) in d.chunks_exact_mut(4).zip(&soa) {
                        o.copy_from_slice(&w[l].to_le_bytes());
                    }
                    assert_eq!(hex(&d), want, "{backend:?} lane {l}");
                }
            }
        }
    }

    #[test]
    fn rfc1321_through_the_lanes_on_every_backend() {
        for backend in Backend::available() {
            let msgs: Vec<&[u8]> = RFC1321.iter().map(|(m, _)| *m).collect();
            let mut out = [[0u8; 16]; 7];
            md5_many(backend, &msgs, &mut out);
            for (d, (_, want)) in out.iter().zip(RFC1321) {
                assert_eq!(hex(d), want, "{backend:?}");
            }
        }
    }

    #[test]
    fn a_million_a_in_17_messages() {
        // The classic long vector, in every lane of every backend plus one lane refilled.
        let data = alloc::vec![b'a'; 1_000_000];
        let msgs = [&data[..]; 17];
        for backend in Backend::available() {
            let mut out = [[0u8; 16]; 17];
            md5_many(backend, &msgs, &mut out);
            for d in out {
                assert_eq!(hex(&d), "7707d6ae4e027c70eea2a935c2296f21", "{backend:?}");
            }
        }
    }

    #[test]
    fn detect_picks_the_widest_available() {
        let best = Backend::detect();
        assert!(Backend::available().all(|b| b.lanes() <= best.lanes()));
        assert_eq!(Backend::new(BackendKind::Scalar), Some(Backend::scalar()));
        #[cfg(all(target_arch = "x86_64", feature = "std"))]
        if std::is_x86_feature_detected!("avx512f") {
            assert_eq!(best.kind(), BackendKind::Avx512);
        }
    }

    /// `messages[i]` cut at `cuts[i]` (sorted offsets) and fed through the lanes in `rounds`
    /// calls, each giving every message its next share of pieces in order, so that states
    /// cross calls as a scheduler's do.
    fn through_lanes(
        backend: Backend,
        messages: &[Vec<u8>],
        cuts: &[Vec<usize>],
        rounds: usize,
    ) -> Vec<Md5Digest> {
        let pieces: Vec<Vec<&[u8]>> = messages
            .iter()
            .zip(cuts)
            .map(|(m, c)| {
                let mut at = 0;
                c.iter()
                    .chain([&m.len()])
                    .map(|&e| {
                        let p = &m[at..e];
                        at = e;
                        p
                    })
                    .collect()
            })
            .collect();
        let mut states: Vec<Md5State> = messages.iter().map(|_| Md5State::new()).collect();
        let mut pos = alloc::vec![0usize; messages.len()];
        for r in 0..rounds {
            // Round r hands out the r-th share of each message's pieces.
            let end: Vec<usize> = pieces
                .iter()
                .map(|p| (p.len() * (r + 1)).div_ceil(rounds))
                .collect();
            update_lanes(backend, &mut states, |i| {
                (pos[i] < end[i]).then(|| {
                    pos[i] += 1;
                    pieces[i][pos[i] - 1]
                })
            });
        }
        states.into_iter().map(Md5State::finalize).collect()
    }

    fn messages_and_cuts() -> impl Strategy<Value = (Vec<Vec<u8>>, Vec<Vec<usize>>, usize)> {
        let message = (
            0usize..100_000,
            any::<u8>(),
            proptest::collection::vec(any::<usize>(), 0..12),
        )
            .prop_map(|(len, seed, mut cuts)| {
                // Cheap varied bytes: a message's content matters less than its shape here.
                let data: Vec<u8> = (0..len)
                    .map(|i| (i as u8).wrapping_mul(31) ^ seed ^ (i >> 9) as u8)
                    .collect();
                for c in &mut cuts {
                    // Half the cuts on block boundaries, half anywhere.
                    *c = if *c % 2 == 0 {
                        (*c / 2) % (len + 1)
                    } else {
                        ((*c / 2) % (len / 64 + 1)) * 64
                    };
                }
                cuts.sort_unstable();
                (data, cuts)
            });
        (proptest::collection::vec(message, 1..=17), 1usize..4).prop_map(|(m, rounds)| {
            let (d, c) = m.into_iter().unzip();
            (d, c, rounds)
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(40))]

        #[test]
        fn lanes_equal_md5_crate((messages, cuts, rounds) in messages_and_cuts()) {
            let want: Vec<Md5Digest> = messages.iter().map(|m| reference(m)).collect();
            for backend in Backend::available() {
                let got = through_lanes(backend, &messages, &cuts, rounds);
                prop_assert_eq!(&got, &want, "{:?}", backend);
            }
        }

        #[test]
        fn state_update_equals_md5_crate(
            data in proptest::collection::vec(any::<u8>(), 0..5_000),
            mut cuts in proptest::collection::vec(any::<usize>(), 0..16),
        ) {
            for c in &mut cuts { *c %= data.len() + 1; }
            cuts.sort_unstable();
            let mut s = Md5State::new();
            let mut at = 0;
            for c in cuts.into_iter().chain([data.len()]) {
                s.update(&data[at..c]);
                at = c;
            }
            prop_assert_eq!(s.len(), data.len() as u64);
            prop_assert_eq!(s.finalize(), reference(&data));
        }
    }

    #[test]
    fn tiny_pieces_and_empty_messages_mix_with_long_ones() {
        // Byte-at-a-time messages keep a partial block across every pull; empty ones never
        // take a lane; a long one finishes alone on the one-lane path.
        let long: Vec<u8> = (0..70_000u32).map(|i| (i * 7) as u8).collect();
        let messages: Vec<Vec<u8>> = (0..20)
            .map(|i| match i % 4 {
                0 => Vec::new(),
                1 => long[..i * 97].to_vec(),
                2 => long.clone(),
                _ => long[..63].to_vec(),
            })
            .collect();
        let cuts: Vec<Vec<usize>> = messages
            .iter()
            .enumerate()
            .map(|(i, m)| {
                if i % 3 == 0 {
                    (1..m.len().min(300)).collect()
                } else {
                    Vec::new()
                }
            })
            .collect();
        for backend in Backend::available() {
            let got = through_lanes(backend, &messages, &cuts, 2);
            for (g, m) in got.iter().zip(&messages) {
                assert_eq!(*g, reference(m), "{backend:?} len {}", m.len());
            }
        }
    }
}
