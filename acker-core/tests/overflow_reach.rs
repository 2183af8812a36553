//! An overflow entry (a root placed outside both of its buckets because they and a cuckoo move's
//! targets were full) must not make every later lookup scan the whole table. A new-user trial
//! found `acker-bench compare --windows 10000000` (12.5 M slots at load 0.8) never finishing:
//! one root had overflowed, and from then on each new root's lookup read all 12.5 M slots until
//! that root was decided. A lookup now scans past the second bucket only as far as the farthest
//! overflow entry lies (`probe_len`).

use std::time::{Duration, Instant};

use acker_core::{AckerTable, Decision, IdGenerator, Slot};

const T: u64 = 30_000_000_000;

/// 1M slots filled until the first overflow entry, then 200,000 trees replaced one by one (the
/// oldest completed, a new one created) while that entry, the newest of the fill, stays live:
/// every decision is right, the probe stays short, and the churn takes well under the bound
/// (about 0.1 s here; a full scan a new root took minutes).
#[test]
fn a_live_overflow_entry_does_not_make_every_lookup_scan_the_table() {
    let cap = 1 << 20;
    let mut table = AckerTable::new(vec![Slot::EMPTY; cap], T).unwrap();
    let mut ids = IdGenerator::from_seed(3);
    let mut live = std::collections::VecDeque::new();
    while table.overflow_len() == 0 {
        assert!(live.len() < cap, "no overflow entry in a full table");
        let (root, xor) = (ids.next_id(), ids.next_id());
        assert_eq!(table.init(root, xor, 7), Ok(Decision::Pending));
        live.push_back((root, xor));
    }
    let filled = live.len();
    assert!(
        table.probe_len() > 8 && table.probe_len() < cap / 16,
        "{}",
        table.probe_len()
    );
    let started = Instant::now();
    let bound = Duration::from_secs(20);
    for step in 0..200_000 {
        let (root, xor) = live.pop_front().unwrap();
        assert_eq!(
            table.ack(root, xor),
            Ok(Decision::Completed { spout_task: 7 }),
            "step {step}"
        );
        let (root, xor) = (ids.next_id(), ids.next_id());
        assert_eq!(
            table.init(root, xor, 7),
            Ok(Decision::Pending),
            "step {step}"
        );
        live.push_back((root, xor));
        assert!(
            started.elapsed() < bound,
            "200,000 replacements with an overflow entry live took over {bound:?} (step {step}, \
             probe_len {} of {cap} slots)",
            table.probe_len()
        );
    }
    assert_eq!(table.len(), filled);
    assert!(table.overflow_len() > 0);
    assert!(table.probe_len() < cap / 4, "{}", table.probe_len());
    // Every tree completes; with the last overflow entry gone the probe is two buckets again.
    while let Some((root, xor)) = live.pop_front() {
        assert_eq!(
            table.ack(root, xor),
            Ok(Decision::Completed { spout_task: 7 })
        );
    }
    assert_eq!(
        (table.len(), table.overflow_len(), table.probe_len()),
        (0, 0, 8)
    );
}
