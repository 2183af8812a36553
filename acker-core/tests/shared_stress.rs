//! Stress test of the [`SharedAckerTable`] with real threads: one million random tuple trees at
//! each of 2, 4 and 8 threads (fewer in debug builds), their messages dealt to the threads in
//! random orders (acks before the init, acks of one tree on several threads at once, fails,
//! reset-timeouts, a ticking clock), half of the batches through `apply_batch` (on a table large
//! enough to read ahead at 4 threads), and every tree must be decided exactly once, with the
//! right decision, leaving nothing behind.
#![cfg(not(loom))]

use acker_core::{AckerMessage, Decision, SharedAckerTable, TableError};
use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Barrier;

mod common;
use common::vec_slots;

const T: u64 = 1_000_000;
const TREES_PER_BATCH: usize = 1024;
const CAPACITY: usize = 8192;
/// Large enough for `apply_batch` to read ahead.
const BATCH_CAPACITY: usize = acker_core::table::BATCH_READ_AHEAD_MIN_SLOTS + 8192;
const SPOUT_TASK: u16 = 3;

/// Decision counters per tree: +1 per Completed, +16 per Failed.
const COMPLETED_ONCE: u8 = 1;
const FAILED_ONCE: u8 = 16;

fn root_of(tree: usize) -> u64 {
    // A bijection of tree + 1 (never 0): distinct trees get distinct, well-spread roots.
    (tree as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03)
}

fn nonzero(rng: &mut Xoshiro256PlusPlus) -> u64 {
    loop {
        let x = rng.next_u64();
        if x != 0 {
            return x;
        }
    }
}

/// The messages of one tuple tree (the init and one ack or fail per tuple copy), and whether one
/// bolt failed its input. Depth ≤ 3, fan-out 0–3 at the spout and 0–2 at bolts.
fn tree_messages(
    tree: usize,
    with_fails: bool,
    rng: &mut Xoshiro256PlusPlus,
    out: &mut Vec<AckerMessage>,
) -> bool {
    let root = root_of(tree);
    let mut fail_left = with_fails && rng.next_u32().is_multiple_of(10);
    let failing = fail_left;
    let copies = (rng.next_u32() % 4) as usize;
    let mut init_xor = 0;
    let mut frontier: Vec<(u64, u32)> = Vec::new();
    for _ in 0..copies {
        let e = nonzero(rng);
        init_xor ^= e;
        frontier.push((e, 1));
    }
    // A failing tree needs a tuple to fail.
    if fail_left && frontier.is_empty() {
        let e = nonzero(rng);
        init_xor ^= e;
        frontier.push((e, 1));
    }
    out.push(AckerMessage::Init {
        root,
        xor: init_xor,
        spout_task: SPOUT_TASK,
    });
    while let Some((edge, depth)) = frontier.pop() {
        if fail_left && (rng.next_u32().is_multiple_of(2) || frontier.is_empty()) {
            fail_left = false;
            out.push(AckerMessage::Fail { root });
            continue;
        }
        let children = if depth < 3 { rng.next_u32() % 3 } else { 0 };
        let mut xor = edge;
        for _ in 0..children {
            let c = nonzero(rng);
            xor ^= c;
            frontier.push((c, depth + 1));
        }
        out.push(AckerMessage::Ack { root, xor });
        // Now and then a bolt asks for more time (before or after the tree is decided).
        if with_fails && rng.next_u32().is_multiple_of(16) {
            out.push(AckerMessage::ResetTimeout { root });
        }
    }
    failing
}

fn shuffle<X>(v: &mut [X], rng: &mut Xoshiro256PlusPlus) {
    for i in (1..v.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
}

/// Runs `trees` trees over `threads` threads and checks every decision. Odd batches go through
/// `apply_batch` (in chunks), even ones through `apply`. Returns the number of `Full` retries
/// (back-pressure events).
fn stress(threads: usize, trees: usize, with_fails: bool, seed: u64, capacity: usize) -> usize {
    let table = SharedAckerTable::new(vec_slots(capacity), T).unwrap();
    let decisions: Vec<AtomicU8> = (0..trees).map(|_| AtomicU8::new(0)).collect();
    let expected: Vec<AtomicU8> = (0..trees).map(|_| AtomicU8::new(0)).collect();
    let full_retries = AtomicUsize::new(0);
    let barrier = Barrier::new(threads);
    let batches = trees.div_ceil(TREES_PER_BATCH);
    std::thread::scope(|s| {
        for me in 0..threads {
            let (table, decisions, expected) = (&table, &decisions, &expected);
            let (barrier, full_retries) = (&barrier, &full_retries);
            s.spawn(move || {
                let mut mine: Vec<(usize, AckerMessage)> = Vec::new();
                let mut msgs = Vec::new();
                let mut order = Xoshiro256PlusPlus::seed_from_u64(seed ^ (me as u64 + 1) << 32);
                for batch in 0..batches {
                    if me == 0 {
                        // The clock moves one timeout per batch, concurrently with the updates.
                        table.tick(batch as u64 * T);
                    }
                    // Every thread generates the same trees and keeps its share of messages.
                    let mut gen = Xoshiro256PlusPlus::seed_from_u64(seed ^ batch as u64);
                    mine.clear();
                    let first = batch * TREES_PER_BATCH;
                    let last = (first + TREES_PER_BATCH).min(trees);
                    for (tree, want) in expected.iter().enumerate().take(last).skip(first) {
                        msgs.clear();
                        let failing = tree_messages(tree, with_fails, &mut gen, &mut msgs);
                        if me == 0 {
                            let w = if failing { FAILED_ONCE } else { COMPLETED_ONCE };
                            want.store(w, Ordering::Relaxed);
                        }
                        for &m in &msgs {
                            if (gen.next_u32() as usize) % threads == me {
                                mine.push((tree, m));
                            }
                        }
                    }
                    // Random delivery order: acks before the init, trees interleaved.
                    shuffle(&mut mine, &mut order);
                    let mut results = Vec::with_capacity(mine.len());
                    if batch % 2 == 1 {
                        for chunk in mine.chunks(64) {
                            table.apply_batch(
                                &chunk.iter().map(|&(_, m)| m).collect::<Vec<_>>(),
                                |_, r| results.push(r),
                            );
                        }
                    } else {
                        results.extend(mine.iter().map(|&(_, m)| table.apply(m)));
                    }
                    for (&(tree, m), mut r) in mine.iter().zip(results) {
                        let d = loop {
                            match r {
                                Ok(d) => break d,
                                Err(TableError::Full) => {
                                    full_retries.fetch_add(1, Ordering::Relaxed);
                                    std::thread::yield_now();
                                    r = table.apply(m);
                                }
                                Err(e) => panic!("tree {tree}: {m:?} → {e:?}"),
                            }
                        };
                        match d {
                            Decision::Completed { spout_task } => {
                                assert_eq!(spout_task, SPOUT_TASK);
                                decisions[tree].fetch_add(COMPLETED_ONCE, Ordering::Relaxed);
                            }
                            Decision::Failed { spout_task } => {
                                assert_eq!(spout_task, SPOUT_TASK);
                                decisions[tree].fetch_add(FAILED_ONCE, Ordering::Relaxed);
                            }
                            Decision::Pending => {}
                            Decision::Reset { spout_task } => {
                                assert!(with_fails, "no reset was sent");
                                assert_eq!(spout_task, SPOUT_TASK);
                            }
                        }
                    }
                    // Every message of this batch is in before the next batch starts.
                    barrier.wait();
                }
            });
        }
    });
    for tree in 0..trees {
        assert_eq!(
            decisions[tree].load(Ordering::Relaxed),
            expected[tree].load(Ordering::Relaxed),
            "tree {tree}: decisions (+1 per Completed, +16 per Failed)"
        );
    }
    if !with_fails {
        // Every entry was decided and removed: nothing at all is left.
        assert_eq!(table.len(), 0);
    }
    // Acks that arrive after their tree failed leave orphans; they expire 2T–3T later.
    let end = batches as u64 * T;
    table.tick(end + 3 * T);
    assert_eq!(table.len(), 0);
    assert_eq!(table.overflow_len(), 0);
    full_retries.load(Ordering::Relaxed)
}

/// Trees per configuration: one million each in release builds, 1/20 of it in debug builds.
fn scaled(n: usize) -> usize {
    if cfg!(debug_assertions) {
        n / 20
    } else {
        n
    }
}

#[test]
fn two_threads_ack_only() {
    let full = stress(2, scaled(1_000_000), false, 0x5EED_0002, CAPACITY);
    assert_eq!(full, 0, "the table never filled");
}

#[test]
fn four_threads_with_fails() {
    let full = stress(4, scaled(1_000_000), true, 0x5EED_0004, BATCH_CAPACITY);
    assert_eq!(full, 0, "the table never filled");
}

#[test]
fn eight_threads_with_fails() {
    let full = stress(8, scaled(1_000_000), true, 0x5EED_0008, CAPACITY);
    assert_eq!(full, 0, "the table never filled");
}

/// A table far too small for the load: inserts hit `Full` and retry (back-pressure), and still
/// every tree is decided exactly once.
#[test]
fn back_pressure_when_full() {
    let (fulls, _) = back_pressure(8, scaled(4_000));
    assert!(fulls > 0, "the table did fill up");
}

/// A table above the 64-slot window, filled to the brim: full windows overflow into the rest of
/// the table while other threads look those roots up, decide them and free their slots; every
/// tree is still decided exactly once and the overflow count returns to 0.
#[test]
fn overflow_under_pressure() {
    let (fulls, max_overflow) = back_pressure(96, scaled(20_000));
    assert!(fulls > 0, "the table did fill up");
    assert!(max_overflow > 0, "some window overflowed");
}

/// `trees` trees of three messages (the init and two acks, each on its own thread of four; two
/// threads walk the trees backwards so that many trees are in flight) over a table of
/// `capacity` slots. Returns the number of `Full` refusals and the most overflow entries seen.
fn back_pressure(capacity: usize, trees: usize) -> (usize, usize) {
    let table = SharedAckerTable::new(vec_slots(capacity), T).unwrap();
    let decided: Vec<AtomicU8> = (0..trees).map(|_| AtomicU8::new(0)).collect();
    let fulls = AtomicUsize::new(0);
    let max_overflow = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for me in 0..4usize {
            let (table, decided, fulls, max_overflow) = (&table, &decided, &fulls, &max_overflow);
            s.spawn(move || {
                // A message refused with Full is set aside and retried after the pass (blocking
                // on it could deadlock: the slots may be held by trees whose other messages wait
                // behind it on this thread).
                let mut deferred = Vec::new();
                let apply = |tree: usize, m: AckerMessage| {
                    let r = table.apply(m);
                    max_overflow.fetch_max(table.overflow_len(), Ordering::Relaxed);
                    match r {
                        Ok(Decision::Pending) => true,
                        Ok(d) => {
                            assert_eq!(
                                d,
                                Decision::Completed {
                                    spout_task: SPOUT_TASK
                                }
                            );
                            decided[tree].fetch_add(1, Ordering::Relaxed);
                            true
                        }
                        Err(TableError::Full) => {
                            fulls.fetch_add(1, Ordering::Relaxed);
                            false
                        }
                        Err(e) => panic!("{e:?}"),
                    }
                };
                for k in 0..trees {
                    let tree = if me % 2 == 0 { k } else { trees - 1 - k };
                    let root = root_of(tree);
                    let (a, b) = (tree as u64 * 2 + 1, tree as u64 * 2 + 2);
                    let m = match (tree + me) % 4 {
                        0 => AckerMessage::Init {
                            root,
                            xor: a ^ b,
                            spout_task: SPOUT_TASK,
                        },
                        1 => AckerMessage::Ack { root, xor: a },
                        2 => AckerMessage::Ack { root, xor: b },
                        _ => continue,
                    };
                    if !apply(tree, m) {
                        deferred.push((tree, m));
                    }
                }
                while !deferred.is_empty() {
                    deferred.retain(|&(tree, m)| !apply(tree, m));
                    std::thread::yield_now();
                }
            });
        }
    });
    for (tree, d) in decided.iter().enumerate() {
        assert_eq!(d.load(Ordering::Relaxed), 1, "tree {tree}");
    }
    assert_eq!(table.len(), 0);
    assert_eq!(table.overflow_len(), 0);
    (
        fulls.load(Ordering::Relaxed),
        max_overflow.load(Ordering::Relaxed),
    )
}
