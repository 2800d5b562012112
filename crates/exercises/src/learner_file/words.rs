//! Words a part may not use, or not define: CUDA's and NVRTC's internal names, assembly, what the
//! compiler may assume, values that depend on where they are written, CUDA's keywords spelled
//! out, names the code outside uses, and helpers that reach past a tile or read the clock.

use std::collections::BTreeSet;

use super::{
    region::{Found, Outside, problem},
    syntax::{brace_step, enclosing, in_attribute, statement_start},
};
use crate::{declared, tokens::Token};

/// Whether the name `token` may be in a part whose starter's part is `outside`'s.
pub(super) fn refused_name(token: &Token, outside: &Outside) -> Found {
    let line = token.line;
    match token.text.as_str() {
        "__global__" if !outside.starter_has("__global__") => {
            return problem(line, DEFINES_A_KERNEL.into());
        }
        "asm" | "__asm__" | "__asm" if !outside.starter_has(&token.text) => {
            return problem(
                line,
                "inline assembly (`asm`) is not accepted in the exercises: write it in CUDA C++".into(),
            );
        }
        // NVRTC's own macros (`__cudaGet_blockIdx()` is `blockIdx`, `__no_return__` an
        // assumption, `__specialization_static` is `static`), which the checks, expanding only
        // the part's macros, would not see through.
        name if nvrtc_macro(name) && !MACROS_THE_CHECKS_READ.contains(&name) && !outside.starter_has(name) => {
            return problem(
                line,
                format!(
                    "`{name}` is a macro of NVRTC's own headers, which the checks of your part do not expand: \
                     write what you mean in C++ and CUDA's keywords"
                ),
            );
        }
        // Which memory an address is in: a search through memory, not a layout.
        name if name.starts_with("__is") && name[4..].starts_with(char::is_uppercase) => {
            return problem(line, format!("`{name}` asks which memory an address is in: index the tile with numbers"));
        }
        // (And the compiler's NVVM built-ins, which CUDA's functions are made of: a barrier, an
        // atomic, a copy into shared memory under a name no check reads.)
        name if name.starts_with("__cuda") || name.starts_with("__nvvm_") => {
            return problem(
                line,
                format!(
                    "`{name}` is one of CUDA's internal names: use the built-in variables and functions themselves"
                ),
            );
        }
        // The compiler's tensor-core matrix loads and stores (`__hmma_m16n16k16_st_c_f32`, which
        // NVRTC declares unasked), whose rows lie a stride apart.
        name if matrix_built_in(name) => {
            return problem(
                line,
                format!(
                    "`{name}` is one of the compiler's tensor-core matrix loads and stores, which reach rows a \
                     stride apart where the checks do not follow them: read and write with plain loads and stores, \
                     and the tile with the course's `load` and `store`"
                ),
            );
        }
        // MSVC's words, which NVRTC reads as names (a lambda's), and the checks as attributes.
        "__pragma" | "__declspec" => {
            return problem(
                line,
                format!("`{}` is MSVC's, which NVRTC does not know: use `#pragma` and `__attribute__`", token.text),
            );
        }
        "__has_include" | "__has_include_next" => {
            return problem(line, format!("`{}` asks about files of the grading machine: remove it", token.text));
        }
        // The grader's own names, where it wraps the part's place function to check its places
        // (`#define bcm_part_slot slot` undid the wrapper's renaming).
        name if name.starts_with("bcm_") => {
            return problem(
                line,
                format!("`{name}`: names beginning with `bcm_` are the grader's: choose another name"),
            );
        }
        // The preprocessor reads a directive inside a macro call's arguments, where the checks,
        _ => {}
    }
    Ok(())
}

/// Whether `name` is one of the compiler's matrix built-ins: `__mma_`, `__hmma_`, `__imma_`,
/// `__bmma_` or `__dmma_` and the shape.
fn matrix_built_in(name: &str) -> bool {
    let kind = name.strip_prefix("__").and_then(|rest| rest.split_once("mma_")).map(|(kind, _)| kind);
    kind.is_some_and(|kind| kind.len() <= 1 && kind.chars().all(|c| c.is_ascii_lowercase()))
}

/// A word that tells the compiler what it may assume.
pub(super) fn no_assumption(expanded: &[Token]) -> Found {
    // What the compiler may assume lets it rewrite the code after the part: `__builtin_unreachable()`
    // deletes it, `__builtin_assume(threadIdx.x == 0)` makes every thread thread 0.
    if let Some(assumption) = expanded.iter().find(|t| {
        matches!(
            t.text.trim_matches('_'),
            "builtin_unreachable" | "builtin_assume" | "assume" | "noreturn" | "Noreturn"
        )
    }) {
        return problem(
            assumption.line,
            format!(
                "`{}` tells the compiler what it may assume, which changes the code after your part: remove it",
                assumption.text
            ),
        );
    }
    Ok(())
}

/// A word whose value depends on where it is written (`__LINE__`, `__func__`, `__FILE__`, a string
/// the check would not see as one) or when it is compiled (`__TIME__`: the checked, recorded and
/// profiled builds are compiled at other times).
pub(super) fn no_word_of_its_place(tokens: &[Token]) -> Found {
    match tokens.iter().find(|t| OF_ITS_PLACE.contains(&t.text.as_str())) {
        Some(place) => of_its_place(place.line, &place.text),
        None => Ok(()),
    }
}

/// The words whose value is where they are used, or when they are compiled.
pub(super) const OF_ITS_PLACE: [&str; 17] = [
    "__LINE__",
    "__COUNTER__",
    "__builtin_LINE",
    "__builtin_COLUMN",
    "__builtin_FILE",
    "__builtin_FUNCTION",
    "__builtin_source_location",
    "__FILE__",
    "__BASE_FILE__",
    "__FILE_NAME__",
    "__builtin_is_constant_evaluated",
    "__func__",
    "__FUNCTION__",
    "__PRETTY_FUNCTION__",
    "__TIME__",
    "__DATE__",
    "__TIMESTAMP__",
];

/// Why `word`, one of [`OF_ITS_PLACE`], on `line` is refused.
pub(super) fn of_its_place(line: usize, word: &str) -> Found {
    problem(
        line,
        format!(
            "`{word}` takes its value from where it is used (its line, function or file, or whether the compiler \
             evaluates it) or when it is compiled, so the code after your part could see other values than the \
             checks: write the value out"
        ),
    )
}

/// A CUDA keyword spelled out as an attribute.
pub(super) fn no_spelled_out_space(expanded: &[Token]) -> Found {
    // `__attribute__((device))` or CUDA's own `__location__(device)` is `__device__` spelled out:
    // the checks read the keywords.
    if let Some(spelled) = spelled_out_space(expanded) {
        return problem(
            spelled.line,
            format!("`{}` spells out a CUDA keyword: write `__device__`, `__shared__` or `__constant__`", spelled.text),
        );
    }
    Ok(())
}

/// A struct laid out packed (`__attribute__((packed))`, `[[gnu::packed]]`), as `#pragma pack` lays one.
pub(super) fn no_packed_layout(expanded: &[Token]) -> Found {
    // Its pointer members lie unaligned, so the compiler moves them a byte at a time and puts
    // them back together with shifts, where the checks of the compiled code see numbers: a
    // table's address plus any offset would reach `printf("%s")` as no address at all.
    let in_an_attribute = |at: usize| {
        enclosing(expanded, at).any(|open| open > 0 && expanded[open - 1].text.starts_with("__attribute"))
            || in_attribute(expanded, at)
    };
    let packed = (0..expanded.len())
        .find(|at| matches!(expanded[*at].text.as_str(), "packed" | "__packed__") && in_an_attribute(*at));
    match packed {
        Some(at) => problem(
            expanded[at].line,
            format!(
                "`{}` lays a struct's members out unaligned, so the compiler moves a pointer in pieces the checks \
                 of the compiled code cannot follow: remove it",
                expanded[at].text
            ),
        ),
        None => Ok(()),
    }
}

/// `__global__` spelled out, where the starter's part defines no kernel.
pub(super) fn no_spelled_out_kernel(expanded: &[Token], outside: &Outside) -> Found {
    // `__attribute__((global))` is `__global__` spelled out (which the loop above refused as it is,
    // and no macro of the part may hold).
    // (A variable named `global` is not.)
    let spelled_out = |at: &usize| {
        enclosing(expanded, *at).any(|open| open > 0 && expanded[open - 1].text.starts_with("__"))
            || in_attribute(expanded, *at)
    };
    if let Some(kernel) = (0..expanded.len())
        .filter(|at| expanded[*at].text == "global" && spelled_out(at))
        .map(|at| &expanded[at])
        .next()
        .filter(|_| !outside.starter_has("__global__"))
    {
        return problem(kernel.line, DEFINES_A_KERNEL.into());
    }
    Ok(())
}

/// A declaration of a name the code outside uses, which would then mean the part's.
pub(super) fn no_name_of_the_code_outside(tokens: &[Token], expanded: &[Token], outside: &Outside) -> Found {
    // A name the code outside uses, declared where that code sees it, would mean the region's:
    // unless the starter's region declares it too, or the code outside declares its own.
    let starter_declares: BTreeSet<&str> =
        declared::top_level(&outside.starter_part).into_iter().map(|d| d.name).collect();
    // The kernel's parameters are its own too: inside it they hide any declaration of the region.
    let outside_declares: BTreeSet<&str> = declared::by_the_code_itself(&outside.before)
        .union(&declared::by_the_code_itself(&outside.after))
        .copied()
        .chain(outside.parameters.iter().copied())
        .collect();
    if let Some(shadow) = declared::top_level(tokens).into_iter().chain(declared::top_level(expanded)).find(|d| {
        outside.used.contains(d.name) && !starter_declares.contains(d.name) && !outside_declares.contains(d.name)
    }) {
        return problem(
            shadow.token.line,
            format!(
                "this declares `{}`, a name the code outside your part uses, which would then mean yours: \
                 choose another name",
                shadow.name
            ),
        );
    }
    Ok(())
}

/// CUDA's barriers: of the block, of a named barrier, of the warp.
/// (`syncthreads_count` and the like, without underscores, are their older names.)
const BARRIERS: [&str; 10] = [
    "__syncthreads",
    "__syncthreads_count",
    "__syncthreads_and",
    "__syncthreads_or",
    "syncthreads_count",
    "syncthreads_and",
    "syncthreads_or",
    "__barrier_sync",
    "__barrier_sync_count",
    "__syncwarp",
];

/// A helper the part may not call (unless its starter's part does).
pub(super) fn no_refused_word(expanded: &[Token], outside: &Outside) -> Found {
    // Words a part may not use (unless the starter's part does), read as the compiler reads them
    // (what a macro of the part's expands to, so that a macro of its own named `load` is its own):
    // - the course's helpers that reach shared memory at an address given as a number reach past
    //   any tile, where no place is checked, and their instructions are counted apart from the
    //   loads and stores an exercise judges;
    // - the time runs otherwise under Nsight Compute, which sets the clocks: a part that read it
    //   could tell the profiled launch from the timed ones (`clock64()` across `__nanosleep`), and
    //   so could the performance monitors (`__pm0()`), which a profiler programs;
    // - a friend defined in a template is a count the compiler keeps (the first call finds no
    //   body, later ones do);
    // - shared_load.cuh's helpers read and write shared memory through any pointer;
    let refused_words: [(&[&str], &str); 6] = [
        (
            &RAW_SHARED_HELPERS,
            "reaches shared memory at an address given as a number, past any tile your part places elements in: \
             leave the tensor-core and TMA helpers to the code outside your part",
        ),
        (
            &["shared_address"],
            "makes a shared-memory address a number, which the tensor-core and TMA helpers reach past any tile \
             with: leave it to the code outside your part, and index your tile with numbers",
        ),
        (
            &["clock", "clock64"],
            "reads the time, which runs otherwise when your kernel is profiled: compute from the arguments alone",
        ),
        (
            &["friend"],
            "declares a friend, which a template can give a body as the compiler instantiates it, so that one \
             call means one thing where the compiler first reads it (a `static_assert`) and another later: \
             declare your functions at namespace scope",
        ),
        (
            &["__pm0", "__pm1", "__pm2", "__pm3", "__prof_trigger"],
            "reads or signals the multiprocessor's performance monitors, which a profiler sets up: compute from \
             the arguments alone",
        ),
        (
            if outside.includes_shared_load { &["load", "store", "fill_tile"] } else { &[] },
            "of shared_load.cuh reaches shared memory through any pointer given it: leave it to the code outside \
             your part",
        ),
    ];
    for (refused, why) in refused_words {
        if let Some(word) =
            expanded.iter().find(|t| refused.contains(&t.text.as_str()) && !outside.starter_has(&t.text))
        {
            return problem(word.line, format!("`{}` {why}", word.text));
        }
    }
    // `volatile` keeps a read the compiler would drop: of a local read before it is written, what
    // an earlier launch left there. (A `volatile` tile is the code after's to fill and read.)
    if let Some(kept) = expanded.iter().enumerate().find(|&(at, t)| {
        t.text == "volatile"
            && !outside.starter_has("volatile")
            && !expanded[statement_start(expanded, at)..]
                .iter()
                .take_while(|t| !matches!(t.text.as_str(), ";" | "{" | "}"))
                .any(|t| t.text == "__shared__")
    }) {
        return problem(
            kept.1.line,
            "`volatile` keeps reads the compiler would drop, and a variable read before it is written holds what \
             an earlier launch left there: compute from the arguments, in plain locals"
                .into(),
        );
    }
    // A barrier in a function of the part's (a place function, a lambda) runs where the code
    // after calls it, perhaps where threads have diverged, and every thread must reach a barrier
    // alike. (At a kernel-level part's own level every thread reaches a statement of its own;
    // not one under an `if`, or a call within an expression.)
    let mut depth = 0;
    for (at, token) in expanded.iter().enumerate() {
        depth += brace_step(token);
        if BARRIERS.contains(&token.text.as_str())
            && !(outside.inside_function && depth == 0 && statement_start(expanded, at) == at)
            && !outside.starter_has(&token.text)
        {
            return problem(
                token.line,
                format!(
                    "`{}` is a barrier, which every thread must reach alike: in your part it may stand only as a \
                     statement of its own at the part's own level in the kernel, not in braces (a function the code \
                     after calls where threads may have diverged, a lambda, a block), under an `if` or within an \
                     expression; leave synchronisation to the code after your part",
                    token.text
                ),
            );
        }
    }
    Ok(())
}

/// The macros of NVRTC's built-in headers that the checks read as the words they stand for.
const MACROS_THE_CHECKS_READ: [&str; 17] = [
    "__align__",
    "__location__",
    "__builtin_expect",
    "__constant__",
    "__device__",
    "__forceinline__",
    "__global__",
    "__grid_constant__",
    "__host__",
    "__inline__",
    "__launch_bounds__",
    "__managed__",
    "__noinline__",
    "__restrict__",
    "__shared__",
    "assert",
    "warpSize",
];

/// Whether NVRTC's built-in headers define `name` as a macro (`nvrtc_macros.txt`).
fn nvrtc_macro(name: &str) -> bool {
    static NAMES: std::sync::OnceLock<BTreeSet<&str>> = std::sync::OnceLock::new();
    NAMES
        .get_or_init(|| {
            include_str!("nvrtc_macros.txt").lines().filter(|line| !line.starts_with('#') && !line.is_empty()).collect()
        })
        .contains(name)
}

/// The course's helpers (`tensor_core.cuh`, `tma.cuh`) that take a shared-memory address as a
/// number (`shared_address` makes one).
const RAW_SHARED_HELPERS: [&str; 7] =
    ["ldmatrix_x4", "ldmatrix_x4_trans", "stmatrix_x4", "cp_async_16", "barrier_init", "barrier_wait", "tma_load_box"];

/// Why a part that defines a kernel is refused.
const DEFINES_A_KERNEL: &str = "your part may not define a kernel (`__global__`): the starter's part has none";

/// Words that CUDA's execution-space, memory-space and function qualifiers (`__device__`,
/// `__shared__`, `__forceinline__`, `__align__`, `__restrict__`, `__launch_bounds__`, ...) expand to.
pub(super) const CUDA_EXPANSION_WORDS: [&str; 20] = [
    "__attribute__",
    "__annotate__",
    "__location__",
    "__inline__",
    "__restrict",
    "device",
    "global",
    "host",
    "shared",
    "constant",
    "managed",
    "noinline",
    "always_inline",
    "aligned",
    "launch_bounds",
    "maxnreg",
    "grid_constant",
    "cudart_builtin",
    "device_builtin",
    "nv_register_params",
];

/// The first `__location__(..)` or `__annotate__(..)` (CUDA's spellings of its keywords), or
/// `__attribute__((..))` naming a memory space, in `code`.
fn spelled_out_space(code: &[Token]) -> Option<&Token> {
    code.iter().enumerate().find_map(|(at, t)| {
        let group = || {
            code.get(at + 1).is_some_and(|t| t.text == "(")
                && code[at + 1..declared::matching(code, at + 1)]
                    .iter()
                    .any(|t| matches!(t.text.as_str(), "device" | "managed" | "shared" | "constant"))
        };
        match t.text.as_str() {
            // (The CUDA runtime's own macros for `__device__` too.)
            "__location__" | "__annotate__" => Some(t),
            word if word.starts_with("CUDART_") => Some(t),
            "__attribute__" | "__attribute" if group() => Some(t),
            _ => None,
        }
    })
}
