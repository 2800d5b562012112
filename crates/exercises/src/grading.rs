//! Grading a folder of submissions: one row each, resumable, written as CSV, JSON and Markdown.

use std::{
    collections::HashMap,
    ffi::OsString,
    fs,
    io::{self, Write},
    path::{Path, PathBuf},
    sync::{
        Condvar, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use serde::{Deserialize, Serialize};

use cuda_kernels::ncu::SharedCounters;

use crate::{
    check::{self, CheckOutcome, CounterPair, Profiled},
    diagnostics,
    learner_file::{self, LearnerFile},
    manifest::{Exercise, MAX_SCORE, Measure},
    protocol::{
        After, BatchFiles, CheckRequest, ChildCommand, Launches, Role, SessionRequest, session_result, session_stopped,
        write_whole,
    },
    submissions::Entry,
    supervise::{self, Finished, Served},
    verdict::{Verdict, judge},
};

/// The state file in the output folder: one JSON line per graded submission.
pub const STATE_FILE: &str = "progress.jsonl";
pub const CSV_FILE: &str = "grades.csv";
pub const JSON_FILE: &str = "grades.json";
pub const MARKDOWN_FILE: &str = "summary.md";
/// Output kept from a check process, per stream (per request for a check).
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

/// Starts this program's hidden check and profile commands ([`ChildCommand`]) on files, each in a
/// process of its own.
pub struct Checker {
    pub program: PathBuf,
    /// Arguments before the child command: none for this program (a test's shell takes `-c SCRIPT sh`).
    pub leading_args: Vec<OsString>,
    /// How long a check, or a profile, may take.
    pub time_limit: Duration,
    /// Resident bytes the check's process group may use ([`MEMORY_LIMIT`] by default).
    pub memory_limit: u64,
    /// Where checks running side by side take the GPU in turn (`None`: one check at a time), and
    /// how long one may wait for its turn.
    pub gpu_lock: Option<(PathBuf, Duration)>,
    /// The GPU the check runs on (`CUDA_VISIBLE_DEVICES`, see [`visible_device`]).
    pub device: Option<String>,
    /// Check processes waiting for their next file.
    idle: Mutex<Vec<CheckProcess>>,
}

/// Whether a check may take an idle check process.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fresh {
    IfNoneIdle,
    Always,
}

/// A check process (`__check-submissions`) and its folder, serving one exercise's checks.
struct CheckProcess {
    exercise: String,
    /// Declared before its folder: killed before the folder is removed.
    server: supervise::Server,
    folder: tempfile::TempDir,
    requests: u64,
}

/// The `CUDA_VISIBLE_DEVICES` that shows a check GPU `ordinal` alone, `ordinal` numbering the GPUs
/// this process sees (`visible`: its own `CUDA_VISIBLE_DEVICES`, if set), as CUDA numbers them.
/// A process that sees one GPU starts CUDA on that GPU only: 0.13 s instead of 0.33 s where two
/// H100s are visible, and a host starts its processes' CUDA largely one at a time.
pub fn visible_device(ordinal: u32, visible: Option<&str>) -> Result<String, String> {
    let Some(visible) = visible else { return Ok(ordinal.to_string()) };
    let shown: Vec<&str> = visible.split(',').map(str::trim).filter(|entry| !entry.is_empty()).collect();
    match shown.get(ordinal as usize) {
        Some(device) => Ok((*device).to_owned()),
        None => Err(format!(
            "GPU {ordinal} is not among the {} that CUDA_VISIBLE_DEVICES={visible:?} shows: name GPUs 0 to {} \
             (they number the visible ones), or unset CUDA_VISIBLE_DEVICES",
            shown.len(),
            shown.len().saturating_sub(1),
        )),
    }
}

/// `Err` saying what is wrong with `--gpus` (`gpus`) where this process sees `visible` GPUs.
pub fn check_gpu_list(gpus: &[u32], visible: usize) -> Result<(), String> {
    if let Some(&missing) = gpus.iter().find(|&&gpu| gpu as usize >= visible) {
        return Err(format!(
            "--gpus names GPU {missing}, but this machine shows {visible} (numbered 0 to {}): see nvidia-smi",
            visible.saturating_sub(1)
        ));
    }
    match gpus.iter().enumerate().find(|(at, gpu)| gpus[..*at].contains(gpu)) {
        Some((_, twice)) => Err(format!(
            "--gpus names GPU {twice} twice: name each GPU once, and give --jobs N for more checks on each"
        )),
        None => Ok(()),
    }
}

/// A checked file and its outcome, whose counters a profile fills in.
pub type Checked<'a> = (&'a LearnerFile, &'a mut CheckOutcome);

/// How a supervised child ended: what it wrote to its result file, if that reads whole, and how
/// its process ended.
struct Ended<T> {
    written: Option<T>,
    /// `None` when it was killed at the time limit or for its memory.
    status: Option<std::process::ExitStatus>,
    memory_exceeded: Option<u64>,
    /// The last lines it printed to its standard error.
    stderr_tail: String,
}

impl Checker {
    /// Checks with `program` (this program, in the grader) one at a time on the first GPU it
    /// sees, each within `time_limit` and [`MEMORY_LIMIT`].
    pub fn new(program: PathBuf, time_limit: Duration) -> Checker {
        Checker {
            program,
            leading_args: Vec::new(),
            time_limit,
            memory_limit: MEMORY_LIMIT,
            gpu_lock: None,
            device: None,
            idle: Mutex::default(),
        }
    }

    /// Checks `file` (shown as `shown`) in a child process killed at the time limit, then profiles
    /// it if it is correct.
    pub fn check(&self, exercise: &Exercise, file: &LearnerFile, shown: &str) -> CheckOutcome {
        let mut outcome = self.check_unprofiled(exercise, file, shown);
        self.profile(exercise, &mut [(file, &mut outcome)]);
        outcome
    }

    /// Checks `file` in a child process: everything but its counters ([`Checker::profile`]).
    pub fn check_unprofiled(&self, exercise: &Exercise, file: &LearnerFile, shown: &str) -> CheckOutcome {
        match self.try_check(exercise, file, shown) {
            Ok(outcome) => outcome,
            Err(error) => CheckOutcome::CouldNotCheck { reason: format!("cannot run the check process: {error}") },
        }
    }

    /// Fills in the counters of the correct outcomes among `checked` that need them: profiled
    /// together in one process (one set-up of Nsight Compute for them all). Where that fails and
    /// the reference alone still profiles, they are profiled again in halves, and the halves that
    /// fail in halves, so that only a submission whose own profile fails loses its counter points
    /// (one such among n costs about 2 log2(n) more profiles, not n); after a profile stopped at
    /// the time limit, each alone (halves would wait out the limit again at every step).
    pub fn profile(&self, exercise: &Exercise, checked: &mut [Checked<'_>]) {
        if !check::needs_counters(exercise) {
            return;
        }
        let mut waiting: Vec<&mut Checked<'_>> =
            checked.iter_mut().filter(|(_, outcome)| matches!(outcome, CheckOutcome::Correct(_))).collect();
        self.profile_together(exercise, &mut waiting);
    }

    fn profile_together(&self, exercise: &Exercise, waiting: &mut [&mut Checked<'_>]) {
        if waiting.is_empty() {
            return;
        }
        let files: Vec<&LearnerFile> = waiting.iter().map(|(file, _)| *file).collect();
        // (the counters, or why not; whether that is each submission's own failure)
        let outcome = self.try_profile(exercise, &files);
        let stopped = matches!(outcome, Ok(Ended { written: None, status: None, .. }));
        let (measured, blamed): (Result<Vec<CounterPair>, String>, bool) = match outcome {
            // Not the submissions' doing: the grader could not start it.
            Err(error) => (Err(format!("cannot run the profile process: {error}")), false),
            Ok(Ended { memory_exceeded: Some(bytes), .. }) => (
                Err(format!(
                    "the profile used {} MiB of memory, more than the limit of {} MiB, and was stopped",
                    bytes >> 20,
                    self.memory_limit >> 20
                )),
                true,
            ),
            Ok(Ended { written: Some(Profiled::Measured { reference, submissions }), .. }) => {
                match submissions.len() == files.len() {
                    true => (
                        Ok(submissions.into_iter().map(|submission| CounterPair { submission, reference }).collect()),
                        false,
                    ),
                    false => (
                        Err(format!(
                            "the profile reported {} counters for {} submissions",
                            submissions.len(),
                            files.len()
                        )),
                        false,
                    ),
                }
            }
            Ok(Ended { written: Some(Profiled::Failed { reason, reference_profiles }), .. }) => {
                (Err(reason), reference_profiles)
            }
            Ok(Ended { written: None, status: None, .. }) => {
                (Err(format!("the profile stopped at the time limit ({} s)", self.time_limit.as_secs())), true)
            }
            Ok(Ended { written: None, status: Some(status), stderr_tail, .. }) => {
                (Err(format!("the profile process ended ({status}) without a result:\n{stderr_tail}")), true)
            }
        };
        match measured {
            Ok(pairs) => {
                for ((_, outcome), pair) in waiting.iter_mut().zip(pairs) {
                    set_counters(outcome, Ok(pair), None);
                }
            }
            Err(_) if blamed && waiting.len() > 1 => {
                let part = if stopped { 1 } else { waiting.len().div_ceil(2) };
                for part in waiting.chunks_mut(part) {
                    self.profile_together(exercise, part);
                }
            }
            Err(why) => {
                for (_, outcome) in waiting.iter_mut() {
                    set_counters(outcome, Err(why.clone()), blamed.then(|| why.clone()));
                }
            }
        }
    }

    /// Checks `file` in a check process (an idle one, or a new one).
    /// A crash in a process that had checked other files is checked again in a fresh one, so that
    /// no crash is blamed on a submission for what an earlier kernel may have left in the process.
    fn try_check(&self, exercise: &Exercise, file: &LearnerFile, shown: &str) -> io::Result<CheckOutcome> {
        let process = self.check_process(exercise, Fresh::IfNoneIdle)?;
        let reused = process.requests > 0;
        match self.check_in(process, file, shown)? {
            CheckOutcome::Crashed { .. } if reused => {
                self.check_in(self.check_process(exercise, Fresh::Always)?, file, shown)
            }
            outcome => Ok(outcome),
        }
    }

    /// Checks `file` in `process`, which goes back to wait for the next file if it says it goes on
    /// serving.
    fn check_in(&self, mut process: CheckProcess, file: &LearnerFile, shown: &str) -> io::Result<CheckOutcome> {
        process.requests += 1;
        let request = CheckRequest { number: process.requests, name: shown.to_owned() };
        let files = request.files(process.folder.path());
        fs::create_dir(&files.folder)?;
        read_only_copy(&files.submission, file)?;
        let limits = self.limits(Some(files.turn_marker.clone()));
        let served = process.server.serve(&serde_json::to_string(&request)?, &limits, &|| files.answered.exists())?;
        let written = read_result(&files.result)?;
        let outcome = match served {
            Served::Answered { stderr, .. } => {
                if fs::read_to_string(&files.answered).ok().as_deref().and_then(After::read) == Some(After::Serving) {
                    self.idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(process);
                }
                written.unwrap_or_else(|| CheckOutcome::Crashed {
                    detail: format!("the check process answered without a result:\n{}", tail(&stderr)),
                })
            }
            Served::Ended(finished) => self.ended_check(finished, written),
        };
        // The process's own folder goes with it, if it ended.
        let _ = fs::remove_dir_all(&files.folder);
        Ok(outcome)
    }

    /// An idle check process for `exercise`, or a new one.
    fn check_process(&self, exercise: &Exercise, fresh: Fresh) -> io::Result<CheckProcess> {
        let mut idle = self.idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        while let (Fresh::IfNoneIdle, Some(at)) =
            (fresh, idle.iter().position(|process| process.exercise == exercise.id))
        {
            let process = idle.swap_remove(at);
            if process.server.running() {
                return Ok(process);
            }
        }
        drop(idle);
        let folder = tempfile::tempdir()?;
        let child = ChildCommand {
            role: Role::Check,
            exercise: exercise.id.clone(),
            files: Vec::new(),
            folder: Some(folder.path().to_owned()),
            result: None,
            launches: Launches::All,
            gpu_lock: self.gpu_lock.as_ref().map(|(lock, _)| lock.clone()),
        };
        let server = supervise::Server::start(&mut self.command(&child, folder.path()), OUTPUT_CAP)?;
        Ok(CheckProcess { exercise: exercise.id.clone(), server, folder, requests: 0 })
    }

    /// The outcome of a check whose process ended (or was stopped) before it answered: what it
    /// wrote as it went, if anything, else why it ended.
    fn ended_check(&self, finished: supervise::Finished, written: Option<CheckOutcome>) -> CheckOutcome {
        if let Some(bytes) = finished.memory_exceeded {
            return CheckOutcome::Crashed {
                detail: format!(
                    "the check used {} MiB of memory, more than the limit of {} MiB, and was stopped \
                     (an include of a device file, or a runaway allocation?)",
                    bytes >> 20,
                    self.memory_limit >> 20
                ),
            };
        }
        let Some(status) = finished.status else {
            let seconds = self.time_limit.as_secs();
            return match written {
                Some(CheckOutcome::CorrectUnmeasured { .. }) => CheckOutcome::CorrectUnmeasured {
                    detail: format!("stopped at the time limit ({seconds} s) while timing"),
                },
                _ => CheckOutcome::TimedOut { seconds },
            };
        };
        match written {
            Some(CheckOutcome::CorrectUnmeasured { .. }) => {
                CheckOutcome::CorrectUnmeasured { detail: format!("the check process ended ({status}) while timing") }
            }
            _ => CheckOutcome::Crashed {
                detail: format!("the check process ended ({status}) without a result:\n{}", tail(&finished.stderr)),
            },
        }
    }

    /// Profiles `files` in one child process (`__profile-submissions`).
    fn try_profile(&self, exercise: &Exercise, files: &[&LearnerFile]) -> io::Result<Ended<Profiled>> {
        let work = tempfile::tempdir()?;
        let result = work.path().join("profiled.json");
        let copies = files
            .iter()
            .enumerate()
            .map(|(index, file)| read_only_copy(&work.path().join(format!("submission-{}.cu", index + 1)), file))
            .collect::<io::Result<Vec<_>>>()?;
        let child = ChildCommand {
            role: Role::Profile,
            exercise: exercise.id.clone(),
            files: copies,
            folder: None,
            result: Some(result.clone()),
            launches: Launches::All,
            gpu_lock: self.gpu_lock.as_ref().map(|(lock, _)| lock.clone()),
        };
        self.run_child(&child, work.path(), &result)
    }

    /// A profile session on this checker's GPU for `exercise`'s correct submissions, `None` where no
    /// requirement reads counters. Its process starts at its first batch.
    pub fn profile_session<'c>(&'c self, exercise: &'c Exercise) -> Option<CheckerSession<'c>> {
        check::needs_counters(exercise).then(|| CheckerSession { checker: self, exercise, running: None })
    }

    /// Runs `child` in `work` under the time, memory and output limits; what it wrote to `result`.
    fn run_child<T: serde::de::DeserializeOwned>(
        &self,
        child: &ChildCommand,
        work: &Path,
        result: &Path,
    ) -> io::Result<Ended<T>> {
        let limits = self.limits(self.gpu_lock.as_ref().map(|_| work.join(crate::protocol::GPU_TURN_MARKER)));
        let finished = supervise::run(&mut self.command(child, work), &limits, OUTPUT_CAP)?;
        Ok(Ended {
            written: read_result(result)?,
            status: finished.status,
            memory_exceeded: finished.memory_exceeded,
            stderr_tail: tail(&finished.stderr),
        })
    }

    /// `child` as a command run in `work`, on this checker's GPU.
    fn command(&self, child: &ChildCommand, work: &Path) -> std::process::Command {
        let mut command = std::process::Command::new(&self.program);
        command.args(&self.leading_args).args(child.args()).current_dir(work);
        // Temporary files (ncu's reports) in the child's own folder, where its sandbox may write.
        command.env("TMPDIR", work);
        // One hardware work queue (CUDA makes eight): a check launches on one stream, and sixteen
        // check processes starting at once on four H100s made their contexts in 0.8 s instead of
        // 1.8 to 3.0 s (host-limits/four-h100.txt, item 11).
        command.env("CUDA_DEVICE_MAX_CONNECTIONS", "1");
        if let Some(device) = &self.device {
            command.env("CUDA_VISIBLE_DEVICES", device);
        }
        command
    }

    /// The time and memory limits of a child, its time counted from its turn on the GPU (once it
    /// writes `marker`) when checks share the GPU.
    fn limits(&self, marker: Option<PathBuf>) -> supervise::Limits {
        let turn = match &self.gpu_lock {
            Some((_, wait)) => supervise::Turn { marker, wait: *wait },
            None => supervise::Turn::default(),
        };
        supervise::Limits { time: self.time_limit, memory: self.memory_limit, turn }
    }
}

/// Nsight Compute kept running on one GPU for a whole run: batch after batch of checked files is
/// launched under it as they come, and their counters are read once, at its end. A profile of its
/// own costs each batch seconds (the profiled process's start and compiles, Nsight Compute's
/// set-up), several at once on a host of several GPUs, where each batch's launches take tens of
/// milliseconds.
pub trait ProfileSession {
    /// Launches `files` (after the reference) in the session. `Err` if the session ended first (a
    /// launch crashed, or passed the time limit): every batch launched in it is lost, to be profiled
    /// apart ([`Checks::profile`]), and the next batch starts a session anew.
    fn launch(&mut self, files: &[&LearnerFile]) -> Result<(), String>;
    /// Ends the session: for each batch launched since it started, each file's counters beside its
    /// batch's reference's, or why its own profiled launch failed.
    fn end(&mut self) -> Result<Vec<Vec<Result<CounterPair, String>>>, String>;
}

/// A [`Checker`]'s [`ProfileSession`]: a `__profile-submissions --folder=` process, served batch by
/// batch like a check process.
pub struct CheckerSession<'c> {
    checker: &'c Checker,
    exercise: &'c Exercise,
    /// The process, its folder, and what each batch launched in it did, batch by batch.
    running: Option<(supervise::Server, tempfile::TempDir, Vec<Vec<check::Launched>>)>,
}

impl CheckerSession<'_> {
    fn start(&self) -> io::Result<(supervise::Server, tempfile::TempDir, Vec<Vec<check::Launched>>)> {
        let folder = tempfile::tempdir()?;
        let child = ChildCommand {
            role: Role::Profile,
            exercise: self.exercise.id.clone(),
            files: Vec::new(),
            folder: Some(folder.path().to_owned()),
            result: None,
            launches: Launches::All,
            gpu_lock: self.checker.gpu_lock.as_ref().map(|(lock, _)| lock.clone()),
        };
        let server = supervise::Server::start(&mut self.checker.command(&child, folder.path()), OUTPUT_CAP)?;
        Ok((server, folder, Vec::new()))
    }
}

impl ProfileSession for CheckerSession<'_> {
    fn launch(&mut self, files: &[&LearnerFile]) -> Result<(), String> {
        if self.running.is_none() {
            self.running = Some(self.start().map_err(|e| format!("cannot start the profile session: {e}"))?);
        }
        let (server, folder, batches) = self.running.as_mut().expect("started");
        let number = batches.len() as u64 + 1;
        let batch = BatchFiles::of(folder.path(), number);
        let copied = fs::create_dir(&batch.folder).and_then(|()| {
            files
                .iter()
                .enumerate()
                .try_for_each(|(index, file)| read_only_copy(&batch.submission(index), file).map(drop))
        });
        let request = serde_json::to_string(&SessionRequest::Batch { number, files: files.len() }).expect("JSON");
        let limits = self.checker.limits(Some(batch.turn_marker.clone()));
        let served = copied.and_then(|()| server.serve(&request, &limits, &|| batch.launched.exists()));
        let launched = match served {
            Ok(Served::Answered { .. }) => read_result::<Vec<check::Launched>>(&batch.launched)
                .ok()
                .flatten()
                .filter(|launched| launched.len() == files.len())
                .ok_or_else(|| "the profile session answered without saying what each launch did".to_owned()),
            Ok(Served::Ended(finished)) => Err(match (finished.memory_exceeded, finished.status) {
                (Some(bytes), _) => format!(
                    "the profile session used {} MiB of memory, more than the limit of {} MiB, and was stopped",
                    bytes >> 20,
                    self.checker.memory_limit >> 20
                ),
                (None, None) => {
                    format!(
                        "a batch passed the time limit ({} s) and the session was stopped",
                        self.checker.time_limit.as_secs()
                    )
                }
                (None, Some(status)) => {
                    match (fs::read_to_string(session_stopped(folder.path())), session_counters(folder.path())) {
                        (Ok(why), _) => format!("the profile session stopped: {}", diagnostics::scrub(&why)),
                        (_, Some(Err(why))) => format!("the profile session's Nsight Compute failed: {why}"),
                        _ => format!("the profile session ended ({status}):\n{}", tail(&finished.stderr)),
                    }
                }
            }),
            Err(error) => Err(format!("cannot serve the profile session: {error}")),
        };
        match launched {
            Ok(launched) => {
                batches.push(launched);
                Ok(())
            }
            Err(why) => {
                self.running = None;
                Err(why)
            }
        }
    }

    fn end(&mut self) -> Result<Vec<Vec<Result<CounterPair, String>>>, String> {
        let Some((mut server, folder, batches)) = self.running.take() else { return Ok(Vec::new()) };
        let result = session_result(folder.path());
        let request = serde_json::to_string(&SessionRequest::End).expect("JSON");
        // Its time limit runs from now: no turn on the GPU is left to wait for.
        let limits = supervise::Limits { turn: supervise::Turn::default(), ..self.checker.limits(None) };
        let served = server.serve(&request, &limits, &|| result.exists());
        let counters = match session_counters(folder.path()) {
            Some(counters) => counters,
            None => Err(match served {
                Ok(Served::Ended(Finished { status: None, .. })) => {
                    "the profile session's end passed a limit".to_owned()
                }
                Ok(Served::Ended(finished)) => {
                    format!("the profile session ended without its counters:\n{}", tail(&finished.stderr))
                }
                Ok(Served::Answered { .. }) => "the profile session's counters could not be read".to_owned(),
                Err(error) => format!("cannot end the profile session: {error}"),
            }),
        };
        pair_up(&batches, &counters?)
    }
}

/// What a session in `folder` wrote once its target had ended: the counters of every launch, or
/// why Nsight Compute gave none; `None` if it wrote nothing whole.
fn session_counters(folder: &Path) -> Option<Result<Vec<SharedCounters>, String>> {
    read_result(&session_result(folder)).ok().flatten()
}

/// Each batch's launches ([`check::Launched`]) matched with the counters of every launch of the
/// session in order: each batch's reference, then its files launched. `Err` if they do not add up.
fn pair_up(
    batches: &[Vec<check::Launched>],
    counters: &[SharedCounters],
) -> Result<Vec<Vec<Result<CounterPair, String>>>, String> {
    use check::Launched;
    let expected: usize =
        batches.iter().map(|b| 1 + b.iter().filter(|l| !matches!(l, Launched::NotLaunched { .. })).count()).sum();
    if counters.len() != expected {
        return Err(format!(
            "the profile session reported {} launches where its {} batches made {expected}",
            counters.len(),
            batches.len()
        ));
    }
    let mut next = counters.iter().copied();
    Ok(batches
        .iter()
        .map(|batch| {
            let reference = next.next().expect("counted");
            let launches = batch.len();
            batch
                .iter()
                .enumerate()
                .map(|(index, launched)| {
                    let failed = |detail: &str| {
                        format!("launch {} of {} under Nsight Compute: {detail}", index + 2, launches + 1)
                    };
                    match launched {
                        Launched::Checked => Ok(CounterPair { submission: next.next().expect("counted"), reference }),
                        Launched::Wrong { detail } => {
                            next.next();
                            Err(failed(detail))
                        }
                        Launched::NotLaunched { detail } => Err(failed(detail)),
                    }
                })
                .collect()
        })
        .collect())
}

/// What a child wrote to `result`, if that reads whole.
fn read_result<T: serde::de::DeserializeOwned>(result: &Path) -> io::Result<Option<T>> {
    let mut text = String::new();
    if let Ok(file) = fs::File::open(result) {
        io::Read::read_to_string(&mut io::Read::take(file, RESULT_CAP), &mut text)?;
    }
    Ok(serde_json::from_str(&text).ok())
}

/// The last lines of a child's standard error.
fn tail(stderr: &supervise::Captured) -> String {
    let shown = stderr.shown();
    let lines: Vec<&str> = shown.lines().rev().take(12).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join("\n")
}

/// A correct outcome's counters, and whether their profile failed by the submission's doing.
fn set_counters(outcome: &mut CheckOutcome, counters: Result<CounterPair, String>, profile_failed: Option<String>) {
    if let CheckOutcome::Correct(measured) = outcome {
        measured.counters = counters;
        measured.profile_failed = profile_failed;
    }
}

/// `file`'s text at `copy`, read-only: the copy a child command reads.
fn read_only_copy(copy: &Path, file: &LearnerFile) -> io::Result<PathBuf> {
    fs::write(copy, &file.text)?;
    let mut permissions = fs::metadata(copy)?.permissions();
    permissions.set_readonly(true);
    fs::set_permissions(copy, permissions)?;
    Ok(copy.to_owned())
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

/// Appends a line per row to the state file, synced once for all of them.
fn append_state(out_dir: &Path, exercise: &str, rows: &[Row]) -> io::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let path = out_dir.join(STATE_FILE);
    // A run killed while writing leaves a line without its end: start a new line after it.
    let cut_off = fs::read(&path).is_ok_and(|text| text.last().is_some_and(|&last| last != b'\n'));
    let mut text = String::from(if cut_off { "\n" } else { "" });
    for row in rows {
        text += &serde_json::to_string(&StateLine { exercise: exercise.to_owned(), row: row.clone() })?;
        text.push('\n');
    }
    let mut file = fs::OpenOptions::new().create(true).append(true).open(&path)?;
    file.write_all(text.as_bytes())?;
    file.sync_data()
}

/// A stable slice of a class: shard `index` (1-based) of `count`. A submission belongs to the
/// shard its name's SHA-256 gives, so every run with the same `count` splits the class alike,
/// whatever machine runs it and whatever else the folder holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
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
    /// What the run was to grade; `None` in files from before it was written.
    #[serde(flatten)]
    pub coverage: Option<Coverage>,
}

/// What a run grades: its slice of the class, if a shard, and how many submissions that holds.
/// A `grades.json` with fewer rows is from a run that has not finished.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub struct Coverage {
    pub shard: Option<Shard>,
    pub submissions: usize,
    /// The whole class the shard was cut from, so that shards of different classes, or of one
    /// folder before and after submissions came in, are not merged.
    pub class: ClassPrint,
}

/// A class folder's submissions: how many, and the SHA-256 of their names, one per line.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub struct ClassPrint {
    pub submissions: usize,
    pub names_sha256: String,
}

impl ClassPrint {
    pub fn of(entries: &[Entry]) -> ClassPrint {
        let names: String = entries.iter().map(|entry| format!("{}\n", entry.name())).collect();
        ClassPrint { submissions: entries.len(), names_sha256: crate::submissions::sha256_hex(names.as_bytes()) }
    }
}

/// Rows from the grades of several shards (each folder's `grades.json`), in the order one run
/// over the whole class gives them, and the exercise they grade. Their progress is joined too, so
/// that a later run into the merged folder resumes.
pub fn merge(dirs: &[PathBuf], out_dir: &Path) -> Result<(String, Vec<Row>, ClassPrint), crate::BadInput> {
    let bad = |text: String| crate::BadInput(text);
    let (mut exercise, mut rows, mut seen): (Option<String>, Vec<Row>, HashMap<String, PathBuf>) =
        (None, Vec::new(), HashMap::new());
    let mut shards: Vec<(Shard, &PathBuf)> = Vec::new();
    let mut class: Option<(ClassPrint, &PathBuf)> = None;
    for dir in dirs {
        let grades = read(dir)?;
        let Some(coverage) = grades.coverage else {
            return Err(bad(format!(
                "{} does not say which submissions it was to grade (an older grade wrote it): grade that shard again \
                 into the same folder, which keeps what it graded",
                dir.display()
            )));
        };
        if grades.rows.len() < coverage.submissions {
            return Err(bad(format!(
                "{} holds {} of its {} submissions: that run did not finish (stopped, or out of time?); grade it again \
                 into the same folder, which keeps what it graded, then merge",
                dir.display(),
                grades.rows.len(),
                coverage.submissions
            )));
        }
        match &class {
            Some((first, first_dir)) if *first != coverage.class => {
                return Err(bad(format!(
                    "{} and {} were cut from different classes ({} and {} submissions, or the same number with \
                     other names: was a submission added between their runs?): grade every shard of one state of \
                     the class folder",
                    first_dir.display(),
                    dir.display(),
                    first.submissions,
                    coverage.class.submissions
                )));
            }
            _ => class = Some((coverage.class.clone(), dir)),
        }
        match coverage.shard {
            Some(shard) => shards.push((shard, dir)),
            None if dirs.len() > 1 => {
                return Err(bad(format!(
                    "{} holds a whole class, not a shard (--shard K/N): merge the shards' folders alone",
                    dir.display()
                )));
            }
            None => {}
        }
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
    if let Some(&(first, first_dir)) = shards.first() {
        if let Some((other, dir)) = shards.iter().find(|(shard, _)| shard.count != first.count) {
            return Err(bad(format!(
                "{} is shard {}/{} and {} is shard {}/{}: merge the shards of one split",
                first_dir.display(),
                first.index,
                first.count,
                dir.display(),
                other.index,
                other.count
            )));
        }
        if let Some((shard, dir)) = shards.iter().enumerate().find_map(|(at, (shard, dir))| {
            shards[..at].iter().any(|(other, _)| other.index == shard.index).then_some((shard, dir))
        }) {
            return Err(bad(format!(
                "shard {}/{} is given twice (again as {}): give each shard's folder once",
                shard.index,
                shard.count,
                dir.display()
            )));
        }
        let missing: Vec<String> = (1..=first.count)
            .filter(|index| !shards.iter().any(|(shard, _)| shard.index == *index))
            .map(|index| format!("{index}/{}", first.count))
            .collect();
        if !missing.is_empty() {
            return Err(bad(format!(
                "the merge lacks shard {} of the class: give every shard's folder",
                missing.join(", ")
            )));
        }
    }
    let (class, _) = class.expect("a folder was read");
    if rows.len() != class.submissions {
        return Err(bad(format!(
            "the folders hold {} of the class's {} submissions: give every shard's folder",
            rows.len(),
            class.submissions
        )));
    }
    rows.sort_by(|a, b| a.submission.cmp(&b.submission));
    fs::create_dir_all(out_dir).map_err(|e| bad(format!("cannot make {}: {e}", out_dir.display())))?;
    // Each shard's lines, each ending its line (a run killed mid-line leaves one without).
    let state: String = dirs
        .iter()
        .filter_map(|dir| fs::read_to_string(dir.join(STATE_FILE)).ok())
        .flat_map(|text| text.lines().map(|line| format!("{line}\n")).collect::<Vec<_>>())
        .collect();
    if !state.is_empty() {
        fs::write(out_dir.join(STATE_FILE), state)
            .map_err(|e| bad(format!("cannot write in {}: {e}", out_dir.display())))?;
    }
    Ok((exercise, rows, class))
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

/// What grading asks of the GPU's side, told which worker (0 to `jobs - 1`) asks, so that workers
/// can be spread over GPUs.
pub trait Checks: Sync {
    /// Checks one file: everything but its counters.
    fn check(&self, file: &LearnerFile, shown: &str, worker: usize) -> CheckOutcome;
    /// Fills in the counters of `checked`, checked on `gpu` (see [`Checker::profile`]), several at once.
    fn profile(&self, checked: &mut [Checked<'_>], gpu: usize);
    /// The GPU (0, 1, ...) that `worker` checks on; its correct outcomes are profiled there.
    fn gpu_of(&self, worker: usize) -> usize;
    /// A session on `gpu` that profiles its batches for the whole run ([`ProfileSession`]); `None`:
    /// each batch is profiled by [`Checks::profile`].
    fn profile_session(&self, _gpu: usize) -> Option<Box<dyn ProfileSession + '_>> {
        None
    }
}

/// The most correct outcomes one batch of a profile holds by default. A profile of its own costs
/// about the same for 1 as for 64 (Nsight Compute's start and set-up); a batch in a session holds
/// what was checked while the one before launched: a cap bounds what waits for it, and what a
/// failing profile redoes in halves.
pub const PROFILE_BATCH: usize = 64;

/// How many checks [`grade`] runs at once, and how many correct outcomes a profile holds at most.
#[derive(Clone, Copy, Debug)]
pub struct Pace {
    /// Workers checking side by side, over all GPUs.
    pub workers: usize,
    /// The most correct outcomes one batch of a profile holds (at least 1).
    pub profile_batch: usize,
}

impl Pace {
    /// `workers` side by side, up to [`PROFILE_BATCH`] to a profile.
    pub fn new(workers: usize) -> Pace {
        Pace { workers, profile_batch: PROFILE_BATCH }
    }
}

/// A checked submission waiting for its counters, then for its row to be written.
type Outcome = (Pending, CheckOutcome);

/// Each GPU's correct outcomes waiting for a profile. Each GPU has a profiler of its own beside
/// its checking workers (a [`ProfileSession`] for the whole run, where the checks give one), which
/// launches whatever is waiting as soon as it is free: the checks never wait for a profile, and
/// when they end, what is left is at most what was checked during the last batch. A GPU's
/// profiles run one after another, each from its start to its end: started while the last one was
/// ending on the same GPU (measured on 4 x H100, Nsight Compute 2025.3), profiled processes died
/// of signal 11 and their submissions were blamed.
struct ProfileQueues {
    gpus: Vec<(Mutex<ProfileQueue>, Condvar)>,
    batch: usize,
}

struct ProfileQueue {
    waiting: Vec<Outcome>,
    /// Workers of this GPU still checking: its profiler stops once none is and nothing waits.
    checking: usize,
}

impl ProfileQueues {
    fn new(checks: &dyn Checks, pace: Pace) -> ProfileQueues {
        let mut checking = Vec::new();
        for worker in 0..pace.workers {
            let gpu = checks.gpu_of(worker);
            checking.resize(checking.len().max(gpu + 1), 0);
            checking[gpu] += 1;
        }
        let queue = |checking| (Mutex::new(ProfileQueue { waiting: Vec::new(), checking }), Condvar::new());
        ProfileQueues { gpus: checking.into_iter().map(queue).collect(), batch: pace.profile_batch.max(1) }
    }

    /// How many GPUs the workers check on.
    fn len(&self) -> usize {
        self.gpus.len()
    }

    /// `gpu`'s queue, locked, and the condition its profiler waits on.
    fn lock(&self, gpu: usize) -> (std::sync::MutexGuard<'_, ProfileQueue>, &Condvar) {
        let (queue, changed) = &self.gpus[gpu];
        (queue.lock().unwrap_or_else(|poisoned| poisoned.into_inner()), changed)
    }

    /// Adds a correct outcome checked on `gpu`, for its profiler.
    fn add(&self, gpu: usize, outcome: Outcome) {
        let (mut queue, changed) = self.lock(gpu);
        queue.waiting.push(outcome);
        changed.notify_one();
    }

    /// A worker of `gpu` has checked its last file.
    fn stop(&self, gpu: usize) {
        let (mut queue, changed) = self.lock(gpu);
        queue.checking -= 1;
        changed.notify_one();
    }

    /// The next profile of `gpu`: what waits (up to the batch), once anything does; empty once
    /// its workers have stopped and nothing is left.
    fn next(&self, gpu: usize) -> Vec<Outcome> {
        let (mut queue, changed) = self.lock(gpu);
        while queue.waiting.is_empty() && queue.checking > 0 {
            queue = changed.wait(queue).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        let take = queue.waiting.len().min(self.batch);
        queue.waiting.drain(..take).collect()
    }
}

/// A worker of `gpu` checking: it has stopped once this is dropped.
struct Checking<'q> {
    profiles: &'q ProfileQueues,
    gpu: usize,
}

impl Drop for Checking<'_> {
    fn drop(&mut self) {
        self.profiles.stop(self.gpu);
    }
}

/// Where a run writes its reports (`dir`), and the slice of the class it grades, if a shard.
#[derive(Clone, Debug)]
pub struct Destination<'a> {
    pub dir: &'a Path,
    pub shard: Option<Shard>,
    /// The whole class's print (of the entries before they were cut into shards).
    pub class: ClassPrint,
}

/// Grades `entries` for `exercise` (its starter text is `starter`) into `out.dir`: each file is
/// validated, then checked by `checks` unless an earlier run in `out_dir` graded the same file;
/// the reports are rewritten after every row, so an interrupted run keeps what it finished.
/// `pace.workers` check at once (each takes its GPU in turn, see [`Checker::gpu_lock`]); the
/// correct submissions of a GPU are profiled beside its checks, up to `pace.profile_batch` at a
/// time (see `ProfileQueues`), and a row is written once its counters are in (a session's, at its
/// end). The rows come out in the
/// entries' order whatever order the checks end in.
/// `progress(name, index, total)` is told before each check.
pub fn grade(
    exercise: &Exercise,
    starter: &str,
    entries: &[Entry],
    out: Destination<'_>,
    checks: &dyn Checks,
    progress: &(dyn Fn(&str, usize, usize) + Sync),
    pace: Pace,
) -> io::Result<Graded> {
    let out_dir = out.dir;
    let coverage = Coverage { shard: out.shard, submissions: entries.len(), class: out.class };
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
    write_reports(exercise, &finished(&rows), out_dir, &coverage)?;
    let total = entries.len();
    let queue = Mutex::new(pending.into_iter());
    let pace = Pace { workers: pace.workers.max(1), ..pace };
    let profiles = ProfileQueues::new(checks, pace);
    let ending = AtomicBool::new(false);
    std::thread::scope(|scope| -> io::Result<()> {
        let (send, receive) = std::sync::mpsc::channel();
        for gpu in 0..profiles.len() {
            let (send, profiles) = (send.clone(), &profiles);
            scope.spawn(move || {
                // Sends a batch's rows; `false` once nobody reads them (the run is ending).
                let done = |batch: Vec<Outcome>| {
                    batch.into_iter().all(|(pending, outcome)| send.send((pending.index, pending.row, outcome)).is_ok())
                };
                let apart = |mut batch: Vec<Outcome>| {
                    let mut checked: Vec<Checked<'_>> =
                        batch.iter_mut().map(|(pending, outcome)| (&pending.file, outcome)).collect();
                    checks.profile(&mut checked, gpu);
                    done(batch)
                };
                let mut session = checks.profile_session(gpu);
                // The batches launched in the session, whose counters come at its end.
                let mut held: Vec<Vec<Outcome>> = Vec::new();
                // Sessions in a row that ended at their first batch.
                let mut unstarted = 0;
                loop {
                    let batch = profiles.next(gpu);
                    if batch.is_empty() {
                        break;
                    }
                    let Some(running) = session.as_mut() else {
                        if !apart(batch) {
                            return;
                        }
                        continue;
                    };
                    let files: Vec<&LearnerFile> = batch.iter().map(|(pending, _)| &pending.file).collect();
                    let launched = running.launch(&files);
                    drop(files);
                    match launched {
                        Ok(()) => {
                            unstarted = 0;
                            held.push(batch);
                        }
                        // The session ended: what it held is profiled apart, this batch too.
                        Err(_) => {
                            unstarted = if held.is_empty() { unstarted + 1 } else { 0 };
                            if !held.drain(..).chain([batch]).all(apart) {
                                return;
                            }
                            // Twice in a row at its first batch: a session cannot start here (no
                            // counters may be read, one part of the profiler missing), and each try
                            // would cost this GPU a start of Nsight Compute more for every batch.
                            if unstarted == 2 {
                                session = None;
                            }
                        }
                    }
                }
                let Some(mut session) = session else { return };
                match session.end() {
                    Ok(counted) if counted.len() == held.len() => {
                        for (mut batch, counters) in held.into_iter().zip(counted) {
                            for ((_, outcome), counters) in batch.iter_mut().zip(counters) {
                                let blamed = counters.as_ref().err().cloned();
                                set_counters(outcome, counters, blamed);
                            }
                            if !done(batch) {
                                return;
                            }
                        }
                    }
                    _ => {
                        held.into_iter().all(apart);
                    }
                }
            });
        }
        for worker in 0..pace.workers {
            let (send, queue, profiles, ending) = (send.clone(), &queue, &profiles, &ending);
            let gpu = checks.gpu_of(worker);
            scope.spawn(move || {
                // Stopped however the worker ends, a panic too: else its GPU's profiler would wait
                // for it, and the run for the profiler, forever.
                let _stopped = Checking { profiles, gpu };
                while !ending.load(Ordering::Relaxed) {
                    // (Not `while let`: the queue's lock would be held through the check.)
                    let next = queue.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).next();
                    let Some(pending) = next else { break };
                    progress(&pending.row.submission, pending.index, total);
                    match checks.check(&pending.file, &pending.shown, worker) {
                        outcome @ CheckOutcome::Correct(_) => profiles.add(gpu, (pending, outcome)),
                        outcome => {
                            if send.send((pending.index, pending.row, outcome)).is_err() {
                                break;
                            }
                        }
                    }
                }
            });
        }
        drop(send);
        while let Ok(first) = receive.recv() {
            // Rows that came together are written together: a profile session's end sends its
            // GPU's rows at once, and each write of the reports holds every row so far.
            let mut graded = Vec::new();
            for (index, mut row, outcome) in std::iter::once(first).chain(receive.try_iter()) {
                if let CheckOutcome::CouldNotCheck { reason } = &outcome {
                    row.not_graded = Some(format!("not checked: {reason}"));
                }
                row.verdict = Some(judge(exercise, &outcome));
                if row.graded() {
                    graded.push(row.clone());
                }
                rows[index] = Some(row);
            }
            let kept = append_state(out_dir, &exercise.id, &graded);
            if let Err(error) = kept.and_then(|()| write_reports(exercise, &finished(&rows), out_dir, &coverage)) {
                // The workers stop before their next file: no row of theirs could be written.
                ending.store(true, Ordering::Relaxed);
                return Err(error);
            }
        }
        Ok(())
    })?;
    Ok(Graded { rows: rows.into_iter().map(|row| row.expect("every entry has its row")).collect(), resumed })
}

fn refused(name: &str, reason: String) -> Row {
    Row { submission: name.to_owned(), file: None, sha256: None, not_graded: Some(reason), verdict: None }
}

/// Holds `out_dir` for one run until the file is dropped; `Ok(None)` if another run holds it. Two
/// runs writing one folder's reports would leave each other's half-written files. Where the
/// file system cannot lock, the run goes on unlocked.
pub fn hold_output(out_dir: &Path) -> io::Result<Option<fs::File>> {
    fs::create_dir_all(out_dir)?;
    let lock = fs::OpenOptions::new().create(true).append(true).open(out_dir.join(".grade-lock"))?;
    let Err(error) = supervise::lock_exclusively(&lock, false) else { return Ok(Some(lock)) };
    match error.raw_os_error() {
        Some(libc::EWOULDBLOCK) => Ok(None),
        // A file system that cannot lock (Lustre mounted without flock, NFS without its lock
        // service): runs there are not kept apart, as before.
        Some(libc::ENOSYS | libc::ENOLCK | libc::EOPNOTSUPP) => Ok(Some(lock)),
        _ => Err(error),
    }
}

/// `grades.csv`, `grades.json` and `summary.md` in `out_dir`, each replaced whole; the JSON also
/// says what the run was to grade (`coverage`).
pub fn write_reports(exercise: &Exercise, rows: &[Row], out_dir: &Path, coverage: &Coverage) -> io::Result<()> {
    write_whole(&out_dir.join(CSV_FILE), &csv(rows)?)?;
    let json = serde_json::json!({
        "exercise": exercise.id,
        "title": exercise.title,
        "max_score": MAX_SCORE,
        "shard": coverage.shard,
        "submissions": coverage.submissions,
        "class": coverage.class,
        "rows": rows,
    });
    write_whole(&out_dir.join(JSON_FILE), &(serde_json::to_string_pretty(&json)? + "\n"))?;
    write_whole(&out_dir.join(MARKDOWN_FILE), &markdown(exercise, rows))
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
    // (Also after spaces, and as the full-width `＝`, which some spreadsheets read as `=`.)
    match text
        .trim_start_matches(|c: char| c.is_whitespace() && !matches!(c, '\t' | '\r'))
        .starts_with(['=', '+', '-', '@', '\t', '\r', '＝', '＋', '－', '＠'])
    {
        true => format!("'{text}"),
        false => text.to_owned(),
    }
}

/// Characters that change how the text around them is shown without showing themselves: bidi
/// overrides and isolates (`\u{202e}` makes `ecila` show as `alice`), and zero-width ones.
fn unseen(c: char) -> bool {
    matches!(
        c,
        '\u{61c}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{feff}'
    )
}

/// `text` as one Markdown table cell: `|`, backslashes and what Markdown or HTML would read
/// (`*`, `_`, backticks, `<`, `[`) escaped, line ends made visible as ` / `, characters that
/// show nothing (bidi overrides, zero-width characters) as `\u{202e}`.
pub fn markdown_cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.replace("\r\n", "\n").chars() {
        match c {
            '\n' | '\r' => out.push_str(" / "),
            '|' | '\\' | '*' | '_' | '`' | '<' | '>' | '[' | ']' | '#' | '&' => {
                out.push('\\');
                out.push(c)
            }
            c if c.is_control() || unseen(c) => out.push_str(&format!("\\u{{{:04x}}}", u32::from(c))),
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

/// "1 submission", "2 submissions".
pub fn submissions(count: usize) -> String {
    match count {
        1 => "1 submission".to_owned(),
        n => format!("{n} submissions"),
    }
}

/// A summary for the instructor: counts, one table row per submission, then the reasons.
pub fn markdown(exercise: &Exercise, rows: &[Row]) -> String {
    let graded = rows.iter().filter(|r| r.graded()).count();
    let full = rows.iter().filter(|r| r.score() == Some(MAX_SCORE)).count();
    let mut out = format!(
        "# Grades: {} (lesson {}: {})\n\n{}: {graded} graded ({full} with full marks), {} not graded.\n\n",
        exercise.id,
        exercise.lesson,
        exercise.title,
        submissions(rows.len()),
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
    use std::sync::{
        Mutex,
        atomic::{AtomicUsize, Ordering},
    };

    use super::*;
    use crate::{
        submissions::scan,
        verdict::tests::{measured, transpose},
    };

    /// A check that measures its counters itself: nothing is left to profile.
    impl<F: Fn(&LearnerFile, &str, usize) -> CheckOutcome + Sync> Checks for F {
        fn check(&self, file: &LearnerFile, shown: &str, worker: usize) -> CheckOutcome {
            self(file, shown, worker)
        }

        fn profile(&self, _: &mut [Checked<'_>], _: usize) {}

        fn gpu_of(&self, _: usize) -> usize {
            0
        }
    }

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
            self.grade_into(
                &entries,
                Destination { dir: self.out.path(), shard: None, class: ClassPrint::of(&entries) },
                &check,
                Pace::new(1),
            )
        }

        /// [`grade`] of `entries` into `out`, with no progress shown.
        fn grade_into(&self, entries: &[Entry], out: Destination<'_>, checks: &dyn Checks, pace: Pace) -> Graded {
            grade(&self.exercise, &self.starter, entries, out, checks, &|_, _, _| {}, pace).unwrap()
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
            leading_args: vec!["-c".into(), script.into(), "sh".into()],
            ..Checker::new("sh".into(), Duration::from_secs(seconds))
        }
    }

    /// A correct outcome as the check process writes it: counters not yet profiled.
    fn unprofiled() -> CheckOutcome {
        let mut measured = measured(1, 1, 1.0);
        measured.counters = Err(check::NOT_YET_PROFILED.into());
        CheckOutcome::Correct(Box::new(measured))
    }

    /// What a stand-in profile gives each of `checked`: 2 load wavefronts per request, 1 store.
    fn profiled(checked: &mut [Checked<'_>]) {
        for (_, outcome) in checked.iter_mut() {
            set_counters(outcome, measured(2, 1, 1.0).counters, None);
        }
    }

    /// A checker whose profile process writes each file's text (a number) as its load wavefronts,
    /// fails where a file says `trap` (the reference alone still profiling) or `hang`, and logs
    /// how many files each profile was given to `log`.
    fn profiling_checker(log: &Path, seconds: u64) -> Checker {
        let counters = |load: &str| {
            format!(
                r#"{{"load_wavefronts":{load},"load_instructions":32,"store_wavefronts":32,"store_instructions":32}}"#
            )
        };
        // A session (`--folder=`) serves its batches as its requests come: each file's text its
        // counters, `wrong` an output wrong under the profiler, `trap` a crash that ends it.
        let script = format!(
            r#"role=$1; files=""; n=0; w=""
            while [ $# -gt 0 ]; do case $1 in --result=*) r=${{1#--result=}};; --folder=*) w=${{1#--folder=}};; --file=*) files="$files ${{1#--file=}}"; n=$((n+1));; esac; shift; done
            [ $role = __profile-submissions ] || exit 3
            if [ -n "$w" ]; then
                all=""
                while read -r line; do
                    if [ "$line" = '"end"' ]; then echo "end" >> '{log}'; echo "{{\"Ok\":[$all]}}" > "$w/p"; mv "$w/p" "$w/profiled.json"; exit 0; fi
                    b="$w/batch-$(echo "$line" | sed 's/.*"number":\([0-9]*\).*/\1/')"
                    k=$(echo "$line" | sed 's/.*"files":\([0-9]*\).*/\1/')
                    echo "session $k" >> '{log}'
                    all="$all${{all:+,}}$(echo '{one}' | sed s/LOAD/32/)"; launched=""; i=1
                    while [ $i -le $k ]; do
                        text=$(cat "$b/submission-$i.cu"); i=$((i+1))
                        [ "$text" = trap ] && exit 1
                        [ "$text" = hang ] && sleep 600
                        case $text in
                            wrong) launched="$launched${{launched:+,}}{{\"launch\":\"wrong\",\"detail\":\"out[0] is 1\"}}"; text=1;;
                            *) launched="$launched${{launched:+,}}{{\"launch\":\"checked\"}}";;
                        esac
                        all="$all,$(echo '{one}' | sed "s/LOAD/$text/")"
                    done
                    echo "[$launched]" > "$b/l"; mv "$b/l" "$b/launched.json"
                done
                exit 0
            fi
            echo $n >> '{log}'
            subs=""
            for f in $files; do
                text=$(cat "$f")
                [ "$text" = hang ] && sleep 600
                [ "$text" = trap ] && {{ echo '{{"outcome":"failed","reason":"trapped","reference_profiles":true}}' > "$r"; exit 0; }}
                subs="$subs${{subs:+,}}$(echo '{one}' | sed "s/LOAD/$text/")"
            done
            echo "{{\"outcome\":\"measured\",\"reference\":{reference},\"submissions\":[$subs]}}" | sed 's/LOAD/32/' > "$r""#,
            log = log.display(),
            one = counters("LOAD"),
            reference = counters("32").replace('"', "\\\""),
        );
        shell_checker(&script, seconds)
    }

    /// Stand-in learner files, one for each text.
    fn learner_files(texts: &[&str]) -> Vec<LearnerFile> {
        texts.iter().map(|t| LearnerFile { text: (*t).into(), region: (1, 1), ..Default::default() }).collect()
    }

    fn counters_of(outcome: &CheckOutcome) -> (Result<u64, String>, Option<String>) {
        match outcome {
            CheckOutcome::Correct(m) => (
                m.counters.as_ref().map(|pair| pair.submission.load_wavefronts).map_err(Clone::clone),
                m.profile_failed.clone(),
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn correct_submissions_are_profiled_together_and_in_halves_only_where_that_fails() {
        let exercise = transpose();
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("profiles");
        let files = learner_files;
        let profile = |checker: &Checker, files: &[LearnerFile], outcomes: &mut Vec<CheckOutcome>| {
            let mut checked: Vec<Checked<'_>> = files.iter().zip(outcomes.iter_mut()).collect();
            checker.profile(&exercise, &mut checked);
        };
        let sizes = || fs::read_to_string(&log).unwrap().lines().map(|l| l.parse().unwrap()).collect::<Vec<usize>>();
        let checker = profiling_checker(&log, 60);

        // One profile for the three correct ones; the incorrect one is left as it was.
        let incorrect = CheckOutcome::Incorrect { input: crate::manifest::Input::Random, detail: "out[3]".into() };
        let three = files(&["32", "64", "x", "96"]);
        let mut outcomes = vec![unprofiled(), unprofiled(), incorrect.clone(), unprofiled()];
        profile(&checker, &three, &mut outcomes);
        assert_eq!(sizes(), [3]);
        assert_eq!(outcomes[2], incorrect);
        let loads: Vec<_> = [0, 1, 3].iter().map(|&i| counters_of(&outcomes[i])).collect();
        assert_eq!(loads, [(Ok(32), None), (Ok(64), None), (Ok(96), None)], "each its own, in order");

        // A profile that fails by a submission's doing: again in halves, and only that one is blamed.
        fs::remove_file(&log).unwrap();
        let one_traps = files(&["32", "trap", "96"]);
        let mut outcomes = vec![unprofiled(), unprofiled(), unprofiled()];
        profile(&checker, &one_traps, &mut outcomes);
        assert_eq!(sizes(), [3, 2, 1, 1, 1]);
        assert_eq!(counters_of(&outcomes[0]), (Ok(32), None));
        assert_eq!(counters_of(&outcomes[1]), (Err("trapped".into()), Some("trapped".into())));
        assert_eq!(counters_of(&outcomes[2]), (Ok(96), None));
        // One among sixteen: 9 profiles, not 17.
        fs::remove_file(&log).unwrap();
        let mut texts = vec!["64"; 16];
        texts[5] = "trap";
        let mut outcomes = vec![unprofiled(); 16];
        profile(&checker, &files(&texts), &mut outcomes);
        assert_eq!(sizes(), [16, 8, 4, 4, 2, 1, 1, 2, 8]);
        let blamed: Vec<usize> = (0..16).filter(|&i| counters_of(&outcomes[i]).1.is_some()).collect();
        assert_eq!(blamed, [5]);
        assert!((0..16).filter(|&i| i != 5).all(|i| counters_of(&outcomes[i]) == (Ok(64), None)));

        // One that hangs under the profiler is stopped alone at the time limit, and blamed.
        fs::remove_file(&log).unwrap();
        let one_hangs = files(&["32", "hang"]);
        let mut outcomes = vec![unprofiled(), unprofiled()];
        profile(&profiling_checker(&log, 1), &one_hangs, &mut outcomes);
        assert_eq!(sizes(), [2, 1, 1]);
        assert_eq!(counters_of(&outcomes[0]), (Ok(32), None));
        let stopped = "the profile stopped at the time limit (1 s)".to_owned();
        assert_eq!(counters_of(&outcomes[1]), (Err(stopped.clone()), Some(stopped)));
    }

    #[test]
    fn a_session_launches_batch_after_batch_and_counts_them_at_its_end() {
        let exercise = transpose();
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("profiles");
        let files = learner_files;
        let checker = profiling_checker(&log, 60);
        let mut session = checker.profile_session(&exercise).unwrap();
        let loads = |batch: &[Result<CounterPair, String>]| -> Vec<Result<u64, String>> {
            batch.iter().map(|c| c.as_ref().map(|pair| pair.submission.load_wavefronts).map_err(Clone::clone)).collect()
        };
        let (first, second) = (files(&["32", "64"]), files(&["wrong", "96"]));
        session.launch(&first.iter().collect::<Vec<_>>()).unwrap();
        session.launch(&second.iter().collect::<Vec<_>>()).unwrap();
        assert!(!fs::read_to_string(&log).unwrap().contains("end"), "counted at its end only");
        let counted = session.end().unwrap();
        assert_eq!(fs::read_to_string(&log).unwrap(), "session 2\nsession 2\nend\n", "one process, two batches");
        assert_eq!(loads(&counted[0]), [Ok(32), Ok(64)], "each its own, in order");
        assert_eq!(
            loads(&counted[1]),
            [Err("launch 2 of 3 under Nsight Compute: out[0] is 1".into()), Ok(96)],
            "a wrong output under the profiler is the submission's own failure"
        );
        assert!(counted.iter().flatten().flatten().all(|pair| pair.reference.load_wavefronts == 32));

        // A crash ends the session: what it held is lost (the grader profiles it apart), and the
        // next batch starts another.
        let (before, crash, after) = (files(&["32"]), files(&["trap"]), files(&["48"]));
        session.launch(&before.iter().collect::<Vec<_>>()).unwrap();
        let ended = session.launch(&crash.iter().collect::<Vec<_>>()).unwrap_err();
        assert!(ended.starts_with("the profile session ended (exit status: 1)"), "{ended}");
        session.launch(&after.iter().collect::<Vec<_>>()).unwrap();
        let counted = session.end().unwrap();
        assert_eq!(counted.len(), 1);
        assert_eq!(loads(&counted[0]), [Ok(48)]);
        assert_eq!(session.end(), Ok(Vec::new()), "nothing launched since: no session to end");

        // A batch that never ends is stopped at the time limit, and the session with it.
        let checker = profiling_checker(&log, 1);
        let mut session = checker.profile_session(&exercise).unwrap();
        let hang = files(&["hang"]);
        let started = std::time::Instant::now();
        let stopped = session.launch(&hang.iter().collect::<Vec<_>>()).unwrap_err();
        assert_eq!(stopped, "a batch passed the time limit (1 s) and the session was stopped");
        assert!(started.elapsed() < Duration::from_secs(30), "stopped, not waited out");
        session.launch(&after.iter().collect::<Vec<_>>()).unwrap();
        assert_eq!(loads(&session.end().unwrap()[0]), [Ok(48)], "the next batch starts another");
    }

    #[test]
    fn launches_and_counters_that_do_not_add_up_are_refused() {
        use check::Launched;
        let counters = |load| SharedCounters { load_wavefronts: load, ..SharedCounters::default() };
        let wrong = Launched::Wrong { detail: "out[1] is 0".into() };
        let unbuilt = Launched::NotLaunched { detail: "no module".into() };
        let batches = vec![vec![Launched::Checked, wrong, unbuilt], vec![Launched::Checked]];
        // Batch one: the reference, two launches (the third never launched); batch two: two.
        let paired = pair_up(&batches, &[1, 2, 3, 4, 5].map(counters)).unwrap();
        assert_eq!(paired[0][0], Ok(CounterPair { submission: counters(2), reference: counters(1) }));
        assert_eq!(paired[0][1], Err("launch 3 of 4 under Nsight Compute: out[1] is 0".into()));
        assert_eq!(paired[0][2], Err("launch 4 of 4 under Nsight Compute: no module".into()));
        assert_eq!(paired[1][0], Ok(CounterPair { submission: counters(5), reference: counters(4) }));
        assert_eq!(
            pair_up(&batches, &[1, 2, 3, 4].map(counters)).unwrap_err(),
            "the profile session reported 4 launches where its 2 batches made 5"
        );
    }

    #[test]
    fn a_session_holds_its_batches_to_its_end_and_what_a_failed_one_held_is_profiled_apart() {
        /// Files are told apart by their text; a file whose text has `crash` ends its session.
        struct Sessions {
            apart: Mutex<Vec<String>>,
            lost: Mutex<Vec<String>>,
        }
        struct Session<'s> {
            sessions: &'s Sessions,
            held: Vec<Vec<String>>,
        }
        impl ProfileSession for Session<'_> {
            fn launch(&mut self, files: &[&LearnerFile]) -> Result<(), String> {
                std::thread::sleep(Duration::from_millis(3));
                self.held.push(files.iter().map(|f| f.text.clone()).collect());
                if files.iter().any(|f| f.text.contains("crash")) {
                    self.sessions.lost.lock().unwrap().extend(self.held.drain(..).flatten());
                    return Err("crashed".into());
                }
                Ok(())
            }
            fn end(&mut self) -> Result<Vec<Vec<Result<CounterPair, String>>>, String> {
                let one = measured(1, 1, 1.0).counters;
                Ok(self.held.drain(..).map(|batch| batch.iter().map(|_| one.clone()).collect()).collect())
            }
        }
        impl Checks for Sessions {
            fn check(&self, _: &LearnerFile, _: &str, _: usize) -> CheckOutcome {
                std::thread::sleep(Duration::from_millis(2));
                unprofiled()
            }
            fn profile(&self, checked: &mut [Checked<'_>], _: usize) {
                self.apart.lock().unwrap().extend(checked.iter().map(|(file, _)| file.text.clone()));
                profiled(checked);
            }
            fn gpu_of(&self, _: usize) -> usize {
                0
            }
            fn profile_session(&self, _: usize) -> Option<Box<dyn ProfileSession + '_>> {
                Some(Box::new(Session { sessions: self, held: Vec::new() }))
            }
        }
        let setup = Setup::new();
        let correct = fs::read_to_string(setup.submissions.path().join("correct.cu")).unwrap();
        let marked = |mark: &str| {
            correct.replacen("// ---- EDIT BELOW ----\n", &format!("// ---- EDIT BELOW ----\n// {mark}\n"), 1)
        };
        assert_ne!(marked("x"), correct);
        for i in 0..24 {
            let mark = if i == 13 { format!("crash {i}") } else { format!("s{i}") };
            fs::write(setup.submissions.path().join(format!("s{i:02}.cu")), marked(&mark)).unwrap();
        }
        let entries = scan(setup.submissions.path(), "exercise.cu").unwrap();
        let sessions = Sessions { apart: Mutex::default(), lost: Mutex::default() };
        let graded = setup.grade_into(
            &entries,
            Destination { dir: setup.out.path(), shard: None, class: ClassPrint::of(&entries) },
            &sessions,
            Pace { workers: 2, profile_batch: 4 },
        );
        let (mut apart, mut lost) = (sessions.apart.into_inner().unwrap(), sessions.lost.into_inner().unwrap());
        apart.sort();
        lost.sort();
        assert!(lost.iter().any(|text| text.contains("crash")));
        assert_eq!(apart, lost, "what the failed session held, and only that, is profiled apart");
        for row in graded.rows.iter().filter(|row| row.graded()) {
            let text = fs::read_to_string(setup.submissions.path().join(&row.submission)).unwrap();
            let score = match lost.contains(&text) {
                true => 70,
                false => 100,
            };
            assert_eq!(row.score(), Some(score), "{}: profiled apart {}", row.submission, lost.contains(&text));
        }
        assert_eq!(graded.rows.iter().filter(|row| row.graded()).count(), 25);
    }

    #[test]
    fn a_session_that_cannot_start_twice_in_a_row_is_not_tried_again() {
        struct NoSession {
            tries: AtomicUsize,
            apart: AtomicUsize,
        }
        struct Fails<'s>(&'s NoSession);
        impl ProfileSession for Fails<'_> {
            fn launch(&mut self, _: &[&LearnerFile]) -> Result<(), String> {
                self.0.tries.fetch_add(1, Ordering::SeqCst);
                Err("ncu: ERR_NVGPUCTRPERM".into())
            }
            fn end(&mut self) -> Result<Vec<Vec<Result<CounterPair, String>>>, String> {
                Ok(Vec::new())
            }
        }
        impl Checks for NoSession {
            fn check(&self, _: &LearnerFile, _: &str, _: usize) -> CheckOutcome {
                std::thread::sleep(Duration::from_millis(2));
                unprofiled()
            }
            fn profile(&self, checked: &mut [Checked<'_>], _: usize) {
                self.apart.fetch_add(checked.len(), Ordering::SeqCst);
                profiled(checked);
            }
            fn gpu_of(&self, _: usize) -> usize {
                0
            }
            fn profile_session(&self, _: usize) -> Option<Box<dyn ProfileSession + '_>> {
                Some(Box::new(Fails(self)))
            }
        }
        let setup = Setup::new();
        for i in 0..12 {
            fs::copy(setup.submissions.path().join("correct.cu"), setup.submissions.path().join(format!("s{i:02}.cu")))
                .unwrap();
        }
        let entries = scan(setup.submissions.path(), "exercise.cu").unwrap();
        let checks = NoSession { tries: AtomicUsize::new(0), apart: AtomicUsize::new(0) };
        let graded = setup.grade_into(
            &entries,
            Destination { dir: setup.out.path(), shard: None, class: ClassPrint::of(&entries) },
            &checks,
            Pace { workers: 1, profile_batch: 2 },
        );
        assert_eq!(checks.tries.into_inner(), 2, "two sessions tried, then none");
        assert_eq!(checks.apart.into_inner(), 13, "every correct submission profiled apart");
        assert!(graded.rows.iter().filter(|row| row.graded()).all(|row| row.score() == Some(70)));
    }

    #[test]
    fn where_the_reference_does_not_profile_either_the_clock_stands_in_for_all() {
        let exercise = transpose();
        let no_counters = shell_checker(
            r#"while [ $# -gt 0 ]; do case $1 in --result=*) r=${1#--result=};; esac; shift; done
            echo '{"outcome":"failed","reason":"ncu not found","reference_profiles":false}' > "$r""#,
            60,
        );
        let files = [
            LearnerFile { text: "32".into(), region: (1, 1), ..Default::default() },
            LearnerFile { text: "64".into(), region: (1, 1), ..Default::default() },
        ];
        let mut outcomes = vec![unprofiled(), unprofiled()];
        let mut checked: Vec<Checked<'_>> = files.iter().zip(outcomes.iter_mut()).collect();
        no_counters.profile(&exercise, &mut checked);
        for outcome in &outcomes {
            assert_eq!(counters_of(outcome), (Err("ncu not found".into()), None), "nobody is blamed");
        }
    }

    #[test]
    fn a_gpu_list_names_each_visible_gpu_once() {
        assert_eq!(check_gpu_list(&[0, 1], 2), Ok(()));
        assert_eq!(check_gpu_list(&[], 1), Ok(()));
        let error = check_gpu_list(&[0, 2], 2).unwrap_err();
        assert!(error.contains("GPU 2, but this machine shows 2 (numbered 0 to 1)"), "{error}");
        let error = check_gpu_list(&[1, 0, 1], 4).unwrap_err();
        assert!(error.contains("GPU 1 twice") && error.contains("--jobs"), "{error}");
    }

    #[test]
    fn a_check_sees_one_gpu_numbered_as_cuda_numbers_the_visible_ones() {
        assert_eq!(visible_device(0, None).unwrap(), "0");
        assert_eq!(visible_device(3, None).unwrap(), "3");
        assert_eq!(visible_device(0, Some("2,3")).unwrap(), "2");
        assert_eq!(visible_device(1, Some("GPU-8f2c, GPU-11aa")).unwrap(), "GPU-11aa");
        let error = visible_device(2, Some("2,3")).unwrap_err();
        assert!(error.contains("GPU 2 is not among the 2") && error.contains("0 to 1"), "{error}");
        assert!(visible_device(0, Some("")).unwrap_err().contains("among the 0"));
    }

    #[test]
    fn each_gpu_profiles_its_correct_submissions_beside_its_checks_which_never_wait() {
        const GPUS: usize = 2;
        /// Two GPUs with two workers each: what each GPU checked correct, its profiles, and which
        /// threads checked and profiled.
        struct Profiles {
            correct: [AtomicUsize; GPUS],
            sizes: Mutex<Vec<(usize, usize)>>,
            /// Checks started on each GPU when each profile began.
            started: [AtomicUsize; GPUS],
            profiled_while_checking: AtomicUsize,
            checking_threads: Mutex<std::collections::HashSet<std::thread::ThreadId>>,
            profiling_threads: Mutex<std::collections::HashSet<std::thread::ThreadId>>,
        }
        impl Checks for Profiles {
            fn check(&self, _: &LearnerFile, shown: &str, worker: usize) -> CheckOutcome {
                self.checking_threads.lock().unwrap().insert(std::thread::current().id());
                self.started[self.gpu_of(worker)].fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(5));
                match shown.starts_with('x') {
                    true => CheckOutcome::Crashed { detail: "trap".into() },
                    false => {
                        self.correct[self.gpu_of(worker)].fetch_add(1, Ordering::SeqCst);
                        unprofiled()
                    }
                }
            }
            fn profile(&self, checked: &mut [Checked<'_>], gpu: usize) {
                self.profiling_threads.lock().unwrap().insert(std::thread::current().id());
                self.sizes.lock().unwrap().push((gpu, checked.len()));
                if self.started.iter().map(|n| n.load(Ordering::SeqCst)).sum::<usize>() < 43 {
                    self.profiled_while_checking.fetch_add(1, Ordering::SeqCst);
                }
                // A profile takes as long as several checks.
                std::thread::sleep(Duration::from_millis(20));
                let correct = checked.iter().all(|(_, outcome)| matches!(outcome, CheckOutcome::Correct(_)));
                assert!(correct, "only correct outcomes wait for a profile");
                profiled(checked);
            }
            fn gpu_of(&self, worker: usize) -> usize {
                worker % GPUS
            }
        }
        let setup = Setup::new();
        // 40 correct and 3 that crash, beside correct.cu and invalid.cu: 43 checks.
        for name in (0..39).map(|i| format!("s{i:02}")).chain((0..3).map(|i| format!("x{i}"))) {
            fs::copy(setup.submissions.path().join("correct.cu"), setup.submissions.path().join(format!("{name}.cu")))
                .unwrap();
        }
        let entries = scan(setup.submissions.path(), "exercise.cu").unwrap();
        let profiles = Profiles {
            correct: Default::default(),
            sizes: Mutex::new(Vec::new()),
            started: Default::default(),
            profiled_while_checking: AtomicUsize::new(0),
            checking_threads: Mutex::default(),
            profiling_threads: Mutex::default(),
        };
        // Not the default cap, so that the one given is the one kept.
        let pace = Pace { workers: 4, profile_batch: 5 };
        let graded = setup.grade_into(
            &entries,
            Destination { dir: setup.out.path(), shard: None, class: ClassPrint::of(&entries) },
            &profiles,
            pace,
        );
        let sizes = profiles.sizes.into_inner().unwrap();
        for gpu in 0..GPUS {
            let profiled: Vec<usize> = sizes.iter().filter(|(g, _)| *g == gpu).map(|(_, n)| *n).collect();
            let correct = profiles.correct[gpu].load(Ordering::SeqCst);
            assert_eq!(profiled.iter().sum::<usize>(), correct, "GPU {gpu} profiles what it checked: {sizes:?}");
            assert!(profiled.iter().all(|&n| n <= pace.profile_batch), "at most the cap to a profile: {sizes:?}");
            assert!(profiled.iter().any(|&n| n > 1), "a profile holds what came while the last ran: {sizes:?}");
        }
        assert!(profiles.correct.iter().all(|n| n.load(Ordering::SeqCst) > 0), "both GPUs checked");
        assert!(profiles.profiled_while_checking.into_inner() > 0, "profiles go on beside the checks: {sizes:?}");
        let (checking, profiling) =
            (profiles.checking_threads.into_inner().unwrap(), profiles.profiling_threads.into_inner().unwrap());
        assert!(checking.is_disjoint(&profiling), "no worker waits for a profile");
        assert_eq!(profiling.len(), GPUS, "one profiler for each GPU");
        for row in &graded.rows {
            match row.submission.as_str() {
                name if name.starts_with("invalid") => assert_eq!(row.score(), None),
                name if name.starts_with('x') => assert_eq!(row.score(), Some(0), "{row:?}"),
                _ => assert_eq!(row.score(), Some(70), "its profiled counters judged: {row:?}"),
            }
        }
    }

    #[test]
    fn a_check_that_panics_ends_the_run_rather_than_leave_its_profiler_waiting() {
        struct Panics;
        impl Checks for Panics {
            fn check(&self, _: &LearnerFile, shown: &str, _: usize) -> CheckOutcome {
                match shown.starts_with("boom") {
                    true => panic!("a check's own bug"),
                    false => unprofiled(),
                }
            }
            fn profile(&self, checked: &mut [Checked<'_>], _: usize) {
                profiled(checked);
            }
            fn gpu_of(&self, _: usize) -> usize {
                0
            }
        }
        let setup = Setup::new();
        fs::copy(setup.submissions.path().join("correct.cu"), setup.submissions.path().join("boom.cu")).unwrap();
        let (done, ended) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let entries = scan(setup.submissions.path(), "exercise.cu").unwrap();
            let out = Destination { dir: setup.out.path(), shard: None, class: ClassPrint::of(&entries) };
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                setup.grade_into(&entries, out, &Panics, Pace::new(2));
            }));
            let _ = done.send(run.is_err());
        });
        assert_eq!(ended.recv_timeout(Duration::from_secs(30)), Ok(true), "the run ends, with the check's panic");
    }

    #[test]
    fn a_report_that_cannot_be_written_stops_the_checks() {
        /// Correct outcomes (their rows come from the profiler); the first check makes the CSV
        /// report's path a folder, so that the first row cannot be written.
        struct Blocks {
            calls: AtomicUsize,
            csv: PathBuf,
        }
        impl Checks for Blocks {
            fn check(&self, _: &LearnerFile, _: &str, _: usize) -> CheckOutcome {
                if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
                    fs::remove_file(&self.csv).unwrap();
                    fs::create_dir_all(self.csv.join("in-the-way")).unwrap();
                }
                std::thread::sleep(Duration::from_millis(10));
                unprofiled()
            }
            fn profile(&self, checked: &mut [Checked<'_>], _: usize) {
                profiled(checked);
            }
            fn gpu_of(&self, _: usize) -> usize {
                0
            }
        }
        let setup = Setup::new();
        for name in (0..40).map(|i| format!("s{i:02}.cu")) {
            fs::copy(setup.submissions.path().join("correct.cu"), setup.submissions.path().join(name)).unwrap();
        }
        let entries = scan(setup.submissions.path(), "exercise.cu").unwrap();
        let blocks = Blocks { calls: AtomicUsize::new(0), csv: setup.out.path().join(CSV_FILE) };
        let out = Destination { dir: setup.out.path(), shard: None, class: ClassPrint::of(&entries) };
        let run = grade(&setup.exercise, &setup.starter, &entries, out, &blocks, &|_, _, _| {}, Pace::new(1));
        assert!(run.is_err(), "the report's error is the run's");
        let calls = blocks.calls.into_inner();
        assert!(calls < 20, "the checks stop soon after, not all 41: {calls}");
    }

    /// A checker whose check process is a shell loop: for each request it logs its process id to
    /// `log`, runs `body` (`$d` is the request's folder, `$r` its result file), then answers that
    /// it goes on serving.
    fn serving_checker(log: &Path, body: &str, seconds: u64) -> Checker {
        let script = format!(
            r#"for a; do case $a in --folder=*) w=${{a#--folder=}};; esac; done
            while read -r line; do
                n=$(echo "$line" | sed 's/.*"number":\([0-9]*\).*/\1/'); d="$w/$n"; r="$d/result.json"
                echo $$ >> '{log}'
                {body}
                echo serving > "$d/partial"; mv "$d/partial" "$d/answered"
            done"#,
            log = log.display()
        );
        shell_checker(&script, seconds)
    }

    #[test]
    fn a_check_process_sees_its_gpu_alone_with_one_work_queue() {
        let dir = tempfile::tempdir().unwrap();
        let seen = dir.path().join("environment");
        let body = format!(
            r#"echo "$CUDA_VISIBLE_DEVICES $CUDA_DEVICE_MAX_CONNECTIONS" > '{}'; echo '{{"outcome":"incorrect","input":"random","detail":"-"}}' > "$r""#,
            seen.display()
        );
        let checker = Checker { device: Some("2".into()), ..serving_checker(&dir.path().join("pids"), &body, 60) };
        let file = LearnerFile { text: "x".into(), region: (1, 1), ..Default::default() };
        checker.check(&transpose(), &file, "a.cu");
        assert_eq!(fs::read_to_string(&seen).unwrap(), "2 1\n");
    }

    #[test]
    fn the_check_process_reports_through_its_result_file_and_is_killed_or_blamed_when_it_cannot() {
        let exercise = transpose();
        let file = LearnerFile { text: "x".into(), region: (1, 1), ..Default::default() };
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("pids");
        let pids = || fs::read_to_string(&log).unwrap().lines().map(str::to_owned).collect::<Vec<_>>();
        let incorrect = CheckOutcome::Incorrect { input: crate::manifest::Input::Random, detail: "out[3] is 1".into() };
        let write_incorrect = r#"[ "$(cat "$d/submission.cu")" = x ] && echo '{"outcome":"incorrect","input":"random","detail":"out[3] is 1"}' > "$r""#;
        let checker = serving_checker(&log, write_incorrect, 60);
        for _ in 0..3 {
            assert_eq!(checker.check(&exercise, &file, "a.cu"), incorrect);
        }
        assert!(pids().iter().all(|pid| *pid == pids()[0]), "one process checked all three: {:?}", pids());

        // A check past its time limit is killed with its process; the next starts a new one.
        fs::remove_file(&log).unwrap();
        let sleep_on_y = format!(r#"[ "$(cat "$d/submission.cu")" = y ] && sleep 600; {write_incorrect}"#);
        let checker = serving_checker(&log, &sleep_on_y, 1);
        let slow = LearnerFile { text: "y".into(), region: (1, 1), ..Default::default() };
        assert_eq!(checker.check(&exercise, &slow, "slow.cu"), CheckOutcome::TimedOut { seconds: 1 });
        assert_eq!(checker.check(&exercise, &file, "a.cu"), incorrect);
        assert_ne!(pids()[0], pids()[1], "a fresh process after the one that was killed");

        // One that says it ends is not asked again.
        fs::remove_file(&log).unwrap();
        let ending = format!(r#"{write_incorrect}; echo ending > "$d/partial"; mv "$d/partial" "$d/answered"; exit 0"#);
        let checker = serving_checker(&log, &ending, 60);
        for _ in 0..2 {
            assert_eq!(checker.check(&exercise, &file, "a.cu"), incorrect);
        }
        assert_ne!(pids()[0], pids()[1], "a fresh process after one that ended");

        // A crash where the process had checked other files is checked again in a fresh process:
        // here, one that crashes from its second check on.
        fs::remove_file(&log).unwrap();
        let crash_when_reused = format!(r#"[ "$n" -gt 1 ] && kill -SEGV $$; {write_incorrect}"#);
        let checker = serving_checker(&log, &crash_when_reused, 60);
        for _ in 0..2 {
            assert_eq!(checker.check(&exercise, &file, "a.cu"), incorrect, "not blamed for the process's state");
        }
        assert_eq!(pids().len(), 3, "the second check ran twice: {:?}", pids());
        assert!(pids()[0] == pids()[1] && pids()[1] != pids()[2], "{:?}", pids());
        // A crash in a fresh process is the submission's own.
        fs::remove_file(&log).unwrap();
        let crashed = serving_checker(&log, "kill -SEGV $$", 60).check(&exercise, &file, "a.cu");
        assert!(matches!(crashed, CheckOutcome::Crashed { .. }) && pids().len() == 1, "{crashed:?} {:?}", pids());

        let correct_then_slow = r#"echo '{"outcome":"correct-unmeasured","detail":"x"}' > "$r"; sleep 600"#;
        assert_eq!(
            serving_checker(&log, correct_then_slow, 1).check(&exercise, &file, "a.cu"),
            CheckOutcome::CorrectUnmeasured { detail: "stopped at the time limit (1 s) while timing".into() },
            "a correct kernel too slow to time keeps what it showed"
        );
        let died = serving_checker(&log, "echo 'CUDA_ERROR_ILLEGAL_ADDRESS' >&2; kill -SEGV $$", 60)
            .check(&exercise, &file, "a.cu");
        let CheckOutcome::Crashed { detail } = died else { panic!("{died:?}") };
        assert!(detail.starts_with("the check process ended (signal: 11"), "{detail}");
        assert!(detail.ends_with("without a result:\nCUDA_ERROR_ILLEGAL_ADDRESS"), "{detail}");
        let no_result = serving_checker(&log, "echo 'lost it' >&2", 60).check(&exercise, &file, "a.cu");
        assert_eq!(
            no_result,
            CheckOutcome::Crashed { detail: "the check process answered without a result:\nlost it".into() }
        );
    }

    #[test]
    fn names_are_data_in_every_report() {
        let exercise = transpose();
        let names = [
            "=1+1",
            "-resubmitted",
            "@SUM(A1)",
            "+1",
            "\tx",
            " =2",
            "a \"quoted\" | *bold* <b>",
            "two\nlines",
            "\u{202e}ecila",
            "\u{a0}=3",
        ];
        let rows: Vec<Row> = names.iter().map(|n| refused(n, format!("{n}: refused"))).collect();
        let csv = csv(&rows).unwrap();
        let mut reader = ::csv::Reader::from_reader(csv.as_bytes());
        let cells: Vec<(String, String)> =
            reader.records().map(|r| r.unwrap()).map(|r| (r[0].to_owned(), r[13].to_owned())).collect();
        for ((submission, lost), name) in cells.iter().zip(names) {
            match name.trim_start().starts_with(['=', '+', '-', '@']) || name.starts_with('\t') {
                true => assert_eq!(submission, &format!("'{name}"), "a formula prefix is defused"),
                false => assert_eq!(submission, name, "the rest is kept as it is"),
            }
            assert!(!lost.starts_with(['=', '+', '-', '@']), "{lost}");
        }
        let markdown = markdown(&exercise, &rows);
        assert!(markdown.contains("| a \"quoted\" \\| \\*bold\\* \\<b\\> |"), "{markdown}");
        assert!(markdown.contains("| two / lines |"), "{markdown}");
        assert!(markdown.contains("| \\u{202e}ecila |"), "a name shows as it is spelled: {markdown}");
        assert_eq!(markdown.lines().filter(|l| l.starts_with('|')).count(), 2 + names.len(), "one line per row");
        let json: serde_json::Value = serde_json::from_str(&serde_json::to_string(&rows).unwrap()).unwrap();
        assert_eq!(json[7]["submission"], "two\nlines", "JSON keeps the name exactly");
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
        let whole = setup.grade_into(
            &entries,
            Destination { dir: setup.out.path(), shard: None, class: ClassPrint::of(&entries) },
            &check,
            Pace::new(1),
        );
        let parts: Vec<tempfile::TempDir> = (1..=2)
            .map(|index| {
                let shard = Shard { index, count: 2 };
                let out = tempfile::tempdir().unwrap();
                let mine: Vec<Entry> = entries.iter().filter(|e| shard.holds(e.name())).cloned().collect();
                setup.grade_into(
                    &mine,
                    Destination { dir: out.path(), shard: Some(shard), class: ClassPrint::of(&entries) },
                    &check,
                    Pace::new(1),
                );
                out
            })
            .collect();
        let merged = tempfile::tempdir().unwrap();
        let dirs: Vec<PathBuf> = parts.iter().map(|p| p.path().to_path_buf()).collect();
        let (exercise, rows, class) = merge(&dirs, merged.path()).unwrap();
        assert_eq!(class, ClassPrint::of(&entries));
        assert_eq!(exercise, "transpose-swizzle");
        assert_eq!(rows, whole.rows);
        let coverage = Coverage { shard: None, submissions: rows.len(), class: ClassPrint::of(&entries) };
        write_reports(&setup.exercise, &rows, merged.path(), &coverage).unwrap();
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
        // A shard left out, or one whose run was stopped, is named rather than merged.
        let alone = merge(&dirs[..1], merged.path()).unwrap_err();
        assert!(alone.0.contains("lacks shard 2/2"), "{}", alone.0);
        let json = dirs[1].join(JSON_FILE);
        let original = fs::read_to_string(&json).unwrap();
        let mut grades: serde_json::Value = serde_json::from_str(&original).unwrap();
        grades["class"]["submissions"] = serde_json::json!(99);
        fs::write(&json, grades.to_string()).unwrap();
        let other_class = merge(&dirs, merged.path()).unwrap_err();
        assert!(other_class.0.contains("were cut from different classes"), "{}", other_class.0);
        let mut grades: serde_json::Value = serde_json::from_str(&original).unwrap();
        grades["rows"].as_array_mut().unwrap().pop();
        fs::write(&json, grades.to_string()).unwrap();
        let stopped = merge(&dirs, merged.path()).unwrap_err();
        assert!(stopped.0.contains("did not finish"), "{}", stopped.0);
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
        let parallel = setup.grade_into(
            &entries,
            Destination { dir: setup.out.path(), shard: None, class: ClassPrint::of(&entries) },
            &check,
            Pace::new(3),
        );
        assert!(most.load(Ordering::SeqCst) > 1, "checks ran side by side");
        assert!(workers.lock().unwrap().iter().all(|&w| w < 3) && workers.lock().unwrap().len() > 1, "worker numbers");
        let one_at_a_time = tempfile::tempdir().unwrap();
        let sequential = setup.grade_into(
            &entries,
            Destination { dir: one_at_a_time.path(), shard: None, class: ClassPrint::of(&entries) },
            &check,
            Pace::new(1),
        );
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
