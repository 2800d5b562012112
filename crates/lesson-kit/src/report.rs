//! What a lesson prints: headings, paragraphs and tables, rendered with colour on a terminal and
//! plain when piped.

use comfy_table::{Cell, Color, ContentArrangement, Table, presets};

/// How much a cell should stand out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    Plain,
    Good,
    Warn,
    Bad,
}

impl Tone {
    fn color(self) -> Option<Color> {
        match self {
            Tone::Plain => None,
            Tone::Good => Some(Color::Green),
            Tone::Warn => Some(Color::Yellow),
            Tone::Bad => Some(Color::Red),
        }
    }

    /// The tone of a wavefront count against the ideal.
    pub fn of_wavefronts(wavefronts: u32, ideal: u32) -> Tone {
        match wavefronts {
            w if w <= ideal => Tone::Good,
            w if w <= 2 * ideal => Tone::Warn,
            _ => Tone::Bad,
        }
    }
}

/// One table cell: text and tone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Styled {
    pub text: String,
    pub tone: Tone,
}

impl<T: ToString> From<T> for Styled {
    fn from(text: T) -> Self {
        Styled { text: text.to_string(), tone: Tone::Plain }
    }
}

pub fn styled(text: impl ToString, tone: Tone) -> Styled {
    Styled { text: text.to_string(), tone }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Block {
    Heading(String),
    Text(String),
    Table {
        header: Vec<String>,
        rows: Vec<Vec<Styled>>,
    },
    /// A grid of labelled cells (the 32 banks): a table on a terminal, a wrapping grid of boxes in
    /// the book, whose columns follow the width of the page.
    Grid {
        header: Vec<String>,
        rows: Vec<Vec<Styled>>,
    },
}

/// A lesson's output, built once and rendered for a terminal or a pipe.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    blocks: Vec<Block>,
}

impl Report {
    pub fn heading(&mut self, text: impl Into<String>) {
        self.blocks.push(Block::Heading(text.into()));
    }

    pub fn text(&mut self, text: impl Into<String>) {
        self.blocks.push(Block::Text(text.into()));
    }

    pub fn table<H: ToString>(&mut self, header: impl IntoIterator<Item = H>, rows: Vec<Vec<Styled>>) {
        let header = header.into_iter().map(|h| h.to_string()).collect();
        self.blocks.push(Block::Table { header, rows });
    }

    /// A grid whose cells read `label: text`, the label the cell's own (a bank number): rendered
    /// as a table on a terminal, and in the book as boxes that reflow on a narrow page.
    pub fn grid<H: ToString>(&mut self, header: impl IntoIterator<Item = H>, rows: Vec<Vec<Styled>>) {
        let header = header.into_iter().map(|h| h.to_string()).collect();
        self.blocks.push(Block::Grid { header, rows });
    }

    /// Renders the report; `color` turns on ANSI colours and bold headings.
    pub fn render(&self, color: bool) -> String {
        let mut out = String::new();
        for block in &self.blocks {
            match block {
                Block::Heading(text) if color => out.push_str(&format!("\n\x1b[1m{text}\x1b[0m\n")),
                Block::Heading(text) => out.push_str(&format!("\n{text}\n{}\n", "=".repeat(text.chars().count()))),
                Block::Text(text) => out.push_str(&format!("{text}\n")),
                Block::Table { header, rows } | Block::Grid { header, rows } => {
                    out.push_str(&render_table(header, rows, color));
                    out.push('\n');
                }
            }
        }
        out
    }
}

impl Report {
    /// The same content as Markdown, for the book.
    pub fn render_markdown(&self) -> String {
        let mut out = String::new();
        for block in &self.blocks {
            match block {
                Block::Heading(text) => out.push_str(&format!("#### {text}\n\n")),
                Block::Text(text) => out.push_str(&format!("{}\n\n", text.replace('\n', " "))),
                Block::Table { header, rows } => {
                    let rows: Vec<Vec<String>> =
                        rows.iter().map(|row| row.iter().map(|c| c.text.clone()).collect()).collect();
                    out.push_str(&html_table(header, &rows, "model"));
                }
                Block::Grid { rows, .. } => out.push_str(&grid_html(rows)),
            }
        }
        out
    }
}

/// Escapes text for HTML, quotes included (it may stand in an attribute).
fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A cell's text as HTML: escaped, its `code` spans set as code, its lines kept.
fn cell_html(text: &str) -> String {
    let escaped = escape_html(text);
    let mut html = String::new();
    for (n, part) in escaped.split('`').enumerate() {
        // Odd parts lie between backticks; a lone backtick at the end is kept as it is.
        if n % 2 == 1 && escaped.matches('`').count() > n {
            html.push_str(&format!("<code>{part}</code>"));
        } else {
            if n % 2 == 1 {
                html.push('`');
            }
            html.push_str(part);
        }
    }
    html.replace('\n', "<br>")
}

/// A table as HTML for the book, of class `class`: each cell carries its column's name
/// (`data-label`), so that on a narrow page the book's stylesheet can set a wide table's rows
/// out as lines of labelled figures instead of hiding columns behind a scroll bar. A table of
/// five columns or more is `wide`. A cell of prose (a sentence, where the others hold figures) is
/// `prose`, which the stylesheet lets wrap.
pub fn html_table(header: &[String], rows: &[Vec<String>], class: &str) -> String {
    let wide = if header.len() >= 5 { " wide" } else { "" };
    let head: String = header.iter().map(|h| format!("<th>{}</th>", cell_html(h))).collect();
    let body: Vec<String> = rows
        .iter()
        .map(|row| {
            let cells: String = row
                .iter()
                .enumerate()
                .map(|(column, cell)| {
                    let label = header.get(column).map(|h| escape_html(&h.replace('`', ""))).unwrap_or_default();
                    let prose =
                        if cell.chars().count() > PROSE_CELL && cell.contains(' ') { " class=\"prose\"" } else { "" };
                    format!("<td{prose} data-label=\"{label}\">{}</td>", cell_html(cell))
                })
                .collect();
            format!("<tr>{cells}</tr>")
        })
        .collect();
    format!(
        "<div class=\"table-wrapper\"><table class=\"{class}{wide}\">\n<thead><tr>{head}</tr></thead>\n<tbody>\n{}\n</tbody></table></div>\n\n",
        body.join("\n")
    )
}

/// A cell longer than this, with spaces, is prose: figures and names are shorter.
const PROSE_CELL: usize = 60;

/// Lines of a paragraph shorter than this were ended on purpose, not wrapped.
const SHORT_LINE: usize = 72;

/// The cells of one table row, `│ a ┆ b │`.
fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('│').trim_end_matches('│');
    inner.split('┆').map(|cell| cell.trim().to_owned()).collect()
}

/// A report's plain rendering ([`Report::render`] without colour, as a lesson's output is saved
/// in `book/src/measured/`) read back as HTML for the book: titles underlined with `=` in bold,
/// paragraphs, comfy-table tables (`┌`, `│ a ┆ b │`, `╞`, `└`) as [`html_table`]s of class
/// `measured`; blocks separated by blank lines so that Markdown leaves them be. Each title starts
/// a part between `ANCHOR: part-N` and `ANCHOR_END: part-N` comments, so that a chapter can include
/// one part.
pub fn plain_output_as_html(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::new();
    let mut paragraph: Vec<&str> = Vec::new();
    let mut part = 0;
    let flush = |paragraph: &mut Vec<&str>, out: &mut String| {
        if !paragraph.is_empty() {
            // The terminal wraps a paragraph's lines near 90 characters; a shorter line ended
            // where the lesson ended it (the GPU's line, before the verdict on the outputs).
            let mut text = String::new();
            for (n, line) in paragraph.iter().enumerate() {
                if n > 0 {
                    text.push_str(if paragraph[n - 1].chars().count() < SHORT_LINE { "<br>" } else { " " });
                }
                text.push_str(&escape_html(line));
            }
            out.push_str(&format!("<p class=\"measured-note\">{text}</p>\n\n"));
            paragraph.clear();
        }
    };
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let underline = lines.get(i + 1).is_some_and(|next| {
            !next.is_empty() && next.chars().all(|c| c == '=') && next.chars().count() == line.chars().count()
        });
        if underline {
            flush(&mut paragraph, &mut out);
            if part > 0 {
                out.push_str(&format!("<!-- ANCHOR_END: part-{part} -->\n\n"));
            }
            part += 1;
            out.push_str(&format!("<!-- ANCHOR: part-{part} -->\n\n"));
            out.push_str(&format!("<p class=\"measured-title\"><strong>{}</strong></p>\n\n", escape_html(line)));
            i += 2;
        } else if line.starts_with('┌') {
            flush(&mut paragraph, &mut out);
            let mut header = Vec::new();
            let mut rows = Vec::new();
            i += 1;
            while i < lines.len() && !lines[i].starts_with('└') {
                if lines[i].starts_with('│') {
                    if header.is_empty() { header = cells(lines[i]) } else { rows.push(cells(lines[i])) }
                }
                i += 1;
            }
            i += 1;
            out.push_str(&html_table(&header, &rows, "measured"));
        } else if line.trim().is_empty() {
            flush(&mut paragraph, &mut out);
            i += 1;
        } else {
            paragraph.push(line.trim());
            i += 1;
        }
    }
    flush(&mut paragraph, &mut out);
    if part > 0 {
        out.push_str(&format!("<!-- ANCHOR_END: part-{part} -->\n"));
    }
    out
}

/// A grid as HTML for the book: one box per cell, `label` in bold, each line of the text on a line
/// of its own, lists breakable after their commas; the tone a class the book's stylesheet colours.
fn grid_html(rows: &[Vec<Styled>]) -> String {
    let escape = |text: &str| text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    let cells: Vec<String> = rows
        .iter()
        .flatten()
        .map(|cell| {
            let (label, text) = cell.text.split_once(':').unwrap_or(("", &cell.text));
            let text = text.trim();
            let tone = match cell.tone {
                _ if text == "-" => "idle",
                Tone::Plain => "plain",
                Tone::Good => "good",
                Tone::Warn => "warn",
                Tone::Bad => "bad",
            };
            let lines: Vec<String> = text.lines().map(|line| escape(line).replace(',', ",<wbr>")).collect();
            format!("<div class=\"bank {tone}\"><b>{}</b> {}</div>", escape(label.trim()), lines.join("<br>"))
        })
        .collect();
    format!("<div class=\"bank-grid\">\n{}\n</div>\n\n", cells.join("\n"))
}

fn render_table(header: &[String], rows: &[Vec<Styled>], color: bool) -> String {
    let mut table = Table::new();
    table.load_style(presets::UTF8_FULL_CONDENSED).set_content_arrangement(ContentArrangement::Disabled);
    if color {
        table.enforce_styling();
    } else {
        table.force_no_tty();
    }
    table.set_header(header);
    for row in rows {
        table.add_row(row.iter().map(|cell| {
            let plain = Cell::new(&cell.text);
            match cell.tone.color() {
                Some(c) if color => plain.fg(c),
                _ => plain,
            }
        }));
    }
    table.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_rendering_has_no_escape_codes_and_colour_has_them() {
        let mut report = Report::default();
        report.heading("Banks");
        report.table(["stride", "wavefronts"], vec![vec!["32".into(), styled(32, Tone::Bad)]]);
        let plain = report.render(false);
        assert!(plain.contains("Banks\n====="), "{plain}");
        assert!(plain.contains("│ 32     ┆ 32         │"), "{plain}");
        assert!(!plain.contains('\x1b'));
        assert!(report.render(true).contains("\x1b[38;5;9m") || report.render(true).contains("\x1b[31m"));
    }

    #[test]
    fn markdown_has_html_tables_with_labelled_cells_and_code() {
        let mut report = Report::default();
        report.heading("Grid");
        report.text("one\ntwo");
        report.table(["bank `n`"], vec![vec!["0: 1w\nL0 <`ld 2`>".into()]]);
        assert_eq!(
            report.render_markdown(),
            "#### Grid\n\none two\n\n<div class=\"table-wrapper\"><table class=\"model\">\n\
             <thead><tr><th>bank <code>n</code></th></tr></thead>\n<tbody>\n\
             <tr><td data-label=\"bank n\">0: 1w<br>L0 &lt;<code>ld 2</code>&gt;</td></tr>\n</tbody></table></div>\n\n"
        );
    }

    #[test]
    fn grids_are_boxes_in_markdown_and_tables_on_a_terminal() {
        let mut report = Report::default();
        report.grid(["bank +0", "bank +1"], vec![vec![styled(" 0: 2w\nL0,16", Tone::Warn), " 1: -".into()]]);
        assert_eq!(
            report.render_markdown(),
            "<div class=\"bank-grid\">\n<div class=\"bank warn\"><b>0</b> 2w<br>L0,<wbr>16</div>\n\
             <div class=\"bank idle\"><b>1</b> -</div>\n</div>\n\n"
        );
        assert!(report.render(false).contains("bank +0"));
    }

    #[test]
    fn tone_follows_the_ideal() {
        assert_eq!(Tone::of_wavefronts(1, 1), Tone::Good);
        assert_eq!(Tone::of_wavefronts(2, 1), Tone::Warn);
        assert_eq!(Tone::of_wavefronts(4, 2), Tone::Warn);
        assert_eq!(Tone::of_wavefronts(32, 1), Tone::Bad);
    }

    #[test]
    fn titles_paragraphs_and_tables_become_html_parts() {
        let text = "On the GPU\n==========\nNVIDIA H100 <x>\nEvery kernel matched.\n\nStrides\n=======\n\
                    ┌────┬────┐\n│ a  ┆ b  │\n╞════╪════╡\n│ 1  ┆ 2 ✓ │\n└────┴────┘\nPeak: 33.5 TB/s.\n";
        let page = plain_output_as_html(text);
        assert!(page.contains("<!-- ANCHOR: part-1 -->"), "{page}");
        assert!(
            page.contains("<p class=\"measured-note\">NVIDIA H100 &lt;x&gt;<br>Every kernel matched.</p>"),
            "{page}"
        );
        assert!(page.contains("<strong>Strides</strong>"), "{page}");
        assert!(page.contains("<table class=\"measured\">\n<thead><tr><th>a</th><th>b</th></tr></thead>"), "{page}");
        assert!(page.contains("<tr><td data-label=\"a\">1</td><td data-label=\"b\">2 ✓</td></tr>"), "{page}");
        assert!(page.contains("ANCHOR_END: part-1 -->\n\n<!-- ANCHOR: part-2"), "{page}");
        assert!(page.trim_end().ends_with("<!-- ANCHOR_END: part-2 -->"), "{page}");
    }

    #[test]
    fn a_sentence_in_a_cell_may_wrap_and_a_figure_may_not() {
        let why = "not timed: NVRTC's build: a wrong output, at the timed size, launch 1 of round 1";
        let table = html_table(
            &["kernel".into(), "ms".into()],
            &[vec!["solution".into(), "0.3945".into()], vec!["a".into(), why.into()]],
            "measured",
        );
        assert!(table.contains("<td data-label=\"ms\">0.3945</td>"), "{table}");
        assert!(table.contains(&format!("<td class=\"prose\" data-label=\"ms\">{}</td>", escape_html(why))), "{table}");
    }
}
