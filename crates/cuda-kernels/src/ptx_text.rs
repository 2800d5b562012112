//! Reading PTX text line by line: an instruction's operation and operands, the names in an operand.

/// An instruction's operation and its operands (a predicate guard dropped); `None` for a
/// directive, a label or anything else.
pub(crate) fn instruction(line: &str) -> Option<(&str, Vec<&str>)> {
    let mut line = line.trim();
    if let Some(guarded) = line.strip_prefix('@') {
        line = guarded.split_once(char::is_whitespace)?.1.trim_start();
    }
    let body = line.strip_suffix(';')?;
    if body.starts_with('.') || body.starts_with("//") || body.ends_with(':') {
        return None;
    }
    let (op, rest) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
    let operands = rest.split(',').map(str::trim).filter(|o| !o.is_empty()).collect();
    Some((op, operands))
}

/// The names in an operand: registers and symbols (`[%rd6+4]` holds `%rd6`, `%tid.x` holds `%tid`).
pub(crate) fn words(operand: &str) -> impl Iterator<Item = &str> {
    operand
        .split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%')))
        .filter(|w| !w.is_empty() && !w.starts_with(|c: char| c.is_ascii_digit()))
}
