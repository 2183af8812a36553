//! The word-count topology behind `acker-run wordcount` (Storm's `WordCountTopology`):
//!
//! ```text
//! lines (spout) --shuffle--> split (basic bolt) --fields("word")--> count (basic bolt)
//! ```
//!
//! - `lines` emits one tuple `(line_no, line, replay)` per *piece*: every input line holding a
//!   word (lines of only whitespace hold none and are skipped), cut at whitespace into pieces of
//!   at most [`MAX_PIECE_BYTES`] when longer (a single word longer than that stays whole). The
//!   message id is the piece's 1-based index, `replay` is 0 on the first emit and 1 on re-emits;
//!   on `fail` it re-emits the same piece (at-least-once). Task `i` of `n` owns the pieces whose
//!   index is `i` mod `n`. It keeps at most [`MAX_BYTES_IN_FLIGHT`] bytes of text emitted and not
//!   yet acked or failed (always at least one piece), which bounds the tuples in flight, and so
//!   the run's memory, whatever the line lengths: a 20 MB line is 320 pieces, 16 in flight.
//! - `split` emits one `(word)` per whitespace-separated word, anchored to the line. With a fail
//!   rate P it fails a line, before emitting anything, with probability P the first time the line
//!   is emitted (`replay == 0`; whichever split task receives it), never on a replay. The draw is
//!   a fixed hash of (topology seed, line number), so the same seed fails the same lines on any
//!   number of cores and in any arrival order; the replays then yield exact counts.
//! - `count` keeps a count per word and hands its counts over in `cleanup`.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use compact_str::CompactString;
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::api::{
    BasicBolt, BasicOutputCollector, FailedException, Input, Spout, SpoutOutputCollector,
    TopologyContext,
};
use crate::executor::task_seed;
use crate::message::{MessageId, Value};
use crate::topology::{Topology, TopologyBuilder, TopologyError};
use crate::values;

/// Longest piece of a line the spout emits as one tuple, in bytes (64 KiB): a longer line is cut
/// at ASCII whitespace into pieces of at most this many bytes (a word longer than this stays
/// whole, in a piece of its own), each emitted as its own tuple tree. Cutting at whitespace
/// never splits a word, so the counts are those of the whole line.
pub const MAX_PIECE_BYTES: usize = 64 * 1024;

/// Most bytes of text a spout task keeps in flight (emitted, neither acked nor failed yet): 1 MiB.
/// It always has at least one piece in flight. Every word becomes a tuple of about 128 bytes on
/// its way, so this bounds the tuples in flight at about 25 MB of ordinary text whatever the
/// lines look like, and keeps a run's peak memory near the input size (the pieces) plus a
/// constant.
pub const MAX_BYTES_IN_FLIGHT: usize = 1 << 20;

/// The input: the pieces of every line that holds a word (see [`MAX_PIECE_BYTES`]), each with its
/// 1-based line number, shared by every spout task.
#[derive(Clone, Debug, Default)]
pub struct Lines {
    pieces: Arc<Vec<(u64, Arc<str>)>>,
    lines: usize,
}

impl Lines {
    /// Splits `text` into lines (`\n`, with a trailing `\r` removed), keeps those holding at
    /// least one word (a line of only whitespace holds none), and cuts each longer than
    /// [`MAX_PIECE_BYTES`] into pieces at whitespace.
    pub fn from_text(text: &str) -> Self {
        let mut pieces = Vec::new();
        let mut lines = 0;
        for (i, l) in text.lines().enumerate() {
            if l.split_whitespace().next().is_none() {
                continue;
            }
            lines += 1;
            for p in cut(l, MAX_PIECE_BYTES) {
                pieces.push((i as u64 + 1, Arc::<str>::from(p)));
            }
        }
        Self {
            pieces: Arc::new(pieces),
            lines,
        }
    }

    /// Number of lines holding at least one word.
    pub fn len(&self) -> usize {
        self.lines
    }

    /// Whether no line holds a word.
    pub fn is_empty(&self) -> bool {
        self.lines == 0
    }

    /// Number of pieces (tuples the spouts emit once each): [`len`](Self::len) plus one for
    /// every cut of a long line.
    pub fn pieces(&self) -> usize {
        self.pieces.len()
    }

    /// Whitespace-separated words over every line (what `wc -w` counts for ASCII text).
    pub fn words(&self) -> u64 {
        self.pieces
            .iter()
            .map(|(_, l)| l.split_whitespace().count() as u64)
            .sum()
    }

    /// The pieces with their line numbers, in input order.
    pub fn iter(&self) -> impl Iterator<Item = &(u64, Arc<str>)> {
        self.pieces.iter()
    }
}

/// Cuts `line` at ASCII whitespace into pieces of at most `max` bytes (a run without whitespace
/// longer than `max` stays whole). ASCII bytes never occur inside a multi-byte UTF-8 character,
/// so every cut is at a character boundary; the whitespace at a cut stays with the left piece.
fn cut(line: &str, max: usize) -> impl Iterator<Item = &str> {
    let mut rest = line;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        if rest.len() <= max {
            return Some(std::mem::take(&mut rest));
        }
        let b = rest.as_bytes();
        let at = match b[..max].iter().rposition(u8::is_ascii_whitespace) {
            Some(i) if i > 0 => i + 1,
            _ => b
                .iter()
                .position(u8::is_ascii_whitespace)
                .map_or(b.len(), |i| i + 1),
        };
        let (piece, tail) = rest.split_at(at);
        rest = tail;
        Some(piece)
    })
}

/// A deterministic text of `num_lines` lines of 4 to 12 words drawn from a fixed vocabulary by a
/// xoshiro stream seeded with `seed` (the built-in input of `acker-run wordcount`).
pub fn generate_sentences(num_lines: usize, seed: u64) -> String {
    const WORDS: &[&str] = &[
        "the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "storm", "spout", "bolt",
        "tuple", "stream", "acker", "anchor", "tree", "root", "edge", "xor", "ack", "fail",
        "replay", "timeout", "pending", "task", "executor", "topology", "grouping", "shuffle",
        "fields", "and", "a", "of", "to", "in", "is", "it", "that", "with", "for", "on", "as",
        "was", "he", "she", "they", "we", "you", "king", "queen", "lord", "sweet", "love", "night",
        "day", "time", "world", "heart", "death", "life", "blood", "crown", "sword",
    ];
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut out = String::with_capacity(num_lines * 48);
    for _ in 0..num_lines {
        let n = 4 + (rng.next_u64() % 9) as usize;
        for j in 0..n {
            if j > 0 {
                out.push(' ');
            }
            // Skewed choice: low indices are more frequent, as in real text.
            let a = rng.next_u64() % WORDS.len() as u64;
            let b = rng.next_u64() % WORDS.len() as u64;
            out.push_str(WORDS[a.min(b) as usize]);
        }
        out.push('\n');
    }
    out
}

/// Counters the word-count spouts share with the caller (a "line" here is a piece: see
/// [`Lines`]).
#[derive(Debug, Default)]
pub struct SpoutStats {
    /// Pieces emitted for the first time.
    pub lines_emitted: AtomicU64,
    /// Pieces emitted again after a fail or timeout.
    pub replays: AtomicU64,
    /// Pieces whose tree completed (`ack` calls).
    pub acked: AtomicU64,
    /// Pieces acked more than once (must stay 0: a piece is acked exactly once).
    pub acked_twice: AtomicU64,
    /// Most bytes of text the spouts had in flight at once (at most [`MAX_BYTES_IN_FLIGHT`] a
    /// task, unless one piece alone is longer).
    pub max_bytes_in_flight: AtomicU64,
}

/// The `lines` spout.
pub struct LineSpout {
    lines: Lines,
    stats: Arc<SpoutStats>,
    /// Positions (in `lines`) this task owns: `first, first + step, ...`.
    first: usize,
    step: usize,
    next: usize,
    replay: VecDeque<MessageId>,
    /// Indexed by message id (piece index + 1): whether that piece's tree completed.
    acked: Vec<bool>,
    acked_count: usize,
    owned: usize,
    /// Bytes of text emitted and not yet acked or failed.
    bytes_in_flight: usize,
}

impl LineSpout {
    /// A spout over `lines`, counting into `stats`.
    pub fn new(lines: Lines, stats: Arc<SpoutStats>) -> Self {
        Self {
            lines,
            stats,
            first: 0,
            step: 1,
            next: 0,
            replay: VecDeque::new(),
            acked: Vec::new(),
            acked_count: 0,
            owned: 0,
            bytes_in_flight: 0,
        }
    }

    /// The piece with message id `msg_id` and its line number.
    fn piece(&self, msg_id: MessageId) -> Option<&(u64, Arc<str>)> {
        self.lines.pieces.get((msg_id as usize).checked_sub(1)?)
    }

    /// Whether a piece of `len` bytes may go out now (see [`MAX_BYTES_IN_FLIGHT`]).
    fn room_for(&self, len: usize) -> bool {
        self.bytes_in_flight == 0 || self.bytes_in_flight + len <= MAX_BYTES_IN_FLIGHT
    }

    fn sent(&mut self, len: usize) {
        self.bytes_in_flight += len;
        self.stats
            .max_bytes_in_flight
            .fetch_max(self.bytes_in_flight as u64, Ordering::Relaxed);
    }

    fn settled(&mut self, msg_id: MessageId) {
        let len = self.piece(msg_id).map_or(0, |p| p.1.len());
        self.bytes_in_flight = self.bytes_in_flight.saturating_sub(len);
    }
}

impl Spout for LineSpout {
    fn open(&mut self, context: &TopologyContext) {
        self.first = context.task_index;
        self.step = context.component_tasks.len().max(1);
        self.next = self.first;
        let n = self.lines.pieces();
        self.owned = if n > self.first {
            (n - self.first).div_ceil(self.step)
        } else {
            0
        };
        self.acked = vec![false; n + 1];
    }

    fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
        if let Some(&id) = self.replay.front() {
            let Some((line_no, piece)) = self.piece(id).cloned() else {
                self.replay.pop_front();
                return;
            };
            if !self.room_for(piece.len()) {
                return;
            }
            let len = piece.len();
            if c.emit(values![line_no as i64, piece, 1i64], Some(id))
                .is_ok()
            {
                self.replay.pop_front();
                self.sent(len);
                self.stats.replays.fetch_add(1, Ordering::Relaxed);
            }
            return;
        }
        let Some((line_no, piece)) = self.lines.pieces.get(self.next).cloned() else {
            return;
        };
        if !self.room_for(piece.len()) {
            return;
        }
        let (id, len) = (self.next as MessageId + 1, piece.len());
        if c.emit(values![line_no as i64, piece, 0i64], Some(id))
            .is_ok()
        {
            self.next += self.step;
            self.sent(len);
            self.stats.lines_emitted.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn ack(&mut self, msg_id: MessageId) {
        self.settled(msg_id);
        match self.acked.get_mut(msg_id as usize) {
            Some(seen) if !*seen => {
                *seen = true;
                self.acked_count += 1;
                self.stats.acked.fetch_add(1, Ordering::Relaxed);
            }
            _ => {
                self.stats.acked_twice.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn fail(&mut self, msg_id: MessageId) {
        self.settled(msg_id);
        if !self.acked.get(msg_id as usize).copied().unwrap_or(true) {
            self.replay.push_back(msg_id);
        }
    }

    fn is_done(&self) -> bool {
        self.acked_count >= self.owned
    }
}

/// The `split` bolt.
pub struct SplitBolt {
    fail_rate: f64,
    topology_seed: u64,
}

impl SplitBolt {
    /// A split bolt failing each line with probability `fail_rate` the first time it is emitted
    /// (never a replay), decided by a fixed hash of (topology seed, line number).
    pub fn new(fail_rate: f64) -> Self {
        Self {
            fail_rate,
            topology_seed: 0,
        }
    }

    /// Whether the first emit of `line_no` fails: a uniform draw in `[0, 1)` fixed by the
    /// topology seed and the line number, below the fail rate.
    fn fails_first_time(&self, line_no: i64) -> bool {
        let h = task_seed(self.topology_seed ^ 0x5b11_7b01_7000_0000, 0) ^ line_no as u64;
        let h = task_seed(h, 1);
        let draw = (h >> 11) as f64 / (1u64 << 53) as f64;
        draw < self.fail_rate
    }
}

impl BasicBolt for SplitBolt {
    fn prepare(&mut self, context: &TopologyContext) {
        self.topology_seed = context.topology_seed;
    }

    fn execute(
        &mut self,
        input: &Input,
        c: &mut BasicOutputCollector<'_, '_>,
    ) -> Result<(), FailedException> {
        let v = input.values();
        let (Some(line_no), Some(line), Some(replay)) = (
            v.first().and_then(|x| x.as_int()),
            v.get(1).and_then(|x| x.as_str()),
            v.get(2).and_then(|x| x.as_int()),
        ) else {
            return Err(FailedException::new("expected (line_no, line, replay)"));
        };
        if self.fail_rate > 0.0 && replay == 0 && self.fails_first_time(line_no) {
            return Err(FailedException::new("injected failure"));
        }
        for w in line.split_whitespace() {
            c.emit(values![w])
                .map_err(|e| FailedException::new(e.to_string()))?;
        }
        Ok(())
    }
}

/// The word counts the `count` tasks hand over when they stop.
pub type SharedCounts = Arc<Mutex<BTreeMap<String, u64>>>;

/// The `count` bolt.
pub struct CountBolt {
    counts: HashMap<CompactString, u64>,
    out: SharedCounts,
}

impl CountBolt {
    /// A count bolt that merges its counts into `out` in `cleanup`.
    pub fn new(out: SharedCounts) -> Self {
        Self {
            counts: HashMap::new(),
            out,
        }
    }
}

impl BasicBolt for CountBolt {
    fn execute(
        &mut self,
        input: &Input,
        _c: &mut BasicOutputCollector<'_, '_>,
    ) -> Result<(), FailedException> {
        let word = match &input.values()[0] {
            Value::Str(s) => s.as_str(),
            other => other.as_str().unwrap_or_default(),
        };
        if let Some(n) = self.counts.get_mut(word) {
            *n += 1;
        } else {
            self.counts.insert(CompactString::new(word), 1);
        }
        Ok(())
    }

    fn cleanup(&mut self) {
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        for (w, n) in self.counts.drain() {
            *out.entry(w.to_string()).or_insert(0) += n;
        }
    }
}

/// Everything a word-count run hands back besides the shell's report.
#[derive(Clone, Debug, Default)]
pub struct WordCountOutputs {
    /// The spouts' counters.
    pub stats: Arc<SpoutStats>,
    /// The final counts (filled when the count tasks stop).
    pub counts: SharedCounts,
}

/// Builds the word-count topology over `lines`: 1 spout task, `parallelism` split and count tasks.
///
/// # Errors
/// [`TopologyError::ZeroParallelism`] for `parallelism` 0.
pub fn topology(
    lines: Lines,
    parallelism: usize,
    fail_rate: f64,
) -> Result<(Topology, WordCountOutputs), TopologyError> {
    let outputs = WordCountOutputs::default();
    let (stats, counts) = (outputs.stats.clone(), outputs.counts.clone());
    let mut b = TopologyBuilder::new();
    b.set_spout(
        "lines",
        move || LineSpout::new(lines.clone(), stats.clone()),
        1,
    )
    .output_fields(&["line_no", "line", "replay"]);
    b.set_basic_bolt("split", move || SplitBolt::new(fail_rate), parallelism)
        .shuffle_grouping("lines")
        .output_fields(&["word"]);
    b.set_basic_bolt("count", move || CountBolt::new(counts.clone()), parallelism)
        .fields_grouping("split", &["word"]);
    Ok((b.build()?, outputs))
}

/// The top `n` words: count descending, then word ascending.
pub fn top_words(counts: &BTreeMap<String, u64>, n: usize) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = counts.iter().map(|(w, c)| (w.clone(), *c)).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v.truncate(n);
    v
}

/// The plain single-thread baseline: split on whitespace and count in a hash map.
pub fn plain_count(text: &str) -> HashMap<&str, u64> {
    let mut m: HashMap<&str, u64> = HashMap::new();
    for w in text.split_whitespace() {
        *m.entry(w).or_insert(0) += 1;
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_only_lines_hold_no_word_and_are_skipped() {
        let l = Lines::from_text("a b\n\n  \t \nc\r\n \n");
        assert_eq!((l.len(), l.pieces(), l.words()), (2, 2, 3));
        let nums: Vec<u64> = l.iter().map(|p| p.0).collect();
        assert_eq!(nums, vec![1, 4]);
    }

    #[test]
    fn long_lines_are_cut_at_whitespace_into_bounded_pieces() {
        let line = "ab cd  efg h ijklmnop q";
        let pieces: Vec<&str> = cut(line, 6).collect();
        assert_eq!(pieces, vec!["ab cd ", " efg ", "h ", "ijklmnop ", "q"]);
        assert_eq!(pieces.concat(), line);
        // Multi-byte characters are never split; words are those of the whole line.
        let line = "é".repeat(5) + " " + &"ü ".repeat(40);
        let pieces: Vec<&str> = cut(&line, 7).collect();
        assert_eq!(pieces.concat(), line);
        let words: usize = pieces.iter().map(|p| p.split_whitespace().count()).sum();
        assert_eq!(words, line.split_whitespace().count());
        assert!(pieces[1..].iter().all(|p| p.len() <= 7));
        // A line of 3 * MAX_PIECE_BYTES becomes pieces of at most MAX_PIECE_BYTES.
        let text = "word ".repeat(3 * MAX_PIECE_BYTES / 5);
        let l = Lines::from_text(&text);
        assert_eq!((l.len(), l.pieces()), (1, 3));
        assert_eq!(l.words(), (3 * MAX_PIECE_BYTES / 5) as u64);
        assert!(l.iter().all(|p| p.1.len() <= MAX_PIECE_BYTES));
    }
}
