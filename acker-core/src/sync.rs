//! The atomics the lock-free code is written against.
//!
//! Under `cfg(loom)` they come from `loom::sync::atomic`, so `tests/loom.rs` can explore every
//! interleaving of the [`SharedAckerTable`](crate::SharedAckerTable); otherwise they are
//! `core::sync::atomic`'s, with no cost.

#[cfg(loom)]
pub use loom::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

#[cfg(not(loom))]
pub use core::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

/// Called in a retry loop that waits for another thread (a slot or insert lock held, a sweep in
/// progress): lets loom switch threads, a hint to the CPU otherwise.
#[inline]
pub(crate) fn spin_hint() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    core::hint::spin_loop();
}

/// Stores `v` into `a`, a word only this thread may change now (it holds the lock the word
/// carries): a release store; under loom a release swap. Loom 0.7 orders a plain store only
/// partially against read-modify-writes of other threads that it has not seen, and may then let
/// a thread waiting for the word read an older value forever; a swap is ordered after
/// every value it overwrites. Either is the same operation here, since nobody else changes the
/// word meanwhile.
#[inline]
pub(crate) fn release_store_u32(a: &AtomicU32, v: u32) {
    #[cfg(loom)]
    a.swap(v, Ordering::Release);
    #[cfg(not(loom))]
    a.store(v, Ordering::Release);
}

/// [`release_store_u32`] for a 64-bit word.
#[inline]
pub(crate) fn release_store_u64(a: &AtomicU64, v: u64) {
    #[cfg(loom)]
    a.swap(v, Ordering::Release);
    #[cfg(not(loom))]
    a.store(v, Ordering::Release);
}
