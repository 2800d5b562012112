//! SVG charts of measured results, drawn with plotters (text in the embedded DejaVu Sans, so the
//! output is the same on every machine).

use std::sync::Once;

use plotters::{
    prelude::*,
    style::text_anchor::{HPos, Pos, VPos},
};

use crate::figures::Series;

/// A chart a lesson declares: bars of some of its measured series. The lesson's run
/// (`cargo xtask lesson N --plots DIR`) and the book's results page both draw it with [`Chart::plot`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chart {
    /// The SVG file's name.
    pub file: &'static str,
    pub title: &'static str,
    pub value_label: &'static str,
    /// Keys of the lesson's series, in legend order.
    pub series: &'static [&'static str],
}

impl Chart {
    /// The chart's series that `available` has, and the keys it lacks.
    pub fn pick<'a>(&self, available: &'a [Series]) -> (Vec<&'a Series>, Vec<&'static str>) {
        let find = |key: &&str| available.iter().find(|s| s.key == *key);
        let present = self.series.iter().filter_map(find).collect();
        let missing = self.series.iter().filter(|key| find(key).is_none()).copied().collect();
        (present, missing)
    }

    /// The chart drawn from `available`, titled for the GPU that measured it; `None` when none of
    /// its series is there.
    pub fn plot(&self, gpu: &str, available: &[Series]) -> Result<Option<Plot>, String> {
        let (present, _) = self.pick(available);
        if present.is_empty() {
            return Ok(None);
        }
        let svg = grouped_bars(&format!("{} on the {gpu}", self.title), self.value_label, &present)?;
        Ok(Some(Plot { file: self.file.to_owned(), svg }))
    }
}

/// One chart, ready to write as `file`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plot {
    pub file: String,
    pub svg: String,
}

const COLORS: [RGBColor; 4] =
    [RGBColor(31, 119, 180), RGBColor(255, 127, 14), RGBColor(44, 160, 44), RGBColor(214, 39, 40)];

const WIDTH: u32 = 900;
const LABEL_SIZE: u32 = 14;
/// A generous width of one character of the labels, to decide whether they fit side by side.
const LABEL_CHAR_WIDTH: u32 = 8;

fn register_font() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        // The bytes are a valid TrueType font shipped by the dejavu crate.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular());
    });
}

/// Grouped bars: one group per point name, in the order the series first name them, and one bar
/// per series in each group (none where a series has no point of that name). Short names stand
/// under vertical bars; long ones (kernel names) beside horizontal bars, where they fit.
pub fn grouped_bars(title: &str, value_label: &str, series: &[&Series]) -> Result<String, String> {
    register_font();
    let mut categories: Vec<&str> = Vec::new();
    for point in series.iter().flat_map(|s| &s.points) {
        if !categories.contains(&point.at.as_str()) {
            categories.push(&point.at);
        }
    }
    let top = series.iter().flat_map(|s| s.points.iter().map(|p| p.value)).fold(0.0f64, f64::max) * 1.25;
    let groups = categories.len() as f64;
    let longest = categories.iter().map(|c| c.chars().count() as u32).max().unwrap_or(0);
    let horizontal = longest * LABEL_CHAR_WIDTH > (WIDTH - 100) / categories.len().max(1) as u32;
    // Horizontal bars leave one empty group at the bottom for the legend; vertical ones stay
    // below 80% of the height, under it.
    let axis_end = if horizontal { groups + 1.0 } else { groups };
    let height = if horizontal { 120 + 34 * axis_end as u32 * series.len().max(1) as u32 } else { 420 };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut builder = ChartBuilder::on(&root);
        builder.caption(title, ("sans-serif", 22)).margin(12);
        let label_area = if horizontal { 20 + longest * 7 } else { 60 };
        if horizontal {
            builder.x_label_area_size(40).y_label_area_size(label_area);
        } else {
            builder.x_label_area_size(40).y_label_area_size(60);
        }
        // Values run along x for horizontal bars, along y for vertical ones.
        let (x_range, y_range) =
            if horizontal { (0.0..top.max(1e-9), 0.0..axis_end) } else { (0.0..groups, 0.0..top.max(1e-9)) };
        let mut chart = builder.build_cartesian_2d(x_range, y_range).map_err(|e| e.to_string())?;
        let mut mesh = chart.configure_mesh();
        mesh.label_style(("sans-serif", LABEL_SIZE)).axis_desc_style(("sans-serif", 15));
        if horizontal {
            mesh.disable_y_mesh().y_labels(0).x_desc(value_label);
        } else {
            mesh.disable_x_mesh().x_labels(0).y_desc(value_label);
        }
        mesh.draw().map_err(|e| e.to_string())?;
        // Each category owns one unit of the category axis; its bars share the middle 80% of it.
        // Horizontal groups run from the top down, in reading order.
        let width = 0.8 / series.len().max(1) as f64;
        let bar = move |category: usize, index: usize, value: f64| {
            let start = category as f64 + 0.1 + width * index as f64;
            let end = start + width * 0.95;
            if horizontal {
                let (low, high) = (axis_end - end, axis_end - start);
                [(0.0, low), (value, high)]
            } else {
                [(start, 0.0), (end, value)]
            }
        };
        for (index, one) in series.iter().enumerate() {
            let color = COLORS[index % COLORS.len()];
            let bars = one.points.iter().filter_map(|point| {
                let category = categories.iter().position(|c| *c == point.at)?;
                Some(Rectangle::new(bar(category, index, point.value), color.filled()))
            });
            chart
                .draw_series(bars)
                .map_err(|e| e.to_string())?
                .label(one.label.clone())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
        }
        let font = ("sans-serif", LABEL_SIZE).into_font();
        let labels = categories.iter().enumerate().map(|(category, name)| {
            let middle = category as f64 + 0.5;
            let (at, offset, anchor) = if horizontal {
                ((0.0, axis_end - middle), (-8, 0), Pos::new(HPos::Right, VPos::Center))
            } else {
                ((middle, 0.0), (0, 8), Pos::new(HPos::Center, VPos::Top))
            };
            EmptyElement::at(at) + Text::new(name.to_string(), offset, TextStyle::from(font.clone()).pos(anchor))
        });
        chart.draw_series(labels).map_err(|e| e.to_string())?;
        chart
            .configure_series_labels()
            .label_font(("sans-serif", LABEL_SIZE))
            .position(if horizontal { SeriesLabelPosition::LowerRight } else { SeriesLabelPosition::UpperRight })
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::Point;

    fn series(label: &str, points: &[(&str, f64)]) -> Series {
        Series {
            key: label.replace(' ', "_"),
            label: label.into(),
            unit: "x".into(),
            points: points.iter().map(|&(at, value)| Point { at: at.into(), value }).collect(),
        }
    }

    fn drawn(svg: &str, text: &str) -> bool {
        svg.contains(&format!(">\n{text}\n</text>"))
    }

    /// The `text-anchor` of the label `text`: `end` beside a bar, `middle` under one.
    fn anchor<'a>(svg: &'a str, text: &str) -> &'a str {
        let end = svg.find(&format!(">\n{text}\n</text>")).unwrap_or_else(|| panic!("{text} is drawn"));
        let tag = &svg[svg[..end].rfind("<text").expect("a text element")..end];
        tag.split("text-anchor=\"").nth(1).and_then(|rest| rest.split('"').next()).unwrap_or("start")
    }

    #[test]
    fn draws_every_bar_and_label() {
        let time = series("time", &[("a", 1.0), ("b", 1.28), ("c", 1.0)]);
        let occupancy = series("occupancy", &[("a", 1.0), ("c", 1.0)]);
        let svg = grouped_bars("padding", "ratio", &[&time, &occupancy]).unwrap();
        assert!(svg.starts_with("<svg"));
        for text in ["padding", "ratio", "time", "occupancy", "a", "b", "c"] {
            assert!(drawn(&svg, text), "{text} is drawn");
        }
        // 3 + 2 bars plus 2 legend swatches, each a filled rect in its series colour; the second
        // series has no bar at b.
        assert_eq!(svg.matches("fill=\"#1F77B4\"").count(), 3 + 1);
        assert_eq!(svg.matches("fill=\"#FF7F0E\"").count(), 2 + 1);
    }

    #[test]
    fn long_names_get_horizontal_bars() {
        let names = ["device-to-device copy (cuMemcpyDtoD)", "naive transpose", "shared tile [32][33]"];
        let bandwidth = series("GB/s", &names.map(|n| (n, 100.0)));
        let svg = grouped_bars("transpose", "GB/s", &[&bandwidth]).unwrap();
        assert!(names.iter().all(|name| anchor(&svg, name) == "end"), "names stand right-aligned beside the bars");
        let short = grouped_bars("stride", "x", &[&series("x", &[("1", 1.0), ("32", 31.4)])]).unwrap();
        assert_eq!(anchor(&short, "32"), "middle", "short names stand centred under the bars");
    }
}
