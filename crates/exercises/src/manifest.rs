//! `exercises/info.toml`: every exercise, its files, how its kernel is launched and checked, its
//! hints and its requirements.

use std::{
    fmt, fs,
    path::{Path, PathBuf},
};

use cuda_kernels::ncu::SharedFamily;
use serde::{Deserialize, Serialize};

/// Overrides where the exercises are read from.
pub const EXERCISES_DIR_VAR: &str = "BCM_EXERCISES_DIR";
/// The manifest's file name inside the exercises folder.
pub const MANIFEST_FILE: &str = "info.toml";

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    #[serde(rename = "exercise")]
    pub exercises: Vec<Exercise>,
    /// The folder `info.toml` was read from; file paths of exercises are relative to it.
    #[serde(skip)]
    pub dir: PathBuf,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exercise {
    pub id: String,
    pub lesson: u32,
    pub title: String,
    /// What the learner must do, in one sentence.
    pub task: String,
    pub starter: PathBuf,
    pub solution: PathBuf,
    /// The `extern "C"` kernel the harness launches.
    pub entry: String,
    /// Its parameter list, as the starter writes it.
    pub signature: String,
    pub harness: Harness,
    pub inputs: Vec<Input>,
    pub tolerance: f64,
    pub correct_points: u32,
    pub fallback_time_vs_reference: f64,
    pub hints: Vec<String>,
    #[serde(rename = "requirement")]
    pub requirements: Vec<Requirement>,
    /// The part's function that places elements in a tile, whose every place must lie in it.
    #[serde(default)]
    pub within: Option<crate::within::Within>,
}

/// How an exercise's kernel is launched, on what data, and what its output must be.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Harness {
    /// `(words, out, iterations)`: thread t of block b writes `iterations` times the sum of row
    /// `b * threads + t` (`row_words` words) of the input.
    RowSums { block: [u32; 2], row_words: u32, check_blocks: u32, timed_blocks: u32, iterations: u32 },
    /// `(words, out, iterations)`: each block holds a tile of 32 rows of `columns` elements of
    /// `element_bytes` (1, 4 or 16; a 16-byte element counts as the sum of its four words); lane
    /// l of warp w writes `iterations` times the sum of row l's elements w, w + 32, ...
    ColumnSums {
        block: [u32; 2],
        element_bytes: u32,
        columns: u32,
        check_blocks: u32,
        timed_blocks: u32,
        iterations: u32,
    },
    /// `(in, out, n)`: out is the n x n transpose of in, tiles of `block[0]` squared.
    Transpose { block: [u32; 2], check_n: u32, timed_n: u32 },
    /// `(A, B, C, M, N, K)`: C = A * B, square n x n floats, one output per thread.
    Gemm { block: [u32; 2], check_n: u32, timed_n: u32 },
    /// `(words, out, n)`: each block writes the exclusive prefix sums (wrapping) of its own
    /// `2 * threads` words, starting again from 0; `n` is the number of words in all.
    Scan { block: [u32; 2], check_blocks: u32, timed_blocks: u32 },
    /// `(words, out, iterations)`, or `(maps, out, iterations)` when the TMA fills the tile: each
    /// block puts its 64 rows of `row_halves` 16-bit elements in shared memory, then warp w reads
    /// rows 16w to 16w + 15 with one `ldmatrix.x4` per 16 x 16 block (lane l: row l % 16, 16-byte
    /// chunk l / 16 of the block), and each thread writes the sum over `iterations` passes of the
    /// registers it received in a pass, hashed in order (`h = 31 h + r`). 4 warps.
    LdmatrixTile {
        block: [u32; 2],
        row_halves: u32,
        fill: TileFill,
        check_blocks: u32,
        timed_blocks: u32,
        iterations: u32,
    },
}

/// Who copies an `ldmatrix-tile` exercise's rows into shared memory.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum TileFill {
    /// The threads, with 16-byte stores; the kernel takes the input's words.
    Stores,
    /// The TMA; the kernel takes a tensor map of the input per swizzle mode, by value
    /// (`cuda_kernels::tensor_map::SwizzleMaps`).
    Tma,
}

/// Input data: every input kind listed is checked.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Input {
    /// Each element holds its own index (truncated to the element's width), or for floats a small
    /// integer made from it: a misplaced element shows.
    Index,
    /// Random values, new on every run.
    Random,
}

impl fmt::Display for Input {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Input::Index => "index-encoded",
            Input::Random => "random",
        })
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Requirement {
    pub measure: Measure,
    pub at_most: Option<f64>,
    pub at_least: Option<f64>,
    pub points: u32,
    /// What to change when it is not met.
    pub fix: String,
}

impl Requirement {
    /// The limit, in the direction the measure takes ([`Manifest::load`] checked it is there).
    pub fn limit(&self) -> f64 {
        self.at_least.or(self.at_most).expect("checked when the manifest was loaded")
    }

    pub fn needed(&self) -> String {
        self.measure.needed(self.limit())
    }
}

/// What a requirement measures.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Measure {
    LoadWavefrontsPerRequest,
    StoreWavefrontsPerRequest,
    MatrixLoadWavefrontsPerRequest,
    LoadWavefrontsVsReference,
    LoadInstructionsVsReference,
    SharedBytesPerBlock,
    SpeedupVsStarter,
    TimeVsReference,
}

impl Measure {
    pub fn describe(self) -> &'static str {
        match self {
            Measure::LoadWavefrontsPerRequest => "shared load wavefronts per request",
            Measure::StoreWavefrontsPerRequest => "shared store wavefronts per request",
            Measure::MatrixLoadWavefrontsPerRequest => "ldmatrix wavefronts per request",
            Measure::LoadWavefrontsVsReference => "shared load wavefronts vs the reference",
            Measure::LoadInstructionsVsReference => "shared load instructions vs the reference",
            Measure::SharedBytesPerBlock => "shared memory per block",
            Measure::SpeedupVsStarter => "speed-up over the starter",
            Measure::TimeVsReference => "time vs the reference",
        }
    }

    /// The kind of instruction whose Nsight Compute counters it reads, `None` for a measure of
    /// the clock or of the kernel's declaration.
    pub fn family(self) -> Option<SharedFamily> {
        match self {
            Measure::LoadWavefrontsPerRequest
            | Measure::LoadWavefrontsVsReference
            | Measure::LoadInstructionsVsReference => Some(SharedFamily::Lds),
            Measure::StoreWavefrontsPerRequest => Some(SharedFamily::Sts),
            Measure::MatrixLoadWavefrontsPerRequest => Some(SharedFamily::Ldsm),
            Measure::SharedBytesPerBlock | Measure::SpeedupVsStarter | Measure::TimeVsReference => None,
        }
    }

    /// Wavefronts per request of one kind of instruction.
    pub fn per_request(self) -> bool {
        matches!(
            self,
            Measure::LoadWavefrontsPerRequest
                | Measure::StoreWavefrontsPerRequest
                | Measure::MatrixLoadWavefrontsPerRequest
        )
    }

    /// Read from Nsight Compute's counters (else judged by the clock).
    pub fn needs_counters(self) -> bool {
        self.family().is_some()
    }

    pub fn higher_is_better(self) -> bool {
        self == Measure::SpeedupVsStarter
    }

    /// Whether `value` is within `limit`, in this measure's direction.
    pub fn meets(self, value: f64, limit: f64) -> bool {
        if self.higher_is_better() { value >= limit } else { value <= limit }
    }

    /// `≤ 1`, `≥ 2.5x`: a limit as verdicts show it.
    pub fn needed(self, limit: f64) -> String {
        format!("{} {}", if self.higher_is_better() { "≥" } else { "≤" }, self.format(limit))
    }

    /// A value of this measure, with its unit.
    pub fn format(self, value: f64) -> String {
        let number = lesson_kit::cells::format_ratio(value);
        match self {
            Measure::LoadWavefrontsPerRequest
            | Measure::StoreWavefrontsPerRequest
            | Measure::MatrixLoadWavefrontsPerRequest => number,
            Measure::SharedBytesPerBlock => format!("{number} B"),
            _ => format!("{number}x"),
        }
    }
}

/// Why the manifest could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("no exercises folder with an {MANIFEST_FILE} found (searched {searched}); set {EXERCISES_DIR_VAR} to one")]
    NotFound { searched: String },
    #[error("cannot read {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("{path} is not a valid exercise manifest: {message}")]
    Invalid { path: String, message: String },
}

impl Manifest {
    /// The manifest from the first folder that has one: `$BCM_EXERCISES_DIR`, `exercises/` beside
    /// the executable (a `cargo xtask dist` folder), the workspace's `exercises/`.
    pub fn find() -> Result<Manifest, ManifestError> {
        let dirs = cuda_kernels::source::course_dirs("exercises", EXERCISES_DIR_VAR);
        match dirs.iter().find(|dir| dir.join(MANIFEST_FILE).is_file()) {
            Some(dir) => Manifest::load(&fs::canonicalize(dir).unwrap_or_else(|_| dir.clone())),
            None => {
                let searched = dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ");
                Err(ManifestError::NotFound { searched })
            }
        }
    }

    /// Reads and checks `dir/info.toml`: unique ids, files that exist, limits in the direction of
    /// their measure, points that add up to 100.
    pub fn load(dir: &Path) -> Result<Manifest, ManifestError> {
        let path = dir.join(MANIFEST_FILE);
        let shown = path.display().to_string();
        let text = fs::read_to_string(&path).map_err(|source| ManifestError::Read { path: shown.clone(), source })?;
        let invalid = |message: String| ManifestError::Invalid { path: shown.clone(), message };
        let mut manifest: Manifest = toml::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        manifest.dir = dir.to_path_buf();
        for (index, exercise) in manifest.exercises.iter().enumerate() {
            let id = &exercise.id;
            if manifest.exercises[..index].iter().any(|other| other.id == *id) {
                return Err(invalid(format!("exercise id `{id}` appears twice")));
            }
            for file in [&exercise.starter, &exercise.solution] {
                if !dir.join(file).is_file() {
                    return Err(invalid(format!("exercise `{id}` names {}, which does not exist", file.display())));
                }
            }
            if let Harness::ColumnSums { element_bytes, .. } = exercise.harness
                && ![1, 4, 16].contains(&element_bytes)
            {
                return Err(invalid(format!("exercise `{id}`: element_bytes is {element_bytes}, not 1, 4 or 16")));
            }
            if let Harness::LdmatrixTile { block, row_halves, .. } = exercise.harness {
                if block != [128, 1] {
                    return Err(invalid(format!(
                        "exercise `{id}`: an ldmatrix-tile block is 4 warps of 16 rows each: block = [128, 1], not {block:?}"
                    )));
                }
                if row_halves % 16 != 0 || !(16..=128).contains(&row_halves) {
                    return Err(invalid(format!(
                        "exercise `{id}`: row_halves is {row_halves}: whole 16 x 16 blocks, 16 to 128 halves a row"
                    )));
                }
            }
            for requirement in &exercise.requirements {
                let measure = requirement.measure;
                let wanted = match measure.higher_is_better() {
                    true => (requirement.at_least.is_some(), requirement.at_most.is_none()),
                    false => (requirement.at_most.is_some(), requirement.at_least.is_none()),
                };
                if wanted != (true, true) {
                    let key = if measure.higher_is_better() { "at_least" } else { "at_most" };
                    return Err(invalid(format!(
                        "exercise `{id}`: the requirement on {} takes `{key}` and only that",
                        measure.describe()
                    )));
                }
            }
            if let Some(within) = &exercise.within {
                within.check(id).map_err(invalid)?;
            }
            let total = exercise.correct_points + exercise.requirements.iter().map(|r| r.points).sum::<u32>();
            if total != MAX_SCORE {
                return Err(invalid(format!("exercise `{id}`: points add up to {total}, not {MAX_SCORE}")));
            }
        }
        Ok(manifest)
    }

    /// The exercise `id`, or an error listing them all.
    pub fn exercise(&self, id: &str) -> Result<&Exercise, UnknownExercise> {
        self.exercises.iter().find(|e| e.id == id).ok_or_else(|| UnknownExercise {
            id: id.to_owned(),
            known: self.exercises.iter().map(|e| format!("  {:<20} lesson {}: {}", e.id, e.lesson, e.title)).collect(),
        })
    }

    pub fn path(&self, file: &Path) -> PathBuf {
        self.dir.join(file)
    }
}

/// Every exercise is scored out of this.
pub const MAX_SCORE: u32 = 100;

#[derive(Debug, thiserror::Error)]
#[error("there is no exercise `{id}`. The exercises are:\n{}\nList them with `cargo xtask exercise --list`.", known.join("\n"))]
pub struct UnknownExercise {
    pub id: String,
    pub known: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_manifest(text: &str) -> (tempfile::TempDir, Result<Manifest, ManifestError>) {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(MANIFEST_FILE), text).unwrap();
        fs::write(dir.path().join("a.cu"), "").unwrap();
        let manifest = Manifest::load(dir.path());
        (dir, manifest)
    }

    const ONE: &str = r#"
[[exercise]]
id = "x"
lesson = 1
title = "t"
task = "do it"
starter = "a.cu"
solution = "a.cu"
entry = "k"
signature = "unsigned n"
inputs = ["index"]
tolerance = 0.0
correct_points = 60
fallback_time_vs_reference = 1.5
hints = []
harness = { kind = "transpose", block = [32, 8], check_n = 64, timed_n = 64 }
[[exercise.requirement]]
measure = "speedup-vs-starter"
at_least = 2.0
points = 40
fix = "f"
"#;

    #[test]
    fn a_small_manifest_loads_and_its_mistakes_are_named() {
        let (_dir, manifest) = write_manifest(ONE);
        let manifest = manifest.unwrap();
        let exercise = manifest.exercise("x").unwrap();
        let requirement = &exercise.requirements[0];
        assert!(
            requirement.measure.meets(2.0, requirement.limit()) && !requirement.measure.meets(1.9, requirement.limit())
        );
        assert_eq!(exercise.requirements[0].needed(), "≥ 2x");
        let unknown = manifest.exercise("y").unwrap_err().to_string();
        assert_eq!(
            unknown,
            "there is no exercise `y`. The exercises are:\n  x                    lesson 1: t\nList them with `cargo xtask exercise --list`."
        );

        let wrong_direction = ONE.replace("at_least = 2.0", "at_most = 2.0");
        let error = write_manifest(&wrong_direction).1.unwrap_err().to_string();
        assert!(
            error
                .ends_with("exercise `x`: the requirement on speed-up over the starter takes `at_least` and only that")
        );
        let error = write_manifest(&ONE.replace("points = 40", "points = 30")).1.unwrap_err().to_string();
        assert!(error.ends_with("exercise `x`: points add up to 90, not 100"), "{error}");
        let error =
            write_manifest(&ONE.replace("solution = \"a.cu\"", "solution = \"b.cu\"")).1.unwrap_err().to_string();
        assert!(error.ends_with("exercise `x` names b.cu, which does not exist"), "{error}");
        let columns = concat!(
            r#"kind = "column-sums", block = [32, 1], element_bytes = 2, columns = 32, "#,
            "check_blocks = 1, timed_blocks = 1, iterations = 1",
        );
        let two_bytes = ONE.replace(r#"kind = "transpose", block = [32, 8], check_n = 64, timed_n = 64"#, columns);
        let error = write_manifest(&two_bytes).1.unwrap_err().to_string();
        assert!(error.ends_with("exercise `x`: element_bytes is 2, not 1, 4 or 16"), "{error}");
        let tile = concat!(
            r#"kind = "ldmatrix-tile", block = [256, 1], row_halves = 64, fill = "tma", "#,
            "check_blocks = 1, timed_blocks = 1, iterations = 1",
        );
        let eight_warps = ONE.replace(r#"kind = "transpose", block = [32, 8], check_n = 64, timed_n = 64"#, tile);
        let error = write_manifest(&eight_warps).1.unwrap_err().to_string();
        assert!(error.ends_with("block = [128, 1], not [256, 1]"), "{error}");
        let narrow = eight_warps.replace("[256, 1], row_halves = 64", "[128, 1], row_halves = 24");
        let error = write_manifest(&narrow).1.unwrap_err().to_string();
        assert!(error.ends_with("row_halves is 24: whole 16 x 16 blocks, 16 to 128 halves a row"), "{error}");
        write_manifest(&narrow.replace("row_halves = 24", "row_halves = 32")).1.unwrap();
        let error = write_manifest(&ONE.replace("title", "titel")).1.unwrap_err().to_string();
        assert!(error.contains("unknown field `titel`"), "{error}");
    }
}
