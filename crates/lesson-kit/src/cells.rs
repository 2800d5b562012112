//! Table cells and groupings the lessons' summaries share.

use bank_model::Op;
use cuda_kernels::{ncu::SharedFamily, timing::Timing};

use crate::{
    lesson::{CounterCheck, TimeRatio, TimedRun, family_of},
    report::{Styled, Tone, styled},
};

/// Results grouped by `family` (the table each belongs in, say), families in the order they first
/// appear, results in their order.
pub fn grouped<S>(
    results: &[TimedRun<S>],
    family: impl Fn(&S) -> &'static str,
) -> Vec<(&'static str, Vec<&TimedRun<S>>)> {
    let mut groups: Vec<(&'static str, Vec<&TimedRun<S>>)> = Vec::new();
    for result in results {
        let name = family(&result.run.spec);
        match groups.iter_mut().find(|(existing, _)| *existing == name) {
            Some((_, members)) => members.push(result),
            None => groups.push((name, vec![result])),
        }
    }
    groups
}

/// Cells for "predicted | measured" wavefronts per request of `op`.
pub fn counter_cells<S>(measured: &TimedRun<S>, op: Op) -> [Styled; 2] {
    family_cells(measured, family_of(op))
}

/// Cells for "predicted | measured" wavefronts per request of one kind of machine instruction
/// (ldmatrix, cp.async, ...): the model's, then ncu's, ticked when every access reconciled.
pub fn family_cells<S>(measured: &TimedRun<S>, family: SharedFamily) -> [Styled; 2] {
    let predicted = measured.run.predicted_family_per_request(family);
    let format = |v: Option<f64>| v.map_or("-".to_owned(), format_ratio);
    let measured_cell = match &measured.counters {
        None => "n/a".into(),
        Some(CounterCheck { counters, mismatches, .. }) => {
            let per_request = counters.wavefronts_per_request(family);
            match mismatches.is_empty() {
                true => styled(format!("{} ✓", format(per_request)), Tone::Good),
                false => styled(format!("{} ✗", format(per_request)), Tone::Bad),
            }
        }
    };
    [format(predicted).into(), measured_cell]
}

/// The columns [`counted_and_timed_cells`] fills, in order.
pub const COUNTED_AND_TIMED: [&str; 6] = ["ld model", "ld ncu", "st model", "st ncu", "median ms", "spread"];

/// A run's wavefronts per load and per store request, the model's beside ncu's, then its median
/// time and spread: the middle of the table of a lesson whose kernels load and store.
pub fn counted_and_timed_cells<S>(measured: &TimedRun<S>) -> Vec<Styled> {
    let [load_model, load_ncu] = counter_cells(measured, Op::Load);
    let [store_model, store_ncu] = counter_cells(measured, Op::Store);
    vec![load_model, load_ncu, store_model, store_ncu, median_cell(&measured.timing), spread_cell(&measured.timing)]
}

/// A run's median time in milliseconds, as every lesson's tables show it.
pub fn median_cell(timing: &Timing) -> Styled {
    format!("{:.3}", timing.median_ms).into()
}

/// How far a run's repetitions spread around the median, as a percentage.
pub fn spread_cell(timing: &Timing) -> Styled {
    format!("{:.0}%", 100.0 * timing.spread()).into()
}

/// The median time of the first run whose spec `matches`.
pub fn median_ms<S>(results: &[TimedRun<S>], matches: impl Fn(&S) -> bool) -> Option<f64> {
    results.iter().find(|m| matches(&m.run.spec)).map(|m| m.timing.median_ms)
}

/// "A took 1.5x as long as B.", when both runs of `ratio` were measured.
pub fn time_ratio_sentence<S>(ratio: &TimeRatio, results: &[TimedRun<S>]) -> Option<String> {
    let figure = ratio.figure(results)?;
    Some(format!("{} took {}x as long as {}.", ratio.numerator, format_ratio(figure.value), ratio.denominator))
}

/// `2`, `2.5`, `1.03`: short and exact where the value is whole.
pub fn format_ratio(value: f64) -> String {
    if (value - value.round()).abs() < 1e-9 { format!("{}", value.round()) } else { format!("{value:.2}") }
}

#[cfg(test)]
mod tests {
    use cuda_kernels::timing::Timing;

    use super::*;
    use crate::lesson::{DeclaredAccess, KernelRun};

    #[test]
    fn results_group_by_family_in_order_of_first_appearance() {
        let result = |label: &str, spec: u32| TimedRun {
            run: KernelRun { label: label.into(), kernel: None, accesses: Vec::new(), spec },
            timing: Timing::from_samples(vec![1.0]).expect("one sample"),
            counters: None,
            occupancy: None,
        };
        let results = [result("a1", 1), result("b2", 2), result("a3", 3)];
        let groups = grouped(&results, |&spec| if spec % 2 == 1 { "odd" } else { "even" });
        let labels: Vec<(&str, Vec<&str>)> = groups
            .iter()
            .map(|(family, members)| (*family, members.iter().map(|m| m.run.label.as_str()).collect()))
            .collect();
        assert_eq!(labels, [("odd", vec!["a1", "a3"]), ("even", vec!["b2"])]);
    }

    #[test]
    fn counted_and_timed_cells_fill_their_columns_loads_first() {
        let access = |op, stride| DeclaredAccess {
            name: format!("{op:?}"),
            request: bank_model::Request::strided(op, bank_model::Width::W4, stride).expect("aligned"),
            executions: 4,
        };
        let result = TimedRun {
            run: KernelRun {
                label: "k".into(),
                kernel: None,
                accesses: vec![access(Op::Store, 1), access(Op::Load, 2)],
                spec: (),
            },
            timing: Timing::from_samples(vec![1.0, 1.5, 2.0]).expect("samples"),
            counters: None,
            occupancy: None,
        };
        let cells: Vec<String> = counted_and_timed_cells(&result).iter().map(|c| c.text.clone()).collect();
        assert_eq!(cells.len(), COUNTED_AND_TIMED.len());
        assert_eq!(cells, ["2", "n/a", "1", "n/a", "1.500", "67%"], "{COUNTED_AND_TIMED:?}");
    }

    #[test]
    fn time_ratios_read_as_sentences() {
        let measured = |label: &str, median_ms| TimedRun {
            run: crate::KernelRun { label: label.into(), kernel: None, accesses: Vec::new(), spec: () },
            timing: Timing::from_samples(vec![median_ms]).expect("one sample"),
            counters: None,
            occupancy: None,
        };
        let ratio = TimeRatio { key: "k", label: "slow over fast", numerator: "slow", denominator: "fast" };
        let results = [measured("slow", 3.0), measured("fast", 2.0)];
        assert_eq!(time_ratio_sentence(&ratio, &results).as_deref(), Some("slow took 1.50x as long as fast."));
        assert_eq!(time_ratio_sentence(&ratio, &results[..1]), None);
    }
}
