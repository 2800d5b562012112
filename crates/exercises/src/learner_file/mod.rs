//! A learner's `.cu` file, checked against the exercise's starter before anything runs.
//!
//! Only the lines between the markers are the learner's. A file whose other lines differ from the
//! starter's is rejected, naming the first such line, rather than having its editable part spliced
//! into the starter: line numbers stay the learner's own (so compiler messages point into their
//! file as it is), and an edit outside the region is shown instead of silently dropped. Outside the
//! region only tokens count: a byte-order mark, line endings, trailing spaces, tabs for spaces,
//! indentation and comments are not changes (see [`crate::tokens::normalize`]).
//!
//! The region is a region: what it holds may not reach beyond it (see `region`, whose checks each file of this module holds by family).

mod directives;
mod lasting;
mod prints;
mod region;
mod shape;
mod sizes;
mod syntax;
mod tile;
mod words;
mod writes;

use std::{collections::BTreeMap, sync::OnceLock};

use thiserror::Error;

use crate::{
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

/// A file that passed every check: its normalized text (what is compiled), its editable lines
/// (1-based, inclusive), and the names the starter's part defines that the code after the part
/// reads as values (`TILE_WORDS`), which the grader's lines after the part check and pass on as
/// numbers ([`crate::after_part`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LearnerFile {
    pub text: String,
    pub region: (usize, usize),
    pub read_after: Vec<String>,
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
    let (region, read_after) = region::region_problems(&yours, &theirs, &exercise.signature)?;
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
    Ok(LearnerFile { text: text.clone(), region, read_after })
}

/// The most lines of `#if 0` groups that hold what is no token (an unclosed quote) a file may have.
const MAX_UNREAD_LINES: usize = 64;

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
        // A line inside a group may hold what is no token (`don't` in old notes), which the
        // preprocessor skips with the group: such lines are read as empty to find the groups, and
        // kept only if every one of them is inside one.
        let (mut region, mut unread) = (parts.region.clone(), Vec::new());
        let tokens = loop {
            match tokens::tokenize(&region, parts.region_start + 1) {
                Ok(tokens) => break tokens,
                Err(LexError::UnterminatedLiteral { line }) if unread.len() < MAX_UNREAD_LINES => {
                    unread.push(line);
                    let first = parts.region_start + 1;
                    region = region
                        .lines()
                        .enumerate()
                        .map(|(index, text)| if index + first == line { "\n".to_owned() } else { format!("{text}\n") })
                        .collect();
                }
                Err(_) => return text,
            }
        };
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
        if !unread.iter().all(|&line| groups.iter().any(|&(first, last)| (first..=last).contains(&line))) {
            return text;
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

/// The course's headers, the only files a learner's part may include (by bare name).
pub fn course_headers() -> Vec<&'static str> {
    cuda_kernels::source::course_headers()
}

/// The tokens of the course's header `header` (none for another name, or one that does not
/// tokenize), read once a process: the checks of every part read them.
fn header_tokens(header: &str) -> &'static [Token] {
    static TOKENS: OnceLock<BTreeMap<&'static str, Vec<Token>>> = OnceLock::new();
    let headers = TOKENS.get_or_init(|| {
        let tokens = |header| tokens::tokenize(cuda_kernels::source::embedded(header).unwrap_or_default(), 1);
        course_headers().into_iter().map(|header| (header, tokens(header).unwrap_or_default())).collect()
    });
    headers.get(header).map_or(&[], Vec::as_slice)
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

/// The first token where `yours` and `starter` differ, shown with both lines.
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
mod tests;
