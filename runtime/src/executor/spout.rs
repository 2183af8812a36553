//! The spout task's executor.

use hdrhistogram::Histogram;

use crate::api::{Spout, SpoutOutputCollector, SpoutState};
use crate::message::{Notice, Outbox};

/// A spout task's executor (Storm's `SpoutExecutor`).
pub struct SpoutExecutor {
    pub(super) user: Box<dyn Spout>,
    /// Task id, pending set, router, counters, acker route and buffers: what the collector
    /// handed to `next_tuple` works with.
    pub(super) state: SpoutState,
    pub(super) latency_ns: Histogram<u64>,
    /// Complete latencies not yet in `latency_ns`: a run of `.1` equal values `.0` (notices
    /// handed over in one shell turn for roots emitted in one turn share a latency), recorded
    /// as one `saturating_record_n` when a different value arrives or the histogram is read
    /// ([`latency`](Self::latency)): the same histogram as one record per notice, for a
    /// compare and an add instead of a histogram record on most notices.
    pub(super) latency_run: (u64, u64),
}

impl SpoutExecutor {
    #[inline]
    pub(super) fn next_tuple(&mut self, now_ns: u64, out: &mut Outbox) -> bool {
        if self.state.pending.is_full() {
            return false;
        }
        {
            let mut c = SpoutOutputCollector {
                now_ns,
                spout: &mut self.state,
                out,
            };
            self.user.next_tuple(&mut c);
        }
        let s = &mut self.state;
        for i in 0..s.acked_at_once.len() {
            let id = s.acked_at_once[i];
            self.user.ack(id);
            s.counters.acked += 1;
        }
        s.acked_at_once.clear();
        true
    }

    pub(super) fn notice(&mut self, notice: Notice, now_ns: u64) {
        self.notice_inlined(notice, now_ns);
    }

    /// [`notice`](Self::notice), always inlined (the copy in a loop over several notices).
    #[inline(always)]
    pub(super) fn notice_inlined(&mut self, notice: Notice, now_ns: u64) {
        match notice {
            Notice::Completed { root } => match self.state.pending.completed(root, now_ns) {
                Some(c) => {
                    let v = c.complete_latency_ns.max(1);
                    if v == self.latency_run.0 {
                        self.latency_run.1 += 1;
                    } else {
                        self.flush_latency_run();
                        self.latency_run = (v, 1);
                    }
                    self.state.counters.acked += 1;
                    self.user.ack(c.msg_id);
                }
                None => self.state.counters.ignored += 1,
            },
            Notice::Failed { root } => match self.state.pending.failed(root) {
                Some(id) => {
                    self.state.counters.failed += 1;
                    self.user.fail(id);
                }
                None => self.state.counters.ignored += 1,
            },
            Notice::Reset { root } => {
                if !self.state.pending.reset(root, now_ns) {
                    self.state.counters.ignored += 1;
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
        let counters = &mut self.state.counters;
        for id in self.state.pending.tick(now_ns) {
            counters.timed_out += 1;
            planted!(SpoutIgnoresTimeout => continue);
            user.fail(id);
        }
    }
}
