//! Measures single shared-memory instructions under Nsight Compute (`cargo xtask probe` and
//! `calibrate` compare each with the model). This is how the model's test data was made.
//!
//! The batch's instructions become generated kernels of up to `STEPS_PER_KERNEL` steps (the
//! macros of `kernels/probe.cuh`), each step one machine instruction executed once by one warp;
//! ncu's source page gives every instruction's wavefronts, so one launch measures hundreds.

use std::{fmt::Write as _, fs, path::Path};

use anyhow::{Context, bail};
use bank_model::{Op, Request, Width, batch};
use cuda_kernels::{
    Gpu, LaunchConfig, PushKernelArg,
    ncu::{Ncu, SelfCommand},
    source,
};

/// The hidden subcommand of the course's program that launches a batch's probe kernels once
/// each, for ncu: `PROGRAM __probe-target BATCH` calls [`target`].
pub const PROBE_TARGET: &str = "__probe-target";

/// Steps per generated kernel: small enough to compile in a blink, large enough that a batch of
/// thousands needs few profiled launches.
const STEPS_PER_KERNEL: usize = 256;
/// Marks a lane that sits the step out.
const INACTIVE: u32 = u32::MAX;
/// The probe tile's size (`PROBE_BYTES` in `kernels/probe.cuh`).
const TILE_BYTES: u32 = 16384;

fn read_batch(path: &Path) -> anyhow::Result<Vec<batch::BatchLine>> {
    let text = fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let lines: Vec<batch::BatchLine> = batch::parse(&text)
        .collect::<Result<_, _>>()
        .with_context(|| format!("{} is not a valid batch", path.display()))?;
    for line in &lines {
        let width = line.request.width.bytes();
        if let Some(address) = line.request.lanes.iter().flatten().find(|&&a| a + width > TILE_BYTES) {
            bail!(
                "{} line {}: byte address {address} is outside the probe's {TILE_BYTES}-byte tile: \
                 keep every address below {}",
                path.display(),
                line.line,
                TILE_BYTES - width
            );
        }
    }
    Ok(lines)
}

/// The `kernels/probe.cuh` macro that executes one instruction like `request`.
fn step_macro(request: &Request) -> String {
    let bytes = request.width.bytes();
    match request.op {
        Op::Load => format!("LD_{bytes}"),
        Op::Store => format!("ST_{bytes}"),
        Op::CopyAsync => format!("CP_{bytes}"),
        Op::LoadMatrix { matrices, trans } | Op::StoreMatrix { matrices, trans } => format!(
            "{}_X{}{}",
            if request.op.reads() { "LDSM" } else { "STSM" },
            matrices.count(),
            if trans { "_T" } else { "" }
        ),
    }
}

/// Whether the machine instruction's opcode (`LDS.64`, `LDSM.16.MT88.4`, ...) is the kind the
/// step asked for: the right mnemonic, and for `LDS`/`STS` the right width.
fn compiled_as_asked(request: &Request, opcode: &str) -> bool {
    let mut parts = opcode.split('.');
    let mnemonic = parts.next().unwrap_or("");
    let expected = match request.op {
        Op::Load => "LDS",
        Op::Store => "STS",
        Op::LoadMatrix { .. } => "LDSM",
        Op::StoreMatrix { .. } => "STSM",
        Op::CopyAsync => "LDGSTS",
    };
    let wide = match request.width {
        Width::W8 => Some("64"),
        Width::W16 => Some("128"),
        _ => None,
    };
    mnemonic == expected
        && (request.op.matrices().is_some()
            || request.op == Op::CopyAsync
            || parts.find(|p| *p == "64" || *p == "128") == wide)
}

fn kernel_name(index: usize) -> String {
    format!("probe_{index}")
}

/// The generated source of kernel `index`: one step per instruction.
fn kernel_source(index: usize, lines: &[batch::BatchLine]) -> String {
    let mut text = format!("#include \"probe.cuh\"\nPROBE_KERNEL({}) {{\n    PROBE_BEGIN\n", kernel_name(index));
    for (step, line) in lines.iter().enumerate() {
        writeln!(text, "    {}({step})", step_macro(&line.request)).expect("writing to a String");
    }
    text.push_str("    PROBE_END\n}\n");
    text
}

/// Each lane's offset for the kernel: `INACTIVE` for a lane that sits out, except in
/// `ldmatrix`/`stmatrix`, which every lane executes (the lanes that give no row use 0).
fn offsets(request: &Request) -> impl Iterator<Item = u32> + '_ {
    let idle = if request.op.matrices().is_some() { 0 } else { INACTIVE };
    request.lanes.iter().map(move |a| a.unwrap_or(idle))
}

/// What one run of the probe measured, instruction by instruction, in batch order.
pub struct ProbeCounts {
    pub gpu: String,
    pub driver: String,
    pub ncu: String,
    pub lines: Vec<batch::BatchLine>,
    /// (warp-level executions, wavefronts) of each line.
    pub counts: Vec<(u64, u64)>,
}

/// Measures every instruction of a batch file on this GPU under ncu.
pub fn measure(batch_path: &Path) -> anyhow::Result<ProbeCounts> {
    let lines = read_batch(batch_path)?;
    let gpu = Gpu::open().map_err(|why| anyhow::anyhow!("probing needs a GPU: {why}"))?;
    let ncu = Ncu::find()?;
    let gpu_name = gpu.info().name.clone();
    drop(gpu);
    let kernels = lines.len().div_ceil(STEPS_PER_KERNEL);
    eprintln!(
        "Profiling {} instructions in {kernels} kernels on {gpu_name} under {}...",
        lines.len(),
        ncu.path.display()
    );
    let target = SelfCommand::current(vec![PROBE_TARGET.into(), batch_path.as_os_str().to_owned()])?;
    let launches = ncu.profile(&target, &[])?;
    if launches.len() != kernels {
        bail!("ncu profiled {} launches for {kernels} probe kernels", launches.len());
    }
    let mut counts = Vec::with_capacity(lines.len());
    for (index, (chunk, launch)) in lines.chunks(STEPS_PER_KERNEL).zip(&launches).enumerate() {
        let measured = &launch.instructions;
        if measured.len() != chunk.len() {
            let listed: Vec<&str> = measured.iter().map(|i| i.sass.as_str()).collect();
            bail!(
                "kernel {} has {} probe steps but ncu's source page lists {} shared-memory instructions: {}",
                kernel_name(index),
                chunk.len(),
                measured.len(),
                listed.join("; ")
            );
        }
        for (line, instruction) in chunk.iter().zip(measured) {
            if !compiled_as_asked(&line.request, instruction.opcode().split_whitespace().next().unwrap_or("")) {
                bail!(
                    "line {}: `{} {}` compiled to `{}`: the probe would measure another instruction",
                    line.line,
                    line.request.op,
                    line.request.width,
                    instruction.sass
                );
            }
            counts.push((instruction.executed, instruction.wavefronts));
        }
    }
    let driver = cuda_kernels::driver_version().unwrap_or_else(|| "unknown".to_owned());
    Ok(ProbeCounts { gpu: gpu_name, driver, ncu: ncu.version()?, lines, counts })
}

/// The profiled side: one launch of one warp per generated kernel.
pub fn target(batch_path: &Path) -> anyhow::Result<()> {
    let lines = read_batch(batch_path)?;
    let gpu = Gpu::open().map_err(|why| anyhow::anyhow!("{why}"))?;
    let mut out = gpu.zeros::<u32>(32)?;
    let global = gpu.zeros::<u32>(4 * 32)?;
    for (index, chunk) in lines.chunks(STEPS_PER_KERNEL).enumerate() {
        let name = format!("{}.cu", kernel_name(index));
        let text = source::expand_for_compile(&name, &kernel_source(index, chunk))
            .map_err(|missing| anyhow::anyhow!("cannot find kernels/{}", missing.file))?;
        let function = gpu.function_from_text(&name, &text, &kernel_name(index))?;
        let offsets: Vec<u32> = chunk.iter().flat_map(|line| offsets(&line.request)).collect();
        let offsets = gpu.upload(&offsets)?;
        let mut launch = gpu.stream().launch_builder(&function);
        launch.arg(&offsets).arg(&global).arg(&mut out);
        let config = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: (const unsigned* offsets, const uint4* global, unsigned* out): 32 offsets per
        // step, 32 uint4 and 32 words; one warp.
        unsafe { launch.launch(config) }?;
        gpu.synchronize()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str) -> batch::BatchLine {
        batch::parse(text).next().unwrap().unwrap()
    }

    #[test]
    fn each_instruction_becomes_its_step() {
        let zeros = vec!["0"; 32].join(",");
        let rows = [
            format!("ld\t8\t{zeros}"),
            format!("st\t1\t{zeros}"),
            format!("cp.async\t16\t{zeros}"),
            format!("ldmatrix.x4.trans\t16\t{zeros}"),
            format!("stmatrix.x1\t16\t{},{}", ["0"; 8].join(","), ["_"; 24].join(",")),
        ];
        let lines: Vec<_> = rows.iter().map(|row| line(row)).collect();
        let text = kernel_source(3, &lines);
        assert!(text.starts_with("#include \"probe.cuh\"\nPROBE_KERNEL(probe_3) {\n"));
        for (step, name) in ["LD_8(0)", "ST_1(1)", "CP_16(2)", "LDSM_X4_T(3)", "STSM_X1(4)"].iter().enumerate() {
            assert!(text.contains(&format!("    {name}\n")), "step {step}: {text}");
        }
        assert_eq!(offsets(&lines[4].request).skip(7).take(2).collect::<Vec<_>>(), [0, 0]);
    }
}
