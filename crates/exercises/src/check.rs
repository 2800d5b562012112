//! Checking one learner file on the GPU: compile, correctness on every input, Nsight Compute's
//! counters beside the reference solution's, and the clock beside the starter's and the
//! reference's. This runs in a process of its own (see [`crate::supervise`]), so that a kernel
//! that crashes or never ends takes nothing else with it.

use std::{
    fs,
    path::Path,
    sync::{Arc, Mutex},
    time::Duration,
};

use cuda_kernels::{
    CudaFunction, Gpu, GpuError, HostWords, TextModule, address_origins, compile, launch_bounds, line_info,
    local_memory, module_variables,
    ncu::{self, Ncu, SelfCommand, SharedCounters, SharedFamily},
    source, special_registers, static_shared,
    timing::{self, Plan},
    written_globals, zeroed_registers,
};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::{
    diagnostics,
    harness::{
        CheckKernels, CheckSize, Expectation, Expected, HostInput, InputWatch, Run, TimedData, Verifier, compare,
    },
    learner_file::LearnerFile,
    manifest::{Exercise, Harness, Input, Manifest},
    protocol::{BatchFiles, GPU_TURN_MARKER, Launches, PROFILER_TURN_MARKER, profiler_lock, session_end, write_whole},
    supervise::{GpuTurn, LockTurn},
};

/// How a check ended.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum CheckOutcome {
    /// NVRTC's messages, each `file:line: error: ...` in the learner's file.
    CompileError {
        messages: Vec<String>,
    },
    /// The kernel faulted (an illegal address, a trap) or the checking process died.
    Crashed {
        detail: String,
    },
    /// The check did not finish within the time limit and was killed.
    TimedOut {
        seconds: u64,
    },
    Incorrect {
        input: Input,
        detail: String,
    },
    /// The part places an element outside the tile it declares ([`crate::within`]): the
    /// recorder stopped the kernel with a trap there.
    OutsideTheTile {
        detail: String,
    },
    /// A launch changed memory of the part's own that lasts to the next launch (its module's
    /// variables, read before the first launch and after each): `detail` says which launch and
    /// what it wrote.
    KeptMemory {
        detail: String,
    },
    Correct(Box<SubmissionMeasurements>),
    /// Correct on every input, but stopped (at the time limit, or the process died) before its
    /// counters and times were measured: the correctness points are kept.
    CorrectUnmeasured {
        detail: String,
    },
    /// Not the submission's doing (no GPU, the reference failed): it was not graded.
    CouldNotCheck {
        reason: String,
    },
}

impl CheckOutcome {
    /// Whether the check ended with every launch finished and no CUDA error, so the process that
    /// ran it may check the next file: not after a crash, a trap at a place outside the tile, a
    /// timeout, or a check not made.
    pub fn leaves_the_gpu_clean(&self) -> bool {
        matches!(
            self,
            CheckOutcome::Correct(_)
                | CheckOutcome::Incorrect { .. }
                | CheckOutcome::KeptMemory { .. }
                | CheckOutcome::CompileError { .. }
        )
    }
}

/// What was measured of a correct kernel.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct SubmissionMeasurements {
    /// Submission and reference, launched once each at the check size under Nsight Compute
    /// ([`profile_submissions`]; [`NOT_YET_PROFILED`] until then). `Err` where the submission's
    /// profile failed (`profile_failed`), or where the reference's counters could not be read
    /// either: then the clock stands in.
    pub counters: Result<CounterPair, String>,
    /// The submission's profile failed (it crashed, hung, or wrote past `out` under the profiler)
    /// where the reference's alone did not: its counter requirements are not met.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_failed: Option<String>,
    /// Median ms per launch at the timed size, measured side by side in one run.
    pub submission_ms: f64,
    pub reference_ms: f64,
    pub starter_ms: f64,
    /// Static shared memory of the submission's kernel.
    pub shared_bytes: u32,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct CounterPair {
    pub submission: SharedCounters,
    pub reference: SharedCounters,
}

/// The submission's and the reference's kernels, compiled (the starter is timed apart), and where
/// the exercise checks the part's places, the submission compiled with their recorder, which the
/// correctness launches run (each of the submission's with its module).
struct Kernels {
    submission: (TextModule, CudaFunction),
    reference: CudaFunction,
    recorded: Option<(TextModule, CudaFunction)>,
}

/// The name NVRTC compiles a submission under: fixed, never the learner's (a name with a quote
/// or a newline is no program name); messages are given the learner's name back by
/// [`diagnostics::errors`].
pub const PROGRAM_NAME: &str = "submission.cu";

/// Compiles the reference, then the submission (shown as `shown`). Once the reference has compiled and
/// loaded here, any failure to build or load the submission is the submission's own (a syntax
/// error, an include that does not exist, more shared memory than a block may have).
fn compile(
    gpu: &Gpu,
    manifest: &Manifest,
    exercise: &Exercise,
    file: &LearnerFile,
    shown: &str,
) -> Result<Kernels, Box<CheckOutcome>> {
    let reference = compile_file(gpu, manifest, &exercise.solution, &exercise.entry).map_err(|e| {
        Box::new(CheckOutcome::CouldNotCheck { reason: diagnostics::scrub(&format!("the reference solution: {e}")) })
    })?;
    // A clock or a performance monitor the part's code reads differs from one launch to the next
    // (as a variable of its own that it writes lasts, which [`graded_ptx`] refuses): the compiled
    // code says so, however the part spelled it.
    // And a tile larger than a block may have is refused whatever the driver makes of it: it loaded
    // one of 2^31 - 1 words, and one of 2^30 + 1024 words is 4 KiB once 32-bit shared addresses
    // wrap around (the learner's module is one kernel, and a part declares no shared memory of
    // its own outside it).
    let entry = |module: TextModule| {
        let declared_bytes = static_shared::declared_bytes(module.ptx());
        if declared_bytes > static_shared::STATIC_SHARED_LIMIT_BYTES {
            return Err(gpu.too_much_static_shared(PROGRAM_NAME, declared_bytes));
        }
        match special_registers::beyond_the_launch(module.ptx()).first().map(|r| beyond_the_launch(r)) {
            Some(log) => Err(GpuError::Compile { file: PROGRAM_NAME.to_owned(), arch: gpu.info().arch(), log }),
            None => module.function(&exercise.entry).map(|function| (module, function)),
        }
    };
    let compiled = compile_submission(gpu, exercise, file, false).and_then(entry).and_then(|submission| {
        let recorded = match &exercise.within {
            None => None,
            Some(_) => Some(compile_submission(gpu, exercise, file, true).and_then(entry)?),
        };
        Ok((submission, recorded))
    });
    let (submission, recorded) = compiled.map_err(|error| {
        Box::new(CheckOutcome::CompileError {
            messages: match error {
                GpuError::Compile { log, .. } => diagnostics::errors(&log, PROGRAM_NAME, shown),
                GpuError::MissingKernel { kernel, .. } => {
                    vec![format!("{shown}: the compiled file has no kernel `{kernel}` (is it inside an #if?)")]
                }
                GpuError::MissingSource(file, _) => vec![format!(
                    "{shown}: `#include \"{}\"`: only the course's headers may be included",
                    diagnostics::scrub(&file)
                )],
                GpuError::TooMuchStaticShared { over, .. } => vec![format!("{shown} {over}")],
                other => vec![diagnostics::scrub(&format!("{shown}: {other}"))],
            },
        })
    })?;
    Ok(Kernels { submission, reference, recorded })
}

pub(crate) fn compile_file(gpu: &Gpu, manifest: &Manifest, file: &Path, entry: &str) -> Result<CudaFunction, GpuError> {
    let path = manifest.path(file);
    let text =
        fs::read_to_string(&path).map_err(|e| GpuError::MissingSource(path.display().to_string(), e.to_string()))?;
    compile_text(gpu, &path.display().to_string(), &text)?.function(entry)
}

/// Why a variable the compiled code writes is refused, in words.
fn lasting(variable: &str) -> String {
    format!(
        "writes {variable}, which lasts from one launch to the next, or passes its address on \
         where it could be written (the code after your part could read it to act otherwise when it is \
         profiled): {KEEP_IN_LOCALS}"
    )
}

/// Why reading a special register beyond the launch's shape is refused, in words.
fn beyond_the_launch(register: &str) -> String {
    format!(
        "the compiled code reads `{register}` ({}): the work of a kernel may depend only on its inputs \
         and on its launch's shape (`threadIdx`, `blockIdx`, `blockDim`, `gridDim`), so that the launch \
         Nsight Compute profiles does what the timed ones do; remove what reads it",
        special_registers::what_it_reads(register)
    )
}

/// What to do instead of keeping values in memory that lasts.
pub const KEEP_IN_LOCALS: &str = "keep values in locals, tables in `__constant__ const` memory";

/// A module-scope variable as the learner wrote it, from its name in the PTX: C++ names come
/// mangled there (NVRTC 13.0: `_ZZ9column_atjjE5calls` for a `static` in `column_at`,
/// `_ZN6tables4hitsE` for `tables::hits`).
fn variable_named(ptx: &str, variable: &str) -> String {
    if written_globals::compilers_temporary(ptx, variable) {
        return "a temporary that a reference declared outside a function binds (`constexpr unsigned&& r = 0u;` \
                keeps one for the whole program)"
            .to_owned();
    }
    if written_globals::compilers_string(variable) {
        return "a string literal".to_owned();
    }
    if let Some(local) = variable.strip_prefix("_ZZ") {
        let function = length_prefixed(local).map(|(name, _)| name.trim_start_matches(crate::within::RENAMED));
        return match (local_entity(local), function) {
            (Some(name), Some(function)) => format!("`{name}`, a `static` variable of `{function}`"),
            (Some(name), None) => format!("`{name}`, a function's `static` variable"),
            (None, _) => "a function's `static` variable".to_owned(),
        };
    }
    if let Some(parts) = variable.strip_prefix("_ZN").and_then(|nested| nested.strip_suffix('E')).and_then(names) {
        // An unnamed namespace's variable is nested in two names of NVRTC's own.
        let written: Vec<&str> = parts
            .into_iter()
            .filter(|part| !part.starts_with("_INTERNAL_") && !part.starts_with("_GLOBAL__N"))
            .collect();
        return format!("`{}`", written.join("::"));
    }
    // (`_Z13bcm_part_slotjj$0`: a constant address the compiler keeps for inline assembly in a
    // function, `__stcg(&seen, 1u)` in `slot`.)
    let made_in = variable.strip_prefix("_Z").filter(|_| variable.contains('$')).and_then(length_prefixed);
    match (made_in, variable.starts_with("_Z")) {
        (Some((function, _)), _) => format!(
            "a copy the compiler made in `{}` of a variable whose address your code there takes",
            function.trim_start_matches(crate::within::RENAMED)
        ),
        (None, true) => format!("a variable the compiler names `{variable}`"),
        (None, false) => format!("`{variable}`"),
    }
}

/// A mangled name's `<length><name>` at the start of `text`, and what follows it.
fn length_prefixed(text: &str) -> Option<(&str, &str)> {
    let digits = text.len() - text.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let length: usize = text.get(..digits)?.parse().ok()?;
    let rest = &text[digits..];
    Some((rest.get(..length)?, rest.get(length..)?))
}

/// `text` made only of `<length><name>`s: the names.
fn names(mut text: &str) -> Option<Vec<&str>> {
    let mut parts = Vec::new();
    while !text.is_empty() {
        let (name, rest) = length_prefixed(text)?;
        parts.push(name);
        text = rest;
    }
    Some(parts)
}

/// The name of a function's local entity, `_ZZ<function>E<length><name>[_<n>]` without its `_ZZ`:
/// the last `E` after which the rest reads whole.
fn local_entity(local: &str) -> Option<&str> {
    local.match_indices('E').rev().find_map(|(at, _)| {
        let (name, rest) = length_prefixed(&local[at + 1..])?;
        let discriminator = rest.strip_prefix('_').map(|d| d.trim_matches('_'));
        (rest.is_empty() || discriminator.is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())))
            .then_some(name)
    })
}

/// A module's lasting memory (its module-scope variables but the grader's record) as it was
/// before its kernel's launches. A launch that changed it left something for the next launch to
/// read, however the code spelled the write: this finds what the checks of the source and of the
/// PTX could not follow (an address rebuilt bit by bit).
pub(crate) struct LastingMemory<'m> {
    module: &'m TextModule,
    before: Vec<(String, Vec<u8>)>,
}

impl<'m> LastingMemory<'m> {
    pub(crate) fn new(gpu: &Gpu, module: &'m TextModule) -> Result<LastingMemory<'m>, GpuError> {
        Ok(LastingMemory { module, before: module.variables(gpu, &[crate::within::RECORD])? })
    }

    /// `Some(what was written)` if the launches so far changed any of it.
    fn changed(&self, gpu: &Gpu) -> Result<Option<String>, GpuError> {
        for (name, before) in &self.before {
            if self.module.bytes(gpu, name)? != *before {
                return Ok(Some(variable_named(self.module.ptx(), name)));
            }
        }
        Ok(None)
    }
}

/// The learner's file compiled, its part's places passed on by the grader's wrapper where the
/// exercise checks them ([`crate::within`]), and recorded if `record`.
pub(crate) fn compile_submission(
    gpu: &Gpu,
    exercise: &Exercise,
    file: &LearnerFile,
    record: bool,
) -> Result<TextModule, GpuError> {
    load_for_the_block(gpu, exercise, submission_ptx(gpu.info().compute_capability, exercise, file, record)?)
}

/// A build of the submission, `ptx`, loaded. One that needs more registers a thread than a block
/// of the exercise's shape may have (the recorded build adds the recorder's to a kernel's own) is
/// loaded again with the block's shape given to the assembler, which then keeps within it: the
/// harness launches no other shape, and a build that could not launch would fail an honest file.
pub(crate) fn load_for_the_block(gpu: &Gpu, exercise: &Exercise, ptx: String) -> Result<TextModule, GpuError> {
    let [x, y] = exercise.harness.block();
    let module = gpu.module_from_ptx(PROGRAM_NAME, ptx)?;
    let fits = module.function(&exercise.entry).and_then(|f| Ok(f.max_threads_per_block()? as u32 >= x * y));
    match (fits, launch_bounds::within_block(module.ptx(), &exercise.entry, [x, y, 1])) {
        (Ok(false), Some(bounded)) => gpu.module_from_ptx(PROGRAM_NAME, bounded),
        _ => Ok(module),
    }
}

/// The PTX [`compile_submission`] loads, compiled on any thread for GPUs of `compute_capability`.
fn submission_ptx(
    compute_capability: (i32, i32),
    exercise: &Exercise,
    file: &LearnerFile,
    record: bool,
) -> Result<String, GpuError> {
    graded_ptx(compute_capability, &nvrtc_ptx(compute_capability, exercise, file, record)?)
}

/// NVRTC's `ptx` as the grader loads it: what a launch reads that it did not write, a register or
/// local memory, could be an earlier launch's, so every register and local array starts at zero,
/// and every access at a local array's or a table's address stays inside it; refused where an
/// address may be made from a number, or the code writes a variable of its own, which lasts.
pub(crate) fn graded_ptx(compute_capability: (i32, i32), ptx: &str) -> Result<String, GpuError> {
    // (Told the learner's line of the instruction refused, where it came from the learner's file.)
    let refused_at = |instruction: Option<(usize, &str)>, log: String| {
        let line = instruction
            .and_then(|(body, instruction)| line_info::source_line(ptx, body, instruction))
            .filter(|(file, _)| file.rsplit('/').next() == Some(PROGRAM_NAME))
            .map_or(String::new(), |(_, line)| format!("{PROGRAM_NAME}({line}): error: "));
        GpuError::Compile {
            file: PROGRAM_NAME.to_owned(),
            arch: compile::sm_name(compute_capability),
            log: format!("{line}the compiled code {log}"),
        }
    };
    let refused = |log: String| refused_at(None, log);
    // (Before registers are zeroed at entry: a register's 0 there is no value the code gave it.)
    address_origins::given(ptx, &[crate::within::RECORD_AT])
        .map_err(|ungiven| refused_at(Some((ungiven.body, &ungiven.line)), ungiven.to_string()))?;
    let zeroed = zeroed_registers::at_each_entry(ptx);
    let confined = local_memory::confined(&zeroed).map_err(|unconfined| {
        refused(format!(
            "{unconfined} (local memory is not cleared between launches, so the grader keeps each function's \
             local arrays to themselves: zeroed where it starts, each access inside them)"
        ))
    })?;
    let kept = module_variables::kept(&confined, ptx).map_err(|unkept| {
        let instruction = match &unkept {
            module_variables::Unkept::Unbounded { line, body }
            | module_variables::Unkept::Mixed { line, body }
            | module_variables::Unkept::Unterminated { line, body } => Some((*body, line.as_str())),
            module_variables::Unkept::HandedOn => None,
        };
        refused_at(
            instruction,
            format!(
                "{unkept} (an index past a table, read as generic memory, reaches any address, local memory an \
             earlier launch left too, so the grader keeps each such read inside its table)"
            ),
        )
    })?;
    // (Read as `given` reads it: which word of a table a load reads, from NVRTC's code.)
    match written_globals::first_write(ptx, &[crate::within::RECORD]) {
        Some((variable, line, body)) => Err(refused_at(Some((body, &line)), lasting(&variable_named(ptx, &variable)))),
        None => Ok(kept),
    }
}

/// The PTX of `text` (named `shown` in messages) for GPUs of `compute_capability`, compiled as a
/// learner's file is: from memory, the course's headers inlined by bare name ([`expanded_text`]).
pub fn text_ptx(compute_capability: (i32, i32), shown: &str, text: &str) -> Result<String, GpuError> {
    compile::ptx(compute_capability, shown, shown, &expanded_text(shown, text)?)
}

/// NVRTC's PTX of the learner's file, wrapped as [`submission_ptx`] wraps it, before the grader
/// zeroes and confines it.
pub(crate) fn nvrtc_ptx(
    compute_capability: (i32, i32),
    exercise: &Exercise,
    file: &LearnerFile,
    record: bool,
) -> Result<String, GpuError> {
    let text = crate::after_part::compiled_text(exercise.within.as_ref(), file, record);
    text_ptx(compute_capability, PROGRAM_NAME, &text)
}

/// `text` compiled from memory (see [`expanded_text`]).
fn compile_text(gpu: &Gpu, shown: &str, text: &str) -> Result<TextModule, GpuError> {
    gpu.module_from_text(shown, &expanded_text(shown, text)?)
}

/// `text` with the course's headers inlined by bare name, refused if any `#include` is left, so
/// that NVRTC never opens a file.
fn expanded_text(shown: &str, text: &str) -> Result<String, GpuError> {
    if let Some(line) = crate::tokens::include_not_a_directive(text, 1) {
        return Err(GpuError::MissingSource(
            format!("line {line}"),
            format!("in {shown}: an `#include` line in a comment or continued from the line before"),
        ));
    }
    let expanded = source::expand_for_compile(shown, text)
        .map_err(|missing| GpuError::MissingSource(missing.file, format!("included from {shown}")))?;
    if let Some(line) = crate::tokens::include_left(&expanded) {
        return Err(GpuError::MissingSource(line, format!("in {shown}: only the course's headers are inlined")));
    }
    Ok(expanded)
}

/// Said of a crash where the submission's `kernel` declares less shared memory than every one of
/// `others` (the reference and the starter): a tile declared smaller than theirs, which the code
/// after the part reads and writes whole, reaches past its end.
fn smaller_tile(gpu: &Gpu, block_threads: u32, kernel: &CudaFunction, others: [&CudaFunction; 2]) -> String {
    let bytes =
        |function: &CudaFunction| gpu.occupancy(function, block_threads, 0).ok().map(|o| o.shared_bytes_per_block);
    let (Some(yours), Some(least)) = (bytes(kernel), others.into_iter().map(bytes).min().flatten()) else {
        return String::new();
    };
    match yours < least {
        true => format!(
            " (your kernel declares {yours} B of shared memory, less than both the starter's and the reference's \
             ({least} B or more): the code after your part reads and writes the whole tile, past the end of a \
             smaller one)"
        ),
        false => String::new(),
    }
}

/// Checks `file` (shown as `shown` in messages): correct on every input, then timed beside the
/// starter and the reference. `provisional` is told the outcome to stand if the check goes no
/// further: [`CheckOutcome::CorrectUnmeasured`] once the output is right. What is not a launch
/// (compiling, the timed input and its answer, every buffer and its upload) is done before this
/// check takes its `turn` on the GPU. Its counters are left to [`profile_submissions`], which
/// profiles several checked files in one Nsight Compute session: a correct outcome's counters say
/// [`NOT_YET_PROFILED`].
pub fn check(
    manifest: &Manifest,
    exercise: &Exercise,
    file: &LearnerFile,
    shown: &str,
    provisional: &dyn Fn(&CheckOutcome),
    turn: &dyn GpuTurn,
) -> CheckOutcome {
    let gpu = match Gpu::open() {
        Ok(gpu) => gpu,
        Err(why) => return CheckOutcome::CouldNotCheck { reason: why.to_string() },
    };
    let kernels = match compile(&gpu, manifest, exercise, file, shown) {
        Ok(kernels) => kernels,
        Err(outcome) => return *outcome,
    };
    let harness = &exercise.harness;
    let timed_data = timed_data(exercise);
    let prepared = compile_file(&gpu, manifest, &exercise.starter, &exercise.entry)
        .and_then(|starter| Ok((starter, CheckKernels::load(&gpu)?)));
    let (starter, check_kernels) = match prepared {
        Ok(prepared) => prepared,
        Err(e) => {
            return CheckOutcome::CouldNotCheck {
                reason: diagnostics::scrub(&format!("the starter, or the grader's own kernels: {e}")),
            };
        }
    };
    let expectation = Expectation::new(&check_kernels, timed_data.clone(), exercise.tolerance);
    // Every buffer is made and filled before the turn, which is kept for the launches: other
    // checks' uploads then overlap this GPU's timing rather than wait in line with it.
    let (checked_module, checked) = kernels.recorded.as_ref().unwrap_or(&kernels.submission);
    // (Pointed to first: the pointer is memory the part's launches must leave as it is. The timed
    // build's too, which records nothing: what a part can read of the grader's variables, past the
    // end of a table of its own, is then alike in both builds.)
    let prepared = record_of(&gpu, exercise, checked_module).and_then(|record| {
        Ok((
            record,
            record_of(&gpu, exercise, &kernels.submission.0)?,
            LastingMemory::new(&gpu, checked_module)?,
            LastingMemory::new(&gpu, &kernels.submission.0)?,
        ))
    });
    let (record, _timed_record, checked_lasting, timed_lasting) = match prepared {
        Ok(prepared) => prepared,
        Err(error) => {
            return CheckOutcome::Crashed { detail: diagnostics::scrub(&format!("before launching: {error}")) };
        }
    };
    // (Asked before any launch: after a crash the context answers nothing.)
    let smaller_tile =
        smaller_tile(&gpu, harness.block_threads(), &kernels.submission.1, [&kernels.reference, &starter]);
    let mut correctness_runs = Vec::with_capacity(exercise.inputs.len());
    for &input in &exercise.inputs {
        let data = harness.input(input, CheckSize::Check);
        let watched = Run::new(&gpu, checked, harness, CheckSize::Check, &data)
            .and_then(|run| Ok((run.watch_input(&check_kernels)?, run)));
        match watched {
            Ok((watch, run)) => correctness_runs.push((input, data, run, watch)),
            Err(error) => return CheckOutcome::Crashed { detail: format!("on the {input} input: {error}") },
        }
    }
    let timed_runs = TimedRuns::new(
        &gpu,
        harness,
        [&kernels.submission.1, &kernels.reference, &starter],
        CHECKED_KERNELS,
        &timed_data.input,
        &check_kernels,
    )
    .and_then(|runs| Ok((runs, expectation.upload(&gpu)?)));
    let (mut timed_runs, verifier) = match timed_runs {
        Ok(prepared) => prepared,
        Err(error) => {
            return CheckOutcome::Crashed { detail: diagnostics::scrub(&format!("at the timed size: {error}")) };
        }
    };
    if let Err(why) = turn.take() {
        return CheckOutcome::CouldNotCheck { reason: format!("cannot take the GPU in turn: {why}") };
    }
    for (input, data, mut run, mut watch) in correctness_runs {
        // (Read, the output is zeroed: the memory may be the next check's, and no output stays.)
        let result = run.launch().and_then(|()| run.checked_output()).and_then(|output| {
            run.clear_output()?;
            // (A launch that changed its input: its output may be right, the next launch's not.)
            Ok(match run.changed_input(&mut watch)? {
                Some(what) => Err(what),
                None => output,
            })
        });
        // (Read first: a launch that placed an element outside the tile stopped with a trap.)
        let outside = match (&exercise.within, &record) {
            (Some(within), Some(record)) => within.outside(record),
            _ => None,
        };
        let kept = result.as_ref().map_or(Ok(None), |_| checked_lasting.changed(&gpu));
        match (outside, kept, result) {
            (Some(detail), ..) => return CheckOutcome::OutsideTheTile { detail },
            (_, Ok(Some(what)), _) => {
                return CheckOutcome::KeptMemory { detail: format!("the launch on the {input} input wrote {what}") };
            }
            (_, Err(error), _) | (.., Err(error)) => {
                return CheckOutcome::Crashed { detail: format!("on the {input} input: {error}{smaller_tile}") };
            }
            (.., Ok(Err(detail))) => return CheckOutcome::Incorrect { input, detail },
            (.., Ok(Ok(output))) => {
                if let Err(detail) = compare(&output, &harness.expected(&data, CheckSize::Check), exercise.tolerance) {
                    return CheckOutcome::Incorrect { input, detail };
                }
            }
        }
    }
    provisional(&CheckOutcome::CorrectUnmeasured { detail: "the check stopped before timing ended".into() });
    let timed = timed_runs.measure(&gpu, verifier, &timed_lasting).and_then(|times| {
        let shared_bytes = gpu.occupancy(&kernels.submission.1, harness.block_threads(), 0)?.shared_bytes_per_block;
        Ok((times, shared_bytes))
    });
    turn.end();
    let counters = Err(match needs_counters(exercise) {
        true => NOT_YET_PROFILED,
        false => NO_COUNTERS_NEEDED,
    }
    .to_owned());
    match timed {
        Ok(([submission_ms, reference_ms, starter_ms], shared_bytes)) => {
            CheckOutcome::Correct(Box::new(SubmissionMeasurements {
                counters,
                profile_failed: None,
                submission_ms,
                reference_ms,
                starter_ms,
                shared_bytes,
            }))
        }
        Err(TimingError::Incorrect { detail, .. }) => CheckOutcome::Incorrect { input: Input::Random, detail },
        Err(TimingError::Kept(detail)) => CheckOutcome::KeptMemory { detail },
        Err(TimingError::Gpu(error)) => {
            CheckOutcome::Crashed { detail: diagnostics::scrub(&format!("at the timed size: {error}")) }
        }
    }
}

/// The exercise's [`TimedData`], made by the first caller in this process (a check process makes
/// it while CUDA starts) and kept for the checks: a check process checks files of one exercise.
pub fn timed_data(exercise: &Exercise) -> Arc<TimedData> {
    static KEPT: Mutex<Option<(String, Arc<TimedData>)>> = Mutex::new(None);
    let mut kept = KEPT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    match &*kept {
        Some((id, data)) if *id == exercise.id => data.clone(),
        _ => {
            // The last exercise's data goes before this one's is made.
            *kept = None;
            let data = Arc::new(TimedData::new(&exercise.harness));
            *kept = Some((exercise.id.clone(), data.clone()));
            data
        }
    }
}

/// What a correct outcome's counters say until [`profile_submissions`] has measured them.
pub const NOT_YET_PROFILED: &str = "not profiled yet";
/// What they say where no requirement reads them.
const NO_COUNTERS_NEEDED: &str = "no requirement of this exercise needs them";

/// Whether a requirement of `exercise` reads Nsight Compute's counters.
pub fn needs_counters(exercise: &Exercise) -> bool {
    exercise.requirements.iter().any(|r| r.measure.needs_counters())
}

/// What a profile of one or more checked files came to (written as JSON by the profile command).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum Profiled {
    /// The reference's counters, and each file's in the order given.
    Measured { reference: SharedCounters, submissions: Vec<SharedCounters> },
    /// The profile failed. `reference_profiles`: the reference alone still profiled after it, so
    /// the failure was the submissions' (of the one, where one was profiled); else the counters
    /// cannot be read here and the clock stands in.
    Failed { reason: String, reference_profiles: bool },
}

/// The reference, then `files` submissions under Nsight Compute, in one session: one set-up of
/// the profiler for them all. `profile_with` restarts this program as the profile target of them
/// all ([`profile_target`]). ncu's messages name this program's path: scrubbed here.
pub fn profile_submissions(exercise: &Exercise, files: usize, profile_with: &SelfCommand) -> Profiled {
    let entry_counters = |launches: Launches| -> Result<Vec<SharedCounters>, String> {
        let ncu = Ncu::find().map_err(|e| e.to_string())?;
        let profiled =
            ncu.profile_totals(&launches.of(profile_with), &families(exercise)).map_err(|e| e.to_string())?;
        Ok(profiled.iter().filter(|l| l.kernel == exercise.entry).filter_map(|l| l.shared()).collect())
    };
    let failure = match entry_counters(Launches::All) {
        Ok(shared) if shared.len() == files + 1 => {
            return Profiled::Measured { reference: shared[0], submissions: shared[1..].to_vec() };
        }
        Ok(shared) => format!(
            "ncu reported {} launches of `{}`, expected {} (the reference, then each submission)",
            shared.len(),
            exercise.entry,
            files + 1
        ),
        Err(why) => why,
    };
    let reference_profiles = entry_counters(Launches::Reference).is_ok_and(|shared| shared.len() == 1);
    Profiled::Failed { reason: diagnostics::scrub(&failure), reference_profiles }
}

/// The kinds of instruction whose counters the requirements read (ncu collects loads' and
/// stores' always, the others when named).
fn families(exercise: &Exercise) -> Vec<SharedFamily> {
    exercise.requirements.iter().filter_map(|r| r.measure.family()).collect()
}

/// A profiled process's turns: the GPU's profiler, from ncu's set-up to the end of the profiled
/// launches, and within it the GPU itself, for those launches alone.
pub struct ProfileTurns<T: GpuTurn> {
    pub profiler: T,
    pub gpu: T,
}

impl ProfileTurns<LockTurn> {
    /// The turns of a profile whose folder is `work`, through the GPU's lock `gpu_lock` (none:
    /// every moment is its turn). Only the GPU's turn starts its time limit
    /// ([`GPU_TURN_MARKER`], not [`PROFILER_TURN_MARKER`]).
    pub fn through(gpu_lock: Option<&Path>, work: &Path) -> ProfileTurns<LockTurn> {
        ProfileTurns {
            profiler: LockTurn::new(gpu_lock.map(profiler_lock), work.join(PROFILER_TURN_MARKER)),
            gpu: LockTurn::new(gpu_lock.map(Path::to_owned), work.join(GPU_TURN_MARKER)),
        }
    }
}

/// The profiled side of [`profile_submissions`]: the reference, then each of `files`, launched
/// once each (or the reference alone, as `launches` says). ncu's set-up takes the GPU's profiler
/// in turn and leaves the GPU to the checks timing beside it; the launches take the GPU in turn too.
pub fn profile_target<T: GpuTurn>(
    manifest: &Manifest,
    exercise: &Exercise,
    files: &[LearnerFile],
    launches: Launches,
    turns: &ProfileTurns<T>,
) -> Result<(), String> {
    let gpu = Gpu::open().map_err(|e| e.to_string())?;
    let mut functions =
        vec![compile_file(&gpu, manifest, &exercise.solution, &exercise.entry).map_err(|e| e.to_string())?];
    let mut records = Vec::new();
    if launches == Launches::All {
        for entry in entry_functions(&gpu, exercise, files) {
            let (function, record) = entry?;
            functions.push(function);
            records.push(record);
        }
    }
    let launches = ProfiledLaunches::new(exercise);
    turns.profiler.take().map_err(|why| format!("cannot take the GPU's profiler in turn: {why}"))?;
    ncu::set_up_profiler(&gpu).map_err(|e| format!("setting Nsight Compute up: {e}"))?;
    turns.gpu.take().map_err(|why| format!("cannot take the GPU in turn: {why}"))?;
    for (index, function) in functions.iter().enumerate() {
        if let Err(detail) = launches.launch(&gpu, function)? {
            return Err(format!("launch {} of {} under Nsight Compute: {detail}", index + 1, functions.len()));
        }
    }
    // Profiled: the process's end (ncu writing its report) needs neither turn.
    turns.gpu.end();
    turns.profiler.end();
    Ok(())
}

/// The record `module`'s grader's wrapper points to, where the exercise checks its part's places
/// ([`crate::within::Within::record`]: every build's, which records or not).
pub(crate) fn record_of(gpu: &Gpu, exercise: &Exercise, module: &TextModule) -> Result<Option<HostWords>, GpuError> {
    exercise.within.as_ref().map(|_| crate::within::Within::record(gpu, module)).transpose()
}

/// Each of `files` compiled (on every CPU: NVRTC compiles one text on one thread, and a profile
/// holds up to 64), loaded, and its kernel: the exercise's entry, with the record its grader's
/// wrapper points to, as in the check's builds (kept as long as the kernel).
fn entry_functions(
    gpu: &Gpu,
    exercise: &Exercise,
    files: &[LearnerFile],
) -> Vec<Result<(CudaFunction, Option<HostWords>), String>> {
    let capability = gpu.info().compute_capability;
    let compiled: Vec<_> = files.par_iter().map(|file| submission_ptx(capability, exercise, file, false)).collect();
    compiled
        .into_iter()
        .map(|ptx| {
            let module = ptx.and_then(|ptx| load_for_the_block(gpu, exercise, ptx))?;
            Ok((module.function(&exercise.entry)?, record_of(gpu, exercise, &module)?))
        })
        .map(|entry: Result<_, GpuError>| entry.map_err(|e| e.to_string()))
        .collect()
}

/// The input and answer every profiled launch of an exercise is given and checked against.
struct ProfiledLaunches<'e> {
    exercise: &'e Exercise,
    data: HostInput,
    expected: Expected,
}

impl<'e> ProfiledLaunches<'e> {
    fn new(exercise: &'e Exercise) -> ProfiledLaunches<'e> {
        let data = exercise.harness.input(Input::Random, CheckSize::Check);
        let expected = exercise.harness.expected(&data, CheckSize::Check);
        ProfiledLaunches { exercise, data, expected }
    }

    /// Launches `function` once on buffers of its own, made for it and gone after it, and checks
    /// its guard and its output, then zeroes it: no kernel reaches another's input or answer, and
    /// the counters come from a launch that did the work (a kernel that acts otherwise when
    /// profiled fails here). The inner `Err` says what its output was; the outer, a CUDA error (the
    /// GPU is not clean after it).
    fn launch(&self, gpu: &Gpu, function: &CudaFunction) -> Result<Result<(), String>, String> {
        let harness = &self.exercise.harness;
        let mut run = Run::new(gpu, function, harness, CheckSize::Check, &self.data).map_err(|e| e.to_string())?;
        run.launch().map_err(|e| e.to_string())?;
        gpu.synchronize().map_err(|e| e.to_string())?;
        let output = run.checked_output().map_err(|e| e.to_string())?;
        // The reference's answer goes before the next file's launch, which could copy it.
        run.clear_output().map_err(|e| e.to_string())?;
        Ok(output.and_then(|output| compare(&output, &self.expected, self.exercise.tolerance)))
    }
}

/// What a profile session's target did with one file of a batch.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(tag = "launch", rename_all = "kebab-case")]
pub enum Launched {
    /// Launched, its output right: its counters are the next launch's in Nsight Compute's report.
    Checked,
    /// Launched, its output wrong under Nsight Compute (`detail`): its launch is in the report, its
    /// counters are not the work's.
    Wrong { detail: String },
    /// Not launched (it did not build here): no launch of it is in the report.
    NotLaunched { detail: String },
}

/// The target of a profile session ([`crate::protocol::Role::Profile`] with a folder): sets
/// Nsight Compute up once, then for each batch its folder `work` is given ([`BatchFiles`]), the
/// reference then each file, launched once each in one turn on the GPU (through `gpu_lock`), and
/// what each launch did written to the batch's `launched`; until the session's end is written.
/// `read` reads a copy of a learner's file. A CUDA error ends it (the GPU is not clean after it):
/// the grader profiles its batches apart.
pub fn serve_profile_session(
    manifest: &Manifest,
    exercise: &Exercise,
    work: &Path,
    gpu_lock: Option<&Path>,
    read: &dyn Fn(&Path) -> Result<LearnerFile, String>,
) -> Result<(), String> {
    let gpu = Gpu::open().map_err(|e| e.to_string())?;
    let reference = compile_file(&gpu, manifest, &exercise.solution, &exercise.entry).map_err(|e| e.to_string())?;
    let launches = ProfiledLaunches::new(exercise);
    let profiler = LockTurn::new(gpu_lock.map(profiler_lock), work.join(PROFILER_TURN_MARKER));
    profiler.take().map_err(|why| format!("cannot take the GPU's profiler in turn: {why}"))?;
    // Every module stays loaded to the session's end (see `set_up_profiler`).
    let mut loaded = vec![ncu::set_up_profiler(&gpu).map_err(|e| format!("setting Nsight Compute up: {e}"))?];
    let mut records = Vec::new();
    for number in 1.. {
        let batch = BatchFiles::of(work, number);
        let Some(count) = next_batch(&batch, &session_end(work))? else { break };
        let files = (0..count).map(|index| read(&batch.submission(index))).collect::<Result<Vec<_>, _>>()?;
        let compiled = entry_functions(&gpu, exercise, &files);
        let turn = LockTurn::new(gpu_lock.map(Path::to_owned), batch.turn_marker.clone());
        turn.take().map_err(|why| format!("cannot take the GPU in turn: {why}"))?;
        if let Err(detail) = launches.launch(&gpu, &reference)? {
            return Err(format!("the reference solution's launch under Nsight Compute: {detail}"));
        }
        let mut launched = Vec::with_capacity(count);
        for function in compiled {
            launched.push(match function {
                Err(detail) => Launched::NotLaunched { detail },
                Ok((function, record)) => {
                    let checked = launches.launch(&gpu, &function)?;
                    loaded.push(function);
                    records.push(record);
                    match checked {
                        Ok(()) => Launched::Checked,
                        Err(detail) => Launched::Wrong { detail },
                    }
                }
            });
        }
        turn.end();
        let text = serde_json::to_string(&launched).map_err(|e| e.to_string())?;
        write_whole(&batch.launched, &text).map_err(|e| format!("cannot write {}: {e}", batch.launched.display()))?;
    }
    profiler.end();
    Ok(())
}

/// How often a session's target looks for its next batch.
const BATCH_POLL: Duration = Duration::from_millis(2);

/// Waits for `batch` to be ready: the number of its files, or `None` once `end` is written.
fn next_batch(batch: &BatchFiles, end: &Path) -> Result<Option<usize>, String> {
    loop {
        if let Ok(text) = fs::read_to_string(&batch.ready) {
            return text.trim().parse().map(Some).map_err(|_| format!("{} says {text:?}", batch.ready.display()));
        }
        if end.exists() {
            return Ok(None);
        }
        std::thread::sleep(BATCH_POLL);
    }
}

/// A profile session under Nsight Compute: `target` ([`serve_profile_session`]) runs until the
/// session's end; then the counters of every launch of the exercise's kernel, in order (each
/// batch's reference, then its files launched).
pub fn profile_session(exercise: &Exercise, target: &SelfCommand) -> Result<Vec<SharedCounters>, String> {
    let ncu = Ncu::find().map_err(|e| e.to_string())?;
    let profiled = ncu.profile_totals(target, &families(exercise)).map_err(|e| diagnostics::scrub(&e.to_string()))?;
    Ok(profiled.iter().filter(|l| l.kernel == exercise.entry).filter_map(|l| l.shared()).collect())
}

/// Rounds of timing, each timing the three kernels one after the other, so that a drift of the
/// clock (boost, temperature) touches them alike; each gets the median of its rounds' medians.
const ROUNDS: usize = 3;
const PLAN: Plan = Plan { warmup: 2, reps: 7 };
/// The GPU runs the reference first until its time per launch is steady (the clocks have left
/// idle), for at most this long: a GPU just busy with another check is steady within milliseconds.
const WARM_UP_LIMIT: Duration = Duration::from_millis(200);

/// Why timing stopped: the GPU failed, or an output at the timed size was wrong (the
/// submission's, or the reference's or the starter's after the submission's launches), or the
/// submission wrote its lasting memory.
pub(crate) enum TimingError {
    Gpu(GpuError),
    /// Where and what was wrong, and whether the first kernel's own output or input was (else
    /// another's, which only the first can have written).
    Incorrect {
        detail: String,
        own: bool,
    },
    /// Which launch of the submission wrote what of its lasting memory.
    Kept(String),
}

/// How [`TimedRuns`]' messages name its three kernels: the first as what ran before the others
/// (`yours`), the others as whose buffers it wrote (`the starter's`).
pub(crate) struct KernelNames {
    pub first: &'static str,
    pub others: [&'static str; 2],
}

/// A check's kernels: the submission, the reference, the starter.
const CHECKED_KERNELS: KernelNames =
    KernelNames { first: "yours", others: ["the reference solution's", "the starter's"] };

impl KernelNames {
    /// Why `whose` input, found changed after a launch `at`, is the first kernel's fault.
    fn beside_input(&self, whose: &str, at: &str) -> String {
        format!(
            "{whose} input had changed {at}; that kernel leaves its input alone, so {}, which ran before it, wrote \
             into its buffers (every kernel must keep to its own input and output)",
            self.first
        )
    }

    /// Why `whose` output, wrong `at` a launch, is the first kernel's fault.
    fn beside(&self, whose: &str, at: &str) -> String {
        format!(
            "{whose} output {at}; that kernel is right alone, so {}, which ran before it, wrote into its buffers \
             (every kernel must keep to its own input and output)",
            self.first
        )
    }
}

impl From<GpuError> for TimingError {
    fn from(error: GpuError) -> TimingError {
        TimingError::Gpu(error)
    }
}

/// The submission, the reference and the starter, each with its buffers at the timed size on
/// the same input, ready to be timed side by side.
pub(crate) struct TimedRuns<'g> {
    runs: [Run<'g>; 3],
    /// Each run's input as it was before its first launch.
    inputs: [InputWatch; 3],
    names: KernelNames,
}

impl<'g> TimedRuns<'g> {
    pub(crate) fn new(
        gpu: &'g Gpu,
        harness: &Harness,
        [submission, reference, starter]: [&CudaFunction; 3],
        names: KernelNames,
        data: &HostInput,
        check_kernels: &CheckKernels,
    ) -> Result<TimedRuns<'g>, GpuError> {
        // The input crosses from the host once; the others' copies are made on the GPU.
        let submission = Run::new(gpu, submission, harness, CheckSize::Timed, data)?;
        let (reference, starter) = (submission.alongside(reference)?, submission.alongside(starter)?);
        let watch = submission.watch_input(check_kernels)?;
        let (reference_watch, starter_watch) = (watch.alongside(gpu)?, watch.alongside(gpu)?);
        let inputs = [watch, reference_watch, starter_watch];
        Ok(TimedRuns { runs: [submission, reference, starter], inputs, names })
    }

    /// (submission, reference, starter) median ms. Every launch starts from a zeroed output, and
    /// no other kernel's answer is on the GPU while the submission runs; after each, its output is
    /// compared with the CPU's answer by `verifier` (a sample of rows for a GEMM) and its guard
    /// checked, so a kernel that skips work when timed, or writes past `out`, is caught at the
    /// launch that did it; and after each of the submission's, its `lasting` memory is compared
    /// with what it was before any launch.
    pub(crate) fn measure(
        &mut self,
        gpu: &Gpu,
        mut verifier: Verifier<'_>,
        lasting: &LastingMemory<'_>,
    ) -> Result<[f64; 3], TimingError> {
        let reference = &mut self.runs[1];
        timing::warm_up(gpu, WARM_UP_LIMIT, || reference.launch())?;
        reference.clear_output()?;
        let one_launch = Plan { warmup: 0, reps: 1 };
        let mut medians = [(); 3].map(|()| Vec::with_capacity(ROUNDS));
        for round in 0..ROUNDS {
            let runs = self.runs.iter_mut().zip(&mut self.inputs);
            for (kernel, ((run, input), samples)) in runs.zip(&mut medians).enumerate() {
                let mut times = Vec::with_capacity(PLAN.reps);
                for launch in 0..PLAN.warmup + PLAN.reps {
                    let ms = timing::time(gpu, one_launch, || run.launch())?.median_ms;
                    if launch >= PLAN.warmup {
                        times.push(ms);
                    }
                    // Every kernel's output is checked, so that each waits alike between launches.
                    let at =
                        |what: &str| format!("at the timed size, launch {} of round {}{what}", launch + 1, round + 1);
                    // (Read after every kernel's launch, so that each waits alike: only the
                    // submission's own launches can change it.)
                    if let Some(what) = lasting.changed(gpu)? {
                        return Err(TimingError::Kept(at(&format!(" wrote {what}"))));
                    }
                    // (Every kernel's input is compared after each of its launches, so that each waits
                    // alike, and finds the caches alike: when only the submission's was, the same
                    // code ran 11% slower timed as the submission than timed beside it.)
                    let names = &self.names;
                    if let Some(what) = run.changed_input(input)? {
                        let detail = match kernel {
                            0 => at(&format!(": {what}")),
                            _ => names.beside_input(names.others[kernel - 1], &at("")),
                        };
                        return Err(TimingError::Incorrect { detail, own: kernel == 0 });
                    }
                    if let Err(detail) = verifier.verify(run)? {
                        let at = at(&format!(": {detail}"));
                        let detail = match kernel {
                            0 => at,
                            // The course's kernels are right alone (the GPU suite checks them): only
                            // a kernel that ran before, the submission's, can have written their buffers.
                            _ => names.beside(names.others[kernel - 1], &at),
                        };
                        return Err(TimingError::Incorrect { detail, own: kernel == 0 });
                    }
                    // Checked, the output is zeroed: no answer stays on the GPU for the next
                    // kernel to copy, and each launch starts from zeros.
                    run.clear_output()?;
                }
                samples.push(timing::Timing::from_samples(times).expect("reps").median_ms);
            }
        }
        Ok(medians.map(|samples| timing::Timing::from_samples(samples).expect("rounds").median_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profiles_time_limit_runs_from_its_turn_on_the_gpu_not_from_its_turn_on_the_profiler() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("gpu-lock");
        for file in [lock.clone(), profiler_lock(&lock)] {
            fs::write(file, "").unwrap();
        }
        let (profiler_marker, gpu_marker) = (dir.path().join(PROFILER_TURN_MARKER), dir.path().join(GPU_TURN_MARKER));
        // A check holds the GPU (one that never ends holds it up to the time limit).
        let check = LockTurn::new(Some(lock.clone()), dir.path().join("check-turn"));
        check.take().unwrap();
        let turns = ProfileTurns::through(Some(&lock), dir.path());
        turns.profiler.take().unwrap();
        assert!(!gpu_marker.exists(), "holding the profiler, its time limit has not started");
        assert!(profiler_marker.exists());
        let launches = std::thread::spawn(move || turns.gpu.take().map(|()| turns));
        std::thread::sleep(Duration::from_millis(300));
        assert!(!gpu_marker.exists(), "waiting behind the check, its time limit has not started");
        check.end();
        let turns = launches.join().unwrap().unwrap();
        assert!(gpu_marker.exists(), "its launches' turn starts it");
        turns.gpu.end();
        turns.profiler.end();
    }

    #[test]
    fn an_instruction_refused_after_compiling_is_told_by_the_learners_line() {
        let ptx = ".version 8.8\n.target sm_90\n.address_size 64\n\n.visible .entry k(\n\t.param .u32 k_param_0\n)\n{\n\
                   \t.reg .b32 \t%r<3>;\n\t.reg .b64 \t%rd<3>;\n\n\t.loc\t1 31 5\n\tld.param.u32 \t%r1, [k_param_0];\n\
                   \t.loc\t1 25 5, function_name $L__info_string1, inlined_at 1 39 5\n\tmul.wide.u32 \t%rd1, %r1, 4;\n\
                   \tadd.s64 \t%rd2, 0, %rd1;\n\tld.global.nc.u32 \t%r2, [%rd2];\n\tret;\n\n}\n\
                   \t.file\t1 \"/tmp/build/submission.cu\"\n";
        let Err(GpuError::Compile { log, .. }) = graded_ptx((9, 0), ptx) else { panic!("a null pointer's read") };
        let told = diagnostics::errors(&log, PROGRAM_NAME, "mine.cu");
        assert!(told[0].starts_with("mine.cu:25: error: the compiled code reads or writes at an address"), "{told:?}");
        // Code the learner's file did not hold (a header's, or none told) names no line.
        let elsewhere = ptx.replace("/tmp/build/submission.cu", "shared_load.cuh");
        let Err(GpuError::Compile { log, .. }) = graded_ptx((9, 0), &elsewhere) else { panic!("refused") };
        assert!(diagnostics::errors(&log, PROGRAM_NAME, "mine.cu")[0].starts_with("mine.cu: the compiled code"));
    }

    #[test]
    fn a_variable_the_compiled_code_writes_is_named_as_the_learner_wrote_it() {
        let ptx = ".version 8.8\n.target sm_90\n.address_size 64\n\n.global .align 4 .u32 seen;\n\n\
                   .visible .entry k(\n\t.param .u32 k_param_0\n)\n{\n\t.reg .b32 \t%r<2>;\n\n\
                   \tld.param.u32 \t%r1, [k_param_0];\n\t.loc\t1 21 5\n\tst.global.u32 \t[seen], %r1;\n\tret;\n\n}\n\
                   \t.file\t1 \"submission.cu\"\n";
        let Err(GpuError::Compile { log, .. }) = graded_ptx((9, 0), ptx) else { panic!("a variable written") };
        let messages = diagnostics::errors(&log, PROGRAM_NAME, "mine.cu");
        assert_eq!(messages.len(), 1);
        assert!(
            messages[0].starts_with("mine.cu:21: error: the compiled code writes `seen`, which lasts"),
            "{messages:?}"
        );
        // As NVRTC 13.0 names them.
        assert!(
            lasting(&variable_named("", "_ZZ13bcm_part_slotjjE1n"))
                .contains("writes `n`, a `static` variable of `slot`,")
        );
        assert_eq!(variable_named("", "_ZZ9column_atjjE5calls"), "`calls`, a `static` variable of `column_at`");
        assert_eq!(variable_named("", "_ZZ4slotILi3EEjjE4seen"), "`seen`, a `static` variable of `slot`");
        assert_eq!(variable_named("", "_ZZ4mainE5tEble_0"), "`tEble`, a `static` variable of `main`");
        assert_eq!(variable_named("", "_ZZN1a1bEvE1c"), "`c`, a function's `static` variable");
        assert_eq!(variable_named("", "_ZN6tables4hitsE"), "`tables::hits`");
        let unnamed =
            "_ZN44_INTERNAL_00000000_13_submission_cu_row_sums46_GLOBAL__N__00000000_13_submission_cu_row_sums6hiddenE";
        assert_eq!(variable_named("", unnamed), "`hidden`");
        assert_eq!(variable_named("", "_ZN5tableIiE4dataE"), "a variable the compiler names `_ZN5tableIiE4dataE`");
        assert_eq!(variable_named("", "_ZZ99xE"), "a function's `static` variable");
        assert_eq!(variable_named("", "seen"), "`seen`");
        assert_eq!(
            variable_named("", "_Z13bcm_part_slotjj$0"),
            "a copy the compiler made in `slot` of a variable whose address your code there takes"
        );
        assert_eq!(variable_named("", "$str$1"), "a string literal");
        // `__unnamed_1`: a string (assert's function name), or a temporary as NVRTC 13.0 declares it.
        let strings = ".global .align 1 .b8 __unnamed_1[4] = {109, 97, 105, 110};";
        assert_eq!(variable_named(strings, "__unnamed_1"), "a string literal");
        let temporary = variable_named(".global .align 4 .u32 __unnamed_1;", "__unnamed_1");
        assert!(temporary.starts_with("a temporary that a reference declared outside a function binds"), "{temporary}");
    }
}
