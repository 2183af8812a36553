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
//! | [`spout_pending`] | `spout_pending` | `SpoutPending` emits, decisions, resets, timeouts, late messages against a model; one ack or fail per message id; max spout pending |
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod spout_pending;
pub mod table_ops;
pub mod tuple_trees;
