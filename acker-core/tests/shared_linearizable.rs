//! Linearizability check of the [`SharedAckerTable`] against the single-owner [`AckerTable`].
//!
//! Each round builds a tiny table (1–4 slots, so slots are freed and reused all the time), brings
//! it to a random state with a few sequential calls, then runs a short random concurrent history:
//! 2–4 threads, 1–4 calls each, drawn from `init`, `ack`, `fail`, `reset_timeout`, `get`,
//! `tick` and `len` on three roots. Every call's invocation and response are numbered from one
//! `SeqCst` counter, so "returned before the other began" is known exactly. A Wing–Gong search
//! then looks for a sequential order of the same calls on an [`AckerTable`] that respects that
//! real-time order and gives every call the result it gave (decisions, errors, entries,
//! lengths), and the same final state: the same `len` and entries, and again after each of three
//! later ticks (so the entries' expiry stamps agree too). A round with no such order fails the
//! test and prints its seed and history.
//!
//! Time bound: [`DEFAULT_SECS`] seconds of rounds (release build; 5 s in a debug build), or
//! `ACKER_LINEARIZABILITY_SECS` seconds; the regressions run first, a bounded number of rounds
//! each. The seed of the first round is `ACKER_LINEARIZABILITY_SEED` (default: fixed), so a run
//! is repeatable in its choices (not in its interleavings).
#![cfg(not(loom))]

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use acker_core::shared::{AtomicU32, AtomicU64 as TableU64, SharedSlots};
use acker_core::{AckerTable, Decision, EntryView, SharedAckerTable, Slot, TableError};
use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

const T: u64 = 1_000;
/// Roots used: 1, 2 and 3.
const ROOTS: u64 = 3;
/// Seconds of random rounds in a release build (the CI budget for this test is 60 s).
const DEFAULT_SECS: u64 = 20;

type VecSlots = SharedSlots<Vec<TableU64>, Vec<TableU64>, Vec<AtomicU32>>;

fn vec_slots(n: usize) -> VecSlots {
    SharedSlots::new(
        (0..n).map(|_| TableU64::new(0)).collect(),
        (0..n).map(|_| TableU64::new(0)).collect(),
        (0..n).map(|_| AtomicU32::new(0)).collect(),
    )
    .unwrap()
}

/// One call on the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Call {
    Init(u64, u64, u16),
    Ack(u64, u64),
    Fail(u64),
    Reset(u64),
    Get(u64),
    Tick(u64),
    Len,
}

/// What a call returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ret {
    Decision(Result<Decision, TableError>),
    Entry(Option<EntryView>),
    Len(usize),
    Unit,
}

fn call_shared(t: &SharedAckerTable<VecSlots>, c: Call) -> Ret {
    match c {
        Call::Init(r, x, s) => Ret::Decision(t.init(r, x, s)),
        Call::Ack(r, x) => Ret::Decision(t.ack(r, x)),
        Call::Fail(r) => Ret::Decision(t.fail(r)),
        Call::Reset(r) => Ret::Decision(t.reset_timeout(r)),
        Call::Get(r) => Ret::Entry(t.get(r)),
        Call::Tick(now) => {
            t.tick(now);
            Ret::Unit
        }
        Call::Len => Ret::Len(t.len()),
    }
}

fn call_single(t: &mut AckerTable<Vec<Slot>>, c: Call) -> Ret {
    match c {
        Call::Init(r, x, s) => Ret::Decision(t.init(r, x, s)),
        Call::Ack(r, x) => Ret::Decision(t.ack(r, x)),
        Call::Fail(r) => Ret::Decision(t.fail(r)),
        Call::Reset(r) => Ret::Decision(t.reset_timeout(r)),
        Call::Get(r) => Ret::Entry(t.get(r)),
        Call::Tick(now) => {
            t.tick(now);
            Ret::Unit
        }
        Call::Len => Ret::Len(t.len()),
    }
}

/// A concurrent scenario: the table, the sequential calls that set it up, and each thread's calls.
#[derive(Clone, Debug)]
struct Scenario {
    capacity: usize,
    setup: Vec<Call>,
    threads: Vec<Vec<Call>>,
}

/// A call of the concurrent part with its result and its invocation and response numbers.
#[derive(Clone, Copy, Debug)]
struct Event {
    call: Call,
    ret: Ret,
    inv: u64,
    resp: u64,
}

/// What the table looks like: its length and every root's entry, now and after each of three
/// later ticks (each one message timeout after the previous).
type Observation = Vec<(usize, [Option<EntryView>; ROOTS as usize])>;

fn random_call(rng: &mut Xoshiro256PlusPlus, now: u64, concurrent: bool) -> Call {
    let root = rng.next_u64() % ROOTS + 1;
    // XORs that cancel often, so that trees complete.
    let xor = [0x1, 0x2, 0x3, 0x1, 0x2, 0][(rng.next_u32() % 6) as usize];
    let task = 7 + (rng.next_u32() % 2) as u16;
    let kinds = if concurrent { 16 } else { 12 };
    match rng.next_u32() % kinds {
        0..=2 => Call::Init(root, xor, task),
        3..=6 => Call::Ack(root, xor),
        7 => Call::Fail(root),
        8 => Call::Reset(root),
        // A tick up to three timeouts past the setup's clock: 0 to 3 epochs, so entries expire
        // while the other threads work on them.
        9..=11 => Call::Tick(now + (rng.next_u64() % 7) * T / 2),
        12 | 13 => Call::Get(root),
        _ => Call::Len,
    }
}

fn random_scenario(rng: &mut Xoshiro256PlusPlus) -> Scenario {
    let capacity = 1 + (rng.next_u32() % 4) as usize;
    let mut now = 0;
    let mut setup = Vec::new();
    for _ in 0..rng.next_u32() % 6 {
        let c = random_call(rng, now, false);
        if let Call::Tick(t) = c {
            now = now.max(t);
        }
        setup.push(c);
    }
    let threads = (0..2 + rng.next_u32() % 3)
        .map(|_| {
            (0..1 + rng.next_u32() % 4)
                .map(|_| random_call(rng, now, true))
                .collect()
        })
        .collect();
    Scenario {
        capacity,
        setup,
        threads,
    }
}

/// The table after `setup`, checking that it gives the single-owner table's results.
fn set_up(s: &Scenario) -> SharedAckerTable<VecSlots> {
    let shared = SharedAckerTable::new(vec_slots(s.capacity), T).unwrap();
    let mut single = AckerTable::new(vec![Slot::EMPTY; s.capacity], T).unwrap();
    for &c in &s.setup {
        assert_eq!(
            call_shared(&shared, c),
            call_single(&mut single, c),
            "{c:?}"
        );
    }
    shared
}

fn last_now(calls: impl IntoIterator<Item = Call>) -> u64 {
    calls
        .into_iter()
        .filter_map(|c| match c {
            Call::Tick(n) => Some(n),
            _ => None,
        })
        .max()
        .unwrap_or(0)
}

fn observe_shared(t: &SharedAckerTable<VecSlots>, mut now: u64) -> Observation {
    let mut obs = Vec::new();
    for k in 0..4 {
        if k > 0 {
            now += T;
            t.tick(now);
        }
        obs.push((t.len(), std::array::from_fn(|r| t.get(r as u64 + 1))));
    }
    obs
}

fn observe_single(t: &mut AckerTable<Vec<Slot>>, mut now: u64) -> Observation {
    let mut obs = Vec::new();
    for k in 0..4 {
        if k > 0 {
            now += T;
            t.tick(now);
        }
        obs.push((t.len(), std::array::from_fn(|r| t.get(r as u64 + 1))));
    }
    obs
}

/// Runs the scenario's threads at once on a fresh table; returns each thread's events and the
/// final observation.
/// How long one history's calls may take in all before the check fails (a call that never
/// returns, e.g. a livelocked insert, must fail the test, not hang it).
const HISTORY_SECS: u64 = 30;

fn run(s: &Scenario, spin_seed: u64) -> (Vec<Vec<Event>>, Observation) {
    let table = Arc::new(set_up(s));
    let clock = Arc::new(AtomicU64::new(0));
    let waiting = Arc::new(AtomicUsize::new(s.threads.len()));
    let (done, finished) = mpsc::channel();
    for (i, calls) in s.threads.iter().cloned().enumerate() {
        let (table, clock, waiting, done) =
            (table.clone(), clock.clone(), waiting.clone(), done.clone());
        // Not scoped: a thread stuck in a call is left behind (and ends with the process) so
        // that the wait below can fail.
        std::thread::spawn(move || {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(spin_seed ^ i as u64);
            // Start together.
            waiting.fetch_sub(1, SeqCst);
            while waiting.load(SeqCst) != 0 {
                std::hint::spin_loop();
            }
            let events = calls
                .iter()
                .map(|&call| {
                    for _ in 0..rng.next_u32() % 64 {
                        std::hint::spin_loop();
                    }
                    let inv = clock.fetch_add(1, SeqCst);
                    let ret = call_shared(&table, call);
                    let resp = clock.fetch_add(1, SeqCst);
                    Event {
                        call,
                        ret,
                        inv,
                        resp,
                    }
                })
                .collect::<Vec<_>>();
            let _ = done.send((i, events));
        });
    }
    drop(done);
    let deadline = Instant::now() + Duration::from_secs(HISTORY_SECS);
    let mut events = vec![Vec::new(); s.threads.len()];
    for _ in 0..s.threads.len() {
        match finished.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok((i, evs)) => events[i] = evs,
            Err(mpsc::RecvTimeoutError::Timeout) => panic!(
                "a call of this history did not return within {HISTORY_SECS} s (the calls of \
                 threads still running never returned: a livelock?)\n{s:?}"
            ),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                panic!("a thread of this history panicked (see above)\n{s:?}")
            }
        }
    }
    let now = last_now(s.setup.iter().chain(s.threads.iter().flatten()).copied());
    let obs = observe_shared(&table, now);
    (events, obs)
}

/// Wing–Gong search: is there an order of the events, each thread's in program order and every
/// event after those that returned before it began, that the single-owner table (after the
/// setup) answers with the same results and ends in `obs`? Returns one, as (thread, index) pairs.
fn linearize(
    s: &Scenario,
    events: &[Vec<Event>],
    obs: &Observation,
) -> Option<Vec<(usize, usize)>> {
    let now = last_now(s.setup.iter().chain(s.threads.iter().flatten()).copied());
    let mut order = Vec::new();
    let mut next = vec![0; events.len()];
    let mut visited = Visited::default();
    match search(s, events, obs, now, &mut next, &mut order, &mut visited) {
        Some(true) => Some(order),
        Some(false) => None,
        None => panic!(
            "the search gave up after {SEARCH_STEPS} steps without finding an order of this \
             history: counted as not linearizable (a correct table's histories are found in under \
             1,000 steps)\n{s:?}\n{events:?}\nfinal: {obs:?}"
        ),
    }
}

/// The most nodes one history's search visits: a safety net, so that a search can never hang
/// a test. Each node replays the order so far on a fresh single-owner table; when no order
/// exists (a bug) the whole space is visited. Measured with an impossible final state (every
/// history then has no order): each of 2,632 random histories was searched in full in under
/// 0.2 s, none near this bound.
const SEARCH_STEPS: u64 = 20_000;

/// What one history's search has visited: (calls placed per thread, the table's state) pairs
/// that led nowhere, and how many nodes in all.
#[derive(Default)]
struct Visited {
    seen: HashSet<(Vec<usize>, String)>,
    steps: u64,
}

/// The single-owner table after the setup and the calls of `order`.
fn replay(s: &Scenario, events: &[Vec<Event>], order: &[(usize, usize)]) -> AckerTable<Vec<Slot>> {
    let mut t = AckerTable::new(vec![Slot::EMPTY; s.capacity], T).unwrap();
    for &c in &s.setup {
        call_single(&mut t, c);
    }
    for &(th, k) in order {
        call_single(&mut t, events[th][k].call);
    }
    t
}

fn search(
    s: &Scenario,
    events: &[Vec<Event>],
    obs: &Observation,
    now: u64,
    next: &mut Vec<usize>,
    order: &mut Vec<(usize, usize)>,
    visited: &mut Visited,
) -> Option<bool> {
    visited.steps += 1;
    if visited.steps > SEARCH_STEPS {
        return None;
    }
    if next.iter().zip(events).all(|(&n, e)| n == e.len()) {
        let mut t = replay(s, events, order);
        return Some(observe_single(&mut t, now) == *obs);
    }
    // Prune: the same calls done, leading to the same state, failed before.
    let state = format!("{:?}", replay(s, events, order));
    if !visited.seen.insert((next.clone(), state)) {
        return Some(false);
    }
    // The earliest response among the calls not yet placed: a call invoked after it cannot
    // come next.
    let earliest = next
        .iter()
        .zip(events)
        .filter_map(|(&n, e)| e.get(n).map(|ev| ev.resp))
        .min()
        .unwrap();
    for th in 0..events.len() {
        let Some(ev) = events[th].get(next[th]) else {
            continue;
        };
        if ev.inv > earliest {
            continue;
        }
        let mut t = replay(s, events, order);
        if call_single(&mut t, ev.call) != ev.ret {
            continue;
        }
        order.push((th, next[th]));
        next[th] += 1;
        match search(s, events, obs, now, next, order, visited) {
            Some(false) => {}
            found_or_gave_up => return found_or_gave_up,
        }
        next[th] -= 1;
        order.pop();
    }
    Some(false)
}

/// Runs `s` once; panics with the history if it is not linearizable.
fn check_once(s: &Scenario, spin_seed: u64, what: &str) {
    let (events, obs) = run(s, spin_seed);
    if linearize(s, &events, &obs).is_none() {
        let mut all: Vec<_> = events
            .iter()
            .enumerate()
            .flat_map(|(th, evs)| evs.iter().map(move |e| (th, *e)))
            .collect();
        all.sort_by_key(|(_, e)| e.inv);
        let history: Vec<String> = all
            .iter()
            .map(|(th, e)| {
                format!(
                    "  thread {th}: [{:>3}, {:>3}] {:?} -> {:?}",
                    e.inv, e.resp, e.call, e.ret
                )
            })
            .collect();
        panic!(
            "{what}: no sequential order of this history gives its results\n{s:?}\n{}\nfinal: {obs:?}",
            history.join("\n")
        );
    }
}

fn budget() -> Duration {
    let secs = std::env::var("ACKER_LINEARIZABILITY_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if cfg!(debug_assertions) {
            5
        } else {
            DEFAULT_SECS
        });
    Duration::from_secs(secs)
}

#[test]
fn random_histories_are_linearizable() {
    let seed = std::env::var("ACKER_LINEARIZABILITY_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(13);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let start = Instant::now();
    let mut rounds = 0u64;
    // At least MIN_ROUNDS histories even when the machine is loaded (a mutation campaign runs
    // this with a 2 s budget at nice 19), bounded by a hard limit so that nothing hangs.
    const MIN_ROUNDS: u64 = 104;
    let hard_limit = budget() * 10 + Duration::from_secs(30);
    while start.elapsed() < budget() || (rounds < MIN_ROUNDS && start.elapsed() < hard_limit) {
        let s = random_scenario(&mut rng);
        // Each scenario a few times: its interleavings vary from run to run.
        for _ in 0..8 {
            let spin_seed = rng.next_u64();
            check_once(&s, spin_seed, &format!("seed {seed}, round {rounds}"));
            rounds += 1;
        }
    }
    eprintln!(
        "{rounds} concurrent histories checked in {:?}",
        start.elapsed()
    );
    assert!(
        rounds >= MIN_ROUNDS,
        "only {rounds} histories in {:?} (hard limit {hard_limit:?}), want {MIN_ROUNDS}",
        start.elapsed()
    );
}

/// The checker itself: it accepts the histories it must accept and rejects one it must reject.
#[test]
fn the_checker_rejects_a_history_no_order_gives() {
    let s = Scenario {
        capacity: 2,
        setup: vec![Call::Init(5, 0x3, 7)],
        threads: vec![vec![Call::Fail(5)], vec![Call::Ack(5, 0x3)]],
    };
    let obs_empty: Observation = (0..4).map(|_| (0, [None; 3])).collect();
    let ev = |call, ret, inv, resp| Event {
        call,
        ret,
        inv,
        resp,
    };
    // Issue 13's interleaving 4: the fail reports Failed and the ack Pending, and nothing is
    // left (both sequential orders leave an orphan).
    let bad = vec![
        vec![ev(
            Call::Fail(5),
            Ret::Decision(Ok(Decision::Failed { spout_task: 7 })),
            0,
            3,
        )],
        vec![ev(
            Call::Ack(5, 0x3),
            Ret::Decision(Ok(Decision::Pending)),
            1,
            2,
        )],
    ];
    assert!(linearize(&s, &bad, &obs_empty).is_none());
    // Fail first, then the ack's orphan: root 5 is not in `Observation`'s roots 1–3, so use the
    // observation the single-owner table gives for that order.
    let mut t = replay(&s, &bad, &[(0, 0), (1, 0)]);
    let obs = observe_single(&mut t, 0);
    assert_eq!(obs[0].0, 1, "the orphan is live");
    let order = linearize(&s, &bad, &obs).expect("fail, then ack");
    assert_eq!(order, [(0, 0), (1, 0)]);
    // The same results are not linearizable if the ack returned before the fail began.
    let sequential = vec![
        vec![ev(
            Call::Fail(5),
            Ret::Decision(Ok(Decision::Failed { spout_task: 7 })),
            2,
            3,
        )],
        vec![ev(
            Call::Ack(5, 0x3),
            Ret::Decision(Ok(Decision::Pending)),
            0,
            1,
        )],
    ];
    assert!(linearize(&s, &sequential, &obs).is_none());
}

/// Scenarios in which this checker, or the loom models, once found a history no sequential
/// order gives (on the pin-count design before issue 13); each is run [`REGRESSION_ROUNDS`]
/// times.
fn regressions() -> Vec<Scenario> {
    use Call::*;
    vec![
        // Found by this checker (seed 13, round 0): root 3's init created a fresh entry after
        // its old one expired, but stamped it with the epoch from before the tick; `len` said 1
        // and the entry then expired one tick early:
        //   thread 3: [  0,   5] Init(3, 1, 7) -> Pending
        //   thread 1: [  1,   2] Tick(1500);  [  3,   4] Tick(3000)
        //   thread 0: [  6,   7] Len -> 1; [  8,   9] Ack(1, 1) -> Pending; [ 10,  11] Get(2) -> None
        //   thread 2: [ 12,  13] Init(1, 2, 8) -> Pending; [ 14,  15] Init(1, 1, 8) -> DuplicateInit
        Scenario {
            capacity: 2,
            setup: vec![Ack(3, 2), Init(3, 0, 8), Reset(3), Tick(1500)],
            threads: vec![
                vec![Len, Ack(1, 1), Get(2)],
                vec![Tick(1500), Tick(3000)],
                vec![Init(1, 2, 8), Init(1, 1, 8)],
                vec![Init(3, 1, 7)],
            ],
        },
        // Issue 13, interleaving 1: get ∥ completion and reuse of the only slot. The checker
        // also found (in 3 s) a get that saw root 1's entry with the completing ack's XOR in it
        // but not yet decided, a state no sequential order has:
        //   thread 1: [  0,   3] Ack(1, 3) -> Completed
        //   thread 0: [  1,   2] Get(1) -> Some(ack_val 0, spout task 7)
        Scenario {
            capacity: 1,
            setup: vec![Init(1, 0x3, 7)],
            threads: vec![vec![Get(1), Get(1)], vec![Ack(1, 0x3), Ack(2, 0x2)]],
        },
        // Interleaving 2: an insert ∥ a tick that advances the epoch by a whole period.
        Scenario {
            capacity: 2,
            setup: vec![],
            threads: vec![vec![Ack(1, 0x1), Len, Get(1)], vec![Tick(3 * T), Len]],
        },
        // Interleaving 3: the last ack ∥ the tick that expires its entry.
        Scenario {
            capacity: 2,
            setup: vec![Init(1, 0x3, 7), Tick(2 * T)],
            threads: vec![vec![Ack(1, 0x3), Get(1)], vec![Tick(3 * T), Len]],
        },
        // Interleaving 4: fail ∥ the last ack.
        Scenario {
            capacity: 2,
            setup: vec![Init(1, 0x3, 7)],
            threads: vec![vec![Fail(1), Len], vec![Ack(1, 0x3), Get(1)]],
        },
    ]
}

const REGRESSION_ROUNDS: usize = 300;

#[test]
fn regression_histories_are_linearizable() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    for (k, s) in regressions().iter().enumerate() {
        for _ in 0..REGRESSION_ROUNDS {
            check_once(s, rng.next_u64(), &format!("regression {k}"));
        }
    }
}
