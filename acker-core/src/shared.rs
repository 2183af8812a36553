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
//! (4 bytes). Total memory is `20 × capacity` plus the fixed table header of under 1 KiB
//! ([`SharedAckerTable::memory_bytes`]; mostly the live count's cache-padded stripes); nothing is
//! ever allocated.
//!
//! The 32-bit meta word holds everything that must change atomically together:
//!
//! | bits | field |
//! | --- | --- |
//! | 0–15 | spout task |
//! | 16 | spout task known (the init has arrived) |
//! | 17 | failed |
//! | 18 | init claimed (an init is applying its XOR; a second init is a [`TableError::DuplicateInit`]) |
//! | 19–21 | slot state: free, reserved, inserting, live, dead, killed |
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
//! * **One CAS decides.** Every operation on an existing entry ends with an atomic
//!   read-modify-write of the ack val (its XOR; or, for a message that changes a flag,
//!   `fetch_xor(0)` after the flag); a message that creates its entry wrote its contribution
//!   before publishing it, so it precedes all of those. Each operation then
//!   evaluates rule 3 on a snapshot (the meta word, then the ack val loaded after it) and, if the
//!   tree is decided, moves the entry from live to dead with a CAS on the meta word that succeeds
//!   only if the word did not change since it was read, so flags and ack val were current
//!   together. Only one CAS can move an entry to dead, so every `Completed` / `Failed` is returned
//!   by exactly one call. The call whose read-modify-write of the ack val comes last (or the call
//!   that created the entry, if no other touched it) synchronises with every other update, so its
//!   snapshot holds every XOR and every flag and no decision is missed. When several calls on one
//!   root overlap in time, the decision is returned by one of them (whichever seals the entry, not
//!   necessarily the one whose XOR completed the tree), and it is the one rule 3 gives for all of
//!   them together (so an ack still wins over a fail). (Deciding on the value a call's own
//!   read-modify-write returned instead is wrong: a fail that read 0 from a fresh entry before a
//!   racing init's XOR landed would then see the init's spout task and report `Completed`; loom
//!   models 3c and 4b, and the stress tests with fails, catch that.)
//! * **Inserts are two-phase.** A root that is not in the table gets a slot by CAS (free →
//!   reserved), writes its root id and the message's contribution (its XOR; the spout task of an
//!   init; the failed flag of a fail) and publishes the slot as an *inserting* candidate; then,
//!   after a `SeqCst` fence, it scans the root's window for another candidate of the same root:
//!   a live one, or an inserting one of smaller priority (nearer the start of the root's probe),
//!   wins and this one is *killed*; an inserting one of larger priority is killed. Two inserts of
//!   one root thus always agree on one entry (each sees the other's publication, by the fence).
//!   A candidate that becomes live brings its message in with it; the caller of a killed one
//!   (which nobody ever counted) applies its message to the winner instead. Any thread that meets
//!   an inserting candidate of its root finishes this resolution itself instead of waiting, so a
//!   stalled inserter blocks nobody. An init, which usually arrives before any ack of its tree,
//!   skips the lookup and inserts at once: its candidate simply loses to an existing entry of
//!   the root, which it then joins. (Killed is a state of its own, not dead, so that a candidate
//!   another thread made live and then decided is not mistaken for a lost one and applied twice;
//!   loom models 1a and 3c catch that.)
//!
//! ## Probing, overflow and the trade-off
//!
//! Tables of at most [`LINEAR_MAX_CAPACITY`] (64) slots probe linearly through the whole table
//! from the root's home slot. Larger tables give each root a *window* of two buckets of
//! [`BUCKET_SLOTS`] (8) slots, one cache line of root ids each, chosen by two hashes of the root
//! id; a new root goes to its first bucket while at least half of it is free, else to the bucket
//! with more free slots (two choices keep the buckets evenly filled). Nothing is ever moved, so
//! freed slots leave holes and a lookup of an absent root (each new root) reads its whole
//! window: 16 root ids.
//!
//! A root whose window is full takes the first free slot after its first bucket: an *overflow*
//! entry ([`SharedAckerTable::overflow_len`]). Its inserter counts it, in one of eight classes of
//! distance past the window (below 16, 64, 256, … slots), before publishing it, and while any is
//! live every probe also scans past the window up to the bound of the farthest non-empty class
//! ([`SharedAckerTable::probe_len`]); so [`TableError::Full`] means what it means for
//! [`AckerTable`]: every slot holds an entry. The price is speed, not correctness, and it lasts
//! as long as the far entries do: an entry that overflowed when the table was nearly full may
//! sit thousands of slots past its buckets, and every new root's lookup reads that far until it
//! is decided or expires (a new-user trial measured 0.02 M ops/s on a 100 000-slot table at 1%
//! load with 824 such entries left from a fill to `Full`, against 14 M ops/s without; with one
//! near entry left, 11.9 M ops/s). Measured with random roots and steady churn (each tree
//! replaced as it completes): at load 0.5 no window overflowed in 4 M operations (W = 1k, 100k
//! and 1M); at 0.6 one overflow entry was live a third of the time; at 0.7 there were always some
//! (up to about 200 of 100 000 roots); at 0.8, thousands. Size tables at load ≤ 0.5–0.6 (40 bytes
//! a root at 0.5; the benchmarks use 0.5). Under concurrency `Full`
//! can also be transient: a slot another thread has reserved for an insert still in progress is
//! not free, even if that insert turns out to be of the same root (loom model 6b). Either way
//! nothing changed and the caller retries (back-pressure). Dead entries are freed at once by the
//! last thread to leave them.
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
//! one it pins or reserves) and takes one of the 15 pins of that entry; it blocks no other thread
//! unless 15 threads are stalled inside the same root's entry (the exception above).
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
//!   decisions, errors, lengths and entries on random message sequences with ticks, on linear
//!   tables of 1–16 slots and bucketed tables of 65–100 slots filled until windows overflow and
//!   `Full` comes). The loom models use linear tables of 1–3 slots (a bucketed table has at
//!   least 72 slots, too many for loom); bucketed tables differ only in the probe order and
//!   priorities, and are covered by these tests, the stress tests and the fuzz target.
//! * `tests/shared_stress.rs`: one million random trees at each of 2, 4 and 8 threads, with
//!   fails, reset-timeouts and `apply_batch`, every tree decided exactly once with the right
//!   decision, nothing left behind; and tables
//!   filled to the brim (8 slots, and 96 slots where windows overflow) under four threads.
//!
//! `CachePadded` (crossbeam-utils) keeps the live count, written by every insert and decision,
//! off the cache line of the read-mostly header words every operation reads, and spreads it over
//! four stripes picked by the caller's stack address: at W = 1k, two threads went from 0.78× to
//! 1.2–1.4× the one-thread rate with it (`benches/RESULTS.md`).
//!
//! [`AckerTable`]: crate::AckerTable

use crossbeam_utils::CachePadded;

use crate::ids::{RootId, TaskId};
use crate::message::{AckerMessage, Decision};
use crate::routing::reduce;
use crate::sync::{fence, spin_hint, AtomicUsize, Ordering};
pub use crate::sync::{AtomicU32, AtomicU64};
#[cfg(all(target_arch = "x86_64", not(loom)))]
use crate::table::prefetch;
use crate::table::{
    apply_reading_ahead, second_bucket, ConfigError, EntryView, TableError,
    BATCH_READ_AHEAD_MIN_SLOTS, EXPIRY_EPOCHS,
};

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
/// A candidate that lost to another of its root before it became live (its contribution never
/// counted); freed by whoever drops the last pin.
const KILLED: u32 = 5 << STATE_SHIFT;

const PIN_SHIFT: u32 = 22;
const PIN: u32 = 1 << PIN_SHIFT;
const PIN_MASK: u32 = 0b1111 << PIN_SHIFT;
/// Most threads that can be inside operations on one entry at once.
pub const MAX_PINS: u32 = 15;

const STAMP_SHIFT: u32 = 26;
const STAMP_MASK: u32 = 0b11_1111;

/// Tables of at most this many slots probe linearly through the whole table from a root's home
/// slot. Larger tables give each root a window of two buckets of [`BUCKET_SLOTS`] slots; a root
/// whose window is full goes to a free slot outside it (an *overflow* entry, see the module docs).
pub const LINEAR_MAX_CAPACITY: usize = 64;

/// Counters the live count is spread over (see [`SharedAckerTable::len`]).
const LIVE_STRIPES: usize = 4;

/// The live count from its stripes: their wrapping sum. Racing updates can make a snapshot of
/// the stripes momentarily negative or above `capacity`; it is clamped to `0..=capacity`.
fn live_count(live: &[CachePadded<AtomicUsize>], capacity: usize) -> usize {
    let sum = live
        .iter()
        .fold(0usize, |sum, c| sum.wrapping_add(c.load(Acquire)));
    (sum as isize).clamp(0, capacity as isize) as usize
}

/// Slots in a bucket of a table above [`LINEAR_MAX_CAPACITY`] slots: one 64-byte cache line of
/// root ids. A root's window is its two buckets, 16 slots.
pub const BUCKET_SLOTS: usize = 8;

/// Where `root`'s probe goes: the first slot of each of its two buckets (bucketed tables), or its
/// home slot (`b1`, linear tables; `b2` unused).
#[derive(Clone, Copy)]
struct Probe {
    b1: usize,
    b2: usize,
}

/// Distance classes of overflow entries: class `k < OVERFLOW_CLASSES - 1` counts the entries
/// whose distance past their window is below `16 × 4^k` slots (16, 64, 256, … 262 144), the last
/// class all farther ones. A probe goes as far as the bound of the farthest non-empty class.
const OVERFLOW_CLASSES: usize = 8;

/// The class of an overflow entry `dist` slots past its window.
#[inline]
fn overflow_class(dist: usize) -> usize {
    (0..OVERFLOW_CLASSES - 1)
        .find(|&k| dist < class_bound(k))
        .unwrap_or(OVERFLOW_CLASSES - 1)
}

/// Distances in class `k` are below this (`usize::MAX` for the last class).
#[inline]
fn class_bound(k: usize) -> usize {
    if k + 1 == OVERFLOW_CLASSES {
        usize::MAX
    } else {
        16 << (2 * k)
    }
}

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

/// The meta word of a killed candidate with `pins_left` pins, or a free slot if none is left.
#[inline]
fn killed(m: u32, pins_left: u32) -> u32 {
    if pins_left == 0 {
        FREE
    } else {
        (m & !(STATE_MASK | PIN_MASK)) | KILLED | (pins_left << PIN_SHIFT)
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

/// What `find` does after looking at a slot holding its root id.
enum Join {
    /// The root's live entry is there, and pinned.
    Joined,
    /// Not an entry to join (free, reserved, dead, or just expired): go on scanning.
    Next,
    /// The slot changed under the scan: start again.
    Restart,
}

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
    /// Buckets of `BUCKET_SLOTS` slots (0 for a linear table).
    buckets: usize,
    /// Slots in a root's window: `2 × BUCKET_SLOTS`, or the whole table for a linear one.
    window: usize,
    timeout_ns: u64,
    /// Live entries (inserted and neither decided nor reclaimed), as [`LIVE_STRIPES`] counters
    /// whose wrapping sum is the count. Every insert and decision writes one: each on its own
    /// cache line, away from the read-mostly words every operation reads, and chosen by the
    /// caller's stack address so that threads mostly write their own line.
    live: [CachePadded<AtomicUsize>; LIVE_STRIPES],
    /// `now_ns / timeout_ns` at the last tick.
    clock_epoch: AtomicU64,
    /// Internal epoch: advances by `min(clock epochs elapsed, 3)` per tick.
    epoch: AtomicU32,
    /// Entries outside their root's window, counted from before their candidate is published
    /// until after their slot is freed. While it is not 0, probes also go past the window, as far
    /// as `overflow_classes` says.
    overflow: AtomicU64,
    /// The same entries by distance class ([`OVERFLOW_CLASSES`]); each is counted in its class
    /// before it is counted in `overflow`.
    overflow_classes: [AtomicU64; OVERFLOW_CLASSES],
}

impl<S> core::fmt::Debug for SharedAckerTable<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SharedAckerTable")
            .field("capacity", &self.capacity)
            .field("len", &live_count(&self.live, self.capacity))
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
            buckets: if cap > LINEAR_MAX_CAPACITY {
                cap / BUCKET_SLOTS
            } else {
                0
            },
            window: if cap > LINEAR_MAX_CAPACITY {
                2 * BUCKET_SLOTS
            } else {
                cap
            },
            timeout_ns: message_timeout_ns,
            live: core::array::from_fn(|_| CachePadded::new(AtomicUsize::new(0))),
            clock_epoch: AtomicU64::new(0),
            epoch: AtomicU32::new(0),
            overflow: AtomicU64::new(0),
            overflow_classes: core::array::from_fn(|_| AtomicU64::new(0)),
        })
    }

    /// A linear table (at most [`LINEAR_MAX_CAPACITY`] slots) whose window is `window` slots
    /// (at least 1) instead of the whole table: loom builds only, so that models with two or three
    /// slots reach the overflow path.
    #[cfg(loom)]
    pub fn with_window(
        storage: S,
        message_timeout_ns: u64,
        window: usize,
    ) -> Result<Self, ConfigError> {
        let mut table = Self::new(storage, message_timeout_ns)?;
        if table.buckets == 0 {
            table.window = window.clamp(1, table.capacity);
        }
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
        live_count(&self.live, self.capacity)
    }

    /// Slots a lookup of an absent root reads now (each new root's lookup, and an insert's check
    /// for another entry of its root): the window (16 slots; the whole table up to 64 slots),
    /// plus, while overflow entries live, up to the distance bound of the farthest of them
    /// (within 4× of its distance), at most `capacity`. For monitoring: a value far above 16
    /// means the table is too full. A snapshot.
    #[inline]
    pub fn probe_len(&self) -> usize {
        // A probe past the window goes round the whole table, passing the window's slots again:
        // count distinct slots.
        self.span().min(self.capacity)
    }

    /// The number of overflow entries: roots that found their window (their two buckets) full
    /// and live in a free slot past it. While it is not 0, every lookup of an absent root (each
    /// new root) also scans past the window as far as the farthest of them: a sign the table is
    /// too small for its load (see the module docs). A snapshot.
    #[inline]
    pub fn overflow_len(&self) -> usize {
        self.overflow.load(Acquire) as usize
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

    /// The slot where the probe for `root` starts (its home slot; in a table of more than
    /// [`LINEAR_MAX_CAPACITY`] slots, the first slot of its first bucket): for diagnostics and for
    /// tests that need roots whose probes collide.
    #[inline]
    pub fn home_slot(&self, root: RootId) -> usize {
        self.probe(root).b1
    }

    /// The live entry of `root`, if any. A snapshot: under concurrent updates of this root it may
    /// mix values from before and after an update.
    pub fn get(&self, root: RootId) -> Option<EntryView> {
        if root == 0 {
            return None;
        }
        let p = self.probe(root);
        let roots = self.slots.roots();
        for j in self
            .runs(p, self.span())
            .into_iter()
            .flat_map(|(a, b)| a..b)
        {
            if roots[j].load(Acquire) != root {
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

    /// Applies `messages` in order, handing each result to `sink` with the message's index:
    /// exactly what calling [`apply`](Self::apply) on each would return (concurrent callers
    /// interleave with it message by message, as with `apply`). Meant for tables larger than the
    /// CPU caches, as [`AckerTable::apply_batch`](crate::AckerTable::apply_batch): while it applies
    /// message `i` it already asks for the first bucket (root ids, meta words, ack vals) of
    /// message `i + `[`BATCH_LOOKAHEAD`](crate::table::BATCH_LOOKAHEAD), and the second bucket's
    /// root ids for an init (which usually creates its entry and reads both), so several cache
    /// misses are in flight at once. Tables under
    /// [`BATCH_READ_AHEAD_MIN_SLOTS`] slots are applied
    /// one message at a time.
    ///
    /// ```
    /// use acker_core::shared::{SharedAckerTable, SharedArrays};
    /// use acker_core::{AckerMessage, Decision};
    /// let table = SharedAckerTable::new(SharedArrays::<8>::arrays(), 30_000_000_000).unwrap();
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
        &self,
        messages: &[AckerMessage],
        sink: F,
    ) {
        let read_ahead = self.capacity >= BATCH_READ_AHEAD_MIN_SLOTS;
        apply_reading_ahead(
            &mut &*self,
            messages,
            read_ahead,
            |t, m| t.touch(m),
            |t, m| t.apply(m),
            sink,
        );
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

    /// The live-count stripe this thread writes: picked from the address of a local variable
    /// (thread stacks are at least 2 MiB apart), so threads mostly write different cache lines.
    /// Which stripe is used never changes any result: only the sum of the stripes is read.
    #[inline]
    fn live_stripe(&self) -> &AtomicUsize {
        // Loom runs must not depend on where its threads' stacks happen to be: one stripe (the
        // case where every thread shares it, the most contended one).
        #[cfg(loom)]
        let stripe = 0;
        #[cfg(not(loom))]
        let stripe = {
            let marker = 0u8;
            (core::ptr::from_ref(&marker) as usize >> 21) % LIVE_STRIPES
        };
        &self.live[stripe]
    }

    /// Asks for the cache lines `m`'s probe will need first (see
    /// [`apply_batch`](Self::apply_batch)): a prefetch on x86_64, a plain read elsewhere (whose
    /// value is returned so it is kept).
    #[inline(always)]
    fn touch(&self, m: &AckerMessage) -> u64 {
        let p = self.probe(m.root());
        let n = if self.buckets == 0 { 1 } else { BUCKET_SLOTS };
        #[cfg(all(target_arch = "x86_64", not(loom)))]
        {
            prefetch(self.slots.roots(), p.b1, n);
            prefetch(self.slots.metas(), p.b1, n);
            prefetch(self.slots.ack_vals(), p.b1, n);
            if self.buckets != 0 && matches!(m, AckerMessage::Init { .. }) {
                prefetch(self.slots.roots(), p.b2, n);
            }
            0
        }
        #[cfg(not(all(target_arch = "x86_64", not(loom))))]
        {
            let _ = n;
            self.slots.roots()[p.b1].load(Relaxed)
                ^ u64::from(self.slots.metas()[p.b1].load(Relaxed))
        }
    }

    /// `root`'s probe: its two buckets, or its home slot in a linear table.
    #[inline]
    fn probe(&self, root: RootId) -> Probe {
        if self.buckets == 0 {
            Probe {
                b1: reduce(root, self.capacity),
                b2: 0,
            }
        } else {
            let b1 = reduce(root, self.buckets);
            Probe {
                b1: b1 * BUCKET_SLOTS,
                b2: second_bucket(root, b1, self.buckets) * BUCKET_SLOTS,
            }
        }
    }

    /// The priority of slot `j` for probe `p`: its position in the window if it is in it, else
    /// `window` plus its distance from `p.b1`. Of two candidates of one root, the one with the
    /// smaller priority wins; every thread computes the same priorities.
    #[inline]
    fn priority(&self, p: Probe, j: usize) -> usize {
        if self.buckets != 0 {
            if j.wrapping_sub(p.b1) < BUCKET_SLOTS {
                return j - p.b1;
            }
            if j.wrapping_sub(p.b2) < BUCKET_SLOTS {
                return BUCKET_SLOTS + j - p.b2;
            }
            self.window + (j + self.capacity - p.b1) % self.capacity
        } else {
            (j + self.capacity - p.b1) % self.capacity
        }
    }

    /// Positions a probe for an absent root or a free slot may go through: the window, then every
    /// slot of the table.
    #[inline]
    fn full_span(&self) -> usize {
        if self.buckets == 0 {
            self.capacity
        } else {
            self.window + self.capacity
        }
    }

    /// Positions a lookup spans given the overflow count `count` just read: the window, and
    /// while overflow entries exist, past it up to the bound of the farthest non-empty distance
    /// class (within 4× of the farthest live overflow entry). The classes are read after the
    /// count, so every entry the count includes is in them.
    #[inline]
    fn span_for(&self, count: u64) -> usize {
        if count == 0 {
            return self.window;
        }
        let farthest = (0..OVERFLOW_CLASSES)
            .rev()
            .find(|&k| self.overflow_classes[k].load(Acquire) != 0)
            .map_or(0, class_bound);
        self.window.saturating_add(farthest).min(self.full_span())
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
                    self.live_stripe().fetch_sub(1, AcqRel);
                    return;
                }
                Err(now) => m = now,
            }
        }
    }

    /// Positions a lookup spans now (see [`span_for`](Self::span_for)).
    #[inline]
    fn span(&self) -> usize {
        self.span_for(self.overflow.load(Acquire))
    }

    /// The slots of the first `span` positions of probe `p` (`window ≤ span ≤ full_span`), in
    /// probe order, as up to four runs of consecutive slots `start..end` (some may be empty), so
    /// that scans walk slices instead of computing every position.
    #[inline]
    fn runs(&self, p: Probe, span: usize) -> [(usize, usize); 4] {
        let linear = |from: usize, n: usize| {
            let end = from + n;
            if end <= self.capacity {
                [(from, end), (0, 0)]
            } else {
                [(from, self.capacity), (0, end - self.capacity)]
            }
        };
        if self.buckets == 0 {
            let [a, b] = linear(p.b1, span);
            [a, b, (0, 0), (0, 0)]
        } else {
            let [a, b] = linear(p.b1, span - self.window);
            [
                (p.b1, p.b1 + BUCKET_SLOTS),
                (p.b2, p.b2 + BUCKET_SLOTS),
                a,
                b,
            ]
        }
    }

    /// `compare_exchange_weak` on slot `j`'s meta word (`m` → `new`) that keeps the overflow
    /// count: when it frees the slot of an overflow entry, the count drops. The root id is read
    /// before the CAS, while the slot is not free (it cannot change until then).
    #[inline]
    fn cas(&self, j: usize, m: u32, new: u32) -> Result<u32, u32> {
        let class = if new == FREE {
            self.overflow_distance(j).map(overflow_class)
        } else {
            None
        };
        let r = self.meta(j).compare_exchange_weak(m, new, AcqRel, Acquire);
        if let (Some(k), Ok(_)) = (class, r) {
            // The entry is gone: uncount it (in any order; a probe that still goes far for it
            // only reads more than it needs).
            self.overflow.fetch_sub(1, AcqRel);
            self.overflow_classes[k].fetch_sub(1, AcqRel);
        }
        r
    }

    /// How far past its root's window the entry in the (not free) slot `j` sits, if it is an
    /// overflow entry. The count is read first: an overflow entry's increment happened before
    /// its publication, which the caller has seen, so a count of 0 proves the slot is not one.
    #[inline]
    fn overflow_distance(&self, j: usize) -> Option<usize> {
        if self.capacity == self.window || self.overflow.load(Acquire) == 0 {
            return None;
        }
        let p = self.probe(self.slots.roots()[j].load(Acquire));
        self.priority(p, j).checked_sub(self.window)
    }

    /// Applies `op` to `root`'s entry, creating it if needed.
    fn run(&self, root: RootId, op: Op) -> Result<Decision, TableError> {
        if root == 0 {
            return Err(TableError::ZeroRoot);
        }
        let p = self.probe(root);
        // An init usually comes first, before any ack of its tree: it tries to create the entry
        // straight away, and the insert's own check for another entry of the root (which it must
        // make anyway) sends it to that entry when there is one.
        let mut look_first = !matches!(op, Op::Init { .. });
        loop {
            let found = if look_first { self.find(root, p) } else { None };
            look_first = true;
            let i = match found {
                Some(i) => i,
                None => match self.insert(root, p, op) {
                    // A new entry carrying the message: nothing more to apply.
                    Ok(Some(i)) => return Ok(self.release(i, matches!(op, Op::Reset))),
                    Ok(None) => continue, // lost to another candidate of the root: join it
                    Err(e) => {
                        // The root may have been inserted by another thread meanwhile.
                        match self.find(root, p) {
                            Some(i) => i,
                            None => return Err(e),
                        }
                    }
                },
            };
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
                        self.live_stripe().fetch_sub(1, AcqRel);
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
            let new = match state(m) {
                DEAD => dead(m, left),
                KILLED => killed(m, left),
                _ => m - PIN,
            };
            match self.cas(i, m, new) {
                Ok(_) => return,
                Err(now) => m = now,
            }
        }
    }

    /// Pins slot `j` if it is inserting or live and holds `root`. Returns the meta word as it
    /// was when the pin went in (so its state then), or `None` if it did not pin.
    fn pin(&self, j: usize, root: RootId) -> Option<u32> {
        let meta = self.meta(j);
        let mut m = meta.load(Acquire);
        loop {
            let s = state(m);
            if s != LIVE && s != INSERTING {
                return None;
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
            Some(m + PIN)
        } else {
            self.unpin(j);
            None
        }
    }

    /// Free slots in the run `start..end` (an expired entry met on the way is expired first).
    #[inline]
    fn free_in(&self, (start, end): (usize, usize)) -> usize {
        let metas = self.slots.metas();
        let mut free = 0;
        for (k, meta) in metas[start..end].iter().enumerate() {
            let m = meta.load(Acquire);
            if state(m) == LIVE && self.expired(m) {
                self.expire(start + k);
            }
            free += usize::from(meta.load(Acquire) == FREE);
        }
        free
    }

    /// Reserves (and pins) the first free slot of the run `start..end`, expiring expired entries
    /// met on the way. `None` if none is free.
    #[inline]
    fn claim_in(&self, (start, end): (usize, usize)) -> Option<usize> {
        let metas = self.slots.metas();
        for (k, meta) in metas[start..end].iter().enumerate() {
            let j = start + k;
            let mut m = meta.load(Acquire);
            loop {
                if state(m) == LIVE && self.expired(m) {
                    self.expire(j);
                    m = meta.load(Acquire);
                }
                if m != FREE {
                    break;
                }
                match meta.compare_exchange(FREE, RESERVED | PIN, AcqRel, Acquire) {
                    Ok(_) => return Some(j),
                    Err(now) => m = now,
                }
            }
        }
        None
    }

    /// Finds `root`'s live entry in its window and pins it (finishing the insert of a candidate
    /// it meets on the way). `None` if it has no live entry.
    fn find(&self, root: RootId, p: Probe) -> Option<usize> {
        let roots = self.slots.roots();
        'restart: loop {
            for (start, end) in self.runs(p, self.span()) {
                for (k, r) in roots[start..end].iter().enumerate() {
                    if r.load(Acquire) != root {
                        continue;
                    }
                    match self.join(start + k, root, p) {
                        Join::Joined => return Some(start + k),
                        Join::Next => {}
                        Join::Restart => continue 'restart,
                    }
                }
            }
            return None;
        }
    }

    /// `find`'s step at slot `j`, whose root id was just read as `root`.
    #[inline]
    fn join(&self, j: usize, root: RootId, p: Probe) -> Join {
        let m = self.meta(j).load(Acquire);
        match state(m) {
            LIVE if self.expired(m) => {
                self.expire(j);
                Join::Next
            }
            LIVE | INSERTING => {
                let Some(m) = self.pin(j, root) else {
                    return Join::Restart;
                };
                match state(m) {
                    LIVE if !self.expired(m) => Join::Joined,
                    INSERTING => {
                        self.resolve(j, root, p);
                        if state(self.meta(j).load(Acquire)) == LIVE {
                            return Join::Joined;
                        }
                        self.unpin(j);
                        Join::Restart
                    }
                    _ => {
                        self.unpin(j);
                        Join::Restart
                    }
                }
            }
            _ => Join::Next,
        }
    }

    /// Inserts a candidate entry for `root` that already carries `op` (its XOR, spout task or
    /// failed flag), and resolves it. `Ok(Some(i))`: the candidate at `i` became the root's
    /// entry (it may already have been decided or expired by another thread since), so `op` is
    /// applied; `i` is pinned. `Ok(None)`: another candidate won and this one, with `op`, was
    /// killed (never counted); apply `op` to the winner.
    fn insert(&self, root: RootId, p: Probe, op: Op) -> Result<Option<usize>, TableError> {
        let [r1, r2, rest1, rest2] = self.runs(p, self.full_span());
        // The window first: in a bucketed table, the first bucket while at least half of it is
        // free, else the bucket with more free slots (two choices keep buckets evenly filled, so
        // windows rarely overflow; the threshold spares most inserts the second bucket's cache
        // line); then, only if the window is full, the rest of the table.
        let window = if self.buckets != 0 && {
            let free1 = self.free_in(r1);
            free1 < BUCKET_SLOTS / 2 && self.free_in(r2) > free1
        } {
            [r2, r1]
        } else {
            [r1, r2]
        };
        let claimed = window
            .into_iter()
            .chain([rest1, rest2])
            .find_map(|run| self.claim_in(run));
        let Some(j) = claimed else {
            return Err(TableError::Full);
        };
        let (ack_val, flags) = match op {
            Op::Init { xor, spout_task } => (xor, INIT_CLAIMED | HAS_TASK | spout_task as u32),
            Op::Ack { xor } => (xor, 0),
            Op::Fail => (0, FAILED),
            Op::Reset => (0, 0),
        };
        self.slots.roots()[j].store(root, Relaxed);
        self.slots.ack_vals()[j].store(ack_val, Relaxed);
        let priority = self.priority(p, j);
        if priority >= self.window {
            // Counted before it is published, in its class first: every probe that could meet
            // it then goes as far (see `resolve` for the candidates' side).
            let k = overflow_class(priority - self.window);
            self.overflow_classes[k].fetch_add(1, SeqCst);
            self.overflow.fetch_add(1, SeqCst);
        }
        let epoch = self.epoch.load(Acquire);
        // Publish the candidate (release: the root id and the ack val go with it).
        self.meta(j)
            .swap(with_stamp(INSERTING | PIN | flags, epoch), AcqRel);
        self.resolve(j, root, p);
        if state(self.meta(j).load(Acquire)) == KILLED {
            self.unpin(j);
            Ok(None)
        } else {
            Ok(Some(j))
        }
    }

    /// Decides whether the candidate at `e` (pinned by the caller, holding `root`, at probe
    /// position `pos_e`) becomes the root's live entry or dies. Any thread holding a pin on a
    /// candidate may run this; all runs agree.
    fn resolve(&self, e: usize, root: RootId, p: Probe) {
        // Pairs with the fence of every other candidate's resolution: of two candidates of one
        // root, at least one sees the other's publication (and, if that one is an overflow
        // entry, its count, which was raised before it was published, so the scan spans it).
        fence(SeqCst);
        let span = self.span_for(self.overflow.load(SeqCst));
        let prio_e = self.priority(p, e);
        let roots = self.slots.roots();
        for (start, end) in self.runs(p, span) {
            for (k, r) in roots[start..end].iter().enumerate() {
                let j = start + k;
                if j != e && r.load(Acquire) == root && !self.outranks(prio_e, j, p) {
                    self.kill(e);
                    return;
                }
            }
        }
        let meta = self.meta(e);
        let mut m = meta.load(Acquire);
        while state(m) == INSERTING {
            match meta.compare_exchange_weak(m, (m & !STATE_MASK) | LIVE, AcqRel, Acquire) {
                Ok(_) => {
                    self.live_stripe().fetch_add(1, AcqRel);
                    return;
                }
                Err(now) => m = now,
            }
        }
    }

    /// `resolve`'s step at slot `j`, whose root id was just read as the candidate's: whether the
    /// candidate (priority `prio_e`) still stands. It does not if `j` holds a live entry of
    /// the root or a candidate of smaller priority; a candidate of larger priority is killed.
    #[inline]
    fn outranks(&self, prio_e: usize, j: usize, p: Probe) -> bool {
        let mut m = self.meta(j).load(Acquire);
        loop {
            match state(m) {
                LIVE if !self.expired(m) => return false,
                INSERTING if self.priority(p, j) < prio_e => return false,
                INSERTING => {
                    // A candidate farther from home loses to this one.
                    match self.cas(j, m, killed(m, pins(m))) {
                        Ok(_) => return true,
                        Err(now) => m = now,
                    }
                }
                _ => return true,
            }
        }
    }

    /// Kills the candidate at `e` if it is still inserting (the caller holds a pin on it).
    fn kill(&self, e: usize) {
        let meta = self.meta(e);
        let mut m = meta.load(Acquire);
        while state(m) == INSERTING {
            match self.cas(e, m, killed(m, pins(m))) {
                Ok(_) => return,
                Err(now) => m = now,
            }
        }
    }
}
