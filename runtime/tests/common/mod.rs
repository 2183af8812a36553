//! Bounded waits for the tests: a run of a topology, or of the `acker-run` binary, that does not
//! finish in time fails the test, saying what it waited for, instead of hanging it.
#![allow(dead_code)]

use std::io::Write;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use acker_runtime::shell::{run, RunReport, ShellOptions};
use acker_runtime::Plan;

/// Runs `plan` on a helper thread; panics naming `what` if it does not finish within `limit`
/// (a deadlock, or a drain that never ends) or fails.
pub fn run_bounded(plan: &Plan, options: &ShellOptions, limit: Duration, what: &str) -> RunReport {
    let (tx, rx) = mpsc::channel();
    let (plan, options) = (plan.clone(), options.clone());
    std::thread::spawn(move || {
        let _ = tx.send(run(&plan, &options));
    });
    match rx.recv_timeout(limit) {
        Ok(r) => r.unwrap_or_else(|e| panic!("{what}: the run failed: {e}")),
        Err(_) => panic!("{what}: the run did not finish within {limit:?}"),
    }
}

/// Waits for `child` (after writing `stdin` to it, if piped); kills it and panics naming `what`
/// if it has not exited within `limit`.
pub fn wait_bounded(mut child: Child, stdin: Option<&[u8]>, limit: Duration, what: &str) -> Output {
    if let Some(mut sin) = child.stdin.take() {
        if let Some(b) = stdin {
            // A child that exits early closes the pipe: that is its answer, not ours to judge.
            let _ = sin.write_all(b);
        }
    }
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(o) => o.unwrap_or_else(|e| panic!("{what}: cannot wait for it: {e}")),
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            panic!("{what}: did not exit within {limit:?} (killed)")
        }
    }
}

/// Runs `cmd` with `stdin` written to its standard input, stdout and stderr captured, within
/// `limit` (see [`wait_bounded`]).
pub fn output_with_stdin(cmd: &mut Command, stdin: &[u8], limit: Duration, what: &str) -> Output {
    let child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: cannot start it: {e}"));
    wait_bounded(child, Some(stdin), limit, what)
}

/// Runs `program ARGS` under `ulimit -LIMIT_FLAG KIB` (`v`: address space, `d`: data segment;
/// a shell sets the limit, then becomes the program) with stdout and stderr captured, within
/// `limit` (see [`wait_bounded`]); `name` names the program in a failure.
pub fn under_ulimit<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(
    limit_flag: char,
    kib: u64,
    program: &str,
    name: &str,
    args: &[S],
    limit: Duration,
) -> Output {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("ulimit -{limit_flag} {kib} && exec \"$0\" \"$@\""))
        .arg(program)
        .args(args);
    output_bounded(
        &mut cmd,
        limit,
        &format!("ulimit -{limit_flag} {kib}; {name} {args:?}"),
    )
}

/// Runs `cmd` to completion with stdout and stderr captured, within `limit` (see
/// [`wait_bounded`]).
pub fn output_bounded(cmd: &mut Command, limit: Duration, what: &str) -> Output {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: cannot start it: {e}"));
    wait_bounded(child, None, limit, what)
}

/// The longest [`BoundedOutput::bounded_output`] lets one run of a binary take: 10 minutes, far
/// above what any takes (the longest, a swarm search, about a minute in CI), so that a run that
/// hangs fails its test naming the command instead of hanging CI.
pub const OUTPUT_LIMIT: Duration = Duration::from_secs(600);

/// `Command::output` within [`OUTPUT_LIMIT`]: standard input closed (as `output` leaves it),
/// stdout and stderr captured; a run past the limit is killed and the test panics naming the
/// command. For the simulator's tests, which include this module (`#[path]`) and called
/// `output` without a bound.
pub trait BoundedOutput {
    /// Runs the command to completion within [`OUTPUT_LIMIT`] (never an `Err`: a command that
    /// cannot start panics, naming it).
    fn bounded_output(&mut self) -> std::io::Result<Output>;
    /// [`bounded_output`](Self::bounded_output) for a command whose stdout the caller has set
    /// (to `/dev/full`, say): only stderr is captured.
    fn bounded_output_own_stdout(&mut self) -> std::io::Result<Output>;
}

impl BoundedOutput for Command {
    fn bounded_output(&mut self) -> std::io::Result<Output> {
        self.stdout(Stdio::piped());
        self.bounded_output_own_stdout()
    }

    fn bounded_output_own_stdout(&mut self) -> std::io::Result<Output> {
        let what = format!("{self:?}");
        let child = self
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{what}: cannot start it: {e}"));
        Ok(wait_bounded(child, None, OUTPUT_LIMIT, &what))
    }
}

/// A file in the temporary directory that is removed when dropped, also when the test fails
/// (before, inputs written with `std::env::temp_dir()` were left behind by every test whose
/// removal came after an early return or a failed assertion: 48 files on one machine).
pub struct TempFile(std::path::PathBuf);

impl TempFile {
    /// Writes `text` to `acker-<tag>-<pid>.txt` in the temporary directory.
    pub fn with_text(tag: &str, text: &str) -> TempFile {
        let path = std::env::temp_dir().join(format!("acker-{tag}-{}.txt", std::process::id()));
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        TempFile(path)
    }
}

impl std::ops::Deref for TempFile {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl AsRef<std::path::Path> for TempFile {
    fn as_ref(&self) -> &std::path::Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for TempFile {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The one JSON object a successful `acker-run ... --json` (or `bench`) run printed on stdout;
/// panics with its stderr if it did not exit 0, or with its stdout if that is not one object.
pub fn json_of_success(o: &Output) -> serde_json::Value {
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "not one JSON object ({e}): {}",
            String::from_utf8_lossy(&o.stdout)
        )
    })
}

/// Checks the floats of a JSON summary as printed (`text`): no float noise (new-user trial:
/// `plain_cpu_s: 0.049999999999999996`): a key of seconds (ending in `_s` or `_secs`, not a rate
/// `_per_`) has at most 6 decimals, any other float at most 12 significant digits. Returns how
/// many floats it checked.
pub fn assert_floats_rounded(text: &str) -> usize {
    let mut checked = 0;
    let mut rest = text;
    let mut last_key = String::new();
    while let Some(q) = rest.find('"') {
        let after = &rest[q + 1..];
        let Some(end) = after.find('"') else { break };
        let key = &after[..end];
        rest = &after[end + 1..];
        let Some(value) = rest.strip_prefix(':') else {
            continue;
        };
        let key = if key.is_empty() {
            last_key.as_str()
        } else {
            key
        }
        .to_string();
        last_key.clone_from(&key);
        let token: String = value
            .chars()
            .take_while(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | 'e' | 'E' | '+'))
            .collect();
        if !token.contains('.') && !token.contains('e') {
            continue;
        }
        checked += 1;
        let mantissa = token.split(['e', 'E']).next().unwrap_or("");
        let decimals = mantissa.split_once('.').map_or(0, |(_, d)| d.len());
        let significant = mantissa
            .trim_start_matches('-')
            .replace('.', "")
            .trim_start_matches('0')
            .len();
        let seconds = (key.ends_with("_s") || key.ends_with("_secs")) && !key.contains("_per_");
        if seconds {
            assert!(decimals <= 6, "`{key}`: {token} in {text}");
        } else {
            assert!(significant <= 12, "`{key}`: {token} in {text}");
        }
    }
    checked
}
