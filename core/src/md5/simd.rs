//! The multi-lane MD5 compression kernels and the proof that the CPU can run them.
//!
//! Ferry's only MD5 `unsafe` lives here. No well-kept crate does multi-buffer MD5 in Rust (the
//! RustCrypto crates hash one message at a time), so the kernels are written with `core::arch`.
//! Two kinds of `unsafe` occur, each with its `// SAFETY:` comment:
//!
//! - calling a `#[target_feature]` kernel, sound because a [`Backend`] exists only for a kernel
//!   the CPU supports (checked at run time with `std`, at compile time without);
//! - unaligned vector loads and stores, each from or to a reference of exactly 64 bytes.
//!
//! Every lane's block is read through a reference (`&[u8; 64]`), so no pointer arithmetic
//! happens here: bounds are the slices' own.
#![allow(unsafe_code)]
// AVX-512 intrinsics and `is_x86_feature_detected!("avx512f")` are stable since Rust 1.89,
// which is why the workspace's rust-version is 1.89.

/// Most lanes any kernel hashes at once (AVX-512: 16 × 32-bit words per register).
pub(super) const MAX_LANES: usize = 16;

/// Chaining values of every lane, word-major: `state[w][lane]` (the kernels' register layout).
pub(super) type LaneStates = [[u32; MAX_LANES]; 4];

/// One lane's next blocks: the first slice, then the second (either may be empty).
pub(super) type LaneInput<'a> = (&'a [[u8; 64]], &'a [[u8; 64]]);

/// Which multi-lane kernel to use; see [`Backend`] for one that is known to run here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// One lane: `md-5`'s compression function (every target).
    Scalar,
    /// 8 lanes in AVX2 registers (x86-64).
    Avx2,
    /// 16 lanes in AVX-512 registers, with `vpternlogd` and `vprold` (x86-64, AVX-512F).
    Avx512,
}

impl BackendKind {
    /// Every kind, slowest first.
    pub const ALL: [BackendKind; 3] = [Self::Scalar, Self::Avx2, Self::Avx512];

    /// Messages hashed in one pass.
    pub const fn lanes(self) -> usize {
        match self {
            Self::Scalar => 1,
            Self::Avx2 => 8,
            Self::Avx512 => 16,
        }
    }

    /// Whether this CPU runs the kernel: detected at run time with `std`, fixed by the
    /// compile-time target features without it.
    pub fn is_available(self) -> bool {
        match self {
            Self::Scalar => true,
            Self::Avx2 => x86_feature!("avx2"),
            Self::Avx512 => x86_feature!("avx512f"),
        }
    }
}

/// A multi-lane kernel that this CPU runs: the only way to reach the `unsafe` kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Backend {
    // Invariant: `kind.is_available()`.
    kind: BackendKind,
}

impl Backend {
    /// The widest kernel this CPU runs.
    pub fn detect() -> Self {
        let kind = BackendKind::ALL
            .into_iter()
            .rev()
            .find(|k| k.is_available())
            .unwrap_or(BackendKind::Scalar);
        Self { kind }
    }

    /// The one-lane backend (`md-5`'s compression function), available everywhere.
    pub const fn scalar() -> Self {
        Self {
            kind: BackendKind::Scalar,
        }
    }

    /// `kind`, if this CPU runs it (tests and benchmarks force each one this way).
    pub fn new(kind: BackendKind) -> Option<Self> {
        kind.is_available().then_some(Self { kind })
    }

    /// Every backend this CPU runs, slowest first.
    pub fn available() -> impl Iterator<Item = Backend> {
        BackendKind::ALL.into_iter().filter_map(Self::new)
    }

    /// Which kernel this is.
    pub const fn kind(self) -> BackendKind {
        self.kind
    }

    /// Messages hashed in one pass.
    pub const fn lanes(self) -> usize {
        self.kind.lanes()
    }
}

impl Default for Backend {
    fn default() -> Self {
        Self::detect()
    }
}

/// `data` as whole 64-byte blocks and the bytes after them.
pub(super) fn split_blocks(data: &[u8]) -> (&[[u8; 64]], &[u8]) {
    data.as_chunks::<64>()
}

/// Ask for block `j` of a lane's input, if it has one, to be brought into the cache: the
/// lanes read as many unrelated streams as there are lanes, more than the hardware prefetcher
/// follows.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn prefetch(input: &LaneInput<'_>, j: usize) {
    let (first, second) = *input;
    let b = match first.get(j) {
        Some(b) => Some(b),
        None => second.get(j - first.len()),
    };
    if let Some(b) = b {
        // SAFETY: a prefetch is only a hint: it never faults and reads nothing into the
        // program (it is `unsafe` for its raw pointer; SSE is part of x86-64).
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                b.as_ptr().cast(),
            )
        };
    }
}

/// Blocks ahead of the current one that the kernels prefetch.
#[cfg(target_arch = "x86_64")]
const PREFETCH_AHEAD: usize = 8;

/// Block `j` of a lane's input.
#[inline(always)]
fn block<'a>(input: &LaneInput<'a>, j: usize) -> &'a [u8; 64] {
    let (first, second) = *input;
    match first.get(j) {
        Some(b) => b,
        None => &second[j - first.len()],
    }
}

/// Compress `n` blocks in each of the first `backend.lanes()` lanes.
///
/// Panics unless every used lane has at least `n` blocks; unused lanes of a wide kernel must
/// still be given `n` blocks (callers repeat a busy lane's input and ignore the result).
pub(super) fn compress(
    backend: Backend,
    state: &mut LaneStates,
    inputs: &[LaneInput<'_>; MAX_LANES],
    n: usize,
) {
    let lanes = backend.lanes();
    assert!(
        inputs[..lanes].iter().all(|(a, b)| a.len() + b.len() >= n),
        "every lane needs {n} blocks"
    );
    match backend.kind {
        BackendKind::Scalar => {
            let mut s = [state[0][0], state[1][0], state[2][0], state[3][0]];
            for j in 0..n {
                ::md5::block_api::compress(&mut s, core::slice::from_ref(block(&inputs[0], j)));
            }
            for (w, v) in s.into_iter().enumerate() {
                state[w][0] = v;
            }
        }
        #[cfg(target_arch = "x86_64")]
        BackendKind::Avx2 => {
            // SAFETY: a `Backend` of kind Avx2 exists only if the CPU has AVX2 (its invariant,
            // checked by `BackendKind::is_available` in `Backend::new` and `Backend::detect`).
            unsafe { avx2::compress(state, inputs, n) }
        }
        #[cfg(target_arch = "x86_64")]
        BackendKind::Avx512 => {
            // SAFETY: as above, a `Backend` of kind Avx512 exists only if the CPU has AVX-512F.
            unsafe { avx512::compress(state, inputs, n) }
        }
        // Never constructed off x86-64: `is_available` is false there.
        #[cfg(not(target_arch = "x86_64"))]
        BackendKind::Avx2 | BackendKind::Avx512 => unreachable!("no x86-64 kernels here"),
    }
}

/// The 64 MD5 steps as `step!(function, a, b, c, d, message word, constant, rotation)`,
/// shared by every SIMD kernel (RFC 1321, section 3.4).
#[cfg(target_arch = "x86_64")]
macro_rules! md5_steps {
    ($step:ident, $w:ident, $a:ident, $b:ident, $c:ident, $d:ident) => {
        $step!(F, $a, $b, $c, $d, $w[0], 0xd76a_a478, 7);
        $step!(F, $d, $a, $b, $c, $w[1], 0xe8c7_b756, 12);
        $step!(F, $c, $d, $a, $b, $w[2], 0x2420_70db, 17);
        $step!(F, $b, $c, $d, $a, $w[3], 0xc1bd_ceee, 22);
        $step!(F, $a, $b, $c, $d, $w[4], 0xf57c_0faf, 7);
        $step!(F, $d, $a, $b, $c, $w[5], 0x4787_c62a, 12);
        $step!(F, $c, $d, $a, $b, $w[6], 0xa830_4613, 17);
        $step!(F, $b, $c, $d, $a, $w[7], 0xfd46_9501, 22);
        $step!(F, $a, $b, $c, $d, $w[8], 0x6980_98d8, 7);
        $step!(F, $d, $a, $b, $c, $w[9], 0x8b44_f7af, 12);
        $step!(F, $c, $d, $a, $b, $w[10], 0xffff_5bb1, 17);
        $step!(F, $b, $c, $d, $a, $w[11], 0x895c_d7be, 22);
        $step!(F, $a, $b, $c, $d, $w[12], 0x6b90_1122, 7);
        $step!(F, $d, $a, $b, $c, $w[13], 0xfd98_7193, 12);
        $step!(F, $c, $d, $a, $b, $w[14], 0xa679_438e, 17);
        $step!(F, $b, $c, $d, $a, $w[15], 0x49b4_0821, 22);

        $step!(G, $a, $b, $c, $d, $w[1], 0xf61e_2562, 5);
        $step!(G, $d, $a, $b, $c, $w[6], 0xc040_b340, 9);
        $step!(G, $c, $d, $a, $b, $w[11], 0x265e_5a51, 14);
        $step!(G, $b, $c, $d, $a, $w[0], 0xe9b6_c7aa, 20);
        $step!(G, $a, $b, $c, $d, $w[5], 0xd62f_105d, 5);
        $step!(G, $d, $a, $b, $c, $w[10], 0x0244_1453, 9);
        $step!(G, $c, $d, $a, $b, $w[15], 0xd8a1_e681, 14);
        $step!(G, $b, $c, $d, $a, $w[4], 0xe7d3_fbc8, 20);
        $step!(G, $a, $b, $c, $d, $w[9], 0x21e1_cde6, 5);
        $step!(G, $d, $a, $b, $c, $w[14], 0xc337_07d6, 9);
        $step!(G, $c, $d, $a, $b, $w[3], 0xf4d5_0d87, 14);
        $step!(G, $b, $c, $d, $a, $w[8], 0x455a_14ed, 20);
        $step!(G, $a, $b, $c, $d, $w[13], 0xa9e3_e905, 5);
        $step!(G, $d, $a, $b, $c, $w[2], 0xfcef_a3f8, 9);
        $step!(G, $c, $d, $a, $b, $w[7], 0x676f_02d9, 14);
        $step!(G, $b, $c, $d, $a, $w[12], 0x8d2a_4c8a, 20);

        $step!(H, $a, $b, $c, $d, $w[5], 0xfffa_3942, 4);
        $step!(H, $d, $a, $b, $c, $w[8], 0x8771_f681, 11);
        $step!(H, $c, $d, $a, $b, $w[11], 0x6d9d_6122, 16);
        $step!(H, $b, $c, $d, $a, $w[14], 0xfde5_380c, 23);
        $step!(H, $a, $b, $c, $d, $w[1], 0xa4be_ea44, 4);
        $step!(H, $d, $a, $b, $c, $w[4], 0x4bde_cfa9, 11);
        $step!(H, $c, $d, $a, $b, $w[7], 0xf6bb_4b60, 16);
        $step!(H, $b, $c, $d, $a, $w[10], 0xbebf_bc70, 23);
        $step!(H, $a, $b, $c, $d, $w[13], 0x289b_7ec6, 4);
        $step!(H, $d, $a, $b, $c, $w[0], 0xeaa1_27fa, 11);
        $step!(H, $c, $d, $a, $b, $w[3], 0xd4ef_3085, 16);
        $step!(H, $b, $c, $d, $a, $w[6], 0x0488_1d05, 23);
        $step!(H, $a, $b, $c, $d, $w[9], 0xd9d4_d039, 4);
        $step!(H, $d, $a, $b, $c, $w[12], 0xe6db_99e5, 11);
        $step!(H, $c, $d, $a, $b, $w[15], 0x1fa2_7cf8, 16);
        $step!(H, $b, $c, $d, $a, $w[2], 0xc4ac_5665, 23);

        $step!(I, $a, $b, $c, $d, $w[0], 0xf429_2244, 6);
        $step!(I, $d, $a, $b, $c, $w[7], 0x432a_ff97, 10);
        $step!(I, $c, $d, $a, $b, $w[14], 0xab94_23a7, 15);
        $step!(I, $b, $c, $d, $a, $w[5], 0xfc93_a039, 21);
        $step!(I, $a, $b, $c, $d, $w[12], 0x655b_59c3, 6);
        $step!(I, $d, $a, $b, $c, $w[3], 0x8f0c_cc92, 10);
        $step!(I, $c, $d, $a, $b, $w[10], 0xffef_f47d, 15);
        $step!(I, $b, $c, $d, $a, $w[1], 0x8584_5dd1, 21);
        $step!(I, $a, $b, $c, $d, $w[8], 0x6fa8_7e4f, 6);
        $step!(I, $d, $a, $b, $c, $w[15], 0xfe2c_e6e0, 10);
        $step!(I, $c, $d, $a, $b, $w[6], 0xa301_4314, 15);
        $step!(I, $b, $c, $d, $a, $w[13], 0x4e08_11a1, 21);
        $step!(I, $a, $b, $c, $d, $w[4], 0xf753_7e82, 6);
        $step!(I, $d, $a, $b, $c, $w[11], 0xbd3a_f235, 10);
        $step!(I, $c, $d, $a, $b, $w[2], 0x2ad7_d2bb, 15);
        $step!(I, $b, $c, $d, $a, $w[9], 0xeb86_d391, 21);
    };
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use core::arch::x86_64::*;

    use super::{LaneInput, LaneStates, MAX_LANES, PREFETCH_AHEAD, block, prefetch};

    #[target_feature(enable = "avx512f")]
    fn load(bytes: &[u8; 64]) -> __m512i {
        // SAFETY: `bytes` is 64 readable bytes; `loadu` needs no alignment.
        unsafe { _mm512_loadu_si512(bytes.as_ptr().cast()) }
    }

    #[target_feature(enable = "avx512f")]
    fn load_words(words: &[u32; 16]) -> __m512i {
        // SAFETY: `words` is 64 readable bytes; `loadu` needs no alignment.
        unsafe { _mm512_loadu_si512(words.as_ptr().cast()) }
    }

    #[target_feature(enable = "avx512f")]
    fn store_words(words: &mut [u32; 16], v: __m512i) {
        // SAFETY: `words` is 64 writable bytes; `storeu` needs no alignment.
        unsafe { _mm512_storeu_si512(words.as_mut_ptr().cast(), v) }
    }

    /// Rows (one lane's 16 message words each) to columns (one word of every lane each):
    /// 32-bit, 64-bit, then two 128-bit interleaves, 64 shuffles for 16 blocks.
    #[target_feature(enable = "avx512f")]
    fn transpose(r: &[__m512i; 16]) -> [__m512i; 16] {
        // t[2i], t[2i+1]: lanes 2i and 2i+1 interleaved (words 4q,4q+1 / 4q+2,4q+3 per 128 bits).
        let mut t = [_mm512_setzero_si512(); 16];
        for i in 0..8 {
            t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
            t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
        }
        // u[4j+m]: 128-bit quarter q holds word 4q+m of lanes 4j..4j+3.
        let mut u = [_mm512_setzero_si512(); 16];
        for j in 0..4 {
            u[4 * j] = _mm512_unpacklo_epi64(t[4 * j], t[4 * j + 2]);
            u[4 * j + 1] = _mm512_unpackhi_epi64(t[4 * j], t[4 * j + 2]);
            u[4 * j + 2] = _mm512_unpacklo_epi64(t[4 * j + 1], t[4 * j + 3]);
            u[4 * j + 3] = _mm512_unpackhi_epi64(t[4 * j + 1], t[4 * j + 3]);
        }
        // w[4q+m]: quarter j of u[4j+m]'s quarter q, a 4×4 transpose of 128-bit quarters.
        let mut w = [_mm512_setzero_si512(); 16];
        for m in 0..4 {
            let v0 = _mm512_shuffle_i32x4::<0b01_00_01_00>(u[m], u[4 + m]);
            let v1 = _mm512_shuffle_i32x4::<0b11_10_11_10>(u[m], u[4 + m]);
            let v2 = _mm512_shuffle_i32x4::<0b01_00_01_00>(u[8 + m], u[12 + m]);
            let v3 = _mm512_shuffle_i32x4::<0b11_10_11_10>(u[8 + m], u[12 + m]);
            w[m] = _mm512_shuffle_i32x4::<0b10_00_10_00>(v0, v2);
            w[4 + m] = _mm512_shuffle_i32x4::<0b11_01_11_01>(v0, v2);
            w[8 + m] = _mm512_shuffle_i32x4::<0b10_00_10_00>(v1, v3);
            w[12 + m] = _mm512_shuffle_i32x4::<0b11_01_11_01>(v1, v3);
        }
        w
    }

    // The round functions as `vpternlogd` truth tables of (b, c, d).
    macro_rules! fun {
        (F, $b:expr, $c:expr, $d:expr) => {
            _mm512_ternarylogic_epi32::<0xCA>($b, $c, $d) // b ? c : d
        };
        (G, $b:expr, $c:expr, $d:expr) => {
            _mm512_ternarylogic_epi32::<0xE4>($b, $c, $d) // d ? b : c
        };
        (H, $b:expr, $c:expr, $d:expr) => {
            _mm512_ternarylogic_epi32::<0x96>($b, $c, $d) // b ^ c ^ d
        };
        (I, $b:expr, $c:expr, $d:expr) => {
            _mm512_ternarylogic_epi32::<0x39>($b, $c, $d) // c ^ (b | !d)
        };
    }

    // a = b + rotl(a + f(b, c, d) + m + k, s). Only f, one add, the rotation and the last add
    // are on the dependency chain from b; `a + m + k` is ready steps earlier. `black_box`
    // keeps LLVM from reassociating the sum into `((f + a) + m) + k`, which puts three adds
    // on the chain (16 × 16 KiB in cache: 9.6-10.2x `md-5` with the barrier, 8.6-8.7x without).
    macro_rules! step {
        ($f:ident, $a:ident, $b:ident, $c:ident, $d:ident, $m:expr, $k:expr, $s:literal) => {
            let amk = core::hint::black_box(_mm512_add_epi32(
                $a,
                _mm512_add_epi32($m, _mm512_set1_epi32($k as u32 as i32)),
            ));
            $a = _mm512_add_epi32(
                $b,
                _mm512_rol_epi32::<$s>(_mm512_add_epi32(amk, fun!($f, $b, $c, $d))),
            );
        };
    }

    /// 16 lanes, `n` blocks each.
    #[target_feature(enable = "avx512f")]
    pub(super) fn compress(state: &mut LaneStates, inputs: &[LaneInput<'_>; MAX_LANES], n: usize) {
        let mut a = load_words(&state[0]);
        let mut b = load_words(&state[1]);
        let mut c = load_words(&state[2]);
        let mut d = load_words(&state[3]);
        let mut rows = [_mm512_setzero_si512(); 16];
        for j in 0..n {
            for (row, input) in rows.iter_mut().zip(inputs) {
                *row = load(block(input, j));
                prefetch(input, j + PREFETCH_AHEAD);
            }
            let w = transpose(&rows);
            let (a0, b0, c0, d0) = (a, b, c, d);
            md5_steps!(step, w, a, b, c, d);
            a = _mm512_add_epi32(a, a0);
            b = _mm512_add_epi32(b, b0);
            c = _mm512_add_epi32(c, c0);
            d = _mm512_add_epi32(d, d0);
        }
        store_words(&mut state[0], a);
        store_words(&mut state[1], b);
        store_words(&mut state[2], c);
        store_words(&mut state[3], d);
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use core::arch::x86_64::*;

    use super::{LaneInput, LaneStates, MAX_LANES, PREFETCH_AHEAD, block, prefetch};

    #[target_feature(enable = "avx2")]
    fn load(bytes: &[u8; 32]) -> __m256i {
        // SAFETY: `bytes` is 32 readable bytes; `loadu` needs no alignment.
        unsafe { _mm256_loadu_si256(bytes.as_ptr().cast()) }
    }

    #[target_feature(enable = "avx2")]
    fn load_words(words: &[u32; 8]) -> __m256i {
        // SAFETY: `words` is 32 readable bytes; `loadu` needs no alignment.
        unsafe { _mm256_loadu_si256(words.as_ptr().cast()) }
    }

    #[target_feature(enable = "avx2")]
    fn store_words(words: &mut [u32; 8], v: __m256i) {
        // SAFETY: `words` is 32 writable bytes; `storeu` needs no alignment.
        unsafe { _mm256_storeu_si256(words.as_mut_ptr().cast(), v) }
    }

    /// 8 rows of 8 words (one lane's half block each) to 8 columns: 24 shuffles.
    #[target_feature(enable = "avx2")]
    fn transpose(r: &[__m256i; 8]) -> [__m256i; 8] {
        let mut t = [_mm256_setzero_si256(); 8];
        for i in 0..4 {
            t[2 * i] = _mm256_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
            t[2 * i + 1] = _mm256_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
        }
        // u[4j+m]: 128-bit half q holds word 4q+m of lanes 4j..4j+3.
        let mut u = [_mm256_setzero_si256(); 8];
        for j in 0..2 {
            u[4 * j] = _mm256_unpacklo_epi64(t[4 * j], t[4 * j + 2]);
            u[4 * j + 1] = _mm256_unpackhi_epi64(t[4 * j], t[4 * j + 2]);
            u[4 * j + 2] = _mm256_unpacklo_epi64(t[4 * j + 1], t[4 * j + 3]);
            u[4 * j + 3] = _mm256_unpackhi_epi64(t[4 * j + 1], t[4 * j + 3]);
        }
        let mut w = [_mm256_setzero_si256(); 8];
        for m in 0..4 {
            w[m] = _mm256_permute2x128_si256::<0x20>(u[m], u[4 + m]);
            w[4 + m] = _mm256_permute2x128_si256::<0x31>(u[m], u[4 + m]);
        }
        w
    }

    // The round functions in three operations each (AVX2 has no ternary logic).
    macro_rules! fun {
        (F, $b:expr, $c:expr, $d:expr) => {
            _mm256_xor_si256($d, _mm256_and_si256($b, _mm256_xor_si256($c, $d)))
        };
        (G, $b:expr, $c:expr, $d:expr) => {
            _mm256_xor_si256($c, _mm256_and_si256($d, _mm256_xor_si256($b, $c)))
        };
        (H, $b:expr, $c:expr, $d:expr) => {
            _mm256_xor_si256($b, _mm256_xor_si256($c, $d))
        };
        (I, $b:expr, $c:expr, $d:expr) => {
            _mm256_xor_si256(
                $c,
                _mm256_or_si256($b, _mm256_xor_si256($d, _mm256_set1_epi32(-1))),
            )
        };
    }

    macro_rules! step {
        ($f:ident, $a:ident, $b:ident, $c:ident, $d:ident, $m:expr, $k:expr, $s:literal) => {
            // Opaque as in the AVX-512 kernel (measured neutral here: 3.7x `md-5` either way,
            // the rotation's three operations dominate).
            let amk = core::hint::black_box(_mm256_add_epi32(
                $a,
                _mm256_add_epi32($m, _mm256_set1_epi32($k as u32 as i32)),
            ));
            let x = _mm256_add_epi32(amk, fun!($f, $b, $c, $d));
            let rotated = _mm256_or_si256(
                _mm256_slli_epi32::<$s>(x),
                _mm256_srli_epi32::<{ 32 - $s }>(x),
            );
            $a = _mm256_add_epi32($b, rotated);
        };
    }

    /// 8 lanes, `n` blocks each.
    #[target_feature(enable = "avx2")]
    pub(super) fn compress(state: &mut LaneStates, inputs: &[LaneInput<'_>; MAX_LANES], n: usize) {
        let lane_words = |w: &[u32; MAX_LANES]| -> [u32; 8] {
            let mut v = [0; 8];
            v.copy_from_slice(&w[..8]);
            v
        };
        let mut a = load_words(&lane_words(&state[0]));
        let mut b = load_words(&lane_words(&state[1]));
        let mut c = load_words(&lane_words(&state[2]));
        let mut d = load_words(&lane_words(&state[3]));
        let mut lo = [_mm256_setzero_si256(); 8];
        let mut hi = [_mm256_setzero_si256(); 8];
        for j in 0..n {
            for ((l, h), input) in lo.iter_mut().zip(&mut hi).zip(inputs) {
                prefetch(input, j + PREFETCH_AHEAD);
                let halves = block(input, j).as_chunks::<32>().0;
                *l = load(&halves[0]);
                *h = load(&halves[1]);
            }
            let (wl, wh) = (transpose(&lo), transpose(&hi));
            let w = [
                wl[0], wl[1], wl[2], wl[3], wl[4], wl[5], wl[6], wl[7], wh[0], wh[1], wh[2], wh[3],
                wh[4], wh[5], wh[6], wh[7],
            ];
            let (a0, b0, c0, d0) = (a, b, c, d);
            md5_steps!(step, w, a, b, c, d);
            a = _mm256_add_epi32(a, a0);
            b = _mm256_add_epi32(b, b0);
            c = _mm256_add_epi32(c, c0);
            d = _mm256_add_epi32(d, d0);
        }
        for (words, v) in state.iter_mut().zip([a, b, c, d]) {
            let mut lanes = [0u32; 8];
            store_words(&mut lanes, v);
            words[..8].copy_from_slice(&lanes);
        }
    }
}
