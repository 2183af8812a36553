//! The thread-per-core shell: runs a [`Plan`]'s executors on pinned threads joined by bounded
//! lock-free single-producer single-consumer rings.
//!
//! # How it runs
//!
//! - **Cores.** One thread per core ([`ShellOptions::cores`], default: every core
//!   `core_affinity` reports), thread `i` pinned to the `i`-th core id (wrapping round when more
//!   threads than cores are asked for).
//! - **Placement.** Task `t` runs on thread `t % cores` ([`Placement::round_robin`]), so every
//!   component with parallelism ≥ cores spreads over all of them; with
//!   [`ShellOptions::colocate_ackers`], acker task `i` instead runs on the thread of spout task
//!   `i % spouts` ([`Placement::for_plan`]), keeping inits and notices local. Local-or-shuffle
//!   grouping prefers tasks on the same thread.
//! - **Rings and lanes.** Four lanes join every ordered pair of distinct threads, each a bounded
//!   SPSC ring ([`crate::ring`]: cache-padded head and tail, each side caching the other's
//!   position, [`ShellOptions::ring_capacity`] entries):
//!   the *data* lane carries tuples (128-byte, cache-line-aligned envelopes), the *control* lane
//!   carries spouts' inits and ticks (small `Copy` envelopes), the *acker* lane carries
//!   bolts' acker messages in batches (below), the *notice* lane carries ackers' notices in
//!   batches (one ring entry for up to 8 notices to one spout task, shipped as soon as the thread
//!   has applied the acker messages of one lane's drain or a tick). A message for a task on the same thread goes to that thread's local FIFO
//!   of the lane instead, except a notice for a spout on the acker's own thread: it is handed to
//!   the spout at once, as the acker sends it, stamped with the loop turn's clock (a spout's
//!   `ack` / `fail` sends nothing, so this cannot recurse). The local data FIFO is a list in the
//!   thread's outbox that the collectors write a tuple for a task on their thread into as they
//!   emit it (no routing), delivered in place at the next turn's local drain, in sending order.
//! - **Batching.** A thread pops up to [`ShellOptions::batch`] envelopes from a ring in one chunk
//!   (one index update); an outgoing envelope goes straight into its ring while nothing is staged
//!   before it, and staged envelopes are written back in chunks. The acker messages bolts send
//!   (ack, fail, reset) are collected per destination acker task during a loop turn and shipped
//!   as one acker-lane envelope per 8 messages, the rest at the end of the turn; the acker's
//!   thread applies a batch's messages in their sending order and routes the notices once per
//!   batch. An ack for the same root as the message just before it in the open batch is XORed
//!   into that one instead of taking a message of its own (ack coalescing: a bolt acking every
//!   word of a line in a row sends one ack; see `coalesce_ack` for why no decision of a
//!   correct tree changes, and why nothing merges across a fail or reset). So the messages one
//!   executor sends to one acker still arrive in the order they were sent (a spout's inits for an acker on another thread go unbatched on the control lane, those for an
//!   acker on its own thread and a bolt's messages all through the batches or, for an acker on
//!   the sender's thread, that acker's one list); messages of different executors interleave in some order, as they always could.
//!   A spout's init is never held back behind its next `next_tuple`, which may block in user code
//!   while the tree's clock runs: an init for an acker on another thread goes at once; one for an
//!   acker on the spout's thread waits for the end of the turn, but that acker could not run
//!   before then anyway. A bolt's ack may wait for the end of the loop turn, i.e. for
//!   the rest of the inputs the thread handles in that turn (at most `batch` per ring).
//! - **Back-pressure, never drops, never deadlocks.** A thread never blocks. An envelope whose
//!   ring is full waits in a per-destination staging queue (order kept). While any thread has more
//!   than `max(ring_capacity, batch)` data envelopes staged, every spout stops calling
//!   `next_tuple` (Storm 2's back-pressure signal), so the staged amount stays bounded by what is
//!   already in flight (max spout pending × tree size). Every thread drains its control rings
//!   first, its acker rings next and its data rings last on every turn, whatever the state of its own output: acks
//!   (bolt → acker), decisions (acker → spout) and data always move, so the cycle
//!   spout → bolt → acker → spout cannot deadlock even with every ring full; a full ring only
//!   ever stops the spouts.
//! - **Clock.** Only this shell reads a clock: `now_ns` is the `Instant` elapsed since the run
//!   started, read once per loop turn. Every executor gets a [`Message::Tick`] every
//!   [`Config::tick_interval_ns`](crate::Config::tick_interval_ns) (spout timeouts, acker expiry).
//! - **Complete latency.** Every notice batch carries the sending thread's clock of the loop
//!   turn that sent it (µs). A spout is handed a
//!   `Completed` notice with that send time, not the time its own thread got round to it, so the
//!   complete latency runs from the emit to the moment the acker's completion notice left for
//!   the spout's executor: time the notice then waits in a ring, while the spout's thread is busy
//!   in user code (a `next_tuple` that sleeps) or behind the per-turn batch limit, is not
//!   counted. (Storm measures it at the acker for the same reason.) The send time is exact to
//!   the microsecond for notices that wait less than 35 minutes.
//! - **Shutdown.** When every spout [`is_done`](crate::Spout::is_done) or
//!   [`ShellOptions::max_duration`] has passed, spouts stop; the threads keep draining until no
//!   spout has a pending tree (each was completed, failed or timed out) and no envelope is in
//!   flight anywhere (two identical quiet snapshots), then call `close` / `cleanup` and report.
//!
//! - **Killing and restarting a task.** [`run_with_control`] takes a [`TaskControl`]; anyone
//!   holding a clone (user code on a core thread, a fault schedule on another thread) may ask for
//!   a task to be restarted ([`TaskControl::restart`]). The task's thread applies the request at
//!   the start of its next loop turn: the old executor is dropped without `close` / `cleanup` (a
//!   crash: its spout pending set, acker table, or the inputs its bolt holds are lost) and a fresh
//!   one is built from the topology's factory ([`Plan::restart_executor`], a new incarnation
//!   with its own root and edge ids, then `open` / `prepare`). Messages still in flight to the
//!   task reach the new executor. This is Storm's executor restart: a restarted acker has no
//!   entries, so the trees it held never complete and time out at their spouts, which replay
//!   them; a restarted spout ignores (and counts) notices for its predecessor's roots, whose
//!   user `ack` / `fail` are never called; a restarted bolt's open inputs time out and are
//!   replayed. The report's counters of a task sum all its incarnations.
//!
//! In steady state the shell allocates nothing per tuple: rings, staging queues, local FIFOs and
//! outboxes keep their buffers, and the latency histogram is preallocated.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::ring::{try_ring, Consumer, Producer};
use acker_core::TaskId;
use crossbeam_utils::CachePadded;
use hdrhistogram::Histogram;

use crate::api::ExecutorCounters;
use crate::executor::{latency_histogram, BuildError, Executor};
use crate::message::{DataEnv, LocalEnv};
use acker_core::AckerMessage;

use crate::message::{LocalAcks, Message, Notice, Outbox, Tuple};
use crate::topology::{Placement, Plan, TaskInfo, TaskKind};

/// How the shell runs a plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShellOptions {
    /// Threads (one per core); `None` = every available core. At most [`MAX_CORES_PER_CPU`] ×
    /// the CPUs this process may use (its CPU affinity set, as `taskset` or a cpuset leaves it:
    /// the cores `None` runs on), as `acker-run --cores` allows: every ordered pair of threads
    /// gets four rings, so memory grows with the square of the count.
    pub cores: Option<usize>,
    /// Envelopes per ring (at least 1, at most [`MAX_RING_CAPACITY`]). Each of the
    /// `cores × (cores − 1) × 4` rings allocates its slots when the run starts; an allocation the
    /// allocator refuses is [`ShellError::OutOfMemory`].
    pub ring_capacity: usize,
    /// Most envelopes popped from one ring, or spout calls made, in one batch (at least 1).
    pub batch: usize,
    /// Stop the spouts after this long even if they are not done (then drain).
    pub max_duration: Option<Duration>,
    /// After the spouts stop, give up waiting for pending trees after this long (they are
    /// reported as undecided). `None`: wait for every decision or timeout.
    pub drain_timeout: Option<Duration>,
    /// Pin each thread to a core (default true).
    pub pin_threads: bool,
    /// Place acker task `i` on the thread of spout task `i % spouts` ([`Placement::for_plan`]);
    /// otherwise every task goes round-robin ([`Placement::round_robin`]).
    pub colocate_ackers: bool,
    /// An idle thread (a loop turn that found no work) first spins this many turns (default 64)…
    pub idle_spin_turns: u32,
    /// …then yields its core until this many idle turns (default 256), then sleeps 20 µs a turn.
    /// Sleeping early leaves the core to other processes on a shared machine, at the cost of up
    /// to a few tens of µs of latency after a quiet spell.
    pub idle_yield_turns: u32,
    /// Whether the shell prints the config's warnings ([`crate::Config::warnings`]) on stderr,
    /// as `warning: ...`, when a run starts (default true). A program that prints them itself,
    /// under its own name (`acker-run: warning: ...`), sets false.
    pub print_config_warnings: bool,
}

impl Default for ShellOptions {
    fn default() -> Self {
        Self {
            cores: None,
            ring_capacity: 4096,
            batch: 256,
            max_duration: None,
            drain_timeout: None,
            pin_threads: true,
            colocate_ackers: false,
            idle_spin_turns: 64,
            idle_yield_turns: 256,
            print_config_warnings: true,
        }
    }
}

/// [`ShellOptions::cores`] may be at most this many times the CPUs of the process's affinity
/// set (the threads then share CPUs; more would only multiply the rings).
pub const MAX_CORES_PER_CPU: usize = 4;
// `BadOptions` carries a static text that says "4 x".
const _: () = assert!(MAX_CORES_PER_CPU == 4);

/// The largest [`ShellOptions::ring_capacity`] a run accepts: 2^20 envelopes a ring.
pub const MAX_RING_CAPACITY: usize = 1 << 20;

/// Why a run could not start or finish.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShellError {
    /// `cores` is `Some(0)` or more than [`MAX_CORES_PER_CPU`] × the CPUs of this process's
    /// affinity set, `ring_capacity` is
    /// 0 or over [`MAX_RING_CAPACITY`], or `batch` is 0.
    BadOptions(&'static str),
    /// The allocator refused the rings between the threads (`bytes` asked for in all: lower
    /// [`ShellOptions::cores`] or [`ShellOptions::ring_capacity`]). Nothing was started.
    OutOfMemory {
        /// Bytes the rings needed.
        bytes: usize,
    },
    /// An executor could not be built.
    Build(BuildError),
    /// A core thread panicked (in user code); the message is the panic payload when it is text.
    Panicked(String),
}

impl fmt::Display for ShellError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShellError::BadOptions(s) => write!(f, "bad shell options: {s}"),
            ShellError::Build(e) => write!(f, "cannot build executor: {e}"),
            ShellError::OutOfMemory { bytes } => write!(
                f,
                "the allocator refused {bytes} bytes for the rings between the threads: lower \
                 the cores or the ring capacity"
            ),
            ShellError::Panicked(s) => write!(f, "a core thread panicked: {s}"),
        }
    }
}

impl std::error::Error for ShellError {}

/// What a run did.
#[derive(Clone, Debug)]
pub struct RunReport {
    /// Threads used.
    pub cores: usize,
    /// Wall time from start to the end of the drain.
    pub elapsed: Duration,
    /// Wall time until the spouts stopped.
    pub spouts_stopped_after: Duration,
    /// Counters per task, by task id.
    pub tasks: Vec<(TaskInfo, ExecutorCounters)>,
    /// Counters summed per component (acker tasks under `__acker`).
    pub components: BTreeMap<String, ExecutorCounters>,
    /// Complete latency (ns) of every tree acked by an acker, all spouts merged.
    pub complete_latency_ns: Histogram<u64>,
    /// Roots still pending at the spouts when the drain gave up (0 after a full drain).
    pub undecided_roots: u64,
    /// Configuration warnings (also printed to stderr unless
    /// [`ShellOptions::print_config_warnings`] is off).
    pub warnings: Vec<String>,
    /// Task restarts applied ([`TaskControl::restart`] requests that took effect).
    pub restarts: u64,
}

/// Why [`TaskControl::restart`] refused a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControlError {
    /// The plan the control was made for has no such task.
    UnknownTask(TaskId),
}

impl fmt::Display for ControlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ControlError::UnknownTask(t) => write!(f, "no task {t} in the plan"),
        }
    }
}

impl std::error::Error for ControlError {}

#[derive(Debug, Default)]
struct ControlInner {
    /// Task ids of the plan of the run using the control (0: no run yet, any id is accepted).
    tasks: AtomicUsize,
    /// Tasks asked to restart, not yet applied (in request order).
    requested: Mutex<Vec<TaskId>>,
    /// `requested.len()`, read by every core thread once a loop turn without taking the lock.
    pending: AtomicUsize,
    /// Restarts applied so far.
    done: AtomicU64,
    /// Requests dropped because the plan of the run had no such task.
    refused: AtomicU64,
}

/// Kills and restarts tasks of a running threaded shell (see the [module docs](self)): make one,
/// clone it into user code (a factory's closure) or a fault thread, call
/// [`restart`](Self::restart), and hand it to [`run_with_control`]. Requests are applied in order
/// by the task's own thread at the start of its next loop turn (within one turn: microseconds,
/// or the time a user call in progress on that thread takes). A request made before any run
/// waits for the next run; one for a task id the run's plan does not have is refused.
#[derive(Clone, Debug, Default)]
pub struct TaskControl {
    inner: Arc<ControlInner>,
}

impl TaskControl {
    /// A control with no request.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks for task `task` to be killed and restarted empty (its executor rebuilt from the
    /// topology's factory).
    ///
    /// # Errors
    /// [`ControlError::UnknownTask`] for a task id beyond the plan of the run using this control
    /// (nothing is queued). Before any run every id is queued; at the start of the run the ids
    /// its plan lacks are dropped and counted ([`restarts_refused`](Self::restarts_refused)).
    pub fn restart(&self, task: TaskId) -> Result<(), ControlError> {
        let tasks = self.inner.tasks.load(Ordering::Acquire);
        if tasks > 0 && task as usize >= tasks {
            self.inner.refused.fetch_add(1, Ordering::AcqRel);
            return Err(ControlError::UnknownTask(task));
        }
        let mut q = self.lock();
        q.push(task);
        self.inner.pending.store(q.len(), Ordering::Release);
        Ok(())
    }

    /// Restarts applied so far, over every run that used this control.
    pub fn restarts_done(&self) -> u64 {
        self.inner.done.load(Ordering::Acquire)
    }

    /// Requests not applied yet.
    pub fn restarts_pending(&self) -> usize {
        self.inner.pending.load(Ordering::Acquire)
    }

    /// Requests refused for naming a task the run's plan does not have.
    pub fn restarts_refused(&self) -> u64 {
        self.inner.refused.load(Ordering::Acquire)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<TaskId>> {
        self.inner
            .requested
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Binds the control to a plan of `tasks` tasks: earlier requests for other ids are dropped
    /// and counted.
    fn bind(&self, tasks: usize) {
        self.inner.tasks.store(tasks, Ordering::Release);
        let mut q = self.lock();
        let before = q.len();
        q.retain(|&t| (t as usize) < tasks);
        self.inner
            .refused
            .fetch_add((before - q.len()) as u64, Ordering::AcqRel);
        self.inner.pending.store(q.len(), Ordering::Release);
    }
}

impl RunReport {
    /// The counters of every spout task, summed.
    pub fn spout_totals(&self) -> ExecutorCounters {
        self.kind_totals(TaskKind::Spout)
    }

    /// The counters of every task of `kind`, summed.
    pub fn kind_totals(&self, kind: TaskKind) -> ExecutorCounters {
        let mut c = ExecutorCounters::default();
        for (t, x) in &self.tasks {
            if t.kind == kind {
                c.add(x);
            }
        }
        c
    }

    /// Spout trees acked per second of elapsed wall time.
    pub fn acked_per_sec(&self) -> f64 {
        self.spout_totals().acked as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Per-thread status the coordinator reads.
#[derive(Default)]
struct Status {
    sent: AtomicU64,
    received: AtomicU64,
    /// Local queue, staging and outbox all empty at the last publish.
    quiet: AtomicBool,
    pending_roots: AtomicU64,
    spouts_done: AtomicBool,
    /// Bumped at every publish, so the coordinator sees fresh snapshots.
    publishes: AtomicU64,
}

struct Shared {
    start: Instant,
    stop_spouts: AtomicBool,
    finish: AtomicBool,
    /// Threads whose staging is above the back-pressure threshold.
    backpressure: AtomicUsize,
    status: Vec<CachePadded<Status>>,
}

struct CoreResult {
    tasks: Vec<(TaskId, ExecutorCounters)>,
    latency: Histogram<u64>,
}

/// A control message (the control lane's element): a spout's init (or, in a shell without acker
/// batches, another acker message) or a tick, for task `dest`, packed into four whole words.
///
/// Packed rather than a `{ dest, msg: CtrlMsg }` struct because of how it travels: a spout's
/// init is built and pushed into a ring slot at once, and a struct of 16-bit fields is built on
/// the stack with narrow stores, then copied with 16-byte loads that cannot take their bytes
/// from those stores until they reach the cache (a store-forwarding stall: 14 % of the spout
/// thread's routing samples in `bench pipeline`, `perf record -e cpu-clock`). Four words are
/// built in registers and stored whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CtrlEnv {
    /// `dest` (bits 0..16), the kind (bits 16..24: one of the `CTRL_*` constants) and an init's
    /// spout task (bits 32..48).
    head: u64,
    /// The acker message's root (0 for a tick).
    root: u64,
    /// The XOR of an init or an ack (0 otherwise).
    xor: u64,
    /// Unused: keeps a slot at 32 bytes, two to a cache line.
    _pad: u64,
}

/// [`CtrlEnv`] kinds.
const CTRL_INIT: u64 = 0;
const CTRL_ACK: u64 = 1;
const CTRL_FAIL: u64 = 2;
const CTRL_RESET: u64 = 3;
const CTRL_TICK: u64 = 4;

impl CtrlEnv {
    #[inline(always)]
    fn pack(dest: TaskId, kind: u64, spout_task: TaskId, root: u64, xor: u64) -> Self {
        Self {
            head: dest as u64 | kind << 16 | (spout_task as u64) << 32,
            root,
            xor,
            _pad: 0,
        }
    }

    /// Acker message `m` for task `dest`.
    #[inline(always)]
    fn acker(dest: TaskId, m: &AckerMessage) -> Self {
        match *m {
            AckerMessage::Init {
                root,
                xor,
                spout_task,
            } => Self::pack(dest, CTRL_INIT, spout_task, root, xor),
            AckerMessage::Ack { root, xor } => Self::pack(dest, CTRL_ACK, 0, root, xor),
            AckerMessage::Fail { root } => Self::pack(dest, CTRL_FAIL, 0, root, 0),
            AckerMessage::ResetTimeout { root } => Self::pack(dest, CTRL_RESET, 0, root, 0),
        }
    }

    /// A tick for task `dest`.
    #[inline(always)]
    fn tick(dest: TaskId) -> Self {
        Self::pack(dest, CTRL_TICK, 0, 0, 0)
    }

    /// The destination task.
    #[inline(always)]
    fn dest(&self) -> TaskId {
        self.head as TaskId
    }

    /// The acker message, or `None` for a tick.
    #[inline(always)]
    fn acker_message(&self) -> Option<AckerMessage> {
        let root = self.root;
        Some(match (self.head >> 16) & 0xff {
            CTRL_INIT => AckerMessage::Init {
                root,
                xor: self.xor,
                spout_task: (self.head >> 32) as TaskId,
            },
            CTRL_ACK => AckerMessage::Ack {
                root,
                xor: self.xor,
            },
            CTRL_FAIL => AckerMessage::Fail { root },
            CTRL_RESET => AckerMessage::ResetTimeout { root },
            _ => return None,
        })
    }
}

/// The µs stamp of `now_ns` that a notice batch carries.
#[inline]
fn stamp_us(now_ns: u64) -> u32 {
    (now_ns / 1000) as u32
}

/// When an envelope stamped `sent_us` was sent, given the receiver's clock `now_ns`. The stamp
/// holds the low 32 bits of the send time in µs, so a wait under 2^31 µs (35 minutes) is exact.
/// A stamp later than `now_ns` (the receiver's clock was read at the start of its loop turn,
/// before the sender's) gives `now_ns`.
#[inline]
fn sent_ns(sent_us: u32, now_ns: u64) -> u64 {
    let waited_us = stamp_us(now_ns).wrapping_sub(sent_us);
    if waited_us > u32::MAX / 2 {
        return now_ns;
    }
    now_ns.saturating_sub(waited_us as u64 * 1000)
}

/// `route`'s flag for the outbox's split-off acker messages (spouts' inits, bolts' acks).
const ACKER_LIST: u8 = 1;
/// `route`'s flag for the outbox's split-off notices (an acker's decisions).
const NOTICE_LIST: u8 = 2;
/// `route`'s flags for no split-off list.
const NO_LISTS: u8 = 0;
/// `route`'s flags for every split-off list.
const ALL_LISTS: u8 = ACKER_LIST | NOTICE_LIST;

/// How many acker messages one acker-lane envelope carries at most.
const ACKER_BATCH: usize = 8;

/// How many notices one notice-lane envelope carries at most.
const NOTICE_BATCH: usize = 8;

/// Up to `N` messages for one task, shipped as one ring entry: the element of the acker lane
/// ([`AckerBatch`]) and of the notice lane ([`NoticeBatch`]). The messages keep their sending
/// order; the receiving thread hands them to the task in that order.
#[derive(Clone, Copy)]
struct Batch<T: Copy, const N: usize> {
    dest: TaskId,
    /// Messages used in `items` (1..=`N` when shipped).
    len: u16,
    /// The sender's clock when it was shipped, µs, modulo 2^32 ([`stamp_us`]); only the notice
    /// lane stamps and reads it (complete latency).
    sent_us: u32,
    items: [T; N],
}

impl<T: Copy, const N: usize> Batch<T, N> {
    /// The messages of the batch, in sending order.
    #[inline]
    fn items(&self) -> &[T] {
        &self.items[..self.len as usize]
    }
}

/// Acker messages for one acker task (the acker lane's element): a thread collects the acker
/// messages its executors send to one acker during a loop turn and ships them as one ring entry
/// per [`ACKER_BATCH`] messages (and at the end of the turn), instead of one control envelope
/// each; the acker's thread applies them in order, then routes the resulting notices once. The
/// messages keep their order (one batch per acker task, in sending order). Consecutive acks of
/// one root are merged ([`coalesce_ack`]).
type AckerBatch = Batch<AckerMessage, ACKER_BATCH>;

/// Notices for one spout task on another thread (the notice lane's element): the notices a
/// thread's ackers send to one spout task while the thread applies one lane's acker messages (a
/// drain of its control rings, of its acker rings, of its local FIFOs, or a tick) travel as one
/// ring entry per [`NOTICE_BATCH`], shipped as soon as that step ends: a batch of acks deciding
/// four trees sends one envelope, not four, and no notice waits for user code. In order.
type NoticeBatch = Batch<Notice, NOTICE_BATCH>;

/// Ack coalescing: when `last` (the last message of a batch that is not empty) and `next` are
/// both an `Ack` of the same root, XORs `next`'s value into `last` and returns true (`next`
/// then needs no message of its own); otherwise changes nothing and returns false.
///
/// Why no decision can differ for a correct tree: the acker applies a batch's messages back
/// to back (no tick, no other message in between), and XOR is associative and commutative,
/// so `Ack(r, a)` then `Ack(r, b)` and the one `Ack(r, a ^ b)` leave the same ack val, the
/// same entry (created by the first if the root was absent, with the same value either way)
/// and the same park queue position (an ack for an absent root in a full table parks as one
/// message instead of two, applied at the same point). The one difference would be a
/// decision *between* the two: `Ack(r, a)` bringing the ack val to 0 while `b` is still to
/// come. For a correct tree that cannot happen: `b` carries the edge id of an input that was
/// emitted anchored, whose id is still in the ack val until `b` arrives, so the val is not 0
/// before (barring a 64-bit edge id collision, the same odds under which Storm's acker may
/// complete a tree early). Only an `Ack` directly before is merged with: never across a
/// `Fail` or a `ResetTimeout` (of this root or any other), so a fail still reaches the acker
/// in its place, and the messages of different roots keep their order. In Storm's word count
/// the count bolt acks every word tuple of a line in a row, so a line's word acks become one
/// message; the acker's `executed` counter counts the messages it applied (fewer), its
/// `acked` / `failed` decisions are unchanged.
#[inline(always)]
pub(crate) fn coalesce_ack(last: &mut AckerMessage, next: &AckerMessage) -> bool {
    // `next` first: it is already in registers, `last` is in the batch.
    if let AckerMessage::Ack { root, xor } = *next {
        if let AckerMessage::Ack { root: r, xor: x } = last {
            if *r == root {
                *x ^= xor;
                return true;
            }
        }
    }
    false
}

/// The batches one thread is filling for one lane, one per destination task id.
struct Batches<T: Copy, const N: usize> {
    /// The batch being filled for each task id (only the lane's destination tasks are used).
    by_task: Vec<Batch<T, N>>,
    /// Task ids whose batch was opened since the last [`close`](Self::close), in opening order
    /// (a task appears again each time its batch fills, ships and opens again).
    open: Vec<TaskId>,
}

impl<T: Copy, const N: usize> Batches<T, N> {
    /// Empty batches for task ids `0..tasks`; `filler` only initialises unused items.
    fn new(tasks: usize, filler: T) -> Self {
        let empty = Batch {
            dest: 0,
            len: 0,
            sent_us: 0,
            items: [filler; N],
        };
        Self {
            by_task: vec![empty; tasks],
            open: Vec::with_capacity(tasks),
        }
    }

    /// Adds `item` to `dest`'s batch, opening it if empty, unless `merge(last, item)` folds it
    /// into the batch's last message; returns true once the batch holds `N` messages (ship it
    /// with [`take`](Self::take) before the next push to `dest`).
    #[inline(always)]
    fn push(&mut self, dest: TaskId, item: &T, merge: impl FnOnce(&mut T, &T) -> bool) -> bool {
        let b = &mut self.by_task[dest as usize];
        let len = b.len as usize;
        if len == 0 {
            b.dest = dest;
            self.open.push(dest);
        } else if let Some(last) = b.items.get_mut(len - 1) {
            if merge(last, item) {
                return false;
            }
        }
        b.items[len] = *item;
        b.len += 1;
        len + 1 == N
    }

    /// `dest`'s batch, to ship; its slot is left empty (still listed as open: harmless, since
    /// [`close`](Self::close) skips empty batches).
    #[inline(always)]
    fn take(&mut self, dest: TaskId) -> Batch<T, N> {
        let b = &mut self.by_task[dest as usize];
        let full = *b;
        b.len = 0;
        full
    }

    /// Hands every batch that is not empty to `ship`, in opening order, and empties them.
    #[inline]
    fn close(&mut self, mut ship: impl FnMut(Batch<T, N>)) {
        for i in 0..self.open.len() {
            let b = &mut self.by_task[self.open[i] as usize];
            if b.len > 0 {
                let full = *b;
                b.len = 0;
                ship(full);
            }
        }
        self.open.clear();
    }

    /// True when no batch has been opened since the last [`close`](Self::close).
    #[inline]
    fn is_closed(&self) -> bool {
        self.open.is_empty()
    }
}

/// One lane (data or control): an inbound ring from every other thread, an outbound ring to
/// every other thread, a staging queue per destination thread, and the local FIFO.
struct Lane<T> {
    inbound: Vec<Consumer<T>>,
    /// Indexed by destination thread (`None` for self).
    outbound: Vec<Option<Producer<T>>>,
    staging: Vec<VecDeque<T>>,
    local: VecDeque<T>,
}

impl<T> Lane<T> {
    fn new(
        inbound: Vec<Consumer<T>>,
        outbound: Vec<Option<Producer<T>>>,
        cores: usize,
        batch: usize,
    ) -> Self {
        Self {
            inbound,
            outbound,
            staging: (0..cores).map(|_| VecDeque::with_capacity(batch)).collect(),
            local: VecDeque::with_capacity(batch * 4),
        }
    }

    /// Queues `item` for thread `core`: the local FIFO for this thread, else straight into the
    /// ring when nothing is staged before it and the ring has room, else the staging queue.
    /// Returns 1 if it went into a ring, 0 otherwise.
    #[inline(always)]
    fn stage(&mut self, core: usize, me: usize, item: T) -> u64 {
        if core == me {
            self.local.push_back(item);
            return 0;
        }
        let q = &mut self.staging[core];
        if q.is_empty() {
            if let Some(p) = self.outbound[core].as_mut() {
                match p.push(item) {
                    Ok(()) => return 1,
                    Err(item) => q.push_back(item),
                }
                return 0;
            }
        }
        q.push_back(item);
        0
    }

    /// Moves staged items into the rings, one chunk per ring; returns (moved, still staged).
    fn flush(&mut self) -> (usize, usize) {
        let (mut moved, mut staged) = (0, 0);
        for (dest, q) in self.staging.iter_mut().enumerate() {
            if q.is_empty() {
                continue;
            }
            if let Some(p) = self.outbound[dest].as_mut() {
                moved += p.push_from(q);
            }
            staged += q.len();
        }
        (moved, staged)
    }

    fn staged(&self) -> usize {
        self.staging.iter().map(|q| q.len()).sum()
    }
}

/// One thread's ends of a lane's rings: producers by destination thread, consumers by source.
type ThreadRings<T> = (Vec<Option<Producer<T>>>, Vec<Consumer<T>>);

/// One ring per ordered pair of distinct threads, each of `capacity` items; an error (nothing
/// kept) when the allocator refuses one.
fn rings<T>(
    cores: usize,
    capacity: usize,
) -> Result<Vec<ThreadRings<T>>, std::collections::TryReserveError> {
    let mut producers: Vec<Vec<Option<Producer<T>>>> = (0..cores)
        .map(|_| (0..cores).map(|_| None).collect())
        .collect();
    let mut consumers: Vec<Vec<Consumer<T>>> = (0..cores).map(|_| Vec::new()).collect();
    for (src, row) in producers.iter_mut().enumerate() {
        for (dst, slot) in row.iter_mut().enumerate() {
            if src != dst {
                let (p, c) = try_ring(capacity)?;
                *slot = Some(p);
                consumers[dst].push(c);
            }
        }
    }
    Ok(producers.into_iter().zip(consumers).collect())
}

/// A thread's local data FIFO while it is being delivered: the outbox's list of local tuples
/// (`Outbox::split_off_local_tuples`), taken whole, with the entries before `head` delivered (left
/// owning nothing: [`LocalEnv`]) and the rest still to deliver, oldest first.
///
/// A turn delivers at most its limit from the head; nothing is shifted or copied however long
/// the list is. What is still to deliver is dropped with the FIFO (the entries are
/// `ManuallyDrop`).
#[derive(Debug, Default)]
struct LocalFifo {
    list: Vec<LocalEnv>,
    head: usize,
}

impl LocalFifo {
    fn with_capacity(capacity: usize) -> Self {
        LocalFifo {
            list: Vec::with_capacity(capacity),
            head: 0,
        }
    }

    /// Whether every entry has been delivered.
    #[inline]
    fn is_done(&self) -> bool {
        self.head == self.list.len()
    }

    /// Takes `outbox_list` whole as the list to deliver (leaving it this FIFO's emptied buffer).
    /// Only when [`is_done`](Self::is_done).
    #[inline]
    fn refill(&mut self, outbox_list: &mut Vec<LocalEnv>) {
        debug_assert!(self.is_done());
        // Every entry was delivered in place and owns nothing: cleared without a drop.
        self.list.clear();
        self.head = 0;
        std::mem::swap(&mut self.list, outbox_list);
    }
}

impl Drop for LocalFifo {
    fn drop(&mut self) {
        for e in self.list.drain(self.head..) {
            drop(std::mem::ManuallyDrop::into_inner(e.tuple));
        }
    }
}

struct Core<'a> {
    me: usize,
    shared: &'a Shared,
    executors: Vec<Executor>,
    /// task id → (thread, index in that thread's executors).
    where_is: &'a [(usize, usize)],
    data: Lane<DataEnv>,
    ctrl: Lane<CtrlEnv>,
    /// The acker lane: batches of acker messages for acker tasks on other threads.
    acks: Lane<AckerBatch>,
    /// The notice lane: batches of notices for spout tasks on other threads.
    notices: Lane<NoticeBatch>,
    /// The notice batches being filled (only spout tasks on other threads are used).
    notice_batches: Batches<Notice, NOTICE_BATCH>,
    /// The acker-message batches being filled (only acker tasks are used).
    acker_batches: Batches<AckerMessage, ACKER_BATCH>,
    /// Acker messages for the ackers on this thread (see [`LocalAcks`]).
    local_acks: LocalAcks,
    /// The local tuples being delivered: taken whole from the outbox
    /// (`Outbox::split_off_local_tuples`) and consumed from its head across turns.
    local_tuples: LocalFifo,
    outbox: Outbox,
    batch: usize,
    bp_threshold: usize,
    under_backpressure: bool,
    sent: u64,
    received: u64,
    /// `stamp_us` of this loop turn's clock: stamped on every notice batch sent this turn.
    sent_us: u32,
    /// This loop turn's clock (ns since the run started): the send time of a notice handed to a
    /// spout on this thread.
    now_ns: u64,
    tick_interval_ns: u64,
    /// (spin turns, yield turns) of the idle policy.
    idle: (u32, u32),
    plan: &'a Plan,
    placement: &'a Placement,
    control: &'a TaskControl,
    /// Incarnation of each executor (same index as `executors`).
    incarnations: Vec<u64>,
    /// Counters and latencies of executors replaced by a restart.
    retired: Vec<(TaskId, ExecutorCounters)>,
    retired_latency: Histogram<u64>,
    build_error: &'a Mutex<Option<BuildError>>,
}

impl Core<'_> {
    /// Routes everything the outbox holds (see [`route`](Self::route)).
    #[inline]
    fn route_outbox(&mut self) {
        self.route::<true, ALL_LISTS>();
    }

    /// [`route_outbox`](Self::route_outbox) after a bolt's call: a bolt sends no notice, so the
    /// notice list is not looked at (an empty-list check and a clear less on every tuple).
    /// Out of line: a bolt's call on one thread routes nothing (its tuples and acks for this
    /// thread are in the local lists already), and `deliver_tuple`, inlined into the loops
    /// that deliver tuples, stays small without it.
    #[inline(never)]
    fn route_bolt_outbox(&mut self) {
        self.route::<true, ACKER_LIST>();
    }

    /// [`route_bolt_outbox`](Self::route_bolt_outbox) for a bolt's call that sent nothing but
    /// acker messages (the acking bolt at the end of a pipeline, on another thread than its
    /// acker): they go into the acker batches as the route's acker list would send them, in
    /// sending order, without the route's look at tuples and envelopes (there are none).
    #[inline(always)]
    fn route_bolt_acker_messages(&mut self) {
        let me = self.me;
        for &(dest, m) in self.outbox.acker_messages() {
            if self.acker_batches.push(dest, &m, coalesce_ack) {
                let (core, _) = self.where_is[dest as usize];
                let full = self.acker_batches.take(dest);
                self.sent += self.acks.stage(core, me, full);
            }
        }
        self.outbox.clear_envelopes_and(true, false);
    }

    /// [`route_outbox`](Self::route_outbox) after an acker batch: an acker sends only notices,
    /// so the acker-message list is not looked at.
    #[inline]
    fn route_acker_outbox(&mut self) {
        self.route::<true, NOTICE_LIST>();
    }

    /// [`route_outbox`](Self::route_outbox) after a spout's `next_tuple`: its inits go out at
    /// once on the control lane, unbatched, since the spout's next call may block in user code
    /// while the tree's clock (complete latency, message timeout) is already running. A spout's
    /// messages are all envelopes, except an init for an acker on this thread, which goes
    /// straight into that acker's list in the outbox (`Outbox::push_spout_init`).
    #[inline]
    fn route_outbox_from_spout(&mut self) {
        self.route::<false, NO_LISTS>();
    }

    /// Routes the outbox's tuples (split off: see `Outbox::push_tuple`) to the data lane, then
    /// every envelope of the outbox: tuples to the data lane, notices and ticks to the
    /// control lane, acker messages to the acker lane's batches (`BATCH_ACKS`) or else, one
    /// envelope each, to the control lane; then the split-off lists named by `LISTS`
    /// ([`ACKER_LIST`], [`NOTICE_LIST`]) the same way. Only the envelopes and those lists are
    /// cleared: a caller names every list its sender can fill.
    #[inline(always)]
    fn route<const BATCH_ACKS: bool, const LISTS: u8>(&mut self) {
        let me = self.me;
        // The split-off tuples (every tuple: see `Outbox::push_tuple`), in sending order, each
        // moved as is into the data lane. Tuples take the data lane and nothing else does, so
        // routing them before the envelopes changes no lane's order.
        if let Some(env) = self.outbox.take_only_tuple() {
            let (core, _) = self.where_is[env.dest as usize];
            self.sent += self.data.stage(core, me, env);
        } else if !self.outbox.no_tuples() {
            for env in self.outbox.take_tuples() {
                let (core, _) = self.where_is[env.dest as usize];
                self.sent += self.data.stage(core, me, env);
            }
        }
        // Move out only what each message needs: a control message is a few words, so copying
        // whole envelopes out of the outbox would cost more than the routing itself.
        for env in self.outbox.as_mut_slice() {
            let dest = env.dest;
            let (core, _) = self.where_is[dest as usize];
            let ctrl = match &mut env.message {
                Message::Tuple(_) => {
                    // Leave a `Tick` behind rather than an empty tuple: `clear` below then has
                    // nothing to drop for this envelope (an empty tuple still costs a call).
                    if let Message::Tuple(tuple) =
                        std::mem::replace(&mut env.message, Message::Tick)
                    {
                        self.sent += self.data.stage(core, me, DataEnv { dest, tuple });
                    }
                    continue;
                }
                // A spout's init for an acker on another thread goes out at once; one for an
                // acker on this thread is in that acker's list already (`push_spout_init`),
                // unless the emit had no copy: then it joins the acker's list here, applied at
                // the next local drain (the acker, on this thread, could not apply it sooner).
                Message::Acker(m) if !BATCH_ACKS && core != me => CtrlEnv::acker(dest, m),
                Message::Acker(m) => {
                    // An acker on this thread takes it from its list at the next local drain
                    // (`push` is false only for a task that is no acker here: never, but then
                    // the batch below still delivers it).
                    let local = core == me && self.local_acks.push(dest, m);
                    if !local && self.acker_batches.push(dest, m, coalesce_ack) {
                        let full = self.acker_batches.take(dest);
                        self.sent += self.acks.stage(core, me, full);
                    }
                    continue;
                }
                Message::Notice(n) if core == me => {
                    // A notice for a spout on this thread is handed over at once, stamped with
                    // this turn's clock (the time it would have been sent): a spout's `ack` /
                    // `fail` sends nothing, so nothing is routed from inside this loop, and the
                    // notice skips the local FIFO and its dispatch.
                    let (_, idx) = self.where_is[dest as usize];
                    self.executors[idx].handle_notice(*n, self.now_ns);
                    continue;
                }
                Message::Notice(n) => {
                    if self.notice_batches.push(dest, n, |_, _| false) {
                        let mut full = self.notice_batches.take(dest);
                        full.sent_us = self.sent_us;
                        self.sent += self.notices.stage(core, me, full);
                    }
                    continue;
                }
                Message::Tick => CtrlEnv::tick(dest),
            };
            self.sent += self.ctrl.stage(core, me, ctrl);
        }
        // A bolt's acker messages (split off: see `Outbox::split_off_acker_traffic`), in
        // sending order, into the acker batches as above. Only a bolt sends them (a spout's
        // inits stay envelopes unless for an acker on this thread: splitting them all measured
        // slower), and a bolt sends no spout init, so no acker message among the envelopes is
        // passed by them.
        if LISTS & ACKER_LIST != 0 {
            for &(dest, m) in self.outbox.acker_messages() {
                if self.acker_batches.push(dest, &m, coalesce_ack) {
                    let (core, _) = self.where_is[dest as usize];
                    let full = self.acker_batches.take(dest);
                    self.sent += self.acks.stage(core, me, full);
                }
            }
        }
        // An acker's notices (split off), in sending order, as the envelope arms above: an
        // acker sends nothing else, so their order relative to envelopes does not arise.
        // A run of notices for one spout on this thread is handed over in one call.
        if LISTS & NOTICE_LIST != 0 {
            let ns = self.outbox.notices();
            let mut i = 0;
            while let Some(&(dest, _)) = ns.get(i) {
                let (core, idx) = self.where_is[dest as usize];
                let run = ns[i..].iter().take_while(|&&(d, _)| d == dest).count();
                if core == me {
                    self.executors[idx].handle_notices(&ns[i..i + run], self.now_ns);
                } else {
                    for (_, n) in &ns[i..i + run] {
                        if self.notice_batches.push(dest, n, |_, _| false) {
                            let mut full = self.notice_batches.take(dest);
                            full.sent_us = self.sent_us;
                            self.sent += self.notices.stage(core, me, full);
                        }
                    }
                }
                i += run;
            }
        }
        self.outbox
            .clear_envelopes_and(LISTS & ACKER_LIST != 0, LISTS & NOTICE_LIST != 0);
    }

    /// [`deliver_tuple`](Self::deliver_tuple) for a tuple in a list this thread keeps (see
    /// `Executor::handle_tuple_in_place`).
    #[inline(always)]
    fn deliver_tuple_in_place(&mut self, dest: TaskId, tuple: &mut Tuple, now_ns: u64) {
        let (_, idx) = self.where_is[dest as usize];
        self.executors[idx].handle_tuple_in_place(tuple, now_ns, &mut self.outbox);
        self.route_after_bolt();
    }

    /// Hands `tuple` to task `dest` (a bolt), then routes what it sent, if anything is to be
    /// routed.
    #[inline(always)]
    fn deliver_tuple(&mut self, dest: TaskId, tuple: Tuple, now_ns: u64) {
        let (_, idx) = self.where_is[dest as usize];
        self.executors[idx].handle_tuple(tuple, now_ns, &mut self.outbox);
        self.route_after_bolt();
    }

    /// Routes what a bolt's call sent, if anything: the whole route for tuples or envelopes,
    /// the acker batches alone for acker messages only. Only a bolt handles a tuple, and a bolt
    /// sends no notice: two of the three lists to look at (the notices are checked wherever an
    /// acker runs).
    #[inline(always)]
    fn route_after_bolt(&mut self) {
        if !(self.outbox.no_tuples() && self.outbox.is_empty()) {
            self.route_bolt_outbox();
        } else if !self.outbox.acker_messages().is_empty() {
            self.route_bolt_acker_messages();
        }
    }

    #[inline]
    fn deliver_ctrl(&mut self, env: CtrlEnv, now_ns: u64) {
        let (_, idx) = self.where_is[env.dest() as usize];
        let e = &mut self.executors[idx];
        match env.acker_message() {
            Some(m) => e.handle_acker(m, &mut self.outbox),
            None => e.handle_tick(now_ns, &mut self.outbox),
        }
        if !self.outbox.nothing_waiting() {
            self.route_outbox();
        }
    }

    /// Ships every batch of acker messages that is not empty (see [`AckerBatch`]).
    #[inline]
    fn close_acker_batches(&mut self) {
        let (acks, sent, where_is, me) = (&mut self.acks, &mut self.sent, self.where_is, self.me);
        self.acker_batches.close(|full| {
            let (core, _) = where_is[full.dest as usize];
            *sent += acks.stage(core, me, full);
        });
    }

    /// Ships every notice batch that is not empty (see [`NoticeBatch`]), stamped with this turn's
    /// clock.
    #[inline]
    fn close_notice_batches(&mut self) {
        let (notices, sent, where_is, me) =
            (&mut self.notices, &mut self.sent, self.where_is, self.me);
        let sent_us = self.sent_us;
        self.notice_batches.close(|mut full| {
            full.sent_us = sent_us;
            let (core, _) = where_is[full.dest as usize];
            *sent += notices.stage(core, me, full);
        });
    }

    /// Hands every notice of a batch to its spout, in order, with the batch's send time
    /// (complete latency up to when the notices left the acker's thread: see the module docs).
    #[inline]
    fn deliver_notice_batch(&mut self, b: &NoticeBatch, now_ns: u64) {
        let (_, idx) = self.where_is[b.dest as usize];
        let sent = sent_ns(b.sent_us, now_ns);
        self.executors[idx].handle_notice_batch(b.items(), sent);
    }

    /// Handles up to `batch` entries from every inbound ring of the notice lane.
    fn drain_notices(&mut self, now_ns: u64) -> usize {
        let mut inbound = std::mem::take(&mut self.notices.inbound);
        let mut work = 0;
        for c in inbound.iter_mut() {
            work += c.pop_batch(self.batch, |b| self.deliver_notice_batch(&b, now_ns));
        }
        self.notices.inbound = inbound;
        self.received += work as u64;
        work
    }

    /// Applies a batch of acker messages in order, then routes what they sent.
    #[inline]
    fn deliver_acker_batch(&mut self, batch: &AckerBatch) {
        let (_, idx) = self.where_is[batch.dest as usize];
        self.executors[idx].handle_acker_batch(batch.items(), &mut self.outbox);
        // An acker sends only notices.
        if !(self.outbox.is_empty() && self.outbox.notices().is_empty()) {
            self.route_acker_outbox();
        }
    }

    /// Handles up to `batch` entries from every inbound ring of the acker lane. A batch for an
    /// acker on this thread (every batch, unless a task was misplaced) joins that acker's list
    /// in [`LocalAcks`], applied with its other messages as one slice at this turn's local
    /// drain, as the control lane's inits are: the table takes a tree's messages in any order
    /// (acker-core rule 1), and one long slice lets the acker read its table ahead
    /// (`BATCH_READ_AHEAD_MIN_SLOTS`) further than the 8 messages of one batch allow.
    fn drain_acks(&mut self) -> usize {
        let mut inbound = std::mem::take(&mut self.acks.inbound);
        let mut work = 0;
        for c in inbound.iter_mut() {
            work += c.pop_batch(self.batch, |b| {
                if !self.local_acks.push_all(b.dest, b.items()) {
                    self.deliver_acker_batch(&b)
                }
            });
        }
        self.acks.inbound = inbound;
        self.received += work as u64;
        self.close_notice_batches();
        work
    }

    /// Pushes staged envelopes of every lane into the rings; returns how many moved.
    fn flush(&mut self) -> usize {
        let (am, _) = self.acks.flush();
        let (nm, _) = self.notices.flush();
        self.sent += (am + nm) as u64;
        let (cm, _) = self.ctrl.flush();
        let (dm, data_staged) = self.data.flush();
        self.sent += (cm + dm) as u64;
        let over = data_staged > self.bp_threshold;
        if over != self.under_backpressure {
            self.under_backpressure = over;
            if over {
                self.shared.backpressure.fetch_add(1, Ordering::AcqRel);
            } else {
                self.shared.backpressure.fetch_sub(1, Ordering::AcqRel);
            }
        }
        am + nm + cm + dm
    }

    /// Handles up to `batch` envelopes from every inbound ring of the control lane. A spout's
    /// init for an acker on this thread (sent from another thread, one envelope each) joins
    /// that acker's list in [`LocalAcks`], applied with the acker's other messages as one slice
    /// at this turn's local drain: the table takes a tree's messages in any order (acker-core
    /// rule 1), and the batch loop costs fewer instructions a message than one dispatch and
    /// call each.
    fn drain_ctrl(&mut self, now_ns: u64) -> usize {
        let mut inbound = std::mem::take(&mut self.ctrl.inbound);
        let mut work = 0;
        for c in inbound.iter_mut() {
            work += c.pop_batch(self.batch, |env| {
                if let Some(m) = env.acker_message() {
                    if self.local_acks.push(env.dest(), &m) {
                        return;
                    }
                }
                self.deliver_ctrl(env, now_ns)
            });
        }
        self.ctrl.inbound = inbound;
        self.received += work as u64;
        self.close_notice_batches();
        work
    }

    /// Handles up to `batch` envelopes from every inbound ring of the data lane.
    fn drain_data(&mut self, now_ns: u64) -> usize {
        let mut inbound = std::mem::take(&mut self.data.inbound);
        let mut work = 0;
        for c in inbound.iter_mut() {
            // Each tuple is handed over where it lies in the ring's slot: moving it out copied
            // its 128 bytes twice on the stack, and the copies' 16-byte loads waited on the
            // narrower stores before them (the identity bolt's thread of `bench pipeline`
            // spent 14 % of its samples there).
            let n = c.pop_batch_in_place(self.batch, |env| {
                self.deliver_tuple_in_place(env.dest, &mut env.tuple, now_ns)
            });
            if n > 0 {
                work += n;
                self.flush();
            }
        }
        self.data.inbound = inbound;
        self.received += work as u64;
        work
    }

    /// Handles what is in the local FIFOs now (new local messages wait for the next turn).
    fn drain_local(&mut self, now_ns: u64) -> usize {
        let limit = self.batch * 4;
        let n = self.ctrl.local.len().min(limit);
        for _ in 0..n {
            if let Some(env) = self.ctrl.local.pop_front() {
                self.deliver_ctrl(env, now_ns);
            }
        }
        let mut k = self.acks.local.len().min(limit);
        for _ in 0..k {
            if let Some(b) = self.acks.local.pop_front() {
                self.deliver_acker_batch(&b);
            }
        }
        // The messages for the ackers on this thread, one slice each (an acker sends only
        // notices, so nothing is added to these lists while they are applied).
        // This thread's lists first (a spout's init lands here only in the fallback of the
        // route), then the outbox's (the spouts' inits and the bolts' messages, in sending
        // order): the table takes a tree's messages in any order.
        for i in 0..self.local_acks.lists.len() {
            let (task, ref list) = self.local_acks.lists[i];
            if list.is_empty() {
                continue;
            }
            let (_, idx) = self.where_is[task as usize];
            self.executors[idx].handle_acker_batch(list, &mut self.outbox);
            k += list.len();
            self.local_acks.lists[i].1.clear();
        }
        for i in 0..self.outbox.local_acks().lists.len() {
            let (task, ref mut list) = self.outbox.local_acks().lists[i];
            if list.is_empty() {
                continue;
            }
            let list = std::mem::take(list);
            let (_, idx) = self.where_is[task as usize];
            self.executors[idx].handle_acker_batch(&list, &mut self.outbox);
            k += list.len();
            // Back in place, emptied, keeping its buffer (an acker sends only notices, so
            // nothing was added meanwhile; were anything, it is kept behind).
            let mut list = list;
            list.clear();
            let slot = &mut self.outbox.local_acks().lists[i].1;
            list.append(slot);
            *slot = list;
        }
        if !(self.outbox.is_empty() && self.outbox.notices().is_empty()) {
            self.route_acker_outbox();
        }
        // Notices leave before the bolts' user code below runs.
        self.close_notice_batches();
        let mut m = self.data.local.len().min(limit);
        for _ in 0..m {
            if let Some(env) = self.data.local.pop_front() {
                self.deliver_tuple(env.dest, env.tuple, now_ns);
            }
        }
        // The tuples the executors here sent to tasks here (`Outbox::split_off_local_tuples`),
        // oldest first: this thread's local data FIFO. What was sent before this turn is
        // delivered, up to the turn's limit; what their delivery sends here waits for the next
        // turn. The list is taken from the outbox whole (a swap) and consumed from its head, so
        // a long list (a bolt that emits thousands of tuples an input) is never shifted or
        // copied: each tuple is delivered in place, once.
        let fresh = self.outbox.local_tuples_len();
        let budget = limit - m.min(limit);
        // First what is left of the list being delivered (all of it sent before this turn) ...
        let mut delivered = self.deliver_local_tuples(budget, now_ns);
        // ... then, if that list is done, the outbox's, up to what was in it when the turn began.
        if self.local_tuples.is_done() && fresh > 0 && delivered < budget {
            self.local_tuples.refill(self.outbox.local_tuples());
            delivered += self.deliver_local_tuples((budget - delivered).min(fresh), now_ns);
        }
        m += delivered;
        n + k + m
    }

    /// Delivers up to `max` tuples from the head of the list being delivered
    /// ([`LocalFifo`]), in place; returns how many.
    #[inline]
    fn deliver_local_tuples(&mut self, max: usize, now_ns: u64) -> usize {
        let mut fifo = std::mem::take(&mut self.local_tuples);
        let start = fifo.head;
        let end = fifo.list.len().min(start.saturating_add(max));
        // Delivered in place: each tuple is left owning nothing (`LocalEnv`), so delivered
        // entries are later removed without a drop.
        for env in &mut fifo.list[start..end] {
            self.deliver_tuple_in_place(env.dest, &mut env.tuple, now_ns);
        }
        fifo.head = end;
        self.local_tuples = fifo;
        end - start
    }

    fn staged(&self) -> usize {
        self.data.staged() + self.ctrl.staged() + self.acks.staged() + self.notices.staged()
    }

    /// Applies the restart requests for this thread's tasks (see [`TaskControl`]): each old
    /// executor is dropped without `close` / `cleanup` and replaced by a fresh incarnation.
    #[cold]
    fn apply_restarts(&mut self) {
        let inner = &self.control.inner;
        let mine: Vec<TaskId> = {
            let mut q = inner.requested.lock().unwrap_or_else(|p| p.into_inner());
            let me = self.me;
            let where_is = self.where_is;
            let mine = q
                .iter()
                .copied()
                .filter(|&t| where_is.get(t as usize).is_some_and(|w| w.0 == me))
                .collect();
            q.retain(|&t| where_is.get(t as usize).is_none_or(|w| w.0 != me));
            inner.pending.store(q.len(), Ordering::Release);
            mine
        };
        for task in mine {
            let (_, idx) = self.where_is[task as usize];
            self.incarnations[idx] += 1;
            match self
                .plan
                .restart_executor(task, self.placement, self.incarnations[idx])
            {
                Ok(fresh) => {
                    let mut old = std::mem::replace(&mut self.executors[idx], fresh);
                    if let Some(h) = old.complete_latency_ns() {
                        let _ = self.retired_latency.add(h);
                    }
                    // Dropped here, without close / cleanup: a crash.
                    self.retired.push((task, old.crash()));
                    inner.done.fetch_add(1, Ordering::AcqRel);
                }
                Err(e) => {
                    *self.build_error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                    self.shared.finish.store(true, Ordering::Release);
                    self.shared.stop_spouts.store(true, Ordering::Release);
                }
            }
        }
    }

    fn publish(&self) {
        let s = &self.shared.status[self.me];
        s.sent.store(self.sent, Ordering::Release);
        s.received.store(self.received, Ordering::Release);
        let quiet = self.data.local.is_empty()
            && self.ctrl.local.is_empty()
            && self.acks.local.is_empty()
            && self.notices.local.is_empty()
            && self.notice_batches.is_closed()
            && self.outbox.nothing_waiting()
            && self.acker_batches.is_closed()
            && self.local_acks.is_empty()
            && self.outbox.split_off_len() == 0
            && self.local_tuples.is_done()
            && self.staged() == 0;
        s.quiet.store(quiet, Ordering::Release);
        let pending: usize = self
            .executors
            .iter()
            .filter(|e| e.kind() == TaskKind::Spout)
            .map(|e| e.pending_roots())
            .sum();
        s.pending_roots.store(pending as u64, Ordering::Release);
        let done = self.executors.iter().all(|e| e.is_done());
        s.spouts_done.store(done, Ordering::Release);
        s.publishes.fetch_add(1, Ordering::AcqRel);
    }

    fn run(mut self) -> CoreResult {
        let mut next_tick_ns = self.tick_interval_ns;
        let mut idle_turns: u32 = 0;
        let spouts: Vec<usize> = (0..self.executors.len())
            .filter(|&i| self.executors[i].kind() == TaskKind::Spout)
            .collect();
        loop {
            // The coordinator says stop: after a full drain everything is quiet already; after a
            // drain timeout (or a topology that never goes quiet) whatever is in flight is left.
            if self.shared.finish.load(Ordering::Acquire) {
                break;
            }
            if self.control.inner.pending.load(Ordering::Acquire) > 0 {
                self.apply_restarts();
            }
            let now_ns = self.shared.start.elapsed().as_nanos() as u64;
            self.sent_us = stamp_us(now_ns);
            self.now_ns = now_ns;
            let mut work = self.flush();
            // Control first: acks and decisions never wait behind data.
            work += self.drain_ctrl(now_ns);
            work += self.drain_notices(now_ns);
            work += self.drain_acks();
            work += self.drain_data(now_ns);
            work += self.drain_local(now_ns);

            // Ticks from the real clock.
            if now_ns >= next_tick_ns {
                for i in 0..self.executors.len() {
                    self.executors[i].handle(Message::Tick, now_ns, &mut self.outbox);
                    self.route_outbox();
                }
                self.close_notice_batches();
                next_tick_ns = now_ns + self.tick_interval_ns;
            }

            // Spouts, unless stopped or back-pressured.
            if !spouts.is_empty()
                && !self.shared.stop_spouts.load(Ordering::Acquire)
                && self.shared.backpressure.load(Ordering::Acquire) == 0
                && self.data.staged() <= self.bp_threshold
            {
                for &i in &spouts {
                    if self.executors[i].is_done() {
                        continue;
                    }
                    for _ in 0..self.batch {
                        let local_before = self.outbox.local_tuples_len();
                        if !self.executors[i].next_tuple(now_ns, &mut self.outbox) {
                            break;
                        }
                        let nothing_to_route = self.outbox.no_tuples() && self.outbox.is_empty();
                        if nothing_to_route && self.outbox.local_tuples_len() == local_before {
                            // Nothing to emit now (an emit leaves a tuple, or with no copy its init's envelope) (Storm's spout wait strategy): leave this spout
                            // until the next turn, and let an otherwise idle thread go idle.
                            break;
                        }
                        work += 1;
                        // Tuples for tasks here, and inits for ackers here, are in the local
                        // lists already: nothing to route.
                        if !nothing_to_route {
                            self.route_outbox_from_spout();
                        }
                    }
                }
            }
            self.close_acker_batches();
            self.close_notice_batches();
            work += self.flush();

            if work == 0 {
                idle_turns = idle_turns.saturating_add(1);
                if idle_turns % 16 == 1 {
                    self.publish();
                }
                let (spin, yields) = self.idle;
                if idle_turns < spin {
                    std::hint::spin_loop();
                } else if idle_turns < yields {
                    std::thread::yield_now();
                } else {
                    std::thread::sleep(Duration::from_micros(20));
                }
            } else {
                if idle_turns > 0 {
                    // Leaving idle: mark not quiet at once.
                    self.shared.status[self.me]
                        .quiet
                        .store(false, Ordering::Release);
                }
                idle_turns = 0;
            }
        }
        let mut latency = std::mem::replace(&mut self.retired_latency, latency_histogram());
        let mut tasks = std::mem::take(&mut self.retired);
        for e in &mut self.executors {
            e.shutdown();
            if let Some(h) = e.complete_latency_ns() {
                let _ = latency.add(h);
            }
            tasks.push((e.task(), e.counters()));
        }
        CoreResult { tasks, latency }
    }
}

/// Runs `plan` on pinned threads until every spout is done (or `max_duration`), then drains and
/// reports. Prints [`Config::warnings`](crate::Config::warnings) to stderr.
///
/// # Errors
/// [`ShellError::BadOptions`] for zero cores / ring capacity / batch, [`ShellError::Build`] if an
/// executor cannot be built, [`ShellError::Panicked`] if user code panicked on a core thread.
pub fn run(plan: &Plan, options: &ShellOptions) -> Result<RunReport, ShellError> {
    run_with_control(plan, options, &TaskControl::new())
}

/// [`run`], with `control` able to kill and restart tasks while the plan runs (see
/// [`TaskControl`]).
///
/// # Errors
/// As [`run`]; also [`ShellError::Build`] if a restarted executor cannot be built.
pub fn run_with_control(
    plan: &Plan,
    options: &ShellOptions,
    control: &TaskControl,
) -> Result<RunReport, ShellError> {
    let restarts_before = control.restarts_done();
    control.bind(plan.tasks().len());
    let available = core_affinity::get_core_ids().unwrap_or_default();
    let cpus = available.len().max(1);
    let cores = match options.cores {
        Some(0) => return Err(ShellError::BadOptions("cores must be at least 1")),
        Some(n) if n > cpus.saturating_mul(MAX_CORES_PER_CPU) => {
            return Err(ShellError::BadOptions(
                "cores must be at most 4 x the CPUs of this process's affinity set \
                 (MAX_CORES_PER_CPU)",
            ))
        }
        Some(n) => n,
        None => cpus,
    };
    if options.ring_capacity == 0 {
        return Err(ShellError::BadOptions("ring capacity must be at least 1"));
    }
    if options.ring_capacity > MAX_RING_CAPACITY {
        return Err(ShellError::BadOptions(
            "ring capacity must be at most 1048576 (MAX_RING_CAPACITY)",
        ));
    }
    if options.batch == 0 {
        return Err(ShellError::BadOptions("batch must be at least 1"));
    }
    let warnings = plan.config().warnings();
    if options.print_config_warnings {
        for w in &warnings {
            crate::stderr_line!("warning: {w}");
        }
    }
    let num_tasks = plan.tasks().len();
    let placement = if options.colocate_ackers {
        Placement::for_plan(plan, cores)
    } else {
        Placement::round_robin(num_tasks, cores)
    };
    let mut counts = vec![0usize; cores];
    let where_is: Vec<(usize, usize)> = (0..num_tasks)
        .map(|t| {
            let c = placement.worker(t as TaskId) as usize;
            counts[c] += 1;
            (c, counts[c] - 1)
        })
        .collect();

    // Two lanes, each with one ring per ordered pair of distinct threads.
    let ring_bytes = {
        let slots = options.ring_capacity.next_power_of_two();
        let per_slot = size_of::<DataEnv>()
            + size_of::<CtrlEnv>()
            + size_of::<AckerBatch>()
            + size_of::<NoticeBatch>();
        cores
            .saturating_mul(cores - 1)
            .saturating_mul(slots)
            .saturating_mul(per_slot)
    };
    let out_of_memory = |_| ShellError::OutOfMemory { bytes: ring_bytes };
    let data_rings = rings::<DataEnv>(cores, options.ring_capacity).map_err(out_of_memory)?;
    let ctrl_rings = rings::<CtrlEnv>(cores, options.ring_capacity).map_err(out_of_memory)?;
    let acker_rings = rings::<AckerBatch>(cores, options.ring_capacity).map_err(out_of_memory)?;
    let notice_rings = rings::<NoticeBatch>(cores, options.ring_capacity).map_err(out_of_memory)?;
    let shared = Shared {
        start: Instant::now(),
        stop_spouts: AtomicBool::new(false),
        finish: AtomicBool::new(false),
        backpressure: AtomicUsize::new(0),
        status: (0..cores)
            .map(|_| CachePadded::new(Status::default()))
            .collect(),
    };
    let build_error: std::sync::Mutex<Option<BuildError>> = std::sync::Mutex::new(None);
    let tick_interval_ns = plan.config().tick_interval_ns;
    let bp_threshold = options.ring_capacity.max(options.batch);

    let (results, spouts_stopped_after, undecided) = std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(cores);
        for (
            me,
            (
                (((data_out, data_in), (ctrl_out, ctrl_in)), (acks_out, acks_in)),
                (nots_out, nots_in),
            ),
        ) in data_rings
            .into_iter()
            .zip(ctrl_rings)
            .zip(acker_rings)
            .zip(notice_rings)
            .enumerate()
        {
            let shared = &shared;
            let where_is = &where_is[..];
            let placement = &placement;
            let build_error = &build_error;
            let core_id = available.get(me % available.len().max(1)).copied();
            let pin = options.pin_threads;
            let batch = options.batch;
            let idle = (options.idle_spin_turns, options.idle_yield_turns);
            handles.push(scope.spawn(move || {
                if pin {
                    if let Some(id) = core_id {
                        core_affinity::set_for_current(id);
                    }
                }
                // A panic in user code (in `open`, `prepare` or later) stops the whole run instead
                // of leaving the other threads waiting for spouts that will never finish.
                let body = || {
                    let mut executors = Vec::new();
                    let mut incarnations = Vec::new();
                    for (t, &(c, _)) in where_is.iter().enumerate() {
                        if c == me {
                            match plan.build_executor(t as TaskId, placement) {
                                Ok(e) => {
                                    executors.push(e);
                                    incarnations.push(0);
                                }
                                Err(e) => {
                                    *build_error.lock().unwrap_or_else(|p| p.into_inner()) =
                                        Some(e);
                                    shared.finish.store(true, Ordering::Release);
                                    shared.stop_spouts.store(true, Ordering::Release);
                                }
                            }
                        }
                    }
                    let local_ackers: Vec<TaskId> = executors
                        .iter()
                        .filter(|e| e.kind() == TaskKind::Acker)
                        .map(|e| e.task())
                        .collect();
                    let core = Core {
                        me,
                        shared,
                        executors,
                        where_is,
                        data: Lane::new(data_in, data_out, cores, batch),
                        ctrl: Lane::new(ctrl_in, ctrl_out, cores, batch),
                        acks: Lane::new(acks_in, acks_out, cores, batch),
                        notices: Lane::new(nots_in, nots_out, cores, batch),
                        notice_batches: Batches::new(where_is.len(), Notice::Failed { root: 0 }),
                        acker_batches: Batches::new(where_is.len(), AckerMessage::Fail { root: 0 }),
                        local_acks: LocalAcks::new(where_is.len(), &local_ackers, batch * 4),
                        outbox: {
                            // Acker messages and notices travel on lanes of their own, never in
                            // order with tuples: keep them out of the envelopes.
                            let mut o = Outbox::with_capacity(batch);
                            o.split_off_acker_traffic(LocalAcks::new(
                                where_is.len(),
                                &local_ackers,
                                batch * 4,
                            ));
                            // Tuples for tasks on this thread: the local data FIFO, filled by
                            // the collectors.
                            o.split_off_local_tuples(
                                where_is.iter().map(|&(c, _)| c == me).collect(),
                            );
                            o
                        },
                        local_tuples: LocalFifo::with_capacity(batch * 4),
                        batch,
                        bp_threshold,
                        under_backpressure: false,
                        sent: 0,
                        received: 0,
                        sent_us: 0,
                        now_ns: 0,
                        tick_interval_ns,
                        idle,
                        plan,
                        placement,
                        control,
                        incarnations,
                        retired: Vec::new(),
                        retired_latency: latency_histogram(),
                        build_error,
                    };
                    core.run()
                };
                match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
                    Ok(r) => r,
                    Err(payload) => {
                        shared.stop_spouts.store(true, Ordering::Release);
                        shared.finish.store(true, Ordering::Release);
                        std::panic::resume_unwind(payload)
                    }
                }
            }));
        }
        let (stopped_after, undecided) = coordinate(&shared, options);
        shared.finish.store(true, Ordering::Release);
        let results: Vec<std::thread::Result<CoreResult>> =
            handles.into_iter().map(|h| h.join()).collect();
        (results, stopped_after, undecided)
    });
    if let Some(e) = build_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(ShellError::Build(e));
    }
    let elapsed = shared.start.elapsed();
    let mut per_task = vec![ExecutorCounters::default(); num_tasks];
    let mut latency = latency_histogram();
    for r in results {
        match r {
            Ok(r) => {
                for (t, c) in r.tasks {
                    per_task[t as usize].add(&c);
                }
                let _ = latency.add(&r.latency);
            }
            Err(p) => {
                let msg = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "non-text panic".to_string());
                return Err(ShellError::Panicked(msg));
            }
        }
    }
    let tasks: Vec<(TaskInfo, ExecutorCounters)> = plan
        .tasks()
        .iter()
        .cloned()
        .zip(per_task.iter().copied())
        .collect();
    let mut components: BTreeMap<String, ExecutorCounters> = BTreeMap::new();
    for (t, c) in &tasks {
        components.entry(t.component.clone()).or_default().add(c);
    }
    Ok(RunReport {
        cores,
        elapsed,
        spouts_stopped_after,
        tasks,
        components,
        complete_latency_ns: latency,
        undecided_roots: undecided,
        warnings,
        restarts: control.restarts_done() - restarts_before,
    })
}

/// The coordinator (the calling thread): stops the spouts, then waits for a quiet, decided state.
/// Returns when the spouts stopped and the roots left undecided.
fn coordinate(shared: &Shared, options: &ShellOptions) -> (Duration, u64) {
    let poll = Duration::from_micros(200);
    // Phase 1: until every spout is done or the time is up.
    loop {
        if shared.finish.load(Ordering::Acquire) {
            return (shared.start.elapsed(), 0);
        }
        let all_done = shared.status.iter().all(|s| {
            s.publishes.load(Ordering::Acquire) > 0 && s.spouts_done.load(Ordering::Acquire)
        });
        let timed_out = options
            .max_duration
            .is_some_and(|d| shared.start.elapsed() >= d);
        if all_done || timed_out {
            break;
        }
        std::thread::sleep(poll);
    }
    shared.stop_spouts.store(true, Ordering::Release);
    let stopped = shared.start.elapsed();
    // Phase 2: drain until nothing is pending or in flight, seen twice in a row.
    type Snapshot = (Vec<u64>, Vec<u64>, Vec<u64>);
    let mut last: Option<Snapshot> = None;
    loop {
        let snap_publishes: Vec<u64> = shared
            .status
            .iter()
            .map(|s| s.publishes.load(Ordering::Acquire))
            .collect();
        let sent: Vec<u64> = shared
            .status
            .iter()
            .map(|s| s.sent.load(Ordering::Acquire))
            .collect();
        let received: Vec<u64> = shared
            .status
            .iter()
            .map(|s| s.received.load(Ordering::Acquire))
            .collect();
        let pending: u64 = shared
            .status
            .iter()
            .map(|s| s.pending_roots.load(Ordering::Acquire))
            .sum();
        let quiet = shared
            .status
            .iter()
            .all(|s| s.quiet.load(Ordering::Acquire));
        if quiet && pending == 0 && sent.iter().sum::<u64>() == received.iter().sum::<u64>() {
            if let Some((ls, lr, lp)) = &last {
                // Fresh publishes from every thread since the last snapshot, same counts.
                let fresh = snap_publishes.iter().zip(lp).all(|(a, b)| a > b);
                if *ls == sent && *lr == received && fresh {
                    return (stopped, 0);
                }
                if !fresh {
                    std::thread::sleep(poll);
                    continue;
                }
            }
            last = Some((sent, received, snap_publishes));
        } else {
            last = None;
        }
        if options
            .drain_timeout
            .is_some_and(|d| shared.start.elapsed() >= stopped + d)
        {
            return (stopped, pending);
        }
        std::thread::sleep(poll);
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_env_is_two_cache_lines() {
        assert_eq!(std::mem::size_of::<DataEnv>(), 128);
    }

    #[test]
    fn control_envelopes_stay_32_bytes() {
        assert_eq!(std::mem::size_of::<CtrlEnv>(), 32);
    }

    #[test]
    fn a_control_envelope_gives_back_the_message_and_task_it_was_packed_with() {
        let messages = [
            AckerMessage::Init {
                root: u64::MAX,
                xor: 0x8000_0000_0000_0001,
                spout_task: TaskId::MAX,
            },
            AckerMessage::Init {
                root: 7,
                xor: 0,
                spout_task: 3,
            },
            AckerMessage::Ack {
                root: 0x1234_5678_9abc_def0,
                xor: u64::MAX,
            },
            AckerMessage::Fail { root: 42 },
            AckerMessage::ResetTimeout { root: u64::MAX - 1 },
        ];
        for dest in [0, 1, 513, TaskId::MAX] {
            for m in &messages {
                let env = CtrlEnv::acker(dest, m);
                assert_eq!((env.dest(), env.acker_message()), (dest, Some(*m)));
            }
            let tick = CtrlEnv::tick(dest);
            assert_eq!((tick.dest(), tick.acker_message()), (dest, None));
        }
    }

    #[test]
    fn an_acker_batch_is_eight_24_byte_messages_and_its_task() {
        assert_eq!(std::mem::size_of::<AckerMessage>(), 24);
        assert_eq!(std::mem::size_of::<AckerBatch>(), 8 + ACKER_BATCH * 24);
        assert_eq!(ACKER_BATCH, 8);
    }

    #[test]
    fn a_notice_batch_is_eight_notices_and_an_8_byte_header() {
        assert_eq!(
            std::mem::size_of::<NoticeBatch>(),
            8 + NOTICE_BATCH * std::mem::size_of::<Notice>()
        );
    }

    #[test]
    fn batches_ship_full_batches_at_once_the_rest_on_close_in_opening_order() {
        let ack = |root, xor| AckerMessage::Ack { root, xor };
        let mut b: Batches<AckerMessage, ACKER_BATCH> =
            Batches::new(4, AckerMessage::Fail { root: 0 });
        assert!(b.is_closed());
        // Task 3 first, then task 1; consecutive acks of one root fold into one message.
        assert!(!b.push(3, &ack(7, 0b01), coalesce_ack));
        assert!(!b.push(3, &ack(7, 0b10), coalesce_ack));
        assert!(!b.push(1, &AckerMessage::Fail { root: 9 }, coalesce_ack));
        // Not folded: another root, and an ack after a fail.
        assert!(!b.push(3, &ack(8, 0b100), coalesce_ack));
        assert!(!b.push(1, &ack(9, 0b1), coalesce_ack));
        assert!(!b.is_closed());
        // Task 2's batch fills with 8 messages of distinct roots and ships on the 8th push.
        for r in 0..7 {
            assert!(!b.push(2, &ack(100 + r, 1), coalesce_ack));
        }
        assert!(
            b.push(2, &ack(107, 1), coalesce_ack),
            "the 8th message fills the batch"
        );
        let full = b.take(2);
        assert_eq!(full.dest, 2);
        assert_eq!(
            full.items().iter().map(|m| m.root()).collect::<Vec<_>>(),
            (100..108).collect::<Vec<_>>()
        );
        let mut shipped = Vec::new();
        b.close(|batch| shipped.push((batch.dest, batch.items().to_vec())));
        assert_eq!(
            shipped,
            vec![
                (3, vec![ack(7, 0b11), ack(8, 0b100)]),
                (1, vec![AckerMessage::Fail { root: 9 }, ack(9, 0b1)]),
            ]
        );
        assert!(b.is_closed());
        // Closed batches ship nothing again.
        b.close(|_| panic!("nothing is open"));
    }

    /// The FIFO takes the outbox's list whole, delivers from its head, and drops with itself
    /// only what it has not delivered (delivered entries own nothing); the outbox keeps the
    /// emptied buffer.
    #[test]
    fn the_local_fifo_drops_what_it_has_not_delivered() {
        let shared: Arc<str> = Arc::from("a shared value, not stored inline");
        let mut outbox = Outbox::new();
        outbox.split_off_acker_traffic(LocalAcks::default());
        outbox.split_off_local_tuples(vec![true]);
        for _ in 0..5 {
            outbox.push_tuple(
                0,
                Tuple {
                    values: crate::values![shared.clone()],
                    ..Tuple::default()
                },
            );
        }
        assert_eq!(Arc::strong_count(&shared), 6);
        let mut fifo = LocalFifo::with_capacity(8);
        assert!(fifo.is_done());
        fifo.refill(outbox.local_tuples());
        assert_eq!((fifo.list.len(), outbox.local_tuples_len()), (5, 0));
        assert!(!fifo.is_done());
        // Two delivered in place: what a delivery leaves behind owns nothing.
        for env in &mut fifo.list[..2] {
            drop(std::mem::take(&mut *env.tuple));
        }
        fifo.head = 2;
        assert_eq!(Arc::strong_count(&shared), 4);
        drop(fifo);
        assert_eq!(Arc::strong_count(&shared), 1, "the three left were dropped");
    }

    #[test]
    fn send_time_survives_the_stamp() {
        // Exact to the µs; a wait across the 2^32 µs wrap still comes out right.
        assert_eq!(sent_ns(stamp_us(5_000_123), 9_000_000), 5_001_000 - 1_000);
        let wrap = (1u64 << 32) * 1000;
        assert_eq!(sent_ns(stamp_us(wrap - 3_000), wrap + 2_000), wrap - 3_000);
        // A stamp later than the receiver's turn clock: no wait.
        assert_eq!(sent_ns(stamp_us(10_000), 5_000), 5_000);
        assert_eq!(sent_ns(stamp_us(wrap + 10_000), wrap - 5_000), wrap - 5_000);
    }
}
