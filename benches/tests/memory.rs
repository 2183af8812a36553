//! The memory each structure reports (computed from its capacity and entry size) matches what a
//! counting allocator sees it allocate. One test in this binary, so that no other test's
//! allocations are counted.

use std::alloc::System;

use acker_benches::compare::{capacity_for_window, shared_capacity_for_window, MESSAGE_TIMEOUT_NS};
use acker_benches::{
    AckerStructure, CoreShared, DashMapAcker, HashbrownAcker, MutexHashbrown, SharedAckerStructure,
    StormStyle, Workload, WorkloadConfig,
};
use acker_core::{AckerTable, Slot};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

fn heap_of<S: AckerStructure>(w: &Workload) -> (usize, usize) {
    let region = Region::new(GLOBAL);
    let mut s = S::with_capacity(capacity_for_window(w.config.window), MESSAGE_TIMEOUT_NS);
    s.apply_all(&w.prefill, |_, r| assert!(r.is_ok()));
    s.apply_all(&w.ops, |_, r| assert!(r.is_ok()));
    let c = region.change();
    let live =
        (c.bytes_allocated as isize - c.bytes_deallocated as isize + c.bytes_reallocated) as usize;
    (live + std::mem::size_of::<S>(), s.memory_bytes())
}

fn heap_of_shared<S: SharedAckerStructure>(w: &Workload) -> (usize, usize) {
    let region = Region::new(GLOBAL);
    let s = S::with_capacity(
        shared_capacity_for_window(w.config.window),
        MESSAGE_TIMEOUT_NS,
    );
    for m in w.prefill.iter().chain(&w.ops) {
        // acker-core's shared table may refuse a root whose probe window is full (documented).
        let r = s.apply(*m);
        assert!(r.is_ok() || (S::WINDOWED_FULL && r == Err(acker_core::TableError::Full)));
    }
    let c = region.change();
    let live =
        (c.bytes_allocated as isize - c.bytes_deallocated as isize + c.bytes_reallocated) as usize;
    (live + std::mem::size_of::<S>(), s.memory_bytes())
}

#[test]
fn computed_memory_matches_the_counting_allocator() {
    // dashmap computes its default shard count once, lazily (the standard library's
    // `available_parallelism` allocates on its first call): do it before counting.
    drop(DashMapAcker::with_capacity(1, MESSAGE_TIMEOUT_NS));
    for window in [1, 100, 5_000] {
        let w = Workload::generate(WorkloadConfig::new(window, 3 * window, 9));
        let (measured, computed) = heap_of::<AckerTable<Box<[Slot]>>>(&w);
        assert_eq!(measured, computed, "acker-core at W = {window}");
        assert_eq!(
            computed,
            20 * capacity_for_window(window) + std::mem::size_of::<AckerTable<Box<[Slot]>>>()
        );
        let (measured, computed) = heap_of::<HashbrownAcker>(&w);
        assert_eq!(measured, computed, "hashbrown at W = {window}");
        let (measured, computed) = heap_of::<StormStyle>(&w);
        assert_eq!(measured, computed, "storm-style at W = {window}");
        let (measured, computed) = heap_of_shared::<MutexHashbrown>(&w);
        assert_eq!(measured, computed, "mutex-hashbrown at W = {window}");
        let (measured, computed) = heap_of_shared::<CoreShared>(&w);
        assert_eq!(measured, computed, "acker-core-shared at W = {window}");
        let (measured, computed) = heap_of_shared::<DashMapAcker>(&w);
        assert_eq!(measured, computed, "dashmap at W = {window}");
    }
}
