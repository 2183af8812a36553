//! Runs whose trees time out faster than they complete (new-user trial, 2026-12-03): each replay
//! keeps its records until the run ends, so such a run grew its memory until the process died.
//! A run certain to replay every tree is refused up front (its shortest round trip against 2T +
//! one tick); any other stops at its replay limit (`--max-replays`, exit 2, naming what filled
//! up and what to change); a run that replays a bounded number of trees still runs, and its
//! timed-out trees are not taken for lost acks.

use acker_sim::scenario::{Guarantee, Scenario, ScenarioError};
use std::process::Output;
use std::time::Duration;

#[path = "../../runtime/tests/common/mod.rs"]
mod common;

/// `acker-sim ARGS` under `ulimit -v 1000000` (1 GB), killed after 60 s (no test may hang).
fn bounded(args: &[&str]) -> Output {
    common::under_ulimit(
        'v',
        1_000_000,
        env!("CARGO_BIN_EXE_acker-sim"),
        "acker-sim",
        args,
        Duration::from_secs(60),
    )
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The trial's two commands: both aborted at 4 GB / took 2.75 GB. Now each stops at the default
/// replay limit (100000 replays past the input of 1000) with exit 2 under a 1 GB limit.
#[test]
fn a_replay_storm_stops_at_the_replay_limit() {
    for (args, at, cause) in [
        (
            &[
                "run",
                "--seed",
                "1",
                "--timeout",
                "200us",
                "--tick",
                "10us",
                "--time-limit",
                "30s",
            ][..],
            "100225 trees failed or timed out (100225 by the message timeout) and 100627 spout \
             emits for an input of 1000 by 0.050400 s of simulated time",
            "--timeout",
        ),
        (
            &[
                "run",
                "--seed",
                "1",
                "--restart-delay",
                "1000000s",
                "--faults",
                "worker-crash*1",
            ][..],
            "101000 trees failed or timed out (101000 by the message timeout) and 101001 spout \
             emits for an input of 1000 by 6060.000000 s of simulated time",
            "--restart-delay",
        ),
    ] {
        let o = bounded(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(
                "acker-sim: error: the run failed or replayed more trees than its replay limit \
                 (--max-replays 100000): "
            ),
            "{args:?}: {err}"
        );
        assert!(err.contains(at), "{args:?}: {err}");
        assert!(
            err.contains(cause) && err.contains("raise --max-replays"),
            "{err}"
        );
        assert!(stdout(&o).is_empty(), "{args:?}");
    }
    // The limit as given, exactly.
    let o = bounded(&[
        "run",
        "--seed",
        "1",
        "--timeout",
        "200us",
        "--tick",
        "10us",
        "--max-replays",
        "5",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "(--max-replays 5): 399 trees failed or timed out (399 by the message timeout) and \
             800 spout emits for an input of 1000"
        ),
        "{}",
        stderr(&o)
    );
}

/// A run that replays a bounded number of trees runs, and its timeouts are not lost acks: the
/// trial's `--tuples 300 --timeout 300us --tick 100us` reported `failed-without-fault` (80 of its
/// trees outlived their acker entries and never completed).
#[test]
fn bounded_replays_run_and_their_timeouts_are_not_lost_acks() {
    for (args, spout) in [
        (
            &[
                "run",
                "--seed",
                "1",
                "--tuples",
                "300",
                "--timeout",
                "300us",
                "--tick",
                "100us",
            ][..],
            "spout: acked 300 failed 0 timed out 1748 ignored 1668  acker: completed 1968",
        ),
        (
            &["run", "--seed", "1", "--timeout", "1ms", "--tick", "100us"][..],
            "spout: acked 1000 failed 0 timed out 272 ignored 272  acker: completed 1272",
        ),
    ] {
        let o = bounded(args);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {out}{}", stderr(&o));
        assert!(out.contains(spout), "{args:?}: {out}");
        assert!(out.contains("verdict: ok (every oracle held)"), "{out}");
    }
}

/// A timeout certain to fail every tree is refused before anything runs: the tree's shortest
/// round trip (4 x the shortest link latency) at or past 2T + one tick.
#[test]
fn a_timeout_below_the_shortest_round_trip_is_refused() {
    let o = bounded(&[
        "run",
        "--seed",
        "1",
        "--latency",
        "100us..150us",
        "--timeout",
        "150us",
        "--tick",
        "10us",
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "the message timeout --timeout 150us (with --tick 10us) is too short for this \
             topology: a tree crosses four links (spout to bolt, bolt to sink, sink to acker, \
             acker to spout), so its round trip takes at least 400us"
        ) && err.contains("pending for 2 x --timeout + --tick (310us) at the latest")
            && err.contains("Give a --timeout above 195us"),
        "{err}"
    );
    // The boundary: round trip 200 us, tick 10 us.
    let mut s = Scenario::new(1, Guarantee::AtLeastOnce);
    (s.latency_min_ns, s.latency_max_ns, s.tick_interval_ns) = (50_000, 50_000, 10_000);
    s.message_timeout_ns = 95_000;
    assert_eq!(
        s.validate(),
        Err(ScenarioError::RoundTripAboveTimeout(
            200_000, 95_000, 10_000
        ))
    );
    s.message_timeout_ns = 95_001;
    assert_eq!(s.validate(), Ok(()));
    // One worker: the local latency.
    let mut s = Scenario::new(1, Guarantee::AtLeastOnce);
    (s.one_worker, s.local_latency_ns, s.tick_interval_ns) = (true, 30_000, 1_000);
    (s.latency_min_ns, s.latency_max_ns) = (1_000, 1_000);
    s.message_timeout_ns = 59_500;
    assert!(matches!(
        s.validate(),
        Err(ScenarioError::RoundTripAboveTimeout(120_000, 59_500, 1_000))
    ));
    // At-most-once has no timeout to fail a tree.
    let mut s = Scenario::new(1, Guarantee::AtMostOnce);
    (s.message_timeout_ns, s.tick_interval_ns) = (10_000, 1_000);
    (s.latency_min_ns, s.latency_max_ns) = (10_000, 10_000);
    assert_eq!(s.validate(), Ok(()));
    s.guarantee = Guarantee::AtLeastOnce;
    assert!(s.validate().is_err());
}

/// `--progress-every` and `--cell-limit` are wall-clock intervals: a bound and message of their
/// own (they used the simulated durations' 1000000s).
#[test]
fn wall_clock_intervals_have_their_own_bound() {
    for args in [
        &["search", "--seeds", "1", "--progress-every", "700000s"][..],
        &["experiment", "--real", "--cell-limit", "700000s"][..],
    ] {
        let o = bounded(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains(
                "`700000s` is longer than the longest wall-clock interval taken, 604800s (7 days)"
            ),
            "{args:?}: {err}"
        );
    }
}

/// Without `--max-replays`, the default replay limit is lowered to what memory holds after the
/// input, instead of refusing a run whose input fits: under 1 GB, 5,000,000 tuples (720 MB at
/// 144 B a tuple) fit, but 5,000,000 replays more (1.5 GB at 300 B) do not; the run is accepted
/// (it reaches its 1 ms time limit, exit 1, with a trace) and not refused (exit 2). Given
/// explicitly, the same limit is refused, naming it; and an input that does not fit at all is
/// refused speaking of the fewest replays (1000), not of the default's 44 GB.
#[test]
fn the_default_replay_limit_is_lowered_to_the_memory_left() {
    let o = bounded(&[
        "run",
        "--seed",
        "1",
        "--tuples",
        "5000000",
        "--time-limit",
        "1ms",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stdout(&o).contains("trace hash "), "{}", stdout(&o));
    let o = bounded(&[
        "run",
        "--seed",
        "1",
        "--tuples",
        "5000000",
        "--max-replays",
        "5000000",
        "--time-limit",
        "1ms",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "--tuples 5000000 with up to 5000000 replays (--max-replays) needs about 2.2 GB"
        ),
        "{}",
        stderr(&o)
    );
    let o = bounded(&["run", "--seed", "1", "--tuples", "100000000"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "--tuples 100000000 with up to 1000 replays (--max-replays) needs about 14.4 GB"
        ),
        "{}",
        stderr(&o)
    );
}

/// A run of `search` or `experiment` that hits the replay limit ends the job, naming the seed
/// (with its replay command) or the cell (second trial: the error named neither, so the run to
/// look at was unknown). The replay command runs that seed alone and stops at the same limit.
#[test]
fn search_and_experiment_name_the_run_that_hit_the_replay_limit() {
    let o = bounded(&["search", "--seeds", "3", "--restart-delay", "1000000s"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with(
            "acker-sim: error: seed 1: the run failed or replayed more trees than its replay \
             limit (--max-replays 100000)"
        ),
        "{err}"
    );
    let replay = err
        .split("(replay this seed alone: acker-sim ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap_or_else(|| panic!("no replay command in: {err}"));
    let args: Vec<String> = replay
        .split_whitespace()
        .map(|w| w.trim_matches('\'').to_string())
        .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let again = bounded(&args);
    assert_eq!(again.status.code(), Some(2), "{args:?}: {}", stderr(&again));
    assert!(
        stderr(&again).contains("101001 spout emits for an input of 1000 by"),
        "{}",
        stderr(&again)
    );
    let o = bounded(&["experiment", "--timeout", "200us", "--tick", "10us"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "acker-sim: error: cell at-least-once with no fault: the run failed or replayed more \
             trees than its replay limit"
        ),
        "{err}"
    );
}

/// Failed trees count against the replay limit: the built-in spout emits its whole input before
/// its replays, so with every tree timing out, 1,000,225 trees failed under `--max-replays 1000`
/// before the limit was reached, each keeping its records (second trial: 283 MB for 1M tuples,
/// SIGABRT under `ulimit -v 250000`). Now the run stops at the fail past the limit, exit 2,
/// within that limit.
#[test]
fn failed_trees_count_against_the_replay_limit() {
    let o = common::under_ulimit(
        'v',
        250_000,
        env!("CARGO_BIN_EXE_acker-sim"),
        "acker-sim",
        &[
            "run",
            "--seed",
            "1",
            "--tuples",
            "1000000",
            "--timeout",
            "200us",
            "--tick",
            "10us",
            "--max-replays",
            "1000",
        ],
        Duration::from_secs(60),
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "the run failed or replayed more trees than its replay limit (--max-replays 1000): \
             1177 trees failed or timed out (1177 by the message timeout)"
        ),
        "{err}"
    );
}
