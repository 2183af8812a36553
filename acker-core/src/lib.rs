//! # acker-core
//!
//! An allocation-free, `#![no_std]` implementation of Apache Storm's guaranteed-message-processing
//! mechanism: the acker that tracks every tuple tree with a 64-bit XOR ("ack val"), the bolt-side
//! anchoring that produces the XOR contributions, and the spout-side pending set that turns the
//! acker's decisions into `ack(msg_id)` / `fail(msg_id)` calls.
//!
//! Nothing here reads a clock, allocates, spawns or does I/O: time is an injected `now_ns`
//! (nanoseconds of the caller's clock, starting at 0) and randomness comes from seeded xoshiro
//! streams, so the same inputs always give the same outputs.
//!
//! ## Module map
//!
//! | module | what it holds |
//! | --- | --- |
//! | [`ids`] | [`RootId`], [`EdgeId`], [`TaskId`] and the seeded, never-zero [`IdGenerator`] |
//! | [`message`] | the messages into an acker ([`AckerMessage`]) and its decisions ([`Decision`]) |
//! | [`table`] | [`AckerTable`]: the single-owner acker table, 20 bytes a root, fixed capacity |
//! | [`shared`] | [`SharedAckerTable`]: the same table, linearizable against [`AckerTable`], callable from many threads through `&self` (one spin-lock bit per slot; see its module docs) |
//! | [`routing`] | [`acker_index`]: which acker task owns a root |
//! | [`anchor`] | bolt side: [`Anchors`] carried by a tuple; [`InputAnchors`] (state kept in the input) or the [`InputTracker`] (a bounded table) anchor emits and ack inputs |
//! | [`pending`] | spout side: [`SpoutPending`], max spout pending, timeouts and complete latency |
//! | `planted` | only with the feature `planted-bugs` (never in a normal build): bugs planted at run time, to check that each verification layer catches its own |
//!
//! ## Embedding
//!
//! See `examples/embed.rs` for an engine driving the table and anchoring from its own message
//! loop.
#![no_std]
#![deny(missing_docs)]
// One audited `unsafe` block: the prefetch hint of both tables' `apply_batch` (table.rs, `prefetch`).
#![deny(unsafe_code)]

/// A planted-bug hook (see `planted`, feature `planted-bugs`): `planted!(Plant => statements)`
/// runs the statements when that plant is selected, `planted!(Plant)` says whether it is. Without
/// the feature the first is nothing and the second is `false`: no cost in a normal build.
macro_rules! planted {
    ($plant:ident) => {{
        #[cfg(feature = "planted-bugs")]
        let on = $crate::planted::active($crate::planted::Plant::$plant);
        #[cfg(not(feature = "planted-bugs"))]
        let on = false;
        on
    }};
    ($plant:ident => $($then:tt)*) => {
        #[cfg(feature = "planted-bugs")]
        if $crate::planted::active($crate::planted::Plant::$plant) {
            $($then)*
        }
    };
}

pub mod anchor;
pub mod ids;
pub mod message;
pub mod pending;
#[cfg(feature = "planted-bugs")]
pub mod planted;
pub mod routing;
pub mod shared;
mod sync;
pub mod table;

pub use anchor::{
    AnchorError, Anchors, InputAnchors, InputHandle, InputMessages, InputSlot, InputTracker,
};
pub use ids::{EdgeId, IdGenerator, RootId, TaskId};
pub use message::{AckerMessage, Decision};
pub use pending::{
    Completed, PendingError, PendingSlot, SpoutConfig, SpoutEmit, SpoutPending, TimedOut,
};
pub use routing::acker_index;
pub use shared::{SharedAckerTable, SharedArrays, SharedSlots, SharedStorage, SlotsLengthMismatch};
pub use table::{AckerTable, ConfigError, EntryView, Slot, TableError};
