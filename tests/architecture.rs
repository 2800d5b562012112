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

/// The modules each lesson-kit module names through `crate::` (its `use` lines and paths).
fn lesson_kit_imports() -> BTreeMap<String, Vec<String>> {
    let src = root().join("crates/lesson-kit/src");
    let modules: Vec<String> = fs::read_dir(&src)
        .unwrap()
        .filter_map(|entry| entry.unwrap().file_name().to_str()?.strip_suffix(".rs").map(str::to_owned))
        .filter(|name| name != "lib")
        .collect();
    let mut imports = BTreeMap::new();
    for module in &modules {
        let text = fs::read_to_string(src.join(format!("{module}.rs"))).unwrap();
        // Tests may reach anywhere; the module's own code may not go round in a circle.
        let code = text.split("#[cfg(test)]").next().unwrap();
        let named = modules.iter().filter(|other| *other != module).filter(|other| {
            ["crate::", "    ", "{", ", "].iter().any(|before| code.contains(&format!("{before}{other}::")))
        });
        imports.insert(module.clone(), named.cloned().collect());
    }
    imports
}

#[test]
fn lesson_kit_has_no_import_circle() {
    let imports = lesson_kit_imports();
    assert!(imports["runner"].contains(&"lesson".to_owned()), "the scan sees imports: {imports:?}");
    // Depth-first: a module reached again while on the path closes a circle.
    fn visit(module: &str, imports: &BTreeMap<String, Vec<String>>, path: &mut Vec<String>) {
        if let Some(start) = path.iter().position(|m| m == module) {
            panic!("import circle: {} -> {module}", path[start..].join(" -> "));
        }
        path.push(module.to_owned());
        for next in &imports[module] {
            visit(next, imports, path);
        }
        path.pop();
    }
    for module in imports.keys() {
        visit(module, &imports, &mut Vec::new());
    }
}
