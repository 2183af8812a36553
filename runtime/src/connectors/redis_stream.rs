//! A reliable spout over one Redis stream and one consumer group: Storm's reliable spout over a
//! log (the Kafka spout), with the log's own bookkeeping (the group's pending entries list, PEL)
//! replacing the spout's memory.
//!
//! - **Message id ↔ stream entry.** Each emitted tuple gets a spout-local message id (a counter);
//!   the spout maps it to the stream entry id (`<ms>-<seq>`) it came from, and the tuple carries
//!   that entry id as its first field (`entry`), so downstream state can key by source position.
//! - **Reads.** `XREADGROUP GROUP g c COUNT n STREAMS s >` without `BLOCK`: an empty stream
//!   returns at once, so an idle stream never stalls acks; after an empty read the spout waits
//!   `idle_poll_ms` before reading again.
//! - **Its own thread.** Every Redis command of the spout (and each reconnect) runs on a thread
//!   of its own, `redis-spout`, which reads into a queue the spout emits from on its core thread
//!   and takes acks and fails through a channel: a frozen Redis (SIGSTOP), whose commands wait
//!   their 2 s reply timeout, no longer holds the other executors of the core thread (ticks,
//!   acks, sinks). The thread reads a new batch only when the queue is empty, as the spout did
//!   on the core thread before, so it holds no more entries than it did.
//! - **Acks.** `ack` → the entry id joins a batch sent as one `XACK s g id...` (at `batch` ids,
//!   after `ack_delay_ms`, or on stop).
//! - **Fail and timeout.** After a backoff (`retry_initial_ms`, doubling with each fail of the
//!   entry in this life of the spout, at most `retry_max_ms`: Storm's KafkaSpout retries with
//!   exponential backoff; the wait is checked on each `next_tuple`, so other entries keep
//!   flowing meanwhile) the entry is still in the group's PEL: the spout asks the server for
//!   its delivery count (`XPENDING s g id id 1`); while it has been delivered at most
//!   `max_retries` times it is claimed again (`XCLAIM s g c 0 id`, which raises the count) and
//!   re-emitted; otherwise it is appended to the dead-letter stream `<stream>:dead` (fields
//!   `id`, `reason`, `deliveries`) and acked. The spout keeps each entry's delivery count from
//!   when it took the entry, so the fail of the last delivery `max_retries` allows goes to that
//!   check at once, without a backoff first (it used to wait one more backoff: 6.3 s instead of
//!   3.1 s with the defaults). The count lives in the server, so it survives
//!   restarts: a worker never starts an entry's retries again.
//! - **Start.** A worker first takes its own pending entries (delivered to this consumer name but
//!   never acked: `XPENDING ... consumer`, then `XCLAIM`), then, periodically, entries other
//!   consumers have held idle for more than `claim_after_ms` (`XAUTOCLAIM ... JUSTID`: an entry
//!   the spout holds itself is not delivered again; see `claim_idle`), then new ones.
//! - **Malformed entries** (no `line` field, not UTF-8, or a line longer than
//!   [`MAX_ENTRY_BYTES`]) go to the dead-letter stream with the reason and are acked and
//!   counted; they never reach the topology.
//! - **At-most-once** reads with `NOACK`: the entry is acknowledged as it is delivered, before its
//!   tuple is emitted, so no crash or restart delivers it twice.
//! - **Redis gone mid-run.** Any error drops the connection; the spout emits nothing and retries
//!   the connection with a capped backoff (50 ms doubling to 2 s), then resumes where the group
//!   stands. Acks not yet sent are kept and sent after the reconnect. It says so on stderr: one
//!   line when the connection is lost (address, reason, what it does meanwhile), one when it is
//!   back (after how long, how many connection attempts), rate-limited ([`super::OutageLog`]).
//! - **Stop.** When the shared stop flag is set (SIGINT/SIGTERM) the spout reads nothing more,
//!   lets its in-flight trees finish or fail (a tree that does neither is failed by the message
//!   timeout T between T and 2T after its emit or last reset, as Storm's rotating timeout
//!   buckets do: `acker_core::pending`'s epochs are T long from the start of the run, so this
//!   takes at most 2T after the last emit), sends its acks, then hands back
//!   the entries it read but did not finish (not emitted yet, or failed while stopping) and
//!   reports done. A pending entry cannot be given back to the group unowned, so handing back is
//!   `XCLAIM s g c 0 id... TIME 1 JUSTID`: the entry stays pending under this consumer with its
//!   delivery count unchanged (`JUSTID`) and its last delivery set to the epoch, i.e. idle past
//!   any claim time, so the next `XAUTOCLAIM` of any worker takes it at once (a worker starting,
//!   `--drain` included, claims first) instead of after `claim_after_ms`. If Redis cannot be
//!   reached for [`STOP_HAND_BACK_MS`] after the trees ended (acks still unsent count: the
//!   bound holds while Redis is down), the spout says so on stderr and reports done: the
//!   entries it did not hand back keep their idle time and those whose acks were not sent stay
//!   pending, and all are claimed after `claim_after_ms` as after a crash (exactly-once skips
//!   the effects already committed; at-least-once counts them again as replays). With `drain` it
//!   also reports done once a read finds no new entry, it has nothing in flight and the group has
//!   no pending entry at all (so a dead worker's entries are claimed first).
//!
//! - **Sink down.** With [`RedisStreamSpout::pause_while`] (the word count's at-least-once and
//!   exactly-once workers) the spout reads nothing while its worker's sink cannot commit: see
//!   [`super::SinkGate`].
//!
//! The spout also emits an unanchored punctuation tuple on the `flush` stream every
//! `flush_interval_ms` while it has trees in flight, so that sinks batching their writes commit
//! a partial batch without waiting for more input (bolts get no ticks in this runtime).
//!
//! The spout is a user component at the shell's edge: it does network I/O and reads the wall
//! clock; the executors around it stay pure.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redis::Value as RV;

use super::{parse_entry_id, BadUrl};
use crate::{values, MessageId, Spout, SpoutOutputCollector, TopologyContext};

/// Longest a stopping spout keeps trying to hand its unfinished entries back while Redis cannot
/// be reached, ms (see the module docs, **Stop**).
pub const STOP_HAND_BACK_MS: u64 = 5_000;

/// What the spout does while Redis is down, as its "lost" line on stderr says
/// ([`super::OutageLog`]).
pub const OUTAGE_MEANWHILE: &str = "emitting nothing meanwhile (trees in flight finish or time \
     out; acks not sent yet are kept and sent once it is back)";

/// A Redis error as one line, without the error kind the client's `Display` appends; a read or
/// write timeout as "no reply within 2 s ...".
pub fn redis_reason(e: &redis::RedisError) -> String {
    if e.is_timeout() {
        // The socket's "Resource temporarily unavailable (os error 11)" read as if the server
        // had gone (new-user trial): say what happened.
        return format!(
            "no reply within {IO_TIMEOUT_SECS} s (the connection's read/write timeout)"
        );
    }
    super::one_line_reason(&e.to_string(), Some(&format!("{:?}", e.kind())))
}

/// Whether `e` is the server's error reply to a command (`-OOM ...`, `-ERR ...`): the
/// connection is up and in step, unlike a timeout, an I/O error or a dropped connection.
pub fn is_error_reply(e: &redis::RedisError) -> bool {
    e.code().is_some() && !(e.is_io_error() || e.is_timeout() || e.is_connection_dropped())
}

/// `XCLAIM stream group consumer 0 ids...`: hands `ids` to `consumer` whatever their idle time,
/// raising each one's delivery count by one; the entries as the server returns them (those no
/// longer pending are left out).
fn xclaim_now(
    con: &mut redis::Connection,
    stream: &str,
    group: &str,
    consumer: &str,
    ids: &[&String],
) -> redis::RedisResult<RV> {
    redis::cmd("XCLAIM")
        .arg(stream)
        .arg(group)
        .arg(consumer)
        .arg(0)
        .arg(ids)
        .query(con)
}

/// The spout connection's read and write timeout, s: a command without a reply in this time
/// counts as a lost connection (reconnect with backoff).
const IO_TIMEOUT_SECS: u64 = 2;

/// Sends the `n` commands of a plain (not `atomic`) pipeline and reads their `n` replies,
/// stopping at the first error: a reply that does not come within the connection's read
/// timeout ends the round trip at once. The client's own `Pipeline::query` keeps reading after
/// a failed read (so that a transaction's other replies are consumed), each read waiting the
/// timeout again: against a server that stops answering without closing the connection (a
/// SIGSTOPped or frozen redis-server) a round trip of 1,000 commands waited 1,000 × 2 s (new-user
/// trial: `acker-run load` hung for over 10 minutes; strace showed `recvfrom` failing with
/// EAGAIN every 2 s). A server error reply (`-ERR ...`) is returned as the error once every
/// reply has been read (the connection stays in step). The replies in order.
pub fn query_pipeline(
    con: &mut redis::Connection,
    pipeline: &redis::Pipeline,
    n: usize,
) -> redis::RedisResult<Vec<RV>> {
    con.send_packed_command(&pipeline.get_packed_pipeline())?;
    let mut replies = Vec::with_capacity(n);
    let mut server_error = None;
    for _ in 0..n {
        match con.recv_response()?.extract_error() {
            Ok(v) => replies.push(v),
            Err(e) => {
                server_error.get_or_insert(e);
            }
        }
    }
    match server_error {
        Some(e) => Err(e),
        None => Ok(replies),
    }
}

/// As [`query_pipeline`], but keeps every reply: each command's reply in order (a server error
/// reply, e.g. `WRONGTYPE` or `OOM`, as its `Err`), and the error that ended the round trip
/// early (a lost connection or a reply timeout: the commands after the replies returned got
/// none), if any. For a caller that must say exactly which commands the server carried out
/// (`acker-run load`: which entries were appended).
pub fn query_pipeline_each(
    con: &mut redis::Connection,
    pipeline: &redis::Pipeline,
    n: usize,
) -> (Vec<redis::RedisResult<RV>>, Option<redis::RedisError>) {
    if let Err(e) = con.send_packed_command(&pipeline.get_packed_pipeline()) {
        return (Vec::new(), Some(e));
    }
    let mut replies = Vec::with_capacity(n);
    for _ in 0..n {
        match con.recv_response() {
            Ok(v) => replies.push(v.extract_error()),
            Err(e) => return (replies, Some(e)),
        }
    }
    (replies, None)
}

/// The delivery count at which a failing entry is dead-lettered: `max_retries` + 1, as the
/// server's signed 64-bit delivery count (a `--max-retries` of `i64::MAX` or more can never be
/// reached: no limit). Before, `as i64` wrapped such values negative and every failing entry
/// was dead-lettered at its first delivery (new-user trial: `--max-retries
/// 18446744073709551615`).
fn delivery_limit(max_retries: u64) -> i64 {
    i64::try_from(max_retries.saturating_add(1)).unwrap_or(i64::MAX)
}

/// Default delay before the first re-emit of a failed entry, ms (`--retry-initial-ms`).
pub const DEFAULT_RETRY_INITIAL_MS: u64 = 100;

/// Default longest delay before re-emitting a failed entry, ms (`--retry-max-ms`). With the
/// defaults an entry failing on every delivery waits 0.1 + 0.2 + 0.4 + 0.8 + 1.6 = 3.1 s over
/// its 5 retries and is dead-lettered as soon as its last delivery fails (the spout keeps each
/// entry's delivery count from when it took it, so it knows that delivery was the last): a
/// sink lock held for a few seconds no longer uses the retries up at once.
pub const DEFAULT_RETRY_MAX_MS: u64 = 5_000;

/// The stream on which the spout emits its flush punctuation (field `flush`).
pub const FLUSH_STREAM: &str = "flush";

/// The entry field holding the text line.
pub const LINE_FIELD: &str = "line";

/// The longest `line` the spout emits, bytes; a longer entry is dead-lettered with the reason
/// `entry too long (N bytes > 1048576)`, acked and counted (as `dead_lettered` and `malformed`),
/// never emitted. The exactly-once sink records an entry's applied word positions in one row
/// (`word_count_applied_entries.positions`) that every commit touching the entry rewrites, so
/// one entry costs time quadratic in its words: an entry of 1,000,000 words never finished
/// within a 30 s message timeout (each delivery timed out until it was dead-lettered for its
/// retries, after minutes of work). At this limit an entry holds at most 524,288 words (one
/// letter and a space each), which one exactly-once worker counted in 7.2 s, no replay, at a
/// load average of 4.4 on 2 cores (test
/// `an_entry_over_the_size_limit_is_dead_lettered_and_the_rest_count_exactly`): well within the
/// default 30 s message timeout. Raise `--timeout-secs` with care for lines near the limit.
pub const MAX_ENTRY_BYTES: usize = 1_048_576;

/// How the spout reads and acknowledges.
#[derive(Clone, Debug)]
pub struct RedisSpoutConfig {
    /// `redis://HOST:PORT/`.
    pub url: String,
    /// The stream key.
    pub stream: String,
    /// The consumer group (created at `0` if missing).
    pub group: String,
    /// This worker's consumer name (unique among live workers; reuse it after a restart to take
    /// the worker's own pending entries back at once).
    pub consumer: String,
    /// Entries per `XREADGROUP`/`XAUTOCLAIM`/`XPENDING` call and ids per `XACK` (at least 1).
    pub batch: usize,
    /// Deliveries past the first an entry may get before it is dead-lettered.
    pub max_retries: u64,
    /// Idle time (ms) after which another consumer's pending entry may be claimed.
    pub claim_after_ms: u64,
    /// Report done when the stream has nothing left to process (see the module docs).
    pub drain: bool,
    /// Read with `NOACK` and emit without message ids (at-most-once).
    pub at_most_once: bool,
    /// Wait after an empty read, ms.
    pub idle_poll_ms: u64,
    /// Longest an ack waits for its `XACK` batch, ms.
    pub ack_delay_ms: u64,
    /// Period of the flush punctuation while trees are in flight, ms.
    pub flush_interval_ms: u64,
    /// Delay before the first re-emit of a failed entry, ms; each further fail of the entry (in
    /// this life of the spout) doubles it, up to `retry_max_ms` (Storm's KafkaSpout retries with
    /// exponential backoff too). The retry limit stays the server's delivery count.
    pub retry_initial_ms: u64,
    /// Longest delay before re-emitting a failed entry, ms.
    pub retry_max_ms: u64,
    /// Most trees in flight. Keep it below the topology's max spout pending: the runtime stops
    /// calling `next_tuple` at that limit, and the flush punctuation (which lets sinks commit
    /// partial batches, and so lets trees complete) needs `next_tuple` calls.
    pub max_in_flight: usize,
}

impl RedisSpoutConfig {
    /// Defaults for `stream` on `url`: group `acker-wordcount`, batch 500, 5 retries, claim after
    /// 60 s, idle poll 10 ms, ack delay 2 ms, flush every 20 ms, retry backoff 100 ms doubling to
    /// 5 s, 2000 trees in flight.
    pub fn new(url: &str, stream: &str, consumer: &str) -> Self {
        Self {
            url: url.to_string(),
            stream: stream.to_string(),
            group: "acker-wordcount".to_string(),
            consumer: consumer.to_string(),
            batch: 500,
            max_retries: 5,
            claim_after_ms: 60_000,
            drain: false,
            at_most_once: false,
            idle_poll_ms: 10,
            ack_delay_ms: 2,
            flush_interval_ms: 20,
            retry_initial_ms: DEFAULT_RETRY_INITIAL_MS,
            retry_max_ms: DEFAULT_RETRY_MAX_MS,
            max_in_flight: 2000,
        }
    }

    /// The delay before re-emitting an entry after its `fails`-th fail (1-based) in this life of
    /// the spout, ms: `retry_initial_ms × 2^(fails - 1)`, at most `retry_max_ms`.
    pub fn retry_delay_ms(&self, fails: u32) -> u64 {
        let doubling = 1u64 << fails.saturating_sub(1).min(32);
        self.retry_initial_ms
            .saturating_mul(doubling)
            .min(self.retry_max_ms)
    }

    /// The dead-letter stream: `<stream>:dead`.
    pub fn dead_stream(&self) -> String {
        format!("{}:dead", self.stream)
    }
}

/// Counters the spout shares with the worker (progress lines and the final summary).
#[derive(Debug, Default)]
pub struct SpoutCounters {
    /// Entries delivered to this worker by the server (new, own pending, claimed, retried).
    pub read: AtomicU64,
    /// Entries acknowledged to the group after their tree completed, as the server counted
    /// them (`XACK`'s reply): an entry another consumer acknowledged first is not counted
    /// again, so the workers' counts add up to each entry once.
    pub acked: AtomicU64,
    /// Entries delivered again by `XCLAIM`: after a fail or timeout in this worker, or pending
    /// for this consumer name at start (an earlier life of it crashed). Takeovers from other
    /// consumers are counted in `claimed`.
    pub replays: AtomicU64,
    /// Entries this worker took over from other consumers (`XAUTOCLAIM`).
    pub claimed: AtomicU64,
    /// Entries appended to the dead-letter stream (malformed or past the retry limit).
    pub dead_lettered: AtomicU64,
    /// Of those, malformed entries.
    pub malformed: AtomicU64,
    /// Trees in flight now.
    pub in_flight: AtomicU64,
    /// Redis errors (each drops the connection and reconnects with backoff).
    pub redis_errors: AtomicU64,
    /// Entries handed back to the group on stop: read but not finished (not emitted yet, or
    /// failed while stopping), left pending with their idle time set past any claim time so
    /// that another worker claims them at once (see the module docs, **Stop**).
    pub handed_back: AtomicU64,
}

/// Why the spout could not reach Redis at start.
#[derive(Debug)]
pub struct ConnectError {
    /// The address tried, as given (its `Display` hides a password in it).
    pub url: String,
    /// The client's error, on one line.
    pub reason: String,
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot reach Redis at {}: {}",
            super::redact_password(&self.url),
            self.reason
        )
    }
}

impl std::error::Error for ConnectError {}

/// A good `--redis` URL, shown in the error for a bad one.
pub const URL_EXAMPLE: &str = "redis://127.0.0.1:6379/";

/// Checks that `url` is a Redis URL the client accepts, without connecting: a URL
/// (`scheme://...`) whose scheme is `redis`, `rediss`, `redis+unix` or `unix`, with a host for
/// `redis`/`rediss`, and a database number as its path if any.
///
/// # Errors
/// [`BadUrl`] for `--redis`: what is wrong with it and an example of a good one
/// ([`URL_EXAMPLE`]); `acker-run` reports it as a bad argument (exit status 2) before any
/// connection attempt.
pub fn check_url(url: &str) -> Result<(), BadUrl> {
    let bad = |reason: String| BadUrl {
        option: "--redis",
        url: url.to_string(),
        reason,
        server: "Redis",
        example: URL_EXAMPLE,
        forms: "redis://[USER:PASSWORD@]HOST[:PORT][/DB], or redis+unix:///PATH/TO/SOCKET",
    };
    let parsed = url::Url::parse(url).map_err(|e| match e {
        url::ParseError::RelativeUrlWithoutBase => {
            bad("it has no scheme (it must start with redis://)".to_string())
        }
        e => bad(format!("it does not parse as a URL ({e})")),
    })?;
    if !["redis", "rediss", "redis+unix", "unix"].contains(&parsed.scheme()) {
        return Err(bad(format!(
            "its scheme is {}:// (redis://, rediss://, redis+unix:// or unix:// are accepted)",
            parsed.scheme()
        )));
    }
    // The client's own description, without the `- InvalidClientConfig` (its error kind) that
    // its `Display` appends.
    redis::Client::open(url).map(drop).map_err(|e| {
        let text = e.to_string();
        let kind = format!("- {:?}", e.kind());
        bad(text
            .strip_suffix(&kind)
            .unwrap_or(&text)
            .trim_end()
            .to_string())
    })
}

/// Connects to `url` (2 s connect, read and write timeouts) and checks it with `PING`. A server
/// that accepts the connection but does not answer within 2 s is an error too, not a hang.
///
/// # Errors
/// [`ConnectError`] naming the address.
pub fn connect(url: &str) -> Result<redis::Connection, ConnectError> {
    let err = |e: redis::RedisError| ConnectError {
        url: url.to_string(),
        reason: super::one_line_reason(&e.to_string(), Some(&format!("{:?}", e.kind()))),
    };
    let client = redis::Client::open(url).map_err(err)?;
    // The client's own set-up commands wait without a timeout: a server that accepts the
    // connection and never answers would hang here (found by a new-user trial). Ask first.
    if let redis::ConnectionAddr::Tcp(host, port) = &client.get_connection_info().addr {
        // A Redis server answers PING with a RESP simple string (`+PONG`) or error (`-NOAUTH`).
        super::probe_answers(
            (host.as_str(), *port),
            b"PING\r\n",
            Duration::from_secs(2),
            ("Redis", "PING"),
            |reply| matches!(reply.first(), Some(b'+' | b'-')),
        )
        .map_err(|reason| ConnectError {
            url: url.to_string(),
            reason,
        })?;
    }
    let mut con = client
        .get_connection_with_timeout(Duration::from_secs(2))
        .map_err(err)?;
    con.set_read_timeout(Some(Duration::from_secs(IO_TIMEOUT_SECS)))
        .map_err(err)?;
    con.set_write_timeout(Some(Duration::from_secs(IO_TIMEOUT_SECS)))
        .map_err(err)?;
    redis::cmd("PING").query::<String>(&mut con).map_err(err)?;
    Ok(con)
}

/// What [`create_group`] found and did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupStart {
    /// The stream key did not exist: this call created it, empty.
    pub stream_created: bool,
    /// The group did not exist: this call created it, at the stream's first entry.
    pub group_created: bool,
    /// The group is new to this run: created by this call, or found with no consumer yet
    /// (`XINFO GROUPS`' `consumers` 0: no worker has read from it; e.g. another worker started
    /// at the same time created it a moment before). Such a group reads the stream from its
    /// first entry for this worker too, so the warning about a new group
    /// (`wordcount::new_group_warning`) concerns any worker that starts on it, not only the
    /// one that created it (new-user trial: a second worker started with the first said
    /// nothing).
    pub group_fresh: bool,
    /// Entries in the stream when the group was looked at (`XLEN`).
    pub entries: u64,
}

/// Creates `group` on `stream` at id `0` (with `MKSTREAM`) unless it exists: a new group reads
/// the stream from its first entry, as Kafka's `auto.offset.reset=earliest` (not `$`, which
/// would skip every entry already there). Says whether the stream key or the group was
/// created, and how many entries the stream held (`EXISTS`, `XLEN`, `XGROUP CREATE` in one
/// round trip each).
///
/// # Errors
/// Any Redis error other than `BUSYGROUP` (the group exists).
pub fn create_group(
    con: &mut redis::Connection,
    stream: &str,
    group: &str,
) -> redis::RedisResult<GroupStart> {
    let (existed, entries): (bool, u64) = redis::pipe()
        .cmd("EXISTS")
        .arg(stream)
        .cmd("XLEN")
        .arg(stream)
        .query(con)?;
    // Look before writing: XGROUP CREATE is a write, which a Redis at maxmemory with
    // noeviction refuses (OOM) even when the group exists (new-user trial: no worker could
    // start there).
    if existed {
        if let Some(consumers) = group_consumers(con, stream, group)? {
            return Ok(GroupStart {
                stream_created: false,
                group_created: false,
                group_fresh: consumers == 0,
                entries,
            });
        }
    }
    let r: redis::RedisResult<RV> = redis::cmd("XGROUP")
        .arg("CREATE")
        .arg(stream)
        .arg(group)
        .arg("0")
        .arg("MKSTREAM")
        .query(con);
    let group_created = match r {
        Ok(_) => true,
        Err(e) if e.code() == Some("BUSYGROUP") => false,
        Err(e) => return Err(e),
    };
    Ok(GroupStart {
        stream_created: group_created && !existed,
        group_created,
        // BUSYGROUP: another worker created it between the look and the create, a moment ago.
        group_fresh: true,
        entries,
    })
}

/// The number of consumers of consumer group `group` on `stream` (which must exist), `None`
/// when there is no such group (`XINFO GROUPS`, a read).
fn group_consumers(
    con: &mut redis::Connection,
    stream: &str,
    group: &str,
) -> redis::RedisResult<Option<i64>> {
    let groups: RV = redis::cmd("XINFO").arg("GROUPS").arg(stream).query(con)?;
    let RV::Array(groups) = groups else {
        return Ok(None);
    };
    Ok(groups.iter().find_map(|g| {
        let pairs: Vec<(&RV, &RV)> = match g {
            RV::Array(kv) => kv
                .chunks(2)
                .filter_map(|p| Some((p.first()?, p.get(1)?)))
                .collect(),
            RV::Map(kv) => kv.iter().map(|(k, v)| (k, v)).collect(),
            _ => Vec::new(),
        };
        let field = |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| string(k).as_deref() == Some(name))
        };
        let named = field("name").is_some_and(|(_, v)| string(v).as_deref() == Some(group));
        // A group without a `consumers` field (not seen in Redis 7) counts as read from.
        named.then(|| field("consumers").and_then(|(_, v)| int(v)).unwrap_or(1))
    }))
}

/// Creates `group` on `stream` at id `0` (with `MKSTREAM`) unless it exists ([`create_group`]).
/// Returns whether the stream key did not exist before (`EXISTS`) and this call created it,
/// empty: the caller warns then, since a misspelled `--stream` otherwise reads nothing without
/// a word (new-user trial). An empty stream created this way is legitimate (a worker started
/// before the loader), so it is no error.
///
/// # Errors
/// Any Redis error other than `BUSYGROUP` (the group exists: `Ok(false)`).
pub fn ensure_group(
    con: &mut redis::Connection,
    stream: &str,
    group: &str,
) -> redis::RedisResult<bool> {
    create_group(con, stream, group).map(|g| g.stream_created)
}

/// One stream entry as the server returned it.
#[derive(Clone, Debug)]
struct Entry {
    id: String,
    fields: Vec<(Vec<u8>, Vec<u8>)>,
    /// Its delivery count once delivered to this consumer (1 for a new read; from `XPENDING`
    /// for a claimed one).
    deliveries: i64,
}

fn bytes(v: &RV) -> Option<Vec<u8>> {
    match v {
        RV::BulkString(b) => Some(b.clone()),
        RV::SimpleString(s) => Some(s.as_bytes().to_vec()),
        RV::Int(i) => Some(i.to_string().into_bytes()),
        _ => None,
    }
}

fn string(v: &RV) -> Option<String> {
    bytes(v).and_then(|b| String::from_utf8(b).ok())
}

fn int(v: &RV) -> Option<i64> {
    match v {
        RV::Int(i) => Some(*i),
        other => string(other)?.parse().ok(),
    }
}

/// `[id, [f1, v1, ...]]` entries; a nil entry (deleted from the stream) is skipped.
fn entries(v: &RV) -> Vec<Entry> {
    let RV::Array(items) = v else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|e| {
            let RV::Array(pair) = e else { return None };
            let id = string(pair.first()?)?;
            let fields = match pair.get(1) {
                Some(RV::Array(kv)) => kv
                    .chunks_exact(2)
                    .filter_map(|c| Some((bytes(&c[0])?, bytes(&c[1])?)))
                    .collect(),
                _ => return None,
            };
            Some(Entry {
                id,
                fields,
                deliveries: 1,
            })
        })
        .collect()
}

/// The entries of an `XREADGROUP` reply for one stream (nil when there are none).
fn read_reply_entries(v: &RV) -> Vec<Entry> {
    match v {
        RV::Array(streams) => streams
            .iter()
            .flat_map(|s| match s {
                RV::Array(kv) if kv.len() == 2 => entries(&kv[1]),
                _ => Vec::new(),
            })
            .collect(),
        RV::Map(streams) => streams.iter().flat_map(|(_, e)| entries(e)).collect(),
        _ => Vec::new(),
    }
}

/// `(id, consumer, idle_ms, deliveries)` rows of an extended `XPENDING` reply.
fn pending_rows(v: &RV) -> Vec<(String, String, i64)> {
    let RV::Array(rows) = v else {
        return Vec::new();
    };
    rows.iter()
        .filter_map(|r| {
            let RV::Array(f) = r else { return None };
            Some((string(f.first()?)?, string(f.get(1)?)?, int(f.get(3)?)?))
        })
        .collect()
}

enum Phase {
    /// Taking this consumer's own pending entries, after this id (exclusive) once set.
    OwnPending(Option<String>),
    /// Claiming idle entries of others and reading new entries.
    New,
}

/// Entries read and not emitted yet, and whether the spout is done: shared by the spout (on its
/// core thread) and its Redis thread. The Redis thread holds the lock only to push or drain
/// entries, never across a Redis command.
#[derive(Default)]
struct Shared {
    ready: Mutex<VecDeque<(String, Arc<str>)>>,
    done: AtomicBool,
}

impl Shared {
    fn ready(&self) -> std::sync::MutexGuard<'_, VecDeque<(String, Arc<str>)>> {
        self.ready.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What the spout tells its Redis thread.
enum ToRedis {
    /// The tree of this entry completed.
    Ack(String),
    /// The tree of this entry failed or timed out.
    Fail(String),
    /// The ready queue ran empty: read more now.
    Wake,
    /// The spout closes: send the acks left, then end.
    Close,
}

/// Longest the spout's `close` waits for its Redis thread to send the acks left, ms: a
/// reconnect's 2 s PING plus the `XACK`'s 2 s reply timeout, and some slack.
pub const CLOSE_WAIT_MS: u64 = 5_000;

/// The spout (see the module docs). Emits `(entry, line)` on the default stream and `(flush)` on
/// [`FLUSH_STREAM`].
///
/// Its Redis commands run on a thread of their own (named `redis-spout`), never on the core
/// thread: a command waits up to its 2 s reply timeout and a reconnect up to its 2 s PING, and a
/// frozen Redis (SIGSTOP) held every executor of the spout's core thread (bolts, ackers) for
/// those 2 s at a time (measured: 4 beats of a 5 ms heartbeat in 3 s of freeze, gaps of 2.02 s;
/// test `a_frozen_redis_does_not_hold_the_core_thread`). The core thread only emits the entries
/// the Redis thread has read, through a queue whose lock is never held across a command, and
/// passes acks and fails on through a channel: it never waits for Redis (except in `close`, at
/// most [`CLOSE_WAIT_MS`], for the last acks).
pub struct RedisStreamSpout {
    cfg: RedisSpoutConfig,
    counters: Arc<SpoutCounters>,
    stop: Arc<AtomicBool>,
    shared: Arc<Shared>,
    /// The Redis side until its thread starts (first `next_tuple`).
    side: Option<Box<Side>>,
    to_side: Option<std::sync::mpsc::Sender<ToRedis>>,
    /// Told (or dropped) when the Redis thread has ended.
    side_ended: Option<std::sync::mpsc::Receiver<()>>,
    next_msg_id: MessageId,
    in_flight: HashMap<MessageId, String>,
    next_flush: Instant,
    unflushed: bool,
    done: bool,
    /// The worker's sink's gate ([`RedisStreamSpout::pause_while`]): no emit while closed.
    gate: Option<Arc<super::SinkGate>>,
}

/// The spout's Redis side, on its own thread: the connection, reads, acks, retries, claims,
/// dead letters, the stop's hand-back (see the module docs).
struct Side {
    cfg: RedisSpoutConfig,
    counters: Arc<SpoutCounters>,
    stop: Arc<AtomicBool>,
    shared: Arc<Shared>,
    con: Option<redis::Connection>,
    reconnect_at: Option<Instant>,
    backoff_ms: u64,
    /// Redis round trips and connection attempts made (to tell a step that did something).
    attempts: u64,
    phase: Phase,
    /// Trees in flight, as the spout last published them (`counters.in_flight`) before this
    /// step read its messages.
    in_flight: u64,
    /// Failed entries waiting for their retry backoff: (due, entry id), earliest first.
    retry: BinaryHeap<Reverse<(Instant, String)>>,
    /// Fails of each entry in this life of the spout (for the backoff; the retry limit is the
    /// server's delivery count). An entry leaves it when acked, dead-lettered or no longer ours.
    fails: HashMap<String, u32>,
    /// The server's delivery count of each entry this spout holds (ready, in flight or waiting
    /// to retry; not kept under at-most-once), as of its last delivery: a fail of an entry at
    /// the last delivery `--max-retries` allows dead-letters it at once, without a backoff
    /// first. An entry leaves it when acked, dead-lettered or no longer ours.
    deliveries: HashMap<String, i64>,
    acks: Vec<String>,
    /// How many of `acks` (the first ones) went out in an `XACK` that got no reply (a frozen
    /// Redis, a dropped connection): the server may have applied them, and applies them when
    /// it wakes (new-user trial: 500 of 2,000 "not sent" acks were). They are sent again.
    acks_unanswered: usize,
    /// `XREADGROUP` calls (not `NOACK`) that got no reply: the server may have executed them,
    /// or executes them when it wakes (a frozen Redis), delivering up to `batch` entries each to
    /// this consumer that this spout never saw; they stay pending until claimed.
    reads_unanswered: usize,
    oldest_ack: Option<Instant>,
    next_poll: Instant,
    next_claim: Instant,
    claim_cursor: String,
    /// Entries to hand back on stop (see the module docs, **Stop**).
    hand_back: Vec<String>,
    /// When the spout first saw the stop flag with nothing in flight and no ack to send.
    stop_quiet_since: Option<Instant>,
    /// Reports losing Redis and getting it back on stderr.
    outage: super::OutageLog,
    /// The worker's sink's gate ([`RedisStreamSpout::pause_while`]): no read while closed.
    gate: Option<Arc<super::SinkGate>>,
}

impl RedisStreamSpout {
    /// A spout reading with `cfg`, counting into `counters`, stopping when `stop` is set. Its
    /// Redis thread starts at the first `next_tuple`.
    pub fn new(cfg: RedisSpoutConfig, counters: Arc<SpoutCounters>, stop: Arc<AtomicBool>) -> Self {
        let now = Instant::now();
        let url = cfg.url.clone();
        let phase = if cfg.at_most_once {
            Phase::New
        } else {
            Phase::OwnPending(None)
        };
        let shared = Arc::new(Shared::default());
        let side = Side {
            cfg: cfg.clone(),
            counters: counters.clone(),
            stop: stop.clone(),
            shared: shared.clone(),
            con: None,
            reconnect_at: None,
            backoff_ms: 50,
            attempts: 0,
            phase,
            in_flight: 0,
            retry: BinaryHeap::new(),
            fails: HashMap::new(),
            deliveries: HashMap::new(),
            acks: Vec::new(),
            acks_unanswered: 0,
            reads_unanswered: 0,
            oldest_ack: None,
            next_poll: now,
            next_claim: now,
            claim_cursor: "0-0".to_string(),
            hand_back: Vec::new(),
            stop_quiet_since: None,
            outage: super::OutageLog::new("Redis", &url, OUTAGE_MEANWHILE),
            gate: None,
        };
        Self {
            cfg,
            counters,
            stop,
            shared,
            side: Some(Box::new(side)),
            to_side: None,
            side_ended: None,
            next_msg_id: 1,
            in_flight: HashMap::new(),
            next_flush: now,
            unflushed: false,
            done: false,
            gate: None,
        }
    }

    /// Makes the spout read nothing while `gate` is closed (a sink task cannot commit): its
    /// Redis thread reads no new entry, re-reads no failed one and claims none, and the core
    /// thread emits no entry read before, since each would spend a delivery (toward
    /// `max_retries`) on a tree that cannot complete. Acks, the flush punctuation and a stop
    /// go on as usual; the spout resumes once the gate opens, and says on stderr when it pauses
    /// and resumes ([`super::SinkGate::spout_check`]). For at-least-once and exactly-once
    /// (at-most-once's entries are acknowledged when read). Call before the first `next_tuple`.
    pub fn pause_while(mut self, gate: Arc<super::SinkGate>) -> Self {
        if let Some(side) = self.side.as_mut() {
            side.gate = Some(gate.clone());
        }
        self.gate = Some(gate);
        self
    }

    /// Starts the Redis thread; false (said on stderr) if the system refused a thread.
    fn start_side(&mut self) -> bool {
        let Some(side) = self.side.take() else {
            return self.to_side.is_some();
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let (ended_tx, ended_rx) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("redis-spout".to_string())
            .spawn(move || {
                side.run(rx);
                let _ = ended_tx.send(());
            });
        match spawned {
            Ok(_) => {
                self.to_side = Some(tx);
                self.side_ended = Some(ended_rx);
                true
            }
            Err(e) => {
                crate::stderr_line!(
                    "acker-run: cannot start the Redis spout's thread: {e}; the spout reads \
                     nothing"
                );
                false
            }
        }
    }

    fn tell(&self, m: ToRedis) {
        if let Some(tx) = &self.to_side {
            let _ = tx.send(m);
        }
    }

    /// Publishes the number of trees in flight, after the message about the tree that ended
    /// (so that the Redis thread, which reads the count before its messages, never sees fewer
    /// trees in flight without the message saying which ended).
    fn publish_in_flight(&self) {
        self.counters
            .in_flight
            .store(self.in_flight.len() as u64, Ordering::SeqCst);
    }
}

impl Side {
    /// The Redis thread: takes the spout's messages, then does one step of Redis work; waits
    /// for a message (at most until some work falls due: [`Side::wait`]) when a step found
    /// nothing to do. Ends on [`ToRedis::Close`]
    /// (after sending the acks left) or when the spout is dropped.
    fn run(mut self: Box<Self>, rx: std::sync::mpsc::Receiver<ToRedis>) {
        use std::sync::mpsc::{RecvTimeoutError, TryRecvError};
        loop {
            // The count first, then the messages: a tree ended is in a message by then.
            self.in_flight = self.counters.in_flight.load(Ordering::SeqCst);
            loop {
                match rx.try_recv() {
                    Ok(ToRedis::Close) => return self.close(),
                    Ok(m) => self.on(m),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => return,
                }
            }
            if self.step() {
                continue;
            }
            match rx.recv_timeout(self.wait()) {
                Ok(ToRedis::Close) => return self.close(),
                Ok(m) => self.on(m),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    fn close(&mut self) {
        self.flush_acks(Instant::now());
    }

    /// How long the thread may wait for a message after a step that did nothing: until the
    /// earliest of the next read, retry, claim, ack batch and reconnect falls due, at least
    /// 1 ms and at most 10 ms (1 ms while stopping). A message (an ack, a fail, the ready queue
    /// run empty) wakes it at once. Waking every 1 ms instead cost an idle worker about 0.1 CPU
    /// s a second.
    fn wait(&self) -> Duration {
        let now = Instant::now();
        if self.stop.load(Ordering::Relaxed) {
            return Duration::from_millis(1);
        }
        let ack_due = self
            .oldest_ack
            .filter(|_| !self.acks.is_empty())
            .map(|t| t + Duration::from_millis(self.cfg.ack_delay_ms));
        let retry_due = self.retry.peek().map(|Reverse((t, _))| *t);
        [
            Some(self.next_poll),
            Some(self.next_claim),
            ack_due,
            retry_due,
            self.reconnect_at,
        ]
        .into_iter()
        .flatten()
        .map(|t| t.saturating_duration_since(now))
        .fold(Duration::from_millis(10), Duration::min)
        // Work already due that the step could not do (the ready queue not empty, the trees in
        // flight at their limit) waits for a message: no spinning.
        .max(Duration::from_millis(1))
    }

    fn on(&mut self, m: ToRedis) {
        match m {
            ToRedis::Ack(id) => self.ack(id),
            ToRedis::Fail(id) => self.fail(id),
            ToRedis::Wake | ToRedis::Close => {}
        }
    }

    fn ack(&mut self, id: String) {
        if !self.fails.is_empty() {
            self.fails.remove(&id);
        }
        self.deliveries.remove(&id);
        if self.acks.is_empty() {
            self.oldest_ack = Some(Instant::now());
        }
        self.acks.push(id);
    }

    fn fail(&mut self, id: String) {
        if self.stop.load(Ordering::Relaxed) {
            self.hand_back.push(id);
        } else {
            let fails = self.fails.entry(id.clone()).or_insert(0);
            *fails = fails.saturating_add(1);
            // At the last delivery --max-retries allows, the next step is the dead letter:
            // no backoff before it (the server's count, checked again then, decides).
            let limit = delivery_limit(self.cfg.max_retries);
            let last = self.deliveries.get(&id).is_some_and(|d| *d >= limit);
            let delay_ms = if last {
                0
            } else {
                self.cfg.retry_delay_ms(*fails)
            };
            let due = Instant::now() + Duration::from_millis(delay_ms);
            self.retry.push(Reverse((due, id)));
        }
    }

    /// The connection (reconnecting after the backoff), `None` while Redis is down. A call that
    /// returns a connection counts as a round trip in `attempts`.
    fn con(&mut self, now: Instant) -> Option<&mut redis::Connection> {
        if self.con.is_some() {
            self.attempts += 1;
        }
        if self.con.is_none() {
            if self.reconnect_at.is_some_and(|t| now < t) {
                return None;
            }
            self.attempts += 1;
            match connect(&self.cfg.url)
                .map_err(|e| e.reason)
                .and_then(|mut c| {
                    ensure_group(&mut c, &self.cfg.stream, &self.cfg.group)
                        .map_err(|e| redis_reason(&e))?;
                    Ok(c)
                }) {
                Ok(c) => {
                    self.con = Some(c);
                    self.backoff_ms = 50;
                    self.reconnect_at = None;
                    if let Some(line) = self.outage.connected(now) {
                        crate::stderr_line!("{line}");
                    }
                }
                Err(reason) => {
                    if let Some(line) = self.outage.failed(now, &reason, true) {
                        crate::stderr_line!("{line}");
                    }
                    self.counters.redis_errors.fetch_add(1, Ordering::Relaxed);
                    // From the end of the attempt, not `now`: an attempt against a frozen server
                    // takes the 2 s PING timeout, so a backoff counted from its start had passed
                    // already and every call tried again (a stop took 2 s per tree acked).
                    self.reconnect_at =
                        Some(Instant::now() + Duration::from_millis(self.backoff_ms));
                    self.backoff_ms = (self.backoff_ms * 2).min(2000);
                    return None;
                }
            }
        }
        self.con.as_mut()
    }

    /// Drops the connection after `error`; the next call reconnects after the backoff. The
    /// first error of an outage is reported on stderr ([`super::OutageLog`]).
    fn lost(&mut self, now: Instant, error: &redis::RedisError) {
        let reason = redis_reason(error);
        let line = if is_error_reply(error) {
            self.outage.refused(now, &reason)
        } else {
            self.outage.failed(now, &reason, false)
        };
        if let Some(line) = line {
            crate::stderr_line!("{line}");
        }
        self.counters.redis_errors.fetch_add(1, Ordering::Relaxed);
        self.con = None;
        // From now, after the failed command (which may have waited its 2 s reply timeout).
        self.reconnect_at = Some(Instant::now() + Duration::from_millis(self.backoff_ms));
        self.backoff_ms = (self.backoff_ms * 2).min(2000);
    }

    fn flush_acks(&mut self, now: Instant) {
        if self.acks.is_empty() {
            return;
        }
        let (stream, group) = (self.cfg.stream.clone(), self.cfg.group.clone());
        let ids = std::mem::take(&mut self.acks);
        let Some(con) = self.con(now) else {
            self.acks = ids;
            return;
        };
        let r: redis::RedisResult<i64> = redis::cmd("XACK")
            .arg(&stream)
            .arg(&group)
            .arg(&ids)
            .query(con);
        match r {
            Ok(acked) => {
                // The entries the server acknowledged now: not those another consumer that
                // also held them (claimed from it, or it from us) acknowledged first, so that
                // the workers' `acked` add up to each entry once.
                self.counters
                    .acked
                    .fetch_add(acked.max(0) as u64, Ordering::Relaxed);
                self.oldest_ack = None;
                self.acks_unanswered = 0;
            }
            Err(e) => {
                // No reply: the request may have reached the server (an error reply, such as
                // OOM, says it was refused; a timeout or a dropped connection does not).
                if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() {
                    self.acks_unanswered = ids.len();
                }
                self.acks = ids;
                self.lost(now, &e);
            }
        }
    }

    /// Appends `(id, reason, deliveries)` rows to the dead-letter stream; with `ack`, also acks
    /// the ids, in one `MULTI` (a Redis error then marks the connection lost). Without `ack`
    /// (at-most-once: the entries were read with `NOACK`) the rows are only appended.
    fn dead_letter(&mut self, rows: &[(String, String, i64)], ack: bool, now: Instant) -> bool {
        if rows.is_empty() {
            return true;
        }
        let (stream, group, dead) = (
            self.cfg.stream.clone(),
            self.cfg.group.clone(),
            self.cfg.dead_stream(),
        );
        let Some(con) = self.con(now) else {
            return false;
        };
        let mut p = redis::pipe();
        if ack {
            p.atomic();
        }
        for (id, reason, deliveries) in rows {
            p.cmd("XADD")
                .arg(&dead)
                .arg("*")
                .arg("id")
                .arg(id)
                .arg("reason")
                .arg(reason)
                .arg("deliveries")
                .arg(*deliveries)
                .ignore();
            if ack {
                p.cmd("XACK").arg(&stream).arg(&group).arg(id).ignore();
            }
        }
        match p.query::<()>(con) {
            Ok(()) => {
                self.counters
                    .dead_lettered
                    .fetch_add(rows.len() as u64, Ordering::Relaxed);
                if !self.deliveries.is_empty() {
                    for (id, _, _) in rows {
                        self.deliveries.remove(id);
                    }
                }
                true
            }
            Err(e) => {
                if ack {
                    self.lost(now, &e);
                }
                false
            }
        }
    }

    /// Sorts delivered entries: well-formed ones join the ready queue, malformed ones are
    /// dead-lettered. Returns how many were delivered.
    fn accept(&mut self, delivered: Vec<Entry>, now: Instant) -> usize {
        let n = delivered.len();
        self.counters.read.fetch_add(n as u64, Ordering::Relaxed);
        let mut bad = Vec::new();
        let mut good = Vec::new();
        for e in delivered {
            let line = e
                .fields
                .iter()
                .find(|(k, _)| k.as_slice() == LINE_FIELD.as_bytes())
                .map(|(_, v)| std::str::from_utf8(v).map(Arc::<str>::from));
            match line {
                Some(Ok(l)) if l.len() > MAX_ENTRY_BYTES => bad.push((
                    e.id,
                    format!("entry too long ({} bytes > {MAX_ENTRY_BYTES})", l.len()),
                    1,
                )),
                Some(Ok(l)) if parse_entry_id(&e.id).is_some() => {
                    if !self.cfg.at_most_once {
                        self.deliveries.insert(e.id.clone(), e.deliveries);
                    }
                    good.push((e.id, l))
                }
                Some(Ok(_)) => bad.push((e.id, "malformed: bad entry id".to_string(), 1)),
                Some(Err(_)) => bad.push((e.id, "malformed: line is not UTF-8".to_string(), 1)),
                None => bad.push((e.id, "malformed: no `line` field".to_string(), 1)),
            }
        }
        if !good.is_empty() {
            self.shared.ready().extend(good);
        }
        if !bad.is_empty() {
            self.counters
                .malformed
                .fetch_add(bad.len() as u64, Ordering::Relaxed);
            // At-least-once: not acked if Redis is gone now; the entries stay pending and come
            // back. At-most-once: read with NOACK, only appended.
            let ack = !self.cfg.at_most_once;
            let _ = self.dead_letter(&bad, ack, now);
        }
        n
    }

    /// Claims `rows` (`(id, consumer, deliveries)` from `XPENDING`, all this consumer's) again:
    /// those delivered more than `max_retries` times are dead-lettered, the rest are re-read with
    /// `XCLAIM` (raising their delivery count) into the ready queue. False on a Redis error.
    fn reclaim(&mut self, rows: Vec<(String, String, i64)>, now: Instant) -> bool {
        let limit = delivery_limit(self.cfg.max_retries);
        let (over, again): (Vec<_>, Vec<_>) = rows.into_iter().partition(|r| r.2 >= limit);
        let over: Vec<(String, String, i64)> = over
            .into_iter()
            .map(|(id, _, d)| {
                // Deliveries that did not fail here: claims (a consumer held the entry idle past
                // --claim-after-ms), other workers, earlier runs of this consumer.
                let here = i64::from(self.fails.get(&id).copied().unwrap_or(0));
                let mut reason = format!(
                    "failed after {d} deliveries (--max-retries {})",
                    self.cfg.max_retries
                );
                if d > here {
                    reason.push_str(&format!(
                        "; {} of them did not fail in this worker: they ended in a claim past \
                         --claim-after-ms {}, or went to another worker or an earlier run",
                        d - here,
                        self.cfg.claim_after_ms
                    ));
                }
                (id, reason, d)
            })
            .collect();
        if !self.dead_letter(&over, true, now) {
            return false;
        }
        for (id, _, _) in &over {
            self.fails.remove(id);
        }
        if again.is_empty() {
            return true;
        }
        let (stream, group, consumer) = (
            self.cfg.stream.clone(),
            self.cfg.group.clone(),
            self.cfg.consumer.clone(),
        );
        let Some(con) = self.con(now) else {
            return false;
        };
        let ids: Vec<&String> = again.iter().map(|r| &r.0).collect();
        let r = xclaim_now(con, &stream, &group, &consumer, &ids);
        match r {
            Ok(v) => {
                let mut got = entries(&v);
                // XCLAIM raised each delivery count by one.
                for id in &ids {
                    self.deliveries.remove(id.as_str());
                }
                for e in &mut got {
                    if let Some(r) = again.iter().find(|r| r.0 == e.id) {
                        e.deliveries = r.2.saturating_add(1);
                    }
                }
                self.counters
                    .replays
                    .fetch_add(got.len() as u64, Ordering::Relaxed);
                self.accept(got, now);
                true
            }
            Err(e) => {
                self.lost(now, &e);
                false
            }
        }
    }

    /// Re-emits failed entries still pending for this consumer (their delivery counts from the
    /// server decide: again, or dead letter).
    fn retry_failed(&mut self, now: Instant) {
        let mut due = Vec::new();
        while let Some(Reverse((t, _))) = self.retry.peek() {
            if *t > now || due.len() >= self.cfg.batch {
                break;
            }
            if let Some(Reverse(d)) = self.retry.pop() {
                due.push(d);
            }
        }
        let ids: Vec<String> = due.iter().map(|(_, id)| id.clone()).collect();
        let (stream, group, me) = (
            self.cfg.stream.clone(),
            self.cfg.group.clone(),
            self.cfg.consumer.clone(),
        );
        let Some(con) = self.con(now) else {
            self.retry.extend(due.into_iter().map(Reverse));
            return;
        };
        let mut p = redis::pipe();
        for id in &ids {
            p.cmd("XPENDING")
                .arg(&stream)
                .arg(&group)
                .arg(id)
                .arg(id)
                .arg(1);
        }
        let r = query_pipeline(con, &p, ids.len());
        match r {
            Ok(replies) => {
                let rows: Vec<_> = replies
                    .iter()
                    .flat_map(pending_rows)
                    .filter(|r| r.1 == me)
                    .collect();
                // Entries no longer ours (another consumer claimed them) need no backoff.
                for id in &ids {
                    if !rows.iter().any(|r| &r.0 == id) {
                        self.fails.remove(id);
                        self.deliveries.remove(id);
                    }
                }
                if !self.reclaim(rows, now) {
                    self.retry.extend(due.into_iter().map(Reverse));
                }
            }
            Err(e) => {
                self.retry.extend(due.into_iter().map(Reverse));
                self.lost(now, &e);
            }
        }
    }

    /// One page of this consumer's own pending entries (at start); moves to [`Phase::New`] when
    /// there are none left.
    fn own_pending(&mut self, after: Option<String>, now: Instant) {
        let (stream, group, me, n) = (
            self.cfg.stream.clone(),
            self.cfg.group.clone(),
            self.cfg.consumer.clone(),
            self.cfg.batch,
        );
        let Some(con) = self.con(now) else {
            self.phase = Phase::OwnPending(after);
            return;
        };
        let start = after.as_ref().map_or("-".to_string(), |a| format!("({a}"));
        let r: redis::RedisResult<RV> = redis::cmd("XPENDING")
            .arg(&stream)
            .arg(&group)
            .arg(&start)
            .arg("+")
            .arg(n)
            .arg(&me)
            .query(con);
        match r {
            Ok(v) => {
                let rows = pending_rows(&v);
                let Some(last) = rows.last().map(|r| r.0.clone()) else {
                    self.phase = Phase::New;
                    return;
                };
                // Delivered before, to an earlier life of this consumer: replays too.
                if self.reclaim(rows, now) {
                    self.phase = Phase::OwnPending(Some(last));
                } else {
                    self.phase = Phase::OwnPending(after);
                }
            }
            Err(e) => {
                self.phase = Phase::OwnPending(after);
                self.lost(now, &e);
            }
        }
    }

    /// Whether this spout holds entry `id` (ready, in flight, waiting to retry, or acked and
    /// its `XACK` not sent yet).
    fn holds(&self, id: &str) -> bool {
        self.deliveries.contains_key(id) || self.acks.iter().any(|a| a == id)
    }

    /// `XAUTOCLAIM` one page of entries idle past `claim_after_ms`. Returns how many it took.
    ///
    /// The claim is `JUSTID`, which does not raise the delivery count: an entry this spout
    /// still holds itself (its tree, retry or ack outlasting the claim time) stays as it is,
    /// neither counted as a delivery nor emitted twice. Each entry it takes from another
    /// consumer is then re-read with `XCLAIM` (raising its delivery count by one, as a
    /// delivery), unless its count has reached the limit: then it is dead-lettered with a reason
    /// that says the last delivery ended in a claim. Before, `XAUTOCLAIM` without `JUSTID` raised
    /// the count of every entry it took, this spout's own in flight included, and re-emitted
    /// those (new-user trial: with `--claim-after-ms 1`, 337 healthy entries dead-lettered as
    /// "failed after 6 deliveries" and `acked` above the stream's length).
    fn claim_idle(&mut self, now: Instant) -> usize {
        let (stream, group, me, n, idle) = (
            self.cfg.stream.clone(),
            self.cfg.group.clone(),
            self.cfg.consumer.clone(),
            self.cfg.batch,
            self.cfg.claim_after_ms,
        );
        let cursor = self.claim_cursor.clone();
        let Some(con) = self.con(now) else { return 0 };
        let r: redis::RedisResult<RV> = redis::cmd("XAUTOCLAIM")
            .arg(&stream)
            .arg(&group)
            .arg(&me)
            .arg(idle)
            .arg(&cursor)
            .arg("COUNT")
            .arg(n)
            .arg("JUSTID")
            .query(con);
        let v = match r {
            Ok(v) => v,
            Err(e) => {
                self.lost(now, &e);
                return 0;
            }
        };
        let RV::Array(parts) = v else { return 0 };
        let next = parts
            .first()
            .and_then(string)
            .unwrap_or_else(|| "0-0".into());
        let ids: Vec<String> = match parts.get(1) {
            Some(RV::Array(ids)) => ids.iter().filter_map(string).collect(),
            _ => Vec::new(),
        };
        if next == "0-0" {
            self.next_claim = now + Duration::from_millis((idle / 2).max(100));
        }
        self.claim_cursor = next;
        // Entries this spout holds itself: claimed back to it without a new delivery; nothing
        // more to do.
        let taken: Vec<String> = ids.into_iter().filter(|id| !self.holds(id)).collect();
        if taken.is_empty() {
            return 0;
        }
        // Their delivery counts (JUSTID left them as they were): check them against the limit.
        let Some(con) = self.con(now) else { return 0 };
        let mut p = redis::pipe();
        for id in &taken {
            p.cmd("XPENDING")
                .arg(&stream)
                .arg(&group)
                .arg(id)
                .arg(id)
                .arg(1);
        }
        let counts: Vec<i64> = match query_pipeline(con, &p, taken.len()) {
            Ok(replies) => replies
                .iter()
                .map(|r| pending_rows(r).first().map_or(0, |row| row.2))
                .collect(),
            Err(e) => {
                self.lost(now, &e);
                return 0;
            }
        };
        let limit = delivery_limit(self.cfg.max_retries);
        let mut over = Vec::new();
        let mut again = Vec::new();
        for (id, d) in taken.into_iter().zip(counts) {
            if d >= limit {
                over.push((
                    id,
                    format!(
                        "delivered {d} times (--max-retries {}), the last delivery ending in a \
                         claim: its consumer held it idle past --claim-after-ms {idle} (a crash, \
                         a stuck worker, or a claim time below how long entries take)",
                        self.cfg.max_retries
                    ),
                    d,
                ));
            } else if d > 0 {
                again.push((id, d));
            }
        }
        self.dead_letter(&over, true, now);
        if again.is_empty() {
            return 0;
        }
        let Some(con) = self.con(now) else { return 0 };
        let ids: Vec<&String> = again.iter().map(|r| &r.0).collect();
        let r = xclaim_now(con, &stream, &group, &me, &ids);
        let mut got = match r {
            Ok(v) => entries(&v),
            Err(e) => {
                self.lost(now, &e);
                return 0;
            }
        };
        // XCLAIM raised each delivery count by one.
        for e in &mut got {
            if let Some(r) = again.iter().find(|r| r.0 == e.id) {
                e.deliveries = r.1.saturating_add(1);
            }
        }
        let k = got.len();
        self.counters.claimed.fetch_add(k as u64, Ordering::Relaxed);
        self.accept(got, now);
        k
    }

    /// Reads one batch of new entries. Returns how many arrived.
    fn read_new(&mut self, now: Instant) -> Option<usize> {
        let (stream, group, me, n) = (
            self.cfg.stream.clone(),
            self.cfg.group.clone(),
            self.cfg.consumer.clone(),
            self.cfg.batch,
        );
        let noack = self.cfg.at_most_once;
        let con = self.con(now)?;
        let mut c = redis::cmd("XREADGROUP");
        c.arg("GROUP").arg(&group).arg(&me).arg("COUNT").arg(n);
        if noack {
            c.arg("NOACK");
        }
        c.arg("STREAMS").arg(&stream).arg(">");
        match c.query::<RV>(con) {
            Ok(v) => {
                let got = read_reply_entries(&v);
                Some(self.accept(got, now))
            }
            Err(e) => {
                if !noack && (e.is_io_error() || e.is_timeout() || e.is_connection_dropped()) {
                    self.reads_unanswered += 1;
                }
                self.lost(now, &e);
                None
            }
        }
    }

    /// Entries pending in the whole group (`XPENDING` summary), `None` on error.
    fn group_pending(&mut self, now: Instant) -> Option<i64> {
        let (stream, group) = (self.cfg.stream.clone(), self.cfg.group.clone());
        let con = self.con(now)?;
        match redis::cmd("XPENDING")
            .arg(&stream)
            .arg(&group)
            .query::<RV>(con)
        {
            Ok(RV::Array(v)) => v.first().and_then(int),
            Ok(_) => None,
            Err(e) => {
                self.lost(now, &e);
                None
            }
        }
    }

    /// Hands the entries of `hand_back` back to the group (module docs, **Stop**): `XCLAIM` to
    /// this consumer with `TIME 1 JUSTID`, `batch` ids a call. Returns whether all went; on a
    /// Redis error the rest stay in `hand_back` and the connection is marked lost.
    fn hand_back(&mut self, now: Instant) -> bool {
        while !self.hand_back.is_empty() {
            let n = self.hand_back.len().min(self.cfg.batch.max(1));
            let (stream, group, me) = (
                self.cfg.stream.clone(),
                self.cfg.group.clone(),
                self.cfg.consumer.clone(),
            );
            let ids: Vec<String> = self.hand_back[..n].to_vec();
            let Some(con) = self.con(now) else {
                return false;
            };
            let r: redis::RedisResult<RV> = redis::cmd("XCLAIM")
                .arg(&stream)
                .arg(&group)
                .arg(&me)
                .arg(0)
                .arg(&ids)
                .arg("TIME")
                .arg(1)
                .arg("JUSTID")
                .query(con);
            match r {
                Ok(_) => {
                    self.hand_back.drain(..n);
                    self.counters
                        .handed_back
                        .fetch_add(n as u64, Ordering::Relaxed);
                }
                Err(e) => {
                    self.lost(now, &e);
                    return false;
                }
            }
        }
        true
    }

    fn idle(&self) -> bool {
        self.in_flight == 0
            && self.shared.ready().is_empty()
            && self.retry.is_empty()
            && self.acks.is_empty()
    }

    /// One step of Redis work, in the order the spout's `next_tuple` did it before it had this
    /// thread: acks due, the stop's hand-back, retries due, own pending entries, claims, then a
    /// read when the ready queue is empty. Whether it made a round trip or a connection attempt
    /// (else the thread waits for a message, at most until some work falls due).
    fn step(&mut self) -> bool {
        if self.shared.done.load(Ordering::SeqCst) {
            return false;
        }
        let attempts = self.attempts;
        let now = Instant::now();
        let stopping = self.stop.load(Ordering::Relaxed);
        let ready_empty = self.shared.ready().is_empty();
        if !self.acks.is_empty()
            && (stopping
                || self.acks.len() >= self.cfg.batch
                || self.oldest_ack.is_some_and(|t| {
                    now.duration_since(t) >= Duration::from_millis(self.cfg.ack_delay_ms)
                })
                || ready_empty)
        {
            self.flush_acks(now);
        }
        if stopping {
            if !self.cfg.at_most_once {
                self.hand_back
                    .extend(self.retry.drain().map(|Reverse((_, id))| id));
                let ready: Vec<String> = self.shared.ready().drain(..).map(|(id, _)| id).collect();
                self.hand_back.extend(ready);
            } else if !self.shared.ready().is_empty() {
                // At-most-once: the spout emits what was read before stopping.
                return self.attempts != attempts;
            }
            if self.in_flight == 0 {
                // The trees ended: from here the acks still unsent and the hand-back get at
                // most STOP_HAND_BACK_MS (Redis may be down: the stop must not wait for it).
                let since = *self.stop_quiet_since.get_or_insert(now);
                if self.acks.is_empty() && self.hand_back(now) {
                    self.shared.done.store(true, Ordering::SeqCst);
                } else if now.duration_since(since) >= Duration::from_millis(STOP_HAND_BACK_MS) {
                    crate::stderr_line!(
                        "acker-run: stop: Redis at {} did not answer for {} s after the trees \
                         ended; acks sent without a reply: {} (Redis may have applied them, \
                         and `acked` does not count them), acks never sent: {}, entries not \
                         handed back: {}, reads sent without a reply: {} (Redis may deliver up \
                         to {} entries each when it answers); the unacknowledged stay pending \
                         under consumer {:?} and are delivered again after --claim-after-ms \
                         (exactly-once skips the effects already committed)",
                        super::redact_password(&self.cfg.url),
                        STOP_HAND_BACK_MS / 1000,
                        self.acks_unanswered,
                        self.acks.len().saturating_sub(self.acks_unanswered),
                        self.hand_back.len(),
                        self.reads_unanswered,
                        self.cfg.batch,
                        self.cfg.consumer
                    );
                    self.shared.done.store(true, Ordering::SeqCst);
                }
            }
            return self.attempts != attempts;
        }
        if self.gate.as_ref().is_some_and(|g| g.is_closed()) {
            // The sink cannot commit: no read, re-read or claim (see `pause_while`).
            return self.attempts != attempts;
        }
        if !self.cfg.at_most_once && self.in_flight >= self.cfg.max_in_flight as u64 {
            return self.attempts != attempts;
        }
        if !ready_empty {
            return self.attempts != attempts;
        }
        if self
            .retry
            .peek()
            .is_some_and(|Reverse((due, _))| *due <= now)
        {
            self.retry_failed(now);
            return self.attempts != attempts;
        }
        if let Phase::OwnPending(after) = std::mem::replace(&mut self.phase, Phase::New) {
            self.own_pending(after, now);
            return self.attempts != attempts;
        }
        if now >= self.next_claim && !self.cfg.at_most_once && self.claim_idle(now) > 0 {
            return true;
        }
        if now < self.next_poll {
            return self.attempts != attempts;
        }
        if self.read_new(now) == Some(0) {
            self.next_poll = now + Duration::from_millis(self.cfg.idle_poll_ms);
            if self.cfg.drain
                && self.idle()
                && (self.cfg.at_most_once || self.group_pending(now) == Some(0))
            {
                self.shared.done.store(true, Ordering::SeqCst);
            }
        }
        self.attempts != attempts
    }
}

impl Spout for RedisStreamSpout {
    fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
        if self.done {
            return;
        }
        if !self.start_side() {
            self.done = true;
            return;
        }
        let now = Instant::now();
        let stopping = self.stop.load(Ordering::Relaxed);
        if now >= self.next_flush && (stopping || self.unflushed || !self.in_flight.is_empty()) {
            self.unflushed = false;
            self.next_flush = now + Duration::from_millis(self.cfg.flush_interval_ms);
            let _ = c.emit_stream(FLUSH_STREAM, values![0i64], None);
            return;
        }
        if stopping && self.cfg.at_most_once {
            // Entries read with NOACK are acknowledged already and never delivered again:
            // emit what was read before stopping, then one last flush punctuation.
            let next = self.shared.ready().pop_front();
            if let Some((id, line)) = next {
                match c.emit(values![id.as_str(), line.clone()], None) {
                    Ok(_) => self.unflushed = true,
                    Err(_) => self.shared.ready().push_front((id, line)),
                }
                return;
            }
            if self.unflushed {
                self.unflushed = false;
                let _ = c.emit_stream(FLUSH_STREAM, values![0i64], None);
                return;
            }
        }
        if self.shared.done.load(Ordering::SeqCst) {
            self.done = true;
            return;
        }
        if stopping {
            return;
        }
        if let Some(gate) = &self.gate {
            let (paused, line) = gate.spout_check(now);
            if let Some(line) = line {
                crate::stderr_line!("{line}");
            }
            if paused {
                return;
            }
        }
        if !self.cfg.at_most_once && self.in_flight.len() >= self.cfg.max_in_flight {
            return;
        }
        // The lock is held across the emit (no Redis command needs it meanwhile), so that the
        // Redis thread never sees the entry neither ready nor in flight.
        let mut ready = self.shared.ready();
        let Some((id, line)) = ready.pop_front() else {
            return;
        };
        let emptied = ready.is_empty();
        if self.cfg.at_most_once {
            match c.emit(values![id.as_str(), line.clone()], None) {
                Ok(_) => self.unflushed = true,
                Err(_) => ready.push_front((id, line)),
            }
        } else {
            let msg_id = self.next_msg_id;
            match c.emit(values![id.as_str(), line.clone()], Some(msg_id)) {
                Ok(_) => {
                    self.next_msg_id += 1;
                    self.in_flight.insert(msg_id, id);
                    self.publish_in_flight();
                }
                Err(_) => ready.push_front((id, line)),
            }
        }
        let emptied = emptied && ready.is_empty();
        drop(ready);
        if emptied {
            self.tell(ToRedis::Wake);
        }
    }

    fn ack(&mut self, msg_id: MessageId) {
        if let Some(id) = self.in_flight.remove(&msg_id) {
            self.tell(ToRedis::Ack(id));
            self.publish_in_flight();
        }
    }

    fn fail(&mut self, msg_id: MessageId) {
        if let Some(id) = self.in_flight.remove(&msg_id) {
            self.tell(ToRedis::Fail(id));
            self.publish_in_flight();
        }
    }

    /// Lets the Redis thread send the acks left, waiting for it at most [`CLOSE_WAIT_MS`].
    fn close(&mut self) {
        self.tell(ToRedis::Close);
        if let Some(ended) = self.side_ended.take() {
            let _ = ended.recv_timeout(Duration::from_millis(CLOSE_WAIT_MS));
        }
        self.to_side = None;
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn open(&mut self, _context: &TopologyContext) {}
}

#[cfg(test)]
mod tests {
    /// An error reply (the connection is up) is told apart from a lost connection: the outage
    /// line then says the server refused a command.
    #[test]
    fn error_replies_are_told_apart_from_lost_connections() {
        let reply = redis::RedisError::from((
            redis::ErrorKind::ResponseError,
            "An error was signalled by the server",
            "OOM command not allowed".to_string(),
        ));
        assert!(super::is_error_reply(&reply));
        let timeout = redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::WouldBlock));
        assert!(!super::is_error_reply(&timeout));
        let dropped =
            redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert!(!super::is_error_reply(&dropped));
    }

    use super::*;

    /// `--max-retries` N dead-letters at delivery N + 1; past what the server's signed count can
    /// reach, never (no wrap to a negative limit).
    #[test]
    fn the_delivery_limit_is_max_retries_plus_one_and_never_wraps() {
        assert_eq!(delivery_limit(0), 1);
        assert_eq!(delivery_limit(5), 6);
        assert_eq!(delivery_limit(i64::MAX as u64 - 1), i64::MAX);
        assert_eq!(delivery_limit(i64::MAX as u64), i64::MAX);
        assert_eq!(delivery_limit(u64::MAX - 1), i64::MAX);
        assert_eq!(delivery_limit(u64::MAX), i64::MAX);
    }

    /// A read or write timeout is named as one (new-user trial: "Resource temporarily
    /// unavailable (os error 11)" read as if Redis had gone); other errors keep the client's
    /// text without its kind suffix.
    #[test]
    fn a_timeout_is_reported_as_no_reply_within_the_io_timeout() {
        for kind in [std::io::ErrorKind::WouldBlock, std::io::ErrorKind::TimedOut] {
            let e = redis::RedisError::from(std::io::Error::new(kind, "os says so"));
            assert_eq!(
                redis_reason(&e),
                "no reply within 2 s (the connection's read/write timeout)"
            );
        }
        let e = redis::RedisError::from(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "reset by peer",
        ));
        assert_eq!(redis_reason(&e), "reset by peer");
    }
}
