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
//! Bucketed cuckoo hashing over storage the caller provides (`[Slot; N]`, `&mut [Slot]`, a
//! `Box<[Slot]>`...). The slots form buckets of 4 (80 bytes; the last may be shorter); a root lives
//! in one of two buckets, both taken from one fixed 128-bit multiply-shift hash of its id (the
//! first from the high half, the second from the fraction the first discards), so a lookup
//! compares at most 8 root ids (branch-free: the fast paths scan both buckets and choose the slot
//! with conditional moves) and a removal just frees the slot. Acks and inits take
//! fast paths inlined into [`AckerTable::apply`] and [`AckerTable::apply_batch`]; fails,
//! reset-timeouts and every unusual case go through out-of-line general paths. A new root takes a free
//! slot of its first bucket, else of its second, else moves a resident of one of them to that
//! resident's other bucket (searched two moves deep); when even that fails (only in a nearly full
//! table) it takes the first free slot from its second bucket on and is counted as an overflow
//! entry; while any lives, a lookup that misses both buckets scans on past the second bucket as
//! far as the farthest overflow entry lies ([`AckerTable::probe_len`]: a few slots at load 0.8,
//! up to the whole table near 100 %). So the table still fills to 100% of its slots, but above
//! ~90% load creating roots slows down: size it for the load you expect (0.8 is the benchmarked
//! load).
//! Each [`Slot`] is 20 bytes: root id (8, 0 = free), ack val (8), and 4 bytes holding the spout
//! task (16 bits), two flags (spout task known, failed) and a 14-bit timeout stamp. Memory is
//! `20 × capacity` plus `size_of::<AckerTable<S>>()`, with no hidden allocation.
//! [`AckerTable::apply_batch`] applies a slice of messages, reading ahead the buckets of later
//! messages so that cache misses on large tables overlap.
//!
//! Expiry is O(1) amortised per entry: a tick subtracts the expiring generation's count from the
//! length at once (so [`AckerTable::len`] is exact immediately) and then reclaims at most
//! `capacity / 64` slots' worth of expired entries ([`SWEEP_FRACTION`]); expired entries left
//! behind are invisible to every operation, never move, and their slots are reused by new roots of
//! the same buckets or reclaimed by later sweeps.

use crate::ids::{RootId, TaskId};
use crate::message::{AckerMessage, Decision};
use crate::routing::{reduce, FIB};

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
    /// The three arrays of a [`SharedAckerTable`](crate::SharedAckerTable)'s storage differ in
    /// length (their lengths).
    LengthMismatch(crate::shared::SlotsLengthMismatch),
}

impl ConfigError {
    /// The checks every acker table's constructor makes (single-owner and shared alike): at least
    /// one slot, at most `u32::MAX` slots, a non-zero message timeout.
    pub(crate) fn check(capacity: usize, message_timeout_ns: u64) -> Result<(), ConfigError> {
        if capacity == 0 {
            Err(ConfigError::ZeroCapacity)
        } else if capacity > u32::MAX as usize {
            Err(ConfigError::CapacityTooLarge)
        } else if message_timeout_ns == 0 {
            Err(ConfigError::ZeroTimeout)
        } else {
            Ok(())
        }
    }
}

impl core::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ConfigError::ZeroCapacity => f.write_str("acker table storage has no slot"),
            ConfigError::CapacityTooLarge => {
                f.write_str("acker table storage has more than u32::MAX slots")
            }
            ConfigError::ZeroTimeout => f.write_str("message timeout must be at least 1 ns"),
            ConfigError::LengthMismatch(lengths) => lengths.fmt(f),
        }
    }
}

/// Errors of the acker table's operations. Each leaves the table exactly as it was.
///
/// `repr(u16)`: in a `Result<Decision, TableError>` the error then fills the same two bytes
/// as a decision's spout task, so a result is one 32-bit word whatever the variant (as a byte,
/// the error shared one of the spout task's bytes, and every join of an ack's paths
/// reassembled the word byte by byte: `benches/RESULTS.md` Set S5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
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
    /// The root is absent; it would be created at this index (a free slot, or an expired entry's,
    /// in one of its buckets).
    Absent(usize),
    /// The root is absent and both its buckets hold live roots.
    BucketsFull(usize, usize),
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
    /// Entries outside both of their buckets (only in a nearly full table).
    overflow: usize,
    /// While `overflow > 0`: the farthest any overflow entry placed since `overflow` was last 0
    /// lies past the start of its second bucket, in slots (a lookup that misses both buckets
    /// scans that far past the second bucket's start); 0 when `overflow` is 0.
    overflow_reach: usize,
    /// `ceil(capacity / BUCKET)`.
    buckets: usize,
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
        ConfigError::check(cap, message_timeout_ns)?;
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
            overflow: 0,
            overflow_reach: 0,
            buckets: cap.div_ceil(BUCKET),
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

    /// Entries placed outside both of their buckets because the table was nearly full (counted
    /// as the shared table's [`overflow_len`](crate::SharedAckerTable::overflow_len) is). While it
    /// is above 0, a lookup that misses both buckets scans on past its second bucket as far as the
    /// farthest of those entries lies ([`probe_len`](Self::probe_len)); it returns to 0 as those
    /// entries are decided, expire and are swept, or their slots are reused.
    #[inline]
    pub fn overflow_len(&self) -> usize {
        self.overflow
    }

    /// How many slots a lookup of a root absent from the table reads at most: its two buckets
    /// (8 slots), plus, while overflow entries live ([`overflow_len`](Self::overflow_len) above
    /// 0), the slots from its second bucket's start to as far past it as the farthest overflow
    /// entry placed since the count was last 0 lies (an overflow entry takes the first free slot
    /// from there). At the benchmarked load of 0.8 that is a few slots; in a table filled close to
    /// 100 % it can reach the whole table (`capacity`). As the shared table's
    /// [`probe_len`](crate::SharedAckerTable::probe_len) does, it tells a caller why creating
    /// roots got slow, and when it stops being so.
    #[inline]
    pub fn probe_len(&self) -> usize {
        let buckets = (2 * BUCKET).min(self.capacity());
        if self.overflow == 0 {
            buckets
        } else {
            (buckets + self.overflow_reach + 1).min(self.capacity())
        }
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
    #[inline(always)]
    pub fn apply(&mut self, message: AckerMessage) -> Result<Decision, TableError> {
        let buckets = buckets_of(message.root(), self.buckets);
        self.apply_in(message, buckets)
    }

    /// [`apply`](Self::apply) with the root's two buckets already computed (`buckets_of`).
    #[inline(always)]
    fn apply_in(
        &mut self,
        message: AckerMessage,
        buckets: (usize, usize),
    ) -> Result<Decision, TableError> {
        // Acks and inits (nearly every message) take their inlined fast paths; the rest is out of
        // line so that a caller's message loop stays small.
        match message {
            AckerMessage::Ack { root, xor } => match self.ack_fast(root, xor, buckets) {
                Some(decision) => Ok(decision),
                None => self.ack_slow(root, xor),
            },
            AckerMessage::Init {
                root,
                xor,
                spout_task,
            } => {
                if xor != 0 && self.create_fast(root, xor, spout_task, buckets) {
                    Ok(Decision::Pending)
                } else {
                    self.init_slow(root, xor, spout_task)
                }
            }
            other => self.apply_rare(other),
        }
    }

    /// [`apply`](Self::apply) for fails and reset-timeouts, out of line.
    #[inline(never)]
    fn apply_rare(&mut self, message: AckerMessage) -> Result<Decision, TableError> {
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
    #[inline(always)]
    pub fn init(
        &mut self,
        root: RootId,
        xor: u64,
        spout_task: TaskId,
    ) -> Result<Decision, TableError> {
        if xor != 0 && self.create_fast(root, xor, spout_task, buckets_of(root, self.buckets)) {
            // A new root in a table with no expired or overflow entries: the common case (an init
            // with xor 0, whose tree completes at once, takes the general path).
            return Ok(Decision::Pending);
        }
        self.init_slow(root, xor, spout_task)
    }

    #[inline(never)]
    fn init_slow(
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
    #[inline(always)]
    pub fn ack(&mut self, root: RootId, xor: u64) -> Result<Decision, TableError> {
        if let Some(decision) = self.ack_fast(root, xor, buckets_of(root, self.buckets)) {
            return Ok(decision);
        }
        self.ack_slow(root, xor)
    }

    /// [`ack`](Self::ack) when `root` is live in one of its two buckets and both are full-width
    /// (the common case); `None` (nothing changed) sends the caller to the general path. Scans
    /// both buckets without branching on where the root is.
    #[inline(always)]
    fn ack_fast(&mut self, root: RootId, xor: u64, (b1, b2): (usize, usize)) -> Option<Decision> {
        if root == 0 {
            // Root 0 would match a free slot.
            return None;
        }
        let slots = self.slots.as_mut();
        // Both buckets are scanned, and the slot chosen with conditional moves: branching on a
        // miss in the first (~30% of acks at load 0.8) mispredicted about once in three acks.
        let i = {
            let (buckets, _) = slots.as_chunks::<BUCKET>();
            let (bucket1, bucket2) = (buckets.get(b1)?, buckets.get(b2)?);
            // (The first bucket's match wins, as in `probe`.)
            let in_second = find_in(bucket2, b2 * BUCKET, usize::MAX, root);
            find_in(bucket1, b1 * BUCKET, in_second, root)
        };
        // Absent (`usize::MAX`) or out of range: the general path.
        let slot = slots.get_mut(i)?;
        let meta = slot.meta;
        // With as many occupied slots as live roots nothing has expired: skip the stamp check.
        if self.occupied != self.len && stamp_expired(self.epoch, meta) {
            return None;
        }
        let ack_val = slot.ack_val ^ xor;
        slot.ack_val = ack_val;
        if meta & HAS_TASK == 0 {
            return Some(Decision::Pending);
        }
        let spout_task = (meta & TASK_MASK) as TaskId;
        let decision = if ack_val == 0 {
            Decision::Completed { spout_task }
        } else if meta & FAILED != 0 {
            Decision::Failed { spout_task }
        } else {
            return Some(Decision::Pending);
        };
        // Decided: the entry leaves the table (found in one of its own buckets, it is no
        // overflow entry).
        *slot = Slot::EMPTY;
        self.stamp_counts[(meta >> STAMP_SHIFT) as usize % 4] -= 1;
        self.len -= 1;
        self.occupied -= 1;
        Some(decision)
    }

    #[inline(never)]
    fn ack_slow(&mut self, root: RootId, xor: u64) -> Result<Decision, TableError> {
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

    /// Applies `messages` in order, handing each result to `sink` with the message's index:
    /// exactly what calling [`apply`](Self::apply) on each would return, in the same order,
    /// leaving the table in the same state. Meant for tables larger than the CPU caches: while
    /// it applies message `i`, it already hashes message `i + d` and prefetches both its buckets
    /// (an ack and an init both scan both), so that several cache misses
    /// are in flight at once instead of one after the other; the hashed buckets wait in a small
    /// ring on the stack until their message's turn. The distance `d` is 8 messages, 16 in tables
    /// of [`FAR_READ_AHEAD_MIN_SLOTS`] slots or more (whose misses mostly go to memory). Tables
    /// under [`BATCH_READ_AHEAD_MIN_SLOTS`] slots (which stay in the core's cache) are applied one
    /// message at a time, inlined.
    ///
    /// ```
    /// use acker_core::{AckerMessage, AckerTable, Decision, Slot};
    /// let mut table = AckerTable::new([Slot::EMPTY; 8], 30_000_000_000).unwrap();
    /// let msgs = [
    ///     AckerMessage::Init { root: 7, xor: 0xA1, spout_task: 3 },
    ///     AckerMessage::Ack { root: 7, xor: 0xA1 },
    /// ];
    /// let mut decisions = Vec::new();
    /// table.apply_batch(&msgs, |i, r| decisions.push((i, r)));
    /// assert_eq!(decisions, [(0, Ok(Decision::Pending)), (1, Ok(Decision::Completed { spout_task: 3 }))]);
    /// ```
    #[inline]
    pub fn apply_batch<F: FnMut(usize, Result<Decision, TableError>)>(
        &mut self,
        messages: &[AckerMessage],
        sink: F,
    ) {
        let mut sink = sink;
        let nb = self.buckets;
        if self.capacity() < BATCH_READ_AHEAD_MIN_SLOTS {
            for (i, m) in messages.iter().enumerate() {
                sink(i, self.apply_in(*m, buckets_of(m.root(), nb)));
            }
            return;
        }
        // Software pipeline: the buckets of message `i + lookahead` are computed and prefetched
        // while message `i` is applied, and kept in a ring until their turn (hashed once).
        let lookahead = if self.capacity() >= FAR_READ_AHEAD_MIN_SLOTS {
            FAR_LOOKAHEAD
        } else {
            LOOKAHEAD
        };
        const RING: usize = 2 * FAR_LOOKAHEAD;
        let mut ring = [(0usize, 0usize); RING];
        let mut touched = 0u64;
        for (j, m) in messages.iter().enumerate().take(lookahead) {
            let buckets = buckets_of(m.root(), nb);
            touched ^= self.warm_buckets(buckets);
            ring[j % RING] = buckets;
        }
        for (i, m) in messages.iter().enumerate() {
            if let Some(ahead) = messages.get(i + lookahead) {
                let buckets = buckets_of(ahead.root(), nb);
                touched ^= self.warm_buckets(buckets);
                ring[(i + lookahead) % RING] = buckets;
            }
            sink(i, self.apply_in(*m, ring[i % RING]));
        }
        // Keep the reads (where there is no prefetch instruction): they only warm the cache.
        core::hint::black_box(touched);
    }

    /// Brings both buckets of a message's root, `b1` and `b2`, towards the core (see [`warm`]):
    /// an ack and an init both scan both.
    #[inline(always)]
    fn warm_buckets(&self, (b1, b2): (usize, usize)) -> u64 {
        let slots = self.slots.as_ref();
        warm(slots, b1 * BUCKET) ^ warm(slots, b2 * BUCKET)
    }

    /// Asks the CPU to bring both buckets of `root` (where an ack or an init for it reads) into
    /// its cache: for an engine that applies its messages one at a time with
    /// [`apply`](Self::apply) (say, because it must act on each decision before the next
    /// message) and wants the cache misses of a table larger than its caches to overlap, as
    /// [`apply_batch`](Self::apply_batch) does itself: call it for the message a few places
    /// ahead of the one being applied (the runtime's acker executor uses
    /// [`BATCH_LOOKAHEAD`] places in tables of at least [`BATCH_READ_AHEAD_MIN_SLOTS`] slots).
    /// A hint only: nothing is read into the program and the table does not change (on
    /// architectures without a prefetch instruction it reads the two buckets' first slots).
    /// Costs one hash (about 8 instructions) on top of `apply`'s own.
    #[inline]
    pub fn prefetch(&self, root: RootId) {
        core::hint::black_box(self.warm_buckets(buckets_of(root, self.buckets)));
    }

    /// The slots of `root`'s first bucket (where most roots are): for an embedding engine that
    /// runs its own batching and wants to prefetch them a few messages before calling
    /// [`apply`](Self::apply) on a table larger than its caches. The fast paths of an ack and an
    /// init read the root's second bucket too, so prefetching this one alone leaves that miss;
    /// [`apply_batch`](Self::apply_batch) prefetches both itself. Empty for root 0.
    #[inline]
    pub fn first_bucket(&self, root: RootId) -> &[Slot] {
        if root == 0 {
            return &[];
        }
        let (start, end) = self.bucket_range(reduce(root, self.buckets()));
        &self.slots.as_ref()[start..end]
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
        stamp_expired(self.epoch, meta)
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

    /// Slots `start..end` of bucket `b` (the last bucket may be shorter than [`BUCKET`]).
    #[inline]
    fn bucket_range(&self, b: usize) -> (usize, usize) {
        let start = b * BUCKET;
        (start, (start + BUCKET).min(self.capacity()))
    }

    /// Scans bucket `b` for `root` and a free slot (see [`scan_bucket`]), as slot indices.
    #[inline]
    fn scan(&self, b: usize, root: RootId) -> (Option<usize>, Option<usize>) {
        let (start, end) = self.bucket_range(b);
        let bucket = &self.slots.as_ref()[start..end];
        let (found, empty) = match <&[Slot; BUCKET]>::try_from(bucket) {
            Ok(full_width) => scan_bucket(full_width, root),
            Err(_) => scan_bucket(bucket, root),
        };
        (
            (found < BUCKET).then_some(start + found),
            (empty < BUCKET).then_some(start + empty),
        )
    }

    /// The first slot of bucket `b` holding an expired entry.
    fn expired_in(&self, b: usize) -> Option<usize> {
        let (start, end) = self.bucket_range(b);
        self.slots.as_ref()[start..end]
            .iter()
            .position(|s| s.root != 0 && self.is_expired(s.meta))
            .map(|k| start + k)
    }

    /// The slot of `root` among the overflow entries: it can only lie within
    /// `overflow_reach` slots past the start of its second bucket `b2` (an overflow entry takes
    /// the first free slot from there, and never moves), so the scan reads those slots, wrapping
    /// round the table's end, and no more.
    #[cold]
    #[inline(never)]
    fn scan_overflow(&self, root: RootId, b2: usize) -> Option<usize> {
        let slots = self.slots.as_ref();
        let cap = slots.len();
        let (start, _) = self.bucket_range(b2);
        let n = self.overflow_reach.saturating_add(1).min(cap);
        let first = (cap - start).min(n);
        if let Some(k) = slots[start..start + first]
            .iter()
            .position(|s| s.root == root)
        {
            return Some(start + k);
        }
        slots[..n - first].iter().position(|s| s.root == root)
    }

    /// One overflow entry less; the reach resets with the count.
    #[inline]
    fn uncount_overflow(&mut self) {
        self.overflow -= 1;
        if self.overflow == 0 {
            self.overflow_reach = 0;
        }
    }

    /// Whether the entry of `root` at slot `i` lies outside both of its buckets (placed there
    /// when the table was too full for a cuckoo move).
    #[inline]
    fn is_overflow(&self, root: RootId, i: usize) -> bool {
        let (b1, b2) = buckets_of(root, self.buckets());
        let b = i / BUCKET;
        b != b1 && b != b2
    }

    #[inline(always)]
    fn buckets(&self) -> usize {
        self.buckets
    }

    /// Creates `root` as an initialised entry (ack val `xor`, spout task `spout_task`, counted) in
    /// a free slot of one of its full-width buckets when the table holds no expired or overflow
    /// entry and `root` is absent from both buckets (moving one resident to its other bucket when
    /// both are full); `false` (and nothing changed) otherwise.
    #[inline(always)]
    fn create_fast(
        &mut self,
        root: RootId,
        xor: u64,
        spout_task: TaskId,
        (b1, b2): (usize, usize),
    ) -> bool {
        if root == 0 || self.overflow != 0 || self.occupied != self.len {
            return false;
        }
        let stamp = self.epoch & STAMP_MASK;
        let entry = Slot {
            root,
            ack_val: xor,
            meta: stamp << STAMP_SHIFT | HAS_TASK | spout_task as u32,
        };
        let slots = self.slots.as_mut();
        let i = {
            let (buckets, _) = slots.as_chunks::<BUCKET>();
            let (Some(bucket1), Some(bucket2)) = (buckets.get(b1), buckets.get(b2)) else {
                return false;
            };
            if holds(bucket1, root) | holds(bucket2, root) {
                return false;
            }
            // The first free slot of the first bucket, else of the second, chosen with conditional
            // moves over both (one branch, on "both full", instead of one per bucket).
            let free2 = find_in(bucket2, b2 * BUCKET, usize::MAX, 0);
            find_in(bucket1, b1 * BUCKET, free2, 0)
        };
        match slots.get_mut(i) {
            Some(slot) => *slot = entry,
            None => return self.create_moving(entry, b1, b2),
        }
        self.occupied += 1;
        self.len += 1;
        self.stamp_counts[stamp as usize % 4] += 1;
        true
    }

    /// [`create_fast`](Self::create_fast) when both buckets `b1`, `b2` of `entry`'s root (full-width,
    /// every resident live and in one of its own buckets) are full: moves one resident to a free
    /// slot of its other full-width bucket and puts `entry` in its place (one cuckoo move).
    /// `false` (nothing changed) when no resident can move so.
    #[inline(never)]
    fn create_moving(&mut self, entry: Slot, b1: usize, b2: usize) -> bool {
        let nb = self.buckets();
        let slots = self.slots.as_mut();
        for b in [b1, b2] {
            for v in b * BUCKET..(b + 1) * BUCKET {
                let r = slots[v].root;
                let (c1, c2) = buckets_of(r, nb);
                let alt = if c1 == b { c2 } else { c1 };
                if alt == b {
                    continue;
                }
                let Some(Ok(dest)) = slots
                    .get(alt * BUCKET..(alt + 1) * BUCKET)
                    .map(<&[Slot; BUCKET]>::try_from)
                else {
                    continue;
                };
                let (_, empty) = scan_bucket(dest, 0);
                if empty < BUCKET {
                    slots[alt * BUCKET + empty] = slots[v];
                    slots[v] = entry;
                    self.occupied += 1;
                    self.len += 1;
                    self.stamp_counts[(entry.meta >> STAMP_SHIFT) as usize % 4] += 1;
                    return true;
                }
            }
        }
        false
    }

    /// Where the probe for `root` ends: its slot if present (possibly expired), else where it
    /// would be created.
    #[inline]
    fn probe(&self, root: RootId) -> Probe {
        let nb = self.buckets();
        let (b1, b2) = buckets_of(root, nb);
        let (found1, empty1) = self.scan(b1, root);
        if let Some(i) = found1 {
            return Probe::Found(i);
        }
        self.probe_rest(root, b1, b2, empty1)
    }

    /// The probe after a miss in the first bucket `b1`.
    #[inline]
    fn probe_rest(&self, root: RootId, b1: usize, b2: usize, empty1: Option<usize>) -> Probe {
        let (found2, empty2) = if b2 != b1 {
            self.scan(b2, root)
        } else {
            (None, None)
        };
        if let Some(i) = found2 {
            return Probe::Found(i);
        }
        if self.overflow > 0 {
            if let Some(i) = self.scan_overflow(root, b2) {
                return Probe::Found(i);
            }
        }
        if self.occupied != self.len {
            // Reuse an expired entry's slot in the root's own buckets first.
            if let Some(i) = self.expired_in(b1).or_else(|| self.expired_in(b2)) {
                return Probe::Absent(i);
            }
        }
        match empty1.or(empty2) {
            Some(i) => Probe::Absent(i),
            None => Probe::BucketsFull(b1, b2),
        }
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
            Probe::Absent(i) => {
                if self.len == self.capacity() {
                    return Err(TableError::Full);
                }
                self.place(i, root);
                Ok((i, true))
            }
            Probe::BucketsFull(b1, b2) => {
                if self.len == self.capacity() {
                    return Err(TableError::Full);
                }
                Ok((self.insert_displacing(root, b1, b2), true))
            }
        }
    }

    /// Writes a fresh entry for `root` at slot `i`, which is free or holds an expired entry
    /// (already out of `len`, now dropped).
    #[inline]
    fn place(&mut self, i: usize, root: RootId) {
        let old = self.slots.as_ref()[i];
        if old.root == 0 {
            self.occupied += 1;
        } else if self.overflow > 0 && self.is_overflow(old.root, i) {
            self.uncount_overflow();
        }
        self.slots.as_mut()[i] = self.fresh(root);
        self.count_new();
    }

    /// Creates `root` when both its buckets hold live entries: moves an entry of one of them to
    /// a free slot of its other bucket (cuckoo move, searched two moves deep) and takes its slot;
    /// failing that (a nearly full table), takes the first free or expired slot after its second
    /// bucket and counts it as an overflow entry. Needs `len < capacity`. Returns the slot.
    fn insert_displacing(&mut self, root: RootId, b1: usize, b2: usize) -> usize {
        let nb = self.buckets();
        for b in [b1, b2] {
            let (start, end) = self.bucket_range(b);
            // One move: a resident of `b` goes to a free slot of its other bucket.
            for v in start..end {
                let Some(alt) = other_bucket(self.slots.as_ref()[v].root, b, nb) else {
                    continue;
                };
                if let (_, Some(free)) = self.scan(alt, 0) {
                    let slots = self.slots.as_mut();
                    slots[free] = slots[v];
                    self.occupied += 1;
                    self.slots.as_mut()[v] = Slot::EMPTY;
                    self.place_counted_free(v, root);
                    return v;
                }
            }
        }
        for b in [b1, b2] {
            let (start, end) = self.bucket_range(b);
            // Two moves: a resident `w` of `v`'s other bucket makes room for `v`.
            for v in start..end {
                let Some(alt) = other_bucket(self.slots.as_ref()[v].root, b, nb) else {
                    continue;
                };
                let (astart, aend) = self.bucket_range(alt);
                for w in astart..aend {
                    let ws = self.slots.as_ref()[w];
                    // Expired entries never move (the sweep relies on it).
                    if self.is_expired(ws.meta) {
                        continue;
                    }
                    let Some(alt2) = other_bucket(ws.root, alt, nb) else {
                        continue;
                    };
                    if alt2 == b {
                        continue;
                    }
                    if let (_, Some(free)) = self.scan(alt2, 0) {
                        let slots = self.slots.as_mut();
                        slots[free] = slots[w];
                        slots[w] = slots[v];
                        slots[v] = Slot::EMPTY;
                        self.occupied += 1;
                        self.place_counted_free(v, root);
                        return v;
                    }
                }
            }
        }
        // Overflow: any free or expired slot (one exists: `len < capacity`).
        let (start, _) = self.bucket_range(b2);
        let mut i = start;
        for reach in 0..self.capacity() {
            let s = self.slots.as_ref()[i];
            if s.root == 0 || self.is_expired(s.meta) {
                self.place(i, root);
                self.overflow += 1;
                self.overflow_reach = self.overflow_reach.max(reach);
                return i;
            }
            i = self.next(i);
        }
        unreachable_no_room()
    }

    /// [`place`](Self::place) into a slot just emptied by a move (`occupied` already counts it).
    #[inline]
    fn place_counted_free(&mut self, i: usize, root: RootId) {
        self.slots.as_mut()[i] = self.fresh(root);
        self.count_new();
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

    /// Frees slot `i` (nothing ever depends on a slot staying occupied: a root is only ever in
    /// one of its two buckets or, counted in `overflow`, within `overflow_reach` slots past its
    /// second bucket's start).
    #[inline]
    fn remove_at(&mut self, i: usize) {
        if self.overflow > 0 && self.is_overflow(self.slots.as_ref()[i].root, i) {
            self.uncount_overflow();
        }
        self.slots.as_mut()[i] = Slot::EMPTY;
        self.occupied -= 1;
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
    #[inline(always)]
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
    /// Expired entries never move (only live ones are displaced), so one pass over the table
    /// reclaims every entry that had expired when the pass began.
    fn sweep(&mut self, budget: usize) {
        if self.occupied == self.len {
            return; // nothing expired anywhere
        }
        for _ in 0..budget {
            let c = self.sweep_cursor;
            let s = self.slots.as_ref()[c];
            if s.root != 0 && self.is_expired(s.meta) {
                self.remove_at(c);
            }
            self.sweep_cursor = self.next(c);
        }
    }
}

/// Brings the (up to two) cache lines of the bucket starting at slot `start` towards the core.
#[inline(always)]
fn warm(slots: &[Slot], start: usize) -> u64 {
    #[cfg(all(target_arch = "x86_64", not(loom)))]
    {
        prefetch(slots, start, BUCKET);
        0
    }
    #[cfg(not(all(target_arch = "x86_64", not(loom))))]
    {
        slots.get(start).map_or(0, |s| s.root)
            ^ slots.get(start + BUCKET - 1).map_or(0, |s| s.ack_val)
    }
}

#[cold]
fn unreachable_no_room() -> ! {
    // Called only with `len < capacity`: some slot is free or holds an expired entry. Reaching
    // here would be a bug in this module, not caller input.
    panic!("acker table invariant broken: no free slot with len < capacity")
}

/// Asks the CPU to bring `items[start..start + n]` (clamped to `items`) into its cache: the first
/// and last element's cache lines (the first only, for `n` = 1), enough for a run of at most two
/// lines. A hint only; nothing
/// is read into the program. x86_64 only (elsewhere callers read a value instead).
#[cfg(all(target_arch = "x86_64", not(loom)))]
#[inline(always)]
pub(crate) fn prefetch<T>(items: &[T], start: usize, n: usize) {
    use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
    if let Some(first) = items.get(start) {
        // The last element of `items[start..start + n]`, or of `items` when that runs past it.
        let end = start.saturating_add(n.saturating_sub(1));
        if let Some(last) = items.get(end).or(items.last()) {
            let p = core::ptr::from_ref(first).cast::<i8>();
            let last = core::ptr::from_ref(last).cast::<i8>();
            // SAFETY: `_mm_prefetch` is only a cache hint: it never faults (whatever the address),
            // loads no value into the program and writes no memory. Both pointers point into
            // `items` anyway (they come from references to its elements). SSE, which it needs, is part of the x86_64
            // baseline. Measured: 1.44-1.60x on `AckerTable::apply_batch` at W = 1M over plain
            // reads (benches/RESULTS.md, "acker-core-prefetch").
            #[allow(unsafe_code)]
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(p);
                if n > 1 {
                    _mm_prefetch::<_MM_HINT_T0>(last);
                }
            }
        }
    }
}

/// Asks the CPU to bring `items[i]`'s cache line into its cache: a hint only (nothing is read
/// into the program, nothing changes; an index out of range is ignored; off x86_64 it does
/// nothing). For an engine that keeps its own per-root state beside acker-core's and wants its
/// cache misses out of the way ahead of time, as the simulator's oracle does for the root that
/// [`SpoutPending::upcoming_root`](crate::SpoutPending::upcoming_root) names.
#[inline(always)]
pub fn prefetch_hint<T>(items: &[T], i: usize) {
    #[cfg(all(target_arch = "x86_64", not(loom)))]
    prefetch(items, i, 1);
    #[cfg(not(all(target_arch = "x86_64", not(loom))))]
    let _ = (items, i);
}

/// The loop of both tables' `apply_batch`: applies `messages` to `table` in order with `apply`,
/// handing each result to `sink`, and, if `read_ahead`, first calls `touch` (which brings a
/// message's slots towards the core) on the message [`BATCH_LOOKAHEAD`] places ahead. A table
/// under [`BATCH_READ_AHEAD_MIN_SLOTS`] slots stays in the core's cache: reading ahead only costs.
#[inline(always)]
pub(crate) fn apply_reading_ahead<T>(
    table: &mut T,
    messages: &[AckerMessage],
    read_ahead: bool,
    touch: impl Fn(&T, &AckerMessage) -> u64,
    mut apply: impl FnMut(&mut T, AckerMessage) -> Result<Decision, TableError>,
    mut sink: impl FnMut(usize, Result<Decision, TableError>),
) {
    if !read_ahead {
        for (i, m) in messages.iter().enumerate() {
            sink(i, apply(table, *m));
        }
        return;
    }
    let mut touched = 0u64;
    for m in messages.iter().take(BATCH_LOOKAHEAD) {
        touched ^= touch(table, m);
    }
    for (i, m) in messages.iter().enumerate() {
        if let Some(ahead) = messages.get(i + BATCH_LOOKAHEAD) {
            touched ^= touch(table, ahead);
        }
        sink(i, apply(table, *m));
    }
    // Keep the reads (where there is no prefetch instruction): they only warm the cache.
    core::hint::black_box(touched);
}

/// How many messages ahead the shared table's `apply_batch` reads the slots of.
pub const BATCH_LOOKAHEAD: usize = 8;

/// How many messages ahead [`AckerTable::apply_batch`] prefetches the buckets of (both of them).
const LOOKAHEAD: usize = 8;

/// How many messages ahead [`AckerTable::apply_batch`] prefetches in tables of at least
/// [`FAR_READ_AHEAD_MIN_SLOTS`] slots. Measured (`benches/RESULTS.md`, ninth sitting): at W = 1M
/// (25 MB of slots) 16 ran 16 % faster than 8 (8 of 8 alternated pairs), at W = 100k (2.5 MB)
/// 3 % slower (4 of 4), 4 and 12 no better than 8 at 1M.
const FAR_LOOKAHEAD: usize = 16;

/// [`AckerTable::apply_batch`] reads 16 messages ahead (not 8) in tables of at least this
/// many slots (8 MiB of slots, between the 2.5 MB table where 8 is better and the 25 MB one where
/// 16 is; not measured in between).
pub const FAR_READ_AHEAD_MIN_SLOTS: usize = (8 << 20) / 20;

/// [`AckerTable::apply_batch`] reads ahead only in tables of at least this many slots (1 MiB of
/// slots, the L2 cache of one core of the benchmark machine); smaller ones are applied one message
/// at a time.
pub const BATCH_READ_AHEAD_MIN_SLOTS: usize = (1 << 20) / 20;

/// Slots per bucket: a root lives in one of two buckets of 4 slots (80 bytes).
const BUCKET: usize = 4;

/// The two buckets of `root` among `nb`: the first by the table's Fibonacci hash ([`reduce`]), the
/// second from the low half of the same 128-bit product (multiply-shift range reduction of the
/// fraction the first one discards), so both come from one multiplication and a second one.
/// When they coincide (about one root in `nb`) the second is the next bucket, wrapping; only a
/// one-bucket table gives a root a single bucket.
#[inline(always)]
fn buckets_of(root: RootId, nb: usize) -> (usize, usize) {
    let p = root.wrapping_mul(FIB) as u128 * nb as u128;
    let b1 = (p >> 64) as usize;
    let b2 = ((p as u64 as u128 * nb as u128) >> 64) as usize;
    if b2 != b1 {
        (b1, b2)
    } else if b1 + 1 < nb {
        (b1, b1 + 1)
    } else {
        (b1, 0)
    }
}

/// The second bucket of `root` in the shared table's layout, whose first is `b1`: an independent
/// mix (the next bucket when they coincide; the same one when `nb == 1`).
#[inline]
pub(crate) fn second_bucket(root: RootId, b1: usize, nb: usize) -> usize {
    let h = (root ^ (root >> 31)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let b2 = (((h ^ (h >> 29)) as u128 * nb as u128) >> 64) as usize;
    if b2 == b1 && nb > 1 {
        if b1 + 1 == nb {
            0
        } else {
            b1 + 1
        }
    } else {
        b2
    }
}

/// The bucket of `root` other than `b`, when `b` is one of its two distinct buckets (`None` for an
/// overflow entry sitting in `b`, or a one-bucket table).
#[inline]
fn other_bucket(root: RootId, b: usize, nb: usize) -> Option<usize> {
    let (b1, b2) = buckets_of(root, nb);
    if b1 == b2 {
        None
    } else if b1 == b {
        Some(b2)
    } else if b2 == b {
        Some(b1)
    } else {
        None
    }
}

/// Whether an entry with meta word `meta` has expired when the table's epoch is `epoch`.
#[inline(always)]
fn stamp_expired(epoch: u32, meta: u32) -> bool {
    let stamp = meta >> STAMP_SHIFT;
    (epoch.wrapping_sub(stamp) & STAMP_MASK) >= EXPIRY_EPOCHS
}

/// The slot index of the first slot holding `root` in `bucket` (whose first slot is `start`), else
/// `none`; branch-free (conditional moves).
#[inline(always)]
fn find_in(bucket: &[Slot; BUCKET], start: usize, none: usize, root: RootId) -> usize {
    let mut i = none;
    for (k, s) in bucket.iter().enumerate().rev() {
        i = core::hint::select_unpredictable(s.root == root, start + k, i);
    }
    i
}

/// Whether `root` is in the bucket (branch-free).
#[inline(always)]
fn holds(bucket: &[Slot; BUCKET], root: RootId) -> bool {
    bucket.iter().fold(false, |any, s| any | (s.root == root))
}

/// Scans one bucket for `root` and a free slot: `(index of root, index of the first free slot)`,
/// each `BUCKET` when absent. Branch-free over the bucket (a full-width bucket is unrolled).
#[inline(always)]
fn scan_bucket<B: AsRef<[Slot]> + ?Sized>(bucket: &B, root: RootId) -> (usize, usize) {
    let mut found = BUCKET;
    let mut empty = BUCKET;
    for (k, s) in bucket.as_ref().iter().enumerate().rev() {
        let r = s.root;
        found = if r == root { k } else { found };
        empty = if r == 0 { k } else { empty };
    }
    (found, empty)
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: u64 = 1_000;

    /// The capacity bound is inclusive: exactly `u32::MAX` slots is allowed (slot indices are
    /// `u32`), one more is `CapacityTooLarge`. Checked on the rule itself, because a table of
    /// `u32::MAX` slots (80 GB) cannot be built in a test.
    #[test]
    fn capacity_bound_is_u32_max_inclusive() {
        assert_eq!(ConfigError::check(u32::MAX as usize, T), Ok(()));
        #[cfg(target_pointer_width = "64")]
        assert_eq!(
            ConfigError::check(u32::MAX as usize + 1, T),
            Err(ConfigError::CapacityTooLarge)
        );
        assert_eq!(ConfigError::check(1, T), Ok(()));
        assert_eq!(ConfigError::check(0, T), Err(ConfigError::ZeroCapacity));
        assert_eq!(ConfigError::check(1, 0), Err(ConfigError::ZeroTimeout));
    }

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

    /// Root 0 is refused by every operation even when both of its buckets are full, so no
    /// path can store it by moving a resident away (fuzz/README, acker-core shard 2/40: the
    /// fast create with its zero-root guard inverted stored root 0 by a cuckoo move exactly
    /// when buckets 0 and 1 were full of residents that could move, which no test reached).
    #[test]
    fn root_0_is_refused_when_its_buckets_are_full_of_movable_residents() {
        let mut table = AckerTable::new([Slot::EMPTY; 64], T).unwrap();
        let nb = table.buckets();
        let (z1, z2) = buckets_of(0, nb);
        assert_eq!((z1, z2), (0, 1));
        // Four residents whose first bucket is 0 and four whose first is 1, each with a
        // second bucket elsewhere (so a cuckoo move could make room).
        let mut residents = [0u64; 8];
        let mut counts = [0usize; 2];
        let mut r = 1u64;
        while counts != [4, 4] {
            let (b1, b2) = buckets_of(r, nb);
            if b1 < 2 && b2 >= 2 && counts[b1] < 4 {
                residents[b1 * 4 + counts[b1]] = r;
                counts[b1] += 1;
            }
            r += 1;
        }
        for (k, &root) in residents.iter().enumerate() {
            assert_eq!(table.init(root, k as u64 + 1, 3), Ok(Decision::Pending));
        }
        let full = |t: &AckerTable<[Slot; 64]>, b: usize| {
            t.slots[b * BUCKET..(b + 1) * BUCKET]
                .iter()
                .all(|s| s.root != 0)
        };
        assert!(full(&table, 0) && full(&table, 1), "buckets 0 and 1 full");
        assert_eq!(table.init(0, 5, 1), Err(TableError::ZeroRoot));
        assert_eq!(table.ack(0, 5), Err(TableError::ZeroRoot));
        assert_eq!(table.fail(0), Err(TableError::ZeroRoot));
        assert_eq!(table.reset_timeout(0), Err(TableError::ZeroRoot));
        let init0 = AckerMessage::Init {
            root: 0,
            xor: 5,
            spout_task: 1,
        };
        assert_eq!(table.apply(init0), Err(TableError::ZeroRoot));
        assert_eq!(table.len(), 8);
        assert_eq!(table.get(0), None);
        for (k, &root) in residents.iter().enumerate() {
            assert_eq!(table.get(root).map(|e| e.ack_val), Some(k as u64 + 1));
        }
    }

    /// The shared table's second bucket is always inside the table and, in a table of two buckets
    /// or more, never its first (the next one when the two choices coincide, as documented): so
    /// every root has two buckets of slots. Over the first bucket the shared table uses
    /// (`reduce`), for 30,000 roots of three patterns, in tables of 1 to 1,250 buckets.
    /// (Mutation campaign: `second_bucket` returning the first bucket for the roots whose choices
    /// coincide kept every decision and only overflowed earlier; one past the last, or before the
    /// first, indexed outside the table.)
    #[test]
    fn the_second_bucket_is_another_bucket_of_the_table() {
        let patterns: [fn(u64) -> RootId; 3] = [
            |k| k + 1,
            |k| (k + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            |k| ((k + 1).wrapping_mul(0xD1B5_4A32_D192_ED03) >> 34) | 1,
        ];
        for nb in [1usize, 2, 3, 8, 9, 10, 125, 1_250] {
            for root in patterns.iter().flat_map(|p| (0..10_000).map(p)) {
                let b1 = reduce(root, nb);
                let b2 = second_bucket(root, b1, nb);
                assert!(b2 < nb, "root {root:#x}, {nb} buckets: second bucket {b2}");
                if nb > 1 {
                    assert_ne!(b2, b1, "root {root:#x}, {nb} buckets");
                }
            }
        }
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
    fn fills_to_every_slot_and_empties_again() {
        // 1000 slots (250 buckets) filled to the last slot: cuckoo moves, then overflow entries.
        let mut table = AckerTable::new([Slot::EMPTY; 1000], T).unwrap();
        let root = |k: u64| k.wrapping_mul(0x2545_F491_4F6C_DD1D) | 1;
        for k in 0..1000u64 {
            assert_eq!(
                table.init(root(k), k + 1, 2),
                Ok(Decision::Pending),
                "root {k}"
            );
        }
        assert_eq!(table.len(), 1000);
        assert!(table.overflow > 0 && table.probe_len() == 8 + table.overflow_reach + 1);
        assert_eq!(table.init(root(1000), 1, 2), Err(TableError::Full));
        for k in 0..1000u64 {
            assert_eq!(table.get(root(k)).unwrap().ack_val, k + 1);
        }
        for k in (0..1000u64).rev() {
            assert_eq!(
                table.ack(root(k), k + 1),
                Ok(Decision::Completed { spout_task: 2 })
            );
            assert_eq!(table.get(root(k)), None);
        }
        assert!(table.is_empty());
        assert_eq!((table.occupied, table.overflow), (0, 0));
        assert_eq!((table.overflow_reach, table.probe_len()), (0, 8));
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
