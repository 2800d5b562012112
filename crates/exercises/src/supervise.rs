//! Running untrusted work in a process of its own: a wall-clock limit and a memory limit (the
//! resident memory of the whole group, read from `/proc`: an address-space limit would break
//! CUDA's large virtual reservations), past either of which the whole process group is killed
//! (the checker, Nsight Compute and the program it profiles), and captured output cut at a cap
//! while the rest is drained so the child never blocks on a pipe.

use std::{
    io::{self, Read},
    os::unix::process::CommandExt,
    process::{Command, ExitStatus, Stdio},
    thread,
    time::{Duration, Instant},
};

/// What a supervised process left behind.
#[derive(Debug)]
pub struct Finished {
    /// `None` when it was killed at the time limit or for its memory.
    pub status: Option<ExitStatus>,
    /// The group's resident bytes when it was killed for passing the memory limit.
    pub memory_exceeded: Option<u64>,
    pub stdout: Captured,
    pub stderr: Captured,
}

/// The first `cap` bytes of a stream, and how many more were dropped.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Captured {
    pub text: String,
    pub dropped: u64,
}

impl Captured {
    /// The text, with a last line saying how much was cut.
    pub fn shown(&self) -> String {
        match self.dropped {
            0 => self.text.clone(),
            n => format!("{}\n[output cut: {n} more bytes]", self.text),
        }
    }
}

const POLL: Duration = Duration::from_millis(20);
/// How often the group's memory is read (a walk over `/proc`).
const MEMORY_POLL: Duration = Duration::from_millis(250);

/// Resident bytes of every process in group `group`, from `/proc`.
pub fn group_resident_bytes(group: libc::pid_t) -> u64 {
    // SAFETY: sysconf only reads a constant of the system.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    let Ok(entries) = std::fs::read_dir("/proc") else { return 0 };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())))
        .filter_map(|entry| {
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // After the command's `)`: state, ppid, pgrp.
            let pgrp: libc::pid_t = stat.rsplit_once(')')?.1.split_whitespace().nth(2)?.parse().ok()?;
            if pgrp != group {
                return None;
            }
            let statm = std::fs::read_to_string(entry.path().join("statm")).ok()?;
            statm.split_whitespace().nth(1)?.parse::<u64>().ok().map(|pages| pages * page)
        })
        .sum()
}

/// When the time limit starts: at once, or once the child has waited its turn for a shared
/// resource (the GPU) and written `marker`; it may wait `wait` at most.
#[derive(Clone, Debug, Default)]
pub struct Turn {
    pub marker: Option<std::path::PathBuf>,
    pub wait: Duration,
}

/// Runs `command` in a new process group; kills the group at `limit` (counted from its turn, see
/// [`Turn`]), or once its resident memory passes `memory` bytes.
pub fn run(command: &mut Command, limit: Duration, cap: usize, memory: u64, turn: &Turn) -> io::Result<Finished> {
    let mut child =
        command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0).spawn()?;
    let group = child.id() as libc::pid_t;
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let readers = [thread::spawn(move || capture(stdout, cap)), thread::spawn(move || capture(stderr, cap))];
    let start = Instant::now();
    let mut deadline = start + limit + if turn.marker.is_some() { turn.wait } else { Duration::ZERO };
    let mut turn_seen = turn.marker.is_none();
    let (mut memory_exceeded, mut next_memory_read) = (None, Instant::now());
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if !turn_seen && turn.marker.as_ref().is_some_and(|m| m.exists()) {
            turn_seen = true;
            deadline = Instant::now() + limit;
        }
        if Instant::now() >= deadline {
            break None;
        }
        if Instant::now() >= next_memory_read {
            let resident = group_resident_bytes(group);
            if resident > memory {
                memory_exceeded = Some(resident);
                break None;
            }
            next_memory_read = Instant::now() + MEMORY_POLL;
        }
        thread::sleep(POLL);
    };
    // Also after a normal exit: whatever the child left running in its group must not outlive it.
    // SAFETY: sends a signal to the group this function created; no memory is involved.
    unsafe { libc::killpg(group, libc::SIGKILL) };
    child.wait()?;
    let [stdout, stderr] = readers.map(|reader| reader.join().expect("a reader thread does not panic"));
    Ok(Finished { status, memory_exceeded, stdout: stdout?, stderr: stderr? })
}

fn capture(mut stream: impl Read, cap: usize) -> io::Result<Captured> {
    let (mut kept, mut dropped, mut buffer) = (Vec::new(), 0u64, [0u8; 8192]);
    loop {
        let n = stream.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        let keep = n.min(cap - kept.len());
        kept.extend_from_slice(&buffer[..keep]);
        dropped += (n - keep) as u64;
    }
    Ok(Captured { text: String::from_utf8_lossy(&kept).into_owned(), dropped })
}

/// In a supervised child: waits for the exclusive lock on `lock` (held until the returned file is
/// dropped, or the process ends), then writes `marker`, which starts the child's time limit (see
/// [`Turn`]).
pub fn take_turn(lock: &std::path::Path, marker: &std::path::Path) -> io::Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(lock)?;
    // SAFETY: flock on a file descriptor this function owns; blocks until the lock is free.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(io::Error::last_os_error());
    }
    std::fs::write(marker, b"")?;
    Ok(file)
}

/// How a check shares its GPU with the checks beside it.
pub trait GpuTurn {
    /// Waits for this process's turn on the GPU.
    fn take(&self) -> Result<(), String>;
    /// Gives the GPU up.
    fn end(&self);
}

/// A supervised child's turns on the GPU through a lock file shared by the checks beside it
/// (none: every moment is its turn). A turn is held until [`GpuTurn::end`] or the process ends.
pub struct LockTurn {
    lock: Option<std::path::PathBuf>,
    marker: std::path::PathBuf,
    held: std::sync::Mutex<Option<std::fs::File>>,
}

impl LockTurn {
    /// Turns through `lock`, each marked by writing `marker` (see [`take_turn`]).
    pub fn new(lock: Option<std::path::PathBuf>, marker: std::path::PathBuf) -> LockTurn {
        LockTurn { lock, marker, held: std::sync::Mutex::new(None) }
    }

    fn hold(&self, file: Option<std::fs::File>) {
        *self.held.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = file;
    }
}

impl GpuTurn for LockTurn {
    fn take(&self) -> Result<(), String> {
        if let Some(lock) = &self.lock {
            self.hold(Some(take_turn(lock, &self.marker).map_err(|e| e.to_string())?));
        }
        Ok(())
    }

    fn end(&self) {
        self.hold(None);
    }
}

/// In a supervised child: if the supervisor goes away (killed, interrupted), kill this process
/// group too, so that no check goes on running unseen. Does nothing unless this process leads
/// its own group, as [`run`] makes it.
pub fn end_with_supervisor() {
    // SAFETY: getpgrp and getpid only read this process's ids.
    if unsafe { libc::getpgrp() != libc::getpid() } {
        return;
    }
    let supervisor = std::os::unix::process::parent_id();
    thread::spawn(move || {
        while std::os::unix::process::parent_id() == supervisor {
            thread::sleep(Duration::from_millis(200));
        }
        // SAFETY: signals this process's own group.
        unsafe { libc::killpg(0, libc::SIGKILL) };
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_child_and_what_it_started_are_killed_at_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("grandchild");
        let script = format!("sleep 600 & echo $! > {}; wait", pid_file.display());
        let start = Instant::now();
        let finished =
            run(Command::new("sh").args(["-c", &script]), Duration::from_millis(500), 1024, u64::MAX, &Turn::default())
                .unwrap();
        assert!(finished.status.is_none(), "killed, not exited");
        assert!(start.elapsed() < Duration::from_secs(30), "the pipes closed once the group was killed");
        let grandchild = std::fs::read_to_string(&pid_file).unwrap();
        let stat = std::path::Path::new("/proc").join(grandchild.trim()).join("stat");
        // SIGKILL is sent; the kernel may take a moment to end the process.
        let gone = || std::fs::read_to_string(&stat).map_or(true, |state| state.contains(") Z "));
        let waited = Instant::now();
        while !gone() && waited.elapsed() < Duration::from_secs(10) {
            thread::sleep(POLL);
        }
        assert!(gone(), "the grandchild is still running: {:?}", std::fs::read_to_string(&stat));
    }

    #[test]
    fn output_is_capped_and_drained_and_the_status_kept() {
        let script = "head -c 1000000 /dev/zero | tr '\\0' x; echo oops >&2; exit 3";
        let finished =
            run(Command::new("sh").args(["-c", script]), Duration::from_secs(60), 100, u64::MAX, &Turn::default())
                .unwrap();
        assert_eq!(finished.status.and_then(|s| s.code()), Some(3));
        assert_eq!(finished.stdout.text, "x".repeat(100));
        assert_eq!(finished.stdout.dropped, 1_000_000 - 100);
        assert!(finished.stdout.shown().ends_with("[output cut: 999900 more bytes]"));
        assert_eq!(finished.stderr, Captured { text: "oops\n".into(), dropped: 0 });
    }

    #[test]
    fn the_time_limit_runs_from_the_turn_when_there_is_one() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("turn");
        // Waits 1.5 s for its turn, then works 0.5 s: within a 1 s limit counted from the turn.
        let script = format!("sleep 1.5; touch {}; sleep 0.5", marker.display());
        let turn = Turn { marker: Some(marker.clone()), wait: Duration::from_secs(30) };
        let finished =
            run(Command::new("sh").args(["-c", &script]), Duration::from_secs(1), 1024, u64::MAX, &turn).unwrap();
        assert!(finished.status.is_some_and(|s| s.success()), "{finished:?}");
        // Never given its turn: killed after the wait and the limit.
        let turn = Turn { marker: Some(dir.path().join("never")), wait: Duration::from_millis(500) };
        let start = Instant::now();
        let finished =
            run(Command::new("sh").args(["-c", "sleep 600"]), Duration::from_millis(500), 1024, u64::MAX, &turn)
                .unwrap();
        assert!(finished.status.is_none() && start.elapsed() < Duration::from_secs(30));
    }

    #[test]
    fn turns_are_taken_one_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("gpu-lock");
        let first = take_turn(&lock, &dir.path().join("a")).unwrap();
        let (lock2, marker) = (lock.clone(), dir.path().join("b"));
        let waiting = thread::spawn(move || take_turn(&lock2, &marker).map(drop));
        thread::sleep(Duration::from_millis(300));
        assert!(!dir.path().join("b").exists(), "the second waits while the first holds the turn");
        drop(first);
        waiting.join().unwrap().unwrap();
        assert!(dir.path().join("b").exists());
    }

    #[test]
    fn a_lock_turn_is_given_up_at_its_end_and_taken_again_by_another() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("gpu-lock");
        let check = LockTurn::new(Some(lock.clone()), dir.path().join("check"));
        check.take().unwrap();
        let profiled = std::sync::Arc::new(LockTurn::new(Some(lock), dir.path().join("profiled")));
        let waiting = thread::spawn({
            let profiled = profiled.clone();
            move || profiled.take()
        });
        thread::sleep(Duration::from_millis(300));
        assert!(!dir.path().join("profiled").exists(), "the profiled child waits while the check holds the GPU");
        check.end();
        waiting.join().unwrap().unwrap();
        assert!(dir.path().join("profiled").exists());
        let alone = LockTurn::new(None, dir.path().join("never"));
        alone.take().unwrap();
        assert!(!dir.path().join("never").exists(), "without a lock every moment is its turn, unmarked");
    }

    #[test]
    fn a_group_that_takes_too_much_memory_is_killed_and_the_amount_told() {
        // A grandchild holds 400 MiB; the limit is 200 MiB.
        let script = "perl -e '$x = \"a\" x (400 * 1024 * 1024); sleep 60' & wait";
        let start = Instant::now();
        let finished =
            run(Command::new("sh").args(["-c", script]), Duration::from_secs(60), 1024, 200 << 20, &Turn::default())
                .unwrap();
        assert!(finished.status.is_none(), "killed");
        assert!(finished.memory_exceeded.is_some_and(|bytes| bytes > 200 << 20), "{:?}", finished.memory_exceeded);
        assert!(start.elapsed() < Duration::from_secs(30), "killed well before the time limit");
    }
}
