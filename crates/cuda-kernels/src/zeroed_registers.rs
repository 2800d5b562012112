//! Registers kept to one launch. A variable read before it is given a value on some path (a loop
//! that may not run, an `if` without an `else`) leaves the PTX reading a register no instruction
//! wrote there; the GPU's register then holds whatever it held (on the H200, in every thread, a
//! value other than 0, not the earlier launch's: `tests/gpu/ptx_reads.rs`), which nothing bounds
//! to this launch. [`at_each_entry`] gives every register a function declares the value 0 where the
//! function starts: the assembler drops each such write that a later one overwrites on every
//! path, so only the reads that needed one keep it.

use crate::ptx_text::{Statement, closes_a_body};

/// `ptx` with a write of 0 to each register each function's body declares before its first
/// instruction (where NVRTC declares them all), placed right after the declaration.
pub fn at_each_entry(ptx: &str) -> String {
    let mut out = String::with_capacity(ptx.len() * 2);
    let (mut depth, mut started) = (0usize, false);
    for line in ptx.split_inclusive('\n') {
        let text = line.trim_end_matches(['\n', '\r']);
        out.push_str(line);
        if depth == 1 && !started {
            match text.trim().strip_prefix(".reg") {
                Some(declared) => out.extend(zeroing(declared).map(|write| format!("\t{write}\n"))),
                None => started = Statement::parse(text).is_some(),
            }
        }
        if closes_a_body(text, &mut depth) {
            started = false;
        }
    }
    out
}

/// A write of 0 to each register `declared` declares (`.b32 \t%r<3>;` declares `%r0` to `%r2`),
/// none for a type without one here (PTX's `.b128`, written only by the instructions that use it).
fn zeroing(declared: &str) -> impl Iterator<Item = String> {
    let mut words = declared.trim().trim_end_matches(';').split([' ', '\t', ',']).filter(|w| !w.is_empty());
    let kind = words.next().unwrap_or_default();
    let bits =
        kind.trim_start_matches(['.', 'b', 'u', 's', 'f']).parse::<u32>().ok().filter(|b| [16, 32, 64].contains(b));
    let write = move |register: String| match (kind, bits) {
        (".pred", _) => Some(format!("setp.ne.b32 \t{register}, 0, 0;")),
        (_, Some(bits)) => Some(format!("mov.b{bits} \t{register}, 0;")),
        _ => None,
    };
    words
        .flat_map(|word| match word.split_once('<') {
            Some((prefix, count)) => {
                let count: u32 = count.trim_end_matches('>').parse().unwrap_or(0);
                (0..count).map(|n| format!("{prefix}{n}")).collect::<Vec<_>>()
            }
            None => vec![word.to_owned()],
        })
        .filter_map(write)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KERNEL: &str = "\
.visible .entry k(
\t.param .u64 k_param_0
)
{
\t.local .align 4 .b8 \t__local_depot0[8];
\t.reg .pred \t%p<2>;
\t.reg .b16 \t%rs<2>;
\t.reg .b32 \t%r<3>;
\t.reg .f32 \t%f<2>;
\t.reg .b64 \t%SP, %rd<2>;
\t.loc\t1 3 0

\tld.param.u64 \t%rd1, [k_param_0];
\t{ // callseq 0, 0
\t.reg .b32 temp_param_reg;
\t}
$L__BB0_2:
\t.reg .b32 \t%late;
\tret;

}
.func f()
{
\t.reg .b128 \t%q<2>;
\t.reg .f64 \t%fd<2>;
\tret;
}
";

    #[test]
    fn each_register_a_body_declares_before_its_first_instruction_is_given_zero_after_its_declaration() {
        let zeroed = at_each_entry(KERNEL);
        let expected = KERNEL
            .replace(
                "\t.reg .pred \t%p<2>;\n",
                "\t.reg .pred \t%p<2>;\n\tsetp.ne.b32 \t%p0, 0, 0;\n\tsetp.ne.b32 \t%p1, 0, 0;\n",
            )
            .replace("\t.reg .b16 \t%rs<2>;\n", "\t.reg .b16 \t%rs<2>;\n\tmov.b16 \t%rs0, 0;\n\tmov.b16 \t%rs1, 0;\n")
            .replace(
                "\t.reg .b32 \t%r<3>;\n",
                "\t.reg .b32 \t%r<3>;\n\tmov.b32 \t%r0, 0;\n\tmov.b32 \t%r1, 0;\n\tmov.b32 \t%r2, 0;\n",
            )
            .replace("\t.reg .f32 \t%f<2>;\n", "\t.reg .f32 \t%f<2>;\n\tmov.b32 \t%f0, 0;\n\tmov.b32 \t%f1, 0;\n")
            .replace(
                "\t.reg .b64 \t%SP, %rd<2>;\n",
                "\t.reg .b64 \t%SP, %rd<2>;\n\tmov.b64 \t%SP, 0;\n\tmov.b64 \t%rd0, 0;\n\tmov.b64 \t%rd1, 0;\n",
            )
            .replace("\t.reg .f64 \t%fd<2>;\n", "\t.reg .f64 \t%fd<2>;\n\tmov.b64 \t%fd0, 0;\n\tmov.b64 \t%fd1, 0;\n");
        // Not those of a nested block, those declared after an instruction, or a `.b128`'s.
        assert_eq!(zeroed, expected);
    }
}
