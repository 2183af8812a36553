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
//! - [`SinkMode::Accumulate`] (at-least-once, and at-most-once where nothing is replayed): the
//!   bolt totals its batch per word and adds the totals with one multi-row
//!   `INSERT ... ON CONFLICT (word) DO UPDATE SET count = count + excluded.count`. A replayed
//!   line counts again.
//! - [`SinkMode::ExactlyOnce`]: in the same transaction, before adding, the bolt records the
//!   word positions of each entry in its batch in
//!   `word_count_applied_entries(stream, entry_ms, entry_seq, positions int[], added int[])`
//!   (one row per entry, `INSERT ... ON CONFLICT DO UPDATE`, which locks an existing record and
//!   returns the positions it did not hold yet), and adds only the words at those new positions.
//!   A contribution is one word position of one entry, so however the fields grouping spreads
//!   a line over count tasks and however batches are cut, a replay (after a fail, a timeout, a
//!   crash or a restart, in this worker or another) finds its positions recorded and adds
//!   nothing; two workers applying the same entry at once are serialised on its record's row;
//!   and because record and counts change in one transaction, either both happen or neither
//!   does. One record per entry rather than per word (this crate's first version) cut the
//!   database's CPU time per run by about two thirds (`benches/RESULTS.md`, connectors).
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
//! An older delivery of an entry may still have contributions queued at a sink when the entry's
//! records go: its tree timed out (or another consumer claimed the entry) and the replay
//! completed and was acknowledged first. Without its record such a contribution would count
//! again. So [`prune_applied`] first raises the stream's mark in
//! `word_count_pruned_below(stream, entry_ms, entry_seq)` to its bound, in the same transaction
//! as the delete, and every exactly-once transaction share-locks the mark first and skips the
//! contributions of entries below it: an entry below the mark was acknowledged, which happens
//! only after every one of its words committed, so each of those contributions is a duplicate.
//! The share lock orders the two: a prune waits for the transactions reading the old mark, and a
//! transaction that reads the new one skips what the delete removed.
//!
//! ## Commits off the executor's thread
//! Each sink task has a writer thread owning its connection: the bolt hands it whole batches and
//! keeps going (the executor's core reads the source and splits lines while a transaction
//! runs); the writer takes every batch queued behind the first into the same transaction (group
//! commit, so batches grow with the commit latency) and reports the outcome; the bolt acks a
//! committed batch's inputs at its next `execute`, at the latest the spout's next flush
//! punctuation (every 20 ms while trees are in flight, which these inputs keep them), never
//! waiting for a message timeout. One connection per sink task, one transaction at a time on
//! it, so the lock order argument above is unchanged.
//!
//! Errors: a failed commit or a lost connection puts the batch back in the bolt's buffer,
//! unacked; the writer reconnects with a capped backoff (50 ms doubling to 2 s) and the batch is
//! written again at the next flush. With [`BatchSink::report_outages`] (the word count's sink)
//! the first failure of an outage and the first connection after it are reported on stderr,
//! one line each, rate-limited ([`super::OutageLog`]). At most [`MAX_QUEUED_BATCHES`] batches wait for the writer;
//! beyond [`MAX_HELD_BATCHES`] batches held the executor waits for the writer while commits
//! succeed (back-pressure, which at-most-once needs: nothing else throttles its spout), at most
//! [`BACKPRESSURE_WAIT_MS`] (2 s) for each outcome, so a writer blocked by a lock holds the
//! core thread (its acks, ticks and other executors) no longer than that; and it fails the
//! oldest inputs while commits fail or after a wait ran out, until the writer reports again
//! (their trees have timed out or soon will), which bounds memory during an outage; the spout replays them once the database
//! is back.
//!
//! Each replay raises the entry's delivery count in Redis, so a spout that kept re-reading
//! failed entries during an outage dead-lettered healthy ones once an outage outlasted about
//! `max_retries` backoffs and timeouts (new-user trials: PostgreSQL stopped for longer than
//! that; two workers whose 64 sink tasks each exceeded `max_connections`, 4,003 entries
//! dead-lettered). So with [`BatchSink::gate`] (the word count's at-least-once and exactly-once
//! sinks) each writer reports whether it can commit to a [`super::SinkGate`] shared with the
//! spout: a failed transaction or connection attempt closes it, and the spout reads no new entry
//! and re-reads no failed one until every writer has committed again. A writer that cannot
//! commit probes the server by itself each time its backoff has passed ([`BatchWriter::probe`]:
//! the prune-mark read of every exactly-once transaction, in a transaction that commits), since
//! no batch would come to it while the spout is paused. Trees in flight when the outage began
//! still fail or time out (that delivery was counted already); an entry whose last allowed
//! delivery was one of them is still dead-lettered. A connection refused because the server is
//! full (SQLSTATE [`TOO_MANY_CONNECTIONS`]) is reported through [`FullLog`] ("PostgreSQL at URL
//! is full") instead of the outage lines, and `acker-run wordcount` checks at start that the
//! server has a connection free for each sink task ([`connection_room`]).
//!
//! ## Stopping
//! A stopping sink task (`cleanup`) waits for its writer at most [`STOP_WRITER_MS`] (5 s), then
//! cancels the writer's running statement (a PostgreSQL cancel request) and waits at most
//! [`STOP_CANCEL_MS`] (1 s) more before abandoning the thread, so a live database that blocks
//! the writer's transaction (another session holding `LOCK TABLE word_counts` or a row lock)
//! holds a worker's stop at most 6 s beyond the spout's own stop (about the message timeout
//! while the blocked inputs' trees time out). The writer's connection gets no
//! `statement_timeout` or `lock_timeout`: lock waits between workers are normal under load and
//! a long transaction (one entry of 100,000 words) is legitimate, so only a stop cuts a
//! transaction short. Inputs of a cancelled or abandoned transaction are never acked: their
//! entries stay pending in the group and are delivered again, so at-least-once and
//! exactly-once keep their guarantees.
//!
//! A writer that is busy rather than blocked (its commits succeed, slowly) must not hold the
//! stop either: the sink watches the worker's stop flag ([`BatchSink::stop_on`]) and, once it is
//! set, applies no back-pressure, so the topology's drain before `cleanup` no longer runs at the
//! writer's pace (inputs beyond [`MAX_HELD_BATCHES`] batches are failed at once and their
//! entries replayed later). Measured before: one entry of 1,000,000 words, SIGTERM after its
//! tree had timed out, 20.6 s to exit (4,000,000 words: 123 s), with `words applied` rising all
//! along. Now the tuples still in flight pass the sink without waiting for the writer (at the
//! executor's own pace), and `cleanup` then takes at most `STOP_WRITER_MS + STOP_CANCEL_MS`;
//! a 100,000-word entry with every commit slowed to 1 s stopped in 3.2 s (test
//! `sigterm_with_a_busy_writer_stops_within_the_bound_and_stays_exact`).

use std::collections::VecDeque;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{
    channel, sync_channel, Receiver, RecvTimeoutError, Sender, SyncSender, TryRecvError,
};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use postgres::{Client, NoTls};

use super::{parse_entry_id, BadUrl};
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
    /// Inputs a sink with [`BatchSink::commit_buffered_on_cleanup`] still held uncommitted when
    /// its cleanup ended (PostgreSQL down or blocked through the stop bound): under at-most-once
    /// their contributions are lost (counted only with [`BatchSink::count_uncommitted_on_cleanup`]).
    pub uncommitted_on_cleanup: AtomicU64,
}

/// Why the sink could not reach PostgreSQL at start.
#[derive(Debug)]
pub struct ConnectError {
    /// The address tried, as given (its `Display` hides a password in it).
    pub url: String,
    /// The client's error, with its causes.
    pub reason: String,
    /// The server's SQLSTATE when it refused the connection (`53300`: too many clients),
    /// `None` for a failure without one (connection refused, a timeout, a bad address).
    pub sqlstate: Option<String>,
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot reach PostgreSQL at {}: {}",
            super::redact_password(&self.url),
            self.reason
        )
    }
}

impl std::error::Error for ConnectError {}

/// What the sink does while PostgreSQL is down, as its "lost" line on stderr says
/// ([`super::OutageLog`]).
pub const OUTAGE_MEANWHILE: &str = "acking nothing meanwhile (inputs stay unacked and are \
     delivered again once it is back)";

/// [`OUTAGE_MEANWHILE`] for `--guarantee at-most-once`, where the entries were acknowledged
/// when read and nothing is delivered again (new-user trial: the line said they would be).
pub const OUTAGE_MEANWHILE_AT_MOST_ONCE: &str = "losing what it cannot write meanwhile \
     (at-most-once: the entries were acknowledged when read and are not delivered again; \
     counted as words lost)";

/// A good `--postgres` URL, shown in the error for a bad one.
pub const URL_EXAMPLE: &str = "postgresql://postgres@127.0.0.1:5432/postgres";

/// Checks that `url` is a connection string the client accepts, without connecting: a URL
/// `postgresql://` or `postgres://...` or `key=value` pairs (`host=... user=...`), as
/// `postgres::Config` parses them, naming at least one host.
///
/// # Errors
/// [`BadUrl`] for `--postgres`: what is wrong with it and an example of a good one
/// ([`URL_EXAMPLE`]); `acker-run` reports it as a bad argument (exit status 2) before any
/// connection attempt.
pub fn check_url(url: &str) -> Result<(), BadUrl> {
    let bad = |reason: String| BadUrl {
        option: "--postgres",
        url: url.to_string(),
        reason,
        server: "PostgreSQL",
        example: URL_EXAMPLE,
        forms: "postgresql://USER[:PASSWORD]@HOST[:PORT]/DB, or key=value pairs such as \
                'host=127.0.0.1 user=postgres'",
    };
    let scheme = url.split_once("://").map(|(s, _)| s);
    if let Some(s) = scheme.filter(|s| !["postgres", "postgresql"].contains(s)) {
        return Err(bad(format!(
            "its scheme is {s}:// (postgresql:// or postgres:// are accepted)"
        )));
    }
    let config: postgres::Config = url.parse().map_err(|e| bad(error_chain(&e)))?;
    if config.get_hosts().is_empty() {
        return Err(bad("it names no host".to_string()));
    }
    Ok(())
}

/// PostgreSQL's SSLRequest: length 8, code 80877103 (the protocol's "Start-up" section).
const SSL_REQUEST: [u8; 8] = [0, 0, 0, 8, 0x04, 0xD2, 0x16, 0x2F];

/// Connects to `url` (5 s connect timeout unless the URL sets one; a server that accepts the
/// connection but does not answer within that time is an error too, not a hang).
///
/// # Errors
/// [`ConnectError`] naming the address.
pub fn connect(url: &str) -> Result<Client, ConnectError> {
    let err = |reason: String| ConnectError {
        url: url.to_string(),
        reason,
        sqlstate: None,
    };
    let mut config: postgres::Config = url.parse().map_err(|e| err(error_chain(&e)))?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(5));
    }
    // The client's connect timeout covers the socket only: a server that accepts and never
    // answers the start-up would hang the handshake (found by a new-user trial). Ask first with
    // an SSLRequest, which every PostgreSQL answers at once with one byte ('S' or 'N').
    let timeout = config
        .get_connect_timeout()
        .copied()
        .unwrap_or(Duration::from_secs(5));
    let ports = config.get_ports().to_vec();
    for (i, host) in config.get_hosts().iter().enumerate() {
        if let postgres::config::Host::Tcp(h) = host {
            let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
            // PostgreSQL answers an SSLRequest with one byte: 'S' or 'N' ('E', an error
            // message, from servers too old to know it).
            super::probe_answers(
                (h.as_str(), port),
                &SSL_REQUEST,
                timeout,
                ("PostgreSQL", "an SSLRequest"),
                |reply| matches!(reply, [b'S' | b'N'] | [b'E', ..]),
            )
            .map_err(err)?;
        }
    }
    config.connect(NoTls).map_err(|e| ConnectError {
        sqlstate: e.code().map(|c| c.code().to_string()),
        ..err(error_chain(&e))
    })
}

/// SQLSTATE `too_many_connections`: the server refused a connection because it is full
/// (`FATAL: sorry, too many clients already`, or its last slots are reserved for superusers).
pub const TOO_MANY_CONNECTIONS: &str = "53300";

/// What a worker's sink tasks need of PostgreSQL's connections, and what the server has free,
/// as read at start by [`connection_room`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectionRoom {
    /// `max_connections`.
    pub max_connections: i64,
    /// Slots this role may not use: `superuser_reserved_connections` (and, from PostgreSQL 16,
    /// `reserved_connections`) for a role that is not a superuser; 0 for a superuser.
    pub reserved: i64,
    /// Client connections open, the one that read this excluded.
    pub in_use: i64,
}

impl ConnectionRoom {
    /// Connections this role can still open: `max_connections - reserved - in_use` (at least 0).
    pub fn free(&self) -> i64 {
        (self.max_connections - self.reserved - self.in_use).max(0)
    }
}

/// Reads on `client` how many more connections the server takes from this role (see
/// [`ConnectionRoom`]): `SHOW max_connections`, the reserved slots, and the client backends in
/// `pg_stat_activity` (this one excluded, as it is closed before the sink connects). Racy
/// between workers starting at the same time: each sees the same free slots.
///
/// A role that is neither a superuser nor a member of `pg_read_all_stats` sees other roles'
/// sessions in `pg_stat_activity` with `backend_type` NULL (PostgreSQL hides it with their
/// query), so such rows count as clients when they are connected to a database (`datid` set;
/// the server's own processes, checkpointer, WAL writer and the like, have none). Before, only
/// `backend_type = 'client backend'` counted, and such a role saw 0 connections in use: a
/// new-user trial's worker passed the check against a server whose last free slots were
/// taken, and stayed paused, its sink refused, for 279 s. The count can now be high by the
/// autovacuum and parallel workers running at that moment (a refusal a little early, never a
/// start that cannot connect).
///
/// # Errors
/// The database's error.
pub fn connection_room(client: &mut Client) -> Result<ConnectionRoom, postgres::Error> {
    let row = client.query_one(
        "SELECT current_setting('max_connections')::bigint,
                CASE WHEN current_setting('is_superuser') = 'on' THEN 0
                     ELSE current_setting('superuser_reserved_connections')::bigint
                        + coalesce(current_setting('reserved_connections', true)::bigint, 0)
                END,
                (SELECT count(*) FROM pg_stat_activity
                 WHERE pid <> pg_backend_pid()
                   AND (backend_type = 'client backend'
                        OR (backend_type IS NULL AND datid IS NOT NULL)))::bigint",
        &[],
    )?;
    Ok(ConnectionRoom {
        max_connections: row.get(0),
        reserved: row.get(1),
        in_use: row.get(2),
    })
}

/// Reports PostgreSQL refusing a sink task's connection because it is full (SQLSTATE
/// [`TOO_MANY_CONNECTIONS`]) on stderr, instead of the "lost ... / is back" lines of an
/// outage ([`super::OutageLog`]): the server is up, and other tasks' connections (made before,
/// or at the same moment) are no sign that it is "back" (new-user trial: two workers with
/// `--sink-tasks 64` against `max_connections` 100 printed "lost" and "is back after 0.0 s"
/// lines). One line at the first refusal, and at most one more every
/// [`super::OUTAGE_REPORT_GAP_MS`] while refusals go on. Shared by the sink tasks of a worker.
#[derive(Debug)]
pub struct FullLog {
    url: String,
    max_connections: std::sync::OnceLock<i64>,
    state: std::sync::Mutex<(Option<Instant>, u64)>,
}

impl FullLog {
    /// A log for the PostgreSQL at `url` (shown redacted).
    pub fn new(url: &str) -> Self {
        Self {
            url: super::redact_password(url),
            max_connections: std::sync::OnceLock::new(),
            state: std::sync::Mutex::new((None, 0)),
        }
    }

    /// The server's `max_connections`, read at start ([`connection_room`]), for the line (it
    /// says "unknown" without); the first value given stays.
    pub fn set_max_connections(&self, n: i64) {
        let _ = self.max_connections.set(n);
    }

    /// A sink task's connection was refused at `now` with `reason` (the server's message).
    /// Returns the line to print, if one is due.
    pub fn refused(&self, now: Instant, reason: &str) -> Option<String> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.1 += 1;
        let gap = Duration::from_millis(super::OUTAGE_REPORT_GAP_MS);
        if s.0.is_some_and(|t| now.saturating_duration_since(t) < gap) {
            return None;
        }
        let refusals = std::mem::take(&mut s.1);
        let again = if s.0.is_some() {
            format!(" ({refusals} refused connection attempts since the last such line)")
        } else {
            String::new()
        };
        s.0 = Some(now);
        let max = self
            .max_connections
            .get()
            .map_or_else(|| "unknown".to_string(), |n| n.to_string());
        Some(format!(
            "acker-run: PostgreSQL at {} is full (too many clients; max_connections {max}): it \
             refused a sink task's connection ({reason}){again}; the task retries with capped \
             backoff (50 ms doubling to 2 s) and the spout reads nothing until every sink task \
             can commit: lower --sink-tasks (in every worker), stop other clients or raise \
             max_connections",
            self.url
        ))
    }
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

/// Creates `word_counts`, `word_count_applied_entries` and `word_count_pruned_below` unless they exist (under an advisory lock, so
/// workers starting together do not race).
///
/// # Errors
/// The database's error.
pub fn ensure_schema(client: &mut Client) -> Result<(), postgres::Error> {
    let mut tx = client.transaction()?;
    tx.batch_execute(
        "SELECT pg_advisory_xact_lock(4242001);
         CREATE TABLE IF NOT EXISTS word_counts (word text PRIMARY KEY, count bigint NOT NULL);
         CREATE TABLE IF NOT EXISTS word_count_applied_entries (
             stream text NOT NULL, entry_ms bigint NOT NULL, entry_seq bigint NOT NULL,
             positions int[] NOT NULL, added int[] NOT NULL,
             PRIMARY KEY (stream, entry_ms, entry_seq));
         CREATE TABLE IF NOT EXISTS word_count_pruned_below (
             stream text PRIMARY KEY, entry_ms bigint NOT NULL, entry_seq bigint NOT NULL);",
    )?;
    tx.commit()
}

/// Whether the database holds exactly-once records of `stream` (`word_count_applied_entries`
/// rows, or a prune mark past 0-0 in `word_count_pruned_below`): some of its entries were
/// counted before. Read once at a worker's start, before it creates its group, so that words
/// a run skips as already counted can be told apart from its own replays. A lock held on the
/// records table past `LOCK_WAIT_MS` (1 s) gives `Ok(None)`: unknown.
///
/// # Errors
/// A PostgreSQL error other than the lock timeout (the tables must exist: [`ensure_schema`]).
pub fn stream_counted_before(
    client: &mut Client,
    stream: &str,
) -> Result<Option<bool>, postgres::Error> {
    const LOCK_WAIT_MS: u64 = 1_000;
    let mut tx = client.transaction()?;
    tx.batch_execute(&format!("SET LOCAL lock_timeout = {LOCK_WAIT_MS}"))?;
    let r = tx.query_one(
        "SELECT EXISTS (SELECT 1 FROM word_count_applied_entries WHERE stream = $1)
             OR EXISTS (SELECT 1 FROM word_count_pruned_below
                        WHERE stream = $1 AND (entry_ms, entry_seq) > (0, 0))",
        &[&stream],
    );
    match r {
        Ok(row) => Ok(Some(row.get(0))),
        // 55P03 lock_not_available: another session holds the table locked.
        Err(e) if e.code() == Some(&postgres::error::SqlState::LOCK_NOT_AVAILABLE) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Adds `$2[i]` to the count of word `$1[i]` (the words distinct). The rows are upserted, and
/// so locked, in `ORDER BY w` whatever order the caller passes, so two transactions (two sink
/// tasks or two workers) lock their common words in the same order and cannot deadlock.
const ADD_COUNTS_SQL: &str = "INSERT INTO word_counts (word, count)
    SELECT w, c FROM unnest($1::text[], $2::bigint[]) AS t(w, c) ORDER BY w
    ON CONFLICT (word) DO UPDATE SET count = word_counts.count + EXCLUDED.count";

/// Records the word positions `$4[i]` (an `int[]` literal) of entry `($2[i], $3[i])` of stream
/// `$1` (entries distinct; recorded, and so locked, in `ORDER BY ms, seq` whatever the caller's
/// order, for the same reason as [`ADD_COUNTS_SQL`]) and returns, for each entry, the positions
/// that were not recorded before (`added`, a hash `EXCEPT`: linear in the positions, so one
/// entry of many words costs no more per word than many short ones), or NULL when that is
/// every position sent (`added = positions`: a new record, or one that held no position), so a
/// first delivery, the common case, returns no arrays. `ON CONFLICT DO UPDATE` locks an existing record and
/// reads its latest committed version, so two workers applying the same entry at once are
/// serialised on its row: whichever commits second finds the first's positions and adds none.
const RECORD_ENTRIES_SQL: &str = "INSERT INTO word_count_applied_entries AS a
        (stream, entry_ms, entry_seq, positions, added)
    SELECT $1, ms, seq, p::int[], p::int[]
    FROM unnest($2::bigint[], $3::bigint[], $4::text[]) AS t(ms, seq, p) ORDER BY ms, seq
    ON CONFLICT (stream, entry_ms, entry_seq) DO UPDATE SET
        added = ARRAY(SELECT unnest(EXCLUDED.positions) EXCEPT SELECT unnest(a.positions)),
        positions = a.positions
            || ARRAY(SELECT unnest(EXCLUDED.positions) EXCEPT SELECT unnest(a.positions))
    RETURNING entry_ms, entry_seq, CASE WHEN added = positions THEN NULL ELSE added END";

/// Deletes the exactly-once records of `stream` below `bound` (`(ms, seq)`, exclusive): the
/// entries no consumer of the group can be delivered again (see the module docs). In the same
/// transaction it first raises the stream's prune mark in `word_count_pruned_below` to `bound`
/// (never lowers it); every exactly-once transaction share-locks that mark and skips the
/// contributions of entries below it, so a contribution of an older delivery still queued at
/// a sink when its entry's records go (its tree timed out, or another consumer claimed the
/// entry, and the replay completed) is skipped instead of counted again. Nothing is deleted
/// before the stream has a mark row (a sink's first exactly-once transaction creates it).
/// Returns the rows deleted.
///
/// # Errors
/// The database's error.
pub fn prune_applied(
    client: &mut Client,
    stream: &str,
    bound: (i64, i64),
) -> Result<u64, postgres::Error> {
    let mut tx = client.transaction()?;
    let raised = tx.execute(RAISE_PRUNE_MARK_SQL, &[&stream, &bound.0, &bound.1])?;
    let deleted = if raised == 1 {
        tx.execute(
            "DELETE FROM word_count_applied_entries WHERE stream = $1 AND (entry_ms, entry_seq) < ($2, $3)",
            &[&stream, &bound.0, &bound.1],
        )?
    } else {
        0
    };
    tx.commit()?;
    Ok(deleted)
}

/// Raises stream `$1`'s prune mark to `($2, $3)` when that is higher (the row locked either
/// way, so the delete that follows waits for every exactly-once transaction holding the mark);
/// no row: nothing is updated.
const RAISE_PRUNE_MARK_SQL: &str = "UPDATE word_count_pruned_below SET
        entry_ms = CASE WHEN (entry_ms, entry_seq) < ($2, $3) THEN $2 ELSE entry_ms END,
        entry_seq = CASE WHEN (entry_ms, entry_seq) < ($2, $3) THEN $3 ELSE entry_seq END
    WHERE stream = $1";

/// Stream `$1`'s prune mark, created at `(0, 0)` if missing, share-locked until the end of the
/// transaction (so no prune raises it and deletes records meanwhile).
const READ_PRUNE_MARK_SQL: &str = "WITH ins AS (
        INSERT INTO word_count_pruned_below VALUES ($1, 0, 0) ON CONFLICT (stream) DO NOTHING)
    SELECT entry_ms, entry_seq FROM word_count_pruned_below WHERE stream = $1 FOR SHARE";

/// One input's contribution: its word, and its entry id and word position (`(0, 0)` and 0 when
/// missing, as the split bolt always sets them).
fn contribution(input: &Input) -> (&str, (i64, i64), i32) {
    let v = input.values();
    let word = v.first().and_then(|x| x.as_str()).unwrap_or_default();
    let entry = v
        .get(1)
        .and_then(|x| x.as_str())
        .and_then(parse_entry_id)
        .unwrap_or((0, 0));
    let pos = v.get(2).and_then(|x| x.as_int()).unwrap_or(0) as i32;
    (word, entry, pos)
}

/// The statements of every exactly-once transaction, prepared once per connection (each
/// unprepared statement cost a Parse round trip and a parse in the server per transaction).
/// A prepared statement belongs to its connection: the cache is emptied whenever the writer
/// drops its connection ([`BatchWriter::connection_lost`]).
struct Prepared {
    mark: postgres::Statement,
    record: postgres::Statement,
    add: postgres::Statement,
}

impl Prepared {
    fn new(client: &mut Client) -> Result<Self, postgres::Error> {
        Ok(Prepared {
            mark: client.prepare(READ_PRUNE_MARK_SQL)?,
            record: client.prepare(RECORD_ENTRIES_SQL)?,
            add: client.prepare(ADD_COUNTS_SQL)?,
        })
    }
}

/// Applies `buf` in one transaction and returns how many contributions it added. The counting
/// is done here, not in SQL: the database only records positions and adds per-word totals, the
/// two things that must be transactional. Every transaction locks entry records first, then
/// words, each in the statements' `ORDER BY`, so concurrent transactions (sink tasks, workers)
/// lock in one global order and cannot deadlock.
///
/// Exactly-once, the records' arguments and the word totals of a first delivery (every
/// position new) are computed before the transaction begins, so the server's connection waits
/// for this process as little as possible; the totals are recomputed inside only when the
/// records say some positions were applied before (a replay) or an entry is below the prune
/// mark. `prepared` caches the statements of the connection (`None`: prepare them now).
fn apply_batch<'a>(
    client: &mut Client,
    prepared: &mut Option<Prepared>,
    mode: SinkMode,
    stream: &str,
    buf: impl Iterator<Item = (&'a str, (i64, i64), i32)> + Clone,
) -> Result<usize, postgres::Error> {
    let mut counts: BTreeMap<&str, i64> = BTreeMap::new();
    let mut applied = 0;
    for (word, _, _) in buf.clone() {
        *counts.entry(word).or_default() += 1;
        applied += 1;
    }
    if prepared.is_none() {
        *prepared = Some(Prepared::new(client)?);
    }
    let Some(st) = prepared.as_ref() else {
        unreachable!("prepared just above")
    };
    if mode == SinkMode::Accumulate {
        let mut tx = client.transaction()?;
        add_counts(&mut tx, &st.add, counts)?;
        tx.commit()?;
        return Ok(applied);
    }
    // Exactly-once: each entry's positions, sorted and distinct, and the records' arguments.
    let mut entries: BTreeMap<(i64, i64), Vec<i32>> = BTreeMap::new();
    for (_, entry, pos) in buf.clone() {
        entries.entry(entry).or_default().push(pos);
    }
    let mut distinct = 0;
    let (mut ms, mut seq, mut lists) = (Vec::new(), Vec::new(), Vec::new());
    for (&(m, sq), positions) in entries.iter_mut() {
        positions.sort_unstable();
        positions.dedup();
        distinct += positions.len();
        let list: Vec<String> = positions.iter().map(i32::to_string).collect();
        ms.push(m);
        seq.push(sq);
        lists.push(format!("{{{}}}", list.join(",")));
    }
    let mut tx = client.transaction()?;
    // Entries below the prune mark were acknowledged (all their words applied) and their
    // records may be gone: their contributions are skipped (see `prune_applied`).
    let mark = match tx.query_opt(&st.mark, &[&stream])? {
        Some(row) => (row.get::<_, i64>(0), row.get::<_, i64>(1)),
        None => {
            // Created by this statement's own INSERT, which its SELECT cannot see yet.
            let row = tx.query_one(
                "SELECT entry_ms, entry_seq FROM word_count_pruned_below \
                 WHERE stream = $1 FOR SHARE",
                &[&stream],
            )?;
            (row.get::<_, i64>(0), row.get::<_, i64>(1))
        }
    };
    // Entries are sorted: those below the mark come first.
    let below = entries.range(..mark).count();
    let rows = tx.query(
        &st.record,
        &[&stream, &&ms[below..], &&seq[below..], &&lists[below..]],
    )?;
    // `added` is NULL for a record that took every position sent (see RECORD_ENTRIES_SQL).
    let all_new = rows
        .iter()
        .all(|row| row.get::<_, Option<Vec<i32>>>(2).is_none());
    if below > 0 || distinct != applied || !all_new {
        // A replay, a position twice in this batch, or entries below the mark: count only
        // the positions the records took now.
        let mut new: BTreeSet<((i64, i64), i32)> = BTreeSet::new();
        for row in rows {
            let entry = (row.get::<_, i64>(0), row.get::<_, i64>(1));
            match row.get::<_, Option<Vec<i32>>>(2) {
                Some(added) => new.extend(added.into_iter().map(|pos| (entry, pos))),
                None => new.extend(
                    entries
                        .get(&entry)
                        .into_iter()
                        .flatten()
                        .map(|&p| (entry, p)),
                ),
            }
        }
        (counts, applied) = (BTreeMap::new(), 0);
        for (word, entry, pos) in buf {
            // `remove`: a position twice in one batch (a replay meeting its original) counts
            // once.
            if new.remove(&(entry, pos)) {
                *counts.entry(word).or_default() += 1;
                applied += 1;
            }
        }
    }
    add_counts(&mut tx, &st.add, counts)?;
    tx.commit()?;
    Ok(applied)
}

/// Adds `counts` to `word_counts` with `add` ([`ADD_COUNTS_SQL`]); nothing when empty.
fn add_counts(
    tx: &mut postgres::Transaction<'_>,
    add: &postgres::Statement,
    counts: BTreeMap<&str, i64>,
) -> Result<(), postgres::Error> {
    if !counts.is_empty() {
        let (words, adds): (Vec<&str>, Vec<i64>) = counts.into_iter().unzip();
        tx.execute(add, &[&words, &adds])?;
    }
    Ok(())
}

/// What a [`BatchSink`] writes: each batch of inputs in one transaction, on the sink's writer
/// thread (which owns the connection). An [`Input`] stays on the executor's thread; the part of
/// it the transaction needs, a [`BatchWriter::Row`], is taken there by [`BatchWriter::row`] and
/// moved to the writer.
pub trait BatchWriter: Send + 'static {
    /// The part of one input that the transaction writes.
    type Row: Send + 'static;

    /// Takes `input`'s row (on the executor's thread).
    fn row(input: &Input) -> Self::Row;

    /// Writes `rows` in one transaction on `client` and commits it (updating the writer's own
    /// counters on success). Runs on the writer thread.
    ///
    /// # Errors
    /// The database's error: the sink then drops the connection and keeps the rows' inputs
    /// unacked (they are written again in a later transaction, or failed at the cap).
    fn write(&mut self, client: &mut Client, rows: &[Self::Row]) -> Result<(), postgres::Error>;

    /// Called when the writer drops its connection: a commit failed or the connection could not
    /// be made (for counting; state tied to the connection, such as prepared statements, must
    /// go with it).
    fn connection_lost(&mut self) {}

    /// A transaction that shows whether the writer can commit again, run by a writer that
    /// cannot ([`BatchSink::gate`]) while no batch comes (the spout reads nothing meanwhile).
    /// Default: an empty transaction.
    ///
    /// # Errors
    /// The database's error (the writer stays down and probes again after its backoff).
    fn probe(&mut self, client: &mut Client) -> Result<(), postgres::Error> {
        client.transaction()?.commit()
    }
}

/// Batches handed to the writer thread and not yet returned, at most; a batch is everything
/// buffered when it was handed over (at `batch` inputs or a flush punctuation), so this bounds
/// the queue, not the inputs (those are bounded by [`MAX_HELD_BATCHES`]).
pub const MAX_QUEUED_BATCHES: usize = 4;

/// Inputs a sink task holds unacked (buffered, being committed, or committed and not yet acked)
/// at most, in units of its `batch`: past `MAX_HELD_BATCHES × batch` the oldest buffered inputs
/// are failed (their trees have timed out or soon will), which bounds memory during an outage.
pub const MAX_HELD_BATCHES: usize = 16;

/// Longest the executor waits for one outcome of the writer when a sink task holds more than
/// [`MAX_HELD_BATCHES`] × `batch` inputs while commits succeed (back-pressure), ms. The wait runs
/// on the core thread, so while it lasts that core serves nothing else (acks, ticks, the other
/// executors placed on it); a writer blocked by a lock would hold the core as long as the lock
/// is held. Past the bound the sink treats the writer as failing until it reports again: the
/// core goes back to its work and the oldest buffered inputs beyond the cap fail (their
/// entries are replayed, or, under at-most-once, lost), as during an outage. 2 s: well above a
/// group commit of a full queue on a loaded machine (tens to hundreds of ms), so ordinary slow
/// commits still throttle the spout (at-most-once has no other throttle), and well below the
/// default 30 s message timeout.
pub const BACKPRESSURE_WAIT_MS: u64 = 2_000;

/// Longest a stopping sink task (its `cleanup`) waits for its writer thread to finish the
/// transactions queued to it, ms. A live PostgreSQL that blocks the writer's transaction (a
/// session holding a lock on `word_counts` or on a row the transaction updates) would otherwise
/// hold the worker's shutdown as long as the lock is held. Past this bound the sink asks the
/// server to cancel the writer's running statement (a cancel request on a new connection, as
/// `pg_cancel_backend` does; bounded by the 5 s connect timeout and sent from a short-lived
/// thread of its own, so it never delays the stop) and tells the writer to attempt no further
/// transaction; the cancelled transaction rolls back and its inputs stay unacked.
pub const STOP_WRITER_MS: u64 = 5_000;

/// After the cancel request of [`STOP_WRITER_MS`], how long the stopping sink waits for the
/// writer thread to end, ms; past it the thread is abandoned (detached, not joined): it ends,
/// dropping its connection, as soon as PostgreSQL answers. So a sink task's `cleanup` takes at
/// most `STOP_WRITER_MS + STOP_CANCEL_MS` = 6 s whatever the database does.
///
/// Nothing is lost by stopping early: an input is acked only after its transaction committed,
/// and the ack happens on the executor's thread, which `cleanup` no longer feeds; so every
/// input of a cancelled or abandoned transaction is unacked, its stream entry stays pending in
/// the group (handed back by the spout, or claimed after `claim_after_ms`) and is delivered
/// again. Exactly-once skips whatever a transaction that did commit in the end applied;
/// at-least-once may count it twice, as after any crash. At-most-once
/// ([`BatchSink::commit_buffered_on_cleanup`]) loses the inputs not committed by then (its
/// entries were acknowledged when read).
pub const STOP_CANCEL_MS: u64 = 1_000;

/// What the writer thread reports for each transaction: how many queued batches it covered (in
/// order; 0 for a probe, [`BatchWriter::probe`]) and whether it committed.
struct Done {
    batches: usize,
    committed: bool,
}

/// The writer thread's side: the connection, its reconnect backoff, and the [`BatchWriter`].
struct WriterThread<W: BatchWriter> {
    url: String,
    writer: W,
    client: Option<Client>,
    reconnect_at: Option<Instant>,
    backoff_ms: u64,
    /// Where losing the server and getting it back are reported ([`BatchSink::report_outages`]).
    outage: Option<Arc<super::OutageLog>>,
    /// Shared with the sink: the cancel token of the current connection, and whether the sink
    /// stopped waiting (then no further transaction is attempted).
    stop: Arc<WriterStop>,
    /// Where the writer reports whether it can commit ([`BatchSink::gate`]); with it, a writer
    /// that cannot probes the server by itself.
    gate: Option<Arc<super::SinkGate>>,
    /// Whether the writer's last transaction or connection attempt failed (kept for the gate).
    down: bool,
    /// Where a connection refused for a full server is reported ([`BatchSink::report_full`]).
    full: Option<Arc<FullLog>>,
}

/// What a stopping sink uses to end a blocked writer (see [`STOP_WRITER_MS`]).
#[derive(Default)]
struct WriterStop {
    cancel: std::sync::Mutex<Option<postgres::CancelToken>>,
    abandoned: std::sync::atomic::AtomicBool,
}

impl WriterStop {
    /// Tells the writer to attempt no further transaction and asks the server to cancel the
    /// statement running on the writer's connection (from a thread of its own: the request
    /// connects anew, bounded by the connect timeout).
    fn abandon(&self) {
        self.abandoned.store(true, Ordering::SeqCst);
        let token = self.cancel.lock().ok().and_then(|t| t.clone());
        if let Some(token) = token {
            let _ = std::thread::Builder::new()
                .name("acker-sink-cancel".into())
                .spawn(move || {
                    let _ = token.cancel_query(NoTls);
                });
        }
    }
}

impl<W: BatchWriter> WriterThread<W> {
    /// Drops the connection after a failed commit or connection attempt (`reason`, one line);
    /// the next commit reconnects after the backoff.
    fn lost(&mut self, now: Instant, reason: &str, connect_attempt: bool) {
        if let Some(line) = self
            .outage
            .as_ref()
            .and_then(|o| o.failed(now, reason, connect_attempt))
        {
            crate::stderr_line!("{line}");
        }
        self.dropped(now);
    }

    /// Whether the writer can commit: tells the gate (if any).
    fn set_ok(&mut self, ok: bool) {
        if let Some(g) = &self.gate {
            g.report(&mut self.down, ok);
        } else {
            self.down = !ok;
        }
    }

    /// The connection is gone (or was never made): the next attempt after the backoff.
    fn dropped(&mut self, now: Instant) {
        self.set_ok(false);
        self.writer.connection_lost();
        self.client = None;
        self.reconnect_at = Some(now + Duration::from_millis(self.backoff_ms));
        self.backoff_ms = (self.backoff_ms * 2).min(2000);
    }

    /// One transaction for `rows`: connects first when needed (no attempt before the backoff
    /// has passed). A panic in the writer counts as a lost connection, so the thread lives on.
    fn commit(&mut self, rows: &[W::Row]) -> bool {
        self.attempt(|w, c| w.write(c, rows))
    }

    /// [`BatchWriter::probe`] as [`commit`](Self::commit) runs a write.
    fn probe(&mut self) -> bool {
        self.attempt(|w, c| w.probe(c))
    }

    /// Runs `f` (a transaction) as [`commit`](Self::commit) describes; reports the outcome to
    /// the gate.
    fn attempt(
        &mut self,
        f: impl FnOnce(&mut W, &mut Client) -> Result<(), postgres::Error>,
    ) -> bool {
        let now = Instant::now();
        if self.stop.abandoned.load(Ordering::SeqCst) {
            return false;
        }
        if self.client.is_none() {
            if self.reconnect_at.is_some_and(|t| now < t) {
                return false;
            }
            match connect(&self.url) {
                Ok(c) => {
                    if let Ok(mut t) = self.stop.cancel.lock() {
                        *t = Some(c.cancel_token());
                    }
                    self.client = Some(c);
                    self.backoff_ms = 50;
                    self.reconnect_at = None;
                    if let Some(line) = self.outage.as_ref().and_then(|o| o.connected(now)) {
                        crate::stderr_line!("{line}");
                    }
                }
                Err(e) if e.sqlstate.as_deref() == Some(TOO_MANY_CONNECTIONS) => {
                    // The server is up and full: not an outage ("lost"/"back" lines) but a
                    // refusal of this task's connection.
                    match self.full.as_ref() {
                        Some(log) => {
                            if let Some(line) = log.refused(now, &e.reason) {
                                crate::stderr_line!("{line}");
                            }
                            self.dropped(now);
                        }
                        None => self.lost(now, &e.reason, true),
                    }
                    return false;
                }
                Err(e) => {
                    self.lost(now, &e.reason, true);
                    return false;
                }
            }
        }
        let Some(client) = self.client.as_mut() else {
            return false;
        };
        let writer = &mut self.writer;
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(writer, client)));
        match result {
            Ok(Ok(())) => {
                self.set_ok(true);
                true
            }
            Ok(Err(e)) => {
                self.lost(now, &super::one_line_reason(&error_chain(&e), None), false);
                false
            }
            Err(_) => {
                self.lost(now, "the writer panicked", false);
                false
            }
        }
    }

    /// Group commit: takes a batch, and every batch queued behind it, into one transaction, and
    /// reports it; ends when the sink drops its sender (or stops listening). With a gate, a
    /// writer that cannot commit probes the server ([`BatchWriter::probe`]) whenever its
    /// reconnect backoff has passed and no batch came meanwhile: the spout sends nothing while
    /// the gate is closed, so no batch would come to find that the server is back.
    fn run(mut self, jobs: Receiver<Vec<W::Row>>, done: Sender<Done>) {
        loop {
            let probing = self.down && self.gate.is_some();
            let next = if probing && !self.stop.abandoned.load(Ordering::SeqCst) {
                let wait = self
                    .reconnect_at
                    .map_or(Duration::ZERO, |t| {
                        t.saturating_duration_since(Instant::now())
                    })
                    .max(Duration::from_millis(PROBE_MIN_WAIT_MS));
                match jobs.recv_timeout(wait) {
                    Ok(rows) => Some(rows),
                    Err(RecvTimeoutError::Timeout) => {
                        // A probe that committed tells the sink at once (no batch covered), so
                        // that it applies back-pressure again instead of failing the inputs
                        // the spout sends once it resumes (seen: a replayed entry failed at the
                        // cap, its second delivery, and was dead-lettered).
                        if self.probe()
                            && done
                                .send(Done {
                                    batches: 0,
                                    committed: true,
                                })
                                .is_err()
                        {
                            break;
                        }
                        continue;
                    }
                    Err(RecvTimeoutError::Disconnected) => None,
                }
            } else {
                jobs.recv().ok()
            };
            let Some(mut rows) = next else {
                break;
            };
            let mut batches = 1;
            while let Ok(more) = jobs.try_recv() {
                rows.extend(more);
                batches += 1;
            }
            let committed = self.commit(&rows);
            if done.send(Done { batches, committed }).is_err() {
                break;
            }
        }
        // A writer that ends (its sink stopped) holds the gate closed no longer.
        self.set_ok(true);
    }
}

/// Least wait between two probes of a writer that cannot commit, ms (its reconnect backoff,
/// 50 ms doubling to 2 s, sets the wait above this).
const PROBE_MIN_WAIT_MS: u64 = 10;

/// The executor's side of the writer thread.
struct WriterHandle<R> {
    jobs: SyncSender<Vec<R>>,
    done: Receiver<Done>,
    thread: JoinHandle<()>,
    stop: Arc<WriterStop>,
}

/// A sink bolt writing its inputs to PostgreSQL in batches through a [`BatchWriter`] (see the
/// module docs): one transaction per batch (at `batch` inputs, or at the spout's flush
/// punctuation, a one-field input), each input acked only after its transaction committed.
///
/// Commits run on a writer thread that owns the connection, so the executor's core keeps
/// working (reading the source, splitting, acking) while a transaction runs. The sink hands the
/// writer a batch's rows and keeps the batch's inputs; the writer takes everything queued when
/// it starts a transaction (group commit: the batch grows with the commit latency) and reports
/// the outcome; the sink acks the committed inputs at its next `execute`, which is at the latest
/// the next flush punctuation (the spout sends one every 20 ms while it has trees in flight, and
/// the inputs held here keep their trees in flight), so acks never wait for a message timeout.
/// A failed commit or a lost connection puts the inputs back in front of the buffer, unacked;
/// the writer reconnects with a capped backoff (50 ms doubling to 2 s) and the inputs are
/// written again at the next flush. At most [`MAX_QUEUED_BATCHES`] batches are queued to the
/// writer, and at most [`MAX_HELD_BATCHES`] × `batch` inputs are held: beyond, the executor
/// waits for the writer while its commits succeed (back-pressure, as a synchronous commit
/// would; at most [`BACKPRESSURE_WAIT_MS`] for each outcome), and fails the oldest buffered
/// inputs while they fail (an outage) or after a wait ran out (a blocked writer). Dropping the sink
/// closes the queue; the writer thread finishes the transaction it is in, then ends and frees
/// what it held. `cleanup` (a stopping task) waits for the writer at most [`STOP_WRITER_MS`],
/// then cancels its running statement and waits at most [`STOP_CANCEL_MS`] more before
/// abandoning the thread: a blocked transaction never holds a stop for longer.
pub struct BatchSink<W: BatchWriter> {
    url: String,
    /// The writer until its thread starts (at the first batch).
    writer: Option<W>,
    handle: Option<WriterHandle<W::Row>>,
    batch: usize,
    /// Inputs not yet handed to the writer, oldest first.
    buf: Vec<Input>,
    /// Inputs of the batches handed to the writer, in the order handed.
    queued: VecDeque<Vec<Input>>,
    queued_inputs: usize,
    /// Whether the writer's last transaction committed (back-pressure rather than failing at
    /// the cap); false also after a wait for it ran past [`BACKPRESSURE_WAIT_MS`], until the
    /// writer reports again.
    committing: bool,
    commit_on_cleanup: bool,
    /// Where cleanup counts the inputs it left uncommitted
    /// ([`BatchSink::count_uncommitted_on_cleanup`]).
    uncommitted: Option<Arc<SinkCounters>>,
    /// The worker's stop flag ([`BatchSink::stop_on`]): once set, no back-pressure wait.
    stop: Option<Arc<AtomicBool>>,
    /// Where the writer reports losing the server ([`BatchSink::report_outages`]).
    outage: Option<Arc<super::OutageLog>>,
    /// Where the writer reports whether it can commit ([`BatchSink::gate`]).
    gate: Option<Arc<super::SinkGate>>,
    /// Where the writer reports a full server ([`BatchSink::report_full`]).
    full: Option<Arc<FullLog>>,
}

/// The word-count sink bolt (see the module docs).
pub type PostgresSinkBolt = BatchSink<WordCountWriter>;

/// The [`BatchWriter`] of the word-count sink: [`SinkMode::Accumulate`] or
/// [`SinkMode::ExactlyOnce`] into `word_counts` (see the module docs).
pub struct WordCountWriter {
    stream: String,
    mode: SinkMode,
    counters: Arc<SinkCounters>,
    /// The statements prepared on the writer's current connection.
    prepared: Option<Prepared>,
}

impl BatchWriter for WordCountWriter {
    /// `(word, (entry ms, entry seq), position)`.
    type Row = (String, (i64, i64), i32);

    fn row(input: &Input) -> Self::Row {
        let (w, e, p) = contribution(input);
        (w.to_string(), e, p)
    }

    fn write(&mut self, client: &mut Client, rows: &[Self::Row]) -> Result<(), postgres::Error> {
        let applied = apply_batch(
            client,
            &mut self.prepared,
            self.mode,
            &self.stream,
            rows.iter().map(|(w, e, p)| (w.as_str(), *e, *p)),
        )?;
        self.counters.commits.fetch_add(1, Ordering::Relaxed);
        self.counters
            .applied
            .fetch_add(applied as u64, Ordering::Relaxed);
        self.counters.duplicates.fetch_add(
            (rows.len() as u64).saturating_sub(applied as u64),
            Ordering::Relaxed,
        );
        Ok(())
    }

    fn connection_lost(&mut self) {
        self.prepared = None;
        self.counters.errors.fetch_add(1, Ordering::Relaxed);
    }

    /// What every exactly-once transaction does first, in a transaction of its own: read and
    /// share-lock the stream's prune mark (creating it if missing). A row lock and a commit
    /// are written to the WAL, so this fails where a batch's commit would (a server down, in
    /// recovery or read-only), not only where a connection cannot be made.
    fn probe(&mut self, client: &mut Client) -> Result<(), postgres::Error> {
        if self.prepared.is_none() {
            self.prepared = Some(Prepared::new(client)?);
        }
        let Some(st) = self.prepared.as_ref() else {
            unreachable!("prepared just above")
        };
        let mut tx = client.transaction()?;
        tx.query(&st.mark, &[&self.stream])?;
        tx.commit()
    }
}

impl BatchSink<WordCountWriter> {
    /// A word-count sink writing to `url` for source stream `stream`, committing at `batch`
    /// inputs (at least 1) or at a flush punctuation.
    pub fn new(
        url: &str,
        stream: &str,
        mode: SinkMode,
        batch: usize,
        counters: Arc<SinkCounters>,
    ) -> Self {
        Self::with_writer(
            url,
            batch,
            WordCountWriter {
                stream: stream.to_string(),
                mode,
                counters,
                prepared: None,
            },
        )
    }
}

impl<W: BatchWriter> BatchSink<W> {
    /// A sink writing to `url` through `writer`, committing at `batch` inputs (at least 1) or at
    /// a flush punctuation. The writer thread starts at the first batch.
    pub fn with_writer(url: &str, batch: usize, writer: W) -> Self {
        Self {
            url: url.to_string(),
            writer: Some(writer),
            handle: None,
            batch: batch.max(1),
            buf: Vec::new(),
            queued: VecDeque::new(),
            queued_inputs: 0,
            committing: true,
            commit_on_cleanup: false,
            uncommitted: None,
            stop: None,
            outage: None,
            gate: None,
            full: None,
        }
    }

    /// Makes the writer report to `gate` whether it can commit (a failed transaction or
    /// connection attempt closes it for this task, a committed one opens it again), and probe
    /// the server by itself while it cannot ([`BatchWriter::probe`], each time its reconnect
    /// backoff has passed). Share one gate among the sink tasks of a worker and give it to the
    /// spout ([`super::redis_stream::RedisStreamSpout::pause_while`]), which then reads
    /// nothing while a task cannot commit. Off by default.
    pub fn gate(mut self, gate: Arc<super::SinkGate>) -> Self {
        self.gate = Some(gate);
        self
    }

    /// Makes the writer report a connection the server refused as full (SQLSTATE
    /// [`TOO_MANY_CONNECTIONS`]) through `log` instead of as an outage; share one log among the
    /// sink tasks of a worker. Off by default (reported as an outage).
    pub fn report_full(mut self, log: Arc<FullLog>) -> Self {
        self.full = Some(log);
        self
    }

    /// Makes the writer report on stderr when it loses PostgreSQL and when it is back, through
    /// `log` (one line each, rate-limited: [`super::OutageLog`]); share one log among the sink
    /// tasks of a worker so that an outage is reported once. Off by default.
    pub fn report_outages(mut self, log: Arc<super::OutageLog>) -> Self {
        self.outage = Some(log);
        self
    }

    /// Makes the sink watch the worker's stop flag (set by SIGINT/SIGTERM): once it is set, the
    /// sink applies no more back-pressure. Inputs beyond [`MAX_HELD_BATCHES`] × `batch` are then
    /// failed at once instead of waiting for the writer, as while commits fail. Without it a
    /// writer that is busy rather than blocked (its commits succeed, slowly: one entry of
    /// 1,000,000 words) kept each wait under [`BACKPRESSURE_WAIT_MS`], so the topology's drain
    /// went on at the writer's pace and `cleanup` (with its bound of [`STOP_WRITER_MS`] +
    /// [`STOP_CANCEL_MS`]) was reached only once every input had been committed: 20.6 s from
    /// SIGTERM to exit for one such entry, 123 s for 4,000,000 words (new-user trial). A failed
    /// input's entry stays pending in the group and is delivered again, so at-least-once and
    /// exactly-once keep their guarantees; under at-most-once it is lost (its entry was
    /// acknowledged when read), as anything a stop leaves uncommitted.
    pub fn stop_on(mut self, stop: Arc<AtomicBool>) -> Self {
        self.stop = Some(stop);
        self
    }

    fn stopping(&self) -> bool {
        self.stop
            .as_ref()
            .is_some_and(|s| s.load(Ordering::Relaxed))
    }

    /// Commits what is still buffered or queued when the topology shuts down (in `cleanup`,
    /// after the shell has drained every tuple in flight), instead of leaving it to a replay.
    /// For at-most-once, whose entries were acknowledged to the group when read (`NOACK`) and
    /// are never delivered again: without it the last partial batch of a `--drain` run or a stop
    /// would be lost with no fault at all. Off by default: under at-least-once a commit that is
    /// never acked is replayed and counted twice.
    pub fn commit_buffered_on_cleanup(mut self) -> Self {
        self.commit_on_cleanup = true;
        self
    }

    /// With [`BatchSink::commit_buffered_on_cleanup`]: counts into
    /// `counters.uncommitted_on_cleanup` the inputs cleanup could not commit (buffered or queued
    /// when it ended). At-most-once reports them as lost words.
    pub fn count_uncommitted_on_cleanup(mut self, counters: Arc<SinkCounters>) -> Self {
        self.uncommitted = Some(counters);
        self
    }

    /// Inputs held unacked: buffered, queued to the writer, or committed and not yet acked.
    pub fn held(&self) -> usize {
        self.buf.len() + self.queued_inputs
    }

    fn handle(&mut self) -> Option<&WriterHandle<W::Row>> {
        if self.handle.is_none() {
            let writer = self.writer.take()?;
            let (jobs, jobs_rx) = sync_channel(MAX_QUEUED_BATCHES);
            let (done_tx, done) = channel();
            let stop = Arc::new(WriterStop::default());
            let w = WriterThread {
                url: self.url.clone(),
                writer,
                client: None,
                reconnect_at: None,
                backoff_ms: 50,
                outage: self.outage.clone(),
                stop: stop.clone(),
                gate: self.gate.clone(),
                down: false,
                full: self.full.clone(),
            };
            let thread = std::thread::Builder::new()
                .name("acker-sink-writer".into())
                .spawn(move || w.run(jobs_rx, done_tx))
                .ok()?;
            self.handle = Some(WriterHandle {
                jobs,
                done,
                thread,
                stop,
            });
        }
        self.handle.as_ref()
    }

    /// Takes the outcome of `d`: acks (with a collector) or drops the inputs of committed
    /// batches, and puts those of a failed transaction back in front of the buffer.
    fn settle(&mut self, d: Done, mut c: Option<&mut OutputCollector<'_>>) {
        // A report covering no batch is a probe's ([`WriterThread::run`]).
        self.committing = d.committed;
        let mut failed = Vec::new();
        for _ in 0..d.batches {
            let Some(inputs) = self.queued.pop_front() else {
                break;
            };
            self.queued_inputs -= inputs.len();
            self.committing = d.committed;
            if !d.committed {
                failed.extend(inputs);
            } else if let Some(c) = c.as_deref_mut() {
                for i in inputs {
                    let _ = c.ack(i);
                }
            }
        }
        if !failed.is_empty() {
            failed.append(&mut self.buf);
            self.buf = failed;
        }
    }

    /// Acks every batch the writer has committed since the last call; a writer thread that is
    /// gone (it cannot be, short of an abort) returns its batches to the buffer unacked.
    fn poll(&mut self, c: &mut OutputCollector<'_>) {
        loop {
            let Some(h) = self.handle.as_ref() else {
                return;
            };
            match h.done.try_recv() {
                Ok(d) => self.settle(d, Some(c)),
                Err(TryRecvError::Empty) => return,
                Err(TryRecvError::Disconnected) => {
                    self.handle = None;
                    let batches = self.queued.len();
                    self.settle(
                        Done {
                            batches,
                            committed: false,
                        },
                        Some(c),
                    );
                    return;
                }
            }
        }
    }

    /// Hands everything buffered to the writer as one batch, unless [`MAX_QUEUED_BATCHES`] are
    /// queued already (then it waits in the buffer and grows).
    fn hand_over(&mut self) {
        if self.buf.is_empty() || self.queued.len() >= MAX_QUEUED_BATCHES {
            return;
        }
        let rows: Vec<W::Row> = self.buf.iter().map(W::row).collect();
        let Some(h) = self.handle() else {
            return;
        };
        if h.jobs.try_send(rows).is_ok() {
            let inputs = std::mem::take(&mut self.buf);
            self.queued_inputs += inputs.len();
            self.queued.push_back(inputs);
        }
    }

    /// Bounds the inputs held to [`MAX_HELD_BATCHES`] × `batch`. While the writer's last
    /// transaction committed, it applies back-pressure: the executor waits for the writer's
    /// next outcome (as long as one commit takes, at most [`BACKPRESSURE_WAIT_MS`] each), acks
    /// it and hands the buffer over. When the last transaction failed (an outage) or a wait ran
    /// past the bound (a blocked writer), it fails the oldest buffered inputs beyond the cap
    /// instead (their trees have timed out or soon will).
    fn cap(&mut self, c: &mut OutputCollector<'_>) {
        let limit = MAX_HELD_BATCHES * self.batch;
        // A stopping worker waits for nothing here (see `stop_on`).
        let wait = !self.stopping();
        while wait && self.held() > limit && self.committing && !self.queued.is_empty() {
            let Some(h) = self.handle.as_ref() else {
                break;
            };
            match h
                .done
                .recv_timeout(Duration::from_millis(BACKPRESSURE_WAIT_MS))
            {
                Ok(d) => self.settle(d, Some(c)),
                // No outcome within the bound: the writer is blocked (a lock) or very slow.
                // Treated as failing until it reports again: the core goes back to its other
                // work, and the oldest buffered inputs beyond the cap fail below.
                Err(RecvTimeoutError::Timeout) => {
                    self.committing = false;
                    break;
                }
                Err(RecvTimeoutError::Disconnected) => {
                    self.poll(c);
                    break;
                }
            }
            self.hand_over();
        }
        let excess = self.held().saturating_sub(limit).min(self.buf.len());
        for i in self.buf.drain(..excess) {
            let _ = c.fail(i);
        }
    }
}

impl<W: BatchWriter> Bolt for BatchSink<W> {
    fn prepare(&mut self, _context: &TopologyContext) {}

    fn execute(&mut self, input: Input, c: &mut OutputCollector<'_>) {
        self.poll(c);
        if input.values().len() == 1 {
            // The spout's flush punctuation (unanchored: acking it is a no-op).
            let _ = c.ack(input);
            self.hand_over();
        } else {
            self.buf.push(input);
            if self.buf.len() >= self.batch {
                self.hand_over();
            }
        }
        self.cap(c);
    }

    fn cleanup(&mut self) {
        // Without `commit_buffered_on_cleanup`, inputs still held here were never acked: their
        // entries stay pending in the group and are delivered again (exactly-once skips what a
        // commit already applied). With it, the buffer is handed over and every queued batch
        // is committed (one attempt each) before the writer thread is joined. Either way the
        // wait is bounded: `STOP_WRITER_MS` for the writer to finish, then its running
        // statement is cancelled and, `STOP_CANCEL_MS` later, the thread is abandoned.
        let deadline = Instant::now() + Duration::from_millis(STOP_WRITER_MS);
        if self.commit_on_cleanup {
            // Hand the buffer over, waiting for the writer whenever the queue is full.
            while !self.buf.is_empty() {
                self.hand_over();
                if self.buf.is_empty() {
                    break;
                }
                let wait = deadline.saturating_duration_since(Instant::now());
                let Some(d) = self
                    .handle
                    .as_ref()
                    .and_then(|h| h.done.recv_timeout(wait).ok())
                else {
                    break;
                };
                self.settle(d, None);
                if !self.committing {
                    break;
                }
            }
        }
        if let Some(h) = self.handle.take() {
            drop(h.jobs);
            // The writer ends once the queue is empty (its `done` sender then disconnects);
            // draining `done` keeps it from blocking.
            let mut deadline = deadline;
            let mut cancelled = false;
            loop {
                let wait = deadline.saturating_duration_since(Instant::now());
                match h.done.recv_timeout(wait) {
                    Ok(d) => self.settle(d, None),
                    Err(RecvTimeoutError::Disconnected) => {
                        let _ = h.thread.join();
                        break;
                    }
                    Err(RecvTimeoutError::Timeout) if !cancelled => {
                        h.stop.abandon();
                        cancelled = true;
                        deadline = Instant::now() + Duration::from_millis(STOP_CANCEL_MS);
                    }
                    // Abandoned: dropping the handle detaches the thread, which ends (and
                    // drops its connection) once PostgreSQL answers; its inputs stay unacked.
                    Err(RecvTimeoutError::Timeout) => break,
                }
            }
        }
        if let (true, Some(c)) = (self.commit_on_cleanup, &self.uncommitted) {
            c.uncommitted_on_cleanup
                .fetch_add(self.held() as u64, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connectors::local::PostgresServer;

    fn counts(client: &mut Client) -> Vec<(String, i64)> {
        client
            .query("SELECT word, count FROM word_counts ORDER BY word", &[])
            .expect("read word_counts")
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect()
    }

    fn owned(v: &[(&str, (i64, i64), i32)]) -> Vec<(String, (i64, i64), i32)> {
        v.iter().map(|&(w, e, p)| (w.to_string(), e, p)).collect()
    }

    fn apply(client: &mut Client, batch: &[(String, (i64, i64), i32)]) -> usize {
        apply_batch(
            client,
            &mut None,
            SinkMode::ExactlyOnce,
            "s",
            batch.iter().map(|(w, e, p)| (w.as_str(), *e, *p)),
        )
        .expect("apply a batch")
    }

    /// The exactly-once records against a real PostgreSQL: a position twice in one batch, a
    /// replay split differently over batches, and two transactions applying the same entry at
    /// once each add a contribution exactly once.
    #[test]
    fn exactly_once_records_add_each_position_once() {
        let server = PostgresServer::start().expect("start PostgreSQL (package postgresql)");
        let mut a = connect(&server.url()).expect("connect");
        ensure_schema(&mut a).expect("schema");
        // Entry 1-0 has words a b c at positions 0 1 2; position 0 arrives twice.
        let first = owned(&[("a", (1, 0), 0), ("a", (1, 0), 0), ("b", (1, 0), 1)]);
        assert_eq!(apply(&mut a, &first), 2);
        // The replay of the whole entry, cut differently: only position 2 is new.
        let replay = owned(&[("c", (1, 0), 2), ("a", (1, 0), 0)]);
        assert_eq!(apply(&mut a, &replay), 1);
        assert_eq!(apply(&mut a, &owned(&[("b", (1, 0), 1)])), 0);
        assert_eq!(
            counts(&mut a),
            [("a".into(), 1), ("b".into(), 1), ("c".into(), 1)]
        );

        // Two workers apply entry 2-0 at once: the second waits on the first's record and,
        // once it commits, finds its positions and adds nothing.
        let mut b = connect(&server.url()).expect("connect");
        let batch = owned(&[("d", (2, 0), 0), ("e", (2, 0), 1)]);
        let mut tx = a.transaction().expect("begin");
        tx.execute(
            "INSERT INTO word_count_applied_entries VALUES ('s', 2, 0, '{0,1}', '{0,1}')",
            &[],
        )
        .expect("record entry 2-0 in an open transaction");
        let other = std::thread::spawn(move || {
            let added = apply(&mut b, &batch);
            (added, b)
        });
        // Give the other transaction time to block on the record's row lock (if it did not
        // block, it would add 2 and the assertion below fails either way).
        std::thread::sleep(std::time::Duration::from_millis(300));
        tx.execute("INSERT INTO word_counts VALUES ('d', 1), ('e', 1)", &[])
            .expect("the first worker's counts");
        tx.commit().expect("commit");
        let (added, _b) = other.join().expect("the second worker");
        assert_eq!(
            added, 0,
            "a concurrent replay of a committed entry adds nothing"
        );
        assert_eq!(
            counts(&mut a),
            [
                ("a".into(), 1),
                ("b".into(), 1),
                ("c".into(), 1),
                ("d".into(), 1),
                ("e".into(), 1)
            ]
        );
    }

    /// Two connections apply the same 10 batches (2,000 words each) at once, one passing every
    /// batch's contributions in ascending order and the other in descending order: with rows
    /// locked in one order no transaction deadlocks (PostgreSQL would abort one with SQLSTATE
    /// 40P01), and each word is counted once per batch (10), however the two interleave.
    #[test]
    fn concurrent_transactions_lock_in_one_order() {
        const BATCHES: i64 = 10;
        let server = PostgresServer::start().expect("start PostgreSQL (package postgresql)");
        let mut c = connect(&server.url()).expect("connect");
        ensure_schema(&mut c).expect("schema");
        // Batch i: entries (i, 0..10), 200 positions each, word w<k*200+pos>: 2,000 words.
        let batch = |i: i64| -> Vec<(String, (i64, i64), i32)> {
            (0..10)
                .flat_map(|k| {
                    (0..200).map(move |p| (format!("w{:04}", k * 200 + p), (i, k), p as i32))
                })
                .collect()
        };
        // Both threads start each batch together (a barrier), so their transactions overlap;
        // each runs all batches whatever fails, so neither waits at the barrier for ever.
        let start = std::sync::Arc::new(std::sync::Barrier::new(2));
        let run = |descending: bool| {
            let (url, start) = (server.url(), start.clone());
            std::thread::spawn(move || {
                let mut c = connect(&url).expect("connect");
                let mut errors = Vec::new();
                for i in 1..=BATCHES {
                    let mut b = batch(i);
                    if descending {
                        b.reverse();
                    }
                    start.wait();
                    if let Err(e) = apply_batch(
                        &mut c,
                        &mut None,
                        SinkMode::ExactlyOnce,
                        "s",
                        b.iter().map(|(w, e, p)| (w.as_str(), *e, *p)),
                    ) {
                        let state = e.code().map_or("none", |c| c.code()).to_string();
                        errors.push(format!("batch {i}: SQLSTATE {state}"));
                    }
                }
                errors
            })
        };
        let (a, b) = (run(false), run(true));
        let ea = a.join().expect("ascending thread");
        let eb = b.join().expect("descending thread");
        assert_eq!(
            (ea, eb),
            (vec![], vec![]),
            "failed transactions (ascending, descending); 40P01 is a deadlock"
        );
        let want: Vec<(String, i64)> = (0..2000).map(|j| (format!("w{j:04}"), BATCHES)).collect();
        assert_eq!(counts(&mut c), want);
    }

    /// The stop path of a blocked writer: its statement (`pg_sleep(3600)`, standing for a lock
    /// wait) is cancelled by [`WriterStop::abandon`], the writer reports that transaction as
    /// not committed within [`STOP_CANCEL_MS`] (plus 2 s of slack), attempts no further
    /// transaction (the next batch, sent past the reconnect backoff, fails at once without a
    /// write) and ends when the queue closes. Every wait is bounded.
    #[test]
    fn abandon_cancels_a_blocked_statement_and_stops_further_writes() {
        #[derive(Clone)]
        struct Sleeper(Arc<AtomicU64>);
        impl BatchWriter for Sleeper {
            type Row = i64;
            fn row(_: &Input) -> i64 {
                0
            }
            fn write(&mut self, client: &mut Client, _: &[i64]) -> Result<(), postgres::Error> {
                self.0.fetch_add(1, Ordering::Relaxed);
                client.execute("SELECT pg_sleep(3600)", &[])?;
                Ok(())
            }
        }
        let server = PostgresServer::start().expect("start PostgreSQL (package postgresql)");
        let writes = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(WriterStop::default());
        let w = WriterThread {
            url: server.url(),
            writer: Sleeper(writes.clone()),
            client: None,
            reconnect_at: None,
            backoff_ms: 50,
            outage: None,
            stop: stop.clone(),
            gate: None,
            down: false,
            full: None,
        };
        let (jobs, jobs_rx) = sync_channel(MAX_QUEUED_BATCHES);
        let (done_tx, done) = channel();
        let thread = std::thread::spawn(move || w.run(jobs_rx, done_tx));
        jobs.send(vec![1]).expect("queue a batch");
        let mut watch = connect(&server.url()).expect("connect");
        let t0 = Instant::now();
        loop {
            let sleeping: i64 = watch
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(3600)' \
                     AND state = 'active'",
                    &[],
                )
                .expect("read pg_stat_activity")
                .get(0);
            if sleeping == 1 {
                break;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "timed out after 10 s waiting for the writer's statement to run"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        stop.abandon();
        let bound = Duration::from_millis(STOP_CANCEL_MS + 2_000);
        let first = done
            .recv_timeout(bound)
            .expect("the cancelled transaction's report within STOP_CANCEL_MS + 2 s");
        assert_eq!((first.batches, first.committed), (1, false));
        // Past the 50 ms reconnect backoff, so only the abandon flag keeps it from writing.
        std::thread::sleep(Duration::from_millis(200));
        jobs.send(vec![2]).expect("queue a batch");
        let second = done
            .recv_timeout(Duration::from_secs(5))
            .expect("the next batch's report within 5 s");
        assert_eq!((second.batches, second.committed), (1, false));
        assert_eq!(writes.load(Ordering::Relaxed), 1, "no write after abandon");
        drop(jobs);
        thread
            .join()
            .expect("the writer thread ends when the queue closes");
    }

    /// A writer whose first transaction panics: the writer thread survives it, reports that
    /// batch as not committed (so its inputs stay unacked), reconnects after the backoff and
    /// commits the next batch. Every wait is bounded (5 s).
    #[test]
    fn a_panicking_write_is_a_failed_commit_and_the_writer_lives_on() {
        #[derive(Clone)]
        struct Flaky(Arc<AtomicU64>);
        impl BatchWriter for Flaky {
            type Row = i64;
            fn row(_: &Input) -> i64 {
                0
            }
            fn write(&mut self, client: &mut Client, rows: &[i64]) -> Result<(), postgres::Error> {
                if self.0.fetch_add(1, Ordering::Relaxed) == 0 {
                    panic!("this test writer panics on its first write");
                }
                client.execute("SELECT $1::bigint", &[&(rows.len() as i64)])?;
                Ok(())
            }
        }
        let server = PostgresServer::start().expect("start PostgreSQL (package postgresql)");
        let calls = Arc::new(AtomicU64::new(0));
        let w = WriterThread {
            url: server.url(),
            writer: Flaky(calls.clone()),
            client: None,
            reconnect_at: None,
            backoff_ms: 50,
            outage: None,
            stop: Arc::new(WriterStop::default()),
            gate: None,
            down: false,
            full: None,
        };
        let (jobs, jobs_rx) = sync_channel(MAX_QUEUED_BATCHES);
        let (done_tx, done) = channel();
        let thread = std::thread::spawn(move || w.run(jobs_rx, done_tx));
        let wait = || {
            done.recv_timeout(Duration::from_secs(5))
                .expect("the writer's report within 5 s (a dead writer never reports)")
        };
        jobs.send(vec![1, 2, 3]).expect("queue a batch");
        let first = wait();
        assert_eq!((first.batches, first.committed), (1, false));
        // The next attempt waits out the 50 ms backoff, reconnects and commits.
        std::thread::sleep(Duration::from_millis(100));
        jobs.send(vec![4]).expect("queue a batch");
        let second = wait();
        assert_eq!((second.batches, second.committed), (1, true));
        assert_eq!(calls.load(Ordering::Relaxed), 2);
        drop(jobs);
        thread
            .join()
            .expect("the writer thread ends when the queue closes");
    }
}
