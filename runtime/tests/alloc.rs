//! Steady state allocates nothing per tuple: a counting global allocator around an
//! integer-payload topology (spout → identity bolt → null bolt, acking on, one acker).
//!
//! One test function runs both checks in sequence, so no other test in this binary allocates
//! concurrently.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use acker_runtime::local::LocalShell;
use acker_runtime::shell::ShellOptions;
use acker_runtime::{
    values, Config, MessageId, Plan, Spout, SpoutOutputCollector, TaskKind, TopologyBuilder,
};

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards every call unchanged to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocs() -> u64 {
    ALLOCS.load(Ordering::Relaxed)
}

/// Snapshots of the allocation count taken by the spout when it emits these message ids.
static MARKS: [AtomicU64; 3] = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];
const MARK_AT: [MessageId; 3] = [100_000, 200_000, 600_000];

struct Ints {
    n: u64,
    limit: u64,
    acked: u64,
}
impl Spout for Ints {
    fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
        if self.n >= self.limit {
            return;
        }
        self.n += 1;
        for (i, &m) in MARK_AT.iter().enumerate() {
            if self.n == m {
                MARKS[i].store(allocs(), Ordering::SeqCst);
            }
        }
        c.emit(values![self.n as i64], Some(self.n)).unwrap();
    }
    fn ack(&mut self, _id: MessageId) {
        self.acked += 1;
    }
    fn is_done(&self) -> bool {
        self.acked == self.limit
    }
}

fn plan(limit: u64) -> Plan {
    let mut b = TopologyBuilder::new();
    b.set_spout(
        "ints",
        move || Ints {
            n: 0,
            limit,
            acked: 0,
        },
        1,
    )
    .output_fields(&["n"]);
    b.set_basic_bolt("identity", || acker_runtime::bolts::IdentityBolt, 1)
        .shuffle_grouping("ints")
        .output_fields(&["n"]);
    b.set_basic_bolt("null", || acker_runtime::bolts::NullBolt, 1)
        .shuffle_grouping("identity");
    b.build()
        .unwrap()
        .plan(&Config {
            max_spout_pending: Some(1024),
            ..Config::default()
        })
        .unwrap()
}

#[test]
fn steady_state_allocates_nothing_per_tuple() {
    // 1. The executors themselves, on the single-threaded shell: exactly zero.
    let mut shell = LocalShell::new(&plan(u64::MAX)).unwrap();
    for _ in 0..10_000 {
        shell.step();
    }
    let before = allocs();
    for _ in 0..100_000 {
        shell.step();
    }
    let during = allocs() - before;
    let c = shell.counters(TaskKind::Spout);
    assert_eq!(c.acked, 110_000, "every tree completed");
    assert_eq!(during, 0, "allocations while 100 000 trees were processed");

    // 2. The thread-per-core shell (rings, staging, ticks, histogram): the count does not grow
    // with the number of tuples. Window A covers 100 000 trees, window B 400 000.
    let limit = 700_000;
    let report = common::run_bounded(
        &plan(limit),
        &ShellOptions {
            cores: Some(2),
            drain_timeout: Some(Duration::from_secs(60)),
            ..ShellOptions::default()
        },
        Duration::from_secs(120),
        "700,000 trees on the thread-per-core shell",
    );
    assert_eq!(report.spout_totals().acked, limit);
    let m: Vec<u64> = MARKS.iter().map(|a| a.load(Ordering::SeqCst)).collect();
    let window_a = m[1] - m[0];
    let window_b = m[2] - m[1];
    println!("allocations: window A (100k trees) {window_a}, window B (400k trees) {window_b}");
    // Queues may grow to a new high-water mark a handful of times; nothing per tuple.
    assert!(window_b <= 16, "window B: {window_b} allocations");
    assert!(window_a <= 16, "window A: {window_a} allocations");
}
