//! Small stock bolts: the identity and null bolts of the benchmark pipeline
//! (spout → identity bolt → null bolt), shared by `acker-run bench pipeline` and the tests, and
//! the [`ThrowingBolt`] of the reliability experiment.

use crate::api::{BasicBolt, BasicOutputCollector, FailedException, Input};
use crate::values;

/// Re-emits the first value of its input on the default stream, anchored to the input (a
/// basic bolt, so the input is acked when `execute` returns). An input with no values is failed.
#[derive(Clone, Copy, Debug, Default)]
pub struct IdentityBolt;

impl BasicBolt for IdentityBolt {
    fn execute(
        &mut self,
        input: &Input,
        c: &mut BasicOutputCollector<'_, '_>,
    ) -> Result<(), FailedException> {
        let v = input
            .values()
            .first()
            .cloned()
            .ok_or_else(|| FailedException::new("identity bolt: input has no value"))?;
        c.emit(values![v])
            .map_err(|e| FailedException::new(e.to_string()))?;
        Ok(())
    }
}

/// Drops its input; the basic-bolt adapter acks it.
#[derive(Clone, Copy, Debug, Default)]
pub struct NullBolt;

impl BasicBolt for NullBolt {
    fn execute(
        &mut self,
        _input: &Input,
        _c: &mut BasicOutputCollector<'_, '_>,
    ) -> Result<(), FailedException> {
        Ok(())
    }
}

/// Where a [`ThrowingBolt`] throws for one input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Throw {
    /// No exception: re-emit and ack.
    No,
    /// Throw before emitting: nothing is emitted, the input is failed.
    BeforeEmit,
    /// Throw after emitting: the output is out (anchored to the input), the input is failed.
    AfterEmit,
}

/// A pass-through basic bolt that can be told to throw: re-emits its input's values anchored
/// to the input, as [`IdentityBolt`] does with the first one, unless `decide(input)` says
/// otherwise. Throwing is Storm's `FailedException` in a `BaseBasicBolt`: the basic-bolt adapter
/// fails the input (its tree is failed at once, and the spout replays it); what was emitted before
/// the throw stays emitted. The seed's reliability experiment throws before or after the emit.
pub struct ThrowingBolt<F> {
    decide: F,
}

impl<F: FnMut(&Input) -> Throw> ThrowingBolt<F> {
    /// A bolt asking `decide` for each input whether and where to throw.
    pub fn new(decide: F) -> Self {
        Self { decide }
    }
}

impl<F: FnMut(&Input) -> Throw> BasicBolt for ThrowingBolt<F> {
    fn execute(
        &mut self,
        input: &Input,
        c: &mut BasicOutputCollector<'_, '_>,
    ) -> Result<(), FailedException> {
        let throw = (self.decide)(input);
        if throw == Throw::BeforeEmit {
            return Err(FailedException::new("throwing bolt: exception before emit"));
        }
        c.emit(input.values().clone())
            .map_err(|e| FailedException::new(e.to_string()))?;
        if throw == Throw::AfterEmit {
            return Err(FailedException::new("throwing bolt: exception after emit"));
        }
        Ok(())
    }
}
