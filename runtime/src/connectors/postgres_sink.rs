//! A PostgreSQL sink bolt for word counts: `word_counts(word text primary key, count bigint)`.
//!
//! Inputs are `(word, entry, pos)`: a word, the stream entry id (`<ms>-<seq>`) of the line it
//! came from, and its 0-based position among the line's words. A one-field input is the spout's
//! flush punctuation. The bolt buffers inputs and writes them in one transaction per batch (at
//! `batch` inputs, or at a flush punctuation); it acks a batch's inputs only after that
//! transaction committed. Words are written in sorted order, so concurrent workers lock rows in
//! the same order and do not deadlock each other.
//!
//! ## Guarantees
//! - [`SinkMode::Accumulate`] (at-least-once, and at-most-once where nothing is replayed): one
//!   multi-row `INSERT ... ON CONFLICT (word) DO UPDATE SET count = count + excluded.count`. A
//!   replayed line counts again.
//! - [`SinkMode::ExactlyOnce`]: the same statement first records each contribution in
//!   `word_count_applied(stream, entry_ms, entry_seq, pos)` with `ON CONFLICT DO NOTHING`, and
//!   adds only the contributions whose record is new. A contribution is one word position of
//!   one entry, so however the fields grouping spreads a line over count tasks and however
//!   batches are cut, a replay (after a fail, a timeout, a crash or a restart, in this worker or
//!   another) finds its records and adds nothing; and because record and count change in one
//!   transaction, either both happen or neither does.
//!
//! This is Trident's transactional state keyed by source position instead of batch id: Trident
//! stores the last applied txid with each value and skips a batch whose txid it has already
//! applied, which needs a replayed batch to hold exactly the same tuples; here the record names
//! each contribution itself, so replays may be cut into batches differently (another worker,
//! another batch size) and still apply each contribution once.
//!
//! ## When records may be deleted
//! A record is needed only while its entry can still be delivered: once the entry is
//! acknowledged to the group (no longer pending) and at or below the group's last-delivered id,
//! no consumer can read it again. [`prune_applied`] deletes the records of entries below the
//! group's oldest pending entry and at or below its last-delivered id (read in that order in
//! one `MULTI`, so an entry delivered in between is above the bound). The worker prunes
//! periodically and when it stops, so the table holds about the entries in flight.
//!
//! Errors: a failed commit or a lost connection leaves the batch unacked and buffered; the bolt
//! reconnects with a capped backoff (50 ms doubling to 2 s) and retries on the next flush. Inputs
//! beyond 16 batches are failed (their trees have timed out or soon will), which bounds memory
//! during an outage; the spout replays them once the database is back. Each replay raises the
//! entry's delivery count in Redis, so an outage longer than about `max_retries` message
//! timeouts dead-letters entries.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use postgres::{Client, NoTls};

use super::parse_entry_id;
use crate::{Bolt, Input, OutputCollector, TopologyContext};

/// How the sink applies its inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SinkMode {
    /// Add every input's word (at-least-once and at-most-once).
    Accumulate,
    /// Record each `(stream, entry, pos)` contribution and add it once.
    ExactlyOnce,
}

/// Counters the sink tasks share with the worker.
#[derive(Debug, Default)]
pub struct SinkCounters {
    /// Transactions committed.
    pub commits: AtomicU64,
    /// Word contributions added to `word_counts`.
    pub applied: AtomicU64,
    /// Contributions skipped because their record existed (replays; exactly-once only).
    pub duplicates: AtomicU64,
    /// Failed commits and connection errors.
    pub errors: AtomicU64,
}

/// Why the sink could not reach PostgreSQL at start.
#[derive(Debug)]
pub struct ConnectError {
    /// The address tried.
    pub url: String,
    /// The client's error.
    pub reason: String,
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot reach PostgreSQL at {}: {}",
            self.url, self.reason
        )
    }
}

impl std::error::Error for ConnectError {}

/// Connects to `url` (5 s connect timeout unless the URL sets one).
///
/// # Errors
/// [`ConnectError`] naming the address.
pub fn connect(url: &str) -> Result<Client, ConnectError> {
    let err = |reason: String| ConnectError {
        url: url.to_string(),
        reason,
    };
    let mut config: postgres::Config = url.parse().map_err(|e| err(error_chain(&e)))?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(5));
    }
    config.connect(NoTls).map_err(|e| err(error_chain(&e)))
}

/// An error with every cause behind it, `: `-separated: the client's own text alone is often
/// only `db error` or `error connecting to server`, while the cause says which database or role
/// does not exist, or that the connection was refused.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}

/// Creates `word_counts` and `word_count_applied` unless they exist (under an advisory lock, so
/// workers starting together do not race).
///
/// # Errors
/// The database's error.
pub fn ensure_schema(client: &mut Client) -> Result<(), postgres::Error> {
    let mut tx = client.transaction()?;
    tx.batch_execute(
        "SELECT pg_advisory_xact_lock(4242001);
         CREATE TABLE IF NOT EXISTS word_counts (word text PRIMARY KEY, count bigint NOT NULL);
         CREATE TABLE IF NOT EXISTS word_count_applied (
             stream text NOT NULL, entry_ms bigint NOT NULL, entry_seq bigint NOT NULL,
             pos int NOT NULL, PRIMARY KEY (stream, entry_ms, entry_seq, pos));",
    )?;
    tx.commit()
}

const ACCUMULATE_SQL: &str = "INSERT INTO word_counts (word, count)
    SELECT w, count(*) FROM unnest($1::text[]) AS w GROUP BY w ORDER BY w
    ON CONFLICT (word) DO UPDATE SET count = word_counts.count + EXCLUDED.count";

const EXACTLY_ONCE_SQL: &str = "WITH input AS (
        SELECT DISTINCT ON (entry_ms, entry_seq, pos) entry_ms, entry_seq, pos, word
        FROM unnest($2::bigint[], $3::bigint[], $4::int[], $5::text[])
             AS t(entry_ms, entry_seq, pos, word)
        ORDER BY entry_ms, entry_seq, pos),
    ins AS (
        INSERT INTO word_count_applied (stream, entry_ms, entry_seq, pos)
        SELECT $1, entry_ms, entry_seq, pos FROM input
        ON CONFLICT DO NOTHING
        RETURNING entry_ms, entry_seq, pos),
    agg AS (
        SELECT i.word, count(*) AS c FROM input i JOIN ins USING (entry_ms, entry_seq, pos)
        GROUP BY i.word),
    up AS (
        INSERT INTO word_counts (word, count) SELECT word, c FROM agg ORDER BY word
        ON CONFLICT (word) DO UPDATE SET count = word_counts.count + EXCLUDED.count
        RETURNING 1)
    SELECT (SELECT count(*) FROM ins), (SELECT count(*) FROM input), (SELECT count(*) FROM up)";

/// Deletes the exactly-once records of `stream` below `bound` (`(ms, seq)`, exclusive): the
/// entries no consumer of the group can be delivered again (see the module docs). Returns the
/// rows deleted.
///
/// # Errors
/// The database's error.
pub fn prune_applied(
    client: &mut Client,
    stream: &str,
    bound: (i64, i64),
) -> Result<u64, postgres::Error> {
    client.execute(
        "DELETE FROM word_count_applied WHERE stream = $1 AND (entry_ms, entry_seq) < ($2, $3)",
        &[&stream, &bound.0, &bound.1],
    )
}

/// The sink bolt (see the module docs).
pub struct PostgresSinkBolt {
    url: String,
    stream: String,
    mode: SinkMode,
    batch: usize,
    counters: Arc<SinkCounters>,
    client: Option<Client>,
    reconnect_at: Option<Instant>,
    backoff_ms: u64,
    buf: Vec<Input>,
    commit_on_cleanup: bool,
}

impl PostgresSinkBolt {
    /// A sink writing to `url` for source stream `stream`, committing at `batch` inputs (at
    /// least 1) or at a flush punctuation.
    pub fn new(
        url: &str,
        stream: &str,
        mode: SinkMode,
        batch: usize,
        counters: Arc<SinkCounters>,
    ) -> Self {
        Self {
            url: url.to_string(),
            stream: stream.to_string(),
            mode,
            batch: batch.max(1),
            counters,
            client: None,
            reconnect_at: None,
            backoff_ms: 50,
            buf: Vec::new(),
            commit_on_cleanup: false,
        }
    }

    /// Commits what is still buffered when the topology shuts down (in `cleanup`, after the
    /// shell has drained every tuple in flight), instead of leaving it to a replay. For
    /// at-most-once, whose entries were acknowledged to the group when read (`NOACK`) and are
    /// never delivered again: without it the last partial batch of a `--drain` run or a stop
    /// would be lost with no fault at all. Off by default: under at-least-once a commit that is
    /// never acked is replayed and counted twice.
    pub fn commit_buffered_on_cleanup(mut self) -> Self {
        self.commit_on_cleanup = true;
        self
    }

    fn lost(&mut self, now: Instant) {
        self.counters.errors.fetch_add(1, Ordering::Relaxed);
        self.client = None;
        self.reconnect_at = Some(now + Duration::from_millis(self.backoff_ms));
        self.backoff_ms = (self.backoff_ms * 2).min(2000);
    }

    fn commit(&mut self, now: Instant) -> bool {
        if self.client.is_none() {
            if self.reconnect_at.is_some_and(|t| now < t) {
                return false;
            }
            match connect(&self.url) {
                Ok(c) => {
                    self.client = Some(c);
                    self.backoff_ms = 50;
                    self.reconnect_at = None;
                }
                Err(_) => {
                    self.lost(now);
                    return false;
                }
            }
        }
        let Some(client) = self.client.as_mut() else {
            return false;
        };
        let words: Vec<&str> = self
            .buf
            .iter()
            .map(|i| i.values()[0].as_str().unwrap_or_default())
            .collect();
        let r = match self.mode {
            SinkMode::Accumulate => client
                .execute(ACCUMULATE_SQL, &[&words])
                .map(|_| (words.len() as i64, words.len() as i64)),
            SinkMode::ExactlyOnce => {
                let (mut ms, mut seq, mut pos) = (Vec::new(), Vec::new(), Vec::new());
                for i in &self.buf {
                    let v = i.values();
                    let (m, s) = v
                        .get(1)
                        .and_then(|x| x.as_str())
                        .and_then(parse_entry_id)
                        .unwrap_or((0, 0));
                    ms.push(m);
                    seq.push(s);
                    pos.push(v.get(2).and_then(|x| x.as_int()).unwrap_or(0) as i32);
                }
                client
                    .query_one(EXACTLY_ONCE_SQL, &[&self.stream, &ms, &seq, &pos, &words])
                    .map(|row| (row.get::<_, i64>(0), row.get::<_, i64>(1)))
            }
        };
        match r {
            Ok((applied, distinct)) => {
                self.counters.commits.fetch_add(1, Ordering::Relaxed);
                self.counters
                    .applied
                    .fetch_add(applied as u64, Ordering::Relaxed);
                let _ = distinct;
                self.counters.duplicates.fetch_add(
                    (self.buf.len() as i64 - applied).max(0) as u64,
                    Ordering::Relaxed,
                );
                true
            }
            Err(_) => {
                self.lost(now);
                false
            }
        }
    }

    fn flush(&mut self, c: &mut OutputCollector<'_>) {
        if self.buf.is_empty() {
            return;
        }
        if self.commit(Instant::now()) {
            for i in self.buf.drain(..) {
                let _ = c.ack(i);
            }
        } else if self.buf.len() > 16 * self.batch {
            let excess = self.buf.len() - 16 * self.batch;
            for i in self.buf.drain(..excess) {
                let _ = c.fail(i);
            }
        }
    }
}

impl Bolt for PostgresSinkBolt {
    fn prepare(&mut self, _context: &TopologyContext) {}

    fn execute(&mut self, input: Input, c: &mut OutputCollector<'_>) {
        if input.values().len() == 1 {
            // The spout's flush punctuation (unanchored: acking it is a no-op).
            let _ = c.ack(input);
            self.flush(c);
            return;
        }
        self.buf.push(input);
        if self.buf.len() >= self.batch {
            self.flush(c);
        }
    }

    fn cleanup(&mut self) {
        // Without `commit_buffered_on_cleanup`, inputs still buffered here were never acked:
        // their entries stay pending in the group and are delivered again (exactly-once skips
        // what a later commit already applied).
        if self.commit_on_cleanup && !self.buf.is_empty() && self.commit(Instant::now()) {
            self.buf.clear();
        }
    }
}
