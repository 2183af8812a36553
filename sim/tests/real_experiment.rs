//! `acker-sim experiment --real` on a private redis-server and PostgreSQL (real servers, real
//! worker processes, a real SIGKILL): three cells of the quick matrix, the relations (exit
//! status) and the exact figures where the relation is exact. About 15 s; bounded at 170 s.

#[path = "../../runtime/tests/common/mod.rs"]
mod common;
use common::BoundedOutput;

use std::io::Read;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const CELLS: &str = "at-least-once/worker-kill/1,exactly-once/acker-crash/1,\
                     at-most-once/bolt-exception-before-emit/1";

/// Reads `child`'s stdout and stderr to their ends and waits for it, on a thread of its own: the
/// output comes through the receiver when the child has exited (the caller bounds the wait).
fn output_when_done(mut child: Child) -> mpsc::Receiver<Output> {
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let t = std::thread::spawn(move || {
            let mut e = Vec::new();
            let _ = err.read_to_end(&mut e);
            e
        });
        let mut o = Vec::new();
        let _ = out.read_to_end(&mut o);
        let e = t.join().unwrap_or_default();
        let status = child.wait().expect("wait for acker-sim");
        let _ = tx.send(Output {
            status,
            stdout: o,
            stderr: e,
        });
    });
    rx
}

/// Runs `acker-sim` with `args` and `env`; kills it and fails if it has not exited in `limit`.
fn run_bounded(args: &[&str], env: &[(&str, &str)], limit: Duration) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_acker-sim"));
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = cmd.spawn().expect("start acker-sim");
    let pid = child.id();
    let rx = output_when_done(child);
    match rx.recv_timeout(limit) {
        Ok(o) => o,
        Err(_) => {
            // SIGTERM: the driver stops its servers and workers, then exits.
            let _ = Command::new("kill").arg(pid.to_string()).status();
            panic!("acker-sim {args:?} did not finish within {limit:?} (sent SIGTERM)");
        }
    }
}

fn rows(o: &Output) -> Vec<serde_json::Value> {
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    });
    v["rows"].as_array().expect("rows").clone()
}

fn get(r: &serde_json::Value, k: &str) -> u64 {
    r[k].as_u64()
        .unwrap_or_else(|| panic!("row without {k}: {r}"))
}

#[test]
fn three_real_cells_hold_their_relations_with_exact_figures() {
    let o = run_bounded(
        &[
            "experiment",
            "--real",
            "--quick",
            "--cells",
            CELLS,
            "--json",
        ],
        &[],
        Duration::from_secs(170),
    );
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(0), "a relation failed: {err}");
    // A progress line per cell on stderr.
    assert_eq!(err.matches("acker-sim: [").count(), 3, "{err}");
    let rows = rows(&o);
    assert_eq!(rows.len(), 3);
    let keys: Vec<&str> = rows[0]
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    let mut want = vec![
        "guarantee",
        "fault",
        "injected",
        "input",
        "distinct",
        "lost",
        "duplicates",
        "max_spout_pending",
        "predicted_lost",
        "predicted_duplicates",
        "trace_hash",
        "elapsed_ms",
        "status",
    ];
    want.sort();
    let mut keys = keys;
    keys.sort();
    assert_eq!(keys, want);
    for r in &rows {
        assert_eq!(get(r, "input"), 10_000, "{r}");
        assert_eq!(get(r, "injected"), 1, "{r}");
        assert_eq!(get(r, "max_spout_pending"), 1000, "{r}");
        assert_eq!(r["trace_hash"].as_str().unwrap().len(), 16, "{r}");
        assert_eq!(r["status"], "done", "{r}");
    }
    // at-least-once, worker SIGKILLed and restarted: nothing lost.
    let alo = &rows[0];
    assert_eq!(
        (alo["guarantee"].as_str(), alo["fault"].as_str()),
        (Some("at-least-once"), Some("worker-kill"))
    );
    assert_eq!(get(alo, "lost"), 0, "{alo}");
    assert_eq!(get(alo, "distinct"), 10_000, "{alo}");
    // exactly-once, acker restarted with trees pending: nothing lost, nothing duplicated.
    let eo = &rows[1];
    assert_eq!(eo["fault"].as_str(), Some("acker-crash"));
    assert_eq!((get(eo, "lost"), get(eo, "duplicates")), (0, 0), "{eo}");
    assert_eq!(get(eo, "distinct"), 10_000, "{eo}");
    // at-most-once, one exception before emit: exactly that tuple lost, nothing duplicated; the
    // simulator predicts the same.
    let amo = &rows[2];
    assert_eq!(amo["fault"].as_str(), Some("bolt-exception-before-emit"));
    assert_eq!((get(amo, "lost"), get(amo, "duplicates")), (1, 0), "{amo}");
    assert_eq!(
        (get(amo, "predicted_lost"), get(amo, "predicted_duplicates")),
        (1, 0)
    );
}

#[test]
fn missing_redis_server_names_the_debian_packages_and_exits_2() {
    let empty = std::env::temp_dir().join(format!("acker-empty-path-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let o = run_bounded(
        &["experiment", "--real", "--cells", "at-most-once/none/0"],
        &[("PATH", empty.to_str().unwrap())],
        Duration::from_secs(60),
    );
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("`redis-server`"), "{err}");
    assert!(err.contains("`postgresql`"), "{err}");
    assert!(o.stdout.is_empty());
    let _ = std::fs::remove_dir_all(&empty);
}

/// Starts `acker-sim` with `args`, sends it `signal` (`TERM`, `INT`) after `after`, and returns
/// its output; fails if it has not exited 60 s after the signal (then kills it).
fn signalled(args: &[&str], signal: &str, after: Duration) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_acker-sim"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start acker-sim");
    let pid = child.id().to_string();
    let rx = output_when_done(child);
    std::thread::sleep(after);
    let _ = Command::new("kill")
        .args([&format!("-{signal}"), &pid])
        .status();
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(o) => o,
        Err(_) => {
            let _ = Command::new("kill").args(["-KILL", &pid]).status();
            panic!("acker-sim {args:?} did not exit within 60 s of SIG{signal}");
        }
    }
}

/// SIGTERM exits 143 and SIGINT 130 (the statuses a shell gives a process those signals ended;
/// until 2026-12-03 both gave 130), after stopping the cell, the servers and the worker.
#[test]
fn sigterm_exits_143_and_sigint_130() {
    // A cell far longer than the wait: the signal comes while it runs (or while the servers
    // start: the driver looks at the flag before the cell's worker starts, too).
    let args = [
        "experiment",
        "--real",
        "--cells",
        "at-least-once/none/0",
        "--tuples",
        "1000000",
    ];
    for (signal, status) in [("TERM", 143), ("INT", 130)] {
        let o = signalled(&args, signal, Duration::from_secs(4));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(status), "SIG{signal}: {err}");
        assert!(
            err.contains(&format!(
                "acker-sim: interrupted (SIG{signal}); servers and workers stopped"
            )),
            "SIG{signal}: {err}"
        );
        assert!(o.stdout.is_empty(), "SIG{signal}");
    }
    let help = Command::new(env!("CARGO_BIN_EXE_acker-sim"))
        .arg("--help")
        .bounded_output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout).replace('\n', " ");
    assert!(
        help.contains("130 on SIGINT (Ctrl-C), 143 on SIGTERM"),
        "{help}"
    );
}

/// A cell cut at its time limit fails `every cell ran to completion` only: its unprocessed
/// input is not counted against the guarantees (until 2026-12-03 `--cell-limit 1s` printed
/// `[FAILS] at-least-once never loses` and `lost 48600 vs predicted 0` for cut cells).
#[test]
fn a_cut_cell_is_reported_as_cut_and_judged_by_no_guarantee() {
    let o = run_bounded(
        &[
            "experiment",
            "--real",
            "--cells",
            "at-least-once/none/0,exactly-once/redis-restart/1",
            "--tuples",
            "200000",
            "--cell-limit",
            "1s",
        ],
        &[],
        Duration::from_secs(90),
    );
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert_eq!(err.matches("(CUT at the time limit)").count(), 2, "{err}");
    let relation = |start: &str| {
        out.lines()
            .find(|l| l.trim_start().starts_with(start))
            .unwrap_or_else(|| panic!("no `{start}` line in {out}"))
            .trim()
            .to_string()
    };
    assert!(
        relation("[FAILS] every cell ran to completion")
            .contains("at-least-once/none/0: timed out | exactly-once/redis-restart/1: timed out"),
        "{out}"
    );
    assert_eq!(
        relation("[holds] at-least-once never loses"),
        "[holds] at-least-once never loses  (max lost 0; not judged: at-least-once/none/0 cut)"
    );
    assert_eq!(
        relation("[holds] exactly-once: 0 lost and 0 duplicates in every cell"),
        "[holds] exactly-once: 0 lost and 0 duplicates in every cell  (max lost 0, max \
         duplicates 0; not judged: exactly-once/redis-restart/1 cut)"
    );
    assert_eq!(out.matches("[FAILS]").count(), 1, "{out}");
    assert!(
        out.contains("  exactly-once/redis-restart/1: cut at the time limit, not compared"),
        "{out}"
    );
    assert!(
        out.contains("  at-least-once/none/0: cut at the time limit, not compared"),
        "{out}"
    );
    // In --json the row says so (new-user trial: a script saw only `lost`).
    let o = run_bounded(
        &[
            "experiment",
            "--real",
            "--cells",
            "at-least-once/none/0",
            "--tuples",
            "200000",
            "--cell-limit",
            "1s",
            "--json",
        ],
        &[],
        Duration::from_secs(90),
    );
    let rows = rows(&o);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["status"], "cut", "{}", rows[0]);
}
