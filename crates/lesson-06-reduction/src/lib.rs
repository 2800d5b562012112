//! Lesson 6: reductions.
//!
//! A block sums its words with a tree in shared memory. Interleaved addressing (thread `t` adds
//! word `2st + s` into word `2st`) spreads a warp's lanes `2s` words apart, so conflicts grow
//! with every step; sequential addressing (thread `t < s` adds word `t + s` into word `t`) keeps
//! the active lanes on consecutive words. Conflicts are between lanes of one warp only: threads
//! 0 and 32 never conflict, whatever they read.

use bank_model::{Op, Request, WARP_SIZE, Width};
use cuda_kernels::{Gpu, GpuError, GpuInfo};
use lesson_kit::{
    DeclaredAccess, KernelRun, Lesson, Prepared, Report, RunSize, TimeRatio, TimedRun, Tone,
    bank_table::add_bank_grid,
    cells::{counter_cells, median_cell, spread_cell},
    styled,
    words_kernel::{WordsLaunch, fill_tile_access, random_words, words_kernel},
};

/// The kernels' source file in `kernels/`.
pub const KERNEL_FILE: &str = "reduction.cu";
/// Threads per block, and words each block sums (`BLOCK` in the kernels).
pub const BLOCK: u32 = 512;
const WARPS: u32 = BLOCK / WARP_SIZE as u32;

/// Which threads add which pairs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Addressing {
    Interleaved,
    Sequential,
}

impl Addressing {
    pub const ALL: [Addressing; 2] = [Addressing::Interleaved, Addressing::Sequential];

    fn kernel(self) -> &'static str {
        match self {
            Addressing::Interleaved => "reduce_interleaved",
            Addressing::Sequential => "reduce_sequential",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Addressing::Interleaved => "interleaved",
            Addressing::Sequential => "sequential",
        }
    }

    /// The tree's steps `s`, in the order the kernel takes them.
    pub fn steps(self) -> Vec<u32> {
        let up: Vec<u32> = (0..BLOCK.trailing_zeros()).map(|k| 1 << k).collect();
        match self {
            Addressing::Interleaved => up,
            Addressing::Sequential => up.into_iter().rev().collect(),
        }
    }

    /// The word thread `thread` adds into at step `s`, if it is active then.
    pub fn target(self, thread: u32, s: u32) -> Option<u32> {
        match self {
            Addressing::Interleaved => Some(2 * s * thread).filter(|&index| index < BLOCK),
            Addressing::Sequential => (thread < s).then_some(thread),
        }
    }

    /// Warp `warp`'s request at step `s` for `operand` 0 (`tile[target]`) or 1 (`tile[target + s]`),
    /// or `None` when no lane of the warp is active.
    pub fn request(self, op: Op, warp: u32, s: u32, operand: u32) -> Option<Request> {
        let lanes: [Option<u32>; WARP_SIZE] = std::array::from_fn(|lane| {
            self.target(warp * WARP_SIZE as u32 + lane as u32, s).map(|t| 4 * (t + operand * s))
        });
        lanes.iter().any(Option::is_some).then(|| Request::new(op, Width::W4, lanes).expect("4-byte aligned"))
    }

    /// Every shared-memory instruction a block's warps execute, grouped where the cost is the same.
    fn accesses(self, blocks: u32) -> Vec<DeclaredAccess> {
        let pattern = match self {
            Addressing::Interleaved => "2*s*t",
            Addressing::Sequential => "t",
        };
        let mut accesses = vec![fill_tile_access(blocks, BLOCK)];
        for s in self.steps() {
            for (op, operand, name) in [
                (Op::Load, 0, format!("tile[{pattern}]")),
                (Op::Load, 1, format!("tile[{pattern} + s]")),
                (Op::Store, 0, format!("tile[{pattern}] =")),
            ] {
                let requests = (0..WARPS).filter_map(|w| Some((w, self.request(op, w, s, operand)?)));
                accesses.extend(DeclaredAccess::per_warp_group(blocks, requests, |first, last| {
                    format!("{name} (s={s}, warps {first}-{last})")
                }));
            }
        }
        // Every thread reads the sum: one broadcast request per warp.
        accesses.push(DeclaredAccess {
            name: "out = tile[0]".into(),
            request: Request::new(Op::Load, Width::W4, [Some(0); WARP_SIZE]).expect("aligned"),
            executions: blocks as u64 * WARPS as u64,
        });
        accesses
    }

    /// The most wavefronts any warp's read takes at step `s`, and how many warps issue it.
    fn step_cost(self, s: u32) -> (u32, u32) {
        (0..WARPS)
            .filter_map(|w| self.request(Op::Load, w, s, 1))
            .fold((0, 0), |(worst, warps), r| (worst.max(r.analyze().wavefronts), warps + 1))
    }
}

pub struct Reduction;

/// The lesson, as the course's list of lessons names it.
pub static LESSON: Reduction = Reduction;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    pub addressing: Addressing,
    pub blocks: u32,
}

impl Lesson for Reduction {
    type Spec = Spec;

    const NUMBER: u32 = 6;
    const TITLE: &'static str = "Reductions";
    const KERNEL_FILES: &'static [&'static str] = &[KERNEL_FILE];

    fn model(&self, report: &mut Report) {
        report.text(format!(
            "A block of {BLOCK} threads sums {BLOCK} words in {} steps; chapter 6 of the book explains the conflicts.",
            BLOCK.trailing_zeros()
        ));
        report.heading("Predicted wavefronts per warp read, step by step");
        let mut rows = Vec::new();
        for (index, (up, down)) in
            Addressing::Interleaved.steps().into_iter().zip(Addressing::Sequential.steps()).enumerate()
        {
            let mut row = vec![(index + 1).into()];
            for (addressing, s) in [(Addressing::Interleaved, up), (Addressing::Sequential, down)] {
                let (worst, warps) = addressing.step_cost(s);
                let active = (0..BLOCK).filter(|&t| addressing.target(t, s).is_some()).count();
                row.extend([s.into(), active.into(), warps.into(), styled(worst, Tone::of_wavefronts(worst, 1))]);
            }
            rows.push(row);
        }
        report.table(
            ["step", "interleaved s", "threads", "warps", "wf/req", "sequential s", "threads", "warps", "wf/req"],
            rows,
        );
        for addressing in Addressing::ALL {
            let (wavefronts, requests) = addressing
                .accesses(1)
                .iter()
                .filter(|a| a.request.op == Op::Load && a.name.contains("s="))
                .fold((0, 0), |(w, r), a| (w + a.executions * a.request.analyze().wavefronts as u64, r + a.executions));
            report.text(format!(
                "{}: {requests} warp reads per block, {wavefronts} wavefronts ({:.2} per read).",
                addressing.name(),
                wavefronts as f64 / requests as f64
            ));
        }
        report.heading("Interleaved, step s = 4: warp 0 reads tile[8t + 4]");
        let request = Addressing::Interleaved.request(Op::Load, 0, 4, 1).expect("warp 0 is active");
        let analysis = request.analyze();
        add_bank_grid(report, &request, &analysis);
        report.text(format!(
            "{} wavefronts, all between lanes of warp 0: threads 0 and 32 are in different requests.",
            analysis.wavefronts
        ));
    }

    fn runs(&self, gpu: &GpuInfo, size: RunSize) -> Vec<KernelRun<Spec>> {
        let blocks = match size {
            RunSize::Profile => 2,
            RunSize::Timed => 512 * gpu.multiprocessors,
        };
        Addressing::ALL
            .into_iter()
            .map(|addressing| KernelRun {
                label: format!("{} addressing", addressing.name()),
                kernel: Some(addressing.kernel()),
                accesses: addressing.accesses(blocks),
                spec: Spec { addressing, blocks },
            })
            .collect()
    }

    fn prepare<'g>(&self, gpu: &'g Gpu, run: &KernelRun<Spec>) -> Result<Box<dyn Prepared + 'g>, GpuError> {
        let Spec { addressing, blocks } = run.spec;
        let launch = WordsLaunch { blocks, threads: BLOCK, args: [0, 0] };
        let words = random_words((blocks * BLOCK) as usize);
        words_kernel(gpu, KERNEL_FILE, addressing.kernel(), words, launch, |words, thread| {
            let block = thread / BLOCK as usize * BLOCK as usize;
            words[block..block + BLOCK as usize].iter().fold(0u32, |sum, &w| sum.wrapping_add(w))
        })
    }

    fn time_ratios(&self) -> &'static [TimeRatio] {
        &[TimeRatio {
            key: "reduction_interleaved_slowdown",
            label: "interleaved vs sequential addressing, block reduction",
            numerator: "interleaved addressing",
            denominator: "sequential addressing",
        }]
    }

    fn summarize(&self, _gpu: &GpuInfo, results: &[TimedRun<Spec>], report: &mut Report) {
        report.heading("Measured: one block per 512 words");
        let rows = results
            .iter()
            .map(|m| {
                let [predicted, measured] = counter_cells(m, Op::Load);
                let words = (m.run.spec.blocks * BLOCK) as f64;
                vec![
                    m.run.label.as_str().into(),
                    predicted,
                    measured,
                    median_cell(&m.timing),
                    spread_cell(&m.timing),
                    format!("{:.0}", words / (m.timing.median_ms * 1e-3) / 1e9).into(),
                ]
            })
            .collect();
        report.table(["kernel", "model wf/req", "ncu wf/req", "median ms", "spread", "Gwords/s"], rows);
        if let Some(slowdown) = self.time_ratios()[0].figure(results).map(|figure| figure.value) {
            report.text(format!(
                "Interleaved addressing took {slowdown:.2}x as long as sequential addressing for the same additions."
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_thread_adds_every_word_exactly_once() {
        for addressing in Addressing::ALL {
            // Simulate the tree on word counts: the root must end up holding all BLOCK words.
            let mut counts = vec![1u32; BLOCK as usize];
            for s in addressing.steps() {
                for thread in 0..BLOCK {
                    if let Some(target) = addressing.target(thread, s) {
                        counts[target as usize] += counts[(target + s) as usize];
                    }
                }
            }
            assert_eq!(counts[0], BLOCK, "{addressing:?}");
        }
    }

    #[test]
    fn interleaved_conflicts_grow_and_sequential_never_conflicts() {
        let worst = |a: Addressing| a.steps().into_iter().map(|s| a.step_cost(s).0).collect::<Vec<_>>();
        assert_eq!(worst(Addressing::Interleaved), [2, 4, 8, 16, 16, 8, 4, 2, 1]);
        assert!(worst(Addressing::Sequential).iter().all(|&w| w == 1));
    }

    #[test]
    fn declared_accesses_cover_every_active_warp() {
        let accesses = Addressing::Interleaved.accesses(2);
        let first_step: u64 =
            accesses.iter().filter(|a| a.name.starts_with("tile[2*s*t] (s=1,")).map(|a| a.executions).sum();
        assert_eq!(first_step, 2 * 8, "256 active threads: 8 warps in each of 2 blocks");
        let last_step: Vec<&DeclaredAccess> = accesses.iter().filter(|a| a.name.contains("(s=256,")).collect();
        assert_eq!(last_step.len(), 3, "one warp, two reads and a write");
        assert!(last_step.iter().all(|a| a.executions == 2 && a.request.analyze().active_lanes.len() == 1));
    }
}
