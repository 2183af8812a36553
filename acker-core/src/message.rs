//! The acker's protocol: what it receives and what it decides.
//!
//! These mirror the streams of Storm 2.x's `Acker` bolt: `__ack_init`, `__ack_ack`,
//! `__ack_fail`, `__ack_reset_timeout` in, and `Completed` / `Failed` / `Reset` notices out to the
//! spout task recorded by the init.

use crate::ids::{RootId, TaskId};

/// A message into an acker task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AckerMessage {
    /// From the spout when it emits a tracked tuple: `xor` is the XOR of the edge ids of every
    /// copy it emitted (0 when the tuple went to no task), `spout_task` the task to notify.
    Init {
        /// The tree's root id.
        root: RootId,
        /// XOR of the edge ids of every emitted copy.
        xor: u64,
        /// The spout task that emitted the tuple and hears the decision.
        spout_task: TaskId,
    },
    /// From a bolt acking an input: the input's edge id for this root XOR every edge id the bolt
    /// emitted anchored to that input.
    Ack {
        /// The tree's root id.
        root: RootId,
        /// The XOR contribution.
        xor: u64,
    },
    /// From a bolt failing an input: the whole tree fails (unless it completes first).
    Fail {
        /// The tree's root id.
        root: RootId,
    },
    /// From a bolt asking for more time (`collector.resetTimeout(tuple)` in Storm).
    ResetTimeout {
        /// The tree's root id.
        root: RootId,
    },
}

impl AckerMessage {
    /// The root id the message is about; it decides which acker task receives it
    /// (see [`crate::acker_index`]).
    #[inline]
    pub fn root(&self) -> RootId {
        match *self {
            AckerMessage::Init { root, .. }
            | AckerMessage::Ack { root, .. }
            | AckerMessage::Fail { root }
            | AckerMessage::ResetTimeout { root } => root,
        }
    }
}

/// What an acker decided about a root after one message.
///
/// A decision other than [`Decision::Pending`] names the spout task to notify; [`Decision::Completed`]
/// and [`Decision::Failed`] are final (the entry is removed, so the spout hears about a root at most
/// once), [`Decision::Reset`] keeps the entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Decision {
    /// Nothing to tell the spout yet (spout task unknown, or the tree is still in progress).
    Pending,
    /// The ack val reached 0 with the spout task known: send `Completed { root }` to `spout_task`.
    Completed {
        /// The spout task to notify.
        spout_task: TaskId,
    },
    /// The tree was failed and did not complete: send `Failed { root }` to `spout_task`.
    Failed {
        /// The spout task to notify.
        spout_task: TaskId,
    },
    /// A reset-timeout for a live tree: forward `Reset { root }` to `spout_task`.
    Reset {
        /// The spout task to notify.
        spout_task: TaskId,
    },
}
