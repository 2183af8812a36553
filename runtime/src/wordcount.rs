//! The word-count topology behind `acker-run wordcount` (Storm's `WordCountTopology`):
//!
//! ```text
//! lines (spout) --shuffle--> split (basic bolt) --fields("word")--> count (basic bolt)
//! ```
//!
//! - `lines` emits one tuple `(line_no, line)` per *piece*: every input line holding a
//!   word (lines of only whitespace hold none and are skipped), cut at whitespace into pieces of
//!   at most [`MAX_PIECE_BYTES`] when longer (a single word longer than that stays whole, and is
//!   sent alone, without the whitespace after it, as one shared string: [`Value::Shared`]). The
//!   message id is the piece's 1-based index, `line_no` is the line's 1-based number on the first
//!   emit and its negation on re-emits (a replay: two values, not three, stay inline in
//!   [`Values`](crate::Values) and save the tuple an allocation); on `fail` it re-emits the same
//!   piece (at-least-once). Task `i` of `n` owns the pieces whose
//!   index is `i` mod `n`. It keeps at most [`MAX_BYTES_IN_FLIGHT`] bytes of text emitted and not
//!   yet acked or failed (always at least one piece), which bounds the tuples in flight, and so
//!   the run's memory, whatever the line lengths: a 20 MB line is 320 pieces, 16 in flight.
//! - `split` emits one `(word)` per whitespace-separated word, anchored to the line (a word that
//!   came alone as a shared string is passed on as it is, not copied). With a fail
//!   rate P it fails a line, before emitting anything, with probability P the first time the line
//!   is emitted (`line_no > 0`; whichever split task receives it), never on a replay. The draw is
//!   a fixed hash of (topology seed, line number), so the same seed fails the same lines on any
//!   number of cores and in any arrival order; the replays then yield exact counts.
//! - `count` keeps a count per word (a shared string as it came) and hands its counts over in
//!   `cleanup` ([`SharedCounts`]). So a word is held at most twice in a run: in the input text,
//!   and in the counts or the one tuple carrying it.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use compact_str::CompactString;
use rand_core::{Rng, SeedableRng};
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
/// at whitespace (Unicode `White_Space`, the characters that separate the words the split bolt
/// counts) into pieces of at most this many bytes (a word longer than this stays
/// whole, in a piece of its own), each emitted as its own tuple tree. Cutting at whitespace
/// never splits a word, so the counts are those of the whole line.
pub const MAX_PIECE_BYTES: usize = 64 * 1024;

/// Most bytes of text a spout task keeps in flight (emitted, neither acked nor failed yet): 1 MiB.
/// It always has at least one piece in flight. Every word becomes a tuple of about 128 bytes on
/// its way, so this bounds the tuples in flight at about 25 MB of ordinary text whatever the
/// lines look like, and keeps a run's peak memory near the input size (the pieces) plus a
/// constant.
pub const MAX_BYTES_IN_FLIGHT: usize = 1 << 20;

/// The input text, held once, and where its pieces are: every line holding a word (a line of
/// only whitespace holds none), cut into pieces of at most [`MAX_PIECE_BYTES`] when longer.
/// Pieces are found by scanning the text as the spouts go (no per-line index), so the memory
/// is the text's size whatever the lines look like. Shared by every spout task; cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct Lines {
    /// An `Arc<String>`, not an `Arc<str>`: [`from_string`](Self::from_string) keeps the
    /// caller's allocation, where `Arc<str>` would copy the text (new-user trial: a 300 MB input
    /// was held twice while the copy was made).
    text: Arc<String>,
    lines: usize,
    pieces: usize,
    long_words: usize,
}

impl Lines {
    /// Keeps a copy of `text` (lines end at `\n`, a trailing `\r` removed) and counts its lines
    /// holding a word and their pieces. [`from_string`](Self::from_string) keeps a `String`
    /// without copying it.
    pub fn from_text(text: &str) -> Self {
        Self::from_string(text.to_owned())
    }

    /// As [`from_text`](Self::from_text), keeping `text` itself (no copy).
    pub fn from_string(text: String) -> Self {
        let mut l = Self {
            text: Arc::new(text),
            lines: 0,
            pieces: 0,
            long_words: 0,
        };
        let (mut lines, mut pieces, mut long_words, mut last_line) = (0, 0, 0, 0);
        for (line_no, piece) in l.iter() {
            pieces += 1;
            long_words += usize::from(piece.len() > MAX_PIECE_BYTES);
            if line_no != last_line {
                lines += 1;
                last_line = line_no;
            }
        }
        (l.lines, l.pieces, l.long_words) = (lines, pieces, long_words);
        l
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
        self.pieces
    }

    /// Pieces longer than [`MAX_PIECE_BYTES`]: each a single word too long to cut, which goes
    /// whole in a piece of its own.
    pub fn long_words(&self) -> usize {
        self.long_words
    }

    /// Whitespace-separated words over every line (what `wc -w` counts for ASCII text).
    pub fn words(&self) -> u64 {
        self.iter()
            .map(|(_, p)| p.split_whitespace().count() as u64)
            .sum()
    }

    /// The pieces with their 1-based line numbers, in input order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &str)> {
        let mut cursor = Cursor::default();
        std::iter::from_fn(move || {
            let (line_no, range) = cursor.next_piece(&self.text)?;
            Some((line_no, &self.text[range]))
        })
    }
}

/// Whether `line` holds a word, i.e. is neither empty nor only whitespace (Unicode
/// `White_Space`, as `str::split_whitespace`): the lines [`Lines`] keeps, and the lines
/// `acker-run load` turns into stream entries.
pub(crate) fn holds_a_word(line: &str) -> bool {
    match line.as_bytes().first() {
        // An ASCII first character that is not White_Space (the ASCII ones are U+0009..=U+000D
        // and U+0020) starts a word: the answer without decoding the line (nearly every line).
        Some(&b) if b.is_ascii() && !matches!(b, b'\t'..=b'\r' | b' ') => true,
        _ => line.split_whitespace().next().is_some(),
    }
}

/// Where the scan for the next piece resumes: a byte offset and the line number there.
#[derive(Clone, Copy, Debug)]
struct Cursor {
    offset: usize,
    line_no: u64,
}

impl Default for Cursor {
    fn default() -> Self {
        Self {
            offset: 0,
            line_no: 1,
        }
    }
}

impl Cursor {
    /// The next piece holding a word (its line number and byte range), moving past it; `None` at
    /// the end. Looks at most [`MAX_PIECE_BYTES`] + 1 bytes ahead, unless a word is longer.
    fn next_piece(&mut self, text: &str) -> Option<(u64, std::ops::Range<usize>)> {
        let b = text.as_bytes();
        loop {
            let start = self.offset;
            if start >= b.len() {
                return None;
            }
            let window = &b[start..b.len().min(start + MAX_PIECE_BYTES + 1)];
            let line_no = self.line_no;
            // memchr: a word of bytes at a time (a line is ~35 bytes; a byte loop cost ~4 Ir a byte).
            let end = match memchr::memchr(b'\n', window) {
                Some(nl) => {
                    // The rest of the line fits: one piece, without the newline (nor a `\r`).
                    self.offset = start + nl + 1;
                    self.line_no += 1;
                    let mut end = start + nl;
                    if end > start && b[end - 1] == b'\r' {
                        end -= 1;
                    }
                    end
                }
                None if window.len() <= MAX_PIECE_BYTES => {
                    self.offset = b.len();
                    b.len()
                }
                None => {
                    // A long line: cut after the last whitespace character (Unicode
                    // `White_Space`, as the split bolt's `split_whitespace` counts words) that
                    // ends within the first MAX_PIECE_BYTES, or after the first one past a
                    // longer word. (Cutting at ASCII whitespace only left a line whose words
                    // are separated by, say, U+00A0 uncut: one piece of any size, past the
                    // spout's bytes-in-flight bound; new-user trial.)
                    let mut limit = start + MAX_PIECE_BYTES;
                    while !text.is_char_boundary(limit) {
                        limit -= 1;
                    }
                    let after = |(i, c): (usize, char)| start + i + c.len_utf8();
                    let cut = match text[start..limit]
                        .char_indices()
                        .rfind(|&(_, c)| c.is_whitespace())
                    {
                        Some(ic) => after(ic),
                        // A word filling the first MAX_PIECE_BYTES to the byte, followed by
                        // whitespace (which may be a multi-byte character reaching past them):
                        // cut before the whitespace, so the piece stays within the bound.
                        None if limit > start
                            && text[limit..]
                                .chars()
                                .next()
                                .is_some_and(char::is_whitespace) =>
                        {
                            limit
                        }
                        None => text[start..]
                            .char_indices()
                            .find(|&(_, c)| c.is_whitespace())
                            .map_or(b.len(), after),
                    };
                    self.offset = cut;
                    // A newline right at the cut ends the line there.
                    if b[cut - 1] == b'\n' {
                        self.line_no += 1;
                    }
                    cut
                }
            };
            if holds_a_word(&text[start..end]) {
                return Some((line_no, start..end));
            }
        }
    }
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

/// The hasher of the `lines` spout's open pieces: a message id (a piece index, unique in the
/// map) times an odd constant, one multiply instead of SipHash's rounds (four lookups a line:
/// emit, its payload, settle, ack). No input chooses the keys, so no flooding defence is
/// needed; the low bits of the product (hashbrown's bucket index) are a bijection of the id's
/// low bits, so consecutive ids never collide there, and the top bits (its tag) mix them all.
#[derive(Clone, Copy, Debug, Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Not reached for `u64` keys (they use `write_u64`); correct for any bytes anyway.
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// The `lines` spout.
pub struct LineSpout {
    lines: Lines,
    stats: Arc<SpoutStats>,
    /// Pieces (by index) this task owns: `first, first + step, ...`.
    first: usize,
    step: usize,
    /// Where the scan for this task's next new piece resumes, and that piece's index.
    cursor: Cursor,
    next_index: usize,
    /// Emitted pieces neither acked nor failed, and failed pieces waiting for their replay: by
    /// message id, (line number, byte range). At most max spout pending of them.
    open: HashMap<MessageId, (u64, std::ops::Range<usize>), BuildHasherDefault<IdHasher>>,
    replay: VecDeque<MessageId>,
    /// One bit per piece (by message id): whether its tree completed.
    acked: Vec<u64>,
    acked_count: usize,
    owned: usize,
    /// Bytes of text emitted and not yet acked or failed.
    bytes_in_flight: usize,
    /// The most `bytes_in_flight` has been (what this task last put into the shared maximum).
    max_bytes_in_flight: usize,
}

impl LineSpout {
    /// A spout over `lines`, counting into `stats`.
    pub fn new(lines: Lines, stats: Arc<SpoutStats>) -> Self {
        Self {
            lines,
            stats,
            first: 0,
            step: 1,
            cursor: Cursor::default(),
            next_index: 0,
            open: HashMap::default(),
            replay: VecDeque::new(),
            acked: Vec::new(),
            acked_count: 0,
            owned: 0,
            bytes_in_flight: 0,
            max_bytes_in_flight: 0,
        }
    }

    /// Whether a piece of `len` bytes may go out now (see [`MAX_BYTES_IN_FLIGHT`]).
    fn room_for(&self, len: usize) -> bool {
        self.bytes_in_flight == 0 || self.bytes_in_flight + len <= MAX_BYTES_IN_FLIGHT
    }

    /// Emits piece `id` (line `line_no`, bytes `range` of the text); whether it went out.
    fn emit(
        &mut self,
        c: &mut SpoutOutputCollector<'_>,
        id: MessageId,
        (line_no, range): (u64, std::ops::Range<usize>),
        replay: bool,
    ) -> bool {
        let len = range.len();
        if !self.room_for(len) {
            return false;
        }
        let text = &self.lines.text[range];
        // A piece over MAX_PIECE_BYTES is one long word (the cut keeps every other piece within
        // them): sent as a shared string of the word alone, which the split bolt passes on and
        // the count bolt keeps as it is, so the word is copied once, not at every step
        // (new-user trial: a 300 MB word was copied by the spout, the split and the count
        // bolt, and the run peaked at 3 x the input).
        let piece = if len > MAX_PIECE_BYTES {
            Value::Shared(Arc::from(text.trim()))
        } else {
            Value::Str(CompactString::new(text))
        };
        let line_no = line_no as i64;
        let values = values![if replay { -line_no } else { line_no }, piece];
        if c.emit(values, Some(id)).is_err() {
            return false;
        }
        self.bytes_in_flight += len;
        // The shared maximum is raised only when this task's own maximum is (an atomic
        // read-modify-write per piece otherwise): the shared value is never below it.
        if self.bytes_in_flight > self.max_bytes_in_flight {
            self.max_bytes_in_flight = self.bytes_in_flight;
            self.stats
                .max_bytes_in_flight
                .fetch_max(self.bytes_in_flight as u64, Ordering::Relaxed);
        }
        true
    }

    /// Piece `msg_id` left the flight (acked or failed).
    fn settled(&mut self, msg_id: MessageId) {
        let len = self.open.get(&msg_id).map_or(0, |p| p.1.len());
        self.bytes_in_flight = self.bytes_in_flight.saturating_sub(len);
    }

    fn is_acked(&self, msg_id: MessageId) -> bool {
        let i = msg_id as usize;
        !matches!(self.acked.get(i / 64), Some(w) if w & (1 << (i % 64)) == 0)
    }
}

impl Spout for LineSpout {
    fn open(&mut self, context: &TopologyContext) {
        self.first = context.task_index;
        self.step = context.component_tasks.len().max(1);
        let n = self.lines.pieces();
        self.owned = if n > self.first {
            (n - self.first).div_ceil(self.step)
        } else {
            0
        };
        self.acked = vec![0; (n + 1).div_ceil(64)];
    }

    fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
        if let Some(&id) = self.replay.front() {
            // A piece no longer open counts as replayed, as before (not reached: a failed
            // piece stays open until its replay is acked).
            let went = match self.open.get(&id).cloned() {
                Some(piece) => self.emit(c, id, piece, true),
                None => true,
            };
            if went {
                self.replay.pop_front();
                self.stats.replays.fetch_add(1, Ordering::Relaxed);
            }
            return;
        }
        // This task's next new piece: skip the other tasks' pieces.
        let mut peek = self.cursor;
        let mut index = self.next_index;
        let found = loop {
            let Some(p) = peek.next_piece(&self.lines.text) else {
                break None;
            };
            index += 1;
            if (index - 1) % self.step == self.first {
                break Some(p);
            }
        };
        let Some((line_no, range)) = found else {
            self.cursor = peek;
            self.next_index = index;
            return;
        };
        let id = index as MessageId; // 1-based piece index
        self.open.insert(id, (line_no, range.clone()));
        if self.emit(c, id, (line_no, range), false) {
            self.cursor = peek;
            self.next_index = index;
            self.stats.lines_emitted.fetch_add(1, Ordering::Relaxed);
        } else {
            self.open.remove(&id);
        }
    }

    fn ack(&mut self, msg_id: MessageId) {
        // One lookup: the piece leaves the open set and the flight together.
        let len = self.open.remove(&msg_id).map_or(0, |p| p.1.len());
        self.bytes_in_flight = self.bytes_in_flight.saturating_sub(len);
        let i = msg_id as usize;
        match self.acked.get_mut(i / 64) {
            Some(w) if *w & (1 << (i % 64)) == 0 => {
                *w |= 1 << (i % 64);
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
        if !self.is_acked(msg_id) && self.open.contains_key(&msg_id) {
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
        let (Some(line_no), Some(line)) = (
            v.first().and_then(|x| x.as_int()),
            v.get(1).and_then(|x| x.as_str()),
        ) else {
            return Err(FailedException::new("expected (line_no, line)"));
        };
        // A replay carries the line number negated.
        if self.fail_rate > 0.0 && line_no > 0 && self.fails_first_time(line_no) {
            return Err(FailedException::new("injected failure"));
        }
        if let Value::Shared(_) = &v[1] {
            // A long word the spout sent alone (see `LineSpout::emit`): passed on as it is,
            // sharing its text, not copied.
            for w in line.split_whitespace() {
                let word = if w.len() == line.len() {
                    v[1].clone()
                } else {
                    Value::from(w)
                };
                c.emit(values![word])
                    .map_err(|e| FailedException::new(e.to_string()))?;
            }
            return Ok(());
        }
        for w in line.split_whitespace() {
            c.emit(values![w])
                .map_err(|e| FailedException::new(e.to_string()))?;
        }
        Ok(())
    }
}

/// The word counts the `count` tasks hand over when they stop. The words are `Arc<str>`, so
/// that a long word the spout sent as a shared string is handed over without a copy.
pub type SharedCounts = Arc<Mutex<BTreeMap<Arc<str>, u64>>>;

/// The `count` bolt.
pub struct CountBolt {
    /// The counts by word, each word as it is handed over ([`SharedCounts`]): no conversion in
    /// `cleanup`, which with a copy per word (to `String`) held the words twice at the end
    /// of a run of many distinct words. A word that came as a shared string (a long word the
    /// spout sent alone: see `LineSpout::emit`) is kept as it came, without a copy.
    counts: HashMap<Arc<str>, u64>,
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
        let value = &input.values()[0];
        let word = match value {
            Value::Str(s) => s.as_str(),
            other => other.as_str().unwrap_or_default(),
        };
        if let Some(n) = self.counts.get_mut(word) {
            *n += 1;
        } else {
            let key = match value {
                Value::Shared(s) => s.clone(),
                _ => Arc::from(word),
            };
            self.counts.insert(key, 1);
        }
        Ok(())
    }

    fn cleanup(&mut self) {
        // Taken, not drained: the table is freed once its words are moved out.
        let mine = std::mem::take(&mut self.counts);
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        merge_counts(&mut out, mine);
    }
}

/// Adds `mine` (word, count) into `out`, summing the counts of a word in both: sorted once and
/// merged with `out`'s sorted entries, the map then built in bulk (inserting word by word
/// searched the tree for each, ≈ 20 string comparisons a word, and split its nodes).
fn merge_counts(
    out: &mut BTreeMap<Arc<str>, u64>,
    mine: impl IntoIterator<Item = (Arc<str>, u64)>,
) {
    // Sorted by the first 8 bytes as one big-endian integer first (byte order, as `str`'s own
    // order), the whole word only when those are equal: most comparisons are one integer
    // compare instead of a `memcmp` call.
    let prefix = |w: &str| {
        let mut b = [0u8; 8];
        let n = w.len().min(8);
        b[..n].copy_from_slice(&w.as_bytes()[..n]);
        u64::from_be_bytes(b)
    };
    // Keyed as they come, with no list of the words before (32 B a distinct word at the end of a
    // run, not 56); the key computed once a word, not at each comparison (which cost 0.6 x the
    // whole cleanup more: callgrind, bench wordcount --cores 1).
    let mut keyed: Vec<(u64, (Arc<str>, u64))> =
        mine.into_iter().map(|p| (prefix(&p.0), p)).collect();
    keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1 .0.cmp(&b.1 .0)));
    let old = std::mem::take(out);
    let mut merged = Vec::with_capacity(old.len() + keyed.len());
    let (mut a, mut b) = (
        old.into_iter().peekable(),
        keyed.into_iter().map(|(_, p)| p).peekable(),
    );
    loop {
        let next = match (a.peek(), b.peek()) {
            (None, None) => break,
            (Some(_), None) => a.next(),
            (None, Some(_)) => b.next(),
            (Some(x), Some(y)) => match x.0.cmp(&y.0) {
                std::cmp::Ordering::Less => a.next(),
                std::cmp::Ordering::Greater => b.next(),
                std::cmp::Ordering::Equal => {
                    let (w, n) = a.next().unwrap_or_default();
                    let m = b.next().map_or(0, |p| p.1);
                    Some((w, n + m))
                }
            },
        };
        merged.extend(next);
    }
    // Sums within `mine` too, should a word come twice (the map of one count task never holds one twice).
    merged.dedup_by(|later, kept| {
        if later.0 == kept.0 {
            kept.1 += later.1;
            true
        } else {
            false
        }
    });
    *out = merged.into_iter().collect();
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
    .output_fields(&["line_no", "line"]);
    b.set_basic_bolt("split", move || SplitBolt::new(fail_rate), parallelism)
        .shuffle_grouping("lines")
        .output_fields(&["word"]);
    b.set_basic_bolt("count", move || CountBolt::new(counts.clone()), parallelism)
        .fields_grouping("split", &["word"]);
    Ok((b.build()?, outputs))
}

/// The top `n` words: count descending, then word ascending. The words are borrowed from
/// `counts`, not copied (a word may be as long as the input).
pub fn top_words(counts: &BTreeMap<Arc<str>, u64>, n: usize) -> Vec<(&str, u64)> {
    let mut v: Vec<(&str, u64)> = counts.iter().map(|(w, c)| (&**w, *c)).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
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
    fn merged_counts_sum_the_words_in_both() {
        let mut out = BTreeMap::from([(Arc::from("b"), 2), (Arc::from("d"), 1)]);
        let mine = vec![
            (Arc::from("e"), 5),
            (Arc::from("b"), 3),
            (Arc::from("a"), 1),
            (Arc::from("a"), 4),
        ];
        merge_counts(&mut out, mine);
        let got: Vec<(&str, u64)> = out.iter().map(|(w, &n)| (&**w, n)).collect();
        assert_eq!(got, [("a", 5), ("b", 5), ("d", 1), ("e", 5)]);
        merge_counts(&mut out, Vec::new());
        assert_eq!(out.len(), 4);
        let mut empty: BTreeMap<Arc<str>, u64> = BTreeMap::new();
        merge_counts(&mut empty, vec![(Arc::from("z"), 7), (Arc::from("y"), 1)]);
        assert_eq!(
            empty,
            BTreeMap::from([(Arc::from("y"), 1), (Arc::from("z"), 7)])
        );
        // Words whose order shows in their later bytes, and past the 8-byte sort key.
        let mut out = BTreeMap::from([(Arc::from("ab"), 1), (Arc::from("abcdefgh1"), 1)]);
        let mine = ["ba", "ab", "ab", "abcdefgh2", "abcdefgh1", "abcdefgh", "\0"]
            .map(|w| (Arc::from(w), 2))
            .to_vec();
        merge_counts(&mut out, mine);
        let got: Vec<(&str, u64)> = out.iter().map(|(w, &n)| (&**w, n)).collect();
        assert_eq!(
            got,
            [
                ("\0", 2),
                ("ab", 5),
                ("abcdefgh", 2),
                ("abcdefgh1", 3),
                ("abcdefgh2", 2),
                ("ba", 2)
            ]
        );
    }

    #[test]
    fn holds_a_word_agrees_with_split_whitespace() {
        // Every ASCII character first, then Unicode whitespace (Rust's `char::is_whitespace`:
        // U+000B counts, U+001C..=U+001F do not) and non-ASCII letters.
        let mut lines: Vec<String> = (0u8..128).map(|b| format!("{}", b as char)).collect();
        lines.extend((0u8..128).map(|b| format!("{} x", b as char)));
        for s in [
            "",
            " ",
            "\u{b}",
            "\u{1c}",
            "\u{85}",
            "\u{a0}x",
            "\u{3000}",
            "\u{2028}\u{2029}",
        ] {
            lines.push(s.to_string());
        }
        lines.extend(["é", " é ", "\r\n", "\t\u{c}"].map(String::from));
        for l in &lines {
            assert_eq!(
                holds_a_word(l),
                l.split_whitespace().next().is_some(),
                "{l:?}"
            );
        }
        assert!(!holds_a_word("\u{b}"));
        assert!(holds_a_word("\u{1c}"));
    }

    #[test]
    fn whitespace_only_lines_hold_no_word_and_are_skipped() {
        let l = Lines::from_text("a b\n\n  \t \nc\r\n \n");
        assert_eq!((l.len(), l.pieces(), l.words()), (2, 2, 3));
        let nums: Vec<u64> = l.iter().map(|p| p.0).collect();
        assert_eq!(nums, vec![1, 4]);
    }

    #[test]
    fn long_lines_are_cut_at_whitespace_into_bounded_pieces() {
        let m = MAX_PIECE_BYTES;
        // Line 1: 3 m bytes of 5-byte words; line 2: a word longer than m between two short
        // ones; line 3 (CRLF): multi-byte characters around a cut.
        let mut text = "word ".repeat(3 * m / 5);
        text.push('\n');
        text.push_str(&format!("a {} b\n", "x".repeat(m + 10)));
        let line3 = "é".repeat(m / 2 - 1) + " " + &"ü ".repeat(m / 4);
        text.push_str(&line3);
        text.push_str("\r\n");
        let l = Lines::from_text(&text);
        let pieces: Vec<(u64, &str)> = l.iter().collect();
        assert_eq!(l.len(), 3);
        assert_eq!(l.pieces(), pieces.len());
        assert_eq!(l.words(), wc(&text));
        // Every piece is at most m bytes, except the one holding the long word.
        for (n, p) in &pieces {
            assert!(
                p.len() <= m || p.contains(&"x".repeat(m)),
                "line {n}: {}",
                p.len()
            );
        }
        // Pieces rejoin to their lines (cuts keep the whitespace on the left).
        for (n, line) in text.lines().enumerate() {
            let joined: String = pieces
                .iter()
                .filter(|p| p.0 == n as u64 + 1)
                .map(|p| p.1)
                .collect();
            assert_eq!(joined.trim_end(), line.trim_end(), "line {}", n + 1);
        }
        let per_line: Vec<u64> = pieces.iter().map(|p| p.0).collect();
        assert_eq!(per_line.iter().filter(|&&n| n == 1).count(), 3);
    }

    /// New-user trial: a line whose words are separated by non-ASCII whitespace only (U+00A0
    /// here) was never cut, one 47 MB piece past the spout's bytes-in-flight bound. Every
    /// `White_Space` character cuts, as `split_whitespace` counts words, including a multi-byte
    /// one that reaches past the first `MAX_PIECE_BYTES`.
    #[test]
    fn long_lines_are_cut_at_unicode_whitespace_too() {
        let m = MAX_PIECE_BYTES;
        let mut text = String::new();
        // One line each, 3 m bytes or more, words separated only by this character.
        for sep in ["\u{a0}", "\u{3000}", "\u{b}", "\u{2028}", "\u{85}"] {
            let words: Vec<String> = (0..(3 * m / 6)).map(|i| format!("w{}", i % 1000)).collect();
            text.push_str(&words.join(sep));
            text.push('\n');
        }
        // A word of m - 1 bytes, then U+3000 (3 bytes) across the m-th byte, then a word.
        text.push_str(&"x".repeat(m - 1));
        text.push_str("\u{3000}y\n");
        // A word of exactly m bytes, then a space.
        text.push_str(&"z".repeat(m));
        text.push_str(" q\n");
        let l = Lines::from_text(&text);
        let pieces: Vec<(u64, &str)> = l.iter().collect();
        assert_eq!(l.len(), 7);
        assert_eq!(l.words(), wc(&text));
        let words: u64 = pieces.iter().map(|p| wc(p.1)).sum();
        assert_eq!(words, wc(&text), "the pieces hold every word once");
        for (n, p) in &pieces {
            assert!(p.len() <= m, "line {n}: a piece of {} bytes", p.len());
        }
        // Lines 1 to 5 are cut into about 3 pieces each (3 m bytes and more), not left whole.
        for n in 1..=5u64 {
            let k = pieces.iter().filter(|p| p.0 == n).count();
            assert!((3..=5).contains(&k), "line {n}: {k} pieces");
        }
        // Line 6: the long word alone, then U+3000 and y; line 7: the m-byte word, then " q".
        let line6: Vec<&str> = pieces.iter().filter(|p| p.0 == 6).map(|p| p.1).collect();
        assert_eq!(line6, vec!["x".repeat(m - 1).as_str(), "\u{3000}y"]);
        let line7: Vec<&str> = pieces.iter().filter(|p| p.0 == 7).map(|p| p.1).collect();
        assert_eq!(line7, vec!["z".repeat(m).as_str(), " q"]);
    }

    fn wc(text: &str) -> u64 {
        text.split_whitespace().count() as u64
    }
}
