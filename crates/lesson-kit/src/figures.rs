//! What a lesson's GPU run reports besides its tables: headline figures and measured series.

use serde::{Deserialize, Serialize};

/// One headline number of a lesson's GPU run, for `cargo xtask bench` and the results file.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Figure {
    /// Stable identifier, e.g. `stride32_slowdown_throughput`.
    pub key: &'static str,
    pub label: String,
    pub value: f64,
    pub unit: &'static str,
}

/// Measured values of one quantity along one axis (per stride, per variant, per kernel), for the
/// book's charts and the results file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Stable identifier, e.g. `stride_slowdown_throughput`.
    pub key: String,
    /// What the values are, as a chart's legend says it.
    pub label: String,
    pub unit: String,
    /// In the order a chart shows them.
    pub points: Vec<Point>,
}

/// One value of a [`Series`] and where it stands on the axis: a stride, a variant, a kernel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub at: String,
    pub value: f64,
}
