//! A learner's file as the preprocessor reads it: decoded and normalized text, then preprocessing
//! tokens after line splices (`\` at the end of a line) are joined and comments removed.
//!
//! The text that is compiled is the normalized text this module returns, so the tokens seen here
//! are the tokens the compiler sees: a directive spelled with `%:`, split by a line splice,
//! indented with a no-break space or with a comment between `#` and its name is still found.

/// A file's bytes as text: a UTF-8 byte-order mark dropped, Windows (`\r\n`) and old Mac (`\r`)
/// line ends made `\n`, Unicode spaces (a no-break space) made ASCII spaces and trailing
/// whitespace removed from every line. A file that starts with UTF-16's byte-order mark is read as
/// UTF-16; bytes that are not UTF-8 are read as Latin-1 (an editor that saved a comment with `é`
/// in it), and a DOS end-of-file mark (Ctrl-Z) ending it dropped. `None` for a file with a NUL
/// character, or broken UTF-16: not text.
pub fn normalize(bytes: &[u8]) -> Option<String> {
    let decoded = match utf16(bytes) {
        Some(text) => text?,
        None => {
            let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
            match std::str::from_utf8(bytes) {
                Ok(text) => text.to_owned(),
                Err(_) => bytes.iter().map(|&b| char::from(b)).collect(),
            }
        }
    };
    if decoded.contains('\0') {
        return None;
    }
    // The end-of-file mark (Ctrl-Z) that old DOS and Windows tools add to a text file.
    let decoded = decoded.trim_end_matches('\u{1a}');
    let unified = decoded.replace("\r\n", "\n").replace('\r', "\n");
    let spaced: String =
        unified.chars().map(|c| if c != '\n' && c.is_whitespace() && !c.is_ascii() { ' ' } else { c }).collect();
    let mut out = String::with_capacity(spaced.len());
    for line in spaced.split_inclusive('\n') {
        let (body, end) = line.strip_suffix('\n').map_or((line, ""), |body| (body, "\n"));
        out.push_str(body.trim_end());
        out.push_str(end);
    }
    Some(out)
}

/// A text saved as UTF-16 (Windows editors' "Unicode"), told by its byte-order mark: `Some` of
/// the text, or of `None` if it is not whole UTF-16 (an odd byte, a lone surrogate); `None` for
/// any other file.
fn utf16(bytes: &[u8]) -> Option<Option<String>> {
    let (body, unit): (_, fn([u8; 2]) -> u16) = match bytes {
        [0xff, 0xfe, body @ ..] => (body, u16::from_le_bytes),
        [0xfe, 0xff, body @ ..] => (body, u16::from_be_bytes),
        _ => return None,
    };
    if body.len() % 2 != 0 {
        return Some(None);
    }
    let units = body.chunks_exact(2).map(|pair| unit([pair[0], pair[1]]));
    Some(char::decode_utf16(units).collect::<Result<String, _>>().ok())
}

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Identifier,
    Number,
    /// A string or character literal, with its prefix.
    Literal,
    /// An operator or punctuator; digraphs are given as what they stand for (`%:` as `#`).
    Punct,
    /// The `#` that starts a directive (first on its logical line).
    Directive,
    /// The end of a directive's logical line.
    EndOfDirective,
    /// A character that is none of these (outside ASCII).
    Other,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    pub kind: Kind,
    pub text: String,
    /// 1-based line of the token's first character, in the tokenized text's numbering.
    pub line: usize,
    /// Whether a space, a line's end or a comment comes right before it: a macro is
    /// function-like when its name's `(` follows with none.
    pub after_space: bool,
}

/// Why a text cannot be tokenized; each names the line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LexError {
    UnterminatedComment {
        line: usize,
    },
    UnterminatedLiteral {
        line: usize,
    },
    RawString {
        line: usize,
    },
    /// The text ends with `\`: a splice into whatever follows.
    TrailingSplice {
        line: usize,
    },
}

/// Multi-character punctuators, longest first, each with what it stands for.
const PUNCTUATORS: &[(&str, &str)] = &[
    ("%:%:", "##"),
    (">>=", ">>="),
    ("<<=", "<<="),
    ("...", "..."),
    ("->*", "->*"),
    ("<=>", "<=>"),
    ("::", "::"),
    ("->", "->"),
    ("++", "++"),
    ("--", "--"),
    ("<<", "<<"),
    (">>", ">>"),
    ("<=", "<="),
    (">=", ">="),
    ("==", "=="),
    ("!=", "!="),
    ("&&", "&&"),
    ("||", "||"),
    ("+=", "+="),
    ("-=", "-="),
    ("*=", "*="),
    ("/=", "/="),
    ("%=", "%="),
    ("&=", "&="),
    ("|=", "|="),
    ("^=", "^="),
    ("##", "##"),
    (".*", ".*"),
    ("<%", "{"),
    ("%>", "}"),
    ("<:", "["),
    (":>", "]"),
    ("%:", "#"),
];

/// The tokens of `text` (normalized), numbered from `first_line`.
pub fn tokenize(text: &str, first_line: usize) -> Result<Vec<Token>, LexError> {
    // Phase 2: a backslash right before a line end joins the two lines.
    let mut chars: Vec<(char, usize)> = Vec::with_capacity(text.len());
    let mut line = first_line;
    let raw: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < raw.len() {
        match (raw[i], raw.get(i + 1)) {
            ('\\', Some('\n')) => {
                line += 1;
                i += 2;
            }
            ('\\', None) => return Err(LexError::TrailingSplice { line }),
            (c, _) => {
                chars.push((c, line));
                if c == '\n' {
                    line += 1;
                }
                i += 1;
            }
        }
    }
    let mut tokens: Vec<Token> = Vec::new();
    let (mut i, mut line_has_tokens, mut in_directive, mut after_space) = (0, false, false, true);
    let at = |i: usize| chars.get(i).map(|&(c, _)| c);
    while i < chars.len() {
        let (c, line) = chars[i];
        if c == '\n' {
            if in_directive {
                tokens.push(Token { kind: Kind::EndOfDirective, text: String::new(), line, after_space: true });
            }
            (line_has_tokens, in_directive, after_space) = (false, false, true);
            i += 1;
            continue;
        }
        if c.is_whitespace() {
            after_space = true;
            i += 1;
            continue;
        }
        if c == '/' && at(i + 1) == Some('/') {
            while i < chars.len() && chars[i].0 != '\n' {
                i += 1;
            }
            continue;
        }
        if c == '/' && at(i + 1) == Some('*') {
            let start = i;
            i += 2;
            loop {
                match (at(i), at(i + 1)) {
                    (Some('*'), Some('/')) => break,
                    (None, _) => return Err(LexError::UnterminatedComment { line: chars[start].1 }),
                    // A comment spanning lines in a directive keeps the directive going, as in
                    // the preprocessor (a comment is one space). Outside one, NVRTC reads a `#`
                    // after a line end in a comment as a directive's: `f(); /*\n*/ #define x`.
                    (Some('\n'), _) if !in_directive => {
                        line_has_tokens = false;
                        i += 1;
                    }
                    _ => i += 1,
                }
            }
            i += 2;
            after_space = true;
            continue;
        }
        let spaced = std::mem::replace(&mut after_space, false);
        let push = |tokens: &mut Vec<Token>, kind: Kind, text: String| {
            tokens.push(Token { kind, text, line, after_space: spaced });
        };
        if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while at(i).is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().map(|&(c, _)| c).collect();
            if matches!(at(i), Some('"')) && matches!(word.as_str(), "R" | "LR" | "uR" | "UR" | "u8R") {
                return Err(LexError::RawString { line });
            }
            if matches!(at(i), Some('"' | '\'')) && matches!(word.as_str(), "L" | "u" | "U" | "u8") {
                let end = literal_end(&chars, i).ok_or(LexError::UnterminatedLiteral { line })?;
                let text = chars[start..end].iter().map(|&(c, _)| c).collect();
                push(&mut tokens, Kind::Literal, text);
                i = end;
            } else {
                push(&mut tokens, Kind::Identifier, word);
            }
        } else if c.is_ascii_digit() || (c == '.' && at(i + 1).is_some_and(|c| c.is_ascii_digit())) {
            let start = i;
            i += 1;
            while let Some(c) = at(i) {
                let exponent = matches!(c, '+' | '-') && matches!(chars[i - 1].0, 'e' | 'E' | 'p' | 'P');
                let separator = c == '\'' && at(i + 1).is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
                if c.is_ascii_alphanumeric() || c == '_' || c == '.' || exponent || separator {
                    i += if separator { 2 } else { 1 };
                } else {
                    break;
                }
            }
            push(&mut tokens, Kind::Number, chars[start..i].iter().map(|&(c, _)| c).collect());
        } else if c == '"' || c == '\'' {
            let end = literal_end(&chars, i).ok_or(LexError::UnterminatedLiteral { line })?;
            push(&mut tokens, Kind::Literal, chars[i..end].iter().map(|&(c, _)| c).collect());
            i = end;
        } else if c.is_ascii_punctuation() {
            let rest: String = chars[i..chars.len().min(i + 4)].iter().map(|&(c, _)| c).collect();
            let (spelled, meaning) = PUNCTUATORS
                .iter()
                .find(|(spelled, _)| rest.starts_with(spelled))
                // `<::` not followed by `:` or `>` is `<` then `::`.
                .filter(|(spelled, _)| {
                    !(*spelled == "<:" && rest.starts_with("<::") && !rest[3..].starts_with([':', '>']))
                })
                .map_or((c.to_string(), c.to_string()), |(s, m)| ((*s).to_owned(), (*m).to_owned()));
            i += spelled.chars().count();
            let kind = if meaning == "#" && !line_has_tokens { Kind::Directive } else { Kind::Punct };
            in_directive |= kind == Kind::Directive;
            push(&mut tokens, kind, meaning);
        } else {
            push(&mut tokens, Kind::Other, c.to_string());
            i += 1;
        }
        line_has_tokens = true;
    }
    if in_directive {
        tokens.push(Token {
            kind: Kind::EndOfDirective,
            text: String::new(),
            line: chars.last().map_or(line, |c| c.1),
            after_space: true,
        });
    }
    Ok(tokens)
}

/// The index after the literal whose opening quote is at `open`; `None` if a line ends first.
fn literal_end(chars: &[(char, usize)], open: usize) -> Option<usize> {
    let quote = chars[open].0;
    let mut i = open + 1;
    loop {
        match chars.get(i)?.0 {
            '\n' => return None,
            '\\' => i += 2,
            c if c == quote => return Some(i + 1),
            _ => i += 1,
        }
    }
}

/// The first trigraph (`??=` and the like) in the code of `tokens`, as (line, spelling): two `?`
/// and the next character, with nothing between them. NVRTC 13.0 at `-std=c++17`, as the course
/// compiles, reads none (a `??/` at the end of a comment does not join the next line to it, where
/// `-std=c++14` does), so one in a comment or a literal is text; in code, where another compiler
/// would read it, it is refused with a clearer word than the compiler's error.
pub fn trigraph(tokens: &[Token]) -> Option<(usize, String)> {
    tokens.windows(3).find_map(|three| {
        let [first, second, third] = three else { return None };
        let next = third.text.chars().next()?;
        (first.text == "?"
            && second.text == "?"
            && !second.after_space
            && !third.after_space
            && matches!(third.kind, Kind::Punct | Kind::Literal)
            && "=/'()!<>-".contains(next))
        .then(|| (first.line, format!("??{next}")))
    })
}

/// Each directive of `tokens`: its `#` token's index, and its name (`""` for a null directive).
pub fn directives(tokens: &[Token]) -> impl Iterator<Item = (usize, &str)> {
    tokens.iter().enumerate().filter(|(_, t)| t.kind == Kind::Directive).map(|(i, _)| {
        let name = tokens.get(i + 1).filter(|t| t.kind == Kind::Identifier).map_or("", |t| t.text.as_str());
        (i, name)
    })
}

/// The tokens of `tokens` outside directives: the code the compiler reads as it is written.
pub fn code(tokens: &[Token]) -> impl Iterator<Item = &Token> {
    let mut in_directive = false;
    tokens.iter().filter(move |token| match token.kind {
        Kind::Directive => {
            in_directive = true;
            false
        }
        Kind::EndOfDirective => {
            in_directive = false;
            false
        }
        _ => !in_directive,
    })
}

/// The tokens of the directive starting at `start` (its `#`), up to its end.
pub fn directive_tokens(tokens: &[Token], start: usize) -> &[Token] {
    let end = tokens[start..].iter().position(|t| t.kind == Kind::EndOfDirective).map_or(tokens.len(), |e| start + e);
    &tokens[start..end]
}

/// What a `#define` directive (from its `#`) makes: the name, the parameters of a function-like
/// macro (`__VA_ARGS__` last for `...`), and the replacement list.
pub struct Definition<'t> {
    pub name: &'t Token,
    pub function_like: bool,
    pub parameters: Vec<&'t str>,
    /// Whether the last parameter takes the rest of the arguments, commas and all: `...`
    /// (`__VA_ARGS__`) or GNU's named `rest...`.
    pub variadic: bool,
    pub body: &'t [Token],
}

/// The macro a `#define` directive (its tokens, from its `#`) makes, if it names one.
pub fn definition(directive: &[Token]) -> Option<Definition<'_>> {
    let [_, _, name, rest @ ..] = directive else { return None };
    if name.kind != Kind::Identifier {
        return None;
    }
    // `NAME(` with no space is a function-like macro; `NAME (x)` stands for `(x)`.
    let (function_like, parameters, variadic, body) = match rest {
        [open, after @ ..] if open.text == "(" && !open.after_space => {
            let close = after.iter().position(|t| t.text == ")").unwrap_or(after.len());
            let list = &after[..close];
            let mut parameters: Vec<&str> =
                list.iter().filter(|t| t.kind == Kind::Identifier).map(|t| t.text.as_str()).collect();
            let dots = list.iter().position(|t| t.text == "...");
            // `...` alone is `__VA_ARGS__`; after a name (`rest...`), that name takes the rest.
            if dots.is_some_and(|at| at == 0 || list[at - 1].kind != Kind::Identifier) {
                parameters.push("__VA_ARGS__");
            }
            (true, parameters, dots.is_some(), after.get(close + 1..).unwrap_or_default())
        }
        _ => (false, Vec::new(), false, rest),
    };
    Some(Definition { name, function_like, parameters, variadic, body })
}

/// `code` without its attributes (`[[nodiscard]]`, `__attribute__((unused))` or `__attribute(..)`, `__align__(16)`,
/// `alignas(8)`, `__declspec(...)`) and pragma operators (`_Pragma("unroll")`), which declare
/// and leave nothing but may stand before or inside a declaration; `[[` always begins one in C++.
pub fn without_attributes<T: std::borrow::Borrow<Token> + Clone>(code: &[T]) -> Vec<T> {
    let text = |i: usize| code.get(i).map_or("", |t| t.borrow().text.as_str());
    let mut kept = Vec::with_capacity(code.len());
    let mut i = 0;
    while i < code.len() {
        let bracket = match (text(i), text(i + 1)) {
            ("[", "[") => Some(("[", "]", i)),
            (
                "__attribute__" | "__attribute" | "__align__" | "alignas" | "__declspec" | "_Pragma" | "__pragma",
                "(",
            ) => Some(("(", ")", i + 1)),
            _ => None,
        };
        if let Some((open, close, from)) = bracket {
            let mut depth = 0;
            i = from;
            while i < code.len() {
                depth += i32::from(text(i) == open) - i32::from(text(i) == close);
                i += 1;
                if depth == 0 {
                    break;
                }
            }
            continue;
        }
        kept.push(code[i].clone());
        i += 1;
    }
    kept
}

/// Steps an expansion may take at most (each counted by `expand`): a handful of macros that each use the
/// next twice, a call nested thousands deep or a chain of thousands of macros would otherwise take
/// the grader's time and memory without bound (before these steps were counted, a call nested
/// 5000 deep took 10 s and 4.7 GB to check, a chain of 3000 macros more than 2 minutes and 1.5 GB:
/// the fixtures `macro-calls-nested-5000-deep` and `macros-chained-3000-long`). The checks then
/// read what it made, some of them again at each token: 10 000 keeps them under a second.
pub const EXPANSION_LIMIT: usize = 10_000;

/// The code of `tokens` (outside directives) as the compiler reads it after expanding the macros
/// that `tokens` itself defines, each from its `#define` to its `#undef`: the checks of a learner's
/// part read this, so that `SAME(__device__ unsigned load(...) { ... })` is the declaration it
/// is. As in the preprocessor, a macro's arguments are expanded before they replace its
/// parameters (so `SAME(SAME(...))` is expanded twice), and a macro is not expanded again inside
/// its own expansion; `#parameter` makes a string of the argument as written; an expansion's
/// tokens keep the line of the macro's name. `Err` when it would pass [`EXPANSION_LIMIT`] tokens.
pub fn expanded(tokens: &[Token]) -> Result<Vec<Token>, usize> {
    let mut macros: Macros<'_> = std::collections::BTreeMap::new();
    let mut out = Vec::new();
    let mut made = 0;
    let mut index = 0;
    while index < tokens.len() {
        if tokens[index].kind == Kind::Directive {
            let directive = directive_tokens(tokens, index);
            match (directive.get(1).map(|t| t.text.as_str()), directive.get(2)) {
                (Some("define"), _) => {
                    if let Some(definition) = definition(directive) {
                        macros.insert(definition.name.text.as_str(), definition);
                    }
                }
                (Some("undef"), Some(name)) => {
                    macros.remove(name.text.as_str());
                }
                _ => {}
            }
            index += directive.len() + 1;
            continue;
        }
        let end = tokens[index..].iter().position(|t| t.kind == Kind::Directive).map_or(tokens.len(), |e| index + e);
        let code = tokens[index..end].iter().map(|t| (t.clone(), Hidden::default())).collect();
        out.extend(expand(code, &macros, &mut made)?.into_iter().map(|(token, _)| token));
        index = end;
    }
    Ok(out)
}

type Macros<'a> = std::collections::BTreeMap<&'a str, Definition<'a>>;

/// The names a token may not be expanded as: the macros whose expansion made it.
type Hidden = std::rc::Rc<Vec<String>>;

/// `pending` with every macro in it expanded and the result rescanned, each token with the
/// macros it came from; `made` counts its steps (each token made, each token of an argument read
/// again to expand it or to make it a string, each name of a list of macros a token came from), up to
/// [`EXPANSION_LIMIT`], which bounds the time and memory an expansion takes.
fn expand(
    mut pending: std::collections::VecDeque<(Token, Hidden)>,
    macros: &Macros<'_>,
    made: &mut usize,
) -> Result<Vec<(Token, Hidden)>, usize> {
    let mut out = Vec::new();
    while let Some((token, hidden)) = pending.pop_front() {
        let Some(definition) =
            macros.get(token.text.as_str()).filter(|_| token.kind == Kind::Identifier && !hidden.contains(&token.text))
        else {
            out.push((token, hidden));
            continue;
        };
        // As the standard has it, an expansion is hidden from the macros that made both its name
        // and its `)`: a `)` from the source frees the macros the name came from.
        let (arguments, hidden) = match definition.function_like {
            false => (Vec::new(), hidden),
            true => match pending.front().map(|(t, _)| t.text.as_str()) {
                Some("(") => match take_arguments(&mut pending) {
                    Some((arguments, closing)) => {
                        (arguments, Hidden::new(hidden.iter().filter(|name| closing.contains(name)).cloned().collect()))
                    }
                    None => {
                        out.push((token, hidden));
                        continue;
                    }
                },
                _ => {
                    out.push((token, hidden));
                    continue;
                }
            },
        };
        let mut hide = (*hidden).clone();
        hide.push(token.text.clone());
        // Each name of the list is a step: a chain of macros, each naming the next, makes lists
        // as long as the chain.
        spend(made, hide.len())?;
        let hide = Hidden::new(hide);
        let comma =
            || (Token { kind: Kind::Punct, text: ",".into(), line: token.line, after_space: false }, hide.clone());
        // A parameter's argument as written (for `#`), and expanded (for everywhere else).
        let written = |at: usize| match definition.variadic && at + 1 == definition.parameters.len() {
            true => arguments.get(at..).unwrap_or_default().join(&comma()),
            false => arguments.get(at).cloned().unwrap_or_default(),
        };
        let mut expanded_arguments: Vec<Option<Vec<(Token, Hidden)>>> = vec![None; definition.parameters.len()];
        let mut replacement = Vec::new();
        let mut body = definition.body.iter().peekable();
        while let Some(part) = body.next() {
            let parameter = |name: &str| definition.parameters.iter().position(|p| *p == name);
            if part.text == "#"
                && let Some(at) = body.peek().and_then(|next| parameter(&next.text))
            {
                body.next();
                // Each token the string is made of is a step, at each `#`.
                let argument = written(at);
                spend(made, argument.len())?;
                let text = argument.iter().map(|(t, _)| t.text.as_str()).collect::<Vec<_>>().join(" ");
                let literal =
                    Token { kind: Kind::Literal, text: format!("{text:?}"), line: token.line, after_space: true };
                replacement.push((literal, hide.clone()));
            } else if let Some(at) = parameter(&part.text) {
                if expanded_arguments[at].is_none() {
                    // An argument is read again to expand it: calls nested in calls (`I(I(I(...)))`)
                    // read their innermost tokens once per level, which counts as making them.
                    let argument = written(at);
                    spend(made, argument.len())?;
                    expanded_arguments[at] = Some(expand(argument.into(), macros, made)?);
                }
                let argument = expanded_arguments[at].as_ref().expect("just expanded");
                spend(made, argument.iter().map(|(_, own)| own.len() + hide.len()).sum())?;
                replacement.extend(argument.iter().map(|(t, own)| {
                    // Each name once: nested calls would otherwise double the lists at each level.
                    let mut hidden = (**own).clone();
                    hidden.extend(hide.iter().filter(|name| !own.contains(name)).cloned());
                    (Token { line: token.line, ..t.clone() }, Hidden::new(hidden))
                }));
            } else {
                replacement.push((Token { line: token.line, ..part.clone() }, hide.clone()));
            }
        }
        spend(made, replacement.len())?;
        if out.len() + pending.len() + replacement.len() > EXPANSION_LIMIT {
            return Err(EXPANSION_LIMIT);
        }
        for token in replacement.into_iter().rev() {
            pending.push_front(token);
        }
    }
    Ok(out)
}

/// Adds `steps` to `made`: `Err` past [`EXPANSION_LIMIT`].
fn spend(made: &mut usize, steps: usize) -> Result<(), usize> {
    *made = made.saturating_add(steps);
    match *made > EXPANSION_LIMIT {
        true => Err(EXPANSION_LIMIT),
        false => Ok(()),
    }
}

/// A macro call's arguments, each token with what it carries, and what its `)` carries.
type Call<H> = (Vec<Vec<(Token, H)>>, H);

/// The arguments of a macro call, from its `(` (at the front of `pending`) to the matching `)`,
/// split at the commas outside parentheses, and what the `)` carries; `None`, with nothing
/// taken, when it is not closed.
fn take_arguments<H: Clone>(pending: &mut std::collections::VecDeque<(Token, H)>) -> Option<Call<H>> {
    let mut depth = 0;
    let close = pending.iter().position(|(t, _)| {
        depth += i32::from(t.text == "(") - i32::from(t.text == ")");
        depth == 0
    })?;
    let call: Vec<(Token, H)> = pending.drain(..=close).collect();
    let inner = &call[1..call.len() - 1];
    let mut arguments = vec![Vec::new()];
    let mut depth = 0;
    for token in inner {
        match token.0.text.as_str() {
            "," if depth == 0 => arguments.push(Vec::new()),
            open @ ("(" | ")") => {
                depth += if open == "(" { 1 } else { -1 };
                arguments.last_mut().expect("one").push(token.clone());
            }
            _ => arguments.last_mut().expect("one").push(token.clone()),
        }
    }
    if inner.is_empty() {
        arguments.clear();
    }
    let closing = call.last().expect("the `)`").1.clone();
    Some((arguments, closing))
}

/// Why a macro's replacement list could change the code where it is used beyond one expression
/// or type, or `None`. Where the macro is used, outside the learner's part, it must not open or
/// close a block or a bracket it does not close itself, end a statement, or leave the function.
pub fn macro_body_problem(body: &[Token]) -> Option<String> {
    let mut open: Vec<&str> = Vec::new();
    for token in body {
        match token.text.as_str() {
            "{" | "}" | ";" => return Some(format!("holds `{}`, so it stands for statements", token.text)),
            "return" | "goto" | "__global__" | "asm" | "__asm__" | "__asm" if token.kind == Kind::Identifier => {
                return Some(format!("holds `{}`", token.text));
            }
            "(" | "[" => open.push(&token.text),
            close @ (")" | "]") => {
                let opener = if close == ")" { "(" } else { "[" };
                if open.pop() != Some(opener) {
                    return Some(format!("closes a `{opener}` it does not open"));
                }
            }
            _ => {}
        }
    }
    open.first().map(|opened| format!("opens a `{opened}` it does not close"))
}

/// The first line of `text` (numbered from `first_line`) that the course's include inliner takes
/// for an include (`#include "NAME"` alone on its line) but the compiler does not: one in a
/// comment, or continued from the line before by a `\`. The inliner would paste a header there,
/// and its text would become code that no check read.
pub fn include_not_a_directive(text: &str, first_line: usize) -> Option<usize> {
    let tokens = tokenize(text, first_line).ok()?;
    let directives: Vec<usize> =
        directives(&tokens).filter(|(_, name)| *name == "include").map(|(start, _)| tokens[start].line).collect();
    text.lines()
        .enumerate()
        .filter(|(_, line)| line.trim().strip_prefix("#include \"").is_some_and(|rest| rest.ends_with('"')))
        .map(|(index, _)| first_line + index)
        .find(|line| !directives.contains(line))
}

/// The first include-like directive (`#include`, `#include_next`, `#import`, `#embed`) left in
/// `text`, as it is spelled; a text the compiler is given must have none.
pub fn include_left(text: &str) -> Option<String> {
    let tokens = tokenize(text, 1).ok()?;
    let (start, _) =
        directives(&tokens).find(|(_, name)| matches!(*name, "include" | "include_next" | "import" | "embed"))?;
    Some(directive_tokens(&tokens, start).iter().map(|t| t.text.as_str()).collect::<Vec<_>>().join(" "))
}

/// `count` texts of up to 23 tokens each, drawn from brackets and punctuation and `words`, the
/// same on every run (a fixed xorshift sequence): input for tests that what reads a region never
/// panics, whatever it holds.
#[cfg(test)]
pub(crate) fn soups(words: &[&str], count: usize) -> Vec<String> {
    let punctuation = ["{", "}", "(", ")", "[", "]", "<", ">", ";", ",", "=", "*", "&"];
    let words: Vec<&str> = punctuation.iter().chain(words).copied().collect();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..count)
        .map(|_| (0..next() % 24).map(|_| format!("{} ", words[(next() % words.len() as u64) as usize])).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expanded_text(text: &str) -> Result<Vec<String>, usize> {
        expanded(&tokenize(text, 1).unwrap()).map(|tokens| tokens.into_iter().map(|t| t.text).collect())
    }

    #[test]
    fn the_macros_a_text_defines_are_expanded_as_the_compiler_expands_them() {
        let words = |text: &str| expanded_text(text).unwrap().join(" ");
        assert_eq!(
            words("#define SAME(x) x\nSAME(unsigned load(unsigned i) { return i; })"),
            "unsigned load ( unsigned i ) { return i ; }"
        );
        assert_eq!(words("#define A B\n#define B 1\nA + B"), "1 + 1");
        assert_eq!(words("#define A A + 1\nA"), "A + 1", "a macro is not expanded inside itself");
        assert_eq!(words("#define S(x) #x\nS(a b)"), "\"a b\"");
        assert_eq!(words("#define V(first, ...) f(__VA_ARGS__)\nV(0, 1, (2, 3))"), "f ( 1 , ( 2 , 3 ) )");
        assert_eq!(words("#define KEEP(parts...) parts\nKEEP(int a, b; return)"), "int a , b ; return", "GNU's named");
        assert_eq!(words("#define F(x) x\nF + 1"), "F + 1", "a function-like macro without `(`");
        assert_eq!(words("#define F SAME\n#define SAME(x) x\nF(int a;)"), "int a ;", "its `(` after the expansion");
        assert_eq!(words("#define A 1\nA\n#undef A\nA"), "1 A");
        assert_eq!(words("#define SAME(x) x\nSAME(SAME(int a;))"), "int a ;", "arguments are expanded first");
        assert_eq!(words("#define ONE 1\n#define S(x) #x\nS(ONE)"), "\"ONE\"", "but not for `#`");
        assert_eq!(words("#define F(x) x + F(x)\nF(F(2))"), "2 + F ( 2 ) + F ( 2 + F ( 2 ) )");
        assert_eq!(
            words("#define M(a, b) a b\n#define K(x) M(, x)\nM(, K)(int a;)"),
            "int a ;",
            "a `)` from the source frees the macro its name came from"
        );
        assert_eq!(
            words("#define F (threadIdx)\nconst uint3 F = x;"),
            "const uint3 ( threadIdx ) = x ;",
            "object-like"
        );
        assert_eq!(words("#define F/* */(x) x\nF"), "( x ) x", "a comment is a space");
        let lines: Vec<usize> = expanded(&tokenize("#define T const uint3\n\nT threadIdx;", 1).unwrap())
            .unwrap()
            .iter()
            .map(|t| t.line)
            .collect();
        assert_eq!(lines, [3, 3, 3, 3], "an expansion keeps its use's line");
        let doubling: String = (1..24).map(|k| format!("#define A{k} A{} A{}\n", k - 1, k - 1)).collect();
        assert_eq!(expanded_text(&format!("#define A0 x\n{doubling}A23")), Err(EXPANSION_LIMIT));
        // Few tokens made, many steps: a call nested 2000 deep reads its argument at each level, a
        // chain of 2000 macros makes lists of 2000 names.
        let nested = format!("#define I(x) x\n{}0{}", "I(".repeat(2000), ")".repeat(2000));
        assert_eq!(expanded_text(&nested), Err(EXPANSION_LIMIT));
        let chain: String = (0..2000).map(|k| format!("#define X{k} F(X{})\n", k + 1)).collect();
        assert_eq!(expanded_text(&format!("#define F(a) a\n{chain}#define X2000 0\nF(X0)")), Err(EXPANSION_LIMIT));
        let strings = format!("#define S(...) {}\nS({})", "#__VA_ARGS__ ".repeat(200), ["a"; 1000].join(","));
        assert_eq!(expanded_text(&strings), Err(EXPANSION_LIMIT), "an argument made a string 200 times");
        let short = format!("#define I(x) x\n{}0{}", "I(".repeat(20), ")".repeat(20));
        assert_eq!(expanded_text(&short).map(|words| words.len()), Ok(1), "twenty deep is still code");
    }

    fn texts(source: &str) -> Vec<String> {
        tokenize(&normalize(source.as_bytes()).unwrap(), 1).unwrap().into_iter().map(|t| t.text).collect()
    }

    fn directive_names(source: &str) -> Vec<String> {
        let tokens = tokenize(&normalize(source.as_bytes()).unwrap(), 1).unwrap();
        directives(&tokens).map(|(_, name)| name.to_owned()).collect()
    }

    #[test]
    fn normalizing_drops_what_editors_add() {
        assert_eq!(normalize(b"\xef\xbb\xbfint x;  \r\nint y;\t\r\rz").unwrap(), "int x;\nint y;\n\nz");
        assert_eq!(normalize(b"// caf\xe9\n").unwrap(), "// caf\u{e9}\n", "Latin-1 is read as Latin-1");
        assert_eq!(normalize("\u{a0}\u{a0}#include x".as_bytes()).unwrap(), "  #include x");
        assert_eq!(normalize(b"a\0b"), None);
        assert_eq!(normalize(b"int x;\r\n\x1a").unwrap(), "int x;\n", "DOS's end-of-file mark is not text");
        let utf16 = |bom: [u8; 2], text: &str, unit: fn(u16) -> [u8; 2]| {
            bom.into_iter().chain(text.encode_utf16().flat_map(unit)).collect::<Vec<u8>>()
        };
        let text = "// caf\u{e9} \u{1f600}\r\nint x;\r\n";
        assert_eq!(
            normalize(&utf16([0xff, 0xfe], text, u16::to_le_bytes)).unwrap(),
            "// caf\u{e9} \u{1f600}\nint x;\n"
        );
        assert_eq!(
            normalize(&utf16([0xfe, 0xff], text, u16::to_be_bytes)).unwrap(),
            "// caf\u{e9} \u{1f600}\nint x;\n"
        );
        assert_eq!(normalize(&[0xff, 0xfe, 0x41]), None, "an odd byte is not UTF-16");
        assert_eq!(normalize(&[0xff, 0xfe, 0x00, 0xd8, 0x41, 0x00]), None, "nor is a lone surrogate");
        assert_eq!(
            normalize(&utf16([0xff, 0xfe], "a\0b", u16::to_le_bytes)),
            None,
            "a NUL is not text in UTF-16 either"
        );
    }

    #[test]
    fn comments_go_and_splices_join() {
        assert_eq!(texts("a /* b */ c // d\ne"), ["a", "c", "e"]);
        assert_eq!(texts("// comment \\\nhidden\nseen"), ["seen"], "a splice continues a line comment");
        assert_eq!(texts("re\\\nturn 1;"), ["return", "1", ";"]);
        assert_eq!(texts("x = 1'000'000 + 1e+5 + 0x1p-3f;"), ["x", "=", "1'000'000", "+", "1e+5", "+", "0x1p-3f", ";"]);
        assert_eq!(texts(r#"s = "a\"b // c" 'x' u8"y";"#), ["s", "=", r#""a\"b // c""#, "'x'", "u8\"y\"", ";"]);
        assert_eq!(texts("<% %> <: :> a<::b"), ["{", "}", "[", "]", "a", "<", "::", "b"]);
    }

    #[test]
    fn an_include_line_the_compiler_does_not_read_as_one_is_found() {
        assert_eq!(include_not_a_directive("#include \"a.cuh\"\nint x;\n", 5), None);
        assert_eq!(include_not_a_directive("// note \\\n#include \"probe.cuh\"\n", 5), Some(6));
        assert_eq!(include_not_a_directive("#define NOTE \\\n#include \"probe.cuh\"\n", 1), Some(2));
        assert_eq!(include_not_a_directive("/*\n  #include \"probe.cuh\"\n*/\n", 1), Some(2));
    }

    #[test]
    fn every_spelling_of_a_directive_is_found() {
        for source in [
            "#include \"a\"",
            "  #  include \"a\"",
            "%:include \"a\"",
            "#\\\ninclude \"a\"",
            "#inc\\\nlude \"a\"",
            "# /* hidden */ include \"a\"",
            "/* a */ # include \"a\"",
            "\u{a0}#include \"a\"",
            "\t\x0c#include \"a\"",
        ] {
            assert_eq!(directive_names(source), ["include"], "{source:?}");
        }
        assert_eq!(directive_names("x # include"), Vec::<String>::new(), "not first on its line");
        assert_eq!(directive_names("// #include \"a\"\n\"#include\""), Vec::<String>::new());
        assert_eq!(directive_names("/*\n#include \"a\"\n*/"), Vec::<String>::new());
        let tokens = tokenize("#define A 1 \\\n 2\nB", 1).unwrap();
        let define: Vec<&str> = directive_tokens(&tokens, 0).iter().map(|t| t.text.as_str()).collect();
        assert_eq!(define, ["#", "define", "A", "1", "2"]);
        assert_eq!(tokens.last().unwrap().line, 3, "lines count the spliced ones");
    }

    #[test]
    fn what_cannot_be_read_safely_is_an_error() {
        assert_eq!(tokenize("a /* b", 1), Err(LexError::UnterminatedComment { line: 1 }));
        assert_eq!(tokenize("\n\"abc\n\"", 1), Err(LexError::UnterminatedLiteral { line: 2 }));
        assert_eq!(tokenize("R\"x(\n)x\"", 1), Err(LexError::RawString { line: 1 }));
        assert_eq!(tokenize("a \\", 4), Err(LexError::TrailingSplice { line: 4 }));
        let trigraph_in = |text: &str| trigraph(&tokenize(text, 10).unwrap());
        assert_eq!(trigraph_in("ok\nx = a ??! b;\n"), Some((11, "??!".into())));
        assert_eq!(trigraph_in("??=include \"x\""), Some((10, "??=".into())));
        assert_eq!(trigraph_in("a ?? b; c ? ? (d) : e"), None, "apart, they are two `?`");
        assert_eq!(trigraph_in("// why??!\n/* ??/ */ int f();"), None, "comments are text");
        assert_eq!(trigraph_in("printf(\"??=%d\\n\", 1);"), None, "literals are text");
        assert_eq!(include_left("int x;\n%:  include </dev/zero>\n"), Some("# include < / dev / zero >".into()));
        assert_eq!(include_left("// #include \"x\"\nint x;"), None);
    }
}
