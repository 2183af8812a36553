//! A bounded lock-free single-producer single-consumer ring: the link between two cores of the
//! thread-per-core shell (one per ordered pair of threads and lane).
//!
//! [`ring`]`(capacity)` returns a [`Producer`] and a [`Consumer`]; each may move to its own
//! thread. The ring holds at most `capacity` items (any `capacity ≥ 1`; the slot array is the
//! next power of two, so a position maps to its slot with a mask).
//!
//! # Design
//!
//! - Two monotonically increasing positions (wrapping `usize`): `tail` (next slot to write,
//!   stored only by the producer) and `head` (next slot to read, stored only by the consumer),
//!   each on its own cache line ([`CachePadded`]) so that the two threads never write the same
//!   line.
//! - Each side keeps its own position in its handle and a *cached copy of the other side's*: the
//!   producer re-reads `head` only when its cached copy says the ring is full, the consumer
//!   re-reads `tail` only when its cached copy says it is empty. In the common case a push or pop
//!   reads no line the other thread writes, apart from the slot itself.
//! - A push writes the slot, then publishes `tail` with `Release`; the consumer reads `tail` with
//!   `Acquire` before reading the slot (and symmetrically for `head`, which hands a slot back).
//! - Batches ([`Producer::push_from`], [`Consumer::pop_batch`], [`Consumer::pop_batch_in_place`])
//!   move many items with one position store, so the other side's cache line is written once
//!   per batch.
//! - Dropping the ring (when both handles are gone) drops the items still in it.
//!
//! Checked by the loom models in `tests/loom_ring.rs` (run with `RUSTFLAGS="--cfg loom"`) and a
//! two-thread stress test moving ten million items in order (`tests/ring.rs`).

use std::collections::VecDeque;
use std::mem::MaybeUninit;

use crossbeam_utils::CachePadded;

use sync::{Arc, AtomicUsize, Ordering, UnsafeCell};

/// Atomics, cells and `Arc` from `loom` under `cfg(loom)`, from `std` otherwise.
mod sync {
    #[cfg(loom)]
    pub(crate) use loom::cell::UnsafeCell;
    #[cfg(loom)]
    pub(crate) use loom::sync::atomic::{AtomicUsize, Ordering};
    #[cfg(loom)]
    pub(crate) use loom::sync::Arc;

    #[cfg(not(loom))]
    pub(crate) use std::sync::atomic::{AtomicUsize, Ordering};
    #[cfg(not(loom))]
    pub(crate) use std::sync::Arc;

    /// `std::cell::UnsafeCell` with loom's closure API.
    #[cfg(not(loom))]
    #[derive(Debug)]
    pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

    #[cfg(not(loom))]
    impl<T> UnsafeCell<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(std::cell::UnsafeCell::new(value))
        }

        #[inline(always)]
        pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }

        #[inline(always)]
        pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }
}

/// The shared part of a ring.
struct Ring<T> {
    /// Next position to read; stored by the consumer only.
    head: CachePadded<AtomicUsize>,
    /// Next position to write; stored by the producer only.
    tail: CachePadded<AtomicUsize>,
    /// `slots.len() - 1` (the length is a power of two).
    mask: usize,
    /// Slot `p & mask` holds an initialised item exactly when `head ≤ p < tail`.
    slots: Box<[UnsafeCell<MaybeUninit<T>>]>,
}

// SAFETY: the ring moves `T`s from the producer's thread to the consumer's; a slot is accessed by
// one side at a time (the producer before publishing `tail` past it, the consumer after seeing
// that and before publishing `head` past it), so sharing the ring needs only `T: Send`.
unsafe impl<T: Send> Sync for Ring<T> {}
// SAFETY: as above; the ring owns its items.
unsafe impl<T: Send> Send for Ring<T> {}

impl<T> Ring<T> {
    /// Slot `i`, for `i ≤ mask`, without a bounds check.
    #[inline(always)]
    fn slot(&self, i: usize) -> &UnsafeCell<MaybeUninit<T>> {
        debug_assert!(i < self.slots.len());
        // SAFETY: callers pass `p & mask` (a handle's copy of `mask`, equal to the ring's), and
        // `mask = slots.len() - 1`, so `i < slots.len()`.
        unsafe { self.slots.get_unchecked(i) }
    }
}

impl<T> Drop for Ring<T> {
    fn drop(&mut self) {
        // Both handles are gone (this is the last `Arc`), so the positions are final.
        let head = self.head.load(Ordering::Acquire);
        let tail = self.tail.load(Ordering::Acquire);
        let mut p = head;
        while p != tail {
            // SAFETY: positions head..tail hold initialised items that nobody else can reach any
            // more; each is dropped exactly once.
            self.slots[p & self.mask].with_mut(|s| unsafe { (*s).assume_init_drop() });
            p = p.wrapping_add(1);
        }
    }
}

/// Creates a ring of `capacity` items (at least 1, at most [`MAX_RING_ITEMS`]: 0 is taken as 1
/// and more as the maximum) and returns its two ends.
///
/// Memory: `capacity.next_power_of_two()` slots of `size_of::<T>()` bytes, plus two cache-padded
/// positions, allocated here and never again. The allocation aborts the process when the
/// allocator refuses it, as `Vec::with_capacity` does; [`try_ring`] reports it instead.
pub fn ring<T>(capacity: usize) -> (Producer<T>, Consumer<T>) {
    match try_ring(capacity) {
        Ok(ends) => ends,
        Err(_) => std::alloc::handle_alloc_error(
            std::alloc::Layout::array::<T>(capacity.clamp(1, MAX_RING_ITEMS).next_power_of_two())
                .unwrap_or(std::alloc::Layout::new::<T>()),
        ),
    }
}

/// The most items a [`ring`] holds: 2^30.
pub const MAX_RING_ITEMS: usize = 1 << 30;

/// [`ring`], an error (nothing kept) when the allocator refuses the slots.
///
/// # Errors
/// `TryReserveError` from the allocation of the slots.
pub fn try_ring<T>(
    capacity: usize,
) -> Result<(Producer<T>, Consumer<T>), std::collections::TryReserveError> {
    let capacity = capacity.clamp(1, MAX_RING_ITEMS);
    let len = capacity.next_power_of_two();
    let mut slots: Vec<UnsafeCell<MaybeUninit<T>>> = Vec::new();
    slots.try_reserve_exact(len)?;
    slots.extend((0..len).map(|_| UnsafeCell::new(MaybeUninit::uninit())));
    let slots = slots.into_boxed_slice();
    let ring = Arc::new(Ring {
        head: CachePadded::new(AtomicUsize::new(0)),
        tail: CachePadded::new(AtomicUsize::new(0)),
        mask: len - 1,
        slots,
    });
    Ok((
        Producer {
            ring: ring.clone(),
            tail: 0,
            cached_head: 0,
            capacity,
            mask: len - 1,
        },
        Consumer {
            ring,
            head: 0,
            cached_tail: 0,
            mask: len - 1,
            capacity,
        },
    ))
}

/// The writing end of a [`ring`].
pub struct Producer<T> {
    ring: Arc<Ring<T>>,
    /// Our position (equal to `ring.tail` between calls).
    tail: usize,
    /// The consumer's position as last read (≤ the real one).
    cached_head: usize,
    /// Copies of the ring's `capacity` and `mask`, read on every push without a pointer chase.
    capacity: usize,
    mask: usize,
}

impl<T> Producer<T> {
    /// The capacity given to [`ring`] (at least 1).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Free slots: at least this many pushes will succeed now (re-reads the consumer's position).
    pub fn free(&mut self) -> usize {
        self.cached_head = self.ring.head.load(Ordering::Acquire);
        self.capacity - self.tail.wrapping_sub(self.cached_head)
    }

    /// Free slots by the cached position, refreshed only when it shows none.
    #[inline(always)]
    fn free_cached(&mut self) -> usize {
        let free = self.capacity - self.tail.wrapping_sub(self.cached_head);
        if free > 0 {
            free
        } else {
            self.free()
        }
    }

    /// Writes `item` at position `p` (not yet published).
    #[inline(always)]
    fn write(&self, p: usize, item: T) {
        // SAFETY: `tail - head < capacity` was checked by the caller, so slot `p & mask` is free:
        // the consumer has published `head` past its last item (Acquire load of `head` above
        // orders its read before this write) and will not read it before we publish `tail`.
        self.ring
            .slot(p & self.mask)
            .with_mut(|s| unsafe { (*s).write(item) });
    }

    /// Appends `item`, or hands it back when the ring is full.
    ///
    /// # Errors
    /// `Err(item)` when `capacity` items are in the ring; nothing changed.
    #[inline]
    pub fn push(&mut self, item: T) -> Result<(), T> {
        if self.free_cached() == 0 {
            return Err(item);
        }
        self.write(self.tail, item);
        self.tail = self.tail.wrapping_add(1);
        self.ring.tail.store(self.tail, Ordering::Release);
        Ok(())
    }

    /// Moves as many items as fit from the front of `queue` into the ring, in order, publishing
    /// them with one position update. Returns how many moved.
    pub fn push_from(&mut self, queue: &mut VecDeque<T>) -> usize {
        let mut free = self.capacity - self.tail.wrapping_sub(self.cached_head);
        if free < queue.len() {
            // One read of the consumer's line per batch to move as much as possible.
            free = self.free();
        }
        let n = free.min(queue.len());
        if n == 0 {
            return 0;
        }
        let mut p = self.tail;
        for item in queue.drain(..n) {
            self.write(p, item);
            p = p.wrapping_add(1);
        }
        self.tail = p;
        self.ring.tail.store(p, Ordering::Release);
        n
    }
}

/// The reading end of a [`ring`].
pub struct Consumer<T> {
    ring: Arc<Ring<T>>,
    /// Our position (equal to `ring.head` between calls).
    head: usize,
    /// The producer's position as last read (≤ the real one).
    cached_tail: usize,
    /// Copies of the ring's `mask` and `capacity`.
    mask: usize,
    capacity: usize,
}

/// Drops the item in a slot when it goes out of scope (see [`Consumer::pop_batch_in_place`]).
struct DropInPlace<T>(*mut MaybeUninit<T>);

impl<T> Drop for DropInPlace<T> {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: built only over a slot holding an initialised item that this consumer owns
        // until it publishes `head` past it; nothing reads the item after this drop.
        unsafe { (*self.0).assume_init_drop() }
    }
}

/// Publishes the consumer's position when a batch ends, also when the callback panics, so that
/// the items already moved out are never dropped again by the ring.
struct Commit<'a, T> {
    consumer: &'a mut Consumer<T>,
    head: usize,
}

impl<T> Drop for Commit<'_, T> {
    #[inline(always)]
    fn drop(&mut self) {
        self.consumer.head = self.head;
        self.consumer.ring.head.store(self.head, Ordering::Release);
    }
}

impl<T> Consumer<T> {
    /// The capacity given to [`ring`] (at least 1).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Items readable now (re-reads the producer's position).
    pub fn available(&mut self) -> usize {
        self.cached_tail = self.ring.tail.load(Ordering::Acquire);
        self.cached_tail.wrapping_sub(self.head)
    }

    #[inline(always)]
    fn available_cached(&mut self) -> usize {
        let n = self.cached_tail.wrapping_sub(self.head);
        if n > 0 {
            n
        } else {
            self.available()
        }
    }

    /// Moves the item at position `p` out (the caller then publishes `head` past it).
    #[inline(always)]
    fn read(&self, p: usize) -> T {
        // SAFETY: `p < tail` as read with Acquire (ordering the producer's write of the slot
        // before this read), and `p ≥ head`, so the slot holds an initialised item that the
        // producer will not touch before we publish `head` past it; it is read exactly once.
        self.ring
            .slot(p & self.mask)
            .with(|s| unsafe { (*s).assume_init_read() })
    }

    /// Removes the oldest item, if any.
    #[inline]
    pub fn pop(&mut self) -> Option<T> {
        if self.available_cached() == 0 {
            return None;
        }
        let item = self.read(self.head);
        self.head = self.head.wrapping_add(1);
        self.ring.head.store(self.head, Ordering::Release);
        Some(item)
    }

    /// How many items a batch of at most `max` takes now: the published items by the cached
    /// position, re-read only when that shows fewer than `max` (one read of the producer's line
    /// a batch, to take as much as possible).
    #[inline(always)]
    fn batch_len(&mut self, max: usize) -> usize {
        let mut n = self.cached_tail.wrapping_sub(self.head);
        if n < max {
            n = self.available();
        }
        n.min(max)
    }

    /// Removes up to `max` items (as many as the producer has published, up to `max`), oldest
    /// first, handing each to `f`, and frees their slots with one position update at the end
    /// (or when `f` panics, for the items already handed over). Returns how many were removed.
    #[inline]
    pub fn pop_batch(&mut self, max: usize, mut f: impl FnMut(T)) -> usize {
        let n = self.batch_len(max);
        if n == 0 {
            return 0;
        }
        let head = self.head;
        let mut commit = Commit {
            consumer: self,
            head,
        };
        for _ in 0..n {
            let item = commit.consumer.read(commit.head);
            commit.head = commit.head.wrapping_add(1);
            f(item);
        }
        n
    }

    /// [`pop_batch`](Self::pop_batch) handing `f` each item where it lies in its slot
    /// (`&mut T`) instead of moving it out, then dropping it there: for items larger than a
    /// few words that `f` takes apart (the shell's tuples), which a move would copy out of the
    /// slot and again on the stack (measured: the copy's loads waited on its own narrower
    /// stores). Whatever `f` leaves in the item is dropped after `f` returns, or when `f`
    /// panics (that item and those before it are then freed, the rest stay). Returns how many
    /// were removed.
    #[inline]
    pub fn pop_batch_in_place(&mut self, max: usize, mut f: impl FnMut(&mut T)) -> usize {
        let n = self.batch_len(max);
        if n == 0 {
            return 0;
        }
        let head = self.head;
        let mut commit = Commit {
            consumer: self,
            head,
        };
        for _ in 0..n {
            let p = commit.head;
            // Counted as removed before `f` runs: if `f` panics, `DropInPlace` below drops the
            // item, then `commit` publishes `head` past it.
            commit.head = commit.head.wrapping_add(1);
            let mask = commit.consumer.mask;
            commit.consumer.ring.slot(p & mask).with_mut(|s| {
                let item = DropInPlace(s);
                // SAFETY: as in `read`: `head ≤ p < tail` (Acquire), so the slot holds an
                // initialised item the producer will not touch before `head` passes it. `item`
                // drops it exactly once, after `f`'s borrow ends (or during unwinding), and
                // `head` is published past `p` only after that (`commit` drops last).
                f(unsafe { (*item.0).assume_init_mut() });
            });
        }
        n
    }

    /// Whether the ring looks empty from here (re-reads the producer's position).
    pub fn is_empty(&mut self) -> bool {
        self.available() == 0
    }
}
