//! The event queue: simulated time in nanoseconds, ties broken by push order.
//!
//! Events pop in `(time_ns, push order)` order, so the order is total and the same in every run:
//! two events at the same nanosecond run in the order they were scheduled.
//!
//! The queue is a `Vec` of `(time_ns, event)` sorted latest first: popping takes the last entry,
//! pushing scans from the end past the events due at its time or earlier (a new event pops after
//! all of them), shifting each up by one, and writes the new event into the gap (by hand: a
//! `Vec::insert` after the scan called `memmove`, 1 313 -> 1 293 instructions per simulated
//! message). The position keeps the push order among events of one time,
//! so no sequence number is stored (until 2026-12-01 each entry carried one, 24 bytes instead of
//! 16 with the simulator's events: 1 330 -> 1 313 instructions per simulated message). A push
//! therefore costs the number of events due no later than it, never the far-future ones (ticks,
//! scheduled faults). The simulator's queue holds a few dozen events at most (each task's next
//! step or tick, each link's head message, the faults), so this beats a heap: on `run --seed 1`
//! (12 events at most) the simulator took 1 999 instructions per simulated message with `std`'s
//! binary heap of `(time_ns << 64 | seq, event)` and 1 661 with this queue (callgrind); with 16
//! bolts and 8 ackers (37 events at most) the run took 191.9 M instructions instead of 240.6 M
//! (20 000 tuples, together with the cheaper root-id set of the same day). A sorted `VecDeque`
//! (binary search, shifting the shorter side) took 1 913. Measured and dropped earlier: a radix
//! heap (5 % more instructions per simulated message than the binary heap) and 4-ary heaps
//! written without `unsafe` (3 % and 13 % more). A queue of thousands of events due at once
//! (thousands of tasks or busy links) would pay for the shifts; a heap is the structure to return
//! to then.
//!
//! Pushing an event earlier than the last one popped is a caller bug; such an event is clamped
//! to the last popped time (it then runs next, still in push order), so the order stays total.

/// A monotone min-queue of events ordered by `(time_ns, push order)`.
#[derive(Debug)]
pub struct EventQueue<E> {
    /// Sorted latest first: the next event is the last. Events due at the same nanosecond sit in
    /// reverse push order, so the push order needs no stored sequence number.
    items: Vec<Item<E>>,
    last_time: u64,
}

#[derive(Clone, Copy, Debug)]
struct Item<E> {
    time_ns: u64,
    event: E,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        Self {
            items: Vec::new(),
            last_time: 0,
        }
    }

    /// Schedules `event` at `time_ns` (clamped to the last popped time if earlier), after every
    /// event already scheduled at the same time.
    #[inline(always)]
    pub fn push(&mut self, time_ns: u64, event: E) {
        let time_ns = time_ns.max(self.last_time);
        // Sorted latest first: the new event goes before the tail of events at `time_ns` or
        // earlier (found scanning from the end, where the next events are), so that it pops
        // after each of them.
        let new = Item { time_ns, event };
        self.items.push(new);
        let items = &mut self.items[..];
        let mut at = items.len() - 1;
        while at > 0 {
            let prev = items[at - 1];
            if prev.time_ns > time_ns {
                break;
            }
            items[at] = prev;
            at -= 1;
        }
        items[at] = new;
    }

    /// The earliest event (of those due at one time, the first pushed), with its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, E)> {
        let Item { time_ns, event } = self.items.pop()?;
        self.last_time = time_ns;
        Some((time_ns, event))
    }

    /// Number of scheduled events.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether nothing is scheduled.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
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
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['e', 'b', 'd', 'a', 'c']);
        assert!(q.is_empty());
    }

    #[test]
    fn matches_a_sorted_reference_under_interleaving() {
        // Interleave pushes (never into the past) and pops; compare with a BTreeMap by (time,
        // push number).
        let mut r = rng::stream(3, 3);
        let mut q = EventQueue::new();
        let mut reference = std::collections::BTreeMap::new();
        let mut now = 0u64;
        let mut pushed = 0u64;
        for i in 0..20_000u64 {
            let pushes = rng::below(&mut r, 3);
            for _ in 0..pushes {
                let t = now + rng::below(&mut r, 1000) * rng::below(&mut r, 2);
                q.push(t, (i, pushed));
                reference.insert((t, pushed), (i, pushed));
                pushed += 1;
            }
            if rng::below(&mut r, 2) == 0 {
                let got = q.pop();
                let want = reference.pop_first();
                assert_eq!(got, want.map(|((t, _), e)| (t, e)));
                if let Some(((t, _), _)) = want {
                    now = t;
                }
            }
        }
        while let Some(((t, _), e)) = reference.pop_first() {
            assert_eq!(q.pop(), Some((t, e)));
        }
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn an_event_in_the_past_is_clamped() {
        let mut q = EventQueue::new();
        q.push(10, 'a');
        q.push(20, 'b');
        assert_eq!(q.pop(), Some((10, 'a')));
        q.push(5, 'c');
        assert_eq!(q.pop(), Some((10, 'c')));
        assert_eq!(q.pop(), Some((20, 'b')));
    }
}
