//! The reliable source and the sink: the outside world of the topology, which survives crashes.
//!
//! [`SourceLog`] behaves like a Kafka partition read by a reliable spout (the seed experiment used
//! Kafka with self-managed offsets): offsets `0..tuples` hold the unique sequential numbers; the
//! consumer commits on ack (the committed offset is the lowest offset not yet acked), replays an
//! offset on fail, and after a spout crash a new consumer resumes from the last committed offset,
//! forgetting everything else. Every emit gets its own message id, so the oracle can check that
//! each emit gets at most one final callback.
//!
//! [`SinkStore`] records every output written. Under exactly-once it also keeps idempotent,
//! transactional state keyed by source position (as Trident's transactional state keys each
//! update by transaction id): a write for a position already applied is absorbed.

use std::collections::VecDeque;

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
    committed: u64,
    // Consumer state, lost on a spout crash.
    next_read: u64,
    /// Acked flags of offsets `committed..next_read`.
    acked: VecDeque<bool>,
    replay: VecDeque<u64>,
    incarnation: u32,
    opened: bool,
    // Observations (not part of the modelled system).
    emits: Vec<EmitRecord>,
    high_water: u64,
    errors: Vec<CallbackError>,
    now_ns: u64,
    newly_read: Option<u64>,
}

impl SourceLog {
    /// A log of `tuples` offsets, nothing read or committed.
    pub fn new(tuples: u64) -> Self {
        Self {
            tuples,
            committed: 0,
            next_read: 0,
            acked: VecDeque::new(),
            replay: VecDeque::new(),
            incarnation: 0,
            opened: false,
            emits: Vec::new(),
            high_water: 0,
            errors: Vec::new(),
            now_ns: 0,
            newly_read: None,
        }
    }

    /// A new consumer takes over (spout start or restart): it resumes from the committed offset
    /// and forgets the previous consumer's in-memory state (read position, acks above the commit
    /// point, replay queue). Returns the new incarnation number (0 for the first consumer).
    pub fn open_consumer(&mut self) -> u32 {
        if self.opened {
            self.incarnation += 1;
        }
        self.opened = true;
        self.next_read = self.committed;
        self.acked.clear();
        self.replay.clear();
        self.incarnation
    }

    /// Sets the simulated time stamped on emits and callbacks (the simulator calls it before
    /// each spout step: the user's spout reads no clock).
    pub fn set_now(&mut self, now_ns: u64) {
        self.now_ns = now_ns;
    }

    /// The next offset to emit (a replay first, else the next unread offset) and its new message
    /// id, or `None` when there is nothing to emit.
    pub fn next_emit(&mut self) -> Option<(u64, u64)> {
        let offset = if let Some(o) = self.replay.pop_front() {
            o
        } else if self.next_read < self.tuples {
            let o = self.next_read;
            self.next_read += 1;
            self.acked.push_back(false);
            if o >= self.high_water {
                self.high_water = o + 1;
                self.newly_read = Some(o);
            }
            o
        } else {
            return None;
        };
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

    /// Undoes the last [`next_emit`](Self::next_emit) when the spout could not emit it (the offset goes
    /// back to the front of the replay queue).
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

    /// The spout's `ack(msg_id)`: the offset is done; the commit point advances over every
    /// acked offset below the first unacked one.
    pub fn ack(&mut self, msg_id: u64) {
        if let Some(offset) = self.decide(msg_id, EmitState::Acked) {
            if offset >= self.committed {
                let i = (offset - self.committed) as usize;
                if let Some(a) = self.acked.get_mut(i) {
                    *a = true;
                }
                while self.acked.front() == Some(&true) {
                    self.acked.pop_front();
                    self.committed += 1;
                }
            }
        }
    }

    /// The spout's `fail(msg_id)`: the offset is queued for replay.
    pub fn fail(&mut self, msg_id: u64) {
        if let Some(offset) = self.decide(msg_id, EmitState::Failed) {
            self.replay.push_back(offset);
        }
    }

    /// Takes the offset first read by the last spout step, if any (for offset-triggered faults).
    pub fn take_newly_read(&mut self) -> Option<u64> {
        self.newly_read.take()
    }

    /// Offsets in the log.
    pub fn tuples(&self) -> u64 {
        self.tuples
    }

    /// The committed offset: every offset below it is acked.
    pub fn committed(&self) -> u64 {
        self.committed
    }

    /// Whether every offset is committed.
    pub fn is_done(&self) -> bool {
        self.committed >= self.tuples
    }

    /// Whether the current consumer has read every offset and has nothing to replay.
    pub fn read_all(&self) -> bool {
        self.next_read >= self.tuples && self.replay.is_empty()
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
        }
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
