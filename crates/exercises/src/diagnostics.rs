//! NVRTC's log as `file:line: error: message` lines. The learner's file is compiled under the
//! name it has for the learner (and headers carry `#line` directives), so the file and line are
//! already theirs; this only puts them in the form editors and terminals link.

/// At most this many errors are reported: the first ones are what to fix.
const MAX_ERRORS: usize = 10;

/// The errors of `log`, each `file:line: error: message`. A log in no known form comes back as
/// its first lines, prefixed by `shown`.
pub fn errors(log: &str, shown: &str) -> Vec<String> {
    let parsed: Vec<String> = log.lines().filter_map(error_line).take(MAX_ERRORS).collect();
    if !parsed.is_empty() {
        return parsed;
    }
    let lines: Vec<&str> = log.lines().map(str::trim).filter(|l| !l.is_empty()).take(MAX_ERRORS).collect();
    vec![
        format!("{shown}: {}", if lines.is_empty() { "NVRTC failed without a message" } else { "" })
            + &lines.join("\n"),
    ]
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
        let log = "hangs/exercise.cu(21): error: identifier \"colum\" is undefined\n      return row * TILE + colum;\n                          ^\n\n\
                   hangs/exercise.cu(22): warning #550-D: variable \"x\" was set but never used\n\
                   my (copy)/exercise.cu(30): error: expected a \";\"\n\n2 errors detected in the compilation of \"hangs/exercise.cu\".\n";
        assert_eq!(
            errors(log, "hangs/exercise.cu"),
            vec![
                "hangs/exercise.cu:21: error: identifier \"colum\" is undefined".to_owned(),
                "my (copy)/exercise.cu:30: error: expected a \";\"".to_owned(),
            ]
        );
        assert_eq!(errors("catastrophic failure\n\n", "a.cu"), vec!["a.cu: catastrophic failure".to_owned()]);
        assert_eq!(errors("", "a.cu"), vec!["a.cu: NVRTC failed without a message".to_owned()]);
    }
}
