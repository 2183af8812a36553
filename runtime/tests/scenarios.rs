//! Scenario tests on the executors, through the single-threaded [`LocalShell`].

use std::sync::{Arc, Mutex};

use acker_runtime::local::LocalShell;
use acker_runtime::{
    values, Bolt, Config, Input, MessageId, OutputCollector, Spout, SpoutOutputCollector, TaskKind,
    TopologyBuilder,
};

#[derive(Default)]
struct Log {
    acked: Vec<MessageId>,
    failed: Vec<MessageId>,
}

struct Roots {
    next: u64,
    n: u64,
    log: Arc<Mutex<Log>>,
}
impl Spout for Roots {
    fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
        if self.next < self.n {
            c.emit(values![self.next as i64], Some(self.next)).unwrap();
            self.next += 1;
        }
    }
    fn ack(&mut self, id: MessageId) {
        self.log.lock().unwrap().acked.push(id);
    }
    fn fail(&mut self, id: MessageId) {
        self.log.lock().unwrap().failed.push(id);
    }
}

/// Acks its input and emits a derived tuple, anchored or not.
struct Filter {
    anchored: bool,
}
impl Bolt for Filter {
    fn execute(&mut self, input: Input, c: &mut OutputCollector<'_>) {
        let v = input.values()[0].clone();
        if self.anchored {
            c.emit(&[&input], values![v]).unwrap();
        } else {
            c.emit(&[], values![v]).unwrap();
        }
        c.ack(input).unwrap();
    }
}

/// Fails everything.
struct Compute;
impl Bolt for Compute {
    fn execute(&mut self, input: Input, c: &mut OutputCollector<'_>) {
        c.fail(input).unwrap();
    }
}

fn filter_compute(anchored: bool) -> (Log, acker_runtime::ExecutorCounters) {
    let log = Arc::new(Mutex::new(Log::default()));
    let l2 = log.clone();
    let mut b = TopologyBuilder::new();
    b.set_spout(
        "spout",
        move || Roots {
            next: 0,
            n: 5,
            log: l2.clone(),
        },
        1,
    )
    .output_fields(&["n"]);
    b.set_bolt("filter", move || Filter { anchored }, 2)
        .shuffle_grouping("spout")
        .output_fields(&["n"]);
    b.set_bolt("compute", || Compute, 2)
        .shuffle_grouping("filter");
    let plan = b.build().unwrap().plan(&Config::default()).unwrap();
    let mut shell = LocalShell::new(&plan).unwrap();
    for _ in 0..10 {
        shell.step();
    }
    let spout = shell.counters(TaskKind::Spout);
    shell.shutdown();
    let log = std::mem::take(&mut *log.lock().unwrap());
    (log, spout)
}

#[test]
fn unanchored_emit_lets_root_complete_despite_downstream_failure() {
    let (log, spout) = filter_compute(false);
    assert_eq!(log.acked, vec![0, 1, 2, 3, 4]);
    assert!(log.failed.is_empty());
    assert_eq!((spout.acked, spout.failed, spout.timed_out), (5, 0, 0));
}

#[test]
fn anchored_emit_fails_every_root_once() {
    let (mut log, spout) = filter_compute(true);
    assert!(log.acked.is_empty());
    log.failed.sort();
    assert_eq!(log.failed, vec![0, 1, 2, 3, 4]);
    assert_eq!((spout.acked, spout.failed, spout.ignored), (0, 5, 0));
}

// ---------- groupings ----------

type Seen = Arc<Mutex<Vec<(u16, i64, u16)>>>; // (task, value, stream)

struct Record {
    task: u16,
    seen: Seen,
}
impl Bolt for Record {
    fn prepare(&mut self, ctx: &acker_runtime::TopologyContext) {
        self.task = ctx.task;
    }
    fn execute(&mut self, input: Input, c: &mut OutputCollector<'_>) {
        let v = input.values()[0].as_int().unwrap();
        self.seen
            .lock()
            .unwrap()
            .push((self.task, v, input.stream()));
        c.ack(input).unwrap();
    }
}

fn record(seen: &Seen) -> impl Fn() -> Record + Send + Sync + 'static {
    let s = seen.clone();
    move || Record {
        task: 0,
        seen: s.clone(),
    }
}

fn grouping_run(grouping: acker_runtime::Grouping, n: u64) -> Vec<(u16, i64, u16)> {
    let log = Arc::new(Mutex::new(Log::default()));
    let seen: Seen = Arc::default();
    let mut b = TopologyBuilder::new();
    let l2 = log.clone();
    b.set_spout(
        "spout",
        move || Roots {
            next: 0,
            n,
            log: l2.clone(),
        },
        1,
    )
    .output_fields(&["n"]);
    b.set_bolt("sink", record(&seen), 3)
        .grouping("spout", "default", grouping);
    let plan = b.build().unwrap().plan(&Config::default()).unwrap();
    let mut shell = LocalShell::new(&plan).unwrap();
    for _ in 0..n + 1 {
        shell.step();
    }
    assert_eq!(
        log.lock().unwrap().acked.len() as u64,
        n,
        "every root acked"
    );
    let v = seen.lock().unwrap().clone();
    v
}

#[test]
fn shuffle_spreads_evenly() {
    let seen = grouping_run(acker_runtime::Grouping::Shuffle, 30);
    for t in 1..=3u16 {
        assert_eq!(seen.iter().filter(|s| s.0 == t).count(), 10);
    }
}

#[test]
fn fields_grouping_is_a_function_of_the_value() {
    let seen = grouping_run(acker_runtime::Grouping::Fields(vec!["n".into()]), 40);
    assert_eq!(seen.len(), 40);
    let again = grouping_run(acker_runtime::Grouping::Fields(vec!["n".into()]), 40);
    assert_eq!(seen, again, "same values go to the same tasks");
    let used: std::collections::BTreeSet<u16> = seen.iter().map(|s| s.0).collect();
    assert!(used.len() > 1, "40 values spread over more than one task");
}

#[test]
fn all_grouping_copies_to_every_task() {
    let seen = grouping_run(acker_runtime::Grouping::All, 5);
    assert_eq!(seen.len(), 15);
    for v in 0..5 {
        let mut tasks: Vec<u16> = seen.iter().filter(|s| s.1 == v).map(|s| s.0).collect();
        tasks.sort();
        assert_eq!(tasks, vec![1, 2, 3]);
    }
}

#[test]
fn global_grouping_goes_to_lowest_task() {
    let seen = grouping_run(acker_runtime::Grouping::Global, 7);
    assert_eq!(seen.len(), 7);
    assert!(seen.iter().all(|s| s.0 == 1));
}

#[test]
fn direct_grouping_needs_emit_direct() {
    // Plain emits skip a direct subscriber: the tree (no copies) completes at once.
    let seen = grouping_run(acker_runtime::Grouping::Direct, 4);
    assert!(seen.is_empty());

    struct DirectSpout {
        n: u64,
    }
    impl Spout for DirectSpout {
        fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
            if self.n < 6 {
                let task = 1 + (self.n % 2) as u16 * 2; // tasks 1 and 3
                c.emit_direct(task, "default", values![self.n as i64], Some(self.n))
                    .unwrap();
                // Task 0 is the spout itself: not a direct subscriber.
                let e = c.emit_direct(0, "default", values![0], None).unwrap_err();
                assert_eq!(e, acker_runtime::EmitError::NotDirectTarget(0));
                self.n += 1;
            }
        }
    }
    let seen: Seen = Arc::default();
    let mut b = TopologyBuilder::new();
    b.set_spout("spout", || DirectSpout { n: 0 }, 1)
        .output_fields(&["n"]);
    b.set_bolt("sink", record(&seen), 3)
        .direct_grouping("spout");
    let plan = b.build().unwrap().plan(&Config::default()).unwrap();
    let mut shell = LocalShell::new(&plan).unwrap();
    for _ in 0..8 {
        shell.step();
    }
    let s = seen.lock().unwrap().clone();
    assert_eq!(
        s.iter().map(|x| (x.0, x.1)).collect::<Vec<_>>(),
        vec![(1, 0), (3, 1), (1, 2), (3, 3), (1, 4), (3, 5)]
    );
    assert_eq!(shell.counters(TaskKind::Spout).acked, 6);
}

#[test]
fn local_or_shuffle_prefers_same_worker() {
    use acker_runtime::{Outbox, Placement};
    let seen: Seen = Arc::default();
    let mut b = TopologyBuilder::new();
    b.set_spout(
        "spout",
        || Roots {
            next: 0,
            n: 10,
            log: Arc::default(),
        },
        1,
    )
    .output_fields(&["n"]);
    b.set_bolt("sink", record(&seen), 3)
        .local_or_shuffle_grouping("spout");
    let plan = b.build().unwrap().plan(&Config::default()).unwrap();
    // Spout (task 0) and sink task 2 in worker 0; tasks 1, 3 and the acker in worker 1.
    let placement = Placement::from_workers(vec![0, 1, 0, 1, 1]);
    let mut spout = plan.build_executor(0, &placement).unwrap();
    let mut out = Outbox::new();
    for _ in 0..10 {
        spout.next_tuple(0, &mut out);
    }
    let dests: Vec<u16> = out
        .as_slice()
        .iter()
        .filter(|e| matches!(e.message, acker_runtime::Message::Tuple(_)))
        .map(|e| e.dest)
        .collect();
    assert_eq!(dests, vec![2; 10]);
}

// ---------- timeouts, at-most-once, reset, restart ----------

/// Holds every input open forever (never acks).
struct BlackHole {
    held: Vec<Input>,
}
impl Bolt for BlackHole {
    fn execute(&mut self, input: Input, _c: &mut OutputCollector<'_>) {
        self.held.push(input);
    }
}

fn blackhole_plan(config: Config, log: &Arc<Mutex<Log>>) -> acker_runtime::Plan {
    let l2 = log.clone();
    let mut b = TopologyBuilder::new();
    b.set_spout(
        "spout",
        move || Roots {
            next: 0,
            n: 4,
            log: l2.clone(),
        },
        1,
    )
    .output_fields(&["n"]);
    b.set_bolt("hole", || BlackHole { held: Vec::new() }, 1)
        .shuffle_grouping("spout");
    b.build().unwrap().plan(&config).unwrap()
}

#[test]
fn lost_trees_time_out_between_t_and_2t() {
    let log = Arc::new(Mutex::new(Log::default()));
    let t = 1_000_000_000;
    let plan = blackhole_plan(
        Config {
            message_timeout_ns: t,
            ..Config::default()
        },
        &log,
    );
    let mut shell = LocalShell::new(&plan).unwrap();
    for _ in 0..5 {
        shell.step();
    }
    shell.advance(t / 2);
    assert_eq!(shell.counters(TaskKind::Spout).timed_out, 0);
    shell.advance(t); // 1.5 T
    shell.advance(t); // 2.5 T: past 2T, every tree is out
    let c = shell.counters(TaskKind::Spout);
    assert_eq!((c.acked, c.failed, c.timed_out), (0, 0, 4));
    let mut failed = log.lock().unwrap().failed.clone();
    failed.sort();
    assert_eq!(failed, vec![0, 1, 2, 3]);
}

#[test]
fn timeouts_off_keep_trees_pending() {
    let log = Arc::new(Mutex::new(Log::default()));
    let plan = blackhole_plan(
        Config {
            enable_message_timeouts: false,
            ..Config::default()
        },
        &log,
    );
    let mut shell = LocalShell::new(&plan).unwrap();
    for _ in 0..5 {
        shell.step();
    }
    shell.advance(3_600_000_000_000);
    assert_eq!(shell.counters(TaskKind::Spout).timed_out, 0);
    assert_eq!(shell.executor(0).unwrap().pending_roots(), 4);
}

#[test]
fn zero_ackers_is_at_most_once() {
    let log = Arc::new(Mutex::new(Log::default()));
    let plan = blackhole_plan(
        Config {
            num_ackers: 0,
            ..Config::default()
        },
        &log,
    );
    assert_eq!(plan.tasks().len(), 2);
    let mut shell = LocalShell::new(&plan).unwrap();
    for _ in 0..5 {
        shell.step();
    }
    // Acked as soon as emitted, although the bolt never acks.
    assert_eq!(log.lock().unwrap().acked, vec![0, 1, 2, 3]);
    assert_eq!(shell.executor(0).unwrap().pending_roots(), 0);
}

#[test]
fn max_spout_pending_throttles_next_tuple() {
    let log = Arc::new(Mutex::new(Log::default()));
    let plan = blackhole_plan(
        Config {
            max_spout_pending: Some(2),
            ..Config::default()
        },
        &log,
    );
    let mut shell = LocalShell::new(&plan).unwrap();
    assert_eq!(shell.step(), 1);
    assert_eq!(shell.step(), 1);
    assert_eq!(shell.step(), 0, "two pending: next_tuple is not called");
    assert!(!shell.executor(0).unwrap().can_emit());
}

/// Holds every input; each new input asks for more time for every held one.
struct Slowpoke {
    held: Vec<Input>,
    reset: bool,
}
impl Bolt for Slowpoke {
    fn execute(&mut self, input: Input, c: &mut OutputCollector<'_>) {
        self.held.push(input);
        if self.reset {
            for h in &self.held {
                c.reset_timeout(h).unwrap();
            }
        }
    }
}

fn reset_run(reset: bool) -> (u64, u64) {
    let mut b = TopologyBuilder::new();
    b.set_spout(
        "spout",
        || Roots {
            next: 0,
            n: 2,
            log: Arc::default(),
        },
        1,
    )
    .output_fields(&["n"]);
    b.set_bolt(
        "slow",
        move || Slowpoke {
            held: Vec::new(),
            reset,
        },
        1,
    )
    .shuffle_grouping("spout");
    let t = 1_000_000_000;
    let plan = b
        .build()
        .unwrap()
        .plan(&Config {
            message_timeout_ns: t,
            ..Config::default()
        })
        .unwrap();
    let mut shell = LocalShell::new(&plan).unwrap();
    shell.step(); // root 0 at 0
    shell.advance(t * 19 / 10);
    shell.step(); // root 1 at 1.9 T; with `reset`, root 0's timeout restarts at 1.9 T
    shell.advance(t * 6 / 10); // 2.5 T
    let at_2_5 = shell.counters(TaskKind::Spout).timed_out;
    shell.advance(t); // 3.5 T
    (at_2_5, shell.counters(TaskKind::Spout).timed_out)
}

#[test]
fn reset_timeout_restarts_the_spout_timeout() {
    // Without reset, root 0 (emitted at 0) is out by 2 T; root 1 (1.9 T) by 3.5 T.
    assert_eq!(reset_run(false), (1, 2));
    // With reset at 1.9 T, root 0 survives the 2.5 T tick.
    assert_eq!(reset_run(true), (0, 2));
}

#[test]
fn rebuilt_executor_starts_empty() {
    let log = Arc::new(Mutex::new(Log::default()));
    let plan = blackhole_plan(Config::default(), &log);
    let placement = acker_runtime::Placement::single(plan.tasks().len());
    let mut spout = plan.build_executor(0, &placement).unwrap();
    let mut out = acker_runtime::Outbox::new();
    spout.next_tuple(0, &mut out);
    assert_eq!(spout.pending_roots(), 1);
    let first = out.as_slice().to_vec();
    let again = plan.build_executor(0, &placement).unwrap();
    assert_eq!(again.pending_roots(), 0);
    assert_eq!(again.counters(), Default::default());
    // Same seed, same task: the same ids, byte for byte.
    let mut spout2 = again;
    let mut out2 = acker_runtime::Outbox::new();
    spout2.next_tuple(0, &mut out2);
    assert_eq!(out2.as_slice(), &first[..]);
    assert!(plan.build_executor(99, &placement).is_err());
}

// ---------- multi-anchoring ----------

/// Holds inputs; at the third emits one tuple anchored to all three; at the fourth tries to
/// anchor to four trees (refused), then acks everything.
struct Joiner {
    held: Vec<Input>,
    errors: Arc<Mutex<Vec<acker_runtime::EmitError>>>,
}
impl Bolt for Joiner {
    fn execute(&mut self, input: Input, c: &mut OutputCollector<'_>) {
        self.held.push(input);
        if self.held.len() == 3 {
            let refs: Vec<&Input> = self.held.iter().collect();
            assert_eq!(c.emit(&refs, values![99]).unwrap(), 1);
        }
        if self.held.len() == 4 {
            let refs: Vec<&Input> = self.held.iter().collect();
            let e = c.emit(&refs, values![100]).unwrap_err();
            self.errors.lock().unwrap().push(e);
            for i in self.held.drain(..) {
                c.ack(i).unwrap();
            }
        }
    }
}

#[test]
fn multi_anchoring_joins_trees_up_to_max_roots() {
    assert_eq!(acker_runtime::MAX_ROOTS, 3);
    let log = Arc::new(Mutex::new(Log::default()));
    let errors = Arc::new(Mutex::new(Vec::new()));
    let seen: Seen = Arc::default();
    let (l2, e2) = (log.clone(), errors.clone());
    let mut b = TopologyBuilder::new();
    b.set_spout(
        "spout",
        move || Roots {
            next: 0,
            n: 4,
            log: l2.clone(),
        },
        1,
    )
    .output_fields(&["n"]);
    b.set_bolt(
        "join",
        move || Joiner {
            held: Vec::new(),
            errors: e2.clone(),
        },
        1,
    )
    .shuffle_grouping("spout")
    .output_fields(&["n"]);
    b.set_bolt("sink", record(&seen), 1)
        .shuffle_grouping("join");
    let plan = b.build().unwrap().plan(&Config::default()).unwrap();
    let mut shell = LocalShell::new(&plan).unwrap();
    for _ in 0..5 {
        shell.step();
    }
    assert_eq!(
        *errors.lock().unwrap(),
        vec![acker_runtime::EmitError::Anchor(
            acker_core::AnchorError::TooManyRoots
        )]
    );
    // The joined tuple reached the sink; every root completed once both acks arrived.
    assert_eq!(seen.lock().unwrap().len(), 1);
    let mut acked = log.lock().unwrap().acked.clone();
    acked.sort();
    assert_eq!(acked, vec![0, 1, 2, 3]);
}

#[test]
fn placement_rules() {
    use acker_runtime::Placement;
    let mut b = TopologyBuilder::new();
    b.set_spout(
        "spout",
        || Roots {
            next: 0,
            n: 0,
            log: Arc::default(),
        },
        2,
    )
    .output_fields(&["n"]);
    b.set_bolt("sink", || Compute, 3).shuffle_grouping("spout");
    let plan = b
        .build()
        .unwrap()
        .plan(&Config {
            num_ackers: 3,
            ..Config::default()
        })
        .unwrap();
    // Tasks: spouts 0,1; sinks 2,3,4; ackers 5,6,7.
    let rr = Placement::round_robin(8, 2);
    assert_eq!(
        (0..8).map(|t| rr.worker(t)).collect::<Vec<_>>(),
        vec![0, 1, 0, 1, 0, 1, 0, 1]
    );
    let p = Placement::for_plan(&plan, 2);
    // Acker i goes with spout i % 2: spout 0 on worker 0, spout 1 on worker 1.
    assert_eq!(
        (0..8).map(|t| p.worker(t)).collect::<Vec<_>>(),
        vec![0, 1, 0, 1, 0, 0, 1, 0]
    );
}

/// The root ids of the inits a spout executor sends for its first `n` emits.
fn first_roots(exec: &mut acker_runtime::Executor, n: usize) -> Vec<u64> {
    let mut out = acker_runtime::Outbox::new();
    let mut roots = Vec::new();
    for _ in 0..n {
        exec.next_tuple(0, &mut out);
        for e in out.drain() {
            if let acker_runtime::Message::Acker(m) = e.message {
                roots.push(m.root());
            }
        }
    }
    roots
}

/// A restarted spout (a new incarnation) draws new root ids; rebuilding incarnation 0 repeats
/// them, as the determinism of a seeded run requires.
#[test]
fn restarted_spout_draws_new_root_ids() {
    let log = Arc::new(Mutex::new(Log::default()));
    let plan = blackhole_plan(Config::default(), &log);
    let placement = acker_runtime::Placement::single(plan.tasks().len());
    let spout_task = plan
        .tasks()
        .iter()
        .position(|t| t.kind == TaskKind::Spout)
        .unwrap() as u16;
    let first = first_roots(&mut plan.build_executor(spout_task, &placement).unwrap(), 4);
    let again = first_roots(&mut plan.build_executor(spout_task, &placement).unwrap(), 4);
    let restarted = first_roots(
        &mut plan.restart_executor(spout_task, &placement, 1).unwrap(),
        4,
    );
    assert_eq!(first.len(), 4);
    assert_eq!(first, again);
    assert_eq!(restarted.len(), 4);
    assert!(restarted.iter().all(|r| !first.contains(r)));
    let second = first_roots(
        &mut plan.restart_executor(spout_task, &placement, 2).unwrap(),
        4,
    );
    assert_ne!(second, restarted);
}
