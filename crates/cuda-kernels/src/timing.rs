//! Timing with CUDA events: warm-up launches first, then one event pair per repetition.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::{Gpu, GpuError};

/// How many launches to time, after how many untimed ones.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    pub warmup: usize,
    pub reps: usize,
}

impl Default for Plan {
    fn default() -> Self {
        Plan { warmup: 3, reps: 15 }
    }
}

/// Milliseconds per launch over the repetitions.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Timing {
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub reps: usize,
}

impl Timing {
    pub fn from_samples(mut samples: Vec<f64>) -> Option<Timing> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_by(f64::total_cmp);
        let n = samples.len();
        let median = if n % 2 == 1 { samples[n / 2] } else { (samples[n / 2 - 1] + samples[n / 2]) / 2.0 };
        Some(Timing { median_ms: median, min_ms: samples[0], max_ms: samples[n - 1], reps: n })
    }

    /// (max - min) / median: how noisy the repetitions were.
    pub fn spread(&self) -> f64 {
        (self.max_ms - self.min_ms) / self.median_ms
    }
}

/// Times `launch` (which enqueues work on the GPU's stream) with CUDA events.
pub fn time(gpu: &Gpu, plan: Plan, mut launch: impl FnMut() -> Result<(), GpuError>) -> Result<Timing, GpuError> {
    assert!(plan.reps > 0, "a timing plan needs at least one repetition");
    for _ in 0..plan.warmup {
        launch()?;
    }
    let mut samples = Vec::with_capacity(plan.reps);
    for _ in 0..plan.reps {
        let (start, end) = (gpu.timing_event()?, gpu.timing_event()?);
        start.record(gpu.stream()).map_err(GpuError::from)?;
        launch()?;
        end.record(gpu.stream()).map_err(GpuError::from)?;
        samples.push(start.elapsed_ms(&end).map_err(GpuError::from)? as f64);
    }
    Ok(Timing::from_samples(samples).expect("at least one repetition"))
}

/// [`warm_up`] times launches in windows of at least this long, each with one event pair.
const WARM_UP_WINDOW_MS: f64 = 2.0;
/// Consecutive windows whose time per launch must agree within [`STEADY_SPREAD`].
const STEADY_WINDOWS: usize = 3;
const STEADY_SPREAD: f64 = 0.02;

/// Launches `launch` until its time per launch is steady, the same within 2% over three windows
/// of at least 2 ms each, or until `limit` has passed: a GPU leaving its idle clocks runs the
/// same work faster from one window to the next, while a GPU that was just busy is steady at once
/// (about 6 ms instead of the whole limit).
pub fn warm_up(gpu: &Gpu, limit: Duration, mut launch: impl FnMut() -> Result<(), GpuError>) -> Result<(), GpuError> {
    let started = Instant::now();
    let (start, end) = (gpu.timing_event()?, gpu.timing_event()?);
    let (mut windows, mut batch) = (Vec::<f64>::new(), 1);
    loop {
        start.record(gpu.stream()).map_err(GpuError::from)?;
        for _ in 0..batch {
            launch()?;
        }
        end.record(gpu.stream()).map_err(GpuError::from)?;
        let per_launch = start.elapsed_ms(&end).map_err(GpuError::from)? as f64 / batch as f64;
        windows.push(per_launch);
        if is_steady(&windows) || started.elapsed() >= limit {
            return Ok(());
        }
        // Enough launches for the next window to last the window's time (per_launch can read 0
        // for a launch shorter than the events' resolution).
        batch = (WARM_UP_WINDOW_MS / per_launch.max(1e-3)).ceil().clamp(1.0, 4096.0) as usize;
    }
}

/// Whether the last [`STEADY_WINDOWS`] times per launch agree within [`STEADY_SPREAD`] of their
/// fastest.
fn is_steady(windows: &[f64]) -> bool {
    let Some(last) = windows.len().checked_sub(STEADY_WINDOWS).map(|from| &windows[from..]) else {
        return false;
    };
    let (fastest, slowest) = last.iter().fold((f64::INFINITY, 0.0_f64), |(lo, hi), &t| (lo.min(t), hi.max(t)));
    slowest <= fastest * (1.0 + STEADY_SPREAD)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_spread() {
        let t = Timing::from_samples(vec![3.0, 1.0, 2.0, 10.0]).unwrap();
        assert_eq!((t.median_ms, t.min_ms, t.max_ms, t.reps), (2.5, 1.0, 10.0, 4));
        assert!((t.spread() - 3.6).abs() < 1e-12);
        assert_eq!(Timing::from_samples(vec![5.0]).unwrap().median_ms, 5.0);
        assert!(Timing::from_samples(vec![]).is_none());
    }

    #[test]
    fn warm_up_stops_once_three_windows_agree() {
        assert!(!is_steady(&[1.0, 1.0]), "two windows are not enough");
        assert!(is_steady(&[3.0, 1.0, 1.01, 1.02]));
        assert!(!is_steady(&[3.0, 1.5, 1.0, 1.0]), "still faster than the window before last");
        assert!(!is_steady(&[1.0, 1.0, 1.03]), "slower by more than 2%");
    }
}
