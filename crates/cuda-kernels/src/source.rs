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

impl KernelSource {
    /// The path compiler messages should name: the file on disk, else the bare file name.
    pub fn display_name(&self) -> String {
        match &self.origin {
            Origin::File(path) => path.display().to_string(),
            Origin::Embedded => self.file.clone(),
        }
    }
}

/// The folders searched, in order: `$BCM_KERNELS_DIR`, `kernels/` beside the executable (a
/// `cargo xtask dist` folder), and the workspace's `kernels/`.
pub fn search_dirs() -> Vec<PathBuf> {
    course_dirs("kernels", KERNELS_DIR_VAR)
}

/// Where a folder of the course's files (`kernels`, `exercises`) may be, in the order to search:
/// the folder `$var` names, `folder` beside the executable, and `folder` in the workspace.
pub fn course_dirs(folder: &str, var: &str) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(dir) = env::var_os(var) {
        dirs.push(PathBuf::from(dir));
    }
    if let Some(exe_dir) = env::current_exe().ok().and_then(|exe| exe.parent().map(Path::to_path_buf)) {
        dirs.push(exe_dir.join(folder));
    }
    dirs.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(folder));
    dirs
}

/// Whether `file` is a bare file name (`shared_load.cuh`): no folder, no `..`, nothing a path
/// could be made of. Only such names are looked up.
pub fn is_bare_name(file: &str) -> bool {
    !file.is_empty()
        && !file.starts_with('.')
        && file.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// The course's headers (`kernels/*.cuh`), which any source may include by bare name.
pub fn course_headers() -> Vec<&'static str> {
    embedded_files().filter(|name| name.ends_with(".cuh")).collect()
}

/// Finds `file` (e.g. `banks.cu`) on disk, else in the embedded copies; `None` for a name that is
/// not a bare file name (see [`is_bare_name`]).
pub fn load(file: &str) -> Option<KernelSource> {
    if !is_bare_name(file) {
        return None;
    }
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

/// Why a kernel file could not be assembled for compilation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Missing {
    /// The file that could not be found.
    pub file: String,
    /// The file that includes it, if any.
    pub included_from: Option<String>,
}

/// `file` ready for NVRTC: every `#include "NAME"` of a file in `kernels/` replaced by that file's
/// text (each header once, as `#pragma once` asks), with `#line` directives so that compiler
/// messages name the original file and line.
pub fn load_for_compile(file: &str) -> Result<KernelSource, Missing> {
    let main = load(file).ok_or_else(|| Missing { file: file.to_owned(), included_from: None })?;
    let mut seen = vec![file.to_owned()];
    let text = expand_includes(&main.display_name(), &main.text, &mut seen, Naming::OnDisk)?;
    Ok(KernelSource { text, ..main })
}

/// `text`, a source that is not in `kernels/` (an exercise), ready for NVRTC as
/// [`load_for_compile`] makes a kernel file: its `#include "NAME"` lines of the course's headers
/// ([`course_headers`]) inlined, with `#line` directives naming `display_name` for its own lines
/// and each header by its bare name, so that no message shows where the course is installed.
/// Any other include is `Missing`: nothing outside the course's headers is read.
pub fn expand_for_compile(display_name: &str, text: &str) -> Result<String, Missing> {
    expand_includes(display_name, text, &mut Vec::new(), Naming::Bare)
}

/// How `#line` directives name an inlined header.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Naming {
    /// Its path on disk, for the course's own kernels (an editor opens it).
    OnDisk,
    /// Its bare name; only the course's headers are found.
    Bare,
}

fn expand_includes(file: &str, text: &str, seen: &mut Vec<String>, naming: Naming) -> Result<String, Missing> {
    let mut out = String::with_capacity(text.len());
    for (index, line) in text.lines().enumerate() {
        let header = line.trim().strip_prefix("#include \"").and_then(|rest| rest.strip_suffix('"'));
        match header {
            Some(name) if !seen.iter().any(|s| s == name) => {
                seen.push(name.to_owned());
                let allowed = naming == Naming::OnDisk || course_headers().contains(&name);
                let included = load(name)
                    .filter(|_| allowed)
                    .ok_or_else(|| Missing { file: name.to_owned(), included_from: Some(file.to_owned()) })?;
                let shown = match naming {
                    Naming::OnDisk => included.display_name(),
                    Naming::Bare => name.to_owned(),
                };
                out.push_str(&format!("#line 1 {}\n", quoted(&shown)));
                out.push_str(&expand_includes(&shown, &included.text, seen, naming)?);
                out.push_str(&format!("#line {} {}\n", index + 2, quoted(file)));
            }
            Some(_) => out.push('\n'),
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    Ok(out)
}

/// `name` as a C string literal: a path may hold quotes or backslashes.
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('\\', "\\\\").replace('"', "\\\""))
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

    #[test]
    fn local_headers_are_inlined_once_with_line_directives() {
        let source = load_for_compile("banks.cu").unwrap();
        assert!(!source.text.contains("#include \"shared_load.cuh\""));
        assert_eq!(source.text.matches("__device__ __forceinline__ unsigned load<uint4>").count(), 1);
        let header = load("shared_load.cuh").unwrap().display_name();
        assert!(header.ends_with("kernels/shared_load.cuh"), "{header}");
        assert!(source.text.contains(&format!("#line 1 \"{header}\"\n")));
        let main = load("banks.cu").unwrap();
        let include_line = main.text.lines().position(|l| l.starts_with("#include")).unwrap() + 1;
        assert!(source.text.contains(&format!("#line {} \"{}\"\n", include_line + 1, main.display_name())));
        let missing = load_for_compile("nope.cu").unwrap_err();
        assert_eq!(missing, Missing { file: "nope.cu".into(), included_from: None });
    }

    #[test]
    fn any_text_can_include_kernel_headers_and_keeps_its_own_name() {
        let text = "// a learner's file\n#include \"shared_load.cuh\"\nint x;\n";
        let expanded = expand_for_compile("my \"work\"/a.cu", text).unwrap();
        assert!(expanded.contains("__device__ __forceinline__ void fill_tile"), "{expanded}");
        assert!(expanded.ends_with("#line 3 \"my \\\"work\\\"/a.cu\"\nint x;\n"), "{expanded}");
        assert!(expanded.contains("#line 1 \"shared_load.cuh\"\n"), "headers by bare name: {expanded}");
        for name in ["nope.cuh", "/etc/passwd", "../kernels/shared_load.cuh", "/dev/zero", "banks.cu"] {
            let missing = expand_for_compile("a.cu", &format!("#include \"{name}\"\n")).unwrap_err();
            assert_eq!(missing, Missing { file: name.into(), included_from: Some("a.cu".into()) });
        }
        assert!(load("../kernels/banks.cu").is_none() && load("/etc/passwd").is_none(), "no paths, only names");
        assert_eq!(
            course_headers(),
            ["column_check.cuh", "probe.cuh", "shared_load.cuh", "swizzle.cuh", "tensor_core.cuh", "tma.cuh"]
        );
    }
}
