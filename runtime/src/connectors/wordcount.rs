//! The word count on real components, behind `acker-run wordcount --redis ... --postgres ...`,
//! and the `acker-run load` and `acker-run counts` commands.
//!
//! ```text
//! entries (RedisStreamSpout) --shuffle--> split --fields("word")--> sink (PostgresSinkBolt)
//!         \------------------------ flush stream, all grouping ------/
//! ```
//!
//! A worker process is one thread-per-core shell with its own ackers; several workers on the
//! same stream and group share the entries (the broker spreads them and hands a dead worker's
//! pending entries to the others), and PostgreSQL holds the shared state. No tuple crosses
//! between worker processes.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::Value as RV;

use super::parse_entry_id;
use super::postgres_sink::{self, PostgresSinkBolt, SinkCounters, SinkMode};
use super::redis_stream::{
    self, RedisSpoutConfig, RedisStreamSpout, SpoutCounters, FLUSH_STREAM, LINE_FIELD,
};
use crate::cli::CliError;
use crate::shell::{self, ShellOptions};
use crate::{
    task_seed, values, BasicBolt, BasicOutputCollector, Config, FailedException, Grouping, Input,
    TopologyBuilder, TopologyContext,
};

/// The most sink tasks `--sink-tasks` takes: each holds a PostgreSQL connection (PostgreSQL's
/// default `max_connections` is 100, shared by every worker).
pub const MAX_SINK_TASKS: u64 = 64;

/// The delivery guarantee of a connector run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Guarantee {
    /// No ackers (Storm: no acker tasks, the tree is never tracked); entries are acknowledged
    /// to the group as they are read (`NOACK`). `acker-run` refuses it with a nonzero
    /// `--ackers`.
    AtMostOnce,
    /// Ackers; plain accumulation in the sink (replays may count twice).
    AtLeastOnce,
    /// Ackers; the sink records each applied contribution and applies it once.
    ExactlyOnce,
}

impl Guarantee {
    /// The name the command line takes and the summary prints: `at-most-once`, `at-least-once`,
    /// `exactly-once`.
    pub fn name(self) -> &'static str {
        match self {
            Guarantee::AtMostOnce => "at-most-once",
            Guarantee::AtLeastOnce => "at-least-once",
            Guarantee::ExactlyOnce => "exactly-once",
        }
    }
}

/// The connector options of `acker-run wordcount`. Without `--redis` and `--postgres` the word
/// count runs on its built-in input or a file, in memory, as before.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ConnectorArgs {
    /// Read lines from this Redis (`redis://HOST:PORT/`), stream `--stream`, field `line`.
    #[arg(long, value_name = "URL")]
    pub redis: Option<String>,
    /// The Redis stream key (with --redis). An entry whose `line` is longer than 1,048,576 bytes
    /// (`redis_stream::MAX_ENTRY_BYTES`) is dead-lettered as "entry too long". A stream that does
    /// not exist is created empty with its group, with a warning on stderr (a misspelled name
    /// reads nothing: with --drain the run ends at once, exit status 0).
    #[arg(long, value_name = "NAME")]
    pub stream: Option<String>,
    /// Write counts to this PostgreSQL (`postgresql://USER@HOST:PORT/DB`), table `word_counts`.
    #[arg(long, value_name = "URL")]
    pub postgres: Option<String>,
    /// Delivery guarantee (default exactly-once when a sink is given).
    #[arg(long, value_enum)]
    pub guarantee: Option<Guarantee>,
    /// Consumer group.
    #[arg(long, default_value = "acker-wordcount")]
    pub group: String,
    /// Consumer name (default: host name and process id). Reuse it when restarting a worker to
    /// take its pending entries back at once.
    #[arg(long)]
    pub consumer: Option<String>,
    /// Deliveries past the first before an entry goes to the dead-letter stream `<stream>:dead`.
    #[arg(long, default_value_t = 5)]
    pub max_retries: u64,
    /// Claim other consumers' entries idle this long, ms (default and least: 2 x the message
    /// timeout, --timeout-secs x 2000: a tree times out 1 to 2 x the timeout after its emit, so
    /// below that workers take entries other live workers still have in flight, and each such
    /// claim counts as a delivery toward --max-retries. With --timeout-secs 0, timeouts off,
    /// any value is taken, default 60000).
    #[arg(long)]
    pub claim_after_ms: Option<u64>,
    /// Delay before re-emitting a failed entry, ms; it doubles with each further fail of the
    /// entry, up to --retry-max-ms (Storm's KafkaSpout retries with exponential backoff). The
    /// retry count stays the server's delivery count (--max-retries); meanwhile other entries
    /// keep flowing.
    #[arg(long, default_value_t = redis_stream::DEFAULT_RETRY_INITIAL_MS)]
    pub retry_initial_ms: u64,
    /// Longest delay before re-emitting a failed entry, ms (at least --retry-initial-ms).
    #[arg(long, default_value_t = redis_stream::DEFAULT_RETRY_MAX_MS)]
    pub retry_max_ms: u64,
    /// Exit 0 once the stream has no new entry and the group nothing pending (batch runs, tests).
    #[arg(long)]
    pub drain: bool,
    /// Entries per XREADGROUP and ids per XACK (1 to 100000).
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub read_batch: u64,
    /// Inputs per sink transaction (1 to 100000); each sink task holds at most 16 x this many unacked inputs (MAX_HELD_BATCHES), then waits for its writer or fails the oldest.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub sink_batch: u64,
    /// PostgreSQL sink tasks in this worker (1 to 64, each holds one PostgreSQL connection:
    /// the worker refuses to start, exit 2, when the server has fewer free, counting one more
    /// for the exactly-once prune; the split bolt keeps one task per --cores). Default 1, whatever --cores: exactly-once's
    /// sink tasks contend on the entry records (every entry's words reach each sink task, so
    /// each task's transaction upserts the same `word_count_applied_entries` rows and waits
    /// for the other's commit: 2 tasks ran at half the rate of 1), and at-least-once measured
    /// no gain from a second task on 2 cores (benches/RESULTS.md). To scale out, start more
    /// workers.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=MAX_SINK_TASKS))]
    pub sink_tasks: Option<u64>,
    /// Seconds between progress lines on stderr (0: none). A line's rate is the entries settled
    /// (acked or dead-lettered; at-most-once: read) over the last interval, so it reads 0 while
    /// a server is down; the summary's rate is over the whole run.
    #[arg(long, default_value_t = 5)]
    pub progress_secs: u64,
    /// Fraction of entries, in [0, 1], that the split bolt treats as poison: it fails them on
    /// every delivery, so they end in the dead-letter stream after `--max-retries` (a fault to
    /// try that path with; 0, the default, is none). Which entries: a uniform draw fixed by the
    /// topology seed (`--seed`) and the entry id.
    #[arg(long, default_value_t = 0.0)]
    pub poison_rate: f64,
}

impl ConnectorArgs {
    /// Whether a connector option was given (then the run needs `--redis`, `--stream` and
    /// `--postgres`).
    pub fn is_active(&self) -> bool {
        self.redis.is_some() || self.postgres.is_some() || self.stream.is_some()
    }
}

/// The `split` bolt of the connector word count: `(entry, line)` → one `(word, entry, pos)` per
/// whitespace-separated word, `pos` its 0-based position in the line. With a poison rate, it
/// fails the entries [`EntrySplitBolt::is_poison`] picks, on every delivery.
#[derive(Clone, Copy, Debug, Default)]
pub struct EntrySplitBolt {
    poison_rate: f64,
    topology_seed: u64,
}

impl EntrySplitBolt {
    /// A split bolt failing a fraction `poison_rate` (in [0, 1]) of the entries on every
    /// delivery (0: none).
    pub fn new(poison_rate: f64) -> Self {
        Self {
            poison_rate,
            topology_seed: 0,
        }
    }

    /// Whether `entry` (an entry id `<ms>-<seq>`) is poison for a topology seed and rate: a
    /// uniform draw in `[0, 1)` from the seed and the id's two numbers, below the rate. The same
    /// on every delivery and in every worker process of the same seed.
    pub fn is_poison(topology_seed: u64, rate: f64, entry: &str) -> bool {
        if rate <= 0.0 {
            return false;
        }
        let (ms, seq) = super::parse_entry_id(entry).unwrap_or((0, 0));
        let h = task_seed(topology_seed ^ 0x9015_0be7_0000_0000, 0) ^ ms as u64;
        let h = task_seed(h, 1) ^ seq as u64;
        let h = task_seed(h, 2);
        ((h >> 11) as f64 / (1u64 << 53) as f64) < rate
    }
}

impl BasicBolt for EntrySplitBolt {
    fn prepare(&mut self, context: &TopologyContext) {
        self.topology_seed = context.topology_seed;
    }

    fn execute(
        &mut self,
        input: &Input,
        c: &mut BasicOutputCollector<'_, '_>,
    ) -> Result<(), FailedException> {
        let v = input.values();
        let (Some(entry), Some(line)) = (
            v.first().and_then(|x| x.as_str()),
            v.get(1).and_then(|x| x.as_str()),
        ) else {
            return Err(FailedException::new("expected (entry, line)"));
        };
        if Self::is_poison(self.topology_seed, self.poison_rate, entry) {
            return Err(FailedException::new("poison entry (--poison-rate)"));
        }
        for (pos, w) in line.split_whitespace().enumerate() {
            c.emit(values![w, entry, pos as i64])
                .map_err(|e| FailedException::new(e.to_string()))?;
        }
        Ok(())
    }
}

/// `host-pid`: the default consumer name.
pub fn default_consumer() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_string());
    format!("{host}-{}", std::process::id())
}

/// The bound below which exactly-once records of `stream` may be deleted: the group's oldest
/// pending entry, or just past its last-delivered id when nothing is pending (read in one
/// `MULTI`). `None` when the group does not exist or on error.
pub fn prune_bound(con: &mut redis::Connection, stream: &str, group: &str) -> Option<(i64, i64)> {
    let (groups, pending): (RV, RV) = redis::pipe()
        .atomic()
        .cmd("XINFO")
        .arg("GROUPS")
        .arg(stream)
        .cmd("XPENDING")
        .arg(stream)
        .arg(group)
        .query(con)
        .ok()?;
    let text = |v: &RV| match v {
        RV::BulkString(b) => String::from_utf8(b.clone()).ok(),
        RV::SimpleString(s) => Some(s.clone()),
        RV::Int(i) => Some(i.to_string()),
        _ => None,
    };
    let RV::Array(groups) = groups else {
        return None;
    };
    let last = groups.iter().find_map(|g| {
        let RV::Array(kv) = g else { return None };
        let field = |name: &str| {
            kv.chunks_exact(2)
                .find(|c| text(&c[0]).as_deref() == Some(name))
                .and_then(|c| text(&c[1]))
        };
        (field("name").as_deref() == Some(group))
            .then(|| field("last-delivered-id"))
            .flatten()
    })?;
    let (ms, seq) = parse_entry_id(&last)?;
    if let RV::Array(p) = &pending {
        let count = p.first().and_then(text).and_then(|c| c.parse::<i64>().ok());
        if count.unwrap_or(0) > 0 {
            return p.get(1).and_then(text).as_deref().and_then(parse_entry_id);
        }
    }
    Some((ms, seq.checked_add(1)?))
}

/// The connector spout's trees in flight and the topology's max spout pending, from
/// `--max-spout-pending` (`None`: not given) and `--read-batch`: `(N, N + 1)` for a given `N`,
/// `(4 x read_batch, 4 x read_batch + 1)` by default (2000 and 2001 at the default batch of
/// 500). Whole read batches stay ahead of the sinks' commits while what a stop hands back or a
/// crash leaves pending stays a few batches; the spout keeps the one extra slot free, so
/// `next_tuple` keeps being called and its flush punctuation keeps reaching the sinks (see
/// [`RedisSpoutConfig::max_in_flight`]). The built-in word count's default is
/// [`crate::DEFAULT_PENDING_CAPACITY`] instead.
pub fn spout_pending(max_spout_pending: Option<usize>, read_batch: u64) -> (usize, usize) {
    let in_flight = max_spout_pending
        .unwrap_or((read_batch as usize).saturating_mul(4))
        .max(1);
    (in_flight, in_flight.saturating_add(1))
}

/// Longest one prune of the exactly-once records may run, ms (its `statement_timeout`): a
/// session locking `word_count_applied_entries` must not hold the progress thread, nor the
/// final prune of a stopping worker. A prune cut short deletes nothing; the next one (this
/// worker's in 5 s, or any worker's) deletes those records.
const PRUNE_STATEMENT_MS: u64 = 1_000;

/// `--claim-after-ms` when it is left out and timeouts are off (`--timeout-secs 0`), ms: 2 x
/// Storm's default message timeout of 30 s. No tree times out then, so no value is safe from
/// claiming an entry a live worker still has in flight; this keeps the timeouts-on default.
pub const DEFAULT_CLAIM_AFTER_MS_WITHOUT_TIMEOUTS: u64 = 60_000;

/// Deletes the exactly-once records no consumer can need again ([`prune_bound`]); returns the
/// rows deleted, `None` on any error (the next prune tries again).
fn prune(redis_url: &str, pg_url: &str, stream: &str, group: &str) -> Option<u64> {
    let mut con = redis_stream::connect(redis_url).ok()?;
    let bound = prune_bound(&mut con, stream, group)?;
    let mut client = postgres_sink::connect(pg_url).ok()?;
    client
        .batch_execute(&format!("SET statement_timeout = {PRUNE_STATEMENT_MS}"))
        .ok()?;
    postgres_sink::prune_applied(&mut client, stream, bound).ok()
}

/// What a connector worker says on stderr at its first SIGINT or SIGTERM (`signal`): that it
/// is stopping, how long it may take and why, and that a second signal exits at once.
/// `timeout_secs` is the message timeout T (`None`: timeouts off, so nothing bounds the wait for
/// the trees in flight). The bound is the README's: the trees in flight end (commit, or time out
/// and are failed) within 2T of the last read, then the hand-back, the sink's bounded wait for
/// its writers (`postgres_sink::STOP_WRITER_MS` + `STOP_CANCEL_MS`) and the final prune take
/// about 10 s at most (measured: 2T + 7 s with both tables locked, 2T + 9 s bound with Redis
/// frozen).
fn stopping_notice(signal: &str, timeout_secs: Option<u64>) -> String {
    let wait = match timeout_secs {
        Some(t) => format!(
            "it waits up to {} s (2 x --timeout-secs) for the entries in flight to commit or \
             time out, so that only committed entries are acked, then up to about 10 s to hand \
             the unfinished ones back to Redis, stop its PostgreSQL writers and prune: about {} \
             s at most",
            2 * t,
            2 * t + 10
        ),
        None => "it waits for the entries in flight to commit, so that only committed entries \
                 are acked, with no bound (message timeouts are off, --timeout-secs 0: a locked \
                 table holds it), then up to about 10 s to hand the unfinished ones back to \
                 Redis, stop its PostgreSQL writers and prune"
            .to_string(),
    };
    format!(
        "acker-run: {signal}: stopping: reading no more entries; {wait}; press Ctrl-C again (a \
         second SIGINT or SIGTERM) to exit at once"
    )
}

/// What a connector worker says on stderr at a second SIGINT or SIGTERM (`signal`), as it exits
/// at once with `status` (130, 143) without finishing its stop: what that means for the data
/// under `guarantee`. The entries read and not acked stay pending in the consumer group under
/// this worker's consumer name with their idle time (nothing is handed back): a worker started
/// with the same `--consumer` takes its own pending entries first, any other claims them after
/// `claim_after_ms` (`redis_stream`'s **Start**). A transaction cut short rolls back (its
/// connection closes); under exactly-once the records of a committed one make a second delivery
/// skip what it applied, and the prunes keep the records of pending entries ([`prune_bound`]).
fn forced_exit_notice(
    signal: &str,
    status: i32,
    guarantee: Guarantee,
    claim_after_ms: u64,
) -> String {
    let pending = format!(
        "the entries read and not acked stay pending in the Redis consumer group and are \
         delivered again (each delivery counts toward --max-retries): at once to a worker \
         started with the same --consumer, to any other after --claim-after-ms \
         ({claim_after_ms} ms)"
    );
    let data = match guarantee {
        Guarantee::ExactlyOnce => format!(
            "{pending}; counts stay exact (exactly-once: a transaction cut short rolls back, and \
             the records of committed ones make the next delivery skip what they applied)"
        ),
        Guarantee::AtLeastOnce => format!(
            "{pending}; words of entries whose commit went through but whose ack was not sent \
             yet are counted again (at-least-once)"
        ),
        Guarantee::AtMostOnce => "words read and not committed yet are lost (at-most-once: \
                                  entries are acknowledged as they are read)"
            .to_string(),
    };
    format!("acker-run: second {signal}: exiting at once (exit status {status}): {data}")
}

/// Installs a connector worker's SIGINT and SIGTERM handling. The first of either signal sets
/// `stop` (the worker's clean stop) and writes the first line `notices(signal, name)` returns to
/// stderr; any later one writes the second line and ends the process at once (`_exit`, no
/// summary) with exit status 128 + its number, 130 or 143, as a shell reports a process ended by
/// it. Before, a second Ctrl-C was ignored and only SIGKILL ended a stop a locked table held
/// (new-user trial: 37 s, nothing said meanwhile). The signals are taken by a thread of their own
/// (`signal_hook::iterator`), which prints and exits outside any signal handler: no `unsafe`.
fn install_stop_handlers(
    stop: &Arc<AtomicBool>,
    notices: impl Fn(i32, &str) -> (String, String),
) -> Result<(), String> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let lines: Vec<(i32, String, String)> = [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM")]
        .into_iter()
        .map(|(sig, name)| {
            // Each line whole, newline included, for one write: `writeln!` on stderr may write
            // it in pieces, and a reader (a test, a supervisor) could see half a line.
            let (first, second) = notices(sig, name);
            (sig, first + "\n", second + "\n")
        })
        .collect();
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])
        .map_err(|e| format!("cannot install a signal handler: {e}"))?;
    let stop = stop.clone();
    std::thread::Builder::new()
        .name("acker-run signals".to_string())
        .spawn(move || {
            let mut seen = 0usize;
            for sig in signals.forever() {
                let Some((_, first, second)) = lines.iter().find(|l| l.0 == sig) else {
                    continue;
                };
                seen += 1;
                if seen == 1 {
                    stop.store(true, Ordering::SeqCst);
                    let _ = std::io::stderr().write_all(first.as_bytes());
                } else {
                    let _ = std::io::stderr().write_all(second.as_bytes());
                    signal_hook::low_level::exit(128 + sig);
                }
            }
        })
        .map_err(|e| format!("cannot start the signal thread: {e}"))?;
    Ok(())
}

/// Entries this worker settled, for its rate: acked or dead-lettered (an entry whose lines were
/// all malformed or poison is done with too, and a run of only those read 0 entries/s when the
/// rate counted acked entries only: new-user trial); under at-most-once every entry read (it is
/// acknowledged as it is read).
fn settled(guarantee: Guarantee, sc: &SpoutCounters) -> u64 {
    let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    if guarantee == Guarantee::AtMostOnce {
        load(&sc.read)
    } else {
        load(&sc.acked) + load(&sc.dead_lettered)
    }
}

/// The rate of a progress line: `settled` entries over `interval` (the time since the previous
/// line), entries/s. Over the last interval, not since the start: during an outage it reads 0
/// at once instead of falling slowly (new-user trial); the summary keeps the whole-run rate.
fn interval_rate(settled: u64, interval: Duration) -> f64 {
    settled as f64 / interval.as_secs_f64().max(1e-9)
}

/// What a run lost: `(entries, words)`. Under at-most-once an entry is acknowledged to the group
/// as it is read, so a tree that fails after that is not replayed (Storm without ackers: the
/// spout acks each tuple as it emits it): `entries` counts the entries the split bolt failed or
/// dropped (a poison entry, `--poison-rate`), whose words are all missing; `words` counts the
/// word tuples the sink failed (PostgreSQL down past its held-batch bound) or could not commit
/// when the topology shut down (`SinkCounters::uncommitted_on_cleanup`), each one count
/// missing. With ackers both are 0: a failed tree is replayed or dead-lettered (counted in
/// `dead_lettered`). Malformed entries are dead-lettered, not lost, under every guarantee.
fn lost(guarantee: Guarantee, report: &shell::RunReport, sink: &SinkCounters) -> (u64, u64) {
    if guarantee != Guarantee::AtMostOnce {
        return (0, 0);
    }
    let failed = |name: &str| report.components.get(name).map_or(0, |c| c.failed);
    (
        failed("split"),
        failed("sink") + sink.uncommitted_on_cleanup.load(Ordering::Relaxed),
    )
}

/// The error for a worker that could not look up or create its consumer group on `stream` at
/// start (`EXISTS`/`XLEN`, `XINFO GROUPS`, then `XGROUP CREATE` only for a missing group:
/// [`redis_stream::create_group`]). A timeout says Redis stopped answering (it answered the
/// start-up PING, so it is Redis: frozen with SIGSTOP or overloaded) instead of the socket's raw
/// "Resource temporarily unavailable (os error 11)", and it does not claim the worker was
/// creating the group (new-user trial: Redis frozen a few ms after the worker's PING, the group
/// existing). An error reply (e.g. `OOM` at `maxmemory` with `noeviction`, where the group
/// would have to be created) comes with what to fix, as `acker-run load`'s refusals do.
pub fn group_start_error(
    e: &redis::RedisError,
    stream: &str,
    group: &str,
    redis_url: &str,
) -> String {
    let url = super::redact_password(redis_url);
    let reason = redis_stream::redis_reason(e);
    if e.is_timeout() {
        format!(
            "Redis at {url} stopped answering while the worker looked up consumer group \
             {group} on {stream} ({reason}): it answered the start-up PING, so it may be stopped \
             (SIGSTOP) or overloaded; start the worker again once it answers"
        )
    } else if redis_stream::is_error_reply(e) {
        format!(
            "Redis at {url} refused to look up or create consumer group {group} on {stream}: \
             {reason}; {} before starting the worker again (a worker whose group exists starts without \
             writing)",
            refusal_fix(&reason, stream)
        )
    } else {
        format!("cannot look up or create consumer group {group} on {stream} at {url}: {reason}")
    }
}

/// The warning for a stream key that did not exist before the worker created it, empty, with
/// its consumer group (`MKSTREAM`): a misspelled `--stream` otherwise reads nothing without a
/// word. Not an error: a worker may start before the loader.
pub fn created_stream_warning(stream: &str, redis_url: &str, drain: bool) -> String {
    format!(
        "acker-run: warning: stream {stream:?} did not exist at {}: created it empty (with its \
         consumer group); {}. Check --stream if you meant an existing stream (load one with \
         `acker-run load --input FILE --redis URL --stream NAME`)",
        super::redact_password(redis_url),
        if drain {
            "with --drain this run will end at once with nothing read"
        } else {
            "the worker waits for entries to be added"
        }
    )
}

/// The warning for a run that created its consumer group on a stream holding entries, or
/// started on one no consumer had read from yet (another worker started with it had just
/// created it: [`redis_stream::GroupStart::group_fresh`]), and then skipped words already
/// counted (`duplicates` > 0), `None` otherwise. A new group reads the
/// stream from its first entry ([`redis_stream::create_group`]), but the exactly-once records
/// are keyed by stream entry, not by group: entries another group (or an earlier run) counted
/// into the same database are skipped, so a new group on a stream another group has read
/// counts nothing (new-user trial: `--group other` ended with `words_applied` 0 and no word).
/// `applied` and `duplicates` are the run's words applied and skipped; `counted_before` whether
/// the database held records of the stream before the run
/// ([`postgres_sink::stream_counted_before`]): without them the skipped words are the run's
/// own replays (a tree timed out after its words were committed) and nothing is warned.
pub fn new_group_warning(
    start: &redis_stream::GroupStart,
    counted_before: bool,
    stream: &str,
    group: &str,
    pg_url: &str,
    applied: u64,
    duplicates: u64,
) -> Option<String> {
    if !start.group_fresh || !counted_before || start.entries == 0 || duplicates == 0 {
        return None;
    }
    // Any worker that starts on a new group says it, not only the one that created it: one
    // started at the same time found it created, with no consumer yet (new-user trial).
    let how = if start.group_created {
        "this run created"
    } else {
        "this run started on a new (no consumer had read from it yet: another worker had just \
         created it)"
    };
    let what = if applied == 0 {
        "so this run counted nothing".to_string()
    } else {
        format!("so this run counted only the other {applied} words")
    };
    Some(format!(
        "acker-run: warning: {how} consumer group {group:?} on stream {stream:?}, \
         which held {} entries; the group read them from the first entry, but {duplicates} of \
         their words were counted in word_counts at {} before (by another group or an earlier \
         run) and were skipped, {what}: exactly-once counts each stream entry once per \
         database, whatever the group. To count the stream again from the start, run with \
         --postgres naming another database (an empty one)",
        start.entries,
        super::redact_password(pg_url)
    ))
}

/// The refusal of a worker whose sink needs more PostgreSQL connections than the server has
/// free ([`postgres_sink::connection_room`]): `sink_tasks` (one each) and, with `prune`
/// (exactly-once), one more at a time for pruning the records. `None` when they fit. A worker
/// that started anyway would have some sink tasks refused (`FATAL: sorry, too many clients
/// already`) for as long as the others hold their connections (new-user trial: two workers
/// with `--sink-tasks 64` against `max_connections` 100).
pub fn too_few_connections(
    pg_url: &str,
    room: &postgres_sink::ConnectionRoom,
    sink_tasks: usize,
    prune: bool,
) -> Option<String> {
    let need = sink_tasks as i64 + i64::from(prune);
    let free = room.free();
    if free >= need {
        return None;
    }
    let reserved = if room.reserved > 0 {
        format!(", {} reserved for superusers", room.reserved)
    } else {
        String::new()
    };
    Some(format!(
        "PostgreSQL at {} has {free} free connections (max_connections {}{reserved}, {} in use by \
         other clients); this worker needs {need} (--sink-tasks {sink_tasks}{}): lower \
         --sink-tasks or raise max_connections (or stop other clients); nothing was read",
        super::redact_password(pg_url),
        room.max_connections,
        room.in_use,
        if prune {
            " + 1 for pruning the exactly-once records"
        } else {
            ""
        }
    ))
}

/// Runs the connector word count until stopped (SIGINT/SIGTERM) or, with `--drain`, until the
/// stream is drained; prints a summary (JSON with `json`). The first SIGINT or SIGTERM starts a
/// clean stop and says so on stderr; a second one ends the process at once with exit status 130
/// or 143 and no summary (`install_stop_handlers`).
///
/// `config` and `shell` come from the run options; the guarantee sets the ackers (0 for
/// at-most-once) and the message timeout sets the default claim time.
///
/// # Errors
/// [`CliError::Usage`] for missing or conflicting options, values out of range and a URL that
/// does not parse (before any connection attempt: [`redis_stream::check_url`],
/// [`postgres_sink::check_url`]); [`CliError::Run`] for an unreachable Redis or PostgreSQL
/// (naming the address) or a failed run; [`CliError::Stdout`] when the summary cannot be
/// written.
pub fn run(
    args: &ConnectorArgs,
    mut config: Config,
    shell_options: ShellOptions,
    parallelism: usize,
    json: bool,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let (Some(redis_url), Some(stream), Some(pg_url)) = (&args.redis, &args.stream, &args.postgres)
    else {
        return Err(CliError::Usage(
            "--redis URL, --stream NAME and --postgres URL go together".to_string(),
        ));
    };
    // A URL that does not parse is a bad argument, reported before any connection attempt.
    redis_stream::check_url(redis_url)?;
    postgres_sink::check_url(pg_url)?;
    // Redis takes an empty key or group name, but a run on one reads nothing a user meant.
    for (option, name) in [
        ("--stream", Some(stream.as_str())),
        ("--group", Some(args.group.as_str())),
        ("--consumer", args.consumer.as_deref()),
    ] {
        if name == Some("") {
            return Err(CliError::Usage(format!("{option} must not be empty")));
        }
    }
    if args.retry_max_ms < args.retry_initial_ms {
        return Err(CliError::Usage(format!(
            "--retry-max-ms {} is below --retry-initial-ms {}: the longest delay must be at \
             least the first",
            args.retry_max_ms, args.retry_initial_ms
        )));
    }
    let timeout_ms = config.message_timeout_ns / 1_000_000;
    // A tree times out between T and 2T after its emit (or last reset), so an entry is in
    // flight in a live worker for up to 2T: the claim time must be at least 2T. New-user
    // trials: with --claim-after-ms 1 the workers took each other's (and their own) entries
    // in flight and 337 healthy entries were dead-lettered; with --claim-after-ms T (2000,
    // --timeout-secs 2) two live workers still claimed 597 and 500 of each other's entries.
    // With timeouts off no tree ever times out, so no claim time is safe from that and none
    // is refused (the default is then 60 s, 2 x Storm's default timeout).
    let claim_floor_ms = if config.enable_message_timeouts {
        2 * timeout_ms
    } else {
        0
    };
    if let Some(ms) = args.claim_after_ms.filter(|&ms| ms < claim_floor_ms) {
        return Err(CliError::Usage(format!(
            "--claim-after-ms {ms} is below 2 x the message timeout ({claim_floor_ms} ms, \
             --timeout-secs {}): a tree times out between 1 and 2 x the timeout after its \
             emit, so workers would take entries other live workers still have in flight, and \
             each claim counts as a delivery toward --max-retries; give at least \
             {claim_floor_ms} (the default)",
            timeout_ms / 1000
        )));
    }
    if let Some(ms) = args.claim_after_ms.filter(|&ms| ms > i64::MAX as u64) {
        // XAUTOCLAIM's min-idle-time is a signed 64-bit count of ms: Redis refuses more, and
        // the worker would take each refusal for a lost connection (new-user trial).
        return Err(CliError::Usage(format!(
            "--claim-after-ms may be at most {} (Redis's XAUTOCLAIM takes a signed 64-bit idle \
             time), got {ms}",
            i64::MAX
        )));
    }
    if !(0.0..=1.0).contains(&args.poison_rate) {
        return Err(CliError::Usage(format!(
            "--poison-rate must be in [0, 1], got {}",
            args.poison_rate
        )));
    }
    let guarantee = args.guarantee.unwrap_or(Guarantee::ExactlyOnce);
    match guarantee {
        Guarantee::AtMostOnce => config.num_ackers = 0,
        _ if config.num_ackers == 0 => {
            return Err(CliError::Usage(format!(
                "--guarantee {} needs at least one acker (--ackers 0 is at-most-once)",
                if guarantee == Guarantee::AtLeastOnce {
                    "at-least-once"
                } else {
                    "exactly-once"
                }
            )))
        }
        _ => {}
    }
    // The sink holds up to 16 batches of unacked inputs (see `postgres_sink`).
    config.max_open_inputs = config
        .max_open_inputs
        .max(17 * args.sink_batch as usize + 1024);
    let (max_in_flight, pending) = spout_pending(config.max_spout_pending, args.read_batch);
    config.max_spout_pending = Some(pending);
    crate::cli::check_acker_capacity(&config, 1).map_err(CliError::Usage)?;
    let stop = Arc::new(AtomicBool::new(false));
    let mut cfg = RedisSpoutConfig::new(
        redis_url,
        stream,
        &args.consumer.clone().unwrap_or_else(default_consumer),
    );
    cfg.group = args.group.clone();
    cfg.batch = args.read_batch as usize;
    cfg.max_retries = args.max_retries;
    cfg.retry_initial_ms = args.retry_initial_ms;
    cfg.retry_max_ms = args.retry_max_ms;
    cfg.claim_after_ms = args
        .claim_after_ms
        .unwrap_or(if config.enable_message_timeouts {
            2 * timeout_ms
        } else {
            DEFAULT_CLAIM_AFTER_MS_WITHOUT_TIMEOUTS
        })
        .max(1);
    cfg.drain = args.drain;
    cfg.at_most_once = guarantee == Guarantee::AtMostOnce;
    cfg.max_in_flight = max_in_flight;
    let mode = if guarantee == Guarantee::ExactlyOnce {
        SinkMode::ExactlyOnce
    } else {
        SinkMode::Accumulate
    };
    let spout_counters = Arc::new(SpoutCounters::default());
    let sink_counters = Arc::new(SinkCounters::default());
    // While the sink cannot commit, the spout reads nothing (at-least-once and exactly-once:
    // each read would spend a delivery toward --max-retries on a tree that cannot complete).
    let gate = (guarantee != Guarantee::AtMostOnce).then(|| Arc::new(super::SinkGate::default()));
    let full_log = Arc::new(postgres_sink::FullLog::new(pg_url));
    // One sink task unless told (see `ConnectorArgs::sink_tasks` for why not --cores).
    let sink_tasks = args.sink_tasks.map_or(1, |n| n as usize);

    let mut b = TopologyBuilder::new();
    {
        let (cfg, counters, stop) = (cfg.clone(), spout_counters.clone(), stop.clone());
        let gate = gate.clone();
        b.set_spout(
            "entries",
            move || {
                let spout = RedisStreamSpout::new(cfg.clone(), counters.clone(), stop.clone());
                match &gate {
                    Some(g) => spout.pause_while(g.clone()),
                    None => spout,
                }
            },
            1,
        )
        .output_fields(&["entry", "line"])
        .output_stream(FLUSH_STREAM, &["flush"]);
    }
    let poison_rate = args.poison_rate;
    b.set_basic_bolt(
        "split",
        move || EntrySplitBolt::new(poison_rate),
        parallelism,
    )
    .shuffle_grouping("entries")
    .output_fields(&["word", "entry", "pos"]);
    {
        let (url, stream, counters) = (pg_url.clone(), stream.clone(), sink_counters.clone());
        let batch = args.sink_batch as usize;
        let at_most_once = guarantee == Guarantee::AtMostOnce;
        let stop = stop.clone();
        let (gate, full_log) = (gate.clone(), full_log.clone());
        // One log for every sink task: an outage is reported once per worker.
        let outage = Arc::new(super::OutageLog::new(
            "PostgreSQL",
            pg_url,
            if at_most_once {
                postgres_sink::OUTAGE_MEANWHILE_AT_MOST_ONCE
            } else {
                postgres_sink::OUTAGE_MEANWHILE
            },
        ));
        b.set_bolt(
            "sink",
            move || {
                let sink = PostgresSinkBolt::new(&url, &stream, mode, batch, counters.clone())
                    .stop_on(stop.clone())
                    .report_outages(outage.clone())
                    .report_full(full_log.clone());
                let sink = match &gate {
                    Some(g) => sink.gate(g.clone()),
                    None => sink,
                };
                if at_most_once {
                    sink.commit_buffered_on_cleanup()
                        .count_uncommitted_on_cleanup(counters.clone())
                } else {
                    sink
                }
            },
            sink_tasks,
        )
        .fields_grouping("split", &["word"])
        .grouping("entries", FLUSH_STREAM, Grouping::All);
    }
    let topology = b.build().map_err(|e| e.to_string())?;
    let plan = topology
        .plan(&config)
        .map_err(|e| crate::cli::plan_refused(&topology, &config, e))?;
    // The built-in job's count and memory checks (new-user trial: under `ulimit -v 600000`,
    // `--ackers 6000` died of SIGABRT after it had created the stream; `--ackers 3000` ran
    // with more ackers than the spout's 2001 trees pending). One spout task.
    crate::cli::check_acker_count(&plan, 1, parallelism, None).map_err(CliError::Usage)?;
    // The plan is checked above (e.g. too many ackers) before any server is touched: a refused
    // run leaves no stream or group behind (new-user trial: it created both first).
    // Reachable at start, or a clear error naming the address: Redis first, then PostgreSQL;
    // the group (and a missing stream, with its warning) only once both answered, so that a
    // run refused for PostgreSQL leaves no empty stream behind (the next run would not warn).
    let mut con = redis_stream::connect(redis_url).map_err(|e| e.to_string())?;
    let mut client = postgres_sink::connect(pg_url).map_err(|e| e.to_string())?;
    postgres_sink::ensure_schema(&mut client).map_err(|e| {
        format!(
            "cannot create the tables at {}: {e}",
            super::redact_password(pg_url)
        )
    })?;
    // Whether words of this stream were counted before this run: only those, skipped, are
    // warned about below, not this run's own replays (new-user trial: a fresh stream, a table
    // lock of 3.5 s with --timeout-secs 2, and the run's replays, skipped by exactly-once,
    // were reported as 12,521 words counted before). Unknown (a lock held): warned as before.
    let counted_before = postgres_sink::stream_counted_before(&mut client, stream)
        .map_err(|e| {
            format!(
                "cannot read the exactly-once records at {}: {e}",
                super::redact_password(pg_url)
            )
        })?
        .unwrap_or(true);
    // Room for the sink's connections (racy between workers starting together: each sees the
    // same free slots; the gate keeps a run that then finds the server full from spending its
    // entries' deliveries).
    let room = postgres_sink::connection_room(&mut client).map_err(|e| {
        format!(
            "cannot read max_connections and the connections in use at {}: {}",
            super::redact_password(pg_url),
            postgres_sink::error_chain(&e)
        )
    })?;
    full_log.set_max_connections(room.max_connections);
    if let Some(m) = too_few_connections(pg_url, &room, sink_tasks, mode == SinkMode::ExactlyOnce) {
        return Err(m.into());
    }
    drop(client);
    let start = redis_stream::create_group(&mut con, stream, &args.group)
        .map_err(|e| group_start_error(&e, stream, &args.group, redis_url))?;
    drop(con);
    if start.stream_created {
        crate::stderr_line!("{}", created_stream_warning(stream, redis_url, args.drain));
    }
    let stop_timeout_secs = config
        .enable_message_timeouts
        .then_some(timeout_ms.div_ceil(1000));
    install_stop_handlers(&stop, |sig, name| {
        (
            stopping_notice(name, stop_timeout_secs),
            forced_exit_notice(name, 128 + sig, guarantee, cfg.claim_after_ms),
        )
    })?;

    // Progress on stderr and periodic pruning of the exactly-once records, off the core threads.
    // Dropping `finished` wakes the side thread at once (a 100 ms sleep there delayed the
    // summary of every run by up to 100 ms, 5 % of a drained tinyshakespeare run).
    let (finished, finished_rx) = std::sync::mpsc::channel::<()>();
    let side = {
        let (sc, kc) = (spout_counters.clone(), sink_counters.clone());
        let (redis_url, pg_url, stream, group) = (
            redis_url.clone(),
            pg_url.clone(),
            stream.clone(),
            args.group.clone(),
        );
        let progress = Duration::from_secs(args.progress_secs);
        let exactly = mode == SinkMode::ExactlyOnce;
        let gate = gate.clone();
        // Returns the record rows its periodic prunes deleted: the summary's `records_pruned`
        // adds them to the final prune's (new-user trial: they were discarded, and a run of
        // 163,885 entries reported the final prune's 1,285).
        std::thread::spawn(move || {
            let mut pruned: u64 = 0;
            let (mut last_progress, mut last_prune) = (Instant::now(), Instant::now());
            let mut last_settled = settled(guarantee, &sc);
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                finished_rx.recv_timeout(Duration::from_millis(100))
            {
                if !progress.is_zero() && last_progress.elapsed() >= progress {
                    let (now, settled_now) = (Instant::now(), settled(guarantee, &sc));
                    let interval = now.duration_since(last_progress);
                    let rate = interval_rate(settled_now.saturating_sub(last_settled), interval);
                    (last_progress, last_settled) = (now, settled_now);
                    let paused = gate.as_ref().and_then(|g| g.paused_for(now)).map_or_else(
                        String::new,
                        |d| {
                            format!(
                                "; spout paused for {:.0} s: the sink cannot commit",
                                d.as_secs_f64()
                            )
                        },
                    );
                    crate::stderr_line!(
                        "acker-run: read {} acked {} in flight {} replays {} claimed {} \
                         dead-lettered {} words applied {} ({:.0} entries/s settled over \
                         the last {:.1} s{paused})",
                        sc.read.load(Ordering::Relaxed),
                        sc.acked.load(Ordering::Relaxed),
                        sc.in_flight.load(Ordering::Relaxed),
                        sc.replays.load(Ordering::Relaxed),
                        sc.claimed.load(Ordering::Relaxed),
                        sc.dead_lettered.load(Ordering::Relaxed),
                        kc.applied.load(Ordering::Relaxed),
                        rate,
                        interval.as_secs_f64()
                    );
                }
                if exactly && last_prune.elapsed() >= Duration::from_secs(5) {
                    last_prune = Instant::now();
                    // A prune that failed counts 0: an error before its commit rolls it back.
                    pruned += prune(&redis_url, &pg_url, &stream, &group).unwrap_or(0);
                }
            }
            pruned
        })
    };
    crate::cli::say_config_warnings("acker-run", plan.config());
    let report = shell::run(&plan, &shell_options);
    drop(finished);
    let periodic_pruned = side.join().ok();
    let report = report.map_err(|e| e.to_string())?;
    // Every prune's rows, the periodic ones' and the final one's; null (unknown) when the final
    // prune did not finish, as the README documents (the records it would have deleted are left
    // to a later prune).
    let pruned = if mode == SinkMode::ExactlyOnce {
        prune(redis_url, pg_url, stream, &args.group)
            .zip(periodic_pruned)
            .map(|(last, periodic)| last + periodic)
    } else {
        None
    };
    let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    if let Some(w) = new_group_warning(
        &start,
        counted_before,
        stream,
        &args.group,
        pg_url,
        load(&sink_counters.applied),
        load(&sink_counters.duplicates),
    ) {
        crate::stderr_line!("{w}");
    }
    let (entries_lost, words_lost) = lost(guarantee, &report, &sink_counters);
    let secs = report.elapsed.as_secs_f64().max(1e-9);
    let sc = &spout_counters;
    let kc = &sink_counters;
    // The tasks each component ran with, as the run reports them (ackers left out).
    let mut tasks = serde_json::Map::new();
    for (info, _) in report
        .tasks
        .iter()
        .filter(|(i, _)| i.component != "__acker")
    {
        let n = tasks
            .get(&info.component)
            .and_then(|v| v.as_u64())
            .unwrap_or(0);
        tasks.insert(info.component.clone(), (n + 1).into());
    }
    let end = Instant::now();
    let (pauses, paused_ms) = gate
        .as_ref()
        .map_or((0, 0), |g| (g.pauses(), g.paused_ms(end)));
    if json {
        let mut v = serde_json::json!({
            "guarantee": guarantee.name(),
            "read": load(&sc.read),
            "acked": load(&sc.acked),
            "replays": load(&sc.replays),
            "claimed": load(&sc.claimed),
            "dead_lettered": load(&sc.dead_lettered),
            "malformed": load(&sc.malformed),
            "redis_errors": load(&sc.redis_errors),
            "handed_back": load(&sc.handed_back),
            "words_applied": load(&kc.applied),
            "duplicates_skipped": load(&kc.duplicates),
            "commits": load(&kc.commits),
            "postgres_errors": load(&kc.errors),
            "records_pruned": pruned,
            "entries_lost": entries_lost,
            "words_lost": words_lost,
            "elapsed_ms": secs * 1e3,
            "entries_per_sec": settled(guarantee, sc) as f64 / secs,
            "acked_per_sec": load(&sc.acked) as f64 / secs,
            "tasks": tasks,
            "spout_pauses": pauses,
            "spout_paused_ms": paused_ms,
        });
        // Measured floats without float noise, as the built-in job's summary.
        crate::cli::round_json_floats(&mut v);
        writeln!(out, "{v}")?;
    } else {
        writeln!(
            out,
            "entries read {}, acked {}, replays {}, claimed {}, dead-lettered {} (malformed {}), \
             handed back on stop {}",
            load(&sc.read),
            load(&sc.acked),
            load(&sc.replays),
            load(&sc.claimed),
            load(&sc.dead_lettered),
            load(&sc.malformed),
            load(&sc.handed_back)
        )?;
        writeln!(
            out,
            "words applied {}, duplicates skipped {}, commits {}, errors redis {} postgres {}",
            load(&kc.applied),
            load(&kc.duplicates),
            load(&kc.commits),
            load(&sc.redis_errors),
            load(&kc.errors)
        )?;
        // What the JSON summary has beyond the lines above: the tasks, the records pruned and
        // the spout's pauses.
        let tasks_text = tasks
            .iter()
            .map(|(c, n)| format!("{c} {n}"))
            .collect::<Vec<_>>()
            .join(", ");
        let pruned_text = match (mode, pruned) {
            (SinkMode::ExactlyOnce, Some(n)) => format!("records pruned {n}"),
            (SinkMode::ExactlyOnce, None) => {
                "records pruned unknown (the final prune did not finish)".to_string()
            }
            _ => "records pruned none (no exactly-once records)".to_string(),
        };
        let paused_s = paused_ms as f64 / 1e3;
        let pauses_text = match pauses {
            0 => "spout never paused".to_string(),
            1 => format!("spout paused once for {paused_s:.1} s while the sink could not commit"),
            k => format!(
                "spout paused {k} times for {paused_s:.1} s while the sink could not commit"
            ),
        };
        writeln!(out, "tasks {tasks_text}; {pruned_text}; {pauses_text}")?;
        let rate = settled(guarantee, sc) as f64 / secs;
        if guarantee == Guarantee::AtMostOnce {
            writeln!(
                out,
                "{} in {secs:.2} s: {rate:.0} entries/s settled (acknowledged as read, \
                 {entries_lost} of them lost: failed, not replayed; {words_lost} words lost at \
                 the sink)",
                guarantee.name(),
            )?;
        } else {
            writeln!(
                out,
                "{} in {secs:.2} s: {rate:.0} entries/s settled (acked or dead-lettered), \
                 {:.0} acked/s",
                guarantee.name(),
                load(&sc.acked) as f64 / secs
            )?;
        }
    }
    Ok(())
}

/// `acker-run load`: appends one entry `line=<text>` per line of `input` holding a word (`-` for
/// standard input, as `wordcount --input` takes it) to `stream` (pipelined, [`LOAD_ROUND_TRIP`]
/// a round trip) and prints the entries loaded, the lines read and skipped, and entries/s.
///
/// A line is what `wordcount --input` counts as one ([`crate::wordcount::Lines`]): the text up
/// to a `\n`, a trailing `\r` removed; a line that is empty or holds only whitespace (Unicode
/// `White_Space`, as `str::split_whitespace`) is skipped, as `wordcount --input` skips it. A
/// long line stays one entry (it is not cut into 64 KiB pieces).
///
/// Load is not idempotent: each run appends every line again (entry ids are the server's
/// `*`). A load stopped part way (SIGINT or SIGTERM between two round trips, or Redis lost)
/// says how many entries the server acknowledged before the stop and from which input line to
/// resume ([`load_stopped`]): `tail -n +LINE FILE | acker-run load --input - ...` appends the
/// rest once.
///
/// # Errors
/// [`CliError::Usage`] when the stream name is empty or the URL does not parse
/// ([`redis_stream::check_url`]); [`CliError::Run`] when the file cannot be read or Redis
/// cannot be reached (naming the address), or Redis is lost part way; [`CliError::Interrupted`]
/// (exit status 130 or 143) on SIGINT or SIGTERM once appending has begun; [`CliError::Stdout`]
/// when the summary cannot be written.
pub fn load(input: &Path, url: &str, stream: &str, out: &mut dyn Write) -> Result<(), CliError> {
    if stream.is_empty() {
        return Err(CliError::Usage(
            "--stream must name a stream key (it was empty); nothing was loaded".to_string(),
        ));
    }
    redis_stream::check_url(url)?;
    let text = crate::cli::read_text(input).map_err(|e| format!("{e}; nothing was loaded"))?;
    let mut con = redis_stream::connect(url).map_err(|e| e.to_string())?;
    // From here a signal stops the load between two round trips, so that it can say what was
    // appended (before, SIGINT/SIGTERM end the process at once with nothing appended).
    let signal = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_usize(sig, signal.clone(), sig as usize)
            .map_err(|e| format!("cannot install a signal handler: {e}; nothing was loaded"))?;
    }
    let t0 = Instant::now();
    // What `wordcount --input` counts as a line (`wordcount::Lines`): text up to `\n`, a
    // trailing `\r` removed; a line holding no word (empty or only whitespace) is skipped.
    // Each kept line with its 1-based line number in the input.
    let mut total = 0usize;
    let lines: Vec<(usize, &str)> = text
        .lines()
        .inspect(|_| total += 1)
        .enumerate()
        .filter(|(_, l)| crate::wordcount::holds_a_word(l))
        .map(|(i, l)| (i + 1, l))
        .collect();
    let skipped = total - lines.len();
    let mut appended = 0usize;
    for chunk in lines.chunks(LOAD_ROUND_TRIP) {
        let sig = signal.load(Ordering::Relaxed);
        if sig != 0 {
            let name = if sig == signal_hook::consts::SIGINT as usize {
                "SIGINT"
            } else {
                "SIGTERM"
            };
            return Err(CliError::Interrupted {
                message: load_stopped(
                    &format!("load stopped by {name}"),
                    &lines,
                    appended,
                    0,
                    input,
                    url,
                    stream,
                    None,
                ),
                status: 128 + sig as u8,
            });
        }
        let mut p = redis::pipe();
        for (_, l) in chunk {
            p.cmd("XADD").arg(stream).arg("*").arg(LINE_FIELD).arg(*l);
        }
        let held = HoldStopSignals::new();
        let (replies, lost) = redis_stream::query_pipeline_each(&mut con, &p, chunk.len());
        drop(held);
        // Each `Ok` reply is an entry the server appended. A refusal (an error reply such as
        // WRONGTYPE or OOM) stops the load; before, it was reported as a round trip "sent
        // without a reply", with the line range "1 to 0" (new-user trial).
        let refused = replies.iter().position(Result::is_err);
        let ok_before = refused.unwrap_or(replies.len());
        if refused.is_none() && lost.is_none() {
            appended += chunk.len();
            continue;
        }
        let at = super::redact_password(url);
        let mut fix = None;
        let why = match (refused, &lost) {
            (Some(i), _) => {
                let reason = match &replies[i] {
                    Err(e) => redis_stream::redis_reason(e),
                    Ok(_) => String::new(),
                };
                fix = Some(refusal_fix(&reason, stream));
                format!(
                    "appending to {stream} at {at} failed: the server refused the entry of input \
                     line {}: {reason}",
                    chunk[i].0
                )
            }
            (None, Some(e)) => format!(
                "appending to {stream} at {at} failed: {}",
                redis_stream::redis_reason(e)
            ),
            (None, None) => unreachable!("handled above"),
        };
        // Entries the server appended after refusing one (rare: a refusal is usually for
        // every later entry too): named, as they break the "lines 1 to L" prefix.
        let later: Vec<usize> = replies
            .iter()
            .enumerate()
            .skip(ok_before)
            .filter(|(_, r)| r.is_ok())
            .map(|(i, _)| chunk[i].0)
            .collect();
        let unsure = if refused.is_some() {
            0
        } else {
            chunk.len() - replies.len()
        };
        let mut m = load_stopped(
            &why,
            &lines,
            appended + ok_before,
            unsure,
            input,
            url,
            stream,
            fix.as_deref(),
        );
        if !later.is_empty() {
            m.push_str(&format!(
                " Note: after the refusal the server still appended the entries of {} more \
                 input lines ({}): remove them from the input before resuming",
                later.len(),
                later
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if refused.is_some() && lost.is_some() {
            m.push_str(&format!(
                " The replies after the refusal did not all come back either: compare \
                 `XREVRANGE {stream} + - COUNT 1` with the input before resuming"
            ));
        }
        return Err(m.into());
    }
    let secs = t0.elapsed().as_secs_f64().max(1e-9);
    let written = writeln!(
        out,
        "loaded {} entries into {stream} from {total} lines ({skipped} skipped: empty or only \
         whitespace) in {secs:.2} s ({:.0} entries/s)",
        lines.len(),
        lines.len() as f64 / secs
    )
    .and_then(|()| out.flush());
    match written {
        Ok(()) => Ok(()),
        // The reader of a pipe closed it early: a quiet exit 0, as every command.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(CliError::Stdout(e)),
        // The load is done and is not idempotent: say so, so that it is not run again blindly
        // (new-user trial: `> /dev/full` said only "cannot write to stdout").
        Err(e) => Err(CliError::Run(load_report_unwritten(
            lines.len(),
            stream,
            url,
            input,
            &e,
        ))),
    }
}

/// The error of a load that appended every entry but could not write its report.
fn load_report_unwritten(
    entries: usize,
    stream: &str,
    url: &str,
    input: &Path,
    e: &std::io::Error,
) -> String {
    format!(
        "appended {entries} entries (every line of {} holding a word) to stream {stream} at {}; \
         then could not write the report to stdout: {e}. The load is done: do not run it again \
         (it would append every entry a second time)",
        input.display(),
        super::redact_password(url)
    )
}

/// Holds SIGINT and SIGTERM back from the calling thread while alive (`pthread_sigmask`): a
/// handler run on a thread blocked in a socket read with a timeout (the connection's 2 s) makes
/// the read fail with EINTR, never restarted (signal(7)), which lost a round trip's replies
/// (found by the test of a load stopped by SIGINT). A signal that comes meanwhile stays pending
/// and its handler runs when the guard drops; a round trip still ends within the read timeout.
struct HoldStopSignals(Option<libc::sigset_t>);

impl HoldStopSignals {
    fn new() -> Self {
        // SAFETY: sigemptyset/sigaddset initialise a local set; pthread_sigmask only changes
        // the calling thread's mask and writes the old one into a local.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGINT);
            libc::sigaddset(&mut set, libc::SIGTERM);
            let ok = libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old) == 0;
            Self(ok.then_some(old))
        }
    }
}

impl Drop for HoldStopSignals {
    fn drop(&mut self) {
        if let Some(old) = self.0.take() {
            // SAFETY: restores the mask saved by `new` on the same thread (the guard lives in
            // one function's frame and is not sent).
            unsafe {
                libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
            }
        }
    }
}

/// Entries `acker-run load` sends in one pipelined round trip; a signal stops a load between
/// two of them.
pub const LOAD_ROUND_TRIP: usize = 1000;

/// The message of a load stopped part way: `why`, then the entries the server acknowledged
/// (`appended` of the `lines` to load, `(line number, text)` each), the input lines they came
/// from, what a re-run does and how to resume. `unsure` entries after those were sent in a round
/// trip whose reply did not come back (Redis lost): they may have been appended too, so the
/// message says so and how to check before resuming. `fix_first`: the server refused an entry
/// (an error reply): what to fix before the resume command can work (it would be refused the
/// same way), said before that command.
#[allow(clippy::too_many_arguments)]
pub fn load_stopped(
    why: &str,
    lines: &[(usize, &str)],
    appended: usize,
    unsure: usize,
    input: &Path,
    url: &str,
    stream: &str,
    fix_first: Option<&str>,
) -> String {
    let upto = appended
        .checked_sub(1)
        .map_or(0, |i| lines.get(i).map_or(0, |l| l.0));
    let stdin = input == Path::new("-");
    let mut m = if appended == 0 {
        format!(
            "{why}: appended 0 of {} entries to {stream} before the stop (the server \
             acknowledged none)",
            lines.len()
        )
    } else {
        format!(
            "{why}: appended {appended} of {} entries to {stream} before the stop (each \
             acknowledged by the server; input lines 1 to {upto})",
            lines.len()
        )
    };
    if unsure > 0 {
        let first = lines.get(appended).map_or(upto + 1, |l| l.0);
        let last = lines.get(appended + unsure - 1).map_or(first, |l| l.0);
        m.push_str(&format!(
            "; the {unsure} entries of input lines {first} to {last} were sent without a reply \
             and may have been appended too: compare `XREVRANGE {stream} + - COUNT 1` with them \
             before resuming"
        ));
    }
    let then = match fix_first {
        Some(fix) => format!(
            " The server refused an entry, so a resume is refused the same way until the \
             cause is fixed: {fix}. Then, to append the rest once"
        ),
        None => " To append the rest once".to_string(),
    };
    let url = super::redact_password(url);
    if stdin {
        // The standard input was read to its end and is gone: "run it again" cannot work, and
        // a resume must feed the same lines again minus those appended (new-user trial: the
        // advice read as if the input could be given again as it was).
        m.push_str(&format!(
            ". The input was the standard input, which this run read to its end: it cannot be \
             read again, and feeding the same lines again whole appends every line again (load \
             is not idempotent).{then}, produce the same lines again and skip the first {upto} \
             (`tail -n +{}`): SOURCE | tail -n +{} | acker-run load --input - --redis {url} \
             --stream {stream}, where SOURCE is what fed this load (e.g. `cat FILE`)",
            upto + 1,
            upto + 1,
        ));
        return m;
    }
    m.push_str(&format!(
        ". Load is not idempotent: running it again appends every line again.{then}: tail -n \
         +{} {} | acker-run load --input - --redis {url} --stream {stream}",
        upto + 1,
        input.display(),
    ));
    m
}

/// What to fix before resuming a load that Redis refused with `reason` (its error reply, as
/// [`redis_stream::redis_reason`] words it) on `stream`.
fn refusal_fix(reason: &str, stream: &str) -> String {
    if reason.starts_with("WRONGTYPE") {
        format!(
            "the key {stream} holds another kind of value than a stream: load into another \
             --stream, or delete the key (DEL {stream}) if its value is not needed"
        )
    } else if reason.starts_with("OOM") {
        "Redis is out of memory (maxmemory): free memory in Redis or raise maxmemory \
         (CONFIG SET maxmemory ...)"
            .to_string()
    } else {
        "see the server's reply above".to_string()
    }
}

/// `acker-run counts`: the total, the number of distinct words and the top `top` (count
/// descending, then word ascending) from `word_counts`; one JSON object with `json`. A database
/// without the table is an error ([`no_table_error`]) and is left unchanged: it used to read as
/// zeros, which looks like a run that counted nothing (new-user trial), while the usual cause is
/// a wrong `--postgres` (another database or server) or no word count run yet. A table that
/// exists and is empty reads as zeros.
///
/// # Errors
/// [`CliError::Usage`] when the URL does not parse ([`postgres_sink::check_url`]);
/// [`CliError::Run`] when PostgreSQL cannot be reached (naming the address), the database has
/// no `word_counts` table, or the query fails;
/// [`CliError::Stdout`] when the output cannot be written.
pub fn counts(url: &str, top: usize, json: bool, out: &mut dyn Write) -> Result<(), CliError> {
    postgres_sink::check_url(url)?;
    let mut client = postgres_sink::connect(url).map_err(|e| e.to_string())?;
    let read_err = |e: postgres::Error| {
        format!(
            "reading word_counts at {}: {}",
            super::redact_password(url),
            postgres_sink::error_chain(&e)
        )
    };
    // A database no word count has written to: an error, and reading must not create the
    // tables.
    let row = client
        .query_one(
            "SELECT to_regclass('word_counts') IS NOT NULL, current_database()::text",
            &[],
        )
        .map_err(read_err)?;
    let (exists, database): (bool, String) = (row.get(0), row.get(1));
    if !exists {
        return Err(no_table_error(&database, url).into());
    }
    let row = client
        .query_one(
            "SELECT coalesce(sum(count), 0)::bigint, count(*) FROM word_counts",
            &[],
        )
        .map_err(read_err)?;
    let (total, distinct): (i64, i64) = (row.get(0), row.get(1));
    let rows = client
        .query(
            "SELECT word, count FROM word_counts ORDER BY count DESC, word ASC LIMIT $1",
            // `LIMIT` takes a bigint: a larger `--top` asks for every word anyway.
            &[&i64::try_from(top).unwrap_or(i64::MAX)],
        )
        .map_err(read_err)?;
    let top: Vec<(String, i64)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    write_counts(out, json, total, distinct, &top)
}

/// The error of [`counts`] on a database without `word_counts`: the database, the server
/// (password redacted) and what to run first.
pub fn no_table_error(database: &str, url: &str) -> String {
    format!(
        "no word_counts table in database {database:?} at {}: no word count has written there; \
         run `acker-run wordcount --redis URL --stream NAME --postgres {}` first (it creates \
         the table), or check --postgres",
        super::redact_password(url),
        super::redact_password(url)
    )
}

/// Prints what [`counts`] read.
fn write_counts(
    out: &mut dyn Write,
    json: bool,
    total: i64,
    distinct: i64,
    top: &[(String, i64)],
) -> Result<(), CliError> {
    if json {
        let v = serde_json::json!({
            "words_total": total,
            "distinct_words": distinct,
            "top": top.iter().map(|(w, c)| serde_json::json!({"word": w, "count": c})).collect::<Vec<_>>(),
        });
        writeln!(out, "{v}")?;
    } else {
        writeln!(out, "words total {total}, distinct {distinct}")?;
        for (w, c) in top {
            writeln!(out, "{c:>10} {}", crate::cli::word_for_text(w))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{forced_exit_notice, stopping_notice, Guarantee};

    /// The stop line's bound follows `--timeout-secs` (none with timeouts off), and the forced
    /// exit's line says what each guarantee leaves (the real worker's lines, exactly-once, are
    /// checked in `tests/connectors.rs`).
    #[test]
    fn stop_notices_give_the_bound_and_what_a_forced_exit_leaves() {
        let on = stopping_notice("SIGINT", Some(30));
        assert!(on.contains("waits up to 60 s (2 x --timeout-secs)"), "{on}");
        assert!(on.contains("about 70 s at most"), "{on}");
        let off = stopping_notice("SIGTERM", None);
        assert!(off.starts_with("acker-run: SIGTERM: stopping"), "{off}");
        assert!(off.contains("with no bound"), "{off}");
        assert!(!off.contains("at most;"), "{off}");
        let least = forced_exit_notice("SIGINT", 130, Guarantee::AtLeastOnce, 60_000);
        assert!(least.contains("(exit status 130)"), "{least}");
        assert!(least.contains("--claim-after-ms (60000 ms)"), "{least}");
        assert!(
            least.contains("are counted again (at-least-once)"),
            "{least}"
        );
        assert!(!least.contains("exact"), "{least}");
        let most = forced_exit_notice("SIGTERM", 143, Guarantee::AtMostOnce, 60_000);
        assert!(most.contains("(exit status 143)"), "{most}");
        assert!(most.contains("not committed yet are lost"), "{most}");
        assert!(!most.contains("delivered again"), "{most}");
    }
}
