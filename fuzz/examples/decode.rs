//! Prints the decoded input of a fuzz target for a corpus or artifact file, as libFuzzer hands it
//! to the target (`arbitrary_take_rest`), and optionally runs it.
//!
//! `cargo run --release --example decode -- TARGET FILE [--run]`
use std::process::ExitCode;

use acker_fuzz::{decode_input, run_input};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        eprintln!("usage: decode TARGET FILE [--run]");
        return ExitCode::from(2);
    }
    let bytes = match std::fs::read(&args[1]) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("cannot read {}: {e}", args[1]);
            return ExitCode::from(2);
        }
    };
    match decode_input(&args[0], &bytes) {
        Some(text) => println!("{text}"),
        None => {
            eprintln!("unknown target {}", args[0]);
            return ExitCode::from(2);
        }
    }
    if args.get(2).map(String::as_str) == Some("--run") {
        run_input(&args[0], &bytes);
        println!("ran without a failure");
    }
    ExitCode::SUCCESS
}
