//! Spout-side pending tracking: root id ↔ message id, max spout pending, timeouts and complete
//! latency.
//!
//! As Storm's `SpoutExecutor` does: a tracked emit (one with a message id) gets a fresh random
//! root id and one edge id per destination copy; the spout sends `Init { root, xor of the edge
//! ids, spout task }` to the root's acker and keeps the root pending. `Completed` from the acker
//! calls the user's `ack(msg_id)`, `Failed` or the spout's own timeout calls `fail(msg_id)`, each
//! exactly once, because the first of them removes the entry; a message for a root no longer
//! pending is ignored and counted. Max spout pending (`topology.max.spout.pending`) bounds how many
//! roots may be pending: a full spout stops calling `next_tuple`.
//!
//! With zero ackers nothing is tracked: a tracked emit is acked at once (at-most-once), as Storm
//! does when `topology.acker.executors` is 0. An emit without a message id is never tracked.

use crate::ids::{EdgeId, IdGenerator, RootId, TaskId};
use crate::message::AckerMessage;
use crate::routing::reduce;

/// One pending tuple.
#[derive(Clone, Debug, PartialEq, Eq)]
struct PendingEntry<M> {
    root: RootId,
    msg_id: M,
    emit_ns: u64,
    /// `now / T` at emit or last reset.
    epoch: u64,
}

/// One slot of a [`SpoutPending`]'s storage (create storage with `PendingSlot::default()`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingSlot<M>(Option<PendingEntry<M>>);

impl<M> Default for PendingSlot<M> {
    fn default() -> Self {
        PendingSlot(None)
    }
}

/// How a [`SpoutPending`] is set up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpoutConfig {
    /// This spout's task id, recorded in every init.
    pub spout_task: TaskId,
    /// Number of acker tasks in the topology; 0 means at-most-once (every emit is acked at once).
    pub num_ackers: usize,
    /// Most roots pending at once (`topology.max.spout.pending`); at least 1 and at most the
    /// number of storage slots.
    pub max_spout_pending: usize,
    /// The message timeout T in ns (`topology.message.timeout.secs`, default 30 s); `None` turns
    /// timeouts off (Storm's `topology.enable.message.timeouts = false`): a lost tuple then stays
    /// pending forever.
    pub message_timeout_ns: Option<u64>,
    /// Seed of the xoshiro stream the root and edge ids come from.
    pub seed: u64,
}

/// Errors of [`SpoutPending`]. Each leaves everything unchanged and hands back the message id,
/// so nothing is lost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PendingError<M> {
    /// Max spout pending roots are pending: emit later (Storm stops calling `next_tuple`).
    MaxSpoutPending {
        /// The message id of the refused emit, handed back.
        msg_id: M,
    },
    /// The configuration is unusable (zero max spout pending, fewer slots than max spout pending,
    /// or a zero timeout).
    Config,
}

impl<M> core::fmt::Display for PendingError<M> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            PendingError::MaxSpoutPending { .. } => f.write_str("max spout pending reached"),
            PendingError::Config => f.write_str(
                "invalid spout pending config: max spout pending must be in 1..=slots and the timeout non-zero",
            ),
        }
    }
}

/// What a spout emit turned into.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpoutEmit<M> {
    /// Tracked: copy `i` carries anchors `(root, copies[i])`; send `init` to the acker
    /// [`crate::acker_index`]`(root, num_ackers)`.
    Tracked {
        /// The fresh root id of the tree.
        root: RootId,
        /// The init message for the root's acker.
        init: AckerMessage,
    },
    /// Zero ackers: call the user's `ack(msg_id)` now; nothing is pending.
    AckedAtOnce {
        /// The message id to ack.
        msg_id: M,
    },
    /// No message id: the copies carry no anchors, nothing is pending, no callback will come.
    Untracked,
}

/// A completed tuple: the user's message id and its complete latency.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completed<M> {
    /// The message id to pass to the user's `ack`.
    pub msg_id: M,
    /// Nanoseconds of the injected clock from the emit to the completion.
    pub complete_latency_ns: u64,
}

/// Slots of at least this many bytes in all make a [`SpoutPending`] read ahead (see
/// [`SpoutPending::reads_ahead`]): 1 MiB, the L2 cache of one core of the benchmark machine, as
/// for the acker table's `apply_batch` ([`crate::table::BATCH_READ_AHEAD_MIN_SLOTS`]).
pub const READ_AHEAD_MIN_BYTES: usize = 1 << 20;

/// The spout side of the mechanism for one spout task (see the [module docs](self)).
///
/// `M` is the user's message id type; `S` the slot storage (`Vec<PendingSlot<M>>`,
/// `[PendingSlot<M>; N]`, ...). Slots are an open-addressed index by root; give at least
/// `max_spout_pending` slots, and about twice as many for short probes.
#[derive(Debug)]
pub struct SpoutPending<M, S> {
    slots: S,
    len: usize,
    config: SpoutConfig,
    clock_epoch: u64,
    ids: IdGenerator,
    /// The root id the next tracked emit tries first (0: none drawn yet). Drawn at the end of
    /// the previous emit, so that its home slot was asked for then (a cache miss out of the
    /// way in a set larger than the caches); the ids drawn, and their order, are the same as
    /// drawing it at the emit.
    next_root: RootId,
    /// Whether the slots take at least [`READ_AHEAD_MIN_BYTES`]: then emits prefetch the next
    /// root's home slot (see [`reads_ahead`](Self::reads_ahead)).
    reads_ahead: bool,
    ignored: u64,
    timed_out: u64,
    _msg: core::marker::PhantomData<M>,
}

impl<M, S: AsRef<[PendingSlot<M>]> + AsMut<[PendingSlot<M>]>> SpoutPending<M, S> {
    /// A pending set over `storage` (every slot is cleared), the injected clock at 0 ns.
    ///
    /// # Errors
    /// [`PendingError::Config`] when `max_spout_pending` is 0 or exceeds the storage length, or
    /// the timeout is `Some(0)`.
    pub fn new(mut storage: S, config: SpoutConfig) -> Result<Self, PendingError<M>> {
        let n = storage.as_ref().len();
        if config.max_spout_pending == 0
            || config.max_spout_pending > n
            || config.message_timeout_ns == Some(0)
        {
            return Err(PendingError::Config);
        }
        for s in storage.as_mut() {
            s.0 = None;
        }
        Ok(Self {
            slots: storage,
            len: 0,
            config,
            clock_epoch: 0,
            ids: IdGenerator::from_seed(config.seed),
            next_root: 0,
            reads_ahead: n.saturating_mul(core::mem::size_of::<PendingSlot<M>>())
                >= READ_AHEAD_MIN_BYTES,
            ignored: 0,
            timed_out: 0,
            _msg: core::marker::PhantomData,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &SpoutConfig {
        &self.config
    }

    /// Roots pending now.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether max spout pending is reached (the spout must not emit tracked tuples).
    pub fn is_full(&self) -> bool {
        self.len >= self.config.max_spout_pending
    }

    /// Messages for roots not pending (late, duplicated or from before a restart), ignored so far.
    pub fn ignored(&self) -> u64 {
        self.ignored
    }

    /// Tuples failed by the spout's own timeout so far.
    pub fn timed_out(&self) -> u64 {
        self.timed_out
    }

    /// Whether `root` is pending.
    pub fn contains(&self, root: RootId) -> bool {
        self.find(root).is_some()
    }

    /// Emits a tuple at `now_ns` to `copies.len()` destination tasks.
    ///
    /// With a message id and at least one acker, a fresh root id (never 0, never one already
    /// pending) is drawn, `copies` is filled with one fresh edge id per copy, the root becomes
    /// pending and [`SpoutEmit::Tracked`] carries the init. With zero ackers it is
    /// [`SpoutEmit::AckedAtOnce`]; without a message id, [`SpoutEmit::Untracked`] (in both cases
    /// `copies` is left untouched and the copies carry no anchors).
    ///
    /// # Errors
    /// [`PendingError::MaxSpoutPending`] (with the message id handed back) when full.
    #[inline]
    pub fn emit(
        &mut self,
        msg_id: Option<M>,
        copies: &mut [EdgeId],
        now_ns: u64,
    ) -> Result<SpoutEmit<M>, PendingError<M>> {
        let Some(msg_id) = msg_id else {
            return Ok(SpoutEmit::Untracked);
        };
        if self.config.num_ackers == 0 {
            return Ok(SpoutEmit::AckedAtOnce { msg_id });
        }
        if self.is_full() {
            return Err(PendingError::MaxSpoutPending { msg_id });
        }
        // One probe per drawn id: where it ends on a free slot, the new entry goes there.
        let (root, free) = loop {
            let r = match core::mem::take(&mut self.next_root) {
                0 => self.ids.next_id(),
                drawn => drawn,
            };
            match self.probe(r) {
                Probe::Free(i) => break (r, i),
                Probe::Found(_) => continue,
                // `len < max_spout_pending <= slots` (checked above): some slot is free.
                Probe::Exhausted => unreachable_pending(),
            }
        };
        let mut xor = 0;
        for c in copies.iter_mut() {
            *c = self.ids.next_id();
            planted!(InitOrOverCopies => xor |= *c; continue);
            xor ^= *c;
        }
        let entry = PendingEntry {
            root,
            msg_id,
            emit_ns: now_ns,
            epoch: self.epoch_of(now_ns),
        };
        self.slots.as_mut()[free].0 = Some(entry);
        self.len += 1;
        // The next emit's root, drawn now (the next id of the same sequence) and its home slot
        // asked for: by the next emit it has arrived.
        let next = self.ids.next_id();
        self.next_root = next;
        if self.reads_ahead {
            self.warm(self.home(next));
        }
        Ok(SpoutEmit::Tracked {
            root,
            init: AckerMessage::Init {
                root,
                xor,
                spout_task: self.config.spout_task,
            },
        })
    }

    /// The root id the next tracked emit tries first: drawn at the end of the last tracked emit
    /// (`None` before the first). For an engine that keeps its own per-root state (an oracle's
    /// set of every root, say) and wants to bring it into the cache before the emit. The next
    /// emit uses it unless that root is pending already (then it draws again, as always).
    #[inline]
    pub fn upcoming_root(&self) -> Option<RootId> {
        (self.next_root != 0).then_some(self.next_root)
    }

    /// Whether the slots take at least [`READ_AHEAD_MIN_BYTES`] (more than a core's L2 cache):
    /// then each emit asks for the next emit's home slot ahead of time, and a caller handling a
    /// batch of notices gains from [`prefetch`](Self::prefetch); below, everything stays in the
    /// cache and prefetching only costs instructions.
    #[inline]
    pub fn reads_ahead(&self) -> bool {
        self.reads_ahead
    }

    /// Asks the CPU to bring `root`'s home slot (where [`completed`](Self::completed),
    /// [`failed`](Self::failed) and [`reset`](Self::reset) start looking) into its cache: for a
    /// spout that handles a batch of notices and wants their cache misses, in a set larger than
    /// the caches, to overlap; call it a few notices ahead. A hint only: nothing changes, and
    /// off x86_64 it does nothing.
    #[inline]
    pub fn prefetch(&self, root: RootId) {
        self.warm(self.home(root));
    }

    /// The acker's `Completed { root }` at `now_ns`: the message id to `ack` and the complete
    /// latency, or `None` (counted in [`ignored`](Self::ignored)) when the root is not pending.
    #[inline]
    pub fn completed(&mut self, root: RootId, now_ns: u64) -> Option<Completed<M>> {
        match self.find(root) {
            Some(i) => {
                let e = self.remove_at(i);
                Some(Completed {
                    msg_id: e.msg_id,
                    complete_latency_ns: now_ns.saturating_sub(e.emit_ns),
                })
            }
            None => {
                self.ignored += 1;
                None
            }
        }
    }

    /// The acker's `Failed { root }`: the message id to `fail`, or `None` (counted in
    /// [`ignored`](Self::ignored)) when the root is not pending.
    pub fn failed(&mut self, root: RootId) -> Option<M> {
        match self.find(root) {
            Some(i) => Some(self.remove_at(i).msg_id),
            None => {
                self.ignored += 1;
                None
            }
        }
    }

    /// The acker's `Reset { root }` at `now_ns`: the root's timeout restarts. Returns whether the
    /// root was pending (an unknown root is ignored and counted).
    pub fn reset(&mut self, root: RootId, now_ns: u64) -> bool {
        let epoch = self.epoch_of(now_ns);
        match self.find(root) {
            Some(i) => {
                if let Some(e) = self.slots.as_mut()[i].0.as_mut() {
                    e.epoch = epoch;
                }
                true
            }
            None => {
                self.ignored += 1;
                false
            }
        }
    }

    /// Advances the clock to `now_ns` and returns the tuples that timed out: those whose emit or
    /// last reset lies in a timeout period at least two periods back, i.e. between T and 2T ago.
    /// Each message id comes out once (its entry is removed); call `fail` with it. Entries the
    /// iterator does not reach (if it is dropped early) time out at a later tick.
    pub fn tick(&mut self, now_ns: u64) -> TimedOut<'_, M, S> {
        let epoch = self.epoch_of(now_ns);
        if epoch > self.clock_epoch {
            self.clock_epoch = epoch;
        }
        let active = self.config.message_timeout_ns.is_some() && self.len > 0;
        TimedOut {
            pending: self,
            cursor: 0,
            active,
        }
    }

    // ---- internals ----------------------------------------------------------------------------

    fn epoch_of(&self, now_ns: u64) -> u64 {
        match self.config.message_timeout_ns {
            Some(t) => now_ns / t,
            None => 0,
        }
    }

    /// Asks for slot `i`'s cache line (see [`crate::table`]'s `prefetch`); a no-op off x86_64.
    #[inline(always)]
    fn warm(&self, i: usize) {
        #[cfg(all(target_arch = "x86_64", not(loom)))]
        crate::table::prefetch(self.slots.as_ref(), i, 1);
        #[cfg(not(all(target_arch = "x86_64", not(loom))))]
        let _ = i;
    }

    fn cap(&self) -> usize {
        self.slots.as_ref().len()
    }

    fn home(&self, root: RootId) -> usize {
        reduce(root ^ 0x5851_F42D_4C95_7F2D, self.cap())
    }

    fn next(&self, i: usize) -> usize {
        if i + 1 == self.cap() {
            0
        } else {
            i + 1
        }
    }

    fn find(&self, root: RootId) -> Option<usize> {
        match self.probe(root) {
            Probe::Found(i) => Some(i),
            Probe::Free(_) | Probe::Exhausted => None,
        }
    }

    /// Linear probing from `root`'s home slot: its slot, or the free slot that ends the probe.
    #[inline]
    fn probe(&self, root: RootId) -> Probe {
        let slots = self.slots.as_ref();
        let mut i = self.home(root);
        for _ in 0..slots.len() {
            match &slots[i].0 {
                None => return Probe::Free(i),
                Some(e) if e.root == root => return Probe::Found(i),
                Some(_) => i = self.next(i),
            }
        }
        Probe::Exhausted
    }

    #[inline(always)]
    fn remove_at(&mut self, i: usize) -> PendingEntry<M> {
        let Some(removed) = self.slots.as_mut()[i].0.take() else {
            unreachable_pending()
        };
        self.len -= 1;
        // Backward-shift deletion for linear probing.
        let mut hole = i;
        let mut j = self.next(i);
        loop {
            planted!(PendingWrapLosesEntry => if j < hole { break });
            let home = match &self.slots.as_ref()[j].0 {
                None => break,
                Some(e) => self.home(e.root),
            };
            // Move j into the hole unless its home lies cyclically in (hole, j].
            let in_range = if hole <= j {
                hole < home && home <= j
            } else {
                hole < home || home <= j
            };
            if !in_range {
                let moved = self.slots.as_mut()[j].0.take();
                self.slots.as_mut()[hole].0 = moved;
                hole = j;
            }
            j = self.next(j);
        }
        removed
    }
}

/// Where [`SpoutPending`]'s linear probe for a root ended.
enum Probe {
    /// The root is in this slot.
    Found(usize),
    /// The root is absent; this free slot ended the probe (where it would be inserted).
    Free(usize),
    /// Every slot was visited and none is free (max spout pending equal to the slot count).
    Exhausted,
}

#[cold]
fn unreachable_pending() -> ! {
    // `remove_at` is only called on an index `find` returned, and `emit` only probes with a free
    // slot somewhere (fewer entries than max spout pending, at most the slot count).
    panic!("spout pending invariant broken: removing an empty slot or no free slot below max spout pending")
}

/// The tuples timed out by one [`SpoutPending::tick`], as an iterator of message ids.
#[derive(Debug)]
pub struct TimedOut<'a, M, S: AsRef<[PendingSlot<M>]> + AsMut<[PendingSlot<M>]>> {
    pending: &'a mut SpoutPending<M, S>,
    cursor: usize,
    active: bool,
}

impl<M, S: AsRef<[PendingSlot<M>]> + AsMut<[PendingSlot<M>]>> Iterator for TimedOut<'_, M, S> {
    type Item = M;

    fn next(&mut self) -> Option<M> {
        if !self.active {
            return None;
        }
        let p = &mut *self.pending;
        while self.cursor < p.cap() {
            let expired = match &p.slots.as_ref()[self.cursor].0 {
                Some(e) => p.clock_epoch >= e.epoch + 2,
                None => false,
            };
            if expired {
                // The backward shift may move an unvisited entry into `cursor`: stay on it.
                let e = p.remove_at(self.cursor);
                p.timed_out += 1;
                return Some(e.msg_id);
            }
            self.cursor += 1;
        }
        self.active = false;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Slots = [PendingSlot<u32>; 128];

    /// Max spout pending equal to the slot count: the last free slot is found wherever it lies
    /// (the probe may have to run around the whole table), and a full set refuses with the message
    /// id handed back. 64 seeds × 3 fillings, so that the last free slot is, for some filling,
    /// the one just before the new root's home.
    #[test]
    fn max_spout_pending_equal_to_the_slots_fills_every_slot() {
        for seed in 0..64 {
            let mut p = SpoutPending::new(
                core::array::from_fn::<_, 8, _>(|_| PendingSlot::default()),
                SpoutConfig {
                    spout_task: 1,
                    num_ackers: 1,
                    max_spout_pending: 8,
                    message_timeout_ns: None,
                    seed,
                },
            )
            .unwrap();
            for filling in 0..3 {
                let mut roots = [0; 8];
                for (m, r) in roots.iter_mut().enumerate() {
                    match p.emit(Some(m as u32), &mut [0], 0) {
                        Ok(SpoutEmit::Tracked { root, .. }) => *r = root,
                        other => panic!("seed {seed} filling {filling} emit {m}: {other:?}"),
                    }
                }
                assert_eq!(p.len(), 8);
                assert_eq!(
                    p.emit(Some(99), &mut [0], 0),
                    Err(PendingError::MaxSpoutPending { msg_id: 99 })
                );
                for (m, &r) in roots.iter().enumerate().rev() {
                    assert_eq!(p.failed(r), Some(m as u32), "seed {seed} filling {filling}");
                }
                assert!(p.is_empty());
                assert!(!p.contains(roots[0]));
            }
        }
    }

    fn pending(max: usize, acks: usize) -> SpoutPending<u32, Slots> {
        SpoutPending::new(
            core::array::from_fn(|_| PendingSlot::default()),
            SpoutConfig {
                spout_task: 5,
                num_ackers: acks,
                max_spout_pending: max,
                message_timeout_ns: Some(1000),
                seed: 9,
            },
        )
        .unwrap()
    }

    fn collect(it: impl Iterator<Item = u32>) -> heapless::Vec<u32, 64> {
        let mut v = heapless::Vec::new();
        for x in it {
            v.push(x).unwrap();
        }
        v
    }

    #[test]
    fn max_pending_hands_back_the_msg_id() {
        let mut p = pending(2, 1);
        p.emit(Some(1), &mut [0], 0).unwrap();
        p.emit(Some(2), &mut [0], 0).unwrap();
        assert_eq!(
            p.emit(Some(3), &mut [0], 0),
            Err(PendingError::MaxSpoutPending { msg_id: 3 })
        );
        assert_eq!(p.len(), 2);
    }

    #[test]
    fn config_errors() {
        let cfg = SpoutConfig {
            spout_task: 0,
            num_ackers: 1,
            max_spout_pending: 129,
            message_timeout_ns: Some(1),
            seed: 0,
        };
        let slots = || -> Slots { core::array::from_fn(|_| PendingSlot::default()) };
        assert!(matches!(
            SpoutPending::new(slots(), cfg),
            Err(PendingError::Config)
        ));
        let zero = SpoutConfig {
            max_spout_pending: 0,
            ..cfg
        };
        assert!(matches!(
            SpoutPending::new(slots(), zero),
            Err(PendingError::Config)
        ));
        let no_timeout = SpoutConfig {
            max_spout_pending: 4,
            message_timeout_ns: Some(0),
            ..cfg
        };
        assert!(matches!(
            SpoutPending::new(slots(), no_timeout),
            Err(PendingError::Config)
        ));
    }

    #[test]
    fn timeout_between_t_and_2t() {
        let mut p = pending(8, 1);
        p.emit(Some(1), &mut [0], 500).unwrap();
        assert_eq!(p.tick(1999).count(), 0);
        let SpoutEmit::Tracked { root, .. } = p.emit(Some(2), &mut [0], 1999).unwrap() else {
            panic!("tracked emit expected")
        };
        assert_eq!(collect(p.tick(2000)).as_slice(), &[1]);
        assert!(p.reset(root, 2500));
        assert_eq!(p.tick(3999).count(), 0);
        assert_eq!(collect(p.tick(4000)).as_slice(), &[2]);
        assert_eq!(p.timed_out(), 2);
        assert!(p.is_empty());
    }

    #[test]
    fn timeouts_off_never_time_out() {
        let mut p: SpoutPending<u32, Slots> = SpoutPending::new(
            core::array::from_fn(|_| PendingSlot::default()),
            SpoutConfig {
                spout_task: 5,
                num_ackers: 1,
                max_spout_pending: 4,
                message_timeout_ns: None,
                seed: 9,
            },
        )
        .unwrap();
        p.emit(Some(1), &mut [0], 0).unwrap();
        assert_eq!(p.tick(u64::MAX).count(), 0);
        assert_eq!(p.len(), 1);
    }

    #[test]
    fn many_removals_keep_every_root_findable() {
        let mut p = pending(64, 1);
        let mut roots: heapless::Vec<(RootId, u32), 64> = heapless::Vec::new();
        for m in 0..64u32 {
            if let SpoutEmit::Tracked { root, .. } = p.emit(Some(m), &mut [], 0).unwrap() {
                roots.push((root, m)).unwrap();
            }
        }
        for (k, &(root, m)) in roots.iter().enumerate() {
            if k % 2 == 0 {
                assert_eq!(p.failed(root), Some(m));
            }
        }
        for (k, &(root, m)) in roots.iter().enumerate() {
            if k % 2 == 1 {
                assert_eq!(p.completed(root, 10).map(|c| c.msg_id), Some(m));
            }
        }
        assert!(p.is_empty());
        assert_eq!(p.ignored(), 0);
        assert_eq!(p.failed(roots[0].0), None);
        assert_eq!(p.ignored(), 1);
    }
}
