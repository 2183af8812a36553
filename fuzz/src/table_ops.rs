//! The `table_ops` and `shared_table` targets: operation sequences against an acker table
//! (`AckerTable`, or `SharedAckerTable` used from one thread) and a plain reference model.
//!
//! [`ModelTable`] restates the rules of `acker_core::table` (module docs) with a `BTreeMap` and
//! unbounded epochs, with no hashing, probing, stamps or lazy sweeping: unknown roots create
//! entries; `Init` XORs and records the spout task (a second init while the spout task is known
//! is `DuplicateInit` and changes nothing); `Ack` XORs; `Fail` marks failed and restamps;
//! `ResetTimeout` restamps; a decision only once the spout task is known (ack val 0 →
//! `Completed`, else failed → `Failed`, else a reset → `Reset`), `Completed` / `Failed` remove the
//! entry; root 0 is `ZeroRoot`; `Full` when `len == capacity` and the message would create an
//! entry. Time: the clock epoch is `now_ns / T`; each tick advances the internal epoch by
//! `min(clock epochs elapsed, 3)`, and an entry stamped at epoch `s` (creation, fail, reset) is
//! gone once the internal epoch reaches `s + 3`.
//!
//! [`run_table_ops`] drives any [`TableUnderTest`] and the model with the same [`TableInput`] and
//! panics, naming the operation, at the first decision, error, length or entry that differs.

use std::collections::BTreeMap;

use acker_core::shared::{AtomicU32, AtomicU64};
use acker_core::{
    AckerTable, Decision, EntryView, RootId, SharedAckerTable, SharedSlots, Slot, TableError,
    TaskId,
};
use arbitrary::Arbitrary;

/// Epochs after which an entry expires (Storm's three rotating buckets).
pub const EXPIRY_EPOCHS: u64 = 3;

/// Largest `AckerTable` capacity a fuzz input asks for (above 128, so a tick sweeps at least 3
/// slots and expired entries linger between sweeps).
pub const MAX_CAPACITY: usize = 130;

/// Largest `SharedAckerTable` capacity a fuzz input asks for: above its 64-slot probe window,
/// so that full windows overflow into the rest of the table. `Full` still means exactly what it
/// means for the model (every slot holds an unexpired entry), and its decisions, errors, entries
/// and `len()` must equal the model's.
pub const MAX_SHARED_CAPACITY: usize = MAX_CAPACITY;

/// Most table ticks one input may cause (enough to wrap the table's 14-bit stamps once at 3
/// epochs a tick, while keeping one execution short).
pub const MAX_TICKS: usize = 20_000;

/// A root id as the fuzzer picks it: mostly from a small set (so messages meet the same roots,
/// and 0 comes up), sometimes any `u64`.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum RootPick {
    /// `n % 48`: roots 0..=47.
    Small(u8),
    /// Any root id, 0 included.
    Raw(u64),
}

impl RootPick {
    /// The root id.
    pub fn root(self) -> RootId {
        match self {
            RootPick::Small(n) => u64::from(n % 48),
            RootPick::Raw(r) => r,
        }
    }
}

/// An XOR contribution as the fuzzer picks it: mostly small (so ack vals return to 0 often).
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum XorPick {
    /// `n % 8`.
    Small(u8),
    /// Any value.
    Raw(u64),
}

impl XorPick {
    /// The XOR value.
    pub fn xor(self) -> u64 {
        match self {
            XorPick::Small(n) => u64::from(n % 8),
            XorPick::Raw(x) => x,
        }
    }
}

/// One operation on the table.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum TableOp {
    /// `init(root, xor, spout_task)`.
    Init(RootPick, XorPick, TaskId),
    /// `ack(root, xor)`.
    Ack(RootPick, XorPick),
    /// `fail(root)`.
    Fail(RootPick),
    /// `reset_timeout(root)`.
    Reset(RootPick),
    /// `tick(now + delta_ns)`.
    Tick {
        /// Nanoseconds the clock moves forward.
        delta_ns: u16,
    },
    /// `tick(now_ns)` with any value: an earlier one must be ignored.
    TickTo {
        /// The new clock reading.
        now_ns: u64,
    },
    /// `count % 8192` ticks, each `1 + epochs % 4` message timeouts later than the last.
    TickMany {
        /// How many ticks.
        count: u16,
        /// Timeouts per tick, minus one.
        epochs: u8,
    },
    /// Messages of kind `kind % 4` (ack, fail, reset, init with task `start as u16`) for roots
    /// `start, start + 1, ...` until the table answers `Full` (at most `capacity + 1` of them).
    InsertUntilFull {
        /// First root id.
        start: u64,
        /// Message kind.
        kind: u8,
    },
}

/// A whole `table_ops` input: a table and the operations run on it.
#[derive(Arbitrary, Clone, Debug)]
pub struct TableInput {
    /// Capacity is `1 + capacity % MAX_CAPACITY` roots (`% MAX_SHARED_CAPACITY` for the shared
    /// table).
    pub capacity: u8,
    /// Message timeout T is `1 + timeout_ns % 64` ns.
    pub timeout_ns: u8,
    /// The operations, in order.
    pub ops: Vec<TableOp>,
}

impl TableInput {
    /// The capacity in roots the input asks for, at most `max` (`1..=max`; `max` at least 1).
    pub fn capacity_roots(&self, max: usize) -> usize {
        1 + usize::from(self.capacity) % max.max(1)
    }

    /// The message timeout T in ns (`1..=64`).
    pub fn message_timeout_ns(&self) -> u64 {
        1 + u64::from(self.timeout_ns) % 64
    }
}

/// The operations the harness needs from an acker table, so the same sequences run against
/// `AckerTable` and `SharedAckerTable`.
pub trait TableUnderTest {
    /// `init(root, xor, spout_task)`.
    fn init(&mut self, root: RootId, xor: u64, task: TaskId) -> Result<Decision, TableError>;
    /// `ack(root, xor)`.
    fn ack(&mut self, root: RootId, xor: u64) -> Result<Decision, TableError>;
    /// `fail(root)`.
    fn fail(&mut self, root: RootId) -> Result<Decision, TableError>;
    /// `reset_timeout(root)`.
    fn reset_timeout(&mut self, root: RootId) -> Result<Decision, TableError>;
    /// `tick(now_ns)`.
    fn tick(&mut self, now_ns: u64);
    /// Live roots.
    fn len(&self) -> usize;
    /// Whether no root is live.
    fn is_empty(&self) -> bool;
    /// The live entry of `root`.
    fn get(&self, root: RootId) -> Option<EntryView>;
}

impl TableUnderTest for AckerTable<Vec<Slot>> {
    fn init(&mut self, root: RootId, xor: u64, task: TaskId) -> Result<Decision, TableError> {
        AckerTable::init(self, root, xor, task)
    }
    fn ack(&mut self, root: RootId, xor: u64) -> Result<Decision, TableError> {
        AckerTable::ack(self, root, xor)
    }
    fn fail(&mut self, root: RootId) -> Result<Decision, TableError> {
        AckerTable::fail(self, root)
    }
    fn reset_timeout(&mut self, root: RootId) -> Result<Decision, TableError> {
        AckerTable::reset_timeout(self, root)
    }
    fn tick(&mut self, now_ns: u64) {
        AckerTable::tick(self, now_ns)
    }
    fn len(&self) -> usize {
        AckerTable::len(self)
    }
    fn is_empty(&self) -> bool {
        AckerTable::is_empty(self)
    }
    fn get(&self, root: RootId) -> Option<EntryView> {
        AckerTable::get(self, root)
    }
}

/// One entry of the reference model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ModelEntry {
    ack_val: u64,
    spout_task: Option<TaskId>,
    failed: bool,
    /// Internal epoch at creation or the last fail / reset-timeout.
    stamp: u64,
}

/// The reference model of an acker table (see the [module docs](self)).
#[derive(Clone, Debug)]
pub struct ModelTable {
    entries: BTreeMap<RootId, ModelEntry>,
    capacity: usize,
    timeout_ns: u64,
    clock_epoch: u64,
    epoch: u64,
}

/// Which message a model step applies.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Init(u64, TaskId),
    Ack(u64),
    Fail,
    Reset,
}

impl ModelTable {
    /// An empty model of `capacity` roots and message timeout `timeout_ns` (both non-zero).
    pub fn new(capacity: usize, timeout_ns: u64) -> Self {
        Self {
            entries: BTreeMap::new(),
            capacity,
            timeout_ns,
            clock_epoch: 0,
            epoch: 0,
        }
    }

    /// Live roots.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no root is live.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The live roots, ascending.
    pub fn roots(&self) -> impl Iterator<Item = RootId> + '_ {
        self.entries.keys().copied()
    }

    /// The live entry of `root`, as the table shows it.
    pub fn get(&self, root: RootId) -> Option<EntryView> {
        self.entries.get(&root).map(|e| EntryView {
            ack_val: e.ack_val,
            spout_task: e.spout_task,
            failed: e.failed,
        })
    }

    /// `init`.
    pub fn init(&mut self, root: RootId, xor: u64, task: TaskId) -> Result<Decision, TableError> {
        self.step(root, Kind::Init(xor, task))
    }

    /// `ack`.
    pub fn ack(&mut self, root: RootId, xor: u64) -> Result<Decision, TableError> {
        self.step(root, Kind::Ack(xor))
    }

    /// `fail`.
    pub fn fail(&mut self, root: RootId) -> Result<Decision, TableError> {
        self.step(root, Kind::Fail)
    }

    /// `reset_timeout`.
    pub fn reset_timeout(&mut self, root: RootId) -> Result<Decision, TableError> {
        self.step(root, Kind::Reset)
    }

    fn step(&mut self, root: RootId, kind: Kind) -> Result<Decision, TableError> {
        if root == 0 {
            return Err(TableError::ZeroRoot);
        }
        let epoch = self.epoch;
        let mut entry = match self.entries.get(&root) {
            Some(&e) => e,
            None => {
                if self.entries.len() == self.capacity {
                    return Err(TableError::Full);
                }
                ModelEntry {
                    ack_val: 0,
                    spout_task: None,
                    failed: false,
                    stamp: epoch,
                }
            }
        };
        let mut reset = false;
        match kind {
            Kind::Init(xor, task) => {
                if entry.spout_task.is_some() {
                    return Err(TableError::DuplicateInit);
                }
                entry.ack_val ^= xor;
                entry.spout_task = Some(task);
            }
            Kind::Ack(xor) => entry.ack_val ^= xor,
            Kind::Fail => {
                entry.failed = true;
                entry.stamp = epoch;
            }
            Kind::Reset => {
                entry.stamp = epoch;
                reset = true;
            }
        }
        let decision = match entry.spout_task {
            None => Decision::Pending,
            Some(spout_task) if entry.ack_val == 0 => Decision::Completed { spout_task },
            Some(spout_task) if entry.failed => Decision::Failed { spout_task },
            Some(spout_task) if reset => Decision::Reset { spout_task },
            Some(_) => Decision::Pending,
        };
        match decision {
            Decision::Completed { .. } | Decision::Failed { .. } => {
                self.entries.remove(&root);
            }
            _ => {
                self.entries.insert(root, entry);
            }
        }
        Ok(decision)
    }

    /// `tick(now_ns)`: earlier clock readings are ignored.
    pub fn tick(&mut self, now_ns: u64) {
        let clock_epoch = now_ns / self.timeout_ns;
        if clock_epoch > self.clock_epoch {
            self.epoch += (clock_epoch - self.clock_epoch).min(EXPIRY_EPOCHS);
            self.clock_epoch = clock_epoch;
        }
        let epoch = self.epoch;
        self.entries.retain(|_, e| epoch - e.stamp < EXPIRY_EPOCHS);
    }
}

/// What one run did, for tests: how many of each result the table gave.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TableStats {
    /// `Completed` decisions.
    pub completed: usize,
    /// `Failed` decisions.
    pub failed: usize,
    /// `Reset` decisions.
    pub resets: usize,
    /// `Full` errors.
    pub full: usize,
    /// `DuplicateInit` errors.
    pub duplicate_inits: usize,
    /// `ZeroRoot` errors.
    pub zero_roots: usize,
    /// Ticks.
    pub ticks: usize,
}

impl TableStats {
    fn count(&mut self, r: Result<Decision, TableError>) {
        match r {
            Ok(Decision::Completed { .. }) => self.completed += 1,
            Ok(Decision::Failed { .. }) => self.failed += 1,
            Ok(Decision::Reset { .. }) => self.resets += 1,
            Ok(Decision::Pending) => {}
            Err(TableError::Full) => self.full += 1,
            Err(TableError::DuplicateInit) => self.duplicate_inits += 1,
            Err(TableError::ZeroRoot) => self.zero_roots += 1,
        }
    }
}

/// Runs `input` against `table` (created empty with `capacity` roots and the input's timeout)
/// and the reference model, checking after every message and tick.
///
/// # Panics
/// At the first difference: a decision or error, `len()`, or the entry of any live root or of
/// the root just touched. The panic message names the operation index and the operation.
pub fn run_table_ops<T: TableUnderTest>(
    input: &TableInput,
    capacity: usize,
    table: &mut T,
) -> TableStats {
    let mut stats = TableStats::default();
    let timeout_ns = input.message_timeout_ns();
    let mut model = ModelTable::new(capacity, timeout_ns);
    let mut now_ns: u64 = 0;
    let mut ticks = 0usize;
    for (i, op) in input.ops.iter().enumerate() {
        let ctx = |what: &str| format!("op #{i} {op:?}: {what}");
        match *op {
            TableOp::Init(r, x, task) => {
                let (root, xor) = (r.root(), x.xor());
                let got = table.init(root, xor, task);
                assert_eq!(got, model.init(root, xor, task), "{}", ctx("init"));
                stats.count(got);
                check_root(table, &model, root, &ctx("init"));
            }
            TableOp::Ack(r, x) => {
                let (root, xor) = (r.root(), x.xor());
                let got = table.ack(root, xor);
                assert_eq!(got, model.ack(root, xor), "{}", ctx("ack"));
                stats.count(got);
                check_root(table, &model, root, &ctx("ack"));
            }
            TableOp::Fail(r) => {
                let root = r.root();
                let got = table.fail(root);
                assert_eq!(got, model.fail(root), "{}", ctx("fail"));
                stats.count(got);
                check_root(table, &model, root, &ctx("fail"));
            }
            TableOp::Reset(r) => {
                let root = r.root();
                let got = table.reset_timeout(root);
                assert_eq!(got, model.reset_timeout(root), "{}", ctx("reset"));
                stats.count(got);
                check_root(table, &model, root, &ctx("reset"));
            }
            TableOp::Tick { delta_ns } => {
                if ticks < MAX_TICKS {
                    ticks += 1;
                    now_ns = now_ns.saturating_add(u64::from(delta_ns));
                    table.tick(now_ns);
                    model.tick(now_ns);
                    check_len(table, &model, &ctx("len after tick"));
                }
            }
            TableOp::TickTo { now_ns: to } => {
                if ticks < MAX_TICKS {
                    ticks += 1;
                    now_ns = now_ns.max(to);
                    // The table and the model get the raw reading (maybe earlier than before).
                    table.tick(to);
                    model.tick(to);
                    check_len(table, &model, &ctx("len after tick"));
                }
            }
            TableOp::TickMany { count, epochs } => {
                let step = timeout_ns * (1 + u64::from(epochs % 4));
                for k in 0..usize::from(count % 8192) {
                    if ticks >= MAX_TICKS {
                        break;
                    }
                    ticks += 1;
                    now_ns = now_ns.saturating_add(step);
                    table.tick(now_ns);
                    model.tick(now_ns);
                    check_len(table, &model, &ctx(&format!("len after tick {k}")));
                }
            }
            TableOp::InsertUntilFull { start, kind } => {
                for k in 0..=capacity as u64 {
                    let root = start.wrapping_add(k);
                    let (got, want) = match kind % 4 {
                        0 => (table.ack(root, 1), model.ack(root, 1)),
                        1 => (table.fail(root), model.fail(root)),
                        2 => (table.reset_timeout(root), model.reset_timeout(root)),
                        _ => {
                            let task = start as TaskId;
                            (table.init(root, 1, task), model.init(root, 1, task))
                        }
                    };
                    let what = format!("fill message {k} (root {root})");
                    assert_eq!(got, want, "{}", ctx(&what));
                    stats.count(got);
                    check_root(table, &model, root, &ctx(&what));
                    if want == Err(TableError::Full) {
                        break;
                    }
                }
            }
        }
        check_all(table, &model, &ctx("state"));
    }
    stats.ticks = ticks;
    stats
}

/// `len()` equals the model's; `is_empty()` agrees with it.
fn check_len<T: TableUnderTest>(table: &T, model: &ModelTable, ctx: &str) {
    let len = table.len();
    assert_eq!(len, model.len(), "{ctx}: len");
    assert_eq!(table.is_empty(), len == 0, "{ctx}: is_empty with len {len}");
}

fn check_root<T: TableUnderTest>(table: &T, model: &ModelTable, root: RootId, ctx: &str) {
    check_len(table, model, ctx);
    assert_eq!(
        table.get(root),
        model.get(root),
        "{ctx}: entry of root {root}"
    );
}

fn check_all<T: TableUnderTest>(table: &T, model: &ModelTable, ctx: &str) {
    check_len(table, model, ctx);
    for root in model.roots() {
        assert_eq!(
            table.get(root),
            model.get(root),
            "{ctx}: entry of live root {root}"
        );
    }
}

/// The `table_ops` target: `input` against a fresh `AckerTable` over `Vec<Slot>` storage.
///
/// # Panics
/// As [`run_table_ops`].
pub fn table_ops(input: &TableInput) -> TableStats {
    let capacity = input.capacity_roots(MAX_CAPACITY);
    let mut table = match AckerTable::new(vec![Slot::EMPTY; capacity], input.message_timeout_ns()) {
        Ok(t) => t,
        Err(e) => panic!("valid config refused: {e}"),
    };
    run_table_ops(input, capacity, &mut table)
}

/// The shared table over vectors, as the `shared_table` target uses it.
pub type SharedVecTable =
    SharedAckerTable<SharedSlots<Vec<AtomicU64>, Vec<AtomicU64>, Vec<AtomicU32>>>;

impl TableUnderTest for SharedVecTable {
    fn init(&mut self, root: RootId, xor: u64, task: TaskId) -> Result<Decision, TableError> {
        SharedAckerTable::init(self, root, xor, task)
    }
    fn ack(&mut self, root: RootId, xor: u64) -> Result<Decision, TableError> {
        SharedAckerTable::ack(self, root, xor)
    }
    fn fail(&mut self, root: RootId) -> Result<Decision, TableError> {
        SharedAckerTable::fail(self, root)
    }
    fn reset_timeout(&mut self, root: RootId) -> Result<Decision, TableError> {
        SharedAckerTable::reset_timeout(self, root)
    }
    fn tick(&mut self, now_ns: u64) {
        SharedAckerTable::tick(self, now_ns)
    }
    fn len(&self) -> usize {
        SharedAckerTable::len(self)
    }
    fn is_empty(&self) -> bool {
        SharedAckerTable::is_empty(self)
    }
    fn get(&self, root: RootId) -> Option<EntryView> {
        SharedAckerTable::get(self, root)
    }
}

/// The `shared_table` target: `input` against a fresh `SharedAckerTable` of at most
/// [`MAX_SHARED_CAPACITY`] roots, used from one thread, with the same model and checks as
/// [`table_ops`].
///
/// # Panics
/// As [`run_table_ops`].
pub fn shared_table(input: &TableInput) -> TableStats {
    let capacity = input.capacity_roots(MAX_SHARED_CAPACITY);
    let slots = match SharedSlots::new(
        (0..capacity).map(|_| AtomicU64::new(0)).collect::<Vec<_>>(),
        (0..capacity).map(|_| AtomicU64::new(0)).collect::<Vec<_>>(),
        (0..capacity).map(|_| AtomicU32::new(0)).collect::<Vec<_>>(),
    ) {
        Ok(s) => s,
        Err(e) => panic!("equal-length arrays refused: {e}"),
    };
    let mut table = match SharedAckerTable::new(slots, input.message_timeout_ns()) {
        Ok(t) => t,
        Err(e) => panic!("valid config refused: {e}"),
    };
    run_table_ops(input, capacity, &mut table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_follows_the_table_docs_example() {
        let mut m = ModelTable::new(8, 30);
        assert_eq!(m.ack(7, 0xA1), Ok(Decision::Pending));
        assert_eq!(m.init(7, 0xA1 ^ 0xB2, 3), Ok(Decision::Pending));
        assert_eq!(m.init(7, 1, 3), Err(TableError::DuplicateInit));
        assert_eq!(m.ack(7, 0xB2), Ok(Decision::Completed { spout_task: 3 }));
        assert!(m.is_empty());
    }

    #[test]
    fn model_expiry_matches_the_table_test() {
        // The same steps as `full_table_reuses_expired_slots` in acker-core.
        let mut m = ModelTable::new(16, 1000);
        for r in 1..=16 {
            m.ack(r, 1).unwrap();
        }
        assert_eq!(m.ack(99, 1), Err(TableError::Full));
        m.fail(5).unwrap();
        m.tick(1000);
        m.fail(6).unwrap();
        m.tick(3000);
        assert_eq!(m.len(), 1);
        assert!(m.get(6).unwrap().failed);
    }

    #[test]
    fn a_long_mixed_sequence_agrees() {
        let mut ops = Vec::new();
        for k in 0..40u8 {
            ops.push(TableOp::Ack(RootPick::Small(k), XorPick::Small(k)));
            ops.push(TableOp::Init(RootPick::Small(k / 2), XorPick::Small(k), 4));
            ops.push(TableOp::Fail(RootPick::Small(k / 3)));
            ops.push(TableOp::Reset(RootPick::Small(k / 5)));
            ops.push(TableOp::Tick { delta_ns: 7 });
        }
        ops.push(TableOp::Init(RootPick::Raw(777), XorPick::Raw(5), 2));
        ops.push(TableOp::Reset(RootPick::Raw(777)));
        ops.push(TableOp::InsertUntilFull {
            start: 1000,
            kind: 0,
        });
        ops.push(TableOp::TickMany {
            count: 6000,
            epochs: 2,
        });
        ops.push(TableOp::InsertUntilFull { start: 5, kind: 3 });
        let s = table_ops(&TableInput {
            capacity: 99,
            timeout_ns: 19,
            ops: ops.clone(),
        });
        assert!(s.completed > 0 && s.failed > 0 && s.resets > 0, "{s:?}");
        assert!(
            s.full >= 2 && s.duplicate_inits > 0 && s.zero_roots > 0,
            "{s:?}"
        );
        assert!(s.ticks > 5462, "{s:?}: the 14-bit stamps must wrap");
        // The same operations on a 64-root shared table.
        let s = shared_table(&TableInput {
            capacity: 63,
            timeout_ns: 19,
            ops,
        });
        assert!(s.completed > 0 && s.failed > 0 && s.resets > 0, "{s:?}");
        assert!(s.full >= 2 && s.duplicate_inits > 0, "{s:?}");
    }
}
