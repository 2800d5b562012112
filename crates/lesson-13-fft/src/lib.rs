//! Lesson 13: FFT butterflies.
//!
//! A radix-2 decimation-in-time FFT of 512 complex floats (`float2`, 8 bytes) per block in shared
//! memory. At stride `s` thread `t` joins elements `a = 2(t - t % s) + t % s` and `b = a + s`. The
//! H100 serves 8-byte accesses by half-warps, 16 lanes over the 16 two-bank slots of a 128-byte
//! row of the banks, and below stride 16 every half-warp touches only half the slots, twice each:
//! a 2-way conflict at four of the nine levels. Padding one `float2` per 32 (`shared[512 + 16]`)
//! changes nothing, one per 16 mends stride 1 only, and keeping the second 16 of every 32 elements
//! in reverse order is conflict-free at every level with no padding. cuFFT is the clock's
//! reference, a CPU DFT in double precision the check of every output.

use bank_model::{Op, Request, WARP_SIZE, Width};
use cuda_kernels::{
    CudaFunction, CudaSlice, Gpu, GpuError, GpuInfo, LaunchConfig, PushKernelArg,
    fft::{Fft, float2},
};
use lesson_kit::{
    DeclaredAccess, KernelRun, Lesson, OutputCheck, Prepared, Report, RunSize, TimeRatio, TimedRun, Tone,
    bank_table::add_bank_grid,
    cells::{COUNTED_AND_TIMED, counted_and_timed_cells, format_ratio, median_ms},
    floats::{random_floats, relative_error},
    styled,
};

/// The kernels' source file in `kernels/`.
pub const KERNEL_FILE: &str = "fft.cu";
/// Complex floats each block transforms (`POINTS` in the kernels).
pub const POINTS: u32 = 512;
/// Threads per block (`THREADS` in the kernels): one butterfly each per level.
pub const THREADS: u32 = POINTS / 2;
const WARPS: u32 = THREADS / WARP_SIZE as u32;
/// Transforms at the profiling size; every one is checked against the CPU's DFT.
pub const PROFILED_BATCH: u32 = 4;
/// Transforms of a timed batch checked against the CPU's DFT, spread over the batch.
const CHECKED_TRANSFORMS: u32 = 16;
/// The stride the bank grids show: the warp's half-warps each touch half the slots.
const SHOWN_STRIDE: u32 = 2;
/// FP32 rounding over the 9 levels leaves a normwise relative error near 1e-7 (each level adds a
/// few units of 6e-8 in the last place); a wrong index or twiddle leaves one near 1.
const TOLERANCE: f64 = 1e-5;

/// The headline figures: each divides the times of two runs measured side by side.
const FIGURES: [TimeRatio; 3] = [
    TimeRatio {
        key: "fft_natural_vs_mirrored",
        label: "512-point FFTs in shared memory, tile[i] time over tile[i ^ ((i >> 4 & 1) * 15)]",
        numerator: "tile[i]",
        denominator: "tile[i ^ ((i >> 4 & 1) * 15)]",
    },
    TimeRatio {
        key: "fft_natural_vs_cufft",
        label: "512-point FFTs, tile[i] time over cuFFT's for the same batch",
        numerator: "tile[i]",
        denominator: "cuFFT",
    },
    TimeRatio {
        key: "fft_mirrored_vs_cufft",
        label: "512-point FFTs, tile[i ^ ((i >> 4 & 1) * 15)] time over cuFFT's for the same batch",
        numerator: "tile[i ^ ((i >> 4 & 1) * 15)]",
        denominator: "cuFFT",
    },
];

/// Where element `i` of the transform is kept in the tile (`Layout::at` in the kernels).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    Natural,
    /// The note's `float2 shared[512 + 16]`: one float2 of padding after every 32.
    Pad32,
    /// One float2 of padding after every 16, a row of the banks.
    Pad16,
    /// The second 16 of every 32 elements in reverse order: `i ^ 15` when bit 4 of `i` is set.
    Mirrored,
}

impl Layout {
    pub const ALL: [Layout; 4] = [Layout::Natural, Layout::Pad32, Layout::Pad16, Layout::Mirrored];

    fn kernel(self) -> &'static str {
        match self {
            Layout::Natural => "fft_natural",
            Layout::Pad32 => "fft_pad32",
            Layout::Pad16 => "fft_pad16",
            Layout::Mirrored => "fft_mirrored",
        }
    }

    /// The run's label: the tile index of element `i`.
    pub fn label(self) -> &'static str {
        match self {
            Layout::Natural => "tile[i]",
            Layout::Pad32 => "tile[i + i / 32]",
            Layout::Pad16 => "tile[i + i / 16]",
            Layout::Mirrored => "tile[i ^ ((i >> 4 & 1) * 15)]",
        }
    }

    /// The tile index of element `i`.
    pub fn at(self, i: u32) -> u32 {
        match self {
            Layout::Natural => i,
            Layout::Pad32 => i + i / 32,
            Layout::Pad16 => i + i / 16,
            Layout::Mirrored => i ^ ((i >> 4 & 1) * 15),
        }
    }

    /// The tile's size in float2s (`Layout::ELEMENTS` in the kernels).
    pub fn elements(self) -> u32 {
        match self {
            Layout::Natural | Layout::Mirrored => POINTS,
            Layout::Pad32 => POINTS + POINTS / 32,
            Layout::Pad16 => POINTS + POINTS / 16,
        }
    }

    /// Warp `warp`'s 8-byte access when thread `t` touches element `element(t)`.
    fn warp_request(self, op: Op, warp: u32, element: impl Fn(u32) -> u32) -> Request {
        Request::elements(op, Width::W8, |lane| self.at(element(warp * WARP_SIZE as u32 + lane)))
    }

    /// Warp `warp`'s access to element `a` (`operand` 0) or `b` (1) at stride `s`.
    pub fn level_request(self, op: Op, warp: u32, s: u32, operand: u32) -> Request {
        self.warp_request(op, warp, |t| butterfly_element(t, s, operand))
    }

    /// The most wavefronts any warp's access to `a` or `b` takes at stride `s`.
    pub fn level_cost(self, s: u32) -> u32 {
        (0..WARPS)
            .flat_map(|warp| [0, 1].map(|operand| self.level_request(Op::Load, warp, s, operand)))
            .map(|request| request.analyze().wavefronts)
            .max()
            .unwrap_or(0)
    }

    /// Every shared-memory instruction `blocks` blocks execute, in the kernel's order.
    fn accesses(self, blocks: u32) -> Vec<DeclaredAccess> {
        let mut accesses = Vec::new();
        let mut add = |name: String, op, element: &dyn Fn(u32) -> u32| {
            let requests = (0..WARPS).map(|warp| (warp, self.warp_request(op, warp, element)));
            accesses.extend(DeclaredAccess::per_warp_group(blocks, requests, |first, last| {
                format!("{name} (warps {first}-{last})")
            }));
        };
        add("tile[at(t)] = in[reverse(t)]".into(), Op::Store, &|t| t);
        add(format!("tile[at(t + {THREADS})] = in[reverse(t + {THREADS})]"), Op::Store, &|t| t + THREADS);
        for s in strides() {
            for (op, operand, access) in [
                (Op::Load, 0, "tile[at(a)]"),
                (Op::Load, 1, "tile[at(b)]"),
                (Op::Store, 0, "tile[at(a)] ="),
                (Op::Store, 1, "tile[at(b)] ="),
            ] {
                add(format!("s={s}: {access}"), op, &|t| butterfly_element(t, s, operand));
            }
        }
        add("out[t] = tile[at(t)]".into(), Op::Load, &|t| t);
        add(format!("out[t + {THREADS}] = tile[at(t + {THREADS})]"), Op::Load, &|t| t + THREADS);
        accesses
    }
}

/// The butterflies' strides, one level each: 1, 2, 4, ..., `POINTS / 2`.
pub fn strides() -> impl Iterator<Item = u32> {
    (0..POINTS.trailing_zeros()).map(|k| 1 << k)
}

/// The element thread `t` reads and writes at stride `s`: `a = 2(t - j) + j` with `j = t % s`
/// (`operand` 0), or `b = a + s` (1).
pub fn butterfly_element(t: u32, s: u32, operand: u32) -> u32 {
    let j = t % s;
    2 * (t - j) + j + operand * s
}

/// The forward DFT of each transform of `POINTS` complex values in `signal` (real and imaginary
/// parts interleaved), in double precision: `X[k] = sum_n x[n] exp(-2 pi i n k / POINTS)`.
pub fn dft(signal: &[f32]) -> Vec<f64> {
    let n = POINTS as usize;
    let twiddles: Vec<(f64, f64)> =
        (0..n).map(|m| (-2.0 * std::f64::consts::PI * m as f64 / n as f64).sin_cos()).collect();
    signal
        .chunks(2 * n)
        .flat_map(|x| {
            let twiddles = &twiddles;
            (0..n).flat_map(move |k| {
                let (mut re, mut im) = (0.0, 0.0);
                for m in 0..n {
                    let (sin, cos) = twiddles[m * k % n];
                    let (xr, xi) = (x[2 * m] as f64, x[2 * m + 1] as f64);
                    re += xr * cos - xi * sin;
                    im += xr * sin + xi * cos;
                }
                [re, im]
            })
        })
        .collect()
}

/// A kernel of `fft.cu` with its layout, or cuFFT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transform {
    Kernel(Layout),
    Cufft,
}

pub struct FftLesson;

/// The lesson, as the course's list of lessons names it.
pub static LESSON: FftLesson = FftLesson;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    pub transform: Transform,
    /// Transforms of `POINTS` points, one block each.
    pub batch: u32,
}

impl Lesson for FftLesson {
    type Spec = Spec;

    const NUMBER: u32 = 13;
    const TITLE: &'static str = "FFT butterflies";
    const KERNEL_FILES: &'static [&'static str] = &[KERNEL_FILE];

    fn reference(&self) -> &'static str {
        "the CPU's DFT in double precision (every transform at the profiling size, 16 of each timed batch)"
    }

    fn model(&self, report: &mut Report) {
        report.text(format!(
            "A block of {THREADS} threads transforms {POINTS} complex floats (float2, 8 bytes) in {} levels;\n\
             at stride s thread t joins elements a = 2(t - t % s) + t % s and b = a + s, kept at tile[at(a)] and tile[at(b)].\n\
             Chapter 13 of the book explains the butterflies and each layout's at(i).",
            POINTS.trailing_zeros()
        ));
        report.heading("Predicted wavefronts per warp access, level by level (8 bytes: ideal 2)");
        let rows = strides()
            .enumerate()
            .map(|(level, s)| {
                let mut row = vec![s.into(), (level + 1).into()];
                row.extend(Layout::ALL.map(|layout| {
                    let worst = layout.level_cost(s);
                    styled(worst, Tone::of_wavefronts(worst, 2))
                }));
                row
            })
            .collect();
        report.table(["stride s", "level"].into_iter().chain(Layout::ALL.map(Layout::label)), rows);
        report.text("Each cell is the worst warp load or store of a or b at that level; they cost the same.");
        report.heading("Per block");
        let rows = Layout::ALL
            .into_iter()
            .map(|layout| {
                let accesses = layout.accesses(1);
                let requests: u64 = accesses.iter().map(|a| a.executions).sum();
                let total = |cost: fn(&Request) -> u32| -> u64 {
                    accesses.iter().map(|a| a.executions * cost(&a.request) as u64).sum()
                };
                let (wavefronts, ideal) = (total(Request::wavefronts), total(Request::ideal_wavefronts));
                vec![
                    layout.label().into(),
                    (8 * layout.elements()).into(),
                    requests.into(),
                    styled(wavefronts, Tone::of_wavefronts(wavefronts as u32, ideal as u32)),
                    ideal.into(),
                    format_ratio(wavefronts as f64 / requests as f64).into(),
                ]
            })
            .collect();
        report.table(["layout", "shared bytes", "warp accesses", "wavefronts", "ideal", "model wf/req"], rows);
        report.text(format!(
            "Every shared access of a block: {} copies in, {} loads and stores at each level, {} copies out.",
            2 * WARPS,
            4 * WARPS,
            2 * WARPS
        ));
        let a = |t| butterfly_element(t, SHOWN_STRIDE, 0);
        report.heading(format!(
            "Stride {SHOWN_STRIDE} (level {}): warp 0 reads tile[at(a)], a = {}, {}, {}, {}, ...",
            SHOWN_STRIDE.trailing_zeros() + 1,
            a(0),
            a(1),
            a(2),
            a(3)
        ));
        for layout in Layout::ALL {
            let request = layout.level_request(Op::Load, 0, SHOWN_STRIDE, 0);
            report.text(format!("{}:", layout.label()));
            add_bank_grid(report, &request, &request.analyze());
        }
        report.text("A float2 covers two banks; chapter 13 explains where each layout puts the half-warps.");
    }

    fn runs(&self, gpu: &GpuInfo, size: RunSize) -> Vec<KernelRun<Spec>> {
        let batch = match size {
            RunSize::Profile => PROFILED_BATCH,
            RunSize::Timed => 128 * gpu.multiprocessors,
        };
        let kernels = Layout::ALL.map(|layout| KernelRun {
            label: layout.label().into(),
            kernel: Some(layout.kernel()),
            accesses: layout.accesses(batch),
            spec: Spec { transform: Transform::Kernel(layout), batch },
        });
        let cufft = KernelRun {
            label: "cuFFT".into(),
            kernel: None,
            accesses: Vec::new(),
            spec: Spec { transform: Transform::Cufft, batch },
        };
        kernels.into_iter().chain([cufft]).collect()
    }

    fn prepare<'g>(&self, gpu: &'g Gpu, run: &KernelRun<Spec>) -> Result<Box<dyn Prepared + 'g>, GpuError> {
        let Spec { transform, batch } = run.spec;
        let signal = random_floats((2 * POINTS * batch) as usize);
        let complex: Vec<float2> = signal.chunks(2).map(|c| float2 { x: c[0], y: c[1] }).collect();
        let engine = match transform {
            Transform::Kernel(layout) => Engine::Kernel(gpu.function(KERNEL_FILE, layout.kernel())?),
            Transform::Cufft => Engine::Cufft(gpu.fft(POINTS as usize, batch as usize)?),
        };
        Ok(Box::new(FftRun {
            gpu,
            engine,
            device_in: gpu.upload(&complex)?,
            device_out: gpu.zeros((POINTS * batch) as usize)?,
            signal,
            batch,
        }))
    }

    fn time_ratios(&self) -> &'static [TimeRatio] {
        &FIGURES
    }

    fn summarize(&self, gpu: &GpuInfo, results: &[TimedRun<Spec>], report: &mut Report) {
        let batch = results.first().map_or(0, |m| m.run.spec.batch);
        report.heading(format!("Measured: {batch} transforms of {POINTS} points, one block each"));
        let cufft = median_ms(results, |spec| spec.transform == Transform::Cufft);
        let rows = results
            .iter()
            .map(|m| {
                let points = (m.run.spec.batch * POINTS) as f64;
                let mut row = vec![m.run.label.as_str().into()];
                row.extend(counted_and_timed_cells(m));
                row.push(format!("{:.1}", points / (m.timing.median_ms * 1e-3) / 1e9).into());
                row.push(cufft.map_or("-".into(), |c| format!("{:.2}x", m.timing.median_ms / c)).into());
                row
            })
            .collect();
        report.table(["layout"].into_iter().chain(COUNTED_AND_TIMED).chain(["Gpoints/s", "of cuFFT's time"]), rows);
        for figure in self.all_figures(gpu, results) {
            report.text(format!("{}: {:.2}x", figure.label, figure.value));
        }
    }
}

/// What computes a run's transforms.
enum Engine {
    /// A kernel of `fft.cu`: `(const float2* in, float2* out)`, one block per transform.
    Kernel(CudaFunction),
    Cufft(Fft),
}

struct FftRun<'g> {
    gpu: &'g Gpu,
    engine: Engine,
    /// The input, real and imaginary parts interleaved.
    signal: Vec<f32>,
    device_in: CudaSlice<float2>,
    device_out: CudaSlice<float2>,
    batch: u32,
}

impl Prepared for FftRun<'_> {
    fn launch(&mut self) -> Result<(), GpuError> {
        let function = match &self.engine {
            Engine::Cufft(plan) => return plan.forward(&mut self.device_in, &mut self.device_out),
            Engine::Kernel(function) => function,
        };
        let config = LaunchConfig { grid_dim: (self.batch, 1, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 };
        let mut launch = self.gpu.stream().launch_builder(function);
        launch.arg(&self.device_in).arg(&mut self.device_out);
        // SAFETY: the kernel takes (const float2* in, float2* out); block b reads and writes
        // points b * POINTS to (b + 1) * POINTS - 1, and both buffers hold `batch * POINTS`.
        unsafe { launch.launch(config) }?;
        Ok(())
    }

    fn check(&mut self) -> Result<OutputCheck, GpuError> {
        let out = self.gpu.download(&self.device_out)?;
        let floats = 2 * POINTS as usize;
        let step = (self.batch / CHECKED_TRANSFORMS).max(1) as usize;
        let errors = (0..self.batch as usize).step_by(step).map(|transform| {
            let got: Vec<f32> =
                out[transform * POINTS as usize..][..POINTS as usize].iter().flat_map(|c| [c.x, c.y]).collect();
            (transform, relative_error(&got, &dft(&self.signal[transform * floats..][..floats])))
        });
        // The worst transform: a NaN before any number.
        let (transform, error) = errors
            .max_by(|x, y| x.1.is_nan().cmp(&y.1.is_nan()).then(x.1.total_cmp(&y.1)))
            .expect("a batch checks at least one transform");
        if error.is_nan() || error > TOLERANCE {
            return Err(GpuError::WrongResult(format!(
                "transform {transform}: relative error {error:.2e} against the CPU's DFT (tolerance {TOLERANCE:.0e})"
            )));
        }
        Ok(OutputCheck::Within { tolerance: TOLERANCE, reference: "the CPU's DFT in double precision" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's steps on the CPU in f64, through a layout's tile: the bit-reversed copy in,
    /// the levels one butterfly after another (a level's pairs are disjoint), the copy out.
    fn simulate(layout: Layout, signal: &[f32]) -> Vec<f64> {
        let mut tile = vec![(f64::NAN, f64::NAN); layout.elements() as usize];
        let place = |i: u32| layout.at(i) as usize;
        for i in 0..POINTS {
            let source = (i.reverse_bits() >> (32 - POINTS.trailing_zeros())) as usize;
            tile[place(i)] = (signal[2 * source] as f64, signal[2 * source + 1] as f64);
        }
        for s in strides() {
            for t in 0..THREADS {
                let [a, b] = [0, 1].map(|operand| place(butterfly_element(t, s, operand)));
                let j = (t % s) as f64;
                let (sin, cos) = (-std::f64::consts::PI * j / s as f64).sin_cos();
                let ((xr, xi), (yr, yi)) = (tile[a], tile[b]);
                let (wr, wi) = (cos * yr - sin * yi, cos * yi + sin * yr);
                tile[a] = (xr + wr, xi + wi);
                tile[b] = (xr - wr, xi - wi);
            }
        }
        (0..POINTS).flat_map(|i| [tile[place(i)].0, tile[place(i)].1]).collect()
    }

    fn normwise_error(got: &[f64], want: &[f64]) -> f64 {
        let got: Vec<f32> = got.iter().map(|&x| x as f32).collect();
        relative_error(&got, want)
    }

    #[test]
    fn every_layout_computes_the_dft() {
        let signal: Vec<f32> = (0..2 * POINTS).map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0).collect();
        let want = dft(&signal);
        for layout in Layout::ALL {
            let error = normwise_error(&simulate(layout, &signal), &want);
            assert!(error < 1e-7, "{layout:?}: {error:e}");
        }
    }

    #[test]
    fn the_dft_of_an_impulse_and_of_a_tone() {
        let mut impulse = vec![0.0f32; 2 * POINTS as usize];
        impulse[0] = 1.0;
        assert!(dft(&impulse).chunks(2).all(|c| c == [1.0, 0.0]));
        // x[n] = exp(2 pi i 3 n / N): all of it lands in bin 3.
        let tone: Vec<f32> = (0..POINTS)
            .flat_map(|n| {
                let (sin, cos) = (2.0 * std::f64::consts::PI * 3.0 * n as f64 / POINTS as f64).sin_cos();
                [cos as f32, sin as f32]
            })
            .collect();
        let spectrum = dft(&tone);
        assert!((spectrum[6] - POINTS as f64).abs() < 1e-3);
        assert!(spectrum.iter().enumerate().filter(|&(i, _)| i != 6).all(|(_, x)| x.abs() < 1e-3));
    }

    #[test]
    fn layouts_keep_elements_apart_and_inside_the_tile() {
        for layout in Layout::ALL {
            let mut places: Vec<u32> = (0..POINTS).map(|i| layout.at(i)).collect();
            places.sort_unstable();
            places.dedup();
            assert_eq!(places.len(), POINTS as usize, "{layout:?}: one place per element");
            assert!(places.iter().all(|&p| p < layout.elements()), "{layout:?}");
        }
        assert_eq!(Layout::Pad32.elements(), 512 + 16, "the note's float2 shared[512 + 16]");
    }

    #[test]
    fn butterflies_pair_every_element_once_per_level() {
        for s in strides() {
            let mut touched: Vec<u32> =
                (0..THREADS).flat_map(|t| [0, 1].map(|operand| butterfly_element(t, s, operand))).collect();
            touched.sort_unstable();
            assert_eq!(touched, (0..POINTS).collect::<Vec<_>>(), "stride {s}");
        }
    }

    #[test]
    fn conflicts_level_by_level() {
        let worst = |layout: Layout| strides().map(|s| layout.level_cost(s)).collect::<Vec<_>>();
        assert_eq!(worst(Layout::Natural), [4, 4, 4, 4, 2, 2, 2, 2, 2]);
        assert_eq!(worst(Layout::Pad32), worst(Layout::Natural), "the note's padding changes no level");
        assert_eq!(worst(Layout::Pad16), [2, 4, 4, 4, 2, 2, 2, 2, 2]);
        assert_eq!(worst(Layout::Mirrored), [2; 9]);
    }

    #[test]
    fn loads_and_stores_of_a_and_b_cost_the_same_for_every_warp() {
        for layout in Layout::ALL {
            for s in strides() {
                let costs: Vec<u32> = (0..WARPS)
                    .flat_map(|warp| {
                        [(Op::Load, 0), (Op::Load, 1), (Op::Store, 0), (Op::Store, 1)]
                            .map(|(op, operand)| layout.level_request(op, warp, s, operand).analyze().wavefronts)
                    })
                    .collect();
                assert!(costs.iter().all(|&c| c == costs[0]), "{layout:?}, stride {s}: {costs:?}");
            }
        }
    }

    #[test]
    fn declared_counts_follow_the_launch_shape() {
        let runs = FftLesson.runs(&GpuInfo::h100(), RunSize::Profile);
        let run = |layout| runs.iter().find(|r| r.spec.transform == Transform::Kernel(layout)).expect("a run");
        let blocks = PROFILED_BATCH as u64;
        // Per block: 8 warps copy in twice (stores) and out twice (loads), and at each of the 9
        // levels load and store a and b: 16 + 144 = 160 of each, 2 wavefronts each when
        // conflict-free.
        let per_block = 2 * 8 + 9 * 2 * 8;
        assert_eq!(run(Layout::Mirrored).predicted(Op::Load), (blocks * 2 * per_block, blocks * per_block));
        assert_eq!(run(Layout::Mirrored).predicted(Op::Store), (blocks * 2 * per_block, blocks * per_block));
        // Strides 1 to 8 cost 4 wavefronts: 2 more per warp access at 4 levels, 64 more per block.
        let natural = (blocks * (2 * per_block + 4 * 16 * 2), blocks * per_block);
        assert_eq!(run(Layout::Natural).predicted(Op::Load), natural);
        assert_eq!(run(Layout::Pad32).predicted(Op::Store), natural);
        assert_eq!(run(Layout::Pad16).predicted_excess(), blocks * 2 * 3 * 16 * 2);
        let first_level: Vec<&DeclaredAccess> =
            run(Layout::Natural).accesses.iter().filter(|a| a.name.starts_with("s=1: ")).collect();
        assert_eq!(first_level.len(), 4, "every warp costs the same: one group per instruction");
        assert!(first_level.iter().all(|a| a.executions == blocks * 8));
        let cufft = runs.iter().find(|r| r.spec.transform == Transform::Cufft).expect("a cuFFT run");
        assert_eq!((cufft.kernel, cufft.accesses.len()), (None, 0));
    }
}
