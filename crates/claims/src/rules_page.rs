//! The appendix "The rules, measured": every rule class of the model against every instruction
//! measured (on the H100 and, for the newest tables, an H200), and the measured counter-examples
//! of the classes the model flags.

use bank_model::measured::{self, Table};
use lesson_kit::Report;

/// Counter-examples shown per flagged class.
const COUNTEREXAMPLES: usize = 6;

pub fn rules_page() -> String {
    let mut report = Report::default();
    let evidence = measured::evidence(COUNTEREXAMPLES);
    let total: usize = evidence.iter().map(|c| c.measured).sum();
    report.text(format!(
        "{total} single instructions measured on the H100 and, for the newest tables, an H200 (the same \
         GH100 chip and SM), by rule class. A class the model claims (verified) \
         must agree on every one of its instructions; the tests replay them all."
    ));
    let rows = evidence
        .iter()
        .map(|c| {
            let claimed = if c.class.verified() { "yes" } else { "no (flagged)" };
            vec![c.class.describe().into(), c.measured.into(), c.agree.into(), claimed.into()]
        })
        .collect();
    report.table(["rule class", "measured", "the model's count equal", "verified"], rows);
    let tables = measured::HOPPER
        .iter()
        .map(|table: &Table| {
            vec![format!("`{}`", table.name).into(), format!("NVIDIA {}", table.gpu()).into(), table.rows().count().into()]
        })
        .collect();
    report.table(["measured table (`crates/bank-model/data/`)", "GPU", "instructions"], tables);
    for class in evidence.iter().filter(|c| !c.class.verified()) {
        report.heading(class.class.describe());
        let rows = class
            .counterexamples
            .iter()
            .map(|(m, model)| {
                let (lanes, legend) = lettered(&m.request.lanes);
                vec![
                    format!("{} {}", m.request.op, m.request.width).into(),
                    format!("`{lanes}`").into(),
                    legend.into(),
                    m.wavefronts.into(),
                    (*model).into(),
                ]
            })
            .collect();
        report.table(["instruction", "lanes 0-31 (`.`: inactive)", "byte addresses", "measured", "model"], rows);
    }
    report.render_markdown()
}

/// The lanes as letters, one per distinct address in increasing order, in four groups of eight
/// (`..C....B ......A. ........ ...DDD.C`), and the legend (`A=0 B=32 C=48 D=64`).
fn lettered(lanes: &[Option<u32>]) -> (String, String) {
    let mut addresses: Vec<u32> = lanes.iter().flatten().copied().collect();
    addresses.sort_unstable();
    addresses.dedup();
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
    fn the_page_lists_every_class_and_the_flagged_classes_counterexamples() {
        let page = rules_page();
        for class in bank_model::measured::RuleClass::ALL {
            assert!(page.contains(class.describe()), "{class:?}");
        }
        assert_eq!(page.matches(" (not verified)\n").count(), 1, "a heading per flagged class");
        assert!(page.contains("| cp.async 4 | `"), "a 4-byte cp.async counter-example");
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
