//! Lesson 3: transpose.
//!
//! Transposing a matrix reads rows and writes columns; a shared-memory tile lets both global
//! accesses be rows, at the price of reading the tile by columns. Unpadded, that column read is a
//! 32-way bank conflict; padding each row by one element, or XOR-swizzling the columns, removes
//! it. The clock compares every variant with the device's own copy.

use bank_model::{Op, Request, Width};
use cuda_kernels::{CudaFunction, CudaSlice, Gpu, GpuError, GpuInfo, LaunchConfig, PushKernelArg};
use lesson_kit::{
    Chart, DeclaredAccess, Figure, KernelRun, Lesson, OutputCheck, Point, Prepared, Report, RunSize, Series, TimedRun,
    Tone,
    bank_table::add_bank_grid,
    cells::{counter_cells, median_cell, spread_cell},
    styled,
    words_kernel::random_words,
};

/// The kernels' source file in `kernels/`.
pub const KERNEL_FILE: &str = "transpose.cu";
/// Tile side, as `TILE` in the kernels.
pub const TILE: u32 = 32;
/// Rows of threads per block, as `BLOCK_ROWS`: each thread moves `TILE / BLOCK_ROWS` elements.
pub const BLOCK_ROWS: u32 = 8;
/// Matrix side for timing (8192 x 8192 4-byte elements: 256 MiB each way) and for profiling.
pub const TIMED_N: u32 = 8192;
/// Profiled at full size: the hardware's conflict counter is compared with the exact count under the
/// load of a real run, where it differs.
const PROFILED_N: u32 = TIMED_N;

/// The variants, fastest conceivable first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// `cuMemcpyDtoD`: the device's own copy, the ceiling.
    DeviceCopy,
    /// A kernel that copies tile by tile: the ceiling for kernels of this shape.
    CopyKernel,
    Naive,
    Tile32,
    Padded,
    Swizzled,
}

impl Variant {
    pub const ALL: [Variant; 6] =
        [Variant::DeviceCopy, Variant::CopyKernel, Variant::Naive, Variant::Tile32, Variant::Padded, Variant::Swizzled];

    pub fn kernel(self) -> Option<&'static str> {
        match self {
            Variant::DeviceCopy => None,
            Variant::CopyKernel => Some("copy_tiles"),
            Variant::Naive => Some("transpose_naive"),
            Variant::Tile32 => Some("transpose_tile32"),
            Variant::Padded => Some("transpose_padded"),
            Variant::Swizzled => Some("transpose_swizzled"),
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Variant::DeviceCopy => "device-to-device copy (cuMemcpyDtoD)",
            Variant::CopyKernel => "copy kernel, same tiles",
            Variant::Naive => "naive transpose",
            Variant::Tile32 => "shared tile [32][32]",
            Variant::Padded => "shared tile [32][33]",
            Variant::Swizzled => "shared tile [32][32], XOR swizzle",
        }
    }

    fn transposes(self) -> bool {
        !matches!(self, Variant::DeviceCopy | Variant::CopyKernel)
    }

    /// The shared-memory tile's store (row `row`, lanes = columns) and load (lanes = rows, column
    /// `row`) of one warp, as the kernel writes them; `None` for variants without a tile.
    pub fn tile_requests(self, row: u32) -> Option<[Request; 2]> {
        let address = |r: u32, c: u32| -> u32 {
            match self {
                Variant::Tile32 => (r * TILE + c) * 4,
                Variant::Padded => (r * (TILE + 1) + c) * 4,
                _ => (r * TILE + (c ^ r)) * 4,
            }
        };
        if !matches!(self, Variant::Tile32 | Variant::Padded | Variant::Swizzled) {
            return None;
        }
        Some([
            Request::bytes(Op::Store, Width::W4, |lane| address(row, lane)).expect("aligned"),
            Request::bytes(Op::Load, Width::W4, |lane| address(lane, row)).expect("aligned"),
        ])
    }

    /// Shared memory per block.
    pub fn shared_bytes(self) -> u32 {
        match self {
            Variant::Tile32 | Variant::Swizzled => TILE * TILE * 4,
            Variant::Padded => TILE * (TILE + 1) * 4,
            _ => 0,
        }
    }
}

pub struct Transpose;

/// The lesson, as the course's list of lessons names it.
pub static LESSON: Transpose = Transpose;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    pub variant: Variant,
    pub n: u32,
}

impl Lesson for Transpose {
    type Spec = Spec;

    const NUMBER: u32 = 3;
    const TITLE: &'static str = "Transpose";
    const KERNEL_FILES: &'static [&'static str] = &[KERNEL_FILE];

    fn charts(&self) -> &'static [Chart] {
        &[Chart {
            file: "lesson-03-transpose.svg",
            title: "Transpose bandwidth by variant",
            value_label: "GB/s",
            series: &["transpose_bandwidth"],
        }]
    }

    fn model(&self, report: &mut Report) {
        report.text(
            "A warp stores row r of a 32 x 32 tile, then loads column r; chapter 3 of the book explains the counts.",
        );
        report.heading("Shared-memory wavefronts per warp request, every row r = 0..31");
        let rows = [Variant::Tile32, Variant::Padded, Variant::Swizzled]
            .into_iter()
            .map(|variant| {
                let worst = |op: usize| {
                    (0..TILE)
                        .map(|row| variant.tile_requests(row).expect("a tiled variant")[op].analyze().wavefronts)
                        .max()
                        .expect("32 rows")
                };
                let (store, load) = (worst(0), worst(1));
                vec![
                    variant.describe().into(),
                    format!("{} B", variant.shared_bytes()).into(),
                    styled(store, Tone::of_wavefronts(store, 1)),
                    styled(load, Tone::of_wavefronts(load, 1)),
                ]
            })
            .collect();
        report.table(["variant", "shared per block", "store tile[r][lane]", "load tile[lane][r]"], rows);
        report.text("The load of column 0, bank by bank:");
        for variant in [Variant::Tile32, Variant::Padded, Variant::Swizzled] {
            let [_, load] = variant.tile_requests(0).expect("a tiled variant");
            report.text(format!("{}: load of column 0", variant.describe()));
            add_bank_grid(report, &load, &load.analyze());
        }
    }

    fn runs(&self, _gpu: &GpuInfo, size: RunSize) -> Vec<KernelRun<Spec>> {
        let n = if size == RunSize::Profile { PROFILED_N } else { TIMED_N };
        let blocks = (n / TILE) as u64 * (n / TILE) as u64;
        Variant::ALL
            .into_iter()
            .map(|variant| {
                let accesses = (0..TILE)
                    .flat_map(|row| variant.tile_requests(row).into_iter().flatten().map(move |r| (row, r)))
                    .map(|(row, request)| DeclaredAccess {
                        name: format!("{} row {row}", if request.op == Op::Store { "store" } else { "load" }),
                        request,
                        executions: blocks,
                    })
                    .collect();
                KernelRun {
                    label: variant.describe().to_owned(),
                    kernel: variant.kernel(),
                    accesses,
                    spec: Spec { variant, n },
                }
            })
            .collect()
    }

    fn prepare<'g>(&self, gpu: &'g Gpu, run: &KernelRun<Spec>) -> Result<Box<dyn Prepared + 'g>, GpuError> {
        let Spec { variant, n } = run.spec;
        let input = random_words((n * n) as usize);
        Ok(Box::new(TransposeRun {
            gpu,
            function: variant.kernel().map(|kernel| gpu.function(KERNEL_FILE, kernel)).transpose()?,
            device_input: gpu.upload(&input)?,
            input,
            output: gpu.zeros((n * n) as usize)?,
            n,
            transposes: variant.transposes(),
        }))
    }

    fn figures(&self, _gpu: &GpuInfo, results: &[TimedRun<Spec>]) -> Vec<Figure> {
        let mut figures = Vec::new();
        if let Some(copy) = results.iter().find(|m| m.run.spec.variant == Variant::DeviceCopy) {
            figures.push(Figure {
                key: "device_copy_bandwidth",
                label: format!("device-to-device copy, {TIMED_N} x {TIMED_N} floats (read + write)"),
                value: bandwidth(copy) / 1e9,
                unit: "GB/s",
            });
        }
        for (variant, key) in [
            (Variant::Tile32, "transpose_tile32_of_copy"),
            (Variant::Padded, "transpose_padded_of_copy"),
            (Variant::Swizzled, "transpose_swizzled_of_copy"),
        ] {
            if let Some(share) = share_of_copy(results, variant) {
                figures.push(Figure {
                    key,
                    label: format!("{} vs device copy", variant.describe()),
                    value: share,
                    unit: "%",
                });
            }
        }
        figures
    }

    fn series(&self, _gpu: &GpuInfo, results: &[TimedRun<Spec>]) -> Vec<Series> {
        let points: Vec<Point> =
            results.iter().map(|m| Point { at: m.run.label.clone(), value: bandwidth(m) / 1e9 }).collect();
        if points.is_empty() {
            return Vec::new();
        }
        let label = format!("{TIMED_N} x {TIMED_N} floats, bytes read + written");
        vec![Series { key: "transpose_bandwidth".into(), label, unit: "GB/s".into(), points }]
    }

    fn summarize(&self, _gpu: &GpuInfo, results: &[TimedRun<Spec>], report: &mut Report) {
        report.heading(format!("{TIMED_N} x {TIMED_N} 4-byte elements (GB/s counts bytes read + written)"));
        let copy = results.iter().find(|m| m.run.spec.variant == Variant::DeviceCopy).map(bandwidth);
        let rows = results
            .iter()
            .map(|m| {
                let [store_model, store_ncu] = counter_cells(m, Op::Store);
                let [load_model, load_ncu] = counter_cells(m, Op::Load);
                let gbs = bandwidth(m) / 1e9;
                vec![
                    m.run.label.clone().into(),
                    store_model,
                    store_ncu,
                    load_model,
                    load_ncu,
                    median_cell(&m.timing),
                    spread_cell(&m.timing),
                    format!("{gbs:.0}").into(),
                    copy.map_or("-".into(), |c| format!("{:.1}%", 100.0 * bandwidth(m) / c)).into(),
                ]
            })
            .collect();
        report.table(
            ["variant", "st model", "st ncu", "ld model", "ld ncu", "median ms", "spread", "GB/s", "of device copy"],
            rows,
        );
        report.heading("Bank conflicts: the exact count against the hardware counter, full size under Nsight Compute");
        let counts: Vec<(&str, u64, u64)> = results
            .iter()
            .filter_map(|m| {
                let counted = m.counters.as_ref()?;
                Some((m.run.label.as_str(), counted.excess_wavefronts, counted.hardware_conflicts?))
            })
            .collect();
        if !counts.is_empty() {
            let rows = counts
                .iter()
                .map(|&(label, exact, hardware)| {
                    let difference = format!("{:+}", hardware as i64 - exact as i64);
                    vec![label.into(), exact.into(), hardware.into(), difference.into()]
                })
                .collect();
            report.table(["variant", "excess wavefronts (exact)", "l1tex__data_bank_conflicts", "difference"], rows);
            let phantom: Vec<String> = counts
                .iter()
                .filter(|&&(_, exact, hardware)| exact == 0 && hardware > 0)
                .map(|(label, _, hardware)| format!("\n  {hardware} on {label}"))
                .collect();
            report.text(match phantom.is_empty() {
                true => "The hardware counter agrees with the exact count on every conflict-free kernel here.".to_owned(),
                false => format!(
                    "The hardware counter (l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld + _st) reports conflicts\n\
                     where the exact count is zero:{}\nRead conflicts from the sass counters, not from it.",
                    phantom.concat()
                ),
            });
        }
        let share = |variant| share_of_copy(results, variant);
        if let (Some(tile32), Some(padded), Some(swizzled)) =
            (share(Variant::Tile32), share(Variant::Padded), share(Variant::Swizzled))
        {
            report.text(format!(
                "The unpadded tile reaches {tile32:.1}% of the device copy; padded {padded:.1}%, swizzled {swizzled:.1}%."
            ));
        }
    }
}

/// Bytes read plus bytes written, per second.
fn bandwidth(m: &TimedRun<Spec>) -> f64 {
    2.0 * 4.0 * (m.run.spec.n as f64).powi(2) / (m.timing.median_ms * 1e-3)
}

/// A variant's bandwidth as a percentage of the device-to-device copy's, measured in the same run.
fn share_of_copy(results: &[TimedRun<Spec>], variant: Variant) -> Option<f64> {
    let of = |v: Variant| results.iter().find(|m| m.run.spec.variant == v).map(bandwidth);
    Some(100.0 * of(variant)? / of(Variant::DeviceCopy)?)
}

struct TransposeRun<'g> {
    gpu: &'g Gpu,
    /// `None`: the driver's device-to-device copy.
    function: Option<CudaFunction>,
    input: Vec<u32>,
    device_input: CudaSlice<u32>,
    output: CudaSlice<u32>,
    n: u32,
    transposes: bool,
}

impl Prepared for TransposeRun<'_> {
    fn launch(&mut self) -> Result<(), GpuError> {
        let Some(function) = &self.function else {
            self.gpu.stream().memcpy_dtod(&self.device_input, &mut self.output)?;
            return Ok(());
        };
        let config = LaunchConfig {
            grid_dim: (self.n / TILE, self.n / TILE, 1),
            block_dim: (TILE, BLOCK_ROWS, 1),
            shared_mem_bytes: 0,
        };
        let mut launch = self.gpu.stream().launch_builder(function);
        launch.arg(&self.device_input).arg(&mut self.output).arg(&self.n);
        // SAFETY: (const unsigned* in, unsigned* out, unsigned n), both n * n elements, n a
        // multiple of TILE, so every block's tile is inside the matrix.
        unsafe { launch.launch(config) }?;
        Ok(())
    }

    fn check(&mut self) -> Result<OutputCheck, GpuError> {
        let output = self.gpu.download(&self.output)?;
        let n = self.n as usize;
        let source = |row: usize, column: usize| if self.transposes { column * n + row } else { row * n + column };
        for row in 0..n {
            for column in 0..n {
                let (got, want) = (output[row * n + column], self.input[source(row, column)]);
                if got != want {
                    return Err(GpuError::WrongResult(format!(
                        "element ({row}, {column}) is {got:#010x}, the CPU reference says {want:#010x}"
                    )));
                }
            }
        }
        Ok(OutputCheck::exact(&output))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_unpadded_tile_conflicts() {
        for row in 0..TILE {
            let wavefronts = |v: Variant| v.tile_requests(row).unwrap().map(|r| r.analyze().wavefronts);
            assert_eq!(wavefronts(Variant::Tile32), [1, 32]);
            assert_eq!(wavefronts(Variant::Padded), [1, 1]);
            assert_eq!(wavefronts(Variant::Swizzled), [1, 1]);
        }
        assert!(Variant::Naive.tile_requests(0).is_none());
    }

    #[test]
    fn the_swizzle_is_a_permutation_of_each_row() {
        for row in 0..TILE {
            let mut columns: Vec<u32> = (0..TILE).map(|c| c ^ row).collect();
            columns.sort_unstable();
            assert_eq!(columns, (0..TILE).collect::<Vec<_>>());
        }
    }

    #[test]
    fn declared_counts_follow_the_grid() {
        let runs = Transpose.runs(&GpuInfo::h100(), RunSize::Profile);
        let tile32 = runs.iter().find(|r| r.spec.variant == Variant::Tile32).unwrap();
        let blocks = (PROFILED_N / TILE).pow(2) as u64;
        assert_eq!(tile32.predicted(Op::Load), (blocks * 32 * 32, blocks * 32));
        assert_eq!(tile32.predicted(Op::Store), (blocks * 32, blocks * 32));
        let naive = runs.iter().find(|r| r.spec.variant == Variant::Naive).unwrap();
        assert_eq!(naive.predicted(Op::Load), (0, 0), "no shared memory: ncu must count none");
        assert!(runs.iter().find(|r| r.spec.variant == Variant::DeviceCopy).unwrap().kernel.is_none());
    }
}
