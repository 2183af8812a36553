//! loom models of the SPSC ring (`acker_runtime::ring`), explored exhaustively up to a
//! preemption bound. Run (on the shared 2-core machine, 2026-11-30: the five models take 1.5 s;
//! building the runtime and its dependencies with `--cfg loom` from scratch takes about 3.5 min):
//!
//! ```sh
//! LOOM_MAX_PREEMPTIONS=3 RUSTFLAGS="--cfg loom" cargo test -p acker-runtime --release --test loom_ring
//! ```
//!
//! Under `cfg(loom)` the ring's atomics, cells and `Arc` come from loom, so every interleaving
//! of the two ends' loads and stores (and every slot access, checked for data races) is tried.
#![cfg(loom)]

use std::collections::VecDeque;

use acker_runtime::ring::ring;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

/// Producer pushes `0..n` one by one (yielding while full), consumer pops one by one: the
/// consumer sees exactly `0..n` in order.
fn push_pop(capacity: usize, n: usize) {
    loom::model(move || {
        let (mut p, mut c) = ring::<usize>(capacity);
        let producer = thread::spawn(move || {
            for i in 0..n {
                let mut item = i;
                while let Err(back) = p.push(item) {
                    item = back;
                    thread::yield_now();
                }
            }
        });
        let mut got = Vec::new();
        while got.len() < n {
            match c.pop() {
                Some(x) => got.push(x),
                None => thread::yield_now(),
            }
        }
        producer.join().unwrap();
        assert_eq!(got, (0..n).collect::<Vec<_>>());
        assert_eq!(c.pop(), None);
    });
}

#[test]
fn push_pop_capacity_1() {
    push_pop(1, 4);
}

#[test]
fn push_pop_capacity_2() {
    push_pop(2, 4);
}

/// Batches on both ends: `push_from` a queue of 3 into a ring of 2, `pop_batch` up to 2 at a time.
#[test]
fn batch_push_pop_capacity_2() {
    loom::model(|| {
        let (mut p, mut c) = ring::<usize>(2);
        let producer = thread::spawn(move || {
            let mut q: VecDeque<usize> = (0..3).collect();
            while !q.is_empty() {
                if p.push_from(&mut q) == 0 {
                    thread::yield_now();
                }
            }
        });
        let mut got = Vec::new();
        while got.len() < 3 {
            if c.pop_batch(2, |x| got.push(x)) == 0 {
                thread::yield_now();
            }
        }
        producer.join().unwrap();
        assert_eq!(got, [0, 1, 2]);
    });
}

/// `pop_batch_in_place` against `push_from`: each item is read where it lies and dropped there,
/// and its slot is reused only after that (loom checks the slot accesses for races); every
/// item is dropped exactly once.
#[test]
fn batch_push_pop_in_place_capacity_2() {
    loom::model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let (mut p, mut c) = ring::<(usize, Counted)>(2);
        let d = drops.clone();
        let producer = thread::spawn(move || {
            let mut q: VecDeque<(usize, Counted)> =
                (0..3).map(|i| (i, Counted(d.clone()))).collect();
            while !q.is_empty() {
                if p.push_from(&mut q) == 0 {
                    thread::yield_now();
                }
            }
        });
        let mut got = Vec::new();
        while got.len() < 3 {
            if c.pop_batch_in_place(2, |(i, _)| got.push(*i)) == 0 {
                thread::yield_now();
            }
        }
        producer.join().unwrap();
        assert_eq!(got, [0, 1, 2]);
        assert_eq!(drops.load(Ordering::Relaxed), 3);
    });
}

/// A full ring: the producer's push is refused until the consumer frees a slot, and then
/// lands after the items already there.
#[test]
fn full_ring_push_while_popping() {
    loom::model(|| {
        let (mut p, mut c) = ring::<usize>(2);
        assert_eq!(p.push(0), Ok(()));
        assert_eq!(p.push(1), Ok(()));
        let producer = thread::spawn(move || {
            let mut refused = 0;
            let mut item = 2;
            while let Err(back) = p.push(item) {
                item = back;
                refused += 1;
                thread::yield_now();
            }
            refused
        });
        let mut got = Vec::new();
        while got.len() < 3 {
            match c.pop() {
                Some(x) => got.push(x),
                None => thread::yield_now(),
            }
        }
        let _refused = producer.join().unwrap();
        assert_eq!(got, [0, 1, 2]);
    });
}

/// Counts drops in a loom atomic.
struct Counted(Arc<AtomicUsize>);
impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// Both ends dropped on different threads with items left: each item is dropped exactly once,
/// by whichever end goes last (or by the consumer's pop).
#[test]
fn drop_with_items_left() {
    loom::model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let (mut p, mut c) = ring::<Counted>(2);
        let d = drops.clone();
        let producer = thread::spawn(move || {
            let _ = p.push(Counted(d.clone()));
            let _ = p.push(Counted(d));
            // `p` dropped here, possibly before or after the consumer's end.
        });
        let consumer = thread::spawn(move || {
            drop(c.pop());
        });
        producer.join().unwrap();
        consumer.join().unwrap();
        assert_eq!(drops.load(Ordering::Relaxed), 2);
    });
}
