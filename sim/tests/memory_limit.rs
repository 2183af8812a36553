//! `acker-sim` under a memory limit: a `--tuples` the process cannot hold is refused before
//! anything is built, naming the option, the estimate and the limit (exit 2), never a SIGABRT.

use std::process::Output;
use std::time::Duration;

#[path = "../../runtime/tests/common/mod.rs"]
mod common;

/// `acker-sim ARGS` under `ulimit -v KIB`, killed after 60 s (no test may hang).
fn under_ulimit_v(kib: u64, args: &[&str]) -> Output {
    common::under_ulimit(
        'v',
        kib,
        env!("CARGO_BIN_EXE_acker-sim"),
        "acker-sim",
        args,
        Duration::from_secs(60),
    )
}

/// New-user trial: `run --seed 1 --tuples 100000000` under `ulimit -v 1000000` died of SIGABRT
/// (`memory allocation of 268435456 bytes failed`). `run`, `search` and `experiment` now refuse
/// it before building anything; a run that fits still runs.
#[test]
fn tuples_past_the_memory_limit_are_refused_by_name() {
    for args in [
        &["run", "--seed", "1", "--tuples", "100000000"][..],
        &["search", "--seeds", "1", "--tuples", "100000000"][..],
        &["experiment", "--tuples", "100000000"][..],
    ] {
        let o = under_ulimit_v(1_000_000, args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        for words in [
            // The input alone does not fit: the estimate counts the fewest replays a default
            // replay limit is lowered to (1000), not the default's 100000000.
            "--tuples 100000000 with up to 1000 replays (--max-replays) needs about 14.4 GB \
             of memory (about 144 B a tuple and 300 B a replay), more than the ",
            "under its limit of 1.0 GB (`ulimit -v`; it maps ",
            ": lower --tuples or --max-replays",
        ] {
            assert!(err.contains(words), "{args:?}: {err}");
        }
        assert!(
            !err.contains("panicked") && !err.contains("backtrace"),
            "{err}"
        );
        assert!(o.stdout.is_empty(), "{args:?}");
    }
    let o = under_ulimit_v(1_000_000, &["run", "--seed", "1", "--tuples", "10000"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
