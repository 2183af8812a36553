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
        let mut slots = vec![EMPTY; cap];
        advise_huge_pages(&mut slots);
        Self {
            slots,
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

/// Transparent huge pages are 2 MiB on x86_64 Linux.
const HUGE_PAGE: usize = 2 << 20;

/// The whole huge pages inside the `len` bytes from address `start`: `(first, bytes)`, or
/// `None` when no whole huge page fits.
fn huge_page_range(start: usize, len: usize) -> Option<(usize, usize)> {
    let first = start.checked_next_multiple_of(HUGE_PAGE)?;
    let end = (start.checked_add(len)? / HUGE_PAGE) * HUGE_PAGE;
    (first < end).then(|| (first, end - first))
}

/// Asks Linux to back the slots with transparent huge pages (`madvise(MADV_HUGEPAGE)`, for
/// machines whose THP setting is `madvise`, the default of most distributions). The set holds
/// every root of a run (16 MB at 1M tuples) and each insert lands on a random slot: on 4 KiB
/// pages nearly every insert's read-ahead also missed the TLB, and the page walk held up the
/// engine (17 % of `Engine::execute`'s samples at the prefetch, measured). A hint only: where
/// the kernel declines, nothing changes; call it before the slots are first written (a fresh
/// zeroed allocation is not yet touched), so the first touch of each 2 MiB takes a huge page.
#[cfg(target_os = "linux")]
fn advise_huge_pages(slots: &mut [u64]) {
    let Some((first, bytes)) = huge_page_range(slots.as_mut_ptr() as usize, size_of_val(slots))
    else {
        return;
    };
    // SAFETY: `[first, first + bytes)` lies inside `slots` (`huge_page_range` rounds the start
    // up and the end down), memory this set owns and keeps for as long as the advice matters;
    // `MADV_HUGEPAGE` changes only how the kernel backs those pages, never their contents or
    // mapping, and its result (an error where THP is off) is ignored on purpose.
    unsafe {
        libc::madvise(first as *mut libc::c_void, bytes, libc::MADV_HUGEPAGE);
    }
}

/// Elsewhere: nothing to ask.
#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_slots: &mut [u64]) {}

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

    #[test]
    fn the_huge_page_advice_covers_only_whole_pages_inside_the_slots() {
        const H: usize = HUGE_PAGE;
        // Aligned at both ends: all of it.
        assert_eq!(huge_page_range(4 * H, 8 * H), Some((4 * H, 8 * H)));
        // Unaligned start and end: rounded inwards.
        assert_eq!(huge_page_range(4 * H + 8, 8 * H), Some((5 * H, 7 * H)));
        assert_eq!(huge_page_range(4 * H - 8, 2 * H), Some((4 * H, H)));
        // Less than one whole page inside: none.
        assert_eq!(huge_page_range(4 * H + 8, H), None);
        assert_eq!(huge_page_range(4 * H + 8, 2 * H - 16), None);
        assert_eq!(huge_page_range(0, 0), None);
        // No overflow at the top of the address space.
        assert_eq!(huge_page_range(usize::MAX - H, H), None);
        for start in [0usize, 8, H - 8, H, 3 * H + 4096] {
            for len in [0usize, 8, H, 2 * H + 8, 9 * H] {
                if let Some((first, bytes)) = huge_page_range(start, len) {
                    assert!(
                        first >= start && first + bytes <= start + len,
                        "{start} {len}"
                    );
                    assert_eq!((first % H, bytes % H), (0, 0), "{start} {len}");
                    assert!(bytes > 0);
                }
            }
        }
    }

    #[test]
    fn a_set_large_enough_for_huge_pages_keeps_its_contents() {
        // 2^21 slots (16 MiB): the advice covers at least seven whole huge pages.
        let mut set = RootSet::with_capacity(1 << 20);
        let mut r = rng::stream(9, 9);
        let ids: Vec<u64> = (0..200_000).map(|_| rng::below(&mut r, u64::MAX)).collect();
        for &id in &ids {
            assert!(set.insert(id) || ids.iter().filter(|&&x| x == id).count() > 1);
        }
        assert!(ids.iter().all(|&id| !set.insert(id)));
        assert!(set.slots.iter().filter(|&&s| s != EMPTY).count() <= ids.len());
    }
}
