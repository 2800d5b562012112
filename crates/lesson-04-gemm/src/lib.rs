//! Lesson 4: GEMM tiling.
//!
//! The path from one thread per output to shared-memory tiles (where `As[ty][k]` is a broadcast
//! and `Bs[k][tx]` is conflict-free, but a transposed `Bs[tx][k]` is a 32-way conflict) to
//! register tiles fed by 16-byte shared loads, where the transposed A tile must be padded by one
//! 16-byte vector to stay conflict-free. cuBLAS SGEMM (FP32, no TF32) is the reference.

use bank_model::{Op, Request, Width};
use cuda_kernels::{CudaFunction, CudaSlice, Gpu, GpuError, GpuInfo, LaunchConfig, PushKernelArg, blas::Blas};
use lesson_kit::{
    Chart, DeclaredAccess, Figure, KernelRun, Lesson, OutputCheck, Point, Prepared, Report, RunSize, Series, TimedRun,
    Tone,
    cells::{COUNTED_AND_TIMED, counted_and_timed_cells},
    floats::{random_floats, relative_error},
    styled,
};

/// The kernels' source file in `kernels/`.
pub const KERNEL_FILE: &str = "gemm.cu";
/// Matrix side (M = N = K) for timing, and for profiling (checked against the CPU).
pub const TIMED_N: u32 = 4096;
pub const PROFILED_N: u32 = 256;
/// The register-tiled kernel's tile: 128 x 128 outputs, K in steps of 8, 256 threads.
const BM: u32 = 128;
const BK: u32 = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    Naive,
    Coalesced,
    /// `T x T` shared tiles; `transposed_b` stores the B tile as `Bs[tx][k]`; `pad_a` floats
    /// follow each row of the A tile.
    Tiled {
        tile: u32,
        transposed_b: bool,
        pad_a: u32,
    },
    /// 128 x 128 register tiles; `pad` floats after each row of the transposed A tile.
    Registers {
        pad: u32,
    },
    Cublas,
}

impl Kernel {
    pub const PATH: [Kernel; 8] = [
        Kernel::Naive,
        Kernel::Coalesced,
        Kernel::Tiled { tile: 16, transposed_b: false, pad_a: 0 },
        Kernel::Tiled { tile: 32, transposed_b: false, pad_a: 0 },
        Kernel::Tiled { tile: 32, transposed_b: true, pad_a: 0 },
        Kernel::Registers { pad: 0 },
        Kernel::Registers { pad: 4 },
        Kernel::Cublas,
    ];

    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            Kernel::Naive => "gemm_naive",
            Kernel::Coalesced => "gemm_coalesced",
            Kernel::Tiled { tile: 16, transposed_b: false, pad_a: 0 } => "gemm_tiled16",
            Kernel::Tiled { tile: 16, transposed_b: false, pad_a: 1 } => "gemm_tiled16_pad1",
            Kernel::Tiled { tile: 16, transposed_b: false, pad_a: 4 } => "gemm_tiled16_pad4",
            Kernel::Tiled { tile: 32, transposed_b: false, pad_a: 0 } => "gemm_tiled32",
            Kernel::Tiled { tile: 32, transposed_b: false, pad_a: 1 } => "gemm_tiled32_pad1",
            Kernel::Tiled { tile: 32, transposed_b: false, pad_a: 4 } => "gemm_tiled32_pad4",
            Kernel::Tiled { tile: 32, transposed_b: true, pad_a: 0 } => "gemm_tiled32_bt",
            Kernel::Tiled { .. } => unreachable!("no such kernel in gemm.cu: {self:?}"),
            Kernel::Registers { pad: 0 } => "gemm_registers_unpadded",
            Kernel::Registers { .. } => "gemm_registers_padded",
            Kernel::Cublas => return None,
        })
    }

    pub fn describe(self) -> String {
        match self {
            Kernel::Naive => "naive (lanes on rows)".into(),
            Kernel::Coalesced => "coalesced (lanes on columns)".into(),
            Kernel::Tiled { tile, transposed_b: false, pad_a: 0 } => format!("shared tiles {tile}x{tile}"),
            Kernel::Tiled { tile, transposed_b: false, pad_a } => {
                format!("shared tiles {tile}x{tile}, As[{tile}][{}]", tile + pad_a)
            }
            Kernel::Tiled { tile, .. } => format!("shared tiles {tile}x{tile}, Bs[tx][k]"),
            Kernel::Registers { pad: 0 } => "register tiles 8x8, As[8][128]".into(),
            Kernel::Registers { pad } => format!("register tiles 8x8, As[8][{}]", BM + pad),
            Kernel::Cublas => "cuBLAS SGEMM (FP32)".into(),
        }
    }

    fn launch_config(self, n: u32) -> LaunchConfig {
        let (grid, block) = match self {
            Kernel::Naive | Kernel::Coalesced => ((n / 32, n / 32), (32, 32)),
            Kernel::Tiled { tile, .. } => ((n / tile, n / tile), (tile, tile)),
            Kernel::Registers { .. } | Kernel::Cublas => ((n / BM, n / BM), (256, 1)),
        };
        LaunchConfig { grid_dim: (grid.0, grid.1, 1), block_dim: (block.0, block.1, 1), shared_mem_bytes: 0 }
    }

    /// Every shared-memory instruction of one block, per step of its K loop, and the steps.
    pub fn shared_accesses(self, n: u32) -> Vec<DeclaredAccess> {
        let blocks = |tile: u32| ((n / tile) as u64).pow(2);
        match self {
            Kernel::Naive | Kernel::Coalesced | Kernel::Cublas => Vec::new(),
            Kernel::Tiled { tile, transposed_b, pad_a } => {
                let pitch_a = tile + pad_a;
                let steps = blocks(tile) * (n / tile) as u64;
                let mut accesses = Vec::new();
                for warp in 0..tile * tile / 32 {
                    // Lane l of warp w is thread 32w + l: (ty, tx) = ((32w + l) / T, (32w + l) % T).
                    let thread = |lane: u32| ((32 * warp + lane) / tile, (32 * warp + lane) % tile);
                    let word = |f: &dyn Fn(u32, u32) -> u32, width: Width, op: Op| {
                        let lanes = std::array::from_fn(|l| {
                            let (ty, tx) = thread(l as u32);
                            Some(f(ty, tx) * 4)
                        });
                        Request::new(op, width, lanes).expect("aligned")
                    };
                    let mut add = |name: String, request: Request, per_step: u64| {
                        accesses.push(DeclaredAccess { name, request, executions: steps * per_step })
                    };
                    add(
                        format!("warp {warp}: As[ty][tx] ="),
                        word(&|ty, tx| ty * pitch_a + tx, Width::W4, Op::Store),
                        1,
                    );
                    let b_store: &dyn Fn(u32, u32) -> u32 =
                        if transposed_b { &|ty, tx| tx * tile + ty } else { &|ty, tx| ty * tile + tx };
                    add(format!("warp {warp}: Bs store"), word(b_store, Width::W4, Op::Store), 1);
                    // The compiler reads As[ty][k..k+4] as one 16-byte load when every row of the
                    // tile starts 16-byte aligned, otherwise as four 4-byte loads.
                    if pitch_a % 4 == 0 {
                        for k in (0..tile).step_by(4) {
                            let request = word(&|ty, _| ty * pitch_a + k, Width::W16, Op::Load);
                            add(format!("warp {warp}: As[ty][{k}..+4]"), request, 1);
                        }
                    } else {
                        for k in 0..tile {
                            let request = word(&|ty, _| ty * pitch_a + k, Width::W4, Op::Load);
                            add(format!("warp {warp}: As[ty][{k}]"), request, 1);
                        }
                    }
                    for k in (0..tile).step_by(4) {
                        if transposed_b {
                            add(
                                format!("warp {warp}: Bs[tx][{k}..+4]"),
                                word(&|_, tx| tx * tile + k, Width::W16, Op::Load),
                                1,
                            );
                        }
                    }
                    if !transposed_b {
                        for k in 0..tile {
                            add(
                                format!("warp {warp}: Bs[{k}][tx]"),
                                word(&|_, tx| k * tile + tx, Width::W4, Op::Load),
                                1,
                            );
                        }
                    }
                }
                accesses
            }
            Kernel::Registers { pad } => {
                let steps = blocks(BM) * (n / BK) as u64;
                let pitch = BM + pad;
                let mut accesses = Vec::new();
                for warp in 0..8u32 {
                    let request = |op, width, f: &dyn Fn(u32) -> u32| {
                        let lanes = std::array::from_fn(|l| Some(f(32 * warp + l as u32) * 4));
                        Request::new(op, width, lanes).expect("aligned")
                    };
                    let mut add = |name: String, request: Request| {
                        accesses.push(DeclaredAccess { name, request, executions: steps })
                    };
                    for i in 0..4 {
                        let store = request(Op::Store, Width::W4, &|t| ((t % 2) * 4 + i) * pitch + t / 2);
                        add(format!("warp {warp}: As[a_col + {i}][a_row] ="), store);
                    }
                    add(
                        format!("warp {warp}: Bs[b_row][b_col..+4] ="),
                        request(Op::Store, Width::W16, &|t| (t / 32) * BM + (t % 32) * 4),
                    );
                    for k in 0..BK {
                        for half in [0, 64] {
                            add(
                                format!("warp {warp}: As[{k}][{half} + ty*4..+4]"),
                                request(Op::Load, Width::W16, &|t| k * pitch + half + (t / 16) * 4),
                            );
                            add(
                                format!("warp {warp}: Bs[{k}][{half} + tx*4..+4]"),
                                request(Op::Load, Width::W16, &|t| k * BM + half + (t % 16) * 4),
                            );
                        }
                    }
                }
                accesses
            }
        }
    }
}

pub struct Gemm;

/// The lesson, as the course's list of lessons names it.
pub static LESSON: Gemm = Gemm;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    pub kernel: Kernel,
    pub n: u32,
}

/// Row-major `a * b` in double precision, for the rows listed (all when profiling).
pub fn cpu_product(a: &[f32], b: &[f32], n: usize, rows: impl Iterator<Item = usize>) -> Vec<(usize, Vec<f64>)> {
    lesson_kit::floats::row_major_product(a, b, (n, n), rows)
}

/// FP32 accumulation over K = 4096 lands near 1e-6; a wrong index lands near 1.
const TOLERANCE: f64 = 1e-4;

impl Lesson for Gemm {
    type Spec = Spec;

    const NUMBER: u32 = 4;
    const TITLE: &'static str = "GEMM tiling";
    const KERNEL_FILES: &'static [&'static str] = &[KERNEL_FILE];

    fn charts(&self) -> &'static [Chart] {
        &[Chart {
            file: "lesson-04-gemm.svg",
            title: "GEMM throughput against cuBLAS",
            value_label: "GFLOP/s",
            series: &["gemm_gflops"],
        }]
    }

    fn reference(&self) -> &'static str {
        "cuBLAS, whose own output matched the CPU in double precision on 16 rows (at the profiling size, every\n\
         kernel's output matched the CPU)"
    }

    fn model(&self, report: &mut Report) {
        report.text(
            "C = A * B with row-major floats, tiled in shared memory; chapter 4 of the book explains the counts.",
        );
        report.heading("Shared tiles T x T: wavefronts per warp request (every warp, every k)");
        let rows = [16u32, 32, 64]
            .into_iter()
            .flat_map(|tile| [false, true].map(move |transposed| (tile, transposed)))
            .map(|(tile, transposed)| {
                // A warp is the 32 consecutive threads of rows ty = 0.. of a T x T block.
                let read = |f: &dyn Fn(u32, u32) -> u32| {
                    let lanes = std::array::from_fn(|l| Some(f(l as u32 / tile.min(32), l as u32 % tile.min(32)) * 4));
                    Request::new(Op::Load, Width::W4, lanes).expect("aligned").analyze()
                };
                let a = read(&|ty, _| ty * tile);
                let b = if transposed { read(&|_, tx| tx * tile) } else { read(&|_, tx| tx) };
                let cell = |x: &bank_model::Analysis| styled(x.wavefronts, Tone::of_wavefronts(x.wavefronts, x.ideal));
                vec![
                    format!("{tile} x {tile}").into(),
                    if transposed { "Bs[tx][k]" } else { "Bs[k][tx]" }.into(),
                    cell(&a),
                    cell(&b),
                ]
            })
            .collect();
        report.table(["tile", "B layout", "As[ty][k] (4 B)", "B read (4 B)"], rows);
        report.text("Reads as the source writes them, 4 bytes each; chapter 4 shows which become 16-byte loads.");
        report.heading("Register tiles: the 16-byte shared accesses of one warp (warp 0, k = 0)");
        let rows = [0u32, 4]
            .into_iter()
            .flat_map(|pad| {
                Kernel::Registers { pad }
                    .shared_accesses(BM)
                    .into_iter()
                    .filter(|a| a.name.starts_with("warp 0:") && (a.request.op == Op::Store || a.name.contains("[0][")))
                    .map(move |a| {
                        let analysis = a.request.analyze();
                        vec![
                            format!("As[8][{}]", BM + pad).into(),
                            a.name.trim_start_matches("warp 0: ").to_owned().into(),
                            format!("{} {}B", a.request.op, a.request.width).into(),
                            styled(analysis.wavefronts, Tone::of_wavefronts(analysis.wavefronts, analysis.ideal)),
                            analysis.ideal.into(),
                        ]
                    })
            })
            .collect();
        report.table(["A tile", "access", "op", "wavefronts", "ideal"], rows);
        report.text("As[8][132] pads each row of the transposed A tile by one 16-byte vector.");
    }

    fn runs(&self, _gpu: &GpuInfo, size: RunSize) -> Vec<KernelRun<Spec>> {
        let n = if size == RunSize::Profile { PROFILED_N } else { TIMED_N };
        Kernel::PATH
            .into_iter()
            .map(|kernel| KernelRun {
                label: kernel.describe(),
                kernel: kernel.name(),
                accesses: kernel.shared_accesses(n),
                spec: Spec { kernel, n },
            })
            .collect()
    }

    fn prepare<'g>(&self, gpu: &'g Gpu, run: &KernelRun<Spec>) -> Result<Box<dyn Prepared + 'g>, GpuError> {
        prepare_gemm(gpu, run.spec.kernel, run.spec.n)
    }

    fn figures(&self, _gpu: &GpuInfo, results: &[TimedRun<Spec>]) -> Vec<Figure> {
        let mut figures = Vec::new();
        let cublas = cublas_gflops(results);
        if let Some(cublas) = cublas {
            figures.push(Figure {
                key: "cublas_sgemm",
                label: format!("cuBLAS SGEMM FP32, {TIMED_N}^3"),
                value: cublas,
                unit: "GFLOP/s",
            });
        }
        if let (Some(best), Some(cublas)) = (best_kernel(results), cublas) {
            figures.push(Figure {
                key: "gemm_best_of_cublas",
                label: format!("best kernel of the path ({}) vs cuBLAS", best.run.label),
                value: 100.0 * gflops(best) / cublas,
                unit: "%",
            });
        }
        figures
    }

    fn series(&self, _gpu: &GpuInfo, results: &[TimedRun<Spec>]) -> Vec<Series> {
        let points: Vec<Point> = results.iter().map(|m| Point { at: m.run.label.clone(), value: gflops(m) }).collect();
        if points.is_empty() {
            return Vec::new();
        }
        let label = format!("{TIMED_N}^3 FP32, the path's kernels and cuBLAS");
        vec![Series { key: "gemm_gflops".into(), label, unit: "GFLOP/s".into(), points }]
    }

    fn summarize(&self, _gpu: &GpuInfo, results: &[TimedRun<Spec>], report: &mut Report) {
        report.heading(format!("{TIMED_N}^3, FP32 (GFLOP/s = 2 N^3 / time)"));
        let cublas = cublas_gflops(results);
        let rows = results
            .iter()
            .map(|m| {
                let mut row = vec![m.run.label.clone().into()];
                row.extend(counted_and_timed_cells(m));
                row.push(format!("{:.0}", gflops(m)).into());
                row.push(cublas.map_or("-".into(), |c| format!("{:.1}%", 100.0 * gflops(m) / c)).into());
                row
            })
            .collect();
        report.table(["kernel"].into_iter().chain(COUNTED_AND_TIMED).chain(["GFLOP/s", "of cuBLAS"]), rows);
        if let (Some(best), Some(cublas)) = (best_kernel(results), cublas) {
            report.text(format!(
                "Best of the path: {}, {:.0} GFLOP/s, {:.1}% of cuBLAS ({:.0} GFLOP/s).",
                best.run.label,
                gflops(best),
                100.0 * gflops(best) / cublas,
                cublas
            ));
        }
    }
}

/// Floating-point operations per second of a run, in GFLOP/s.
fn gflops(m: &TimedRun<Spec>) -> f64 {
    2.0 * (m.run.spec.n as f64).powi(3) / (m.timing.median_ms * 1e-3) / 1e9
}

fn cublas_gflops(results: &[TimedRun<Spec>]) -> Option<f64> {
    results.iter().find(|m| m.run.spec.kernel == Kernel::Cublas).map(gflops)
}

/// The fastest of the lesson's own kernels.
fn best_kernel(results: &[TimedRun<Spec>]) -> Option<&TimedRun<Spec>> {
    results.iter().filter(|m| m.run.spec.kernel != Kernel::Cublas).max_by(|x, y| gflops(x).total_cmp(&gflops(y)))
}

/// Buffers, launch and reference check for `kernel` on random n x n matrices (lesson 5 uses it too).
pub fn prepare_gemm(gpu: &Gpu, kernel: Kernel, n: u32) -> Result<Box<dyn Prepared + '_>, GpuError> {
    let len = (n * n) as usize;
    let (a, b) = (random_floats(len), random_floats(len));
    // Profiling must launch only the lesson's own kernels, so the small size is checked on the
    // CPU; the full size against cuBLAS, itself spot-checked on the CPU.
    let blas = (n != PROFILED_N || kernel == Kernel::Cublas).then(|| gpu.blas()).transpose()?;
    Ok(Box::new(GemmRun {
        gpu,
        function: kernel.name().map(|name| gpu.function(KERNEL_FILE, name)).transpose()?,
        config: kernel.launch_config(n),
        device_a: gpu.upload(&a)?,
        device_b: gpu.upload(&b)?,
        device_c: gpu.zeros(len)?,
        a,
        b,
        n,
        blas,
    }))
}

struct GemmRun<'g> {
    gpu: &'g Gpu,
    /// `None`: cuBLAS.
    function: Option<CudaFunction>,
    config: LaunchConfig,
    a: Vec<f32>,
    b: Vec<f32>,
    device_a: CudaSlice<f32>,
    device_b: CudaSlice<f32>,
    device_c: CudaSlice<f32>,
    n: u32,
    blas: Option<Blas>,
}

impl Prepared for GemmRun<'_> {
    fn occupancy(&self) -> Option<Result<cuda_kernels::Occupancy, GpuError>> {
        let function = self.function.as_ref()?;
        let (x, y, z) = self.config.block_dim;
        Some(self.gpu.occupancy(function, x * y * z, 0))
    }

    fn launch(&mut self) -> Result<(), GpuError> {
        let n = self.n as usize;
        let Some(function) = &self.function else {
            let blas = self.blas.as_ref().expect("cuBLAS runs open cuBLAS");
            return blas.sgemm_row_major((n, n, n), &self.device_a, &self.device_b, &mut self.device_c);
        };
        let mut launch = self.gpu.stream().launch_builder(function);
        launch.arg(&self.device_a).arg(&self.device_b).arg(&mut self.device_c).arg(&self.n).arg(&self.n).arg(&self.n);
        // SAFETY: (const float* A, const float* B, float* C, unsigned M, N, K), all n x n, n a
        // multiple of 128, and the launch shape is the one the kernel's indexing assumes.
        unsafe { launch.launch(self.config) }?;
        Ok(())
    }

    fn check(&mut self) -> Result<OutputCheck, GpuError> {
        let n = self.n as usize;
        let got = self.gpu.download(&self.device_c)?;
        let (what, error) = match (&self.blas, &self.function) {
            // A kernel at full size: against cuBLAS on the same inputs.
            (Some(blas), Some(_)) => {
                let mut reference = self.gpu.zeros::<f32>(n * n)?;
                blas.sgemm_row_major((n, n, n), &self.device_a, &self.device_b, &mut reference)?;
                let want: Vec<f64> = self.gpu.download(&reference)?.into_iter().map(f64::from).collect();
                ("cuBLAS", relative_error(&got, &want))
            }
            // cuBLAS itself, or a kernel at the profiling size: against the CPU in double
            // precision (every row when small, 16 spread rows when large).
            _ => {
                let step = if n <= PROFILED_N as usize { 1 } else { n / 16 };
                let rows = cpu_product(&self.a, &self.b, n, (0..n).step_by(step));
                let got_rows: Vec<f32> = rows.iter().flat_map(|(i, _)| got[i * n..(i + 1) * n].to_vec()).collect();
                let want: Vec<f64> = rows.into_iter().flat_map(|(_, row)| row).collect();
                ("the CPU in double precision", relative_error(&got_rows, &want))
            }
        };
        if error.is_nan() || error > TOLERANCE {
            return Err(GpuError::WrongResult(format!(
                "relative error {error:.2e} against {what} (tolerance {TOLERANCE:.0e})"
            )));
        }
        Ok(OutputCheck::Within { tolerance: TOLERANCE, reference: what })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcast_and_conflict_free_tiles_and_the_transposed_conflict() {
        let count = |kernel: Kernel, op: Op| {
            let accesses = kernel.shared_accesses(PROFILED_N);
            let total: u64 =
                accesses.iter().filter(|a| a.request.op == op).map(|a| a.request.analyze().wavefronts as u64).sum();
            let requests = accesses.iter().filter(|a| a.request.op == op).count() as u64;
            (total, requests)
        };
        // 32x32 tiles: per warp 8 float4 reads of As (2 wavefronts: a broadcast of 512 bytes) and 32 of Bs (1).
        assert_eq!(
            count(Kernel::Tiled { tile: 32, transposed_b: false, pad_a: 0 }, Op::Load),
            (32 * (8 * 2 + 32), 32 * 40)
        );
        // Transposed B: the 16-byte reads of Bs[tx][k] are 32 wavefronts each.
        let (transposed, _) = count(Kernel::Tiled { tile: 32, transposed_b: true, pad_a: 0 }, Op::Load);
        assert_eq!(transposed, 32 * 8 * (2 + 32));
        // The padded register tile stores As conflict-free, the unpadded one 2-way.
        let stores = |pad| {
            Kernel::Registers { pad }
                .shared_accesses(PROFILED_N)
                .iter()
                .filter(|a| a.name.contains("As[a_col"))
                .map(|a| a.request.analyze().wavefronts)
                .max()
        };
        assert_eq!((stores(0), stores(4)), (Some(2), Some(1)));
    }

    #[test]
    fn cpu_product_multiplies_row_major() {
        let a = [1.0, 2.0, 3.0, 4.0];
        let rows = cpu_product(&a, &a, 2, 0..2);
        assert_eq!(rows, vec![(0, vec![7.0, 10.0]), (1, vec![15.0, 22.0])]);
    }
}
