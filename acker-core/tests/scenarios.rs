//! The acker-core scenarios of the acker-core issue, each with its exact expected values.
//!
//! Spout, bolt and acker are wired by hand here: `SpoutPending` emits, `InputTracker` anchors and
//! acks, `AckerTable` decides, and the decisions are fed back to the spout.

use acker_core::{
    AckerMessage, AckerTable, AnchorError, Anchors, Decision, InputSlot, InputTracker, PendingSlot,
    RootId, Slot, SpoutConfig, SpoutEmit, SpoutPending, TableError,
};

const SEC: u64 = 1_000_000_000;
const T: u64 = 30 * SEC;
const SPOUT_TASK: u16 = 1;

type Spout = SpoutPending<u32, Vec<PendingSlot<u32>>>;
type Bolt = InputTracker<4, Vec<InputSlot<4>>>;
type Table = AckerTable<Vec<Slot>>;

fn spout(max_pending: usize, num_ackers: usize) -> Spout {
    SpoutPending::new(
        vec![PendingSlot::default(); 2 * max_pending],
        SpoutConfig {
            spout_task: SPOUT_TASK,
            num_ackers,
            max_spout_pending: max_pending,
            message_timeout_ns: Some(T),
            seed: 11,
        },
    )
    .unwrap()
}

fn bolt(capacity: usize) -> Bolt {
    InputTracker::new(vec![InputSlot::default(); capacity], 22).unwrap()
}

fn table(capacity: usize) -> Table {
    AckerTable::new(vec![Slot::EMPTY; capacity], T).unwrap()
}

/// Emits `msg_id` to one bolt copy; returns the root and the anchors of the copy.
fn emit_one(
    spout: &mut Spout,
    acker: &mut Table,
    msg_id: u32,
    now_ns: u64,
) -> (RootId, Anchors<4>) {
    let mut edges = [0u64; 1];
    match spout.emit(Some(msg_id), &mut edges, now_ns).unwrap() {
        SpoutEmit::Tracked { root, init } => {
            assert_eq!(acker.apply(init), Ok(Decision::Pending));
            (root, Anchors::spout(root, edges[0]))
        }
        other => panic!("expected a tracked emit, got {other:?}"),
    }
}

/// What the spout's user code saw.
#[derive(Default, Debug)]
struct SpoutLog {
    acked: Vec<u32>,
    failed: Vec<u32>,
}

/// Delivers acker messages and routes the decisions back to the spout.
fn deliver(
    acker: &mut Table,
    spout: &mut Spout,
    log: &mut SpoutLog,
    messages: &[AckerMessage],
    now_ns: u64,
) {
    for &m in messages {
        match acker.apply(m).unwrap() {
            Decision::Completed { spout_task } => {
                assert_eq!(spout_task, SPOUT_TASK);
                if let Some(c) = spout.completed(m.root(), now_ns) {
                    log.acked.push(c.msg_id);
                }
            }
            Decision::Failed { spout_task } => {
                assert_eq!(spout_task, SPOUT_TASK);
                if let Some(id) = spout.failed(m.root()) {
                    log.failed.push(id);
                }
            }
            Decision::Reset { .. } => {
                spout.reset(m.root(), now_ns);
            }
            Decision::Pending => {}
        }
    }
}

/// Scenario 1: 1000 tuples; the bolt acks 800, fails 100 and never answers 100.
#[test]
fn scenario_1_acks_fails_and_timeouts() {
    let mut s = spout(1000, 1);
    let mut a = table(2048);
    let mut b = bolt(1000);
    let mut log = SpoutLog::default();
    let mut silent = Vec::new();
    for msg_id in 0..1000u32 {
        let (_, anchors) = emit_one(&mut s, &mut a, msg_id, 0);
        let input = b.receive(&anchors).unwrap();
        let messages = match msg_id {
            0..=799 => b.ack(input).unwrap(),
            800..=899 => b.fail(input).unwrap(),
            _ => {
                silent.push(input);
                continue;
            }
        };
        deliver(&mut a, &mut s, &mut log, &messages, SEC);
    }
    assert_eq!(log.acked, (0..800).collect::<Vec<_>>());
    assert_eq!(log.failed, (800..900).collect::<Vec<_>>());
    assert_eq!(s.len(), 100);
    assert_eq!(a.len(), 100);

    // The spout times the silent 100 out between T and 2T after emit.
    a.tick(T);
    assert_eq!(s.tick(T).count(), 0);
    a.tick(2 * T);
    let mut timed_out: Vec<u32> = s.tick(2 * T).collect();
    timed_out.sort_unstable(); // slot order, not emit order
    assert_eq!(timed_out, (900..1000).collect::<Vec<_>>());
    assert_eq!(s.timed_out(), 100);
    assert!(s.is_empty());
    // The acker outlives the spout's deadline...
    assert_eq!(a.len(), 100);
    // ...and its entries expire silently three timeout periods after the last message.
    a.tick(3 * T);
    assert_eq!(a.len(), 0);
    assert_eq!(b.open_inputs(), 100);
}

/// Scenario 2: fail before init; two fails of one tree; a fail after the entry expired.
#[test]
fn scenario_2_fails() {
    let mut a = table(64);
    // A fail arrives before the init: one Failed, produced when the init arrives.
    assert_eq!(a.fail(10), Ok(Decision::Pending));
    assert_eq!(a.init(10, 0xABC, 3), Ok(Decision::Failed { spout_task: 3 }));
    assert_eq!(a.len(), 0);

    // Two bolts fail the same tree: one Failed; the late fail leaves an orphan that expires.
    assert_eq!(a.init(20, 0xABC, 3), Ok(Decision::Pending));
    assert_eq!(a.fail(20), Ok(Decision::Failed { spout_task: 3 }));
    assert_eq!(a.fail(20), Ok(Decision::Pending));
    assert_eq!(a.len(), 1);
    a.tick(3 * T);
    assert_eq!(a.len(), 0);

    // A fail after the acker's entry expired: no decision from the acker; the spout fails the
    // tuple once, by its own timeout.
    let mut s = spout(8, 1);
    let mut a = table(64);
    let mut log = SpoutLog::default();
    let (root, _) = emit_one(&mut s, &mut a, 7, 0);
    a.tick(2 * T);
    let timed_out: Vec<u32> = s.tick(2 * T).collect();
    assert_eq!(timed_out, vec![7]);
    a.tick(3 * T);
    assert_eq!(a.len(), 0);
    deliver(
        &mut a,
        &mut s,
        &mut log,
        &[AckerMessage::Fail { root }],
        3 * T,
    );
    assert!(log.failed.is_empty() && log.acked.is_empty());
    assert_eq!(
        a.len(),
        1,
        "the late fail is an orphan, reclaimed by expiry"
    );
    assert_eq!(s.tick(10 * T).count(), 0);
}

/// Scenario 3: a reset before the init is no error and restarts the tree's timeout.
#[test]
fn scenario_3_reset_before_init() {
    // Without a reset: an ack creates the entry at 0.5 T; at 3.5 T it has expired.
    let mut a = table(64);
    a.tick(T / 2);
    assert_eq!(a.ack(5, 0x11), Ok(Decision::Pending));
    assert_eq!(a.init(5, 0x11 ^ 0x22, 2), Ok(Decision::Pending));
    a.tick(3 * T + T / 2);
    assert_eq!(a.len(), 0);
    assert_eq!(
        a.ack(5, 0x22),
        Ok(Decision::Pending),
        "expired: the ack is an orphan now"
    );

    // With a reset at 1.5 T (before the init) the entry lives until 4 T and the tree completes.
    let mut a = table(64);
    a.tick(T / 2);
    assert_eq!(a.ack(5, 0x11), Ok(Decision::Pending));
    a.tick(T + T / 2);
    assert_eq!(a.reset_timeout(5), Ok(Decision::Pending));
    assert_eq!(a.init(5, 0x11 ^ 0x22, 2), Ok(Decision::Pending));
    a.tick(3 * T + T / 2);
    assert_eq!(a.len(), 1);
    assert_eq!(a.ack(5, 0x22), Ok(Decision::Completed { spout_task: 2 }));
    // Once the spout task is known, a reset is forwarded to the spout.
    assert_eq!(a.init(6, 0x1, 2), Ok(Decision::Pending));
    assert_eq!(a.reset_timeout(6), Ok(Decision::Reset { spout_task: 2 }));
    assert_eq!(a.len(), 1);
}

/// Scenario 4: failed and ack val 0 when the init arrives: the ack wins.
#[test]
fn scenario_4_ack_wins_over_fail() {
    let mut a = table(16);
    assert_eq!(a.ack(9, 0x77), Ok(Decision::Pending));
    assert_eq!(a.fail(9), Ok(Decision::Pending));
    assert_eq!(
        a.init(9, 0x77, 4),
        Ok(Decision::Completed { spout_task: 4 })
    );
    assert!(a.is_empty());
}

/// Scenario 5: a spout emit to zero destinations completes as soon as the init is processed.
#[test]
fn scenario_5_zero_destinations() {
    let mut s = spout(4, 1);
    let mut a = table(16);
    let SpoutEmit::Tracked { root, init } = s.emit(Some(1), &mut [], 0).unwrap() else {
        panic!("tracked emit expected")
    };
    assert_eq!(
        init,
        AckerMessage::Init {
            root,
            xor: 0,
            spout_task: SPOUT_TASK
        }
    );
    assert_eq!(
        a.apply(init),
        Ok(Decision::Completed {
            spout_task: SPOUT_TASK
        })
    );
    assert_eq!(
        s.completed(root, 5)
            .map(|c| (c.msg_id, c.complete_latency_ns)),
        Some((1, 5))
    );
}

/// Scenario 6: acking twice, and anchoring to an acked input, are typed errors.
#[test]
fn scenario_6_double_ack() {
    let mut s = spout(4, 1);
    let mut a = table(16);
    let mut b = bolt(8);
    let (root, anchors) = emit_one(&mut s, &mut a, 1, 0);
    let input = b.receive(&anchors).unwrap();
    let child = b.emit(&[input]).unwrap();
    let acks = b.ack(input).unwrap();
    assert_eq!(b.ack(input), Err(AnchorError::AlreadyAcked));
    assert_eq!(b.emit(&[input]), Err(AnchorError::AlreadyAcked));
    for m in acks {
        assert_eq!(a.apply(m), Ok(Decision::Pending));
    }
    // The child is not acked yet: the tree is still pending.
    assert_eq!(a.len(), 1);
    let child_input = b.receive(&child).unwrap();
    let last = b.ack(child_input).unwrap();
    assert_eq!(last.len(), 1);
    assert_eq!(
        a.apply(last[0]),
        Ok(Decision::Completed {
            spout_task: SPOUT_TASK
        })
    );
    assert_eq!(s.completed(root, 1).unwrap().msg_id, 1);
}

/// Scenario 7: O anchored to A (root RA) and B (root RB).
#[test]
fn scenario_7_multi_anchoring() {
    // Acks: neither root completes until O is acked as well as A and B.
    let mut s = spout(4, 1);
    let mut a = table(16);
    let mut b = bolt(8);
    let (ra, anchors_a) = emit_one(&mut s, &mut a, 1, 0);
    let (rb, anchors_b) = emit_one(&mut s, &mut a, 2, 0);
    let ia = b.receive(&anchors_a).unwrap();
    let ib = b.receive(&anchors_b).unwrap();
    let o = b.emit(&[ia, ib]).unwrap();
    assert_eq!(o.roots().collect::<Vec<_>>(), vec![ra, rb]);
    for m in b.ack(ia).unwrap().into_iter().chain(b.ack(ib).unwrap()) {
        assert_eq!(a.apply(m), Ok(Decision::Pending));
    }
    let io = b.receive(&o).unwrap();
    let decisions: Vec<_> = b
        .ack(io)
        .unwrap()
        .into_iter()
        .map(|m| (m.root(), a.apply(m).unwrap()))
        .collect();
    let done = Decision::Completed {
        spout_task: SPOUT_TASK,
    };
    assert_eq!(decisions, vec![(ra, done), (rb, done)]);

    // Failing O fails both RA and RB, each exactly once.
    let mut s = spout(4, 1);
    let mut a = table(16);
    let mut b = bolt(8);
    let mut log = SpoutLog::default();
    let (_, anchors_a) = emit_one(&mut s, &mut a, 1, 0);
    let (_, anchors_b) = emit_one(&mut s, &mut a, 2, 0);
    let ia = b.receive(&anchors_a).unwrap();
    let ib = b.receive(&anchors_b).unwrap();
    let o = b.emit(&[ia, ib]).unwrap();
    let acks: Vec<_> = b
        .ack(ia)
        .unwrap()
        .into_iter()
        .chain(b.ack(ib).unwrap())
        .collect();
    deliver(&mut a, &mut s, &mut log, &acks, 1);
    let io = b.receive(&o).unwrap();
    let fails = b.fail(io).unwrap();
    assert_eq!(fails.len(), 2);
    deliver(&mut a, &mut s, &mut log, &fails, 2);
    // A second, duplicated delivery of the fails decides nothing more.
    deliver(&mut a, &mut s, &mut log, &fails, 3);
    assert_eq!(log.failed, vec![1, 2]);
    assert!(log.acked.is_empty());
}

/// Scenario 8: zero ackers, and an emit without a message id.
#[test]
fn scenario_8_untracked() {
    let mut s = spout(4, 0);
    let mut b = bolt(4);
    let mut edges = [0u64; 2];
    assert_eq!(
        s.emit(Some(42), &mut edges, 0),
        Ok(SpoutEmit::AckedAtOnce { msg_id: 42 })
    );
    assert_eq!(edges, [0, 0]);
    assert!(s.is_empty());
    // The copies carry no anchors: a bolt fail sends nothing, and the spout hears nothing.
    let input = b.receive(&Anchors::new()).unwrap();
    assert!(b.fail(input).unwrap().is_empty());
    assert_eq!(s.tick(10 * T).count(), 0);

    let mut s = spout(4, 1);
    assert_eq!(s.emit(None, &mut edges, 0), Ok(SpoutEmit::Untracked));
    assert!(s.is_empty());
    assert_eq!(s.tick(10 * T).count(), 0);
}

/// Scenario 9: a table of capacity 4 receiving a fifth root.
#[test]
fn scenario_9_full_table() {
    let mut a = table(4);
    let edges = [0x10u64, 0x20, 0x30, 0x40];
    for (i, &e) in edges.iter().enumerate() {
        assert_eq!(a.init(i as u64 + 1, e, 0), Ok(Decision::Pending));
    }
    assert_eq!(a.init(5, 0x50, 0), Err(TableError::Full));
    assert_eq!(a.ack(5, 0x50), Err(TableError::Full));
    assert_eq!(a.len(), 4);
    for (i, &e) in edges.iter().enumerate() {
        assert_eq!(
            a.ack(i as u64 + 1, e),
            Ok(Decision::Completed { spout_task: 0 })
        );
    }
    assert!(a.is_empty());
    assert_eq!(a.init(5, 0x50, 0), Ok(Decision::Pending));
}

/// Table memory is 20 bytes a root plus a constant; the note on the issue quotes these figures.
#[test]
fn table_memory_figures() {
    assert_eq!(std::mem::size_of::<Slot>(), 20);
    let header = std::mem::size_of::<Table>();
    // The README quotes the header over a `Vec` on 64-bit targets.
    #[cfg(target_pointer_width = "64")]
    assert_eq!(
        std::mem::size_of::<acker_core::AckerTable<Vec<Slot>>>(),
        128,
        "update the README's figure"
    );
    let big = table(1_000_000);
    assert_eq!(big.memory_bytes(), 20_000_000 + header);
    println!(
        "entry: {} bytes; table of 1,000,000 roots: {} bytes (header {header})",
        std::mem::size_of::<Slot>(),
        big.memory_bytes()
    );
}

#[test]
fn zero_root_and_duplicate_init_are_errors() {
    let mut a = table(8);
    assert_eq!(a.ack(0, 1), Err(TableError::ZeroRoot));
    assert_eq!(a.init(3, 1, 1), Ok(Decision::Pending));
    assert_eq!(a.init(3, 1, 1), Err(TableError::DuplicateInit));
    assert_eq!(a.get(3).unwrap().ack_val, 1);
}

/// Regression (fuzz `table_ops`, `fuzz/regressions/table_ops/capacity1-init-xor0-completes-at-once`):
/// an uncommitted table rewrite looped forever removing the only entry of a 1-slot table. An
/// init with xor 0 completes at once and leaves the table empty, at every capacity.
#[test]
fn init_with_zero_xor_completes_at_once_at_every_capacity() {
    for capacity in [1, 2, 3, 4, 5, 7, 8, 9, 64] {
        let mut a = AckerTable::new(vec![Slot::EMPTY; capacity], 11).unwrap();
        assert_eq!(a.init(15, 0, 0), Ok(Decision::Completed { spout_task: 0 }));
        assert!(a.is_empty(), "capacity {capacity}");
        // And the freed slot takes the table's whole capacity again.
        for r in 1..=capacity as u64 {
            assert_eq!(a.ack(r, 1), Ok(Decision::Pending));
        }
        assert_eq!(a.ack(1000, 1), Err(TableError::Full));
    }
}
