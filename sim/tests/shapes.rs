//! Issue 16's topology shapes through the generic simulation, under swarm faults: two reliable
//! spouts joined by a bolt that anchors each output to both inputs (two roots per tuple), the
//! all grouping to a sink of two tasks (two copies per emit; every spout emit also goes to both
//! tasks of an audit bolt: three copies per spout emit), a fields-grouped chain of two
//! bolts, and three ackers. The generic oracles watch both spouts (every root of every spout
//! decided, each acked in the end); the invariant: every key reaches every all-grouping sink task
//! and the end of the chain.

use acker_runtime::{
    values, BasicBolt, BasicOutputCollector, Bolt, Config, FailedException, Input, MessageId,
    OutputCollector, Spout, SpoutOutputCollector, Topology, TopologyBuilder, TopologyContext,
};
use acker_sim::{SimOptions, Simulation};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex};

const KEYS: u64 = 40;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Emits keys `0..KEYS` (message id = key), re-emits on fail; acked keys live outside.
struct Keys {
    acked: Arc<Mutex<BTreeSet<u64>>>,
    todo: VecDeque<u64>,
}

impl Spout for Keys {
    fn open(&mut self, _c: &TopologyContext) {
        let acked = lock(&self.acked);
        self.todo = (0..KEYS).filter(|k| !acked.contains(k)).collect();
    }
    fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
        if let Some(k) = self.todo.pop_front() {
            if c.emit(values![k as i64], Some(k)).is_err() {
                self.todo.push_front(k);
            }
        }
    }
    fn ack(&mut self, id: MessageId) {
        lock(&self.acked).insert(id);
    }
    fn fail(&mut self, id: MessageId) {
        self.todo.push_back(id);
    }
    fn is_done(&self) -> bool {
        lock(&self.acked).len() as u64 == KEYS
    }
}

/// Joins the two spouts on the key: holds the first side, and when both are there emits one
/// tuple anchored to both (two roots), then acks both. The sides seen are kept in durable state
/// (outside the process, as a join's state backend): a side replayed after its partner was
/// joined and acked joins with the stored partner, anchored to itself alone. A newer copy of a
/// held side replaces and acks the older, whose tree has already failed.
struct Join {
    held: BTreeMap<(i64, u16), Input>,
    seen: Arc<Mutex<BTreeSet<(i64, u16)>>>,
}

impl Bolt for Join {
    fn execute(&mut self, input: Input, c: &mut OutputCollector<'_>) {
        let k = input.values()[0].as_int().unwrap_or(-1);
        let side = input.source_task();
        let other = self
            .held
            .keys()
            .find(|&&(hk, s)| hk == k && s != side)
            .copied();
        let partner_seen = lock(&self.seen).iter().any(|&(hk, s)| hk == k && s != side);
        lock(&self.seen).insert((k, side));
        match other {
            Some(key) => {
                let Some(o) = self.held.remove(&key) else {
                    return;
                };
                let _ = c.emit(&[&input, &o], values![k]);
                let _ = c.ack(input);
                let _ = c.ack(o);
            }
            None if partner_seen => {
                let _ = c.emit(&[&input], values![k]);
                let _ = c.ack(input);
            }
            None => {
                if let Some(old) = self.held.insert((k, side), input) {
                    let _ = c.ack(old);
                }
            }
        }
    }
}

struct Relay;
impl BasicBolt for Relay {
    fn execute(
        &mut self,
        input: &Input,
        c: &mut BasicOutputCollector<'_, '_>,
    ) -> Result<(), FailedException> {
        let k = input.values()[0].as_int().unwrap_or(-1);
        c.emit(values![k])
            .map_err(|e| FailedException::new(e.to_string()))?;
        Ok(())
    }
}

/// Records (its task index, key) into the store.
struct Record {
    store: Arc<Mutex<BTreeSet<(String, usize, i64)>>>,
    name: String,
    index: usize,
}
impl BasicBolt for Record {
    fn prepare(&mut self, c: &TopologyContext) {
        self.index = c.task_index;
    }
    fn execute(
        &mut self,
        input: &Input,
        _c: &mut BasicOutputCollector<'_, '_>,
    ) -> Result<(), FailedException> {
        let k = input.values()[0].as_int().unwrap_or(-1);
        lock(&self.store).insert((self.name.clone(), self.index, k));
        Ok(())
    }
}

type Store = Arc<Mutex<BTreeSet<(String, usize, i64)>>>;

fn topology() -> (Topology, Store) {
    let store: Store = Arc::new(Mutex::new(BTreeSet::new()));
    let mut b = TopologyBuilder::new();
    for name in ["left", "right"] {
        let acked = Arc::new(Mutex::new(BTreeSet::new()));
        b.set_spout(
            name,
            move || Keys {
                acked: acked.clone(),
                todo: VecDeque::new(),
            },
            1,
        )
        .output_fields(&["k"]);
    }
    let seen = Arc::new(Mutex::new(BTreeSet::new()));
    b.set_bolt(
        "join",
        move || Join {
            held: BTreeMap::new(),
            seen: seen.clone(),
        },
        2,
    )
    .fields_grouping("left", &["k"])
    .fields_grouping("right", &["k"])
    .output_fields(&["k"]);
    let s = store.clone();
    b.set_basic_bolt(
        "copies",
        move || Record {
            store: s.clone(),
            name: "copies".into(),
            index: 0,
        },
        2,
    )
    .all_grouping("join");
    // Every spout emit is also copied to both tasks of `audit` (three copies per emit).
    let s = store.clone();
    b.set_basic_bolt(
        "audit",
        move || Record {
            store: s.clone(),
            name: "audit".into(),
            index: 0,
        },
        2,
    )
    .all_grouping("left")
    .all_grouping("right");
    b.set_basic_bolt("relay", || Relay, 2)
        .shuffle_grouping("join")
        .output_fields(&["k"]);
    b.set_basic_bolt("relay2", || Relay, 2)
        .fields_grouping("relay", &["k"])
        .output_fields(&["k"]);
    let s = store.clone();
    b.set_basic_bolt(
        "end",
        move || Record {
            store: s.clone(),
            name: "end".into(),
            index: 0,
        },
        1,
    )
    .global_grouping("relay2");
    (b.build().unwrap(), store)
}

fn simulation(seed: u64) -> Simulation {
    let (t, store) = topology();
    let config = Config {
        num_ackers: 3,
        message_timeout_ns: 2_000_000_000,
        tick_interval_ns: 100_000_000,
        max_spout_pending: Some(8),
        ..Config::default()
    };
    let mut opts = SimOptions::new(seed);
    opts.input_len = 2 * KEYS;
    opts.restart_delay_ns = 50_000_000;
    opts.partition_ns = 200_000_000;
    opts.reliable_spouts = vec!["left".into(), "right".into()];
    let mut sim = Simulation::new(&t, &config, opts);
    sim.set_swarm_faults(60.0).unwrap();
    sim.invariant(
        "every key at every copy and at the end of the chain",
        move || {
            let s = lock(&store);
            for k in 0..KEYS as i64 {
                for (name, index) in [
                    ("copies", 0),
                    ("copies", 1),
                    ("audit", 0),
                    ("audit", 1),
                    ("end", 0),
                ] {
                    if !s.contains(&(name.to_string(), index, k)) {
                        return Err(format!("key {k} missing at {name}.{index}"));
                    }
                }
            }
            Ok(())
        },
    );
    sim
}

#[test]
fn join_all_grouping_fields_chain_and_three_ackers_hold_under_swarm_faults() {
    let mut fired = 0;
    for seed in 0..60 {
        let o = simulation(seed).run().unwrap();
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
    let o = simulation(1).with_schedule(Vec::new()).run().unwrap();
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
