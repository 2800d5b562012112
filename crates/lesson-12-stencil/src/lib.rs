//! Lesson 12: stencils.
//!
//! A 3 x 3 and a 5 x 5 convolution, each block computing a 32 x 32 tile of outputs from a halo
//! tile `float tile[32 + K - 1][pitch]` in shared memory, with blocks of 32 x 8 and of 16 x 16
//! threads. A warp of a 32 x 8 block reads 32 consecutive words of one row: conflict-free at any
//! pitch. A warp of a 16 x 16 block reads 16 words of each of two rows, and the pitch alone
//! decides whether the halves share banks: only a pitch of 16 modulo 32 keeps them apart. The
//! usual fix, one word of padding, is the fix for column reads (lesson 2), which no warp here makes.

use bank_model::{Op, Request, WARP_SIZE, Width};
use cuda_kernels::{CudaFunction, CudaSlice, Gpu, GpuError, GpuInfo, LaunchConfig, PushKernelArg};
use lesson_kit::{
    DeclaredAccess, KernelRun, Lesson, OutputCheck, Prepared, Report, RunSize, TimeRatio, TimedRun, Tone,
    bank_table::add_bank_grid,
    cells::{COUNTED_AND_TIMED, counted_and_timed_cells, time_ratio_sentence},
    styled,
    words_kernel::random_words,
};

/// The kernels' source file in `kernels/`.
pub const KERNEL_FILE: &str = "stencil.cu";
/// Outputs per block in each direction (`OUT_TILE` in the kernels).
pub const OUT_TILE: u32 = 32;
/// The least pitch that puts the two rows of a 16 x 16 block's warp 16 banks apart (48 = 16
/// mod 32) and holds a 5 x 5 stencil's row of 36: conflict-free for both block shapes.
pub const CONFLICT_FREE_PITCH: u32 = 48;
/// Output tiles across (and down) the image: 4096 x 4096 outputs timed, 64 x 64 profiled.
const TIMED_TILES: u32 = 128;
const PROFILE_TILES: u32 = 2;
/// The pitches the model's sweep compares.
const SWEEP: std::ops::RangeInclusive<u32> = 34..=50;

/// Every kernel of `stencil.cu`, as its `STENCIL(K, BX, BY, PITCH)` lines make them.
const KERNELS: [&str; 12] = [
    "stencil3_32x8_pitch34",
    "stencil3_32x8_pitch35",
    "stencil3_32x8_pitch48",
    "stencil3_16x16_pitch34",
    "stencil3_16x16_pitch35",
    "stencil3_16x16_pitch48",
    "stencil5_32x8_pitch36",
    "stencil5_32x8_pitch37",
    "stencil5_32x8_pitch48",
    "stencil5_16x16_pitch36",
    "stencil5_16x16_pitch37",
    "stencil5_16x16_pitch48",
];

/// The headline figures: each divides the times of two runs.
const FIGURES: [TimeRatio; 3] = [
    TimeRatio {
        key: "stencil_3x3_16x16_pitch35_vs_48",
        label: "3x3 stencil, 16x16 blocks, tile[34][35] time over tile[34][48]",
        numerator: "3x3 16x16 tile[34][35]",
        denominator: "3x3 16x16 tile[34][48]",
    },
    TimeRatio {
        key: "stencil_5x5_16x16_pitch37_vs_48",
        label: "5x5 stencil, 16x16 blocks, tile[36][37] time over tile[36][48]",
        numerator: "5x5 16x16 tile[36][37]",
        denominator: "5x5 16x16 tile[36][48]",
    },
    TimeRatio {
        key: "stencil_5x5_16x16_vs_32x8",
        label: "5x5 stencil, tile[36][36], 16x16 blocks time over 32x8",
        numerator: "5x5 16x16 tile[36][36]",
        denominator: "5x5 32x8 tile[36][36]",
    },
];

/// A K x K stencil.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stencil {
    pub size: u32,
}

impl Stencil {
    pub const ALL: [Stencil; 2] = [Stencil { size: 3 }, Stencil { size: 5 }];

    /// Pixels the tile reaches beyond the block's outputs on every side.
    pub fn halo(self) -> u32 {
        self.size / 2
    }

    /// Rows of the halo tile, and pixels in each.
    pub fn side(self) -> u32 {
        OUT_TILE + 2 * self.halo()
    }

    /// The pitches the lesson runs: unpadded, padded by one word, and the conflict-free one.
    pub fn pitches(self) -> [u32; 3] {
        [self.side(), self.side() + 1, CONFLICT_FREE_PITCH]
    }

    /// The taps (dy, dx), in the kernel's order.
    pub fn taps(self) -> impl Iterator<Item = (u32, u32)> {
        let size = self.size;
        (0..size).flat_map(move |dy| (0..size).map(move |dx| (dy, dx)))
    }

    /// What tap (dy, dx) weighs (`weight` in the kernels).
    pub fn weight(self, dy: u32, dx: u32) -> f32 {
        (1 + self.size * dy + dx) as f32
    }

    fn name(self) -> String {
        format!("{0}x{0}", self.size)
    }
}

/// A block of `x` by `y` threads; thread (tx, ty) is thread `tx + x * ty` of the block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    pub x: u32,
    pub y: u32,
}

impl Block {
    pub const ALL: [Block; 2] = [Block { x: 32, y: 8 }, Block { x: 16, y: 16 }];

    fn warps(self) -> u32 {
        self.x * self.y / WARP_SIZE as u32
    }

    /// (tx, ty) of lane `lane` of warp `warp`.
    pub fn thread(self, warp: u32, lane: u32) -> (u32, u32) {
        let t = warp * WARP_SIZE as u32 + lane;
        (t % self.x, t / self.x)
    }

    fn name(self) -> String {
        format!("{}x{}", self.x, self.y)
    }
}

/// One kernel run: the stencil, the block shape, the tile's pitch, and the image's size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spec {
    pub stencil: Stencil,
    pub block: Block,
    pub pitch: u32,
    /// Output tiles across the image, and down it: one block each.
    pub tiles: u32,
}

impl Spec {
    /// The tile as the kernel declares it.
    pub fn tile(&self) -> String {
        format!("tile[{}][{}]", self.stencil.side(), self.pitch)
    }

    fn label(&self) -> String {
        format!("{} {} {}", self.stencil.name(), self.block.name(), self.tile())
    }

    fn kernel(&self) -> &'static str {
        let name = format!("stencil{}_{}_pitch{}", self.stencil.size, self.block.name(), self.pitch);
        KERNELS.into_iter().find(|&kernel| kernel == name).expect("stencil.cu defines every kernel the lesson runs")
    }

    /// Output pixels in each direction.
    pub fn width(&self) -> u32 {
        self.tiles * OUT_TILE
    }

    /// Warp `warp`'s request when lane (tx, ty) accesses tile pixel `pixel(tx, ty)` (row,
    /// column), or sits out for `None`; `None` when every lane does.
    fn warp_request(&self, op: Op, warp: u32, pixel: impl Fn(u32, u32) -> Option<(u32, u32)>) -> Option<Request> {
        let lanes: [Option<u32>; WARP_SIZE] = std::array::from_fn(|lane| {
            let (tx, ty) = self.block.thread(warp, lane as u32);
            pixel(tx, ty).map(|(row, column)| 4 * (row * self.pitch + column))
        });
        lanes.iter().any(Option::is_some).then(|| Request::new(op, Width::W4, lanes).expect("4-byte aligned"))
    }

    /// The steps (j, i) of a loop over `rows` x `columns` in the block's shape, as the kernel
    /// unrolls it: thread (tx, ty) takes (ty + j * BY, tx + i * BX).
    fn steps(&self, rows: u32, columns: u32) -> impl Iterator<Item = (u32, u32)> {
        let across = columns.div_ceil(self.block.x);
        (0..rows.div_ceil(self.block.y)).flat_map(move |j| (0..across).map(move |i| (j, i)))
    }

    /// Warp `warp`'s load of tap (dy, dx) for its outputs of step (j, i).
    pub fn tap_request(&self, warp: u32, (j, i): (u32, u32), (dy, dx): (u32, u32)) -> Request {
        let Block { x, y } = self.block;
        self.warp_request(Op::Load, warp, |tx, ty| Some((ty + j * y + dy, tx + i * x + dx))).expect("every lane loads")
    }

    /// Warp `warp`'s store of step (j, i) of the halo load, if any of its lanes has a pixel there.
    pub fn halo_request(&self, warp: u32, (j, i): (u32, u32)) -> Option<Request> {
        let (Block { x, y }, side) = (self.block, self.stencil.side());
        self.warp_request(Op::Store, warp, |tx, ty| {
            let (row, column) = (ty + j * y, tx + i * x);
            (row < side && column < side).then_some((row, column))
        })
    }

    /// A block's loads of tap (dy, dx): one per warp and output step.
    fn tap_requests(&self, tap: (u32, u32)) -> Vec<Request> {
        let steps: Vec<_> = self.steps(OUT_TILE, OUT_TILE).collect();
        (0..self.block.warps())
            .flat_map(|warp| steps.iter().map(move |&step| self.tap_request(warp, step, tap)))
            .collect()
    }

    /// A block's stores of the halo load: one per warp and step that has a pixel for it.
    fn halo_requests(&self) -> Vec<Request> {
        let side = self.stencil.side();
        let steps: Vec<_> = self.steps(side, side).collect();
        (0..self.block.warps())
            .flat_map(|warp| steps.iter().filter_map(move |&step| self.halo_request(warp, step)))
            .collect()
    }

    /// Every shared-memory instruction the launch executes: the halo load's stores, then each
    /// tap's loads, one declared access per cost.
    pub fn accesses(&self) -> Vec<DeclaredAccess> {
        let blocks = self.tiles * self.tiles;
        let mut accesses = by_cost("tile[y][x] = in[y][x] (halo load)", self.halo_requests(), blocks);
        for (dy, dx) in self.stencil.taps() {
            accesses.extend(by_cost(&format!("tile[oy + {dy}][ox + {dx}]"), self.tap_requests((dy, dx)), blocks));
        }
        accesses
    }

    fn run(self) -> KernelRun<Spec> {
        KernelRun { label: self.label(), kernel: Some(self.kernel()), accesses: self.accesses(), spec: self }
    }

    /// The most wavefronts of any one request, tap or halo store.
    pub fn worst(&self) -> u32 {
        let taps = self.stencil.taps().flat_map(|tap| self.tap_requests(tap));
        self.halo_requests().into_iter().chain(taps).map(|r| r.wavefronts()).max().unwrap_or(0)
    }

    /// The most wavefronts of any load of tap (dy, dx).
    fn worst_tap(&self, tap: (u32, u32)) -> u32 {
        self.tap_requests(tap).iter().map(Request::wavefronts).max().unwrap_or(0)
    }
}

/// One declared access per cost among a block's `requests`, each executed in `blocks` blocks;
/// the first request of each cost stands for the others.
fn by_cost(name: &str, requests: Vec<Request>, blocks: u32) -> Vec<DeclaredAccess> {
    let mut groups: Vec<(u32, DeclaredAccess)> = Vec::new();
    for request in requests {
        let wavefronts = request.wavefronts();
        match groups.iter_mut().find(|(cost, _)| *cost == wavefronts) {
            Some((_, access)) => access.executions += blocks as u64,
            None => groups.push((wavefronts, DeclaredAccess { name: name.into(), request, executions: blocks as u64 })),
        }
    }
    groups.into_iter().map(|(_, access)| access).collect()
}

/// Every stencil in every block shape.
fn shapes() -> impl Iterator<Item = (Stencil, Block)> {
    Stencil::ALL.into_iter().flat_map(|stencil| Block::ALL.map(|block| (stencil, block)))
}

/// Every run the lesson makes with `tiles` x `tiles` blocks.
fn specs(tiles: u32) -> impl Iterator<Item = Spec> {
    shapes().flat_map(move |(stencil, block)| stencil.pitches().map(|pitch| Spec { stencil, block, pitch, tiles }))
}

/// The CPU reference: the valid convolution of `input`, an image `width + 2 * halo` pixels wide
/// (the output's width plus the border), summed tap by tap in the kernel's order.
pub fn convolve(stencil: Stencil, input: &[f32], width: usize) -> Vec<f32> {
    let in_width = width + 2 * stencil.halo() as usize;
    let height = input.len() / in_width - 2 * stencil.halo() as usize;
    let mut output = Vec::with_capacity(width * height);
    for y in 0..height {
        for x in 0..width {
            let pixel = |(dy, dx): (u32, u32)| input[(y + dy as usize) * in_width + x + dx as usize];
            output.push(stencil.taps().fold(0.0f32, |sum, tap| sum + stencil.weight(tap.0, tap.1) * pixel(tap)));
        }
    }
    output
}

pub struct Stencils;

/// The lesson, as the course's list of lessons names it.
pub static LESSON: Stencils = Stencils;

impl Lesson for Stencils {
    type Spec = Spec;

    const NUMBER: u32 = 12;
    const TITLE: &'static str = "Stencils";
    const KERNEL_FILES: &'static [&'static str] = &[KERNEL_FILE];

    fn model(&self, report: &mut Report) {
        report.text(format!(
            "Each block computes {OUT_TILE} x {OUT_TILE} outputs from float tile[32 + K - 1][pitch]; thread (tx, ty) \
             takes rows ty, ty + BY, ... and columns tx, tx + BX, ...; chapter 12 of the book explains the counts."
        ));
        for stencil in Stencil::ALL {
            report.heading(format!(
                "{} stencil: wavefronts of each tap's loads, row by row (dy = 0 to {}; in a cell, dx = 0 to {})",
                stencil.name(),
                stencil.size - 1,
                stencil.size - 1
            ));
            let header =
                ["block", "tile"].into_iter().map(String::from).chain((0..stencil.size).map(|dy| format!("dy = {dy}")));
            let rows = specs(1)
                .filter(|spec| spec.stencil == stencil)
                .map(|spec| {
                    let mut row = vec![spec.block.name().into(), spec.tile().into()];
                    row.extend((0..stencil.size).map(|dy| {
                        let costs: Vec<u32> = (0..stencil.size).map(|dx| spec.worst_tap((dy, dx))).collect();
                        let worst = costs.iter().copied().max().unwrap_or(0);
                        let text = costs.iter().map(u32::to_string).collect::<Vec<_>>().join(" ");
                        styled(text, Tone::of_wavefronts(worst, 1))
                    }));
                    row
                })
                .collect();
            report.table(header, rows);
        }

        report.heading("Every shared access of one block: the taps' loads and the halo load's stores");
        let rows = specs(1)
            .map(|spec| {
                let run = spec.run();
                let (load_wavefronts, loads) = run.predicted(Op::Load);
                let (store_wavefronts, stores) = run.predicted(Op::Store);
                vec![
                    run.label.as_str().into(),
                    loads.into(),
                    styled(load_wavefronts, Tone::of_wavefronts(load_wavefronts as u32, loads as u32)),
                    stores.into(),
                    styled(store_wavefronts, Tone::of_wavefronts(store_wavefronts as u32, stores as u32)),
                    format!("{} B", 4 * spec.stencil.side() * spec.pitch).into(),
                ]
            })
            .collect();
        report.table(["kernel", "tap loads", "wavefronts", "halo stores", "wavefronts", "tile"], rows);

        report.heading("Choosing the pitch: the most wavefronts of any tap load or halo store");
        // The worst request of each stencil and block shape at `pitch`; `None` where a row does not fit.
        let worst = |pitch| {
            shapes().map(move |(stencil, block)| {
                (pitch >= stencil.side()).then(|| Spec { stencil, block, pitch, tiles: 1 }.worst())
            })
        };
        let header = ["pitch", "pitch mod 32"]
            .into_iter()
            .map(String::from)
            .chain(shapes().map(|(stencil, block)| format!("{} {}", stencil.name(), block.name())));
        let rows = SWEEP
            .map(|pitch| {
                let cells = worst(pitch).map(|w| w.map_or("-".into(), |w| styled(w, Tone::of_wavefronts(w, 1))));
                [pitch.into(), (pitch % 32).into()].into_iter().chain(cells).collect()
            })
            .collect();
        report.table(header, rows);
        let conflict_free: Vec<String> = SWEEP
            .filter(|&pitch| worst(pitch).all(|w| w.is_none_or(|w| w == 1)))
            .map(|pitch| pitch.to_string())
            .collect();
        report.text(format!(
            "Conflict-free for both stencils and both block shapes, pitches {} to {}: {}.",
            SWEEP.start(),
            SWEEP.end(),
            conflict_free.join(", ")
        ));

        // The note's padding and the conflict-free pitch, where a 16x16 warp spans two rows.
        let stencil = Stencil::ALL[0];
        for pitch in [stencil.side() + 1, CONFLICT_FREE_PITCH] {
            let spec = Spec { stencil, block: Block::ALL[1], pitch, tiles: 1 };
            report.heading(format!("{}: warp 0 loads tap (0, 0)", spec.label()));
            let request = spec.tap_request(0, (0, 0), (0, 0));
            add_bank_grid(report, &request, &request.analyze());
        }
    }

    fn runs(&self, _gpu: &GpuInfo, size: RunSize) -> Vec<KernelRun<Spec>> {
        let tiles = match size {
            RunSize::Profile => PROFILE_TILES,
            RunSize::Timed => TIMED_TILES,
        };
        specs(tiles).map(Spec::run).collect()
    }

    fn prepare<'g>(&self, gpu: &'g Gpu, run: &KernelRun<Spec>) -> Result<Box<dyn Prepared + 'g>, GpuError> {
        let spec = run.spec;
        let in_width = spec.width() + 2 * spec.stencil.halo();
        // Whole numbers below 256: every sum of the stencil is exact (see `weight` in the kernels).
        let input: Vec<f32> = random_words((in_width * in_width) as usize).iter().map(|w| (w % 256) as f32).collect();
        Ok(Box::new(StencilRun {
            gpu,
            function: gpu.function(KERNEL_FILE, spec.kernel())?,
            device_input: gpu.upload(&input)?,
            input,
            output: gpu.zeros((spec.width() * spec.width()) as usize)?,
            spec,
        }))
    }

    fn time_ratios(&self) -> &'static [TimeRatio] {
        &FIGURES
    }

    fn summarize(&self, _gpu: &GpuInfo, results: &[TimedRun<Spec>], report: &mut Report) {
        let width = TIMED_TILES * OUT_TILE;
        report.heading(format!("Measured: {width} x {width} outputs, one block per {OUT_TILE} x {OUT_TILE}"));
        let rows = results
            .iter()
            .map(|m| {
                let pixels = (m.run.spec.width() as f64).powi(2);
                let mut row = vec![m.run.label.as_str().into()];
                row.extend(counted_and_timed_cells(m));
                row.push(format!("{:.1}", pixels / (m.timing.median_ms * 1e-3) / 1e9).into());
                row
            })
            .collect();
        report.table(["kernel"].into_iter().chain(COUNTED_AND_TIMED).chain(["Gpixels/s"]), rows);
        for sentence in FIGURES.iter().filter_map(|ratio| time_ratio_sentence(ratio, results)) {
            report.text(sentence);
        }
    }
}

/// A stencil run with its image on the GPU.
struct StencilRun<'g> {
    gpu: &'g Gpu,
    function: CudaFunction,
    spec: Spec,
    input: Vec<f32>,
    device_input: CudaSlice<f32>,
    output: CudaSlice<f32>,
}

impl Prepared for StencilRun<'_> {
    fn launch(&mut self) -> Result<(), GpuError> {
        let Spec { block, tiles, .. } = self.spec;
        let config =
            LaunchConfig { grid_dim: (tiles, tiles, 1), block_dim: (block.x, block.y, 1), shared_mem_bytes: 0 };
        let width = self.spec.width();
        let mut launch = self.gpu.stream().launch_builder(&self.function);
        launch.arg(&self.device_input).arg(&mut self.output).arg(&width);
        // SAFETY: the kernel takes (const float* in, float* out, unsigned width); `out` holds
        // width x width pixels, one per output of the tiles x tiles blocks, and `in` the
        // (width + 2 * halo)-square image their halo tiles read.
        unsafe { launch.launch(config) }?;
        Ok(())
    }

    fn check(&mut self) -> Result<OutputCheck, GpuError> {
        let output = self.gpu.download(&self.output)?;
        let width = self.spec.width() as usize;
        let expected = convolve(self.spec.stencil, &self.input, width);
        match output.iter().zip(&expected).position(|(got, want)| got.to_bits() != want.to_bits()) {
            None => Ok(OutputCheck::exact(&output.iter().map(|v| v.to_bits()).collect::<Vec<_>>())),
            Some(index) => Err(GpuError::WrongResult(format!(
                "output ({}, {}) is {}, the CPU reference says {}",
                index / width,
                index % width,
                output[index],
                expected[index]
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(size: u32, block: usize, pitch: u32) -> Spec {
        Spec { stencil: Stencil { size }, block: Block::ALL[block], pitch, tiles: 1 }
    }

    #[test]
    fn a_16x16_warp_spans_two_rows_and_a_32x8_warp_one() {
        assert_eq!(Block::ALL[0].thread(3, 31), (31, 3));
        assert_eq!(Block::ALL[1].thread(3, 15), (15, 6));
        assert_eq!(Block::ALL[1].thread(3, 16), (0, 7));
    }

    #[test]
    fn only_a_pitch_of_16_mod_32_frees_the_16x16_taps() {
        for size in [3, 5] {
            let stencil = Stencil { size };
            for pitch in stencil.side()..=80 {
                let want = if pitch % 32 == 16 { 1 } else { 2 };
                assert_eq!(spec(size, 1, pitch).worst(), want, "{size}x{size}, pitch {pitch}");
                assert_eq!(spec(size, 0, pitch).worst(), 1, "32x8 reads rows: {size}x{size}, pitch {pitch}");
            }
        }
    }

    #[test]
    fn declared_accesses_count_every_instruction_of_a_block() {
        // (size, block, pitch): tap loads and their wavefronts, halo stores and theirs.
        let expected = [
            ((3, 0, 34), (288, 288), (68, 68)),
            ((3, 0, 35), (288, 288), (68, 68)),
            ((3, 1, 34), (288, 576), (51, 85)),
            ((3, 1, 35), (288, 576), (51, 85)),
            ((3, 1, 48), (288, 288), (51, 51)),
            ((5, 0, 36), (800, 800), (72, 72)),
            ((5, 1, 37), (800, 1600), (54, 90)),
            ((5, 1, 48), (800, 800), (54, 54)),
        ];
        for ((size, block, pitch), (loads, load_wavefronts), (stores, store_wavefronts)) in expected {
            let run = spec(size, block, pitch).run();
            assert_eq!(run.predicted(Op::Load), (load_wavefronts, loads), "{}", run.label);
            assert_eq!(run.predicted(Op::Store), (store_wavefronts, stores), "{}", run.label);
        }
    }

    #[test]
    fn the_halo_load_stores_every_pixel_of_the_tile_once() {
        for spec in specs(1) {
            let mut stored = vec![0u32; (spec.stencil.side() * spec.pitch) as usize];
            for request in spec.halo_requests() {
                for address in request.lanes.iter().flatten() {
                    stored[(address / 4) as usize] += 1;
                }
            }
            let side = spec.stencil.side();
            for row in 0..side {
                for column in 0..spec.pitch {
                    let want = u32::from(column < side);
                    assert_eq!(
                        stored[(row * spec.pitch + column) as usize],
                        want,
                        "{} ({row}, {column})",
                        spec.label()
                    );
                }
            }
        }
    }

    #[test]
    fn the_reference_weighs_each_tap_once() {
        let stencil = Stencil { size: 3 };
        // A single 1 at (1, 1) of a 4 x 4 input: output (y, x) sees it through tap (1 - y, 1 - x).
        let mut input = vec![0.0; 16];
        input[5] = 1.0;
        assert_eq!(convolve(stencil, &input, 2), [5.0, 4.0, 2.0, 1.0]);
    }

    #[test]
    fn every_run_names_a_kernel_of_the_file() {
        let names: Vec<&str> = specs(1).map(|spec| spec.kernel()).collect();
        assert_eq!(names, KERNELS);
    }
}
