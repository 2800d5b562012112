//! Lesson 2: padding.
//!
//! A warp reads a column of `T tile[32][32 + P]`: lane `l` reads row `l`. Unpadded, every row
//! starts in the same bank and the column is a 32-way conflict for 4-byte elements. Which padding
//! `P` removes the conflict depends on the element width; the model derives it, the H100 confirms
//! it, and the cost is `P / 32` more shared memory.

use bank_model::{Analysis, Op, Request, Width};
use cuda_kernels::{Gpu, GpuError, GpuInfo};
use lesson_kit::{
    KernelRun, Lesson, Prepared, Report, RunSize, TimeRatio, TimedRun, Tone,
    bank_table::add_bank_grid,
    cells::{counter_cells, median_cell, spread_cell},
    styled,
    words_kernel::{WordsLaunch, fill_tile_access, loaded_value, random_words, words_kernel},
};

/// The kernels' source file in `kernels/`.
pub const KERNEL_FILE: &str = "padding.cu";
/// Rows (and lanes, and columns) of every tile.
pub const ROWS: u32 = 32;
/// Paddings the lesson compares, in elements per row.
pub const PADDINGS: std::ops::RangeInclusive<u32> = 0..=8;
/// Tiles that popular notes discuss: `char tile[32][128]`, `[32][129]` (often called
/// conflict-free), and `[32][132]`.
pub const NOTED_CHAR_PITCHES: [u32; 3] = [128, 129, 132];

/// The column read with the most wavefronts, over all 32 columns.
pub fn worst_column(width: Width, pitch: u32) -> Analysis {
    (0..ROWS)
        .map(|column| Request::column(width, pitch, column).analyze())
        .max_by_key(|analysis| analysis.wavefronts)
        .expect("32 columns")
}

/// Whether every column of the tile reads in the ideal number of wavefronts.
pub fn conflict_free(width: Width, pitch: u32) -> bool {
    (0..ROWS).all(|column| {
        let analysis = Request::column(width, pitch, column).analyze();
        analysis.wavefronts <= analysis.ideal
    })
}

/// The rule the model's table bears out: a column read is conflict-free when a row is an odd,
/// whole number of units, a unit being the larger of a 4-byte word and the element.
pub fn odd_units_per_row(width: Width, pitch: u32) -> bool {
    let (bytes, unit) = (pitch * width.bytes(), width.bytes().max(4));
    bytes % unit == 0 && (bytes / unit) % 2 == 1
}

/// The smallest padding in [`PADDINGS`] that makes every column conflict-free.
pub fn smallest_padding(width: Width) -> Option<u32> {
    PADDINGS.into_iter().find(|&padding| conflict_free(width, ROWS + padding))
}

/// Index remapping instead of padding: element `i` of an unpadded 32-wide tile is stored at
/// `i + i / 32`.
pub fn remapped(index: u32) -> u32 {
    index + index / ROWS
}

pub struct Padding;

/// The lesson, as the course's list of lessons names it.
pub static LESSON: Padding = Padding;

/// One kernel run: element width and row pitch (in elements).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    pub width: Width,
    pub pitch: u32,
    pub blocks: u32,
    pub threads: u32,
    pub iterations: u32,
}

fn kernel_name(width: Width) -> &'static str {
    match width {
        Width::W1 => "column_read_1",
        Width::W2 => "column_read_2",
        Width::W4 => "column_read_4",
        Width::W8 => "column_read_8",
        Width::W16 => "column_read_16",
    }
}

fn tile_words(width: Width, pitch: u32) -> u32 {
    ROWS * pitch * width.bytes() / 4
}

/// The value thread `thread` reads once: its element of the tile, as the kernel sums it.
fn element_value(words: &[u32], width: Width, pitch: u32, thread: usize) -> u32 {
    let (lane, column) = (thread as u32 % 32, (thread as u32 / 32) % 32);
    loaded_value(words, width, (lane * pitch + column) * width.bytes())
}

impl Lesson for Padding {
    type Spec = Spec;

    const NUMBER: u32 = 2;
    const TITLE: &'static str = "Padding";
    const KERNEL_FILES: &'static [&'static str] = &[KERNEL_FILE];

    fn model(&self, report: &mut Report) {
        report.text("Lane l reads tile[l][c] of T tile[32][32 + P]; chapter 2 of the book explains the counts.");
        report.heading("Wavefronts for the worst column of T tile[32][32 + P] (ideal in brackets)");
        let header = ["P", "extra memory"]
            .into_iter()
            .map(String::from)
            .chain(Width::ALL.iter().map(|w| format!("{} ({w} B)", w.c_type())));
        let rows = PADDINGS
            .map(|padding| {
                let mut row = vec![padding.into(), format!("{:.1}%", 100.0 * padding as f64 / ROWS as f64).into()];
                for width in Width::ALL {
                    let worst = worst_column(width, ROWS + padding);
                    let tone = Tone::of_wavefronts(worst.wavefronts, worst.ideal);
                    row.push(styled(format!("{} ({})", worst.wavefronts, worst.ideal), tone));
                }
                row
            })
            .collect();
        report.table(header, rows);

        report.heading("The smallest padding that makes every column conflict-free");
        let rows = Width::ALL
            .into_iter()
            .map(|width| match smallest_padding(width) {
                Some(padding) => {
                    let pitch = ROWS + padding;
                    vec![
                        width.c_type().into(),
                        padding.into(),
                        format!("{} B = {} words", pitch * width.bytes(), pitch * width.bytes() / 4).into(),
                        format!("{} B", ROWS * padding * width.bytes()).into(),
                        format!("{:.1}%", 100.0 * padding as f64 / ROWS as f64).into(),
                    ]
                }
                None => vec![width.c_type().into(), "none up to 8".into(), "".into(), "".into(), "".into()],
            })
            .collect();
        report.table(["type", "P", "row length", "extra for 32 rows", "extra %"], rows);
        report.text(
            "Each row is an odd, whole number of units (the larger of a word and the element): chapter 2's rule.",
        );

        report.heading("Index remapping is padding");
        let identical = (0..ROWS * ROWS).all(|index| {
            let (row, column) = (index / ROWS, index % ROWS);
            remapped(index) == row * (ROWS + 1) + column
        });
        report.text(format!(
            "phi(i) = i + floor(i / 32) against tile[i / 32][i % 32] of a tile[32][33], all 1024 elements: {}.",
            if identical { "identical" } else { "DIFFERENT" }
        ));

        report.heading("char tile[32][129] is not conflict-free");
        report.text("Column 0 of a char tile padded by one byte, and by one word (chapter 2 explains the difference):");
        for pitch in NOTED_CHAR_PITCHES {
            let request = Request::column(Width::W1, pitch, 0);
            report.text(format!("char tile[32][{pitch}], column 0:"));
            add_bank_grid(report, &request, &request.analyze());
        }
    }

    fn runs(&self, gpu: &GpuInfo, size: RunSize) -> Vec<KernelRun<Spec>> {
        let (blocks, iterations) = match size {
            RunSize::Profile => (2, 8),
            RunSize::Timed => (2 * gpu.multiprocessors, 16384),
        };
        let threads = 1024;
        let tiles = Width::ALL
            .into_iter()
            .flat_map(|width| PADDINGS.map(move |padding| (width, ROWS + padding)))
            .chain(NOTED_CHAR_PITCHES.map(|pitch| (Width::W1, pitch)));
        tiles
            .map(|(width, pitch)| {
                let mut accesses: Vec<_> = (0..ROWS)
                    .map(|column| lesson_kit::DeclaredAccess {
                        name: format!("{}: tile[lane][{column}], pitch {pitch}", width.c_type()),
                        request: Request::column(width, pitch, column),
                        executions: blocks as u64 * iterations as u64,
                    })
                    .collect();
                accesses.push(fill_tile_access(blocks, tile_words(width, pitch)));
                KernelRun {
                    label: format!("{} tile[32][{pitch}]", width.c_type()),
                    kernel: Some(kernel_name(width)),
                    accesses,
                    spec: Spec { width, pitch, blocks, threads, iterations },
                }
            })
            .collect()
    }

    fn prepare<'g>(&self, gpu: &'g Gpu, run: &KernelRun<Spec>) -> Result<Box<dyn Prepared + 'g>, GpuError> {
        let Spec { width, pitch, blocks, threads, iterations } = run.spec.clone();
        let words = random_words(tile_words(width, pitch) as usize);
        let launch = WordsLaunch { blocks, threads, args: [pitch, iterations] };
        words_kernel(gpu, KERNEL_FILE, kernel_name(width), words, launch, move |words, thread| {
            element_value(words, width, pitch, thread).wrapping_mul(iterations)
        })
    }

    fn time_ratios(&self) -> &'static [TimeRatio] {
        &[
            TimeRatio {
                key: "padding_float_speedup",
                label: "float column read, tile[32][33] vs tile[32][32]",
                numerator: "float tile[32][32]",
                denominator: "float tile[32][33]",
            },
            TimeRatio {
                key: "char_129_vs_132",
                label: "char column read, tile[32][129] time over tile[32][132]",
                numerator: "char tile[32][129]",
                denominator: "char tile[32][132]",
            },
        ]
    }

    fn summarize(&self, _gpu: &GpuInfo, results: &[TimedRun<Spec>], report: &mut Report) {
        report.heading("Column reads of T tile[32][pitch]: many warps, every column");
        // Padded tiles compare with the unpadded one; the char tiles from popular notes have the
        // closing line instead.
        let unpadded = |spec: &Spec| {
            let padded = (ROWS..=ROWS + PADDINGS.end()).contains(&spec.pitch);
            let base = results.iter().find(|m| m.run.spec.width == spec.width && m.run.spec.pitch == ROWS)?;
            padded.then_some(base.timing.median_ms)
        };
        let rows = results
            .iter()
            .map(|m| {
                let Spec { width, pitch, .. } = m.run.spec;
                let [predicted, measured] = counter_cells(m, Op::Load);
                vec![
                    width.c_type().into(),
                    pitch.into(),
                    predicted,
                    measured,
                    median_cell(&m.timing),
                    spread_cell(&m.timing),
                    unpadded(&m.run.spec).map_or("-".into(), |t| format!("{:.1}x", t / m.timing.median_ms)).into(),
                ]
            })
            .collect();
        report.table(
            ["type", "pitch", "model wf/req", "ncu wf/req", "median ms", "spread", "speed-up vs pitch 32"],
            rows,
        );
        if let Some(char_129) = self.time_ratios()[1].figure(results) {
            report.text(format!(
                "char tile[32][129] took {:.2}x as long as char tile[32][132]: one byte of padding is not enough.",
                char_129.value
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_odd_units_rule_is_what_the_model_says() {
        for width in Width::ALL {
            for pitch in (ROWS..=ROWS + 8).chain(NOTED_CHAR_PITCHES) {
                assert_eq!(conflict_free(width, pitch), odd_units_per_row(width, pitch), "{width} B, pitch {pitch}");
            }
        }
        let smallest: Vec<_> = Width::ALL.into_iter().map(smallest_padding).collect();
        assert_eq!(smallest, [Some(4), Some(2), Some(1), Some(1), Some(1)]);
    }

    #[test]
    fn char_129_conflicts_and_132_does_not() {
        assert!(worst_column(Width::W1, 129).wavefronts > 1);
        assert!(conflict_free(Width::W1, 132));
        assert_eq!(worst_column(Width::W4, 32).wavefronts, 32);
    }

    #[test]
    fn element_values_follow_little_endian_bytes() {
        let words = vec![0x4433_2211, 0x8877_6655, 1, 2, 3, 4, 5, 6];
        assert_eq!(element_value(&words, Width::W1, 33, 32), 0x22, "thread 32: lane 0, column 1");
        assert_eq!(element_value(&words, Width::W2, 33, 32), 0x4433);
        assert_eq!(element_value(&words, Width::W8, 33, 0), 0x4433_2211u32.wrapping_add(0x8877_6655));
    }
}
