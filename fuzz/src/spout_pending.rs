//! The `spout_pending` target: emits, acker decisions, resets, timeouts and late or unknown
//! messages against `acker_core::SpoutPending` and a `BTreeMap` reference model.
//!
//! The model restates `acker_core::pending` (module docs): an emit without a message id is
//! `Untracked` and writes no edge id; with zero ackers a tracked emit is `AckedAtOnce`; at max
//! spout pending the emit is refused with the message id handed back; otherwise a fresh root
//! (non-zero, not pending) and one non-zero edge id per copy, and an init carrying their XOR and
//! the spout task. `Completed` / `Failed` for a pending root hand out its message id (and the
//! complete latency, `now - emit`), for any other root they are ignored and counted; `Reset`
//! restarts a pending root's timeout. A tick at `now` times out, once each, the roots whose emit
//! or last reset lies in a timeout period at least two periods before the latest tick's.
//!
//! Oracles: every result and counter equals the model's; each message id gets exactly one
//! `ack` or `fail` (none twice, and at the end every message id is either decided once or still
//! pending); max spout pending is never exceeded.

use std::collections::BTreeMap;

use acker_core::{
    AckerMessage, PendingError, PendingSlot, RootId, SpoutConfig, SpoutEmit, SpoutPending,
};
use arbitrary::Arbitrary;

/// One operation on the spout side.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum SpoutOp {
    /// `emit` to `copies % 5` tasks, with a fresh message id or without one.
    Emit {
        /// With a message id.
        tracked: bool,
        /// Destination copies, `% 5`.
        copies: u8,
    },
    /// The acker's `Completed` for a root.
    Completed(Target),
    /// The acker's `Failed` for a root.
    Failed(Target),
    /// The acker's `Reset` for a root.
    Reset(Target),
    /// The clock moves forward `delta_ns` ns.
    Advance {
        /// Nanoseconds.
        delta_ns: u16,
    },
    /// `tick(now)`, taking at most `take` timed-out message ids from the iterator (255 means
    /// all of them); the rest time out at a later tick.
    Tick {
        /// How many timed-out ids to take before dropping the iterator.
        take: u8,
    },
}

/// Which root a decision names.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum Target {
    /// The `n % emitted`-th root ever emitted (pending, or already decided: a late message).
    Emitted(u8),
    /// Any root id (almost surely unknown).
    Raw(u64),
}

/// A whole `spout_pending` input.
#[derive(Arbitrary, Clone, Debug)]
pub struct SpoutInput {
    /// Max spout pending is `max_spout_pending % 17` (0 is a config error).
    pub max_spout_pending: u8,
    /// Extra storage slots beyond max spout pending: `extra_slots % 17`; with `short_storage`
    /// the storage has one slot fewer than max spout pending (a config error).
    pub extra_slots: u8,
    /// Storage one slot short of max spout pending.
    pub short_storage: bool,
    /// Number of acker tasks, `% 3` (0 is at-most-once).
    pub num_ackers: u8,
    /// Message timeout `None`, or `Some(t % 100)` ns (`Some(0)` is a config error).
    pub timeout_ns: Option<u8>,
    /// Seed of the id stream.
    pub seed: u64,
    /// Operations, in order.
    pub ops: Vec<SpoutOp>,
}

/// The spout task in the config.
pub const SPOUT_TASK: u16 = 4;

#[derive(Clone, Copy, Debug)]
struct ModelPending {
    msg_id: u32,
    emit_ns: u64,
    epoch: u64,
}

/// Runs one `spout_pending` input.
///
/// # Panics
/// At the first difference from the model or broken oracle; the message names the operation.
pub fn spout_pending(input: &SpoutInput) {
    let max = usize::from(input.max_spout_pending % 17);
    let slots = if input.short_storage {
        max.saturating_sub(1)
    } else {
        max + usize::from(input.extra_slots % 17)
    };
    let timeout = input.timeout_ns.map(|t| u64::from(t % 100));
    let config = SpoutConfig {
        spout_task: SPOUT_TASK,
        num_ackers: usize::from(input.num_ackers % 3),
        max_spout_pending: max,
        message_timeout_ns: timeout,
        seed: input.seed,
    };
    let valid = max >= 1 && slots >= max && timeout != Some(0);
    let mut p: SpoutPending<u32, Vec<PendingSlot<u32>>> =
        match SpoutPending::new(vec![PendingSlot::default(); slots], config) {
            Ok(p) => {
                assert!(valid, "invalid config accepted: {config:?}, {slots} slots");
                p
            }
            Err(e) => {
                assert!(!valid, "valid config refused: {config:?}, {slots} slots");
                assert_eq!(e, PendingError::Config);
                return;
            }
        };
    let epoch_of = |now: u64| timeout.map_or(0, |t| now / t);

    let mut model: BTreeMap<RootId, ModelPending> = BTreeMap::new();
    let mut emitted: Vec<RootId> = Vec::new();
    // Per message id: how many acks and fails the spout was told to call.
    let mut outcomes: BTreeMap<u32, (u32, u32)> = BTreeMap::new();
    let mut next_msg_id = 0u32;
    let mut ignored = 0u64;
    let mut timed_out = 0u64;
    let mut clock_epoch = 0u64;
    let mut now = 0u64;

    for (i, op) in input.ops.iter().enumerate() {
        let ctx = format!("op #{i} {op:?} at {now} ns");
        match *op {
            SpoutOp::Emit { tracked, copies } => {
                let n = usize::from(copies % 5);
                let mut edges = [0u64; 4];
                let msg_id = tracked.then_some(next_msg_id);
                let got = p.emit(msg_id, &mut edges[..n], now);
                match msg_id {
                    None => {
                        assert_eq!(got, Ok(SpoutEmit::Untracked), "{ctx}");
                        assert_eq!(edges, [0; 4], "{ctx}: untracked emit wrote edge ids");
                    }
                    Some(id) if config.num_ackers == 0 => {
                        assert_eq!(got, Ok(SpoutEmit::AckedAtOnce { msg_id: id }), "{ctx}");
                        assert_eq!(edges, [0; 4], "{ctx}: untracked emit wrote edge ids");
                        next_msg_id += 1;
                        outcomes.entry(id).or_default().0 += 1;
                    }
                    Some(id) if model.len() >= max => {
                        assert_eq!(
                            got,
                            Err(PendingError::MaxSpoutPending { msg_id: id }),
                            "{ctx}"
                        );
                    }
                    Some(id) => {
                        next_msg_id += 1;
                        let Ok(SpoutEmit::Tracked { root, init }) = got else {
                            panic!("{ctx}: tracked emit gave {got:?}")
                        };
                        assert_ne!(root, 0, "{ctx}: root id 0");
                        assert!(
                            !model.contains_key(&root),
                            "{ctx}: root {root} already pending"
                        );
                        assert!(edges[..n].iter().all(|&e| e != 0), "{ctx}: edge id 0");
                        let xor = edges[..n].iter().fold(0, |a, e| a ^ e);
                        assert_eq!(
                            init,
                            AckerMessage::Init {
                                root,
                                xor,
                                spout_task: SPOUT_TASK
                            },
                            "{ctx}: init"
                        );
                        model.insert(
                            root,
                            ModelPending {
                                msg_id: id,
                                emit_ns: now,
                                epoch: epoch_of(now),
                            },
                        );
                        emitted.push(root);
                        outcomes.entry(id).or_default();
                    }
                }
            }
            SpoutOp::Completed(t) => {
                let root = target(t, &emitted);
                let got = p.completed(root, now);
                match model.remove(&root) {
                    Some(e) => {
                        let c =
                            got.unwrap_or_else(|| panic!("{ctx}: pending root {root} not acked"));
                        assert_eq!(c.msg_id, e.msg_id, "{ctx}: message id");
                        assert_eq!(c.complete_latency_ns, now - e.emit_ns, "{ctx}: latency");
                        outcomes.entry(e.msg_id).or_default().0 += 1;
                    }
                    None => {
                        assert_eq!(got, None, "{ctx}: root {root} not pending");
                        ignored += 1;
                    }
                }
            }
            SpoutOp::Failed(t) => {
                let root = target(t, &emitted);
                let got = p.failed(root);
                match model.remove(&root) {
                    Some(e) => {
                        assert_eq!(got, Some(e.msg_id), "{ctx}");
                        outcomes.entry(e.msg_id).or_default().1 += 1;
                    }
                    None => {
                        assert_eq!(got, None, "{ctx}: root {root} not pending");
                        ignored += 1;
                    }
                }
            }
            SpoutOp::Reset(t) => {
                let root = target(t, &emitted);
                let got = p.reset(root, now);
                match model.get_mut(&root) {
                    Some(e) => {
                        assert!(got, "{ctx}: pending root {root} not reset");
                        e.epoch = epoch_of(now);
                    }
                    None => {
                        assert!(!got, "{ctx}: root {root} not pending but reset");
                        ignored += 1;
                    }
                }
            }
            SpoutOp::Advance { delta_ns } => now += u64::from(delta_ns),
            SpoutOp::Tick { take } => {
                clock_epoch = clock_epoch.max(epoch_of(now));
                let expired: BTreeMap<u32, RootId> = if timeout.is_some() {
                    model
                        .iter()
                        .filter(|(_, e)| clock_epoch >= e.epoch + 2)
                        .map(|(&r, e)| (e.msg_id, r))
                        .collect()
                } else {
                    BTreeMap::new()
                };
                let got: Vec<u32> = if take == u8::MAX {
                    p.tick(now).collect()
                } else {
                    p.tick(now).take(usize::from(take)).collect()
                };
                let want_n = if take == u8::MAX {
                    expired.len()
                } else {
                    expired.len().min(usize::from(take))
                };
                assert_eq!(
                    got.len(),
                    want_n,
                    "{ctx}: timed out {got:?}, expired {expired:?}"
                );
                for id in &got {
                    let root = expired
                        .get(id)
                        .unwrap_or_else(|| panic!("{ctx}: {id} timed out, expired {expired:?}"));
                    model.remove(root);
                    outcomes.entry(*id).or_default().1 += 1;
                    timed_out += 1;
                }
            }
        }
        assert_eq!(p.len(), model.len(), "{ctx}: pending");
        assert!(p.len() <= max, "{ctx}: {} pending above max {max}", p.len());
        assert_eq!(p.is_full(), model.len() >= max, "{ctx}: is_full");
        assert_eq!(p.ignored(), ignored, "{ctx}: ignored");
        assert_eq!(p.timed_out(), timed_out, "{ctx}: timed out");
        for &r in model.keys() {
            assert!(p.contains(r), "{ctx}: pending root {r} not found");
        }
        for (id, &(acks, fails)) in &outcomes {
            assert!(
                acks + fails <= 1,
                "{ctx}: message id {id}: {acks} acks, {fails} fails"
            );
        }
    }
    // Every message id is decided exactly once or still pending.
    let still: BTreeMap<u32, RootId> = model.iter().map(|(&r, e)| (e.msg_id, r)).collect();
    for (id, &(acks, fails)) in &outcomes {
        let n = acks + fails + u32::from(still.contains_key(id));
        assert_eq!(
            n,
            1,
            "message id {id}: {acks} acks, {fails} fails, pending {}",
            still.contains_key(id)
        );
    }
    // With timeouts on, a tick far enough ahead fails everything still pending, once each.
    if timeout.is_some() {
        let far = now + 3 * timeout.unwrap_or(1);
        let mut got: Vec<u32> = p.tick(far).collect();
        got.sort_unstable();
        assert_eq!(
            got,
            still.keys().copied().collect::<Vec<_>>(),
            "final timeout"
        );
        assert!(p.is_empty(), "final timeout left {} pending", p.len());
    }
}

fn target(t: Target, emitted: &[RootId]) -> RootId {
    match t {
        Target::Emitted(n) if !emitted.is_empty() => emitted[usize::from(n) % emitted.len()],
        Target::Emitted(n) => u64::from(n),
        Target::Raw(r) => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emits_decisions_and_timeouts_agree() {
        let mut ops = Vec::new();
        for k in 0..30u8 {
            ops.push(SpoutOp::Emit {
                tracked: k % 7 != 0,
                copies: k,
            });
            ops.push(SpoutOp::Advance { delta_ns: 13 });
            match k % 5 {
                0 => ops.push(SpoutOp::Completed(Target::Emitted(k))),
                1 => ops.push(SpoutOp::Failed(Target::Emitted(k / 2))),
                2 => ops.push(SpoutOp::Reset(Target::Emitted(k))),
                3 => ops.push(SpoutOp::Tick { take: k % 2 }),
                _ => ops.push(SpoutOp::Completed(Target::Raw(u64::from(k)))),
            }
        }
        for (max, ackers, timeout) in [
            (4, 1, Some(50)),
            (16, 2, None),
            (3, 0, Some(7)),
            (0, 1, Some(5)),
        ] {
            spout_pending(&SpoutInput {
                max_spout_pending: max,
                extra_slots: 3,
                short_storage: false,
                num_ackers: ackers,
                timeout_ns: timeout,
                seed: 1,
                ops: ops.clone(),
            });
        }
    }
}
