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
//! | liveness: every input decided within a bound once faults stop | every tracked emit of a spout incarnation that did not crash is acked or failed within 2T + one tick of its emit; the run finishes (every spout done) within its time limit, and its clock never stays at one instant for more than [`max_events_per_instant`](crate::SimOptions::max_events_per_instant) events |
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
//!
//! The experiment and the shapes ([`SimOptions::fails_only_under_faults`](crate::SimOptions::fails_only_under_faults))
//! add, from what their spouts receive:
//!
//! | oracle | checked |
//! | --- | --- |
//! | no fault fired, no tree failed (`failed-without-fault`: an ack lost inside the system) | at the end of a run where no fault fired: every `fail` the spout got (an acker's `Failed` notice, or its own message timeout) was followed by the acker's `Completed` notice for the same root (a late ack: the tree only took longer than the timeout, and the spout counted the notice ignored) or by a message of the tree reaching its acker 2T or more after the emit (the tree outlived its acker entry, which expires silently from 2T after its creation: the timeout asked for); a failed tree that never completed is the violation |

use crate::scenario::Guarantee;
use crate::source::{CallbackError, SinkStore};
use acker_core::TaskId;
use acker_runtime::{MessageId, Plan, TaskKind};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};

/// A fixed (unseeded) hasher for message ids: the maps it serves are only looked up, never
/// iterated into an output in hash order, so runs stay deterministic.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        // Low bits: the id folded with its own higher bits (a shift-xor, no multiply), so that
        // ids handed out in sequence (the common case) sit in neighbouring buckets
        // (cache-friendly) while ids that are multiples of a power of two still spread; top 7
        // bits (hashbrown's tag): the id's low 7 bits, so neighbours have distinct tags.
        let x = self.0;
        let low = x ^ (x >> 7) ^ (x >> 17) ^ (x >> 31) ^ (x >> 47);
        low ^ (x << 57)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ b as u64;
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 ^= n;
    }
}

type IdMap<V> = HashMap<MessageId, V, BuildHasherDefault<IdHasher>>;

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
        /// (a user topology): which of the two, `unfinished`
        /// says.
        uncommitted: u64,
        /// What `uncommitted` counts.
        unfinished: Unfinished,
    },
    /// Simulated time stopped advancing: the run executed
    /// [`SimOptions::max_events_per_instant`](crate::SimOptions::max_events_per_instant) events
    /// at one instant with work left (a loop of steps that take no simulated time, e.g. every
    /// service time and latency 0 and a spout that never finishes), and was stopped there, since
    /// its time limit would never be reached.
    TimeStalled {
        /// The instant, in simulated ns.
        at_ns: u64,
        /// The events executed at it (the cap).
        events: u64,
        /// Offsets still uncommitted (the built-in experiment), or tracked emits still undecided
        /// (a user topology): which of the two, `unfinished`
        /// says.
        uncommitted: u64,
        /// What `uncommitted` counts.
        unfinished: Unfinished,
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
    /// A tree failed in a run where no fault fired, in a topology that fails trees only under
    /// faults ([`SimOptions::fails_only_under_faults`](crate::SimOptions::fails_only_under_faults)),
    /// and the acker never reported it completed: an ack was lost inside the system. Judged from
    /// what the spout receives: a `fail` (the acker's `Failed` notice, or the spout's own message
    /// timeout) is excused when the acker's `Completed` notice for the same root reaches the
    /// spout later (a late ack: the tree took longer than the timeout, and the spout counted
    /// the notice ignored), or when a message of the tree reaches its acker 2T or more after the
    /// emit (the tree outlived its acker entry, which expires silently from 2T after its
    /// creation); a `fail` whose tree never completes by the end of a run that
    /// finished is this violation (a run cut at its time limit is [`Violation::NotFinished`]
    /// instead).
    FailedWithoutFault {
        /// The spout component.
        component: String,
        /// The smallest message id that got a `fail`.
        msg_id: MessageId,
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
            Violation::TimeStalled { .. } => "time-stalled",
            Violation::NotAcked { .. } => "not-acked",
            Violation::FailedWithoutFault { .. } => "failed-without-fault",
            Violation::Invariant { .. } => "invariant",
        }
    }
}

/// What a [`Violation::NotFinished`] or [`Violation::TimeStalled`] counts as left unfinished.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unfinished {
    /// Source offsets not committed by the sink (the built-in experiment's topology).
    OffsetsUncommitted,
    /// Tracked spout emits not decided yet (a user topology).
    EmitsUndecided,
}

impl fmt::Display for Unfinished {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Unfinished::OffsetsUncommitted => "offsets uncommitted",
            Unfinished::EmitsUndecided => "tracked emits undecided",
        })
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::Lost { count, first } => {
                write!(
                    f,
                    "lost: {count} input(s) never reached the sink (first: #{first})"
                )
            }
            Violation::Duplicated { count, first } => write!(
                f,
                "duplicated: {count} extra record(s) in the sink (first: #{first})"
            ),
            Violation::Callback(CallbackError::Twice { msg_id }) => {
                write!(f, "callback: spout emit {msg_id} got a second ack/fail")
            }
            Violation::Callback(CallbackError::Unknown { msg_id }) => {
                write!(
                    f,
                    "callback: ack/fail for message id {msg_id}, never emitted"
                )
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
                unfinished,
            } => write!(
                f,
                "liveness: run not finished by its limit {limit_ns} ns ({uncommitted} {unfinished})"
            ),
            Violation::TimeStalled {
                at_ns,
                events,
                uncommitted,
                unfinished,
            } => write!(
                f,
                "liveness: simulated time stopped advancing at {at_ns} ns: {events} events ran at \
                 that instant with work left ({uncommitted} {unfinished}), so the time \
                 limit would never be reached; steps that take 0 ns (spout_ns, bolt_ns, acker_ns, \
                 link latencies at 0) loop there (the cap is max_events_per_instant)"
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
            Violation::FailedWithoutFault { component, msg_id } => write!(
                f,
                "failed-without-fault: spout `{component}` got a fail for message id {msg_id} \
                 though no fault fired, and its tree never completed (an ack was lost inside \
                 the system)"
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

/// One message id of one spout task: its callbacks so far, and the emit time of its oldest
/// undecided emit of the current incarnation (the later ones, rare, wait in
/// `SpoutWatch::more`). One hash lookup per emit and per callback.
#[derive(Clone, Copy)]
struct IdState {
    cb: Callbacks,
    /// Emit time of the oldest undecided emit; `u64::MAX`: none.
    open_first_ns: u64,
    /// Root id of the oldest undecided emit (what [`Watch::callback`] hands back).
    open_root: u64,
}

/// A spout component's callbacks by message id, sorted by message id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpoutCallbacks(Vec<(MessageId, Callbacks)>);

impl SpoutCallbacks {
    /// The callbacks of `msg_id`, if it was ever emitted or called back.
    pub fn get(&self, msg_id: MessageId) -> Option<&Callbacks> {
        self.0
            .binary_search_by_key(&msg_id, |&(k, _)| k)
            .ok()
            .map(|i| &self.0[i].1)
    }

    /// Every message id with its callbacks, by message id.
    pub fn iter(&self) -> impl Iterator<Item = (MessageId, &Callbacks)> {
        self.0.iter().map(|(k, c)| (*k, c))
    }

    /// Message ids seen.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether no message id was seen.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::ops::Index<MessageId> for SpoutCallbacks {
    type Output = Callbacks;

    /// # Panics
    /// If `msg_id` was never emitted nor called back (use [`SpoutCallbacks::get`] otherwise).
    fn index(&self, msg_id: MessageId) -> &Callbacks {
        match self.get(msg_id) {
            Some(c) => c,
            None => panic!("message id {msg_id} was never emitted nor called back"),
        }
    }
}

const NO_EMIT: IdState = IdState {
    cb: Callbacks {
        emits: 0,
        acks: 0,
        fails: 0,
    },
    open_first_ns: u64::MAX,
    open_root: 0,
};

/// Per message id state: a dense vector while the ids come in sequence from 0 (the common case:
/// no hashing, 32 bytes an id: callbacks, the oldest undecided emit's time and root id), a hash
/// map for the others (an id far past the dense part, and every id after the first such one, so
/// no id lives in both).
#[derive(Default)]
struct IdTable {
    dense: Vec<IdState>,
    sparse: IdMap<IdState>,
}

impl IdTable {
    /// Most slots the dense part grows by at once (an id further out goes to the map).
    const DENSE_STEP: usize = 4096;

    /// The entry of `id` (inlined: ids in the dense part, the common case, cost an index).
    #[inline]
    fn entry(&mut self, id: MessageId) -> &mut IdState {
        let i = usize::try_from(id).unwrap_or(usize::MAX);
        if i < self.dense.len() {
            return &mut self.dense[i];
        }
        self.entry_beyond(id)
    }

    /// [`entry`](Self::entry) for an id past the dense part.
    #[inline(never)]
    fn entry_beyond(&mut self, id: MessageId) -> &mut IdState {
        let i = usize::try_from(id).unwrap_or(usize::MAX);
        if self.sparse.is_empty() && i - self.dense.len() < Self::DENSE_STEP {
            // Grown a chunk ahead (entries never touched are `NO_EMIT`, which `iter` skips), so
            // that sequential ids take this call once in 1024 (it was once an id).
            let len = (i + 1).max(self.dense.len() + 1024);
            self.dense.resize(len, NO_EMIT);
            return &mut self.dense[i];
        }
        self.sparse.entry(id).or_insert(NO_EMIT)
    }

    /// Every id seen (emitted or called back), dense part first.
    fn iter(&self) -> impl Iterator<Item = (MessageId, &IdState)> + '_ {
        self.dense
            .iter()
            .enumerate()
            .filter(|(_, e)| e.cb != NO_EMIT.cb)
            .map(|(i, e)| (i as MessageId, e))
            .chain(self.sparse.iter().map(|(&k, e)| (k, e)))
    }

    fn values_mut(&mut self) -> impl Iterator<Item = &mut IdState> + '_ {
        self.dense.iter_mut().chain(self.sparse.values_mut())
    }
}

struct SpoutWatch {
    component: usize,
    ids: IdTable,
    /// The later undecided emits (emit time, root id) of ids with more than one, in order (rare:
    /// kept apart so that the common entry stays 32 bytes).
    more: IdMap<std::collections::VecDeque<(u64, u64)>>,
    /// Undecided emits of the current incarnation.
    open_len: u64,
}

/// The generic spout oracles' state: every tracked emit and callback of every spout task (see
/// the [module docs](self)).
pub struct Watch {
    /// One per spout task, in task order.
    spouts: Vec<SpoutWatch>,
    /// Index into `spouts` by task id (`u32::MAX`: not a spout): a vector lookup where a
    /// `BTreeMap` by task took ≈ 20 instructions at every emit and callback.
    slot: Vec<u32>,
    names: Vec<String>,
    reliable: Vec<bool>,
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
                    ids: IdTable::default(),
                    more: IdMap::default(),
                    open_len: 0,
                },
            );
        }
        let mut slot = vec![u32::MAX; spouts.keys().last().map_or(0, |&t| t as usize + 1)];
        for (i, &t) in spouts.keys().enumerate() {
            slot[t as usize] = i as u32;
        }
        Self {
            reliable: names.iter().map(|n| reliable.contains(n)).collect(),
            names,
            spouts: spouts.into_values().collect(),
            slot,
            bound_ns,
            violations: Vec::new(),
            undecided_reported: false,
        }
    }

    /// The watch of spout task `task`, if it is one.
    #[inline]
    fn spout(&mut self, task: TaskId) -> Option<&mut SpoutWatch> {
        let i = *self.slot.get(task as usize)?;
        self.spouts.get_mut(i as usize)
    }

    /// Spout `task` made a tracked emit of `msg_id` at `now_ns` (its root id unknown: as
    /// [`emit_root`](Self::emit_root) with root 0).
    #[inline]
    pub fn emit(&mut self, task: TaskId, msg_id: MessageId, now_ns: u64) {
        self.emit_root(task, msg_id, 0, now_ns);
    }

    /// Spout `task` made a tracked emit of `msg_id`, as the tree of root id `root`, at `now_ns`.
    #[inline]
    pub fn emit_root(&mut self, task: TaskId, msg_id: MessageId, root: u64, now_ns: u64) {
        let Some(s) = self.spout(task) else {
            return;
        };
        s.open_len += 1;
        let e = s.ids.entry(msg_id);
        e.cb.emits += 1;
        if e.open_first_ns == u64::MAX {
            e.open_first_ns = now_ns;
            e.open_root = root;
        } else {
            s.more.entry(msg_id).or_default().push_back((now_ns, root));
        }
    }

    /// Spout `task` got `ack(msg_id)` (`acked`) or `fail(msg_id)` at `now_ns`. A callback for a
    /// message id with no undecided emit is a [`CallbackError`] violation, kept while fewer than
    /// 100 violations are held (the list of violations stays short; each message id called back
    /// still gets its per-id entry, so memory grows with the distinct ids, as with emits).
    /// Returns the root id (0 when emitted through [`emit`](Self::emit)) and the emit time in ns
    /// of the emit it decided (the oldest undecided one of `msg_id`), or `None` when it decided
    /// none.
    pub fn callback(
        &mut self,
        task: TaskId,
        msg_id: MessageId,
        acked: bool,
        now_ns: u64,
    ) -> Option<(u64, u64)> {
        let i = match self.slot.get(task as usize) {
            Some(&i) if (i as usize) < self.spouts.len() => i as usize,
            _ => return None,
        };
        let s = &mut self.spouts[i];
        let e = s.ids.entry(msg_id);
        if acked {
            e.cb.acks += 1;
        } else {
            e.cb.fails += 1;
        }
        let ever = e.cb.emits > 0;
        if e.open_first_ns != u64::MAX {
            let emit_ns = e.open_first_ns;
            let root = e.open_root;
            e.open_first_ns = u64::MAX;
            if !s.more.is_empty() {
                if let Some(q) = s.more.get_mut(&msg_id) {
                    (e.open_first_ns, e.open_root) = q.pop_front().unwrap_or((u64::MAX, 0));
                    if q.is_empty() {
                        s.more.remove(&msg_id);
                    }
                }
            }
            s.open_len -= 1;
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
            Some((root, emit_ns))
        } else {
            if self.violations.len() < 100 {
                self.violations.push(Violation::Callback(if ever {
                    CallbackError::Twice { msg_id }
                } else {
                    CallbackError::Unknown { msg_id }
                }));
            }
            None
        }
    }

    /// Spout `task` crashed: its undecided emits are forgotten (a crash loses them, as a real one
    /// does; the new incarnation never calls back for them).
    pub fn crash(&mut self, task: TaskId) {
        if let Some(s) = self.spout(task) {
            if s.open_len > 0 {
                for e in s.ids.values_mut() {
                    e.open_first_ns = u64::MAX;
                }
                s.more.clear();
            }
            s.open_len = 0;
        }
    }

    /// Tracked emits still undecided.
    pub fn outstanding(&self) -> u64 {
        self.spouts.iter().map(|s| s.open_len).sum()
    }

    /// The violations found during the run, then the end-of-run checks at `end_ns`: undecided
    /// emits past the bound, and reliable spouts' message ids never acked.
    pub fn check_end(&mut self, end_ns: u64) -> Vec<Violation> {
        let mut v = std::mem::take(&mut self.violations);
        if let (Some(b), false) = (self.bound_ns, self.undecided_reported) {
            // The oldest undecided emit (ties: the smallest id), whatever the maps' order.
            let late = self
                .spouts
                .iter()
                .filter(|s| s.open_len > 0)
                .flat_map(|s| s.ids.iter())
                .map(|(id, e)| (e.open_first_ns, id))
                .filter(|&(t, _)| t != u64::MAX && end_ns.saturating_sub(t) > b)
                .min();
            if let Some((emit_ns, msg_id)) = late {
                v.push(Violation::Undecided {
                    msg_id,
                    emit_ns,
                    at_ns: end_ns,
                });
            }
        }
        for (c, name) in self.names.iter().enumerate() {
            if !self.reliable[c] {
                continue;
            }
            // Acks of a message id summed over the component's tasks.
            let mut acks: BTreeMap<MessageId, u32> = BTreeMap::new();
            for s in self.spouts.iter().filter(|s| s.component == c) {
                for (id, e) in s.ids.iter() {
                    *acks.entry(id).or_insert(0) += e.cb.acks;
                }
            }
            let missing = acks.iter().filter(|(_, &n)| n == 0).map(|(&id, _)| id);
            let (count, first) =
                missing.fold((0u64, MessageId::MAX), |(n, f), id| (n + 1, f.min(id)));
            if count > 0 {
                v.push(Violation::NotAcked {
                    component: name.clone(),
                    count,
                    first,
                });
            }
        }
        v
    }

    fn callbacks_by_component(&self) -> Vec<SpoutCallbacks> {
        let mut per: Vec<Vec<(MessageId, Callbacks)>> =
            self.names.iter().map(|_| Vec::new()).collect();
        for s in self.spouts.iter() {
            per[s.component].extend(s.ids.iter().map(|(k, e)| (k, e.cb)));
        }
        per.into_iter()
            .map(|mut v| {
                // Unstable sort, then merge the tasks of one component (same id, several tasks).
                v.sort_unstable_by_key(|&(k, _)| k);
                let mut merged: Vec<(MessageId, Callbacks)> = Vec::with_capacity(v.len());
                for (k, c) in v {
                    match merged.last_mut() {
                        Some((lk, lc)) if *lk == k => {
                            lc.emits += c.emits;
                            lc.acks += c.acks;
                            lc.fails += c.fails;
                        }
                        _ => merged.push((k, c)),
                    }
                }
                SpoutCallbacks(merged)
            })
            .collect()
    }

    /// Every spout component's callbacks by message id.
    pub fn callbacks(&self) -> BTreeMap<String, SpoutCallbacks> {
        self.names
            .iter()
            .cloned()
            .zip(self.callbacks_by_component())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use acker_runtime::{values, Config, Spout, SpoutOutputCollector, TopologyBuilder};

    struct Idle;
    impl Spout for Idle {
        fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
            let _ = c.emit(values![1], Some(1));
        }
    }

    fn watch(reliable: bool) -> Watch {
        let mut b = TopologyBuilder::new();
        b.set_spout("s", || Idle, 2).output_fields(&["n"]);
        let plan = b.build().unwrap().plan(&Config::default()).unwrap();
        let r = if reliable {
            vec!["s".to_string()]
        } else {
            vec![]
        };
        Watch::new(&plan, &r, Some(100))
    }

    #[test]
    fn a_second_callback_an_unknown_id_and_a_late_decision_are_reported() {
        let mut w = watch(false);
        w.emit(0, 7, 10);
        w.emit(0, 7, 20); // the same id again (a replay) before the first is decided
        w.callback(0, 7, false, 30);
        w.callback(0, 7, true, 200); // the second emit, decided 180 ns after: past the bound 100
        w.callback(0, 7, true, 210); // a third callback for two emits
        w.callback(1, 9, true, 220); // never emitted by task 1
        assert_eq!(w.outstanding(), 0);
        let v = w.check_end(300);
        assert_eq!(
            v,
            vec![
                Violation::Undecided {
                    msg_id: 7,
                    emit_ns: 20,
                    at_ns: 200
                },
                Violation::Callback(CallbackError::Twice { msg_id: 7 }),
                Violation::Callback(CallbackError::Unknown { msg_id: 9 }),
            ]
        );
        let cb = &w.callbacks()["s"];
        assert_eq!(
            cb[7],
            Callbacks {
                emits: 2,
                acks: 2,
                fails: 1
            }
        );
    }

    #[test]
    fn a_crash_forgets_open_emits_and_reliable_spouts_must_ack_every_id() {
        let mut w = watch(true);
        w.emit(0, 1, 0);
        w.emit(0, 2, 0);
        w.emit(1, 3, 0);
        w.crash(0);
        assert_eq!(w.outstanding(), 1);
        // Task 1 (not crashed) decides its emit; ids 1 and 2 of task 0 are never acked.
        w.callback(1, 3, true, 50);
        let v = w.check_end(1_000);
        assert_eq!(
            v,
            vec![Violation::NotAcked {
                component: "s".into(),
                count: 2,
                first: 1
            }]
        );
    }
}

#[cfg(test)]
mod id_table_tests {
    use super::*;

    #[test]
    fn far_ids_go_to_the_map_and_every_id_is_listed_once_in_order() {
        let mut t = IdTable::default();
        t.entry(2).cb.emits += 1;
        t.entry(1 << 40).cb.acks += 1; // far: the map, and from now on every new id
        t.entry(3).cb.fails += 1; // inside the dense part (grown 1024 ids ahead)
        t.entry(1024).cb.fails += 1; // next to the dense part, but the map is in use
        t.entry(0).cb.emits += 1; // inside the dense part
        assert_eq!(t.dense.len(), 1024);
        assert_eq!(t.sparse.len(), 2);
        let mut ids: Vec<(MessageId, Callbacks)> = t.iter().map(|(k, e)| (k, e.cb)).collect();
        ids.sort_unstable_by_key(|&(k, _)| k);
        let cb = |emits, acks, fails| Callbacks { emits, acks, fails };
        assert_eq!(
            ids,
            vec![
                (0, cb(1, 0, 0)),
                (2, cb(1, 0, 0)),
                (3, cb(0, 0, 1)),
                (1024, cb(0, 0, 1)),
                (1 << 40, cb(0, 1, 0))
            ]
        );
    }
}
