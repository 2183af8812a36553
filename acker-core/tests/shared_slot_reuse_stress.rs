//! Stress: `get` racing the reuse of its slot by another root must never return a mixture of the
//! two roots' entries (issue 13, interleaving 1). A reader loops `get(5)` on a one-slot table
//! while a writer completes root 5 and fills the slot with root 9 (ack val 0x40, no spout task)
//! and back, so the slot is reused millions of times under the reader.
//!
//! Loom's models do not reach this interleaving for a `get` that reads the ack val after
//! unlocking (loom 0.7 does not reorder a relaxed load before a later store of another thread
//! unless another conflict leads it there); this test does, by running it for real. Budget:
//! `ACKER_SLOT_REUSE_SECS` (default 5) seconds.

#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use acker_core::shared::{SharedAckerTable, SharedArrays};
use acker_core::Decision;

const T: u64 = 30_000_000_000;

#[test]
fn get_never_returns_a_mixture_of_two_roots() {
    let secs: u64 = std::env::var("ACKER_SLOT_REUSE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let table = Arc::new(SharedAckerTable::new(SharedArrays::<1>::arrays(), T).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (t, stop) = (table.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut rounds = 0u64;
            while !stop.load(Ordering::Relaxed) {
                assert_eq!(t.init(5, 0x3, 7), Ok(Decision::Pending));
                assert_eq!(t.ack(5, 0x3), Ok(Decision::Completed { spout_task: 7 }));
                // Root 9's ack arrives before its init: an entry with ack val 0x40 and no spout
                // task, in root 5's old slot; its init completes it and frees the slot again.
                assert_eq!(t.ack(9, 0x40), Ok(Decision::Pending));
                assert_eq!(
                    t.init(9, 0x40, 1),
                    Ok(Decision::Completed { spout_task: 1 })
                );
                rounds += 1;
            }
            rounds
        })
    };
    let deadline = Instant::now() + Duration::from_secs(secs);
    let (mut reads, mut seen) = (0u64, 0u64);
    while Instant::now() < deadline {
        for _ in 0..1024 {
            reads += 1;
            if let Some(e) = table.get(5) {
                seen += 1;
                assert_eq!(
                    (e.ack_val, e.spout_task, e.failed),
                    (0x3, Some(7), false),
                    "get(5) returned a mixture of roots after {reads} reads"
                );
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let rounds = writer.join().expect("writer");
    assert!(
        rounds > 0 && seen > 0,
        "the race never ran: {rounds} rounds, {seen} entries seen"
    );
}
