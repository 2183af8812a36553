//! # acker-sim
//!
//! A seeded discrete-event simulator that runs acker's own executors (the runtime's spout, bolt
//! and acker state machines) on a simulated clock and network, injects failures, checks the
//! delivery guarantees with oracles, and replays any run from its seed and fault schedule.
//!
//! One thread, one priority queue of events in simulated nanoseconds (ties broken by a sequence
//! number), every random choice drawn from the run's seed through xoshiro streams, and a trace
//! hash over a canonical encoding of every event: the same seed gives the same trace hash in
//! every run and build.
//!
//! ## Simulating your own topology
//!
//! Any topology built with the runtime's [`TopologyBuilder`](acker_runtime::TopologyBuilder)
//! runs under the simulator: build a [`Simulation`] from it, its run
//! [`Config`](acker_runtime::Config) and [`SimOptions`] (seed, placement of tasks on workers,
//! link latency, service times, time limit, faults), add invariants over your own state, and run
//! it. Faults use the `--faults` syntax of the command line, with targets naming your components
//! (`bolt-crash@#2:count.1` is task 1 of `count`); [`Simulation::set_swarm_faults`] draws a
//! random mix from the seed. The generic oracles (at most one final callback per tracked emit,
//! liveness within 2T + a tick, acker capacity, at-least-once for spouts declared reliable) are
//! checked on every run, from outside your spouts. [`search::search`] runs many seeds and shrinks
//! the first violation to a minimal schedule, which [`search::replay`] reproduces exactly.
//!
//! ```
//! use acker_runtime::{values, BasicBolt, BasicOutputCollector, Config, FailedException, Input,
//!     MessageId, Spout, SpoutOutputCollector, TopologyBuilder};
//! use acker_sim::{SimOptions, Simulation};
//! use std::sync::{Arc, Mutex};
//!
//! /// Emits 0..10, re-emitting an id on fail; acked ids live outside the process.
//! struct Numbers { next: i64, replay: Vec<MessageId>, acked: Arc<Mutex<Vec<MessageId>>> }
//! impl Spout for Numbers {
//!     fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
//!         let id = match self.replay.pop() {
//!             Some(id) => id,
//!             None if self.next < 10 => { self.next += 1; (self.next - 1) as u64 }
//!             None => return,
//!         };
//!         let _ = c.emit(values![id as i64], Some(id));
//!     }
//!     fn ack(&mut self, id: MessageId) { self.acked.lock().unwrap().push(id) }
//!     fn fail(&mut self, id: MessageId) { self.replay.push(id) }
//!     fn is_done(&self) -> bool { self.acked.lock().unwrap().len() == 10 }
//! }
//!
//! /// Adds every number it sees into a shared sum (not idempotent: a replay adds twice).
//! struct Sum(Arc<Mutex<i64>>);
//! impl BasicBolt for Sum {
//!     fn execute(&mut self, input: &Input, _c: &mut BasicOutputCollector<'_, '_>)
//!         -> Result<(), FailedException> {
//!         *self.0.lock().unwrap() += input.values()[0].as_int().unwrap_or(0);
//!         Ok(())
//!     }
//! }
//!
//! let (acked, sum) = (Arc::new(Mutex::new(Vec::new())), Arc::new(Mutex::new(0)));
//! let mut b = TopologyBuilder::new();
//! let a = acked.clone();
//! b.set_spout("numbers", move || Numbers { next: 0, replay: vec![], acked: a.clone() }, 1)
//!     .output_fields(&["n"]);
//! let s = sum.clone();
//! b.set_basic_bolt("sum", move || Sum(s.clone()), 1).shuffle_grouping("numbers");
//! let topology = b.build().unwrap();
//!
//! let mut opts = SimOptions::new(42);
//! opts.input_len = 10;
//! opts.reliable_spouts = vec!["numbers".into()];
//! let config = Config {
//!     message_timeout_ns: 1_000_000_000,
//!     max_spout_pending: Some(1),
//!     ..Config::default()
//! };
//! let mut sim = Simulation::new(&topology, &config, opts);
//! // The bolt throws after its work on the next input once the 4th tuple (3) is emitted: with
//! // one tuple pending at a time, that input is 3; it is failed and replayed.
//! sim.set_fault_specs("bolt-exception-after-emit@#3:sum", 0).unwrap();
//! let s = sum.clone();
//! sim.invariant("sum is 0+1+...+9", move || match *s.lock().unwrap() {
//!     45 => Ok(()),
//!     n => Err(format!("sum {n}")),
//! });
//! let outcome = sim.run().unwrap();
//! // The replay added 3 twice: the user invariant catches the non-idempotent bolt.
//! assert_eq!(outcome.violations.len(), 1);
//! assert_eq!(outcome.violations[0].class(), "invariant");
//! assert!(outcome.violations[0].to_string().ends_with(": sum 48"));
//! assert_eq!(outcome.exceptions, 1);
//! assert_eq!(outcome.callbacks["numbers"][3].fails, 1);
//! ```
//!
//! The built-in experiment of the command line ([`Sim::run`] on a [`Scenario`]) is one user of
//! this API: its spout, processing bolt and sink are ordinary components ([`components`]).
//!
//! ## Module map
//!
//! | module | what it holds |
//! | --- | --- |
//! | [`queue`] | [`EventQueue`]: events ordered by (time, push order) |
//! | [`rng`] | seeded xoshiro streams per purpose |
//! | [`trace`] | [`Trace`]: the trace hash (FNV-1a over 64-bit words) and the text trace |
//! | [`units`] | durations on the command line (`2ms`, `1.5s`) |
//! | [`fault`] | fault kinds, triggers, `--faults` specs, expansion into a schedule, swarm mode |
//! | [`scenario`] | [`Scenario`]: guarantee, input, topology sizes, timing, network, faults |
//! | [`source`] | the reliable source in two models ([`SourceModel`]: Kafka committed offsets, Redis pending entries), source and sink outages, and the sink (exactly-once state) |
//! | [`components`] | the built-in experiment's topology (reliable spout, processing bolt, sink bolt) and [`Sim`], which runs a [`Scenario`] through the generic engine |
//! | [`engine`] | [`Simulation`] of any topology: [`SimOptions`], links, tasks, crashes, exceptions, the event loop; [`Outcome`] |
//! | [`oracle`] | the generic spout oracles (callbacks, liveness, at-least-once), acker capacity, and the experiment's delivery-guarantee oracles |
//! | [`shapes`] | issue 16's topology shapes (join with multi-anchoring, all grouping, fields-grouped chains, several ackers) as ready [`Simulation`]s |
//! | [`search`] | many seeds, swarm mode, shrinking a violation to a minimal schedule, replay; for scenarios and for any [`Simulation`] |
//! | [`experiment`] | the reliability experiment of the seed document: table, JSON, SVG plot |
//! | `real` | (feature `real`, on by default) the same experiment on a private redis-server and PostgreSQL with real crashes, beside the simulator's prediction: `acker-sim experiment --real` |
#![deny(missing_docs)]

pub mod components;
pub mod engine;
pub mod experiment;
pub mod fault;
pub mod oracle;
pub mod queue;
#[cfg(feature = "real")]
pub mod real;
pub mod rng;
mod roots;
pub mod scenario;
pub mod search;
pub mod shapes;
pub mod source;
pub mod trace;
pub mod units;

pub use components::Sim;
pub use engine::{ComponentCounters, Outcome, RunError, SimOptions, Simulation};
pub use fault::{Fault, FaultKind, FaultSpec, Trigger};
pub use oracle::{Callbacks, SpoutCallbacks, Unfinished, Violation};
pub use queue::EventQueue;
pub use scenario::{Guarantee, PlantedBug, Scenario, ScenarioError};
pub use source::{RedisOptions, SourceModel};
pub use trace::Trace;
