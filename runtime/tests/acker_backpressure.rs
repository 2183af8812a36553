//! The acker's back-pressure on a full table: refused messages are parked in order and applied
//! when a decision or expiry frees a slot; only a full park queue drops (and counts) a message.

use acker_core::{AckerMessage, TaskId};

mod common;
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

fn fail(root: u64) -> Message {
    Message::Acker(AckerMessage::Fail { root })
}

/// A failed tree's other branches ack after the acker decided `Failed`: those late acks (and a
/// late fail or reset) are dropped and counted in `orphans_avoided`, not kept as orphan
/// entries. New-user trial: each made an orphan holding a slot for 2T to 3T (for ever with
/// timeouts off), so a steady failure rate filled the table and stalled every new tree. Here a
/// 4-slot table sees 100 failed trees, each followed by late messages, and stays empty; an init
/// is never dropped, and a root forgotten (here more than 64 failures later) makes its orphan as
/// before.
#[test]
fn failed_trees_leave_no_orphans() {
    assert_eq!(
        plan(4).recently_failed_capacity(),
        acker_runtime::DEFAULT_RECENTLY_FAILED_ROOTS
    );
    assert_eq!(acker_runtime::DEFAULT_RECENTLY_FAILED_ROOTS, 65_536);
    let mut b = TopologyBuilder::new();
    b.set_spout("spout", || Idle, 1).output_fields(&["n"]);
    let small = b
        .build()
        .unwrap()
        .plan(&Config {
            acker_capacity_roots: Some(4),
            acker_recently_failed_roots: Some(64),
            message_timeout_ns: TIMEOUT_NS,
            ..Config::default()
        })
        .unwrap();
    assert_eq!(small.recently_failed_capacity(), 64);
    let mut a = acker(&small);
    let mut out = Outbox::new();
    for root in 1..=100u64 {
        a.handle(init(root), 0, &mut out);
        a.handle(fail(root), 0, &mut out);
        assert_eq!(notices(&mut out), [Notice::Failed { root }]);
        // The other branches: two late acks, a late reset, a late fail.
        a.handle(ack(root), 0, &mut out);
        a.handle(
            Message::Acker(AckerMessage::Ack { root, xor: 0x5151 }),
            0,
            &mut out,
        );
        a.handle(
            Message::Acker(AckerMessage::ResetTimeout { root }),
            0,
            &mut out,
        );
        a.handle(fail(root), 0, &mut out);
        assert!(out.is_empty(), "no decision for a decided root");
        assert_eq!(a.pending_roots(), 0, "root {root} left an orphan");
    }
    let c = a.counters();
    assert_eq!(
        (
            c.failed,
            c.orphans_avoided,
            c.parked,
            c.dropped_full,
            c.errors
        ),
        (100, 400, 0, 0, 0)
    );
    // Root 1 was forgotten 64 failures ago: its late ack makes an orphan (DESIGN.md rule 4).
    a.handle(ack(1), 0, &mut out);
    assert_eq!(a.pending_roots(), 1);
    // Root 100 is remembered, but an init for it is applied (roots are never reused while
    // pending, so an init is never late).
    a.handle(init(100), 0, &mut out);
    assert_eq!(a.pending_roots(), 2);
    assert_eq!(a.counters().orphans_avoided, 400);
}

/// The new-user trial's topology: a spout of increasing ids that replays what fails, and two
/// bolts that each get every tuple: one fails 2 % of the ids on their first attempt, the
/// other acks everything. Before, every failed tree left an orphan (the second bolt's late ack),
/// and the default 1,024-slot table filled after 1,024 failures: with timeouts off the spout
/// stopped for good at 51,150 acked, with T = 30 s it stood still from the 51st to the 90th
/// second. Now every id is acked exactly once and failed exactly once if it was failed, for the
/// whole run, in both modes, with nothing parked or dropped at the acker.
#[test]
fn a_steady_failure_rate_never_stalls_the_topology() {
    use acker_runtime::local::LocalShell;
    use acker_runtime::{values, MessageId, TaskKind};
    use std::sync::{Arc, Mutex};

    #[derive(Default)]
    struct Seen {
        acked: Vec<u64>,
        failed: Vec<u64>,
    }
    struct Src {
        next: u64,
        replay: Vec<MessageId>,
        seen: Arc<Mutex<Seen>>,
    }
    impl Spout for Src {
        fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
            let id = self.replay.pop().unwrap_or_else(|| {
                self.next += 1;
                self.next - 1
            });
            if c.emit(values![id as i64], Some(id)).is_err() {
                self.replay.push(id)
            }
        }
        fn ack(&mut self, id: MessageId) {
            self.seen.lock().unwrap().acked.push(id);
        }
        fn fail(&mut self, id: MessageId) {
            self.seen.lock().unwrap().failed.push(id);
            self.replay.push(id)
        }
    }

    for timeouts in [false, true] {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let s = seen.clone();
        let mut b = TopologyBuilder::new();
        b.set_spout(
            "src",
            move || Src {
                next: 0,
                replay: Vec::new(),
                seen: s.clone(),
            },
            1,
        )
        .output_fields(&["id"]);
        b.set_bolt("failer", || FailFirst::new(50, 1), 1)
            .shuffle_grouping("src");
        b.set_bolt("other", || AckAll { sleep_us: 0 }, 1)
            .shuffle_grouping("src");
        let config = Config {
            max_spout_pending: Some(64),
            enable_message_timeouts: timeouts,
            ..Config::default()
        };
        let plan = b.build().unwrap().plan(&config).unwrap();
        assert_eq!(plan.acker_capacity_roots(), 1024);
        let mut shell = LocalShell::new(&plan).unwrap();
        // 120 s at one step a millisecond: about 1,000 trees a second, 20 failures a second.
        for _ in 0..120_000 {
            shell.step();
            shell.advance(1_000_000);
        }
        let seen = seen.lock().unwrap();
        let emitted: u64 = 120_000 - seen.failed.len() as u64;
        // Each list against what it must be, reported by its length and first difference (the
        // lists hold up to 120,000 ids).
        let check = |what: &str, mut got: Vec<u64>, want: Vec<u64>| {
            got.sort_unstable();
            let first = got.iter().zip(&want).position(|(g, w)| g != w);
            assert!(
                got == want,
                "timeouts {timeouts}: {what}: {} ids, want {}; first difference at index {first:?} \
                 (got {:?}, want {:?})",
                got.len(),
                want.len(),
                first.map(|i| got[i]),
                first.map(|i| want[i]),
            );
        };
        check(
            "acked, each id once",
            seen.acked.clone(),
            (0..emitted).collect(),
        );
        let failed: Vec<u64> = (0..emitted).filter(|id| id % 50 == 0).collect();
        check(
            "failed, each id divisible by 50 once",
            seen.failed.clone(),
            failed.clone(),
        );
        let a = shell.counters(TaskKind::Acker);
        assert_eq!((a.parked, a.dropped_full), (0, 0), "timeouts {timeouts}");
        assert_eq!(
            a.orphans_avoided,
            failed.len() as u64,
            "timeouts {timeouts}"
        );
    }
}

/// The second trial's case, in the threaded shell: every id fails its first three attempts, and
/// the other bolt takes 100 µs a tuple behind 4 threads, so more than a thousand failed trees'
/// late acks wait in that bolt's ring. With the remembered roots counted as max(capacity / 8,
/// 64) = 128, most of those late acks came after their root was forgotten, their orphans filled
/// the 1,024-slot table, and with timeouts off the topology stopped for good (440 of 5,000 ids
/// acked). With the default of 65,536 every id is acked, nothing is parked or dropped, and the
/// run ends once the spout is done.
#[test]
fn late_acks_behind_a_slow_bolt_leave_no_orphans_on_four_threads() {
    use acker_runtime::shell::ShellOptions;
    use acker_runtime::{values, MessageId};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    const IDS: u64 = 5_000;
    struct Src {
        next: u64,
        replay: Vec<MessageId>,
        outstanding: u64,
        acked: Arc<AtomicU64>,
    }
    impl Spout for Src {
        fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
            let id = match self.replay.pop() {
                Some(id) => id,
                None if self.next < IDS => {
                    self.next += 1;
                    self.outstanding += 1;
                    self.next - 1
                }
                None => return,
            };
            if c.emit(values![id as i64], Some(id)).is_err() {
                self.replay.push(id)
            }
        }
        fn ack(&mut self, _id: MessageId) {
            self.outstanding -= 1;
            self.acked.fetch_add(1, Ordering::Relaxed);
        }
        fn fail(&mut self, id: MessageId) {
            self.replay.push(id)
        }
        fn is_done(&self) -> bool {
            self.next == IDS && self.outstanding == 0
        }
    }

    let acked = Arc::new(AtomicU64::new(0));
    let a = acked.clone();
    let mut b = TopologyBuilder::new();
    b.set_spout(
        "src",
        move || Src {
            next: 0,
            replay: Vec::new(),
            outstanding: 0,
            acked: a.clone(),
        },
        1,
    )
    .output_fields(&["id"]);
    b.set_bolt("failer", || FailFirst::new(1, 3), 1)
        .shuffle_grouping("src");
    b.set_bolt("slow", || AckAll { sleep_us: 100 }, 1)
        .shuffle_grouping("src");
    let plan = b
        .build()
        .unwrap()
        .plan(&Config {
            max_spout_pending: Some(64),
            enable_message_timeouts: false,
            ..Config::default()
        })
        .unwrap();
    assert_eq!(plan.acker_capacity_roots(), 1024);
    let options = ShellOptions {
        cores: Some(4),
        pin_threads: false,
        max_duration: Some(Duration::from_secs(30)),
        drain_timeout: Some(Duration::from_secs(2)),
        print_config_warnings: false,
        ..ShellOptions::default()
    };
    let report = common::run_bounded(
        &plan,
        &options,
        Duration::from_secs(120),
        "fail-thrice topology, 4 threads",
    );
    let acker = &report.components["__acker"];
    assert_eq!(
        (acked.load(Ordering::Relaxed), report.undecided_roots),
        (IDS, 0),
        "every id acked once, none left pending (after {:?}; acker {acker:?})",
        report.elapsed
    );
    assert_eq!(
        (acker.acked, acker.failed, acker.parked, acker.dropped_full),
        (IDS, 3 * IDS, 0, 0),
        "{acker:?}"
    );
    // Each failed tree's late ack, unless it came before the fail (a scheduling matter).
    assert!((1..=3 * IDS).contains(&acker.orphans_avoided), "{acker:?}");
}

/// Fails the inputs whose id (the first value) is divisible by `every` on their first `times`
/// attempts, and acks the rest: a bolt of the failure tests above.
struct FailFirst {
    every: i64,
    times: u32,
    attempts: std::collections::HashMap<i64, u32>,
}

impl FailFirst {
    fn new(every: i64, times: u32) -> Self {
        Self {
            every,
            times,
            attempts: std::collections::HashMap::new(),
        }
    }
}

impl acker_runtime::Bolt for FailFirst {
    fn execute(&mut self, i: acker_runtime::Input, c: &mut acker_runtime::OutputCollector<'_>) {
        let id = i.values()[0].as_int().unwrap();
        let n = self.attempts.entry(id).or_insert(0);
        *n += 1;
        if id % self.every == 0 && *n <= self.times {
            c.fail(i).unwrap();
        } else {
            c.ack(i).unwrap();
        }
    }
}

/// Acks every input, after sleeping `sleep_us` µs (0: at once).
struct AckAll {
    sleep_us: u64,
}

impl acker_runtime::Bolt for AckAll {
    fn execute(&mut self, i: acker_runtime::Input, c: &mut acker_runtime::OutputCollector<'_>) {
        if self.sleep_us > 0 {
            std::thread::sleep(std::time::Duration::from_micros(self.sleep_us));
        }
        c.ack(i).unwrap();
    }
}
