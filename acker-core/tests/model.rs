//! Model-based tests: random tuple DAGs built with the real anchoring API, their acker messages
//! delivered in random orders (acks before inits, duplicates, fails, resets, ticks interleaved)
//! to the real `AckerTable` and to a plain reference model with the same rules.

use std::collections::BTreeSet;

use acker_core::{
    AckerMessage, AckerTable, AnchorError, Anchors, Completed, Decision, IdGenerator, InputHandle,
    InputSlot, InputTracker, PendingError, PendingSlot, RootId, Slot, SpoutConfig, SpoutEmit,
    SpoutPending, TableError, TaskId,
};
use hashbrown::HashMap;
use quickcheck::{QuickCheck, TestResult};
use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

const T: u64 = 1_000;

/// The reference model: a plain map with the rules of DESIGN.md, and Storm's restamping on
/// create / fail / reset.
#[derive(Debug)]
struct Model {
    map: HashMap<RootId, ModelEntry>,
    capacity: usize,
    clock_epoch: u64,
    epoch: u64,
}

#[derive(Debug, Clone, Copy)]
struct ModelEntry {
    ack_val: u64,
    spout_task: Option<TaskId>,
    failed: bool,
    stamp: u64,
}

impl Model {
    fn new(capacity: usize) -> Self {
        Self {
            map: HashMap::new(),
            capacity,
            clock_epoch: 0,
            epoch: 0,
        }
    }

    fn tick(&mut self, now_ns: u64) {
        let ce = now_ns / T;
        if ce > self.clock_epoch {
            self.epoch += (ce - self.clock_epoch).min(3);
            self.clock_epoch = ce;
            let epoch = self.epoch;
            self.map.retain(|_, e| epoch - e.stamp < 3);
        }
    }

    fn entry(&mut self, root: RootId, restamp: bool) -> Result<&mut ModelEntry, TableError> {
        if root == 0 {
            return Err(TableError::ZeroRoot);
        }
        let full = self.map.len() >= self.capacity;
        let epoch = self.epoch;
        if !self.map.contains_key(&root) {
            if full {
                return Err(TableError::Full);
            }
            self.map.insert(
                root,
                ModelEntry {
                    ack_val: 0,
                    spout_task: None,
                    failed: false,
                    stamp: epoch,
                },
            );
        }
        let e = self.map.get_mut(&root).unwrap();
        if restamp {
            e.stamp = epoch;
        }
        Ok(e)
    }

    fn apply(&mut self, m: AckerMessage) -> Result<Decision, TableError> {
        let root = m.root();
        let reset = matches!(m, AckerMessage::ResetTimeout { .. });
        match m {
            AckerMessage::Init {
                root,
                xor,
                spout_task,
            } => {
                if root != 0 && self.map.get(&root).is_some_and(|e| e.spout_task.is_some()) {
                    return Err(TableError::DuplicateInit);
                }
                let e = self.entry(root, false)?;
                e.ack_val ^= xor;
                e.spout_task = Some(spout_task);
            }
            AckerMessage::Ack { root, xor } => self.entry(root, false)?.ack_val ^= xor,
            AckerMessage::Fail { root } => self.entry(root, true)?.failed = true,
            AckerMessage::ResetTimeout { root } => {
                self.entry(root, true)?;
            }
        }
        let e = self.map[&root];
        let Some(spout_task) = e.spout_task else {
            return Ok(Decision::Pending);
        };
        Ok(if e.ack_val == 0 {
            self.map.remove(&root);
            Decision::Completed { spout_task }
        } else if e.failed {
            self.map.remove(&root);
            Decision::Failed { spout_task }
        } else if reset {
            Decision::Reset { spout_task }
        } else {
            Decision::Pending
        })
    }
}

/// A random tuple DAG and the acker messages its processing produced.
struct Built {
    messages: Vec<AckerMessage>,
    roots: Vec<RootId>,
    /// Roots of a tuple that was failed.
    failed: BTreeSet<RootId>,
    /// Roots of a tuple that was never acked nor failed.
    silent: BTreeSet<RootId>,
}

fn build(rng: &mut Xoshiro256PlusPlus, n_roots: usize) -> Built {
    let mut ids = IdGenerator::from_seed(rng.next_u64());
    let mut tracker: InputTracker<6, Vec<InputSlot<6>>> =
        InputTracker::new(vec![InputSlot::default(); 64], rng.next_u64()).unwrap();
    let mut b = Built {
        messages: Vec::new(),
        roots: Vec::new(),
        failed: BTreeSet::new(),
        silent: BTreeSet::new(),
    };
    let mut queue: Vec<Anchors<6>> = Vec::new();
    for _ in 0..n_roots {
        let root = ids.next_id();
        b.roots.push(root);
        let mut xor = 0;
        for _ in 0..rng.next_u64() % 4 {
            let e = ids.next_id();
            xor ^= e;
            queue.push(Anchors::spout(root, e));
        }
        b.messages.push(AckerMessage::Init {
            root,
            xor,
            spout_task: (rng.next_u64() % 3) as TaskId,
        });
    }
    let mut budget = 40usize;
    while !queue.is_empty() {
        // Receive one or two tuples at once, so that emits may be multi-anchored.
        let k = if queue.len() >= 2 && rng.next_u64().is_multiple_of(3) {
            2
        } else {
            1
        };
        let handles: Vec<InputHandle> = (0..k)
            .map(|_| {
                let i = (rng.next_u64() % queue.len() as u64) as usize;
                let anchors = queue.swap_remove(i);
                tracker.receive(&anchors).unwrap()
            })
            .collect();
        let children = if budget > 0 { rng.next_u64() % 3 } else { 0 };
        for _ in 0..children {
            budget = budget.saturating_sub(1);
            let h0 = handles[0];
            let hl = handles[k - 1];
            let anchors: Vec<InputHandle> = match rng.next_u64() % 10 {
                0 => vec![],       // unanchored
                1 => vec![h0, hl], // multi-anchored (or the same input twice)
                2 => vec![h0, h0], // the same input twice
                _ => vec![handles[(rng.next_u64() % k as u64) as usize]],
            };
            match tracker.emit(&anchors) {
                Ok(a) => queue.push(a),
                Err(AnchorError::TooManyRoots) => {}
                Err(e) => panic!("unexpected anchoring error {e:?}"),
            }
        }
        if rng.next_u64().is_multiple_of(8) {
            b.messages
                .extend(tracker.reset_timeout(handles[0]).unwrap());
        }
        for h in handles {
            let roots: Vec<RootId> = tracker.anchors(h).unwrap().roots().collect();
            match rng.next_u64() % 25 {
                0 => {
                    b.failed.extend(&roots);
                    b.messages.extend(tracker.fail(h).unwrap());
                }
                1 => {
                    b.silent.extend(&roots);
                }
                _ => b.messages.extend(tracker.ack(h).unwrap()),
            }
        }
    }
    b
}

fn shuffle<X>(rng: &mut Xoshiro256PlusPlus, v: &mut [X]) {
    for i in (1..v.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
}

#[derive(Debug, Clone, Copy)]
enum Event {
    Message(AckerMessage),
    Tick(u64),
}

/// Every decision, error and length of the table equals the model's, whatever the order,
/// duplicates, ticks and capacity.
fn differential(seed: u64, n_roots: u8, capacity: u8, duplicates: bool) -> TestResult {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let n_roots = 1 + n_roots as usize % 12;
    let capacity = 1 + capacity as usize % 24;
    let built = build(&mut rng, n_roots);
    let mut events: Vec<Event> = built.messages.iter().map(|&m| Event::Message(m)).collect();
    if duplicates {
        for m in &built.messages {
            if rng.next_u64() % 6 == 0 {
                events.push(Event::Message(*m));
            }
        }
    }
    // Now and then a message from another tree entirely (an orphan).
    for _ in 0..rng.next_u64() % 3 {
        events.push(Event::Message(AckerMessage::Ack {
            root: 1 + rng.next_u64() % 5,
            xor: rng.next_u64(),
        }));
    }
    // And fails of random trees from outside the DAG, so that acks racing fails are exercised
    // (an ack wins when the ack val is 0 at the decision).
    for _ in 0..rng.next_u64() % 3 {
        let root = built.roots[(rng.next_u64() % built.roots.len() as u64) as usize];
        events.push(Event::Message(AckerMessage::Fail { root }));
    }
    shuffle(&mut rng, &mut events);
    let mut now = 0;
    let mut with_ticks = Vec::with_capacity(events.len() * 2);
    for e in events {
        if rng.next_u64() % 5 == 0 {
            now += rng.next_u64() % (2 * T);
            with_ticks.push(Event::Tick(now));
        }
        with_ticks.push(e);
    }

    let mut table = AckerTable::new(vec![Slot::EMPTY; capacity], T).unwrap();
    let mut model = Model::new(capacity);
    let mut fulls = 0;
    for (k, e) in with_ticks.iter().enumerate() {
        match *e {
            Event::Tick(now) => {
                table.tick(now);
                model.tick(now);
            }
            Event::Message(m) => {
                let model_len = model.map.len();
                let want = model.apply(m);
                let got = table.apply(m);
                if got != want {
                    return TestResult::error(format!(
                        "event {k} {m:?}: table {got:?}, model {want:?}"
                    ));
                }
                if got == Err(TableError::Full) {
                    fulls += 1;
                    if model_len != capacity {
                        return TestResult::error("Full below capacity");
                    }
                }
            }
        }
        if table.len() != model.map.len() {
            return TestResult::error(format!(
                "event {k} {e:?}: table len {}, model len {}",
                table.len(),
                model.map.len()
            ));
        }
        for (&root, me) in &model.map {
            let te = table.get(root);
            let ok = te.is_some_and(|te| {
                te.ack_val == me.ack_val && te.spout_task == me.spout_task && te.failed == me.failed
            });
            if !ok {
                return TestResult::error(format!(
                    "event {k}: entry {root} differs: {te:?} vs {me:?}"
                ));
            }
        }
    }
    let _ = fulls;
    TestResult::passed()
}

#[test]
fn table_equals_model() {
    QuickCheck::new()
        .tests(2000)
        .quickcheck(differential as fn(u64, u8, u8, bool) -> TestResult);
}

/// Without duplicates, expiry or a full table: a tree completes exactly when the last of its
/// init and acks arrives — never before — if and only if every tuple of it was acked; a tree
/// with a failed tuple fails exactly once, when both its init and a fail have arrived.
fn no_early_completion(seed: u64, n_roots: u8) -> TestResult {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let n_roots = 1 + n_roots as usize % 12;
    let built = build(&mut rng, n_roots);
    let mut messages = built.messages.clone();
    shuffle(&mut rng, &mut messages);
    // Room for every root plus the orphans late messages of decided trees create.
    let mut table = AckerTable::new(vec![Slot::EMPTY; 4 * messages.len() + 4], T).unwrap();

    let mut decided: HashMap<RootId, (usize, Decision)> = HashMap::new();
    for (k, &m) in messages.iter().enumerate() {
        match table.apply(m).unwrap() {
            Decision::Pending | Decision::Reset { .. } => {}
            d => {
                if decided.insert(m.root(), (k, d)).is_some() {
                    return TestResult::error(format!("root {} decided twice", m.root()));
                }
            }
        }
    }
    for &root in &built.roots {
        let last_xor = messages
            .iter()
            .rposition(|m| {
                m.root() == root
                    && matches!(m, AckerMessage::Init { .. } | AckerMessage::Ack { .. })
            })
            .unwrap();
        let init_at = messages
            .iter()
            .position(|m| m.root() == root && matches!(m, AckerMessage::Init { .. }))
            .unwrap();
        let first_fail = messages
            .iter()
            .position(|m| m.root() == root && matches!(m, AckerMessage::Fail { .. }));
        let task = match messages[init_at] {
            AckerMessage::Init { spout_task, .. } => spout_task,
            _ => unreachable!(),
        };
        let want = if built.failed.contains(&root) {
            Some((
                init_at.max(first_fail.unwrap()),
                Decision::Failed { spout_task: task },
            ))
        } else if built.silent.contains(&root) {
            None
        } else {
            Some((last_xor, Decision::Completed { spout_task: task }))
        };
        let got = decided.get(&root).copied();
        if got != want {
            return TestResult::error(format!("root {root}: decided {got:?}, expected {want:?}"));
        }
    }
    TestResult::passed()
}

#[test]
fn trees_complete_exactly_when_every_edge_is_acked() {
    QuickCheck::new()
        .tests(2000)
        .quickcheck(no_early_completion as fn(u64, u8) -> TestResult);
}

/// A long random run at high load with frequent expiry: the bucketed cuckoo table, its overflow
/// entries, its incremental sweep and its reuse of expired slots stay equal to the model over many epochs.
#[test]
fn long_run_at_high_load_equals_model() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let capacity = 97;
    let mut table = AckerTable::new(vec![Slot::EMPTY; capacity], T).unwrap();
    let mut model = Model::new(capacity);
    let mut now = 0;
    for step in 0..400_000u64 {
        let root = 1 + rng.next_u64() % 300;
        let m = match rng.next_u64() % 10 {
            0 => AckerMessage::Init {
                root,
                xor: rng.next_u64() % 4,
                spout_task: 1,
            },
            1 => AckerMessage::Fail { root },
            2 => AckerMessage::ResetTimeout { root },
            _ => AckerMessage::Ack {
                root,
                xor: rng.next_u64() % 4,
            },
        };
        assert_eq!(table.apply(m), model.apply(m), "step {step}: {m:?}");
        if rng.next_u64() % 50 == 0 {
            now += rng.next_u64() % (T / 2);
            table.tick(now);
            model.tick(now);
        }
        assert_eq!(table.len(), model.map.len(), "step {step}");
    }
}

/// Ticks `table` and `model` three epochs past `now` and then once a nanosecond at a time until a
/// whole sweep has passed (`SWEEP_FRACTION` ticks), so every entry has expired and been
/// reclaimed: the table must then be empty with no overflow entry counted. Returns the new now.
fn drain(table: &mut AckerTable<Vec<Slot>>, model: &mut Model, now: u64, what: &str) -> u64 {
    let mut now = now + 3 * T;
    for _ in 0..=acker_core::table::SWEEP_FRACTION {
        table.tick(now);
        model.tick(now);
        now += 1;
    }
    assert_eq!(model.map.len(), 0, "{what}: the model still holds roots");
    assert_eq!(table.len(), 0, "{what}: len after every entry expired");
    assert_eq!(
        table.overflow_len(),
        0,
        "{what}: overflow entries counted in an empty, swept table"
    );
    now
}

/// Small tables run nearly full (most roots unknown to the table when their first message comes,
/// so cuckoo moves and overflow entries are everyday), then drained: decisions and lengths equal
/// the model's throughout, and after each drain the table is empty with `overflow_len() == 0`.
/// Overflow entries are completed by acks, failed, expired, swept and their slots reused, so an
/// overflow count that misses one of those exits (or counts one twice) shows as a count left in
/// an empty table. (Mutation campaign: wrong bucket windows in the fast ack, which can complete an
/// overflow entry as if it were in its own bucket, and a reuse of an expired overflow slot that
/// kept its count, survived every other test; the issue asks for exactly this return to 0.)
#[test]
fn high_load_runs_drain_to_an_empty_table_without_overflow() {
    for (seed, capacity) in [(1u64, 12usize), (2, 13), (3, 16), (4, 24), (5, 40), (6, 97)] {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut table = AckerTable::new(vec![Slot::EMPTY; capacity], T).unwrap();
        let mut model = Model::new(capacity);
        let mut now = 0;
        let mut overflowed = 0;
        for round in 0..60 {
            // Root ids change every round, so overflow entries' slots are reused by new roots.
            let base = 1 + round * 1_000;
            for step in 0..40 * capacity {
                let root = base + rng.next_u64() % (3 * capacity as u64);
                let xor = rng.next_u64() % 4;
                let m = match rng.next_u64() % 10 {
                    0 | 1 => AckerMessage::Init {
                        root,
                        xor,
                        spout_task: 1,
                    },
                    2 => AckerMessage::Fail { root },
                    3 => AckerMessage::ResetTimeout { root },
                    _ => AckerMessage::Ack { root, xor },
                };
                assert_eq!(
                    table.apply(m),
                    model.apply(m),
                    "capacity {capacity}, round {round}, step {step}: {m:?}"
                );
                overflowed = overflowed.max(table.overflow_len());
                if rng.next_u64() % 64 == 0 {
                    now += rng.next_u64() % (T / 2);
                    table.tick(now);
                    model.tick(now);
                }
                assert_eq!(
                    table.len(),
                    model.map.len(),
                    "capacity {capacity}, step {step}"
                );
            }
            now = drain(
                &mut table,
                &mut model,
                now,
                &format!("capacity {capacity}, round {round}"),
            );
        }
        assert!(
            overflowed > 0,
            "capacity {capacity}: no overflow entry was ever made, so this run tests nothing"
        );
    }
}

/// New roots initialised into a nearly full table at later epochs (the fast init, moving a
/// resident to its other bucket when both of the root's buckets are full), then expired: the
/// lengths equal the model's at every step, so an entry created by a cuckoo move is counted under
/// its own stamp and leaves `len` when that stamp expires. (Mutation campaign: the move counted
/// the new entry under a wrong stamp, which shows only after an epoch other than 0.)
#[test]
fn fast_inits_at_high_load_equal_model_across_epochs() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
    let capacity = 256;
    let mut table = AckerTable::new(vec![Slot::EMPTY; capacity], T).unwrap();
    let mut model = Model::new(capacity);
    let mut now = 0;
    let mut next_root = 1u64;
    for epoch in 1..=12u64 {
        now = now.max(epoch * T);
        // One epoch on: sweep until every expired entry is reclaimed, so the fast init runs.
        for _ in 0..=acker_core::table::SWEEP_FRACTION {
            table.tick(now);
            model.tick(now);
            now += 1;
        }
        // Fill to 95 %: the last inits find both buckets full and move a resident.
        while model.map.len() < capacity * 95 / 100 {
            let root = next_root.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            next_root += 1;
            let m = AckerMessage::Init {
                root,
                xor: 1 + rng.next_u64() % 1_000,
                spout_task: 2,
            };
            assert_eq!(table.apply(m), model.apply(m), "epoch {epoch}: {m:?}");
            assert_eq!(table.len(), model.map.len(), "epoch {epoch}");
        }
        // Complete a third of the live roots at once, so the next epoch's inits come to a table
        // with free slots and nothing expired.
        // In root order, not the map's (randomly seeded) order, so every run is the same run.
        let mut live: Vec<(RootId, u64)> = model.map.iter().map(|(&r, e)| (r, e.ack_val)).collect();
        live.sort_unstable();
        for (root, ack_val) in live.into_iter().filter(|(r, _)| r % 3 == 0) {
            let m = AckerMessage::Ack { root, xor: ack_val };
            assert_eq!(table.apply(m), model.apply(m), "epoch {epoch}: {m:?}");
        }
        assert_eq!(table.len(), model.map.len(), "epoch {epoch}");
    }
    drain(&mut table, &mut model, now, "after the last epoch");
}

/// `apply_batch` on a table large enough to read ahead (`BATCH_READ_AHEAD_MIN_SLOTS`, where it
/// keeps each message's buckets in a ring until the message's turn) gives, message by message,
/// the reference model's decisions, in order, and leaves the model's entries. Ticks between the
/// batches expire trees, so expired slots are reused under the read-ahead too.
/// (Mutation campaign: a wrong ring index in the read-ahead survived every other acker-core test,
/// which use smaller tables.)
#[test]
fn apply_batch_reading_ahead_equals_model() {
    let capacity = acker_core::table::BATCH_READ_AHEAD_MIN_SLOTS + 1_000;
    let mut table = AckerTable::new(vec![Slot::EMPTY; capacity], T).unwrap();
    let mut model = Model::new(capacity);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(23);
    // Spread roots (not 1..n) so that they fall in buckets all over the table.
    let root = |k: u64| k.wrapping_mul(0xD1B5_4A32_D192_ED03);
    let mut now = 0;
    let mut decided = 0;
    for batch_no in 0..40 {
        let len = 1 + (rng.next_u64() % 1_500) as usize;
        let msgs: Vec<AckerMessage> = (0..len)
            .map(|_| {
                let r = root(rng.next_u64() % 3_000 + 1);
                let xor = rng.next_u64() % 4;
                match rng.next_u64() % 8 {
                    0 | 1 => AckerMessage::Init {
                        root: r,
                        xor,
                        spout_task: (rng.next_u64() % 3) as TaskId,
                    },
                    2 => AckerMessage::Fail { root: r },
                    3 => AckerMessage::ResetTimeout { root: r },
                    _ => AckerMessage::Ack { root: r, xor },
                }
            })
            .collect();
        let mut got = Vec::with_capacity(len);
        table.apply_batch(&msgs, |i, r| got.push((i, r)));
        let want: Vec<_> = msgs
            .iter()
            .enumerate()
            .map(|(i, m)| (i, model.apply(*m)))
            .collect();
        assert_eq!(got, want, "batch {batch_no}");
        decided += want
            .iter()
            .filter(|(_, r)| matches!(r, Ok(Decision::Completed { .. } | Decision::Failed { .. })))
            .count();
        assert_eq!(table.len(), model.map.len(), "batch {batch_no}");
        for k in 1..=3_000 {
            let r = root(k);
            let view = table.get(r);
            let entry = model.map.get(&r);
            assert_eq!(
                view.map(|v| (v.ack_val, v.spout_task, v.failed)),
                entry.map(|e| (e.ack_val, e.spout_task, e.failed)),
                "batch {batch_no}, root {r:#x}"
            );
        }
        if batch_no % 10 == 9 {
            now += 2 * T;
            table.tick(now);
            model.tick(now);
        }
    }
    assert!(decided > 2_000, "only {decided} decisions over the batches");
}

/// What a spout's pending set must answer, kept in a plain map: root → (message id, emit time,
/// epoch of the emit or last reset), with Storm's rule that a tuple times out once the clock is
/// two timeout periods past the period of its emit or last reset.
struct PendingModel {
    map: HashMap<RootId, (u32, u64, u64)>,
    clock_epoch: u64,
    ignored: u64,
    timed_out: u64,
}

/// `SpoutPending` against [`PendingModel`] under random emits, completions, fails, resets and
/// ticks, at every load up to a full table (its linear probing wraps past the end, and removals
/// shift entries back across it): every returned message id, latency, error and init XOR, and
/// after each call `len`, `is_empty`, `is_full`, `contains` (of pending, finished and unknown
/// roots), `ignored` and `timed_out`. (Mutation campaign: a `find` that matched any root, and a
/// backward shift that compared the wrong way, survived the other tests.)
#[test]
fn spout_pending_equals_model() {
    const T_NS: u64 = 1_000;
    for (case, (slots, max_pending)) in [(16, 16), (37, 30), (64, 20), (2, 2), (1, 1)]
        .into_iter()
        .enumerate()
    {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(100 + case as u64);
        let mut pending: SpoutPending<u32, Vec<PendingSlot<u32>>> = SpoutPending::new(
            vec![PendingSlot::default(); slots],
            SpoutConfig {
                spout_task: 5,
                num_ackers: 1,
                max_spout_pending: max_pending,
                message_timeout_ns: Some(T_NS),
                seed: rng.next_u64(),
            },
        )
        .unwrap();
        let mut model = PendingModel {
            map: HashMap::new(),
            clock_epoch: 0,
            ignored: 0,
            timed_out: 0,
        };
        let mut finished: Vec<RootId> = Vec::new();
        let mut now = 0u64;
        let mut next_msg = 0u32;
        let (mut completions, mut timeouts) = (0, 0);
        for step in 0..20_000 {
            let at = format!("case {case} ({slots} slots, max {max_pending}), step {step}");
            // A root to answer for: mostly a pending one, else a finished or an unknown one.
            let live: Vec<RootId> = {
                let mut v: Vec<RootId> = model.map.keys().copied().collect();
                v.sort_unstable();
                v
            };
            let pick = |rng: &mut Xoshiro256PlusPlus| -> RootId {
                match rng.next_u64() % 10 {
                    0 if !finished.is_empty() => {
                        finished[(rng.next_u64() % finished.len() as u64) as usize]
                    }
                    1 => rng.next_u64() | 1,
                    _ if !live.is_empty() => live[(rng.next_u64() % live.len() as u64) as usize],
                    _ => rng.next_u64() | 1,
                }
            };
            match rng.next_u64() % 12 {
                0..=4 => {
                    next_msg += 1;
                    let mut copies = vec![0u64; (rng.next_u64() % 4) as usize];
                    let got = pending.emit(Some(next_msg), &mut copies, now);
                    if model.map.len() == max_pending {
                        assert_eq!(
                            got,
                            Err(PendingError::MaxSpoutPending { msg_id: next_msg }),
                            "{at}"
                        );
                    } else {
                        let Ok(SpoutEmit::Tracked { root, init }) = got else {
                            panic!("{at}: expected a tracked emit, got {got:?}");
                        };
                        assert!(
                            root != 0 && !model.map.contains_key(&root),
                            "{at}: root {root:#x} reused"
                        );
                        assert!(copies.iter().all(|&c| c != 0), "{at}: a zero edge id");
                        let xor = copies.iter().fold(0, |a, &c| a ^ c);
                        assert_eq!(
                            init,
                            AckerMessage::Init {
                                root,
                                xor,
                                spout_task: 5
                            },
                            "{at}"
                        );
                        model.map.insert(root, (next_msg, now, now / T_NS));
                    }
                }
                5..=7 => {
                    let root = pick(&mut rng);
                    let want = match model.map.remove(&root) {
                        Some((msg_id, emit_ns, _)) => {
                            finished.push(root);
                            completions += 1;
                            Some(Completed {
                                msg_id,
                                complete_latency_ns: now - emit_ns,
                            })
                        }
                        None => {
                            model.ignored += 1;
                            None
                        }
                    };
                    assert_eq!(
                        pending.completed(root, now),
                        want,
                        "{at}: completed({root:#x})"
                    );
                }
                8 => {
                    let root = pick(&mut rng);
                    let want = match model.map.remove(&root) {
                        Some((msg_id, _, _)) => {
                            finished.push(root);
                            Some(msg_id)
                        }
                        None => {
                            model.ignored += 1;
                            None
                        }
                    };
                    assert_eq!(pending.failed(root), want, "{at}: failed({root:#x})");
                }
                9 => {
                    let root = pick(&mut rng);
                    let want = match model.map.get_mut(&root) {
                        Some(e) => {
                            e.2 = now / T_NS;
                            true
                        }
                        None => {
                            model.ignored += 1;
                            false
                        }
                    };
                    assert_eq!(pending.reset(root, now), want, "{at}: reset({root:#x})");
                }
                _ => {
                    now += rng.next_u64() % (T_NS / 2);
                    model.clock_epoch = model.clock_epoch.max(now / T_NS);
                    let mut want: Vec<u32> = Vec::new();
                    let clock = model.clock_epoch;
                    model.map.retain(|root, (msg_id, _, epoch)| {
                        let out = clock >= *epoch + 2;
                        if out {
                            want.push(*msg_id);
                            finished.push(*root);
                        }
                        !out
                    });
                    model.timed_out += want.len() as u64;
                    timeouts += want.len();
                    let mut got: Vec<u32> = pending.tick(now).collect();
                    want.sort_unstable();
                    got.sort_unstable();
                    assert_eq!(got, want, "{at}: timed out at {now} ns");
                }
            }
            assert_eq!(pending.len(), model.map.len(), "{at}: len");
            assert_eq!(pending.is_empty(), model.map.is_empty(), "{at}: is_empty");
            assert_eq!(
                pending.is_full(),
                model.map.len() == max_pending,
                "{at}: is_full"
            );
            assert_eq!(pending.ignored(), model.ignored, "{at}: ignored");
            assert_eq!(pending.timed_out(), model.timed_out, "{at}: timed_out");
            for root in live.iter().chain(finished.iter().rev().take(8)) {
                assert_eq!(
                    pending.contains(*root),
                    model.map.contains_key(root),
                    "{at}: contains({root:#x})"
                );
            }
            if finished.len() > 64 {
                finished.drain(..32);
            }
        }
        assert!(
            completions > 1_000 && timeouts >= 5,
            "case {case}: {completions} completions, {timeouts} timeouts"
        );
    }
}
