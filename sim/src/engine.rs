//! The simulator proper: one thread, one event queue, the runtime's executors, for any topology.
//!
//! A [`Simulation`] is built from a user's [`Topology`] (or [`Plan`]) and run [`Config`], plus
//! [`SimOptions`] (seed, placement of tasks on workers, link latency, service times, restart and
//! partition durations, time limit, fault schedule). Each task is an [`Executor`] built by the
//! runtime itself from the component's own factory; the engine only carries
//! [`Envelope`]s between them over simulated links, gives each task a
//! service time per message, feeds ticks, and injects faults:
//!
//! - **Links.** Each ordered pair of workers is one link: a message's latency is drawn uniformly
//!   from the options' range (a fixed small latency inside one worker), and a link is FIFO (a
//!   message never arrives before one sent earlier on the same link), while messages on different
//!   links reorder freely. Message loss drops the next message sent between two workers; a
//!   partition drops everything sent between two workers until it heals.
//! - **Tasks.** A task handles one message at a time from its inbox, spending its service time;
//!   a spout with an empty inbox, below max spout pending, calls `next_tuple`; a call that emits
//!   nothing makes it idle until its next message or tick (Storm's empty-emit wait). Ticks go to
//!   spouts and ackers every tick interval of the [`Config`].
//! - **Crashes.** A crashed task's executor is dropped with its inbox; messages that arrive while
//!   it is down are lost; after the restart delay it is rebuilt from its component's factory
//!   with [`Plan::restart_executor`] (a restarted process draws new random ids).
//! - **Exceptions** are injected around a bolt's `execute`, from outside the bolt: *before* it
//!   runs, the input is failed (a `Fail` for each of its roots goes to the roots' ackers) and
//!   `execute` is not called; *after* it runs, every ack the bolt sent for the input's roots in
//!   that call becomes a fail (and a root it neither acked nor failed is failed), its emits
//!   having left — Storm's `FailedException` thrown before or after the emits.
//! - **Outages** of the outside world (source-outage, sink-outage) are handed to the user's hook
//!   ([`Simulation::outside_world`]) when they start and [`SimOptions::outage_ns`] later when
//!   they end; the engine then wakes the spouts and punctuates the sink bolts named there.
//!
//! The generic oracles of [`crate::oracle`] watch every spout from outside: the engine records
//! each tracked emit through the runtime's outbox and each `ack` / `fail` callback through a
//! wrapper around the spout instance. User invariants (closures over the user's own state) are
//! checked at the end and, if asked, after every event. Every executed event is folded into the
//! [`Trace`] hash.

use crate::fault::{
    self, ExpandContext, Fault, FaultError, FaultKind, FaultSpec, TargetCounts, Trigger,
};
use crate::oracle::{SpoutCallbacks, Unfinished, Violation, Watch};
use crate::queue::EventQueue;
use crate::rng::{self, SimRng};
use crate::roots::RootSet;
use crate::scenario::{rng_streams, PlantedBug, ScenarioError};
use crate::trace::Trace;
use acker_core::{AckerMessage, TaskId};
use acker_runtime::{
    Config, Envelope, Executor, ExecutorCounters, Message, MessageId, Notice, Outbox, Placement,
    Plan, Spout, SpoutOutputCollector, TaskKind, Topology, TopologyContext, Tuple, TupleAnchors,
    Values,
};
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Locks a mutex, taking the data even if a panic poisoned it (the simulator is single-threaded;
/// a poisoned lock only means an earlier panic, which already failed the run).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Most workers a simulation may place tasks on (links are a workers × workers matrix).
pub const MAX_WORKERS: u16 = 256;

/// How a simulation runs a topology, besides the topology's own [`Config`] (which gives the
/// message timeout T, the tick interval, max spout pending and the number of ackers).
///
/// Every duration here and in the [`Config`] is at most
/// [`MAX_DURATION_NS`](crate::units::MAX_DURATION_NS) (1,000,000 s), and with message timeouts
/// on the link latencies (`latency_max_ns`, `local_latency_ns`) are at most the message timeout:
/// [`Simulation::run`] refuses others with [`RunError::BadOption`] before anything runs (see
/// [`check_durations`]). Inside the run every `now + duration` saturates at `u64::MAX`, a time
/// past every time limit: "never within the run" (the bounds keep it from happening).
#[derive(Clone, Debug, PartialEq)]
pub struct SimOptions {
    /// The run's seed: every random choice comes from it (link latencies, fault draws, and the
    /// executors' seed, which replaces [`Config::seed`]).
    pub seed: u64,
    /// The worker of every task of the plan, in task-id order, ackers included; `None`: one
    /// worker per component in declaration order, then one worker for the ackers (present, and
    /// empty, with zero ackers), as the seed experiment placed them.
    pub placement: Option<Vec<u16>>,
    /// Latency between workers in ns: uniform in `latency_min_ns..=latency_max_ns`, drawn per
    /// message; FIFO on each link.
    pub latency_min_ns: u64,
    /// See `latency_min_ns`.
    pub latency_max_ns: u64,
    /// Latency between two tasks of the same worker, in ns.
    pub local_latency_ns: u64,
    /// Time a spout spends per `next_tuple` and per notice, in ns.
    pub spout_ns: u64,
    /// Time a bolt spends per input, in ns.
    pub bolt_ns: u64,
    /// Time an acker spends per message, in ns.
    pub acker_ns: u64,
    /// How long a crashed task or worker stays down before it is rebuilt, in ns.
    pub restart_delay_ns: u64,
    /// How long a partition lasts before it heals, in ns.
    pub partition_ns: u64,
    /// How long a source or sink outage lasts, in ns (see [`Simulation::outside_world`]).
    pub outage_ns: u64,
    /// Stop the run here even if the spouts are not done (a liveness violation,
    /// [`Violation::NotFinished`]); `None`: derived from the schedule and `input_len` (see
    /// [`time_limit_ns`]). `Some(0)` is refused. The limit is a simulated time, so it only
    /// stops a run whose clock advances: a run that keeps working at one instant is stopped by
    /// [`max_events_per_instant`](Self::max_events_per_instant) instead.
    pub time_limit_ns: Option<u64>,
    /// Most events the run executes at one simulated instant (deliveries, task steps, ticks,
    /// faults, restarts: the event loop's steps, not the trace's [`Outcome::events`], which also
    /// counts the sends and drops they cause). The event past it stops the run with a
    /// [`Violation::TimeStalled`] (the outcome is returned as usual, with the counters so far):
    /// with `spout_ns`, `bolt_ns`, `acker_ns` and the latencies at 0, a spout that never finishes
    /// keeps the clock at one instant forever, and the time limit would never be reached (as
    /// would a spout that emits untracked tuples without end at `spout_ns` 0, or any loop of
    /// zero-duration steps). `None`: derived from `input_len` (see [`events_per_instant_limit`]:
    /// 1,000,000 + 256 an input emit, far above the 8 or so a tree of the built-in experiment
    /// takes when every time is 0, and some 0.1 s of wall time at the default input of 1000);
    /// raise it for a topology whose input emits each fan out into more than about 200 events
    /// at one instant. `Some(0)` is refused ([`RunError::BadOption`]).
    pub max_events_per_instant: Option<u64>,
    /// The concrete fault schedule (see [`crate::fault`]). Targets index the tasks of their
    /// kind: spout crashes the spout tasks in task-id order, bolt crashes and exceptions the
    /// bolt tasks of `fault_bolts` in task-id order, acker crashes the ackers, worker crashes and
    /// partitions the workers.
    pub faults: Vec<Fault>,
    /// The bolt components faults may target; `None`: every bolt.
    pub fault_bolts: Option<Vec<String>>,
    /// The input's size in tracked emits: offset triggers (`@#n`: right after the `n+1`-th
    /// tracked emit of the run, all spouts together), rates per thousand tuples and the derived
    /// time limit are measured against it.
    pub input_len: u64,
    /// Spout components that declare themselves reliable (they re-emit a message id on fail):
    /// the at-least-once oracle checks every message id they emitted is acked in the end.
    pub reliable_spouts: Vec<String>,
    /// A test-only planted bug of the simulated system.
    pub planted_bug: Option<PlantedBug>,
    /// The topology's trees fail only because of a fault (its bolts never fail an input
    /// themselves): in a run where no fault fired, a `fail` callback whose tree the acker never
    /// reports completed is a [`Violation::FailedWithoutFault`] (an ack lost inside the system).
    /// Judged from what the spout receives: a tree that only took longer than the message
    /// timeout (the spout failed it at its timeout, and the acker's `Completed` notice for its
    /// root reached the spout later, counted ignored) is a late ack, not a lost one (until
    /// 2026-12-03 every `fail` was a violation, which `--timeout 1ms --tick 100us` tripped with
    /// no ack lost). A tree that outlived its acker entry is excused too: a message of the tree
    /// reached its acker 2T or more after the tree's emit (the acker expires an entry silently
    /// from 2T after its creation, which is no earlier than the emit, so its `Completed` may
    /// never come: the timeout the configuration asked for, not a lost ack; until 2026-12-03
    /// `--tuples 300 --timeout 300us --tick 100us` reported one). Judged only in a run that finished: one cut at its time limit or stalled is
    /// a [`Violation::NotFinished`] or [`Violation::TimeStalled`] already, and its failed trees
    /// might have completed later. The seed experiment's delivery guarantees say so: no fault, no
    /// tree failed.
    pub fails_only_under_faults: bool,
    /// Most replays a run may make: tracked spout emits beyond `input_len` (each replay of a
    /// failed or timed-out tree is one), and most failed or timed-out trees (each a replay
    /// owed). Every tracked emit keeps its records for the whole run
    /// (the oracle's, the source model's, the set of initialized root ids: about
    /// [`BYTES_PER_REPLAY`] bytes each), so a run whose trees time out faster than they complete
    /// (a message timeout below the trees' round trip under load, or a task down for longer than
    /// many timeouts) would grow its memory without bound; the emit past `input_len +` this
    /// limit, or the fail past it, ends the run with [`RunError::TooManyReplays`]. `None`: [`replay_limit`]'s default,
    /// the input's size but at least [`MIN_DEFAULT_REPLAYS`].
    pub max_replays: Option<u64>,
}

impl SimOptions {
    /// The seed experiment's defaults: default placement, 50–150 µs between workers, 1 µs inside
    /// one, spout 500 ns per call, bolts 2 µs per input, acker 200 ns per message, restarts after
    /// 1 s, partitions of 2 s, outages of 500 ms, derived time limit, no fault, every bolt a fault
    /// target, an input of 1000 emits, no spout declared reliable.
    pub fn new(seed: u64) -> Self {
        Self {
            seed,
            placement: None,
            latency_min_ns: 50_000,
            latency_max_ns: 150_000,
            local_latency_ns: 1_000,
            spout_ns: 500,
            bolt_ns: 2_000,
            acker_ns: 200,
            restart_delay_ns: 1_000_000_000,
            partition_ns: 2_000_000_000,
            outage_ns: 500_000_000,
            time_limit_ns: None,
            max_events_per_instant: None,
            faults: Vec::new(),
            fault_bolts: None,
            input_len: 1000,
            reliable_spouts: Vec::new(),
            planted_bug: None,
            fails_only_under_faults: false,
            max_replays: None,
        }
    }
}

/// The smallest default [`SimOptions::max_replays`]: 100 times the default max spout pending, far
/// above what a run's faults replay (each crash, partition or lost message replays at most the
/// trees pending at the time: the reliability experiment's worst cell, 5 acker crashes at 100,000
/// tuples, replays 5,000).
pub const MIN_DEFAULT_REPLAYS: u64 = 100_000;

/// Bytes of memory a run keeps per replay (a tracked emit beyond the input), rounded up from the
/// resident peak of a run whose every tree times out: `acker-sim run --seed 1 --timeout 200us
/// --tick 10us --time-limit 200ms` and `400ms` (`/usr/bin/time -v`: 121348 and 236580 KB for
/// 399425 and 799425 timed-out trees, 295 B a replay, before 2026-12-03's limit): the emit's
/// record in the source model and in the oracle, its root in the set of initialized roots, the
/// failed tree's record for `failed-without-fault`, and the growth slack of their vectors.
pub const BYTES_PER_REPLAY: u64 = 300;

/// The most replays a run may make ([`SimOptions::max_replays`]): the option if given, else
/// `input_len` but at least [`MIN_DEFAULT_REPLAYS`].
pub fn replay_limit(opts: &SimOptions) -> u64 {
    opts.max_replays
        .unwrap_or_else(|| opts.input_len.max(MIN_DEFAULT_REPLAYS))
}

/// The simulated time by which a run must have finished, when no limit is given: after the last
/// time-triggered fault (or 0), the outage duration per source or sink outage, a restart delay,
/// a partition, four message timeouts (a lost tuple is failed T to 2T after emit; its replay then
/// needs at most as long again), plus a time per
/// input tuple and three timeouts and a restart delay per fault. The time per tuple is the larger
/// of the processing bound (100 µs, or four bolt service times) and the throttling bound: with at
/// most max spout pending trees in flight, each tree's critical path (spout → bolt → sink, acks to
/// the acker, the decision back: six worker hops at the maximum link latency, plus every service
/// time on the way) is shared by at most max spout pending tuples.
pub fn time_limit_ns(opts: &SimOptions, message_timeout_ns: u64, max_spout_pending: usize) -> u64 {
    if let Some(t) = opts.time_limit_ns {
        return t;
    }
    let last_time = opts
        .faults
        .iter()
        .filter_map(|f| match f.trigger {
            Trigger::AtNs(t) => Some(t),
            Trigger::AtOffset(_) => None,
        })
        .max()
        .unwrap_or(0);
    let critical_path_ns = opts
        .latency_max_ns
        .saturating_mul(6)
        .saturating_add(opts.spout_ns)
        .saturating_add(opts.bolt_ns.saturating_mul(2))
        .saturating_add(opts.acker_ns.saturating_mul(2));
    let throttled = critical_path_ns.div_ceil(max_spout_pending.max(1) as u64);
    let per_tuple = 100_000u64
        .max(opts.bolt_ns.saturating_mul(4))
        .max(throttled);
    let outages = opts
        .faults
        .iter()
        .filter(|f| matches!(f.kind, FaultKind::SourceOutage | FaultKind::SinkOutage))
        .count() as u64;
    last_time
        .saturating_add(outages.saturating_mul(opts.outage_ns))
        .saturating_add(opts.restart_delay_ns)
        .saturating_add(opts.partition_ns)
        .saturating_add(message_timeout_ns.saturating_mul(4))
        .saturating_add(opts.input_len.saturating_mul(per_tuple))
        .saturating_add(
            (opts.faults.len() as u64)
                .saturating_mul(message_timeout_ns.saturating_mul(3))
                .saturating_add(opts.restart_delay_ns),
        )
}

/// The message for a link latency `ns` (option `what`) longer than the message timeout
/// `timeout_ns` ([`ScenarioError::LatencyAboveTimeout`], and [`RunError::BadOption`] from
/// [`Simulation::run`]).
pub fn latency_above_timeout(what: &str, ns: u64, timeout_ns: u64) -> String {
    format!(
        "{what} {} is longer than the message timeout {}: every tree crossing such a link would \
         time out and be replayed while its messages are still on the way, and the messages in \
         flight would grow with latency / timeout (memory without bound); give a longer timeout \
         or a shorter latency",
        crate::units::format_ns(ns),
        crate::units::format_ns(timeout_ns)
    )
}

/// Checks every duration of `opts` and `config` before a run: each at most
/// [`MAX_DURATION_NS`](crate::units::MAX_DURATION_NS) (`outage_ns` at most
/// [`reconnect_ns`](crate::scenario::reconnect_ns) of it, 1000001150ms: the longest scenario
/// outage as its clients see it), and, with message timeouts on, the link
/// latencies at most the message timeout (see [`ScenarioError::LatencyAboveTimeout`] for why).
///
/// # Errors
/// The message naming the first option out of range.
pub fn check_durations(opts: &SimOptions, config: &Config) -> Result<(), String> {
    use crate::units::check_max_duration;
    for (what, ns) in [
        ("message_timeout_ns", config.message_timeout_ns),
        ("tick_interval_ns", config.tick_interval_ns),
        ("latency_min_ns", opts.latency_min_ns),
        ("latency_max_ns", opts.latency_max_ns),
        ("local_latency_ns", opts.local_latency_ns),
        ("spout_ns", opts.spout_ns),
        ("bolt_ns", opts.bolt_ns),
        ("acker_ns", opts.acker_ns),
        ("restart_delay_ns", opts.restart_delay_ns),
        ("partition_ns", opts.partition_ns),
        ("time_limit_ns", opts.time_limit_ns.unwrap_or(0)),
    ] {
        check_max_duration(what, ns)?;
    }
    // The built-in experiment hands the engine its outage as the spout and sink see it, at
    // their next reconnect attempt (up to 2 s later): its longest is that of the longest
    // scenario outage.
    let max_outage = crate::scenario::reconnect_ns(crate::units::MAX_DURATION_NS);
    if opts.outage_ns > max_outage {
        return Err(format!(
            "outage_ns {} is longer than the longest outage taken, {} (the longest duration, \
             {}, seen at the next reconnect attempt)",
            crate::units::format_ns(opts.outage_ns),
            crate::units::format_ns(max_outage),
            crate::units::MAX_DURATION_TEXT
        ));
    }
    if config.enable_message_timeouts {
        for (what, ns) in [
            ("latency_max_ns", opts.latency_max_ns),
            ("local_latency_ns", opts.local_latency_ns),
        ] {
            if ns > config.message_timeout_ns {
                return Err(latency_above_timeout(what, ns, config.message_timeout_ns));
            }
        }
    }
    Ok(())
}

/// The smallest derived [`SimOptions::max_events_per_instant`], in events.
pub const MIN_EVENTS_PER_INSTANT: u64 = 1_000_000;

/// The derived [`SimOptions::max_events_per_instant`] grows by this many events per input emit
/// (`input_len`).
pub const EVENTS_PER_INSTANT_PER_EMIT: u64 = 256;

/// The most events a run executes at one simulated instant: `opts.max_events_per_instant` if
/// given, else [`MIN_EVENTS_PER_INSTANT`] + [`EVENTS_PER_INSTANT_PER_EMIT`] × `input_len`
/// (saturating at `u64::MAX`). With every service time and latency at 0 a whole finite run may
/// take place at one instant (the built-in experiment: about 8 events a tuple, so its 100,000,000
/// tuples, the command line's most, stay far below the bound); the bound stops a run that would
/// otherwise never leave an instant.
pub fn events_per_instant_limit(opts: &SimOptions) -> u64 {
    opts.max_events_per_instant.unwrap_or_else(|| {
        opts.input_len
            .saturating_mul(EVENTS_PER_INSTANT_PER_EMIT)
            .saturating_add(MIN_EVENTS_PER_INSTANT)
    })
}

/// Counters of one component, summed over its tasks and their incarnations.
#[derive(Clone, Debug, PartialEq)]
pub struct ComponentCounters {
    /// The component id (`__acker` for the ackers).
    pub component: String,
    /// The counters.
    pub counters: ExecutorCounters,
}

/// What one run produced.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The run's seed.
    pub seed: u64,
    /// Input tuples (the built-in experiment; `input_len` for a user topology).
    pub input: u64,
    /// Distinct positions in the sink's result (the built-in experiment only; 0 otherwise).
    pub distinct: u64,
    /// Positions missing from the sink's result (the built-in experiment only).
    pub lost: u64,
    /// Extra records in the sink's result (the built-in experiment only).
    pub duplicates: u64,
    /// Writes the exactly-once state absorbed (the built-in experiment only).
    pub absorbed: u64,
    /// The trace hash.
    pub trace_hash: u64,
    /// Events executed.
    pub events: u64,
    /// Messages delivered to a task.
    pub delivered: u64,
    /// Messages dropped (loss, partition, or a destination that was down).
    pub dropped: u64,
    /// The faults that fired, in order.
    pub fired: Vec<Fault>,
    /// Oracle and invariant violations.
    pub violations: Vec<Violation>,
    /// Simulated time at the end, in ns.
    pub end_ns: u64,
    /// Spout counters summed over every spout task and incarnation.
    pub spout: ExecutorCounters,
    /// Acker counters summed over every task and incarnation.
    pub acker: ExecutorCounters,
    /// Counters per component, in declaration order, then `__acker`.
    pub components: Vec<ComponentCounters>,
    /// Every spout component's callbacks, by message id: emits, acks and fails seen from outside
    /// the spout.
    pub callbacks: BTreeMap<String, SpoutCallbacks>,
    /// Exceptions injected around bolts' `execute`.
    pub exceptions: u64,
    /// Most roots any acker table held.
    pub max_acker_roots: usize,
    /// Most events scheduled at once.
    pub max_queue_len: usize,
}

impl Outcome {
    /// Whether no oracle or invariant was violated.
    pub fn ok(&self) -> bool {
        self.violations.is_empty()
    }

    /// The counters of component `id`, if it exists.
    pub fn component(&self, id: &str) -> Option<&ExecutorCounters> {
        self.components
            .iter()
            .find(|c| c.component == id)
            .map(|c| &c.counters)
    }
}

/// Why a run could not start (nothing has run when one is returned), or, for
/// [`RunError::TooManyReplays`] alone, why it was stopped, and [`RunError::Io`] why its trace
/// was not written.
#[derive(Debug)]
pub enum RunError {
    /// The scenario of the built-in experiment is invalid.
    Scenario(ScenarioError),
    /// The runtime refused the topology or config.
    Runtime(String),
    /// The trace file could not be written.
    Io(std::io::Error),
    /// A fault spec or option names a component the topology does not have (or not of the kind
    /// needed).
    UnknownComponent {
        /// What named it (the fault spec, or the option).
        what: String,
        /// The name given.
        component: String,
    },
    /// A fault spec names a task index beyond its component's parallelism.
    UnknownTask {
        /// The fault spec.
        fault: String,
        /// The component.
        component: String,
        /// The index given.
        index: usize,
        /// The component's number of tasks.
        tasks: usize,
    },
    /// The placement gives no worker to this task (it lists fewer workers than the plan has
    /// tasks).
    TaskWithoutWorker {
        /// The first task without a worker.
        task: TaskId,
        /// Its component.
        component: String,
        /// How many tasks the placement covers.
        placed: usize,
    },
    /// The time limit is 0.
    ZeroTimeLimit,
    /// An option is out of range; the text names it and the range.
    BadOption(String),
    /// A bad fault spec or schedule (a target beyond the topology, an offset past the input).
    Fault(FaultError),
    /// The run made more replays, or failed more trees (each a replay owed), than
    /// [`SimOptions::max_replays`] allows (the one error returned after the run started: it
    /// stopped at the emit or fail past the limit, since each failed tree and its replay keep
    /// [`BYTES_PER_REPLAY`] bytes until the end). Its trees time out and are replayed faster
    /// than they complete: a message timeout below the trees' round trip under load (max spout
    /// pending trees queue behind each bolt), or a task down for many timeouts.
    TooManyReplays {
        /// Fail callbacks (trees failed or timed out, each a replay owed) by then.
        failed: u64,
        /// Tracked spout emits made, the input's included.
        emits: u64,
        /// The input's size in tracked emits (`input_len`).
        input: u64,
        /// The replay limit ([`replay_limit`]).
        limit: u64,
        /// Simulated time of the emit past the limit, in ns.
        at_ns: u64,
        /// Trees the spouts timed out (their own message timeout) by then.
        timed_out: u64,
    },
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Scenario(e) => e.fmt(f),
            RunError::Runtime(e) => write!(f, "runtime refused the topology: {e}"),
            RunError::Io(e) => write!(f, "trace file: {e}"),
            RunError::UnknownComponent { what, component } => {
                write!(
                    f,
                    "{what}: the topology has no component `{component}` of that kind"
                )
            }
            RunError::UnknownTask {
                fault,
                component,
                index,
                tasks,
            } => write!(
                f,
                "{fault}: component `{component}` has {tasks} task(s) (0..={}), not {index}",
                tasks.saturating_sub(1)
            ),
            RunError::TaskWithoutWorker {
                task,
                component,
                placed,
            } => write!(
                f,
                "placement: task {task} of `{component}` has no worker (the placement covers \
                 {placed} task(s))"
            ),
            RunError::ZeroTimeLimit => f.write_str("the time limit must be positive"),
            RunError::BadOption(s) => f.write_str(s),
            RunError::Fault(e) => e.fmt(f),
            RunError::TooManyReplays {
                failed,
                emits,
                input,
                limit,
                at_ns,
                timed_out,
            } => write!(
                f,
                "the run failed or replayed more trees than its replay limit (--max-replays \
                 {limit}): {failed} trees failed or timed out ({timed_out} by the message \
                 timeout) and {emits} spout emits for an input of {input} by {:.6} s of simulated \
                 time; each failed tree and its replay keep about {BYTES_PER_REPLAY} B until the \
                 run ends, so the run was stopped here. Its trees time out faster than they complete: give a \
                 longer message timeout (--timeout), a lower --max-spout-pending (trees queue \
                 behind each bolt), shorter link latencies (--latency) or a shorter restart delay \
                 (--restart-delay); or raise --max-replays",
                *at_ns as f64 / 1e9
            ),
        }
    }
}

impl std::error::Error for RunError {}

impl From<FaultError> for RunError {
    fn from(e: FaultError) -> Self {
        RunError::Fault(e)
    }
}

/// A user invariant: a closure over the user's own state, `Err(why)` when violated.
pub type InvariantFn = Box<dyn FnMut() -> Result<(), String>>;

struct Invariant {
    name: String,
    every_event: bool,
    check: InvariantFn,
    failed: bool,
}

/// Called after every spout step: the highest input offset newly read, if any (the built-in
/// experiment's source log reports it; the default counts tracked emits).
pub type ProgressProbe = Box<dyn FnMut() -> Option<u64>>;

/// Told when a source or sink outage starts (`true`) and ends (`false`): the fault kind
/// ([`FaultKind::SourceOutage`] or [`FaultKind::SinkOutage`]), whether it is down, and the
/// simulated time in ns. Overlapping outages of one kind make one longer outage.
pub type OutageHook = Box<dyn FnMut(FaultKind, bool, u64)>;

/// The callbacks the spout wrappers saw since the engine last looked: (task, message id, acked).
///
/// The first one since the engine last looked sits in atomics, the rest in a locked `Vec`: a
/// spout step makes at most one callback in the common case (a notice), so most pushes and takes
/// touch no lock (until 2026-12-02 every callback went through the mutex, twice).
#[derive(Default)]
struct CallbackEntries {
    /// The first callback's message id, when `one` is set.
    one_id: AtomicU64,
    /// The first callback's task and outcome (`task << 1 | acked`), when `one` is set.
    one_meta: AtomicU32,
    /// A first callback is held in `one_id` / `one_meta`.
    one: AtomicBool,
    /// Callbacks after the first, in order.
    more: Mutex<Vec<(TaskId, MessageId, bool)>>,
    /// `more` is not empty (set and cleared under its lock).
    any_more: AtomicBool,
}

impl CallbackEntries {
    #[inline(always)]
    fn push(&self, (task, msg_id, acked): (TaskId, MessageId, bool)) {
        if !self.one.load(Ordering::Acquire) {
            self.one_id.store(msg_id, Ordering::Relaxed);
            self.one_meta
                .store(u32::from(task) << 1 | u32::from(acked), Ordering::Relaxed);
            self.one.store(true, Ordering::Release);
            return;
        }
        self.push_more((task, msg_id, acked));
    }

    #[inline(never)]
    fn push_more(&self, (task, msg_id, acked): (TaskId, MessageId, bool)) {
        let mut more = lock(&self.more);
        more.push((task, msg_id, acked));
        self.any_more.store(true, Ordering::Release);
    }

    /// Hands every callback held, in order, to `f`, and forgets them.
    #[inline(always)]
    fn take(&self, mut f: impl FnMut(TaskId, MessageId, bool)) {
        if !self.one.load(Ordering::Acquire) {
            return;
        }
        let meta = self.one_meta.load(Ordering::Relaxed);
        f(
            (meta >> 1) as TaskId,
            self.one_id.load(Ordering::Relaxed),
            meta & 1 == 1,
        );
        if self.any_more.load(Ordering::Acquire) {
            let mut more = lock(&self.more);
            self.any_more.store(false, Ordering::Release);
            for (t, msg_id, acked) in more.drain(..) {
                f(t, msg_id, acked);
            }
        }
        self.one.store(false, Ordering::Release);
    }
}

/// Shared by the spout wrappers and the engine.
type CallbackLog = Arc<CallbackEntries>;

/// Forwards every call to the user's spout, recording `ack` / `fail` for the oracles.
struct WatchedSpout {
    inner: Box<dyn Spout>,
    task: TaskId,
    log: CallbackLog,
}

impl Spout for WatchedSpout {
    fn open(&mut self, context: &TopologyContext) {
        self.task = context.task;
        self.inner.open(context);
    }
    fn next_tuple(&mut self, collector: &mut SpoutOutputCollector<'_>) {
        self.inner.next_tuple(collector);
    }
    fn ack(&mut self, msg_id: MessageId) {
        self.log.push((self.task, msg_id, true));
        self.inner.ack(msg_id);
    }
    fn fail(&mut self, msg_id: MessageId) {
        self.log.push((self.task, msg_id, false));
        self.inner.fail(msg_id);
    }
    fn close(&mut self) {
        self.inner.close();
    }
    fn is_done(&self) -> bool {
        self.inner.is_done()
    }
}

/// One simulation of a user topology, ready to [`run`](Self::run) (see the
/// [module docs](self)).
pub struct Simulation {
    topology: Topology,
    config: Config,
    opts: SimOptions,
    invariants: Vec<Invariant>,
    probe: Option<ProgressProbe>,
    trace_out: Option<Box<dyn std::io::Write>>,
    header: Option<Vec<u64>>,
    outage_hook: Option<OutageHook>,
    punctuate: Vec<String>,
}

impl Simulation {
    /// A simulation of `topology` under `config` and `opts`. The executors' seed
    /// ([`Config::seed`]) is derived from `opts.seed`; everything else of `config` is used as
    /// given. Nothing is checked until [`run`](Self::run) (or [`targets`](Self::targets)).
    pub fn new(topology: &Topology, config: &Config, opts: SimOptions) -> Self {
        Self {
            topology: topology.clone(),
            config: config.clone(),
            opts,
            invariants: Vec::new(),
            probe: None,
            trace_out: None,
            header: None,
            outage_hook: None,
            punctuate: Vec::new(),
        }
    }

    /// A simulation of `plan`'s topology and config (see [`new`](Self::new)). The plan is
    /// re-made from them with the simulation's executor seed, so a park capacity set with
    /// [`Plan::with_acker_park_capacity`] is not kept (the default is used).
    pub fn from_plan(plan: &Plan, opts: SimOptions) -> Self {
        Self::new(plan.topology(), plan.config(), opts)
    }

    /// The options.
    pub fn options(&self) -> &SimOptions {
        &self.opts
    }

    /// The options, to change before the run.
    pub fn options_mut(&mut self) -> &mut SimOptions {
        &mut self.opts
    }

    /// Replaces the fault schedule (a replay uses the seed and this schedule).
    pub fn with_schedule(mut self, faults: Vec<Fault>) -> Self {
        self.opts.faults = faults;
        self
    }

    /// Adds an invariant checked once, at the end of the run: `check` returns `Err(why)` when the
    /// user's state is wrong; it becomes [`Violation::Invariant`] named `name`.
    pub fn invariant(
        &mut self,
        name: &str,
        check: impl FnMut() -> Result<(), String> + 'static,
    ) -> &mut Self {
        self.invariants.push(Invariant {
            name: name.to_string(),
            every_event: false,
            check: Box::new(check),
            failed: false,
        });
        self
    }

    /// Adds an invariant checked after every event and at the end (reported once, at its first
    /// violation).
    pub fn invariant_every_event(
        &mut self,
        name: &str,
        check: impl FnMut() -> Result<(), String> + 'static,
    ) -> &mut Self {
        self.invariant(name, check);
        if let Some(i) = self.invariants.last_mut() {
            i.every_event = true;
        }
        self
    }

    /// Writes a text trace of every event to `out`.
    pub fn trace_to(&mut self, out: Box<dyn std::io::Write>) -> &mut Self {
        self.trace_out = Some(out);
        self
    }

    /// Replaces the default progress count (tracked emits) that offset triggers use.
    pub fn progress_probe(&mut self, probe: ProgressProbe) -> &mut Self {
        self.probe = Some(probe);
        self
    }

    /// Connects the outside world (the user's source and sink) to the outage faults:
    /// [`FaultKind::SourceOutage`] and [`FaultKind::SinkOutage`] call `hook` when they start and
    /// when they end, [`SimOptions::outage_ns`] later. When an outage ends, every spout task is
    /// woken (a spout that found the source down is polled again at once, as the real spout
    /// polls every few ms), and after a sink outage every task of the `punctuate` bolt
    /// components is sent one unanchored tuple with no values, from itself: the punctuation a
    /// batching sink commits on (the runtime's Redis spout emits one every 20 ms on its `flush`
    /// stream; bolts get no ticks). Without a hook the outage faults fire as no-ops.
    pub fn outside_world(&mut self, hook: OutageHook, punctuate: &[&str]) -> &mut Self {
        self.outage_hook = Some(hook);
        self.punctuate = punctuate.iter().map(|s| s.to_string()).collect();
        self
    }

    /// Replaces the trace's first event (the built-in experiment hashes its scenario there).
    pub fn trace_header(&mut self, words: Vec<u64>) -> &mut Self {
        self.header = Some(words);
        self
    }

    fn plan(&self) -> Result<Plan, RunError> {
        let mut config = self.config.clone();
        config.seed = rng::derive_seed(self.opts.seed, rng_streams::EXECUTORS);
        self.topology
            .plan(&config)
            .map_err(|e| RunError::Runtime(e.to_string()))
    }

    /// The fault targets of this topology: spout tasks, bolt tasks of the fault bolts, ackers,
    /// workers.
    ///
    /// # Errors
    /// As [`run`](Self::run), for the placement and the options naming components.
    pub fn targets(&self) -> Result<TargetCounts, RunError> {
        let plan = self.plan()?;
        let t = Targets::new(&plan, &self.opts)?;
        Ok(t.counts())
    }

    /// `faults` in the `--faults` syntax with crash and exception targets named
    /// `component.index` (e.g. `bolt-crash@#0:count.1`), which
    /// [`set_fault_specs`](Self::set_fault_specs) reads back to the same schedule.
    ///
    /// # Errors
    /// As [`targets`](Self::targets).
    pub fn format_schedule(&self, faults: &[Fault]) -> Result<String, RunError> {
        let plan = self.plan()?;
        let targets = Targets::new(&plan, &self.opts)?;
        let name = |task: TaskId| {
            plan.tasks()
                .get(task as usize)
                .map(|i| format!("{}.{}", i.component, i.index))
        };
        Ok(faults
            .iter()
            .map(|f| {
                let pool = match f.kind {
                    FaultKind::SpoutCrash => Some(&targets.spouts),
                    FaultKind::BoltCrash
                    | FaultKind::BoltExceptionBeforeEmit
                    | FaultKind::BoltExceptionAfterEmit => Some(&targets.bolts),
                    _ => None,
                };
                match pool
                    .and_then(|p| p.get(f.target as usize))
                    .and_then(|&t| name(t))
                {
                    Some(n) => format!("{}@{}:{n}", f.kind, f.trigger),
                    None => f.to_string(),
                }
            })
            .collect::<Vec<_>>()
            .join(","))
    }

    /// Expands `--faults` text into the concrete schedule (replacing it), drawing rate times and
    /// targets from the seed. A target may name a component (`bolt-crash@1s:count` is its task
    /// 0, `:count.2` its task 2) as well as give an index among the tasks of the kind.
    /// Rate-per-second faults are drawn over `0..fault_until_ns`.
    ///
    /// # Errors
    /// [`RunError::UnknownComponent`] / [`RunError::UnknownTask`] for a name the topology does
    /// not have, [`RunError::Fault`] for a bad spec, plus the errors of [`targets`](Self::targets).
    pub fn set_fault_specs(&mut self, text: &str, fault_until_ns: u64) -> Result<(), RunError> {
        let plan = self.plan()?;
        let targets = Targets::new(&plan, &self.opts)?;
        let mut specs = Vec::new();
        let items = acker_runtime::cli::list_items(text).map_err(FaultError::EmptyItem)?;
        for item in items {
            if item == "none" {
                continue;
            }
            let resolved = match item.split_once(':') {
                Some((head, t)) if t.starts_with(|c: char| c.is_ascii_alphabetic()) => {
                    let kind: FaultKind =
                        head.split(['@', '*', '~']).next().unwrap_or(head).parse()?;
                    let index = targets.resolve(&plan, item, kind, t)?;
                    format!("{head}:{index}")
                }
                _ => item.to_string(),
            };
            specs.push(resolved.parse::<FaultSpec>()?);
        }
        self.expand(&specs, &targets, fault_until_ns)
    }

    /// Swarm mode: a random subset of fault kinds with random weights drawn from the seed, at
    /// `per_kilo_tuple` faults per thousand emits of `input_len` (see
    /// [`fault::swarm_specs`]), expanded into the schedule.
    ///
    /// # Errors
    /// As [`targets`](Self::targets).
    pub fn set_swarm_faults(&mut self, per_kilo_tuple: f64) -> Result<(), RunError> {
        let plan = self.plan()?;
        let targets = Targets::new(&plan, &self.opts)?;
        let specs = fault::swarm_specs(
            &mut rng::stream(self.opts.seed, rng_streams::SWARM),
            per_kilo_tuple,
        );
        self.expand(&specs, &targets, 0)
    }

    fn expand(
        &mut self,
        specs: &[FaultSpec],
        targets: &Targets,
        fault_until_ns: u64,
    ) -> Result<(), RunError> {
        let ctx = ExpandContext {
            tuples: self.opts.input_len,
            repeat_gap_ns: self.config.message_timeout_ns.saturating_mul(3),
            fault_until_ns,
            targets: targets.counts(),
        };
        let mut r = rng::stream(self.opts.seed, rng_streams::FAULTS);
        self.opts.faults = fault::expand(specs, &ctx, &mut r)?;
        Ok(())
    }

    /// Runs the simulation to its end (every spout done and nothing in flight, or the time
    /// limit, or [`SimOptions::max_events_per_instant`] events at one simulated instant) and
    /// checks the oracles and invariants. It always returns: a run that reaches its time limit
    /// reports [`Violation::NotFinished`], one whose clock stopped advancing (every step of some
    /// loop taking 0 ns) [`Violation::TimeStalled`].
    ///
    /// # Errors
    /// Before anything runs: [`RunError::ZeroTimeLimit`], [`RunError::TaskWithoutWorker`],
    /// [`RunError::UnknownComponent`] (an option naming a component the topology lacks),
    /// [`RunError::Fault`] (a fault target beyond the topology), [`RunError::BadOption`] (latency
    /// range empty, a service time not below the message timeout, a tick below 1 µs, a worker
    /// past [`MAX_WORKERS`], `max_events_per_instant` or `max_replays` of 0), [`RunError::Runtime`] if the runtime refuses the config. After the
    /// run, [`RunError::Io`] if the trace could not be written. During the run,
    /// [`RunError::TooManyReplays`] when its replays pass [`SimOptions::max_replays`] (the run
    /// stops there).
    pub fn run(self) -> Result<Outcome, RunError> {
        // acker-core's and the runtime's plants are process-wide: select this run's (or none).
        #[cfg(feature = "planted-bugs")]
        acker_core::planted::select(self.opts.planted_bug.and_then(PlantedBug::core_plant));
        if let Some(b) = self.opts.planted_bug.filter(|b| !b.available()) {
            return Err(RunError::BadOption(b.needs_feature()));
        }
        let mut engine = Engine::new(self)?;
        let outcome = engine.execute();
        engine.trace.finish().map_err(RunError::Io)?;
        if let Some(at_ns) = engine.over_emits {
            return Err(RunError::TooManyReplays {
                failed: engine.fails_seen,
                emits: engine.emits_seen,
                input: engine.opts.input_len,
                limit: replay_limit(&engine.opts),
                at_ns,
                timed_out: outcome.spout.timed_out,
            });
        }
        Ok(outcome)
    }
}

/// Which tasks each fault kind targets.
struct Targets {
    spouts: Vec<TaskId>,
    bolts: Vec<TaskId>,
    ackers: std::ops::Range<TaskId>,
    workers: u16,
    worker_of: Vec<u16>,
}

impl Targets {
    fn new(plan: &Plan, opts: &SimOptions) -> Result<Self, RunError> {
        let infos = plan.tasks();
        let components = plan.topology().component_ids();
        let worker_of: Vec<u16> = match &opts.placement {
            Some(p) => {
                if let Some(info) = infos.get(p.len()) {
                    return Err(RunError::TaskWithoutWorker {
                        task: info.task,
                        component: info.component.clone(),
                        placed: p.len(),
                    });
                }
                if let Some(&w) = p.iter().find(|&&w| w >= MAX_WORKERS) {
                    return Err(RunError::BadOption(format!(
                        "placement: worker {w} is past the last worker {}",
                        MAX_WORKERS - 1
                    )));
                }
                p[..infos.len()].to_vec()
            }
            None => infos
                .iter()
                .map(|i| match i.kind {
                    TaskKind::Acker => components.len() as u16,
                    _ => components
                        .iter()
                        .position(|c| *c == i.component)
                        .unwrap_or(0) as u16,
                })
                .collect(),
        };
        let default_workers = components.len() as u16 + 1;
        let workers = match &opts.placement {
            Some(_) => worker_of.iter().max().map_or(1, |&w| w + 1),
            None => default_workers,
        };
        if let Some(names) = &opts.fault_bolts {
            for n in names {
                if !infos
                    .iter()
                    .any(|i| i.kind == TaskKind::Bolt && i.component == *n)
                {
                    return Err(RunError::UnknownComponent {
                        what: "fault_bolts".into(),
                        component: n.clone(),
                    });
                }
            }
        }
        for n in &opts.reliable_spouts {
            if !infos
                .iter()
                .any(|i| i.kind == TaskKind::Spout && i.component == *n)
            {
                return Err(RunError::UnknownComponent {
                    what: "reliable_spouts".into(),
                    component: n.clone(),
                });
            }
        }
        let spouts = infos
            .iter()
            .filter(|i| i.kind == TaskKind::Spout)
            .map(|i| i.task)
            .collect();
        let bolts = infos
            .iter()
            .filter(|i| {
                i.kind == TaskKind::Bolt
                    && opts
                        .fault_bolts
                        .as_ref()
                        .is_none_or(|n| n.contains(&i.component))
            })
            .map(|i| i.task)
            .collect();
        Ok(Self {
            spouts,
            bolts,
            ackers: plan.acker_tasks(),
            workers,
            worker_of,
        })
    }

    fn counts(&self) -> TargetCounts {
        TargetCounts {
            spouts: self.spouts.len() as u16,
            bolts: self.bolts.len() as u16,
            ackers: self.ackers.len() as u16,
            workers: self.workers,
        }
    }

    /// The index among `kind`'s targets of the task named `name` (`component` or
    /// `component.index`) in fault spec `item`.
    fn resolve(
        &self,
        plan: &Plan,
        item: &str,
        kind: FaultKind,
        name: &str,
    ) -> Result<u16, RunError> {
        let (component, index) = match name.rsplit_once('.') {
            Some((c, i)) => match i.parse::<usize>() {
                Ok(i) => (c, i),
                Err(_) => (name, 0),
            },
            None => (name, 0),
        };
        let pool = match kind {
            FaultKind::SpoutCrash => &self.spouts,
            FaultKind::BoltCrash
            | FaultKind::BoltExceptionBeforeEmit
            | FaultKind::BoltExceptionAfterEmit => &self.bolts,
            _ => {
                return Err(RunError::UnknownComponent {
                    what: format!("fault `{item}` ({kind} takes an index, not a name)"),
                    component: component.to_string(),
                })
            }
        };
        let tasks: Vec<TaskId> = plan
            .tasks()
            .iter()
            .filter(|i| i.component == component && pool.contains(&i.task))
            .map(|i| i.task)
            .collect();
        if tasks.is_empty() {
            return Err(RunError::UnknownComponent {
                what: format!("fault `{item}`"),
                component: component.to_string(),
            });
        }
        let Some(&task) = tasks.get(index) else {
            return Err(RunError::UnknownTask {
                fault: format!("fault `{item}`"),
                component: component.to_string(),
                index,
                tasks: tasks.len(),
            });
        };
        Ok(pool.iter().position(|&t| t == task).unwrap_or(0) as u16)
    }
}

#[derive(Clone, Copy, Debug)]
enum Ev {
    /// The head message of link `l` arrives.
    Link(u32),
    Process {
        task: TaskId,
        inc: u32,
    },
    Tick {
        task: TaskId,
        inc: u32,
    },
    Fault(u32),
    Restart {
        task: TaskId,
    },
    Heal {
        a: u16,
        b: u16,
    },
    /// An outage of the source (`sink == false`) or sink ends.
    OutageEnd {
        sink: bool,
    },
}

/// Who sent the message in a slab slot, to whom, and whether the slot holds one; and the slot's
/// place in the one FIFO it is on (its link's while in flight, then its task's inbox).
#[derive(Clone, Copy)]
struct SlotMeta {
    from: TaskId,
    dest: TaskId,
    live: bool,
    /// The next slot on the same FIFO (unused at its tail) or on the free list.
    next: u32,
    /// Arrival time at its destination (set when it is put on its link).
    arrival: u64,
}

/// No slot: the end of a [`Fifo`].
const NIL: u32 = u32::MAX;

/// A FIFO of slab slots linked through their [`SlotMeta::next`]: a message is on one FIFO at a
/// time (its link's, then its task's inbox), so the slot carries the link and no `VecDeque`
/// of indices is kept beside the slab.
#[derive(Clone, Copy, Debug)]
struct Fifo {
    head: u32,
    tail: u32,
}

impl Fifo {
    const EMPTY: Fifo = Fifo {
        head: NIL,
        tail: NIL,
    };

    #[inline(always)]
    fn is_empty(&self) -> bool {
        self.head == NIL
    }

    /// Appends slot `idx` (its `next` is left as it is: the tail's is never read).
    #[inline(always)]
    fn push(&mut self, meta: &mut [SlotMeta], idx: u32) {
        if self.tail == NIL {
            self.head = idx;
        } else {
            meta[self.tail as usize].next = idx;
        }
        self.tail = idx;
    }

    /// Takes the first slot.
    #[inline(always)]
    fn pop(&mut self, meta: &[SlotMeta]) -> Option<u32> {
        let idx = self.head;
        if idx == NIL {
            return None;
        }
        if idx == self.tail {
            *self = Self::EMPTY;
        } else {
            self.head = meta[idx as usize].next;
        }
        Some(idx)
    }
}

/// What a vacant slab slot holds: a message with nothing to drop. The slot's [`SlotMeta::live`]
/// says whether it holds a message, never this value (ticks are handed to executors directly and
/// never enter the slab).
const VACANT: Message = Message::Tick;

/// Where an injected bolt exception strikes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ExceptionPoint {
    Before,
    After,
}

struct TaskState {
    kind: TaskKind,
    component: usize,
    worker: u16,
    exec: Option<Executor>,
    incarnation: u32,
    /// Slab slots of delivered messages waiting to be handled, in delivery order.
    inbox: Fifo,
    busy_until: u64,
    scheduled: bool,
    /// A spout whose last `next_tuple` emitted nothing: not polled again until a message or tick.
    idle: bool,
    retired: ExecutorCounters,
    service_ns: u64,
    restart_pending: bool,
    armed: VecDeque<ExceptionPoint>,
}

// Trace event codes.
const T_SEND: u64 = 1;
const T_DELIVER: u64 = 2;
const T_DROP: u64 = 3;
const T_FAULT: u64 = 4;
const T_RESTART: u64 = 5;
const T_EMIT: u64 = 6;
const T_TICK: u64 = 7;
const T_HEAL: u64 = 8;
const T_OUTAGE_END: u64 = 9;

// Drop reasons.
const DROP_LOSS: u64 = 1;
const DROP_PARTITION: u64 = 2;
const DROP_DOWN: u64 = 3;
const DROP_CRASH_INBOX: u64 = 4;

/// The running simulation.
struct Engine {
    opts: SimOptions,
    plan: Plan,
    placement: Placement,
    targets: Targets,
    components: Vec<String>,
    tasks: Vec<TaskState>,
    queue: EventQueue<Ev>,
    /// Messages sent and not yet handled or dropped, by slab index ([`VACANT`] in a free slot).
    /// The message itself, not an `Option` or a struct around it, so that a step moves it out
    /// with `mem::replace` straight into the executor's argument (one 144-byte copy, not two).
    slab: Vec<Message>,
    /// Sender, destination and occupancy of each slab slot.
    slab_meta: Vec<SlotMeta>,
    /// Free slab slots, last freed first, linked through their [`SlotMeta::next`] ([`NIL`]:
    /// none; a new slot is pushed then).
    free: u32,
    workers: usize,
    link_last: Vec<u64>,
    /// Messages in flight on each link, in arrival order (each slot holds its arrival time).
    /// Only each link's head is in the event queue, which keeps the queue a few dozen events
    /// long.
    link_queue: Vec<Fifo>,
    partitioned: Vec<u32>,
    drop_next: u64,
    link_rng: SimRng,
    trace: Trace,
    header: Vec<u64>,
    now: u64,
    /// The outbox every executor writes to (recording tracked emits), built with the engine;
    /// `execute` takes it out and passes it down the step functions as an argument.
    out: Outbox,
    offset_faults: VecDeque<u32>,
    fired: Vec<Fault>,
    in_flight: u64,
    queued: u64,
    restarts_pending: u32,
    delivered: u64,
    dropped: u64,
    violations: Vec<Violation>,
    /// Every root id an init was sent for (membership only, never iterated, so its hasher
    /// cannot reach an output): a second init of one root id is an invariant violation.
    inited_roots: RootSet,
    /// Whether that violation was reported (once a run).
    root_reuse_reported: bool,
    max_acker_roots: usize,
    acker_capacity: usize,
    max_queue_len: usize,
    bug_armed: bool,
    armed_total: u64,
    exceptions: u64,
    watch: Watch,
    callbacks: CallbackLog,
    invariants: Vec<Invariant>,
    every_event: bool,
    probe: Option<ProgressProbe>,
    emits_seen: u64,
    /// Fail callbacks (failed or timed-out trees) so far: replays owed.
    fails_seen: u64,
    tick_ns: u64,
    num_ackers: usize,
    outage_hook: Option<OutageHook>,
    /// Outages of the source and of the sink going on now.
    outages: [u32; 2],
    /// Bolt tasks punctuated after a sink outage.
    punctuate: Vec<TaskId>,
    /// [`SimOptions::fails_only_under_faults`]: the `fail` callbacks are followed up below.
    judge_fails: bool,
    /// Trees whose spout got a `fail`, by root id, with the spout task, the message id and the
    /// time 2T after the tree's emit, until the acker's `Completed` notice for the root reaches
    /// the spout (a late ack) or an acker handles a message of the tree at or after that time
    /// (the tree outlived its acker entry, which may expire from 2T after its creation, itself
    /// no earlier than the emit): the entry is removed then. What is left at the end failed
    /// without completing, within 2T of its emit. Only kept while no fault fired (the judgment
    /// is made only then).
    failed_roots: BTreeMap<u64, (TaskId, MessageId, u64)>,
    /// The message timeout T in ns (for [`Engine::failed_roots`]' 2T).
    timeout_ns: u64,
    /// Tracked emits past which the run stops with [`RunError::TooManyReplays`]: `input_len` +
    /// [`replay_limit`].
    emit_limit: u64,
    /// When the emits passed `emit_limit`, in simulated ns (the run stops after that event).
    over_emits: Option<u64>,
    /// `fail` callbacks that decided no emit (their root is unknown), by spout task and message
    /// id: never excused.
    failed_unknown: Vec<(TaskId, MessageId)>,
}

/// Folds message `m` into the trace as one event: its kind and fields, a tuple's first value and
/// up to 7 anchor pairs (the words are the trace's canonical encoding; see [`crate::trace`]).
fn trace_msg(trace: &mut Trace, m: &Message) {
    match m {
        Message::Tuple(t) => {
            trace.event(&[
                1 | (t.stream as u64) << 8 | (t.source_task as u64) << 24,
                t.values.first().and_then(|v| v.as_int()).unwrap_or(-1) as u64,
            ]);
            for &(r, e) in t.anchors.pairs().iter().take(7) {
                trace.extend(&[r, e]);
            }
        }
        Message::Acker(a) => match *a {
            AckerMessage::Init {
                root,
                xor,
                spout_task,
            } => trace.event(&[2 | (spout_task as u64) << 8, root, xor]),
            AckerMessage::Ack { root, xor } => trace.event(&[3, root, xor]),
            AckerMessage::Fail { root } => trace.event(&[4, root]),
            AckerMessage::ResetTimeout { root } => trace.event(&[5, root]),
        },
        Message::Notice(n) => match *n {
            Notice::Completed { root } => trace.event(&[6, root]),
            Notice::Failed { root } => trace.event(&[7, root]),
            Notice::Reset { root } => trace.event(&[8, root]),
        },
        Message::Tick => trace.event(&[9]),
    }
}

impl Engine {
    fn new(sim: Simulation) -> Result<Self, RunError> {
        let opts = sim.opts;
        if opts.time_limit_ns == Some(0) {
            return Err(RunError::ZeroTimeLimit);
        }
        if opts.max_events_per_instant == Some(0) {
            return Err(RunError::BadOption(
                "max_events_per_instant must be at least 1 (an instant with no event cannot run)"
                    .into(),
            ));
        }
        if opts.max_replays == Some(0) {
            return Err(RunError::BadOption(
                "max_replays must be at least 1 (a run could not replay even one lost tree)".into(),
            ));
        }
        if opts.latency_min_ns > opts.latency_max_ns {
            return Err(RunError::BadOption(
                "link latency: the minimum must not exceed the maximum".into(),
            ));
        }
        check_durations(&opts, &sim.config).map_err(RunError::BadOption)?;
        if sim.config.tick_interval_ns < 1_000 {
            return Err(RunError::BadOption(
                "the tick interval must be at least 1us".into(),
            ));
        }
        for (cost, what) in [
            (opts.spout_ns, "spout_ns"),
            (opts.bolt_ns, "bolt_ns"),
            (opts.acker_ns, "acker_ns"),
        ] {
            if sim.config.enable_message_timeouts && cost >= sim.config.message_timeout_ns {
                return Err(RunError::BadOption(format!(
                    "{what} must be shorter than the message timeout"
                )));
            }
        }
        let log: CallbackLog = Arc::default();
        let wrap_log = log.clone();
        let topology = sim
            .topology
            .with_spout_wrapper(Arc::new(move |inner| -> Box<dyn Spout> {
                Box::new(WatchedSpout {
                    inner,
                    task: 0,
                    log: wrap_log.clone(),
                })
            }));
        let mut config = sim.config.clone();
        config.seed = rng::derive_seed(opts.seed, rng_streams::EXECUTORS);
        let plan = topology
            .plan(&config)
            .map_err(|e| RunError::Runtime(e.to_string()))?;
        let targets = Targets::new(&plan, &opts)?;
        fault::check_schedule(&opts.faults, &targets.counts(), opts.input_len)?;
        let components = plan.topology().component_ids();
        let infos = plan.tasks().to_vec();
        let placement = Placement::from_workers(targets.worker_of.clone());
        let tasks = infos
            .iter()
            .map(|info| TaskState {
                kind: info.kind,
                component: components
                    .iter()
                    .position(|c| *c == info.component)
                    .unwrap_or(components.len()),
                worker: targets.worker_of[info.task as usize],
                exec: None,
                incarnation: 0,
                inbox: Fifo::EMPTY,
                busy_until: 0,
                scheduled: false,
                idle: false,
                retired: ExecutorCounters::default(),
                service_ns: match info.kind {
                    TaskKind::Spout => opts.spout_ns,
                    TaskKind::Bolt => opts.bolt_ns,
                    TaskKind::Acker => opts.acker_ns,
                },
                restart_pending: false,
                armed: VecDeque::new(),
            })
            .collect();
        let w = targets.workers as usize;
        let acker_capacity = plan.acker_capacity_roots();
        let bound_ns = config
            .timeout_ns()
            .map(|t| t.saturating_mul(2).saturating_add(config.tick_interval_ns));
        let watch = Watch::new(&plan, &opts.reliable_spouts, bound_ns);
        let header = sim.header.unwrap_or_else(|| {
            vec![
                opts.seed,
                infos.len() as u64,
                config.num_ackers as u64,
                config.message_timeout_ns,
                config.tick_interval_ns,
                config.max_spout_pending.map_or(0, |m| m as u64),
                opts.latency_min_ns,
                opts.latency_max_ns,
                opts.local_latency_ns,
                opts.spout_ns,
                opts.bolt_ns,
                opts.acker_ns,
                opts.restart_delay_ns,
                opts.partition_ns,
                opts.faults.len() as u64,
            ]
        });
        let every_event = sim.invariants.iter().any(|i| i.every_event);
        let mut punctuate = Vec::new();
        for name in &sim.punctuate {
            let tasks: Vec<TaskId> = infos
                .iter()
                .filter(|i| i.kind == TaskKind::Bolt && i.component == *name)
                .map(|i| i.task)
                .collect();
            if tasks.is_empty() {
                return Err(RunError::UnknownComponent {
                    what: "outside_world (bolts to punctuate)".into(),
                    component: name.clone(),
                });
            }
            punctuate.extend(tasks);
        }
        let mut out = Outbox::with_capacity(16);
        out.record_tracked_emits();
        Ok(Self {
            link_rng: rng::stream(opts.seed, rng_streams::LINKS),
            tick_ns: config.tick_interval_ns,
            num_ackers: config.num_ackers,
            bug_armed: opts.planted_bug == Some(PlantedBug::AckerAcksFirstFailure),
            plan,
            placement,
            targets,
            components,
            tasks,
            queue: EventQueue::new(),
            slab: Vec::new(),
            slab_meta: Vec::new(),
            free: NIL,
            workers: w,
            link_last: vec![0; w * w],
            link_queue: vec![Fifo::EMPTY; w * w],
            partitioned: vec![0; w * w],
            drop_next: 0,
            trace: Trace::new(sim.trace_out),
            header,
            now: 0,
            out,
            offset_faults: VecDeque::new(),
            fired: Vec::new(),
            in_flight: 0,
            queued: 0,
            restarts_pending: 0,
            delivered: 0,
            dropped: 0,
            violations: Vec::new(),
            // Presized for one root per input tuple (replays add more; the set grows then).
            inited_roots: RootSet::with_capacity(
                usize::try_from(opts.input_len).unwrap_or(0).min(1 << 24),
            ),
            root_reuse_reported: false,
            max_acker_roots: 0,
            acker_capacity,
            max_queue_len: 0,
            armed_total: 0,
            exceptions: 0,
            watch,
            callbacks: log,
            invariants: sim.invariants,
            every_event,
            probe: sim.probe,
            emits_seen: 0,
            fails_seen: 0,
            outage_hook: sim.outage_hook,
            outages: [0, 0],
            punctuate,
            judge_fails: opts.fails_only_under_faults,
            failed_roots: BTreeMap::new(),
            failed_unknown: Vec::new(),
            timeout_ns: config.message_timeout_ns,
            emit_limit: opts.input_len.saturating_add(replay_limit(&opts)),
            over_emits: None,
            opts,
        })
    }

    fn execute(&mut self) -> Outcome {
        let header = std::mem::take(&mut self.header);
        self.trace.event(&header);
        // Start every task, schedule time-triggered faults, remember offset-triggered ones.
        for t in 0..self.tasks.len() {
            self.start_task(t as TaskId);
        }
        let mut offset_faults: Vec<(u64, u32)> = Vec::new();
        for (i, f) in self.opts.faults.iter().enumerate() {
            match f.trigger {
                Trigger::AtNs(t) => {
                    self.queue.push(t, Ev::Fault(i as u32));
                }
                Trigger::AtOffset(o) => offset_faults.push((o, i as u32)),
            }
        }
        offset_faults.sort();
        self.offset_faults = offset_faults.into_iter().map(|(_, i)| i).collect();
        let config = self.plan.config();
        let limit = time_limit_ns(
            &self.opts,
            config.message_timeout_ns,
            config.pending_capacity(),
        );
        let per_instant = events_per_instant_limit(&self.opts);
        // Events run at the instant `self.now` so far; past `per_instant` the run stops.
        let mut at_instant = 0u64;
        let mut stalled = false;
        let mut finished = false;
        // The outbox travels as an argument from here down, not as a field, so that
        // `after_step` can send each envelope as it drains them (see there).
        let mut outbox = std::mem::take(&mut self.out);
        let out = &mut outbox;
        while let Some((t, ev)) = self.queue.pop() {
            self.max_queue_len = self.max_queue_len.max(self.queue.len() + 1);
            if t > limit {
                break;
            }
            if t == self.now {
                at_instant += 1;
                if at_instant > per_instant {
                    // Simulated time stopped advancing: the time limit would never be reached.
                    stalled = true;
                    break;
                }
            } else {
                // Checked as the clock moves on, not after every event (a load and a branch
                // less per event): the events left at the instant the limit was passed still
                // run (at most `per_instant` of them, so the overshoot is bounded too).
                if self.over_emits.is_some() {
                    break;
                }
                at_instant = 1;
            }
            self.now = t;
            match ev {
                Ev::Link(l) => {
                    let q = &mut self.link_queue[l as usize];
                    let head = q.pop(&self.slab_meta);
                    if !q.is_empty() {
                        let next = self.slab_meta[q.head as usize].arrival;
                        self.queue.push(next, Ev::Link(l));
                    }
                    if let Some(idx) = head {
                        self.on_deliver(idx, out);
                    }
                }
                Ev::Process { task, inc } => self.on_process(task, inc, out),
                Ev::Tick { task, inc } => self.on_tick(task, inc, out),
                Ev::Fault(i) => self.fire(i, out),
                Ev::Restart { task } => self.on_restart(task),
                Ev::OutageEnd { sink } => self.on_outage_end(sink),
                Ev::Heal { a, b } => {
                    self.trace.event(&[self.now, T_HEAL, a as u64, b as u64]);
                    if self.trace.writing() {
                        let now = self.now;
                        self.trace
                            .line(format_args!("{now} partition {a}-{b} heals"));
                    }
                    let w = self.workers;
                    let (a, b) = (a as usize, b as usize);
                    self.partitioned[a * w + b] = self.partitioned[a * w + b].saturating_sub(1);
                    self.partitioned[b * w + a] = self.partitioned[b * w + a].saturating_sub(1);
                }
            }
            if self.every_event {
                self.check_invariants(true);
            }
            if self.in_flight == 0
                && self.queued == 0
                && self.restarts_pending == 0
                && self.spouts_done()
            {
                finished = true;
                break;
            }
        }
        self.out = outbox;
        let stalled = stalled.then_some(per_instant);
        self.finish(finished, stalled, limit)
    }

    fn spouts_done(&self) -> bool {
        self.targets.spouts.iter().all(|&t| {
            self.tasks[t as usize]
                .exec
                .as_ref()
                .is_some_and(|e| e.is_done())
        })
    }

    fn check_invariants(&mut self, every_event_only: bool) {
        for inv in &mut self.invariants {
            if inv.failed || (every_event_only && !inv.every_event) {
                continue;
            }
            if let Err(message) = (inv.check)() {
                inv.failed = true;
                self.violations.push(Violation::Invariant {
                    name: inv.name.clone(),
                    at_ns: self.now,
                    message,
                });
            }
        }
    }

    /// The outcome of a run that ended `finished` (every spout done, nothing in flight), or
    /// stalled after `stalled` events at the instant `self.now`, or else at the time `limit`.
    fn finish(&mut self, finished: bool, stalled: Option<u64>, limit: u64) -> Outcome {
        let end = if finished || stalled.is_some() {
            self.now
        } else {
            limit
        };
        if let Some(events) = stalled {
            self.violations.push(Violation::TimeStalled {
                at_ns: self.now,
                events,
                uncommitted: self.watch.outstanding(),
                unfinished: Unfinished::EmitsUndecided,
            });
        } else if !finished {
            self.violations.push(Violation::NotFinished {
                limit_ns: limit,
                uncommitted: self.watch.outstanding(),
                unfinished: Unfinished::EmitsUndecided,
            });
        }
        self.now = end;
        self.check_invariants(false);
        self.violations.extend(self.watch.check_end(end));
        // Built once (it sorts every message id the spouts saw) for the check and the outcome.
        let callbacks = self.watch.callbacks();
        // Only in a run that finished: a run cut at its time limit, or stalled, is a liveness
        // violation already, and a tree failed in it may still have completed had it gone on
        // (new-user trial: `--timeout 300us --tick 100us` reported an ack lost beside the cut).
        if self.judge_fails && self.fired.is_empty() && finished {
            // The smallest message id per spout component among the fails never excused by a
            // late `Completed` notice (see `SimOptions::fails_only_under_faults`).
            let mut first: BTreeMap<&str, MessageId> = BTreeMap::new();
            let failed = self.failed_roots.values().map(|&(t, m, _)| (t, m));
            for (task, msg_id) in failed.chain(self.failed_unknown.iter().copied()) {
                let c = self.tasks[task as usize].component;
                if let Some(name) = self.components.get(c) {
                    let e = first.entry(name.as_str()).or_insert(msg_id);
                    *e = (*e).min(msg_id);
                }
            }
            for (component, msg_id) in first {
                self.violations.push(Violation::FailedWithoutFault {
                    component: component.to_string(),
                    msg_id,
                });
            }
        }
        let mut spout = ExecutorCounters::default();
        let mut acker = ExecutorCounters::default();
        let mut per: Vec<ComponentCounters> = self
            .components
            .iter()
            .map(|c| ComponentCounters {
                component: c.clone(),
                counters: ExecutorCounters::default(),
            })
            .collect();
        per.push(ComponentCounters {
            component: acker_runtime::ACKER_COMPONENT.to_string(),
            counters: ExecutorCounters::default(),
        });
        for t in &self.tasks {
            let mut c = t.retired;
            if let Some(e) = &t.exec {
                c.add(&e.counters());
            }
            match t.kind {
                TaskKind::Spout => spout.add(&c),
                TaskKind::Acker => acker.add(&c),
                TaskKind::Bolt => {}
            }
            let i = t.component.min(per.len() - 1);
            per[i].counters.add(&c);
        }
        Outcome {
            seed: self.opts.seed,
            input: self.opts.input_len,
            distinct: 0,
            lost: 0,
            duplicates: 0,
            absorbed: 0,
            trace_hash: self.trace.hash(),
            events: self.trace.events(),
            delivered: self.delivered,
            dropped: self.dropped,
            fired: self.fired.clone(),
            violations: self.violations.clone(),
            end_ns: end,
            spout,
            acker,
            components: per,
            callbacks,
            exceptions: self.exceptions,
            max_acker_roots: self.max_acker_roots,
            max_queue_len: self.max_queue_len,
        }
    }

    // ---- tasks ------------------------------------------------------------------------------

    fn build(&self, task: TaskId, incarnation: u32) -> Option<Executor> {
        let reuse = self.opts.planted_bug == Some(PlantedBug::RestartReusesSeed);
        let inc = if reuse { 0 } else { incarnation as u64 };
        self.plan.restart_executor(task, &self.placement, inc).ok()
    }

    fn start_task(&mut self, task: TaskId) {
        let t = task as usize;
        let inc = self.tasks[t].incarnation;
        self.tasks[t].exec = self.build(task, inc);
        self.tasks[t].busy_until = self.now;
        self.tasks[t].idle = false;
        if matches!(self.tasks[t].kind, TaskKind::Spout | TaskKind::Acker) {
            self.queue.push(
                self.now.saturating_add(self.tick_ns),
                Ev::Tick { task, inc },
            );
        }
        self.maybe_schedule(task);
    }

    fn crash_task(&mut self, task: TaskId, out: &mut Outbox) {
        let t = task as usize;
        let Some(mut exec) = self.tasks[t].exec.take() else {
            return; // already down
        };
        exec.shutdown();
        let c = exec.counters();
        self.tasks[t].retired.add(&c);
        drop(exec);
        if self.tasks[t].kind == TaskKind::Spout {
            // Callbacks made while shutting down, then the crash forgets the pending emits.
            self.observe_spout(task, out);
            self.watch.crash(task);
        }
        let mut lost = 0u64;
        let mut inbox = std::mem::replace(&mut self.tasks[t].inbox, Fifo::EMPTY);
        while let Some(idx) = inbox.pop(&self.slab_meta) {
            lost += 1;
            let i = idx as usize;
            self.slab[i] = VACANT;
            self.slab_meta[i].live = false;
            self.free_slot(idx);
        }
        self.queued -= lost;
        self.dropped += lost;
        self.trace
            .event(&[self.now, T_DROP, DROP_CRASH_INBOX, task as u64, lost]);
        self.tasks[t].incarnation += 1;
        self.tasks[t].scheduled = false;
        if !self.tasks[t].restart_pending {
            self.tasks[t].restart_pending = true;
            self.restarts_pending += 1;
            self.queue.push(
                self.now.saturating_add(self.opts.restart_delay_ns),
                Ev::Restart { task },
            );
        }
    }

    fn on_restart(&mut self, task: TaskId) {
        let t = task as usize;
        self.tasks[t].restart_pending = false;
        self.restarts_pending -= 1;
        self.trace.event(&[
            self.now,
            T_RESTART,
            task as u64,
            self.tasks[t].incarnation as u64,
        ]);
        if self.trace.writing() {
            let (now, inc) = (self.now, self.tasks[t].incarnation);
            self.trace
                .line(format_args!("{now} restart task {task} incarnation {inc}"));
        }
        self.start_task(task);
    }

    #[inline(always)]
    fn has_work(&self, task: TaskId) -> bool {
        let st = &self.tasks[task as usize];
        let Some(exec) = &st.exec else { return false };
        if !st.inbox.is_empty() {
            return true;
        }
        st.kind == TaskKind::Spout && !st.idle && exec.can_emit()
    }

    /// Schedules a process event for `task` if it has work and none is scheduled. The check of
    /// the flag is inlined into the callers (most calls find the task already scheduled or
    /// without work); the rest is [`schedule`](Self::schedule).
    #[inline(always)]
    fn maybe_schedule(&mut self, task: TaskId) {
        if !self.tasks[task as usize].scheduled {
            self.schedule(task);
        }
    }

    /// [`maybe_schedule`](Self::maybe_schedule) for a task with no process event scheduled.
    #[inline(always)]
    fn schedule(&mut self, task: TaskId) {
        let t = task as usize;
        if !self.has_work(task) {
            return;
        }
        let st = &mut self.tasks[t];
        st.scheduled = true;
        let at = st.busy_until.max(self.now);
        let inc = st.incarnation;
        self.queue.push(at, Ev::Process { task, inc });
    }

    fn on_process(&mut self, task: TaskId, inc: u32, out: &mut Outbox) {
        let t = task as usize;
        if self.tasks[t].incarnation != inc || self.tasks[t].exec.is_none() {
            return;
        }
        self.tasks[t].scheduled = false;
        let idx = self.tasks[t].inbox.pop(&self.slab_meta);
        if idx.is_some() {
            self.queued -= 1;
        }
        self.step(task, idx, out);
    }

    /// Frees slab slot `idx`, returning its message if it held one.
    fn take_slab(&mut self, idx: u32) -> Option<Message> {
        let i = idx as usize;
        if !self.slab_meta[i].live {
            return None;
        }
        self.slab_meta[i].live = false;
        self.free_slot(idx);
        Some(std::mem::replace(&mut self.slab[i], VACANT))
    }

    /// One step of a live task: handle the message in slab slot `idx` (freeing the slot), or (a
    /// spout with no message) call `next_tuple`. The message is moved out of the slab only here,
    /// straight into the executor: a 144-byte `Message` is not copied on its way.
    // `step`, `schedule`, `after_step` and `send` are forced inline into the event loop: each
    // call saved its register saves and restores, 1 519 -> 1 439 instructions per simulated
    // message in all (callgrind, `run --seed 1`); `#[inline]` alone left `schedule` a call.
    #[inline(always)]
    fn step(&mut self, task: TaskId, idx: Option<u32>, out: &mut Outbox) {
        let t = task as usize;
        let now = self.now;
        let kind = self.tasks[t].kind;
        let held = match idx {
            Some(i) if self.slab_meta[i as usize].live => Some(i),
            Some(i) => {
                self.free_slot(i); // an empty slot: freed, and the step is one without a message
                None
            }
            None => None,
        };
        if let Some(i) = held {
            let point = if kind == TaskKind::Bolt && self.armed_total > 0 {
                match &self.slab[i as usize] {
                    Message::Tuple(_) => self.tasks[t].armed.pop_front(),
                    _ => None,
                }
            } else {
                None
            };
            self.free_slot(i);
            let i = i as usize;
            self.slab_meta[i].live = false;
            match point {
                None => {
                    if let Some(exec) = self.tasks[t].exec.as_mut() {
                        // Control messages (5 of the 6 messages of a tree) are read in place: a
                        // few words copied instead of the whole 144-byte `Message`, and the slot
                        // keeps them (they own nothing to drop).
                        match &self.slab[i] {
                            Message::Acker(m) => {
                                if !self.failed_roots.is_empty() {
                                    // A message of a failed tree reaching its acker 2T or more
                                    // after the emit: the entry may have expired (silently, as
                                    // Storm's), so the tree's fail is the timeout, excused.
                                    let root = m.root();
                                    if self.failed_roots.get(&root).is_some_and(|f| now >= f.2) {
                                        self.failed_roots.remove(&root);
                                    }
                                }
                                exec.handle_acker(*m, out)
                            }
                            Message::Notice(n) => {
                                if let Notice::Completed { root } = *n {
                                    if !self.failed_roots.is_empty() {
                                        // A late ack: this tree's fail is excused.
                                        self.failed_roots.remove(&root);
                                    }
                                }
                                exec.handle_notice(*n, now)
                            }
                            Message::Tuple(_) => {
                                // Moved out as the bare tuple (120 bytes), straight into the
                                // bolt's path, not as a `Message` through `handle`'s dispatch.
                                if let Message::Tuple(tuple) =
                                    std::mem::replace(&mut self.slab[i], VACANT)
                                {
                                    exec.handle_tuple(tuple, now, out);
                                }
                            }
                            Message::Tick => exec.handle(Message::Tick, now, out),
                        }
                    } else {
                        self.slab[i] = VACANT;
                    }
                }
                Some(p) => {
                    let msg = std::mem::replace(&mut self.slab[i], VACANT);
                    self.throw(task, msg, p, out);
                }
            }
        } else if kind == TaskKind::Spout {
            let emitted = match self.tasks[t].exec.as_mut() {
                Some(exec) => exec.next_tuple(now, out),
                None => false,
            };
            if !emitted {
                return;
            }
            if out.is_empty() {
                // Nothing to emit: wait for a message or a tick (Storm's empty-emit wait).
                self.tasks[t].idle = true;
                self.observe_spout(task, out);
                return;
            }
            self.trace.event(&[now, T_EMIT, task as u64]);
        } else {
            return;
        }
        self.tasks[t].busy_until = now.saturating_add(self.tasks[t].service_ns);
        self.after_step(task, out);
        if kind == TaskKind::Spout {
            // The spout's next root, already drawn: its slot in the set of initialized roots
            // (a miss in a set of every root of the run) is asked for now, ready by the next
            // emit's init. Only a cache hint: nothing observable changes.
            if let Some(root) = self.tasks[t].exec.as_ref().and_then(|e| e.upcoming_root()) {
                self.inited_roots.prefetch(root);
            }
            // After the step's messages left: offset-triggered faults strike after the emit.
            self.observe_spout(task, out);
        }
        self.maybe_schedule(task);
    }

    /// An exception injected around a bolt's `execute` on input `msg` (see the module docs).
    fn throw(&mut self, task: TaskId, msg: Message, point: ExceptionPoint, out: &mut Outbox) {
        let t = task as usize;
        self.armed_total -= 1;
        self.exceptions += 1;
        let mut roots: Vec<u64> = match &msg {
            Message::Tuple(tuple) => tuple.anchors.pairs().iter().map(|&(r, _)| r).collect(),
            _ => Vec::new(),
        };
        roots.sort_unstable();
        roots.dedup();
        let base = self.plan.acker_tasks().start;
        let acker_of =
            |root: u64, n: usize| acker_core::acker_index(root, n).map(|i| base + i as TaskId);
        match point {
            ExceptionPoint::Before => {
                for &root in &roots {
                    if let Some(a) = acker_of(root, self.num_ackers) {
                        out.push(a, Message::Acker(AckerMessage::Fail { root }));
                    }
                }
            }
            ExceptionPoint::After => {
                let start = out.len();
                if let Some(exec) = self.tasks[t].exec.as_mut() {
                    exec.handle(msg, self.now, out);
                }
                let envs: Vec<Envelope> = out.drain().collect();
                let mut failed = Vec::new();
                for (i, mut env) in envs.into_iter().enumerate() {
                    if i >= start {
                        if let Message::Acker(
                            AckerMessage::Ack { root, .. } | AckerMessage::Fail { root },
                        ) = env.message
                        {
                            if roots.binary_search(&root).is_ok() {
                                env.message = Message::Acker(AckerMessage::Fail { root });
                                failed.push(root);
                            }
                        }
                    }
                    out.push(env.dest, env.message);
                }
                for &root in &roots {
                    if !failed.contains(&root) {
                        if let Some(a) = acker_of(root, self.num_ackers) {
                            out.push(a, Message::Acker(AckerMessage::Fail { root }));
                        }
                    }
                }
            }
        }
    }

    /// Hands the spout's tracked emits and callbacks of its last step to the oracles.
    fn observe_spout(&mut self, task: TaskId, out: &mut Outbox) {
        let now = self.now;
        let tracked = out.tracked_emits();
        let emits = tracked.len() as u64;
        if emits > 0 {
            for &(msg_id, root) in tracked {
                self.watch.emit_root(task, msg_id, root, now);
            }
            out.clear_tracked_emits();
        }
        let watch = &mut self.watch;
        // Judged only in a run where no fault fired: once one has, nothing more is recorded.
        let judge = self.judge_fails && self.fired.is_empty();
        let two_t = self.timeout_ns.saturating_mul(2);
        let (failed_roots, failed_unknown) = (&mut self.failed_roots, &mut self.failed_unknown);
        let mut fails = 0u64;
        self.callbacks.take(|t, msg_id, acked| {
            fails += u64::from(!acked);
            let decided = watch.callback(t, msg_id, acked, now);
            if judge && !acked {
                match decided {
                    Some((root, emit_ns)) => {
                        failed_roots.insert(root, (t, msg_id, emit_ns.saturating_add(two_t)));
                    }
                    None => failed_unknown.push((t, msg_id)),
                }
            }
        });
        if emits > 0 {
            self.emits_seen += emits;
            if self.emits_seen > self.emit_limit {
                self.over_emits = Some(now);
            }
        }
        // Each failed or timed-out tree is a replay owed, and keeps its records (about 145 B)
        // whether or not it is replayed yet: a spout that emits its whole input before its
        // replays let 1,000,225 trees time out under `--max-replays 1000` (second trial: 283 MB
        // for 1M tuples, an abort under `ulimit -v 300000`). So the fails count against the
        // limit too.
        if fails > 0 {
            self.fails_seen += fails;
            if self.fails_seen > self.emit_limit - self.opts.input_len {
                self.over_emits = Some(now);
            }
        }
        let newly = match self.probe.as_mut() {
            Some(p) => p(),
            None if emits > 0 => Some(self.emits_seen - 1),
            None => None,
        };
        if let Some(o) = newly {
            self.fire_offset_faults(o, out);
        }
    }

    fn on_tick(&mut self, task: TaskId, inc: u32, out: &mut Outbox) {
        let t = task as usize;
        if self.tasks[t].incarnation != inc || self.tasks[t].exec.is_none() {
            return;
        }
        self.trace.event(&[self.now, T_TICK, task as u64]);
        if let Some(exec) = self.tasks[t].exec.as_mut() {
            exec.handle(Message::Tick, self.now, out);
        }
        self.after_step(task, out);
        if self.tasks[t].kind == TaskKind::Spout {
            self.tasks[t].idle = false;
            self.observe_spout(task, out);
        }
        self.queue.push(
            self.now.saturating_add(self.tick_ns),
            Ev::Tick { task, inc },
        );
        self.maybe_schedule(task);
    }

    /// Checks the acker oracle, applies the planted bug, and sends the outbox.
    #[inline(always)]
    fn after_step(&mut self, task: TaskId, out: &mut Outbox) {
        let t = task as usize;
        if self.tasks[t].kind == TaskKind::Acker {
            if let Some(exec) = &self.tasks[t].exec {
                let len = exec.pending_roots();
                self.max_acker_roots = self.max_acker_roots.max(len);
                if len > self.acker_capacity && self.violations.len() < 100 {
                    self.violations.push(Violation::TableOverCapacity {
                        len,
                        capacity: self.acker_capacity,
                    });
                }
            }
        }
        // Every envelope moves from the outbox straight into a slab slot and is sent from there,
        // in outbox order (the outbox is an argument, not a field, so `send` can run while the
        // drain borrows it; until 2026-12-01 the slots were staged in a `Vec` and sent after
        // the drain).
        if out.is_empty() {
            // Three of the seven steps of a tree send nothing (the acker's init and first ack,
            // the spout's notice): no `Drain` built and dropped for them.
            return;
        }
        let acker = self.tasks[t].kind == TaskKind::Acker;
        // In place, not through a `Drain` (which copied each whole 152-byte envelope out): a
        // control message is copied into its slot as its few words, a tuple moved with
        // `mem::replace` (leaving a `Tick`, nothing to drop for `clear_envelopes`).
        for env in out.as_mut_slice() {
            let dest = env.dest;
            let i = self.alloc_slot(task, dest);
            let slot = &mut self.slab[i];
            match &mut env.message {
                Message::Acker(m) => *slot = Message::Acker(*m),
                Message::Notice(n) => *slot = Message::Notice(*n),
                m => *slot = std::mem::replace(m, VACANT),
            }
            if self.bug_armed && acker {
                if let Message::Notice(Notice::Failed { root }) = self.slab[i] {
                    // The planted bug: report the first failed tree as completed.
                    self.bug_armed = false;
                    self.slab[i] = Message::Notice(Notice::Completed { root });
                }
            }
            self.send_live(i as u32, task, dest);
        }
        out.clear_envelopes();
    }

    /// A free slab slot for a message sent by task `from` to task `dest`, marked live (its
    /// message is written by the caller; a new slot holds [`VACANT`] until then).
    #[inline(always)]
    fn alloc_slot(&mut self, from: TaskId, dest: TaskId) -> usize {
        let meta = SlotMeta {
            from,
            dest,
            live: true,
            next: NIL,
            arrival: 0,
        };
        match self.free {
            NIL => {
                self.slab.push(VACANT);
                self.slab_meta.push(meta);
                self.slab.len() - 1
            }
            i => {
                // Only the fields a send reads are written (`next` and `arrival` are set when the
                // slot goes on a FIFO).
                let m = &mut self.slab_meta[i as usize];
                self.free = m.next;
                m.from = from;
                m.dest = dest;
                m.live = true;
                i as usize
            }
        }
    }

    /// Puts slab slot `idx` on the free list (its message and live flag are the caller's).
    #[inline(always)]
    fn free_slot(&mut self, idx: u32) {
        self.slab_meta[idx as usize].next = self.free;
        self.free = idx;
    }

    // ---- network ----------------------------------------------------------------------------

    /// Stores `msg`, sent by task `from` to task `dest`, in a free slab slot; returns its index.
    #[inline(always)]
    fn store(&mut self, from: TaskId, dest: TaskId, msg: Message) -> u32 {
        let i = self.alloc_slot(from, dest);
        self.slab[i] = msg;
        i as u32
    }

    /// Sends the message in slab slot `idx` (from its task to its destination): puts it on its
    /// link, or drops it (freeing the slot). The message stays in its slot, which it entered
    /// straight from the outbox, until a task handles it.
    #[inline(always)]
    fn send(&mut self, idx: u32) {
        let SlotMeta {
            from, dest, live, ..
        } = self.slab_meta[idx as usize];
        if !live {
            return;
        }
        self.send_live(idx, from, dest);
    }

    /// [`send`](Self::send) for a slot known to be live, holding a message from task `from` to
    /// task `dest` (its [`SlotMeta`], not read again: `after_step` has just written it).
    #[inline(always)]
    fn send_live(&mut self, idx: u32, from: TaskId, dest: TaskId) {
        let msg = &self.slab[idx as usize];
        // Observed on the link, outside the executors: root ids are 64-bit random per emit (as
        // Storm's), so an init for a root id already initialized means an executor reused its
        // id sequence, e.g. a restarted spout seeded as its first incarnation (its new trees
        // would XOR into the old ones' entries).
        if let Message::Acker(AckerMessage::Init { root, .. }) = *msg {
            if !self.inited_roots.insert(root) && !self.root_reuse_reported {
                self.root_reuse_reported = true;
                self.violations.push(Violation::Invariant {
                    name: "a root id is initialized once".to_string(),
                    at_ns: self.now,
                    message: format!(
                        "task {from} sent a second init for root {root:#018x} (root ids reused)"
                    ),
                });
            }
        }
        let Some(dst) = self.tasks.get(dest as usize) else {
            self.dropped += 1;
            self.take_slab(idx);
            return;
        };
        let sw = self.tasks[from as usize].worker as usize;
        let dw = dst.worker as usize;
        let w = self.workers;
        if sw != dw {
            let reason = if self.partitioned[sw * w + dw] > 0 {
                Some(DROP_PARTITION)
            } else if self.drop_next > 0 {
                self.drop_next -= 1;
                Some(DROP_LOSS)
            } else {
                None
            };
            if let Some(reason) = reason {
                self.dropped += 1;
                self.trace
                    .event(&[self.now, T_DROP, reason, (from as u64) << 16 | dest as u64]);
                trace_msg(&mut self.trace, msg);
                if self.trace.writing() {
                    let now = self.now;
                    self.trace
                        .line(format_args!("{now} drop({reason}) {from}->{dest} {msg:?}"));
                }
                self.take_slab(idx);
                return;
            }
        }
        let latency = if sw == dw {
            self.opts.local_latency_ns
        } else {
            rng::between(
                &mut self.link_rng,
                self.opts.latency_min_ns,
                self.opts.latency_max_ns,
            )
        };
        let link = &mut self.link_last[sw * w + dw];
        let arrival = self.now.saturating_add(latency).max(*link);
        *link = arrival;
        self.trace
            .event(&[self.now, T_SEND, (from as u64) << 16 | dest as u64, arrival]);
        trace_msg(&mut self.trace, msg);
        if self.trace.writing() {
            let now = self.now;
            self.trace.line(format_args!(
                "{now} send {from}->{dest} at {arrival} {msg:?}"
            ));
        }
        self.in_flight += 1;
        let l = sw * w + dw;
        self.slab_meta[idx as usize].arrival = arrival;
        let q = &mut self.link_queue[l];
        let was_empty = q.is_empty();
        q.push(&mut self.slab_meta, idx);
        if was_empty {
            self.queue.push(arrival, Ev::Link(l as u32));
        }
    }

    fn on_deliver(&mut self, idx: u32, out: &mut Outbox) {
        self.in_flight -= 1;
        let SlotMeta {
            from, dest, live, ..
        } = self.slab_meta[idx as usize];
        if !live {
            return;
        }
        let d = dest as usize;
        if self.tasks[d].exec.is_none() {
            let item = self.take_slab(idx);
            self.dropped += 1;
            self.trace.event(&[
                self.now,
                T_DROP,
                DROP_DOWN,
                (from as u64) << 16 | dest as u64,
            ]);
            if self.trace.writing() {
                let now = self.now;
                if let Some(item) = item {
                    self.trace
                        .line(format_args!("{now} drop(down) {from}->{dest} {:?}", item));
                }
            }
            return;
        }
        self.delivered += 1;
        self.trace.event(&[self.now, T_DELIVER, dest as u64]);
        self.tasks[d].idle = false;
        let st = &self.tasks[d];
        if !st.scheduled && st.inbox.is_empty() && st.busy_until <= self.now {
            // Idle: handle it now (the same as a process event at this instant, one event less).
            self.step(dest, Some(idx), out);
        } else {
            self.tasks[d].inbox.push(&mut self.slab_meta, idx);
            self.queued += 1;
            self.maybe_schedule(dest);
        }
    }

    // ---- faults -----------------------------------------------------------------------------

    /// The end of one outage: when the last one of its kind ends, the world hears of it, the
    /// spouts are woken, and after a sink outage the punctuated bolts get their punctuation.
    fn on_outage_end(&mut self, sink: bool) {
        self.restarts_pending -= 1;
        let n = &mut self.outages[sink as usize];
        *n = n.saturating_sub(1);
        self.trace
            .event(&[self.now, T_OUTAGE_END, sink as u64, *n as u64]);
        if *n > 0 {
            return;
        }
        let kind = if sink {
            FaultKind::SinkOutage
        } else {
            FaultKind::SourceOutage
        };
        if self.trace.writing() {
            let now = self.now;
            self.trace.line(format_args!("{now} {kind} ends"));
        }
        if let Some(hook) = self.outage_hook.as_mut() {
            hook(kind, false, self.now);
        }
        if sink {
            for task in self.punctuate.clone() {
                let tuple = Tuple {
                    stream: 0,
                    source_task: task,
                    values: Values::new(),
                    anchors: TupleAnchors::new(),
                };
                let idx = self.store(task, task, Message::Tuple(tuple));
                self.send(idx);
            }
        }
        for task in self.targets.spouts.clone() {
            self.tasks[task as usize].idle = false;
            self.maybe_schedule(task);
        }
    }

    fn fire_offset_faults(&mut self, offset: u64, out: &mut Outbox) {
        while let Some(&i) = self.offset_faults.front() {
            match self.opts.faults[i as usize].trigger {
                Trigger::AtOffset(o) if o <= offset => {
                    self.offset_faults.pop_front();
                    self.fire(i, out);
                }
                _ => break,
            }
        }
    }

    fn arm(&mut self, target: u16, point: ExceptionPoint) {
        if let Some(&task) = self.targets.bolts.get(target as usize) {
            self.tasks[task as usize].armed.push_back(point);
            self.armed_total += 1;
        }
    }

    fn fire(&mut self, i: u32, out: &mut Outbox) {
        let f = self.opts.faults[i as usize];
        self.fired.push(f);
        // `failed-without-fault` is judged only in a run where no fault fired: its records go.
        self.failed_roots = BTreeMap::new();
        self.failed_unknown = Vec::new();
        self.trace.event(&[
            self.now,
            T_FAULT,
            f.kind.code(),
            f.target as u64,
            f.peer as u64,
        ]);
        if self.trace.writing() {
            let now = self.now;
            self.trace.line(format_args!("{now} fault {f}"));
        }
        match f.kind {
            FaultKind::SpoutCrash => {
                if let Some(&t) = self.targets.spouts.get(f.target as usize) {
                    self.crash_task(t, out);
                }
            }
            FaultKind::AckerCrash => {
                let ackers = self.targets.ackers.clone();
                if !ackers.is_empty() {
                    self.crash_task(ackers.start + f.target, out);
                }
            }
            FaultKind::BoltCrash => {
                if let Some(&t) = self.targets.bolts.get(f.target as usize) {
                    self.crash_task(t, out);
                }
            }
            FaultKind::WorkerCrash => {
                for t in 0..self.tasks.len() {
                    if self.tasks[t].worker == f.target {
                        self.crash_task(t as TaskId, out);
                    }
                }
            }
            FaultKind::BoltExceptionBeforeEmit => self.arm(f.target, ExceptionPoint::Before),
            FaultKind::BoltExceptionAfterEmit => self.arm(f.target, ExceptionPoint::After),
            FaultKind::MessageLoss => self.drop_next += 1,
            FaultKind::SourceOutage | FaultKind::SinkOutage => {
                let sink = f.kind == FaultKind::SinkOutage;
                self.outages[sink as usize] += 1;
                if self.outages[sink as usize] == 1 {
                    if let Some(hook) = self.outage_hook.as_mut() {
                        hook(f.kind, true, self.now);
                    }
                }
                self.restarts_pending += 1;
                self.queue.push(
                    self.now.saturating_add(self.opts.outage_ns),
                    Ev::OutageEnd { sink },
                );
            }
            FaultKind::Partition => {
                let w = self.workers;
                let (a, b) = (f.target as usize, f.peer as usize);
                if a < w && b < w {
                    self.partitioned[a * w + b] += 1;
                    self.partitioned[b * w + a] += 1;
                    self.queue.push(
                        self.now.saturating_add(self.opts.partition_ns),
                        Ev::Heal {
                            a: f.target,
                            b: f.peer,
                        },
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taken(log: &CallbackEntries) -> Vec<(TaskId, MessageId, bool)> {
        let mut v = Vec::new();
        log.take(|t, m, a| v.push((t, m, a)));
        v
    }

    #[test]
    fn callback_entries_keep_their_order_across_the_first_slot_and_the_rest() {
        let log = CallbackEntries::default();
        assert_eq!(taken(&log), vec![]);
        log.push((3, 7, true));
        assert_eq!(taken(&log), vec![(3, 7, true)]);
        assert_eq!(taken(&log), vec![]);
        let all = [(TaskId::MAX, u64::MAX, false), (0, 0, true), (1, 2, false)];
        for e in all {
            log.push(e);
        }
        assert_eq!(taken(&log), all.to_vec());
        log.push((5, 1, false));
        log.push((6, 2, true));
        assert_eq!(taken(&log), vec![(5, 1, false), (6, 2, true)]);
        assert_eq!(taken(&log), vec![]);
    }
}
