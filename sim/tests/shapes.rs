//! Issue 16's topology shapes ([`acker_sim::shapes`]) through the generic simulation, under
//! swarm faults: two reliable spouts joined by a bolt that anchors each output to both inputs
//! (two roots per tuple), the all grouping (several copies per emit: every spout emit also goes
//! to both tasks of an audit bolt, three copies per spout emit), fields-grouped chains of bolts,
//! and three ackers. The generic oracles watch every spout (every root of every spout decided,
//! each key acked in the end); the shapes' invariant: every key reaches every all-grouped task
//! and the end of the chain. Plus the fault-free oracle (no fault fired, no tree failed).

mod spouts;
use spouts::Four;

use acker_runtime::{
    BasicBolt, BasicOutputCollector, Config, FailedException, Input, TopologyBuilder,
};
use acker_sim::shapes::{Shape, KEYS};
use acker_sim::{SimOptions, Simulation};

fn combined(seed: u64) -> Simulation {
    let mut sim = Shape::Combined.simulation(seed, None).unwrap();
    sim.set_swarm_faults(60.0).unwrap();
    sim
}

#[test]
fn join_all_grouping_fields_chain_and_three_ackers_hold_under_swarm_faults() {
    let mut fired = 0;
    for seed in 0..60 {
        let o = combined(seed).run().unwrap();
        assert!(
            o.ok(),
            "seed {seed}: {:?} after {:?}",
            o.violations,
            o.fired
        );
        // Both spouts: every key acked at least once, seen from outside.
        for spout in ["left", "right"] {
            let cb = &o.callbacks[spout];
            assert_eq!(cb.len() as u64, KEYS, "seed {seed} {spout}");
            assert!(cb.iter().all(|(_, c)| c.acks >= 1), "seed {seed} {spout}");
        }
        fired += o.fired.len();
    }
    assert!(fired > 60, "{fired}");
}

#[test]
fn without_faults_every_tree_of_every_root_completes_once() {
    let o = combined(1).with_schedule(Vec::new()).run().unwrap();
    assert!(o.ok(), "{:?}", o.violations);
    for spout in ["left", "right"] {
        let cb = &o.callbacks[spout];
        assert_eq!(cb.len() as u64, KEYS, "{spout}");
        for (id, c) in cb.iter() {
            assert_eq!(
                *c,
                acker_sim::Callbacks {
                    emits: 1,
                    acks: 1,
                    fails: 0
                },
                "{spout} {id}"
            );
        }
    }
    // Two copies of each join output (all grouping), three of each spout emit (join + audit).
    assert_eq!(o.component("copies").unwrap().executed, 2 * KEYS);
    assert_eq!(o.component("audit").unwrap().executed, 4 * KEYS);
}

#[test]
fn every_shape_holds_without_faults_and_under_swarm_faults() {
    for shape in Shape::ALL {
        if shape == Shape::Experiment {
            assert!(shape.simulation(1, None).is_none());
            continue;
        }
        let clean = shape
            .simulation(1, None)
            .unwrap()
            .with_schedule(Vec::new())
            .run()
            .unwrap();
        assert!(clean.ok(), "{shape}: {:?}", clean.violations);
        assert!(clean.fired.is_empty(), "{shape}");
        for &spout in shape.spouts() {
            let cb = &clean.callbacks[spout];
            assert_eq!(cb.len() as u64, KEYS, "{shape} {spout}");
            assert!(
                cb.iter()
                    .all(|(_, c)| (c.emits, c.acks, c.fails) == (1, 1, 0)),
                "{shape} {spout}"
            );
        }
        for seed in 0..15 {
            let mut sim = shape.simulation(seed, None).unwrap();
            sim.set_swarm_faults(60.0).unwrap();
            let o = sim.run().unwrap();
            assert!(
                o.ok(),
                "{shape} seed {seed}: {:?} after {:?}",
                o.violations,
                o.fired
            );
        }
    }
}

#[test]
fn the_shape_of_a_swarm_seed_is_fixed_by_the_seed_and_every_shape_is_drawn() {
    let mut counts = [0u32; Shape::ALL.len()];
    for seed in 1..=300 {
        let s = Shape::for_seed(seed);
        assert_eq!(Shape::for_seed(seed), s);
        counts[Shape::ALL.iter().position(|&x| x == s).unwrap()] += 1;
    }
    // 300 draws among 6 shapes: each about 50 times.
    assert!(counts.iter().all(|&n| (25..=75).contains(&n)), "{counts:?}");
    for s in Shape::ALL {
        assert_eq!(s.name().parse::<Shape>(), Ok(s));
    }
    assert_eq!(
        "ring".parse::<Shape>(),
        Err(
            "unknown shape `ring`; known: experiment, join, all-grouping, fields-chain, ackers, \
             combined"
                .to_string()
        )
    );
}

/// Fails the first input whose value is 2, once (a bolt that fails on its own, no fault).
struct FailsTwoOnce(bool);
impl BasicBolt for FailsTwoOnce {
    fn execute(
        &mut self,
        input: &Input,
        _c: &mut BasicOutputCollector<'_, '_>,
    ) -> Result<(), FailedException> {
        if input.values()[0].as_int() == Some(2) && !self.0 {
            self.0 = true;
            return Err(FailedException::new("two"));
        }
        Ok(())
    }
}

fn fails_on_its_own(fails_only_under_faults: bool) -> Simulation {
    let mut b = TopologyBuilder::new();
    b.set_spout("four", Four::default, 1).output_fields(&["n"]);
    b.set_basic_bolt("b", || FailsTwoOnce(false), 1)
        .shuffle_grouping("four");
    let mut opts = SimOptions::new(7);
    opts.input_len = 4;
    opts.fails_only_under_faults = fails_only_under_faults;
    let config = Config {
        message_timeout_ns: 1_000_000_000,
        ..Config::default()
    };
    Simulation::new(&b.build().unwrap(), &config, opts)
}

#[test]
fn a_fail_without_any_fault_is_a_violation_only_where_the_topology_says_so() {
    let o = fails_on_its_own(true).run().unwrap();
    assert!(o.fired.is_empty());
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
    assert_eq!(o.violations[0].class(), "failed-without-fault");
    // A topology that may fail trees on its own (the default) is not judged by it.
    let o = fails_on_its_own(false).run().unwrap();
    assert!(o.ok(), "{:?}", o.violations);
    assert_eq!(o.callbacks["four"][2].fails, 1);
    // A fault that fired lifts it: the fail may be the fault's.
    let mut sim = fails_on_its_own(true);
    sim.set_fault_specs("message-loss@#3", 0).unwrap();
    let o = sim.run().unwrap();
    assert_eq!(o.fired.len(), 1);
    assert!(
        o.violations
            .iter()
            .all(|v| v.class() != "failed-without-fault"),
        "{:?}",
        o.violations
    );
}
