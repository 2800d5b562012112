//! The special registers a module's code reads beyond its launch's shape, read from its PTX. A
//! kernel whose work depends only on its inputs and on its launch's shape (thread and block
//! indices and counts, the lane) does the same in every launch of that shape; one that reads a
//! clock, a performance monitor or where it runs can act otherwise in the launch a profiler
//! watches. The PTX is where every C++ spelling of such a read ends up.

use std::collections::BTreeSet;

use crate::ptx_text::{instruction, words};

/// The special registers of a launch's shape: the same in every launch of that shape.
const LAUNCH_SHAPE: &[&str] = &[
    "%tid",
    "%ntid",
    "%ctaid",
    "%nctaid",
    "%laneid",
    "%lanemask_eq",
    "%lanemask_le",
    "%lanemask_lt",
    "%lanemask_ge",
    "%lanemask_gt",
    "%is_explicit_cluster",
    "%clusterid",
    "%nclusterid",
    "%cluster_ctaid",
    "%cluster_nctaid",
    "%cluster_ctarank",
    "%cluster_nctarank",
];

/// The instructions that reach a texture or surface by its handle, a number no launch is given:
/// what one reads or writes is the process's, not the kernel's inputs (`tex1Dfetch<unsigned>(7, i)`).
pub(crate) const BY_HANDLE: &[&str] = &["tex", "tld4", "txq", "suld", "sust", "sured", "suq"];

/// The special registers `ptx`'s instructions read that are not of the launch's shape (`%clock64`,
/// `%pm0`, `%smid`, ...), `pmevent` if it signals the performance monitors, and the instructions
/// that reach a texture or surface by its handle ([`BY_HANDLE`]), in the order first met.
pub fn beyond_the_launch(ptx: &str) -> Vec<String> {
    let declared = Declared::new(ptx);
    let mut found: Vec<String> = Vec::new();
    for (op, operands) in ptx.lines().filter_map(instruction) {
        let special = operands
            .iter()
            .flat_map(|operand| words(operand))
            .filter(|word| word.starts_with('%') && !declared.holds(word) && !LAUNCH_SHAPE.contains(word));
        let signal = op.starts_with("pmevent").then_some("pmevent");
        let kind = op.split('.').next().unwrap_or_default();
        let by_handle = BY_HANDLE.contains(&kind).then_some(kind);
        for name in special.chain(signal).chain(by_handle) {
            if !found.iter().any(|f| f == name) {
                found.push(name.to_owned());
            }
        }
    }
    found
}

/// What a special register [`beyond_the_launch`] found tells, in words.
pub fn what_it_reads(name: &str) -> &'static str {
    let name = name.trim_start_matches('%');
    if name.starts_with("clock") || name.starts_with("globaltimer") {
        "a clock"
    } else if name == "pmevent" {
        "it signals the performance monitors a profiler reads"
    } else if BY_HANDLE.contains(&name) {
        "a texture or surface by a handle no launch is given: memory of the process, not the kernel's input"
    } else if name.starts_with("pm") {
        "a performance monitor, which a profiler programs"
    } else if ["smid", "nsmid", "warpid", "nwarpid"].contains(&name) {
        "where the warp runs on the GPU"
    } else if name == "gridid" {
        "which launch it is"
    } else if name.starts_with("envreg") {
        "a register the driver sets"
    } else if name.contains("smem") {
        "the shared memory the launch was given"
    } else {
        "a special register"
    }
}

/// The registers a module declares (`.reg .b32 %r<61>;` declares `%r0` to `%r60`).
struct Declared<'p> {
    names: BTreeSet<&'p str>,
    numbered: BTreeSet<&'p str>,
}

impl<'p> Declared<'p> {
    fn new(ptx: &'p str) -> Declared<'p> {
        let (mut names, mut numbered) = (BTreeSet::new(), BTreeSet::new());
        // Inline assembly declares its own in braces: `{ .reg .pred %p; ... }`.
        let declarations = ptx.split(['{', '}', ';']).filter_map(|text| text.trim().strip_prefix(".reg"));
        for declaration in declarations {
            for name in declaration.split([',', ' ', '\t']).filter(|word| word.starts_with('%')) {
                match name.split_once('<') {
                    Some((prefix, _)) => numbered.insert(prefix),
                    None => names.insert(name),
                };
            }
        }
        Declared { names, numbered }
    }

    fn holds(&self, word: &str) -> bool {
        self.names.contains(word) || self.numbered.contains(word.trim_end_matches(|c: char| c.is_ascii_digit()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KERNEL: &str = "\
.visible .entry k(
\t.param .u64 k_param_0
)
{
\t.reg .pred \t%p<3>;
\t.reg .b32 \t%r<9>;
\t.reg .b64 \t%rd<9>;
\tmov.u32 \t%r1, %tid.x;
\tmov.u32 \t%r2, %ctaid.x;
\tmov.u32 \t%r3, %ntid.x;
\tmad.lo.s32 \t%r4, %r2, %r3, %r1;
\tmov.u32 \t%r5, %nctaid.y;
\t{
\t.reg .pred %p;
\t.reg .b32 %lane;
\tmov.u32 %lane, %laneid;
\tsetp.ne.u32 %p, %lane, 0;
\t}
\t@%p1 bra \t$L__BB0_2;
\tret;
}
";

    #[test]
    fn the_launchs_shape_and_declared_registers_are_not_reported() {
        assert_eq!(beyond_the_launch(KERNEL), Vec::<String>::new());
    }

    #[test]
    fn clocks_monitors_and_where_the_warp_runs_are_reported_once_each() {
        let reads = KERNEL.replace(
            "\tret;",
            "\tmov.u64 \t%rd1, %clock64;\n\tmov.u32 \t%r6, %pm0;\n\tmov.u32 \t%r7, %smid;\n\t\
             mov.u64 \t%rd2, %globaltimer;\n\tmov.u32 \t%r8, %pm0;\n\t@%p2 pmevent \t3;\n\tret;",
        );
        assert_eq!(beyond_the_launch(&reads), ["%clock64", "%pm0", "%smid", "%globaltimer", "pmevent"]);
        // A texture's or surface's handle is a number no launch is given (`tex1Dfetch<unsigned>(7, i)`).
        let by_handle = KERNEL.replace(
            "\tret;",
            "\ttex.1d.v4.u32.s32 \t{%r1, %r2, %r3, %r4}, [%rd1, {%r5}];\n\tsuld.b.1d.b32.trap \t{%r6}, [%rd1, {%r5}];\n\tret;",
        );
        assert_eq!(beyond_the_launch(&by_handle), ["tex", "suld"]);
        assert!(what_it_reads("suld").contains("handle"));
        let told: Vec<&str> = beyond_the_launch(&reads).iter().map(|name| what_it_reads(name)).collect();
        assert_eq!(
            told,
            [
                "a clock",
                "a performance monitor, which a profiler programs",
                "where the warp runs on the GPU",
                "a clock",
                "it signals the performance monitors a profiler reads"
            ]
        );
    }

    #[test]
    fn a_register_named_like_a_special_one_but_declared_is_a_register() {
        let declared = KERNEL.replace("\t.reg .b32 %lane;", "\t.reg .b32 %lane, %pm;\n\tmov.u32 %pm, %gridid;");
        assert_eq!(beyond_the_launch(&declared), ["%gridid"]);
        let undeclared = KERNEL.replace("%r<9>", "%q<9>");
        assert_eq!(beyond_the_launch(&undeclared).first().map(String::as_str), Some("%r1"));
    }
}
