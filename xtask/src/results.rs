//! `cargo xtask results`: the book's results file, and the page the book renders from it.
//!
//! The file is versioned (`schema`) JSON: where and when it was measured, and every lesson's
//! headline figures from one timing run. `cargo xtask book` turns it into a Markdown table.

use std::{fs, io::Write, path::Path, process::ExitCode};

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

use crate::{lessons, workspace_root};

/// Bumped whenever the file's fields change meaning.
pub const SCHEMA: u32 = 1;

/// The results file's path in the book.
pub const BOOK_FILE: &str = "book/src/measured/results.json";

#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct Results {
    pub schema: u32,
    /// Day of the run, `YYYY-MM-DD` (UTC).
    pub date: String,
    pub gpu: String,
    pub arch: String,
    pub driver: Option<String>,
    pub cuda: String,
    pub figures: Vec<Figure>,
}

/// A lesson's headline figure, as `bench` prints it and the results file stores it.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct Figure {
    pub lesson: u32,
    pub key: String,
    pub label: String,
    pub value: f64,
    pub unit: String,
}

impl From<(u32, lesson_kit::Figure)> for Figure {
    fn from((lesson, f): (u32, lesson_kit::Figure)) -> Self {
        Figure { lesson, key: f.key.to_owned(), label: f.label, value: f.value, unit: f.unit.to_owned() }
    }
}

impl Figure {
    /// The value as tables show it: whole numbers from 100 up, two decimals below.
    pub fn value_text(&self) -> String {
        if self.value >= 100.0 { format!("{:.0}", self.value) } else { format!("{:.2}", self.value) }
    }
}

/// Measures on this machine's GPU and writes the file.
pub fn write(file: &Path, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let (gpu, figures) = match lessons::measure_figures()? {
        Ok(measured) => measured,
        Err(why) => bail!("results need a GPU: {why}"),
    };
    let results = Results {
        schema: SCHEMA,
        date: today(),
        gpu: gpu.name.clone(),
        arch: gpu.arch(),
        driver: cuda_kernels::driver_version(),
        cuda: gpu.driver_cuda_version.clone(),
        figures: figures.into_iter().map(Figure::from).collect(),
    };
    fs::write(file, serde_json::to_string_pretty(&results)? + "\n")
        .with_context(|| format!("cannot write {}", file.display()))?;
    writeln!(out, "{} figures from {} written to {}", results.figures.len(), results.gpu, file.display())?;
    Ok(ExitCode::SUCCESS)
}

/// The book's page for the results file, or `None` when the file is absent.
pub fn page() -> anyhow::Result<Option<String>> {
    let path = workspace_root().join(BOOK_FILE);
    let Ok(text) = fs::read_to_string(&path) else { return Ok(None) };
    let results: Results =
        serde_json::from_str(&text).with_context(|| format!("{} is not a results file", path.display()))?;
    if results.schema != SCHEMA {
        bail!(
            "{} has schema {}, this course reads {SCHEMA}: run `cargo xtask results`",
            path.display(),
            results.schema
        );
    }
    let mut page = format!(
        "Measured on an {} ({}), driver {}, CUDA {}, on {}.\n\n| lesson | figure | value | unit |\n| --- | --- | --- | --- |\n",
        results.gpu,
        results.arch,
        results.driver.as_deref().unwrap_or("unknown"),
        results.cuda,
        results.date
    );
    for f in &results.figures {
        page.push_str(&format!("| {} | {} | {} | {} |\n", f.lesson, f.label, f.value_text(), f.unit));
    }
    Ok(Some(page))
}

/// Today's date in UTC, from the system clock (days since 1970 to a civil date).
fn today() -> String {
    let days = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() / 86_400);
    civil_date(days as i64)
}

/// Howard Hinnant's days-to-civil algorithm.
fn civil_date(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(11_016), "2000-02-29");
        assert_eq!(civil_date(20_414), "2025-11-22");
    }
}
