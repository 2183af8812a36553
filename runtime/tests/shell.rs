//! The thread-per-core shell on real threads: back-pressure with minimal rings, scenario
//! outcomes, timeouts during the drain.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use acker_runtime::shell::{run, RunReport, ShellOptions};
use acker_runtime::{
    values, BasicBolt, BasicOutputCollector, Bolt, Config, FailedException, Input, MessageId,
    OutputCollector, Plan, Spout, SpoutOutputCollector, TaskKind, TopologyBuilder,
};

/// Emits `n` tracked integers; done once each was acked or failed.
struct Finite {
    next: u64,
    n: u64,
    decided: u64,
    acked: Arc<Mutex<Vec<MessageId>>>,
    failed: Arc<Mutex<Vec<MessageId>>>,
}
impl Finite {
    fn new(
        n: u64,
        acked: &Arc<Mutex<Vec<MessageId>>>,
        failed: &Arc<Mutex<Vec<MessageId>>>,
    ) -> Self {
        Self {
            next: 0,
            n,
            decided: 0,
            acked: acked.clone(),
            failed: failed.clone(),
        }
    }
}
impl Spout for Finite {
    fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
        if self.next < self.n {
            c.emit(values![self.next as i64], Some(self.next)).unwrap();
            self.next += 1;
        }
    }
    fn ack(&mut self, id: MessageId) {
        self.decided += 1;
        self.acked.lock().unwrap().push(id);
    }
    fn fail(&mut self, id: MessageId) {
        self.decided += 1;
        self.failed.lock().unwrap().push(id);
    }
    fn is_done(&self) -> bool {
        self.decided == self.n
    }
}

/// The message ids a test's [`Finite`] spouts hand their user code: acked and failed, in arrival
/// order (shared by every task the factory makes).
#[derive(Clone, Default)]
struct SpoutIds {
    acked: Arc<Mutex<Vec<MessageId>>>,
    failed: Arc<Mutex<Vec<MessageId>>>,
}

impl SpoutIds {
    /// A factory of [`Finite`] spouts of `n` tuples each, reporting here.
    fn finite(&self, n: u64) -> impl Fn() -> Finite + Send + Sync + 'static {
        let ids = self.clone();
        move || Finite::new(n, &ids.acked, &ids.failed)
    }

    /// (acked ids, failed ids), each sorted.
    fn sorted(&self) -> (Vec<MessageId>, Vec<MessageId>) {
        let mut a = self.acked.lock().unwrap().clone();
        let mut f = self.failed.lock().unwrap().clone();
        a.sort();
        f.sort();
        (a, f)
    }
}

/// Runs `plan` on a helper thread; fails the test if it does not finish in `limit` (deadlock).
fn run_with_watchdog(plan: Plan, options: ShellOptions, limit: Duration) -> RunReport {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(run(&plan, &options));
    });
    rx.recv_timeout(limit)
        .expect("the run finished (no deadlock)")
        .expect("the run succeeded")
}

struct SlowIdentity {
    slept: Arc<AtomicU64>,
}
impl BasicBolt for SlowIdentity {
    fn execute(
        &mut self,
        input: &Input,
        c: &mut BasicOutputCollector<'_, '_>,
    ) -> Result<(), FailedException> {
        if input.values()[0].as_int().unwrap_or(0) % 16 == 0 {
            std::thread::sleep(Duration::from_micros(200));
            self.slept.fetch_add(1, Ordering::Relaxed);
        }
        let v = input.values()[0].clone();
        c.emit(values![v]).unwrap();
        Ok(())
    }
}

struct Null;
impl BasicBolt for Null {
    fn execute(
        &mut self,
        _input: &Input,
        _c: &mut BasicOutputCollector<'_, '_>,
    ) -> Result<(), FailedException> {
        Ok(())
    }
}

#[test]
fn minimal_rings_and_slow_bolt_finish_with_every_tuple_acked() {
    let n = 4000;
    let ids = SpoutIds::default();
    let slept = Arc::new(AtomicU64::new(0));
    let s2 = slept.clone();
    let mut b = TopologyBuilder::new();
    b.set_spout("spout", ids.finite(n), 2).output_fields(&["n"]);
    b.set_basic_bolt("slow", move || SlowIdentity { slept: s2.clone() }, 3)
        .shuffle_grouping("spout")
        .output_fields(&["n"]);
    b.set_basic_bolt("null", || Null, 2)
        .fields_grouping("slow", &["n"]);
    let plan = b
        .build()
        .unwrap()
        .plan(&Config {
            num_ackers: 2,
            ..Config::default()
        })
        .unwrap();
    let report = run_with_watchdog(
        plan,
        ShellOptions {
            cores: Some(2),
            ring_capacity: 1,
            batch: 1,
            ..ShellOptions::default()
        },
        Duration::from_secs(60),
    );
    let (a, f) = ids.sorted();
    // Two spout tasks each emit 0..n.
    let mut want: Vec<u64> = (0..n).chain(0..n).collect();
    want.sort();
    assert_eq!(a, want, "every tuple acked exactly once");
    assert!(f.is_empty());
    let s = report.spout_totals();
    assert_eq!(
        (s.acked, s.failed, s.timed_out, s.ignored),
        (2 * n, 0, 0, 0)
    );
    assert_eq!(report.components["slow"].executed, 2 * n);
    assert_eq!(report.components["null"].executed, 2 * n);
    assert_eq!(report.components["null"].acked, 2 * n);
    assert_eq!(report.components["__acker"].acked, 2 * n);
    assert_eq!(report.undecided_roots, 0);
    assert_eq!(report.complete_latency_ns.len(), 2 * n);
    assert!(slept.load(Ordering::Relaxed) >= 2 * n / 16);
}

struct Filter {
    anchored: bool,
}
impl Bolt for Filter {
    fn execute(&mut self, input: Input, c: &mut OutputCollector<'_>) {
        let v = input.values()[0].clone();
        let anchors: &[&Input] = if self.anchored { &[&input] } else { &[] };
        c.emit(anchors, values![v]).unwrap();
        c.ack(input).unwrap();
    }
}
struct Compute;
impl Bolt for Compute {
    fn execute(&mut self, input: Input, c: &mut OutputCollector<'_>) {
        c.fail(input).unwrap();
    }
}

fn filter_compute(anchored: bool) -> (Vec<MessageId>, Vec<MessageId>, RunReport) {
    let n = 500;
    let ids = SpoutIds::default();
    let mut b = TopologyBuilder::new();
    b.set_spout("spout", ids.finite(n), 1).output_fields(&["n"]);
    b.set_bolt("filter", move || Filter { anchored }, 2)
        .shuffle_grouping("spout")
        .output_fields(&["n"]);
    b.set_bolt("compute", || Compute, 2)
        .shuffle_grouping("filter");
    let plan = b.build().unwrap().plan(&Config::default()).unwrap();
    let report = run_with_watchdog(
        plan,
        ShellOptions {
            cores: Some(2),
            ..ShellOptions::default()
        },
        Duration::from_secs(60),
    );
    let (a, f) = ids.sorted();
    (a, f, report)
}

#[test]
fn filter_acks_and_emits_unanchored_so_roots_complete() {
    let (a, f, r) = filter_compute(false);
    assert_eq!(a, (0..500).collect::<Vec<_>>());
    assert!(f.is_empty());
    assert_eq!(r.components["compute"].failed, 500);
    assert_eq!(r.spout_totals().ignored, 0);
}

#[test]
fn filter_emits_anchored_so_every_root_fails_once() {
    let (a, f, r) = filter_compute(true);
    assert!(a.is_empty());
    assert_eq!(f, (0..500).collect::<Vec<_>>());
    assert_eq!(r.spout_totals().failed, 500);
    assert_eq!(r.components["__acker"].failed, 500);
    assert_eq!(r.spout_totals().ignored, 0);
}

/// Never acks.
struct BlackHole {
    held: Vec<Input>,
}
impl Bolt for BlackHole {
    fn execute(&mut self, input: Input, _c: &mut OutputCollector<'_>) {
        self.held.push(input);
    }
}

#[test]
fn drain_waits_for_timeouts_driven_by_real_clock_ticks() {
    let ids = SpoutIds::default();
    let mut b = TopologyBuilder::new();
    b.set_spout("spout", ids.finite(50), 1)
        .output_fields(&["n"]);
    b.set_bolt("hole", || BlackHole { held: Vec::new() }, 1)
        .shuffle_grouping("spout");
    let plan = b
        .build()
        .unwrap()
        .plan(&Config {
            message_timeout_ns: 100_000_000,
            tick_interval_ns: 10_000_000,
            ..Config::default()
        })
        .unwrap();
    let report = run_with_watchdog(
        plan,
        ShellOptions {
            cores: Some(2),
            ..ShellOptions::default()
        },
        Duration::from_secs(30),
    );
    let s = report.spout_totals();
    assert_eq!((s.acked, s.failed, s.timed_out), (0, 0, 50));
    assert_eq!(ids.sorted().1.len(), 50);
    assert!(report.elapsed >= Duration::from_millis(100), "T at least");
}

#[test]
fn one_core_and_more_threads_than_cores_both_work() {
    for cores in [1, 3] {
        let ids = SpoutIds::default();
        let mut b = TopologyBuilder::new();
        b.set_spout("spout", ids.finite(1000), 1)
            .output_fields(&["n"]);
        b.set_basic_bolt("null", || Null, 2)
            .shuffle_grouping("spout");
        let plan = b.build().unwrap().plan(&Config::default()).unwrap();
        let report = run_with_watchdog(
            plan,
            ShellOptions {
                cores: Some(cores),
                ..ShellOptions::default()
            },
            Duration::from_secs(30),
        );
        assert_eq!(report.cores, cores);
        assert_eq!(report.kind_totals(TaskKind::Spout).acked, 1000);
        assert_eq!(ids.sorted().0.len(), 1000);
    }
}

/// A spout of one tracked tuple and nothing else.
fn one_tree_plan() -> Plan {
    let mut b = TopologyBuilder::new();
    b.set_spout(
        "spout",
        || Finite::new(1, &Arc::default(), &Arc::default()),
        1,
    )
    .output_fields(&["n"]);
    b.build().unwrap().plan(&Config::default()).unwrap()
}

#[test]
fn bad_options_are_errors() {
    let plan = one_tree_plan();
    // The affinity set's CPUs, as the shell counts them.
    let cpus = core_affinity::get_core_ids().map_or(1, |v| v.len()).max(1);
    let per_cpu = acker_runtime::shell::MAX_CORES_PER_CPU;
    for o in [
        ShellOptions {
            cores: Some(0),
            ..ShellOptions::default()
        },
        ShellOptions {
            ring_capacity: 0,
            ..ShellOptions::default()
        },
        ShellOptions {
            batch: 0,
            ..ShellOptions::default()
        },
        // New-user trial: 1000 cores were accepted, and memory grows with the square of the
        // count (four rings per ordered pair of threads): 300 aborted under a `ulimit -v`.
        ShellOptions {
            cores: Some(per_cpu * cpus + 1),
            ..ShellOptions::default()
        },
        ShellOptions {
            ring_capacity: acker_runtime::shell::MAX_RING_CAPACITY + 1,
            ..ShellOptions::default()
        },
        ShellOptions {
            ring_capacity: usize::MAX,
            ..ShellOptions::default()
        },
    ] {
        let r = run(&plan, &o);
        assert!(
            matches!(r, Err(acker_runtime::shell::ShellError::BadOptions(_))),
            "{o:?}: {r:?}"
        );
    }
    // At the bound: runs (the threads then share the CPUs).
    let report = common::run_bounded(
        &plan,
        &ShellOptions {
            cores: Some(per_cpu * cpus),
            ..ShellOptions::default()
        },
        Duration::from_secs(60),
        "a run on 4 x the CPUs",
    );
    assert_eq!(report.cores, per_cpu * cpus);
    assert_eq!(report.spout_totals().acked, 1);
}

/// New-user trial: `advance(u64::MAX)` twice overflowed the local shell's clock (a panic in
/// debug builds, a clock running backwards in release ones). It stops at `u64::MAX`.
#[test]
fn the_local_shells_clock_stops_at_its_end_instead_of_wrapping() {
    let plan = one_tree_plan();
    let mut sh = acker_runtime::local::LocalShell::new(&plan).unwrap();
    sh.advance(u64::MAX - 5);
    assert_eq!(sh.now_ns(), u64::MAX - 5);
    sh.advance(u64::MAX);
    assert_eq!(sh.now_ns(), u64::MAX);
    sh.advance(1);
    assert_eq!(sh.now_ns(), u64::MAX);
}

struct Panicky;
impl BasicBolt for Panicky {
    fn execute(
        &mut self,
        input: &Input,
        _c: &mut BasicOutputCollector<'_, '_>,
    ) -> Result<(), FailedException> {
        if input.values()[0].as_int() == Some(100) {
            panic!("bolt bug at 100");
        }
        Ok(())
    }
}

#[test]
fn a_panicking_bolt_ends_the_run_with_an_error() {
    let mut b = TopologyBuilder::new();
    b.set_spout(
        "spout",
        || Finite::new(1_000_000, &Arc::default(), &Arc::default()),
        1,
    )
    .output_fields(&["n"]);
    b.set_basic_bolt("panicky", || Panicky, 1)
        .shuffle_grouping("spout");
    let plan = b.build().unwrap().plan(&Config::default()).unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(run(
            &plan,
            &ShellOptions {
                cores: Some(2),
                ..ShellOptions::default()
            },
        ));
    });
    let r = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the run ended");
    match r {
        Err(acker_runtime::shell::ShellError::Panicked(m)) => {
            assert!(m.contains("bolt bug at 100"))
        }
        other => panic!("expected a panic error, got {other:?}"),
    }
}

/// Echoes every input back to itself, unanchored, forever (a cycle that never goes quiet).
struct Echo;
impl Bolt for Echo {
    fn execute(&mut self, input: Input, c: &mut OutputCollector<'_>) {
        let v = input.values()[0].clone();
        c.emit(&[], values![v]).unwrap();
        c.ack(input).unwrap();
    }
}

#[test]
fn a_topology_that_never_goes_quiet_stops_at_the_drain_timeout() {
    let mut b = TopologyBuilder::new();
    b.set_spout(
        "spout",
        || Finite::new(10, &Arc::default(), &Arc::default()),
        1,
    )
    .output_fields(&["n"]);
    b.set_bolt("echo", || Echo, 2)
        .shuffle_grouping("spout")
        .shuffle_grouping("echo")
        .output_fields(&["n"]);
    let plan = b.build().unwrap().plan(&Config::default()).unwrap();
    let report = run_with_watchdog(
        plan,
        ShellOptions {
            cores: Some(2),
            max_duration: Some(Duration::from_millis(100)),
            drain_timeout: Some(Duration::from_millis(200)),
            ..ShellOptions::default()
        },
        Duration::from_secs(30),
    );
    // The spout's trees completed (the echo emits unanchored); the echo loop was cut off.
    assert_eq!(report.spout_totals().acked, 10);
    assert!(report.components["echo"].executed > 10);
}

struct BadPrepare;
impl BasicBolt for BadPrepare {
    fn prepare(&mut self, _c: &acker_runtime::TopologyContext) {
        panic!("cannot prepare");
    }
    fn execute(
        &mut self,
        _input: &Input,
        _c: &mut BasicOutputCollector<'_, '_>,
    ) -> Result<(), FailedException> {
        Ok(())
    }
}

#[test]
fn a_panic_in_prepare_ends_the_run_with_an_error() {
    let mut b = TopologyBuilder::new();
    b.set_spout(
        "spout",
        || Finite::new(1_000_000, &Arc::default(), &Arc::default()),
        1,
    )
    .output_fields(&["n"]);
    b.set_basic_bolt("bad", || BadPrepare, 1)
        .shuffle_grouping("spout");
    let plan = b.build().unwrap().plan(&Config::default()).unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(run(
            &plan,
            &ShellOptions {
                cores: Some(2),
                ..ShellOptions::default()
            },
        ));
    });
    match rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the run ended")
    {
        Err(acker_runtime::shell::ShellError::Panicked(m)) => assert!(m.contains("cannot prepare")),
        other => panic!("expected a panic error, got {other:?}"),
    }
}

/// An acker table far smaller than max spout pending: the acker parks what the full table
/// refuses and applies it as trees complete, so every tree completes and nothing is dropped or
/// timed out. The first spout batch sends 256 inits through one ring ahead of any ack from the
/// null bolt (which shares the spout's thread), so the 16-root table must park.
#[test]
fn small_acker_table_parks_and_every_tree_completes() {
    let n = 5000;
    let ids = SpoutIds::default();
    let mut b = TopologyBuilder::new();
    b.set_spout("spout", ids.finite(n), 1).output_fields(&["n"]);
    b.set_basic_bolt(
        "identity",
        || SlowIdentity {
            slept: Arc::new(AtomicU64::new(0)),
        },
        1,
    )
    .shuffle_grouping("spout")
    .output_fields(&["n"]);
    b.set_basic_bolt("null", || Null, 1)
        .shuffle_grouping("identity");
    let plan = b
        .build()
        .unwrap()
        .plan(&Config {
            num_ackers: 1,
            max_spout_pending: Some(256),
            acker_capacity_roots: Some(16),
            message_timeout_ns: 10_000_000_000,
            ..Config::default()
        })
        .unwrap()
        .with_acker_park_capacity(1024);
    let report = run_with_watchdog(
        plan,
        ShellOptions {
            cores: Some(2),
            batch: 256,
            ..ShellOptions::default()
        },
        Duration::from_secs(60),
    );
    let s = report.spout_totals();
    assert_eq!((s.acked, s.failed, s.timed_out), (n, 0, 0));
    let a = report.kind_totals(TaskKind::Acker);
    assert_eq!((a.acked, a.dropped_full, a.errors), (n, 0, 0));
    assert!(a.parked >= 256 - 16, "parked {}", a.parked);
    assert_eq!(report.undecided_roots, 0);
    assert_eq!(ids.sorted().0, (0..n).collect::<Vec<_>>());
}

/// Emits one tracked tuple, then sleeps 1 s in every later `next_tuple` until it is acked.
struct SleepySpout {
    emitted: bool,
    acked: bool,
    sleeps: Arc<AtomicU64>,
}
impl Spout for SleepySpout {
    fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
        if !self.emitted {
            c.emit(values![1], Some(1)).unwrap();
            self.emitted = true;
        } else {
            std::thread::sleep(Duration::from_secs(1));
            self.sleeps.fetch_add(1, Ordering::Relaxed);
        }
    }
    fn ack(&mut self, _id: MessageId) {
        self.acked = true;
    }
    fn is_done(&self) -> bool {
        self.acked
    }
}

/// The case: the tree completes within milliseconds while the spout's thread sleeps in
/// user code; before the fix the complete latency read about 1,000 ms (it ran until the spout's
/// thread was free to take the notice).
#[test]
fn complete_latency_excludes_the_spouts_own_busy_time() {
    let sleeps = Arc::new(AtomicU64::new(0));
    let s2 = sleeps.clone();
    let mut b = TopologyBuilder::new();
    b.set_spout(
        "sleepy",
        move || SleepySpout {
            emitted: false,
            acked: false,
            sleeps: s2.clone(),
        },
        1,
    )
    .output_fields(&["n"]);
    b.set_basic_bolt("null", || Null, 1)
        .shuffle_grouping("sleepy");
    let plan = b.build().unwrap().plan(&Config::default()).unwrap();
    // Tasks 0 (spout), 1 (bolt), 2 (acker) on threads 0, 1, 2: the acker does not share the
    // spout's thread.
    let report = run_with_watchdog(
        plan,
        ShellOptions {
            cores: Some(3),
            pin_threads: false,
            ..ShellOptions::default()
        },
        Duration::from_secs(60),
    );
    assert!(sleeps.load(Ordering::Relaxed) >= 1, "the spout slept");
    assert!(report.elapsed >= Duration::from_secs(1));
    let h = &report.complete_latency_ns;
    assert_eq!((h.len(), report.spout_totals().acked), (1, 1));
    assert!(
        h.max() < 500_000_000,
        "complete latency {} ms includes the spout's sleep",
        h.max() as f64 / 1e6
    );
}

/// Splits each input into `words` tuples, all anchored to it, then acks it (as word count's
/// split bolt does).
struct SplitInto {
    words: i64,
}
impl Bolt for SplitInto {
    fn execute(&mut self, input: Input, c: &mut OutputCollector<'_>) {
        let line = input.values()[0].as_int().unwrap_or(-1);
        for w in 0..self.words {
            c.emit(&[&input], values![line, w]).unwrap();
        }
        c.ack(input).unwrap();
    }
}

/// Acks every word tuple, except that it fails word 2 of every line whose number is a multiple
/// of 5 (and still acks the line's later words).
struct AckWordsFailSome;
impl Bolt for AckWordsFailSome {
    fn execute(&mut self, input: Input, c: &mut OutputCollector<'_>) {
        let line = input.values()[0].as_int().unwrap_or(-1);
        let word = input.values()[1].as_int().unwrap_or(-1);
        if line % 5 == 0 && word == 2 {
            c.fail(input).unwrap();
        } else {
            c.ack(input).unwrap();
        }
    }
}

/// Runs `n` lines of 6 words each through split → count on `cores` threads (one count task, so
/// the acks of a line's words are sent in a row); returns (acked ids, failed ids, report).
fn split_and_ack(n: u64, cores: usize) -> (Vec<MessageId>, Vec<MessageId>, RunReport) {
    let ids = SpoutIds::default();
    let mut b = TopologyBuilder::new();
    b.set_spout("spout", ids.finite(n), 1)
        .output_fields(&["line"]);
    b.set_bolt("split", || SplitInto { words: 6 }, 1)
        .shuffle_grouping("spout")
        .output_fields(&["line", "word"]);
    b.set_bolt("count", || AckWordsFailSome, 1)
        .shuffle_grouping("split");
    let plan = b
        .build()
        .unwrap()
        .plan(&Config {
            // A lost or wrongly merged ack shows as a timeout within the watchdog's limit.
            message_timeout_ns: 5_000_000_000,
            ..Config::default()
        })
        .unwrap();
    let report = run_with_watchdog(
        plan,
        ShellOptions {
            cores: Some(cores),
            ..ShellOptions::default()
        },
        Duration::from_secs(60),
    );
    let (a, f) = ids.sorted();
    (a, f, report)
}

/// Ack coalescing in the shell's acker batches: the count bolt's acks of one line's words reach
/// the acker as far fewer messages than acks sent, and every decision is the one a message per
/// ack gives (lines with a failed word fail, the rest complete, each exactly once).
#[test]
fn a_bolts_acks_of_one_root_in_a_row_are_coalesced_and_decide_the_same() {
    let n = 2000;
    for cores in [1, 2] {
        let (a, f, r) = split_and_ack(n, cores);
        assert_eq!(a, (0..n).filter(|i| i % 5 != 0).collect::<Vec<_>>());
        assert_eq!(f, (0..n).filter(|i| i % 5 == 0).collect::<Vec<_>>());
        let acker = r.components["__acker"];
        assert_eq!(
            (acker.acked, acker.failed),
            (n * 4 / 5, n / 5),
            "{cores} cores"
        );
        assert_eq!(r.components["count"].acked, 6 * n - n / 5);
        assert_eq!(r.components["count"].failed, n / 5);
        let s = r.spout_totals();
        assert_eq!(
            (s.acked, s.failed, s.timed_out, s.ignored),
            (n * 4 / 5, n / 5, 0, 0)
        );
        assert_eq!(r.undecided_roots, 0);
        // One message per ack would be 8 a line (init, the split's ack, 6 word acks); coalesced,
        // a line's word acks become one message (three where a fail sits between them), plus
        // one more where a batch of 8 messages is shipped in the middle of a line.
        // On one thread a loop turn takes a whole chunk of words (7 206 messages in every run
        // seen); on two the turns depend on the other thread's pace, so only "fewer" is sure.
        let bound = if cores == 1 { 4 * n } else { 8 * n };
        assert!(
            acker.executed < bound,
            "{cores} cores: the acker applied {} messages for {n} lines (8 a line uncoalesced)",
            acker.executed
        );
    }
}

/// Sleeps `ms` in every input, then acks it (the adapter's automatic ack).
struct SleepThenAck {
    ms: u64,
}
impl BasicBolt for SleepThenAck {
    fn execute(
        &mut self,
        _input: &Input,
        _c: &mut BasicOutputCollector<'_, '_>,
    ) -> Result<(), FailedException> {
        std::thread::sleep(Duration::from_millis(self.ms));
        Ok(())
    }
}

/// Notices reach the spout with their send time, whether the acker hands them over directly (one
/// thread: no local FIFO, the loop turn's clock) or ships them in batches to another thread (three
/// threads: spout, bolt and acker apart): every tree is acked once, with its own id, and its
/// complete latency covers the bolt's sleep for it (a notice stamped with a stale or zero clock
/// would read ~0).
#[test]
fn notices_reach_the_spout_with_their_send_time_locally_and_in_batches() {
    let n = 12;
    for cores in [1, 3] {
        let ids = SpoutIds::default();
        let mut b = TopologyBuilder::new();
        b.set_spout("spout", ids.finite(n), 1).output_fields(&["n"]);
        b.set_basic_bolt("sleep", || SleepThenAck { ms: 2 }, 1)
            .shuffle_grouping("spout");
        let plan = b.build().unwrap().plan(&Config::default()).unwrap();
        let report = run_with_watchdog(
            plan,
            ShellOptions {
                cores: Some(cores),
                pin_threads: false,
                ..ShellOptions::default()
            },
            Duration::from_secs(60),
        );
        let (a, f) = ids.sorted();
        assert_eq!(a, (0..n).collect::<Vec<_>>(), "{cores} cores");
        assert!(f.is_empty(), "{cores} cores");
        let s = report.spout_totals();
        assert_eq!(
            (s.acked, s.failed, s.timed_out, s.ignored),
            (n, 0, 0, 0),
            "{cores} cores"
        );
        let h = &report.complete_latency_ns;
        assert_eq!(h.len(), n, "{cores} cores");
        assert!(
            h.min() >= 2_000_000,
            "{cores} cores: a tree's complete latency {} µs is shorter than the bolt's 2 ms sleep for it",
            h.min() as f64 / 1e3
        );
    }
}

/// Re-emits three tuples an input `n`, `1_000_000 + 3 n + k` for `k` in 0..3, anchored.
struct FanOutThree;
impl BasicBolt for FanOutThree {
    fn execute(
        &mut self,
        input: &Input,
        c: &mut BasicOutputCollector<'_, '_>,
    ) -> Result<(), FailedException> {
        let n = input.values()[0].as_int().unwrap_or(0);
        for k in 0..3 {
            c.emit(values![1_000_000 + 3 * n + k]).unwrap();
        }
        Ok(())
    }
}

/// Records the first value of every input, in arrival order.
struct Record(Arc<Mutex<Vec<i64>>>);
impl BasicBolt for Record {
    fn execute(
        &mut self,
        input: &Input,
        _c: &mut BasicOutputCollector<'_, '_>,
    ) -> Result<(), FailedException> {
        let v = input.values()[0].as_int().unwrap_or(-1);
        self.0.lock().unwrap().push(v);
        Ok(())
    }
}

/// On one thread every tuple goes through the thread's local data FIFO (the collectors write
/// it: `Outbox::split_off_local_tuples`). With `batch: 1` a local drain delivers at most 4
/// tuples, so tuples are left over for the next turn while the ones delivered send more: the
/// sink, fed by the spout and by the fan-out bolt, still sees the FIFO's order: each source's
/// tuples in sending order, and the spout's `n` before the fan-out's three of `n` (sent
/// together, the spout's copy for the sink went in before the fan-out bolt even got `n`).
#[test]
fn local_tuples_over_the_turn_limit_keep_their_order() {
    let n = 300;
    let ids = SpoutIds::default();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let mut b = TopologyBuilder::new();
    b.set_spout("spout", ids.finite(n), 1).output_fields(&["n"]);
    b.set_basic_bolt("fan", || FanOutThree, 1)
        .shuffle_grouping("spout")
        .output_fields(&["n"]);
    b.set_basic_bolt("sink", move || Record(s2.clone()), 1)
        .shuffle_grouping("spout")
        .shuffle_grouping("fan");
    let plan = b.build().unwrap().plan(&Config::default()).unwrap();
    let report = run_with_watchdog(
        plan,
        ShellOptions {
            cores: Some(1),
            batch: 1,
            ..ShellOptions::default()
        },
        Duration::from_secs(60),
    );
    let seen = seen.lock().unwrap();
    let direct: Vec<i64> = seen.iter().copied().filter(|&v| v < 1_000_000).collect();
    let fanned: Vec<i64> = seen.iter().copied().filter(|&v| v >= 1_000_000).collect();
    assert_eq!(
        direct,
        (0..n as i64).collect::<Vec<_>>(),
        "the spout's, in order"
    );
    let want: Vec<i64> = (0..3 * n as i64).map(|v| 1_000_000 + v).collect();
    assert_eq!(fanned, want, "the fan-out bolt's, in order");
    for (at, &v) in seen.iter().enumerate() {
        if v >= 1_000_000 {
            let from = (v - 1_000_000) / 3;
            assert!(
                seen[..at].contains(&from),
                "the fan-out's {v} (of {from}) came before the spout's {from}"
            );
        }
    }
    assert_eq!(report.kind_totals(TaskKind::Spout).acked, n);
    assert_eq!(report.undecided_roots, 0);
}

/// Emits `n` tuples for its one input (anchored), each its index.
struct FanOutMany(i64);
impl BasicBolt for FanOutMany {
    fn execute(
        &mut self,
        _input: &Input,
        c: &mut BasicOutputCollector<'_, '_>,
    ) -> Result<(), FailedException> {
        for k in 0..self.0 {
            c.emit(values![k]).unwrap();
        }
        Ok(())
    }
}

/// Counts its inputs and checks they arrive in emitting order: `0..per_input` for each input
/// of [`FanOutMany`] in turn.
struct CountInOrder {
    next: i64,
    per_input: i64,
    seen: Arc<AtomicU64>,
}
impl BasicBolt for CountInOrder {
    fn execute(
        &mut self,
        input: &Input,
        _c: &mut BasicOutputCollector<'_, '_>,
    ) -> Result<(), FailedException> {
        let v = input.values()[0].as_int().unwrap_or(-1);
        assert_eq!(v, self.next % self.per_input, "local tuples out of order");
        self.next += 1;
        self.seen.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// A bolt that emits far more tuples for one input than a turn delivers (the word count's
/// split bolt on a 64 KiB piece) fills this thread's local FIFO with them at once. They are
/// delivered a turn's limit at a time from the FIFO's head, each once. A FIFO that shifted or
/// copied what was left every turn took time quadratic in the list: 500,000 tuples of 128 bytes
/// at 64 a turn (`batch: 16`) moved about 500 GB, minutes (the watchdog's 60 s fails it), where
/// delivering them takes about a second.
#[test]
fn a_long_local_fifo_is_delivered_in_linear_time() {
    let per_input = 500_000;
    let ids = SpoutIds::default();
    let seen = Arc::new(AtomicU64::new(0));
    let s2 = seen.clone();
    let mut b = TopologyBuilder::new();
    b.set_spout("spout", ids.finite(2), 1).output_fields(&["n"]);
    b.set_basic_bolt("fan", move || FanOutMany(per_input), 1)
        .shuffle_grouping("spout")
        .output_fields(&["k"]);
    b.set_basic_bolt(
        "sink",
        move || CountInOrder {
            next: 0,
            per_input,
            seen: s2.clone(),
        },
        1,
    )
    .shuffle_grouping("fan");
    let plan = b.build().unwrap().plan(&Config::default()).unwrap();
    let started = std::time::Instant::now();
    let report = run_with_watchdog(
        plan,
        ShellOptions {
            cores: Some(1),
            batch: 16,
            ..ShellOptions::default()
        },
        Duration::from_secs(60),
    );
    let took = started.elapsed();
    assert_eq!(seen.load(Ordering::Relaxed), 2 * per_input as u64);
    assert_eq!(report.kind_totals(TaskKind::Spout).acked, 2);
    assert_eq!(report.undecided_roots, 0);
    assert!(
        took < Duration::from_secs(15),
        "1,000,000 local tuples took {took:?} (linear delivery takes well under a second)"
    );
}

/// The benchmark pipeline (spout → identity → null, one acker) on two threads: the spout and the
/// null bolt on thread 0, the identity bolt and the acker on thread 1. So each tree's init
/// crosses threads as a control envelope and joins the acker's local list, the identity bolt's
/// ack goes into that list directly, and the null bolt's ack (its only message) goes into an
/// acker batch without the whole route. Every tree completes, once, and the acker applies
/// exactly three messages a tree (an init and two acks of different sources never merge).
#[test]
fn the_pipeline_on_two_threads_applies_three_messages_a_tree_and_completes_each_once() {
    let n = 20_000;
    let ids = SpoutIds::default();
    let mut b = TopologyBuilder::new();
    b.set_spout("spout", ids.finite(n), 1).output_fields(&["n"]);
    b.set_basic_bolt("identity", || acker_runtime::bolts::IdentityBolt, 1)
        .shuffle_grouping("spout")
        .output_fields(&["n"]);
    b.set_basic_bolt("null", || acker_runtime::bolts::NullBolt, 1)
        .shuffle_grouping("identity");
    let plan = b
        .build()
        .unwrap()
        .plan(&Config {
            num_ackers: 1,
            // A lost init or ack shows as a timeout within the watchdog's limit.
            message_timeout_ns: 5_000_000_000,
            ..Config::default()
        })
        .unwrap();
    let tasks: Vec<_> = plan.tasks().iter().map(|t| (t.task, t.kind)).collect();
    assert_eq!(
        tasks,
        [
            (0, TaskKind::Spout),
            (1, TaskKind::Bolt),
            (2, TaskKind::Bolt),
            (3, TaskKind::Acker)
        ],
        "task t runs on thread t % 2: the acker shares the identity bolt's thread"
    );
    let report = run_with_watchdog(
        plan,
        ShellOptions {
            cores: Some(2),
            pin_threads: false,
            ..ShellOptions::default()
        },
        Duration::from_secs(60),
    );
    let (acked, failed) = ids.sorted();
    assert_eq!(acked, (0..n).collect::<Vec<_>>());
    assert!(failed.is_empty());
    let s = report.spout_totals();
    assert_eq!((s.acked, s.failed, s.timed_out, s.ignored), (n, 0, 0, 0));
    let a = report.kind_totals(TaskKind::Acker);
    assert_eq!(
        (a.executed, a.acked, a.failed, a.errors, a.ignored),
        (3 * n, n, 0, 0, 0)
    );
    assert_eq!(report.components["null"].acked, n);
    assert_eq!(report.undecided_roots, 0);
}
