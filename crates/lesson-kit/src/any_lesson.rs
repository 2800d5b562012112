//! A lesson behind a pointer: what the course's list of lessons holds, so that the command line,
//! the GPU suite, the book and the claims reach every lesson through one list, whatever its
//! `Spec` type.

use cuda_kernels::{GpuInfo, ncu::SelfCommand};

use crate::{
    chart::Chart,
    declarations,
    lesson::{Lesson, RunSize},
    report::Report,
    runner::{self, LessonOutcome, Options, SuiteRecord},
};

/// Every [`Lesson`] is one.
pub trait AnyLesson: Sync {
    fn number(&self) -> u32;
    fn title(&self) -> &'static str;
    /// The model's tables: everything that needs no GPU.
    fn model_report(&self) -> Report;
    fn charts(&self) -> &'static [Chart];
    /// Every access the profile-size runs declare on a GPU of `gpu`'s shape, with the model's cost.
    fn declared_accesses(&self, gpu: &GpuInfo) -> Report;
    fn run(&self, options: &Options) -> LessonOutcome;
    /// What is wrong with the lesson's declarations on a GPU of `gpu`'s shape; empty when none.
    fn declaration_problems(&self, gpu: &GpuInfo) -> Vec<String>;
    fn suite_record(&self, command: &SelfCommand) -> Result<SuiteRecord, String>;
    /// Launches the profile-size runs once each, for ncu to count.
    fn profile_target(&self) -> Result<(), String>;
}

impl<L: Lesson + Sync> AnyLesson for L {
    fn number(&self) -> u32 {
        L::NUMBER
    }
    fn title(&self) -> &'static str {
        L::TITLE
    }
    fn model_report(&self) -> Report {
        let mut report = Report::default();
        self.model(&mut report);
        report
    }
    fn charts(&self) -> &'static [Chart] {
        Lesson::charts(self)
    }
    fn declared_accesses(&self, gpu: &GpuInfo) -> Report {
        runner::declared_accesses(&self.runs(gpu, RunSize::Profile))
    }
    fn run(&self, options: &Options) -> LessonOutcome {
        runner::run(self, options)
    }
    fn declaration_problems(&self, gpu: &GpuInfo) -> Vec<String> {
        declarations::declaration_problems(self, gpu)
    }
    fn suite_record(&self, command: &SelfCommand) -> Result<SuiteRecord, String> {
        runner::suite_record(self, command)
    }
    fn profile_target(&self) -> Result<(), String> {
        runner::profile_target(self)
    }
}
