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
//! | [`api`] | what a user implements and calls: the [`Spout`], [`Bolt`], [`BasicBolt`] traits, the output collectors, [`Input`], [`TopologyContext`], [`EmitError`], [`ExecutorCounters`] |
//! | [`executor`] | the machinery: the [`Executor`] state machines (spout, bolt, acker) and the router; builds them from a [`Plan`] |
//! | [`ring`] | the bounded lock-free SPSC [`ring`](ring::ring) joining two cores of the shell |
//! | [`shell`] | the thread-per-core shell: [`run`](shell::run) a plan on pinned cores joined by SPSC rings, [`RunReport`](shell::RunReport) metrics, [`TaskControl`](shell::TaskControl) to kill and restart one task while it runs |
//! | [`bolts`] | stock bolts: [`IdentityBolt`](bolts::IdentityBolt), [`NullBolt`](bolts::NullBolt), [`ThrowingBolt`](bolts::ThrowingBolt) (throws before or after its emit) |
//! | [`wordcount`] | the word-count topology behind `acker-run wordcount` |
//! | [`local`] | [`LocalShell`](local::LocalShell): a minimal single-threaded FIFO shell for tests |
//! | [`connectors`] | the Redis Streams spout, the PostgreSQL sink, the connector word count and private local servers (features `redis`, `postgres`, on by default) |
//!
//! The same executors run in the seeded simulator (`acker-sim`): a shell only moves
//! [`Envelope`]s from one executor's [`Outbox`] to the executor of their `dest` task, and feeds
//! ticks and the current time.
//!
//! ## Bounded resources when their owner misbehaves
//!
//! Every per-task resource with a bound, and how it comes back when whoever should give it back
//! does not (tests under `runtime/tests/`):
//!
//! | resource | bound | misbehaviour | how it recovers | tests |
//! | --- | --- | --- | --- | --- |
//! | spout pending set | max spout pending ([`DEFAULT_PENDING_CAPACITY`] unset) | a tree never completes (a bolt holds or drops its input, a message is lost) | the tree times out T to 2T after its emit (or last reset) at a spout tick: user `fail`, slot free. With timeouts off it never does: [`Config::warnings`] says so | `misbehaving::thousands_of_held_inputs_and_a_full_pending_set_recover_by_timeout`, `scenarios::lost_trees_time_out_between_t_and_2t`, `scenarios::timeouts_off_keep_trees_pending` |
//! | acker table | acker capacity | trees never complete; orphan acks | entries expire 2T to 3T after their last insertion at an acker tick (never with message timeouts off); late acks, fails and resets of a tree the acker failed a short while before ([`Plan::recently_failed_capacity`] roots) are dropped instead of making orphans (`orphans_avoided`) | `acker_backpressure::expiry_on_a_tick_lets_parked_messages_in`, `acker_backpressure::failed_trees_leave_no_orphans` |
//! | acker park queue | park capacity | the table stays full | parked messages are retried after every decision and every tick (expiry frees slots); when the queue is full a message is dropped and counted (`dropped_full`), and its tree times out at the spout and is replayed | `acker_backpressure::a_full_park_queue_drops_and_counts_exactly_the_overflow`, `shell::small_acker_table_parks_and_every_tree_completes` |
//! | shell rings | ring capacity, per ordered pair of threads | the consuming thread is slow (a bolt sleeping or computing) | the producer stages what does not fit and spouts stop while staging is above the back-pressure threshold; everything moves again as the consumer drains. A user call that never returns blocks its thread for good (no preemption) | `shell::minimal_rings_and_slow_bolt_finish_with_every_tuple_acked` |
//! | shell staging | back-pressure threshold `max(ring capacity, batch)` for the spouts; bolts' emits are never refused, so staging holds at most what is in flight (max spout pending × tree size) | as for rings | as for rings | as for rings |
//! | bolt inputs | none: no table; each [`Input`] carries its own anchoring state | a bolt holds inputs for ever, drops them unacked, or acks them after their trees timed out | nothing to recover: a held input costs only its own memory and blocks nothing; a dropped one is counted (`inputs_dropped_unacked`) and its tree times out and is replayed; one held past twice the message timeout is refused when acked or failed late ([`EmitError::InputExpired`], nothing sent, `inputs_expired`) | `misbehaving::*` |
#![deny(missing_docs)]

/// A planted-bug hook (see `acker_core::planted`, feature `planted-bugs`): `planted!(Plant => statements)`
/// runs the statements when that plant is selected, `planted!(Plant)` says whether it is. Without
/// the feature the first is nothing and the second is `false`: no cost in a normal build.
macro_rules! planted {
    ($plant:ident) => {{
        #[cfg(feature = "planted-bugs")]
        let on = acker_core::planted::active(acker_core::planted::Plant::$plant);
        #[cfg(not(feature = "planted-bugs"))]
        let on = false;
        on
    }};
    ($plant:ident => $($then:tt)*) => {
        #[cfg(feature = "planted-bugs")]
        if acker_core::planted::active(acker_core::planted::Plant::$plant) {
            $($then)*
        }
    };
}

pub mod api;
pub mod bolts;
#[doc(hidden)]
pub mod cli;
pub mod connectors;
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

pub use api::{
    BasicBolt, BasicBoltAdapter, BasicOutputCollector, Bolt, EmitError, ExecutorCounters,
    FailedException, Input, OutputCollector, Spout, SpoutOutputCollector, TopologyContext,
};
pub use executor::{
    latency_histogram, task_seed, AckerExecutor, BoltExecutor, BuildError, Executor, SpoutExecutor,
};
pub use message::{
    Envelope, Message, MessageId, Notice, Outbox, StreamId, Tuple, TupleAnchors, Value, Values,
    DEFAULT_STREAM, MAX_ROOTS,
};
pub use topology::{
    default_acker_park_capacity, BoltDeclarer, BoltFactory, Config, ConfigError, Grouping,
    Placement, Plan, SpoutDeclarer, SpoutFactory, SpoutWrapper, TaskInfo, TaskKind, Topology,
    TopologyBuilder, TopologyError, ACKER_COMPONENT, DEFAULT_PENDING_CAPACITY,
    DEFAULT_RECENTLY_FAILED_ROOTS, MAX_ACKER_CAPACITY_ROOTS, MAX_PENDING_CAPACITY,
    MIN_DEFAULT_RECENTLY_FAILED_ROOTS,
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
