//! The hidden child commands of a check, both directions in one place: [`ChildCommand::args`]
//! builds the argument list the supervisor starts this program with, [`ChildCommand::parse`] reads
//! it back in the child. Every value is passed as `--key=VALUE` in one argument, so a name that
//! starts with `-` (a folder named `-resubmitted`), holds a quote, a space or a newline stays a
//! value: no parser can take it for a flag.

use std::{
    ffi::{OsStr, OsString},
    os::unix::ffi::{OsStrExt, OsStringExt},
    path::{Path, PathBuf},
};

use cuda_kernels::ncu::SelfCommand;

/// Which hidden command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// `__check-submission`: check one file (its output and its times), write the outcome as
    /// JSON to `result`. Its counters are measured apart, by [`Role::Profile`].
    Check,
    /// `__profile-submissions`: profile one or more checked files in one Nsight Compute session,
    /// the reference beside them, and write [`crate::check::Profiled`] as JSON to `result`.
    Profile,
    /// `__profile-target`: what Nsight Compute runs for [`Role::Profile`]: the reference, then
    /// every file, launched once each.
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
            Role::Check => "__check-submission",
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
    /// The copies of the learners' files (`--file=` once per file): one for a check, one or more
    /// to profile, in the order their counters are reported.
    pub files: Vec<PathBuf>,
    /// The file's name as messages show it (the check command only): data, never compiled,
    /// never a flag.
    pub name: Option<String>,
    /// Where the command writes its outcome (not the profile target, whose launches ncu reports).
    pub result: Option<PathBuf>,
    /// Which kernels to launch (the profile target only).
    pub launches: Launches,
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

const KEYS: [&str; 6] = ["exercise", "file", "name", "result", "only", "gpu-lock"];
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
        if let Some(name) = &self.name {
            args.push(pair("name", OsStr::new(name)));
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
        let [exercise, _, name, result, only, gpu_lock] = values;
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
        let name = match role {
            Role::Check => Some(text(name, "name")?),
            _ if name.is_some() => return Err(format!("{command}: --name is the check command's")),
            _ => None,
        };
        match (role, files.len()) {
            (_, 0) => return Err(format!("{command}: --file=... is missing")),
            (Role::Check, 2..) => return Err(format!("{command}: give one --file=..., not {}", files.len())),
            _ => {}
        }
        let result = result.map(PathBuf::from);
        if role != Role::ProfileTarget && result.is_none() {
            return Err(format!("{command}: --result=... names where the outcome goes"));
        }
        Ok(ChildCommand { role, exercise, files, name, result, launches, gpu_lock })
    }

    /// The target a profile command starts under Nsight Compute, launching `launches`: the same
    /// files and GPU lock (its launches take a turn of their own).
    pub fn profile_target(&self, launches: Launches) -> ChildCommand {
        ChildCommand { role: Role::ProfileTarget, result: None, name: None, launches, ..self.clone() }
    }

    /// This command as a restart of the running program.
    pub fn self_command(&self) -> std::io::Result<SelfCommand> {
        SelfCommand::current(self.args())
    }

    /// The folder of the copies of the files: the command's own, where its sandbox lets it write.
    pub fn work_folder(&self) -> Result<&Path, String> {
        let first = self.files.first().ok_or_else(|| format!("{}: no --file=...", self.role.command()))?;
        let work =
            first.parent().ok_or_else(|| format!("{}: {} is in no folder", self.role.command(), first.display()))?;
        match self.files.iter().all(|f| f.parent() == Some(work)) {
            true => Ok(work),
            false => Err(format!("{}: the files' copies must share one folder", self.role.command())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_comes_back_as_it_went() {
        for name in ["-resubmitted", "--help", "a \"quoted\" name", "two\nlines", "=1+1", "--name=x", "", "é è"] {
            let command = ChildCommand {
                role: Role::Check,
                exercise: "row-sums".into(),
                files: vec![PathBuf::from("/tmp/x/-rf/submission.cu")],
                name: Some(name.into()),
                result: Some("/tmp/x/-rf/result.json".into()),
                launches: Launches::All,
                gpu_lock: Some("/tmp/grades/.gpu-lock".into()),
            };
            let args = command.args();
            assert_eq!(args[0], "__check-submission");
            assert!(args[1..].iter().all(|a| a.as_bytes().starts_with(b"--")), "{args:?}");
            assert_eq!(ChildCommand::parse(Role::Check, &args[1..]), Ok(command.clone()), "{name:?}");
            assert_eq!(command.work_folder(), Ok(Path::new("/tmp/x/-rf")));
        }
    }

    #[test]
    fn a_profile_names_every_file_in_order_and_its_target_the_same() {
        let files: Vec<PathBuf> = ["b.cu", "-a.cu", "c d.cu"].iter().map(|f| Path::new("/tmp/batch").join(f)).collect();
        let profile = ChildCommand {
            role: Role::Profile,
            exercise: "transpose-swizzle".into(),
            files: files.clone(),
            name: None,
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
        let apart = ChildCommand { files: vec!["/tmp/a/1.cu".into(), "/tmp/b/2.cu".into()], ..profile };
        assert!(apart.work_folder().unwrap_err().contains("must share one folder"));
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
        assert_eq!(parse(&["--exercise", "x"]), "__check-submission: expected --KEY=VALUE, got \"--exercise\"");
        assert_eq!(
            parse(&["--colour=x"]),
            "__check-submission: unknown key in \"--colour=x\" (known: exercise, file, name, result, only, gpu-lock)"
        );
        assert_eq!(parse(&["--name=a", "--name=b"]), "__check-submission: --name given twice");
        assert_eq!(
            parse(&["--exercise=x", "--file=f", "--name=n"]),
            "__check-submission: --result=... names where the outcome goes"
        );
        assert_eq!(parse(&["--file=f", "--name=n"]), "__check-submission: --exercise=... is missing");
        assert_eq!(
            parse(&["--exercise=x", "--file=a", "--file=b", "--name=n", "--result=r"]),
            "__check-submission: give one --file=..., not 2"
        );
        assert!(
            parse(&["--only=reference"]).contains("--only=reference is not known"),
            "a check launches no reference"
        );
        assert_eq!(
            parse_as(Role::Profile, &["--exercise=x", "--result=r"]),
            "__profile-submissions: --file=... is missing"
        );
        assert_eq!(
            parse_as(Role::Profile, &["--exercise=x", "--file=f", "--name=n", "--result=r"]),
            "__profile-submissions: --name is the check command's"
        );
    }
}
