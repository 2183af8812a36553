//! A run whose simulated clock stops advancing ends anyway (new-user trial 5: with every service
//! time and latency at 0 and a spout that never finishes, `Simulation::run` never returned, even
//! with `time_limit_ns: Some(1 ms)`, since the clock never reached the limit). The run now stops
//! after `SimOptions::max_events_per_instant` events at one instant and reports
//! `Violation::TimeStalled`; a finite run at zero times still finishes clean.
//!
//! Every run here goes through [`within`]: a regression fails the test after 30 s instead of
//! hanging it.

#[path = "../../runtime/tests/common/mod.rs"]
mod common;
use common::BoundedOutput;

use acker_runtime::{
    bolts::NullBolt, values, Config, Spout, SpoutOutputCollector, Topology, TopologyBuilder,
};
use acker_sim::{
    engine::{events_per_instant_limit, EVENTS_PER_INSTANT_PER_EMIT, MIN_EVENTS_PER_INSTANT},
    Guarantee, Outcome, RunError, Scenario, Sim, SimOptions, Simulation, Unfinished, Violation,
};
use std::sync::mpsc;
use std::time::Duration;

/// Runs `f` on its own thread and returns its result, or fails the test if it has not finished
/// within 30 s (generous: each run here takes well under a second).
fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(v) => v,
        Err(e) => panic!("{what}: the simulation did not return within 30 s ({e})"),
    }
}

/// Emits `n`, tracked with message id `n`, for n = 1, 2, ... and never finishes.
struct Forever(u64);

impl Spout for Forever {
    fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
        self.0 += 1;
        let _ = c.emit(values![self.0 as i64], Some(self.0));
    }
}

/// Emits `limit` untracked tuples (no message id: no max spout pending applies), then is done.
struct Untracked {
    sent: u64,
    limit: u64,
}

impl Spout for Untracked {
    fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
        if self.sent < self.limit {
            self.sent += 1;
            let _ = c.emit(values![self.sent as i64], None);
        }
    }
    fn is_done(&self) -> bool {
        self.sent >= self.limit
    }
}

fn forever_topology() -> Topology {
    let mut b = TopologyBuilder::new();
    b.set_spout("s", || Forever(0), 1).output_fields(&["n"]);
    b.set_basic_bolt("p", || NullBolt, 2).shuffle_grouping("s");
    b.build().expect("topology")
}

fn config() -> Config {
    Config {
        message_timeout_ns: 1_000_000_000,
        max_spout_pending: Some(10),
        ..Config::default()
    }
}

/// Every service time and latency 0.
fn zero_times(seed: u64) -> SimOptions {
    let mut o = SimOptions::new(seed);
    o.spout_ns = 0;
    o.bolt_ns = 0;
    o.acker_ns = 0;
    o.latency_min_ns = 0;
    o.latency_max_ns = 0;
    o.local_latency_ns = 0;
    // The endless spout's emits are not bounded by an input: without this the replay limit
    // (`max_replays`, 100,000 emits past the input) would stop it first, with
    // `RunError::TooManyReplays`; these tests are about the events-per-instant cap.
    o.max_replays = Some(u64::MAX);
    o
}

fn the_stall(o: &Outcome) -> (u64, u64) {
    match o.violations.as_slice() {
        [v @ Violation::TimeStalled {
            at_ns,
            events,
            unfinished,
            ..
        }] => {
            // A user topology: what is left is its tracked emits, not offsets (new-user trial).
            assert_eq!(*unfinished, Unfinished::EmitsUndecided, "{v}");
            assert!(v.to_string().contains("tracked emits undecided)"), "{v}");
            (*at_ns, *events)
        }
        v => panic!("expected one time-stalled violation, got {v:?}"),
    }
}

/// The trial's case: zero times, a spout that never finishes, max spout pending 10 and a time
/// limit of 1 ms, which the clock never reaches.
#[test]
fn zero_times_and_an_endless_spout_stop_at_the_events_per_instant_cap() {
    let mut opts = zero_times(1);
    opts.time_limit_ns = Some(1_000_000);
    let expected_cap = MIN_EVENTS_PER_INSTANT + EVENTS_PER_INSTANT_PER_EMIT * opts.input_len;
    assert_eq!(events_per_instant_limit(&opts), expected_cap);
    assert_eq!(expected_cap, 1_256_000);
    let o = within("zero times, time limit 1 ms", move || {
        Simulation::new(&forever_topology(), &config(), opts).run()
    })
    .expect("run");
    assert_eq!(the_stall(&o), (0, 1_256_000));
    assert_eq!(o.violations[0].class(), "time-stalled");
    let text = o.violations[0].to_string();
    assert!(
        text.starts_with("liveness: simulated time stopped advancing at 0 ns: 1256000 events")
            && text.contains("max_events_per_instant")
            && text.contains("spout_ns, bolt_ns, acker_ns"),
        "{text}"
    );
    assert_eq!(o.end_ns, 0);
    // Trees were completed at that instant, up to 10 at a time: the run did work, then stopped.
    assert!(o.spout.acked > 100_000, "{:?}", o.spout);
    assert!(o.delivered > 500_000, "{}", o.delivered);
}

/// The same with the derived time limit, and with a cap given: it is obeyed exactly, and the
/// same seed stops at the same place (the same trace hash).
#[test]
fn the_cap_holds_without_a_time_limit_and_as_given() {
    let o = within("zero times, derived time limit", || {
        Simulation::new(&forever_topology(), &config(), zero_times(2)).run()
    })
    .expect("run");
    assert_eq!(the_stall(&o), (0, 1_256_000));
    let run = || {
        let mut opts = zero_times(3);
        opts.max_events_per_instant = Some(5_000);
        within("zero times, cap 5000", move || {
            Simulation::new(&forever_topology(), &config(), opts).run()
        })
        .expect("run")
    };
    let (a, b) = (run(), run());
    assert_eq!(the_stall(&a), (0, 5_000));
    assert_eq!(a.trace_hash, b.trace_hash);
    assert_eq!(a.events, b.events);
}

/// Another zero-duration loop: only the spout's time is 0 (links take 50 to 150 µs), and the
/// spout emits untracked tuples, which max spout pending does not hold back, so it emits on at
/// one instant. (The spout stops after 1,000,000 emits, so that a regression ends, with an `ok`
/// outcome the test rejects, instead of filling memory.)
#[test]
fn a_spout_at_zero_time_emitting_untracked_tuples_stalls_too() {
    let mut b = TopologyBuilder::new();
    b.set_spout(
        "s",
        || Untracked {
            sent: 0,
            limit: 1_000_000,
        },
        1,
    )
    .output_fields(&["n"]);
    b.set_basic_bolt("p", || NullBolt, 1).shuffle_grouping("s");
    let topology = b.build().expect("topology");
    let mut opts = SimOptions::new(4);
    opts.spout_ns = 0;
    opts.max_events_per_instant = Some(10_000);
    let o = within("spout_ns 0, untracked emits", move || {
        Simulation::new(&topology, &config(), opts).run()
    })
    .expect("run");
    assert_eq!(the_stall(&o), (0, 10_000));
    assert_eq!(o.delivered, 0, "nothing crossed a link at instant 0");
}

#[test]
fn a_cap_of_zero_is_refused_naming_the_option() {
    let mut opts = zero_times(1);
    opts.max_events_per_instant = Some(0);
    let err = Simulation::new(&forever_topology(), &config(), opts)
        .run()
        .map(|_| ())
        .unwrap_err();
    assert!(matches!(err, RunError::BadOption(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "max_events_per_instant must be at least 1 (an instant with no event cannot run)"
    );
}

/// A finite run at zero times takes place at one instant, and finishes clean: the built-in
/// experiment takes 8 events a tuple there, far below the derived cap of 1,000,000 + 256 a tuple.
#[test]
fn a_finite_run_at_zero_times_still_finishes_clean() {
    for g in [
        Guarantee::AtMostOnce,
        Guarantee::AtLeastOnce,
        Guarantee::ExactlyOnce,
    ] {
        let o = within("the experiment at zero times", move || {
            let mut sc = Scenario::new(1, g);
            sc.tuples = 200_000;
            sc.spout_ns = 0;
            sc.bolt_ns = 0;
            sc.acker_ns = 0;
            sc.latency_min_ns = 0;
            sc.latency_max_ns = 0;
            sc.local_latency_ns = 0;
            Sim::run(sc, None)
        })
        .expect("run");
        assert!(o.ok(), "{g}: {:?}", o.violations);
        assert_eq!(o.end_ns, 0, "{g}");
        assert_eq!(o.distinct, 200_000, "{g}");
    }
}

/// The command line takes zero timings and finishes (its spout is finite), exit status 0.
#[test]
fn the_cli_runs_at_zero_times() {
    let o = within("acker-sim run at zero times", || {
        std::process::Command::new(env!("CARGO_BIN_EXE_acker-sim"))
            .args([
                "run",
                "--seed",
                "1",
                "--tuples",
                "100000",
                "--spout-ns",
                "0",
                "--bolt-ns",
                "0",
                "--acker-ns",
                "0",
                "--latency",
                "0..0",
                "--local-latency",
                "0",
            ])
            .bounded_output()
            .expect("run acker-sim")
    });
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("verdict: ok (every oracle held)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("events 1900001 ") && stdout.contains("simulated 0.000000 s"),
        "{stdout}"
    );
}
