//! The book's generated pages (tables and charts) are what the model and the results file give
//! now, and the kernels the book includes carry the anchors it names.

use course_tests::root;

#[test]
fn generated_pages_are_current() {
    let pages = xtask::book::generated_pages().unwrap();
    let folder = root().join("book/src/generated");
    for (name, text) in &pages {
        let path = folder.join(name);
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(on_disk == *text, "{} is stale: run `cargo xtask book` and commit it", path.display());
    }
    for entry in std::fs::read_dir(&folder).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(pages.iter().any(|(page, _)| *page == name), "{name} is no longer generated: run `cargo xtask book`");
    }
}

#[test]
fn every_include_in_the_book_resolves() {
    let src = root().join("book/src");
    let mut checked = 0;
    for entry in std::fs::read_dir(&src).unwrap() {
        let page = entry.unwrap().path();
        if page.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let text = std::fs::read_to_string(&page).unwrap();
        for include in text.split("{{#include ").skip(1) {
            let target = include.split("}}").next().unwrap();
            let mut parts = target.splitn(2, ':');
            let file = src.join(parts.next().unwrap());
            let contents = std::fs::read_to_string(&file)
                .unwrap_or_else(|_| panic!("{} includes missing {}", page.display(), file.display()));
            if let Some(anchor) = parts.next().filter(|a| !a.chars().next().unwrap().is_ascii_digit()) {
                assert!(
                    contents.contains(&format!("ANCHOR: {anchor}"))
                        && contents.contains(&format!("ANCHOR_END: {anchor}")),
                    "{} includes anchor `{anchor}` that {} lacks",
                    page.display(),
                    file.display()
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 0, "the book includes its tables and kernels");
}

/// What readers see, measured or generated: counts in the right number ("1 wavefront"), and no
/// path of the machine that produced it.
#[test]
fn outputs_say_1_wavefront_and_carry_no_machine_paths() {
    let folders = ["book/src/measured", "book/src/generated", "tests/snapshots"];
    let mut checked = 0;
    for folder in folders.map(|f| root().join(f)) {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            let Ok(text) = std::fs::read_to_string(&path) else { continue };
            let name = path.display();
            assert!(!text.contains(" 1 wavefronts"), "{name} says \"1 wavefronts\"");
            for machine in ["/root/", "/home/", "/tmp/", "/Users/"] {
                assert!(!text.contains(machine), "{name} carries a machine path ({machine}...)");
            }
            checked += 1;
        }
    }
    assert!(checked > 20, "{checked} files");
}

/// The chapter pages, `ch01-banks.md` to `ch12-stencil.md`, with their lesson numbers.
fn chapters() -> Vec<(u32, String, String)> {
    let src = root().join("book/src");
    let mut chapters: Vec<_> = std::fs::read_dir(&src)
        .unwrap()
        .filter_map(|entry| {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            let number = name.strip_prefix("ch")?.get(..2)?.parse().ok()?;
            Some((number, std::fs::read_to_string(src.join(&name)).unwrap(), name))
        })
        .map(|(number, text, name)| (number, name, text))
        .collect();
    chapters.sort();
    assert_eq!(chapters.len(), 12, "twelve chapters");
    chapters
}

/// Every exercise is linked from its lesson's chapter, with the command that checks it, and
/// every chapter ends with what to remember.
#[test]
fn every_chapter_links_its_exercises_and_ends_with_what_to_remember() {
    let manifest = exercises::manifest::Manifest::load(&root().join("exercises")).unwrap();
    for (number, name, text) in chapters() {
        // A sentence may wrap anywhere in the source, a command included.
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        for exercise in manifest.exercises.iter().filter(|e| e.lesson == number) {
            let id = &exercise.id;
            assert!(text.contains(&format!("[`{id}`](exercises.md)")), "{name} does not link its exercise {id}");
            assert!(text.contains(&format!("cargo xtask exercise {id}")), "{name} does not say how to check {id}");
        }
        assert!(text.contains("**What to remember**"), "{name} has no \"What to remember\"");
        let remember = text.rfind("**What to remember**").unwrap();
        assert!(!text[remember..].contains(" ## "), "{name}: \"What to remember\" is not at the chapter's end");
        assert_eq!(
            text.matches("<details").count(),
            text.matches("</details>").count(),
            "{name}: every answer block is closed"
        );
    }
}

/// The glossary defines the words the chapters lean on, and the book's contents list it and the
/// getting-started page.
#[test]
fn chapters_say_a_time_ratio_one_way() {
    // A slowdown is "took 3.9x as long"; a speed-up "3.3x faster" (the glossary's "slowdown").
    for (number, _, text) in chapters() {
        for (index, line) in text.lines().enumerate() {
            let words: Vec<&str> = line.split_whitespace().collect();
            for pair in words.windows(3) {
                let ratio = pair[0].strip_suffix('x').unwrap_or(pair[0]);
                let is_number = !ratio.is_empty() && ratio.chars().all(|c| c.is_ascii_digit() || c == '.');
                let other_form = (pair[0].ends_with('x') && pair[1].starts_with("slower"))
                    || (pair[1] == "times" && pair[2] == "as");
                assert!(
                    !(is_number && other_form),
                    "chapter {number}, line {}: say \"Nx as long\" for a slowdown: {line}",
                    index + 1
                );
            }
        }
    }
}

#[test]
fn the_glossary_defines_the_course_words() {
    let glossary = std::fs::read_to_string(root().join("book/src/glossary.md")).unwrap();
    for term in [
        "request",
        "wavefront",
        "wf-req",
        "ideal",
        "excess",
        "conflict",
        "conflict-degree",
        "pass-group",
        "broadcast",
        "bytes",
    ] {
        assert!(glossary.contains(&format!("<dt id=\"{term}\">")), "the glossary lacks {term}");
    }
    let summary = std::fs::read_to_string(root().join("book/src/SUMMARY.md")).unwrap();
    for page in ["getting-started.md", "glossary.md"] {
        assert!(summary.contains(&format!("({page})")), "SUMMARY.md does not list {page}");
    }
}

/// The README's lesson titles, the lessons' own and the book's chapter titles are the same words.
#[test]
fn lesson_titles_are_the_same_in_the_readme_and_the_book() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let summary = std::fs::read_to_string(root().join("book/src/SUMMARY.md")).unwrap();
    for (number, name, text) in chapters() {
        let title = text.lines().next().unwrap().trim_start_matches("# ");
        assert!(readme.contains(&format!("| {number} | {title} |")), "README's lesson {number} is not \"{title}\"");
        assert!(summary.contains(&format!("[{title}]({name})")), "SUMMARY.md names {name} otherwise than \"{title}\"");
    }
}

/// The README's count of measured instructions is the model's evidence, whole.
#[test]
fn the_readme_counts_the_measured_instructions() {
    let evidence = bank_model::measured::evidence();
    let total: usize = evidence.iter().map(|class| class.measured).sum();
    assert!(
        evidence.iter().all(|class| class.agree == class.measured),
        "the README says the model agrees with every one"
    );
    let digits = total.to_string();
    let grouped: Vec<&str> =
        digits.as_bytes().rchunks(3).rev().map(|chunk| std::str::from_utf8(chunk).unwrap()).collect();
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(readme.contains(&format!("every one of {} single instructions", grouped.join(","))), "README: {total}");
}
