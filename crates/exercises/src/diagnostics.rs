//! NVRTC's log as `file:line: error: message` lines. The learner's file is compiled under a fixed
//! program name (see [`crate::check::PROGRAM_NAME`]) and headers carry `#line` directives with
//! their bare names; this gives the learner's file its own name back, puts each error in the form
//! editors and terminals link, and replaces any absolute path by its last part, so that no
//! message shows where files are on the machine that checked it.

/// At most this many errors are reported: the first ones are what to fix.
const MAX_ERRORS: usize = 10;

/// Said after an error of the course's `load` or `store` of a tile it has no version for (one of
/// `volatile unsigned`, of `char`), which NVRTC shows at the header's line, not the learner's.
const TILES_LOAD_READS: &str = " (the code after your part reads and writes the tile with the course's `load` and \
                                `store`, which take a tile of the starter's element type: declare yours of that type, \
                                not `volatile`, `const` or another)";

/// Said after NVRTC's error for a function it takes for the host's, whose advice (`-default-device`)
/// is a flag the learner does not pass.
const DEVICE_FUNCTIONS_ONLY: &str = " (the course compiles your file as it is: mark each function of yours \
                                     `__device__`, and give a lambda's parameters their types, `[](unsigned r, \
                                     unsigned c)`, as one with `auto` parameters is a template NVRTC takes for the \
                                     host's)";

/// The errors of `log`, each `file:line: error: message`, with `program` (the name NVRTC was given)
/// shown as `shown`. A log in no known form comes back as its first lines, prefixed by `shown`.
pub fn errors(log: &str, program: &str, shown: &str) -> Vec<String> {
    let log = scrub(log);
    let parsed: Vec<String> = log
        .lines()
        .filter_map(error_line)
        .map(|line| match line.strip_prefix(program).filter(|rest| rest.starts_with(':')) {
            Some(rest) if rest.contains("host functions are not allowed in JIT mode") => {
                format!("{shown}{rest}{DEVICE_FUNCTIONS_ONLY}")
            }
            Some(rest) => format!("{shown}{rest}"),
            None if line.starts_with("shared_load.cuh:") && line.contains("[with Element=") => {
                format!("{line}{TILES_LOAD_READS}")
            }
            None => line,
        })
        .take(MAX_ERRORS)
        .collect();
    if !parsed.is_empty() {
        return parsed;
    }
    let lines: Vec<&str> = log.lines().map(str::trim).filter(|l| !l.is_empty()).take(MAX_ERRORS).collect();
    vec![
        format!("{shown}: {}", if lines.is_empty() { "NVRTC failed without a message" } else { "" })
            + &lines.join("\n"),
    ]
}

/// `text` with every absolute path (a word starting with `/`) cut to its last part.
pub fn scrub(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('/') {
        let starts_word = rest[..at].chars().next_back().is_none_or(|c| c.is_whitespace() || "\"'`(<[=:,".contains(c));
        let end =
            rest[at..].find(|c: char| c.is_whitespace() || "\"'`()<>[],:".contains(c)).map_or(rest.len(), |e| at + e);
        out.push_str(&rest[..at]);
        let path = &rest[at..end];
        match (starts_word, path.rsplit('/').next()) {
            (true, Some(last)) if path.len() > 1 && !last.is_empty() => out.push_str(last),
            _ => out.push_str(path),
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// `path(12): error: message` as `path:12: error: message`.
fn error_line(line: &str) -> Option<String> {
    let (location, message) = line.split_once("): error")?;
    let (file, number) = location.rsplit_once('(')?;
    number.parse::<u32>().ok()?;
    Some(format!("{file}:{number}: error{message}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvrtc_errors_become_file_line_messages() {
        let log = "submission.cu(21): error: identifier \"colum\" is undefined\n      return row * TILE + colum;\n                          ^\n\n\
                   hangs/exercise.cu(22): warning #550-D: variable \"x\" was set but never used\n\
                   my (copy)/exercise.cu(30): error: expected a \";\"\n\n2 errors detected in the compilation of \"hangs/exercise.cu\".\n";
        assert_eq!(
            errors(log, "submission.cu", "hangs/exercise.cu"),
            vec![
                "hangs/exercise.cu:21: error: identifier \"colum\" is undefined".to_owned(),
                "my (copy)/exercise.cu:30: error: expected a \";\"".to_owned(),
            ]
        );
        assert_eq!(errors("catastrophic failure\n\n", "s.cu", "a.cu"), vec!["a.cu: catastrophic failure".to_owned()]);
        assert_eq!(errors("", "s.cu", "a.cu"), vec!["a.cu: NVRTC failed without a message".to_owned()]);
    }

    #[test]
    fn no_message_shows_a_path_of_the_machine() {
        let log = "/opt/course/kernels/shared_load.cuh(3): error: x\nsubmission.cu(4): error: cannot open source file \"/tmp/.tmpAb12/secret.h\"\n";
        assert_eq!(
            errors(log, "submission.cu", "alice/exercise.cu"),
            ["shared_load.cuh:3: error: x", "alice/exercise.cu:4: error: cannot open source file \"secret.h\""]
        );
        assert_eq!(scrub("a/b and 1/2 stay; /x is x"), "a/b and 1/2 stay; x is x");
    }

    #[test]
    fn a_function_nvrtc_takes_for_the_hosts_is_told_what_to_write() {
        let log = "submission.cu(20): error: A function without execution space annotations (__host__/__device__/\
                   __global__) is considered a host function, and host functions are not allowed in JIT mode. \
                   Consider using -default-device flag to process unannotated functions as __device__ functions in \
                   JIT mode\n";
        let told = errors(log, "submission.cu", "mine.cu");
        assert!(told[0].starts_with("mine.cu:20: error: A function without execution space"), "{told:?}");
        assert!(told[0].ends_with("is a template NVRTC takes for the host's)"), "{told:?}");
    }

    #[test]
    fn a_tile_the_courses_load_does_not_take_is_told_where_its_type_is_declared() {
        let log = "shared_load.cuh(11): error: extern inline function \"load(const Element *, unsigned int) [with \
                   Element=volatile unsigned int]\" was referenced but not defined\n";
        let told = errors(log, "submission.cu", "pad.cu");
        assert!(told[0].starts_with("shared_load.cuh:11: error: extern inline"), "{told:?}");
        assert!(told[0].ends_with("declare yours of that type, not `volatile`, `const` or another)"), "{told:?}");
    }
}
