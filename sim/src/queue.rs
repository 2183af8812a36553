//! The event queue: simulated time in nanoseconds, ties broken by a sequence number.
//!
//! Events pop in `(time_ns, seq)` order, `seq` being the order in which they were pushed, so the
//! order is total and the same in every run: two events at the same nanosecond run in the order
//! they were scheduled.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// One scheduled event carrying a payload `E`.
#[derive(Debug)]
struct Entry<E> {
    time_ns: u64,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.time_ns == other.time_ns && self.seq == other.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap and we want the earliest (time, seq) first.
        other
            .time_ns
            .cmp(&self.time_ns)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

/// A min-queue of events ordered by `(time_ns, seq)`.
#[derive(Debug)]
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    next_seq: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        Self {
            heap: BinaryHeap::new(),
            next_seq: 0,
        }
    }

    /// Schedules `event` at `time_ns`; returns its sequence number.
    #[inline]
    pub fn push(&mut self, time_ns: u64, event: E) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry {
            time_ns,
            seq,
            event,
        });
        seq
    }

    /// The earliest event, with its time and sequence number.
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, u64, E)> {
        self.heap.pop().map(|e| (e.time_ns, e.seq, e.event))
    }

    /// The time of the earliest event.
    pub fn peek_time(&self) -> Option<u64> {
        self.heap.peek().map(|e| e.time_ns)
    }

    /// Number of scheduled events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether nothing is scheduled.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
