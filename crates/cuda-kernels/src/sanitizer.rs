//! Compute Sanitizer: runs a program under `memcheck`, `racecheck` or `synccheck` and says whether
//! it came out clean.

use std::process::Command;

use crate::ncu::{SelfCommand, find_cuda_tool};

/// The three tools the GPU suite runs every lesson under.
pub const TOOLS: [&str; 3] = ["memcheck", "racecheck", "synccheck"];

/// What one tool said of one program.
#[derive(Clone, Debug)]
pub struct Verdict {
    /// No error, hazard or warning, and the program itself succeeded.
    pub clean: bool,
    /// The tool's summary line, or why there is none.
    pub summary: String,
    /// The end of what the tool printed, for a failure's message.
    pub tail: String,
}

/// Runs `command` under `tool`; `Err` when compute-sanitizer is not installed or cannot start.
pub fn check(tool: &str, command: &SelfCommand) -> Result<Verdict, String> {
    let sanitizer = find_cuda_tool("compute-sanitizer")
        .ok_or("compute-sanitizer was not found on PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin")?;
    let output = Command::new(sanitizer)
        .args(["--tool", tool, "--error-exitcode", "9", "--print-limit", "20"])
        .arg(&command.program)
        .args(&command.args)
        .output()
        .map_err(|e| format!("cannot run compute-sanitizer: {e}"))?;
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    Ok(verdict(output.status.success(), &text))
}

fn verdict(succeeded: bool, text: &str) -> Verdict {
    let summary = text
        .lines()
        .rev()
        .find(|line| line.contains("ERROR SUMMARY:") || line.contains("RACECHECK SUMMARY:"))
        .map(|line| line.trim_start_matches('=').trim().to_owned());
    let clean_summary = summary.as_deref().is_some_and(|line| {
        line == "ERROR SUMMARY: 0 errors" || line == "RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"
    });
    let lines: Vec<&str> = text.lines().collect();
    Verdict {
        clean: succeeded && clean_summary && !text.contains("Error:"),
        summary: summary.unwrap_or_else(|| "no summary line".to_owned()),
        tail: lines[lines.len().saturating_sub(30)..].join("\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_clean_summary_of_a_successful_run_is_clean() {
        let clean =
            "========= COMPUTE-SANITIZER\n========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n";
        assert!(verdict(true, clean).clean);
        assert_eq!(verdict(true, clean).summary, "RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)");
        // The lesson-8 race before its fix: hazards reported, and the program's own check failed.
        let races = "========= Error: Race reported between Write access at \n\
            ========= Error: process didn't terminate successfully\n\
            ========= RACECHECK SUMMARY: 3 hazards displayed (24 errors, 0 warnings)\n";
        assert!(!verdict(false, races).clean);
        // A failed program with a clean summary (its output check failed) is not clean either.
        let failed = "========= Error: process didn't terminate successfully\n\
            ========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n";
        assert!(!verdict(false, failed).clean);
        assert!(verdict(true, "========= ERROR SUMMARY: 0 errors\n").clean);
        assert!(!verdict(true, "========= ERROR SUMMARY: 2 errors\n").clean);
        assert!(!verdict(true, "no summary").clean);
    }
}
