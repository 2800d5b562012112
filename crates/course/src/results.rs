//! The book's results file (`cargo xtask results` writes it), and the page the book renders from it.
//!
//! The file is versioned (`schema`) JSON: where and when it was measured, and every lesson's
//! headline figures and measured series from one timing run. `cargo xtask book` turns it into a
//! Markdown table and SVG charts.

use std::{fs, path::Path};

use anyhow::{Context, bail};
use cuda_kernels::GpuInfo;
use lesson_kit::Series;
use serde::{Deserialize, Serialize};

use crate::LESSONS;

/// Bumped whenever the file's fields change meaning. Schema 2 added `series`; a file of schema 1
/// (figures only) still reads, and its charts say that they are not measured yet.
pub const SCHEMA: u32 = 2;
const OLDEST_READABLE_SCHEMA: u32 = 1;

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
    pub figures: Vec<StoredFigure>,
    #[serde(default)]
    pub series: Vec<LessonSeries>,
}

/// A lesson's measured series, as the results file stores it.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct LessonSeries {
    pub lesson: u32,
    #[serde(flatten)]
    pub series: Series,
}

/// A lesson's headline figure, as `bench` prints it and the results file stores it.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct StoredFigure {
    pub lesson: u32,
    pub key: String,
    pub label: String,
    pub value: f64,
    pub unit: String,
}

impl From<(u32, lesson_kit::Figure)> for StoredFigure {
    fn from((lesson, f): (u32, lesson_kit::Figure)) -> Self {
        StoredFigure { lesson, key: f.key.to_owned(), label: f.label, value: f.value, unit: f.unit.to_owned() }
    }
}

impl StoredFigure {
    /// The value as tables show it: whole numbers from 100 up, two decimals below.
    pub fn value_text(&self) -> String {
        if self.value >= 100.0 { format!("{:.0}", self.value) } else { format!("{:.2}", self.value) }
    }
}

impl Results {
    /// One timing run of every lesson on `gpu`, dated today.
    pub fn new(gpu: &GpuInfo, figures: Vec<(u32, lesson_kit::Figure)>, series: Vec<(u32, Series)>) -> Results {
        Results {
            schema: SCHEMA,
            date: today(),
            gpu: gpu.name.clone(),
            arch: gpu.arch(),
            driver: cuda_kernels::driver_version(),
            cuda: gpu.driver_cuda_version.clone(),
            figures: figures.into_iter().map(StoredFigure::from).collect(),
            series: series.into_iter().map(|(lesson, series)| LessonSeries { lesson, series }).collect(),
        }
    }

    pub fn write(&self, file: &Path) -> anyhow::Result<()> {
        fs::write(file, serde_json::to_string_pretty(self)? + "\n")
            .with_context(|| format!("cannot write {}", file.display()))
    }

    /// The results file at `path`, `None` when there is none.
    pub fn read(path: &Path) -> anyhow::Result<Option<Results>> {
        let Ok(text) = fs::read_to_string(path) else { return Ok(None) };
        let results: Results =
            serde_json::from_str(&text).with_context(|| format!("{} is not a results file", path.display()))?;
        if !(OLDEST_READABLE_SCHEMA..=SCHEMA).contains(&results.schema) {
            bail!(
                "{} has schema {}, this course reads {OLDEST_READABLE_SCHEMA} to {SCHEMA}: run `cargo xtask results`",
                path.display(),
                results.schema
            );
        }
        Ok(Some(results))
    }
}

/// The results page (`results.md`): a table of the figures, then every lesson's charts, or a line
/// saying which series a chart lacks; and the charts' SVG files.
pub fn render(results: &Results) -> anyhow::Result<Vec<(String, String)>> {
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
    page.push_str("\n## Charts\n");
    let mut files = Vec::new();
    for lesson in LESSONS {
        let measured: Vec<Series> =
            results.series.iter().filter(|s| s.lesson == lesson.number()).map(|s| s.series.clone()).collect();
        for chart in lesson.charts() {
            page.push_str(&format!("\n### {}\n\n", chart.title));
            if let Some(plot) =
                chart.plot(&results.gpu, &measured).map_err(|e| anyhow::anyhow!("drawing {}: {e}", chart.file))?
            {
                page.push_str(&format!("![{}](generated/{})\n", chart.title, plot.file));
                files.push((plot.file, plot.svg));
            }
            let (present, missing) = chart.pick(&measured);
            if !missing.is_empty() {
                let missing: Vec<String> =
                    missing.iter().map(|key| format!("`{key}` (lesson {})", lesson.number())).collect();
                page.push_str(&format!(
                    "{}This results file has no series {} yet; `cargo xtask results` on a GPU writes one that has.\n",
                    if present.is_empty() { "" } else { "\n" },
                    missing.join(", ")
                ));
            }
        }
    }
    files.insert(0, ("results.md".to_owned(), page));
    Ok(files)
}

/// Today's date in UTC, from the system clock (days since 1970 to a civil date).
pub fn today() -> String {
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
    use lesson_kit::Point;

    use super::*;

    fn results(series: Vec<LessonSeries>) -> Results {
        Results {
            schema: SCHEMA,
            date: "2026-01-02".into(),
            gpu: "Test GPU".into(),
            arch: "sm_90".into(),
            driver: None,
            cuda: "13.0".into(),
            figures: vec![StoredFigure {
                lesson: 1,
                key: "k".into(),
                label: "a figure".into(),
                value: 2.5,
                unit: "x".into(),
            }],
            series,
        }
    }

    fn series(lesson: u32, key: &str, points: &[(&str, f64)]) -> LessonSeries {
        let points = points.iter().map(|&(at, value)| Point { at: at.into(), value }).collect();
        LessonSeries { lesson, series: Series { key: key.into(), label: key.into(), unit: "x".into(), points } }
    }

    #[test]
    fn schema_1_files_read_without_series() {
        let text = r#"{"schema":1,"date":"2026-01-02","gpu":"G","arch":"sm_90","driver":null,"cuda":"13.0",
            "figures":[{"lesson":1,"key":"k","label":"l","value":1.0,"unit":"x"}]}"#;
        let old: Results = serde_json::from_str(text).unwrap();
        assert_eq!((old.schema, old.series.len(), old.figures.len()), (1, 0, 1));
        let new = results(vec![series(3, "transpose_bandwidth", &[("copy", 2900.0)])]);
        let round_trip: Results = serde_json::from_str(&serde_json::to_string(&new).unwrap()).unwrap();
        assert_eq!(round_trip, new);
    }

    #[test]
    fn charts_draw_what_the_file_has_and_name_what_it_lacks() {
        let pages = render(&results(vec![
            series(1, "stride_slowdown_throughput", &[("1", 1.0), ("2", 2.0), ("32", 31.4)]),
            series(3, "transpose_bandwidth", &[("copy", 2900.0), ("naive", 476.0)]),
        ]))
        .unwrap();
        let names: Vec<&str> = pages.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["results.md", "lesson-01-stride-slowdown.svg", "lesson-03-transpose.svg"]);
        let page = &pages[0].1;
        assert!(page.contains("| 1 | a figure | 2.50 | x |"), "{page}");
        assert!(page.contains("![Transpose bandwidth by variant](generated/lesson-03-transpose.svg)"), "{page}");
        assert!(page.contains("no series `stride_slowdown_latency` (lesson 1) yet"), "{page}");
        assert!(page.contains("no series `gemm_gflops` (lesson 4)"), "{page}");
        assert!(page.contains("no series `padding_time_ratio` (lesson 5), `padding_occupancy` (lesson 5)"), "{page}");
        assert!(pages[2].1.contains("Transpose bandwidth by variant on the Test GPU"));
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(11_016), "2000-02-29");
        assert_eq!(civil_date(20_414), "2025-11-22");
    }
}
