//! The shared acker table: one table, many threads, fine-grained slot locks.
//!
//! [`SharedAckerTable`] follows exactly the rules of the single-owner [`AckerTable`]
//! (see [`crate::table`]: Storm 2.x's acker, rules 1–6), but every operation takes `&self` and may
//! be called from any number of threads at once, so an engine whose threads ack tuples directly
//! does not have to route each message to one owner thread.
//!
//! It is *linearizable* against [`AckerTable`]: whatever the threads do, every call's result
//! (decision, error, entry, length) is the one that call gets in some sequential order of the
//! same calls on an [`AckerTable`], an order in which a call that returned before another began
//! comes first, and the table ends in the state that order leaves.
//!
//! ## Layout: still 20 bytes a root
//!
//! A 20-byte struct of atomics cannot keep its 8-byte atomics aligned, so the storage is a
//! structure of arrays, provided by the caller through [`SharedStorage`] (usually a
//! [`SharedSlots`]): for slot `i`, `roots[i]` (8 bytes), `ack_vals[i]` (8 bytes) and `metas[i]`
//! (4 bytes). Total memory is `20 × capacity` plus the fixed table header of under 1 KiB
//! ([`SharedAckerTable::memory_bytes`]; mostly the live count's cache-padded stripes and 32
//! insert locks); nothing is ever allocated.
//!
//! The 32-bit meta word of a slot:
//!
//! | bits | field |
//! | --- | --- |
//! | 0–15 | spout task |
//! | 16 | spout task known (the init has arrived) |
//! | 17 | failed |
//! | 18 | locked: one thread is reading or changing the slot |
//! | 19–20 | slot state: free, reserved (an insert is writing it), live |
//! | 21–25 | unused (0) |
//! | 26–31 | timeout stamp (the table epoch modulo 64 at the last (re)insertion) |
//!
//! ## Why every result is a sequential one
//!
//! An entry is two words (the ack val and the meta word) that no atomic instruction updates
//! together, and rule 3 decides on both. The pin-count design this table had before (threads
//! inside an entry at once, each XORing into the ack val, whichever sealed the entry reporting
//! the decision) gave results no sequential order gives: a fail that sealed an entry on a
//! snapshot missing the last ack's XOR reported `Failed` while that ack, ordered after it,
//! reported `Pending` and left no orphan; a sweep that expired an entry after an ack's XOR had
//! brought it to 0 made the ack report `Pending` with nothing left; a `get` read the meta word of
//! one root and the ack val of the root that reused its slot. So each slot has a lock (the
//! *locked* bit), and every call makes its whole change at one instant, its *linearization
//! point*:
//!
//! * **An existing entry is read and changed only under its slot's lock.** A lookup reads root
//!   ids without locking, takes the lock of a live slot holding its root (one CAS on the meta
//!   word; while another thread holds it, it waits), checks the root id again (the slot may have
//!   been freed and reused meanwhile; under the lock it cannot change) and reads the epoch once.
//!   By that epoch the entry is either live, and the call applies the single-owner table's
//!   change (XOR, spout task, failed flag, new stamp) and rule 3, releasing the lock with the
//!   new meta word (one store); or it has expired, and the call removes it and goes on as for
//!   an absent root. An ack of a live entry that is not decided costs one atomic
//!   read-modify-write (the lock's CAS) and two stores. The lookup scans the root's window
//!   inlined into [`ack`](SharedAckerTable::ack) (and `fail`, `reset_timeout`; one hash and 8 root ids, and only if the root is not there the
//!   second bucket's hash and 8 more); only a root found in neither costs the overflow count and
//!   an out-of-line call. A live entry found in the window is the root's (a root has at most one
//!   entry), so that shortcut needs no other check and changes no ordering.
//!   [`get`](SharedAckerTable::get) takes the lock too, so the ack val, spout task and failed
//!   flag it returns were the entry's together.
//! * **The live count moves at the linearization points.** A new entry is counted while its slot
//!   is still locked, then published; a decided or expired entry leaves the count while its slot
//!   is locked, then the slot is freed. A lookup that meets a locked slot waits, so no call sees
//!   an entry the count does not include, or the reverse. [`len`](SharedAckerTable::len) reads
//!   the count's stripes until two readings agree: each stripe only grows (an update adds
//!   `2^32 ± 1`: a version and the change), so they held those values together in between.
//! * **One insert per root at a time.** A call that finds no entry for its root takes the root's
//!   insert lock (one of 32 in the header, chosen by a hash of the root), looks again, and only
//!   then claims a free slot (free → reserved and locked), writes the entry and publishes it.
//!   Two calls for one new root thus never both create an entry, and a call for a root that has
//!   an entry never takes (or counts) an overflow slot on its way to it. An init, which usually
//!   creates its entry, goes straight to the insert lock. An entry decided as it is created (an
//!   init of a tree with nothing outstanding) is never published.
//! * **`Full` only when the table was full.** An insert returns [`TableError::Full`] only if its
//!   claim found no free slot and then the live count was `capacity` at one instant (and its
//!   root had no entry: it holds the root's insert lock). If the count was lower, a slot was
//!   being freed or written by another thread, or was freed after the claim passed it: it looks
//!   again (under loom this wait is what makes model 7 costly, see `tests/loom.rs`).
//!
//! ## Expiry, and the orders allowed around it
//!
//! As in the single-owner table: a (re)insertion stamps the entry with the table epoch (creating
//! an entry, a fail and a reset-timeout do; an init or an ack of an existing entry do not), the
//! epoch advances by `min(clock epochs elapsed, 3)` per [`tick`](SharedAckerTable::tick), and an
//! entry whose stamp is 3 epochs old has expired (2T to 3T after its last (re)insertion): no
//! operation joins it any more, a message for its root creates a fresh entry.
//!
//! A tick's linearization point is its epoch advance: every entry it expires becomes invisible
//! to every call at that instant. The tick then sweeps the whole table and removes them (about a
//! nanosecond a slot, once per message timeout), and [`len`](SharedAckerTable::len) waits while
//! a sweep is in progress, so the count drops at that same instant. One tick at a time advances
//! the epoch; a concurrent tick waits for it.
//!
//! A call on an entry that a concurrent tick expires is ordered wholly before or wholly after
//! that tick, by the one epoch it read under the entry's lock, and both orders are allowed:
//!
//! * **before the tick**: the call applies to the entry as it was. If that decides the tree it
//!   reports the decision (the last ack of a tree reports `Completed`); otherwise the sweep then
//!   removes the entry, with the call's change in it, unless a fail or reset restamped it with
//!   the new epoch (it then lives on).
//! * **after the tick**: the entry has expired; the call creates a fresh entry holding only its
//!   own message (the last ack of a tree leaves an orphan with its XOR, `len()` 1, and reports
//!   `Pending`), as the single-owner table does for a message that comes after the expiry.
//!
//! The sweep waits for every slot another thread holds, and an insert reads the epoch for its
//! stamp only after it has claimed its slot, with a `SeqCst` fence on both sides (after the
//! tick's epoch advance, after the insert's claim): either the sweep sees the claimed slot and
//! waits for the entry to be published (and removes it if its stamp is old), or the insert reads
//! the new epoch. So no entry is ever published already expired past the sweep that should have
//! removed it, and once every call has returned `len()` is the number of entries `get` sees.
//!
//! ## Probing, overflow and the trade-off
//!
//! Tables of at most [`LINEAR_MAX_CAPACITY`] (64) slots probe linearly through the whole table
//! from the root's home slot. Larger tables give each root a *window* of two buckets of
//! [`BUCKET_SLOTS`] (8) slots, one cache line of root ids each, chosen by two hashes of the root
//! id; a new root goes to its first bucket while at least 3 of its 8 slots are free, else to the
//! bucket with more free slots (two choices keep the buckets evenly filled; the threshold keeps
//! most roots in their first bucket, which a lookup reads first: at load 0.5 about 16% of roots
//! sit in their second bucket, against 27% with a threshold of half the bucket;
//! `benches/RESULTS.md` Set S4). Nothing is ever moved, so freed slots leave holes and a lookup
//! of an absent root (each new root) reads its whole window: 16 root ids.
//!
//! A root whose window is full takes the first free slot after its first bucket: an *overflow*
//! entry ([`SharedAckerTable::overflow_len`]). Its inserter counts it before publishing it, in
//! one of eight classes of distance past the window: class `k` (0 to 6) holds the entries less
//! than `16 × 4^k` slots past it (below 16, 64, 256, 1 024, 4 096, 16 384, 65 536 slots), class 7
//! every entry 65 536 or more slots past it. While any is live every probe also scans past the
//! window up to the bound of the farthest non-empty class, and while class 7 is not empty, round
//! the whole table ([`SharedAckerTable::probe_len`] is then `capacity`); so
//! [`TableError::Full`] means what it means for [`AckerTable`]: every slot holds an entry. The
//! price is speed, not correctness, and it lasts as long as the far entries do: an entry that
//! overflowed when the table was nearly full may sit thousands of slots past its buckets, and
//! every new root's lookup reads that far until it is decided or expires (a new-user trial
//! measured 0.02 M ops/s on a 100 000-slot table at 1% load with 824 such entries left from a
//! fill to `Full`, against 14 M ops/s without; with one near entry left, 11.9 M ops/s). Measured
//! with random roots and steady churn (each tree replaced as it completes, 4 M replacements, on
//! 2 000, 200 000 and 2 000 000 slots; `benches/examples/shared_overflow_churn.rs`): at load 0.5
//! no window overflowed; at 0.6 about 115 roots overflowed (4× as many as with a threshold of
//! half the bucket), and at least one overflow entry was live 4% of the time on 2 000 slots and
//! nearly always on the larger tables (up to 8 and 46 at once); at 0.7 there were always some (up
//! to about 400 of 140 000 roots); at 0.8, thousands. Size tables at load ≤ 0.5 (40 bytes a root;
//! the benchmarks use 0.5). On `Full` nothing changed and the caller retries (back-pressure).
//!
//! ## Progress guarantees
//!
//! The table is blocking, at the grain of one slot: no call holds more than one slot lock at a
//! time, and none holds a lock across a loop or a wait, except that an insert holds its root's
//! insert lock while it waits for slot locks (no thread holding a slot lock waits for anything,
//! so no cycle of waits can form).
//!
//! | operation | waits for |
//! | --- | --- |
//! | [`init`](SharedAckerTable::init), [`ack`](SharedAckerTable::ack), [`fail`](SharedAckerTable::fail), [`reset_timeout`](SharedAckerTable::reset_timeout), [`apply`](SharedAckerTable::apply), [`get`](SharedAckerTable::get) | the lock of a slot its lookup meets holding its root, while another call on that slot holds it (a few instructions); a new root: its insert lock (other inserts of roots with the same hash), and the locks of slots its claim meets |
//! | [`tick`](SharedAckerTable::tick) | another tick advancing the epoch; during its sweep, each slot another thread holds |
//! | [`len`](SharedAckerTable::len), [`is_empty`](SharedAckerTable::is_empty) | a sweep in progress; it reads again while inserts or decisions land |
//! | [`capacity`](SharedAckerTable::capacity), [`probe_len`](SharedAckerTable::probe_len), [`overflow_len`](SharedAckerTable::overflow_len), [`memory_bytes`](SharedAckerTable::memory_bytes) | nothing (wait-free) |
//!
//! A thread stalled (preempted) while it holds a slot lock delays the calls on that root, the
//! inserts whose claim meets that slot, and a tick's sweep when it reaches it (and so `len`); it
//! never makes another call return a wrong answer. The locks are spin locks: on an
//! oversubscribed machine a waiter spins until the holder runs again.
//!
//! ## Verification
//!
//! * `tests/loom.rs`: loom models (init ∥ ack, two completing acks, fail ∥ last ack, reset ∥ ack,
//!   racing inserts of one root and of colliding roots, slot reuse ∥ late ack, tick ∥ updates,
//!   insert into a full table ∥ completion, two overflow inserts of one root, an overflow and an
//!   in-window insert of one root, and the four interleavings of issue 13: `get` ∥ slot reuse,
//!   epoch advance ∥ insert, last ack ∥ its expiry, fail ∥ last ack; and last ack ∥ its expiry
//!   with the entry in the second of the two runs the inlined lookup scans), each exhaustive at
//!   `LOOM_MAX_PREEMPTIONS=3` unless it says otherwise:
//!   `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p acker-core --release --test loom`.
//!   The four of issue 13 check the exact outcomes sequential orders allow, and fail on the
//!   pin-count design.
//! * `tests/shared_linearizable.rs`: a linearizability checker. It runs short random concurrent
//!   histories (2–4 threads, 1–4 calls each of init, ack, fail, reset, get, tick and len, on
//!   tables of 1–4 slots) against this table and searches (Wing–Gong) for a sequential order of
//!   the same calls on [`AckerTable`] that respects their real-time order and gives the same
//!   results and final state; 20 s of histories per run, plus every history it ever rejected,
//!   kept as regressions. On the pin-count design it rejected a history within 3 s.
//! * `tests/shared_model.rs`: quickcheck differential test against [`AckerTable`] (same
//!   decisions, errors, lengths and entries on random message sequences with ticks, on linear
//!   tables of 1–16 slots and bucketed tables of 65–100 slots filled until windows overflow and
//!   `Full` comes). The loom models use linear tables of 1–3 slots (a bucketed table has at
//!   least 72 slots, too many for loom); bucketed tables differ only in the probe order, and are
//!   covered by these tests, the stress tests and the fuzz target.
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
use crate::sync::{fence, release_store_u32, release_store_u64, spin_hint, Ordering};
pub use crate::sync::{AtomicU32, AtomicU64};
#[cfg(all(target_arch = "x86_64", not(loom)))]
use crate::table::prefetch;
use crate::table::{
    apply_reading_ahead, second_bucket, ConfigError, EntryView, TableError,
    BATCH_READ_AHEAD_MIN_SLOTS, EXPIRY_EPOCHS,
};

use Ordering::{AcqRel, Acquire, Relaxed, Release, SeqCst};

const TASK_MASK: u32 = 0xFFFF;
const HAS_TASK: u32 = 1 << 16;
const FAILED: u32 = 1 << 17;
/// The slot's lock: held by the one thread reading or changing the slot (see the module docs).
const LOCKED: u32 = 1 << 18;

const STATE_SHIFT: u32 = 19;
const STATE_MASK: u32 = 0b11 << STATE_SHIFT;
/// Free: no entry; `roots`/`ack_vals` hold garbage. The whole meta word is 0.
const FREE: u32 = 0;
/// Claimed by an inserter (always together with [`LOCKED`]) that is writing the entry.
const RESERVED: u32 = 1 << STATE_SHIFT;
/// The root's entry.
const LIVE: u32 = 2 << STATE_SHIFT;

const STAMP_SHIFT: u32 = 26;
const STAMP_MASK: u32 = 0b11_1111;

/// Tables of at most this many slots probe linearly through the whole table from a root's home
/// slot. Larger tables give each root a window of two buckets of [`BUCKET_SLOTS`] slots; a root
/// whose window is full goes to a free slot outside it (an *overflow* entry, see the module docs).
pub const LINEAR_MAX_CAPACITY: usize = 64;

/// Counters the live count is spread over (see [`SharedAckerTable::len`]). Two under loom,
/// picked by slot instead of by stack address (see `live_stripe`), so that models do not depend
/// on where loom's threads have their stacks and still meet `len`'s reading of several stripes.
#[cfg(not(loom))]
const LIVE_STRIPES: usize = 4;
#[cfg(loom)]
const LIVE_STRIPES: usize = 2;

/// What one insert adds to its live-count stripe, and what one removal adds (see
/// [`SharedAckerTable::len`]): either way the stripe's high 32 bits count the updates, so a
/// stripe's value only ever grows (until it wraps after 2^32 updates) and two equal readings of
/// it mean it did not change in between; its low 32 bits are the stripe's net count modulo 2^32.
const STRIPE_ADD: u64 = (1 << 32) + 1;
const STRIPE_SUB: u64 = (1 << 32) - 1;

/// The live count a reading of the stripes gives: the sum of their net counts, modulo 2^32
/// (the true count is at most `capacity <= u32::MAX`, so the sum is exact).
fn stripes_count(readings: &[u64; LIVE_STRIPES]) -> usize {
    readings
        .iter()
        .fold(0u32, |sum, &r| sum.wrapping_add(r as u32)) as usize
}

/// Insert locks in the table header: an insert holds the one its root hashes to while it looks
/// for the root's entry and, if there is none, creates it, so two inserts of one root never
/// both create an entry.
const INSERT_LOCKS: usize = 32;

/// Slots in a bucket of a table above [`LINEAR_MAX_CAPACITY`] slots: one 64-byte cache line of
/// root ids. A root's window is its two buckets, 16 slots.
pub const BUCKET_SLOTS: usize = 8;

/// A new root goes to its first bucket while at least this many of its [`BUCKET_SLOTS`] slots
/// are free (else to the bucket with more free slots). Measured at load 0.5 with steady churn
/// (`benches/RESULTS.md` Set S4): 3 puts 16% of roots in their second bucket and no window
/// overflows in 4 M replacements; 4 (half the bucket) puts 27% there, and every ack of such a
/// root reads both buckets; 2 (8%) lets windows overflow at load 0.5 on large tables.
const FIRST_BUCKET_MIN_FREE: usize = 3;

/// What [`SharedAckerTable::find_in`] met in one run of slots.
enum Found {
    /// The root is not in the run.
    Missing,
    /// The root's live entry, locked: its slot, its meta word and the epoch read under the lock.
    Live((usize, u32, u32)),
    /// The root's entry had expired and was removed: it has no live one.
    Expired,
}

/// Where `root`'s probe goes: the first slot of each of its two buckets (bucketed tables), or its
/// home slot (`b1`, linear tables; `b2` unused).
#[derive(Clone, Copy)]
struct Probe {
    b1: usize,
    b2: usize,
}

/// Distance classes of overflow entries. Class `k` for `k < OVERFLOW_CLASSES - 1` (0 to 6)
/// counts the entries whose distance past their window is below [`class_bound`]`(k) = 16 × 4^k`
/// slots: 16, 64, 256, 1 024, 4 096, 16 384 and 65 536. The last class (7) counts every entry
/// 65 536 or more slots past its window, and has no bound: while it is not empty a probe spans
/// the whole table. A probe goes as far as the bound of the farthest non-empty class.
const OVERFLOW_CLASSES: usize = 8;

/// The class of an overflow entry `dist` slots past its window.
#[inline]
fn overflow_class(dist: usize) -> usize {
    (0..OVERFLOW_CLASSES - 1)
        .find(|&k| dist < class_bound(k))
        .unwrap_or(OVERFLOW_CLASSES - 1)
}

/// Distances in class `k` are below this: `16 × 4^k` (`usize::MAX` for the last class, which is
/// unbounded).
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
fn stamp_of(m: u32) -> u32 {
    m >> STAMP_SHIFT
}

#[inline]
fn with_stamp(m: u32, epoch: u32) -> u32 {
    (m & !(STAMP_MASK << STAMP_SHIFT)) | ((epoch & STAMP_MASK) << STAMP_SHIFT)
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

/// Spins until `lock` (an insert lock) is taken.
#[inline]
fn acquire(lock: &AtomicU32) {
    while lock.compare_exchange_weak(0, 1, Acquire, Relaxed).is_err() {
        while lock.load(Relaxed) != 0 {
            spin_hint();
        }
    }
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

/// The operation being applied.
#[derive(Clone, Copy)]
enum Op {
    Init { xor: u64, spout_task: TaskId },
    Ack { xor: u64 },
    Fail,
    Reset,
}

/// An [`Op`] as two words, the form in which it is handed to the out-of-line parts of a call:
/// the XOR (0 for a fail or reset), and the meta-word flags a new entry for it starts with
/// (spout task and `HAS_TASK` for an init, `FAILED` for a fail) with the kind in bits 30–31. A
/// pair of scalars travels in two registers, where the enum would be passed through memory,
/// and a stack slot whose address is passed (read again after the slot lock's acquiring CAS)
/// kept the inlined ack path from knowing its operation at compile time (an indirect jump and
/// three stack accesses an ack).
#[derive(Clone, Copy)]
struct PackedOp(u64, u32);

const KIND_SHIFT: u32 = 30;
const KIND_INIT: u32 = 0;
const KIND_ACK: u32 = 1;
const KIND_FAIL: u32 = 2;
const KIND_RESET: u32 = 3;

impl Op {
    #[inline(always)]
    fn pack(self) -> PackedOp {
        match self {
            Op::Init { xor, spout_task } => PackedOp(
                xor,
                HAS_TASK | u32::from(spout_task) | KIND_INIT << KIND_SHIFT,
            ),
            Op::Ack { xor } => PackedOp(xor, KIND_ACK << KIND_SHIFT),
            Op::Fail => PackedOp(0, FAILED | KIND_FAIL << KIND_SHIFT),
            Op::Reset => PackedOp(0, KIND_RESET << KIND_SHIFT),
        }
    }
}

impl PackedOp {
    #[inline(always)]
    fn unpack(self) -> Op {
        let PackedOp(xor, code) = self;
        match code >> KIND_SHIFT {
            KIND_INIT => Op::Init {
                xor,
                spout_task: (code & TASK_MASK) as TaskId,
            },
            KIND_ACK => Op::Ack { xor },
            KIND_FAIL => Op::Fail,
            _ => Op::Reset,
        }
    }

    /// The ack val and meta-word flags of a new entry created by this operation.
    #[inline(always)]
    fn new_entry(self) -> (u64, u32) {
        (self.0, self.1 & (TASK_MASK | HAS_TASK | FAILED))
    }
}

/// The acker table shared by many threads (see the [module docs](self) for its design, why every
/// result is one the single-owner table could give, its progress guarantees and trade-offs).
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
    /// Live entries (inserted and neither decided nor expired), as [`LIVE_STRIPES`] counters
    /// (see [`STRIPE_ADD`]). Every insert and decision writes one: each on its own cache line,
    /// away from the read-mostly words every operation reads, and chosen by the caller's stack
    /// address so that threads mostly write their own line.
    live: [CachePadded<AtomicU64>; LIVE_STRIPES],
    /// Even while no tick is sweeping; a tick makes it odd before it advances the epoch and even
    /// again after its sweep (it is also the lock that lets one tick at a time advance the
    /// epoch). [`len`](Self::len) reads the live count only between two equal even values.
    sweep_seq: AtomicU64,
    /// `now_ns / timeout_ns` at the last tick.
    clock_epoch: AtomicU64,
    /// Internal epoch: advances by `min(clock epochs elapsed, 3)` per tick.
    epoch: AtomicU32,
    /// Entries outside their root's window, counted from before they are published until after
    /// their slot is freed. While it is not 0, probes also go past the window, as far as
    /// `overflow_classes` says.
    overflow: AtomicU64,
    /// The same entries by distance class ([`OVERFLOW_CLASSES`]); each is counted in its class
    /// before it is counted in `overflow`.
    overflow_classes: [AtomicU64; OVERFLOW_CLASSES],
    /// See [`INSERT_LOCKS`].
    insert_locks: [AtomicU32; INSERT_LOCKS],
}

impl<S> core::fmt::Debug for SharedAckerTable<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let readings = core::array::from_fn(|k| self.live[k].load(Relaxed));
        f.debug_struct("SharedAckerTable")
            .field("capacity", &self.capacity)
            .field("len", &stripes_count(&readings).min(self.capacity))
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
    /// [`ConfigError::LengthMismatch`] when the storage's three arrays differ in length (a
    /// [`SharedStorage`] other than [`SharedSlots`], which checks it itself),
    /// [`ConfigError::ZeroCapacity`] for empty storage, [`ConfigError::CapacityTooLarge`] above
    /// `u32::MAX` slots, [`ConfigError::ZeroTimeout`] for a zero timeout.
    pub fn new(storage: S, message_timeout_ns: u64) -> Result<Self, ConfigError> {
        let (roots, ack_vals, metas) = (storage.roots(), storage.ack_vals(), storage.metas());
        if roots.len() != metas.len() || ack_vals.len() != metas.len() {
            return Err(ConfigError::LengthMismatch(SlotsLengthMismatch {
                roots: roots.len(),
                ack_vals: ack_vals.len(),
                metas: metas.len(),
            }));
        }
        let cap = metas.len();
        ConfigError::check(cap, message_timeout_ns)?;
        for ((r, v), m) in roots.iter().zip(ack_vals).zip(metas) {
            r.store(0, Relaxed);
            v.store(0, Relaxed);
            m.store(FREE, Relaxed);
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
            live: core::array::from_fn(|_| CachePadded::new(AtomicU64::new(0))),
            sweep_seq: AtomicU64::new(0),
            clock_epoch: AtomicU64::new(0),
            epoch: AtomicU32::new(0),
            overflow: AtomicU64::new(0),
            overflow_classes: core::array::from_fn(|_| AtomicU64::new(0)),
            insert_locks: core::array::from_fn(|_| AtomicU32::new(0)),
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
    /// [`tick`](Self::tick) that expires them).
    ///
    /// Linearizable: the count at one instant during the call. It reads the live-count stripes
    /// until two readings in a row agree (each stripe's value only grows, so they held those
    /// values together in between), and only while no tick is sweeping (it waits for a sweep in
    /// progress to finish, at most one pass over the table). Lock-free: it reads again only
    /// because an insert, a decision or a tick landed meanwhile.
    pub fn len(&self) -> usize {
        let mut seq = self.sweep_seq.load(Acquire);
        loop {
            if seq & 1 == 1 {
                spin_hint();
                seq = self.sweep_seq.load(Acquire);
                continue;
            }
            let mut readings = self.read_stripes();
            if LIVE_STRIPES > 1 {
                loop {
                    let again = self.read_stripes();
                    if again == readings {
                        break;
                    }
                    readings = again;
                }
            }
            // Seqlock read: a stripe value written by a sweep makes the odd `sweep_seq` visible
            // here (the sweep's release fence pairs with this acquire fence).
            fence(Acquire);
            let again = self.sweep_seq.load(Relaxed);
            if again == seq {
                return stripes_count(&readings);
            }
            seq = again;
        }
    }

    fn read_stripes(&self) -> [u64; LIVE_STRIPES] {
        core::array::from_fn(|k| self.live[k].load(Acquire))
    }

    /// Slots a lookup of an absent root reads now (each new root's lookup, and an insert's check
    /// for another entry of its root): the window (16 slots; the whole table up to 64 slots),
    /// plus, while overflow entries live, up to the distance bound of the farthest of them
    /// (within 4× of its distance; the whole table for one 65 536 or more slots past its
    /// window), at most `capacity`. For monitoring: a value far above 16 means the table is too
    /// full. A snapshot.
    #[inline]
    pub fn probe_len(&self) -> usize {
        // A probe past the window goes round the whole table, passing the window's slots again:
        // count distinct slots.
        self.span().min(self.capacity)
    }

    /// The number of overflow entries: roots that found their window (their two buckets) full
    /// and live in a free slot past it. While it is not 0, every lookup of an absent root (each
    /// new root) also scans past the window as far as the farthest of them: a sign the table is
    /// too small for its load (see the module docs). A snapshot, for monitoring.
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

    /// The live entry of `root`, if any: its ack val, spout task and failed flag as they were
    /// together at one instant during the call (it holds the entry's lock while it reads them).
    pub fn get(&self, root: RootId) -> Option<EntryView> {
        if root == 0 {
            return None;
        }
        let (j, m, _) = self.find(root, self.probe(root))?;
        let ack_val = self.slots.ack_vals()[j].load(Relaxed);
        self.unlock(j, m);
        Some(EntryView {
            ack_val,
            spout_task: (m & HAS_TASK != 0).then_some((m & TASK_MASK) as TaskId),
            failed: m & FAILED != 0,
        })
    }

    /// Applies one acker message (dispatches to [`init`](Self::init), [`ack`](Self::ack),
    /// [`fail`](Self::fail) or [`reset_timeout`](Self::reset_timeout)).
    ///
    /// Always inlined: the caller branches on the message kind and makes one out-of-line call
    /// (to `ack`, `fail` or `reset_timeout`, or for an init to the insert), passing the fields
    /// in registers (`benches/RESULTS.md` Set S5).
    ///
    /// # Errors
    /// As the operation it dispatches to.
    #[inline(always)]
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
    #[inline]
    pub fn init(&self, root: RootId, xor: u64, spout_task: TaskId) -> Result<Decision, TableError> {
        if root == 0 {
            return Err(TableError::ZeroRoot);
        }
        // An init usually comes first, before any ack of its tree: it goes straight to the
        // insert, which must look for an entry of the root anyway.
        self.run_insert(root, Op::Init { xor, spout_task }.pack())
    }

    /// A bolt's ack: XORs `xor` into the root's ack val (creating the entry if the root is
    /// unknown). Completes the tree when the ack val reaches 0 and the spout task is known.
    ///
    /// # Errors
    /// [`TableError::ZeroRoot`], [`TableError::Full`]. Nothing changes on error.
    #[inline(never)]
    pub fn ack(&self, root: RootId, xor: u64) -> Result<Decision, TableError> {
        self.run(root, Op::Ack { xor })
    }

    /// A bolt's fail: marks the tree failed and restarts its expiry (as Storm's acker `put`s it).
    /// The spout hears `Failed` once the spout task is known, unless the ack val is 0 (an ack wins).
    ///
    /// # Errors
    /// [`TableError::ZeroRoot`], [`TableError::Full`]. Nothing changes on error.
    #[inline(never)]
    pub fn fail(&self, root: RootId) -> Result<Decision, TableError> {
        self.run(root, Op::Fail)
    }

    /// A bolt's reset-timeout: restarts the root's expiry and, once the spout task is known and
    /// the tree neither completed nor failed, asks to forward [`Decision::Reset`] to the spout.
    ///
    /// # Errors
    /// [`TableError::ZeroRoot`], [`TableError::Full`]. Nothing changes on error.
    #[inline(never)]
    pub fn reset_timeout(&self, root: RootId) -> Result<Decision, TableError> {
        self.run(root, Op::Reset)
    }

    /// Advances the table's clock to `now_ns` (the injected clock; a value earlier than the last
    /// tick is ignored). Each time the clock crosses a multiple of the message timeout, the
    /// entries stamped 3 epochs ago expire, all at once: at the instant the epoch advances, no
    /// operation sees them any more. The call that advances the epoch then sweeps the whole table
    /// once and reclaims them, and [`len`](Self::len) waits for that sweep, so it drops them at
    /// that same instant, as [`AckerTable::tick`](crate::AckerTable::tick) does. Expiry is
    /// silent: no decision is returned, as in Storm, where the spout times the tuple out itself.
    /// Safe to call from several threads at once (one at a time advances the epoch; the others
    /// wait for it). A tick that does not cross a multiple of the timeout costs one atomic load.
    pub fn tick(&self, now_ns: u64) {
        let clock_epoch = now_ns / self.timeout_ns;
        if clock_epoch <= self.clock_epoch.load(Acquire) {
            return;
        }
        // One tick at a time advances the epoch: the sweep lock is an odd `sweep_seq`.
        let mut s = self.sweep_seq.load(Relaxed);
        let seq = loop {
            if s & 1 == 0
                && self
                    .sweep_seq
                    .compare_exchange_weak(s, s + 1, Acquire, Relaxed)
                    .is_ok()
            {
                break s;
            }
            spin_hint();
            s = self.sweep_seq.load(Acquire);
        };
        // Seqlock write: a `len` that reads a live-count stripe this sweep writes also sees the
        // odd `sweep_seq` (this release fence pairs with its acquire fence).
        fence(Release);
        let seen = self.clock_epoch.load(Relaxed);
        if clock_epoch > seen {
            let steps = (clock_epoch - seen).min(EXPIRY_EPOCHS as u64) as u32;
            self.epoch.fetch_add(steps, AcqRel);
            // Only after the epoch: a tick that reads this clock and returns at once (it is not
            // ahead of it) comes after this one, so the expiry must already be in force.
            self.clock_epoch.store(clock_epoch, Release);
            // Pairs with the fence of every insert (see `insert_locked`): either this sweep sees
            // the slot an insert claimed, and waits for the insert to publish it, or the insert
            // reads the new epoch and stamps its entry with it.
            fence(SeqCst);
            for j in 0..self.capacity {
                self.expire(j);
            }
        }
        release_store_u64(&self.sweep_seq, seq + 2);
    }

    // ---- internals ----------------------------------------------------------------------------

    /// The live-count stripe this thread writes for a change at slot `j`: picked from the
    /// address of a local variable (thread stacks are at least 2 MiB apart), so threads mostly
    /// write different cache lines. Which stripe is used never changes any result: only the sum
    /// of the stripes is read.
    #[inline]
    fn live_stripe(&self, j: usize) -> &AtomicU64 {
        // Loom runs must not depend on where its threads' stacks happen to be: the stripe of
        // slot `j`, so that a model can place an insert and a removal in different stripes (the
        // case `len`'s second reading exists for: `tests/loom.rs`,
        // `len_never_reads_a_count_no_instant_had`).
        #[cfg(loom)]
        let stripe = j % LIVE_STRIPES;
        #[cfg(not(loom))]
        let stripe = {
            let _ = j;
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

    /// The insert lock of `root` (see [`INSERT_LOCKS`]).
    #[inline]
    fn insert_lock(&self, root: RootId) -> &AtomicU32 {
        let bits = INSERT_LOCKS.trailing_zeros();
        &self.insert_locks[(root.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize]
    }

    /// Whether an entry whose meta word is `m` has expired at `epoch`.
    #[inline]
    fn expired_at(m: u32, epoch: u32) -> bool {
        (epoch.wrapping_sub(stamp_of(m)) & STAMP_MASK) >= EXPIRY_EPOCHS
    }

    /// Whether the entry whose meta word `m` was just loaded has expired. The epoch is loaded
    /// *after* `m`: the stamp in `m` was taken from an epoch value read before `m` was published,
    /// so it is never ahead of the epoch read here (a stamp from the future would look 63
    /// epochs old and expire a fresh entry).
    #[inline]
    fn expired(&self, m: u32) -> bool {
        Self::expired_at(m, self.epoch.load(Acquire))
    }

    #[inline]
    fn meta(&self, i: usize) -> &AtomicU32 {
        &self.slots.metas()[i]
    }

    /// Takes the lock of slot `j` if it holds a live entry, waiting while another thread holds
    /// it (an inserter writing it, an operation on it, a sweep or a lookup reading it). Returns
    /// the slot's meta word (without [`LOCKED`]), or `None` if the slot is not live.
    #[inline]
    fn lock_live(&self, j: usize) -> Option<u32> {
        let meta = self.meta(j);
        let acquire = if planted!(SharedWeakAcquire) {
            Relaxed
        } else {
            Acquire
        };
        let mut m = meta.load(acquire);
        loop {
            if m & LOCKED != 0 {
                spin_hint();
                m = meta.load(acquire);
                continue;
            }
            if state(m) != LIVE {
                return None;
            }
            match meta.compare_exchange_weak(m, m | LOCKED, acquire, acquire) {
                Ok(_) => return Some(m),
                Err(now) => m = now,
            }
        }
    }

    /// Releases the lock of slot `j`, leaving `m` (without [`LOCKED`]) as its meta word.
    #[inline]
    fn unlock(&self, j: usize, m: u32) {
        release_store_u32(self.meta(j), m);
    }

    /// Removes the live entry at slot `j`, whose lock the caller holds: it leaves the live count
    /// (the instant it is decided or expires), then the slot is freed, which releases the lock,
    /// and an overflow entry leaves the overflow count.
    fn remove_locked(&self, j: usize) {
        let class = self.overflow_distance(j).map(overflow_class);
        self.live_stripe(j).fetch_add(STRIPE_SUB, AcqRel);
        release_store_u32(self.meta(j), FREE);
        if let Some(k) = class {
            // A probe that still goes far for it only reads more than it needs.
            self.overflow.fetch_sub(1, AcqRel);
            self.overflow_classes[k].fetch_sub(1, AcqRel);
        }
    }

    /// One step of a tick's sweep: if slot `j` holds an expired entry (or one being written or
    /// changed, which it waits for), removes it if it has expired.
    #[inline]
    fn expire(&self, j: usize) {
        let m = self.meta(j).load(Acquire);
        if m == FREE || (m & LOCKED == 0 && !self.expired(m)) {
            return;
        }
        if let Some(m) = self.lock_live(j) {
            if self.expired(m) {
                self.remove_locked(j);
            } else {
                self.unlock(j, m);
            }
        }
    }

    /// How far past its root's window the entry in the (not free) slot `j` sits, if it is an
    /// overflow entry. The count is read first: an overflow entry's increment happened before
    /// its publication, which the caller has seen, so a count of 0 proves the slot is not one.
    #[inline]
    fn overflow_distance(&self, j: usize) -> Option<usize> {
        if self.capacity == self.window || self.overflow.load(Acquire) == 0 {
            return None;
        }
        let p = self.probe(self.slots.roots()[j].load(Relaxed));
        self.priority(p, j).checked_sub(self.window)
    }

    /// Finds `root`'s live entry and takes its lock. Returns its slot, its meta word and the
    /// epoch read under the lock (by which it has not expired), or `None` if the root has no live
    /// entry (an expired one met on the way is removed).
    #[inline(always)]
    fn find(&self, root: RootId, p: Probe) -> Option<(usize, u32, u32)> {
        let count = self.overflow.load(Acquire);
        if self.buckets != 0 && count == 0 {
            // The usual case: no overflow entry anywhere, so the root can only be in its two
            // buckets (the same slots `runs` would give for a span of one window). Written out
            // for the two buckets: as a loop, the compiler kept the buckets on the stack.
            match self.find_in(root, p.b1, p.b1 + BUCKET_SLOTS) {
                Found::Missing => {}
                Found::Live(hit) => return Some(hit),
                Found::Expired => return None,
            }
            return match self.find_in(root, p.b2, p.b2 + BUCKET_SLOTS) {
                Found::Missing | Found::Expired => None,
                Found::Live(hit) => Some(hit),
            };
        }
        for (start, end) in self.runs(p, self.span_for(count)) {
            match self.find_in(root, start, end) {
                Found::Missing => {}
                Found::Live(hit) => return Some(hit),
                Found::Expired => return None,
            }
        }
        None
    }

    /// [`find`](Self::find) in the run of slots `start..end`.
    #[inline(always)]
    fn find_in(&self, root: RootId, start: usize, end: usize) -> Found {
        for (k, r) in self.slots.roots()[start..end].iter().enumerate() {
            if r.load(Acquire) != root {
                continue;
            }
            let j = start + k;
            let Some(m) = self.lock_live(j) else {
                continue;
            };
            // The slot may have been freed and reused since its root id was read; under the
            // lock it cannot change.
            if r.load(Relaxed) != root {
                self.unlock(j, m);
                continue;
            }
            let epoch = self.epoch.load(Acquire);
            if Self::expired_at(m, epoch) {
                // The root's only entry: it has no live one.
                self.remove_locked(j);
                return Found::Expired;
            }
            return Found::Live((j, m, epoch));
        }
        Found::Missing
    }

    /// Applies `op` to the live entry at slot `j` (meta word `m`, not expired at `epoch`), whose
    /// lock the caller holds, and releases it: exactly what the single-owner table does to an
    /// existing entry.
    #[inline(always)]
    fn apply_locked(
        &self,
        j: usize,
        mut m: u32,
        epoch: u32,
        op: Op,
    ) -> Result<Decision, TableError> {
        let ack_val = &self.slots.ack_vals()[j];
        let mut v = ack_val.load(Relaxed);
        match op {
            Op::Ack { xor } => v ^= xor,
            Op::Init { xor, spout_task } => {
                if m & HAS_TASK != 0 {
                    self.unlock(j, m);
                    return Err(TableError::DuplicateInit);
                }
                v ^= xor;
                m = (m & !TASK_MASK) | HAS_TASK | spout_task as u32;
            }
            // (Re)insertion: the expiry restarts, from the epoch by which the entry was found
            // live (so the operation is wholly before or wholly after any tick).
            Op::Fail => m = with_stamp(m | FAILED, epoch),
            Op::Reset => m = with_stamp(m, epoch),
        }
        let d = rule3(m, v, matches!(op, Op::Reset));
        if is_final(d) {
            self.remove_locked(j);
        } else {
            ack_val.store(v, Relaxed);
            self.unlock(j, m);
        }
        Ok(d)
    }

    /// Applies `op` to `root`'s entry, creating it if needed.
    ///
    /// The usual message, an ack (or fail, or reset) of a live entry in its root's window (in a
    /// linear table: within `2 × `[`BUCKET_SLOTS`] slots from its home slot), is served here,
    /// inlined into `ack`, `fail` and `reset_timeout`: one hash, a scan of 8 root ids, and only
    /// if the root is not there the second bucket's hash and 8 more; then the slot's lock and
    /// the change. Everything else (a root past its window or absent) goes to the out-of-line [`run_slow`](Self::run_slow) or
    /// [`run_insert`](Self::run_insert), which look again from the start. Finding the entry in
    /// the window needs no overflow count: a root has at most one entry, so a live one found
    /// anywhere is the one, and an expired one found anywhere means the root has none. Linear
    /// tables take this path too (their first 16 probe positions, as two runs: from the home
    /// slot to the end of the table, then from slot 0), so the loom models and the
    /// linearizability check (which use linear tables of 1–4 slots) cover both scans.
    #[inline(always)]
    fn run(&self, root: RootId, op: Op) -> Result<Decision, TableError> {
        if root == 0 {
            return Err(TableError::ZeroRoot);
        }
        // (An init never comes here: `init` goes straight to the insert.)
        // The first bucket, then the second; in a linear table, the first 2 × BUCKET_SLOTS
        // probe positions as two runs (two calls each, so that the bucketed one scans a run of
        // constant length, unrolled).
        let found = if self.buckets != 0 {
            let b1 = reduce(root, self.buckets);
            let s1 = b1 * BUCKET_SLOTS;
            match self.find_in(root, s1, s1 + BUCKET_SLOTS) {
                Found::Missing => {
                    let s2 = second_bucket(root, b1, self.buckets) * BUCKET_SLOTS;
                    self.find_in(root, s2, s2 + BUCKET_SLOTS)
                }
                found => found,
            }
        } else {
            let home = reduce(root, self.capacity);
            let n = self.capacity.min(2 * BUCKET_SLOTS);
            let first_end = (home + n).min(self.capacity);
            match self.find_in(root, home, first_end) {
                Found::Missing => self.find_in(root, 0, n - (first_end - home)),
                found => found,
            }
        };
        match found {
            Found::Live((j, m, epoch)) => self.apply_locked(j, m, epoch, op),
            // The root's only entry expired and was removed: it has none, so only an insert is
            // left (which looks once more under the root's insert lock).
            Found::Expired => self.run_insert(root, op.pack()),
            Found::Missing => self.run_slow(root, op.pack()),
        }
    }

    /// [`run`](Self::run) for an ack, fail or reset whose root has no live entry in its window:
    /// looks for the entry through the root's whole probe (the window again: the entry may have
    /// been created meanwhile), and creates it if there is none.
    #[inline(never)]
    fn run_slow(&self, root: RootId, packed: PackedOp) -> Result<Decision, TableError> {
        if let Some((j, m, epoch)) = self.find(root, self.probe(root)) {
            return self.apply_locked(j, m, epoch, packed.unpack());
        }
        self.run_insert(root, packed)
    }

    /// [`run`](Self::run) for a root that had no live entry (or an init): under the root's
    /// insert lock, looks once more and creates the entry (see
    /// [`insert_locked`](Self::insert_locked)).
    #[inline(never)]
    fn run_insert(&self, root: RootId, packed: PackedOp) -> Result<Decision, TableError> {
        let p = self.probe(root);
        let lock = self.insert_lock(root);
        acquire(lock);
        let result = self.insert_locked(root, p, packed);
        release_store_u32(lock, 0);
        result
    }

    /// [`run`](Self::run) for a root that had no live entry, under the root's insert lock: no
    /// other thread creates an entry for it meanwhile. Looks for the entry once more (another
    /// insert may just have created it), and otherwise creates it with `op` applied, or returns
    /// [`TableError::Full`] if at one instant every slot held a live entry.
    fn insert_locked(&self, root: RootId, p: Probe, op: PackedOp) -> Result<Decision, TableError> {
        // Before claiming a slot, so that a message for a root that has an entry never takes
        // (or counts) an overflow slot, even when the root's window is full.
        if let Some((j, m, epoch)) = self.find(root, p) {
            return self.apply_locked(j, m, epoch, op.unpack());
        }
        let (ack_val, flags) = op.new_entry();
        let (j, past_window) = loop {
            if let Some(claimed) = self.claim(p) {
                break claimed;
            }
            // No free slot seen; `Full` only if the table was full at one instant. Otherwise a
            // slot was being freed or written by another thread (or freed after the claim passed
            // it): look again once it may be done.
            if self.len() >= self.capacity {
                return Err(TableError::Full);
            }
            spin_hint();
        };
        // Slot `j` is ours: reserved and locked. Rule 3 on the new entry: only an init's entry
        // knows its spout task, so only an init can decide here (`Completed` when its XOR is 0)
        // or be asked for a `Reset`, which it never is; every entry that lives is `Pending`.
        let d = rule3(LIVE | flags, ack_val, false);
        if is_final(d) {
            // Decided as it is created (an init of a tree with nothing outstanding): the entry
            // never lives, as in the single-owner table.
            self.unlock(j, FREE);
            return Ok(d);
        }
        self.slots.roots()[j].store(root, Relaxed);
        self.slots.ack_vals()[j].store(ack_val, Relaxed);
        if past_window {
            let priority = self.priority(p, j);
            if priority >= self.window {
                // Counted before it is published, in its class first: every probe that could
                // meet it then goes as far.
                let k = overflow_class(priority - self.window);
                self.overflow_classes[k].fetch_add(1, AcqRel);
                self.overflow.fetch_add(1, AcqRel);
            }
        }
        // Pairs with the fence of a tick (see `tick`): either that tick's sweep sees this slot
        // reserved and waits for it, or the epoch read here is the tick's, so an entry is never
        // published already expired after the sweep that should have removed it.
        fence(SeqCst);
        let epoch = self.epoch.load(Acquire);
        // The insert's instant: counted while still locked, so no lookup sees it uncounted.
        self.live_stripe(j).fetch_add(STRIPE_ADD, AcqRel);
        self.unlock(j, with_stamp(LIVE | flags, epoch));
        Ok(Decision::Pending)
    }

    /// Reserves (and locks) a free slot for probe `p`: in a bucketed table, the first bucket
    /// while at least [`FIRST_BUCKET_MIN_FREE`] of its slots are free, else the bucket with more
    /// free slots (two choices keep buckets evenly filled, so windows rarely overflow; the
    /// threshold spares most inserts the second bucket's cache line, and most lookups the second
    /// bucket); then, only if the window is full, the rest of the table.
    /// Free slots are counted without expired entries, which a scan of the bucket still reclaims
    /// when the chosen bucket's first free slot was taken meanwhile or it has none.
    ///
    /// Returns the slot and whether it may lie past the window (then the caller works out whether
    /// it does: only a linear table narrower than its capacity, under loom, or a bucketed table's
    /// claim past a full window can give one).
    fn claim(&self, p: Probe) -> Option<(usize, bool)> {
        if self.buckets == 0 {
            // A linear table: the whole table from the home slot (one or two runs).
            let [a, b, _, _] = self.runs(p, self.full_span());
            let narrow = self.window < self.capacity;
            return self
                .claim_in(a)
                .or_else(|| self.claim_in(b))
                .map(|j| (j, narrow));
        }
        let (r1, r2) = ((p.b1, p.b1 + BUCKET_SLOTS), (p.b2, p.b2 + BUCKET_SLOTS));
        // Only whether the first bucket has FIRST_BUCKET_MIN_FREE free slots matters, and if not,
        // whether the second has more free slots: each count stops once that is known. The
        // first free slot a count met is tried at once (one CAS); only if another thread took
        // it meanwhile, or the bucket has no free slot, does the claim scan the bucket.
        let (free1, first1) = self.free_in(r1, FIRST_BUCKET_MIN_FREE);
        let window = if free1 < FIRST_BUCKET_MIN_FREE {
            let (free2, first2) = self.free_in(r2, free1 + 1);
            if free2 > free1 {
                [(r2, first2), (r1, first1)]
            } else {
                [(r1, first1), (r2, first2)]
            }
        } else {
            [(r1, first1), (r2, None)]
        };
        for (run, first) in window {
            if let Some(j) = first {
                if self.try_claim(j) {
                    return Some((j, false));
                }
            }
            if let Some(j) = self.claim_in(run) {
                return Some((j, false));
            }
        }
        self.claim_past_window(p).map(|j| (j, true))
    }

    /// [`claim`](Self::claim) in a bucketed table whose window is full: the rest of the table,
    /// in probe order.
    #[cold]
    #[inline(never)]
    fn claim_past_window(&self, p: Probe) -> Option<usize> {
        let [_, _, rest1, rest2] = self.runs(p, self.full_span());
        self.claim_in(rest1).or_else(|| self.claim_in(rest2))
    }

    /// Free slots in the run `start..end`, up to `limit` (the count stops there), and the first
    /// of them. Only for choosing a bucket: expired entries, which a claim also reclaims, are
    /// not counted (they are rare, a lost tree's, and the tick that expires them sweeps them
    /// away), which spares this count an epoch check a slot.
    #[inline(always)]
    fn free_in(&self, (start, end): (usize, usize), limit: usize) -> (usize, Option<usize>) {
        let mut free = 0;
        // The first free slot's offset in the run (kept as an offset: with `start + k` here the
        // compiler set up every slot's index in advance).
        let mut first = usize::MAX;
        for (k, meta) in self.slots.metas()[start..end].iter().enumerate() {
            if meta.load(Acquire) == FREE {
                first = first.min(k);
                free += 1;
                if free == limit {
                    break;
                }
            }
        }
        (free, (first != usize::MAX).then(|| start + first))
    }

    /// Reserves (and locks) slot `j` if it is free.
    #[inline(always)]
    fn try_claim(&self, j: usize) -> bool {
        reserve(self.meta(j))
    }

    /// Reserves (and locks) the first free slot of the run `start..end`, reclaiming expired
    /// entries met on the way. `None` if none is free (a slot another thread holds is not free).
    #[inline(always)]
    fn claim_in(&self, (start, end): (usize, usize)) -> Option<usize> {
        for (k, meta) in self.slots.metas()[start..end].iter().enumerate() {
            let mut m = meta.load(Acquire);
            if m != FREE && m & LOCKED == 0 && self.expired(m) {
                self.expire(start + k);
                m = meta.load(Acquire);
            }
            if m == FREE && reserve(meta) {
                return Some(start + k);
            }
        }
        None
    }
}

/// Reserves (and locks) the slot whose meta word is `meta` if it is free: the one CAS through
/// which a claim takes a slot (`FREE` -> `RESERVED | LOCKED`; `Acquire` on success, so the
/// claimer sees the slot's last release before it writes the new entry).
#[inline(always)]
fn reserve(meta: &AtomicU32) -> bool {
    meta.compare_exchange(FREE, RESERVED | LOCKED, Acquire, Relaxed)
        .is_ok()
}

#[cfg(all(test, not(loom)))]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    /// The documented bounds of the overflow distance classes, exactly.
    #[test]
    fn overflow_classes_have_their_documented_bounds() {
        let bounds: Vec<usize> = (0..OVERFLOW_CLASSES).map(class_bound).collect();
        assert_eq!(
            bounds,
            [16, 64, 256, 1_024, 4_096, 16_384, 65_536, usize::MAX]
        );
        for (dist, class) in [
            (0, 0),
            (15, 0),
            (16, 1),
            (63, 1),
            (64, 2),
            (255, 2),
            (256, 3),
            (1_023, 3),
            (1_024, 4),
            (4_095, 4),
            (4_096, 5),
            (16_383, 5),
            (16_384, 6),
            (65_535, 6),
            (65_536, 7),
            (262_144, 7),
            (usize::MAX, 7),
        ] {
            assert_eq!(overflow_class(dist), class, "distance {dist}");
        }
    }

    /// How far probes go while overflow entries of each class are live: the window plus the
    /// class bound, and the whole table past the last class.
    #[test]
    fn probe_len_follows_the_farthest_class() {
        let n = 300_000;
        let slots = SharedSlots::new(
            (0..n).map(|_| AtomicU64::new(0)).collect::<Vec<_>>(),
            (0..n).map(|_| AtomicU64::new(0)).collect::<Vec<_>>(),
            (0..n).map(|_| AtomicU32::new(0)).collect::<Vec<_>>(),
        )
        .unwrap();
        let table = SharedAckerTable::new(slots, 1_000).unwrap();
        assert_eq!(table.probe_len(), 16);
        let expected = [
            16 + 16,
            16 + 64,
            16 + 256,
            16 + 1_024,
            16 + 4_096,
            16 + 16_384,
            16 + 65_536,
            n,
        ];
        for (k, want) in expected.into_iter().enumerate() {
            table.overflow_classes[k].store(1, Relaxed);
            table.overflow.store(1, Relaxed);
            assert_eq!(table.probe_len(), want, "class {k}");
            table.overflow_classes[k].store(0, Relaxed);
            table.overflow.store(0, Relaxed);
        }
        assert_eq!(table.probe_len(), 16);
        // Past the last class, a lookup goes round the whole table, window first.
        table.overflow_classes[OVERFLOW_CLASSES - 1].store(1, Relaxed);
        assert_eq!(table.span_for(1), table.full_span());
        assert_eq!(table.full_span(), 16 + n);
    }

    /// A real overflow entry is counted in the class of its distance and uncounted when it goes.
    #[test]
    fn an_overflow_entry_is_counted_in_its_class() {
        let n = 1_024;
        let slots = SharedSlots::new(
            (0..n).map(|_| AtomicU64::new(0)).collect::<Vec<_>>(),
            (0..n).map(|_| AtomicU64::new(0)).collect::<Vec<_>>(),
            (0..n).map(|_| AtomicU32::new(0)).collect::<Vec<_>>(),
        )
        .unwrap();
        let table = SharedAckerTable::new(slots, 1_000).unwrap();
        let root = |k: u64| k.wrapping_mul(0xD1B5_4A32_D192_ED03);
        let mut k = 1;
        while table.overflow_len() == 0 {
            // Bounded: a table whose overflow never appears fails here instead of looping (a
            // mutant with every stamp read as 1 made each entry look expired and reused).
            assert!(
                k <= n as u64,
                "no overflow entry after {n} acks of new roots into {n} slots (len {})",
                table.len()
            );
            table.ack(root(k), 1).unwrap();
            k += 1;
        }
        let last = root(k - 1);
        let p = table.probe(last);
        let j = (0..n)
            .find(|&j| table.slots.roots()[j].load(Relaxed) == last)
            .unwrap();
        let dist = table.priority(p, j) - table.window;
        let class = overflow_class(dist);
        assert_eq!(table.overflow_classes[class].load(Relaxed), 1);
        assert_eq!(table.probe_len(), (16 + class_bound(class)).min(n));
        assert_eq!(
            table.init(last, 1, 3),
            Ok(Decision::Completed { spout_task: 3 })
        );
        assert_eq!(table.overflow_len(), 0);
        assert_eq!(table.overflow_classes[class].load(Relaxed), 0);
        assert_eq!(table.probe_len(), 16);
    }
}
