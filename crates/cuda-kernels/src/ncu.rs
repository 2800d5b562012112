//! Nsight Compute: runs a program under `ncu` and reads the exact shared-memory counters of each
//! kernel launch.
//!
//! The sass counters below count what each `LDS`/`STS` instruction really cost; the hardware
//! counters `l1tex__data_bank_conflicts_*` are not used because they over-count.

use std::{
    collections::BTreeMap,
    env,
    ffi::OsString,
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use serde::{Deserialize, Serialize};
use thiserror::Error;

pub const LOAD_WAVEFRONTS: &str = "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum";
pub const STORE_WAVEFRONTS: &str = "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum";
pub const LOAD_INSTRUCTIONS: &str = "smsp__sass_inst_executed_op_shared_ld.sum";
pub const STORE_INSTRUCTIONS: &str = "smsp__sass_inst_executed_op_shared_st.sum";
/// The four counters the course reads.
pub const SHARED_METRICS: [&str; 4] = [LOAD_WAVEFRONTS, LOAD_INSTRUCTIONS, STORE_WAVEFRONTS, STORE_INSTRUCTIONS];

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
}

/// The shared-memory counters of a launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedCounters {
    pub load_wavefronts: u64,
    pub load_instructions: u64,
    pub store_wavefronts: u64,
    pub store_instructions: u64,
}

impl SharedCounters {
    /// Wavefronts per load instruction, `None` when the kernel executed no shared load.
    pub fn load_wavefronts_per_request(&self) -> Option<f64> {
        per_request(self.load_wavefronts, self.load_instructions)
    }
    pub fn store_wavefronts_per_request(&self) -> Option<f64> {
        per_request(self.store_wavefronts, self.store_instructions)
    }
}

fn per_request(wavefronts: u64, instructions: u64) -> Option<f64> {
    (instructions > 0).then(|| wavefronts as f64 / instructions as f64)
}

impl KernelCounters {
    /// The four shared-memory counters, if this launch was profiled with [`SHARED_METRICS`].
    pub fn shared(&self) -> Option<SharedCounters> {
        let get = |name: &str| self.metrics.get(name).map(|v| *v as u64);
        Some(SharedCounters {
            load_wavefronts: get(LOAD_WAVEFRONTS)?,
            load_instructions: get(LOAD_INSTRUCTIONS)?,
            store_wavefronts: get(STORE_WAVEFRONTS)?,
            store_instructions: get(STORE_INSTRUCTIONS)?,
        })
    }
}

/// A usable `ncu` executable.
#[derive(Clone, Debug)]
pub struct Ncu {
    pub path: PathBuf,
}

impl Ncu {
    /// Looks for `ncu`: `$BCM_NCU`, then `PATH`, `$CUDA_HOME/bin`, `/usr/local/cuda/bin`.
    pub fn find() -> Result<Ncu, NcuUnavailable> {
        if let Some(path) = env::var_os(NCU_VAR) {
            return Ok(Ncu { path: path.into() });
        }
        let mut dirs: Vec<PathBuf> = env::var_os("PATH").map(|p| env::split_paths(&p).collect()).unwrap_or_default();
        if let Some(home) = env::var_os("CUDA_HOME") {
            dirs.push(Path::new(&home).join("bin"));
        }
        dirs.push("/usr/local/cuda/bin".into());
        dirs.into_iter()
            .map(|dir| dir.join("ncu"))
            .find(|path| path.is_file())
            .map(|path| Ncu { path })
            .ok_or(NcuUnavailable::NotFound)
    }

    /// Runs `program args` under ncu, collecting `metrics` for every kernel launch it makes.
    pub fn profile(
        &self,
        program: &Path,
        args: &[OsString],
        metrics: &[&str],
    ) -> Result<Vec<KernelCounters>, NcuUnavailable> {
        let log = env::temp_dir().join(format!("bank-conflicts-ncu-{}-{}.csv", std::process::id(), unique()));
        let output = Command::new(&self.path)
            .args(["--csv", "--print-units", "base", "--clock-control", "none", "--target-processes", "all"])
            .arg("--metrics")
            .arg(metrics.join(","))
            .arg("--log-file")
            .arg(&log)
            .arg(program)
            .args(args)
            .output()
            .map_err(|e| NcuUnavailable::Failed(format!("could not start {}: {e}", self.path.display())))?;
        let report = fs::read_to_string(&log).unwrap_or_default();
        let _ = fs::remove_file(&log);
        let all_output = format!(
            "{report}\n{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        if all_output.contains("ERR_NVGPUCTRPERM") {
            return Err(NcuUnavailable::NotPermitted);
        }
        if !output.status.success() {
            let tail: Vec<&str> = all_output.lines().filter(|l| !l.trim().is_empty()).rev().take(8).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            return Err(NcuUnavailable::Failed(format!("exit status {}:\n{}", output.status, tail.join("\n"))));
        }
        parse_csv(&report)
    }
}

fn unique() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0)
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
            });
        }
        let last = launches.last_mut().expect("pushed above");
        last.metrics.insert(record.get(metric).unwrap_or("").to_owned(), number);
    }
    Ok(launches)
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
        assert_eq!(launches[1].id, 1);
        assert!(launches[1].shared().is_none(), "only one of the four counters");
        assert!(parse_csv("no report").unwrap().is_empty());
    }

    #[test]
    fn missing_ncu_is_a_clear_error() {
        let ncu = Ncu { path: "/nonexistent/ncu".into() };
        let err = ncu.profile(Path::new("/bin/true"), &[], &SHARED_METRICS).unwrap_err();
        assert!(matches!(err, NcuUnavailable::Failed(ref m) if m.contains("could not start")), "{err}");
    }
}
