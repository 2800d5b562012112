//! NVRTC: CUDA C++ text to PTX. CPU work alone, so texts may compile on several threads at once;
//! the last few texts a process compiled are not compiled again.

use std::sync::Mutex;

use cudarc::nvrtc::{CompileError, CompileOptions, compile_ptx_with_opts};

use crate::GpuError;

/// The PTX of `text` for GPUs of `compute_capability` (`(9, 0)`): `file` names the source in
/// errors, `name` in NVRTC's messages and the PTX's line table.
pub fn ptx(compute_capability: (i32, i32), file: &str, name: &str, text: &str) -> Result<String, GpuError> {
    let (major, minor) = compute_capability;
    let options = CompileOptions {
        options: vec![format!("--gpu-architecture=compute_{major}{minor}"), "-std=c++17".into(), "-lineinfo".into()],
        name: Some(name.to_owned()),
        ..Default::default()
    };
    if let Some(ptx) = recent(&options, text) {
        return Ok(ptx);
    }
    let ptx = compile_ptx_with_opts(text, options.clone())
        .map_err(|e| GpuError::Compile {
            file: file.to_owned(),
            arch: sm_name(compute_capability),
            log: match e {
                CompileError::CompileError { log, .. } => log.to_string_lossy().into_owned(),
                other => other.to_string(),
            },
        })?
        .to_src();
    keep(options, text, &ptx);
    Ok(ptx)
}

/// The name of GPUs of `compute_capability` in NVIDIA's tools: `sm_90`.
pub fn sm_name((major, minor): (i32, i32)) -> String {
    format!("sm_{major}{minor}")
}

/// The last [`KEPT`] texts compiled in this process, the most recently used last: a process that
/// checks many files compiles the same reference, starter and comparison kernel for each, and
/// NVRTC takes tens of milliseconds every time.
static RECENT: Mutex<Vec<Compiled>> = Mutex::new(Vec::new());
const KEPT: usize = 8;

struct Compiled {
    /// NVRTC's options (the architecture, the program's name) and the text, compared whole.
    options: CompileOptions,
    text: String,
    ptx: String,
}

fn recent(options: &CompileOptions, text: &str) -> Option<String> {
    let mut recent = RECENT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let at = recent.iter().position(|c| same_options(&c.options, options) && c.text == text)?;
    let hit = recent.remove(at);
    let ptx = hit.ptx.clone();
    recent.push(hit);
    Some(ptx)
}

fn keep(options: CompileOptions, text: &str, ptx: &str) {
    let mut recent = RECENT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if recent.len() == KEPT {
        recent.remove(0);
    }
    recent.push(Compiled { options, text: text.to_owned(), ptx: ptx.to_owned() });
}

/// The options [`ptx`] sets.
fn same_options(a: &CompileOptions, b: &CompileOptions) -> bool {
    a.options == b.options && a.name == b.name
}
