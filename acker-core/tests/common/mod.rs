//! Helpers shared by acker-core's test binaries (each includes this file with `mod common;`).

use acker_core::shared::{AtomicU32, AtomicU64, SharedSlots};

/// Shared-table storage over three `Vec`s.
pub type VecSlots = SharedSlots<Vec<AtomicU64>, Vec<AtomicU64>, Vec<AtomicU32>>;

/// Storage for a shared table of `n` slots, all free.
pub fn vec_slots(n: usize) -> VecSlots {
    SharedSlots::new(
        (0..n).map(|_| AtomicU64::new(0)).collect(),
        (0..n).map(|_| AtomicU64::new(0)).collect(),
        (0..n).map(|_| AtomicU32::new(0)).collect(),
    )
    .unwrap()
}
