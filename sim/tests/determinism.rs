//! The same seed gives the same trace hash; different seeds give different ones.

use acker_sim::fault::parse_specs;
use acker_sim::{Guarantee, Outcome, Scenario, Sim};

fn run(seed: u64, g: Guarantee, faults: &str) -> Outcome {
    let mut sc = Scenario::new(seed, g);
    sc.tuples = 2000;
    sc.max_spout_pending = 64;
    sc.bolts = 3;
    sc.ackers = 2;
    sc.set_fault_specs(&parse_specs(faults).unwrap(), 50_000_000)
        .unwrap();
    Sim::run(sc, None).unwrap()
}

const FAULTS: &str = "acker-crash*2,spout-crash@#700,bolt-crash~1/kt,message-loss~200/s,partition@3ms:1-3,worker-crash@#1500:1,bolt-exception-after-emit~2/kt";

#[test]
fn same_seed_same_trace() {
    for g in Guarantee::ALL {
        let a = run(11, g, FAULTS);
        let b = run(11, g, FAULTS);
        assert_eq!(a.trace_hash, b.trace_hash, "{g}");
        assert_eq!(a, b, "{g}: the whole outcome repeats");
        assert!(!a.fired.is_empty());
    }
}

#[test]
fn different_seeds_different_traces() {
    let mut hashes: Vec<u64> = (1..=12)
        .map(|s| run(s, Guarantee::AtLeastOnce, FAULTS).trace_hash)
        .collect();
    hashes.sort();
    hashes.dedup();
    assert_eq!(hashes.len(), 12);
    // Even without faults the seed changes latencies, ids and so the trace.
    assert_ne!(
        run(1, Guarantee::AtLeastOnce, "").trace_hash,
        run(2, Guarantee::AtLeastOnce, "").trace_hash
    );
}

#[test]
fn the_guarantee_is_part_of_the_trace() {
    // At-least-once and exactly-once exchange the same messages; the trace still tells them apart.
    let a = run(3, Guarantee::AtLeastOnce, "");
    let e = run(3, Guarantee::ExactlyOnce, "");
    assert_eq!(a.delivered, e.delivered);
    assert_ne!(a.trace_hash, e.trace_hash);
}

#[test]
fn the_text_trace_is_written_and_matches_the_hash() {
    #[derive(Clone, Default)]
    struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
    impl std::io::Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut sc = Scenario::new(5, Guarantee::AtLeastOnce);
    sc.tuples = 50;
    sc.faults = vec![acker_sim::Fault {
        trigger: acker_sim::Trigger::AtOffset(20),
        kind: acker_sim::FaultKind::AckerCrash,
        target: 0,
        peer: 0,
    }];
    let buf = Shared::default();
    let with = Sim::run(sc.clone(), Some(Box::new(buf.clone()))).unwrap();
    let without = Sim::run(sc, None).unwrap();
    assert_eq!(with.trace_hash, without.trace_hash);
    let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    assert!(text.lines().any(|l| l.contains("fault acker-crash@#20:0")));
    assert!(text.lines().any(|l| l.contains("restart task")));
    assert!(text.lines().filter(|l| l.contains(" send ")).count() as u64 >= with.delivered);
}
