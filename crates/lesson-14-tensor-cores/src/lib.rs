//! Lesson 14: tensor-core tiles.
//!
//! An `mma.sync` GEMM never multiplies from shared memory: every operand is first read into
//! registers with `ldmatrix`, and the accumulators leave through `stmatrix`. Both move 8 x 8
//! matrices of 16-byte rows, and a tile whose rows are 128 or 256 bytes long puts the 8 rows of
//! a matrix in the same 4 banks: 8-way. Padding each row by 16 bytes frees them, for 12.5% more
//! of A's tile; CuTe's `Swizzle<3, 3, S>` frees them at no cost. The second part is
//! CUTLASS issue 3172's M-major tile read with `ldmatrix.x4.trans`, under three swizzles.

pub mod gemm;
mod launch;
pub mod m_major;
mod summary;

use bank_model::{Request, swizzle::Swizzle};
use cuda_kernels::{Gpu, GpuError, GpuInfo};
use lesson_kit::{
    Chart, Figure, KernelRun, Lesson, Point, Prepared, Report, RunSize, Series, Styled, TimeRatio, TimedRun, Tone,
    bank_table::add_bank_grid, cells::format_ratio, styled,
};

use gemm::{BLOCK_K, BLOCK_M, BLOCK_N, Element, Layout, Shape, Tiles};
pub use launch::prepare_gemm;
use m_major::MMajor;

/// Matrix sides (M = N = K) the GEMMs are timed at, and the one every run is profiled at.
pub const TIMED_SIZES: [u32; 2] = [4096, 8192];
pub const PROFILED_SIZE: u32 = 256;
/// The M-major reads timed: blocks per SM and reads of the tile per block.
const M_MAJOR_BLOCKS_PER_SM: u32 = 16;
/// Odd: an even count of reads XORs every thread's fragments back to 0.
const M_MAJOR_ITERATIONS: u32 = 2047;
/// Passes of the profiled M-major launch: more than one, so that ncu's counts show a pass the
/// compiler merged into another.
const PROFILED_M_MAJOR_ITERATIONS: u32 = 3;

const fn kernel(element: Element, layout: Layout, bypass_l1: bool) -> Multiply {
    Multiply::Kernel(Tiles { element, layout, stages: 3, bypass_l1 })
}
const CUBLAS_BF16: Multiply = Multiply::Cublas(Element::Bf16);
const CUBLAS_F16: Multiply = Multiply::Cublas(Element::F16);
const BF16_UNPADDED: Multiply = kernel(Element::Bf16, Layout::Unpadded, false);
const BF16_PADDED: Multiply = kernel(Element::Bf16, Layout::Padded, false);
const BF16_SWIZZLED: Multiply = kernel(Element::Bf16, Layout::Swizzled, false);
/// The lesson's fastest kernels: swizzled, with `cp.async.cg` (lesson 15 says why it is faster).
const BF16_SWIZZLED_CG: Multiply = kernel(Element::Bf16, Layout::Swizzled, true);
const F16_SWIZZLED_CG: Multiply = kernel(Element::F16, Layout::Swizzled, true);
/// The GEMMs at each size, each kernel after the cuBLAS of its type.
const GEMMS: [Multiply; 7] =
    [CUBLAS_BF16, BF16_UNPADDED, BF16_PADDED, BF16_SWIZZLED, BF16_SWIZZLED_CG, CUBLAS_F16, F16_SWIZZLED_CG];

/// Each GEMM run's headline figures: its TFLOP/s, and its share of cuBLAS's in its type.
const GEMM_FIGURES: [(u32, Multiply, &str, Option<&str>); 14] = [
    (4096, CUBLAS_BF16, "tc_cublas_bf16_4096_tflops", None),
    (4096, BF16_UNPADDED, "tc_bf16_unpadded_4096_tflops", Some("tc_bf16_unpadded_4096_of_cublas")),
    (4096, BF16_PADDED, "tc_bf16_padded_4096_tflops", Some("tc_bf16_padded_4096_of_cublas")),
    (4096, BF16_SWIZZLED, "tc_bf16_swizzled_4096_tflops", Some("tc_bf16_swizzled_4096_of_cublas")),
    (4096, BF16_SWIZZLED_CG, "tc_bf16_swizzled_cg_4096_tflops", Some("tc_bf16_swizzled_cg_4096_of_cublas")),
    (4096, CUBLAS_F16, "tc_cublas_fp16_4096_tflops", None),
    (4096, F16_SWIZZLED_CG, "tc_fp16_swizzled_cg_4096_tflops", Some("tc_fp16_swizzled_cg_4096_of_cublas")),
    (8192, CUBLAS_BF16, "tc_cublas_bf16_8192_tflops", None),
    (8192, BF16_UNPADDED, "tc_bf16_unpadded_8192_tflops", Some("tc_bf16_unpadded_8192_of_cublas")),
    (8192, BF16_PADDED, "tc_bf16_padded_8192_tflops", Some("tc_bf16_padded_8192_of_cublas")),
    (8192, BF16_SWIZZLED, "tc_bf16_swizzled_8192_tflops", Some("tc_bf16_swizzled_8192_of_cublas")),
    (8192, BF16_SWIZZLED_CG, "tc_bf16_swizzled_cg_8192_tflops", Some("tc_bf16_swizzled_cg_8192_of_cublas")),
    (8192, CUBLAS_F16, "tc_cublas_fp16_8192_tflops", None),
    (8192, F16_SWIZZLED_CG, "tc_fp16_swizzled_cg_8192_tflops", Some("tc_fp16_swizzled_cg_8192_of_cublas")),
];

/// What the swizzle saves the bf16 GEMM, against no padding and against padding.
const FIGURES: [TimeRatio; 4] = [
    TimeRatio {
        key: "tc_gemm_8192_unpadded_vs_swizzled",
        label: "bf16 GEMM 8192^3, unpadded tiles' time over swizzled",
        numerator: "bf16 unpadded, 8192^3",
        denominator: "bf16 swizzled, 8192^3",
    },
    TimeRatio {
        key: "tc_gemm_8192_padded_vs_swizzled",
        label: "bf16 GEMM 8192^3, padded tiles' time over swizzled",
        numerator: "bf16 padded, 8192^3",
        denominator: "bf16 swizzled, 8192^3",
    },
    TimeRatio {
        key: "tc_gemm_4096_unpadded_vs_swizzled",
        label: "bf16 GEMM 4096^3, unpadded tiles' time over swizzled",
        numerator: "bf16 unpadded, 4096^3",
        denominator: "bf16 swizzled, 4096^3",
    },
    TimeRatio {
        key: "tc_gemm_4096_padded_vs_swizzled",
        label: "bf16 GEMM 4096^3, padded tiles' time over swizzled",
        numerator: "bf16 padded, 4096^3",
        denominator: "bf16 swizzled, 4096^3",
    },
];

/// A GEMM the lesson times: cuBLAS, or one of the lesson's kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Multiply {
    Cublas(Element),
    Kernel(Tiles),
}

impl Multiply {
    pub fn element(self) -> Element {
        match self {
            Multiply::Cublas(element) => element,
            Multiply::Kernel(tiles) => tiles.element,
        }
    }

    pub fn name(self) -> String {
        match self {
            Multiply::Cublas(element) => format!("cuBLAS {}", element.name()),
            Multiply::Kernel(tiles) if tiles.bypass_l1 => {
                format!("{} {} {}", tiles.element.name(), tiles.layout.name(), tiles.copy_name())
            }
            Multiply::Kernel(tiles) => format!("{} {}", tiles.element.name(), tiles.layout.name()),
        }
    }
}

/// One run. A GEMM run is named by the size it is timed at; its profile launch is
/// [`PROFILED_SIZE`] cubed whatever that size, so that ncu reads a small launch of each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spec {
    Gemm { multiply: Multiply, timed: u32, shape: Shape },
    MMajor(MMajor),
}

impl Spec {
    fn label(&self) -> String {
        match self {
            Spec::Gemm { multiply, timed, .. } => format!("{}, {timed}^3", multiply.name()),
            Spec::MMajor(spec) => format!("M-major ldmatrix.x4.trans, {}", swizzle_name(spec.swizzle)),
        }
    }

    fn run(self) -> KernelRun<Spec> {
        let (kernel, accesses) = match self {
            Spec::Gemm { multiply: Multiply::Cublas(_), .. } => (None, Vec::new()),
            Spec::Gemm { multiply: Multiply::Kernel(tiles), shape, .. } => (
                Some(tiles.kernel().expect("tensor_core_gemm.cu defines every kernel the lesson runs")),
                tiles.accesses(shape),
            ),
            Spec::MMajor(spec) => (Some(spec.kernel()), spec.accesses()),
        };
        KernelRun { label: self.label(), kernel, accesses, spec: self }
    }
}

fn swizzle_name(swizzle: Swizzle) -> String {
    match swizzle {
        Swizzle::IDENTITY => "no swizzle".into(),
        swizzle => swizzle.to_string(),
    }
}

/// Every run of the lesson at `size`, on a GPU of `multiprocessors` SMs.
fn specs(size: RunSize, multiprocessors: u32) -> Vec<Spec> {
    let mut specs: Vec<Spec> = TIMED_SIZES
        .into_iter()
        .flat_map(|timed| {
            let shape = Shape::cube(if size == RunSize::Profile { PROFILED_SIZE } else { timed });
            GEMMS.map(|multiply| Spec::Gemm { multiply, timed, shape })
        })
        .collect();
    let (blocks, iterations) = match size {
        RunSize::Profile => (1, PROFILED_M_MAJOR_ITERATIONS),
        RunSize::Timed => (M_MAJOR_BLOCKS_PER_SM * multiprocessors, M_MAJOR_ITERATIONS),
    };
    specs.extend(m_major::KERNELS.map(|(swizzle, _)| Spec::MMajor(MMajor { swizzle, blocks, iterations })));
    specs
}

/// Instructions and wavefronts of each named instruction among `requests`, in order of first
/// appearance.
fn by_name(requests: &[(&'static str, Request)]) -> Vec<(&'static str, u64, u64)> {
    let mut totals: Vec<(&'static str, u64, u64)> = Vec::new();
    for (name, request) in requests {
        let wavefronts = request.wavefronts() as u64;
        match totals.iter_mut().find(|(n, _, _)| n == name) {
            Some((_, count, sum)) => (*count, *sum) = (*count + 1, *sum + wavefronts),
            None => totals.push((name, 1, wavefronts)),
        }
    }
    totals
}

/// A cell of wavefronts per instruction, toned against the 4 of a conflict-free 16-byte access.
fn per_instruction_cell(count: u64, wavefronts: u64) -> Styled {
    styled(format_ratio(wavefronts as f64 / count as f64), Tone::of_wavefronts(wavefronts as u32, 4 * count as u32))
}

/// Floating-point operations per second of a GEMM run, in TFLOP/s.
fn tflops(m: &TimedRun<Spec>) -> Option<f64> {
    match m.run.spec {
        Spec::Gemm { shape, .. } => Some(shape.flops() / (m.timing.median_ms * 1e-3) / 1e12),
        Spec::MMajor(_) => None,
    }
}

/// The timed run of `multiply` at `timed`.
fn gemm_run(results: &[TimedRun<Spec>], multiply: Multiply, timed: u32) -> Option<&TimedRun<Spec>> {
    results
        .iter()
        .find(|m| matches!(m.run.spec, Spec::Gemm { multiply: x, timed: t, .. } if x == multiply && t == timed))
}

/// A GEMM run's TFLOP/s over cuBLAS's in its type at its size, in percent.
fn share_of_cublas(results: &[TimedRun<Spec>], multiply: Multiply, timed: u32) -> Option<f64> {
    let own = tflops(gemm_run(results, multiply, timed)?)?;
    let cublas = tflops(gemm_run(results, Multiply::Cublas(multiply.element()), timed)?)?;
    Some(100.0 * own / cublas)
}

pub struct TensorCores;

/// The lesson, as the course's list of lessons names it.
pub static LESSON: TensorCores = TensorCores;

impl Lesson for TensorCores {
    type Spec = Spec;

    const NUMBER: u32 = 14;
    const TITLE: &'static str = "Tensor-core tiles";
    const KERNEL_FILES: &'static [&'static str] = &[gemm::KERNEL_FILE, m_major::KERNEL_FILE];

    fn reference(&self) -> &'static str {
        "the CPU in double precision at 256^3 and cuBLAS at the timed sizes (cuBLAS itself the CPU on 16 rows), \
         within a unit in the last place of the type and 2^-12 sqrt(K) besides; the M-major reads' fragments \
         computed from the tile"
    }

    fn model(&self, report: &mut Report) {
        report.text(format!(
            "C = A B on the tensor cores: a block of {} threads computes a {BLOCK_M} x {BLOCK_N} tile of C, K in \
             tiles of {BLOCK_K}. Per k-tile cp.async copies A's {BLOCK_M} x {BLOCK_K} tile and B's {BLOCK_K} x \
             {BLOCK_N} into shared memory, 16 bytes a lane, and each warp reads its fragments with ldmatrix.x4 (A) \
             and ldmatrix.x4.trans (B). An x4 reads 4 matrices of 8 rows of 16 bytes, one row address per lane: \
             4 wavefronts when the 32 rows fall in distinct banks. The epilogue stores the accumulators with \
             stmatrix.x4 and reads C's tile out with 16-byte loads. Chapter 14 of the book explains the counts.",
            gemm::THREADS
        ));
        report.heading(
            "One block's shared-memory instructions: pitches in halves, wavefronts per instruction (4 is \
             conflict-free) and per k-tile",
        );
        let kinds =
            ["cp.async A", "cp.async B", "ldmatrix.x4 A", "ldmatrix.x4.trans B", "stmatrix.x4 C", "ld.shared.v4 C"];
        let rows = Layout::ALL
            .into_iter()
            .map(|layout| {
                let tiles = Tiles { element: Element::Bf16, layout, stages: 3, bypass_l1: false };
                let mut requests = tiles.k_tile_requests(0);
                let k_tile = by_name(&requests);
                requests.extend(tiles.epilogue_requests());
                let all = by_name(&requests);
                let (count, wavefronts) = k_tile.iter().fold((0, 0), |(c, w), &(_, n, x)| (c + n, w + x));
                let pitches = format!("{} / {}", layout.pitch(BLOCK_K), layout.pitch(BLOCK_N));
                let mut row = vec![layout.name().into(), pitches.into()];
                row.extend(kinds.iter().map(|kind| {
                    let &(_, count, wavefronts) = all.iter().find(|(name, _, _)| name == kind).expect("every kind");
                    per_instruction_cell(count, wavefronts)
                }));
                row.push(styled(wavefronts, Tone::of_wavefronts(wavefronts as u32, 4 * count as u32)));
                row.push((4 * count).into());
                row
            })
            .collect();
        report.table(
            ["tiles", "pitch A / B"]
                .into_iter()
                .chain(["cp.async A", "cp.async B", "ldmatrix A", "ldmatrix.trans B", "stmatrix C", "ld.v4 C"])
                .chain(["k-tile", "ideal"]),
            rows,
        );
        let tiles = Tiles { element: Element::Bf16, layout: Layout::Swizzled, stages: 3, bypass_l1: false };
        let per = |requests: Vec<(&'static str, Request)>| {
            by_name(&requests).iter().map(|(name, count, _)| format!("{count} {name}")).collect::<Vec<_>>().join(", ")
        };
        report.text(format!(
            "Per k-tile a block issues {}; its epilogue {}. The swizzle is CuTe's Swizzle<3, 3, 3> on A's half \
             offsets and Swizzle<3, 3, 4> on B's and C's. The three layouts are filled with cp.async.ca; the fastest \
             kernel fills the swizzled tile with cp.async.cg, which the model counts only where whole source lines \
             and sectors land whole (chapter 14 says why).",
            per(tiles.k_tile_requests(0)),
            per(tiles.epilogue_requests())
        ));
        for layout in [Layout::Unpadded, Layout::Swizzled] {
            report.heading(format!("Warp 0's first ldmatrix.x4 of A, {} tile (rows of 64 halves)", layout.name()));
            let request = Tiles { element: Element::Bf16, layout, stages: 3, bypass_l1: false }.load_a(0, 0, 0, 0);
            add_bank_grid(report, &request, &request.analyze());
        }

        report
            .heading("CUTLASS issue 3172: a 128 x 32 tile of A in M-major (128, 8) atoms, read with ldmatrix.x4.trans");
        let rows = m_major::KERNELS
            .into_iter()
            .map(|(swizzle, _)| {
                let spec = MMajor { swizzle, blocks: 1, iterations: 1 };
                let run = Spec::MMajor(spec).run();
                let (wavefronts, count) = run.predicted(m_major::LDSM_T);
                let worst = spec.worst_read();
                vec![
                    swizzle_name(swizzle).into(),
                    styled(worst, Tone::of_wavefronts(worst, 4)),
                    count.into(),
                    wavefronts.into(),
                    styled(run.predicted_excess(), if run.predicted_excess() == 0 { Tone::Good } else { Tone::Bad }),
                ]
            })
            .collect();
        report
            .table(["swizzle", "wavefronts per read", "reads (a block, once)", "wavefronts", "beyond the ideal"], rows);
        report.text(
            "Each row of the atom is one k and 128 halves of M (256 bytes): Swizzle<3, 3, 4> XORs the row's 3 low \
             bits into the 16-byte chunk; Swizzle<3, 3, 3> takes one of those bits from M instead, and leaves pairs \
             of rows in the same banks.",
        );
        report.heading("The same tile stored K-major (rows of 32 halves, 64 bytes), read with ldmatrix.x4");
        let rows = [Swizzle::IDENTITY, Swizzle { bits: 2, base: 3, shift: 3 }, Swizzle { bits: 3, base: 3, shift: 3 }]
            .into_iter()
            .chain([m_major::KERNELS[2].0])
            .map(|swizzle| {
                let worst = m_major::k_major_worst(swizzle);
                vec![swizzle_name(swizzle).into(), styled(worst, Tone::of_wavefronts(worst, 4))]
            })
            .collect();
        report.table(["swizzle", "wavefronts per read"], rows);
        report.text(
            "A swizzle fits a layout, not a tile: Swizzle<3, 3, 4>, conflict-free on the M-major atom, is 2-way on \
             the K-major one, whose rows want their bits 1 and 2 in the chunk.",
        );
        let spec = MMajor { swizzle: m_major::KERNELS[1].0, blocks: 1, iterations: 1 };
        report.heading("Warp 0's first M-major read under Swizzle<3, 3, 3>");
        let request = spec.read(0, 0, 0);
        add_bank_grid(report, &request, &request.analyze());
    }

    fn runs(&self, gpu: &GpuInfo, size: RunSize) -> Vec<KernelRun<Spec>> {
        specs(size, gpu.multiprocessors).into_iter().map(Spec::run).collect()
    }

    fn prepare<'g>(&self, gpu: &'g Gpu, run: &KernelRun<Spec>) -> Result<Box<dyn Prepared + 'g>, GpuError> {
        match run.spec {
            Spec::Gemm { multiply, shape, .. } => prepare_gemm(gpu, multiply, shape),
            Spec::MMajor(spec) => launch::prepare_m_major(gpu, spec),
        }
    }

    fn time_ratios(&self) -> &'static [TimeRatio] {
        &FIGURES
    }

    fn figures(&self, _gpu: &GpuInfo, results: &[TimedRun<Spec>]) -> Vec<Figure> {
        let mut figures = Vec::new();
        for (timed, multiply, key, share_key) in GEMM_FIGURES {
            if let Some(value) = gemm_run(results, multiply, timed).and_then(tflops) {
                let label = format!("{}, {timed}^3", multiply.name());
                figures.push(Figure { key, label, value, unit: "TFLOP/s" });
            }
            if let (Some(key), Some(value)) = (share_key, share_of_cublas(results, multiply, timed)) {
                let label = format!("{}, {timed}^3, of cuBLAS {}", multiply.name(), multiply.element().name());
                figures.push(Figure { key, label, value, unit: "%" });
            }
        }
        figures
    }

    fn series(&self, _gpu: &GpuInfo, results: &[TimedRun<Spec>]) -> Vec<Series> {
        TIMED_SIZES
            .into_iter()
            .zip(SERIES)
            .filter_map(|(timed, key)| {
                let points: Vec<Point> = GEMMS
                    .into_iter()
                    .filter_map(|multiply| {
                        let value = gemm_run(results, multiply, timed).and_then(tflops)?;
                        Some(Point { at: multiply.name(), value })
                    })
                    .collect();
                let label = format!("{timed}^3");
                (!points.is_empty()).then(|| Series { key: key.into(), label, unit: "TFLOP/s".into(), points })
            })
            .collect()
    }

    fn charts(&self) -> &'static [Chart] {
        &[Chart {
            file: "lesson-14-tensor-cores.svg",
            title: "Tensor-core GEMM throughput against cuBLAS",
            value_label: "TFLOP/s",
            series: &SERIES,
        }]
    }

    fn summarize(&self, gpu: &GpuInfo, results: &[TimedRun<Spec>], report: &mut Report) {
        summary::summarize(gpu, results, report);
    }
}

/// The series of each timed size, in [`TIMED_SIZES`]' order.
const SERIES: [&str; 2] = ["tc_gemm_tflops_4096", "tc_gemm_tflops_8192"];

#[cfg(test)]
mod tests {
    use cuda_kernels::timing::Timing;
    use lesson_kit::declarations::declaration_problems;

    use super::*;

    /// A timed run of `spec` that took `median_ms`.
    fn timed(spec: Spec, median_ms: f64) -> TimedRun<Spec> {
        let timing = Timing::from_samples(vec![median_ms]).expect("one sample");
        TimedRun { run: spec.run(), timing, counters: None, occupancy: None }
    }

    #[test]
    fn the_declarations_pass_the_courses_checks() {
        assert_eq!(declaration_problems(&TensorCores, &GpuInfo::h100()), Vec::<String>::new());
    }

    #[test]
    fn every_run_is_profiled_small_and_timed_at_its_size() {
        let h100 = GpuInfo::h100();
        let (profiled, timed) = (TensorCores.runs(&h100, RunSize::Profile), TensorCores.runs(&h100, RunSize::Timed));
        assert_eq!((profiled.len(), timed.len()), (17, 17));
        for (small, large) in profiled.iter().zip(&timed) {
            assert_eq!(small.label, large.label);
            match (small.spec, large.spec) {
                (Spec::Gemm { shape: s, timed: t, .. }, Spec::Gemm { shape, .. }) => {
                    assert_eq!((s, shape), (Shape::cube(PROFILED_SIZE), Shape::cube(t)), "{}", small.label);
                }
                (Spec::MMajor(s), Spec::MMajor(spec)) => {
                    assert_eq!((s.blocks, s.iterations), (1, PROFILED_M_MAJOR_ITERATIONS));
                    assert_eq!((spec.blocks, spec.iterations), (16 * 132, 2047));
                }
                _ => panic!("{} is a GEMM on one side only", small.label),
            }
        }
        let cublas = timed.iter().filter(|run| run.kernel.is_none());
        assert!(cublas.clone().count() == 4 && cublas.clone().all(|run| run.accesses.is_empty()));
    }

    #[test]
    fn the_figures_name_every_gemm_run_once() {
        let keys: Vec<&str> =
            GEMM_FIGURES.iter().flat_map(|(_, _, key, share)| [Some(*key), *share]).flatten().collect();
        let mut unique = keys.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!((keys.len(), unique.len()), (24, 24));
        let runs: Vec<(u32, Multiply)> = TIMED_SIZES.into_iter().flat_map(|t| GEMMS.map(|g| (t, g))).collect();
        let named: Vec<(u32, Multiply)> = GEMM_FIGURES.iter().map(|&(t, g, _, _)| (t, g)).collect();
        assert_eq!(named, runs);
    }

    #[test]
    fn figures_are_tflops_and_shares_of_the_cublas_of_the_same_type() {
        let spec = |multiply| Spec::Gemm { multiply, timed: 4096, shape: Shape::cube(4096) };
        let flops = 2.0 * 4096f64.powi(3);
        // cuBLAS bf16 at 1 ms, the swizzled bf16 kernel at 2, cuBLAS fp16 at 4 and fp16 at 8.
        let results = [
            timed(spec(CUBLAS_BF16), 1.0),
            timed(spec(BF16_SWIZZLED), 2.0),
            timed(spec(CUBLAS_F16), 4.0),
            timed(spec(F16_SWIZZLED_CG), 8.0),
        ];
        let figures = TensorCores.figures(&GpuInfo::h100(), &results);
        let value = |key: &str| figures.iter().find(|f| f.key == key).map(|f| f.value);
        assert_eq!(value("tc_cublas_bf16_4096_tflops"), Some(flops / 1e-3 / 1e12));
        assert_eq!(value("tc_bf16_swizzled_4096_of_cublas"), Some(50.0));
        assert_eq!(value("tc_fp16_swizzled_cg_4096_of_cublas"), Some(50.0));
        assert_eq!(value("tc_bf16_padded_4096_tflops"), None, "a run not measured has no figure");
        assert_eq!(figures.len(), 6);
    }

    #[test]
    fn unpadded_ldmatrix_holds_the_gemm_under_127_tflops_on_the_h100() {
        // The shared-memory floor the chapter derives: every declared wavefront at one a clock on
        // each of 132 SMs at 1,980 MHz.
        let bound = |multiply| {
            let spec = Spec::Gemm { multiply, timed: 8192, shape: Shape::cube(8192) };
            summary::shared_bound_tflops(&timed(spec, 1.0), &GpuInfo::h100()).expect("a kernel")
        };
        assert_eq!(format!("{:.1} {:.1}", bound(BF16_UNPADDED), bound(BF16_SWIZZLED)), "127.3 774.2");
        let spec = Spec::Gemm { multiply: CUBLAS_BF16, timed: 8192, shape: Shape::cube(8192) };
        assert_eq!(summary::shared_bound_tflops(&timed(spec, 1.0), &GpuInfo::h100()), None);
    }

    #[test]
    fn the_models_table_shows_8_way_tensor_core_accesses_only_unpadded() {
        let mut report = Report::default();
        TensorCores.model(&mut report);
        let text = report.render(false);
        let row = |layout: &str| {
            let line = text.lines().find(|line| line.contains(&format!(" {layout} "))).expect("a row per layout");
            line.split(['│', '┆']).map(str::trim).filter(|cell| !cell.is_empty()).collect::<Vec<_>>()
        };
        // layout, pitches, cp.async A, cp.async B, ldmatrix A, ldmatrix B, stmatrix, loads, total, ideal.
        assert_eq!(row("unpadded")[2..], ["4", "4", "32", "32", "32", "4", "8576", "1408"]);
        assert_eq!(row("swizzled")[2..], ["4", "4", "4", "4", "4", "4", "1408", "1408"]);
    }
}
