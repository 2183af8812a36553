//! `acker-run` on bad arguments and on a stdout it cannot write: a one-line message on stderr
//! and exit status 2 (never a panic, status 101), or a quiet exit 0 when the reader of a pipe
//! closed it early.

mod common;

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// How long one `acker-run` may take in these tests.
const LIMIT: Duration = Duration::from_secs(60);

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_acker-run"))
}

/// A three-line input file unique to `name`, so each test runs in milliseconds.
fn tiny_input(name: &str) -> PathBuf {
    let path =
        std::env::temp_dir().join(format!("acker-run-cli-{name}-{}.txt", std::process::id()));
    std::fs::write(&path, "a b c\nb c\nc\n").expect("write the tiny input");
    path
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `acker-run` with `args` and asserts exit status 2 and that stderr names `expected`.
fn assert_usage_error(args: &[&str], expected: &str) {
    let o = common::output_bounded(bin().args(args), LIMIT, &format!("acker-run {args:?}"));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(expected), "{args:?}: stderr was {err:?}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert!(o.stdout.is_empty(), "{args:?}");
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
        "acker-run: error: --fail-rate must be in [0, 1), got -0.1",
    );
    assert_usage_error(
        &["bench", "pipeline", "--seconds", "-2"],
        "acker-run: error: --seconds must be in (0, 3600), got -2",
    );
    assert_usage_error(
        &["wordcount", "--cores", "0"],
        "acker-run: error: --cores must be at least 1",
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
        "acker-run: error: --min-mb must be in 1..=1000000, got 99999999999",
    );
    let _ = std::fs::remove_file(input);
}

#[test]
fn help_documents_the_exit_statuses() {
    let o = common::output_bounded(bin().arg("--help"), LIMIT, "acker-run --help");
    assert!(o.status.success());
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(help.contains("Exit status: 0 on success"), "{help}");
    assert!(help.contains("closed early"), "{help}");
}

#[test]
fn acker_park_capacity_has_a_documented_limit() {
    // Refused before any table or park queue is built: these runs allocate nothing large.
    for v in ["99999999999", "4294967296", "1000000000", "16777217"] {
        assert_usage_error(
            &["wordcount", "--acker-park-capacity", v],
            &format!(
                "acker-run: error: --acker-park-capacity must be at most 16777216 messages (each \
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
        "lines: E emitted, R replayed",
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
    let base = [
        "wordcount",
        "--redis",
        "redis://127.0.0.1:1/",
        "--stream",
        "s",
        "--postgres",
        "postgresql://nobody@127.0.0.1:1/none",
        "--guarantee",
        "at-most-once",
    ];
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
