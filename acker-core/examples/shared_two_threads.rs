//! One `SharedAckerTable` used from two threads at once: each thread acks half of the edges of
//! every tuple tree (in its own random order), one of them also sends the spout's inits, and the
//! decisions come back from whichever thread applied the message that completed the tree. The
//! example checks that every root was reported `Completed` exactly once, that nothing failed,
//! and that the table is empty at the end.
//!
//! Run: `cargo run --release -p acker-core --example shared_two_threads`.
use std::sync::atomic::{AtomicU8, Ordering};

use acker_core::shared::{AtomicU32, AtomicU64, SharedSlots};
use acker_core::{AckerMessage, Decision, IdGenerator, SharedAckerTable, TableError};

const TREES: usize = 200_000;
const EDGES_PER_TREE: usize = 4;
const SPOUT_TASK: u16 = 1;
/// Twice the trees in flight at once (below, all of them): load 0.5, as the docs advise.
const CAPACITY: usize = 2 * TREES;

fn main() {
    let slots = SharedSlots::new(
        (0..CAPACITY).map(|_| AtomicU64::new(0)).collect::<Vec<_>>(),
        (0..CAPACITY).map(|_| AtomicU64::new(0)).collect::<Vec<_>>(),
        (0..CAPACITY).map(|_| AtomicU32::new(0)).collect::<Vec<_>>(),
    )
    .expect("three arrays of one length");
    let table = SharedAckerTable::new(slots, 30_000_000_000).expect("a valid configuration");

    // The trees: a root and its edges (what bolts would ack); the init carries their XOR.
    let mut ids = IdGenerator::from_seed(7);
    let trees: Vec<(u64, [u64; EDGES_PER_TREE])> = (0..TREES)
        .map(|_| (ids.next_id(), std::array::from_fn(|_| ids.next_id())))
        .collect();
    let completed: Vec<AtomicU8> = (0..TREES).map(|_| AtomicU8::new(0)).collect();

    // Thread `t` sends the acks of edges `t` and `t + 2` of every tree, in an order of its own;
    // thread 0 also sends the inits (after its acks of a tree, so acks often come first).
    let run = |t: usize| {
        let mut order: Vec<usize> = (0..TREES).collect();
        let mut rng = IdGenerator::from_seed(100 + t as u64);
        for k in (1..order.len()).rev() {
            order.swap(k, (rng.next_id() % (k as u64 + 1)) as usize);
        }
        for &tree in &order {
            let (root, edges) = trees[tree];
            let mut messages = vec![
                AckerMessage::Ack {
                    root,
                    xor: edges[t],
                },
                AckerMessage::Ack {
                    root,
                    xor: edges[t + 2],
                },
            ];
            if t == 0 {
                messages.push(AckerMessage::Init {
                    root,
                    xor: edges.iter().fold(0, |x, e| x ^ e),
                    spout_task: SPOUT_TASK,
                });
            }
            for m in messages {
                // `Full` is back-pressure: retry. It does not happen at this load.
                let decision = loop {
                    match table.apply(m) {
                        Err(TableError::Full) => std::thread::yield_now(),
                        other => break other.expect("no caller error"),
                    }
                };
                match decision {
                    Decision::Completed { spout_task } => {
                        assert_eq!(spout_task, SPOUT_TASK);
                        completed[tree].fetch_add(1, Ordering::Relaxed);
                    }
                    Decision::Pending => {}
                    other => panic!("root {root}: unexpected {other:?}"),
                }
            }
        }
    };
    std::thread::scope(|s| {
        s.spawn(|| run(0));
        s.spawn(|| run(1));
    });

    let once = completed
        .iter()
        .filter(|c| c.load(Ordering::Relaxed) == 1)
        .count();
    assert_eq!(once, TREES, "every root Completed exactly once");
    assert!(table.is_empty(), "{} entries left", table.len());
    println!(
        "{TREES} trees, {} messages from 2 threads: every root Completed exactly once, table empty",
        TREES * (EDGES_PER_TREE + 1)
    );
}
