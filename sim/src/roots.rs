//! The set of root ids an init was sent for (the engine's "a root id is initialized once"
//! invariant): an open-addressing table of `u64` with linear probing, asked only whether a root
//! id is new.
//!
//! It replaced a `HashSet<u64>` with SplitMix64's mix as its hasher (≈ 80 instructions an insert,
//! one insert a tree). Root ids are random 64-bit words drawn by the executors, so a
//! multiplicative (Fibonacci) hash of the id spreads them; the set is never iterated, so its
//! layout cannot reach an output.

/// A set of `u64`, insert-only.
#[derive(Debug)]
pub(crate) struct RootSet {
    /// Power-of-two table; [`EMPTY`] marks a free slot (the id 0 itself is kept in `has_zero`).
    slots: Vec<u64>,
    /// `64 - log2(slots.len())`: the top bits of the product pick the slot.
    shift: u32,
    len: usize,
    has_zero: bool,
}

const EMPTY: u64 = 0;

impl RootSet {
    /// An empty set with room for `n` ids before it grows (at most half full).
    pub(crate) fn with_capacity(n: usize) -> Self {
        let cap = (n.max(8) * 2).next_power_of_two();
        Self {
            slots: vec![EMPTY; cap],
            shift: 64 - cap.trailing_zeros(),
            len: 0,
            has_zero: false,
        }
    }

    /// Adds `id`; `true` if it was not in the set.
    #[inline(never)]
    pub(crate) fn insert(&mut self, id: u64) -> bool {
        if id == EMPTY {
            return !std::mem::replace(&mut self.has_zero, true);
        }
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = (id.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize;
        loop {
            let s = &mut self.slots[i & mask];
            if *s == id {
                return false;
            }
            if *s == EMPTY {
                *s = id;
                self.len += 1;
                return true;
            }
            i += 1;
        }
    }

    /// Asks the CPU for the slot where [`insert`](Self::insert) of `id` starts probing (a hint:
    /// the set does not change). The set holds every root of a run (16 MB at 1M tuples), so an
    /// insert's probe misses every cache unless asked for ahead of time.
    #[inline]
    pub(crate) fn prefetch(&self, id: u64) {
        let mask = self.slots.len() - 1;
        let i = (id.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize;
        acker_core::table::prefetch_hint(&self.slots, i & mask);
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let old = std::mem::take(&mut self.slots);
        let mut bigger = Self::with_capacity(old.len());
        bigger.has_zero = self.has_zero;
        for id in old.into_iter().filter(|&id| id != EMPTY) {
            bigger.insert(id);
        }
        *self = bigger;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng;
    use std::collections::HashSet;

    #[test]
    fn matches_a_hash_set_through_growth() {
        let mut r = rng::stream(5, 5);
        let mut set = RootSet::with_capacity(4);
        let mut reference = HashSet::new();
        for _ in 0..50_000 {
            // Repeats and zero on purpose: a small range half the time.
            let id = if rng::below(&mut r, 2) == 0 {
                rng::below(&mut r, 1000)
            } else {
                rng::below(&mut r, u64::MAX)
            };
            // A hint before every insert, as the engine gives one: the set must not change.
            set.prefetch(id);
            assert_eq!(set.insert(id), reference.insert(id), "id {id}");
        }
        assert_eq!(set.len + usize::from(set.has_zero), reference.len());
    }
}
