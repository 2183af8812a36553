//! The first thing a Rust engine would write: one `hashbrown::HashMap` with a stamp per entry.

use acker_core::{AckerMessage, Decision, RootId, TableError};
use hashbrown::HashMap;

use super::{decide_entry, restamps, rotations, update_entry, AckerStructure, PeerEntry};

/// Width of hashbrown's SSE2 control group, in bytes.
const GROUP_WIDTH: usize = 16;

/// Buckets of a hashbrown (or `std`) table whose `capacity()` is `capacity`: the smallest power of
/// two whose usable capacity (7/8 of the buckets, or buckets − 1 below 8) covers it; 0 for an
/// unallocated table.
pub fn buckets_for_capacity(capacity: usize) -> usize {
    if capacity == 0 {
        return 0;
    }
    let mut b: usize = 4;
    loop {
        let usable = if b < 8 { b - 1 } else { b / 8 * 7 };
        if usable >= capacity {
            return b;
        }
        b *= 2;
    }
}

/// Bytes a hashbrown (or `std`) raw table of entry type `T` allocates for `capacity()` =
/// `capacity`: the buckets, padded to the control bytes' 16-byte alignment, one control byte a
/// bucket and one trailing group (hashbrown's `TableLayout::calculate_layout_for`). Exact for a
/// table without tombstones; once deletions leave tombstones, `capacity()` shrinks while the
/// allocation does not, and this undercounts (the compare tool measures with a counting
/// allocator instead).
pub fn raw_table_bytes<T>(capacity: usize) -> usize {
    raw_table_bytes_for_buckets::<T>(buckets_for_capacity(capacity))
}

/// Bytes a hashbrown raw table of entry type `T` with `buckets` buckets allocates (0 buckets:
/// nothing allocated).
pub fn raw_table_bytes_for_buckets<T>(buckets: usize) -> usize {
    // Fewer than 4 buckets: hashbrown's unallocated empty singleton (it reports 1 bucket).
    if buckets < 4 {
        return 0;
    }
    let ctrl_align = std::mem::align_of::<T>().max(GROUP_WIDTH);
    let ctrl_offset = (std::mem::size_of::<T>() * buckets).div_ceil(ctrl_align) * ctrl_align;
    ctrl_offset + buckets + GROUP_WIDTH
}

/// What the map holds for each root: the entry and the epoch of its last (re)insertion.
#[derive(Clone, Copy, Debug)]
pub struct StampedEntry {
    /// The entry.
    pub entry: PeerEntry,
    /// The table's epoch when the entry was last (re)inserted.
    pub stamp: u32,
}

/// One `hashbrown::HashMap<RootId, StampedEntry>` with hashbrown's default hasher (foldhash),
/// grown on demand. Each entry carries the epoch of its last (re)insertion; a tick that crosses a
/// multiple of the message timeout advances the epoch (at most 3 per tick) and `retain`s the
/// entries younger than 3 epochs, so an entry expires between 2T and 3T after it was last
/// (re)inserted, as in acker-core and Storm. Capacity and errors as acker-core.
#[derive(Debug)]
pub struct HashbrownAcker {
    map: HashMap<RootId, StampedEntry>,
    capacity_roots: usize,
    timeout_ns: u64,
    clock_epoch: u64,
    epoch: u32,
}

impl AckerStructure for HashbrownAcker {
    const NAME: &'static str = "hashbrown";

    fn with_capacity(capacity_roots: usize, message_timeout_ns: u64) -> Self {
        assert!(capacity_roots > 0 && message_timeout_ns > 0);
        HashbrownAcker {
            map: HashMap::new(),
            capacity_roots,
            timeout_ns: message_timeout_ns,
            clock_epoch: 0,
            epoch: 0,
        }
    }

    #[inline]
    fn apply(&mut self, message: AckerMessage) -> Result<Decision, TableError> {
        let root = message.root();
        if root == 0 {
            return Err(TableError::ZeroRoot);
        }
        let len = self.map.len();
        let epoch = self.epoch;
        let decision = match self.map.entry(root) {
            hashbrown::hash_map::Entry::Occupied(mut o) => {
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
                }
                d
            }
            hashbrown::hash_map::Entry::Vacant(v) => {
                if len >= self.capacity_roots {
                    return Err(TableError::Full);
                }
                let mut e = PeerEntry::default();
                update_entry(&mut e, &message);
                let (d, remove) = decide_entry(&e, &message);
                if !remove {
                    v.insert(StampedEntry {
                        entry: e,
                        stamp: epoch,
                    });
                }
                d
            }
        };
        Ok(decision)
    }

    fn tick(&mut self, now_ns: u64) {
        let steps = rotations(&mut self.clock_epoch, now_ns, self.timeout_ns);
        if steps > 0 {
            self.epoch = self.epoch.wrapping_add(steps);
            let epoch = self.epoch;
            self.map
                .retain(|_, s| epoch.wrapping_sub(s.stamp) < acker_core::table::EXPIRY_EPOCHS);
        }
    }

    fn len(&self) -> usize {
        self.map.len()
    }

    fn memory_bytes(&self) -> usize {
        // `allocation_size` is exact; `capacity()` undercounts once tombstones eat growth room.
        self.map.allocation_size() + std::mem::size_of::<Self>()
    }

    fn slots(&self) -> usize {
        // Invert `raw_table_bytes_for_buckets` (buckets are a power of two).
        let bytes = self.map.allocation_size();
        let mut b = 0;
        while raw_table_bytes_for_buckets::<(RootId, StampedEntry)>(b) < bytes {
            b = if b == 0 { 4 } else { b * 2 };
        }
        b
    }
}
