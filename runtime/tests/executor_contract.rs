//! The executors' contract, driven one message at a time (no shell): what each executor kind does
//! with each message kind, its counters, its accessors, and the fixed seeds and routes a replay
//! depends on. Written for the mutation campaign (issue 16, `fuzz/mutants.sh --target
//! executors`): each test pins exact values a user (or a replay) would check. Runtime: well under
//! a second in release mode.

use std::sync::{Arc, Mutex};

use acker_core::{acker_index, AckerMessage, TaskId};
use acker_runtime::{
    task_seed, values, Bolt, BuildError, Config, Envelope, Executor, Input, Message, MessageId,
    Notice, Outbox, OutputCollector, Placement, Plan, Spout, SpoutOutputCollector, TaskKind,
    TopologyBuilder, Tuple,
};

/// What the user's spout saw, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Call {
    Ack(MessageId),
    Fail(MessageId),
    Close,
}

/// Emits message ids 0, 1, 2, ... one per `next_tuple`, logging its callbacks.
struct Counting {
    next: MessageId,
    log: Arc<Mutex<Vec<Call>>>,
    done_after: MessageId,
}
impl Spout for Counting {
    fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
        c.emit(values![self.next as i64], Some(self.next)).unwrap();
        self.next += 1;
    }
    fn ack(&mut self, id: MessageId) {
        self.log.lock().unwrap().push(Call::Ack(id));
    }
    fn fail(&mut self, id: MessageId) {
        self.log.lock().unwrap().push(Call::Fail(id));
    }
    fn close(&mut self) {
        self.log.lock().unwrap().push(Call::Close);
    }
    fn is_done(&self) -> bool {
        self.next >= self.done_after
    }
}

/// Acks every input at once.
struct Forward;
impl Bolt for Forward {
    fn execute(&mut self, input: Input, c: &mut OutputCollector<'_>) {
        c.ack(input).unwrap();
    }
}

const SPOUT: TaskId = 0;
const BOLT: TaskId = 1;
const TIMEOUT_NS: u64 = 1_000_000;

/// Adds the component "spout": one task of [`Counting`] (two tuples on field "n", calls logged
/// into `log`).
fn add_counting_spout(b: &mut TopologyBuilder, log: Arc<Mutex<Vec<Call>>>) {
    b.set_spout(
        "spout",
        move || Counting {
            next: 0,
            log: log.clone(),
            done_after: 2,
        },
        1,
    )
    .output_fields(&["n"]);
}

/// Spout (task 0) → bolt (task 1, shuffle), then `ackers` acker tasks (2, 3, ...).
fn plan(ackers: usize, log: &Arc<Mutex<Vec<Call>>>) -> Plan {
    let mut b = TopologyBuilder::new();
    add_counting_spout(&mut b, log.clone());
    b.set_bolt("bolt", || Forward, 1).shuffle_grouping("spout");
    b.build()
        .unwrap()
        .plan(&Config {
            num_ackers: ackers,
            message_timeout_ns: TIMEOUT_NS,
            seed: 7,
            ..Config::default()
        })
        .unwrap()
}

fn build(plan: &Plan, task: TaskId) -> Executor {
    plan.build_executor(task, &Placement::single(plan.tasks().len()))
        .unwrap()
}

/// The init a spout's emit sent: (acker task, root).
fn init_of(out: &[Envelope]) -> (TaskId, u64) {
    out.iter()
        .find_map(|e| match e.message {
            Message::Acker(AckerMessage::Init { root, .. }) => Some((e.dest, root)),
            _ => None,
        })
        .expect("the emit sent an init")
}

fn new_log() -> Arc<Mutex<Vec<Call>>> {
    Arc::new(Mutex::new(Vec::new()))
}

#[test]
fn each_executor_counts_the_messages_it_does_not_take_as_ignored() {
    let log = new_log();
    let plan = plan(1, &log);
    let (mut spout, mut bolt, mut acker) =
        (build(&plan, SPOUT), build(&plan, BOLT), build(&plan, 2));
    let mut out = Outbox::new();
    let tuple = || Message::Tuple(Tuple::default());
    let ack = || Message::Acker(AckerMessage::Ack { root: 5, xor: 9 });
    let notice = || Message::Notice(Notice::Completed { root: 5 });
    // Spout: 2 tuples, 3 acker messages; bolt: 2 acker messages, 3 notices; acker: 2 tuples,
    // 1 notice.
    for m in [tuple(), tuple(), ack(), ack(), ack()] {
        spout.handle(m, 0, &mut out);
    }
    for m in [ack(), ack(), notice(), notice(), notice()] {
        bolt.handle(m, 0, &mut out);
    }
    for m in [tuple(), tuple(), notice()] {
        acker.handle(m, 0, &mut out);
    }
    assert!(out.is_empty(), "ignored messages sent {:?}", out.as_slice());
    assert_eq!(spout.counters().ignored, 5);
    assert_eq!(bolt.counters().ignored, 5);
    assert_eq!(acker.counters().ignored, 3);
    assert_eq!(
        (bolt.counters().executed, acker.counters().executed),
        (0, 0)
    );
    assert!(log.lock().unwrap().is_empty());
}

#[test]
fn accessors_answer_for_each_executor_kind() {
    let log = new_log();
    let plan = plan(1, &log);
    let all = plan
        .build_all(&Placement::single(plan.tasks().len()))
        .unwrap();
    assert_eq!(all.len(), 3);
    let kinds: Vec<(TaskId, TaskKind)> = all.iter().map(|e| (e.task(), e.kind())).collect();
    assert_eq!(
        kinds,
        [
            (0, TaskKind::Spout),
            (1, TaskKind::Bolt),
            (2, TaskKind::Acker)
        ]
    );
    let [mut spout, mut bolt, mut acker]: [Executor; 3] = all.try_into().unwrap();
    assert_eq!(
        format!("{bolt:?}"),
        format!(
            "Executor {{ task: 1, kind: Bolt, counters: {:?} }}",
            bolt.counters()
        )
    );
    // Bolts and ackers: no next_tuple, always done, no latency histogram.
    let mut out = Outbox::new();
    assert!(!bolt.can_emit() && !acker.can_emit());
    assert!(bolt.is_done() && acker.is_done());
    assert!(bolt.complete_latency_ns().is_none() && acker.complete_latency_ns().is_none());
    assert_eq!((bolt.pending_roots(), bolt.parked_messages()), (0, 0));
    assert_eq!((spout.parked_messages(), spout.open_inputs()), (0, 0));
    assert_eq!(acker.open_inputs(), 0);
    // Only a spout has a `next_tuple`: a bolt's or an acker's does nothing and says so.
    assert!(!bolt.next_tuple(0, &mut out) && !acker.next_tuple(0, &mut out));
    assert!(out.is_empty());
    // The spout is done after two emits (its own `is_done`).
    assert!(spout.can_emit() && !spout.is_done());
    assert!(spout.next_tuple(0, &mut out));
    assert!(spout.next_tuple(0, &mut out));
    assert!(spout.is_done());
    assert_eq!(spout.pending_roots(), 2);
    assert_eq!(spout.complete_latency_ns().unwrap().len(), 0);
    spout.shutdown();
    assert_eq!(*log.lock().unwrap(), [Call::Close]);
}

#[test]
fn build_errors_name_the_task() {
    let log = new_log();
    let plan = plan(1, &log);
    let e = plan
        .build_executor(9, &Placement::single(plan.tasks().len()))
        .unwrap_err();
    assert_eq!(e, BuildError::UnknownTask(9));
    assert_eq!(e.to_string(), "no task 9 in the plan");
    assert_eq!(
        BuildError::Config(4).to_string(),
        "task 4: capacity or timeout refused"
    );
}

#[test]
fn the_spout_acks_fails_resets_and_times_out_each_root_once() {
    let log = new_log();
    let plan = plan(1, &log);
    let mut spout = build(&plan, SPOUT);
    let mut out = Outbox::new();
    let mut roots = Vec::new();
    for t in [100, 200, 300] {
        assert!(spout.next_tuple(t, &mut out));
        roots.push(init_of(out.as_slice()).1);
        out.clear();
    }
    // Root 0 completes at 1,100 ns: complete latency 1,000 ns.
    spout.handle(
        Message::Notice(Notice::Completed { root: roots[0] }),
        1_100,
        &mut out,
    );
    // Root 1 fails; root 2 gets a reset at 900,000 ns, so it outlives the timeout.
    spout.handle(
        Message::Notice(Notice::Failed { root: roots[1] }),
        1_200,
        &mut out,
    );
    spout.handle(
        Message::Notice(Notice::Reset { root: roots[2] }),
        900_000,
        &mut out,
    );
    // A reset of a pending root is taken, not ignored (caught `delete !` in
    // `SpoutExecutor::notice`'s reset arm, executors shard 7/8, whose two counts cancelled out
    // in the total below).
    assert_eq!(spout.counters().ignored, 0);
    // Anything for a root no longer (or never) pending is ignored.
    for n in [
        Notice::Completed { root: roots[0] },
        Notice::Failed { root: roots[1] },
        Notice::Reset { root: roots[1] },
    ] {
        spout.handle(Message::Notice(n), 1_300, &mut out);
    }
    let c = spout.counters();
    assert_eq!(
        (c.acked, c.failed, c.timed_out, c.ignored),
        (1, 1, 0, 3),
        "{c:?}"
    );
    // At 1,500,000 ns root 2 is 1,499,700 ns past its emit but only 600,000 ns past its reset.
    spout.handle(Message::Tick, 1_500_000, &mut out);
    assert_eq!(spout.counters().timed_out, 0);
    spout.handle(Message::Tick, 2_900_001, &mut out);
    let c = spout.counters();
    assert_eq!((c.acked, c.failed, c.timed_out, c.ignored), (1, 1, 1, 3));
    assert!(out.is_empty());
    assert_eq!(
        *log.lock().unwrap(),
        [Call::Ack(0), Call::Fail(1), Call::Fail(2)]
    );
    let h = spout.complete_latency_ns().unwrap();
    assert_eq!((h.len(), h.min(), h.max()), (1, 1_000, 1_000));
    assert_eq!(spout.pending_roots(), 0);
}

#[test]
fn with_no_ackers_each_tracked_emit_is_acked_at_once_and_counted() {
    // Storm with 0 acker tasks: a spout tuple with a message id is acked as soon as it is
    // emitted; no init is sent and nothing stays pending.
    let log = new_log();
    let plan = plan(0, &log);
    let mut spout = build(&plan, SPOUT);
    let mut out = Outbox::new();
    for t in [100, 200] {
        assert!(spout.next_tuple(t, &mut out));
    }
    assert!(
        !out.as_slice()
            .iter()
            .any(|e| matches!(e.message, Message::Acker(_))),
        "no acker message without ackers: {:?}",
        out.as_slice()
    );
    assert_eq!(out.len(), 2, "one tuple a call to the bolt");
    let c = spout.counters();
    assert_eq!((c.acked, c.failed, c.timed_out), (2, 0, 0), "{c:?}");
    assert_eq!(spout.pending_roots(), 0);
    assert_eq!(*log.lock().unwrap(), [Call::Ack(0), Call::Ack(1)]);
}

/// Emits on the default stream and on stream "nope", neither of which its component declares
/// (it declares only "other"); keeps each result.
struct NoDefault {
    results: Arc<Mutex<Vec<String>>>,
}
impl Spout for NoDefault {
    fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
        let r = c.emit(values![1], Some(1));
        self.results.lock().unwrap().push(format!("{r:?}"));
        let r = c.emit_stream("nope", values![2], Some(2));
        self.results.lock().unwrap().push(format!("{r:?}"));
    }
}

#[test]
fn an_emit_on_an_undeclared_stream_is_refused_and_sends_nothing() {
    let results = Arc::new(Mutex::new(Vec::new()));
    let r = results.clone();
    let mut b = TopologyBuilder::new();
    b.set_spout("spout", move || NoDefault { results: r.clone() }, 1)
        .output_stream("other", &["n"]);
    b.set_bolt("bolt", || Forward, 1)
        .grouping("spout", "other", acker_runtime::Grouping::Shuffle);
    let plan = b
        .build()
        .unwrap()
        .plan(&Config {
            num_ackers: 1,
            message_timeout_ns: TIMEOUT_NS,
            seed: 7,
            ..Config::default()
        })
        .unwrap();
    let mut spout = build(&plan, SPOUT);
    let mut out = Outbox::new();
    spout.next_tuple(100, &mut out);
    assert!(out.is_empty(), "a refused emit sent {:?}", out.as_slice());
    assert_eq!(
        *results.lock().unwrap(),
        [
            r#"Err(UnknownStream("default"))"#,
            r#"Err(UnknownStream("nope"))"#
        ]
    );
    assert_eq!(spout.pending_roots(), 0);
}

#[test]
fn the_acker_counts_each_decision_once() {
    let log = new_log();
    let plan = plan(1, &log);
    let mut acker = build(&plan, 2);
    let mut out = Outbox::new();
    let send = |a: &mut Executor, m: AckerMessage, out: &mut Outbox| {
        a.handle(Message::Acker(m), 0, out);
    };
    // Root 1 completes (init then a matching ack), root 2 fails, root 3 is reset, then a
    // second init of root 3 is an error: seven messages, each executed (applied or refused).
    send(
        &mut acker,
        AckerMessage::Init {
            root: 1,
            xor: 6,
            spout_task: SPOUT,
        },
        &mut out,
    );
    send(&mut acker, AckerMessage::Ack { root: 1, xor: 6 }, &mut out);
    send(
        &mut acker,
        AckerMessage::Init {
            root: 2,
            xor: 6,
            spout_task: SPOUT,
        },
        &mut out,
    );
    send(&mut acker, AckerMessage::Fail { root: 2 }, &mut out);
    send(
        &mut acker,
        AckerMessage::Init {
            root: 3,
            xor: 6,
            spout_task: SPOUT,
        },
        &mut out,
    );
    send(&mut acker, AckerMessage::ResetTimeout { root: 3 }, &mut out);
    send(
        &mut acker,
        AckerMessage::Init {
            root: 3,
            xor: 6,
            spout_task: SPOUT,
        },
        &mut out,
    );
    let notices: Vec<(TaskId, Message)> = out.drain().map(|e| (e.dest, e.message)).collect();
    assert_eq!(
        notices,
        [
            (SPOUT, Message::Notice(Notice::Completed { root: 1 })),
            (SPOUT, Message::Notice(Notice::Failed { root: 2 })),
            (SPOUT, Message::Notice(Notice::Reset { root: 3 })),
        ]
    );
    let c = acker.counters();
    assert_eq!(
        (c.executed, c.acked, c.failed, c.errors, c.parked),
        (7, 1, 1, 1, 0),
        "{c:?}"
    );
    assert_eq!((acker.pending_roots(), acker.parked_messages()), (1, 0));
}

#[test]
fn the_bolt_counts_each_input_it_executes() {
    let log = new_log();
    let plan = plan(1, &log);
    let mut bolt = build(&plan, BOLT);
    let mut out = Outbox::new();
    for _ in 0..3 {
        bolt.handle(Message::Tuple(Tuple::default()), 0, &mut out);
    }
    let c = bolt.counters();
    assert_eq!((c.executed, c.acked, c.ignored), (3, 3, 0), "{c:?}");
    // An untracked input's ack sends nothing.
    assert!(out.is_empty());
    assert_eq!(bolt.open_inputs(), 0);
}

/// A basic bolt that emits nothing: the adapter acks every input.
struct BasicNull;
impl acker_runtime::BasicBolt for BasicNull {
    fn execute(
        &mut self,
        _input: &Input,
        _c: &mut acker_runtime::BasicOutputCollector<'_, '_>,
    ) -> Result<(), acker_runtime::FailedException> {
        Ok(())
    }
}

/// Through the basic-bolt adapter, an untracked input's ack sends nothing and a one-tree
/// input's sends its one `Ack`, each counted as acked (never as dropped), as `ack` does.
#[test]
fn a_basic_bolt_acks_untracked_and_tracked_inputs_as_ack_does() {
    let log = new_log();
    let mut b = TopologyBuilder::new();
    add_counting_spout(&mut b, log.clone());
    b.set_basic_bolt("bolt", || BasicNull, 1)
        .shuffle_grouping("spout");
    let plan = b
        .build()
        .unwrap()
        .plan(&Config {
            num_ackers: 1,
            message_timeout_ns: TIMEOUT_NS,
            seed: 7,
            ..Config::default()
        })
        .unwrap();
    let mut bolt = build(&plan, BOLT);
    let mut out = Outbox::new();
    for now in 0..3 {
        bolt.handle(Message::Tuple(Tuple::default()), now, &mut out);
    }
    let c = bolt.counters();
    assert_eq!(
        (c.executed, c.acked, c.errors, c.inputs_dropped_unacked),
        (3, 3, 0, 0),
        "{c:?}"
    );
    assert!(out.is_empty() && bolt.open_inputs() == 0);
    let tracked = Tuple {
        anchors: acker_core::Anchors::spout(41, 0x5eed),
        ..Tuple::default()
    };
    bolt.handle(Message::Tuple(tracked), 3, &mut out);
    let c = bolt.counters();
    assert_eq!(
        (c.executed, c.acked, c.errors, c.inputs_dropped_unacked),
        (4, 4, 0, 0),
        "{c:?}"
    );
    let acker = plan.acker_tasks().start;
    assert_eq!(
        out.as_slice(),
        &[Envelope {
            dest: acker,
            message: Message::Acker(AckerMessage::Ack {
                root: 41,
                xor: 0x5eed
            }),
        }]
    );
}

#[test]
fn roots_go_to_the_acker_task_their_fixed_hash_names() {
    let log = new_log();
    let plan = plan(3, &log);
    assert_eq!(plan.acker_tasks(), 2..5);
    let mut spout = build(&plan, SPOUT);
    let mut out = Outbox::new();
    let mut by_acker = [0; 3];
    for t in 0..24 {
        assert!(spout.next_tuple(t, &mut out));
        let (dest, root) = init_of(out.as_slice());
        let i = acker_index(root, 3).unwrap();
        assert_eq!(dest, 2 + i as TaskId, "root {root:#x}");
        by_acker[i] += 1;
        out.clear();
    }
    // Every acker gets some of 24 roots.
    assert!(by_acker.iter().all(|&n| n > 0), "{by_acker:?}");
}

#[test]
fn task_seeds_are_fixed_so_a_seed_replays_the_same_roots() {
    // The seeds every task's xoshiro stream starts from (the simulator's trace hashes depend on
    // them): pinned values.
    assert_eq!(task_seed(0, 0), 0x5e41_ab08_7439_611e);
    assert_eq!(task_seed(7, 3), 0x435e_b231_96e4_7bda);
    let log = new_log();
    let plan = plan(1, &log);
    let placement = Placement::single(plan.tasks().len());
    let first_root = |incarnation: u64| {
        let mut s = plan
            .restart_executor(SPOUT, &placement, incarnation)
            .unwrap();
        let mut out = Outbox::new();
        assert!(s.next_tuple(0, &mut out));
        init_of(out.as_slice()).1
    };
    assert_eq!(first_root(0), first_root(0));
    // Each incarnation draws from its own stream (the first root of each, pinned).
    assert_eq!(
        [first_root(0), first_root(1), first_root(2)],
        [
            14_564_825_372_646_833_701,
            16_388_744_176_289_403_254,
            17_863_981_471_581_701_465
        ]
    );
}

/// Emits the word it is given next (`words`), untracked, one per `next_tuple`.
struct Words {
    words: Vec<&'static str>,
    i: usize,
}
impl Spout for Words {
    fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
        let w = self.words[self.i % self.words.len()];
        self.i += 1;
        c.emit(values![w], None).unwrap();
    }
}

/// A spout "words" (task 0) and one bolt "sink" of 4 tasks (1..=4), subscribed with `grouping`.
fn routed(grouping: acker_runtime::Grouping, words: Vec<&'static str>) -> Plan {
    let mut b = TopologyBuilder::new();
    b.set_spout(
        "words",
        move || Words {
            words: words.clone(),
            i: 0,
        },
        1,
    )
    .output_fields(&["word"]);
    b.set_bolt("sink", || Forward, 4)
        .grouping("words", "default", grouping);
    b.build()
        .unwrap()
        .plan(&Config {
            seed: 7,
            ..Config::default()
        })
        .unwrap()
}

/// The destination tasks of `n` emits of the spout of `plan`, built in `placement`.
fn destinations(plan: &Plan, placement: &Placement, n: usize) -> Vec<TaskId> {
    let mut s = plan.build_executor(SPOUT, placement).unwrap();
    let mut out = Outbox::new();
    let mut dests = Vec::new();
    for t in 0..n {
        assert!(s.next_tuple(t as u64, &mut out));
        dests.extend(out.drain().map(|e| e.dest));
    }
    dests
}

#[test]
fn groupings_pick_the_tasks_storm_picks() {
    use acker_runtime::Grouping;
    let words = vec![
        "storm", "acker", "tuple", "storm", "bolt", "spout", "acker", "tree",
    ];
    let one = Placement::single(6);
    // Shuffle: round-robin over the four tasks from a seeded start.
    let d = destinations(&routed(Grouping::Shuffle, words.clone()), &one, 8);
    let start = d[0];
    let expected: Vec<TaskId> = (0..8).map(|k| 1 + (start - 1 + k) % 4).collect();
    assert_eq!(d, expected);
    // Fields: a fixed hash of the word; the same word always goes to the same task.
    let d = destinations(
        &routed(Grouping::Fields(vec!["word".into()]), words.clone()),
        &one,
        8,
    );
    assert_eq!(d, [3, 1, 4, 3, 3, 2, 1, 1]);
    // All: every task, in task order.
    let d = destinations(&routed(Grouping::All, words.clone()), &one, 2);
    assert_eq!(d, [1, 2, 3, 4, 1, 2, 3, 4]);
    // Global: the lowest task.
    let d = destinations(&routed(Grouping::Global, words.clone()), &one, 3);
    assert_eq!(d, [1, 1, 1]);
    // Local-or-shuffle: round-robin over the tasks in the spout's worker (tasks 2 and 4 here),
    // over all tasks when none is.
    let plan = routed(Grouping::LocalOrShuffle, words.clone());
    let d = destinations(&plan, &Placement::from_workers(vec![0, 1, 0, 1, 0, 0]), 6);
    let start = d[0];
    assert!(start == 2 || start == 4, "{d:?}");
    let other = 6 - start;
    assert_eq!(d, [start, other, start, other, start, other]);
    let d = destinations(&plan, &Placement::from_workers(vec![0, 1, 1, 1, 1, 0]), 8);
    let start = d[0];
    let expected: Vec<TaskId> = (0..8).map(|k| 1 + (start - 1 + k) % 4).collect();
    assert_eq!(d, expected);
}

#[test]
fn a_full_acker_reports_its_live_roots_and_parked_messages() {
    let mut b = TopologyBuilder::new();
    let log = new_log();
    add_counting_spout(&mut b, log);
    let plan = b
        .build()
        .unwrap()
        .plan(&Config {
            acker_capacity_roots: Some(2),
            ..Config::default()
        })
        .unwrap();
    let mut acker = build(&plan, plan.acker_tasks().start);
    let mut out = Outbox::new();
    for root in 1..=4 {
        let init = AckerMessage::Init {
            root,
            xor: 6,
            spout_task: SPOUT,
        };
        acker.handle(Message::Acker(init), 0, &mut out);
    }
    // Two roots fit; the inits of roots 3 and 4 wait in the park queue.
    assert_eq!((acker.pending_roots(), acker.parked_messages()), (2, 2));
    let Executor::Acker(a) = &acker else {
        panic!("task {} is not an acker", acker.task());
    };
    assert_eq!((a.live_roots(), a.parked_messages()), (2, 2));
    let c = acker.counters();
    assert_eq!((c.executed, c.parked, c.dropped_full), (2, 2, 0), "{c:?}");
    assert!(out.is_empty());
}

/// Holds every input it is given, except every third one, which it acks after dropping all it
/// holds (unacked).
#[derive(Default)]
struct Hoard {
    held: Vec<Input>,
    seen: u32,
}
impl Bolt for Hoard {
    fn execute(&mut self, input: Input, c: &mut OutputCollector<'_>) {
        self.seen += 1;
        if self.seen.is_multiple_of(3) {
            self.held.clear();
            c.ack(input).unwrap();
        } else {
            self.held.push(input);
        }
    }
}

#[test]
fn a_bolt_counts_the_inputs_its_user_code_holds_and_drops_unacked() {
    let mut b = TopologyBuilder::new();
    add_counting_spout(&mut b, new_log());
    b.set_bolt("hoard", Hoard::default, 1)
        .shuffle_grouping("spout");
    let plan = b.build().unwrap().plan(&Config::default()).unwrap();
    let mut bolt = build(&plan, BOLT);
    let mut out = Outbox::new();
    let mut give = |bolt: &mut Executor| {
        bolt.handle(Message::Tuple(Tuple::default()), 0, &mut out);
    };
    give(&mut bolt);
    give(&mut bolt);
    assert_eq!(bolt.open_inputs(), 2);
    assert_eq!(bolt.counters().inputs_dropped_unacked, 0);
    // The third input: the two held ones are dropped unacked, the third acked.
    give(&mut bolt);
    assert_eq!(bolt.open_inputs(), 0);
    let c = bolt.counters();
    assert_eq!(
        (c.executed, c.acked, c.inputs_dropped_unacked),
        (3, 1, 2),
        "{c:?}"
    );
    give(&mut bolt);
    assert_eq!(bolt.open_inputs(), 1);
    // A crash drops the user's bolt, and with it the fourth input, unacked.
    let c = bolt.crash();
    assert_eq!(
        (c.executed, c.acked, c.inputs_dropped_unacked),
        (4, 1, 3),
        "{c:?}"
    );
    assert!(out.is_empty());
}

#[test]
fn the_latency_histogram_holds_every_completed_root_whatever_the_runs_of_equal_latencies() {
    // The spout records runs of equal complete latencies at once (on a different value, or when
    // the histogram is read): the histogram must equal one record per notice, read at any point.
    let log = new_log();
    let plan = plan(1, &log);
    let mut spout = build(&plan, SPOUT);
    let mut out = Outbox::new();
    let mut roots = Vec::new();
    for t in 0..10u64 {
        assert!(spout.next_tuple(t * 10, &mut out));
        roots.push(init_of(out.as_slice()).1);
        out.clear();
    }
    // (root, handed over at): latencies 1,000 ×3, 2,000, 1,000 ×2, 0 (recorded as 1), 5 ×2, 5.
    let notices = [
        (0, 1_000),
        (1, 1_010),
        (2, 1_020),
        (3, 2_030),
        (4, 1_040),
        (5, 1_050),
        (6, 60),
        (7, 75),
        (8, 85),
        (9, 95),
    ];
    let mut want = acker_runtime::latency_histogram();
    for (i, &(root, at)) in notices.iter().enumerate() {
        let n = Notice::Completed { root: roots[root] };
        spout.handle(Message::Notice(n), at, &mut out);
        want.record((at - root as u64 * 10).max(1)).unwrap();
        // Read in the middle of a run (after the second 1,000 and after the first 5): what
        // follows continues the run.
        if i == 1 || i == 7 {
            let h = spout.complete_latency_ns().unwrap();
            assert_eq!(h.len(), i as u64 + 1);
            assert!(*h == want);
        }
    }
    let h = spout.complete_latency_ns().unwrap();
    let got: Vec<(u64, u64)> = h
        .iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect();
    assert_eq!(got, [(1, 1), (5, 3), (1_000, 5), (2_000, 1)]);
    assert!(*h == want);
    assert_eq!((h.len(), h.min(), h.max()), (10, 1, 2_000));
    assert_eq!(spout.counters().acked, 10);
}

/// What one run of a spout → bolt → acker chain delivered, in order: (destination, message),
/// the spout's tracked emits as `(message id, root)`, and each task's counters.
type Delivered = (
    Vec<(TaskId, String)>,
    Vec<(MessageId, u64)>,
    Vec<acker_runtime::ExecutorCounters>,
);

/// Runs the two-tuple chain to the end in one FIFO, one message at a time, at 1,000 ns a step,
/// taking the executors' output either whole (`handle`, `drain`, `take_tracked_emits`) or in
/// place as the simulator does (`handle_tuple` / `handle_acker` / `handle_notice` on messages
/// read out of `as_mut_slice`, then `clear_envelopes`; `tracked_emits` then
/// `clear_tracked_emits`).
fn run_chain(in_place: bool) -> (Delivered, Vec<Call>) {
    let log = new_log();
    let plan = plan(1, &log);
    let mut tasks: Vec<Executor> = (0..3).map(|t| build(&plan, t)).collect();
    let mut out = Outbox::new();
    out.record_tracked_emits();
    let mut queue: std::collections::VecDeque<Envelope> = Default::default();
    let (mut trace, mut emits) = (Vec::new(), Vec::new());
    let mut take = |out: &mut Outbox, queue: &mut std::collections::VecDeque<Envelope>| {
        if in_place {
            for env in out.as_mut_slice() {
                let message = match &mut env.message {
                    Message::Tuple(t) => Message::Tuple(std::mem::take(t)),
                    other => other.clone(),
                };
                queue.push_back(Envelope {
                    dest: env.dest,
                    message,
                });
            }
            out.clear_envelopes();
            emits.extend_from_slice(out.tracked_emits());
            out.clear_tracked_emits();
        } else {
            queue.extend(out.drain());
            emits.extend(out.take_tracked_emits());
        }
    };
    let mut now = 0;
    loop {
        now += 1_000;
        if let Some(env) = queue.pop_front() {
            trace.push((env.dest, format!("{:?}", env.message)));
            let task = &mut tasks[env.dest as usize];
            match (in_place, env.message) {
                (true, Message::Tuple(t)) => task.handle_tuple(t, now, &mut out),
                (true, Message::Acker(m)) => task.handle_acker(m, &mut out),
                (true, Message::Notice(n)) => task.handle_notice(n, now),
                (_, m) => task.handle(m, now, &mut out),
            }
        } else if tasks[0].can_emit() && !tasks[0].is_done() {
            tasks[0].next_tuple(now, &mut out);
        } else {
            break;
        }
        take(&mut out, &mut queue);
        assert!(
            now < 1_000_000,
            "the chain did not finish in 1,000 steps; the last 8 of {} deliveries: {:?}",
            trace.len(),
            &trace[trace.len().saturating_sub(8)..]
        );
    }
    let counters = tasks.iter().map(Executor::counters).collect();
    let calls = log.lock().unwrap().clone();
    ((trace, emits, counters), calls)
}

/// The in-place API a shell outside this crate uses (the simulator) delivers exactly what
/// `handle` and `drain` deliver: the same messages to the same tasks in the same order, the same
/// tracked emits, counters and spout callbacks; and each call empties what it says it empties.
#[test]
fn taking_messages_in_place_delivers_what_draining_them_does() {
    let (whole, whole_calls) = run_chain(false);
    let (in_place, in_place_calls) = run_chain(true);
    assert_eq!(in_place, whole);
    assert_eq!(in_place_calls, whole_calls);
    // Two trees, one after the other (the queue empties before the next emit), each: the
    // spout's tuple then its init (as the spout's collector sends them), the bolt's ack, the
    // acker's notice.
    let (trace, emits, counters) = whole;
    assert_eq!(trace.len(), 8, "{trace:?}");
    let kinds: Vec<(TaskId, &str)> = trace
        .iter()
        .map(|(dest, m)| (*dest, m.split(['(', ' ']).next().unwrap_or("")))
        .collect();
    assert_eq!(
        kinds,
        [
            (1, "Tuple"),
            (2, "Acker"),
            (2, "Acker"),
            (0, "Notice"),
            (1, "Tuple"),
            (2, "Acker"),
            (2, "Acker"),
            (0, "Notice"),
        ]
    );
    assert_eq!(emits.iter().map(|&(id, _)| id).collect::<Vec<_>>(), [0, 1]);
    assert!(emits.iter().all(|&(_, root)| root != 0));
    assert_eq!(
        counters
            .iter()
            .map(|c| (c.acked, c.executed))
            .collect::<Vec<_>>(),
        [(2, 0), (2, 2), (2, 4)]
    );
    assert_eq!(whole_calls, [Call::Ack(0), Call::Ack(1)]);
}
