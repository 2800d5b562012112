//! Lesson 1: banks and strides.
//!
//! Lane `i` of a warp reads element `i * stride` of a shared-memory array. For 4-byte elements
//! the bank conflict degree is `gcd(stride, 32)`; for other widths that rule breaks. On a GPU, a
//! throughput-bound kernel shows time tracking wavefronts, and a latency-bound dependent chain
//! shows why a 32-way conflict does not make one warp 32 times slower.

use bank_model::{Op, Request, Width, gcd};
use cuda_kernels::{Gpu, GpuError, GpuInfo};
use lesson_kit::{
    Chart, DeclaredAccess, Figure, KernelRun, Lesson, Point, Prepared, Report, RunSize, Series, TimeRatio, TimedRun,
    Tone,
    bank_table::add_bank_grid,
    cells::{counter_cells, median_cell, spread_cell},
    styled,
    words_kernel::{WordsLaunch, fill_tile_access, loaded_value, random_words, words_kernel},
};

/// The kernels' source file in `kernels/`.
pub const KERNEL_FILE: &str = "banks.cu";
/// Shared memory per block, as `TILE_BYTES` in the kernel.
pub const TILE_BYTES: u32 = 32768;
const TILE_WORDS: u32 = TILE_BYTES / 4;
/// Independent loads per thread per iteration, as `ROWS` in the kernel.
pub const ROWS: u32 = 8;
/// Strides the model's table covers.
pub const MODEL_STRIDES: std::ops::RangeInclusive<u32> = 0..=64;
/// Strides run on the GPU, per element width, in the throughput-bound kernel.
pub const THROUGHPUT_STRIDES: [(Width, &[u32]); 3] =
    [(Width::W4, &[0, 1, 2, 3, 4, 8, 16, 32, 33, 64]), (Width::W8, &[0, 1, 2, 4, 16]), (Width::W16, &[0, 1, 2, 8])];
/// Strides run in the latency-bound chain.
pub const CHAIN_STRIDES: [u32; 7] = [0, 1, 2, 4, 8, 16, 32];
const CHAIN_STEPS: [u32; 2] = [64, 16384];

/// Lane `lane`'s element index in request `row` of the throughput kernel (and step `row` of the chain).
pub fn element_index(width: Width, lane: u32, row: u32, stride: u32) -> u32 {
    let elements = TILE_BYTES / width.bytes();
    (lane + 32 * row).wrapping_mul(stride) & (elements - 1)
}

/// The warp-wide request of one row: every lane's byte address.
pub fn row_request(width: Width, row: u32, stride: u32) -> Request {
    Request::elements(Op::Load, width, |lane| element_index(width, lane, row, stride))
}

pub struct Banks;

/// The lesson, as the course's list of lessons names it.
pub static LESSON: Banks = Banks;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Spec {
    /// `stride_read_{width}`: many warps, independent loads.
    Throughput { width: Width, stride: u32, blocks: u32, threads: u32, iterations: u32 },
    /// `stride_chain`: one warp, each load's address from the previous one.
    Chain { stride: u32, steps: u32 },
}

impl Spec {
    /// The kernel that runs this spec.
    fn kernel(&self) -> &'static str {
        match self {
            Spec::Throughput { width: Width::W4, .. } => "stride_read_4",
            Spec::Throughput { width: Width::W8, .. } => "stride_read_8",
            Spec::Throughput { .. } => "stride_read_16",
            Spec::Chain { .. } => "stride_chain",
        }
    }

    fn stride(&self) -> u32 {
        match self {
            Spec::Throughput { stride, .. } | Spec::Chain { stride, .. } => *stride,
        }
    }
}

impl Lesson for Banks {
    type Spec = Spec;

    const NUMBER: u32 = 1;
    const TITLE: &'static str = "Banks and strides";
    const KERNEL_FILES: &'static [&'static str] = &[KERNEL_FILE];

    fn charts(&self) -> &'static [Chart] {
        &[Chart {
            file: "lesson-01-stride-slowdown.svg",
            title: "Slowdown against stride, float loads",
            value_label: "time / time at stride 1",
            series: &["stride_slowdown_throughput", "stride_slowdown_latency"],
        }]
    }

    fn model(&self, report: &mut Report) {
        report.text(
            "Lane i reads element i * stride; chapter 1 of the book explains banks, wavefronts and these counts.",
        );
        report.heading("Predicted wavefronts per warp load, tile[lane * stride]");
        let header = ["stride", "gcd(stride,32)"]
            .into_iter()
            .map(String::from)
            .chain(Width::ALL.iter().map(|w| format!("{} ({w} B)", w.c_type())));
        let rows = MODEL_STRIDES
            .map(|stride| {
                let rule = if stride == 0 { "broadcast".to_owned() } else { gcd(stride, 32).to_string() };
                let mut row = vec![stride.into(), rule.into()];
                for width in Width::ALL {
                    let analysis = Request::strided(Op::Load, width, stride).expect("aligned").analyze();
                    row.push(styled(analysis.wavefronts, Tone::of_wavefronts(analysis.wavefronts, analysis.ideal)));
                }
                row
            })
            .collect();
        report.table(header, rows);
        report.text("The gcd column is the rule for 4-byte elements only; chapter 1 explains the other widths.");
        report.heading("Bank by bank (cell: bank, distinct words w, lanes L)");
        let examples = [
            (Op::Load, Width::W4, 1),
            (Op::Load, Width::W4, 2),
            (Op::Load, Width::W4, 32),
            (Op::Load, Width::W4, 0),
            (Op::Load, Width::W8, 1),
            (Op::Load, Width::W16, 0),
            (Op::Store, Width::W16, 0),
        ];
        for (op, width, stride) in examples {
            let request = Request::strided(op, width, stride).expect("aligned");
            report.text(format!(
                "{} {}[lane * {stride}]:",
                if op == Op::Load { "read" } else { "write" },
                width.c_type()
            ));
            add_bank_grid(report, &request, &request.analyze());
        }
        report.text(
            "The last two grids: one address loaded and stored 16 bytes wide, a broadcast that is not one wavefront.",
        );
    }

    fn runs(&self, gpu: &GpuInfo, size: RunSize) -> Vec<KernelRun<Spec>> {
        let (blocks, iterations) = match size {
            RunSize::Profile => (2, 4),
            RunSize::Timed => (2 * gpu.multiprocessors, 2048),
        };
        let threads = 1024;
        let warps = (blocks * threads / 32) as u64;
        let mut runs = Vec::new();
        for (width, strides) in THROUGHPUT_STRIDES {
            for &stride in strides {
                let spec = Spec::Throughput { width, stride, blocks, threads, iterations };
                let kernel = spec.kernel();
                let mut accesses: Vec<DeclaredAccess> = (0..ROWS)
                    .map(|row| DeclaredAccess {
                        name: format!("{}[(lane + 32 * {row}) * {stride}]", width.c_type()),
                        request: row_request(width, row, stride),
                        executions: warps * iterations as u64,
                    })
                    .collect();
                accesses.push(fill_tile_access(blocks, TILE_WORDS));
                runs.push(KernelRun {
                    label: format!("{kernel} stride={stride}"),
                    kernel: Some(kernel),
                    accesses,
                    spec,
                });
            }
        }
        let steps = if size == RunSize::Profile { CHAIN_STEPS[0] } else { CHAIN_STEPS[1] };
        for stride in CHAIN_STRIDES {
            // Every step is row 0's pattern shifted by a multiple of 32 * stride words: same banks.
            let chain = DeclaredAccess {
                name: format!("index = tile[index] (lane * {stride} + 32 * step * {stride})"),
                request: row_request(Width::W4, 0, stride),
                executions: steps as u64,
            };
            runs.push(KernelRun {
                label: format!("stride_chain stride={stride}"),
                kernel: Some(Spec::Chain { stride, steps }.kernel()),
                accesses: vec![chain, fill_tile_access(1, TILE_WORDS)],
                spec: Spec::Chain { stride, steps },
            });
        }
        runs
    }

    fn prepare<'g>(&self, gpu: &'g Gpu, run: &KernelRun<Spec>) -> Result<Box<dyn Prepared + 'g>, GpuError> {
        match run.spec {
            Spec::Throughput { width, stride, blocks, threads, iterations } => {
                let launch = WordsLaunch { blocks, threads, args: [stride, iterations] };
                words_kernel(
                    gpu,
                    KERNEL_FILE,
                    run.spec.kernel(),
                    random_words(TILE_WORDS as usize),
                    launch,
                    move |words, thread| {
                        let lane = thread as u32 % 32;
                        let row_sum = (0..ROWS).fold(0u32, |sum, row| {
                            let byte = element_index(width, lane, row, stride) * width.bytes();
                            sum.wrapping_add(loaded_value(words, width, byte))
                        });
                        row_sum.wrapping_mul(iterations)
                    },
                )
            }
            Spec::Chain { stride, steps } => {
                let next_index = (0..TILE_WORDS).map(|i| (i + 32 * stride) & (TILE_WORDS - 1)).collect();
                let launch = WordsLaunch { blocks: 1, threads: 32, args: [stride, steps] };
                words_kernel(gpu, KERNEL_FILE, run.spec.kernel(), next_index, launch, move |_, thread| {
                    element_index(Width::W4, thread as u32, steps, stride)
                })
            }
        }
    }

    fn figures(&self, gpu: &GpuInfo, results: &[TimedRun<Spec>]) -> Vec<Figure> {
        let mut figures = Vec::new();
        let conflict_free = results
            .iter()
            .find(|m| matches!(m.run.spec, Spec::Throughput { width: Width::W4, stride: 1, .. }))
            .and_then(read_bandwidth);
        if let Some(bandwidth) = conflict_free {
            figures.push(Figure {
                key: "shared_read_bandwidth",
                label: "conflict-free shared reads (float, stride 1)".into(),
                value: bandwidth / 1e12,
                unit: "TB/s",
            });
            figures.push(Figure {
                key: "shared_read_share_of_peak",
                label: "the same, share of 32 banks x 4 B x SMs x clock".into(),
                value: 100.0 * bandwidth / gpu.shared_peak_bytes_per_s(),
                unit: "%",
            });
        }
        figures
    }

    fn time_ratios(&self) -> &'static [TimeRatio] {
        &[
            TimeRatio {
                key: "stride32_slowdown_throughput",
                label: "stride 32 vs stride 1, throughput-bound",
                numerator: "stride_read_4 stride=32",
                denominator: "stride_read_4 stride=1",
            },
            TimeRatio {
                key: "stride32_slowdown_latency",
                label: "stride 32 vs stride 1, one warp's dependent chain",
                numerator: "stride_chain stride=32",
                denominator: "stride_chain stride=1",
            },
        ]
    }

    fn series(&self, _gpu: &GpuInfo, results: &[TimedRun<Spec>]) -> Vec<Series> {
        let series = |key: &str, label: &str, kernel| {
            let points: Vec<Point> = slowdowns(results, kernel)
                .into_iter()
                .map(|(stride, slowdown)| Point { at: stride.to_string(), value: slowdown })
                .collect();
            (!points.is_empty()).then(|| Series { key: key.into(), label: label.into(), unit: "x".into(), points })
        };
        [
            series("stride_slowdown_throughput", "float, many warps (throughput-bound)", float_throughput),
            series("stride_slowdown_latency", "float, one warp's dependent chain", chain),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    fn summarize(&self, gpu: &GpuInfo, results: &[TimedRun<Spec>], report: &mut Report) {
        report.heading("Throughput-bound: many warps, independent loads");
        let baseline = |width: Width| {
            results
                .iter()
                .find(|m| matches!(m.run.spec, Spec::Throughput { width: w, stride: 1, .. } if w == width))
                .map(|m| m.timing.median_ms)
        };
        let mut rows = Vec::new();
        for m in results {
            let Spec::Throughput { width, stride, .. } = m.run.spec else { continue };
            let Some(per_second) = read_bandwidth(m) else { continue };
            let [predicted, measured] = counter_cells(m, Op::Load);
            rows.push(vec![
                width.c_type().into(),
                stride.into(),
                predicted,
                measured,
                median_cell(&m.timing),
                spread_cell(&m.timing),
                baseline(width).map_or("-".into(), |b| format!("{:.1}x", m.timing.median_ms / b)).into(),
                format!("{:.1}", per_second / 1e12).into(),
                format!("{:.0}%", 100.0 * per_second / gpu.shared_peak_bytes_per_s()).into(),
            ]);
        }
        report.table(
            ["type", "stride", "model wf/req", "ncu wf/req", "median ms", "spread", "vs stride 1", "TB/s", "% of peak"],
            rows,
        );
        report.text(format!(
            "Peak: 32 banks x 4 B x {} SMs x {} MHz = {:.1} TB/s read from the banks. TB/s counts the bytes\n\
             delivered to the lanes: a broadcast (stride 0) reads one word and delivers it to many lanes, so\n\
             its bytes delivered can pass the banks' peak.",
            gpu.multiprocessors,
            gpu.clock_mhz,
            gpu.shared_peak_bytes_per_s() / 1e12
        ));
        report.heading("Latency-bound: one warp, a chain of dependent loads");
        let chain_baseline = results.iter().find(|m| matches!(m.run.spec, Spec::Chain { stride: 1, .. }));
        let mut rows = Vec::new();
        for m in results {
            let Spec::Chain { stride, steps } = m.run.spec else { continue };
            let [predicted, measured] = counter_cells(m, Op::Load);
            rows.push(vec![
                stride.into(),
                predicted,
                measured,
                format!("{:.1}", m.timing.median_ms * 1e6 / steps as f64).into(),
                chain_baseline
                    .map_or("-".into(), |b| format!("{:.1}x", m.timing.median_ms / b.timing.median_ms))
                    .into(),
            ]);
        }
        report.table(["stride", "model wf/req", "ncu wf/req", "ns per load", "vs stride 1"], rows);
        let ratio = |index: usize| self.time_ratios()[index].figure(results).map(|figure| figure.value);
        if let (Some(throughput), Some(chain)) = (ratio(0), ratio(1)) {
            report.text(format!(
                "Stride 32 (32 wavefronts per request): {throughput:.1}x slower when the load/store unit is the\n\
                 bottleneck, but only {chain:.1}x slower in one warp's dependent chain, where most of each load's\n\
                 time is the fixed latency of the trip to shared memory and back, paid once however many\n\
                 wavefronts it takes."
            ));
        }
    }
}

/// Bytes the lanes of a throughput run read, per second.
fn read_bandwidth(m: &TimedRun<Spec>) -> Option<f64> {
    let Spec::Throughput { width, blocks, threads, iterations, .. } = m.run.spec else { return None };
    let bytes = blocks as f64 * threads as f64 * iterations as f64 * ROWS as f64 * width.bytes() as f64;
    Some(bytes / (m.timing.median_ms * 1e-3))
}

/// Each stride's time over stride 1's, for the runs of one kernel, in run order (none without stride 1).
fn slowdowns(results: &[TimedRun<Spec>], kernel: fn(&Spec) -> bool) -> Vec<(u32, f64)> {
    let runs: Vec<&TimedRun<Spec>> = results.iter().filter(|m| kernel(&m.run.spec)).collect();
    let Some(base) = runs.iter().find(|m| m.run.spec.stride() == 1) else { return Vec::new() };
    runs.iter().map(|m| (m.run.spec.stride(), m.timing.median_ms / base.timing.median_ms)).collect()
}

fn float_throughput(spec: &Spec) -> bool {
    matches!(spec, Spec::Throughput { width: Width::W4, .. })
}

fn chain(spec: &Spec) -> bool {
    matches!(spec, Spec::Chain { .. })
}

#[cfg(test)]
mod tests {
    use cuda_kernels::timing::Timing;

    use super::*;

    /// Every timed run of the lesson, taking as many milliseconds as its wavefronts per request.
    fn measured_by_wavefronts() -> Vec<TimedRun<Spec>> {
        Banks
            .runs(&GpuInfo::h100(), RunSize::Timed)
            .into_iter()
            .map(|run| {
                let ms = run.accesses[0].request.analyze().wavefronts as f64;
                let timing = Timing { median_ms: ms, min_ms: ms, max_ms: ms, reps: 1 };
                TimedRun { run, timing, counters: None, occupancy: None }
            })
            .collect()
    }

    #[test]
    fn series_are_slowdowns_over_stride_1_in_run_order() {
        let series = Banks.series(&GpuInfo::h100(), &measured_by_wavefronts());
        let keys: Vec<&str> = series.iter().map(|s| s.key.as_str()).collect();
        assert_eq!(keys, ["stride_slowdown_throughput", "stride_slowdown_latency"]);
        let points = |s: &Series| s.points.iter().map(|p| (p.at.clone(), p.value)).collect::<Vec<_>>();
        let strides =
            THROUGHPUT_STRIDES[0].1.iter().map(|&s| (s.to_string(), if s == 0 { 1.0 } else { gcd(s, 32) as f64 }));
        assert_eq!(points(&series[0]), strides.collect::<Vec<_>>());
        assert_eq!(series[1].points.len(), CHAIN_STRIDES.len());
        let ratios: Vec<f64> =
            Banks.all_figures(&GpuInfo::h100(), &measured_by_wavefronts()).iter().skip(2).map(|f| f.value).collect();
        assert_eq!(ratios, [32.0, 32.0], "stride 32 over stride 1, both kernels");
        let no_stride_1: Vec<_> = measured_by_wavefronts().into_iter().filter(|m| m.run.spec.stride() != 1).collect();
        assert!(Banks.series(&GpuInfo::h100(), &no_stride_1).is_empty(), "no baseline, no series");
    }

    #[test]
    fn every_row_of_a_run_has_the_bank_pattern_of_row_zero() {
        for (width, strides) in THROUGHPUT_STRIDES {
            for &stride in strides {
                let first = row_request(width, 0, stride).analyze().wavefronts;
                for row in 1..ROWS {
                    assert_eq!(row_request(width, row, stride).analyze().wavefronts, first, "{width} {stride}");
                }
            }
        }
        for stride in CHAIN_STRIDES {
            let first = row_request(Width::W4, 0, stride).analyze().wavefronts;
            for step in [1, 7, 100, CHAIN_STEPS[1] - 1] {
                assert_eq!(row_request(Width::W4, step, stride).analyze().wavefronts, first);
            }
        }
    }

    #[test]
    fn declared_counts_follow_the_launch_shape() {
        let runs = Banks.runs(&GpuInfo::h100(), RunSize::Profile);
        let run = runs.iter().find(|r| r.label == "stride_read_4 stride=32").unwrap();
        // 2 blocks x 32 warps x 4 iterations x 8 rows, 32 wavefronts each.
        assert_eq!(run.predicted(Op::Load), (2 * 32 * 4 * 8 * 32, 2 * 32 * 4 * 8));
        assert_eq!(run.predicted(Op::Store), (2 * 256, 2 * 256));
        assert_eq!(run.predicted_per_request(Op::Load), Some(32.0));
        let chain = runs.iter().find(|r| r.label == "stride_chain stride=2").unwrap();
        assert_eq!(chain.predicted(Op::Load), (64 * 2, 64));
    }
}
