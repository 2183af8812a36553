//! cargo-fuzz target `tuple_trees`: see `acker_fuzz::tuple_trees`.
#![no_main]

use acker_fuzz::tuple_trees::{tuple_trees, TreeInput};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: TreeInput| {
    tuple_trees(&input);
});
