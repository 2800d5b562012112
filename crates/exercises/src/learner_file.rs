//! A learner's `.cu` file, checked against the exercise's starter before anything runs.
//!
//! Only the lines between the markers are the learner's. A file whose other lines differ from the
//! starter's is rejected, naming the first such line, rather than having its editable part spliced
//! into the starter: line numbers stay the learner's own (so compiler messages point into their
//! file as it is), and an edit outside the region is shown instead of silently dropped. Trailing
//! whitespace and line endings do not count as changes.

use thiserror::Error;

use crate::manifest::Exercise;

pub const EDIT_BELOW: &str = "// ---- EDIT BELOW ----";
pub const EDIT_ABOVE: &str = "// ---- EDIT ABOVE ----";
/// Larger files are not a learner's edit of a starter of a few dozen lines.
pub const MAX_FILE_BYTES: usize = 256 * 1024;

/// Why a file cannot be checked; each message names the fix.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum Invalid {
    #[error("the file is empty: start from the exercise's starter file")]
    Empty,
    #[error("the file is {0} bytes, too large to be an edited starter (at most {MAX_FILE_BYTES} bytes)")]
    TooLarge(usize),
    #[error("the file is not text (binary or not UTF-8): hand in the .cu source file")]
    NotText,
    #[error("the file does not look like CUDA C++ (no `__global__` kernel, no edit markers): is it the right file?")]
    NotCuda,
    #[error(
        "there is no kernel `{entry}` ({found}); keep the starter's `extern \"C\" __global__ void {entry}({signature})`"
    )]
    WrongKernel { entry: String, found: String, signature: String },
    #[error("kernel `{entry}` takes ({found}); it must take ({expected}) as in the starter")]
    WrongSignature { entry: String, found: String, expected: String },
    #[error(
        "the lines `{EDIT_BELOW}` and `{EDIT_ABOVE}` must each appear once, in that order: restore them from the starter"
    )]
    Markers,
    #[error(
        "line {line} is outside the editable part and differs from the starter:\n  yours:   {yours}\n  starter: {starter}\n\
         Only the lines between the markers may change: restore that line from the starter"
    )]
    ChangedOutside { line: usize, yours: String, starter: String },
}

/// A file that passed every check: its text, and its editable lines (1-based, inclusive).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LearnerFile {
    pub text: String,
    pub region: (usize, usize),
}

impl LearnerFile {
    /// The editable lines.
    pub fn region_text(&self) -> String {
        let (first, last) = self.region;
        self.text.lines().skip(first - 1).take(last + 1 - first).collect::<Vec<_>>().join("\n")
    }
}

/// Checks `bytes` (a learner's file) against `starter` (the exercise's pristine starter text).
pub fn validate(exercise: &Exercise, starter: &str, bytes: &[u8]) -> Result<LearnerFile, Invalid> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Invalid::Empty);
    }
    if bytes.len() > MAX_FILE_BYTES {
        return Err(Invalid::TooLarge(bytes.len()));
    }
    let text = std::str::from_utf8(bytes).ok().filter(|t| !t.contains('\0')).ok_or(Invalid::NotText)?;
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    let markers = (marker_line(&lines, EDIT_BELOW), marker_line(&lines, EDIT_ABOVE));
    let kernels = kernels(text);
    if kernels.is_empty() && markers == (None, None) {
        return Err(Invalid::NotCuda);
    }
    let normalized = |params: &str| params.split_whitespace().collect::<Vec<_>>().join(" ");
    match kernels.iter().find(|(name, _)| *name == exercise.entry) {
        None => {
            let found = match kernels.len() {
                0 => "it defines no kernel".to_owned(),
                _ => format!(
                    "it defines {}",
                    kernels.iter().map(|(n, _)| format!("`{n}`")).collect::<Vec<_>>().join(", ")
                ),
            };
            return Err(Invalid::WrongKernel {
                entry: exercise.entry.clone(),
                found,
                signature: exercise.signature.clone(),
            });
        }
        Some((_, params)) if normalized(params) != normalized(&exercise.signature) => {
            return Err(Invalid::WrongSignature {
                entry: exercise.entry.clone(),
                found: normalized(params),
                expected: exercise.signature.clone(),
            });
        }
        Some(_) => {}
    }
    let (Some(below), Some(above)) = markers else { return Err(Invalid::Markers) };
    if above < below {
        return Err(Invalid::Markers);
    }
    let starter_lines: Vec<&str> = starter.lines().map(str::trim_end).collect();
    let (starter_below, starter_above) = (
        starter_lines.iter().position(|l| l.trim() == EDIT_BELOW).expect("the starter has its markers"),
        starter_lines.iter().position(|l| l.trim() == EDIT_ABOVE).expect("the starter has its markers"),
    );
    first_difference(&lines[..=below], &starter_lines[..=starter_below], 0)
        .or_else(|| {
            first_difference(trim_blank_end(&lines[above..]), trim_blank_end(&starter_lines[starter_above..]), above)
        })
        .map_or(Ok(()), Err)?;
    Ok(LearnerFile { text: text.to_owned(), region: (below + 2, above) })
}

/// The index of the one line that is `marker`; `None` if there is none or several.
fn marker_line(lines: &[&str], marker: &str) -> Option<usize> {
    let mut found = lines.iter().enumerate().filter(|(_, l)| l.trim() == marker).map(|(i, _)| i);
    match (found.next(), found.next()) {
        (Some(index), None) => Some(index),
        _ => None,
    }
}

fn trim_blank_end<'a>(lines: &'a [&'a str]) -> &'a [&'a str] {
    let end = lines.iter().rposition(|l| !l.is_empty()).map_or(0, |i| i + 1);
    &lines[..end]
}

/// The first line where `yours` and `starter` differ; `offset` is the index of `yours[0]` in the file.
fn first_difference(yours: &[&str], starter: &[&str], offset: usize) -> Option<Invalid> {
    let shown = |line: Option<&&str>| line.map_or("(no line)".to_owned(), |l| l.trim().to_owned());
    (0..yours.len().max(starter.len())).find(|&i| yours.get(i) != starter.get(i)).map(|i| Invalid::ChangedOutside {
        line: offset + i + 1,
        yours: shown(yours.get(i)),
        starter: shown(starter.get(i)),
    })
}

/// Every `__global__ void NAME(PARAMS)` in `text`: name and parameter list.
fn kernels(text: &str) -> Vec<(&str, &str)> {
    let mut found = Vec::new();
    for (start, _) in text.match_indices("__global__") {
        let rest = text[start + "__global__".len()..].trim_start();
        let Some(rest) = rest.strip_prefix("void") else { continue };
        let mut rest = rest.trim_start();
        if let Some(bounds) = rest.strip_prefix("__launch_bounds__") {
            let Some(close) = bounds.find(')') else { continue };
            rest = bounds[close + 1..].trim_start();
        }
        let name_end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
        let (name, after) = rest.split_at(name_end);
        let Some(params) = after.trim_start().strip_prefix('(') else { continue };
        let Some(close) = params.find(')') else { continue };
        if !name.is_empty() {
            found.push((name, &params[..close]));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{Harness, Input};

    const STARTER: &str = "// top\n#define N 32\n// ---- EDIT BELOW ----\nint f() { return 0; }\n// ---- EDIT ABOVE ----\nextern \"C\" __global__ void k(unsigned* out, unsigned n) {\n    out[0] = f();\n}\n";

    fn exercise() -> Exercise {
        Exercise {
            id: "x".into(),
            lesson: 1,
            title: "t".into(),
            task: "do".into(),
            starter: "a.cu".into(),
            solution: "b.cu".into(),
            entry: "k".into(),
            signature: "unsigned* out, unsigned n".into(),
            harness: Harness::Transpose { block: [32, 8], check_n: 64, timed_n: 64 },
            inputs: vec![Input::Index],
            tolerance: 0.0,
            correct_points: 100,
            fallback_time_vs_reference: 1.5,
            hints: vec![],
            requirements: vec![],
        }
    }

    fn check(text: &str) -> Result<LearnerFile, Invalid> {
        validate(&exercise(), STARTER, text.as_bytes())
    }

    #[test]
    fn the_starter_and_edits_inside_the_region_pass() {
        let file = check(STARTER).unwrap();
        assert_eq!(file.region, (4, 4));
        assert_eq!(file.region_text(), "int f() { return 0; }");
        let edited = STARTER.replace("int f() { return 0; }", "// mine\nint f() {\n    return 1;\n}");
        let file = check(&edited).unwrap();
        assert_eq!(file.region, (4, 7));
        let windows = edited.replace('\n', "  \r\n") + "\r\n\r\n";
        assert_eq!(check(&windows).unwrap().region, (4, 7), "line endings and trailing blanks are not changes");
    }

    #[test]
    fn each_problem_is_named_with_its_fix() {
        assert_eq!(check(" \n").unwrap_err(), Invalid::Empty);
        assert_eq!(check("%PDF-1.4\0binary").unwrap_err(), Invalid::NotText);
        assert_eq!(validate(&exercise(), STARTER, &[0xff, 0xfe, 0x41]).unwrap_err(), Invalid::NotText);
        assert_eq!(check("import numpy as np\nprint(np.zeros(3))\n").unwrap_err(), Invalid::NotCuda);
        assert_eq!(check(&"x".repeat(MAX_FILE_BYTES + 1)).unwrap_err(), Invalid::TooLarge(MAX_FILE_BYTES + 1));

        let renamed = check(&STARTER.replace("void k(", "void my_kernel(")).unwrap_err();
        assert_eq!(
            renamed.to_string(),
            "there is no kernel `k` (it defines `my_kernel`); keep the starter's `extern \"C\" __global__ void k(unsigned* out, unsigned n)`"
        );
        let retyped = check(&STARTER.replace("unsigned n)", "int n)")).unwrap_err();
        assert_eq!(
            retyped.to_string(),
            "kernel `k` takes (unsigned* out, int n); it must take (unsigned* out, unsigned n) as in the starter"
        );
        let respaced = check(&STARTER.replace("unsigned* out,", "unsigned*   out,\n   ")).unwrap_err();
        assert!(matches!(respaced, Invalid::ChangedOutside { line: 6, .. }), "the right signature, a changed line");

        assert_eq!(check(&STARTER.replace("// ---- EDIT ABOVE ----\n", "")).unwrap_err(), Invalid::Markers);
        let twice = STARTER.replace("// top\n", "// top\n// ---- EDIT BELOW ----\n");
        assert_eq!(check(&twice).unwrap_err(), Invalid::Markers);
        let swapped =
            STARTER.replace("EDIT BELOW", "TMP").replace("EDIT ABOVE", "EDIT BELOW").replace("TMP", "EDIT ABOVE");
        assert_eq!(check(&swapped).unwrap_err(), Invalid::Markers);

        let outside = check(&STARTER.replace("out[0] = f();", "out[0] = f() + 1;")).unwrap_err();
        assert_eq!(
            outside.to_string(),
            "line 7 is outside the editable part and differs from the starter:\n  yours:   out[0] = f() + 1;\n  starter: out[0] = f();\n\
             Only the lines between the markers may change: restore that line from the starter"
        );
        let above = check(&STARTER.replace("#define N 32\n", "#define N 64\n")).unwrap_err();
        assert!(matches!(above, Invalid::ChangedOutside { line: 2, .. }), "{above}");
        let added = check(&format!("{STARTER}int extra;\n")).unwrap_err();
        assert!(
            matches!(added, Invalid::ChangedOutside { line: 9, ref starter, .. } if starter == "(no line)"),
            "{added}"
        );
    }

    #[test]
    fn kernels_are_found_with_launch_bounds_and_in_any_layout() {
        let text = "extern \"C\" __global__ void __launch_bounds__(256)\nfast(float* a) {}\n__global__ void\nslow ( int n ) {}";
        assert_eq!(kernels(text), vec![("fast", "float* a"), ("slow", " int n ")]);
    }
}
