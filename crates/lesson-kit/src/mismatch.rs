//! A difference between what a run declared and what ncu counted, and the table that shows them.

use serde::Serialize;

use crate::report::Report;

/// One difference between a run's declared accesses and ncu's counts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Mismatch {
    pub run: String,
    /// The declared accesses concerned, as the source writes them.
    pub access: String,
    pub declared: String,
    pub measured: String,
}

/// The mismatches as a plain table, for error messages.
pub fn mismatch_table(mismatches: &[Mismatch]) -> String {
    let mut report = Report::default();
    let rows = mismatches
        .iter()
        .map(|m| {
            vec![
                m.run.as_str().into(),
                m.access.as_str().into(),
                m.declared.as_str().into(),
                m.measured.as_str().into(),
            ]
        })
        .collect();
    report.table(["kernel run", "access", "declared", "ncu measured"], rows);
    report.render(false)
}
