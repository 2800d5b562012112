//! The book's pages of measured output: each `book/src/measured/*.txt` (what `cargo xtask lesson N`
//! printed on a GPU) as HTML that fits the book's column, its terminal tables as `<table>`s.
//!
//! A measured file is a lesson's plain output: titles underlined with `=`, paragraphs, and
//! comfy-table tables (`┌`, `│ a ┆ b │`, `╞`, `└`). Each title starts a section, between
//! `ANCHOR: part-N` and `ANCHOR_END: part-N` comments, so that a chapter can include one part.

use std::fs;

use anyhow::Context;

use crate::workspace_root;

/// `(name in book/src/generated, page)` for every measured file, `lesson-01-h100.txt` giving
/// `measured-lesson-01-h100.md`.
pub fn pages() -> anyhow::Result<Vec<(String, String)>> {
    let dir = workspace_root().join("book/src/measured");
    let mut files: Vec<_> = fs::read_dir(&dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    files.retain(|path| path.extension().is_some_and(|e| e == "txt"));
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let text = fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
            let stem = path.file_stem().unwrap_or_default().to_string_lossy();
            Ok((format!("measured-{stem}.md"), page(&text)))
        })
        .collect()
}

/// Lines of a paragraph shorter than this were ended on purpose, not wrapped.
const SHORT_LINE: usize = 72;

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// The cells of one table row, `│ a ┆ b │`.
fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('│').trim_end_matches('│');
    inner.split('┆').map(|cell| cell.trim().to_owned()).collect()
}

/// One measured file as HTML blocks, separated by blank lines so that Markdown leaves them be.
pub fn page(text: &str) -> String {
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
                text.push_str(&escape(line));
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
            out.push_str(&format!("<p class=\"measured-title\"><strong>{}</strong></p>\n\n", escape(line)));
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
            out.push_str(&lesson_kit::report::html_table(&header, &rows, "measured"));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_paragraphs_and_tables_become_html_parts() {
        let text = "On the GPU\n==========\nNVIDIA H100 <x>\nEvery kernel matched.\n\nStrides\n=======\n\
                    ┌────┬────┐\n│ a  ┆ b  │\n╞════╪════╡\n│ 1  ┆ 2 ✓ │\n└────┴────┘\nPeak: 33.5 TB/s.\n";
        let page = page(text);
        assert!(page.contains("<!-- ANCHOR: part-1 -->"), "{page}");
        assert!(page.contains("<p class=\"measured-note\">NVIDIA H100 &lt;x&gt;<br>Every kernel matched.</p>"), "{page}");
        assert!(page.contains("<strong>Strides</strong>"), "{page}");
        assert!(page.contains("<table class=\"measured\">\n<thead><tr><th>a</th><th>b</th></tr></thead>"), "{page}");
        assert!(page.contains("<tr><td data-label=\"a\">1</td><td data-label=\"b\">2 ✓</td></tr>"), "{page}");
        assert!(page.contains("ANCHOR_END: part-1 -->\n\n<!-- ANCHOR: part-2"), "{page}");
        assert!(page.trim_end().ends_with("<!-- ANCHOR_END: part-2 -->"), "{page}");
    }
}
