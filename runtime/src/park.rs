//! The acker's park queue: acker messages refused by a full table, grouped by root, in a fixed
//! preallocated space (see [`AckerExecutor`](crate::AckerExecutor) for how it is used).
//!
//! Roots are kept in the order of their oldest parked message; each root's messages in arrival
//! order. Parking, and taking a root's next message, are O(1) (an open-addressing index of the
//! parked roots, linear probing with backward-shift deletion); nothing allocates after
//! [`ParkQueue::try_with_capacity`].

use std::collections::{TryReserveError, VecDeque};

use acker_core::{AckerMessage, RootId};

const NIL: u32 = u32::MAX;

/// Parked acker messages, at most `capacity`, grouped by root.
#[derive(Debug)]
pub(crate) struct ParkQueue {
    len: usize,
    /// Message slab; `next` chains the messages of one root, oldest first.
    msgs: Vec<AckerMessage>,
    next: Vec<u32>,
    free: Vec<u32>,
    /// Parked roots, by their oldest parked message.
    order: VecDeque<RootId>,
    /// Index: root → (first, last) message slot; `keys[i] == 0` marks a free index slot (root 0
    /// is never parked: the table refuses it with an error, not `Full`).
    keys: Vec<RootId>,
    ends: Vec<(u32, u32)>,
    mask: usize,
}

impl ParkQueue {
    /// [`try_with_capacity`](Self::try_with_capacity) for tests: panics when the allocator
    /// refuses.
    #[cfg(test)]
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        match Self::try_with_capacity(capacity) {
            Ok(q) => q,
            Err(e) => panic!("park queue of {capacity} messages: {e}"),
        }
    }

    /// An empty queue for up to `capacity` messages (`capacity ≤ u32::MAX - 1`), its
    /// allocations fallible: an error (nothing kept) when the allocator refuses one, instead of
    /// aborting the process.
    pub(crate) fn try_with_capacity(capacity: usize) -> Result<Self, TryReserveError> {
        let (capacity, index) = Self::sizes(capacity);
        let mut order = VecDeque::new();
        order.try_reserve_exact(capacity)?;
        let mut free = Vec::new();
        free.try_reserve_exact(capacity)?;
        free.extend((0..capacity as u32).rev());
        Ok(Self {
            len: 0,
            msgs: filled(capacity, AckerMessage::Fail { root: 0 })?,
            next: filled(capacity, NIL)?,
            free,
            order,
            keys: zeroed(index)?,
            ends: filled(index, (NIL, NIL))?,
            mask: index - 1,
        })
    }

    /// The messages a queue for `capacity` holds, and its by-root index slots.
    fn sizes(capacity: usize) -> (usize, usize) {
        let capacity = capacity.min(NIL as usize - 1);
        (capacity, (capacity * 2).next_power_of_two().max(2))
    }

    /// Bytes [`try_with_capacity`](Self::try_with_capacity) allocates for `capacity` messages:
    /// per message the message, its chain link, its free-list entry and its order entry; per
    /// index slot its root and its two ends.
    pub(crate) fn bytes_for(capacity: usize) -> usize {
        let (capacity, index) = Self::sizes(capacity);
        // `msgs`, `next`, `free` and `order`.
        let per_message = size_of::<AckerMessage>() + 2 * size_of::<u32>() + size_of::<RootId>();
        // `keys` and `ends`.
        let per_index = size_of::<RootId>() + size_of::<(u32, u32)>();
        capacity.saturating_mul(per_message) + index.saturating_mul(per_index)
    }

    /// Messages parked.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The index slot of `root`, or the free slot where it would go.
    #[inline]
    fn find(&self, root: RootId) -> (usize, bool) {
        let mut i = home_slot(root, self.mask);
        loop {
            let k = self.keys[i];
            if k == root {
                return (i, true);
            }
            if k == 0 {
                return (i, false);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Removes index slot `i` (backward-shift deletion keeps every probe chain unbroken).
    fn remove_index(&mut self, i: usize) {
        remove_probed(self, i);
    }

    /// Parks `m` behind the other messages of its root; `Err(m)` when `capacity` are parked.
    pub(crate) fn push(&mut self, m: AckerMessage) -> Result<(), AckerMessage> {
        let Some(slot) = self.free.pop() else {
            return Err(m);
        };
        self.msgs[slot as usize] = m;
        self.next[slot as usize] = NIL;
        let root = m.root();
        let (i, found) = self.find(root);
        if found {
            let last = self.ends[i].1;
            self.next[last as usize] = slot;
            self.ends[i].1 = slot;
        } else {
            self.keys[i] = root;
            self.ends[i] = (slot, slot);
            self.order.push_back(root);
        }
        self.len += 1;
        Ok(())
    }

    /// The root whose oldest parked message is the oldest of all.
    pub(crate) fn front_root(&self) -> Option<RootId> {
        self.order.front().copied()
    }

    /// The oldest parked message of `root`.
    pub(crate) fn peek(&self, root: RootId) -> Option<AckerMessage> {
        let (i, found) = self.find(root);
        found.then(|| self.msgs[self.ends[i].0 as usize])
    }

    /// Drops the oldest parked message of `root` (after it was applied). Returns whether `root`
    /// has more; when not, it has left the index (the caller removes it from the order).
    pub(crate) fn pop(&mut self, root: RootId) -> bool {
        let (i, found) = self.find(root);
        if !found {
            return false;
        }
        let (first, last) = self.ends[i];
        self.free.push(first);
        self.len -= 1;
        if first == last {
            self.remove_index(i);
            false
        } else {
            self.ends[i].0 = self.next[first as usize];
            true
        }
    }

    /// Removes the front root from the order (its messages are all applied), or moves it to the
    /// back (`requeue`: it still has messages).
    pub(crate) fn retire_front(&mut self, requeue: bool) {
        if let Some(r) = self.order.pop_front() {
            if requeue {
                self.order.push_back(r);
            }
        }
    }
}

/// The roots an acker decided `Failed` most recently, at most `capacity`, oldest forgotten first:
/// a fixed ring of roots and an open-addressing index over it (linear probing, backward-shift
/// deletion), preallocated by [`try_with_capacity`](Self::try_with_capacity); inserting and
/// looking up are O(1) and allocate nothing.
///
/// Why: when one bolt fails its input, the failed tree's other branches still ack (or fail) on
/// their way, after the acker decided `Failed` and removed the entry. Each such late message
/// would make an orphan entry (DESIGN.md rule 4) that holds a table slot until it expires 2T to
/// 3T later, or forever with message timeouts off, so that a steady rate of ordinary failures
/// filled the table and stalled every new tree (new-user trial: 1,024 failures at 2 % stopped a
/// topology with timeouts off for good, and with the default T = 30 s it stood still from the
/// 51st to the 90th second). Storm's acker makes the same orphans in its unbounded rotating map,
/// where they cost memory instead. The acker drops those messages instead: the tree is decided,
/// its spout heard `Failed` once, and nothing for the root can change that.
#[derive(Debug)]
pub(crate) struct RecentRoots {
    /// Roots in insertion order, as a ring; `ring[next]` is the oldest once the ring is full.
    ring: Vec<RootId>,
    next: usize,
    len: usize,
    /// Index slot → position in `ring` plus 1 (0: free, so that the index is allocated zeroed
    /// and its pages stay untouched, and not resident, until roots land there).
    index: Vec<u32>,
    mask: usize,
}

impl RecentRoots {
    /// An empty set for up to `capacity` roots (at most `u32::MAX - 1`; 0 holds none), its
    /// allocations fallible and zeroed: its pages become resident only as roots are held.
    pub(crate) fn try_with_capacity(capacity: usize) -> Result<Self, TryReserveError> {
        let (capacity, index) = Self::sizes(capacity);
        Ok(Self {
            ring: zeroed(capacity)?,
            next: 0,
            len: 0,
            index: zeroed(index)?,
            mask: index - 1,
        })
    }

    fn sizes(capacity: usize) -> (usize, usize) {
        let capacity = capacity.min(u32::MAX as usize - 1);
        (capacity, (capacity * 2).next_power_of_two())
    }

    /// Bytes [`try_with_capacity`](Self::try_with_capacity) allocates for `capacity` roots: a
    /// root a ring slot, a position an index slot (twice as many).
    pub(crate) fn bytes_for(capacity: usize) -> usize {
        let (capacity, index) = Self::sizes(capacity);
        capacity
            .saturating_mul(size_of::<RootId>())
            .saturating_add(index.saturating_mul(size_of::<u32>()))
    }

    /// Whether no root is held: the acker's per-message check is this one load while no tree
    /// has failed.
    #[inline(always)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The index slot holding `root`, or the free slot where it would go.
    #[inline]
    fn find(&self, root: RootId) -> (usize, bool) {
        let mut i = home_slot(root, self.mask);
        loop {
            let p = self.index[i];
            if p == 0 {
                return (i, false);
            }
            if self.ring[p as usize - 1] == root {
                return (i, true);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Whether `root` is among the roots held.
    #[inline]
    pub(crate) fn contains(&self, root: RootId) -> bool {
        self.find(root).1
    }

    /// Holds `root` (no change if it is held already), forgetting the oldest root when full.
    pub(crate) fn insert(&mut self, root: RootId) {
        if self.ring.is_empty() || self.contains(root) {
            return;
        }
        let pos = self.next;
        if self.len == self.ring.len() {
            let (i, found) = self.find(self.ring[pos]);
            if found {
                self.remove_index(i);
            }
        } else {
            self.len += 1;
        }
        self.ring[pos] = root;
        let (i, _) = self.find(root);
        self.index[i] = pos as u32 + 1;
        self.next = (pos + 1) % self.ring.len();
    }

    /// Frees index slot `i`, shifting back the entries after it that probed past it.
    fn remove_index(&mut self, i: usize) {
        remove_probed(self, i);
    }
}

/// An open-addressing index with linear probing over `mask + 1` slots, for [`remove_probed`].
trait ProbedIndex {
    /// The index's slot count minus one (a power of two minus one).
    fn mask(&self) -> usize;
    /// The home slot of the entry in slot `j`, or `None` when slot `j` is free.
    fn home_of(&self, j: usize) -> Option<usize>;
    /// Moves the entry of slot `from` into slot `to`.
    fn move_entry(&mut self, to: usize, from: usize);
    /// Frees slot `i`.
    fn clear(&mut self, i: usize);
}

/// The home slot of `root` in an index of `mask + 1` slots (the golden-ratio multiply's high
/// half), for both indexes of this module.
#[inline]
fn home_slot(root: RootId, mask: usize) -> usize {
    (root.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as usize & mask
}

/// Frees slot `i` of `index` by backward-shift deletion, which keeps every probe chain unbroken:
/// each later entry of the run is moved back into the hole unless its home lies cyclically in
/// (hole, its slot].
fn remove_probed<I: ProbedIndex>(index: &mut I, mut i: usize) {
    let mask = index.mask();
    loop {
        index.clear(i);
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            let Some(home) = index.home_of(j) else {
                return;
            };
            let between = if i <= j {
                i < home && home <= j
            } else {
                i < home || home <= j
            };
            if !between {
                index.move_entry(i, j);
                i = j;
                break;
            }
        }
    }
}

impl ProbedIndex for ParkQueue {
    fn mask(&self) -> usize {
        self.mask
    }
    fn home_of(&self, j: usize) -> Option<usize> {
        let k = self.keys[j];
        (k != 0).then(|| home_slot(k, self.mask))
    }
    fn move_entry(&mut self, to: usize, from: usize) {
        self.keys[to] = self.keys[from];
        self.ends[to] = self.ends[from];
    }
    fn clear(&mut self, i: usize) {
        self.keys[i] = 0;
    }
}

impl ProbedIndex for RecentRoots {
    fn mask(&self) -> usize {
        self.mask
    }
    fn home_of(&self, j: usize) -> Option<usize> {
        let p = self.index[j];
        (p != 0).then(|| home_slot(self.ring[p as usize - 1], self.mask))
    }
    fn move_entry(&mut self, to: usize, from: usize) {
        self.index[to] = self.index[from];
    }
    fn clear(&mut self, i: usize) {
        self.index[i] = 0;
    }
}

/// `n` zeros (root ids, index positions), allocated fallibly and zeroed by the allocator (so the
/// pages stay unwritten, and not resident, until used, as `vec![0; n]` leaves them): the room is
/// first reserved and released to learn whether the allocator grants it, then taken by
/// `vec![0; n]`.
fn zeroed<T: Zero>(n: usize) -> Result<Vec<T>, TryReserveError> {
    let mut probe: Vec<T> = Vec::new();
    probe.try_reserve_exact(n)?;
    drop(probe);
    Ok(vec![T::ZERO; n])
}

/// The integers [`zeroed`] allocates.
trait Zero: Copy {
    const ZERO: Self;
}

impl Zero for u32 {
    const ZERO: Self = 0;
}

impl Zero for u64 {
    const ZERO: Self = 0;
}

/// `n` copies of `value`, allocated fallibly (`vec![value; n]` aborts the process when the
/// allocator refuses).
pub(crate) fn filled<T: Clone>(n: usize, value: T) -> Result<Vec<T>, TryReserveError> {
    let mut v = Vec::new();
    v.try_reserve_exact(n)?;
    v.resize(n, value);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// `RecentRoots` against a plain model (a `VecDeque` of the last `capacity` distinct roots
    /// inserted): random inserts and lookups on few roots, so that index collisions, wrap-around
    /// and backward-shift deletions all happen.
    #[test]
    fn recent_roots_match_a_plain_model() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        for capacity in [0usize, 1, 2, 3, 7, 64] {
            let mut set = RecentRoots::try_with_capacity(capacity).unwrap();
            let mut model: VecDeque<RootId> = VecDeque::new();
            for step in 0..20_000 {
                // Roots that share index homes: a few values times the golden-ratio inverse.
                let root = 1 + rng.next_u64() % (3 * capacity as u64 + 2);
                if rng.next_u64() % 2 == 0 {
                    set.insert(root);
                    if capacity > 0 && !model.contains(&root) {
                        if model.len() == capacity {
                            model.pop_front();
                        }
                        model.push_back(root);
                    }
                }
                for r in 1..=3 * capacity as u64 + 2 {
                    assert_eq!(
                        set.contains(r),
                        model.contains(&r),
                        "capacity {capacity}, step {step}, root {r}: held {model:?}"
                    );
                }
                assert_eq!(set.is_empty(), model.is_empty());
            }
        }
    }

    /// Against a plain model (a list of (root, message) in arrival order): random parks, and
    /// retirements of the front root's messages, as the acker does them, on few roots so that
    /// index collisions, chains and deletions all happen.
    #[test]
    fn matches_a_plain_model() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        for capacity in [1usize, 2, 5, 16] {
            let mut q = ParkQueue::with_capacity(capacity);
            let mut model: Vec<AckerMessage> = Vec::new();
            let mut xor = 0u64;
            for _ in 0..20_000 {
                if rng.next_u32() % 3 != 0 {
                    let root = 1 + rng.next_u64() % 7;
                    xor += 1;
                    let m = AckerMessage::Ack { root, xor };
                    let r = q.push(m);
                    if model.len() < capacity {
                        assert_eq!(r, Ok(()));
                        model.push(m);
                    } else {
                        assert_eq!(r, Err(m));
                    }
                } else if let Some(root) = q.front_root() {
                    // The front root is the root of the oldest message.
                    assert_eq!(root, model[0].root());
                    // Apply up to k of its messages, in order.
                    let k = 1 + rng.next_u32() % 3;
                    let mut more = true;
                    for _ in 0..k {
                        let pos = model.iter().position(|m| m.root() == root).unwrap();
                        assert_eq!(q.peek(root), Some(model.remove(pos)));
                        more = q.pop(root);
                        assert_eq!(more, model.iter().any(|m| m.root() == root));
                        if !more {
                            break;
                        }
                    }
                    q.retire_front(more);
                    if more {
                        // Requeued at the back: the model keeps its messages in place, so only
                        // check that the root is still parked.
                        assert!(q.peek(root).is_some());
                        // Mirror the requeue in the model: move the root's messages last.
                        let (mut mine, rest): (Vec<_>, Vec<_>) =
                            model.iter().partition(|m| m.root() == root);
                        model = rest;
                        model.append(&mut mine);
                    }
                } else {
                    assert!(model.is_empty());
                }
                assert_eq!(q.len(), model.len());
                assert_eq!(q.is_empty(), model.is_empty());
            }
        }
    }
}
