//! Lesson 9: swizzling.
//!
//! A tile written by rows and read by columns of 16-byte vectors conflicts: the 8 lanes of a
//! quarter-warp read the same vector of 8 rows, the same 4 banks. Padding each row by one element,
//! chapter 2's fix for 4-byte columns, misaligns the vectors; padding by a whole vector works and
//! costs memory. CuTe's `Swizzle<B, M, S>` XORs the low bits of the row into the vector's index
//! instead: conflict-free, no extra memory, every vector whole and aligned. A swizzle of too few
//! bits leaves part of the conflict.

use std::fmt;

use bank_model::{Op, Request, WARP_SIZE, Width, swizzle::Swizzle};
use cuda_kernels::{Gpu, GpuError, GpuInfo};
use lesson_kit::{
    Chart, DeclaredAccess, KernelRun, Lesson, Point, Prepared, Report, RunSize, Series, TimeRatio, TimedRun, Tone,
    bank_table::add_bank_grid,
    cells::{counter_cells, median_cell, spread_cell},
    styled,
    words_kernel::{Launch, loaded_value, random_words, repeated_sum, words_kernel},
};

/// The kernels' source file in `kernels/`.
pub const KERNEL_FILE: &str = "swizzle.cu";
/// Rows of every tile, as `ROWS` in the kernels.
pub const ROWS: u32 = 32;
/// Bytes of one vector access: a `float4`, a `uint4`, 8 `half`s.
pub const VECTOR_BYTES: u32 = 16;
/// Threads per block: one per vector of the tile, so 8 warps, one per column of vectors.
pub const THREADS: u32 = 256;
const WARPS: u32 = THREADS / WARP_SIZE as u32;
/// The ideal of a 16-byte warp request: 512 bytes at 128 per wavefront.
const IDEAL: u32 = 4;
/// The headline figures: each divides the times of two runs.
const FIGURES: [TimeRatio; 3] = [
    TimeRatio {
        key: "swizzle_unswizzled_vs_swizzled",
        label: "float4 columns of float tile[32][32], unswizzled time over Swizzle<3, 2, 3>",
        numerator: "float tile[32][32]",
        denominator: "float tile[32][32], Swizzle<3, 2, 3>",
    },
    TimeRatio {
        key: "swizzle_padded_vs_swizzled",
        label: "float4 columns, float tile[32][36] (padded by a float4) time over Swizzle<3, 2, 3>",
        numerator: "float tile[32][36]",
        denominator: "float tile[32][32], Swizzle<3, 2, 3>",
    },
    TimeRatio {
        key: "swizzle_too_small_vs_swizzled",
        label: "float4 columns, Swizzle<2, 2, 3> (too few bits) time over Swizzle<3, 2, 3>",
        numerator: "float tile[32][32], Swizzle<2, 2, 3>",
        denominator: "float tile[32][32], Swizzle<3, 2, 3>",
    },
];

/// `Swizzle<bits, base, shift>`, for parameters known to be valid.
fn swizzle(bits: u32, base: u32, shift: u32) -> Swizzle {
    Swizzle::new(bits, base, shift).expect("a valid swizzle")
}

/// Why a layout cannot serve a vector as one 16-byte access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Broken {
    /// Its elements are not stored side by side in order.
    Reordered,
    /// They are, but not starting on a 16-byte boundary.
    Misaligned,
}

impl fmt::Display for Broken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Broken::Misaligned => "misaligned",
            Broken::Reordered => "reordered",
        })
    }
}

/// How a tile of `ROWS` rows of `columns` elements is stored: `pitch` elements from the start of
/// one row to the next (the columns and any padding), and a swizzle of every element's offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub element: Width,
    pub columns: u32,
    pub pitch: u32,
    pub swizzle: Swizzle,
}

impl Layout {
    /// Rows of `columns` elements and `padding` unused ones, not swizzled.
    pub fn padded(element: Width, columns: u32, padding: u32) -> Layout {
        Layout { element, columns, pitch: columns + padding, swizzle: Swizzle::IDENTITY }
    }

    /// Unpadded rows, every offset swizzled.
    pub fn swizzled(element: Width, columns: u32, swizzle: Swizzle) -> Layout {
        Layout { element, columns, pitch: columns, swizzle }
    }

    /// Where element (`row`, `column`) is stored, in elements from the start of the tile.
    pub fn offset(self, row: u32, column: u32) -> u32 {
        self.swizzle.apply(row * self.pitch + column)
    }

    /// Elements in one 16-byte vector.
    pub fn vector_elements(self) -> u32 {
        VECTOR_BYTES / self.element.bytes()
    }

    /// Vectors in the data of a row.
    pub fn vectors_per_row(self) -> u32 {
        self.columns / self.vector_elements()
    }

    /// Shared memory of the tile, padding included.
    pub fn shared_bytes(self) -> u32 {
        ROWS * self.pitch * self.element.bytes()
    }

    /// The byte address of vector `vector` of row `row` when it is one aligned 16-byte access.
    pub fn vector_address(self, row: u32, vector: u32) -> Result<u32, Broken> {
        let elements = self.vector_elements();
        let first = self.offset(row, vector * elements);
        if (1..elements).any(|k| self.offset(row, vector * elements + k) != first + k) {
            return Err(Broken::Reordered);
        }
        if !(first * self.element.bytes()).is_multiple_of(VECTOR_BYTES) {
            return Err(Broken::Misaligned);
        }
        Ok(first * self.element.bytes())
    }

    /// Warp `warp`'s store of the row write: thread `t` writes vector `t % 8` of row `t / 8`, so
    /// each quarter-warp writes one row.
    pub fn row_write(self, warp: u32) -> Result<Request, Broken> {
        let per_row = self.vectors_per_row();
        self.request(Op::Store, |lane| {
            let thread = warp * WARP_SIZE as u32 + lane;
            (thread / per_row, thread % per_row)
        })
    }

    /// The load of vector column `column`: lane `l` reads it from row `l`.
    pub fn column_read(self, column: u32) -> Result<Request, Broken> {
        self.request(Op::Load, |lane| (lane, column))
    }

    /// Lane `l` accesses the vector at `place(l)`, a row and a vector of that row.
    fn request(self, op: Op, place: impl Fn(u32) -> (u32, u32)) -> Result<Request, Broken> {
        let mut lanes = [None; WARP_SIZE];
        for (lane, address) in lanes.iter_mut().enumerate() {
            let (row, vector) = place(lane as u32);
            *address = Some(self.vector_address(row, vector)?);
        }
        Ok(Request::new(op, Width::W16, lanes).expect("vector addresses are 16-byte aligned"))
    }

    /// The most wavefronts any warp's row write takes.
    pub fn worst_row_write(self) -> Result<u32, Broken> {
        let mut worst = 0;
        for warp in 0..ROWS * self.vectors_per_row() / WARP_SIZE as u32 {
            worst = worst.max(self.row_write(warp)?.analyze().wavefronts);
        }
        Ok(worst)
    }

    /// The most wavefronts any column's read takes.
    pub fn worst_column_read(self) -> Result<u32, Broken> {
        let mut worst = 0;
        for column in 0..self.vectors_per_row() {
            worst = worst.max(self.column_read(column)?.analyze().wavefronts);
        }
        Ok(worst)
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} tile[{ROWS}][{}]", self.element.c_type(), self.pitch)?;
        // Swizzle<0, M, S> changes nothing: the plain tile.
        if self.swizzle.bits > 0 {
            write!(f, ", {}", self.swizzle)?;
        }
        Ok(())
    }
}

/// The float tile's layouts in the model's table: no swizzle, two paddings, `B` = 1 to 3, and two
/// swizzles with a wrong parameter.
pub fn float_layouts() -> Vec<Layout> {
    vec![
        Layout::padded(Width::W4, 32, 0),
        Layout::padded(Width::W4, 32, 1),
        Layout::padded(Width::W4, 32, 4),
        Layout::swizzled(Width::W4, 32, swizzle(1, 2, 3)),
        Layout::swizzled(Width::W4, 32, swizzle(2, 2, 3)),
        Layout::swizzled(Width::W4, 32, swizzle(3, 2, 3)),
        Layout::swizzled(Width::W4, 32, swizzle(3, 2, 4)),
        Layout::swizzled(Width::W4, 32, swizzle(5, 0, 5)),
    ]
}

/// A tile of 64 halves per row read in 16-byte chunks, as tensor-core code loads it.
pub fn half_layouts() -> Vec<Layout> {
    vec![
        Layout::padded(Width::W2, 64, 0),
        Layout::padded(Width::W2, 64, 1),
        Layout::padded(Width::W2, 64, 8),
        Layout::swizzled(Width::W2, 64, swizzle(1, 3, 3)),
        Layout::swizzled(Width::W2, 64, swizzle(2, 3, 3)),
        Layout::swizzled(Width::W2, 64, swizzle(3, 3, 3)),
    ]
}

/// The float tile's layouts run on the GPU, each with its kernel in `kernels/swizzle.cu`.
pub fn measured_layouts() -> [(&'static str, Layout); 5] {
    [
        ("column_unswizzled", Layout::padded(Width::W4, 32, 0)),
        ("column_padded", Layout::padded(Width::W4, 32, 4)),
        ("column_swizzle_1_2_3", Layout::swizzled(Width::W4, 32, swizzle(1, 2, 3))),
        ("column_swizzle_2_2_3", Layout::swizzled(Width::W4, 32, swizzle(2, 2, 3))),
        ("column_swizzle_3_2_3", Layout::swizzled(Width::W4, 32, swizzle(3, 2, 3))),
    ]
}

pub struct Swizzling;

/// The lesson, as the course's list of lessons names it.
pub static LESSON: Swizzling = Swizzling;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    pub kernel: &'static str,
    pub layout: Layout,
    pub launch: Launch,
}

impl Spec {
    /// Every shared-memory instruction of a launch: each warp's row write once per block, then
    /// each warp's column read `iterations` times per block.
    fn accesses(&self) -> Vec<DeclaredAccess> {
        let Launch { blocks, iterations, .. } = self.launch;
        let rows_per_warp = WARP_SIZE as u32 / self.layout.vectors_per_row();
        let writes = (0..WARPS).map(|warp| DeclaredAccess {
            name: format!("row write, warp {warp}: rows {}-{}", warp * rows_per_warp, (warp + 1) * rows_per_warp - 1),
            request: self.layout.row_write(warp).expect("the runs' layouts keep vectors whole"),
            executions: blocks as u64,
        });
        let reads = (0..WARPS).map(|column| DeclaredAccess {
            name: format!("column read, warp {column}: vector {column} of row lane"),
            request: self.layout.column_read(column).expect("the runs' layouts keep vectors whole"),
            executions: blocks as u64 * iterations as u64,
        });
        writes.chain(reads).collect()
    }

    /// The CPU reference, what each thread of a block writes: the tile as the row write leaves it
    /// (thread `t`'s input word in all 4 words of its vector, where the layout stores it), read
    /// back by the column read `iterations` times.
    pub fn expected(&self, words: &[u32]) -> Vec<u32> {
        let per_row = self.layout.vectors_per_row();
        let address =
            |row, vector| self.layout.vector_address(row, vector).expect("the runs' layouts keep vectors whole");
        let mut tile = vec![0; self.layout.shared_bytes() as usize / 4];
        for thread in 0..THREADS {
            let word = address(thread / per_row, thread % per_row) as usize / 4;
            tile[word..word + 4].fill(words[thread as usize]);
        }
        (0..THREADS)
            .map(|thread| {
                let (lane, warp) = (thread % WARP_SIZE as u32, thread / WARP_SIZE as u32);
                repeated_sum([loaded_value(&tile, Width::W16, address(lane, warp))], self.launch.iterations)
            })
            .collect()
    }

    /// Bytes the column reads load in one launch.
    fn bytes_loaded(&self) -> f64 {
        let Launch { blocks, threads, iterations } = self.launch;
        blocks as f64 * threads as f64 * iterations as f64 * VECTOR_BYTES as f64
    }
}

/// A cell of wavefronts, or why the layout has no 16-byte access there.
fn wavefront_cell(cost: Result<u32, Broken>) -> lesson_kit::Styled {
    match cost {
        Ok(wavefronts) => styled(wavefronts, Tone::of_wavefronts(wavefronts, IDEAL)),
        Err(broken) => styled(broken, Tone::Bad),
    }
}

/// One row of a model table per layout; the first is the plain tile, whose memory the others' extra
/// memory is counted from.
fn layout_table(report: &mut Report, layouts: &[Layout]) {
    let unpadded = layouts[0].shared_bytes();
    let rows = layouts
        .iter()
        .map(|&layout| {
            let extra = layout.shared_bytes() - unpadded;
            vec![
                layout.to_string().into(),
                format!("{} B", layout.shared_bytes()).into(),
                match extra {
                    0 => "none".into(),
                    _ => format!("+{:.1}%", 100.0 * extra as f64 / unpadded as f64).into(),
                },
                wavefront_cell(layout.worst_row_write()),
                wavefront_cell(layout.worst_column_read()),
            ]
        })
        .collect();
    report.table(["layout", "shared per tile", "extra memory", "row write", "column read"], rows);
}

impl Lesson for Swizzling {
    type Spec = Spec;

    const NUMBER: u32 = 9;
    const TITLE: &'static str = "Swizzling";
    const KERNEL_FILES: &'static [&'static str] = &[KERNEL_FILE];

    fn charts(&self) -> &'static [Chart] {
        &[Chart {
            file: "lesson-09-swizzle.svg",
            title: "A column of float4s by layout: the clock against the model",
            value_label: "over Swizzle<3, 2, 3>",
            series: &["swizzle_time_ratio", "swizzle_wavefront_ratio"],
        }]
    }

    fn model(&self, report: &mut Report) {
        report.text(
            "A block writes a tile by rows and reads it by columns, in 16-byte vectors; Swizzle<B, M, S> is CuTe's.\n\
             Chapter 9 of the book explains the swizzle and how to choose B, M and S.",
        );
        report.heading("float tile[32][32] read by columns of float4: most wavefronts per warp request");
        layout_table(report, &float_layouts());
        report.heading("half tile[32][64] read in 16-byte chunks (8 halves): most wavefronts per warp request");
        layout_table(report, &half_layouts());
        report.text("For halves M = 3 and S = 3: Swizzle<3, 3, 3> (chapter 9, The same bytes as half).");
        for layout in
            [Layout::padded(Width::W4, 32, 0), Layout::swizzled(Width::W4, 32, swizzle(2, 2, 3)), float_swizzled()]
        {
            report.heading(format!("Column 0 of {layout}: lane l loads vector 0 of row l"));
            let request = layout.column_read(0).expect("the layout keeps vectors whole");
            add_bank_grid(report, &request, &request.analyze());
        }
    }

    fn runs(&self, gpu: &GpuInfo, size: RunSize) -> Vec<KernelRun<Spec>> {
        let launch = match size {
            RunSize::Profile => Launch { blocks: 2, threads: THREADS, iterations: 8 },
            // Every SM full of blocks (8 of 256 threads on an H100), reading long enough to be bound
            // by the shared-memory pipe.
            RunSize::Timed => Launch {
                blocks: gpu.max_threads_per_sm / THREADS * gpu.multiprocessors,
                threads: THREADS,
                iterations: 16384,
            },
        };
        measured_layouts()
            .into_iter()
            .map(|(kernel, layout)| {
                let spec = Spec { kernel, layout, launch };
                KernelRun { label: layout.to_string(), kernel: Some(kernel), accesses: spec.accesses(), spec }
            })
            .collect()
    }

    fn prepare<'g>(&self, gpu: &'g Gpu, run: &KernelRun<Spec>) -> Result<Box<dyn Prepared + 'g>, GpuError> {
        let spec = &run.spec;
        let words = random_words(THREADS as usize);
        // Every block fills its tile from the same words, so every block writes what the first does.
        let block = spec.expected(&words);
        words_kernel(gpu, KERNEL_FILE, spec.kernel, words, spec.launch.with_first_argument(0), move |_, thread| {
            block[thread % THREADS as usize]
        })
    }

    fn time_ratios(&self) -> &'static [TimeRatio] {
        &FIGURES
    }

    /// Each layout's time and its column read's wavefronts, both over the recommended swizzle's:
    /// on a chart the clock's ladder lies on the model's.
    fn series(&self, _gpu: &GpuInfo, results: &[TimedRun<Spec>]) -> Vec<Series> {
        let recommended = float_swizzled().to_string();
        let Some(baseline) = results.iter().find(|m| m.run.label == recommended) else { return Vec::new() };
        let column_read = |m: &TimedRun<Spec>| m.run.predicted(Op::Load).0 as f64;
        let series = |key: &str, label: &str, value: &dyn Fn(&TimedRun<Spec>) -> f64| Series {
            key: key.into(),
            label: label.into(),
            unit: "x".into(),
            points: results.iter().map(|m| Point { at: m.run.label.clone(), value: value(m) }).collect(),
        };
        vec![
            series("swizzle_time_ratio", "time over Swizzle<3, 2, 3>'s (measured)", &|m| {
                m.timing.median_ms / baseline.timing.median_ms
            }),
            series("swizzle_wavefront_ratio", "wavefronts over Swizzle<3, 2, 3>'s (model)", &|m| {
                column_read(m) / column_read(baseline)
            }),
        ]
    }

    fn summarize(&self, gpu: &GpuInfo, results: &[TimedRun<Spec>], report: &mut Report) {
        report.heading("Measured: each warp reads a column of float4s, again and again");
        let rows = results
            .iter()
            .map(|m| {
                let [store_model, store_ncu] = counter_cells(m, Op::Store);
                let [load_model, load_ncu] = counter_cells(m, Op::Load);
                let gigabytes = m.run.spec.bytes_loaded() / (m.timing.median_ms * 1e-3) / 1e9;
                vec![
                    m.run.label.as_str().into(),
                    format!("{} B", m.run.spec.layout.shared_bytes()).into(),
                    store_model,
                    store_ncu,
                    load_model,
                    load_ncu,
                    median_cell(&m.timing),
                    spread_cell(&m.timing),
                    format!("{gigabytes:.0}").into(),
                ]
            })
            .collect();
        report.table(
            ["layout", "shared", "st model", "st ncu", "ld model", "ld ncu", "median ms", "spread", "GB/s"],
            rows,
        );
        report.text("GB/s counts the bytes the column reads load, per second.");
        for figure in self.all_figures(gpu, results) {
            report.text(format!("{}: {:.2}x", figure.label, figure.value));
        }
    }
}

/// The swizzle the lesson recommends for the float tile.
fn float_swizzled() -> Layout {
    Layout::swizzled(Width::W4, 32, swizzle(3, 2, 3))
}

#[cfg(test)]
mod tests {
    use cuda_kernels::timing::Timing;

    use super::*;

    #[test]
    fn the_series_put_each_layouts_time_beside_its_wavefronts_over_the_swizzles() {
        // Times that are not proportional to wavefronts, so the two series must differ.
        let results: Vec<TimedRun<Spec>> = Swizzling
            .runs(&GpuInfo::h100(), RunSize::Timed)
            .into_iter()
            .enumerate()
            .map(|(index, run)| {
                let ms = 1.0 + index as f64;
                TimedRun {
                    run,
                    timing: Timing { median_ms: ms, min_ms: ms, max_ms: ms, reps: 1 },
                    counters: None,
                    occupancy: None,
                }
            })
            .collect();
        let series = Swizzling.series(&GpuInfo::h100(), &results);
        let values = |key: &str| -> Vec<(String, f64)> {
            let series = series.iter().find(|s| s.key == key).unwrap_or_else(|| panic!("no series {key}"));
            series.points.iter().map(|p| (p.at.clone(), p.value)).collect()
        };
        let labels: Vec<String> = results.iter().map(|m| m.run.label.clone()).collect();
        let swizzled = labels.iter().position(|l| *l == float_swizzled().to_string()).unwrap();
        let times = values("swizzle_time_ratio");
        assert_eq!(times.iter().map(|(at, _)| at.clone()).collect::<Vec<_>>(), labels);
        assert!(times.iter().enumerate().all(|(i, (_, v))| *v == (1.0 + i as f64) / (1.0 + swizzled as f64)));
        let wavefronts: Vec<f64> = values("swizzle_wavefront_ratio").into_iter().map(|(_, v)| v).collect();
        assert_eq!(wavefronts, [8.0, 1.0, 4.0, 2.0, 1.0], "plain, padded, Swizzle<1>, <2>, <3>");
        assert!(Swizzling.series(&GpuInfo::h100(), &results[..1]).is_empty(), "no baseline, no series");
    }

    #[test]
    fn each_bit_of_swizzle_halves_the_column_read_and_three_reach_the_ideal() {
        let costs: Vec<(u32, u32)> = (0..=3)
            .map(|bits| {
                let layout = Layout::swizzled(Width::W4, 32, swizzle(bits, 2, 3));
                (layout.worst_row_write().unwrap(), layout.worst_column_read().unwrap())
            })
            .collect();
        assert_eq!(costs, [(4, 32), (4, 16), (4, 8), (4, 4)]);
        // Every column, not only the worst: the swizzle is conflict-free everywhere.
        assert!((0..8).all(|c| float_swizzled().column_read(c).unwrap().analyze().wavefronts == IDEAL));
    }

    #[test]
    fn padding_by_a_float_misaligns_and_by_a_float4_costs_memory() {
        assert_eq!(Layout::padded(Width::W4, 32, 1).worst_column_read(), Err(Broken::Misaligned));
        let padded = Layout::padded(Width::W4, 32, 4);
        assert_eq!((padded.worst_row_write(), padded.worst_column_read()), (Ok(4), Ok(4)));
        assert_eq!((padded.shared_bytes(), float_swizzled().shared_bytes()), (4608, 4096));
    }

    #[test]
    fn the_wrong_shift_pairs_rows_and_chapter_3s_swizzle_reorders_vectors() {
        assert_eq!(Layout::swizzled(Width::W4, 32, swizzle(3, 2, 4)).worst_column_read(), Ok(8));
        let chapter_3 = Layout::swizzled(Width::W4, 32, swizzle(5, 0, 5));
        assert_eq!(chapter_3.vector_address(0, 3), Ok(48), "row 0 is not moved");
        assert_eq!(chapter_3.vector_address(1, 0), Err(Broken::Reordered));
        assert_eq!(chapter_3.worst_row_write(), Err(Broken::Reordered));
    }

    #[test]
    fn half_tiles_cost_what_float_tiles_of_the_same_bytes_cost() {
        let costs = |layouts: Vec<Layout>| -> Vec<_> {
            layouts.iter().map(|l| (l.worst_row_write(), l.worst_column_read())).collect()
        };
        let mut float = float_layouts();
        float.truncate(half_layouts().len());
        assert_eq!(costs(half_layouts()), costs(float));
        assert_eq!(half_layouts()[0].shared_bytes(), float_layouts()[0].shared_bytes());
    }

    #[test]
    fn declared_counts_follow_the_launch_shape() {
        let runs = Swizzling.runs(&GpuInfo::h100(), RunSize::Profile);
        let find = |label: &str| runs.iter().find(|r| r.label == label).unwrap_or_else(|| panic!("no run {label}"));
        // 2 blocks x 8 warps: one row write each at 4 wavefronts; 8 column reads each at 32.
        let unswizzled = find("float tile[32][32]");
        assert_eq!(unswizzled.predicted(Op::Store), (2 * 8 * 4, 2 * 8));
        assert_eq!(unswizzled.predicted(Op::Load), (2 * 8 * 8 * 32, 2 * 8 * 8));
        let swizzled = find("float tile[32][32], Swizzle<3, 2, 3>");
        assert_eq!(swizzled.predicted(Op::Load), (2 * 8 * 8 * 4, 2 * 8 * 8));
        assert_eq!(swizzled.predicted_excess(), 0);
        assert_eq!(find("float tile[32][32], Swizzle<2, 2, 3>").predicted_per_request(Op::Load), Some(8.0));
        let timed = Swizzling.runs(&GpuInfo::h100(), RunSize::Timed);
        assert_eq!(timed[0].spec.launch, Launch { blocks: 8 * 132, threads: THREADS, iterations: 16384 });
    }

    #[test]
    fn the_reference_reads_what_the_kernel_reads() {
        let words: Vec<u32> = (0..THREADS).map(|t| 1000 + t).collect();
        for run in Swizzling.runs(&GpuInfo::h100(), RunSize::Profile) {
            // Lane l of warp w reads logical vector w of row l, which thread 8 l + w wrote: 4 copies
            // of its word, 8 iterations, wherever the layout put it.
            let expected = run.spec.expected(&words);
            for (thread, &value) in expected.iter().enumerate() {
                let (lane, warp) = (thread as u32 % 32, thread as u32 / 32);
                assert_eq!(value, 4 * 8 * words[(8 * lane + warp) as usize], "{}, thread {thread}", run.label);
            }
        }
        // And the layouts do put it in different places: row 5's vector 2 is vector 2 ^ 5 = 7.
        assert_eq!(float_swizzled().vector_address(5, 2), Ok(5 * 128 + 7 * 16));
        assert_eq!(Layout::padded(Width::W4, 32, 4).vector_address(5, 2), Ok(5 * 144 + 2 * 16));
    }

    #[test]
    fn the_kernels_store_the_layouts_the_lesson_declares() {
        let source = cuda_kernels::source::embedded(KERNEL_FILE).expect("embedded kernel source");
        for (kernel, layout) in measured_layouts() {
            let Swizzle { bits, base, shift } = layout.swizzle;
            let line = format!("COLUMN_OF_VECTORS({kernel}, {}, {bits}, {base}, {shift})", layout.pitch);
            assert!(source.lines().any(|l| l == line), "{KERNEL_FILE} lacks `{line}`");
        }
    }
}
