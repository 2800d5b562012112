//! The machine code of a kernel, where the CUDA toolkit's `nvcc` and `cuobjdump` are installed:
//! the same source the course compiles with NVRTC, built for the same architecture, and its
//! shared-memory instructions counted by opcode (`LDS`, `LDS.128`, `STS`, ...).

use std::{
    collections::BTreeMap,
    env, fs,
    path::{Path, PathBuf},
    process::Command,
};

use crate::source;

/// Finds a CUDA tool on `PATH`, in `$CUDA_HOME/bin` or `/usr/local/cuda/bin`.
fn tool(name: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = env::var_os("PATH").map(|p| env::split_paths(&p).collect()).unwrap_or_default();
    if let Some(home) = env::var_os("CUDA_HOME") {
        dirs.push(Path::new(&home).join("bin"));
    }
    dirs.push("/usr/local/cuda/bin".into());
    dirs.into_iter().map(|dir| dir.join(name)).find(|path| path.is_file())
}

/// Shared-memory instructions of `kernel` in `kernels/FILE`, compiled for `arch` (e.g. `sm_90`),
/// counted by opcode. `Err` says why the SASS could not be read.
pub fn shared_instructions(file: &str, kernel: &str, arch: &str) -> Result<BTreeMap<String, usize>, String> {
    let nvcc = tool("nvcc").ok_or("nvcc not found (SASS needs the CUDA toolkit)")?;
    let cuobjdump = tool("cuobjdump").ok_or("cuobjdump not found")?;
    let source = source::load_for_compile(file).map_err(|m| format!("kernel file {} not found", m.file))?;
    let dir = env::temp_dir().join(format!("bank-conflicts-sass-{}", std::process::id()));
    fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let (cu, cubin) = (dir.join(file), dir.join("kernel.cubin"));
    fs::write(&cu, &source.text).map_err(|e| e.to_string())?;
    let built = Command::new(nvcc).arg("-cubin").arg(format!("-arch={arch}")).arg("-o").arg(&cubin).arg(&cu).output();
    let result = match built {
        Err(e) => Err(format!("could not run nvcc: {e}")),
        Ok(out) if !out.status.success() => Err(format!("nvcc failed: {}", String::from_utf8_lossy(&out.stderr))),
        Ok(_) => match Command::new(cuobjdump).args(["-sass", "-fun", kernel]).arg(&cubin).output() {
            Err(e) => Err(format!("could not run cuobjdump: {e}")),
            Ok(out) if !out.status.success() => {
                Err(format!("cuobjdump failed: {}", String::from_utf8_lossy(&out.stderr)))
            }
            Ok(out) => Ok(count_shared(&String::from_utf8_lossy(&out.stdout))),
        },
    };
    let _ = fs::remove_dir_all(&dir);
    result
}

/// Counts `LDS*` and `STS*` opcodes in `cuobjdump -sass` output.
pub fn count_shared(sass: &str) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for line in sass.lines() {
        // e.g. `        /*0150*/                   LDS.128 R4, [R2+0x10] ;`
        let Some(code) = line.split("*/").nth(1) else { continue };
        let opcode = code.split_whitespace().find(|token| !token.starts_with('@')).unwrap_or("");
        if opcode.starts_with("LDS") || opcode.starts_with("STS") {
            *counts.entry(opcode.to_owned()).or_insert(0) += 1;
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_shared_opcodes_including_predicated_ones() {
        let sass = "        /*0100*/                   LDS.128 R8, [R3] ;                 /* 0x... */\n\
                    \x20       /*0110*/                   LDS R9, [R4+0x80] ;\n\
                    \x20       /*0120*/              @!P0 STS [R5], R6 ;\n\
                    \x20       /*0130*/                   FFMA R1, R2, R3, R1 ;\n\
                    \x20       /*0140*/                   LDS.128 R12, [R3+0x10] ;\n";
        let counts = count_shared(sass);
        assert_eq!(counts.get("LDS.128"), Some(&2));
        assert_eq!(counts.get("LDS"), Some(&1));
        assert_eq!(counts.get("STS"), Some(&1));
        assert_eq!(counts.len(), 3);
    }
}
