//! The appendix "The rules, measured": every rule class of the model against every instruction
//! measured on the H100, and the measured counter-examples of the classes the model flags.

use bank_model::measured::{self, Table};
use lesson_kit::Report;

/// Counter-examples shown per flagged class.
const COUNTEREXAMPLES: usize = 6;

pub fn rules_page() -> String {
    let mut report = Report::default();
    let evidence = measured::evidence(COUNTEREXAMPLES);
    let total: usize = evidence.iter().map(|c| c.measured).sum();
    report.text(format!(
        "{total} single instructions measured on the H100, by rule class. A class the model claims (verified) \
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
    let tables = measured::H100.iter().map(|table: &Table| vec![format!("`{}`", table.name).into(), table.rows().count().into()]).collect();
    report.table(["measured table (`crates/bank-model/data/`)", "instructions"], tables);
    for class in evidence.iter().filter(|c| !c.class.verified()) {
        report.heading(format!("Not verified: {}", class.class.describe()));
        let rows = class
            .counterexamples
            .iter()
            .map(|(m, model)| {
                let lanes: Vec<String> =
                    m.request.lanes.iter().map(|a| a.map_or("_".to_owned(), |a| a.to_string())).collect();
                vec![
                    format!("{} {}", m.request.op, m.request.width).into(),
                    format!("`{}`", lanes.join(",")).into(),
                    m.wavefronts.into(),
                    (*model).into(),
                ]
            })
            .collect();
        report.table(["instruction", "byte address of each lane (`_`: inactive)", "H100", "model"], rows);
    }
    report.render_markdown()
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
        assert_eq!(page.matches("#### Not verified:").count(), 2);
        assert!(page.contains("| ld 16 | `"), "a 16-byte load counter-example");
    }
}
