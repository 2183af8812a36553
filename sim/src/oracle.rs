//! The oracles checked on every run, and the violations they report.
//!
//! | oracle | checked |
//! | --- | --- |
//! | at-most-once: no duplicate | at the end, on the sink's result |
//! | at-least-once: nothing lost | at the end, on the sink's result |
//! | exactly-once: nothing lost, nothing duplicated | at the end, on the sink's (transactional) result |
//! | each spout emit gets at most one final callback | on every `ack` / `fail` the spout makes |
//! | the acker table never exceeds its capacity | after every step of every acker |
//! | liveness: every input decided within a bound once faults stop | every emit of a spout incarnation that did not crash is acked or failed within 2T + one tick of its emit; the run finishes within [`crate::Scenario::time_limit_ns`] |

use crate::scenario::Guarantee;
use crate::source::{CallbackError, EmitState, SinkStore, SourceLog};
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
        /// Offsets still uncommitted.
        uncommitted: u64,
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
        }
    }
}

/// The end-of-run oracles over the source log and the sink (the acker-capacity oracle runs
/// during the run). `decide_bound_ns` is 2T + one tick; `end_ns` the time the run stopped.
pub fn check_end(
    guarantee: Guarantee,
    log: &SourceLog,
    sink: &SinkStore,
    decide_bound_ns: u64,
    end_ns: u64,
) -> Vec<Violation> {
    let mut v = Vec::new();
    let mut lost = (0u64, None);
    let mut dups = (0u64, None);
    for o in 0..log.tuples() {
        let c = sink.count(o) as u64;
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
    for e in log.callback_errors() {
        v.push(Violation::Callback(*e));
    }
    // Liveness per emit: only emits of a spout incarnation still alive, or decided ones, count
    // (a crash forgets its pending emits, as a real crash does).
    for (id, e) in log.emits().iter().enumerate() {
        let at = match e.state {
            EmitState::Pending if e.incarnation == log.incarnation() => end_ns,
            EmitState::Pending => continue,
            _ => e.decided_ns,
        };
        if at.saturating_sub(e.emit_ns) > decide_bound_ns {
            v.push(Violation::Undecided {
                msg_id: id as u64,
                emit_ns: e.emit_ns,
                at_ns: at,
            });
            break; // one is enough to report
        }
    }
    v
}
