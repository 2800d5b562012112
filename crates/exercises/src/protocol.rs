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

use cuda_kernels::ncu::{SelfCommand, SharedCounters};

/// Which hidden command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// `__check-submission`: check one file, write the outcome as JSON to `result`.
    Check,
    /// `__profile-submission`: launch the reference and the submission once each, under ncu.
    Profile,
}

/// Which kernels the profile command launches (`--only=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Launches {
    Both,
    /// `--only=reference`: whether a failed profile was the submission's doing.
    Reference,
    /// `--only=submission`: where the reference's counters are known already.
    Submission,
}

impl Launches {
    /// `--only=VALUE`, `None` for both.
    fn arg(self) -> Option<OsString> {
        match self {
            Launches::Both => None,
            Launches::Reference => Some("--only=reference".into()),
            Launches::Submission => Some("--only=submission".into()),
        }
    }

    /// `profile_with` (a profile command of both kernels) made to launch these.
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
            Role::Profile => "__profile-submission",
        }
    }
}

/// One hidden child command with its values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildCommand {
    pub role: Role,
    pub exercise: String,
    /// The copy of the learner's file to check.
    pub file: PathBuf,
    /// The file's name as messages show it: data, never compiled, never a flag.
    pub name: String,
    /// Where the check writes its outcome (the check command only).
    pub result: Option<PathBuf>,
    /// Which kernels to launch (the profile command only).
    pub launches: Launches,
    /// The reference solution's counters, where an earlier check on this GPU measured them
    /// (`--reference-counters=JSON`, the check command only): then only the submission is
    /// profiled. Exact counters are the same in every run.
    pub known_reference: Option<SharedCounters>,
    /// A lock file to hold while the check uses the GPU (`--gpu-lock=PATH`): checks that run side
    /// by side compile at once and take the GPU in turn, their profiled launches too (which also
    /// hold [`profiler_lock`]).
    pub gpu_lock: Option<PathBuf>,
}

/// The file a check writes in its folder once it holds the GPU lock: its time limit runs from then.
pub const GPU_TURN_MARKER: &str = "gpu-turn";

/// The lock beside `gpu_lock` that a profiled process holds from Nsight Compute's set-up to the
/// end of its profiled launches: ncu profiles one process at a time on a GPU (a second one fails
/// with "a driver resource was unavailable"), while checks beside it go on timing in their turns.
pub fn profiler_lock(gpu_lock: &Path) -> PathBuf {
    let mut name = gpu_lock.as_os_str().to_owned();
    name.push(".profiler");
    PathBuf::from(name)
}

const KEYS: [&str; 7] = ["exercise", "file", "name", "result", "only", "gpu-lock", "reference-counters"];

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
            pair("file", self.file.as_os_str()),
            pair("name", OsStr::new(&self.name)),
        ];
        if let Some(result) = &self.result {
            args.push(pair("result", result.as_os_str()));
        }
        args.extend(self.launches.arg());
        if let Some(lock) = &self.gpu_lock {
            args.push(pair("gpu-lock", lock.as_os_str()));
        }
        if let Some(counters) = &self.known_reference {
            let json = serde_json::to_string(counters).expect("counters are plain numbers");
            args.push(pair("reference-counters", OsStr::new(&json)));
        }
        args
    }

    /// Reads the values of `role`'s command back from `args` (what follows the command's name).
    pub fn parse(role: Role, args: &[OsString]) -> Result<ChildCommand, String> {
        let mut values: [Option<OsString>; 7] = Default::default();
        for arg in args {
            let bytes = arg.as_bytes();
            let (key, value) = bytes
                .strip_prefix(b"--")
                .and_then(|rest| rest.iter().position(|&b| b == b'=').map(|at| (&rest[..at], &rest[at + 1..])))
                .ok_or_else(|| format!("{}: expected --KEY=VALUE, got {arg:?}", role.command()))?;
            let slot = KEYS
                .iter()
                .position(|k| k.as_bytes() == key)
                .ok_or_else(|| format!("{}: unknown key in {arg:?} (known: {})", role.command(), KEYS.join(", ")))?;
            if values[slot].replace(OsString::from_vec(value.to_vec())).is_some() {
                return Err(format!("{}: --{} given twice", role.command(), KEYS[slot]));
            }
        }
        let [exercise, file, name, result, only, gpu_lock, reference_counters] = values;
        let gpu_lock = gpu_lock.map(PathBuf::from);
        let launches = match only.as_deref().map(OsStr::as_bytes) {
            None => Launches::Both,
            Some(b"reference") if role == Role::Profile => Launches::Reference,
            Some(b"submission") if role == Role::Profile => Launches::Submission,
            Some(other) => {
                return Err(format!(
                    "{}: --only={} is not known (the profile command takes --only=reference or --only=submission)",
                    role.command(),
                    String::from_utf8_lossy(other)
                ));
            }
        };
        let known_reference = match reference_counters {
            None => None,
            Some(_) if role == Role::Profile => {
                return Err(format!("{}: --reference-counters is the check command's", role.command()));
            }
            Some(json) => Some(
                serde_json::from_slice(json.as_bytes())
                    .map_err(|e| format!("{}: --reference-counters is not counters: {e}", role.command()))?,
            ),
        };
        let text = |value: Option<OsString>, key: &str| {
            value
                .ok_or_else(|| format!("{}: --{key}=... is missing", role.command()))?
                .into_string()
                .map_err(|v| format!("{}: --{key} is not UTF-8: {v:?}", role.command()))
        };
        let exercise = text(exercise, "exercise")?;
        let name = text(name, "name")?;
        let file = file.ok_or_else(|| format!("{}: --file=... is missing", role.command()))?.into();
        let result = result.map(PathBuf::from);
        if role == Role::Check && result.is_none() {
            return Err(format!("{}: --result=... names where the outcome goes", role.command()));
        }
        Ok(ChildCommand { role, exercise, file, name, result, launches, gpu_lock, known_reference })
    }

    /// The profiling command a check starts under Nsight Compute, launching `launches`: the same
    /// file, name and GPU lock (its launches take a turn of their own).
    pub fn profile(&self, launches: Launches) -> ChildCommand {
        ChildCommand { role: Role::Profile, result: None, launches, known_reference: None, ..self.clone() }
    }

    /// This command as a restart of the running program.
    pub fn self_command(&self) -> std::io::Result<SelfCommand> {
        SelfCommand::current(self.args())
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
                file: PathBuf::from("/tmp/x/-rf/submission.cu"),
                name: name.into(),
                result: Some("/tmp/x/result.json".into()),
                launches: Launches::Both,
                gpu_lock: Some("/tmp/grades/.gpu-lock".into()),
                known_reference: None,
            };
            let args = command.args();
            assert_eq!(args[0], "__check-submission");
            assert!(args[1..].iter().all(|a| a.as_bytes().starts_with(b"--")), "{args:?}");
            assert_eq!(ChildCommand::parse(Role::Check, &args[1..]), Ok(command.clone()), "{name:?}");
            let profile = command.profile(Launches::Both);
            assert_eq!(profile.args()[0], "__profile-submission");
            assert_eq!(ChildCommand::parse(Role::Profile, &profile.args()[1..]), Ok(profile.clone()));
            for (launches, arg) in
                [(Launches::Reference, "--only=reference"), (Launches::Submission, "--only=submission")]
            {
                let alone = command.profile(launches);
                assert!(alone.args().iter().any(|a| a == arg));
                assert_eq!(alone.gpu_lock, command.gpu_lock, "the profiled launches take their turn on the same lock");
                assert_eq!(ChildCommand::parse(Role::Profile, &alone.args()[1..]), Ok(alone));
            }
            let counters = SharedCounters {
                load_wavefronts: 64,
                load_instructions: 32,
                store_wavefronts: 32,
                store_instructions: 32,
                matrix_and_async: [Some((16, 4)), None, None],
            };
            let known = ChildCommand { known_reference: Some(counters), ..command.clone() };
            assert_eq!(ChildCommand::parse(Role::Check, &known.args()[1..]), Ok(known.clone()));
            assert_eq!(known.profile(Launches::Submission).known_reference, None, "the profiled side needs none");
        }
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
        let parse = |args: &[&str]| {
            ChildCommand::parse(Role::Check, &args.iter().map(OsString::from).collect::<Vec<_>>()).unwrap_err()
        };
        assert_eq!(parse(&["--exercise", "x"]), "__check-submission: expected --KEY=VALUE, got \"--exercise\"");
        assert_eq!(
            parse(&["--colour=x"]),
            "__check-submission: unknown key in \"--colour=x\" (known: exercise, file, name, result, only, gpu-lock, reference-counters)"
        );
        assert_eq!(parse(&["--name=a", "--name=b"]), "__check-submission: --name given twice");
        assert_eq!(
            parse(&["--exercise=x", "--file=f", "--name=n"]),
            "__check-submission: --result=... names where the outcome goes"
        );
        assert_eq!(parse(&["--file=f", "--name=n"]), "__check-submission: --exercise=... is missing");
        assert!(parse(&["--only=reference"]).contains("--only=reference is not known"), "a check profiles both");
        assert!(parse(&["--reference-counters={}"]).contains("--reference-counters is not counters"));
    }
}
