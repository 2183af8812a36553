//! What a run does when the allocator refuses the memory its configuration asks for: a typed
//! error naming the task and what it was allocating, not an aborted process (new-user trial:
//! `max_spout_pending: Some(10^8)` under a `ulimit -v` ended in SIGABRT).
//!
//! The allocator of this test binary refuses every single allocation over 64 MiB (returns null,
//! as the system allocator does under a `ulimit -v` or without memory), deterministically and
//! without touching the machine's limits. Smaller allocations go to the system allocator.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::time::Duration;

use acker_runtime::local::LocalShell;
use acker_runtime::shell::{run, ShellError, ShellOptions, MAX_RING_CAPACITY};
use acker_runtime::{
    values, BuildError, Config, MessageId, Spout, SpoutOutputCollector, TopologyBuilder,
    MAX_ACKER_CAPACITY_ROOTS, MAX_PENDING_CAPACITY,
};

/// The largest single allocation this binary's allocator grants.
const LIMIT: usize = 64 << 20;

struct Refusing;

// SAFETY: forwards every call it grants unchanged to the system allocator; a refused one returns
// null, which `GlobalAlloc` allows for any allocation that cannot be satisfied.
unsafe impl GlobalAlloc for Refusing {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > LIMIT {
            return std::ptr::null_mut();
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() > LIMIT {
            return std::ptr::null_mut();
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > LIMIT {
            return std::ptr::null_mut();
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Refusing = Refusing;

/// Emits `limit` integers, then is done once all are acked.
struct Ints {
    n: u64,
    limit: u64,
    acked: u64,
}
impl Spout for Ints {
    fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
        if self.n < self.limit {
            self.n += 1;
            c.emit(values![self.n as i64], Some(self.n)).unwrap();
        }
    }
    fn ack(&mut self, _id: MessageId) {
        self.acked += 1;
    }
    fn is_done(&self) -> bool {
        self.acked == self.limit
    }
}

fn topology() -> acker_runtime::Topology {
    let mut b = TopologyBuilder::new();
    b.set_spout(
        "ints",
        || Ints {
            n: 0,
            limit: 1000,
            acked: 0,
        },
        1,
    )
    .output_fields(&["n"]);
    b.build().unwrap()
}

#[test]
fn a_pending_set_acker_table_or_park_queue_the_allocator_refuses_is_a_build_error() {
    let t = topology();
    // Max spout pending at its bound: a pending set of 2 × 10^7 slots, over the limit.
    let plan = t
        .plan(&Config {
            max_spout_pending: Some(MAX_PENDING_CAPACITY),
            acker_capacity_roots: Some(1 << 20),
            ..Config::default()
        })
        .unwrap();
    let e = LocalShell::new(&plan).err().expect("a build error");
    let BuildError::OutOfMemory { task, what, bytes } = e else {
        panic!("{e:?}")
    };
    assert_eq!((task, what), (0, "pending set"));
    assert!(bytes > LIMIT, "{bytes}");
    assert!(e.to_string().contains("lower max spout pending"), "{e}");
    // The same through the threaded shell: an error, not a panic or an abort.
    let r = run(
        &plan,
        &ShellOptions {
            cores: Some(1),
            ..ShellOptions::default()
        },
    );
    assert!(
        matches!(
            r,
            Err(ShellError::Build(BuildError::OutOfMemory {
                what: "pending set",
                ..
            }))
        ),
        "{r:?}"
    );

    // The acker's table at its bound (2 GB of slots); the acker is task 1.
    let plan = t
        .plan(&Config {
            acker_capacity_roots: Some(MAX_ACKER_CAPACITY_ROOTS),
            ..Config::default()
        })
        .unwrap();
    let e = LocalShell::new(&plan).err().expect("a build error");
    assert_eq!(
        e,
        BuildError::OutOfMemory {
            task: 1,
            what: "acker table",
            bytes: MAX_ACKER_CAPACITY_ROOTS * 20
        }
    );

    // A park queue of 2^28 messages.
    let plan = t
        .plan(&Config::default())
        .unwrap()
        .with_acker_park_capacity(1 << 28);
    let e = LocalShell::new(&plan).err().expect("a build error");
    // 40 bytes a message (the 24-byte message, a 4-byte link, a 4-byte free-list entry, an
    // 8-byte order entry) and 16 an index slot, 2^29 of them: the 72 B a message `--help` states.
    assert_eq!(
        e,
        BuildError::OutOfMemory {
            task: 1,
            what: "park queue",
            bytes: (1 << 28) * 40 + (1 << 29) * 16
        }
    );

    // What fits still runs, in this same binary: 1000 trees acked.
    let plan = t.plan(&Config::default()).unwrap();
    let report = common::run_bounded(
        &plan,
        &ShellOptions {
            cores: Some(1),
            ..ShellOptions::default()
        },
        Duration::from_secs(60),
        "a small run under the refusing allocator",
    );
    assert_eq!(report.spout_totals().acked, 1000);
}

#[test]
fn rings_the_allocator_refuses_are_an_error_naming_their_size() {
    // Two threads: each ordered pair gets four rings; the data ring of 2^20 128-byte envelopes
    // is 128 MiB, over the limit.
    let plan = topology().plan(&Config::default()).unwrap();
    let r = run(
        &plan,
        &ShellOptions {
            cores: Some(2),
            ring_capacity: MAX_RING_CAPACITY,
            ..ShellOptions::default()
        },
    );
    let Err(ShellError::OutOfMemory { bytes }) = r else {
        panic!("{r:?}")
    };
    assert!(bytes >= 2 * MAX_RING_CAPACITY * 128, "{bytes}");
}
