//! Nsight Compute: runs a program under `ncu` and reads the exact shared-memory counters of each
//! kernel launch.
//!
//! The sass counters below count what each `LDS`/`STS` instruction really cost; the hardware
//! counters `l1tex__data_bank_conflicts_*` are not used because they over-count. Besides the
//! kernel totals, ncu's source page gives the same counts per machine instruction
//! ([`SharedInstruction`]), which lets a lesson check every access it declares.

use std::{
    collections::BTreeMap,
    env,
    ffi::{OsStr, OsString},
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::{CudaFunction, Gpu, GpuError, LaunchConfig};

pub const LOAD_WAVEFRONTS: &str = "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum";
pub const STORE_WAVEFRONTS: &str = "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum";
pub const LOAD_INSTRUCTIONS: &str = "smsp__sass_inst_executed_op_shared_ld.sum";
pub const STORE_INSTRUCTIONS: &str = "smsp__sass_inst_executed_op_shared_st.sum";
/// The four kernel totals the course reads.
pub const SHARED_METRICS: [&str; 4] = [LOAD_WAVEFRONTS, LOAD_INSTRUCTIONS, STORE_WAVEFRONTS, STORE_INSTRUCTIONS];
/// The hardware's own bank-conflict counters, loads and stores. They count more than the excess
/// wavefronts (lesson 3 shows by how much); the course reports them, never teaches from them.
pub const HARDWARE_CONFLICTS: [&str; 2] = [
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
];

/// The kernel [`set_up_profiler`] launches; no exercise or lesson kernel has its name.
pub const SET_UP_KERNEL: &str = "ncu_set_up";

/// Under Nsight Compute, a process's first profiled launch also sets the profiler up: about 0.7 s
/// on an H200 with ncu 2025.3 (0.01 s for each later launch), and slower while a process on
/// another GPU does the same. A process that takes turns on a shared GPU launches this empty
/// kernel first, before its turn, so that its turn holds only the launches it profiles. Two
/// processes must not set up on one GPU at once: the second fails ("a driver resource was
/// unavailable"). Outside Nsight Compute it costs one empty launch. The kernel is returned, its
/// module loaded while it is kept: a process that loads modules after its set-up keeps every
/// module Nsight Compute has seen (measured on the H100 with ncu 2025.3: a profile session that
/// unloaded its modules died of signal 11 profiling a later one, as their handles came again).
pub fn set_up_profiler(gpu: &Gpu) -> Result<CudaFunction, GpuError> {
    let text = format!("extern \"C\" __global__ void {SET_UP_KERNEL}() {{}}");
    let function = gpu.function_from_text("ncu_set_up.cu", &text, SET_UP_KERNEL)?;
    let config = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: the kernel takes no parameters and touches no memory.
    unsafe { gpu.stream().launch_builder(&function).launch(config) }?;
    gpu.synchronize()?;
    Ok(function)
}

/// The kinds of shared-memory machine instruction ncu counts apart, each with its own kernel
/// totals: `LDS` and `STS` (the four [`SHARED_METRICS`] count these alone), `LDSM` and `STSM`
/// (ldmatrix, stmatrix) and `LDGSTS` (cp.async, its write to shared memory). Measured on the
/// H100 with Nsight Compute 2025.3: the `op_ld`/`op_st` counters leave the other three out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum SharedFamily {
    Lds,
    Sts,
    Ldsm,
    Stsm,
    Ldgsts,
}

impl SharedFamily {
    pub const ALL: [SharedFamily; 5] =
        [SharedFamily::Lds, SharedFamily::Sts, SharedFamily::Ldsm, SharedFamily::Stsm, SharedFamily::Ldgsts];
    /// The families whose totals are collected only when asked for: their metrics exist from
    /// sm_80 (`LDGSTS`) or sm_90 (`STSM`) on, and ncu refuses a run that names an unknown one.
    pub const MATRIX_AND_ASYNC: [SharedFamily; 3] = [SharedFamily::Ldsm, SharedFamily::Stsm, SharedFamily::Ldgsts];

    /// The family of a SASS opcode (`LDSM.16.MT88.4`, `LDS.U.128`, ...), if it accesses shared memory.
    pub fn of_opcode(opcode: &str) -> Option<SharedFamily> {
        let mnemonic = opcode.split([' ', '.']).next().unwrap_or("");
        match mnemonic {
            "LDS" => Some(SharedFamily::Lds),
            "STS" => Some(SharedFamily::Sts),
            "LDSM" => Some(SharedFamily::Ldsm),
            "STSM" => Some(SharedFamily::Stsm),
            "LDGSTS" => Some(SharedFamily::Ldgsts),
            _ => None,
        }
    }

    /// Whether it reads shared memory.
    pub fn reads(self) -> bool {
        matches!(self, SharedFamily::Lds | SharedFamily::Ldsm)
    }

    /// How tables name it: `ld` and `st` as always, the others by their PTX instruction.
    pub fn short_name(self) -> &'static str {
        match self {
            SharedFamily::Lds => "ld",
            SharedFamily::Sts => "st",
            SharedFamily::Ldsm => "ldmatrix",
            SharedFamily::Stsm => "stmatrix",
            SharedFamily::Ldgsts => "cp.async",
        }
    }

    /// Its (wavefronts, executions) kernel totals.
    pub fn metrics(self) -> [&'static str; 2] {
        match self {
            SharedFamily::Lds => [LOAD_WAVEFRONTS, LOAD_INSTRUCTIONS],
            SharedFamily::Sts => [STORE_WAVEFRONTS, STORE_INSTRUCTIONS],
            SharedFamily::Ldsm => {
                ["sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum", "sm__sass_inst_executed_op_ldsm.sum"]
            }
            SharedFamily::Stsm => [
                "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_stsm.sum",
                "sm__sass_inst_executed_op_shared_stsm.sum",
            ],
            SharedFamily::Ldgsts => [
                "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum",
                "smsp__sass_inst_executed_op_ldgsts.sum",
            ],
        }
    }
}

/// Per-instruction counters of ncu's source page: warp-level executions, shared wavefronts, and
/// the ideal wavefronts (one per execution with an active lane, for accesses of up to 4 bytes).
const INSTRUCTION_METRICS: [&str; 3] =
    ["inst_executed", "memory_l1_wavefronts_shared", "memory_l1_wavefronts_shared_ideal"];

/// Names the `ncu` to use, overriding the search.
pub const NCU_VAR: &str = "BCM_NCU";

/// Why counters could not be read: each case is one line a lesson can print.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum NcuUnavailable {
    #[error(
        "Nsight Compute (ncu) not found on PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin; set {NCU_VAR} to its path"
    )]
    NotFound,
    #[error(
        "ncu may not read GPU counters here (ERR_NVGPUCTRPERM): an administrator must allow it, see \
         https://developer.nvidia.com/ERR_NVGPUCTRPERM"
    )]
    NotPermitted,
    #[error("ncu failed: {0}")]
    Failed(String),
}

/// Counters of one kernel launch, in launch order.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KernelCounters {
    /// Launch index within the profiled program (ncu's `ID`).
    pub id: usize,
    pub kernel: String,
    pub metrics: BTreeMap<String, f64>,
    /// The launch's executed shared-memory machine instructions, in code order.
    pub instructions: Vec<SharedInstruction>,
}

/// One shared-memory machine instruction (`LDS`, `STS`, ...) of a launch, from ncu's source page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SharedInstruction {
    /// The SASS text, e.g. `LDS R11, [R14+0x20]`.
    pub sass: String,
    /// Warp-level executions in the launch with at least one active lane.
    pub executed: u64,
    pub wavefronts: u64,
}

impl SharedInstruction {
    /// Whether it reads shared memory (`LDS`, `LDSM`), rather than writes it (`STS`, `STSM`,
    /// `LDGSTS`).
    pub fn is_load(&self) -> bool {
        self.family().reads()
    }

    /// Its kind; the source page lists shared-memory instructions alone.
    pub fn family(&self) -> SharedFamily {
        SharedFamily::of_opcode(self.opcode()).expect("the source page keeps shared-memory instructions alone")
    }

    /// The SASS text without a guard predicate: `LDS.64 R2, [R3]` for `@P0 LDS.64 R2, [R3]`.
    pub fn opcode(&self) -> &str {
        opcode(&self.sass)
    }
}

/// The instruction's opcode and operands, without a guard predicate such as `@P0` or `@!P1`.
fn opcode(sass: &str) -> &str {
    match sass.strip_prefix('@') {
        Some(guarded) => guarded.split_once(' ').map_or("", |(_, rest)| rest.trim_start()),
        None => sass,
    }
}

/// The shared-memory counters of a launch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedCounters {
    pub load_wavefronts: u64,
    pub load_instructions: u64,
    pub store_wavefronts: u64,
    pub store_instructions: u64,
    /// (wavefronts, executions) of [`SharedFamily::MATRIX_AND_ASYNC`], in that order, where they
    /// were collected.
    #[serde(default)]
    pub matrix_and_async: [Option<(u64, u64)>; 3],
}

impl SharedCounters {
    /// (wavefronts, executions) of `family`, `None` where its counters were not collected.
    pub fn of(&self, family: SharedFamily) -> Option<(u64, u64)> {
        match family {
            SharedFamily::Lds => Some((self.load_wavefronts, self.load_instructions)),
            SharedFamily::Sts => Some((self.store_wavefronts, self.store_instructions)),
            other => {
                let index = SharedFamily::MATRIX_AND_ASYNC.iter().position(|&f| f == other).expect("the other three");
                self.matrix_and_async[index]
            }
        }
    }

    /// Wavefronts per request of `family`, `None` when none executed or none were counted.
    pub fn wavefronts_per_request(&self, family: SharedFamily) -> Option<f64> {
        self.of(family).and_then(per_request)
    }

    /// Wavefronts per load instruction, `None` when the kernel executed no shared load.
    pub fn load_wavefronts_per_request(&self) -> Option<f64> {
        self.wavefronts_per_request(SharedFamily::Lds)
    }
    pub fn store_wavefronts_per_request(&self) -> Option<f64> {
        self.wavefronts_per_request(SharedFamily::Sts)
    }
}

/// Wavefronts per instruction of a (wavefronts, instructions) count, `None` where no instruction
/// executed: measured here, declared in `lesson-kit`.
pub fn per_request((wavefronts, instructions): (u64, u64)) -> Option<f64> {
    (instructions > 0).then(|| wavefronts as f64 / instructions as f64)
}

impl KernelCounters {
    /// The hardware bank-conflict counters, loads and stores together, when they were collected.
    pub fn hardware_conflicts(&self) -> Option<u64> {
        HARDWARE_CONFLICTS.iter().map(|name| self.metrics.get(*name).map(|v| *v as u64)).sum()
    }

    /// The shared-memory counters, if this launch was profiled with [`SHARED_METRICS`]; those
    /// of the other families where they were collected too.
    pub fn shared(&self) -> Option<SharedCounters> {
        let get = |name: &str| self.metrics.get(name).map(|v| *v as u64);
        let family = |family: SharedFamily| {
            let [wavefronts, executions] = family.metrics();
            Some((get(wavefronts)?, get(executions)?))
        };
        Some(SharedCounters {
            load_wavefronts: get(LOAD_WAVEFRONTS)?,
            load_instructions: get(LOAD_INSTRUCTIONS)?,
            store_wavefronts: get(STORE_WAVEFRONTS)?,
            store_instructions: get(STORE_INSTRUCTIONS)?,
            matrix_and_async: SharedFamily::MATRIX_AND_ASYNC.map(family),
        })
    }
}

/// The totals of `families` that [`SHARED_METRICS`] leaves out.
fn family_metrics(families: &[SharedFamily]) -> impl Iterator<Item = &'static str> + '_ {
    families.iter().filter(|f| SharedFamily::MATRIX_AND_ASYNC.contains(f)).flat_map(|f| f.metrics())
}

/// A CUDA tool's executable on `PATH`, in `$CUDA_HOME/bin` or in `/usr/local/cuda/bin`.
pub(crate) fn find_cuda_tool(name: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = env::var_os("PATH").map(|p| env::split_paths(&p).collect()).unwrap_or_default();
    if let Some(home) = env::var_os("CUDA_HOME") {
        dirs.push(Path::new(&home).join("bin"));
    }
    dirs.push("/usr/local/cuda/bin".into());
    dirs.into_iter().map(|dir| dir.join(name)).find(|path| path.is_file())
}

/// How to start this program again so that it launches the kernels ncu is to profile (a hidden
/// subcommand of the course's command line).
#[derive(Clone, Debug)]
pub struct SelfCommand {
    pub program: PathBuf,
    pub args: Vec<OsString>,
}

impl SelfCommand {
    /// The running program with `args`.
    pub fn current(args: Vec<OsString>) -> std::io::Result<SelfCommand> {
        Ok(SelfCommand { program: env::current_exe()?, args })
    }
}

/// A usable `ncu` executable.
#[derive(Clone, Debug)]
pub struct Ncu {
    pub path: PathBuf,
}

/// ncu's per-launch totals, as `--page details` prints them.
const DETAILS_PAGE: &[&str] = &["--page", "details"];
/// ncu's per-instruction counts, with the machine code (`--page source`).
const SOURCE_PAGE: &[&str] = &["--page", "source", "--print-source", "sass"];

impl Ncu {
    /// Looks for `ncu`: `$BCM_NCU`, then `PATH`, `$CUDA_HOME/bin`, `/usr/local/cuda/bin`.
    pub fn find() -> Result<Ncu, NcuUnavailable> {
        if let Some(path) = env::var_os(NCU_VAR) {
            return Ok(Ncu { path: path.into() });
        }
        find_cuda_tool("ncu").map(|path| Ncu { path }).ok_or(NcuUnavailable::NotFound)
    }

    /// ncu's version (`2025.3.1.0`), from `ncu --version`.
    pub fn version(&self) -> Result<String, NcuUnavailable> {
        let text = self.output(Command::new(&self.path).arg("--version"))?;
        let version = text.lines().find_map(|line| line.trim().strip_prefix("Version ")).map(str::trim);
        Ok(version.and_then(|v| v.split_whitespace().next()).unwrap_or("unknown").to_owned())
    }

    /// Runs `command` under ncu: the shared-memory counters of every kernel launch it makes,
    /// totals and per instruction, with the totals of `families` besides `LDS` and `STS`.
    pub fn profile(
        &self,
        command: &SelfCommand,
        families: &[SharedFamily],
    ) -> Result<Vec<KernelCounters>, NcuUnavailable> {
        let metrics: Vec<&str> = SHARED_METRICS
            .iter()
            .chain(&HARDWARE_CONFLICTS)
            .chain(&INSTRUCTION_METRICS)
            .copied()
            .chain(family_metrics(families))
            .collect();
        let [details, source] = self.record(command, &metrics, [DETAILS_PAGE, SOURCE_PAGE])?;
        let mut launches = parse_csv(&details)?;
        let listings = parse_source_page(&source)?;
        let listings = one_listing_per_launch(listings, launches.len())?;
        for (launch, (kernel, instructions)) in launches.iter_mut().zip(&listings) {
            if *kernel != launch.kernel {
                return Err(NcuUnavailable::Failed(format!(
                    "ncu's source page lists {kernel} where launch {} is {}",
                    launch.id, launch.kernel
                )));
            }
            launch.instructions = instructions.clone();
        }
        Ok(launches)
    }

    /// Runs `command` under ncu for the shared-memory totals of every launch alone (what
    /// [`KernelCounters::shared`] reads): fewer metrics to collect and one page to read, where a
    /// grader profiles a submission for its totals.
    pub fn profile_totals(
        &self,
        command: &SelfCommand,
        families: &[SharedFamily],
    ) -> Result<Vec<KernelCounters>, NcuUnavailable> {
        let metrics: Vec<&str> = SHARED_METRICS.iter().copied().chain(family_metrics(families)).collect();
        // ncu prints the page as the program ends, with no report to export and no second ncu to
        // read it (0.8 s less at the end of a grading session), into a file of its own: what the
        // program prints (a kernel's printf) never mixes with it.
        let log = temporary_path(".csv");
        let page = ["--csv", "--print-units", "base"].iter().chain(DETAILS_PAGE).map(OsStr::new);
        let options: Vec<&OsStr> = page.chain([OsStr::new("--log-file"), log.as_os_str()]).collect();
        let output = self.profiling(command, &metrics, &options).output().map_err(|e| self.not_started(e));
        let printed = fs::read_to_string(&log).unwrap_or_default();
        let _ = fs::remove_file(&log);
        succeeded(&output?, &printed)?;
        parse_csv(&printed)
    }

    /// Runs `command` under ncu collecting `metrics`, then reads `pages` of its report as CSV.
    fn record<const N: usize>(
        &self,
        command: &SelfCommand,
        metrics: &[&str],
        pages: [&[&str]; N],
    ) -> Result<[String; N], NcuUnavailable> {
        let report = temporary_path("");
        let options = [OsStr::new("--force-overwrite"), OsStr::new("--export"), report.as_os_str()];
        let profiled = self.run(&mut self.profiling(command, metrics, &options));
        let file = report.with_extension("ncu-rep");
        let read = profiled.and_then(|()| {
            let mut texts = Vec::with_capacity(N);
            for page in pages {
                texts.push(
                    self.output(
                        Command::new(&self.path)
                            .args(["--csv", "--print-units", "base"])
                            .args(page)
                            .arg("--import")
                            .arg(&file),
                    )?,
                );
            }
            Ok(texts.try_into().expect("one text per page"))
        });
        let _ = fs::remove_file(&file);
        read
    }

    /// ncu collecting `metrics` from every launch of `command` and the processes it starts, at the
    /// clocks the GPU runs at; `options` say where the results go.
    fn profiling(&self, command: &SelfCommand, metrics: &[&str], options: &[&OsStr]) -> Command {
        let mut ncu = Command::new(&self.path);
        ncu.args(["--clock-control", "none", "--target-processes", "all", "--metrics"])
            .arg(metrics.join(","))
            .args(options)
            .arg(&command.program)
            .args(&command.args);
        ncu
    }

    /// Runs an ncu command to completion, turning its failures into reasons.
    fn run(&self, command: &mut Command) -> Result<(), NcuUnavailable> {
        self.output(command).map(|_| ())
    }

    /// Runs an ncu command; its standard output, or why it failed.
    fn output(&self, command: &mut Command) -> Result<String, NcuUnavailable> {
        let output = command.output().map_err(|e| self.not_started(e))?;
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        succeeded(&output, &stdout)?;
        Ok(stdout)
    }

    fn not_started(&self, error: std::io::Error) -> NcuUnavailable {
        NcuUnavailable::Failed(format!("could not start {}: {error}", self.path.display()))
    }
}

/// Whether an ncu run that ended as `output` says and printed `printed` (its own output, to
/// standard output or its log file) succeeded; if not, why.
fn succeeded(output: &std::process::Output, printed: &str) -> Result<(), NcuUnavailable> {
    let all_output = format!("{printed}\n{}", String::from_utf8_lossy(&output.stderr));
    if all_output.contains("ERR_NVGPUCTRPERM") {
        return Err(NcuUnavailable::NotPermitted);
    }
    if !output.status.success() {
        return Err(NcuUnavailable::Failed(format!("{}:\n{}", output.status, why_it_failed(&all_output))));
    }
    Ok(())
}

/// A path of its own in the temporary folder for one of ncu's files, its name ending `end`.
fn temporary_path(end: &str) -> PathBuf {
    let unique = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    env::temp_dir().join(format!("bank-conflicts-ncu-{}-{unique}{end}", std::process::id()))
}

/// What a failed ncu run printed that says why: its `==ERROR==` lines where it printed any (the
/// driver's error, the target's exit code), else its last lines. Its progress and the report's
/// temporary name are left out.
fn why_it_failed(all_output: &str) -> String {
    let lines = all_output.lines().map(str::trim_end).filter(|l| !l.trim().is_empty());
    let errors: Vec<&str> = lines.clone().filter_map(|l| l.strip_prefix("==ERROR==")).map(str::trim).collect();
    match errors.is_empty() {
        false => errors.join("\n"),
        true => {
            let tail: Vec<&str> = lines.rev().take(8).collect();
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        }
    }
}

/// Parses ncu's `--csv` details page: one row per (launch, metric).
pub fn parse_csv(report: &str) -> Result<Vec<KernelCounters>, NcuUnavailable> {
    let Some(start) = report.find("\"ID\"") else {
        return Ok(Vec::new());
    };
    let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(&report.as_bytes()[start..]);
    let headers = reader.headers().map_err(|e| NcuUnavailable::Failed(format!("unreadable ncu CSV: {e}")))?.clone();
    let column = |name: &str| {
        headers
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| NcuUnavailable::Failed(format!("ncu CSV has no `{name}` column")))
    };
    let (id, kernel, metric, value) =
        (column("ID")?, column("Kernel Name")?, column("Metric Name")?, column("Metric Value")?);
    let mut launches: Vec<KernelCounters> = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| NcuUnavailable::Failed(format!("unreadable ncu CSV row: {e}")))?;
        let Ok(launch) = record.get(id).unwrap_or("").parse::<usize>() else { continue };
        let number = record.get(value).unwrap_or("").replace(',', "");
        let Ok(number) = number.parse::<f64>() else { continue };
        if launches.last().is_none_or(|last| last.id != launch) {
            launches.push(KernelCounters {
                id: launch,
                kernel: record.get(kernel).unwrap_or("").to_owned(),
                metrics: BTreeMap::new(),
                instructions: Vec::new(),
            });
        }
        let last = launches.last_mut().expect("pushed above");
        last.metrics.insert(record.get(metric).unwrap_or("").to_owned(), number);
    }
    Ok(launches)
}

/// One kernel's listing on ncu's source page: its name and its shared-memory instructions.
type Listing = (String, Vec<SharedInstruction>);

/// ncu 2025.3 prints each launch's listing once, or twice in a row (seen for kernels whose module
/// was loaded more than once); anything else is a format we do not know.
fn one_listing_per_launch(listings: Vec<Listing>, launches: usize) -> Result<Vec<Listing>, NcuUnavailable> {
    if listings.len() == launches {
        return Ok(listings);
    }
    let doubled = listings.len() == 2 * launches && listings.chunks(2).all(|pair| pair[0] == pair[1]);
    match doubled {
        true => Ok(listings.into_iter().step_by(2).collect()),
        false => Err(NcuUnavailable::Failed(format!(
            "ncu's source page lists {} kernels for {launches} launches",
            listings.len()
        ))),
    }
}

/// Parses ncu's `--csv --page source --print-source sass` output: for each listed kernel, a
/// `"Kernel Name","NAME",` line, a header line, then one row per machine instruction.
pub fn parse_source_page(page: &str) -> Result<Vec<Listing>, NcuUnavailable> {
    let unreadable = |what: String| NcuUnavailable::Failed(format!("unreadable ncu source page: {what}"));
    let mut listings: Vec<Listing> = Vec::new();
    // (source, executions, [wavefronts, ideal]); kernels without shared memory have no wavefront columns.
    let mut columns: Option<(usize, usize, Option<[usize; 2]>)> = None;
    let mut reader = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(page.as_bytes());
    for record in reader.records() {
        let record = record.map_err(|e| unreadable(e.to_string()))?;
        match record.get(0) {
            Some("Kernel Name") => {
                listings.push((record.get(1).unwrap_or("").to_owned(), Vec::new()));
                columns = None;
            }
            Some("Address") => {
                let column = |name: &str| {
                    record.iter().position(|h| h == name).ok_or_else(|| unreadable(format!("no `{name}` column")))
                };
                let shared = match record.iter().position(|h| h == INSTRUCTION_METRICS[1]) {
                    Some(wavefronts) => Some([wavefronts, column(INSTRUCTION_METRICS[2])?]),
                    None => None,
                };
                columns = Some((column("Source")?, column(INSTRUCTION_METRICS[0])?, shared));
            }
            _ => {
                let (Some((source, executed, Some([wavefronts, ideal]))), Some((_, instructions))) =
                    (columns, listings.last_mut())
                else {
                    continue;
                };
                let count = |column: usize| record.get(column).unwrap_or("").replace(',', "").parse::<u64>().ok();
                let sass = record.get(source).unwrap_or("").trim().to_owned();
                let operation = opcode(&sass);
                let Some(family) = SharedFamily::of_opcode(operation) else { continue };
                // ncu counts a guarded instruction as executed even when its guard turned every
                // lane off (the kernel totals do not). An `LDS`/`STS` of up to 4 bytes has exactly
                // one ideal wavefront per execution with an active lane, so that count is exact.
                let narrow = [SharedFamily::Lds, SharedFamily::Sts].contains(&family)
                    && !operation.split_whitespace().next().is_some_and(|op| op.contains(".64") || op.contains(".128"));
                let executed = if narrow { count(ideal) } else { count(executed) };
                if let (Some(executed @ 1..), Some(wavefronts)) = (executed, count(wavefronts)) {
                    instructions.push(SharedInstruction { sass, executed, wavefronts });
                }
            }
        }
    }
    Ok(listings)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"==PROF== Connected to process 4242 (/x/xtask)
==PROF== Profiling "stride_read_4" - 0: 0%....50%....100% - 1 pass
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","4242","xtask","127.0.0.1","stride_read_4","1","7","(256, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum","","1,024"
"0","4242","xtask","127.0.0.1","stride_read_4","1","7","(256, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","smsp__sass_inst_executed_op_shared_ld.sum","inst","32"
"0","4242","xtask","127.0.0.1","stride_read_4","1","7","(256, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum","","64"
"0","4242","xtask","127.0.0.1","stride_read_4","1","7","(256, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","smsp__sass_inst_executed_op_shared_st.sum","inst","64"
"1","4242","xtask","127.0.0.1","probe_ld_16","1","7","(32, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum","","4"
==PROF== Disconnected from process 4242
"#;

    #[test]
    fn parses_launches_in_order_with_thousands_separators() {
        let launches = parse_csv(SAMPLE).unwrap();
        assert_eq!(launches.len(), 2);
        assert_eq!(launches[0].kernel, "stride_read_4");
        let shared = launches[0].shared().unwrap();
        assert_eq!(shared.load_wavefronts, 1024);
        assert_eq!(shared.load_wavefronts_per_request(), Some(32.0));
        assert_eq!(shared.store_wavefronts_per_request(), Some(1.0));
        assert_eq!(shared.of(SharedFamily::Ldsm), None, "not collected");
        assert_eq!(launches[1].id, 1);
        assert!(launches[1].shared().is_none(), "only one of the four counters");
        assert!(parse_csv("no report").unwrap().is_empty());
    }

    /// The shape of ncu 2025.3's source page (`stride_read_4` listed twice, as ncu does).
    const SOURCE_PAGE: &str = r#""Kernel Name","stride_read_4",
"Address","Source","inst_executed","memory_l1_wavefronts_shared","memory_l1_wavefronts_shared_ideal"
"0x7fda997ac200","      LDC R1, c[0x0][0x28]","64","0","0"
"0x7fda997ac210","      STS [R15+0x400], R10","8,192","8,192","8,192"
"0x7fda997ac220","      LDS.U.128 R4, [R14]","8192","262144","32768"
"0x7fda997ac230","      LDS R11, [R14+0x20]","0","0","0"
"0x7fda997ac240","      @!P0 LDS R12, [R14+0x40]","512","64","32"
"Kernel Name","copy_tiles",
"Address","Source","inst_executed"
"0x7fda997ac200","      EXIT","64"
"#;

    #[test]
    fn source_page_gives_executed_shared_instructions_per_kernel() {
        let listings = parse_source_page(SOURCE_PAGE).unwrap();
        assert_eq!(listings.len(), 2);
        let (kernel, instructions) = &listings[0];
        assert_eq!(kernel, "stride_read_4");
        let sass: Vec<(&str, u64, u64, bool)> =
            instructions.iter().map(|i| (i.sass.as_str(), i.executed, i.wavefronts, i.is_load())).collect();
        assert_eq!(
            sass,
            [
                ("STS [R15+0x400], R10", 8192, 8192, false),
                ("LDS.U.128 R4, [R14]", 8192, 262144, true),
                ("@!P0 LDS R12, [R14+0x40]", 32, 64, true)
            ],
            "never-executed instructions are left out; a guarded one counts executions with an active lane"
        );
        assert_eq!(listings[1], ("copy_tiles".to_owned(), Vec::new()), "no shared column, no shared instruction");
    }

    #[test]
    fn matrix_and_async_totals_are_read_where_collected() {
        let mut launch = parse_csv(SAMPLE).unwrap().remove(0);
        for (family, (wavefronts, executions)) in
            [(SharedFamily::Ldsm, (65536.0, 2048.0)), (SharedFamily::Ldgsts, (8064.0, 768.0))]
        {
            let [w, e] = family.metrics();
            launch.metrics.insert(w.to_owned(), wavefronts);
            launch.metrics.insert(e.to_owned(), executions);
        }
        let shared = launch.shared().unwrap();
        assert_eq!(shared.of(SharedFamily::Ldsm), Some((65536, 2048)));
        assert_eq!(shared.wavefronts_per_request(SharedFamily::Ldgsts), Some(10.5));
        assert_eq!(shared.of(SharedFamily::Stsm), None);
        assert_eq!(shared.of(SharedFamily::Lds), Some((1024, 32)));
        let asked: Vec<&str> = family_metrics(&[SharedFamily::Lds, SharedFamily::Stsm]).collect();
        assert_eq!(asked, SharedFamily::Stsm.metrics(), "LDS is always collected");
    }

    #[test]
    fn opcodes_name_their_family() {
        let families = ["LDS.U.128", "LDSM.16.MT88.4", "STS", "STSM.16.M88.4", "LDGSTS.E.BYPASS.128", "LDG.E"]
            .map(SharedFamily::of_opcode);
        use SharedFamily::*;
        assert_eq!(families, [Some(Lds), Some(Ldsm), Some(Sts), Some(Stsm), Some(Ldgsts), None]);
    }

    #[test]
    fn hardware_conflicts_add_loads_and_stores_when_both_were_collected() {
        let mut launch = parse_csv(SAMPLE).unwrap().remove(0);
        assert_eq!(launch.hardware_conflicts(), None);
        launch.metrics.insert(HARDWARE_CONFLICTS[0].to_owned(), 40.0);
        assert_eq!(launch.hardware_conflicts(), None, "stores missing");
        launch.metrics.insert(HARDWARE_CONFLICTS[1].to_owned(), 2.0);
        assert_eq!(launch.hardware_conflicts(), Some(42));
    }

    #[test]
    fn listings_printed_once_or_twice_give_one_per_launch() {
        let listing = |name: &str| (name.to_owned(), Vec::new());
        let once = one_listing_per_launch(vec![listing("a"), listing("b")], 2).unwrap();
        assert_eq!(once, [listing("a"), listing("b")]);
        let twice = one_listing_per_launch(vec![listing("a"), listing("a"), listing("b"), listing("b")], 2);
        assert_eq!(twice.unwrap(), [listing("a"), listing("b")]);
        let unknown = one_listing_per_launch(vec![listing("a"), listing("b"), listing("b")], 2).unwrap_err();
        assert_eq!(unknown.to_string(), "ncu failed: ncu's source page lists 3 kernels for 2 launches");
    }

    #[test]
    fn a_failed_run_is_told_by_its_error_lines_or_else_its_last_lines() {
        // As ncu 2025.3 printed it on an H100 for a kernel that traps when profiled.
        let trapped = "==PROF== Profiling \"char_column_sums\" - 2: 0%....50%....100% - 1 pass\n\
            ==ERROR== An error was reported by the driver:\n==ERROR== LaunchFailed\n\
            ==PROF== Trying to shutdown target application\n\
            ==ERROR== The application returned an error code (9).\n\
            ==PROF== Report: bank-conflicts-ncu-4236-1795.ncu-rep\n";
        assert_eq!(
            why_it_failed(trapped),
            "An error was reported by the driver:\nLaunchFailed\nThe application returned an error code (9)."
        );
        let lines: String = (1..=10).map(|i| format!("line {i}\n\n")).collect();
        assert_eq!(why_it_failed(&lines), (3..=10).map(|i| format!("line {i}")).collect::<Vec<_>>().join("\n"));
    }

    #[test]
    fn a_profiling_commands_options_come_before_the_program_it_profiles() {
        let ncu = Ncu { path: "ncu".into() };
        let command = SelfCommand { program: "/opt/xtask".into(), args: vec!["--only=1".into()] };
        let options = [OsStr::new("--log-file"), OsStr::new("page.csv")];
        let profiling = ncu.profiling(&command, &["a.sum", "b.sum"], &options);
        let args: Vec<&OsStr> = profiling.get_args().collect();
        let expected = [
            "--clock-control",
            "none",
            "--target-processes",
            "all",
            "--metrics",
            "a.sum,b.sum",
            "--log-file",
            "page.csv",
            "/opt/xtask",
            "--only=1",
        ];
        assert_eq!(args, expected.map(OsStr::new));
    }

    #[test]
    fn missing_ncu_is_a_clear_error() {
        let ncu = Ncu { path: "/nonexistent/ncu".into() };
        let err = ncu.profile(&SelfCommand { program: "/bin/true".into(), args: vec![] }, &[]).unwrap_err();
        assert!(matches!(err, NcuUnavailable::Failed(ref m) if m.contains("could not start")), "{err}");
    }
}
