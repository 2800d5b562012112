//! Running untrusted work in a process of its own: a wall-clock limit after which the whole
//! process group is killed (the checker, Nsight Compute and the program it profiles), and
//! captured output cut at a cap while the rest is drained so the child never blocks on a pipe.

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
    /// `None` when it was killed at the time limit.
    pub status: Option<ExitStatus>,
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

/// Runs `command` in a new process group; kills the group at `limit`.
pub fn run(command: &mut Command, limit: Duration, cap: usize) -> io::Result<Finished> {
    let mut child =
        command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0).spawn()?;
    let group = child.id() as libc::pid_t;
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let readers = [thread::spawn(move || capture(stdout, cap)), thread::spawn(move || capture(stderr, cap))];
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if Instant::now() >= deadline {
            break None;
        }
        thread::sleep(POLL);
    };
    // Also after a normal exit: whatever the child left running in its group must not outlive it.
    // SAFETY: sends a signal to the group this function created; no memory is involved.
    unsafe { libc::killpg(group, libc::SIGKILL) };
    child.wait()?;
    let [stdout, stderr] = readers.map(|reader| reader.join().expect("a reader thread does not panic"));
    Ok(Finished { status, stdout: stdout?, stderr: stderr? })
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
        let finished = run(Command::new("sh").args(["-c", &script]), Duration::from_millis(500), 1024).unwrap();
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
        let finished = run(Command::new("sh").args(["-c", script]), Duration::from_secs(60), 100).unwrap();
        assert_eq!(finished.status.and_then(|s| s.code()), Some(3));
        assert_eq!(finished.stdout.text, "x".repeat(100));
        assert_eq!(finished.stdout.dropped, 1_000_000 - 100);
        assert!(finished.stdout.shown().ends_with("[output cut: 999900 more bytes]"));
        assert_eq!(finished.stderr, Captured { text: "oops\n".into(), dropped: 0 });
    }
}
