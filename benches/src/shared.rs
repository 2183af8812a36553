//! A table shared by many threads (`&self`), behind one trait, and the peers it is measured
//! against: `Mutex<hashbrown::HashMap>` and `dashmap`.
//!
//! The rules are those of [`crate::peers`] (acker-core's table rules); a shared structure gives
//! the same decisions, errors and lengths as acker-core's single-owner table when driven from one
//! thread (`tests/differential.rs`). From many threads, each thread drives its own trees (as each
//! spout executor's roots go through its own messages), so each thread sees the same decisions as
//! it would alone.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Mutex;

use std::sync::atomic::AtomicU64;

use acker_core::{AckerMessage, Decision, RootId, SharedAckerTable, SharedSlots, TableError};
use dashmap::DashMap;

use crate::peers::hashbrown_map::{raw_table_bytes_for_buckets, StampedEntry};
use crate::peers::{
    decide_entry, restamps, rotations, update_entry, AckerStructure, HashbrownAcker, PeerEntry,
};

/// An acker table shared by many threads: the same operations as [`AckerStructure`], on `&self`.
pub trait SharedAckerStructure: Sync + Send {
    /// The name used in reports and JSON rows (`acker-core-shared`, `mutex-hashbrown`, `dashmap`).
    const NAME: &'static str;

    /// A table of at most `capacity_roots` live roots (at least 1) with message timeout
    /// `message_timeout_ns` (at least 1).
    ///
    /// # Panics
    /// On a zero capacity or timeout (a benchmark configuration error, never user input).
    fn with_capacity(capacity_roots: usize, message_timeout_ns: u64) -> Self
    where
        Self: Sized;

    /// Applies one acker message.
    ///
    /// # Errors
    /// As [`AckerStructure::apply`].
    fn apply(&self, message: AckerMessage) -> Result<Decision, TableError>;

    /// Applies `messages` in order, passing each result to `sink` with the message's index.
    /// The default calls [`apply`](Self::apply) one at a time; an implementation may batch (the
    /// results and their order are the same).
    #[inline]
    fn apply_all<F: FnMut(usize, Result<Decision, TableError>)>(
        &self,
        messages: &[AckerMessage],
        mut sink: F,
    ) {
        for (i, m) in messages.iter().enumerate() {
            sink(i, self.apply(*m));
        }
    }

    /// Advances the injected clock (see [`AckerStructure::tick`]).
    fn tick(&self, now_ns: u64);

    /// Live roots.
    fn len(&self) -> usize;

    /// Whether no root is live.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of memory the table holds now, computed from its capacity and entry size.
    fn memory_bytes(&self) -> usize;

    /// Number of slots (entry-sized places) the table has now.
    fn slots(&self) -> usize;
}

/// acker-core's lock-free [`SharedAckerTable`] over boxed slot arrays (20 bytes a slot).
pub type CoreShared =
    SharedAckerTable<SharedSlots<Box<[AtomicU64]>, Box<[AtomicU64]>, Box<[AtomicU32]>>>;

impl SharedAckerStructure for CoreShared {
    const NAME: &'static str = "acker-core-shared";

    fn with_capacity(capacity_roots: usize, message_timeout_ns: u64) -> Self {
        let u64s = || {
            (0..capacity_roots)
                .map(|_| AtomicU64::new(0))
                .collect::<Box<[_]>>()
        };
        let metas = (0..capacity_roots)
            .map(|_| AtomicU32::new(0))
            .collect::<Box<[_]>>();
        let slots = SharedSlots::new(u64s(), u64s(), metas).expect("arrays of one length");
        SharedAckerTable::new(slots, message_timeout_ns).expect("valid shared table configuration")
    }

    #[inline]
    fn apply(&self, message: AckerMessage) -> Result<Decision, TableError> {
        SharedAckerTable::apply(self, message)
    }

    fn tick(&self, now_ns: u64) {
        SharedAckerTable::tick(self, now_ns)
    }

    fn len(&self) -> usize {
        SharedAckerTable::len(self)
    }

    fn memory_bytes(&self) -> usize {
        SharedAckerTable::memory_bytes(self)
    }

    fn slots(&self) -> usize {
        self.capacity()
    }
}

/// [`CoreShared`] driven through [`SharedAckerTable::apply_batch`], which prefetches the
/// buckets of the messages a few places ahead (from 52 428 slots up): what an engine that hands
/// the table batches of messages gets. Same results as [`CoreShared`], message by message.
#[derive(Debug)]
pub struct CoreSharedBatch(pub CoreShared);

impl SharedAckerStructure for CoreSharedBatch {
    const NAME: &'static str = "acker-core-shared-batch";

    fn with_capacity(capacity_roots: usize, message_timeout_ns: u64) -> Self {
        CoreSharedBatch(CoreShared::with_capacity(
            capacity_roots,
            message_timeout_ns,
        ))
    }

    #[inline]
    fn apply(&self, message: AckerMessage) -> Result<Decision, TableError> {
        self.0.apply(message)
    }

    #[inline]
    fn apply_all<F: FnMut(usize, Result<Decision, TableError>)>(
        &self,
        messages: &[AckerMessage],
        sink: F,
    ) {
        self.0.apply_batch(messages, sink)
    }

    fn tick(&self, now_ns: u64) {
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

/// [`HashbrownAcker`] behind a `std::sync::Mutex`: every message takes the one lock.
#[derive(Debug)]
pub struct MutexHashbrown {
    inner: Mutex<HashbrownAcker>,
}

impl MutexHashbrown {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashbrownAcker> {
        // A panic while holding the lock cannot leave the map half-updated in a way that matters
        // to a benchmark; keep going with its state.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl SharedAckerStructure for MutexHashbrown {
    const NAME: &'static str = "mutex-hashbrown";

    fn with_capacity(capacity_roots: usize, message_timeout_ns: u64) -> Self {
        MutexHashbrown {
            inner: Mutex::new(HashbrownAcker::with_capacity(
                capacity_roots,
                message_timeout_ns,
            )),
        }
    }

    #[inline]
    fn apply(&self, message: AckerMessage) -> Result<Decision, TableError> {
        self.lock().apply(message)
    }

    fn tick(&self, now_ns: u64) {
        self.lock().tick(now_ns)
    }

    fn len(&self) -> usize {
        self.lock().len()
    }

    fn memory_bytes(&self) -> usize {
        self.lock().memory_bytes() - std::mem::size_of::<HashbrownAcker>()
            + std::mem::size_of::<Self>()
    }

    fn slots(&self) -> usize {
        self.lock().slots()
    }
}

/// `dashmap::DashMap<RootId, _>` (default shard count: 4 × cores, rounded up to a power of two)
/// with hashbrown's default hasher (foldhash, as the [`HashbrownAcker`] peer; dashmap's own default
/// would be the slower SipHash). Each message takes one shard's write lock through
/// `DashMap::entry`; the live count is an atomic so that [`TableError::Full`] is exact; a tick that
/// rotates `retain`s the young entries, shard by shard.
#[derive(Debug)]
pub struct DashMapAcker {
    map: DashMap<RootId, StampedEntry, hashbrown::DefaultHashBuilder>,
    live: AtomicUsize,
    capacity_roots: usize,
    timeout_ns: u64,
    clock_epoch: Mutex<u64>,
    epoch: AtomicU32,
}

impl SharedAckerStructure for DashMapAcker {
    const NAME: &'static str = "dashmap";

    fn with_capacity(capacity_roots: usize, message_timeout_ns: u64) -> Self {
        assert!(capacity_roots > 0 && message_timeout_ns > 0);
        DashMapAcker {
            map: DashMap::with_hasher(hashbrown::DefaultHashBuilder::default()),
            live: AtomicUsize::new(0),
            capacity_roots,
            timeout_ns: message_timeout_ns,
            clock_epoch: Mutex::new(0),
            epoch: AtomicU32::new(0),
        }
    }

    #[inline]
    fn apply(&self, message: AckerMessage) -> Result<Decision, TableError> {
        let root = message.root();
        if root == 0 {
            return Err(TableError::ZeroRoot);
        }
        let epoch = self.epoch.load(Ordering::Relaxed);
        match self.map.entry(root) {
            dashmap::mapref::entry::Entry::Occupied(mut o) => {
                let s = o.get_mut();
                if matches!(message, AckerMessage::Init { .. }) && s.entry.spout_task.is_some() {
                    return Err(TableError::DuplicateInit);
                }
                update_entry(&mut s.entry, &message);
                if restamps(&message) {
                    s.stamp = epoch;
                }
                let (d, remove) = decide_entry(&s.entry, &message);
                if remove {
                    o.remove();
                    self.live.fetch_sub(1, Ordering::Relaxed);
                }
                Ok(d)
            }
            dashmap::mapref::entry::Entry::Vacant(v) => {
                let cap = self.capacity_roots;
                if self
                    .live
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |l| {
                        (l < cap).then_some(l + 1)
                    })
                    .is_err()
                {
                    return Err(TableError::Full);
                }
                let mut e = PeerEntry::default();
                update_entry(&mut e, &message);
                let (d, remove) = decide_entry(&e, &message);
                if remove {
                    self.live.fetch_sub(1, Ordering::Relaxed);
                } else {
                    v.insert(StampedEntry {
                        entry: e,
                        stamp: epoch,
                    });
                }
                Ok(d)
            }
        }
    }

    fn tick(&self, now_ns: u64) {
        let mut clock_epoch = self.clock_epoch.lock().unwrap_or_else(|p| p.into_inner());
        let steps = rotations(&mut clock_epoch, now_ns, self.timeout_ns);
        if steps > 0 {
            let epoch = self
                .epoch
                .fetch_add(steps, Ordering::Relaxed)
                .wrapping_add(steps);
            let removed = AtomicUsize::new(0);
            self.map.retain(|_, s| {
                let keep = epoch.wrapping_sub(s.stamp) < acker_core::table::EXPIRY_EPOCHS;
                if !keep {
                    removed.fetch_add(1, Ordering::Relaxed);
                }
                keep
            });
            self.live.fetch_sub(removed.into_inner(), Ordering::Relaxed);
        }
    }

    fn len(&self) -> usize {
        self.live.load(Ordering::Relaxed)
    }

    fn memory_bytes(&self) -> usize {
        let shards = self.map.shards();
        let tables: usize = shards
            .iter()
            .map(|s| {
                raw_table_bytes_for_buckets::<(RootId, dashmap::SharedValue<StampedEntry>)>(
                    s.read().buckets(),
                )
            })
            .sum();
        tables + std::mem::size_of_val(shards) + std::mem::size_of::<Self>()
    }

    fn slots(&self) -> usize {
        self.map.shards().iter().map(|s| s.read().buckets()).sum()
    }
}
