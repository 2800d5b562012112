//! `cargo xtask exercise` and `cargo xtask grade`: find the exercise, run the checks in processes
//! of their own (the hidden `__check-submissions` command, which checks file after file), and
//! print what the exercises crate says.

use std::{
    fs,
    io::Write,
    path::{Path, PathBuf},
    process::ExitCode,
    sync::{
        Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::Context;
use clap::Args;
use cuda_kernels::Gpu;
use exercises::{
    BadInput, Exercise, Manifest, check,
    grading::{self, Checker, Graded, Pace},
    host_locks,
    last_check::{self, Standing},
    learner_file::{self, LearnerFile},
    protocol::{self, ChildCommand, Launches, Role},
    sandbox, submissions, supervise,
    verdict::{Verdict, judge},
};
use indicatif::{ProgressBar, ProgressStyle};
use lesson_kit::{Report, Tone, styled};

/// Seconds a check may take, unless `--time-limit` says otherwise.
pub const TIME_LIMIT_SECONDS: u64 = 120;

const EXERCISE_EXIT_CODES: &str = "Exit status: 0 every requirement met (or --hint, --list); 1 the file has a \
problem (invalid, does not compile, wrong output, a requirement not met); 2 nothing was checked (no GPU, \
--no-gpu, an unknown exercise).";

#[derive(Debug, Args)]
#[command(after_help = EXERCISE_EXIT_CODES)]
pub struct ExerciseArgs {
    /// The exercise, e.g. `row-sums` (`--list` shows them all).
    #[arg(required_unless_present = "list")]
    pub id: Option<String>,
    /// List every exercise and whether your copy of it passed its last check.
    #[arg(long, conflicts_with_all = ["hint", "file"])]
    pub list: bool,
    /// Show the exercise's hints.
    #[arg(long)]
    pub hint: bool,
    #[command(flatten)]
    pub check: CheckArgs,
}

/// Which file to check and how, for `exercise` and `watch` alike.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Check this file instead of your copy in my-exercises/.
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,
    /// Only validate the file; do not run it on the GPU.
    #[arg(long)]
    pub no_gpu: bool,
    /// Seconds a check may take before it is killed (1 to 86400).
    #[arg(long, default_value_t = TIME_LIMIT_SECONDS, value_name = "SECONDS", value_parser = time_limit())]
    pub time_limit: u64,
}

/// `--time-limit`'s seconds: one at least, a day at most.
fn time_limit() -> clap::builder::RangedU64ValueParser<u64> {
    clap::value_parser!(u64).range(1..=86_400)
}

const GRADE_EXIT_CODES: &str = "Exit status: 0 every submission was graded; 1 some were graded, some could not \
be (refused, not a valid learner file, not checked); 2 nothing was graded (no GPU, --no-gpu, a missing or \
empty folder, an unknown exercise).";

#[derive(Debug, Args)]
#[command(after_help = GRADE_EXIT_CODES)]
pub struct GradeArgs {
    /// The exercise the submissions answer.
    #[arg(long, required_unless_present = "merge")]
    pub exercise: Option<String>,
    /// One sub-folder (holding the learner's .cu file) or one .cu file per submission. Never modified.
    #[arg(required_unless_present = "merge")]
    pub submissions: Option<PathBuf>,
    /// Grade only shard K of N (e.g. `3/8`): a stable slice of the class, by submission name, for
    /// a job array; join the shards' output folders with `--merge`.
    #[arg(long, value_name = "K/N", conflicts_with = "merge")]
    pub shard: Option<exercises::grading::Shard>,
    /// Join the output folders of a class's shards into one report in `--out`, equal to one run's.
    #[arg(long, value_name = "DIR", num_args = 1.., conflicts_with_all = ["submissions", "exercise"], requires = "out")]
    pub merge: Vec<PathBuf>,
    /// Where to write grades.csv, grades.json and summary.md (default: grades-ID beside the
    /// submissions folder). A rerun into the same folder keeps what was graded.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Seconds one submission's check may take before it is killed (1 to 86400).
    #[arg(long, default_value_t = TIME_LIMIT_SECONDS, value_name = "SECONDS", value_parser = time_limit())]
    pub time_limit: u64,
    /// Only validate the submissions; grade nothing.
    #[arg(long)]
    pub no_gpu: bool,
    /// Checks run side by side on each GPU: each compiles at once and waits its turn for its GPU,
    /// which one check at a time profiles and times.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub jobs: u16,
    /// The GPUs to grade on, e.g. `0,1,2,3`: `--jobs` workers on each (default: the first GPU).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub gpus: Vec<u32>,
    /// The most correct submissions one batch of a profile holds. Each GPU's Nsight Compute session
    /// launches beside its checks what was checked while its last batch launched, up to this many
    /// at a time (and a session that ended early has its batches profiled apart, each in one
    /// start of Nsight Compute).
    #[arg(long, default_value_t = grading::PROFILE_BATCH as u16, value_name = "N",
          value_parser = clap::value_parser!(u16).range(1..=256))]
    pub profile_batch: u16,
}

/// The hidden commands that check one file in a process of their own: their arguments, read by
/// [`ChildCommand::parse`], which also builds them.
#[derive(Debug, Args)]
#[command(disable_help_flag = true)]
pub struct ChildArgs {
    /// `--exercise=ID --file=PATH --name=NAME` and the rest `ChildCommand` names.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub args: Vec<std::ffi::OsString>,
}

fn manifest() -> anyhow::Result<Manifest> {
    Manifest::find().map_err(|e| BadInput(e.to_string()).into())
}

/// The UUID of each GPU this process sees (see `host_locks`), or why there is none to use.
fn gpus_seen(no_gpu: bool) -> Result<Vec<String>, String> {
    if no_gpu {
        return Err("--no-gpu given".into());
    }
    Gpu::uuids().map_err(|why| why.to_string())
}

/// Holders of a GPU from outside a run (another grade, learners' checks) that a wait for the GPU
/// allows for, each holding it up to its time limit.
const OTHERS_ON_THE_HOST: u64 = 4;

/// The host's lock of the GPU `uuid`, through which every grade and check on it takes it in turn;
/// a check may wait for its turn up to its time limit for each of `holders` beside it.
fn host_lock(uuid: &str, time_limit: u64, holders: u64) -> anyhow::Result<(PathBuf, Duration)> {
    let lock = host_locks::gpu_lock(&host_locks::folder(), uuid).map_err(BadInput)?;
    Ok((lock, Duration::from_secs(time_limit * holders)))
}

fn checker(time_limit: u64) -> anyhow::Result<Checker> {
    let program = std::env::current_exe().context("cannot find this program to run checks with")?;
    Ok(Checker::new(program, Duration::from_secs(time_limit)))
}

fn starter_text(manifest: &Manifest, exercise: &Exercise) -> anyhow::Result<String> {
    let path = manifest.path(&exercise.starter);
    fs::read_to_string(&path).with_context(|| format!("cannot read the starter {}", path.display()))
}

pub fn exercise(args: &ExerciseArgs, out: &mut dyn Write, color: bool) -> anyhow::Result<ExitCode> {
    let manifest = manifest()?;
    if args.list {
        return list(&manifest, out, color);
    }
    let exercise = manifest.exercise(args.id.as_deref().expect("clap requires it without --list"))?;
    writeln!(out, "Exercise {} (lesson {}): {}\n{}", exercise.id, exercise.lesson, exercise.title, exercise.task)?;
    if args.hint {
        for (number, hint) in exercise.hints.iter().enumerate() {
            writeln!(out, "Hint {}: {hint}", number + 1)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let path = match &args.check.file {
        Some(path) => path.clone(),
        None => {
            let (path, created) = exercises::learner_copy(&manifest, exercise)
                .context("cannot make your copy of the exercise in my-exercises/")?;
            if created {
                writeln!(
                    out,
                    "Made your copy: {}. Edit the lines between the markers, then run this again.",
                    path.display()
                )?;
            }
            path
        }
    };
    let shown = path.display().to_string();
    let bytes = fs::read(&path).map_err(|e| BadInput(format!("cannot read {shown}: {e}")))?;
    Ok(match check_once(&manifest, exercise, &path, &bytes, &args.check, out, color)? {
        CheckResult::Invalid => ExitCode::FAILURE,
        CheckResult::NotChecked => ExitCode::from(2),
        CheckResult::Scored(score) if score == exercises::manifest::MAX_SCORE => ExitCode::SUCCESS,
        CheckResult::Scored(_) => ExitCode::FAILURE,
    })
}

/// What one check of a learner's file came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CheckResult {
    Invalid,
    NotChecked,
    Scored(u32),
}

/// Validates `bytes` (the file at `path`), checks it on the GPU if there is one, prints the
/// verdict and keeps it as the last check of the learner's copy.
#[allow(clippy::too_many_arguments)]
fn check_once(
    manifest: &Manifest,
    exercise: &Exercise,
    path: &Path,
    bytes: &[u8],
    options: &CheckArgs,
    out: &mut dyn Write,
    color: bool,
) -> anyhow::Result<CheckResult> {
    let shown = path.display().to_string();
    let file = match learner_file::validate(exercise, &starter_text(manifest, exercise)?, bytes) {
        Ok(file) => file,
        Err(invalid) => {
            writeln!(out, "{shown}: {invalid}")?;
            return Ok(CheckResult::Invalid);
        }
    };
    writeln!(out, "{shown}: valid (markers in place, the rest as in the starter).")?;
    let uuids = match gpus_seen(options.no_gpu) {
        Ok(uuids) => uuids,
        Err(why) => {
            writeln!(out, "Checking needs a GPU: {why}.")?;
            return Ok(CheckResult::NotChecked);
        }
    };
    let mut checker = checker(options.time_limit)?;
    // The check takes its GPU in turn with any grade or other check on it (a lab's shared GPU).
    let (lock, wait) = host_lock(&uuids[0], options.time_limit, 1 + OTHERS_ON_THE_HOST)?;
    if host_locks::in_use(&lock) {
        writeln!(out, "The GPU ({}) is in use by a grade or another check: yours waits for its turn.", uuids[0])?;
    }
    checker.gpu_lock = Some((lock, wait));
    let verdict =
        with_spinner(&format!("checking {shown}"), || Ok(judge(exercise, &checker.check(exercise, &file, &shown))))?;
    if path == exercises::learner_copy_path(manifest, exercise) {
        last_check::record(manifest, exercise, bytes, &verdict)
            .with_context(|| format!("cannot keep this check's verdict beside {shown}"))?;
    }
    write!(out, "{}", render(&verdict).render(color))?;
    Ok(verdict.score.map_or(CheckResult::NotChecked, CheckResult::Scored))
}

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// The exercise, e.g. `row-sums`.
    pub id: String,
    #[command(flatten)]
    pub check: CheckArgs,
    /// Stop after this many checks (for tests).
    #[arg(long, hide = true)]
    pub max_checks: Option<usize>,
}

/// How often the watched file is read.
const WATCH_POLL: Duration = Duration::from_millis(300);

/// `cargo xtask watch ID`: checks the learner's file now and on every save, each time with the
/// verdict and, while it does not pass, the next of the exercise's hints; ends when it passes.
pub fn watch(args: &WatchArgs, out: &mut dyn Write, color: bool) -> anyhow::Result<ExitCode> {
    let manifest = manifest()?;
    let exercise = manifest.exercise(&args.id)?;
    let path = match &args.check.file {
        Some(path) => path.clone(),
        None => exercises::learner_copy(&manifest, exercise).context("cannot make your copy in my-exercises/")?.0,
    };
    let shown = path.display().to_string();
    writeln!(out, "Exercise {} (lesson {}): {}\n{}", exercise.id, exercise.lesson, exercise.title, exercise.task)?;
    let (mut last, mut checks, mut failures): (Option<Vec<u8>>, usize, usize) = (None, 0, 0);
    loop {
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if last.is_none() => return Err(BadInput(format!("cannot read {shown}: {error}")).into()),
            // Saved by replacing the file: read it again in a moment.
            Err(_) => {
                std::thread::sleep(WATCH_POLL);
                continue;
            }
        };
        if last.as_ref() != Some(&bytes) {
            writeln!(out, "\n-- {shown} --")?;
            let checked = check_once(&manifest, exercise, &path, &bytes, &args.check, out, color)?;
            last = Some(bytes);
            checks += 1;
            if checked == CheckResult::Scored(exercises::manifest::MAX_SCORE) {
                writeln!(out, "Passed. On to the next: `cargo xtask exercise --list`.")?;
                return Ok(ExitCode::SUCCESS);
            }
            if checked != CheckResult::NotChecked {
                if let Some(hint) = exercise.hints.get(failures) {
                    writeln!(out, "Hint {}: {hint}", failures + 1)?;
                }
                failures += 1;
            }
            if args.max_checks.is_some_and(|max| checks >= max) {
                return Ok(ExitCode::FAILURE);
            }
            writeln!(out, "Watching {shown}: save it to check again (Ctrl-C to stop).")?;
            out.flush()?;
        }
        std::thread::sleep(WATCH_POLL);
    }
}

fn with_spinner<T>(message: &str, work: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<T> {
    let bar = ProgressBar::new_spinner().with_message(message.to_owned());
    bar.enable_steady_tick(Duration::from_millis(120));
    let result = work();
    bar.finish_and_clear();
    result
}

/// A verdict as the learner reads it: one line per requirement, the lost points, what to do next.
fn render(verdict: &Verdict) -> Report {
    let mut report = Report::default();
    let rows = verdict
        .items
        .iter()
        .map(|item| {
            vec![
                match item.met {
                    true => styled("✓", Tone::Good),
                    false => styled("✗", Tone::Bad),
                },
                item.what.clone().into(),
                item.measured.clone().unwrap_or_else(|| "-".into()).into(),
                item.needed.clone().into(),
                format!("{}/{}", item.earned, item.points).into(),
            ]
        })
        .collect();
    if !verdict.items.is_empty() {
        report.table(["", "requirement", "measured", "needed", "points"], rows);
    }
    for note in &verdict.notes {
        report.text(format!("Note: {note}"));
    }
    if let Some(score) = verdict.score {
        report.text(format!("Score: {score}/{}", exercises::manifest::MAX_SCORE));
    }
    report.text(verdict.next.clone());
    report
}

/// Every exercise with where your copy stands, from its last check (no check is run).
fn list(manifest: &Manifest, out: &mut dyn Write, color: bool) -> anyhow::Result<ExitCode> {
    let mut rows = Vec::new();
    for exercise in &manifest.exercises {
        let copy = exercises::learner_copy_path(manifest, exercise);
        let starter = starter_text(manifest, exercise)?;
        let check_it = format!("run `cargo xtask exercise {}`", exercise.id);
        let status = match last_check::standing(manifest, exercise, &starter)? {
            Standing::NotStarted => styled("not started", Tone::Plain),
            Standing::Invalid(why) => styled(format!("fails: {why}"), Tone::Bad),
            Standing::NotCheckedYet => styled(format!("not checked yet: {check_it}"), Tone::Warn),
            Standing::Changed => styled(format!("changed since its last check: {check_it}"), Tone::Warn),
            Standing::Passes => styled("passes", Tone::Good),
            Standing::Fails { score, next } => styled(format!("fails ({score}/100): {next}"), Tone::Bad),
            Standing::NotChecked(next) => styled(next, Tone::Warn),
        };
        let file = match copy.is_file() {
            true => copy.display().to_string(),
            false => "none yet".to_owned(),
        };
        rows.push(vec![
            exercise.id.clone().into(),
            exercise.lesson.into(),
            exercise.title.clone().into(),
            file.into(),
            status,
        ]);
    }
    let mut report = Report::default();
    report.table(["exercise", "lesson", "title", "your copy", "status (last check)"], rows);
    write!(out, "{}", report.render(color))?;
    Ok(ExitCode::SUCCESS)
}

pub fn grade(args: &GradeArgs, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let manifest = manifest()?;
    if !args.merge.is_empty() {
        return merge(&manifest, args, out);
    }
    let (id, folder) =
        (args.exercise.as_deref().expect("clap requires it"), args.submissions.as_ref().expect("clap requires it"));
    let exercise = manifest.exercise(id)?;
    let learner_file = exercise.starter.file_name().expect("a starter file").to_string_lossy().into_owned();
    let mut entries = submissions::scan(folder, &learner_file)?;
    let class = grading::ClassPrint::of(&entries);
    if let Some(shard) = args.shard {
        entries.retain(|entry| shard.holds(entry.name()));
    }
    let out_dir = output_folder(args, id, folder)?;
    let _only_run = lock_output(&out_dir)?;
    let starter = starter_text(&manifest, exercise)?;
    let gpu = gpus_seen(args.no_gpu);
    if let Ok(uuids) = &gpu {
        grading::check_gpu_list(&args.gpus, uuids.len()).map_err(BadInput)?;
        writeln!(out, "Sandbox: {}.", sandbox::probe())?;
    }
    // One checker per GPU; a GPU's workers take it in turn through its lock.
    let devices: Vec<Option<u32>> = match args.gpus.is_empty() {
        true => vec![None],
        false => args.gpus.iter().copied().map(Some).collect(),
    };
    let mut checkers = Vec::new();
    for device in &devices {
        let mut checker = checker(args.time_limit)?;
        // Each check sees its GPU alone, the first where no --gpus are named.
        let visible = std::env::var("CUDA_VISIBLE_DEVICES").ok();
        checker.device = Some(grading::visible_device(device.unwrap_or(0), visible.as_deref()).map_err(BadInput)?);
        // A lock even for one check at a time: the GPU's profiler runs beside its checks. Its
        // checks and its profiler may each hold it up to the time limit, and others on the host.
        if let Ok(uuids) = &gpu {
            let holders = u64::from(args.jobs) + 1 + OTHERS_ON_THE_HOST;
            checker.gpu_lock = Some(host_lock(&uuids[device.unwrap_or(0) as usize], args.time_limit, holders)?);
        }
        checkers.push(checker);
    }
    let checks = ClassChecks {
        exercise,
        checkers,
        gpu: gpu.clone().map(drop),
        checked: AtomicUsize::new(0),
        sessions_ended: Mutex::default(),
    };
    let start = Instant::now();
    let bar = ProgressBar::new(entries.len() as u64)
        .with_style(ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}").expect("valid progress template"));
    let progress = |name: &str, done: usize, _total: usize| {
        bar.set_position(done as u64);
        bar.set_message(format!("grading {}", name.escape_debug()));
    };
    let Graded { rows, resumed } = grading::grade(
        exercise,
        &starter,
        &entries,
        grading::Destination { dir: &out_dir, shard: args.shard, class },
        &checks,
        &progress,
        Pace { workers: usize::from(args.jobs) * devices.len(), profile_batch: args.profile_batch.into() },
    )
    .with_context(|| format!("cannot write the grades in {}", out_dir.display()))?;
    bar.finish_and_clear();
    write!(out, "{}", grading::markdown(exercise, &rows))?;
    if resumed > 0 {
        writeln!(
            out,
            "\nResumed: {} graded by an earlier run into this folder were kept.",
            grading::submissions(resumed)
        )?;
    }
    let checked = checks.checked.into_inner();
    if checked > 0 {
        let seconds = start.elapsed().as_secs_f64();
        let gpus = match devices.len() {
            1 => "one GPU".to_owned(),
            n => format!("{n} GPUs"),
        };
        writeln!(
            out,
            "\nChecked {} on {gpus} in {seconds:.1} s: {:.1} a minute.",
            grading::submissions(checked),
            60.0 * checked as f64 / seconds
        )?;
    }
    let ended = checks.sessions_ended.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner());
    if !ended.is_empty() {
        writeln!(out, "\nNsight Compute sessions that ended early (their submissions were profiled apart):")?;
        for why in ended {
            writeln!(out, "- {why}")?;
        }
    }
    let written =
        [grading::CSV_FILE, grading::JSON_FILE, grading::MARKDOWN_FILE].map(|f| out_dir.join(f).display().to_string());
    writeln!(out, "\nWritten: {}", written.join(", "))?;
    if rows.is_empty() {
        // A shard may hold none of a small class: its task did all it had to.
        writeln!(out, "This shard holds none of the class's submissions.")?;
    } else if !rows.iter().any(|r| r.graded()) {
        let why = gpu.err().map_or(String::new(), |why| format!(": grading needs a GPU ({why})"));
        writeln!(out, "Nothing graded{why}.")?;
    }
    Ok(exit_status(&rows))
}

/// How `grade` and its merges end ([`GRADE_EXIT_CODES`]): 0 every row graded (or none to grade),
/// 1 some, 2 none.
fn exit_status(rows: &[grading::Row]) -> ExitCode {
    match rows.iter().filter(|row| row.graded()).count() {
        graded if graded == rows.len() => ExitCode::SUCCESS,
        0 => ExitCode::from(2),
        _ => ExitCode::FAILURE,
    }
}

/// A class's checks: worker `w` uses the checker of GPU `w % checkers`.
struct ClassChecks<'a> {
    exercise: &'a Exercise,
    checkers: Vec<Checker>,
    /// Why nothing can be checked here, if so.
    gpu: Result<(), String>,
    /// How many files were checked on a GPU.
    checked: AtomicUsize,
    /// Why profile sessions ended before the run did (their batches were profiled apart).
    sessions_ended: Mutex<Vec<String>>,
}

impl grading::Checks for ClassChecks<'_> {
    fn check(&self, file: &LearnerFile, shown: &str, worker: usize) -> check::CheckOutcome {
        match &self.gpu {
            Err(_) => check::CheckOutcome::CouldNotCheck { reason: "the file is valid; grading it needs a GPU".into() },
            Ok(()) => {
                self.checked.fetch_add(1, Ordering::Relaxed);
                self.checkers[self.gpu_of(worker)].check_unprofiled(self.exercise, file, shown)
            }
        }
    }

    fn profile(&self, checked: &mut [grading::Checked<'_>], gpu: usize) {
        self.checkers[gpu].profile(self.exercise, checked);
    }

    fn gpu_of(&self, worker: usize) -> usize {
        worker % self.checkers.len()
    }

    fn profile_session(&self, gpu: usize) -> Option<Box<dyn grading::ProfileSession + '_>> {
        let session = self.checkers[gpu].profile_session(self.exercise)?;
        Some(Box::new(ToldSession { session, gpu, ended: &self.sessions_ended }))
    }
}

/// A GPU's profile session whose early ends are told after the run.
struct ToldSession<'a> {
    session: grading::CheckerSession<'a>,
    gpu: usize,
    ended: &'a Mutex<Vec<String>>,
}

impl ToldSession<'_> {
    fn told<T>(&self, result: Result<T, String>) -> Result<T, String> {
        result.inspect_err(|why| {
            let told = format!("GPU {}: {why}", self.gpu);
            self.ended.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(told);
        })
    }
}

impl grading::ProfileSession for ToldSession<'_> {
    fn launch(&mut self, files: &[&LearnerFile]) -> Result<(), String> {
        let launched = self.session.launch(files);
        self.told(launched)
    }

    fn end(&mut self) -> Result<Vec<Vec<Result<check::CounterPair, String>>>, String> {
        let counted = self.session.end();
        self.told(counted)
    }
}

/// `--merge DIR...`: the shards' rows joined into `--out`, written as one run writes them.
fn merge(manifest: &Manifest, args: &GradeArgs, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let out_dir = args.out.as_ref().expect("clap requires --out with --merge");
    let _only_run = lock_output(out_dir)?;
    let (id, rows, class) = grading::merge(&args.merge, out_dir)?;
    let exercise = manifest.exercise(&id)?;
    let coverage = grading::Coverage { shard: None, submissions: rows.len(), class };
    grading::write_reports(exercise, &rows, out_dir, &coverage)
        .with_context(|| format!("cannot write the grades in {}", out_dir.display()))?;
    write!(out, "{}", grading::markdown(exercise, &rows))?;
    let folders = match args.merge.len() {
        1 => "1 folder".to_owned(),
        n => format!("{n} folders"),
    };
    writeln!(out, "\nMerged {folders} into {}.", out_dir.display())?;
    Ok(exit_status(&rows))
}

/// Holds `out_dir` for this run until it is dropped (see [`grading::hold_output`]).
fn lock_output(out_dir: &Path) -> anyhow::Result<fs::File> {
    match grading::hold_output(out_dir).with_context(|| format!("cannot lock {}", out_dir.display()))? {
        Some(lock) => Ok(lock),
        None => Err(BadInput(format!(
            "another grade is writing into {}: wait for it, or give each run its own --out (shards: one folder \
             each, then --merge)",
            out_dir.display()
        ))
        .into()),
    }
}

/// `--out`, or `grades-ID` beside the submissions folder (`grades-ID-shard-K-of-N` for a shard);
/// never inside it.
fn output_folder(args: &GradeArgs, id: &str, folder: &Path) -> anyhow::Result<PathBuf> {
    let submissions = fs::canonicalize(folder)?;
    let name = match args.shard {
        None => format!("grades-{id}"),
        Some(shard) => format!("grades-{id}-shard-{}-of-{}", shard.index, shard.count),
    };
    let out = match &args.out {
        Some(out) => std::path::absolute(out)?,
        None => match submissions.parent() {
            Some(parent) => parent.join(name),
            None => return Err(BadInput("the submissions folder has no parent folder: give --out".into()).into()),
        },
    };
    // The deepest part of `out` that exists, resolved, then the rest with its `..` taken back
    // (`missing/../submissions` is the submissions folder), decides where it really is.
    let existing = out.ancestors().find(|a| a.exists()).unwrap_or(Path::new("/"));
    let mut resolved = fs::canonicalize(existing)?;
    for part in out.strip_prefix(existing).expect("an ancestor").components() {
        match part {
            std::path::Component::ParentDir => {
                resolved.pop();
            }
            std::path::Component::Normal(name) => resolved.push(name),
            _ => {}
        }
    }
    if resolved.starts_with(&submissions) {
        return Err(BadInput(format!(
            "{} is inside the submissions folder, which grading never writes to: choose another --out",
            out.display()
        ))
        .into());
    }
    Ok(out)
}

/// The exercise a child command names, and its files, each read and validated again.
fn child_files(command: &ChildCommand) -> anyhow::Result<(Manifest, Exercise, Vec<LearnerFile>)> {
    let manifest = manifest()?;
    let exercise = manifest.exercise(&command.exercise)?.clone();
    let starter = starter_text(&manifest, &exercise)?;
    let files = command.files.iter().map(|path| read_copy(&exercise, &starter, path)).collect::<anyhow::Result<_>>()?;
    Ok((manifest, exercise, files))
}

/// A copy of a learner's file the grader made for a child, read and validated again.
fn read_copy(exercise: &Exercise, starter: &str, path: &Path) -> anyhow::Result<LearnerFile> {
    let bytes = fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(learner_file::validate(exercise, starter, &bytes)?)
}

/// Restricts a supervised child to its work folder (where its files' copies are) and the GPU's
/// locks, before any thread starts and before a submission is read: see `sandbox`.
fn enter_sandbox(command: &ChildCommand) -> anyhow::Result<()> {
    let mut allowance = sandbox::Allowance::for_check(command.work_folder().map_err(anyhow::Error::msg)?);
    allowance.read_write.extend(command.gpu_lock.iter().flat_map(|lock| [lock.clone(), protocol::profiler_lock(lock)]));
    let sandbox = sandbox::restrict(&allowance).map_err(anyhow::Error::msg)?;
    if let sandbox::Status::Unconfined(why) = &sandbox {
        eprintln!("not sandboxed: {why}");
    }
    supervise::end_with_supervisor();
    Ok(())
}

/// Writes `value` as JSON to `result` (see [`write_whole`]).
fn write_result(result: &Path, value: &impl serde::Serialize) -> anyhow::Result<()> {
    write_whole(result, &serde_json::to_string(value)?)
}

/// Writes `text` to `path` whole ([`protocol::write_whole`]): the supervisor never reads half a file.
fn write_whole(path: &Path, text: &str) -> anyhow::Result<()> {
    protocol::write_whole(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// The child side of checks: serves the requests on standard input (see [`serve_checks`]).
pub fn check_submissions(args: &ChildArgs) -> anyhow::Result<ExitCode> {
    let command = ChildCommand::parse(Role::Check, &args.args).map_err(anyhow::Error::msg)?;
    serve_checks(&command, &mut std::io::stdin().lock())
}

/// Checks served by one process before it ends and a fresh one takes over: bounds what a long run
/// may gather in one process (the driver's and NVRTC's memory).
const CHECKS_PER_PROCESS: u64 = 100;

/// Checks the file of each request (a line of JSON, see `protocol::CheckRequest`) read from
/// `requests`, writing its outcome and then its answer in the request's folder, inside its
/// sandbox. CUDA starts once: the GPU's primary context stays open between requests, while every
/// module, buffer and stream of a check is its own and released with it. After an outcome that
/// may leave the GPU unclean (a crash, anything not checked), the process ends, and the next
/// check starts a fresh one.
pub fn serve_checks(command: &ChildCommand, requests: &mut dyn std::io::BufRead) -> anyhow::Result<ExitCode> {
    enter_sandbox(command)?;
    let manifest = manifest()?;
    let exercise = manifest.exercise(&command.exercise)?.clone();
    let starter = starter_text(&manifest, &exercise)?;
    let work = command.work_folder().map_err(anyhow::Error::msg)?;
    // Made on the CPU while CUDA starts (0.3 s for transpose-swizzle's, beside 0.5 to 2 s), for
    // the first check to find.
    let for_timed_data = exercise.clone();
    std::thread::spawn(move || check::timed_data(&for_timed_data));
    // Held open, so that each check's own opening finds CUDA started and its context made.
    let _started = Gpu::open();
    let mut line = String::new();
    for served in 1.. {
        line.clear();
        if requests.read_line(&mut line)? == 0 {
            break;
        }
        let request: protocol::CheckRequest =
            serde_json::from_str(&line).with_context(|| format!("not a check request: {line:?}"))?;
        let files = request.files(work);
        let file = read_copy(&exercise, &starter, &files.submission)?;
        let provisional = |outcome: &check::CheckOutcome| {
            if let Err(error) = write_result(&files.result, outcome) {
                eprintln!("{error:#}");
            }
        };
        let turn = supervise::LockTurn::new(command.gpu_lock.clone(), files.turn_marker.clone());
        let outcome = check::check(&manifest, &exercise, &file, &request.name, &provisional, &turn);
        write_result(&files.result, &outcome)?;
        let after = match outcome.leaves_the_gpu_clean() && served < CHECKS_PER_PROCESS {
            true => protocol::After::Serving,
            false => protocol::After::Ending,
        };
        write_whole(&files.answered, after.text())?;
        if after == protocol::After::Ending {
            break;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The child side of a profile: runs the profile target under Nsight Compute, writes what it
/// measured as JSON to `--result=`.
pub fn profile_submissions(args: &ChildArgs) -> anyhow::Result<ExitCode> {
    let command = ChildCommand::parse(Role::Profile, &args.args).map_err(anyhow::Error::msg)?;
    enter_sandbox(&command)?;
    let exercise = manifest()?.exercise(&command.exercise)?.clone();
    let target =
        command.profile_target(Launches::All).self_command().context("cannot find this program to profile it")?;
    if command.is_session() {
        let work = command.work_folder().map_err(anyhow::Error::msg)?.to_owned();
        // The requests go on to the target as files: its standard input is Nsight Compute's.
        let forwarding = work.clone();
        std::thread::spawn(move || {
            if let Err(error) = forward_requests(&forwarding, &mut std::io::stdin().lock()) {
                eprintln!("{error:#}");
            }
        });
        let profiled = check::profile_session(&exercise, &target);
        // (Returning ends the process, the thread reading its requests with it.)
        write_result(&protocol::session_result(&work), &profiled)?;
        return Ok(ExitCode::SUCCESS);
    }
    let profiled = check::profile_submissions(&exercise, command.files.len(), &target);
    write_result(command.result.as_ref().expect("parse requires it of a profile"), &profiled)?;
    Ok(ExitCode::SUCCESS)
}

/// A profile session's requests ([`protocol::SessionRequest`], lines of `requests`), each written
/// for its target in the session folder `work`: a batch as its `ready` file, the end (or the end of
/// `requests`: the grader is gone) as the session's end.
fn forward_requests(work: &Path, requests: &mut dyn std::io::BufRead) -> anyhow::Result<()> {
    let mut line = String::new();
    let ended = loop {
        line.clear();
        if requests.read_line(&mut line)? == 0 {
            break Ok(());
        }
        match serde_json::from_str(&line) {
            Ok(protocol::SessionRequest::Batch { number, files }) => {
                write_whole(&protocol::BatchFiles::of(work, number).ready, &files.to_string())?;
            }
            Ok(protocol::SessionRequest::End) => break Ok(()),
            Err(_) => break Err(anyhow::anyhow!("not a profile session's request: {line:?}")),
        }
    };
    write_whole(&protocol::session_end(work), "")?;
    ended
}

/// What Nsight Compute profiles: the reference, then each file, once each.
pub fn profile_target(args: &ChildArgs) -> anyhow::Result<ExitCode> {
    let command = ChildCommand::parse(Role::ProfileTarget, &args.args).map_err(anyhow::Error::msg)?;
    let (manifest, exercise, files) = child_files(&command)?;
    let work = command.work_folder().map_err(anyhow::Error::msg)?;
    if command.is_session() {
        let starter = starter_text(&manifest, &exercise)?;
        let read = |path: &Path| read_copy(&exercise, &starter, path).map_err(|e| format!("{e:#}"));
        let served = check::serve_profile_session(&manifest, &exercise, work, command.gpu_lock.as_deref(), &read);
        if let Err(why) = served {
            // Told to the grader through the session's folder: Nsight Compute prints only its own lines.
            write_whole(&protocol::session_stopped(work), &why)?;
            anyhow::bail!(why);
        }
        return Ok(ExitCode::SUCCESS);
    }
    let turns = check::ProfileTurns::through(command.gpu_lock.as_deref(), work);
    check::profile_target(&manifest, &exercise, &files, command.launches, &turns).map_err(anyhow::Error::msg)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sessions_requests_reach_its_target_as_files_and_the_end_as_its_end() {
        let work = tempfile::tempdir().unwrap();
        let (batch, end) = (protocol::BatchFiles::of(work.path(), 2), protocol::session_end(work.path()));
        std::fs::create_dir(&batch.folder).unwrap();
        let lines = "{\"batch\":{\"number\":2,\"files\":17}}\n\"end\"\n{\"batch\":{\"number\":3,\"files\":1}}\n";
        forward_requests(work.path(), &mut lines.as_bytes()).unwrap();
        assert_eq!(fs::read_to_string(&batch.ready).unwrap(), "17");
        assert!(end.exists(), "the end request ends it");
        assert!(!work.path().join("batch-3").exists(), "nothing after the end is read");

        // The grader gone (its requests end), or a line that is no request: the session ends too.
        for lines in ["", "--resubmitted\n"] {
            let work = tempfile::tempdir().unwrap();
            let forwarded = forward_requests(work.path(), &mut lines.as_bytes());
            assert_eq!(forwarded.is_ok(), lines.is_empty(), "{forwarded:?}");
            assert!(protocol::session_end(work.path()).exists());
        }
    }
}
