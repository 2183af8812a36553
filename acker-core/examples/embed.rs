//! An engine's own message loop driving acker-core: spout tuple → bolt (two anchored children) →
//! acker → decision back to the spout. Run: `cargo run -p acker-core --example embed`.
use acker_core::*;

enum Msg {
    Tuple(Anchors<4>, u32),   // a data tuple (anchors, depth) for the bolt
    Acker(AckerMessage),      // to the acker task
    Notice(RootId, Decision), // the acker's decision, to the spout task
}

fn main() {
    let spout_cfg = SpoutConfig {
        spout_task: 0,
        num_ackers: 1,
        max_spout_pending: 16,
        message_timeout_ns: Some(30_000_000_000), // 30 s, Storm's default
        seed: 1,
    };
    let mut spout = SpoutPending::new(vec![PendingSlot::default(); 32], spout_cfg).unwrap();
    let mut bolt = InputTracker::new(vec![InputSlot::default(); 64], 2).unwrap();
    let mut acker = AckerTable::new(vec![Slot::EMPTY; 1024], 30_000_000_000).unwrap();
    let mut queue = std::collections::VecDeque::new();
    let now_ns = 0; // the engine's clock; acker-core never reads one

    for msg_id in ["line-1", "line-2"] {
        let mut edges = [0u64; 1]; // one destination copy
        if let SpoutEmit::Tracked { root, init } =
            spout.emit(Some(msg_id), &mut edges, now_ns).unwrap()
        {
            queue.push_back(Msg::Tuple(Anchors::spout(root, edges[0]), 0));
            queue.push_back(Msg::Acker(init)); // the init may trail the data tuple: any order works
        }
    }
    while let Some(msg) = queue.pop_front() {
        match msg {
            Msg::Tuple(anchors, depth) => {
                let input = bolt.receive(&anchors).unwrap();
                let children = if depth == 0 { 2 } else { 0 };
                for _ in 0..children {
                    queue.push_back(Msg::Tuple(bolt.emit(&[input]).unwrap(), depth + 1));
                }
                queue.extend(bolt.ack(input).unwrap().into_iter().map(Msg::Acker));
            }
            Msg::Acker(m) => match acker.apply(m) {
                Ok(Decision::Pending) => {}
                Ok(d) => queue.push_back(Msg::Notice(m.root(), d)),
                Err(TableError::Full) => queue.push_back(Msg::Acker(m)), // back-pressure: retry later
                Err(e) => eprintln!("dropped bad acker message {m:?}: {e}"),
            },
            Msg::Notice(root, Decision::Completed { .. }) => {
                let done = spout.completed(root, now_ns).unwrap();
                println!("ack({}) after {} ns", done.msg_id, done.complete_latency_ns);
            }
            Msg::Notice(root, Decision::Failed { .. }) => {
                println!("fail({:?})", spout.failed(root))
            }
            // A bolt's reset-timeout (none in this example): the spout restarts the root's
            // clock; the tree is still alive, so it is neither acked nor failed.
            Msg::Notice(root, Decision::Reset { .. }) => {
                spout.reset(root, now_ns);
            }
            Msg::Notice(_, Decision::Pending) => {} // never queued (filtered at the acker)
        }
    }
    assert!(spout.is_empty() && acker.is_empty());
}
