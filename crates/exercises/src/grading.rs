//! Grading a folder of submissions: one row each, resumable, written as CSV, JSON and Markdown.

use std::{
    collections::HashMap,
    ffi::OsString,
    fs,
    io::{self, Write},
    path::{Path, PathBuf},
    sync::Mutex,
    time::Duration,
};

use cuda_kernels::ncu::SharedCounters;
use serde::{Deserialize, Serialize};

use crate::{
    check::CheckOutcome,
    learner_file::{self, LearnerFile},
    manifest::{Exercise, MAX_SCORE, Measure},
    protocol::{ChildCommand, Launches, Role},
    submissions::Entry,
    supervise,
    verdict::{Verdict, judge},
};

/// The state file in the output folder: one JSON line per graded submission.
pub const STATE_FILE: &str = "progress.jsonl";
pub const CSV_FILE: &str = "grades.csv";
pub const JSON_FILE: &str = "grades.json";
pub const MARKDOWN_FILE: &str = "summary.md";
/// Output kept from a check process, per stream.
const OUTPUT_CAP: usize = 64 * 1024;
/// Largest result file read back from a check process.
const RESULT_CAP: u64 = 1024 * 1024;
/// Resident memory a check process group may use (compiling, profiling and timing together).
pub const MEMORY_LIMIT: u64 = 8 << 30;

/// One submission's row.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct Row {
    pub submission: String,
    /// The file graded, relative to the submissions folder.
    pub file: Option<String>,
    pub sha256: Option<String>,
    /// Why it was not graded (refused, not a valid learner file, could not be checked).
    pub not_graded: Option<String>,
    pub verdict: Option<Verdict>,
}

impl Row {
    pub fn score(&self) -> Option<u32> {
        self.verdict.as_ref().and_then(|v| v.score)
    }

    pub fn graded(&self) -> bool {
        self.score().is_some()
    }
}

/// Starts this program's hidden check command ([`ChildCommand`]) on a file, in a process of its own.
pub struct Checker {
    pub program: PathBuf,
    /// Arguments before the child command: none for this program (a test's shell takes `-c SCRIPT sh`).
    pub leading_args: Vec<OsString>,
    pub time_limit: Duration,
    /// Resident bytes the check's process group may use ([`MEMORY_LIMIT`] by default).
    pub memory_limit: u64,
    /// Where checks running side by side take the GPU in turn (`None`: one check at a time), and
    /// how long one may wait for its turn.
    pub gpu_lock: Option<(PathBuf, Duration)>,
    /// The GPU the check runs on (`CUDA_VISIBLE_DEVICES`), where several are used.
    pub device: Option<String>,
    /// The reference solution's counters, once a check has measured them: later checks profile
    /// only their submission (half the profiled launches, which hold the GPU).
    pub known_reference: Mutex<Option<SharedCounters>>,
}

impl Checker {
    /// Checks `file` (shown as `shown`) in a child process killed at the time limit.
    pub fn check(&self, exercise: &Exercise, file: &LearnerFile, shown: &str) -> CheckOutcome {
        let outcome = match self.try_check(exercise, file, shown) {
            Ok(outcome) => outcome,
            Err(error) => CheckOutcome::CouldNotCheck { reason: format!("cannot run the check process: {error}") },
        };
        if let CheckOutcome::Correct(measured) = &outcome
            && let Ok(pair) = &measured.counters
        {
            self.known_reference().get_or_insert(pair.reference);
        }
        outcome
    }

    /// The reference's counters, once known (a check that panicked holding the lock left them whole).
    fn known_reference(&self) -> std::sync::MutexGuard<'_, Option<SharedCounters>> {
        self.known_reference.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn try_check(&self, exercise: &Exercise, file: &LearnerFile, shown: &str) -> io::Result<CheckOutcome> {
        let work = tempfile::tempdir()?;
        let copy = work.path().join("submission.cu");
        fs::write(&copy, &file.text)?;
        let mut permissions = fs::metadata(&copy)?.permissions();
        permissions.set_readonly(true);
        fs::set_permissions(&copy, permissions)?;
        let result = work.path().join("result.json");
        let child = ChildCommand {
            role: Role::Check,
            exercise: exercise.id.clone(),
            file: copy,
            name: shown.to_owned(),
            result: Some(result.clone()),
            launches: Launches::Both,
            gpu_lock: self.gpu_lock.as_ref().map(|(lock, _)| lock.clone()),
            known_reference: *self.known_reference(),
        };
        let mut command = std::process::Command::new(&self.program);
        command.args(&self.leading_args).args(child.args()).current_dir(work.path());
        // Temporary files (ncu's reports) in the check's own folder, where its sandbox may write.
        command.env("TMPDIR", work.path());
        if let Some(device) = &self.device {
            command.env("CUDA_VISIBLE_DEVICES", device);
        }
        let turn = supervise::Turn {
            marker: self.gpu_lock.as_ref().map(|_| work.path().join(crate::protocol::GPU_TURN_MARKER)),
            wait: self.gpu_lock.as_ref().map_or(Duration::ZERO, |(_, wait)| *wait),
        };
        let finished = supervise::run(&mut command, self.time_limit, OUTPUT_CAP, self.memory_limit, &turn)?;
        if let Some(bytes) = finished.memory_exceeded {
            return Ok(CheckOutcome::Crashed {
                detail: format!(
                    "the check used {} MiB of memory, more than the limit of {} MiB, and was stopped \
                     (an include of a device file, or a runaway allocation?)",
                    bytes >> 20,
                    self.memory_limit >> 20
                ),
            });
        }
        let mut text = String::new();
        if let Ok(file) = fs::File::open(&result) {
            io::Read::read_to_string(&mut io::Read::take(file, RESULT_CAP), &mut text)?;
        }
        let written: Option<CheckOutcome> = serde_json::from_str(&text).ok();
        let Some(status) = finished.status else {
            let seconds = self.time_limit.as_secs();
            return Ok(match written {
                Some(CheckOutcome::CorrectUnmeasured { .. }) => CheckOutcome::CorrectUnmeasured {
                    detail: format!("stopped at the time limit ({seconds} s) while profiling and timing"),
                },
                _ => CheckOutcome::TimedOut { seconds },
            });
        };
        if let (false, Some(CheckOutcome::CorrectUnmeasured { .. })) = (status.success(), &written) {
            return Ok(CheckOutcome::CorrectUnmeasured {
                detail: format!("the check process ended ({status}) while profiling and timing"),
            });
        }
        Ok(written.unwrap_or_else(|| {
            let stderr = finished.stderr.shown();
            let tail: Vec<&str> = stderr.lines().rev().take(12).collect::<Vec<_>>().into_iter().rev().collect();
            CheckOutcome::Crashed {
                detail: format!("the check process ended ({status}) without a result:\n{}", tail.join("\n")),
            }
        }))
    }
}

/// The rows already graded in `out_dir` for `exercise`, by (submission, sha256). A line that
/// cannot be read (a run killed while writing it) is ignored: that submission is graded again.
pub fn load_state(out_dir: &Path, exercise: &str) -> HashMap<(String, String), Row> {
    let text = fs::read_to_string(out_dir.join(STATE_FILE)).unwrap_or_default();
    text.lines()
        .filter_map(|line| serde_json::from_str::<StateLine>(line).ok())
        .filter(|line| line.exercise == exercise)
        .filter_map(|line| Some(((line.row.submission.clone(), line.row.sha256.clone()?), line.row)))
        .collect()
}

#[derive(Deserialize, Serialize)]
struct StateLine {
    exercise: String,
    row: Row,
}

fn append_state(out_dir: &Path, exercise: &str, row: &Row) -> io::Result<()> {
    let path = out_dir.join(STATE_FILE);
    // A run killed while writing leaves a line without its end: start a new line after it.
    let cut_off = fs::read(&path).is_ok_and(|text| text.last().is_some_and(|&last| last != b'\n'));
    let mut file = fs::OpenOptions::new().create(true).append(true).open(&path)?;
    let line = serde_json::to_string(&StateLine { exercise: exercise.to_owned(), row: row.clone() })?;
    writeln!(file, "{}{line}", if cut_off { "\n" } else { "" })?;
    file.sync_data()
}

/// A stable slice of a class: shard `index` (1-based) of `count`. A submission belongs to the
/// shard its name's SHA-256 gives, so every run with the same `count` splits the class alike,
/// whatever machine runs it and whatever else the folder holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl std::str::FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> Result<Shard, String> {
        let parsed = text.split_once('/').and_then(|(k, n)| Some((k.trim().parse().ok()?, n.trim().parse().ok()?)));
        match parsed {
            Some((index, count)) if (1..=count).contains(&index) => Ok(Shard { index, count }),
            _ => Err(format!("`{text}` is not a shard: give K/N with 1 <= K <= N, e.g. --shard 2/8")),
        }
    }
}

impl Shard {
    /// Whether the submission named `name` is this shard's.
    pub fn holds(&self, name: &str) -> bool {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(name.as_bytes());
        let value = u64::from_be_bytes(digest[..8].try_into().expect("8 bytes"));
        value % u64::from(self.count) == u64::from(self.index - 1)
    }
}

/// The grades `grade` wrote into `dir` (its `grades.json`).
pub fn read(dir: &Path) -> Result<Grades, crate::BadInput> {
    let path = dir.join(JSON_FILE);
    let text = fs::read_to_string(&path).map_err(|e| {
        crate::BadInput(format!("cannot read {}: {e}: give folders that `grade --out` wrote", path.display()))
    })?;
    serde_json::from_str(&text).map_err(|e| crate::BadInput(format!("{} is not a grades file: {e}", path.display())))
}

/// What `grades.json` holds, as [`read`] gives it back.
#[derive(Deserialize)]
pub struct Grades {
    pub exercise: String,
    pub rows: Vec<Row>,
}

/// Rows from the grades of several shards (each folder's `grades.json`), in the order one run
/// over the whole class gives them, and the exercise they grade. Their progress is joined too, so
/// that a later run into the merged folder resumes.
pub fn merge(dirs: &[PathBuf], out_dir: &Path) -> Result<(String, Vec<Row>), crate::BadInput> {
    let bad = |text: String| crate::BadInput(text);
    let (mut exercise, mut rows, mut seen): (Option<String>, Vec<Row>, HashMap<String, PathBuf>) =
        (None, Vec::new(), HashMap::new());
    for dir in dirs {
        let grades = read(dir)?;
        match &exercise {
            Some(first) if *first != grades.exercise => {
                return Err(bad(format!(
                    "{} grades {}, the others {first}: merge the shards of one exercise",
                    dir.display(),
                    grades.exercise
                )));
            }
            _ => exercise = Some(grades.exercise.clone()),
        }
        for row in grades.rows {
            if let Some(other) = seen.insert(row.submission.clone(), dir.clone()) {
                return Err(bad(format!(
                    "{:?} is in both {} and {}: merge the outputs of different shards (--shard K/N) of one class",
                    row.submission,
                    other.display(),
                    dir.display()
                )));
            }
            rows.push(row);
        }
    }
    let exercise = exercise.ok_or_else(|| bad("give at least one folder to merge".into()))?;
    rows.sort_by(|a, b| a.submission.cmp(&b.submission));
    fs::create_dir_all(out_dir).map_err(|e| bad(format!("cannot make {}: {e}", out_dir.display())))?;
    let state: String = dirs.iter().filter_map(|dir| fs::read_to_string(dir.join(STATE_FILE)).ok()).collect();
    if !state.is_empty() {
        fs::write(out_dir.join(STATE_FILE), state)
            .map_err(|e| bad(format!("cannot write in {}: {e}", out_dir.display())))?;
    }
    Ok((exercise, rows))
}

/// What a grading run did.
pub struct Graded {
    pub rows: Vec<Row>,
    /// Rows taken from an earlier run.
    pub resumed: usize,
}

/// A submission that passed validation and awaits its check.
struct Pending {
    index: usize,
    file: LearnerFile,
    row: Row,
    shown: String,
}

/// Grades `entries` for `exercise` (its starter text is `starter`) into `out_dir`: each file is
/// validated, then checked by `check` unless an earlier run in `out_dir` graded the same file;
/// the reports are rewritten after every row, so an interrupted run keeps what it finished.
/// `jobs` checks run at once (each takes the GPU in turn, see [`Checker::gpu_lock`]), `check`
/// told which worker (0 to `jobs - 1`) runs it, so that workers can be spread over GPUs; the
/// rows come out in the entries' order whatever order the checks end in.
/// `progress(name, index, total)` is told before each check.
pub fn grade(
    exercise: &Exercise,
    starter: &str,
    entries: &[Entry],
    out_dir: &Path,
    check: &(dyn Fn(&LearnerFile, &str, usize) -> CheckOutcome + Sync),
    progress: &(dyn Fn(&str, usize, usize) + Sync),
    jobs: usize,
) -> io::Result<Graded> {
    fs::create_dir_all(out_dir)?;
    let done = load_state(out_dir, &exercise.id);
    let (mut rows, mut resumed, mut pending): (Vec<Option<Row>>, usize, Vec<Pending>) =
        (vec![None; entries.len()], 0, Vec::new());
    for (index, entry) in entries.iter().enumerate() {
        rows[index] = match entry {
            Entry::Refused { name, reason } => Some(refused(name, reason.clone())),
            Entry::Found(submission) => {
                let mut row = Row {
                    submission: submission.name.clone(),
                    file: Some(submission.shown.clone()),
                    sha256: Some(submission.sha256.clone()),
                    not_graded: None,
                    verdict: None,
                };
                let key = (submission.name.clone(), submission.sha256.clone());
                match learner_file::validate(exercise, starter, &submission.bytes) {
                    Err(invalid) => {
                        row.not_graded = Some(format!("{}: {invalid}", submission.shown));
                        Some(row)
                    }
                    Ok(_) if done.contains_key(&key) => {
                        resumed += 1;
                        Some(done[&key].clone())
                    }
                    Ok(file) => {
                        pending.push(Pending { index, file, row, shown: submission.shown.clone() });
                        None
                    }
                }
            }
        };
    }
    let finished = |rows: &[Option<Row>]| rows.iter().flatten().cloned().collect::<Vec<Row>>();
    write_reports(exercise, &finished(&rows), out_dir)?;
    let total = entries.len();
    let queue = std::sync::Mutex::new(pending.into_iter());
    std::thread::scope(|scope| -> io::Result<()> {
        let (send, receive) = std::sync::mpsc::channel();
        for worker in 0..jobs.max(1) {
            let (send, queue) = (send.clone(), &queue);
            scope.spawn(move || {
                loop {
                    let next = queue.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).next();
                    let Some(Pending { index, file, row, shown }) = next else { break };
                    progress(&row.submission, index, total);
                    let outcome = check(&file, &shown, worker);
                    if send.send((index, row, outcome)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(send);
        for (index, mut row, outcome) in receive {
            if let CheckOutcome::CouldNotCheck { reason } = &outcome {
                row.not_graded = Some(format!("not checked: {reason}"));
            }
            row.verdict = Some(judge(exercise, &outcome));
            if row.graded() {
                append_state(out_dir, &exercise.id, &row)?;
            }
            rows[index] = Some(row);
            write_reports(exercise, &finished(&rows), out_dir)?;
        }
        Ok(())
    })?;
    Ok(Graded { rows: rows.into_iter().map(|row| row.expect("every entry has its row")).collect(), resumed })
}

fn refused(name: &str, reason: String) -> Row {
    Row { submission: name.to_owned(), file: None, sha256: None, not_graded: Some(reason), verdict: None }
}

/// `grades.csv`, `grades.json` and `summary.md` in `out_dir`, each replaced whole.
pub fn write_reports(exercise: &Exercise, rows: &[Row], out_dir: &Path) -> io::Result<()> {
    write_atomically(&out_dir.join(CSV_FILE), &csv(rows)?)?;
    let json = serde_json::json!({
        "exercise": exercise.id,
        "title": exercise.title,
        "max_score": MAX_SCORE,
        "rows": rows,
    });
    write_atomically(&out_dir.join(JSON_FILE), &(serde_json::to_string_pretty(&json)? + "\n"))?;
    write_atomically(&out_dir.join(MARKDOWN_FILE), &markdown(exercise, rows))
}

fn write_atomically(path: &Path, text: &str) -> io::Result<()> {
    let temporary = path.with_extension("partial");
    fs::write(&temporary, text)?;
    fs::rename(&temporary, path)
}

const CSV_HEADER: [&str; 16] = [
    "submission",
    "file",
    "graded",
    "outcome",
    "compiled",
    "correct",
    "load_wavefronts_per_request",
    "store_wavefronts_per_request",
    "ldmatrix_wavefronts_per_request",
    "time_vs_reference",
    "speedup_vs_starter",
    "shared_bytes",
    "score",
    "max_score",
    "lost_points",
    "sha256",
];

/// `text` safe in a spreadsheet cell: one that a spreadsheet would read as a formula (it starts
/// with `=`, `+`, `-`, `@`, a tab or a carriage return) gets a leading `'`, which spreadsheets
/// show as text.
pub fn spreadsheet_text(text: &str) -> String {
    match text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        true => format!("'{text}"),
        false => text.to_owned(),
    }
}

/// `text` as one Markdown table cell: `|`, backslashes and what Markdown or HTML would read
/// (`*`, `_`, backticks, `<`, `[`) escaped, line ends made visible as ` / `.
pub fn markdown_cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.replace("\r\n", "\n").chars() {
        match c {
            '\n' | '\r' => out.push_str(" / "),
            '|' | '\\' | '*' | '_' | '`' | '<' | '>' | '[' | ']' | '#' | '&' => {
                out.push('\\');
                out.push(c)
            }
            c if c.is_control() => out.push_str(&format!("\\u{{{:04x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    out
}

/// One line per row; a reason not graded fills `lost_points`. Text cells are made safe for
/// spreadsheets ([`spreadsheet_text`]).
pub fn csv(rows: &[Row]) -> io::Result<String> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(CSV_HEADER)?;
    let number = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.3}"));
    let flag = |v: Option<bool>| v.map_or(String::new(), |v| if v { "yes" } else { "no" }.to_owned());
    for row in rows {
        let verdict = row.verdict.as_ref();
        let lost = match (&row.not_graded, verdict) {
            (Some(reason), _) => reason.clone(),
            (None, Some(verdict)) => verdict.lost.join("; "),
            (None, None) => String::new(),
        };
        writer.write_record([
            spreadsheet_text(&row.submission),
            spreadsheet_text(&row.file.clone().unwrap_or_default()),
            flag(Some(row.graded())),
            verdict.map_or("not-graded".to_owned(), |v| v.outcome.clone()),
            flag(verdict.and_then(|v| v.compiled)),
            flag(verdict.and_then(|v| v.correct)),
            number(verdict.and_then(|v| v.load_wavefronts_per_request)),
            number(verdict.and_then(|v| v.store_wavefronts_per_request)),
            number(verdict.and_then(|v| v.matrix_load_wavefronts_per_request)),
            number(verdict.and_then(|v| v.time_vs_reference)),
            number(verdict.and_then(|v| v.speedup_vs_starter)),
            verdict.and_then(|v| v.shared_bytes).map_or(String::new(), |b| b.to_string()),
            row.score().map_or(String::new(), |s| s.to_string()),
            MAX_SCORE.to_string(),
            spreadsheet_text(&lost),
            row.sha256.clone().unwrap_or_default(),
        ])?;
    }
    String::from_utf8(writer.into_inner().map_err(|e| e.into_error())?).map_err(io::Error::other)
}

/// A summary for the instructor: counts, one table row per submission, then the reasons.
pub fn markdown(exercise: &Exercise, rows: &[Row]) -> String {
    let graded = rows.iter().filter(|r| r.graded()).count();
    let full = rows.iter().filter(|r| r.score() == Some(MAX_SCORE)).count();
    let mut out = format!(
        "# Grades: {} (lesson {}: {})\n\n{} submissions: {graded} graded ({full} with full marks), {} not graded.\n\n",
        exercise.id,
        exercise.lesson,
        exercise.title,
        rows.len(),
        rows.len() - graded
    );
    // The loads the exercise is about: ldmatrix's where it measures them, else LDS's.
    let matrix = exercise.requirements.iter().any(|r| r.measure == Measure::MatrixLoadWavefrontsPerRequest);
    let loads = if matrix { "ldmatrix wf/req" } else { "ld wf/req" };
    out.push_str(&format!(
        "| submission | score | compiled | correct | {loads} | st wf/req | time vs reference | lost points, or why not graded |\n"
    ));
    out.push_str("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
    let cell = |text: String| markdown_cell(&text);
    for row in rows {
        let verdict = row.verdict.as_ref();
        let flag = |v: Option<bool>| v.map_or("-", |v| if v { "yes" } else { "no" });
        let ratio = |v: Option<f64>| v.map_or("-".to_owned(), lesson_kit::cells::format_ratio);
        let lost = match (&row.not_graded, verdict) {
            (Some(reason), _) => reason.clone(),
            (None, Some(v)) if v.lost.is_empty() => "none".to_owned(),
            (None, Some(v)) => v.lost.join("; "),
            (None, None) => String::new(),
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            cell(row.submission.clone()),
            row.score().map_or("-".to_owned(), |s| format!("{s}/{MAX_SCORE}")),
            flag(verdict.and_then(|v| v.compiled)),
            flag(verdict.and_then(|v| v.correct)),
            ratio(verdict.and_then(|v| match matrix {
                true => v.matrix_load_wavefronts_per_request,
                false => v.load_wavefronts_per_request,
            })),
            ratio(verdict.and_then(|v| v.store_wavefronts_per_request)),
            verdict.and_then(|v| v.time_vs_reference).map_or("-".to_owned(), |t| format!("{t:.2}x")),
            cell(lost),
        ));
    }
    let notes: Vec<&String> = rows.iter().filter_map(|r| r.verdict.as_ref()).flat_map(|v| &v.notes).collect();
    if let Some(note) = notes.first() {
        out.push_str(&format!("\nNote: {}\n", markdown_cell(note)));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::{
        submissions::scan,
        verdict::tests::{measured, transpose},
    };

    /// A folder with `correct.cu` and `invalid.cu`, graded by a check that counts its calls.
    struct Setup {
        submissions: tempfile::TempDir,
        out: tempfile::TempDir,
        exercise: Exercise,
        starter: String,
    }

    impl Setup {
        fn new() -> Setup {
            let exercise = transpose();
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../exercises");
            let starter = fs::read_to_string(dir.join(&exercise.starter)).unwrap();
            let submissions = tempfile::tempdir().unwrap();
            fs::write(submissions.path().join("correct.cu"), fs::read(dir.join(&exercise.solution)).unwrap()).unwrap();
            fs::write(submissions.path().join("invalid.cu"), starter.replace("unsigned n)", "int n)")).unwrap();
            Setup { submissions, out: tempfile::tempdir().unwrap(), exercise, starter }
        }

        fn grade(&self, calls: &AtomicUsize) -> Graded {
            let entries = scan(self.submissions.path(), "exercise.cu").unwrap();
            let check = |_: &LearnerFile, _: &str, _: usize| {
                calls.fetch_add(1, Ordering::SeqCst);
                CheckOutcome::Correct(Box::new(measured(1, 1, 1.0)))
            };
            grade(&self.exercise, &self.starter, &entries, self.out.path(), &check, &|_, _, _| {}, 1).unwrap()
        }
    }

    #[test]
    fn a_rerun_keeps_what_was_graded_and_regrades_what_changed() {
        let setup = Setup::new();
        let calls = AtomicUsize::new(0);
        let first = setup.grade(&calls);
        assert_eq!((calls.load(Ordering::SeqCst), first.resumed), (1, 0), "the invalid file is never checked");
        assert_eq!(first.rows[0].score(), Some(100));
        assert_eq!(
            first.rows[1].not_graded.as_deref(),
            Some(
                "invalid.cu: kernel `transpose` takes (const unsigned* __restrict__ in, unsigned* __restrict__ out, int n); \
                  it must take (const unsigned* __restrict__ in, unsigned* __restrict__ out, unsigned n) as in the starter"
            )
        );
        let second = setup.grade(&calls);
        assert_eq!((calls.load(Ordering::SeqCst), second.resumed), (1, 1));
        assert_eq!(second.rows, first.rows);

        // A changed file is graded again; a line cut off by an interrupted run is ignored.
        let path = setup.submissions.path().join("correct.cu");
        fs::write(&path, fs::read_to_string(&path).unwrap().replace("(column ^ row)", "((column + row) % TILE)"))
            .unwrap();
        let mut state = fs::OpenOptions::new().append(true).open(setup.out.path().join(STATE_FILE)).unwrap();
        write!(state, "{{\"exercise\":\"transpose-swizzle\",\"row\":{{\"submis").unwrap();
        let third = setup.grade(&calls);
        assert_eq!((calls.load(Ordering::SeqCst), third.resumed), (2, 0));
        assert_ne!(third.rows[0].sha256, first.rows[0].sha256);
        let fourth = setup.grade(&calls);
        assert_eq!((calls.load(Ordering::SeqCst), fourth.resumed), (2, 1));
    }

    /// A checker whose "check process" is the shell script `script`, given the checker's arguments.
    fn shell_checker(script: &str, seconds: u64) -> Checker {
        Checker {
            program: "sh".into(),
            leading_args: vec!["-c".into(), script.into(), "sh".into()],
            time_limit: Duration::from_secs(seconds),
            memory_limit: MEMORY_LIMIT,
            gpu_lock: None,
            device: None,
            known_reference: Mutex::new(None),
        }
    }

    #[test]
    fn after_one_measured_check_the_next_profile_only_their_submission() {
        let (exercise, file) = (transpose(), LearnerFile { text: "x".into(), region: (1, 1) });
        // The check process answers with 1 wavefront per load, or 2 when told the reference's counters.
        let answer = |load| {
            let mut measured = crate::verdict::tests::measured(load, 1, 1.0);
            measured.counters.as_mut().unwrap().reference.load_wavefronts = 64;
            serde_json::to_string(&CheckOutcome::Correct(Box::new(measured))).unwrap()
        };
        let script = format!(
            r#"known=no; while [ $# -gt 0 ]; do case $1 in --result=*) r=${{1#--result=}};; --reference-counters=*) known=yes;; esac; shift; done
            if [ $known = yes ]; then echo '{}' > "$r"; else echo '{}' > "$r"; fi"#,
            answer(2),
            answer(1)
        );
        let checker = shell_checker(&script, 60);
        let load_wavefronts = |outcome: CheckOutcome| match outcome {
            CheckOutcome::Correct(m) => m.counters.unwrap().submission.load_wavefronts,
            other => panic!("{other:?}"),
        };
        assert_eq!(load_wavefronts(checker.check(&exercise, &file, "a.cu")), 32, "the first profiles both");
        assert_eq!(checker.known_reference.lock().unwrap().map(|c| c.load_wavefronts), Some(64));
        assert_eq!(load_wavefronts(checker.check(&exercise, &file, "b.cu")), 64, "the second is told the reference's");
    }

    #[test]
    fn the_check_process_reports_through_its_result_file_and_is_killed_or_blamed_when_it_cannot() {
        let exercise = transpose();
        let file = LearnerFile { text: "x".into(), region: (1, 1) };
        let write_result = r#"while [ $# -gt 0 ]; do case $1 in --result=*) r=${1#--result=};; esac; shift; done
            echo '{"outcome":"incorrect","input":"random","detail":"out[3] is 1"}' > "$r""#;
        assert_eq!(
            shell_checker(write_result, 60).check(&exercise, &file, "a.cu"),
            CheckOutcome::Incorrect { input: crate::manifest::Input::Random, detail: "out[3] is 1".into() }
        );
        assert_eq!(
            shell_checker("sleep 600", 1).check(&exercise, &file, "a.cu"),
            CheckOutcome::TimedOut { seconds: 1 }
        );
        let correct_then_slow = r#"while [ $# -gt 0 ]; do case $1 in --result=*) r=${1#--result=};; esac; shift; done
            echo '{"outcome":"correct-unmeasured","detail":"x"}' > "$r"; sleep 600"#;
        assert_eq!(
            shell_checker(correct_then_slow, 1).check(&exercise, &file, "a.cu"),
            CheckOutcome::CorrectUnmeasured {
                detail: "stopped at the time limit (1 s) while profiling and timing".into()
            },
            "a correct kernel too slow to time keeps what it showed"
        );
        let died =
            shell_checker("echo 'CUDA_ERROR_ILLEGAL_ADDRESS' >&2; kill -SEGV $$", 60).check(&exercise, &file, "a.cu");
        let CheckOutcome::Crashed { detail } = died else { panic!("{died:?}") };
        assert!(detail.starts_with("the check process ended (signal: 11"), "{detail}");
        assert!(detail.ends_with("without a result:\nCUDA_ERROR_ILLEGAL_ADDRESS"), "{detail}");
    }

    #[test]
    fn names_are_data_in_every_report() {
        let exercise = transpose();
        let names = ["=1+1", "-resubmitted", "@SUM(A1)", "+1", "\tx", "a \"quoted\" | *bold* <b>", "two\nlines"];
        let rows: Vec<Row> = names.iter().map(|n| refused(n, format!("{n}: refused"))).collect();
        let csv = csv(&rows).unwrap();
        let mut reader = ::csv::Reader::from_reader(csv.as_bytes());
        let cells: Vec<(String, String)> =
            reader.records().map(|r| r.unwrap()).map(|r| (r[0].to_owned(), r[13].to_owned())).collect();
        for ((submission, lost), name) in cells.iter().zip(names) {
            match name.starts_with(['=', '+', '-', '@', '\t']) {
                true => assert_eq!(submission, &format!("'{name}"), "a formula prefix is defused"),
                false => assert_eq!(submission, name, "the rest is kept as it is"),
            }
            assert!(!lost.starts_with(['=', '+', '-', '@']), "{lost}");
        }
        let markdown = markdown(&exercise, &rows);
        assert!(markdown.contains("| a \"quoted\" \\| \\*bold\\* \\<b\\> |"), "{markdown}");
        assert!(markdown.contains("| two / lines |"), "{markdown}");
        assert_eq!(markdown.lines().filter(|l| l.starts_with('|')).count(), 2 + names.len(), "one line per row");
        let json: serde_json::Value = serde_json::from_str(&serde_json::to_string(&rows).unwrap()).unwrap();
        assert_eq!(json[6]["submission"], "two\nlines", "JSON keeps the name exactly");
    }

    #[test]
    fn shards_split_a_class_stably_and_merged_they_equal_one_run() {
        assert_eq!("2/8".parse(), Ok(Shard { index: 2, count: 8 }));
        for bad in ["0/2", "3/2", "x", "1/0", "1-2"] {
            assert!(bad.parse::<Shard>().unwrap_err().contains("give K/N"), "{bad}");
        }
        let names: Vec<String> = (0..200).map(|i| format!("student-{i}")).collect();
        let shards: Vec<Shard> = (1..=3).map(|index| Shard { index, count: 3 }).collect();
        for name in &names {
            assert_eq!(shards.iter().filter(|s| s.holds(name)).count(), 1, "{name} is in exactly one shard");
        }
        assert!(shards.iter().all(|s| names.iter().filter(|n| s.holds(n)).count() > 40), "roughly even");

        let setup = Setup::new();
        for name in ["a", "b", "c", "d", "e"] {
            fs::copy(setup.submissions.path().join("correct.cu"), setup.submissions.path().join(format!("{name}.cu")))
                .unwrap();
        }
        let entries = scan(setup.submissions.path(), "exercise.cu").unwrap();
        let check = |_: &LearnerFile, _: &str, _: usize| CheckOutcome::Correct(Box::new(measured(1, 1, 1.0)));
        let whole =
            grade(&setup.exercise, &setup.starter, &entries, setup.out.path(), &check, &|_, _, _| {}, 1).unwrap();
        let parts: Vec<tempfile::TempDir> = (1..=2)
            .map(|index| {
                let shard = Shard { index, count: 2 };
                let out = tempfile::tempdir().unwrap();
                let mine: Vec<Entry> = entries.iter().filter(|e| shard.holds(e.name())).cloned().collect();
                grade(&setup.exercise, &setup.starter, &mine, out.path(), &check, &|_, _, _| {}, 1).unwrap();
                out
            })
            .collect();
        let merged = tempfile::tempdir().unwrap();
        let dirs: Vec<PathBuf> = parts.iter().map(|p| p.path().to_path_buf()).collect();
        let (exercise, rows) = merge(&dirs, merged.path()).unwrap();
        assert_eq!(exercise, "transpose-swizzle");
        assert_eq!(rows, whole.rows);
        write_reports(&setup.exercise, &rows, merged.path()).unwrap();
        for file in [CSV_FILE, JSON_FILE, MARKDOWN_FILE] {
            assert_eq!(
                fs::read_to_string(merged.path().join(file)).unwrap(),
                fs::read_to_string(setup.out.path().join(file)).unwrap(),
                "{file}"
            );
        }
        assert_eq!(load_state(merged.path(), "transpose-swizzle").len(), 6, "a rerun into the merged folder resumes");
        let twice = merge(&[dirs[0].clone(), dirs[0].clone()], merged.path()).unwrap_err();
        assert!(twice.0.contains("is in both"), "{}", twice.0);
    }

    #[test]
    fn checks_run_side_by_side_and_the_rows_keep_their_order() {
        let setup = Setup::new();
        for name in ["a", "b", "c", "d", "e", "f"] {
            fs::copy(setup.submissions.path().join("correct.cu"), setup.submissions.path().join(format!("{name}.cu")))
                .unwrap();
        }
        let entries = scan(setup.submissions.path(), "exercise.cu").unwrap();
        let (running, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let workers = std::sync::Mutex::new(std::collections::BTreeSet::new());
        let check = |_: &LearnerFile, shown: &str, worker: usize| {
            workers.lock().unwrap().insert(worker);
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            // Later entries end first.
            std::thread::sleep(Duration::from_millis(if shown < "c" { 300 } else { 50 }));
            running.fetch_sub(1, Ordering::SeqCst);
            CheckOutcome::Correct(Box::new(measured(if shown.starts_with('b') { 2 } else { 1 }, 1, 1.0)))
        };
        let parallel =
            grade(&setup.exercise, &setup.starter, &entries, setup.out.path(), &check, &|_, _, _| {}, 3).unwrap();
        assert!(most.load(Ordering::SeqCst) > 1, "checks ran side by side");
        assert!(workers.lock().unwrap().iter().all(|&w| w < 3) && workers.lock().unwrap().len() > 1, "worker numbers");
        let one_at_a_time = tempfile::tempdir().unwrap();
        let sequential =
            grade(&setup.exercise, &setup.starter, &entries, one_at_a_time.path(), &check, &|_, _, _| {}, 1).unwrap();
        assert_eq!(parallel.rows, sequential.rows, "the same rows in the same order");
        assert_eq!(parallel.rows[1].score(), Some(70), "b.cu's own verdict stays on its row");
        assert_eq!(
            fs::read_to_string(setup.out.path().join(CSV_FILE)).unwrap(),
            fs::read_to_string(one_at_a_time.path().join(CSV_FILE)).unwrap()
        );
    }

    #[test]
    fn the_state_of_another_exercise_is_not_used() {
        let setup = Setup::new();
        setup.grade(&AtomicUsize::new(0));
        assert_eq!(load_state(setup.out.path(), "transpose-swizzle").len(), 1);
        assert!(load_state(setup.out.path(), "row-sums").is_empty());
    }
}
