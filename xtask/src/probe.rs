//! `cargo xtask probe` and `probe-design`: the probe crate's counts beside the model, and the
//! experiments' batches.

use std::{fmt::Write as _, fs, io::Write, path::Path, process::ExitCode};

use anyhow::Context;
use bank_model::batch;

pub fn run(batch_path: &Path, table: Option<&Path>, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let measured = probe::measure(batch_path)?;
    let mut tsv = format!(
        "# op\twidth_bytes\tbyte_addresses\ttag\twarp_instructions\twavefronts\tmodel\t({}, driver {}, Nsight Compute {} \
         source counters, {})\n",
        measured.gpu,
        measured.driver,
        measured.ncu,
        course::results::today()
    );
    let mut disagreements = 0;
    for (line, &(executed, wavefronts)) in measured.lines.iter().zip(&measured.counts) {
        let model = line.request.wavefronts() as u64;
        disagreements += usize::from(model != wavefronts);
        let tag = line.extra.first().map_or("", String::as_str);
        writeln!(tsv, "{}\t{executed}\t{wavefronts}\t{model}", batch::line(&line.request, tag))?;
    }
    match table {
        Some(path) => fs::write(path, &tsv).with_context(|| format!("cannot write {}", path.display()))?,
        None => write!(out, "{tsv}")?,
    }
    eprintln!("{} instructions measured; the model disagrees on {disagreements}.", measured.lines.len());
    Ok(if disagreements == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// `cargo xtask probe-design`: one design's batch, or the list of designs.
pub fn design(name: Option<&str>, seed: u64, list: bool, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    if list {
        for design in probe_designs::DESIGNS {
            writeln!(out, "{:<18} {}", design.name, design.about)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let name = name.unwrap_or_default();
    let names: Vec<&str> = probe_designs::DESIGNS.iter().map(|d| d.name).collect();
    let design = probe_designs::find(name)
        .with_context(|| format!("no probe design `{name}`: choose one of {}", names.join(", ")))?;
    write!(out, "{}", probe_designs::batch_text(design, seed))?;
    Ok(ExitCode::SUCCESS)
}
