//! Where in the compiled source an instruction of a module's PTX came from: NVRTC is given
//! `-lineinfo`, so a `.loc FILE LINE COLUMN` directive goes before each run of instructions of one
//! source line (for code a function inlined, the line of that function's code), and `.file FILE
//! "name"` names each file. A message about an instruction can then name the learner's line.

use std::collections::BTreeMap;

use crate::ptx_text::{Statement, bodies, instructions};

/// The name of the file (as `.file` gives it) and the line that the first instruction of body
/// `body` of `ptx` (its place among them, as `ptx_text::bodies` counts them) that is `instruction`
/// (`st.global.u32 [%rd6], %r1;`, spaced in any way) came from.
pub fn source_line<'p>(ptx: &'p str, body: usize, instruction: &str) -> Option<(&'p str, u32)> {
    let wanted = Statement::parse(instruction)?;
    let same = |found: &Statement| found.op == wanted.op && found.operands == wanted.operands;
    let files: BTreeMap<&str, &str> = ptx
        .lines()
        .filter_map(|line| {
            let (index, name) = line.trim().strip_prefix(".file")?.trim().split_once(char::is_whitespace)?;
            Some((index, name.split('"').nth(1)?))
        })
        .collect();
    let mut at = None;
    for line in bodies(ptx).get(body)?.lines() {
        if let Some(location) = line.trim().strip_prefix(".loc") {
            let mut words = location.split(|c: char| c.is_whitespace() || c == ',').filter(|w| !w.is_empty());
            at = words.next().zip(words.next().and_then(|line| line.parse::<u32>().ok()));
        } else if instructions(line).iter().any(same) {
            let (file, line) = at?;
            return Some((files.get(file)?, line));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = ".visible .entry k()\n{\n\t.loc\t1 29 0\n\tld.param.u64 \t%rd1, [k_param_0];\n\
                       \t.loc\t1 25 5, function_name $L__info_string1, inlined_at 1 39 5\n\
                       \tadd.s64 \t%rd8, 0, %rd7;\n\tld.global.nc.u32 \t%r14, [%rd8];\n\tret;\n}\n\
                       \t.file\t1 \"/home/grader/submission.cu\"\n\t.file\t2 \"shared_load.cuh\"\n";

    #[test]
    fn an_instruction_is_told_the_line_of_the_loc_before_it() {
        let file = "/home/grader/submission.cu";
        assert_eq!(source_line(PTX, 0, "ld.global.nc.u32 %r14, [%rd8];"), Some((file, 25)));
        assert_eq!(source_line(PTX, 0, "ld.param.u64 %rd1, [k_param_0]"), Some((file, 29)));
        assert_eq!(source_line(PTX, 0, "st.global.u32 [%rd8], %r14;"), None);
        assert_eq!(source_line(&PTX.replace("\t.loc\t1 29 0\n", ""), 0, "ld.param.u64 %rd1, [k_param_0];"), None);
        // The same instruction in a function before: the line of the one in the body told.
        let helper = ".func h()\n{\n\t.loc\t1 7 0\n\tld.global.nc.u32 \t%r14, [%rd8];\n\tret;\n}\n";
        let both = format!("{helper}{PTX}");
        assert_eq!(source_line(&both, 0, "ld.global.nc.u32 %r14, [%rd8];"), Some((file, 7)));
        assert_eq!(source_line(&both, 1, "ld.global.nc.u32 %r14, [%rd8];"), Some((file, 25)));
        assert_eq!(source_line(&both, 2, "ld.global.nc.u32 %r14, [%rd8];"), None);
    }
}
