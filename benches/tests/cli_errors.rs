//! `acker-bench` on bad arguments and on a stdout it cannot write: a one-line message on stderr
//! and exit status 2 (never a panic, status 101), or a quiet exit 0 when the reader of a pipe
//! closed it early. Runs use tiny windows and op counts, so each takes milliseconds.

use std::collections::BTreeSet;
use std::process::{Command, Output, Stdio};

/// `compare --quick` on one window of 100 roots, 2000 timed messages.
const TINY: [&str; 6] = ["compare", "--quick", "--windows", "100", "--ops", "2000"];

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_acker-bench"))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn run(extra: &[&str]) -> Output {
    bin()
        .args(TINY)
        .args(extra)
        .output()
        .expect("run acker-bench")
}

/// Runs the tiny compare plus `extra` and asserts exit status 2 and that stderr names `expected`.
fn assert_usage_error(extra: &[&str], expected: &str) {
    let o = run(extra);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{extra:?}: {err}");
    assert!(err.contains(expected), "{extra:?}: stderr was {err:?}");
    assert!(!err.contains("panicked"), "{extra:?}: {err}");
    assert!(o.stdout.is_empty(), "{extra:?}");
}

/// The structure names `--only` lists as valid, read from its error for an unknown name.
fn listed_names() -> Vec<String> {
    let err = stderr(&run(&["--only", "bogus"]));
    let list = err
        .split_once("[possible values: ")
        .and_then(|(_, rest)| rest.split_once(']'))
        .unwrap_or_else(|| panic!("no possible values in {err}"))
        .0;
    list.split(", ").map(str::to_string).collect()
}

/// The structures a run reported, from its `ran NAME ...` progress lines on stderr.
fn ran(o: &Output) -> BTreeSet<String> {
    stderr(o)
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("ran "))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

#[test]
fn unknown_only_names_are_refused_listing_the_valid_ones() {
    assert_usage_error(
        &["--only", "bogus"],
        "invalid value 'bogus' for '--only <ONLY>': no structure is named `bogus` [possible \
         values: acker-core, ",
    );
    assert_usage_error(
        &["--only", "acker-core,hashbrwn"],
        "invalid value 'acker-core,hashbrwn' for '--only <ONLY>': item 2 of 2 (`hashbrwn`): no \
         structure is named `hashbrwn` [possible values: acker-core, ",
    );
}

#[test]
fn the_listed_names_are_exactly_the_structures_compare_runs() {
    let names = listed_names();
    assert_eq!(names.len(), 10, "{names:?}");
    // Without --only every structure runs (shared ones at 1 thread): the same set of names.
    let all = run(&["--threads", "1"]);
    assert_eq!(all.status.code(), Some(0), "{}", stderr(&all));
    let listed: BTreeSet<String> = names.iter().cloned().collect();
    assert_eq!(ran(&all), listed);
    // The legend under the tables explains every structure that ran, once, and the columns.
    let out = String::from_utf8_lossy(&all.stdout);
    let legend: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("  "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(legend, names, "{out}");
    assert!(out.contains("\ncolumns: Mops/s"), "{out}");
    // And each name selects just that structure.
    for (name, threads) in [("storm-style", "0"), ("mutex-hashbrown", "1")] {
        let o = run(&["--threads", threads, "--only", name]);
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        assert_eq!(ran(&o), BTreeSet::from([name.to_string()]));
        let out = String::from_utf8_lossy(&o.stdout);
        let about: Vec<&str> = out.lines().filter(|l| l.starts_with("  ")).collect();
        assert_eq!(about.len(), 1, "{name}: {out}");
        assert!(about[0].trim_start().starts_with(name), "{name}: {out}");
    }
}

#[test]
fn in_loop_runs_each_selected_structure_in_both_modes_and_rows_say_which() {
    let o = run(&[
        "--threads",
        "0",
        "--only",
        "acker-core,hashbrown-lean",
        "--in-loop",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json rows");
    let got: Vec<(String, String)> = rows["rows"]
        .as_array()
        .expect("rows array")
        .iter()
        .map(|r| {
            (
                r["structure"].as_str().unwrap().to_string(),
                r["mode"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want = [
        ("acker-core", "pregenerated"),
        ("hashbrown-lean", "pregenerated"),
        ("acker-core", "in-loop"),
        ("hashbrown-lean", "in-loop"),
    ]
    .map(|(s, m)| (s.to_string(), m.to_string()));
    assert_eq!(got, want, "{rows}");
    // Without --in-loop: pregenerated only.
    let o = run(&["--threads", "0", "--only", "hashbrown-lean", "--json"]);
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json rows");
    assert_eq!(rows["rows"].as_array().map(Vec::len), Some(1), "{rows}");
    assert_eq!(rows["rows"][0]["mode"], "pregenerated", "{rows}");
}

#[test]
fn zero_and_negative_counts_are_refused_by_name() {
    assert_usage_error(
        &["--reps", "0"],
        "invalid value '0' for '--reps <REPS>': must be at least 1",
    );
    assert_usage_error(
        &["--reps", "1001"],
        "invalid value '1001' for '--reps <REPS>': must be at most 1000 (repetitions of each run)",
    );
    assert_usage_error(
        &["--reps", "-1"],
        "invalid value '-1' for '--reps <REPS>': must not be negative (at least 1)",
    );
    let o = bin()
        .args(["compare", "--quick", "--ops", "0"])
        .output()
        .expect("run acker-bench");
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("invalid value '0' for '--ops <OPS>': must be at least 1000"));
    assert_usage_error(
        &["--windows", "100,-5"],
        "invalid value '100,-5' for '--windows <WINDOWS>': item 2 of 2 (`-5`): must not be \
         negative",
    );
    assert_usage_error(
        &["--threads", "-2"],
        "'--threads <THREADS>': must not be negative",
    );
    assert_usage_error(
        &["--acks-per-tree", "0"],
        "'--acks-per-tree <ACKS_PER_TREE>': must be at least 1",
    );
    assert_usage_error(&["--seed", "-7"], "'--seed <SEED>': must not be negative");
    // A new-user trial: no bound let a k no tree can complete through, and more threads than
    // roots ran a window rounded up to the thread count (the table showed no row, the JSON
    // another window).
    assert_usage_error(
        &["--acks-per-tree", "18446744073709551615"],
        "'--acks-per-tree <ACKS_PER_TREE>': must be at most 1000 (acks per tree)",
    );
    let o = bin()
        .args([
            "compare",
            "--quick",
            "--windows",
            "1000",
            "--threads",
            "1024",
        ])
        .output()
        .expect("run acker-bench");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--threads 1024 is more than the smallest window (--windows 1000)"),
        "{}",
        stderr(&o)
    );
}

#[cfg(target_os = "linux")]
#[test]
fn full_stdout_is_an_error_not_a_panic() {
    for json in [false, true] {
        let full = std::fs::File::create("/dev/full").expect("open /dev/full");
        let mut cmd = bin();
        cmd.args(TINY)
            .args(["--threads", "0", "--only", "acker-core"]);
        if json {
            cmd.arg("--json");
        }
        let o = cmd.stdout(full).output().expect("run acker-bench");
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "json {json}: {err}");
        assert!(
            err.ends_with(
                "acker-bench: error: cannot write to stdout: No space left on device (os error 28)\n"
            ),
            "json {json}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn closed_pipe_exits_quietly() {
    let mut child = bin()
        .args(TINY)
        .args(["--threads", "0", "--only", "acker-core", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run acker-bench");
    drop(child.stdout.take());
    let o = child.wait_with_output().expect("wait for acker-bench");
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(err, "");
}

#[test]
fn help_documents_the_exit_statuses() {
    let o = bin()
        .arg("--help")
        .output()
        .expect("run acker-bench --help");
    assert!(o.status.success());
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(help.contains("Exit status: 0 on success"), "{help}");
    assert!(help.contains("closed early"), "{help}");
}

#[test]
fn windows_ops_and_threads_have_documented_limits() {
    // Refused while parsing: no op stream or table is built, nothing large is allocated.
    let o = bin()
        .args(["compare", "--quick", "--windows", "99999999999999"])
        .output()
        .expect("run acker-bench");
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "invalid value '99999999999999' for '--windows <WINDOWS>': must be at most 10000000 \
             (roots in flight; about 240 bytes a root)\n"
        ),
        "{err}"
    );
    assert_usage_error(
        &["--windows", "100,10000001"],
        "invalid value '100,10000001' for '--windows <WINDOWS>': item 2 of 2 (`10000001`): must \
         be at most 10000000",
    );
    assert_usage_error(
        &["--windows", "99999999999999999999999"],
        "invalid value '99999999999999999999999' for '--windows <WINDOWS>': must be at most \
         10000000",
    );
    let o = bin()
        .args([
            "compare",
            "--threads",
            "99999999999",
            "--windows",
            "1000",
            "--only",
            "acker-core-shared",
        ])
        .output()
        .expect("run acker-bench");
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "invalid value '99999999999' for '--threads <THREADS>': must be at most 1024 \
             (threads a shared-table run)\n"
        ),
        "{err}"
    );
    assert_usage_error(
        &["--threads", "1,1025"],
        "invalid value '1,1025' for '--threads <THREADS>': item 2 of 2 (`1025`): must be at \
         most 1024",
    );
    let o = bin()
        .args(["compare", "--quick", "--ops", "100000001"])
        .output()
        .expect("run acker-bench");
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "invalid value '100000001' for '--ops <OPS>': must be at most 100000000 (timed \
             messages a run; 24 bytes each)\n"
        ),
        "{err}"
    );
    // The limits themselves are accepted: 1024 threads on a window of 1024 roots run and
    // report that window.
    let o = bin()
        .args([
            "compare",
            "--quick",
            "--windows",
            "1024",
            "--ops",
            "4096",
            "--threads",
            "1024",
        ])
        .args(["--only", "acker-core-shared", "--json"])
        .output()
        .expect("run acker-bench");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json rows");
    assert_eq!(rows["rows"][0]["threads"], 1024, "{rows}");
    assert_eq!(rows["rows"][0]["window"], 1024, "{rows}");
    // The help states every limit.
    let o = bin()
        .args(["compare", "--help"])
        .output()
        .expect("run acker-bench compare --help");
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(help.contains("each 1 to 10000000"), "{help}");
    assert!(help.contains("1000 to 100000000 (24 bytes each;"), "{help}");
    assert!(help.contains("each 1 to 1024 (0 alone skips"), "{help}");
}

/// `--threads 0` with `--only` naming shared tables only would run nothing: refused instead of
/// an empty table with exit 0 (new-user trial).
#[test]
fn only_shared_tables_with_threads_zero_is_refused() {
    assert_usage_error(
        &["--only", "acker-core-shared,dashmap", "--threads", "0"],
        "acker-bench: error: --only acker-core-shared,dashmap names shared tables only, and \
         --threads 0 skips the shared tables: nothing to run",
    );
    let o = run(&["--only", "acker-core,dashmap", "--threads", "0"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(ran(&o), BTreeSet::from(["acker-core".to_string()]));
}

#[test]
fn threads_zero_must_stand_alone() {
    for threads in ["0,2", "2,0", "0,0"] {
        let o = run(&["--threads", threads]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{threads}: {err}");
        assert_eq!(
            err,
            format!(
                "acker-bench: error: --threads 0 skips the shared tables and must be given \
                 alone; thread counts are 1 to 1024 (got {threads})\n"
            )
        );
        assert!(o.stdout.is_empty(), "{threads}");
    }
    // Alone it runs the single-owner tables only.
    let o = run(&["--threads", "0", "--only", "acker-core,acker-core-shared"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(ran(&o), BTreeSet::from(["acker-core".to_string()]));
}

#[test]
fn list_errors_quote_the_whole_list_and_the_bad_item() {
    // New-user trial: `--windows ','` said "invalid value ''", quoting neither the list nor
    // which item was wrong.
    for (args, expected) in [
        (
            &["--windows", ","][..],
            "error: invalid value ',' for '--windows <WINDOWS>': item 1 of 2 in the \
             comma-separated list `,` is empty (no comma before the first item, after the last \
             or next to another)\n",
        ),
        (
            &["--windows", ""][..],
            "error: invalid value '' for '--windows <WINDOWS>': is empty (give at least one \
             comma-separated item)\n",
        ),
        (
            &["--windows", "10,x"][..],
            "error: invalid value '10,x' for '--windows <WINDOWS>': item 2 of 2 (`x`): must be a \
             whole number >= 1\n",
        ),
        (
            &["--threads", "1,,2"][..],
            "error: invalid value '1,,2' for '--threads <THREADS>': item 2 of 3 in the \
             comma-separated list `1,,2` is empty",
        ),
        (
            &["--only", "acker-core,"][..],
            "error: invalid value 'acker-core,' for '--only <ONLY>': item 2 of 2 in the \
             comma-separated list `acker-core,` is empty",
        ),
    ] {
        assert_usage_error(args, expected);
    }
    // A list option given twice adds its lists together, as before.
    let o = run(&[
        "--windows",
        "200",
        "--only",
        "hashbrown",
        "--only",
        "storm-style",
        "--threads",
        "0",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let mut seen: Vec<(String, u64)> = rows["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            (
                r["structure"].as_str().unwrap_or("").to_string(),
                r["window"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            ("hashbrown".to_string(), 100),
            ("hashbrown".to_string(), 200),
            ("storm-style".to_string(), 100),
            ("storm-style".to_string(), 200)
        ]
    );
}

/// Options with no effect on any structure `--only` selects are refused (new-user trial: they
/// were ignored): thread counts with single-owner tables only, `--in-loop` with shared tables
/// only. `--threads 0` (no shared table) and the defaults still run.
#[test]
fn options_without_effect_on_the_selected_structures_are_refused() {
    assert_usage_error(
        &["--only", "storm-style", "--threads", "4"],
        "acker-bench: error: --threads 4 sets the thread counts of the shared tables \
         (acker-core-shared, acker-core-shared-batch, mutex-hashbrown, dashmap), and --only \
         storm-style names none of them: leave --threads out\n",
    );
    assert_usage_error(
        &["--only", "dashmap", "--in-loop"],
        "acker-bench: error: --in-loop also runs the single-owner tables with each message \
         produced in the timed loop, and --only dashmap names shared tables only (they run \
         pregenerated only): leave --in-loop out\n",
    );
    for extra in [
        &["--only", "storm-style"][..],
        &["--only", "storm-style", "--threads", "0"][..],
        &[
            "--only",
            "storm-style,dashmap",
            "--threads",
            "1",
            "--in-loop",
        ][..],
        &["--only", "dashmap", "--threads", "1"][..],
    ] {
        let o = run(extra);
        assert_eq!(o.status.code(), Some(0), "{extra:?}: {}", stderr(&o));
    }
}

/// `acker-bench ARGS` under `ulimit -v KIB` (a shell sets the limit, then becomes acker-bench),
/// killed after 60 s (no test may hang).
fn under_ulimit_v(kib: u64, args: &[&str]) -> Output {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {kib} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_acker-bench"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run acker-bench");
    let start = std::time::Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            panic!("ulimit -v {kib}; acker-bench {args:?} did not end within 60 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

/// New-user trial: `compare --windows 1000000 --threads 0 --reps 1 --only acker-core` under
/// `ulimit -v 100000` died of SIGABRT (`memory allocation of 192000000 bytes failed`, a
/// backtrace, exit 134), as did `--only acker-core-shared --threads 2`. The run's memory is
/// estimated before any op stream is generated and refused by name, with the estimate and the
/// limit: exit 2. What fits still runs.
#[test]
fn windows_too_large_for_the_memory_limit_are_refused_before_allocating() {
    for extra in [
        ["--threads", "0", "--only", "acker-core"],
        ["--threads", "2", "--only", "acker-core-shared"],
    ] {
        let mut args = vec!["compare", "--windows", "1000000", "--reps", "1"];
        args.extend(extra);
        let o = under_ulimit_v(100_000, &args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        for words in [
            "acker-bench: error: --windows 1000000 needs about ",
            " MB of memory (8000000 timed messages and 1000000 prefill inits at 24 B, and the ",
            "under its limit of 102.4 MB (`ulimit -v`; it maps ",
            ": lower --windows or --ops",
        ] {
            assert!(err.contains(words), "{args:?}: {err}");
        }
        assert!(o.stdout.is_empty(), "{args:?}");
    }
    // The same window with few timed messages fits in 100 MB (about 70 MB resident) and runs.
    let o = under_ulimit_v(
        100_000,
        &[
            "compare",
            "--windows",
            "1000000",
            "--ops",
            "100000",
            "--reps",
            "1",
            "--threads",
            "2",
            "--only",
            "acker-core-shared",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// New-user trial: `compare --windows 1 --ops 1` timed one message and printed meaningless
/// figures (80 bytes a slot for a table of 20-byte slots). `--ops` below 1000 is refused, naming
/// the minimum, and `--help` documents it; 1000 runs. The JSON rows carry the text rows' Full
/// column as `full`, beside the existing keys.
#[test]
fn too_few_timed_messages_are_refused_and_json_rows_carry_full() {
    for ops in ["1", "999"] {
        let o = bin()
            .args(["compare", "--windows", "1", "--ops", ops])
            .output()
            .expect("run acker-bench");
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "--ops {ops}: {err}");
        assert!(
            err.contains(&format!(
                "invalid value '{ops}' for '--ops <OPS>': must be at least 1000 (timed messages \
                 a run: fewer take too little time for meaningful figures)"
            )),
            "{err}"
        );
        assert!(o.stdout.is_empty());
    }
    let help = bin()
        .args(["compare", "--help"])
        .output()
        .expect("run acker-bench");
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("1000 to 100000000"), "{help}");
    let o = bin()
        .args([
            "compare",
            "--windows",
            "100",
            "--ops",
            "1000",
            "--reps",
            "1",
            "--threads",
            "0",
            "--only",
            "acker-core",
            "--json",
        ])
        .output()
        .expect("run acker-bench");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json rows");
    let row = &rows["rows"][0];
    for key in ["structure", "mode", "window", "mops", "bytes_per_root"] {
        assert!(row.get(key).is_some(), "{key}: {rows}");
    }
    assert_eq!(row["full"], 0, "{rows}");
}
