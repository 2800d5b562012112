//! `cargo xtask bench`: measured rates, printed side by side (never asserted in tests).

use std::{hint::black_box, io::Write, process::ExitCode, time::Instant};

use bank_model::{Op, Request, WARP_SIZE, Width};
use lesson_kit::{Report, Tone, cells::format_ratio, styled};
use serde::Serialize;

use course::results::StoredFigure;

use crate::{
    build_cost_bench::{self, BuildCostRow},
    grading_bench,
    grading_bench::{GradingBench, GradingRun},
    lessons,
};

#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Seconds to spend on each model benchmark.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Print one JSON object instead of tables.
    #[arg(long)]
    json: bool,
    /// Skip the GPU's parts (the lessons' figures, the grader).
    #[arg(long)]
    no_gpu: bool,
    /// Run only these parts (default: all).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "PART")]
    only: Vec<Part>,
    /// Submissions in the generated class the grader is timed on: half the reference solution,
    /// half the starter. The one-at-a-time run grades only its first 16.
    #[arg(long, default_value_t = 32, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1000))]
    class_size: u16,
    /// The exercise the generated class answers.
    #[arg(long, default_value = "transpose-swizzle", value_name = "ID")]
    grading_exercise: String,
    /// Checks side by side in the later gradings of the class (the first grades one at a time),
    /// e.g. `4,8`.
    #[arg(long, default_value = "4", value_name = "N,...", value_delimiter = ',',
          value_parser = clap::value_parser!(u16).range(2..=64))]
    grading_jobs: Vec<u16>,
    /// Grade the class once more over each of these lists of GPUs (e.g. `0,1 0,1,2,3`), the last
    /// `--grading-jobs` on each GPU.
    #[arg(long, value_name = "LIST", num_args = 1..)]
    grading_gpus: Vec<GpuList>,
    /// The most correct submissions one profile holds (`cargo xtask grade --profile-batch`)
    /// [default: grade's]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    grading_profile_batch: Option<u16>,
}

/// GPUs by number, e.g. `0,1,2,3`.
#[derive(Clone, Debug)]
struct GpuList(Vec<u32>);

impl std::str::FromStr for GpuList {
    type Err = String;

    fn from_str(list: &str) -> Result<GpuList, String> {
        let gpus = list
            .split(',')
            .map(|gpu| gpu.trim().parse::<u32>().map_err(|_| format!("`{gpu}` is not a GPU number; write e.g. 0,1")))
            .collect::<Result<Vec<u32>, String>>()?;
        Ok(GpuList(gpus))
    }
}

/// What `cargo xtask bench` can measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Part {
    /// The bank model on one core.
    Model,
    /// Every lesson's headline figures, timed on the GPU.
    Lessons,
    /// The grader on a generated class, on the GPU.
    Grading,
    /// What the grader's build (registers and local arrays zeroed, local accesses kept inside
    /// their arrays) costs each solution and each grading fixture that keeps local memory, on the GPU.
    Build,
}

impl BenchArgs {
    fn runs(&self, part: Part) -> bool {
        self.only.is_empty() || self.only.contains(&part)
    }
}

/// Deterministic pseudo-random instructions: mixed ops, widths, spans and inactive lanes.
fn sample_requests(count: usize) -> Vec<Request> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..count)
        .map(|_| {
            let op = if next() % 2 == 0 { Op::Load } else { Op::Store };
            let width = Width::ALL[(next() % 5) as usize];
            let span = [128u64, 1024, 16384][(next() % 3) as usize];
            let lanes: [Option<u32>; WARP_SIZE] = std::array::from_fn(|_| {
                let address = (next() % (span / width.bytes() as u64)) as u32 * width.bytes();
                (next() % 8 != 0).then_some(address)
            });
            Request::new(op, width, lanes).expect("aligned by construction")
        })
        .collect()
}

/// Instructions per second of `f` over `requests`, run for about `seconds` on one core.
fn rate(requests: &[Request], seconds: f64, f: impl Fn(&Request) -> u32) -> f64 {
    let start = Instant::now();
    let mut done = 0usize;
    while start.elapsed().as_secs_f64() < seconds {
        for request in requests {
            black_box(f(black_box(request)));
        }
        done += requests.len();
    }
    done as f64 / start.elapsed().as_secs_f64()
}

#[derive(Serialize)]
struct ModelRates {
    build: &'static str,
    analyze_per_second: f64,
    wavefronts_per_second: f64,
}

#[derive(Serialize)]
struct Bench {
    model: Option<ModelRates>,
    gpu: Option<cuda_kernels::GpuInfo>,
    /// Why there are no GPU figures, when there are none.
    gpu_skipped: Option<String>,
    figures: Vec<StoredFigure>,
    grading: Option<GradingBench>,
    build_cost: Vec<BuildCostRow>,
}

pub fn run(args: &BenchArgs, out: &mut dyn Write, color: bool) -> anyhow::Result<ExitCode> {
    if args.runs(Part::Grading) {
        // An unknown exercise is named before anything is measured, with or without a GPU.
        exercises::Manifest::find()?.exercise(&args.grading_exercise)?;
    }
    let model = args.runs(Part::Model).then(|| model_rates(args.seconds));
    let gpu_parts = [Part::Lessons, Part::Grading, Part::Build].into_iter().any(|part| args.runs(part));
    let mut bench =
        Bench { model, gpu: None, gpu_skipped: None, figures: Vec::new(), grading: None, build_cost: Vec::new() };
    match args.no_gpu {
        true => bench.gpu_skipped = Some("--no-gpu given".to_owned()),
        false if !gpu_parts => {}
        false => match cuda_kernels::Gpu::open() {
            Err(why) => bench.gpu_skipped = Some(why.to_string()),
            Ok(gpu) => {
                bench.gpu = Some(gpu.info().clone());
                if args.runs(Part::Build) {
                    bench.build_cost = build_cost_bench::measure(&gpu)?;
                }
                drop(gpu);
                if args.runs(Part::Lessons) {
                    match lessons::measure_all()? {
                        Ok(all) => bench.figures = all.figures.into_iter().map(StoredFigure::from).collect(),
                        Err(why) => bench.gpu_skipped = Some(why),
                    }
                }
                if args.runs(Part::Grading) {
                    let one_gpu = |jobs| grading_bench::Spread { jobs, gpus: Vec::new() };
                    let mut spreads: Vec<_> =
                        std::iter::once(1).chain(args.grading_jobs.iter().copied()).map(one_gpu).collect();
                    let jobs = *args.grading_jobs.last().expect("clap gives a default");
                    spreads.extend(
                        args.grading_gpus.iter().map(|list| grading_bench::Spread { jobs, gpus: list.0.clone() }),
                    );
                    bench.grading = Some(grading_bench::measure(
                        &args.grading_exercise,
                        args.class_size.into(),
                        &spreads,
                        args.grading_profile_batch,
                    )?);
                }
            }
        },
    }
    if args.json {
        writeln!(out, "{}", serde_json::to_string(&bench)?)?;
    } else {
        write!(out, "{}", render(&bench, args.seconds).render(color))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn model_rates(seconds: f64) -> ModelRates {
    let requests = sample_requests(10_000);
    let spinner = indicatif::ProgressBar::new_spinner()
        .with_message(format!("timing the bank model on one core, {seconds} s for each of 2 benchmarks"));
    spinner.enable_steady_tick(std::time::Duration::from_millis(120));
    let rates = ModelRates {
        // The bank-model crate is optimized in every profile (see Cargo.toml).
        build: if cfg!(debug_assertions) { "dev profile, model optimized" } else { "release" },
        analyze_per_second: rate(&requests, seconds, |r| r.analyze().wavefronts),
        wavefronts_per_second: rate(&requests, seconds, Request::wavefronts),
    };
    spinner.finish_and_clear();
    rates
}

fn render(bench: &Bench, seconds: f64) -> Report {
    let mut report = Report::default();
    if let Some(model) = &bench.model {
        report.heading("Bank model, one core");
        report.text(format!(
            "{} build, 10,000 random warp instructions (all widths, loads and stores, inactive lanes), {seconds} s each.",
            model.build
        ));
        report.table(
            ["what", "instructions/s"],
            vec![
                vec![
                    "analyze(): wavefronts, per-bank table, broadcasts".into(),
                    format!("{:.0}", model.analyze_per_second).into(),
                ],
                vec!["wavefronts(): the count alone".into(), format!("{:.0}", model.wavefronts_per_second).into()],
            ],
        );
    }
    if let Some(why) = &bench.gpu_skipped {
        report.text(format!("GPU parts skipped: {why}."));
    }
    let Some(gpu) = &bench.gpu else { return report };
    let on_gpu = format!("{} ({}, CUDA {} driver)", gpu.name, gpu.arch(), gpu.driver_cuda_version);
    if !bench.figures.is_empty() {
        report.heading("GPU figures, measured side by side in one run");
        report.text(format!("{on_gpu}, timing only (no profiler)."));
        let rows = bench
            .figures
            .iter()
            .map(|f| {
                vec![
                    f.lesson.into(),
                    f.label.clone().into(),
                    styled(f.value_text(), Tone::Plain),
                    f.unit.clone().into(),
                ]
            })
            .collect();
        report.table(["lesson", "figure", "value", "unit"], rows);
    }
    if let Some(grading) = &bench.grading {
        render_grading(&mut report, grading, &on_gpu);
    }
    if !bench.build_cost.is_empty() {
        render_build_cost(&mut report, &bench.build_cost, &on_gpu);
    }
    report
}

fn render_build_cost(report: &mut Report, rows: &[BuildCostRow], on_gpu: &str) {
    report.heading("What the grader's build costs a kernel");
    report.text(format!(
        "Each kernel as the grader loads it (every register and local array zero where a function starts, \
         every local access kept inside its array) beside the same kernel as NVRTC compiled it, and the \
         starter: median ms of one launch at the exercise's timed size, the three timed in turn in one run, \
         on the {on_gpu}. Each exercise's solution, and each grading fixture whose compiled code keeps local \
         memory and does not print."
    ));
    let rows = rows
        .iter()
        .map(|row| {
            let mut cells = vec![row.exercise.clone().into(), row.kernel.clone().into()];
            cells.push(if row.local_memory { "yes" } else { "no" }.into());
            match &row.cost {
                Ok(cost) => cells.extend([
                    format!("{:.4}", cost.graded_ms).into(),
                    format!("{:.4}", cost.compiled_ms).into(),
                    format!("{}x", format_ratio(cost.graded_ms / cost.compiled_ms)).into(),
                    format!("{}x", format_ratio(cost.starter_ms / cost.graded_ms)).into(),
                ]),
                Err(why) => {
                    cells.extend([styled(format!("not timed: {why}"), Tone::Bad), "".into(), "".into(), "".into()])
                }
            }
            cells
        })
        .collect();
    report.table(
        [
            "exercise",
            "kernel",
            "local memory",
            "graded build, ms",
            "NVRTC's build, ms",
            "graded / NVRTC's time",
            "speed vs starter, graded",
        ],
        rows,
    );
}

fn render_grading(report: &mut Report, grading: &GradingBench, on_gpu: &str) {
    report.heading("The grader on a generated class");
    report.text(format!(
        "{} submissions to {} (half the solution, half the starter), graded as `cargo xtask grade` grades \
         them, on the {on_gpu}: compiled, checked, profiled under Nsight Compute and timed, in one run. \
         The first run grades the first {} one check at a time; the later ones are compared with it, \
         submission by submission. Each spread of checks side by side grades the first half of the \
         class too: the difference is what each submission adds once grading is under way, and the \
         rest of the run's time is paid once whatever the class's size (starting the first checks, \
         the last profile). Each GPU keeps one Nsight Compute session beside its checks, which \
         launches what was checked while its last batch launched, up to {} at a time, and reads \
         their counters at its end. Sandbox: {}.",
        grading.class_size,
        grading.exercise,
        grading.runs.first().map_or(0, |run| run.submissions),
        grading.profile_batch.map_or(exercises::grading::PROFILE_BATCH, usize::from),
        grading.sandbox,
    ));
    let one_at_a_time = grading.runs.first().map(GradingRun::per_minute);
    let rows = grading
        .runs
        .iter()
        .map(|run| {
            vec![
                match run.spread.gpus.len() {
                    0 => "first".to_owned(),
                    _ => run.spread.gpus.iter().map(u32::to_string).collect::<Vec<_>>().join(","),
                }
                .into(),
                run.spread.jobs.into(),
                format!("{}/{}", run.graded, run.submissions).into(),
                format!("{:.1}", run.seconds).into(),
                format!("{:.1}", run.per_minute()).into(),
                run.once_started()
                    .map_or("-".to_owned(), |(once, per_minute)| format!("{once:.1} s, then {per_minute:.1}"))
                    .into(),
                one_at_a_time
                    .map_or("-".to_owned(), |first| format!("{}x", format_ratio(run.per_minute() / first)))
                    .into(),
                run.beside_first.as_ref().map_or("-".to_owned(), |a| format!("{}/{}", a.same_score, a.compared)).into(),
                run.beside_first
                    .as_ref()
                    .map_or("-".to_owned(), |a| format!("{:.1}%", 100.0 * a.largest_time_change))
                    .into(),
            ]
        })
        .collect();
    report.table(
        [
            "GPUs",
            "checks per GPU",
            "graded",
            "seconds",
            "submissions a minute",
            "paid once, then a minute",
            "speed-up",
            "same score as one at a time",
            "largest change of time vs reference",
        ],
        rows,
    );
}
