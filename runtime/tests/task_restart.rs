//! Killing and restarting one task of a running thread-per-core shell ([`TaskControl`]), and the
//! throwing bolt. One core, so the order of the loop turns is fixed and the figures are exact:
//! a spout emits 10 tracked tuples in its first turn; their inits reach the acker before their
//! data reaches the bolt (the control lane is drained first).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use acker_runtime::bolts::{Throw, ThrowingBolt};
use acker_runtime::shell::{run_with_control, ControlError, RunReport, ShellOptions, TaskControl};
use acker_runtime::{
    values, BasicBolt, BasicOutputCollector, Bolt, Config, FailedException, Input, MessageId,
    OutputCollector, Plan, Spout, SpoutOutputCollector, TaskKind, TopologyBuilder,
};

const N: u64 = 10;

/// What the spouts of one run saw, shared by every incarnation.
#[derive(Default)]
struct Seen {
    acked: Mutex<Vec<MessageId>>,
    failed: Mutex<Vec<MessageId>>,
    incarnations: AtomicU64,
}

/// Emits 0..N tracked; replays failed ids; then, if `ping`, one unanchored `-1` once the control
/// has applied a restart. Done when every id was acked.
struct Numbers {
    next: u64,
    replay: Vec<MessageId>,
    pinged: bool,
    ping: bool,
    seen: Arc<Seen>,
    control: TaskControl,
}

impl Spout for Numbers {
    fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
        if let Some(id) = self.replay.pop() {
            c.emit(values![id as i64], Some(id)).unwrap();
        } else if self.next < N {
            c.emit(values![self.next as i64], Some(self.next)).unwrap();
            self.next += 1;
        } else if self.ping && !self.pinged && self.control.restarts_done() > 0 {
            self.pinged = true;
            c.emit(values![-1i64], None).unwrap();
        }
    }
    fn ack(&mut self, id: MessageId) {
        self.seen.acked.lock().unwrap().push(id);
    }
    fn fail(&mut self, id: MessageId) {
        self.seen.failed.lock().unwrap().push(id);
        self.replay.push(id);
    }
    fn is_done(&self) -> bool {
        self.seen.acked.lock().unwrap().len() as u64 == N
    }
}

/// Holds its inputs until the ping (`-1`) arrives, then acks them and every later input. On its
/// N-th held input it asks for task `restart` to be restarted.
struct HoldThenAck {
    held: Vec<Input>,
    release: bool,
    restart: u16,
    control: TaskControl,
}

impl Bolt for HoldThenAck {
    fn execute(&mut self, input: Input, c: &mut OutputCollector<'_>) {
        if input.values()[0].as_int() == Some(-1) {
            self.release = true;
            for i in self.held.drain(..) {
                c.ack(i).unwrap();
            }
            c.ack(input).unwrap();
            return;
        }
        if self.release {
            c.ack(input).unwrap();
            return;
        }
        self.held.push(input);
        if self.held.len() as u64 == N {
            self.control.restart(self.restart).unwrap();
        }
    }
}

fn config() -> Config {
    Config {
        num_ackers: 1,
        message_timeout_ns: 200_000_000,
        tick_interval_ns: 10_000_000,
        ..Config::default()
    }
}

fn one_core() -> ShellOptions {
    ShellOptions {
        cores: Some(1),
        pin_threads: false,
        ..ShellOptions::default()
    }
}

fn run_bounded(plan: &Plan, control: &TaskControl, what: &str) -> RunReport {
    let (tx, rx) = mpsc::channel();
    let (plan, control) = (plan.clone(), control.clone());
    std::thread::spawn(move || {
        let _ = tx.send(run_with_control(&plan, &one_core(), &control));
    });
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(r) => r.unwrap_or_else(|e| panic!("{what}: the run failed: {e}")),
        Err(_) => panic!("{what}: the run did not finish within 30 s"),
    }
}

fn task_of(plan: &Plan, kind: TaskKind) -> u16 {
    plan.tasks().iter().find(|t| t.kind == kind).unwrap().task
}

#[test]
fn acker_restart_while_trees_are_pending_times_them_out_and_they_are_replayed() {
    let seen = Arc::new(Seen::default());
    let control = TaskControl::new();
    // Task ids: spout 0, bolt 1, acker 2 (components first, ackers last).
    let acker: u16 = 2;
    let mut b = TopologyBuilder::new();
    let (s, c) = (seen.clone(), control.clone());
    b.set_spout(
        "numbers",
        move || Numbers {
            next: 0,
            replay: Vec::new(),
            pinged: false,
            ping: true,
            seen: s.clone(),
            control: c.clone(),
        },
        1,
    )
    .output_fields(&["n"]);
    let c = control.clone();
    b.set_bolt(
        "hold",
        move || HoldThenAck {
            held: Vec::new(),
            release: false,
            restart: acker,
            control: c.clone(),
        },
        1,
    )
    .shuffle_grouping("numbers");
    let plan = b.build().unwrap().plan(&config()).unwrap();
    assert_eq!(task_of(&plan, TaskKind::Acker), acker);
    let r = run_bounded(&plan, &control, "acker restart");
    assert_eq!(r.restarts, 1);
    // The 10 trees the old acker held never complete: each times out at the spout (user fail),
    // is replayed, and completes at the new acker.
    let spout = r.spout_totals();
    assert_eq!(spout.timed_out, N);
    assert_eq!(spout.acked, N);
    let mut failed = seen.failed.lock().unwrap().clone();
    failed.sort();
    assert_eq!(failed, (0..N).collect::<Vec<_>>());
    let mut acked = seen.acked.lock().unwrap().clone();
    acked.sort();
    assert_eq!(acked, (0..N).collect::<Vec<_>>());
    // Both incarnations of the acker: 10 completions, all by the new one.
    assert_eq!(r.kind_totals(TaskKind::Acker).acked, N);
    assert_eq!(r.undecided_roots, 0);
}

/// Acks every input at once.
struct AckAll;
impl Bolt for AckAll {
    fn execute(&mut self, input: Input, c: &mut OutputCollector<'_>) {
        c.ack(input).unwrap();
    }
}

/// Incarnation 0 emits 0..N tracked, then asks for its own restart; later incarnations emit
/// nothing and are done at once.
struct Crasher {
    next: u64,
    incarnation: u64,
    seen: Arc<Seen>,
    control: TaskControl,
    asked: bool,
}
impl Spout for Crasher {
    fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
        if self.incarnation > 0 {
            return;
        }
        if self.next < N {
            c.emit(values![self.next as i64], Some(self.next)).unwrap();
            self.next += 1;
        } else if !self.asked {
            self.asked = true;
            self.control.restart(0).unwrap();
        }
    }
    fn ack(&mut self, id: MessageId) {
        self.seen.acked.lock().unwrap().push(id);
    }
    fn fail(&mut self, id: MessageId) {
        self.seen.failed.lock().unwrap().push(id);
    }
    fn is_done(&self) -> bool {
        self.incarnation > 0
    }
}

#[test]
fn spout_restart_loses_its_pending_callbacks() {
    let seen = Arc::new(Seen::default());
    let control = TaskControl::new();
    let mut b = TopologyBuilder::new();
    let (s, c) = (seen.clone(), control.clone());
    b.set_spout(
        "numbers",
        move || Crasher {
            next: 0,
            incarnation: s.incarnations.fetch_add(1, Ordering::AcqRel),
            seen: s.clone(),
            control: c.clone(),
            asked: false,
        },
        1,
    )
    .output_fields(&["n"]);
    b.set_bolt("ack", || AckAll, 1).shuffle_grouping("numbers");
    let plan = b.build().unwrap().plan(&config()).unwrap();
    let r = run_bounded(&plan, &control, "spout restart");
    assert_eq!(r.restarts, 1);
    assert_eq!(seen.incarnations.load(Ordering::Acquire), 2);
    // The acker completed the 10 trees; their notices reached the new incarnation, which does
    // not know their roots: ignored and counted, no user ack or fail ever called.
    assert_eq!(r.kind_totals(TaskKind::Acker).acked, N);
    let spout = r.spout_totals();
    assert_eq!(spout.ignored, N);
    assert_eq!(spout.acked, 0);
    assert_eq!(spout.emitted, N);
    assert!(seen.acked.lock().unwrap().is_empty());
    assert!(seen.failed.lock().unwrap().is_empty());
}

#[test]
fn bolt_restart_loses_its_open_inputs_which_time_out_and_are_replayed() {
    let seen = Arc::new(Seen::default());
    let control = TaskControl::new();
    let bolt: u16 = 1;
    let mut b = TopologyBuilder::new();
    let (s, c) = (seen.clone(), control.clone());
    b.set_spout(
        "numbers",
        move || Numbers {
            next: 0,
            replay: Vec::new(),
            pinged: false,
            ping: true,
            seen: s.clone(),
            control: c.clone(),
        },
        1,
    )
    .output_fields(&["n"]);
    let c = control.clone();
    // The bolt restarts itself on its 10th held input: the held inputs are dropped unacked.
    b.set_bolt(
        "hold",
        move || HoldThenAck {
            held: Vec::new(),
            release: false,
            restart: bolt,
            control: c.clone(),
        },
        1,
    )
    .shuffle_grouping("numbers");
    let plan = b.build().unwrap().plan(&config()).unwrap();
    assert_eq!(task_of(&plan, TaskKind::Bolt), bolt);
    let r = run_bounded(&plan, &control, "bolt restart");
    assert_eq!(r.restarts, 1);
    let spout = r.spout_totals();
    assert_eq!(spout.timed_out, N);
    assert_eq!(spout.acked, N);
    assert_eq!(seen.failed.lock().unwrap().len() as u64, N);
    assert_eq!(r.kind_totals(TaskKind::Bolt).inputs_dropped_unacked, N);
}

#[test]
fn a_restart_of_a_task_the_plan_lacks_is_refused() {
    let control = TaskControl::new();
    let mut b = TopologyBuilder::new();
    let seen = Arc::new(Seen::default());
    let (s, c) = (seen.clone(), control.clone());
    b.set_spout(
        "numbers",
        move || Numbers {
            next: 0,
            replay: Vec::new(),
            pinged: false,
            ping: false,
            seen: s.clone(),
            control: c.clone(),
        },
        1,
    )
    .output_fields(&["n"]);
    b.set_bolt("ack", || AckAll, 1).shuffle_grouping("numbers");
    let plan = b.build().unwrap().plan(&config()).unwrap();
    control.restart(40).unwrap(); // before any run: queued
    let r = run_bounded(&plan, &control, "refused restart");
    assert_eq!(r.restarts, 0);
    assert_eq!(control.restarts_refused(), 1);
    assert_eq!(control.restart(3), Err(ControlError::UnknownTask(3)));
    assert_eq!(control.restarts_pending(), 0);
    assert_eq!(r.spout_totals().acked, N);
}

/// Records every value it receives.
struct Record(Arc<Mutex<Vec<i64>>>);
impl BasicBolt for Record {
    fn execute(
        &mut self,
        input: &Input,
        _c: &mut BasicOutputCollector<'_, '_>,
    ) -> Result<(), FailedException> {
        self.0
            .lock()
            .unwrap()
            .push(input.values()[0].as_int().unwrap());
        Ok(())
    }
}

/// Numbers 0..N through a throwing bolt that throws `throw` on the first delivery of 3 and 7.
fn throwing_run(throw: Throw) -> (RunReport, Vec<MessageId>, Vec<i64>) {
    let seen = Arc::new(Seen::default());
    let control = TaskControl::new();
    let out = Arc::new(Mutex::new(Vec::new()));
    let mut b = TopologyBuilder::new();
    let (s, c) = (seen.clone(), control.clone());
    b.set_spout(
        "numbers",
        move || Numbers {
            next: 0,
            replay: Vec::new(),
            pinged: false,
            ping: false,
            seen: s.clone(),
            control: c.clone(),
        },
        1,
    )
    .output_fields(&["n"]);
    let once: Arc<Mutex<Vec<i64>>> = Arc::new(Mutex::new(Vec::new()));
    b.set_basic_bolt(
        "throwing",
        move || {
            let once = once.clone();
            ThrowingBolt::new(move |i: &Input| {
                let n = i.values()[0].as_int().unwrap();
                let mut o = once.lock().unwrap();
                if (n == 3 || n == 7) && !o.contains(&n) {
                    o.push(n);
                    throw
                } else {
                    Throw::No
                }
            })
        },
        1,
    )
    .shuffle_grouping("numbers")
    .output_fields(&["n"]);
    let o = out.clone();
    b.set_basic_bolt("record", move || Record(o.clone()), 1)
        .shuffle_grouping("throwing");
    let plan = b.build().unwrap().plan(&config()).unwrap();
    let r = run_bounded(&plan, &control, "throwing bolt");
    let mut failed = seen.failed.lock().unwrap().clone();
    failed.sort();
    let mut got = out.lock().unwrap().clone();
    got.sort();
    (r, failed, got)
}

#[test]
fn a_throw_before_emit_fails_the_input_and_emits_nothing() {
    let (r, failed, got) = throwing_run(Throw::BeforeEmit);
    assert_eq!(failed, vec![3, 7]);
    // Each number reached the sink once: the replays of 3 and 7 went through.
    assert_eq!(got, (0..N as i64).collect::<Vec<_>>());
    assert_eq!(r.spout_totals().acked, N);
    assert_eq!(r.spout_totals().timed_out, 0);
}

#[test]
fn a_throw_after_emit_fails_the_input_after_its_output_went_out() {
    let (r, failed, got) = throwing_run(Throw::AfterEmit);
    assert_eq!(failed, vec![3, 7]);
    // 3 and 7 reached the sink twice: once before the throw, once from the replay.
    let mut want: Vec<i64> = (0..N as i64).chain([3, 7]).collect();
    want.sort();
    assert_eq!(got, want);
    assert_eq!(r.spout_totals().acked, N);
}
