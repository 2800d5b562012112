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
