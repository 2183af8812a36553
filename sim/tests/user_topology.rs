//! The simulator as a library: a user's own topology (the word count of
//! `examples/simulate_wordcount.rs`, and small probes) under faults, with the generic oracles,
//! user invariants, search, shrinking and replay.

#[path = "../examples/simulate_wordcount.rs"]
mod example;

use acker_runtime::{
    values, BasicBolt, BasicOutputCollector, Config, FailedException, Input, MessageId, Spout,
    SpoutOutputCollector, Topology, TopologyBuilder, TopologyContext,
};
use acker_sim::search::{replay, search};
use acker_sim::{Callbacks, RunError, SimOptions, Simulation, Violation};
use example::wordcount;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

#[test]
fn word_count_keeps_exact_counts_under_200_swarm_seeds() {
    let mut fired = 0;
    for seed in 0..200 {
        let o = wordcount::simulation(seed, false, 200.0)
            .unwrap()
            .run()
            .unwrap();
        assert!(o.ok(), "seed {seed}: {:?}", o.violations);
        // Every line acked at least once, seen from outside the spout.
        let lines = &o.callbacks["lines"];
        assert_eq!(lines.len(), wordcount::LINES.len(), "seed {seed}");
        assert!(lines.iter().all(|(_, c)| c.acks >= 1), "seed {seed}");
        fired += o.fired.len();
    }
    // The swarm really injected faults (about four per seed).
    assert!(fired > 400, "{fired}");
}

#[test]
fn a_bolt_that_acks_before_emitting_is_found_shrunk_and_replayed() {
    let found = search(0..200, |seed| wordcount::simulation(seed, true, 200.0))
        .unwrap()
        .expect("200 swarm seeds never caught the ack-before-emit bolt");
    assert_eq!(found.outcome.violations[0].class(), "invariant");
    let shrunk = found.shrunk.expect("the violation replays");
    assert_eq!(shrunk.faults.len(), 1, "{:?}", shrunk.faults);
    let again = replay(
        |seed| wordcount::simulation(seed, true, 200.0),
        found.seed,
        &shrunk.faults,
    )
    .unwrap();
    assert_eq!(again.trace_hash, shrunk.outcome.trace_hash);
    // The schedule in the `--faults` syntax, targets named, reads back to the same schedule.
    let mut sim = wordcount::simulation(found.seed, true, 200.0).unwrap();
    let text = sim.format_schedule(&shrunk.faults).unwrap();
    assert!(
        text.contains(":split.") || text.contains(":count.") || !text.contains("bolt"),
        "{text}"
    );
    sim.set_fault_specs(&text, 0).unwrap();
    assert_eq!(sim.options().faults, shrunk.faults, "{text}");
    assert_eq!(again.violations, shrunk.outcome.violations);
    // The same seed and schedule with the correct bolt hold.
    let fine = replay(
        |seed| wordcount::simulation(seed, false, 200.0),
        found.seed,
        &shrunk.faults,
    )
    .unwrap();
    assert!(fine.ok(), "{:?}", fine.violations);
}

/// Shared record of what a probe topology's bolts saw.
#[derive(Default)]
struct Seen {
    relay: Vec<i64>,
    sink: Vec<i64>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Emits ids `0..n` once each, re-emitting a failed id unless `forget_failed`.
struct Ids {
    n: u64,
    next: u64,
    replay: Vec<u64>,
    acked: Arc<Mutex<Vec<u64>>>,
    forget_failed: bool,
}

impl Spout for Ids {
    fn open(&mut self, _c: &TopologyContext) {}
    fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
        let id = match self.replay.pop() {
            Some(id) => id,
            None if self.next < self.n => {
                self.next += 1;
                self.next - 1
            }
            None => return,
        };
        let _ = c.emit(values![id as i64], Some(id));
    }
    fn ack(&mut self, id: MessageId) {
        lock(&self.acked).push(id);
    }
    fn fail(&mut self, id: MessageId) {
        if !self.forget_failed {
            self.replay.push(id);
        }
    }
    fn is_done(&self) -> bool {
        self.next == self.n && self.replay.is_empty() && {
            let a = lock(&self.acked);
            self.forget_failed || a.len() as u64 >= self.n
        }
    }
}

struct Relay(Arc<Mutex<Seen>>);
impl BasicBolt for Relay {
    fn execute(
        &mut self,
        input: &Input,
        c: &mut BasicOutputCollector<'_, '_>,
    ) -> Result<(), FailedException> {
        let v = input.values()[0].as_int().unwrap_or(-1);
        lock(&self.0).relay.push(v);
        c.emit(values![v])
            .map_err(|e| FailedException::new(e.to_string()))?;
        Ok(())
    }
}

struct Sink(Arc<Mutex<Seen>>);
impl BasicBolt for Sink {
    fn execute(
        &mut self,
        input: &Input,
        _c: &mut BasicOutputCollector<'_, '_>,
    ) -> Result<(), FailedException> {
        lock(&self.0)
            .sink
            .push(input.values()[0].as_int().unwrap_or(-1));
        Ok(())
    }
}

fn probe(n: u64, forget_failed: bool) -> (Topology, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let acked = Arc::new(Mutex::new(Vec::new()));
    let mut b = TopologyBuilder::new();
    b.set_spout(
        "ids",
        move || Ids {
            n,
            next: 0,
            replay: Vec::new(),
            acked: acked.clone(),
            forget_failed,
        },
        1,
    )
    .output_fields(&["id"]);
    let s = seen.clone();
    b.set_basic_bolt("relay", move || Relay(s.clone()), 1)
        .shuffle_grouping("ids")
        .output_fields(&["id"]);
    let s = seen.clone();
    b.set_basic_bolt("sink", move || Sink(s.clone()), 1)
        .shuffle_grouping("relay")
        .output_fields(&["id"]);
    (b.build().unwrap(), seen)
}

fn probe_config() -> Config {
    Config {
        message_timeout_ns: 1_000_000_000,
        tick_interval_ns: 100_000_000,
        max_spout_pending: Some(1),
        ..Config::default()
    }
}

fn run_probe(faults: &str, forget_failed: bool) -> (acker_sim::Outcome, Seen) {
    let (t, seen) = probe(3, forget_failed);
    let mut opts = SimOptions::new(7);
    opts.input_len = 3;
    opts.reliable_spouts = vec!["ids".into()];
    let mut sim = Simulation::new(&t, &probe_config(), opts);
    sim.set_fault_specs(faults, 0).unwrap();
    let o = sim.run().unwrap();
    let s = std::mem::take(&mut *lock(&seen));
    (o, s)
}

#[test]
fn an_exception_before_execute_fails_the_input_without_calling_the_bolt() {
    let (o, seen) = run_probe("bolt-exception-before-emit@#0:relay", false);
    assert!(o.ok(), "{:?}", o.violations);
    assert_eq!(o.exceptions, 1);
    // One at a time (max spout pending 1): id 0 is failed unseen, then replayed and seen once.
    assert_eq!(seen.relay, vec![0, 1, 2]);
    assert_eq!(seen.sink, vec![0, 1, 2]);
    let cb = &o.callbacks["ids"];
    let one = |emits, acks, fails| Callbacks { emits, acks, fails };
    assert_eq!(cb[0], one(2, 1, 1));
    assert_eq!(cb[1], one(1, 1, 0));
    assert_eq!(o.component("relay").unwrap().executed, 3);
}

#[test]
fn an_exception_after_execute_fails_the_input_after_its_emits_left() {
    let (o, seen) = run_probe("bolt-exception-after-emit@#0:relay", false);
    assert!(o.ok(), "{:?}", o.violations);
    assert_eq!(o.exceptions, 1);
    // The bolt ran on id 0 twice, and its first emit reached the sink before the replay.
    assert_eq!(seen.relay, vec![0, 0, 1, 2]);
    assert_eq!(seen.sink, vec![0, 0, 1, 2]);
    assert_eq!(
        o.callbacks["ids"][0],
        Callbacks {
            emits: 2,
            acks: 1,
            fails: 1
        }
    );
}

#[test]
fn a_reliable_spout_that_forgets_a_failed_id_is_reported() {
    let (o, seen) = run_probe("bolt-exception-before-emit@#0:relay", true);
    assert_eq!(seen.sink, vec![1, 2]);
    assert_eq!(
        o.violations,
        vec![Violation::NotAcked {
            component: "ids".into(),
            count: 1,
            first: 0
        }]
    );
}

#[test]
fn a_bolt_crash_is_rebuilt_from_its_factory_and_the_tree_replayed() {
    let (o, seen) = run_probe("bolt-crash@#1:sink", false);
    assert!(o.ok(), "{:?}", o.violations);
    assert_eq!(o.fired.len(), 1);
    // Every id reached the sink at least once, and every id was acked once in the end.
    for id in 0..3 {
        assert!(seen.sink.contains(&id), "{:?}", seen.sink);
        assert_eq!(o.callbacks["ids"][id as u64].acks, 1);
    }
}

#[test]
fn bad_input_is_refused_before_anything_runs_naming_the_culprit() {
    let (t, _) = probe(3, false);
    let sim = || Simulation::new(&t, &probe_config(), SimOptions::new(1));
    let err = sim()
        .set_fault_specs("bolt-crash@1s:counter", 0)
        .unwrap_err();
    assert!(matches!(err, RunError::UnknownComponent { .. }));
    assert_eq!(
        err.to_string(),
        "fault `bolt-crash@1s:counter`: the topology has no component `counter` of that kind"
    );
    let err = sim()
        .set_fault_specs("bolt-crash@1s:relay.1", 0)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "fault `bolt-crash@1s:relay.1`: component `relay` has 1 task(s) (0..=0), not 1"
    );
    // A spout is not a bolt target.
    let err = sim().set_fault_specs("bolt-crash@1s:ids", 0).unwrap_err();
    assert!(matches!(err, RunError::UnknownComponent { .. }), "{err}");
    // 3 components and 1 acker: tasks 0..=3; a placement of 3 leaves the acker without a worker.
    let mut opts = SimOptions::new(1);
    opts.placement = Some(vec![0, 1, 2]);
    let err = Simulation::new(&t, &probe_config(), opts)
        .run()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "placement: task 3 of `__acker` has no worker (the placement covers 3 task(s))"
    );
    let mut opts = SimOptions::new(1);
    opts.time_limit_ns = Some(0);
    let err = Simulation::new(&t, &probe_config(), opts)
        .run()
        .unwrap_err();
    assert!(matches!(err, RunError::ZeroTimeLimit));
    let mut opts = SimOptions::new(1);
    opts.fault_bolts = Some(vec!["nope".into()]);
    let err = Simulation::new(&t, &probe_config(), opts)
        .run()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "fault_bolts: the topology has no component `nope` of that kind"
    );
    // A numeric target beyond the bolts (relay, sink: targets 0..=1).
    let err = sim().set_fault_specs("bolt-crash@1s:2", 0).unwrap_err();
    assert!(matches!(err, RunError::Fault(_)), "{err}");
}

#[test]
fn an_invariant_checked_after_every_event_reports_the_first_violation_once() {
    let (t, seen) = probe(3, false);
    let mut opts = SimOptions::new(3);
    opts.input_len = 3;
    let mut sim = Simulation::new(&t, &probe_config(), opts);
    let s = seen.clone();
    sim.invariant_every_event("sink holds at most one record", move || {
        match lock(&s).sink.len() {
            0 | 1 => Ok(()),
            n => Err(format!("{n} records")),
        }
    });
    let o = sim.run().unwrap();
    assert_eq!(o.violations.len(), 1, "{:?}", o.violations);
    match &o.violations[0] {
        Violation::Invariant { name, message, .. } => {
            assert_eq!(name, "sink holds at most one record");
            assert_eq!(message, "2 records");
        }
        v => panic!("{v:?}"),
    }
    // Per-component counters, from the runtime's executors.
    let counters: BTreeMap<&str, u64> = o
        .components
        .iter()
        .map(|c| (c.component.as_str(), c.counters.executed))
        .collect();
    assert_eq!(counters["relay"], 3);
    assert_eq!(counters["sink"], 3);
}

#[test]
fn placement_sets_the_workers_faults_can_target() {
    let (t, _) = probe(3, false);
    // Default: one worker per component (ids, relay, sink), then one for the ackers.
    let sim = Simulation::new(&t, &probe_config(), SimOptions::new(1));
    let counts = sim.targets().unwrap();
    assert_eq!(
        (counts.spouts, counts.bolts, counts.ackers, counts.workers),
        (1, 2, 1, 4)
    );
    // Everything on one worker: no link crosses workers, so a partition has no pair to cut and
    // a message loss never strikes (it drops only messages between workers).
    let mut opts = SimOptions::new(1);
    opts.placement = Some(vec![0, 0, 0, 0]);
    opts.input_len = 3;
    let mut sim = Simulation::new(&t, &probe_config(), opts.clone());
    assert_eq!(sim.targets().unwrap().workers, 1);
    let err = sim.set_fault_specs("partition@1ms:0-1", 0).unwrap_err();
    assert!(matches!(err, RunError::Fault(_)), "{err}");
    sim.set_fault_specs("message-loss@#0", 0).unwrap();
    let o = sim.run().unwrap();
    assert!(o.ok(), "{:?}", o.violations);
    assert_eq!((o.fired.len(), o.dropped), (1, 0));
    // The same loss with the default placement drops one message.
    let mut sim = Simulation::new(&t, &probe_config(), SimOptions::new(1));
    sim.options_mut().input_len = 3;
    sim.set_fault_specs("message-loss@#0", 0).unwrap();
    let o = sim.run().unwrap();
    assert!(o.ok(), "{:?}", o.violations);
    assert_eq!(o.dropped, 1);
}
