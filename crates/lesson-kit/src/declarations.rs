//! What every lesson is checked for without a GPU.

use cuda_kernels::{GpuInfo, kernel_names::kernel_names, source};

use crate::lesson::{KernelRun, Lesson, RunSize};

/// What is wrong with a lesson's declarations, found without a GPU: profile and timed runs that
/// differ in labels or kernels (their counters are joined by label), kernels that the lesson's
/// `.cu` files do not define, and time ratios naming runs the lesson does not have. Empty when
/// all is well.
pub fn declaration_problems<L: Lesson>(lesson: &L, gpu: &GpuInfo) -> Vec<String> {
    let mut problems = Vec::new();
    let timed = lesson.runs(gpu, RunSize::Timed);
    let profiled = lesson.runs(gpu, RunSize::Profile);
    let shape = |runs: &[KernelRun<L::Spec>]| runs.iter().map(|r| (r.label.clone(), r.kernel)).collect::<Vec<_>>();
    let (timed_shape, profiled_shape) = (shape(&timed), shape(&profiled));
    for (label, kernel) in &timed_shape {
        if !profiled_shape.contains(&(label.clone(), *kernel)) {
            problems.push(format!("timed run `{label}` ({kernel:?}) has no profile run of that label and kernel"));
        }
    }
    for (label, kernel) in &profiled_shape {
        if !timed_shape.contains(&(label.clone(), *kernel)) {
            problems.push(format!("profile run `{label}` ({kernel:?}) has no timed run of that label and kernel"));
        }
    }
    let mut labels: Vec<&str> = timed.iter().map(|r| r.label.as_str()).collect();
    labels.sort_unstable();
    labels.windows(2).filter(|pair| pair[0] == pair[1]).for_each(|pair| {
        problems.push(format!("two runs are labelled `{}`: labels join a run's counters to its timing", pair[0]))
    });
    let mut defined = Vec::new();
    for file in L::KERNEL_FILES {
        match source::embedded(file) {
            Some(text) => defined.extend(kernel_names(text)),
            None => problems.push(format!("kernel file `{file}` is not in kernels/")),
        }
    }
    for run in timed.iter().chain(&profiled) {
        if let Some(kernel) = run.kernel
            && !defined.iter().any(|name| name == kernel)
        {
            problems.push(format!(
                "run `{}` names kernel `{kernel}`, which {} does not define",
                run.label,
                L::KERNEL_FILES.join(", ")
            ));
        }
    }
    for ratio in lesson.time_ratios() {
        for label in ratio.missing_runs(&timed) {
            problems.push(format!("figure `{}` names run `{label}`, which the lesson does not have", ratio.key));
        }
    }
    problems.dedup();
    problems
}

#[cfg(test)]
mod tests {
    use cuda_kernels::{Gpu, GpuError};

    use super::*;
    use crate::{
        lesson::{Prepared, TimeRatio, TimedRun, tests::transpose_like},
        report::Report,
    };

    /// A lesson of one run, `transpose_like`, naming `ratios`; its profile run is changed by
    /// `profile`.
    struct Declarations {
        ratios: &'static [TimeRatio],
        profile: fn(&mut KernelRun<()>),
    }

    impl Lesson for Declarations {
        type Spec = ();
        const NUMBER: u32 = 99;
        const TITLE: &'static str = "declarations";
        const KERNEL_FILES: &'static [&'static str] = &["transpose.cu"];
        fn model(&self, _report: &mut Report) {}
        fn runs(&self, _gpu: &GpuInfo, size: RunSize) -> Vec<KernelRun<()>> {
            let mut run = transpose_like();
            if size == RunSize::Profile {
                (self.profile)(&mut run);
            }
            vec![run]
        }
        fn prepare<'g>(&self, _gpu: &'g Gpu, _run: &KernelRun<()>) -> Result<Box<dyn Prepared + 'g>, GpuError> {
            Err(GpuError::WrongResult("never launched".into()))
        }
        fn time_ratios(&self) -> &'static [TimeRatio] {
            self.ratios
        }
        fn summarize(&self, _gpu: &GpuInfo, _results: &[TimedRun<()>], _report: &mut Report) {}
    }

    /// The lesson with its profile run changed by `profile` and no figures.
    fn uneven(profile: fn(&mut KernelRun<()>)) -> Declarations {
        Declarations { ratios: &[], profile }
    }

    #[test]
    fn declaration_problems_name_figures_without_runs() {
        const RATIOS: [TimeRatio; 2] = [
            TimeRatio { key: "fine", label: "", numerator: "transpose n=32", denominator: "transpose n=32" },
            TimeRatio { key: "typo", label: "", numerator: "transpose n=32", denominator: "transpose n=64" },
        ];
        let gpu = GpuInfo::h100();
        assert_eq!(
            declaration_problems(&Declarations { ratios: &RATIOS[..1], profile: |_| {} }, &gpu),
            Vec::<String>::new()
        );
        assert_eq!(
            declaration_problems(&Declarations { ratios: &RATIOS, profile: |_| {} }, &gpu),
            ["figure `typo` names run `transpose n=64`, which the lesson does not have"]
        );
    }

    #[test]
    fn profile_and_timed_runs_must_share_labels_and_kernels() {
        let gpu = GpuInfo::h100();
        assert_eq!(declaration_problems(&uneven(|_| {}), &gpu), Vec::<String>::new());
        let relabelled = declaration_problems(&uneven(|run| run.label = "transpose n=16".into()), &gpu);
        assert_eq!(
            relabelled,
            [
                "timed run `transpose n=32` (Some(\"transpose_naive\")) has no profile run of that label and kernel",
                "profile run `transpose n=16` (Some(\"transpose_naive\")) has no timed run of that label and kernel",
            ]
        );
        let other_kernel = declaration_problems(&uneven(|run| run.kernel = Some("transpose_tile32")), &gpu);
        assert_eq!(other_kernel.len(), 2, "{other_kernel:?}");
    }

    #[test]
    fn kernels_must_exist_in_the_lesson_files() {
        let problems = declaration_problems(&uneven(|run| run.kernel = Some("transpose_typo")), &GpuInfo::h100());
        assert!(
            problems.contains(
                &"run `transpose n=32` names kernel `transpose_typo`, which transpose.cu does not define".to_owned()
            ),
            "{problems:?}"
        );
    }
}
