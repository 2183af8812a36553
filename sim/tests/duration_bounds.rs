//! Every duration option has an upper bound, refused before anything runs, and simulated time
//! never overflows. Until 2026-12-03 `acker-sim run --seed 1 --faults 'worker-crash*1'
//! --restart-delay 18446744073709551615ns` panicked in a debug build (`attempt to add with
//! overflow` at the restart) and in release restarted the worker at once (the sum wrapped); so
//! did `--partition`, `--outage` and `--latency M..M` with such values, and a latency far above
//! the message timeout filled the memory with replays in flight (`--latency
//! 10000s..10000s`: 254 MB; `100000s..100000s`: allocation failure).
//!
//! Run in a debug build too (`cargo test -p acker-sim --test duration_bounds`): the CLI tests
//! then run the debug binary, whose arithmetic panics on overflow, at the bound.

#[path = "../../runtime/tests/common/mod.rs"]
mod common;
use common::BoundedOutput;

use acker_runtime::bolts::NullBolt;
use acker_runtime::{values, Config};
use acker_runtime::{MessageId, Spout, SpoutOutputCollector, TopologyBuilder};
use acker_sim::units::MAX_DURATION_NS;
use acker_sim::{Guarantee, RunError, Scenario, ScenarioError, Sim, SimOptions, Simulation};
use std::process::{Command, Output};

const MAX: &str = "18446744073709551615ns";

fn cli(args: &[&str]) -> Output {
    let o = Command::new(env!("CARGO_BIN_EXE_acker-sim"))
        .args(args)
        .bounded_output()
        .expect("run acker-sim");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    o
}

fn refused(args: &[&str], expected: &str) {
    let o = cli(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(expected), "{args:?}: stderr {err:?}");
    assert!(o.stdout.is_empty(), "{args:?}");
}

#[test]
fn the_overflowing_commands_are_refused_naming_the_bound() {
    let longer = |v: &str| {
        format!("`{v}` is longer than the longest duration taken, 1000000s (about 11.6 days)")
    };
    let run = ["run", "--seed", "1"];
    for (opt, faults) in [
        ("--restart-delay", "worker-crash*1"),
        ("--partition", "partition*1"),
        ("--outage", "sink-outage*1"),
    ] {
        let args = [&run[..], &["--faults", faults, opt, MAX]].concat();
        refused(&args, &longer(MAX));
    }
    let range = format!("{MAX}..{MAX}");
    refused(&[&run[..], &["--latency", &range]].concat(), &longer(MAX));
    // Just past the bound, in any unit; at most the bound is taken (below).
    refused(
        &[&run[..], &["--restart-delay", "1000001s"]].concat(),
        &longer("1000001s"),
    );
    refused(
        &[&run[..], &["--timeout", "1000000000001us"]].concat(),
        &longer("1000000000001us"),
    );
    for opt in ["--tick", "--time-limit", "--fault-until", "--local-latency"] {
        refused(
            &[&run[..], &[opt, "1000001s"]].concat(),
            &longer("1000001s"),
        );
    }
    // A fault time, too.
    refused(
        &[&run[..], &["--faults", &format!("bolt-crash@{MAX}")]].concat(),
        &format!(
            "bad fault time `{MAX}`: later than the latest fault time taken, 1000000s (about \
             11.6 days of simulated time)"
        ),
    );
}

#[test]
fn a_latency_above_the_message_timeout_is_refused_naming_both() {
    for (lat, shown) in [
        ("10000s..10000s", "10000s"),
        ("100000s..100000s", "100000s"),
    ] {
        refused(
            &["run", "--seed", "1", "--latency", lat],
            &format!(
                "the link latency (--latency) {shown} is longer than the message timeout 30s: \
                 every tree crossing such a link would time out and be replayed"
            ),
        );
    }
    refused(
        &[
            "run",
            "--seed",
            "1",
            "--local-latency",
            "2s",
            "--timeout",
            "1s",
        ],
        "the latency inside one worker (--local-latency) 2s is longer than the message timeout 1s",
    );
    // At the timeout a link is taken, but not a tree of four such links: its round trip (120 s)
    // is past the longest a spout keeps a tree pending (2T + one tick, 61 s), so every tree
    // would time out (until 2026-12-03 this ran to a liveness violation).
    refused(
        &["run", "--seed", "1", "--latency", "30s..30s"],
        "the message timeout --timeout 30s (with --tick 1s) is too short for this topology: a \
         tree crosses four links",
    );
}

/// `acker-sim run` at the longest restart delay, partition and outage (with the longest message
/// timeout, so that trees wait instead of being replayed): the crashed spout, the partition and
/// the outage last the whole 1,000,000 s, then the run finishes clean.
#[test]
fn at_the_bound_a_fault_lasts_its_whole_duration() {
    let common = [
        "run",
        "--seed",
        "1",
        "--tuples",
        "100",
        "--timeout",
        "1000000s",
        "--tick",
        "100s",
        "--trace",
        "-",
    ];
    for (faults, opt, val, line) in [
        (
            "worker-crash@#50:0",
            "--restart-delay",
            "1000000s",
            "restart task 0",
        ),
        (
            "partition@#50:0-1",
            "--partition",
            "1000000s",
            "partition 0-1 heals",
        ),
        (
            "sink-outage@#50",
            "--outage",
            "1000000s",
            "sink-outage ends",
        ),
    ] {
        let args = [&common[..], &["--faults", faults, opt, val]].concat();
        let o = cli(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
        let trace = String::from_utf8_lossy(&o.stdout);
        let fault_ns: u64 = first_time(&trace, " fault ");
        let end_ns: u64 = first_time(&trace, line);
        assert!(
            end_ns >= fault_ns + MAX_DURATION_NS,
            "{args:?}: the fault at {fault_ns} ns ended at {end_ns} ns"
        );
        // Not wrapped, nor saturated: within the run.
        assert!(end_ns < 3 * MAX_DURATION_NS, "{args:?}: {end_ns}");
        assert!(err.contains("verdict: ok"), "{args:?}: {err}");
    }
}

/// The simulated time of the first trace line containing `what`.
fn first_time(trace: &str, what: &str) -> u64 {
    let l = trace
        .lines()
        .find(|l| l.contains(what))
        .unwrap_or_else(|| panic!("no `{what}` in the trace"));
    l.split(' ').next().unwrap().parse().unwrap()
}

#[test]
fn scenarios_refuse_each_duration_past_the_bound_with_a_typed_error() {
    type Set = fn(&mut Scenario, u64);
    let fields: [(&str, Set); 11] = [
        ("the message timeout (--timeout)", |s, v| {
            s.message_timeout_ns = v
        }),
        ("the tick interval (--tick)", |s, v| s.tick_interval_ns = v),
        ("the link latency (--latency)", |s, v| {
            s.latency_min_ns = v;
            s.latency_max_ns = v
        }),
        ("the latency inside one worker (--local-latency)", |s, v| {
            s.local_latency_ns = v
        }),
        ("--spout-ns", |s, v| s.spout_ns = v),
        ("--bolt-ns", |s, v| s.bolt_ns = v),
        ("--acker-ns", |s, v| s.acker_ns = v),
        ("the restart delay (--restart-delay)", |s, v| {
            s.restart_delay_ns = v
        }),
        ("the partition duration (--partition)", |s, v| {
            s.partition_ns = v
        }),
        ("the outage duration (--outage)", |s, v| s.outage_ns = v),
        ("the time limit (--time-limit)", |s, v| {
            s.time_limit_ns = Some(v)
        }),
    ];
    for (what, set) in fields {
        for v in [MAX_DURATION_NS + 1, u64::MAX] {
            let mut sc = Scenario::new(1, Guarantee::AtLeastOnce);
            sc.message_timeout_ns = MAX_DURATION_NS;
            set(&mut sc, v);
            assert_eq!(
                sc.validate(),
                Err(ScenarioError::DurationTooLong(what, v)),
                "{what}"
            );
            match Sim::run(sc, None) {
                Err(RunError::Scenario(e)) => assert!(
                    e.to_string()
                        .contains("is longer than the longest duration taken, 1000000s"),
                    "{e}"
                ),
                other => panic!("{what}: {:?}", other.map(|o| o.violations)),
            }
        }
    }
    let mut sc = Scenario::new(1, Guarantee::AtLeastOnce);
    sc.latency_max_ns = 10_000_000_000_000;
    assert_eq!(
        sc.validate(),
        Err(ScenarioError::LatencyAboveTimeout(
            "the link latency (--latency)",
            10_000_000_000_000,
            30_000_000_000
        ))
    );
    // Every duration at the bound at once is taken (the latencies at the timeout).
    let mut sc = Scenario::new(1, Guarantee::AtLeastOnce);
    sc.message_timeout_ns = MAX_DURATION_NS;
    sc.tick_interval_ns = MAX_DURATION_NS;
    sc.latency_max_ns = MAX_DURATION_NS;
    sc.restart_delay_ns = MAX_DURATION_NS;
    sc.partition_ns = MAX_DURATION_NS;
    sc.outage_ns = MAX_DURATION_NS;
    sc.time_limit_ns = Some(MAX_DURATION_NS);
    assert_eq!(sc.validate(), Ok(()));
    assert!(sc.time_limit_ns() <= MAX_DURATION_NS);
}

/// Emits 1, 2, 3 (tracked), then is done.
struct Once(u64);
impl Spout for Once {
    fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
        if self.0 < 3 {
            self.0 += 1;
            let _ = c.emit(values![self.0 as i64], Some(self.0 as MessageId));
        }
    }
    fn is_done(&self) -> bool {
        self.0 == 3
    }
}

fn user(opts: SimOptions, config: Config) -> Result<acker_sim::Outcome, RunError> {
    let mut b = TopologyBuilder::new();
    b.set_spout("s", || Once(0), 1).output_fields(&["n"]);
    b.set_basic_bolt("b", || NullBolt, 1).shuffle_grouping("s");
    Simulation::new(&b.build().unwrap(), &config, opts).run()
}

#[test]
fn sim_options_refuse_each_duration_past_the_bound_before_running() {
    type Set = fn(&mut SimOptions, u64);
    let fields: [(&str, Set); 9] = [
        ("latency_max_ns", |o, v| o.latency_max_ns = v),
        ("local_latency_ns", |o, v| o.local_latency_ns = v),
        ("spout_ns", |o, v| o.spout_ns = v),
        ("bolt_ns", |o, v| o.bolt_ns = v),
        ("acker_ns", |o, v| o.acker_ns = v),
        ("restart_delay_ns", |o, v| o.restart_delay_ns = v),
        ("partition_ns", |o, v| o.partition_ns = v),
        ("outage_ns", |o, v| o.outage_ns = v),
        ("time_limit_ns", |o, v| o.time_limit_ns = Some(v)),
    ];
    let config = Config {
        enable_message_timeouts: false,
        ..Config::default()
    };
    for (what, set) in fields {
        let mut opts = SimOptions::new(1);
        opts.input_len = 3;
        set(&mut opts, u64::MAX);
        match user(opts, config.clone()) {
            Err(RunError::BadOption(m)) => {
                assert!(m.starts_with(what), "{what}: {m}");
                assert!(m.contains("is longer than the longest"), "{what}: {m}");
            }
            other => panic!("{what}: {:?}", other.map(|o| o.violations)),
        }
    }
    // With message timeouts on, a latency above the timeout.
    let mut opts = SimOptions::new(1);
    opts.latency_max_ns = 2_000_000_000;
    let config = Config {
        message_timeout_ns: 1_000_000_000,
        ..Config::default()
    };
    match user(opts, config.clone()) {
        Err(RunError::BadOption(m)) => assert!(
            m.starts_with("latency_max_ns 2s is longer than the message timeout 1s"),
            "{m}"
        ),
        other => panic!("{:?}", other.map(|o| o.violations)),
    }
    // At the bound: runs (a restart delay of 1,000,000 s, nothing crashes).
    let mut opts = SimOptions::new(1);
    opts.input_len = 3;
    opts.restart_delay_ns = MAX_DURATION_NS;
    opts.partition_ns = MAX_DURATION_NS;
    let o = user(opts, config).unwrap();
    assert!(o.ok(), "{:?}", o.violations);
}
