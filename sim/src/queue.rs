//! The event queue: simulated time in nanoseconds, ties broken by a sequence number.
//!
//! Events pop in `(time_ns, seq)` order, `seq` being the order in which they were pushed, so the
//! order is total and the same in every run: two events at the same nanosecond run in the order
//! they were scheduled.
//!
//! A discrete-event simulation never schedules into the past, so the keys it pops never decrease.
//! The queue exploits that: it is a radix heap over the 128-bit key `time_ns << 64 | seq`. An
//! item sits in the bucket named by the highest bit in which its key differs from the last key
//! popped; a pop empties the lowest non-empty bucket, and when that is not bucket 0 it
//! redistributes that bucket around its minimum. Each item moves down at most 128 times in its
//! life and usually a handful, so push is O(1) and pop amortised O(1) in practice, cheaper than a
//! binary heap's O(log n) sift with its unpredictable branches.
//!
//! Pushing an event earlier than the last one popped is a caller bug; such an event is clamped
//! to the last popped time (it then runs next, still in push order), so the order stays total.

/// A monotone min-queue of events ordered by `(time_ns, seq)`.
#[derive(Debug)]
pub struct EventQueue<E> {
    buckets: Vec<Vec<(u128, E)>>,
    /// Bit `i` set when bucket `i` is non-empty.
    nonempty: [u64; 3],
    last: u128,
    len: usize,
    next_seq: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

#[inline]
fn bucket(key: u128, last: u128) -> usize {
    (128 - (key ^ last).leading_zeros()) as usize
}

impl<E> EventQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        Self {
            buckets: (0..129).map(|_| Vec::new()).collect(),
            nonempty: [0; 3],
            last: 0,
            len: 0,
            next_seq: 0,
        }
    }

    /// Schedules `event` at `time_ns` (clamped to the last popped time if earlier); returns its
    /// sequence number.
    #[inline]
    pub fn push(&mut self, time_ns: u64, event: E) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        let last_time = (self.last >> 64) as u64;
        let key = ((time_ns.max(last_time) as u128) << 64) | seq as u128;
        let b = bucket(key, self.last);
        self.buckets[b].push((key, event));
        self.nonempty[b >> 6] |= 1 << (b & 63);
        self.len += 1;
        seq
    }

    /// The earliest event, with its time and sequence number.
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, u64, E)> {
        if self.len == 0 {
            return None;
        }
        if self.buckets[0].is_empty() {
            let i = self.first_nonempty()?;
            let mut items = std::mem::take(&mut self.buckets[i]);
            self.nonempty[i >> 6] &= !(1 << (i & 63));
            let min = items.iter().map(|&(k, _)| k).min()?;
            self.last = min;
            for (k, e) in items.drain(..) {
                let b = bucket(k, min);
                self.buckets[b].push((k, e));
                self.nonempty[b >> 6] |= 1 << (b & 63);
            }
            // Give the drained buffer back to keep its capacity.
            if self.buckets[i].is_empty() {
                self.buckets[i] = items;
            }
        }
        let (key, e) = self.buckets[0].pop()?;
        if self.buckets[0].is_empty() {
            self.nonempty[0] &= !1;
        }
        self.len -= 1;
        Some(((key >> 64) as u64, key as u64, e))
    }

    fn first_nonempty(&self) -> Option<usize> {
        self.nonempty
            .iter()
            .enumerate()
            .find(|(_, &w)| w != 0)
            .map(|(i, w)| i * 64 + w.trailing_zeros() as usize)
    }

    /// Number of scheduled events.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is scheduled.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng;

    #[test]
    fn pops_by_time_then_push_order() {
        let mut q = EventQueue::new();
        q.push(5, 'a');
        q.push(3, 'b');
        q.push(5, 'c');
        q.push(3, 'd');
        q.push(0, 'e');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, _, e)| e)).collect();
        assert_eq!(order, vec!['e', 'b', 'd', 'a', 'c']);
        assert!(q.is_empty());
    }

    #[test]
    fn matches_a_sorted_reference_under_interleaving() {
        // Interleave pushes (never into the past) and pops; compare with a BTreeMap by (time, seq).
        let mut r = rng::stream(3, 3);
        let mut q = EventQueue::new();
        let mut reference = std::collections::BTreeMap::new();
        let mut now = 0u64;
        for i in 0..20_000u64 {
            let pushes = rng::below(&mut r, 3);
            for _ in 0..pushes {
                let t = now + rng::below(&mut r, 1000) * rng::below(&mut r, 2);
                let seq = q.push(t, i);
                reference.insert((t, seq), i);
            }
            if rng::below(&mut r, 2) == 0 {
                let got = q.pop();
                let want = reference.pop_first();
                assert_eq!(got.map(|(t, s, e)| ((t, s), e)), want);
                if let Some(((t, _), _)) = want {
                    now = t;
                }
            }
        }
        while let Some(want) = reference.pop_first() {
            assert_eq!(q.pop().map(|(t, s, e)| ((t, s), e)), Some(want));
        }
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn an_event_in_the_past_is_clamped() {
        let mut q = EventQueue::new();
        q.push(10, 'a');
        q.push(20, 'b');
        assert_eq!(q.pop().map(|(t, _, e)| (t, e)), Some((10, 'a')));
        q.push(5, 'c');
        assert_eq!(q.pop().map(|(t, _, e)| (t, e)), Some((10, 'c')));
        assert_eq!(q.pop().map(|(t, _, e)| (t, e)), Some((20, 'b')));
    }
}
