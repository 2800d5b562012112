//! A generated class for measuring the grader: submissions a GPU really compiles, profiles and
//! times, so that the rate `cargo xtask bench` reports is the rate of a real class.

use std::{fs, io, path::Path};

use crate::{Exercise, Manifest, learner_file::EDIT_BELOW};

/// Writes `size` submissions to `exercise` into `dir`, one folder each (`student-001/exercise.cu`):
/// alternately the reference solution (full marks) and the starter (correct, but missing the
/// requirements), each with a comment of its own in the editable part, as students' files differ.
pub fn write(manifest: &Manifest, exercise: &Exercise, dir: &Path, size: usize) -> io::Result<()> {
    let read = |file: &Path| fs::read_to_string(manifest.path(file));
    let (solution, starter) = (read(&exercise.solution)?, read(&exercise.starter)?);
    let file_name = exercise.starter.file_name().expect("a starter file");
    for student in 1..=size {
        let text = if student % 2 == 1 { &solution } else { &starter };
        let folder = dir.join(format!("student-{student:03}"));
        fs::create_dir_all(&folder)?;
        let own = text.replacen(EDIT_BELOW, &format!("{EDIT_BELOW}\n// student {student}"), 1);
        fs::write(folder.join(file_name), own)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{learner_file, submissions};

    #[test]
    fn every_submission_of_a_generated_class_is_a_valid_learner_file_and_half_of_them_the_solution() {
        let manifest = Manifest::find().unwrap();
        let dir = tempfile::tempdir().unwrap();
        for exercise in &manifest.exercises {
            let class = dir.path().join(&exercise.id);
            write(&manifest, exercise, &class, 5).unwrap();
            let starter = fs::read_to_string(manifest.path(&exercise.starter)).unwrap();
            let solution = fs::read_to_string(manifest.path(&exercise.solution)).unwrap();
            let solution_region =
                learner_file::validate(exercise, &starter, solution.as_bytes()).unwrap().region_text();
            let entries = submissions::scan(&class, "exercise.cu").unwrap();
            assert_eq!(entries.len(), 5, "{}", exercise.id);
            let mut solutions = 0;
            for (student, entry) in (1..).zip(&entries) {
                let submissions::Entry::Found(found) = entry else { panic!("{}: {entry:?} refused", exercise.id) };
                let file = learner_file::validate(exercise, &starter, &found.bytes)
                    .unwrap_or_else(|e| panic!("{}/{}: {e}", exercise.id, found.name));
                let region = file.region_text();
                let (comment, rest) = region.split_once('\n').unwrap();
                assert_eq!(
                    (found.name.as_str(), comment),
                    (format!("student-{student:03}").as_str(), format!("// student {student}").as_str())
                );
                solutions += usize::from(rest == solution_region);
            }
            assert_eq!(solutions, 3, "{}: students 1, 3 and 5 hand in the solution", exercise.id);
        }
    }
}
