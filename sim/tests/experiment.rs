//! The reliability experiment's relations, at a small size, with exact values where the relation
//! is exact.

use acker_sim::experiment::{self, Row};
use acker_sim::{FaultKind, Guarantee, Scenario};

fn base() -> Scenario {
    let mut sc = Scenario::new(7, Guarantee::AtLeastOnce);
    sc.tuples = 4000;
    sc.max_spout_pending = 100;
    // As `acker-sim experiment` runs it: a crashed bolt comes back within the run.
    sc.restart_delay_ns = experiment::RESTART_DELAY_NS;
    sc
}

fn cell(g: Guarantee, k: FaultKind, count: u32) -> Row {
    experiment::run_cell(&base(), g, Some(k), count).unwrap().0
}

#[test]
fn acker_crash_duplicates_exactly_max_spout_pending_per_crash() {
    for count in [1u32, 2, 5] {
        let r = cell(Guarantee::AtLeastOnce, FaultKind::AckerCrash, count);
        assert_eq!(r.injected, count as u64);
        assert_eq!(r.lost, 0);
        assert_eq!(r.duplicates, 100 * count as u64, "{count} acker crashes");
        assert!(r.violations.is_empty(), "{:?}", r.violations);
    }
}

#[test]
fn bolt_exceptions_duplicate_only_after_emit() {
    for count in [1u32, 2, 5] {
        let after = cell(
            Guarantee::AtLeastOnce,
            FaultKind::BoltExceptionAfterEmit,
            count,
        );
        assert_eq!((after.lost, after.duplicates), (0, count as u64));
        let before = cell(
            Guarantee::AtLeastOnce,
            FaultKind::BoltExceptionBeforeEmit,
            count,
        );
        assert_eq!((before.lost, before.duplicates), (0, 0));
        // At-most-once: an exception before the emit loses exactly its tuple, after it nothing.
        let amo = cell(
            Guarantee::AtMostOnce,
            FaultKind::BoltExceptionBeforeEmit,
            count,
        );
        assert_eq!((amo.lost, amo.duplicates), (count as u64, 0));
        let amo = cell(
            Guarantee::AtMostOnce,
            FaultKind::BoltExceptionAfterEmit,
            count,
        );
        assert_eq!((amo.lost, amo.duplicates), (0, 0));
    }
}

#[test]
fn spout_crash_duplicates_about_max_spout_pending_per_crash() {
    for count in [1u32, 2] {
        let r = cell(Guarantee::AtLeastOnce, FaultKind::SpoutCrash, count);
        assert_eq!(r.lost, 0);
        let want = 100 * count as u64;
        assert!(
            r.duplicates * 4 >= want * 3 && r.duplicates * 4 <= want * 5,
            "{count} spout crashes gave {} duplicates, want about {want}",
            r.duplicates
        );
    }
}

#[test]
fn exactly_once_neither_loses_nor_duplicates_under_any_fault() {
    for k in FaultKind::EXPERIMENT {
        let r = cell(Guarantee::ExactlyOnce, k, 2);
        assert_eq!(r.injected, 2, "{k}");
        assert_eq!((r.lost, r.duplicates), (0, 0), "{k}");
        assert_eq!(r.distinct, 4000, "{k}");
    }
}

#[test]
fn the_whole_grid_satisfies_every_relation() {
    let rows = experiment::run(&base(), |_| {}).unwrap();
    assert_eq!(rows.len(), 3 * (1 + 6 * 4));
    for rel in experiment::relations(&rows) {
        assert!(rel.holds, "{}: {}", rel.text, rel.detail);
    }
    // At-most-once loses under bolt crashes and message loss, and never duplicates.
    let amo_crash = rows
        .iter()
        .find(|r| r.guarantee == "at-most-once" && r.fault == "bolt-crash" && r.injected == 1)
        .unwrap();
    assert!(amo_crash.lost > 0);
    let table = experiment::format_table(&rows);
    assert!(table.starts_with("guarantee"));
    assert_eq!(table.lines().count(), rows.len() + 2);
    let widest = table.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    assert!(widest <= 100, "{widest} columns:\n{table}");
}
