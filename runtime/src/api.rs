//! The user's API: what a topology's author implements ([`Spout`], [`Bolt`], [`BasicBolt`]) and
//! calls (the output collectors, [`Input`], [`TopologyContext`]), the errors those calls return
//! ([`EmitError`], [`FailedException`]) and the counters a run reports ([`ExecutorCounters`]).
//!
//! The executors that run this code are in [`crate::executor`]; this module depends on nothing
//! of theirs but the router that picks destination tasks.

use std::cell::Cell;
use std::fmt;
use std::mem::ManuallyDrop;
use std::ops::Range;
use std::rc::Rc;

use acker_core::{
    AnchorError, Anchors, EdgeId, IdGenerator, InputAnchors, InputMessages, PendingError,
    PendingSlot, SpoutEmit, SpoutPending, TaskId,
};

use crate::executor::router::{push_copies, AckerRoute, RouteError, Router};
use crate::message::{
    Message, MessageId, Outbox, StreamId, Tuple, TupleAnchors, Value, Values, MAX_ROOTS,
};

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

    fn execute(&mut self, mut input: Input, collector: &mut OutputCollector<'_>) {
        let result = {
            let mut basic = BasicOutputCollector {
                collector,
                input: &input,
            };
            self.inner.execute(&input, &mut basic)
        };
        // The handle is open (the adapter owns it), so neither call can fail. Closed in place:
        // moving the input into `ack` would copy it (a `memcpy` of ≈ 140 bytes a tuple).
        collector.close_owned(&mut input, result.is_err());
    }

    fn cleanup(&mut self) {
        self.inner.cleanup();
    }
}

/// A received tuple, as a bolt sees it: its values, where it came from, and its anchoring state.
/// Ack or fail it once, through the collector of the bolt that received it.
///
/// # An input keeps its own state (no per-bolt table)
///
/// As in Storm, the input itself carries its anchors and the XOR of the edge ids emitted anchored
/// to it ([`acker_core::InputAnchors`]); the bolt executor keeps no table of open inputs. So a
/// bolt that holds an input for ever, or drops it, blocks nothing: every other input is processed
/// as usual.
///
/// - **Dropped unacked.** An `Input` dropped without an ack or a fail sends nothing: its trees
///   are left to time out at their spouts, which then replay them (Storm's behaviour; failing at
///   once would need the drop to reach the acker, and an input dropped while its bolt is being
///   torn down has nowhere to send). The bolt counts it in
///   [`ExecutorCounters::inputs_dropped_unacked`] (untracked inputs, whose ack would send nothing
///   anyway, are counted too).
/// - **Held past its expiry.** An input expires twice the message timeout after it was received
///   (or after its last [`OutputCollector::reset_timeout`]): by then every spout has timed its
///   trees out (a spout fails a pending tuple between T and 2T after the emit or the last reset).
///   Acking, failing, resetting or anchoring to an expired input is refused with
///   [`EmitError::InputExpired`] and sends nothing: a late ack could only make an orphan acker
///   entry. Acks and fails refused so are counted in [`ExecutorCounters::inputs_expired`]. With
///   message timeouts off an input never expires.
///
/// An `Input` is neither `Send` nor `Sync`: it belongs to the thread of the bolt that received it.
pub struct Input {
    anchors: InputAnchors<MAX_ROOTS>,
    stream: StreamId,
    source_task: TaskId,
    /// Dropped by `Input`'s `Drop`, and only when they own heap memory (see there).
    values: ManuallyDrop<Values>,
    /// When the input expires, on the shell's clock (`u64::MAX`: never).
    expires_ns: Cell<u64>,
    /// The receiving bolt's ledger: names the bolt, counts live and dropped inputs.
    ledger: Rc<InputLedger>,
    /// Acked or failed (or refused as expired): dropping it is not a loss.
    closed: bool,
}

/// What a bolt executor shares with the inputs it handed out: how many are alive, how many were
/// dropped unacked. Also the identity of the bolt (an input names its bolt by this `Rc`).
#[derive(Debug, Default)]
pub(crate) struct InputLedger {
    pub(crate) live: Cell<u64>,
    pub(crate) dropped: Cell<u64>,
}

impl Drop for Input {
    #[inline]
    fn drop(&mut self) {
        let l = &self.ledger;
        l.live.set(l.live.get() - 1);
        if !self.closed {
            l.dropped.set(l.dropped.get() + 1);
        }
        // Values that own heap memory are dropped here. The others (integers, words of up to
        // 24 bytes inline: every tuple of word count but the long lines) own nothing, so leaving
        // them undropped leaks nothing and saves `SmallVec`'s out-of-line drop call a tuple.
        if self.values.spilled() || !self.values.iter().all(Value::owns_no_heap) {
            drop(std::mem::take(&mut *self.values));
        }
    }
}

impl fmt::Debug for Input {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Input")
            .field("stream", &self.stream)
            .field("source_task", &self.source_task)
            .field("values", &*self.values)
            .field("anchors", self.anchors.anchors())
            .field("expires_ns", &self.expires_ns.get())
            .finish()
    }
}

impl Input {
    /// The input a bolt with `ledger` receives as `tuple` at `now_ns`; it expires `ttl_ns` later
    /// (never with `None`).
    pub(crate) fn received(
        tuple: Tuple,
        now_ns: u64,
        ttl_ns: Option<u64>,
        ledger: &Rc<InputLedger>,
    ) -> Self {
        ledger.live.set(ledger.live.get() + 1);
        Self {
            anchors: InputAnchors::new(tuple.anchors),
            stream: tuple.stream,
            source_task: tuple.source_task,
            values: ManuallyDrop::new(tuple.values),
            expires_ns: Cell::new(expiry(now_ns, ttl_ns)),
            ledger: ledger.clone(),
            closed: false,
        }
    }

    /// [`received`](Self::received) for a tuple its owner keeps: its values and anchors are
    /// taken (`tuple` is left with none: it owns nothing), its stream and source copied. Built
    /// straight from the owner's memory: no copy of the whole tuple on the way.
    #[inline(always)]
    pub(crate) fn received_in_place(
        tuple: &mut Tuple,
        now_ns: u64,
        ttl_ns: Option<u64>,
        ledger: &Rc<InputLedger>,
    ) -> Self {
        ledger.live.set(ledger.live.get() + 1);
        Self {
            anchors: InputAnchors::new(std::mem::take(&mut tuple.anchors)),
            stream: tuple.stream,
            source_task: tuple.source_task,
            values: ManuallyDrop::new(std::mem::take(&mut tuple.values)),
            expires_ns: Cell::new(expiry(now_ns, ttl_ns)),
            ledger: ledger.clone(),
            closed: false,
        }
    }

    /// The anchors it arrived with: the (root, edge XOR) pairs of the trees it belongs to (empty
    /// for an untracked tuple).
    pub fn anchors(&self) -> &TupleAnchors {
        self.anchors.anchors()
    }

    /// When it expires, in ns on the shell's clock (`u64::MAX` with message timeouts off); see
    /// the [type docs](Input).
    pub fn expires_ns(&self) -> u64 {
        self.expires_ns.get()
    }

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
    /// The anchoring was refused: [`AnchorError::TooManyRoots`], or
    /// [`AnchorError::UnknownInput`] for an input received by another bolt task.
    Anchor(AnchorError),
    /// The input was held past its expiry (see [`Input`]): its trees have timed out at their
    /// spouts, so the ack, fail, reset or anchored emit is refused and nothing is sent.
    InputExpired {
        /// When the input expired, ns.
        expires_ns: u64,
        /// The time of the refused call, ns.
        now_ns: u64,
    },
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
            EmitError::InputExpired { expires_ns, now_ns } => write!(
                f,
                "input held past its expiry ({:.3} s ago): its trees have timed out, nothing sent",
                now_ns.saturating_sub(*expires_ns) as f64 / 1e9
            ),
        }
    }
}

impl std::error::Error for EmitError {}

impl From<RouteError> for EmitError {
    fn from(e: RouteError) -> Self {
        match e {
            RouteError::UnknownStream(s) => EmitError::UnknownStream(s),
            RouteError::UnknownStreamId(s) => EmitError::UnknownStreamId(s),
            RouteError::FieldCount { expected, got } => EmitError::FieldCount { expected, got },
            RouteError::NotDirectTarget(t) => EmitError::NotDirectTarget(t),
        }
    }
}

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
    /// Inputs handed to the bolt's `execute`; messages applied by an acker (in the threaded
    /// shell, consecutive acks of one root sent to one acker may arrive coalesced into one
    /// message: see [`crate::shell`]'s module docs, "Batching").
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
    /// Refusals: user emits/acks refused (including those on expired inputs), acker messages
    /// refused by the acker table as invalid (root 0, a second init).
    pub errors: u64,
    /// Bolt: inputs dropped without an ack or a fail (their trees time out at the spouts and are
    /// replayed). See [`Input`].
    pub inputs_dropped_unacked: u64,
    /// Bolt: acks and fails refused because the input was held past its expiry (twice the
    /// message timeout after it arrived or was last reset): nothing was sent. See [`Input`].
    pub inputs_expired: u64,
    /// Acker: messages refused by a full acker table ([`acker_core::TableError::Full`]) and parked
    /// in the acker's back-pressure queue, to be applied, in order, once a slot frees.
    pub parked: u64,
    /// Acker: messages dropped because the table was full *and* the park queue was full. The
    /// tree then times out at its spout and is replayed (at-least-once still holds), exactly as
    /// if the message had been lost on the way.
    pub dropped_full: u64,
    /// Acker: acks, fails and resets for a root it decided `Failed` a short while before (the
    /// failed tree's other branches finishing late), dropped instead of each making an orphan
    /// entry that would hold a table slot for 2T to 3T (for ever with message timeouts off). See
    /// [`AckerExecutor`](crate::AckerExecutor), "Late messages of failed trees".
    pub orphans_avoided: u64,
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
        self.orphans_avoided += other.orphans_avoided;
        self.inputs_dropped_unacked += other.inputs_dropped_unacked;
        self.inputs_expired += other.inputs_expired;
    }
}

pub(crate) type Pending = SpoutPending<MessageId, Vec<PendingSlot<MessageId>>>;

/// The spout's output collector (Storm's `SpoutOutputCollector`).
pub struct SpoutOutputCollector<'a> {
    pub(crate) now_ns: u64,
    /// The spout executor's state the collector works with (one pointer: building the
    /// collector for every `next_tuple` costs three stores instead of ten).
    pub(crate) spout: &'a mut SpoutState,
    pub(crate) out: &'a mut Outbox,
}

/// What a spout task's [`SpoutOutputCollector`] works with, kept by its executor across calls.
pub(crate) struct SpoutState {
    pub(crate) task: TaskId,
    pub(crate) pending: Pending,
    pub(crate) router: Router,
    pub(crate) counters: ExecutorCounters,
    /// The destinations of the emit being sent.
    pub(crate) dests: Vec<TaskId>,
    /// One edge id a copy of the emit being sent.
    pub(crate) edges: Vec<EdgeId>,
    /// Message ids of this call's emits acked at once (no acker): the user's `ack` follows the
    /// call.
    pub(crate) acked_at_once: Vec<MessageId>,
    pub(crate) ackers: AckerRoute,
}

impl SpoutOutputCollector<'_> {
    /// Emits `values` on the default stream; with `Some(msg_id)` the tuple is tracked (its tree is
    /// acked or failed back to this spout). Returns the number of tasks it was sent to.
    ///
    /// # Errors
    /// See [`emit_stream`](Self::emit_stream).
    #[inline]
    pub fn emit(&mut self, values: Values, msg_id: Option<MessageId>) -> Result<usize, EmitError> {
        let s = self.spout.router.default_stream()?;
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
        let s = self.spout.router.stream_id(stream)?;
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
        let s = self.spout.router.stream_id(stream)?;
        self.emit_to(s, values, msg_id, Some(task))
    }

    /// Emits on a stream given by id (see [`TopologyContext::stream_id`]), optionally direct.
    ///
    /// # Errors
    /// As [`emit_direct`](Self::emit_direct), plus [`EmitError::UnknownStreamId`].
    #[inline]
    pub fn emit_to(
        &mut self,
        stream: StreamId,
        values: Values,
        msg_id: Option<MessageId>,
        direct: Option<TaskId>,
    ) -> Result<usize, EmitError> {
        let sp = &mut *self.spout;
        let r = sp.router.route(stream, &values, direct, &mut sp.dests);
        if let Err(e) = r {
            sp.counters.errors += 1;
            return Err(e.into());
        }
        let n = sp.dests.len();
        // One edge id a copy: `pending.emit` draws every one of them for a tracked emit, and
        // no other emit reads them, so only the length is set (most emits keep the last one's).
        if sp.edges.len() != n {
            sp.edges.resize(n, 0);
        }
        let emitted = match sp.pending.emit(msg_id, &mut sp.edges[..], self.now_ns) {
            Ok(e) => e,
            Err(PendingError::MaxSpoutPending { msg_id }) => {
                sp.counters.errors += 1;
                return Err(EmitError::MaxSpoutPending { msg_id });
            }
            Err(PendingError::Config) => {
                // Unreachable: the pending set was built from a checked config.
                sp.counters.errors += 1;
                return Err(EmitError::MaxSpoutPending {
                    msg_id: msg_id.unwrap_or(0),
                });
            }
        };
        let (task, edges) = (sp.task, &*sp.edges);
        match emitted {
            SpoutEmit::Tracked { root, init } => {
                if let Some(id) = msg_id {
                    self.out.note_tracked_emit(id, root);
                }
                push_copies(self.out, &sp.dests, stream, task, values, |i| {
                    Anchors::spout(root, edges[i])
                });
                if let Some(a) = sp.ackers.task(root) {
                    // With a copy sent (so the outbox is not left empty: the shell reads an
                    // outbox with neither tuple nor envelope as "nothing emitted"), the init
                    // may skip the envelopes.
                    if n > 0 {
                        self.out.push_spout_init(a, init);
                    } else {
                        self.out.push(a, Message::Acker(init));
                    }
                }
            }
            SpoutEmit::AckedAtOnce { msg_id } => {
                self.out.note_tracked_emit(msg_id, 0);
                push_copies(self.out, &sp.dests, stream, task, values, |_| {
                    Anchors::new()
                });
                sp.acked_at_once.push(msg_id);
            }
            SpoutEmit::Untracked => {
                push_copies(self.out, &sp.dests, stream, task, values, |_| {
                    Anchors::new()
                });
            }
        }
        sp.counters.emitted += 1;
        sp.counters.transferred += n as u64;
        Ok(n)
    }

    /// The injected time of this call, in ns since the run started.
    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }
}

/// A bolt's output collector (Storm's `OutputCollector`).
pub struct OutputCollector<'a> {
    pub(crate) now_ns: u64,
    /// The bolt executor's state the collector works with (one pointer: building the collector
    /// for every input costs two stores instead of ten).
    pub(crate) bolt: &'a mut BoltState,
    pub(crate) out: &'a mut Outbox,
}

/// What a bolt task's [`OutputCollector`] works with, kept by its executor across inputs.
pub(crate) struct BoltState {
    pub(crate) task: TaskId,
    /// How long an input lives: twice the message timeout (`None`: timeouts off, for ever).
    pub(crate) input_ttl_ns: Option<u64>,
    /// Edge ids for anchored emits.
    pub(crate) ids: IdGenerator,
    /// Shared with every input handed out: live and dropped counts, and the bolt's identity.
    pub(crate) ledger: Rc<InputLedger>,
    pub(crate) router: Router,
    pub(crate) counters: ExecutorCounters,
    pub(crate) dests: Vec<TaskId>,
    pub(crate) ackers: AckerRoute,
}

impl OutputCollector<'_> {
    /// Emits `values` on the default stream anchored to `anchors` (one input, several for
    /// multi-anchoring, none for an unanchored emit). Returns the number of tasks it went to.
    ///
    /// # Errors
    /// See [`emit_to`](Self::emit_to).
    #[inline(always)]
    pub fn emit(&mut self, anchors: &[&Input], values: Values) -> Result<usize, EmitError> {
        let s = self.bolt.router.default_stream()?;
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
        let s = self.bolt.router.stream_id(stream)?;
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
        let s = self.bolt.router.stream_id(stream)?;
        self.emit_to(s, anchors, values, Some(task))
    }

    /// Emits on a stream given by id, optionally direct to one task.
    ///
    /// # Errors
    /// [`EmitError::UnknownStream`] / [`EmitError::UnknownStreamId`], [`EmitError::FieldCount`],
    /// [`EmitError::NotDirectTarget`], [`EmitError::Anchor`] (more than [`MAX_ROOTS`] trees, or
    /// an input of another bolt task), [`EmitError::InputExpired`] (an input held past its
    /// expiry). Nothing is sent on error.
    #[inline]
    pub fn emit_to(
        &mut self,
        stream: StreamId,
        anchors: &[&Input],
        values: Values,
        direct: Option<TaskId>,
    ) -> Result<usize, EmitError> {
        let r = self.emit_inner(stream, anchors, values, direct);
        if r.is_err() {
            self.bolt.counters.errors += 1;
        }
        r
    }

    #[inline(always)]
    fn emit_inner(
        &mut self,
        stream: StreamId,
        anchors: &[&Input],
        values: Values,
        direct: Option<TaskId>,
    ) -> Result<usize, EmitError> {
        self.bolt
            .router
            .route(stream, &values, direct, &mut self.bolt.dests)?;
        // Check every anchor, so misuse is reported even with no subscriber.
        for i in anchors {
            self.check(i)?;
        }
        let n = self.bolt.dests.len();
        if let [dest] = self.bolt.dests[..] {
            // One destination (nearly every emit): the copy is built straight into its envelope.
            let anchors =
                InputAnchors::emit(anchors.iter().map(|i| &i.anchors), &mut self.bolt.ids)?;
            self.out.push_tuple(
                dest,
                Tuple {
                    stream,
                    source_task: self.bolt.task,
                    values,
                    anchors,
                },
            );
        } else if n > 0 {
            let states = anchors.iter().map(|i| &i.anchors);
            // The first copy checks the root count before anything is sent.
            let first = InputAnchors::emit(states.clone(), &mut self.bolt.ids)?;
            let mut first = Some(first);
            let ids = &mut self.bolt.ids;
            push_copies(
                self.out,
                &self.bolt.dests,
                stream,
                self.bolt.task,
                values,
                |_| {
                    first.take().unwrap_or_else(|| {
                        InputAnchors::emit(states.clone(), ids).unwrap_or_default()
                    })
                },
            );
        }
        self.bolt.counters.emitted += 1;
        self.bolt.counters.transferred += n as u64;
        Ok(n)
    }

    /// Whether `input` was received by this bolt task and has not expired.
    #[inline]
    fn check(&self, input: &Input) -> Result<(), EmitError> {
        if !Rc::ptr_eq(&input.ledger, &self.bolt.ledger) {
            return Err(EmitError::Anchor(AnchorError::UnknownInput));
        }
        let expires_ns = input.expires_ns.get();
        if self.now_ns >= expires_ns {
            return Err(EmitError::InputExpired {
                expires_ns,
                now_ns: self.now_ns,
            });
        }
        Ok(())
    }

    fn send(&mut self, msgs: &InputMessages<MAX_ROOTS>) {
        for &m in msgs {
            if let Some(a) = self.bolt.ackers.task(m.root()) {
                self.out.push_acker(a, m);
            }
        }
    }

    /// Closes `input` by ack (`fail == false`) or fail; see [`ack`](Self::ack).
    fn close(&mut self, mut input: Input, fail: bool) -> Result<(), EmitError> {
        self.close_in_place(&mut input, fail)
    }

    /// [`close`](Self::close) without taking the input: the caller drops it afterwards.
    fn close_in_place(&mut self, input: &mut Input, fail: bool) -> Result<(), EmitError> {
        if let Err(e) = self.check(input) {
            self.bolt.counters.errors += 1;
            if let EmitError::InputExpired { .. } = e {
                // Closed: refused, not lost (its trees have timed out already).
                input.closed = true;
                self.bolt.counters.inputs_expired += 1;
            }
            return Err(e);
        }
        input.closed = true;
        if fail {
            self.send(&input.anchors.fail());
            self.bolt.counters.failed += 1;
        } else {
            self.send(&input.anchors.ack());
            self.bolt.counters.acked += 1;
        }
        Ok(())
    }

    /// [`close_in_place`](Self::close_in_place) for an input the caller owns, discarding the
    /// result (a refusal is counted as always). An ack of an input of one tree received by this
    /// task and not expired (nearly every close) takes an inlined path that sends its one `Ack`
    /// without building the list of messages, and an ack of an untracked input (no tree: acking
    /// off) one that sends nothing; the same messages, the same counters. Inlined into the
    /// basic-bolt adapter, its one caller on every input.
    #[inline(always)]
    fn close_owned(&mut self, input: &mut Input, fail: bool) {
        if !fail
            && Rc::ptr_eq(&input.ledger, &self.bolt.ledger)
            && self.now_ns < input.expires_ns.get()
        {
            let one = input.anchors.ack_one_root();
            if one.is_some() || input.anchors.anchors().is_empty() {
                input.closed = true;
                if let Some(m) = one {
                    if let Some(a) = self.bolt.ackers.task(m.root()) {
                        self.out.push_acker(a, m);
                    }
                }
                self.bolt.counters.acked += 1;
                return;
            }
        }
        let _ = self.close_in_place(input, fail);
    }

    /// Acks `input`: its trees learn that it is done (one `Ack` per tree).
    ///
    /// # Errors
    /// [`EmitError::InputExpired`] if the input was held past its expiry (nothing is sent; see
    /// [`Input`]); [`EmitError::Anchor`]`(`[`AnchorError::UnknownInput`]`)` if another bolt task
    /// received it (it then counts as dropped at that task).
    pub fn ack(&mut self, input: Input) -> Result<(), EmitError> {
        self.close(input, false)
    }

    /// Fails `input`: each of its trees fails (the spout replays the root).
    ///
    /// # Errors
    /// As [`ack`](Self::ack).
    pub fn fail(&mut self, input: Input) -> Result<(), EmitError> {
        self.close(input, true)
    }

    /// Asks for more time for every tree `input` belongs to (Storm's `resetTimeout`); the input's
    /// own expiry moves on by the same amount.
    ///
    /// # Errors
    /// As [`ack`](Self::ack).
    pub fn reset_timeout(&mut self, input: &Input) -> Result<(), EmitError> {
        if let Err(e) = self.check(input) {
            self.bolt.counters.errors += 1;
            return Err(e);
        }
        self.send(&input.anchors.reset_timeout());
        input
            .expires_ns
            .set(expiry(self.now_ns, self.bolt.input_ttl_ns));
        Ok(())
    }

    /// The injected time of this call, in ns since the run started.
    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }
}

/// When an input received (or reset) at `now_ns` expires: `now + ttl`, never with no ttl.
#[inline]
pub(crate) fn expiry(now_ns: u64, ttl_ns: Option<u64>) -> u64 {
    ttl_ns.map_or(u64::MAX, |t| now_ns.saturating_add(t))
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
    #[inline(always)]
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::message::Value;

    /// An input drops the values that own heap memory (the `ManuallyDrop` in `Input` must not
    /// leak them): a shared string's count goes back down when the input goes, whether it sits
    /// inline with others or in a spilled list; values that own nothing stay readable.
    #[test]
    fn a_dropped_input_frees_the_values_that_own_heap_memory() {
        let ledger = Rc::new(InputLedger::default());
        let shared: Arc<str> = Arc::from("a shared word");
        let lists: [Values; 4] = [
            smallvec::smallvec![Value::Shared(shared.clone())],
            smallvec::smallvec![Value::Int(1), Value::Shared(shared.clone())],
            smallvec::smallvec![
                Value::from("w"),
                Value::Int(2),
                Value::Shared(shared.clone())
            ],
            smallvec::smallvec![
                Value::from("a long word, stored on the heap"),
                Value::Shared(shared.clone())
            ],
        ];
        assert_eq!(Arc::strong_count(&shared), 5);
        for (k, values) in lists.into_iter().enumerate() {
            let input = Input::received(
                Tuple {
                    values,
                    ..Tuple::default()
                },
                0,
                None,
                &ledger,
            );
            assert_eq!(ledger.live.get(), 1);
            drop(input);
            assert_eq!(ledger.live.get(), 0);
            assert_eq!(
                Arc::strong_count(&shared),
                4 - k,
                "list {k}: the shared value leaked"
            );
        }
        let input = Input::received(
            Tuple {
                values: smallvec::smallvec![Value::Int(7), Value::from("word")],
                ..Tuple::default()
            },
            0,
            None,
            &ledger,
        );
        assert_eq!(input.values()[..], [Value::Int(7), Value::from("word")]);
        drop(input);
        assert_eq!(
            ledger.dropped.get(),
            5,
            "every input here was dropped unacked"
        );
    }
}
