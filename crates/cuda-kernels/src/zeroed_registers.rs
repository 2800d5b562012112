//! Registers kept to one launch, and the arguments and results calls pass in them. A variable
//! read before it is given a value on some path (a loop that may not run, an `if` without an
//! `else`) leaves the PTX reading a register no instruction wrote there; the GPU's register then
//! holds whatever it held (on the H200, in every thread, a value other than 0, not the earlier
//! launch's: `tests/gpu/ptx_reads.rs`), which nothing bounds to this launch; so does a function
//! that does not inline and leaves its result unwritten, or a caller part of an argument (the
//! other side then reads a register of theirs: `blockIdx.x`, seen in the SASS). [`at_each_entry`]
//! gives every register a function declares the value 0 where the function starts, and every
//! argument and result 0 before it is written: the assembler drops each such write that a later
//! one overwrites on every path, so only the reads that needed one keep it.

use crate::ptx_text::{Statement, Variable, closes_a_body, widest_store, zero_stores};

/// `ptx` with a write of 0 to each register each function's body declares before its first
/// instruction (where NVRTC declares them all), placed right after the declaration; to each
/// argument a call passes, right after its parameter is declared; and to a function's result
/// where its body starts. (The assembler passes arguments and results in registers: one the
/// caller or the function leaves unwritten is a register neither wrote.)
pub fn at_each_entry(ptx: &str) -> String {
    let mut out = String::with_capacity(ptx.len() * 2);
    let (mut depth, mut started, mut result) = (0usize, false, None);
    for line in ptx.split_inclusive('\n') {
        let text = line.trim_end_matches(['\n', '\r']);
        out.push_str(line);
        let declared = text.trim().strip_prefix(".param").and_then(Parameter::parse);
        match depth {
            // A function's header: its result, if it has one, until its body or its declaration's end.
            0 if text.trim() == "{" => out.extend(result.take().map(|result: Parameter| result.zeroing())),
            0 if text.trim_end().ends_with(';') => result = None,
            0 => {
                result = result
                    .or(text.split_once("(.param").and_then(|(_, after)| Parameter::parse(after.split(')').next()?)))
            }
            _ => {}
        }
        if depth >= 1 && declared.as_ref().is_some_and(|d| d.name.starts_with("param")) {
            out.extend(declared.map(|argument| argument.zeroing()));
        }
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

/// A parameter a call passes or a function returns: `.param .b32 param0`,
/// `.param .align 4 .b8 param0[128]`, `.param .b64 func_retval0`.
struct Parameter {
    name: String,
    bytes: u64,
    align: u64,
}

impl Parameter {
    fn parse(declared: &str) -> Option<Parameter> {
        let variable = Variable::parse(declared)?;
        Some(Parameter {
            align: variable.align.unwrap_or(variable.bits / 8),
            bytes: variable.bytes,
            name: variable.name,
        })
    }

    /// Stores of 0 over the whole parameter, as wide as its alignment and size allow.
    fn zeroing(&self) -> String {
        let width = widest_store(&[8, 4, 2, 1], self.align, self.bytes);
        let register = if width == 8 {
            ".b64"
        } else if width == 4 {
            ".b32"
        } else {
            ".b16"
        };
        let stores: String = (0..self.bytes / width)
            .map(|i| format!("\tst.param.b{} \t[{}+{}], %bcm_zero;\n", width * 8, self.name, i * width))
            .collect();
        zero_stores(register, &stores)
    }
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

    #[test]
    fn each_argument_a_call_passes_and_each_functions_result_are_given_zero_before_they_are_written() {
        let ptx = "\
.extern .func  (.param .b32 func_retval0) vprintf
(
\t.param .b64 vprintf_param_0
)
;
.func  (.param .align 8 .b8 func_retval0[12]) f(
\t.param .align 4 .b8 f_param_0[8]
)
{
\tret;
}
.visible .entry k()
{
\t{ // callseq 0, 0
\t.param .align 4 .b8 param0[8];
\tst.param.b32 \t[param0+0], %r1;
\t.param .b64 param1;
\t.param .b32 retval0;
\tcall.uni (retval0), f, (param0, param1);
\t} // callseq 0
\tret;
}
";
        let zeroed = at_each_entry(ptx);
        let zero = |register: &str, stores: &[&str]| {
            let stores: String = stores.iter().map(|store| format!("\t{store}, %bcm_zero;\n")).collect();
            format!("\t{{\n\t.reg {register} \t%bcm_zero;\n\tmov{register} \t%bcm_zero, 0;\n{stores}\t}}\n")
        };
        let expected = ptx
            .replace(
                ") f(\n\t.param .align 4 .b8 f_param_0[8]\n)\n{\n",
                &format!(
                    ") f(\n\t.param .align 4 .b8 f_param_0[8]\n)\n{{\n{}",
                    zero(
                        ".b32",
                        &[
                            "st.param.b32 \t[func_retval0+0]",
                            "st.param.b32 \t[func_retval0+4]",
                            "st.param.b32 \t[func_retval0+8]"
                        ]
                    )
                ),
            )
            .replace(
                "\t.param .align 4 .b8 param0[8];\n",
                &format!(
                    "\t.param .align 4 .b8 param0[8];\n{}",
                    zero(".b32", &["st.param.b32 \t[param0+0]", "st.param.b32 \t[param0+4]"])
                ),
            )
            .replace(
                "\t.param .b64 param1;\n",
                &format!("\t.param .b64 param1;\n{}", zero(".b64", &["st.param.b64 \t[param1+0]"])),
            );
        // Not `vprintf`'s result (it has no body here), a function's own parameters, or a call's result.
        assert_eq!(zeroed, expected);
    }
}
