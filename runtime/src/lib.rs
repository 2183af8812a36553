//! # acker-runtime
//!
//! Apache Storm's programming model on top of [`acker_core`]: spouts, bolts and ackers as pure
//! single-threaded state machines (executors), a Storm-like topology API, and a thread-per-core
//! shell that runs the executors on pinned threads joined by bounded lock-free rings.
//!
//! ## Module map
//!
//! | module | what it holds |
//! | --- | --- |
//! | [`message`] | [`Value`] / [`Values`], data [`Tuple`]s, [`Message`]s between executors, the [`Outbox`] |
//! | [`topology`] | [`TopologyBuilder`], [`Grouping`], [`Config`], [`Topology`], the task [`Plan`] and [`Placement`] |
//! | [`executor`] | the [`Spout`], [`Bolt`], [`BasicBolt`] traits and collectors; the [`Executor`] state machines |
//! | [`ring`] | the bounded lock-free SPSC [`ring`](ring::ring) joining two cores of the shell |
//! | [`shell`] | the thread-per-core shell: [`run`](shell::run) a plan on pinned cores joined by SPSC rings, [`RunReport`](shell::RunReport) metrics |
//! | [`bolts`] | stock bolts: [`IdentityBolt`](bolts::IdentityBolt), [`NullBolt`](bolts::NullBolt) |
//! | [`wordcount`] | the word-count topology behind `acker-run wordcount` |
//! | [`local`] | [`LocalShell`](local::LocalShell): a minimal single-threaded FIFO shell for tests |
//! | [`cli`] | what the command-line programs share: exit statuses ([`CliError`](cli::CliError)) and whole-number option parsing |
//!
//! The same executors run in the seeded simulator (`acker-sim`): a shell only moves
//! [`Envelope`]s from one executor's [`Outbox`] to the executor of their `dest` task, and feeds
//! ticks and the current time.
#![deny(missing_docs)]

pub mod bolts;
pub mod cli;
pub mod executor;
pub mod local;
pub mod message;
mod park;
pub mod ring;
pub mod shell;
pub mod topology;
pub mod wordcount;

#[doc(hidden)]
pub use smallvec;

pub use executor::{
    latency_histogram, task_seed, AckerExecutor, BasicBolt, BasicBoltAdapter, BasicOutputCollector,
    Bolt, BoltExecutor, BuildError, EmitError, Executor, ExecutorCounters, FailedException, Input,
    OutputCollector, Spout, SpoutExecutor, SpoutOutputCollector, TopologyContext,
};
pub use message::{
    Envelope, Message, MessageId, Notice, Outbox, StreamId, Tuple, TupleAnchors, Value, Values,
    DEFAULT_STREAM, MAX_ROOTS,
};
pub use topology::{
    default_acker_park_capacity, BoltDeclarer, BoltFactory, Config, ConfigError, Grouping,
    Placement, Plan, SpoutDeclarer, SpoutFactory, SpoutWrapper, TaskInfo, TaskKind, Topology,
    TopologyBuilder, TopologyError, ACKER_COMPONENT, DEFAULT_PENDING_CAPACITY,
};

#[cfg(test)]
mod size_tests {
    /// Messages are moved several times on their way; this guards their size against accidental
    /// growth (see the runtime section of `benches/RESULTS.md`).
    #[test]
    fn message_sizes_stay_small() {
        assert_eq!(std::mem::size_of::<crate::Value>(), 24);
        assert_eq!(std::mem::size_of::<crate::Values>(), 56);
        assert_eq!(std::mem::size_of::<crate::TupleAnchors>(), 56);
        assert_eq!(std::mem::size_of::<crate::Tuple>(), 120);
        assert!(std::mem::size_of::<crate::Envelope>() <= 136);
    }
}
