//! The executors: spout, bolt and acker tasks as pure single-threaded state machines, one file
//! each (`spout.rs`, `bolt.rs`, `acker.rs`), and the router that picks destination tasks
//! (`router.rs`). The user's side (the [`Spout`], [`Bolt`] and [`BasicBolt`] traits, the output
//! collectors, [`Input`]) is in [`crate::api`]; it is re-exported here, where it used to live.
//!
//! Dependencies run one way: `message` ← `executor::router` ← `api` ← `topology` ← `executor`
//! (no module imports one that imports it back).
//!
//! # Contract (what a shell relies on)
//!
//! An [`Executor`] is built fresh for one task by [`Plan::build_executor`] (which calls the
//! user's factory and then `open` / `prepare`). After that it is driven only through:
//!
//! - [`Executor::handle`]`(message, now_ns, outbox)`: one message in; whatever the executor wants
//!   sent is appended to `outbox` as [`Envelope`](crate::Envelope)s addressed by task id;
//!   [`Executor::handle_tuple`], [`Executor::handle_acker`] and [`Executor::handle_notice`] do
//!   the same for a tuple, an acker message or a notice without a whole [`Message`] (a shell
//!   holding the message by reference copies a few words instead of 144 bytes);
//! - [`Executor::next_tuple`]`(now_ns, outbox)`: for spouts, calls the user's `next_tuple` once if
//!   [`Executor::can_emit`] (max spout pending not reached); a no-op for bolts and ackers;
//! - [`Executor::shutdown`]: calls `close` / `cleanup`.
//!
//! `now_ns` is the shell's clock in ns since the run started (injected, never read here), and must
//! not go backwards (except for a `Notice`, which a shell may hand over stamped with the time it
//! was sent: see [complete latency](Executor::complete_latency_ns)). An executor reads no clock, spawns nothing, does no I/O, and draws randomness
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

mod acker;
mod bolt;
pub(crate) mod router;
mod spout;

use std::fmt;
use std::rc::Rc;

use acker_core::{
    AckerMessage, AckerTable, IdGenerator, PendingSlot, SpoutConfig, SpoutPending, TaskId,
};
use hdrhistogram::Histogram;
use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

// The user API, re-exported where it used to live (`acker_runtime::executor::Spout`, ...).
pub use crate::api::{
    BasicBolt, BasicBoltAdapter, BasicOutputCollector, Bolt, EmitError, ExecutorCounters,
    FailedException, Input, OutputCollector, Spout, SpoutOutputCollector, TopologyContext,
};
pub use acker::AckerExecutor;
pub use bolt::BoltExecutor;
pub use spout::SpoutExecutor;

use crate::api::{BoltState, SpoutState};
use crate::message::{Message, Notice, Outbox, StreamId, Tuple, DEFAULT_STREAM};
use crate::park::{ParkQueue, RecentRoots};
use crate::topology::{Placement, Plan, TaskKind};
use router::{splitmix64, AckerRoute, FastRoute, RouteState, Router, StreamFast};

/// How many notices ahead a spout handling a run of notices asks for the pending slot of (when
/// its pending set reads ahead, [`acker_core::SpoutPending::reads_ahead`]), so that their cache
/// misses overlap: the same distance as the acker table's batches
/// ([`acker_core::table::BATCH_LOOKAHEAD`]).
const NOTICE_LOOKAHEAD: usize = acker_core::table::BATCH_LOOKAHEAD;

/// A fresh histogram for complete latencies in ns (1 ns to 1 hour, 3 significant figures).
pub fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds")
}

/// The seed of task `task`'s xoshiro stream in a topology seeded with `topology_seed`.
pub fn task_seed(topology_seed: u64, task: TaskId) -> u64 {
    splitmix64(topology_seed ^ splitmix64(task as u64 + 1))
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
            Executor::Spout(e) => e.state.task,
            Executor::Bolt(e) => e.state.task,
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
            Message::Tuple(t) => self.handle_tuple(t, now_ns, out),
            Message::Acker(m) => self.handle_acker(m, out),
            Message::Notice(n) => self.handle_notice(n, now_ns),
            Message::Tick => self.handle_tick(now_ns, out),
        }
    }

    /// [`handle`](Self::handle) for a data tuple.
    #[inline]
    pub fn handle_tuple(&mut self, tuple: Tuple, now_ns: u64, out: &mut Outbox) {
        // The bolt's case first and alone: with the other arms in the same match, the tuple was
        // copied to the stack once more before the dispatch (for their drop).
        if let Executor::Bolt(e) = self {
            return e.handle(tuple, now_ns, out);
        }
        self.ignore_tuple(tuple);
    }

    /// [`handle_tuple`](Self::handle_tuple) for a tuple the caller keeps: a bolt takes its
    /// values and anchors; a spout or an acker counts it as ignored and drops them. Either way
    /// `tuple` is left owning nothing.
    #[inline(always)]
    pub(crate) fn handle_tuple_in_place(
        &mut self,
        tuple: &mut Tuple,
        now_ns: u64,
        out: &mut Outbox,
    ) {
        if let Executor::Bolt(e) = self {
            return e.handle_in_place(tuple, now_ns, out);
        }
        self.ignore_tuple(std::mem::take(tuple));
    }

    /// A tuple for a spout or an acker: counted as ignored and dropped.
    #[cold]
    #[inline(never)]
    fn ignore_tuple(&mut self, tuple: Tuple) {
        match self {
            Executor::Bolt(_) => {}
            Executor::Spout(e) => e.state.counters.ignored += 1,
            Executor::Acker(e) => e.counters.ignored += 1,
        }
        drop(tuple);
    }

    /// [`handle`](Self::handle) for an acker message (a shell's control lane calls it without
    /// building a whole [`Message`]).
    #[inline]
    pub fn handle_acker(&mut self, m: AckerMessage, out: &mut Outbox) {
        match self {
            Executor::Acker(e) => e.acker_message(m, out),
            Executor::Spout(e) => e.state.counters.ignored += 1,
            Executor::Bolt(e) => e.state.counters.ignored += 1,
        }
    }

    /// [`handle_acker`](Self::handle_acker) for each of `ms`, in order, dispatched once.
    #[inline]
    pub(crate) fn handle_acker_batch(&mut self, ms: &[AckerMessage], out: &mut Outbox) {
        match self {
            Executor::Acker(e) => e.acker_messages(ms, out),
            Executor::Spout(e) => e.state.counters.ignored += ms.len() as u64,
            Executor::Bolt(e) => e.state.counters.ignored += ms.len() as u64,
        }
    }

    /// [`handle`](Self::handle) for an acker's notice. A user `ack` / `fail` may not emit, so
    /// nothing is sent. The thread-per-core shell passes the time the notice was *sent* as
    /// `now_ns`, so that complete latency ends when the acker's notice left for the spout.
    #[inline]
    pub fn handle_notice(&mut self, n: Notice, now_ns: u64) {
        match self {
            Executor::Spout(e) => e.notice(n, now_ns),
            Executor::Bolt(e) => e.state.counters.ignored += 1,
            Executor::Acker(e) => e.counters.ignored += 1,
        }
    }

    /// [`handle_notice`](Self::handle_notice) for each notice of `ns`, in order, dispatched once
    /// (the task ids in `ns` are not looked at: every notice is for this executor).
    #[inline(always)]
    pub(crate) fn handle_notices(&mut self, ns: &[(acker_core::TaskId, Notice)], now_ns: u64) {
        match self {
            Executor::Spout(e) if e.state.pending.reads_ahead() => {
                for (_, n) in ns.iter().take(NOTICE_LOOKAHEAD) {
                    e.state.pending.prefetch(n.root());
                }
                for (i, &(_, n)) in ns.iter().enumerate() {
                    if let Some((_, ahead)) = ns.get(i + NOTICE_LOOKAHEAD) {
                        e.state.pending.prefetch(ahead.root());
                    }
                    e.notice_inlined(n, now_ns);
                }
            }
            Executor::Spout(e) => {
                for &(_, n) in ns {
                    e.notice_inlined(n, now_ns);
                }
            }
            Executor::Bolt(e) => e.state.counters.ignored += ns.len() as u64,
            Executor::Acker(e) => e.counters.ignored += ns.len() as u64,
        }
    }

    /// [`handle_notice`](Self::handle_notice) for each notice of `ns` (a notice batch from
    /// another thread, every notice for this executor), in order, dispatched once, all with the
    /// batch's send time `now_ns`.
    #[inline(always)]
    pub(crate) fn handle_notice_batch(&mut self, ns: &[Notice], now_ns: u64) {
        match self {
            Executor::Spout(e) if e.state.pending.reads_ahead() => {
                for n in ns.iter().take(NOTICE_LOOKAHEAD) {
                    e.state.pending.prefetch(n.root());
                }
                for (i, &n) in ns.iter().enumerate() {
                    if let Some(ahead) = ns.get(i + NOTICE_LOOKAHEAD) {
                        e.state.pending.prefetch(ahead.root());
                    }
                    e.notice_inlined(n, now_ns);
                }
            }
            Executor::Spout(e) => {
                for &n in ns {
                    e.notice_inlined(n, now_ns);
                }
            }
            Executor::Bolt(e) => e.state.counters.ignored += ns.len() as u64,
            Executor::Acker(e) => e.counters.ignored += ns.len() as u64,
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

    /// For a spout: the root id its next tracked emit tries first
    /// ([`SpoutPending::upcoming_root`]); `None` before its first tracked emit and for bolts and
    /// ackers. For a shell that keeps its own per-root state and prefetches it.
    #[inline]
    pub fn upcoming_root(&self) -> Option<acker_core::RootId> {
        match self {
            Executor::Spout(e) => e.state.pending.upcoming_root(),
            _ => None,
        }
    }

    /// Whether this is a spout below max spout pending (so `next_tuple` would be called).
    pub fn can_emit(&self) -> bool {
        match self {
            Executor::Spout(e) => !e.state.pending.is_full(),
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
            Executor::Spout(e) => e.state.pending.len(),
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

    /// Inputs a bolt's user code holds (handed to `execute`, neither acked, failed nor
    /// dropped yet; expired ones included); 0 for spouts and ackers.
    pub fn open_inputs(&self) -> usize {
        match self {
            Executor::Bolt(e) => e.state.ledger.live.get() as usize,
            _ => 0,
        }
    }

    /// The counters so far.
    pub fn counters(&self) -> ExecutorCounters {
        match self {
            Executor::Spout(e) => e.state.counters,
            Executor::Bolt(e) => ExecutorCounters {
                inputs_dropped_unacked: e.state.ledger.dropped.get(),
                ..e.state.counters
            },
            Executor::Acker(e) => e.counters,
        }
    }

    /// For a spout: the complete latency of every tree acked by an acker, in ns: from the
    /// spout's `now_ns` at the emit to the `now_ns` its `Completed` notice was handed over with.
    /// The thread-per-core shell hands a notice over with the time the acker's thread sent it,
    /// so time the notice waits for the spout's thread (busy in user code, or behind the per-turn
    /// batch limit) is not counted; the local shell and the simulator deliver it at once (the
    /// simulator after its simulated link delay). `None` for bolts and ackers. Takes `&mut`:
    /// a spout holds back a run of equal latencies and records it here at the latest.
    pub fn complete_latency_ns(&mut self) -> Option<&Histogram<u64>> {
        match self {
            Executor::Spout(e) => Some(e.latency()),
            _ => None,
        }
    }

    /// Drops the executor as a crash does (no `close` / `cleanup`), its user instance first, and
    /// returns its final counters: for a bolt they include the inputs its user code held, which
    /// are dropped unacked here (`inputs_dropped_unacked`; their trees time out and are replayed).
    pub fn crash(self) -> ExecutorCounters {
        match self {
            Executor::Bolt(e) => {
                let BoltExecutor { user, state } = e;
                drop(user);
                let BoltState {
                    ledger, counters, ..
                } = state;
                ExecutorCounters {
                    inputs_dropped_unacked: ledger.dropped.get(),
                    ..counters
                }
            }
            other => other.counters(),
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

impl Router {
    /// The router of task `task` of component `component`.
    fn new(
        plan: &Plan,
        component: usize,
        task: TaskId,
        placement: &Placement,
        rng: &mut Xoshiro256PlusPlus,
    ) -> Self {
        let comp = &plan.topology.inner.components[component];
        let me = placement.worker(task);
        let streams: Vec<Vec<RouteState>> = comp
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
        let field_counts = plan.stream_field_counts(component);
        let fast = streams
            .iter()
            .zip(&field_counts)
            .map(|(routes, &field_count)| StreamFast {
                field_count,
                route: match &routes[..] {
                    [r] => r.fast_route(),
                    _ => FastRoute::General,
                },
            })
            .collect();
        Self {
            fast,
            streams,
            names,
            field_counts,
            default_stream,
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
    /// The allocator refused the memory of a task's fixed-size state: an acker's table or park
    /// queue, or a spout's pending set, each allocated whole when the task is built (sized by
    /// [`Config::max_spout_pending`](crate::Config::max_spout_pending),
    /// [`Config::acker_capacity_roots`](crate::Config::acker_capacity_roots) and
    /// [`Plan::with_acker_park_capacity`](crate::Plan::with_acker_park_capacity)). Nothing is
    /// kept; under a `ulimit -v` or on a small machine, lower those.
    OutOfMemory {
        /// The task.
        task: TaskId,
        /// What was being allocated.
        what: &'static str,
        /// Bytes asked for.
        bytes: usize,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::UnknownTask(t) => write!(f, "no task {t} in the plan"),
            BuildError::Config(t) => write!(f, "task {t}: capacity or timeout refused"),
            BuildError::OutOfMemory { task, what, bytes } => write!(
                f,
                "task {task}: the allocator refused {bytes} bytes for its {what}: lower max \
                 spout pending, the acker capacity or the park capacity"
            ),
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
                let out_of_memory = |what, bytes| BuildError::OutOfMemory { task, what, bytes };
                let slots = crate::park::filled(self.acker_capacity, acker_core::Slot::EMPTY)
                    .map_err(|_| {
                        out_of_memory(
                            "acker table",
                            self.acker_capacity
                                .saturating_mul(size_of::<acker_core::Slot>()),
                        )
                    })?;
                let table =
                    AckerTable::new(slots, timeout).map_err(|_| BuildError::Config(task))?;
                let parked =
                    ParkQueue::try_with_capacity(self.acker_park_capacity).map_err(|_| {
                        out_of_memory("park queue", ParkQueue::bytes_for(self.acker_park_capacity))
                    })?;
                let capacity = self.recently_failed_capacity();
                let recently_failed = RecentRoots::try_with_capacity(capacity).map_err(|_| {
                    out_of_memory("recently failed roots", RecentRoots::bytes_for(capacity))
                })?;
                Ok(Executor::Acker(AckerExecutor {
                    task,
                    table,
                    counters: ExecutorCounters::default(),
                    parked,
                    recently_failed,
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
                    let slots = crate::park::filled(cap.saturating_mul(2), PendingSlot::default())
                        .map_err(|_| BuildError::OutOfMemory {
                            task,
                            what: "pending set",
                            bytes: cap
                                .saturating_mul(2)
                                .saturating_mul(size_of::<PendingSlot<crate::MessageId>>()),
                        })?;
                    let pending = SpoutPending::new(
                        slots,
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
                        user,
                        state: SpoutState {
                            task,
                            pending,
                            router,
                            counters: ExecutorCounters::default(),
                            dests: Vec::with_capacity(max_fanout),
                            edges: Vec::with_capacity(max_fanout),
                            acked_at_once: Vec::with_capacity(16),
                            ackers,
                        },
                        latency_ns: latency_histogram(),
                        latency_run: (0, 0),
                    }))
                } else {
                    let f = self
                        .bolt_factory(comp)
                        .ok_or(BuildError::UnknownTask(task))?;
                    let mut user = f();
                    user.prepare(&context);
                    Ok(Executor::Bolt(BoltExecutor {
                        user,
                        state: BoltState {
                            task,
                            ids: IdGenerator::from_seed(sub_seed),
                            ledger: Rc::default(),
                            input_ttl_ns: self.config.timeout_ns().map(|t| t.saturating_mul(2)),
                            router,
                            counters: ExecutorCounters::default(),
                            dests: Vec::with_capacity(max_fanout),
                            ackers,
                        },
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Spout, SpoutOutputCollector};
    use crate::message::Envelope;
    use crate::{Config, TopologyBuilder};

    struct Idle;
    impl Spout for Idle {
        fn next_tuple(&mut self, _c: &mut SpoutOutputCollector<'_>) {}
    }

    /// An acker task of a 4-root table (park queue 64) in a one-spout plan.
    fn small_acker() -> Executor {
        let mut b = TopologyBuilder::new();
        b.set_spout("spout", || Idle, 1).output_fields(&["n"]);
        let plan = b
            .build()
            .unwrap()
            .plan(&Config {
                acker_capacity_roots: Some(4),
                ..Config::default()
            })
            .unwrap();
        let task = plan.acker_tasks().start;
        plan.build_executor(task, &Placement::single(plan.tasks().len()))
            .unwrap()
    }

    /// Emits 0, 1, 2, ... tracked (message id = value), logging the ids acked.
    struct Tracked(u64, std::sync::Arc<std::sync::Mutex<Vec<u64>>>);
    impl Spout for Tracked {
        fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
            c.emit(crate::values![self.0 as i64], Some(self.0)).unwrap();
            self.0 += 1;
        }
        fn ack(&mut self, id: u64) {
            self.1.lock().unwrap().push(id);
        }
    }

    /// `handle_notices` (a run of a local acker's notices) and `handle_notice_batch` (a notice
    /// batch from another thread) do what `handle_notice` does for each notice in turn: a spout
    /// acks every completed root once, in the notices' order (the unknown root and the repeated
    /// one ignored and counted), with the same latencies; a bolt or an acker counts them ignored.
    /// Both with a pending set that stays in the cache (max spout pending 32) and with one that
    /// reads ahead (the default 16384), over a run three times the read-ahead distance.
    #[test]
    fn a_run_of_notices_is_handled_as_the_notices_one_by_one() {
        // 0: one by one; 1: `handle_notices`; 2: `handle_notice_batch`.
        let run = |how: u8, max_spout_pending: Option<usize>| {
            let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
            let l2 = log.clone();
            let mut b = TopologyBuilder::new();
            b.set_spout("spout", move || Tracked(0, l2.clone()), 1)
                .output_fields(&["n"]);
            b.set_basic_bolt("bolt", || crate::bolts::NullBolt, 1)
                .shuffle_grouping("spout");
            let config = Config {
                max_spout_pending,
                ..Config::default()
            };
            let plan = b.build().unwrap().plan(&config).unwrap();
            let placement = Placement::single(plan.tasks().len());
            let mut spout = plan.build_executor(0, &placement).unwrap();
            let Executor::Spout(e) = &spout else {
                panic!("task 0 is no spout")
            };
            assert_eq!(e.state.pending.reads_ahead(), max_spout_pending.is_none());
            let mut out = Outbox::new();
            let mut roots = Vec::new();
            for now in 0..24 {
                assert!(spout.next_tuple(now, &mut out));
                for e in out.drain() {
                    if let Message::Acker(AckerMessage::Init { root, .. }) = e.message {
                        roots.push(root);
                    }
                }
            }
            // Tuples 3, 0, 4, then 3 again (ignored), then 23 down to 5 and 1, an unknown root
            // (ignored) third; 2 stays pending.
            let mut order = vec![3, 0, 4, 3];
            order.extend((5..24).rev());
            order.push(1);
            let mut ns: Vec<(TaskId, Notice)> = order
                .iter()
                .map(|&i| (0, Notice::Completed { root: roots[i] }))
                .collect();
            ns.insert(2, (0, Notice::Completed { root: 12345 }));
            match how {
                1 => spout.handle_notices(&ns, 100),
                2 => {
                    let batch: Vec<Notice> = ns.iter().map(|&(_, n)| n).collect();
                    spout.handle_notice_batch(&batch, 100);
                }
                _ => {
                    for &(_, n) in &ns {
                        spout.handle_notice(n, 100);
                    }
                }
            }
            let c = spout.counters();
            let h = spout.complete_latency_ns().unwrap().clone();
            let acked = log.lock().unwrap().clone();
            (acked, c.acked, c.ignored, h.len(), h.mean())
        };
        let mut want_acked = vec![3, 0, 4];
        want_acked.extend((5..24).rev());
        want_acked.push(1);
        for max_spout_pending in [Some(32), None] {
            let one_by_one = run(0, max_spout_pending);
            assert_eq!(
                (&one_by_one.0[..], one_by_one.1, one_by_one.2, one_by_one.3),
                (&want_acked[..], 23, 2, 23),
                "{max_spout_pending:?}"
            );
            assert_eq!(run(1, max_spout_pending), one_by_one);
            assert_eq!(run(2, max_spout_pending), one_by_one);
        }
        let mut acker = small_acker();
        acker.handle_notices(&[(9, Notice::Completed { root: 1 }); 3], 0);
        assert_eq!(acker.counters().ignored, 3);
        acker.handle_notice_batch(&[Notice::Completed { root: 1 }; 2], 0);
        assert_eq!(acker.counters().ignored, 5);
    }

    /// `handle_tuple_in_place` leaves the tuple owning nothing: a bolt takes its values (and
    /// drops them with the input), a spout or an acker drops them, counted as ignored (the
    /// shell's local tuple list relies on it: its entries are never dropped).
    #[test]
    fn a_tuple_handled_in_place_is_left_owning_nothing() {
        let shared: std::sync::Arc<str> = std::sync::Arc::from("a shared value, not inline");
        let tuple = || Tuple {
            values: crate::values![shared.clone(), shared.clone(), shared.clone()],
            anchors: acker_core::Anchors::spout(5, 6),
            ..Tuple::default()
        };
        let mut b = TopologyBuilder::new();
        b.set_spout("spout", || Idle, 1).output_fields(&["n"]);
        b.set_basic_bolt("bolt", || crate::bolts::NullBolt, 1)
            .shuffle_grouping("spout");
        let plan = b.build().unwrap().plan(&Config::default()).unwrap();
        let placement = Placement::single(plan.tasks().len());
        let mut out = Outbox::new();
        for task in [0, 1, plan.acker_tasks().start] {
            let mut e = plan.build_executor(task, &placement).unwrap();
            let mut t = tuple();
            assert_eq!(std::sync::Arc::strong_count(&shared), 4);
            e.handle_tuple_in_place(&mut t, 0, &mut out);
            assert!(t.values.is_empty() && t.anchors.is_empty(), "task {task}");
            assert_eq!(std::sync::Arc::strong_count(&shared), 1, "task {task}");
            let c = e.counters();
            assert_eq!(
                (c.executed, c.ignored),
                if task == 1 { (1, 0) } else { (0, 1) }
            );
        }
        // The bolt acked its input: one `Ack` for root 5.
        assert_eq!(out.len(), 1);
    }

    /// Two ackers from `make`, one given `msgs` one by one through `handle_acker`, the other as
    /// one batch through `handle_acker_batch`; asserts that each sent exactly the notices
    /// `Completed` for roots 1 to `completed`, in that order, to the spout task 0.
    fn one_by_one_and_as_a_batch(
        make: impl Fn() -> Executor,
        msgs: &[AckerMessage],
        completed: u64,
    ) -> (Executor, Executor) {
        let (mut one, mut batch) = (make(), make());
        let (mut out_one, mut out_batch) = (Outbox::new(), Outbox::new());
        for &m in msgs {
            one.handle_acker(m, &mut out_one);
        }
        batch.handle_acker_batch(msgs, &mut out_batch);
        let want: Vec<Envelope> = (1..=completed)
            .map(|root| Envelope {
                dest: 0,
                message: Message::Notice(Notice::Completed { root }),
            })
            .collect();
        assert_eq!(out_one.as_slice(), &want[..], "one by one");
        assert_eq!(out_batch.as_slice(), &want[..], "as one batch");
        (one, batch)
    }

    /// A batch applied by `handle_acker_batch` does what the same messages do one by one
    /// through `handle_acker`, parking and retries included: six roots into a 4-root table
    /// (two inits parked), then acks that free slots (each freeing decision must admit a
    /// parked root before the next message, or the parked roots' acks park behind them).
    #[test]
    fn a_batch_parks_and_retries_as_the_messages_one_by_one() {
        let mut msgs = Vec::new();
        for root in 1..=6u64 {
            let xor = root * 0x9e37;
            msgs.push(AckerMessage::Init {
                root,
                xor,
                spout_task: 0,
            });
        }
        for root in 1..=6u64 {
            msgs.push(AckerMessage::Ack {
                root,
                xor: root * 0x9e37,
            });
        }
        let (one, batch) = one_by_one_and_as_a_batch(small_acker, &msgs, 6);
        assert_eq!(batch.parked_messages(), 0);
        assert_eq!(batch.pending_roots(), 0);
        let (c1, c2) = (one.counters(), batch.counters());
        assert_eq!((c2.acked, c2.parked, c2.executed), (6, 2, 12));
        assert_eq!(
            (c1.acked, c1.parked, c1.executed),
            (c2.acked, c2.parked, c2.executed)
        );
    }

    /// In a table large enough to read ahead (`BATCH_READ_AHEAD_MIN_SLOTS` slots or more), a
    /// batch of many more messages than the read-ahead distance is applied as the messages one
    /// by one: every message once, in order. 24 roots, each init, an ack that leaves it pending
    /// and the completing ack, interleaved so that roots complete in the batch's first, middle
    /// and last `BATCH_LOOKAHEAD` messages; plus a stray ack (an orphan, no decision).
    #[test]
    fn a_batch_that_reads_ahead_is_applied_as_the_messages_one_by_one() {
        use acker_core::table::{BATCH_LOOKAHEAD, BATCH_READ_AHEAD_MIN_SLOTS};
        let large_acker = || {
            let mut b = TopologyBuilder::new();
            b.set_spout("spout", || Idle, 1).output_fields(&["n"]);
            let plan = b
                .build()
                .unwrap()
                .plan(&Config {
                    acker_capacity_roots: Some(BATCH_READ_AHEAD_MIN_SLOTS),
                    ..Config::default()
                })
                .unwrap();
            let task = plan.acker_tasks().start;
            let e = plan
                .build_executor(task, &Placement::single(plan.tasks().len()))
                .unwrap();
            let Executor::Acker(a) = &e else {
                panic!("task {task} is no acker")
            };
            assert!(a.table.capacity() >= BATCH_READ_AHEAD_MIN_SLOTS);
            e
        };
        let mut msgs = Vec::new();
        let mut completes = Vec::new();
        for root in 1..=24u64 {
            let (a, b) = (root * 0x9e37_79b9, root << 40 | 7);
            msgs.push(AckerMessage::Init {
                root,
                xor: a ^ b,
                spout_task: 0,
            });
            msgs.push(AckerMessage::Ack { root, xor: a });
            completes.push(AckerMessage::Ack { root, xor: b });
        }
        // Completions of roots 1..=8 first, the rest spread behind later inits.
        let mut batch_msgs = Vec::new();
        let (first, rest) = completes.split_at(BATCH_LOOKAHEAD);
        batch_msgs.extend_from_slice(&msgs[..2 * BATCH_LOOKAHEAD]);
        batch_msgs.extend_from_slice(first);
        batch_msgs.push(AckerMessage::Ack {
            root: 999,
            xor: 0x55,
        });
        for (i, m) in msgs[2 * BATCH_LOOKAHEAD..].iter().enumerate() {
            batch_msgs.push(*m);
            if i % 2 == 1 {
                batch_msgs.push(rest[i / 2]);
            }
        }
        assert!(batch_msgs.len() > 4 * BATCH_LOOKAHEAD);
        let (one, batch) = one_by_one_and_as_a_batch(large_acker, &batch_msgs, 24);
        // The stray ack's orphan is the one root left.
        assert_eq!((one.pending_roots(), batch.pending_roots()), (1, 1));
        let (c1, c2) = (one.counters(), batch.counters());
        assert_eq!((c2.acked, c2.executed, c2.parked), (24, 73, 0));
        assert_eq!((c1.acked, c1.executed), (c2.acked, c2.executed));
    }
}
