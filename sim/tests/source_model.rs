//! The Redis source model beside the Kafka one, and source and sink outages: the predictions of
//! the real-components experiment (issue 12), with exact values from known seeds.
//!
//! Budget: under 5 s in release mode.

#[path = "../../runtime/tests/common/mod.rs"]
mod common;
use common::BoundedOutput;

use acker_sim::components::World;
use acker_sim::engine::lock;
use acker_sim::experiment;
use acker_sim::fault::parse_specs;
use acker_sim::source::EmitState;
use acker_sim::{FaultKind, Guarantee, Outcome, Scenario, Sim, SourceModel};

/// 4000 tuples, max spout pending 100, message timeout 2 s (as the real cells), seed 7.
fn base(g: Guarantee, model: SourceModel) -> Scenario {
    let mut sc = Scenario::new(7, g).with_source_model(model);
    sc.tuples = 4000;
    sc.max_spout_pending = 100;
    sc.message_timeout_ns = 2_000_000_000;
    sc
}

fn run(mut sc: Scenario, faults: &str) -> (Outcome, World) {
    sc.set_fault_specs(&parse_specs(faults).unwrap(), 0)
        .unwrap();
    Sim::run_world(sc, None).unwrap()
}

/// Emits of the first spout incarnation that never got a callback: the trees in flight when it
/// crashed (seen from outside the spout, in the log's record of emits).
fn in_flight_at_first_crash(w: &World) -> u64 {
    lock(&w.log)
        .emits()
        .iter()
        .filter(|e| e.incarnation == 0 && e.state == EmitState::Pending)
        .count() as u64
}

#[test]
fn redis_spout_crash_duplicates_only_pending_entries_that_reached_the_sink() {
    let (o, w) = run(
        base(Guarantee::AtLeastOnce, SourceModel::Redis),
        "spout-crash",
    );
    assert!(o.ok(), "{:?}", o.violations);
    assert_eq!(o.fired.len(), 1);
    let in_flight = in_flight_at_first_crash(&w);
    assert_eq!(in_flight, 97);
    // Every tree in flight at the crash reached the sink (the bolts kept running): each is
    // delivered again and duplicated; nothing else is.
    assert_eq!((o.lost, o.duplicates), (0, 97));
    assert!(o.duplicates <= in_flight);
    // The restarted consumer took back 596 pending entries: the 97 in flight and 499 read in
    // the last batch of 500 but not yet emitted (those are not duplicates).
    assert_eq!(lock(&w.log).redelivered(), &[596]);
    assert!(lock(&w.log).dead_lettered().is_empty());
}

#[test]
fn kafka_replays_after_the_commit_point_redis_only_pending_entries() {
    // A lost message stalls one tree for a message timeout, holding Kafka's commit point while
    // later offsets are acked; the spout then crashes.
    let faults = "message-loss@#1000,spout-crash@#3000";
    let (k, kw) = run(base(Guarantee::AtLeastOnce, SourceModel::Kafka), faults);
    let (r, rw) = run(base(Guarantee::AtLeastOnce, SourceModel::Redis), faults);
    assert!(k.ok() && r.ok(), "{:?} {:?}", k.violations, r.violations);
    assert_eq!(in_flight_at_first_crash(&kw), 100);
    assert_eq!(in_flight_at_first_crash(&rw), 100);
    // Kafka replays everything from the stalled offset on, acked or not.
    assert_eq!((k.lost, k.duplicates), (0, 2059));
    // Redis re-delivers only what was pending: at most max spout pending.
    assert_eq!((r.lost, r.duplicates), (0, 100));
    assert_eq!(lock(&rw.log).redelivered(), &[599]);
}

#[test]
fn redis_at_most_once_never_duplicates_and_loses_the_unemitted_batch() {
    let (o, w) = run(
        base(Guarantee::AtMostOnce, SourceModel::Redis),
        "spout-crash*2",
    );
    assert_eq!(o.fired.len(), 2);
    // Read with NOACK: nothing is pending or delivered again. The crashes at offsets 1333 and
    // 2666 lose the rest of their read batches (1334..1500 and 2667..3000).
    assert_eq!((o.lost, o.duplicates), (166 + 333, 0));
    assert_eq!(lock(&w.log).pending_entries(), 0);
    assert!(lock(&w.log).redelivered().is_empty());
    // The Kafka model's at-most-once spout crash loses nothing (its read position is the commit
    // point, advanced at each emit).
    let (k, _) = run(
        base(Guarantee::AtMostOnce, SourceModel::Kafka),
        "spout-crash*2",
    );
    assert_eq!((k.lost, k.duplicates), (0, 0));
}

#[test]
fn exactly_once_redis_neither_loses_nor_duplicates_under_any_fault() {
    for kind in FaultKind::EXPERIMENT.into_iter().chain([
        FaultKind::WorkerCrash,
        FaultKind::SourceOutage,
        FaultKind::SinkOutage,
    ]) {
        let sc = base(Guarantee::ExactlyOnce, SourceModel::Redis);
        let (row, o) = experiment::run_cell(&sc, Guarantee::ExactlyOnce, Some(kind), 2).unwrap();
        assert_eq!(row.injected, 2, "{kind}");
        assert_eq!(
            (row.lost, row.duplicates, row.distinct),
            (0, 0, 4000),
            "{kind}"
        );
        assert!(o.ok(), "{kind}: {:?}", o.violations);
    }
}

#[test]
fn outages_lose_nothing_at_least_once() {
    for model in SourceModel::ALL {
        for faults in ["source-outage*2", "sink-outage*2"] {
            let (o, w) = run(base(Guarantee::AtLeastOnce, model), faults);
            assert!(o.ok(), "{model} {faults}: {:?}", o.violations);
            assert_eq!(o.fired.len(), 2);
            // 750 ms outages (500 ms, seen at the 750 ms reconnect attempt), shorter than the
            // message timeout: held acks and held inputs are applied in time, nothing is
            // replayed.
            assert_eq!((o.lost, o.duplicates), (0, 0), "{model} {faults}");
            assert!(
                o.end_ns > 1_500_000_000,
                "{model} {faults}: both outages waited out"
            );
            assert_eq!(lock(&w.log).committed(), 4000);
            let (e, _) = run(base(Guarantee::ExactlyOnce, model), faults);
            assert_eq!(
                (e.lost, e.duplicates, e.absorbed),
                (0, 0, 0),
                "{model} {faults}"
            );
        }
    }
}

#[test]
fn a_sink_outage_longer_than_the_timeout_replays_the_held_inputs() {
    for model in SourceModel::ALL {
        let mut sc = base(Guarantee::AtLeastOnce, model);
        sc.outage_ns = 5_000_000_000;
        let (o, _) = run(sc.clone(), "sink-outage");
        assert!(o.ok(), "{model}: {:?}", o.violations);
        // The 100 held inputs' trees time out and are replayed; the held inputs are still
        // written when the sink is back: one duplicate each, nothing lost.
        assert_eq!((o.lost, o.duplicates), (0, 100), "{model}");
        sc.guarantee = Guarantee::ExactlyOnce;
        let (e, _) = run(sc.clone(), "sink-outage");
        assert_eq!((e.lost, e.duplicates, e.absorbed), (0, 0, 100), "{model}");
        // A source outage as long holds acks, never replays.
        sc.guarantee = Guarantee::AtLeastOnce;
        let (s, _) = run(sc, "source-outage");
        assert!(s.ok(), "{model}: {:?}", s.violations);
        assert_eq!((s.lost, s.duplicates), (0, 0), "{model}");
    }
}

#[test]
fn past_the_retry_limit_an_entry_is_dead_lettered_and_lost_from_the_sink() {
    let mut sc = base(Guarantee::AtLeastOnce, SourceModel::Redis);
    sc.redis.max_retries = 0;
    let (o, w) = run(sc, "bolt-exception-before-emit");
    assert_eq!(lock(&w.log).dead_lettered(), &[1987]);
    assert_eq!((o.lost, o.duplicates), (1, 0));
    let v: Vec<String> = o.violations.iter().map(|v| v.to_string()).collect();
    assert_eq!(
        v,
        ["lost: 1 input(s) never reached the sink (first: #1987)"]
    );
}

#[test]
fn the_redis_model_and_outages_are_deterministic() {
    let faults = "spout-crash,source-outage@#500,sink-outage@#3000,message-loss~1/kt";
    let a = run(base(Guarantee::AtLeastOnce, SourceModel::Redis), faults).0;
    let b = run(base(Guarantee::AtLeastOnce, SourceModel::Redis), faults).0;
    assert_eq!(a.trace_hash, b.trace_hash);
    assert_eq!(a.events, b.events);
    assert_eq!(a.fired.len(), b.fired.len());
    let k = run(base(Guarantee::AtLeastOnce, SourceModel::Kafka), faults).0;
    assert_ne!(a.trace_hash, k.trace_hash, "the model is part of the trace");
    let mut longer = base(Guarantee::AtLeastOnce, SourceModel::Redis);
    longer.outage_ns += 1;
    let l = run(longer, faults).0;
    assert_ne!(
        a.trace_hash, l.trace_hash,
        "the outage duration is part of the trace"
    );
}

#[test]
fn redis_experiment_relations_hold() {
    let mut sc = base(Guarantee::AtLeastOnce, SourceModel::Redis);
    sc.message_timeout_ns = 30_000_000_000;
    // As `acker-sim experiment` runs it: a crashed bolt comes back within the run.
    sc.restart_delay_ns = experiment::RESTART_DELAY_NS;
    let rows = experiment::run(&sc, |_| {}).unwrap();
    for rel in experiment::relations_for(&rows, SourceModel::Redis) {
        assert!(rel.holds, "{}: {}", rel.text, rel.detail);
    }
    let text = experiment::spout_crash_relation(SourceModel::Redis);
    assert!(text.contains("redis"), "{text}");
    // The Kafka relation (≈ max spout pending × crashes, within 25%) is a different claim.
    assert!(experiment::spout_crash_relation(SourceModel::Kafka).contains("within 25%"));
}

#[test]
fn one_worker_worker_crash_crashes_the_whole_topology() {
    // The prediction of a real worker kill: every task of the one worker crashes together.
    let mut sc = base(Guarantee::AtLeastOnce, SourceModel::Redis);
    sc.one_worker = true;
    assert_eq!(sc.target_counts().workers, 1);
    let (o, w) = run(sc.clone(), "worker-crash");
    assert!(o.ok(), "{:?}", o.violations);
    assert_eq!(o.fired.len(), 1);
    assert_eq!(lock(&w.log).incarnation(), 1, "the spout crashed too");
    // Trees in flight whose tuples were still queued died with the worker (replayed, no
    // duplicate); only those already written to the sink come back as duplicates. The restarted
    // spout took back its 100 in-flight entries and 499 read but not yet emitted.
    assert_eq!((o.lost, o.duplicates), (0, 1));
    assert_eq!(lock(&w.log).redelivered(), &[599]);
    sc.guarantee = Guarantee::ExactlyOnce;
    let (e, _) = run(sc.clone(), "worker-crash*2");
    assert_eq!((e.lost, e.duplicates), (0, 0));
    sc.guarantee = Guarantee::AtMostOnce;
    let (m, _) = run(sc.clone(), "worker-crash");
    assert_eq!(m.duplicates, 0);
    // A partition needs two workers: refused at a time, none drawn at a rate (swarm mode).
    let mut p = sc;
    assert!(p
        .set_fault_specs(&parse_specs("partition@1s:0-1").unwrap(), 0)
        .is_err());
    p.set_fault_specs(&parse_specs("partition~5/kt,worker-crash~3/kt").unwrap(), 0)
        .unwrap();
    assert!(!p.faults.is_empty());
    assert!(p.faults.iter().all(|f| f.kind == FaultKind::WorkerCrash));
}

fn bin() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_acker-sim"))
}

#[test]
fn the_command_line_selects_the_model_and_the_outage() {
    let o = bin()
        .args(["run", "--seed", "1", "--source-model", "rabbit"])
        .bounded_output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("unknown source model `rabbit`; known: kafka, redis"),
        "{err}"
    );
    let o = bin()
        .args(["run", "--seed", "1", "--outage", "0s"])
        .bounded_output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    // The command line's run is the library's run of the same scenario.
    let faults = "spout-crash,source-outage@#200,sink-outage@#700";
    let o = bin()
        .args([
            "run",
            "--seed",
            "7",
            "--source-model",
            "redis",
            "--outage",
            "3s",
            "--timeout",
            "2s",
            "--faults",
            faults,
            "--check-determinism",
        ])
        .bounded_output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    let mut sc = Scenario::new(7, Guarantee::AtLeastOnce).with_source_model(SourceModel::Redis);
    sc.outage_ns = 3_000_000_000;
    sc.message_timeout_ns = 2_000_000_000;
    sc.set_fault_specs(&parse_specs(faults).unwrap(), 2_000_000_000)
        .unwrap();
    let lib = Sim::run(sc, None).unwrap();
    assert!(
        out.contains(&format!("trace hash {:016x}", lib.trace_hash)),
        "{out}"
    );
    assert_eq!((lib.lost, lib.fired.len()), (0, 3));
    assert!(
        out.contains("redis: pending 0  redelivered after restarts [")
            && out.contains("dead-lettered 0"),
        "{out}"
    );
    // The experiment prints the Redis spout-crash relation, and every relation holds.
    let o = bin()
        .args([
            "experiment",
            "--source-model",
            "redis",
            "--tuples",
            "2000",
            "--max-spout-pending",
            "50",
        ])
        .bounded_output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("redis source model"), "{out}");
    assert!(
        out.contains(&format!(
            "[holds] {}",
            experiment::spout_crash_relation(SourceModel::Redis)
        )),
        "{out}"
    );
    assert!(!out.contains("FAILS"), "{out}");
}
