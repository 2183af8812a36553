//! The structure Storm's acker uses: a `RotatingMap` of three `HashMap` buckets.

use std::collections::HashMap;
use std::collections::VecDeque;

use acker_core::{AckerMessage, Decision, RootId, TableError};

use super::{decide_entry, restamps, rotations, update_entry, AckerStructure, PeerEntry};

/// Storm's acker table, as `org.apache.storm.utils.RotatingMap` builds it: three
/// `std::collections::HashMap` buckets (default SipHash hasher, grown on demand), newest first.
///
/// - `get` scans the buckets newest to oldest;
/// - `put` inserts into the newest bucket and removes the key from every other bucket;
/// - `remove` scans the buckets and removes from the first that holds the key;
/// - `rotate` drops the oldest bucket and adds a new empty one at the front.
///
/// The acker logic on top is Storm 2.x's `Acker.execute`: an unknown root gets a new entry that is
/// `put`; a fail or reset-timeout `put`s the entry (restarting its expiry); init and ack update the
/// entry in place; a decided entry is `remove`d. A tick that crosses a multiple of the message
/// timeout rotates once per crossing (at most 3), so an entry expires between 2T and 3T after its
/// last `put`. Unlike Storm it also enforces `capacity_roots` ([`TableError::Full`]) and rejects
/// a second init ([`TableError::DuplicateInit`]), as acker-core does, so that both can be compared
/// message by message.
#[derive(Debug)]
pub struct StormStyle {
    buckets: VecDeque<HashMap<RootId, PeerEntry>>,
    capacity_roots: usize,
    timeout_ns: u64,
    clock_epoch: u64,
}

/// Storm's `RotatingMap` default (and the acker's) number of buckets.
pub const STORM_BUCKETS: usize = 3;

impl StormStyle {
    fn get_mut(&mut self, root: RootId) -> Option<&mut PeerEntry> {
        self.buckets.iter_mut().find_map(|b| b.get_mut(&root))
    }

    fn put(&mut self, root: RootId, entry: PeerEntry) {
        let mut it = self.buckets.iter_mut();
        if let Some(newest) = it.next() {
            newest.insert(root, entry);
        }
        for b in it {
            b.remove(&root);
        }
    }

    fn remove(&mut self, root: RootId) {
        for b in self.buckets.iter_mut() {
            if b.remove(&root).is_some() {
                return;
            }
        }
    }

    fn rotate(&mut self) {
        self.buckets.pop_back();
        self.buckets.push_front(HashMap::new());
    }
}

impl AckerStructure for StormStyle {
    const NAME: &'static str = "storm-style";

    fn with_capacity(capacity_roots: usize, message_timeout_ns: u64) -> Self {
        assert!(capacity_roots > 0 && message_timeout_ns > 0);
        StormStyle {
            buckets: (0..STORM_BUCKETS).map(|_| HashMap::new()).collect(),
            capacity_roots,
            timeout_ns: message_timeout_ns,
            clock_epoch: 0,
        }
    }

    fn apply(&mut self, message: AckerMessage) -> Result<Decision, TableError> {
        let root = message.root();
        if root == 0 {
            return Err(TableError::ZeroRoot);
        }
        let entry = match self.get_mut(root) {
            Some(e) => {
                if matches!(message, AckerMessage::Init { .. }) && e.spout_task.is_some() {
                    return Err(TableError::DuplicateInit);
                }
                update_entry(e, &message);
                let e = *e;
                if restamps(&message) {
                    self.put(root, e);
                }
                e
            }
            None => {
                if self.len() >= self.capacity_roots {
                    return Err(TableError::Full);
                }
                let mut e = PeerEntry::default();
                update_entry(&mut e, &message);
                self.put(root, e);
                e
            }
        };
        let (decision, remove) = decide_entry(&entry, &message);
        if remove {
            self.remove(root);
        }
        Ok(decision)
    }

    fn tick(&mut self, now_ns: u64) {
        for _ in 0..rotations(&mut self.clock_epoch, now_ns, self.timeout_ns) {
            self.rotate();
        }
    }

    fn len(&self) -> usize {
        self.buckets.iter().map(|b| b.len()).sum()
    }

    fn memory_bytes(&self) -> usize {
        let buckets: usize = self
            .buckets
            .iter()
            .map(|b| super::hashbrown_map::raw_table_bytes::<(RootId, PeerEntry)>(b.capacity()))
            .sum();
        buckets
            + self.buckets.capacity() * std::mem::size_of::<HashMap<RootId, PeerEntry>>()
            + std::mem::size_of::<Self>()
    }

    fn slots(&self) -> usize {
        self.buckets
            .iter()
            .map(|b| super::hashbrown_map::buckets_for_capacity(b.capacity()))
            .sum()
    }
}
