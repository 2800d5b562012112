//! The kernel shape most lessons use: `kernel(const unsigned* words, unsigned* out, unsigned a,
//! unsigned b)`, where the block copies `words` into a shared tile with `fill_tile` (from
//! `kernels/shared_load.cuh`), works on it, and each thread writes one word of `out`, which is
//! checked against a CPU reference.

use bank_model::{Op, Request, Width};
use cuda_kernels::{CudaFunction, CudaSlice, Gpu, GpuError, LaunchConfig, PushKernelArg};

use std::cell::Cell;

use crate::{DeclaredAccess, KernelRun, OutputCheck, Prepared};

thread_local! {
    /// The next seed while [`with_fixed_inputs`] runs on this thread.
    static FIXED_SEED: Cell<Option<u64>> = const { Cell::new(None) };
}

/// Runs `f` with every [`random_words`] call in it seeded from one fixed sequence, so that
/// outputs repeat from run to run (the GPU suite snapshots them).
pub fn with_fixed_inputs<T>(f: impl FnOnce() -> T) -> T {
    let outer = FIXED_SEED.replace(Some(1));
    let result = f();
    FIXED_SEED.set(outer);
    result
}

/// `count` random-looking words, different on every call (unless inside [`with_fixed_inputs`]):
/// inputs that depend on their index and are never all zeros.
pub fn random_words(count: usize) -> Vec<u32> {
    let seed = match FIXED_SEED.get() {
        Some(seed) => {
            FIXED_SEED.set(Some(splitmix(seed)));
            seed
        }
        None => std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64),
    };
    (0..count as u64).map(|i| splitmix(seed ^ i) as u32).collect()
}

/// A well-mixed 64-bit hash.
fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The stores of `fill_tile(tile, words, count)` in `blocks` blocks: consecutive 4-byte words,
/// one warp instruction per 32 words (the last may be partial), conflict-free.
pub fn fill_tile_access(blocks: u32, words: u32) -> DeclaredAccess {
    DeclaredAccess {
        name: "tile[i] = words[i]".into(),
        request: Request::strided(Op::Store, Width::W4, 1).expect("aligned"),
        executions: blocks as u64 * words.div_ceil(32) as u64,
    }
}

/// What `load<Element>` of `kernels/shared_load.cuh` returns for the `width`-byte element at byte
/// `byte` of a tile holding `words`: a narrow element's value (it sits inside one little-endian
/// word), or the wrapping sum of a wide element's 32-bit words.
pub fn loaded_value(words: &[u32], width: Width, byte: u32) -> u32 {
    let word = (byte / 4) as usize;
    let shift = 8 * (byte % 4);
    match width {
        Width::W1 => (words[word] >> shift) & 0xff,
        Width::W2 => (words[word] >> shift) & 0xffff,
        _ => words[word..word + width.bytes() as usize / 4].iter().fold(0, |sum: u32, &w| sum.wrapping_add(w)),
    }
}

/// What a thread holds after adding `values` up `iterations` times, wrapping as `unsigned` does.
pub fn repeated_sum(values: impl IntoIterator<Item = u32>, iterations: u32) -> u32 {
    values.into_iter().fold(0u32, |sum, value| sum.wrapping_add(value)).wrapping_mul(iterations)
}

/// Launch shape and arguments of a [`words_kernel`] run.
pub struct WordsLaunch {
    pub blocks: u32,
    pub threads: u32,
    /// The two `unsigned` arguments after `words` and `out`.
    pub args: [u32; 2],
}

/// Launch shape of a [`words_kernel`] run whose second `unsigned` argument is the number of
/// iterations of its loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch {
    pub blocks: u32,
    pub threads: u32,
    pub iterations: u32,
}

impl Launch {
    /// Warps in the launch, a partial warp counting as one.
    pub fn warps(self) -> u64 {
        self.blocks as u64 * self.threads.div_ceil(32) as u64
    }

    /// The arguments of the launch, given the kernel's first `unsigned` argument.
    pub fn with_first_argument(self, first: u32) -> WordsLaunch {
        WordsLaunch { blocks: self.blocks, threads: self.threads, args: [first, self.iterations] }
    }
}

/// A run of a `(words, out, a, b)` kernel that its spec alone describes. A lesson whose runs are
/// all such specs builds its runs with [`words_runs`] and prepares them with [`prepare_words`].
pub trait WordsRun: Clone {
    /// The run's label in tables.
    fn label(&self) -> String;
    /// The `extern "C"` kernel.
    fn kernel(&self) -> &'static str;
    /// Every shared-memory instruction of the run.
    fn accesses(&self) -> Vec<DeclaredAccess>;
    /// The words the kernel reads.
    fn input(&self) -> Vec<u32>;
    /// The launch shape and the kernel's two `unsigned` arguments.
    fn arguments(&self) -> WordsLaunch;
    /// The CPU reference: what thread `thread` writes, given the input words.
    fn expected(&self, words: &[u32], thread: usize) -> u32;
}

/// One kernel run per spec, in order.
pub fn words_runs<S: WordsRun>(specs: impl IntoIterator<Item = S>) -> Vec<KernelRun<S>> {
    specs
        .into_iter()
        .map(|spec| KernelRun { label: spec.label(), kernel: Some(spec.kernel()), accesses: spec.accesses(), spec })
        .collect()
}

/// `spec`'s kernel from `file`, ready to launch and check against `spec.expected`.
pub fn prepare_words<'g, S: WordsRun + 'g>(
    gpu: &'g Gpu,
    file: &str,
    spec: &S,
) -> Result<Box<dyn Prepared + 'g>, GpuError> {
    let spec = spec.clone();
    words_kernel(gpu, file, spec.kernel(), spec.input(), spec.arguments(), move |words, thread| {
        spec.expected(words, thread)
    })
}

/// Prepares `kernel` from `file` with `words` as input; `expected(words, thread)` is the CPU
/// reference for what thread `thread` writes.
pub fn words_kernel<'g>(
    gpu: &'g Gpu,
    file: &str,
    kernel: &str,
    words: Vec<u32>,
    launch: WordsLaunch,
    expected: impl Fn(&[u32], usize) -> u32 + 'g,
) -> Result<Box<dyn Prepared + 'g>, GpuError> {
    Ok(Box::new(WordsKernel {
        gpu,
        function: gpu.function(file, kernel)?,
        device_words: gpu.upload(&words)?,
        words,
        out: gpu.zeros((launch.blocks * launch.threads) as usize)?,
        config: LaunchConfig {
            grid_dim: (launch.blocks, 1, 1),
            block_dim: (launch.threads, 1, 1),
            shared_mem_bytes: 0,
        },
        args: launch.args,
        expected: Box::new(expected),
    }))
}

/// The CPU reference: what thread `thread` writes, given the input words.
type Reference<'g> = Box<dyn Fn(&[u32], usize) -> u32 + 'g>;

struct WordsKernel<'g> {
    gpu: &'g Gpu,
    function: CudaFunction,
    words: Vec<u32>,
    device_words: CudaSlice<u32>,
    out: CudaSlice<u32>,
    config: LaunchConfig,
    args: [u32; 2],
    expected: Reference<'g>,
}

impl Prepared for WordsKernel<'_> {
    fn launch(&mut self) -> Result<(), GpuError> {
        let mut launch = self.gpu.stream().launch_builder(&self.function);
        launch.arg(&self.device_words).arg(&mut self.out).arg(&self.args[0]).arg(&self.args[1]);
        // SAFETY: the kernel takes (const unsigned* words, unsigned* out, unsigned, unsigned);
        // `out` holds one word per launched thread, `words` what the kernel's fill reads.
        unsafe { launch.launch(self.config) }?;
        Ok(())
    }

    fn check(&mut self) -> Result<OutputCheck, GpuError> {
        let out = self.gpu.download(&self.out)?;
        let wrong = out.iter().enumerate().find(|&(thread, &value)| value != (self.expected)(&self.words, thread));
        match wrong {
            None => Ok(OutputCheck::exact(&out)),
            Some((thread, &value)) => Err(GpuError::WrongResult(format!(
                "thread {thread} wrote {value}, the CPU reference says {}",
                (self.expected)(&self.words, thread)
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_words_differ_and_are_not_zero() {
        let words = random_words(1024);
        assert_eq!(words.len(), 1024);
        assert!(words.iter().filter(|&&w| w == 0).count() < 2);
        let mut sorted = words.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert!(sorted.len() > 1000, "index-dependent values");
    }

    #[test]
    fn fixed_inputs_repeat_from_run_to_run_but_not_from_call_to_call() {
        let two_calls = || (random_words(64), random_words(64));
        let (first, second) = with_fixed_inputs(two_calls);
        assert_ne!(first, second, "each call gets the next seed");
        assert_eq!(with_fixed_inputs(two_calls), (first.clone(), second), "the same sequence every time");
        assert_ne!(random_words(64), first, "outside, inputs are fresh");
    }

    #[test]
    fn loaded_values_follow_little_endian_bytes() {
        let words = [0x4433_2211, 0x8877_6655, 1, 2];
        assert_eq!(loaded_value(&words, Width::W1, 1), 0x22);
        assert_eq!(loaded_value(&words, Width::W2, 6), 0x8877);
        assert_eq!(loaded_value(&words, Width::W4, 4), 0x8877_6655);
        assert_eq!(loaded_value(&words, Width::W8, 0), 0x4433_2211u32.wrapping_add(0x8877_6655));
        assert_eq!(loaded_value(&words, Width::W16, 0), 0x4433_2211u32.wrapping_add(0x8877_6655).wrapping_add(3));
    }

    #[test]
    fn repeated_sums_wrap_like_unsigned() {
        assert_eq!(repeated_sum([1, 2, 3], 4), 24);
        assert_eq!(repeated_sum([u32::MAX, 2], 3), 3);
    }

    #[test]
    fn fill_counts_partial_warps() {
        assert_eq!(fill_tile_access(2, 8192).executions, 2 * 256);
        assert_eq!(fill_tile_access(1, 264).executions, 9);
        assert_eq!(fill_tile_access(1, 264).request.analyze().wavefronts, 1);
    }
}
