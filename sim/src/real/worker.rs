//! The worker process of the real experiment (`acker-sim worker ...`, hidden; started by the
//! driver through the current executable's path): the seed's topology on the runtime's
//! thread-per-core shell, until the stream is drained.
//!
//! - **Spout** `entries`: the runtime's Redis Streams spout ([`RedisStreamSpout`]) on the cell's
//!   stream and group, with one consumer name kept across restarts of the task and of the
//!   process (so a restarted spout or worker first takes its own pending entries back),
//!   `--drain`, `NOACK` reads for at-most-once, at most `max spout pending` trees in flight.
//! - **Bolt** `process`: a [`ThrowingBolt`] that passes `(entry, line)` on, throwing before or
//!   after its emit on the first delivery of each fault offset (bolt-exception cells), or asking
//!   the shell's [`TaskControl`] to restart the spout, acker or this bolt task there (crash
//!   cells).
//! - **Sink** `sink`: [`NumberSink`], which records every output as a row of `out_<tag>(n)`.
//! - One acker task (none for at-most-once).
//!
//! At exit it prints one JSON line on stdout: the faults it injected, the restarts applied and
//! the spout's and sink's counters.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use acker_runtime::bolts::{Throw, ThrowingBolt};
use acker_runtime::connectors::parse_entry_id;
use acker_runtime::connectors::postgres_sink::{self, BatchSink, BatchWriter};
use acker_runtime::connectors::redis_stream::{
    self, RedisSpoutConfig, RedisStreamSpout, SpoutCounters, FLUSH_STREAM,
};
use acker_runtime::shell::{self, ShellOptions, TaskControl};
use acker_runtime::{Config, Grouping, Input, TaskKind, TopologyBuilder};
use clap::Args;

use super::{offsets, RealFault};
use crate::scenario::Guarantee;

/// Bugs the worker can plant, test only: each must make a check of the real experiment's test
/// fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkerBug {
    /// The spout acknowledges entries to the group as it reads them (`NOACK`) under
    /// at-least-once: a kill loses the entries in flight.
    SpoutAcksOnRead,
    /// The exactly-once sink forgets to de-duplicate by entry.
    SinkWithoutDedup,
    /// The processing bolt swallows its exception (emits and acks instead of failing).
    BoltSwallowsException,
}

impl std::str::FromStr for WorkerBug {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "spout-acks-on-read" => Ok(WorkerBug::SpoutAcksOnRead),
            "sink-without-dedup" => Ok(WorkerBug::SinkWithoutDedup),
            "bolt-swallows-exception" => Ok(WorkerBug::BoltSwallowsException),
            _ => Err(format!(
                "unknown planted bug `{s}` (spout-acks-on-read, sink-without-dedup, \
                 bolt-swallows-exception)"
            )),
        }
    }
}

/// `acker-sim worker` options (set by the driver).
#[derive(Args, Clone, Debug)]
pub struct WorkerArgs {
    /// `redis://HOST:PORT/`.
    #[arg(long)]
    pub redis: String,
    /// The stream holding the cell's numbers.
    #[arg(long)]
    pub stream: String,
    /// The consumer group.
    #[arg(long, default_value = "experiment")]
    pub group: String,
    /// The consumer name (kept across restarts).
    #[arg(long, default_value = "worker")]
    pub consumer: String,
    /// `postgresql://...`.
    #[arg(long)]
    pub postgres: String,
    /// The sink tables are `out_<tag>` and `applied_<tag>`.
    #[arg(long)]
    pub tag: String,
    /// at-most-once, at-least-once or exactly-once.
    #[arg(long)]
    pub guarantee: String,
    /// Message timeout, ms.
    #[arg(long, default_value_t = 2000)]
    pub timeout_ms: u64,
    /// Max spout pending (trees in flight).
    #[arg(long, default_value_t = 1000)]
    pub max_spout_pending: usize,
    /// The in-process fault, if any.
    #[arg(long)]
    pub fault: Option<String>,
    /// How many times it fires.
    #[arg(long, default_value_t = 0)]
    pub count: u32,
    /// Numbers in the stream (to place the faults).
    #[arg(long)]
    pub tuples: u64,
    /// The topology seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Core threads of the shell.
    #[arg(long, default_value_t = 2)]
    pub cores: usize,
    /// Test only: plant a bug ([`WorkerBug`]).
    #[arg(long)]
    pub planted_bug: Option<String>,
}

/// Creates the sink tables of `tag` (dropping old ones): `out_<tag>(n bigint)`, one row per
/// output the sink committed, and `applied_<tag>(entry_ms, entry_seq)`, the entries the
/// exactly-once sink applied.
///
/// # Errors
/// The database's error.
pub fn create_tables(client: &mut postgres::Client, tag: &str) -> Result<(), postgres::Error> {
    client.batch_execute(&format!(
        "DROP TABLE IF EXISTS out_{tag}; DROP TABLE IF EXISTS applied_{tag};
         CREATE TABLE out_{tag} (n bigint NOT NULL);
         CREATE TABLE applied_{tag} (entry_ms bigint NOT NULL, entry_seq bigint NOT NULL,
             PRIMARY KEY (entry_ms, entry_seq));"
    ))
}

/// Counters the sink shares with the worker.
#[derive(Debug, Default)]
pub struct NumberSinkCounters {
    /// Transactions committed.
    pub commits: AtomicU64,
    /// Failed commits and connection errors.
    pub errors: AtomicU64,
}

/// The experiment sink's [`BatchWriter`]: `(entry, line)` inputs, `line` a number; one row of
/// `out_<tag>` per output. The sink ([`BatchSink`]) commits a batch at `batch` inputs (a tenth of
/// max spout pending) or at the spout's flush punctuation and acks it only after the commit.
/// Exactly-once: the same statement records each entry in `applied_<tag>` (`ON CONFLICT DO
/// NOTHING`) and inserts the rows of the entries whose record is new, so a replay adds nothing.
/// At-most-once commits what is buffered at cleanup (its entries were acknowledged when read).
pub struct NumberWriter {
    tag: String,
    exactly_once: bool,
    bug: Option<WorkerBug>,
    counters: Arc<NumberSinkCounters>,
}

/// The experiment's sink bolt.
pub type NumberSink = BatchSink<NumberWriter>;

impl BatchWriter for NumberWriter {
    /// `(entry ms, entry seq, number)`; a number that does not parse is -1.
    type Row = (i64, i64, i64);

    fn row(input: &Input) -> Self::Row {
        let v = input.values();
        let (m, s) = v
            .first()
            .and_then(|x| x.as_str())
            .and_then(parse_entry_id)
            .unwrap_or((0, 0));
        let n = v
            .get(1)
            .and_then(|x| x.as_str())
            .and_then(|l| l.trim().parse::<i64>().ok())
            .unwrap_or(-1);
        (m, s, n)
    }

    fn write(
        &mut self,
        client: &mut postgres::Client,
        rows: &[Self::Row],
    ) -> Result<(), postgres::Error> {
        let (mut ms, mut seq, mut n) = (Vec::new(), Vec::new(), Vec::new());
        for &(m, s, x) in rows {
            ms.push(m);
            seq.push(s);
            n.push(x);
        }
        let tag = &self.tag;
        if self.exactly_once && self.bug != Some(WorkerBug::SinkWithoutDedup) {
            client.execute(
                &format!(
                    "WITH input AS (
                        SELECT DISTINCT ON (ms, seq) ms, seq, n
                        FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS t(ms, seq, n)
                        ORDER BY ms, seq),
                     ins AS (
                        INSERT INTO applied_{tag} (entry_ms, entry_seq)
                        SELECT ms, seq FROM input ON CONFLICT DO NOTHING
                        RETURNING entry_ms, entry_seq)
                     INSERT INTO out_{tag} (n)
                     SELECT i.n FROM input i
                     JOIN ins ON i.ms = ins.entry_ms AND i.seq = ins.entry_seq"
                ),
                &[&ms, &seq, &n],
            )?;
        } else {
            client.execute(
                &format!("INSERT INTO out_{tag} (n) SELECT unnest($1::bigint[])"),
                &[&n],
            )?;
        }
        self.counters.commits.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn connection_lost(&mut self) {
        self.counters.errors.fetch_add(1, Ordering::Relaxed);
    }
}

/// Runs the worker; returns the JSON summary line.
///
/// # Errors
/// A message for bad options, an unreachable server, or a failed run.
pub fn run(a: &WorkerArgs) -> Result<String, String> {
    let guarantee: Guarantee = a.guarantee.parse().map_err(|e| format!("{e}"))?;
    let at_most_once = guarantee == Guarantee::AtMostOnce;
    let fault: Option<RealFault> = match a.fault.as_deref() {
        None | Some("none") => None,
        // No acker to crash at at-most-once: nothing is injected (as in the simulator).
        Some(f) if at_most_once && f == RealFault::AckerCrash.name() => None,
        Some(f) => Some(f.parse()?),
    };
    if fault.is_some_and(|f| !f.in_process()) {
        return Err(format!(
            "--fault {}: the driver injects it, not the worker",
            a.fault.as_deref().unwrap_or_default()
        ));
    }
    let bug: Option<WorkerBug> = a.planted_bug.as_deref().map(str::parse).transpose()?;
    if !a.tag.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!("--tag {}: letters, digits and _ only", a.tag));
    }
    let mut con = redis_stream::connect(&a.redis).map_err(|e| e.to_string())?;
    redis_stream::ensure_group(&mut con, &a.stream, &a.group)
        .map_err(|e| format!("cannot create group {} on {}: {e}", a.group, a.stream))?;
    drop(con);
    drop(postgres_sink::connect(&a.postgres).map_err(|e| e.to_string())?);

    let msp = a.max_spout_pending.max(1);
    let mut cfg = RedisSpoutConfig::new(&a.redis, &a.stream, &a.consumer);
    cfg.group = a.group.clone();
    cfg.drain = true;
    cfg.at_most_once = at_most_once || bug == Some(WorkerBug::SpoutAcksOnRead);
    cfg.max_in_flight = msp;
    // Reads and sink commits of a tenth of max spout pending: trees complete in small steps,
    // so the spout stays near max spout pending, saturated, as in the seed's experiment (with
    // batches of max spout pending / 2 the trees in flight swing between half and all of it).
    let batch = (msp / 10).clamp(1, 500);
    cfg.batch = batch;
    cfg.max_retries = 1000;
    cfg.claim_after_ms = 2 * a.timeout_ms.max(1);
    let config = Config {
        num_ackers: if at_most_once { 0 } else { 1 },
        message_timeout_ns: a.timeout_ms.max(1) * 1_000_000,
        // One slot more than the spout fills, so `next_tuple` keeps being called and its flush
        // punctuation keeps reaching the sink (see `RedisSpoutConfig::max_in_flight`).
        max_spout_pending: Some(msp + 1),
        tick_interval_ns: 100_000_000,
        seed: a.seed,
        ..Config::default()
    };

    let control = TaskControl::new();
    let stop = Arc::new(AtomicBool::new(false));
    let spout_counters = Arc::new(SpoutCounters::default());
    let sink_counters = Arc::new(NumberSinkCounters::default());
    let injected = Arc::new(AtomicU64::new(0));
    // Offsets that have fired, shared by every incarnation of the bolt.
    let fired: Arc<Mutex<BTreeSet<i64>>> = Arc::new(Mutex::new(BTreeSet::new()));
    let targets: BTreeSet<i64> = offsets(a.tuples, a.count)
        .into_iter()
        .map(|o| o as i64)
        .collect();
    // Task ids: spout 0, process 1, sink 2, acker 3 (components in declaration order, then
    // the ackers); checked against the plan below.
    let (spout_task, bolt_task, acker_task) = (0u16, 1u16, 3u16);

    let mut b = TopologyBuilder::new();
    {
        let (cfg, counters, stop) = (cfg.clone(), spout_counters.clone(), stop.clone());
        b.set_spout(
            "entries",
            move || RedisStreamSpout::new(cfg.clone(), counters.clone(), stop.clone()),
            1,
        )
        .output_fields(&["entry", "line"])
        .output_stream(FLUSH_STREAM, &["flush"]);
    }
    {
        let (control, fired, injected) = (control.clone(), fired.clone(), injected.clone());
        b.set_basic_bolt(
            "process",
            move || {
                let (control, fired, injected, targets) = (
                    control.clone(),
                    fired.clone(),
                    injected.clone(),
                    targets.clone(),
                );
                ThrowingBolt::new(move |i: &Input| {
                    let Some(f) = fault else { return Throw::No };
                    let n = i
                        .values()
                        .get(1)
                        .and_then(|x| x.as_str())
                        .and_then(|l| l.trim().parse::<i64>().ok());
                    let Some(n) = n.filter(|n| targets.contains(n)) else {
                        return Throw::No;
                    };
                    if !fired.lock().unwrap_or_else(|p| p.into_inner()).insert(n) {
                        return Throw::No;
                    }
                    injected.fetch_add(1, Ordering::AcqRel);
                    let swallow = bug == Some(WorkerBug::BoltSwallowsException);
                    let restart = |t: u16| {
                        // The task ids exist in this plan (checked before the run).
                        let _ = control.restart(t);
                    };
                    match f {
                        RealFault::BoltExceptionBeforeEmit if !swallow => Throw::BeforeEmit,
                        RealFault::BoltExceptionAfterEmit if !swallow => Throw::AfterEmit,
                        RealFault::SpoutCrash => {
                            restart(spout_task);
                            Throw::No
                        }
                        RealFault::AckerCrash => {
                            restart(acker_task);
                            Throw::No
                        }
                        RealFault::BoltCrash => {
                            restart(bolt_task);
                            Throw::No
                        }
                        _ => Throw::No,
                    }
                })
            },
            1,
        )
        .shuffle_grouping("entries")
        .output_fields(&["entry", "line"]);
    }
    {
        let (url, tag, counters) = (a.postgres.clone(), a.tag.clone(), sink_counters.clone());
        let exactly_once = guarantee == Guarantee::ExactlyOnce;
        b.set_bolt(
            "sink",
            move || {
                let sink = NumberSink::with_writer(
                    &url,
                    batch,
                    NumberWriter {
                        tag: tag.clone(),
                        exactly_once,
                        bug,
                        counters: counters.clone(),
                    },
                );
                if at_most_once {
                    sink.commit_buffered_on_cleanup()
                } else {
                    sink
                }
            },
            1,
        )
        .shuffle_grouping("process")
        .grouping("entries", FLUSH_STREAM, Grouping::All);
    }
    let topology = b.build().map_err(|e| e.to_string())?;
    let plan = topology.plan(&config).map_err(|e| e.to_string())?;
    let kind = |t: u16| plan.tasks().get(t as usize).map(|i| i.kind);
    if kind(spout_task) != Some(TaskKind::Spout)
        || kind(bolt_task) != Some(TaskKind::Bolt)
        || (!at_most_once && kind(acker_task) != Some(TaskKind::Acker))
    {
        return Err("unexpected task layout of the experiment's topology".into());
    }
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())
            .map_err(|e| format!("cannot install a signal handler: {e}"))?;
    }
    let options = ShellOptions {
        cores: Some(a.cores.max(1)),
        pin_threads: false,
        idle_spin_turns: 16,
        idle_yield_turns: 64,
        ..ShellOptions::default()
    };
    let report = shell::run_with_control(&plan, &options, &control).map_err(|e| e.to_string())?;
    let load = |x: &AtomicU64| x.load(Ordering::Relaxed);
    let sc = &spout_counters;
    Ok(serde_json::json!({
        "injected": load(&injected),
        "restarts": report.restarts,
        "read": load(&sc.read),
        "acked": load(&sc.acked),
        "replays": load(&sc.replays),
        "claimed": load(&sc.claimed),
        "dead_lettered": load(&sc.dead_lettered),
        "redis_errors": load(&sc.redis_errors),
        "commits": load(&sink_counters.commits),
        "sink_errors": load(&sink_counters.errors),
        "timed_out": report.spout_totals().timed_out,
        "elapsed_ms": report.elapsed.as_millis() as u64,
    })
    .to_string())
}
