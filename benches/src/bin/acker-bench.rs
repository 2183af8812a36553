//! `acker-bench`: runs acker-core's tables and their peers on the same op stream and prints
//! Mops/s, bytes per root and the ratios.
//!
//! ```text
//! acker-bench compare [--quick] [--json] [--windows 1000,100000,1000000] [--reps N]
//!                     [--ops N] [--threads 1,2] [--acks-per-tree K] [--seed S]
//! ```

use std::alloc::System;
use std::process::ExitCode;

use acker_benches::compare::{
    run_compare, CompareConfig, CompareReport, Measurement, SHARED_TARGET_LOAD_PERCENT,
    TARGET_LOAD_PERCENT,
};
use clap::{Parser, Subcommand};
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Bytes the process has allocated and not freed.
fn live_bytes() -> usize {
    let s = GLOBAL.stats();
    (s.bytes_allocated as isize - s.bytes_deallocated as isize + s.bytes_reallocated).max(0)
        as usize
}

#[derive(Parser)]
#[command(
    name = "acker-bench",
    version,
    about = "Benchmarks acker-core's acker tables against Storm-style, hashbrown, Mutex<hashbrown> and dashmap peers"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run every structure on the same op stream (W roots in flight, init + k chained acks per
    /// tree, seeded random order) and print Mops/s, bytes per root and ratios.
    Compare(CompareArgs),
}

#[derive(clap::Args)]
struct CompareArgs {
    /// Small runs (fewer messages, one repetition): finishes in well under a minute.
    #[arg(long)]
    quick: bool,
    /// Print `{"rows": [{"structure", "window", "mops", "bytes_per_root"[, "threads"]}, ...]}`.
    #[arg(long)]
    json: bool,
    /// Roots in flight (W), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1000,100000,1000000")]
    windows: Vec<usize>,
    /// Repetitions of each run; the median is reported [default: 3, 1 with --quick].
    #[arg(long)]
    reps: Option<usize>,
    /// Timed messages per run [default: max(8M, 4W); 2M with --quick].
    #[arg(long)]
    ops: Option<usize>,
    /// Thread counts for the shared tables, comma-separated (0 alone skips them).
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    threads: Vec<usize>,
    /// Acks per tree (k).
    #[arg(long, default_value_t = 4)]
    acks_per_tree: usize,
    /// Seed of the op streams.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Run only these structures (comma-separated names, e.g. for a profiler).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
}

static OPS_OVERRIDE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();

fn ops_full(window: usize) -> usize {
    OPS_OVERRIDE
        .get()
        .copied()
        .unwrap_or((8_000_000).max(4 * window))
}

fn ops_quick(_window: usize) -> usize {
    OPS_OVERRIDE.get().copied().unwrap_or(2_000_000)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Compare(args) => compare(args),
    }
}

fn compare(args: CompareArgs) -> ExitCode {
    if args.windows.is_empty() || args.windows.contains(&0) {
        eprintln!("acker-bench: --windows needs values of at least 1");
        return ExitCode::from(2);
    }
    if args.acks_per_tree == 0 {
        eprintln!("acker-bench: --acks-per-tree must be at least 1");
        return ExitCode::from(2);
    }
    if let Some(ops) = args.ops {
        if ops == 0 {
            eprintln!("acker-bench: --ops must be at least 1");
            return ExitCode::from(2);
        }
        let _ = OPS_OVERRIDE.set(ops);
    }
    let threads: Vec<usize> = args.threads.iter().copied().filter(|&t| t > 0).collect();
    let config = CompareConfig {
        windows: args.windows.clone(),
        ops_for_window: if args.quick { ops_quick } else { ops_full },
        repetitions: args.reps.unwrap_or(if args.quick { 1 } else { 3 }).max(1),
        threads,
        acks_per_tree: args.acks_per_tree,
        seed: args.seed,
        live_bytes: Some(live_bytes),
        only: args.only.clone(),
    };
    let json = args.json;
    let result = run_compare(&config, |m| {
        if !json {
            eprintln!(
                "  ran {:<26} W={:<8} threads={:<4} {:>8.2} Mops/s",
                m.structure,
                m.window,
                m.threads.map_or("-".to_string(), |t| t.to_string()),
                m.mops()
            );
        }
    });
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("acker-bench: structures disagree, no figures reported: {e}");
            return ExitCode::FAILURE;
        }
    };
    if json {
        let rows = serde_json::json!({ "rows": report.rows() });
        println!(
            "{}",
            serde_json::to_string_pretty(&rows).expect("rows serialise")
        );
    } else {
        print_table(&config, &report);
    }
    ExitCode::SUCCESS
}

fn print_table(config: &CompareConfig, report: &CompareReport) {
    println!(
        "acker-bench compare: k = {} acks per tree, seed {}, {} repetition(s) (median); single-owner tables sized for load 0.{} at W, shared tables for 0.{}",
        config.acks_per_tree,
        config.seed,
        config.repetitions,
        TARGET_LOAD_PERCENT / 10,
        SHARED_TARGET_LOAD_PERCENT / 10
    );
    for &window in &config.windows {
        println!();
        println!(
            "W = {window}  ({} timed messages)",
            (config.ops_for_window)(window)
        );
        println!(
            "{:<26} {:>7} {:>9} {:>8} {:>8} {:>8} {:>6} {:>12} {:>5}",
            "structure",
            "threads",
            "Mops/s",
            "ns/op",
            "B/slot",
            "B/root",
            "load",
            "ours/this",
            "Full"
        );
        let rows: Vec<&Measurement> = report
            .medians
            .iter()
            .filter(|m| m.window == window)
            .collect();
        for m in rows {
            let ours = match m.threads {
                None => report.find("acker-core", window, None),
                Some(t) => report.find("acker-core-shared", window, Some(t)),
            };
            let ratio = ours.map_or("-".to_string(), |o| format!("{:.2}x", o.mops() / m.mops()));
            println!(
                "{:<26} {:>7} {:>9.2} {:>8.1} {:>8.1} {:>8.1} {:>6.3} {:>12} {:>5}",
                m.structure,
                m.threads.map_or("-".to_string(), |t| t.to_string()),
                m.mops(),
                m.ns_per_op(),
                m.bytes_per_slot(),
                m.bytes_per_root(),
                m.load(),
                ratio,
                m.outcome.full
            );
        }
    }
    let shared_scaling: Vec<String> = config
        .windows
        .iter()
        .filter_map(|&w| {
            let one = report.find("acker-core-shared", w, Some(1))?;
            let two = report.find("acker-core-shared", w, Some(2))?;
            Some(format!("W={w}: {:.2}x", two.mops() / one.mops()))
        })
        .collect();
    if !shared_scaling.is_empty() {
        println!();
        println!(
            "acker-core-shared 2-thread scaling: {}",
            shared_scaling.join(", ")
        );
    }
}
