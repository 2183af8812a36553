//! Bounded resources whose owner misbehaves: bolts that hold inputs for ever, drop them unacked,
//! or ack them after their trees timed out. None of it may wedge a task: every tree is decided
//! (acked, or timed out and replayed) within a few timeouts. See the crate docs' table of
//! bounded resources for the other ones (spout pending, acker park queue, rings, staging).

use std::sync::{Arc, Mutex};

use acker_runtime::local::LocalShell;
use acker_runtime::{
    values, Bolt, Config, EmitError, Input, MessageId, OutputCollector, Spout,
    SpoutOutputCollector, TaskKind, TopologyBuilder,
};

const T: u64 = 1_000_000_000;

#[derive(Default)]
struct Log {
    acked: Vec<MessageId>,
    failed: Vec<MessageId>,
}

/// Emits ids `0..n` once each, and re-emits an id whenever it fails.
struct Replaying {
    next: u64,
    n: u64,
    replay: Vec<MessageId>,
    log: Arc<Mutex<Log>>,
}
impl Spout for Replaying {
    fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
        if let Some(id) = self.replay.pop() {
            if c.emit(values![id as i64], Some(id)).is_err() {
                self.replay.push(id);
            }
        } else if self.next < self.n && c.emit(values![self.next as i64], Some(self.next)).is_ok() {
            self.next += 1;
        }
    }
    fn ack(&mut self, id: MessageId) {
        self.log.lock().unwrap().acked.push(id);
    }
    fn fail(&mut self, id: MessageId) {
        self.log.lock().unwrap().failed.push(id);
        self.replay.push(id);
    }
}

/// What the bolt does with the first `k` inputs it ever sees; it acks every later one.
#[derive(Clone, Copy)]
enum Misbehaviour {
    /// Keeps them for ever.
    Hold,
    /// Drops them unacked.
    Drop,
    /// Keeps them, and acks every held one on the next input after `at_ns`.
    AckLate { at_ns: u64 },
}

struct Misbehaving {
    how: Misbehaviour,
    k: usize,
    seen: usize,
    held: Vec<Input>,
    late: Arc<Mutex<Vec<EmitError>>>,
}
impl Bolt for Misbehaving {
    fn execute(&mut self, input: Input, c: &mut OutputCollector<'_>) {
        self.seen += 1;
        if let Misbehaviour::AckLate { at_ns } = self.how {
            if c.now_ns() >= at_ns {
                for h in self.held.drain(..) {
                    if let Err(e) = c.ack(h) {
                        self.late.lock().unwrap().push(e);
                    }
                }
            }
        }
        if self.seen <= self.k {
            match self.how {
                Misbehaviour::Drop => drop(input),
                Misbehaviour::Hold | Misbehaviour::AckLate { .. } => self.held.push(input),
            }
        } else {
            c.ack(input).unwrap();
        }
    }
}

struct Run {
    shell: LocalShell,
    log: Arc<Mutex<Log>>,
    late: Arc<Mutex<Vec<EmitError>>>,
}

fn run(n: u64, how: Misbehaviour, k: usize, config: Config) -> Run {
    let log = Arc::new(Mutex::new(Log::default()));
    let late = Arc::new(Mutex::new(Vec::new()));
    let (l2, late2) = (log.clone(), late.clone());
    let mut b = TopologyBuilder::new();
    b.set_spout(
        "spout",
        move || Replaying {
            next: 0,
            n,
            replay: Vec::new(),
            log: l2.clone(),
        },
        1,
    )
    .output_fields(&["n"]);
    b.set_bolt(
        "bolt",
        move || Misbehaving {
            how,
            k,
            seen: 0,
            held: Vec::new(),
            late: late2.clone(),
        },
        1,
    )
    .shuffle_grouping("spout");
    let plan = b.build().unwrap().plan(&config).unwrap();
    Run {
        shell: LocalShell::new(&plan).unwrap(),
        log,
        late,
    }
}

fn one_second_timeout() -> Config {
    Config {
        message_timeout_ns: T,
        max_open_inputs: 1,
        ..Config::default()
    }
}

/// The issue's smallest case: `max_open_inputs = 1`, two tracked tuples (ids 0 and 1), a spout
/// that re-emits on fail, a bolt that holds the first input it ever sees and acks every other,
/// 1 s timeout, single-threaded shell, clock advanced 1 s between steps. Before the fix neither id
/// was ever acked (every later input was refused as "too many open inputs" and failed, forever).
#[test]
fn a_held_input_blocks_nothing_the_issue_smallest_case() {
    let mut r = run(2, Misbehaviour::Hold, 1, one_second_timeout());
    let mut acked_at = Vec::new();
    for step in 0..6 {
        r.shell.step();
        for id in r.log.lock().unwrap().acked.drain(..) {
            acked_at.push((id, step));
        }
        r.shell.advance(T);
    }
    // Id 1 is acked at once (step 1); id 0's tree times out on the tick at 2 s (between T and
    // 2T after its emit at 0) and its replay is acked at step 2.
    assert_eq!(acked_at, vec![(1, 1), (0, 2)]);
    assert_eq!(r.log.lock().unwrap().failed, vec![0]);
    let s = r.shell.counters(TaskKind::Spout);
    assert_eq!((s.acked, s.failed, s.timed_out, s.emitted), (2, 0, 1, 3));
    let b = r.shell.counters(TaskKind::Bolt);
    assert_eq!(
        (b.executed, b.acked, b.failed, b.errors),
        (3, 2, 0, 0),
        "no input refused"
    );
    assert_eq!((b.inputs_dropped_unacked, b.inputs_expired), (0, 0));
    // The first input is still held (the bolt never lets it go): one open input.
    assert_eq!(r.shell.executor(1).unwrap().open_inputs(), 1);
    assert_eq!(r.shell.executor(0).unwrap().pending_roots(), 0);
}

/// More held inputs than the old default table (1,024 slots), with max spout pending 16: the
/// spout's pending slots come back through timeouts and every id is acked on its replay.
#[test]
fn thousands_of_held_inputs_and_a_full_pending_set_recover_by_timeout() {
    let n = 3000;
    let mut r = run(
        n,
        Misbehaviour::Hold,
        n as usize,
        Config {
            message_timeout_ns: T,
            max_spout_pending: Some(16),
            ..Config::default()
        },
    );
    let mut rounds = 0;
    while r.log.lock().unwrap().acked.len() < n as usize {
        rounds += 1;
        assert!(
            rounds < 2000,
            "stuck: {} acked",
            r.log.lock().unwrap().acked.len()
        );
        for _ in 0..20 {
            r.shell.step();
        }
        r.shell.advance(T);
    }
    let mut acked = r.log.lock().unwrap().acked.clone();
    acked.sort();
    assert_eq!(acked, (0..n).collect::<Vec<_>>());
    let s = r.shell.counters(TaskKind::Spout);
    assert_eq!((s.acked, s.timed_out, s.failed), (n, n, 0));
    assert_eq!(r.shell.executor(1).unwrap().open_inputs(), n as usize);
    assert_eq!(r.shell.counters(TaskKind::Bolt).errors, 0);
}

/// A dropped input sends nothing (its tree is left to time out, as in Storm), is counted, and
/// gives nothing back because it took nothing: the next input is processed as usual.
#[test]
fn a_dropped_input_is_counted_and_its_tree_times_out_and_is_replayed() {
    let mut r = run(2, Misbehaviour::Drop, 1, one_second_timeout());
    let mut acked_at = Vec::new();
    for step in 0..6 {
        r.shell.step();
        for id in r.log.lock().unwrap().acked.drain(..) {
            acked_at.push((id, step));
        }
        r.shell.advance(T);
    }
    assert_eq!(acked_at, vec![(1, 1), (0, 2)]);
    let s = r.shell.counters(TaskKind::Spout);
    assert_eq!((s.acked, s.timed_out), (2, 1));
    let b = r.shell.counters(TaskKind::Bolt);
    assert_eq!((b.executed, b.acked, b.inputs_dropped_unacked), (3, 2, 1));
    assert_eq!(r.shell.executor(1).unwrap().open_inputs(), 0);
}

/// An input held past its expiry (2T after it arrived) is refused when acked late: a typed
/// error, nothing sent to the acker, counted; the tree was replayed meanwhile.
#[test]
fn a_late_ack_of_an_expired_input_is_a_typed_error_that_sends_nothing() {
    let mut r = run(
        3,
        Misbehaviour::AckLate { at_ns: 3 * T },
        1,
        one_second_timeout(),
    );
    let mut acker_executed = Vec::new();
    for _ in 0..5 {
        r.shell.step();
        acker_executed.push(r.shell.counters(TaskKind::Acker).executed);
        r.shell.advance(T);
    }
    // Input 0 arrived at 0 and expired at 2 s; the bolt acks it at 3 s (on the input of id 2's
    // step): refused.
    assert_eq!(
        *r.late.lock().unwrap(),
        vec![EmitError::InputExpired {
            expires_ns: 2 * T,
            now_ns: 3 * T
        }]
    );
    let b = r.shell.counters(TaskKind::Bolt);
    assert_eq!(
        (
            b.acked,
            b.errors,
            b.inputs_expired,
            b.inputs_dropped_unacked
        ),
        (3, 1, 1, 0)
    );
    // The acker applied: init 0 (step 0); init 1 + ack 1 (step 1); the replay of 0, init + ack
    // (step 2); init 2 + ack 2 (step 3), and nothing for the refused late ack.
    assert_eq!(acker_executed, vec![1, 3, 5, 7, 7]);
    let mut acked = r.log.lock().unwrap().acked.clone();
    acked.sort();
    assert_eq!(acked, vec![0, 1, 2]);
    assert_eq!(r.shell.executor(1).unwrap().open_inputs(), 0);
}

/// An input of one bolt task acked through another's collector is refused and counts as
/// dropped at its own task.
#[test]
fn an_input_acked_by_another_task_is_refused() {
    type Shared = Arc<Mutex<Vec<EmitError>>>;
    thread_local! {
        static STOLEN: std::cell::RefCell<Vec<Input>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    struct Thief {
        errors: Shared,
    }
    impl Bolt for Thief {
        fn execute(&mut self, input: Input, c: &mut OutputCollector<'_>) {
            if let Some(other) = STOLEN.with(|s| s.borrow_mut().pop()) {
                self.errors.lock().unwrap().push(c.ack(other).unwrap_err());
                c.ack(input).unwrap();
            } else {
                STOLEN.with(|s| s.borrow_mut().push(input));
            }
        }
    }
    let errors: Shared = Arc::default();
    let log = Arc::new(Mutex::new(Log::default()));
    let (e2, l2) = (errors.clone(), log.clone());
    let mut b = TopologyBuilder::new();
    b.set_spout(
        "spout",
        move || Replaying {
            next: 0,
            n: 2,
            replay: Vec::new(),
            log: l2.clone(),
        },
        1,
    )
    .output_fields(&["n"]);
    b.set_bolt("thief", move || Thief { errors: e2.clone() }, 2)
        .shuffle_grouping("spout");
    let plan = b.build().unwrap().plan(&one_second_timeout()).unwrap();
    let mut shell = LocalShell::new(&plan).unwrap();
    shell.step();
    shell.step();
    assert_eq!(
        *errors.lock().unwrap(),
        vec![EmitError::Anchor(acker_core::AnchorError::UnknownInput)]
    );
    let b = shell.counters(TaskKind::Bolt);
    assert_eq!((b.acked, b.errors, b.inputs_dropped_unacked), (1, 1, 1));
}
