//! What the last check of each of the learner's copies said, kept beside the copies
//! (`my-exercises/.last-checks.json`), so that `exercise --list` shows which exercises pass without
//! a GPU and without checking anything again.

use std::{collections::BTreeMap, fs, io, path::PathBuf};

use serde::{Deserialize, Serialize};

use crate::{
    learner_file,
    manifest::{Exercise, MAX_SCORE, Manifest},
    submissions::sha256_hex,
    verdict::Verdict,
};

/// The file, in the learner's folder.
pub const FILE: &str = ".last-checks.json";

/// One exercise's last check.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct Record {
    /// SHA-256 of the copy that was checked.
    pub sha256: String,
    /// `None`: it could not be checked (no GPU...).
    pub score: Option<u32>,
    /// What the verdict said to do next.
    pub next: String,
}

/// Where an exercise stands, for the list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Standing {
    NotStarted,
    /// The copy is not a valid learner file (no GPU needed to tell).
    Invalid(String),
    NotCheckedYet,
    /// The copy changed since its last check.
    Changed,
    Passes,
    Fails {
        score: u32,
        next: String,
    },
    /// The last check could not run: why.
    NotChecked(String),
}

fn records_path(manifest: &Manifest, exercise: &Exercise) -> PathBuf {
    crate::learner_copy_path(manifest, exercise).with_file_name(FILE)
}

fn read(manifest: &Manifest, exercise: &Exercise) -> BTreeMap<String, Record> {
    let text = fs::read_to_string(records_path(manifest, exercise)).unwrap_or_default();
    serde_json::from_str(&text).unwrap_or_default()
}

/// Keeps `verdict` as the last check of `exercise`'s copy, whose bytes were `bytes`.
pub fn record(manifest: &Manifest, exercise: &Exercise, bytes: &[u8], verdict: &Verdict) -> io::Result<()> {
    let mut records = read(manifest, exercise);
    let record = Record { sha256: sha256_hex(bytes), score: verdict.score, next: verdict.next.clone() };
    records.insert(exercise.id.clone(), record);
    let path = records_path(manifest, exercise);
    fs::create_dir_all(path.parent().expect("in the learner's folder"))?;
    fs::write(path, serde_json::to_string_pretty(&records)? + "\n")
}

/// Where `exercise` stands from its copy and its last check; `starter` is its starter's text.
pub fn standing(manifest: &Manifest, exercise: &Exercise, starter: &str) -> io::Result<Standing> {
    let copy = crate::learner_copy_path(manifest, exercise);
    if !copy.is_file() {
        return Ok(Standing::NotStarted);
    }
    let bytes = fs::read(&copy)?;
    if let Err(invalid) = learner_file::validate(exercise, starter, &bytes) {
        return Ok(Standing::Invalid(invalid.to_string()));
    }
    Ok(match read(manifest, exercise).remove(&exercise.id) {
        None => Standing::NotCheckedYet,
        Some(record) if record.sha256 != sha256_hex(&bytes) => Standing::Changed,
        Some(Record { score: Some(MAX_SCORE), .. }) => Standing::Passes,
        Some(Record { score: Some(score), next, .. }) => Standing::Fails { score, next },
        Some(Record { score: None, next, .. }) => Standing::NotChecked(next),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{check::CheckOutcome, verdict::judge};

    #[test]
    fn the_list_reads_each_copy_against_its_last_check() {
        let folder = tempfile::tempdir().unwrap();
        let exercises = folder.path().join("exercises");
        let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../exercises");
        fs::create_dir_all(exercises.join("transpose-swizzle")).unwrap();
        fs::copy(source.join("info.toml"), exercises.join("info.toml")).unwrap();
        for file in ["exercise.cu", "solution.cu"] {
            fs::copy(source.join("transpose-swizzle").join(file), exercises.join("transpose-swizzle").join(file))
                .unwrap();
        }
        let manifest = Manifest { dir: exercises.clone(), ..Manifest::load(&source).unwrap() };
        let exercise = manifest.exercise("transpose-swizzle").unwrap();
        let starter = fs::read_to_string(manifest.path(&exercise.starter)).unwrap();
        assert_eq!(standing(&manifest, exercise, &starter).unwrap(), Standing::NotStarted);

        let (copy, _) = crate::learner_copy(&manifest, exercise).unwrap();
        assert_eq!(standing(&manifest, exercise, &starter).unwrap(), Standing::NotCheckedYet);
        let bytes = fs::read(&copy).unwrap();
        let conflicted = judge(exercise, &CheckOutcome::Correct(Box::new(crate::verdict::tests::measured(32, 1, 3.0))));
        record(&manifest, exercise, &bytes, &conflicted).unwrap();
        assert!(
            matches!(standing(&manifest, exercise, &starter).unwrap(), Standing::Fails { score, .. } if score < MAX_SCORE)
        );

        let solution = fs::read(manifest.path(&exercise.solution)).unwrap();
        fs::write(&copy, &solution).unwrap();
        assert_eq!(standing(&manifest, exercise, &starter).unwrap(), Standing::Changed);
        let passed = judge(exercise, &CheckOutcome::Correct(Box::new(crate::verdict::tests::measured(1, 1, 1.0))));
        record(&manifest, exercise, &solution, &passed).unwrap();
        assert_eq!(standing(&manifest, exercise, &starter).unwrap(), Standing::Passes);

        fs::write(&copy, starter.replace("#define TILE 32u", "#define TILE 16u")).unwrap();
        let Standing::Invalid(why) = standing(&manifest, exercise, &starter).unwrap() else { panic!("invalid") };
        assert!(why.contains("outside the editable part"), "{why}");
    }
}
