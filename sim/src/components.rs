//! The topology the simulator runs, written against the runtime's user API: a reliable spout over
//! the [`SourceLog`], a processing bolt that can be told to throw, and a sink bolt writing into the
//! [`SinkStore`].
//!
//! The log and the sink live outside the executors (behind `Arc<Mutex<_>>`,
//! as the runtime's factories must be `Send + Sync`): they are the outside world, which survives
//! a crash. Everything inside an executor is rebuilt fresh on restart.
//!
//! ```text
//!  source (spout, 1 task) --shuffle--> process (bolt, `bolts` tasks) --global--> sink (bolt, 1 task)
//! ```

use crate::engine::{lock, Outcome, RunError, SimOptions, Simulation};
use crate::oracle::{self, Violation};
use crate::scenario::{Guarantee, PlantedBug, Scenario};
use crate::source::{SinkStore, SourceLog};
use acker_runtime::{
    values, BasicBolt, BasicOutputCollector, Config, EmitError, FailedException, Input, MessageId,
    Spout, SpoutOutputCollector, Topology, TopologyBuilder, TopologyContext,
};
use std::sync::{Arc, Mutex};

/// The outside world of one run, shared with the executors' user code.
#[derive(Clone, Debug)]
pub struct World {
    /// The source log.
    pub log: Arc<Mutex<SourceLog>>,
    /// The sink.
    pub sink: Arc<Mutex<SinkStore>>,
}

/// A reliable spout over the source log (a Kafka spout managing its own offsets): emits each
/// offset with a fresh message id, commits on ack, replays on fail; on open (start or restart)
/// it resumes from the committed offset.
pub struct ReliableSpout {
    log: Arc<Mutex<SourceLog>>,
}

impl Spout for ReliableSpout {
    fn open(&mut self, _context: &TopologyContext) {
        lock(&self.log).open_consumer();
    }

    fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
        let mut log = lock(&self.log);
        log.set_now(c.now_ns());
        let Some((offset, msg_id)) = log.next_emit() else {
            return;
        };
        drop(log);
        if let Err(e) = c.emit(values![offset as i64], Some(msg_id)) {
            // Not sent (max spout pending): give the offset back for the next call.
            let id = match e {
                EmitError::MaxSpoutPending { msg_id } => msg_id,
                _ => msg_id,
            };
            lock(&self.log).unread(id);
        }
    }

    fn ack(&mut self, msg_id: MessageId) {
        lock(&self.log).ack(msg_id);
    }

    fn fail(&mut self, msg_id: MessageId) {
        lock(&self.log).fail(msg_id);
    }

    fn is_done(&self) -> bool {
        lock(&self.log).is_done()
    }
}

/// The processing bolt (a `BaseBasicBolt`): passes the number on to the sink. Injected
/// exceptions strike around its `execute`, from the engine (see [`crate::engine`]).
pub struct ProcessBolt;

impl BasicBolt for ProcessBolt {
    fn execute(
        &mut self,
        input: &Input,
        c: &mut BasicOutputCollector<'_, '_>,
    ) -> Result<(), FailedException> {
        let n = input
            .values()
            .first()
            .and_then(|v| v.as_int())
            .unwrap_or(-1);
        c.emit(values![n])
            .map_err(|e| FailedException::new(e.to_string()))?;
        Ok(())
    }
}

/// The sink bolt: writes every input into the sink store, then acks it.
pub struct SinkBolt {
    sink: Arc<Mutex<SinkStore>>,
}

impl BasicBolt for SinkBolt {
    fn execute(
        &mut self,
        input: &Input,
        _c: &mut BasicOutputCollector<'_, '_>,
    ) -> Result<(), FailedException> {
        let n = input
            .values()
            .first()
            .and_then(|v| v.as_int())
            .unwrap_or(-1);
        lock(&self.sink).write(n as u64);
        Ok(())
    }
}

/// Component ids.
pub mod ids {
    /// The spout.
    pub const SOURCE: &str = "source";
    /// The processing bolt.
    pub const PROCESS: &str = "process";
    /// The sink bolt.
    pub const SINK: &str = "sink";
}

/// The world, topology and run config of a scenario (the executors' seed is set by the
/// simulation from the scenario's seed).
///
/// # Errors
/// A message if the runtime refuses the topology (not expected for a validated scenario).
pub fn build(sc: &Scenario) -> Result<(World, Topology, Config), String> {
    let mut sink = SinkStore::new(sc.tuples, sc.guarantee == Guarantee::ExactlyOnce);
    if sc.planted_bug == Some(PlantedBug::SinkWithoutDedup) {
        sink = sink.without_dedup();
    }
    let world = World {
        log: Arc::new(Mutex::new(SourceLog::new(sc.tuples))),
        sink: Arc::new(Mutex::new(sink)),
    };
    let mut b = TopologyBuilder::new();
    let log = world.log.clone();
    b.set_spout(ids::SOURCE, move || ReliableSpout { log: log.clone() }, 1)
        .output_fields(&["n"]);
    b.set_basic_bolt(ids::PROCESS, || ProcessBolt, sc.bolts)
        .shuffle_grouping(ids::SOURCE)
        .output_fields(&["n"]);
    let sink = world.sink.clone();
    b.set_basic_bolt(ids::SINK, move || SinkBolt { sink: sink.clone() }, 1)
        .global_grouping(ids::PROCESS)
        .output_fields(&["n"]);
    let topology = b.build().map_err(|e| e.to_string())?;
    let config = Config {
        num_ackers: sc.num_ackers(),
        message_timeout_ns: sc.message_timeout_ns,
        enable_message_timeouts: true,
        max_spout_pending: Some(sc.max_spout_pending),
        tick_interval_ns: sc.tick_interval_ns,
        acker_capacity_roots: None,
        max_open_inputs: 1024,
        seed: 0,
    };
    Ok((world, topology, config))
}

/// The seed experiment's simulation of a [`Scenario`]: its topology (source → process → sink)
/// run through the generic [`Simulation`], plus the delivery-guarantee oracles over the sink.
pub struct Sim;

impl Sim {
    /// Runs `sc` to the end and checks the oracles, writing a text trace to `trace_out` when
    /// given.
    ///
    /// # Errors
    /// [`RunError::Scenario`] for an invalid scenario, [`RunError::Runtime`] if the runtime
    /// refuses the topology, [`RunError::Io`] if the trace could not be written.
    pub fn run(
        sc: Scenario,
        trace_out: Option<Box<dyn std::io::Write>>,
    ) -> Result<Outcome, RunError> {
        sc.validate().map_err(RunError::Scenario)?;
        let (world, topology, config) = build(&sc).map_err(RunError::Runtime)?;
        let mut sim = Simulation::new(&topology, &config, sc.sim_options());
        // The trace starts with the scenario, so runs that differ only in a setting the messages
        // do not show (the guarantee's sink state, say) still hash differently.
        sim.trace_header(vec![
            sc.seed,
            sc.guarantee as u64,
            sc.tuples,
            sc.max_spout_pending as u64,
            sc.message_timeout_ns,
            sc.tick_interval_ns,
            sc.ackers as u64,
            sc.bolts as u64,
            sc.latency_min_ns,
            sc.latency_max_ns,
            sc.local_latency_ns,
            sc.spout_ns,
            sc.bolt_ns,
            sc.acker_ns,
            sc.restart_delay_ns,
            sc.partition_ns,
            sc.planted_bug.map_or(0, |b| b as u64 + 1),
            sc.faults.len() as u64,
        ]);
        let log = world.log.clone();
        sim.progress_probe(Box::new(move || lock(&log).take_newly_read()));
        if let Some(out) = trace_out {
            sim.trace_to(out);
        }
        let mut o = sim.run()?;
        let log = lock(&world.log);
        let sink = lock(&world.sink);
        let mut violations: Vec<Violation> = Vec::new();
        for v in o.violations.drain(..) {
            match v {
                Violation::NotFinished { limit_ns, .. } => {
                    violations.push(Violation::NotFinished {
                        limit_ns,
                        uncommitted: log.tuples() - log.committed(),
                    })
                }
                v => violations.push(v),
            }
        }
        let at = violations
            .iter()
            .position(|v| !matches!(v, Violation::NotFinished { .. }))
            .unwrap_or(violations.len());
        let guarantee = oracle::check_end(sc.guarantee, sc.tuples, &sink);
        violations.splice(at..at, guarantee);
        let (distinct, duplicates) = sink.tally();
        o.violations = violations;
        o.input = sc.tuples;
        o.distinct = distinct;
        o.lost = sc.tuples - distinct;
        o.duplicates = duplicates;
        o.absorbed = sink.absorbed();
        Ok(o)
    }
}

/// The [`SimOptions`] of `sc`: its seed, timing, network and faults, the processing bolt as the
/// only bolt faults target, an input of `tuples` emits.
pub fn sim_options(sc: &Scenario) -> SimOptions {
    SimOptions {
        seed: sc.seed,
        placement: None,
        latency_min_ns: sc.latency_min_ns,
        latency_max_ns: sc.latency_max_ns,
        local_latency_ns: sc.local_latency_ns,
        spout_ns: sc.spout_ns,
        bolt_ns: sc.bolt_ns,
        acker_ns: sc.acker_ns,
        restart_delay_ns: sc.restart_delay_ns,
        partition_ns: sc.partition_ns,
        time_limit_ns: sc.time_limit_ns,
        faults: sc.faults.clone(),
        fault_bolts: Some(vec![ids::PROCESS.to_string()]),
        input_len: sc.tuples,
        reliable_spouts: Vec::new(),
        planted_bug: sc.planted_bug,
        fails_only_under_faults: true,
    }
}
