//! The per-bank table: 32 banks as a 4 x 8 grid (on a terminal; in the book a grid of boxes that
//! reflows), each cell the distinct words it serves and the lanes that asked for them.

use bank_model::{
    Analysis, BANKS, Request,
    describe::{BankUse, lane_ranges, summary},
};

use crate::report::{Report, Styled, Tone, styled};

const COLUMNS: u32 = 8;

/// Adds the bank grid of one instruction to `report`.
pub fn add_bank_grid(report: &mut Report, request: &Request, analysis: &Analysis) {
    report.text(summary(request, analysis));
    let header = (0..COLUMNS).map(|c| format!("bank +{c}"));
    let rows = (0..BANKS / COLUMNS)
        .map(|row| (0..COLUMNS).map(|column| bank_cell(analysis, row * COLUMNS + column)).collect())
        .collect();
    report.grid(header, rows);
}

fn bank_cell(analysis: &Analysis, bank: u32) -> Styled {
    let BankUse { words, lanes, most_words_in_one_pass, .. } = analysis.bank_use(bank);
    if lanes.is_empty() {
        return styled(format!("{bank:>2}: -"), Tone::Plain);
    }
    let tone = Tone::of_wavefronts(most_words_in_one_pass, 1);
    styled(format!("{bank:>2}: {}w\nL{}", words.len(), lane_ranges(lanes)), tone)
}
