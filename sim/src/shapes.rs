//! The topology shapes of issue 16, for tests and for `acker-sim search --swarm`: besides the
//! seed experiment's one spout and one root per tuple, a join bolt that anchors each output to
//! inputs from two spouts (multi-anchoring, two roots per tuple), the all grouping (several
//! copies per emit, so the init XOR is over several edge ids), fields grouping, chains of bolts
//! and several ackers.
//!
//! Every shape is a user topology run through the generic [`Simulation`]: its spouts (`left`,
//! and `right` when joined) emit keys `0..KEYS` with the key as message id, re-emit a key on
//! fail, and are declared reliable, so the generic oracles check from outside every root of
//! every spout (each emit decided once within its bound, each key acked in the end); a user
//! invariant checks that every key reached every all-grouped task and the end of the chain. With
//! no fault fired, no tree may fail (the shapes' bolts never fail an input themselves).
//! [`Shape::Experiment`] stands for the built-in experiment ([`crate::Sim`] on a
//! [`crate::Scenario`]), which the search runs through its own path.

use crate::engine::{lock, SimOptions, Simulation};
use crate::rng;
use crate::scenario::PlantedBug;
use acker_runtime::{
    values, BasicBolt, BasicOutputCollector, Bolt, BoltDeclarer, Config, FailedException, Input,
    MessageId, OutputCollector, Spout, SpoutOutputCollector, Topology, TopologyBuilder,
    TopologyContext,
};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex};

/// Keys each spout of a shape emits (message ids `0..KEYS`).
pub const KEYS: u64 = 40;

/// Seed stream of the shape a swarm seed runs (see [`Shape::for_seed`]).
const SHAPE_STREAM: u64 = 5;

/// A topology shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// The seed experiment: one spout, a processing bolt, the sink, one root per tuple.
    Experiment,
    /// Two spouts joined on the key by a bolt anchoring each output to both inputs (two roots),
    /// fields-grouped, then the end of the chain.
    Join,
    /// One spout whose every emit is also copied to both tasks of an all-grouped audit bolt
    /// (three copies per spout emit), and its relay's output to two all-grouped tasks.
    AllGrouping,
    /// One spout and a chain of three fields-grouped relays, then the end.
    FieldsChain,
    /// One spout, a relay, the end, and three ackers.
    Ackers,
    /// Everything at once: join of two spouts, all grouping to two tasks (and an audit bolt on
    /// both spouts), a fields-grouped chain of two relays, three ackers.
    Combined,
}

/// What a shape is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Parts {
    /// Two spouts joined by a multi-anchoring bolt (else one spout).
    join: bool,
    /// Tasks of the all-grouped audit bolt on the spouts (0: none).
    audit: usize,
    /// Tasks of the all-grouped `copies` bolt on the join's (or first relay's) output (0: none).
    copies: usize,
    /// Fields-grouped relays in the chain before `end` (at least 1).
    chain: usize,
    /// Acker tasks.
    ackers: usize,
}

impl Shape {
    /// Every shape, in a fixed order.
    pub const ALL: [Shape; 6] = [
        Shape::Experiment,
        Shape::Join,
        Shape::AllGrouping,
        Shape::FieldsChain,
        Shape::Ackers,
        Shape::Combined,
    ];

    /// The kebab-case name (`acker-sim run --shape NAME`).
    pub fn name(self) -> &'static str {
        match self {
            Shape::Experiment => "experiment",
            Shape::Join => "join",
            Shape::AllGrouping => "all-grouping",
            Shape::FieldsChain => "fields-chain",
            Shape::Ackers => "ackers",
            Shape::Combined => "combined",
        }
    }

    /// The shape swarm mode runs for `seed`: drawn from the seed (its own stream), so the same
    /// seed always runs the same shape.
    pub fn for_seed(seed: u64) -> Shape {
        let mut r = rng::stream(seed, SHAPE_STREAM);
        Shape::ALL[rng::below(&mut r, Shape::ALL.len() as u64) as usize]
    }

    /// Whether swarm mode also runs `seed`'s shape without faults, after its run with faults
    /// (one seed in four, drawn after the shape from the same stream). A fault-free run is where the oracles are strictest
    /// (no fail without a fault, every tree completes in time): a bug that faults mask, such as
    /// an ack sent to the wrong root of a multi-anchored tuple (which crashes and replays can
    /// route around), shows there. Swarm testing's subsets of fault kinds never include the
    /// empty one otherwise.
    pub fn quiet_for_seed(seed: u64) -> bool {
        let mut r = rng::stream(seed, SHAPE_STREAM);
        let _shape = rng::below(&mut r, Shape::ALL.len() as u64);
        rng::below(&mut r, 4) == 0
    }

    fn parts(self) -> Parts {
        let (join, audit, copies, chain, ackers) = match self {
            Shape::Experiment | Shape::Ackers => (false, 0, 0, 1, 3),
            Shape::Join => (true, 0, 0, 1, 1),
            Shape::AllGrouping => (false, 2, 2, 1, 1),
            Shape::FieldsChain => (false, 0, 0, 3, 1),
            Shape::Combined => (true, 2, 2, 2, 3),
        };
        Parts {
            join,
            audit,
            copies,
            chain,
            ackers,
        }
    }

    /// The spout components of the shape (each declared reliable).
    pub fn spouts(self) -> &'static [&'static str] {
        if self.parts().join {
            &["left", "right"]
        } else {
            &["left"]
        }
    }

    /// The shape's simulation for `seed`: its topology with fresh user state, T = 2 s, ticks
    /// every 100 ms, max spout pending 8, restarts after 50 ms, partitions of 200 ms, the
    /// shape's ackers, every spout reliable, the invariant that every key reached every
    /// all-grouped task and the end of the chain, and `planted_bug`. No faults (see
    /// [`Simulation::set_swarm_faults`]). `None` for [`Shape::Experiment`].
    pub fn simulation(self, seed: u64, planted_bug: Option<PlantedBug>) -> Option<Simulation> {
        if self == Shape::Experiment {
            return None;
        }
        let parts = self.parts();
        let (topology, store, sinks) = topology(parts);
        let config = Config {
            num_ackers: parts.ackers,
            message_timeout_ns: 2_000_000_000,
            tick_interval_ns: 100_000_000,
            max_spout_pending: Some(8),
            ..Config::default()
        };
        let mut opts = SimOptions::new(seed);
        opts.input_len = self.spouts().len() as u64 * KEYS;
        opts.restart_delay_ns = 50_000_000;
        opts.partition_ns = 200_000_000;
        opts.reliable_spouts = self.spouts().iter().map(|s| s.to_string()).collect();
        opts.fails_only_under_faults = true;
        opts.planted_bug = planted_bug;
        let mut sim = Simulation::new(&topology, &config, opts);
        sim.invariant(
            "every key at every all-grouped task and at the end of the chain",
            move || {
                let s = lock(&store);
                for k in 0..KEYS as i64 {
                    for (name, index) in &sinks {
                        if !s.contains(&(name.to_string(), *index, k)) {
                            return Err(format!("key {k} missing at {name}.{index}"));
                        }
                    }
                }
                Ok(())
            },
        );
        Some(sim)
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Shape {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Shape::ALL
            .into_iter()
            .find(|x| x.name() == s.trim())
            .ok_or_else(|| {
                let names: Vec<&str> = Shape::ALL.iter().map(|x| x.name()).collect();
                format!("unknown shape `{s}`; known: {}", names.join(", "))
            })
    }
}

/// Emits keys `0..KEYS` (message id = key), re-emits on fail; acked keys live outside the
/// process (they survive a spout crash, as a log's committed offsets would).
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

/// Emits its input's key, anchored to the input (a basic bolt).
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

/// Records (its component, its task index, key) into the store.
struct Record {
    store: Store,
    name: &'static str,
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
        lock(&self.store).insert((self.name.to_string(), self.index, k));
        Ok(())
    }
}

/// What the recording bolts saw: (component, task index, key).
type Store = Arc<Mutex<BTreeSet<(String, usize, i64)>>>;

fn record<'a>(
    b: &'a mut TopologyBuilder,
    store: &Store,
    name: &'static str,
    tasks: usize,
) -> BoltDeclarer<'a> {
    let s = store.clone();
    b.set_basic_bolt(
        name,
        move || Record {
            store: s.clone(),
            name,
            index: 0,
        },
        tasks,
    )
}

const RELAYS: [&str; 3] = ["relay", "relay2", "relay3"];

/// The topology of `p`, its store, and the (component, task index) every key must reach.
fn topology(p: Parts) -> (Topology, Store, Vec<(&'static str, usize)>) {
    let store: Store = Arc::new(Mutex::new(BTreeSet::new()));
    let mut sinks = Vec::new();
    let mut b = TopologyBuilder::new();
    let spouts: &[&str] = if p.join {
        &["left", "right"]
    } else {
        &["left"]
    };
    for &name in spouts {
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
    let head = if p.join {
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
        "join"
    } else {
        "left"
    };
    if p.audit > 0 {
        // Every spout emit is also copied to every task of `audit`.
        let mut d = record(&mut b, &store, "audit", p.audit);
        for &name in spouts {
            d = d.all_grouping(name);
        }
        sinks.extend((0..p.audit).map(|i| ("audit", i)));
    }
    let mut prev = head;
    for (i, &relay) in RELAYS
        .iter()
        .take(p.chain.clamp(1, RELAYS.len()))
        .enumerate()
    {
        let d = b.set_basic_bolt(relay, || Relay, 2);
        let d = if i == 0 && !p.join {
            d.shuffle_grouping(prev)
        } else {
            d.fields_grouping(prev, &["k"])
        };
        d.output_fields(&["k"]);
        prev = relay;
    }
    if p.copies > 0 {
        record(&mut b, &store, "copies", p.copies).all_grouping(if p.join {
            "join"
        } else {
            "relay"
        });
        sinks.extend((0..p.copies).map(|i| ("copies", i)));
    }
    record(&mut b, &store, "end", 1).global_grouping(prev);
    sinks.push(("end", 0));
    match b.build() {
        Ok(t) => (t, store, sinks),
        // The shapes are fixed and valid; a runtime that refused one is a bug of this module.
        Err(e) => unreachable_shape(&e.to_string()),
    }
}

#[cold]
fn unreachable_shape(e: &str) -> ! {
    panic!("a built-in shape was refused by the topology builder: {e}")
}
