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
//! ## Module map
//!
//! | module | what it holds |
//! | --- | --- |
//! | [`queue`] | [`EventQueue`]: events ordered by (time, sequence number) |
//! | [`rng`] | seeded xoshiro streams per purpose |
//! | [`trace`] | [`Trace`]: the trace hash (FNV-1a over 64-bit words) and the text trace |
//! | [`units`] | durations on the command line (`2ms`, `1.5s`) |
//! | [`fault`] | fault kinds, triggers, `--faults` specs, expansion into a schedule, swarm mode |
//! | [`scenario`] | [`Scenario`]: guarantee, input, topology sizes, timing, network, faults |
//! | [`source`] | the reliable source log (committed offsets) and the sink (exactly-once state) |
//! | [`components`] | the topology run: reliable spout, processing bolt that can throw, sink bolt |
//! | [`engine`] | [`Sim`]: links, tasks, crashes, the event loop; [`Outcome`] |
//! | [`oracle`] | the delivery-guarantee, callback, capacity and liveness oracles |
//! | [`search`] | many seeds, swarm mode, shrinking a violation to a minimal schedule |
//! | [`experiment`] | the reliability experiment of the seed document: table, JSON, SVG plot |
#![deny(missing_docs)]

pub mod components;
pub mod engine;
pub mod experiment;
pub mod fault;
pub mod oracle;
pub mod queue;
pub mod rng;
pub mod scenario;
pub mod search;
pub mod source;
pub mod trace;
pub mod units;

pub use components::Sim;
pub use engine::{ComponentCounters, Outcome, RunError, SimOptions, Simulation};
pub use fault::{Fault, FaultKind, FaultSpec, Trigger};
pub use oracle::{Callbacks, Violation};
pub use queue::EventQueue;
pub use scenario::{Guarantee, PlantedBug, Scenario, ScenarioError};
pub use trace::Trace;
