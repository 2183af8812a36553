//! The bolt task's executor.

use std::rc::Rc;

use acker_core::{IdGenerator, TaskId};

use crate::api::{Bolt, ExecutorCounters, Input, InputLedger, OutputCollector};
use crate::executor::router::{AckerRoute, Router};
use crate::message::{Outbox, Tuple};

/// A bolt task's executor (Storm's `BoltExecutor`). It keeps no table of open inputs: each
/// [`Input`] carries its own anchoring state (see there for dropped and expired inputs).
pub struct BoltExecutor {
    pub(super) task: TaskId,
    pub(super) user: Box<dyn Bolt>,
    /// Edge ids for anchored emits.
    pub(super) ids: IdGenerator,
    /// Shared with every input handed out: live and dropped counts, and the bolt's identity.
    pub(super) ledger: Rc<InputLedger>,
    /// How long an input lives: twice the message timeout (`None`: timeouts off, for ever).
    pub(super) input_ttl_ns: Option<u64>,
    pub(super) router: Router,
    pub(super) counters: ExecutorCounters,
    pub(super) dests: Vec<TaskId>,
    pub(super) ackers: AckerRoute,
}

impl BoltExecutor {
    pub(super) fn handle(&mut self, t: Tuple, now_ns: u64, out: &mut Outbox) {
        self.counters.executed += 1;
        let input = Input::received(t, now_ns, self.input_ttl_ns, &self.ledger);
        let mut c = OutputCollector {
            task: self.task,
            now_ns,
            input_ttl_ns: self.input_ttl_ns,
            ids: &mut self.ids,
            ledger: &self.ledger,
            router: &mut self.router,
            out,
            counters: &mut self.counters,
            dests: &mut self.dests,
            ackers: self.ackers,
        };
        self.user.execute(input, &mut c);
    }
}
