//! The single-owner acker table.
//!
//! [`AckerTable`] is what one acker task owns: a fixed-capacity map from root id to the tree's
//! ack val and spout task, exactly 20 bytes a root, updated with one XOR per message and never
//! allocating. It follows Storm 2.x's `Acker` bolt rule for rule:
//!
//! 1. A message for an unknown root creates its entry: acks, fails and resets may arrive before
//!    the init (the spout sends its data tuples before the init). No order of messages is an error.
//! 2. `Init` XORs and records the spout task, `Ack` XORs, `Fail` marks the entry failed,
//!    `ResetTimeout` restarts its timeout.
//! 3. A decision is made only once the spout task is known: ack val 0 → [`Decision::Completed`]
//!    (an ack wins over a fail), else failed → [`Decision::Failed`], else a reset-timeout →
//!    [`Decision::Reset`] (the entry stays). A completed or failed entry is removed, so the spout
//!    hears about a root at most once.
//! 4. The table never times a tree out itself: an entry expires *silently* between 2T and 3T after
//!    its last (re)insertion, T being the message timeout, so the acker outlives the spout's own
//!    deadline (T to 2T). As in Storm's `RotatingMap` `put`, creating an entry, a fail and a
//!    reset-timeout (re)insert it; an init or an ack of an existing entry does not. Orphans (acks for
//!    a root already decided, or never initialised) are reclaimed by the same expiry. Time only
//!    moves through [`AckerTable::tick`].
//! 5. At most [`AckerTable::capacity`] roots, 20 bytes each; when full, a message that would create
//!    an entry returns [`TableError::Full`] and changes nothing (the caller applies back-pressure).
//!
//! ## Layout and cost
//!
//! Open addressing with Robin Hood linear probing and backward-shift deletion, over storage the
//! caller provides (`[Slot; N]`, `&mut [Slot]`, a `Box<[Slot]>`...). Each [`Slot`] is 20 bytes:
//! root id (8, 0 = free), ack val (8), and 4 bytes holding the spout task (16 bits), two flags
//! (spout task known, failed) and a 14-bit timeout stamp. Memory is `20 × capacity` plus
//! `size_of::<AckerTable<S>>()`, with no hidden allocation. The table fills to 100% of its slots;
//! above ~90% load lookups of absent roots slow down, so size it for the load you expect.
//!
//! Expiry is O(1) amortised per entry: a tick subtracts the expiring generation's count from the
//! length at once (so [`AckerTable::len`] is exact immediately) and then reclaims at most
//! `capacity / 64` slots' worth of expired entries ([`SWEEP_FRACTION`]); expired entries left
//! behind are invisible to every operation and are reclaimed by later sweeps or when an entry
//! moves past them.

use crate::ids::{RootId, TaskId};
use crate::message::{AckerMessage, Decision};
use crate::routing::reduce;

/// One slot of an [`AckerTable`]: exactly 20 bytes (root id 8, ack val 8, spout task + flags +
/// timeout stamp 4).
///
/// Callers only create storage from it ([`Slot::EMPTY`], `Default`); its contents are private.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, packed(4))]
pub struct Slot {
    root: u64,
    ack_val: u64,
    meta: u32,
}

impl Slot {
    /// A free slot. Storage is created as `[Slot::EMPTY; N]` or `vec![Slot::EMPTY; n]`.
    pub const EMPTY: Slot = Slot {
        root: 0,
        ack_val: 0,
        meta: 0,
    };
}

impl Default for Slot {
    fn default() -> Self {
        Slot::EMPTY
    }
}

const TASK_MASK: u32 = 0xFFFF;
const HAS_TASK: u32 = 1 << 16;
const FAILED: u32 = 1 << 17;
const STAMP_SHIFT: u32 = 18;
/// Width of the timeout stamp kept in each slot.
const STAMP_BITS: u32 = 14;
const STAMP_MASK: u32 = (1 << STAMP_BITS) - 1;

/// An entry expires once the table's epoch (one epoch = one message timeout T) is this many epochs
/// past the entry's stamp: between 2T and 3T after the (re)insertion, as Storm's acker does with
/// three rotating buckets.
pub const EXPIRY_EPOCHS: u32 = 3;

/// A tick reclaims expired entries from at most `capacity / SWEEP_FRACTION` (rounded up) slots.
/// A full pass over the table thus takes at most 64 ticks, during which the epoch advances at most
/// 3 × 64 epochs: far below the 2^14 epochs after which a 14-bit stamp would wrap, so an expired
/// entry can never look fresh again.
pub const SWEEP_FRACTION: usize = 64;

/// Errors of [`AckerTable::new`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// The storage has no slot.
    ZeroCapacity,
    /// The storage has more slots than the table can index (`u32::MAX`).
    CapacityTooLarge,
    /// The message timeout is 0 ns.
    ZeroTimeout,
}

impl core::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ConfigError::ZeroCapacity => f.write_str("acker table storage has no slot"),
            ConfigError::CapacityTooLarge => {
                f.write_str("acker table storage has more than u32::MAX slots")
            }
            ConfigError::ZeroTimeout => f.write_str("message timeout must be at least 1 ns"),
        }
    }
}

/// Errors of the acker table's operations. Each leaves the table exactly as it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableError {
    /// The message would create an entry but every one of the `capacity` slots holds a live root.
    /// Nothing changed; retry after decisions or expiry free slots (back-pressure).
    Full,
    /// Root id 0 is reserved (it marks a free slot) and is never a valid root.
    ZeroRoot,
    /// A second `Init` for a root whose spout task is already known: a spout sends one init per
    /// root, so this is a caller error (XORing it in would corrupt the tree). Nothing changed.
    DuplicateInit,
}

impl core::fmt::Display for TableError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            TableError::Full => f.write_str("acker table is full"),
            TableError::ZeroRoot => f.write_str("root id 0 is not a valid root"),
            TableError::DuplicateInit => f.write_str("second init for a root already initialised"),
        }
    }
}

/// A read-only view of one live entry, for inspection and tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryView {
    /// The running XOR of the tree.
    pub ack_val: u64,
    /// The spout task, once the init has arrived.
    pub spout_task: Option<TaskId>,
    /// Whether a fail has arrived.
    pub failed: bool,
}

/// Where a probe for a root ended.
enum Probe {
    /// The root is at this index (it may be expired: check before use).
    Found(usize),
    /// The root is absent; Robin Hood would insert it at this index, at this probe distance.
    Absent(usize, usize),
    /// The root is absent and every slot is occupied.
    NoRoom,
}

/// The single-owner acker table (see the [module docs](self) for the rules it follows).
///
/// `S` is the slot storage: anything that derefs to `[Slot]` (`[Slot; N]`, `&mut [Slot]`,
/// `Box<[Slot]>`, `Vec<Slot>`); its length is the capacity in roots.
///
/// ```
/// use acker_core::{AckerTable, Decision, Slot};
/// let mut table = AckerTable::new([Slot::EMPTY; 8], 30_000_000_000).unwrap();
/// let (root, e1, e2) = (7, 0xA1, 0xB2);
/// // A bolt's ack may arrive before the spout's init.
/// assert_eq!(table.ack(root, e1), Ok(Decision::Pending));
/// assert_eq!(table.init(root, e1 ^ e2, 3), Ok(Decision::Pending));
/// assert_eq!(table.ack(root, e2), Ok(Decision::Completed { spout_task: 3 }));
/// assert!(table.is_empty());
/// ```
#[derive(Debug)]
pub struct AckerTable<S> {
    slots: S,
    /// Live (unexpired) roots.
    len: usize,
    /// Occupied slots, live or expired-but-not-reclaimed.
    occupied: usize,
    timeout_ns: u64,
    /// `now_ns / timeout_ns` at the last tick.
    clock_epoch: u64,
    /// Internal epoch: advances by `min(clock epochs elapsed, 3)` per tick.
    epoch: u32,
    /// Live entries per stamp, indexed by `stamp % 4` for the three live stamps.
    stamp_counts: [usize; 4],
    sweep_cursor: usize,
}

impl<S: AsRef<[Slot]> + AsMut<[Slot]>> AckerTable<S> {
    /// A table over `storage` (every slot is cleared) with message timeout `message_timeout_ns`
    /// (Storm's `topology.message.timeout.secs`, default 30 s = `30_000_000_000`). The injected
    /// clock starts at 0 ns.
    ///
    /// # Errors
    /// [`ConfigError::ZeroCapacity`] for empty storage, [`ConfigError::CapacityTooLarge`] above
    /// `u32::MAX` slots, [`ConfigError::ZeroTimeout`] for a zero timeout.
    pub fn new(mut storage: S, message_timeout_ns: u64) -> Result<Self, ConfigError> {
        let cap = storage.as_ref().len();
        if cap == 0 {
            return Err(ConfigError::ZeroCapacity);
        }
        if cap > u32::MAX as usize {
            return Err(ConfigError::CapacityTooLarge);
        }
        if message_timeout_ns == 0 {
            return Err(ConfigError::ZeroTimeout);
        }
        storage.as_mut().fill(Slot::EMPTY);
        Ok(Self {
            slots: storage,
            len: 0,
            occupied: 0,
            timeout_ns: message_timeout_ns,
            clock_epoch: 0,
            epoch: 0,
            stamp_counts: [0; 4],
            sweep_cursor: 0,
        })
    }

    /// The number of roots the table can hold (its number of slots).
    #[inline]
    pub fn capacity(&self) -> usize {
        self.slots.as_ref().len()
    }

    /// The number of live roots (entries created and neither decided nor expired).
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no root is live.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The message timeout T in nanoseconds.
    #[inline]
    pub fn message_timeout_ns(&self) -> u64 {
        self.timeout_ns
    }

    /// Bytes of memory the table uses: `20 × capacity` for the slots plus the fixed header.
    pub fn memory_bytes(&self) -> usize {
        core::mem::size_of::<Slot>() * self.capacity() + core::mem::size_of::<Self>()
    }

    /// The live entry of `root`, if any.
    pub fn get(&self, root: RootId) -> Option<EntryView> {
        if root == 0 {
            return None;
        }
        match self.probe(root) {
            Probe::Found(i) => {
                let s = self.slots.as_ref()[i];
                if self.is_expired(s.meta) {
                    return None;
                }
                let meta = s.meta;
                Some(EntryView {
                    ack_val: s.ack_val,
                    spout_task: (meta & HAS_TASK != 0).then_some((meta & TASK_MASK) as TaskId),
                    failed: meta & FAILED != 0,
                })
            }
            _ => None,
        }
    }

    /// Applies one acker message (dispatches to [`init`](Self::init), [`ack`](Self::ack),
    /// [`fail`](Self::fail) or [`reset_timeout`](Self::reset_timeout)).
    ///
    /// # Errors
    /// As the operation it dispatches to.
    #[inline]
    pub fn apply(&mut self, message: AckerMessage) -> Result<Decision, TableError> {
        match message {
            AckerMessage::Init {
                root,
                xor,
                spout_task,
            } => self.init(root, xor, spout_task),
            AckerMessage::Ack { root, xor } => self.ack(root, xor),
            AckerMessage::Fail { root } => self.fail(root),
            AckerMessage::ResetTimeout { root } => self.reset_timeout(root),
        }
    }

    /// The spout's init: XORs `xor` (the XOR of the edge ids of every copy emitted; 0 when the
    /// tuple went nowhere) and records `spout_task`. Decides at once if acks already brought the
    /// ack val to `xor`, or a fail arrived first.
    ///
    /// # Errors
    /// [`TableError::ZeroRoot`], [`TableError::Full`] (unknown root, no free slot),
    /// [`TableError::DuplicateInit`] (spout task already recorded). Nothing changes on error.
    pub fn init(
        &mut self,
        root: RootId,
        xor: u64,
        spout_task: TaskId,
    ) -> Result<Decision, TableError> {
        let i = match self.find_or_create(root, false)? {
            (i, false) => {
                if self.slots.as_ref()[i].meta & HAS_TASK != 0 {
                    return Err(TableError::DuplicateInit);
                }
                i
            }
            (i, true) => i,
        };
        let slot = &mut self.slots.as_mut()[i];
        slot.ack_val ^= xor;
        slot.meta = (slot.meta & !TASK_MASK) | HAS_TASK | spout_task as u32;
        Ok(self.decide(i, false))
    }

    /// A bolt's ack: XORs `xor` into the root's ack val (creating the entry if the root is
    /// unknown). Completes the tree when the ack val reaches 0 and the spout task is known.
    ///
    /// # Errors
    /// [`TableError::ZeroRoot`], [`TableError::Full`]. Nothing changes on error.
    #[inline]
    pub fn ack(&mut self, root: RootId, xor: u64) -> Result<Decision, TableError> {
        let (i, _) = self.find_or_create(root, false)?;
        let slot = &mut self.slots.as_mut()[i];
        slot.ack_val ^= xor;
        Ok(self.decide(i, false))
    }

    /// A bolt's fail: marks the tree failed and restarts its expiry (as Storm's acker `put`s it).
    /// The spout hears `Failed` once the spout task is known, unless the ack val is 0 (an ack wins).
    ///
    /// # Errors
    /// [`TableError::ZeroRoot`], [`TableError::Full`]. Nothing changes on error.
    pub fn fail(&mut self, root: RootId) -> Result<Decision, TableError> {
        let (i, _) = self.find_or_create(root, true)?;
        self.slots.as_mut()[i].meta |= FAILED;
        Ok(self.decide(i, false))
    }

    /// A bolt's reset-timeout: restarts the root's expiry and, once the spout task is known and
    /// the tree neither completed nor failed, asks to forward [`Decision::Reset`] to the spout.
    ///
    /// # Errors
    /// [`TableError::ZeroRoot`], [`TableError::Full`]. Nothing changes on error.
    pub fn reset_timeout(&mut self, root: RootId) -> Result<Decision, TableError> {
        let (i, _) = self.find_or_create(root, true)?;
        Ok(self.decide(i, true))
    }

    /// Advances the table's clock to `now_ns` (the injected clock; a value earlier than the last
    /// tick is ignored). Each time the clock crosses a multiple of the message timeout the oldest
    /// live generation expires at once (its roots leave [`len`](Self::len)); then at most
    /// `capacity / 64` slots are swept to reclaim expired entries. Expiry is silent: no decision
    /// is returned, as in Storm, where the spout times the tuple out itself.
    pub fn tick(&mut self, now_ns: u64) {
        let clock_epoch = now_ns / self.timeout_ns;
        if clock_epoch > self.clock_epoch {
            let steps = (clock_epoch - self.clock_epoch).min(EXPIRY_EPOCHS as u64) as u32;
            self.clock_epoch = clock_epoch;
            for _ in 0..steps {
                // Stamp `epoch - 2` becomes 3 epochs old.
                let expiring = (self.epoch.wrapping_sub(EXPIRY_EPOCHS - 1) % 4) as usize;
                self.len -= self.stamp_counts[expiring];
                self.stamp_counts[expiring] = 0;
                self.epoch = self.epoch.wrapping_add(1);
            }
        }
        self.sweep(self.capacity().div_ceil(SWEEP_FRACTION));
    }

    // ---- internals ----------------------------------------------------------------------------

    #[inline]
    fn stamp(&self) -> u32 {
        self.epoch & STAMP_MASK
    }

    #[inline]
    fn is_expired(&self, meta: u32) -> bool {
        let stamp = meta >> STAMP_SHIFT;
        (self.stamp().wrapping_sub(stamp) & STAMP_MASK) >= EXPIRY_EPOCHS
    }

    #[inline]
    fn home(&self, root: RootId) -> usize {
        reduce(root, self.capacity())
    }

    #[inline]
    fn next(&self, i: usize) -> usize {
        let j = i + 1;
        if j == self.capacity() {
            0
        } else {
            j
        }
    }

    /// Probe distance of the root stored at `i`.
    #[inline]
    fn dist(&self, root: RootId, i: usize) -> usize {
        let h = self.home(root);
        if i >= h {
            i - h
        } else {
            i + self.capacity() - h
        }
    }

    fn probe(&self, root: RootId) -> Probe {
        let slots = self.slots.as_ref();
        let cap = slots.len();
        let mut i = self.home(root);
        let mut d = 0;
        while d < cap {
            let r = slots[i].root;
            if r == root {
                return Probe::Found(i);
            }
            if r == 0 {
                return Probe::Absent(i, d);
            }
            if self.dist(r, i) < d {
                return Probe::Absent(i, d);
            }
            i = self.next(i);
            d += 1;
        }
        Probe::NoRoom
    }

    /// The live entry of `root`, created (ack val 0, no spout task, stamped now) if absent or
    /// expired. With `restamp`, an existing entry is (re)inserted: its expiry restarts.
    /// Returns the index and whether it was created.
    #[inline]
    fn find_or_create(&mut self, root: RootId, restamp: bool) -> Result<(usize, bool), TableError> {
        if root == 0 {
            return Err(TableError::ZeroRoot);
        }
        match self.probe(root) {
            Probe::Found(i) => {
                let meta = self.slots.as_ref()[i].meta;
                if self.is_expired(meta) {
                    // The old entry vanished at its expiry; a new one takes its place.
                    if self.len == self.capacity() {
                        return Err(TableError::Full);
                    }
                    self.slots.as_mut()[i] = self.fresh(root);
                    self.count_new();
                    return Ok((i, true));
                }
                if restamp {
                    let old = (meta >> STAMP_SHIFT) as usize % 4;
                    self.stamp_counts[old] -= 1;
                    self.stamp_counts[self.stamp() as usize % 4] += 1;
                    let s = &mut self.slots.as_mut()[i];
                    s.meta = (meta & !(STAMP_MASK << STAMP_SHIFT))
                        | (self.epoch & STAMP_MASK) << STAMP_SHIFT;
                }
                Ok((i, false))
            }
            Probe::Absent(i, d) => {
                if self.len == self.capacity() {
                    return Err(TableError::Full);
                }
                let i = if self.occupied == self.capacity() {
                    // Every slot is taken but some hold expired entries: reclaim them all once
                    // (at most one full pass per epoch, as only a tick makes entries expire).
                    self.reclaim_all();
                    match self.probe(root) {
                        Probe::Absent(i, d) => self.insert_at(i, d, root),
                        _ => unreachable_absent(),
                    }
                } else {
                    self.insert_at(i, d, root)
                };
                self.count_new();
                Ok((i, true))
            }
            Probe::NoRoom => {
                if self.len == self.capacity() {
                    return Err(TableError::Full);
                }
                self.reclaim_all();
                let i = match self.probe(root) {
                    Probe::Absent(i, d) => self.insert_at(i, d, root),
                    _ => unreachable_absent(),
                };
                self.count_new();
                Ok((i, true))
            }
        }
    }

    #[inline]
    fn fresh(&self, root: RootId) -> Slot {
        Slot {
            root,
            ack_val: 0,
            meta: self.stamp() << STAMP_SHIFT,
        }
    }

    #[inline]
    fn count_new(&mut self) {
        self.len += 1;
        self.stamp_counts[self.stamp() as usize % 4] += 1;
    }

    /// Robin Hood insert of a fresh entry for `root` at probe position `i` (distance `d`).
    /// Returns the index where `root` landed.
    fn insert_at(&mut self, i: usize, d: usize, root: RootId) -> usize {
        let _ = d;
        let mut carry = self.fresh(root);
        let landed = i;
        let mut i = i;
        loop {
            let resident = self.slots.as_ref()[i];
            if resident.root == 0 {
                self.slots.as_mut()[i] = carry;
                self.occupied += 1;
                return landed;
            }
            if i != landed && self.dist(resident.root, i) >= self.dist(carry.root, i) {
                i = self.next(i);
                continue;
            }
            // Displace the resident (it is poorer-or-equal than the carried entry).
            self.slots.as_mut()[i] = carry;
            if self.is_expired(resident.meta) {
                // An expired entry on the move is dropped instead of being carried on: its slot
                // is reused and it was already out of `len`.
                return landed;
            }
            carry = resident;
            i = self.next(i);
        }
    }

    /// Removes the entry at `i` by backward shift. Expired entries that the shift moves are
    /// removed too, so an entry can never slip past the sweep cursor unchecked.
    fn remove_at(&mut self, i: usize) {
        let mut i = i;
        loop {
            self.occupied -= 1;
            let mut expired_moved = None;
            let mut hole = i;
            loop {
                let j = self.next(hole);
                let s = self.slots.as_ref()[j];
                if s.root == 0 || self.dist(s.root, j) == 0 {
                    self.slots.as_mut()[hole] = Slot::EMPTY;
                    break;
                }
                self.slots.as_mut()[hole] = s;
                if expired_moved.is_none() && self.is_expired(s.meta) {
                    expired_moved = Some(hole);
                }
                hole = j;
            }
            match expired_moved {
                Some(p) => i = p,
                None => return,
            }
        }
    }

    /// Removes a live entry that was decided.
    #[inline]
    fn remove_live(&mut self, i: usize) {
        let meta = self.slots.as_ref()[i].meta;
        self.stamp_counts[(meta >> STAMP_SHIFT) as usize % 4] -= 1;
        self.len -= 1;
        self.remove_at(i);
    }

    /// Rule 3 of the acker, applied to the entry at `i` after a message.
    #[inline]
    fn decide(&mut self, i: usize, reset: bool) -> Decision {
        let s = self.slots.as_ref()[i];
        let meta = s.meta;
        if meta & HAS_TASK == 0 {
            return Decision::Pending;
        }
        let spout_task = (meta & TASK_MASK) as TaskId;
        if s.ack_val == 0 {
            self.remove_live(i);
            Decision::Completed { spout_task }
        } else if meta & FAILED != 0 {
            self.remove_live(i);
            Decision::Failed { spout_task }
        } else if reset {
            Decision::Reset { spout_task }
        } else {
            Decision::Pending
        }
    }

    /// Reclaims expired entries from `budget` slots, continuing where the last sweep stopped.
    fn sweep(&mut self, budget: usize) {
        if self.occupied == self.len {
            return; // nothing expired anywhere
        }
        for _ in 0..budget {
            let c = self.sweep_cursor;
            let s = self.slots.as_ref()[c];
            if s.root != 0 && self.is_expired(s.meta) {
                // The entry shifted into `c` was checked by `remove_at` (expired ones are
                // removed on the move), so the cursor may advance.
                self.remove_at(c);
            }
            self.sweep_cursor = self.next(c);
        }
    }

    /// Reclaims every expired entry (one full pass).
    fn reclaim_all(&mut self) {
        let cap = self.capacity();
        let saved = self.sweep_cursor;
        self.sweep_cursor = 0;
        self.sweep(cap);
        self.sweep_cursor = saved;
    }
}

#[cold]
fn unreachable_absent() -> ! {
    // After `reclaim_all`, `occupied == len < capacity`, so a free slot exists and the probe of an
    // absent root ends at one. Reaching here would be a bug in this module, not caller input.
    panic!("acker table invariant broken: no free slot after reclaiming expired entries")
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: u64 = 1_000;

    #[test]
    fn slot_is_exactly_20_bytes() {
        assert_eq!(core::mem::size_of::<Slot>(), 20);
    }

    #[test]
    fn memory_is_20_per_root_plus_header() {
        let table = AckerTable::new([Slot::EMPTY; 100], T).unwrap();
        assert_eq!(
            table.memory_bytes(),
            20 * 100 + core::mem::size_of::<AckerTable<[Slot; 100]>>()
        );
    }

    #[test]
    fn sweep_reclaims_expired_entries_physically() {
        let mut table = AckerTable::new([Slot::EMPTY; 128], T).unwrap();
        for r in 1..=100u64 {
            table.ack(r, r).unwrap();
        }
        assert_eq!(table.len(), 100);
        table.tick(3 * T);
        assert_eq!(table.len(), 0);
        assert!(table.occupied < 100);
        for k in 0..64 {
            table.tick(3 * T + k);
        }
        assert_eq!(table.occupied, 0);
    }

    #[test]
    fn full_table_reuses_expired_slots() {
        let mut table = AckerTable::new([Slot::EMPTY; 16], T).unwrap();
        for r in 1..=16u64 {
            table.ack(r, 1).unwrap();
        }
        assert_eq!(table.ack(99, 1), Err(TableError::Full));
        table.fail(5).unwrap(); // restamped: survives one epoch longer
        table.tick(T);
        table.fail(6).unwrap();
        table.tick(3 * T);
        // Stamps 0 expired; 5 and 6 were restamped at 0 and 1: only 6 lives.
        assert_eq!(table.len(), 1);
        for r in 100..115u64 {
            assert_eq!(table.ack(r, 1), Ok(Decision::Pending));
        }
        assert_eq!(table.len(), 16);
        assert_eq!(table.ack(200, 1), Err(TableError::Full));
        assert!(table.get(6).unwrap().failed);
    }
}
