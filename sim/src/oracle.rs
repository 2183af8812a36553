//! The oracles checked on every run, and the violations they report.
//!
//! Generic oracles, for every spout of any topology, watched from outside the spout (the engine
//! records each tracked emit through the runtime's outbox and each `ack` / `fail` through a
//! wrapper around the spout instance; see [`Watch`]):
//!
//! | oracle | checked |
//! | --- | --- |
//! | each tracked emit gets at most one final callback | on every `ack` / `fail` the spout makes: a message id with no emit of the current incarnation still undecided is a violation |
//! | the acker table never exceeds its capacity | after every step of every acker |
//! | liveness: every input decided within a bound once faults stop | every tracked emit of a spout incarnation that did not crash is acked or failed within 2T + one tick of its emit; the run finishes (every spout done) within its time limit |
//! | at-least-once, for spouts declared reliable | at the end, every message id the spout ever emitted was acked at least once |
//! | user invariants | at the end, and after every event if asked |
//!
//! The built-in experiment adds its delivery-guarantee oracles ([`check_end`]), over the sink's
//! observable result (every effect applied to it) and the writes it received:
//!
//! | oracle | checked |
//! | --- | --- |
//! | at-most-once: no duplicate | at the end, on the effects in the sink's result |
//! | at-least-once: nothing lost | at the end, on the effects in the sink's result |
//! | exactly-once: nothing lost, nothing duplicated | at the end: every position's effect applied exactly once, whatever the sink's own de-duplication state says |

use crate::scenario::Guarantee;
use crate::source::{CallbackError, SinkStore};
use acker_core::TaskId;
use acker_runtime::{MessageId, Plan, TaskKind};
use std::collections::BTreeMap;
use std::fmt;

/// One oracle violation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Violation {
    /// Source positions missing from the sink's result (at-least-once, exactly-once).
    Lost {
        /// How many positions.
        count: u64,
        /// The first missing position.
        first: u64,
    },
    /// Duplicate records in the sink's result (at-most-once, exactly-once).
    Duplicated {
        /// How many extra records.
        count: u64,
        /// The first duplicated position.
        first: u64,
    },
    /// A spout emit got a second final callback, or a callback for an id never emitted.
    Callback(CallbackError),
    /// An acker table held more roots than its capacity.
    TableOverCapacity {
        /// Roots held.
        len: usize,
        /// Capacity.
        capacity: usize,
    },
    /// An emit was not decided within its bound (2T + one tick).
    Undecided {
        /// Its message id.
        msg_id: u64,
        /// Its emit time.
        emit_ns: u64,
        /// When it was decided, or the end of the run.
        at_ns: u64,
    },
    /// The run did not finish within its time limit.
    NotFinished {
        /// The time limit.
        limit_ns: u64,
        /// Offsets still uncommitted (the built-in experiment), or tracked emits still undecided
        /// (a user topology).
        uncommitted: u64,
    },
    /// A spout declared reliable never saw some message ids it emitted acked.
    NotAcked {
        /// The spout component.
        component: String,
        /// How many message ids.
        count: u64,
        /// The smallest such message id.
        first: MessageId,
    },
    /// A user invariant failed.
    Invariant {
        /// Its name.
        name: String,
        /// When it was found violated, in simulated ns.
        at_ns: u64,
        /// What the invariant said.
        message: String,
    },
}

impl Violation {
    /// A short class name, used to keep shrinking on the same kind of violation.
    pub fn class(&self) -> &'static str {
        match self {
            Violation::Lost { .. } => "lost",
            Violation::Duplicated { .. } => "duplicated",
            Violation::Callback(_) => "callback",
            Violation::TableOverCapacity { .. } => "table-over-capacity",
            Violation::Undecided { .. } => "undecided",
            Violation::NotFinished { .. } => "not-finished",
            Violation::NotAcked { .. } => "not-acked",
            Violation::Invariant { .. } => "invariant",
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::Lost { count, first } => {
                write!(f, "lost: {count} input(s) never reached the sink (first: #{first})")
            }
            Violation::Duplicated { count, first } => write!(
                f,
                "duplicated: {count} extra record(s) in the sink (first: #{first})"
            ),
            Violation::Callback(CallbackError::Twice { msg_id }) => {
                write!(f, "callback: spout emit {msg_id} got a second ack/fail")
            }
            Violation::Callback(CallbackError::Unknown { msg_id }) => {
                write!(f, "callback: ack/fail for message id {msg_id}, never emitted")
            }
            Violation::TableOverCapacity { len, capacity } => {
                write!(f, "acker table holds {len} roots, capacity {capacity}")
            }
            Violation::Undecided {
                msg_id,
                emit_ns,
                at_ns,
            } => write!(
                f,
                "liveness: emit {msg_id} at {emit_ns} ns still undecided at {at_ns} ns"
            ),
            Violation::NotFinished {
                limit_ns,
                uncommitted,
            } => write!(
                f,
                "liveness: run not finished by its limit {limit_ns} ns ({uncommitted} offsets uncommitted)"
            ),
            Violation::NotAcked {
                component,
                count,
                first,
            } => write!(
                f,
                "at-least-once: reliable spout `{component}` never saw {count} message id(s) \
                 acked (first: {first})"
            ),
            Violation::Invariant {
                name,
                at_ns,
                message,
            } => write!(f, "invariant `{name}` violated at {at_ns} ns: {message}"),
        }
    }
}

/// The built-in experiment's end-of-run guarantee oracles over the sink's observable result:
/// `effects(o)` how many times position `o`'s effect is in the result, for `o` in `0..tuples`.
pub fn check_end(guarantee: Guarantee, tuples: u64, sink: &SinkStore) -> Vec<Violation> {
    let mut v = Vec::new();
    let mut lost = (0u64, None);
    let mut dups = (0u64, None);
    for o in 0..tuples {
        let c = sink.effects(o) as u64;
        if c == 0 {
            lost.0 += 1;
            lost.1.get_or_insert(o);
        } else if c > 1 {
            dups.0 += c - 1;
            dups.1.get_or_insert(o);
        }
    }
    let check_lost = matches!(guarantee, Guarantee::AtLeastOnce | Guarantee::ExactlyOnce);
    let check_dups = matches!(guarantee, Guarantee::AtMostOnce | Guarantee::ExactlyOnce);
    if check_lost && lost.0 > 0 {
        v.push(Violation::Lost {
            count: lost.0,
            first: lost.1.unwrap_or(0),
        });
    }
    if check_dups && dups.0 > 0 {
        v.push(Violation::Duplicated {
            count: dups.0,
            first: dups.1.unwrap_or(0),
        });
    }
    v
}

/// What a spout component's message id went through, seen from outside the spout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Callbacks {
    /// Tracked emits with this message id.
    pub emits: u32,
    /// `ack` callbacks.
    pub acks: u32,
    /// `fail` callbacks.
    pub fails: u32,
}

struct SpoutWatch {
    component: usize,
    /// Undecided emits of the current incarnation: (message id, sequence) -> emit time.
    open: BTreeMap<(MessageId, u64), u64>,
    seq: u64,
}

/// The generic spout oracles' state: every tracked emit and callback of every spout task (see
/// the [module docs](self)).
pub struct Watch {
    spouts: BTreeMap<TaskId, SpoutWatch>,
    names: Vec<String>,
    reliable: Vec<bool>,
    by_id: Vec<BTreeMap<MessageId, Callbacks>>,
    bound_ns: Option<u64>,
    violations: Vec<Violation>,
    undecided_reported: bool,
}

impl Watch {
    /// Watches every spout task of `plan`; `reliable` names the spout components declared
    /// reliable; `bound_ns` is the liveness bound 2T + one tick (`None`: timeouts off, no bound).
    pub fn new(plan: &Plan, reliable: &[String], bound_ns: Option<u64>) -> Self {
        let mut names: Vec<String> = Vec::new();
        let mut spouts = BTreeMap::new();
        for i in plan.tasks().iter().filter(|i| i.kind == TaskKind::Spout) {
            let c = match names.iter().position(|n| *n == i.component) {
                Some(c) => c,
                None => {
                    names.push(i.component.clone());
                    names.len() - 1
                }
            };
            spouts.insert(
                i.task,
                SpoutWatch {
                    component: c,
                    open: BTreeMap::new(),
                    seq: 0,
                },
            );
        }
        Self {
            reliable: names.iter().map(|n| reliable.contains(n)).collect(),
            by_id: names.iter().map(|_| BTreeMap::new()).collect(),
            names,
            spouts,
            bound_ns,
            violations: Vec::new(),
            undecided_reported: false,
        }
    }

    /// Spout `task` made a tracked emit of `msg_id` at `now_ns`.
    pub fn emit(&mut self, task: TaskId, msg_id: MessageId, now_ns: u64) {
        let Some(s) = self.spouts.get_mut(&task) else {
            return;
        };
        s.seq += 1;
        s.open.insert((msg_id, s.seq), now_ns);
        self.by_id[s.component].entry(msg_id).or_default().emits += 1;
    }

    /// Spout `task` got `ack(msg_id)` (`acked`) or `fail(msg_id)` at `now_ns`.
    pub fn callback(&mut self, task: TaskId, msg_id: MessageId, acked: bool, now_ns: u64) {
        let Some(s) = self.spouts.get_mut(&task) else {
            return;
        };
        let entry = self.by_id[s.component].entry(msg_id).or_default();
        if acked {
            entry.acks += 1;
        } else {
            entry.fails += 1;
        }
        let ever = entry.emits > 0;
        let oldest = s
            .open
            .range((msg_id, 0)..=(msg_id, u64::MAX))
            .next()
            .map(|(&k, &t)| (k, t));
        match oldest {
            Some((key, emit_ns)) => {
                s.open.remove(&key);
                if let Some(b) = self.bound_ns {
                    if now_ns.saturating_sub(emit_ns) > b && !self.undecided_reported {
                        self.undecided_reported = true;
                        self.violations.push(Violation::Undecided {
                            msg_id,
                            emit_ns,
                            at_ns: now_ns,
                        });
                    }
                }
            }
            None if self.violations.len() < 100 => {
                self.violations.push(Violation::Callback(if ever {
                    CallbackError::Twice { msg_id }
                } else {
                    CallbackError::Unknown { msg_id }
                }));
            }
            None => {}
        }
    }

    /// Spout `task` crashed: its undecided emits are forgotten (a crash loses them, as a real one
    /// does; the new incarnation never calls back for them).
    pub fn crash(&mut self, task: TaskId) {
        if let Some(s) = self.spouts.get_mut(&task) {
            s.open.clear();
        }
    }

    /// Tracked emits still undecided.
    pub fn outstanding(&self) -> u64 {
        self.spouts.values().map(|s| s.open.len() as u64).sum()
    }

    /// The violations found during the run, then the end-of-run checks at `end_ns`: undecided
    /// emits past the bound, and reliable spouts' message ids never acked.
    pub fn check_end(&mut self, end_ns: u64) -> Vec<Violation> {
        let mut v = std::mem::take(&mut self.violations);
        if let (Some(b), false) = (self.bound_ns, self.undecided_reported) {
            let late = self
                .spouts
                .values()
                .flat_map(|s| s.open.iter())
                .filter(|(_, &t)| end_ns.saturating_sub(t) > b)
                .min_by_key(|(_, &t)| t);
            if let Some((&(msg_id, _), &emit_ns)) = late {
                v.push(Violation::Undecided {
                    msg_id,
                    emit_ns,
                    at_ns: end_ns,
                });
            }
        }
        for (c, ids) in self.by_id.iter().enumerate() {
            if !self.reliable[c] {
                continue;
            }
            let mut missing = ids.iter().filter(|(_, cb)| cb.acks == 0).map(|(&id, _)| id);
            if let Some(first) = missing.next() {
                v.push(Violation::NotAcked {
                    component: self.names[c].clone(),
                    count: 1 + missing.count() as u64,
                    first,
                });
            }
        }
        v
    }

    /// Every spout component's callbacks by message id.
    pub fn callbacks(&self) -> BTreeMap<String, BTreeMap<MessageId, Callbacks>> {
        self.names
            .iter()
            .cloned()
            .zip(self.by_id.iter().cloned())
            .collect()
    }
}
