//! The acker task's executor.

use acker_core::table::{BATCH_LOOKAHEAD, BATCH_READ_AHEAD_MIN_SLOTS};
use acker_core::{AckerMessage, AckerTable, Decision, TableError, TaskId};

use crate::api::ExecutorCounters;
use crate::message::{Notice, Outbox};
use crate::park::{ParkQueue, RecentRoots};

/// An acker task's executor (Storm's `Acker` bolt), around an [`AckerTable`].
///
/// # Back-pressure on a full table
///
/// A message that would create an entry in a full table is refused by acker-core
/// ([`TableError::Full`]) and changes nothing. The acker must keep
/// draining its input (acks and decisions must always flow, or the cycle
/// spout → bolt → acker → spout could deadlock), so instead of stopping it *parks* the refused
/// message in a bounded queue preallocated at build time (no allocation afterwards; capacity
/// [`Plan::acker_park_capacity`](crate::Plan::acker_park_capacity), default `max(acker capacity / 8, 64)`), and retries the parked
/// messages after every decision that frees a slot (`Completed`, `Failed`) and after every tick
/// (expiry frees slots): the first parked root (roots wait in the order of their oldest parked
/// message) is admitted through its oldest message, then at once its other parked messages are
/// applied in order; this repeats until the first root's message is refused again. Only
/// when the park queue itself is full is a message dropped, counted in
/// [`ExecutorCounters::dropped_full`]; its tree then times out at the spout and is replayed.
///
/// Order: the table is full exactly when it holds `capacity` live roots, and the queue is retried
/// whenever that number drops, so between two messages the queue holds only messages for roots
/// absent from a full table. A new message for a root with parked messages therefore finds its
/// root absent and the table full, and is parked behind them: the messages of one root are
/// applied in their arrival order. Messages for live roots apply at once, overtaking parked
/// messages of other roots (which they cannot affect). A decision needs the root's single
/// `Init`, and a decided entry is removed, so no root is decided twice: a parked message applied
/// after its tree was decided only makes an orphan entry that expires silently.
///
/// The park queue groups messages by root (an index preallocated with it), so parking and
/// admitting are O(1) each; see the runtime section of `benches/RESULTS.md` for the overload
/// figures.
///
/// # Late messages of failed trees
///
/// When a bolt fails its input, the tree's other branches go on and ack (or fail) after the
/// acker decided `Failed` and removed the entry. In Storm's acker each such late message makes
/// an orphan entry that expires 2T to 3T later. In a bounded table those orphans hold slots
/// that new trees need: a steady rate of ordinary failures (above about capacity ÷ 3T a
/// second) filled it and stalled every new tree until they expired, and with message timeouts
/// off they never expired. So the acker remembers the roots it decided `Failed` most recently
/// (at most [`recently_failed_capacity`](crate::Plan::recently_failed_capacity) of them, by
/// default 65,536 shared among the ackers, oldest forgotten first: a count of failures, not a
/// time, so it must cover the failed trees whose branches are still in flight) and drops acks,
/// fails and resets for them, counted in [`ExecutorCounters::orphans_avoided`]: the tree is
/// decided, its spout heard `Failed` once, and nothing for the root can change that. A late
/// message for a root already forgotten makes an orphan as before. Inits are never dropped.
pub struct AckerExecutor {
    pub(super) task: TaskId,
    pub(super) table: AckerTable<Vec<acker_core::Slot>>,
    pub(super) counters: ExecutorCounters,
    /// Messages refused by the full table, by root, oldest first (fixed capacity).
    pub(super) parked: ParkQueue,
    /// The roots this acker decided `Failed` most recently (fixed capacity).
    pub(super) recently_failed: RecentRoots,
}

impl AckerExecutor {
    pub(super) fn acker_message(&mut self, m: AckerMessage, out: &mut Outbox) {
        self.acker_message_inlined(m, out);
    }

    /// [`acker_message`](Self::acker_message) for each of `ms`, in order: the same table
    /// operations, parking and retries, in the same order, as one call per message (a refused
    /// message is parked and a freeing decision retries the park queue before the next message
    /// is applied). For a shell that receives acker messages in batches: the table's fast
    /// paths are inlined into this one loop instead of one out-of-line call per message.
    ///
    /// In a table of at least [`BATCH_READ_AHEAD_MIN_SLOTS`] slots (larger than a core's L2
    /// cache) it first asks for the buckets of the message [`BATCH_LOOKAHEAD`] places ahead
    /// ([`AckerTable::prefetch`]), so that the batch's cache misses overlap instead of stalling
    /// one after the other; the messages are applied one at a time, in order, all the same.
    pub(super) fn acker_messages(&mut self, ms: &[AckerMessage], out: &mut Outbox) {
        if self.table.capacity() < BATCH_READ_AHEAD_MIN_SLOTS {
            for &m in ms {
                self.acker_message_inlined(m, out);
            }
            return;
        }
        for m in ms.iter().take(BATCH_LOOKAHEAD) {
            self.table.prefetch(m.root());
        }
        for (i, &m) in ms.iter().enumerate() {
            if let Some(ahead) = ms.get(i + BATCH_LOOKAHEAD) {
                self.table.prefetch(ahead.root());
            }
            self.acker_message_inlined(m, out);
        }
    }

    /// Applies `m`; parks it if the table is full, and after a freeing decision admits what
    /// the park queue holds (one message's step of [`acker_message`](Self::acker_message) and
    /// [`acker_messages`](Self::acker_messages)).
    #[inline(always)]
    fn acker_message_inlined(&mut self, m: AckerMessage, out: &mut Outbox) {
        match self.apply_inlined(m, out) {
            Applied::Done => {}
            Applied::Freed => self.retry_parked(out),
            Applied::Full => self.park(m),
        }
    }

    /// Applies `m` to the table; a decision goes out as a notice to the spout task.
    #[inline]
    pub(super) fn apply(&mut self, m: AckerMessage, out: &mut Outbox) -> Applied {
        self.apply_inlined(m, out)
    }

    /// [`apply`](Self::apply), always inlined (the batch loop's copy).
    #[inline(always)]
    fn apply_inlined(&mut self, m: AckerMessage, out: &mut Outbox) -> Applied {
        let root = m.root();
        planted!(AckerDropsAck => if matches!(m, AckerMessage::Ack { .. }) && root.is_multiple_of(16) { return Applied::Done });
        if !self.recently_failed.is_empty()
            && !matches!(m, AckerMessage::Init { .. })
            && self.recently_failed.contains(root)
        {
            self.counters.orphans_avoided += 1;
            return Applied::Done;
        }
        match self.table.apply(m) {
            Ok(Decision::Pending) => {}
            Ok(Decision::Completed { spout_task }) => {
                self.counters.executed += 1;
                self.counters.acked += 1;
                out.push_notice(spout_task, Notice::Completed { root });
                return if self.parked.is_empty() {
                    Applied::Done
                } else {
                    Applied::Freed
                };
            }
            Ok(Decision::Failed { spout_task }) => {
                self.counters.executed += 1;
                self.counters.failed += 1;
                self.recently_failed.insert(root);
                out.push_notice(spout_task, Notice::Failed { root });
                return if self.parked.is_empty() {
                    Applied::Done
                } else {
                    Applied::Freed
                };
            }
            Ok(Decision::Reset { spout_task }) => {
                out.push_notice(spout_task, Notice::Reset { root });
            }
            Err(TableError::Full) => return Applied::Full,
            Err(_) => self.counters.errors += 1,
        }
        self.counters.executed += 1;
        Applied::Done
    }

    /// Parks `m` at the back of the queue, or drops it (counted) when the queue is full.
    pub(super) fn park(&mut self, m: AckerMessage) {
        match self.parked.push(m) {
            Ok(()) => self.counters.parked += 1,
            Err(_) => self.counters.dropped_full += 1,
        }
    }

    /// Admits parked messages while the table has room: the root whose oldest parked message is
    /// the oldest of all enters the table through it, then at once the root's other parked
    /// messages are applied, in order (they could not apply before, their root being absent).
    /// Stops when a root's oldest message is refused: the table is full, and every parked message
    /// is for a root absent from it, so none could apply.
    ///
    /// Taking a root's later messages along matters: left behind a message for a new root that
    /// does not fit, a message for an admitted root (say its completing ack) would wait, and if
    /// every root in the table waited like that nothing would free a slot again (head-of-line
    /// blocking until expiry; found by the `small_acker_table_parks_and_every_tree_completes`
    /// shell test). The park queue indexes messages by root, so each step is O(1).
    #[inline(never)]
    pub(super) fn retry_parked(&mut self, out: &mut Outbox) {
        while let Some(root) = self.parked.front_root() {
            let Some(m) = self.parked.peek(root) else {
                // Not reached: a root in the order has parked messages.
                self.parked.retire_front(false);
                continue;
            };
            if let Applied::Full = self.apply(m, out) {
                return;
            }
            let mut more = self.parked.pop(root);
            while more {
                let Some(m) = self.parked.peek(root) else {
                    break;
                };
                if let Applied::Full = self.apply(m, out) {
                    // The tree was just decided and the table is full again: the rest (orphans
                    // to be) waits, behind the other roots.
                    break;
                }
                more = self.parked.pop(root);
            }
            self.parked.retire_front(more);
        }
    }

    pub(super) fn tick(&mut self, now_ns: u64, out: &mut Outbox) {
        self.table.tick(now_ns);
        if !self.parked.is_empty() {
            self.retry_parked(out);
        }
    }

    /// Roots live in the table.
    pub fn live_roots(&self) -> usize {
        self.table.len()
    }

    /// Messages waiting in the park queue for a free table slot.
    pub fn parked_messages(&self) -> usize {
        self.parked.len()
    }
}

/// What applying one acker message did.
pub(super) enum Applied {
    /// Applied; no slot was freed or nothing is parked.
    Done,
    /// Applied, freed a slot, and messages are parked: retry them.
    Freed,
    /// Refused by the full table; nothing changed.
    Full,
}
