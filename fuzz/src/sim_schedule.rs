//! The `sim_schedule` target: the fuzz input becomes an `acker-sim` scenario (seed, guarantee,
//! topology sizes, timing) and a concrete fault schedule; the simulator runs it and every one of
//! its oracles must hold (nothing lost at-least-once and exactly-once, nothing duplicated
//! at-most-once and exactly-once, at most one final callback per spout emit, no acker table over
//! capacity, every emit decided within 2T + one tick, the run finished within its time limit).
//! The same scenario is run twice and must give the same outcome and trace hash (determinism).
//!
//! Settings stay in the range the simulator's liveness bound ([`Scenario::time_limit_ns`]: four
//! timeouts plus 100 µs a tuple, plus per-fault slack) is written for: link latencies up to
//! 200 µs (the simulator's defaults are 50–150 µs), T from 100 ms to about 1.1 s, ticks at least
//! every T/2, restarts within T, partitions within 2T. With links of several milliseconds and a
//! small max spout pending the run legitimately needs longer than that bound (each tuple costs a
//! few link round trips), which the bound does not count; see `fuzz/README.md`. Faults: up to 12, any
//! kind, any valid target, triggered at a simulated time within the first few timeouts or at a
//! source offset.

use acker_sim::search::replay_command;
use acker_sim::{Fault, FaultKind, Guarantee, Outcome, Scenario, Sim, Trigger};
use arbitrary::Arbitrary;

/// Most faults one input schedules.
pub const MAX_FAULTS: usize = 12;

/// One fault as the fuzzer picks it.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub struct FuzzFault {
    /// `FaultKind::ALL[kind % FaultKind::ALL.len()]` (10 kinds).
    pub kind: u8,
    /// When it fires.
    pub trigger: FuzzTrigger,
    /// Target among the candidates of its kind, `% candidates`.
    pub target: u8,
    /// Second worker of a partition (made different from the first).
    pub peer: u8,
}

/// When a fuzzed fault fires.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum FuzzTrigger {
    /// At `at % 4096` / 1024 message timeouts into the run (0 to 4 T).
    Time(u16),
    /// When the spout first reads offset `offset % tuples`.
    Offset(u16),
}

/// A whole `sim_schedule` input.
#[derive(Arbitrary, Clone, Debug)]
pub struct SimInput {
    /// The run's seed.
    pub seed: u64,
    /// `Guarantee::ALL[guarantee % 3]`.
    pub guarantee: u8,
    /// Tuples: `1 + tuples % 300`.
    pub tuples: u16,
    /// Max spout pending: `1 + max_spout_pending % 64`.
    pub max_spout_pending: u8,
    /// Acker tasks: `1 + ackers % 3`.
    pub ackers: u8,
    /// Processing bolt tasks: `1 + bolts % 3`.
    pub bolts: u8,
    /// Message timeout T: `(100 + 5 * (timeout % 200))` ms.
    pub timeout: u8,
    /// Tick interval: `T / (2 + tick % 15)`.
    pub tick: u8,
    /// Link latency: minimum `lat_min % 101` µs, maximum that plus `lat_span % 101` µs.
    pub lat_min: u8,
    /// See `lat_min`.
    pub lat_span: u8,
    /// Restart delay: `T * (1 + restart % 16) / 16`.
    pub restart: u8,
    /// Partition length: `T * (1 + partition % 32) / 16`.
    pub partition: u8,
    /// The fault schedule.
    pub faults: Vec<FuzzFault>,
}

impl SimInput {
    /// The scenario this input describes (always valid).
    pub fn scenario(&self) -> Scenario {
        let guarantee = Guarantee::ALL[usize::from(self.guarantee % 3)];
        let mut sc = Scenario::new(self.seed, guarantee);
        let t_ns = (100 + 5 * u64::from(self.timeout % 200)) * 1_000_000;
        sc.tuples = 1 + u64::from(self.tuples % 300);
        sc.max_spout_pending = 1 + usize::from(self.max_spout_pending % 64);
        sc.ackers = 1 + usize::from(self.ackers % 3);
        sc.bolts = 1 + usize::from(self.bolts % 3);
        sc.message_timeout_ns = t_ns;
        sc.tick_interval_ns = t_ns / (2 + u64::from(self.tick % 15));
        sc.latency_min_ns = u64::from(self.lat_min % 101) * 1_000;
        sc.latency_max_ns = sc.latency_min_ns + u64::from(self.lat_span % 101) * 1_000;
        sc.restart_delay_ns = t_ns * (1 + u64::from(self.restart % 16)) / 16;
        sc.partition_ns = t_ns * (1 + u64::from(self.partition % 32)) / 16;
        let counts = sc.target_counts();
        sc.faults = self
            .faults
            .iter()
            .take(MAX_FAULTS)
            .map(|f| {
                let kind = FaultKind::ALL[usize::from(f.kind) % FaultKind::ALL.len()];
                let n = match kind {
                    FaultKind::SpoutCrash => counts.spouts,
                    FaultKind::BoltExceptionBeforeEmit
                    | FaultKind::BoltExceptionAfterEmit
                    | FaultKind::BoltCrash => counts.bolts,
                    FaultKind::AckerCrash => counts.ackers.max(1),
                    FaultKind::WorkerCrash | FaultKind::Partition => counts.workers,
                    FaultKind::MessageLoss | FaultKind::SourceOutage | FaultKind::SinkOutage => 1,
                }
                .max(1);
                let target = u16::from(f.target) % n;
                let peer = if kind == FaultKind::Partition && n > 1 {
                    (target + 1 + u16::from(f.peer) % (n - 1)) % n
                } else {
                    0
                };
                let trigger = match f.trigger {
                    FuzzTrigger::Time(at) => Trigger::AtNs(t_ns * u64::from(at % 4096) / 1024),
                    FuzzTrigger::Offset(o) => Trigger::AtOffset(u64::from(o) % sc.tuples),
                };
                Fault {
                    trigger,
                    kind,
                    target,
                    peer,
                }
            })
            .collect();
        sc.faults.sort();
        sc
    }
}

/// Runs one `sim_schedule` input and returns the outcome.
///
/// # Panics
/// When the simulator refuses the (valid) scenario, an oracle is violated, or a second run of the
/// same scenario differs; the message gives the violations and the `acker-sim` command that
/// replays the run.
pub fn sim_schedule(input: &SimInput) -> Outcome {
    let sc = input.scenario();
    let replay = replay_command(&sc);
    let first = match Sim::run(sc.clone(), None) {
        Ok(o) => o,
        Err(e) => panic!("simulator refused a valid scenario: {e}\nreplay: {replay}"),
    };
    if !first.ok() {
        let v: Vec<String> = first.violations.iter().map(|v| v.to_string()).collect();
        panic!(
            "oracle violated: {}\nreplay: {replay}\nfired: {:?}",
            v.join("; "),
            first.fired
        );
    }
    let second = match Sim::run(sc, None) {
        Ok(o) => o,
        Err(e) => panic!("simulator refused the scenario the second time: {e}\nreplay: {replay}"),
    };
    assert_eq!(
        first, second,
        "two runs of one scenario differ\nreplay: {replay}"
    );
    first
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(guarantee: u8, faults: Vec<FuzzFault>) -> SimInput {
        SimInput {
            seed: 7,
            guarantee,
            tuples: 149,
            max_spout_pending: 20,
            ackers: 1,
            bolts: 1,
            timeout: 45,
            tick: 3,
            lat_min: 4,
            lat_span: 8,
            restart: 3,
            partition: 5,
            faults,
        }
    }

    #[test]
    fn every_guarantee_without_faults_delivers_everything_once() {
        for g in 0..3 {
            let o = sim_schedule(&input(g, Vec::new()));
            assert_eq!(
                (o.input, o.distinct, o.lost, o.duplicates),
                (150, 150, 0, 0)
            );
        }
    }

    #[test]
    fn faults_of_every_kind_keep_the_oracles() {
        let faults: Vec<FuzzFault> = (0..8u8)
            .map(|k| FuzzFault {
                kind: k,
                trigger: if k % 2 == 0 {
                    FuzzTrigger::Offset(u16::from(k) * 17)
                } else {
                    FuzzTrigger::Time(u16::from(k) * 300)
                },
                target: k,
                peer: k / 2,
            })
            .collect();
        for g in 0..3 {
            let o = sim_schedule(&input(g, faults.clone()));
            assert_eq!(o.input, 150);
            assert!(!o.fired.is_empty(), "no fault fired");
            if g > 0 {
                assert_eq!(o.lost, 0, "{o:?}");
            }
            if g != 1 {
                assert_eq!(o.duplicates, 0, "{o:?}");
            }
        }
    }
}
