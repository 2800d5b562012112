//! The check process's sandbox: before it reads the submission, it restricts itself (and so
//! Nsight Compute and the profiled program it starts) with Linux Landlock to reading what CUDA,
//! NVRTC and Nsight Compute need (system libraries, the CUDA installation, `/proc`, `/sys`,
//! the course's own folders) and to writing only in its own work folder, the GPU's device files
//! and `/dev/shm`. Everything else on the machine (home folders, `/etc/passwd`, other
//! submissions) cannot be opened, whatever the compiled code or the compiler tries.
//!
//! Where the kernel has no Landlock, the check runs unconfined and [`Status`] says so.
//! `BCM_SANDBOX=off` turns it off (to find out whether it is what stops a check on a new machine);
//! `BCM_SANDBOX_READ` and `BCM_SANDBOX_WRITE` add folders (`:`-separated) to its allowance.

use std::{
    env, fmt,
    path::{Path, PathBuf},
};

use landlock::{
    ABI, Access, AccessFs, LandlockStatus, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, path_beneath_rules,
};

/// `off` turns the sandbox off.
pub const SANDBOX_VAR: &str = "BCM_SANDBOX";
/// More folders the sandbox may read, separated by `:` (a CUDA installation in an odd place).
pub const SANDBOX_READ_VAR: &str = "BCM_SANDBOX_READ";
/// More folders or files the sandbox may write, separated by `:`.
pub const SANDBOX_WRITE_VAR: &str = "BCM_SANDBOX_WRITE";
/// The lock Nsight Compute takes so that two profiles do not run at once, where it already exists
/// (ncu puts it in the temporary folder, which for a check is its own folder).
const NCU_LOCK: &str = "/tmp/nsight-compute-lock";

/// Folders too broad to allow as a whole, however a variable names them.
const BROAD: [&str; 6] = ["/", "/etc", "/tmp", "/home", "/root", "/var"];

/// The newest Landlock ABI asked for; older kernels get what they support.
const WANTED: ABI = ABI::V5;

/// What a process may open once restricted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Allowance {
    /// Read (and execute) beneath these.
    pub read: Vec<PathBuf>,
    /// Read and write beneath these.
    pub read_write: Vec<PathBuf>,
}

impl Allowance {
    /// What a check whose files are in `work` needs.
    pub fn for_check(work: &Path) -> Allowance {
        let mut read: Vec<PathBuf> = [
            "/usr",
            "/lib",
            "/lib32",
            "/lib64",
            "/bin",
            "/sbin",
            "/opt",
            "/sys",
            "/etc/ld.so.cache",
            "/etc/ld.so.conf",
            "/etc/ld.so.conf.d",
            "/etc/alternatives",
            "/etc/nvidia",
            "/etc/OpenCL",
            "/etc/localtime",
            "/etc/nsswitch.conf",
            "/dev/null",
            "/dev/zero",
            "/dev/urandom",
            "/dev/random",
        ]
        .map(PathBuf::from)
        .into();
        // The program's own folder (a dist folder: kernels/, exercises/) and the course's folders.
        if let Some(dir) = env::current_exe().ok().and_then(|exe| exe.parent().map(Path::to_path_buf)) {
            read.push(dir);
        }
        read.extend(cuda_kernels::source::course_dirs("kernels", cuda_kernels::source::KERNELS_DIR_VAR));
        read.extend(cuda_kernels::source::course_dirs("exercises", crate::manifest::EXERCISES_DIR_VAR));
        for var in ["CUDA_HOME", "CUDA_PATH"] {
            read.extend(env::var_os(var).map(PathBuf::from));
        }
        let listed = |var: &str| env::var_os(var).map(|v| env::split_paths(&v).collect::<Vec<_>>()).unwrap_or_default();
        read.extend(listed("LD_LIBRARY_PATH"));
        read.extend(listed(SANDBOX_READ_VAR));
        // The installations whose programs the check runs (ncu) or whose tools it may ask for.
        for dir in listed("PATH") {
            if ["ncu", "nvcc"].iter().any(|tool| dir.join(tool).is_file()) {
                read.extend(dir.parent().map(Path::to_path_buf));
            }
        }
        // Never a folder above what it is for: the root, /etc, /tmp or the home folders.
        read.retain(|path| path.is_absolute() && !BROAD.iter().any(|broad| path == Path::new(broad)));
        if let Some(ncu) = env::var_os(cuda_kernels::ncu::NCU_VAR) {
            // ncu's installation: its folder's parent holds its libraries.
            read.extend(Path::new(&ncu).ancestors().nth(2).map(Path::to_path_buf));
        }
        // The CUDA driver writes under /proc when it opens the GPU: on an H100 (driver 580) a check
        // without that right got CUDA_ERROR_OPERATING_SYSTEM; granting writes to /proc alone made
        // it pass, and granting /dev, /sys, /run or /usr did not. A kernel cannot reach /proc; the
        // host code that can is the course's.
        let mut read_write =
            vec![work.to_path_buf(), PathBuf::from("/dev/shm"), PathBuf::from(NCU_LOCK), PathBuf::from("/proc")];
        read_write.extend(listed(SANDBOX_WRITE_VAR));
        if let Ok(devices) = std::fs::read_dir("/dev") {
            read_write.extend(
                devices
                    .filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("nvidia"))),
            );
        }
        if let Some(home) = env::var_os("HOME") {
            read_write.push(Path::new(&home).join(".config/NVIDIA Corporation"));
            read_write.push(Path::new(&home).join(".nsight-compute"));
            // CUDA's cache of kernels compiled for the device, shared by every check.
            read_write.push(Path::new(&home).join(".nv"));
        }
        read_write.extend(env::var_os("CUDA_CACHE_PATH").map(PathBuf::from));
        read_write.retain(|path| path.is_absolute() && !BROAD.iter().any(|broad| path == Path::new(broad)));
        Allowance { read, read_write }
    }
}

/// How far the sandbox holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// Every restriction asked for is enforced.
    Enforced,
    /// Enforced as far as this kernel's Landlock goes (an older ABI).
    Partial,
    /// Not enforced: why (no Landlock in this kernel, turned off).
    Unconfined(String),
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Status::Enforced => {
                write!(f, "each check runs in a Landlock sandbox (files outside its allowance cannot be opened)")
            }
            Status::Partial => {
                write!(f, "each check runs in a Landlock sandbox, as far as this kernel's Landlock version enforces it")
            }
            Status::Unconfined(why) => write!(f, "checks run without a sandbox: {why}"),
        }
    }
}

/// Restricts the calling thread, and every process it starts from now on, to `allowance`. Call
/// it before the process starts any thread: other threads keep their access.
/// `BCM_SANDBOX=off` leaves it unconfined.
pub fn restrict(allowance: &Allowance) -> Result<Status, String> {
    if env::var(SANDBOX_VAR).is_ok_and(|v| v == "off") {
        return Ok(Status::Unconfined(format!("{SANDBOX_VAR}=off")));
    }
    enforce(allowance)
}

/// Restricts the calling thread to `allowance` with Landlock, whatever `BCM_SANDBOX` says.
pub fn enforce(allowance: &Allowance) -> Result<Status, String> {
    let error = |e: landlock::RulesetError| format!("cannot set up the Landlock sandbox: {e}");
    let status = Ruleset::default()
        .handle_access(AccessFs::from_all(WANTED))
        .map_err(error)?
        .create()
        .map_err(error)?
        .add_rules(path_beneath_rules(&allowance.read, AccessFs::from_read(WANTED)))
        .map_err(error)?
        .add_rules(path_beneath_rules(&allowance.read_write, AccessFs::from_all(WANTED)))
        .map_err(error)?
        .restrict_self()
        .map_err(error)?;
    Ok(match status.ruleset {
        RulesetStatus::FullyEnforced => Status::Enforced,
        RulesetStatus::PartiallyEnforced => Status::Partial,
        RulesetStatus::NotEnforced => Status::Unconfined(match status.landlock {
            LandlockStatus::NotEnabled => {
                "this Linux kernel has Landlock but it is not enabled (boot with lsm=...,landlock)".into()
            }
            LandlockStatus::NotImplemented => {
                "this Linux kernel has no Landlock (Linux 5.13 or later, built with it, is needed)".into()
            }
            _ => "Landlock enforces none of the restrictions on this kernel".into(),
        }),
    })
}

/// What [`restrict`] would give here, found in a thread of its own that restricts itself and ends.
pub fn probe() -> Status {
    std::thread::spawn(|| restrict(&Allowance::default()))
        .join()
        .unwrap_or_else(|_| Err("the probe thread panicked".into()))
        .unwrap_or_else(Status::Unconfined)
}

#[cfg(test)]
mod tests {
    use std::{fs, io::ErrorKind};

    use super::*;

    #[test]
    fn a_sandboxed_thread_cannot_read_a_file_outside_its_allowance() {
        let allowed = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::write(allowed.path().join("submission.cu"), "mine").unwrap();
        fs::write(outside.path().join("secret"), "not yours").unwrap();
        let (allowed_path, secret) = (allowed.path().to_path_buf(), outside.path().join("secret"));
        let (status, own, other, written) = std::thread::spawn(move || {
            let allowance = Allowance { read: vec![], read_write: vec![allowed_path.clone()] };
            let status = enforce(&allowance).unwrap();
            let own = fs::read_to_string(allowed_path.join("submission.cu")).map_err(|e| e.kind());
            let other = fs::read_to_string(&secret).map_err(|e| e.kind());
            let written = fs::write(allowed_path.join("result.json"), "{}").map_err(|e| e.kind());
            (status, own, other, written)
        })
        .join()
        .unwrap();
        assert_eq!(own, Ok("mine".to_owned()), "its own folder stays readable");
        assert_eq!(written, Ok(()), "and writable");
        match status {
            Status::Enforced | Status::Partial => {
                assert_eq!(other, Err(ErrorKind::PermissionDenied), "a file outside the allowance")
            }
            Status::Unconfined(why) => {
                eprintln!("Landlock is not available here ({why}): the read outside the allowance was not stopped");
                assert!(!why.is_empty());
                assert_eq!(other, Ok("not yours".to_owned()), "unconfined, as the status says");
            }
        }
        assert_eq!(
            fs::read_to_string(outside.path().join("secret")).unwrap(),
            "not yours",
            "this thread is not restricted"
        );
    }

    #[test]
    fn the_allowance_of_a_check_holds_its_folder_the_gpu_and_libraries_and_not_etc() {
        let allowance = Allowance::for_check(Path::new("/tmp/check-1"));
        assert!(allowance.read_write.contains(&PathBuf::from("/tmp/check-1")));
        assert!(allowance.read.contains(&PathBuf::from("/usr")));
        assert!(allowance.read_write.contains(&PathBuf::from("/proc")), "the CUDA driver writes under /proc");
        for path in allowance.read.iter().chain(&allowance.read_write) {
            assert!(path != Path::new("/") && path != Path::new("/etc") && path != Path::new("/tmp"), "{path:?}");
            assert!(!Path::new("/etc/passwd").starts_with(path), "{path:?} would let /etc/passwd be read");
        }
    }
}
