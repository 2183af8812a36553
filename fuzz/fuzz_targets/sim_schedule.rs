//! cargo-fuzz target `sim_schedule`: see `acker_fuzz::sim_schedule`.
#![no_main]

use acker_fuzz::sim_schedule::{sim_schedule, SimInput};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: SimInput| {
    sim_schedule(&input);
});
