//! The course as a whole: its one list of lessons (this crate's `[dependencies]`, read by
//! build.rs), a lesson found by the number a reader types, and the results file that every
//! lesson's GPU run feeds ([`results`]).

pub mod results;

use cuda_kernels::ncu::SelfCommand;
use lesson_kit::AnyLesson;

include!(concat!(env!("OUT_DIR"), "/lessons.rs"));

/// The hidden subcommand of the course's program that launches a lesson's profile-size kernels
/// once each, for ncu to count: `PROGRAM __profile-lesson N`.
pub const PROFILE_LESSON: &str = "__profile-lesson";

/// A lesson number that names no lesson.
#[derive(Debug, thiserror::Error)]
#[error(
    "there is no lesson `{given}`. The lessons are:\n{}\nRun one with e.g. `cargo xtask lesson 1`.",
    indented_list()
)]
pub struct UnknownLesson {
    pub given: String,
}

/// The lesson `text` names (`3`, ` 3 `).
pub fn lesson(text: &str) -> Result<&'static dyn AnyLesson, UnknownLesson> {
    let number = text.trim().parse::<u32>().ok();
    LESSONS
        .iter()
        .copied()
        .find(|lesson| Some(lesson.number()) == number)
        .ok_or_else(|| UnknownLesson { given: text.to_owned() })
}

/// Every lesson, a line each: number and title.
pub fn list() -> String {
    LESSONS.iter().map(|lesson| format!("{:>2}  {}", lesson.number(), lesson.title())).collect::<Vec<_>>().join("\n")
}

fn indented_list() -> String {
    list().lines().map(|line| format!("  {line}")).collect::<Vec<_>>().join("\n")
}

/// How ncu starts `program` to count lesson `number`'s kernels.
pub fn profile_command(program: std::path::PathBuf, number: u32) -> SelfCommand {
    SelfCommand { program, args: vec![PROFILE_LESSON.into(), number.to_string().into()] }
}

#[cfg(test)]
mod tests {
    use cuda_kernels::GpuInfo;

    use super::*;

    #[test]
    fn lessons_are_numbered_as_their_crates_one_to_n() {
        let numbers: Vec<u32> = LESSONS.iter().map(|lesson| lesson.number()).collect();
        assert_eq!(numbers, NUMBERS_BY_NAME, "a lesson's NUMBER must be the NN of its crate's name");
        assert_eq!(numbers, (1..=LESSONS.len() as u32).collect::<Vec<_>>(), "lessons 1 to N, none missing");
    }

    #[test]
    fn every_lesson_declares_soundly() {
        for lesson in LESSONS {
            let problems = lesson.declaration_problems(&GpuInfo::h100());
            assert!(problems.is_empty(), "lesson {}: {problems:#?}", lesson.number());
        }
    }

    #[test]
    fn lessons_are_found_by_number_and_others_named_in_the_error() {
        assert_eq!(lesson(" 3 ").unwrap().number(), 3);
        let error = lesson("12x").err().unwrap().to_string();
        assert!(error.starts_with("there is no lesson `12x`. The lessons are:\n   1  Banks and strides\n"), "{error}");
        assert!(error.ends_with("Run one with e.g. `cargo xtask lesson 1`."), "{error}");
    }
}
