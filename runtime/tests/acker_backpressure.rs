//! The acker's back-pressure on a full table: refused messages are parked in order and applied
//! when a decision or expiry frees a slot; only a full park queue drops (and counts) a message.

use acker_core::{AckerMessage, TaskId};
use acker_runtime::{
    Config, Executor, Message, Notice, Outbox, Placement, Plan, Spout, SpoutOutputCollector,
    TopologyBuilder,
};

struct Idle;
impl Spout for Idle {
    fn next_tuple(&mut self, _c: &mut SpoutOutputCollector<'_>) {}
}

const SPOUT: TaskId = 0;
const TIMEOUT_NS: u64 = 1_000;

/// A plan with one spout task (task 0) and one acker of `capacity` roots.
fn plan(capacity: usize) -> Plan {
    let mut b = TopologyBuilder::new();
    b.set_spout("spout", || Idle, 1).output_fields(&["n"]);
    b.build()
        .unwrap()
        .plan(&Config {
            acker_capacity_roots: Some(capacity),
            message_timeout_ns: TIMEOUT_NS,
            ..Config::default()
        })
        .unwrap()
}

fn acker(plan: &Plan) -> Executor {
    let task = plan.acker_tasks().start;
    plan.build_executor(task, &Placement::single(plan.tasks().len()))
        .unwrap()
}

fn init(root: u64) -> Message {
    Message::Acker(AckerMessage::Init {
        root,
        xor: root * 0x9e37,
        spout_task: SPOUT,
    })
}

fn ack(root: u64) -> Message {
    Message::Acker(AckerMessage::Ack {
        root,
        xor: root * 0x9e37,
    })
}

/// Every notice in `out` (all addressed to the spout), in order; clears it.
fn notices(out: &mut Outbox) -> Vec<Notice> {
    out.drain()
        .map(|e| {
            assert_eq!(e.dest, SPOUT);
            match e.message {
                Message::Notice(n) => n,
                other => panic!("not a notice: {other:?}"),
            }
        })
        .collect()
}

#[test]
fn default_park_capacity_is_an_eighth_of_the_table_at_least_64() {
    assert_eq!(plan(4).acker_park_capacity(), 64);
    assert_eq!(plan(4096).acker_park_capacity(), 512);
    assert_eq!(
        plan(4096).with_acker_park_capacity(3).acker_park_capacity(),
        3
    );
}

#[test]
fn burst_of_six_roots_into_four_slots_completes_all_six() {
    let plan = plan(4);
    let mut a = acker(&plan);
    let mut out = Outbox::new();
    for root in 1..=6 {
        a.handle(init(root), 0, &mut out);
    }
    assert!(out.is_empty());
    assert_eq!(a.pending_roots(), 4);
    let c = a.counters();
    assert_eq!((c.parked, c.dropped_full, c.executed), (2, 0, 4));

    // Completing root 1 frees a slot: the parked init of root 5 takes it at once.
    a.handle(ack(1), 0, &mut out);
    assert_eq!(notices(&mut out), [Notice::Completed { root: 1 }]);
    assert_eq!(a.pending_roots(), 4);
    for root in 2..=6 {
        a.handle(ack(root), 0, &mut out);
    }
    assert_eq!(
        notices(&mut out),
        (2..=6)
            .map(|root| Notice::Completed { root })
            .collect::<Vec<_>>()
    );
    let c = a.counters();
    assert_eq!(
        (c.acked, c.failed, c.parked, c.dropped_full, c.errors),
        (6, 0, 2, 0, 0)
    );
    assert_eq!(c.executed, 12);
    assert_eq!(a.pending_roots(), 0);
}

#[test]
fn parked_messages_of_one_root_keep_their_order_and_decide_once() {
    let plan = plan(4);
    let mut a = acker(&plan);
    let mut out = Outbox::new();
    for root in 1..=4 {
        a.handle(init(root), 0, &mut out);
    }
    // Root 9's ack arrives before its init, both while the table is full; then a fail for a
    // root 10, and a duplicate ack of root 9 that would reopen the tree if reordered.
    a.handle(ack(9), 0, &mut out);
    a.handle(init(9), 0, &mut out);
    a.handle(Message::Acker(AckerMessage::Fail { root: 10 }), 0, &mut out);
    a.handle(
        Message::Acker(AckerMessage::Init {
            root: 10,
            xor: 5,
            spout_task: SPOUT,
        }),
        0,
        &mut out,
    );
    assert!(out.is_empty());
    assert_eq!(a.counters().parked, 4);
    // One slot frees: ack(9) creates root 9, init(9) completes it (slot freed again), then the
    // fail of root 10 and its init decide it as failed.
    a.handle(ack(1), 0, &mut out);
    assert_eq!(
        notices(&mut out),
        [
            Notice::Completed { root: 1 },
            Notice::Completed { root: 9 },
            Notice::Failed { root: 10 },
        ]
    );
    // A late ack for the decided root 9 only makes an orphan: no second decision.
    a.handle(ack(9), 0, &mut out);
    assert!(out.is_empty());
    let c = a.counters();
    assert_eq!((c.acked, c.failed, c.dropped_full), (2, 1, 0));
}

/// A parked message for a root admitted by a retry must not wait behind a parked message that
/// still does not fit: here the table's only freed slot goes to root 5, whose completing ack is
/// parked behind root 6's init. Stopping the retry at root 6 would leave root 5 (and so the
/// whole table, once every root is in this state) stuck until expiry.
#[test]
fn a_retry_does_not_stop_at_the_first_refusal() {
    let plan = plan(4);
    let mut a = acker(&plan);
    let mut out = Outbox::new();
    for root in 1..=6 {
        a.handle(init(root), 0, &mut out);
    }
    a.handle(ack(5), 0, &mut out);
    assert_eq!(a.parked_messages(), 3);
    a.handle(ack(1), 0, &mut out);
    assert_eq!(
        notices(&mut out),
        [Notice::Completed { root: 1 }, Notice::Completed { root: 5 }]
    );
    // Root 5's decision freed the slot root 6 then took.
    assert_eq!(a.parked_messages(), 0);
    assert_eq!(a.pending_roots(), 4);
}

#[test]
fn expiry_on_a_tick_lets_parked_messages_in() {
    let plan = plan(4);
    let mut a = acker(&plan);
    let mut out = Outbox::new();
    for root in 1..=5 {
        a.handle(init(root), 0, &mut out);
    }
    assert_eq!(a.counters().parked, 1);
    // Entries expire 2T..3T after insertion: a tick at 4T frees all four slots.
    a.handle(Message::Tick, 4 * TIMEOUT_NS, &mut out);
    assert!(out.is_empty());
    assert_eq!(a.pending_roots(), 1);
    a.handle(ack(5), 4 * TIMEOUT_NS, &mut out);
    assert_eq!(notices(&mut out), [Notice::Completed { root: 5 }]);
    assert_eq!(a.counters().dropped_full, 0);
}

#[test]
fn a_full_park_queue_drops_and_counts_exactly_the_overflow() {
    let plan = plan(4).with_acker_park_capacity(2);
    let mut a = acker(&plan);
    let mut out = Outbox::new();
    for root in 1..=10 {
        a.handle(init(root), 0, &mut out);
    }
    let c = a.counters();
    // 4 in the table, 2 parked, 4 dropped.
    assert_eq!((c.executed, c.parked, c.dropped_full), (4, 2, 4));
    for root in 1..=10 {
        a.handle(ack(root), 0, &mut out);
    }
    // Roots 1..=6 complete; the acks of the dropped roots 7..=10 become orphans in the freed
    // slots (their trees would time out at the spout and be replayed).
    assert_eq!(
        notices(&mut out),
        (1..=6)
            .map(|root| Notice::Completed { root })
            .collect::<Vec<_>>()
    );
    let c = a.counters();
    assert_eq!((c.acked, c.parked, c.dropped_full), (6, 2, 4));
    assert_eq!(a.pending_roots(), 4);
}

#[test]
fn zero_park_capacity_drops_at_once() {
    let plan = plan(4).with_acker_park_capacity(0);
    let mut a = acker(&plan);
    let mut out = Outbox::new();
    for root in 1..=7 {
        a.handle(init(root), 0, &mut out);
    }
    let c = a.counters();
    assert_eq!((c.parked, c.dropped_full), (0, 3));
}
