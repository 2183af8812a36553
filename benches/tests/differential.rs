//! Differential test: random message sequences applied to acker-core's table and to every peer
//! give equal decisions, errors and lengths, message by message, so no peer is faster by being
//! wrong.

use acker_benches::compare::{OneAtATime, Prefetched};
use acker_benches::{
    AckerStructure, CoreShared, DashMapAcker, HashbrownAcker, MutexHashbrown, SharedAckerStructure,
    StormStyle,
};
use acker_core::{AckerMessage, AckerTable, Decision, Slot, TableError};
use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

const T: u64 = 1_000;

/// One step of a random scenario.
#[derive(Clone, Copy, Debug)]
enum Step {
    Message(AckerMessage),
    Tick(u64),
}

/// A random scenario over a small root space (so messages hit existing entries, decided roots and
/// unknown roots), small xor values (so ack vals reach 0 in every order), root 0 now and then,
/// duplicate inits, and a clock that crawls, jumps past several timeouts, or stands still.
fn scenario(seed: u64, len: usize, roots: u64) -> Vec<Step> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut now = 0u64;
    let mut steps = Vec::with_capacity(len);
    for _ in 0..len {
        let r = rng.next_u64();
        let root = if r % 97 == 0 { 0 } else { 1 + (r >> 8) % roots };
        let xor = (r >> 32) % 4;
        let task = ((r >> 40) % 3) as u16;
        let step = match (r >> 16) % 100 {
            0..=19 => Step::Message(AckerMessage::Init {
                root,
                xor,
                spout_task: task,
            }),
            20..=69 => Step::Message(AckerMessage::Ack { root, xor }),
            70..=79 => Step::Message(AckerMessage::Fail { root }),
            80..=89 => Step::Message(AckerMessage::ResetTimeout { root }),
            90..=97 => {
                now += (r >> 48) % (T / 2);
                Step::Tick(now)
            }
            _ => {
                now += T * ((r >> 48) % 5);
                Step::Tick(now)
            }
        };
        steps.push(step);
    }
    steps
}

fn reference(capacity: usize) -> AckerTable<Box<[Slot]>> {
    AckerTable::new(vec![Slot::EMPTY; capacity].into_boxed_slice(), T).unwrap()
}

/// Runs `steps` on the reference and on `S`, asserting equal results and lengths at every step.
/// Returns the reference's results, to check the scenario exercised every kind of result.
fn check_single<S: AckerStructure>(
    steps: &[Step],
    capacity: usize,
) -> Vec<Result<Decision, TableError>> {
    let mut ours = reference(capacity);
    let mut peer = S::with_capacity(capacity, T);
    let mut results = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        match *step {
            Step::Message(m) => {
                let a = ours.apply(m);
                let b = peer.apply(m);
                assert_eq!(a, b, "{}: step {i} ({m:?})", S::NAME);
                results.push(a);
            }
            Step::Tick(now) => {
                ours.tick(now);
                peer.tick(now);
            }
        }
        assert_eq!(ours.len(), peer.len(), "{}: len after step {i}", S::NAME);
    }
    results
}

/// Decisions, errors and lengths after every step equal acker-core's single-owner table's.
fn check_shared<S: SharedAckerStructure>(steps: &[Step], capacity: usize) {
    let mut ours = reference(capacity);
    let peer = S::with_capacity(capacity, T);
    for (i, step) in steps.iter().enumerate() {
        match *step {
            Step::Message(m) => {
                assert_eq!(
                    ours.apply(m),
                    peer.apply(m),
                    "{}: step {i} ({m:?})",
                    S::NAME
                )
            }
            Step::Tick(now) => {
                ours.tick(now);
                peer.tick(now);
            }
        }
        assert_eq!(ours.len(), peer.len(), "{}: len after step {i}", S::NAME);
    }
}

#[test]
fn every_peer_agrees_with_acker_core_on_random_sequences() {
    let mut seen = [false; 7];
    for seed in 0..300u64 {
        let capacity = 1 + (seed as usize % 12);
        let steps = scenario(seed, 400, 16);
        let results = check_single::<StormStyle>(&steps, capacity);
        check_single::<HashbrownAcker>(&steps, capacity);
        check_single::<OneAtATime>(&steps, capacity);
        check_single::<Prefetched>(&steps, capacity);
        check_shared::<CoreShared>(&steps, capacity);
        check_shared::<MutexHashbrown>(&steps, capacity);
        check_shared::<DashMapAcker>(&steps, capacity);
        for r in results {
            let k = match r {
                Ok(Decision::Pending) => 0,
                Ok(Decision::Completed { .. }) => 1,
                Ok(Decision::Failed { .. }) => 2,
                Ok(Decision::Reset { .. }) => 3,
                Err(TableError::Full) => 4,
                Err(TableError::ZeroRoot) => 5,
                Err(TableError::DuplicateInit) => 6,
            };
            seen[k] = true;
        }
    }
    assert_eq!(
        seen, [true; 7],
        "the scenarios reach every decision and error"
    );
}

#[test]
fn peers_agree_on_larger_tables_with_expiry() {
    for seed in 1000..1010u64 {
        let steps = scenario(seed, 20_000, 3_000);
        check_single::<StormStyle>(&steps, 2_048);
        check_single::<HashbrownAcker>(&steps, 2_048);
        check_single::<OneAtATime>(&steps, 2_048);
        check_single::<Prefetched>(&steps, 2_048);
        check_shared::<DashMapAcker>(&steps, 2_048);
        check_shared::<CoreShared>(&steps, 2_048);
    }
}

/// The batching path (`apply_all`) of acker-core gives the same results, in the same order, as
/// applying one message at a time.
#[test]
fn apply_all_matches_one_at_a_time() {
    for seed in 0..52u64 {
        // Two large tables, so that the read-ahead path of `apply_batch` runs too.
        let (capacity, len, roots) = if seed >= 50 {
            (
                acker_core::table::BATCH_READ_AHEAD_MIN_SLOTS + 1_000,
                200_000,
                60_000,
            )
        } else {
            (4 + (seed as usize % 60), 3_000, 80)
        };
        let steps = scenario(seed, len, roots);
        let mut one = reference(capacity);
        let mut all = reference(capacity);
        // Apply the messages between ticks as one batch.
        let mut batch = Vec::new();
        let flush = |batch: &mut Vec<AckerMessage>,
                     one: &mut AckerTable<Box<[Slot]>>,
                     all: &mut AckerTable<Box<[Slot]>>| {
            let expected: Vec<_> = batch.iter().map(|m| one.apply(*m)).collect();
            let mut got = vec![None; batch.len()];
            AckerStructure::apply_all(all, batch, |i, r| got[i] = Some(r));
            let got: Vec<_> = got
                .into_iter()
                .map(|r| r.expect("a result per message"))
                .collect();
            assert_eq!(expected, got);
            assert_eq!(one.len(), all.len());
            batch.clear();
        };
        for step in &steps {
            match *step {
                Step::Message(m) => batch.push(m),
                Step::Tick(now) => {
                    flush(&mut batch, &mut one, &mut all);
                    one.tick(now);
                    all.tick(now);
                }
            }
        }
        flush(&mut batch, &mut one, &mut all);
    }
}

/// The read-ahead path of `apply_batch` on a large table in the regime it is built for (the
/// `acker-bench compare` workload: fresh random roots, each an init and 4 chained acks, no
/// expiry), where nearly every message takes the inlined fast paths with buckets hashed ahead:
/// batches of varying size give the same results as one message at a time, and the counts the
/// workload generator expects (completions, roots in flight), which it knows from outside the
/// table.
/// Both read-ahead distances: 8 messages (a 62,500-slot table) and 16 (a table of at least
/// `FAR_READ_AHEAD_MIN_SLOTS`).
#[test]
fn apply_batch_read_ahead_matches_one_at_a_time_on_the_compare_workload() {
    use acker_benches::compare::capacity_for_window;
    use acker_core::table::{BATCH_READ_AHEAD_MIN_SLOTS, FAR_READ_AHEAD_MIN_SLOTS};
    let near = capacity_for_window(50_000);
    assert!((BATCH_READ_AHEAD_MIN_SLOTS..FAR_READ_AHEAD_MIN_SLOTS).contains(&near));
    read_ahead_matches_one_at_a_time(50_000);
    assert!(capacity_for_window(340_000) >= FAR_READ_AHEAD_MIN_SLOTS);
    read_ahead_matches_one_at_a_time(340_000);
}

fn read_ahead_matches_one_at_a_time(window: usize) {
    use acker_benches::compare::capacity_for_window;
    use acker_benches::{Workload, WorkloadConfig};
    let capacity = capacity_for_window(window);
    let w = Workload::generate(WorkloadConfig::new(window, 300_000, 11));
    let mut one = reference(capacity);
    let mut all = reference(capacity);
    for m in &w.prefill {
        assert_eq!(one.apply(*m), Ok(Decision::Pending));
    }
    all.apply_batch(&w.prefill, |i, r| {
        assert_eq!(r, Ok(Decision::Pending), "prefill message {i}")
    });
    let mut completed = 0;
    let mut start = 0;
    let mut size = 1;
    while start < w.ops.len() {
        let batch = &w.ops[start..(start + size).min(w.ops.len())];
        let expected: Vec<_> = batch.iter().map(|m| one.apply(*m)).collect();
        let mut got = Vec::with_capacity(batch.len());
        all.apply_batch(batch, |i, r| got.push((i, r)));
        let got_results: Vec<_> = got.iter().map(|&(_, r)| r).collect();
        assert_eq!(expected, got_results, "batch at message {start}");
        assert!(got.iter().enumerate().all(|(k, &(i, _))| i == k));
        completed += got_results
            .iter()
            .filter(|r| matches!(r, Ok(Decision::Completed { .. })))
            .count();
        start += batch.len();
        // 1, 2, 4, ... 512 messages, then again: batches shorter and longer than the read-ahead.
        size = if size >= 512 { 1 } else { size * 2 };
    }
    assert_eq!(completed, w.completions);
    assert_eq!(
        (one.len(), all.len()),
        (w.final_in_flight, w.final_in_flight)
    );
    // At load 0.8 every root sits in one of its own buckets: a read-ahead that handed a message
    // another message's buckets would place roots outside theirs (and the table would still
    // decide right, through full scans once one such entry is counted, only far slower).
    assert_eq!(
        (one.overflow_len(), all.overflow_len()),
        (0, 0),
        "window {window}"
    );
}
