//! The invariants ARCHITECTURE.md states, checked on the manifests and the tree.

use std::{collections::BTreeMap, fs, path::Path};

use course_tests::root;

/// Each crate of the workspace (package name) and the packages it depends on, build and dev
/// dependencies included.
fn dependencies() -> BTreeMap<String, Vec<String>> {
    let mut crates = BTreeMap::new();
    let manifests = fs::read_dir(root().join("crates")).unwrap().map(|entry| entry.unwrap().path().join("Cargo.toml"));
    for manifest in manifests.chain([root().join("xtask/Cargo.toml"), root().join("tests/Cargo.toml")]) {
        let table: toml::Table = fs::read_to_string(&manifest).unwrap().parse().unwrap();
        let name = table["package"]["name"].as_str().unwrap().to_owned();
        let deps = ["dependencies", "dev-dependencies", "build-dependencies"]
            .iter()
            .filter_map(|section| table.get(*section).and_then(|t| t.as_table()))
            .flat_map(|t| t.keys().cloned())
            .collect();
        crates.insert(name, deps);
    }
    crates
}

fn is_lesson(name: &str) -> bool {
    name.strip_prefix("lesson-").is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
}

fn course_crates(deps: &[String]) -> Vec<&str> {
    let course: Vec<String> = dependencies().into_keys().collect();
    deps.iter().filter(|d| course.contains(d)).map(String::as_str).collect()
}

#[test]
fn bank_model_knows_nothing_of_cuda() {
    let deps = &dependencies()["bank-model"];
    assert!(course_crates(deps).is_empty() && !deps.contains(&"cudarc".to_owned()), "{deps:?}");
}

#[test]
fn cuda_kernels_is_the_only_crate_on_cudarc_and_knows_nothing_of_lessons() {
    let all = dependencies();
    assert!(course_crates(&all["cuda-kernels"]).is_empty(), "{:?}", all["cuda-kernels"]);
    let on_cudarc: Vec<&String> =
        all.iter().filter(|(_, d)| d.contains(&"cudarc".to_owned())).map(|(n, _)| n).collect();
    assert_eq!(on_cudarc, ["cuda-kernels"]);
}

#[test]
fn lessons_depend_only_on_the_kit_the_model_cuda_and_earlier_lessons() {
    for (name, deps) in dependencies().iter().filter(|(name, _)| is_lesson(name)) {
        for dep in course_crates(deps) {
            let allowed =
                ["lesson-kit", "bank-model", "cuda-kernels"].contains(&dep) || (is_lesson(dep) && dep < name.as_str());
            assert!(allowed, "{name} depends on {dep}");
        }
    }
    let kit = course_crates(&dependencies()["lesson-kit"]).join(", ");
    assert_eq!(kit, "bank-model, cuda-kernels");
}

#[test]
fn only_the_course_crate_lists_the_lessons_and_xtask_only_wires() {
    let all = dependencies();
    let lessons = all.keys().filter(|name| is_lesson(name)).count();
    for (name, deps) in &all {
        let on_lessons = deps.iter().filter(|d| is_lesson(d)).count();
        if name == "course" {
            assert_eq!(on_lessons, lessons, "the course lists every lesson");
        } else if ["xtask", "course-tests", "claims"].contains(&name.as_str()) {
            assert_eq!(on_lessons, 0, "{name} depends on a lesson: reach it through course::LESSONS");
        }
    }
    let xtask = &all["xtask"];
    assert!(!xtask.iter().any(|d| is_lesson(d) || d == "cudarc"), "{xtask:?}");
}

#[test]
fn no_lesson_kit_file_is_over_450_lines() {
    for entry in fs::read_dir(root().join("crates/lesson-kit/src")).unwrap() {
        let path = entry.unwrap().path();
        let lines = fs::read_to_string(&path).unwrap().lines().count();
        assert!(lines <= 450, "{} has {lines} lines: split it by job", path.display());
    }
    assert!(Path::new(&root().join("crates/course/Cargo.toml")).is_file());
}
