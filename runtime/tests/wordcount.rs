//! Word count on tinyshakespeare (`../shared/data/tinyshakespeare.txt` from the repo root) and
//! on the built-in generator, through the library and through the `acker-run` binary.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;

mod common;

use std::time::Duration;

use acker_runtime::shell::ShellOptions;
use acker_runtime::wordcount::{self, generate_sentences, top_words, Lines};
use acker_runtime::Config;

fn shakespeare() -> Option<String> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/tinyshakespeare.txt");
    match std::fs::read_to_string(&p) {
        Ok(t) => Some(t),
        Err(_) => {
            println!(
                "note: {} is absent; skipping the tinyshakespeare checks",
                p.display()
            );
            None
        }
    }
}

/// What `wc -w` counts: maximal runs of non-whitespace bytes.
fn wc_w(text: &str) -> u64 {
    text.split_ascii_whitespace().count() as u64
}

struct Outcome {
    counts: BTreeMap<std::sync::Arc<str>, u64>,
    acked: u64,
    failed: u64,
    timed_out: u64,
    lines_emitted: u64,
    replays: u64,
    acked_twice: u64,
    spout_acked_lines: u64,
    max_bytes_in_flight: u64,
}

fn count(text: &str, cores: usize, fail_rate: f64, seed: u64) -> Outcome {
    let lines = Lines::from_text(text);
    let (topology, out) = wordcount::topology(lines, cores, fail_rate).unwrap();
    let plan = topology
        .plan(&Config {
            seed,
            ..Config::default()
        })
        .unwrap();
    let report = common::run_bounded(
        &plan,
        &ShellOptions {
            cores: Some(cores),
            ..ShellOptions::default()
        },
        Duration::from_secs(120),
        &format!("word count on {cores} cores, fail rate {fail_rate}"),
    );
    let s = report.spout_totals();
    let counts = std::mem::take(&mut *out.counts.lock().unwrap());
    Outcome {
        counts,
        acked: s.acked,
        failed: s.failed,
        timed_out: s.timed_out,
        lines_emitted: out.stats.lines_emitted.load(Ordering::Relaxed),
        replays: out.stats.replays.load(Ordering::Relaxed),
        acked_twice: out.stats.acked_twice.load(Ordering::Relaxed),
        spout_acked_lines: out.stats.acked.load(Ordering::Relaxed),
        max_bytes_in_flight: out.stats.max_bytes_in_flight.load(Ordering::Relaxed),
    }
}

#[test]
fn shakespeare_counts_are_exact_and_identical_across_cores_and_failures() {
    let Some(text) = shakespeare() else { return };
    let non_empty = text
        .lines()
        .filter(|l| l.split_whitespace().next().is_some())
        .count() as u64;
    let words = wc_w(&text);
    assert_eq!(words, 202_651, "wc -w of tinyshakespeare");

    let one = count(&text, 1, 0.0, 1);
    assert_eq!(one.counts.values().sum::<u64>(), words);
    assert_eq!(one.acked, non_empty);
    assert_eq!(one.spout_acked_lines, non_empty);
    assert_eq!(one.acked_twice, 0);
    assert_eq!((one.failed, one.timed_out, one.replays), (0, 0, 0));
    assert_eq!(one.lines_emitted, non_empty);
    // The most text in flight: at least the longest line (it was in flight once), at most the
    // cap (no line is longer than it).
    let longest = text.lines().map(str::len).max().unwrap_or(0) as u64;
    assert!(
        (longest..=wordcount::MAX_BYTES_IN_FLIGHT as u64).contains(&one.max_bytes_in_flight),
        "max bytes in flight {} outside [{longest}, {}]",
        one.max_bytes_in_flight,
        wordcount::MAX_BYTES_IN_FLIGHT
    );

    let two = count(&text, 2, 0.0, 1);
    assert_eq!(two.counts, one.counts);
    assert_eq!(two.acked, non_empty);

    let faulty = count(&text, 2, 0.1, 7);
    assert_eq!(faulty.counts, one.counts, "replays give exact counts");
    assert_eq!(faulty.acked, non_empty, "every line acked exactly once");
    assert_eq!(faulty.acked_twice, 0);
    assert_eq!(faulty.timed_out, 0);
    assert_eq!(faulty.replays, faulty.failed, "each fail is replayed once");
    // About 10 % of the lines fail at least once.
    let lo = non_empty / 20;
    let hi = non_empty / 5;
    assert!(
        (lo..hi).contains(&faulty.failed),
        "failed {} of {non_empty}",
        faulty.failed
    );

    // The failed lines are a function of the seed alone: the same on one core, each line
    // failing only on its first emit (never on a replay, whichever split task gets it).
    let faulty_one_core = count(&text, 1, 0.1, 7);
    assert_eq!(faulty_one_core.failed, faulty.failed);
    assert_eq!(faulty_one_core.counts, one.counts);
    assert_ne!(
        count(&text, 2, 0.1, 8).failed,
        faulty.failed,
        "another seed, other lines"
    );

    let top = top_words(&one.counts, 3);
    assert_eq!(top[0], ("the", 5437));
}

#[test]
fn builtin_generator_is_deterministic_and_counted_exactly() {
    let text = generate_sentences(5000, 3);
    assert_eq!(text, generate_sentences(5000, 3));
    assert_ne!(text, generate_sentences(5000, 4));
    let o = count(&text, 2, 0.2, 9);
    assert_eq!(o.counts.values().sum::<u64>(), wc_w(&text));
    let plain = wordcount::plain_count(&text);
    assert_eq!(o.counts.len(), plain.len());
    for (w, c) in &o.counts {
        assert_eq!(plain[&**w], *c, "{w}");
    }
    assert_eq!(o.acked, 5000);
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_acker-run"))
}

/// How long one `acker-run` may take in these tests.
const LIMIT: Duration = Duration::from_secs(120);

/// `Command::output` with a bounded wait (see `common::wait_bounded`).
trait OutputWithin {
    fn output_within(&mut self, limit: Duration) -> std::process::Output;
}
impl OutputWithin for Command {
    fn output_within(&mut self, limit: Duration) -> std::process::Output {
        let what = format!("{self:?}");
        common::output_bounded(self, limit, &what)
    }
}

#[test]
fn cli_json_on_shakespeare_matches_wc() {
    let Some(text) = shakespeare() else { return };
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/tinyshakespeare.txt");
    let out = bin()
        .args([
            "wordcount",
            "--json",
            "--cores",
            "2",
            "--fail-rate",
            "0.1",
            "--seed",
            "5",
            "--input",
        ])
        .arg(&path)
        .output_within(LIMIT);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let non_empty = text
        .lines()
        .filter(|l| l.split_whitespace().next().is_some())
        .count() as u64;
    assert_eq!(v["words_total"], wc_w(&text));
    assert_eq!(v["acked"], non_empty);
    assert_eq!(v["lines_emitted"], non_empty);
    assert_eq!(v["timed_out"], 0);
    assert_eq!(v["replays"], v["failed"]);
    assert_eq!(v["distinct_words"], 25_670);
    let top = v["top"].as_array().unwrap();
    assert_eq!(top.len(), 10);
    assert_eq!(top[0]["word"], "the");
    assert_eq!(top[0]["count"], 5437);
    for w in top.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        let (ca, cb) = (a["count"].as_u64().unwrap(), b["count"].as_u64().unwrap());
        assert!(ca > cb || (ca == cb && a["word"].as_str() < b["word"].as_str()));
    }
    for k in ["p50", "p99", "max"] {
        assert!(v["complete_latency_us"][k].as_f64().unwrap() > 0.0);
    }
    assert!(v["elapsed_ms"].as_f64().unwrap() > 0.0);
}

#[test]
fn cli_default_run_and_human_output() {
    let out = bin()
        .args(["wordcount", "--cores", "1"])
        .output_within(LIMIT);
    assert!(out.status.success());
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(s.contains("top 10:"), "{s}");
    assert!(
        s.contains(
            "(200000 lines holding words, 200000 pieces of up to 64 KiB), 1 core, 1 acker(s)"
        ),
        "{s}"
    );
    assert!(s.contains("200000 acked, 0 failed, 0 timed out"), "{s}");
    assert!(s.contains("complete latency: p50"), "{s}");
}

#[test]
fn cli_missing_file_and_bad_arguments_fail_clearly() {
    let out = bin()
        .args(["wordcount", "--input", "/definitely/not/here.txt"])
        .output_within(LIMIT);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot read input /definitely/not/here.txt"),
        "{err}"
    );

    let out = bin()
        .args(["wordcount", "--fail-rate", "1.5"])
        .output_within(LIMIT);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--fail-rate"));

    let out = bin()
        .args(["wordcount", "--cores", "0"])
        .output_within(LIMIT);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--cores must be at least 1"));
    let out = bin().args(["wordcount", "--bogus"]).output_within(LIMIT);
    assert!(!out.status.success());
}

#[test]
fn cli_warns_when_timeouts_off_with_acking_on() {
    for pending in [&["--max-spout-pending", "100"][..], &[]] {
        let out = bin()
            .args([
                "wordcount",
                "--cores",
                "1",
                "--timeout-secs",
                "0",
                "--no-pin",
                "--colocate-ackers",
            ])
            .args(pending)
            .output_within(LIMIT);
        assert!(out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("acker-run: warning: message timeouts are off"),
            "{pending:?}"
        );
        // Once, under the program's name: the shell does not print it again as `warning: ...`.
        assert_eq!(
            stderr.matches("message timeouts are off").count(),
            1,
            "{pending:?}: {stderr}"
        );
    }
}

/// Settings that could only crawl, exhaust memory or overflow are refused up front (exit 2).
#[test]
fn cli_refuses_unusable_sizes() {
    for (args, needle) in [
        (
            &["--acker-capacity", "1"][..],
            "holds fewer roots than the spouts may keep pending",
        ),
        (
            &["--acker-capacity", "99999999999"][..],
            "--acker-capacity must be in",
        ),
        (
            &["--max-spout-pending", "99999999999"][..],
            "--max-spout-pending must be at most",
        ),
        (
            &["--timeout-secs", "18446744074"][..],
            "--timeout-secs must be at most",
        ),
        (&["--cores", "100000"][..], "core(s) of this machine"),
        // Each size within its own limit, their product (2 TB preallocated) beyond any machine
        // here: refused, not an aborted allocation (found by the new-user trial).
        (
            &["--ackers", "1000", "--acker-capacity", "100000000"][..],
            "more than this machine's",
        ),
    ] {
        let out = bin().arg("wordcount").args(args).output_within(LIMIT);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

/// Runs `acker-run wordcount --json` with `args` (and `stdin`); returns the JSON summary.
fn json_run(args: &[&str], stdin: Option<&[u8]>) -> serde_json::Value {
    use std::io::Write;
    let mut child = bin()
        .args(["wordcount", "--json", "--no-pin"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let (Some(mut sin), Some(b)) = (child.stdin.take(), stdin) {
        // Written on a helper thread: a child that blocks on a full stdout must not hang us.
        let b = b.to_vec();
        std::thread::spawn(move || {
            let _ = sin.write_all(&b);
        });
    }
    let out = common::wait_bounded(child, None, LIMIT, &format!("acker-run {args:?}"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The case, scaled down: one long line (here 16 MB, read from stdin) with
/// a 1 s message timeout. Before the fix the line timed out and was replayed again and again, and
/// `words_total` came out a multiple of `wc -w` (10x for a 20 MB line); its memory peaked at 58x
/// the input. Now the line goes out as 64 KiB pieces, at most 1 MiB of them in flight.
#[test]
fn cli_one_long_line_with_a_short_timeout_counts_exactly_in_bounded_memory() {
    let vocabulary = ["alpha", "be", "c", "delta", "echo", "fox"];
    let mut text = String::new();
    let mut i = 0usize;
    while text.len() < 16_000_000 {
        text.push_str(vocabulary[(i * 7 + i / 3) % vocabulary.len()]);
        text.push(' ');
        i += 1;
    }
    text.push('\n');
    let v = json_run(
        &["--cores", "2", "--timeout-secs", "1", "--input", "-"],
        Some(text.as_bytes()),
    );
    assert_eq!(wc_w(&text), 3_692_308);
    assert_eq!(v["words_total"], 3_692_308);
    assert_eq!(v["lines_total"], 1);
    assert_eq!(v["pieces_total"], Lines::from_text(&text).pieces() as u64);
    assert_eq!(v["pieces_total"], 245);
    assert_eq!(
        (v["timed_out"].as_u64(), v["replays"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(v["guarantee"], "exact");
    assert_eq!(v["words_exact"], true);
    // Peak memory at most 2 x the input + 200 MB (VmHWM, Linux).
    if let Some(mb) = v["peak_rss_mb"].as_f64() {
        assert!(mb <= 2.0 * 16.0 + 200.0, "peak {mb} MB");
    }
}

/// New-user trial: the same, with the words separated by U+00A0 and U+3000 only. The spout cut
/// long lines at ASCII whitespace alone, so this line went out whole: one piece, 1.6 GB peak
/// for a 47 MB line, and 5x the words with `--timeout-secs 1`. Unicode whitespace cuts now,
/// as the split bolt counts words.
#[test]
fn cli_one_long_line_of_unicode_whitespace_is_cut_and_counts_exactly() {
    let vocabulary = ["alpha", "be", "c", "delta", "echo", "fox"];
    let mut text = String::new();
    let mut i = 0usize;
    while text.len() < 16_000_000 {
        text.push_str(vocabulary[(i * 7 + i / 3) % vocabulary.len()]);
        text.push(if i.is_multiple_of(2) {
            '\u{a0}'
        } else {
            '\u{3000}'
        });
        i += 1;
    }
    text.push('\n');
    let words = text.split_whitespace().count() as u64;
    assert_eq!(words, i as u64);
    assert_eq!(wc_w(&text), 1, "no ASCII whitespace inside the line");
    let v = json_run(
        &["--cores", "2", "--timeout-secs", "1", "--input", "-"],
        Some(text.as_bytes()),
    );
    assert_eq!(v["words_total"], words);
    assert_eq!(v["lines_total"], 1);
    let pieces = Lines::from_text(&text).pieces() as u64;
    assert_eq!(v["pieces_total"], pieces);
    // 16 MB in pieces of at most 64 KiB: at least 245 of them.
    assert!((245..=260).contains(&pieces), "{pieces} pieces");
    assert_eq!(
        (v["timed_out"].as_u64(), v["replays"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(v["guarantee"], "exact");
    if let Some(mb) = v["peak_rss_mb"].as_f64() {
        assert!(mb <= 2.0 * 16.0 + 200.0, "peak {mb} MB");
    }
}

/// At-most-once on tinyshakespeare from stdin, with failures: `wordcount` options after
/// `--no-pin`.
const AT_MOST_ONCE_ARGS: [&str; 10] = [
    "--cores",
    "2",
    "--ackers",
    "0",
    "--fail-rate",
    "0.1",
    "--seed",
    "3",
    "--input",
    "-",
];

/// The case: `--ackers 0 --fail-rate 0.1 --seed 3` on tinyshakespeare lost 20,991 words
/// while the summary said "32777 acked, 0 failed" and "p50 0.0 us". Now it says what was lost.
#[test]
fn cli_at_most_once_reports_lines_lost_and_no_latency() {
    let Some(text) = shakespeare() else { return };
    let v = json_run(&AT_MOST_ONCE_ARGS, Some(text.as_bytes()));
    assert_eq!(v["words_total"], 181_660);
    assert_eq!(wc_w(&text) - 181_660, 20_991);
    assert_eq!(v["lines_lost"], 3_371);
    assert_eq!(v["guarantee"], "at-most-once");
    assert_eq!(v["words_exact"], false);
    assert!(v["complete_latency_us"].is_null());
    // With acking on, the same failures are replayed: exact, nothing lost.
    let v = json_run(
        &[
            "--cores",
            "2",
            "--fail-rate",
            "0.1",
            "--seed",
            "3",
            "--input",
            "-",
        ],
        Some(text.as_bytes()),
    );
    assert_eq!(v["words_total"], wc_w(&text));
    assert_eq!(
        (v["lines_lost"].as_u64(), v["replays"].as_u64()),
        (Some(0), Some(3_371))
    );
    assert_eq!(v["guarantee"], "exact");
    assert!(v["complete_latency_us"]["p50"].as_f64().unwrap() > 0.0);
}

/// At-most-once (`--ackers 0`) tracks no tree: the spout counts each tree acked at its emit
/// (Storm without ackers), lost lines included. The human summary says the trees are not
/// tracked instead of "N acked, 0 failed" beside lost lines (new-user trial), and `--help`
/// says what `acked` means there; `--json` keeps its fields (`acked` = lines emitted).
#[test]
fn cli_at_most_once_summary_says_trees_are_not_tracked() {
    let Some(text) = shakespeare() else { return };
    let child = bin()
        .args(["wordcount", "--no-pin"])
        .args(AT_MOST_ONCE_ARGS)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = common::wait_bounded(child, Some(text.as_bytes()), LIMIT, "at-most-once run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = String::from_utf8_lossy(&out.stdout);
    let line = summary
        .lines()
        .find(|l| l.starts_with("pieces: "))
        .unwrap_or_else(|| panic!("no pieces: row in {summary}"));
    assert_eq!(
        line,
        "pieces: 32777 emitted, 0 replayed; trees: not tracked (at-most-once: no acker; the spout \
         counts all 32777 acked at their emit, 3371 of them lost)"
    );
    let v = json_run(&AT_MOST_ONCE_ARGS, Some(text.as_bytes()));
    assert_eq!(
        (
            v["acked"].as_u64(),
            v["lines_emitted"].as_u64(),
            v["lines_lost"].as_u64()
        ),
        (Some(32_777), Some(32_777), Some(3_371))
    );
    let help = bin().args(["wordcount", "--help"]).output_within(LIMIT);
    let help = String::from_utf8_lossy(&help.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        help.contains(
            "With --ackers 0 (at-most-once) trees are not tracked and the summary says so \
             ('trees: not tracked'): the spout counts every tree acked as it is emitted (Storm \
             without ackers), so `acked` in --json and the lines row of the component table equal \
             the lines emitted, lost lines included; lines_lost counts the lost ones."
        ),
        "{help}"
    );
}

/// `--acker-park-capacity`'s memory as `--help` and README.md state it: 48 B a message written
/// at start when the capacity is a power of two (the 24-byte message, 4-byte link, 4-byte
/// free-list entry and 2 index slots' 8-byte ends; the rest stays unwritten until the queue
/// fills). Measured from outside through the run's peak RSS (VmHWM, Linux) with 4,194,304
/// against the default on the same tiny input: the difference per message is 48 B within 4 B
/// (new-user trial: README said 0.8 GB and `--help` 1.2 GB for 16,777,216). About 200 MB.
#[cfg(target_os = "linux")]
#[test]
fn cli_park_capacity_memory_is_what_help_and_readme_state() {
    const CAPACITY: u64 = 4_194_304;
    let run = |extra: &[&str]| {
        json_run(
            &[&["--cores", "1", "--input", "-"][..], extra].concat(),
            Some(b"to be or not\n"),
        )["peak_rss_mb"]
            .as_f64()
            .expect("peak_rss_mb on Linux")
    };
    let base = run(&[]);
    let with = run(&["--acker-park-capacity", "4194304"]);
    let per_message = (with - base) * 1e6 / CAPACITY as f64;
    assert!(
        (44.0..=52.0).contains(&per_message),
        "{per_message:.1} B a message ({base} MB without, {with} MB with)"
    );
    let help = bin().args(["wordcount", "--help"]).output_within(LIMIT);
    let help = String::from_utf8_lossy(&help.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        help.contains("16777216 took 0.80 GB more peak memory at start (48 B a message)"),
        "{help}"
    );
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("read README.md");
    let readme = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        readme.contains("16,777,216 took 0.80 GB of peak memory at start, 48 B a message"),
        "README.md"
    );
}

/// An empty input acks no tree: the latency is not measured (`null`), not a measured 0 (found by
/// the new-user trial).
#[test]
fn cli_empty_input_reports_latency_as_not_measured() {
    let v = json_run(&["--cores", "1", "--input", "-"], Some(b""));
    assert_eq!(
        (v["words_total"].as_u64(), v["acked"].as_u64()),
        (Some(0), Some(0))
    );
    assert!(v["complete_latency_us"].is_null(), "{v}");
}

/// New-user trial: the text header said `word count on - (...)` where every message calls `-`
/// standard input.
#[test]
fn cli_header_names_standard_input() {
    let out = common::output_with_stdin(
        bin().args(["wordcount", "--cores", "1", "--no-pin", "--input", "-"]),
        b"to be or not\n",
        LIMIT,
        "wordcount --input -",
    );
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("word count on standard input (1 line holding words, 1 piece of up to"),
        "{text}"
    );
}

/// Input that is not UTF-8 is refused, naming the offset of the first bad byte.
#[test]
fn cli_non_utf8_input_names_the_offset_of_the_first_bad_byte() {
    let out = common::output_with_stdin(
        bin().args(["wordcount", "--input", "-"]),
        b"one two\nth\xffree\n",
        LIMIT,
        "acker-run on non-UTF-8 input",
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("error: standard input is not UTF-8: invalid byte at offset 10"),
        "{err}"
    );
}

/// The README's list of `wordcount --json` fields is the list a real run prints, top level and
/// per component (new-user trial: the README omitted `ackers`, `cores`, `undecided` and
/// `words_per_sec`).
#[test]
fn readme_lists_exactly_the_json_fields() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("read README.md");
    let flat = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    let between = |start: &str, end: &str| -> Vec<String> {
        let from = flat
            .find(start)
            .unwrap_or_else(|| panic!("README.md no longer says {start:?}"))
            + start.len();
        let to = from + flat[from..].find(end).expect("end of the list");
        flat[from..to]
            .split(',')
            .map(|f| f.trim().trim_matches('`').to_string())
            .collect()
    };
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    let top = between("`--json` (one object with the fields ", ";");
    let component = between("`components` maps each component to `{", "}`");
    let v = json_run(
        &["--cores", "1", "--input", "-"],
        Some(b"to be or not\nto be\n"),
    );
    let obj = v.as_object().expect("a JSON object");
    assert_eq!(
        sorted(top.clone()),
        sorted(obj.keys().cloned().collect()),
        "README.md's --json fields (left) against a run's (right)"
    );
    assert_eq!(top.len(), obj.len(), "a field listed twice: {top:?}");
    let split = v["components"]["split"]
        .as_object()
        .expect("components.split");
    assert_eq!(
        sorted(component),
        sorted(split.keys().cloned().collect()),
        "README.md's component fields (left) against a run's (right)"
    );
    assert_eq!(v["words_total"], 6);
}

/// The summary counts one unit throughout, and names it: the header gives the lines holding a
/// word and the pieces of up to 64 KiB they make, the `pieces:` row and the rate count those
/// pieces (new-user trial: the header counted lines while the summary called 64 KiB pieces
/// "lines"). A known input: a two-word line, a 100,000-byte line (two pieces) and a blank line
/// (no word, not emitted), and a last line.
#[test]
fn cli_summary_counts_pieces_and_says_so() {
    let long = "word ".repeat(20_000);
    let input = common::TempFile::with_text(
        "wordcount-pieces",
        &format!("a b\n{long}\n   \nlast line\n"),
    );
    let out = bin()
        .args(["wordcount", "--cores", "1", "--no-pin", "--input"])
        .arg(&input)
        .output_within(LIMIT);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(
        s.contains("(3 lines holding words, 4 pieces of up to 64 KiB), 1 core, 1 acker(s)"),
        "{s}"
    );
    assert!(s.contains("words: 20004 total, 5 distinct (exact"), "{s}");
    assert!(
        s.contains("\npieces: 4 emitted, 0 replayed; trees: 4 acked, 0 failed, 0 timed out\n"),
        "{s}"
    );
    assert!(s.contains(" pieces/s, "), "{s}");
    assert!(!s.contains("lines: "), "{s}");
}

/// The text summary's top-10 table cuts a word longer than 40 characters to its first 40 and
/// `… (N chars)`; `--json` keeps it whole (new-user trial: a 200,000-character word was printed
/// in full). The header counts the word's piece as longer than 64 KiB.
#[test]
fn cli_summary_cuts_long_words_and_json_keeps_them() {
    let word = "x".repeat(200_000);
    let input = common::TempFile::with_text("wordcount-long-word", &format!("{word}\nb b\n"));
    let out = bin()
        .args(["wordcount", "--cores", "1", "--no-pin", "--input"])
        .arg(&input)
        .output_within(LIMIT);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(
        s.contains(&format!("  {}… (200000 chars)\n", "x".repeat(40))),
        "{s}"
    );
    // The header says the word went whole (second trial: "1 piece of up to 64 KiB" for a
    // 300 MB word).
    assert!(
        s.contains(
            "(2 lines holding words, 2 pieces of up to 64 KiB but for 1 single word longer than \
             that), 1 core, 1 acker(s)"
        ),
        "{s}"
    );
    assert!(s.len() < 5_000, "the summary is {} bytes", s.len());
    let out = bin()
        .args(["wordcount", "--cores", "1", "--no-pin", "--json", "--input"])
        .arg(&input)
        .output_within(LIMIT);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert!(
        v["top"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["word"] == word.as_str()),
        "--json cut the word"
    );
}

/// `acker-run ARGS` with stdout written to `out` (a file: no pipe to drain), waited for within
/// [`LIMIT`] (killed and failed past it, naming the run), its `VmHWM` (peak resident memory)
/// read from `/proc` every 2 ms meanwhile: the exit status and the last peak seen in MB, a lower
/// bound of the process's real peak that follows it to the output's writing (which takes tens
/// of milliseconds for a word of 100 MB).
fn run_watching_peak(args: &[&std::ffi::OsStr], out: &std::path::Path) -> (Option<i32>, f64) {
    let what = format!("acker-run {args:?}");
    let mut child = bin()
        .args(args)
        .stdout(std::fs::File::create(out).expect("stdout file"))
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: cannot start it: {e}"));
    let status_file = format!("/proc/{}/status", child.id());
    let deadline = std::time::Instant::now() + LIMIT;
    let mut peak_kb = 0u64;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return (status.code(), peak_kb as f64 / 1000.0);
        }
        if let Some(kb) = std::fs::read_to_string(&status_file).ok().and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmHWM:"))?.to_owned();
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        }) {
            peak_kb = peak_kb.max(kb);
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: did not exit within {LIMIT:?} (killed)");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// New-user trial: a file of one 300 MB word peaked at 888 MB (`peak_rss_mb`) and 1.47 GB
/// (`/usr/bin/time -v`), against the stated bound of 2 x the input + 200 MB: the spout, the
/// split bolt and the count bolt each copied the word, the text was copied when read, and the
/// JSON summary copied the top word twice more after `peak_rss_mb` had been read. Now the word
/// is held at most twice (the text, and the one string the spout sends, which the split and
/// count bolts keep), the text is freed before the summary is built, and `peak_rss_mb` is read
/// once the summary is built: on a 100 MB word the peak is about 200 MB plus the process's
/// own ~20 MB, and `peak_rss_mb` is the process's real peak.
#[cfg(target_os = "linux")]
#[test]
fn cli_one_huge_word_is_held_twice_and_peak_rss_covers_the_summary() {
    const WORD: usize = 100_000_000;
    let input = common::TempFile::with_text("huge-word", &"a".repeat(WORD));
    let out = common::TempFile::with_text("huge-word-out", "");
    let (status, watched_mb) = run_watching_peak(
        &[
            "wordcount".as_ref(),
            "--json".as_ref(),
            "--cores".as_ref(),
            "2".as_ref(),
            "--no-pin".as_ref(),
            "--input".as_ref(),
            input.as_ref(),
        ],
        &out,
    );
    assert_eq!(status, Some(0), "acker-run wordcount on one 100 MB word");
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&out).expect("stdout")).expect("one JSON object");
    assert_eq!(
        (&v["words_total"], &v["distinct_words"]),
        (&1.into(), &1.into())
    );
    assert_eq!(v["guarantee"], "exact");
    assert_eq!(v["top"][0]["word"].as_str().map(str::len), Some(WORD));
    let peak_mb = v["peak_rss_mb"].as_f64().expect("peak_rss_mb");
    // What the process was seen to take, its summary included, is what it reports (5 MB for
    // what writing the summary may still allocate after the reading).
    assert!(
        peak_mb + 5.0 >= watched_mb,
        "peak_rss_mb {peak_mb} is below the {watched_mb} MB the process was seen to peak at"
    );
    // Twice the word, plus the process itself (about 20 MB): within 2.3 x the input.
    let input_mb = WORD as f64 / 1e6;
    assert!(
        (2.0 * input_mb..=2.3 * input_mb).contains(&peak_mb),
        "peak_rss_mb {peak_mb} for a word of {input_mb} MB: expected 2 to 2.3 x the input"
    );
}
