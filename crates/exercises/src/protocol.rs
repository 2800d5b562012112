//! The hidden child commands of a check, both directions in one place: [`ChildCommand::args`]
//! builds the argument list the supervisor starts this program with, [`ChildCommand::parse`] reads
//! it back in the child, and a check process's requests ([`CheckRequest`]) and answers
//! ([`RequestFiles`]). Every value is passed as `--key=VALUE` in one argument, or as JSON, so a
//! name that starts with `-` (a folder named `-resubmitted`), holds a quote, a space or a newline
//! stays a value: no parser can take it for a flag.

use std::{
    ffi::{OsStr, OsString},
    os::unix::ffi::{OsStrExt, OsStringExt},
    path::{Path, PathBuf},
};

use cuda_kernels::ncu::SelfCommand;
use serde::{Deserialize, Serialize};

/// Which hidden command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// `__check-submissions`: check files one after another (their output and their times), each
    /// named by a [`CheckRequest`], a line of its standard input, and answered through its
    /// [`RequestFiles`]. One process checks many: CUDA starts once, not once a submission. Their
    /// counters are measured apart, by [`Role::Profile`].
    Check,
    /// `__profile-submissions`: profile one or more checked files in one Nsight Compute session,
    /// the reference beside them, and write [`crate::check::Profiled`] as JSON to `result`. With
    /// `--folder=` instead of files, a session for a whole run: batch after batch of files, each a
    /// [`SessionRequest`] on its standard input, their counters read at its end ([`session_result`]).
    Profile,
    /// `__profile-target`: what Nsight Compute runs for [`Role::Profile`]: the reference, then
    /// every file, launched once each; in a session, the same for each batch as it comes.
    ProfileTarget,
}

/// Which kernels the profile target launches (`--only=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Launches {
    /// The reference, then every file in order.
    All,
    /// `--only=reference`: whether a failed profile was the submissions' doing.
    Reference,
}

impl Launches {
    /// `--only=VALUE`, `None` for all.
    fn arg(self) -> Option<OsString> {
        match self {
            Launches::All => None,
            Launches::Reference => Some("--only=reference".into()),
        }
    }

    /// `profile_with` (a profile target of every kernel) made to launch these.
    pub fn of(self, profile_with: &SelfCommand) -> SelfCommand {
        let mut command = profile_with.clone();
        command.args.extend(self.arg());
        command
    }
}

impl Role {
    pub const fn command(self) -> &'static str {
        match self {
            Role::Check => "__check-submissions",
            Role::Profile => "__profile-submissions",
            Role::ProfileTarget => "__profile-target",
        }
    }
}

/// One hidden child command with its values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildCommand {
    pub role: Role,
    pub exercise: String,
    /// The copies of the learners' files (`--file=` once per file) to profile, in the order their
    /// counters are reported (none for a check, whose requests name them).
    pub files: Vec<PathBuf>,
    /// The check command's own folder (`--folder=`), where each request's folder is made.
    pub folder: Option<PathBuf>,
    /// Where the profile command writes its outcome.
    pub result: Option<PathBuf>,
    /// Which kernels to launch (the profile target only).
    pub launches: Launches,
    /// A lock file to hold while the command uses the GPU (`--gpu-lock=PATH`): checks that run side
    /// by side compile at once and take the GPU in turn, their profiled launches too (which also
    /// hold [`profiler_lock`]).
    pub gpu_lock: Option<PathBuf>,
}

/// The file a check or a profile writes in its folder once it holds the GPU's lock (for a
/// profile, its launches' turn): its time limit runs from then.
pub const GPU_TURN_MARKER: &str = "gpu-turn";

/// The file a profile writes in its folder once it holds [`profiler_lock`]. Its time limit does
/// not run from then: it still waits for the GPU behind the checks, each of which may hold it up to
/// the time limit (one that never ends, for one), which is not the profiled submissions' doing.
pub const PROFILER_TURN_MARKER: &str = "profiler-turn";

/// The lock beside `gpu_lock` that a profiled process holds from Nsight Compute's set-up to the
/// end of its profiled launches: ncu profiles one process at a time on a GPU (a second one fails
/// with "a driver resource was unavailable"), while checks beside it go on timing in their turns.
pub fn profiler_lock(gpu_lock: &Path) -> PathBuf {
    let mut name = gpu_lock.as_os_str().to_owned();
    name.push(".profiler");
    PathBuf::from(name)
}

const KEYS: [&str; 6] = ["exercise", "file", "folder", "result", "only", "gpu-lock"];
/// The key that may be given more than once.
const REPEATED: &str = "file";

impl ChildCommand {
    /// The arguments that start this command: its name, then one `--key=VALUE` per value.
    pub fn args(&self) -> Vec<OsString> {
        let pair = |key: &str, value: &OsStr| {
            let mut arg = OsString::from(format!("--{key}="));
            arg.push(value);
            arg
        };
        let mut args = vec![OsString::from(self.role.command()), pair("exercise", OsStr::new(&self.exercise))];
        args.extend(self.files.iter().map(|file| pair("file", file.as_os_str())));
        if let Some(folder) = &self.folder {
            args.push(pair("folder", folder.as_os_str()));
        }
        if let Some(result) = &self.result {
            args.push(pair("result", result.as_os_str()));
        }
        args.extend(self.launches.arg());
        if let Some(lock) = &self.gpu_lock {
            args.push(pair("gpu-lock", lock.as_os_str()));
        }
        args
    }

    /// Reads the values of `role`'s command back from `args` (what follows the command's name).
    pub fn parse(role: Role, args: &[OsString]) -> Result<ChildCommand, String> {
        let command = role.command();
        let mut values: [Option<OsString>; 6] = Default::default();
        let mut files = Vec::new();
        for arg in args {
            let bytes = arg.as_bytes();
            let (key, value) = bytes
                .strip_prefix(b"--")
                .and_then(|rest| rest.iter().position(|&b| b == b'=').map(|at| (&rest[..at], &rest[at + 1..])))
                .ok_or_else(|| format!("{command}: expected --KEY=VALUE, got {arg:?}"))?;
            let slot = KEYS
                .iter()
                .position(|k| k.as_bytes() == key)
                .ok_or_else(|| format!("{command}: unknown key in {arg:?} (known: {})", KEYS.join(", ")))?;
            let value = OsString::from_vec(value.to_vec());
            if KEYS[slot] == REPEATED {
                files.push(PathBuf::from(value));
            } else if values[slot].replace(value).is_some() {
                return Err(format!("{command}: --{} given twice", KEYS[slot]));
            }
        }
        let [exercise, _, folder, result, only, gpu_lock] = values;
        let gpu_lock = gpu_lock.map(PathBuf::from);
        let launches = match only.as_deref().map(OsStr::as_bytes) {
            None => Launches::All,
            Some(b"reference") if role == Role::ProfileTarget => Launches::Reference,
            Some(other) => {
                return Err(format!(
                    "{command}: --only={} is not known (only the profile target takes it: --only=reference)",
                    String::from_utf8_lossy(other)
                ));
            }
        };
        let text = |value: Option<OsString>, key: &str| {
            value
                .ok_or_else(|| format!("{command}: --{key}=... is missing"))?
                .into_string()
                .map_err(|v| format!("{command}: --{key} is not UTF-8: {v:?}"))
        };
        let exercise = text(exercise, "exercise")?;
        let (folder, result) = (folder.map(PathBuf::from), result.map(PathBuf::from));
        match role {
            Role::Check if folder.is_none() => return Err(format!("{command}: --folder=... is missing")),
            Role::Check if !files.is_empty() || result.is_some() => {
                return Err(format!("{command}: the files and results are its requests', not --file or --result"));
            }
            Role::Check => {}
            // A profile or target with a folder: a session (see `is_session`).
            _ if folder.is_some() && (!files.is_empty() || result.is_some() || launches != Launches::All) => {
                return Err(format!(
                    "{command}: a session (--folder=) is given its files batch by batch and writes its result \
                     in its folder: not --file, --result or --only"
                ));
            }
            _ if folder.is_some() => {}
            _ if files.is_empty() => {
                return Err(format!("{command}: --file=... (or --folder=..., a session) is missing"));
            }
            Role::Profile if result.is_none() => {
                return Err(format!("{command}: --result=... names where the outcome goes"));
            }
            _ => {}
        }
        Ok(ChildCommand { role, exercise, files, folder, result, launches, gpu_lock })
    }

    /// The target a profile command starts under Nsight Compute, launching `launches`: the same
    /// files and GPU lock (its launches take a turn of their own).
    pub fn profile_target(&self, launches: Launches) -> ChildCommand {
        ChildCommand { role: Role::ProfileTarget, result: None, launches, ..self.clone() }
    }

    /// This command as a restart of the running program.
    pub fn self_command(&self) -> std::io::Result<SelfCommand> {
        SelfCommand::current(self.args())
    }

    /// Whether this is a profile session's command (see [`Role::Profile`]).
    pub fn is_session(&self) -> bool {
        self.role != Role::Check && self.folder.is_some()
    }

    /// The command's own folder, where its sandbox lets it write: a check's or a session's
    /// `--folder`, else the folder of the copies of the files.
    pub fn work_folder(&self) -> Result<&Path, String> {
        if let Some(folder) = &self.folder {
            return Ok(folder);
        }
        let first = self.files.first().ok_or_else(|| format!("{}: no --file=...", self.role.command()))?;
        let work =
            first.parent().ok_or_else(|| format!("{}: {} is in no folder", self.role.command(), first.display()))?;
        match self.files.iter().all(|f| f.parent() == Some(work)) {
            true => Ok(work),
            false => Err(format!("{}: the files' copies must share one folder", self.role.command())),
        }
    }
}

/// One file for a check process to check: a line of JSON on its standard input. The file, its
/// outcome and its answer are in the request's own folder ([`RequestFiles`]).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct CheckRequest {
    /// Numbers the requests to one process, and names their folders.
    pub number: u64,
    /// The file's name as messages show it: data, never compiled, never a flag.
    pub name: String,
}

/// The files of a [`CheckRequest`], in its folder: the supervisor writes `submission` (read-only),
/// the check process writes `result` (as it goes: an outcome stands if the check goes no
/// further), then `answered`, once the outcome is final.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestFiles {
    pub folder: PathBuf,
    pub submission: PathBuf,
    pub result: PathBuf,
    /// Written once the check holds the GPU (see [`GPU_TURN_MARKER`]).
    pub turn_marker: PathBuf,
    /// Says whether the process goes on serving ([`After`]).
    pub answered: PathBuf,
}

impl CheckRequest {
    /// Its files, in its folder inside the check process's `work` folder.
    pub fn files(&self, work: &Path) -> RequestFiles {
        let folder = work.join(self.number.to_string());
        RequestFiles {
            submission: folder.join("submission.cu"),
            result: folder.join("result.json"),
            turn_marker: folder.join(GPU_TURN_MARKER),
            answered: folder.join("answered"),
            folder,
        }
    }
}

/// What a check process does after answering, as its `answered` file says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum After {
    /// It reads the next request.
    Serving,
    /// It ends: its GPU may not be clean (a kernel crashed), or it has served its share.
    Ending,
}

impl After {
    pub const fn text(self) -> &'static str {
        match self {
            After::Serving => "serving",
            After::Ending => "ending",
        }
    }

    /// What an `answered` file says (a line); `None` if it says neither.
    pub fn read(text: &str) -> Option<After> {
        [After::Serving, After::Ending].into_iter().find(|after| after.text() == text.trim_end())
    }
}

/// A request to a profile session, a line of JSON on the profile command's standard input, which
/// passes it on to its target under Nsight Compute as the batch's `ready` file ([`BatchFiles`]).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum SessionRequest {
    /// Launch batch `number`: its `files` copies are in its folder.
    Batch { number: u64, files: usize },
    /// Launch no more: the target ends, and Nsight Compute's counters are read.
    End,
}

/// The files of a session's batch, in its folder inside the session's: the supervisor writes the
/// copies, the profile command `ready` (the number of copies), the target `launched` (what each
/// launch did, [`crate::check::Launched`]) once it has launched them all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchFiles {
    pub folder: PathBuf,
    pub ready: PathBuf,
    /// Written once the batch's launches hold the GPU: its time limit runs from then.
    pub turn_marker: PathBuf,
    pub launched: PathBuf,
}

impl BatchFiles {
    /// Batch `number`'s files in the session folder `work`.
    pub fn of(work: &Path, number: u64) -> BatchFiles {
        let folder = work.join(format!("batch-{number}"));
        BatchFiles {
            ready: folder.join("ready"),
            turn_marker: folder.join(GPU_TURN_MARKER),
            launched: folder.join("launched.json"),
            folder,
        }
    }

    /// The copy of the batch's file `index` (from 0).
    pub fn submission(&self, index: usize) -> PathBuf {
        self.folder.join(format!("submission-{}.cu", index + 1))
    }
}

/// Writes `text` to `path` whole: to a file beside it (`grades.csv.partial`, each file's own), then
/// renamed, so that whoever reads it (the supervisor, a spreadsheet) never reads half of it.
pub fn write_whole(path: &Path, text: &str) -> std::io::Result<()> {
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    std::fs::write(&partial, text)?;
    std::fs::rename(&partial, path)
}

/// Written in a session's folder when it is to launch no more.
pub fn session_end(work: &Path) -> PathBuf {
    work.join("end")
}

/// Where a session's target writes why it stopped, if it stopped before the session's end.
pub fn session_stopped(work: &Path) -> PathBuf {
    work.join("stopped")
}

/// Where a session writes the counters of every launch it profiled, once its target has ended.
pub fn session_result(work: &Path) -> PathBuf {
    work.join("profiled.json")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_comes_back_as_it_went() {
        for folder in ["/tmp/x/-rf", "/tmp/a \"quoted\" folder", "/tmp/two\nlines", "/tmp/--folder=x"] {
            let command = ChildCommand {
                role: Role::Check,
                exercise: "row-sums".into(),
                files: Vec::new(),
                folder: Some(folder.into()),
                result: None,
                launches: Launches::All,
                gpu_lock: Some("/tmp/grades/.gpu-lock".into()),
            };
            let args = command.args();
            assert_eq!(args[0], "__check-submissions");
            assert!(args[1..].iter().all(|a| a.as_bytes().starts_with(b"--")), "{args:?}");
            assert_eq!(ChildCommand::parse(Role::Check, &args[1..]), Ok(command.clone()), "{folder:?}");
            assert_eq!(command.work_folder(), Ok(Path::new(folder)));
        }
        for name in ["-resubmitted", "--help", "a \"quoted\" name", "two\nlines", "=1+1", "--name=x", "", "é è"] {
            let request = CheckRequest { number: 7, name: name.into() };
            let line = serde_json::to_string(&request).unwrap();
            assert!(!line.contains('\n'), "one line: {line}");
            assert_eq!(serde_json::from_str::<CheckRequest>(&line).unwrap(), request);
        }
        let files = CheckRequest { number: 7, name: "../../x".into() }.files(Path::new("/tmp/work"));
        assert_eq!(files.folder, Path::new("/tmp/work/7"), "the name names no path");
        for file in [&files.submission, &files.result, &files.turn_marker, &files.answered] {
            assert_eq!(file.parent(), Some(files.folder.as_path()));
        }
        for after in [After::Serving, After::Ending] {
            assert_eq!(After::read(after.text()), Some(after));
        }
        assert_eq!(After::read(""), None, "a half-written answer says nothing");
    }

    #[test]
    fn a_profile_names_every_file_in_order_and_its_target_the_same() {
        let files: Vec<PathBuf> = ["b.cu", "-a.cu", "c d.cu"].iter().map(|f| Path::new("/tmp/batch").join(f)).collect();
        let profile = ChildCommand {
            role: Role::Profile,
            exercise: "transpose-swizzle".into(),
            files: files.clone(),
            folder: None,
            result: Some("/tmp/batch/profiled.json".into()),
            launches: Launches::All,
            gpu_lock: Some("/tmp/grades/.gpu-1-lock".into()),
        };
        let args = profile.args();
        assert_eq!(args[0], "__profile-submissions");
        assert_eq!(ChildCommand::parse(Role::Profile, &args[1..]), Ok(profile.clone()));
        for launches in [Launches::All, Launches::Reference] {
            let target = profile.profile_target(launches);
            assert_eq!(target.args()[0], "__profile-target");
            assert_eq!((&target.files, &target.gpu_lock, target.result.as_ref()), (&files, &profile.gpu_lock, None));
            assert_eq!(target.args().iter().any(|a| a == "--only=reference"), launches == Launches::Reference);
            assert_eq!(ChildCommand::parse(Role::ProfileTarget, &target.args()[1..]), Ok(target));
        }
        let apart = ChildCommand { files: vec!["/tmp/a/1.cu".into(), "/tmp/b/2.cu".into()], ..profile.clone() };
        assert!(apart.work_folder().unwrap_err().contains("must share one folder"));
        // A session: its folder, no files; its target the same.
        let session = ChildCommand { files: Vec::new(), result: None, folder: Some("/tmp/-s \"1\"".into()), ..profile };
        assert!(session.is_session());
        assert_eq!(ChildCommand::parse(Role::Profile, &session.args()[1..]), Ok(session.clone()));
        let target = session.profile_target(Launches::All);
        assert!(target.is_session() && target.work_folder() == Ok(Path::new("/tmp/-s \"1\"")));
        assert_eq!(ChildCommand::parse(Role::ProfileTarget, &target.args()[1..]), Ok(target));
        for request in [SessionRequest::Batch { number: 3, files: 64 }, SessionRequest::End] {
            let line = serde_json::to_string(&request).unwrap();
            assert_eq!(serde_json::from_str::<SessionRequest>(&line).unwrap(), request);
        }
        let batch = BatchFiles::of(Path::new("/tmp/s"), 3);
        for file in [&batch.ready, &batch.turn_marker, &batch.launched, &batch.submission(0)] {
            assert_eq!(file.parent(), Some(Path::new("/tmp/s/batch-3")));
        }
        assert_ne!(batch.submission(0), batch.submission(1));
    }

    #[test]
    fn a_profiled_set_up_waits_for_another_profile_and_never_for_a_check_timing() {
        use crate::supervise::{GpuTurn, LockTurn};
        let dir = tempfile::tempdir().unwrap();
        let (gpu, marker) = (dir.path().join("gpu-lock"), dir.path().join("marker"));
        let profiler = profiler_lock(&gpu);
        assert_eq!(profiler.parent(), gpu.parent(), "beside the GPU's lock, where the grader makes it");
        assert_ne!(profiler, gpu);
        for file in [&gpu, &profiler] {
            std::fs::write(file, "").unwrap();
        }
        let timing = LockTurn::new(Some(gpu.clone()), marker.clone());
        timing.take().unwrap();
        let first = LockTurn::new(Some(profiler.clone()), marker.clone());
        first.take().unwrap();
        let second = std::sync::Arc::new(LockTurn::new(Some(profiler), dir.path().join("second")));
        let waiting = std::thread::spawn({
            let second = second.clone();
            move || second.take()
        });
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(!dir.path().join("second").exists(), "one set-up at a time on a GPU");
        first.end();
        waiting.join().unwrap().unwrap();
        assert!(dir.path().join("second").exists());
    }

    #[test]
    fn a_malformed_command_is_named() {
        let parse_as = |role, args: &[&str]| {
            ChildCommand::parse(role, &args.iter().map(OsString::from).collect::<Vec<_>>()).unwrap_err()
        };
        let parse = |args: &[&str]| parse_as(Role::Check, args);
        assert_eq!(parse(&["--exercise", "x"]), "__check-submissions: expected --KEY=VALUE, got \"--exercise\"");
        assert_eq!(
            parse(&["--colour=x"]),
            "__check-submissions: unknown key in \"--colour=x\" (known: exercise, file, folder, result, only, gpu-lock)"
        );
        assert_eq!(parse(&["--folder=a", "--folder=b"]), "__check-submissions: --folder given twice");
        assert_eq!(parse(&["--exercise=x"]), "__check-submissions: --folder=... is missing");
        assert_eq!(parse(&["--folder=f"]), "__check-submissions: --exercise=... is missing");
        for stray in ["--file=f", "--result=r"] {
            assert_eq!(
                parse(&["--exercise=x", "--folder=w", stray]),
                "__check-submissions: the files and results are its requests', not --file or --result"
            );
        }
        assert!(
            parse(&["--only=reference"]).contains("--only=reference is not known"),
            "a check launches no reference"
        );
        assert_eq!(
            parse_as(Role::Profile, &["--exercise=x", "--result=r"]),
            "__profile-submissions: --file=... (or --folder=..., a session) is missing"
        );
        assert_eq!(
            parse_as(Role::Profile, &["--exercise=x", "--file=f"]),
            "__profile-submissions: --result=... names where the outcome goes"
        );
        assert!(
            parse_as(Role::Profile, &["--exercise=x", "--file=f", "--folder=w", "--result=r"])
                .starts_with("__profile-submissions: a session (--folder=) is given its files batch by batch"),
        );
    }
}
