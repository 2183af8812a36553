//! Small stock bolts: the identity and null bolts of the benchmark pipeline
//! (spout → identity bolt → null bolt), shared by `acker-run bench pipeline` and the tests.

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
