//! `cargo xtask calibrate`: measures a sample of the course's measured instructions (H100 and
//! H200), every rule class of the model, on this GPU, and writes how many agree per class to a
//! small profile file that lessons read (`calibration/<gpu>.json` in the current folder).

use std::{
    fs,
    io::Write,
    path::{Path, PathBuf},
    process::ExitCode,
};

use anyhow::Context;
use bank_model::{
    batch,
    measured::{self, Calibration, ClassAgreement, RuleClass},
};
use lesson_kit::{Report, Tone, styled};

/// Instructions per rule class: every class covered, the whole sample a few kernels.
const PER_CLASS: usize = 40;
/// The folder of profiles, relative to where the course runs.
pub const PROFILE_DIR: &str = "calibration";

/// The profile file of a GPU: its name with anything but letters and digits as `-`.
pub fn profile_path(gpu: &str) -> PathBuf {
    let slug: String =
        gpu.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
    Path::new(PROFILE_DIR).join(format!("{slug}.json"))
}

pub fn run(out: &mut dyn Write, color: bool) -> anyhow::Result<ExitCode> {
    let sample = measured::calibration_sample(PER_CLASS);
    let batch_path = std::env::temp_dir().join(format!("bank-conflicts-calibration-{}.tsv", std::process::id()));
    let batch: String = sample.iter().map(|m| batch::line(&m.request, &m.tag) + "\n").collect();
    fs::write(&batch_path, batch).with_context(|| format!("cannot write {}", batch_path.display()))?;
    let measured = probe::measure(&batch_path);
    let _ = fs::remove_file(&batch_path);
    let measured = measured.context("calibration needs a GPU whose counters ncu can read")?;
    let mut classes: Vec<ClassAgreement> = Vec::new();
    for (m, &(_, wavefronts)) in sample.iter().zip(&measured.counts) {
        let class = RuleClass::of(&m.request);
        let index = match classes.iter().position(|c| c.class == class) {
            Some(index) => index,
            None => {
                classes.push(ClassAgreement { class, agree: 0, measured: 0 });
                classes.len() - 1
            }
        };
        classes[index].measured += 1;
        classes[index].agree += usize::from(m.request.wavefronts() as u64 == wavefronts);
    }
    let calibration = Calibration {
        gpu: measured.gpu,
        driver: measured.driver,
        ncu: measured.ncu,
        date: course::results::today(),
        classes,
    };
    let mut report = Report::default();
    report.heading(format!("The bank model on {} (driver {})", calibration.gpu, calibration.driver));
    let rows = calibration
        .classes
        .iter()
        .map(|c| {
            let tone = if c.agree == c.measured { Tone::Good } else { Tone::Bad };
            vec![c.class.describe().into(), styled(format!("{}/{}", c.agree, c.measured), tone)]
        })
        .collect();
    report.table(["rule class", "model = ncu"], rows);
    report.text(calibration.summary());
    let path = profile_path(&calibration.gpu);
    fs::create_dir_all(PROFILE_DIR).with_context(|| format!("cannot create {PROFILE_DIR}/"))?;
    fs::write(&path, serde_json::to_string_pretty(&calibration)?)
        .with_context(|| format!("cannot write {}", path.display()))?;
    report.text(format!("Profile written to {}; lessons on this GPU print its summary.", path.display()));
    write!(out, "{}", report.render(color))?;
    Ok(ExitCode::SUCCESS)
}

/// The one line a lesson prints about the model on this GPU.
pub fn lesson_line(gpu: &str) -> String {
    let path = profile_path(gpu);
    let profile = fs::read_to_string(&path).ok().and_then(|text| serde_json::from_str::<Calibration>(&text).ok());
    match profile {
        Some(calibration) if calibration.gpu == gpu => calibration.summary(),
        _ => "Bank model not yet checked on this GPU: `cargo xtask calibrate` measures its rules in under a minute"
            .to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_files_are_named_after_the_gpu() {
        assert_eq!(profile_path("NVIDIA H100 80GB HBM3"), Path::new("calibration/nvidia-h100-80gb-hbm3.json"));
        assert!(lesson_line("No Such GPU").starts_with("Bank model not yet checked on this GPU"));
    }
}
