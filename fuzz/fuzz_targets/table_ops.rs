//! cargo-fuzz target `table_ops`: see `acker_fuzz::table_ops`.
#![no_main]

use acker_fuzz::table_ops::{table_ops, TableInput};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: TableInput| {
    table_ops(&input);
});
