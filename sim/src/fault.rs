//! The fault model: kinds, when a fault fires, specs given on the command line, their expansion
//! into a concrete schedule from the run's seed, and swarm mode.
//!
//! A concrete [`Fault`] is one injected failure: a [`FaultKind`], a [`Trigger`] (a simulated time,
//! or the moment the spout first reads a given source offset) and a target (which task, worker or
//! worker pair). A run's schedule is a list of them; replaying a run needs only its seed and its
//! schedule, which is what every replay command prints.
//!
//! Spec syntax (`--faults`, comma-separated), all parts after the kind optional:
//!
//! | spec | meaning |
//! | --- | --- |
//! | `acker-crash` | one fault, at the middle of the input (offset `tuples / 2`) |
//! | `acker-crash*3` | three faults, at offsets `tuples/4`, `2·tuples/4`, `3·tuples/4` |
//! | `acker-crash@2s` | one fault at simulated time 2 s |
//! | `acker-crash@2s*3` | three faults, 2 s apart by `3 × message timeout` |
//! | `acker-crash@#5000` | when the spout first reads offset 5000 |
//! | `message-loss~0.5/s` | a Poisson process of 0.5 faults per simulated second (until `--fault-until`) |
//! | `bolt-crash~2/kt` | 2 faults per thousand offsets read, on average |
//! | `bolt-crash@1s:1` | targets task 1 of its kind (bolt index 1); `partition@1s:0-2` cuts workers 0 and 2 |
//!
//! A rate must be a finite number ≥ 0; counts must be ≥ 1. A time needs a unit (`ns`, `us`,
//! `ms`, `s`): a bare number other than 0 (`@5000`) is refused, as every duration option is.
//!
//! `source-outage` and `sink-outage` (the predictions of the real experiment's `redis-restart`
//! and `postgres-restart`) take the server down for the scenario's outage duration
//! (`--outage`, default 500 ms of simulated time); like `message-loss` they take no target.
//! They are in [`FaultKind::ALL`] (so in swarm mode) but not in the simulated experiment's
//! matrix [`FaultKind::EXPERIMENT`].

use crate::rng::{self, SimRng};
use crate::units::{format_ns, parse_duration_ns, require_unit};
use acker_runtime::cli::list_items;
use std::fmt;
use std::str::FromStr;

/// What fails. Names on the command line are the kebab-case forms shown by `Display`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FaultKind {
    /// The processing bolt throws on its next input before emitting: it fails the input
    /// (Storm's `FailedException` in a `BaseBasicBolt`).
    BoltExceptionBeforeEmit,
    /// The processing bolt throws on its next input after emitting its output: it fails the input.
    BoltExceptionAfterEmit,
    /// The spout task crashes (its pending set is lost) and restarts after the restart delay,
    /// resuming from the source's last committed offset.
    SpoutCrash,
    /// An acker task crashes (every pending tree it held is lost) and restarts empty.
    AckerCrash,
    /// A processing bolt task crashes (its queued and open inputs are lost) and restarts.
    BoltCrash,
    /// A whole worker crashes: every executor on it is lost and restarted.
    WorkerCrash,
    /// The next message sent on any link is dropped.
    MessageLoss,
    /// The links between two workers drop everything for the partition duration, then heal.
    Partition,
    /// The source server is down for the outage duration (the prediction of a Redis restart):
    /// nothing can be read or acknowledged; acks issued meanwhile are held by the spout and
    /// applied when it is back (see [`crate::source`]). No target (only `:0`).
    SourceOutage,
    /// The sink's database is down for the outage duration (the prediction of a PostgreSQL
    /// restart): the sink bolt cannot commit, holds its inputs unacked and writes and acks them
    /// when it is back; trees may time out meanwhile and be replayed (see
    /// [`crate::components`]). No target (only `:0`).
    SinkOutage,
}

impl FaultKind {
    /// Every kind, in a fixed order.
    pub const ALL: [FaultKind; 10] = [
        FaultKind::BoltExceptionBeforeEmit,
        FaultKind::BoltExceptionAfterEmit,
        FaultKind::SpoutCrash,
        FaultKind::AckerCrash,
        FaultKind::BoltCrash,
        FaultKind::WorkerCrash,
        FaultKind::MessageLoss,
        FaultKind::Partition,
        FaultKind::SourceOutage,
        FaultKind::SinkOutage,
    ];

    /// The kinds of the reliability experiment (after "none"), in its column order.
    pub const EXPERIMENT: [FaultKind; 6] = [
        FaultKind::BoltExceptionBeforeEmit,
        FaultKind::BoltExceptionAfterEmit,
        FaultKind::SpoutCrash,
        FaultKind::AckerCrash,
        FaultKind::BoltCrash,
        FaultKind::MessageLoss,
    ];

    /// The kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::BoltExceptionBeforeEmit => "bolt-exception-before-emit",
            FaultKind::BoltExceptionAfterEmit => "bolt-exception-after-emit",
            FaultKind::SpoutCrash => "spout-crash",
            FaultKind::AckerCrash => "acker-crash",
            FaultKind::BoltCrash => "bolt-crash",
            FaultKind::WorkerCrash => "worker-crash",
            FaultKind::MessageLoss => "message-loss",
            FaultKind::Partition => "partition",
            FaultKind::SourceOutage => "source-outage",
            FaultKind::SinkOutage => "sink-outage",
        }
    }

    /// Whether it takes no target (message loss and the outages: only `:0` is accepted).
    pub fn untargeted(self) -> bool {
        matches!(
            self,
            FaultKind::MessageLoss | FaultKind::SourceOutage | FaultKind::SinkOutage
        )
    }

    /// A fixed small code for the trace encoding.
    pub fn code(self) -> u64 {
        Self::ALL.iter().position(|&k| k == self).unwrap_or(0) as u64
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An error in a fault spec or schedule.
#[derive(Clone, Debug, PartialEq)]
pub enum FaultError {
    /// The kind is not one of [`FaultKind::ALL`].
    UnknownKind(String),
    /// A rate is negative, NaN or infinite.
    BadRate(String),
    /// A count is 0 or not a number.
    BadCount(String),
    /// A trigger is not a duration or `#offset`.
    BadTrigger(String),
    /// A trigger time is a bare number other than 0 (`bolt-crash@5000`: seconds or
    /// nanoseconds?): the message of [`crate::units::require_unit`].
    NoUnit(String),
    /// A target is not a number (or `a-b` for a partition), or names no such task or worker.
    /// The text after `bad fault target `: the fault in backticks, then why, e.g.
    /// ``in `bolt-crash@1s:99`: target 99, but the topology has 1 processing bolt task(s)
    /// (targets 0..=0)``.
    BadTarget(String),
    /// The specs expand to more than [`MAX_FAULTS`] faults.
    TooMany,
    /// The comma-separated list has an empty item (`,`, `bolt-crash,`): the message of
    /// [`acker_runtime::cli::list_items`].
    EmptyItem(String),
    /// `none` listed with other faults (`none,bolt-crash`): the whole list as given.
    NoneWithFaults(String),
    /// A trigger time later than [`MAX_DURATION_NS`](crate::units::MAX_DURATION_NS)
    /// (1000000s): the trigger as given, or the fault of a schedule.
    TimeTooLate(String),
    /// An offset trigger at or past the end of the input.
    OffsetPastInput {
        /// The offset given.
        offset: u64,
        /// The number of tuples of the input.
        tuples: u64,
    },
}

impl fmt::Display for FaultError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultError::UnknownKind(k) => {
                write!(f, "unknown fault `{k}`; known faults: ")?;
                let names: Vec<&str> = FaultKind::ALL.iter().map(|k| k.name()).collect();
                f.write_str(&names.join(", "))
            }
            FaultError::BadRate(s) => write!(
                f,
                "bad fault rate `{s}`: expected a finite number >= 0, optionally /s, /ms or /kt"
            ),
            FaultError::BadCount(s) => write!(
                f,
                "bad fault count `{s}`: expected an integer from 1 to {MAX_FAULTS}"
            ),
            FaultError::BadTrigger(s) => write!(
                f,
                "bad fault time `{s}`: expected a duration (2s, 500ms, 30us, 100ns) or #offset"
            ),
            FaultError::NoUnit(s) => write!(f, "bad fault time: {s}"),
            FaultError::BadTarget(s) => write!(f, "bad fault target {s}"),
            FaultError::EmptyItem(s) => write!(f, "bad fault list: {s}"),
            FaultError::NoneWithFaults(s) => write!(
                f,
                "`none` means no fault and cannot be listed with faults in `{s}` (give `none` \
                 alone, or the faults without it)"
            ),
            FaultError::TooMany => write!(
                f,
                "the fault specs expand to more than {MAX_FAULTS} faults; lower the rates"
            ),
            FaultError::TimeTooLate(s) => write!(
                f,
                "bad fault time `{s}`: later than the latest fault time taken, {} (about 11.6 \
                 days of simulated time)",
                crate::units::MAX_DURATION_TEXT
            ),
            FaultError::OffsetPastInput { offset, tuples } => write!(
                f,
                "fault at offset #{offset} is past the end of the input ({tuples} tuples)"
            ),
        }
    }
}

impl std::error::Error for FaultError {}

impl FromStr for FaultKind {
    type Err = FaultError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FaultKind::ALL
            .iter()
            .copied()
            .find(|k| k.name() == s.trim())
            .ok_or_else(|| FaultError::UnknownKind(s.trim().to_string()))
    }
}

/// When a fault fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Trigger {
    /// At this simulated time (ns).
    AtNs(u64),
    /// Right after the spout's step in which it first reads this source offset.
    AtOffset(u64),
}

impl fmt::Display for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Trigger::AtNs(t) => f.write_str(&format_ns(*t)),
            Trigger::AtOffset(o) => write!(f, "#{o}"),
        }
    }
}

impl FromStr for Trigger {
    type Err = FaultError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(o) = s.strip_prefix('#') {
            o.parse()
                .map(Trigger::AtOffset)
                .map_err(|_| FaultError::BadTrigger(s.to_string()))
        } else {
            // A bare number other than 0 is refused, as every duration option does.
            require_unit(s).map_err(FaultError::NoUnit)?;
            match parse_duration_ns(s) {
                Ok(t) if t > crate::units::MAX_DURATION_NS => {
                    Err(FaultError::TimeTooLate(s.to_string()))
                }
                Ok(t) => Ok(Trigger::AtNs(t)),
                Err(_) => Err(FaultError::BadTrigger(s.to_string())),
            }
        }
    }
}

/// One concrete injected fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Fault {
    /// When it fires.
    pub trigger: Trigger,
    /// What fails.
    pub kind: FaultKind,
    /// Which one: the index among the tasks of its kind (spout, processing bolt or acker), the
    /// worker index for a worker crash or the first worker of a partition; 0 for message loss.
    pub target: u16,
    /// The second worker of a partition; 0 otherwise.
    pub peer: u16,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.kind, self.trigger)?;
        match self.kind {
            k if k.untargeted() => Ok(()),
            FaultKind::Partition => write!(f, ":{}-{}", self.target, self.peer),
            _ => write!(f, ":{}", self.target),
        }
    }
}

/// Prints a schedule in the `--faults` syntax (concrete faults only), e.g.
/// `acker-crash@#500:0,message-loss@2ms`; empty for no fault.
pub fn format_schedule(faults: &[Fault]) -> String {
    faults
        .iter()
        .map(|f| f.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// The unit of a fault rate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RateUnit {
    /// Faults per simulated second, over `0..fault_until`.
    PerSecond,
    /// Faults per thousand source offsets read, over the whole input.
    PerKiloTuple,
}

/// One item of `--faults`, before expansion.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultSpec {
    /// What fails.
    pub kind: FaultKind,
    /// When the first instance fires (`None`: spread over the input, or drawn at a rate).
    pub trigger: Option<Trigger>,
    /// How many scheduled instances.
    pub count: u32,
    /// A rate instead of a schedule.
    pub rate: Option<(f64, RateUnit)>,
    /// A fixed target (`None`: drawn from the seed).
    pub target: Option<(u16, u16)>,
}

impl FromStr for FaultSpec {
    type Err = FaultError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let (rest, target) = match s.split_once(':') {
            Some((r, t)) => {
                let bad = || {
                    FaultError::BadTarget(format!(
                        "in `{s}`: `{t}` is not a target (a task or worker index 0..=65535, or \
                         a-b for the two workers of a partition)"
                    ))
                };
                let pair = match t.split_once('-') {
                    Some((a, b)) => (
                        a.trim().parse().map_err(|_| bad())?,
                        b.trim().parse().map_err(|_| bad())?,
                    ),
                    None => (t.trim().parse().map_err(|_| bad())?, 0),
                };
                (r, Some(pair))
            }
            None => (s, None),
        };
        let (rest, rate) = match rest.split_once('~') {
            Some((r, rate)) => (r, Some(parse_rate(rate)?)),
            None => (rest, None),
        };
        let (rest, count) = match rest.split_once('*') {
            Some((r, c)) => {
                let n: u32 = c
                    .trim()
                    .parse()
                    .map_err(|_| FaultError::BadCount(c.to_string()))?;
                if n == 0 || n as usize > MAX_FAULTS {
                    return Err(FaultError::BadCount(c.to_string()));
                }
                (r, n)
            }
            None => (rest, 1),
        };
        let (kind, trigger) = match rest.split_once('@') {
            Some((k, t)) => (k, Some(t.trim().parse::<Trigger>()?)),
            None => (rest, None),
        };
        Ok(FaultSpec {
            kind: kind.parse()?,
            trigger,
            count,
            rate,
            target,
        })
    }
}

fn parse_rate(s: &str) -> Result<(f64, RateUnit), FaultError> {
    let bad = || FaultError::BadRate(s.to_string());
    let (num, unit, scale) = if let Some(n) = s.strip_suffix("/s") {
        (n, RateUnit::PerSecond, 1.0)
    } else if let Some(n) = s.strip_suffix("/ms") {
        (n, RateUnit::PerSecond, 1000.0)
    } else if let Some(n) = s.strip_suffix("/kt") {
        (n, RateUnit::PerKiloTuple, 1.0)
    } else {
        (s, RateUnit::PerSecond, 1.0)
    };
    let v: f64 = num.trim().parse().map_err(|_| bad())?;
    if !v.is_finite() || v < 0.0 {
        return Err(bad());
    }
    Ok((v * scale, unit))
}

/// Parses a comma-separated `--faults` list (empty text or `none` gives no spec).
///
/// # Errors
/// [`FaultError::EmptyItem`] for a list with an empty item (`,`, `bolt-crash,`),
/// [`FaultError::NoneWithFaults`] for `none` beside other items, else the first bad item's
/// [`FaultError`].
pub fn parse_specs(text: &str) -> Result<Vec<FaultSpec>, FaultError> {
    let items = list_items(text).map_err(FaultError::EmptyItem)?;
    check_none_alone(&items, text)?;
    items
        .into_iter()
        .filter(|s| *s != "none")
        .map(str::parse)
        .collect()
}

/// [`FaultError::NoneWithFaults`] when `items`, the items of the list `text`, hold `none` beside
/// other items (`none,bolt-crash`: before, `none` was skipped and the faults ran).
///
/// # Errors
/// As above.
pub fn check_none_alone(items: &[&str], text: &str) -> Result<(), FaultError> {
    if items.len() > 1 && items.contains(&"none") {
        return Err(FaultError::NoneWithFaults(text.trim().to_string()));
    }
    Ok(())
}

/// Most faults one schedule may hold.
pub const MAX_FAULTS: usize = 1_000_000;

/// How many candidates each fault kind can target in a topology.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TargetCounts {
    /// Spout tasks.
    pub spouts: u16,
    /// Processing bolt tasks (the bolts that may throw or crash).
    pub bolts: u16,
    /// Acker tasks (0 in at-most-once).
    pub ackers: u16,
    /// Workers.
    pub workers: u16,
}

impl TargetCounts {
    fn of(&self, kind: FaultKind) -> u16 {
        match kind {
            FaultKind::SpoutCrash => self.spouts,
            FaultKind::BoltExceptionBeforeEmit
            | FaultKind::BoltExceptionAfterEmit
            | FaultKind::BoltCrash => self.bolts,
            FaultKind::AckerCrash => self.ackers,
            FaultKind::WorkerCrash | FaultKind::Partition => self.workers,
            FaultKind::MessageLoss | FaultKind::SourceOutage | FaultKind::SinkOutage => 1,
        }
    }
}

/// What a schedule is expanded against.
#[derive(Clone, Copy, Debug)]
pub struct ExpandContext {
    /// Tuples of the input.
    pub tuples: u64,
    /// Gap between repeated time-scheduled instances (ns).
    pub repeat_gap_ns: u64,
    /// Rate-drawn faults per second are drawn over `0..fault_until_ns`.
    pub fault_until_ns: u64,
    /// Candidate counts per kind.
    pub targets: TargetCounts,
}

/// Checks a concrete schedule against a topology's targets and an input of `tuples` emits.
///
/// # Errors
/// [`FaultError::BadTarget`] naming the fault, the target and the valid range;
/// [`FaultError::OffsetPastInput`] for an offset trigger at or past the input;
/// [`FaultError::TimeTooLate`] for a time past [`MAX_DURATION_NS`](crate::units::MAX_DURATION_NS).
pub fn check_schedule(
    faults: &[Fault],
    counts: &TargetCounts,
    tuples: u64,
) -> Result<(), FaultError> {
    for f in faults {
        let n = match f.kind {
            // An acker crash with 0 ackers is a no-op, whatever its target.
            FaultKind::AckerCrash => counts.ackers.max(1),
            k => counts.of(k),
        };
        let bad = f.target >= n
            || (f.kind == FaultKind::Partition && (f.peer >= n || f.peer == f.target));
        if bad {
            let why = if f.kind == FaultKind::Partition {
                format!(
                    "workers {}-{}, but a partition needs two different workers of the \
                     topology's {n} (0..={})",
                    f.target,
                    f.peer,
                    n.saturating_sub(1)
                )
            } else {
                format!(
                    "target {}, but the topology has {n} {} target(s) (0..={})",
                    f.target,
                    f.kind,
                    n.saturating_sub(1)
                )
            };
            return Err(FaultError::BadTarget(format!("in `{f}`: {why}")));
        }
        match f.trigger {
            Trigger::AtOffset(o) if o >= tuples => {
                return Err(FaultError::OffsetPastInput { offset: o, tuples });
            }
            Trigger::AtNs(t) if t > crate::units::MAX_DURATION_NS => {
                return Err(FaultError::TimeTooLate(f.to_string()));
            }
            _ => {}
        }
    }
    Ok(())
}

/// A spec in the `--faults` syntax, for messages: `kind[@trigger][*count][~rate/s|/kt][:target]`
/// (a rate given per ms shows per s).
fn spec_text(spec: &FaultSpec) -> String {
    let mut t = spec.kind.to_string();
    if let Some(trigger) = spec.trigger {
        t.push_str(&format!("@{trigger}"));
    }
    if spec.count != 1 {
        t.push_str(&format!("*{}", spec.count));
    }
    if let Some((rate, unit)) = spec.rate {
        let unit = match unit {
            RateUnit::PerSecond => "/s",
            RateUnit::PerKiloTuple => "/kt",
        };
        t.push_str(&format!("~{rate}{unit}"));
    }
    match spec.target {
        Some((a, b)) if spec.kind == FaultKind::Partition || b != 0 => {
            t.push_str(&format!(":{a}-{b}"));
        }
        Some((a, _)) => t.push_str(&format!(":{a}")),
        None => {}
    }
    t
}

/// The [`FaultError::BadTarget`] text for `spec`, whose fixed target is not one of the `n`
/// candidates of its kind.
fn bad_target_text(spec: &FaultSpec, n: u16) -> String {
    let (a, b) = spec.target.unwrap_or((0, 0));
    let noun = match spec.kind {
        FaultKind::SpoutCrash => "spout task(s)",
        FaultKind::BoltExceptionBeforeEmit
        | FaultKind::BoltExceptionAfterEmit
        | FaultKind::BoltCrash => "processing bolt task(s)",
        FaultKind::AckerCrash => "acker task(s)",
        FaultKind::WorkerCrash | FaultKind::Partition => "worker(s)",
        FaultKind::MessageLoss | FaultKind::SourceOutage | FaultKind::SinkOutage => "",
    };
    let range = if n == 0 {
        String::new()
    } else {
        format!(" (targets 0..={})", n - 1)
    };
    let why = match spec.kind {
        k if k.untargeted() => format!("{k} takes no target (only :0 is accepted)"),
        FaultKind::Partition if a == b => {
            format!("a partition needs two different workers, got {a}-{b}")
        }
        FaultKind::Partition => {
            format!("workers {a}-{b}, but the topology has {n} {noun}{range}")
        }
        _ if b != 0 => format!(
            "`{a}-{b}` is a pair of workers, which only a partition takes; {} takes one index",
            spec.kind
        ),
        // An acker crash with no acker fires as a no-op, on target 0 only.
        FaultKind::AckerCrash if n == 0 => {
            format!("target {a}, but the topology has no acker task (only target 0, a no-op, is accepted)")
        }
        _ => format!("target {a}, but the topology has {n} {noun}{range}"),
    };
    format!("in `{}`: {why}", spec_text(spec))
}

/// Expands specs into a concrete schedule, sorted by trigger, drawing rate times and unspecified
/// targets from `rng`. A kind with no candidate (an acker crash with zero ackers) still gets its
/// instances: they fire as no-ops, so the injected count is what was asked; except a partition
/// at a rate in a topology of fewer than two workers, which draws no fault (a partition at a
/// time or offset there is refused with [`FaultError::BadTarget`] by [`check_schedule`]).
///
/// # Errors
/// [`FaultError::BadTarget`] for a fixed target with no such task or worker,
/// [`FaultError::OffsetPastInput`] for an offset trigger past the input.
pub fn expand(
    specs: &[FaultSpec],
    ctx: &ExpandContext,
    rng: &mut SimRng,
) -> Result<Vec<Fault>, FaultError> {
    let mut out = Vec::new();
    for spec in specs {
        let n = ctx.targets.of(spec.kind);
        if let Some((a, b)) = spec.target {
            let ok = match spec.kind {
                FaultKind::Partition => a < n && b < n && a != b,
                k if k.untargeted() => a == 0 && b == 0,
                _ => a < n.max(1) && b == 0,
            };
            if !ok {
                return Err(FaultError::BadTarget(bad_target_text(spec, n)));
            }
        }
        if spec.rate.is_some() && spec.kind == FaultKind::Partition && n < 2 {
            // A partition needs two workers: a rate (swarm mode, say) draws none in a topology
            // of one worker.
            continue;
        }
        let mut triggers = Vec::new();
        match (spec.rate, spec.trigger) {
            (Some((rate, unit)), _) => {
                if rate > 0.0 {
                    match unit {
                        RateUnit::PerSecond => {
                            let mut t = 0u64;
                            loop {
                                t = t.saturating_add(rng::exp_gap_ns(rng, rate));
                                if t >= ctx.fault_until_ns {
                                    break;
                                }
                                if out.len() + triggers.len() >= MAX_FAULTS {
                                    return Err(FaultError::TooMany);
                                }
                                triggers.push(Trigger::AtNs(t));
                            }
                        }
                        RateUnit::PerKiloTuple => {
                            // Per offset: rate / 1000 per tuple; exponential gaps in offsets.
                            let mean = 1000.0 / rate;
                            let mut o = 0u64;
                            loop {
                                let g = (rng::exp_unit(rng) * mean).ceil();
                                let gap = if g.is_finite() && g < 1e18 {
                                    (g as u64).max(1)
                                } else {
                                    u64::MAX / 4
                                };
                                o = o.saturating_add(gap);
                                if o >= ctx.tuples {
                                    break;
                                }
                                if out.len() + triggers.len() >= MAX_FAULTS {
                                    return Err(FaultError::TooMany);
                                }
                                triggers.push(Trigger::AtOffset(o));
                            }
                        }
                    }
                }
            }
            (None, Some(Trigger::AtNs(t))) => {
                if out.len() + spec.count as usize > MAX_FAULTS {
                    return Err(FaultError::TooMany);
                }
                for i in 0..spec.count as u64 {
                    triggers.push(Trigger::AtNs(
                        t.saturating_add(i.saturating_mul(ctx.repeat_gap_ns)),
                    ));
                }
            }
            (None, Some(Trigger::AtOffset(o))) => {
                if out.len() + spec.count as usize > MAX_FAULTS {
                    return Err(FaultError::TooMany);
                }
                let gap = (ctx.tuples / (spec.count as u64 + 1)).max(1);
                for i in 0..spec.count as u64 {
                    let at = o.saturating_add(i * gap);
                    if at >= ctx.tuples {
                        return Err(FaultError::OffsetPastInput {
                            offset: at,
                            tuples: ctx.tuples,
                        });
                    }
                    triggers.push(Trigger::AtOffset(at));
                }
            }
            (None, None) => {
                if out.len() + spec.count as usize > MAX_FAULTS {
                    return Err(FaultError::TooMany);
                }
                let k = spec.count as u64;
                for i in 1..=k {
                    triggers.push(Trigger::AtOffset(i * ctx.tuples / (k + 1)));
                }
            }
        }
        for trigger in triggers {
            let (target, peer) = match spec.target {
                Some(t) => t,
                None => draw_target(spec.kind, n, rng),
            };
            out.push(Fault {
                trigger,
                kind: spec.kind,
                target,
                peer,
            });
        }
    }
    out.sort();
    Ok(out)
}

fn draw_target(kind: FaultKind, n: u16, rng: &mut SimRng) -> (u16, u16) {
    match kind {
        k if k.untargeted() => (0, 0),
        FaultKind::Partition if n >= 2 => {
            let a = rng::below(rng, n as u64) as u16;
            let mut b = rng::below(rng, n as u64 - 1) as u16;
            if b >= a {
                b += 1;
            }
            (a.min(b), a.max(b))
        }
        _ if n > 1 => (rng::below(rng, n as u64) as u16, 0),
        _ => (0, 0),
    }
}

/// Swarm mode: a random non-empty subset of fault kinds, each with a random weight, turned into
/// rate specs of `weight × per_kilo_tuple` faults per thousand offsets read.
pub fn swarm_specs(rng: &mut SimRng, per_kilo_tuple: f64) -> Vec<FaultSpec> {
    loop {
        let mut specs = Vec::new();
        for kind in FaultKind::ALL {
            if rng::below(rng, 2) == 1 {
                let weight = 0.1 + 0.9 * rng::unit(rng);
                specs.push(FaultSpec {
                    kind,
                    trigger: None,
                    count: 1,
                    rate: Some((weight * per_kilo_tuple, RateUnit::PerKiloTuple)),
                    target: None,
                });
            }
        }
        if !specs.is_empty() {
            return specs;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> ExpandContext {
        ExpandContext {
            tuples: 1000,
            repeat_gap_ns: 10,
            fault_until_ns: 1_000_000_000,
            targets: TargetCounts {
                spouts: 1,
                bolts: 2,
                ackers: 1,
                workers: 4,
            },
        }
    }

    #[test]
    fn parses_every_form() {
        let s: FaultSpec = "acker-crash*3".parse().unwrap();
        assert_eq!(
            (s.kind, s.count, s.trigger),
            (FaultKind::AckerCrash, 3, None)
        );
        let s: FaultSpec = "bolt-crash@2ms*2:1".parse().unwrap();
        assert_eq!(s.trigger, Some(Trigger::AtNs(2_000_000)));
        assert_eq!(s.target, Some((1, 0)));
        let s: FaultSpec = "partition@#10:0-2".parse().unwrap();
        assert_eq!(s.trigger, Some(Trigger::AtOffset(10)));
        assert_eq!(s.target, Some((0, 2)));
        let s: FaultSpec = "message-loss~2/kt".parse().unwrap();
        assert_eq!(s.rate, Some((2.0, RateUnit::PerKiloTuple)));
        let s: FaultSpec = "message-loss~3/ms".parse().unwrap();
        assert_eq!(s.rate, Some((3000.0, RateUnit::PerSecond)));
    }

    #[test]
    fn rejects_bad_specs() {
        assert!(matches!(
            "acker-explosion".parse::<FaultSpec>(),
            Err(FaultError::UnknownKind(_))
        ));
        assert!(matches!(
            "message-loss~-1".parse::<FaultSpec>(),
            Err(FaultError::BadRate(_))
        ));
        assert!(matches!(
            "message-loss~nan".parse::<FaultSpec>(),
            Err(FaultError::BadRate(_))
        ));
        assert!(matches!(
            "acker-crash*0".parse::<FaultSpec>(),
            Err(FaultError::BadCount(_))
        ));
        assert!(matches!(
            "acker-crash@soon".parse::<FaultSpec>(),
            Err(FaultError::BadTrigger(_))
        ));
        assert_eq!(
            "acker-crash@5000".parse::<FaultSpec>(),
            Err(FaultError::NoUnit(
                "`5000` has no unit; a duration needs one of the units ns, us, ms, s (e.g. \
                 5000s or 5000ms)"
                    .into()
            ))
        );
        assert!("acker-crash@0".parse::<FaultSpec>().is_ok());
        let mut r = rng::stream(1, 1);
        let specs = parse_specs("bolt-crash@1s:5").unwrap();
        assert!(matches!(
            expand(&specs, &ctx(), &mut r),
            Err(FaultError::BadTarget(_))
        ));
        let specs = parse_specs("message-loss~1e12/s").unwrap();
        assert_eq!(expand(&specs, &ctx(), &mut r), Err(FaultError::TooMany));
        let specs = parse_specs("bolt-crash@#1000").unwrap();
        assert!(matches!(
            expand(&specs, &ctx(), &mut r),
            Err(FaultError::OffsetPastInput { .. })
        ));
    }

    #[test]
    fn expansion_spreads_and_round_trips() {
        let mut r = rng::stream(1, 1);
        let specs = parse_specs("acker-crash*3, spout-crash@5ns*2:0").unwrap();
        let plan = expand(&specs, &ctx(), &mut r).unwrap();
        let text = format_schedule(&plan);
        assert_eq!(
            text,
            "spout-crash@5ns:0,spout-crash@15ns:0,acker-crash@#250:0,acker-crash@#500:0,acker-crash@#750:0"
        );
        // The printed schedule parses back to the same concrete faults.
        let again = expand(&parse_specs(&text).unwrap(), &ctx(), &mut r).unwrap();
        assert_eq!(again, plan);
    }

    #[test]
    fn rates_draw_from_the_seed() {
        let specs = parse_specs("bolt-crash~5/kt,message-loss~100/s").unwrap();
        let a = expand(&specs, &ctx(), &mut rng::stream(9, 1)).unwrap();
        let b = expand(&specs, &ctx(), &mut rng::stream(9, 1)).unwrap();
        let c = expand(&specs, &ctx(), &mut rng::stream(10, 1)).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        let crashes = a.iter().filter(|f| f.kind == FaultKind::BoltCrash).count();
        assert!((1..=20).contains(&crashes), "{crashes} bolt crashes");
        let losses = a
            .iter()
            .filter(|f| f.kind == FaultKind::MessageLoss)
            .count();
        assert!((50..=150).contains(&losses), "{losses} losses");
        assert!(a.iter().all(|f| f.target < 2));
    }
}
