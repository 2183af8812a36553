//! The SPSC ring on real threads: order, capacity, batches, drops, and a ten-million-item stress
//! run between two threads.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use acker_runtime::ring::ring;

#[test]
fn capacity_is_exact_also_when_not_a_power_of_two() {
    for cap in [1usize, 2, 3, 5, 8] {
        let (mut p, mut c) = ring::<usize>(cap);
        assert_eq!(p.capacity(), cap);
        for i in 0..cap {
            assert_eq!(p.push(i), Ok(()));
        }
        assert_eq!(p.push(99), Err(99), "capacity {cap}");
        assert_eq!(p.free(), 0);
        assert_eq!(c.available(), cap);
        // Wrap round several times, one in one out.
        for i in cap..cap * 5 {
            assert_eq!(c.pop(), Some(i - cap));
            assert_eq!(p.push(i), Ok(()));
        }
        let mut got = Vec::new();
        assert_eq!(c.pop_batch(usize::MAX, |x| got.push(x)), cap);
        assert_eq!(got, (cap * 4..cap * 5).collect::<Vec<_>>());
        assert_eq!(c.pop(), None);
        assert!(c.is_empty());
    }
    assert_eq!(ring::<u8>(0).0.capacity(), 1);
}

#[test]
fn push_from_moves_what_fits_in_order() {
    let (mut p, mut c) = ring::<u32>(4);
    let mut q: VecDeque<u32> = (0..6).collect();
    assert_eq!(p.push_from(&mut q), 4);
    assert_eq!(q, [4, 5]);
    assert_eq!(p.push_from(&mut q), 0);
    let mut got = Vec::new();
    assert_eq!(c.pop_batch(3, |x| got.push(x)), 3);
    assert_eq!(p.push_from(&mut q), 2);
    assert!(q.is_empty());
    assert_eq!(c.pop_batch(10, |x| got.push(x)), 3);
    assert_eq!(got, [0, 1, 2, 3, 4, 5]);
}

/// Counts its drops.
struct Counted(Arc<AtomicUsize>);
impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn dropping_the_ring_drops_the_items_left_exactly_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (mut p, mut c) = ring(3);
    for _ in 0..3 {
        assert!(p.push(Counted(drops.clone())).is_ok());
    }
    drop(c.pop());
    assert_eq!(drops.load(Ordering::Relaxed), 1);
    drop(p);
    assert_eq!(drops.load(Ordering::Relaxed), 1);
    drop(c);
    assert_eq!(drops.load(Ordering::Relaxed), 3);
}

#[test]
fn a_panic_inside_pop_batch_keeps_every_item_dropped_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (mut p, mut c) = ring(8);
    for _ in 0..5 {
        assert!(p.push(Counted(drops.clone())).is_ok());
    }
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut seen = 0;
        c.pop_batch(8, |x| {
            seen += 1;
            drop(x);
            if seen == 2 {
                panic!("user code");
            }
        });
    }));
    assert!(r.is_err());
    assert_eq!(drops.load(Ordering::Relaxed), 2);
    assert_eq!(c.available(), 3);
    drop((p, c));
    assert_eq!(drops.load(Ordering::Relaxed), 5);
}

#[test]
fn pop_batch_in_place_hands_over_in_order_and_drops_what_is_left_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (mut p, mut c) = ring(4);
    // Wrap round first, so the batch below crosses the end of the slot array.
    for i in 0..3 {
        assert!(p.push((i, Some(Counted(drops.clone())))).is_ok());
    }
    let mut got = Vec::new();
    assert_eq!(c.pop_batch(3, |(i, _)| got.push(i)), 3);
    assert_eq!(drops.load(Ordering::Relaxed), 3);
    for i in 3..7 {
        assert!(p.push((i, Some(Counted(drops.clone())))).is_ok());
    }
    // Take the counters out of the first three: those are dropped by the callback, the
    // last one's stays in its slot and is dropped there.
    let mut taken = Vec::new();
    assert_eq!(
        c.pop_batch_in_place(3, |(i, counted)| {
            got.push(*i);
            taken.push(counted.take());
        }),
        3
    );
    assert_eq!(
        drops.load(Ordering::Relaxed),
        3,
        "taken ones are not dropped twice"
    );
    drop(taken);
    assert_eq!(drops.load(Ordering::Relaxed), 6);
    assert_eq!(c.pop_batch_in_place(8, |(i, _)| got.push(*i)), 1);
    assert_eq!(
        drops.load(Ordering::Relaxed),
        7,
        "the one left in its slot is dropped there"
    );
    assert_eq!(got, [0, 1, 2, 3, 4, 5, 6]);
    // The slots are free again: four more fit.
    for i in 7..11 {
        assert!(p.push((i, None)).is_ok());
    }
    assert_eq!(c.available(), 4);
    drop((p, c));
    assert_eq!(drops.load(Ordering::Relaxed), 7);
}

#[test]
fn a_panic_inside_pop_batch_in_place_keeps_every_item_dropped_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (mut p, mut c) = ring(8);
    for _ in 0..5 {
        assert!(p.push(Counted(drops.clone())).is_ok());
    }
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut seen = 0;
        c.pop_batch_in_place(8, |_| {
            seen += 1;
            if seen == 2 {
                panic!("user code");
            }
        });
    }));
    assert!(r.is_err());
    // The two handed over (the second while it panicked) are dropped and freed.
    assert_eq!(drops.load(Ordering::Relaxed), 2);
    assert_eq!(c.available(), 3);
    assert_eq!(p.free(), 5);
    drop((p, c));
    assert_eq!(drops.load(Ordering::Relaxed), 5);
}

/// Ten million items from one thread to another, in order, through a small ring (so both the
/// full and the empty paths are taken often), half by single pushes/pops and half by batches.
#[test]
fn two_threads_move_ten_million_items_in_order() {
    const N: u64 = 10_000_000;
    let (mut p, mut c) = ring::<u64>(64);
    let producer = std::thread::spawn(move || {
        let mut q = VecDeque::with_capacity(32);
        let mut next = 0u64;
        while next < N {
            if next.is_multiple_of(2) {
                if p.push(next).is_ok() {
                    next += 1;
                } else {
                    std::hint::spin_loop();
                }
            } else {
                while q.len() < 32 && next + (q.len() as u64) < N {
                    q.push_back(next + q.len() as u64);
                }
                let before = q.len();
                while !q.is_empty() {
                    if p.push_from(&mut q) == 0 {
                        std::thread::yield_now();
                    }
                }
                next += before as u64;
            }
        }
    });
    let mut expected = 0u64;
    let mut spins = 0u64;
    while expected < N {
        let got = if expected.is_multiple_of(3) {
            match c.pop() {
                Some(x) => {
                    assert_eq!(x, expected);
                    expected += 1;
                    1
                }
                None => 0,
            }
        } else {
            c.pop_batch(17, |x| {
                assert_eq!(x, expected);
                expected += 1;
            })
        };
        if got == 0 {
            spins += 1;
            if spins.is_multiple_of(64) {
                std::thread::yield_now();
            }
        }
    }
    producer.join().unwrap();
    assert_eq!(c.pop(), None);
    assert_eq!(expected, N);
}
