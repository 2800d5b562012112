//! The course's exercises: a starter `.cu` file per exercise whose marked part the learner edits,
//! a reference solution, and requirements measured on the GPU.
//!
//! - [`manifest`]: `exercises/info.toml`, found on disk like the kernels.
//! - [`learner_file`]: checks a learner's file against the starter (no GPU needed); [`tokens`] and
//!   [`declared`] read its marked part as the preprocessor and the compiler would.
//! - [`after_part`]: the grader's lines after a part in the text compiled: its values checked as
//!   integers, and the place recorder ([`within`]).
//! - [`harness`], [`check`]: compile, check the output on index-encoded and random inputs, read
//!   Nsight Compute's counters beside the reference's, time beside the starter and the reference.
//! - [`build_cost`]: the grader's build of a kernel timed beside NVRTC's (for the bench).
//! - [`verdict`]: score, the reason for every lost point, what to fix next (no GPU needed).
//! - [`supervise`]: a check runs in a process of its own, killed at a time or memory limit;
//!   [`protocol`] owns the hidden command that starts it, both building and reading it.
//! - [`submissions`], [`grading`]: a folder of submissions to CSV, JSON and Markdown, resumable;
//!   [`host_locks`]: the locks through which every grade and check on a GPU of the host takes it in turn.
//! - [`sample_class`]: a generated class, for measuring the grader.

pub mod after_part;
pub mod build_cost;
pub mod check;
pub mod declared;
pub mod diagnostics;
pub mod grading;
pub mod harness;
pub mod host_locks;
pub mod last_check;
pub mod learner_file;
pub mod manifest;
pub mod protocol;
pub mod sample_class;
pub mod sandbox;
pub mod submissions;
pub mod supervise;
pub mod tokens;
pub mod verdict;
pub mod within;

use std::{fs, io, path::PathBuf};

pub use manifest::{Exercise, Manifest, UnknownExercise};

/// Input that leaves nothing to grade or check (a missing folder, an empty one): the message says
/// what to give instead.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

/// The folder of the learner's own copies, beside the exercises folder.
pub const LEARNER_DIR: &str = "my-exercises";

/// Where the learner's copy of `exercise` is: `my-exercises/ID.cu`.
pub fn learner_copy_path(manifest: &Manifest, exercise: &Exercise) -> PathBuf {
    let dir = manifest.dir.parent().map_or_else(|| PathBuf::from(LEARNER_DIR), |parent| parent.join(LEARNER_DIR));
    dir.join(format!("{}.cu", exercise.id))
}

/// The learner's copy of `exercise`, made from the starter on first use; `true` when made now.
pub fn learner_copy(manifest: &Manifest, exercise: &Exercise) -> io::Result<(PathBuf, bool)> {
    let copy = learner_copy_path(manifest, exercise);
    if copy.exists() {
        return Ok((copy, false));
    }
    fs::create_dir_all(copy.parent().expect("inside my-exercises"))?;
    fs::copy(manifest.path(&exercise.starter), &copy)?;
    Ok((copy, true))
}
