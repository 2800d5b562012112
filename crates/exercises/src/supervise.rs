//! Running untrusted work in a process of its own: a wall-clock limit and a memory limit (the
//! resident memory of the whole group, read from `/proc`: an address-space limit would break
//! CUDA's large virtual reservations), past either of which the whole process group is killed
//! (the checker, Nsight Compute and the program it profiles), and captured output cut at a cap
//! while the rest is drained so the child never blocks on a pipe. A process runs once ([`run`])
//! or serves request after request ([`Server`]), each request under the limits on its own.

use std::{
    io::{self, Read, Write},
    os::unix::process::CommandExt,
    process::{Child, ChildStdin, Command, ExitStatus, Stdio},
    sync::{Arc, Mutex},
    thread::{self, JoinHandle},
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

/// The limits a process, or one request to it, runs under.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Wall-clock time, counted from the turn (see [`Turn`]).
    pub time: Duration,
    /// Resident bytes of the whole process group.
    pub memory: u64,
    pub turn: Turn,
}

/// Runs `command` in a new process group; kills the group at the time limit, or once its
/// resident memory passes the memory limit. Output past `cap` bytes per stream is dropped.
pub fn run(command: &mut Command, limits: &Limits, cap: usize) -> io::Result<Finished> {
    let mut process = Process::start(command.stdin(Stdio::null()), cap)?;
    let ending = process.watch(limits, &|| false)?;
    process.end(ending)
}

/// A process in a group of its own, its output captured.
struct Process {
    child: Child,
    /// Captured stdout and stderr, from the last [`Process::take_output`] on.
    output: [Arc<Mutex<Kept>>; 2],
    readers: Vec<JoinHandle<io::Result<()>>>,
}

/// How a watch ended.
enum Ending {
    /// The process answered (the watch's test held).
    Answered,
    /// It exited (not yet reaped).
    Exited,
    /// Killed at the time limit, or for its memory (its resident bytes).
    Stopped { memory_exceeded: Option<u64> },
}

impl Process {
    fn start(command: &mut Command, cap: usize) -> io::Result<Process> {
        let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0).spawn()?;
        let output = [(); 2].map(|()| Arc::new(Mutex::new(Kept::default())));
        let streams: [Box<dyn Read + Send>; 2] =
            [Box::new(child.stdout.take().expect("piped")), Box::new(child.stderr.take().expect("piped"))];
        let readers = streams
            .into_iter()
            .zip(&output)
            .map(|(stream, into)| {
                let into = into.clone();
                thread::spawn(move || capture(stream, cap, &into))
            })
            .collect();
        Ok(Process { child, output, readers })
    }

    /// Waits until `answered()` holds, the process exits, or a limit is passed (then the group
    /// is killed).
    fn watch(&mut self, limits: &Limits, answered: &dyn Fn() -> bool) -> io::Result<Ending> {
        let group = self.child.id() as libc::pid_t;
        let turn = &limits.turn;
        let start = Instant::now();
        let mut deadline = start + limits.time + if turn.marker.is_some() { turn.wait } else { Duration::ZERO };
        let mut turn_seen = turn.marker.is_none();
        let mut next_memory_read = Instant::now();
        loop {
            if answered() {
                return Ok(Ending::Answered);
            }
            if self.exited()? {
                return Ok(Ending::Exited);
            }
            if !turn_seen && turn.marker.as_ref().is_some_and(|m| m.exists()) {
                turn_seen = true;
                deadline = Instant::now() + limits.time;
            }
            if Instant::now() >= deadline {
                return Ok(Ending::Stopped { memory_exceeded: None });
            }
            if Instant::now() >= next_memory_read {
                let resident = group_resident_bytes(group);
                if resident > limits.memory {
                    return Ok(Ending::Stopped { memory_exceeded: Some(resident) });
                }
                next_memory_read = Instant::now() + MEMORY_POLL;
            }
            thread::sleep(POLL);
        }
    }

    /// Whether the child has exited, without reaping it: until [`Process::end`] has killed its
    /// group and reaped it, the group's id cannot be given to another process.
    fn exited(&self) -> io::Result<bool> {
        // SAFETY: an all-zero `siginfo_t` is valid; waitid writes only into it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let (id, flags) = (self.child.id() as libc::id_t, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT);
        // SAFETY: waits on this process's own child, into `info`; WNOWAIT leaves it unreaped.
        if unsafe { libc::waitid(libc::P_PID, id, &mut info, flags) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `si_pid` is the child's id once it has exited, 0 while it runs (WNOHANG).
        Ok(unsafe { info.si_pid() } != 0)
    }

    /// What was captured since the last call.
    fn take_output(&self) -> [Captured; 2] {
        self.output.each_ref().map(|shared| {
            let kept = std::mem::take(&mut *shared.lock().unwrap_or_else(|poisoned| poisoned.into_inner()));
            Captured { text: String::from_utf8_lossy(&kept.bytes).into_owned(), dropped: kept.dropped }
        })
    }

    /// Kills the group (also after a normal exit: whatever the child left running in its group
    /// must not outlive it), reaps the child, and drains its output.
    fn end(&mut self, ending: Ending) -> io::Result<Finished> {
        // SAFETY: sends a signal to the group this process leads; its leader is not yet reaped,
        // so the group's id cannot have been given to another.
        unsafe { libc::killpg(self.child.id() as libc::pid_t, libc::SIGKILL) };
        let reaped = self.child.wait();
        let read: Vec<io::Result<()>> =
            std::mem::take(&mut self.readers).into_iter().map(|r| r.join().expect("a reader does not panic")).collect();
        let drained: io::Result<()> = read.into_iter().collect();
        let [stdout, stderr] = self.take_output();
        let status = match ending {
            Ending::Stopped { .. } => None,
            Ending::Exited | Ending::Answered => Some(reaped?),
        };
        let memory_exceeded = match ending {
            Ending::Stopped { memory_exceeded } => memory_exceeded,
            _ => None,
        };
        drained?;
        Ok(Finished { status, memory_exceeded, stdout, stderr })
    }
}

/// A stream's bytes as they come: the first `cap`, and a count of the rest.
#[derive(Default)]
struct Kept {
    bytes: Vec<u8>,
    dropped: u64,
}

/// Appends what `stream` gives to `into`, up to `cap` bytes kept, the rest counted.
fn capture(mut stream: impl Read, cap: usize, into: &Mutex<Kept>) -> io::Result<()> {
    let mut buffer = [0u8; 8192];
    loop {
        let n = stream.read(&mut buffer)?;
        if n == 0 {
            return Ok(());
        }
        let mut kept = into.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let keep = n.min(cap.saturating_sub(kept.bytes.len()));
        kept.bytes.extend_from_slice(&buffer[..keep]);
        kept.dropped += (n - keep) as u64;
    }
}

/// A process that serves requests one at a time: each is a line on its standard input, and it
/// answers in a way the caller tests (a file it writes). Each request runs under its own limits;
/// a process that passes one, or exits, is killed and gone. Starting once and serving many
/// spares each request the process's set-up (for a check, CUDA's).
pub struct Server {
    process: Process,
    stdin: ChildStdin,
}

/// How a request to a [`Server`] ended.
#[derive(Debug)]
pub enum Served {
    /// It answered and goes on serving; what it printed meanwhile.
    Answered { stdout: Captured, stderr: Captured },
    /// It exited, or was killed at a limit, before answering: the server is gone.
    Ended(Finished),
}

impl Server {
    /// Starts `command` in a new process group, its standard input the request channel.
    pub fn start(command: &mut Command, cap: usize) -> io::Result<Server> {
        let mut process = Process::start(command.stdin(Stdio::piped()), cap)?;
        let stdin = process.child.stdin.take().expect("piped");
        Ok(Server { process, stdin })
    }

    /// Whether it is still running (it may end itself after a request, or be killed).
    pub fn running(&self) -> bool {
        !self.process.readers.is_empty() && matches!(self.process.exited(), Ok(false))
    }

    /// Sends `request` (one line) and waits until `answered()` holds, or the server ends or passes
    /// a limit of `limits`, counted from now.
    pub fn serve(&mut self, request: &str, limits: &Limits, answered: &dyn Fn() -> bool) -> io::Result<Served> {
        debug_assert!(!request.contains('\n'), "one line");
        self.process.take_output();
        // A server that has ended cannot read it: the watch then finds it exited.
        let _ = writeln!(self.stdin, "{request}").and_then(|()| self.stdin.flush());
        Ok(match self.process.watch(limits, answered)? {
            Ending::Answered => {
                let [stdout, stderr] = self.process.take_output();
                Served::Answered { stdout, stderr }
            }
            ending => Served::Ended(self.process.end(ending)?),
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if !self.process.readers.is_empty() {
            // Nothing is left to report: the server's last answer was read.
            let _ = self.process.end(Ending::Answered);
        }
    }
}

/// In a supervised child: waits for the exclusive lock on `lock` (held until the returned file is
/// dropped, or the process ends), then writes `marker`, which starts the child's time limit (see
/// [`Turn`]). The lock exists (`host_locks`), opened for reading: another user's lock serves too.
pub fn take_turn(lock: &std::path::Path, marker: &std::path::Path) -> io::Result<std::fs::File> {
    let file = std::fs::File::open(lock)?;
    lock_exclusively(&file, true)?;
    std::fs::write(marker, b"")?;
    Ok(file)
}

/// Takes the exclusive `flock` on `file`, held until it is closed: waiting for it if `wait`, else
/// at once or not at all (`EWOULDBLOCK` when another holds it).
pub fn lock_exclusively(file: &std::fs::File, wait: bool) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let operation = if wait { libc::LOCK_EX } else { libc::LOCK_EX | libc::LOCK_NB };
    // SAFETY: flock on a file descriptor that `file` keeps open for the call.
    match unsafe { libc::flock(file.as_raw_fd(), operation) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
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

    fn limits(time: Duration, memory: u64, turn: Turn) -> Limits {
        Limits { time, memory, turn }
    }

    /// A server that answers each request line by writing its process id to a file in `dir` named
    /// by the line; `sleep`, `die` and `big` hang, crash and grow, and `last` ends it.
    fn echo_server(dir: &std::path::Path) -> Server {
        let script = format!(
            // (A pause after the line on stderr: it is read by a thread of its own, which must have
            // it before the answer is seen.)
            "while read -r line; do echo \"working on $line\" >&2; sleep 0.1; case $line in \
             sleep) sleep 600;; die) kill -SEGV $$;; big) perl -e '$x = \"a\" x (400 * 1024 * 1024); sleep 60';; \
             last) touch {dir}/last; exit 0;; esac; echo $$ > {dir}/$line; done",
            dir = dir.display()
        );
        Server::start(Command::new("sh").args(["-c", &script]), 1024).unwrap()
    }

    #[test]
    fn a_server_answers_request_after_request_in_one_process_each_under_its_own_limits() {
        let dir = tempfile::tempdir().unwrap();
        let answered = |name: &'static str| {
            let file = dir.path().join(name);
            move || file.exists()
        };
        let within = limits(Duration::from_secs(60), 200 << 20, Turn::default());
        let mut server = echo_server(dir.path());
        let mut pids = Vec::new();
        for name in ["a", "b", "c"] {
            let Served::Answered { stderr, .. } = server.serve(name, &within, &answered(name)).unwrap() else {
                panic!("{name} not answered")
            };
            assert_eq!(stderr.text, format!("working on {name}\n"), "each request's own output");
            pids.push(std::fs::read_to_string(dir.path().join(name)).unwrap());
        }
        assert!(pids.iter().all(|pid| *pid == pids[0]), "one process served all three: {pids:?}");
        assert!(server.running());
        // Past the time limit of its request: killed, and gone.
        let brief = limits(Duration::from_millis(300), 200 << 20, Turn::default());
        let Served::Ended(finished) = server.serve("sleep", &brief, &answered("never")).unwrap() else { panic!() };
        assert!(finished.status.is_none() && finished.memory_exceeded.is_none(), "{finished:?}");
        assert!(!server.running());
        let mut server = echo_server(dir.path());
        let Served::Ended(finished) = server.serve("die", &within, &answered("never")).unwrap() else { panic!() };
        assert!(finished.status.is_some_and(|s| !s.success()), "{finished:?}");
        assert_eq!(finished.stderr.text, "working on die\n");
        let mut server = echo_server(dir.path());
        let Served::Ended(finished) = server.serve("big", &within, &answered("never")).unwrap() else { panic!() };
        assert!(finished.memory_exceeded.is_some_and(|bytes| bytes > 200 << 20), "{finished:?}");
        let mut server = echo_server(dir.path());
        let answered_last = answered("last");
        assert!(matches!(server.serve("last", &within, &answered_last).unwrap(), Served::Answered { .. }));
        let waited = Instant::now();
        while server.running() && waited.elapsed() < Duration::from_secs(10) {
            thread::sleep(POLL);
        }
        assert!(!server.running(), "it ended itself after its last answer");
    }

    #[test]
    fn an_endless_child_and_what_it_started_are_killed_at_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("grandchild");
        let script = format!("sleep 600 & echo $! > {}; wait", pid_file.display());
        let start = Instant::now();
        let finished = run(
            Command::new("sh").args(["-c", &script]),
            &limits(Duration::from_millis(500), u64::MAX, Turn::default()),
            1024,
        )
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
        let finished = run(
            Command::new("sh").args(["-c", script]),
            &limits(Duration::from_secs(60), u64::MAX, Turn::default()),
            100,
        )
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
        let finished = run(
            Command::new("sh").args(["-c", &script]),
            &limits(Duration::from_secs(1), u64::MAX, turn.clone()),
            1024,
        )
        .unwrap();
        assert!(finished.status.is_some_and(|s| s.success()), "{finished:?}");
        // Never given its turn: killed after the wait and the limit.
        let turn = Turn { marker: Some(dir.path().join("never")), wait: Duration::from_millis(500) };
        let start = Instant::now();
        let finished = run(
            Command::new("sh").args(["-c", "sleep 600"]),
            &limits(Duration::from_millis(500), u64::MAX, turn.clone()),
            1024,
        )
        .unwrap();
        assert!(finished.status.is_none() && start.elapsed() < Duration::from_secs(30));
    }

    #[test]
    fn turns_are_taken_one_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("gpu-lock");
        std::fs::write(&lock, "").unwrap();
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
        std::fs::write(&lock, "").unwrap();
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
        let finished = run(
            Command::new("sh").args(["-c", script]),
            &limits(Duration::from_secs(60), 200 << 20, Turn::default()),
            1024,
        )
        .unwrap();
        assert!(finished.status.is_none(), "killed");
        assert!(finished.memory_exceeded.is_some_and(|bytes| bytes > 200 << 20), "{:?}", finished.memory_exceeded);
        assert!(start.elapsed() < Duration::from_secs(30), "killed well before the time limit");
    }
}
