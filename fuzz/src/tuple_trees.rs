//! The `tuple_trees` target: random tuple DAGs built with the real anchoring API, their acker
//! messages delivered in a fuzzed order, with fuzzed duplicates and drops, into a real
//! `AckerTable`.
//!
//! The harness keeps a *symbolic* copy of every tree: each edge id the spout or a bolt draws is an
//! index, each tuple carries, per root, the set of edge indices whose XOR its anchor should hold,
//! and each acker message carries the set of edge indices it should XOR in (for a bolt's ack of an
//! input: the input's set for that root plus one edge per anchored emit that named the input, as
//! Storm's `BoltOutputCollectorImpl` does). Symbolic sets never cancel by accident, so they give
//! the exact answer the 64-bit XORs approximate. Two oracles:
//!
//! 1. *Symbolic acker*: every delivery's decision from the real table equals the decision of the
//!    acker rules applied to the symbolic sets (ack val 0 ⇔ empty set), duplicates and drops
//!    included.
//! 2. *Tree rule* (for roots none of whose messages was delivered twice): a root completes if and
//!    only if every tuple of its tree was acked, no input of it failed and every one of its
//!    messages was delivered, and then exactly once, at the delivery of the last of them (never
//!    before); it fails exactly once, at the later of its init and its first delivered fail, if an
//!    input of it failed; otherwise the spout never hears a `Completed` or `Failed` for it.
//!
//! The spout side is either `SpoutPending` (root and edge ids from its seeded stream, the init it
//! builds) or a manual `Anchors::spout` plus hand-built init; decisions are passed on to the
//! `SpoutPending`, which must hand out each message id at most once.

use std::collections::{BTreeMap, BTreeSet};

use acker_core::{
    AckerMessage, AckerTable, AnchorError, Anchors, Decision, IdGenerator, InputHandle, InputSlot,
    InputTracker, PendingError, PendingSlot, RootId, Slot, SpoutConfig, SpoutEmit, SpoutPending,
    TableError, TaskId,
};
use arbitrary::Arbitrary;

/// Most trees one tuple may belong to in this harness (`Anchors<R>`).
pub const R: usize = 4;
/// Open inputs the bolt's tracker holds.
pub const TRACKER_SLOTS: usize = 12;
/// The spout task recorded in every init.
pub const SPOUT_TASK: TaskId = 9;
/// Max spout pending of the spout side.
pub const MAX_SPOUT_PENDING: usize = 24;

/// One step of building the tuple DAG.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum TreeOp {
    /// The spout emits one tuple to `copies % 4` tasks, tracked (with a message id) or not.
    SpoutEmit {
        /// Destination copies, `% 4`.
        copies: u8,
        /// With a message id (tracked) or without (untracked: no anchors).
        tracked: bool,
    },
    /// A bolt receives the in-flight tuple `pick % in_flight` (kept in flight if the tracker
    /// is full).
    Receive {
        /// Which in-flight tuple.
        pick: u8,
    },
    /// A bolt emits `copies % 4` copies anchored to the open inputs `inputs[..n % 5]` (each
    /// `% open`; repeats allowed; `n % 5 == 0` is an unanchored emit).
    Emit {
        /// How many anchors, `% 5`.
        n: u8,
        /// Which open inputs.
        inputs: [u8; 4],
        /// Destination copies, `% 4`.
        copies: u8,
    },
    /// A bolt acks open input `pick % open`.
    Ack {
        /// Which open input.
        pick: u8,
    },
    /// A bolt fails open input `pick % open`.
    Fail {
        /// Which open input.
        pick: u8,
    },
    /// A bolt asks for more time for open input `pick % open`.
    Reset {
        /// Which open input.
        pick: u8,
    },
    /// The in-flight tuple `pick % in_flight` is lost on the way (its tree can never complete).
    Lose {
        /// Which in-flight tuple.
        pick: u8,
    },
    /// A bolt misuses closed input `pick % closed`: acks, fails or anchors to it again; the
    /// tracker must refuse and change nothing.
    Misuse {
        /// Which closed input.
        pick: u8,
        /// 0 ack, 1 fail, 2 emit anchored to it, 3 reset.
        how: u8,
    },
}

/// What happens to one acker message on its way.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub struct Fate {
    /// Which of the messages still queued goes next (`% queued`); also where a duplicate is
    /// queued.
    pub pick: u16,
    /// `% 8`: 0 dropped, 1 delivered and a duplicate queued, anything else delivered.
    pub kind: u8,
}

/// A whole `tuple_trees` input.
#[derive(Arbitrary, Clone, Debug)]
pub struct TreeInput {
    /// Seed of the spout's and the bolt's id streams.
    pub seed: u64,
    /// Manual spout (`Anchors::spout` + hand-built init) instead of `SpoutPending`.
    pub manual_spout: bool,
    /// Building steps.
    pub script: Vec<TreeOp>,
    /// After the script, receive every tuple still in flight and ack every open input.
    pub drain: bool,
    /// Fates of the queued acker messages, in delivery order; messages left when the fates run
    /// out are delivered once each, in the order they were sent.
    pub fates: Vec<Fate>,
}

/// Symbolic anchors: per root, the edge indices whose XOR the anchor value is.
type Sym = BTreeMap<RootId, BTreeSet<usize>>;

fn toggle(set: &mut BTreeSet<usize>, edges: &BTreeSet<usize>) {
    for &e in edges {
        if !set.remove(&e) {
            set.insert(e);
        }
    }
}

/// A tuple copy on its way to a bolt.
struct Flight {
    anchors: Anchors<R>,
    sym: Sym,
}

/// An input a bolt holds open.
struct Open {
    handle: InputHandle,
    sym: Sym,
    /// Edges drawn by anchored emits naming this input.
    emitted: BTreeSet<usize>,
}

/// Kinds of acker messages, for the oracles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MsgKind {
    Init,
    Ack,
    Fail,
    Reset,
}

/// A sent acker message and its symbolic content.
struct Sent {
    msg: AckerMessage,
    kind: MsgKind,
    content: BTreeSet<usize>,
}

/// The symbolic acker's entry for a root.
#[derive(Default)]
struct SymEntry {
    set: BTreeSet<usize>,
    task: bool,
    failed: bool,
}

/// What the harness knows about one tracked root.
#[derive(Default)]
struct RootFacts {
    /// Tuple copies carrying this root that were created, and how many of them a bolt acked.
    tuples: usize,
    acked: usize,
    msg_id: Option<u32>,
}

/// Builder state of one run.
struct Build {
    edges: usize,
    in_flight: Vec<Flight>,
    open: Vec<Open>,
    closed: Vec<(InputHandle, bool)>,
    sent: Vec<Sent>,
    roots: BTreeMap<RootId, RootFacts>,
    tracker: InputTracker<R, Vec<InputSlot<R>>>,
}

impl Build {
    fn new_edge(&mut self) -> usize {
        self.edges += 1;
        self.edges - 1
    }

    fn push_flight(&mut self, anchors: Anchors<R>, sym: Sym) {
        for r in sym.keys() {
            if let Some(f) = self.roots.get_mut(r) {
                f.tuples += 1;
            }
        }
        self.in_flight.push(Flight { anchors, sym });
    }

    /// Records the messages of acking / failing / resetting `open`, checking that the tracker
    /// produced exactly one per root of the input.
    fn record(&mut self, ctx: &str, open: &Open, msgs: &[AckerMessage], kind: MsgKind) {
        let got: BTreeSet<RootId> = msgs.iter().map(|m| m.root()).collect();
        let want: BTreeSet<RootId> = open.sym.keys().copied().collect();
        assert_eq!(got, want, "{ctx}: roots of the input's acker messages");
        assert_eq!(msgs.len(), want.len(), "{ctx}: one message per root");
        for &m in msgs {
            let (k, content) = match m {
                AckerMessage::Ack { root, .. } => {
                    let mut c = open.sym[&root].clone();
                    toggle(&mut c, &open.emitted);
                    (MsgKind::Ack, c)
                }
                AckerMessage::Fail { .. } => (MsgKind::Fail, BTreeSet::new()),
                AckerMessage::ResetTimeout { .. } => (MsgKind::Reset, BTreeSet::new()),
                AckerMessage::Init { .. } => panic!("{ctx}: a bolt sent an init: {m:?}"),
            };
            assert_eq!(k, kind, "{ctx}: message kind of {m:?}");
            self.sent.push(Sent {
                msg: m,
                kind,
                content,
            });
        }
    }

    fn ack(&mut self, ctx: &str, i: usize) {
        let open = self.open.remove(i);
        let msgs = match self.tracker.ack(open.handle) {
            Ok(m) => m,
            Err(e) => panic!("{ctx}: ack of an open input refused: {e:?}"),
        };
        self.record(ctx, &open, &msgs, MsgKind::Ack);
        for r in open.sym.keys() {
            if let Some(f) = self.roots.get_mut(r) {
                f.acked += 1;
            }
        }
        self.closed.push((open.handle, true));
    }
}

/// What one `tuple_trees` run did, for tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TreeStats {
    /// Tracked roots the spout emitted.
    pub roots: usize,
    /// Acker messages sent by the spout and the bolts.
    pub messages_sent: usize,
    /// Deliveries to the acker (duplicates counted, drops not).
    pub deliveries: usize,
    /// `Completed` decisions.
    pub completed: usize,
    /// `Failed` decisions.
    pub failed: usize,
}

/// Runs one `tuple_trees` input and returns what it did.
///
/// # Panics
/// When the anchoring API, the acker table or the spout pending set breaks one of the oracles in
/// the [module docs](self), or an API call refuses a valid request; the message names the step.
pub fn tuple_trees(input: &TreeInput) -> TreeStats {
    let tracker = match InputTracker::new(vec![InputSlot::default(); TRACKER_SLOTS], input.seed) {
        Ok(t) => t,
        Err(e) => panic!("tracker refused valid storage: {e:?}"),
    };
    let mut spout = match SpoutPending::new(
        vec![PendingSlot::<u32>::default(); 2 * MAX_SPOUT_PENDING],
        SpoutConfig {
            spout_task: SPOUT_TASK,
            num_ackers: 1,
            max_spout_pending: MAX_SPOUT_PENDING,
            message_timeout_ns: None,
            seed: input.seed ^ 0x5EED,
        },
    ) {
        Ok(s) => s,
        Err(e) => panic!("spout pending refused a valid config: {e:?}"),
    };
    // Every generator gets its own seed: `rotate_left` alone left seeds 0 and u64::MAX equal to
    // the tracker's, so spout and bolt drew the same edge ids and their XORs cancelled
    // (regressions/tuple_trees/same-seed-generators).
    let mut manual_ids = IdGenerator::from_seed(input.seed ^ 0x3A11_0C8E_D000_0001);
    let mut b = Build {
        edges: 0,
        in_flight: Vec::new(),
        open: Vec::new(),
        closed: Vec::new(),
        sent: Vec::new(),
        roots: BTreeMap::new(),
        tracker,
    };
    let mut next_msg_id = 0u32;

    for (step, op) in input.script.iter().enumerate() {
        let ctx = format!("script step #{step} {op:?}");
        match *op {
            TreeOp::SpoutEmit { copies, tracked } => {
                let n = usize::from(copies % 4);
                if !tracked {
                    if !input.manual_spout {
                        let mut edges = [0u64; 3];
                        let got = spout.emit(None, &mut edges[..n], 0);
                        assert_eq!(got, Ok(SpoutEmit::Untracked), "{ctx}");
                        assert_eq!(edges, [0; 3], "{ctx}: untracked emit wrote edge ids");
                    }
                    for _ in 0..n {
                        b.push_flight(Anchors::new(), Sym::new());
                    }
                    continue;
                }
                let (root, edges, init) = if input.manual_spout {
                    let root = manual_ids.next_id();
                    if b.roots.contains_key(&root) {
                        continue;
                    }
                    let mut edges = [0u64; 3];
                    let mut xor = 0;
                    for e in edges[..n].iter_mut() {
                        *e = manual_ids.next_id();
                        xor ^= *e;
                    }
                    let init = AckerMessage::Init {
                        root,
                        xor,
                        spout_task: SPOUT_TASK,
                    };
                    (root, edges, init)
                } else {
                    let msg_id = next_msg_id;
                    let was_full = spout.is_full();
                    let mut edges = [0u64; 3];
                    match spout.emit(Some(msg_id), &mut edges[..n], 0) {
                        Ok(SpoutEmit::Tracked { root, init }) => {
                            assert!(!was_full, "{ctx}: emitted past max spout pending");
                            next_msg_id += 1;
                            assert_ne!(root, 0, "{ctx}: root id 0");
                            assert!(!b.roots.contains_key(&root), "{ctx}: root id reused");
                            let xor = edges[..n].iter().fold(0, |a, e| a ^ e);
                            assert!(edges[..n].iter().all(|&e| e != 0), "{ctx}: edge id 0");
                            assert_eq!(
                                init,
                                AckerMessage::Init {
                                    root,
                                    xor,
                                    spout_task: SPOUT_TASK
                                },
                                "{ctx}: init"
                            );
                            b.roots.insert(
                                root,
                                RootFacts {
                                    msg_id: Some(msg_id),
                                    ..RootFacts::default()
                                },
                            );
                            (root, edges, init)
                        }
                        Err(PendingError::MaxSpoutPending { msg_id: back }) => {
                            assert!(was_full, "{ctx}: refused below max spout pending");
                            assert_eq!(back, msg_id, "{ctx}: message id handed back");
                            continue;
                        }
                        other => panic!("{ctx}: tracked emit gave {other:?}"),
                    }
                };
                b.roots.entry(root).or_default();
                let mut content = BTreeSet::new();
                for &e in &edges[..n] {
                    let k = b.new_edge();
                    content.insert(k);
                    let sym = Sym::from([(root, BTreeSet::from([k]))]);
                    b.push_flight(Anchors::spout(root, e), sym);
                }
                b.sent.push(Sent {
                    msg: init,
                    kind: MsgKind::Init,
                    content,
                });
            }
            TreeOp::Receive { pick } => {
                if b.in_flight.is_empty() {
                    continue;
                }
                let i = usize::from(pick) % b.in_flight.len();
                match b.tracker.receive(&b.in_flight[i].anchors) {
                    Ok(handle) => {
                        let f = b.in_flight.remove(i);
                        b.open.push(Open {
                            handle,
                            sym: f.sym,
                            emitted: BTreeSet::new(),
                        });
                    }
                    Err(AnchorError::TrackerFull) => {
                        assert_eq!(b.open.len(), TRACKER_SLOTS, "{ctx}: full too early");
                    }
                    Err(e) => panic!("{ctx}: receive refused: {e:?}"),
                }
                assert_eq!(b.tracker.open_inputs(), b.open.len(), "{ctx}: open inputs");
            }
            TreeOp::Emit { n, inputs, copies } => {
                let n = usize::from(n % 5);
                if n > 0 && b.open.is_empty() {
                    continue;
                }
                let picked: Vec<usize> = inputs[..n]
                    .iter()
                    .map(|&p| usize::from(p) % b.open.len())
                    .collect();
                let handles: Vec<InputHandle> = picked.iter().map(|&i| b.open[i].handle).collect();
                let roots: BTreeSet<RootId> = picked
                    .iter()
                    .flat_map(|&i| b.open[i].sym.keys().copied())
                    .collect();
                for c in 0..copies % 4 {
                    let got = b.tracker.emit(&handles);
                    if roots.len() > R {
                        assert_eq!(got, Err(AnchorError::TooManyRoots), "{ctx}: copy {c}");
                        continue;
                    }
                    let anchors = match got {
                        Ok(a) => a,
                        Err(e) => panic!("{ctx}: copy {c}: emit refused: {e:?}"),
                    };
                    let mut sym = Sym::new();
                    for &i in &picked {
                        if b.open[i].sym.is_empty() {
                            continue;
                        }
                        let k = b.new_edge();
                        b.open[i].emitted.insert(k);
                        for &r in b.open[i].sym.keys() {
                            sym.entry(r).or_default().insert(k);
                        }
                    }
                    let got_roots: BTreeSet<RootId> = anchors.roots().collect();
                    assert_eq!(got_roots, roots, "{ctx}: copy {c}: roots of the anchors");
                    assert_eq!(
                        anchors.len(),
                        roots.len(),
                        "{ctx}: copy {c}: distinct roots"
                    );
                    b.push_flight(anchors, sym);
                }
            }
            TreeOp::Ack { pick } => {
                if !b.open.is_empty() {
                    let i = usize::from(pick) % b.open.len();
                    b.ack(&ctx, i);
                }
            }
            TreeOp::Fail { pick } => {
                if !b.open.is_empty() {
                    let i = usize::from(pick) % b.open.len();
                    let open = b.open.remove(i);
                    let msgs = match b.tracker.fail(open.handle) {
                        Ok(m) => m,
                        Err(e) => panic!("{ctx}: fail of an open input refused: {e:?}"),
                    };
                    b.record(&ctx, &open, &msgs, MsgKind::Fail);
                    b.closed.push((open.handle, false));
                }
            }
            TreeOp::Reset { pick } => {
                if !b.open.is_empty() {
                    let i = usize::from(pick) % b.open.len();
                    let msgs = match b.tracker.reset_timeout(b.open[i].handle) {
                        Ok(m) => m,
                        Err(e) => panic!("{ctx}: reset of an open input refused: {e:?}"),
                    };
                    let open = b.open.remove(i);
                    b.record(&ctx, &open, &msgs, MsgKind::Reset);
                    b.open.insert(i, open);
                }
            }
            TreeOp::Lose { pick } => {
                if !b.in_flight.is_empty() {
                    let i = usize::from(pick) % b.in_flight.len();
                    b.in_flight.remove(i);
                }
            }
            TreeOp::Misuse { pick, how } => {
                if b.closed.is_empty() {
                    continue;
                }
                let (h, acked) = b.closed[usize::from(pick) % b.closed.len()];
                let err = match how % 4 {
                    0 => b.tracker.ack(h).map(|_| ()),
                    1 => b.tracker.fail(h).map(|_| ()),
                    2 => b.tracker.emit(&[h]).map(|_| ()),
                    _ => b.tracker.reset_timeout(h).map(|_| ()),
                };
                let own = if acked {
                    AnchorError::AlreadyAcked
                } else {
                    AnchorError::AlreadyFailed
                };
                assert!(
                    err == Err(own) || err == Err(AnchorError::InputClosed),
                    "{ctx}: misuse of a closed input gave {err:?}"
                );
                assert_eq!(b.tracker.open_inputs(), b.open.len(), "{ctx}: open inputs");
            }
        }
    }

    if input.drain {
        loop {
            while !b.open.is_empty() {
                b.ack("drain", 0);
            }
            if b.in_flight.is_empty() {
                break;
            }
            while !b.in_flight.is_empty() && b.open.len() < TRACKER_SLOTS {
                let f = b.in_flight.remove(0);
                let handle = match b.tracker.receive(&f.anchors) {
                    Ok(h) => h,
                    Err(e) => panic!("drain: receive refused: {e:?}"),
                };
                b.open.push(Open {
                    handle,
                    sym: f.sym,
                    emitted: BTreeSet::new(),
                });
            }
        }
    }

    deliver(input, &b, &mut spout)
}

/// Delivers the sent messages as the fates say and checks both oracles.
fn deliver(
    input: &TreeInput,
    b: &Build,
    spout: &mut SpoutPending<u32, Vec<PendingSlot<u32>>>,
) -> TreeStats {
    // Delivery order.
    let mut queue: Vec<usize> = (0..b.sent.len()).collect();
    let mut order: Vec<usize> = Vec::new();
    let mut dup_budget = b.sent.len();
    for f in &input.fates {
        if queue.is_empty() {
            break;
        }
        let m = queue.remove(usize::from(f.pick) % queue.len());
        match f.kind % 8 {
            0 => {}
            1 => {
                order.push(m);
                if dup_budget > 0 {
                    dup_budget -= 1;
                    let at = usize::from(f.pick / 7) % (queue.len() + 1);
                    queue.insert(at, m);
                }
            }
            _ => order.push(m),
        }
    }
    order.extend(queue);

    let mut table = match AckerTable::new(vec![Slot::EMPTY; 2 * order.len() + 1], u64::MAX) {
        Ok(t) => t,
        Err(e) => panic!("valid table config refused: {e}"),
    };
    let mut sym: BTreeMap<RootId, SymEntry> = BTreeMap::new();
    // Per root: the delivery steps of its Completed and Failed decisions.
    let mut completed: BTreeMap<RootId, Vec<usize>> = BTreeMap::new();
    let mut failed: BTreeMap<RootId, Vec<usize>> = BTreeMap::new();
    let mut callbacks: BTreeMap<u32, usize> = BTreeMap::new();

    for (step, &m) in order.iter().enumerate() {
        let sent = &b.sent[m];
        let root = sent.msg.root();
        let ctx = format!("delivery #{step} of message #{m} {:?}", sent.msg);
        let got = table.apply(sent.msg);
        // The symbolic acker.
        let want = {
            let e = sym.entry(root).or_default();
            let mut reset = false;
            let mut dup_init = false;
            match sent.kind {
                MsgKind::Init if e.task => dup_init = true,
                MsgKind::Init => {
                    toggle(&mut e.set, &sent.content);
                    e.task = true;
                }
                MsgKind::Ack => toggle(&mut e.set, &sent.content),
                MsgKind::Fail => e.failed = true,
                MsgKind::Reset => reset = true,
            }
            let want = if dup_init {
                Err(TableError::DuplicateInit)
            } else if !e.task {
                Ok(Decision::Pending)
            } else if e.set.is_empty() {
                Ok(Decision::Completed {
                    spout_task: SPOUT_TASK,
                })
            } else if e.failed {
                Ok(Decision::Failed {
                    spout_task: SPOUT_TASK,
                })
            } else if reset {
                Ok(Decision::Reset {
                    spout_task: SPOUT_TASK,
                })
            } else {
                Ok(Decision::Pending)
            };
            if matches!(
                want,
                Ok(Decision::Completed { .. }) | Ok(Decision::Failed { .. })
            ) {
                sym.remove(&root);
            }
            want
        };
        assert_eq!(got, want, "{ctx}: decision against the symbolic acker");
        assert_eq!(table.len(), sym.len(), "{ctx}: live roots");
        match got {
            Ok(Decision::Completed { .. }) => {
                completed.entry(root).or_default().push(step);
                if !input.manual_spout {
                    let c = spout.completed(root, 0);
                    let want_id = b.roots.get(&root).and_then(|f| f.msg_id);
                    let ok = match (&c, want_id) {
                        (Some(c), Some(id)) => c.msg_id == id,
                        (None, _) => true,
                        (Some(_), None) => false,
                    };
                    assert!(
                        ok,
                        "{ctx}: spout completed {c:?}, root's msg id {want_id:?}"
                    );
                    if let Some(c) = c {
                        *callbacks.entry(c.msg_id).or_default() += 1;
                    }
                }
            }
            Ok(Decision::Failed { .. }) => {
                failed.entry(root).or_default().push(step);
                if !input.manual_spout {
                    let got_id = spout.failed(root);
                    let want_id = b.roots.get(&root).and_then(|f| f.msg_id);
                    assert!(
                        got_id.is_none() || got_id == want_id,
                        "{ctx}: spout failed {got_id:?}, root's msg id {want_id:?}"
                    );
                    if let Some(id) = got_id {
                        *callbacks.entry(id).or_default() += 1;
                    }
                }
            }
            _ => {}
        }
    }
    for (id, n) in &callbacks {
        assert_eq!(*n, 1, "message id {id} got {n} callbacks");
    }

    // The tree rule, for roots none of whose messages was delivered twice.
    let mut deliveries: Vec<Vec<usize>> = vec![Vec::new(); b.sent.len()];
    for (step, &m) in order.iter().enumerate() {
        deliveries[m].push(step);
    }
    for (&root, facts) in &b.roots {
        let mine: Vec<usize> = (0..b.sent.len())
            .filter(|&m| b.sent[m].msg.root() == root && b.sent[m].kind != MsgKind::Reset)
            .collect();
        if mine.iter().any(|&m| deliveries[m].len() > 1) {
            continue;
        }
        let fail_sent = mine.iter().any(|&m| b.sent[m].kind == MsgKind::Fail);
        let all_delivered = mine.iter().all(|&m| deliveries[m].len() == 1);
        let init_step = mine
            .iter()
            .find(|&&m| b.sent[m].kind == MsgKind::Init)
            .and_then(|&m| deliveries[m].first().copied());
        let first_fail = mine
            .iter()
            .filter(|&&m| b.sent[m].kind == MsgKind::Fail)
            .filter_map(|&m| deliveries[m].first().copied())
            .min();
        let got_c = completed.get(&root).cloned().unwrap_or_default();
        let got_f = failed.get(&root).cloned().unwrap_or_default();
        let ctx = format!(
            "root {root}: {} tuples, {} acked, fail sent {fail_sent}, all delivered {all_delivered}",
            facts.tuples, facts.acked
        );
        if !fail_sent && facts.acked == facts.tuples && all_delivered {
            let last = mine.iter().map(|&m| deliveries[m][0]).max();
            assert_eq!(
                got_c,
                last.into_iter().collect::<Vec<_>>(),
                "{ctx}: completed"
            );
            assert!(got_f.is_empty(), "{ctx}: failed at {got_f:?}");
        } else {
            assert!(got_c.is_empty(), "{ctx}: completed at {got_c:?}");
            match (fail_sent, init_step, first_fail) {
                (true, Some(i), Some(f)) => assert_eq!(got_f, vec![i.max(f)], "{ctx}: failed"),
                _ => assert!(got_f.is_empty(), "{ctx}: failed at {got_f:?}"),
            }
        }
    }
    TreeStats {
        roots: b.roots.len(),
        messages_sent: b.sent.len(),
        deliveries: order.len(),
        completed: completed.values().map(Vec::len).sum(),
        failed: failed.values().map(Vec::len).sum(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(script: Vec<TreeOp>, drain: bool, fates: Vec<Fate>, manual_spout: bool) -> TreeStats {
        tuple_trees(&TreeInput {
            seed: 3,
            manual_spout,
            script,
            drain,
            fates,
        })
    }

    #[test]
    fn fan_out_and_multi_anchoring_complete_when_drained() {
        let script = vec![
            TreeOp::SpoutEmit {
                copies: 2,
                tracked: true,
            },
            TreeOp::SpoutEmit {
                copies: 1,
                tracked: true,
            },
            TreeOp::SpoutEmit {
                copies: 1,
                tracked: false,
            },
            TreeOp::Receive { pick: 0 },
            TreeOp::Receive { pick: 1 },
            TreeOp::Receive { pick: 1 },
            TreeOp::Emit {
                n: 3,
                inputs: [0, 1, 2, 0],
                copies: 3,
            },
            TreeOp::Emit {
                n: 0,
                inputs: [0; 4],
                copies: 2,
            },
            TreeOp::Reset { pick: 1 },
            TreeOp::Ack { pick: 0 },
        ];
        for manual in [false, true] {
            // In order, nothing lost: both tracked trees complete, once each.
            let s = run(script.clone(), true, Vec::new(), manual);
            assert_eq!((s.roots, s.completed, s.failed), (2, 2, 0));
            assert_eq!(s.deliveries, s.messages_sent);
            // Shuffled with drops and duplicates: still checked message by message.
            let fates: Vec<Fate> = (0..40)
                .map(|k| Fate {
                    pick: k * 13,
                    kind: (k % 5) as u8,
                })
                .collect();
            let s = run(script.clone(), true, fates, manual);
            assert_eq!(s.roots, 2);
            // Every message delivered twice at most, some more than once.
            let dup = vec![Fate { pick: 3, kind: 1 }; 60];
            let s = run(script.clone(), true, dup, manual);
            assert!(s.deliveries > s.messages_sent, "{s:?}");
            // One message dropped: at most one tree completes.
            let drop = vec![Fate { pick: 5, kind: 0 }];
            let s = run(script.clone(), true, drop, manual);
            assert_eq!(s.deliveries + 1, s.messages_sent);
            assert_eq!(s.completed, 1, "{s:?}");
        }
        // Not drained: the open inputs are never acked, so nothing completes.
        let s = run(script, false, Vec::new(), false);
        assert_eq!((s.completed, s.failed), (0, 0));
    }

    #[test]
    fn a_failed_input_fails_its_trees() {
        let script = vec![
            TreeOp::SpoutEmit {
                copies: 1,
                tracked: true,
            },
            TreeOp::Receive { pick: 0 },
            TreeOp::Emit {
                n: 1,
                inputs: [0; 4],
                copies: 1,
            },
            TreeOp::Fail { pick: 0 },
            TreeOp::Misuse { pick: 0, how: 2 },
        ];
        let s = run(script, true, Vec::new(), false);
        assert_eq!((s.roots, s.completed, s.failed), (1, 0, 1));
        // init, the spout copy's ack, the child's fail.
        assert_eq!(s.messages_sent, 3);
    }
}
