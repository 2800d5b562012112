//! Checks of the built book, run by `cargo xtask test`: every internal link and anchor leads
//! somewhere, every local resource exists, and no page or stylesheet loads anything from another
//! host (links to other sites are fine: following one is the reader's choice).

use std::{
    collections::{HashMap, HashSet},
    fs,
    path::{Component, Path, PathBuf},
};

use anyhow::{Context, bail};
use html5gum::{DefaultEmitter, Token, Tokenizer};

/// What one page refers to, and the anchors it offers.
#[derive(Default)]
struct Page {
    ids: HashSet<String>,
    /// `<base href>`, when the page sets one.
    base: Option<String>,
    /// Places a reader can go.
    links: Vec<String>,
    /// Files the browser loads to show the page.
    resources: Vec<String>,
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn parse_page(html: &str) -> Page {
    let mut emitter = DefaultEmitter::default();
    // Script and style bodies are text, not tags.
    emitter.naively_switch_states(true);
    let mut page = Page::default();
    for token in Tokenizer::new_with_emitter(html, emitter).flatten() {
        let Token::StartTag(tag) = token else { continue };
        let name = text(&tag.name);
        let attribute = |key: &str| tag.attributes.get(key.as_bytes()).map(|value| text(value));
        if let Some(id) = attribute("id") {
            page.ids.insert(id);
        }
        match name.as_str() {
            "a" | "area" => {
                if let Some(name) = attribute("name") {
                    page.ids.insert(name);
                }
                page.links.extend(attribute("href"));
            }
            "base" => page.base = attribute("href"),
            "link" => page.resources.extend(attribute("href")),
            _ => {}
        }
        page.resources.extend(attribute("src"));
        page.resources.extend(attribute("poster"));
        if let Some(srcset) = attribute("srcset") {
            page.resources
                .extend(srcset.split(',').filter_map(|entry| entry.split_whitespace().next()).map(String::from));
        }
        if let Some(style) = attribute("style") {
            page.resources.extend(css_references(&style));
        }
    }
    page
}

/// The URLs a stylesheet loads: `url(...)` and `@import "..."`.
fn css_references(css: &str) -> Vec<String> {
    let unquote = |s: &str| s.trim().trim_matches(['"', '\'']).to_owned();
    let urls = css.split("url(").skip(1).filter_map(|rest| rest.split(')').next()).map(unquote);
    let imports = css
        .split("@import")
        .skip(1)
        .filter_map(|rest| rest.trim_start().strip_prefix(['"', '\'']))
        .filter_map(|rest| rest.split(['"', '\'']).next())
        .map(String::from);
    urls.chain(imports).filter(|url| !url.is_empty()).collect()
}

/// `Some(true)`: another host; `Some(false)`: a scheme that loads nothing from the book
/// (`data:`, `mailto:`); `None`: a path inside the book.
fn elsewhere(url: &str) -> Option<bool> {
    if url.starts_with("//") {
        return Some(true);
    }
    let scheme = url.split_once(':').map(|(scheme, _)| scheme)?;
    let is_scheme = !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    is_scheme.then(|| matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https" | "ftp" | "ws" | "wss"))
}

/// `a/./b/../c` as `a/c`, without touching the disk.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Where a reference from `page` (a path relative to the book) leads: the file, relative to the
/// book, and the anchor. The book is served from its root, so `/x` is `x`.
fn resolve(page: &Path, base: Option<&str>, reference: &str) -> (PathBuf, Option<String>) {
    let (path, anchor) = match reference.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor.to_owned()).filter(|a| !a.is_empty())),
        None => (reference, None),
    };
    let path = path.split('?').next().unwrap_or_default();
    let folder = page.parent().unwrap_or(Path::new(""));
    let folder = match base {
        Some(base) if base.starts_with('/') => PathBuf::from(base.trim_start_matches('/')),
        Some(base) => folder.join(base),
        None => folder.to_path_buf(),
    };
    let target = if path.is_empty() {
        page.to_path_buf()
    } else if let Some(absolute) = path.strip_prefix('/') {
        PathBuf::from(absolute)
    } else {
        folder.join(path)
    };
    (normalize(&target), anchor)
}

fn files(folder: &Path, relative: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in fs::read_dir(folder.join(relative))? {
        let entry = entry?;
        let path = relative.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            files(folder, &path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

/// What the check looked at, and what it found wrong (one line each).
pub struct Findings {
    pub links: usize,
    pub resources: usize,
    pub problems: Vec<String>,
}

/// Checks the book built into `build`.
pub fn findings(build: &Path) -> anyhow::Result<Findings> {
    let mut all = Vec::new();
    files(build, Path::new(""), &mut all).with_context(|| format!("cannot list {}", build.display()))?;
    all.sort();
    let mut pages = HashMap::new();
    let mut stylesheets = Vec::new();
    for file in &all {
        match file.extension().and_then(|e| e.to_str()) {
            Some("html") => {
                let html = fs::read_to_string(build.join(file))?;
                pages.insert(file.clone(), parse_page(&html));
            }
            Some("css") => stylesheets.push((file.clone(), css_references(&fs::read_to_string(build.join(file))?))),
            _ => {}
        }
    }
    let mut problems = Vec::new();
    let mut check = |from: &Path, base: Option<&str>, reference: &str, is_resource: bool| match elsewhere(reference) {
        Some(true) if is_resource => {
            problems.push(format!("{}: loads `{reference}` from another host", from.display()))
        }
        Some(_) => {}
        None => {
            let (target, anchor) = resolve(from, base, reference);
            let target = if build.join(&target).is_dir() { target.join("index.html") } else { target };
            if !build.join(&target).is_file() {
                problems.push(format!("{}: `{reference}` leads to missing {}", from.display(), target.display()));
            } else if let (Some(anchor), Some(page)) = (anchor, pages.get(&target))
                && !page.ids.contains(&anchor)
            {
                problems.push(format!(
                    "{}: `{reference}`: {} has no anchor `{anchor}`",
                    from.display(),
                    target.display()
                ));
            }
        }
    };
    let mut names: Vec<&PathBuf> = pages.keys().collect();
    names.sort();
    for name in names {
        let page = &pages[name];
        for link in &page.links {
            check(name, page.base.as_deref(), link, false);
        }
        for resource in &page.resources {
            check(name, page.base.as_deref(), resource, true);
        }
    }
    for (name, references) in &stylesheets {
        for reference in references {
            check(name, None, reference, true);
        }
    }
    let links = pages.values().map(|page| page.links.len()).sum();
    let resources = pages.values().map(|page| page.resources.len()).sum::<usize>()
        + stylesheets.iter().map(|(_, references)| references.len()).sum::<usize>();
    Ok(Findings { links, resources, problems })
}

/// Fails with every problem found in the built book; else says what was checked.
pub fn check(build: &Path) -> anyhow::Result<String> {
    let Findings { links, resources, problems } = findings(build)?;
    if !problems.is_empty() {
        bail!("the built book has {} broken links or external resources:\n  {}", problems.len(), problems.join("\n  "));
    }
    Ok(format!(
        "{links} links and {resources} resources checked: every one inside the book resolves, none loads from another host."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_broken_links_missing_anchors_and_other_hosts() {
        let book = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = book.path().join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        };
        write(
            "index.html",
            r##"<html><head><link rel="stylesheet" href="css/book.css">
            <script src="https://cdn.example.org/lib.js"></script>
            <script>const s = '<a href="in-a-script.html">';</script></head>
            <body><h1 id="top">Top</h1>
            <a href="#top">up</a> <a href="#nowhere">nowhere</a>
            <a href="ch/one.html#part">one</a> <a href="ch/one.html#gone">gone</a>
            <a href="missing.html">missing</a> <a href="ch/">folder</a>
            <a href="https://example.org/">another site</a> <a href="mailto:a@example.org">mail</a>
            <img src="images/plot.svg"> <img src="data:image/png;base64,AAAA"></body></html>"##,
        );
        write("ch/one.html", r#"<h2 id="part">Part</h2><a href="../index.html#top">back</a>"#);
        write("ch/index.html", r#"<a href="../images/none.png">x</a>"#);
        write("images/plot.svg", "<svg></svg>");
        write(
            "css/book.css",
            "@font-face { src: url(fonts/a.woff2) } body { background: url('https://x.example/b.png') }",
        );
        write("css/fonts/a.woff2", "");
        write("404.html", r#"<base href="/"><a href="ch/one.html">one</a><a href="ch/two.html">two</a>"#);
        let found = findings(book.path()).unwrap();
        assert_eq!((found.links, found.resources), (12, 6));
        assert_eq!(
            found.problems,
            [
                "404.html: `ch/two.html` leads to missing ch/two.html",
                "ch/index.html: `../images/none.png` leads to missing images/none.png",
                "index.html: `#nowhere`: index.html has no anchor `nowhere`",
                "index.html: `ch/one.html#gone`: ch/one.html has no anchor `gone`",
                "index.html: `missing.html` leads to missing missing.html",
                "index.html: loads `https://cdn.example.org/lib.js` from another host",
                "css/book.css: loads `https://x.example/b.png` from another host",
            ]
        );
        assert!(check(book.path()).unwrap_err().to_string().starts_with("the built book has 7 broken links"));
        fs::write(book.path().join("index.html"), r#"<h1 id="top">Top</h1><a href="ch/one.html#part">one</a>"#)
            .unwrap();
        for broken in ["404.html", "ch/index.html", "css/book.css"] {
            fs::remove_file(book.path().join(broken)).unwrap();
        }
        assert_eq!(findings(book.path()).unwrap().problems, Vec::<String>::new());
    }
}
