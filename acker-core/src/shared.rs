//! The lock-free shared acker table.
//!
//! [`SharedAckerTable`] follows exactly the rules of the single-owner [`AckerTable`]
//! (see [`crate::table`]: Storm 2.x's acker, rules 1–6), but every operation takes `&self` and may
//! be called from any number of threads at once, so an engine whose threads ack tuples directly
//! does not have to route each message to one owner thread.
//!
//! ## Layout: still 20 bytes a root
//!
//! A 20-byte struct of atomics cannot keep its 8-byte atomics aligned, so the storage is a
//! structure of arrays, provided by the caller through [`SharedStorage`] (usually a
//! [`SharedSlots`]): for slot `i`, `roots[i]` (8 bytes), `ack_vals[i]` (8 bytes) and `metas[i]`
//! (4 bytes). Total memory is `20 × capacity` plus the fixed table header
//! ([`SharedAckerTable::memory_bytes`]); nothing is ever allocated.
//!
//! The 32-bit meta word holds everything that must change atomically together:
//!
//! | bits | field |
//! | --- | --- |
//! | 0–15 | spout task |
//! | 16 | spout task known (the init has arrived) |
//! | 17 | failed |
//! | 18 | init claimed (an init is applying its XOR; a second init is a [`TableError::DuplicateInit`]) |
//! | 19–21 | slot state: free, reserved, inserting, live, dead |
//! | 22–25 | pins: threads currently inside an operation on this entry (at most 15) |
//! | 26–31 | timeout stamp (the table epoch modulo 64 at the last (re)insertion) |
//!
//! ## How it stays correct without locks
//!
//! * **Pins keep a slot from being reused under a thread's feet.** A thread XORs into
//!   `ack_vals[i]` only while it holds a pin on slot `i`, taken by a CAS on the meta word that
//!   succeeds only while the slot is inserting or live; it then checks `roots[i]` (which cannot
//!   change while the slot is pinned) and backs out if the slot holds another root. A decided or
//!   expired entry becomes *dead*, and the slot is freed only by whoever drops the last pin, so no
//!   thread in the middle of an update can ever XOR into another root's entry (no ABA).
//! * **One CAS decides.** Every operation ends with an atomic read-modify-write of the ack val
//!   (its XOR; or, for a message that changes a flag, `fetch_xor(0)` after the flag), then
//!   evaluates rule 3 on a snapshot (the meta word, then the ack val loaded after it) and, if the
//!   tree is decided, moves the entry from live to dead with a CAS on the meta word that succeeds
//!   only if the word did not change since it was read, so flags and ack val were current
//!   together. Only one CAS can move an entry to dead, so every `Completed` / `Failed` is returned
//!   by exactly one call. The call whose read-modify-write of the ack val comes last synchronises
//!   with every other update, so its snapshot holds every XOR and every flag and no decision is
//!   missed. When several calls on one root overlap in time, the decision is returned by one of
//!   them (whichever seals the entry, not necessarily the one whose XOR completed the tree), and
//!   it is the one rule 3 gives for all of them together (so an ack still wins over a fail).
//!   (Deciding on the value a call's own read-modify-write returned instead is wrong: a fail that
//!   read 0 from a fresh entry before a racing init's XOR landed would then see the init's spout
//!   task and report `Completed`; loom models 3c and 4b, and the stress tests with fails, catch
//!   that.)
//! * **Inserts are two-phase.** A root that is not in the table gets a slot by CAS (free →
//!   reserved), publishes it as *inserting*, and then, after a `SeqCst` fence, scans the root's
//!   probe window for another candidate of the same root: a live one, or an inserting one nearer
//!   its home, wins and this one dies; an inserting one farther from home is killed. Two inserts of
//!   one root thus always agree on one entry (each sees the other's publication, by the fence).
//!   Any thread that meets an inserting candidate of its root finishes this resolution itself
//!   instead of waiting, so a stalled inserter blocks nobody.
//!
//! ## Probing, overflow and the trade-off
//!
//! Linear probing inside a window of `min(capacity, 64)` slots from the root's home slot.
//! Freed slots leave holes in the middle of probe chains (nothing is moved, and no root has a
//! second bucket, unlike the single-owner table's cuckoo buckets), so a lookup of an absent root
//! (every new root) scans its whole window: 64 slots, a few cache lines of root ids.
//!
//! A root whose window is full takes any free slot of the rest of the table: an *overflow*
//! entry ([`SharedAckerTable::overflow_len`]). Its inserter counts it before publishing it, and
//! while the count is not 0 every probe spans the whole table, so [`TableError::Full`] means
//! what it means for [`AckerTable`]: every slot holds an entry. The price is speed, not
//! correctness: with overflow entries live, each new root costs a scan of the whole table. Size
//! large tables with headroom (linear probing at up to ~70% load rarely fills a 64-slot window;
//! the benchmarks use load 0.5). Under concurrency `Full` can also be transient: a slot another
//! thread has reserved for an insert still in progress is not free, even if that insert turns
//! out to be of the same root (loom model 6b). Either way nothing changed and the caller retries
//! (back-pressure). Dead entries are freed at once by the last thread to leave them.
//!
//! ## Progress guarantees
//!
//! | operation | guarantee |
//! | --- | --- |
//! | [`init`](SharedAckerTable::init), [`ack`](SharedAckerTable::ack), [`fail`](SharedAckerTable::fail), [`reset_timeout`](SharedAckerTable::reset_timeout), [`apply`](SharedAckerTable::apply) | lock-free: a CAS retries only because another thread changed the same meta word, i.e. made progress; nobody waits for another thread, with one bounded exception: when 15 threads are already inside operations on the same root, a 16th spins until one leaves |
//! | [`tick`](SharedAckerTable::tick) | lock-free (one CAS loop on the clock; the call that advances the epoch then sweeps every slot once, one CAS loop per expired entry) |
//! | [`len`](SharedAckerTable::len), [`capacity`](SharedAckerTable::capacity), [`get`](SharedAckerTable::get), [`memory_bytes`](SharedAckerTable::memory_bytes) | wait-free |
//!
//! A thread stalled forever inside an operation keeps at most one slot from being reused (the
//! one it pins or reserves); it never blocks other threads.
//!
//! ## Expiry
//!
//! As in the single-owner table: a (re)insertion stamps the entry with the table epoch (creating
//! an entry, a fail and a reset-timeout do; an init or an ack of an existing entry do not), the
//! epoch advances by `min(clock epochs elapsed, 3)` per [`tick`](SharedAckerTable::tick), and an
//! entry whose stamp is 3 epochs old has expired (2T to 3T after its last (re)insertion): no
//! operation joins it any more, a message for its root creates a fresh entry. The tick that
//! advances the epoch sweeps the whole table and reclaims every expired entry, so it leaves
//! [`len`](SharedAckerTable::len) at that tick, as in the single-owner table (a sweep costs
//! about a nanosecond a slot, once per message timeout). An operation already inside an entry
//! when it expires finishes on it (it is ordered before the expiry).
//!
//! ## Verification
//!
//! * `tests/loom.rs`: loom models (init ∥ ack, two completing acks, fail ∥ last ack, reset ∥ ack,
//!   racing inserts of one root and of colliding roots, slot reuse ∥ late ack, tick ∥ updates,
//!   insert into a full table ∥ completion, two overflow candidates of one root, an overflow and
//!   an in-window candidate of one root), each exhaustive at `LOOM_MAX_PREEMPTIONS=3`:
//!   `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p acker-core --release --test loom`.
//!   The models fail if the `SeqCst` fence of the insert, the root check after pinning, or the
//!   dead-entry check of the decision is removed, or if the decision uses the value the call's
//!   own read-modify-write returned (models 3c, 4b: fail or reset ∥ init), or if an overflow
//!   entry is counted after it is published or a candidate's scan ignores the count (11a, 11b).
//! * `tests/shared_model.rs`: quickcheck differential test against [`AckerTable`] (same
//!   decisions, errors, lengths and entries on random message sequences with ticks, on tables
//!   of 1–16 slots and of 65–100 slots filled until windows overflow and `Full` comes).
//! * `tests/shared_stress.rs`: one million random trees over 2, 4 and 8 threads, with fails,
//!   every tree decided exactly once with the right decision, nothing left behind; and tables
//!   filled to the brim (8 slots, and 96 slots where windows overflow) under four threads.
//!
//! No `CachePadded` is used: the header's counters are the only shared hot words, and no
//! measurement has shown false sharing yet.
//!
//! [`AckerTable`]: crate::AckerTable

use crate::ids::{RootId, TaskId};
use crate::message::{AckerMessage, Decision};
use crate::routing::reduce;
use crate::sync::{fence, spin_hint, AtomicUsize, Ordering};
pub use crate::sync::{AtomicU32, AtomicU64};
use crate::table::{ConfigError, EntryView, TableError, EXPIRY_EPOCHS};

use Ordering::{AcqRel, Acquire, Relaxed, SeqCst};

const TASK_MASK: u32 = 0xFFFF;
const HAS_TASK: u32 = 1 << 16;
const FAILED: u32 = 1 << 17;
const INIT_CLAIMED: u32 = 1 << 18;

const STATE_SHIFT: u32 = 19;
const STATE_MASK: u32 = 0b111 << STATE_SHIFT;
/// Free: no entry; `roots`/`ack_vals` hold garbage. The whole meta word is 0.
const FREE: u32 = 0;
/// Claimed by an inserter that is writing the root id; invisible to everyone else.
const RESERVED: u32 = 1 << STATE_SHIFT;
/// A candidate entry for its root, not yet confirmed unique; holds no contribution yet.
const INSERTING: u32 = 2 << STATE_SHIFT;
/// The root's entry.
const LIVE: u32 = 3 << STATE_SHIFT;
/// Decided, expired or killed; freed by whoever drops the last pin.
const DEAD: u32 = 4 << STATE_SHIFT;

const PIN_SHIFT: u32 = 22;
const PIN: u32 = 1 << PIN_SHIFT;
const PIN_MASK: u32 = 0b1111 << PIN_SHIFT;
/// Most threads that can be inside operations on one entry at once.
pub const MAX_PINS: u32 = 15;

const STAMP_SHIFT: u32 = 26;
const STAMP_MASK: u32 = 0b11_1111;

/// Most slots a root's probe window spans (it spans `min(capacity, MAX_WINDOW)`). A root whose
/// window is full goes to any free slot of the table instead (an *overflow* entry, see the
/// module docs).
pub const MAX_WINDOW: usize = 64;

#[inline]
fn state(m: u32) -> u32 {
    m & STATE_MASK
}

#[inline]
fn pins(m: u32) -> u32 {
    (m & PIN_MASK) >> PIN_SHIFT
}

#[inline]
fn stamp_of(m: u32) -> u32 {
    m >> STAMP_SHIFT
}

#[inline]
fn with_stamp(m: u32, epoch: u32) -> u32 {
    (m & !(STAMP_MASK << STAMP_SHIFT)) | ((epoch & STAMP_MASK) << STAMP_SHIFT)
}

/// The meta word of a dead entry with `pins_left` pins, or a free slot if none is left.
#[inline]
fn dead(m: u32, pins_left: u32) -> u32 {
    if pins_left == 0 {
        FREE
    } else {
        (m & !(STATE_MASK | PIN_MASK)) | DEAD | (pins_left << PIN_SHIFT)
    }
}

/// Rule 3 of the acker for an entry whose meta word is `m` and ack val `ack_val`.
#[inline]
fn rule3(m: u32, ack_val: u64, reset: bool) -> Decision {
    if m & HAS_TASK == 0 {
        return Decision::Pending;
    }
    let spout_task = (m & TASK_MASK) as TaskId;
    if ack_val == 0 {
        Decision::Completed { spout_task }
    } else if m & FAILED != 0 {
        Decision::Failed { spout_task }
    } else if reset {
        Decision::Reset { spout_task }
    } else {
        Decision::Pending
    }
}

#[inline]
fn is_final(d: Decision) -> bool {
    matches!(d, Decision::Completed { .. } | Decision::Failed { .. })
}

/// The three arrays a [`SharedAckerTable`] works over; all three have `capacity` elements.
///
/// Implemented by [`SharedSlots`] (owned or borrowed arrays, boxes, vectors) and by any `&T`
/// where `T` implements it (so a `static` storage can be shared).
pub trait SharedStorage {
    /// Root id of each slot.
    fn roots(&self) -> &[AtomicU64];
    /// Ack val of each slot.
    fn ack_vals(&self) -> &[AtomicU64];
    /// Meta word of each slot (spout task, flags, state, pins, timeout stamp).
    fn metas(&self) -> &[AtomicU32];
}

impl<T: SharedStorage + ?Sized> SharedStorage for &T {
    #[inline]
    fn roots(&self) -> &[AtomicU64] {
        (**self).roots()
    }
    #[inline]
    fn ack_vals(&self) -> &[AtomicU64] {
        (**self).ack_vals()
    }
    #[inline]
    fn metas(&self) -> &[AtomicU32] {
        (**self).metas()
    }
}

/// The error of [`SharedSlots::new`]: the three arrays do not have the same length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotsLengthMismatch {
    /// Length of the roots array.
    pub roots: usize,
    /// Length of the ack vals array.
    pub ack_vals: usize,
    /// Length of the metas array.
    pub metas: usize,
}

impl core::fmt::Display for SlotsLengthMismatch {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "shared acker table arrays differ in length: {} roots, {} ack vals, {} metas",
            self.roots, self.ack_vals, self.metas
        )
    }
}

/// Structure-of-arrays storage for a [`SharedAckerTable`]: `capacity` root ids (8 bytes each),
/// ack vals (8 bytes each) and meta words (4 bytes each), i.e. 20 bytes a slot, every atomic
/// naturally aligned.
///
/// `R` and `V` are anything that derefs to `[AtomicU64]`, `M` to `[AtomicU32]`: arrays (see
/// [`SharedSlots::arrays`], usable in a `static`), `Box<[_]>`, `Vec<_>`, or borrowed slices.
///
/// ```
/// use acker_core::shared::{AtomicU32, AtomicU64, SharedSlots};
/// let n = 1024;
/// let slots = SharedSlots::new(
///     (0..n).map(|_| AtomicU64::new(0)).collect::<Box<[_]>>(),
///     (0..n).map(|_| AtomicU64::new(0)).collect::<Box<[_]>>(),
///     (0..n).map(|_| AtomicU32::new(0)).collect::<Box<[_]>>(),
/// )
/// .unwrap();
/// # let _ = slots;
/// ```
#[derive(Debug)]
pub struct SharedSlots<R, V, M> {
    roots: R,
    ack_vals: V,
    metas: M,
}

impl<R, V, M> SharedSlots<R, V, M>
where
    R: AsRef<[AtomicU64]>,
    V: AsRef<[AtomicU64]>,
    M: AsRef<[AtomicU32]>,
{
    /// Storage from three arrays of equal length (their contents are cleared by
    /// [`SharedAckerTable::new`]).
    ///
    /// # Errors
    /// [`SlotsLengthMismatch`] when the lengths differ.
    pub fn new(roots: R, ack_vals: V, metas: M) -> Result<Self, SlotsLengthMismatch> {
        let (r, v, m) = (
            roots.as_ref().len(),
            ack_vals.as_ref().len(),
            metas.as_ref().len(),
        );
        if r != v || r != m {
            return Err(SlotsLengthMismatch {
                roots: r,
                ack_vals: v,
                metas: m,
            });
        }
        Ok(Self {
            roots,
            ack_vals,
            metas,
        })
    }
}

impl<const N: usize> SharedSlots<[AtomicU64; N], [AtomicU64; N], [AtomicU32; N]> {
    /// Inline array storage for `N` roots: exactly `20 × N` bytes (plus at most 4 bytes of
    /// padding when `N` is odd). A `const fn`, so it can initialise a `static`.
    ///
    /// ```
    /// use acker_core::shared::{SharedAckerTable, SharedArrays};
    /// static STORAGE: SharedArrays<256> = SharedArrays::arrays();
    /// let table = SharedAckerTable::new(&STORAGE, 30_000_000_000).unwrap();
    /// assert_eq!(table.capacity(), 256);
    /// ```
    #[cfg(not(loom))]
    pub const fn arrays() -> Self {
        Self {
            roots: [const { AtomicU64::new(0) }; N],
            ack_vals: [const { AtomicU64::new(0) }; N],
            metas: [const { AtomicU32::new(0) }; N],
        }
    }

    /// Inline array storage for `N` roots (loom build: loom's atomics are not `const`).
    #[cfg(loom)]
    pub fn arrays() -> Self {
        Self {
            roots: core::array::from_fn(|_| AtomicU64::new(0)),
            ack_vals: core::array::from_fn(|_| AtomicU64::new(0)),
            metas: core::array::from_fn(|_| AtomicU32::new(0)),
        }
    }
}

impl<R, V, M> SharedStorage for SharedSlots<R, V, M>
where
    R: AsRef<[AtomicU64]>,
    V: AsRef<[AtomicU64]>,
    M: AsRef<[AtomicU32]>,
{
    #[inline]
    fn roots(&self) -> &[AtomicU64] {
        self.roots.as_ref()
    }
    #[inline]
    fn ack_vals(&self) -> &[AtomicU64] {
        self.ack_vals.as_ref()
    }
    #[inline]
    fn metas(&self) -> &[AtomicU32] {
        self.metas.as_ref()
    }
}

/// Inline array storage for `N` roots (see [`SharedSlots::arrays`]).
pub type SharedArrays<const N: usize> = SharedSlots<[AtomicU64; N], [AtomicU64; N], [AtomicU32; N]>;

/// The operation being applied, after the entry was found.
#[derive(Clone, Copy)]
enum Op {
    Init { xor: u64, spout_task: TaskId },
    Ack { xor: u64 },
    Fail,
    Reset,
}

/// The lock-free acker table shared by many threads (see the [module docs](self) for its design,
/// progress guarantees and trade-offs).
///
/// Same rules, same decisions and same errors as [`AckerTable`](crate::AckerTable), with every
/// operation on `&self`: share it by reference (`std::thread::scope`), `Arc` or a `static`.
///
/// ```
/// use acker_core::shared::{SharedAckerTable, SharedArrays};
/// use acker_core::Decision;
/// let table = SharedAckerTable::new(SharedArrays::<8>::arrays(), 30_000_000_000).unwrap();
/// let (root, e1, e2) = (7, 0xA1, 0xB2);
/// std::thread::scope(|s| {
///     s.spawn(|| table.ack(root, e1).unwrap());
///     s.spawn(|| table.ack(root, e2).unwrap());
/// });
/// assert_eq!(table.init(root, e1 ^ e2, 3), Ok(Decision::Completed { spout_task: 3 }));
/// assert!(table.is_empty());
/// ```
pub struct SharedAckerTable<S> {
    slots: S,
    capacity: usize,
    window: usize,
    timeout_ns: u64,
    /// Live entries (inserted and neither decided nor reclaimed).
    live: AtomicUsize,
    /// `now_ns / timeout_ns` at the last tick.
    clock_epoch: AtomicU64,
    /// Internal epoch: advances by `min(clock epochs elapsed, 3)` per tick.
    epoch: AtomicU32,
    /// Entries outside their root's probe window (counted from before their candidate is
    /// published until after their slot is freed). While it is not 0, probes span the whole table.
    overflow: AtomicUsize,
}

impl<S> core::fmt::Debug for SharedAckerTable<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SharedAckerTable")
            .field("capacity", &self.capacity)
            .field("len", &self.live.load(Relaxed))
            .field("timeout_ns", &self.timeout_ns)
            .field("epoch", &self.epoch.load(Relaxed))
            .finish()
    }
}

impl<S: SharedStorage> SharedAckerTable<S> {
    /// A table over `storage` (every slot is cleared) with message timeout `message_timeout_ns`
    /// (Storm's `topology.message.timeout.secs`, default 30 s = `30_000_000_000`). The injected
    /// clock starts at 0 ns.
    ///
    /// # Errors
    /// [`ConfigError::ZeroCapacity`] for empty storage, [`ConfigError::CapacityTooLarge`] above
    /// `u32::MAX` slots, [`ConfigError::ZeroTimeout`] for a zero timeout.
    pub fn new(storage: S, message_timeout_ns: u64) -> Result<Self, ConfigError> {
        let cap = storage.metas().len();
        ConfigError::check(cap, message_timeout_ns)?;
        for i in 0..cap {
            storage.roots()[i].store(0, Relaxed);
            storage.ack_vals()[i].store(0, Relaxed);
            storage.metas()[i].store(FREE, Relaxed);
        }
        Ok(Self {
            slots: storage,
            capacity: cap,
            window: cap.min(MAX_WINDOW),
            timeout_ns: message_timeout_ns,
            live: AtomicUsize::new(0),
            clock_epoch: AtomicU64::new(0),
            epoch: AtomicU32::new(0),
            overflow: AtomicUsize::new(0),
        })
    }

    /// A table whose probe window is `window` slots (at least 1) instead of
    /// `min(capacity, MAX_WINDOW)`: loom builds only, so that models with two or three slots
    /// reach the overflow path.
    #[cfg(loom)]
    pub fn with_window(
        storage: S,
        message_timeout_ns: u64,
        window: usize,
    ) -> Result<Self, ConfigError> {
        let mut table = Self::new(storage, message_timeout_ns)?;
        table.window = window.clamp(1, table.capacity);
        Ok(table)
    }

    /// The number of roots the table can hold (its number of slots).
    #[inline]
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The number of live roots: entries created and neither decided nor expired, as
    /// [`AckerTable::len`](crate::AckerTable::len) counts them (expired entries leave it at the
    /// [`tick`](Self::tick) that expires them). Under concurrent updates this is a snapshot.
    #[inline]
    pub fn len(&self) -> usize {
        self.live.load(Acquire)
    }

    /// The number of overflow entries: roots that found their probe window (`min(capacity, 64)`
    /// slots from their home slot) full and live elsewhere in the table. While it is not 0,
    /// every lookup of an absent root (each new root) scans the whole table instead of one
    /// window: a sign the table is too small for its load (see the module docs). A snapshot.
    #[inline]
    pub fn overflow_len(&self) -> usize {
        self.overflow.load(Acquire)
    }

    /// Whether no root is live (see [`len`](Self::len)).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The message timeout T in nanoseconds.
    #[inline]
    pub fn message_timeout_ns(&self) -> u64 {
        self.timeout_ns
    }

    /// Bytes of memory the table uses: `20 × capacity` for the slot arrays plus the fixed header
    /// `size_of::<SharedAckerTable<S>>()` (which also counts `S` itself: for borrowed or boxed
    /// storage a few pointers; for inline arrays the arrays again, so that figure is an upper
    /// bound).
    pub fn memory_bytes(&self) -> usize {
        (2 * core::mem::size_of::<AtomicU64>() + core::mem::size_of::<AtomicU32>()) * self.capacity
            + core::mem::size_of::<Self>()
    }

    /// The slot where the probe for `root` starts (its home slot): for diagnostics and for tests
    /// that need roots whose probes collide.
    #[inline]
    pub fn home_slot(&self, root: RootId) -> usize {
        reduce(root, self.capacity)
    }

    /// The live entry of `root`, if any. A snapshot: under concurrent updates of this root it may
    /// mix values from before and after an update.
    pub fn get(&self, root: RootId) -> Option<EntryView> {
        if root == 0 {
            return None;
        }
        let home = self.home_slot(root);
        for pos in 0..self.span() {
            let j = self.slot_at(home, pos);
            if self.slots.roots()[j].load(Acquire) != root {
                continue;
            }
            let m = self.slots.metas()[j].load(Acquire);
            if state(m) != LIVE || self.expired(m) {
                continue;
            }
            let ack_val = self.slots.ack_vals()[j].load(Acquire);
            return Some(EntryView {
                ack_val,
                spout_task: (m & HAS_TASK != 0).then_some((m & TASK_MASK) as TaskId),
                failed: m & FAILED != 0,
            });
        }
        None
    }

    /// Applies one acker message (dispatches to [`init`](Self::init), [`ack`](Self::ack),
    /// [`fail`](Self::fail) or [`reset_timeout`](Self::reset_timeout)).
    ///
    /// # Errors
    /// As the operation it dispatches to.
    #[inline]
    pub fn apply(&self, message: AckerMessage) -> Result<Decision, TableError> {
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
    /// [`TableError::DuplicateInit`] (an init for this root was already applied, or is being
    /// applied by another thread). Nothing changes on error.
    pub fn init(&self, root: RootId, xor: u64, spout_task: TaskId) -> Result<Decision, TableError> {
        self.run(root, Op::Init { xor, spout_task })
    }

    /// A bolt's ack: XORs `xor` into the root's ack val (creating the entry if the root is
    /// unknown). Completes the tree when the ack val reaches 0 and the spout task is known.
    ///
    /// # Errors
    /// [`TableError::ZeroRoot`], [`TableError::Full`]. Nothing changes on error.
    #[inline]
    pub fn ack(&self, root: RootId, xor: u64) -> Result<Decision, TableError> {
        self.run(root, Op::Ack { xor })
    }

    /// A bolt's fail: marks the tree failed and restarts its expiry (as Storm's acker `put`s it).
    /// The spout hears `Failed` once the spout task is known, unless the ack val is 0 (an ack wins).
    ///
    /// # Errors
    /// [`TableError::ZeroRoot`], [`TableError::Full`]. Nothing changes on error.
    pub fn fail(&self, root: RootId) -> Result<Decision, TableError> {
        self.run(root, Op::Fail)
    }

    /// A bolt's reset-timeout: restarts the root's expiry and, once the spout task is known and
    /// the tree neither completed nor failed, asks to forward [`Decision::Reset`] to the spout.
    ///
    /// # Errors
    /// [`TableError::ZeroRoot`], [`TableError::Full`]. Nothing changes on error.
    pub fn reset_timeout(&self, root: RootId) -> Result<Decision, TableError> {
        self.run(root, Op::Reset)
    }

    /// Advances the table's clock to `now_ns` (the injected clock; a value earlier than the last
    /// tick is ignored). Each time the clock crosses a multiple of the message timeout, the
    /// entries stamped 3 epochs ago expire: the call that advances the epoch sweeps the whole
    /// table once and reclaims them, so they leave [`len`](Self::len) before it returns, as in
    /// [`AckerTable::tick`](crate::AckerTable::tick). Expiry is silent: no decision is returned,
    /// as in Storm, where the spout times the tuple out itself. Safe to call from several threads
    /// at once (only the one that advances the epoch sweeps). A tick that does not cross a
    /// multiple of the timeout costs one atomic load.
    pub fn tick(&self, now_ns: u64) {
        let clock_epoch = now_ns / self.timeout_ns;
        let mut seen = self.clock_epoch.load(Acquire);
        while clock_epoch > seen {
            match self
                .clock_epoch
                .compare_exchange(seen, clock_epoch, AcqRel, Acquire)
            {
                Ok(_) => {
                    let steps = (clock_epoch - seen).min(EXPIRY_EPOCHS as u64) as u32;
                    self.epoch.fetch_add(steps, AcqRel);
                    for j in 0..self.capacity {
                        self.expire(j);
                    }
                    return;
                }
                Err(now) => seen = now,
            }
        }
    }

    // ---- internals ----------------------------------------------------------------------------

    #[inline]
    fn slot_at(&self, home: usize, pos: usize) -> usize {
        let j = home + pos;
        if j >= self.capacity {
            j - self.capacity
        } else {
            j
        }
    }

    /// Whether the entry whose meta word `m` was just loaded has expired. The epoch is loaded
    /// *after* `m`: the stamp in `m` was taken from an epoch value read before `m` was published,
    /// so it is never ahead of the epoch read here (a stamp from the future would look 63
    /// epochs old and expire a fresh entry).
    #[inline]
    fn expired(&self, m: u32) -> bool {
        let epoch = self.epoch.load(Acquire);
        (epoch.wrapping_sub(stamp_of(m)) & STAMP_MASK) >= EXPIRY_EPOCHS
    }

    #[inline]
    fn meta(&self, i: usize) -> &AtomicU32 {
        &self.slots.metas()[i]
    }

    /// If the entry at `j` is live and expired, moves it to dead (free if unpinned). Retries
    /// while only its pins change; stops once it is not live or not expired (restamped, decided,
    /// expired by another thread).
    fn expire(&self, j: usize) {
        let mut m = self.meta(j).load(Acquire);
        while state(m) == LIVE && self.expired(m) {
            match self.cas(j, m, dead(m, pins(m))) {
                Ok(_) => {
                    self.live.fetch_sub(1, AcqRel);
                    return;
                }
                Err(now) => m = now,
            }
        }
    }

    /// Slots a probe spans now: the window, or the whole table while overflow entries exist.
    #[inline]
    fn span(&self) -> usize {
        if self.overflow.load(Acquire) == 0 {
            self.window
        } else {
            self.capacity
        }
    }

    /// `compare_exchange_weak` on slot `j`'s meta word (`m` → `new`) that keeps the overflow
    /// count: when it frees the slot of an overflow entry, the count drops. The root id is read
    /// before the CAS, while the slot is not free (it cannot change until then).
    #[inline]
    fn cas(&self, j: usize, m: u32, new: u32) -> Result<u32, u32> {
        let overflow = new == FREE && self.is_overflow_slot(j);
        let r = self.meta(j).compare_exchange_weak(m, new, AcqRel, Acquire);
        if overflow && r.is_ok() {
            self.overflow.fetch_sub(1, AcqRel);
        }
        r
    }

    /// Whether the (not free) slot `j` holds an entry outside its root's window. The count is
    /// read first: an overflow entry's increment happened before its publication, which the
    /// caller has seen, so a count of 0 proves the slot is not one.
    #[inline]
    fn is_overflow_slot(&self, j: usize) -> bool {
        self.capacity > self.window && self.overflow.load(Acquire) != 0 && {
            let home = self.home_slot(self.slots.roots()[j].load(Acquire));
            (j + self.capacity - home) % self.capacity >= self.window
        }
    }

    /// Applies `op` to `root`'s entry, creating it if needed.
    fn run(&self, root: RootId, op: Op) -> Result<Decision, TableError> {
        if root == 0 {
            return Err(TableError::ZeroRoot);
        }
        loop {
            let i = self.acquire(root)?;
            // `i` is pinned and was live with our root when pinned.
            match op {
                Op::Ack { xor } => {
                    self.slots.ack_vals()[i].fetch_xor(xor, AcqRel);
                }
                Op::Init { xor, spout_task } => {
                    match self.update_meta(i, |m| {
                        if m & (HAS_TASK | INIT_CLAIMED) != 0 {
                            Err(true)
                        } else {
                            Ok((m & !TASK_MASK) | INIT_CLAIMED | spout_task as u32)
                        }
                    }) {
                        Ok(()) => {}
                        Err(duplicate) => {
                            self.unpin(i);
                            if duplicate {
                                return Err(TableError::DuplicateInit);
                            }
                            continue; // the entry died before the init touched it: retry
                        }
                    }
                    self.slots.ack_vals()[i].fetch_xor(xor, AcqRel);
                    // Only now may rule 3 see the spout task: the init's XOR is in.
                    if self.update_meta(i, |m| Ok(m | HAS_TASK)).is_err() {
                        // Expired while the init was inside it: the init went with it.
                        self.unpin(i);
                        return Ok(Decision::Pending);
                    }
                    // A read-modify-write after the flag, so that whichever update of the ack
                    // val comes last also sees the flag (see `release`).
                    self.slots.ack_vals()[i].fetch_xor(0, AcqRel);
                }
                Op::Fail | Op::Reset => {
                    let failed = if matches!(op, Op::Fail) { FAILED } else { 0 };
                    // The epoch is read after each load of the meta word, so the new stamp is
                    // never older than one another thread just wrote.
                    let restamp = |m| Ok(with_stamp(m | failed, self.epoch.load(Acquire)));
                    if self.update_meta(i, restamp).is_err() {
                        self.unpin(i);
                        continue; // the entry died before this message touched it: retry
                    }
                    // As for the init: the last update of the ack val sees the flag.
                    self.slots.ack_vals()[i].fetch_xor(0, AcqRel);
                }
            }
            return Ok(self.release(i, matches!(op, Op::Reset)));
        }
    }

    /// CAS loop changing the meta word of the pinned entry `i` while it is live. `f` returns the
    /// new word, or `Err(e)` to give up. `Err(false)` if the entry is no longer live.
    fn update_meta(&self, i: usize, f: impl Fn(u32) -> Result<u32, bool>) -> Result<(), bool> {
        let meta = self.meta(i);
        let mut m = meta.load(Acquire);
        loop {
            if state(m) != LIVE {
                return Err(false);
            }
            let new = f(m)?;
            match meta.compare_exchange_weak(m, new, AcqRel, Acquire) {
                Ok(_) => return Ok(()),
                Err(now) => m = now,
            }
        }
    }

    /// Drops our pin on entry `i` after an update, deciding the tree if rule 3 says so. Returns
    /// the decision this call reports.
    ///
    /// Rule 3 is evaluated on a consistent snapshot: the meta word `m`, then the ack val loaded
    /// *after* it, and the CAS succeeds only if `m` is unchanged (its flags and state cannot
    /// change back while we hold a pin), so the flags and the ack val were both current at the
    /// moment of the second load. Deciding on the value this call's own read-modify-write
    /// returned would not be: a fail that read 0 from a fresh entry, before a racing init's XOR
    /// landed, would then see the init's spout task and report `Completed` (loom model 3c).
    ///
    /// No decision is missed: every update ends with a read-modify-write of the ack val after
    /// its change (an XOR, or a flag followed by `fetch_xor(0)`). The update whose
    /// read-modify-write is last in the ack val's modification order synchronises with all the
    /// others, so its snapshot holds every XOR and every flag.
    fn release(&self, i: usize, reset: bool) -> Decision {
        let meta = self.meta(i);
        let ack_val = &self.slots.ack_vals()[i];
        let mut m = meta.load(Acquire);
        loop {
            let left = pins(m) - 1;
            let (decision, new) = if state(m) == LIVE {
                let d = rule3(m, ack_val.load(Acquire), reset);
                if is_final(d) {
                    (d, dead(m, left))
                } else {
                    (d, m - PIN)
                }
            } else {
                // Decided or expired by another thread while we were inside.
                (Decision::Pending, dead(m, left))
            };
            match self.cas(i, m, new) {
                Ok(_) => {
                    if is_final(decision) {
                        self.live.fetch_sub(1, AcqRel);
                    }
                    return decision;
                }
                Err(now) => m = now,
            }
        }
    }

    /// Drops a pin without deciding anything.
    fn unpin(&self, i: usize) {
        let meta = self.meta(i);
        let mut m = meta.load(Acquire);
        loop {
            let left = pins(m) - 1;
            let new = if state(m) == DEAD {
                dead(m, left)
            } else {
                m - PIN
            };
            match self.cas(i, m, new) {
                Ok(_) => return,
                Err(now) => m = now,
            }
        }
    }

    /// Pins slot `j` if it is inserting or live and holds `root`. Returns whether it did.
    fn pin(&self, j: usize, root: RootId) -> bool {
        let meta = self.meta(j);
        let mut m = meta.load(Acquire);
        loop {
            let s = state(m);
            if s != LIVE && s != INSERTING {
                return false;
            }
            if pins(m) == MAX_PINS {
                spin_hint();
                m = meta.load(Acquire);
                continue;
            }
            match meta.compare_exchange_weak(m, m + PIN, AcqRel, Acquire) {
                Ok(_) => break,
                Err(now) => m = now,
            }
        }
        // While pinned the slot cannot be freed, so its root id is stable.
        if self.slots.roots()[j].load(Acquire) == root {
            true
        } else {
            self.unpin(j);
            false
        }
    }

    /// A pinned live entry of `root`, created if absent.
    fn acquire(&self, root: RootId) -> Result<usize, TableError> {
        let home = self.home_slot(root);
        loop {
            if let Some(i) = self.find(root, home) {
                return Ok(i);
            }
            match self.insert(root, home) {
                Ok(Some(i)) => return Ok(i),
                Ok(None) => continue, // lost to another candidate of the root: join it
                Err(TableError::Full) => {
                    // The root may have been inserted by another thread meanwhile.
                    return self.find(root, home).ok_or(TableError::Full);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Finds `root`'s live entry in its window and pins it (finishing the insert of a candidate
    /// it meets on the way). `None` if it has no live entry.
    fn find(&self, root: RootId, home: usize) -> Option<usize> {
        'restart: loop {
            for pos in 0..self.span() {
                let j = self.slot_at(home, pos);
                if self.slots.roots()[j].load(Acquire) != root {
                    continue;
                }
                let m = self.meta(j).load(Acquire);
                match state(m) {
                    LIVE if self.expired(m) => self.expire(j),
                    LIVE | INSERTING => {
                        if !self.pin(j, root) {
                            continue 'restart;
                        }
                        let m = self.meta(j).load(Acquire);
                        match state(m) {
                            LIVE if !self.expired(m) => return Some(j),
                            INSERTING => {
                                self.resolve(j, root, home, pos);
                                if state(self.meta(j).load(Acquire)) == LIVE {
                                    return Some(j);
                                }
                                self.unpin(j);
                                continue 'restart;
                            }
                            _ => {
                                self.unpin(j);
                                continue 'restart;
                            }
                        }
                    }
                    _ => {}
                }
            }
            return None;
        }
    }

    /// Inserts a candidate entry for `root` and resolves it. `Ok(Some(i))`: `i` is the root's
    /// live entry, pinned. `Ok(None)`: another candidate won; look again.
    fn insert(&self, root: RootId, home: usize) -> Result<Option<usize>, TableError> {
        let mut claimed = None;
        // The window first, then (only if it is full) the rest of the table.
        'scan: for pos in 0..self.capacity {
            let j = self.slot_at(home, pos);
            let meta = self.meta(j);
            let mut m = meta.load(Acquire);
            loop {
                if state(m) == LIVE && self.expired(m) {
                    self.expire(j);
                    m = meta.load(Acquire);
                }
                if m != FREE {
                    continue 'scan;
                }
                match meta.compare_exchange(FREE, RESERVED | PIN, AcqRel, Acquire) {
                    Ok(_) => {
                        claimed = Some((j, pos));
                        break 'scan;
                    }
                    Err(now) => m = now,
                }
            }
        }
        let Some((j, pos)) = claimed else {
            return Err(TableError::Full);
        };
        self.slots.roots()[j].store(root, Relaxed);
        self.slots.ack_vals()[j].store(0, Relaxed);
        if pos >= self.window {
            // Counted before it is published: every probe that could meet it then spans the
            // whole table (see `resolve` for the candidates' side).
            self.overflow.fetch_add(1, SeqCst);
        }
        let epoch = self.epoch.load(Acquire);
        // Publish the candidate (release: the root id and the zeroed ack val go with it).
        self.meta(j)
            .swap(with_stamp(INSERTING | PIN, epoch), AcqRel);
        self.resolve(j, root, home, pos);
        if state(self.meta(j).load(Acquire)) == LIVE {
            Ok(Some(j))
        } else {
            self.unpin(j);
            Ok(None)
        }
    }

    /// Decides whether the candidate at `e` (pinned by the caller, holding `root`, at probe
    /// position `pos_e`) becomes the root's live entry or dies. Any thread holding a pin on a
    /// candidate may run this; all runs agree.
    fn resolve(&self, e: usize, root: RootId, home: usize, pos_e: usize) {
        // Pairs with the fence of every other candidate's resolution: of two candidates of one
        // root, at least one sees the other's publication (and, if that one is an overflow
        // entry, its count, which was raised before it was published, so the scan spans it).
        fence(SeqCst);
        let span = if self.overflow.load(SeqCst) == 0 {
            self.window
        } else {
            self.capacity
        };
        for pos in 0..span {
            if pos == pos_e {
                continue;
            }
            let j = self.slot_at(home, pos);
            if self.slots.roots()[j].load(Acquire) != root {
                continue;
            }
            let meta = self.meta(j);
            let mut m = meta.load(Acquire);
            loop {
                match state(m) {
                    LIVE if !self.expired(m) => {
                        self.kill(e);
                        return;
                    }
                    INSERTING if pos < pos_e => {
                        self.kill(e);
                        return;
                    }
                    INSERTING => {
                        // A candidate farther from home loses to this one.
                        match self.cas(j, m, dead(m, pins(m))) {
                            Ok(_) => break,
                            Err(now) => m = now,
                        }
                    }
                    _ => break,
                }
            }
        }
        let meta = self.meta(e);
        let mut m = meta.load(Acquire);
        while state(m) == INSERTING {
            match meta.compare_exchange_weak(m, (m & !STATE_MASK) | LIVE, AcqRel, Acquire) {
                Ok(_) => {
                    self.live.fetch_add(1, AcqRel);
                    return;
                }
                Err(now) => m = now,
            }
        }
    }

    /// Kills the candidate at `e` if it is still inserting (the caller holds a pin on it).
    fn kill(&self, e: usize) {
        let meta = self.meta(e);
        let mut m = meta.load(Acquire);
        while state(m) == INSERTING {
            match self.cas(e, m, dead(m, pins(m))) {
                Ok(_) => return,
                Err(now) => m = now,
            }
        }
    }
}
