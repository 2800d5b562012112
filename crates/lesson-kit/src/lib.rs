//! What every lesson shares: the shape of a lesson, the run that puts the model's prediction,
//! Nsight Compute's counters and the clock side by side, and the report, tables and charts it
//! prints.

pub mod any_lesson;
pub mod bank_table;
pub mod cells;
pub mod chart;
pub mod declarations;
pub mod figures;
pub mod floats;
pub mod lesson;
pub mod mismatch;
pub mod reconcile;
pub mod report;
pub mod runner;
pub mod words_kernel;

pub use any_lesson::AnyLesson;
pub use chart::Chart;
pub use figures::{Figure, Point, Series};
pub use lesson::{DeclaredAccess, KernelRun, Lesson, OutputCheck, Prepared, RunSize, TimeRatio, TimedRun};
pub use report::{Report, Styled, Tone, styled};
