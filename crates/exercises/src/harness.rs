//! An exercise's kernel on the GPU: its input data, its launch, and the output the CPU expects.

use std::sync::Arc;

use rayon::prelude::*;

use cuda_kernels::{
    CudaFunction, CudaSlice, CudaView, DeviceRepr, Gpu, GpuError, LaunchConfig, PushKernelArg, ValidAsZeroBits,
    tensor_map::{Box2d, SwizzleMaps, TmaSwizzle},
};
use lesson_04_gemm::cpu_product;
use lesson_11_scan::exclusive_scan;
use lesson_kit::{
    floats::{random_floats, relative_error},
    words_kernel::random_words,
};

use crate::manifest::{Harness, Input, TileFill};

/// Rows of a `column-sums` tile (as in the kernels).
const TILE_ROWS: usize = 32;
/// Rows of an `ldmatrix-tile` tile: 4 warps of 16 rows (as in the kernels).
const LDMATRIX_TILE_ROWS: usize = 64;

/// Which size to run: small for correctness and the counters, large for the clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckSize {
    Check,
    Timed,
}

/// Input data on the host, to upload and to compute the expected output from.
#[derive(Clone, Debug)]
pub enum HostInput {
    Words(Vec<u32>),
    /// A and B, each n x n.
    Matrices(Vec<f32>, Vec<f32>),
}

/// What the kernel wrote.
#[derive(Clone, Debug)]
pub enum Output {
    Words(Vec<u32>),
    Floats(Vec<f32>),
}

/// What it should have written.
#[derive(Clone, Debug, PartialEq)]
pub enum Expected {
    Words(Vec<u32>),
    Floats(Vec<f64>),
}

impl Harness {
    /// The shape of the blocks every launch of the kernel has: `[x, y]`.
    pub fn block(&self) -> [u32; 2] {
        match *self {
            Harness::RowSums { block, .. }
            | Harness::ColumnSums { block, .. }
            | Harness::Transpose { block, .. }
            | Harness::Gemm { block, .. }
            | Harness::Scan { block, .. }
            | Harness::LdmatrixTile { block, .. } => block,
        }
    }

    pub fn block_threads(&self) -> u32 {
        let [x, y] = self.block();
        x * y
    }

    /// Blocks (word kernels, scans) or the matrix side (transpose, GEMM) at `size`.
    fn extent(&self, size: CheckSize) -> u32 {
        match (*self, size) {
            (
                Harness::RowSums { check_blocks, .. }
                | Harness::ColumnSums { check_blocks, .. }
                | Harness::Scan { check_blocks, .. }
                | Harness::LdmatrixTile { check_blocks, .. },
                CheckSize::Check,
            ) => check_blocks,
            (
                Harness::RowSums { timed_blocks, .. }
                | Harness::ColumnSums { timed_blocks, .. }
                | Harness::Scan { timed_blocks, .. }
                | Harness::LdmatrixTile { timed_blocks, .. },
                CheckSize::Timed,
            ) => timed_blocks,
            (Harness::Transpose { check_n, .. } | Harness::Gemm { check_n, .. }, CheckSize::Check) => check_n,
            (Harness::Transpose { timed_n, .. } | Harness::Gemm { timed_n, .. }, CheckSize::Timed) => timed_n,
        }
    }

    pub fn launch_config(&self, size: CheckSize) -> LaunchConfig {
        let [x, y] = self.block();
        let extent = self.extent(size);
        let grid_dim = match self {
            Harness::RowSums { .. }
            | Harness::ColumnSums { .. }
            | Harness::Scan { .. }
            | Harness::LdmatrixTile { .. } => (extent, 1, 1),
            Harness::Transpose { .. } => (extent / x, extent / x, 1),
            Harness::Gemm { .. } => (extent / x, extent / y, 1),
        };
        LaunchConfig { grid_dim, block_dim: (x, y, 1), shared_mem_bytes: 0 }
    }

    /// Input words (or floats per matrix) at `size`.
    fn input_len(&self, size: CheckSize) -> usize {
        let extent = self.extent(size) as usize;
        match *self {
            Harness::RowSums { row_words, .. } => extent * self.block_threads() as usize * row_words as usize,
            Harness::ColumnSums { element_bytes, columns, .. } => {
                extent * TILE_ROWS * columns as usize * element_bytes as usize / 4
            }
            Harness::Scan { .. } => extent * 2 * self.block_threads() as usize,
            Harness::LdmatrixTile { row_halves, .. } => extent * LDMATRIX_TILE_ROWS * row_halves as usize / 2,
            Harness::Transpose { .. } | Harness::Gemm { .. } => extent * extent,
        }
    }

    fn output_len(&self, size: CheckSize) -> usize {
        match self {
            Harness::RowSums { .. } | Harness::ColumnSums { .. } | Harness::LdmatrixTile { .. } => {
                self.extent(size) as usize * self.block_threads() as usize
            }
            Harness::Transpose { .. } | Harness::Gemm { .. } | Harness::Scan { .. } => self.input_len(size),
        }
    }

    /// Input data of kind `input` at `size`.
    pub fn input(&self, input: Input, size: CheckSize) -> HostInput {
        let len = self.input_len(size);
        match (self, input) {
            (Harness::Gemm { .. }, Input::Index) => {
                // Small integers, so that every product and sum is exact in floats.
                let small = |modulus: usize| (0..len).map(|i| (i % modulus) as f32 - (modulus / 2) as f32).collect();
                HostInput::Matrices(small(17), small(13))
            }
            (Harness::Gemm { .. }, Input::Random) => HostInput::Matrices(random_floats(len), random_floats(len)),
            (Harness::ColumnSums { element_bytes: 1, .. }, Input::Index) => {
                // Element e holds e mod 256: four to a word, little-endian.
                HostInput::Words(
                    (0..len as u32).map(|w| u32::from_le_bytes([0, 1, 2, 3].map(|b| (4 * w + b) as u8))).collect(),
                )
            }
            (_, Input::Index) => HostInput::Words((0..len as u32).collect()),
            (_, Input::Random) => HostInput::Words(random_words(len)),
        }
    }

    /// The CPU's answer for `input` at `size`.
    pub fn expected(&self, input: &HostInput, size: CheckSize) -> Expected {
        match (*self, input) {
            (Harness::RowSums { row_words, iterations, .. }, HostInput::Words(words)) => Expected::Words(
                words
                    .chunks(row_words as usize)
                    .map(|row| row.iter().fold(0u32, |s, &w| s.wrapping_add(w)).wrapping_mul(iterations))
                    .collect(),
            ),
            (Harness::ColumnSums { element_bytes, columns, iterations, .. }, HostInput::Words(words)) => {
                let element = |e: usize| match element_bytes {
                    1 => (words[e / 4] >> (8 * (e % 4))) & 0xff,
                    16 => words[4 * e..4 * e + 4].iter().fold(0u32, |s, &w| s.wrapping_add(w)),
                    _ => words[e],
                };
                let (columns, threads) = (columns as usize, self.block_threads() as usize);
                let tile_elements = TILE_ROWS * columns;
                let out = (0..self.output_len(size)).map(|index| {
                    let (block, thread) = (index / threads, index % threads);
                    let (warp, lane) = (thread / 32, thread % 32);
                    let first = block * tile_elements + lane * columns;
                    let sum = (warp..columns).step_by(32).fold(0u32, |s, c| s.wrapping_add(element(first + c)));
                    sum.wrapping_mul(iterations)
                });
                Expected::Words(out.collect())
            }
            (Harness::Transpose { .. }, HostInput::Words(words)) => {
                Expected::Words(transposed(words, self.extent(size) as usize))
            }
            (Harness::Gemm { .. }, HostInput::Matrices(a, b)) => {
                let n = self.extent(size) as usize;
                Expected::Floats(cpu_product(a, b, n, 0..n).into_iter().flat_map(|(_, row)| row).collect())
            }
            (Harness::Scan { .. }, HostInput::Words(words)) => {
                Expected::Words(exclusive_scan(words, 2 * self.block_threads() as usize))
            }
            (Harness::LdmatrixTile { row_halves, iterations, .. }, HostInput::Words(words)) => {
                let row_words = row_halves as usize / 2;
                let threads = self.block_threads() as usize;
                let out = (0..self.output_len(size)).map(|index| {
                    let (block, thread) = (index / threads, index % threads);
                    let tile = &words[block * LDMATRIX_TILE_ROWS * row_words..];
                    ldmatrix_pass_hash(ldmatrix_x4_words(thread / 32, thread % 32, row_words).map(|word| tile[word]))
                        .wrapping_mul(iterations)
                });
                Expected::Words(out.collect())
            }
            (harness, _) => unreachable!("{harness:?} makes its own kind of input"),
        }
    }
}

/// `words`, an `n` x `n` matrix, transposed: row r of the answer is column r of `words`. Every
/// check process computes the answer at the timed size (8192^2 words) before its first check:
/// bands of rows on every CPU, and each band of 16 rows reads each cache line of a column 16 times
/// while it is cached, not once per row.
fn transposed(words: &[u32], n: usize) -> Vec<u32> {
    const BAND: usize = 16;
    let mut out = vec![0; n * n];
    out.par_chunks_mut((BAND * n).max(1)).enumerate().for_each(|(band, rows)| {
        for columns in (0..n).step_by(BAND) {
            for (k, row) in rows.chunks_mut(n).enumerate() {
                let r = band * BAND + k;
                for c in columns..n.min(columns + BAND) {
                    row[c] = words[c * n + r];
                }
            }
        }
    });
    out
}

/// The words of a tile (`row_words` to a row) that lane `lane` of warp `warp` receives from its
/// `ldmatrix.x4`s, one per 16 x 16 block of its 16 rows: matrix i of a block is its 8 x 8 quarter
/// at row 8 (i % 2), column 8 (i / 2), and lane l receives word l % 4 of the matrix's row l / 4.
fn ldmatrix_x4_words(warp: usize, lane: usize, row_words: usize) -> impl Iterator<Item = usize> {
    (0..row_words / 8).flat_map(move |block| {
        (0..4).map(move |i| {
            let row = 16 * warp + 8 * (i % 2) + lane / 4;
            row * row_words + 8 * block + 4 * (i / 2) + lane % 4
        })
    })
}

/// What a thread of an `ldmatrix-tile` kernel computes each pass (the passes then add up): the
/// registers it received, in order, hashed as `h = 31 h + r`. A sum would not see a chunk read
/// from another place in its row (each thread receives a word of every chunk of its two rows);
/// the hash does.
fn ldmatrix_pass_hash(registers: impl Iterator<Item = u32>) -> u32 {
    registers.fold(0u32, |hash, register| hash.wrapping_mul(31).wrapping_add(register))
}

/// `Err` says where the output first differs (words) or by how much (floats).
pub fn compare(output: &Output, expected: &Expected, tolerance: f64) -> Result<(), String> {
    match (output, expected) {
        (Output::Words(got), Expected::Words(want)) => {
            match got.iter().zip(want).enumerate().find(|(_, (g, w))| g != w) {
                None => Ok(()),
                Some((index, (got, want))) => Err(format!("out[{index}] is {got}, the CPU's answer is {want}")),
            }
        }
        (Output::Floats(got), Expected::Floats(want)) => {
            let error = relative_error(got, want);
            match error <= tolerance {
                true => Ok(()),
                false => Err(format!(
                    "relative error {error:.2e} against the CPU in double precision (tolerance {tolerance:.0e})"
                )),
            }
        }
        _ => unreachable!("an output and its expectation have the same kind"),
    }
}

/// Words of canary after every output buffer (4 MiB): a kernel that writes past `out` overwrites
/// them, which [`Run::checked_output`] reports. Every input has as many after it
/// ([`Run::changed_input`]).
pub const GUARD_WORDS: usize = 1 << 20;
/// The canary word (as bits, for float outputs too).
pub const CANARY: u32 = 0xa5c3_5a3c;

/// The first guard word (counted from the end of `out`) that no longer holds the canary.
pub fn broken_canary(guard: &[u32]) -> Option<usize> {
    guard.iter().position(|&w| w != CANARY)
}

/// Rows of an `n` x `n` GEMM output the timed check compares: one in each band of 32 rows (every
/// block's tile), at the offset `offset()` gives for that band: drawn at random for each band of
/// each check, so that a kernel cannot know which of its rows are compared.
pub fn sampled_rows(n: usize, mut offset: impl FnMut() -> usize) -> Vec<usize> {
    (0..n.div_ceil(32)).map(|band| (band * 32 + offset() % 32).min(n - 1)).collect()
}

/// The timed input and what the output is compared with after each timed launch: the whole
/// answer for words, the [`sampled_rows`] of a GEMM (the CPU's product of the whole matrix would
/// take seconds). Host memory only, made once and shared by every check of the exercise one
/// process makes: 8192^2 random words and their transpose cost the CPU more than a check's launches.
pub struct TimedData {
    pub input: HostInput,
    expected: Expected,
    rows: Option<Vec<usize>>,
    /// For words, the [`Checksum`] of the answer followed by the guard's canaries.
    checksum: Option<Checksum>,
}

/// A keyed sum over an output's words, each mixed with its index: what the GPU compares an
/// output of words with after a timed launch, so that the answer itself is never on the GPU,
/// where a kernel could copy it. The key is drawn at random by each process; a wrong output has
/// the answer's sum by a chance of about one in 2^64.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Checksum {
    key: u64,
    sum: u64,
}

impl Checksum {
    /// Of `words` followed by `canaries` words of [`CANARY`] (an output's guard).
    fn of(key: u64, words: &[u32], canaries: usize) -> Checksum {
        let answer = words.par_iter().enumerate().map(|(index, &word)| word_sum(key, index as u64, word));
        let guard =
            (words.len()..words.len() + canaries).into_par_iter().map(|index| word_sum(key, index as u64, CANARY));
        Checksum { key, sum: answer.chain(guard).reduce(|| 0, u64::wrapping_add) }
    }
}

/// One word's part of a [`Checksum`]: as [`CHECK_KERNELS`]' `word_sum` computes it.
fn word_sum(key: u64, index: u64, word: u32) -> u64 {
    mix(mix(key ^ index) ^ u64::from(word))
}

/// SplitMix64's finalizer: each bit of `z` changes about half the bits of the result.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl TimedData {
    pub fn new(harness: &Harness) -> TimedData {
        let input = harness.input(Input::Random, CheckSize::Timed);
        let (expected, rows) = match (harness, &input) {
            (Harness::Gemm { .. }, HostInput::Matrices(a, b)) => {
                let n = harness.extent(CheckSize::Timed) as usize;
                let rows = sampled_rows(n, || rand::random_range(0..32));
                let values = cpu_product(a, b, n, rows.iter().copied()).into_iter().flat_map(|(_, row)| row).collect();
                (Expected::Floats(values), Some(rows))
            }
            _ => (harness.expected(&input, CheckSize::Timed), None),
        };
        let checksum = match (&expected, &rows) {
            (Expected::Words(words), None) => Some(Checksum::of(rand::random(), words, GUARD_WORDS)),
            _ => None,
        };
        TimedData { input, expected, rows, checksum }
    }
}

/// [`compare`] for a [`TimedData`]'s sample: only `rows` (of an `n`-wide float output) when given.
pub fn compare_sample(
    output: &Output,
    expected: &Expected,
    rows: Option<&[usize]>,
    tolerance: f64,
) -> Result<(), String> {
    match (output, rows) {
        (Output::Floats(all), Some(rows)) => {
            let n = expected_width(expected, rows.len());
            let picked = rows.iter().flat_map(|&r| all[r * n..(r + 1) * n].iter().copied()).collect();
            compare(&Output::Floats(picked), expected, tolerance)
        }
        _ => compare(output, expected, tolerance),
    }
}

fn expected_width(expected: &Expected, rows: usize) -> usize {
    match expected {
        Expected::Floats(values) => values.len() / rows.max(1),
        Expected::Words(values) => values.len() / rows.max(1),
    }
}

/// The grader's own kernels. `first_difference` compares `n` words with as many others on the
/// GPU (an input with its copy from before a launch): the index of the first that differs, or
/// `u64::MAX`. `checksum` adds up each word's part of a [`Checksum`] (an output with its guard).
const CHECK_KERNELS: &str = r#"
extern "C" __global__ void first_difference(const unsigned* got, const unsigned* want, unsigned long long n,
                                            unsigned long long* first) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        if (got[i] != want[i]) atomicMin(first, i);
    }
}

__device__ unsigned long long mix(unsigned long long z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

__device__ unsigned long long word_sum(unsigned long long key, unsigned long long index, unsigned word) {
    return mix(mix(key ^ index) ^ word);
}

extern "C" __global__ void checksum(const unsigned* words, unsigned long long n, unsigned long long key,
                                    unsigned long long* sum) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long part = 0;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        part += word_sum(key, i, words[i]);
    }
    for (int lanes = 16; lanes > 0; lanes /= 2) part += __shfl_down_sync(0xffffffffu, part, lanes);
    if (threadIdx.x % 32 == 0) atomicAdd(sum, part);
}
"#;

/// The grader's own kernels (`first_difference`, `checksum`) loaded, once for all of a check's
/// runs and its verifier.
pub struct CheckKernels {
    first_difference: CudaFunction,
    checksum: CudaFunction,
}

impl CheckKernels {
    pub fn load(gpu: &Gpu) -> Result<CheckKernels, GpuError> {
        let module = gpu.module_from_text("check_kernels.cu", CHECK_KERNELS)?;
        Ok(CheckKernels {
            first_difference: module.function("first_difference")?,
            checksum: module.function("checksum")?,
        })
    }
}

/// How the grader's kernels are launched: enough blocks to fill an H100 several times over.
const CHECK_LAUNCH: LaunchConfig = LaunchConfig { grid_dim: (1024, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };

/// Checks a run's output after a launch against the CPU's answer, and its guard: for words by
/// their keyed checksum on the GPU (a few milliseconds, whatever the size; where it differs, the CPU
/// finds the first difference), for a GEMM on the CPU over [`sampled_rows`]. Every kernel timed
/// side by side is checked alike, so that each waits as long between launches.
pub struct Verifier<'g> {
    gpu: &'g Gpu,
    data: Arc<TimedData>,
    tolerance: f64,
    /// For words: the checksum kernel and where it adds up its sum.
    on_gpu: Option<(CudaFunction, CudaSlice<u64>)>,
}

/// A [`Verifier`]'s CPU side, made before the GPU is needed: the timed data and, for words, the
/// checksum kernel.
pub struct Expectation {
    data: Arc<TimedData>,
    tolerance: f64,
    checksum: Option<CudaFunction>,
}

impl Expectation {
    pub fn new(kernels: &CheckKernels, data: Arc<TimedData>, tolerance: f64) -> Expectation {
        let checksum = data.checksum.map(|_| kernels.checksum.clone());
        Expectation { data, tolerance, checksum }
    }

    /// The verifier, with the word its checksum kernel adds up into.
    pub fn upload(self, gpu: &Gpu) -> Result<Verifier<'_>, GpuError> {
        let Expectation { data, tolerance, checksum } = self;
        let on_gpu = match checksum {
            Some(function) => Some((function, gpu.upload(&[0u64])?)),
            None => None,
        };
        Ok(Verifier { gpu, data, tolerance, on_gpu })
    }
}

impl<'g> Verifier<'g> {
    /// `Err` says where the output of `run`'s last launch differs, or that it wrote past `out`.
    pub fn verify(&mut self, run: &Run) -> Result<Result<(), String>, GpuError> {
        let on_the_cpu = |run: &Run| {
            Ok(run.checked_output()?.and_then(|output| {
                compare_sample(&output, &self.data.expected, self.data.rows.as_deref(), self.tolerance)
            }))
        };
        match (&mut self.on_gpu, &run.buffers, self.data.checksum) {
            (Some((function, sum)), Buffers::Words { out, .. }, Some(want)) => {
                if checksum(self.gpu, function, &out.as_view(), want.key, sum)? == want.sum {
                    return Ok(Ok(()));
                }
                match on_the_cpu(run)? {
                    Ok(()) => Err(GpuError::WrongResult(
                        "the GPU's checksum of an output disagrees with the CPU's, whose every word is right: \
                         a fault of the grader, not of the kernel"
                            .into(),
                    )),
                    wrong => Ok(wrong),
                }
            }
            (None, ..) => on_the_cpu(run),
            _ => unreachable!("a checksum is made for words alone"),
        }
    }
}

/// The [`Checksum`] with `key` of `words`, through `function` (the compiled [`CHECK_KERNELS`]'
/// `checksum`), which adds it up in `sum`.
fn checksum(
    gpu: &Gpu,
    function: &CudaFunction,
    words: &CudaView<'_, u32>,
    key: u64,
    sum: &mut CudaSlice<u64>,
) -> Result<u64, GpuError> {
    gpu.stream().memcpy_htod(&[0u64], sum)?;
    let n = words.len() as u64;
    let mut launch = gpu.stream().launch_builder(function);
    launch.arg(words).arg(&n).arg(&key).arg(&mut *sum);
    // SAFETY: `checksum` takes (const unsigned*, u64, u64, u64*): `words` holds `n` words, `sum` one.
    unsafe { launch.launch(CHECK_LAUNCH) }?;
    Ok(gpu.download(sum)?[0])
}

/// The index of the first of `n` words of `got` that differs from `want`'s, through `function`
/// (the compiled [`CHECK_KERNELS`]' `first_difference`), which writes it to `first`.
fn first_difference(
    gpu: &Gpu,
    function: &CudaFunction,
    (got, want): (&CudaView<'_, u32>, &CudaView<'_, u32>),
    first: &mut CudaSlice<u64>,
) -> Result<Option<u64>, GpuError> {
    gpu.stream().memcpy_htod(&[u64::MAX], first)?;
    let n = got.len().min(want.len()) as u64;
    let mut launch = gpu.stream().launch_builder(function);
    launch.arg(got).arg(want).arg(&n).arg(&mut *first);
    // SAFETY: `first_difference` takes (const unsigned*, const unsigned*, u64, u64*): `got` and
    // `want` hold at least `n` words, `first` one.
    unsafe { launch.launch(CHECK_LAUNCH) }?;
    Ok(Some(gpu.download(first)?[0]).filter(|&index| index != u64::MAX))
}

/// What a launch changed in an input `len` words long (`name`), the first word at `word`.
fn input_changed(name: &str, len: usize, word: usize) -> String {
    match word.checked_sub(len) {
        None => format!("the launch wrote into {name} (word {word} of {len}), which every launch is given unchanged"),
        Some(after) => {
            format!("the launch wrote past the end of {name} ({len} words long): word {} after it", after + 1)
        }
    }
}

fn past_the_end(out_len: usize, word: usize) -> String {
    format!("the kernel wrote past the end of `out` ({out_len} words long): word {} after it was changed", word + 1)
}

/// One kernel with its buffers on the GPU, ready to launch again and again. The output buffer
/// has [`GUARD_WORDS`] of canary after it.
pub struct Run<'g> {
    gpu: &'g Gpu,
    function: CudaFunction,
    config: LaunchConfig,
    buffers: Buffers,
    out_len: usize,
}

enum Buffers {
    /// `(in, out, scalar)`: the iteration count, the matrix side or the number of words.
    Words {
        input: WordsInput,
        out: CudaSlice<u32>,
        scalar: u32,
    },
    Gemm {
        a: CudaSlice<f32>,
        b: CudaSlice<f32>,
        c: CudaSlice<f32>,
        n: u32,
    },
}

/// What a words kernel's first parameter is.
enum WordsInput {
    Words(CudaSlice<u32>),
    /// A tensor map of the input's halves per swizzle mode; the maps point into `halves`.
    TensorMaps {
        maps: Box<SwizzleMaps>,
        halves: CudaSlice<u16>,
        shape: Box2d,
    },
}

impl WordsInput {
    fn words(gpu: &Gpu, words: &[u32]) -> Result<WordsInput, GpuError> {
        Ok(WordsInput::Words(guarded_input(gpu, words, CANARY)?))
    }

    /// The maps of `rows` rows of `row_halves` halves (the words' 16-bit halves, in memory
    /// order), in boxes of [`LDMATRIX_TILE_ROWS`] whole rows.
    fn tensor_maps(gpu: &Gpu, words: &[u32], row_halves: u32) -> Result<WordsInput, GpuError> {
        let halves: Vec<u16> = words.iter().flat_map(|w| [*w as u16, (w >> 16) as u16]).collect();
        let rows = (halves.len() / row_halves as usize) as u64;
        let shape = Box2d {
            row_elements: row_halves.into(),
            rows,
            box_elements: row_halves,
            box_rows: LDMATRIX_TILE_ROWS as u32,
            swizzle: TmaSwizzle::None,
        };
        WordsInput::maps_over(gpu, guarded_input(gpu, &halves, CANARY as u16)?, shape)
    }

    fn maps_over(gpu: &Gpu, halves: CudaSlice<u16>, shape: Box2d) -> Result<WordsInput, GpuError> {
        Ok(WordsInput::TensorMaps { maps: Box::new(gpu.tensor_maps_every_swizzle(&halves, shape)?), halves, shape })
    }

    /// A copy made on the GPU, with maps of its own.
    fn copy(&self, gpu: &Gpu) -> Result<WordsInput, GpuError> {
        match self {
            WordsInput::Words(words) => Ok(WordsInput::Words(gpu.copy(words)?)),
            WordsInput::TensorMaps { halves, shape, .. } => WordsInput::maps_over(gpu, gpu.copy(halves)?, *shape),
        }
    }
}

/// `data` on the GPU followed by [`GUARD_WORDS`] words of `canary`s, which no kernel reads.
fn guarded_input<T: DeviceRepr + ValidAsZeroBits + Copy>(
    gpu: &Gpu,
    data: &[T],
    canary: T,
) -> Result<CudaSlice<T>, GpuError> {
    let mut buffer = guarded(gpu, data.len(), canary)?;
    gpu.stream().memcpy_htod(data, &mut buffer.slice_mut(..data.len()))?;
    Ok(buffer)
}

/// A run's inputs (each with its guard) as they were when it was made, kept on the GPU, and the
/// comparison that finds what a launch changed in them ([`Run::changed_input`]).
pub struct InputWatch {
    compare: CudaFunction,
    /// One copy for the runs made alongside one another ([`InputWatch::alongside`]).
    before: Arc<Vec<CudaSlice<u32>>>,
    first: CudaSlice<u64>,
}

impl InputWatch {
    /// The watch of a run made [`Run::alongside`] the watched one, before either launched: its
    /// inputs are a copy of the same words, so the same copy of them serves (a timed check's
    /// three runs make one copy of an input of 256 MiB, not three).
    pub fn alongside(&self, gpu: &Gpu) -> Result<InputWatch, GpuError> {
        Ok(InputWatch { compare: self.compare.clone(), before: self.before.clone(), first: gpu.upload(&[u64::MAX])? })
    }
}

/// An output buffer of `len` zeros followed by the guard's [`GUARD_WORDS`] words of canaries, made
/// on the GPU: only the guard crosses from the host.
fn guarded<T: DeviceRepr + ValidAsZeroBits + Copy>(gpu: &Gpu, len: usize, canary: T) -> Result<CudaSlice<T>, GpuError> {
    let guard = GUARD_WORDS * size_of::<u32>() / size_of::<T>();
    let mut buffer = gpu.zeros(len + guard)?;
    gpu.stream().memcpy_htod(&vec![canary; guard], &mut buffer.slice_mut(len..))?;
    Ok(buffer)
}

impl<'g> Run<'g> {
    pub fn new(
        gpu: &'g Gpu,
        function: &CudaFunction,
        harness: &Harness,
        size: CheckSize,
        input: &HostInput,
    ) -> Result<Run<'g>, GpuError> {
        let out_len = harness.output_len(size);
        let words_out = || guarded(gpu, out_len, CANARY);
        let buffers = match (harness, input) {
            (
                Harness::RowSums { iterations, .. }
                | Harness::ColumnSums { iterations, .. }
                | Harness::LdmatrixTile { fill: TileFill::Stores, iterations, .. },
                HostInput::Words(words),
            ) => Buffers::Words { input: WordsInput::words(gpu, words)?, out: words_out()?, scalar: *iterations },
            (Harness::LdmatrixTile { fill: TileFill::Tma, row_halves, iterations, .. }, HostInput::Words(words)) => {
                let input = WordsInput::tensor_maps(gpu, words, *row_halves)?;
                Buffers::Words { input, out: words_out()?, scalar: *iterations }
            }
            (Harness::Transpose { .. }, HostInput::Words(words)) => Buffers::Words {
                input: WordsInput::words(gpu, words)?,
                out: words_out()?,
                scalar: harness.extent(size),
            },
            (Harness::Scan { .. }, HostInput::Words(words)) => {
                Buffers::Words { input: WordsInput::words(gpu, words)?, out: words_out()?, scalar: words.len() as u32 }
            }
            (Harness::Gemm { .. }, HostInput::Matrices(a, b)) => Buffers::Gemm {
                a: guarded_input(gpu, a, f32::from_bits(CANARY))?,
                b: guarded_input(gpu, b, f32::from_bits(CANARY))?,
                c: guarded(gpu, out_len, f32::from_bits(CANARY))?,
                n: harness.extent(size),
            },
            (harness, _) => unreachable!("{harness:?} makes its own kind of input"),
        };
        Ok(Run { gpu, function: function.clone(), config: harness.launch_config(size), buffers, out_len })
    }

    /// A run of `function` on a copy of this run's input, made on the GPU (no kernel sees what
    /// another wrote into its input), with an output of its own.
    pub fn alongside(&self, function: &CudaFunction) -> Result<Run<'g>, GpuError> {
        let gpu = self.gpu;
        let buffers = match &self.buffers {
            Buffers::Words { input, scalar, .. } => {
                Buffers::Words { input: input.copy(gpu)?, out: guarded(gpu, self.out_len, CANARY)?, scalar: *scalar }
            }
            Buffers::Gemm { a, b, n, .. } => Buffers::Gemm {
                a: gpu.copy(a)?,
                b: gpu.copy(b)?,
                c: guarded(gpu, self.out_len, f32::from_bits(CANARY))?,
                n: *n,
            },
        };
        Ok(Run { gpu, function: function.clone(), config: self.config, buffers, out_len: self.out_len })
    }

    /// Each input (with its guard) as words, and its name as messages give it.
    fn inputs(&self) -> Vec<(CudaView<'_, u32>, &'static str)> {
        // SAFETY: every input holds whole 4-byte words (u32, f32, or an even count of u16: its
        // guard is whole words, and a TMA tile's halves are its words' halves), read as bits alone.
        fn words(view: Option<CudaView<'_, u32>>) -> CudaView<'_, u32> {
            view.expect("whole words")
        }
        match &self.buffers {
            Buffers::Words { input: WordsInput::Words(input), .. } => vec![(input.as_view(), "its input")],
            Buffers::Words { input: WordsInput::TensorMaps { halves, .. }, .. } => {
                vec![(words(unsafe { halves.transmute(halves.len() / 2) }), "its input")]
            }
            Buffers::Gemm { a, b, .. } => {
                vec![(words(unsafe { a.transmute(a.len()) }), "`A`"), (words(unsafe { b.transmute(b.len()) }), "`B`")]
            }
        }
    }

    /// Its inputs as they are now, to be compared after its launches ([`Run::changed_input`]) by
    /// `kernels`' comparison.
    pub fn watch_input(&self, kernels: &CheckKernels) -> Result<InputWatch, GpuError> {
        let compare = kernels.first_difference.clone();
        let before =
            self.inputs().iter().map(|(words, _)| self.gpu.stream().clone_dtod(words)).collect::<Result<_, _>>()?;
        Ok(InputWatch { compare, before: Arc::new(before), first: self.gpu.upload(&[u64::MAX])? })
    }

    /// `Some(what changed)` if a launch since `watch` was made changed an input of this run or the
    /// guard after it: no launch may leave anything there for the next (a sum kept in its input).
    pub fn changed_input(&self, watch: &mut InputWatch) -> Result<Option<String>, GpuError> {
        for ((now, name), before) in self.inputs().iter().zip(watch.before.iter()) {
            if let Some(word) = first_difference(self.gpu, &watch.compare, (now, &before.as_view()), &mut watch.first)?
            {
                return Ok(Some(input_changed(name, now.len() - GUARD_WORDS, word as usize)));
            }
        }
        Ok(None)
    }

    /// Zeroes the output (not its guard), so that the next launch's output is its own.
    pub fn clear_output(&mut self) -> Result<(), GpuError> {
        let stream = self.gpu.stream();
        let len = self.out_len;
        match &mut self.buffers {
            Buffers::Words { out, .. } => stream.memset_zeros(&mut out.slice_mut(..len))?,
            Buffers::Gemm { c, .. } => stream.memset_zeros(&mut c.slice_mut(..len))?,
        }
        Ok(())
    }

    /// The output, or `Err` naming how far past `out` the kernel wrote when it overwrote a canary.
    pub fn checked_output(&self) -> Result<Result<Output, String>, GpuError> {
        let (output, guard) = match &self.buffers {
            Buffers::Words { out, .. } => {
                let mut all: Vec<u32> = self.gpu.download(out)?;
                let guard = all.split_off(self.out_len);
                (Output::Words(all), guard)
            }
            Buffers::Gemm { c, .. } => {
                let mut all: Vec<f32> = self.gpu.download(c)?;
                let guard = all.split_off(self.out_len).into_iter().map(f32::to_bits).collect();
                (Output::Floats(all), guard)
            }
        };
        Ok(match broken_canary(&guard) {
            None => Ok(output),
            Some(word) => Err(past_the_end(self.out_len, word)),
        })
    }

    /// Enqueues one launch.
    pub fn launch(&mut self) -> Result<(), GpuError> {
        let mut launch = self.gpu.stream().launch_builder(&self.function);
        match &mut self.buffers {
            Buffers::Words { input: WordsInput::Words(words), out, scalar } => {
                launch.arg(&*words).arg(out).arg(&*scalar)
            }
            Buffers::Words { input: WordsInput::TensorMaps { maps, .. }, out, scalar } => {
                launch.arg(&**maps).arg(out).arg(&*scalar)
            }
            Buffers::Gemm { a, b, c, n } => launch.arg(&*a).arg(&*b).arg(c).arg(&*n).arg(&*n).arg(&*n),
        };
        // SAFETY: the kernel's signature was checked against the exercise's (words, scans: `(const
        // unsigned*, unsigned*, unsigned)`, a TMA tile: `(const __grid_constant__ SwizzleMaps,
        // unsigned*, unsigned)`, GEMM: `(const float*, const float*, float*, unsigned, unsigned,
        // unsigned)`), and the buffers hold what the launch shape makes it touch. A learner's
        // kernel that strays outside them faults on the GPU, which is reported.
        unsafe { launch.launch(self.config) }?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_sums_add_each_row_iterations_times() {
        let harness =
            Harness::RowSums { block: [2, 1], row_words: 32, check_blocks: 1, timed_blocks: 1, iterations: 3 };
        assert_eq!(harness.input_len(CheckSize::Check), 64);
        let HostInput::Words(words) = harness.input(Input::Index, CheckSize::Check) else { panic!("words") };
        let row0: u32 = (0..32).sum();
        let row1: u32 = (32..64).sum();
        assert_eq!(
            harness.expected(&HostInput::Words(words), CheckSize::Check),
            Expected::Words(vec![3 * row0, 3 * row1])
        );
        assert_eq!(harness.launch_config(CheckSize::Timed).grid_dim, (1, 1, 1));
        // Rows of 4 words: a 16-byte struct per thread.
        let harness = Harness::RowSums { block: [2, 1], row_words: 4, check_blocks: 2, timed_blocks: 1, iterations: 1 };
        assert_eq!(harness.input_len(CheckSize::Check), 16);
        let input = HostInput::Words((0..16).collect());
        assert_eq!(harness.expected(&input, CheckSize::Check), Expected::Words(vec![6, 22, 38, 54]));
    }

    #[test]
    fn column_sums_read_a_column_of_bytes_per_warp() {
        let harness = Harness::ColumnSums {
            block: [64, 1],
            element_bytes: 1,
            columns: 64,
            check_blocks: 1,
            timed_blocks: 1,
            iterations: 1,
        };
        let input = harness.input(Input::Index, CheckSize::Check);
        let HostInput::Words(words) = &input else { panic!("words") };
        assert_eq!(words.len(), 32 * 64 / 4);
        assert_eq!(words[1], u32::from_le_bytes([4, 5, 6, 7]));
        let Expected::Words(out) = harness.expected(&input, CheckSize::Check) else { panic!("words") };
        // Lane 1 of warp 0 reads row 1, columns 0 and 32: elements 64 and 96.
        assert_eq!(out[1], 64 + 96);
        // Lane 5 of warp 1 reads row 5, columns 1 and 33: elements 321 and 353, mod 256.
        assert_eq!(out[32 + 5], (321 % 256) + (353 % 256));
    }

    #[test]
    fn column_sums_of_16_byte_elements_add_their_four_words() {
        let harness = Harness::ColumnSums {
            block: [64, 1],
            element_bytes: 16,
            columns: 2,
            check_blocks: 1,
            timed_blocks: 1,
            iterations: 2,
        };
        let input = harness.input(Input::Index, CheckSize::Check);
        let HostInput::Words(words) = &input else { panic!("words") };
        assert_eq!(words.len(), 32 * 2 * 4);
        let Expected::Words(out) = harness.expected(&input, CheckSize::Check) else { panic!("words") };
        // Lane 3 of warp 1 reads row 3, column 1: element 7, words 28 to 31.
        assert_eq!(out[32 + 3], 2 * (28 + 29 + 30 + 31));
        assert_eq!(out[0], 2 * (1 + 2 + 3));
    }

    #[test]
    fn an_ldmatrix_tile_hashes_the_fragments_each_lane_receives() {
        // Lane 5 (row 1 of each matrix, word 1 of its row) of warp 1, rows of 32 halves: two
        // 16 x 16 blocks, matrix i at row 16 + 8 (i % 2) + 1, word 8 block + 4 (i / 2) + 1.
        let words: Vec<usize> = ldmatrix_x4_words(1, 5, 16).collect();
        let at = |row: usize, word: usize| row * 16 + word;
        let want = [at(17, 1), at(25, 1), at(17, 5), at(25, 5), at(17, 9), at(25, 9), at(17, 13), at(25, 13)];
        assert_eq!(words, want);
        // Every word of a warp's 16 rows is received exactly once per pass.
        let mut all: Vec<usize> = (0..32).flat_map(|lane| ldmatrix_x4_words(0, lane, 32)).collect();
        all.sort_unstable();
        assert_eq!(all, (0..16 * 32).collect::<Vec<_>>());

        let harness = Harness::LdmatrixTile {
            block: [128, 1],
            row_halves: 32,
            fill: TileFill::Tma,
            check_blocks: 2,
            timed_blocks: 4,
            iterations: 3,
        };
        assert_eq!(harness.input_len(CheckSize::Check), 2 * 64 * 16);
        assert_eq!(harness.launch_config(CheckSize::Timed).grid_dim, (4, 1, 1));
        let input = harness.input(Input::Index, CheckSize::Check);
        let Expected::Words(out) = harness.expected(&input, CheckSize::Check) else { panic!("words") };
        let second_block = 64 * 16;
        let hash = want.iter().fold(0u32, |h, w| h.wrapping_mul(31).wrapping_add((second_block + w) as u32));
        assert_eq!(out[128 + 32 + 5], hash.wrapping_mul(3), "block 1, warp 1, lane 5");
    }

    #[test]
    fn a_chunk_read_from_another_place_in_its_row_changes_the_output() {
        // Lane 5 of warp 1 again, rows of 32 halves (16 words, 4 chunks); reads that swap chunks 0
        // and 2 of every row, as a read with the wrong swizzle would, get the same words in
        // another order: their sum is the same, their hash is not.
        let swap = |word: usize| match (word % 16) / 4 {
            0 | 2 => word ^ 8,
            _ => word,
        };
        let right: Vec<u32> = ldmatrix_x4_words(1, 5, 16).map(|w| w as u32).collect();
        let wrong: Vec<u32> = ldmatrix_x4_words(1, 5, 16).map(|w| swap(w) as u32).collect();
        assert_ne!(right, wrong);
        assert_eq!(right.iter().sum::<u32>(), wrong.iter().sum::<u32>(), "a sum cannot tell");
        assert_ne!(ldmatrix_pass_hash(right.into_iter()), ldmatrix_pass_hash(wrong.into_iter()));
    }

    #[test]
    fn scans_start_again_at_every_block_and_wrap() {
        let harness = Harness::Scan { block: [2, 1], check_blocks: 2, timed_blocks: 3 };
        assert_eq!(harness.input_len(CheckSize::Check), 8);
        assert_eq!(harness.launch_config(CheckSize::Timed).grid_dim, (3, 1, 1));
        let input = HostInput::Words(vec![1, 2, 3, 4, 5, 6, u32::MAX, 8]);
        assert_eq!(harness.expected(&input, CheckSize::Check), Expected::Words(vec![0, 1, 3, 6, 0, 5, 11, 10]));
    }

    #[test]
    fn transpose_and_gemm_answers() {
        let harness = Harness::Transpose { block: [2, 1], check_n: 4, timed_n: 8 };
        assert_eq!(harness.launch_config(CheckSize::Timed).grid_dim, (4, 4, 1));
        let Expected::Words(out) = harness.expected(&harness.input(Input::Index, CheckSize::Check), CheckSize::Check)
        else {
            panic!("words")
        };
        assert_eq!(out[1], 4, "out(0, 1) = in(1, 0)");
        // Tiles that do not divide the side: every word lands where the definition puts it.
        let n = 100;
        let words = random_words(n * n);
        let by_definition: Vec<u32> = (0..n * n).map(|i| words[(i % n) * n + i / n]).collect();
        assert_eq!(transposed(&words, n), by_definition);
        let gemm = Harness::Gemm { block: [2, 2], check_n: 2, timed_n: 2 };
        let input = HostInput::Matrices(vec![1.0, 2.0, 3.0, 4.0], vec![1.0, 0.0, 0.0, 1.0]);
        assert_eq!(gemm.expected(&input, CheckSize::Check), Expected::Floats(vec![1.0, 2.0, 3.0, 4.0]));
        let HostInput::Matrices(a, _) = gemm.input(Input::Index, CheckSize::Check) else { panic!("matrices") };
        assert_eq!(a, vec![-8.0, -7.0, -6.0, -5.0]);
    }

    #[test]
    fn a_guard_tells_where_it_was_overwritten_and_gemm_checks_a_row_of_every_block_band() {
        let mut guard = vec![CANARY; GUARD_WORDS];
        assert_eq!(broken_canary(&guard), None);
        guard[1000] = 1;
        assert_eq!(broken_canary(&guard), Some(1000));
        let mut offsets = [3, 31, 0].into_iter().cycle();
        let rows = sampled_rows(2048, || offsets.next().unwrap());
        assert_eq!(rows.len(), 64);
        assert!(rows.iter().enumerate().all(|(band, &row)| row / 32 == band), "one row in each band of 32");
        assert_eq!(rows[..3], [3, 63, 64], "each band's own offset");
        let gemm = Harness::Gemm { block: [2, 2], check_n: 2, timed_n: 64 };
        let data = TimedData::new(&gemm);
        let (expected, rows) = (&data.expected, data.rows.as_deref());
        assert_eq!(rows.map(<[usize]>::len), Some(2));
        let Expected::Floats(full) = gemm.expected(&data.input, CheckSize::Timed) else { panic!("floats") };
        let output = Output::Floats(full.iter().map(|&v| v as f32).collect());
        assert_eq!(compare_sample(&output, expected, rows, 1e-6), Ok(()));
        let mut skipped = full.iter().map(|&v| v as f32).collect::<Vec<_>>();
        // A kernel that skips the second band of rows: its sampled row, wherever it is, is checked.
        skipped[32 * 64..64 * 64].fill(0.0);
        assert!(compare_sample(&Output::Floats(skipped), expected, rows, 1e-6).is_err());
    }

    #[test]
    fn a_checksum_changes_with_any_word_and_any_two_words_swapped_and_with_its_key() {
        let words: Vec<u32> = (0..4096).map(|i| i * 7 + 1).collect();
        let sum = Checksum::of(42, &words, 0);
        assert_eq!(sum, Checksum::of(42, &words, 0), "the same words, the same sum");
        assert_ne!(sum.sum, Checksum::of(43, &words, 0).sum, "another key, another sum");
        for at in [0, 1, 2047, 4095] {
            for flip in [1, 1 << 31, 0xffff_ffff] {
                let mut changed = words.clone();
                changed[at] ^= flip;
                assert_ne!(Checksum::of(42, &changed, 0).sum, sum.sum, "word {at} ^ {flip:#x}");
            }
        }
        let mut swapped = words.clone();
        swapped.swap(10, 11);
        assert_ne!(Checksum::of(42, &swapped, 0).sum, sum.sum, "a word in another's place");
        assert_ne!(Checksum::of(42, &words[..4095], 0).sum, sum.sum, "one word fewer");
        // The timed data's sum covers the answer and the guard's canaries after it.
        let transpose = Harness::Transpose { block: [32, 8], check_n: 64, timed_n: 64 };
        let data = TimedData::new(&transpose);
        let (Some(checksum), Expected::Words(answer)) = (data.checksum, &data.expected) else { panic!("words") };
        let guarded: Vec<u32> = answer.iter().copied().chain(std::iter::repeat_n(CANARY, GUARD_WORDS)).collect();
        assert_eq!(Checksum::of(checksum.key, &guarded, 0), checksum);
        assert_eq!(Checksum::of(checksum.key, answer, GUARD_WORDS), checksum, "the guard's canaries counted in place");
        assert!(TimedData::new(&Harness::Gemm { block: [2, 2], check_n: 2, timed_n: 64 }).checksum.is_none());
    }

    #[test]
    fn a_changed_input_is_told_inside_it_or_past_its_end() {
        assert_eq!(
            input_changed("`B`", 4096, 17),
            "the launch wrote into `B` (word 17 of 4096), which every launch is given unchanged"
        );
        assert_eq!(
            input_changed("its input", 4096, 4096 + 2),
            "the launch wrote past the end of its input (4096 words long): word 3 after it"
        );
    }

    #[test]
    fn comparisons_name_the_first_difference() {
        let want = Expected::Words(vec![1, 2, 3]);
        assert_eq!(compare(&Output::Words(vec![1, 2, 3]), &want, 0.0), Ok(()));
        assert_eq!(
            compare(&Output::Words(vec![1, 5, 3]), &want, 0.0),
            Err("out[1] is 5, the CPU's answer is 2".to_owned())
        );
        let want = Expected::Floats(vec![1.0, 1.0]);
        assert!(compare(&Output::Floats(vec![1.0, 1.00001]), &want, 1e-4).is_ok());
        let error = compare(&Output::Floats(vec![1.0, 2.0]), &want, 1e-4).unwrap_err();
        assert_eq!(error, "relative error 7.07e-1 against the CPU in double precision (tolerance 1e-4)");
        assert!(compare(&Output::Floats(vec![f32::NAN, 1.0]), &want, 1e-4).is_err(), "NaN is never close");
    }
}
