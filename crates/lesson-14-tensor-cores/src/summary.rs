//! The lesson's tables of measured results.

use bank_model::WAVEFRONT_BYTES;
use cuda_kernels::{GpuInfo, ncu::SharedFamily};
use lesson_kit::{
    Report, Styled, TimedRun,
    cells::{family_cells, format_ratio, median_cell, spread_cell, time_ratio_sentence},
};

use crate::{FIGURES, Multiply, PROFILED_SIZE, Spec, TIMED_SIZES, m_major, share_of_cublas, tflops};

/// The GEMM table's columns.
const GEMM_COLUMNS: [&str; 12] = [
    "kernel",
    "ldmatrix model",
    "ldmatrix ncu",
    "stmatrix model",
    "stmatrix ncu",
    "cp.async model",
    "cp.async ncu",
    "median ms",
    "spread",
    "TFLOP/s",
    "shared bound",
    "of cuBLAS",
];

/// The most TFLOP/s a GEMM run could reach if the SMs' shared memory served its declared
/// wavefronts and did nothing else, one wavefront a clock.
pub(crate) fn shared_bound_tflops(m: &TimedRun<Spec>, gpu: &GpuInfo) -> Option<f64> {
    let Spec::Gemm { multiply: Multiply::Kernel(_), shape, .. } = m.run.spec else { return None };
    let wavefronts: u64 = m.run.accesses.iter().map(|a| a.executions * a.request.wavefronts() as u64).sum();
    let seconds = (wavefronts * WAVEFRONT_BYTES as u64) as f64 / gpu.shared_peak_bytes_per_s();
    Some(shape.flops() / seconds / 1e12)
}

pub(crate) fn summarize(gpu: &GpuInfo, results: &[TimedRun<Spec>], report: &mut Report) {
    for timed in TIMED_SIZES {
        report.heading(format!(
            "{timed}^3: TFLOP/s = 2 n^3 / time; wavefronts per instruction from one launch at {PROFILED_SIZE}^3; the \
             shared bound is the model's wavefronts at one a clock per SM"
        ));
        let rows = results
            .iter()
            .filter_map(|m| match m.run.spec {
                Spec::Gemm { multiply, timed: t, .. } if t == timed => Some((m, multiply)),
                _ => None,
            })
            .map(|(m, multiply)| {
                let mut row: Vec<Styled> = vec![multiply.name().into()];
                for family in [SharedFamily::Ldsm, SharedFamily::Stsm, SharedFamily::Ldgsts] {
                    row.extend(family_cells(m, family));
                }
                row.push(median_cell(&m.timing));
                row.push(spread_cell(&m.timing));
                row.push(tflops(m).map_or("-".into(), |v| format!("{v:.0}")).into());
                row.push(shared_bound_tflops(m, gpu).map_or("-".into(), |v| format!("{v:.0}")).into());
                let share = match multiply {
                    Multiply::Cublas(_) => None,
                    Multiply::Kernel(_) => share_of_cublas(results, multiply, timed),
                };
                row.push(share.map_or("-".into(), |v| format!("{v:.0}%")).into());
                row
            })
            .collect();
        report.table(GEMM_COLUMNS, rows);
    }
    for sentence in FIGURES.iter().filter_map(|ratio| time_ratio_sentence(ratio, results)) {
        report.text(sentence);
    }

    let m_major: Vec<(&TimedRun<Spec>, m_major::MMajor)> = results
        .iter()
        .filter_map(|m| match m.run.spec {
            Spec::MMajor(spec) => Some((m, spec)),
            Spec::Gemm { .. } => None,
        })
        .collect();
    let Some((_, first)) = m_major.first() else { return };
    report.heading(format!(
        "CUTLASS issue 3172's M-major reads: {} blocks reading their tile {} times; counters from one block reading \
         it {} times",
        first.blocks,
        first.iterations,
        crate::PROFILED_M_MAJOR_ITERATIONS
    ));
    let fastest = m_major.iter().map(|(m, _)| m.timing.median_ms).fold(f64::INFINITY, f64::min);
    let rows = m_major
        .iter()
        .map(|(m, spec)| {
            let mut row: Vec<Styled> = vec![crate::swizzle_name(spec.swizzle).into()];
            row.extend(family_cells(m, SharedFamily::Ldsm));
            let (excess, hardware) = match &m.counters {
                Some(check) => (
                    check.excess_wavefronts.to_string(),
                    check.hardware_conflicts.map_or("n/a".into(), |h| h.to_string()),
                ),
                None => ("n/a".into(), "n/a".into()),
            };
            row.push(excess.into());
            row.push(hardware.into());
            row.push(median_cell(&m.timing));
            row.push(spread_cell(&m.timing));
            row.push(format!("{}x", format_ratio(m.timing.median_ms / fastest)).into());
            row
        })
        .collect();
    report.table(
        [
            "swizzle",
            "ldmatrix model",
            "ldmatrix ncu",
            "model excess",
            "ncu conflicts",
            "median ms",
            "spread",
            "of the fastest",
        ],
        rows,
    );
    report.text(
        "model excess: the declared wavefronts beyond the ideal, the exact bank conflicts of the profiled launch; \
         ncu conflicts: the hardware's own counter (l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld and _st).",
    );
}

#[cfg(test)]
mod tests {
    use cuda_kernels::timing::Timing;
    use lesson_kit::{Lesson, RunSize};

    use super::*;
    use crate::TensorCores;

    #[test]
    fn the_tables_give_each_kernel_its_bound_and_share_of_cublas() {
        let h100 = GpuInfo::h100();
        // Every timed run at 1 ms, without counters.
        let results: Vec<TimedRun<Spec>> = TensorCores
            .runs(&h100, RunSize::Timed)
            .into_iter()
            .map(|run| TimedRun {
                run,
                timing: Timing::from_samples(vec![1.0]).expect("one sample"),
                counters: None,
                occupancy: None,
            })
            .collect();
        let mut report = Report::default();
        summarize(&h100, &results, &mut report);
        let text = report.render(false);
        let row = |start: &str, name: &str| {
            let table = &text[text.find(start).expect("a table per size")..];
            let line = table.lines().find(|line| line.contains(&format!(" {name} "))).expect("a row per run");
            line.split(['│', '┆']).map(str::trim).filter(|cell| !cell.is_empty()).map(String::from).collect::<Vec<_>>()
        };
        // kernel, 3 x (model, ncu), median, spread, TFLOP/s, bound, of cuBLAS.
        let unpadded = row("8192^3", "bf16 unpadded");
        assert_eq!(unpadded[1..7], ["32", "n/a", "32", "n/a", "4", "n/a"]);
        assert_eq!(unpadded[9..], ["1100", "127", "100%"]);
        assert_eq!(row("8192^3", "cuBLAS bf16")[1..3], ["-", "n/a"]);
        assert_eq!(row("4096^3", "fp16 swizzled")[10], "770");
        assert!(text.contains("bf16 unpadded, 8192^3 took 1x as long as bf16 swizzled, 8192^3."));
        assert!(text.contains(&format!("{} blocks reading their tile 2047 times", 16 * 132)));
    }
}
