//! Identifiers of the mechanism and the seeded generator that draws them.
//!
//! As in Storm, a tracked spout tuple gets a random non-zero 64-bit *root id*, and every copy of a
//! tuple sent to a task gets a random non-zero 64-bit *edge id*. The acker XORs edge ids into the
//! root's ack val; because every edge id enters the XOR exactly twice (once when the copy is
//! created, once when it is acked) the ack val returns to 0 exactly when the tree is done, up to
//! a 2^-64 chance of an accidental zero.

use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// The id of a tuple tree: the random non-zero id given to a tracked spout tuple. 0 is never a
/// valid root id (the acker table uses it to mark a free slot).
pub type RootId = u64;

/// The id of one copy of a tuple sent to one task: random and non-zero.
pub type EdgeId = u64;

/// A task index (spout task, bolt task or acker task).
///
/// It is 16 bits wide, so task ids range over `0..=65535`: the acker table keeps the spout task
/// and its flags together in 4 bytes of each 20-byte entry (Storm uses a Java `int`, but no real
/// topology comes near 65,536 tasks).
pub type TaskId = u16;

/// A seeded generator of non-zero 64-bit ids (xoshiro256++).
///
/// Each executor owns one, seeded from the run's seed and its own task id, so that its ids are
/// reproducible and independent of every other executor's. It never returns 0.
#[derive(Clone, Debug)]
pub struct IdGenerator {
    rng: Xoshiro256PlusPlus,
}

impl IdGenerator {
    /// A generator whose whole stream is fixed by `seed`.
    pub fn from_seed(seed: u64) -> Self {
        Self {
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        }
    }

    /// The next id: uniform over `1..=u64::MAX`.
    #[inline]
    pub fn next_id(&mut self) -> u64 {
        loop {
            let id = self.rng.next_u64();
            if id != 0 {
                return id;
            }
        }
    }
}
