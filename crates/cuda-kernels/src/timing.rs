//! Timing with CUDA events: warm-up launches first, then one event pair per repetition.

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
}
