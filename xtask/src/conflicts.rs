//! `cargo xtask conflicts`: the bank model on the command line.

use std::{fs, io::Write, path::PathBuf, process::ExitCode};

use anyhow::Context;
use bank_model::{Analysis, Op, Request, Width, batch, parse_addresses};
use clap::{ArgGroup, Args};
use lesson_kit::{Report, bank_table::add_bank_grid};
use serde::Serialize;

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("lanes").required(true).args(["index", "addresses", "batch"])))]
pub struct ConflictsArgs {
    /// `ld` (load), `st` (store), `ldmatrix.x1` .. `ldmatrix.x4` and `stmatrix.x1` .. `stmatrix.x4`
    /// (each with an optional `.trans`; width 16, lanes 0 to 8 per matrix give the rows), or
    /// `cp.async` (its shared-memory side).
    #[arg(long, default_value = "ld")]
    pub op: String,
    /// Bytes per lane: 1, 2, 4, 8 or 16.
    #[arg(long, default_value = "4")]
    pub width: String,
    /// Element index of each lane, an integer expression in `lane` (0-31), e.g. `lane * 2`,
    /// `(lane % 8) * 33 + lane / 8`, `bitxor(lane, lane / 4)`, or CuTe's `Swizzle<B, M, S>` of an
    /// offset: `swizzle(3, 0, 3, lane * 8 + 2)`. Byte address = index * width.
    #[arg(long, allow_hyphen_values = true)]
    pub index: Option<String>,
    /// 32 comma-separated byte addresses, lane 0 first; `_` for an inactive lane.
    #[arg(long)]
    pub addresses: Option<String>,
    /// A tab-separated file: op, width, addresses per line (further columns ignored, `#` lines skipped).
    /// Prints one JSON object per data line.
    #[arg(long)]
    pub batch: Option<PathBuf>,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// What `--json` and `--batch` print for one instruction.
#[derive(Serialize)]
struct Answer<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<usize>,
    op: Op,
    width: Width,
    addresses: &'a [Option<u32>],
    conflict_degree: u32,
    #[serde(flatten)]
    analysis: &'a Analysis,
}

fn answer<'a>(line: Option<usize>, request: &'a Request, analysis: &'a Analysis) -> Answer<'a> {
    Answer {
        line,
        op: request.op,
        width: request.width,
        addresses: &request.lanes,
        conflict_degree: analysis.conflict_degree(),
        analysis,
    }
}

pub fn run(args: &ConflictsArgs, out: &mut dyn Write, color: bool) -> anyhow::Result<ExitCode> {
    if let Some(path) = &args.batch {
        return run_batch(path, out);
    }
    let op: Op = args.op.parse()?;
    let width: Width = args.width.parse()?;
    let lanes = match (&args.index, &args.addresses) {
        (Some(expression), _) => op.address_lanes(
            lane_addresses::index_addresses(expression, width).map_err(|e| anyhow::anyhow!("--index {e}"))?,
        ),
        (None, Some(addresses)) => parse_addresses(addresses)?,
        (None, None) => unreachable!("clap requires --index, --addresses or --batch"),
    };
    let request = Request::new(op, width, lanes)?;
    let analysis = request.analyze();
    if args.json {
        writeln!(out, "{}", serde_json::to_string(&answer(None, &request, &analysis))?)?;
    } else {
        let mut report = Report::default();
        add_bank_grid(&mut report, &request, &analysis);
        write!(out, "{}", report.render(color))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn run_batch(path: &PathBuf, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let text = fs::read_to_string(path).with_context(|| format!("cannot read batch file {}", path.display()))?;
    let lines = batch::parse(&text)
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("{} is not a valid batch (columns: op, width, 32 addresses)", path.display()))?;
    for line in &lines {
        let analysis = line.request.analyze();
        writeln!(out, "{}", serde_json::to_string(&answer(Some(line.line), &line.request, &analysis))?)?;
    }
    Ok(ExitCode::SUCCESS)
}
