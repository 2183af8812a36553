//! The reliable source and the sink: the outside world of the topology, which survives crashes.
//!
//! [`SourceLog`] models the source and its one consumer (the spout), in one of two
//! [`SourceModel`]s:
//!
//! - **Kafka** (the default; the seed experiment used Kafka with self-managed offsets): offsets
//!   `0..tuples` hold the unique sequential numbers; the consumer commits on ack (the committed
//!   offset is the lowest offset not yet acked), replays an offset on fail, and after a spout
//!   crash a new consumer resumes from the last committed offset, forgetting everything else: it
//!   replays every offset above the commit point, acked or not.
//! - **Redis** (a Redis stream read by one consumer group, as the runtime's
//!   `connectors::redis_stream` spout reads it): each entry read (`XREADGROUP`, up to
//!   [`RedisOptions::read_batch`] at a time) becomes pending in the group's pending entries list
//!   (PEL) with a delivery count of 1; `ack` removes it (`XACK`); `fail` (or a timeout) claims it
//!   again (`XCLAIM`, delivery count + 1) and re-emits it. A restarted spout keeps its consumer
//!   name (the real experiment does), so it first re-delivers all of its own pending entries
//!   (delivered, never acked: the trees in flight at the crash and the entries read but not yet
//!   emitted), then reads new ones; entries acked before the crash are never delivered again. An
//!   entry whose delivery count reached `1 + max_retries` is dead-lettered when it would be
//!   delivered again: acked in the group and never emitted again (if none of its deliveries
//!   reached the sink, the sink lacks it and the experiment counts it as lost, as the real
//!   experiment's SQL does). At-most-once reads with `NOACK`: an entry is acknowledged as it is
//!   read, never pending, never delivered again (entries read but not yet emitted when the spout
//!   crashes are lost). Not modelled: other consumers (one spout task, one consumer name, so
//!   `XAUTOCLAIM` after the idle time never finds anything), and the real spout's ack batching
//!   (`XACK` every 2 ms): an ack here reaches the server at once, so a crash loses no ack.
//!
//! Both models have a **source outage** ([`SourceLog::set_down`], the prediction of a Redis
//! restart): while the source is down nothing can be read, replayed or claimed (the Redis spout
//! still emits the entries it read before), and acks (and Kafka offset commits) are held in the
//! consumer's memory; when it is back they are applied,
//! as the runtime's spout keeps unsent acks and sends them after reconnecting (with
//! `appendfsync always` the server loses nothing). A spout crash during the outage loses the
//! held acks (their entries are delivered again).
//!
//! Every emit gets its own message id, so the oracle can check that each emit gets at most one
//! final callback.
//!
//! [`SinkStore`] records every output written. Under exactly-once it also keeps idempotent,
//! transactional state keyed by source position (as Trident's transactional state keys each
//! update by transaction id): a write for a position already applied is absorbed. A **sink
//! outage** ([`SinkStore::set_down`], the prediction of a PostgreSQL restart) makes it refuse
//! commits; the sink bolt holds its inputs meanwhile (see [`crate::components`]).

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Which source the spout reads (see the [module docs](self)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SourceModel {
    /// A Kafka partition with self-managed offsets: a restarted consumer replays everything
    /// after the committed offset (the seed experiment's source; the default).
    #[default]
    Kafka,
    /// A Redis stream with a consumer group: a restarted consumer re-delivers only its own
    /// pending (delivered, unacked) entries (the real-components experiment's source).
    Redis,
}

impl SourceModel {
    /// Both models, Kafka first.
    pub const ALL: [SourceModel; 2] = [SourceModel::Kafka, SourceModel::Redis];

    /// The name on the command line: `kafka` or `redis`.
    pub fn name(self) -> &'static str {
        match self {
            SourceModel::Kafka => "kafka",
            SourceModel::Redis => "redis",
        }
    }
}

impl fmt::Display for SourceModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not a source model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownSourceModel(pub String);

impl fmt::Display for UnknownSourceModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown source model `{}`; known: kafka, redis", self.0)
    }
}

impl std::error::Error for UnknownSourceModel {}

impl FromStr for SourceModel {
    type Err = UnknownSourceModel;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SourceModel::ALL
            .into_iter()
            .find(|m| m.name() == s.trim())
            .ok_or_else(|| UnknownSourceModel(s.trim().to_string()))
    }
}

/// The Redis model's settings, as the runtime's `RedisSpoutConfig` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RedisOptions {
    /// Entries per `XREADGROUP` (`batch`; at least 1): read into the consumer's memory, pending
    /// in the group until acked. Default 500, as `RedisSpoutConfig::new`.
    pub read_batch: usize,
    /// Deliveries past the first an entry may get before it is dead-lettered (`max_retries`).
    /// Default 5, as `RedisSpoutConfig::new`.
    pub max_retries: u32,
}

impl Default for RedisOptions {
    fn default() -> Self {
        Self {
            read_batch: 500,
            max_retries: 5,
        }
    }
}

/// What happened to one spout emit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmitState {
    /// No final callback yet.
    Pending,
    /// `ack(msg_id)` was called.
    Acked,
    /// `fail(msg_id)` was called.
    Failed,
}

/// One spout emit, indexed by its message id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EmitRecord {
    /// The source offset emitted.
    pub offset: u64,
    /// The spout incarnation (0 at start, +1 per restart) that emitted it.
    pub incarnation: u32,
    /// Simulated time of the emit.
    pub emit_ns: u64,
    /// Its final callback so far.
    pub state: EmitState,
    /// Simulated time of the final callback (0 while pending).
    pub decided_ns: u64,
}

/// A callback the oracle must flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallbackError {
    /// A second final callback for the same emit.
    Twice {
        /// The message id.
        msg_id: u64,
    },
    /// A callback for a message id never emitted.
    Unknown {
        /// The message id.
        msg_id: u64,
    },
}

/// The source log and its consumer (see the [module docs](self)).
#[derive(Debug)]
pub struct SourceLog {
    tuples: u64,
    model: SourceModel,
    redis: RedisOptions,
    at_most_once: bool,
    // Server state (survives a spout crash).
    /// Kafka: the committed offset the server holds. Redis: entries acknowledged in the group
    /// (acked, dead-lettered, or read with NOACK).
    durable: u64,
    /// Redis: the group's last-delivered position (the next new entry).
    last_delivered: u64,
    /// Redis: the pending entries list, offset → delivery count.
    pel: BTreeMap<u64, u32>,
    /// Redis: dead-lettered offsets, in order.
    dead: Vec<u64>,
    down: bool,
    // Consumer state, lost on a spout crash.
    /// Kafka: the consumer's commit point (equal to `durable` except during a source outage).
    commit_point: u64,
    next_read: u64,
    /// Kafka: acked flags of offsets `committed..next_read`.
    acked: VecDeque<bool>,
    /// Kafka: offsets to replay. Redis: entries read or claimed, not yet emitted.
    replay: VecDeque<u64>,
    /// Redis: failed entries to claim again.
    retry: VecDeque<u64>,
    /// Redis: the consumer has not yet taken back its own pending entries.
    own_pending: bool,
    /// Redis: acks held while the source is down.
    held_acks: Vec<u64>,
    incarnation: u32,
    opened: bool,
    // Observations (not part of the modelled system).
    emits: Vec<EmitRecord>,
    high_water: u64,
    errors: Vec<CallbackError>,
    now_ns: u64,
    /// The highest offset newly read since the last take, shared with the probe (see
    /// [`newly_read_handle`](Self::newly_read_handle)).
    newly_read: NewlyRead,
    redelivered: Vec<u64>,
}

/// The highest offset a [`SourceLog`] newly read and nobody took yet, shared between the log and
/// a probe (an atomic word: no lock; the log is single-threaded in the simulator).
#[derive(Clone, Debug)]
pub struct NewlyRead(Arc<AtomicU64>);

impl Default for NewlyRead {
    fn default() -> Self {
        Self(Arc::new(AtomicU64::new(NewlyRead::NONE)))
    }
}

impl NewlyRead {
    /// No offset (offsets are below the log's length, a `u64`).
    const NONE: u64 = u64::MAX;

    fn set(&self, offset: u64) {
        self.0.store(offset, Ordering::Relaxed);
    }

    fn is_none(&self) -> bool {
        self.0.load(Ordering::Relaxed) == Self::NONE
    }

    /// Takes the offset, if any.
    #[inline]
    pub fn take(&self) -> Option<u64> {
        if self.is_none() {
            return None;
        }
        Some(self.0.swap(Self::NONE, Ordering::Relaxed)).filter(|&o| o != Self::NONE)
    }
}

impl SourceLog {
    /// A Kafka-model log of `tuples` offsets, nothing read or committed.
    pub fn new(tuples: u64) -> Self {
        Self::with_model(tuples, SourceModel::Kafka, RedisOptions::default(), false)
    }

    /// A log of `tuples` offsets in `model`; `redis` is used by the Redis model only, and
    /// `at_most_once` (0 ackers) makes the Redis model read with `NOACK`.
    pub fn with_model(
        tuples: u64,
        model: SourceModel,
        redis: RedisOptions,
        at_most_once: bool,
    ) -> Self {
        Self {
            tuples,
            model,
            redis: RedisOptions {
                read_batch: redis.read_batch.max(1),
                ..redis
            },
            at_most_once,
            durable: 0,
            last_delivered: 0,
            pel: BTreeMap::new(),
            dead: Vec::new(),
            down: false,
            commit_point: 0,
            next_read: 0,
            acked: VecDeque::new(),
            replay: VecDeque::new(),
            retry: VecDeque::new(),
            own_pending: false,
            held_acks: Vec::new(),
            incarnation: 0,
            opened: false,
            emits: Vec::new(),
            high_water: 0,
            errors: Vec::new(),
            now_ns: 0,
            newly_read: NewlyRead::default(),
            redelivered: Vec::new(),
        }
    }

    /// The source model.
    pub fn model(&self) -> SourceModel {
        self.model
    }

    /// A new consumer takes over (spout start or restart), forgetting the previous consumer's
    /// in-memory state. Kafka: it resumes from the committed offset (read position, acks above
    /// the commit point and the replay queue are lost). Redis: it will first take back its own
    /// pending entries (read, in-flight and failed entries of the previous life are lost from
    /// memory but still pending in the group; held acks are lost). Returns the new incarnation
    /// number (0 for the first consumer).
    pub fn open_consumer(&mut self) -> u32 {
        if self.opened {
            self.incarnation += 1;
        }
        self.opened = true;
        if self.model == SourceModel::Redis && self.at_most_once {
            // Entries read with NOACK but not emitted are lost with the consumer: the spout has
            // passed them, so offset-triggered faults on them fire at its next step.
            if let Some(&last) = self.replay.iter().max() {
                if last >= self.high_water {
                    self.high_water = last + 1;
                    self.newly_read.set(last);
                }
            }
        }
        self.commit_point = self.durable;
        self.next_read = self.commit_point;
        self.acked.clear();
        self.replay.clear();
        self.retry.clear();
        self.held_acks.clear();
        self.own_pending = self.model == SourceModel::Redis && !self.at_most_once;
        self.incarnation
    }

    /// Sets the simulated time stamped on emits and callbacks (the simulator calls it before
    /// each spout step: the user's spout reads no clock).
    pub fn set_now(&mut self, now_ns: u64) {
        self.now_ns = now_ns;
    }

    /// A source outage starts (`true`) or ends (`false`). While down nothing is read, claimed or
    /// replayed ([`next_emit`](Self::next_emit) only hands out Redis entries already read into
    /// the spout's memory) and acks are held; at the end the held acks are applied (Kafka: the
    /// consumer's commit point is committed).
    pub fn set_down(&mut self, down: bool) {
        self.down = down;
        if !down {
            for o in std::mem::take(&mut self.held_acks) {
                self.xack(o);
            }
            self.durable = self.durable.max(self.commit_point);
        }
    }

    /// Whether the source is down (an outage).
    pub fn is_down(&self) -> bool {
        self.down
    }

    /// The next offset to emit and its new message id, or `None` when there is nothing to emit
    /// (or the source is down and nothing read is left in memory). Kafka: a replay first, else the next unread offset. Redis: an
    /// entry already read or claimed, else failed entries claimed again, else (once after a
    /// start) the consumer's own pending entries, else a batch of new entries.
    #[inline]
    pub fn next_emit(&mut self) -> Option<(u64, u64)> {
        let offset = match self.model {
            SourceModel::Kafka if self.down => return None,
            SourceModel::Kafka => self.next_kafka()?,
            // Entries already read are in the spout's memory: emitted even while Redis is down.
            SourceModel::Redis if self.down => self.replay.pop_front()?,
            SourceModel::Redis => self.next_redis()?,
        };
        if offset >= self.high_water {
            self.high_water = offset + 1;
            self.newly_read.set(offset);
        }
        let msg_id = self.emits.len() as u64;
        self.emits.push(EmitRecord {
            offset,
            incarnation: self.incarnation,
            emit_ns: self.now_ns,
            state: EmitState::Pending,
            decided_ns: 0,
        });
        Some((offset, msg_id))
    }

    fn next_kafka(&mut self) -> Option<u64> {
        if let Some(o) = self.replay.pop_front() {
            Some(o)
        } else if self.next_read < self.tuples {
            let o = self.next_read;
            self.next_read += 1;
            self.acked.push_back(false);
            Some(o)
        } else {
            None
        }
    }

    fn next_redis(&mut self) -> Option<u64> {
        // The real spout spends one `next_tuple` call per server round trip; here one call goes
        // on until it has an entry to emit or nothing is left (so an empty step never makes the
        // simulated spout wait for its next tick).
        loop {
            if let Some(o) = self.replay.pop_front() {
                return Some(o);
            }
            if !self.retry.is_empty() {
                let ids: Vec<u64> = self.retry.drain(..).collect();
                self.reclaim(ids);
            } else if self.own_pending {
                self.own_pending = false;
                let ids: Vec<u64> = self.pel.keys().copied().collect();
                if self.incarnation > 0 {
                    self.redelivered.push(ids.len() as u64);
                }
                self.reclaim(ids);
            } else if self.last_delivered < self.tuples {
                let n = (self.redis.read_batch as u64).min(self.tuples - self.last_delivered);
                for o in self.last_delivered..self.last_delivered + n {
                    if self.at_most_once {
                        // NOACK: acknowledged as it is delivered.
                        self.durable += 1;
                    } else {
                        self.pel.insert(o, 1);
                    }
                    self.replay.push_back(o);
                }
                self.last_delivered += n;
            } else {
                return None;
            }
        }
    }

    /// Claims `ids` again (`XCLAIM`): an entry still pending whose delivery count reached
    /// `1 + max_retries` is dead-lettered (acked), the others get one more delivery and join
    /// the queue to emit.
    fn reclaim(&mut self, ids: Vec<u64>) {
        let limit = self.redis.max_retries.saturating_add(1);
        for o in ids {
            match self.pel.get_mut(&o) {
                None => {} // acked meanwhile
                Some(d) if *d >= limit => {
                    self.pel.remove(&o);
                    self.dead.push(o);
                    self.durable += 1;
                }
                Some(d) => {
                    *d += 1;
                    self.replay.push_back(o);
                }
            }
        }
    }

    /// `XACK` (Redis) or the commit of an acked offset (Kafka).
    fn xack(&mut self, offset: u64) {
        match self.model {
            SourceModel::Redis => {
                if self.pel.remove(&offset).is_some() {
                    self.durable += 1;
                }
            }
            SourceModel::Kafka => {
                if offset >= self.commit_point {
                    let i = (offset - self.commit_point) as usize;
                    if let Some(a) = self.acked.get_mut(i) {
                        *a = true;
                    }
                    while self.acked.front() == Some(&true) {
                        self.acked.pop_front();
                        self.commit_point += 1;
                    }
                }
                if !self.down {
                    self.durable = self.commit_point;
                }
            }
        }
    }

    /// Undoes the last [`next_emit`](Self::next_emit) when the spout could not emit it (the offset goes
    /// back to the front of the queue to emit).
    pub fn unread(&mut self, msg_id: u64) {
        if msg_id + 1 == self.emits.len() as u64 {
            if let Some(e) = self.emits.pop() {
                self.replay.push_front(e.offset);
            }
        }
    }

    fn decide(&mut self, msg_id: u64, state: EmitState) -> Option<u64> {
        let now = self.now_ns;
        match self.emits.get_mut(msg_id as usize) {
            None => {
                self.errors.push(CallbackError::Unknown { msg_id });
                None
            }
            Some(e) if e.state != EmitState::Pending => {
                self.errors.push(CallbackError::Twice { msg_id });
                None
            }
            Some(e) => {
                e.state = state;
                e.decided_ns = now;
                // Only the consumer that emitted it acts on it.
                (e.incarnation == self.incarnation).then_some(e.offset)
            }
        }
    }

    /// The spout's `ack(msg_id)`. Kafka: the offset is done; the commit point advances over
    /// every acked offset below the first unacked one. Redis: `XACK` removes the entry from the
    /// pending list. While the source is down the ack is held (Kafka: the commit point advances
    /// in the consumer's memory only).
    #[inline]
    pub fn ack(&mut self, msg_id: u64) {
        if let Some(offset) = self.decide(msg_id, EmitState::Acked) {
            if self.down && self.model == SourceModel::Redis {
                self.held_acks.push(offset);
            } else {
                self.xack(offset);
            }
        }
    }

    /// The spout's `fail(msg_id)`: Kafka queues the offset for replay; Redis queues the entry
    /// to be claimed again (or dead-lettered past the retry limit) at the next read.
    pub fn fail(&mut self, msg_id: u64) {
        if let Some(offset) = self.decide(msg_id, EmitState::Failed) {
            match self.model {
                SourceModel::Kafka => self.replay.push_back(offset),
                SourceModel::Redis => self.retry.push_back(offset),
            }
        }
    }

    /// Takes the highest offset the spout passed for the first time since the last call, if any
    /// (for offset-triggered faults): the offset first emitted by the last spout step, or (Redis
    /// at-most-once) the last entry a crashed consumer had read and lost unemitted.
    pub fn take_newly_read(&mut self) -> Option<u64> {
        self.newly_read.take()
    }

    /// A handle on the newly-read offset, whose [`NewlyRead::take`] is
    /// [`take_newly_read`](Self::take_newly_read) without locking the log (the simulator's
    /// progress probe runs after every spout step).
    pub fn newly_read_handle(&self) -> NewlyRead {
        self.newly_read.clone()
    }

    /// Offsets in the log.
    pub fn tuples(&self) -> u64 {
        self.tuples
    }

    /// What the server holds as done. Kafka: the committed offset (every offset below it is
    /// acked). Redis: the number of entries acknowledged in the group (acked, dead-lettered or
    /// read with `NOACK`).
    pub fn committed(&self) -> u64 {
        self.durable
    }

    /// Whether every offset is committed (Redis: every entry delivered and acknowledged, nothing
    /// read is left to emit, and no passed offset waits for [`take_newly_read`](Self::take_newly_read)).
    pub fn is_done(&self) -> bool {
        match self.model {
            SourceModel::Kafka => self.durable >= self.tuples,
            // Not before the spout has taken a step past entries a crash lost (offset-triggered
            // faults on them are still to fire).
            SourceModel::Redis => {
                self.durable >= self.tuples
                    && self.replay.is_empty()
                    && self.held_acks.is_empty()
                    && self.newly_read.is_none()
            }
        }
    }

    /// Whether the current consumer has read every offset and has nothing to replay.
    pub fn read_all(&self) -> bool {
        match self.model {
            SourceModel::Kafka => self.next_read >= self.tuples && self.replay.is_empty(),
            SourceModel::Redis => {
                self.last_delivered >= self.tuples
                    && self.replay.is_empty()
                    && self.retry.is_empty()
                    && !self.own_pending
            }
        }
    }

    /// Redis: entries pending in the group now (delivered, not acknowledged); Kafka: 0.
    pub fn pending_entries(&self) -> u64 {
        self.pel.len() as u64
    }

    /// Redis: how many own pending entries each restarted consumer took back, one number per
    /// restart (empty for Kafka and for at-most-once, which has no pending entries).
    pub fn redelivered(&self) -> &[u64] {
        &self.redelivered
    }

    /// Redis: the dead-lettered offsets, in order (empty for Kafka).
    pub fn dead_lettered(&self) -> &[u64] {
        &self.dead
    }

    /// The current consumer's incarnation.
    pub fn incarnation(&self) -> u32 {
        self.incarnation
    }

    /// Every emit so far, indexed by message id.
    pub fn emits(&self) -> &[EmitRecord] {
        &self.emits
    }

    /// Callbacks the oracle must flag.
    pub fn callback_errors(&self) -> &[CallbackError] {
        &self.errors
    }
}

/// The sink: every output, and the exactly-once state (see the [module docs](self)).
///
/// Three records are kept apart: the writes it received (`raw`), its de-duplication state
/// (`applied`, the sink's own bookkeeping), and the effects applied to its result (`result`, what
/// a reader of the sink's table sees). The oracles read the result, never the de-duplication
/// state, so a sink that fails to de-duplicate shows a duplicate.
#[derive(Debug)]
pub struct SinkStore {
    exactly_once: bool,
    dedup: bool,
    /// Raw writes per source offset.
    raw: Vec<u32>,
    /// Exactly-once state: whether each position is applied.
    applied: Vec<bool>,
    /// Effects applied to the result per source offset.
    result: Vec<u32>,
    writes: u64,
    absorbed: u64,
    out_of_range: u64,
    down: bool,
}

impl SinkStore {
    /// A sink for offsets `0..tuples`; with `exactly_once` it keeps transactional state.
    pub fn new(tuples: u64, exactly_once: bool) -> Self {
        Self {
            exactly_once,
            dedup: true,
            raw: vec![0; tuples as usize],
            applied: if exactly_once {
                vec![false; tuples as usize]
            } else {
                Vec::new()
            },
            result: vec![0; tuples as usize],
            writes: 0,
            absorbed: 0,
            out_of_range: 0,
            down: false,
        }
    }

    /// A sink outage starts (`true`) or ends (`false`): while down the sink bolt cannot commit,
    /// so it holds its inputs unacked and writes them when the sink is back.
    pub fn set_down(&mut self, down: bool) {
        self.down = down;
    }

    /// Whether the sink is down (an outage).
    pub fn is_down(&self) -> bool {
        self.down
    }

    /// The planted bug `sink-without-dedup`: an exactly-once sink that skips its
    /// de-duplication check (it still records positions as applied).
    pub fn without_dedup(mut self) -> Self {
        self.dedup = false;
        self
    }

    /// Writes the output for source position `offset`. Returns whether it changed the result
    /// (always, except an exactly-once replay of a position already applied).
    pub fn write(&mut self, offset: u64) -> bool {
        self.writes += 1;
        let Some(c) = self.raw.get_mut(offset as usize) else {
            self.out_of_range += 1;
            return true;
        };
        *c += 1;
        if self.exactly_once {
            let a = &mut self.applied[offset as usize];
            if *a && self.dedup {
                self.absorbed += 1;
                return false;
            }
            *a = true;
        }
        self.result[offset as usize] += 1;
        true
    }

    /// Every write received.
    pub fn writes(&self) -> u64 {
        self.writes
    }

    /// Writes absorbed by the exactly-once state.
    pub fn absorbed(&self) -> u64 {
        self.absorbed
    }

    /// Writes for a position outside the input (never expected).
    pub fn out_of_range(&self) -> u64 {
        self.out_of_range
    }

    /// Writes received for position `offset`.
    pub fn received(&self, offset: u64) -> u32 {
        self.raw.get(offset as usize).copied().unwrap_or(0)
    }

    /// How many times the result holds position `offset`'s effect (what a reader sees).
    pub fn effects(&self, offset: u64) -> u32 {
        self.result.get(offset as usize).copied().unwrap_or(0)
    }

    /// How many times the result holds position `offset` (the same as
    /// [`effects`](Self::effects)).
    pub fn count(&self, offset: u64) -> u32 {
        self.effects(offset)
    }

    /// (distinct positions in the result, duplicate records in the result).
    pub fn tally(&self) -> (u64, u64) {
        let mut distinct = 0;
        let mut dups = 0;
        for o in 0..self.result.len() as u64 {
            let c = self.effects(o) as u64;
            if c > 0 {
                distinct += 1;
                dups += c - 1;
            }
        }
        (distinct, dups)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_contiguously_and_resumes_from_commit() {
        let mut log = SourceLog::new(5);
        log.open_consumer();
        let a = log.next_emit().unwrap();
        let b = log.next_emit().unwrap();
        let c = log.next_emit().unwrap();
        assert_eq!((a.0, b.0, c.0), (0, 1, 2));
        log.ack(b.1);
        assert_eq!(log.committed(), 0);
        log.ack(a.1);
        assert_eq!(log.committed(), 2);
        log.fail(c.1);
        let r = log.next_emit().unwrap();
        assert_eq!(r.0, 2, "a failed offset is replayed first");
        log.next_emit().unwrap(); // offset 3
        log.open_consumer();
        assert_eq!(
            log.next_emit().unwrap().0,
            2,
            "a new consumer resumes from the commit"
        );
        // The old consumer's emit is decided later: recorded, but not acted on.
        log.ack(r.1);
        assert_eq!(log.committed(), 2);
        log.ack(r.1);
        assert_eq!(
            log.callback_errors(),
            &[CallbackError::Twice { msg_id: r.1 }]
        );
    }

    #[test]
    fn redis_restart_redelivers_only_own_pending_entries() {
        let opts = RedisOptions {
            read_batch: 2,
            max_retries: 1,
        };
        let mut log = SourceLog::with_model(6, SourceModel::Redis, opts, false);
        log.open_consumer();
        let a = log.next_emit().unwrap();
        let b = log.next_emit().unwrap();
        let c = log.next_emit().unwrap();
        assert_eq!((a.0, b.0, c.0), (0, 1, 2));
        assert_eq!(log.pending_entries(), 4, "0..4 read, 3 not yet emitted");
        log.ack(b.1);
        assert_eq!((log.pending_entries(), log.committed()), (3, 1));
        log.open_consumer();
        // Its own pending entries first (0 and 2 were in flight, 3 read but not emitted); 1 was
        // acked before the crash and is not delivered again (Kafka would replay from 0: 0, 1, 2).
        let again: Vec<(u64, u64)> = (0..3).map(|_| log.next_emit().unwrap()).collect();
        assert_eq!(again.iter().map(|e| e.0).collect::<Vec<_>>(), vec![0, 2, 3]);
        assert_eq!(log.redelivered(), &[3]);
        assert_eq!(log.next_emit().unwrap().0, 4, "then new entries");
        // The crashed consumer's emit is decided later: recorded, not acted on.
        log.ack(a.1);
        assert_eq!(log.pending_entries(), 5);
        // Offset 0 was delivered twice (1 + max_retries): its next failure dead-letters it.
        log.fail(again[0].1);
        assert_eq!(
            log.next_emit().unwrap().0,
            5,
            "read before, still in memory"
        );
        assert_eq!(log.next_emit(), None);
        assert_eq!(log.dead_lettered(), &[0]);
        assert_eq!((log.pending_entries(), log.committed()), (4, 2));
        // Offset 2 was delivered twice too, but its tree completes: acked, not dead-lettered.
        log.ack(again[1].1);
        assert_eq!((log.pending_entries(), log.committed()), (3, 3));
    }

    #[test]
    fn redis_at_most_once_reads_with_noack() {
        let opts = RedisOptions {
            read_batch: 3,
            max_retries: 5,
        };
        let mut log = SourceLog::with_model(5, SourceModel::Redis, opts, true);
        let newly = log.newly_read_handle();
        log.open_consumer();
        assert_eq!(newly.take(), None);
        let a = log.next_emit().unwrap();
        assert_eq!(a.0, 0);
        assert_eq!((log.pending_entries(), log.committed()), (0, 3));
        log.ack(a.1);
        assert_eq!(newly.take(), Some(0), "the handle takes what the log would");
        assert_eq!(log.take_newly_read(), None);
        log.open_consumer();
        // Entries 1 and 2 were read (acknowledged) but not emitted: the crash lost them, and the
        // spout has passed them (offset-triggered faults up to #2 are due).
        assert_eq!(log.take_newly_read(), Some(2));
        assert_eq!(log.next_emit().unwrap().0, 3);
        assert_eq!(log.redelivered(), &[] as &[u64]);
        assert_eq!(log.next_emit().unwrap().0, 4);
        assert_eq!(log.next_emit(), None);
        assert!(!log.is_done(), "offset 4 not yet observed");
        assert_eq!(log.take_newly_read(), Some(4));
        assert!(log.is_done());
    }

    #[test]
    fn outage_holds_acks_until_the_source_is_back() {
        for model in SourceModel::ALL {
            let opts = RedisOptions {
                read_batch: 2,
                max_retries: 5,
            };
            let mut log = SourceLog::with_model(4, model, opts, false);
            log.open_consumer();
            let a = log.next_emit().unwrap();
            log.set_down(true);
            assert!(log.is_down());
            let b = log.next_emit();
            match model {
                // Entry 1 was read with entry 0: in memory, emitted while Redis is down.
                SourceModel::Redis => assert_eq!(b.map(|e| e.0), Some(1)),
                SourceModel::Kafka => assert_eq!(b, None),
            }
            assert_eq!(log.next_emit(), None, "{model}: nothing new is read");
            log.ack(a.1);
            assert_eq!(log.committed(), 0, "{model}: the ack is held");
            log.set_down(false);
            assert_eq!(log.committed(), 1, "{model}: applied when back");
            // A crash during an outage loses the held acks: the entry is delivered again.
            let c = log.next_emit().unwrap();
            log.set_down(true);
            log.ack(c.1);
            log.open_consumer();
            log.set_down(false);
            assert_eq!(log.committed(), 1, "{model}");
            let first = log.next_emit().unwrap().0;
            assert_eq!(first, 1, "{model}: offset 1 again");
        }
    }

    #[test]
    fn source_model_names_round_trip() {
        for m in SourceModel::ALL {
            assert_eq!(m.name().parse::<SourceModel>(), Ok(m));
        }
        assert_eq!(
            "rabbit".parse::<SourceModel>().unwrap_err().to_string(),
            "unknown source model `rabbit`; known: kafka, redis"
        );
        assert_eq!(SourceModel::default(), SourceModel::Kafka);
    }

    #[test]
    fn sink_exactly_once_absorbs_replays() {
        let mut s = SinkStore::new(3, true);
        assert!(s.write(1));
        assert!(!s.write(1));
        assert_eq!(s.tally(), (1, 0));
        assert_eq!(s.absorbed(), 1);
        let mut s = SinkStore::new(3, false);
        s.write(1);
        s.write(1);
        s.write(2);
        assert_eq!(s.tally(), (2, 1));
    }
}
