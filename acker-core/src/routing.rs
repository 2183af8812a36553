//! Which acker task owns a root.
//!
//! As in Storm (`ackerTask = hash(root) mod numAckers`), every message of a tree goes to the same
//! acker because it is routed by the root id alone.

use crate::ids::RootId;

/// The multiplier of Fibonacci hashing (2^64 / golden ratio, odd).
pub(crate) const FIB: u64 = 0x9E37_79B9_7F4A_7C15;

/// Maps `x` to `0..n` by Fibonacci hashing and a multiply-shift range reduction: fast, fixed
/// across platforms and runs, and well spread even for sequential inputs.
#[inline]
pub(crate) fn reduce(x: u64, n: usize) -> usize {
    (((x.wrapping_mul(FIB)) as u128 * n as u128) >> 64) as usize
}

/// The index (`0..num_ackers`) of the acker task that owns `root`, or `None` when there are no
/// ackers (at-most-once: nothing is tracked).
///
/// The function is fixed: the same root and count give the same index on every machine and in
/// every run. It uses the root's bits through a different mix than the acker table's slot
/// placement, so the roots one acker receives still spread over its table.
///
/// ```
/// use acker_core::acker_index;
/// assert_eq!(acker_index(42, 0), None);
/// let i = acker_index(42, 4).unwrap();
/// assert!(i < 4);
/// assert_eq!(acker_index(42, 4), Some(i));
/// ```
#[inline]
pub fn acker_index(root: RootId, num_ackers: usize) -> Option<usize> {
    if num_ackers == 0 {
        None
    } else {
        // A different odd multiplier from the table's placement hash, then fold the high half in.
        let h = root.wrapping_mul(0xD6E8_FEB8_6659_FD93);
        let h = h ^ (h >> 32);
        Some(((h as u128 * num_ackers as u128) >> 64) as usize)
    }
}
