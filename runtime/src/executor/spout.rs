//! The spout task's executor.

use acker_core::{EdgeId, TaskId};
use hdrhistogram::Histogram;

use crate::api::{ExecutorCounters, Pending, Spout, SpoutOutputCollector};
use crate::executor::router::{AckerRoute, Router};
use crate::message::{MessageId, Notice, Outbox};

/// A spout task's executor (Storm's `SpoutExecutor`).
pub struct SpoutExecutor {
    pub(super) task: TaskId,
    pub(super) user: Box<dyn Spout>,
    pub(super) pending: Pending,
    pub(super) router: Router,
    pub(super) counters: ExecutorCounters,
    pub(super) latency_ns: Histogram<u64>,
    /// Complete latencies not yet in `latency_ns`: a run of `.1` equal values `.0` (notices
    /// handed over in one shell turn for roots emitted in one turn share a latency), recorded
    /// as one `saturating_record_n` when a different value arrives or the histogram is read
    /// ([`latency`](Self::latency)): the same histogram as one record per notice, for a
    /// compare and an add instead of a histogram record on most notices.
    pub(super) latency_run: (u64, u64),
    pub(super) dests: Vec<TaskId>,
    pub(super) edges: Vec<EdgeId>,
    pub(super) acked_at_once: Vec<MessageId>,
    pub(super) ackers: AckerRoute,
}

impl SpoutExecutor {
    #[inline]
    pub(super) fn next_tuple(&mut self, now_ns: u64, out: &mut Outbox) -> bool {
        if self.pending.is_full() {
            return false;
        }
        {
            let mut c = SpoutOutputCollector {
                task: self.task,
                now_ns,
                pending: &mut self.pending,
                router: &mut self.router,
                out,
                counters: &mut self.counters,
                dests: &mut self.dests,
                edges: &mut self.edges,
                acked_at_once: &mut self.acked_at_once,
                ackers: self.ackers,
            };
            self.user.next_tuple(&mut c);
        }
        for i in 0..self.acked_at_once.len() {
            let id = self.acked_at_once[i];
            self.user.ack(id);
            self.counters.acked += 1;
        }
        self.acked_at_once.clear();
        true
    }

    pub(super) fn notice(&mut self, notice: Notice, now_ns: u64) {
        match notice {
            Notice::Completed { root } => match self.pending.completed(root, now_ns) {
                Some(c) => {
                    let v = c.complete_latency_ns.max(1);
                    if v == self.latency_run.0 {
                        self.latency_run.1 += 1;
                    } else {
                        self.flush_latency_run();
                        self.latency_run = (v, 1);
                    }
                    self.counters.acked += 1;
                    self.user.ack(c.msg_id);
                }
                None => self.counters.ignored += 1,
            },
            Notice::Failed { root } => match self.pending.failed(root) {
                Some(id) => {
                    self.counters.failed += 1;
                    self.user.fail(id);
                }
                None => self.counters.ignored += 1,
            },
            Notice::Reset { root } => {
                if !self.pending.reset(root, now_ns) {
                    self.counters.ignored += 1;
                }
            }
        }
    }

    /// Records the pending run of equal latencies (see `latency_run`) into the histogram.
    #[inline(never)]
    fn flush_latency_run(&mut self) {
        let (v, n) = self.latency_run;
        if n > 0 {
            self.latency_ns.saturating_record_n(v, n);
            self.latency_run.1 = 0;
        }
    }

    /// The complete-latency histogram with every latency recorded so far.
    pub(super) fn latency(&mut self) -> &Histogram<u64> {
        self.flush_latency_run();
        &self.latency_ns
    }

    pub(super) fn tick(&mut self, now_ns: u64) {
        let user = &mut self.user;
        let counters = &mut self.counters;
        for id in self.pending.tick(now_ns) {
            counters.timed_out += 1;
            planted!(SpoutIgnoresTimeout => continue);
            user.fail(id);
        }
    }
}
