//! The `__global__` functions a source file defines, read without a compiler: written out, or made
//! by a function-like macro invoked at the start of a line (`WIDE(8, uint2)` with
//! `void wide_load_##BYTES(` in its body). Enough for the course's own kernel files, so that a
//! lesson naming a kernel its file lacks fails without a GPU.

/// The kernels `text` defines, in the order they appear.
pub fn kernel_names(text: &str) -> Vec<String> {
    let joined = text.replace("\\\r\n", " ").replace("\\\n", " ");
    let mut macros: Vec<(String, Vec<String>, String)> = Vec::new();
    let mut expanded = String::new();
    for line in joined.lines().map(str::trim) {
        if let Some(definition) = line.strip_prefix("#define ") {
            if let Some((head, body)) = definition.split_once(')')
                && let Some((name, params)) = head.split_once('(')
                && is_identifier(name)
            {
                let params = params.split(',').map(|p| p.trim().to_owned()).collect();
                macros.push((name.to_owned(), params, body.to_owned()));
            }
            continue;
        }
        let invoked = line.split_once('(').and_then(|(name, rest)| {
            let (_, params, body) = macros.iter().find(|(macro_name, ..)| macro_name == name.trim())?;
            let args: Vec<&str> = rest.rsplit_once(')')?.0.split(',').map(str::trim).collect();
            Some(substitute(body, params, &args))
        });
        expanded.push_str(invoked.as_deref().unwrap_or(line));
        expanded.push('\n');
    }
    defined_kernels(&expanded)
}

/// `body` with each parameter token replaced by its argument and `##` pasted.
fn substitute(body: &str, params: &[String], args: &[&str]) -> String {
    let mut out = String::new();
    let mut token = String::new();
    let flush = |token: &mut String, out: &mut String| {
        let replaced = params.iter().position(|p| p == token).and_then(|i| args.get(i)).copied();
        out.push_str(replaced.unwrap_or(token));
        token.clear();
    };
    for c in body.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            token.push(c);
        } else {
            flush(&mut token, &mut out);
            out.push(c);
        }
    }
    flush(&mut token, &mut out);
    out.split("##").map(str::trim).collect::<Vec<_>>().join("")
}

/// Names after `__global__ void` (and any `__launch_bounds__(...)`), wherever the lines break.
fn defined_kernels(text: &str) -> Vec<String> {
    text.split("__global__")
        .skip(1)
        .filter_map(|rest| {
            let mut after_void = rest.trim_start().strip_prefix("void")?.trim_start();
            if let Some(bounds) = after_void.strip_prefix("__launch_bounds__") {
                after_void = bounds.split_once(')')?.1.trim_start();
            }
            let name: String = after_void.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            (!name.is_empty() && after_void[name.len()..].trim_start().starts_with('(')).then_some(name)
        })
        .collect()
}

fn is_identifier(text: &str) -> bool {
    !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_written_out_and_made_by_macros() {
        let source = "extern \"C\" __global__ void plain(int* out) {}\n\
            #define WIDE(BYTES, TYPE) \\\n    extern \"C\" __global__ void wide_load_##BYTES(TYPE* a) {} \\\n    \
            extern \"C\" __global__ void wide_store_##BYTES(TYPE* a) {}\n\
            #define NAMED(NAME, TYPE) extern \"C\" __global__ void NAME(TYPE* a) {}\n\
            WIDE(8, uint2)\nNAMED(column_read_4, unsigned)\n__device__ void helper() {}\n\
            extern \"C\" __global__ void __launch_bounds__(256)\nbounded(float* c) {}\n";
        assert_eq!(kernel_names(source), ["plain", "wide_load_8", "wide_store_8", "column_read_4", "bounded"]);
    }

    #[test]
    fn every_course_kernel_file_defines_kernels() {
        for file in crate::source::embedded_files().filter(|f| f.ends_with(".cu")) {
            let text = crate::source::embedded(file).unwrap();
            assert!(!kernel_names(text).is_empty(), "{file}");
        }
    }
}
