//! The pipeline half of lesson 15: lesson 14's tensor-core GEMM with 1 to 4 `cp.async` stages.
//! The tiles, their layouts and every shared-memory instruction are lesson 14's; the stages change
//! where a k-tile waits, not what it executes.

use bank_model::{Matrices, Op};
use lesson_14_tensor_cores::{
    Multiply, PROFILED_SIZE, TIMED_SIZES,
    gemm::{BLOCK_K, BLOCK_M, BLOCK_N, Element, Layout, Shape, Tiles},
};
use lesson_kit::{DeclaredAccess, KernelRun, RunSize};

/// The launch every GEMM run is profiled at, lesson 14's, whose output is checked on the CPU.
pub const PROFILED: Shape = Shape { m: PROFILED_SIZE, n: PROFILED_SIZE, k: PROFILED_SIZE };

/// The kernels of the pipeline part: the swizzled bf16 GEMM at 1 to 4 stages, the ones it times,
/// then for the model's table the unpadded and padded tiles at 3, whose copies and reads cost
/// what their layouts make them cost (lesson 14 times those).
pub const KERNELS: [Tiles; 6] = [
    Tiles { element: Element::Bf16, layout: Layout::Swizzled, stages: 1, bypass_l1: true },
    Tiles { element: Element::Bf16, layout: Layout::Swizzled, stages: 2, bypass_l1: true },
    Tiles { element: Element::Bf16, layout: Layout::Swizzled, stages: 3, bypass_l1: true },
    Tiles { element: Element::Bf16, layout: Layout::Swizzled, stages: 4, bypass_l1: true },
    Tiles { element: Element::Bf16, layout: Layout::Unpadded, stages: 3, bypass_l1: false },
    Tiles { element: Element::Bf16, layout: Layout::Padded, stages: 3, bypass_l1: false },
];

/// One GEMM run: lesson 14's GEMM or cuBLAS, named by the side it is timed at; its profiled
/// launch is [`PROFILED`] whatever that side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmSpec {
    pub multiply: Multiply,
    pub timed: u32,
    pub shape: Shape,
}

impl GemmSpec {
    pub fn label(&self) -> String {
        let name = match self.multiply {
            Multiply::Kernel(tiles) => label(tiles),
            cublas => cublas.name(),
        };
        format!("{name}, {}^3", self.timed)
    }

    /// The run as lesson 14 declares it, which prepares and checks it.
    pub fn lesson_14_run(&self) -> KernelRun<lesson_14_tensor_cores::Spec> {
        let GemmSpec { multiply, timed, shape } = *self;
        let (kernel, accesses) = match multiply {
            Multiply::Kernel(tiles) => {
                (Some(tiles.kernel().expect("tensor_core_gemm.cu defines it")), tiles.accesses(shape))
            }
            Multiply::Cublas(_) => (None, Vec::new()),
        };
        KernelRun {
            label: self.label(),
            kernel,
            accesses,
            spec: lesson_14_tensor_cores::Spec::Gemm { multiply, timed, shape },
        }
    }

    /// Floating-point operations per second of a timed launch, in TFLOP/s.
    pub fn tflops(&self, median_ms: f64) -> f64 {
        self.shape.flops() / (median_ms * 1e-3) / 1e12
    }
}

/// The swizzled kernels at 1 to 4 stages.
pub fn stage_kernels() -> &'static [Tiles] {
    &KERNELS[..4]
}

/// Every GEMM run at each of lesson 14's sides: cuBLAS, then the swizzled kernel at each depth.
pub fn specs(size: RunSize) -> Vec<GemmSpec> {
    let kernels = stage_kernels().iter().map(|&tiles| Multiply::Kernel(tiles));
    let multiplies = [Multiply::Cublas(Element::Bf16)].into_iter().chain(kernels);
    TIMED_SIZES
        .into_iter()
        .flat_map(|timed| {
            let side = if size == RunSize::Profile { PROFILED_SIZE } else { timed };
            multiplies.clone().map(move |multiply| GemmSpec { multiply, timed, shape: Shape::cube(side) })
        })
        .collect()
}

/// A kernel's label: its tiles and stages.
pub fn label(tiles: Tiles) -> String {
    let stages = match tiles.stages {
        1 => "1 stage".to_owned(),
        stages => format!("{stages} stages"),
    };
    format!("{} {}, {stages}", tiles.element.name(), tiles.layout.name())
}

/// Bytes in KiB, as the table of stages shows them.
pub fn kib(bytes: u32) -> String {
    format!("{} KiB", lesson_kit::cells::format_ratio(bytes as f64 / 1024.0))
}

/// Bytes one k-tile brings into a stage: A's 256 x 64 halves and B's 64 x 128, without padding.
pub fn tile_bytes() -> u32 {
    2 * (BLOCK_M * BLOCK_K + BLOCK_K * BLOCK_N)
}

/// The `cp.async` of a launch: (instructions, wavefronts).
pub fn copies(accesses: &[DeclaredAccess]) -> (u64, u64) {
    totals(accesses, |op| op == Op::CopyAsync)
}

/// The `ldmatrix` of a launch, A's and B's: (instructions, wavefronts).
pub fn fragment_loads(accesses: &[DeclaredAccess]) -> (u64, u64) {
    totals(accesses, |op| matches!(op, Op::LoadMatrix { matrices: Matrices::X4, .. }))
}

fn totals(accesses: &[DeclaredAccess], counts: impl Fn(Op) -> bool) -> (u64, u64) {
    accesses.iter().filter(|a| counts(a.request.op)).fold((0, 0), |(instructions, wavefronts), a| {
        (instructions + a.executions, wavefronts + a.executions * a.request.wavefronts() as u64)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_lesson_14s_with_its_declarations() {
        let timed = specs(RunSize::Timed);
        assert_eq!(timed.len(), 2 * 5);
        assert!(
            stage_kernels().iter().enumerate().all(|(i, t)| t.layout == Layout::Swizzled && t.stages == i as u32 + 1)
        );
        let labels: Vec<String> = timed.iter().map(GemmSpec::label).collect();
        assert_eq!(
            labels[..3],
            ["cuBLAS bf16, 4096^3", "bf16 swizzled, 1 stage, 4096^3", "bf16 swizzled, 2 stages, 4096^3"]
        );
        for (profiled, timed) in specs(RunSize::Profile).into_iter().zip(timed) {
            assert_eq!((profiled.label(), profiled.shape), (timed.label(), PROFILED));
            let run = profiled.lesson_14_run();
            match profiled.multiply {
                Multiply::Kernel(tiles) => assert_eq!(run.accesses.len(), tiles.accesses(PROFILED).len()),
                Multiply::Cublas(_) => assert_eq!((run.kernel, run.accesses.len()), (None, 0)),
            }
        }
        assert_eq!(
            GemmSpec { multiply: Multiply::Kernel(KERNELS[2]), timed: 8192, shape: Shape::cube(8192) }.tflops(2.0),
            2.0 * 8192f64.powi(3) / 2e-3 / 1e12
        );
    }

    #[test]
    fn every_kernel_is_one_of_the_files() {
        for tiles in KERNELS {
            assert!(tiles.kernel().is_some(), "{}", label(tiles));
        }
        assert_eq!(label(KERNELS[0]), "bf16 swizzled, 1 stage");
        assert_eq!(label(KERNELS[5]), "bf16 padded, 3 stages");
    }

    #[test]
    fn a_stage_holds_one_k_tile_and_four_fit_in_a_block() {
        assert_eq!(tile_bytes(), 48 * 1024);
        for tiles in KERNELS.into_iter().filter(|t| t.layout == Layout::Swizzled) {
            assert_eq!(tiles.stage_bytes(), tile_bytes());
        }
        // One stage is smaller than C's tile, which the epilogue puts over the stages.
        let shared: Vec<u32> = stage_kernels().iter().map(|t| t.shared_bytes() / 1024).collect();
        assert_eq!(shared, [64, 96, 144, 192]);
    }

    #[test]
    fn the_stages_change_no_instruction_and_no_cost() {
        let counts = |tiles: Tiles| {
            let accesses = tiles.accesses(PROFILED);
            (copies(&accesses), fragment_loads(&accesses))
        };
        let three = counts(KERNELS[2]);
        // 2 blocks x 4 k-tiles x 96 copies, 4 wavefronts each; 256 ldmatrix.x4 a k-tile, 4 each.
        assert_eq!(three, ((768, 3072), (2048, 8192)));
        for tiles in stage_kernels() {
            assert_eq!(counts(*tiles), three, "{}", label(*tiles));
        }
        assert_eq!(counts(KERNELS[4]).1, (2048, 65536), "unpadded rows of 128 bytes: 8-way");
    }
}
