//! Lesson 7: vector widths and data types.
//!
//! A conflict-free warp request moves 128 bytes per wavefront whatever its width, so 8- and
//! 16-byte requests ideally take 2 and 4 wavefronts: wider accesses save instructions, not
//! wavefronts. The H100 serves them by half- and quarter-warps; a load in which every such group
//! reads one address is served as one broadcast, a store never is. A float tile read as float2 or
//! float4 needs a padding of its own: an odd number of those elements per row. And a thread that
//! owns 16 bytes pays for every narrower piece it reads them in, which is why narrow types are
//! packed.

use std::ops::RangeInclusive;

use bank_model::{Analysis, Op, Request, WAVEFRONT_BYTES, Width};
use cuda_kernels::{Gpu, GpuError, GpuInfo};
use lesson_kit::{
    DeclaredAccess, KernelRun, Lesson, Prepared, Report, RunSize, TimeRatio, TimedRun, Tone,
    bank_table::add_bank_grid,
    cells::{counter_cells, grouped, median_cell, spread_cell},
    styled,
    words_kernel::{
        Launch, WordsLaunch, WordsRun, fill_tile_access, loaded_value, prepare_words, random_words, repeated_sum,
        words_runs,
    },
};

/// The kernels' source file in `kernels/`.
pub const KERNEL_FILE: &str = "vector_widths.cu";
/// Shared memory of the wide-access kernels, as `TILE_BYTES` in the kernels.
pub const TILE_BYTES: u32 = 32768;
/// Independent accesses per thread per iteration, as `ROWS` in the kernels.
pub const ROWS: u32 = 8;
/// Widths of the wide-access kernels.
pub const WIDE_WIDTHS: [Width; 3] = [Width::W4, Width::W8, Width::W16];
/// Element strides of the wide-access kernels.
pub const STRIDES: [u32; 3] = [1, 2, 4];
/// Rows of the float tile read by columns, as `TILE_ROWS` in the kernels.
pub const TILE_ROWS: u32 = 32;
/// Floats of data in each row of that tile.
pub const ROW_FLOATS: u32 = 32;
/// Row pitches of that tile, in floats, that the model's table covers (`MAX_PITCH` is the last).
pub const PITCHES: RangeInclusive<u32> = 32..=40;
/// Pitches run on the GPU for each view of the float tile: every pitch that fits the view up to 36.
pub const VIEW_PITCHES: [(Width, &[u32]); 3] =
    [(Width::W4, &[32, 33, 34, 36]), (Width::W8, &[32, 34, 36]), (Width::W16, &[32, 36])];
/// Bytes each thread owns per row in the chunk kernels, and the load widths each is read with.
pub const CHUNK_WIDTHS: [(u32, &[Width]); 2] =
    [(4, &[Width::W1, Width::W2, Width::W4]), (16, &[Width::W1, Width::W2, Width::W4, Width::W8, Width::W16])];
/// Wide patterns in which lanes share elements (`share` lanes per element): every pass group on
/// one element.
pub const GROUP_PATTERNS: [(Width, u32); 2] = [(Width::W8, 16), (Width::W16, 8)];
/// Chunk sizes in the model's table.
const MODEL_CHUNKS: [u32; 3] = [4, 8, 16];
/// Threads per block of every kernel.
const THREADS: u32 = 1024;
/// The headline figures: each divides the times of two runs.
const FIGURES: [TimeRatio; 3] = [
    TimeRatio {
        key: "chunk16_chars_vs_float4",
        label: "16 bytes per thread read as 16 chars, time over one float4 load",
        numerator: "16-byte chunk as char",
        denominator: "16-byte chunk as float4",
    },
    TimeRatio {
        key: "float4_column_pitch32_vs_36",
        label: "float4 column of float tile[32][32], time over tile[32][36]",
        numerator: "float4 column of float tile[32][32]",
        denominator: "float4 column of float tile[32][36]",
    },
    TimeRatio {
        key: "group16_store_vs_load",
        label: "one float4 per quarter-warp, stores' time over loads'",
        numerator: "st float4[(lane + 32 r) / 8]",
        denominator: "ld float4[(lane + 32 r) / 8]",
    },
];

/// The type a kernel of this lesson reads at each width (4-byte `half2`, `char4` and
/// `__nv_bfloat162` pack the same way as `float`).
pub fn vector_type(width: Width) -> &'static str {
    match width {
        Width::W1 => "char",
        Width::W2 => "half",
        Width::W4 => "float",
        Width::W8 => "float2",
        Width::W16 => "float4",
    }
}

/// Lanes the H100 serves together for a wide access: a half-warp for 8 bytes, a quarter-warp for
/// 16, the whole warp up to 4. Their accesses fill one wavefront.
pub fn group_lanes(width: Width) -> u32 {
    (WAVEFRONT_BYTES / width.bytes()).min(32)
}

/// Lane `lane`'s element in row `row` of the wide kernels: `((lane + 32 row) / share) * stride`,
/// wrapped to the tile.
pub fn wide_element(width: Width, lane: u32, row: u32, stride: u32, share: u32) -> u32 {
    ((lane + 32 * row) / share * stride) & (TILE_BYTES / width.bytes() - 1)
}

/// One row of the wide kernels as a warp request.
pub fn wide_request(op: Op, width: Width, row: u32, stride: u32, share: u32) -> Request {
    Request::elements(op, width, |lane| wide_element(width, lane, row, stride, share))
}

/// `width`-byte elements in a row of `float tile[32][pitch]`, or `None` when a row is not a whole
/// number of them (the rows after the first would be misaligned).
pub fn row_elements(width: Width, pitch: u32) -> Option<u32> {
    (pitch * 4).is_multiple_of(width.bytes()).then(|| pitch * 4 / width.bytes())
}

/// The columns of `width`-byte elements in the data of a row (the rest of the pitch is padding).
pub fn view_columns(width: Width) -> u32 {
    ROW_FLOATS * 4 / width.bytes()
}

/// Lane `lane` reads row `lane`, element column `column`, of the tile viewed as `width`-byte elements.
pub fn view_request(width: Width, pitch: u32, column: u32) -> Option<Request> {
    let per_row = row_elements(width, pitch)?;
    Some(Request::column(width, per_row, column))
}

/// The column read with the most wavefronts, or `None` when the view does not fit the pitch.
pub fn worst_view_column(width: Width, pitch: u32) -> Option<Analysis> {
    (0..view_columns(width))
        .map(|column| Some(view_request(width, pitch, column)?.analyze()))
        .collect::<Option<Vec<_>>>()?
        .into_iter()
        .max_by_key(|analysis| analysis.wavefronts)
}

/// Lane `lane` reads part `part` (of `width` bytes) of its chunk of `chunk` bytes in row `row`.
pub fn chunk_request(chunk: u32, width: Width, row: u32, part: u32) -> Request {
    Request::bytes(Op::Load, width, |lane| chunk * (lane + 32 * row) + part * width.bytes())
        .expect("parts are aligned to their width")
}

/// `(lane + 32 r) * 2` or `(lane + 32 r) / 16`: the element a wide kernel's lane touches.
fn wide_pattern(stride: u32, share: u32) -> String {
    match share {
        1 => format!("(lane + 32 r) * {stride}"),
        _ => format!("(lane + 32 r) / {share}"),
    }
}

pub struct VectorWidths;

/// The lesson, as the course's list of lessons names it.
pub static LESSON: VectorWidths = VectorWidths;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Spec {
    /// `wide_*` (`share` 1) and `group_*` (`stride` 1): lane `l` of row `r` touches element
    /// `((l + 32 r) / share) * stride`.
    Wide { op: Op, width: Width, stride: u32, share: u32, launch: Launch },
    /// `tile_column_*`: columns of `float tile[32][pitch]` read as `width`-byte elements.
    Column { width: Width, pitch: u32, launch: Launch },
    /// `chunk_*`: each thread reads its own `chunk` bytes per row as `width`-byte loads.
    Chunk { chunk: u32, width: Width, launch: Launch },
}

impl Spec {
    fn launch(&self) -> Launch {
        match *self {
            Spec::Wide { launch, .. } | Spec::Column { launch, .. } | Spec::Chunk { launch, .. } => launch,
        }
    }

    /// Bytes the lanes load or store in the timed loop of one launch.
    pub fn bytes_moved(&self) -> f64 {
        let per_thread_iteration = match *self {
            Spec::Wide { width, .. } => ROWS * width.bytes(),
            Spec::Column { width, .. } => width.bytes(),
            Spec::Chunk { chunk, .. } => ROWS * chunk,
        };
        let Launch { blocks, threads, iterations } = self.launch();
        blocks as f64 * threads as f64 * iterations as f64 * per_thread_iteration as f64
    }

    /// The kernels' first argument: the stride of `wide_*`, the share of `group_*`, the pitch of
    /// `tile_column_*`; the chunk kernels take none.
    fn first_argument(&self) -> u32 {
        match *self {
            Spec::Wide { share: 1, stride, .. } => stride,
            Spec::Wide { share, .. } => share,
            Spec::Column { pitch, .. } => pitch,
            Spec::Chunk { .. } => 0,
        }
    }

    /// The table of the GPU summary that shows the run.
    fn family(&self) -> &'static str {
        match self {
            Spec::Wide { .. } => "Wide loads and stores: many warps, 8 independent accesses per thread",
            Spec::Column { .. } => "Columns of float tile[32][pitch], read as float, float2 and float4",
            Spec::Chunk { .. } => "Each thread's own chunk, read in pieces",
        }
    }

    /// The op of the timed loop's accesses.
    fn op(&self) -> Op {
        match *self {
            Spec::Wide { op, .. } => op,
            Spec::Column { .. } | Spec::Chunk { .. } => Op::Load,
        }
    }
}

impl WordsRun for Spec {
    fn kernel(&self) -> &'static str {
        match *self {
            Spec::Wide { op, width, share, .. } => match (op, width.bytes(), share == 1) {
                (Op::Load, 4, true) => "wide_load_4",
                (Op::Load, 8, true) => "wide_load_8",
                (Op::Load, 16, true) => "wide_load_16",
                (Op::Store, 4, true) => "wide_store_4",
                (Op::Store, 8, true) => "wide_store_8",
                (Op::Store, 16, true) => "wide_store_16",
                (Op::Load, 8, false) => "group_load_8",
                (Op::Load, 16, false) => "group_load_16",
                (Op::Store, 8, false) => "group_store_8",
                (Op::Store, 16, false) => "group_store_16",
                _ => unreachable!("no wide kernel for {self:?}"),
            },
            Spec::Column { width, .. } => match width {
                Width::W4 => "tile_column_4",
                Width::W8 => "tile_column_8",
                Width::W16 => "tile_column_16",
                _ => unreachable!("no tile_column kernel for {width}-byte elements"),
            },
            Spec::Chunk { chunk, width, .. } => match (chunk, width.bytes()) {
                (4, 1) => "chunk_4_1",
                (4, 2) => "chunk_4_2",
                (4, 4) => "chunk_4_4",
                (16, 1) => "chunk_16_1",
                (16, 2) => "chunk_16_2",
                (16, 4) => "chunk_16_4",
                (16, 8) => "chunk_16_8",
                (16, 16) => "chunk_16_16",
                _ => unreachable!("no chunk kernel for {self:?}"),
            },
        }
    }

    fn label(&self) -> String {
        match *self {
            Spec::Wide { op, width, stride, share, .. } => {
                format!("{op} {}[{}]", vector_type(width), wide_pattern(stride, share))
            }
            Spec::Column { width, pitch, .. } => format!("{} column of float tile[32][{pitch}]", vector_type(width)),
            Spec::Chunk { chunk, width, .. } => format!("{chunk}-byte chunk as {}", vector_type(width)),
        }
    }

    /// The kernel's input words: the tile it fills. The store kernels fill none and read no input
    /// (a word is uploaded all the same).
    fn input(&self) -> Vec<u32> {
        let words = match *self {
            Spec::Wide { op: Op::Load, .. } => TILE_BYTES / 4,
            Spec::Wide { .. } => 1,
            Spec::Column { pitch, .. } => TILE_ROWS * pitch,
            Spec::Chunk { chunk, .. } => 32 * ROWS * chunk / 4,
        };
        random_words(words as usize)
    }

    /// The CPU reference: what lane `lane` of warp `warp` writes, given the input words.
    fn expected(&self, words: &[u32], thread: usize) -> u32 {
        let (lane, warp) = (thread as u32 % 32, thread as u32 / 32);
        let iterations = self.launch().iterations;
        match *self {
            Spec::Wide { op: Op::Load, width, stride, share, .. } => {
                let elements = (0..ROWS).map(|row| wide_element(width, lane, row, stride, share));
                repeated_sum(elements.map(|element| loaded_value(words, width, element * width.bytes())), iterations)
            }
            // Every part of element e holds e + 1.
            Spec::Wide { width, stride, share, .. } => {
                let element = wide_element(width, lane, 0, stride, share);
                (element + 1).wrapping_mul(width.bytes() / 4)
            }
            Spec::Column { width, pitch, .. } => {
                let per_row = row_elements(width, pitch).expect("runs use pitches that fit the view");
                let element = lane * per_row + warp % view_columns(width);
                repeated_sum([loaded_value(words, width, element * width.bytes())], iterations)
            }
            Spec::Chunk { chunk, width, .. } => {
                let parts = (0..ROWS).flat_map(|row| {
                    (0..chunk).step_by(width.bytes() as usize).map(move |offset| chunk * (lane + 32 * row) + offset)
                });
                repeated_sum(parts.map(|byte| loaded_value(words, width, byte)), iterations)
            }
        }
    }

    /// Every shared-memory instruction of a run, as its kernel executes them.
    fn accesses(&self) -> Vec<DeclaredAccess> {
        let launch = self.launch();
        let per_warp_loop = launch.warps() * launch.iterations as u64;
        match *self {
            Spec::Wide { op, width, stride, share, .. } => {
                let name = |row: u32| format!("{}[{}], r = {row}", vector_type(width), wide_pattern(stride, share));
                let mut accesses: Vec<DeclaredAccess> = (0..ROWS)
                    .map(|row| DeclaredAccess {
                        name: name(row),
                        request: wide_request(op, width, row, stride, share),
                        executions: per_warp_loop,
                    })
                    .collect();
                match op {
                    Op::Load => accesses.push(fill_tile_access(launch.blocks, TILE_BYTES / 4)),
                    // Each thread reads back its row-0 element once.
                    _ => accesses.push(DeclaredAccess {
                        name: format!("out = {}", name(0)),
                        request: wide_request(Op::Load, width, 0, stride, share),
                        executions: launch.warps(),
                    }),
                }
                accesses
            }
            Spec::Column { width, pitch, .. } => {
                let columns = view_columns(width);
                let warps_per_column = launch.warps() / columns as u64;
                let mut accesses: Vec<DeclaredAccess> = (0..columns)
                    .map(|column| DeclaredAccess {
                        name: format!("{} column {column} of float tile[32][{pitch}]", vector_type(width)),
                        request: view_request(width, pitch, column).expect("runs use pitches that fit the view"),
                        executions: warps_per_column * launch.iterations as u64,
                    })
                    .collect();
                accesses.push(fill_tile_access(launch.blocks, TILE_ROWS * pitch));
                accesses
            }
            Spec::Chunk { chunk, width, .. } => {
                // Every row is row 0's pattern moved by 32 * chunk bytes, whole turns of the banks.
                let mut accesses: Vec<DeclaredAccess> = (0..chunk / width.bytes())
                    .map(|part| DeclaredAccess {
                        name: format!("{} {part} of chunk lane + 32 r, r = 0-{}", vector_type(width), ROWS - 1),
                        request: chunk_request(chunk, width, 0, part),
                        executions: per_warp_loop * ROWS as u64,
                    })
                    .collect();
                accesses.push(fill_tile_access(launch.blocks, 32 * ROWS * chunk / 4));
                accesses
            }
        }
    }

    fn arguments(&self) -> WordsLaunch {
        self.launch().with_first_argument(self.first_argument())
    }
}

impl Lesson for VectorWidths {
    type Spec = Spec;

    const NUMBER: u32 = 7;
    const TITLE: &'static str = "Vector widths and data types";
    const KERNEL_FILES: &'static [&'static str] = &[KERNEL_FILE];

    fn model(&self, report: &mut Report) {
        report.text("Wide accesses are served in pass groups of 128 bytes; chapter 7 of the book derives each count.");
        report.heading("Loads and stores of tile[lane * stride]: wavefronts per warp request");
        let mut rows = Vec::new();
        for width in WIDE_WIDTHS {
            for stride in STRIDES {
                let [load, store] = [Op::Load, Op::Store].map(|op| wide_request(op, width, 0, stride, 1).analyze());
                let bytes = 32 * width.bytes();
                rows.push(vec![
                    vector_type(width).into(),
                    stride.into(),
                    group_lanes(width).into(),
                    bytes.into(),
                    load.ideal.into(),
                    styled(load.wavefronts, Tone::of_wavefronts(load.wavefronts, load.ideal)),
                    styled(store.wavefronts, Tone::of_wavefronts(store.wavefronts, store.ideal)),
                    (bytes / load.wavefronts).into(),
                ]);
            }
        }
        report.table(
            [
                "type",
                "stride",
                "lanes per pass",
                "bytes",
                "ideal",
                "ld wavefronts",
                "st wavefronts",
                "bytes per wavefront",
            ],
            rows,
        );
        let request = wide_request(Op::Load, Width::W16, 0, 2, 1);
        report.text("ld float4[lane * 2], four quarter-warp passes:");
        add_bank_grid(report, &request, &request.analyze());

        report.heading("Where loads share and stores do not");
        let mut rows = Vec::new();
        for (width, share) in GROUP_PATTERNS {
            let [load, store] = [Op::Load, Op::Store].map(|op| wide_request(op, width, 0, 1, share).analyze());
            rows.push(vec![
                format!("{}[{}]", vector_type(width), wide_pattern(1, share)).into(),
                group_lanes(width).into(),
                (group_lanes(width) / share).into(),
                (32 / share * width.bytes()).into(),
                styled(load.wavefronts, Tone::of_wavefronts(load.wavefronts, load.ideal)),
                styled(store.wavefronts, Tone::of_wavefronts(store.wavefronts, store.ideal)),
            ]);
        }
        report.table(
            ["pattern", "lanes per pass", "addresses per pass", "distinct bytes", "ld wavefronts", "st wavefronts"],
            rows,
        );
        report.text(
            "Loads merge pass groups where lanes pair up; stores never do (the book's appendix The rules, measured).",
        );

        report.heading("One float tile, three views: columns of float tile[32][pitch] read as float, float2, float4");
        let rows = PITCHES
            .map(|pitch| {
                let mut row = vec![pitch.into(), format!("{} B", pitch * 4).into()];
                for width in WIDE_WIDTHS {
                    row.push(match worst_view_column(width, pitch) {
                        Some(worst) => styled(
                            format!("{} ({})", worst.wavefronts, worst.ideal),
                            Tone::of_wavefronts(worst.wavefronts, worst.ideal),
                        ),
                        None => "misaligned".into(),
                    });
                }
                row
            })
            .collect();
        report.table(["pitch", "row", "float (4 B)", "float2 (8 B)", "float4 (16 B)"], rows);
        report.text("Worst column, ideal in brackets; no pitch serves two views (chapter 7).");
        for width in [Width::W16, Width::W4] {
            let request = view_request(width, 36, 0).expect("36 floats fit every view");
            report.text(format!("{} column 0 of float tile[32][36]:", vector_type(width)));
            add_bank_grid(report, &request, &request.analyze());
        }

        report.heading("A thread's own bytes, read in pieces");
        let mut rows = Vec::new();
        for chunk in MODEL_CHUNKS {
            for width in Width::ALL.into_iter().filter(|w| w.bytes() <= chunk) {
                let parts = chunk / width.bytes();
                let per_load = chunk_request(chunk, width, 0, 0).analyze().wavefronts;
                rows.push(vec![
                    format!("{chunk} B").into(),
                    vector_type(width).into(),
                    parts.into(),
                    styled(
                        per_load,
                        Tone::of_wavefronts(per_load, chunk_request(chunk, width, 0, 0).ideal_wavefronts()),
                    ),
                    styled(parts * per_load, Tone::of_wavefronts(parts * per_load, chunk / 4)),
                    (32 * chunk / (parts * per_load)).into(),
                ]);
            }
        }
        report.table(
            ["chunk per thread", "read as", "loads", "wf/req", "wavefronts per warp", "bytes per wavefront"],
            rows,
        );
        report
            .text("Lane l owns bytes c * l to c * l + c - 1; packed narrow types, loaded whole, fill each wavefront.");
    }

    fn runs(&self, gpu: &GpuInfo, size: RunSize) -> Vec<KernelRun<Spec>> {
        let (blocks, [wide, column, chunk]) = match size {
            RunSize::Profile => (2, [4, 8, 2]),
            RunSize::Timed => (2 * gpu.multiprocessors, [2048, 16384, 1024]),
        };
        let launch = |iterations| Launch { blocks, threads: THREADS, iterations };
        let mut specs = Vec::new();
        for op in [Op::Load, Op::Store] {
            for width in WIDE_WIDTHS {
                for stride in STRIDES {
                    specs.push(Spec::Wide { op, width, stride, share: 1, launch: launch(wide) });
                }
            }
        }
        for op in [Op::Load, Op::Store] {
            for (width, share) in GROUP_PATTERNS {
                specs.push(Spec::Wide { op, width, stride: 1, share, launch: launch(wide) });
            }
        }
        for (width, pitches) in VIEW_PITCHES {
            for &pitch in pitches {
                specs.push(Spec::Column { width, pitch, launch: launch(column) });
            }
        }
        for (chunk_bytes, widths) in CHUNK_WIDTHS {
            for &width in widths {
                specs.push(Spec::Chunk { chunk: chunk_bytes, width, launch: launch(chunk) });
            }
        }
        words_runs(specs)
    }

    fn prepare<'g>(&self, gpu: &'g Gpu, run: &KernelRun<Spec>) -> Result<Box<dyn Prepared + 'g>, GpuError> {
        prepare_words(gpu, KERNEL_FILE, &run.spec)
    }

    fn time_ratios(&self) -> &'static [TimeRatio] {
        &FIGURES
    }

    fn summarize(&self, _gpu: &GpuInfo, results: &[TimedRun<Spec>], report: &mut Report) {
        for (family, members) in grouped(results, Spec::family) {
            let rows = members
                .iter()
                .map(|m| {
                    let [predicted, measured] = counter_cells(m, m.run.spec.op());
                    let gigabytes = m.run.spec.bytes_moved() / (m.timing.median_ms * 1e-3) / 1e9;
                    vec![
                        m.run.label.as_str().into(),
                        predicted,
                        measured,
                        median_cell(&m.timing),
                        spread_cell(&m.timing),
                        format!("{gigabytes:.0}").into(),
                    ]
                })
                .collect();
            report.heading(family);
            report.table(["kernel", "model wf/req", "ncu wf/req", "median ms", "spread", "GB/s"], rows);
        }
        report.text("GB/s counts the bytes the lanes load or store in the timed loop, per second.");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflict_free_requests_of_every_width_move_128_bytes_per_wavefront() {
        for width in WIDE_WIDTHS {
            for stride in STRIDES {
                for op in [Op::Load, Op::Store] {
                    let analysis = wide_request(op, width, 0, stride, 1).analyze();
                    assert_eq!(analysis.ideal, 32 * width.bytes() / WAVEFRONT_BYTES);
                    assert_eq!(analysis.wavefronts, stride * analysis.ideal, "{op} {width} B, stride {stride}");
                }
            }
        }
    }

    #[test]
    fn loads_merge_lane_pairs_and_stores_never_do() {
        let costs: Vec<[u32; 2]> = GROUP_PATTERNS
            .iter()
            .map(|&(width, share)| {
                [Op::Load, Op::Store].map(|op| wide_request(op, width, 0, 1, share).analyze().wavefronts)
            })
            .collect();
        assert_eq!(costs, [[1, 2], [2, 4]]);
        // float4[lane / 4]: each half-warp pairs up, one wavefront each.
        assert_eq!(wide_request(Op::Load, Width::W16, 0, 1, 4).analyze().wavefronts, 2);
    }

    #[test]
    fn a_view_is_conflict_free_exactly_when_a_row_is_an_odd_number_of_its_elements() {
        for pitch in PITCHES {
            for width in WIDE_WIDTHS {
                let conflict_free = worst_view_column(width, pitch).map(|a| a.wavefronts == a.ideal);
                assert_eq!(conflict_free, row_elements(width, pitch).map(|n| n % 2 == 1), "{width} B, pitch {pitch}");
            }
            let views =
                WIDE_WIDTHS.iter().filter(|&&w| worst_view_column(w, pitch).is_some_and(|a| a.wavefronts == a.ideal));
            assert!(views.count() <= 1, "pitch {pitch} serves two views");
        }
        assert_eq!(worst_view_column(Width::W16, 36).map(|a| a.wavefronts), Some(4));
        assert_eq!(worst_view_column(Width::W4, 36).map(|a| a.wavefronts), Some(4));
        assert_eq!(worst_view_column(Width::W16, 32).map(|a| a.wavefronts), Some(32));
    }

    #[test]
    fn every_load_of_a_chunk_costs_what_the_warps_chunks_cost_in_one_read() {
        for chunk in MODEL_CHUNKS {
            for width in Width::ALL.into_iter().filter(|w| w.bytes() <= chunk) {
                for row in 0..ROWS {
                    for part in 0..chunk / width.bytes() {
                        let wavefronts = chunk_request(chunk, width, row, part).analyze().wavefronts;
                        assert_eq!(wavefronts, chunk / 4, "{chunk} B as {width} B, row {row}, part {part}");
                    }
                }
            }
        }
        let per_warp: Vec<u32> = Width::ALL.into_iter().map(|w| 16 / w.bytes() * 4).collect();
        assert_eq!(per_warp, [64, 32, 16, 8, 4], "16 chars one by one cost 16 times one float4 load");
    }

    #[test]
    fn references_read_what_the_kernels_read() {
        let launch = Launch { blocks: 1, threads: 1024, iterations: 3 };
        let counting: Vec<u32> = (0..TILE_BYTES / 4).collect();
        // Word i holds i: lane 5 of float[(lane + 32 r) * 2] reads words 10, 74, ..., 458.
        let load = Spec::Wide { op: Op::Load, width: Width::W4, stride: 2, share: 1, launch };
        assert_eq!(load.expected(&counting, 5), 3 * (0..8).map(|r| 2 * (5 + 32 * r)).sum::<u32>());
        // Lane 9 of st float4[(lane + 32 r) / 8] writes element 1: four words of 1 + 1.
        let store = Spec::Wide { op: Op::Store, width: Width::W16, stride: 1, share: 8, launch };
        assert_eq!(store.expected(&[], 9), 4 * 2);
        // Warp 20 reads float2 column 20 % 16 = 4 of float tile[32][34]: element 17 l + 4, words
        // 34 l + 8 and 34 l + 9.
        let column = Spec::Column { width: Width::W8, pitch: 34, launch };
        assert_eq!(column.expected(&counting, 32 * 20 + 2), 3 * (76 + 77));
        // Words below 256 have one non-zero byte: every width of a chunk sums the same.
        let small: Vec<u32> = counting.iter().map(|word| word % 251).collect();
        for (chunk, widths) in CHUNK_WIDTHS {
            let sums: Vec<u32> =
                widths.iter().map(|&width| Spec::Chunk { chunk, width, launch }.expected(&small, 7)).collect();
            assert!(sums.iter().all(|&sum| sum == sums[0]), "{chunk}-byte chunks: {sums:?}");
        }
        let four_chars = Spec::Chunk { chunk: 4, width: Width::W1, launch };
        assert_eq!(four_chars.expected(&small, 7), 3 * (0..8).map(|r| small[7 + 32 * r]).sum::<u32>());
    }

    #[test]
    fn declared_counts_follow_the_launch_shape() {
        let runs = VectorWidths.runs(&GpuInfo::h100(), RunSize::Profile);
        let find = |label: &str| runs.iter().find(|r| r.label == label).unwrap_or_else(|| panic!("no run {label}"));
        // 2 blocks x 32 warps x 4 iterations x 8 rows, 8 wavefronts each; the fill: 8192 words.
        let load = find("ld float4[(lane + 32 r) * 2]");
        assert_eq!(load.predicted(Op::Load), (2 * 32 * 4 * 8 * 8, 2 * 32 * 4 * 8));
        assert_eq!(load.predicted(Op::Store), (2 * 256, 2 * 256));
        // The stores, then one read-back load per warp, and no fill.
        let store = find("st float4[(lane + 32 r) / 8]");
        assert_eq!(store.predicted(Op::Store), (2 * 32 * 4 * 8 * 4, 2 * 32 * 4 * 8));
        assert_eq!(store.predicted(Op::Load), (2 * 32 * 2, 2 * 32));
        // 8 float4 columns, each read by 4 warps of each block, 8 times; a fill of 32 x 36 words.
        let column = find("float4 column of float tile[32][36]");
        assert_eq!(column.predicted(Op::Load), (2 * 32 * 8 * 4, 2 * 32 * 8));
        assert_eq!(column.predicted(Op::Store), (2 * 36, 2 * 36));
        // 16 one-byte loads per row, 8 rows, 2 iterations, 4 wavefronts each; a fill of 1024 words.
        let chunk = find("16-byte chunk as char");
        assert_eq!(chunk.predicted(Op::Load), (2 * 32 * 2 * 8 * 16 * 4, 2 * 32 * 2 * 8 * 16));
        assert_eq!(chunk.predicted(Op::Store), (2 * 32, 2 * 32));
    }
}
