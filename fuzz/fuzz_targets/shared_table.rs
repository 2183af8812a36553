//! cargo-fuzz target `shared_table`: see `acker_fuzz::table_ops::shared_table`.
#![no_main]

use acker_fuzz::table_ops::{shared_table, TableInput};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: TableInput| {
    shared_table(&input);
});
