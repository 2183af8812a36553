//! Planted bugs, for checking that each verification layer catches what it is meant to catch
//! (issue 16). Compiled only with the cargo feature `planted-bugs`, which no normal build
//! enables; without it the hooks do not exist and cost nothing.
//!
//! One plant at a time is chosen at run time with [`select`], so one build serves every plant.
//! The choice is a process-wide static (acker-core is `no_std`, and the hooks sit in code that
//! has no context to pass it through): a test or simulator run that selects a plant affects
//! every thread of its process until it selects another one or `None`.
//!
//! | plant | layer | what it breaks | meant to be caught by |
//! | --- | --- | --- | --- |
//! | [`Plant::SpoutIgnoresTimeout`] | runtime spout executor | a timed-out tree is dropped from pending without `fail(msg_id)` | the simulator's liveness oracle (search) |
//! | [`Plant::AckerDropsAck`] | runtime acker executor | the acker drops every ack whose root is a multiple of 16 | the simulator's fault-free oracle (search) |
//! | [`Plant::AckToWrongRoot`] | bolt side, [`InputAnchors::ack`](crate::InputAnchors::ack) | every root's ack XOR goes to the input's first root | the simulator, multi-anchoring shape (search) |
//! | [`Plant::InitOrOverCopies`] | spout side, [`SpoutPending::emit`](crate::SpoutPending::emit) | init XOR over copies with `\|=` for `^=` | the simulator, all-grouping shape (search) |
//! | [`Plant::SharedWeakAcquire`] | [`SharedAckerTable`](crate::SharedAckerTable) | the acquire that takes a slot's lock (pairing with the release that publishes a new entry) is relaxed | loom (`tests/loom.rs`) |
//! | [`Plant::PendingWrapLosesEntry`] | [`SpoutPending`](crate::SpoutPending) | backward-shift deletion stops at the wrap-around, losing the entry past the end | `tests/gaps.rs` (two-slot wrap-around) |

use core::sync::atomic::{AtomicU8, Ordering};

/// A planted bug of acker-core or of the runtime's executors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Plant {
    /// The spout executor drops a timed-out tree without calling `fail(msg_id)`.
    SpoutIgnoresTimeout = 1,
    /// The acker executor drops every `Ack` whose root is a multiple of 16 (one tree in 16
    /// never completes).
    AckerDropsAck = 2,
    /// [`InputAnchors::ack`](crate::InputAnchors::ack) sends every root's XOR to the input's
    /// first root.
    AckToWrongRoot = 3,
    /// [`SpoutPending::emit`](crate::SpoutPending::emit) ORs the copies' edge ids into the init
    /// XOR instead of XORing them.
    InitOrOverCopies = 4,
    /// [`SharedAckerTable`](crate::SharedAckerTable) takes a slot's lock with relaxed loads and
    /// CAS instead of acquire ones, so the entry a new insert published (release) may be read
    /// stale.
    SharedWeakAcquire = 5,
    /// [`SpoutPending`](crate::SpoutPending)'s backward-shift deletion stops where the probe run
    /// wraps past the end of the table: the entry after the wrap can no longer be found.
    PendingWrapLosesEntry = 6,
}

impl Plant {
    /// Every plant, in a fixed order.
    pub const ALL: [Plant; 6] = [
        Plant::SpoutIgnoresTimeout,
        Plant::AckerDropsAck,
        Plant::AckToWrongRoot,
        Plant::InitOrOverCopies,
        Plant::SharedWeakAcquire,
        Plant::PendingWrapLosesEntry,
    ];

    /// The kebab-case name (as `acker-sim --planted-bug` and the CI script take it).
    pub fn name(self) -> &'static str {
        match self {
            Plant::SpoutIgnoresTimeout => "spout-ignores-timeout",
            Plant::AckerDropsAck => "acker-drops-ack",
            Plant::AckToWrongRoot => "ack-to-wrong-root",
            Plant::InitOrOverCopies => "init-or-over-copies",
            Plant::SharedWeakAcquire => "shared-weak-acquire",
            Plant::PendingWrapLosesEntry => "pending-wrap-loses-entry",
        }
    }

    /// The plant named `name` (see [`name`](Self::name)), or `None`.
    pub fn from_name(name: &str) -> Option<Plant> {
        Plant::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// 0: no plant; otherwise a [`Plant`]'s discriminant.
static SELECTED: AtomicU8 = AtomicU8::new(0);

/// Selects the plant every hook in this process obeys from now on (`None`: none).
pub fn select(plant: Option<Plant>) {
    SELECTED.store(plant.map_or(0, |p| p as u8), Ordering::SeqCst);
}

/// The selected plant, if any.
pub fn selected() -> Option<Plant> {
    let v = SELECTED.load(Ordering::Relaxed);
    Plant::ALL.into_iter().find(|p| *p as u8 == v)
}

/// Whether `plant` is the selected one (what each hook asks).
#[inline]
pub fn active(plant: Plant) -> bool {
    SELECTED.load(Ordering::Relaxed) == plant as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_select_is_exclusive() {
        for p in Plant::ALL {
            assert_eq!(Plant::from_name(p.name()), Some(p));
        }
        assert_eq!(Plant::from_name("nope"), None);
        select(Some(Plant::AckerDropsAck));
        assert!(active(Plant::AckerDropsAck));
        assert!(!active(Plant::AckToWrongRoot));
        assert_eq!(selected(), Some(Plant::AckerDropsAck));
        select(None);
        assert_eq!(selected(), None);
        assert!(!active(Plant::AckerDropsAck));
    }
}
