//! # acker-benches
//!
//! Benchmarks of acker-core's tables against the structures a Storm user or a Rust engine would
//! otherwise use, on one seeded op stream, plus the peers themselves, kept honest by a
//! differential test (`tests/differential.rs`): every peer gives the same decisions, errors and
//! lengths as [`acker_core::AckerTable`] on random message sequences, so none is faster by being
//! wrong.
//!
//! ## Module map
//!
//! | module | what it holds |
//! | --- | --- |
//! | [`peers`] | the [`AckerStructure`] trait (one acker task's table, `&mut self`) and its implementations: acker-core's [`AckerTable`](acker_core::AckerTable), the [`StormStyle`] rotating map, the rule-checking [`HashbrownAcker`], the lean [`HashbrownLean`] |
//! | [`shared`] | the [`SharedAckerStructure`] trait (`&self`, many threads) and its implementations: acker-core's [`SharedAckerTable`](acker_core::SharedAckerTable) ([`CoreShared`]) and the peers [`MutexHashbrown`], [`DashMapAcker`] |
//! | [`workload`] | [`Workload`]: W roots in flight, each tree an init plus k chained acks, in seeded random order, generated before timing; [`MessageSource`] produces the same stream message by message (the in-loop mode) |
//! | [`compare`] | runs every structure on the same op stream, checks that they agree, measures Mops/s and bytes per root ([`compare::Row`]) |
//!
//! The `acker-bench` binary (`cargo run --release -p acker-benches --bin acker-bench -- compare`)
//! prints the comparison; `benches/` holds the criterion suites of the same workloads.
#![deny(missing_docs)]

pub mod compare;
pub mod peers;
pub mod shared;
pub mod workload;

pub use peers::{AckerStructure, HashbrownAcker, HashbrownLean, StormStyle};
pub use shared::{CoreShared, CoreSharedBatch, DashMapAcker, MutexHashbrown, SharedAckerStructure};
pub use workload::{MessageSource, Workload, WorkloadConfig};
