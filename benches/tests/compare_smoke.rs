//! CI smoke test of the compare machinery: a tiny workload through every structure, single-owner
//! and shared (1 and 2 threads). Asserts that they all agree with the workload (every completing
//! ack completes, nothing fails or errs, the roots in flight remain); never asserts timing.

use acker_benches::compare::{expected_outcome, run_compare, CompareConfig, Mode};
use acker_benches::{Workload, WorkloadConfig};

fn tiny_ops(window: usize) -> usize {
    4 * window + 1_000
}

#[test]
fn every_structure_agrees_on_a_tiny_workload() {
    let config = CompareConfig {
        windows: vec![10, 700],
        ops_for_window: tiny_ops,
        repetitions: 2,
        threads: vec![1, 2],
        acks_per_tree: 3,
        seed: 42,
        live_bytes: None,
        only: Vec::new(),
        modes: vec![Mode::Pregenerated, Mode::InLoop],
    };
    let mut runs = 0;
    let report = run_compare(&config, |_| runs += 1).expect("structures agree");
    let rows = report.rows();
    let single = [
        "acker-core",
        "acker-core-one-at-a-time",
        "acker-core-prefetch",
        "hashbrown",
        "hashbrown-lean",
        "storm-style",
    ];
    let shared = [
        "acker-core-shared",
        "acker-core-shared-batch",
        "mutex-hashbrown",
        "dashmap",
    ];
    // A JSON row for every measurement of the printed table: single-owner tables run in both
    // modes, shared ones pregenerated only.
    assert_eq!(rows.len(), 2 * (2 * single.len() + 2 * shared.len()));
    for s in single {
        assert_eq!(
            rows.iter().filter(|r| r.structure == s).count(),
            2 * 2,
            "{s}: a row per window and mode"
        );
    }
    assert_eq!(
        rows.iter().filter(|r| r.mode == "in-loop").count(),
        2 * single.len()
    );
    assert_eq!(runs, 2 * 2 * (2 * single.len() + 2 * shared.len()));
    for &w in &config.windows {
        let wc = WorkloadConfig {
            acks_per_tree: 3,
            ..WorkloadConfig::new(w, tiny_ops(w), 42)
        };
        let expected = expected_outcome(&[Workload::generate(wc)]);
        for s in single {
            for mode in [Mode::Pregenerated, Mode::InLoop] {
                let m = report
                    .find_in(s, w, None, mode)
                    .expect("a row per structure and mode");
                assert_eq!(m.mode, mode);
                assert_eq!(m.outcome, expected, "{s} at W = {w}, {mode:?}");
                assert_eq!(m.outcome.final_len, w, "{s}: W roots in flight at the end");
                assert!(m.mops() > 0.0 && m.bytes_per_root() > 0.0);
            }
        }
        for t in [1, 2] {
            let expected = expected_outcome(&Workload::generate_per_thread(wc, t));
            for s in shared {
                let m = report
                    .find(s, w, Some(t))
                    .expect("a row per shared structure");
                assert_eq!(m.outcome, expected, "{s} at W = {w}, {t} threads");
            }
        }
    }
    // acker-core's memory is 20 bytes a slot plus its header, at load 0.8.
    let core = report.find("acker-core", 700, None).unwrap();
    assert_eq!(core.slots, 875);
    assert!((core.load() - 0.8).abs() < 1e-9);
    assert!(core.bytes_per_slot() >= 20.0 && core.bytes_per_slot() < 20.2);
    let json = serde_json::to_value(serde_json::json!({ "rows": rows })).unwrap();
    assert_eq!(json["rows"][0]["structure"], "acker-core");
    assert_eq!(json["rows"][0]["mode"], "pregenerated");
    assert!(json["rows"][0].get("threads").is_none());
}

#[test]
fn workload_keeps_w_roots_in_flight_and_completes_every_tree_it_finishes() {
    let w = Workload::generate(WorkloadConfig::new(100, 10_000, 3));
    assert_eq!(w.prefill.len(), 100);
    assert_eq!(w.ops.len(), 10_000);
    // k = 4: one init per four acks once the stream is under way.
    let inits = w
        .ops
        .iter()
        .filter(|m| matches!(m, acker_core::AckerMessage::Init { .. }))
        .count();
    assert_eq!(inits, w.completions - usize::from(w.final_in_flight < 100));
    assert!((1_900..=2_100).contains(&w.completions));
    // The same seed gives the same stream.
    let again = Workload::generate(WorkloadConfig::new(100, 10_000, 3));
    assert_eq!(w.ops, again.ops);
}

/// The in-loop source produces exactly the pregenerated stream, and `hashbrown-lean` gives
/// acker-core's decision (spout task included) on every message of it.
#[test]
fn message_source_matches_the_workload_and_lean_map_decides_as_acker_core() {
    use acker_benches::{AckerStructure, HashbrownLean, MessageSource};
    use acker_core::{AckerTable, Slot};
    let wc = WorkloadConfig::new(500, 20_000, 11);
    let w = Workload::generate(wc);
    let mut source = MessageSource::new(wc);
    assert_eq!(source.prefill(), w.prefill);
    let mut buf = [acker_core::AckerMessage::Ack { root: 0, xor: 0 }; 7];
    let mut streamed = Vec::new();
    loop {
        let n = source.fill(&mut buf);
        if n == 0 {
            break;
        }
        streamed.extend_from_slice(&buf[..n]);
    }
    assert_eq!(streamed, w.ops);
    assert_eq!(source.completions(), w.completions);
    assert_eq!(source.in_flight(), w.final_in_flight);

    let cap = acker_benches::compare::capacity_for_window(500);
    let mut core = <AckerTable<Box<[Slot]>> as AckerStructure>::with_capacity(cap, 1_000);
    let mut lean = HashbrownLean::with_capacity(cap, 1_000);
    for (i, m) in w.prefill.iter().chain(&w.ops).enumerate() {
        assert_eq!(
            AckerStructure::apply(&mut lean, *m),
            AckerStructure::apply(&mut core, *m),
            "message {i}: {m:?}"
        );
    }
    assert_eq!(lean.len(), 500);
    assert_eq!(AckerStructure::len(&core), 500);
}
