//! Lesson 15: filling tiles, cp.async pipelines and the TMA.
//!
//! Hopper's tensor memory accelerator copies a box of a matrix into shared memory in a layout the
//! tensor map names: rows back to back (NONE), or swizzled over 32, 64 or 128 bytes. Read back
//! element by element, the H100 puts box row `r` at byte `r * max(width, span)` and applies CuTe's
//! `Swizzle<B, 4, 3>` to the byte offset. Read as an mma A operand with `ldmatrix.x4`, NONE is 2-,
//! 4- or 8-way for rows of 32, 64 or 128 bytes and every valid swizzle conflict-free; the TMA's
//! own writes are no LSU wavefronts, and its throughput did not depend on the mode. The second
//! part counts the stages of lesson 14's cp.async GEMM.

pub mod pipeline;
pub mod tma;

use bank_model::Op;
use cuda_kernels::{
    CudaFunction, CudaSlice, Gpu, GpuError, GpuInfo, LaunchConfig, PushKernelArg,
    ncu::SharedFamily,
    tensor_map::{Box2d, TensorMap, TmaSwizzle},
};
use lesson_kit::{
    DeclaredAccess, Figure, KernelRun, Lesson, OutputCheck, Prepared, Report, RunSize, Styled, TimeRatio, TimedRun,
    Tone,
    bank_table::add_bank_grid,
    cells::{family_cells, format_ratio, median_cell, spread_cell},
    styled,
    words_kernel::random_words,
};

use lesson_14_tensor_cores::{
    Multiply,
    gemm::{BLOCK_K, BLOCK_M, BLOCK_N},
};
use pipeline::GemmSpec;
use tma::{BOX_ROWS, THREADS, WIDTHS, row_pitch, valid};

/// Blocks per SM and reads of the box per block for the timed ldmatrix runs; odd, so that the
/// XOR of the reads does not cancel and the output still tells a wrong fragment apart.
const LDMATRIX_BLOCKS_PER_SM: u32 = 16;
const LDMATRIX_ITERATIONS: u32 = 4095;
/// Blocks per SM and boxes per block for the timed TMA stream, from a matrix of this many rows
/// (2 MiB of 128-byte rows: L2 serves it, so the TMA, not HBM, sets the pace).
const STREAM_BLOCKS_PER_SM: u32 = 4;
const STREAM_BOXES: u32 = 256;
const STREAM_ROWS: u32 = 16384;
/// The profiled launches: one block reading its box three times (so that ncu's counts show a pass
/// the compiler merged into another), and one block filling each of its 4 buffers twice.
const PROFILED_LDMATRIX: TmaKernel = TmaKernel::Ldmatrix { blocks: 1, iterations: 3 };
const PROFILED_STREAM: TmaKernel = TmaKernel::Stream { blocks: 1, boxes: 8 };

/// The run whose throughput is the TMA's headline figure.
const STREAM_FIGURE_RUN: &str = "TMA stream, 128-byte rows, 128B";
/// The headline figures: what the swizzle saves the ldmatrix reads, what it does to the TMA, and
/// what each depth of the pipeline costs against lesson 14's 3 stages.
const FIGURES: [TimeRatio; 7] = [
    TimeRatio {
        key: "tma_ldmatrix_128_none_vs_128b",
        label: "ldmatrix reads of a TMA box of 128-byte rows, NONE time over 128B",
        numerator: "ldmatrix, 128-byte rows, NONE",
        denominator: "ldmatrix, 128-byte rows, 128B",
    },
    TimeRatio {
        key: "tma_ldmatrix_64_none_vs_64b",
        label: "ldmatrix reads of a TMA box of 64-byte rows, NONE time over 64B",
        numerator: "ldmatrix, 64-byte rows, NONE",
        denominator: "ldmatrix, 64-byte rows, 64B",
    },
    TimeRatio {
        key: "tma_ldmatrix_32_none_vs_32b",
        label: "ldmatrix reads of a TMA box of 32-byte rows, NONE time over 32B",
        numerator: "ldmatrix, 32-byte rows, NONE",
        denominator: "ldmatrix, 32-byte rows, 32B",
    },
    TimeRatio {
        key: "tma_stream_128_none_vs_128b",
        label: "TMA copies of boxes of 128-byte rows, NONE time over 128B",
        numerator: "TMA stream, 128-byte rows, NONE",
        denominator: "TMA stream, 128-byte rows, 128B",
    },
    TimeRatio {
        key: "tma_pipeline_8192_1_vs_3_stages",
        label: "bf16 GEMM 8192^3, swizzled tiles, 1 stage's time over 3 stages'",
        numerator: "bf16 swizzled, 1 stage, 8192^3",
        denominator: "bf16 swizzled, 3 stages, 8192^3",
    },
    TimeRatio {
        key: "tma_pipeline_8192_2_vs_3_stages",
        label: "bf16 GEMM 8192^3, swizzled tiles, 2 stages' time over 3 stages'",
        numerator: "bf16 swizzled, 2 stages, 8192^3",
        denominator: "bf16 swizzled, 3 stages, 8192^3",
    },
    TimeRatio {
        key: "tma_pipeline_8192_4_vs_3_stages",
        label: "bf16 GEMM 8192^3, swizzled tiles, 4 stages' time over 3 stages'",
        numerator: "bf16 swizzled, 4 stages, 8192^3",
        denominator: "bf16 swizzled, 3 stages, 8192^3",
    },
];

/// A kernel of `tma_swizzle.cu` and its launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TmaKernel {
    /// `tma_box_readback`: one block, one box in, the tile copied out.
    Readback,
    /// `tma_ldmatrix_reads`: each block loads the box and reads it `iterations` times.
    Ldmatrix { blocks: u32, iterations: u32 },
    /// `tma_stream`: each block copies `boxes` boxes through 4 buffers.
    Stream { blocks: u32, boxes: u32 },
}

/// One TMA run: the kernel, the box's row width in bytes and the swizzle mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TmaSpec {
    pub kernel: TmaKernel,
    pub width: u32,
    pub mode: TmaSwizzle,
}

impl TmaSpec {
    fn label(&self) -> String {
        let what = match self.kernel {
            TmaKernel::Readback => "box readback",
            TmaKernel::Ldmatrix { .. } => "ldmatrix",
            TmaKernel::Stream { .. } => "TMA stream",
        };
        format!("{what}, {}-byte rows, {}", self.width, self.mode)
    }

    fn name(&self) -> &'static str {
        match self.kernel {
            TmaKernel::Readback => "tma_box_readback",
            TmaKernel::Ldmatrix { .. } => "tma_ldmatrix_reads",
            TmaKernel::Stream { .. } => "tma_stream",
        }
    }

    fn blocks(&self) -> u32 {
        match self.kernel {
            TmaKernel::Readback => 1,
            TmaKernel::Ldmatrix { blocks, .. } | TmaKernel::Stream { blocks, .. } => blocks,
        }
    }

    /// Rows of the matrix the tensor map describes.
    fn rows(&self) -> u32 {
        match self.kernel {
            TmaKernel::Stream { .. } => STREAM_ROWS,
            _ => BOX_ROWS,
        }
    }

    /// Words of `out`: the tile, a word per thread, or one per block.
    fn out_words(&self) -> u32 {
        match self.kernel {
            TmaKernel::Readback => BOX_ROWS * row_pitch(self.width, self.mode) / 4,
            TmaKernel::Ldmatrix { blocks, .. } => blocks * THREADS,
            TmaKernel::Stream { blocks, .. } => blocks,
        }
    }

    /// Every LSU shared access of the launch. The TMA's copy and the mbarrier's instructions are
    /// none: ncu's LDS, STS and LDSM counters leave them out.
    fn accesses(&self) -> Vec<DeclaredAccess> {
        match self.kernel {
            TmaKernel::Readback => tma::readback_accesses(self.width, self.mode, 1),
            TmaKernel::Ldmatrix { blocks, iterations } => {
                tma::ldmatrix_accesses(self.width, self.mode, blocks, iterations)
            }
            TmaKernel::Stream { .. } => Vec::new(),
        }
    }

    fn run(self) -> KernelRun<Spec> {
        KernelRun { label: self.label(), kernel: Some(self.name()), accesses: self.accesses(), spec: Spec::Tma(self) }
    }

    /// Bytes the TMA copied into shared memory in the launch.
    fn bytes_copied(&self) -> u64 {
        let boxes = match self.kernel {
            TmaKernel::Stream { blocks, boxes } => blocks * boxes,
            _ => self.blocks(),
        };
        boxes as u64 * (BOX_ROWS * self.width) as u64
    }
}

/// Every width with every swizzle mode the driver accepts for it.
fn valid_modes() -> impl Iterator<Item = (u32, TmaSwizzle)> {
    WIDTHS.into_iter().flat_map(|width| {
        TmaSwizzle::ALL.into_iter().filter(move |&mode| valid(width, mode)).map(move |mode| (width, mode))
    })
}

/// What a run is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Spec {
    Tma(TmaSpec),
    Gemm(GemmSpec),
}

pub struct Tma;

/// The lesson, as the course's list of lessons names it.
pub static LESSON: Tma = Tma;

impl Lesson for Tma {
    type Spec = Spec;

    const NUMBER: u32 = 15;
    const TITLE: &'static str = "Filling tiles: cp.async pipelines and the TMA";
    const KERNEL_FILES: &'static [&'static str] = &[tma::KERNEL_FILE, lesson_14_tensor_cores::gemm::KERNEL_FILE];

    fn reference(&self) -> &'static str {
        "the CPU (the readback's tile against the layout rule element by element, the ldmatrix fragments computed \
         from the matrix), and for the GEMMs cuBLAS (at the profiling size, the CPU in double precision)"
    }

    fn model(&self, report: &mut Report) {
        report.text(format!(
            "The TMA copies a box of {BOX_ROWS} rows of a row-major matrix of 16-bit elements into shared memory; the \
             tensor map names the row's width (32, 64 or 128 bytes) and the swizzle.\nRule: box row r starts at byte \
             r * max(width, span), and the swizzle is CuTe's Swizzle<B, 4, 3> on the byte offset (B = 1, 2, 3 for \
             32B, 64B, 128B).\nChapter 15 of the book explains the rule and the readback that shows it."
        ));
        report.heading(
            "Which swizzle mode suits which row width: the tile, and ldmatrix.x4 reads of it as an mma A operand",
        );
        let rows =
            WIDTHS.into_iter().flat_map(|width| TmaSwizzle::ALL.map(|mode| suitability_cells(width, mode))).collect();
        report.table(SUITABILITY, rows);
        report.text(
            "A swizzle's span must hold a row; a row narrower than the span is padded to it. Unswizzled, a matrix's \
             8 rows of 16 bytes repeat their banks every 128 bytes: 2, 4 or 8 rows per bank.",
        );

        report.heading("128B swizzle, 128-byte rows: the 16-byte chunk of box row r at each position of the tile");
        report.table(position_header(128, TmaSwizzle::Bytes128), chunk_rows(128, TmaSwizzle::Bytes128));
        report.heading("64B swizzle, 32-byte rows: each row padded to 64 bytes (- is padding)");
        report.table(position_header(32, TmaSwizzle::Bytes64), chunk_rows(32, TmaSwizzle::Bytes64));

        for mode in [TmaSwizzle::None, TmaSwizzle::Bytes128] {
            report.heading(format!("Warp 0's first ldmatrix.x4 of a box of 128-byte rows, {mode}"));
            let request = tma::ldmatrix_request(0, 0, 128, mode);
            add_bank_grid(report, &request, &request.analyze());
        }

        report.heading("Every LSU shared access of a profiled launch: one block, the box read three times");
        let rows = [TmaKernel::Readback, PROFILED_LDMATRIX]
            .into_iter()
            .flat_map(|kernel| valid_modes().map(move |(width, mode)| TmaSpec { kernel, width, mode }.run()))
            .map(|run| {
                let ops = [Op::Store, Op::Load, tma::LDSM_X4].map(|op| (op, run.predicted(op).1));
                let named: Vec<String> =
                    ops.iter().filter(|(_, count)| *count > 0).map(|(op, count)| format!("{count} {op}")).collect();
                let (wavefronts, ideal) = run.accesses.iter().fold((0, 0), |(w, i), a| {
                    (
                        w + a.executions * a.request.wavefronts() as u64,
                        i + a.executions * a.request.ideal_wavefronts() as u64,
                    )
                });
                vec![
                    run.label.as_str().into(),
                    named.join(" + ").into(),
                    styled(wavefronts, Tone::of_wavefronts(wavefronts as u32, ideal as u32)),
                    ideal.into(),
                ]
            })
            .collect();
        report.table(["run", "instructions", "wavefronts", "ideal"], rows);
        report.text(
            "The TMA's copy (UTMALDG) and the mbarrier's instructions (SYNCS) are no shared loads or stores of the \
             LSU: ncu's LDS, STS and LDSM counters leave them out, and the model has nothing to say of their banks.",
        );
        report.heading(format!(
            "Lesson 14's GEMM with 1 to 4 cp.async stages: a stage holds one k-tile, A's {BLOCK_M} x {BLOCK_K} halves \
             and B's {BLOCK_K} x {BLOCK_N}; the shared accesses of a {0} x {0} x {0} launch",
            pipeline::PROFILED.m
        ));
        let rows = pipeline::KERNELS
            .into_iter()
            .map(|tiles| {
                let accesses = tiles.accesses(pipeline::PROFILED);
                let per_request = |(instructions, wavefronts): (u64, u64)| {
                    let value = wavefronts as f64 / instructions as f64;
                    styled(format_ratio(value), if value <= 4.0 { Tone::Good } else { Tone::Bad })
                };
                let (copies, loads) = (pipeline::copies(&accesses), pipeline::fragment_loads(&accesses));
                vec![
                    pipeline::label(tiles).into(),
                    pipeline::kib(tiles.stage_bytes()).into(),
                    pipeline::kib(tiles.shared_bytes()).into(),
                    (tiles.stages - 1).into(),
                    copies.0.into(),
                    per_request(copies),
                    loads.0.into(),
                    per_request(loads),
                ]
            })
            .collect();
        report.table(
            [
                "kernel",
                "stage",
                "shared per block",
                "k-tiles in flight",
                "cp.async",
                "wavefronts each",
                "ldmatrix.x4",
                "wavefronts each",
            ],
            rows,
        );
        report.text(
            "The stages change where a k-tile waits, not what it executes: the swizzled kernels make the same \
             copies and reads at the same cost at every depth. One stage is smaller than C's tile, which the \
             epilogue lays over the stages.",
        );
    }

    fn runs(&self, gpu: &GpuInfo, size: RunSize) -> Vec<KernelRun<Spec>> {
        let (ldmatrix, stream) = match size {
            RunSize::Profile => (PROFILED_LDMATRIX, PROFILED_STREAM),
            RunSize::Timed => (
                TmaKernel::Ldmatrix {
                    blocks: LDMATRIX_BLOCKS_PER_SM * gpu.multiprocessors,
                    iterations: LDMATRIX_ITERATIONS,
                },
                TmaKernel::Stream { blocks: STREAM_BLOCKS_PER_SM * gpu.multiprocessors, boxes: STREAM_BOXES },
            ),
        };
        let tma = [TmaKernel::Readback, ldmatrix, stream]
            .into_iter()
            .flat_map(|kernel| valid_modes().map(move |(width, mode)| TmaSpec { kernel, width, mode }.run()));
        let gemms = pipeline::specs(size).into_iter().map(|spec| {
            let KernelRun { label, kernel, accesses, .. } = spec.lesson_14_run();
            KernelRun { label, kernel, accesses, spec: Spec::Gemm(spec) }
        });
        tma.chain(gemms).collect()
    }

    fn prepare<'g>(&self, gpu: &'g Gpu, run: &KernelRun<Spec>) -> Result<Box<dyn Prepared + 'g>, GpuError> {
        match run.spec {
            Spec::Tma(spec) => prepare_tma(gpu, spec),
            // Lesson 14 prepares and checks its own GEMM, whatever the stages.
            Spec::Gemm(spec) => lesson_14_tensor_cores::LESSON.prepare(gpu, &spec.lesson_14_run()),
        }
    }

    fn time_ratios(&self) -> &'static [TimeRatio] {
        &FIGURES
    }

    fn figures(&self, _gpu: &GpuInfo, results: &[TimedRun<Spec>]) -> Vec<Figure> {
        let stream = results.iter().find_map(|m| match m.run.spec {
            Spec::Tma(spec) if m.run.label == STREAM_FIGURE_RUN => Some(gigabytes_per_s(&spec, m.timing.median_ms)),
            _ => None,
        });
        stream
            .map(|value| Figure {
                key: "tma_stream_128_128b_gbps",
                label: format!("{STREAM_FIGURE_RUN}: bytes copied into shared memory per second"),
                value,
                unit: "GB/s",
            })
            .into_iter()
            .collect()
    }

    fn summarize(&self, gpu: &GpuInfo, results: &[TimedRun<Spec>], report: &mut Report) {
        let tma: Vec<(&TimedRun<Spec>, TmaSpec)> = results
            .iter()
            .filter_map(|m| match m.run.spec {
                Spec::Tma(spec) => Some((m, spec)),
                Spec::Gemm(_) => None,
            })
            .collect();
        summarize_tma(&tma, report);
        let gemms: Vec<(&TimedRun<Spec>, GemmSpec)> = results
            .iter()
            .filter_map(|m| match m.run.spec {
                Spec::Gemm(spec) => Some((m, spec)),
                Spec::Tma(_) => None,
            })
            .collect();
        summarize_gemms(&gemms, report);
        for figure in self.all_figures(gpu, results) {
            let value = match figure.unit {
                "x" => format!("{}x", format_ratio(figure.value)),
                unit => format!("{:.0} {unit}", figure.value),
            };
            report.text(format!("{}: {value}", figure.label));
        }
    }
}

/// The TMA runs' tables: the readback's check, which mode suits which width, the stream.
fn summarize_tma(results: &[(&TimedRun<Spec>, TmaSpec)], report: &mut Report) {
    report.heading("The readback: every 16-bit element of the tile against the rule (padding must read 0)");
    let rows = results
        .iter()
        .filter(|(_, spec)| spec.kernel == TmaKernel::Readback)
        .map(|&(m, spec)| {
            let mut row: Vec<Styled> = vec![spec.mode.into(), spec.width.into()];
            row.push((BOX_ROWS * row_pitch(spec.width, spec.mode) / 2).into());
            // The check fails the run on any difference: a row here matched everywhere.
            row.push(styled(0, Tone::Good));
            row.extend(family_cells(m, SharedFamily::Sts));
            row.extend(family_cells(m, SharedFamily::Lds));
            row
        })
        .collect();
    report.table(
        ["mode", "row bytes", "elements checked", "mismatches", "st model", "st ncu", "ld model", "ld ncu"],
        rows,
    );

    let find = |kernel: fn(&TmaKernel) -> bool, width: u32, mode: TmaSwizzle| {
        results.iter().find(|(_, s)| kernel(&s.kernel) && s.width == width && s.mode == mode).copied()
    };
    let ldmatrix = |width, mode| find(|k| matches!(k, TmaKernel::Ldmatrix { .. }), width, mode);
    let stream = |width, mode| find(|k| matches!(k, TmaKernel::Stream { .. }), width, mode);
    let Some((_, first)) = ldmatrix(128, TmaSwizzle::Bytes128) else { return };
    report.heading(format!(
        "Which swizzle mode suits which row width, measured: {} blocks reading their box {LDMATRIX_ITERATIONS} times; \
         the TMA copying {STREAM_BOXES} boxes per block",
        first.blocks()
    ));
    let rows = WIDTHS
        .into_iter()
        .flat_map(|width| {
            let times = TmaSwizzle::ALL.into_iter().filter_map(|mode| ldmatrix(width, mode));
            let best = times.map(|(m, _)| m.timing.median_ms).fold(f64::INFINITY, f64::min);
            TmaSwizzle::ALL.map(move |mode| (width, mode, best))
        })
        .map(|(width, mode, best)| {
            let mut row = suitability_cells(width, mode);
            match (ldmatrix(width, mode), stream(width, mode)) {
                (Some((reads, _)), Some((copies, spec))) => {
                    row.extend(family_cells(reads, SharedFamily::Ldsm).into_iter().skip(1));
                    row.push(median_cell(&reads.timing));
                    row.push(format!("{:.2}x", reads.timing.median_ms / best).into());
                    row.push(format!("{:.0}", gigabytes_per_s(&spec, copies.timing.median_ms)).into());
                }
                _ => row.extend(["-"; 4].map(Styled::from)),
            }
            row
        })
        .collect();
    report.table(SUITABILITY.into_iter().chain(["ldmatrix ncu", "reads ms", "of the best", "TMA GB/s"]), rows);

    report.heading("The TMA's own throughput into shared memory");
    let rows = valid_modes()
        .filter_map(|(width, mode)| stream(width, mode))
        .map(|(m, spec)| {
            vec![
                m.run.label.as_str().into(),
                median_cell(&m.timing),
                spread_cell(&m.timing),
                format!("{:.0}", gigabytes_per_s(&spec, m.timing.median_ms)).into(),
            ]
        })
        .collect();
    report.table(["run", "median ms", "spread", "GB/s"], rows);
}

/// The GEMM runs' table at each side: the copies' and reads' cost, model and ncu, and the clock.
fn summarize_gemms(results: &[(&TimedRun<Spec>, GemmSpec)], report: &mut Report) {
    for timed in lesson_14_tensor_cores::TIMED_SIZES {
        let runs: Vec<_> = results.iter().filter(|(_, spec)| spec.timed == timed).collect();
        let cublas = runs.iter().find(|(_, spec)| matches!(spec.multiply, Multiply::Cublas(_)));
        let Some(&&(cublas, cublas_spec)) = cublas else { continue };
        let cublas_tflops = cublas_spec.tflops(cublas.timing.median_ms);
        report.heading(format!(
            "{timed}^3 bf16: TFLOP/s = 2 n^3 / time; wavefronts per instruction from one launch at {0}^3",
            pipeline::PROFILED.m
        ));
        let rows = runs
            .iter()
            .map(|&&(m, spec)| {
                let tflops = spec.tflops(m.timing.median_ms);
                let mut row: Vec<Styled> = vec![m.run.label.as_str().into()];
                match spec.multiply {
                    Multiply::Kernel(tiles) => row.push(pipeline::kib(tiles.shared_bytes()).into()),
                    Multiply::Cublas(_) => row.push("-".into()),
                }
                row.extend(family_cells(m, SharedFamily::Ldgsts));
                row.extend(family_cells(m, SharedFamily::Ldsm));
                row.push(median_cell(&m.timing));
                row.push(spread_cell(&m.timing));
                row.push(format!("{tflops:.0}").into());
                row.push(format!("{:.0}%", 100.0 * tflops / cublas_tflops).into());
                row
            })
            .collect();
        report.table(
            [
                "kernel",
                "shared per block",
                "cp.async model",
                "cp.async ncu",
                "ldmatrix model",
                "ldmatrix ncu",
                "median ms",
                "spread",
                "TFLOP/s",
                "of cuBLAS",
            ],
            rows,
        );
    }
}

/// The columns of [`suitability_cells`].
const SUITABILITY: [&str; 6] = ["row bytes", "mode", "valid", "shared bytes a row", "padding", "ldmatrix.x4 model"];

/// A width and a mode: whether the driver takes them, the bytes a row takes in the tile, and the
/// model's wavefronts for the worst `ldmatrix.x4` (4 when conflict-free).
fn suitability_cells(width: u32, mode: TmaSwizzle) -> Vec<Styled> {
    let mut row = vec![width.into(), mode.into()];
    if !valid(width, mode) {
        row.push(styled("no", Tone::Bad));
        row.extend(["-"; 3].map(Styled::from));
        return row;
    }
    let (pitch, wavefronts) = (row_pitch(width, mode), tma::ldmatrix_wavefronts(width, mode));
    row.push(styled("yes", Tone::Good));
    row.push(pitch.into());
    row.push(styled(pitch - width, if pitch == width { Tone::Good } else { Tone::Warn }));
    row.push(styled(wavefronts, Tone::of_wavefronts(wavefronts, 4)));
    row
}

/// The header of a picture of the tile: a column per 16-byte position of a row's pitch.
fn position_header(width: u32, mode: TmaSwizzle) -> Vec<String> {
    ["row".to_owned()].into_iter().chain((0..row_pitch(width, mode) / 16).map(|p| format!("byte {}", 16 * p))).collect()
}

/// Rows 0 to 7 of the tile: the chunk of the box row at each position.
fn chunk_rows(width: u32, mode: TmaSwizzle) -> Vec<Vec<Styled>> {
    (0..8)
        .map(|row| {
            let positions = (0..row_pitch(width, mode) / 16).map(|p| tma::chunk_at(row, p, width, mode));
            [row.into()].into_iter().chain(positions.map(|chunk| chunk.map_or("-".into(), Styled::from))).collect()
        })
        .collect()
}

/// Bytes the TMA copied into shared memory per second, in GB/s.
fn gigabytes_per_s(spec: &TmaSpec, median_ms: f64) -> f64 {
    spec.bytes_copied() as f64 / (median_ms * 1e-3) / 1e9
}

/// The matrix a run's tensor map describes, its rows of `width / 2` elements: numbered for the
/// readback, random for the ldmatrix reads (a wrong fragment changes their XOR), zeros for the
/// stream, which checks nothing of the data.
fn matrix(spec: &TmaSpec) -> Vec<u16> {
    let elements = (spec.rows() * spec.width / 2) as usize;
    match spec.kernel {
        TmaKernel::Readback => (0..elements as u32)
            .map(|i| tma::readback_element(spec.width, i / (spec.width / 2), i % (spec.width / 2)))
            .collect(),
        TmaKernel::Ldmatrix { .. } => random_words(elements).into_iter().map(|w| w as u16).collect(),
        TmaKernel::Stream { .. } => vec![0; elements],
    }
}

fn prepare_tma(gpu: &Gpu, spec: TmaSpec) -> Result<Box<dyn Prepared + '_>, GpuError> {
    let matrix = matrix(&spec);
    let device_matrix = gpu.upload(&matrix)?;
    let map = gpu.tensor_map_2d(
        &device_matrix,
        Box2d {
            row_elements: (spec.width / 2) as u64,
            rows: spec.rows() as u64,
            box_elements: spec.width / 2,
            box_rows: BOX_ROWS,
            swizzle: spec.mode,
        },
    )?;
    Ok(Box::new(TmaRun {
        gpu,
        function: gpu.function(tma::KERNEL_FILE, spec.name())?,
        out: gpu.zeros(spec.out_words() as usize)?,
        map,
        _device_matrix: device_matrix,
        matrix,
        spec,
    }))
}

/// A TMA run with its matrix, tensor map and output on the GPU.
struct TmaRun<'g> {
    gpu: &'g Gpu,
    function: CudaFunction,
    spec: TmaSpec,
    matrix: Vec<u16>,
    /// What the tensor map points at: kept alive while it is used.
    _device_matrix: CudaSlice<u16>,
    map: TensorMap,
    out: CudaSlice<u32>,
}

impl Prepared for TmaRun<'_> {
    fn launch(&mut self) -> Result<(), GpuError> {
        let TmaSpec { kernel, width, mode } = self.spec;
        let config =
            LaunchConfig { grid_dim: (self.spec.blocks(), 1, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 };
        let swizzle_bytes = mode.bytes();
        let mut launch = self.gpu.stream().launch_builder(&self.function);
        launch.arg(&self.map).arg(&mut self.out).arg(&width);
        let (rows, iterations, boxes);
        match kernel {
            TmaKernel::Readback => launch.arg(&swizzle_bytes),
            TmaKernel::Ldmatrix { iterations: count, .. } => {
                iterations = count;
                launch.arg(&swizzle_bytes).arg(&iterations)
            }
            TmaKernel::Stream { boxes: count, .. } => {
                (rows, boxes) = (STREAM_ROWS, count);
                launch.arg(&rows).arg(&boxes)
            }
        };
        // SAFETY: every kernel takes (TensorMap map, unsigned* out, unsigned width, ...): the
        // readback (unsigned swizzle_bytes) writes the tile's words to `out`, which holds them;
        // the ldmatrix reads (unsigned swizzle_bytes, unsigned iterations) a word per thread; the
        // stream (unsigned rows, unsigned boxes) a word per block. The map describes the matrix
        // this run keeps on the GPU, `rows` rows of `width` bytes, with boxes of 64 rows.
        unsafe { launch.launch(config) }?;
        Ok(())
    }

    fn check(&mut self) -> Result<OutputCheck, GpuError> {
        let out = self.gpu.download(&self.out)?;
        let TmaSpec { kernel, width, mode } = self.spec;
        match kernel {
            TmaKernel::Readback => check_tile(&out, &tma::predicted_tile(&self.matrix, width, mode), width, mode)?,
            TmaKernel::Ldmatrix { iterations, .. } => {
                let sums = tma::ldmatrix_sums(&self.matrix, width, iterations);
                if let Some(index) = (0..out.len()).find(|&i| out[i] != sums[i % THREADS as usize]) {
                    return Err(GpuError::WrongResult(format!(
                        "block {}, thread {}: {:#010x}, the fragments from the matrix say {:#010x}",
                        index / THREADS as usize,
                        index % THREADS as usize,
                        out[index],
                        sums[index % THREADS as usize]
                    )));
                }
            }
            TmaKernel::Stream { boxes, .. } => {
                if let Some(block) = out.iter().position(|&done| done != boxes) {
                    return Err(GpuError::WrongResult(format!(
                        "block {block} reports {} boxes of {boxes}",
                        out[block]
                    )));
                }
            }
        }
        Ok(OutputCheck::exact(&out))
    }
}

/// Compares the tile read back (little-endian words) with the rule's, 16-bit element by element.
fn check_tile(out: &[u32], predicted: &[u16], width: u32, mode: TmaSwizzle) -> Result<(), GpuError> {
    let element = |i: usize| (out[i / 2] >> (16 * (i % 2))) as u16;
    let wrong: Vec<usize> = (0..predicted.len()).filter(|&i| element(i) != predicted[i]).collect();
    match wrong.first() {
        None => Ok(()),
        Some(&first) => {
            let pitch = row_pitch(width, mode) as usize;
            Err(GpuError::WrongResult(format!(
                "{} of {} elements differ from the layout rule; the first, tile row {} byte {}, is {}, the rule says {}",
                wrong.len(),
                predicted.len(),
                2 * first / pitch,
                2 * first % pitch,
                element(first),
                predicted[first]
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use lesson_kit::declarations::declaration_problems;

    use super::*;

    #[test]
    fn the_lesson_runs_the_nine_valid_pairs_for_each_kernel_then_the_gemms() {
        for size in [RunSize::Profile, RunSize::Timed] {
            let runs = Tma.runs(&GpuInfo::h100(), size);
            let tma: Vec<TmaSpec> = runs
                .iter()
                .filter_map(|run| match run.spec {
                    Spec::Tma(spec) => Some(spec),
                    Spec::Gemm(_) => None,
                })
                .collect();
            assert_eq!(tma.len(), 27);
            assert!(tma.iter().all(|spec| valid(spec.width, spec.mode)));
            assert_eq!(runs.len() - tma.len(), pipeline::specs(size).len());
        }
        assert_eq!(declaration_problems(&Tma, &GpuInfo::h100()), Vec::<String>::new());
    }

    #[test]
    fn profiled_ldmatrix_runs_execute_3_passes_of_4_8_16_ldmatrix_at_4_wavefronts_when_swizzled() {
        let runs = Tma.runs(&GpuInfo::h100(), RunSize::Profile);
        let run = |label: &str| runs.iter().find(|run| run.label == label).expect("a run of that label");
        for (width, ldsm) in [(32, 3 * 4), (64, 3 * 8), (128, 3 * 16)] {
            let swizzled = run(&format!("ldmatrix, {width}-byte rows, 128B"));
            assert_eq!(swizzled.predicted(tma::LDSM_X4), (4 * ldsm, ldsm));
            let none = run(&format!("ldmatrix, {width}-byte rows, NONE"));
            assert_eq!(none.predicted(tma::LDSM_X4), (4 * ldsm * width as u64 / 16, ldsm), "{width}");
        }
        let stream = run(STREAM_FIGURE_RUN);
        assert!(stream.accesses.is_empty(), "the TMA's copy is no LSU access");
    }

    #[test]
    fn the_streams_figure_is_the_bytes_its_boxes_carried_per_second() {
        let runs = Tma.runs(&GpuInfo::h100(), RunSize::Timed);
        let stream = runs.into_iter().find(|run| run.label == STREAM_FIGURE_RUN).expect("the figure's run");
        let timing = cuda_kernels::timing::Timing::from_samples(vec![0.5]).expect("one sample");
        let results = [TimedRun { run: stream, timing, counters: None, occupancy: None }];
        let figures = Tma.figures(&GpuInfo::h100(), &results);
        // 528 blocks of 256 boxes of 64 rows of 128 bytes, in half a millisecond.
        let bytes = 528.0 * 256.0 * 64.0 * 128.0;
        assert_eq!(
            figures.iter().map(|f| (f.key, f.value)).collect::<Vec<_>>(),
            [("tma_stream_128_128b_gbps", bytes / 0.5e-3 / 1e9)]
        );
    }

    #[test]
    fn the_summary_divides_by_the_best_mode_and_by_cublas() {
        // Every run 1 ms, but unswizzled reads of 128-byte rows 8 ms and cuBLAS at 8192^3 0.5 ms.
        let results: Vec<TimedRun<Spec>> = Tma
            .runs(&GpuInfo::h100(), RunSize::Timed)
            .into_iter()
            .map(|run| {
                let median_ms = match run.label.as_str() {
                    "ldmatrix, 128-byte rows, NONE" => 8.0,
                    "cuBLAS bf16, 8192^3" => 0.5,
                    _ => 1.0,
                };
                let timing = cuda_kernels::timing::Timing::from_samples(vec![median_ms]).expect("one sample");
                TimedRun { run, timing, counters: None, occupancy: None }
            })
            .collect();
        let mut report = Report::default();
        Tma.summarize(&GpuInfo::h100(), &results, &mut report);
        let text = report.render(false);
        let row = |start: &str| text.lines().find(|line| line.starts_with(start)).unwrap_or_else(|| panic!("{start}"));
        assert!(row("│ 128       ┆ NONE ").contains("8.00x"), "{text}");
        assert!(row("│ 128       ┆ 128B ").contains("1.00x"));
        assert!(row("│ bf16 swizzled, 3 stages, 8192^3").contains("50%"), "half of cuBLAS's rate");
        assert!(text.contains("bf16 GEMM 8192^3, swizzled tiles, 1 stage's time over 3 stages': 1x"));
    }

    #[test]
    fn a_wrong_element_fails_the_readback_and_names_its_place() {
        let matrix: Vec<u16> = (0..BOX_ROWS * 16).map(|i| tma::readback_element(32, i / 16, i % 16)).collect();
        let predicted = tma::predicted_tile(&matrix, 32, TmaSwizzle::Bytes64);
        let mut words: Vec<u32> = predicted.chunks(2).map(|pair| pair[0] as u32 | (pair[1] as u32) << 16).collect();
        assert!(check_tile(&words, &predicted, 32, TmaSwizzle::Bytes64).is_ok());
        // Row 2 of the tile (bytes 128 to 191) holds box row 2's chunk 1 first, then 32 bytes of
        // padding: a flipped bit in either is found where it is.
        let mut wrong = words.clone();
        wrong[130 / 4] ^= 0x1_0000;
        let error = check_tile(&wrong, &predicted, 32, TmaSwizzle::Bytes64).unwrap_err().to_string();
        assert!(error.contains("1 of 2048 elements differ") && error.contains("tile row 2 byte 2,"), "{error}");
        words[160 / 4] = 7;
        let error = check_tile(&words, &predicted, 32, TmaSwizzle::Bytes64).unwrap_err().to_string();
        assert!(error.ends_with("tile row 2 byte 32, is 7, the rule says 0"), "{error}");
    }
}
