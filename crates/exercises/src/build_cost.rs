//! What the grader's build costs a learner's kernel: the kernel as the grader loads it (every
//! register and local array zero where a function starts, every local access kept inside its
//! array: see [`crate::check`]) timed side by side with the same kernel as NVRTC compiled it, and
//! with the starter, at the exercise's timed size.

use cuda_kernels::{Gpu, GpuError};
use serde::Serialize;

use crate::{
    check::{self, KernelNames, LastingMemory, TimedRuns, TimingError},
    harness::{CheckKernels, Expectation},
    learner_file::LearnerFile,
    manifest::{Exercise, Manifest},
};

/// Median milliseconds of one launch at the timed size, the three measured in one run.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct BuildCost {
    /// As the grader loads it.
    pub graded_ms: f64,
    /// As NVRTC compiled it.
    pub compiled_ms: f64,
    pub starter_ms: f64,
}

/// A learner file's timed build: as NVRTC compiled it, and as the grader loads it.
pub struct TimedBuilds {
    pub nvrtc_ptx: String,
    graded_ptx: String,
}

/// A kernel's [`TimedBuilds`] ([`timed_builds`]) timed side by side, beside the starter. An output
/// that is wrong, of either build, stops it (the reason in words, naming the build): NVRTC's build,
/// timed first, is the one that can read what an earlier launch left.
pub fn measure(gpu: &Gpu, manifest: &Manifest, exercise: &Exercise, builds: TimedBuilds) -> Result<BuildCost, String> {
    let built = || -> Result<_, GpuError> {
        let graded = check::load_for_the_block(gpu, exercise, builds.graded_ptx)?;
        let compiled = check::load_for_the_block(gpu, exercise, builds.nvrtc_ptx)?;
        let starter = check::compile_file(gpu, manifest, &exercise.starter, &exercise.entry)?;
        Ok((graded, compiled, starter))
    };
    let (graded, compiled, starter) = built().map_err(|e| e.to_string())?;
    let kernels = || -> Result<_, GpuError> {
        // Each build's record, as the check's timed build has it, kept while its kernel runs.
        let records = (check::record_of(gpu, exercise, &graded)?, check::record_of(gpu, exercise, &compiled)?);
        Ok((graded.function(&exercise.entry)?, compiled.function(&exercise.entry)?, records))
    };
    let (graded_function, compiled_function, _records) = kernels().map_err(|e| e.to_string())?;
    let data = check::timed_data(exercise);
    let timed = || -> Result<_, GpuError> {
        let check_kernels = CheckKernels::load(gpu)?;
        let verifier = Expectation::new(&check_kernels, data.clone(), exercise.tolerance).upload(gpu)?;
        let runs = TimedRuns::new(
            gpu,
            &exercise.harness,
            [&compiled_function, &graded_function, &starter],
            KernelNames { first: "NVRTC's build", others: ["the grader's build's", "the starter's"] },
            &data.input,
            &check_kernels,
        )?;
        Ok((runs, verifier, LastingMemory::new(gpu, &compiled)?))
    };
    let (mut runs, verifier, lasting) = timed().map_err(|e| e.to_string())?;
    match runs.measure(gpu, verifier, &lasting) {
        Ok([compiled_ms, graded_ms, starter_ms]) => Ok(BuildCost { graded_ms, compiled_ms, starter_ms }),
        Err(TimingError::Gpu(error)) => Err(error.to_string()),
        Err(TimingError::Incorrect { detail, own: true }) => Err(format!("NVRTC's build: a wrong output, {detail}")),
        Err(TimingError::Kept(detail)) => Err(format!("NVRTC's build, {detail}")),
        Err(TimingError::Incorrect { detail, own: false }) => Err(detail),
    }
}

/// `file`'s timed build, compiled by NVRTC once; `Err` too where the grader refuses that PTX (a
/// kernel it would not time).
pub fn timed_builds(gpu: &Gpu, exercise: &Exercise, file: &LearnerFile) -> Result<TimedBuilds, GpuError> {
    let nvrtc_ptx = check::nvrtc_ptx(gpu.info().compute_capability, exercise, file, false)?;
    let graded_ptx = check::graded_ptx(gpu.info().compute_capability, &nvrtc_ptx)?;
    Ok(TimedBuilds { nvrtc_ptx, graded_ptx })
}
