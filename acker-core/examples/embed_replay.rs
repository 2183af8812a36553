//! What an engine embedding acker-core sees beyond the happy path: trees routed to three acker
//! tasks by root id, a bolt failure and the replay it causes, a lost tuple whose tree times out
//! at the spout and the replay that follows, each input's anchoring state kept in the input
//! itself ([`InputAnchors`]). Run: `cargo run -p acker-core --example embed_replay`.
use std::collections::VecDeque;

use acker_core::*;

const ACKERS: usize = 3;
const T: u64 = 1_000_000_000; // message timeout: 1 s

enum Msg {
    /// A data tuple for the bolt: its anchors and its message id (to script the bolt).
    Tuple(Anchors<4>, &'static str),
    /// To acker task `acker_index(root, ACKERS)`.
    Acker(AckerMessage),
    /// An acker's decision for the spout.
    Notice(RootId, Decision),
}

struct Engine {
    spout: SpoutPending<&'static str, Vec<PendingSlot<&'static str>>>,
    ackers: Vec<AckerTable<Vec<Slot>>>,
    edge_ids: IdGenerator, // the bolt's edge ids
    queue: VecDeque<Msg>,
    now_ns: u64, // the engine's clock; acker-core never reads one
    first_try: Vec<&'static str>,
    acked: Vec<&'static str>,
}

impl Engine {
    fn emit(&mut self, msg_id: &'static str) {
        let mut edges = [0u64; 1]; // one destination copy
        if let SpoutEmit::Tracked { root, init } = self
            .spout
            .emit(Some(msg_id), &mut edges, self.now_ns)
            .unwrap()
        {
            println!(
                "emit {msg_id}: root {root:#018x} -> acker task {:?}",
                acker_index(root, ACKERS)
            );
            self.queue
                .push_back(Msg::Tuple(Anchors::spout(root, edges[0]), msg_id));
            self.queue.push_back(Msg::Acker(init));
        }
    }

    /// Delivers every queued message; the spout's `fail` re-emits (at-least-once).
    fn run(&mut self) {
        while let Some(msg) = self.queue.pop_front() {
            match msg {
                Msg::Tuple(anchors, id) => {
                    let input = InputAnchors::new(anchors);
                    let first = !self.first_try.contains(&id);
                    self.first_try.push(id);
                    match (id, first) {
                        // The bolt throws on `b` the first time: one Fail per root.
                        ("b", true) => self.queue.extend(input.fail().into_iter().map(Msg::Acker)),
                        // `c`'s first copy is lost on the way: nothing reaches the acker.
                        ("c", true) => println!("tuple {id} lost"),
                        _ => {
                            // One anchored child, processed at once by a sink that acks it.
                            let child = InputAnchors::new(
                                InputAnchors::emit([&input], &mut self.edge_ids).unwrap(),
                            );
                            self.queue.extend(input.ack().into_iter().map(Msg::Acker));
                            self.queue.extend(child.ack().into_iter().map(Msg::Acker));
                        }
                    }
                }
                Msg::Acker(m) => {
                    let a = acker_index(m.root(), ACKERS).unwrap();
                    match self.ackers[a].apply(m) {
                        Ok(Decision::Pending) => {}
                        Ok(d) => self.queue.push_back(Msg::Notice(m.root(), d)),
                        Err(e) => eprintln!("acker {a} refused {m:?}: {e}"),
                    }
                }
                Msg::Notice(root, Decision::Completed { .. }) => {
                    let done = self.spout.completed(root, self.now_ns).unwrap();
                    println!("ack({}) after {} ns", done.msg_id, done.complete_latency_ns);
                    self.acked.push(done.msg_id);
                }
                // A bolt's reset-timeout: the tree lives on with its clock restarted.
                Msg::Notice(root, Decision::Reset { .. }) => {
                    self.spout.reset(root, self.now_ns);
                }
                Msg::Notice(_, Decision::Pending) => {} // never queued (filtered at the acker)
                Msg::Notice(root, Decision::Failed { .. }) => {
                    if let Some(id) = self.spout.failed(root) {
                        println!("fail({id}): replay");
                        self.emit(id);
                    }
                }
            }
        }
    }

    /// The clock moves on: the spout times out trees, the ackers expire entries.
    fn advance(&mut self, ns: u64) {
        self.now_ns += ns;
        for a in &mut self.ackers {
            a.tick(self.now_ns);
        }
        let timed_out: Vec<_> = self.spout.tick(self.now_ns).collect();
        for id in timed_out {
            println!("timeout({id}) at {} s: replay", self.now_ns / T);
            self.emit(id);
        }
        self.run();
    }
}

fn main() {
    let config = SpoutConfig {
        spout_task: 0,
        num_ackers: ACKERS,
        max_spout_pending: 16,
        message_timeout_ns: Some(T),
        seed: 1,
    };
    let mut e = Engine {
        spout: SpoutPending::new(vec![PendingSlot::default(); 32], config).unwrap(),
        ackers: (0..ACKERS)
            .map(|_| AckerTable::new(vec![Slot::EMPTY; 64], T).unwrap())
            .collect(),
        edge_ids: IdGenerator::from_seed(2),
        queue: VecDeque::new(),
        now_ns: 0,
        first_try: Vec::new(),
        acked: Vec::new(),
    };
    for id in ["a", "b", "c"] {
        e.emit(id);
    }
    e.run();
    // `a` completed, `b` failed and its replay completed; `c` waits for its timeout
    // (between T and 2T after its emit: the spout's tick at 2 s).
    assert_eq!(e.acked, ["a", "b"]);
    for _ in 0..2 {
        e.advance(T);
    }
    assert_eq!(e.acked, ["a", "b", "c"]);
    assert_eq!(e.spout.timed_out(), 1);
    assert!(e.spout.is_empty());
    // The acker entry of `c`'s lost first tree expires 2T to 3T after its init.
    e.advance(2 * T);
    assert!(e.ackers.iter().all(|a| a.is_empty()));
}
