//! Lesson 5: the occupancy tradeoff.
//!
//! Padding costs shared memory, and shared memory is what an SM's resident blocks share. It can
//! also cost alignment: lesson 4's tiled GEMM reads `As[ty][k..k+4]` as one 16-byte load because
//! every row of the A tile starts 16-byte aligned. Padding A's tile by one float, the reflex that
//! fixes a column read, breaks that alignment. Those reads were a broadcast, so there was no
//! conflict to remove, and the kernel now issues four loads where it issued one. Padding by a
//! whole 16-byte vector keeps both.

use bank_model::Op;
use cuda_kernels::{Gpu, GpuError, GpuInfo};
use lesson_04_gemm::{Kernel, PROFILED_N, TIMED_N, prepare_gemm};
use lesson_kit::{
    Chart, KernelRun, Lesson, Point, Prepared, Report, RunSize, Series, TimeRatio, TimedRun, Tone, cells,
    cells::{counter_cells, median_cell},
    styled,
};

/// Tile sizes and A-tile paddings the lesson compares.
pub const TILES: [u32; 2] = [16, 32];
pub const PADDINGS: [u32; 3] = [0, 1, 4];

fn kernel(tile: u32, pad_a: u32) -> Kernel {
    Kernel::Tiled { tile, transposed_b: false, pad_a }
}

/// Shared memory per block: the A tile `[T][T + pad]` and the B tile `[T][T]`, floats.
pub fn shared_bytes(tile: u32, pad_a: u32) -> u32 {
    (tile * (tile + pad_a) + tile * tile) * 4
}

/// Shared loads one warp issues per step of the K loop, and their wavefronts, as declared.
fn warp_loads_per_step(tile: u32, pad_a: u32) -> (u64, u64) {
    let k = kernel(tile, pad_a);
    let n = tile; // one block, one step
    let accesses = k.shared_accesses(n);
    let warps = (tile * tile / 32) as u64;
    let loads = accesses.iter().filter(|a| a.request.op == Op::Load);
    let (instructions, wavefronts) =
        loads.fold((0, 0), |(i, w), a| (i + a.executions, w + a.executions * a.request.analyze().wavefronts as u64));
    (instructions / warps, wavefronts / warps)
}

pub struct OccupancyTradeoff;

/// The lesson, as the course's list of lessons names it.
pub static LESSON: OccupancyTradeoff = OccupancyTradeoff;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    pub tile: u32,
    pub pad_a: u32,
    pub n: u32,
}

impl Lesson for OccupancyTradeoff {
    type Spec = Spec;

    const NUMBER: u32 = 5;
    const TITLE: &'static str = "The occupancy tradeoff";
    const KERNEL_FILES: &'static [&'static str] = &[lesson_04_gemm::KERNEL_FILE];

    fn charts(&self) -> &'static [Chart] {
        &[Chart {
            file: "lesson-05-occupancy.svg",
            title: "Padding the A tile: time and occupancy",
            value_label: "ratio",
            series: &["padding_time_ratio", "padding_occupancy"],
        }]
    }

    fn reference(&self) -> &'static str {
        "cuBLAS (at the profiling size, the CPU in double precision)"
    }

    fn model(&self, report: &mut Report) {
        report.text(
            "Lesson 4's tiled GEMM with As[T][T + P], read 16 bytes at a time where its rows are 16-byte aligned.",
        );
        report.heading("Per warp and K step: shared loads and wavefronts (model), shared memory per block");
        let rows = TILES
            .into_iter()
            .flat_map(|tile| PADDINGS.map(|pad| (tile, pad)))
            .map(|(tile, pad)| {
                let (instructions, wavefronts) = warp_loads_per_step(tile, pad);
                let aligned = (tile + pad) * 4 % 16 == 0;
                let (base_instructions, _) = warp_loads_per_step(tile, 0);
                vec![
                    format!("As[{tile}][{}]", tile + pad).into(),
                    format!("{} B", (tile + pad) * 4).into(),
                    styled(if aligned { "yes" } else { "no" }, if aligned { Tone::Good } else { Tone::Bad }),
                    styled(instructions, Tone::of_wavefronts(instructions as u32, base_instructions as u32)),
                    wavefronts.into(),
                    format!("{} B", shared_bytes(tile, pad)).into(),
                ]
            })
            .collect();
        report.table(["A tile", "row", "16-byte aligned", "loads", "wavefronts", "shared per block"], rows);
        report.text("Chapter 5 of the book explains what one float of padding costs, and what limits occupancy.");
    }

    fn runs(&self, _gpu: &GpuInfo, size: RunSize) -> Vec<KernelRun<Spec>> {
        let n = if size == RunSize::Profile { PROFILED_N } else { TIMED_N };
        TILES
            .into_iter()
            .flat_map(|tile| PADDINGS.map(|pad| (tile, pad)))
            .map(|(tile, pad_a)| {
                let kernel = kernel(tile, pad_a);
                KernelRun {
                    label: kernel.describe(),
                    kernel: kernel.name(),
                    accesses: kernel.shared_accesses(n),
                    spec: Spec { tile, pad_a, n },
                }
            })
            .collect()
    }

    fn prepare<'g>(&self, gpu: &'g Gpu, run: &KernelRun<Spec>) -> Result<Box<dyn Prepared + 'g>, GpuError> {
        prepare_gemm(gpu, kernel(run.spec.tile, run.spec.pad_a), run.spec.n)
    }

    fn time_ratios(&self) -> &'static [TimeRatio] {
        &[
            TimeRatio {
                key: "pad1_vs_unpadded",
                label: "32 x 32 tiled GEMM, A tile padded by one float: time over unpadded",
                numerator: "shared tiles 32x32, As[32][33]",
                denominator: "shared tiles 32x32",
            },
            TimeRatio {
                key: "pad4_vs_unpadded",
                label: "32 x 32 tiled GEMM, A tile padded by one 16-byte vector: time over unpadded",
                numerator: "shared tiles 32x32, As[32][36]",
                denominator: "shared tiles 32x32",
            },
        ]
    }

    fn series(&self, _gpu: &GpuInfo, results: &[TimedRun<Spec>]) -> Vec<Series> {
        let at = |m: &TimedRun<Spec>| format!("As[{}][{}]", m.run.spec.tile, m.run.spec.tile + m.run.spec.pad_a);
        let time = results
            .iter()
            .filter_map(|m| {
                Some(Point { at: at(m), value: m.timing.median_ms / median_ms(results, m.run.spec.tile, 0)? })
            })
            .collect();
        let occupancy =
            results.iter().filter_map(|m| Some(Point { at: at(m), value: m.occupancy?.fraction })).collect();
        [
            ("padding_time_ratio", "time / unpadded time", time),
            ("padding_occupancy", "occupancy (resident / max threads)", occupancy),
        ]
        .into_iter()
        .map(|(key, label, points): (&str, &str, Vec<Point>)| Series {
            key: key.into(),
            label: label.into(),
            unit: "ratio".into(),
            points,
        })
        .filter(|series| !series.points.is_empty())
        .collect()
    }

    fn summarize(&self, gpu: &GpuInfo, results: &[TimedRun<Spec>], report: &mut Report) {
        report.heading(format!("{TIMED_N}^3 FP32 GEMM, shared tiles with a padded A tile"));
        let unpadded = |tile: u32| median_ms(results, tile, 0);
        let rows = results
            .iter()
            .map(|m| {
                let [ld_model, ld_ncu] = counter_cells(m, Op::Load);
                let loads = m.counters.as_ref().map_or("n/a".to_owned(), |c| c.counters.load_instructions.to_string());
                let occupancy = m.occupancy.as_ref();
                vec![
                    m.run.label.clone().into(),
                    occupancy.map_or("-".into(), |o| format!("{} B", o.shared_bytes_per_block)).into(),
                    occupancy.map_or("-".into(), |o| o.registers_per_thread.to_string()).into(),
                    occupancy
                        .map_or("-".into(), |o| format!("{} ({:.0}%)", o.blocks_per_sm, 100.0 * o.fraction))
                        .into(),
                    loads.into(),
                    ld_model,
                    ld_ncu,
                    median_cell(&m.timing),
                    unpadded(m.run.spec.tile).map_or("-".into(), |t| format!("{:.2}x", m.timing.median_ms / t)).into(),
                ]
            })
            .collect();
        report.table(
            [
                "kernel",
                "shared/block",
                "registers",
                "blocks/SM (occupancy)",
                "ld instructions (profiled)",
                "ld model",
                "ld ncu",
                "median ms",
                "time vs unpadded",
            ],
            rows,
        );
        report.text(format!(
            "Occupancy from the CUDA occupancy API ({} threads per SM at most). Load instructions are ncu's\n\
             count for the profiled launch ({PROFILED_N}^3).",
            gpu.max_threads_per_sm
        ));
        report.heading("Shared-memory instructions in the machine code (nvcc + cuobjdump, one copy of the loop body)");
        let sass: Vec<_> = results
            .iter()
            .filter_map(|m| Some((m, m.run.kernel?)))
            .map(|(m, name)| {
                (m, cuda_kernels::sass::shared_instructions(lesson_04_gemm::KERNEL_FILE, name, &gpu.arch()))
            })
            .collect();
        match sass.iter().find_map(|(_, r)| r.as_ref().err()) {
            Some(why) => report.text(format!("SASS skipped: {why}.")),
            None => {
                let rows = sass
                    .iter()
                    .map(|(m, counts)| {
                        let counts = counts.as_ref().expect("checked above");
                        let listed: Vec<String> = counts.iter().map(|(op, n)| format!("{n} {op}")).collect();
                        vec![m.run.label.clone().into(), listed.join(", ").into()]
                    })
                    .collect();
                report.table(["kernel", "shared-memory instructions"], rows);
            }
        }
        let time = |pad| median_ms(results, 32, pad);
        if let (Some(pad0), Some(pad1), Some(pad4)) = (time(0), time(1), time(4)) {
            report.text(format!(
                "32 x 32 tiles: padding A by one float took {:.2}x as long; padding by one 16-byte vector {:.2}x.",
                pad1 / pad0,
                pad4 / pad0
            ));
        }
    }
}

/// The median time of the run with `tile` x `tile` tiles and the A tile padded by `pad_a`.
fn median_ms(results: &[TimedRun<Spec>], tile: u32, pad_a: u32) -> Option<f64> {
    cells::median_ms(results, |spec| spec.tile == tile && spec.pad_a == pad_a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_float_of_padding_quadruples_the_loads_of_a() {
        // 32 x 32: 8 float4 broadcasts of As (2 wavefronts) + 32 loads of Bs (1), per warp and step.
        assert_eq!(warp_loads_per_step(32, 0), (40, 48));
        // Padded by one float: 32 scalar broadcasts of As (1 wavefront each) + 32 of Bs.
        assert_eq!(warp_loads_per_step(32, 1), (64, 64));
        assert_eq!(warp_loads_per_step(32, 4), warp_loads_per_step(32, 0));
        assert_eq!(shared_bytes(32, 0), 8192);
        assert_eq!(shared_bytes(32, 1), 8320);
    }
}
