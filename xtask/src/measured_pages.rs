//! The book's pages of measured output: each `book/src/measured/*.txt` (what `cargo xtask lesson N`
//! printed on a GPU) as HTML that fits the book's column, rendered by
//! [`lesson_kit::report::plain_output_as_html`].

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
            Ok((format!("measured-{stem}.md"), lesson_kit::report::plain_output_as_html(&text)))
        })
        .collect()
}
