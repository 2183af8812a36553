//! # acker-fuzz
//!
//! Harnesses for the cargo-fuzz targets in `fuzz_targets/`: each decodes its input with
//! `arbitrary` (total: any byte string decodes to some input, none is rejected by a panic in the
//! harness) and checks the acker-core types against plain reference models. They live in this
//! library so the seed corpus and the regressions can also be replayed by `cargo test`.
//!
//! ## Module map
//!
//! | module | target | what it checks |
//! | --- | --- | --- |
//! | [`table_ops`] | `table_ops`, `shared_table` | `AckerTable` operation sequences against a `BTreeMap` model of the acker rules |
//! | [`tuple_trees`] | `tuple_trees` | random tuple DAGs built with `InputTracker` / `Anchors` / `SpoutPending`, messages delivered in fuzzed order with duplicates and drops, against a symbolic acker and the tree rule |
//! | [`sim_schedule`] | `sim_schedule` | `acker-sim` scenarios and fault schedules from the input: every simulator oracle holds, two runs agree |
//! | [`spout_pending`] | `spout_pending` | `SpoutPending` emits, decisions, resets, timeouts, late messages against a model; one ack or fail per message id; max spout pending |
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod sim_schedule;
pub mod spout_pending;
pub mod table_ops;
pub mod tuple_trees;

use arbitrary::{Arbitrary, Unstructured};

/// The names of the fuzz targets this library serves.
pub const TARGETS: &[&str] = &[
    "table_ops",
    "tuple_trees",
    "spout_pending",
    "shared_table",
    "sim_schedule",
];

/// Decodes `bytes` as libFuzzer hands them to a `fuzz_target!` taking `T`
/// (`arbitrary_take_rest`); `None` when arbitrary refuses them (the target then skips the input).
pub fn decode<'a, T: Arbitrary<'a>>(bytes: &'a [u8]) -> Option<T> {
    T::arbitrary_take_rest(Unstructured::new(bytes)).ok()
}

/// The decoded input of `target` for `bytes`, pretty-printed; `None` for an unknown target.
pub fn decode_input(target: &str, bytes: &[u8]) -> Option<String> {
    fn show<'a, T: Arbitrary<'a> + core::fmt::Debug>(bytes: &'a [u8]) -> String {
        match decode::<T>(bytes) {
            Some(t) => format!("{t:#?}"),
            None => "(not decodable: the target skips it)".to_string(),
        }
    }
    Some(match target {
        "table_ops" => show::<table_ops::TableInput>(bytes),
        "tuple_trees" => show::<tuple_trees::TreeInput>(bytes),
        "spout_pending" => show::<spout_pending::SpoutInput>(bytes),
        "shared_table" => show::<table_ops::TableInput>(bytes),
        "sim_schedule" => match decode::<sim_schedule::SimInput>(bytes) {
            Some(i) => format!(
                "{i:#?}\nreplay: {}",
                acker_sim::search::replay_command(&i.scenario())
            ),
            None => "(not decodable: the target skips it)".to_string(),
        },
        _ => return None,
    })
}

/// Runs `bytes` through `target` as the fuzz target does (unknown targets and undecodable
/// inputs do nothing).
///
/// # Panics
/// When the input breaks an oracle, as the fuzz target would.
pub fn run_input(target: &str, bytes: &[u8]) {
    match target {
        "table_ops" => {
            if let Some(i) = decode(bytes) {
                table_ops::table_ops(&i);
            }
        }
        "tuple_trees" => {
            if let Some(i) = decode(bytes) {
                tuple_trees::tuple_trees(&i);
            }
        }
        "spout_pending" => {
            if let Some(i) = decode(bytes) {
                spout_pending::spout_pending(&i);
            }
        }
        "shared_table" => {
            if let Some(i) = decode(bytes) {
                table_ops::shared_table(&i);
            }
        }
        "sim_schedule" => {
            if let Some(i) = decode(bytes) {
                sim_schedule::sim_schedule(&i);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every committed seed (`corpus/TARGET/`) and regression (`regressions/TARGET/`) still
    /// passes its target.
    #[test]
    fn seeds_and_regressions_pass() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut ran = 0;
        for t in TARGETS {
            for dir in ["corpus", "regressions"] {
                let Ok(entries) = std::fs::read_dir(root.join(dir).join(t)) else {
                    continue;
                };
                for e in entries {
                    let path = e.expect("readable directory entry").path();
                    let bytes = std::fs::read(&path).expect("readable seed file");
                    run_input(t, &bytes);
                    ran += 1;
                }
            }
        }
        assert!(ran >= TARGETS.len(), "only {ran} seed files found");
    }
}
