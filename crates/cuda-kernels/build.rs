//! Embeds every `kernels/*.cu` file, so a binary copied away from the workspace still has them.
use std::{env, fs, path::Path};

fn main() {
    let kernels = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kernels");
    println!("cargo:rerun-if-changed={}", kernels.display());
    let mut files: Vec<_> = fs::read_dir(&kernels)
        .expect("the workspace has a kernels/ folder")
        .map(|entry| entry.expect("readable kernels/ entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "cu" || ext == "cuh"))
        .collect();
    files.sort();
    let mut table = String::from("&[\n");
    for path in &files {
        println!("cargo:rerun-if-changed={}", path.display());
        let name = path.file_name().unwrap().to_string_lossy();
        let absolute = fs::canonicalize(path).unwrap();
        table.push_str(&format!("    ({name:?}, include_str!({:?})),\n", absolute.display().to_string()));
    }
    table.push(']');
    let out = Path::new(&env::var("OUT_DIR").unwrap()).join("embedded_kernels.rs");
    fs::write(out, table).unwrap();
}
