//! Runs every structure on the same op stream in one process, checks that they agree, and
//! measures operations per second and memory.
//!
//! Each structure gets a fresh table with room for `capacity_for_window(W)` roots (load 0.8 at W
//! for acker-core, whose slots are its capacity; the peers grow their hash tables on demand and
//! only use the capacity as the [`acker_core::TableError::Full`] limit), applies the prefill (W
//! inits, untimed), then the timed messages. The figures:
//!
//! - **Mops/s**: timed messages ÷ wall time of the timed loop, in millions;
//! - **bytes per root**: the table's memory after the run ÷ roots in flight after the run
//!   (measured by a counting allocator when the caller provides one, else computed from the
//!   table's capacity and entry size);
//! - **bytes per slot** and **load**: memory ÷ slots, roots ÷ slots.
//!
//! Two modes ([`Mode`]): `pregenerated`, the timed loop reading the op stream from memory
//! (the goals are for it), and `in-loop`, each message produced inside the timed loop by
//! a [`MessageSource`] (as an engine's message loop does), [`IN_LOOP_BATCH`] at a time and then
//! applied with the structure's `apply_all` (acker-core's `apply_batch`), so the generator's cost
//! is added to every structure alike. Shared tables run pregenerated only.
//!
//! Every run's [`Outcome`] is checked field by field against the workload's expected one. For
//! `hashbrown-lean` the same check applies, but its `errors` and `full` fields check nothing: it
//! has no capacity limit, no expiry and no errors, so they are 0 by construction (the compare
//! workloads never fill a table, never tick, never send root 0 or a second init, so a correct
//! table gives 0 there too). Its `completed`, `pending` and `final_len` are real checks.

use std::time::{Duration, Instant};

use acker_core::{AckerMessage, AckerTable, Decision, Slot, TableError};
use serde::Serialize;

use crate::peers::{AckerStructure, HashbrownAcker, HashbrownLean, StormStyle};
use crate::shared::{
    CoreShared, CoreSharedBatch, DashMapAcker, MutexHashbrown, SharedAckerStructure,
};
use crate::workload::{MessageSource, Workload, WorkloadConfig};

/// The load acker-core's table is sized for: `capacity = ceil(W / 0.8)`.
pub const TARGET_LOAD_PERCENT: usize = 80;

/// Storm's default message timeout (`topology.message.timeout.secs` = 30 s).
pub const MESSAGE_TIMEOUT_NS: u64 = 30_000_000_000;

/// The load the shared tables are sized for: `capacity = 2 W`. acker-core's `SharedAckerTable`
/// probes a window of at most 64 slots and returns `Full` when its window is taken, which at
/// loads of 0.6 and above happens for a few roots in a million on this workload (so the run would
/// not agree with the others); at 0.5 it never did here.
pub const SHARED_TARGET_LOAD_PERCENT: usize = 50;

/// Roots of table capacity for W roots in flight: `ceil(W × 100 / 80)`.
pub fn capacity_for_window(window: usize) -> usize {
    (window * 100).div_ceil(TARGET_LOAD_PERCENT).max(1)
}

/// Roots of shared-table capacity for W roots in flight: `ceil(W × 100 / 50)`.
pub fn shared_capacity_for_window(window: usize) -> usize {
    (window * 100).div_ceil(SHARED_TARGET_LOAD_PERCENT).max(1)
}

/// How the timed messages reach the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Generated before timing; the timed loop reads them from a `Vec` (the goals).
    Pregenerated,
    /// Produced inside the timed loop by a [`MessageSource`], [`IN_LOOP_BATCH`] at a time.
    InLoop,
}

impl Mode {
    /// The name in reports and JSON rows: `pregenerated` or `in-loop`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Pregenerated => "pregenerated",
            Mode::InLoop => "in-loop",
        }
    }
}

/// Messages the in-loop mode produces into a buffer before handing them to `apply_all`
/// (an engine's message loop drains its queue in batches of this order).
pub const IN_LOOP_BATCH: usize = 64;

/// A function returning the bytes currently allocated by the process (a counting allocator).
pub type LiveBytes = fn() -> usize;

/// What a run decided: counts of each decision and error, and the roots in flight after it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Outcome {
    /// `Completed` decisions.
    pub completed: u64,
    /// `Failed` decisions.
    pub failed: u64,
    /// `Reset` decisions.
    pub reset: u64,
    /// `Pending` decisions.
    pub pending: u64,
    /// Errors (of any kind, `full` included).
    pub errors: u64,
    /// [`TableError::Full`] errors.
    pub full: u64,
    /// Live roots after the run.
    pub final_len: usize,
    #[serde(skip)]
    by_class: [u64; 6],
}

impl Outcome {
    /// Counts one result. Branch-free (a table lookup on the result's class), so that the
    /// harness adds as little as possible to every structure's time.
    #[inline]
    fn count(&mut self, r: Result<Decision, TableError>) {
        let class = match r {
            Ok(Decision::Pending) => 0,
            Ok(Decision::Completed { .. }) => 1,
            Ok(Decision::Failed { .. }) => 2,
            Ok(Decision::Reset { .. }) => 3,
            Err(TableError::Full) => 5,
            Err(_) => 4,
        };
        self.by_class[class] += 1;
    }

    fn settle(mut self, final_len: usize) -> Outcome {
        self.pending = self.by_class[0];
        self.completed = self.by_class[1];
        self.failed = self.by_class[2];
        self.reset = self.by_class[3];
        self.full = self.by_class[5];
        self.errors = self.by_class[4] + self.by_class[5];
        self.by_class = [0; 6];
        self.final_len = final_len;
        self
    }
}

/// One timed run of one structure.
#[derive(Clone, Debug)]
pub struct Measurement {
    /// The structure's name.
    pub structure: &'static str,
    /// Threads that drove it (`None`: a single-owner table).
    pub threads: Option<usize>,
    /// How the timed messages reached the table.
    pub mode: Mode,
    /// W.
    pub window: usize,
    /// Decisions and errors of the timed messages, and roots in flight after them.
    pub outcome: Outcome,
    /// Timed messages.
    pub ops: usize,
    /// Wall time of the timed messages.
    pub elapsed: Duration,
    /// Memory of the table after the run, in bytes (allocator-measured heap + header when
    /// measured, else computed).
    pub memory_bytes: usize,
    /// Whether `memory_bytes` came from the counting allocator.
    pub memory_measured: bool,
    /// The table's memory computed from its capacity and entry size.
    pub memory_computed_bytes: usize,
    /// Slots the table has after the run.
    pub slots: usize,
}

impl Measurement {
    /// Millions of messages per second.
    pub fn mops(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64().max(1e-12) / 1e6
    }

    /// Nanoseconds per message.
    pub fn ns_per_op(&self) -> f64 {
        self.elapsed.as_secs_f64() * 1e9 / self.ops.max(1) as f64
    }

    /// Memory ÷ roots in flight after the run.
    pub fn bytes_per_root(&self) -> f64 {
        self.memory_bytes as f64 / self.outcome.final_len.max(1) as f64
    }

    /// Memory ÷ slots.
    pub fn bytes_per_slot(&self) -> f64 {
        self.memory_bytes as f64 / self.slots.max(1) as f64
    }

    /// Roots in flight ÷ slots.
    pub fn load(&self) -> f64 {
        self.outcome.final_len as f64 / self.slots.max(1) as f64
    }
}

/// acker-core's table driven one message at a time through [`AckerTable::apply`] (the
/// [`AckerStructure`] impl of `AckerTable` may batch), to measure what batching brings.
#[derive(Debug)]
pub struct OneAtATime(pub AckerTable<Box<[Slot]>>);

impl AckerStructure for OneAtATime {
    const NAME: &'static str = "acker-core-one-at-a-time";

    fn with_capacity(capacity_roots: usize, message_timeout_ns: u64) -> Self {
        OneAtATime(AckerStructure::with_capacity(
            capacity_roots,
            message_timeout_ns,
        ))
    }

    #[inline]
    fn apply(&mut self, message: AckerMessage) -> Result<Decision, TableError> {
        self.0.apply(message)
    }

    fn tick(&mut self, now_ns: u64) {
        self.0.tick(now_ns)
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn memory_bytes(&self) -> usize {
        self.0.memory_bytes()
    }

    fn slots(&self) -> usize {
        self.0.capacity()
    }
}

/// The timed part of [`measure_single`], kept out of line so that a profiler can count it alone
/// (`valgrind --tool=callgrind --toggle-collect='*timed_loop*'`).
#[inline(never)]
pub fn timed_loop<S: AckerStructure>(table: &mut S, ops: &[AckerMessage], outcome: &mut Outcome) {
    table.apply_all(ops, |_, r| outcome.count(r));
}

/// The timed part of [`measure_single_in_loop`]: produces the messages of `source` into a
/// buffer of [`IN_LOOP_BATCH`] and applies each batch (callgrind: `--toggle-collect='*timed_loop*'`
/// counts this one too).
#[inline(never)]
pub fn timed_loop_in_loop<S: AckerStructure>(
    table: &mut S,
    source: &mut MessageSource,
    outcome: &mut Outcome,
) {
    let mut buf = [AckerMessage::Ack { root: 0, xor: 0 }; IN_LOOP_BATCH];
    loop {
        let n = source.fill(&mut buf);
        if n == 0 {
            break;
        }
        table.apply_all(&buf[..n], |_, r| outcome.count(r));
    }
}

/// Builds a fresh `S`, applies the prefill, times `workload.ops`, and measures memory.
pub fn measure_single<S: AckerStructure>(
    workload: &Workload,
    live_bytes: Option<LiveBytes>,
) -> Measurement {
    measure_single_mode::<S>(workload, live_bytes, Mode::Pregenerated)
}

/// As [`measure_single`], but the timed messages are produced inside the timed loop by a
/// [`MessageSource`] of `workload.config` (the same messages as `workload.ops`).
pub fn measure_single_in_loop<S: AckerStructure>(
    workload: &Workload,
    live_bytes: Option<LiveBytes>,
) -> Measurement {
    measure_single_mode::<S>(workload, live_bytes, Mode::InLoop)
}

fn measure_single_mode<S: AckerStructure>(
    workload: &Workload,
    live_bytes: Option<LiveBytes>,
    mode: Mode,
) -> Measurement {
    let mut source = MessageSource::new(workload.config);
    let in_loop_prefill = match mode {
        Mode::InLoop => source.prefill(),
        Mode::Pregenerated => Vec::new(),
    };
    let before = live_bytes.map(|f| f());
    let mut table = S::with_capacity(
        capacity_for_window(workload.config.window),
        MESSAGE_TIMEOUT_NS,
    );
    let mut warm = Outcome::default();
    let prefill = match mode {
        Mode::Pregenerated => &workload.prefill,
        Mode::InLoop => &in_loop_prefill,
    };
    table.apply_all(prefill, |_, r| warm.count(r));
    let mut outcome = Outcome::default();
    let start = Instant::now();
    match mode {
        Mode::Pregenerated => timed_loop(&mut table, &workload.ops, &mut outcome),
        Mode::InLoop => timed_loop_in_loop(&mut table, &mut source, &mut outcome),
    }
    let elapsed = start.elapsed();
    outcome.by_class[4] += warm.by_class[4];
    outcome.by_class[5] += warm.by_class[5];
    let outcome = outcome.settle(table.len());
    let computed = table.memory_bytes();
    let measured = before
        .zip(live_bytes)
        .map(|(b, f)| f().saturating_sub(b) + std::mem::size_of::<S>());
    let m = Measurement {
        structure: S::NAME,
        threads: None,
        mode,
        window: workload.config.window,
        outcome,
        ops: workload.ops.len(),
        elapsed,
        memory_bytes: measured.unwrap_or(computed),
        memory_measured: measured.is_some(),
        memory_computed_bytes: computed,
        slots: table.slots(),
    };
    drop(table);
    m
}

/// Builds a fresh shared `S` sized by [`shared_capacity_for_window`], has thread t apply `workloads[t]`'s prefill, then (all threads
/// released together) its timed messages; the elapsed time runs from the release to the last
/// thread's end. Decisions are summed over threads.
pub fn measure_shared<S: SharedAckerStructure>(
    workloads: &[Workload],
    live_bytes: Option<LiveBytes>,
) -> Measurement {
    let window: usize = workloads.iter().map(|w| w.config.window).sum();
    let before = live_bytes.map(|f| f());
    let table = S::with_capacity(shared_capacity_for_window(window), MESSAGE_TIMEOUT_NS);
    let threads = workloads.len();
    let barrier = std::sync::Barrier::new(threads);
    let results: Vec<(Outcome, Instant, Instant)> = std::thread::scope(|scope| {
        let handles: Vec<_> = workloads
            .iter()
            .map(|w| {
                let table = &table;
                let barrier = &barrier;
                scope.spawn(move || {
                    let mut warm = Outcome::default();
                    for m in &w.prefill {
                        warm.count(table.apply(*m));
                    }
                    let mut outcome = Outcome::default();
                    barrier.wait();
                    let start = Instant::now();
                    table.apply_all(&w.ops, |_, r| outcome.count(r));
                    let end = Instant::now();
                    outcome.by_class[4] += warm.by_class[4];
                    outcome.by_class[5] += warm.by_class[5];
                    (outcome.settle(0), start, end)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("benchmark thread panicked"))
            .collect()
    });
    let start = results
        .iter()
        .map(|r| r.1)
        .min()
        .expect("at least one thread");
    let end = results
        .iter()
        .map(|r| r.2)
        .max()
        .expect("at least one thread");
    let mut outcome = Outcome::default();
    for (o, _, _) in &results {
        outcome.completed += o.completed;
        outcome.failed += o.failed;
        outcome.reset += o.reset;
        outcome.pending += o.pending;
        outcome.errors += o.errors;
        outcome.full += o.full;
    }
    outcome.final_len = table.len();
    let computed = table.memory_bytes();
    let measured = before
        .zip(live_bytes)
        .map(|(b, f)| f().saturating_sub(b) + std::mem::size_of::<S>());
    Measurement {
        structure: S::NAME,
        threads: Some(threads),
        mode: Mode::Pregenerated,
        window,
        outcome,
        ops: workloads.iter().map(|w| w.ops.len()).sum(),
        elapsed: end - start,
        memory_bytes: measured.unwrap_or(computed),
        memory_measured: measured.is_some(),
        memory_computed_bytes: computed,
        slots: table.slots(),
    }
}

/// The outcome a correct table gives on `workloads` (one per thread): every completing ack
/// completes, nothing fails or errs, and the roots in flight remain.
pub fn expected_outcome(workloads: &[Workload]) -> Outcome {
    let completed: usize = workloads.iter().map(|w| w.completions).sum();
    let ops: usize = workloads.iter().map(|w| w.ops.len()).sum();
    Outcome {
        completed: completed as u64,
        failed: 0,
        reset: 0,
        pending: (ops - completed) as u64,
        errors: 0,
        full: 0,
        final_len: workloads.iter().map(|w| w.final_in_flight).sum(),
        by_class: [0; 6],
    }
}

/// One JSON row of `acker-bench compare --json`.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// `acker-core`, `storm-style`, `hashbrown`, `hashbrown-lean`, `acker-core-shared`,
    /// `acker-core-shared-batch`, `mutex-hashbrown`, `dashmap`.
    pub structure: String,
    /// `pregenerated` (the op stream read from memory) or `in-loop` (each message produced in
    /// the timed loop).
    pub mode: &'static str,
    /// W, roots in flight.
    pub window: usize,
    /// Millions of messages per second (median over repetitions).
    pub mops: f64,
    /// Table memory ÷ roots in flight.
    pub bytes_per_root: f64,
    /// Messages the table refused as [`TableError::Full`] (the text table's `Full` column).
    pub full: u64,
    /// Threads driving a shared table (absent for single-owner tables).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads: Option<usize>,
}

/// What to compare.
#[derive(Clone, Debug)]
pub struct CompareConfig {
    /// The W values.
    pub windows: Vec<usize>,
    /// Timed messages per run, as a function of W.
    pub ops_for_window: fn(usize) -> usize,
    /// Repetitions of each run (the median is reported).
    pub repetitions: usize,
    /// Thread counts for the shared tables (empty: skip them).
    pub threads: Vec<usize>,
    /// k, acks per tree.
    pub acks_per_tree: usize,
    /// Seed of the op streams.
    pub seed: u64,
    /// Counting allocator, when the binary installed one.
    pub live_bytes: Option<LiveBytes>,
    /// Run only the structures with these names (empty: all), e.g. for a profiler.
    pub only: Vec<String>,
    /// The modes the single-owner tables run in, alternated within each repetition (empty:
    /// pregenerated only).
    pub modes: Vec<Mode>,
}

/// The median measurement (by Mops/s) of each structure, per window and thread count, in the
/// order they were first run.
#[derive(Clone, Debug, Default)]
pub struct CompareReport {
    /// Median measurements.
    pub medians: Vec<Measurement>,
}

impl CompareReport {
    /// The JSON rows: one for every structure, mode, window (and thread count) measured, the
    /// same rows as the printed table (the final new-user trial found `acker-core-one-at-a-time`
    /// and `acker-core-prefetch` left out, so that `--only` naming just those printed no row).
    pub fn rows(&self) -> Vec<Row> {
        self.medians
            .iter()
            .map(|m| Row {
                structure: m.structure.to_string(),
                mode: m.mode.name(),
                window: m.window,
                mops: m.mops(),
                bytes_per_root: m.bytes_per_root(),
                full: m.outcome.full,
                threads: m.threads,
            })
            .collect()
    }

    /// The median pregenerated-mode measurement of `structure` at `window` (and `threads`).
    pub fn find(
        &self,
        structure: &str,
        window: usize,
        threads: Option<usize>,
    ) -> Option<&Measurement> {
        self.find_in(structure, window, threads, Mode::Pregenerated)
    }

    /// The median measurement of `structure` at `window` (and `threads`) in `mode`.
    pub fn find_in(
        &self,
        structure: &str,
        window: usize,
        threads: Option<usize>,
        mode: Mode,
    ) -> Option<&Measurement> {
        self.medians.iter().find(|m| {
            m.structure == structure && m.window == window && m.threads == threads && m.mode == mode
        })
    }
}

/// Two structures disagreed (or one disagreed with the workload's expected outcome).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Disagreement {
    /// The structure.
    pub structure: &'static str,
    /// W.
    pub window: usize,
    /// Threads, for shared tables.
    pub threads: Option<usize>,
    /// What a correct table gives.
    pub expected: Outcome,
    /// What the structure gave.
    pub got: Outcome,
}

impl std::fmt::Display for Disagreement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (W = {}, threads {:?}) disagrees: expected {:?}, got {:?}",
            self.structure, self.window, self.threads, self.expected, self.got
        )
    }
}

impl std::error::Error for Disagreement {}

fn median(mut runs: Vec<Measurement>) -> Measurement {
    runs.sort_by(|a, b| a.mops().total_cmp(&b.mops()));
    let mid = runs.len() / 2;
    runs.swap_remove(mid)
}

fn check(m: &Measurement, expected: Outcome) -> Result<(), Box<Disagreement>> {
    let o = m.outcome;
    if o == expected {
        Ok(())
    } else {
        Err(Box::new(Disagreement {
            structure: m.structure,
            window: m.window,
            threads: m.threads,
            expected,
            got: m.outcome,
        }))
    }
}

/// Runs every single-owner structure (and, with `config.threads`, every shared one) on the same
/// op streams, `config.repetitions` times each in turn, checks each run's outcome against the
/// workload's, and returns the medians. `progress` hears about each finished run.
///
/// # Errors
/// The first [`Disagreement`].
pub fn run_compare(
    config: &CompareConfig,
    mut progress: impl FnMut(&Measurement),
) -> Result<CompareReport, Box<Disagreement>> {
    let mut report = CompareReport::default();
    let reps = config.repetitions.max(1);
    for &window in &config.windows {
        let wc = WorkloadConfig {
            acks_per_tree: config.acks_per_tree,
            ..WorkloadConfig::new(window, (config.ops_for_window)(window), config.seed)
        };
        let workload = Workload::generate(wc);
        let expected = expected_outcome(std::slice::from_ref(&workload));
        let modes = if config.modes.is_empty() {
            vec![Mode::Pregenerated]
        } else {
            config.modes.clone()
        };
        let runners: Vec<SingleRunner> = modes
            .iter()
            .flat_map(|&mode| single_runners(mode))
            .filter(|(name, _)| selected(config, name))
            .map(|(_, f)| f)
            .collect();
        let mut runs: Vec<Vec<Measurement>> = vec![Vec::new(); runners.len()];
        for _ in 0..reps {
            for (i, run) in runners.iter().enumerate() {
                let m = run(&workload, config.live_bytes);
                check(&m, expected)?;
                progress(&m);
                runs[i].push(m);
            }
        }
        report.medians.extend(runs.into_iter().map(median));
        drop(workload);
        for &threads in &config.threads {
            let workloads = Workload::generate_per_thread(wc, threads);
            let expected = expected_outcome(&workloads);
            let runners: Vec<SharedRunner> = shared_runners()
                .into_iter()
                .filter(|(name, _)| selected(config, name))
                .map(|(_, f)| f)
                .collect();
            let mut runs: Vec<Vec<Measurement>> = vec![Vec::new(); runners.len()];
            for _ in 0..reps {
                for (i, run) in runners.iter().enumerate() {
                    let m = run(&workloads, config.live_bytes);
                    check(&m, expected)?;
                    progress(&m);
                    runs[i].push(m);
                }
            }
            report.medians.extend(runs.into_iter().map(median));
        }
    }
    Ok(report)
}

fn selected(config: &CompareConfig, name: &str) -> bool {
    config.only.is_empty() || config.only.iter().any(|o| o == name)
}

type SharedRunner = fn(&[Workload], Option<LiveBytes>) -> Measurement;
type SingleRunner = fn(&Workload, Option<LiveBytes>) -> Measurement;

/// The single-owner structures compared in `mode`, in report order.
fn single_runners(mode: Mode) -> Vec<(&'static str, SingleRunner)> {
    macro_rules! runners {
        ($($s:ty),*) => {
            vec![$((
                <$s as AckerStructure>::NAME,
                match mode {
                    Mode::Pregenerated => measure_single::<$s> as SingleRunner,
                    Mode::InLoop => measure_single_in_loop::<$s> as SingleRunner,
                },
            )),*]
        };
    }
    runners!(
        AckerTable<Box<[Slot]>>,
        OneAtATime,
        Prefetched,
        HashbrownAcker,
        HashbrownLean,
        StormStyle
    )
}

/// One line on what the structure named `name` is (the legend under `acker-bench compare`'s
/// tables), for every single-owner and shared structure the tool runs; `None` for any other name.
pub fn legend(name: &str) -> Option<&'static str> {
    Some(match name {
        "acker-core" => {
            "acker-core's AckerTable (20-byte slots, Storm's rules and expiry) through apply_batch, \
             which prefetches both buckets of the message 8 places ahead (16 from 419,430 slots) in tables of 52,428 slots \
             or more"
        }
        "acker-core-one-at-a-time" => {
            "the same table, one AckerTable::apply call per message (no batch, no prefetch)"
        }
        "acker-core-prefetch" => {
            "the same table, one apply per message, the caller prefetching only the first bucket \
             16 messages ahead (AckerTable::first_bucket): acks and inits read the second bucket \
             too, so this misses where acker-core's own apply_batch does not"
        }
        "hashbrown" => {
            "hashbrown::HashMap keeping acker-core's rules (capacity, errors, expiry): the \
             rule-checking peer"
        }
        "hashbrown-lean" => {
            "presized hashbrown::HashMap of XOR and spout task only, no rule checks, never full, \
             no expiry: what a user writes in ten minutes"
        }
        "storm-style" => {
            "Storm's acker table: a RotatingMap of three std HashMaps (SipHash), newest first"
        }
        "acker-core-shared" => {
            "acker-core's SharedAckerTable (a spin-lock bit per slot, linearizable), one call per \
             message from each thread"
        }
        "acker-core-shared-batch" => {
            "the same shared table through its apply_batch (prefetching in large tables)"
        }
        "mutex-hashbrown" => "the rule-checking hashbrown peer behind one std Mutex",
        "dashmap" => "dashmap::DashMap (foldhash), one shard's write lock per message",
        _ => return None,
    })
}

/// The shared structures compared, in report order.
fn shared_runners() -> Vec<(&'static str, SharedRunner)> {
    vec![
        (
            CoreShared::NAME,
            measure_shared::<CoreShared> as SharedRunner,
        ),
        (CoreSharedBatch::NAME, measure_shared::<CoreSharedBatch>),
        (MutexHashbrown::NAME, measure_shared::<MutexHashbrown>),
        (DashMapAcker::NAME, measure_shared::<DashMapAcker>),
    ]
}

/// acker-core's table driven with a prefetch instruction by its caller: while applying message
/// `i` with [`AckerTable::apply`], the first bucket of message `i + 16`
/// ([`AckerTable::first_bucket`]) is prefetched with `_mm_prefetch`, as an embedding engine with
/// its own batching might. Kept as a comparison: since the ack's and the init's fast paths read
/// both buckets of a root (Set N, `benches/RESULTS.md`), the second bucket misses here, and
/// acker-core's own `apply_batch`, which prefetches both, is the faster way to hand it a batch.
/// Same results as [`AckerTable::apply`] (differential-tested).
#[derive(Debug)]
pub struct Prefetched(pub AckerTable<Box<[Slot]>>);

/// How far ahead [`Prefetched`] prefetches.
pub const PREFETCH_DISTANCE: usize = 16;

#[inline(always)]
fn prefetch(slots: &[Slot]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p = slots.as_ptr() as *const i8;
        // SAFETY: `_mm_prefetch` only hints the cache; it never faults and does not dereference
        // `p` in the language's sense (any address is allowed). SSE is part of the x86_64
        // baseline, so the instruction exists on every x86_64 CPU.
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(p);
            _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(64));
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = slots;
}

impl AckerStructure for Prefetched {
    const NAME: &'static str = "acker-core-prefetch";

    fn with_capacity(capacity_roots: usize, message_timeout_ns: u64) -> Self {
        Prefetched(AckerStructure::with_capacity(
            capacity_roots,
            message_timeout_ns,
        ))
    }

    #[inline]
    fn apply(&mut self, message: AckerMessage) -> Result<Decision, TableError> {
        self.0.apply(message)
    }

    #[inline]
    fn apply_all<F: FnMut(usize, Result<Decision, TableError>)>(
        &mut self,
        messages: &[AckerMessage],
        mut sink: F,
    ) {
        for m in messages.iter().take(PREFETCH_DISTANCE) {
            prefetch(self.0.first_bucket(m.root()));
        }
        for (i, m) in messages.iter().enumerate() {
            if let Some(ahead) = messages.get(i + PREFETCH_DISTANCE) {
                prefetch(self.0.first_bucket(ahead.root()));
            }
            sink(i, self.0.apply(*m));
        }
    }

    fn tick(&mut self, now_ns: u64) {
        self.0.tick(now_ns)
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn memory_bytes(&self) -> usize {
        self.0.memory_bytes()
    }

    fn slots(&self) -> usize {
        self.0.capacity()
    }
}
