//! A learner's `.cu` file, checked against the exercise's starter before anything runs.
//!
//! Only the lines between the markers are the learner's. A file whose other lines differ from the
//! starter's is rejected, naming the first such line, rather than having its editable part spliced
//! into the starter: line numbers stay the learner's own (so compiler messages point into their
//! file as it is), and an edit outside the region is shown instead of silently dropped. Outside the
//! region only tokens count: a byte-order mark, line endings, trailing spaces, tabs for spaces,
//! indentation and comments are not changes (see [`crate::tokens::normalize`]).
//!
//! The region is a region: what it holds may not reach beyond it (see `region_problems`).

use std::collections::BTreeSet;

use thiserror::Error;

use crate::{
    declared,
    manifest::Exercise,
    tokens::{self, Kind, LexError, Token},
};

pub const EDIT_BELOW: &str = "// ---- EDIT BELOW ----";
pub const EDIT_ABOVE: &str = "// ---- EDIT ABOVE ----";
/// Larger files are not a learner's edit of a starter of a few dozen lines.
pub const MAX_FILE_BYTES: usize = 256 * 1024;
/// The most tokens a part may hold: the exercises' parts need a few hundred, and some checks
/// read a part again at each of its tokens (a part of 130 000 tokens took a minute to check).
pub const MAX_PART_TOKENS: usize = 10_000;
/// The longest name, number or literal a part may hold: a macro's expansion copies its arguments
/// (a name of 125 000 characters used 60 000 times took 3.9 GB).
pub const MAX_TOKEN_CHARS: usize = 1024;

/// Why a file cannot be checked; each message names the fix.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum Invalid {
    #[error("the file is empty: start from the exercise's starter file")]
    Empty,
    #[error("the file holds more than {MAX_FILE_BYTES} bytes, too large to be an edited starter")]
    TooLarge(usize),
    #[error("the file is not text (it holds a NUL character, or is broken UTF-16): hand in the .cu source file")]
    NotText,
    #[error("the file does not look like CUDA C++ (no `__global__` kernel, no edit markers): is it the right file?")]
    NotCuda,
    #[error(
        "there is no kernel `{entry}` ({found}); keep the starter's `extern \"C\" __global__ void {entry}({signature})`"
    )]
    WrongKernel { entry: String, found: String, signature: String },
    #[error("kernel `{entry}` takes ({found}); it must take ({expected}) as in the starter")]
    WrongSignature { entry: String, found: String, expected: String },
    #[error(
        "the lines `{EDIT_BELOW}` and `{EDIT_ABOVE}` must each appear once, in that order: restore them from the starter"
    )]
    Markers,
    #[error(
        "line {line} is outside the editable part and differs from the starter (at `{token}`):\n  yours:   {yours}\n  starter: {starter}\n\
         Only the lines between the markers may change: restore that line from the starter"
    )]
    ChangedOutside { line: usize, token: String, yours: String, starter: String },
    #[error("line {line}, in your part: {problem}")]
    Region { line: usize, problem: String },
}

/// A file that passed every check: its normalized text (what is compiled), and its editable lines
/// (1-based, inclusive).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LearnerFile {
    pub text: String,
    pub region: (usize, usize),
}

impl LearnerFile {
    /// The editable lines.
    pub fn region_text(&self) -> String {
        let (first, last) = self.region;
        self.text.lines().skip(first - 1).take(last + 1 - first).collect::<Vec<_>>().join("\n")
    }
}

/// A text cut at its markers: the lines before the region (the `EDIT BELOW` marker last), the
/// region, and the lines from the `EDIT ABOVE` marker on; `region_start` is the region's first
/// line's index.
struct Parts<'a> {
    before: String,
    region: String,
    after: String,
    region_start: usize,
    after_start: usize,
    lines: Vec<&'a str>,
}

fn parts(text: &str) -> Option<Parts<'_>> {
    let lines: Vec<&str> = text.lines().collect();
    let (below, above) = (marker_line(&lines, EDIT_BELOW)?, marker_line(&lines, EDIT_ABOVE)?);
    if above < below {
        return None;
    }
    let join = |lines: &[&str]| lines.iter().map(|l| format!("{l}\n")).collect::<String>();
    Some(Parts {
        before: join(&lines[..=below]),
        region: join(&lines[below + 1..above]),
        after: join(&lines[above..]),
        region_start: below + 1,
        after_start: above,
        lines,
    })
}

/// Checks `bytes` (a learner's file) against `starter` (the exercise's pristine starter text).
pub fn validate(exercise: &Exercise, starter: &str, bytes: &[u8]) -> Result<LearnerFile, Invalid> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Invalid::Empty);
    }
    if bytes.len() > MAX_FILE_BYTES {
        return Err(Invalid::TooLarge(bytes.len()));
    }
    let text = without_if_0_groups(tokens::normalize(bytes).ok_or(Invalid::NotText)?);
    let lines: Vec<&str> = text.lines().collect();
    let markers = (marker_line(&lines, EDIT_BELOW), marker_line(&lines, EDIT_ABOVE));
    let kernels = kernels(&text);
    if kernels.is_empty() && markers == (None, None) {
        return Err(Invalid::NotCuda);
    }
    // The text is searched as it is, comments too: a comment that names the kernel with other
    // parameters must not hide the kernel itself.
    let entry = |name: &&str| *name == exercise.entry;
    let right = kernels
        .iter()
        .find(|(name, params)| entry(name) && signature_words(params) == signature_words(&exercise.signature));
    match right.or_else(|| kernels.iter().find(|(name, _)| entry(name))) {
        None => {
            let found = match kernels.len() {
                0 => "it defines no kernel".to_owned(),
                _ => format!(
                    "it defines {}",
                    kernels.iter().map(|(n, _)| format!("`{n}`")).collect::<Vec<_>>().join(", ")
                ),
            };
            return Err(Invalid::WrongKernel {
                entry: exercise.entry.clone(),
                found,
                signature: exercise.signature.clone(),
            });
        }
        Some((_, params)) if signature_words(params) != signature_words(&exercise.signature) => {
            return Err(Invalid::WrongSignature {
                entry: exercise.entry.clone(),
                found: params.split_whitespace().collect::<Vec<_>>().join(" "),
                expected: exercise.signature.clone(),
            });
        }
        Some(_) => {}
    }
    let yours = parts(&text).ok_or(Invalid::Markers)?;
    let starter_text = tokens::normalize(starter.as_bytes()).expect("the starter is text");
    let theirs = parts(&starter_text).expect("the starter has its markers");
    // The region is checked first: an unclosed comment in it would change how the rest reads.
    let region = region_problems(&yours, &theirs, &exercise.signature)?;
    let lex = |text: &str, first: usize| tokens::tokenize(text, first).expect("the starter's own parts tokenize");
    let outside = |yours_text: &str, yours_start: usize, theirs_text: &str, theirs_start: usize| {
        let mine = tokens::tokenize(yours_text, yours_start + 1).map_err(|e| {
            let line = lex_line(&e);
            Invalid::ChangedOutside {
                line,
                token: "(an unclosed comment or literal)".into(),
                yours: visible(yours.lines.get(line - 1).copied().unwrap_or("")),
                starter: "(see the starter)".into(),
            }
        })?;
        let (mine, starter) = (joined_strings(mine), joined_strings(lex(theirs_text, theirs_start + 1)));
        first_difference(&mine, &starter, &yours.lines, &theirs.lines).map_or(Ok(()), Err)
    };
    outside(&yours.before, 0, &theirs.before, 0)?;
    outside(&yours.after, yours.after_start, &theirs.after, theirs.after_start)?;
    Ok(LearnerFile { text: text.clone(), region })
}

/// `text` with each `#if 0` group of its region, from the `#if 0` line to its own `#endif`, made
/// empty lines: the compiler skips those lines, so a learner may keep an old version there (its
/// `#define`s and `#pragma`s too), and the checks and the compiler both read the text without it
/// (this text is the one compiled). A group with an `#else` or `#elif` of its own, or not closed
/// in the region, stays for the checks to refuse.
fn without_if_0_groups(text: String) -> String {
    // `0` or `false` (which C++'s preprocessor reads as 0; no macro of a part may redefine it), in
    // parentheses or not.
    let never = |mut condition: &[Token]| {
        while let [open, inside @ .., close] = condition
            && open.text == "("
            && close.text == ")"
        {
            condition = inside;
        }
        matches!(condition, [only] if matches!(only.text.as_str(), "0" | "false"))
    };
    let groups: Vec<(usize, usize)> = {
        let Some(parts) = parts(&text) else { return text };
        let Ok(tokens) = tokens::tokenize(&parts.region, parts.region_start + 1) else { return text };
        let directives: Vec<(usize, &str)> = tokens::directives(&tokens).collect();
        let mut groups = Vec::new();
        let mut next = 0;
        while next < directives.len() {
            let (open, name) = directives[next];
            next += 1;
            let condition = tokens::directive_tokens(&tokens, open).get(2..).unwrap_or_default();
            if name != "if" || !never(condition) {
                continue;
            }
            // The group runs to its own `#endif`: the conditionals inside nest, and whatever else
            // is inside (`#define`, `#pragma`) the preprocessor skips with it. An `#else` or
            // `#elif` of its own would make lines of it code: such a group stays for the checks.
            let mut depth = 1;
            while next < directives.len() && depth > 0 {
                let (at, name) = directives[next];
                next += 1;
                match name {
                    "if" | "ifdef" | "ifndef" => depth += 1,
                    "else" | "elif" | "elifdef" | "elifndef" if depth == 1 => break,
                    "endif" => {
                        depth -= 1;
                        let closing = tokens::directive_tokens(&tokens, at);
                        if depth == 0 && closing.len() == 2 {
                            groups.push((tokens[open].line, closing[1].line));
                        }
                    }
                    _ => {}
                }
            }
        }
        groups
    };
    if groups.is_empty() {
        return text;
    }
    let skipped = |line: usize| groups.iter().any(|&(first, last)| (first..=last).contains(&line));
    let kept: Vec<&str> =
        text.lines().enumerate().map(|(index, line)| if skipped(index + 1) { "" } else { line }).collect();
    let ending = if text.ends_with('\n') { "\n" } else { "" };
    format!("{}{ending}", kept.join("\n"))
}

fn lex_line(error: &LexError) -> usize {
    match *error {
        LexError::UnterminatedComment { line }
        | LexError::UnterminatedLiteral { line }
        | LexError::RawString { line }
        | LexError::TrailingSplice { line } => line,
    }
}

/// The line of the first `return` in `code` that leaves the function the code is in: one that
/// is not inside a body of its own, a lambda's or a local class's.
fn kernel_return(code: &[Token]) -> Option<usize> {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    let opening = |close: usize, [open, shut]: [&str; 2]| {
        let mut depth = 0;
        (0..=close).rev().find(|&i| {
            depth += i32::from(text(i) == shut) - i32::from(text(i) == open);
            depth == 0
        })
    };
    // Back from `at` over what precedes it in its statement, a parenthesised group as one step.
    let back = |at: usize| {
        std::iter::successors(at.checked_sub(1), move |&i| match text(i) {
            ")" => opening(i, ["(", ")"]).and_then(|open| open.checked_sub(1)),
            _ => i.checked_sub(1),
        })
        .take_while(move |&i| !matches!(text(i), ";" | "{" | "}"))
    };
    // Before a group, the word it belongs to (`noexcept(true)`, `alignas(8)`).
    let group_of = |close: usize| opening(close, ["(", ")"]).and_then(|open| open.checked_sub(1)).map(text);
    // A `]` that ends a lambda's introducer: its `[` starts an expression, where a subscript's
    // or an array bound's follows a name, a `]`, a `)` or a `}` (`Tab{}[0]`).
    let introducer = |close: usize| {
        opening(close, ["[", "]"]).is_some_and(|open| {
            open == 0 || matches!(text(open - 1), "(" | "=" | "," | "{" | ";" | "return" | "?" | "&&" | "||" | "!")
        })
    };
    // What a trailing return type is made of (a parenthesised group is one step of `back`).
    let in_a_type = |i: usize| {
        matches!(code[i].kind, Kind::Identifier | Kind::Number)
            || matches!(text(i), "::" | "<" | ">" | "," | "*" | "&" | "&&" | ")")
    };
    let opens_own_body = |at: usize| {
        // Before a lambda's body: `]`, or its parameters after `]`, then perhaps `mutable`,
        // `constexpr`, `noexcept(...)` and, after the parameters, a trailing return type
        // (`-> decltype(c)`).
        let arrow = back(at).find(|&i| !in_a_type(i)).filter(|&i| text(i) == "->");
        let mut before = arrow.unwrap_or(at);
        loop {
            match before.checked_sub(1).map(text) {
                Some("mutable" | "constexpr" | "consteval" | "noexcept") => before -= 1,
                Some(")") if group_of(before - 1) == Some("noexcept") => {
                    before = opening(before - 1, ["(", ")"]).unwrap_or(1) - 1;
                }
                _ => break,
            }
        }
        let lambda = match before.checked_sub(1).map(text) {
            Some("]") => arrow.is_none() && introducer(before - 1),
            Some(")") => opening(before - 1, ["(", ")"])
                .is_some_and(|open| open > 0 && text(open - 1) == "]" && introducer(open - 1)),
            _ => false,
        };
        // A class's head: `struct`, then only names, `final`, bases (`: public B<T>`) and
        // `alignas(8)` before its body, where member functions return.
        let mut head = back(at).skip_while(|&i| {
            let word = code[i].kind == Kind::Identifier && !KEYWORDS.contains(&text(i)) || code[i].kind == Kind::Number;
            word || matches!(
                text(i),
                "::" | ":" | "," | "<" | ">" | "final" | "public" | "protected" | "private" | "virtual" | "alignas"
            ) || text(i) == ")"
                && matches!(group_of(i), Some("alignas" | "__align__" | "__attribute__" | "__attribute" | "__declspec"))
        });
        let class = head.next().is_some_and(|i| matches!(text(i), "struct" | "class" | "union"));
        lambda || class
    };
    // For each open `{`, whether it opens a body of its own.
    let mut open: Vec<bool> = Vec::new();
    for (at, token) in code.iter().enumerate() {
        match token.text.as_str() {
            "{" => open.push(opens_own_body(at)),
            "}" => {
                open.pop();
            }
            "return" if !open.contains(&true) => return Some(token.line),
            _ => {}
        }
    }
    None
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

/// The course's helpers (`tensor_core.cuh`, `tma.cuh`) that take or make a shared-memory address
/// as a number.
const RAW_SHARED_HELPERS: [&str; 8] = [
    "shared_address",
    "ldmatrix_x4",
    "ldmatrix_x4_trans",
    "stmatrix_x4",
    "cp_async_16",
    "barrier_init",
    "barrier_wait",
    "tma_load_box",
];

/// Why a part that defines a kernel is refused.
const DEFINES_A_KERNEL: &str = "your part may not define a kernel (`__global__`): the starter's part has none";

/// C++'s keywords and alternative tokens (C++20), which no macro of a learner's part may name.
const KEYWORDS: [&str; 95] = [
    "alignas",
    "alignof",
    "and",
    "and_eq",
    "asm",
    "auto",
    "bitand",
    "bitor",
    "bool",
    "break",
    "case",
    "catch",
    "char",
    "char8_t",
    "char16_t",
    "char32_t",
    "class",
    "compl",
    "concept",
    "const",
    "consteval",
    "constexpr",
    "constinit",
    "const_cast",
    "continue",
    "co_await",
    "co_return",
    "co_yield",
    "decltype",
    "default",
    "delete",
    "do",
    "double",
    "dynamic_cast",
    "else",
    "enum",
    "explicit",
    "export",
    "extern",
    "false",
    "float",
    "for",
    "friend",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "nullptr",
    "operator",
    "or",
    "or_eq",
    "private",
    "protected",
    "public",
    "register",
    "reinterpret_cast",
    "requires",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "static_assert",
    "static_cast",
    "struct",
    "switch",
    "template",
    "this",
    "thread_local",
    "throw",
    "true",
    "try",
    "typedef",
    "typeid",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "wchar_t",
    "while",
    "xor",
    "xor_eq",
    "defined",
    "final",
    "override",
];

/// Words that CUDA's execution-space, memory-space and function qualifiers (`__device__`,
/// `__shared__`, `__forceinline__`, `__align__`, `__restrict__`, `__launch_bounds__`, ...) expand to.
const CUDA_EXPANSION_WORDS: [&str; 20] = [
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

/// The course's headers, the only files a learner's part may include (by bare name).
pub fn course_headers() -> Vec<&'static str> {
    cuda_kernels::source::course_headers()
}

/// A macro of the course's header `header` that stands for statements (the probe's, which
/// splice any assembly into a kernel or define one), with why; such a header is not for a
/// learner's part, where its macros would carry code the region's own checks never see.
fn statement_macro(header: &str) -> Option<(String, String)> {
    let tokens = tokens::tokenize(cuda_kernels::source::embedded(header).unwrap_or_default(), 1).ok()?;
    tokens::directives(&tokens).filter(|(_, name)| *name == "define").find_map(|(start, _)| {
        let definition = tokens::definition(tokens::directive_tokens(&tokens, start))?;
        Some((definition.name.text.clone(), tokens::macro_body_problem(definition.body)?))
    })
}

/// What the region holds that would reach beyond it, as the first such problem; else the
/// region's lines (1-based, inclusive). `signature` is the kernel's parameter list.
fn region_problems(yours: &Parts, theirs: &Parts, signature: &str) -> Result<(usize, usize), Invalid> {
    let first_line = yours.region_start + 1;
    let region = (first_line, yours.after_start);
    let problem = |line: usize, problem: String| Err(Invalid::Region { line, problem });
    if let Some(line) = tokens::include_not_a_directive(&yours.region, first_line) {
        return problem(
            line,
            "this `#include` line is in a comment or continued from the line before: the course's headers are \
             included by a directive on a line of its own, and a header pasted here would be code no check read"
                .into(),
        );
    }
    let region_text = match yours.region.strip_suffix("\\\n") {
        Some(cut) => format!("{cut}\\"),
        None => yours.region.clone(),
    };
    let tokens = match tokens::tokenize(&region_text, first_line) {
        Ok(tokens) => tokens,
        Err(error) => {
            let reason = match error {
                LexError::UnterminatedComment { .. } => {
                    format!("a `/*` comment is not closed within your part: close it with `*/` before `{EDIT_ABOVE}`")
                }
                LexError::UnterminatedLiteral { .. } => {
                    "a string or character literal is not closed on its line".into()
                }
                LexError::RawString { .. } => {
                    "raw string literals (`R\"(...)\"`) are not accepted here: use an ordinary string".into()
                }
                LexError::TrailingSplice { .. } => {
                    format!("your last line ends with `\\`, which joins it to `{EDIT_ABOVE}`: remove the backslash")
                }
            };
            return problem(lex_line(&error), reason);
        }
    };
    if let Some((line, trigraph)) = tokens::trigraph(&tokens) {
        return problem(
            line,
            format!("`{trigraph}` is a trigraph, which some compilers read as another character: write it another way"),
        );
    }
    if tokens.len() > MAX_PART_TOKENS {
        return problem(
            first_line,
            format!(
                "your part has {} tokens, more than the {MAX_PART_TOKENS} a part may hold (the exercises' parts need \
                 a few hundred): write it shorter",
                tokens.len()
            ),
        );
    }
    if let Some(long) = tokens.iter().find(|t| t.text.chars().count() > MAX_TOKEN_CHARS) {
        return problem(
            long.line,
            format!(
                "a name, number or literal of {} characters, more than the {MAX_TOKEN_CHARS} a part's may have: \
                 write it shorter",
                long.text.chars().count()
            ),
        );
    }
    let starter_tokens = tokens::tokenize(&theirs.region, theirs.region_start + 1).expect("the starter tokenizes");
    let starter_has = |word: &str| starter_tokens.iter().any(|t| t.kind == Kind::Identifier && t.text == word);
    let includes_shared_load = [&yours.before, &yours.region].iter().any(|text| text.contains("shared_load.cuh"));
    let before = tokens::tokenize(&theirs.before, 1).expect("the starter tokenizes");
    let inside_function = depth(&before) > 0;
    // Names the rest of the file (and the course's headers) use, which the region may not redefine,
    // less those the starter's own region defines for it.
    let mut used: BTreeSet<String> = BTreeSet::new();
    let after = tokens::tokenize(&theirs.after, 1).expect("the starter tokenizes");
    for token in before.iter().chain(&after) {
        if token.kind == Kind::Identifier {
            used.insert(token.text.clone());
        }
    }
    // CUDA's own macros that the code outside uses expand to these (`__shared__` to
    // `__attribute__((shared))`): a `#define shared` would change that code as surely.
    used.extend(CUDA_EXPANSION_WORDS.map(str::to_owned));
    // A header the region includes, and every header that one includes, is read after the
    // region's macros: their names count as used. (One included before the region was read
    // before them.)
    let included_by = |tokens: &[Token]| -> Vec<String> {
        tokens::directives(tokens)
            .filter(|(_, name)| *name == "include")
            .filter_map(|(start, _)| tokens.get(start + 2))
            .map(|t| t.text.trim_matches('"').to_owned())
            .collect()
    };
    let (mut waiting, mut read) = (included_by(&tokens), BTreeSet::new());
    while let Some(header) = waiting.pop() {
        if !course_headers().contains(&header.as_str()) || !read.insert(header.clone()) {
            continue;
        }
        let header_tokens = tokens::tokenize(cuda_kernels::source::embedded(&header).unwrap_or_default(), 1);
        let header_tokens = header_tokens.unwrap_or_default();
        waiting.extend(included_by(&header_tokens));
        used.extend(header_tokens.into_iter().filter(|t| t.kind == Kind::Identifier).map(|t| t.text));
    }
    for (start, name) in tokens::directives(&starter_tokens) {
        if let Some(defined) = starter_tokens.get(start + 2).filter(|_| name == "define") {
            used.remove(&defined.text);
        }
    }

    let mut open: Vec<&Token> = Vec::new();
    // A directive's brackets are its own: a macro must close what it opens (see `#define`).
    let mut in_directive = false;
    for (index, token) in tokens.iter().enumerate() {
        let line = token.line;
        match token.kind {
            Kind::Directive => in_directive = true,
            Kind::EndOfDirective => in_directive = false,
            _ => {}
        }
        match (token.kind, token.text.as_str()) {
            (Kind::Other, c) => {
                let character = c.chars().next().unwrap_or('\0');
                let code = u32::from(character);
                // (A control or formatting character is shown by its code alone: printed, it would
                // act, a right-to-left override turning the message around.)
                let invisible = character.is_control()
                    || matches!(code, 0x00AD | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2069 | 0xFEFF);
                return problem(
                    line,
                    match invisible {
                        true => format!(
                            "the invisible character U+{code:04X} is outside a comment or string: delete it (an \
                             editor may show it as a box, or not at all)"
                        ),
                        false => format!(
                            "the character U+{code:04X} (`{c}`) is outside a comment or string: retype that part in ASCII"
                        ),
                    },
                );
            }
            // Outside a literal, `\` starts only a universal character name: `\u005f_syncthreads`
            // spells `__syncthreads` where a tokenizer of ASCII names would not see it.
            (Kind::Punct, "\\") => {
                return problem(
                    line,
                    "a `\\` outside a string (a universal character name such as `\\u005f`?): write names in ASCII"
                        .into(),
                );
            }
            // A `#` in code is a directive the checks did not read as one (the compiler's idea of
            // a line's start differs): `#` and `##` belong in a `#define`'s body only.
            (Kind::Punct, "#") if !in_directive => {
                return problem(
                    line,
                    "a `#` that does not begin its line: put each directive on a line of its own, with nothing \
                     (not even a comment) before it"
                        .into(),
                );
            }
            // Pasted tokens are made after every check here has read the region: `re ## turn`
            // is an early `return`, `as ## m` inline assembly.
            (Kind::Punct, "##") => {
                return problem(
                    line,
                    "`##` pastes tokens into names and keywords that no check can see: write them out".into(),
                );
            }
            (Kind::Punct, "{" | "(" | "[" | "}" | ")" | "]") if in_directive => {}
            (Kind::Punct, "{" | "(" | "[") => open.push(token),
            (Kind::Punct, close @ ("}" | ")" | "]")) => {
                let opener = match close {
                    "}" => "{",
                    ")" => "(",
                    _ => "[",
                };
                match open.pop() {
                    Some(o) if o.text == opener => {}
                    Some(o) => {
                        return problem(
                            line,
                            format!("`{close}` closes the `{}` of line {}: balance them", o.text, o.line),
                        );
                    }
                    None => {
                        return problem(
                            line,
                            format!(
                                "`{close}` closes a `{opener}` opened outside your part: what your part opens it closes, and it closes nothing else"
                            ),
                        );
                    }
                }
            }
            (Kind::Identifier, "__global__") if !starter_has("__global__") => {
                return problem(line, DEFINES_A_KERNEL.into());
            }
            (Kind::Identifier, "asm" | "__asm__" | "__asm") if !starter_has(&token.text) => {
                return problem(
                    line,
                    "inline assembly (`asm`) is not accepted in the exercises: write it in CUDA C++".into(),
                );
            }
            // NVRTC's own macros (`__cudaGet_blockIdx()` is `blockIdx`, `__no_return__` an
            // assumption, `__specialization_static` is `static`), which the checks, expanding only
            // the part's macros, would not see through.
            (Kind::Identifier, name)
                if nvrtc_macro(name) && !MACROS_THE_CHECKS_READ.contains(&name) && !starter_has(name) =>
            {
                return problem(
                    line,
                    format!(
                        "`{name}` is a macro of NVRTC's own headers, which the checks of your part do not expand: \
                         write what you mean in C++ and CUDA's keywords"
                    ),
                );
            }
            // Which memory an address is in: a search through memory, not a layout.
            (Kind::Identifier, name) if name.starts_with("__is") && name[4..].starts_with(char::is_uppercase) => {
                return problem(
                    line,
                    format!("`{name}` asks which memory an address is in: index the tile with numbers"),
                );
            }
            (Kind::Identifier, name) if name.starts_with("__cuda") => {
                return problem(
                    line,
                    format!(
                        "`{name}` is one of CUDA's internal names: use the built-in variables and functions themselves"
                    ),
                );
            }
            // MSVC's words, which NVRTC reads as names (a lambda's), and the checks as attributes.
            (Kind::Identifier, "__pragma" | "__declspec") => {
                return problem(
                    line,
                    format!("`{}` is MSVC's, which NVRTC does not know: use `#pragma` and `__attribute__`", token.text),
                );
            }
            (Kind::Identifier, "__has_include" | "__has_include_next") => {
                return problem(line, format!("`{}` asks about files of the grading machine: remove it", token.text));
            }
            // The preprocessor reads a directive inside a macro call's arguments, where the checks,
            // which expand the code between directives, would see the call unexpanded.
            (Kind::Directive, _) if open.iter().any(|o| o.text != "{") => {
                let unclosed = open.iter().rev().find(|o| o.text != "{").expect("one");
                return problem(
                    line,
                    format!(
                        "a directive inside the `{}` of line {}: close the brackets before it, or put it before them",
                        unclosed.text, unclosed.line
                    ),
                );
            }
            (Kind::Directive, _) => {
                let directive = tokens::directive_tokens(&tokens, index);
                let name = directive.get(1).filter(|t| t.kind == Kind::Identifier).map_or("", |t| t.text.as_str());
                match name {
                    "" if directive.len() == 1 => {}
                    "define" | "undef" => {
                        let Some(defined) = directive.get(2) else { continue };
                        // The checks read the part's words as C++ reads them: `#define struct` or
                        // `#define if` would make them read another program than the compiler.
                        // (And the words that the checks drop with their parentheses, as attributes.)
                        let attribute = matches!(
                            defined.text.as_str(),
                            "__attribute__"
                                | "__attribute"
                                | "__align__"
                                | "alignas"
                                | "__declspec"
                                | "_Pragma"
                                | "__pragma"
                        );
                        // (And the calls whose string literals the checks let through.)
                        let trusted = matches!(defined.text.as_str(), "printf" | "assert");
                        if KEYWORDS.contains(&defined.text.as_str()) || attribute || trusted {
                            return problem(
                                line,
                                format!("`#{name} {}` changes a word of C++ itself: choose another name", defined.text),
                            );
                        }
                        if used.contains(&defined.text) {
                            return problem(
                                line,
                                format!(
                                    "`#{name} {}` changes a name the code outside your part uses: choose another name",
                                    defined.text
                                ),
                            );
                        }
                        let body = tokens::definition(directive).map(|d| d.body).unwrap_or_default();
                        if let Some(why) = tokens::macro_body_problem(body).filter(|_| name == "define") {
                            return problem(
                                line,
                                format!(
                                    "`#define {}` {why}: a macro in your part may stand only for an expression or a \
                                     type, which cannot reach beyond where it is used; write a `__device__` function",
                                    defined.text
                                ),
                            );
                        }
                    }
                    // The checks read every line of the part, the compiler only those whose
                    // condition holds: a `{` or a `struct` under `#if 1` would hide what is compiled.
                    // (`#if 0` groups are gone by now: see `without_if_0_groups`.)
                    "if" | "ifdef" | "ifndef" | "elif" | "else" | "elifdef" | "elifndef" | "endif" => {
                        return problem(
                            line,
                            format!(
                                "`#{name}` is not accepted in your part: the checks read all of its lines, the \
                                 compiler only those whose condition holds; keep the one version you mean (an old \
                                 one may stay between `#if 0` and its `#endif`, with no `#else` or `#elif`)"
                            ),
                        );
                    }
                    "pragma" | "error" | "warning" => {}
                    "include" => {
                        let headers = course_headers();
                        let named = match &directive[2..] {
                            [one] if one.kind == Kind::Literal && one.text.starts_with('"') => {
                                Some(one.text.trim_matches('"').to_owned())
                            }
                            _ => None,
                        };
                        match named {
                            Some(header) if headers.contains(&header.as_str()) => {
                                if let Some((name, why)) = statement_macro(&header) {
                                    return problem(
                                        line,
                                        format!(
                                            "`#include \"{header}\"`: its macro `{name}` {why}, code that no check \
                                             of your part would see: include the headers the starter includes"
                                        ),
                                    );
                                }
                            }
                            _ => {
                                // (Spaced as written: `<swizzle.cuh>`, not `< swizzle . cuh >`.)
                                let spelled: String = directive[2..]
                                    .iter()
                                    .enumerate()
                                    .map(|(i, t)| match i > 0 && t.after_space {
                                        true => format!(" {}", t.text),
                                        false => t.text.clone(),
                                    })
                                    .collect();
                                return problem(
                                    line,
                                    format!(
                                        "`#include {spelled}`: only the course's headers may be included, by bare name in \
                                         quotes ({})",
                                        headers
                                            .iter()
                                            .filter(|h| statement_macro(h).is_none())
                                            .map(|h| format!("#include \"{h}\""))
                                            .collect::<Vec<_>>()
                                            .join(", ")
                                    ),
                                );
                            }
                        }
                    }
                    "line" => {
                        return problem(line, "`#line` changes the file and line that messages name: remove it".into());
                    }
                    other => {
                        return problem(
                            line,
                            format!(
                                "`#{other}` is not accepted here: your part may use #define, #undef, #pragma and \
                                 #include of the course's headers"
                            ),
                        );
                    }
                }
            }
            _ => {}
        }
    }
    if let Some(unclosed) = open.first() {
        return problem(
            unclosed.line,
            format!("this `{}` is not closed within your part: close it before `{EDIT_ABOVE}`", unclosed.text),
        );
    }
    // The code as the compiler reads it, the region's own macros expanded: what it declares, where
    // it returns and how it ends are read there too.
    let Ok(expanded) = tokens::expanded(&tokens) else {
        return problem(
            first_line,
            format!(
                "your part's macros take more than {} steps to expand (each token made, and more for calls \
                 nested in calls and macros chained to macros): write the code out",
                tokens::EXPANSION_LIMIT
            ),
        );
    };
    if inside_function
        && !starter_has("return")
        && let Some(line) = kernel_return(&tokens::without_attributes(&expanded))
    {
        return problem(
            line,
            "`return` here leaves the kernel early, which the starter's part never does: remove it".into(),
        );
    }
    // A destructor of a class declared in the kernel runs at the kernel's end, after the code
    // outside: it could write the answer that code skipped.
    // (`~f(x)` after an operator, `(`, `,` or `return` is a negation.)
    if inside_function
        && let Some(destructor) = expanded.windows(4).find(|w| {
            matches!(w[1].text.as_str(), "~" | "compl")
                && w[2].kind == Kind::Identifier
                && w[3].text == "("
                && (matches!(w[0].text.as_str(), "{" | ";" | "}" | ":" | "]")
                    || w[0].kind == Kind::Identifier
                        && !matches!(
                            w[0].text.as_str(),
                            "return" | "case" | "throw" | "co_return" | "co_yield" | "sizeof"
                        ))
        })
    {
        return problem(
            destructor[1].line,
            "a destructor here would run at the kernel's end, after the code outside your part: remove it".into(),
        );
    }
    let parameters: Vec<&str> = signature
        .split(',')
        .filter_map(|p| p.split(|c: char| !(c.is_alphanumeric() || c == '_')).rfind(|w| !w.is_empty()))
        .collect();
    // Inside the kernel, a part that reads or writes its parameters could write the answer and
    // point `out` elsewhere, or hand the code after it other input: they are that code's.
    if inside_function
        && let Some(parameter) = expanded.iter().enumerate().find_map(|(at, t)| {
            let member = at > 0 && matches!(expanded[at - 1].text.as_str(), "." | "->" | "::");
            (t.kind == Kind::Identifier && !member && parameters.contains(&t.text.as_str())).then_some(t)
        })
    {
        return problem(
            parameter.line,
            format!(
                "`{}` is the kernel's parameter, which the code after your part reads and writes through: \
                 your part may not use it",
                parameter.text
            ),
        );
    }
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
    // State kept from one launch to the next would let a kernel tell the profiled launch, the first
    // in its process, from the checked ones, which come after others.
    if let Some(state) = lasting_variable(&tokens::without_attributes(&expanded)) {
        let kept = "from one launch to the next, which the code after your part could read to act differently when \
                    it is profiled: keep values in locals or `constexpr` constants, and a table in `__constant__ const` memory";
        return problem(
            state.keyword.line,
            match state.unnamed_parameter {
                Some((name, first)) => format!(
                    "`{name}({first})` declares a variable `{name}` made from `{first}` where `{first}` is a value, \
                     and a function where it is a type, which this check cannot tell: if it declares a function, \
                     name its parameters (`{name}({first} value)`); a `{}` variable lasts {kept}",
                    state.keyword.text,
                    name = name.text,
                    first = first.text
                ),
                None => format!("`{}` here keeps a variable {kept}", state.keyword.text),
            },
        );
    }
    // Inside the kernel, an operator of a type of yours (`tile[r][c] = v`, `&tile[r][0]`) would
    // run your code within the code after your part.
    // (A call operator is not one: the code after calls nothing of the part's.)
    let call = |at: usize| {
        expanded.get(at + 1).is_some_and(|t| t.text == "(") && expanded.get(at + 2).is_some_and(|t| t.text == ")")
    };
    if inside_function
        && let Some(operator) =
            expanded.iter().enumerate().find(|&(at, t)| t.text == "operator" && !call(at)).map(|(_, t)| t)
    {
        return problem(
            operator.line,
            "an operator of yours would run within the code after your part when it uses your names: \
             declare `tile` and the rest as plain arrays and values"
                .into(),
        );
    }
    if let Some(place) = tokens.iter().find(|t| {
        matches!(
            t.text.as_str(),
            "__LINE__"
                | "__COUNTER__"
                | "__builtin_LINE"
                | "__builtin_COLUMN"
                | "__builtin_FILE"
                | "__builtin_FUNCTION"
                | "__builtin_source_location"
                | "__builtin_is_constant_evaluated"
                | "__func__"
                | "__FUNCTION__"
                | "__PRETTY_FUNCTION__"
        )
    }) {
        return problem(
            place.line,
            format!(
                "`{}` takes its value from where it is used (its line, function or file, or whether the compiler \
                 evaluates it), so the code after your part could see other values than the checks: write the value out",
                place.text
            ),
        );
    }
    // `__attribute__((device))` or CUDA's own `__location__(device)` is `__device__` spelled out:
    // the checks read the keywords.
    if let Some(spelled) = spelled_out_space(&expanded) {
        return problem(
            spelled.line,
            format!("`{}` spells out a CUDA keyword: write `__device__`, `__shared__` or `__constant__`", spelled.text),
        );
    }
    // What turns data that lasts from one launch to the next (a constant, a string literal) into
    // something the part can write: casts of pointers, unions, literals outside `printf`.
    let operators = operators_spelled(&expanded);
    // The starter's own constants (`#define TILE 32u`): numbers a cast to 64 bits may take.
    let starter_constants: BTreeSet<&str> = [&before, &after]
        .into_iter()
        .flat_map(|part| {
            tokens::directives(part)
                .filter(|&(_, name)| name == "define")
                .filter_map(|(at, _)| tokens::definition(tokens::directive_tokens(part, at)))
                .filter(|definition| !definition.function_like)
                .map(|definition| definition.name.text.as_str())
        })
        .collect();
    if let Some((token, what, fix)) = write_through(&operators, &starter_constants) {
        return problem(
            token.line,
            format!(
                "{what} can write to a constant or a string literal, data that lasts from one launch to the next: \
                 {fix}"
            ),
        );
    }
    // `__constant__ unsigned lut[32]` is no `const` in C++: a pointer to it (`lut` itself) can
    // store there (`__stcg(lut, v)`), and that lasts from one launch to the next.
    if let Some(constant) = writable_constant(&tokens::without_attributes(&expanded)) {
        return problem(
            constant.line,
            "`__constant__` data that is not `const` can be written through a pointer to it, and what is written \
             lasts from one launch to the next: declare it `__constant__ const` (a table of values, no pointers)"
                .into(),
        );
    }
    // A `mutable` member is written through a `const` object, which would then last between
    // launches. (After a lambda's parameters, `mutable` is the lambda's: its copies last one call.)
    if let Some(mutable) = expanded
        .iter()
        .enumerate()
        .find(|&(at, t)| t.text == "mutable" && !(at > 0 && expanded[at - 1].text == ")"))
        .map(|(_, t)| t)
    {
        return problem(
            mutable.line,
            "a `mutable` member can be written through a `const` object, which lasts from one launch to the next: \
             keep values in locals"
                .into(),
        );
    }
    // `__attribute__((global))` is `__global__` spelled out (which the loop above refused as it is,
    // and no macro of the part may hold).
    // (A variable named `global` is not.)
    let spelled_out = |at: &usize| {
        enclosing(&expanded, *at).any(|open| open > 0 && expanded[open - 1].text.starts_with("__"))
            || in_attribute(&expanded, *at)
    };
    if let Some(kernel) = (0..expanded.len())
        .filter(|at| expanded[*at].text == "global" && spelled_out(at))
        .map(|at| &expanded[at])
        .next()
        .filter(|_| !starter_has("__global__"))
    {
        return problem(kernel.line, DEFINES_A_KERNEL.into());
    }
    // A name the code outside uses, declared where that code sees it, would mean the region's:
    // unless the starter's region declares it too, or the code outside declares its own.
    let starter_declares: BTreeSet<&str> = declared::top_level(&starter_tokens).into_iter().map(|d| d.name).collect();
    // The kernel's parameters are its own too: inside it they hide any declaration of the region.
    let outside_declares: BTreeSet<&str> = declared::by_the_code_itself(&before)
        .union(&declared::by_the_code_itself(&after))
        .copied()
        .chain(parameters)
        .collect();
    if let Some(shadow) = declared::top_level(&tokens)
        .into_iter()
        .chain(declared::top_level(&expanded))
        .find(|d| used.contains(d.name) && !starter_declares.contains(d.name) && !outside_declares.contains(d.name))
    {
        return problem(
            shadow.token.line,
            format!(
                "this declares `{}`, a name the code outside your part uses, which would then mean yours: \
                 choose another name",
                shadow.name
            ),
        );
    }
    // Words a part may not use (unless the starter's part does), read as the compiler reads them
    // (what a macro of the part's expands to, so that a macro of its own named `load` is its own):
    // - the course's helpers that reach shared memory at an address given as a number reach past
    //   any tile, where no place is checked, and their instructions are counted apart from the
    //   loads and stores an exercise judges;
    // - the time runs otherwise under Nsight Compute, which sets the clocks: a part that read it
    //   could tell the profiled launch from the timed ones (`clock64()` across `__nanosleep`);
    // - shared_load.cuh's helpers read and write shared memory through any pointer.
    let refused_words: [(&[&str], &str); 3] = [
        (
            &RAW_SHARED_HELPERS,
            "reaches shared memory at an address given as a number, past any tile your part places elements in: \
             leave the tensor-core and TMA helpers to the code outside your part",
        ),
        (
            &["clock", "clock64"],
            "reads the time, which runs otherwise when your kernel is profiled: compute from the arguments alone",
        ),
        (
            if includes_shared_load { &["load", "store", "fill_tile"] } else { &[] },
            "of shared_load.cuh reaches shared memory through any pointer given it: leave it to the code outside \
             your part",
        ),
    ];
    for (refused, why) in refused_words {
        if let Some(word) = expanded.iter().find(|t| refused.contains(&t.text.as_str()) && !starter_has(&t.text)) {
            return problem(word.line, format!("`{}` {why}", word.text));
        }
    }
    // Code that stops mid-statement runs on into the code after the region: `if (c)` takes the next
    // statement as its body, `__launch_bounds__(..)` attaches to the kernel.
    if let Some(last) = expanded.last().filter(|t| !matches!(t.text.as_str(), ";" | "}")) {
        return problem(
            last.line,
            format!(
                "your part ends with `{}`, which runs on into the code after it: end it with a whole statement or \
                 definition (`;` or `}}`)",
                last.text
            ),
        );
    }
    // `#pragma unroll` applies to the loop that follows: after the region's code, one outside it.
    // (What follows it counts as it expands, each expanded token on its use's line, which no
    // directive shares: a macro that stands for nothing is no code.)
    let code_after = |line: usize| expanded.last().is_some_and(|last| last.line > line);
    // (Those that only say which warnings to show change no code.)
    // (Numbers after them, or one string after `message`: nothing a macro could make another
    // pragma of.)
    let about_warnings = |start: usize| {
        let directive = tokens::directive_tokens(&tokens, start);
        let rest: Vec<&Token> = directive.iter().skip(3).collect();
        match directive.get(2).map(|word| word.text.as_str()) {
            Some(
                "nv_diag_suppress" | "nv_diag_warning" | "nv_diag_default" | "nv_diag_once" | "diag_suppress"
                | "diag_warning" | "diag_default",
            ) => !rest.is_empty() && rest.iter().all(|t| t.kind == Kind::Number || t.text == ","),
            Some("message") => match rest[..] {
                [string] => string.kind == Kind::Literal,
                [open, string, close] => open.text == "(" && string.kind == Kind::Literal && close.text == ")",
                _ => false,
            },
            _ => false,
        }
    };
    if let Some((start, _)) = tokens::directives(&tokens)
        .filter(|(start, name)| *name == "pragma" && !code_after(tokens[*start].line) && !about_warnings(*start))
        .last()
    {
        return problem(
            tokens[start].line,
            "a `#pragma` after the last of your code applies to the code after your part: put it before the code it is for"
                .into(),
        );
    }
    // Every launch is checked, Nsight Compute counts at the check size and the clock runs at the
    // timed size: a part that could tell them apart could be conflict-free only where it is counted.
    // (Hopper's cluster built-ins are the grid's and the block's too, in clusters of one block.)
    // (But for a debugging print left in, `if (blockIdx.x == 0 && threadIdx.x == 0) printf(...);`,
    // which changes no value.)
    let printed = only_printed(&expanded);
    if let Some((_, grid)) = expanded.iter().enumerate().find(|&(at, t)| {
        (matches!(t.text.as_str(), "gridDim" | "blockIdx")
            || t.text.starts_with("__cluster")
            || t.text.starts_with("__nv_"))
            && !printed.contains(&at)
    }) {
        return problem(
            grid.line,
            format!(
                "`{}` would let your part act otherwise at the size that is profiled and the size that is timed: \
                 index by the thread and the element alone",
                grid.text
            ),
        );
    }
    // Shared memory holds what the last block on its multiprocessor left there, from this launch
    // or an earlier one (the reference's, another file's): a `__shared__` variable that only the
    // part reads would hand it leftovers. A kernel's tile, declared at the part's own level, is
    // filled by the code after it.
    // The tiles the starter's part declares, at its own level in the kernel.
    let starter_code = tokens::without_attributes(&starter_tokens);
    let tiles: BTreeSet<&str> = (0..starter_code.len())
        .filter(|&at| inside_function && starter_code[at].text == "__shared__")
        .filter_map(|at| {
            let (bound, _) = shared_declaration(&starter_code, at);
            (bound > at + 1).then(|| starter_code[bound - 1].text.as_str())
        })
        .collect();
    let plain = tokens::without_attributes(&expanded);
    if let Some(read) = tile_read(&plain, &tiles) {
        return problem(
            read.line,
            format!(
                "your part uses `{}`, which the code after it fills: until then it holds what the last block on that \
                 multiprocessor left there, from this launch or an earlier one: declare it, and leave its use to that code",
                read.text
            ),
        );
    }
    if let Some(shared) = own_shared_variable(&plain, inside_function, &tiles) {
        return problem(
            shared.line,
            "`__shared__` here declares shared memory that only your part reads, which holds whatever the last \
             block on that multiprocessor left there, from this launch or an earlier one: compute from the \
             arguments, keep values in locals or `constexpr` constants, and a table in `__constant__ const` memory"
                .into(),
        );
    }
    Ok(region)
}

/// A variable that lasts from one launch to the next.
struct Lasting<'t> {
    /// Its `static`, `__device__` or `__managed__`.
    keyword: &'t Token,
    /// Its name and the one name in its parentheses, where those might be a function's unnamed
    /// parameter of a type the part does not declare (`rotate(size_t)`).
    unnamed_parameter: Option<(&'t Token, &'t Token)>,
}

/// The first variable in `code` that lasts from one launch to the next. Functions, which keep
/// nothing, `__constant__` data, which a kernel cannot write, and `constexpr` constants do not.
fn lasting_variable(code: &[Token]) -> Option<Lasting<'_>> {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    let types = declared_types(code);
    (0..code.len()).filter(|&at| matches!(text(at), "static" | "__device__" | "__managed__")).find_map(|at| {
        // The declaration up to its declarator's end: a function's parameters, an initializer,
        // an array's bound, a body, or the next declarator (template arguments, `A<(1 > 2)>`,
        // are the type's).
        let (mut end, mut angles, mut parentheses) = (at + 1, 0usize, 0);
        // Where a name's template arguments close (`swz<32u>`, an explicit specialization).
        let mut arguments_closed = None;
        while end < code.len() {
            // A type in parentheses (`__remove_cv(unsigned) seen`, `decltype(auto) f()`,
            // `__align__(16)`) is the type's, whatever follows it (`decltype(0u) (seen)`); not a
            // function named `__rot` whose parameters a body or a `;` follows.
            if (text(end) == "decltype" || text(end).starts_with("__")) && text(end + 1) == "(" {
                let close = declared::matching(code, end + 1);
                if text(end) == "decltype" || !matches!(text(close + 1), "{" | ";" | "->" | "noexcept" | ",") {
                    end = close + 1;
                    continue;
                }
            }
            match text(end) {
                "<" if parentheses == 0 && code[end - 1].kind == Kind::Identifier => angles += 1,
                // (`>>` closes two: `Box<Box<unsigned>> seen`.)
                close @ (">" | ">>") if parentheses == 0 && angles > 0 => {
                    angles = angles.saturating_sub(close.len());
                    if angles == 0 {
                        arguments_closed = Some(end);
                    }
                }
                "(" | "[" if angles > 0 => parentheses += 1,
                ")" | "]" if angles > 0 => parentheses -= 1,
                // An operator's name (`operator[]`, `operator()`, `operator=`) runs to its `(`.
                "operator" => {
                    end += if text(end + 1) == "(" { 2 } else { 1 };
                    while end < code.len() && text(end + 1) != "(" {
                        end += 1;
                    }
                }
                "(" | "=" | ";" | "{" | "[" | "," if angles == 0 => break,
                _ => {}
            }
            end += 1;
        }
        let named = code[end - 1].kind == Kind::Identifier
            || arguments_closed == Some(end - 1)
            || (at..end).any(|i| text(i) == "operator");
        // `name(...)` declares a function only where what the parentheses hold reads as parameters,
        // a body follows them, or they hold the declarator (`auto (load)(...)`): else it is a
        // variable and its initializer (`seen(0)`, `v<3>(5)`, `seen(unsigned(5))`, `(seen)`).
        let close = declared::matching(code, end);
        let inside = &code[(end + 1).min(code.len())..close.min(code.len())];
        // `(seen)`, `((seen))`: the declarator in parentheses, then parameters or an initializer.
        // With `*` or `&` in them (`(*hook)(unsigned)`) it is a pointer or a reference, a variable.
        let declarator = !inside.is_empty()
            && inside.iter().filter(|t| t.kind == Kind::Identifier).count() == 1
            && inside.iter().all(|t| t.kind == Kind::Identifier || matches!(t.text.as_str(), "(" | ")"))
            && !inside.iter().any(|t| is_type_word(&t.text) || types.contains(t.text.as_str()));
        let (parameters, after) = match declarator {
            true if text(close + 1) == "(" => {
                let second = declared::matching(code, close + 1);
                (&code[(close + 2).min(code.len())..second.min(code.len())], second + 1)
            }
            true => (&code[0..0], usize::MAX),
            false => (inside, close + 1),
        };
        let function = text(end) == "("
            && named
            && after != usize::MAX
            && (matches!(text(after), "{" | "->" | "noexcept") && !declarator || parameters_follow(parameters, &types))
            && further_functions(code, after, &types);
        // (Even `const` data there is memory a pointer can reach and write, by a cast through a
        // template; `__constant__ const` memory a kernel cannot write (`writable_constant` sees to
        // the `const`), and the compiler reads a `constexpr` value where it is used.)
        let declares = end < code.len();
        // A `const` number or table (`static const unsigned mask = 31u;`) is a constant as a
        // `constexpr` one is: no check lets a pointer reach it, as none lets one reach a
        // `constexpr` table. Not a pointer (its `const` may be what it points to), `volatile`
        // data, nor `__managed__` memory, which the host writes: a built-in type's, named by
        // `static`, `__device__`, `const` and `inline` alone.
        let mut angles = 0usize;
        let const_number = code[at].text != "__managed__"
            && (at..end).any(|i| {
                match text(i) {
                    "<" => angles += 1,
                    ">" => angles = angles.saturating_sub(1),
                    ">>" => angles = angles.saturating_sub(2),
                    _ => {}
                }
                angles == 0 && text(i) == "const"
            })
            // (Of a built-in type: a template's type or a struct may hold a pointer.)
            // (The name last, not in parentheses: `const T (seen)` is of a template's type.)
            && (at..end).all(|i| {
                is_type_word(text(i))
                    || matches!(text(i), "static" | "__device__" | "const" | "inline")
                    || i == end - 1 && text(end) != "("
            });
        let constant = (at..end).any(|i| matches!(text(i), "__constant__" | "constexpr")) || const_number;
        // `rotate(size_t);`: a function where the name in the parentheses is a type, which only the
        // headers may say.
        let unnamed_parameter = match inside {
            [first]
                if end - 1 > at + 1
                    && !matches!(text(end - 2), "const" | "volatile")
                    && code[end - 1].kind == Kind::Identifier
                    && first.kind == Kind::Identifier
                    && !is_type_word(&code[end - 1].text)
                    && !parameters_follow(inside, &types)
                    && matches!(text(close + 1), ";" | ",") =>
            {
                Some((&code[end - 1], first))
            }
            _ => None,
        };
        // Shared memory lasts one block, `static` or not (`static __shared__ unsigned tile[32][33];`):
        // `__shared__` among the declaration's words, not in a group (`decltype(sizeof(__shared__ unsigned))`).
        let mut depth = 0i64;
        let shared = (statement_start(code, at)..end).any(|i| {
            depth += i64::from(text(i) == "(") - i64::from(text(i) == ")");
            depth == 0 && text(i) == "__shared__"
        });
        (declares && !function && !constant && !shared).then_some(Lasting { keyword: &code[at], unnamed_parameter })
    })
}

/// The places of `code` that only decide or make what a `printf` prints: each `printf(...);`
/// statement whose arguments are plain values, and each `if` whose condition is plain and whose
/// body, with no `else`, is such statements alone. A plain condition holds the built-in indices
/// (`blockIdx.x`), numbers and operators; a plain value is a literal, a number, a built-in index
/// or a `sizeof`, perhaps cast to a built-in type. Nothing in them runs code of the part's (a
/// call, a constructor, a conversion, an operator of a class, a class copied through printf's
/// `...`, which a name of the part's could be): what they read changes no value the kernel computes.
fn only_printed(code: &[Token]) -> BTreeSet<usize> {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    // `blockIdx.x`: three tokens.
    let index = |i: usize| {
        matches!(text(i), "blockIdx" | "gridDim" | "threadIdx" | "blockDim")
            && text(i + 1) == "."
            && matches!(text(i + 2), "x" | "y" | "z")
    };
    let plain_condition = |mut at: usize, end: usize| {
        while at < end {
            if index(at) {
                at += 3;
                continue;
            }
            let operator = matches!(
                text(at),
                "==" | "!=" | "<" | ">" | "<=" | ">=" | "&&" | "||" | "!" | "+" | "-" | "*" | "/" | "%" | "(" | ")"
            );
            if code[at].kind != Kind::Number && !operator {
                return false;
            }
            at += 1;
        }
        true
    };
    // One argument: a cast to built-in types, perhaps, then a plain value.
    let plain_value = |argument: &[&Token]| {
        let word = |i: usize| argument.get(i).map_or("", |t| t.text.as_str());
        let mut from = 0;
        if word(0) == "(" {
            let close = declared::matching(argument, 0);
            if close >= argument.len() || !(1..close).all(|i| is_type_word(word(i)) || word(i) == "const") {
                return false;
            }
            from = close + 1;
        }
        match &argument[from..] {
            [one] => matches!(one.kind, Kind::Number | Kind::Literal),
            [name, dot, axis] if matches!(name.text.as_str(), "blockIdx" | "gridDim" | "threadIdx" | "blockDim") => {
                dot.text == "." && matches!(axis.text.as_str(), "x" | "y" | "z")
            }
            // `sizeof name` or `sizeof(...)`, nothing after.
            [size, name] if size.text == "sizeof" => name.kind == Kind::Identifier,
            [size, open, ..] if size.text == "sizeof" => {
                open.text == "(" && declared::matching(&argument[from..], 1) == argument.len() - from - 1
            }
            // Adjacent string literals.
            [_, ..] => argument[from..].iter().all(|t| t.kind == Kind::Literal),
            [] => false,
        }
    };
    // The end (its `;`) of a `printf(...);` statement at `at` whose arguments are plain values.
    let print = |at: usize| {
        let close = declared::matching(code, at + 1);
        if text(at) != "printf" || text(at + 1) != "(" || text(close + 1) != ";" {
            return None;
        }
        let inside: Vec<&Token> = code[at + 2..=close].iter().collect();
        declared::arguments(&inside).iter().all(|argument| plain_value(argument)).then_some(close + 1)
    };
    let statement_start = |at: usize| at == 0 || matches!(text(at - 1), ";" | "{" | "}");
    let mut printed = BTreeSet::new();
    // A `printf` of the part's own (`auto (printf) = [&](const char*) { ... };`) is no print:
    // every `printf` must be a call, after no type or name.
    let declares_printf = (0..code.len()).any(|at| {
        text(at) == "printf"
            && (text(at + 1) != "("
                || at > 0
                    && (code[at - 1].kind == Kind::Identifier && !matches!(text(at - 1), "return" | "else")
                        || matches!(text(at - 1), "*" | "&" | "&&" | "::" | "." | "->" | ">")))
    });
    if declares_printf {
        return printed;
    }
    for at in 0..code.len() {
        if let Some(end) = print(at).filter(|_| statement_start(at)) {
            printed.extend(at..=end);
        }
        if text(at) != "if" || text(at + 1) != "(" || !statement_start(at) {
            continue;
        }
        let close = declared::matching(code, at + 1);
        let body_end = match text(close + 1) {
            "{" => {
                let shut = declared::matching(code, close + 1);
                let mut next = close + 2;
                while let Some(end) = print(next).filter(|&end| end < shut) {
                    next = end + 1;
                }
                (next == shut && next > close + 2).then_some(shut)
            }
            _ => print(close + 1),
        };
        if let Some(end) = body_end.filter(|&end| text(end + 1) != "else" && plain_condition(at + 2, close)) {
            printed.extend(at..=end);
        }
    }
    printed
}

/// Whether every declarator after a function's, from `at` (`, flip(unsigned x)`), declares a
/// function too: `helper(unsigned), seen;` declares a variable `seen`.
fn further_functions(code: &[Token], mut at: usize, types: &BTreeSet<&str>) -> bool {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    while text(at) == "," {
        let mut name = at + 1;
        while matches!(text(name), "*" | "&" | "&&") {
            name += 1;
        }
        let named = code.get(name).is_some_and(|t| t.kind == Kind::Identifier);
        if !named || text(name + 1) != "(" {
            return false;
        }
        let close = declared::matching(code, name + 1);
        if !parameters_follow(&code[name + 2..close.min(code.len())], types) {
            return false;
        }
        at = close + 1;
    }
    true
}

/// The names `code` declares as types: `struct Coord`, `enum class Mode`, `using Index = ...`,
/// `typedef ... Index;`.
fn declared_types(code: &[Token]) -> BTreeSet<&str> {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    let mut types = BTreeSet::new();
    for (at, token) in code.iter().enumerate() {
        let name = match token.text.as_str() {
            "struct" | "class" | "enum" if text(at + 1) != "class" => Some(at + 1),
            // A template's type parameter: `template <typename U>`.
            "typename" if matches!(text(at + 2), "," | ">" | "=") => Some(at + 1),
            "typename" | "class" if text(at + 1) == "..." => Some(at + 2),
            "using" if text(at + 2) == "=" => Some(at + 1),
            "typedef" => (at + 1..code.len()).find(|&i| text(i) == ";").map(|end| end - 1),
            _ => None,
        };
        if let Some(name) = name.filter(|&i| code.get(i).is_some_and(|t| t.kind == Kind::Identifier)) {
            types.insert(code[name].text.as_str());
        }
    }
    // A name the part also gives a variable, function or enumerator may hide the type where it
    // is used (`constexpr unsigned zz = 0;` after `template <typename zz>`): it is no type here.
    let mut hidden = BTreeSet::new();
    for (at, token) in code.iter().enumerate().filter(|(_, t)| t.kind == Kind::Identifier) {
        let before = at.checked_sub(1).map(|i| &code[i]);
        let declarator = before.is_some_and(|b| {
            (b.kind == Kind::Identifier
                && !declared::EXPRESSION_WORDS.contains(&b.text.as_str())
                && !matches!(
                    b.text.as_str(),
                    "struct" | "class" | "enum" | "union" | "typename" | "using" | "namespace"
                ))
                || matches!(b.text.as_str(), "*" | "&" | "&&" | ">")
        }) && matches!(text(at + 1), "=" | ";" | "," | "(" | "[" | "{" | ")" | ":");
        let enumerator = matches!(before.map(|b| b.text.as_str()), Some("{" | ","))
            && matches!(text(at + 1), "," | "=" | "}")
            && (0..at)
                .rev()
                .find(|&i| text(i) == "{")
                .is_some_and(|open| (open.saturating_sub(6)..open).any(|i| text(i) == "enum"));
        if declarator || enumerator {
            hidden.insert(token.text.as_str());
        }
    }
    types.retain(|name| !hidden.contains(name));
    types
}

/// Whether `inside` (what a declarator's parentheses hold) reads as a parameter list: empty, or a
/// first parameter that is a type and a name (`unsigned x`, `const uint3& v`, `Row<32u> r`), or a
/// type alone that is one of C++'s words or of `types`, the part's own (`unsigned`, `Coord`).
/// Another name alone might be a type or a variable, so is not taken for one; nor is an
/// expression (`0`, `S::value`, `sizeof zero`).
fn parameters_follow(inside: &[Token], types: &BTreeSet<&str>) -> bool {
    let is_type = |word: &str| is_type_word(word) || types.contains(word);
    // (Up to its default argument, if any: `unsigned b = 0u`.)
    let first: Vec<&Token> = inside.iter().take_while(|t| t.text != "," && t.text != "=").collect();
    let (mut depth, mut plain) = (0i32, true);
    for (at, token) in first.iter().enumerate() {
        match token.text.as_str() {
            "<" | "[" if at > 0 => depth += 1,
            ">" | "]" if depth > 0 => depth -= 1,
            "*" | "&" | "&&" | "::" => {}
            _ if token.kind == Kind::Identifier => {}
            _ if token.kind == Kind::Literal && depth > 0 => {}
            _ => plain = false,
        }
    }
    // Words that make an expression of names: `sizeof zero`, `zero bitand zero`.
    let expression_word = first.iter().any(|t| {
        matches!(
            t.text.as_str(),
            "sizeof"
                | "alignof"
                | "__alignof__"
                | "noexcept"
                | "new"
                | "delete"
                | "throw"
                | "typeid"
                | "co_await"
                | "and"
                | "or"
                | "not"
                | "xor"
                | "bitand"
                | "bitor"
                | "compl"
                | "and_eq"
                | "or_eq"
                | "xor_eq"
                | "not_eq"
        ) || t.text.ends_with("_cast")
    });
    // A type, then a name: the type begins with a word of C++ (`const Coord& c`, `unsigned x`), or
    // is one name (`Coord c`) or a template's (`Row<32u> r`). `zero * one` might be either.
    let typed = first.first().is_some_and(|t| {
        is_type(&t.text) || matches!(t.text.as_str(), "const" | "volatile" | "struct" | "class" | "typename")
    });
    let one_name = first.len() == 2 && first[0].kind == Kind::Identifier;
    let template_type = first.len() >= 4 && first[1].text == "<";
    let named = first.len() >= 2
        && first.last().is_some_and(|t| t.kind == Kind::Identifier && !is_type_word(&t.text))
        && (typed || one_name || template_type);
    let builtin_type = !first.is_empty()
        && first.iter().all(|t| is_type(&t.text) || matches!(t.text.as_str(), "const" | "volatile" | "*" | "&" | "&&"));
    inside.is_empty() || plain && !expression_word && (named || builtin_type)
}

/// The `__constant__` of the first declaration in `code` of constant memory that is not `const`
/// (or `constexpr`) data, or holds a pointer.
fn writable_constant(code: &[Token]) -> Option<&Token> {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    (0..code.len()).filter(|&at| text(at) == "__constant__").find_map(|at| {
        let start = statement_start(code, at);
        let end = (at..code.len()).find(|&i| matches!(text(i), "=" | ";" | "{" | "(" | "[")).unwrap_or(code.len());
        let declaration = start..end;
        // The declaration's own `const`: not one inside `<...>` or `(...)` (`Box<const unsigned>`,
        // `template <typename X = const unsigned>`).
        let mut depth = 0i32;
        let mut constant = false;
        for i in declaration.clone() {
            match text(i) {
                "<" | "(" => depth += 1,
                ">" | ")" => depth -= 1,
                ">>" => depth -= 2,
                "const" | "constexpr" if depth == 0 => constant = true,
                _ => {}
            }
        }
        // (A template's `const` could be anyone's: `template <bool B = (1 > 0), class X = const unsigned>`.)
        let pointer = declaration.clone().any(|i| matches!(text(i), "*" | "&" | "&&" | "template"));
        (!constant || pointer).then_some(&code[at])
    })
}

/// `code` with C++'s alternative tokens as the operators they are (`bitand x` is `&x`), for the
/// checks that read operators.
fn operators_spelled(code: &[Token]) -> Vec<Token> {
    code.iter()
        .map(|token| {
            let operator = match (token.kind, token.text.as_str()) {
                (Kind::Identifier, "and") => "&&",
                (Kind::Identifier, "bitand") => "&",
                (Kind::Identifier, "bitor") => "|",
                (Kind::Identifier, "compl") => "~",
                (Kind::Identifier, "not") => "!",
                (Kind::Identifier, "not_eq") => "!=",
                (Kind::Identifier, "or") => "||",
                (Kind::Identifier, "xor") => "^",
                (Kind::Identifier, "and_eq") => "&=",
                (Kind::Identifier, "or_eq") => "|=",
                (Kind::Identifier, "xor_eq") => "^=",
                _ => return token.clone(),
            };
            Token { kind: Kind::Punct, text: operator.to_owned(), ..token.clone() }
        })
        .collect()
}

/// What to do instead of writing through a pointer, mostly.
const KEEP_IN_LOCALS: &str = "keep values in locals and index with numbers";

/// What to do instead of comparing or subtracting values of a template's type.
const OF_A_NAMED_TYPE: &str = "take values of a type you name (`unsigned`), or use `min` and `max`";

/// What to do instead of a cast to a 64-bit integer.
const WIDE_NUMBERS: &str = "convert with `static_cast<unsigned long long>(...)`, which cannot make an address a number \
     (or `unsigned long long wide = row;`)";

/// The compiler's built-in functions of numbers a part may call.
const NUMBER_BUILTINS: [&str; 12] = [
    "__builtin_expect",
    "__builtin_popcount",
    "__builtin_popcountll",
    "__builtin_clz",
    "__builtin_clzll",
    "__builtin_ctz",
    "__builtin_ctzll",
    "__builtin_ffs",
    "__builtin_abs",
    "__builtin_offsetof",
    "__builtin_constant_p",
    "__builtin_bswap32",
];

/// The words that take a type from an expression.
const TYPE_OF: [&str; 3] = ["decltype", "__typeof__", "typeof"];

/// CUDA's functions that return numbers, which a cast to 64 bits may take.
const NUMBER_FUNCTIONS: [&str; 10] =
    ["clock", "clock64", "__popc", "__popcll", "__clz", "__ffs", "__brev", "min", "max", "abs"];

/// The names of integer types wide enough to hold an address.
const WIDE_INTEGER_WORDS: [&str; 20] = [
    "long",
    "size_t",
    "ssize_t",
    "uintptr_t",
    "intptr_t",
    "ptrdiff_t",
    "uint64_t",
    "int64_t",
    "uint_fast64_t",
    "int_fast64_t",
    "uint_least64_t",
    "int_least64_t",
    "uintmax_t",
    "intmax_t",
    "__int64",
    "__int128",
    "__int128_t",
    "__uint128_t",
    "longlong",
    "ulonglong",
];

/// Whether the `(` at `open` starts a C-style cast to a 64-bit integer type (`(unsigned long
/// long)t`, `(const size_t)t`, `(U)t` of an alias in `wide_aliases`): its parentheses hold only
/// integer words and qualifiers, one of them wide, and it is neither a call's nor a declaration's
/// parameter list (`f(long)`) nor `sizeof`'s.
fn casts_to_a_wide_integer(code: &[Token], open: usize, wide_aliases: &BTreeSet<&str>) -> bool {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    let wide = |i: usize| WIDE_INTEGER_WORDS.contains(&text(i)) || wide_aliases.contains(text(i));
    let close = declared::matching(code, open);
    let words = open + 1..close.min(code.len());
    let integer_words = words.clone().all(|i| {
        wide(i)
            || matches!(text(i), "unsigned" | "signed" | "int" | "short" | "char" | "const" | "volatile" | "std" | "::")
    });
    let before = open.checked_sub(1).map(|i| (&code[i], text(i)));
    let parameters = before.is_some_and(|(token, word)| {
        token.kind == Kind::Identifier && !declared::EXPRESSION_WORDS.contains(&word)
            || matches!(word, "]" | ")" | ">" | "sizeof" | "alignof" | "__alignof__" | "operator")
    });
    !words.is_empty() && integer_words && words.clone().any(wide) && !parameters
}

/// Whether the operand at `at` is a number: a literal, `sizeof`, CUDA's built-in indices
/// (`(unsigned long long)blockIdx.x * n`), or one of `numbers` (a name the part gives a number,
/// a function that returns one, CUDA's clocks), alone or in parentheses (`(size_t)(row)`).
fn a_number(code: &[Token], at: usize, numbers: &BTreeSet<&str>) -> bool {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    // A sign before a number, `(long long)-1`; a cast to a narrower number, `(ull)(unsigned)v`.
    if matches!(text(at), "-" | "+" | "~") {
        return a_number(code, at + 1, numbers);
    }
    if text(at) == "(" {
        let close = declared::matching(code, at).min(code.len());
        if close > at + 1 && (at + 1..close).all(|i| is_type_word(text(i)) && !WIDE_INTEGER_WORDS.contains(&text(i))) {
            return true;
        }
    }
    // A group of numbers and operators: `(size_t)(row + k)`, `(long long)(-1)`.
    if text(at) == "(" {
        let close = declared::matching(code, at).min(code.len());
        return close > at + 1
            && (at + 1..close).all(|i| match code[i].kind {
                Kind::Identifier => a_number(code, i, numbers) || i > 0 && matches!(text(i - 1), "." | "->"),
                Kind::Number => true,
                Kind::Punct => {
                    !matches!(text(i), "&" | "&&" | "*" | "[" | "]" | "{" | "}" | "," | ";" | "->")
                        || matches!(text(i), "&" | "*") && binary_operator(code, i)
                }
                _ => false,
            });
    }
    code.get(at).is_some_and(|t| {
        t.kind == Kind::Number
            || matches!(
                t.text.as_str(),
                "sizeof" | "alignof" | "__alignof__" | "threadIdx" | "blockIdx" | "blockDim" | "gridDim" | "warpSize"
            )
            || numbers.contains(t.text.as_str()) && !matches!(text(at + 1), "[" | "." | "->")
    })
}

/// Whether `code[at]` is in `(void*)` or `(const void*)` given whole to `printf` with one name
/// (`printf("%p", (void*)tile)`): an address printed, through which nothing is written.
fn printed_pointer(code: &[Token], at: usize) -> bool {
    let Some(open) = enclosing(code, at).next().filter(|&open| code[open].text == "(") else { return false };
    let close = declared::matching(code, open).min(code.len());
    let inside: Vec<&str> = code[open + 1..close].iter().map(|t| t.text.as_str()).collect();
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    let call = enclosing(code, open).next();
    matches!(inside.as_slice(), ["void", "*"] | ["const", "void", "*"] | ["void", "const", "*"])
        && call.is_some_and(|call| call > 0 && text(call - 1) == "printf")
        && open > 0
        && text(open - 1) == ","
        && code.get(close + 1).is_some_and(|t| t.kind == Kind::Identifier)
        && matches!(text(close + 2), "," | ")")
}

/// Whether the `<` or `>` at `at` opens or closes a template's arguments (`load<uint4>(tile, i)`,
/// `Pair<unsigned> p`): the `<` follows a name, and its `>` comes before the expression's end and
/// is followed by `(`, `{`, `::` or a name.
fn template_angle(code: &[Token], at: usize) -> bool {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    let stops = |word: &str| matches!(word, ";" | "{" | "}" | "&&" | "||" | "?" | "=");
    let closes_arguments = |close: usize| {
        matches!(text(close + 1), "(" | "{" | "::") || code.get(close + 1).is_some_and(|t| t.kind == Kind::Identifier)
    };
    let (mut depth, mut nesting) = (0i64, 0i64);
    match text(at) {
        "<" => {
            for i in at + 1..code.len() {
                match text(i) {
                    "(" | "[" => depth += 1,
                    ")" | "]" if depth == 0 => return false,
                    ")" | "]" => depth -= 1,
                    "<" if depth == 0 => nesting += 1,
                    ">" if depth == 0 && nesting > 0 => nesting -= 1,
                    ">" if depth == 0 => return closes_arguments(i),
                    // (`>>` closes two: `unbox<Box<unsigned>>(boxes)`.)
                    ">>" if depth == 0 && nesting == 1 => return closes_arguments(i),
                    ">>" if depth == 0 && nesting > 1 => nesting -= 2,
                    word if stops(word) => return false,
                    _ => {}
                }
            }
            false
        }
        ">" => {
            for i in (0..at).rev() {
                match text(i) {
                    ")" | "]" => depth += 1,
                    "(" | "[" if depth == 0 => return false,
                    "(" | "[" => depth -= 1,
                    ">" if depth == 0 => nesting += 1,
                    "<" if depth == 0 && nesting > 0 => nesting -= 1,
                    "<" if depth == 0 => {
                        return i > 0 && code[i - 1].kind == Kind::Identifier && closes_arguments(at);
                    }
                    word if stops(word) => return false,
                    _ => {}
                }
            }
            false
        }
        _ => false,
    }
}

/// Whether the relational operator at `at` compares a pointer: one of `pointers` (not indexed), an
/// address taken with `&`, or `this`, anywhere in either operand (`z + k < t + 1`).
fn compares_pointers(code: &[Token], at: usize, pointers: &BTreeSet<&str>) -> bool {
    if !binary_operator(code, at) || template_angle(code, at) {
        return false;
    }
    let pointer_at = |i: usize| names_a_pointer(code, i, pointers);
    let (left, right) = operands(code, at, false);
    // Compared with a number alone (`v > 0`), a pointer tells no distance: against 0 it is tested
    // for null, and `p > 5` does not compile.
    if a_literal_alone(code, &left) || a_literal_alone(code, &right) {
        return false;
    }
    left.into_iter().chain(right).any(pointer_at)
}

/// The first cast of a pointer or reference (`const_cast`, `reinterpret_cast`, `(unsigned*)x`),
/// union, or string literal outside `printf(...)`, `static_assert(...)`, `_Pragma(...)` and
/// `extern "C"` in `code`, and what it is.
fn write_through<'c>(
    code: &'c [Token],
    starter_constants: &BTreeSet<&str>,
) -> Option<(&'c Token, &'static str, &'static str)> {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    // Names the part declares as pointers (`unsigned* z`, `Coord* z`, `auto* z`, `decltype(x)* z`,
    // `auto z = &x`) or arrays (`t[1]`); not `m * m`.
    let part_types = declared_types(code);
    let a_type = |i: usize| {
        is_type_word(text(i))
            || part_types.contains(text(i))
            || matches!(text(i), "const" | "volatile" | "auto" | ">" | "__restrict__")
    };
    // (Through qualifiers after the `*`, and a reference to a pointer: `unsigned* volatile z`,
    // `const unsigned* const& z`.)
    let star_before = |at: usize| {
        // (And a declarator in parentheses: `unsigned* (z) = &x;`.)
        let star = (0..at)
            .rev()
            .find(|&i| !matches!(text(i), "const" | "volatile" | "__restrict__" | "__restrict" | "&" | "&&" | "("));
        // (`unsigned a = 1, *p = &a;`: a later declarator's `*` follows a comma; `T (*f)()`, a
        // pointer to a function, a `(`; `decltype(t)* f`, a type from `decltype`.)
        let of_decltype =
            |close: usize| opener(code, close).is_some_and(|open| open > 0 && TYPE_OF.contains(&text(open - 1)));
        star.filter(|&i| {
            i > 0
                && text(i) == "*"
                && (a_type(i - 1) || matches!(text(i - 1), "," | "(") || text(i - 1) == ")" && of_decltype(i - 1))
        })
        .is_some()
    };
    let pointers_and_arrays: BTreeSet<&str> = (0..code.len())
        .filter(|&at| code[at].kind == Kind::Identifier)
        .filter(|&at| {
            star_before(at) && matches!(text(at + 1), "=" | ";" | "," | ")" | "{" | "(")
                || text(at + 1) == "=" && text(at + 2) == "&"
                // A reference to an array, which becomes a pointer: `unsigned (&w)[1] = t;`.
                || at > 1 && text(at - 1) == "&" && text(at - 2) == "(" && text(at + 1) == ")" && text(at + 2) == "["
                || text(at + 1) == "[" && at > 0 && (a_type(at - 1) || code[at - 1].kind == Kind::Identifier)
        })
        .map(text)
        .collect();
    // `auto z = t;` of a pointer or an array (which becomes a pointer).
    // Aliases of 64-bit integer types (`using U = unsigned long long;`, `typedef size_t U;`),
    // through aliases of aliases.
    let mut wide_aliases: BTreeSet<&str> = BTreeSet::new();
    loop {
        let wide = |i: usize| WIDE_INTEGER_WORDS.contains(&text(i)) || wide_aliases.contains(text(i));
        let found: Vec<&str> = (0..code.len())
            .filter_map(|at| match text(at) {
                "using" if text(at + 2) == "=" => {
                    (at + 3..code.len()).take_while(|&i| text(i) != ";").any(wide).then(|| text(at + 1))
                }
                "typedef" => {
                    let end = (at..code.len()).find(|&i| text(i) == ";")?;
                    (at + 1..end).any(wide).then(|| text(end - 1))
                }
                _ => None,
            })
            .filter(|name| !wide_aliases.contains(name))
            .collect();
        if found.is_empty() {
            break;
        }
        wide_aliases.extend(found);
    }
    // A template's type parameters: `typename U`, `class... Us` (a pack), `template <class> class W`.
    let template_types: BTreeSet<&str> = (0..code.len())
        .filter(|&at| matches!(text(at), "typename" | "class") && at > 0 && matches!(text(at - 1), "<" | "," | ">"))
        .map(|at| if text(at + 1) == "..." { at + 2 } else { at + 1 })
        .filter(|&name| matches!(text(name + 1), "," | ">" | "="))
        .map(text)
        .collect();
    // A value of a template's type, an `auto` parameter, a lambda's result or a function's of a
    // deduced type may be a pointer: in a difference or a comparison it counts as one (`template
    // <class P> long long gap(P a, P b) { return a - b; }`, `auto far = [] { return t; };`,
    // `__device__ auto there() { return t; }`).
    let maybe_pointers: BTreeSet<&str> = (1..code.len())
        .filter(|&at| code[at].kind == Kind::Identifier)
        .filter(|&at| {
            let typed = (0..at).rev().find(|&i| !matches!(text(i), "const" | "volatile" | "&" | "&&"));
            typed.is_some_and(|i| {
                template_types.contains(text(i))
                    // A type from `decltype` may be a pointer's: `decltype(there()) a = there();`.
                    || text(i) == ")" && opener(code, i).is_some_and(|open| open > 0 && TYPE_OF.contains(&text(open - 1)))
                    || text(i) == "auto" && matches!(text(at + 1), "," | ")" | "(")
                    || text(i) == "auto" && text(at + 1) == "=" && text(at + 2) == "["
            }) || text(at + 1) == "(" && (at >= 4 && (at - 4..at).map(text).eq(["decltype", "(", "auto", ")"]))
        })
        .map(text)
        .chain(pointers_and_arrays.iter().copied())
        .collect();
    // A name declared with `auto` holds whatever its value is (`auto b{&x};`, `auto f{there};`,
    // `auto a = t + 0;`): a pointer where its initializer holds one, an address or a call of a
    // function that may return one; through copies of copies.
    let mut maybe_pointers = maybe_pointers;
    loop {
        let found: Vec<&str> = (1..code.len())
            .filter(|&at| {
                let typed = (0..at).rev().find(|&i| !matches!(text(i), "const" | "volatile" | "&" | "&&" | "*"));
                code[at].kind == Kind::Identifier
                    && typed.is_some_and(|i| text(i) == "auto")
                    && matches!(text(at + 1), "=" | "{" | "(")
                    && !maybe_pointers.contains(text(at))
            })
            .filter(|&at| {
                let end = (at + 1..code.len()).find(|&i| matches!(text(i), ";" | ",")).unwrap_or(code.len());
                (at + 2..end).any(|i| names_a_pointer(code, i, &maybe_pointers))
            })
            .map(text)
            .collect();
        if found.is_empty() {
            break;
        }
        maybe_pointers.extend(found);
    }
    // Names the part gives numbers (`unsigned row`, `const int k = 2`) and functions that return
    // one (`unsigned at(...)`): a cast of one to 64 bits makes no address a number. (A name also
    // given to a pointer anywhere in the part is none.)
    let numbers: BTreeSet<&str> = (1..code.len())
        .filter(|&at| code[at].kind == Kind::Identifier && !maybe_pointers.contains(text(at)))
        .filter(|&at| {
            let typed =
                (0..at).rev().find(|&i| !matches!(text(i), "const" | "volatile" | "__forceinline__" | "inline"));
            typed.is_some_and(|i| is_type_word(text(i)) && text(i) != "void")
                && matches!(text(at + 1), "," | ")" | "=" | ";" | "(" | "{")
        })
        .map(text)
        .chain(starter_constants.iter().copied().filter(|name| !maybe_pointers.contains(name)))
        // CUDA's functions of numbers, where the part declares none of that name.
        .chain(NUMBER_FUNCTIONS.into_iter().filter(|name| {
            !(1..code.len()).any(|i| {
                text(i) == *name
                    && (is_type_word(text(i - 1))
                        || matches!(text(i - 1), "*" | "&" | "&&" | "auto" | ">" | "::" | "}" | ";" | "#")
                        || part_types.contains(text(i - 1)))
            })
        }))
        .collect();
    let at_close = |open: usize| declared::matching(code, open);
    // Where each literal stands: inside the parentheses of which call, if any.
    let mut calls: Vec<&str> = Vec::new();
    for (at, token) in code.iter().enumerate() {
        match token.text.as_str() {
            // An address made a number: two such numbers subtracted move a pointer onto any data,
            // as a difference of pointers would. Only a 64-bit integer holds an address (a cast of
            // one to a narrower number does not compile): `(unsigned long long)t`, `size_t(&x)`.
            "(" if casts_to_a_wide_integer(code, at, &wide_aliases) && !a_number(code, at_close(at) + 1, &numbers) => {
                return Some((token, "a cast to a 64-bit integer (which can make an address a number)", WIDE_NUMBERS));
            }
            "(" => calls.push(if at > 0 { text(at - 1) } else { "" }),
            // What `*pp`, `pa[0]` or `s.*m` reads is a pointer no name shows.
            "*" if at > 0
                && a_type(at - 1)
                && (at + 1..code.len())
                    .find(|&i| !matches!(text(i), "const" | "volatile" | "__restrict__" | "__restrict"))
                    .is_some_and(|i| text(i) == "*") =>
            {
                return Some((token, "a pointer to a pointer", "keep one array of values and index it with numbers"));
            }
            "::" if text(at + 1) == "*" => {
                return Some((token, "a pointer to a member", "keep values in locals and index with numbers"));
            }
            _ if token.kind == Kind::Identifier
                && at > 1
                && text(at - 1) == "*"
                && text(at - 2) == "("
                && text(at + 1) == ")"
                && text(at + 2) == "[" =>
            {
                return Some((token, "a pointer to an array", "index the array itself with numbers"));
            }
            // A function that returns a reference or pointer to an array returns what becomes a
            // pointer: `const unsigned (&there())[1] { return t; }`.
            _ if token.kind == Kind::Identifier
                && at > 1
                && matches!(text(at - 1), "&" | "&&" | "*")
                && text(at - 2) == "("
                && text(at + 1) == "("
                && text(declared::matching(code, at + 1) + 1) == ")"
                && text(declared::matching(code, at + 1) + 2) == "[" =>
            {
                return Some((
                    token,
                    "a function that returns an array",
                    "return a value, and index the array with numbers",
                ));
            }
            // A row of an array of arrays is a pointer no name shows (`t[0] - u[0]`); but for the
            // tiles in shared memory the exercises are about, whose rows are nothing of another's.
            _ if token.kind == Kind::Identifier
                && at > 0
                && a_type(at - 1)
                && text(at + 1) == "["
                && text(declared::matching(code, at + 1) + 1) == "["
                && !(statement_start(code, at)..at).any(|i| text(i) == "__shared__") =>
            {
                return Some((
                    token,
                    "an array of arrays (whose rows are pointers)",
                    "keep one array and index it with `row * width + column`",
                ));
            }
            // An element of an array of pointers is a pointer no name shows (`ps[0] - ps[1]`).
            _ if token.kind == Kind::Identifier && text(at + 1) == "[" && star_before(at) => {
                return Some((token, "an array of pointers", "keep one array of values and index it with numbers"));
            }
            // `auto [p, q] = pair;` names values that may be pointers, with no type shown.
            "auto" if text(at + 1) == "[" || matches!(text(at + 1), "&" | "&&") && text(at + 2) == "[" => {
                return Some((
                    token,
                    "a structured binding, whose names may be pointers,",
                    "declare each value with its type",
                ));
            }
            ")" => {
                calls.pop();
            }
            "const_cast" => return Some((token, "`const_cast`", KEEP_IN_LOCALS)),
            // (`= delete` deletes a function.)
            "delete" if at > 0 && text(at - 1) == "=" => {}
            // (`free` keeps nothing: a local named `free` is a name.)
            "memcpy" | "memmove" | "memset" | "__builtin_bit_cast" | "new" | "delete" | "malloc" => {
                return Some((token, "copying bytes, or memory from the device's heap,", KEEP_IN_LOCALS));
            }
            word if word.starts_with("__cvta_") => return Some((token, "converting addresses", KEEP_IN_LOCALS)),
            // A pointer or reference type by another name makes a cast no `*)` shows: `P(seen)`; and
            // `decltype(t)` may be a pointer's type: `using P = decltype(t); P(address)`.
            "using" | "typedef" if text(at + 2) == "=" || token.text == "typedef" => {
                let mut alias = (at + 1..code.len()).take_while(|&i| text(i) != ";").map(text);
                if alias.clone().any(|word| matches!(word, "*" | "&" | "&&")) {
                    return Some((token, "an alias of a pointer or reference type", KEEP_IN_LOCALS));
                }
                if alias.any(|word| matches!(word, "decltype" | "__typeof__" | "typeof")) {
                    return Some((token, "an alias of a type from `decltype`", "write the type itself"));
                }
            }
            // A template's type may be a pointer (deduced from one): a cast to it, `(U)s` or
            // `U(s)`, could drop a `const` or make an address of a number.
            // (Not a trailing return type: `-> U {`.)
            name if template_types.contains(name)
                && !(at > 0 && text(at - 1) == "->")
                // (`T()`, `T{}`: a value of its own, no conversion.)
                && (matches!(text(at + 1), "(" | "{") && !matches!(text(at + 2), ")" | "}")
                    || in_a_cast(code, at, &part_types)
                    // (`using P = U;`, `typedef U P;`, `operator U()`: the same type by other names.)
                    || (statement_start(code, at)..at).any(|i| {
                        matches!(text(i), "using" | "typedef" | "operator") && (i + 1..at).all(|j| text(j) != "(")
                    })) =>
            {
                return Some((
                    token,
                    "a cast to a template's type, which may be a pointer,",
                    "convert with `static_cast<T>(...)`, which cannot drop a `const` or make an address of a number",
                ));
            }
            "decltype" if text(at + 1) == "(" => {
                let close = declared::matching(code, at + 1);
                // `&x`, `*p`, `declval<T&>()`: a pointer or reference. Between two operands
                // (`row * 2u`, `row & 31u`) the operator makes a number.
                let operand_end = |i: usize| {
                    code.get(i).is_some_and(|t| matches!(t.kind, Kind::Identifier | Kind::Number) || t.text == ")")
                };
                let operand_start = |i: usize| {
                    code.get(i).is_some_and(|t| matches!(t.kind, Kind::Identifier | Kind::Number) || t.text == "(")
                };
                if (at + 2..close)
                    .any(|i| matches!(text(i), "*" | "&" | "&&") && !(operand_end(i - 1) && operand_start(i + 1)))
                {
                    return Some((token, "a pointer or reference type from `decltype`", KEEP_IN_LOCALS));
                }
                // A type from `decltype` used as a cast: `decltype(p)(x)`, `(decltype(p))x`; not
                // `sizeof(decltype(p))`.
                // (Through qualifiers too: `(decltype(z) const)t`.)
                let after =
                    (close + 1..code.len()).find(|&i| !matches!(text(i), "const" | "volatile")).unwrap_or(close + 1);
                if text(after) == "(" || text(after) == ")" && !in_unevaluated(code, at) {
                    return Some((token, "a cast to a type from `decltype`", KEEP_IN_LOCALS));
                }
            }
            word if word.starts_with("__add_") => {
                return Some((token, "a pointer or reference type from a type trait", KEEP_IN_LOCALS));
            }
            "reinterpret_cast" => return Some((token, "`reinterpret_cast`", KEEP_IN_LOCALS)),
            // A `void*` converts to any pointer, and `__builtin_assume_aligned` makes one of a
            // `const` pointer.
            "__builtin_assume_aligned" => return Some((token, "`__builtin_assume_aligned`", KEEP_IN_LOCALS)),
            // A compiler's built-in function may take or make an address no check reads
            // (`__builtin_addressof(x)`); those of numbers are fine.
            word if word.starts_with("__builtin_") && !NUMBER_BUILTINS.contains(&word) || word == "addressof" => {
                return Some((token, "a compiler's built-in function other than those of numbers", KEEP_IN_LOCALS));
            }
            "void"
                if text(at + 1) == "*"
                    && at > 0
                    && text(at - 1) != "const"
                    && text(at + 2) != "const"
                    && !in_unevaluated(code, at)
                    && !printed_pointer(code, at) =>
            {
                return Some((token, "a pointer to `void` that is not `const`", KEEP_IN_LOCALS));
            }
            // `this` kept (`self(this)`, `S& me = *this`) makes a constant object writable through
            // itself; `this->v` and `return *this` keep nothing.
            "this" if text(at + 1) != "->" && !(at > 0 && text(at - 1) == "*" && !binds_a_reference(code, at)) => {
                return Some((
                    token,
                    "`this` kept or handed on",
                    "use `this->` for members and copy `*this` by value; capture with `[=]`",
                ));
            }
            // (The same as a function's: `size_t(&x)`, `U{t}`.)
            word if (WIDE_INTEGER_WORDS.contains(&word) || wide_aliases.contains(word))
                && matches!(text(at + 1), "(" | "{")
                && !(at > 0 && matches!(text(at - 1), "sizeof" | "alignof" | "__alignof__"))
                && !a_number(code, at + 2, &numbers) =>
            {
                return Some((token, "a cast to a 64-bit integer (which can make an address a number)", WIDE_NUMBERS));
            }
            // `z + k < t`, halved step by step, finds how far another's data lies from a writable
            // pointer with no cast and no difference of pointers.
            "<" | ">" | "<=" | ">=" if compares_pointers(code, at, &pointers_and_arrays) => {
                return Some((token, "a comparison of pointers (which finds where other data lies)", KEEP_IN_LOCALS));
            }
            "<" | ">" | "<=" | ">=" if compares_pointers(code, at, &maybe_pointers) => {
                return Some((
                    token,
                    "a comparison of values that may be pointers (of a template's type, or from `auto` or `decltype`),",
                    OF_A_NAMED_TYPE,
                ));
            }
            // `z + (t - z)` moves a writable pointer onto any data, `const` or not: a difference
            // of pointers (one of the part's pointers or arrays, or an address taken with `&`).
            "-" if !pointer_operand(code, at, &pointers_and_arrays) && pointer_operand(code, at, &maybe_pointers) => {
                return Some((
                    token,
                    "a difference of values that may be pointers (of a template's type, or from `auto` or `decltype`),",
                    OF_A_NAMED_TYPE,
                ));
            }
            "-" if pointer_operand(code, at, &pointers_and_arrays) => {
                return Some((
                    token,
                    "a difference of pointers (which moves one onto the other's data)",
                    KEEP_IN_LOCALS,
                ));
            }
            // `z + (t - z)` moves a null pointer onto any data, `const` or not, with no cast.
            "nullptr" | "NULL" => {
                return Some((token, "a null pointer (which arithmetic can move onto any data)", KEEP_IN_LOCALS));
            }
            "*" if matches!(text(at + 2), "=" | "{")
                && code.get(at + 1).is_some_and(|t| t.kind == Kind::Identifier)
                && matches!(text(at + 3), "0" | "}" | "0u" | "0l" | "0ul" | "0ull")
                && (text(at + 2) == "{" || matches!(text(at + 4), ";" | ",")) =>
            {
                return Some((token, "a null pointer (which arithmetic can move onto any data)", KEEP_IN_LOCALS));
            }
            "union" => return Some((token, "a union", KEEP_IN_LOCALS)),
            // `*` or `&` then `)`, perhaps through `const` or a template's `>`: a type in
            // parentheses, a cast (`(unsigned*)x`, `(Id<unsigned*>)x`); or then `>(`, a cast
            // through a template (`Id<unsigned*>(x)`, `ref<bool&>(x)`).
            "*" | "&" | "&&" => {
                let skipped = |i: &usize| matches!(text(*i), "const" | "volatile" | "__restrict__" | "__restrict");
                let next = (at + 1..code.len()).find(|i| !skipped(i));
                let after_angles = next.map(|i| (i..code.len()).find(|&j| !matches!(text(j), ">" | ">>")).unwrap_or(i));
                let through_angles = next.is_some_and(|i| matches!(text(i), ">" | ">>"));
                // (Not a parameter's type, `pick(unsigned v, const unsigned*)`, nor one `sizeof`
                // measures.)
                let closes_a_type = next.is_some_and(|i| text(i) == ")")
                    && !in_unevaluated(code, at)
                    && !closes_parameters(code, next.unwrap_or(at), &part_types);
                if closes_a_type && !printed_pointer(code, at)
                    || through_angles && after_angles.is_some_and(|j| matches!(text(j), ")" | "("))
                {
                    return Some((token, "a cast to a pointer or a reference", KEEP_IN_LOCALS));
                }
                // A template given a pointer or reference type can cast to it by another name:
                // `rm<unsigned*>::type(&k)`, `template <class U = unsigned*> ... U(&k)`.
                if through_angles {
                    return Some((token, "a pointer or reference type as a template's argument", KEEP_IN_LOCALS));
                }
            }
            // Those calls are CUDA's own: a function of the part's by their name (`int printf(char*
            // s)`) could write to the literal it is given.
            "printf" | "assert"
                if at > 0
                    && !matches!(
                        text(at - 1),
                        ";" | "{"
                            | "}"
                            | "("
                            | ")"
                            | ","
                            | "?"
                            | ":"
                            | "="
                            | "&&"
                            | "||"
                            | "!"
                            | "return"
                            | "else"
                            | "do"
                    ) =>
            {
                return Some((token, "a function of your own named `printf` or `assert`", KEEP_IN_LOCALS));
            }
            literal if token.kind == Kind::Literal && literal.ends_with('"') => {
                let linkage = at > 0 && text(at - 1) == "extern";
                // (Given to the call itself, as a whole argument: `assert(f("x"))` gives it to `f`,
                // `assert(s = "x")` to `s`.)
                let before = at.checked_sub(1).and_then(|i| code.get(i));
                // Or a choice between strings that is the whole argument, `k ? "odd" : "even"`,
                // nothing assigned in it.
                // (An expression alone: no lambda's body or braces, `[&] { char* t{k ? "a" : "b"}; }`.)
                let chosen = before.is_some_and(|t| matches!(t.text.as_str(), "?" | ":"))
                    && matches!(text(at + 1), ")" | "," | ":")
                    && !argument_of_the_call(code, at).any(|t| {
                        t.text.ends_with('=') && !matches!(t.text.as_str(), "==" | "!=" | "<=" | ">=")
                            || matches!(t.text.as_str(), "{" | "}" | "[" | "]" | ";" | "++" | "--")
                    });
                let whole = before.is_some_and(|t| matches!(t.text.as_str(), "(" | "," | "&&" | "!"))
                    && matches!(text(at + 1), ")" | "," | "&&")
                    || chosen
                    || before.is_some_and(|t| t.kind == Kind::Literal)
                    || code.get(at + 1).is_some_and(|t| t.kind == Kind::Literal);
                // (`%n` makes printf write through its argument.)
                if writes_a_count(literal) {
                    return Some((token, "printf's `%n`", "print without `%n`"));
                }
                let said = whole
                    && calls
                        .last()
                        .is_some_and(|call| matches!(*call, "printf" | "assert" | "static_assert" | "_Pragma"));
                if !linkage && !said && !in_attribute(code, at) && !names_a_constant_string(code, at) {
                    return Some((
                        token,
                        "a string literal",
                        "give a string only as a whole argument of `printf`, `assert` (`assert(k < 32 && \"why\")`, \
                         `assert(!\"unreachable\")`) or `static_assert`, and choose between two strings with `if`",
                    ));
                }
            }
            _ => {}
        }
    }
    None
}

/// Whether `word` names a type: C++'s own, or CUDA's vector types (`uint3`, `float4`, `dim3`).
fn is_type_word(word: &str) -> bool {
    let base = word.trim_end_matches(|c: char| c.is_ascii_digit());
    declared::cpp_type_word(word)
        || word == "dim3"
        || (matches!(&word[base.len()..], "1" | "2" | "3" | "4")
            && matches!(
                base,
                "char"
                    | "uchar"
                    | "short"
                    | "ushort"
                    | "int"
                    | "uint"
                    | "long"
                    | "ulong"
                    | "longlong"
                    | "ulonglong"
                    | "float"
                    | "double"
            ))
}

/// Where the statement that `code[at]` is in begins: after the last `;`, `{` or `}` before it.
fn statement_start(code: &[Token], at: usize) -> usize {
    (0..at).rev().find(|&i| matches!(code[i].text.as_str(), ";" | "{" | "}")).map_or(0, |i| i + 1)
}

/// The openers of the parentheses and brackets about `code[at]`, innermost first.
fn enclosing(code: &[Token], at: usize) -> impl Iterator<Item = usize> + '_ {
    let mut depth = 0usize;
    (0..at).rev().filter(move |&i| match code[i].text.as_str() {
        ")" | "]" => {
            depth += 1;
            false
        }
        "(" | "[" if depth > 0 => {
            depth -= 1;
            false
        }
        "(" | "[" => true,
        _ => false,
    })
}

/// Whether `code[at]` is inside `sizeof(...)`, `alignof(...)` or `__alignof__(...)`, which
/// evaluate nothing.
fn in_unevaluated(code: &[Token], at: usize) -> bool {
    enclosing(code, at)
        .any(|open| open > 0 && matches!(code[open - 1].text.as_str(), "sizeof" | "alignof" | "__alignof__"))
}

/// Whether the `)` at `close` ends a function's parameters: its `(` follows a name of the part's
/// (`pick(...)`), not a word of C++'s or a reserved name (`return (...)`, `__typeof__(...)`), so
/// it begins no cast.
fn closes_parameters(code: &[Token], close: usize, types: &BTreeSet<&str>) -> bool {
    let Some(open) = enclosing(code, close).next() else { return false };
    let name = open.checked_sub(1).map(|i| &code[i]);
    // (`(*)`, `(&)`, `(*const)`: a declarator with no name, of a pointer cast `(C (*)[1])s`.)
    let names_a_type = code[open + 1..close].iter().any(|t| {
        t.kind == Kind::Identifier && !matches!(t.text.as_str(), "const" | "volatile" | "__restrict__" | "__restrict")
    });
    code[open].text == "("
        && names_a_type
        && name.is_some_and(|name| !types.contains(name.text.as_str()))
        && name.is_some_and(|name| {
            name.kind == Kind::Identifier
                && !name.text.starts_with('_')
                && !is_type_word(&name.text)
                && !declared::EXPRESSION_WORDS.contains(&name.text.as_str())
                && !matches!(
                    name.text.as_str(),
                    "decltype"
                        | "typeof"
                        | "if"
                        | "while"
                        | "for"
                        | "switch"
                        | "catch"
                        | "noexcept"
                        | "alignas"
                        | "static_assert"
                        | "requires"
                )
        })
}

/// Whether a string holds a `%n` conversion (`%n`, `%hhn`, `%5ln`): a count printf writes.
fn writes_a_count(literal: &str) -> bool {
    let mut rest = literal;
    while let Some(percent) = rest.find('%') {
        let conversion = &rest[percent + 1..];
        let length = conversion.find(|c: char| c.is_ascii_alphabetic() && !"hljztL".contains(c) || c == '%');
        match length.map(|end| &conversion[end..end + 1]) {
            Some("n") => return true,
            Some("%") if length == Some(0) => rest = &conversion[1..],
            _ => rest = conversion,
        }
    }
    false
}

/// Whether the binary `-` at `at` subtracts a pointer (a name of `pointers` not indexed, an
/// address taken with `&`, or `this`, alone or in parentheses: `t - z`, `t - &x`, `t - (z + 0)`),
/// or takes anything but a number from one (`(ull)t - (ull)p`). A pointer less a number
/// (`*(p - 1)`) moves within its own data.
fn pointer_operand(code: &[Token], at: usize, pointers: &BTreeSet<&str>) -> bool {
    if !binary_operator(code, at) {
        return false;
    }
    let (left, right) = operands(code, at, true);
    let pointer_in = |side: &[usize]| side.iter().any(|&i| names_a_pointer(code, i, pointers));
    // A pointer less a number moves within its own data (`end - 1`); less anything else, or
    // anything less a pointer, is a distance (`t + 0 - +z`, `(ull)t - (ull)p`).
    pointer_in(&right) || pointer_in(&left) && !a_literal_alone(code, &right)
}

/// Whether the operator at `at` is binary: an operand ends before it (a number, a name that is no
/// keyword of an expression, `)` or `]`).
fn binary_operator(code: &[Token], at: usize) -> bool {
    at > 0
        && (code[at - 1].kind == Kind::Number
            || code[at - 1].kind == Kind::Identifier
                && !declared::EXPRESSION_WORDS.contains(&code[at - 1].text.as_str())
            || matches!(code[at - 1].text.as_str(), ")" | "]"))
}

/// Whether `code[i]` stands for a pointer: one of `pointers` not indexed, called or a member's
/// object, an address taken with `&`, or `this` (not `this->`).
fn names_a_pointer(code: &[Token], i: usize, pointers: &BTreeSet<&str>) -> bool {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    let after_an_operand =
        i > 0 && (matches!(text(i - 1), ")" | "]") || matches!(code[i - 1].kind, Kind::Identifier | Kind::Number));
    let pointer = matches!(text(i), "&" | "&&") && i > 0 && !after_an_operand
        || text(i) == "this" && text(i + 1) != "->"
        // (Called, a function of the part that returns a pointer: `there() - mine(x)`.)
        || pointers.contains(text(i))
            && code[i].kind == Kind::Identifier
            && !matches!(text(i + 1), "[" | "." | "->")
            && !(i > 0 && text(i - 1) == "*");
    // (`sizeof(tile) <= limit` measures an array; it compares no address.)
    pointer && !in_unevaluated(code, i)
}

/// The tokens of the operands of the binary operator at `at`, left and right, to where an
/// expression's part ends (a bracket not its own, a separator, an assignment, a logical or
/// conditional operator, a comparison; for a difference, `+` and `-` end the right operand too).
/// A call's arguments, and what a dereferenced group holds (`*(end - 1)`), are passed over: what
/// a call returns is a pointer only where its name says so, and what `*` reads is a value.
fn operands(code: &[Token], at: usize, difference: bool) -> (Vec<usize>, Vec<usize>) {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    let ends = |word: &str| {
        matches!(
            word,
            ";" | "," | "{" | "}" | "?" | ":" | "=" | "&&" | "||" | "<" | ">" | "<=" | ">=" | "==" | "!=" | "return"
        )
    };
    // (A dereferenced group that takes an address reads the pointer itself: `*(&p)` is `p`.)
    let takes_an_address = |open: usize| {
        (open + 1..declared::matching(code, open).min(code.len()))
            .any(|i| matches!(text(i), "&" | "&&") && !binary_operator(code, i))
    };
    let passed_over = |open: usize| {
        open > 0
            && (code[open - 1].kind == Kind::Identifier && !declared::EXPRESSION_WORDS.contains(&text(open - 1))
                || matches!(text(open - 1), ">" | ">>")
                || text(open - 1) == "*" && !binary_operator(code, open - 1) && !takes_an_address(open))
    };
    // (Backwards, a group is known to be a call's at its opener: what it held is dropped then.
    // One pass, whatever the nesting.)
    let mut left = Vec::new();
    let mut groups: Vec<usize> = Vec::new();
    let mut i = at;
    while i > 0 {
        i -= 1;
        match text(i) {
            ")" | "]" => {
                groups.push(left.len());
                left.push(i);
            }
            "(" | "[" => match groups.pop() {
                None => break,
                Some(held) if text(i) == "(" && passed_over(i) => left.truncate(held),
                Some(_) => left.push(i),
            },
            word if groups.is_empty() && ends(word) => break,
            _ => left.push(i),
        }
    }
    let mut right = Vec::new();
    let (mut depth, mut i) = (0i64, at + 1);
    while i < code.len() {
        match text(i) {
            "(" if passed_over(i) => {
                i = declared::matching(code, i) + 1;
                continue;
            }
            "(" | "[" => depth += 1,
            ")" | "]" if depth == 0 => break,
            ")" | "]" => depth -= 1,
            "+" | "-" if difference && depth == 0 && !right.is_empty() && binary_operator(code, i) => break,
            word if depth == 0 && ends(word) => break,
            _ => {}
        }
        right.push(i);
        i += 1;
    }
    (left, right)
}

/// Whether an operand (its tokens, as [`operands`] gives them) is one number literal.
fn a_literal_alone(code: &[Token], side: &[usize]) -> bool {
    matches!(side, [only] if code[*only].kind == Kind::Number)
}

/// The `(` or `[` that the `)` or `]` at `close` closes.
fn opener(code: &[Token], close: usize) -> Option<usize> {
    let mut depth = 0i64;
    (0..=close).rev().find(|&i| {
        match code[i].text.as_str() {
            ")" | "]" => depth += 1,
            "(" | "[" => depth -= 1,
            _ => {}
        }
        depth == 0
    })
}

/// Whether the `*this` at `at` is bound to a reference or kept in a member initializer:
/// `S& me = *this;`, `me(*this)` after a constructor's `:`.
fn binds_a_reference(code: &[Token], at: usize) -> bool {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    let start = statement_start(code, at);
    let statement: Vec<&str> = (start..at).map(text).collect();
    let reference = statement.windows(3).any(|w| matches!(w[0], "&" | "&&") && matches!(w[2], "=" | "{" | "("));
    let initializer = statement.windows(2).any(|w| w == [")", ":"]);
    reference || initializer
}

/// Whether `code[at]` is in the parentheses of a C-style cast: `(U)s`, `(U const)s`,
/// `(const volatile U)s`, not a function's parameters, nor `sizeof(U)`.
fn in_a_cast(code: &[Token], at: usize, types: &BTreeSet<&str>) -> bool {
    let Some(open) = enclosing(code, at).next().filter(|&open| code[open].text == "(") else { return false };
    let close = declared::matching(code, open);
    let qualified = code[open + 1..close.min(code.len())]
        .iter()
        .enumerate()
        .all(|(i, t)| open + 1 + i == at || matches!(t.text.as_str(), "const" | "volatile" | "typename"));
    qualified && !in_unevaluated(code, at) && !closes_parameters(code, close, types)
}

/// Whether the literal at `at` is all or a branch of the value a `const char*` is declared with,
/// the whole of it: `const char* parity = s % 2u ? "odd" : "even";` (a `const char*` cannot write).
fn names_a_constant_string(code: &[Token], at: usize) -> bool {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    let start = statement_start(code, at);
    let end = (at..code.len()).find(|&i| text(i) == ";").unwrap_or(code.len());
    let Some(equals) = (start..at).find(|&i| text(i) == "=") else { return false };
    let declared: Vec<&str> = (start..equals).map(text).collect();
    let constant_pointer = matches!(
        declared[..],
        ["const", "char", "*", name] | ["char", "const", "*", name] | ["const", "char", "*", "const", name]
            | ["char", "const", "*", "const", name] if code[equals - 1].kind == Kind::Identifier && !name.is_empty()
    );
    // The value: literals, and conditions of names, numbers and operators that assign nothing.
    let plain_value = (equals + 1..end).all(|i| {
        let t = &code[i];
        matches!(t.kind, Kind::Identifier | Kind::Number | Kind::Literal)
            || matches!(
                t.text.as_str(),
                "?" | ":"
                    | "("
                    | ")"
                    | "%"
                    | "+"
                    | "-"
                    | "*"
                    | "/"
                    | "&"
                    | "|"
                    | "^"
                    | "=="
                    | "!="
                    | "<"
                    | ">"
                    | "<="
                    | ">="
                    | "&&"
                    | "||"
                    | "!"
            )
    }) && (equals + 1..end)
        .all(|i| code[i].kind != Kind::Identifier || !matches!(text(i + 1), "(" | "["));
    let branch = matches!(text(at - 1), "=" | "?" | ":") && matches!(text(at + 1), ";" | ":");
    constant_pointer && plain_value && branch
}

/// The tokens of the argument `code[at]` is in, from the `(` or `,` before it to the `)` or `,`
/// after it, at the depth of the innermost parentheses about it.
fn argument_of_the_call(code: &[Token], at: usize) -> impl Iterator<Item = &Token> {
    let open = enclosing(code, at).next().unwrap_or(0);
    let close = declared::matching(code, open).min(code.len());
    // (One pass: the commas that no `(` or `[` inside the call encloses.)
    let mut depth = 0usize;
    let mut top_level_commas = Vec::new();
    for (i, token) in code.iter().enumerate().take(close).skip(open + 1) {
        match token.text.as_str() {
            "(" | "[" => depth += 1,
            ")" | "]" => depth = depth.saturating_sub(1),
            "," if depth == 0 => top_level_commas.push(i),
            _ => {}
        }
    }
    let start = top_level_commas.iter().rev().find(|&&i| i < at).map_or(open + 1, |i| i + 1);
    let end = top_level_commas.iter().find(|&&i| i > at).copied().unwrap_or(close);
    code[start..end].iter()
}

/// Whether `code[at]` is inside an attribute, `[[...]]`, which runs nothing.
fn in_attribute(code: &[Token], at: usize) -> bool {
    let openers: Vec<usize> = enclosing(code, at).collect();
    openers
        .iter()
        .any(|&open| code[open].text == "[" && open > 0 && code[open - 1].text == "[" && openers.contains(&(open - 1)))
}

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

/// The first `__shared__` in `code` (a part's tokens, without attributes) that declares a variable
/// of the part's own: anywhere in a part outside a function (`inside_function` false); in a part
/// within a kernel, inside a body of the part's (a function's, a lambda's, a block's), or at the
/// part's own level anything but one plain declaration of a name the starter's part declares
/// there (`tiles`: `__shared__ unsigned tile[32][33];`), a declarator in parentheses, a second
/// one, or another name, however the code after names its own.
fn own_shared_variable<'c>(code: &'c [Token], inside_function: bool, tiles: &BTreeSet<&str>) -> Option<&'c Token> {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    let one_tile = |at: usize| {
        let (bound, end) = shared_declaration(code, at);
        let declaration = at + 1..end;
        // (Outside the bounds' brackets: `[32 + (PAD)]` is a bound.)
        let mut depth = 0i64;
        let outside_bounds = declaration.clone().filter(|&i| {
            depth += i64::from(text(i) == "[") - i64::from(text(i) == "]");
            depth == 0 && text(i) != "]"
        });
        // (`extern __shared__ unsigned tile[][33];` is memory the launch does not give.)
        let dynamic = (statement_start(code, at)..at).any(|i| text(i) == "extern");
        !dynamic
            && bound > at + 1
            && tiles.contains(text(bound - 1))
            && !outside_bounds.into_iter().any(|i| matches!(text(i), "(" | "," | "{" | "="))
            // (A type by another name too: `uint8_t`, `Row` of `using Row = unsigned[33];`.)
            && (at + 1..bound - 1).all(|i| {
                code[i].kind == Kind::Identifier || matches!(text(i), "static" | "volatile" | "const" | "::")
            })
    };
    let mut open = 0;
    code.iter().enumerate().find_map(|(at, t)| {
        let own = t.text == "__shared__" && (!inside_function || open > 0 || !one_tile(at));
        open += brace_step(t);
        own.then_some(t)
    })
}

/// The declaration whose `__shared__` is at `at`: where its first `[` is (the declarator's name
/// just before it), or its end if it has none, and where it ends (its `;`).
fn shared_declaration(code: &[Token], at: usize) -> (usize, usize) {
    let end = (at..code.len()).find(|&i| code[i].text == ";").unwrap_or(code.len());
    let bound = (at + 1..end).find(|&i| code[i].text == "[").unwrap_or(end);
    (bound, end)
}

/// The first place where a part within a kernel uses its tile (`tiles`, the starter's part's
/// shared names), which the code after fills: before that it holds what the last block left
/// there, and a pointer to it could read that. (Its own declaration, and `sizeof`, `alignof` or
/// `decltype` of it, read nothing.)
fn tile_read<'c>(code: &'c [Token], tiles: &BTreeSet<&str>) -> Option<&'c Token> {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    let mut unevaluated_until = 0;
    let mut declaring = false;
    code.iter().enumerate().find_map(|(at, t)| {
        if matches!(text(at), "sizeof" | "alignof" | "__alignof__" | "decltype" | "__typeof__") {
            unevaluated_until = unevaluated_until.max(match text(at + 1) {
                "(" => declared::matching(code, at + 1),
                _ => at + 1,
            });
        }
        match text(at) {
            "__shared__" => declaring = true,
            ";" => declaring = false,
            _ => {}
        }
        (tiles.contains(t.text.as_str()) && !declaring && at > unevaluated_until).then_some(t)
    })
}

/// Open braces at the end of `tokens`.
fn depth(tokens: &[Token]) -> i64 {
    tokens.iter().map(brace_step).sum()
}

/// What `token` does to the count of open braces.
fn brace_step(token: &Token) -> i64 {
    match (token.kind, token.text.as_str()) {
        (Kind::Punct, "{") => 1,
        (Kind::Punct, "}") => -1,
        _ => 0,
    }
}

/// The index of the one line that is `marker` (whatever its indent); `None` if there is none or
/// several.
fn marker_line(lines: &[&str], marker: &str) -> Option<usize> {
    let mut found = lines.iter().enumerate().filter(|(_, l)| l.trim() == marker).map(|(i, _)| i);
    match (found.next(), found.next()) {
        (Some(index), None) => Some(index),
        _ => None,
    }
}

/// `line`, trimmed, with what cannot be seen made visible: a tab as `\t`, any other control or
/// non-ASCII character as `\u{..}`.
pub fn visible(line: &str) -> String {
    line.trim()
        .chars()
        .map(|c| match c {
            '\t' => "\\t".to_owned(),
            c if c.is_ascii_graphic() || c == ' ' => c.to_string(),
            c => format!("\\u{{{:04x}}}", u32::from(c)),
        })
        .collect()
}

/// The first token where `yours` and `starter` differ, shown with both lines.
/// `tokens` with each run of adjacent plain string literals joined into one, as the compiler joins
/// them: a formatter that breaks a long string (`"a long" " message"`) changes no string.
fn joined_strings(tokens: Vec<Token>) -> Vec<Token> {
    let plain =
        |t: &Token| t.kind == Kind::Literal && t.text.len() >= 2 && t.text.starts_with('"') && t.text.ends_with('"');
    let mut joined: Vec<Token> = Vec::with_capacity(tokens.len());
    for token in tokens {
        match joined.last_mut() {
            Some(last) if plain(last) && plain(&token) => {
                last.text.pop();
                last.text.push_str(&token.text[1..]);
            }
            _ => joined.push(token),
        }
    }
    joined
}

fn first_difference(
    yours: &[Token],
    starter: &[Token],
    your_lines: &[&str],
    starter_lines: &[&str],
) -> Option<Invalid> {
    let index = (0..yours.len().max(starter.len())).find(|&i| {
        let (a, b) = (yours.get(i), starter.get(i));
        a.map(|t| (t.kind, &t.text)) != b.map(|t| (t.kind, &t.text))
    })?;
    let shown = |token: Option<&Token>, lines: &[&str]| match token {
        Some(t) => visible(lines.get(t.line - 1).copied().unwrap_or("")),
        None => "(no line)".to_owned(),
    };
    let line = yours.get(index).or(yours.last()).map_or(1, |t| t.line);
    let token = match yours.get(index) {
        Some(t) if t.kind == Kind::EndOfDirective => "the end of a directive line".to_owned(),
        Some(t) => visible(&t.text),
        None => "the end of the file".to_owned(),
    };
    Some(Invalid::ChangedOutside {
        line,
        token,
        yours: shown(yours.get(index), your_lines),
        starter: shown(starter.get(index), starter_lines),
    })
}

/// Every `__global__ void NAME(PARAMS)` in `text`: name and parameter list.
fn kernels(text: &str) -> Vec<(&str, &str)> {
    let mut found = Vec::new();
    for (start, _) in text.match_indices("__global__") {
        let rest = text[start + "__global__".len()..].trim_start();
        let Some(rest) = rest.strip_prefix("void") else { continue };
        let mut rest = rest.trim_start();
        if let Some(bounds) = rest.strip_prefix("__launch_bounds__") {
            let Some(close) = bounds.find(')') else { continue };
            rest = bounds[close + 1..].trim_start();
        }
        let name_end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
        let (name, after) = rest.split_at(name_end);
        let Some(params) = after.trim_start().strip_prefix('(') else { continue };
        let Some(close) = params.find(')') else { continue };
        if !name.is_empty() {
            found.push((name, &params[..close]));
        }
    }
    found
}

/// A parameter list's words and punctuation, one space apart: `const unsigned *words` and
/// `const unsigned* words` are one signature (a formatter moves the `*`; the compiler reads both
/// alike).
fn signature_words(params: &str) -> String {
    let spaced: String = params
        .chars()
        .flat_map(|c| match c {
            '*' | '&' | ',' | '(' | ')' | '[' | ']' | '<' | '>' => vec![' ', c, ' '],
            c => vec![c],
        })
        .collect();
    spaced.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{Harness, Input};

    const STARTER: &str = "// top\n#define N 32\n// ---- EDIT BELOW ----\nint f() { return 0; }\n// ---- EDIT ABOVE ----\nextern \"C\" __global__ void k(unsigned* out, unsigned n) {\n    out[0] = f();\n}\n";

    fn exercise() -> Exercise {
        Exercise {
            id: "x".into(),
            lesson: 1,
            title: "t".into(),
            task: "do".into(),
            starter: "a.cu".into(),
            solution: "b.cu".into(),
            entry: "k".into(),
            signature: "unsigned* out, unsigned n".into(),
            harness: Harness::Transpose { block: [32, 8], check_n: 64, timed_n: 64 },
            inputs: vec![Input::Index],
            tolerance: 0.0,
            correct_points: 100,
            fallback_time_vs_reference: 1.5,
            hints: vec![],
            requirements: vec![],
            within: None,
        }
    }

    fn check(text: &str) -> Result<LearnerFile, Invalid> {
        validate(&exercise(), STARTER, text.as_bytes())
    }

    #[test]
    fn the_starter_and_edits_inside_the_region_pass() {
        let file = check(STARTER).unwrap();
        assert_eq!(file.region, (4, 4));
        assert_eq!(file.region_text(), "int f() { return 0; }");
        let edited = STARTER.replace("int f() { return 0; }", "// mine\nint f() {\n    return 1;\n}");
        let file = check(&edited).unwrap();
        assert_eq!(file.region, (4, 7));
        let windows = edited.replace('\n', "  \r\n") + "\r\n\r\n";
        assert_eq!(check(&windows).unwrap().region, (4, 7), "line endings and trailing blanks are not changes");
        // Functions whose declarations read unlike a plain one's: no variable is kept.
        for part in [
            "__device__ decltype(auto) f() { return 0; }",
            "template <unsigned K> __device__ int swz(unsigned x) { return x ^ K; }\n\
             template <> __device__ int swz<32u>(unsigned x) { return x; }\nint f() { return swz<32u>(0); }",
            "template <class T> __device__ int g(T v);\ntemplate <> __device__ int g<uint3>(uint3 v) { return v.x; }\n\
             int f() { return g(uint3{}); }",
            "template <unsigned K> __device__ unsigned mask();\n\
             template <> __device__ unsigned mask<32u>() { return 31u; }\nint f() { return mask<32u>(); }",
            "__device__ unsigned code_of(char16_t), wide(wchar_t);\nint f() { return 0; }",
            "__constant__ const unsigned lut[2] = {1u, 0u};\nstatic __constant__ constexpr unsigned other = 1;\n\
             int f() { return lut[0] + other; }",
            "__device__ unsigned bias(unsigned b = 0u);\nint f() { return 0; }",
            "template <typename U> __device__ U same(U);\nint f() { return 0; }",
            "__device__ unsigned pick(unsigned v, const unsigned*) { return v; }\n__device__ void put(unsigned&);\n\
             int f() { return 0; }",
            "static_assert(sizeof(void*) == 8, \"64-bit\");\nint f() { return 0; }",
            "int f() { const unsigned row = 1; const decltype(row * 2u) c = row & 1u;\n\
             static_assert(sizeof(decltype(row)) == 4, \"words\"); return c; }",
            "__device__ unsigned g(unsigned x) { return x; }\n__device__ unsigned g(int) = delete;\nint f() { return 0; }",
            "int f() { const unsigned global = 1, free = 2; return global + free; }",
            "int f() { assert(1 < 2 && \"in order\"); if (2 < 1) assert(!\"unreachable\"); return 0; }",
            "int f() { unsigned k = 3; printf(\"%s %u\\n\", k % 2u == 1 ? \"odd\" : \"even\", k); return 0; }",
            // A debugging print left in, by block: it changes no value.
            "int f() { unsigned k = 3;\n if (blockIdx.x == 0 && threadIdx.x == 0) printf(\"size %zu\\n\", sizeof(k));\n\
             if (blockIdx.x == gridDim.x - 1) { printf(\"last\\n\"); printf(\"%u %u\", blockIdx.x, (unsigned)sizeof k); }\n\
             printf(\"block %u\\n\", blockIdx.y); return k; }",
            "int f() { unsigned k = 3; const char* parity = k % 2u ? \"odd\" : \"even\"; printf(\"%s\", parity); return 0; }",
            "int f() { const unsigned t[2] = {1, 2}; unsigned k = 1, m = 4; return t[k] - t[0] - k + m * m - m; }",
            "__device__ unsigned dec(unsigned& c) { return c - 1u; }\n__device__ unsigned neg(const unsigned& x) { return -x; }\n\
             int f() { unsigned v = 2; return dec(v) + neg(v); }",
            "__device__ unsigned last(const unsigned* p, const unsigned* end) { return *(end - 1) - *p - 1u; }\n\
             int f() { const unsigned t[2] = {1, 2}; return last(t, t + 2) + sizeof t / sizeof *t - 1; }",
            "int f() { unsigned r = 5, m = 3; const unsigned base = (r % 4) * m; unsigned b = (r >> 1) & m; return base + b - 1u; }",
            "struct W { unsigned v; __device__ W& operator+=(W o) { v += o.v; return *this; }\n\
             __device__ W operator+(W o) const { W r = *this; r += o; return r; }\n\
             __device__ bool operator==(W o) const { return v == o.v; }\n\
             __device__ bool operator!=(W o) const { return !(*this == o); }\n\
             __device__ unsigned gap(W o) const { return o.v - this->v; } };\nint f() { return (W{1} + W{2}).v; }",
            "struct S { unsigned v; __device__ unsigned get() const { return this->v; } };\nint f() { return S{1}.get(); }",
            "int f() { char const* const name = \"f\"; printf(\"%s\", name); return 0; }",
            "int f() { const unsigned t[2] = {1, 2}; printf(\"%p %p\", (void*)t, (const void*)t); return 0; }",
            "template <typename U> __device__ auto same(U v) -> U { return v; }\nint f() { return same(0); }",
            "[[deprecated(\"use f\")]] __device__ unsigned old_f() { return 0; }\nint f() { return 0; }",
            "#pragma nv_diag_suppress 177\nint f() { return 0; }\n#pragma nv_diag_default 177",
            "__device__ unsigned twice(unsigned), thrice(unsigned x);\n\
             __device__ unsigned twice(unsigned x) { return 2 * x; }\nint f() { return twice(1); }",
            "__device__ unsigned around(uint3 v) { return v.x; }\nint f() { return around(uint3{}); }",
            "__device__ auto (load)(unsigned i) -> unsigned { return i; }\nint f() { return load(1); }",
            "__device__ unsigned __rot(unsigned x, unsigned r);\n\
             __device__ unsigned __rot(unsigned x, unsigned r) { return x >> r | x << (32u - r); }\nint f() { return __rot(1, 1); }",
            // `auto` from numbers (an element, a value read, a size), a group of numbers made 64-bit.
            "int f() { return __builtin_popcount(5u) + int(__builtin_expect(1, 1)); }",
            "int f() { unsigned t[2] = {1, 2}; const unsigned* p = t; auto s = t[0]; auto v = *p;\n\
             auto n = sizeof(t) / sizeof(t[0]); unsigned row = 1;\n\
             return s < 3u && v - s < n ? int((size_t)(row * 2u + 1u) + (long long)-1 + (unsigned long long)N) : 0; }",
            // What compares or widens no address: a size measured, what a call returns, a template's
            // value against a number, a number of the part's made 64-bit.
            "int f() { const unsigned t[4] = {1, 2, 3, 4}; static_assert(sizeof(t) <= 16u, \"small\");\n\
             unsigned s = 0; for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); ++i) s += t[i]; return s; }",
            "__device__ unsigned get(const unsigned* t, unsigned i) { return t[i]; }\n\
             template <typename T> __device__ bool positive(T v) { return v > 0; }\n\
             int f() { const unsigned t[2] = {1, 2}; unsigned row = 1; printf(\"%llu\", (unsigned long long)row);\n\
             return get(t, 1) < 16u && positive(row) ? int(size_t(row) * 2) : 0; }",
            // `const` numbers and tables are constants, as `constexpr` ones are.
            "static const unsigned mask = 31u;\n__device__ const unsigned lut[2] = {1u, 0u};\n\
             int f() { static const unsigned k = 1; return k + mask + lut[0]; }",
            "struct Coord { unsigned r; };\n__device__ unsigned of(const Coord& c);\n\
             __device__ unsigned of(const Coord& c) { return c.r; }\nint f() { return of(Coord{}); }",
            "struct Coord { unsigned r; };\nusing Index = unsigned;\n__device__ unsigned of(Coord), at(Index);\n\
             __device__ unsigned of(Coord c) { return c.r; }\nint f() { return of(Coord{}); }",
        ] {
            let checked = check(&STARTER.replace("int f() { return 0; }", part));
            assert!(checked.is_ok(), "{part}: {checked:?}");
        }
    }

    #[test]
    fn a_part_in_a_kernel_declares_its_tile_and_leaves_its_use_to_the_code_after() {
        let starter = "extern \"C\" __global__ void k(unsigned* out, unsigned n) {\n// ---- EDIT BELOW ----\n\
                       __shared__ unsigned tile[32][32];\n// ---- EDIT ABOVE ----\n    tile[threadIdx.x][0] = n;\n\
                       __syncthreads();\n    out[threadIdx.x] = tile[0][threadIdx.x];\n}\n";
        let part = "__shared__ unsigned tile[32][32];";
        let with = |mine: &str| validate(&exercise(), starter, starter.replace(part, mine).as_bytes());
        for honest in [
            "__shared__ unsigned tile[32][33];",
            "static __shared__ unsigned tile[32][32 + (1)];",
            "__shared__ static volatile unsigned tile[32][33];",
            "__shared__ __align__(16) unsigned tile[32][33];",
            "typedef unsigned word;\n__shared__ word tile[32][33];",
            "constexpr unsigned PAD = 1;\n__shared__ unsigned tile[32][32 + PAD];\nstatic_assert(sizeof(tile) == 32 * 33 * 4, \"33 words a row\");",
        ] {
            assert!(with(honest).is_ok(), "{honest}: {:?}", with(honest));
        }
        for (attack, expected) in [
            ("__shared__ unsigned tile[32][33], (stash)[32];", "shared memory that only your part reads"),
            ("__shared__ unsigned tile[32][33], stash[32];", "shared memory that only your part reads"),
            (
                "__shared__ unsigned tile[32][33];\n__shared__ volatile unsigned i __attribute__((unused));",
                "only your part reads",
            ),
            ("__shared__ unsigned (tile)[32][33];", "shared memory that only your part reads"),
            ("extern __shared__ unsigned tile[];", "shared memory that only your part reads"),
            ("__shared__ unsigned tile[32][33];\nunsigned seen = tile[0][32];", "your part uses `tile`"),
            ("__shared__ unsigned tile[32][33];\nunsigned* flat = &tile[0][0];", "your part uses `tile`"),
        ] {
            let refused = with(attack);
            assert!(
                matches!(&refused, Err(Invalid::Region { problem, .. }) if problem.contains(expected)),
                "{attack}: {refused:?}"
            );
        }
    }

    #[test]
    fn shared_memory_lasts_one_block_static_or_not() {
        let lasting =
            |code: &str| lasting_variable(&tokens::tokenize(code, 1).unwrap()).map(|l| l.keyword.text.clone());
        for shared in [
            "static __shared__ unsigned tile[32][33];",
            "__shared__ static unsigned tile[32][33];",
            "__device__ __shared__ unsigned tile[4];",
            "void k() { static __shared__ unsigned char tile[32][132]; }",
        ] {
            assert_eq!(lasting(shared), None, "{shared}");
        }
        assert_eq!(lasting("static unsigned seen[4];").as_deref(), Some("static"));
        assert_eq!(lasting("__shared__ unsigned t[4]; static unsigned seen;").as_deref(), Some("static"));
    }

    #[test]
    fn a_count_printf_writes_is_told_from_a_percent_sign() {
        for format in ["\"%n\"", "\"ab%hhn\"", "\"%5ln\"", "\"%d %n\""] {
            assert!(writes_a_count(format), "{format}");
        }
        for format in ["\"100%%n\"", "\"%d\\n\"", "\"%-10s %u%%\"", "\"50%\""] {
            assert!(!writes_a_count(format), "{format}");
        }
    }

    #[test]
    fn each_problem_is_named_with_its_fix() {
        assert_eq!(check(" \n").unwrap_err(), Invalid::Empty);
        assert_eq!(check("%PDF-1.4\0binary").unwrap_err(), Invalid::NotText);
        assert_eq!(validate(&exercise(), STARTER, &[0xff, 0xfe, 0x41]).unwrap_err(), Invalid::NotText);
        assert_eq!(check("import numpy as np\nprint(np.zeros(3))\n").unwrap_err(), Invalid::NotCuda);
        assert_eq!(check(&"x".repeat(MAX_FILE_BYTES + 1)).unwrap_err(), Invalid::TooLarge(MAX_FILE_BYTES + 1));

        let renamed = check(&STARTER.replace("void k(", "void my_kernel(")).unwrap_err();
        assert_eq!(
            renamed.to_string(),
            "there is no kernel `k` (it defines `my_kernel`); keep the starter's `extern \"C\" __global__ void k(unsigned* out, unsigned n)`"
        );
        let retyped = check(&STARTER.replace("unsigned n)", "int n)")).unwrap_err();
        assert_eq!(
            retyped.to_string(),
            "kernel `k` takes (unsigned* out, int n); it must take (unsigned* out, unsigned n) as in the starter"
        );
        let respaced = check(&STARTER.replace("unsigned* out,", "unsigned*   out,\n   "));
        assert!(respaced.is_ok(), "the same tokens laid out otherwise: {respaced:?}");

        assert_eq!(check(&STARTER.replace("// ---- EDIT ABOVE ----\n", "")).unwrap_err(), Invalid::Markers);
        let twice = STARTER.replace("// top\n", "// top\n// ---- EDIT BELOW ----\n");
        assert_eq!(check(&twice).unwrap_err(), Invalid::Markers);
        let swapped =
            STARTER.replace("EDIT BELOW", "TMP").replace("EDIT ABOVE", "EDIT BELOW").replace("TMP", "EDIT ABOVE");
        assert_eq!(check(&swapped).unwrap_err(), Invalid::Markers);

        let outside = check(&STARTER.replace("out[0] = f();", "out[0] = f() + 1;")).unwrap_err();
        assert_eq!(
            outside.to_string(),
            "line 7 is outside the editable part and differs from the starter (at `+`):\n  yours:   out[0] = f() + 1;\n  starter: out[0] = f();\n\
             Only the lines between the markers may change: restore that line from the starter"
        );
        let above = check(&STARTER.replace("#define N 32\n", "#define N 64\n")).unwrap_err();
        assert!(matches!(above, Invalid::ChangedOutside { line: 2, .. }), "{above}");
        let added = check(&format!("{STARTER}int extra;\n")).unwrap_err();
        assert!(
            matches!(added, Invalid::ChangedOutside { line: 9, ref starter, .. } if starter == "(no line)"),
            "{added}"
        );
    }

    #[test]
    fn what_editors_do_outside_the_region_is_no_change() {
        let bom = format!("\u{feff}{STARTER}");
        let crlf = STARTER.replace('\n', "\r\n");
        let tabs = STARTER.replace("    out[0]", "\t\tout[0]").replace("// top", "// top   ");
        let reindented_marker = STARTER.replace("// ---- EDIT ABOVE ----", "        // ---- EDIT ABOVE ----");
        let commented = STARTER.replace("out[0] = f();", "out[0] = f(); // the answer");
        // A long string broken in two by a formatter is the same string.
        let split = STARTER.replace("extern \"C\"", "extern \"\"\n    \"C\"");
        for text in [bom, crlf, tabs, reindented_marker, commented, split] {
            assert_eq!(check(&text).map(|f| f.region), Ok((4, 4)), "{text:?}");
        }
        let changed = STARTER.replace("extern \"C\"", "extern \"C\" \"\" \"x\"");
        assert!(matches!(check(&changed), Err(Invalid::ChangedOutside { .. })), "a string that changed");
        // Windows editors' "Unicode": UTF-16 with its byte-order mark, CRLF line ends.
        let unicode: Vec<u8> = [0xff, 0xfe]
            .into_iter()
            .chain(STARTER.replace('\n', "\r\n").encode_utf16().flat_map(u16::to_le_bytes))
            .collect();
        assert_eq!(validate(&exercise(), STARTER, &unicode).map(|f| f.text), Ok(STARTER.to_owned()));
        let mut latin1 = STARTER.replace("int f()", "// caf\u{e9}\nint f()").into_bytes();
        let at = latin1.windows(2).position(|w| w == "\u{e9}".as_bytes()).unwrap();
        latin1.splice(at..at + 2, [0xe9]);
        let file = validate(&exercise(), STARTER, &latin1).unwrap();
        assert!(file.text.contains("// caf\u{e9}\n"), "Latin-1 read as Latin-1: {:?}", file.text);
        assert!(
            !check(&format!("\u{feff}{STARTER}")).unwrap().text.starts_with('\u{feff}'),
            "what is compiled has no BOM"
        );
    }

    #[test]
    fn a_difference_that_cannot_be_seen_is_shown() {
        let nbsp = check(&STARTER.replace("out[0] = f();", "out[0] = f\u{200b}();")).unwrap_err();
        let Invalid::ChangedOutside { yours, starter, .. } = &nbsp else { panic!("{nbsp:?}") };
        assert_eq!((yours.as_str(), starter.as_str()), ("out[0] = f\\u{200b}();", "out[0] = f();"));
        assert_eq!(visible("\tx\u{a0}=\t1;"), "x\\u{00a0}=\\t1;");
    }

    fn region_error(region: &str) -> (usize, String) {
        match check(&STARTER.replace("int f() { return 0; }", region)) {
            Err(Invalid::Region { line, problem }) => (line, problem),
            other => panic!("{region:?} gave {other:?}"),
        }
    }

    #[test]
    fn a_part_holds_a_bounded_number_of_tokens_each_of_bounded_length() {
        let at_most = format!("int f() {{ return 0{}; }}", " + 1".repeat((MAX_PART_TOKENS - 10) / 2));
        assert!(check(&STARTER.replace("int f() { return 0; }", &at_most)).is_ok());
        let (_, problem) = region_error(&format!("int f() {{ return 0{}; }}", " + 1".repeat(MAX_PART_TOKENS / 2)));
        assert!(problem.starts_with("your part has 10009 tokens, more than the 10000"), "{problem}");
        let name = "n".repeat(MAX_TOKEN_CHARS);
        assert!(check(&STARTER.replace("int f() { return 0; }", &format!("int {name}() {{ return 0; }}"))).is_ok());
        let (_, problem) = region_error(&format!("int {name}x() {{ return 0; }}"));
        assert!(problem.starts_with("a name, number or literal of 1025 characters"), "{problem}");
    }

    #[test]
    fn an_old_version_under_if_0_is_no_code_for_the_checks_or_the_compiler() {
        // What the preprocessor skips with the group, its directives too, is not in the text compiled.
        let kept = "#if 0\n#define TILE_WORDS 1\n#pragma unroll\n#include \"/etc/passwd\"\n#if 1\n#else\n#endif\n#endif\n\
                    int f() { return 0; }";
        let file = check(&STARTER.replace("int f() { return 0; }", kept)).unwrap();
        assert!(!file.text.contains("passwd") && !file.text.contains("TILE_WORDS"), "{}", file.text);
        let old = "#if 0 // the first try\nint f() { return 1; } }\n#endif\nint f() { return 0; }\n#if 0\n/* } */ int g();\n#endif";
        let file = check(&STARTER.replace("int f() { return 0; }", old)).unwrap();
        assert_eq!(file.region, (4, 10));
        assert_eq!(file.region_text(), "\n\n\nint f() { return 0; }\n\n\n", "the groups' lines, emptied");
        assert_eq!(file.text.lines().count(), STARTER.lines().count() + 6, "every line keeps its number");
        assert!(file.text.ends_with("}\n"));
        // `#if false`, `#if (0)` say the same; `#if 0 + 1` or `#if (0) || (1)` does not.
        for never in ["false", "(0)", "((false))"] {
            let old = format!("#if {never}\nint f() {{ return 1; }} }}\n#endif\nint f() {{ return 0; }}");
            assert!(check(&STARTER.replace("int f() { return 0; }", &old)).is_ok(), "{never}");
        }
        for maybe in ["0 + 1", "(0) || (1)", "false || true"] {
            let old = format!("#if {maybe}\nint g();\n#endif\nint f() {{ return 0; }}");
            let refused = check(&STARTER.replace("int f() { return 0; }", &old));
            assert!(matches!(&refused, Err(Invalid::Region { problem, .. }) if problem.contains("`#if`")), "{maybe}");
        }
        // What the compiler might read otherwise (an unclosed literal's quote) is no group.
        let quote = STARTER.replace("int f() { return 0; }", "#if 0\nit's\n#endif\nint f() { return 0; }");
        assert!(
            matches!(check(&quote), Err(Invalid::Region { problem, .. }) if problem.contains("literal is not closed"))
        );
        // Outside the region, `#if 0` is the starter's text or a change to it.
        let outside = STARTER.replace("// top\n", "#if 0\n#endif\n");
        assert!(matches!(check(&outside), Err(Invalid::ChangedOutside { .. })));
    }

    #[test]
    fn the_region_cannot_reach_beyond_itself() {
        for (region, expected) in [
            ("}\nint g() {", "`}` closes a `{` opened outside your part"),
            ("int f() { return (0; }", "`}` closes the `(` of line 4"),
            ("int f() {", "this `{` is not closed within your part"),
            ("/* int f() { return 0; }", "a `/*` comment is not closed"),
            ("int f() { return 0; } \\", "joins it to `// ---- EDIT ABOVE ----`"),
            ("#include \"/etc/passwd\"", "only the course's headers may be included"),
            ("#include \"../kernels/shared_load.cuh\"", "only the course's headers"),
            ("#include </dev/zero>", "`#include </dev/zero>`"),
            ("#define P \"/etc/passwd\"\n#include P", "`#include P`"),
            ("%:include \"/etc/passwd\"", "only the course's headers"),
            ("#\\\ninclude \"/etc/passwd\"", "only the course's headers"),
            ("# /* x */ include \"/etc/passwd\"", "only the course's headers"),
            ("\u{a0}#include \"/etc/passwd\"", "only the course's headers"),
            ("??=include \"/etc/passwd\"", "`??=` is a trigraph"),
            ("#define unsigned int", "`#define unsigned` changes a word of C++"),
            ("#define f g\nint g() { return 0; }", "`#define f` changes a name"),
            ("#undef N", "`#undef N` changes a name"),
            ("#define load(a, b) 0\n#include \"shared_load.cuh\"", "`#define load` changes a name"),
            ("#if 0", "`#if` is not accepted in your part"),
            ("#endif", "`#endif` is not accepted in your part"),
            ("#if 1\nint f() { return 0; }\n#endif", "`#if` is not accepted in your part"),
            ("#if 0\nint g();\n#else\nint f() { return 0; }\n#endif", "`#if` is not accepted in your part"),
            (
                "#if 0\nint g();\n#else\n#include \"/etc/passwd\"\n#endif\nint f() { return 0; }",
                "`#if` is not accepted in your part",
            ),
            ("#if 0\n#if 0\n#endif\nint f() { return 0; }", "`#if` is not accepted in your part"),
            ("#if 0\n#elif 1\nint f() { return 0; }\n#endif", "`#if` is not accepted in your part"),
            ("#if 0\n{\n#endif\n}\nint f() { return 0; }", "`}` closes a `{` opened outside your part"),
            ("#define struct", "`#define struct` changes a word of C++"),
            ("#define if", "`#define if` changes a word of C++"),
            ("#line 1 \"/etc/passwd\"", "`#line` changes"),
            ("#include_next <x>", "`#include_next` is not accepted"),
            ("static_assert(__has_include(\"/etc/passwd\"), \"\");", "`__has_include` asks about files"),
            ("const char* s = R\"(x)\";", "raw string literals"),
            ("int f\u{200b}() { return 0; }", "U+200B"),
            ("__global__ void k2() {}", "may not define a kernel"),
            ("int f() { asm(\"exit;\"); return 0; }", "inline assembly"),
            ("int f() { return __cudaGet_blockIdx().x; }", "`__cudaGet_blockIdx` is a macro of NVRTC's own headers"),
            ("#define B __cudaGet_gridDim\nint f() { return 0; }", "`__cudaGet_gridDim` is a macro of NVRTC's"),
            ("int f() { auto (__pragma) = [](unsigned v) { return v; }; return __pragma(1); }", "`__pragma` is MSVC's"),
            ("int f() { __declspec(1); return 0; }", "`__declspec` is MSVC's"),
            (
                "__device__ __no_return__ void stop() { while (true) {} }\nint f() { return 0; }",
                "`__no_return__` is a macro of NVRTC's own headers",
            ),
            ("int f() { __specialization_static unsigned n = 0; return n; }", "`__specialization_static` is a macro"),
            ("int f() { return __NV_ATOMIC_ADDRESSOF(f) != 0; }", "`__NV_ATOMIC_ADDRESSOF` is a macro"),
            (
                "#include \"shared_load.cuh\"\nint f() { unsigned probe[1] = {}; return load(probe, 5u); }",
                "`load` of shared_load.cuh reaches shared memory through any pointer",
            ),
            ("int f() { unsigned p[1] = {}; return __isShared(p); }", "`__isShared` asks which memory"),
            ("int f() { return clock64() > 5 ? 1 : 0; }", "`clock64` reads the time"),
            ("#define NOW clock()\nint f() { return NOW > 5 ? 1 : 0; }", "`clock` reads the time"),
            (
                "#include \"tensor_core.cuh\"\nint f() { unsigned r[4] = {}; stmatrix_x4(0u, r); return 0; }",
                "`stmatrix_x4` reaches shared memory at an address given as a number",
            ),
            (
                "#define AT shared_address\nunsigned f(const void* p) { return AT(p); }",
                "`shared_address` reaches shared memory",
            ),
            ("#define \\u005f_syncthreads() (void)0", "universal character name"),
            ("int f() { return N\\U00000030; }", "write names in ASCII"),
            ("#define CAT(a, b) a##b\nint f() { CAT(re, turn) 0; }", "`##` pastes tokens"),
            ("#define CAT(a, b) a %:%: b", "`##` pastes tokens"),
            ("int f() { return 0; }\nstatic", "ends with `static`, which runs on"),
            ("int f() { return 0; }\n#define X 1\n__launch_bounds__(32)", "ends with `)`"),
            ("int x = 1,", "ends with `,`"),
            ("int f() { return 0; }\n#pragma unroll 1", "`#pragma` after the last of your code"),
            ("#define OPEN_ [\n#define CLOSE_ ]", "`#define OPEN_` opens a `[` it does not close"),
            ("#define O_ {\n#define C_ }", "`#define O_` holds `{`"),
            ("#define SKIP(n) n; return", "holds `;`"),
            ("#define N2 (N + 1))", "closes a `(` it does not open"),
            ("#include \"probe.cuh\"", "its macro `PROBE_KERNEL` holds `__global__`"),
            ("#define shared", "`#define shared` changes a name"),
            ("#define Z (;;)\nint f() { for Z break; return 0; }", "`#define Z` holds `;`"),
            ("int f() { __builtin_unreachable(); return 0; }", "`__builtin_unreachable` tells the compiler"),
            ("int f() { __builtin_assume(N == 1); return 0; }", "`__builtin_assume` tells the compiler"),
            ("[[noreturn]] int g();\nint f() { return 0; }", "`noreturn` tells the compiler"),
            ("int g() __attribute__((__noreturn__));\nint f() { return 0; }", "`__noreturn__` tells the compiler"),
            ("int f() { return 0; } /*\n*/ #include \"/etc/passwd\"", "only the course's headers may be included"),
            ("int f() { return 0; } # define X 1", "a `#` that does not begin its line"),
            ("__device__ unsigned seen;\nint f() { return 0; }", "`__device__` here keeps a variable"),
            ("__device__ const unsigned* seen = nullptr;\nint f() { return 0; }", "`__device__` here keeps a variable"),
            ("int f() { static const volatile unsigned k = 1; return k; }", "`static` here keeps a variable"),
            ("__managed__ const unsigned seen = 0;\nint f() { return 0; }", "`__managed__` here keeps a variable"),
            ("__device__ unsigned __seen(5);\nint f() { return __seen; }", "`__device__` here keeps a variable"),
            ("int f() { volatile __shared__ unsigned left; return left; }", "`__shared__` here declares"),
            ("__shared__ unsigned left[2];\nint f() { return left[1]; }", "`__shared__` here declares"),
            ("extern __shared__ unsigned left[];\nint f() { return left[0]; }", "`__shared__` here declares"),
            ("#define KEPT __shared__\nint f() { KEPT unsigned left; return left; }", "`__shared__` here declares"),
            ("int f() { unsigned* p = new unsigned; return *p; }", "memory from the device's heap"),
            ("int f(const unsigned* a) { unsigned* b; memcpy(&b, &a, 8); return *b; }", "copying bytes"),
            ("int f(unsigned* a) { return __cvta_generic_to_global(a) != 0; }", "converting addresses"),
            ("__device__ const unsigned* seen;\nint f() { return 0; }", "`__device__` here keeps a variable"),
            ("__managed__ int seen = 0;\nint f() { return 0; }", "`__managed__` here keeps a variable"),
            ("int f() { static int calls; return calls++; }", "`static` here keeps a variable"),
            ("struct S { static __device__ int n; };\nint f() { return 0; }", "`static` here keeps a variable"),
            ("#define MODE (__LINE__ > 30)\nint f() { return 0; }", "`__LINE__` takes its value from where it is used"),
            ("int f() { return gridDim.x > 8 ? 1 : 0; }", "`gridDim` would let your part act otherwise"),
            (
                "int f() { unsigned m = 0; if (blockIdx.x > 8) printf(\"%u\", m = 1); return m; }",
                "`blockIdx` would let your part act otherwise",
            ),
            (
                "int f() { unsigned m = 0; if (blockIdx.x > 8) printf(\"big\"); else m = 1; return m; }",
                "`blockIdx` would let your part act otherwise",
            ),
            (
                "int f() { unsigned m = 0; if (blockIdx.x > 8 && (m = 1)) printf(\"big\"); return m; }",
                "`blockIdx` would let your part act otherwise",
            ),
            (
                "int g(unsigned& m) { m = 1; return 0; }\nint f() { unsigned m = 0; if (blockIdx.x > 8) printf(\"%d\", g(m)); return m; }",
                "`blockIdx` would let your part act otherwise",
            ),
            (
                "int f() { unsigned m = 0; if (blockIdx.x > 8) { printf(\"big\"); m = 1; } return m; }",
                "`blockIdx` would let your part act otherwise",
            ),
            (
                "int mark(unsigned& m) { m = 1; return 0; }\n\
                 int f() { unsigned m = 0; if (gridDim.x > 2u && (mark)(m)) printf(\"\"); return m; }",
                "`gridDim` would let your part act otherwise",
            ),
            (
                "struct M { unsigned* f; __device__ M(const M& o) : f(o.f) { *f = 1; } };\n\
                 int f(M m) { if (blockIdx.x > 2) printf(\"%p\", m); return 0; }",
                "`blockIdx` would let your part act otherwise",
            ),
            ("int f() { const int n = printf(\"%u\", gridDim.x); return n; }", "`gridDim` would let your part"),
            (
                "int f() { unsigned m = 0; printf(\"%llu\", sizeof m + (m = gridDim.x)); return m; }",
                "`gridDim` would let your part act otherwise",
            ),
            (
                "int f() { unsigned big = 0; auto (printf) = [&](const char* s) { big = 1; return 0; };\n\
                 if (gridDim.x > 100) printf(\"\"); return big; }",
                "`gridDim` would let your part act otherwise",
            ),
            (
                "int f() { unsigned k = 3; if (blockIdx.x == 0) printf(\"%u\", k); return k; }",
                "`blockIdx` would let your part act otherwise",
            ),
            (
                "int f() { unsigned m = 0; printf(\"%u\", (copy)(m, gridDim.x)); return m; }",
                "`gridDim` would let your part act otherwise",
            ),
            ("int f() { return __clusterGridDimInClusters().x > 8; }", "`__clusterGridDimInClusters` would let"),
            ("#define __pragma(a, b) a b\nint f() { return 0; }", "`#define __pragma` changes a word of C++"),
            (
                "constexpr unsigned line(unsigned l = __builtin_LINE()) { return l; }\nint f() { return 0; }",
                "`__builtin_LINE` takes its value from where it is used",
            ),
            (
                "__attribute__((device)) unsigned seen;\nint f() { return 0; }",
                "`__attribute__` spells out a CUDA keyword",
            ),
            ("__location__(device) unsigned seen;\nint f() { return 0; }", "`__location__` spells out a CUDA keyword"),
            ("struct S { mutable unsigned n; };\nint f() { return 0; }", "a `mutable` member"),
            ("int f() { return *const_cast<char*>(\"ab\") = 1; }", "`const_cast` can write to a constant"),
            ("int f() { return atomicAdd((unsigned*)(\"ab\"), 1u); }", "a cast to a pointer or a reference can write"),
            ("int f() { char* s = \"ab\"; return s[0]++; }", "a string literal can write"),
            ("int f() { union U { const char* c; char* m; } u{}; return 0; }", "a union can write"),
            ("int f() { return reinterpret_cast<unsigned long long>(&N); }", "`reinterpret_cast` can write"),
            (
                "constexpr unsigned seen[1] = {0u};\nusing P = unsigned*;\nint f() { return atomicAdd(P(seen), 1u); }",
                "an alias of a pointer or reference type can write",
            ),
            (
                "constexpr unsigned seen[1] = {0u};\ntemplate <class T> using Ptr = T*;\n\
                 int f() { return atomicAdd(Ptr<unsigned>(seen), 1u); }",
                "an alias of a pointer or reference type can write",
            ),
            ("typedef unsigned& R;\nint f() { return 0; }", "an alias of a pointer or reference type can write"),
            (
                "constexpr unsigned seen[1] = {0u};\ntemplate <class X> using Id = X;\n\
                 int f() { return atomicAdd(Id<unsigned*>(seen), 1u); }",
                "a cast to a template's type, which may be a pointer, can write",
            ),
            (
                "constexpr bool flag = false;\ntemplate <class R, class V> __device__ R ref(V& v) { return (R)v; }\n\
                 int f() { ref<bool&>(flag) = true; return 0; }",
                "a cast to a template's type, which may be a pointer, can write",
            ),
            (
                "constexpr unsigned seen[1] = {0u};\nint f() { return atomicAdd((unsigned* __restrict)seen, 1u); }",
                "a cast to a pointer or a reference can write",
            ),
            (
                "int f() { char c = 0; char* cp = &c; printf(\"%d\", ++*decltype(cp)(\"abc\")); return 0; }",
                "a cast to a type from `decltype` can write",
            ),
            (
                "CUDART_DEVICE unsigned seen;\nint f() { return 0; }",
                "`CUDART_DEVICE` is a macro of NVRTC's own headers",
            ),
            (
                "constexpr unsigned seen[1] = {0u};\nint f() { unsigned x = 0; return atomicAdd(decltype(&x)(seen), 1u); }",
                "a pointer or reference type from `decltype` can write",
            ),
            ("__device__ __remove_cv(unsigned) seen;\nint f() { return 0; }", "`__device__` here keeps a variable"),
            ("__device__ unsigned (seen);\nint f() { return 0; }", "`__device__` here keeps a variable"),
            ("int f() { static unsigned ((calls)); return calls++; }", "`static` here keeps a variable"),
            ("template <class T> __device__ T (seen);\nint f() { return 0; }", "`__device__` here keeps a variable"),
            (
                "template <class T> __device__ const T (seen);\nint f() { return 0; }",
                "`__device__` here keeps a variable",
            ),
            ("__device__ decltype(N) seen;\nint f() { return 0; }", "`__device__` here keeps a variable"),
            ("int f() { unsigned x = 0; return *(__typeof__(unsigned*))&x; }", "a cast to a pointer"),
            (
                "int f() { unsigned x = 0; decltype(*&x) r = x; return r; }",
                "a pointer or reference type from `decltype`",
            ),
            ("int f() { return sizeof(int) + *(unsigned*)0; }", "a cast to a pointer"),
            (
                "__device__ unsigned* at(unsigned* p) { return (unsigned*)p; }\nint f() { return 0; }",
                "a cast to a pointer",
            ),
            ("int f() { return (\"x\")[0]; }", "a string literal"),
            (
                "__constant__ unsigned seen[1];\nint f() { unsigned old = __ldcg(seen); __stcg(seen, old + 1); return 0; }",
                "declare it `__constant__ const`",
            ),
            ("__constant__ const unsigned* table;\nint f() { return 0; }", "declare it `__constant__ const`"),
            ("int f() { char c = 0; char* s = &c; assert(s = \"abcd\"); return s[0]++; }", "a string literal"),
            ("int f() { char* s = k ? \"a\" : \"b\"; return s[0]++; }", "a string literal"),
            (
                "int f() { static constexpr unsigned t[1] = {0}; unsigned x = 0; unsigned* z = &x;\n\
                 return atomicAdd(z + (t - z), 1u); }",
                "a difference of pointers",
            ),
            (
                "constexpr unsigned t[1] = {0};\nint f() { unsigned x = 0; return atomicAdd(&x + (t - &x), 1u); }",
                "a difference of pointers",
            ),
            (
                "constexpr unsigned t[1] = {0};\nint f() { unsigned x = 0; auto z = &x; return atomicAdd(z + (t - z), 1u); }",
                "a difference of pointers",
            ),
            (
                "constexpr unsigned t[1] = {0};\nint f() { unsigned x = 0; unsigned* z = &x; return *(decltype(z) const)t; }",
                "a cast to a type from `decltype`",
            ),
            (
                "constexpr unsigned t[1] = {0};\nint f() { auto v = __builtin_assume_aligned(t, 4); return v != t; }",
                "`__builtin_assume_aligned`",
            ),
            ("int f() { unsigned x = 0; void* v = &x; return 0; }", "a pointer to `void`"),
            (
                "struct S { unsigned v; S* self; __device__ constexpr S() : v(0), self(this) {} };\nint f() { return 0; }",
                "`this` kept",
            ),
            (
                "struct S { unsigned v; S& me; __device__ constexpr S() : v(0), me(*this) {} };\nint f() { return 0; }",
                "`this` kept",
            ),
            (
                "struct S { unsigned v; __device__ void f() { S& me = *this; me.v = 1; } };\nint f() { return 0; }",
                "`this` kept",
            ),
            (
                "constexpr unsigned t[1] = {0};\nint f() { unsigned x = 0; unsigned* z = &x; return atomicAdd(z + (t - (z + 0)), 1u); }",
                "a difference of pointers",
            ),
            (
                "__device__ unsigned bump(unsigned* p) { static constexpr unsigned t[1] = {0};\n\
                 return atomicAdd(p + ((unsigned long long)t - (unsigned long long)p) / 4, 1u); }\nint f() { return 0; }",
                "a cast to a 64-bit integer",
            ),
            // Addresses made numbers in locals, a difference of those moving a writable pointer.
            (
                "constexpr unsigned t[1] = {0u};\nint f() { unsigned x = 0; unsigned* volatile h = &x; unsigned* z = h;\n\
                 unsigned long long a = size_t(t), b = (const unsigned long long)z; return atomicAdd(z + (a - b) / 4, 1u); }",
                "a cast to a 64-bit integer",
            ),
            (
                "using Wide = unsigned long long;\ntypedef Wide Address;\nconstexpr unsigned t[1] = {0u};\n\
                 int f() { return (Address)t != 0; }",
                "a cast to a 64-bit integer",
            ),
            ("int f() { return 0\u{202e}; }", "the invisible character U+202E is outside"),
            ("int f() { return 0\u{1b}; }", "the invisible character U+001B is outside"),
            ("int f() { return 0\u{e9}; }", "the character U+00E9 (`\u{e9}`) is outside"),
            // Pointers no name shows: an array's elements, a structured binding, a function of a
            // deduced type, an alternative token's address.
            (
                "constexpr unsigned t[1] = {0u};\nint f() { unsigned x = 0; const unsigned* ps[2] = {t, &x}; return ps[0] < ps[1]; }",
                "an array of pointers",
            ),
            (
                "struct Pq { const unsigned* p; const unsigned* q; };\n\
                 int f() { unsigned x = 0; Pq pq{&x, &x}; auto [p, q] = pq; return 0; }",
                "a structured binding",
            ),
            (
                "constexpr unsigned t[1] = {0u};\n__device__ auto there() { return t; }\n\
                 __device__ auto here(long long m) { return t + m; }\nint f() { return here(3) <= there(); }",
                "a comparison of values that may be pointers",
            ),
            (
                "constexpr unsigned t[1] = {0u};\nint f() { unsigned x = 0; long long d = t + 0 - bitand x; return int(d); }",
                "a difference of pointers",
            ),
            // A pointer read through another, an array's, a member's; a unary `+` before a pointer.
            (
                "constexpr unsigned t[1] = {0u};\nint f() { const unsigned* a = t; const unsigned** pp = &a; return 0; }",
                "a pointer to a pointer",
            ),
            (
                "constexpr unsigned t[1] = {0u};\nint f() { const unsigned (*pa)[1] = &t; return 0; }",
                "a pointer to an array",
            ),
            ("struct S { unsigned* p; };\nint f() { unsigned* S::* m = &S::p; return 0; }", "a pointer to a member"),
            (
                "constexpr unsigned t[1] = {0u};\nint f() { const unsigned* a = t; unsigned x = 0; unsigned* z = &x;\n\
                 return int(*(&a) - *(&z)); }",
                "a difference of pointers",
            ),
            ("int f() { unsigned x = 0; return __builtin_addressof(x) != 0; }", "a compiler's built-in function"),
            ("constexpr unsigned t[1][1] = {{0u}};\nint f() { return int(t[0][0]); }", "an array of arrays"),
            (
                "constexpr unsigned t[1] = {0u};\n__device__ const unsigned (&there())[1] { return t; }\nint f() { return 0; }",
                "a function that returns an array",
            ),
            (
                "constexpr unsigned t[1] = {0u};\nint f() { unsigned x = 0; unsigned* z = &x; long long d = t + 0 - +z; return int(d); }",
                "a difference of pointers",
            ),
            // The same through a template's values, which may be pointers.
            (
                "template <class P, class Q> __device__ bool le(P a, Q b) { return a <= b; }\n\
                 template <class P, class Q> __device__ long long gap(P a, const Q& b) { return a - b; }\nint f() { return 0; }",
                "a comparison of values that may be pointers",
            ),
            (
                "template <class P, class Q> __device__ long long gap(P a, const Q& b) { return a - b; }\nint f() { return 0; }",
                "a difference of values that may be pointers",
            ),
            (
                "__device__ bool le(const unsigned* const& a, const unsigned* const& b) { return a <= b; }\nint f() { return 0; }",
                "a comparison of pointers",
            ),
            // How far another's data lies, found by comparing pointers, halving the distance.
            (
                "constexpr unsigned t[1] = {0u};\nint f() { unsigned x = 0; unsigned* z = &x; long long lo = 0, hi = 1ll << 46;\n\
                 while (hi - lo > 1) { long long mid = lo + (hi - lo) / 2; if (z + mid <= t + 1) lo = mid; else hi = mid; }\n\
                 return atomicAdd(z + lo, 1u); }",
                "a comparison of pointers",
            ),
            (
                "constexpr unsigned t[2] = {0u, 0u};\nint f() { unsigned x = 0; auto z = &x; auto u = t; long long k = 5;\n\
                 return t + 1 >= k + z ? 1 : (u > z); }",
                "a comparison of pointers",
            ),
            ("int f() { const char* s = g(\"a\"); return 0; }", "a string literal"),
            ("int f() { const char* s = 1 ? \"a\" : \"b\", *t = \"c\"; return 0; }", "a string literal"),
            ("int f() { const char* s = \"a\" + 0; return 0; }", "a string literal"),
            ("int f() { char c = 0; char* s = &c; printf(\"%p\", s = \"abcd\"); return s[0]++; }", "a string literal"),
            ("int f() { printf(\"%n\", \"abcd\"); return 0; }", "printf's `%n`"),
            ("int f() { int c = 0; printf(\"ab%hhn\", &c); return c; }", "printf's `%n`"),
            (
                "int f() { const char* s = \"\"; printf(\"%p\", s = 1 ? \"ab\" : \"cd\"); return s[0]; }",
                "a string literal",
            ),
            (
                "int f() { char c = 0; char* s = &c; printf(\"%p\", (s = &c) ? \"ab\" : \"cd\"); return 0; }",
                "a string literal",
            ),
            (
                "int f() { printf(\"%d\", [&] { char* t{1 ? \"a\" : \"b\"}; return t[0]++; }()); return 0; }",
                "a string literal",
            ),
            (
                "struct C { char c; };\nint f() { const C k[1] = {}; return ((C (*)[1])k)[0][0].c++; }",
                "a cast to a pointer",
            ),
            (
                "template <typename zz> __device__ zz id(zz v) { return v; }\nconstexpr unsigned zz = 0;\n\
                 __device__ unsigned seen(zz);\nint f() { return 0; }",
                "`seen(zz)` declares a variable",
            ),
            (
                "__attribute((global)) void k2(unsigned* o) { *o = 1; }\nint f() { return 0; }",
                "may not define a kernel",
            ),
            (
                "#define ONE _Pragma(\"unroll 1\")\nint f() { return 0; }\n#pragma message ONE",
                "`#pragma` after the last",
            ),
            ("int f() { return 0; }\n#pragma message(\"x\") _Pragma(\"unroll 1\")", "`#pragma` after the last"),
            (
                "int f() { unsigned x = 1; unsigned* t = &x; using P = decltype(t); return *P(0ull); }",
                "an alias of a type from `decltype`",
            ),
            (
                "template <typename U> __device__ U to(U, const char* s) { return (U)s; }\nint f() { return 0; }",
                "a cast to a template's type",
            ),
            (
                "template <typename U> __device__ U to(U, const unsigned* s) { return (U const)s; }\nint f() { return 0; }",
                "a cast to a template's type",
            ),
            (
                "template <typename U> __device__ U to(U, const unsigned* s) { using P = U; return P(s); }\n\
                 int f() { return 0; }",
                "a cast to a template's type",
            ),
            (
                "template <typename U> struct As { const unsigned* p; __device__ operator U() const { return 0; } };\n\
                 int f() { return 0; }",
                "a cast to a template's type",
            ),
            (
                "__constant__ const unsigned k = 1;\ntemplate <typename X = const unsigned> __constant__ unsigned seen[1];\n\
                 int f() { return 0; }",
                "declare it `__constant__ const`",
            ),
            (
                "template <class T> struct Box { T v; };\n__constant__ Box<const unsigned> seen;\nint f() { return 0; }",
                "declare it `__constant__ const`",
            ),
            ("[[gnu::const]] __constant__ unsigned seen[1];\nint f() { return 0; }", "declare it `__constant__ const`"),
            (
                "template <bool B = (1 > 0), class X = const unsigned> __constant__ unsigned seen[1];\nint f() { return 0; }",
                "declare it `__constant__ const`",
            ),
            (
                "template <typename... U> __device__ void to(const unsigned* s, U&... z) { ((z = (U)s), ...); }\n\
                 int f() { return 0; }",
                "a cast to a template's type",
            ),
            (
                "constexpr unsigned t[1] = {0};\nint f() { unsigned* z = nullptr; return atomicAdd(z + (t - z), 1u); }",
                "a null pointer",
            ),
            (
                "constexpr unsigned t[1] = {0};\nint f() { unsigned* z = 0; return atomicAdd(z + (t - z), 1u); }",
                "a null pointer",
            ),
            (
                "constexpr unsigned t[1] = {0};\nint f() { unsigned* z{}; return atomicAdd(z + (t - z), 1u); }",
                "a null pointer",
            ),
            (
                "template <typename U> __device__ U to(U, unsigned long long a) { return U(a); }\nint f() { return 0; }",
                "a cast to a template's type, which may be a pointer, can write to a constant or a string literal, \
                 data that lasts from one launch to the next: convert with `static_cast<T>(...)`",
            ),
            (
                "template <class T> struct Same { using type = T; };\nconstexpr unsigned k = 1;\n\
                 int f() { return *Same<unsigned*>::type(&k) = 2; }",
                "a cast to a template's type",
            ),
            (
                "constexpr unsigned k = 1;\ntemplate <class U = unsigned*> __device__ unsigned g() { return *U(&k) = 2; }\n\
                 int f() { return g(); }",
                "a pointer or reference type as a template's argument",
            ),
            (
                "__device__ int g(char* s) { return s[0]++; }\nint f() { assert(g(\"x\")); return 0; }",
                "a string literal",
            ),
            (
                "__device__ int printf(char* s, int) { return s[0]++; }\nint f() { return 0; }",
                "named `printf` or `assert`",
            ),
            ("int f() { int assert(char*); return 0; }", "named `printf` or `assert`"),
            ("#undef assert\nint f() { return 0; }", "`#undef assert` changes"),
            ("__attribute__((global)) void k2() {}\nint f() { return 0; }", "may not define a kernel"),
            ("[[gnu::global]] void k2() {}\nint f() { return 0; }", "may not define a kernel"),
            (
                "template <int K> __device__ unsigned v = K;\ntemplate <> __device__ unsigned v<3>(5);\nint f() { return 0; }",
                "`__device__` here keeps a variable",
            ),
            (
                "template <int K> __device__ unsigned v = K;\ntemplate <> __device__ unsigned v<3>(N);\nint f() { return 0; }",
                "`__device__` here keeps a variable",
            ),
            (
                "template <int K> __device__ unsigned v = K;\n\
                 template <> __device__ unsigned v<3>(unsigned(5));\nint f() { return 0; }",
                "`__device__` here keeps a variable",
            ),
            ("__device__ unsigned seen(0);\nint f() { return 0; }", "`__device__` here keeps a variable"),
            (
                "__device__ unsigned helper(unsigned), seen;\nint f() { return 0; }",
                "`__device__` here keeps a variable",
            ),
            (
                "constexpr unsigned zero = 0;\n__device__ unsigned seen(zero bitand zero);\nint f() { return 0; }",
                "`__device__` here keeps a variable",
            ),
            (
                "constexpr unsigned zero = 0, one = 1;\n__device__ unsigned seen(zero * one);\nint f() { return 0; }",
                "`__device__` here keeps a variable",
            ),
            (
                "constexpr unsigned uint7 = 0;\n__device__ unsigned seen(uint7);\nint f() { return 0; }",
                "`seen(uint7)` declares a variable `seen` made from `uint7` where `uint7` is a value",
            ),
            (
                "__device__ unsigned rotate(size_t), turn(size_t steps);\nint f() { return 0; }",
                "if it declares a function, name its parameters (`rotate(size_t value)`); a `__device__` variable \
                 lasts from one launch to the next",
            ),
            ("__device__ unsigned (seen)(0);\nint f() { return 0; }", "`__device__` here keeps a variable"),
            ("__device__ unsigned (seen){0};\nint f() { return 0; }", "`__device__` here keeps a variable"),
            (
                "__device__ unsigned (*hook)(unsigned) = nullptr;\nint f() { return 0; }",
                "`__device__` here keeps a variable",
            ),
            (
                "template <class T> struct Box { T v; };\n__device__ Box<Box<unsigned>> seen;\nint f() { return 0; }",
                "`__device__` here keeps a variable",
            ),
            ("__managed__ unsigned seen(0u + 0u);\nint f() { return 0; }", "`__managed__` here keeps a variable"),
            ("int f() { static unsigned calls(0); return calls++; }", "`static` here keeps a variable"),
            ("__device__ decltype(0u) (seen);\nint f() { return 0; }", "`__device__` here keeps a variable"),
            (
                "struct S { static constexpr unsigned value = 1; };\ntemplate <int K> __device__ unsigned v = K;\n\
                 template <> __device__ unsigned v<3>(S::value);\nint f() { return 0; }",
                "`__device__` here keeps a variable",
            ),
            (
                "constexpr unsigned zero = 0;\ntemplate <int K> __device__ unsigned v = K;\n\
                 template <> __device__ unsigned v<3>(sizeof zero);\nint f() { return 0; }",
                "`__device__` here keeps a variable",
            ),
            ("#define F(...) __VA_ARGS__\nF(\n#\nint g();)\nint f() { return 0; }", "a directive inside the `(`"),
            (
                "__device__ const volatile unsigned seen = 0;\nint f() { return 0; }",
                "`__device__` here keeps a variable",
            ),
            ("// note \\\n#include \"probe.cuh\"\nint f() { return 0; }", "this `#include` line is in a comment"),
            (
                "int f() { return 0; }\n#define NOTHING\n#pragma unroll 1\nNOTHING",
                "`#pragma` after the last of your code",
            ),
        ] {
            let (line, problem) = region_error(region);
            assert!(problem.contains(expected), "{region:?}: {problem}");
            assert!(line >= 4, "{region:?}: line {line}");
        }
        // Inside a kernel's body, an early `return` leaves the kernel.
        let kernel_region = "extern \"C\" __global__ void k(unsigned* out, unsigned n) {\n// ---- EDIT BELOW ----\nunsigned v = 1;\n// ---- EDIT ABOVE ----\n    out[0] = v + threadIdx.x;\n}\n";
        let early = validate(
            &exercise(),
            kernel_region,
            kernel_region.replace("unsigned v = 1;", "unsigned v = 1; if (n > 4) return;").as_bytes(),
        );
        assert!(
            matches!(&early, Err(Invalid::Region { line: 3, problem }) if problem.contains("`return` here leaves the kernel")),
            "{early:?}"
        );
        assert!(validate(&exercise(), kernel_region, kernel_region.as_bytes()).is_ok());
        // Operators of the part's types would run within the code after it; state would let that
        // code act otherwise in the profiled launch; a macro's arguments are expanded as the
        // compiler expands them.
        for (helper, expected) in [
            ("struct T { __device__ unsigned operator[](unsigned i) const { return i; } };", "an operator of yours"),
            ("struct T { __device__ operator unsigned() const { return 1; } };", "an operator of yours"),
            ("static unsigned seen;", "`static` here keeps a variable"),
            ("auto left = [] { volatile __shared__ unsigned w; return w; };", "`__shared__` here declares"),
            ("{ __shared__ unsigned w[2]; v = w[1]; }", "`__shared__` here declares"),
            ("#define SAME(x) x\nSAME(SAME(const uint3 threadIdx = {};))", "this declares `threadIdx`"),
            ("const uint3 __attribute((unused)) threadIdx = {};", "this declares `threadIdx`"),
        ] {
            let with = kernel_region.replace("unsigned v = 1;", &format!("{helper}\nunsigned v = 1;"));
            assert!(
                matches!(validate(&exercise(), kernel_region, with.as_bytes()), Err(Invalid::Region { problem, .. }) if problem.contains(expected)),
                "{helper}"
            );
        }
        for redirect in ["out[0] = 7; out = nullptr;", "unsigned*& o = out; o = nullptr;", "n = 0;"] {
            let with = kernel_region.replace("unsigned v = 1;", &format!("unsigned v = 1; {redirect}"));
            assert!(
                matches!(validate(&exercise(), kernel_region, with.as_bytes()), Err(Invalid::Region { problem, .. }) if problem.contains("the kernel's parameter")),
                "{redirect}: the code after the part works through the parameters"
            );
        }
        for destructor in [
            "struct Finish { unsigned* o; __device__ ~Finish() { o[0] = 1; } } finish{nullptr};",
            "struct Finish { unsigned* o; __device__ inline ~Finish() { o[0] = 1; } } finish{nullptr};",
            "struct Finish { unsigned* o; __device__ [[maybe_unused]] ~Finish() { o[0] = 1; } } finish{nullptr};",
        ] {
            let with = kernel_region.replace("unsigned v = 1;", &format!("unsigned v = 1; {destructor}"));
            assert!(
                matches!(validate(&exercise(), kernel_region, with.as_bytes()), Err(Invalid::Region { problem, .. }) if problem.contains("destructor")),
                "a destructor runs after the code outside: {destructor}"
            );
        }
        let negation = kernel_region.replace("unsigned v = 1;", "unsigned v = ~f(1u);");
        assert!(validate(&exercise(), kernel_region, negation.as_bytes()).is_ok(), "`~f(x)` is an expression");
        for kernels_own in [
            "if (n > 4) { v = 2; return; }",
            "unsigned a[1] { ({ if (n > 4) return; 0u; }) };",
            "if (sizeof(struct S { int x; })) { return; }",
            "unsigned w = out[0] > n ? ({ return; 0u; }) : 1u;",
            "[[likely]] { return; }",
            "switch (n) { case 1: default: { if (n != 5) return; } }",
            "struct P { unsigned v; };\nstruct Tab { P p; __device__ constexpr const P* operator[](unsigned) const { return &p; } };\nswitch (n) { case Tab{}[0]->v: default: { if (n != 5) return; } }",
        ] {
            let with = kernel_region.replace("unsigned v = 1;", &format!("unsigned v = 1; {kernels_own}"));
            assert!(
                matches!(validate(&exercise(), kernel_region, with.as_bytes()), Err(Invalid::Region { .. })),
                "{kernels_own}: this `return` is the kernel's"
            );
        }
        // A lambda's or a local class's `return` leaves only its own body.
        for helper in [
            "auto next = [](unsigned c) { return c + 1; };",
            "auto next = [&](unsigned c) mutable -> unsigned { return c + v; };",
            "auto next = [] { return 1u; };",
            "struct Next { __device__ unsigned operator()(unsigned c) const { return c + 1; } } next;",
            "auto next = [](unsigned c) noexcept(true) { return c + 1; };",
            "auto next = [](unsigned c) -> decltype(c) { return c + 1; };",
            "struct Base {};\nstruct Next : Base { __device__ unsigned g(unsigned c) const { return c + 1; } } next;",
            "struct alignas(8) Next final { __device__ unsigned g(unsigned c) const { return c + 1; } } next;",
            "template <int K> struct Base {};\nstruct Next : Base<1> { __device__ unsigned g(unsigned c) const { return c + 1; } } next;",
            "constexpr unsigned table[2] = {1, 2};\nconstexpr unsigned K = 3;",
            "struct Swizzle { static constexpr unsigned bits = 3; };\nstatic constexpr unsigned mask = 7;",
            "struct Next { static __device__ unsigned g(unsigned c) { return c + 1; } };",
            "auto next = [c = 0u]() mutable { return ++c; };",
            "unsigned (*pick)(unsigned) = {}; unsigned w = 2 * 3;",
            "static_assert(1 + 1 == 2, \"arithmetic\");",
            "static __device__ unsigned twice(uint3);",
            "if (v > 2) printf(\"v is %u\\n\", v);",
        ] {
            let with = kernel_region.replace("unsigned v = 1;", &format!("{helper}\nunsigned v = 1;"));
            assert!(validate(&exercise(), kernel_region, with.as_bytes()).is_ok(), "{helper}");
        }
        // Shared memory at the part's own level that the code after does not read holds what the
        // last block left there.
        let staged =
            kernel_region.replace("unsigned v = 1;", "__shared__ unsigned staged[32];\nunsigned v = staged[0];");
        assert!(matches!(validate(&exercise(), kernel_region, staged.as_bytes()),
                Err(Invalid::Region { problem, .. }) if problem.contains("shared memory that only your part reads")),);
        let shadowed = validate(
            &exercise(),
            kernel_region,
            kernel_region.replace("unsigned v = 1;", "unsigned v = 1;\nconst uint3 threadIdx = {};").as_bytes(),
        );
        assert!(
            matches!(&shadowed, Err(Invalid::Region { line: 4, problem }) if problem.contains("this declares `threadIdx`")),
            "a name the code after uses, declared again, changes what that code means: {shadowed:?}"
        );
        let nested = kernel_region
            .replace("unsigned v = 1;", "unsigned v = 1;\n{ const uint3 threadIdx = {}; v += threadIdx.x; }");
        assert!(validate(&exercise(), kernel_region, nested.as_bytes()).is_ok(), "a block's names stay in it");
        let dangling = validate(
            &exercise(),
            kernel_region,
            kernel_region.replace("unsigned v = 1;", "unsigned v = 1;\nif (v > 4)").as_bytes(),
        );
        assert!(
            matches!(&dangling, Err(Invalid::Region { line: 4, problem }) if problem.contains("ends with `)`")),
            "an `if` without its body takes the next statement outside: {dangling:?}"
        );
        // What the region may do: its own helpers, macros and the course's headers, comments with
        // anything in them.
        let fine = "#include \"shared_load.cuh\"\n#define MINE 3 // ??? #include \"/etc/passwd\"\n/* caf\u{e9} */\n#pragma once\nint f() { return MINE; }";
        assert_eq!(check(&STARTER.replace("int f() { return 0; }", fine)).map(|f| f.region), Ok((4, 8)));
    }

    #[test]
    fn any_region_is_judged_without_a_panic() {
        const WORDS: [&str; 28] = [
            "[",
            "]",
            "{",
            ")",
            "->",
            "##",
            "\\",
            "\\\n",
            "return",
            "f",
            "n",
            "out",
            "auto",
            "namespace",
            "using",
            "\"s\"",
            "'c'",
            "/*",
            "*/",
            "//",
            "\n#define",
            "\n#include",
            "\n#if",
            "\n#endif",
            "\n#pragma",
            "\n#if 0",
            "\n#",
            "\n",
        ];
        let mut judged = 0;
        for region in crate::tokens::soups(&WORDS, 20_000) {
            judged += check(&STARTER.replace("int f() { return 0; }", &region)).is_err() as usize;
        }
        assert!(judged > 10_000, "most soups are refused: {judged}");
    }

    #[test]
    fn a_region_may_not_declare_a_name_the_code_outside_uses_unless_that_code_declares_its_own() {
        let starter = "#include \"shared_load.cuh\"\n// ---- EDIT BELOW ----\nint f() { return 0; }\n// ---- EDIT ABOVE ----\n\
             extern \"C\" __global__ void k(unsigned* out, unsigned n) {\n    const unsigned lane = threadIdx.x;\n    \
             out[lane] = f() + load(out, n);\n}\n";
        let exercise = exercise();
        let region =
            |text: &str| validate(&exercise, starter, starter.replace("int f() { return 0; }", text).as_bytes());
        for (text, name) in [
            ("int f() { return 0; }\n__device__ unsigned load(unsigned* t, unsigned i) { return t[i]; }", "load"),
            (
                "int f() { return 0; }\nnamespace { __device__ unsigned load(unsigned* t, unsigned i) { return 0; } }",
                "load",
            ),
            ("int f() { return 0; }\nconst int a = 1, threadIdx = 2;", "threadIdx"),
            ("::uint3 threadIdx = {};\nint f() { return 0; }", "threadIdx"),
            ("#define T (threadIdx)\nconst uint3 T = {};\nint f() { return 0; }", "threadIdx"),
            (
                "int f() { return 0; }\n__device__ auto (load)(unsigned* t, unsigned i) -> unsigned { return t[i]; }",
                "load",
            ),
            ("int f() { return 0; }\nnamespace a::b { __device__ unsigned load(unsigned* t, unsigned i); }", "load"),
        ] {
            let refused = region(text);
            assert!(
                matches!(&refused, Err(Invalid::Region { problem, .. }) if problem.contains(&format!("this declares `{name}`"))),
                "{text}: {refused:?}"
            );
        }
        // The kernel's own `n`, `out` and `lane` are nearer than any the region declares: no change.
        assert!(region("constexpr unsigned n = 32, lane = 1;\nint f() { return n + lane; }").is_ok());
        assert!(region("constexpr int out = 5;\nint f() { return out; }").is_ok(), "a pointer parameter");
    }

    #[test]
    fn a_macro_may_share_a_name_with_a_header_read_before_the_region() {
        let starter = format!("#include \"shared_load.cuh\"\n{STARTER}");
        let edited = starter.replace("int f() { return 0; }", "#define load 3\nint f() { return load; }");
        assert!(validate(&exercise(), &starter, edited.as_bytes()).is_ok(), "the header was read before the macro");
    }

    #[test]
    fn a_name_the_starter_region_defines_may_be_defined_again() {
        let starter = STARTER
            .replace("int f() { return 0; }", "#define PAD 1\nint f() { return PAD; }")
            .replace("out[0] = f();", "out[0] = f() + PAD;");
        let edited = starter.replace("#define PAD 1", "#define PAD 2");
        assert!(validate(&exercise(), &starter, edited.as_bytes()).is_ok());
    }

    #[test]
    fn a_comment_that_names_the_kernel_hides_nothing() {
        let commented = STARTER.replace("// top", "// k(out, n) is __global__ void k(out, n) below");
        assert!(check(&commented).is_ok(), "{:?}", check(&commented));
    }

    #[test]
    fn kernels_are_found_with_launch_bounds_and_in_any_layout() {
        let text = "extern \"C\" __global__ void __launch_bounds__(256)\nfast(float* a) {}\n__global__ void\nslow ( int n ) {}";
        assert_eq!(kernels(text), vec![("fast", "float* a"), ("slow", " int n ")]);
    }
}
