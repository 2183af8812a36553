//! The executors: spout, bolt and acker tasks as pure single-threaded state machines, and the
//! user-facing [`Spout`], [`Bolt`] and [`BasicBolt`] traits with their output collectors.
//!
//! # Contract (what a shell relies on)
//!
//! An [`Executor`] is built fresh for one task by [`Plan::build_executor`] (which calls the
//! user's factory and then `open` / `prepare`). After that it is driven only through:
//!
//! - [`Executor::handle`]`(message, now_ns, outbox)`: one message in; whatever the executor wants
//!   sent is appended to `outbox` as [`Envelope`](crate::Envelope)s addressed by task id;
//! - [`Executor::next_tuple`]`(now_ns, outbox)`: for spouts, calls the user's `next_tuple` once if
//!   [`Executor::can_emit`] (max spout pending not reached); a no-op for bolts and ackers;
//! - [`Executor::shutdown`]: calls `close` / `cleanup`.
//!
//! `now_ns` is the shell's clock in ns since the run started (injected, never read here), and must
//! not go backwards. An executor reads no clock, spawns nothing, does no I/O, and draws randomness
//! only from xoshiro streams seeded from (topology seed, task id), so the same messages at the same
//! times give the same outbox contents, byte for byte. Dropping an executor and building it again
//! models a crash and restart: every bit of its state is lost.
//!
//! What each executor does with each message (Storm 2.x semantics):
//!
//! | executor | `Tuple` | `Acker` | `Notice` | `Tick` |
//! | --- | --- | --- | --- | --- |
//! | spout | ignored (counted) | ignored (counted) | `Completed` → user `ack`, `Failed` → user `fail`, `Reset` → restart timeout | pending tuples older than the message timeout → user `fail` (counted as timed out) |
//! | bolt | user `execute`; emits/acks/fails go out as tuples and acker messages | ignored | ignored | nothing |
//! | acker | ignored | applied to the acker table; a decision → `Notice` to the spout task | ignored | expiry of old entries |
//!
//! Per-executor [`ExecutorCounters`] count what happened; spouts also keep a histogram of the
//! complete latency of every acked tuple ([`Executor::complete_latency_ns`]).

use std::fmt;
use std::ops::Range;

use acker_core::{
    acker_index, AckerMessage, AckerTable, AnchorError, Anchors, Decision, EdgeId, InputHandle,
    InputSlot, InputTracker, PendingError, PendingSlot, SpoutConfig, SpoutEmit, SpoutPending,
    TableError, TaskId,
};
use hdrhistogram::Histogram;
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use smallvec::SmallVec;

use crate::message::{
    Message, MessageId, Notice, Outbox, StreamId, Tuple, TupleAnchors, Values, DEFAULT_STREAM,
    MAX_ROOTS,
};
use crate::park::ParkQueue;
use crate::topology::{Placement, Plan, RouteKind, TaskKind};

/// Where a task sits in the topology, handed to `open` / `prepare` (Storm's `TopologyContext`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopologyContext {
    /// This task's id.
    pub task: TaskId,
    /// This task's component id.
    pub component: String,
    /// The task ids of this component.
    pub component_tasks: Range<TaskId>,
    /// This task's index within its component.
    pub task_index: usize,
    /// The number of acker tasks (0 = at-most-once).
    pub num_ackers: usize,
    /// The topology's seed (`Config::seed`): user code that needs randomness seeds its own
    /// generator from it and the task id, to stay reproducible.
    pub topology_seed: u64,
    /// This component's output streams, by [`StreamId`].
    pub output_streams: Vec<String>,
}

impl TopologyContext {
    /// The id of this component's output stream `name`, if declared.
    pub fn stream_id(&self, name: &str) -> Option<StreamId> {
        self.output_streams
            .iter()
            .position(|s| s == name)
            .map(|i| i as StreamId)
    }
}

/// A spout (Storm's `IRichSpout`): the source of a topology's tuples.
///
/// Emit at most one tracked tuple per `next_tuple` call when max spout pending is set: an emit
/// beyond it is refused with [`EmitError::MaxSpoutPending`] (the message id is handed back).
pub trait Spout {
    /// Called once when the task starts (and after every restart).
    fn open(&mut self, _context: &TopologyContext) {}
    /// Emit zero or more tuples. Called only while max spout pending is not reached.
    fn next_tuple(&mut self, collector: &mut SpoutOutputCollector<'_>);
    /// The tuple tree of `msg_id` completed.
    fn ack(&mut self, _msg_id: MessageId) {}
    /// The tuple tree of `msg_id` failed or timed out: re-emit it for at-least-once.
    fn fail(&mut self, _msg_id: MessageId) {}
    /// Called once when the task stops.
    fn close(&mut self) {}
    /// Whether the spout has nothing more to emit and nothing left to replay (an extension for
    /// finite inputs: a shell may stop the topology once every spout is done). Default: never.
    fn is_done(&self) -> bool {
        false
    }
}

/// A bolt (Storm's `IRichBolt`): it must ack or fail every input itself.
pub trait Bolt {
    /// Called once when the task starts (and after every restart).
    fn prepare(&mut self, _context: &TopologyContext) {}
    /// Processes one input; ack or fail it now or later through the collector.
    fn execute(&mut self, input: Input, collector: &mut OutputCollector<'_>);
    /// Called once when the task stops.
    fn cleanup(&mut self) {}
}

/// The error a [`BasicBolt`] returns to fail its input (Storm's `FailedException`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailedException {
    /// Why.
    pub reason: String,
}

impl FailedException {
    /// A failure with this reason.
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }
}

impl fmt::Display for FailedException {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "failed: {}", self.reason)
    }
}

impl std::error::Error for FailedException {}

/// A basic bolt (Storm's `IBasicBolt`): every emit is anchored to the input, and the input is
/// acked when `execute` returns `Ok`, failed when it returns `Err`.
pub trait BasicBolt {
    /// Called once when the task starts (and after every restart).
    fn prepare(&mut self, _context: &TopologyContext) {}
    /// Processes one input.
    ///
    /// # Errors
    /// A [`FailedException`] fails the input (its whole tree fails and the spout replays it).
    fn execute(
        &mut self,
        input: &Input,
        collector: &mut BasicOutputCollector<'_, '_>,
    ) -> Result<(), FailedException>;
    /// Called once when the task stops.
    fn cleanup(&mut self) {}
}

/// Runs a [`BasicBolt`] as a [`Bolt`] (Storm's `BasicBoltExecutor`).
pub struct BasicBoltAdapter<B> {
    inner: B,
}

impl<B> BasicBoltAdapter<B> {
    /// Wraps `inner`.
    pub fn new(inner: B) -> Self {
        Self { inner }
    }
}

impl<B: BasicBolt> Bolt for BasicBoltAdapter<B> {
    fn prepare(&mut self, context: &TopologyContext) {
        self.inner.prepare(context);
    }

    fn execute(&mut self, input: Input, collector: &mut OutputCollector<'_>) {
        let result = {
            let mut basic = BasicOutputCollector {
                collector,
                input: &input,
            };
            self.inner.execute(&input, &mut basic)
        };
        // The handle is open (the adapter owns it), so neither call can fail.
        let _ = match result {
            Ok(()) => collector.ack(input),
            Err(_) => collector.fail(input),
        };
    }

    fn cleanup(&mut self) {
        self.inner.cleanup();
    }
}

/// A received tuple, as a bolt sees it: its values, where it came from, and the handle that names
/// it in anchored emits, acks and fails. Ack or fail it exactly once.
#[derive(Debug)]
pub struct Input {
    handle: InputHandle,
    stream: StreamId,
    source_task: TaskId,
    values: Values,
}

impl Input {
    /// The values.
    pub fn values(&self) -> &Values {
        &self.values
    }

    /// The stream id, among the source component's streams.
    pub fn stream(&self) -> StreamId {
        self.stream
    }

    /// The task that emitted it.
    pub fn source_task(&self) -> TaskId {
        self.source_task
    }
}

/// Why an emit (or ack) was refused. Nothing was sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EmitError {
    /// The component declares no stream of this name.
    UnknownStream(String),
    /// No stream has this id.
    UnknownStreamId(StreamId),
    /// The values do not match the stream's declared fields.
    FieldCount {
        /// Fields declared.
        expected: usize,
        /// Values given.
        got: usize,
    },
    /// `emit_direct` to a task that does not subscribe to the stream with direct grouping.
    NotDirectTarget(TaskId),
    /// Max spout pending is reached: the message id is handed back; emit it later.
    MaxSpoutPending {
        /// The message id of the refused tuple.
        msg_id: MessageId,
    },
    /// The anchoring was refused (input already acked or failed, too many trees, ...).
    Anchor(AnchorError),
}

impl fmt::Display for EmitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmitError::UnknownStream(s) => write!(f, "unknown stream {s:?}"),
            EmitError::UnknownStreamId(s) => write!(f, "unknown stream id {s}"),
            EmitError::FieldCount { expected, got } => {
                write!(f, "stream declares {expected} fields, {got} values given")
            }
            EmitError::NotDirectTarget(t) => {
                write!(f, "task {t} does not subscribe with direct grouping")
            }
            EmitError::MaxSpoutPending { msg_id } => {
                write!(f, "max spout pending reached (message id {msg_id})")
            }
            EmitError::Anchor(e) => write!(f, "anchoring refused: {e}"),
        }
    }
}

impl std::error::Error for EmitError {}

impl From<AnchorError> for EmitError {
    fn from(e: AnchorError) -> Self {
        EmitError::Anchor(e)
    }
}

/// What one executor has done so far (Storm's executor metrics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExecutorCounters {
    /// Successful emit calls by the user code.
    pub emitted: u64,
    /// Tuple copies sent (an emit to three tasks counts three).
    pub transferred: u64,
    /// Inputs handed to the bolt's `execute`; messages applied by an acker.
    pub executed: u64,
    /// Spout: trees completed (user `ack` calls, including at-once acks with 0 ackers).
    /// Bolt: inputs acked. Acker: `Completed` decisions.
    pub acked: u64,
    /// Spout: trees failed by an acker (user `fail` calls, timeouts excluded). Bolt: inputs failed.
    /// Acker: `Failed` decisions.
    pub failed: u64,
    /// Spout: pending tuples failed by the message timeout (user `fail` calls).
    pub timed_out: u64,
    /// Messages that did not apply: spout notices for a root not pending (late, duplicated, from
    /// before a restart), or a message kind the executor does not take.
    pub ignored: u64,
    /// Refusals: user emits/acks refused, tuples failed because a bolt's open inputs were full,
    /// acker messages refused by the acker table as invalid (root 0, a second init).
    pub errors: u64,
    /// Acker: messages refused by a full acker table ([`acker_core::TableError::Full`]) and parked
    /// in the acker's back-pressure queue, to be applied, in order, once a slot frees.
    pub parked: u64,
    /// Acker: messages dropped because the table was full *and* the park queue was full. The
    /// tree then times out at its spout and is replayed (at-least-once still holds), exactly as
    /// if the message had been lost on the way.
    pub dropped_full: u64,
}

impl ExecutorCounters {
    /// Adds `other` into `self`, field by field.
    pub fn add(&mut self, other: &ExecutorCounters) {
        self.emitted += other.emitted;
        self.transferred += other.transferred;
        self.executed += other.executed;
        self.acked += other.acked;
        self.failed += other.failed;
        self.timed_out += other.timed_out;
        self.ignored += other.ignored;
        self.errors += other.errors;
        self.parked += other.parked;
        self.dropped_full += other.dropped_full;
    }
}

/// A fresh histogram for complete latencies in ns (1 ns to 1 hour, 3 significant figures).
pub fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds")
}

fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The seed of task `task`'s xoshiro stream in a topology seeded with `topology_seed`.
pub fn task_seed(topology_seed: u64, task: TaskId) -> u64 {
    splitmix64(topology_seed ^ splitmix64(task as u64 + 1))
}

#[derive(Clone, Copy, Debug)]
struct AckerRoute {
    base: TaskId,
    count: usize,
}

impl AckerRoute {
    #[inline]
    fn task(&self, root: u64) -> Option<TaskId> {
        acker_index(root, self.count).map(|i| self.base + i as TaskId)
    }
}

struct RouteState {
    kind: RouteKind,
    tasks: Vec<TaskId>,
    local: Vec<TaskId>,
    next: usize,
}

/// Picks destination tasks for an emit (the groupings at work).
struct Router {
    streams: Vec<Vec<RouteState>>,
    names: Vec<String>,
    field_counts: Vec<usize>,
    /// The id of the `default` stream, looked up once.
    default_stream: Option<StreamId>,
}

impl Router {
    fn new(
        plan: &Plan,
        component: usize,
        task: TaskId,
        placement: &Placement,
        rng: &mut Xoshiro256PlusPlus,
    ) -> Self {
        let comp = &plan.topology.inner.components[component];
        let me = placement.worker(task);
        let streams = comp
            .routes
            .iter()
            .map(|routes| {
                routes
                    .iter()
                    .map(|r| {
                        let tasks: Vec<TaskId> = r.dest_tasks.clone().collect();
                        let local: Vec<TaskId> = tasks
                            .iter()
                            .copied()
                            .filter(|&t| placement.worker(t) == me)
                            .collect();
                        let _ = r.dest_component;
                        RouteState {
                            kind: r.kind.clone(),
                            next: (rng.next_u64() % tasks.len().max(1) as u64) as usize,
                            tasks,
                            local,
                        }
                    })
                    .collect()
            })
            .collect();
        let names = plan.stream_names(component);
        let default_stream = names
            .iter()
            .position(|s| s == DEFAULT_STREAM)
            .map(|i| i as StreamId);
        Self {
            streams,
            names,
            field_counts: plan.stream_field_counts(component),
            default_stream,
        }
    }

    #[inline]
    fn default_stream(&self) -> Result<StreamId, EmitError> {
        self.default_stream
            .ok_or_else(|| EmitError::UnknownStream(DEFAULT_STREAM.to_string()))
    }

    fn stream_id(&self, name: &str) -> Result<StreamId, EmitError> {
        self.names
            .iter()
            .position(|s| s == name)
            .map(|i| i as StreamId)
            .ok_or_else(|| EmitError::UnknownStream(name.to_string()))
    }

    /// Fills `dests` with the destination task of every copy.
    fn route(
        &mut self,
        stream: StreamId,
        values: &Values,
        direct: Option<TaskId>,
        dests: &mut Vec<TaskId>,
    ) -> Result<(), EmitError> {
        dests.clear();
        let s = stream as usize;
        let Some(routes) = self.streams.get_mut(s) else {
            return Err(EmitError::UnknownStreamId(stream));
        };
        let expected = self.field_counts[s];
        if values.len() != expected {
            return Err(EmitError::FieldCount {
                expected,
                got: values.len(),
            });
        }
        if let Some(target) = direct {
            for r in routes.iter() {
                if r.kind == RouteKind::Direct && r.tasks.contains(&target) {
                    dests.push(target);
                }
            }
            if dests.is_empty() {
                return Err(EmitError::NotDirectTarget(target));
            }
            return Ok(());
        }
        for r in routes.iter_mut() {
            match &r.kind {
                RouteKind::Shuffle => {
                    dests.push(r.tasks[r.next]);
                    r.next = if r.next + 1 == r.tasks.len() {
                        0
                    } else {
                        r.next + 1
                    };
                }
                RouteKind::LocalOrShuffle => {
                    let pool = if r.local.is_empty() {
                        &r.tasks
                    } else {
                        &r.local
                    };
                    let i = r.next % pool.len();
                    dests.push(pool[i]);
                    r.next = (i + 1) % pool.len();
                }
                RouteKind::Fields(idx) => {
                    let mut h = 0xcbf2_9ce4_8422_2325u64;
                    for &i in idx {
                        h = values[i].stable_hash(h);
                    }
                    let n = r.tasks.len() as u64;
                    let i = ((splitmix64(h) as u128 * n as u128) >> 64) as usize;
                    dests.push(r.tasks[i]);
                }
                RouteKind::All => dests.extend_from_slice(&r.tasks),
                RouteKind::Global => dests.push(r.tasks[0]),
                RouteKind::Direct => {}
            }
        }
        Ok(())
    }
}

type Tracker = InputTracker<MAX_ROOTS, Vec<InputSlot<MAX_ROOTS>>>;
type Pending = SpoutPending<MessageId, Vec<PendingSlot<MessageId>>>;

/// Pushes one copy of `values` per destination, the last one moving `values`.
#[inline]
fn push_copies(
    out: &mut Outbox,
    dests: &[TaskId],
    stream: StreamId,
    task: TaskId,
    values: Values,
    mut anchors_of: impl FnMut(usize) -> TupleAnchors,
) {
    // Clones for all but the last copy, which takes `values` itself (moving it, rather than
    // leaving an empty `Values` behind, saves a drop call per emit).
    let Some((&last, rest)) = dests.split_last() else {
        return;
    };
    for (i, &d) in rest.iter().enumerate() {
        out.push(
            d,
            Message::Tuple(Tuple {
                stream,
                source_task: task,
                values: values.clone(),
                anchors: anchors_of(i),
            }),
        );
    }
    out.push(
        last,
        Message::Tuple(Tuple {
            stream,
            source_task: task,
            values,
            anchors: anchors_of(rest.len()),
        }),
    );
}

/// The spout's output collector (Storm's `SpoutOutputCollector`).
pub struct SpoutOutputCollector<'a> {
    task: TaskId,
    now_ns: u64,
    pending: &'a mut Pending,
    router: &'a mut Router,
    out: &'a mut Outbox,
    counters: &'a mut ExecutorCounters,
    dests: &'a mut Vec<TaskId>,
    edges: &'a mut Vec<EdgeId>,
    acked_at_once: &'a mut Vec<MessageId>,
    ackers: AckerRoute,
}

impl SpoutOutputCollector<'_> {
    /// Emits `values` on the default stream; with `Some(msg_id)` the tuple is tracked (its tree is
    /// acked or failed back to this spout). Returns the number of tasks it was sent to.
    ///
    /// # Errors
    /// See [`emit_stream`](Self::emit_stream).
    pub fn emit(&mut self, values: Values, msg_id: Option<MessageId>) -> Result<usize, EmitError> {
        let s = self.router.default_stream()?;
        self.emit_to(s, values, msg_id, None)
    }

    /// Emits on the named stream.
    ///
    /// # Errors
    /// [`EmitError::UnknownStream`], [`EmitError::FieldCount`], [`EmitError::MaxSpoutPending`]
    /// (message id handed back). Nothing is sent on error.
    pub fn emit_stream(
        &mut self,
        stream: &str,
        values: Values,
        msg_id: Option<MessageId>,
    ) -> Result<usize, EmitError> {
        let s = self.router.stream_id(stream)?;
        self.emit_to(s, values, msg_id, None)
    }

    /// Emits on the named stream to one task subscribing with direct grouping.
    ///
    /// # Errors
    /// As [`emit_stream`](Self::emit_stream), plus [`EmitError::NotDirectTarget`].
    pub fn emit_direct(
        &mut self,
        task: TaskId,
        stream: &str,
        values: Values,
        msg_id: Option<MessageId>,
    ) -> Result<usize, EmitError> {
        let s = self.router.stream_id(stream)?;
        self.emit_to(s, values, msg_id, Some(task))
    }

    /// Emits on a stream given by id (see [`TopologyContext::stream_id`]), optionally direct.
    ///
    /// # Errors
    /// As [`emit_direct`](Self::emit_direct), plus [`EmitError::UnknownStreamId`].
    pub fn emit_to(
        &mut self,
        stream: StreamId,
        values: Values,
        msg_id: Option<MessageId>,
        direct: Option<TaskId>,
    ) -> Result<usize, EmitError> {
        let r = self.router.route(stream, &values, direct, self.dests);
        if let Err(e) = r {
            self.counters.errors += 1;
            return Err(e);
        }
        let n = self.dests.len();
        self.edges.clear();
        self.edges.resize(n, 0);
        let emitted = match self.pending.emit(msg_id, &mut self.edges[..], self.now_ns) {
            Ok(e) => e,
            Err(PendingError::MaxSpoutPending { msg_id }) => {
                self.counters.errors += 1;
                return Err(EmitError::MaxSpoutPending { msg_id });
            }
            Err(PendingError::Config) => {
                // Unreachable: the pending set was built from a checked config.
                self.counters.errors += 1;
                return Err(EmitError::MaxSpoutPending {
                    msg_id: msg_id.unwrap_or(0),
                });
            }
        };
        let (task, edges) = (self.task, &*self.edges);
        match emitted {
            SpoutEmit::Tracked { root, init } => {
                if let Some(id) = msg_id {
                    self.out.note_tracked_emit(id, root);
                }
                push_copies(self.out, self.dests, stream, task, values, |i| {
                    Anchors::spout(root, edges[i])
                });
                if let Some(a) = self.ackers.task(root) {
                    self.out.push(a, Message::Acker(init));
                }
            }
            SpoutEmit::AckedAtOnce { msg_id } => {
                self.out.note_tracked_emit(msg_id, 0);
                push_copies(self.out, self.dests, stream, task, values, |_| {
                    Anchors::new()
                });
                self.acked_at_once.push(msg_id);
            }
            SpoutEmit::Untracked => {
                push_copies(self.out, self.dests, stream, task, values, |_| {
                    Anchors::new()
                });
            }
        }
        self.counters.emitted += 1;
        self.counters.transferred += n as u64;
        Ok(n)
    }

    /// The injected time of this call, in ns since the run started.
    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }
}

/// A bolt's output collector (Storm's `OutputCollector`).
pub struct OutputCollector<'a> {
    task: TaskId,
    tracker: &'a mut Tracker,
    router: &'a mut Router,
    out: &'a mut Outbox,
    counters: &'a mut ExecutorCounters,
    dests: &'a mut Vec<TaskId>,
    ackers: AckerRoute,
}

impl OutputCollector<'_> {
    /// Emits `values` on the default stream anchored to `anchors` (one input, several for
    /// multi-anchoring, none for an unanchored emit). Returns the number of tasks it went to.
    ///
    /// # Errors
    /// See [`emit_to`](Self::emit_to).
    pub fn emit(&mut self, anchors: &[&Input], values: Values) -> Result<usize, EmitError> {
        let s = self.router.default_stream()?;
        self.emit_to(s, anchors, values, None)
    }

    /// Emits on the named stream.
    ///
    /// # Errors
    /// See [`emit_to`](Self::emit_to).
    pub fn emit_stream(
        &mut self,
        stream: &str,
        anchors: &[&Input],
        values: Values,
    ) -> Result<usize, EmitError> {
        let s = self.router.stream_id(stream)?;
        self.emit_to(s, anchors, values, None)
    }

    /// Emits on the named stream to one task subscribing with direct grouping.
    ///
    /// # Errors
    /// See [`emit_to`](Self::emit_to).
    pub fn emit_direct(
        &mut self,
        task: TaskId,
        stream: &str,
        anchors: &[&Input],
        values: Values,
    ) -> Result<usize, EmitError> {
        let s = self.router.stream_id(stream)?;
        self.emit_to(s, anchors, values, Some(task))
    }

    /// Emits on a stream given by id, optionally direct to one task.
    ///
    /// # Errors
    /// [`EmitError::UnknownStream`] / [`EmitError::UnknownStreamId`], [`EmitError::FieldCount`],
    /// [`EmitError::NotDirectTarget`], [`EmitError::Anchor`] (an input already acked or failed,
    /// or more than [`MAX_ROOTS`] trees). Nothing is sent on error.
    pub fn emit_to(
        &mut self,
        stream: StreamId,
        anchors: &[&Input],
        values: Values,
        direct: Option<TaskId>,
    ) -> Result<usize, EmitError> {
        let r = self.emit_inner(stream, anchors, values, direct);
        if r.is_err() {
            self.counters.errors += 1;
        }
        r
    }

    fn emit_inner(
        &mut self,
        stream: StreamId,
        anchors: &[&Input],
        values: Values,
        direct: Option<TaskId>,
    ) -> Result<usize, EmitError> {
        self.router.route(stream, &values, direct, self.dests)?;
        let handles: SmallVec<[InputHandle; 4]> = anchors.iter().map(|i| i.handle).collect();
        let n = self.dests.len();
        if n == 0 {
            // Still check the anchors, so misuse is reported even with no subscriber.
            for &h in &handles {
                self.tracker.anchors(h)?;
            }
        } else {
            // The first copy checks everything before anything is sent.
            let first = self.tracker.emit(&handles)?;
            let mut first = Some(first);
            let tracker = &mut *self.tracker;
            push_copies(self.out, self.dests, stream, self.task, values, |_| {
                first
                    .take()
                    .unwrap_or_else(|| tracker.emit(&handles).unwrap_or_default())
            });
        }
        self.counters.emitted += 1;
        self.counters.transferred += n as u64;
        Ok(n)
    }

    fn send(&mut self, msgs: &[AckerMessage]) {
        for &m in msgs {
            if let Some(a) = self.ackers.task(m.root()) {
                self.out.push(a, Message::Acker(m));
            }
        }
    }

    /// Acks `input`: its trees learn that it is done (one `Ack` per tree).
    ///
    /// # Errors
    /// [`EmitError::Anchor`] if the input does not belong to this task (or was already closed).
    pub fn ack(&mut self, input: Input) -> Result<(), EmitError> {
        match self.tracker.ack(input.handle) {
            Ok(m) => {
                self.send(&m);
                self.counters.acked += 1;
                Ok(())
            }
            Err(e) => {
                self.counters.errors += 1;
                Err(e.into())
            }
        }
    }

    /// Fails `input`: each of its trees fails (the spout replays the root).
    ///
    /// # Errors
    /// As [`ack`](Self::ack).
    pub fn fail(&mut self, input: Input) -> Result<(), EmitError> {
        match self.tracker.fail(input.handle) {
            Ok(m) => {
                self.send(&m);
                self.counters.failed += 1;
                Ok(())
            }
            Err(e) => {
                self.counters.errors += 1;
                Err(e.into())
            }
        }
    }

    /// Asks for more time for every tree `input` belongs to (Storm's `resetTimeout`).
    ///
    /// # Errors
    /// As [`ack`](Self::ack).
    pub fn reset_timeout(&mut self, input: &Input) -> Result<(), EmitError> {
        match self.tracker.reset_timeout(input.handle) {
            Ok(m) => {
                self.send(&m);
                Ok(())
            }
            Err(e) => {
                self.counters.errors += 1;
                Err(e.into())
            }
        }
    }
}

/// A [`BasicBolt`]'s collector: every emit is anchored to the current input.
pub struct BasicOutputCollector<'c, 'a> {
    collector: &'c mut OutputCollector<'a>,
    input: &'c Input,
}

impl BasicOutputCollector<'_, '_> {
    /// Emits on the default stream, anchored to the input.
    ///
    /// # Errors
    /// As [`OutputCollector::emit_to`].
    pub fn emit(&mut self, values: Values) -> Result<usize, EmitError> {
        self.collector.emit(&[self.input], values)
    }

    /// Emits on the named stream, anchored to the input.
    ///
    /// # Errors
    /// As [`OutputCollector::emit_to`].
    pub fn emit_stream(&mut self, stream: &str, values: Values) -> Result<usize, EmitError> {
        self.collector.emit_stream(stream, &[self.input], values)
    }

    /// Emits direct to `task` on the named stream, anchored to the input.
    ///
    /// # Errors
    /// As [`OutputCollector::emit_to`].
    pub fn emit_direct(
        &mut self,
        task: TaskId,
        stream: &str,
        values: Values,
    ) -> Result<usize, EmitError> {
        self.collector
            .emit_direct(task, stream, &[self.input], values)
    }

    /// Asks for more time for the input's trees.
    ///
    /// # Errors
    /// As [`OutputCollector::reset_timeout`].
    pub fn reset_timeout(&mut self) -> Result<(), EmitError> {
        self.collector.reset_timeout(self.input)
    }
}

/// A spout task's executor (Storm's `SpoutExecutor`).
pub struct SpoutExecutor {
    task: TaskId,
    user: Box<dyn Spout>,
    pending: Pending,
    router: Router,
    counters: ExecutorCounters,
    latency_ns: Histogram<u64>,
    dests: Vec<TaskId>,
    edges: Vec<EdgeId>,
    acked_at_once: Vec<MessageId>,
    ackers: AckerRoute,
}

impl SpoutExecutor {
    fn next_tuple(&mut self, now_ns: u64, out: &mut Outbox) -> bool {
        if self.pending.is_full() {
            return false;
        }
        {
            let mut c = SpoutOutputCollector {
                task: self.task,
                now_ns,
                pending: &mut self.pending,
                router: &mut self.router,
                out,
                counters: &mut self.counters,
                dests: &mut self.dests,
                edges: &mut self.edges,
                acked_at_once: &mut self.acked_at_once,
                ackers: self.ackers,
            };
            self.user.next_tuple(&mut c);
        }
        for i in 0..self.acked_at_once.len() {
            let id = self.acked_at_once[i];
            self.user.ack(id);
            self.counters.acked += 1;
        }
        self.acked_at_once.clear();
        true
    }

    fn notice(&mut self, notice: Notice, now_ns: u64) {
        match notice {
            Notice::Completed { root } => match self.pending.completed(root, now_ns) {
                Some(c) => {
                    self.latency_ns
                        .saturating_record(c.complete_latency_ns.max(1));
                    self.counters.acked += 1;
                    self.user.ack(c.msg_id);
                }
                None => self.counters.ignored += 1,
            },
            Notice::Failed { root } => match self.pending.failed(root) {
                Some(id) => {
                    self.counters.failed += 1;
                    self.user.fail(id);
                }
                None => self.counters.ignored += 1,
            },
            Notice::Reset { root } => {
                if !self.pending.reset(root, now_ns) {
                    self.counters.ignored += 1;
                }
            }
        }
    }

    fn tick(&mut self, now_ns: u64) {
        let user = &mut self.user;
        let counters = &mut self.counters;
        for id in self.pending.tick(now_ns) {
            counters.timed_out += 1;
            user.fail(id);
        }
    }
}

/// A bolt task's executor (Storm's `BoltExecutor`).
pub struct BoltExecutor {
    task: TaskId,
    user: Box<dyn Bolt>,
    tracker: Tracker,
    router: Router,
    counters: ExecutorCounters,
    dests: Vec<TaskId>,
    ackers: AckerRoute,
}

impl BoltExecutor {
    fn handle(&mut self, t: Tuple, out: &mut Outbox) {
        self.counters.executed += 1;
        let handle = match self.tracker.receive(&t.anchors) {
            Ok(h) => h,
            Err(_) => {
                // Every input slot is open: fail the tuple's trees at once (they are replayed).
                self.counters.errors += 1;
                for root in t.anchors.roots() {
                    if let Some(a) = self.ackers.task(root) {
                        out.push(a, Message::Acker(AckerMessage::Fail { root }));
                    }
                }
                return;
            }
        };
        let input = Input {
            handle,
            stream: t.stream,
            source_task: t.source_task,
            values: t.values,
        };
        let mut c = OutputCollector {
            task: self.task,
            tracker: &mut self.tracker,
            router: &mut self.router,
            out,
            counters: &mut self.counters,
            dests: &mut self.dests,
            ackers: self.ackers,
        };
        self.user.execute(input, &mut c);
    }
}

/// An acker task's executor (Storm's `Acker` bolt), around an [`AckerTable`].
///
/// # Back-pressure on a full table
///
/// A message that would create an entry in a full table is refused by acker-core
/// ([`TableError::Full`]) and changes nothing. The acker must keep
/// draining its input (acks and decisions must always flow, or the cycle
/// spout → bolt → acker → spout could deadlock), so instead of stopping it *parks* the refused
/// message in a bounded queue preallocated at build time (no allocation afterwards; capacity
/// [`Plan::acker_park_capacity`], default `max(acker capacity / 8, 64)`), and retries the parked
/// messages after every decision that frees a slot (`Completed`, `Failed`) and after every tick
/// (expiry frees slots): the first parked root (roots wait in the order of their oldest parked
/// message) is admitted through its oldest message, then at once its other parked messages are
/// applied in order; this repeats until the first root's message is refused again. Only
/// when the park queue itself is full is a message dropped, counted in
/// [`ExecutorCounters::dropped_full`]; its tree then times out at the spout and is replayed.
///
/// Order: the table is full exactly when it holds `capacity` live roots, and the queue is retried
/// whenever that number drops, so between two messages the queue holds only messages for roots
/// absent from a full table. A new message for a root with parked messages therefore finds its
/// root absent and the table full, and is parked behind them: the messages of one root are
/// applied in their arrival order. Messages for live roots apply at once, overtaking parked
/// messages of other roots (which they cannot affect). A decision needs the root's single
/// `Init`, and a decided entry is removed, so no root is decided twice: a parked message applied
/// after its tree was decided only makes an orphan entry that expires silently.
///
/// The park queue groups messages by root (an index preallocated with it), so parking and
/// admitting are O(1) each; see the runtime section of `benches/RESULTS.md` for the overload
/// figures.
pub struct AckerExecutor {
    task: TaskId,
    table: AckerTable<Vec<acker_core::Slot>>,
    counters: ExecutorCounters,
    /// Messages refused by the full table, by root, oldest first (fixed capacity).
    parked: ParkQueue,
}

impl AckerExecutor {
    fn acker_message(&mut self, m: AckerMessage, out: &mut Outbox) {
        match self.apply(m, out) {
            Applied::Done => {}
            Applied::Freed => self.retry_parked(out),
            Applied::Full => self.park(m),
        }
    }

    /// Applies `m` to the table; a decision goes out as a notice to the spout task.
    #[inline]
    fn apply(&mut self, m: AckerMessage, out: &mut Outbox) -> Applied {
        let root = m.root();
        match self.table.apply(m) {
            Ok(Decision::Pending) => {}
            Ok(Decision::Completed { spout_task }) => {
                self.counters.executed += 1;
                self.counters.acked += 1;
                out.push(spout_task, Message::Notice(Notice::Completed { root }));
                return if self.parked.is_empty() {
                    Applied::Done
                } else {
                    Applied::Freed
                };
            }
            Ok(Decision::Failed { spout_task }) => {
                self.counters.executed += 1;
                self.counters.failed += 1;
                out.push(spout_task, Message::Notice(Notice::Failed { root }));
                return if self.parked.is_empty() {
                    Applied::Done
                } else {
                    Applied::Freed
                };
            }
            Ok(Decision::Reset { spout_task }) => {
                out.push(spout_task, Message::Notice(Notice::Reset { root }));
            }
            Err(TableError::Full) => return Applied::Full,
            Err(_) => self.counters.errors += 1,
        }
        self.counters.executed += 1;
        Applied::Done
    }

    /// Parks `m` at the back of the queue, or drops it (counted) when the queue is full.
    fn park(&mut self, m: AckerMessage) {
        match self.parked.push(m) {
            Ok(()) => self.counters.parked += 1,
            Err(_) => self.counters.dropped_full += 1,
        }
    }

    /// Admits parked messages while the table has room: the root whose oldest parked message is
    /// the oldest of all enters the table through it, then at once the root's other parked
    /// messages are applied, in order (they could not apply before, their root being absent).
    /// Stops when a root's oldest message is refused: the table is full, and every parked message
    /// is for a root absent from it, so none could apply.
    ///
    /// Taking a root's later messages along matters: left behind a message for a new root that
    /// does not fit, a message for an admitted root (say its completing ack) would wait, and if
    /// every root in the table waited like that nothing would free a slot again (head-of-line
    /// blocking until expiry; found by the `small_acker_table_parks_and_every_tree_completes`
    /// shell test). The park queue indexes messages by root, so each step is O(1).
    #[inline(never)]
    fn retry_parked(&mut self, out: &mut Outbox) {
        while let Some(root) = self.parked.front_root() {
            let Some(m) = self.parked.peek(root) else {
                // Not reached: a root in the order has parked messages.
                self.parked.retire_front(false);
                continue;
            };
            if let Applied::Full = self.apply(m, out) {
                return;
            }
            let mut more = self.parked.pop(root);
            while more {
                let Some(m) = self.parked.peek(root) else {
                    break;
                };
                if let Applied::Full = self.apply(m, out) {
                    // The tree was just decided and the table is full again: the rest (orphans
                    // to be) waits, behind the other roots.
                    break;
                }
                more = self.parked.pop(root);
            }
            self.parked.retire_front(more);
        }
    }

    fn tick(&mut self, now_ns: u64, out: &mut Outbox) {
        self.table.tick(now_ns);
        if !self.parked.is_empty() {
            self.retry_parked(out);
        }
    }

    /// Roots live in the table.
    pub fn live_roots(&self) -> usize {
        self.table.len()
    }

    /// Messages waiting in the park queue for a free table slot.
    pub fn parked_messages(&self) -> usize {
        self.parked.len()
    }
}

/// What applying one acker message did.
enum Applied {
    /// Applied; no slot was freed or nothing is parked.
    Done,
    /// Applied, freed a slot, and messages are parked: retry them.
    Freed,
    /// Refused by the full table; nothing changed.
    Full,
}

/// One task's executor: a spout, a bolt or an acker (see the [module docs](self) for the contract).
// Executors are few and long-lived: keeping them unboxed saves an indirection per message.
#[allow(clippy::large_enum_variant)]
pub enum Executor {
    /// A spout task.
    Spout(SpoutExecutor),
    /// A bolt task.
    Bolt(BoltExecutor),
    /// An acker task.
    Acker(AckerExecutor),
}

impl fmt::Debug for Executor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Executor")
            .field("task", &self.task())
            .field("kind", &self.kind())
            .field("counters", &self.counters())
            .finish()
    }
}

impl Executor {
    /// The task id.
    pub fn task(&self) -> TaskId {
        match self {
            Executor::Spout(e) => e.task,
            Executor::Bolt(e) => e.task,
            Executor::Acker(e) => e.task,
        }
    }

    /// Spout, bolt or acker.
    pub fn kind(&self) -> TaskKind {
        match self {
            Executor::Spout(_) => TaskKind::Spout,
            Executor::Bolt(_) => TaskKind::Bolt,
            Executor::Acker(_) => TaskKind::Acker,
        }
    }

    /// Handles one message at `now_ns`, appending what it sends to `out`.
    pub fn handle(&mut self, message: Message, now_ns: u64, out: &mut Outbox) {
        match message {
            Message::Tuple(t) => self.handle_tuple(t, out),
            Message::Acker(m) => self.handle_acker(m, out),
            Message::Notice(n) => self.handle_notice(n, now_ns),
            Message::Tick => self.handle_tick(now_ns, out),
        }
    }

    /// [`handle`](Self::handle) for a data tuple.
    #[inline]
    pub(crate) fn handle_tuple(&mut self, tuple: Tuple, out: &mut Outbox) {
        match self {
            Executor::Bolt(e) => e.handle(tuple, out),
            Executor::Spout(e) => e.counters.ignored += 1,
            Executor::Acker(e) => e.counters.ignored += 1,
        }
    }

    /// [`handle`](Self::handle) for an acker message (a shell's control lane calls it without
    /// building a whole [`Message`]).
    #[inline]
    pub(crate) fn handle_acker(&mut self, m: AckerMessage, out: &mut Outbox) {
        match self {
            Executor::Acker(e) => e.acker_message(m, out),
            Executor::Spout(e) => e.counters.ignored += 1,
            Executor::Bolt(e) => e.counters.ignored += 1,
        }
    }

    /// [`handle`](Self::handle) for an acker's notice. A user `ack` / `fail` may not emit, so
    /// nothing is sent.
    #[inline]
    pub(crate) fn handle_notice(&mut self, n: Notice, now_ns: u64) {
        match self {
            Executor::Spout(e) => e.notice(n, now_ns),
            Executor::Bolt(e) => e.counters.ignored += 1,
            Executor::Acker(e) => e.counters.ignored += 1,
        }
    }

    /// [`handle`](Self::handle) for a tick. An acker may apply parked messages (expiry freed
    /// slots), so decisions can go out.
    #[inline]
    pub(crate) fn handle_tick(&mut self, now_ns: u64, out: &mut Outbox) {
        match self {
            Executor::Spout(e) => e.tick(now_ns),
            Executor::Bolt(_) => {}
            Executor::Acker(e) => e.tick(now_ns, out),
        }
    }

    /// For a spout that [`can_emit`](Self::can_emit): calls the user's `next_tuple` once at
    /// `now_ns` and returns `true`. Otherwise (throttled, or not a spout) does nothing and returns
    /// `false`.
    pub fn next_tuple(&mut self, now_ns: u64, out: &mut Outbox) -> bool {
        match self {
            Executor::Spout(e) => e.next_tuple(now_ns, out),
            _ => false,
        }
    }

    /// Whether this is a spout below max spout pending (so `next_tuple` would be called).
    pub fn can_emit(&self) -> bool {
        match self {
            Executor::Spout(e) => !e.pending.is_full(),
            _ => false,
        }
    }

    /// For a spout: whether the user's spout reports it is done ([`Spout::is_done`]).
    /// Bolts and ackers are always done.
    pub fn is_done(&self) -> bool {
        match self {
            Executor::Spout(e) => e.user.is_done(),
            _ => true,
        }
    }

    /// Roots pending at a spout (0 for bolts), or live in an acker's table.
    pub fn pending_roots(&self) -> usize {
        match self {
            Executor::Spout(e) => e.pending.len(),
            Executor::Bolt(_) => 0,
            Executor::Acker(e) => e.table.len(),
        }
    }

    /// Messages an acker holds in its park queue, waiting for a free table slot (see
    /// [`AckerExecutor`]); 0 for spouts and bolts.
    pub fn parked_messages(&self) -> usize {
        match self {
            Executor::Acker(e) => e.parked.len(),
            _ => 0,
        }
    }

    /// Open (unacked, unfailed) inputs of a bolt; 0 otherwise.
    pub fn open_inputs(&self) -> usize {
        match self {
            Executor::Bolt(e) => e.tracker.open_inputs(),
            _ => 0,
        }
    }

    /// The counters so far.
    pub fn counters(&self) -> ExecutorCounters {
        match self {
            Executor::Spout(e) => e.counters,
            Executor::Bolt(e) => e.counters,
            Executor::Acker(e) => e.counters,
        }
    }

    /// For a spout: the complete latency (ns, emit to `Completed`) of every tree acked by an
    /// acker. `None` for bolts and ackers.
    pub fn complete_latency_ns(&self) -> Option<&Histogram<u64>> {
        match self {
            Executor::Spout(e) => Some(&e.latency_ns),
            _ => None,
        }
    }

    /// Calls the user's `close` / `cleanup` (nothing for ackers).
    pub fn shutdown(&mut self) {
        match self {
            Executor::Spout(e) => e.user.close(),
            Executor::Bolt(e) => e.user.cleanup(),
            Executor::Acker(_) => {}
        }
    }
}

/// Why [`Plan::build_executor`] could not build a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BuildError {
    /// The plan has no such task.
    UnknownTask(TaskId),
    /// acker-core refused a capacity or timeout derived from the config (not expected after
    /// [`Topology::plan`](crate::Topology::plan) checked it).
    Config(TaskId),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::UnknownTask(t) => write!(f, "no task {t} in the plan"),
            BuildError::Config(t) => write!(f, "task {t}: capacity or timeout refused"),
        }
    }
}

impl std::error::Error for BuildError {}

impl Plan {
    /// Builds task `task`'s executor fresh: a new user instance from the component's factory
    /// (then `open` / `prepare`), or a new acker with an empty table. Its randomness is seeded from
    /// ([`Config::seed`](crate::Config::seed), `task`) only. `placement` says which worker every
    /// task is in (used by local-or-shuffle grouping).
    ///
    /// To restart a task after a crash use [`restart_executor`](Self::restart_executor): a
    /// second executor built here for the same task would draw the same root ids as the first
    /// and take the acker's notices for its predecessor's trees as its own.
    ///
    /// # Errors
    /// [`BuildError::UnknownTask`] for a task id beyond the plan.
    pub fn build_executor(
        &self,
        task: TaskId,
        placement: &Placement,
    ) -> Result<Executor, BuildError> {
        self.restart_executor(task, placement, 0)
    }

    /// Builds incarnation `incarnation` of task `task`'s executor, for a restart after a crash
    /// (state lost, as in a real crash). Incarnation 0 is [`build_executor`](Self::build_executor);
    /// every other incarnation draws its root and edge ids from its own stream, seeded from
    /// ([`Config::seed`](crate::Config::seed), `task`, `incarnation`), so a restarted spout never
    /// hands out its predecessor's root ids (a Storm spout restarted in a new worker likewise draws
    /// fresh random ids) and late notices for the old roots are ignored and counted.
    ///
    /// # Errors
    /// [`BuildError::UnknownTask`] for a task id beyond the plan.
    pub fn restart_executor(
        &self,
        task: TaskId,
        placement: &Placement,
        incarnation: u64,
    ) -> Result<Executor, BuildError> {
        let info = self
            .tasks()
            .get(task as usize)
            .ok_or(BuildError::UnknownTask(task))?;
        let seed = match incarnation {
            0 => task_seed(self.config.seed, task),
            n => splitmix64(task_seed(self.config.seed, task) ^ splitmix64(n)),
        };
        let ackers = AckerRoute {
            base: self.acker_tasks().start,
            count: self.config.num_ackers,
        };
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        match info.kind {
            TaskKind::Acker => {
                let timeout = self.config.timeout_ns().unwrap_or(u64::MAX);
                let table =
                    AckerTable::new(vec![acker_core::Slot::EMPTY; self.acker_capacity], timeout)
                        .map_err(|_| BuildError::Config(task))?;
                Ok(Executor::Acker(AckerExecutor {
                    task,
                    table,
                    counters: ExecutorCounters::default(),
                    parked: ParkQueue::with_capacity(self.acker_park_capacity),
                }))
            }
            TaskKind::Spout | TaskKind::Bolt => {
                let comp = self
                    .component_of(task)
                    .ok_or(BuildError::UnknownTask(task))?;
                let c = &self.topology.inner.components[comp];
                let context = TopologyContext {
                    task,
                    component: c.id.clone(),
                    component_tasks: c.tasks.clone(),
                    task_index: info.index,
                    num_ackers: self.config.num_ackers,
                    topology_seed: self.config.seed,
                    output_streams: self.stream_names(comp),
                };
                let router = Router::new(self, comp, task, placement, &mut rng);
                let max_fanout: usize = c
                    .routes
                    .iter()
                    .map(|r| r.iter().map(|d| d.dest_tasks.len()).sum::<usize>())
                    .max()
                    .unwrap_or(0);
                let sub_seed = rng.next_u64();
                if let Some(f) = self.spout_factory(comp) {
                    let mut user = f();
                    user.open(&context);
                    let cap = self.config.pending_capacity();
                    let pending = SpoutPending::new(
                        (0..cap.saturating_mul(2))
                            .map(|_| PendingSlot::default())
                            .collect::<Vec<_>>(),
                        SpoutConfig {
                            spout_task: task,
                            num_ackers: self.config.num_ackers,
                            max_spout_pending: cap,
                            message_timeout_ns: self.config.timeout_ns(),
                            seed: sub_seed,
                        },
                    )
                    .map_err(|_| BuildError::Config(task))?;
                    Ok(Executor::Spout(SpoutExecutor {
                        task,
                        user,
                        pending,
                        router,
                        counters: ExecutorCounters::default(),
                        latency_ns: latency_histogram(),
                        dests: Vec::with_capacity(max_fanout),
                        edges: Vec::with_capacity(max_fanout),
                        acked_at_once: Vec::with_capacity(16),
                        ackers,
                    }))
                } else {
                    let f = self
                        .bolt_factory(comp)
                        .ok_or(BuildError::UnknownTask(task))?;
                    let mut user = f();
                    user.prepare(&context);
                    let tracker = InputTracker::new(
                        (0..self.config.max_open_inputs)
                            .map(|_| InputSlot::default())
                            .collect::<Vec<_>>(),
                        sub_seed,
                    )
                    .map_err(|_| BuildError::Config(task))?;
                    Ok(Executor::Bolt(BoltExecutor {
                        task,
                        user,
                        tracker,
                        router,
                        counters: ExecutorCounters::default(),
                        dests: Vec::with_capacity(max_fanout),
                        ackers,
                    }))
                }
            }
        }
    }

    /// Builds every task's executor, in task-id order.
    ///
    /// # Errors
    /// As [`build_executor`](Self::build_executor) (not expected for a plan's own tasks).
    pub fn build_all(&self, placement: &Placement) -> Result<Vec<Executor>, BuildError> {
        (0..self.tasks().len())
            .map(|t| self.build_executor(t as TaskId, placement))
            .collect()
    }
}
