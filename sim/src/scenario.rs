//! What one simulation runs: the delivery guarantee, the input, the topology's sizes and timing,
//! the network, and the fault schedule.

use crate::fault::{self, ExpandContext, Fault, FaultError, FaultSpec, TargetCounts};
use crate::rng;
use crate::source::{RedisOptions, SourceModel};
use std::fmt;
use std::str::FromStr;

/// The delivery guarantee a run is configured for, as in the seed experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Guarantee {
    /// Zero ackers: every spout tuple is acked as soon as it is emitted.
    AtMostOnce,
    /// Ackers on, a reliable spout that replays on fail.
    AtLeastOnce,
    /// At-least-once plus idempotent, transactional state at the sink, keyed by source position.
    ExactlyOnce,
}

impl Guarantee {
    /// The three guarantees, in the experiment's order.
    pub const ALL: [Guarantee; 3] = [
        Guarantee::AtMostOnce,
        Guarantee::AtLeastOnce,
        Guarantee::ExactlyOnce,
    ];

    /// The kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            Guarantee::AtMostOnce => "at-most-once",
            Guarantee::AtLeastOnce => "at-least-once",
            Guarantee::ExactlyOnce => "exactly-once",
        }
    }
}

impl fmt::Display for Guarantee {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Guarantee {
    type Err = ScenarioError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Guarantee::ALL
            .iter()
            .copied()
            .find(|g| g.name() == s.trim())
            .ok_or_else(|| ScenarioError::UnknownGuarantee(s.to_string()))
    }
}

/// A test-only bug planted in the system under test, to check that `search` finds and shrinks a
/// real violation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlantedBug {
    /// An acker wrapper that reports the first tree it fails as completed (it drops the fail and
    /// acks instead): the spout commits a tuple that never reached the sink.
    AckerAcksFirstFailure,
    /// Restarted executors reuse their first incarnation's seed, so a restarted spout hands out
    /// the same root ids again and mistakes notices for its predecessor's trees for its own.
    RestartReusesSeed,
    /// The exactly-once sink skips its de-duplication check: a replayed write is applied twice
    /// (the sink's own applied-set still says "applied once"; the oracle reads the result).
    SinkWithoutDedup,
    /// The runtime's spout executor drops a timed-out tree without `fail`
    /// (`acker_core::planted`; needs the feature `planted-bugs`).
    SpoutIgnoresTimeout,
    /// The runtime's acker executor drops the acks of one root in 16 (needs `planted-bugs`).
    AckerDropsAck,
    /// A bolt's ack sends every root's XOR to the input's first root (acker-core's
    /// `InputAnchors::ack`; needs `planted-bugs`).
    AckToWrongRoot,
    /// The spout's init XOR over several copies uses `|=` for `^=` (acker-core's
    /// `SpoutPending::emit`; needs `planted-bugs`).
    InitOrOverCopies,
    /// acker-core's spout pending loses an entry when a removal's backward shift wraps past the
    /// end of the table (needs `planted-bugs`).
    PendingWrapLosesEntry,
}

impl PlantedBug {
    /// Every planted bug, in a fixed order.
    pub const ALL: [PlantedBug; 8] = [
        PlantedBug::AckerAcksFirstFailure,
        PlantedBug::RestartReusesSeed,
        PlantedBug::SinkWithoutDedup,
        PlantedBug::SpoutIgnoresTimeout,
        PlantedBug::AckerDropsAck,
        PlantedBug::AckToWrongRoot,
        PlantedBug::InitOrOverCopies,
        PlantedBug::PendingWrapLosesEntry,
    ];

    /// Whether the bug lives in acker-core or the runtime (selected through
    /// `acker_core::planted`, which only a build with the feature `planted-bugs` has), rather
    /// than in the simulator's own components.
    pub fn in_core(self) -> bool {
        !matches!(
            self,
            PlantedBug::AckerAcksFirstFailure
                | PlantedBug::RestartReusesSeed
                | PlantedBug::SinkWithoutDedup
        )
    }

    /// Whether this build can plant it: the simulator's own always, acker-core's and the
    /// runtime's only when built with the feature `planted-bugs`.
    pub fn available(self) -> bool {
        !self.in_core() || cfg!(feature = "planted-bugs")
    }

    /// Whether the bug can fire in a run under `guarantee`: the simulator's sink without
    /// de-duplication only exactly-once (the only sink that de-duplicates), every other one only
    /// with acking (at-most-once runs no acker, tracks no tree and sends no notice, so an
    /// acker's, a spout pending's, an anchor's or a restarted spout's bug has nothing to act on).
    /// `search --guarantee G` refuses a bug that cannot fire under G
    /// ([`ScenarioError::PlantCannotFire`]: no seed could find it); `acker-sim run` warns on
    /// stderr and runs (a search's replay command for such a seed must still run); a search
    /// that turns through the three guarantees plants it in every seed and it fires in those
    /// whose guarantee allows it.
    pub fn can_fire_under(self, guarantee: Guarantee) -> bool {
        match self {
            PlantedBug::SinkWithoutDedup => guarantee == Guarantee::ExactlyOnce,
            _ => guarantee != Guarantee::AtMostOnce,
        }
    }

    /// The message for planting a bug this build cannot plant.
    pub fn needs_feature(self) -> String {
        format!(
            "planted bug `{}` lives in acker-core or the runtime: it needs acker-sim built with \
             `--features planted-bugs`",
            self.name()
        )
    }

    /// acker-core's plant for this bug, if it is one of acker-core's or the runtime's.
    #[cfg(feature = "planted-bugs")]
    pub fn core_plant(self) -> Option<acker_core::planted::Plant> {
        use acker_core::planted::Plant;
        match self {
            PlantedBug::SpoutIgnoresTimeout => Some(Plant::SpoutIgnoresTimeout),
            PlantedBug::AckerDropsAck => Some(Plant::AckerDropsAck),
            PlantedBug::AckToWrongRoot => Some(Plant::AckToWrongRoot),
            PlantedBug::InitOrOverCopies => Some(Plant::InitOrOverCopies),
            PlantedBug::PendingWrapLosesEntry => Some(Plant::PendingWrapLosesEntry),
            _ => None,
        }
    }

    /// The kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            PlantedBug::AckerAcksFirstFailure => "acker-acks-first-failure",
            PlantedBug::RestartReusesSeed => "restart-reuses-seed",
            PlantedBug::SinkWithoutDedup => "sink-without-dedup",
            PlantedBug::SpoutIgnoresTimeout => "spout-ignores-timeout",
            PlantedBug::AckerDropsAck => "acker-drops-ack",
            PlantedBug::AckToWrongRoot => "ack-to-wrong-root",
            PlantedBug::InitOrOverCopies => "init-or-over-copies",
            PlantedBug::PendingWrapLosesEntry => "pending-wrap-loses-entry",
        }
    }
}

impl FromStr for PlantedBug {
    type Err = ScenarioError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PlantedBug::ALL
            .into_iter()
            .find(|b| b.name() == s.trim())
            .ok_or_else(|| ScenarioError::UnknownBug(s.to_string()))
            .and_then(|b| {
                if b.available() {
                    Ok(b)
                } else {
                    Err(ScenarioError::PlantNeedsFeature(b))
                }
            })
    }
}

/// A bad scenario.
#[derive(Clone, Debug, PartialEq)]
pub enum ScenarioError {
    /// `tuples` is 0.
    ZeroTuples,
    /// `tuples` or `max_spout_pending` is above what one run can hold in memory
    /// ([`MAX_TUPLES`], [`MAX_SPOUT_PENDING`]).
    TooLarge(&'static str),
    /// The tick interval is below 1 µs (the run would be all ticks).
    TickTooShort,
    /// `max_spout_pending` is 0.
    ZeroMaxSpoutPending,
    /// The message timeout or tick interval is 0.
    ZeroTime(&'static str),
    /// A parallelism (bolts, ackers) is 0 or too large.
    BadParallelism(&'static str),
    /// The link latency range is empty (`min > max`).
    BadLatency,
    /// Not a guarantee name.
    UnknownGuarantee(String),
    /// Not a planted bug name.
    UnknownBug(String),
    /// A planted bug of acker-core or the runtime, in a build without the feature
    /// `planted-bugs`.
    PlantNeedsFeature(PlantedBug),
    /// A planted bug that cannot fire under the run's guarantee
    /// ([`PlantedBug::can_fire_under`]): the run would pass whether or not the bug is there.
    PlantCannotFire(PlantedBug, Guarantee),
    /// A fault spec or schedule error.
    Fault(FaultError),
    /// A per-message processing time is not shorter than the message timeout: no tuple could
    /// ever be acked in time, and every replay would queue more work.
    CostTooLong(&'static str),
    /// A duration is longer than [`MAX_DURATION_NS`](crate::units::MAX_DURATION_NS) (1,000,000
    /// s): the option and the value in ns.
    DurationTooLong(&'static str, u64),
    /// A link latency (the range's maximum, or the latency inside one worker) is longer than the
    /// message timeout: the option, the latency and the timeout in ns. Every tree crossing such
    /// a link times out and is replayed while its messages are still on the way, so the
    /// messages in flight grow as max spout pending × latency / timeout (about 170 bytes each:
    /// `--latency 10000s..10000s` with the default 30 s timeout held 254 MB at max spout pending
    /// 1000, about 250 KB a pending slot, and 100000 s exhausted the memory); with the latency
    /// at most the timeout they stay within a few times max spout pending (measured at the
    /// bound, `--latency 30s..30s --max-spout-pending 100000 --tuples 100000`: 188 MB peak
    /// against 50 MB at the default latency, under 2 KB a pending slot).
    LatencyAboveTimeout(&'static str, u64, u64),
    /// Every tree would time out before its `Completed` notice could reach the spout: the
    /// topology's shortest tree round trip ([`Scenario::min_round_trip_ns`], the link latencies
    /// along spout → bolt → sink → acker → spout) is at least the longest a spout keeps a tree
    /// pending ([`Scenario::longest_pending_ns`], 2T + one tick), so every tree would be replayed
    /// without end (before 2026-12-03 such runs grew their memory until the process died).
    /// Carries the round trip, the timeout and the tick, in ns.
    RoundTripAboveTimeout(u64, u64, u64),
    /// `max_replays` is 0 (a run could not replay even one lost tree).
    ZeroReplays,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScenarioError::ZeroTuples => f.write_str("--tuples must be at least 1"),
            ScenarioError::TooLarge(what) => write!(f, "{what} is too large for one run"),
            ScenarioError::TickTooShort => f.write_str("--tick must be at least 1us"),
            ScenarioError::CostTooLong(what) => {
                write!(
                    f,
                    "{what} must be shorter than the message timeout (--timeout)"
                )
            }
            ScenarioError::ZeroMaxSpoutPending => {
                f.write_str("--max-spout-pending must be at least 1")
            }
            ScenarioError::ZeroTime(what) => write!(f, "{what} must be positive"),
            ScenarioError::BadParallelism(what) => {
                write!(f, "{what} must be between 1 and 1000")
            }
            ScenarioError::BadLatency => {
                f.write_str("link latency: the minimum must not exceed the maximum")
            }
            ScenarioError::UnknownGuarantee(g) => write!(
                f,
                "unknown guarantee `{g}`; known: at-most-once, at-least-once, exactly-once"
            ),
            ScenarioError::UnknownBug(b) => {
                // The names this build takes (as `search --planted-bug list` prints them), then
                // the ones that need the feature.
                let names = |available: bool| {
                    PlantedBug::ALL
                        .iter()
                        .filter(|b| b.available() == available)
                        .map(|b| b.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                write!(
                    f,
                    "unknown planted bug `{b}`; this build takes: {}",
                    names(true)
                )?;
                let others = names(false);
                if others.is_empty() {
                    Ok(())
                } else {
                    write!(f, " (with `--features planted-bugs` also: {others})")
                }
            }
            ScenarioError::PlantNeedsFeature(b) => f.write_str(&b.needs_feature()),
            ScenarioError::PlantCannotFire(b, g) => write!(
                f,
                "planted bug `{}` cannot fire under {g}: {}",
                b.name(),
                if *b == PlantedBug::SinkWithoutDedup {
                    "only the exactly-once sink de-duplicates (use --guarantee exactly-once)"
                } else {
                    "at-most-once runs no acker and tracks no tree (use --guarantee \
                     at-least-once or exactly-once)"
                }
            ),
            ScenarioError::Fault(e) => e.fmt(f),
            ScenarioError::DurationTooLong(what, ns) => {
                f.write_str(&crate::units::check_max_duration(what, *ns).unwrap_err())
            }
            ScenarioError::RoundTripAboveTimeout(rt, timeout, tick) => write!(
                f,
                "the message timeout --timeout {} (with --tick {}) is too short for this \
                 topology: a tree crosses four links (spout to bolt, bolt to sink, sink to acker, \
                 acker to spout), so its round trip takes at least {} (4 x the shortest link \
                 latency, --latency's minimum, or --local-latency with --one-worker), while the \
                 spout fails a tree pending for 2 x --timeout + --tick ({}) at the latest: every \
                 tree would time out and be replayed without end. Give a --timeout above {} \
                 ((round trip - --tick) / 2; several times the round trip to see few timeouts), or \
                 shorter link latencies",
                crate::units::format_ns(*timeout),
                crate::units::format_ns(*tick),
                crate::units::format_ns(*rt),
                crate::units::format_ns(timeout.saturating_mul(2).saturating_add(*tick)),
                crate::units::format_ns(rt.saturating_sub(*tick).div_ceil(2)),
            ),
            ScenarioError::ZeroReplays => f.write_str("--max-replays must be at least 1"),
            ScenarioError::LatencyAboveTimeout(what, ns, timeout) => write!(
                f,
                "{}",
                crate::engine::latency_above_timeout(what, *ns, *timeout)
            ),
        }
    }
}

impl std::error::Error for ScenarioError {}

impl From<FaultError> for ScenarioError {
    fn from(e: FaultError) -> Self {
        ScenarioError::Fault(e)
    }
}

/// Most tuples one run takes (the sink keeps a few bytes per tuple).
pub const MAX_TUPLES: u64 = 100_000_000;

/// Most roots a spout may have pending in one run (the runtime preallocates its pending set).
pub const MAX_SPOUT_PENDING: usize = 1_000_000;

/// Workers of the simulated cluster. As in the seed experiment, spout, bolts and acker each run
/// in their own worker (JVM process), so a crash of one does not touch the others.
pub mod workers {
    /// The spout's worker.
    pub const SPOUT: u16 = 0;
    /// The processing bolts' worker.
    pub const BOLTS: u16 = 1;
    /// The sink bolt's worker.
    pub const SINK: u16 = 2;
    /// The ackers' worker.
    pub const ACKERS: u16 = 3;
    /// Number of workers.
    pub const COUNT: u16 = 4;
}

/// One simulation's full description; with the same values (seed included) a run is replayed
/// exactly. Every duration is at most [`MAX_DURATION_NS`](crate::units::MAX_DURATION_NS)
/// (1,000,000 s; [`ScenarioError::DurationTooLong`]), the link latencies at most the message
/// timeout ([`ScenarioError::LatencyAboveTimeout`]) and the tree's shortest round trip below 2T +
/// one tick ([`ScenarioError::RoundTripAboveTimeout`]), checked by [`Scenario::validate`].
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// The run's seed: every random choice comes from it.
    pub seed: u64,
    /// The delivery guarantee.
    pub guarantee: Guarantee,
    /// Unique sequential numbers in the source (offsets `0..tuples`).
    pub tuples: u64,
    /// Max spout pending (`topology.max.spout.pending`; unused at-most-once, where nothing is
    /// pending).
    pub max_spout_pending: usize,
    /// Message timeout T in ns (`topology.message.timeout.secs`).
    pub message_timeout_ns: u64,
    /// Interval of the ticks fed to spouts and ackers, in ns.
    pub tick_interval_ns: u64,
    /// Acker tasks at-least-once and exactly-once (at-most-once has 0).
    pub ackers: usize,
    /// Processing bolt tasks (shuffle grouping from the spout).
    pub bolts: usize,
    /// Latency between workers: uniform in `latency_min_ns..=latency_max_ns`, drawn per message;
    /// FIFO on each link.
    pub latency_min_ns: u64,
    /// See `latency_min_ns`.
    pub latency_max_ns: u64,
    /// Latency between two tasks of the same worker.
    pub local_latency_ns: u64,
    /// Time the spout spends per `next_tuple` and per notice, in ns.
    pub spout_ns: u64,
    /// Time a bolt spends per input, in ns.
    pub bolt_ns: u64,
    /// Time an acker spends per message, in ns.
    pub acker_ns: u64,
    /// How long a crashed task or worker stays down before it is rebuilt, in ns.
    pub restart_delay_ns: u64,
    /// How long a partition lasts before it heals, in ns.
    pub partition_ns: u64,
    /// How long the server is down in a source or sink outage
    /// ([`FaultKind::SourceOutage`](crate::FaultKind::SourceOutage),
    /// [`FaultKind::SinkOutage`](crate::FaultKind::SinkOutage)), in simulated ns. The spout and
    /// sink notice it is back at their next reconnect attempt (the runtime's backoff: 50 ms
    /// doubling to 2 s, see [`reconnect_ns`]), so the outage they see is a little longer.
    pub outage_ns: u64,
    /// Which source the spout reads: [`SourceModel::Kafka`] (the default, the seed experiment)
    /// or [`SourceModel::Redis`] (the real-components experiment; see [`crate::source`]).
    pub source_model: SourceModel,
    /// The Redis model's read batch and retry limit (unused by the Kafka model).
    pub redis: RedisOptions,
    /// Place every task (spout, bolts, sink, ackers) in one worker, as the real experiment's
    /// worker process holds the whole topology: a worker crash then crashes every task at once
    /// (the prediction of a real `worker-kill`), and every message takes the local latency.
    /// Message loss and partitions strike only between workers, so with one worker a
    /// `message-loss` fault fires but drops nothing and a `partition` has no valid target.
    /// Default `false`: the seed experiment's four workers ([`workers`]).
    pub one_worker: bool,
    /// The concrete fault schedule.
    pub faults: Vec<Fault>,
    /// A test-only planted bug.
    pub planted_bug: Option<PlantedBug>,
    /// Stop the run here even if it has not finished (a liveness violation); `None`: derived
    /// from the schedule (see [`Scenario::time_limit_ns`]).
    pub time_limit_ns: Option<u64>,
    /// Most replays (spout emits beyond `tuples`), and failed or timed-out trees, the run may
    /// have before it stops with
    /// [`RunError::TooManyReplays`](crate::RunError::TooManyReplays); `None`: `tuples`, at
    /// least [`MIN_DEFAULT_REPLAYS`](crate::engine::MIN_DEFAULT_REPLAYS) (see
    /// [`SimOptions::max_replays`](crate::SimOptions::max_replays)). Not part of the trace.
    pub max_replays: Option<u64>,
}

impl Scenario {
    /// Defaults: 1000 tuples, max spout pending 1000, T = 30 s, ticks every second, 1 acker,
    /// 1 processing bolt, 50–150 µs between workers, 1 µs inside one, spout 500 ns per call, bolts
    /// 2 µs per input, acker 200 ns per message, restarts after 1 s, partitions of 2 s, outages of
    /// 500 ms, the Kafka source model, no fault.
    pub fn new(seed: u64, guarantee: Guarantee) -> Self {
        Self {
            seed,
            guarantee,
            tuples: 1000,
            max_spout_pending: 1000,
            message_timeout_ns: 30_000_000_000,
            tick_interval_ns: 1_000_000_000,
            ackers: 1,
            bolts: 1,
            latency_min_ns: 50_000,
            latency_max_ns: 150_000,
            local_latency_ns: 1_000,
            spout_ns: 500,
            bolt_ns: 2_000,
            acker_ns: 200,
            restart_delay_ns: 1_000_000_000,
            partition_ns: 2_000_000_000,
            outage_ns: 500_000_000,
            source_model: SourceModel::Kafka,
            redis: RedisOptions::default(),
            one_worker: false,
            faults: Vec::new(),
            planted_bug: None,
            time_limit_ns: None,
            max_replays: None,
        }
    }

    /// The shortest time a tree can take from its emit to its `Completed` notice at the spout,
    /// in ns: the sum of the link latencies along its critical path, spout → processing bolt →
    /// sink → acker → spout (the acks of the bolt and the sink go to the acker; the last one
    /// decides), each link at its shortest (`latency_min_ns` between workers, `local_latency_ns`
    /// with [`one_worker`](Self::one_worker)). Service times do not add to it: a task sends a
    /// step's messages at the step's start. 0 at-most-once (no acker, no timeout).
    pub fn min_round_trip_ns(&self) -> u64 {
        if self.num_ackers() == 0 {
            return 0;
        }
        let hop = if self.one_worker {
            self.local_latency_ns
        } else {
            self.latency_min_ns
        };
        hop.saturating_mul(4)
    }

    /// The longest a spout keeps a tree pending before its own timeout fails it, in ns: it fails
    /// a tree at its first tick at least two timeout periods (T) past the one of its emit, so
    /// less than 2T + one tick after the emit (acker-core's `SpoutPending::tick`).
    pub fn longest_pending_ns(&self) -> u64 {
        self.message_timeout_ns
            .saturating_mul(2)
            .saturating_add(self.tick_interval_ns)
    }

    /// Acker tasks actually run: 0 at-most-once.
    pub fn num_ackers(&self) -> usize {
        match self.guarantee {
            Guarantee::AtMostOnce => 0,
            _ => self.ackers,
        }
    }

    /// What fault targets exist in this topology.
    pub fn target_counts(&self) -> TargetCounts {
        TargetCounts {
            spouts: 1,
            bolts: self.bolts as u16,
            ackers: self.num_ackers() as u16,
            workers: if self.one_worker { 1 } else { workers::COUNT },
        }
    }

    /// [`ScenarioError::PlantCannotFire`] when the planted bug (if any) cannot fire under this
    /// scenario's guarantee ([`PlantedBug::can_fire_under`]). Not part of
    /// [`validate`](Self::validate): a search turning through the three guarantees plants the
    /// bug in seeds where it cannot fire as well.
    ///
    /// # Errors
    /// As above.
    pub fn check_plant_can_fire(&self) -> Result<(), ScenarioError> {
        match self.planted_bug {
            Some(b) if !b.can_fire_under(self.guarantee) => {
                Err(ScenarioError::PlantCannotFire(b, self.guarantee))
            }
            _ => Ok(()),
        }
    }

    /// Checks the values.
    ///
    /// # Errors
    /// The first [`ScenarioError`] found, including bad fault targets and offsets.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        if self.tuples == 0 {
            return Err(ScenarioError::ZeroTuples);
        }
        if self.tuples > MAX_TUPLES {
            return Err(ScenarioError::TooLarge("--tuples (at most 100000000)"));
        }
        if self.max_spout_pending == 0 {
            return Err(ScenarioError::ZeroMaxSpoutPending);
        }
        if self.max_spout_pending > MAX_SPOUT_PENDING {
            return Err(ScenarioError::TooLarge(
                "--max-spout-pending (at most 1000000)",
            ));
        }
        for (what, ns) in [
            ("the message timeout (--timeout)", self.message_timeout_ns),
            ("the tick interval (--tick)", self.tick_interval_ns),
            ("the link latency (--latency)", self.latency_max_ns),
            (
                "the latency inside one worker (--local-latency)",
                self.local_latency_ns,
            ),
            ("--spout-ns", self.spout_ns),
            ("--bolt-ns", self.bolt_ns),
            ("--acker-ns", self.acker_ns),
            ("the restart delay (--restart-delay)", self.restart_delay_ns),
            ("the partition duration (--partition)", self.partition_ns),
            ("the outage duration (--outage)", self.outage_ns),
            (
                "the time limit (--time-limit)",
                self.time_limit_ns.unwrap_or(0),
            ),
        ] {
            if ns > crate::units::MAX_DURATION_NS {
                return Err(ScenarioError::DurationTooLong(what, ns));
            }
        }
        for (what, ns) in [
            ("the link latency (--latency)", self.latency_max_ns),
            (
                "the latency inside one worker (--local-latency)",
                self.local_latency_ns,
            ),
        ] {
            if self.message_timeout_ns > 0 && ns > self.message_timeout_ns {
                return Err(ScenarioError::LatencyAboveTimeout(
                    what,
                    ns,
                    self.message_timeout_ns,
                ));
            }
        }
        if self.message_timeout_ns == 0 {
            return Err(ScenarioError::ZeroTime("the message timeout (--timeout)"));
        }
        if self.max_replays == Some(0) {
            return Err(ScenarioError::ZeroReplays);
        }
        if self.min_round_trip_ns() >= self.longest_pending_ns() {
            return Err(ScenarioError::RoundTripAboveTimeout(
                self.min_round_trip_ns(),
                self.message_timeout_ns,
                self.tick_interval_ns,
            ));
        }
        if self.tick_interval_ns == 0 {
            return Err(ScenarioError::ZeroTime("the tick interval (--tick)"));
        }
        if self.time_limit_ns == Some(0) {
            return Err(ScenarioError::ZeroTime("the time limit (--time-limit)"));
        }
        if self.outage_ns == 0 {
            return Err(ScenarioError::ZeroTime("the outage duration (--outage)"));
        }
        if self.redis.read_batch == 0 {
            return Err(ScenarioError::ZeroTime("the Redis read batch"));
        }
        if self.tick_interval_ns < 1_000 {
            return Err(ScenarioError::TickTooShort);
        }
        if !(1..=1000).contains(&self.bolts) {
            return Err(ScenarioError::BadParallelism("--bolts"));
        }
        if !(1..=1000).contains(&self.ackers) {
            return Err(ScenarioError::BadParallelism("--ackers"));
        }
        if self.latency_min_ns > self.latency_max_ns {
            return Err(ScenarioError::BadLatency);
        }
        for (cost, what) in [
            (self.spout_ns, "--spout-ns"),
            (self.bolt_ns, "--bolt-ns"),
            (self.acker_ns, "--acker-ns"),
        ] {
            if cost >= self.message_timeout_ns {
                return Err(ScenarioError::CostTooLong(what));
            }
        }
        fault::check_schedule(&self.faults, &self.target_counts(), self.tuples)?;
        Ok(())
    }

    /// Expands fault specs into this scenario's concrete schedule (replacing it), drawing rate
    /// times and targets from the seed's fault stream. Rate-per-second faults are drawn over
    /// `0..fault_until_ns`.
    ///
    /// # Errors
    /// [`ScenarioError::Fault`] for a bad target or offset.
    pub fn set_fault_specs(
        &mut self,
        specs: &[FaultSpec],
        fault_until_ns: u64,
    ) -> Result<(), ScenarioError> {
        let ctx = ExpandContext {
            tuples: self.tuples,
            repeat_gap_ns: self.message_timeout_ns.saturating_mul(3),
            fault_until_ns,
            targets: self.target_counts(),
        };
        let mut r = rng::stream(self.seed, rng_streams::FAULTS);
        self.faults = fault::expand(specs, &ctx, &mut r)?;
        Ok(())
    }

    /// The simulated time by which the run must have finished (see
    /// [`crate::engine::time_limit_ns`], with `tuples` as the input's size). Liveness: once
    /// faults stop, every input is decided within this bound.
    pub fn time_limit_ns(&self) -> u64 {
        crate::engine::time_limit_ns(
            &self.sim_options(),
            self.message_timeout_ns,
            self.max_spout_pending,
        )
    }

    /// The same scenario reading from `model` (a setter for [`Scenario::source_model`]).
    pub fn with_source_model(mut self, model: SourceModel) -> Self {
        self.source_model = model;
        self
    }

    /// The generic simulation options of this scenario (see
    /// [`crate::components::sim_options`]).
    pub fn sim_options(&self) -> crate::engine::SimOptions {
        crate::components::sim_options(self)
    }
}

/// When a client that lost its server at time 0 is connected again, for a server down
/// `outage_ns`: the first reconnect attempt at or after `outage_ns`, with the runtime connectors'
/// backoff (Redis spout and PostgreSQL sink alike: attempts 50 ms after the failure, then after
/// waits doubling up to 2 s: at 50, 150, 350, 750, 1550, 3150, 5150, ... ms). A 500 ms outage is
/// seen as 750 ms. The first failure is taken at the moment the server goes down (the spout
/// polls every few ms and the sink commits every 20 ms, so the real first failure comes a few ms
/// later at most).
pub fn reconnect_ns(outage_ns: u64) -> u64 {
    let mut at = 0u64;
    let mut wait = 50_000_000u64;
    loop {
        at = at.saturating_add(wait);
        if at >= outage_ns || at == u64::MAX {
            return at;
        }
        wait = (wait * 2).min(2_000_000_000);
    }
}

/// Fixed stream numbers of the run's random streams.
pub mod rng_streams {
    /// Fault expansion (rate times, targets).
    pub const FAULTS: u64 = 1;
    /// Link latencies.
    pub const LINKS: u64 = 2;
    /// Swarm mode's choice of fault kinds.
    pub const SWARM: u64 = 3;
    /// The topology seed of executors (their root and edge ids, shuffle starts).
    pub const EXECUTORS: u64 = 4;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_rejects_bad_values() {
        let mut s = Scenario::new(1, Guarantee::AtLeastOnce);
        assert_eq!(s.validate(), Ok(()));
        s.tuples = 0;
        assert_eq!(s.validate(), Err(ScenarioError::ZeroTuples));
        let mut s = Scenario::new(1, Guarantee::AtLeastOnce);
        s.max_spout_pending = 0;
        assert_eq!(s.validate(), Err(ScenarioError::ZeroMaxSpoutPending));
        let mut s = Scenario::new(1, Guarantee::AtLeastOnce);
        s.faults = fault::parse_specs("bolt-crash@1s:3")
            .map(|v| {
                v.iter()
                    .map(|f| Fault {
                        trigger: f.trigger.unwrap(),
                        kind: f.kind,
                        target: f.target.unwrap().0,
                        peer: 0,
                    })
                    .collect()
            })
            .unwrap();
        let err = s.validate().unwrap_err();
        assert!(matches!(err, ScenarioError::Fault(_)));
        assert_eq!(
            err.to_string(),
            "bad fault target in `bolt-crash@1s:3`: target 3, but the topology has 1 bolt-crash \
             target(s) (0..=0)"
        );
        let mut s = Scenario::new(1, Guarantee::AtLeastOnce);
        s.tuples = MAX_TUPLES + 1;
        assert!(matches!(s.validate(), Err(ScenarioError::TooLarge(_))));
        let mut s = Scenario::new(1, Guarantee::AtLeastOnce);
        s.tick_interval_ns = 10;
        assert_eq!(s.validate(), Err(ScenarioError::TickTooShort));
        let mut s = Scenario::new(1, Guarantee::AtLeastOnce);
        s.time_limit_ns = Some(0);
        assert_eq!(
            s.validate(),
            Err(ScenarioError::ZeroTime("the time limit (--time-limit)"))
        );
        s.time_limit_ns = Some(1);
        assert_eq!(s.validate(), Ok(()));
        let mut s = Scenario::new(1, Guarantee::AtLeastOnce);
        s.bolt_ns = s.message_timeout_ns;
        assert_eq!(s.validate(), Err(ScenarioError::CostTooLong("--bolt-ns")));
        assert_eq!(
            s.validate().unwrap_err().to_string(),
            "--bolt-ns must be shorter than the message timeout (--timeout)"
        );
        s.bolt_ns = s.message_timeout_ns - 1;
        assert_eq!(s.validate(), Ok(()));
        assert!("sometimes-once".parse::<Guarantee>().is_err());
        assert_eq!(
            "exactly-once".parse::<Guarantee>(),
            Ok(Guarantee::ExactlyOnce)
        );
    }
}
