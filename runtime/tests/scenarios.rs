//! Scenario tests on the executors, through the single-threaded [`LocalShell`].

use std::sync::{Arc, Mutex};

use acker_runtime::local::LocalShell;
use acker_runtime::{
    values, Bolt, Config, Input, MessageId, OutputCollector, Spout, SpoutOutputCollector, TaskKind,
    TopologyBuilder,
};

#[derive(Default)]
struct Log {
    acked: Vec<MessageId>,
    failed: Vec<MessageId>,
}

struct Roots {
    next: u64,
    n: u64,
    log: Arc<Mutex<Log>>,
}
impl Spout for Roots {
    fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
        if self.next < self.n {
            c.emit(values![self.next as i64], Some(self.next)).unwrap();
            self.next += 1;
        }
    }
    fn ack(&mut self, id: MessageId) {
        self.log.lock().unwrap().acked.push(id);
    }
    fn fail(&mut self, id: MessageId) {
        self.log.lock().unwrap().failed.push(id);
    }
}

/// Acks its input and emits a derived tuple, anchored or not.
struct Filter {
    anchored: bool,
}
impl Bolt for Filter {
    fn execute(&mut self, input: Input, c: &mut OutputCollector<'_>) {
        let v = input.values()[0].clone();
        if self.anchored {
            c.emit(&[&input], values![v]).unwrap();
        } else {
            c.emit(&[], values![v]).unwrap();
        }
        c.ack(input).unwrap();
    }
}

/// Fails everything.
struct Compute;
impl Bolt for Compute {
    fn execute(&mut self, input: Input, c: &mut OutputCollector<'_>) {
        c.fail(input).unwrap();
    }
}

fn filter_compute(anchored: bool) -> (Log, acker_runtime::ExecutorCounters) {
    let log = Arc::new(Mutex::new(Log::default()));
    let l2 = log.clone();
    let mut b = TopologyBuilder::new();
    b.set_spout(
        "spout",
        move || Roots {
            next: 0,
            n: 5,
            log: l2.clone(),
        },
        1,
    )
    .output_fields(&["n"]);
    b.set_bolt("filter", move || Filter { anchored }, 2)
        .shuffle_grouping("spout")
        .output_fields(&["n"]);
    b.set_bolt("compute", || Compute, 2)
        .shuffle_grouping("filter");
    let plan = b.build().unwrap().plan(&Config::default()).unwrap();
    let mut shell = LocalShell::new(&plan).unwrap();
    for _ in 0..10 {
        shell.step();
    }
    let spout = shell.counters(TaskKind::Spout);
    shell.shutdown();
    let log = std::mem::take(&mut *log.lock().unwrap());
    (log, spout)
}

#[test]
fn unanchored_emit_lets_root_complete_despite_downstream_failure() {
    let (log, spout) = filter_compute(false);
    assert_eq!(log.acked, vec![0, 1, 2, 3, 4]);
    assert!(log.failed.is_empty());
    assert_eq!((spout.acked, spout.failed, spout.timed_out), (5, 0, 0));
}

#[test]
fn anchored_emit_fails_every_root_once() {
    let (mut log, spout) = filter_compute(true);
    assert!(log.acked.is_empty());
    log.failed.sort();
    assert_eq!(log.failed, vec![0, 1, 2, 3, 4]);
    assert_eq!((spout.acked, spout.failed, spout.ignored), (0, 5, 0));
}
