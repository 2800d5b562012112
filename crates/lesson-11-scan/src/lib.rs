//! Lesson 11: scans.
//!
//! The work-efficient (Blelloch) exclusive scan of a block's words in shared memory, as in GPU
//! Gems 3, chapter 39. The up-sweep adds word `a = o(2t + 1) - 1` into word `b = o(2t + 2) - 1` at
//! offsets `o = 1, 2, 4, ...`; the down-sweep visits the same pairs in reverse. A warp's lanes are
//! `2o` words apart, so without an offset the conflicts grow level by level, as in lesson 6's
//! interleaved tree. The chapter's offset, one word of padding after every 32, turns that stride
//! into a rotation of the banks; whether it removes every conflict depends on the size of the scan,
//! and the model answers it level by level.

use bank_model::{Op, Request, WARP_SIZE, Width};
use cuda_kernels::{CudaFunction, CudaSlice, Gpu, GpuError, GpuInfo, LaunchConfig, PushKernelArg};
use lesson_kit::{
    DeclaredAccess, KernelRun, Lesson, OutputCheck, Prepared, Report, RunSize, TimeRatio, TimedRun, Tone,
    bank_table::add_bank_grid,
    cells::{COUNTED_AND_TIMED, counted_and_timed_cells},
    styled,
    words_kernel::random_words,
};

/// The kernels' source file in `kernels/`.
pub const KERNEL_FILE: &str = "scan.cu";
/// Words each block scans (`WORDS` in the kernels).
pub const WORDS: u32 = 2048;
/// Threads per block (`THREADS` in the kernels): each owns two words.
pub const THREADS: u32 = WORDS / 2;
const WARPS: u32 = THREADS / WARP_SIZE as u32;
/// The level the bank grids show: the first with a single warp, all 32 of its lanes active.
const SHOWN_OFFSET: u32 = WORDS / (2 * WARP_SIZE as u32);
/// A scan of this many words (by half as many threads) is where the one-level offset is enough.
const ONE_LEVEL_WORDS: u32 = 1024;

/// The headline figures: each divides the times of two runs.
const FIGURES: [TimeRatio; 2] = [
    TimeRatio {
        key: "scan_no_offset_vs_offset",
        label: "block scan of 2048 words, no offset, time over i + (i >> 5)",
        numerator: "no offset",
        denominator: "i + (i >> 5)",
    },
    TimeRatio {
        key: "scan_offset_vs_two_level_offset",
        label: "block scan of 2048 words, i + (i >> 5), time over i + (i >> 5) + (i >> 10)",
        numerator: "i + (i >> 5)",
        denominator: "i + (i >> 5) + (i >> 10)",
    },
];

/// Where word `i` of the scan is kept in the tile (`Layout::at` in the kernels).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    NoOffset,
    /// GPU Gems 3's `CONFLICT_FREE_OFFSET` for 32 banks: one word of padding after every 32.
    Offset,
    /// One more word after every 32 x 32.
    TwoLevelOffset,
}

impl Layout {
    pub const ALL: [Layout; 3] = [Layout::NoOffset, Layout::Offset, Layout::TwoLevelOffset];

    fn kernel(self) -> &'static str {
        match self {
            Layout::NoOffset => "scan_no_offset",
            Layout::Offset => "scan_offset",
            Layout::TwoLevelOffset => "scan_two_level_offset",
        }
    }

    /// The run's label: the tile index of word `i`.
    pub fn label(self) -> &'static str {
        match self {
            Layout::NoOffset => "no offset",
            Layout::Offset => "i + (i >> 5)",
            Layout::TwoLevelOffset => "i + (i >> 5) + (i >> 10)",
        }
    }

    /// The tile index of word `i` of the scan.
    pub fn at(self, i: u32) -> u32 {
        match self {
            Layout::NoOffset => i,
            Layout::Offset => i + (i >> 5),
            Layout::TwoLevelOffset => i + (i >> 5) + (i >> 10),
        }
    }

    /// Words of shared memory a scan of `words` words needs: up to its last word's place.
    pub fn tile_words(self, words: u32) -> u32 {
        self.at(words - 1) + 1
    }

    /// Warp `warp`'s request when thread `t` touches word `word(t)` of the scan (`None`: the
    /// thread is inactive); `None` when no lane is active, for then the warp skips the instruction.
    fn warp_request(self, op: Op, warp: u32, word: impl Fn(u32) -> Option<u32>) -> Option<Request> {
        let lanes: [Option<u32>; WARP_SIZE] =
            std::array::from_fn(|lane| word(warp * WARP_SIZE as u32 + lane as u32).map(|i| 4 * self.at(i)));
        lanes.iter().any(Option::is_some).then(|| Request::new(op, Width::W4, lanes).expect("4-byte aligned"))
    }

    /// Warp `warp`'s access to word `a` (`operand` 0) or `b` (1) at `offset`, in a scan of `words`.
    pub fn level_request(self, words: u32, op: Op, warp: u32, offset: u32, operand: u32) -> Option<Request> {
        self.warp_request(op, warp, level_word(words, offset, operand))
    }

    /// The most wavefronts any warp's access to `a` or `b` takes at `offset`, and how many warps access.
    pub fn level_cost(self, words: u32, offset: u32) -> (u32, u32) {
        let warps = active_threads(words, offset).div_ceil(WARP_SIZE as u32);
        let worst = (0..warps)
            .flat_map(|warp| [0, 1].map(|operand| self.level_request(words, Op::Load, warp, offset, operand)))
            .flatten()
            .map(|request| request.analyze().wavefronts)
            .max()
            .unwrap_or(0);
        (worst, warps)
    }

    /// One declared access per run of neighbouring warps whose requests cost the same.
    fn grouped(self, blocks: u32, name: &str, op: Op, word: impl Fn(u32) -> Option<u32>) -> Vec<DeclaredAccess> {
        let requests = (0..WARPS).filter_map(|w| Some((w, self.warp_request(op, w, &word)?)));
        DeclaredAccess::per_warp_group(blocks, requests, |first, last| format!("{name} (warps {first}-{last})"))
    }

    /// Every shared-memory instruction `blocks` blocks execute, in the kernel's order.
    fn accesses(self, blocks: u32) -> Vec<DeclaredAccess> {
        let mut accesses = Vec::new();
        let mut add = |name: String, op, word: &dyn Fn(u32) -> Option<u32>| {
            accesses.extend(self.grouped(blocks, &name, op, word))
        };
        add("tile[at(t)] = words[t]".into(), Op::Store, &Some);
        add(format!("tile[at(t + {THREADS})] = words[t + {THREADS}]"), Op::Store, &|t| Some(t + THREADS));
        for offset in offsets(WORDS) {
            for (op, operand, access) in
                [(Op::Load, 0, "tile[a]"), (Op::Load, 1, "tile[b]"), (Op::Store, 1, "tile[b] =")]
            {
                add(format!("up-sweep o={offset}: {access}"), op, &level_word(WORDS, offset, operand));
            }
        }
        add(format!("down-sweep start: tile[at({})] = 0", WORDS - 1), Op::Store, &|t| (t == 0).then_some(WORDS - 1));
        for offset in offsets(WORDS).rev() {
            for (op, operand, access) in [
                (Op::Load, 0, "tile[a]"),
                (Op::Load, 1, "tile[b]"),
                (Op::Store, 0, "tile[a] ="),
                (Op::Store, 1, "tile[b] ="),
            ] {
                add(format!("down-sweep o={offset}: {access}"), op, &level_word(WORDS, offset, operand));
            }
        }
        add("out[t] = tile[at(t)]".into(), Op::Load, &Some);
        add(format!("out[t + {THREADS}] = tile[at(t + {THREADS})]"), Op::Load, &|t| Some(t + THREADS));
        accesses
    }
}

/// The up-sweep's offsets in order, 1, 2, 4, ..., `words / 2`; the down-sweep takes them in reverse.
pub fn offsets(words: u32) -> impl DoubleEndedIterator<Item = u32> {
    (0..words.trailing_zeros()).map(|k| 1 << k)
}

/// Threads that work at `offset`: one per pair of words `offset` apart.
pub fn active_threads(words: u32, offset: u32) -> u32 {
    words / (2 * offset)
}

/// The word of the scan thread `t` touches at `offset`, `a = o(2t + 1) - 1` (`operand` 0) or
/// `b = o(2t + 2) - 1` (1), if it is active then.
pub fn level_word(words: u32, offset: u32, operand: u32) -> impl Fn(u32) -> Option<u32> {
    move |t| (t < active_threads(words, offset)).then(|| offset * (2 * t + 1 + operand) - 1)
}

/// The CPU reference: the exclusive prefix sums of each block's `block_words` words (`WORDS` in
/// this lesson), wrapping as `unsigned` does.
pub fn exclusive_scan(words: &[u32], block_words: usize) -> Vec<u32> {
    words
        .chunks(block_words)
        .flat_map(|block| {
            block.iter().scan(0u32, |sum, &word| {
                let before = *sum;
                *sum = sum.wrapping_add(word);
                Some(before)
            })
        })
        .collect()
}

/// Whether an access belongs to the up-sweep, the down-sweep (which starts by clearing the root),
/// or the copies in and out.
fn phase(access: &DeclaredAccess) -> usize {
    match access.name.split(' ').next() {
        Some("up-sweep") => 0,
        Some("down-sweep") => 1,
        _ => 2,
    }
}

pub struct Scan;

/// The lesson, as the course's list of lessons names it.
pub static LESSON: Scan = Scan;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    pub layout: Layout,
    pub blocks: u32,
}

impl Lesson for Scan {
    type Spec = Spec;

    const NUMBER: u32 = 11;
    const TITLE: &'static str = "Scans";
    const KERNEL_FILES: &'static [&'static str] = &[KERNEL_FILE];

    fn reference(&self) -> &'static str {
        "a CPU exclusive scan of each block's words"
    }

    fn model(&self, report: &mut Report) {
        let levels = WORDS.trailing_zeros();
        report.text(format!(
            "A block of {THREADS} threads scans {WORDS} words in {levels} levels up a tree and {levels} back down;\n\
             at offset o thread t works on words a = o(2t + 1) - 1 and b = a + o, kept at tile[at(a)] and tile[at(b)].\n\
             Chapter 11 of the book explains the scan and each layout's at(i)."
        ));
        report.heading("Predicted wavefronts per warp access, level by level");
        let rows = offsets(WORDS)
            .enumerate()
            .map(|(step, offset)| {
                let (_, warps) = Layout::NoOffset.level_cost(WORDS, offset);
                let mut row = vec![
                    offset.into(),
                    (step + 1).into(),
                    (levels as usize - step).into(),
                    active_threads(WORDS, offset).into(),
                    warps.into(),
                ];
                row.extend(Layout::ALL.map(|layout| {
                    let (worst, _) = layout.level_cost(WORDS, offset);
                    styled(worst, Tone::of_wavefronts(worst, 1))
                }));
                row
            })
            .collect();
        let header = ["offset o", "up-sweep step", "down-sweep step", "threads", "warps"];
        report.table(header.into_iter().chain(Layout::ALL.map(Layout::label)), rows);
        report.text("Each cell is the worst warp access to a or b at that level.");
        report.heading("Per block");
        let rows = Layout::ALL
            .into_iter()
            .map(|layout| {
                let accesses = layout.accesses(1);
                let mut phases = [0u64; 3];
                for access in &accesses {
                    phases[phase(access)] += access.executions * access.request.analyze().wavefronts as u64;
                }
                let requests: u64 = accesses.iter().map(|a| a.executions).sum();
                let wavefronts: u64 = phases.iter().sum();
                vec![
                    layout.label().into(),
                    (4 * layout.tile_words(WORDS)).into(),
                    requests.into(),
                    styled(wavefronts, Tone::of_wavefronts(wavefronts as u32, requests as u32)),
                    phases[0].into(),
                    phases[1].into(),
                    phases[2].into(),
                ]
            })
            .collect();
        report.table(
            ["layout", "shared bytes", "warp accesses", "wavefronts", "up-sweep", "down-sweep", "copies in and out"],
            rows,
        );
        let conflicted: Vec<(u32, u32)> = offsets(WORDS)
            .map(|offset| (offset, Layout::Offset.level_cost(WORDS, offset).0))
            .filter(|&(_, worst)| worst > 1)
            .collect();
        let listed: Vec<String> = conflicted.iter().map(|(offset, _)| offset.to_string()).collect();
        let worst_small = offsets(ONE_LEVEL_WORDS).map(|o| Layout::Offset.level_cost(ONE_LEVEL_WORDS, o).0).max();
        report.text(format!(
            "i + (i >> 5) leaves {}-way conflicts at offsets {}, one warp each.\n\
             At {ONE_LEVEL_WORDS} words ({} threads) its worst access at any level takes {} wavefront.",
            conflicted.iter().map(|&(_, worst)| worst).max().unwrap_or(1),
            listed.join(", "),
            ONE_LEVEL_WORDS / 2,
            worst_small.unwrap_or(0),
        ));
        let a = level_word(WORDS, SHOWN_OFFSET, 0);
        let (first, second) = (a(0).expect("thread 0 works"), a(1).expect("thread 1 works"));
        report.heading(format!(
            "Offset {SHOWN_OFFSET} (up-sweep step {}): warp 0 reads tile[at(a)], a = {}t + {first}",
            SHOWN_OFFSET.trailing_zeros() + 1,
            second - first,
        ));
        for layout in Layout::ALL {
            let request = layout.level_request(WORDS, Op::Load, 0, SHOWN_OFFSET, 0).expect("warp 0 is active");
            report.text(format!("{}:", layout.label()));
            add_bank_grid(report, &request, &request.analyze());
        }
        report.text(format!("Lanes {} words apart; chapter 11 explains where each layout puts them.", second - first));
    }

    fn runs(&self, gpu: &GpuInfo, size: RunSize) -> Vec<KernelRun<Spec>> {
        let blocks = match size {
            RunSize::Profile => 2,
            RunSize::Timed => 128 * gpu.multiprocessors,
        };
        Layout::ALL
            .into_iter()
            .map(|layout| KernelRun {
                label: layout.label().into(),
                kernel: Some(layout.kernel()),
                accesses: layout.accesses(blocks),
                spec: Spec { layout, blocks },
            })
            .collect()
    }

    fn prepare<'g>(&self, gpu: &'g Gpu, run: &KernelRun<Spec>) -> Result<Box<dyn Prepared + 'g>, GpuError> {
        let Spec { layout, blocks } = run.spec;
        let words = random_words((blocks * WORDS) as usize);
        Ok(Box::new(ScanRun {
            gpu,
            function: gpu.function(KERNEL_FILE, layout.kernel())?,
            device_words: gpu.upload(&words)?,
            words,
            out: gpu.zeros((blocks * WORDS) as usize)?,
            blocks,
        }))
    }

    fn time_ratios(&self) -> &'static [TimeRatio] {
        &FIGURES
    }

    fn summarize(&self, gpu: &GpuInfo, results: &[TimedRun<Spec>], report: &mut Report) {
        report.heading(format!("Measured: one block per {WORDS} words"));
        let rows = results
            .iter()
            .map(|m| {
                let words = (m.run.spec.blocks * WORDS) as f64;
                let mut row = vec![m.run.label.as_str().into()];
                row.extend(counted_and_timed_cells(m));
                row.push(format!("{:.0}", words / (m.timing.median_ms * 1e-3) / 1e9).into());
                row
            })
            .collect();
        report.table(["layout"].into_iter().chain(COUNTED_AND_TIMED).chain(["Gwords/s"]), rows);
        for figure in self.all_figures(gpu, results) {
            report.text(format!("{}: {:.2}x", figure.label, figure.value));
        }
    }
}

/// A scan kernel's launch: `(const unsigned* words, unsigned* out)`, one block per `WORDS` words.
struct ScanRun<'g> {
    gpu: &'g Gpu,
    function: CudaFunction,
    words: Vec<u32>,
    device_words: CudaSlice<u32>,
    out: CudaSlice<u32>,
    blocks: u32,
}

impl Prepared for ScanRun<'_> {
    fn launch(&mut self) -> Result<(), GpuError> {
        let config = LaunchConfig { grid_dim: (self.blocks, 1, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 };
        let mut launch = self.gpu.stream().launch_builder(&self.function);
        launch.arg(&self.device_words).arg(&mut self.out);
        // SAFETY: the kernel takes (const unsigned* words, unsigned* out); block b reads and writes
        // words b * WORDS to (b + 1) * WORDS - 1, and both buffers hold `blocks * WORDS` words.
        unsafe { launch.launch(config) }?;
        Ok(())
    }

    fn check(&mut self) -> Result<OutputCheck, GpuError> {
        let out = self.gpu.download(&self.out)?;
        let expected = exclusive_scan(&self.words, WORDS as usize);
        match out.iter().zip(&expected).position(|(got, want)| got != want) {
            None => Ok(OutputCheck::exact(&out)),
            Some(index) => Err(GpuError::WrongResult(format!(
                "word {} of block {} is {}, the CPU's exclusive scan says {}",
                index as u32 % WORDS,
                index as u32 / WORDS,
                out[index],
                expected[index]
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's steps on the CPU, level by level (a level's pairs are disjoint, so one
    /// thread after another gives what the block gives at once).
    fn simulate(layout: Layout, words: &[u32]) -> Vec<u32> {
        let n = words.len() as u32;
        let mut tile = vec![0u32; layout.tile_words(n) as usize];
        let place = |i: u32| layout.at(i) as usize;
        for (i, &word) in (0..n).zip(words) {
            tile[place(i)] = word;
        }
        let pairs = |offset| {
            (0..active_threads(n, offset))
                .map(move |t| [0, 1].map(|operand| place(level_word(n, offset, operand)(t).expect("an active thread"))))
        };
        for offset in offsets(n) {
            for [a, b] in pairs(offset) {
                tile[b] = tile[b].wrapping_add(tile[a]);
            }
        }
        tile[place(n - 1)] = 0;
        for offset in offsets(n).rev() {
            for [a, b] in pairs(offset) {
                let (left, right) = (tile[a], tile[b]);
                tile[a] = right;
                tile[b] = left.wrapping_add(right);
            }
        }
        (0..n).map(|i| tile[place(i)]).collect()
    }

    #[test]
    fn every_layout_computes_the_exclusive_scan() {
        for n in [ONE_LEVEL_WORDS, WORDS] {
            // Large words, so that the sums wrap.
            let words: Vec<u32> = (0..n).map(|i| i.wrapping_mul(0x9e37_79b9) ^ 0xdead_beef).collect();
            let expected = exclusive_scan(&words, WORDS as usize);
            assert_eq!(expected[0], 0);
            assert_eq!(expected[1], words[0]);
            for layout in Layout::ALL {
                assert_eq!(simulate(layout, &words), expected, "{layout:?}, {n} words");
            }
        }
    }

    #[test]
    fn the_reference_restarts_at_every_block() {
        let words = vec![1u32; 2 * WORDS as usize];
        let scan = exclusive_scan(&words, WORDS as usize);
        assert_eq!((scan[WORDS as usize - 1], scan[WORDS as usize], scan[WORDS as usize + 5]), (WORDS - 1, 0, 5));
    }

    #[test]
    fn offsets_keep_words_apart_and_inside_the_tile() {
        for layout in Layout::ALL {
            let places: Vec<u32> = (0..WORDS).map(|i| layout.at(i)).collect();
            assert!(places.windows(2).all(|w| w[0] < w[1]), "{layout:?}: one place per word");
            assert_eq!(places.last().map(|&p| p + 1), Some(layout.tile_words(WORDS)));
        }
        let words = Layout::ALL.map(|layout| layout.tile_words(WORDS));
        assert_eq!(words, [2048, 2048 + 63, 2048 + 63 + 1]);
        assert!((0..ONE_LEVEL_WORDS).all(|i| Layout::Offset.at(i) == Layout::TwoLevelOffset.at(i)));
    }

    #[test]
    fn conflicts_level_by_level() {
        let worst = |layout: Layout, n| offsets(n).map(|o| layout.level_cost(n, o).0).collect::<Vec<_>>();
        assert_eq!(worst(Layout::NoOffset, WORDS), [2, 4, 8, 16, 32, 32, 16, 8, 4, 2, 1]);
        assert_eq!(worst(Layout::Offset, WORDS), [1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 1]);
        assert_eq!(worst(Layout::TwoLevelOffset, WORDS), [1; 11]);
        assert_eq!(worst(Layout::NoOffset, ONE_LEVEL_WORDS), [2, 4, 8, 16, 32, 16, 8, 4, 2, 1]);
        assert_eq!(worst(Layout::Offset, ONE_LEVEL_WORDS), [1; 10]);
        let warps: Vec<u32> = offsets(WORDS).map(|o| Layout::NoOffset.level_cost(WORDS, o).1).collect();
        assert_eq!(warps, [32, 16, 8, 4, 2, 1, 1, 1, 1, 1, 1]);
    }

    #[test]
    fn a_and_b_cost_the_same_for_every_warp() {
        for layout in Layout::ALL {
            for offset in offsets(WORDS) {
                for warp in 0..WARPS {
                    let cost = |operand| {
                        layout.level_request(WORDS, Op::Load, warp, offset, operand).map(|r| r.analyze().wavefronts)
                    };
                    assert_eq!(cost(0), cost(1), "{layout:?}, offset {offset}, warp {warp}");
                }
            }
        }
    }

    #[test]
    fn declared_counts_follow_the_launch_shape() {
        let runs = Scan.runs(&GpuInfo::h100(), RunSize::Profile);
        let run = |layout| runs.iter().find(|r| r.spec.layout == layout).expect("a run per layout");
        let blocks = 2;
        // Per block: warps working at the 11 levels, 32 + 16 + 8 + 4 + 2 + 6 x 1 = 68; the up-sweep
        // reads twice and writes once per warp and level, the down-sweep reads and writes twice;
        // the copies in and out take 64 warp accesses each, the cleared root one.
        let (loads, stores) = (2 * 68 + 2 * 68 + 64, 64 + 68 + 1 + 2 * 68);
        assert_eq!(run(Layout::TwoLevelOffset).predicted(Op::Load), (blocks * loads, blocks * loads));
        assert_eq!(run(Layout::TwoLevelOffset).predicted(Op::Store), (blocks * stores, blocks * stores));
        // Without an offset each level's warp accesses take 64 wavefronts down to offset 16, then
        // 32, 16, ..., 1: 383 per access of a level.
        let no_offset = run(Layout::NoOffset);
        assert_eq!(no_offset.predicted(Op::Load), (blocks * (4 * 383 + 64), blocks * loads));
        assert_eq!(no_offset.predicted(Op::Store), (blocks * (64 + 383 + 1 + 2 * 383), blocks * stores));
        // One offset: 2 wavefronts at offsets 32 to 512, one warp each: 73 per access of a level.
        assert_eq!(run(Layout::Offset).predicted(Op::Load), (blocks * (4 * 73 + 64), blocks * loads));
        let deepest = no_offset.accesses.iter().find(|a| a.name.starts_with("up-sweep o=1024: tile[a]")).unwrap();
        assert_eq!((deepest.executions, deepest.request.analyze().active_lanes.len()), (blocks, 1));
        let first_level: Vec<&DeclaredAccess> =
            no_offset.accesses.iter().filter(|a| a.name.starts_with("up-sweep o=1: ")).collect();
        assert_eq!(first_level.len(), 3, "every warp costs the same: one group per instruction");
        assert!(first_level.iter().all(|a| a.executions == blocks * 32));
    }

    /// The two-term macro as printed, `((n) >> NUM_BANKS + (n) >> (2 * LOG_NUM_BANKS))` with
    /// NUM_BANKS 16 and LOG_NUM_BANKS 4, parsed as C parses it: `+` binds tighter than `>>`.
    /// `None` where C leaves it undefined (a shift by the width of the type or more).
    fn printed_macro(n: u32) -> Option<u32> {
        n.checked_shr(16 + n)?.checked_shr(2 * 4)
    }

    #[test]
    fn the_printed_two_term_macro_adds_nothing() {
        assert!((0..16).all(|n| printed_macro(n) == Some(0)));
        assert!((16..WORDS).all(|n| printed_macro(n).is_none()));
    }
}
