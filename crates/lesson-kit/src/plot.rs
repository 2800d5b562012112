//! SVG charts of measured results, drawn with plotters (text in the embedded DejaVu Sans, so the
//! output is the same on every machine).

use std::sync::Once;

use plotters::{
    prelude::*,
    style::text_anchor::{HPos, Pos, VPos},
};

/// One chart, ready to write as `file`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plot {
    pub file: String,
    pub svg: String,
}

/// Bars of one series, one value per category.
pub struct Series {
    pub label: String,
    pub values: Vec<f64>,
}

const COLORS: [RGBColor; 4] =
    [RGBColor(31, 119, 180), RGBColor(255, 127, 14), RGBColor(44, 160, 44), RGBColor(214, 39, 40)];

fn register_font() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        // The bytes are a valid TrueType font shipped by the dejavu crate.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular());
    });
}

/// Grouped bars: for each category, one bar per series.
pub fn grouped_bars(title: &str, y_label: &str, categories: &[String], series: &[Series]) -> Result<String, String> {
    register_font();
    let top = series.iter().flat_map(|s| s.values.iter().copied()).fold(0.0f64, f64::max) * 1.25;
    let groups = categories.len() as f64;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 420)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..groups, 0.0..top.max(1e-9))
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc(y_label)
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 15))
            .draw()
            .map_err(|e| e.to_string())?;
        // Each category owns one unit of the x axis; its bars share the middle 80% of it.
        let width = 0.8 / series.len().max(1) as f64;
        for (index, one) in series.iter().enumerate() {
            let color = COLORS[index % COLORS.len()];
            let bars = one.values.iter().enumerate().map(move |(category, &value)| {
                let left = category as f64 + 0.1 + width * index as f64;
                Rectangle::new([(left, 0.0), (left + width * 0.95, value)], color.filled())
            });
            chart
                .draw_series(bars)
                .map_err(|e| e.to_string())?
                .label(one.label.clone())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
        }
        let label_style = TextStyle::from(("sans-serif", 14).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
        chart
            .draw_series(categories.iter().enumerate().map(|(category, name)| {
                EmptyElement::at((category as f64 + 0.5, 0.0)) + Text::new(name.clone(), (0, 8), label_style.clone())
            }))
            .map_err(|e| e.to_string())?;
        chart
            .configure_series_labels()
            .label_font(("sans-serif", 14))
            .position(SeriesLabelPosition::UpperRight)
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

    #[test]
    fn draws_every_bar_and_label() {
        let categories: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        let series = [
            Series { label: "time".into(), values: vec![1.0, 1.28, 1.0] },
            Series { label: "occupancy".into(), values: vec![1.0, 1.0, 1.0] },
        ];
        let svg = grouped_bars("padding", "ratio", &categories, &series).unwrap();
        assert!(svg.starts_with("<svg"));
        for text in ["padding", "ratio", "time", "occupancy", "a", "b", "c"] {
            assert!(svg.contains(&format!(">\n{text}\n</text>")), "{text} is drawn");
        }
        // 6 bars plus 2 legend swatches, each a filled rect in its series colour.
        assert_eq!(svg.matches("fill=\"#1F77B4\"").count(), 3 + 1);
        assert_eq!(svg.matches("fill=\"#FF7F0E\"").count(), 3 + 1);
    }
}
