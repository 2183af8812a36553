//! The driver of `acker-sim experiment --real`: starts a private `redis-server` and PostgreSQL
//! (the runtime's [`local`](acker_runtime::connectors::local) helpers), runs each cell's worker
//! process (`acker-sim worker`, through the current executable's path) on fresh state, injects
//! the faults it owns (SIGKILL of the worker, hard restarts of the servers: when the sink holds
//! the fault's offset in rows, or the group has read max spout pending past it), counts the sink's
//! rows with SQL, and sets the simulator's prediction for the same cell beside each measurement.
//!
//! Per cell: a new stream `numbers:c<i>` holding `tuples` entries `line=<n>` (`n` = 0, 1, ...),
//! new tables `out_c<i>` / `applied_c<i>`, consumer group `experiment`, one consumer name kept
//! across worker restarts. A cell is cut after its time limit (reported, the run goes on); a
//! worker that fails is reported with its log's tail. Servers and workers never outlive the
//! driver: they are stopped when it returns, and SIGINT (Ctrl-C) or SIGTERM make it stop the
//! cell, stop everything and exit 130 (SIGINT) or 143 (SIGTERM), the statuses a shell reports for
//! a process those signals ended (as `acker-run` does).

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use acker_runtime::cli::CliError;
use acker_runtime::connectors::local::{LocalServerError, PostgresServer, RedisServer};
use acker_runtime::connectors::{postgres_sink, redis_stream};
use serde::Serialize;

use super::{offsets, prediction_model, worker, RealFault};
use crate::experiment::{self, Relation};
use crate::scenario::{Guarantee, Scenario};
use crate::source::{RedisOptions, SourceModel};

/// One cell: guarantee, fault (`None`: no fault), injected count.
pub type Cell = (Guarantee, Option<RealFault>, u32);

/// The injected counts of the full matrix (a count of 0 is the `none` cell of its guarantee).
pub const COUNTS: [u32; 3] = [1, 2, 5];
/// The injected counts of `--quick`.
pub const QUICK_COUNTS: [u32; 1] = [1];

/// The cells of the matrix, in table order: for each guarantee, `none`, then each fault of
/// [`RealFault::ALL`] with each count (the count-0 cell of a fault is the `none` cell, run once).
pub fn cells(quick: bool) -> Vec<Cell> {
    let counts: &[u32] = if quick { &QUICK_COUNTS } else { &COUNTS };
    let mut v = Vec::new();
    for g in Guarantee::ALL {
        v.push((g, None, 0));
        for k in RealFault::ALL {
            for &c in counts {
                v.push((g, Some(k), c));
            }
        }
    }
    v
}

/// Parses `GUARANTEE/FAULT/COUNT,...` (`FAULT` may be `none`).
///
/// # Errors
/// A message naming the bad cell.
pub fn parse_cells(s: &str) -> Result<Vec<Cell>, String> {
    acker_runtime::cli::list_items(s)?
        .into_iter()
        .map(|c| {
            let parts: Vec<&str> = c.trim().split('/').collect();
            let [g, f, n] = parts[..] else {
                return Err(format!(
                    "cell `{c}`: expected GUARANTEE/FAULT/COUNT, e.g. at-least-once/worker-kill/1"
                ));
            };
            let g: Guarantee = g.parse().map_err(|e| format!("cell `{c}`: {e}"))?;
            let f = match f {
                "none" => None,
                f => Some(
                    f.parse::<RealFault>()
                        .map_err(|e| format!("cell `{c}`: {e}"))?,
                ),
            };
            let n: u32 = n
                .parse()
                .map_err(|_| format!("cell `{c}`: COUNT `{n}` is not a number"))?;
            if f.is_none() && n != 0 {
                return Err(format!("cell `{c}`: `none` takes count 0"));
            }
            Ok((g, f, n))
        })
        .collect::<Result<Vec<_>, _>>()
        .and_then(|v| {
            if v.is_empty() {
                Err("--cells names no cell".to_string())
            } else {
                Ok(v)
            }
        })
}

/// How a cell ended. In `--json` a row's `status`: `done`, `cut` or `failed` (new-user trial:
/// a script reading the rows saw a cut cell's unprocessed input as lost, with nothing saying it
/// was cut).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CellStatus {
    /// The worker drained the stream and exited 0.
    Done,
    /// Cut at the per-cell time limit (counts are those at the cut).
    TimedOut,
    /// The worker (or a server restart) failed: the reason.
    Failed(String),
}

impl Serialize for CellStatus {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(match self {
            CellStatus::Done => "done",
            CellStatus::TimedOut => "cut",
            CellStatus::Failed(_) => "failed",
        })
    }
}

/// One row of the real experiment (`--json` holds exactly the serialised keys).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RealRow {
    /// The delivery guarantee.
    pub guarantee: String,
    /// The fault, or `none`.
    pub fault: String,
    /// Faults that fired.
    pub injected: u64,
    /// Numbers loaded into the stream.
    pub input: u64,
    /// Distinct numbers in the sink (SQL).
    pub distinct: u64,
    /// Numbers missing from the sink.
    pub lost: u64,
    /// Rows in the sink beyond one per distinct number.
    pub duplicates: u64,
    /// Max spout pending (trees in flight).
    pub max_spout_pending: u64,
    /// The simulator's lost numbers for the same cell.
    pub predicted_lost: u64,
    /// The simulator's duplicates for the same cell.
    pub predicted_duplicates: u64,
    /// The predicting simulation's trace hash, 16 hex digits.
    pub trace_hash: String,
    /// Wall time of the cell's worker runs, ms (loading excluded).
    pub elapsed_ms: u64,
    /// Faults asked for.
    #[serde(skip)]
    pub requested: u64,
    /// How the cell ended: `done`; `cut` at the per-cell time limit (its counts, `lost`
    /// included, are those at the cut: not judged by any guarantee); `failed` (the worker or a
    /// server restart failed; the reason is in the text output and on stderr).
    pub status: CellStatus,
    /// How the prediction was made.
    #[serde(skip)]
    pub model: &'static str,
}

/// The options of a real run.
#[derive(Clone, Debug)]
pub struct RealOptions {
    /// Numbers in the stream of every cell.
    pub tuples: u64,
    /// Message timeout, ms.
    pub timeout_ms: u64,
    /// Max spout pending.
    pub max_spout_pending: u64,
    /// Seed of the topology and of the prediction.
    pub seed: u64,
    /// The cells to run, in order.
    pub cells: Vec<Cell>,
    /// Per-cell time limit.
    pub cell_limit: Duration,
    /// Test only: a bug planted in the worker ([`worker::WorkerBug`]).
    pub planted_bug: Option<String>,
}

/// Why the real run stopped.
#[derive(Debug)]
pub enum DriverError {
    /// A server binary is missing (the Debian package is named).
    Missing(String),
    /// SIGINT or SIGTERM.
    Interrupted,
    /// Anything else: the message.
    Other(String),
}

impl From<String> for DriverError {
    fn from(s: String) -> Self {
        DriverError::Other(s)
    }
}

fn server_error(e: LocalServerError) -> DriverError {
    match e {
        LocalServerError::Missing { .. } => DriverError::Missing(format!(
            "{e}; the real experiment needs the Debian packages `redis-server` and `postgresql`"
        )),
        LocalServerError::Failed(m) => DriverError::Other(m),
    }
}

/// The scenario the simulator predicts a cell with `fault` from: the simulated experiment's
/// defaults with the real cell's tuples, max spout pending and message timeout, the Redis-style
/// source read as the worker reads it, the whole topology in one worker, restarts as long as
/// the real ones, and a server restart's outage as long as the one measured in the cell
/// (`measured_down_ns`, stop to answering again, rounded up to 100 ms; 0 when none was
/// measured) or else [`REDIS_RESTART_OUTAGE_NS`](super::REDIS_RESTART_OUTAGE_NS) /
/// [`POSTGRES_RESTART_OUTAGE_NS`](super::POSTGRES_RESTART_OUTAGE_NS).
pub fn prediction_base(
    o: &RealOptions,
    guarantee: Guarantee,
    fault: Option<RealFault>,
    measured_down_ns: u64,
) -> Scenario {
    let mut sc = Scenario::new(o.seed, guarantee).with_source_model(SourceModel::Redis);
    sc.tuples = o.tuples;
    sc.max_spout_pending = o.max_spout_pending as usize;
    sc.message_timeout_ns = o.timeout_ms * 1_000_000;
    // As the worker reads (`worker::run`): a tenth of max spout pending a read, and a retry
    // limit the experiment never reaches.
    sc.redis = RedisOptions {
        read_batch: (o.max_spout_pending as usize / 10).clamp(1, 500),
        max_retries: 1000,
    };
    // The worker process holds the whole topology: a kill crashes every task at once.
    sc.one_worker = true;
    sc.restart_delay_ns = match fault {
        Some(RealFault::WorkerKill) => super::WORKER_RESTART_NS,
        _ => super::TASK_RESTART_NS,
    };
    sc.outage_ns = if measured_down_ns > 0 {
        measured_down_ns.div_ceil(100_000_000) * 100_000_000
    } else if fault == Some(RealFault::PostgresRestart) {
        super::POSTGRES_RESTART_OUTAGE_NS
    } else {
        super::REDIS_RESTART_OUTAGE_NS
    };
    sc
}

/// The private servers and the working directory of one real run.
struct Servers {
    redis: RedisServer,
    postgres: PostgresServer,
    dir: PathBuf,
}

impl Drop for Servers {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Kills the worker when dropped (a driver that returns early never leaves one running).
struct Worker {
    child: Option<Child>,
}

impl Worker {
    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Appends `tuples` entries `line=<n>` to `stream`, pipelined 1000 a round trip.
fn load(url: &str, stream: &str, tuples: u64) -> Result<(), String> {
    let mut con = redis_stream::connect(url).map_err(|e| e.to_string())?;
    let _: redis::RedisResult<i64> = redis::cmd("DEL").arg(stream).query(&mut con);
    let mut n = 0u64;
    while n < tuples {
        let mut p = redis::pipe();
        for i in n..(n + 1000).min(tuples) {
            p.cmd("XADD")
                .arg(stream)
                .arg("*")
                .arg("line")
                .arg(i.to_string())
                .ignore();
        }
        p.query::<()>(&mut con)
            .map_err(|e| format!("cannot load {stream}: {e}"))?;
        n = (n + 1000).min(tuples);
    }
    Ok(())
}

/// Entries of `stream` the group `experiment` has read (`entries-read` of `XINFO GROUPS`,
/// Redis 7), `None` when unknown (the server restarting, say).
fn entries_read(url: &str, stream: &str) -> Option<u64> {
    let mut con = redis_stream::connect(url).ok()?;
    let v: redis::Value = redis::cmd("XINFO")
        .arg("GROUPS")
        .arg(stream)
        .query(&mut con)
        .ok()?;
    let text = |v: &redis::Value| match v {
        redis::Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
        redis::Value::SimpleString(s) => Some(s.clone()),
        redis::Value::Int(i) => Some(i.to_string()),
        _ => None,
    };
    let redis::Value::Array(groups) = v else {
        return None;
    };
    groups.iter().find_map(|g| {
        let redis::Value::Array(kv) = g else {
            return None;
        };
        kv.chunks_exact(2)
            .find(|c| text(&c[0]).as_deref() == Some("entries-read"))
            .and_then(|c| text(&c[1]))
            .and_then(|n| n.parse().ok())
    })
}

/// `(rows, distinct numbers in 0..tuples)` of the sink of `tag`.
fn count(client: &mut postgres::Client, tag: &str, tuples: u64) -> Result<(u64, u64), String> {
    let row = client
        .query_one(
            &format!(
                "SELECT count(*), count(DISTINCT n) FILTER (WHERE n >= 0 AND n < $1) FROM out_{tag}"
            ),
            &[&(tuples as i64)],
        )
        .map_err(|e| format!("cannot count out_{tag}: {}", postgres_sink::error_chain(&e)))?;
    Ok((row.get::<_, i64>(0) as u64, row.get::<_, i64>(1) as u64))
}

/// The last 1500 bytes of a log file.
fn tail(path: &Path) -> String {
    let s = std::fs::read_to_string(path).unwrap_or_default();
    let start = s.len().saturating_sub(1500);
    let start = (start..s.len())
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(s.len());
    s[start..].trim().to_string()
}

struct Ctx<'a> {
    o: &'a RealOptions,
    servers: Servers,
    exe: PathBuf,
    interrupted: Arc<AtomicBool>,
    pg: Option<postgres::Client>,
}

impl Ctx<'_> {
    fn pg(&mut self) -> Option<&mut postgres::Client> {
        if self
            .pg
            .as_mut()
            .is_some_and(|c| c.is_valid(Duration::from_secs(1)).is_err())
        {
            self.pg = None;
        }
        if self.pg.is_none() {
            self.pg = postgres_sink::connect(&self.servers.postgres.url()).ok();
        }
        self.pg.as_mut()
    }

    fn spawn(&self, args: &[String], log: &Path) -> Result<Child, String> {
        let err = File::options()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| format!("cannot open {}: {e}", log.display()))?;
        Command::new(&self.exe)
            .arg("worker")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(err))
            .spawn()
            .map_err(|e| format!("cannot start the worker {}: {e}", self.exe.display()))
    }

    fn run_cell(&mut self, idx: usize, (g, fault, n): Cell) -> Result<RealRow, DriverError> {
        let o = self.o;
        let tag = format!("c{idx}");
        let stream = format!("numbers:{tag}");
        let redis_url = self.servers.redis.url();
        let pg_url = self.servers.postgres.url();
        load(&redis_url, &stream, o.tuples)?;
        {
            let client = self
                .pg()
                .ok_or_else(|| format!("cannot reach PostgreSQL at {pg_url}"))?;
            worker::create_tables(client, &tag)
                .map_err(|e| format!("cannot create the tables of {tag}: {e}"))?;
        }
        let mut args: Vec<String> = vec![
            "--redis".into(),
            redis_url.clone(),
            "--stream".into(),
            stream.clone(),
            "--postgres".into(),
            pg_url,
            "--tag".into(),
            tag.clone(),
            "--guarantee".into(),
            g.name().into(),
            "--timeout-ms".into(),
            o.timeout_ms.to_string(),
            "--max-spout-pending".into(),
            o.max_spout_pending.to_string(),
            "--tuples".into(),
            o.tuples.to_string(),
            "--seed".into(),
            o.seed.to_string(),
            "--count".into(),
            n.to_string(),
        ];
        if let Some(f) = fault.filter(|f| f.in_process()) {
            args.extend(["--fault".into(), f.name().into()]);
        }
        if let Some(b) = &o.planted_bug {
            args.extend(["--planted-bug".into(), b.clone()]);
        }
        let log = self.servers.dir.join(format!("worker-{tag}.log"));
        let mut w = Worker {
            child: Some(self.spawn(&args, &log)?),
        };
        // Driver-side faults fire when the sink holds this many rows.
        let mut pending: Vec<u64> = match fault {
            Some(f) if !f.in_process() => offsets(o.tuples, n),
            _ => Vec::new(),
        };
        pending.reverse();
        let mut driver_injected = 0u64;
        // The longest server restart of the cell (stop to answering again), for its prediction.
        let mut down_ns = 0u64;
        let t0 = Instant::now();
        let mut status = CellStatus::Done;
        let mut summary = String::new();
        loop {
            if self.interrupted.load(Ordering::Acquire) {
                w.kill();
                return Err(DriverError::Interrupted);
            }
            let exited = match w.child.as_mut().map(|c| c.try_wait()) {
                Some(Ok(Some(s))) => Some(s),
                Some(Ok(None)) => None,
                Some(Err(e)) => {
                    status = CellStatus::Failed(format!("cannot wait for the worker: {e}"));
                    break;
                }
                None => break,
            };
            if let Some(s) = exited {
                let mut child = w.child.take().expect("a worker that exited");
                if let Some(mut out) = child.stdout.take() {
                    let _ = out.read_to_string(&mut summary);
                }
                // Reaped by `try_wait` already; this returns its status at once.
                let _ = child.wait();
                if !s.success() {
                    status = CellStatus::Failed(format!("worker exited with {s}: {}", tail(&log)));
                }
                break;
            }
            if t0.elapsed() > o.cell_limit {
                w.kill();
                status = CellStatus::TimedOut;
                break;
            }
            if let Some(&at) = pending.last() {
                let rows = self.pg().and_then(|c| count(c, &tag, o.tuples).ok());
                // Normally the sink's rows reach the offset first; when the sink lost rows (an
                // at-most-once outage) they never may, so the spout's progress past the offset
                // by more than max spout pending fires the fault too.
                let read_past = || {
                    entries_read(&redis_url, &stream).is_some_and(|r| r >= at + o.max_spout_pending)
                };
                if rows.is_some_and(|(rows, _)| rows >= at) || read_past() {
                    pending.pop();
                    driver_injected += 1;
                    let r = match fault {
                        Some(RealFault::WorkerKill) => {
                            w.kill();
                            self.spawn(&args, &log).map(|c| w.child = Some(c))
                        }
                        Some(RealFault::RedisRestart) => {
                            let t = Instant::now();
                            let r = self.servers.redis.restart().map_err(|e| e.to_string());
                            down_ns = down_ns.max(t.elapsed().as_nanos() as u64);
                            r
                        }
                        Some(RealFault::PostgresRestart) => {
                            self.pg = None;
                            let t = Instant::now();
                            let r = self.servers.postgres.restart().map_err(|e| e.to_string());
                            down_ns = down_ns.max(t.elapsed().as_nanos() as u64);
                            r
                        }
                        _ => Ok(()),
                    };
                    if let Err(e) = r {
                        w.kill();
                        status = CellStatus::Failed(e);
                        break;
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let elapsed_ms = t0.elapsed().as_millis() as u64;
        let injected = match fault {
            Some(f) if f.in_process() => serde_json::from_str::<serde_json::Value>(summary.trim())
                .ok()
                .and_then(|v| v["injected"].as_u64())
                .unwrap_or(0),
            _ => driver_injected,
        };
        let (rows, distinct) = {
            let c = self
                .pg()
                .ok_or_else(|| "cannot reach PostgreSQL to count".to_string())?;
            let counted = count(c, &tag, o.tuples)?;
            let _ = c.batch_execute(&format!(
                "DROP TABLE IF EXISTS out_{tag}; DROP TABLE IF EXISTS applied_{tag};"
            ));
            counted
        };
        if let Ok(mut con) = redis_stream::connect(&redis_url) {
            let _: redis::RedisResult<i64> = redis::cmd("DEL").arg(&stream).query(&mut con);
        }
        let model = prediction_model(fault);
        let (pred, _) =
            experiment::run_cell(&prediction_base(o, g, fault, down_ns), g, model.fault, n)
                .map_err(|e| {
                    format!("prediction of {}/{}/{n}: {e}", g.name(), fault_name(fault))
                })?;
        Ok(RealRow {
            guarantee: g.name().to_string(),
            fault: fault_name(fault).to_string(),
            injected,
            input: o.tuples,
            distinct,
            lost: o.tuples - distinct,
            duplicates: rows - distinct,
            max_spout_pending: o.max_spout_pending,
            predicted_lost: pred.lost,
            predicted_duplicates: pred.duplicates,
            trace_hash: pred.trace_hash,
            elapsed_ms,
            // At-most-once has no acker: an acker crash has nothing to hit.
            requested: match fault {
                Some(RealFault::AckerCrash) if g == Guarantee::AtMostOnce => 0,
                Some(_) => n as u64,
                None => 0,
            },
            status,
            model: model.note,
        })
    }
}

fn fault_name(f: Option<RealFault>) -> &'static str {
    f.map_or("none", |f| f.name())
}

/// Runs every cell of `o`, calling `progress` after each (cell index, row).
///
/// # Errors
/// [`DriverError::Missing`] when a server binary is missing, [`DriverError::Interrupted`] on
/// SIGINT / SIGTERM (set in `interrupted`), [`DriverError::Other`] when a server cannot start or
/// a cell's state cannot be set up.
pub fn run(
    o: &RealOptions,
    interrupted: Arc<AtomicBool>,
    mut progress: impl FnMut(usize, &RealRow),
) -> Result<Vec<RealRow>, DriverError> {
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find the current executable: {e}"))?;
    let redis = RedisServer::start().map_err(server_error)?;
    let postgres = PostgresServer::start().map_err(server_error)?;
    let dir = std::env::temp_dir().join(format!("acker-real-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut ctx = Ctx {
        o,
        servers: Servers {
            redis,
            postgres,
            dir,
        },
        exe,
        interrupted,
        pg: None,
    };
    let mut rows = Vec::new();
    for (i, &cell) in o.cells.iter().enumerate() {
        let row = match ctx.run_cell(i, cell) {
            // A signal interrupts whatever system call was running: report the interruption.
            Err(_) if ctx.interrupted.load(Ordering::Acquire) => {
                return Err(DriverError::Interrupted)
            }
            r => r?,
        };
        progress(i, &row);
        rows.push(row);
    }
    Ok(rows)
}

fn rows_of<'a>(rows: &'a [RealRow], g: Guarantee, f: &'a str) -> Vec<&'a RealRow> {
    rows.iter()
        .filter(|r| r.guarantee == g.name() && r.fault == f)
        .collect()
}

fn pairs(rows: &[&RealRow], f: impl Fn(&RealRow) -> String) -> String {
    if rows.is_empty() {
        return "no cell".to_string();
    }
    rows.iter().map(|r| f(r)).collect::<Vec<_>>().join(" ")
}

/// The faults of the relation "a worker kill or a server restart loses nothing".
const RESTARTS: [RealFault; 3] = [
    RealFault::WorkerKill,
    RealFault::RedisRestart,
    RealFault::PostgresRestart,
];

/// The relations of the issue, checked on the measured rows (a relation with no cell holds).
///
/// A cell that did not run to completion (cut at its time limit, or its worker failed) is
/// reported by the first relation, `every cell ran to completion`, and judged by no other: its
/// unprocessed input is not lost, nor its counts a guarantee's. The relations it would have been
/// judged by say so in their detail (`not judged: exactly-once/redis-restart/1 cut`).
pub fn relations(all: &[RealRow]) -> Vec<Relation> {
    use Guarantee::*;
    let mut v = Vec::new();
    let unjudged: Vec<&RealRow> = all
        .iter()
        .filter(|r| r.status != CellStatus::Done)
        .collect();
    let judged: Vec<RealRow> = all
        .iter()
        .filter(|r| r.status == CellStatus::Done)
        .cloned()
        .collect();
    let rows = &judged[..];
    // `scope`: the cells (any status) the relation covers.
    let mut rel = |text: &str, holds: bool, detail: String, scope: &dyn Fn(&RealRow) -> bool| {
        let skipped: Vec<String> = unjudged
            .iter()
            .filter(|r| scope(r))
            .map(|r| {
                let why = match r.status {
                    CellStatus::TimedOut => "cut",
                    _ => "failed",
                };
                format!("{}/{}/{} {why}", r.guarantee, r.fault, r.requested)
            })
            .collect();
        let detail = if skipped.is_empty() {
            detail
        } else {
            format!("{detail}; not judged: {}", skipped.join(", "))
        };
        v.push(Relation {
            text: text.to_string(),
            holds,
            detail,
        })
    };
    let any = |_: &RealRow| true;
    let bad: Vec<String> = all
        .iter()
        .filter(|r| r.status != CellStatus::Done)
        .map(|r| {
            let why = match &r.status {
                CellStatus::TimedOut => "timed out".to_string(),
                CellStatus::Failed(m) => m.clone(),
                CellStatus::Done => String::new(),
            };
            format!("{}/{}/{}: {why}", r.guarantee, r.fault, r.requested)
        })
        .collect();
    rel(
        "every cell ran to completion",
        bad.is_empty(),
        if bad.is_empty() {
            format!("{} cells", all.len())
        } else {
            bad.join(" | ")
        },
        &|_| false,
    );
    rel(
        "every requested fault fired",
        rows.iter().all(|r| r.injected == r.requested),
        format!("{} faults", rows.iter().map(|r| r.injected).sum::<u64>()),
        &any,
    );
    let amo: Vec<&RealRow> = rows
        .iter()
        .filter(|r| r.guarantee == AtMostOnce.name())
        .collect();
    rel(
        "at-most-once never duplicates",
        amo.iter().all(|r| r.duplicates == 0),
        pairs(&amo, |r| format!("{}:{}", r.fault, r.duplicates)),
        &|r| r.guarantee == AtMostOnce.name(),
    );
    let before = rows_of(rows, AtMostOnce, "bolt-exception-before-emit");
    rel(
        "at-most-once: each bolt exception before emit loses its tuple (lost = exceptions)",
        before.iter().all(|r| r.lost == r.injected),
        pairs(&before, |r| format!("{}→{}", r.injected, r.lost)),
        &|r| r.guarantee == AtMostOnce.name() && r.fault == "bolt-exception-before-emit",
    );
    let alo: Vec<&RealRow> = rows
        .iter()
        .filter(|r| r.guarantee == AtLeastOnce.name())
        .collect();
    rel(
        "at-least-once never loses",
        alo.iter().all(|r| r.lost == 0),
        format!("max lost {}", alo.iter().map(|r| r.lost).max().unwrap_or(0)),
        &|r| r.guarantee == AtLeastOnce.name(),
    );
    // The seed (and the simulator, whose spout is always saturated) found duplicates = max
    // spout pending × crashes: every tree in flight at the crash is replayed. On real components
    // the trees in flight are fewer whenever the topology is not saturated (here the spout's
    // Redis reads, not the sink, set the pace: in flight = rate × complete latency), so the
    // relation checked is the bound, with the figures printed beside it.
    let bounded = |r: &&RealRow| {
        let max = r.max_spout_pending * r.injected;
        (r.injected == 0 && r.duplicates == 0)
            || (r.injected > 0 && r.duplicates > 0 && r.duplicates <= max)
    };
    let msp = |r: &RealRow| format!("{}×{}→{}", r.max_spout_pending, r.injected, r.duplicates);
    let acker = rows_of(rows, AtLeastOnce, "acker-crash");
    rel(
        "at-least-once: acker crash → 0 < duplicates ≤ max spout pending × crashes (the trees \
         in flight at the crash; = when the spout is saturated, as in the seed)",
        acker.iter().all(bounded),
        pairs(&acker, msp),
        &|r| r.guarantee == AtLeastOnce.name() && r.fault == "acker-crash",
    );
    let spout = rows_of(rows, AtLeastOnce, "spout-crash");
    rel(
        "at-least-once: spout crash → 0 < duplicates ≤ max spout pending × crashes (Redis \
         source: the restarted spout re-reads its own pending entries; Kafka model: it rewinds \
         to the committed offset; ≈ max spout pending × crashes when saturated)",
        spout.iter().all(bounded),
        pairs(&spout, msp),
        &|r| r.guarantee == AtLeastOnce.name() && r.fault == "spout-crash",
    );
    let be = rows_of(rows, AtLeastOnce, "bolt-exception-before-emit");
    rel(
        "at-least-once: bolt exception before emit → 0 duplicates",
        be.iter().all(|r| r.duplicates == 0),
        pairs(&be, |r| format!("{}→{}", r.injected, r.duplicates)),
        &|r| r.guarantee == AtLeastOnce.name() && r.fault == "bolt-exception-before-emit",
    );
    let ae = rows_of(rows, AtLeastOnce, "bolt-exception-after-emit");
    rel(
        "at-least-once: bolt exception after emit → one duplicate per exception",
        ae.iter().all(|r| r.duplicates == r.injected),
        pairs(&ae, |r| format!("{}→{}", r.injected, r.duplicates)),
        &|r| r.guarantee == AtLeastOnce.name() && r.fault == "bolt-exception-after-emit",
    );
    let restarts: Vec<&RealRow> = alo
        .iter()
        .copied()
        .filter(|r| RESTARTS.iter().any(|k| r.fault == k.name()))
        .collect();
    rel(
        "at-least-once: a worker kill or a server restart loses nothing",
        restarts.iter().all(|r| r.lost == 0),
        pairs(&restarts, |r| format!("{}:{}", r.fault, r.lost)),
        &|r| r.guarantee == AtLeastOnce.name() && RESTARTS.iter().any(|k| r.fault == k.name()),
    );
    let eo: Vec<&RealRow> = rows
        .iter()
        .filter(|r| r.guarantee == ExactlyOnce.name())
        .collect();
    rel(
        "exactly-once: 0 lost and 0 duplicates in every cell",
        eo.iter().all(|r| r.lost == 0 && r.duplicates == 0),
        format!(
            "max lost {}, max duplicates {}",
            eo.iter().map(|r| r.lost).max().unwrap_or(0),
            eo.iter().map(|r| r.duplicates).max().unwrap_or(0)
        ),
        &|r| r.guarantee == ExactlyOnce.name(),
    );
    v
}

/// One line per cell whose measurement differs from its prediction, with the differences; a
/// cell that did not run to completion is not compared (its unprocessed input would count as
/// lost): its line says it was cut or failed.
pub fn differences(rows: &[RealRow]) -> Vec<String> {
    rows.iter()
        .filter(|r| {
            r.status != CellStatus::Done
                || r.lost != r.predicted_lost
                || r.duplicates != r.predicted_duplicates
        })
        .map(|r| {
            let cell = format!("{}/{}/{}", r.guarantee, r.fault, r.requested);
            match &r.status {
                CellStatus::TimedOut => {
                    return format!("{cell}: cut at the time limit, not compared");
                }
                CellStatus::Failed(_) => return format!("{cell}: failed, not compared"),
                CellStatus::Done => {}
            }
            format!(
                "{}/{}/{}: lost {} vs predicted {} ({:+}), duplicates {} vs predicted {} ({:+}) \
                 [{}]",
                r.guarantee,
                r.fault,
                r.requested,
                r.lost,
                r.predicted_lost,
                r.lost as i64 - r.predicted_lost as i64,
                r.duplicates,
                r.predicted_duplicates,
                r.duplicates as i64 - r.predicted_duplicates as i64,
                r.model
            )
        })
        .collect()
}

/// The table, at most 100 columns wide (input size, max spout pending and timeout go in the
/// title; trace hashes in the JSON).
pub fn format_table(rows: &[RealRow]) -> String {
    let header = [
        "guarantee",
        "fault",
        "n",
        "in sink",
        "lost",
        "dup",
        "pred lost",
        "pred dup",
        "secs",
        "",
    ];
    let cells: Vec<[String; 10]> = rows
        .iter()
        .map(|r| {
            [
                r.guarantee.clone(),
                r.fault.clone(),
                r.injected.to_string(),
                r.distinct.to_string(),
                r.lost.to_string(),
                r.duplicates.to_string(),
                r.predicted_lost.to_string(),
                r.predicted_duplicates.to_string(),
                format!("{:.1}", r.elapsed_ms as f64 / 1e3),
                match r.status {
                    CellStatus::Done => String::new(),
                    CellStatus::TimedOut => "CUT".into(),
                    CellStatus::Failed(_) => "FAILED".into(),
                },
            ]
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for c in &cells {
        for (i, s) in c.iter().enumerate() {
            widths[i] = widths[i].max(s.chars().count());
        }
    }
    let mut out = String::new();
    let line = |out: &mut String, items: Vec<&str>| {
        let parts: Vec<String> = items
            .iter()
            .enumerate()
            .map(|(i, s)| {
                if i < 2 || i == 9 {
                    format!("{:<w$}", s, w = widths[i])
                } else {
                    format!("{:>w$}", s, w = widths[i])
                }
            })
            .collect();
        out.push_str(parts.join(" ").trim_end());
        out.push('\n');
    };
    line(&mut out, header.to_vec());
    let total: usize = widths.iter().sum::<usize>() + widths.len() - 1;
    out.push_str(&"-".repeat(total.min(100)));
    out.push('\n');
    for c in &cells {
        line(&mut out, c.iter().map(|s| s.as_str()).collect());
    }
    out
}

/// Draws measured against predicted (lost and duplicates, log scale of value + 1, with the
/// diagonal) into an SVG file.
///
/// # Errors
/// The message for stderr, naming the file, if it cannot be drawn or written (written whole or
/// not at all: [`crate::experiment::save_plot`]).
pub fn plot_svg(rows: &[RealRow], path: &Path) -> Result<(), String> {
    let mut svg = String::new();
    draw_plot(rows, &mut svg).map_err(|e| format!("cannot draw --plot {}: {e}", path.display()))?;
    crate::experiment::save_plot(path, &svg)
}

fn draw_plot(rows: &[RealRow], svg: &mut String) -> Result<(), String> {
    use plotters::prelude::*;
    let root = SVGBackend::with_string(svg, (900, 700)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let max = rows
        .iter()
        .flat_map(|r| {
            [
                r.lost,
                r.duplicates,
                r.predicted_lost,
                r.predicted_duplicates,
            ]
        })
        .max()
        .unwrap_or(0) as f64
        + 1.0;
    let top = max * 10.0;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "real components: measured vs simulator's prediction",
            ("sans-serif", 18),
        )
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((1f64..top).log_scale(), (1f64..top).log_scale())
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("predicted + 1")
        .y_desc("measured + 1")
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .draw()
        .map_err(|e| e.to_string())?;
    chart
        .draw_series(LineSeries::new(
            vec![(1.0, 1.0), (top, top)],
            BLACK.mix(0.4),
        ))
        .map_err(|e| e.to_string())?
        .label("measured = predicted")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLACK.mix(0.4)));
    /// (predicted, measured) of one measure.
    type Pick = fn(&RealRow) -> (u64, u64);
    let series: [(&str, RGBColor, Pick); 2] = [
        ("lost", RGBColor(214, 39, 40), |r| {
            (r.predicted_lost, r.lost)
        }),
        ("duplicates", RGBColor(31, 119, 180), |r| {
            (r.predicted_duplicates, r.duplicates)
        }),
    ];
    for (name, color, pick) in series {
        chart
            .draw_series(rows.iter().map(|r| {
                let (p, m) = pick(r);
                Circle::new((p as f64 + 1.0, m as f64 + 1.0), 4, color.filled())
            }))
            .map_err(|e| e.to_string())?
            .label(name)
            .legend(move |(x, y)| Circle::new((x + 8, y), 4, color.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())?;
    Ok(())
}

/// `acker-sim experiment --real`: runs the cells, prints the table (or `--json`), the relations
/// with `holds` / `FAILS` and the measured-vs-predicted differences, draws `plot`. Exit status 0
/// when every relation holds, 1 otherwise, 2 for a missing server binary or a failed setup, 130
/// when interrupted by SIGINT, 143 by SIGTERM.
///
/// # Errors
/// [`CliError`] for a failed setup or a stdout write error.
pub fn command(o: &RealOptions, json: bool, plot: Option<&Path>) -> Result<ExitCode, CliError> {
    let interrupted = Arc::new(AtomicBool::new(false));
    // Set by SIGTERM only, beside `interrupted`: the exit status names the signal.
    let terminated = Arc::new(AtomicBool::new(false));
    for (sig, flag) in [
        (signal_hook::consts::SIGINT, &interrupted),
        (signal_hook::consts::SIGTERM, &interrupted),
        (signal_hook::consts::SIGTERM, &terminated),
    ] {
        signal_hook::flag::register(sig, flag.clone())
            .map_err(|e| format!("cannot install a signal handler: {e}"))?;
    }
    if o.cells
        .iter()
        .any(|&(g, f, n)| g == Guarantee::AtMostOnce && f == Some(RealFault::AckerCrash) && n > 0)
    {
        acker_runtime::stderr_line!(
            "acker-sim: note: at-most-once runs no acker task, so its acker-crash cells inject \
             nothing (reported with n = 0)"
        );
    }
    let total = o.cells.len();
    let start = Instant::now();
    let rows = match run(o, interrupted, |i, r| {
        acker_runtime::stderr_line!(
            "acker-sim: [{}/{total}] {}/{}/{}: injected {}, lost {} dup {} (predicted {} / {}) \
             in {:.1} s{}",
            i + 1,
            r.guarantee,
            r.fault,
            r.requested,
            r.injected,
            r.lost,
            r.duplicates,
            r.predicted_lost,
            r.predicted_duplicates,
            r.elapsed_ms as f64 / 1e3,
            match &r.status {
                CellStatus::Done => String::new(),
                CellStatus::TimedOut => " (CUT at the time limit)".into(),
                CellStatus::Failed(m) => format!(" (FAILED: {m})"),
            }
        );
    }) {
        Ok(rows) => rows,
        Err(DriverError::Missing(m)) => return Err(m.into()),
        Err(DriverError::Other(m)) => return Err(m.into()),
        Err(DriverError::Interrupted) => {
            let (name, status) = if terminated.load(Ordering::Acquire) {
                ("SIGTERM", 143)
            } else {
                ("SIGINT", 130)
            };
            acker_runtime::stderr_line!(
                "acker-sim: interrupted ({name}); servers and workers stopped"
            );
            return Ok(ExitCode::from(status));
        }
    };
    let relations = relations(&rows);
    if let Some(path) = plot {
        plot_svg(&rows, path)?;
    }
    let mut out = io::stdout().lock();
    if json {
        let v = serde_json::json!({
            "rows": rows,
            "relations": crate::experiment::relations_json(&relations),
        });
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?
        )?;
    } else {
        writeln!(
            out,
            "Reliability experiment on real components (private redis-server and PostgreSQL):\n\
             {} unique sequential numbers per cell, max spout pending {}, message timeout {} s,\n\
             faults spread over the input; pred = the simulator's prediction (seed {})",
            o.tuples,
            o.max_spout_pending,
            o.timeout_ms as f64 / 1e3,
            o.seed
        )?;
        writeln!(out)?;
        write!(out, "{}", format_table(&rows))?;
        writeln!(
            out,
            "pred: the simulator's Redis source model, the whole topology in one worker;\n\
             worker-kill as worker-crash, redis- / postgres-restart as source- / sink-outage"
        )?;
        writeln!(out)?;
        writeln!(
            out,
            "Relations (issue 12, DESIGN.md \"Delivery guarantees\"):"
        )?;
        experiment::write_relations(&mut out, &relations)?;
        let diffs = differences(&rows);
        writeln!(out)?;
        if diffs.is_empty() {
            writeln!(out, "Measured = predicted in every cell.")?;
        } else {
            writeln!(out, "Measured vs predicted (cells that differ):")?;
            for d in diffs {
                writeln!(out, "  {d}")?;
            }
        }
    }
    out.flush()?;
    acker_runtime::stderr_line!(
        "acker-sim: {} real cells in {:.1} s",
        rows.len(),
        start.elapsed().as_secs_f64()
    );
    Ok(experiment::exit_status(&relations))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(g: &str, f: &str, n: u64, lost: u64, dup: u64) -> RealRow {
        RealRow {
            guarantee: g.into(),
            fault: f.into(),
            injected: n,
            input: 1_000_000,
            distinct: 1_000_000 - lost,
            lost,
            duplicates: dup,
            max_spout_pending: 1000,
            predicted_lost: lost,
            predicted_duplicates: dup,
            trace_hash: "0123456789abcdef".into(),
            elapsed_ms: 123_456,
            requested: n,
            status: CellStatus::TimedOut,
            model: "test",
        }
    }

    #[test]
    fn cells_parse_and_bad_cells_are_named() {
        assert_eq!(
            parse_cells("at-least-once/worker-kill/1, exactly-once/none/0").unwrap(),
            vec![
                (Guarantee::AtLeastOnce, Some(RealFault::WorkerKill), 1),
                (Guarantee::ExactlyOnce, None, 0)
            ]
        );
        for (bad, says) in [
            ("at-least-once/worker-kill", "GUARANTEE/FAULT/COUNT"),
            ("sometimes/none/0", "sometimes"),
            ("at-least-once/worker-crash/1", "worker-crash"),
            ("at-least-once/worker-kill/x", "`x`"),
            ("at-least-once/none/2", "count 0"),
            (",", "item 1 of 2 in the comma-separated list `,` is empty"),
            ("at-least-once/none/0,", "item 2 of 2"),
            ("", "no cell"),
        ] {
            let e = parse_cells(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        // The matrices: 3 × (none + 8 faults × counts).
        assert_eq!(cells(true).len(), 27);
        assert_eq!(cells(false).len(), 75);
    }

    #[test]
    fn the_table_fits_in_100_columns_at_a_million_tuples() {
        let rows = vec![
            row(
                "at-least-once",
                "bolt-exception-before-emit",
                5,
                999_999,
                999_999,
            ),
            row("exactly-once", "postgres-restart", 5, 0, 0),
        ];
        let t = format_table(&rows);
        for line in t.lines() {
            assert!(
                line.chars().count() <= 100,
                "{} columns: {line}",
                line.len()
            );
        }
        assert!(t.lines().nth(2).unwrap().ends_with("123.5 CUT"), "{t}");
    }

    #[test]
    fn relations_fail_on_a_loss_at_least_once_and_a_duplicate_exactly_once() {
        let mut ok = row("at-least-once", "worker-kill", 1, 0, 100);
        ok.status = CellStatus::Done;
        let hold = |rows: &[RealRow]| relations(rows).iter().all(|r| r.holds);
        assert!(hold(std::slice::from_ref(&ok)));
        let mut lost = ok.clone();
        lost.lost = 1;
        assert!(!hold(&[lost]));
        let mut eo = ok.clone();
        eo.guarantee = "exactly-once".into();
        assert!(!hold(&[eo.clone()]));
        eo.duplicates = 0;
        assert!(hold(&[eo]));
        // An acker crash: 0 < duplicates ≤ max spout pending × crashes.
        let mut acker = ok.clone();
        acker.fault = "acker-crash".into();
        assert!(hold(std::slice::from_ref(&acker)));
        acker.duplicates = 1001;
        assert!(!hold(std::slice::from_ref(&acker)));
        acker.duplicates = 0;
        assert!(!hold(&[acker]));
        assert_eq!(differences(&[ok]).len(), 0);
    }

    #[test]
    fn a_cut_cell_is_judged_by_no_guarantee_and_compared_with_no_prediction() {
        // As the trial's `--cell-limit 1s`: the cut cell's unprocessed input counted as lost.
        let mut cut = row("exactly-once", "redis-restart", 1, 48_600, 0);
        cut.predicted_lost = 0;
        let mut alo_cut = row("at-least-once", "worker-kill", 1, 1000, 0);
        alo_cut.status = CellStatus::Failed("worker exited".into());
        let mut ok = row("exactly-once", "none", 0, 0, 0);
        ok.status = CellStatus::Done;
        let rel = relations(&[cut.clone(), alo_cut, ok]);
        let get = |text: &str| rel.iter().find(|r| r.text.starts_with(text)).unwrap();
        let all = get("every cell ran to completion");
        assert!(!all.holds);
        assert_eq!(
            all.detail,
            "exactly-once/redis-restart/1: timed out | at-least-once/worker-kill/1: worker exited"
        );
        let eo = get("exactly-once: 0 lost and 0 duplicates");
        assert!(eo.holds);
        assert_eq!(
            eo.detail,
            "max lost 0, max duplicates 0; not judged: exactly-once/redis-restart/1 cut"
        );
        let alo = get("at-least-once never loses");
        assert!(alo.holds);
        assert_eq!(
            alo.detail,
            "max lost 0; not judged: at-least-once/worker-kill/1 failed"
        );
        assert_eq!(rel.iter().filter(|r| !r.holds).count(), 1);
        assert_eq!(
            differences(&[cut]),
            vec!["exactly-once/redis-restart/1: cut at the time limit, not compared"]
        );
    }
}
