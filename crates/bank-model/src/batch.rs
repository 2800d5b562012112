//! Tab-separated batches of instructions: `op<TAB>width<TAB>a0,...,a31[<TAB>more columns]`.
//!
//! Lines starting with `#` and blank lines are skipped; columns after the third are kept as
//! they are (the measured data files put a tag and the measured wavefronts there).

use thiserror::Error;

use crate::{Request, RequestError, parse_addresses};

/// One data line of a batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchLine {
    /// 1-based line number in the file.
    pub line: usize,
    pub request: Request,
    /// Columns after the addresses.
    pub extra: Vec<String>,
}

#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("line {line}: {problem}")]
pub struct BatchError {
    pub line: usize,
    pub problem: BatchProblem,
}

#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum BatchProblem {
    #[error("expected at least 3 tab-separated columns (op, width, addresses), found {0}")]
    Columns(usize),
    #[error(transparent)]
    Request(#[from] RequestError),
}

/// One batch line for `request`: `op<TAB>width<TAB>a0,...,a31<TAB>tag`, what [`parse`] reads back.
pub fn line(request: &Request, tag: &str) -> String {
    let addresses: Vec<String> = request.lanes.iter().map(|a| a.map_or("_".to_owned(), |a| a.to_string())).collect();
    format!("{}\t{}\t{}\t{tag}", request.op, request.width, addresses.join(","))
}

/// Parses every data line of a batch, in order.
pub fn parse(text: &str) -> impl Iterator<Item = Result<BatchLine, BatchError>> + '_ {
    text.lines()
        .enumerate()
        .map(|(index, line)| (index + 1, line.trim_end_matches('\r')))
        .filter(|(_, line)| !line.trim().is_empty() && !line.starts_with('#'))
        .map(|(line, text)| {
            parse_line(text).map_err(|problem| BatchError { line, problem }).map(|(request, extra)| BatchLine {
                line,
                request,
                extra,
            })
        })
}

fn parse_line(text: &str) -> Result<(Request, Vec<String>), BatchProblem> {
    let columns: Vec<&str> = text.split('\t').collect();
    let [op, width, addresses, extra @ ..] = columns.as_slice() else {
        return Err(BatchProblem::Columns(columns.len()));
    };
    let request = Request::new(op.parse()?, width.parse()?, parse_addresses(addresses)?)?;
    Ok((request, extra.iter().map(|s| s.to_string()).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_line_parses_back() {
        let mut lanes = [Some(16); 32];
        lanes[3] = None;
        let request = Request::new(crate::Op::Load, crate::Width::W8, lanes).unwrap();
        let parsed = parse(&line(&request, "tag")).next().unwrap().unwrap();
        assert_eq!((parsed.request, parsed.extra), (request, vec!["tag".to_owned()]));
    }

    #[test]
    fn reports_the_line_of_each_problem() {
        let zeros = vec!["0"; 32].join(",");
        let text =
            format!("# header\n\nld\t4\t{zeros}\ttag\nst\t3\t{zeros}\nld\t4\t0,4\nmv\t4\t{zeros}\nld 4 {zeros}\n");
        let results: Vec<_> = parse(&text).collect();
        assert_eq!(results.len(), 5);
        let first = results[0].as_ref().unwrap();
        assert_eq!((first.line, first.extra.as_slice()), (3, ["tag".to_string()].as_slice()));
        let errors: Vec<String> = results[1..].iter().map(|r| r.as_ref().unwrap_err().to_string()).collect();
        assert_eq!(
            errors,
            [
                "line 4: width 3 bytes is not a shared-memory access width: use 1, 2, 4, 8 or 16".to_owned(),
                "line 5: expected 32 lane addresses (one per lane, `_` for an inactive lane), found 2".to_owned(),
                format!("line 6: unknown op `mv`: use {}", crate::Op::NAMES),
                "line 7: expected at least 3 tab-separated columns (op, width, addresses), found 1".to_owned(),
            ]
        );
    }
}
