//! The appendix "The rules, measured": every rule class of the model against every instruction
//! measured (on the H100 and, for the newest tables, an H200), with one measured example of each.

use bank_model::measured::{self, RuleClass, Table};
use lesson_kit::Report;

pub fn rules_page() -> String {
    let mut report = Report::default();
    let evidence = measured::evidence();
    let total: usize = evidence.iter().map(|c| c.measured).sum();
    report.text(format!(
        "{total} single instructions measured on the H100 and, for the newest tables, an H200 (the same \
         GH100 chip and SM), by rule class. Every class must agree on every one of its instructions; the \
         tests replay them all."
    ));
    let rows = evidence.iter().map(|c| vec![c.class.describe().into(), c.measured.into(), c.agree.into()]).collect();
    report.table(["rule class", "measured", "the model's count equal"], rows);
    report.text(
        "One measured instruction of each class: the first in the tables that reads or writes at most four \
         addresses and takes more than one wavefront (for a class that merges into one, the first).",
    );
    let rows = RuleClass::ALL
        .into_iter()
        .filter_map(|class| {
            let few_addresses = |lanes: &[Option<u32>]| distinct_addresses(lanes).len() <= 4;
            let candidates = || {
                measured::HOPPER
                    .iter()
                    .flat_map(Table::rows)
                    .filter(move |m| few_addresses(&m.request.lanes) && RuleClass::of(&m.request) == class)
            };
            // A class that merges into one wavefront shows its first instruction.
            let example = candidates().find(|m| m.wavefronts > 1).or_else(|| candidates().next())?;
            let (lanes, legend) = lettered(&example.request.lanes);
            Some(vec![
                class.describe().into(),
                format!("`{} {}`", example.request.op, example.request.width).into(),
                format!("`{lanes}`").into(),
                legend.into(),
                example.wavefronts.into(),
            ])
        })
        .collect();
    report.table(["rule class", "instruction", "lanes 0-31 (`.`: inactive)", "byte addresses", "wavefronts"], rows);
    let tables = measured::HOPPER
        .iter()
        .map(|table: &Table| {
            vec![
                format!("`{}`", table.name).into(),
                format!("NVIDIA {}", table.gpu()).into(),
                table.rows().count().into(),
            ]
        })
        .collect();
    report.table(["measured table (`crates/bank-model/data/`)", "GPU", "instructions"], tables);
    report.render_markdown()
}

/// The lanes' addresses, each once, in increasing order.
fn distinct_addresses(lanes: &[Option<u32>]) -> Vec<u32> {
    let mut addresses: Vec<u32> = lanes.iter().flatten().copied().collect();
    addresses.sort_unstable();
    addresses.dedup();
    addresses
}

/// The lanes as letters, one per distinct address in increasing order, in four groups of eight
/// (`..C....B ......A. ........ ...DDD.C`), and the legend (`A=0 B=32 C=48 D=64`).
fn lettered(lanes: &[Option<u32>]) -> (String, String) {
    let addresses = distinct_addresses(lanes);
    let letter = |address: u32| {
        let index = addresses.binary_search(&address).expect("an address of the lanes");
        char::from_u32(u32::from(if index < 26 { b'A' } else { b'a' - 26 }) + index as u32).unwrap_or('?')
    };
    let quarters: Vec<String> =
        lanes.chunks(8).map(|quarter| quarter.iter().map(|a| a.map_or('.', letter)).collect()).collect();
    let legend: Vec<String> = addresses.iter().map(|&a| format!("{}={a}", letter(a))).collect();
    (quarters.join(" "), legend.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_lists_every_class_and_an_example_of_each() {
        let page = rules_page();
        for class in bank_model::measured::RuleClass::ALL {
            assert!(page.contains(class.describe()), "{class:?}");
        }
        for class in bank_model::measured::RuleClass::ALL {
            let example = format!(">{}</td><td data-label=\"instruction\"><code>", class.describe());
            assert!(page.contains(&example), "an example of {class:?}");
        }
    }

    #[test]
    fn lanes_are_lettered_by_address() {
        let mut lanes = [None; 32];
        for (lane, address) in [(2, 48), (7, 32), (14, 0), (27, 64), (28, 64), (29, 64), (31, 48)] {
            lanes[lane] = Some(address);
        }
        assert_eq!(
            lettered(&lanes),
            ("..C....B ......A. ........ ...DDD.C".to_owned(), "A=0 B=32 C=48 D=64".to_owned())
        );
    }
}
