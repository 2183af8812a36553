//! The bolt task's executor.

use crate::api::{Bolt, BoltState, Input, OutputCollector};
use crate::message::{Outbox, Tuple};

/// A bolt task's executor (Storm's `BoltExecutor`). It keeps no table of open inputs: each
/// [`Input`] carries its own anchoring state (see there for dropped and expired inputs).
pub struct BoltExecutor {
    pub(super) user: Box<dyn Bolt>,
    /// Task id, edge ids, input ledger and ttl, router, counters, acker route: what the
    /// collector handed to `execute` works with.
    pub(super) state: BoltState,
}

impl BoltExecutor {
    pub(super) fn handle(&mut self, t: Tuple, now_ns: u64, out: &mut Outbox) {
        let s = &mut self.state;
        s.counters.executed += 1;
        let input = Input::received(t, now_ns, s.input_ttl_ns, &s.ledger);
        let mut c = OutputCollector {
            now_ns,
            bolt: s,
            out,
        };
        self.user.execute(input, &mut c);
    }

    /// [`handle`](Self::handle) for a tuple its owner keeps (its values and anchors are taken:
    /// see `Input::received_in_place`).
    #[inline(always)]
    pub(super) fn handle_in_place(&mut self, t: &mut Tuple, now_ns: u64, out: &mut Outbox) {
        let s = &mut self.state;
        s.counters.executed += 1;
        let input = Input::received_in_place(t, now_ns, s.input_ttl_ns, &s.ledger);
        let mut c = OutputCollector {
            now_ns,
            bolt: s,
            out,
        };
        self.user.execute(input, &mut c);
    }
}
