//! The topology the simulator runs, written against the runtime's user API: a reliable spout over
//! the [`SourceLog`], a processing bolt that can be told to throw, and a sink bolt writing into the
//! [`SinkStore`].
//!
//! The sink bolt writes each input and acks it at once (a batch of one: the runtime's PostgreSQL
//! sink commits batches, at `batch` inputs or at the spout's flush punctuation every 20 ms, which
//! only delays acks by a few ms). During a sink outage it cannot commit: it holds its inputs
//! unacked (their trees may time out and be replayed meanwhile) and, when the sink is back,
//! writes and acks them all at its next input or at the punctuation the engine sends it when the
//! outage ends ([`Simulation::outside_world`]). Not modelled: the runtime sink's cap of 16
//! batches held (it fails the excess): with the batch sizes the experiments use it is above max
//! spout pending, so it never strikes.
//!
//! The log and the sink live outside the executors (behind `Arc<Mutex<_>>`,
//! as the runtime's factories must be `Send + Sync`): they are the outside world, which survives
//! a crash. Everything inside an executor is rebuilt fresh on restart.
//!
//! ```text
//!  source (spout, 1 task) --shuffle--> process (bolt, `bolts` tasks) --global--> sink (bolt, 1 task)
//! ```

use crate::engine::{lock, Outcome, RunError, SimOptions, Simulation};
use crate::fault::FaultKind;
use crate::oracle::{self, Unfinished, Violation};
use crate::scenario::reconnect_ns;
use crate::scenario::{Guarantee, PlantedBug, Scenario};
use crate::source::{SinkStore, SourceLog, SourceModel};
use acker_runtime::{
    values, BasicBolt, BasicOutputCollector, Bolt, Config, EmitError, FailedException, Input,
    MessageId, OutputCollector, Spout, SpoutOutputCollector, Topology, TopologyBuilder,
    TopologyContext,
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

/// The sink bolt: writes every input into the sink store, then acks it; while the sink is down
/// it holds its inputs and writes and acks them when it is back (see the [module docs](self)).
/// An input with no values is the punctuation sent after a sink outage: it only commits what is
/// held.
pub struct SinkBolt {
    sink: Arc<Mutex<SinkStore>>,
    held: Vec<Input>,
}

impl SinkBolt {
    /// Writes and acks the held inputs, if the sink is up (the check for none held is inlined
    /// into `execute`, which calls this for every input).
    #[inline]
    fn commit_held(&mut self, c: &mut OutputCollector<'_>) {
        if !self.held.is_empty() {
            self.commit_held_now(c);
        }
    }

    fn commit_held_now(&mut self, c: &mut OutputCollector<'_>) {
        if lock(&self.sink).is_down() {
            return;
        }
        for input in std::mem::take(&mut self.held) {
            lock(&self.sink).write(number(&input) as u64);
            // An input held past its lifetime (2 × the message timeout) cannot be acked; its tree
            // failed long ago and is replayed.
            let _ = c.ack(input);
        }
    }
}

fn number(input: &Input) -> i64 {
    input
        .values()
        .first()
        .and_then(|v| v.as_int())
        .unwrap_or(-1)
}

impl Bolt for SinkBolt {
    fn execute(&mut self, input: Input, c: &mut OutputCollector<'_>) {
        if input.values().is_empty() {
            let _ = c.ack(input);
            self.commit_held(c);
            return;
        }
        self.commit_held(c);
        let mut sink = lock(&self.sink);
        if sink.is_down() {
            drop(sink);
            self.held.push(input);
            return;
        }
        sink.write(number(&input) as u64);
        drop(sink);
        let _ = c.ack(input);
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
    let log = SourceLog::with_model(
        sc.tuples,
        sc.source_model,
        sc.redis,
        sc.guarantee == Guarantee::AtMostOnce,
    );
    let world = World {
        log: Arc::new(Mutex::new(log)),
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
    b.set_bolt(
        ids::SINK,
        move || SinkBolt {
            sink: sink.clone(),
            held: Vec::new(),
        },
        1,
    )
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
        acker_recently_failed_roots: None,
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
        Self::run_world(sc, trace_out).map(|(o, _)| o)
    }

    /// [`run`](Self::run), also handing back the run's outside world (the source log and the
    /// sink as the run left them: pending entries, redeliveries, dead letters, writes).
    ///
    /// # Errors
    /// As [`run`](Self::run).
    pub fn run_world(
        sc: Scenario,
        trace_out: Option<Box<dyn std::io::Write>>,
    ) -> Result<(Outcome, World), RunError> {
        sc.validate().map_err(RunError::Scenario)?;
        let (world, topology, config) = build(&sc).map_err(RunError::Runtime)?;
        let mut sim = Simulation::new(&topology, &config, sc.sim_options());
        // The trace starts with the scenario, so runs that differ only in a setting the messages
        // do not show (the guarantee's sink state, say) still hash differently.
        let mut header = vec![
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
        ];
        // Settings added later are hashed only when they differ from what earlier runs had, so
        // the trace hashes of Kafka runs without outages are what they always were.
        if sc.source_model != SourceModel::Kafka {
            header.extend([
                sc.source_model as u64,
                sc.redis.read_batch as u64,
                sc.redis.max_retries as u64,
            ]);
        }
        if sc.one_worker {
            header.push(u64::MAX);
        }
        if sc
            .faults
            .iter()
            .any(|f| matches!(f.kind, FaultKind::SourceOutage | FaultKind::SinkOutage))
        {
            header.push(sc.outage_ns);
        }
        sim.trace_header(header);
        let (log, sink) = (world.log.clone(), world.sink.clone());
        sim.outside_world(
            Box::new(move |kind, down, _now| match kind {
                FaultKind::SourceOutage => lock(&log).set_down(down),
                FaultKind::SinkOutage => lock(&sink).set_down(down),
                _ => {}
            }),
            &[ids::SINK],
        );
        let newly = lock(&world.log).newly_read_handle();
        sim.progress_probe(Box::new(move || newly.take()));
        if let Some(out) = trace_out {
            sim.trace_to(out);
        }
        let mut o = sim.run()?;
        let w = world.clone();
        let log = lock(&w.log);
        let sink = lock(&w.sink);
        let mut violations: Vec<Violation> = Vec::new();
        for v in o.violations.drain(..) {
            match v {
                Violation::NotFinished { limit_ns, .. } => {
                    violations.push(Violation::NotFinished {
                        limit_ns,
                        uncommitted: log.tuples() - log.committed(),
                        unfinished: Unfinished::OffsetsUncommitted,
                    })
                }
                Violation::TimeStalled { at_ns, events, .. } => {
                    violations.push(Violation::TimeStalled {
                        at_ns,
                        events,
                        uncommitted: log.tuples() - log.committed(),
                        unfinished: Unfinished::OffsetsUncommitted,
                    })
                }
                v => violations.push(v),
            }
        }
        let at = violations
            .iter()
            .position(|v| {
                !matches!(
                    v,
                    Violation::NotFinished { .. } | Violation::TimeStalled { .. }
                )
            })
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
        drop((log, sink));
        Ok((o, world))
    }
}

/// The [`SimOptions`] of `sc`: its seed, timing, network and faults, the processing bolt as the
/// only bolt faults target, an input of `tuples` emits; every task on worker 0 with
/// [`Scenario::one_worker`]; outages as long as the clients see them
/// ([`reconnect_ns`] of [`Scenario::outage_ns`]).
pub fn sim_options(sc: &Scenario) -> SimOptions {
    SimOptions {
        seed: sc.seed,
        // Task ids: the spout, the processing bolts, the sink, then the ackers.
        placement: sc
            .one_worker
            .then(|| vec![0; 2 + sc.bolts + sc.num_ackers()]),
        latency_min_ns: sc.latency_min_ns,
        latency_max_ns: sc.latency_max_ns,
        local_latency_ns: sc.local_latency_ns,
        spout_ns: sc.spout_ns,
        bolt_ns: sc.bolt_ns,
        acker_ns: sc.acker_ns,
        restart_delay_ns: sc.restart_delay_ns,
        partition_ns: sc.partition_ns,
        outage_ns: reconnect_ns(sc.outage_ns),
        time_limit_ns: sc.time_limit_ns,
        max_events_per_instant: None,
        faults: sc.faults.clone(),
        fault_bolts: Some(vec![ids::PROCESS.to_string()]),
        input_len: sc.tuples,
        reliable_spouts: Vec::new(),
        planted_bug: sc.planted_bug,
        fails_only_under_faults: true,
        max_replays: sc.max_replays,
    }
}
