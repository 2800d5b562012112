//! What a `printf` of the part may print: its format a string literal, with as many values as its
//! conversions ask for, and `%s` only of a string literal. CUDA's printf reads a `%s` string from
//! wherever its argument points, and a value past the arguments given from the memory after them:
//! a number printed with `%s`, or a conversion too many, would print memory of the grading
//! process that no check of the compiled code sees read.

use super::region::{Found, problem};
use crate::{
    declared,
    tokens::{Kind, Token},
};

/// Refuses a `printf` of `code` whose format and values do not match, as the module says.
pub(super) fn prints_only_its_values(code: &[Token]) -> Found {
    for at in (0..code.len()).filter(|&at| code[at].text == "printf" && code.get(at + 1).is_some_and(|t| t.text == "("))
    {
        let line = code[at].line;
        let close = declared::matching(code, at + 1);
        let inside: Vec<&Token> = code.get(at + 2..=close).unwrap_or_default().iter().collect();
        let arguments = declared::arguments(&inside);
        let Some((format, values)) = arguments.split_first() else { continue };
        let Some(formats) = formats(code, format) else {
            return problem(
                line,
                "`printf`'s format must be a string literal (or several side by side), a choice between them, or a \
                 `const char*` your part gives one and never changes: the checks read its conversions"
                    .into(),
            );
        };
        for format in formats {
            let asked = match conversions(&format) {
                Ok(asked) => asked,
                Err('n') => {
                    return problem(
                        line,
                        "printf's `%n` writes the count of characters printed through its value: print without `%n`"
                            .into(),
                    );
                }
                Err(unknown) => {
                    return problem(
                        line,
                        format!(
                            "`%{unknown}` is no conversion CUDA's printf prints: use `%d`, `%i`, `%u`, `%x`, `%X`, \
                             `%o`, `%c`, `%s`, `%p`, `%e`, `%E`, `%f`, `%g`, `%G`, `%a` or `%A` (with `l` or `ll` for \
                             64-bit numbers), and `%%` for a percent sign"
                        ),
                    );
                }
            };
            if asked.len() != values.len() {
                return problem(
                    line,
                    format!(
                        "this `printf`'s format asks for {} and is given {}: printf would read a value missing from \
                         memory past its arguments, which an earlier launch left; give each conversion its value",
                        values_counted(asked.len()),
                        values_counted(values.len())
                    ),
                );
            }
            let string = |value: &[&Token]| a_string(value) || points_into_a_string(code, value);
            if asked.iter().zip(values).any(|(conversion, value)| *conversion == Asked::String && !string(value)) {
                return problem(line, STRING_ONLY.into());
            }
        }
    }
    Ok(())
}

/// Why a `%s` of a value that may be a number is refused.
const STRING_ONLY: &str = "`%s` prints what its value points to, wherever that is: give `%s` a string literal, a \
     choice between them, a `char` table of your part (`kName`, `kName + i`, `&kName[i]`), a `const char*` your part \
     gives a string and never changes, or what a function of yours declared to return a `const char*` returns; \
     print other values with `%u`, `%llu` or `%p`";

/// Each format `tokens` may be, joined and unescaped: string literals side by side, each string
/// of a choice between them, or the value of a `const char*` of `code` given one and never
/// changed. `None` for anything else.
fn formats(code: &[Token], tokens: &[&Token]) -> Option<Vec<String>> {
    if let Some(format) = strings(tokens) {
        return Some(vec![format]);
    }
    if let [name] = tokens
        && let Some(value) = constant_string_value(code, &name.text)
    {
        return formats(code, &value);
    }
    let (question, colon) = choice(tokens)?;
    let mut both = vec![strings(&tokens[question + 1..colon])?];
    both.extend(formats(code, &tokens[colon + 1..])?);
    Some(both)
}

/// Whether `value` points into a string of `code`'s: a name of one ([`names_a_string`]), a `char`
/// table of it plus a number (`kName + i`) or an element's address (`&kName[i]`), or a call of a
/// function declared to return a `char` pointer (`const char* name_of(unsigned mode)`). (A number
/// given to `%s` would be read as an address.)
fn points_into_a_string(code: &[Token], value: &[&Token]) -> bool {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    let returns_chars = |name: &str| {
        (3..code.len()).any(|at| {
            code[at].text == name
                && text(at + 1) == "("
                && text(at - 1) == "*"
                && (text(at - 2) == "char" || text(at - 2) == "const" && text(at - 3) == "char")
        })
    };
    // (Where the part declares the name twice, a parameter, a local or an overload of the same
    // name may be a number where it is printed.)
    let (name, points) = match value {
        [name] => (name, names_a_string(code, &name.text)),
        [name, plus, ..] if plus.text == "+" => (name, a_char_table(code, &name.text)),
        [and, name, open, .., close] if and.text == "&" && open.text == "[" && close.text == "]" => {
            (name, a_char_table(code, &name.text))
        }
        [name, open, .., close] if open.text == "(" && close.text == ")" => (name, returns_chars(&name.text)),
        _ => return false,
    };
    points && declared_once(code, &name.text)
}

/// Whether `name` is a `char` table of `code` (`constexpr char kName[] = {...}`), or a `const
/// char*` it gives a string ([`constant_string_value`]).
fn names_a_string(code: &[Token], name: &str) -> bool {
    a_char_table(code, name) || constant_string_value(code, name).is_some()
}

/// Whether `code` declares `name` a `char` table (`constexpr char kName[] = {...}`).
fn a_char_table(code: &[Token], name: &str) -> bool {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    (1..code.len()).any(|at| code[at].text == name && text(at - 1) == "char" && text(at + 1) == "[")
}

/// Whether `code` declares `name` once at most: no parameter, local or overload of the same name
/// beside it. A declaration is a name after a type's word or a `*` or `&` (`unsigned long long
/// kName`, `const char* fmt`); a use follows an operator, a bracket or a keyword such as `return`.
fn declared_once(code: &[Token], name: &str) -> bool {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    let declarations = (1..code.len()).filter(|&at| {
        let before = &code[at - 1];
        code[at].text == name
            && (before.kind == Kind::Identifier
                && !matches!(text(at - 1), "return" | "case" | "else" | "do" | "sizeof" | "throw")
                || matches!(text(at - 1), "*" | "&" | "&&")
                    && at >= 2
                    && (code[at - 2].kind == Kind::Identifier || matches!(text(at - 2), ">" | "*")))
    });
    declarations.count() <= 1
}

/// The value of `name` where `code` declares it once ([`declared_once`]), a `const char*` whose
/// value is a string literal or a choice between them (`const char* parity = k % 2 ? "odd" :
/// "even";`), and never changes it.
fn constant_string_value<'c>(code: &'c [Token], name: &str) -> Option<Vec<&'c Token>> {
    if !declared_once(code, name) {
        return None;
    }
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    let named: Vec<usize> =
        (0..code.len()).filter(|&i| code[i].kind == Kind::Identifier && code[i].text == name).collect();
    let pointer = |at: usize| {
        let before = |n: usize| at.checked_sub(n).map_or("", text);
        matches!((before(3), before(2), before(1)), ("const", "char", "*") | ("char", "const", "*"))
            || matches!(
                (before(4), before(3), before(2), before(1)),
                ("const", "char", "*", "const") | ("char", "const", "*", "const")
            )
    };
    let changed = named.iter().any(|&at| {
        matches!(text(at + 1), "+=" | "-=" | "++" | "--")
            || text(at + 1) == "=" && !pointer(at)
            || at > 0 && matches!(text(at - 1), "++" | "--" | "&")
    });
    let declared = named.iter().find(|&&at| pointer(at) && text(at + 1) == "=")?;
    let end = (*declared..code.len()).find(|&i| text(i) == ";").unwrap_or(code.len());
    let value: Vec<&Token> = code.get(declared + 2..end).unwrap_or_default().iter().collect();
    (a_string(&value) && !changed).then_some(value)
}

/// Whether `value` is a string literal, or a choice between them (`k % 2 ? "odd" : "even"`).
fn a_string(value: &[&Token]) -> bool {
    strings(value).is_some()
        || choice(value).is_some_and(|(question, colon)| {
            strings(&value[question + 1..colon]).is_some() && a_string(&value[colon + 1..])
        })
}

/// The first `?` of `value` outside brackets, and the `:` that closes it.
fn choice(value: &[&Token]) -> Option<(usize, usize)> {
    let (mut depth, mut open, mut question) = (0i64, 0usize, None);
    for (at, token) in value.iter().enumerate() {
        match token.text.as_str() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => depth -= 1,
            "?" if depth == 0 => {
                question = question.or(Some(at));
                open += 1;
            }
            ":" if depth == 0 && open == 1 => return Some((question?, at)),
            ":" if depth == 0 => open = open.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// `count` values, in words: "1 value", "3 values".
fn values_counted(count: usize) -> String {
    format!("{count} value{}", if count == 1 { "" } else { "s" })
}

/// What a conversion of a format takes from the values: a string to read (`%s`), or a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Asked {
    String,
    Value,
}

/// The text of `tokens` if they are string literals side by side, joined as the compiler joins
/// them, each escape made the character it stands for (`"\x25n"` is `%n`).
fn strings(tokens: &[&Token]) -> Option<String> {
    // (A UTF-8 literal, `u8"début"`, too.)
    fn inside(t: &Token) -> Option<&str> {
        let text = t.text.strip_prefix("u8").unwrap_or(&t.text);
        (t.kind == Kind::Literal && text.len() >= 2 && text.starts_with('"') && text.ends_with('"'))
            .then(|| &text[1..text.len() - 1])
    }
    let inside: Option<Vec<&str>> = tokens.iter().map(|t| inside(t)).collect();
    inside.filter(|parts| !parts.is_empty()).map(|parts| parts.into_iter().map(unescaped).collect())
}

/// `text` with each escape (`\n`, `\156`, `\x25`, `\u0025`) made the character it stands for; one
/// that stands for none is kept as written.
fn unescaped(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let (radix, most) = match chars.peek() {
            Some('x') => (16, usize::MAX),
            Some('u') => (16, 4),
            Some('U') => (16, 8),
            Some(d) if d.is_digit(8) => (8, 3),
            Some(other) => {
                let simple = match other {
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    'a' => '\u{7}',
                    'b' => '\u{8}',
                    'f' => '\u{c}',
                    'v' => '\u{b}',
                    other => *other,
                };
                out.push(simple);
                chars.next();
                continue;
            }
            None => break,
        };
        if radix == 16 {
            chars.next();
        }
        let mut digits = String::new();
        while digits.len() < most && chars.peek().is_some_and(|d| d.is_digit(radix)) {
            digits.extend(chars.next());
        }
        match u32::from_str_radix(&digits, radix).ok().and_then(char::from_u32) {
            Some(c) => out.push(c),
            None => out.push_str(&digits),
        }
    }
    out
}

/// What each conversion of `format` takes, in order (a `*` width or precision takes a value of
/// its own), or the conversion character no printf of CUDA's knows (`n`, which writes a count).
fn conversions(format: &str) -> Result<Vec<Asked>, char> {
    let mut asked = Vec::new();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            continue;
        }
        if chars.next_if_eq(&'%').is_some() {
            continue;
        }
        while chars.next_if(|c| "-+ #0".contains(*c)).is_some() {}
        for part in 0..2 {
            if part == 1 && chars.next_if_eq(&'.').is_none() {
                break;
            }
            if chars.next_if_eq(&'*').is_some() {
                asked.push(Asked::Value);
            }
            while chars.next_if(char::is_ascii_digit).is_some() {}
        }
        while chars.next_if(|c| "hljztL".contains(*c)).is_some() {}
        match chars.next() {
            Some('s') => asked.push(Asked::String),
            Some(c) if "diouxXcpeEfFgGaA".contains(c) => asked.push(Asked::Value),
            Some(c) => return Err(c),
            None => return Err(' '),
        }
    }
    Ok(asked)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_format_asks_a_value_for_each_conversion_and_star() {
        use Asked::{String as S, Value as V};
        assert_eq!(conversions("row %u at %d: %s\\n"), Ok(vec![V, V, S]));
        assert_eq!(conversions("100%% of %-8.3f and %*.*llx"), Ok(vec![V, V, V, V]));
        assert_eq!(conversions("%p %c %5s"), Ok(vec![V, V, S]));
        assert_eq!(conversions("%n"), Err('n'));
        assert_eq!(conversions("%lln"), Err('n'));
        assert_eq!(conversions("%q"), Err('q'));
        assert_eq!(conversions("50%"), Err(' '));
    }

    #[test]
    fn a_string_value_is_a_literal_or_a_choice_between_them() {
        let value = |text: &str| crate::tokens::tokenize(text, 1).unwrap();
        let is = |text: &str| a_string(&value(text).iter().collect::<Vec<_>>());
        assert!(is("\"odd\" \" one\""));
        assert!(is("k % 2 ? \"odd\" : \"even\""));
        assert!(is("k < 1 ? \"none\" : k < 2 ? \"one\" : \"more\""));
        assert!(!is("kName"));
        assert!(!is("k ? kName : \"even\""));
        assert!(!is("k ? \"odd\" : kName + 4"));
    }

    #[test]
    fn a_value_points_into_a_string_by_a_tables_name_an_element_or_a_call() {
        let code = crate::tokens::tokenize(
            "constexpr char kName[8] = {'a', 0}; __device__ const char* name_of(unsigned m) { return kName + m; } \
             unsigned long long at = 4096; unsigned long long far(unsigned m) { return at; }",
            1,
        )
        .unwrap();
        let points = |value: &str| {
            let value = crate::tokens::tokenize(value, 1).unwrap();
            points_into_a_string(&code, &value.iter().collect::<Vec<_>>())
        };
        assert!(points("kName"));
        assert!(points("kName + 2u * (m % 4u)"));
        assert!(points("&kName[2u * (m % 4u)]"));
        assert!(points("name_of(3u)"));
        assert!(!points("at"));
        assert!(!points("at + 8"));
        assert!(!points("far(3u)"));
        assert!(!points("kName[1] * 4096ull"));
    }

    #[test]
    fn a_name_declared_twice_may_be_a_number_where_it_is_printed() {
        let points = |code: &str, value: &str| {
            let code = crate::tokens::tokenize(code, 1).unwrap();
            let value = crate::tokens::tokenize(value, 1).unwrap();
            points_into_a_string(&code, &value.iter().collect::<Vec<_>>())
        };
        let table = "constexpr char kName[4] = {'a', 0};";
        assert!(points(table, "kName + k"));
        assert!(points(&format!("{table} void f() {{ g(&kName[1]); }}"), "&kName[2]"), "an element's address");
        assert!(!points(&format!("{table} void show(unsigned long long kName) {{}}"), "kName"), "a parameter");
        assert!(!points(&format!("{table} unsigned long long kName = 4096;"), "kName + k"), "a local");
        let overloads = format!(
            "{table} const char* name_of(int m) {{ return kName + m; }} unsigned long long name_of(unsigned m) {{ \
             return m; }}"
        );
        assert!(!points(&overloads, "name_of(k)"), "an overload");
        let twice = "const char* s = \"abc\"; unsigned long long s{4096ull};";
        let formats =
            |code: &str, name: &str| constant_string_value(&crate::tokens::tokenize(code, 1).unwrap(), name).is_some();
        assert!(!formats(twice, "s"));
        assert!(formats("const char* s = \"abc\";", "s"));
    }

    #[test]
    fn a_name_of_a_string_is_a_char_table_or_a_const_char_pointer_to_a_literal() {
        let names = |text: &str, name: &str| names_a_string(&crate::tokens::tokenize(text, 1).unwrap(), name);
        assert!(names("constexpr char kName[4] = {'a', 'b', 'c', 0};", "kName"));
        assert!(names("const char* parity = k % 2u ? \"odd\" : \"even\";", "parity"));
        assert!(names("const char* const name = \"x\";", "name"));
        assert!(!names("const char* name = \"x\"; name = kName + 4;", "name"), "changed");
        assert!(!names("const char* name = \"x\"; name += 4;", "name"), "moved");
        assert!(!names("unsigned long long at = 4096;", "at"));
        assert!(!names("const char* name = kName + 4;", "name"));
    }

    #[test]
    fn a_format_is_a_literal_a_choice_or_a_constant_string() {
        let code = crate::tokens::tokenize(
            "const char* fmt = k ? \"%u\\n\" : \"%d %d\\n\"; const char* moved = \"%s\"; moved += 1;",
            1,
        )
        .unwrap();
        let formats = |format: &str| {
            let format = crate::tokens::tokenize(format, 1).unwrap();
            formats(&code, &format.iter().collect::<Vec<_>>())
        };
        assert_eq!(formats("\"row \" \"%u\""), Some(vec!["row %u".to_owned()]));
        assert_eq!(formats("u8\"d\u{e9}but %u\""), Some(vec!["d\u{e9}but %u".to_owned()]));
        assert_eq!(formats("fmt"), Some(vec!["%u\n".to_owned(), "%d %d\n".to_owned()]));
        assert_eq!(formats("moved"), None, "a pointer the part changes");
        assert_eq!(formats("kTable"), None);
    }

    #[test]
    fn an_escape_is_the_character_it_stands_for() {
        assert_eq!(unescaped(r"\x25n"), "%n");
        assert_eq!(unescaped(r"%\156"), "%n");
        assert_eq!(unescaped(r"\u0025s\n\\"), "%s\n\\");
    }
}
