//! The fault-free oracle (`failed-without-fault`) judges from what the spout receives: a tree
//! that only took longer than the message timeout (failed by the spout's timeout, then reported
//! completed by the acker, a late ack) is not an ack lost; a tree failed and never completed
//! is. Until 2026-12-03 every `fail` in a fault-free run was a violation:
//! `acker-sim run --seed 1 --timeout 1ms --tick 100us` reported an ack lost where 272 trees
//! had only completed late.

#[path = "../../runtime/tests/common/mod.rs"]
mod common;
mod spouts;
use spouts::Four;

use common::BoundedOutput;

use acker_runtime::{Bolt, Config, Input, OutputCollector, TopologyBuilder};
use acker_sim::{Guarantee, Scenario, Sim, SimOptions, Simulation};
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_acker-sim"))
}

/// `acker-sim ARGS`: exit status and stdout.
fn cli(args: &[&str]) -> (Option<i32>, String) {
    let o = bin().args(args).bounded_output().expect("run acker-sim");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    (o.status.code(), String::from_utf8(o.stdout).expect("utf-8"))
}

fn line<'a>(out: &'a str, prefix: &str) -> &'a str {
    out.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line in {out}"))
}

#[test]
fn trees_slower_than_a_short_timeout_are_late_acks_not_lost_ones() {
    let mut sc = Scenario::new(1, Guarantee::AtLeastOnce);
    sc.message_timeout_ns = 1_000_000;
    sc.tick_interval_ns = 100_000;
    let o = Sim::run(sc, None).unwrap();
    assert!(o.fired.is_empty());
    assert_eq!(o.violations, vec![], "no ack was lost");
    assert_eq!(o.spout.timed_out, 272);
    // Every timed-out tree's Completed notice came back late (ignored by the spout).
    assert_eq!(o.spout.ignored, 272);
    assert_eq!(
        o.acker.acked, 1272,
        "every tree, replays included, completed"
    );
    // The oracle only reads: the run is the one it was before the fix.
    assert_eq!(o.trace_hash, 0xf189_7a5c_9b5e_6173);

    let (code, out) = cli(&["run", "--seed", "1", "--timeout", "1ms", "--tick", "100us"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        line(&out, "spout: ").starts_with("spout: acked 1000 failed 0 timed out 272 ignored 272"),
        "{out}"
    );
    assert_eq!(line(&out, "verdict: "), "verdict: ok (every oracle held)");
    assert_eq!(line(&out, "trace hash "), "trace hash f1897a5c9b5e6173");
}

#[test]
fn a_search_with_a_short_timeout_and_no_fault_finds_no_violating_seed() {
    let (code, out) = cli(&[
        "search",
        "--seeds",
        "3",
        "--timeout",
        "1ms",
        "--tick",
        "100us",
        "--faults",
        "none",
    ]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains(": 0 violating"), "{out}");
}

/// New-user trial: a run cut at its time limit also reported `failed-without-fault` ("an ack
/// was lost inside the system") for a tree the cut left unfinished. Only a run that finished
/// is judged: here the liveness violation alone is reported.
#[test]
fn a_run_cut_at_its_time_limit_is_not_judged_for_lost_acks() {
    let (code, out) = cli(&[
        "run",
        "--seed",
        "1",
        "--timeout",
        "300us",
        "--tick",
        "100us",
        "--time-limit",
        "100ms",
        // Its trees time out faster than they complete: without room for its replays it would
        // stop at the default replay limit (100000) before its time limit.
        "--max-replays",
        "10000000",
    ]);
    assert_eq!(code, Some(1), "{out}");
    assert_eq!(line(&out, "verdict: "), "verdict: VIOLATION");
    assert!(
        out.contains(
            "  liveness: run not finished by its limit 100000000 ns (978 offsets uncommitted)\n"
        ),
        "{out}"
    );
    assert!(!out.contains("failed-without-fault"), "{out}");
}

#[test]
fn the_readme_trace_hashes_hold() {
    let (code, out) = cli(&["run", "--seed", "1", "--tuples", "1000000"]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(line(&out, "trace hash "), "trace hash 3c5d53b1219d40c8");
    let (code, out) = cli(&["run", "--seed", "1"]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(line(&out, "trace hash "), "trace hash 5980f0a67fcabd86");
    let (code, out) = cli(&[
        "run",
        "--seed",
        "3",
        "--faults",
        "acker-crash*2,message-loss~1/kt",
    ]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(line(&out, "trace hash "), "trace hash a0c5feba275b31c0");
}

/// Holds the first input whose value is 2 without acking it; acks it at the next input when
/// `late` (its tree completes after the spout timed it out), never otherwise (its tree never
/// completes: the ack is lost inside the system).
struct HoldsTwo {
    held: Option<Input>,
    seen_two: bool,
    late: bool,
}
impl Bolt for HoldsTwo {
    fn execute(&mut self, input: Input, c: &mut OutputCollector<'_>) {
        if input.values()[0].as_int() == Some(2) && !self.seen_two {
            self.seen_two = true;
            self.held = Some(input);
            return;
        }
        if let Some(h) = self.held.take() {
            if self.late {
                let _ = c.ack(h);
            } else {
                drop(h);
            }
        }
        let _ = c.ack(input);
    }
}

fn holds_two(late: bool) -> Simulation {
    let mut b = TopologyBuilder::new();
    b.set_spout("four", Four::default, 1).output_fields(&["n"]);
    b.set_bolt(
        "b",
        move || HoldsTwo {
            held: None,
            seen_two: false,
            late,
        },
        1,
    )
    .shuffle_grouping("four");
    let mut opts = SimOptions::new(7);
    opts.input_len = 4;
    opts.fails_only_under_faults = true;
    let config = Config {
        message_timeout_ns: 1_000_000_000,
        max_spout_pending: Some(1),
        ..Config::default()
    };
    Simulation::new(&b.build().unwrap(), &config, opts)
}

#[test]
fn a_timed_out_tree_is_excused_only_when_its_completion_reaches_the_spout() {
    // Held, then acked when the replay of 2 arrives: the first tree of 2 completes late.
    let o = holds_two(true).run().unwrap();
    assert!(o.fired.is_empty());
    assert_eq!(o.violations, vec![]);
    assert_eq!(o.callbacks["four"][2].fails, 1);
    assert_eq!(o.spout.timed_out, 1);
    assert_eq!(
        o.spout.ignored, 1,
        "the late Completed of the first tree of 2"
    );
    // Held for ever: the first tree of 2 never completes, which is an ack lost.
    let o = holds_two(false).run().unwrap();
    assert!(o.fired.is_empty());
    assert_eq!(o.spout.timed_out, 1);
    assert_eq!(o.spout.ignored, 0);
    assert_eq!(
        o.violations
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>(),
        vec![
            "failed-without-fault: spout `four` got a fail for message id 2 though no fault \
             fired, and its tree never completed (an ack was lost inside the system)"
        ]
    );
}
