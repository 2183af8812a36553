//! `acker-run bench wordcount` alternates the plain loop and the topology for `--rounds` rounds
//! and reports the ratio's spread as `ratio_to_plain_loop: {min, median, max}` beside the first
//! round's figures.

mod common;

use std::process::Command;
use std::time::Duration;

/// How long one `acker-run bench wordcount` on 1 MB may take here.
const LIMIT: Duration = Duration::from_secs(120);

#[test]
fn bench_wordcount_reports_the_ratio_over_alternated_rounds() {
    let path = common::TempFile::with_text("run-bench-wc", "a b c\nb c\nc\n");
    let input = path.to_str().expect("utf-8 temp path");
    let o = common::output_bounded(
        Command::new(env!("CARGO_BIN_EXE_acker-run")).args([
            "bench",
            "wordcount",
            "--input",
            input,
            "--min-mb",
            "1",
            "--rounds",
            "3",
            "--cores",
            "1",
            "--no-pin",
        ]),
        LIMIT,
        "acker-run bench wordcount --rounds 3",
    );
    let v = common::json_of_success(&o);
    // Measured floats without float noise (`plain_cpu_s` printed 0.049999999999999996).
    assert!(common::assert_floats_rounded(&String::from_utf8_lossy(&o.stdout)) >= 10);
    assert_eq!(v["rounds"], 3);
    // "a b c\nb c\nc\n" is 12 bytes and 6 words, repeated to 1,000,008 bytes: 500,004 words.
    assert_eq!(v["plain_words"], 500_004);
    // The text's real size, not the requested minimum (was 1,000,000).
    assert_eq!(v["bytes"], 1_000_008);
    assert_eq!(v["topology_words"], 500_004);
    let r = &v["ratio_to_plain_loop"];
    let (min, median, max) = (
        r["min"].as_f64().expect("min"),
        r["median"].as_f64().expect("median"),
        r["max"].as_f64().expect("max"),
    );
    assert!(0.0 < min && min <= median && median <= max, "{r}");
    // The first round's ratio, still reported as `ratio`, is one of the rounds.
    let first = v["ratio"].as_f64().expect("ratio");
    assert!(min <= first && first <= max, "ratio {first} outside {r}");
}
