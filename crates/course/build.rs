//! Writes the list of lessons from this crate's `[dependencies]`: every `lesson-NN-*` crate, in
//! order of NN, so that adding a lesson is its crate and one line in Cargo.toml.

use std::{env, fs, path::Path};

fn main() {
    println!("cargo::rerun-if-changed=Cargo.toml");
    let manifest: toml::Table = fs::read_to_string("Cargo.toml").unwrap().parse().expect("Cargo.toml is TOML");
    let dependencies = manifest["dependencies"].as_table().expect("a [dependencies] table");
    let mut lessons: Vec<(u32, String)> = dependencies
        .keys()
        .filter_map(|name| {
            let number = name.strip_prefix("lesson-")?.split('-').next()?.parse().ok()?;
            Some((number, name.replace('-', "_")))
        })
        .collect();
    lessons.sort();
    let entries: String = lessons.iter().map(|(_, krate)| format!("    &{krate}::LESSON,\n")).collect();
    let numbers: Vec<String> = lessons.iter().map(|(number, _)| number.to_string()).collect();
    let code = format!(
        "/// Every lesson, in order.\npub static LESSONS: &[&dyn lesson_kit::AnyLesson] = &[\n{entries}];\n\
         /// The lesson numbers the crate names say, in order (checked against each lesson's own).\n\
         pub const NUMBERS_BY_NAME: &[u32] = &[{}];\n",
        numbers.join(", ")
    );
    fs::write(Path::new(&env::var("OUT_DIR").unwrap()).join("lessons.rs"), code).unwrap();
}
