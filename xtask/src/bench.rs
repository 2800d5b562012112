//! `cargo xtask bench`: measured rates, printed side by side (never asserted in tests).

use std::{hint::black_box, io::Write, process::ExitCode, time::Instant};

use bank_model::{Op, Request, WARP_SIZE, Width};

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

pub fn run(seconds: f64, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let requests = sample_requests(10_000);
    let profile = if cfg!(debug_assertions) { "debug" } else { "release" };
    writeln!(
        out,
        "Bank model, one core, {profile} build, 10,000 random warp instructions cycled for {seconds} s each:"
    )?;
    let full = rate(&requests, seconds, |r| r.analyze().wavefronts);
    let fast = rate(&requests, seconds, Request::wavefronts);
    writeln!(out, "  analyze() (per-bank table, broadcasts): {:>12.0} instructions/s", full)?;
    writeln!(out, "  wavefronts() (count only):              {:>12.0} instructions/s", fast)?;
    writeln!(out, "  ratio count-only / full:                {:>12.1}x", fast / full)?;
    Ok(ExitCode::SUCCESS)
}
