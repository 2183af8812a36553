//! The strongest simple competitor: what a user writes in ten minutes when asked to track tuple
//! trees, a presized `hashbrown::HashMap<RootId, (ack val, spout task)>` and nothing else.

use acker_core::{AckerMessage, Decision, RootId, TableError, TaskId};
use hashbrown::hash_map::Entry;
use hashbrown::HashMap;

use super::hashbrown_map::raw_table_bytes_for_buckets;
use super::AckerStructure;

/// A `hashbrown::HashMap<RootId, (u64, TaskId)>` (default hasher, foldhash) presized for
/// `capacity_roots` roots, holding only the running XOR and the spout task of each root.
///
/// It keeps none of Storm's rules beyond what gives the same decisions as acker-core on the
/// `acker-bench compare` workloads (an init before every ack of its tree, fewer live roots than
/// the capacity, no root 0, no fail or reset-timeout, no tick):
///
/// - `Init`/`Ack` XOR into the entry (created on first sight, the init setting the spout task);
///   ack val 0 → `Completed` with the recorded task and the entry removed, else `Pending`;
/// - `Fail` removes the entry and returns `Failed`, `ResetTimeout` returns `Reset`, for a known
///   root (`Pending` for an unknown one);
/// - never an error: no `Full` (it grows instead), no `ZeroRoot`, no `DuplicateInit`; no expiry
///   ([`tick`](AckerStructure::tick) does nothing), so abandoned trees stay forever.
///
/// An ack that arrives before its tree's init therefore completes with spout task 0 when it
/// zeroes the XOR, and a duplicate init is XORed in: wrong by Storm's rules, which is why this
/// peer is left out of the differential test and is checked only on the compare workloads
/// (see [`crate::compare`]).
#[derive(Debug)]
pub struct HashbrownLean {
    map: HashMap<RootId, (u64, TaskId)>,
}

impl AckerStructure for HashbrownLean {
    const NAME: &'static str = "hashbrown-lean";

    fn with_capacity(capacity_roots: usize, message_timeout_ns: u64) -> Self {
        assert!(capacity_roots > 0 && message_timeout_ns > 0);
        HashbrownLean {
            map: HashMap::with_capacity(capacity_roots),
        }
    }

    #[inline]
    fn apply(&mut self, message: AckerMessage) -> Result<Decision, TableError> {
        let (root, xor, task) = match message {
            AckerMessage::Init {
                root,
                xor,
                spout_task,
            } => (root, xor, Some(spout_task)),
            AckerMessage::Ack { root, xor } => (root, xor, None),
            AckerMessage::Fail { root } => {
                return Ok(self.map.remove(&root).map_or(Decision::Pending, |(_, t)| {
                    Decision::Failed { spout_task: t }
                }))
            }
            AckerMessage::ResetTimeout { root } => {
                return Ok(self.map.get(&root).map_or(Decision::Pending, |&(_, t)| {
                    Decision::Reset { spout_task: t }
                }))
            }
        };
        Ok(match self.map.entry(root) {
            Entry::Occupied(mut o) => {
                let e = o.get_mut();
                e.0 ^= xor;
                if let Some(t) = task {
                    e.1 = t;
                }
                if e.0 == 0 {
                    let (_, spout_task) = o.remove();
                    Decision::Completed { spout_task }
                } else {
                    Decision::Pending
                }
            }
            Entry::Vacant(v) => {
                v.insert((xor, task.unwrap_or(0)));
                Decision::Pending
            }
        })
    }

    fn tick(&mut self, _now_ns: u64) {}

    fn len(&self) -> usize {
        self.map.len()
    }

    fn memory_bytes(&self) -> usize {
        self.map.allocation_size() + std::mem::size_of::<Self>()
    }

    fn slots(&self) -> usize {
        let bytes = self.map.allocation_size();
        let mut b = 0;
        while raw_table_bytes_for_buckets::<(RootId, (u64, TaskId))>(b) < bytes {
            b = if b == 0 { 4 } else { b * 2 };
        }
        b
    }
}
