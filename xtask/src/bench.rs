//! `cargo xtask bench`: measured rates, printed side by side (never asserted in tests).

use std::{hint::black_box, io::Write, process::ExitCode, time::Instant};

use bank_model::{Op, Request, WARP_SIZE, Width};
use lesson_kit::{Report, Tone, styled};
use serde::Serialize;

use course::results::StoredFigure;

use crate::lessons;

pub struct Options {
    pub seconds: f64,
    pub json: bool,
    pub no_gpu: bool,
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
    model: ModelRates,
    gpu: Option<cuda_kernels::GpuInfo>,
    /// Why there are no GPU figures, when there are none.
    gpu_skipped: Option<String>,
    figures: Vec<StoredFigure>,
}

pub fn run(options: Options, out: &mut dyn Write, color: bool) -> anyhow::Result<ExitCode> {
    let requests = sample_requests(10_000);
    let spinner = indicatif::ProgressBar::new_spinner()
        .with_message(format!("timing the bank model on one core, {} s for each of 2 benchmarks", options.seconds));
    spinner.enable_steady_tick(std::time::Duration::from_millis(120));
    let model = ModelRates {
        // The bank-model crate is optimized in every profile (see Cargo.toml).
        build: if cfg!(debug_assertions) { "dev profile, model optimized" } else { "release" },
        analyze_per_second: rate(&requests, options.seconds, |r| r.analyze().wavefronts),
        wavefronts_per_second: rate(&requests, options.seconds, Request::wavefronts),
    };
    spinner.finish_and_clear();
    let measured = if options.no_gpu { Ok(Err("--no-gpu given".to_owned())) } else { lessons::measure_all() }?;
    let (gpu, gpu_skipped, figures) = match measured {
        Ok(all) => (Some(all.gpu), None, all.figures.into_iter().map(StoredFigure::from).collect()),
        Err(why) => (None, Some(why), Vec::new()),
    };
    let bench = Bench { model, gpu, gpu_skipped, figures };
    if options.json {
        writeln!(out, "{}", serde_json::to_string(&bench)?)?;
    } else {
        write!(out, "{}", render(&bench, options.seconds).render(color))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn render(bench: &Bench, seconds: f64) -> Report {
    let mut report = Report::default();
    report.heading("Bank model, one core");
    report.text(format!(
        "{} build, 10,000 random warp instructions (all widths, loads and stores, inactive lanes), {seconds} s each.",
        bench.model.build
    ));
    report.table(
        ["what", "instructions/s"],
        vec![
            vec![
                "analyze(): wavefronts, per-bank table, broadcasts".into(),
                format!("{:.0}", bench.model.analyze_per_second).into(),
            ],
            vec!["wavefronts(): the count alone".into(), format!("{:.0}", bench.model.wavefronts_per_second).into()],
        ],
    );
    report.heading("GPU figures, measured side by side in one run");
    match (&bench.gpu, &bench.gpu_skipped) {
        (Some(gpu), _) => {
            report.text(format!(
                "{} ({}, CUDA {} driver), timing only (no profiler).",
                gpu.name,
                gpu.arch(),
                gpu.driver_cuda_version
            ));
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
        (None, why) => report.text(format!("GPU figures skipped: {}.", why.as_deref().unwrap_or("no GPU"))),
    }
    report
}
