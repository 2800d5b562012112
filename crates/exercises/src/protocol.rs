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
    /// `__profile-submissions`: one Nsight Compute session of the [`Role::ProfileTarget`], which
    /// profiles the [`ProfileBatch`] the supervisor gives it (the reference beside the files);
    /// writes [`crate::check::Profiled`] as JSON to `result`.
    Profile,
    /// `__profile-target`: what Nsight Compute runs for [`Role::Profile`]. It starts ahead of its
    /// batch (CUDA, the reference, the profiler's set-up), then waits for the batch in its folder
    /// and launches its kernels once each.
    ProfileTarget,
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
    /// The command's own folder (`--folder=`), where its sandbox lets it write: a check makes
    /// each request's folder there, a profile finds its batch there.
    pub folder: PathBuf,
    /// Where the profile command writes its outcome.
    pub result: Option<PathBuf>,
    /// A lock file to hold while the command uses the GPU (`--gpu-lock=PATH`): checks that run side
    /// by side compile at once and take the GPU in turn, their profiled launches too (which also
    /// hold [`profiler_lock`]).
    pub gpu_lock: Option<PathBuf>,
}

/// The file a check or a profile writes in its folder once it holds a GPU lock: its time limit
/// runs from then.
pub const GPU_TURN_MARKER: &str = "gpu-turn";

/// The lock beside `gpu_lock` that a profiled process holds from Nsight Compute's set-up to the
/// end of its profiled launches: ncu profiles one process at a time on a GPU (a second one fails
/// with "a driver resource was unavailable"), while checks beside it go on timing in their turns.
pub fn profiler_lock(gpu_lock: &Path) -> PathBuf {
    let mut name = gpu_lock.as_os_str().to_owned();
    name.push(".profiler");
    PathBuf::from(name)
}

const KEYS: [&str; 4] = ["exercise", "folder", "result", "gpu-lock"];

impl ChildCommand {
    /// The arguments that start this command: its name, then one `--key=VALUE` per value.
    pub fn args(&self) -> Vec<OsString> {
        let pair = |key: &str, value: &OsStr| {
            let mut arg = OsString::from(format!("--{key}="));
            arg.push(value);
            arg
        };
        let mut args = vec![
            OsString::from(self.role.command()),
            pair("exercise", OsStr::new(&self.exercise)),
            pair("folder", self.folder.as_os_str()),
        ];
        if let Some(result) = &self.result {
            args.push(pair("result", result.as_os_str()));
        }
        if let Some(lock) = &self.gpu_lock {
            args.push(pair("gpu-lock", lock.as_os_str()));
        }
        args
    }

    /// Reads the values of `role`'s command back from `args` (what follows the command's name).
    pub fn parse(role: Role, args: &[OsString]) -> Result<ChildCommand, String> {
        let command = role.command();
        let mut values: [Option<OsString>; 4] = Default::default();
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
            if values[slot].replace(OsString::from_vec(value.to_vec())).is_some() {
                return Err(format!("{command}: --{} given twice", KEYS[slot]));
            }
        }
        let [exercise, folder, result, gpu_lock] = values;
        let exercise = exercise
            .ok_or_else(|| format!("{command}: --exercise=... is missing"))?
            .into_string()
            .map_err(|v| format!("{command}: --exercise is not UTF-8: {v:?}"))?;
        let folder = PathBuf::from(folder.ok_or_else(|| format!("{command}: --folder=... is missing"))?);
        let result = result.map(PathBuf::from);
        match role {
            Role::Profile if result.is_none() => {
                return Err(format!("{command}: --result=... names where the outcome goes"));
            }
            Role::Check | Role::ProfileTarget if result.is_some() => {
                return Err(format!(
                    "{command}: --result is the profile command's (a check answers in its requests' folders)"
                ));
            }
            _ => {}
        }
        Ok(ChildCommand { role, exercise, folder, result, gpu_lock: gpu_lock.map(PathBuf::from) })
    }

    /// The target a profile command starts under Nsight Compute: the same folder and GPU lock
    /// (its launches take a turn of their own).
    pub fn profile_target(&self) -> ChildCommand {
        ChildCommand { role: Role::ProfileTarget, result: None, ..self.clone() }
    }

    /// This command as a restart of the running program.
    pub fn self_command(&self) -> std::io::Result<SelfCommand> {
        SelfCommand::current(self.args())
    }
}

/// What a profile is given to profile, once it has started: written whole to [`BATCH_FILE`] in
/// its folder, beside the copies of the files ([`ProfileBatch::copy`]), by the supervisor. The
/// reference is launched first, then each file; a batch of no files launches the reference alone
/// (whether a failed profile was the submissions' doing).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct ProfileBatch {
    /// How many files: `submission-1.cu` to `submission-N.cu`.
    pub files: usize,
}

/// The file in a profile's folder that gives it its [`ProfileBatch`].
pub const BATCH_FILE: &str = "batch.json";

impl ProfileBatch {
    /// In the profile target: waits for its batch in its folder `work` (the supervisor writes it
    /// whole, through a rename, after the copies of its files).
    pub fn wait(work: &Path) -> Result<ProfileBatch, String> {
        let path = work.join(BATCH_FILE);
        loop {
            match std::fs::read_to_string(&path) {
                Ok(text) => return serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display())),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                Err(error) => return Err(format!("cannot read {}: {error}", path.display())),
            }
        }
    }

    /// Where the copy of file `index` (from 0) is, in the profile's folder `work`.
    pub fn copy(work: &Path, index: usize) -> PathBuf {
        work.join(format!("submission-{}.cu", index + 1))
    }

    /// The copies of its files, in order.
    pub fn copies(&self, work: &Path) -> Vec<PathBuf> {
        (0..self.files).map(|index| ProfileBatch::copy(work, index)).collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_comes_back_as_it_went() {
        for folder in ["/tmp/x/-rf", "/tmp/a \"quoted\" folder", "/tmp/two\nlines", "/tmp/--folder=x"] {
            let command = ChildCommand {
                role: Role::Check,
                exercise: "row-sums".into(),
                folder: folder.into(),
                result: None,
                gpu_lock: Some("/tmp/grades/.gpu-lock".into()),
            };
            let args = command.args();
            assert_eq!(args[0], "__check-submissions");
            assert!(args[1..].iter().all(|a| a.as_bytes().starts_with(b"--")), "{args:?}");
            assert_eq!(ChildCommand::parse(Role::Check, &args[1..]), Ok(command.clone()), "{folder:?}");
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
    fn a_profile_and_its_target_share_a_folder_where_the_batch_comes_after_they_start() {
        let work = tempfile::tempdir().unwrap();
        let profile = ChildCommand {
            role: Role::Profile,
            exercise: "transpose-swizzle".into(),
            folder: work.path().to_owned(),
            result: Some(work.path().join("profiled.json")),
            gpu_lock: Some("/tmp/grades/.gpu-1-lock".into()),
        };
        let args = profile.args();
        assert_eq!(args[0], "__profile-submissions");
        assert_eq!(ChildCommand::parse(Role::Profile, &args[1..]), Ok(profile.clone()));
        let target = profile.profile_target();
        assert_eq!(target.args()[0], "__profile-target");
        assert_eq!(
            (&target.folder, &target.gpu_lock, target.result.as_ref()),
            (&profile.folder, &profile.gpu_lock, None)
        );
        assert_eq!(ChildCommand::parse(Role::ProfileTarget, &target.args()[1..]), Ok(target));

        let folder = work.path().to_owned();
        let waiting = std::thread::spawn(move || ProfileBatch::wait(&folder));
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(!waiting.is_finished(), "no batch yet");
        let batch = ProfileBatch { files: 3 };
        std::fs::write(work.path().join(BATCH_FILE), serde_json::to_string(&batch).unwrap()).unwrap();
        assert_eq!(waiting.join().unwrap(), Ok(batch));
        let copies = batch.copies(work.path());
        assert_eq!(copies.len(), 3);
        assert!(copies.iter().all(|copy| copy.parent() == Some(work.path())));
        assert!(copies[0].ends_with("submission-1.cu") && copies[2].ends_with("submission-3.cu"));
        std::fs::write(work.path().join(BATCH_FILE), "{\"files\":").unwrap();
        assert!(ProfileBatch::wait(work.path()).unwrap_err().contains("batch.json"), "a malformed batch is named");
    }

    #[test]
    fn a_profiled_set_up_waits_for_another_profile_and_never_for_a_check_timing() {
        use crate::supervise::{GpuTurn, LockTurn};
        let dir = tempfile::tempdir().unwrap();
        let (gpu, marker) = (dir.path().join(".gpu-0-lock"), dir.path().join("marker"));
        let profiler = profiler_lock(&gpu);
        assert_eq!(profiler.parent(), gpu.parent(), "beside the GPU's lock, where the grader makes it");
        assert_ne!(profiler, gpu);
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
            parse(&["--file=x"]),
            "__check-submissions: unknown key in \"--file=x\" (known: exercise, folder, result, gpu-lock)"
        );
        assert_eq!(parse(&["--folder=a", "--folder=b"]), "__check-submissions: --folder given twice");
        assert_eq!(parse(&["--exercise=x"]), "__check-submissions: --folder=... is missing");
        assert_eq!(parse(&["--folder=f"]), "__check-submissions: --exercise=... is missing");
        assert_eq!(
            parse(&["--exercise=x", "--folder=w", "--result=r"]),
            "__check-submissions: --result is the profile command's (a check answers in its requests' folders)"
        );
        assert_eq!(
            parse_as(Role::Profile, &["--exercise=x", "--folder=w"]),
            "__profile-submissions: --result=... names where the outcome goes"
        );
        assert!(
            parse_as(Role::ProfileTarget, &["--exercise=x", "--folder=w", "--result=r"])
                .contains("--result is the profile command's")
        );
    }
}
