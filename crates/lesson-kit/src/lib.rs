//! What every lesson shares: the report it prints, the bank grid, and the run that puts the
//! model's prediction, Nsight Compute's counters and the clock side by side.

pub mod bank_table;
pub mod lesson;
pub mod plot;
pub mod report;
pub mod words_kernel;

pub use lesson::{
    DeclaredAccess, Figure, KernelRun, Lesson, Measured, OutputCheck, Point, Prepared, Series, Size, TimeRatio,
};
pub use report::{Report, Styled, Tone, styled};
