//! cargo-fuzz target `spout_pending`: see `acker_fuzz::spout_pending`.
#![no_main]

use acker_fuzz::spout_pending::{spout_pending, SpoutInput};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: SpoutInput| spout_pending(&input));
