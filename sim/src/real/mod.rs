//! The reliability experiment on real components (`acker-sim experiment --real`, feature
//! `real`): the seed's topology on the runtime's thread-per-core shell, reading a private
//! `redis-server` stream and writing to a private PostgreSQL, with real crashes, each cell
//! printed beside the simulator's prediction for the same guarantee, fault, count, max spout
//! pending and message timeout.
//!
//! | module | what it holds |
//! | --- | --- |
//! | [`worker`] | the hidden `acker-sim worker` subcommand: one worker process running the topology (Redis spout → throwing bolt → PostgreSQL sink) with its in-process faults |
//! | [`driver`] | the driver: servers, per-cell state, the worker process, SIGKILL and server restarts, SQL counts, prediction, table, relations, JSON, plot |
//!
//! Faults of a cell are spread over the input as in the simulated experiment: the i-th of k
//! fires at offset `i · tuples / (k + 1)` ([`offsets`]). In-process faults fire when the
//! processing bolt first sees that number; `worker-kill`, `redis-restart` and
//! `postgres-restart` fire when the sink holds that many rows.

pub mod driver;
pub mod worker;

use std::fmt;
use std::str::FromStr;

use crate::fault::FaultKind;

/// The faults of the real experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RealFault {
    /// The processing bolt throws before its emit (the input is failed).
    BoltExceptionBeforeEmit,
    /// The processing bolt throws after its emit (the input is failed).
    BoltExceptionAfterEmit,
    /// The spout task is restarted, its in-memory state lost (the Redis group keeps its
    /// pending entries).
    SpoutCrash,
    /// The acker task is restarted empty while trees are pending.
    AckerCrash,
    /// The processing bolt task is restarted.
    BoltCrash,
    /// The worker process gets a SIGKILL from the driver and is started again.
    WorkerKill,
    /// `redis-server` is killed and started again (append-only file, `appendfsync always`).
    RedisRestart,
    /// PostgreSQL is stopped (`-m immediate`) and started again.
    PostgresRestart,
}

impl RealFault {
    /// Every kind, in the table's order.
    pub const ALL: [RealFault; 8] = [
        RealFault::BoltExceptionBeforeEmit,
        RealFault::BoltExceptionAfterEmit,
        RealFault::SpoutCrash,
        RealFault::AckerCrash,
        RealFault::BoltCrash,
        RealFault::WorkerKill,
        RealFault::RedisRestart,
        RealFault::PostgresRestart,
    ];

    /// The kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            RealFault::BoltExceptionBeforeEmit => "bolt-exception-before-emit",
            RealFault::BoltExceptionAfterEmit => "bolt-exception-after-emit",
            RealFault::SpoutCrash => "spout-crash",
            RealFault::AckerCrash => "acker-crash",
            RealFault::BoltCrash => "bolt-crash",
            RealFault::WorkerKill => "worker-kill",
            RealFault::RedisRestart => "redis-restart",
            RealFault::PostgresRestart => "postgres-restart",
        }
    }

    /// Whether the worker injects it itself (else the driver does).
    pub fn in_process(self) -> bool {
        !matches!(
            self,
            RealFault::WorkerKill | RealFault::RedisRestart | RealFault::PostgresRestart
        )
    }
}

impl fmt::Display for RealFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for RealFault {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        RealFault::ALL
            .iter()
            .copied()
            .find(|k| k.name() == s.trim())
            .ok_or_else(|| {
                format!(
                    "unknown fault `{s}` (one of none, {})",
                    RealFault::ALL.map(|k| k.name()).join(", ")
                )
            })
    }
}

/// What the simulator predicts a real fault with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PredictionModel {
    /// The simulated fault (`None`: no fault).
    pub fault: Option<FaultKind>,
    /// How the prediction is made, for the table's notes (`kafka source`, ...).
    pub note: &'static str,
}

/// The simulated counterpart of a real fault, and the source model the prediction uses.
///
/// The outage a `redis-restart` is predicted with when the cell measured none: SIGKILL, a new
/// `redis-server` replaying its append-only file and answering `PING` took 0.1 to 0.3 s on the
/// 2-core machine of `benches/RESULTS.md`. A cell predicts with its own measured restart time.
pub const REDIS_RESTART_OUTAGE_NS: u64 = 300_000_000;

/// The outage a `postgres-restart` is predicted with when the cell measured none: `pg_ctl stop
/// -m immediate` and a start with crash recovery, about 1 s for the experiment's small tables.
pub const POSTGRES_RESTART_OUTAGE_NS: u64 = 1_000_000_000;

/// The restart delay of a task restarted in place (`TaskControl::restart`): the task's own
/// thread rebuilds it at its next loop turn, so the prediction uses 1 ms, not the simulator's
/// default of a restarted worker process.
pub const TASK_RESTART_NS: u64 = 1_000_000;

/// The restart delay after a worker kill: a new `acker-sim worker` process starting and
/// connecting to both servers, about 0.3 s on the machine of `benches/RESULTS.md`.
pub const WORKER_RESTART_NS: u64 = 300_000_000;

/// Every real cell is predicted with the Redis-style source model (see
/// [`driver::prediction_base`]); the in-process faults are the simulator's faults of the same
/// name, a worker kill is a `worker-crash` of the one worker that holds the whole topology, and
/// the server restarts are a `source-outage` / `sink-outage` of
/// [`REDIS_RESTART_OUTAGE_NS`] / [`POSTGRES_RESTART_OUTAGE_NS`].
pub fn prediction_model(fault: Option<RealFault>) -> PredictionModel {
    let redis = "redis source model";
    let (fault, note) = match fault {
        None => (None, redis),
        Some(RealFault::BoltExceptionBeforeEmit) => {
            (Some(FaultKind::BoltExceptionBeforeEmit), redis)
        }
        Some(RealFault::BoltExceptionAfterEmit) => (Some(FaultKind::BoltExceptionAfterEmit), redis),
        Some(RealFault::SpoutCrash) => (Some(FaultKind::SpoutCrash), redis),
        Some(RealFault::AckerCrash) => (Some(FaultKind::AckerCrash), redis),
        Some(RealFault::BoltCrash) => (Some(FaultKind::BoltCrash), redis),
        Some(RealFault::WorkerKill) => (
            Some(FaultKind::WorkerCrash),
            "redis source model, worker-crash of the one worker",
        ),
        Some(RealFault::RedisRestart) => (
            Some(FaultKind::SourceOutage),
            "redis source model, source-outage",
        ),
        Some(RealFault::PostgresRestart) => (
            Some(FaultKind::SinkOutage),
            "redis source model, sink-outage",
        ),
    };
    PredictionModel { fault, note }
}

/// The offsets at which the `count` faults of a cell fire: `i · tuples / (count + 1)` for
/// `i = 1..=count`, as the simulated experiment spreads them.
pub fn offsets(tuples: u64, count: u32) -> Vec<u64> {
    (1..=count as u64)
        .map(|i| i * tuples / (count as u64 + 1))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_spread_like_the_simulator() {
        assert_eq!(offsets(10_000, 1), vec![5_000]);
        assert_eq!(offsets(10_000, 2), vec![3_333, 6_666]);
        assert_eq!(
            offsets(100_000, 5),
            vec![16_666, 33_333, 50_000, 66_666, 83_333]
        );
        assert!(offsets(10, 0).is_empty());
    }

    #[test]
    fn fault_names_round_trip() {
        for k in RealFault::ALL {
            assert_eq!(k.name().parse::<RealFault>(), Ok(k));
        }
        assert!("worker-crash".parse::<RealFault>().is_err());
    }
}
