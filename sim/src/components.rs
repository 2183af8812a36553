//! The topology the simulator runs, written against the runtime's user API: a reliable spout over
//! the [`SourceLog`], a processing bolt that can be told to throw, and a sink bolt writing into the
//! [`SinkStore`].
//!
//! The log, the sink and the armed exceptions live outside the executors (behind `Arc<Mutex<_>>`,
//! as the runtime's factories must be `Send + Sync`): they are the outside world, which survives
//! a crash. Everything inside an executor is rebuilt fresh on restart.
//!
//! ```text
//!  source (spout, 1 task) --shuffle--> process (bolt, `bolts` tasks) --global--> sink (bolt, 1 task)
//! ```

use crate::scenario::Scenario;
use crate::source::{SinkStore, SourceLog};
use acker_runtime::{
    values, BasicBolt, BasicOutputCollector, Config, EmitError, FailedException, Input, MessageId,
    Plan, Spout, SpoutOutputCollector, TopologyBuilder, TopologyContext,
};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Locks a mutex, taking the data even if a panic poisoned it (the simulator is single-threaded;
/// a poisoned lock only means an earlier panic, which already failed the run).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where an injected bolt exception strikes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExceptionPoint {
    /// Before the bolt emits: nothing reaches the sink.
    BeforeEmit,
    /// After the bolt emits: the output already left.
    AfterEmit,
}

/// Exceptions armed per processing bolt task index; each is consumed by that task's next input.
///
/// A counter of armed exceptions lets a bolt skip the lock when none is armed (the common case).
#[derive(Debug, Default)]
pub struct BoltFaults {
    armed_total: AtomicU64,
    armed: Mutex<Vec<VecDeque<ExceptionPoint>>>,
    thrown: AtomicU64,
}

impl BoltFaults {
    /// Arms one exception for processing bolt `index`.
    pub fn arm(&self, index: usize, point: ExceptionPoint) {
        let mut armed = lock(&self.armed);
        if armed.len() <= index {
            armed.resize_with(index + 1, VecDeque::new);
        }
        armed[index].push_back(point);
        self.armed_total.fetch_add(1, Ordering::Relaxed);
    }

    fn take(&self, index: usize) -> Option<ExceptionPoint> {
        if self.armed_total.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let p = lock(&self.armed).get_mut(index)?.pop_front();
        if p.is_some() {
            self.armed_total.fetch_sub(1, Ordering::Relaxed);
            self.thrown.fetch_add(1, Ordering::Relaxed);
        }
        p
    }

    /// Exceptions thrown so far.
    pub fn thrown(&self) -> u64 {
        self.thrown.load(Ordering::Relaxed)
    }
}

/// The outside world of one run, shared with the executors' user code.
#[derive(Clone, Debug)]
pub struct World {
    /// The source log.
    pub log: Arc<Mutex<SourceLog>>,
    /// The sink.
    pub sink: Arc<Mutex<SinkStore>>,
    /// Armed bolt exceptions.
    pub bolt_faults: Arc<BoltFaults>,
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

/// The processing bolt (a `BaseBasicBolt`): passes the number on to the sink, unless an armed
/// exception makes it throw before or after its emit (the input then fails).
pub struct ProcessBolt {
    faults: Arc<BoltFaults>,
    index: usize,
}

impl BasicBolt for ProcessBolt {
    fn prepare(&mut self, context: &TopologyContext) {
        self.index = context.task_index;
    }

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
        let point = self.faults.take(self.index);
        if point == Some(ExceptionPoint::BeforeEmit) {
            return Err(FailedException::new("injected exception before emit"));
        }
        c.emit(values![n])
            .map_err(|e| FailedException::new(e.to_string()))?;
        if point == Some(ExceptionPoint::AfterEmit) {
            return Err(FailedException::new("injected exception after emit"));
        }
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

/// Builds the world and the runtime [`Plan`] for a scenario; the plan's config seed is
/// `executor_seed`.
///
/// # Errors
/// A message if the runtime refuses the topology or config (not expected for a validated
/// scenario).
pub fn build(sc: &Scenario, executor_seed: u64) -> Result<(World, Plan), String> {
    let world = World {
        log: Arc::new(Mutex::new(SourceLog::new(sc.tuples))),
        sink: Arc::new(Mutex::new(SinkStore::new(
            sc.tuples,
            sc.guarantee == crate::scenario::Guarantee::ExactlyOnce,
        ))),
        bolt_faults: Arc::new(BoltFaults::default()),
    };
    let plan = plan(sc, &world, executor_seed)?;
    Ok((world, plan))
}

/// The runtime plan of `sc` over `world`, with executor seed `executor_seed` (a restarted task is
/// built from a plan with its own seed, as a restarted JVM draws new random root ids).
///
/// # Errors
/// As [`build`].
pub fn plan(sc: &Scenario, world: &World, executor_seed: u64) -> Result<Plan, String> {
    let mut b = TopologyBuilder::new();
    let log = world.log.clone();
    b.set_spout(ids::SOURCE, move || ReliableSpout { log: log.clone() }, 1)
        .output_fields(&["n"]);
    let faults = world.bolt_faults.clone();
    b.set_basic_bolt(
        ids::PROCESS,
        move || ProcessBolt {
            faults: faults.clone(),
            index: 0,
        },
        sc.bolts,
    )
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
        seed: executor_seed,
    };
    topology.plan(&config).map_err(|e| e.to_string())
}
