//! The memory each structure reports (computed from its capacity and entry size) matches what a
//! counting allocator sees it allocate. The allocator counts only the allocations of the thread
//! that is measuring, so the test harness's own threads cannot disturb the figures.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use acker_benches::compare::{capacity_for_window, shared_capacity_for_window, MESSAGE_TIMEOUT_NS};
use acker_benches::{
    AckerStructure, CoreShared, DashMapAcker, HashbrownAcker, MutexHashbrown, SharedAckerStructure,
    StormStyle, Workload, WorkloadConfig,
};
use acker_core::{AckerTable, Slot};
/// The system allocator, counting the live bytes of the current thread's allocations.
struct ThreadCounting;

thread_local! {
    /// Bytes allocated minus bytes freed by this thread (only the measuring thread reads it).
    static LIVE: Cell<isize> = const { Cell::new(0) };
}

fn add_live(delta: isize) {
    // `try_with`: during thread teardown the slot may be gone; nothing is measured then.
    let _ = LIVE.try_with(|l| l.set(l.get() + delta));
}

// SAFETY: every call is forwarded unchanged to `System`; the bookkeeping only touches a
// const-initialised thread-local `Cell`, which never allocates.
unsafe impl GlobalAlloc for ThreadCounting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        add_live(layout.size() as isize);
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, passed on unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        add_live(layout.size() as isize);
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        add_live(-(layout.size() as isize));
        // SAFETY: as for `alloc`; `ptr` came from `System` through this allocator.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        add_live(new_size as isize - layout.size() as isize);
        // SAFETY: as for `dealloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: ThreadCounting = ThreadCounting;

/// Live bytes this thread allocated since `start` (from `LIVE.get()` at the start).
struct Region(isize);

impl Region {
    fn new() -> Self {
        Region(LIVE.with(|l| l.get()))
    }
    fn live(&self) -> usize {
        (LIVE.with(|l| l.get()) - self.0) as usize
    }
}

fn heap_of<S: AckerStructure>(w: &Workload) -> (usize, usize) {
    let region = Region::new();
    let mut s = S::with_capacity(capacity_for_window(w.config.window), MESSAGE_TIMEOUT_NS);
    s.apply_all(&w.prefill, |_, r| assert!(r.is_ok()));
    s.apply_all(&w.ops, |_, r| assert!(r.is_ok()));
    (region.live() + std::mem::size_of::<S>(), s.memory_bytes())
}

fn heap_of_shared<S: SharedAckerStructure>(w: &Workload) -> (usize, usize) {
    let region = Region::new();
    let s = S::with_capacity(
        shared_capacity_for_window(w.config.window),
        MESSAGE_TIMEOUT_NS,
    );
    for m in w.prefill.iter().chain(&w.ops) {
        assert!(s.apply(*m).is_ok());
    }
    (region.live() + std::mem::size_of::<S>(), s.memory_bytes())
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
