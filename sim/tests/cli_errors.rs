//! `acker-sim` on bad arguments, huge fault schedules and a stdout it cannot write: a one-line
//! message on stderr and exit status 2 (never a panic, status 101), a quiet exit 0 when the
//! reader of a pipe closed it early, and a bounded `faults:` line whose trace hash is the
//! library's.

#[path = "../../runtime/tests/common/mod.rs"]
mod common;
use common::BoundedOutput;

use acker_sim::fault::{format_schedule, parse_specs};
use acker_sim::{Guarantee, Scenario, Sim};
use std::process::{Command, Output, Stdio};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_acker-sim"))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn run_ok(args: &[&str]) -> String {
    let o = bin().args(args).bounded_output().expect("run acker-sim");
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    String::from_utf8(o.stdout).expect("utf-8 stdout")
}

/// Runs `acker-sim` with `args` and asserts exit status 2 and that stderr names `expected`.
fn assert_usage_error(args: &[&str], expected: &str) {
    let o = bin().args(args).bounded_output().expect("run acker-sim");
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(expected), "{args:?}: stderr was {err:?}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert!(o.stdout.is_empty(), "{args:?}");
}

/// The library's run of `acker-sim run --seed seed --faults faults` with every other flag at its
/// default (1000 tuples, faults drawn over 2 s): its fired schedule and trace hash.
fn library_run(seed: u64, faults: &str) -> (String, u64, usize) {
    let mut sc = Scenario::new(seed, Guarantee::AtLeastOnce);
    sc.tuples = 1000;
    sc.set_fault_specs(&parse_specs(faults).expect("specs"), 2_000_000_000)
        .expect("schedule");
    let o = Sim::run(sc, None).expect("run");
    (format_schedule(&o.fired), o.trace_hash, o.fired.len())
}

fn line<'a>(stdout: &'a str, prefix: &str) -> &'a str {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line in {stdout}"))
}

#[test]
fn small_schedules_print_in_full_with_the_library_trace_hash() {
    let out = run_ok(&[
        "run",
        "--seed",
        "7",
        "--faults",
        "acker-crash*2",
        "--check-determinism",
    ]);
    let (schedule, hash, fired) = library_run(7, "acker-crash*2");
    assert_eq!(fired, 2);
    assert_eq!(line(&out, "faults: "), schedule);
    assert_eq!(line(&out, "trace hash "), format!("{hash:016x}"));
    assert!(out.contains("determinism: ok"), "{out}");
}

#[test]
fn huge_schedules_print_the_first_twenty_and_counts() {
    let out = run_ok(&[
        "run",
        "--seed",
        "3",
        "--faults",
        "acker-crash*25,message-loss*5",
    ]);
    let (schedule, hash, fired) = library_run(3, "acker-crash*25,message-loss*5");
    assert_eq!(fired, 30);
    let first_twenty: Vec<&str> = schedule.split(',').take(20).collect();
    let faults = line(&out, "faults: ");
    assert_eq!(
        faults,
        format!(
            "{} ... and 10 more (30 fired: acker-crash 25, message-loss 5)",
            first_twenty.join(",")
        )
    );
    assert_eq!(line(&out, "trace hash "), format!("{hash:016x}"));

    // The schedule cap (1M faults) itself: a bounded line, not 19 MB.
    let out = run_ok(&["run", "--seed", "1", "--faults", "acker-crash*1000000"]);
    let faults = line(&out, "faults: ");
    assert!(faults.len() < 1000, "{} bytes", faults.len());
    assert!(
        faults.ends_with(" ... and 999980 more (1000000 fired: acker-crash 1000000)"),
        "{faults}"
    );
    assert!(out.len() < 2000, "{} bytes of stdout", out.len());
}

/// A zero `--tick` or `--timeout` is refused naming the option (new-user trial:
/// `--tick 0` said only "the tick interval must be positive").
#[test]
fn zero_durations_name_their_option() {
    for (opt, want) in [
        ("--tick", "the tick interval (--tick) must be positive"),
        (
            "--timeout",
            "the message timeout (--timeout) must be positive",
        ),
    ] {
        assert_usage_error(&["run", "--seed", "1", opt, "0"], want);
    }
}

#[test]
fn zero_time_limit_is_a_usage_error() {
    assert_usage_error(
        &["run", "--seed", "1", "--time-limit", "0s"],
        "invalid value '0s' for '--time-limit <TIME_LIMIT>': must be more than 0",
    );
    assert_usage_error(
        &["search", "--seeds", "1", "--time-limit", "0"],
        "'--time-limit <TIME_LIMIT>': must be more than 0",
    );
    // A positive limit too short to finish is still the liveness oracle's business.
    let o = bin()
        .args(["run", "--seed", "1", "--time-limit", "1ms"])
        .bounded_output()
        .expect("run acker-sim");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("verdict: VIOLATION"));
}

#[test]
fn negative_numbers_are_refused_by_name() {
    assert_usage_error(
        &["run", "--seed", "-1"],
        "invalid value '-1' for '--seed <SEED>': must not be negative",
    );
    assert_usage_error(
        &["run", "--seed", "1", "--tuples", "-10"],
        "'--tuples <TUPLES>': must not be negative (at least 1)",
    );
    assert_usage_error(
        &["run", "--seed", "1", "--tuples", "2.5"],
        "invalid value '2.5' for '--tuples <TUPLES>': must be a whole number >= 1",
    );
    assert_usage_error(
        &["run", "--seed", "1", "--max-spout-pending", "-1"],
        "'--max-spout-pending <MAX_SPOUT_PENDING>': must not be negative",
    );
    assert_usage_error(
        &["run", "--seed", "1", "--ackers", "-2"],
        "'--ackers <ACKERS>': must not be negative",
    );
    assert_usage_error(
        &["run", "--seed", "1", "--timeout", "-3s"],
        "invalid value '-3s' for '--timeout <TIMEOUT>': durations cannot be negative",
    );
    assert_usage_error(
        &["search", "--seeds", "-2"],
        "'--seeds <SEEDS>': must not be negative (at least 1)",
    );
    assert_usage_error(
        &["search", "--seeds", "1", "--swarm", "--rate", "-1"],
        "acker-sim: error: --rate -1 must be a finite number >= 0",
    );
    assert_usage_error(
        &["experiment", "--seed", "-4"],
        "'--seed <SEED>': must not be negative",
    );
    // --rate is swarm mode's: without --swarm it would be ignored (new-user trial).
    assert_usage_error(
        &["search", "--seeds", "3", "--rate", "5"],
        "the following required arguments were not provided:\n  --swarm",
    );
}

#[cfg(target_os = "linux")]
#[test]
fn full_stdout_is_an_error_not_a_panic() {
    for args in [
        &["run", "--seed", "1"][..],
        &["search", "--seeds", "2", "--list"][..],
    ] {
        let full = std::fs::File::create("/dev/full").expect("open /dev/full");
        let o = bin()
            .args(args)
            .stdout(full)
            .bounded_output_own_stdout()
            .expect("run acker-sim");
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(
                "acker-sim: error: cannot write to stdout: No space left on device (os error 28)"
            ),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn closed_pipe_exits_quietly() {
    let mut child = bin()
        .args(["run", "--seed", "1", "--tuples", "200"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run acker-sim");
    drop(child.stdout.take());
    let o = child.wait_with_output().expect("wait for acker-sim");
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(!err.contains("error"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn help_documents_the_exit_statuses() {
    let help = run_ok(&["--help"]);
    assert!(
        help.contains("Exit status: 0 when every oracle held"),
        "{help}"
    );
    assert!(help.contains("closed early"), "{help}");
}

#[test]
fn bad_fault_targets_name_the_fault_and_the_valid_range() {
    assert_usage_error(
        &["run", "--seed", "1", "--faults", "bolt-crash@1s:99"],
        "acker-sim: error: bad fault target in `bolt-crash@1s:99`: target 99, but the topology \
         has 1 processing bolt task(s) (targets 0..=0)\n",
    );
    assert_usage_error(
        &[
            "run",
            "--seed",
            "1",
            "--faults",
            "acker-crash,spout-crash@#10*3:4",
        ],
        "acker-sim: error: --faults `acker-crash,spout-crash@#10*3:4`: bad fault target in \
         `spout-crash@#10*3:4`: target 4, but the topology has 1 spout task(s) (targets 0..=0)\n",
    );
    assert_usage_error(
        &["run", "--seed", "1", "--faults", "partition@1s:0-7"],
        "bad fault target in `partition@1s:0-7`: workers 0-7, but the topology has 4 worker(s) \
         (targets 0..=3)\n",
    );
    assert_usage_error(
        &["run", "--seed", "1", "--faults", "partition@1s:2-2"],
        "bad fault target in `partition@1s:2-2`: a partition needs two different workers, got 2-2\n",
    );
    assert_usage_error(
        &["run", "--seed", "1", "--faults", "bolt-crash@1s:x"],
        "acker-sim: error: bad fault target in `bolt-crash@1s:x`: `x` is not a target (a task or \
         worker index 0..=65535, or a-b for the two workers of a partition)\n",
    );
    // One line: no backtick left open, nothing dropped from the spec.
    let o = bin()
        .args(["run", "--seed", "1", "--faults", "bolt-crash@1s:99"])
        .bounded_output()
        .expect("run acker-sim");
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(err.matches('`').count(), 2, "{err}");
}

#[test]
fn seed_ranges_past_the_last_seed_are_refused_and_list_runs_nothing() {
    assert_usage_error(
        &[
            "search",
            "--seeds",
            "3",
            "--first-seed",
            "18446744073709551615",
        ],
        "--first-seed 18446744073709551615 and --seeds 3 run past the last seed",
    );
    let listed = run_ok(&[
        "search",
        "--seeds",
        "1",
        "--first-seed",
        "18446744073709551615",
        "--list",
    ]);
    assert_eq!(listed.lines().count(), 2, "{listed}");
    assert_eq!(
        listed.lines().last(),
        Some("listed 1 replay command(s) for 1 seeds (none run)")
    );
}

#[test]
fn a_task_slower_than_the_timeout_and_huge_fault_counts_are_refused() {
    assert_usage_error(
        &["run", "--seed", "1", "--bolt-ns", "1000s"],
        "--bolt-ns must be shorter than the message timeout (--timeout)",
    );
    assert_usage_error(
        &[
            "run",
            "--seed",
            "1",
            "--faults",
            "acker-crash*99999999999999",
        ],
        "bad fault count `99999999999999`: expected an integer from 1 to 1000000",
    );
}

/// A fault triggered after the run has ended does not fire, and the run says so with the
/// simulated end time instead of a bare `faults: none` (found by the new-user trial: the default
/// 1000-tuple run ends after a few simulated milliseconds, long before `acker-crash@1s`).
#[test]
fn faults_past_the_end_of_the_run_are_reported_as_not_fired() {
    let out = run_ok(&["run", "--seed", "7", "--faults", "acker-crash@1s"]);
    assert_eq!(line(&out, "faults:"), " none", "{out}");
    let note = line(&out, "note:");
    assert!(
        note.starts_with(" 1 scheduled fault(s) did not fire: the run ended at ")
            && note.contains(" ms of simulated time"),
        "{out}"
    );
    // A fault early enough to fire leaves no note.
    let out = run_ok(&["run", "--seed", "7", "--faults", "acker-crash@#10"]);
    assert!(!out.contains("did not fire"), "{out}");
}

/// A `--plot` path that cannot be written is refused before any cell runs (a user lost a whole
/// `experiment --real` run to it, told only "No such file or directory").
#[test]
fn an_unwritable_plot_path_is_refused_before_running() {
    let t0 = std::time::Instant::now();
    assert_usage_error(
        &["experiment", "--plot", "/nonexistent-dir/x.svg"],
        "cannot write --plot /nonexistent-dir/x.svg",
    );
    assert_usage_error(
        &[
            "experiment",
            "--real",
            "--quick",
            "--plot",
            "/nonexistent-dir/x.svg",
        ],
        "cannot write --plot /nonexistent-dir/x.svg",
    );
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(5),
        "the experiment ran before the path was checked"
    );
}

/// The experiment's crash relations assume a saturated spout at every fault; an input too small
/// for max spout pending is refused before any run (new-user trial: `experiment --tuples 2000`
/// reported `[FAILS] at-least-once: acker crash → …` for a correct simulator), and the smallest
/// accepted input, 6 × max spout pending, runs with every relation holding.
#[test]
fn an_input_too_small_for_max_spout_pending_is_refused_and_the_smallest_allowed_holds() {
    let t0 = std::time::Instant::now();
    assert_usage_error(
        &["experiment", "--tuples", "2000"],
        "--tuples 2000 is too few for max spout pending 1000: the experiment spreads up to 5 \
         faults over the input and its crash relations need the spout saturated at each, so \
         --tuples must be at least 6 × --max-spout-pending = 6000",
    );
    assert_usage_error(
        &["experiment", "--max-spout-pending", "30000"],
        "--tuples 100000 is too few for max spout pending 30000",
    );
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(5),
        "the experiment ran before its input size was checked"
    );
    let out = run_ok(&[
        "experiment",
        "--tuples",
        "600",
        "--max-spout-pending",
        "100",
    ]);
    assert!(out.contains("[holds] at-least-once: acker crash"), "{out}");
    assert!(!out.contains("[FAILS]"), "{out}");
}

/// A shape other than the experiment is an at-least-once topology of its own: `--guarantee`
/// naming another guarantee is said on stderr, not silently ignored (new-user trial), and the
/// run is the at-least-once one (same trace hash as without the flag).
#[test]
fn a_guarantee_that_does_not_apply_to_a_shape_is_said() {
    let run = |extra: &[&str]| {
        let o = bin()
            .args(["run", "--seed", "3", "--shape", "join"])
            .args(extra)
            .bounded_output()
            .expect("run acker-sim");
        assert_eq!(o.status.code(), Some(0), "{extra:?}: {}", stderr(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        let hash = out
            .lines()
            .find_map(|l| l.trim().strip_prefix("trace hash "))
            .unwrap_or_else(|| panic!("no trace hash in {out}"))
            .to_string();
        (hash, stderr(&o))
    };
    let (plain, err) = run(&[]);
    assert!(!err.contains("warning"), "{err}");
    let (same, err) = run(&["--guarantee", "at-least-once"]);
    assert_eq!(same, plain);
    assert!(!err.contains("warning"), "{err}");
    let (eo, err) = run(&["--guarantee", "exactly-once"]);
    assert_eq!(eo, plain);
    assert!(
        err.contains(
            "acker-sim: warning: --guarantee exactly-once does not apply to --shape join, an \
             at-least-once topology of its own: running at-least-once"
        ),
        "{err}"
    );
}

/// `run` reports its messages per CPU second (issue 15's measure) beside the wall-clock rates:
/// the simulating thread's CPU time, positive and at most the wall time plus a tick.
#[test]
fn run_reports_messages_per_cpu_second() {
    let o = bin()
        .args(["run", "--seed", "1", "--tuples", "100000"])
        .bounded_output()
        .expect("run acker-sim");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    let line = err
        .lines()
        .find(|l| l.starts_with("acker-sim: wall "))
        .unwrap_or_else(|| panic!("no timing line in {err}"));
    let number_after = |key: &str| -> f64 {
        let rest = &line[line
            .find(key)
            .unwrap_or_else(|| panic!("no {key:?} in {line}"))
            + key.len()..];
        rest.split_whitespace().next().unwrap().parse().unwrap()
    };
    let wall = number_after("wall ");
    let cpu = number_after("; CPU ");
    let rate = number_after("s, ");
    assert!(cpu > 0.0 && cpu <= wall + 0.02, "{line}");
    assert!(
        line.ends_with(" M simulated messages per CPU second"),
        "{line}"
    );
    let per_cpu = {
        let tail = &line[line.find("; CPU ").unwrap()..];
        let k = tail.find(" s, ").unwrap() + 4;
        tail[k..]
            .split_whitespace()
            .next()
            .unwrap()
            .parse::<f64>()
            .unwrap()
    };
    // 600 000 messages (6 a tree) over the thread's CPU time, as printed: the CPU time to the
    // millisecond (±0.0005 s), the rate to two decimals (±0.005).
    let (lo, hi) = (
        600_000.0 / (cpu + 0.0005) / 1e6 - 0.005,
        600_000.0 / (cpu - 0.0005).max(1e-9) / 1e6 + 0.005,
    );
    assert!(
        lo <= per_cpu && per_cpu <= hi,
        "{line}: want {lo:.2} to {hi:.2}"
    );
    assert!(rate > 0.0, "{line}");
}

/// `experiment` writes its title first and each row as its run finishes, so a reader that stops
/// early (`acker-sim experiment | head -1`) ends the command at its next write, quietly with
/// status 0 (new-user trial: it ran all 75 runs, about 40 s, before writing anything). Bounded:
/// the first line must come within 30 s and the exit within 10 s after the pipe is closed, else
/// the process is killed and the test fails.
#[test]
fn experiment_stops_soon_after_its_reader_closes_stdout() {
    use std::io::BufRead;
    use std::time::{Duration, Instant};
    let mut child = bin()
        .args(["experiment"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run acker-sim");
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    // Reads the first line, then drops the pipe's read end (`head -1`).
    std::thread::spawn(move || {
        let mut line = String::new();
        let r = std::io::BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(r.map(|_| line));
    });
    let first = match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(line) => line.expect("read the first line"),
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("acker-sim experiment wrote no line within 30 s (killed)");
        }
    };
    assert!(first.starts_with("Reliability experiment: "), "{first:?}");
    let closed = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for acker-sim") {
            break status;
        }
        if closed.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("acker-sim experiment still ran 10 s after its stdout was closed (killed)");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    use std::io::Read;
    let _ = child.stderr.take().map(|mut e| e.read_to_string(&mut err));
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(!err.contains("error"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// A fault list with an empty item (`,`, `bolt-crash,`, `,bolt-crash`, `a,,b`) is refused by the
/// option's name, in `run` and `search` and in the user shapes' path (new-user trial: `--faults
/// ','` ran with no fault), and the library refuses it too; `none` and leaving it out still mean
/// no fault.
#[test]
fn empty_items_of_a_fault_list_are_refused() {
    for list in [
        ",",
        "bolt-crash,",
        ",bolt-crash",
        "bolt-crash,,acker-crash",
        " , ",
    ] {
        let expected = format!("invalid value '{list}' for '--faults <FAULTS>': item ");
        assert_usage_error(&["run", "--seed", "1", "--faults", list], &expected);
        assert_usage_error(
            &["run", "--seed", "1", "--shape", "join", "--faults", list],
            &expected,
        );
        assert_usage_error(&["search", "--seeds", "1", "--faults", list], &expected);
        assert!(parse_specs(list).is_err(), "{list:?}");
    }
    assert_usage_error(
        &["run", "--seed", "1", "--faults", "bolt-crash,"],
        "item 2 of 2 in the comma-separated list `bolt-crash,` is empty",
    );
    assert_usage_error(
        &["experiment", "--real", "--cells", "at-least-once/none/0,"],
        "invalid value 'at-least-once/none/0,' for '--cells <CELLS>': item 2 of 2",
    );
    // An empty value is refused too (final new-user trial: `--faults ''` ran as no fault, where
    // the README says `none` or leaving the option out does): only `none` says "no fault".
    for empty in ["", "  "] {
        assert_usage_error(
            &["run", "--seed", "1", "--faults", empty],
            &format!("invalid value '{empty}' for '--faults <FAULTS>': is empty (for no fault, give `none`"),
        );
    }
    assert_usage_error(
        &["experiment", "--real", "--cells", ""],
        "invalid value '' for '--cells <CELLS>': is empty",
    );
    let out = run_ok(&["run", "--seed", "1", "--tuples", "200", "--faults", "none"]);
    assert_eq!(line(&out, "faults:"), " none", "{out}");
}

/// A seed whose default run (1000 tuples) draws no fault from `message-loss~1/kt`.
const SEED_DRAWING_NO_LOSS: u64 = 1;
/// A seed whose default run draws at least one.
const SEED_DRAWING_LOSS: u64 = 2;

/// Every fault of `--faults` that fired 0 times gets a note, a rate that drew no fault from the
/// seed as well as a fault scheduled past the run's end (new-user trial: `message-loss~1/kt`
/// drawing none printed a bare `faults: none`); a rate that drew faults gets none.
#[test]
fn a_rate_that_drew_no_fault_is_reported_as_not_fired() {
    let note = "did not fire (0 times): its rate drew no fault from this seed";
    let out = run_ok(&["run", "--seed", "7", "--faults", "message-loss~0/s"]);
    assert_eq!(line(&out, "faults:"), " none", "{out}");
    assert!(
        out.contains(&format!("note: `message-loss~0/s` {note}")),
        "{out}"
    );
    // A seed whose draw of one fault per thousand tuples over 1000 tuples is empty, beside one
    // whose draw is not.
    let (_, _, fired) = library_run(SEED_DRAWING_NO_LOSS, "message-loss~1/kt");
    assert_eq!(fired, 0);
    let out = run_ok(&[
        "run",
        "--seed",
        &SEED_DRAWING_NO_LOSS.to_string(),
        "--faults",
        "message-loss~1/kt,acker-crash",
    ]);
    assert!(
        out.contains(&format!("note: `message-loss~1/kt` {note}")),
        "{out}"
    );
    assert!(!out.contains("`acker-crash`"), "{out}");
    let (_, _, fired) = library_run(SEED_DRAWING_LOSS, "message-loss~1/kt");
    assert!(fired > 0);
    let out = run_ok(&[
        "run",
        "--seed",
        &SEED_DRAWING_LOSS.to_string(),
        "--faults",
        "message-loss~1/kt",
    ]);
    assert!(!out.contains("note:"), "{out}");
    // The user shapes too.
    let out = run_ok(&[
        "run",
        "--seed",
        "3",
        "--shape",
        "join",
        "--faults",
        "bolt-crash~0/s",
    ]);
    assert!(
        out.contains(&format!("note: `bolt-crash~0/s` {note}")),
        "{out}"
    );
}

/// `experiment`'s default restart delay (1 ms, given in the title) fits its run, so a crashed
/// bolt comes back: at-most-once, one bolt crash at the middle of the input loses the backlog
/// queued at the bolt and what reaches it while down, not everything after the crash
/// (new-user trial: the 1 s default outlasted the run and the cell lost 88 %). At 20,000 tuples
/// the unthrottled spout emits the input in 10 ms of simulated time and the bolt needs 40 ms:
/// a bolt that never came back loses about 87 %, one back after 1 ms about 48 %. Every
/// relation still holds (exit status 0).
#[test]
fn experiment_s_crashed_bolt_comes_back_within_the_run() {
    let o = bin()
        .args(["experiment", "--json", "--tuples", "20000"])
        .bounded_output()
        .expect("run acker-sim");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 75);
    let lost = rows
        .iter()
        .find(|r| {
            r["guarantee"] == "at-most-once" && r["fault"] == "bolt-crash" && r["injected"] == 1
        })
        .and_then(|r| r["lost"].as_u64())
        .expect("the at-most-once bolt-crash row with one crash");
    assert!(
        lost > 0 && lost < 12_000,
        "lost {lost} of 20000: the bolt did not come back"
    );
    // The relations are in the JSON beside the rows (new-user trial: only the text table and
    // stderr said which held), as `{name, holds, detail}`.
    let relations = v["relations"].as_array().expect("relations");
    assert!(!relations.is_empty(), "{v}");
    for r in relations {
        assert!(r["name"].as_str().is_some_and(|n| !n.is_empty()), "{r}");
        assert_eq!(r["holds"], true, "{r}");
        assert!(r["detail"].is_string(), "{r}");
    }
    let out = run_ok(&["experiment", "--tuples", "6000"]);
    assert_eq!(
        out.lines().filter(|l| l.starts_with("  [holds] ")).count(),
        relations.len(),
        "the text lists the relations the JSON holds: {out}"
    );
    assert!(
        out.lines()
            .nth(1)
            .is_some_and(|l| l.contains(", restart delay 0.001 s, ")),
        "{out}"
    );
}

#[test]
fn swarm_refuses_faults_naming_both_options() {
    // Swarm mode draws each seed's faults itself: a --faults list would be ignored (new-user
    // trial), so the pair is refused before any seed runs.
    let o = bin()
        .args([
            "search",
            "--swarm",
            "--seeds",
            "3",
            "--faults",
            "acker-crash*1",
        ])
        .bounded_output()
        .expect("run acker-sim");
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("error: the argument '--swarm' cannot be used with '--faults <FAULTS>'"),
        "{err}"
    );
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    // Each alone still runs.
    assert!(
        run_ok(&["search", "--seeds", "2", "--faults", "acker-crash*1"])
            .ends_with("searched 2 seeds: 0 violating\n")
    );
    assert!(run_ok(&["search", "--seeds", "2", "--swarm"])
        .ends_with("searched 2 seeds (swarm): 0 violating\n"));
    let help = run_ok(&["search", "--help"]);
    assert!(
        help.contains("Not with --swarm, which draws each seed's fault kinds"),
        "{help}"
    );
}

#[test]
fn a_shape_refuses_the_options_it_does_not_take() {
    for (extra, named) in [
        (&["--tuples", "5"][..], "--tuples"),
        (&["--restart-delay", "2s"][..], "--restart-delay"),
        (&["--source-model", "redis"][..], "--source-model"),
        (&["--ackers", "1", "--bolts", "2"][..], "--ackers, --bolts"),
    ] {
        let mut args = vec!["run", "--shape", "join", "--seed", "1"];
        args.extend_from_slice(extra);
        assert_usage_error(
            &args,
            &format!(
                "acker-sim: error: --shape join runs a topology of its own sizes and timings, so \
                 it does not take {named} (a shape takes --seed, --faults, --fault-until, \
                 --trace, --check-determinism and --planted-bug)\n"
            ),
        );
    }
    // The options a shape takes still run it, and the experiment shape takes every option.
    let out = run_ok(&[
        "run",
        "--shape",
        "join",
        "--seed",
        "1",
        "--fault-until",
        "1s",
        "--faults",
        "none",
    ]);
    assert_eq!(
        out.lines().next(),
        Some("seed 1 (shape join, at-least-once)")
    );
    let out = run_ok(&[
        "run",
        "--shape",
        "experiment",
        "--seed",
        "1",
        "--tuples",
        "50",
    ]);
    assert_eq!(
        line(&out, "input "),
        "50  distinct 50  lost 0  duplicates 0  absorbed 0"
    );
    let help = run_ok(&["run", "--help"]);
    assert!(
        help.contains("any other option given with one is refused"),
        "{help}"
    );
}

#[test]
fn trace_dash_is_stdout_and_the_report_goes_to_stderr() {
    let dir = std::env::temp_dir().join(format!("acker-sim-trace-dash-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("trace.txt");
    let o = bin()
        .current_dir(&dir)
        .args(["run", "--seed", "1", "--trace", "-"])
        .bounded_output()
        .expect("run acker-sim");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // No file named `-`; stdout is the trace, line for line the file's.
    assert!(!dir.join("-").exists(), "--trace - made a file named -");
    let to_file = bin()
        .current_dir(&dir)
        .args(["run", "--seed", "1", "--trace", "trace.txt"])
        .bounded_output()
        .expect("run acker-sim");
    assert_eq!(to_file.status.code(), Some(0), "{}", stderr(&to_file));
    let trace = std::fs::read_to_string(&file).expect("trace file");
    assert_eq!(trace.lines().count(), 6000);
    assert_eq!(String::from_utf8_lossy(&o.stdout), trace);
    // The report, on stderr, is the one a file trace prints on stdout.
    let report = String::from_utf8_lossy(&to_file.stdout).into_owned();
    assert!(report.starts_with("seed 1 (at-least-once)\n"), "{report}");
    let on_stderr: String = stderr(&o)
        .lines()
        .filter(|l| !l.starts_with("acker-sim: wall "))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(on_stderr, report);
    // Also for a shape.
    let o = bin()
        .current_dir(&dir)
        .args(["run", "--shape", "join", "--seed", "1", "--trace", "-"])
        .bounded_output()
        .expect("run acker-sim");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        !dir.join("-").exists(),
        "--shape join --trace - made a file named -"
    );
    assert!(
        stderr(&o).starts_with("seed 1 (shape join, at-least-once)\n"),
        "{}",
        stderr(&o)
    );
    assert!(!o.stdout.is_empty());
    assert!(!String::from_utf8_lossy(&o.stdout).contains("verdict"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_output_file_that_cannot_be_written_is_named() {
    assert_usage_error(
        &["run", "--seed", "1", "--trace", "/dev/full"],
        "acker-sim: error: cannot write --trace file /dev/full: No space left on device",
    );
    assert_usage_error(
        &[
            "run",
            "--shape",
            "join",
            "--seed",
            "1",
            "--trace",
            "/dev/full",
        ],
        "acker-sim: error: cannot write --trace file /dev/full: No space left on device",
    );
    assert_usage_error(
        &["run", "--seed", "1", "--trace", "/nonexistent-dir/t.txt"],
        "acker-sim: error: cannot create --trace file /nonexistent-dir/t.txt: No such file",
    );
    assert_usage_error(
        &["experiment", "--plot", "-"],
        "acker-sim: error: --plot - is not taken: the plot is an SVG file",
    );
}

#[test]
fn seeds_have_a_documented_upper_bound() {
    // The last seed as the first: without the bound this would be refused for running past
    // u64::MAX instead (and never start a search of 10 million seeds).
    for n in ["10000001", "99999999999", "18446744073709551616"] {
        assert_usage_error(
            &[
                "search",
                "--first-seed",
                "18446744073709551615",
                "--seeds",
                n,
            ],
            &format!(
                "error: invalid value '{n}' for '--seeds <SEEDS>': must be at most 10000000 \
                 (about 2.5 ms a seed at 1000 tuples: hours of search; split a larger search \
                 into parts with --first-seed)"
            ),
        );
    }
    // The bound itself is taken (listed from the last seed: refused only for running past it).
    assert_usage_error(
        &[
            "search",
            "--first-seed",
            "18446744073709551615",
            "--seeds",
            "10000000",
        ],
        "acker-sim: error: --first-seed 18446744073709551615 and --seeds 10000000 run past the \
         last seed",
    );
    let help = run_ok(&["search", "--help"]);
    assert!(
        help.contains("How many seeds to run, 1 to 10000000"),
        "{help}"
    );
}

#[test]
fn progress_every_writes_lines_to_stderr_and_leaves_stdout_alone() {
    let args = ["search", "--seeds", "400", "--first-seed", "5"];
    let plain = bin().args(args).bounded_output().expect("run acker-sim");
    assert_eq!(plain.status.code(), Some(0), "{}", stderr(&plain));
    let o = bin()
        .args(args)
        .args(["--progress-every", "100ms"])
        .bounded_output()
        .expect("run acker-sim");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(o.stdout, plain.stdout);
    let lines: Vec<String> = stderr(&o)
        .lines()
        .filter(|l| l.starts_with("acker-sim: progress: "))
        .map(str::to_string)
        .collect();
    // 400 seeds take well over 100 ms: at least one line, the counts rising, each below 400.
    let done: Vec<u64> = lines
        .iter()
        .map(|l| {
            let rest = l.strip_prefix("acker-sim: progress: ").unwrap_or("");
            let (n, tail) = rest.split_once("/400 seeds, 0 violating, ").expect(l);
            assert!(tail.ends_with(" s left"), "{l}");
            n.parse().expect(l)
        })
        .collect();
    assert!(!done.is_empty(), "{}", stderr(&o));
    assert!(done.windows(2).all(|w| w[0] < w[1]), "{lines:?}");
    assert!(done.iter().all(|&n| n < 400), "{lines:?}");
    assert!(!stderr(&plain).contains("progress"), "{}", stderr(&plain));
    assert_usage_error(
        &["search", "--seeds", "2", "--progress-every", "0s"],
        "error: invalid value '0s' for '--progress-every <INTERVAL>': must be at least 100ms",
    );
}

/// An interval so short that a line would go out after every seed is refused (it took 9 s to
/// search 5 seeds at `1ns`, catching up one interval at a time).
#[test]
fn progress_every_below_100ms_is_refused() {
    for v in ["1ns", "99ms", "0.05s"] {
        assert_usage_error(
            &["search", "--seeds", "5", "--progress-every", v],
            &format!("error: invalid value '{v}' for '--progress-every <INTERVAL>': must be at least 100ms"),
        );
    }
    run_ok(&["search", "--seeds", "2", "--progress-every", "100ms"]);
}

/// Every duration option needs a unit: a bare number (`30`, read as nanoseconds before) is
/// refused by option and value with the units it takes; `0` needs none.
#[test]
fn a_duration_without_a_unit_is_refused() {
    for (opt, cmd) in [
        ("--timeout", "run"),
        ("--tick", "run"),
        ("--local-latency", "run"),
        ("--spout-ns", "run"),
        ("--bolt-ns", "run"),
        ("--acker-ns", "run"),
        ("--restart-delay", "run"),
        ("--partition", "run"),
        ("--outage", "run"),
        ("--fault-until", "run"),
        ("--time-limit", "run"),
        ("--progress-every", "search"),
    ] {
        let placeholder = if opt == "--progress-every" {
            "<INTERVAL>".to_string()
        } else {
            format!(
                "<{}>",
                opt.trim_start_matches("--")
                    .replace('-', "_")
                    .to_uppercase()
            )
        };
        assert_usage_error(
            &[cmd, opt, "30"],
            &format!(
                "error: invalid value '30' for '{opt} {placeholder}': `30` has no unit; a \
                 duration needs one of the units ns, us, ms, s (e.g. 30s or 30ms)"
            ),
        );
    }
    assert_usage_error(
        &["run", "--latency", "50..150us"],
        "invalid value '50..150us' for '--latency <LATENCY>': `50` has no unit",
    );
    assert_usage_error(
        &["experiment", "--real", "--cell-limit", "60"],
        "invalid value '60' for '--cell-limit <CELL_LIMIT>': `60` has no unit",
    );
    run_ok(&[
        "run",
        "--seed",
        "1",
        "--restart-delay",
        "0",
        "--timeout",
        "30s",
    ]);
    let help = run_ok(&["run", "--help"]);
    assert!(
        help.contains("a bare number other than 0 is\nrefused")
            || help.contains("a bare number other than 0 is refused"),
        "{help}"
    );
}

#[test]
fn fault_list_errors_quote_the_whole_list_and_the_bad_item() {
    let known =
        "known faults: bolt-exception-before-emit, bolt-exception-after-emit, spout-crash, \
                 acker-crash, bolt-crash, worker-crash, message-loss, partition, source-outage, \
                 sink-outage\n";
    assert_usage_error(
        &["run", "--seed", "1", "--faults", "acker-crash*2,bogus"],
        &format!(
            "acker-sim: error: --faults `acker-crash*2,bogus`: item 2 of 2 (`bogus`): unknown \
             fault `bogus`; {known}"
        ),
    );
    assert_usage_error(
        &["search", "--seeds", "1", "--faults", "bogus,acker-crash*2"],
        &format!(
            "acker-sim: error: --faults `bogus,acker-crash*2`: item 1 of 2 (`bogus`): unknown \
             fault `bogus`; {known}"
        ),
    );
    // A target the topology lacks: the message quotes the item already, and now the list.
    assert_usage_error(
        &[
            "run",
            "--seed",
            "1",
            "--faults",
            "acker-crash*2,bolt-crash:9",
        ],
        "acker-sim: error: --faults `acker-crash*2,bolt-crash:9`: bad fault target in \
         `bolt-crash:9`: target 9",
    );
    assert_usage_error(
        &[
            "run",
            "--shape",
            "join",
            "--seed",
            "1",
            "--faults",
            "acker-crash*2,bogus",
        ],
        "acker-sim: error: --faults `acker-crash*2,bogus`: unknown fault `bogus`",
    );
}

#[test]
fn swarm_says_which_options_its_shape_seeds_do_not_take() {
    let warning = "acker-sim: warning: --tuples, --restart-delay apply to the swarm's experiment \
                   seeds only: its shape seeds run topologies of their own sizes and timings \
                   (their replay lines say so by leaving them out)\n";
    let args = [
        "search",
        "--swarm",
        "--seeds",
        "3",
        "--tuples",
        "500",
        "--restart-delay",
        "2s",
    ];
    let o = bin().args(args).bounded_output().expect("run acker-sim");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).starts_with(warning), "{}", stderr(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "searched 3 seeds (swarm): 0 violating\n"
    );
    // No warning where every seed takes them: without --swarm, or a guarantee no shape runs.
    for args in [
        &["search", "--seeds", "3", "--tuples", "500"][..],
        &[
            "search",
            "--swarm",
            "--guarantee",
            "exactly-once",
            "--seeds",
            "3",
            "--tuples",
            "500",
        ],
        &["search", "--swarm", "--seeds", "3", "--fault-until", "1s"],
    ] {
        let o = bin().args(args).bounded_output().expect("run acker-sim");
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("warning"), "{args:?}: {}", stderr(&o));
    }
}

/// Runs `acker-sim args` with stderr `stderr` (stdout captured), killed after 120 s.
fn output_with_stderr(args: &[&str], stderr: Stdio) -> Output {
    let mut child = bin()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("run acker-sim");
    // A piped stderr is closed here at once: the reader is gone before anything is written.
    drop(child.stderr.take());
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(std::time::Duration::from_secs(120)) {
        Ok(o) => o.expect("wait for acker-sim"),
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            panic!("acker-sim {args:?} did not exit within 120 s (killed)")
        }
    }
}

/// New-user trial: a progress line or the closing rate line written to a full (`2>/dev/full`)
/// or closed (`2>&1 | head -1`) stderr panicked with exit status 101. Such a write error is
/// ignored: the exit status and stdout are those of a run with a working stderr.
#[test]
fn a_full_or_closed_stderr_does_not_panic() {
    for args in [
        &["run", "--seed", "1"][..],
        &["search", "--seeds", "20"][..],
        &["search", "--seeds", "400", "--progress-every", "100ms"][..],
    ] {
        let plain = bin().args(args).bounded_output().expect("run acker-sim");
        assert_eq!(plain.status.code(), Some(0), "{args:?}: {}", stderr(&plain));
        let full = std::fs::File::create("/dev/full").expect("open /dev/full");
        for (how, o) in [
            ("2>/dev/full", output_with_stderr(args, full.into())),
            ("closed stderr", output_with_stderr(args, Stdio::piped())),
        ] {
            assert_eq!(o.status.code(), Some(0), "{args:?} {how}");
            assert_eq!(
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&plain.stdout),
                "{args:?} {how}"
            );
        }
    }
}

/// At-most-once runs no acker task: `--ackers` is refused with it (new-user trial: it was
/// ignored), acker crashes are said on stderr, left out of the `faults:` line and counted in a
/// note (they were listed as fired), and a search's replay line for an at-most-once seed names
/// no `--ackers`, so that it runs.
#[test]
fn at_most_once_refuses_ackers_and_does_not_list_acker_crashes_as_fired() {
    let refusal = "acker-sim: error: --guarantee at-most-once runs no acker task, so it does not \
                   take --ackers (leave it out, or use --guarantee at-least-once or exactly-once)";
    for args in [
        &[
            "run",
            "--seed",
            "7",
            "--guarantee",
            "at-most-once",
            "--ackers",
            "5",
        ][..],
        &[
            "run",
            "--seed",
            "7",
            "--guarantee",
            "at-most-once",
            "--ackers",
            "1",
        ][..],
        &[
            "search",
            "--seeds",
            "1",
            "--guarantee",
            "at-most-once",
            "--ackers",
            "2",
        ][..],
    ] {
        assert_usage_error(args, refusal);
    }
    assert_usage_error(
        &[
            "search",
            "--seeds",
            "1",
            "--guarantee",
            "at-most-once",
            "--faults",
            "acker-crash*2",
        ],
        "acker-sim: error: --guarantee at-most-once runs no acker task, so the acker-crash \
         faults of --faults `acker-crash*2` would do nothing in every seed: leave them out",
    );
    let o = bin()
        .args(["run", "--seed", "7", "--guarantee", "at-most-once"])
        .args(["--faults", "acker-crash*2,bolt-crash"])
        .bounded_output()
        .expect("run acker-sim");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(line(&out, "faults:"), " bolt-crash@#500:0", "{out}");
    assert_eq!(
        line(&out, "note:"),
        " 2 acker-crash fault(s) did nothing: at-most-once runs no acker task",
        "{out}"
    );
    assert!(
        stderr(&o).contains(
            "acker-sim: warning: --guarantee at-most-once runs no acker task, so the acker-crash \
             faults of --faults `acker-crash*2,bolt-crash` do nothing"
        ),
        "{}",
        stderr(&o)
    );
    // At-least-once lists them as before.
    let out = run_ok(&["run", "--seed", "7", "--faults", "acker-crash*2"]);
    assert_eq!(
        line(&out, "faults:"),
        " acker-crash@#333:0,acker-crash@#666:0",
        "{out}"
    );
    // Seeds 1 to 3 turn through at-least-once, exactly-once and at-most-once.
    let listed = run_ok(&["search", "--list", "--seeds", "3", "--ackers", "2"]);
    let lines: Vec<&str> = listed.lines().collect();
    assert!(
        lines[0].contains("--guarantee at-least-once --ackers 2 "),
        "{listed}"
    );
    assert!(
        lines[2].starts_with("acker-sim run --seed 3 --guarantee at-most-once --faults "),
        "{listed}"
    );
    let replay = lines[2].replacen("acker-sim", env!("CARGO_BIN_EXE_acker-sim"), 1);
    let o = Command::new("sh")
        .args(["-c", &replay])
        .bounded_output()
        .expect("run the replay line");
    assert_eq!(o.status.code(), Some(0), "{replay}: {}", stderr(&o));
}

/// `none` beside faults is refused (it was skipped and the faults ran), in every command.
#[test]
fn none_with_other_faults_is_refused() {
    let msg = "`none` means no fault and cannot be listed with faults in `none,bolt-crash` (give \
               `none` alone, or the faults without it)";
    for args in [
        &["run", "--seed", "1", "--faults", "none,bolt-crash"][..],
        &[
            "run",
            "--seed",
            "1",
            "--shape",
            "join",
            "--faults",
            "none,bolt-crash",
        ][..],
        &["search", "--seeds", "1", "--faults", "none,bolt-crash"][..],
    ] {
        assert_usage_error(
            args,
            &format!("error: invalid value 'none,bolt-crash' for '--faults <FAULTS>': {msg}"),
        );
    }
    let out = run_ok(&["run", "--seed", "1", "--faults", "none"]);
    assert_eq!(line(&out, "faults:"), " none", "{out}");
    assert!(acker_sim::fault::parse_specs("bolt-crash, none").is_err());
    assert_eq!(acker_sim::fault::parse_specs("none"), Ok(Vec::new()));
}

/// `--partition 0` is refused as `--outage 0` is (a partition of no time).
#[test]
fn a_zero_partition_is_refused_like_a_zero_outage() {
    for opt in ["--partition", "--outage"] {
        let placeholder = opt.trim_start_matches("--").to_uppercase();
        assert_usage_error(
            &["run", "--seed", "1", opt, "0"],
            &format!("error: invalid value '0' for '{opt} <{placeholder}>': must be more than 0"),
        );
    }
    run_ok(&["run", "--seed", "1", "--partition", "1ms"]);
}

/// A fault time needs a unit as every duration option does: `bolt-crash@5000` (read as 5000 ns
/// before) is refused with the same message; `@0` needs none.
#[test]
fn a_fault_time_without_a_unit_is_refused() {
    let msg = "bad fault time: `5000` has no unit; a duration needs one of the units ns, us, ms, \
               s (e.g. 5000s or 5000ms)";
    assert_usage_error(
        &["run", "--seed", "1", "--faults", "bolt-crash@5000"],
        &format!("acker-sim: error: {msg}\n"),
    );
    assert_usage_error(
        &[
            "run",
            "--seed",
            "1",
            "--faults",
            "acker-crash,bolt-crash@5000*2",
        ],
        &format!(
            "acker-sim: error: --faults `acker-crash,bolt-crash@5000*2`: item 2 of 2 \
             (`bolt-crash@5000*2`): {msg}\n"
        ),
    );
    assert_usage_error(
        &["search", "--seeds", "1", "--faults", "bolt-crash@5000"],
        msg,
    );
    assert_usage_error(
        &[
            "run",
            "--seed",
            "1",
            "--shape",
            "join",
            "--faults",
            "bolt-crash@5000",
        ],
        msg,
    );
    let out = run_ok(&["run", "--seed", "1", "--faults", "bolt-crash@0"]);
    assert_eq!(line(&out, "faults:"), " bolt-crash@0ns:0", "{out}");
    let out = run_ok(&["run", "--seed", "1", "--faults", "bolt-crash@5us"]);
    assert_eq!(line(&out, "faults:"), " bolt-crash@5us:0", "{out}");
}

/// A user-topology shape has no source or sink server: `run --shape` refuses the outages
/// (new-user trial: `--shape join --faults sink-outage` fired and did nothing), naming the fault,
/// the shape and the faults it can use; a swarm's shape seeds drop the outages they draw, so
/// their replay lines run; and a shape's "did not fire" note suggests no `--tuples`, which a
/// shape refuses.
#[test]
fn a_shape_refuses_the_faults_it_cannot_use() {
    let usable = "bolt-exception-before-emit, bolt-exception-after-emit, spout-crash, \
                  acker-crash, bolt-crash, worker-crash, message-loss, partition\n";
    assert_usage_error(
        &[
            "run",
            "--shape",
            "join",
            "--seed",
            "1",
            "--faults",
            "sink-outage",
        ],
        &format!(
            "acker-sim: error: --shape join cannot use the fault sink-outage (`sink-outage` in \
             --faults): a shape has no source or sink server, so it would fire and do nothing; \
             --shape join can use {usable}"
        ),
    );
    assert_usage_error(
        &[
            "run",
            "--shape",
            "all-grouping",
            "--seed",
            "1",
            "--faults",
            "bolt-crash,source-outage@1s",
        ],
        "--shape all-grouping cannot use the fault source-outage (`source-outage@1s` in --faults)",
    );
    // The experiment takes them.
    run_ok(&["run", "--seed", "1", "--faults", "sink-outage"]);
    // A fault past a shape's end: the note gives what a shape takes.
    let out = run_ok(&[
        "run",
        "--shape",
        "join",
        "--seed",
        "1",
        "--faults",
        "bolt-crash@100s",
    ]);
    let note = line(&out, "note:");
    assert!(note.ends_with("(give an earlier trigger)"), "{out}");
    assert!(!out.contains("--tuples"), "{out}");
    // A swarm shape seed whose draw holds an outage.
    let seed = (1..500u64)
        .find(|&seed| {
            let shape = acker_sim::shapes::Shape::for_seed(seed);
            let Some(mut sim) = shape.simulation(seed, None) else {
                return false;
            };
            sim.set_swarm_faults(2.0 * 30.0).expect("swarm faults");
            sim.options().faults.iter().any(|f| {
                matches!(
                    f.kind,
                    acker_sim::fault::FaultKind::SourceOutage
                        | acker_sim::fault::FaultKind::SinkOutage
                )
            })
        })
        .expect("a shape seed drawing an outage");
    let listed = run_ok(&[
        "search",
        "--swarm",
        "--list",
        "--first-seed",
        &seed.to_string(),
        "--seeds",
        "1",
    ]);
    let replay = listed.lines().next().expect("a replay line");
    assert!(replay.contains("--shape "), "{listed}");
    assert!(!replay.contains("outage"), "{listed}");
    let o = Command::new("sh")
        .args([
            "-c",
            &replay.replacen("acker-sim", env!("CARGO_BIN_EXE_acker-sim"), 1),
        ])
        .bounded_output()
        .expect("run the replay line");
    assert_eq!(o.status.code(), Some(0), "{replay}: {}", stderr(&o));
}

/// The enforced limits of `--ackers`, `--bolts` and `--max-spout-pending` are in `--help`
/// (new-user trial: found only by being refused), and the value given is the one enforced.
#[test]
fn help_states_the_parallelism_and_pending_limits_the_code_enforces() {
    let o = bin()
        .args(["run", "--help"])
        .bounded_output()
        .expect("help");
    let help = String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for (option, limit) in [
        ("--ackers <ACKERS> Acker tasks, ", "1 to 1000"),
        ("--bolts <BOLTS> Processing bolt tasks, ", "1 to 1000"),
        (
            "--max-spout-pending <MAX_SPOUT_PENDING> Max spout pending (topology.max.spout.pending), ",
            "1 to 1000000",
        ),
    ] {
        assert!(help.contains(&format!("{option}{limit}")), "{option}: {help}");
    }
    assert_usage_error(
        &["run", "--seed", "1", "--ackers", "1001"],
        "--ackers must be between 1 and 1000",
    );
    assert_usage_error(
        &["run", "--seed", "1", "--bolts", "1001"],
        "--bolts must be between 1 and 1000",
    );
    assert_usage_error(
        &["run", "--seed", "1", "--max-spout-pending", "1000001"],
        "--max-spout-pending (at most 1000000) is too large for one run",
    );
    run_ok(&[
        "run", "--seed", "1", "--ackers", "1000", "--bolts", "1000", "--tuples", "10",
    ]);
}

/// A plot that cannot be written is said once, naming the file (new-user trial: `--plot
/// /dev/full` printed "backend error" twice over), and a run that fails leaves no plot behind:
/// neither a 0-byte file (new-user trial: `--plot x.svg > /dev/full`) nor a changed older one;
/// a run that succeeds writes the whole plot and no temporary file.
#[test]
fn a_plot_is_written_whole_or_not_at_all() {
    let small = [
        "experiment",
        "--tuples",
        "600",
        "--max-spout-pending",
        "100",
    ];
    let o = bin()
        .args(small)
        .args(["--plot", "/dev/full"])
        .stdout(Stdio::null())
        .bounded_output_own_stdout()
        .expect("run acker-sim");
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "acker-sim: error: cannot write --plot /dev/full: No space left on device (os error 28)\n"
        ),
        "{err}"
    );
    assert_eq!(err.matches("/dev/full").count(), 1, "{err}");
    assert!(!err.contains("backend error"), "{err}");

    let dir = std::env::temp_dir().join(format!("acker-sim-plot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let plot = dir.join("x.svg");
    let full_stdout = |plot: &std::path::Path| {
        let devfull = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full");
        let o = bin()
            .args(small)
            .arg("--plot")
            .arg(plot)
            .stdout(devfull)
            .bounded_output_own_stdout()
            .expect("run acker-sim");
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("cannot write to stdout"),
            "{}",
            stderr(&o)
        );
    };
    full_stdout(&plot);
    assert!(!plot.exists(), "a failed run left {}", plot.display());
    std::fs::write(&plot, "older plot").expect("older plot");
    full_stdout(&plot);
    assert_eq!(
        std::fs::read_to_string(&plot).expect("older plot"),
        "older plot"
    );
    run_ok(&[
        "experiment",
        "--tuples",
        "600",
        "--max-spout-pending",
        "100",
        "--plot",
        plot.to_str().expect("utf-8 path"),
    ]);
    let svg = std::fs::read_to_string(&plot).expect("the plot");
    assert!(
        svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
        "{svg}"
    );
    let names: Vec<String> = std::fs::read_dir(&dir)
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["x.svg"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every `acker-sim run` example of the README's command block runs and prints what it is there
/// to show (new-user trial: `run --seed 7 --trace - | grep fault` printed nothing, as seed 7
/// without faults has none, and seed 7 drew no message loss from `message-loss~1/kt`).
#[test]
fn the_readme_s_run_examples_print_what_they_show() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("sim/README.md");
    let dir = std::env::temp_dir().join(format!("acker-sim-readme-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let prefix = "cargo run --release -p acker-sim -- run ";
    let mut ran = 0;
    for example in readme.lines().filter(|l| l.starts_with(prefix)) {
        // The shell comment after the command, if any.
        let command = example.split("   # ").next().unwrap_or(example).trim();
        let command = command.replacen(
            "cargo run --release -p acker-sim --",
            env!("CARGO_BIN_EXE_acker-sim"),
            1,
        );
        let o = Command::new("sh")
            .current_dir(&dir)
            .args(["-c", &command])
            .bounded_output()
            .expect("run the example");
        assert_eq!(o.status.code(), Some(0), "{example}: {}", stderr(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(!out.trim().is_empty(), "{example} printed nothing");
        if command.contains("| grep fault") {
            assert!(
                out.lines().count() >= 1 && out.lines().all(|l| l.contains(" fault ")),
                "{example}: {out}"
            );
        }
        if command.contains("message-loss") {
            assert!(
                line(&out, "faults:").contains("message-loss@"),
                "{example}: {out}"
            );
            assert!(!out.contains("did not fire"), "{example}: {out}");
            // The text under the block quotes this run's output.
            let faults = line(&out, "faults:").trim();
            let hash = line(&out, "trace hash ").trim();
            assert!(readme.contains(faults) && readme.contains(hash), "{out}");
        }
        ran += 1;
    }
    assert_eq!(ran, 2, "{readme}");
    let _ = std::fs::remove_dir_all(&dir);
}
