//! Search finds a planted bug and shrinks it to a one-fault schedule; the CLI reports it with
//! replay commands, and rejects bad input clearly.

#[path = "../../runtime/tests/common/mod.rs"]
mod common;
use common::BoundedOutput;

use acker_sim::fault::parse_specs;
use acker_sim::search::{self, SearchPlan};
use acker_sim::{FaultKind, Guarantee, PlantedBug, Scenario, Sim};
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_acker-sim"))
}

#[test]
fn a_planted_acker_bug_is_found_and_shrunk_to_one_fault() {
    let mut template = Scenario::new(0, Guarantee::AtLeastOnce);
    template.tuples = 500;
    template.max_spout_pending = 50;
    template.planted_bug = Some(PlantedBug::AckerAcksFirstFailure);
    let plan = SearchPlan {
        template,
        guarantee: Some(Guarantee::AtLeastOnce),
        swarm: true,
        specs: Vec::new(),
        rate_per_kilo_tuple: 2.0,
        fault_until_ns: 0,
    };
    let (sc, o) = (1..=50)
        .map(|seed| {
            let sc = plan.scenario(seed).unwrap();
            let o = Sim::run(sc.clone(), None).unwrap();
            (sc, o)
        })
        .find(|(_, o)| !o.ok())
        .expect("50 swarm seeds never hit the planted bug");
    assert_eq!(o.violations[0].class(), "lost");
    let shrunk = search::shrink(&sc, "lost").expect("the violation reproduces");
    assert_eq!(
        shrunk.scenario.faults.len(),
        1,
        "{:?}",
        shrunk.scenario.faults
    );
    let f = shrunk.scenario.faults[0];
    assert_eq!(f.kind, FaultKind::BoltExceptionBeforeEmit);
    assert_eq!(
        f.trigger,
        acker_sim::Trigger::AtOffset(0),
        "moved as early as it goes"
    );
    assert!(shrunk
        .outcome
        .violations
        .iter()
        .any(|v| v.class() == "lost"));
    // Without the bug, the shrunk schedule is clean.
    let mut clean = shrunk.scenario.clone();
    clean.planted_bug = None;
    assert!(Sim::run(clean, None).unwrap().ok());
}

#[test]
fn shrinking_keeps_only_the_needed_fault() {
    // One harmful fault hidden among harmless ones: shrinking drops the others.
    let mut sc = Scenario::new(3, Guarantee::AtLeastOnce);
    sc.tuples = 400;
    sc.max_spout_pending = 40;
    sc.planted_bug = Some(PlantedBug::AckerAcksFirstFailure);
    sc.set_fault_specs(
        &parse_specs(
            "bolt-crash@#50,message-loss@#100,bolt-exception-before-emit@#300,acker-crash@#350",
        )
        .unwrap(),
        0,
    )
    .unwrap();
    let s = search::shrink(&sc, "lost").unwrap();
    assert_eq!(s.scenario.faults.len(), 1);
    assert_eq!(
        s.scenario.faults[0].kind,
        FaultKind::BoltExceptionBeforeEmit
    );
    assert!(search::shrink(&Scenario::new(3, Guarantee::AtLeastOnce), "lost").is_none());
}

#[test]
fn cli_search_reports_and_shrinks_with_replay_commands() {
    let out = bin()
        .args([
            "search",
            "--seeds",
            "12",
            "--swarm",
            "--guarantee",
            "at-least-once",
            "--tuples",
            "500",
            "--max-spout-pending",
            "50",
            "--planted-bug",
            "acker-acks-first-failure",
        ])
        .bounded_output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("violation: lost"), "{text}");
    let shrunk = text
        .lines()
        .find(|l| l.contains("shrunk replay:"))
        .expect("a shrunk replay command");
    assert!(
        shrunk.contains("--faults 'bolt-exception-before-emit@#0:0'"),
        "{shrunk}"
    );
    // The printed replay command reproduces the violation.
    let cmd = shrunk.split("shrunk replay: acker-sim ").nth(1).unwrap();
    let args: Vec<String> = cmd
        .split_whitespace()
        .map(|a| a.trim_matches('\'').to_string())
        .collect();
    let replay = bin().args(&args).bounded_output().unwrap();
    assert_eq!(replay.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&replay.stdout).contains("lost: 1 input(s)"));
}

#[test]
fn cli_run_prints_verdict_and_checks_determinism() {
    let out = bin()
        .args([
            "run",
            "--seed",
            "9",
            "--tuples",
            "800",
            "--max-spout-pending",
            "80",
            "--faults",
            "acker-crash*2,message-loss~1/kt",
            "--check-determinism",
        ])
        .bounded_output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("verdict: ok"));
    assert!(text.contains("determinism: ok"));
    // Two acker crashes duplicate 2 × 80 = 160; a lost message moves that by at most one (a lost
    // ack adds a duplicate; a lost data tuple of a tree the crash doomed removes one).
    let dups: u64 = text
        .split("duplicates ")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .expect("a duplicates figure");
    let losses = text.matches("message-loss@").count() as u64;
    assert!(
        (160 - losses..=160 + losses).contains(&dups),
        "{dups} duplicates, {losses} losses"
    );
    assert!(text.lines().any(|l| l.starts_with("trace hash ")));
}

#[test]
fn cli_experiment_json_and_plot() {
    let dir = std::env::temp_dir().join(format!("acker-sim-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("exp.svg");
    let out = bin()
        .args([
            "experiment",
            "--tuples",
            "1500",
            "--max-spout-pending",
            "50",
            "--json",
            "--plot",
        ])
        .arg(&svg)
        .bounded_output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 75);
    let keys: Vec<&str> = rows[0]
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    for k in [
        "guarantee",
        "fault",
        "injected",
        "input",
        "distinct",
        "lost",
        "duplicates",
        "max_spout_pending",
        "trace_hash",
    ] {
        assert!(keys.contains(&k), "missing key {k}");
    }
    let acker5 = rows
        .iter()
        .find(|r| {
            r["guarantee"] == "at-least-once" && r["fault"] == "acker-crash" && r["injected"] == 5
        })
        .unwrap();
    assert_eq!(acker5["duplicates"], 250);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("<svg"));
    assert!(text.contains("exactly-once"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn cli_rejects_bad_input() {
    let cases: [&[&str]; 6] = [
        &["run", "--seed", "1", "--faults", "acker-explosion"],
        &["run", "--seed", "1", "--faults", "message-loss~-2"],
        &["run", "--seed", "1", "--tuples", "0"],
        &["run", "--seed", "1", "--guarantee", "twice"],
        &["run", "--seed", "1", "--faults", "bolt-crash@1s:9"],
        &["search", "--seeds", "0"],
    ];
    let wants = [
        "unknown fault `acker-explosion`",
        "bad fault rate `-2`",
        "must be at least 1",
        "unknown guarantee `twice`",
        "bad fault target",
        "must be at least 1",
    ];
    for (args, want) in cases.iter().zip(wants) {
        let out = bin().args(*args).bounded_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn cli_lists_the_planted_bugs_and_a_sink_without_dedup_fails_exactly_once() {
    let out = bin()
        .args(["search", "--planted-bug", "list"])
        .bounded_output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "acker-acks-first-failure\nrestart-reuses-seed\nsink-without-dedup\n"
    );
    // Issue 16: the exactly-once oracle reads the sink's effects, not its own applied-set. An
    // acker crash makes the spout replay max spout pending tuples; without de-duplication each
    // replay is applied again.
    let mut sc = Scenario::new(1, Guarantee::ExactlyOnce);
    sc.faults = search::SearchPlan {
        template: sc.clone(),
        guarantee: Some(Guarantee::ExactlyOnce),
        swarm: false,
        specs: parse_specs("acker-crash").unwrap(),
        rate_per_kilo_tuple: 0.0,
        fault_until_ns: 0,
    }
    .scenario(1)
    .unwrap()
    .faults;
    let fine = Sim::run(sc.clone(), None).unwrap();
    assert!(fine.ok(), "{:?}", fine.violations);
    assert_eq!((fine.duplicates, fine.absorbed), (0, 1000));
    sc.planted_bug = Some(PlantedBug::SinkWithoutDedup);
    let bad = Sim::run(sc, None).unwrap();
    assert_eq!((bad.duplicates, bad.absorbed), (1000, 0));
    assert_eq!(
        bad.violations
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>(),
        vec!["duplicated: 1000 extra record(s) in the sink (first: #0)"]
    );
}

#[test]
fn cli_run_takes_a_shape_and_refuses_core_plants_without_the_feature() {
    let out = bin()
        .args([
            "run",
            "--shape",
            "join",
            "--seed",
            "3",
            "--check-determinism",
        ])
        .bounded_output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.starts_with("seed 3 (shape join, at-least-once)\nfaults: none\n"),
        "{text}"
    );
    assert!(
        text.contains("spout left: 40 message ids, 40 acks, 0 fails\n"),
        "{text}"
    );
    assert!(
        text.contains("spout right: 40 message ids, 40 acks, 0 fails\n"),
        "{text}"
    );
    assert!(text.contains("verdict: ok"), "{text}");
    assert!(text.contains("determinism: ok"), "{text}");
    if cfg!(feature = "planted-bugs") {
        return;
    }
    let out = bin()
        .args([
            "search",
            "--seeds",
            "1",
            "--planted-bug",
            "ack-to-wrong-root",
        ])
        .bounded_output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "planted bug `ack-to-wrong-root` lives in acker-core or the runtime: it needs \
             acker-sim built with `--features planted-bugs`"
        ),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A restarted spout seeded as its first incarnation sends inits for root ids already used:
/// the engine sees it on the link (outside the executors) at the first restart, whatever the
/// topology does next (before this check, swarm search found this plant in about 1 seed of 250).
#[test]
fn a_reused_root_id_is_caught_at_the_first_restart() {
    let o = bin()
        .args([
            "run",
            "--shape",
            "all-grouping",
            "--seed",
            "2",
            "--planted-bug",
            "restart-reuses-seed",
            "--faults",
            "spout-crash@#0:0",
        ])
        .bounded_output()
        .expect("run acker-sim");
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains(
            "invariant `a root id is initialized once` violated at 50000000 ns: task 0 sent a \
             second init for root 0x2c44ee5104ec340d (root ids reused)"
        ),
        "{out}"
    );
    // The same run without the plant holds every oracle.
    let o = bin()
        .args([
            "run",
            "--shape",
            "all-grouping",
            "--seed",
            "2",
            "--faults",
            "spout-crash@#0:0",
        ])
        .bounded_output()
        .expect("run acker-sim");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

/// A planted bug that cannot fire under a search's fixed guarantee is refused with the reason
/// (exit 2: no seed could find it); a single run of it warns on stderr and runs (a search's
/// replay command for such a seed must still run), and a search turning through the three
/// guarantees takes any plant. Where it can fire the same plant runs and is found. An unknown
/// name lists the names this build takes first, the feature's ones apart.
#[test]
fn a_plant_that_cannot_fire_under_the_guarantee_is_refused_or_warned() {
    let refused = |args: &[&str], want: &str| {
        let out = bin().args(args).bounded_output().expect("run acker-sim");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    };
    let warned = |args: &[&str], want: &str| {
        let out = bin().args(args).bounded_output().expect("run acker-sim");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(
            err.contains(want) && err.contains("this run's verdict says nothing about the bug"),
            "{args:?}: {err}"
        );
    };
    warned(
        &[
            "run",
            "--seed",
            "1",
            "--guarantee",
            "at-most-once",
            "--planted-bug",
            "acker-acks-first-failure",
        ],
        "acker-sim: warning: planted bug `acker-acks-first-failure` cannot fire under \
         at-most-once: at-most-once runs no acker",
    );
    warned(
        &[
            "run",
            "--seed",
            "1",
            "--guarantee",
            "at-least-once",
            "--planted-bug",
            "sink-without-dedup",
        ],
        "planted bug `sink-without-dedup` cannot fire under at-least-once: only the exactly-once \
         sink de-duplicates",
    );
    // No fault restarts a spout: the reused seed has nothing to act on (new-user trial).
    warned(
        &[
            "run",
            "--seed",
            "1",
            "--planted-bug",
            "restart-reuses-seed",
            "--faults",
            "acker-crash*1",
        ],
        "acker-sim: warning: planted bug `restart-reuses-seed` cannot fire without a restarted \
         spout, and --faults `acker-crash*1` has no spout-crash or worker-crash",
    );
    warned(
        &[
            "run",
            "--seed",
            "3",
            "--shape",
            "join",
            "--planted-bug",
            "sink-without-dedup",
        ],
        "planted bug `sink-without-dedup` cannot fire in the shape `join`",
    );
    refused(
        &[
            "search",
            "--seeds",
            "2",
            "--guarantee",
            "at-most-once",
            "--planted-bug",
            "restart-reuses-seed",
        ],
        "planted bug `restart-reuses-seed` cannot fire under at-most-once",
    );
    // Turning through the guarantees (as `.ci/planted`'s swarm searches do): taken, and found in
    // an exactly-once seed (every third) with an acker crash.
    let out = bin()
        .args([
            "search",
            "--seeds",
            "3",
            "--faults",
            "acker-crash@#0:0",
            "--planted-bug",
            "sink-without-dedup",
        ])
        .bounded_output()
        .expect("run acker-sim");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("searched 3 seeds: 1 violating"), "{text}");
    let wanted = if cfg!(feature = "planted-bugs") {
        "this build takes: acker-acks-first-failure, restart-reuses-seed, sink-without-dedup, \
         spout-ignores-timeout, acker-drops-ack, ack-to-wrong-root, init-or-over-copies, \
         pending-wrap-loses-entry\n"
    } else {
        "this build takes: acker-acks-first-failure, restart-reuses-seed, sink-without-dedup \
         (with `--features planted-bugs` also: spout-ignores-timeout, acker-drops-ack, \
         ack-to-wrong-root, init-or-over-copies, pending-wrap-loses-entry)\n"
    };
    refused(
        &["search", "--seeds", "1", "--planted-bug", "nosuch"],
        &format!("unknown planted bug `nosuch`; {wanted}"),
    );
    // Where it can fire, a run finds it: exactly-once, one acker crash, every replay applied
    // again (exit 1, a violation).
    let out = bin()
        .args([
            "run",
            "--seed",
            "1",
            "--guarantee",
            "exactly-once",
            "--planted-bug",
            "sink-without-dedup",
            "--faults",
            "acker-crash@#0:0",
        ])
        .bounded_output()
        .expect("run acker-sim");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("duplicated: "), "{text}");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning"));
}

/// `search --swarm --list` prints one replay line a run, and a shape seed that also runs
/// fault-free (`Shape::quiet_for_seed`) runs twice: the summary says how many replay commands it
/// listed besides how many seeds, and the count matches the lines (new-user trial 5: 6 replay
/// commands under `listed 5 seeds (swarm) (none run)`). A search that runs them says the same.
#[test]
fn swarm_list_counts_its_replay_lines_and_the_fault_free_reruns() {
    use acker_sim::shapes::Shape;
    let seeds = 40u64;
    // The library's count: one run a seed, two for a shape seed drawn to run fault-free too.
    let extra = (1..=seeds)
        .filter(|&s| Shape::for_seed(s) != Shape::Experiment && Shape::quiet_for_seed(s))
        .count() as u64;
    assert!(extra > 0, "40 seeds draw some fault-free reruns");
    let stdout = |args: &[&str]| {
        let out = bin().args(args).bounded_output().expect("run acker-sim");
        let text = String::from_utf8(out.stdout).expect("utf-8");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {text}");
        text
    };
    let n = seeds.to_string();
    let listed = stdout(&["search", "--seeds", &n, "--swarm", "--list"]);
    let (replays, summary) = listed.trim_end().rsplit_once('\n').expect("lines");
    let lines = replays.lines().collect::<Vec<_>>();
    assert!(
        lines.iter().all(|l| l.starts_with("acker-sim run ")),
        "{listed}"
    );
    assert_eq!(lines.len() as u64, seeds + extra, "{listed}");
    assert_eq!(
        summary,
        format!(
            "listed {} replay command(s) for {seeds} seeds (swarm: {extra} shape seed(s) also \
             listed fault-free) (none run)",
            seeds + extra
        )
    );
    // The fault-free rerun's line is the seed's line without its faults.
    let fault_free = lines.iter().filter(|l| !l.contains("--faults")).count() as u64;
    assert!(fault_free >= extra, "{listed}");
    let searched = stdout(&["search", "--seeds", &n, "--swarm"]);
    assert_eq!(
        searched.trim_end(),
        format!(
            "searched {seeds} seeds (swarm, {} runs: {extra} shape seed(s) also ran fault-free): \
             0 violating",
            seeds + extra
        )
    );
    // Without --swarm every seed has one run, one line.
    let plain = stdout(&["search", "--seeds", "3", "--list"]);
    assert_eq!(plain.lines().count(), 4, "{plain}");
    assert_eq!(
        plain.lines().last(),
        Some("listed 3 replay command(s) for 3 seeds (none run)")
    );
}
