//! One acker task's table, behind one trait, and the peers it is measured against.
//!
//! Every implementation follows the rules of `acker_core::table` (see its module docs), which are
//! Storm 2.x's `Acker` bolt rules:
//!
//! 1. any message for an unknown root creates its entry (no order is an error);
//! 2. `Init` XORs and records the spout task (a second init is [`TableError::DuplicateInit`]),
//!    `Ack` XORs, `Fail` marks failed, `ResetTimeout` restarts the timeout;
//! 3. a decision only once the spout task is known: ack val 0 → `Completed` (ack wins over
//!    fail), else failed → `Failed`, else reset → `Reset`; a completed or failed entry is removed;
//! 4. creating an entry, a fail and a reset-timeout (re)insert it (its expiry restarts); entries
//!    expire silently between 2T and 3T after their last (re)insertion, time moving only through
//!    `tick(now_ns)`, each crossing of a multiple of T being one rotation (at most 3 per tick);
//! 5. at most `capacity_roots` live roots: a message that would create an entry in a full table
//!    returns [`TableError::Full`] and changes nothing; root 0 is [`TableError::ZeroRoot`].
//!
//! The differential test (`tests/differential.rs`) checks every implementation against
//! acker-core's [`AckerTable`] on random message sequences, except [`HashbrownLean`], which
//! keeps none of rules 1, 4 and 5 (the ten-minute map a user would write; checked only on the
//! compare workloads, where those rules never decide anything).

mod hashbrown_lean;
pub(crate) mod hashbrown_map;
mod storm;

pub use hashbrown_lean::HashbrownLean;
pub use hashbrown_map::HashbrownAcker;
pub use storm::StormStyle;

use acker_core::{AckerMessage, AckerTable, Decision, Slot, TableError, TaskId};

/// One acker task's table of pending roots (`&mut self`: a single owner).
pub trait AckerStructure {
    /// The name used in reports and JSON rows (`acker-core`, `storm-style`, `hashbrown`).
    const NAME: &'static str;

    /// A table that holds at most `capacity_roots` live roots (at least 1), with message timeout
    /// `message_timeout_ns` (at least 1). The injected clock starts at 0 ns.
    ///
    /// # Panics
    /// On a zero capacity or timeout (a benchmark configuration error, never user input).
    fn with_capacity(capacity_roots: usize, message_timeout_ns: u64) -> Self
    where
        Self: Sized;

    /// Applies one acker message; the decision or error is the same for every implementation.
    ///
    /// # Errors
    /// [`TableError::ZeroRoot`], [`TableError::Full`], [`TableError::DuplicateInit`]; nothing
    /// changes on error.
    fn apply(&mut self, message: AckerMessage) -> Result<Decision, TableError>;

    /// Applies `messages` in order, passing each result to `sink` with the message's index.
    /// The default calls [`apply`](Self::apply) one at a time; an implementation may batch (the
    /// results and their order are the same).
    #[inline]
    fn apply_all<F: FnMut(usize, Result<Decision, TableError>)>(
        &mut self,
        messages: &[AckerMessage],
        mut sink: F,
    ) {
        for (i, m) in messages.iter().enumerate() {
            sink(i, self.apply(*m));
        }
    }

    /// Advances the injected clock to `now_ns` (earlier values are ignored); each crossing of a
    /// multiple of the message timeout is one rotation (at most 3 per call).
    fn tick(&mut self, now_ns: u64);

    /// Live roots.
    fn len(&self) -> usize;

    /// Whether no root is live.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of memory the table holds now (slots or buckets, control bytes, header), computed
    /// from its current capacity and entry size. The compare tool cross-checks it with a counting
    /// allocator.
    fn memory_bytes(&self) -> usize;

    /// Number of slots (entry-sized places) the table has now; `len() / slots()` is the load
    /// factor.
    fn slots(&self) -> usize;
}

/// The state of one root in a peer table (what Storm's `AckObject` holds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PeerEntry {
    /// The running XOR of the tree.
    pub ack_val: u64,
    /// The spout task, once the init arrived.
    pub spout_task: Option<TaskId>,
    /// Whether a fail arrived.
    pub failed: bool,
}

/// What a message does to an entry, before the decision.
#[inline]
pub(crate) fn update_entry(entry: &mut PeerEntry, message: &AckerMessage) {
    match *message {
        AckerMessage::Init {
            xor, spout_task, ..
        } => {
            entry.ack_val ^= xor;
            entry.spout_task = Some(spout_task);
        }
        AckerMessage::Ack { xor, .. } => entry.ack_val ^= xor,
        AckerMessage::Fail { .. } => entry.failed = true,
        AckerMessage::ResetTimeout { .. } => {}
    }
}

/// Rule 3: the decision for an updated entry, and whether the entry must be removed.
#[inline]
pub(crate) fn decide_entry(entry: &PeerEntry, message: &AckerMessage) -> (Decision, bool) {
    match entry.spout_task {
        None => (Decision::Pending, false),
        Some(spout_task) => {
            if entry.ack_val == 0 {
                (Decision::Completed { spout_task }, true)
            } else if entry.failed {
                (Decision::Failed { spout_task }, true)
            } else if matches!(message, AckerMessage::ResetTimeout { .. }) {
                (Decision::Reset { spout_task }, false)
            } else {
                (Decision::Pending, false)
            }
        }
    }
}

/// Whether the message (re)inserts an existing entry, restarting its expiry (Storm's
/// `pending.put` for fail and reset-timeout).
#[inline]
pub(crate) fn restamps(message: &AckerMessage) -> bool {
    matches!(
        message,
        AckerMessage::Fail { .. } | AckerMessage::ResetTimeout { .. }
    )
}

/// The number of rotations a tick to `now_ns` causes, given the last clock epoch (updated).
#[inline]
pub(crate) fn rotations(clock_epoch: &mut u64, now_ns: u64, timeout_ns: u64) -> u32 {
    let e = now_ns / timeout_ns;
    if e > *clock_epoch {
        let steps = (e - *clock_epoch).min(acker_core::table::EXPIRY_EPOCHS as u64) as u32;
        *clock_epoch = e;
        steps
    } else {
        0
    }
}

impl AckerStructure for AckerTable<Box<[Slot]>> {
    const NAME: &'static str = "acker-core";

    fn with_capacity(capacity_roots: usize, message_timeout_ns: u64) -> Self {
        let storage = vec![Slot::EMPTY; capacity_roots].into_boxed_slice();
        AckerTable::new(storage, message_timeout_ns).expect("valid acker table configuration")
    }

    #[inline]
    fn apply(&mut self, message: AckerMessage) -> Result<Decision, TableError> {
        AckerTable::apply(self, message)
    }

    /// Through [`AckerTable::apply_batch`] (reads the slots of later messages ahead).
    #[inline]
    fn apply_all<F: FnMut(usize, Result<Decision, TableError>)>(
        &mut self,
        messages: &[AckerMessage],
        sink: F,
    ) {
        self.apply_batch(messages, sink)
    }

    fn tick(&mut self, now_ns: u64) {
        AckerTable::tick(self, now_ns)
    }

    fn len(&self) -> usize {
        AckerTable::len(self)
    }

    fn memory_bytes(&self) -> usize {
        // The header sits inline in the caller's value; the slots are the only allocation.
        AckerTable::memory_bytes(self)
    }

    fn slots(&self) -> usize {
        self.capacity()
    }
}
