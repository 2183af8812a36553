//! The atomics the lock-free code is written against.
//!
//! Under `cfg(loom)` they come from `loom::sync::atomic`, so `tests/loom.rs` can explore every
//! interleaving of the [`SharedAckerTable`](crate::SharedAckerTable); otherwise they are
//! `core::sync::atomic`'s, with no cost.

#[cfg(loom)]
pub use loom::sync::atomic::{fence, AtomicU32, AtomicU64, AtomicUsize, Ordering};

#[cfg(not(loom))]
pub use core::sync::atomic::{fence, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// Called in a retry loop that waits for other threads (only when 15 threads are already inside
/// operations on one root): lets loom switch threads, a hint to the CPU otherwise.
#[inline]
pub(crate) fn spin_hint() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    core::hint::spin_loop();
}
