//! `acker-bench`: runs acker-core's tables and their peers on the same op stream and prints
//! Mops/s, bytes per root and the ratios.
//!
//! ```text
//! acker-bench compare [--quick] [--json] [--windows 1000,100000,1000000] [--reps N]
//!                     [--ops N] [--threads 1,2] [--acks-per-tree K] [--seed S] [--only NAME,..]
//!                     [--in-loop]
//! ```
//!
//! Output goes through a locked stdout with `writeln!`; a write error ends the command (see
//! [`EXIT_STATUS_HELP`] for the exit statuses, also shown under `--help`).

use std::alloc::System;
use std::io::{self, Write};
use std::process::ExitCode;

use acker_benches::compare::{
    legend, run_compare, CompareConfig, CompareReport, Measurement, Mode, OneAtATime, Prefetched,
    SHARED_TARGET_LOAD_PERCENT, TARGET_LOAD_PERCENT,
};
use acker_benches::{
    AckerStructure, CoreShared, CoreSharedBatch, DashMapAcker, HashbrownAcker, HashbrownLean,
    MutexHashbrown, SharedAckerStructure, StormStyle,
};
use acker_core::{AckerTable, Slot};
use acker_runtime::cli::{at_least, exit_status, list_items, CliError};
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

/// The exit statuses, shown under `--help`.
const EXIT_STATUS_HELP: &str = "Exit status: 0 on success (also when stdout is a pipe closed \
early, e.g. `| head -1`: the command stops quietly); 1 when the structures disagree (no figures \
reported); 2 on bad arguments or a stdout write error (e.g. `> /dev/full`), with a one-line \
message on stderr (an argument error clap finds adds the usage and a hint).";

/// The names `--only` accepts: every structure `compare` runs, single-owner then shared, as
/// `run_compare` names them.
fn structure_names() -> [&'static str; 10] {
    let [a, b, c, d] = shared_names();
    [
        <AckerTable<Box<[Slot]>> as AckerStructure>::NAME,
        OneAtATime::NAME,
        Prefetched::NAME,
        HashbrownAcker::NAME,
        HashbrownLean::NAME,
        StormStyle::NAME,
        a,
        b,
        c,
        d,
    ]
}

/// The shared structures' names (the ones `--threads 0` skips), as `run_compare` names them.
fn shared_names() -> [&'static str; 4] {
    [
        CoreShared::NAME,
        CoreSharedBatch::NAME,
        MutexHashbrown::NAME,
        DashMapAcker::NAME,
    ]
}

/// Largest `--windows` value: roots in flight. A run holds W prefill inits and (by default) 4W
/// timed messages of 24 bytes each plus the table under test: about 240 bytes a root in all
/// (W = 4M peaked at 0.94 GB resident), so 2.4 GB here.
const MAX_WINDOW_ROOTS: u64 = 10_000_000;
/// Largest `--ops` value: timed messages a run (24 bytes each, generated before timing: 2.4 GB).
const MAX_OPS: u64 = 100_000_000;
/// Largest `--threads` value (each thread gets its own op stream and OS thread).
const MAX_THREADS: u64 = 1024;

/// [`at_least`]`::<MIN>` that also refuses values above `max`, saying what the limit bounds.
fn in_range<const MIN: u64>(s: &str, max: u64, what: &str) -> Result<usize, String> {
    let n = match at_least::<MIN>(s) {
        Err(e) if e.starts_with("is too large") => {
            return Err(format!("must be at most {max} ({what})"))
        }
        r => r?,
    };
    if n > max {
        return Err(format!("must be at most {max} ({what})"));
    }
    usize::try_from(n).map_err(|_| format!("{n} is too large"))
}

/// Largest `--acks-per-tree` value: a tree of k acks is k + 1 messages in the op stream, so a
/// larger k leaves almost no complete tree in a run of `--ops` messages.
const MAX_ACKS_PER_TREE: u64 = 1000;

/// clap value parser for `--acks-per-tree`: 1 to [`MAX_ACKS_PER_TREE`].
fn acks_per_tree(s: &str) -> Result<usize, String> {
    in_range::<1>(s, MAX_ACKS_PER_TREE, "acks per tree")
}

/// clap value parser for `--windows`: 1 to [`MAX_WINDOW_ROOTS`].
fn window_roots(s: &str) -> Result<usize, String> {
    in_range::<1>(
        s,
        MAX_WINDOW_ROOTS,
        "roots in flight; about 240 bytes a root",
    )
}

/// Smallest `--ops` value: fewer timed messages take too little time for the figures to mean
/// anything (new-user trial: `--windows 1 --ops 1` timed one message and printed its figures).
const MIN_OPS: u64 = 1000;

/// clap value parser for `--ops`: [`MIN_OPS`] to [`MAX_OPS`].
fn op_count(s: &str) -> Result<usize, String> {
    in_range::<MIN_OPS>(s, MAX_OPS, "timed messages a run; 24 bytes each").map_err(|e| {
        if e.starts_with("must be at least") || e.starts_with("must not be negative") {
            format!("{e} (timed messages a run: fewer take too little time for meaningful figures)")
        } else {
            e
        }
    })
}

/// clap value parser for `--threads`: 0 to [`MAX_THREADS`] (0 is checked to stand alone later).
fn thread_count(s: &str) -> Result<usize, String> {
    in_range::<0>(s, MAX_THREADS, "threads a shared-table run")
}

/// A comma-separated option value parsed whole (`--windows`, `--threads`, `--only`), so that
/// clap's refusal quotes the list as given: each item by `item`, an error naming the bad item
/// and its place (`item 2 of 3 (`x`): must be ...`) when there are several; an empty value or
/// item is refused ([`list_items`]).
fn list_of<T>(s: &str, item: impl Fn(&str) -> Result<T, String>) -> Result<Vec<T>, String> {
    if s.trim().is_empty() {
        return Err("is empty (give at least one comma-separated item)".to_string());
    }
    let items = list_items(s)?;
    let n = items.len();
    items
        .iter()
        .enumerate()
        .map(|(i, text)| {
            item(text).map_err(|e| {
                if n == 1 {
                    e
                } else {
                    format!("item {} of {n} (`{text}`): {e}", i + 1)
                }
            })
        })
        .collect()
}

/// A parsed list option (a newtype, so that clap's value parser gets the whole list; an option
/// given more than once adds its lists together).
#[derive(Clone, Debug)]
struct List<T>(Vec<T>);

/// clap value parser for `--windows`: a list of [`window_roots`].
fn window_list(s: &str) -> Result<List<usize>, String> {
    list_of(s, window_roots).map(List)
}

/// clap value parser for `--threads`: a list of [`thread_count`].
fn thread_list(s: &str) -> Result<List<usize>, String> {
    list_of(s, thread_count).map(List)
}

/// clap value parser for `--only`: a list of the names in [`structure_names`].
fn structure_list(s: &str) -> Result<List<String>, String> {
    let names = structure_names();
    list_of(s, |name| {
        if names.contains(&name) {
            Ok(name.to_string())
        } else {
            Err(format!(
                "no structure is named `{name}` [possible values: {}]",
                names.join(", ")
            ))
        }
    })
    .map(List)
}

/// `--only`'s help, listing the names it takes.
fn only_help() -> String {
    format!(
        "Run only these structures (comma-separated names, e.g. for a profiler) [possible values: \
         {}]",
        structure_names().join(", ")
    )
}

/// Largest `--reps` value (each repetition reruns every structure on the whole op stream).
const MAX_REPS: u64 = 1000;

/// clap value parser for `--reps`: 1 to [`MAX_REPS`].
fn rep_count(s: &str) -> Result<usize, String> {
    in_range::<1>(s, MAX_REPS, "repetitions of each run")
}

#[derive(Parser)]
#[command(
    name = "acker-bench",
    version,
    about = "Benchmarks acker-core's acker tables against Storm-style, hashbrown (rule-checking and lean), Mutex<hashbrown> and dashmap peers",
    after_help = EXIT_STATUS_HELP
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
    /// Print `{"rows": [{"structure", "mode", "window", "mops", "bytes_per_root", "full"[,
    /// "threads"]}, ...]}`; `mode` is `pregenerated` or `in-loop`; `full` the messages refused as
    /// Full (the text table's Full column).
    #[arg(long)]
    json: bool,
    /// Roots in flight (W), comma-separated, each 1 to 10000000 (about 240 bytes a root at the
    /// default --ops: op stream plus table).
    #[arg(
        long,
        default_value = "1000,100000,1000000",
        allow_hyphen_values = true,
        value_parser = window_list
    )]
    windows: Vec<List<usize>>,
    /// Repetitions of each run, 1 to 1000; the median is reported [default: 3, 1 with --quick].
    #[arg(long, allow_negative_numbers = true, value_parser = rep_count)]
    reps: Option<usize>,
    /// Timed messages per run, 1000 to 100000000 (24 bytes each; fewer take too little time for
    /// meaningful figures) [default: max(8M, 4W); 2M with --quick].
    #[arg(long, allow_negative_numbers = true, value_parser = op_count)]
    ops: Option<usize>,
    /// Thread counts for the shared tables, comma-separated, each 1 to 1024 (0 alone skips
    /// them; counts with an --only naming no shared table are refused).
    #[arg(
        long,
        default_value = "1,2",
        allow_hyphen_values = true,
        value_parser = thread_list
    )]
    threads: Vec<List<usize>>,
    /// Acks per tree (k), 1 to 1000.
    #[arg(long, default_value_t = 4, allow_negative_numbers = true, value_parser = acks_per_tree)]
    acks_per_tree: usize,
    /// Seed of the op streams.
    #[arg(long, default_value_t = 7, allow_negative_numbers = true, value_parser = at_least::<0>)]
    seed: u64,
    /// Run only these structures (comma-separated names, e.g. for a profiler; the names are
    /// listed under --help).
    #[arg(long, value_parser = structure_list, help = only_help())]
    only: Vec<List<String>>,
    /// Also run the single-owner tables with each message produced inside the timed loop (as an
    /// engine's message loop does), alternated with the pregenerated runs; rows say which mode.
    /// Refused with an --only naming shared tables only (they run pregenerated only).
    #[arg(long)]
    in_loop: bool,
}

/// [`CompareArgs`] with its lists unwrapped.
struct Compare {
    quick: bool,
    json: bool,
    windows: Vec<usize>,
    reps: Option<usize>,
    ops: Option<usize>,
    threads: Vec<usize>,
    acks_per_tree: usize,
    seed: u64,
    only: Vec<String>,
    in_loop: bool,
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
    use clap::{CommandFactory, FromArgMatches};
    let matches = Cli::command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    // Whether `--threads` was given (its default, 1,2, is no request to refuse).
    let threads_given = matches
        .subcommand_matches("compare")
        .is_some_and(|m| m.value_source("threads") == Some(clap::parser::ValueSource::CommandLine));
    let r = match cli.command {
        Command::Compare(args) => compare(args, threads_given),
    };
    exit_status("acker-bench", r.map_err(CliError::from))
}

/// Runs `compare`; `Err` only for a failed stdout write (bad arguments are refused by clap, or
/// here with exit status 2); `threads_given`: `--threads` was on the command line.
fn compare(args: CompareArgs, threads_given: bool) -> io::Result<ExitCode> {
    let args = Compare {
        quick: args.quick,
        json: args.json,
        windows: args.windows.into_iter().flat_map(|l| l.0).collect(),
        reps: args.reps,
        ops: args.ops,
        threads: args.threads.into_iter().flat_map(|l| l.0).collect(),
        acks_per_tree: args.acks_per_tree,
        seed: args.seed,
        only: args.only.into_iter().flat_map(|l| l.0).collect(),
        in_loop: args.in_loop,
    };
    if args.windows.is_empty() {
        acker_runtime::stderr_line!("acker-bench: error: --windows needs values of at least 1");
        return Ok(ExitCode::from(2));
    }
    if args.threads.len() > 1 && args.threads.contains(&0) {
        let given: Vec<String> = args.threads.iter().map(usize::to_string).collect();
        acker_runtime::stderr_line!(
            "acker-bench: error: --threads 0 skips the shared tables and must be given alone; \
             thread counts are 1 to {MAX_THREADS} (got {})",
            given.join(",")
        );
        return Ok(ExitCode::from(2));
    }
    let shared = shared_names();
    if args.threads == [0]
        && !args.only.is_empty()
        && args.only.iter().all(|n| shared.contains(&n.as_str()))
    {
        // Nothing would run: an empty table with exit 0 (new-user trial).
        acker_runtime::stderr_line!(
            "acker-bench: error: --only {} names shared tables only, and --threads 0 skips the \
             shared tables: nothing to run (give thread counts, e.g. --threads 1,2)",
            args.only.join(",")
        );
        return Ok(ExitCode::from(2));
    }
    // Options with no effect on any structure `--only` selects are refused, not ignored
    // (new-user trial: `--only storm-style --threads 4` and `--only dashmap --in-loop` ran as
    // if they had not been given). `--threads 0` says "no shared table", so it stands.
    let only_single =
        !args.only.is_empty() && args.only.iter().all(|n| !shared.contains(&n.as_str()));
    let only_shared =
        !args.only.is_empty() && args.only.iter().all(|n| shared.contains(&n.as_str()));
    if threads_given && only_single && args.threads != [0] {
        let given: Vec<String> = args.threads.iter().map(usize::to_string).collect();
        acker_runtime::stderr_line!(
            "acker-bench: error: --threads {} sets the thread counts of the shared tables ({}), \
             and --only {} names none of them: leave --threads out",
            given.join(","),
            shared.join(", "),
            args.only.join(",")
        );
        return Ok(ExitCode::from(2));
    }
    if args.in_loop && only_shared {
        acker_runtime::stderr_line!(
            "acker-bench: error: --in-loop also runs the single-owner tables with each message \
             produced in the timed loop, and --only {} names shared tables only (they run \
             pregenerated only): leave --in-loop out",
            args.only.join(",")
        );
        return Ok(ExitCode::from(2));
    }
    let smallest_window = args.windows.iter().copied().min().unwrap_or(1);
    if let Some(&most) = args.threads.iter().max().filter(|&&t| t > smallest_window) {
        acker_runtime::stderr_line!(
            "acker-bench: error: --threads {most} is more than the smallest window \
             (--windows {smallest_window}): each thread drives its own share of the W roots, so \
             a thread count must be at most W"
        );
        return Ok(ExitCode::from(2));
    }
    if let Some(ops) = args.ops {
        let _ = OPS_OVERRIDE.set(ops);
    }
    if let Err(e) = check_memory(&args) {
        acker_runtime::stderr_line!("acker-bench: error: {e}");
        return Ok(ExitCode::from(2));
    }
    // `--threads 0` (alone, checked above) runs no shared table.
    let threads: Vec<usize> = args.threads.iter().copied().filter(|&t| t > 0).collect();
    let config = CompareConfig {
        windows: args.windows.clone(),
        ops_for_window: if args.quick { ops_quick } else { ops_full },
        repetitions: args.reps.unwrap_or(if args.quick { 1 } else { 3 }),
        threads,
        acks_per_tree: args.acks_per_tree,
        seed: args.seed,
        live_bytes: Some(live_bytes),
        only: args.only.clone(),
        modes: if args.in_loop {
            vec![Mode::Pregenerated, Mode::InLoop]
        } else {
            vec![Mode::Pregenerated]
        },
    };
    let json = args.json;
    let result = run_compare(&config, |m| {
        if !json {
            acker_runtime::stderr_line!(
                "  ran {:<26} {:<12} W={:<8} threads={:<4} {:>8.2} Mops/s",
                m.structure,
                m.mode.name(),
                m.window,
                m.threads.map_or("-".to_string(), |t| t.to_string()),
                m.mops()
            );
        }
    });
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            acker_runtime::stderr_line!(
                "acker-bench: structures disagree, no figures reported: {e}"
            );
            return Ok(ExitCode::FAILURE);
        }
    };
    let mut out = io::stdout().lock();
    if json {
        let mut rows = serde_json::json!({ "rows": report.rows() });
        // Measured floats without float noise (`mops`, `bytes_per_root`): 12 significant digits.
        acker_runtime::cli::round_json_floats(&mut rows);
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&rows).expect("rows serialise")
        )?;
    } else {
        print_table(&mut out, &config, &report)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Peak bytes a structure's table takes per root in flight (W), rounded up from the resident
/// peak of `compare --windows 1000000 --ops 100000 --reps 1 --only NAME` less the op stream
/// (`/usr/bin/time -v`; a hash map holds its old and new tables while it grows).
fn table_bytes_per_root(name: &str) -> u64 {
    match name {
        // 20-byte slots at load 0.8 (0.5 for the shared ones).
        "acker-core" | "acker-core-one-at-a-time" | "acker-core-prefetch" => 26,
        "acker-core-shared" | "acker-core-shared-batch" => 42,
        "hashbrown" => 140,       // measured 132
        "hashbrown-lean" => 56,   // measured 48
        "storm-style" => 110,     // measured 100
        "mutex-hashbrown" => 150, // measured 140
        "dashmap" => 110,         // measured 96
        _ => 150,
    }
}

/// The shared structures whose tables allocate on the benchmark threads: each thread may get
/// an allocator arena of its own (glibc reserves 64 MiB of address space for one, counted by
/// `ulimit -v`; measured: `--threads 2 --only mutex-hashbrown` at W = 1M needs 260 to 300 MB of
/// address space for 171 MB resident).
const ALLOCATES_ON_THREADS: [&str; 2] = ["mutex-hashbrown", "dashmap"];

/// Address space kept in reserve beside a compare run's own need: 16 MB for the process (it
/// maps about 9 MB at the check) and 2.2 MB for each benchmark thread's stack.
fn compare_margin(threads: usize) -> u64 {
    16_000_000 + 2_200_000 * threads as u64
}

/// Refuses a compare run whose largest window needs more memory than this process may have
/// ([`acker_runtime::cli::check_memory`]), before any op stream is generated (new-user trial:
/// `--windows 1000000 --only acker-core` under `ulimit -v 100000` died of SIGABRT in an
/// allocation of 192 MB). Per window: the op stream (prefill and timed messages, 24 bytes
/// each; the generator's trees while it runs), the largest selected table
/// ([`table_bytes_per_root`]), the in-loop generator's trees and prefill with --in-loop, and
/// the allocator arenas of the threads of a shared table that allocates on them.
fn check_memory(args: &Compare) -> Result<(), String> {
    let message = std::mem::size_of::<acker_core::AckerMessage>() as u64;
    let names = structure_names();
    let shared = shared_names();
    let selected: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| args.only.is_empty() || args.only.iter().any(|o| o == n))
        .collect();
    let threads: Vec<usize> = args.threads.iter().copied().filter(|&t| t > 0).collect();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let most_threads = threads.iter().copied().max().unwrap_or(0);
    let ops_for = |w: usize| {
        if args.quick {
            ops_quick(w)
        } else {
            ops_full(w)
        }
    };
    // (bytes, window, ops, the structure taking the most)
    let mut worst: Option<(u64, usize, usize, &str)> = None;
    for &w in &args.windows {
        let ops = ops_for(w);
        let w64 = w as u64;
        // The generator's trees (24 B a root) are freed before any table is built.
        let stream = message.saturating_mul(w64.saturating_add(ops as u64));
        for &name in &selected {
            let is_shared = shared.contains(&name);
            if is_shared && threads.is_empty() {
                continue;
            }
            let mut table = table_bytes_per_root(name).saturating_mul(w64);
            if args.in_loop && !is_shared {
                table = table.saturating_add(48 * w64);
            }
            if is_shared && ALLOCATES_ON_THREADS.contains(&name) {
                let arenas = most_threads.min(8 * cpus) as u64;
                table = table.saturating_add(arenas.saturating_mul(64 << 20));
            }
            let need = stream.saturating_add(table.max(24 * w64));
            if worst.is_none_or(|(b, ..)| need > b) {
                worst = Some((need, w, ops, name));
            }
        }
    }
    let Some((need, window, ops, name)) = worst else {
        return Ok(());
    };
    let needs = format!(
        "--windows {window} needs about {} of memory ({} timed messages and {window} prefill \
         inits at {message} B, and the {name} table{})",
        acker_runtime::cli::size(need),
        ops,
        if ALLOCATES_ON_THREADS.contains(&name) && most_threads > 0 {
            format!(
                " with a 64 MiB allocator arena for each of up to {most_threads} thread(s): \
                 --threads 0 or an --only without {} leaves them out",
                ALLOCATES_ON_THREADS.join(" and ")
            )
        } else {
            String::new()
        }
    );
    acker_runtime::cli::check_memory(
        need,
        compare_margin(most_threads),
        &needs,
        "lower --windows or --ops, or leave the largest tables out with --only",
    )
}

fn print_table(
    out: &mut impl Write,
    config: &CompareConfig,
    report: &CompareReport,
) -> io::Result<()> {
    writeln!(out,
        "acker-bench compare: k = {} acks per tree, seed {}, {} repetition(s) (median); single-owner tables sized for load 0.{} at W, shared tables for 0.{}",
        config.acks_per_tree,
        config.seed,
        config.repetitions,
        TARGET_LOAD_PERCENT / 10,
        SHARED_TARGET_LOAD_PERCENT / 10
    )?;
    for &window in &config.windows {
        writeln!(out)?;
        writeln!(
            out,
            "W = {window}  ({} timed messages)",
            (config.ops_for_window)(window)
        )?;
        writeln!(
            out,
            "{:<26} {:<12} {:>7} {:>9} {:>8} {:>8} {:>8} {:>6} {:>12} {:>5}",
            "structure",
            "mode",
            "threads",
            "Mops/s",
            "ns/op",
            "B/slot",
            "B/root",
            "load",
            "ours/this",
            "Full"
        )?;
        let rows: Vec<&Measurement> = report
            .medians
            .iter()
            .filter(|m| m.window == window)
            .collect();
        for m in rows {
            let ours = match m.threads {
                None => report.find_in("acker-core", window, None, m.mode),
                Some(t) => report.find("acker-core-shared", window, Some(t)),
            };
            let ratio = ours.map_or("-".to_string(), |o| format!("{:.2}x", o.mops() / m.mops()));
            writeln!(
                out,
                "{:<26} {:<12} {:>7} {:>9.2} {:>8.1} {:>8.1} {:>8.1} {:>6.3} {:>12} {:>5}",
                m.structure,
                m.mode.name(),
                m.threads.map_or("-".to_string(), |t| t.to_string()),
                m.mops(),
                m.ns_per_op(),
                m.bytes_per_slot(),
                m.bytes_per_root(),
                m.load(),
                ratio,
                m.outcome.full
            )?;
        }
    }
    let mut shown: Vec<&str> = Vec::new();
    for m in &report.medians {
        if !shown.contains(&m.structure) {
            shown.push(m.structure);
        }
    }
    writeln!(out)?;
    writeln!(
        out,
        "columns: Mops/s and ns/op the median run's; B/slot the structure's bytes per slot it holds; \
         B/root its bytes per root in flight; load roots in flight per slot; ours/this acker-core's \
         Mops/s (acker-core-shared's at the same thread count) over this row's, above 1 when \
         acker-core is faster; Full the messages refused as Full"
    )?;
    for name in shown {
        if let Some(about) = legend(name) {
            writeln!(out, "  {name:<24} {about}")?;
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
        writeln!(out)?;
        writeln!(
            out,
            "acker-core-shared 2-thread scaling: {}",
            shared_scaling.join(", ")
        )?;
    }
    Ok(())
}
