//! The Storm-like topology API: [`TopologyBuilder`], groupings, named streams with declared
//! fields, the run [`Config`], and the task [`Plan`] that builds every task's executor.
//!
//! ```
//! use acker_runtime::{values, BasicBolt, BasicOutputCollector, Config, FailedException, Input,
//!     Spout, SpoutOutputCollector, TopologyBuilder};
//! struct Numbers(i64);
//! impl Spout for Numbers {
//!     fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
//!         self.0 += 1;
//!         let _ = c.emit(values![self.0], Some(self.0 as u64));
//!     }
//! }
//! struct Double;
//! impl BasicBolt for Double {
//!     fn execute(&mut self, input: &Input, c: &mut BasicOutputCollector<'_, '_>) -> Result<(), FailedException> {
//!         let n = input.values()[0].as_int().unwrap_or(0);
//!         c.emit(values![2 * n]).map_err(|e| FailedException::new(e.to_string()))?;
//!         Ok(())
//!     }
//! }
//! let mut b = TopologyBuilder::new();
//! b.set_spout("numbers", || Numbers(0), 1).output_fields(&["n"]);
//! b.set_basic_bolt("double", || Double, 2).fields_grouping("numbers", &["n"]).output_fields(&["n2"]);
//! let topology = b.build().unwrap();
//! let plan = topology.plan(&Config::default()).unwrap();
//! assert_eq!(plan.tasks().len(), 1 + 2 + 1); // spout, two bolt tasks, one acker
//! ```
//!
//! Task ids are given in this order: the tasks of every spout (in declaration order), then of every
//! bolt (in declaration order), then the acker tasks (`__acker`), so acker task `i` is
//! `plan.acker_tasks().start + i`.

use std::collections::BTreeSet;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use acker_core::TaskId;

use crate::api::{BasicBolt, BasicBoltAdapter, Bolt, Spout};
use crate::executor::router::RouteKind;
use crate::message::{StreamId, DEFAULT_STREAM};

/// The component id of the acker tasks, reserved (as in Storm).
pub const ACKER_COMPONENT: &str = "__acker";

/// How many roots a spout task may have pending when `max_spout_pending` is not set: the runtime
/// needs a bound for its fixed-capacity pending set (Storm's default is unbounded).
pub const DEFAULT_PENDING_CAPACITY: usize = 16_384;

/// The largest [`Config::max_spout_pending`] a plan accepts: 2^24 = 16,777,216 roots a spout
/// task (`acker-run` allows 10,000,000 on its command line, to which the connector job adds one
/// slot). Each pending root costs two slots of the spout task's pending set (40 bytes a slot,
/// allocated whole when the task is built) and, by default, four roots of acker capacity.
pub const MAX_PENDING_CAPACITY: usize = 1 << 24;

/// The largest [`Config::acker_capacity_roots`] a plan accepts: 100,000,000 roots an acker task
/// (2 GB of table at 20 bytes a root, allocated whole when the task is built). The default
/// capacity is capped here too.
pub const MAX_ACKER_CAPACITY_ROOTS: usize = 100_000_000;

/// How a stream's tuples are spread over the tasks of a subscribing bolt (Storm's groupings).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Grouping {
    /// Each tuple to one task, in turn (round-robin from a seeded start), spreading load evenly.
    Shuffle,
    /// Tuples with equal values in these fields always go to the same task (fixed hash).
    Fields(Vec<String>),
    /// Every tuple to every task.
    All,
    /// Every tuple to the task with the lowest id.
    Global,
    /// As shuffle, but among the tasks in the same worker (core) as the emitter when there are any.
    LocalOrShuffle,
    /// The emitter names the task with `emit_direct`; plain emits do not reach this subscriber.
    Direct,
}

/// A build-time error in a topology; [`TopologyBuilder::build`] returns the first one found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TopologyError {
    /// Two components share an id (or a component uses the reserved `__acker`).
    DuplicateComponent(String),
    /// A component was declared with parallelism 0.
    ZeroParallelism(String),
    /// A bolt subscribes to a component that does not exist.
    UnknownComponent {
        /// The subscribing bolt.
        bolt: String,
        /// The missing source component.
        source: String,
    },
    /// A bolt subscribes to a stream its source does not declare.
    UnknownStream {
        /// The subscribing bolt.
        bolt: String,
        /// The source component.
        source: String,
        /// The missing stream.
        stream: String,
    },
    /// A fields grouping names a field the stream does not declare (or names no field).
    UndeclaredField {
        /// The subscribing bolt.
        bolt: String,
        /// The source component.
        source: String,
        /// The stream.
        stream: String,
        /// The missing field (empty when the grouping names no field).
        field: String,
    },
    /// A component declares the same stream twice.
    DuplicateStream {
        /// The component.
        component: String,
        /// The stream.
        stream: String,
    },
    /// The topology has no spout.
    NoSpout,
    /// A component was declared with an empty id (Storm refuses one too: groupings, stream
    /// names and `acker-run`'s reports name components by id).
    EmptyComponentId,
    /// A stream declares the same field name twice (Storm's `Fields` refuses duplicates: a
    /// fields grouping on that name would be ambiguous).
    DuplicateField {
        /// The component.
        component: String,
        /// The stream.
        stream: String,
        /// The repeated field name.
        field: String,
    },
    /// More tasks than [`MAX_TASKS`] (65,535: task ids 0 to 65,534, ackers counted at plan
    /// time; the id 65,535 is reserved, see [`MAX_TASKS`]) or a component with more streams than
    /// stream ids.
    TooManyTasks,
}

impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TopologyError::DuplicateComponent(c) => write!(f, "duplicate component id {c:?}"),
            TopologyError::ZeroParallelism(c) => write!(f, "component {c:?} has parallelism 0"),
            TopologyError::UnknownComponent { bolt, source } => {
                write!(
                    f,
                    "bolt {bolt:?} subscribes to unknown component {source:?}"
                )
            }
            TopologyError::UnknownStream {
                bolt,
                source,
                stream,
            } => write!(
                f,
                "bolt {bolt:?} subscribes to stream {stream:?} that {source:?} does not declare"
            ),
            TopologyError::UndeclaredField {
                bolt,
                source,
                stream,
                field,
            } => write!(
                f,
                "bolt {bolt:?} groups {source:?}/{stream:?} on undeclared field {field:?}"
            ),
            TopologyError::DuplicateStream { component, stream } => {
                write!(
                    f,
                    "component {component:?} declares stream {stream:?} twice"
                )
            }
            TopologyError::NoSpout => write!(f, "topology has no spout"),
            TopologyError::EmptyComponentId => write!(f, "a component has an empty id"),
            TopologyError::DuplicateField {
                component,
                stream,
                field,
            } => write!(
                f,
                "component {component:?} declares field {field:?} twice on stream {stream:?}"
            ),
            TopologyError::TooManyTasks => write!(
                f,
                "topology has more than {MAX_TASKS} tasks (task ids 0 to {}; {RESERVED_ID_NOTE}) \
                 or a component with more than {} streams",
                MAX_TASKS - 1,
                StreamId::MAX
            ),
        }
    }
}

impl std::error::Error for TopologyError {}

/// A run configuration, with Storm's meanings and defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Acker tasks (`topology.acker.executors`); 0 = at-most-once: spout tuples are acked as soon
    /// as emitted and nothing is tracked. Default 1.
    pub num_ackers: usize,
    /// The message timeout T in ns (`topology.message.timeout.secs`, default 30 s): a pending
    /// spout tuple not completed T to 2T after emit (or last reset) is failed.
    pub message_timeout_ns: u64,
    /// `topology.enable.message.timeouts` (default true). Off: a lost tuple stays pending forever.
    pub enable_message_timeouts: bool,
    /// `topology.max.spout.pending` per spout task; `None` (Storm's default, unbounded) means
    /// [`DEFAULT_PENDING_CAPACITY`] here, since pending sets have a fixed capacity. At most
    /// [`MAX_PENDING_CAPACITY`] ([`ConfigError::MaxSpoutPendingTooLarge`] past it).
    pub max_spout_pending: Option<usize>,
    /// How often the shell sends a [`crate::Message::Tick`] to every executor, in ns (default 1 s).
    pub tick_interval_ns: u64,
    /// Roots one acker task can hold; `None` = 4 × (all spout tasks' pending capacity) / ackers,
    /// at least 1024 and at most [`MAX_ACKER_CAPACITY_ROOTS`]; `Some` past that bound is refused
    /// ([`ConfigError::AckerCapacityTooLarge`]). A message that finds the table full is parked until a slot frees (see
    /// [`Plan::acker_park_capacity`]); only when the park queue is full too is it dropped and
    /// counted (the tree then times out and is replayed, as a lost message would). Besides the
    /// pending trees, the table holds each tree the spout timed out until the acker's entry
    /// expires (2T to 3T after its last insertion), and orphans: messages for a tree already
    /// decided. The late messages of a failed tree's other branches make none while the acker
    /// remembers the root ([`Config::acker_recently_failed_roots`]); size the table up for many
    /// timeouts, and that setting for failed trees whose branches stay in flight for long.
    pub acker_capacity_roots: Option<usize>,
    /// Roots one acker task remembers as decided `Failed`, so that the late acks, fails and
    /// resets of those trees' other branches are dropped instead of each making an orphan
    /// entry (see [`AckerExecutor`](crate::AckerExecutor), "Late messages of failed trees").
    /// Counted in failures, not in time: the most recent this many failures are remembered, so
    /// it must cover the failed trees whose branches may still be on their way, which is at
    /// most the tuples in flight (rings, staging, inputs a bolt holds). `None` =
    /// [`DEFAULT_RECENTLY_FAILED_ROOTS`] (65,536: the envelopes of 16 rings of the default
    /// 4,096, a 4-thread shell) shared among the acker tasks, as the roots are (at least
    /// [`MIN_DEFAULT_RECENTLY_FAILED_ROOTS`] each); `Some(n)`: `n` for each acker task;
    /// `Some(0)` remembers none (Storm's behaviour: every late message makes an orphan). At
    /// most [`MAX_ACKER_CAPACITY_ROOTS`] ([`ConfigError::RecentlyFailedRootsTooLarge`]). 16 to
    /// 24 bytes a root of address space, allocated zeroed, written only as trees fail (1 MiB in
    /// all by default).
    pub acker_recently_failed_roots: Option<usize>,
    /// Ignored; kept so that existing configs compile. A bolt no longer has a bounded table of
    /// open inputs: each [`Input`](crate::Input) carries its own anchoring state (as Storm's
    /// tuples do), so a bolt that holds or drops inputs blocks no other input (see
    /// [`Input`](crate::Input) for what happens to them).
    pub max_open_inputs: usize,
    /// The seed every executor's xoshiro stream is derived from (with its task id).
    pub seed: u64,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            num_ackers: 1,
            message_timeout_ns: 30_000_000_000,
            enable_message_timeouts: true,
            max_spout_pending: None,
            tick_interval_ns: 1_000_000_000,
            acker_capacity_roots: None,
            acker_recently_failed_roots: None,
            max_open_inputs: 1024,
            seed: 0x5eed,
        }
    }
}

/// An unusable [`Config`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// `max_spout_pending` is `Some(0)`.
    ZeroMaxSpoutPending,
    /// `max_spout_pending` is over [`MAX_PENDING_CAPACITY`] (a bound is needed: the pending set
    /// is allocated whole; for Storm's "unbounded", leave it `None` or use a bound your memory
    /// holds).
    MaxSpoutPendingTooLarge,
    /// `acker_capacity_roots` is over [`MAX_ACKER_CAPACITY_ROOTS`].
    AckerCapacityTooLarge,
    /// `message_timeout_ns` is 0 with timeouts on.
    ZeroTimeout,
    /// `tick_interval_ns` is 0.
    ZeroTickInterval,
    /// `acker_capacity_roots` is `Some(0)`.
    ZeroCapacity,
    /// `acker_recently_failed_roots` is over [`MAX_ACKER_CAPACITY_ROOTS`].
    RecentlyFailedRootsTooLarge,
    /// The tasks plus the ackers exceed [`MAX_TASKS`] (65,535: task ids 0 to 65,534; the id
    /// 65,535 is reserved, see [`MAX_TASKS`]).
    TooManyTasks,
}

/// The most tasks a planned topology may have, ackers included: 65,535, task ids 0 to 65,534.
/// A [`TaskId`] is a `u16`, whose 65,536 values would fit 65,536 tasks, but the task id 65,535
/// (`u16::MAX`) is reserved: a component's tasks, and the ackers, are a half-open
/// `Range<TaskId>` (`TopologyContext::component_tasks`, [`Plan::acker_tasks`]), whose end, one
/// past the last task, must itself be a `TaskId`. No code uses 65,535 as a sentinel (the acker
/// table marks "no spout task yet" with a separate bit).
pub const MAX_TASKS: usize = TaskId::MAX as usize;

/// Why the last task id is not used, for the errors.
const RESERVED_ID_NOTE: &str = "the id 65535 is reserved: a component's tasks are a half-open \
     range of 16-bit task ids whose end must fit in one";

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ConfigError::ZeroMaxSpoutPending => "max spout pending must be at least 1",
            ConfigError::MaxSpoutPendingTooLarge => {
                return write!(
                    f,
                    "max spout pending must be at most {MAX_PENDING_CAPACITY} (its pending set is \
                     allocated whole when the spout task is built)"
                )
            }
            ConfigError::AckerCapacityTooLarge => {
                return write!(
                    f,
                    "acker capacity must be at most {MAX_ACKER_CAPACITY_ROOTS} roots (its table \
                     is allocated whole when the acker task is built)"
                )
            }
            ConfigError::ZeroTimeout => "message timeout must be positive",
            ConfigError::ZeroTickInterval => "tick interval must be positive",
            ConfigError::ZeroCapacity => "acker capacity must be positive",
            ConfigError::RecentlyFailedRootsTooLarge => {
                return write!(
                    f,
                    "the roots an acker remembers as failed must be at most \
                     {MAX_ACKER_CAPACITY_ROOTS} (they are allocated whole when the acker task is \
                     built)"
                )
            }
            ConfigError::TooManyTasks => {
                return write!(
                    f,
                    "tasks plus ackers exceed {MAX_TASKS} (task ids 0 to {}; {RESERVED_ID_NOTE})",
                    MAX_TASKS - 1
                )
            }
        })
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// Warnings about a legal but risky configuration (the shell prints them to stderr).
    ///
    /// It warns whenever message timeouts are off while acking is on (ackers > 0), whether or
    /// not max spout pending is set (Storm warns only when it is; here an unset max spout pending
    /// still caps pending trees at [`DEFAULT_PENDING_CAPACITY`]): a tuple that is lost, or that a
    /// bolt drops or holds, then keeps its pending slot for ever, and once every slot is taken
    /// the spout stops for good.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if !self.enable_message_timeouts && self.num_ackers > 0 {
            w.push(format!(
                "message timeouts are off with acking on: a tuple that is lost, or that a bolt \
                 drops or holds, keeps its pending slot forever, and the spout stops for good \
                 once all {} slots (max spout pending{}) are taken; acker entries never expire \
                 either, so an orphan (a message for a tree already decided that the acker no \
                 longer remembers as failed) keeps its acker table slot forever",
                self.pending_capacity(),
                if self.max_spout_pending.is_some() {
                    ""
                } else {
                    ", unset: the default cap"
                }
            ));
        }
        w
    }

    /// The pending capacity of one spout task (`max_spout_pending` or the default bound).
    pub fn pending_capacity(&self) -> usize {
        self.max_spout_pending.unwrap_or(DEFAULT_PENDING_CAPACITY)
    }

    /// The message timeout as the core takes it: `None` when timeouts are off.
    pub fn timeout_ns(&self) -> Option<u64> {
        self.enable_message_timeouts
            .then_some(self.message_timeout_ns)
    }
}

/// Builds a spout instance; called once per task, and again when a task restarts.
pub type SpoutFactory = Arc<dyn Fn() -> Box<dyn Spout> + Send + Sync>;
/// Builds a bolt instance; called once per task, and again when a task restarts.
pub type BoltFactory = Arc<dyn Fn() -> Box<dyn Bolt> + Send + Sync>;

#[derive(Clone)]
enum Logic {
    Spout(SpoutFactory),
    Bolt(BoltFactory),
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct StreamDecl {
    name: String,
    fields: Vec<String>,
}

#[derive(Clone, Debug)]
struct Subscription {
    source: String,
    stream: String,
    grouping: Grouping,
}

#[derive(Clone)]
struct ComponentDecl {
    id: String,
    logic: Logic,
    parallelism: usize,
    streams: Vec<StreamDecl>,
    subscriptions: Vec<Subscription>,
}

/// Assembles spouts and bolts into a [`Topology`] (Storm's `TopologyBuilder`).
///
/// Declarations are recorded as given; every check happens in [`build`](Self::build).
#[derive(Default)]
pub struct TopologyBuilder {
    components: Vec<ComponentDecl>,
}

/// Declares the output streams of a spout just added (Storm's `declareOutputFields`).
pub struct SpoutDeclarer<'a> {
    c: &'a mut ComponentDecl,
}

/// Declares the inputs (groupings) and output streams of a bolt just added.
pub struct BoltDeclarer<'a> {
    c: &'a mut ComponentDecl,
}

fn fields(f: &[&str]) -> Vec<String> {
    f.iter().map(|s| s.to_string()).collect()
}

impl SpoutDeclarer<'_> {
    /// Declares the default stream with these fields.
    pub fn output_fields(self, names: &[&str]) -> Self {
        self.output_stream(DEFAULT_STREAM, names)
    }

    /// Declares a named stream with these fields.
    pub fn output_stream(self, stream: &str, names: &[&str]) -> Self {
        self.c.streams.push(StreamDecl {
            name: stream.to_string(),
            fields: fields(names),
        });
        self
    }
}

impl BoltDeclarer<'_> {
    /// Declares the default stream with these fields.
    pub fn output_fields(self, names: &[&str]) -> Self {
        self.output_stream(DEFAULT_STREAM, names)
    }

    /// Declares a named stream with these fields.
    pub fn output_stream(self, stream: &str, names: &[&str]) -> Self {
        self.c.streams.push(StreamDecl {
            name: stream.to_string(),
            fields: fields(names),
        });
        self
    }

    /// Subscribes to `stream` of `source` with `grouping`.
    pub fn grouping(self, source: &str, stream: &str, grouping: Grouping) -> Self {
        self.c.subscriptions.push(Subscription {
            source: source.to_string(),
            stream: stream.to_string(),
            grouping,
        });
        self
    }

    /// Shuffle grouping on `source`'s default stream.
    pub fn shuffle_grouping(self, source: &str) -> Self {
        self.grouping(source, DEFAULT_STREAM, Grouping::Shuffle)
    }

    /// Fields grouping on `source`'s default stream.
    pub fn fields_grouping(self, source: &str, names: &[&str]) -> Self {
        self.grouping(source, DEFAULT_STREAM, Grouping::Fields(fields(names)))
    }

    /// All grouping on `source`'s default stream.
    pub fn all_grouping(self, source: &str) -> Self {
        self.grouping(source, DEFAULT_STREAM, Grouping::All)
    }

    /// Global grouping on `source`'s default stream.
    pub fn global_grouping(self, source: &str) -> Self {
        self.grouping(source, DEFAULT_STREAM, Grouping::Global)
    }

    /// Local-or-shuffle grouping on `source`'s default stream.
    pub fn local_or_shuffle_grouping(self, source: &str) -> Self {
        self.grouping(source, DEFAULT_STREAM, Grouping::LocalOrShuffle)
    }

    /// Direct grouping on `source`'s default stream.
    pub fn direct_grouping(self, source: &str) -> Self {
        self.grouping(source, DEFAULT_STREAM, Grouping::Direct)
    }
}

impl TopologyBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    fn add(&mut self, id: &str, logic: Logic, parallelism: usize) -> &mut ComponentDecl {
        self.components.push(ComponentDecl {
            id: id.to_string(),
            logic,
            parallelism,
            streams: Vec::new(),
            subscriptions: Vec::new(),
        });
        self.components.last_mut().expect("just pushed")
    }

    /// Adds a spout with `parallelism` tasks; `factory` builds one instance per task.
    pub fn set_spout<S, F>(&mut self, id: &str, factory: F, parallelism: usize) -> SpoutDeclarer<'_>
    where
        S: Spout + 'static,
        F: Fn() -> S + Send + Sync + 'static,
    {
        let f: SpoutFactory = Arc::new(move || Box::new(factory()) as Box<dyn Spout>);
        SpoutDeclarer {
            c: self.add(id, Logic::Spout(f), parallelism),
        }
    }

    /// Adds a bolt with `parallelism` tasks; `factory` builds one instance per task.
    pub fn set_bolt<B, F>(&mut self, id: &str, factory: F, parallelism: usize) -> BoltDeclarer<'_>
    where
        B: Bolt + 'static,
        F: Fn() -> B + Send + Sync + 'static,
    {
        let f: BoltFactory = Arc::new(move || Box::new(factory()) as Box<dyn Bolt>);
        BoltDeclarer {
            c: self.add(id, Logic::Bolt(f), parallelism),
        }
    }

    /// Adds a basic bolt (Storm's `IBasicBolt`): every emit is anchored to the input, which is
    /// acked when `execute` returns `Ok` and failed when it returns an error.
    pub fn set_basic_bolt<B, F>(
        &mut self,
        id: &str,
        factory: F,
        parallelism: usize,
    ) -> BoltDeclarer<'_>
    where
        B: BasicBolt + 'static,
        F: Fn() -> B + Send + Sync + 'static,
    {
        let f: BoltFactory =
            Arc::new(move || Box::new(BasicBoltAdapter::new(factory())) as Box<dyn Bolt>);
        BoltDeclarer {
            c: self.add(id, Logic::Bolt(f), parallelism),
        }
    }

    /// Checks the declarations and freezes them into a [`Topology`].
    ///
    /// # Errors
    /// The first [`TopologyError`] found: duplicate component id (or `__acker`), parallelism 0,
    /// duplicate stream, no spout, a subscription to an unknown component or stream, a fields
    /// grouping on an undeclared (or no) field, too many tasks.
    pub fn build(&self) -> Result<Topology, TopologyError> {
        let mut seen = BTreeSet::new();
        for c in &self.components {
            if c.id == ACKER_COMPONENT || !seen.insert(c.id.as_str()) {
                return Err(TopologyError::DuplicateComponent(c.id.clone()));
            }
            if c.id.is_empty() {
                return Err(TopologyError::EmptyComponentId);
            }
            if c.parallelism == 0 {
                return Err(TopologyError::ZeroParallelism(c.id.clone()));
            }
            let mut names = BTreeSet::new();
            for s in &c.streams {
                if !names.insert(s.name.as_str()) {
                    return Err(TopologyError::DuplicateStream {
                        component: c.id.clone(),
                        stream: s.name.clone(),
                    });
                }
                let mut fields = BTreeSet::new();
                if let Some(field) = s.fields.iter().find(|f| !fields.insert(f.as_str())) {
                    return Err(TopologyError::DuplicateField {
                        component: c.id.clone(),
                        stream: s.name.clone(),
                        field: field.clone(),
                    });
                }
            }
            if c.streams.len() > StreamId::MAX as usize {
                return Err(TopologyError::TooManyTasks);
            }
        }
        // Spouts first, then bolts, each in declaration order.
        let mut ordered: Vec<&ComponentDecl> = self
            .components
            .iter()
            .filter(|c| matches!(c.logic, Logic::Spout(_)))
            .collect();
        if ordered.is_empty() {
            return Err(TopologyError::NoSpout);
        }
        ordered.extend(
            self.components
                .iter()
                .filter(|c| matches!(c.logic, Logic::Bolt(_))),
        );
        let find = |id: &str| ordered.iter().position(|c| c.id == id);
        let mut total = 0usize;
        for c in &ordered {
            total = total.saturating_add(c.parallelism);
        }
        if total > MAX_TASKS {
            return Err(TopologyError::TooManyTasks);
        }
        let mut components = Vec::with_capacity(ordered.len());
        let mut next_task = 0usize;
        for c in &ordered {
            components.push(Component {
                id: c.id.clone(),
                logic: c.logic.clone(),
                tasks: next_task as TaskId..(next_task + c.parallelism) as TaskId,
                streams: c.streams.clone(),
                routes: vec![Vec::new(); c.streams.len()],
            });
            next_task += c.parallelism;
        }
        for (ci, c) in ordered.iter().enumerate() {
            for sub in &c.subscriptions {
                let Some(si) = find(&sub.source) else {
                    return Err(TopologyError::UnknownComponent {
                        bolt: c.id.clone(),
                        source: sub.source.clone(),
                    });
                };
                let Some(stream) = components[si]
                    .streams
                    .iter()
                    .position(|s| s.name == sub.stream)
                else {
                    return Err(TopologyError::UnknownStream {
                        bolt: c.id.clone(),
                        source: sub.source.clone(),
                        stream: sub.stream.clone(),
                    });
                };
                let kind = match &sub.grouping {
                    Grouping::Shuffle => RouteKind::Shuffle,
                    Grouping::All => RouteKind::All,
                    Grouping::Global => RouteKind::Global,
                    Grouping::LocalOrShuffle => RouteKind::LocalOrShuffle,
                    Grouping::Direct => RouteKind::Direct,
                    Grouping::Fields(names) => {
                        let declared = &components[si].streams[stream].fields;
                        if names.is_empty() {
                            return Err(TopologyError::UndeclaredField {
                                bolt: c.id.clone(),
                                source: sub.source.clone(),
                                stream: sub.stream.clone(),
                                field: String::new(),
                            });
                        }
                        let mut idx = Vec::with_capacity(names.len());
                        for n in names {
                            match declared.iter().position(|d| d == n) {
                                Some(i) => idx.push(i),
                                None => {
                                    return Err(TopologyError::UndeclaredField {
                                        bolt: c.id.clone(),
                                        source: sub.source.clone(),
                                        stream: sub.stream.clone(),
                                        field: n.clone(),
                                    })
                                }
                            }
                        }
                        RouteKind::Fields(idx)
                    }
                };
                let dest = components[ci].tasks.clone();
                components[si].routes[stream].push(RouteDecl {
                    dest_component: ci,
                    dest_tasks: dest,
                    kind,
                });
            }
        }
        Ok(Topology {
            inner: Arc::new(TopologyInner {
                components,
                num_tasks: next_task,
            }),
        })
    }
}

/// One subscription to a stream, resolved.
#[derive(Clone, Debug)]
pub(crate) struct RouteDecl {
    pub(crate) dest_component: usize,
    pub(crate) dest_tasks: Range<TaskId>,
    pub(crate) kind: RouteKind,
}

pub(crate) struct Component {
    pub(crate) id: String,
    logic: Logic,
    pub(crate) tasks: Range<TaskId>,
    streams: Vec<StreamDecl>,
    /// Per output stream: its subscribers.
    pub(crate) routes: Vec<Vec<RouteDecl>>,
}

pub(crate) struct TopologyInner {
    pub(crate) components: Vec<Component>,
    num_tasks: usize,
}

/// A checked, immutable topology (cheap to clone: the declarations are shared).
#[derive(Clone)]
pub struct Topology {
    pub(crate) inner: Arc<TopologyInner>,
}

impl fmt::Debug for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Topology")
            .field(
                "components",
                &self
                    .inner
                    .components
                    .iter()
                    .map(|c| (&c.id, c.tasks.clone()))
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// What a task runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TaskKind {
    /// A spout task.
    Spout,
    /// A bolt task.
    Bolt,
    /// An acker task.
    Acker,
}

/// One task of a [`Plan`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskInfo {
    /// The task id.
    pub task: TaskId,
    /// The component id (`__acker` for ackers).
    pub component: String,
    /// Spout, bolt or acker.
    pub kind: TaskKind,
    /// The task's index within its component (0-based).
    pub index: usize,
}

/// Wraps every spout instance a topology builds (see [`Topology::with_spout_wrapper`]).
pub type SpoutWrapper = Arc<dyn Fn(Box<dyn Spout>) -> Box<dyn Spout> + Send + Sync>;

impl Topology {
    /// A copy of this topology whose spout factories hand every instance they build (at start and
    /// at every restart) to `wrap` and return what it returns; bolts, streams and groupings are
    /// unchanged. A shell uses it to observe a spout's callbacks from outside the spout (the
    /// simulator's oracles record every `ack` / `fail` this way); the wrapper should forward
    /// every call to the instance it wraps.
    pub fn with_spout_wrapper(&self, wrap: SpoutWrapper) -> Topology {
        let components = self
            .inner
            .components
            .iter()
            .map(|c| Component {
                id: c.id.clone(),
                logic: match &c.logic {
                    Logic::Spout(f) => {
                        let (f, w) = (f.clone(), wrap.clone());
                        Logic::Spout(Arc::new(move || w(f())))
                    }
                    Logic::Bolt(f) => Logic::Bolt(f.clone()),
                },
                tasks: c.tasks.clone(),
                streams: c.streams.clone(),
                routes: c.routes.clone(),
            })
            .collect();
        Topology {
            inner: Arc::new(TopologyInner {
                components,
                num_tasks: self.inner.num_tasks,
            }),
        }
    }
}

impl Topology {
    /// Number of user tasks (spouts and bolts; ackers come from the [`Config`]).
    pub fn num_tasks(&self) -> usize {
        self.inner.num_tasks
    }

    /// The component ids, spouts first, then bolts, each in declaration order.
    pub fn component_ids(&self) -> Vec<String> {
        self.inner.components.iter().map(|c| c.id.clone()).collect()
    }

    /// The declared fields of `component`'s `stream`, if both exist.
    pub fn stream_fields(&self, component: &str, stream: &str) -> Option<Vec<String>> {
        let c = self.inner.components.iter().find(|c| c.id == component)?;
        c.streams
            .iter()
            .find(|s| s.name == stream)
            .map(|s| s.fields.clone())
    }

    /// Lays the topology out for `config`: user tasks then `config.num_ackers` acker tasks.
    ///
    /// # Errors
    /// [`ConfigError`] for an unusable configuration.
    pub fn plan(&self, config: &Config) -> Result<Plan, ConfigError> {
        if config.max_spout_pending == Some(0) {
            return Err(ConfigError::ZeroMaxSpoutPending);
        }
        if config.max_spout_pending > Some(MAX_PENDING_CAPACITY) {
            return Err(ConfigError::MaxSpoutPendingTooLarge);
        }
        if config.acker_capacity_roots > Some(MAX_ACKER_CAPACITY_ROOTS) {
            return Err(ConfigError::AckerCapacityTooLarge);
        }
        if config.enable_message_timeouts && config.message_timeout_ns == 0 {
            return Err(ConfigError::ZeroTimeout);
        }
        if config.tick_interval_ns == 0 {
            return Err(ConfigError::ZeroTickInterval);
        }
        if config.acker_capacity_roots == Some(0) {
            return Err(ConfigError::ZeroCapacity);
        }
        if config.acker_recently_failed_roots > Some(MAX_ACKER_CAPACITY_ROOTS) {
            return Err(ConfigError::RecentlyFailedRootsTooLarge);
        }
        let total = self.inner.num_tasks.saturating_add(config.num_ackers);
        if total > MAX_TASKS {
            return Err(ConfigError::TooManyTasks);
        }
        let mut tasks = Vec::with_capacity(total);
        for c in &self.inner.components {
            let kind = match c.logic {
                Logic::Spout(_) => TaskKind::Spout,
                Logic::Bolt(_) => TaskKind::Bolt,
            };
            for (index, t) in c.tasks.clone().enumerate() {
                tasks.push(TaskInfo {
                    task: t,
                    component: c.id.clone(),
                    kind,
                    index,
                });
            }
        }
        let base = self.inner.num_tasks;
        for i in 0..config.num_ackers {
            tasks.push(TaskInfo {
                task: (base + i) as TaskId,
                component: ACKER_COMPONENT.to_string(),
                kind: TaskKind::Acker,
                index: i,
            });
        }
        let spout_tasks = tasks.iter().filter(|t| t.kind == TaskKind::Spout).count();
        let acker_capacity = config.acker_capacity_roots.unwrap_or_else(|| {
            (spout_tasks
                .saturating_mul(4)
                .saturating_mul(config.pending_capacity())
                / config.num_ackers.max(1))
            .clamp(1024, MAX_ACKER_CAPACITY_ROOTS)
        });
        Ok(Plan {
            topology: self.clone(),
            config: config.clone(),
            tasks,
            acker_capacity,
            acker_park_capacity: default_acker_park_capacity(acker_capacity),
            recently_failed_capacity: config.acker_recently_failed_roots.unwrap_or(
                (DEFAULT_RECENTLY_FAILED_ROOTS / config.num_ackers.max(1))
                    .max(MIN_DEFAULT_RECENTLY_FAILED_ROOTS),
            ),
        })
    }
}

/// Which worker (core) each task runs in: local-or-shuffle grouping prefers destination tasks in
/// the emitter's worker. [`Placement::single`] puts every task in worker 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    worker_of_task: Vec<u16>,
}

impl Placement {
    /// Every task in one worker.
    pub fn single(num_tasks: usize) -> Self {
        Self {
            worker_of_task: vec![0; num_tasks],
        }
    }

    /// The thread-per-core shell's rule for `plan` on `workers` threads: spout and bolt tasks go
    /// round-robin in task-id order (user task `t` in worker `t % workers`), and acker task `i`
    /// goes to the worker of spout task `i % spouts`, so each spout's inits and notices stay on its
    /// own thread. `workers` 0 counts as 1.
    pub fn for_plan(plan: &Plan, workers: usize) -> Self {
        let w = workers.max(1);
        let tasks = plan.tasks();
        let spouts: Vec<u16> = tasks
            .iter()
            .filter(|t| t.kind == TaskKind::Spout)
            .map(|t| (t.task as usize % w) as u16)
            .collect();
        let worker_of_task = tasks
            .iter()
            .map(|t| match t.kind {
                TaskKind::Acker if !spouts.is_empty() => spouts[t.index % spouts.len()],
                _ => (t.task as usize % w) as u16,
            })
            .collect();
        Self { worker_of_task }
    }

    /// Task `t` in worker `t % workers`; `workers` 0 counts as 1.
    pub fn round_robin(num_tasks: usize, workers: usize) -> Self {
        let w = workers.max(1);
        Self {
            worker_of_task: (0..num_tasks).map(|t| (t % w) as u16).collect(),
        }
    }

    /// From an explicit worker index per task (index = task id).
    pub fn from_workers(worker_of_task: Vec<u16>) -> Self {
        Self { worker_of_task }
    }

    /// The worker of `task` (0 for a task beyond the list).
    pub fn worker(&self, task: TaskId) -> u16 {
        self.worker_of_task.get(task as usize).copied().unwrap_or(0)
    }
}

/// A topology laid out into tasks under a [`Config`]: builds the executor of any task, fresh.
///
/// Cheap to clone. The simulator builds every executor from it and, to model a crash and restart,
/// drops one and builds it again (its state is lost; the user's factory gives a new instance).
#[derive(Clone)]
pub struct Plan {
    pub(crate) topology: Topology,
    pub(crate) config: Config,
    tasks: Vec<TaskInfo>,
    pub(crate) acker_capacity: usize,
    pub(crate) acker_park_capacity: usize,
    recently_failed_capacity: usize,
}

/// The roots the acker tasks remember as failed, shared among them (each at least
/// [`MIN_DEFAULT_RECENTLY_FAILED_ROOTS`]), unless [`Config::acker_recently_failed_roots`] says
/// otherwise: 65,536, the envelopes 16 rings of the shell's default 4,096 hold (a 4-thread
/// shell), since the late messages of a failed tree's other branches are at most the tuples in
/// flight. Found too small at `max(capacity / 8, 64)` (128 for the default table): a bolt 300 µs
/// a tuple behind a 4-thread shell let more than 1,000 failed trees' late acks wait in its ring,
/// and the orphans filled the table (new-user trial).
pub const DEFAULT_RECENTLY_FAILED_ROOTS: usize = 65_536;

/// The fewest roots each acker task remembers as failed by default, however many ackers share
/// [`DEFAULT_RECENTLY_FAILED_ROOTS`].
pub const MIN_DEFAULT_RECENTLY_FAILED_ROOTS: usize = 64;

/// The default size of an acker's park queue for `acker_capacity` roots:
/// `max(acker_capacity / 8, 64)` messages (see [`Plan::acker_park_capacity`]).
pub fn default_acker_park_capacity(acker_capacity: usize) -> usize {
    (acker_capacity / 8).max(64)
}

impl fmt::Debug for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Plan")
            .field("tasks", &self.tasks)
            .field("config", &self.config)
            .finish()
    }
}

impl Plan {
    /// Every task, by task id (index = task id).
    pub fn tasks(&self) -> &[TaskInfo] {
        &self.tasks
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The topology.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// The acker task ids (empty with 0 ackers).
    pub fn acker_tasks(&self) -> Range<TaskId> {
        let base = self.topology.inner.num_tasks as TaskId;
        base..base + self.config.num_ackers as TaskId
    }

    /// Roots one acker task can hold.
    pub fn acker_capacity_roots(&self) -> usize {
        self.acker_capacity
    }

    /// Messages one acker task can park while its table is full (back-pressure instead of a
    /// drop; see [`AckerExecutor`](crate::AckerExecutor)). Default
    /// [`default_acker_park_capacity`]`(`[`acker_capacity_roots`](Self::acker_capacity_roots)`)`
    /// = `max(capacity / 8, 64)`; each parked message takes about 72 bytes (the message, its
    /// chain link and a share of the by-root index), preallocated when the acker is built.
    pub fn acker_park_capacity(&self) -> usize {
        self.acker_park_capacity
    }

    /// Roots one acker task remembers as decided `Failed`, to drop the late acks, fails and
    /// resets of those trees' other branches instead of making orphan entries of them:
    /// [`Config::acker_recently_failed_roots`], by default [`DEFAULT_RECENTLY_FAILED_ROOTS`]
    /// divided among the acker tasks, at least [`MIN_DEFAULT_RECENTLY_FAILED_ROOTS`] each.
    pub fn recently_failed_capacity(&self) -> usize {
        self.recently_failed_capacity
    }

    /// This plan with acker park queues of `messages` entries (0: a message refused by a full
    /// table is dropped at once and counted in
    /// [`ExecutorCounters::dropped_full`](crate::ExecutorCounters::dropped_full)). Executors
    /// built afterwards use it.
    ///
    /// It lives on the plan rather than in [`Config`] so that code building a `Config` with a
    /// struct literal keeps compiling.
    pub fn with_acker_park_capacity(mut self, messages: usize) -> Self {
        self.acker_park_capacity = messages;
        self
    }

    pub(crate) fn component_of(&self, task: TaskId) -> Option<usize> {
        self.topology
            .inner
            .components
            .iter()
            .position(|c| c.tasks.contains(&task))
    }

    pub(crate) fn spout_factory(&self, component: usize) -> Option<&SpoutFactory> {
        match &self.topology.inner.components[component].logic {
            Logic::Spout(f) => Some(f),
            Logic::Bolt(_) => None,
        }
    }

    pub(crate) fn bolt_factory(&self, component: usize) -> Option<&BoltFactory> {
        match &self.topology.inner.components[component].logic {
            Logic::Bolt(f) => Some(f),
            Logic::Spout(_) => None,
        }
    }

    pub(crate) fn stream_names(&self, component: usize) -> Vec<String> {
        self.topology.inner.components[component]
            .streams
            .iter()
            .map(|s| s.name.clone())
            .collect()
    }

    pub(crate) fn stream_field_counts(&self, component: usize) -> Vec<usize> {
        self.topology.inner.components[component]
            .streams
            .iter()
            .map(|s| s.fields.len())
            .collect()
    }
}
