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

/// Runs `command` in a new process group; kills the group at `limit`, or once its resident
/// memory passes `memory` bytes.
pub fn run(command: &mut Command, limit: Duration, cap: usize, memory: u64) -> io::Result<Finished> {
    let mut child =
        command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0).spawn()?;
    let group = child.id() as libc::pid_t;
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let readers = [thread::spawn(move || capture(stdout, cap)), thread::spawn(move || capture(stderr, cap))];
    let deadline = Instant::now() + limit;
    let (mut memory_exceeded, mut next_memory_read) = (None, Instant::now());
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
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
            run(Command::new("sh").args(["-c", &script]), Duration::from_millis(500), 1024, u64::MAX).unwrap();
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
        let finished = run(Command::new("sh").args(["-c", script]), Duration::from_secs(60), 100, u64::MAX).unwrap();
        assert_eq!(finished.status.and_then(|s| s.code()), Some(3));
        assert_eq!(finished.stdout.text, "x".repeat(100));
        assert_eq!(finished.stdout.dropped, 1_000_000 - 100);
        assert!(finished.stdout.shown().ends_with("[output cut: 999900 more bytes]"));
        assert_eq!(finished.stderr, Captured { text: "oops\n".into(), dropped: 0 });
    }

    #[test]
    fn a_group_that_takes_too_much_memory_is_killed_and_the_amount_told() {
        // A grandchild holds 400 MiB; the limit is 200 MiB.
        let script = "perl -e '$x = \"a\" x (400 * 1024 * 1024); sleep 60' & wait";
        let start = Instant::now();
        let finished = run(Command::new("sh").args(["-c", script]), Duration::from_secs(60), 1024, 200 << 20).unwrap();
        assert!(finished.status.is_none(), "killed");
        assert!(finished.memory_exceeded.is_some_and(|bytes| bytes > 200 << 20), "{:?}", finished.memory_exceeded);
        assert!(start.elapsed() < Duration::from_secs(30), "killed well before the time limit");
    }
}
