//! `acker-run` on bad arguments and on a stdout it cannot write: a one-line message on stderr
//! and exit status 2 (never a panic, status 101), or a quiet exit 0 when the reader of a pipe
//! closed it early.

mod common;

use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// How long one `acker-run` may take in these tests.
const LIMIT: Duration = Duration::from_secs(60);

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_acker-run"))
}

/// A three-line input file unique to `name`, so each test runs in milliseconds.
fn tiny_input(name: &str) -> common::TempFile {
    common::TempFile::with_text(&format!("run-cli-{name}"), "a b c\nb c\nc\n")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A connector job's arguments naming servers that do not exist (port 1): an argument check
/// must refuse the run before any connection attempt, else the error names Redis.
#[cfg(all(feature = "redis", feature = "postgres"))]
const NO_SERVERS: [&str; 7] = [
    "wordcount",
    "--redis",
    "redis://127.0.0.1:1/",
    "--stream",
    "s",
    "--postgres",
    "postgresql://nobody@127.0.0.1:1/none",
];

/// Runs `acker-run` with `args` and asserts exit status 2 and that stderr names `expected`.
fn assert_usage_error(args: &[&str], expected: &str) {
    let o = common::output_bounded(bin().args(args), LIMIT, &format!("acker-run {args:?}"));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(expected), "{args:?}: stderr was {err:?}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert!(o.stdout.is_empty(), "{args:?}");
}

/// The message of an argument error as clap prints its own (`error: MESSAGE`, then, except for
/// clap's own invalid-value errors, a blank line and the subcommand's usage, then a blank line
/// and `For more information, try '--help'.`): checks that frame and returns `error: MESSAGE`
/// and a newline, for a test to compare the message whole.
fn message_of_argument_error(stderr: &str, subcommand: &str) -> String {
    let tail = "\n\nFor more information, try '--help'.\n";
    assert!(
        stderr.starts_with("error: ") && stderr.ends_with(tail),
        "not clap's argument-error form: {stderr:?}"
    );
    let end = match stderr.find("\n\nUsage: ") {
        Some(at) => {
            assert!(
                stderr[at..].starts_with(&format!("\n\nUsage: acker-run {subcommand} ")),
                "the usage is not that of `acker-run {subcommand}`: {stderr:?}"
            );
            at
        }
        None => stderr.len() - tail.len(),
    };
    format!("{}\n", &stderr[..end])
}

#[test]
fn every_argument_error_has_the_form_of_clap_s_own() {
    // One refused by clap while parsing, the others by the program's checks after parsing: a
    // user sees one form (message, usage of the subcommand, the pointer to --help), exit 2.
    let cases: [(&[&str], &str, &str); 6] = [
        (
            &["wordcount", "--max-spout-pending", "1.5"],
            "wordcount",
            "error: invalid value '1.5' for '--max-spout-pending <MAX_SPOUT_PENDING>': must be a \
             whole number\n",
        ),
        (
            &["wordcount", "--cores", "0"],
            "wordcount",
            "error: --cores must be at least 1\n",
        ),
        (
            &["bench", "pipeline", "--seconds", "-2"],
            "bench pipeline",
            "error: --seconds must be in (0, 3600), got -2\n",
        ),
        (
            &[
                "wordcount",
                "--acker-capacity",
                "10",
                "--max-spout-pending",
                "100",
            ],
            "wordcount",
            "error: --acker-capacity 10 x 1 acker(s) holds fewer roots than the spouts may keep \
             pending (1 spout task(s) x max spout pending 100): raise --acker-capacity or lower \
             --max-spout-pending\n",
        ),
        (
            // New-user trial: the message did not name the flag.
            &["wordcount", "--ackers", "100000", "--cores", "1"],
            "wordcount",
            "error: tasks plus ackers exceed 65535 (task ids 0 to 65534; the id 65535 is \
             reserved: a component's tasks are a half-open range of 16-bit task ids whose end \
             must fit in one): this topology has 3 task(s), so --ackers may be at most 65532 \
             (got 100000); with these options at most 16384: the roots the spouts may keep \
             pending (1 spout task(s) x max spout pending 16384), since an acker past them can \
             never hold a root\n",
        ),
        (
            // New-user trial: `--ackers 65535` was told "at most 65530", then 65530 was refused
            // by the pending bound; the first message now gives both.
            &[
                "wordcount",
                "--ackers",
                "65535",
                "--cores",
                "1",
                "--max-spout-pending",
                "7",
            ],
            "wordcount",
            "error: tasks plus ackers exceed 65535 (task ids 0 to 65534; the id 65535 is \
             reserved: a component's tasks are a half-open range of 16-bit task ids whose end \
             must fit in one): this topology has 3 task(s), so --ackers may be at most 65532 \
             (got 65535); with these options at most 7: the roots the spouts may keep pending (1 \
             spout task(s) x max spout pending 7), since an acker past them can never hold a \
             root\n",
        ),
    ];
    for (args, sub, want) in cases {
        let o = common::output_bounded(bin().args(args), LIMIT, &format!("acker-run {args:?}"));
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert_eq!(
            message_of_argument_error(&stderr(&o), sub),
            want,
            "{args:?}"
        );
        assert!(o.stdout.is_empty(), "{args:?}");
    }
}

#[cfg(target_os = "linux")]
#[test]
fn full_stdout_is_an_error_not_a_panic() {
    let input = tiny_input("full");
    for json in [true, false] {
        let mut cmd = bin();
        cmd.args(["wordcount", "--cores", "1", "--no-pin", "--input"])
            .arg(&input);
        if json {
            cmd.arg("--json");
        }
        let full = std::fs::File::create("/dev/full").expect("open /dev/full");
        let child = cmd
            .stdout(full)
            .stderr(Stdio::piped())
            .spawn()
            .expect("run acker-run");
        let o = common::wait_bounded(child, None, LIMIT, "acker-run > /dev/full");
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "json {json}: {err}");
        assert_eq!(
            err.trim_end(),
            "acker-run: error: cannot write to stdout: No space left on device (os error 28)",
            "json {json}"
        );
    }
    let _ = std::fs::remove_file(input);
}

#[test]
fn closed_pipe_exits_quietly() {
    let input = tiny_input("pipe");
    let mut child = bin()
        .args(["wordcount", "--cores", "1", "--no-pin", "--input"])
        .arg(&input)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run acker-run");
    // Close the read end before the run prints anything: its first write gets EPIPE.
    drop(child.stdout.take());
    let o = common::wait_bounded(child, None, LIMIT, "acker-run | (closed pipe)");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
    let _ = std::fs::remove_file(input);
}

#[test]
fn negative_numbers_are_refused_by_name() {
    assert_usage_error(
        &["wordcount", "--cores", "-1"],
        "invalid value '-1' for '--cores <CORES>': must not be negative\n",
    );
    assert_usage_error(
        &["wordcount", "--seed", "-3"],
        "invalid value '-3' for '--seed <SEED>': must not be negative",
    );
    assert_usage_error(
        &["wordcount", "--max-spout-pending", "-5"],
        "'--max-spout-pending <MAX_SPOUT_PENDING>': must not be negative",
    );
    assert_usage_error(
        &["wordcount", "--timeout-secs", "-1"],
        "'--timeout-secs <TIMEOUT_SECS>': must not be negative",
    );
    assert_usage_error(
        &["wordcount", "--fail-rate", "-0.1"],
        "error: --fail-rate must be in [0, 1), got -0.1",
    );
    assert_usage_error(
        &["bench", "pipeline", "--seconds", "-2"],
        "error: --seconds must be in (0, 3600), got -2",
    );
    // New-user trial: `--seconds 5ms` said only "invalid float literal".
    assert_usage_error(
        &["bench", "pipeline", "--seconds", "5ms"],
        "invalid value '5ms' for '--seconds <SECONDS>': expected a number of seconds such as 2.5",
    );
    assert_usage_error(
        &["wordcount", "--cores", "0"],
        "error: --cores must be at least 1",
    );
    assert_usage_error(
        &["wordcount", "--max-spout-pending", "1.5"],
        "'--max-spout-pending <MAX_SPOUT_PENDING>': must be a whole number\n",
    );
}

#[test]
fn bench_wordcount_min_mb_must_be_at_least_one() {
    let input = tiny_input("minmb");
    let input = input.to_str().expect("utf-8 temp path");
    assert_usage_error(
        &["bench", "wordcount", "--input", input, "--min-mb", "0"],
        "invalid value '0' for '--min-mb <MIN_MB>': must be at least 1",
    );
    assert_usage_error(
        &["bench", "wordcount", "--input", input, "--min-mb", "-4"],
        "'--min-mb <MIN_MB>': must not be negative",
    );
    assert_usage_error(
        &[
            "bench",
            "wordcount",
            "--input",
            input,
            "--min-mb",
            "99999999999",
        ],
        "error: --min-mb must be in 1..=1000000, got 99999999999",
    );
    let _ = std::fs::remove_file(input);
}

/// `--colocate-ackers` with no ackers is refused as `--acker-capacity` is (new-user trial: it was
/// accepted and ignored).
#[test]
fn colocate_ackers_without_ackers_is_refused() {
    let input = tiny_input("colocate");
    let input = input.to_str().expect("utf-8 temp path");
    assert_usage_error(
        &[
            "wordcount",
            "--input",
            input,
            "--ackers",
            "0",
            "--colocate-ackers",
        ],
        "--colocate-ackers was given, but this run has no ackers (at-most-once: nothing is \
         tracked): leave --colocate-ackers out",
    );
}

/// `--acker-park-capacity` with no ackers is refused as `--colocate-ackers` is (new-user trial:
/// `bench wordcount --ackers 0 --acker-park-capacity 5` was accepted and ignored).
#[test]
fn acker_park_capacity_without_ackers_is_refused() {
    let input = tiny_input("park-no-ackers");
    let input = input.to_str().expect("utf-8 temp path");
    for sub in [&["wordcount"][..], &["bench", "wordcount"][..]] {
        let mut args = sub.to_vec();
        args.extend([
            "--input",
            input,
            "--ackers",
            "0",
            "--acker-park-capacity",
            "5",
        ]);
        let o = common::output_bounded(bin().args(&args), LIMIT, &format!("acker-run {args:?}"));
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert_eq!(
            message_of_argument_error(&stderr(&o), &sub.join(" ")),
            "error: --acker-park-capacity 5 was given, but this run has no ackers (--ackers 0, \
             at-most-once: nothing is tracked): leave --acker-park-capacity out\n",
            "{args:?}"
        );
    }
    // With an acker it runs.
    let o = common::output_bounded(
        bin().args(["wordcount", "--input", input, "--acker-park-capacity", "5"]),
        LIMIT,
        "acker-run wordcount --acker-park-capacity 5",
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// `bench wordcount --input` reads as `wordcount --input` does (new-user trial): an input of
/// whitespace only is refused (it printed `ratio: null` with exit 0), a file that is not UTF-8
/// names the offset of the first bad byte, and `-` is standard input.
#[test]
fn bench_wordcount_reads_its_input_as_wordcount_does() {
    let blank = common::TempFile::with_text("bench-blank", "\n  \n");
    let blank = blank.to_str().expect("utf-8 temp path");
    assert_usage_error(
        &["bench", "wordcount", "--input", blank, "--min-mb", "1"],
        &format!("error: input {blank} holds no word (only whitespace): nothing to count"),
    );
    let path = std::env::temp_dir().join(format!("acker-bench-bad-{}.txt", std::process::id()));
    std::fs::write(&path, b"ok \xff no\n").expect("write bad input");
    let bad = path.to_str().expect("utf-8 temp path");
    assert_usage_error(
        &["bench", "wordcount", "--input", bad, "--min-mb", "1"],
        &format!("error: input {bad} is not UTF-8: invalid byte at offset 3 (0-based)"),
    );
    let _ = std::fs::remove_file(&path);
    let o = common::output_with_stdin(
        bin().args([
            "bench",
            "wordcount",
            "--input",
            "-",
            "--min-mb",
            "1",
            "--rounds",
            "1",
            "--cores",
            "1",
            "--no-pin",
        ]),
        b"to be or not to be\n",
        LIMIT,
        "bench wordcount -",
    );
    let v = common::json_of_success(&o);
    assert_eq!(v["plain_words"], v["topology_words"], "{v}");
    assert_eq!(v["plain_distinct"], 4, "{v}");
}

/// New-user trial: `bench wordcount --input - </dev/null` said `input - is empty`, where every
/// other message calls `-` standard input; and an unknown option after `--min-mb 3` printed
/// `Usage: acker-run bench wordcount --input <INPUT> --min-mb <MIN_MB>`, as if `--min-mb` were
/// required (clap lists the options the error was about), as `bench pipeline` did `--seconds`.
#[test]
fn bench_messages_name_standard_input_and_usage_shows_options_optional() {
    let o = common::output_with_stdin(
        bin().args(["bench", "wordcount", "--input", "-", "--min-mb", "1"]),
        b"",
        LIMIT,
        "bench wordcount - (empty)",
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("error: standard input is empty"),
        "{}",
        stderr(&o)
    );
    for (args, usage) in [
        (
            &[
                "bench",
                "wordcount",
                "--input",
                "x",
                "--min-mb",
                "3",
                "--fail-rate",
                "0.1",
            ][..],
            "Usage: acker-run bench wordcount --input <PATH> [OPTIONS]\n",
        ),
        (
            &["bench", "pipeline", "--seconds", "1", "--fail-rate", "0.1"][..],
            "Usage: acker-run bench pipeline [OPTIONS]\n",
        ),
    ] {
        let o = common::output_bounded(bin().args(args), LIMIT, &format!("acker-run {args:?}"));
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = stderr(&o);
        assert!(
            err.contains("error: unexpected argument '--fail-rate' found") && err.contains(usage),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn help_documents_the_exit_statuses() {
    let o = common::output_bounded(bin().arg("--help"), LIMIT, "acker-run --help");
    assert!(o.status.success());
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(help.contains("Exit status: 0 on success"), "{help}");
    assert!(help.contains("closed early"), "{help}");
    // Also under `wordcount --help`, with the statuses a signal gives (new-user trial: 130 for
    // Ctrl-C was missing); `signals_end_a_run_as_the_help_says` checks them on real runs.
    for args in [&["--help"][..], &["wordcount", "--help"][..]] {
        let o = common::output_bounded(bin().args(args), LIMIT, &format!("acker-run {args:?}"));
        let help = String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        for needle in [
            "Exit status: 0 on success",
            "130 on SIGINT (Ctrl-C) and 143 on SIGTERM",
            "SIGINT and SIGTERM stop it cleanly",
            "and it exits 0",
            // A second signal during the stop exits at once (new-user trial: it was ignored).
            "a second SIGINT or SIGTERM exits at once with 130 or 143",
            "the entries read and not acked stay pending in the Redis consumer group",
        ] {
            assert!(
                help.contains(needle),
                "{args:?}: {needle:?} missing from {help}"
            );
        }
    }
}

/// What `--help` says a signal does: a run other than a connector worker installs no handler,
/// so SIGINT (Ctrl-C) and SIGTERM end it by the signal (a shell reports 130 and 143). (The
/// connector worker's clean stop and exit 0 on SIGINT and SIGTERM are checked in
/// `connectors.rs` against real servers.)
#[cfg(unix)]
#[test]
fn signals_end_a_run_as_the_help_says() {
    use std::os::unix::process::ExitStatusExt;
    for (name, number) in [("INT", 2), ("TERM", 15)] {
        let child = bin()
            .args([
                "bench",
                "pipeline",
                "--seconds",
                "30",
                "--cores",
                "1",
                "--no-pin",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run acker-run bench pipeline");
        // Let it start its run (a signal before would end it the same way).
        std::thread::sleep(Duration::from_millis(300));
        let sent = Command::new("kill")
            .args([&format!("-{name}"), &child.id().to_string()])
            .status()
            .expect("kill");
        assert!(sent.success(), "kill -{name}");
        let started = std::time::Instant::now();
        let o = common::wait_bounded(child, None, LIMIT, &format!("acker-run after SIG{name}"));
        assert_eq!(
            (o.status.code(), o.status.signal()),
            (None, Some(number)),
            "SIG{name}: {}",
            stderr(&o)
        );
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "SIG{name} took {:?}",
            started.elapsed()
        );
        assert!(o.stdout.is_empty(), "SIG{name}: no summary");
    }
}

/// `--max-spout-pending`'s defaults as `--help` states them are the values the code uses: the
/// runtime's `DEFAULT_PENDING_CAPACITY` for the built-in job, and what the connector job
/// computes from the default `--read-batch` (new-user trial: `--help` said "unbounded").
#[cfg(all(feature = "redis", feature = "postgres"))]
#[test]
fn help_states_the_max_spout_pending_defaults_the_code_uses() {
    use acker_runtime::connectors::wordcount::spout_pending;
    let o = common::output_bounded(
        bin().args(["wordcount", "--help"]),
        LIMIT,
        "acker-run wordcount --help",
    );
    let help = String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(help.contains("--read-batch <READ_BATCH> Entries per XREADGROUP and ids per XACK (1 to 100000) [default: 500]"), "{help}");
    let (in_flight, pending) = spout_pending(None, 500);
    assert_eq!((in_flight, pending), (2000, 2001));
    assert_eq!(spout_pending(Some(7), 500), (7, 8));
    for needle in [
        format!("Default {} (the runtime's fixed-size pending set", acker_runtime::DEFAULT_PENDING_CAPACITY),
        format!("With `wordcount --redis` the default is {pending} instead: 4 x --read-batch ({in_flight} at the default 500)"),
        "N given here means N trees in flight and N + 1 slots".to_string(),
    ] {
        assert!(help.contains(&needle), "{needle:?} missing from {help}");
    }
    assert!(!help.contains("unbounded up to"), "{help}");
}

/// clap's usage line shows every `wordcount` option as optional, also in an error about one of
/// them (new-user trial: `Usage: acker-run wordcount --input <INPUT>`, as if required).
#[test]
fn usage_line_shows_input_as_optional() {
    let input = tiny_input("usage");
    let o = common::output_bounded(
        bin().args(["wordcount", "--bogus", "--input"]).arg(&input),
        LIMIT,
        "acker-run wordcount --bogus --input FILE",
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "\nUsage: acker-run wordcount [--input <PATH>] [OPTIONS]\n       acker-run wordcount \
             --redis <URL> --stream <NAME> --postgres <URL> [OPTIONS]\n"
        ),
        "{err}"
    );
    assert!(!err.contains("Usage: acker-run wordcount --input"), "{err}");
    let _ = std::fs::remove_file(input);
}

#[test]
fn acker_park_capacity_has_a_documented_limit() {
    // Refused before any table or park queue is built: these runs allocate nothing large.
    for v in ["99999999999", "4294967296", "1000000000", "16777217"] {
        assert_usage_error(
            &["wordcount", "--acker-park-capacity", v],
            &format!(
                "error: --acker-park-capacity must be at most 16777216 messages (each \
                 acker preallocates 72 to 104 bytes a parked message), got {v}\n"
            ),
        );
    }
    assert_usage_error(
        &[
            "bench",
            "pipeline",
            "--seconds",
            "1",
            "--acker-park-capacity",
            "99999999999",
        ],
        "--acker-park-capacity must be at most 16777216 messages",
    );
    assert_usage_error(
        &[
            "wordcount",
            "--acker-park-capacity",
            "99999999999999999999999",
        ],
        "invalid value '99999999999999999999999' for '--acker-park-capacity \
         <ACKER_PARK_CAPACITY>': is too large (more than 2^64 - 1)",
    );
    let o = common::output_bounded(
        bin().args(["wordcount", "--help"]),
        LIMIT,
        "acker-run wordcount --help",
    );
    assert!(o.status.success());
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(help.contains("0 to 16777216"), "{help}");
    assert!(help.contains("72 to 104 bytes a message"), "{help}");
    // Every figure of the summary is explained, and the memory bound stated.
    for figure in [
        "exact ",
        "at-least-once",
        "at-most-once",
        "pieces: E emitted, R replayed",
        "header             the input's lines holding a word (L) and the pieces (P)",
        "trees: A acked",
        "complete latency",
        "component table",
        "__acker",
        "elapsed",
        "peak memory",
        "2 x the input size + 200 MB",
    ] {
        assert!(help.contains(figure), "{figure:?} missing from {help}");
    }
}

/// Connector-only options without `--redis/--stream/--postgres` are refused instead of silently
/// ignored (a user ran the built-in job with `--poison-rate 0.5` and `--guarantee exactly-once`
/// and got no warning).
#[cfg(all(feature = "redis", feature = "postgres"))]
#[test]
fn connector_options_without_the_connectors_are_refused() {
    assert_usage_error(
        &["wordcount", "--poison-rate", "0.5"],
        "--poison-rate only applies with --redis URL --stream NAME --postgres URL",
    );
    assert_usage_error(
        &["wordcount", "--guarantee", "exactly-once", "--drain"],
        "--guarantee, --drain only apply with --redis URL",
    );
    // Every connector-only option, not only some (new-user trial: --retry-initial-ms,
    // --read-batch, --sink-batch, --group, --max-retries and --progress-secs ran the built-in job
    // silently); the note on the built-in job's guarantee only where --guarantee was given.
    let all = [
        ("--group", "g"),
        ("--max-retries", "2"),
        ("--retry-initial-ms", "5"),
        ("--retry-max-ms", "50"),
        ("--read-batch", "7"),
        ("--sink-batch", "9"),
        ("--sink-tasks", "2"),
        ("--progress-secs", "1"),
    ];
    for (option, value) in all {
        let o = common::output_bounded(
            bin().args(["wordcount", option, value]),
            LIMIT,
            &format!("acker-run wordcount {option} {value}"),
        );
        assert_eq!(o.status.code(), Some(2), "{option}");
        let err = stderr(&o);
        assert!(
            err.starts_with(&format!(
                "error: {option} only applies with --redis URL --stream NAME --postgres URL\n"
            )),
            "{option}: {err}"
        );
    }
}

/// Built-in-job options given with connector options: the error names exactly the options of
/// each side that were given (new-user trial: it named `--fail-rate` when only `--input` was
/// given).
#[cfg(all(feature = "redis", feature = "postgres"))]
#[test]
fn connector_conflicts_name_exactly_the_options_given() {
    let load_hint = "the connector job reads its lines from the stream: load a file into it with \
                     `acker-run load --input FILE --redis URL --stream NAME`";
    let fail_hint = "the connector job's failure injection is --poison-rate";
    let cases: [(&[&str], String); 3] = [
        (
            &[
                "wordcount",
                "--input",
                "f.txt",
                "--redis",
                "redis://127.0.0.1:1/",
            ],
            format!(
                "error: --input does not go with --redis ({load_hint}); leave out \
                 --input, or leave out --redis to run the built-in job\n"
            ),
        ),
        (
            &[
                "wordcount",
                "--fail-rate",
                "0.1",
                "--stream",
                "s",
                "--postgres",
                "postgresql://u@127.0.0.1:1/d",
            ],
            format!(
                "error: --fail-rate does not go with --stream, --postgres ({fail_hint}); \
                 leave out --fail-rate, or leave out --stream, --postgres to run the built-in job\n"
            ),
        ),
        (
            &[
                "wordcount",
                "--input",
                "f.txt",
                "--fail-rate",
                "0.5",
                "--redis",
                "redis://127.0.0.1:1/",
                "--stream",
                "s",
                "--postgres",
                "postgresql://u@127.0.0.1:1/d",
            ],
            format!(
                "error: --input and --fail-rate do not go with --redis, --stream, \
                 --postgres ({load_hint}; {fail_hint}); leave out --input and --fail-rate, or \
                 leave out --redis, --stream, --postgres to run the built-in job\n"
            ),
        ),
    ];
    for (args, want) in cases {
        let o = common::output_bounded(bin().args(args), LIMIT, &format!("acker-run {args:?}"));
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert_eq!(
            message_of_argument_error(&stderr(&o), "wordcount"),
            want,
            "{args:?}"
        );
    }
}

/// A URL that does not parse is a bad argument: exit 2, a message saying what is wrong and
/// showing a good URL, and no connection attempt to any server (new-user trial: `--redis
/// redis//localhost` was reported as "cannot reach Redis at ... did not parse-
/// InvalidClientConfig"). The other URL of each run points at a listener that counts the
/// connections it accepts: none may arrive. A valid URL of a server that is not there still
/// gives "cannot reach".
#[cfg(all(feature = "redis", feature = "postgres"))]
#[test]
fn malformed_urls_are_bad_arguments_before_any_connection() {
    use std::net::TcpListener;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a local port");
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicU64::new(0));
    {
        let accepted = accepted.clone();
        std::thread::spawn(move || {
            for c in listener.incoming() {
                accepted.fetch_add(1, Ordering::SeqCst);
                drop(c);
            }
        });
    }
    let input = tiny_input("badurl");
    let input = input.to_str().unwrap();
    let (good_redis, good_pg) = (
        format!("redis://127.0.0.1:{port}/"),
        format!("postgresql://postgres@127.0.0.1:{port}/x"),
    );
    let redis_tail =
        "; give one like redis://127.0.0.1:6379/ (redis://[USER:PASSWORD@]HOST[:PORT][/DB], \
                      or redis+unix:///PATH/TO/SOCKET)\n";
    let pg_tail = "; give one like postgresql://postgres@127.0.0.1:5432/postgres \
                   (postgresql://USER[:PASSWORD]@HOST[:PORT]/DB, or key=value pairs such as \
                   'host=127.0.0.1 user=postgres')\n";
    let redis_cases = [
        (
            "redis//localhost",
            "it has no scheme (it must start with redis://)",
        ),
        (
            "http://x",
            "its scheme is http:// (redis://, rediss://, redis+unix:// or unix:// are accepted)",
        ),
        (
            "redis://h:99999/",
            "it does not parse as a URL (invalid port number)",
        ),
        ("redis://", "Missing hostname"),
        ("redis://127.0.0.1/abc", "Invalid database number"),
    ];
    let pg_cases = [
        (
            "http://x",
            "its scheme is http:// (postgresql:// or postgres:// are accepted)",
        ),
        (
            "postgresql://u@h:abc/db",
            "invalid connection string: invalid value for option `port`",
        ),
        ("postgresql://", "it names no host"),
        ("nonsense", "invalid connection string: unexpected EOF"),
    ];
    for (url, what) in redis_cases {
        let want = format!("error: --redis {url:?} is not a Redis URL: {what}{redis_tail}");
        let wordcount = [
            "wordcount",
            "--redis",
            url,
            "--stream",
            "s",
            "--postgres",
            &good_pg,
            "--drain",
        ];
        let load = ["load", "--input", input, "--redis", url, "--stream", "s"];
        for args in [&wordcount[..], &load[..]] {
            let o = common::output_bounded(bin().args(args), LIMIT, &format!("acker-run {args:?}"));
            assert_eq!(
                (
                    o.status.code(),
                    message_of_argument_error(&stderr(&o), args[0])
                ),
                (Some(2), want.clone()),
                "{args:?}"
            );
        }
    }
    for (url, what) in pg_cases {
        let want = format!("error: --postgres {url:?} is not a PostgreSQL URL: {what}{pg_tail}");
        let wordcount = [
            "wordcount",
            "--redis",
            &good_redis,
            "--stream",
            "s",
            "--postgres",
            url,
            "--drain",
        ];
        let counts = ["counts", "--postgres", url];
        for args in [&wordcount[..], &counts[..]] {
            let o = common::output_bounded(bin().args(args), LIMIT, &format!("acker-run {args:?}"));
            assert_eq!(
                (
                    o.status.code(),
                    message_of_argument_error(&stderr(&o), args[0])
                ),
                (Some(2), want.clone()),
                "{args:?}"
            );
        }
    }
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        0,
        "connections made for a malformed URL"
    );
    // Valid but unreachable (port 1 is closed): still "cannot reach", exit 2.
    assert_usage_error(
        &["counts", "--postgres", "postgresql://u@127.0.0.1:1/x"],
        "acker-run: error: cannot reach PostgreSQL at postgresql://u@127.0.0.1:1/x: ",
    );
    assert_usage_error(
        &[
            "load",
            "--input",
            input,
            "--redis",
            "redis://127.0.0.1:1/",
            "--stream",
            "s",
        ],
        "acker-run: error: cannot reach Redis at redis://127.0.0.1:1/: ",
    );
}

/// A server that accepts connections and never answers (here: a listener that holds every
/// connection open) gives the "unreachable at start" error with exit status 2 within the
/// connect timeout, for Redis and for PostgreSQL, instead of a hang: both client libraries'
/// handshakes wait without a timeout (found by a new-user trial: `load`, `counts` and
/// `wordcount` hung past 60 s). Bounded: each run may take at most `LIMIT`.
#[cfg(all(feature = "redis", feature = "postgres"))]
#[test]
fn a_silent_server_is_an_error_not_a_hang() {
    use std::net::TcpListener;
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a local port");
    let port = listener.local_addr().unwrap().port();
    // Accept and hold every connection, answering nothing, until the test ends.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in listener.incoming() {
            held.push(c);
        }
    });
    let input = tiny_input("silent");
    let input = input.to_str().unwrap();
    let redis = format!("redis://127.0.0.1:{port}/");
    let pg = format!("postgresql://postgres@127.0.0.1:{port}/x");
    let runs: [(&[&str], &str); 3] = [
        (
            &["load", "--input", input, "--redis", &redis, "--stream", "s"],
            "Redis",
        ),
        (&["counts", "--postgres", &pg], "PostgreSQL"),
        (
            &[
                "wordcount",
                "--redis",
                &redis,
                "--stream",
                "s",
                "--postgres",
                &pg,
                "--drain",
            ],
            "Redis",
        ),
    ];
    for (args, server) in runs {
        let started = std::time::Instant::now();
        assert_usage_error(args, "did not answer");
        let o = common::output_bounded(bin().args(args), LIMIT, &format!("acker-run {args:?}"));
        let err = stderr(&o);
        assert!(
            err.contains(&format!("cannot reach {server} at")),
            "{args:?}: {err}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{args:?} took {:?}",
            started.elapsed()
        );
    }
}

/// `--guarantee at-most-once` runs with no ackers (Storm: no acker task, the tree is never
/// tracked): a nonzero `--ackers` beside it is refused before any server is contacted
/// (new-user trial: `--ackers 2` was silently ignored), while `--ackers 0` or no `--ackers` is
/// accepted and goes on to connect (here to a closed port, so the next error names Redis).
#[cfg(all(feature = "redis", feature = "postgres"))]
#[test]
fn at_most_once_refuses_a_nonzero_ackers() {
    let base: Vec<&str> = NO_SERVERS
        .iter()
        .copied()
        .chain(["--guarantee", "at-most-once"])
        .collect();
    for n in ["1", "2"] {
        let args: Vec<&str> = base.iter().copied().chain(["--ackers", n]).collect();
        assert_usage_error(
            &args,
            &format!(
                "error: --guarantee at-most-once runs with no ackers (nothing is tracked), but \
                 --ackers {n} was given: leave --ackers out (or give --ackers 0), or choose \
                 --guarantee at-least-once or exactly-once\n"
            ),
        );
    }
    for extra in [&["--ackers", "0"][..], &[][..]] {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        assert_usage_error(&args, "redis://127.0.0.1:1/");
    }
}

/// An acker capacity the run cannot use is refused in the connector job as in the built-in one
/// (a new-user trial ran `--acker-capacity 10` against Redis: the acker parked and dropped
/// messages, the spout replayed healthy entries until 2,573 of them were dead-lettered), and so
/// is any `--acker-capacity` with at-most-once, which has no ackers. Both before any connection
/// (the servers named here do not exist).
#[cfg(all(feature = "redis", feature = "postgres"))]
#[test]
fn connector_job_refuses_an_acker_capacity_it_cannot_use() {
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        NO_SERVERS.iter().chain(extra).copied().collect()
    };
    assert_usage_error(
        &with(&["--acker-capacity", "10"]),
        "error: --acker-capacity 10 x 1 acker(s) holds fewer roots than the spouts may keep \
         pending (1 spout task(s) x max spout pending 2001): raise --acker-capacity or lower \
         --max-spout-pending\n",
    );
    assert_usage_error(
        &with(&["--acker-capacity", "2000", "--ackers", "1"]),
        "max spout pending 2001)",
    );
    // Enough roots in all: the run goes on to contact Redis (which is not there).
    assert_usage_error(
        &with(&["--acker-capacity", "1001", "--ackers", "2"]),
        "redis://127.0.0.1:1/",
    );
    assert_usage_error(
        &with(&["--acker-capacity", "5000", "--guarantee", "at-most-once"]),
        "error: --acker-capacity 5000 was given, but this run has no ackers (at-most-once: \
         nothing is tracked): leave --acker-capacity out\n",
    );
}

/// The built-in job refuses the same acker capacities as the connector job.
#[test]
fn builtin_job_refuses_an_acker_capacity_it_cannot_use() {
    assert_usage_error(
        &["wordcount", "--ackers", "0", "--acker-capacity", "5000"],
        "error: --acker-capacity 5000 was given, but this run has no ackers (at-most-once: \
         nothing is tracked): leave --acker-capacity out\n",
    );
    assert_usage_error(
        &["wordcount", "--acker-capacity", "10"],
        "(1 spout task(s) x max spout pending 16384)",
    );
}

/// Empty `--stream`, `--group` or `--consumer` names are refused (Redis would take them and the
/// run would read nothing a user meant), and a password in a server URL is never printed.
#[cfg(all(feature = "redis", feature = "postgres"))]
#[test]
fn connector_job_refuses_empty_names_and_hides_passwords() {
    let args = |stream: &'static str, extra: &[&'static str]| -> Vec<&'static str> {
        let mut v = vec![
            "wordcount",
            "--redis",
            "redis://:pw@127.0.0.1:1/",
            "--stream",
            stream,
            "--postgres",
            "postgresql://u:secret@127.0.0.1:1/x",
        ];
        v.extend_from_slice(extra);
        v
    };
    assert_usage_error(&args("", &[]), "error: --stream must not be empty\n");
    assert_usage_error(
        &args("s", &["--group", ""]),
        "error: --group must not be empty\n",
    );
    assert_usage_error(
        &args("s", &["--consumer", ""]),
        "error: --consumer must not be empty\n",
    );
    assert_usage_error(
        &args("s", &["--retry-initial-ms", "500", "--retry-max-ms", "400"]),
        "error: --retry-max-ms 400 is below --retry-initial-ms 500: the longest delay must be at \
         least the first\n",
    );
    let o = common::output_bounded(bin().args(args("s", &[])), LIMIT, "acker-run wordcount");
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot reach Redis at redis://:***@127.0.0.1:1/: "),
        "{err}"
    );
    assert!(!err.contains("pw@"), "{err}");
    assert_usage_error(
        &[
            "counts",
            "--postgres",
            "postgresql://u:secret@127.0.0.1:1/x",
        ],
        "cannot reach PostgreSQL at postgresql://u:***@127.0.0.1:1/x: ",
    );
}

/// `wordcount --help` states the entry size limit the Redis spout enforces.
#[cfg(all(feature = "redis", feature = "postgres"))]
#[test]
fn help_states_the_entry_size_limit_the_spout_enforces() {
    let o = common::output_bounded(
        bin().args(["wordcount", "--help"]),
        LIMIT,
        "wordcount --help",
    );
    let help = String::from_utf8_lossy(&o.stdout);
    let limit = acker_runtime::connectors::redis_stream::MAX_ENTRY_BYTES;
    let with_commas = format!(
        "{},{:03},{:03}",
        limit / 1_000_000,
        limit / 1000 % 1000,
        limit % 1000
    );
    assert!(
        help.contains(&format!("longer than {with_commas} bytes")),
        "--help does not state {with_commas}: {help}"
    );
}

/// The message of the argument error `acker-run wordcount` (servers that do not exist) gives for
/// `--claim-after-ms VALUE`, after checking it is clap's form with exit 2 and no stdout: the
/// value is refused before any connection attempt.
#[cfg(all(feature = "redis", feature = "postgres"))]
fn claim_after_ms_refusal(value: &str) -> String {
    let args: Vec<&str> = NO_SERVERS
        .iter()
        .copied()
        .chain(["--claim-after-ms", value])
        .collect();
    let what = format!("acker-run --claim-after-ms {value}");
    let o = common::output_bounded(bin().args(args), LIMIT, &what);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    message_of_argument_error(&stderr(&o), "wordcount")
}

/// A `--claim-after-ms` below 2 x the message timeout (`0` included, and 59999 with the default
/// 30 s) is refused in clap's argument-error form, before any connection: a tree times out 1 to
/// 2 x the timeout after its emit, so workers would take entries other live workers still have
/// in flight, each claim a delivery toward `--max-retries` (new-user trials: `--claim-after-ms
/// 1` dead-lettered 337 healthy entries; `--claim-after-ms` = the timeout let two live workers
/// claim 597 and 500 of each other's entries). 2 x the timeout is accepted (the run then fails
/// only to reach the servers), and with timeouts off (`--timeout-secs 0`) nothing is refused.
#[cfg(all(feature = "redis", feature = "postgres"))]
#[test]
fn claim_after_ms_below_twice_the_message_timeout_is_refused_in_clap_s_form() {
    for value in ["0", "1", "30000", "59999"] {
        assert_eq!(
            claim_after_ms_refusal(value),
            format!(
                "error: --claim-after-ms {value} is below 2 x the message timeout (60000 ms, \
                 --timeout-secs 30): a tree times out between 1 and 2 x the timeout after its \
                 emit, so workers would take entries other live workers still have in flight, \
                 and each claim counts as a delivery toward --max-retries; give at least 60000 \
                 (the default)\n"
            )
        );
    }
    for extra in [
        &["--claim-after-ms", "60000"][..],
        &["--timeout-secs", "0", "--claim-after-ms", "1"],
    ] {
        let args: Vec<&str> = NO_SERVERS
            .iter()
            .copied()
            .chain(extra.iter().copied())
            .collect();
        let what = format!("acker-run {}", extra.join(" "));
        let o = common::output_bounded(bin().args(args), LIMIT, &what);
        assert_eq!(o.status.code(), Some(2), "{what}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("cannot reach Redis at"),
            "{what} refused: {}",
            stderr(&o)
        );
    }
}

/// Above `i64::MAX` Redis refuses XAUTOCLAIM's idle time; the worker took each refusal for a
/// lost connection and looped (new-user trial): refused in clap's form.
#[cfg(all(feature = "redis", feature = "postgres"))]
#[test]
fn claim_after_ms_past_redis_s_signed_range_is_refused_in_clap_s_form() {
    assert_eq!(
        claim_after_ms_refusal("9223372036854775808"),
        "error: --claim-after-ms may be at most 9223372036854775807 (Redis's XAUTOCLAIM takes \
         a signed 64-bit idle time), got 9223372036854775808\n"
    );
}

/// `--sink-tasks` outside 1..=64 (each task holds a PostgreSQL connection) is refused in clap's
/// form, as `--read-batch` and `--sink-batch` are, before any server is touched.
#[cfg(all(feature = "redis", feature = "postgres"))]
#[test]
fn sink_tasks_out_of_range_is_refused_in_clap_s_form() {
    for value in ["0", "65"] {
        let what = format!("acker-run wordcount --sink-tasks {value}");
        let o = common::output_bounded(
            bin().args(NO_SERVERS).args(["--sink-tasks", value]),
            LIMIT,
            &what,
        );
        assert_eq!(o.status.code(), Some(2), "{what}: {}", stderr(&o));
        assert!(
            stderr(&o).starts_with(&format!(
                "error: invalid value '{value}' for '--sink-tasks <N>': {value} is not in 1..=64\n"
            )),
            "{what}: {}",
            stderr(&o)
        );
    }
}

/// `--cores` above the CPUs the process may use is run, with a warning on stderr saying the
/// threads will share CPUs (new-user trial: `--cores 8` on 2 CPUs ran a tiny pending window 25 x
/// slower without a word); within the CPU count there is no warning. `--help` says so.
#[test]
fn cores_above_the_cpu_count_draw_a_warning() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    // Well above the CPUs, within the refused limit (4 x the CPUs of the affinity set).
    let cores = cpus + cpus.min(4);
    let input = tiny_input("oversubscribed");
    let o = common::output_bounded(
        bin()
            .args([
                "wordcount",
                "--no-pin",
                "--cores",
                &cores.to_string(),
                "--input",
            ])
            .arg(&input),
        LIMIT,
        "acker-run wordcount --cores (above the CPUs)",
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!(
            "acker-run: warning: --cores {cores} is more than the {cpus} CPU(s) this process may \
             use: the {cores} threads will share CPUs, and a thread spinning or parking while it \
             waits for input takes CPU time from the others"
        )),
        "{err}"
    );
    let o = common::output_bounded(
        bin()
            .args(["wordcount", "--no-pin", "--cores", "1", "--input"])
            .arg(&input),
        LIMIT,
        "acker-run wordcount --cores 1",
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
    let help = common::output_bounded(
        bin().args(["bench", "pipeline", "--help"]),
        LIMIT,
        "acker-run bench pipeline --help",
    );
    let help = String::from_utf8_lossy(&help.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        help.contains(
            "more than the CPUs this process may use (`std::thread::available_parallelism`) runs \
             with a warning on stderr"
        ),
        "{help}"
    );
}

/// `bench pipeline` and `bench wordcount` describe their own topology under `--ackers` and
/// `--max-spout-pending` (new-user trial: both showed the word count's text, `wordcount --redis`
/// defaults included); `wordcount --help` keeps its own.
#[test]
fn bench_help_describes_each_command_s_own_topology() {
    let help_of = |args: &[&str]| {
        let o = common::output_bounded(bin().args(args), LIMIT, &format!("acker-run {args:?}"));
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let pipeline = help_of(&["bench", "pipeline", "--help"]);
    let bench_wc = help_of(&["bench", "wordcount", "--help"]);
    let wordcount = help_of(&["wordcount", "--help"]);
    for (help, own) in [
        (&pipeline, "Acker tasks tracking the pipeline's trees"),
        (
            &pipeline,
            "the most trees the pipeline's spout task (`ints`, one integer a tree)",
        ),
        (
            &bench_wc,
            "Acker tasks tracking the benchmark's word-count trees",
        ),
        (
            &bench_wc,
            "the most line trees a spout task of the benchmark's word count",
        ),
        (
            &wordcount,
            "`wordcount --guarantee at-most-once` runs with 0",
        ),
        (&wordcount, "With `wordcount --redis` the default is"),
    ] {
        assert!(help.contains(own), "{own:?} missing from {help}");
    }
    for help in [&pipeline, &bench_wc] {
        for other in ["wordcount --redis", "wordcount --guarantee", "N + 1 slots"] {
            assert!(!help.contains(other), "{other:?} in {help}");
        }
    }
    assert!(!pipeline.contains("1 MiB of text"), "{pipeline}");
}

/// `bench pipeline --local` runs one thread: `--cores` with it is refused by name, not ignored.
#[test]
fn bench_pipeline_local_refuses_cores() {
    assert_usage_error(
        &[
            "bench",
            "pipeline",
            "--local",
            "--seconds",
            "0.1",
            "--cores",
            "1",
        ],
        "error: the argument '--local' cannot be used with '--cores <CORES>'",
    );
    // Nor the thread placement options, which do nothing on one unpinned thread (new-user
    // trial: both were accepted and ignored).
    for option in ["--no-pin", "--colocate-ackers"] {
        assert_usage_error(
            &["bench", "pipeline", "--local", "--seconds", "0.1", option],
            &format!("error: the argument '--local' cannot be used with '{option}'"),
        );
    }
}

/// The `--cores` limit counts the CPUs of the process's affinity set, and says so (new-user
/// trial: under `taskset -c 0` it said "1 core(s) of this machine" on a machine of 2).
#[test]
fn the_cores_limit_says_it_counts_the_affinity_set() {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").expect("online CPUs");
    let machine: usize = online
        .trim()
        .split(',')
        .map(|r| match r.split_once('-') {
            Some((a, b)) => b.parse::<usize>().unwrap() - a.parse::<usize>().unwrap() + 1,
            None => 1,
        })
        .sum();
    let o = common::output_bounded(
        Command::new("taskset")
            .args(["-c", "0"])
            .arg(env!("CARGO_BIN_EXE_acker-run"))
            .args(["bench", "pipeline", "--seconds", "0.1", "--cores", "5"]),
        LIMIT,
        "taskset -c 0 acker-run bench pipeline --cores 5",
    );
    assert_eq!(
        message_of_argument_error(&stderr(&o), "bench pipeline"),
        format!(
            "error: --cores 5 is more than 4 x the 1 CPU(s) this process may use (its CPU affinity \
             set, as `taskset` or a cpuset sets it, out of the {machine} core(s) of this \
             machine): one thread a core, and a ring per ordered pair of threads\n"
        )
    );
    assert_eq!(o.status.code(), Some(2));
    // 4 x the affinity set is taken.
    let o = common::output_bounded(
        Command::new("taskset")
            .args(["-c", "0"])
            .arg(env!("CARGO_BIN_EXE_acker-run"))
            .args([
                "bench",
                "pipeline",
                "--seconds",
                "0.1",
                "--cores",
                "4",
                "--no-pin",
            ]),
        LIMIT,
        "taskset -c 0 acker-run bench pipeline --cores 4",
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// `acker-run ARGS` under `ulimit -v KIB` (a shell sets the limit, then becomes acker-run).
fn under_ulimit_v<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(kib: u64, args: &[S]) -> Output {
    common::under_ulimit(
        'v',
        kib,
        env!("CARGO_BIN_EXE_acker-run"),
        "acker-run",
        args,
        LIMIT,
    )
}

/// `acker-run ARGS` under `ulimit -d KIB` (the data segment: `VmData`), bounded in time.
fn under_ulimit_d<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(kib: u64, args: &[S]) -> Output {
    common::under_ulimit(
        'd',
        kib,
        env!("CARGO_BIN_EXE_acker-run"),
        "acker-run",
        args,
        LIMIT,
    )
}

/// New-user trial: under `ulimit -d 100000`, `wordcount --ackers 1` (and 2, 10, 100) was refused
/// ("the limit of 102.4 MB (`ulimit -d`) is too low for this process itself ... keeps 144.8 MB in
/// reserve"), though its `VmData` peaks at about 27 MB: the address-space margin (allocator
/// arenas reserve 64 MB each long before they use it) was kept under the data limit too. Under
/// `ulimit -d` the margin is now the thread stacks' (16 MB and 8.4 MB a thread), and such runs go
/// through, exact; a limit below what the process itself takes is still refused, naming it.
#[test]
fn a_data_limit_keeps_a_margin_for_the_stacks_not_the_arenas() {
    let input = tiny_input("ulimit-d");
    let path = input.to_str().expect("utf-8 path");
    for ackers in ["1", "100"] {
        let o = under_ulimit_d(
            100_000,
            &[
                "wordcount",
                "--input",
                path,
                "--cores",
                "2",
                "--no-pin",
                "--ackers",
                ackers,
                "--json",
            ],
        );
        assert_eq!(
            o.status.code(),
            Some(0),
            "--ackers {ackers}: {}",
            stderr(&o)
        );
        let json: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        assert_eq!(json["words_total"], 6, "--ackers {ackers}");
        assert_eq!(json["guarantee"], "exact", "--ackers {ackers}");
    }
    // 20 MB cannot hold the process itself on two threads: refused, naming `ulimit -d`.
    let o = under_ulimit_d(
        20_000,
        &["wordcount", "--input", path, "--cores", "2", "--no-pin"],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("(`ulimit -d`) is too low for this process itself")
            && err.contains("keeps 32.8 MB in reserve for thread stacks"),
        "{err}"
    );
}

/// [`under_ulimit_d`] with standard input read from the file `stdin`.
fn under_ulimit_d_stdin<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(
    kib: u64,
    args: &[S],
    stdin: &std::path::Path,
) -> Output {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("ulimit -d {kib} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_acker-run"))
        .args(args)
        .stdin(std::fs::File::open(stdin).expect("stdin file"));
    common::output_bounded(
        &mut cmd,
        LIMIT,
        &format!("ulimit -d {kib}; acker-run {args:?} < {}", stdin.display()),
    )
}

/// New-user trial: under a `ulimit -d` too small for the input, `wordcount` died of SIGABRT
/// ("memory allocation of N bytes failed"; once it hung after that line instead): the memory
/// check counted the acker tables and pending sets, not the input text, which a run holds up
/// to twice. A file is now checked by its size before it is read, standard input once read
/// (or when its buffer could not grow): refused with exit 2, naming the input, its size, the
/// estimate and the limit. A run that fits still runs, and exact.
#[test]
fn a_data_limit_too_small_for_the_input_is_refused_naming_it() {
    let word = common::TempFile::with_text("ulimit-d-word", &"a".repeat(30_000_000));
    let path = word.to_str().expect("utf-8 path");
    let args = |input: &str| {
        [
            "wordcount",
            "--cores",
            "2",
            "--no-pin",
            "--json",
            "--input",
            input,
        ]
        .map(String::from)
    };
    let limit = "this process may still map under its limit of 61.4 MB (`ulimit -d`;";
    // A file: refused before it is read.
    let o = under_ulimit_d(60_000, &args(path));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "--input {path} needs about 60.0 MB of memory for its 30.0 MB of text (30000000 \
             bytes), which a word count holds up to 2 times"
        )) && err.contains("(64.3 MB with the 1 acker task(s) and 1 spout pending set(s))")
            && err.contains(limit)
            && err.contains("give a smaller input, or raise the limit"),
        "{err}"
    );
    // Standard input that fits in memory once: refused once read, the text counted in the
    // need (not blamed on the process itself).
    let o = under_ulimit_d_stdin(60_000, &args("-"), &word);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "--input - needs about 60.0 MB of memory for its 30.0 MB of text (30000000 bytes)"
        ) && err.contains("besides the 30.0 MB counted above already")
            && err.contains(limit),
        "{err}"
    );
    // Standard input longer than the limit: reading stops when the buffer cannot grow, and
    // the same refusal names what was read.
    let big = common::TempFile::with_text("ulimit-d-big", &"a".repeat(100_000_000));
    let o = under_ulimit_d_stdin(60_000, &args("-"), &big);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--input - needs about")
            && err.contains("of memory for at least the")
            && err.contains("when room for more could not be allocated")
            && err.contains("under its limit of 61.4 MB (`ulimit -d`;")
            && err.contains("give a smaller input, or raise the limit"),
        "{err}"
    );
    // Room for twice the word (the limit under which it died of SIGABRT, or hung after
    // "memory allocation of 5795635 bytes failed", when the spout, split and count bolts each
    // copied it): it runs, exact, from the file and from standard input.
    for o in [
        under_ulimit_d(100_000, &args(path)),
        under_ulimit_d_stdin(100_000, &args("-"), &word),
    ] {
        let json = common::json_of_success(&o);
        assert_eq!(json["words_total"], 1);
        assert_eq!(json["guarantee"], "exact");
    }
    // tinyshakespeare under `ulimit -d 100000` runs, as it did.
    let shakespeare = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/data/tinyshakespeare.txt");
    if shakespeare.exists() {
        let p = shakespeare.to_str().expect("utf-8 path");
        for o in [
            under_ulimit_d(100_000, &args(p)),
            under_ulimit_d_stdin(100_000, &args("-"), &shakespeare),
        ] {
            let json = common::json_of_success(&o);
            assert_eq!(json["words_total"], 202_651);
            assert_eq!(json["guarantee"], "exact");
        }
    }
}

/// New-user trial: `bench wordcount --ackers 65530` allocated about 2.5 GB of acker tables and,
/// under `ulimit -v`, died of SIGABRT. The count is bounded by the roots the spouts may keep
/// pending, and the acker tasks' memory is computed before any is built and refused with its
/// size when the machine or the process's limit cannot hold it: exit 2, never a signal.
#[test]
fn acker_counts_the_run_cannot_use_or_hold_are_refused() {
    let input = tiny_input("many-ackers");
    let path = input.to_str().expect("utf-8 path");
    let bench = |ackers: &'static str| -> Vec<String> {
        [
            "bench",
            "wordcount",
            "--input",
            path,
            "--min-mb",
            "1",
            "--rounds",
            "1",
            "--cores",
            "1",
            "--no-pin",
            "--ackers",
            ackers,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let o = under_ulimit_v(2_000_000, &bench("65530"));
    assert_eq!(
        message_of_argument_error(&stderr(&o), "bench wordcount"),
        "error: --ackers 65530 is more than the 16384 root(s) the spouts may keep pending (1 \
         spout task(s) x max spout pending 16384): an acker past them can never hold a root; \
         give at most 16384\n"
    );
    assert_eq!(o.status.code(), Some(2));
    // Within that bound, but 16000 ackers of about 80 KB (1.3 GB) under a 600 MB limit.
    let o = under_ulimit_v(600_000, &bench("16000"));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let message = message_of_argument_error(&err, "bench wordcount");
    assert!(
        message.starts_with(
            "error: --ackers 16000 and --max-spout-pending 16384 need about 1.3 GB of memory: 1.3 \
             GB for 16000 acker task(s) (about 79.9 KB each: a table of 1024 roots at 20 B, a \
             park queue of 128 messages at up to 104 B, 64 roots remembered as failed at up to \
             24 B and the task) and 1.0 MB for 1 spout \
             pending set(s) of 16384 trees (besides 2.0 MB for --min-mb 1: the input repeated to \
             1.0 MB, held twice: the text and the topology's copy), more than the "
        ) && message.ends_with(
" MB in reserve for thread stacks and allocator arenas): lower --ackers or --max-spout-pending (an acker table holds 4 x the trees the spouts may \
             keep pending unless --acker-capacity is given), or --acker-capacity / \
             --acker-park-capacity\n"
        ),
        "{message}"
    );
    // One acker, but a table sized for 10M pending trees (40M roots, 5M parked messages) and a
    // pending set of 10M: about 2 GB, under a 2 GB limit (it died of SIGABRT there).
    let o = under_ulimit_v(
        2_000_000,
        &[
            "bench",
            "pipeline",
            "--seconds",
            "0.1",
            "--cores",
            "1",
            "--no-pin",
            "--max-spout-pending",
            "10000000",
        ],
    );
    let message = message_of_argument_error(&stderr(&o), "bench pipeline");
    assert!(
        message.starts_with(
            "error: --ackers 1 and --max-spout-pending 10000000 need about 2.0 GB of memory: 1.3 \
             GB for 1 acker task(s) (about 1.3 GB each: a table of 40000000 roots at 20 B, a park \
             queue of 5000000 messages at up to 104 B, 65536 roots remembered as failed at up \
             to 24 B and the task) and 640.0 MB for 1 spout \
             pending set(s) of 10000000 trees, more than the "
        ),
        "{message}"
    );
    // The pipeline too (one spout task: at most max spout pending ackers).
    let o = under_ulimit_v(
        2_000_000,
        &[
            "bench",
            "pipeline",
            "--seconds",
            "0.1",
            "--cores",
            "1",
            "--ackers",
            "5",
            "--max-spout-pending",
            "4",
        ],
    );
    assert_eq!(
        message_of_argument_error(&stderr(&o), "bench pipeline"),
        "error: --ackers 5 is more than the 4 root(s) the spouts may keep pending (1 spout \
         task(s) x max spout pending 4): an acker past them can never hold a root; give at most \
         4\n"
    );
    // What fits runs: 1000 ackers under the same 600 MB.
    let o = under_ulimit_v(600_000, &bench("1000"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(json["ackers"], 1000);
    assert_eq!(json["plain_words"], json["topology_words"]);
}

/// New-user trial: under `ulimit -v 150000`, `wordcount` was told its 3.3 MB did not fit in the
/// "0.0 KB this process may still map" and to lower --ackers or --max-spout-pending, though the
/// process itself (what it maps and the margin kept for its threads) took the whole limit; with
/// `--ackers 0` it was told of 0 acker tables of 45.1 KB each, and still to lower --ackers. The
/// message now says what the process maps, that the limit is too low for the process itself, and
/// how far to raise it; with no acker it names no acker table and never --ackers. A limit the
/// options exceed by far still names the options (the test above).
#[test]
fn a_limit_too_low_for_the_process_itself_says_so_not_to_lower_options() {
    let input = tiny_input("limit-too-low");
    let path = input.to_str().expect("utf-8 path");
    for ackers in ["1", "0"] {
        // One core: a margin of 136.4 MB for the threads, about 10 MB mapped, over 140000 KiB
        // (143.4 MB).
        let o = under_ulimit_v(
            140_000,
            &[
                "wordcount",
                "--input",
                path,
                "--cores",
                "1",
                "--no-pin",
                "--ackers",
                ackers,
            ],
        );
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "--ackers {ackers}: {err}");
        let message = message_of_argument_error(&err, "wordcount");
        for words in [
            "(`ulimit -v`) is too low for this process itself: it maps ",
            " MB already and keeps 136.4 MB in reserve for thread stacks and allocator arenas, \
             which leaves ",
            ": raise `ulimit -v` to at least ",
        ] {
            assert!(message.contains(words), "--ackers {ackers}: {message}");
        }
        assert!(
            !message.contains("lower --"),
            "--ackers {ackers}: {message}"
        );
        if ackers == "0" {
            assert!(
                message.starts_with(
                    "error: --max-spout-pending 16384 needs about 1.0 MB of memory for 1 spout \
                     pending set(s) of 16384 trees (no acker task: --ackers 0), but the limit of \
                     143.4 MB"
                ),
                "{message}"
            );
            assert!(!message.contains("each"), "{message}");
        }
        // The limit it names is enough (with the same options, the run goes through).
        let kib: u64 = message
            .split("raise `ulimit -v` to at least ")
            .nth(1)
            .and_then(|t| t.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no limit in {message}"));
        let o = under_ulimit_v(
            kib,
            &[
                "wordcount",
                "--input",
                path,
                "--cores",
                "1",
                "--no-pin",
                "--ackers",
                ackers,
            ],
        );
        assert_eq!(o.status.code(), Some(0), "ulimit -v {kib}: {}", stderr(&o));
    }
}

/// New-user trial: the connector job lacked the built-in job's acker count and memory checks.
/// Under `ulimit -v 600000`, `--ackers 6000` died of SIGABRT after it had created the Redis
/// stream, as did `--max-spout-pending 10000000` and `--acker-capacity 100000000`; `--ackers
/// 3000` ran with more ackers than the spout's 2001 trees pending. Each is now refused before
/// any server is touched (the servers named here do not exist: an error naming Redis would
/// mean the check came too late).
#[cfg(all(feature = "redis", feature = "postgres"))]
#[test]
fn connector_job_refuses_acker_counts_and_memory_before_any_server() {
    let with = |extra: &[&str]| -> Vec<String> {
        NO_SERVERS
            .iter()
            .chain(extra)
            .chain(&["--cores", "1", "--no-pin"])
            .map(|s| s.to_string())
            .collect()
    };
    for ackers in ["6000", "3000"] {
        let o = under_ulimit_v(600_000, &with(&["--ackers", ackers]));
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert_eq!(
            message_of_argument_error(&err, "wordcount"),
            format!(
                "error: --ackers {ackers} is more than the 2001 root(s) the spouts may keep \
                 pending (1 spout task(s) x max spout pending 2001): an acker past them can \
                 never hold a root; give at most 2001\n"
            )
        );
    }
    for (extra, starts) in [
        (
            ["--max-spout-pending", "10000000"],
            "error: --ackers 1 and --max-spout-pending 10000001 need about ",
        ),
        (
            ["--acker-capacity", "100000000"],
            "error: --ackers 1 and --max-spout-pending 2001 need about 3.3 GB of memory: ",
        ),
    ] {
        let o = under_ulimit_v(600_000, &with(&extra));
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {err}");
        let message = message_of_argument_error(&err, "wordcount");
        assert!(message.starts_with(starts), "{extra:?}: {message}");
        assert!(
            message.contains("(`ulimit -v`; it maps "),
            "{extra:?}: {message}"
        );
        assert!(!message.contains("127.0.0.1"), "{extra:?}: {message}");
    }
}

/// New-user trial: `bench wordcount --min-mb 500` under `ulimit -v 600000` died of SIGABRT (the
/// repeated text is held twice), and with `--min-mb 250` the memory message blamed --ackers and
/// --max-spout-pending. The text is counted in the memory check, which names --min-mb when it
/// takes the memory.
#[test]
fn bench_wordcount_min_mb_too_large_for_memory_is_refused_by_name() {
    let input = tiny_input("min-mb-memory");
    let path = input.to_str().expect("utf-8 path");
    for mb in ["500", "250"] {
        let o = under_ulimit_v(
            600_000,
            &[
                "bench",
                "wordcount",
                "--input",
                path,
                "--min-mb",
                mb,
                "--rounds",
                "1",
                "--cores",
                "1",
                "--no-pin",
            ],
        );
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "--min-mb {mb}: {err}");
        let message = message_of_argument_error(&err, "bench wordcount");
        assert!(
            message.starts_with(&format!("error: --min-mb {mb} needs about ")),
            "{message}"
        );
        assert!(
            message.contains(&format!(
                " of memory for the input repeated to {mb}.0 MB, held twice: the text and the \
                 topology's copy ("
            )),
            "{message}"
        );
        assert!(message.ends_with(": lower --min-mb\n"), "{message}");
        assert!(!message.contains("--ackers"), "{message}");
    }
}

/// New-user trial: a warning written to a full stderr (`--cores` above the CPUs, `2>/dev/full`)
/// panicked with exit status 101. A stderr write error is now ignored: the run ends as it
/// would, its stdout whole.
#[test]
fn a_full_stderr_does_not_panic() {
    let input = tiny_input("full-stderr");
    let full = std::fs::File::create("/dev/full").expect("open /dev/full");
    let child = Command::new("taskset")
        .args(["-c", "0"])
        .arg(env!("CARGO_BIN_EXE_acker-run"))
        .args(["wordcount", "--cores", "2", "--no-pin", "--json", "--input"])
        .arg(&*input)
        .stdout(Stdio::piped())
        .stderr(full)
        .spawn()
        .expect("run acker-run");
    let o = common::wait_bounded(
        child,
        None,
        LIMIT,
        "acker-run wordcount --cores 2 2>/dev/full",
    );
    assert_eq!(o.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json on stdout");
    assert_eq!(json["words_total"], 6, "{json}");
}

/// Every enforced limit of `--max-spout-pending` and `bench pipeline --seconds` is in its
/// `--help` (new-user trial: they were found only by being refused), and the value the help
/// gives is the one enforced: one more is refused.
#[test]
fn help_states_the_pending_and_seconds_limits_the_code_enforces() {
    let help = |args: &[&str]| -> String {
        let o = bin().args(args).arg("--help").output().expect("help");
        String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    for sub in [
        &["wordcount"][..],
        &["bench", "pipeline"][..],
        &["bench", "wordcount"][..],
    ] {
        let h = help(sub);
        let pending = h
            .split_once("--max-spout-pending <MAX_SPOUT_PENDING>")
            .map(|(_, rest)| rest.split(" --timeout-secs ").next().unwrap_or(""))
            .unwrap_or_else(|| panic!("{sub:?}: no --max-spout-pending in {h}"));
        assert!(pending.contains("1 to 10000000"), "{sub:?}: {pending}");
    }
    let h = help(&["bench", "pipeline"]);
    assert!(
        h.contains("--seconds <SECONDS> How long the spout runs, in seconds: more than 0 and less than 3600"),
        "{h}"
    );
    assert!(h.contains("at most 31536000 (one year"), "{h}");
    assert_usage_error(
        &["wordcount", "--max-spout-pending", "10000001"],
        "--max-spout-pending must be at most 10000000",
    );
    assert_usage_error(
        &["bench", "pipeline", "--seconds", "3600"],
        "--seconds must be in (0, 3600), got 3600",
    );
}

/// `--input -` with standard input closed (`<&-`) is an error naming `--input -` (new-user
/// trial: it counted 0 lines and exited 0); an empty but open standard input (`< /dev/null`)
/// still counts 0 lines.
#[test]
fn a_closed_standard_input_is_an_error() {
    let bin = env!("CARGO_BIN_EXE_acker-run");
    let o = common::output_bounded(
        Command::new("bash").args([
            "-c",
            r#"exec "$0" wordcount --input - --cores 1 --no-pin <&-"#,
            bin,
        ]),
        LIMIT,
        "acker-run wordcount --input - <&-",
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--input -: standard input is closed"), "{err}");
    assert!(o.stdout.is_empty());
    let o = common::output_bounded(
        Command::new("bash").args([
            "-c",
            r#"exec "$0" wordcount --input - --cores 1 --no-pin --json </dev/null"#,
            bin,
        ]),
        LIMIT,
        "acker-run wordcount --input - </dev/null",
    );
    let v = common::json_of_success(&o);
    assert_eq!(v["lines_total"], 0, "{v}");
}
