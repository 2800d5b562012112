//! `cargo xtask probe`: measures single shared-memory instructions under Nsight Compute and
//! compares each with the model. This is how the model's test data was made.

use std::{ffi::OsString, fs, io::Write, path::Path, process::ExitCode};

use anyhow::{Context, bail};
use bank_model::{Op, batch};
use cuda_kernels::{Gpu, LaunchConfig, PushKernelArg, ncu::Ncu};

const KERNEL_FILE: &str = "probe.cu";
/// Marks an inactive lane for the probe kernels.
const INACTIVE: u32 = u32::MAX;

fn read_batch(path: &Path) -> anyhow::Result<Vec<batch::BatchLine>> {
    let text = fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    batch::parse(&text).collect::<Result<_, _>>().with_context(|| format!("{} is not a valid batch", path.display()))
}

fn kernel_name(line: &batch::BatchLine) -> String {
    let op = match line.request.op {
        Op::Load => "ld",
        Op::Store => "st",
    };
    format!("probe_{op}_{}", line.request.width.bytes())
}

pub fn run(batch_path: &Path, table: Option<&Path>, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let lines = read_batch(batch_path)?;
    let gpu = Gpu::open().map_err(|why| anyhow::anyhow!("probing needs a GPU: {why}"))?;
    let ncu = Ncu::find()?;
    let gpu_name = gpu.info().name.clone();
    eprintln!("Profiling {} instructions on {gpu_name} under {}...", lines.len(), ncu.path.display());
    drop(gpu);
    let args: Vec<OsString> = vec!["__probe-target".into(), batch_path.as_os_str().to_owned()];
    let program = std::env::current_exe()?;
    let launches = ncu.profile(&program, &args)?;
    if launches.len() != lines.len() {
        bail!("ncu profiled {} launches for {} instructions", launches.len(), lines.len());
    }
    let mut tsv = format!(
        "# op\twidth_bytes\tbyte_addresses\ttag\twarp_instructions\twavefronts\tmodel\t(measured with ncu on {})\n",
        gpu_name
    );
    let (mut disagreements, mut unverified) = (0, 0);
    for (line, launch) in lines.iter().zip(&launches) {
        let counters = launch.shared().context("ncu gave no shared-memory counters")?;
        let (instructions, wavefronts) = match line.request.op {
            Op::Load => (counters.load_instructions, counters.load_wavefronts),
            Op::Store => (counters.store_instructions, counters.store_wavefronts),
        };
        let analysis = line.request.analyze();
        let model = analysis.wavefronts as u64;
        match (model == wavefronts, analysis.verified) {
            (true, _) => {}
            (false, true) => disagreements += 1,
            (false, false) => unverified += 1,
        }
        let addresses: Vec<String> =
            line.request.lanes.iter().map(|a| a.map_or("_".to_owned(), |a| a.to_string())).collect();
        let tag = line.extra.first().map_or("", String::as_str);
        tsv.push_str(&format!(
            "{}\t{}\t{}\t{tag}\t{instructions}\t{wavefronts}\t{model}\n",
            line.request.op,
            line.request.width,
            addresses.join(",")
        ));
    }
    match table {
        Some(path) => fs::write(path, &tsv).with_context(|| format!("cannot write {}", path.display()))?,
        None => write!(out, "{tsv}")?,
    }
    eprintln!(
        "{} instructions measured; the model disagrees on {disagreements} it claims to know, \
         and on {unverified} it flags as not verified.",
        lines.len()
    );
    Ok(if disagreements == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// The profiled side: one launch per instruction, one warp each.
pub fn target(batch_path: &Path) -> anyhow::Result<ExitCode> {
    let lines = read_batch(batch_path)?;
    let gpu = Gpu::open().map_err(|why| anyhow::anyhow!("{why}"))?;
    let mut out = gpu.zeros::<u32>(32)?;
    for line in &lines {
        let function = gpu.function(KERNEL_FILE, &kernel_name(line))?;
        let offsets: Vec<u32> = line.request.lanes.iter().map(|a| a.unwrap_or(INACTIVE)).collect();
        if offsets.iter().any(|&a| a != INACTIVE && a + line.request.width.bytes() > 16384) {
            bail!("line {}: the probe tile is 16 KiB; addresses must stay below 16384", line.line);
        }
        let offsets = gpu.upload(&offsets)?;
        let mut launch = gpu.stream().launch_builder(&function);
        launch.arg(&offsets).arg(&mut out);
        let config = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: (const unsigned* offsets, unsigned* out), 32 entries each, one warp.
        unsafe { launch.launch(config) }?;
        gpu.synchronize()?;
    }
    Ok(ExitCode::SUCCESS)
}
