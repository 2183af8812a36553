//! Many seeds, swarm mode, and shrinking a violation to a minimal fault schedule.
//!
//! [`shrink`] takes a violating scenario and removes faults one at a time while the same class of
//! violation persists (until no single removal keeps it), then moves each remaining fault's
//! trigger as early as it can (binary search on its time or offset) while the violation persists.
//! The result has the fewest faults this greedy search finds, each at its earliest violating
//! trigger, and is replayed by [`replay_command`].

use crate::components::Sim;
use crate::engine::{Outcome, RunError, Simulation};
use crate::fault::{self, Fault, FaultSpec, Trigger};
use crate::rng;
use crate::scenario::{rng_streams, Guarantee, Scenario, ScenarioError};
use crate::units::format_ns;

/// The command line that replays `sc` exactly (seed, guarantee, every non-default setting and
/// the concrete fault schedule).
pub fn replay_command(sc: &Scenario) -> String {
    let d = Scenario::new(sc.seed, sc.guarantee);
    let mut s = format!(
        "acker-sim run --seed {} --guarantee {}",
        sc.seed, sc.guarantee
    );
    let mut num = |name: &str, v: u64, dv: u64| {
        if v != dv {
            s.push_str(&format!(" --{name} {v}"));
        }
    };
    num("tuples", sc.tuples, d.tuples);
    num(
        "max-spout-pending",
        sc.max_spout_pending as u64,
        d.max_spout_pending as u64,
    );
    if sc.guarantee != Guarantee::AtMostOnce {
        // At-most-once runs no acker task, and `run` refuses --ackers with it.
        num("ackers", sc.ackers as u64, d.ackers as u64);
    }
    num("bolts", sc.bolts as u64, d.bolts as u64);
    let mut dur = |name: &str, v: u64, dv: u64| {
        if v != dv {
            s.push_str(&format!(" --{name} {}", format_ns(v)));
        }
    };
    dur("timeout", sc.message_timeout_ns, d.message_timeout_ns);
    dur("tick", sc.tick_interval_ns, d.tick_interval_ns);
    dur("local-latency", sc.local_latency_ns, d.local_latency_ns);
    dur("spout-ns", sc.spout_ns, d.spout_ns);
    dur("bolt-ns", sc.bolt_ns, d.bolt_ns);
    dur("acker-ns", sc.acker_ns, d.acker_ns);
    dur("restart-delay", sc.restart_delay_ns, d.restart_delay_ns);
    dur("partition", sc.partition_ns, d.partition_ns);
    dur("outage", sc.outage_ns, d.outage_ns);
    if (sc.latency_min_ns, sc.latency_max_ns) != (d.latency_min_ns, d.latency_max_ns) {
        s.push_str(&format!(
            " --latency {}..{}",
            format_ns(sc.latency_min_ns),
            format_ns(sc.latency_max_ns)
        ));
    }
    if sc.source_model != d.source_model {
        s.push_str(&format!(" --source-model {}", sc.source_model));
    }
    if sc.one_worker {
        s.push_str(" --one-worker");
    }
    if let Some(t) = sc.time_limit_ns {
        s.push_str(&format!(" --time-limit {}", format_ns(t)));
    }
    if let Some(b) = sc.planted_bug {
        s.push_str(&format!(" --planted-bug {}", b.name()));
    }
    if !sc.faults.is_empty() {
        s.push_str(&format!(
            " --faults '{}'",
            fault::format_schedule(&sc.faults)
        ));
    }
    s
}

/// The result of shrinking.
#[derive(Clone, Debug)]
pub struct Shrunk {
    /// The minimal violating scenario found.
    pub scenario: Scenario,
    /// Its outcome.
    pub outcome: Outcome,
    /// Simulations run while shrinking.
    pub runs: u64,
}

/// Shrinks a scenario whose run violated an oracle of class `class` (see
/// [`crate::oracle::Violation::class`]) to a minimal fault schedule that still violates it.
/// Returns `None` if the scenario does not violate it in the first place.
pub fn shrink(sc: &Scenario, class: &str) -> Option<Shrunk> {
    let s = shrink_schedule(&sc.faults, class, |faults| {
        let mut trial = sc.clone();
        trial.faults = faults.to_vec();
        Sim::run(trial, None).ok()
    })?;
    let mut scenario = sc.clone();
    scenario.faults = s.faults;
    Some(Shrunk {
        scenario,
        outcome: s.outcome,
        runs: s.runs,
    })
}

/// A shrunk fault schedule of a user simulation.
#[derive(Clone, Debug)]
pub struct ShrunkSchedule {
    /// The minimal violating schedule found (replay it with the same seed).
    pub faults: Vec<Fault>,
    /// Its outcome.
    pub outcome: Outcome,
    /// Simulations run while shrinking.
    pub runs: u64,
}

/// Shrinks `faults`, whose run (`run(schedule)`, `None` if it could not run) violated an oracle
/// of class `class`, to a minimal schedule that still violates it: faults are removed one at a
/// time while the violation stays (to a fixpoint), then each remaining fault's trigger moves as
/// early as it can (binary search on its time or offset) while the violation stays. The result
/// has the fewest faults this greedy search finds, each at its earliest violating trigger.
/// `None` if `faults` does not violate `class` in the first place.
pub fn shrink_schedule(
    faults: &[Fault],
    class: &str,
    mut run: impl FnMut(&[Fault]) -> Option<Outcome>,
) -> Option<ShrunkSchedule> {
    let mut runs = 0u64;
    let mut violates = |f: &[Fault]| {
        runs += 1;
        run(f).is_some_and(|o| o.violations.iter().any(|v| v.class() == class))
    };
    if !violates(faults) {
        return None;
    }
    let mut cur = faults.to_vec();
    // 1. Fewest faults: drop one at a time while the violation stays (repeat to a fixpoint).
    loop {
        let mut changed = false;
        let mut i = cur.len();
        while i > 0 {
            i -= 1;
            let mut trial = cur.clone();
            trial.remove(i);
            if violates(&trial) {
                cur = trial;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    // 2. Earliest time: binary search each fault's trigger towards 0.
    for i in 0..cur.len() {
        let (mut lo, mut hi) = (0u64, trigger_value(cur[i].trigger));
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let mut trial = cur.clone();
            trial[i] = with_trigger(trial[i], mid);
            trial.sort();
            if violates(&trial) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        cur[i] = with_trigger(cur[i], hi);
    }
    cur.sort();
    let outcome = run(&cur)?;
    runs += 1;
    if !outcome.violations.iter().any(|v| v.class() == class) {
        return None;
    }
    Some(ShrunkSchedule {
        faults: cur,
        outcome,
        runs,
    })
}

/// Replays a user simulation exactly: the simulation `make(seed)` builds, with its fault schedule
/// replaced by `schedule`.
///
/// # Errors
/// As `make` and [`Simulation::run`].
pub fn replay(
    make: impl FnOnce(u64) -> Result<Simulation, RunError>,
    seed: u64,
    schedule: &[Fault],
) -> Result<Outcome, RunError> {
    make(seed)?.with_schedule(schedule.to_vec()).run()
}

/// A violation a [`search`] found.
#[derive(Clone, Debug)]
pub struct Found {
    /// The violating seed.
    pub seed: u64,
    /// Its fault schedule.
    pub faults: Vec<Fault>,
    /// Its outcome.
    pub outcome: Outcome,
    /// The schedule shrunk on the class of its first violation (`None` if the violation did not
    /// reproduce on replay, which would be a determinism bug).
    pub shrunk: Option<ShrunkSchedule>,
}

/// Runs the simulation `make(seed)` builds (each with its own fresh user state and its own
/// fault schedule, e.g. from [`Simulation::set_swarm_faults`]) for every seed of `seeds` in
/// order, and stops at the first violating one, which it shrinks (see [`shrink_schedule`]) by
/// replaying `make(seed)` with smaller schedules. `Ok(None)`: every seed held.
///
/// # Errors
/// The first error `make` or a run returns.
pub fn search(
    seeds: impl IntoIterator<Item = u64>,
    make: impl Fn(u64) -> Result<Simulation, RunError>,
) -> Result<Option<Found>, RunError> {
    for seed in seeds {
        let sim = make(seed)?;
        let faults = sim.options().faults.clone();
        let outcome = sim.run()?;
        let Some(first) = outcome.violations.first() else {
            continue;
        };
        let class = first.class();
        let shrunk = shrink_schedule(&faults, class, |f| replay(&make, seed, f).ok());
        return Ok(Some(Found {
            seed,
            faults,
            outcome,
            shrunk,
        }));
    }
    Ok(None)
}

fn trigger_value(t: Trigger) -> u64 {
    match t {
        Trigger::AtNs(v) | Trigger::AtOffset(v) => v,
    }
}

fn with_trigger(f: Fault, v: u64) -> Fault {
    Fault {
        trigger: match f.trigger {
            Trigger::AtNs(_) => Trigger::AtNs(v),
            Trigger::AtOffset(_) => Trigger::AtOffset(v),
        },
        ..f
    }
}

/// How a search builds the scenario of each seed.
#[derive(Clone, Debug)]
pub struct SearchPlan {
    /// Sizes, timing and planted bug of every run (its seed, guarantee and faults are replaced).
    pub template: Scenario,
    /// The guarantee of every seed; `None`: the three in turn ([`guarantee_for_seed`]).
    pub guarantee: Option<Guarantee>,
    /// Swarm mode: each seed draws its own random subset of fault kinds with random weights.
    pub swarm: bool,
    /// The fault specs of every seed without swarm mode.
    pub specs: Vec<FaultSpec>,
    /// Swarm mode's base rate, in faults per thousand tuples.
    pub rate_per_kilo_tuple: f64,
    /// Rate-per-second faults are drawn over `0..fault_until_ns`.
    pub fault_until_ns: u64,
}

impl SearchPlan {
    /// The scenario of `seed`: the template with this seed, its guarantee, and its fault
    /// schedule expanded from the seed.
    ///
    /// # Errors
    /// A [`ScenarioError`] for a bad template or fault spec.
    pub fn scenario(&self, seed: u64) -> Result<Scenario, ScenarioError> {
        let mut sc = self.template.clone();
        sc.seed = seed;
        sc.guarantee = self.guarantee.unwrap_or_else(|| guarantee_for_seed(seed));
        let specs = if self.swarm {
            fault::swarm_specs(
                &mut rng::stream(seed, rng_streams::SWARM),
                self.rate_per_kilo_tuple,
            )
        } else {
            self.specs.clone()
        };
        sc.set_fault_specs(&specs, self.fault_until_ns)?;
        sc.validate()?;
        Ok(sc)
    }
}

/// The guarantee seed `seed` runs under when a search does not fix one: the three in turn.
pub fn guarantee_for_seed(seed: u64) -> Guarantee {
    Guarantee::ALL[(seed % 3) as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_command_lists_non_defaults_and_faults() {
        let mut sc = Scenario::new(42, Guarantee::ExactlyOnce);
        sc.tuples = 500;
        sc.restart_delay_ns = 5_000;
        sc.faults = vec![Fault {
            trigger: Trigger::AtOffset(7),
            kind: crate::FaultKind::SpoutCrash,
            target: 0,
            peer: 0,
        }];
        assert_eq!(
            replay_command(&sc),
            "acker-sim run --seed 42 --guarantee exactly-once --tuples 500 --restart-delay 5us --faults 'spout-crash@#7:0'"
        );
    }

    /// The source model, one worker and the outage length change what a run does: a replay
    /// without them does not reproduce it (found by a user: `search --source-model redis`
    /// printed replays that passed).
    #[test]
    fn replay_command_keeps_the_source_model_one_worker_and_outage() {
        let mut sc =
            Scenario::new(28, Guarantee::AtLeastOnce).with_source_model(crate::SourceModel::Redis);
        sc.one_worker = true;
        sc.outage_ns = 3_000_000_000;
        assert_eq!(
            replay_command(&sc),
            "acker-sim run --seed 28 --guarantee at-least-once --outage 3s --source-model redis --one-worker"
        );
    }
}
