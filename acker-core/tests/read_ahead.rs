//! The spout's pending set reads ahead in sets larger than a core's L2 cache: each emit draws
//! the next emit's root id and asks for its home slot. These tests check from outside that this
//! changes nothing a caller sees: the ids come out of the seeded generator in the same order as
//! when each emit drew its own root first (root, then one edge id per copy), whatever the set's
//! size, through refusals at max spout pending and completions in between; and the root that
//! `upcoming_root` names is the one the next emit hands out.

use acker_core::pending::READ_AHEAD_MIN_BYTES;
use acker_core::{IdGenerator, PendingSlot, SpoutConfig, SpoutEmit, SpoutPending};

const SEED: u64 = 0x5eed;

fn pending(max_pending: usize, slots: usize) -> SpoutPending<u32, Vec<PendingSlot<u32>>> {
    SpoutPending::new(
        vec![PendingSlot::default(); slots],
        SpoutConfig {
            spout_task: 3,
            num_ackers: 1,
            max_spout_pending: max_pending,
            message_timeout_ns: Some(30_000_000_000),
            seed: SEED,
        },
    )
    .unwrap()
}

/// Emits `emits` tuples of `copies` copies each into `p` (max spout pending 4: every fourth emit
/// first completes the oldest pending root, and an emit at max spout pending is refused and
/// retried after a completion), returning every id in the order the emits handed them out:
/// root, then the copies' edge ids.
fn ids_handed_out(
    p: &mut SpoutPending<u32, Vec<PendingSlot<u32>>>,
    emits: u32,
    copies: usize,
) -> Vec<u64> {
    let mut ids = Vec::new();
    let mut pending_roots = std::collections::VecDeque::new();
    let mut refused = 0;
    assert_eq!(
        p.upcoming_root(),
        None,
        "no root drawn before the first emit"
    );
    for m in 0..emits {
        let mut edge = vec![0u64; copies];
        let upcoming = p.upcoming_root();
        assert_eq!(upcoming.is_some(), m > 0, "emit {m}");
        let root = match p.emit(Some(m), &mut edge, u64::from(m)) {
            Ok(SpoutEmit::Tracked { root, .. }) => root,
            Err(acker_core::PendingError::MaxSpoutPending { msg_id }) => {
                assert_eq!(msg_id, m);
                refused += 1;
                let oldest = pending_roots.pop_front().unwrap();
                assert!(p.completed(oldest, u64::from(m)).is_some());
                match p.emit(Some(m), &mut edge, u64::from(m)) {
                    Ok(SpoutEmit::Tracked { root, .. }) => root,
                    other => panic!("emit {m} after a completion: {other:?}"),
                }
            }
            other => panic!("emit {m}: {other:?}"),
        };
        if let Some(u) = upcoming {
            assert_eq!(root, u, "emit {m}: the root named upcoming");
        }
        pending_roots.push_back(root);
        ids.push(root);
        ids.extend_from_slice(&edge);
    }
    assert!(refused > 0, "the run never reached max spout pending");
    ids
}

/// The ids a spout hands out are the generator's, in order, for a set that stays in the cache
/// and for one that reads ahead; the first root after a refusal is the next id too.
#[test]
fn a_spout_hands_out_the_generators_ids_in_order_whatever_its_size() {
    let slot = std::mem::size_of::<PendingSlot<u32>>();
    let large = READ_AHEAD_MIN_BYTES.div_ceil(slot);
    for (slots, reads_ahead) in [(8, false), (large, true)] {
        for copies in [0, 1, 3] {
            let mut p = pending(4, slots);
            assert_eq!(p.reads_ahead(), reads_ahead, "{slots} slots");
            let got = ids_handed_out(&mut p, 40, copies);
            let mut g = IdGenerator::from_seed(SEED);
            let want: Vec<u64> = (0..got.len()).map(|_| g.next_id()).collect();
            assert_eq!(got, want, "{slots} slots, {copies} copies an emit");
        }
    }
}

/// A set reads ahead from [`READ_AHEAD_MIN_BYTES`] of slots up, not below.
#[test]
fn a_spout_reads_ahead_from_one_mebibyte_of_slots() {
    let slot = std::mem::size_of::<PendingSlot<u32>>();
    let at = READ_AHEAD_MIN_BYTES.div_ceil(slot);
    assert_eq!(READ_AHEAD_MIN_BYTES, 1 << 20);
    assert!(!pending(4, at - 1).reads_ahead());
    assert!(pending(4, at).reads_ahead());
    // A root found pending again after many emits and completions: prefetching is only a hint.
    let mut p = pending(4, at);
    let mut e = [0u64; 1];
    let Ok(SpoutEmit::Tracked { root, .. }) = p.emit(Some(7), &mut e, 5) else {
        panic!("first emit")
    };
    p.prefetch(root);
    p.prefetch(12345);
    let c = p.completed(root, 9).unwrap();
    assert_eq!((c.msg_id, c.complete_latency_ns), (7, 4));
    assert!(p.completed(12345, 9).is_none());
}
