//! Where kernel sources come from: the `kernels/` folder on disk when there is one, so a learner's
//! edit takes effect without a rebuild, otherwise the copy embedded at build time.

use std::{
    env, fs,
    path::{Path, PathBuf},
};

/// Every `kernels/*.cu` file as it was when this crate was built.
const EMBEDDED: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/embedded_kernels.rs"));

/// Overrides where kernel sources are read from.
pub const KERNELS_DIR_VAR: &str = "BCM_KERNELS_DIR";

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    File(PathBuf),
    Embedded,
}

#[derive(Clone, Debug)]
pub struct KernelSource {
    pub file: String,
    pub text: String,
    pub origin: Origin,
}

/// The folders searched, in order: `$BCM_KERNELS_DIR`, `kernels/` beside the executable (a
/// `cargo xtask dist` folder), and the workspace's `kernels/`.
pub fn search_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(dir) = env::var_os(KERNELS_DIR_VAR) {
        dirs.push(PathBuf::from(dir));
    }
    if let Some(exe_dir) = env::current_exe().ok().and_then(|exe| exe.parent().map(Path::to_path_buf)) {
        dirs.push(exe_dir.join("kernels"));
    }
    dirs.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kernels"));
    dirs
}

/// Finds `file` (e.g. `banks.cu`) on disk, else in the embedded copies.
pub fn load(file: &str) -> Option<KernelSource> {
    for dir in search_dirs() {
        let path = dir.join(file);
        if let Ok(text) = fs::read_to_string(&path) {
            let origin = Origin::File(path.canonicalize().unwrap_or(path));
            return Some(KernelSource { file: file.to_owned(), text, origin });
        }
    }
    embedded(file).map(|text| KernelSource { file: file.to_owned(), text: text.to_owned(), origin: Origin::Embedded })
}

/// The copy of `file` embedded at build time.
pub fn embedded(file: &str) -> Option<&'static str> {
    EMBEDDED.iter().find(|(name, _)| *name == file).map(|(_, text)| *text)
}

/// Names of all embedded kernel files.
pub fn embedded_files() -> impl Iterator<Item = &'static str> {
    EMBEDDED.iter().map(|(name, _)| *name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kernel_file_is_embedded_and_found_on_disk() {
        let files: Vec<_> = embedded_files().collect();
        assert!(files.contains(&"banks.cu"), "{files:?}");
        for file in files {
            let source = load(file).unwrap();
            assert!(matches!(source.origin, Origin::File(_)), "{file} found on disk in the workspace");
            assert_eq!(source.text, embedded(file).unwrap());
        }
        assert!(load("no-such-kernel.cu").is_none());
    }
}
