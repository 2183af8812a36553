//! Bolt-side anchoring: the anchors a tuple carries, and the tracker that turns a bolt's emits,
//! acks and fails into acker messages.
//!
//! As in Storm's `BoltOutputCollectorImpl`: every tuple carries a small map from root id to the
//! XOR of its edge ids for that root ([`Anchors`], Storm's `MessageId.anchorsToIds`). When a bolt
//! emits a copy anchored to some inputs, each anchoring input that belongs to at least one tree
//! draws one fresh edge id `e`; the copy records `e` under every root of that input, and the input
//! accumulates `e` into its own XOR. Acking the input then sends, per root, `Ack { root, xor:
//! input's edge XOR for root ^ accumulated XOR }`, so every edge id reaches the acker twice: once
//! from the emitter's ack and once from the ack of the copy it created. Failing sends one `Fail`
//! per root.
//!
//! The bounded parts are explicit: a tuple belongs to at most `R` trees (a const generic; more is
//! [`AnchorError::TooManyRoots`], never a silent drop), and a tracker holds at most as many open
//! inputs as it has slots ([`AnchorError::TrackerFull`]).
//!
//! Two ways to keep an open input's state:
//!
//! - [`InputAnchors`]: in the input itself, as Storm keeps a tuple's ack value in the tuple. No
//!   per-bolt table, so an input the bolt holds for ever or drops unacked blocks nothing else
//!   (its trees time out at the spout). For an engine whose inputs are values the bolt owns and
//!   gives back to ack them (the runtime's `Input`).
//! - [`InputTracker`]: in a bounded table of slots named by copyable [`InputHandle`]s, which
//!   report misuse (acking twice, anchoring to a closed input). A slot is only freed by an ack or
//!   a fail: an engine built on it must itself reclaim the slots of inputs its bolts lose.

use core::cell::Cell;

use crate::ids::{EdgeId, IdGenerator, RootId};
use crate::message::AckerMessage;

/// The anchors a tuple carries: up to `R` pairs (root id, XOR of this tuple's edge ids for that
/// root), with distinct roots. An empty set means the tuple is not tracked (an untracked spout
/// emit, or an unanchored bolt emit).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Anchors<const R: usize> {
    pairs: heapless::Vec<(RootId, EdgeId), R>,
}

impl<const R: usize> Anchors<R> {
    /// No anchors: an untracked tuple.
    pub const fn new() -> Self {
        Self {
            pairs: heapless::Vec::new(),
        }
    }

    /// The anchors of a copy of a tracked spout tuple: one root, one edge id.
    ///
    /// With `R == 0` the set stays empty (such a tracker tracks nothing).
    pub fn spout(root: RootId, edge: EdgeId) -> Self {
        let mut a = Self::new();
        let _ = a.pairs.push((root, edge));
        a
    }

    /// The (root, edge XOR) pairs, in the order the roots were first added.
    pub fn pairs(&self) -> &[(RootId, EdgeId)] {
        &self.pairs
    }

    /// The roots this tuple belongs to.
    pub fn roots(&self) -> impl Iterator<Item = RootId> + '_ {
        self.pairs.iter().map(|&(r, _)| r)
    }

    /// How many trees the tuple belongs to.
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// Whether the tuple is untracked.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// XORs `edge` into `root`'s entry, adding the root if new.
    fn put_xor(&mut self, root: RootId, edge: EdgeId) -> Result<(), AnchorError> {
        if let Some(p) = self.pairs.iter_mut().find(|p| p.0 == root) {
            p.1 ^= edge;
            Ok(())
        } else {
            self.pairs
                .push((root, edge))
                .map_err(|_| AnchorError::TooManyRoots)
        }
    }
}

/// One received input's anchoring state, kept in the input itself (Storm's approach: a tuple
/// carries its anchors and the XOR of the edge ids emitted anchored to it).
///
/// There is no table: whoever owns the input owns this state, so holding an input or dropping it
/// unacked costs nothing but the input's own memory, and blocks no other input. The accumulated
/// XOR sits in a [`Cell`], so an emit anchors through shared references (`&InputAnchors`), as the
/// runtime's `OutputCollector::emit(&[&input], ..)` does.
///
/// # Rules the caller keeps
/// Nothing here records that an input was acked or failed (`ack` and `fail` take `&self` and
/// only compute messages), so, as with Storm's `OutputCollector`, the owner of the input keeps
/// two rules:
/// - **Ack or fail an input once.** A second [`ack`](Self::ack) sends the same XOR again, which
///   the acker cannot tell from a new contribution: the tree's ack val no longer reaches 0,
///   or, after the tree completed, it makes an orphan entry that holds a slot until it expires.
/// - **Emit anchored to an input only before acking it.** An [`emit`](Self::emit) after the ack
///   draws an edge id the acker never hears about: the child's processing is not tracked, and
///   the tree may already have completed.
///
/// [`InputTracker`] keeps both rules for you (it returns [`AnchorError::AlreadyAcked`],
/// [`AnchorError::AlreadyFailed`] or [`AnchorError::InputClosed`]), as does the runtime's
/// `Input`, which `OutputCollector::ack` and `fail` consume.
///
/// ```
/// use acker_core::{AckerMessage, Anchors, IdGenerator, InputAnchors};
/// let mut ids = IdGenerator::from_seed(7);
/// let input: InputAnchors<4> = InputAnchors::new(Anchors::spout(11, 0xE0));
/// let child = InputAnchors::emit([&input], &mut ids).unwrap(); // one anchored copy
/// let (root, e) = child.pairs()[0];
/// assert_eq!(root, 11);
/// assert_eq!(input.ack()[0], AckerMessage::Ack { root: 11, xor: 0xE0 ^ e });
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InputAnchors<const R: usize> {
    anchors: Anchors<R>,
    ack_val: Cell<u64>,
}

impl<const R: usize> InputAnchors<R> {
    /// The state of an input that arrived carrying `anchors` (nothing emitted anchored to it yet).
    pub const fn new(anchors: Anchors<R>) -> Self {
        Self {
            anchors,
            ack_val: Cell::new(0),
        }
    }

    /// The anchors the input arrived with.
    pub fn anchors(&self) -> &Anchors<R> {
        &self.anchors
    }

    /// The anchors for one copy of a tuple emitted anchored to `inputs` (one input, several for
    /// multi-anchoring, the same one more than once, or none for an unanchored emit); each input
    /// that belongs to a tree draws one edge id from `ids` and accumulates it. Call it once per
    /// destination task: every copy gets its own edge ids.
    ///
    /// # Errors
    /// [`AnchorError::TooManyRoots`] if the copy would belong to more than `R` trees. Nothing
    /// changes on error (no edge id is drawn or accumulated).
    #[inline(always)]
    pub fn emit<'a, I>(inputs: I, ids: &mut IdGenerator) -> Result<Anchors<R>, AnchorError>
    where
        I: IntoIterator<Item = &'a InputAnchors<R>>,
        I::IntoIter: Clone,
    {
        let inputs = inputs.into_iter();
        let mut first_two = inputs.clone();
        if let (Some(only), None) = (first_two.next(), first_two.next()) {
            // One input (nearly every emit): its roots are distinct and at most `R` already, so
            // nothing can fail and the copy's anchors are the input's roots, each with the new
            // edge id. The same ids are drawn, in the same order, as by the general path below.
            if only.anchors.is_empty() {
                return Ok(Anchors::new());
            }
            let e = ids.next_id();
            only.ack_val.set(only.ack_val.get() ^ e);
            if let [(root, _)] = only.anchors.pairs[..] {
                // One root (nearly every input): the copy's one pair, built without copying
                // the input's anchors and rewriting them.
                return Ok(Anchors::spout(root, e));
            }
            let mut out = only.anchors.clone();
            for p in out.pairs.iter_mut() {
                p.1 = e;
            }
            return Ok(out);
        }
        // Validate everything before touching any state.
        let mut roots: Anchors<R> = Anchors::new();
        for i in inputs.clone() {
            for r in i.anchors.roots() {
                roots.put_xor(r, 0)?;
            }
        }
        let mut out: Anchors<R> = Anchors::new();
        for i in inputs {
            if i.anchors.is_empty() {
                continue;
            }
            let e = ids.next_id();
            i.ack_val.set(i.ack_val.get() ^ e);
            for r in i.anchors.roots() {
                // Cannot fail: the root set was checked above.
                let _ = out.put_xor(r, e);
            }
        }
        Ok(out)
    }

    /// The messages that ack the input: one `Ack { root, xor }` per root it belongs to, the xor
    /// being the input's edge XOR for that root XOR every edge id emitted anchored to it. Send
    /// them once, after the input's last anchored emit (see [the rules](Self#rules-the-caller-keeps)).
    pub fn ack(&self) -> InputMessages<R> {
        let mut out = InputMessages::new();
        let ack_val = self.ack_val.get();
        for &(root, edge) in self.anchors.pairs() {
            planted!(AckToWrongRoot => let _ = out.push(AckerMessage::Ack { root: self.anchors.pairs()[0].0, xor: edge ^ ack_val }); continue);
            let _ = out.push(AckerMessage::Ack {
                root,
                xor: edge ^ ack_val,
            });
        }
        out
    }

    /// The one message that acks an input belonging to exactly one tree (nearly every input):
    /// the same `Ack { root, xor }` that [`ack`](Self::ack) returns for it, without building a
    /// list. `None` for an input of no tree or of several (use [`ack`](Self::ack)).
    #[inline]
    pub fn ack_one_root(&self) -> Option<AckerMessage> {
        match self.anchors.pairs[..] {
            [(root, edge)] => Some(AckerMessage::Ack {
                root,
                xor: edge ^ self.ack_val.get(),
            }),
            _ => None,
        }
    }

    /// The messages that fail the input: one `Fail { root }` per root it belongs to.
    pub fn fail(&self) -> InputMessages<R> {
        self.anchors
            .roots()
            .map(|root| AckerMessage::Fail { root })
            .collect()
    }

    /// The messages that ask for more time for every tree of the input: one `ResetTimeout` per
    /// root (Storm's `collector.resetTimeout(tuple)`).
    pub fn reset_timeout(&self) -> InputMessages<R> {
        self.anchors
            .roots()
            .map(|root| AckerMessage::ResetTimeout { root })
            .collect()
    }
}

/// Errors of the [`InputTracker`]. Each leaves the tracker exactly as it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnchorError {
    /// The anchored emit would belong to more than `R` trees.
    TooManyRoots,
    /// Every input slot holds an open input: ack or fail some first.
    TrackerFull,
    /// The input was already acked (acking twice, failing after an ack, or anchoring to it).
    AlreadyAcked,
    /// The input was already failed.
    AlreadyFailed,
    /// The input was acked or failed earlier and its slot has since been reused.
    InputClosed,
    /// The handle was not issued by this tracker.
    UnknownInput,
}

impl core::fmt::Display for AnchorError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            AnchorError::TooManyRoots => "anchored emit would belong to too many tuple trees",
            AnchorError::TrackerFull => "too many open (unacked) inputs",
            AnchorError::AlreadyAcked => "input tuple already acked",
            AnchorError::AlreadyFailed => "input tuple already failed",
            AnchorError::InputClosed => "input tuple already acked or failed",
            AnchorError::UnknownInput => "input handle not issued by this tracker",
        })
    }
}

/// A bolt's handle to one received input tuple, valid until the input is acked or failed.
/// Copyable, so an emit may name the same input twice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct InputHandle {
    index: u32,
    generation: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum InputState {
    Free,
    Open,
    Acked,
    Failed,
}

/// One slot of an [`InputTracker`]'s storage (create storage with `InputSlot::default()`).
#[derive(Clone, Debug)]
pub struct InputSlot<const R: usize> {
    anchors: Anchors<R>,
    ack_val: u64,
    generation: u32,
    state: InputState,
    next_free: u32,
}

impl<const R: usize> Default for InputSlot<R> {
    fn default() -> Self {
        Self {
            anchors: Anchors::new(),
            ack_val: 0,
            generation: 0,
            state: InputState::Free,
            next_free: NONE,
        }
    }
}

const NONE: u32 = u32::MAX;

/// The acker messages produced by acking, failing or resetting one input: at most one per root.
pub type InputMessages<const R: usize> = heapless::Vec<AckerMessage, R>;

/// Bolt-side anchoring state: the open inputs of one bolt task and their accumulated XORs.
///
/// `S` is the slot storage (`[InputSlot<R>; N]`, `Vec<InputSlot<R>>`, ...): its length is the
/// most inputs the bolt may hold unacked at once.
///
/// ```
/// use acker_core::{AckerMessage, Anchors, InputTracker, InputSlot};
/// let mut bolt: InputTracker<4, _> =
///     InputTracker::new(core::array::from_fn::<InputSlot<4>, 8, _>(|_| InputSlot::default()), 7).unwrap();
/// let input = bolt.receive(&Anchors::spout(11, 0xE0)).unwrap();
/// let child = bolt.emit(&[input]).unwrap();           // one anchored copy
/// let (root, e) = child.pairs()[0];
/// let acks = bolt.ack(input).unwrap();
/// assert_eq!(acks[0], AckerMessage::Ack { root: 11, xor: 0xE0 ^ e });
/// assert_eq!(root, 11);
/// ```
#[derive(Debug)]
pub struct InputTracker<const R: usize, S> {
    slots: S,
    free_head: u32,
    open: usize,
    ids: IdGenerator,
}

impl<const R: usize, S: AsRef<[InputSlot<R>]> + AsMut<[InputSlot<R>]>> InputTracker<R, S> {
    /// A tracker over `storage` (every slot is reset) whose edge ids come from a xoshiro stream
    /// seeded with `seed`.
    ///
    /// # Errors
    /// [`AnchorError::TrackerFull`] when the storage is empty or has `u32::MAX` slots or more.
    pub fn new(mut storage: S, seed: u64) -> Result<Self, AnchorError> {
        let n = storage.as_ref().len();
        if n == 0 || n >= NONE as usize {
            return Err(AnchorError::TrackerFull);
        }
        for (i, s) in storage.as_mut().iter_mut().enumerate() {
            *s = InputSlot::default();
            s.next_free = if i + 1 < n { (i + 1) as u32 } else { NONE };
        }
        Ok(Self {
            slots: storage,
            free_head: 0,
            open: 0,
            ids: IdGenerator::from_seed(seed),
        })
    }

    /// How many inputs are open (received, neither acked nor failed).
    pub fn open_inputs(&self) -> usize {
        self.open
    }

    /// The most inputs that may be open at once.
    pub fn capacity(&self) -> usize {
        self.slots.as_ref().len()
    }

    /// Registers a received input tuple carrying `anchors`; the handle names it in emits, acks
    /// and fails. An input with no anchors is accepted too (acking it sends nothing).
    ///
    /// # Errors
    /// [`AnchorError::TrackerFull`] when every slot holds an open input.
    pub fn receive(&mut self, anchors: &Anchors<R>) -> Result<InputHandle, AnchorError> {
        if self.free_head == NONE {
            return Err(AnchorError::TrackerFull);
        }
        let index = self.free_head;
        let s = &mut self.slots.as_mut()[index as usize];
        self.free_head = s.next_free;
        s.next_free = NONE;
        if s.state != InputState::Free {
            s.generation = s.generation.wrapping_add(1);
        }
        s.state = InputState::Open;
        s.anchors = anchors.clone();
        s.ack_val = 0;
        self.open += 1;
        Ok(InputHandle {
            index,
            generation: s.generation,
        })
    }

    /// The anchors of an open input.
    ///
    /// # Errors
    /// As [`ack`](Self::ack) for a handle that is not open.
    pub fn anchors(&self, input: InputHandle) -> Result<&Anchors<R>, AnchorError> {
        self.check_open(input)?;
        Ok(&self.slots.as_ref()[input.index as usize].anchors)
    }

    /// The anchors for one copy of a tuple emitted anchored to `inputs` (one input, several for
    /// multi-anchoring, the same one more than once, or none for an unanchored emit). Call it once
    /// per destination task: every copy gets its own edge ids.
    ///
    /// # Errors
    /// [`AnchorError::AlreadyAcked`] / [`AlreadyFailed`](AnchorError::AlreadyFailed) /
    /// [`InputClosed`](AnchorError::InputClosed) / [`UnknownInput`](AnchorError::UnknownInput) if
    /// any input is not open; [`AnchorError::TooManyRoots`] if the copy would belong to more than
    /// `R` trees. Nothing changes on error (no edge id is drawn or accumulated).
    pub fn emit(&mut self, inputs: &[InputHandle]) -> Result<Anchors<R>, AnchorError> {
        // Validate everything before touching any state.
        let mut roots: Anchors<R> = Anchors::new();
        for &h in inputs {
            self.check_open(h)?;
            for r in self.slots.as_ref()[h.index as usize].anchors.roots() {
                roots.put_xor(r, 0)?;
            }
        }
        let mut out: Anchors<R> = Anchors::new();
        for &h in inputs {
            let slot = &mut self.slots.as_mut()[h.index as usize];
            if slot.anchors.is_empty() {
                continue;
            }
            let e = self.ids.next_id();
            slot.ack_val ^= e;
            for r in slot.anchors.roots() {
                // Cannot fail: the root set was checked above.
                let _ = out.put_xor(r, e);
            }
        }
        Ok(out)
    }

    /// Acks an input: one `Ack { root, xor }` per root it belongs to, the xor being the input's
    /// edge XOR for that root XOR every edge id emitted anchored to it. The input closes.
    ///
    /// # Errors
    /// [`AnchorError::AlreadyAcked`] (acking twice), [`AnchorError::AlreadyFailed`],
    /// [`AnchorError::InputClosed`], [`AnchorError::UnknownInput`]; nothing changes.
    pub fn ack(&mut self, input: InputHandle) -> Result<InputMessages<R>, AnchorError> {
        self.check_open(input)?;
        let slot = &self.slots.as_ref()[input.index as usize];
        let mut out = InputMessages::new();
        for &(root, edge) in slot.anchors.pairs() {
            let _ = out.push(AckerMessage::Ack {
                root,
                xor: edge ^ slot.ack_val,
            });
        }
        self.close(input, InputState::Acked);
        Ok(out)
    }

    /// Fails an input: one `Fail { root }` per root it belongs to. The input closes.
    ///
    /// # Errors
    /// As [`ack`](Self::ack) (failing after an ack is [`AnchorError::AlreadyAcked`]).
    pub fn fail(&mut self, input: InputHandle) -> Result<InputMessages<R>, AnchorError> {
        self.check_open(input)?;
        let slot = &self.slots.as_ref()[input.index as usize];
        let mut out = InputMessages::new();
        for root in slot.anchors.roots() {
            let _ = out.push(AckerMessage::Fail { root });
        }
        self.close(input, InputState::Failed);
        Ok(out)
    }

    /// Asks for more time for every tree the (open) input belongs to: one `ResetTimeout` per root,
    /// as Storm's `collector.resetTimeout(tuple)`. The input stays open.
    ///
    /// # Errors
    /// As [`ack`](Self::ack); nothing changes.
    pub fn reset_timeout(&self, input: InputHandle) -> Result<InputMessages<R>, AnchorError> {
        self.check_open(input)?;
        let slot = &self.slots.as_ref()[input.index as usize];
        let mut out = InputMessages::new();
        for root in slot.anchors.roots() {
            let _ = out.push(AckerMessage::ResetTimeout { root });
        }
        Ok(out)
    }

    fn check_open(&self, h: InputHandle) -> Result<(), AnchorError> {
        let slot = self
            .slots
            .as_ref()
            .get(h.index as usize)
            .ok_or(AnchorError::UnknownInput)?;
        if h.generation == slot.generation {
            match slot.state {
                InputState::Open => Ok(()),
                InputState::Acked => Err(AnchorError::AlreadyAcked),
                InputState::Failed => Err(AnchorError::AlreadyFailed),
                InputState::Free => Err(AnchorError::UnknownInput),
            }
        } else if h.generation.wrapping_sub(slot.generation) > u32::MAX / 2 {
            // An older generation: the input closed and the slot was reused.
            Err(AnchorError::InputClosed)
        } else {
            Err(AnchorError::UnknownInput)
        }
    }

    fn close(&mut self, h: InputHandle, state: InputState) {
        let head = self.free_head;
        let slot = &mut self.slots.as_mut()[h.index as usize];
        slot.state = state;
        slot.next_free = head;
        self.free_head = h.index;
        self.open -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tracker() -> InputTracker<4, [InputSlot<4>; 4]> {
        InputTracker::new(core::array::from_fn(|_| InputSlot::default()), 1).unwrap()
    }

    #[test]
    fn errors_change_nothing() {
        let mut t = tracker();
        let a = t.receive(&Anchors::spout(1, 10)).unwrap();
        let b = t.receive(&Anchors::spout(2, 20)).unwrap();
        t.ack(b).unwrap();
        assert_eq!(t.emit(&[a, b]), Err(AnchorError::AlreadyAcked));
        // `a` accumulated nothing: its ack is its bare edge id.
        assert_eq!(
            t.ack(a).unwrap().as_slice(),
            &[AckerMessage::Ack { root: 1, xor: 10 }]
        );
        assert_eq!(t.fail(a), Err(AnchorError::AlreadyAcked));
    }

    #[test]
    fn too_many_roots_is_an_error() {
        let mut t: InputTracker<2, [InputSlot<2>; 4]> =
            InputTracker::new(core::array::from_fn(|_| InputSlot::default()), 1).unwrap();
        let a = t.receive(&Anchors::spout(1, 10)).unwrap();
        let b = t.receive(&Anchors::spout(2, 20)).unwrap();
        let c = t.receive(&Anchors::spout(3, 30)).unwrap();
        assert_eq!(t.emit(&[a, b, c]), Err(AnchorError::TooManyRoots));
        assert_eq!(t.emit(&[a, b]).unwrap().len(), 2);
    }

    #[test]
    fn stale_and_unknown_handles() {
        let mut t = tracker();
        let a = t.receive(&Anchors::spout(1, 10)).unwrap();
        t.fail(a).unwrap();
        assert_eq!(t.ack(a), Err(AnchorError::AlreadyFailed));
        let b = t.receive(&Anchors::spout(2, 20)).unwrap(); // reuses a's slot
        assert_eq!(t.ack(a), Err(AnchorError::InputClosed));
        assert!(t.ack(b).is_ok());
        let bogus = InputHandle {
            index: 99,
            generation: 0,
        };
        assert_eq!(t.ack(bogus), Err(AnchorError::UnknownInput));
    }

    #[test]
    fn input_anchors_match_the_tracker() {
        // The same receives, emits and acks through both ways give the same messages.
        let mut t = tracker();
        let mut ids = IdGenerator::from_seed(1);
        let a = t.receive(&Anchors::spout(1, 10)).unwrap();
        let b = t.receive(&Anchors::spout(2, 20)).unwrap();
        let ia: InputAnchors<4> = InputAnchors::new(Anchors::spout(1, 10));
        let ib: InputAnchors<4> = InputAnchors::new(Anchors::spout(2, 20));
        for _ in 0..3 {
            assert_eq!(
                t.emit(&[a, b, a]).unwrap(),
                InputAnchors::emit([&ia, &ib, &ia], &mut ids).unwrap()
            );
        }
        assert_eq!(t.ack(a).unwrap(), ia.ack());
        assert_eq!(t.reset_timeout(b).unwrap(), ib.reset_timeout());
        assert_eq!(t.fail(b).unwrap(), ib.fail());
        let none: InputAnchors<4> = InputAnchors::default();
        assert!(InputAnchors::emit([&none], &mut ids).unwrap().is_empty());
        assert!(none.ack().is_empty());
    }

    #[test]
    fn one_input_emits_match_the_tracker() {
        // `InputAnchors::emit`'s one-input path against the tracker's code (which has none):
        // inputs of one root, of two roots, and untracked; the same ids drawn on both sides.
        let mut t = tracker();
        let mut ids = IdGenerator::from_seed(1);
        let a = t.receive(&Anchors::spout(1, 10)).unwrap();
        let b = t.receive(&Anchors::spout(2, 20)).unwrap();
        let ia: InputAnchors<4> = InputAnchors::new(Anchors::spout(1, 10));
        let ib: InputAnchors<4> = InputAnchors::new(Anchors::spout(2, 20));
        let two = t.emit(&[a, b]).unwrap();
        assert_eq!(two, InputAnchors::emit([&ia, &ib], &mut ids).unwrap());
        assert_eq!(two.len(), 2);
        let c = t.receive(&two).unwrap();
        let ic: InputAnchors<4> = InputAnchors::new(two);
        let d = t.receive(&Anchors::new()).unwrap();
        let id: InputAnchors<4> = InputAnchors::default();
        for _ in 0..3 {
            assert_eq!(
                t.emit(&[c]).unwrap(),
                InputAnchors::emit([&ic], &mut ids).unwrap()
            );
            assert_eq!(
                t.emit(&[a]).unwrap(),
                InputAnchors::emit([&ia], &mut ids).unwrap()
            );
            assert_eq!(
                t.emit(&[d]).unwrap(),
                InputAnchors::emit([&id], &mut ids).unwrap()
            );
        }
        // The one-root ack is the tracker's one message; none for two roots or none.
        assert_eq!(ia.ack_one_root().map(|m| [m]), Some([t.ack(a).unwrap()[0]]));
        assert_eq!(ib.ack_one_root().map(|m| [m]), Some([t.ack(b).unwrap()[0]]));
        assert_eq!(ic.ack_one_root(), None);
        assert_eq!(id.ack_one_root(), None);
        assert_eq!(t.ack(c).unwrap(), ic.ack());
        assert_eq!(ia.ack().len(), 1);
        assert_eq!(ia.ack()[0], ia.ack_one_root().unwrap());
        assert_eq!(t.ack(d).unwrap(), id.ack());
    }

    #[test]
    fn input_anchors_refuse_too_many_roots_and_change_nothing() {
        let mut ids = IdGenerator::from_seed(1);
        let i: [InputAnchors<2>; 3] =
            core::array::from_fn(|k| InputAnchors::new(Anchors::spout(k as u64 + 1, 5)));
        assert_eq!(
            InputAnchors::emit([&i[0], &i[1], &i[2]], &mut ids),
            Err(AnchorError::TooManyRoots)
        );
        assert_eq!(i[0].ack()[0], AckerMessage::Ack { root: 1, xor: 5 });
    }

    #[test]
    fn full_tracker() {
        let mut t = tracker();
        for _ in 0..4 {
            t.receive(&Anchors::new()).unwrap();
        }
        assert_eq!(t.receive(&Anchors::new()), Err(AnchorError::TrackerFull));
    }
}
