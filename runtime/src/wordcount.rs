//! The word-count topology behind `acker-run wordcount` (Storm's `WordCountTopology`):
//!
//! ```text
//! lines (spout) --shuffle--> split (basic bolt) --fields("word")--> count (basic bolt)
//! ```
//!
//! - `lines` emits one tuple `(line_no, line, replay)` per non-empty input line, with message id =
//!   the line number (1-based), `replay` 0 on the first emit and 1 on re-emits; on `fail` it
//!   re-emits the same line (at-least-once). Task `i` of `n`
//!   owns the lines whose position among the non-empty lines is `i` mod `n`.
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

use crate::executor::{
    task_seed, BasicBolt, BasicOutputCollector, FailedException, Input, Spout,
    SpoutOutputCollector, TopologyContext,
};
use crate::message::{MessageId, Value};
use crate::topology::{Topology, TopologyBuilder, TopologyError};
use crate::values;

/// The input: every non-empty line with its 1-based line number, shared by every spout task.
#[derive(Clone, Debug, Default)]
pub struct Lines {
    lines: Arc<Vec<(u64, Arc<str>)>>,
}

impl Lines {
    /// Splits `text` into lines (`\n`, with a trailing `\r` removed) and keeps the non-empty
    /// ones with their line numbers.
    pub fn from_text(text: &str) -> Self {
        let lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.is_empty())
            .map(|(i, l)| (i as u64 + 1, Arc::<str>::from(l)))
            .collect();
        Self {
            lines: Arc::new(lines),
        }
    }

    /// Number of non-empty lines.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// Whether there is no non-empty line.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Whitespace-separated words over every line (what `wc -w` counts for ASCII text).
    pub fn words(&self) -> u64 {
        self.lines
            .iter()
            .map(|(_, l)| l.split_whitespace().count() as u64)
            .sum()
    }

    /// The non-empty lines with their line numbers.
    pub fn iter(&self) -> impl Iterator<Item = &(u64, Arc<str>)> {
        self.lines.iter()
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

/// Counters the word-count spouts share with the caller.
#[derive(Debug, Default)]
pub struct SpoutStats {
    /// Lines emitted for the first time.
    pub lines_emitted: AtomicU64,
    /// Lines emitted again after a fail or timeout.
    pub replays: AtomicU64,
    /// Lines whose tree completed (`ack` calls).
    pub acked: AtomicU64,
    /// Lines acked more than once (must stay 0: a line is acked exactly once).
    pub acked_twice: AtomicU64,
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
    /// Indexed by line number: whether that line's tree completed.
    acked: Vec<bool>,
    acked_count: usize,
    owned: usize,
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
        }
    }

    fn line(&self, msg_id: MessageId) -> Option<&Arc<str>> {
        self.lines
            .lines
            .binary_search_by_key(&msg_id, |(n, _)| *n)
            .ok()
            .map(|i| &self.lines.lines[i].1)
    }
}

impl Spout for LineSpout {
    fn open(&mut self, context: &TopologyContext) {
        self.first = context.task_index;
        self.step = context.component_tasks.len().max(1);
        self.next = self.first;
        let n = self.lines.len();
        self.owned = if n > self.first {
            (n - self.first).div_ceil(self.step)
        } else {
            0
        };
        let max_line = self.lines.lines.last().map(|l| l.0).unwrap_or(0);
        self.acked = vec![false; max_line as usize + 1];
    }

    fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
        if let Some(id) = self.replay.pop_front() {
            let Some(line) = self.line(id).cloned() else {
                return;
            };
            match c.emit(values![id as i64, line, 1i64], Some(id)) {
                Ok(_) => {
                    self.stats.replays.fetch_add(1, Ordering::Relaxed);
                }
                Err(_) => self.replay.push_front(id),
            }
            return;
        }
        if self.next >= self.lines.len() {
            return;
        }
        let (id, line) = self.lines.lines[self.next].clone();
        if c.emit(values![id as i64, line, 0i64], Some(id)).is_ok() {
            self.next += self.step;
            self.stats.lines_emitted.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn ack(&mut self, msg_id: MessageId) {
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
