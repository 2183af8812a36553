//! `acker-sim`: run the seeded simulator from the command line.
//!
//! - `acker-sim experiment`: the reliability experiment (guarantee × fault × injected count).
//! - `acker-sim run --seed S`: one simulation, its verdict and trace hash.
//! - `acker-sim search --seeds N`: many seeds, every violation shrunk and given a replay command.
//!
//! Output goes through a locked stdout with `writeln!`; a write error ends the command (see
//! [`EXIT_STATUS_HELP`] for the exit statuses, also shown under `--help`).

use acker_runtime::cli::{at_least, count_at_least, exit_status, list_items, CliError};
use acker_sim::engine::BYTES_PER_REPLAY;
use acker_sim::fault::{self, Fault, FaultKind, FaultSpec};
use acker_sim::scenario::{Guarantee, PlantedBug, Scenario};
use acker_sim::shapes::Shape;
use acker_sim::units::{parse_duration_ns, require_unit, MAX_DURATION_NS, MAX_DURATION_TEXT};
use acker_sim::{experiment, search};
use acker_sim::{RunError, Sim, Simulation, SourceModel};
use clap::{Args, Parser, Subcommand};
use std::io::{self, Write};
use std::process::ExitCode;
use std::time::Instant;

#[derive(Parser)]
#[command(
    name = "acker-sim",
    version,
    about = "Seeded discrete-event simulator of acker's executors: fault injection, delivery-guarantee oracles, replay from a seed",
    after_help = EXIT_STATUS_HELP
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Reproduce the reliability experiment: guarantee × fault × injected count (0, 1, 2, 5).
    #[command(after_help = DURATION_HELP)]
    Experiment(ExperimentArgs),
    /// Run one simulation and print its verdict and trace hash.
    #[command(after_help = DURATION_HELP)]
    Run(RunArgs),
    /// Run many seeds; report every oracle violation, shrunk, with replay commands. With
    /// --swarm, about one shape seed in four also runs once fault-free (so --list prints more
    /// replay commands than seeds; the summary line gives both counts).
    #[command(after_help = DURATION_HELP)]
    Search(SearchArgs),
    /// One worker process of `experiment --real` (started by the driver).
    #[cfg(feature = "real")]
    #[command(hide = true)]
    Worker(acker_sim::real::worker::WorkerArgs),
}

/// How a duration option is written, shown under each command's `--help`.
const DURATION_HELP: &str = "Durations (--timeout, --tick, --latency, --progress-every, ..., \
and the fault times of --faults, as in bolt-crash@2ms) need a unit: ns, us, ms or s, e.g. 30s, \
2ms, 1.5s, 50us..150us; a bare number other than 0 is refused. Every simulated duration is at \
most 1000000s (about 11.6 days); the wall-clock intervals --progress-every and --cell-limit at \
most 604800s (7 days). The link latencies (--latency's maximum, --local-latency) are at most the \
message timeout (a slower link would time out every tree crossing it, and the replays' messages \
in flight would fill the memory), and a tree's shortest round trip, 4 x the shortest link \
latency (spout to bolt to sink to acker to spout: --latency's minimum, or --local-latency with \
--one-worker), must stay below 2 x --timeout + --tick, the longest a spout keeps a tree pending \
(else every tree would time out and be replayed without end). A run whose trees still time out \
faster than they complete (e.g. a --timeout below max spout pending x --bolt-ns, the queue \
behind a bolt) stops at --max-replays with exit status 2.";

/// The exit statuses, shown under `--help`.
const EXIT_STATUS_HELP: &str = "Exit status: 0 when every oracle held (also when stdout is a \
pipe closed early, e.g. `| head -1`: the command stops quietly); 1 on an oracle violation or a \
relation that does not hold; 2 on bad arguments, a failed run or a stdout write error (e.g. \
`> /dev/full`), with a one-line message on stderr (an argument error clap finds adds the usage \
and a hint); 3 on nondeterminism (--check-determinism); `experiment --real` stopped by a signal \
(its servers and workers stopped first): 130 on SIGINT (Ctrl-C), 143 on SIGTERM.";

/// clap value parser for a duration (`250ns`, `30us`, `2ms`, `1.5s`); the options using it set
/// `allow_hyphen_values` so a negative one reaches here and is refused by name. Every duration
/// option of acker-sim needs a unit: a bare number (`30`) is refused, since it could mean
/// seconds as well as nanoseconds; only `0` may go without one.
fn duration(s: &str) -> Result<u64, String> {
    if s.trim_start().starts_with('-') {
        return Err("durations cannot be negative".into());
    }
    with_unit(s)?;
    at_most_max(s, parse_duration_ns(s)?)
}

/// `ns` (parsed from `s`) if at most [`MAX_DURATION_NS`], else the message naming `s` and the
/// bound (every duration option of acker-sim takes at most 1000000s).
fn at_most_max(s: &str, ns: u64) -> Result<u64, String> {
    if ns > MAX_DURATION_NS {
        return Err(format!(
            "`{}` is longer than the longest duration taken, {MAX_DURATION_TEXT} (about 11.6 \
             days)",
            s.trim()
        ));
    }
    Ok(ns)
}

/// Refuses a bare number other than 0, naming the units taken ([`require_unit`]).
fn with_unit(s: &str) -> Result<(), String> {
    require_unit(s)
}

/// Longest wall-clock interval taken (`search --progress-every`, `experiment --real
/// --cell-limit`): 7 days, in ns. Not [`MAX_DURATION_NS`], which bounds simulated time.
const MAX_WALL_NS: u64 = 604_800_000_000_000;

/// clap value parser for a wall-clock interval: a duration with a unit, at most [`MAX_WALL_NS`]
/// (7 days), with a message of its own (the simulated durations' bound, 1000000s, does not apply
/// to it).
fn wall_interval(s: &str) -> Result<u64, String> {
    if s.trim_start().starts_with('-') {
        return Err("wall-clock intervals cannot be negative".into());
    }
    with_unit(s)?;
    match parse_duration_ns(s)? {
        ns if ns > MAX_WALL_NS => Err(format!(
            "`{}` is longer than the longest wall-clock interval taken, 604800s (7 days)",
            s.trim()
        )),
        ns => Ok(ns),
    }
}

/// [`wall_interval`] that must be more than zero (`experiment --real --cell-limit`).
fn positive_wall_interval(s: &str) -> Result<u64, String> {
    match wall_interval(s)? {
        0 => Err("must be more than 0 (e.g. 600s)".into()),
        ns => Ok(ns),
    }
}

/// [`duration`] that must be more than zero (`--time-limit`).
fn positive_duration(s: &str) -> Result<u64, String> {
    match duration(s)? {
        0 => Err("must be more than 0 (e.g. 10s)".into()),
        ns => Ok(ns),
    }
}

/// Faults listed one by one on `acker-sim run`'s `faults:` line; past this the line gives the
/// first ones and counts per kind (the full schedule is in the `--trace` file).
const MAX_LISTED_FAULTS: usize = 20;

/// The `faults:` line's text: `none`, the whole schedule in `--faults` syntax when it has at most
/// [`MAX_LISTED_FAULTS`] faults, else the first ones, how many more, and the count per kind.
fn faults_line(fired: &[Fault]) -> String {
    if fired.is_empty() {
        return "none".to_string();
    }
    if fired.len() <= MAX_LISTED_FAULTS {
        return fault::format_schedule(fired);
    }
    let per_kind: Vec<String> = FaultKind::ALL
        .iter()
        .filter_map(|&k| {
            let n = fired.iter().filter(|f| f.kind == k).count();
            (n > 0).then(|| format!("{k} {n}"))
        })
        .collect();
    format!(
        "{} ... and {} more ({} fired: {})",
        fault::format_schedule(&fired[..MAX_LISTED_FAULTS]),
        fired.len() - MAX_LISTED_FAULTS,
        fired.len(),
        per_kind.join(", ")
    )
}

/// clap value parser for a `--faults` list: refuses an empty value (`''`: `none`, or leaving the
/// option out, says "no fault"), an empty item (`,`, `bolt-crash,`) and `none` beside faults by
/// the option's name (each item is parsed later, against the run's topology).
fn fault_list(s: &str) -> Result<String, String> {
    let s = non_empty_list(s, "for no fault, give `none` or leave the option out")?;
    fault::check_none_alone(&list_items(&s)?, &s).map_err(|e| e.to_string())?;
    Ok(s)
}

/// clap value parser for `--cells`: refuses an empty value or item, as [`fault_list`].
fn cell_list(s: &str) -> Result<String, String> {
    non_empty_list(s, "leave the option out for every cell")
}

/// A comma-separated option value with at least one item and no empty one ([`list_items`]);
/// `instead` says what to do for none.
fn non_empty_list(s: &str, instead: &str) -> Result<String, String> {
    if s.trim().is_empty() {
        return Err(format!("is empty ({instead})"));
    }
    list_items(s)?;
    Ok(s.to_string())
}

/// An error about a comma-separated option value of several items: `OPTION `LIST`: ERROR`,
/// quoting the list as given, and the place and text of the first item `bad` refuses alone
/// (`item 2 of 3 (`x`): ...`; new-user trial: a bad item was named without its list). A list
/// of one item: the error alone (it quotes the item).
fn list_error(
    option: &str,
    list: &str,
    e: impl std::fmt::Display,
    bad: impl Fn(&str) -> bool,
) -> String {
    let items = list_items(list).unwrap_or_default();
    if items.len() <= 1 {
        // The list is its one item, which the message quotes.
        return e.to_string();
    }
    match items.iter().position(|i| bad(i)) {
        Some(i) => format!(
            "{option} `{list}`: item {} of {} (`{}`): {e}",
            i + 1,
            items.len(),
            items[i]
        ),
        _ => format!("{option} `{list}`: {e}"),
    }
}

/// A `--faults` list that does not parse, as [`list_error`].
fn faults_error(list: &str, e: impl std::fmt::Display) -> String {
    list_error("--faults", list, e, |i| fault::parse_specs(i).is_err())
}

/// The `note:` lines under `run`'s `faults:` line for every fault of the `--faults` list `text`
/// that fired 0 times, so that `faults: none` (or a short list) never reads as if every spec had
/// been applied (new-user trial): the scheduled faults whose trigger lay past the run's end
/// (`end_ns`), and each item of a kind of which nothing was scheduled (a rate that drew no
/// fault from the seed, or a partition rate in a topology of one worker).
fn write_fault_notes(
    out: &mut impl Write,
    text: &str,
    scheduled: &[Fault],
    fired: &[Fault],
    end_ns: u64,
    takes_tuples: bool,
) -> io::Result<()> {
    let not_fired = scheduled.len().saturating_sub(fired.len());
    if not_fired > 0 {
        // A shape has its own input and refuses --tuples: the note suggests only what the run
        // takes.
        writeln!(
            out,
            "note: {not_fired} scheduled fault(s) did not fire: the run ended at {:.3} ms of \
             simulated time ({})",
            end_ns as f64 / 1e6,
            if takes_tuples {
                "more --tuples, or an earlier trigger"
            } else {
                "give an earlier trigger"
            }
        )?;
    }
    // The list was checked when parsed: an item that does not parse here names no kind.
    for item in list_items(text).unwrap_or_default() {
        let head = item.split(['@', '*', '~', ':']).next().unwrap_or(item);
        let Ok(kind) = head.parse::<FaultKind>() else {
            continue;
        };
        if scheduled.iter().all(|f| f.kind != kind) {
            writeln!(
                out,
                "note: `{item}` did not fire (0 times): its rate drew no fault from this seed \
                 (per second over --fault-until, per thousand tuples over the input; a partition \
                 needs two workers): raise the rate, or give a count (`{kind}*N`) or a time"
            )?;
        }
    }
    Ok(())
}

fn source_model(s: &str) -> Result<SourceModel, String> {
    s.parse()
        .map_err(|e: acker_sim::source::UnknownSourceModel| e.to_string())
}

fn latency_range(s: &str) -> Result<(u64, u64), String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("`{s}` is not a latency range like 50us..150us"))?;
    with_unit(a)?;
    with_unit(b)?;
    let (a, b) = (
        at_most_max(a, parse_duration_ns(a)?)?,
        at_most_max(b, parse_duration_ns(b)?)?,
    );
    if a > b {
        return Err(format!(
            "latency range `{s}`: the minimum exceeds the maximum"
        ));
    }
    Ok((a, b))
}

/// Settings shared by every command (defaults: `Scenario::new`).
#[derive(Args, Clone)]
struct SimArgs {
    /// Unique sequential numbers in the source, 1 to 100000000 [default: 1000 for `run` and
    /// `search`, 100000 for `experiment`, 10000 for `experiment --real --quick`]. A run keeps
    /// about 135 bytes of memory a tuple (measured: 140 MB at 1 million, 540 MB at 4 million), so
    /// the maximum needs about 14 GB, plus up to --max-replays replays at about 300 B each (the
    /// default, as many as the tuples but at least 100000: 44 GB in all at the maximum); a count
    /// needing more than the machine or `ulimit -v` / `-d` allows (at 144 B a tuple and 300 B a
    /// replay) is refused with the estimate before anything is allocated.
    #[arg(long, allow_negative_numbers = true, value_parser = at_least::<1>)]
    tuples: Option<u64>,
    /// Max spout pending (topology.max.spout.pending), 1 to 1000000.
    #[arg(long, default_value_t = 1000, allow_negative_numbers = true, value_parser = at_least::<1>)]
    max_spout_pending: u64,
    /// Message timeout T (topology.message.timeout.secs), e.g. 30s [default: 30s; 2s with
    /// `experiment --real`].
    #[arg(long, allow_hyphen_values = true, value_parser = duration)]
    timeout: Option<u64>,
    /// Tick interval fed to spouts and ackers.
    #[arg(long, default_value = "1s", allow_hyphen_values = true, value_parser = duration)]
    tick: u64,
    /// Acker tasks, 1 to 1000 (at-least-once, exactly-once; at-most-once runs none, and `run`
    /// refuses --ackers with it).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = count_at_least::<0>)]
    ackers: usize,
    /// Processing bolt tasks, 1 to 1000.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = count_at_least::<0>)]
    bolts: usize,
    /// Latency between workers, uniform in MIN..MAX.
    #[arg(long, default_value = "50us..150us", allow_hyphen_values = true, value_parser = latency_range)]
    latency: (u64, u64),
    /// Latency inside one worker.
    #[arg(long, default_value = "1us", allow_hyphen_values = true, value_parser = duration)]
    local_latency: u64,
    /// Spout time per next_tuple call or notice.
    #[arg(long, default_value = "500ns", allow_hyphen_values = true, value_parser = duration)]
    spout_ns: u64,
    /// Bolt time per input.
    #[arg(long, default_value = "2us", allow_hyphen_values = true, value_parser = duration)]
    bolt_ns: u64,
    /// Acker time per message.
    #[arg(long, default_value = "200ns", allow_hyphen_values = true, value_parser = duration)]
    acker_ns: u64,
    /// How long a crashed task or worker stays down [default: 1s, a restarted worker process;
    /// 1ms for `experiment`, a task restarted in place, so that a crashed task comes back within
    /// its run (about 0.2 s of simulated time at 100000 tuples); its title line gives the value].
    #[arg(long, allow_hyphen_values = true, value_parser = duration)]
    restart_delay: Option<u64>,
    /// How long a partition lasts, more than 0.
    #[arg(long, default_value = "2s", allow_hyphen_values = true, value_parser = positive_duration)]
    partition: u64,
    /// How long the server is down in a source-outage or sink-outage fault (the spout and sink
    /// see it back at their next reconnect attempt: 50 ms doubling to 2 s).
    #[arg(long, default_value = "500ms", allow_hyphen_values = true, value_parser = positive_duration)]
    outage: u64,
    /// The source: `kafka` (a restarted spout replays everything after the committed offset) or
    /// `redis` (a restarted spout re-delivers only its own pending entries).
    #[arg(long, default_value = "kafka", value_parser = source_model)]
    source_model: SourceModel,
    /// Place the whole topology in one worker (a worker-crash then crashes every task, as a
    /// real worker kill does; message loss and partitions need two workers).
    #[arg(long)]
    one_worker: bool,
    /// Rate-per-second faults are drawn over 0..this.
    #[arg(long, default_value = "2s", allow_hyphen_values = true, value_parser = duration)]
    fault_until: u64,
    /// Stop a run here (a liveness violation if unfinished), more than 0; default: derived from
    /// the schedule.
    #[arg(long, allow_hyphen_values = true, value_parser = positive_duration)]
    time_limit: Option<u64>,
    /// Most replays a run may make (spout emits beyond --tuples: each failed or timed-out tree
    /// replayed is one), and most failed or timed-out trees (each a replay owed), at least 1
    /// [default: --tuples, at least 100000, lowered to what memory holds after the input]. Each
    /// failed tree and its replay keep about 300 B until the run ends, and the memory check of
    /// --tuples counts them. A run past it stops with
    /// exit status 2 (its trees time out faster than they complete: a --timeout too short for
    /// the load, or a task down for many timeouts).
    #[arg(long, allow_negative_numbers = true, value_parser = at_least::<1>)]
    max_replays: Option<u64>,
    /// Test only: plant a bug (`search --planted-bug list` prints the names this build takes,
    /// one a line: the simulator's own always, acker-core's and the runtime's only in a build
    /// with `--features planted-bugs`).
    #[arg(long)]
    planted_bug: Option<String>,
}

impl SimArgs {
    fn planted(&self) -> Result<Option<PlantedBug>, String> {
        match &self.planted_bug {
            Some(b) => Ok(Some(b.parse::<PlantedBug>().map_err(|e| e.to_string())?)),
            None => Ok(None),
        }
    }

    fn scenario(
        &self,
        seed: u64,
        guarantee: Guarantee,
        default_tuples: u64,
    ) -> Result<Scenario, String> {
        let mut sc = Scenario::new(seed, guarantee);
        sc.tuples = self.tuples.unwrap_or(default_tuples);
        sc.max_spout_pending = self.max_spout_pending as usize;
        sc.message_timeout_ns = self.timeout.unwrap_or(30_000_000_000);
        sc.tick_interval_ns = self.tick;
        sc.ackers = self.ackers;
        sc.bolts = self.bolts;
        (sc.latency_min_ns, sc.latency_max_ns) = self.latency;
        sc.local_latency_ns = self.local_latency;
        sc.spout_ns = self.spout_ns;
        sc.bolt_ns = self.bolt_ns;
        sc.acker_ns = self.acker_ns;
        if let Some(d) = self.restart_delay {
            sc.restart_delay_ns = d;
        }
        sc.partition_ns = self.partition;
        sc.outage_ns = self.outage;
        sc.source_model = self.source_model;
        sc.one_worker = self.one_worker;
        sc.time_limit_ns = self.time_limit;
        sc.max_replays = self.max_replays;
        sc.planted_bug = self.planted()?;
        sc.validate().map_err(|e| e.to_string())?;
        Ok(sc)
    }
}

#[derive(Args)]
struct ExperimentArgs {
    /// The seed of every run.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = at_least::<0>)]
    seed: u64,
    /// Print `{"rows": [...], "relations": [...]}` instead of the table: the rows, then each
    /// relation of the table's `Relations` as `{name, holds, detail}`.
    #[arg(long)]
    json: bool,
    /// Also draw loss and duplicates against injected faults into this SVG file (with `--real`:
    /// measured against predicted; `-` is refused: stdout carries the table).
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<std::path::PathBuf>,
    /// Run each cell on a private redis-server and PostgreSQL with real processes and crashes,
    /// beside the simulator's prediction (message timeout 2 s unless `--timeout`).
    #[arg(long)]
    real: bool,
    /// With --real: 10,000 tuples (unless --tuples) and counts 0 and 1.
    #[arg(long, requires = "real")]
    quick: bool,
    /// With --real: only these cells, `GUARANTEE/FAULT/COUNT,...` (FAULT `none` with count 0; an
    /// empty item is refused).
    #[arg(long, requires = "real", value_name = "CELLS", value_parser = cell_list)]
    cells: Option<String>,
    /// With --real: cut a cell after this long [default: 60 s + 1 s per 1000 tuples].
    /// A wall-clock interval, at most 604800s (7 days).
    #[arg(long, requires = "real", allow_hyphen_values = true, value_parser = positive_wall_interval)]
    cell_limit: Option<u64>,
    /// With --real, test only: plant a bug in the worker (spout-acks-on-read,
    /// sink-without-dedup, bolt-swallows-exception).
    #[arg(long, requires = "real", hide = true)]
    real_planted_bug: Option<String>,
    #[command(flatten)]
    sim: SimArgs,
}

#[derive(Args)]
struct RunArgs {
    /// The run's seed.
    #[arg(long, allow_negative_numbers = true, value_parser = at_least::<0>)]
    seed: u64,
    /// at-most-once, at-least-once or exactly-once.
    #[arg(long, default_value = "at-least-once")]
    guarantee: String,
    /// Comma-separated faults, e.g. `acker-crash*2,message-loss~0.5/s,bolt-crash@1s:0` (`none`
    /// or leaving it out: no fault; an empty item, as in `,` or `bolt-crash,`, is refused).
    #[arg(long, default_value = "none", value_parser = fault_list)]
    faults: String,
    /// Write the text trace (one line per send, drop, fault, restart) to this file; `-` writes
    /// it to standard output, and the report (verdict, trace hash, ...) then goes to standard
    /// error, so that stdout holds the trace alone. A trace that cannot be written ends the run
    /// with exit status 2 and a message naming the file.
    #[arg(long, value_name = "FILE")]
    trace: Option<std::path::PathBuf>,
    /// Run twice and fail unless both trace hashes are equal.
    #[arg(long)]
    check_determinism: bool,
    /// The topology shape (experiment, join, all-grouping, fields-chain, ackers, combined; see
    /// `acker_sim::shapes`). Shapes other than the experiment are at-least-once user topologies
    /// of their own sizes and timings: they take --seed, --faults, --fault-until, --trace,
    /// --check-determinism and --planted-bug; any other option given with one is refused (--tuples,
    /// --restart-delay, --source-model, ...), and --guarantee other than at-least-once draws a
    /// warning. A shape has no source or sink server: its --faults may not name source-outage or
    /// sink-outage.
    #[arg(long, default_value = "experiment")]
    shape: String,
    #[command(flatten)]
    sim: SimArgs,
}

#[derive(Args)]
struct SearchArgs {
    /// How many seeds to run, 1 to 10000000 (required, except with `--planted-bug list`). A seed
    /// of the default 1000 tuples takes about 2.5 ms (more with faults to shrink), so the
    /// largest search runs for hours: split a larger one with --first-seed.
    #[arg(long, allow_negative_numbers = true, value_parser = seed_count,
          required_unless_present = "planted_bug", default_value_t = 1, hide_default_value = true)]
    seeds: u64,
    /// The first seed.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = at_least::<0>)]
    first_seed: u64,
    /// Pick a random subset of fault kinds with random weights per seed (so not with --faults),
    /// and a topology shape
    /// (the experiment, or one of `acker_sim::shapes`' at-least-once topologies, which draw
    /// their faults at 30 × --rate, leaving out the outages, which a shape cannot use: their
    /// input is 40 or 80 keys) unless --guarantee names
    /// at-most-once or exactly-once (then every seed runs the experiment). About one shape seed
    /// in four (drawn from the seed) also runs a second time with no fault, since the swarm's
    /// subsets of fault kinds never include the empty one: that seed has two runs, and under
    /// --list two replay lines, the second without --faults. The size and timing
    /// options (--tuples, --restart-delay, ...) apply to the experiment's seeds only, with a
    /// warning on stderr.
    #[arg(long)]
    swarm: bool,
    /// Fix the guarantee (default: the three in turn by seed).
    #[arg(long)]
    guarantee: Option<String>,
    /// Faults of every seed, comma-separated as `run --faults` takes them (an empty item is
    /// refused; default: every kind but the outages, at 0.5 to 1 per thousand tuples). Not with
    /// --swarm, which draws each seed's fault kinds and rates itself (refused, not ignored).
    #[arg(long, value_parser = fault_list, conflicts_with = "swarm")]
    faults: Option<String>,
    /// Swarm mode's base rate, in faults per thousand tuples (only with --swarm).
    #[arg(
        long,
        default_value_t = 2.0,
        allow_negative_numbers = true,
        requires = "swarm"
    )]
    rate: f64,
    /// Do not shrink violations.
    #[arg(long)]
    no_shrink: bool,
    /// Print each seed's replay command without running it: one line a run, so with --swarm a
    /// shape seed that also runs fault-free prints two (the second without --faults). The last
    /// line counts both: `listed R replay command(s) for N seeds ... (none run)`.
    #[arg(long)]
    list: bool,
    /// Write a progress line to stderr at this interval (e.g. 30s): seeds done of --seeds,
    /// violating seeds, elapsed time and an estimate of the time left. Without it, a progress
    /// bar is drawn on stderr only when stderr is a terminal. Either way stdout is unchanged.
    /// The interval is at least 100ms and at most 604800s (7 days).
    #[arg(long, value_name = "INTERVAL", allow_hyphen_values = true, value_parser = progress_interval)]
    progress_every: Option<u64>,
    #[command(flatten)]
    sim: SimArgs,
}

/// Largest `search --seeds`: at about 2.5 ms a seed of 1000 tuples, some 7 hours of search.
const MAX_SEEDS: u64 = 10_000_000;

/// clap value parser for `search --seeds`: 1 to [`MAX_SEEDS`].
fn seed_count(s: &str) -> Result<u64, String> {
    let too_many = || {
        format!(
            "must be at most {MAX_SEEDS} (about 2.5 ms a seed at 1000 tuples: hours of search; \
             split a larger search into parts with --first-seed)"
        )
    };
    match at_least::<1>(s) {
        Err(e) if e.starts_with("is too large") => Err(too_many()),
        Ok(n) if n > MAX_SEEDS => Err(too_many()),
        r => r,
    }
}

/// Shortest `search --progress-every`: shorter would fill stderr with a line per seed.
const MIN_PROGRESS_NS: u64 = 100_000_000;

/// clap value parser for `search --progress-every`: a wall-clock interval ([`wall_interval`]) of
/// at least [`MIN_PROGRESS_NS`].
fn progress_interval(s: &str) -> Result<u64, String> {
    match wall_interval(s)? {
        ns if ns < MIN_PROGRESS_NS => Err("must be at least 100ms (e.g. 30s)".into()),
        ns => Ok(ns),
    }
}

/// `search --progress-every`'s lines on stderr: one each interval, as seeds finish.
struct ProgressLines {
    every: Option<std::time::Duration>,
    start: Instant,
    next: Instant,
}

impl ProgressLines {
    fn new(every_ns: Option<u64>) -> Self {
        let every = every_ns.map(std::time::Duration::from_nanos);
        let start = Instant::now();
        ProgressLines {
            every,
            start,
            next: start + every.unwrap_or_default(),
        }
    }

    /// Writes the line when the interval has passed: `done` of `total` seeds, `violating`.
    fn seed_done(&mut self, done: u64, total: u64, violating: u64) {
        let Some(every) = self.every else {
            return;
        };
        let now = Instant::now();
        if now < self.next {
            return;
        }
        // The first multiple of `every` after `now`, in one step however many intervals passed.
        let passed = now.duration_since(self.next).as_nanos() / every.as_nanos().max(1) + 1;
        let step = every.as_nanos().saturating_mul(passed);
        let step = std::time::Duration::from_nanos(u64::try_from(step).unwrap_or(u64::MAX));
        self.next = self.next.checked_add(step).unwrap_or(now + every);
        let elapsed = now.duration_since(self.start).as_secs_f64();
        let left = elapsed / done.max(1) as f64 * total.saturating_sub(done) as f64;
        acker_runtime::stderr_line!(
            "acker-sim: progress: {done}/{total} seeds, {violating} violating, {elapsed:.1} s \
             elapsed, about {left:.0} s left"
        );
    }
}

/// The options of `run` a user-topology shape takes: the rest size and time the experiment's
/// topology, and a shape has its own (its `--help` says so).
const SHAPE_OPTIONS: [&str; 8] = [
    "seed",
    "guarantee",
    "faults",
    "trace",
    "check_determinism",
    "shape",
    "fault_until",
    "planted_bug",
];

/// The options of `search` that apply to its shape seeds too (the rest size and time the
/// experiment's topology).
const SEARCH_SHAPE_OPTIONS: [&str; 11] = [
    "seeds",
    "first_seed",
    "swarm",
    "guarantee",
    "faults",
    "rate",
    "no_shrink",
    "list",
    "progress_every",
    "fault_until",
    "planted_bug",
];

/// The `--long` names of the options given on the command line (not by default) in `matches`
/// that a shape does not take (not in `takes`), in `command`'s order.
fn options_a_shape_ignores(
    command: &clap::Command,
    matches: &clap::ArgMatches,
    takes: &[&str],
) -> Vec<String> {
    command
        .get_arguments()
        .filter(|a| !takes.contains(&a.get_id().as_str()))
        .filter(|a| {
            matches.value_source(a.get_id().as_str())
                == Some(clap::parser::ValueSource::CommandLine)
        })
        .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
        .collect()
}

fn main() -> ExitCode {
    use clap::{CommandFactory, FromArgMatches};
    let command = Cli::command();
    let matches = command.clone().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let r = match cli.command {
        Command::Experiment(a) => cmd_experiment(a),
        Command::Run(a) => {
            let given = match (command.find_subcommand("run"), matches.subcommand()) {
                (Some(run), Some(("run", m))) => options_a_shape_ignores(run, m, &SHAPE_OPTIONS),
                _ => Vec::new(),
            };
            cmd_run(a, &given)
        }
        Command::Search(a) => {
            let given = match (command.find_subcommand("search"), matches.subcommand()) {
                (Some(search), Some(("search", m))) => {
                    options_a_shape_ignores(search, m, &SEARCH_SHAPE_OPTIONS)
                }
                _ => Vec::new(),
            };
            cmd_search(a, &given)
        }
        #[cfg(feature = "real")]
        Command::Worker(a) => match acker_sim::real::worker::run(&a) {
            Ok(summary) => {
                println!("{summary}");
                Ok(ExitCode::SUCCESS)
            }
            Err(e) => Err(e.into()),
        },
    };
    exit_status("acker-sim", r)
}

/// `experiment --real` (feature `real`).
#[cfg(feature = "real")]
fn cmd_real_experiment(a: ExperimentArgs) -> Result<ExitCode, CliError> {
    use acker_sim::real::driver;
    let tuples = a
        .sim
        .tuples
        .unwrap_or(if a.quick { 10_000 } else { 100_000 });
    let cells = match &a.cells {
        Some(c) => driver::parse_cells(c)
            .map_err(|e| list_error("--cells", c, e, |i| driver::parse_cells(i).is_err()))?,
        None => driver::cells(a.quick),
    };
    if let Some(b) = &a.real_planted_bug {
        b.parse::<acker_sim::real::worker::WorkerBug>()?;
    }
    let timeout_ms = a.sim.timeout.unwrap_or(2_000_000_000) / 1_000_000;
    if timeout_ms == 0 {
        return Err("--timeout must be at least 1ms with --real"
            .to_string()
            .into());
    }
    let o = driver::RealOptions {
        tuples,
        timeout_ms,
        max_spout_pending: a.sim.max_spout_pending,
        seed: a.seed,
        cells,
        cell_limit: std::time::Duration::from_nanos(
            a.cell_limit
                .unwrap_or(60_000_000_000 + tuples.saturating_mul(1_000_000)),
        ),
        planted_bug: a.real_planted_bug.clone(),
    };
    driver::command(&o, a.json, a.plot.as_deref())
}

/// `experiment --real` without the `real` feature.
#[cfg(not(feature = "real"))]
fn cmd_real_experiment(_a: ExperimentArgs) -> Result<ExitCode, CliError> {
    Err(
        "this acker-sim was built without the `real` feature (cargo build -p acker-sim \
         --features real)"
            .to_string()
            .into(),
    )
}

/// Nanoseconds this thread has run on a CPU (the first field of Linux's
/// `/proc/thread-self/schedstat`), `None` where that file cannot be read. The simulation runs on
/// the calling thread, so the difference around a run is its CPU time (what issue 15's "messages
/// per CPU second" counts), at nanosecond resolution.
fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Refuses a `--plot` path that cannot be written before any cell runs (a user lost a whole
/// real run to a bad path, told only "No such file or directory"), leaving no file behind
/// ([`experiment::check_plot_writable`]): the plot is written whole at the end.
fn check_plot_path(plot: Option<&std::path::Path>) -> Result<(), CliError> {
    if let Some(path) = plot {
        if path == std::path::Path::new("-") {
            // Not a file named `-` (new-user trial: `--trace -` made one), and not stdout,
            // which carries the table or the JSON.
            return Err(CliError::Usage(
                "--plot - is not taken: the plot is an SVG file and standard output carries the \
                 table (or the JSON); give the file's path"
                    .to_string(),
            ));
        }
        experiment::check_plot_writable(path)?;
    }
    Ok(())
}

fn cmd_experiment(a: ExperimentArgs) -> Result<ExitCode, CliError> {
    if a.real {
        check_plot_path(a.plot.as_deref())?;
        return cmd_real_experiment(a);
    }
    let mut base = a.sim.scenario(a.seed, Guarantee::AtLeastOnce, 100_000)?;
    check_memory(&mut base)?;
    if a.sim.restart_delay.is_none() {
        base.restart_delay_ns = experiment::RESTART_DELAY_NS;
    }
    experiment::check_saturating(&base).map_err(|e| e.to_string())?;
    check_plot_path(a.plot.as_deref())?;
    let start = Instant::now();
    let cells = experiment::cells();
    let bar = indicatif::ProgressBar::new(cells.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} runs {msg} [{elapsed}]")
            .map_err(|e| e.to_string())?,
    );
    // Each row is written as its run finishes (the title and header first), so that a reader
    // that stops early (`| head -1`) ends the command at its next write instead of after every
    // run (new-user trial: `experiment | head -1` ran all 75 runs).
    let mut out = io::stdout().lock();
    let layout = experiment::TableLayout::for_input(base.tuples, base.max_spout_pending as u64);
    if a.json {
        write!(out, "{}", experiment::json_rows_start())?;
    } else {
        writeln!(out,
            "Reliability experiment: {} unique sequential numbers (the input of every row), seed {},\nmax spout pending {}, message timeout {} s, restart delay {} s, {} source model, faults spread over the input",
            base.tuples,
            base.seed,
            base.max_spout_pending,
            base.message_timeout_ns as f64 / 1e9,
            base.restart_delay_ns as f64 / 1e9,
            base.source_model
        )?;
        writeln!(out)?;
        write!(out, "{}", layout.header())?;
    }
    out.flush()?;
    let mut rows = Vec::with_capacity(cells.len());
    for (g, k, c) in cells {
        // An error names its cell (second trial: a cell that hit the replay limit ended the
        // experiment without saying which).
        let (row, _) = experiment::run_cell(&base, g, k, c).map_err(|e| {
            let fault = k.map_or("no fault".to_string(), |k| format!("{} × {c}", k.name()));
            format!("cell {} with {fault}: {e}", g.name())
        })?;
        bar.set_message(format!("{} {} {}", row.guarantee, row.fault, row.injected));
        bar.inc(1);
        let text = if a.json {
            experiment::json_row(&row, rows.is_empty()).map_err(|e| e.to_string())?
        } else {
            layout.row(&row)
        };
        bar.suspend(|| {
            write!(out, "{text}")?;
            out.flush()
        })?;
        rows.push(row);
    }
    bar.finish_and_clear();
    let relations = experiment::relations_for(&rows, base.source_model);
    if a.json {
        let end = experiment::json_end(rows.is_empty(), &relations).map_err(|e| e.to_string())?;
        write!(out, "{end}")?;
    } else {
        writeln!(out)?;
        writeln!(
            out,
            "Relations (seed experiment, DESIGN.md \"Delivery guarantees\"):"
        )?;
        experiment::write_relations(&mut out, &relations)?;
    }
    out.flush()?;
    // After the last write to stdout: a run that could not write its table leaves no plot.
    if let Some(path) = &a.plot {
        experiment::plot_svg(&rows, path)?;
    }
    acker_runtime::stderr_line!(
        "acker-sim: {} runs in {:.2} s",
        rows.len(),
        start.elapsed().as_secs_f64()
    );
    Ok(experiment::exit_status(&relations))
}

/// Whether `--trace` names standard output (`-`).
fn trace_to_stdout(trace: Option<&std::path::Path>) -> bool {
    trace == Some(std::path::Path::new("-"))
}

/// The writer of `run --trace`: standard output for `-`, else the file, created (or emptied)
/// here; `None` without `--trace`.
fn open_trace(trace: Option<&std::path::Path>) -> Result<Option<Box<dyn Write>>, CliError> {
    let Some(p) = trace else {
        return Ok(None);
    };
    if trace_to_stdout(trace) {
        return Ok(Some(Box::new(io::BufWriter::new(io::stdout()))));
    }
    let f = std::fs::File::create(p)
        .map_err(|e| format!("cannot create --trace file {}: {e}", p.display()))?;
    Ok(Some(Box::new(io::BufWriter::new(f))))
}

/// A failed run as a [`CliError`]; a trace that could not be written names its file (or is a
/// stdout error for `--trace -`, so a closed pipe ends the command quietly).
fn run_error(e: RunError, trace: Option<&std::path::Path>) -> CliError {
    match (e, trace) {
        (RunError::Io(e), _) if trace_to_stdout(trace) => CliError::Stdout(e),
        (RunError::Io(e), Some(p)) => {
            format!("cannot write --trace file {}: {e}", p.display()).into()
        }
        (e, _) => e.to_string().into(),
    }
}

/// Where `run` writes its report: standard output, or standard error when the trace goes to
/// standard output (`--trace -`), so that stdout holds the trace alone.
fn report_out(trace: Option<&std::path::Path>) -> Box<dyn Write> {
    if trace_to_stdout(trace) {
        Box::new(io::stderr().lock())
    } else {
        Box::new(io::stdout().lock())
    }
}

/// The refusal of `--ackers` with `--guarantee at-most-once` (`run`, and `search` with that
/// guarantee fixed).
const AT_MOST_ONCE_NO_ACKERS: &str = "--guarantee at-most-once runs no acker task, so it does \
not take --ackers (leave it out, or use --guarantee at-least-once or exactly-once)";

/// `acker-sim run`; `given`: the options on the command line that a shape does not take
/// ([`options_a_shape_ignores`]).
/// Bytes of memory a run keeps per input tuple, rounded up from the resident peak of `run --seed
/// 1 --tuples N` at 1 and 2 million (`/usr/bin/time -v`: 131404 and 257184 KB, 129 B a tuple):
/// the root set, the source's emit records, the sink's counters, ...
const BYTES_PER_TUPLE: u64 = 144;

/// Refuses `--tuples` when a run of that many tuples needs more memory than this process may have
/// (the machine's, or what `ulimit -v` / `ulimit -d` leaves), before anything is built (new-user
/// trial: `run --tuples 100000000` under `ulimit -v 1000000` died of SIGABRT in an allocation of
/// 256 MiB). The runs of `search` and `experiment` are one at a time, so each is checked alike.
///
/// The run's replays are counted too, up to its replay limit (`sc`'s `max_replays`, at
/// [`BYTES_PER_REPLAY`] each): the limit is what keeps a run whose trees keep timing out within
/// this estimate. Without `--max-replays`, the default limit (the input's size, at least
/// 100000) is lowered to what the memory left after the input holds, so that the replay term
/// never refuses a run whose input fits (a run with `--tuples 100000000` was accepted before the
/// limit existed); a run that reaches a lowered limit ends with its error, naming it. Given
/// explicitly, the limit is counted as it is.
fn check_memory(sc: &mut Scenario) -> Result<(), CliError> {
    const RESERVE: u64 = 16_000_000;
    let tuples = sc.tuples;
    let input = tuples.saturating_mul(BYTES_PER_TUPLE);
    if sc.max_replays.is_none() {
        if let Some(bound) = acker_runtime::cli::memory_bound(RESERVE) {
            let default = acker_sim::engine::replay_limit(&sc.sim_options());
            // When not even the fewest replays fit, the refusal below speaks of those.
            let fits =
                (bound.room.saturating_sub(input) / BYTES_PER_REPLAY).max(MIN_LOWERED_REPLAYS);
            if fits < default {
                sc.max_replays = Some(fits);
            }
        }
    }
    let replays = acker_sim::engine::replay_limit(&sc.sim_options());
    let need = input.saturating_add(replays.saturating_mul(BYTES_PER_REPLAY));
    // One thread: 16 MB in reserve for the process (it maps about 5 MB at the check).
    acker_runtime::cli::check_memory(
        need,
        RESERVE,
        &format!(
            "--tuples {tuples} with up to {replays} replays (--max-replays) needs about {} of \
             memory (about {BYTES_PER_TUPLE} B a tuple and {BYTES_PER_REPLAY} B a replay)",
            acker_runtime::cli::size(need)
        ),
        "lower --tuples or --max-replays",
    )
    .map_err(CliError::Usage)
}

/// The fewest replays a default replay limit is lowered to (see [`check_memory`]): below it the
/// run is refused instead, as one that could not replay even a few of its trees.
const MIN_LOWERED_REPLAYS: u64 = 1000;

fn cmd_run(a: RunArgs, given: &[String]) -> Result<ExitCode, CliError> {
    let g: Guarantee = a
        .guarantee
        .parse()
        .map_err(|e: acker_sim::ScenarioError| e.to_string())?;
    let shape: Shape = a.shape.parse::<Shape>()?;
    if shape != Shape::Experiment {
        if !given.is_empty() {
            // Refused, not ignored (new-user trial: `--shape join --tuples 5` ran the shape's
            // own 40 keys and said nothing).
            return Err(CliError::Usage(format!(
                "--shape {} runs a topology of its own sizes and timings, so it does not take {} \
                 (a shape takes --seed, --faults, --fault-until, --trace, --check-determinism \
                 and --planted-bug)",
                a.shape,
                given.join(", ")
            )));
        }
        if g != Guarantee::AtLeastOnce {
            // Said, not refused: a search's replay line for a shape seed names the guarantee too.
            acker_runtime::stderr_line!(
                "acker-sim: warning: --guarantee {} does not apply to --shape {}, an at-least-once \
                 topology of its own: running at-least-once",
                a.guarantee, a.shape
            );
        }
        return run_shape(&a, shape);
    }
    if g == Guarantee::AtMostOnce && given.iter().any(|o| o == "--ackers") {
        // Refused, not ignored (new-user trial: `--guarantee at-most-once --ackers 5` ran with
        // no acker and said nothing).
        return Err(CliError::Usage(AT_MOST_ONCE_NO_ACKERS.to_string()));
    }
    let mut sc = a.sim.scenario(a.seed, g, 1000)?;
    check_memory(&mut sc)?;
    if let Err(e) = sc.check_plant_can_fire() {
        // Not refused: a search's replay command for a seed whose guarantee the plant cannot act
        // under must still run; but never a silent clean verdict.
        acker_runtime::stderr_line!(
            "acker-sim: warning: {e}; this run's verdict says nothing about the bug"
        );
    }
    let specs = fault::parse_specs(&a.faults).map_err(|e| faults_error(&a.faults, e))?;
    sc.set_fault_specs(&specs, a.sim.fault_until)
        .map_err(|e| list_error("--faults", &a.faults, e, |_| false))?;
    if sc.num_ackers() == 0 && specs.iter().any(|s| s.kind == FaultKind::AckerCrash) {
        // Said, not refused: a search's replay line for an at-most-once seed lists the acker
        // crashes its faults drew (no-ops that are part of its trace hash).
        acker_runtime::stderr_line!(
            "acker-sim: warning: --guarantee {} runs no acker task, so the acker-crash faults of \
             --faults `{}` do nothing (the faults: line leaves them out)",
            sc.guarantee,
            a.faults
        );
    }
    if sc.planted_bug == Some(PlantedBug::RestartReusesSeed)
        && sc.check_plant_can_fire().is_ok()
        && !specs
            .iter()
            .any(|s| matches!(s.kind, FaultKind::SpoutCrash | FaultKind::WorkerCrash))
    {
        // Said, not refused, as a plant the guarantee rules out (new-user trial: a plant that
        // could not act gave `verdict: ok` and no word).
        acker_runtime::stderr_line!(
            "acker-sim: warning: planted bug `restart-reuses-seed` cannot fire without a \
             restarted spout, and --faults `{}` has no spout-crash or worker-crash; this run's \
             verdict says nothing about the bug",
            a.faults
        );
    }
    let start = Instant::now();
    let cpu_start = thread_cpu_ns();
    let (o, world) = Sim::run_world(sc.clone(), open_trace(a.trace.as_deref())?)
        .map_err(|e| run_error(e, a.trace.as_deref()))?;
    let wall = start.elapsed().as_secs_f64();
    let cpu = cpu_start
        .zip(thread_cpu_ns())
        .map(|(a, b)| b.saturating_sub(a) as f64 / 1e9);
    let mut out = report_out(a.trace.as_deref());
    writeln!(out, "seed {} ({})", sc.seed, sc.guarantee)?;
    // With no acker task an acker crash does nothing: not listed as fired, but counted in a note.
    let (noops, acted): (Vec<Fault>, Vec<Fault>) = o
        .fired
        .iter()
        .partition(|f| sc.num_ackers() == 0 && f.kind == FaultKind::AckerCrash);
    writeln!(out, "faults: {}", faults_line(&acted))?;
    if !noops.is_empty() {
        writeln!(
            out,
            "note: {} acker-crash fault(s) did nothing: {} runs no acker task",
            noops.len(),
            sc.guarantee
        )?;
    }
    write_fault_notes(&mut out, &a.faults, &sc.faults, &o.fired, o.end_ns, true)?;
    writeln!(
        out,
        "input {}  distinct {}  lost {}  duplicates {}  absorbed {}",
        o.input, o.distinct, o.lost, o.duplicates, o.absorbed
    )?;
    if sc.source_model == SourceModel::Redis {
        let log = acker_sim::engine::lock(&world.log);
        writeln!(
            out,
            "redis: pending {}  redelivered after restarts {:?}  dead-lettered {}",
            log.pending_entries(),
            log.redelivered(),
            log.dead_lettered().len()
        )?;
    }
    writeln!(out,
        "spout: acked {} failed {} timed out {} ignored {}  acker: completed {} failed {} max roots {}",
        o.spout.acked,
        o.spout.failed,
        o.spout.timed_out,
        o.spout.ignored,
        o.acker.acked,
        o.acker.failed,
        o.max_acker_roots
    )?;
    writeln!(
        out,
        "events {}  max queued {}  messages delivered {}  dropped {}  simulated {:.6} s",
        o.events,
        o.max_queue_len,
        o.delivered,
        o.dropped,
        o.end_ns as f64 / 1e9
    )?;
    let per_cpu = match cpu {
        Some(c) if c > 0.0 => format!(
            "; CPU {c:.3} s, {:.2} M simulated messages per CPU second",
            o.delivered as f64 / c / 1e6
        ),
        _ => String::new(),
    };
    acker_runtime::stderr_line!(
        "acker-sim: wall {:.3} s, {:.2} M simulated messages/s, {:.2} M events/s{per_cpu}",
        wall,
        o.delivered as f64 / wall / 1e6,
        o.events as f64 / wall / 1e6
    );
    let again = || {
        Sim::run(sc.clone(), None)
            .map(|o| o.trace_hash)
            .map_err(|e| e.to_string())
    };
    finish_run(
        &mut out,
        sc.seed,
        &o.violations,
        o.trace_hash,
        a.check_determinism,
        again,
    )
}

/// The end of every `run`'s report: the verdict with each violation, the trace hash, and with
/// `--check-determinism` the trace hash of a second run (`again`) compared with the first.
/// Exit status 0 when every oracle held, 1 on a violation, 3 when the second run differed.
fn finish_run(
    out: &mut impl Write,
    seed: u64,
    violations: &[impl std::fmt::Display],
    trace_hash: u64,
    check_determinism: bool,
    again: impl FnOnce() -> Result<u64, String>,
) -> Result<ExitCode, CliError> {
    if violations.is_empty() {
        writeln!(out, "verdict: ok (every oracle held)")?;
    } else {
        writeln!(out, "verdict: VIOLATION")?;
        for v in violations {
            writeln!(out, "  {v}")?;
        }
    }
    writeln!(out, "trace hash {trace_hash:016x}")?;
    if check_determinism {
        let second = again()?;
        if second != trace_hash {
            acker_runtime::stderr_line!(
                "acker-sim: NONDETERMINISM: seed {seed} gave trace hash {trace_hash:016x}, then {second:016x}"
            );
            return Ok(ExitCode::from(3));
        }
        writeln!(out, "determinism: ok (second run gave the same trace hash)")?;
    }
    out.flush()?;
    Ok(if violations.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Swarm mode's fault rate for the shapes, as a multiple of --rate (their input is 40 or 80
/// keys, the experiment's 1000 tuples).
const SHAPE_RATE_FACTOR: f64 = 30.0;

/// The simulation of `shape` for `seed` with `planted`, without faults.
fn shape_sim(shape: Shape, seed: u64, planted: Option<PlantedBug>) -> Result<Simulation, RunError> {
    shape
        .simulation(seed, planted)
        .ok_or_else(|| RunError::BadOption("the experiment shape has no user simulation".into()))
}

/// The fault kinds a user-topology shape cannot use: it has no source or sink server, so an
/// outage would fire and do nothing.
const SHAPELESS_FAULTS: [FaultKind; 2] = [FaultKind::SourceOutage, FaultKind::SinkOutage];

/// The kind an item of a `--faults` list names (`None` for `none` or no kind).
fn item_kind(item: &str) -> Option<FaultKind> {
    item.split(['@', '*', '~', ':']).next()?.parse().ok()
}

/// Refuses a `--faults` item of `shape` that the shape cannot use ([`SHAPELESS_FAULTS`]),
/// naming the fault, the shape and the faults it can use (new-user trial: `--shape join
/// --faults sink-outage` fired and did nothing).
fn check_shape_faults(shape: Shape, faults: &str) -> Result<(), CliError> {
    for item in list_items(faults).unwrap_or_default() {
        if let Some(kind) = item_kind(item).filter(|k| SHAPELESS_FAULTS.contains(k)) {
            let usable: Vec<&str> = FaultKind::ALL
                .iter()
                .filter(|k| !SHAPELESS_FAULTS.contains(k))
                .map(|k| k.name())
                .collect();
            return Err(CliError::Usage(format!(
                "--shape {shape} cannot use the fault {kind} (`{item}` in --faults): a shape has \
                 no source or sink server, so it would fire and do nothing; --shape {shape} can \
                 use {}",
                usable.join(", ")
            )));
        }
    }
    Ok(())
}

/// `acker-sim run --shape S` for a user-topology shape.
fn run_shape(a: &RunArgs, shape: Shape) -> Result<ExitCode, CliError> {
    check_shape_faults(shape, &a.faults)?;
    let planted = a.sim.planted()?;
    if let Some(b) = planted.filter(|b| !b.can_fire_under(Guarantee::AtLeastOnce)) {
        acker_runtime::stderr_line!(
            "acker-sim: warning: planted bug `{}` cannot fire in the shape `{}`: the user-topology \
             shapes run at-least-once with no de-duplicating sink; this run's verdict says \
             nothing about the bug",
            b.name(),
            a.shape
        );
    }
    let build = || -> Result<Simulation, String> {
        let mut sim = shape_sim(shape, a.seed, planted).map_err(|e| e.to_string())?;
        sim.set_fault_specs(&a.faults, a.sim.fault_until)
            .map_err(|e| list_error("--faults", &a.faults, e, |_| false))?;
        Ok(sim)
    };
    let mut sim = build()?;
    if let Some(w) = open_trace(a.trace.as_deref())? {
        sim.trace_to(w);
    }
    let scheduled = sim.options().faults.clone();
    let o = sim.run().map_err(|e| run_error(e, a.trace.as_deref()))?;
    let mut out = report_out(a.trace.as_deref());
    writeln!(out, "seed {} (shape {shape}, at-least-once)", a.seed)?;
    writeln!(out, "faults: {}", faults_line(&o.fired))?;
    write_fault_notes(&mut out, &a.faults, &scheduled, &o.fired, o.end_ns, false)?;
    for (spout, cb) in &o.callbacks {
        let (acks, fails) = cb.iter().fold((0u64, 0u64), |(x, y), (_, c)| {
            (x + c.acks as u64, y + c.fails as u64)
        });
        writeln!(
            out,
            "spout {spout}: {} message ids, {acks} acks, {fails} fails",
            cb.len()
        )?;
    }
    writeln!(
        out,
        "events {}  messages delivered {}  dropped {}  simulated {:.6} s",
        o.events,
        o.delivered,
        o.dropped,
        o.end_ns as f64 / 1e9
    )?;
    let again = || {
        build()?
            .run()
            .map(|o| o.trace_hash)
            .map_err(|e| e.to_string())
    };
    finish_run(
        &mut out,
        a.seed,
        &o.violations,
        o.trace_hash,
        a.check_determinism,
        again,
    )
}

/// The command line that replays a shape's run with `faults`.
fn shape_replay(shape: Shape, seed: u64, planted: Option<PlantedBug>, faults: &[Fault]) -> String {
    let mut s = format!("acker-sim run --shape {shape} --seed {seed}");
    if let Some(b) = planted {
        s.push_str(&format!(" --planted-bug {}", b.name()));
    }
    if !faults.is_empty() {
        s.push_str(&format!(" --faults '{}'", fault::format_schedule(faults)));
    }
    s
}

/// One swarm seed that runs a user-topology shape: its run, shrunk on a violation. Returns
/// (messages delivered, violated, runs): runs is 2 when the seed also ran fault-free (with
/// `--list`: 2 replay lines printed), else 1.
fn search_shape(
    a: &SearchArgs,
    shape: Shape,
    seed: u64,
    out: &mut impl Write,
    bar: &indicatif::ProgressBar,
) -> Result<(u64, bool, u64), CliError> {
    let (delivered, violated) = search_shape_run(a, shape, seed, false, out, bar)?;
    if violated || !Shape::quiet_for_seed(seed) {
        return Ok((delivered, violated, 1));
    }
    // One seed in four also runs fault-free (see `Shape::quiet_for_seed`).
    let (more, violated) = search_shape_run(a, shape, seed, true, out, bar)?;
    Ok((delivered + more, violated, 2))
}

/// One run of [`search_shape`]: with the seed's swarm faults, or none (`quiet`).
fn search_shape_run(
    a: &SearchArgs,
    shape: Shape,
    seed: u64,
    quiet: bool,
    out: &mut impl Write,
    bar: &indicatif::ProgressBar,
) -> Result<(u64, bool), CliError> {
    let planted = a.sim.planted()?;
    let rate = a.rate * SHAPE_RATE_FACTOR;
    let make = |seed: u64| -> Result<Simulation, RunError> {
        let mut sim = shape_sim(shape, seed, planted)?;
        if !quiet {
            sim.set_swarm_faults(rate)?;
            // The outages a swarm draws do nothing in a shape (and `run --shape` refuses them,
            // so the replay line must not name them): dropped after the draw, which leaves the
            // other faults as drawn.
            let kept: Vec<Fault> = sim
                .options()
                .faults
                .iter()
                .filter(|f| !SHAPELESS_FAULTS.contains(&f.kind))
                .copied()
                .collect();
            sim = sim.with_schedule(kept);
        }
        Ok(sim)
    };
    let sim = make(seed).map_err(|e| e.to_string())?;
    let faults = sim.options().faults.clone();
    if a.list {
        writeln!(out, "{}", shape_replay(shape, seed, planted, &faults))?;
        return Ok((0, false));
    }
    let o = sim.run().map_err(|e| e.to_string())?;
    if o.ok() {
        return Ok((o.delivered, false));
    }
    bar.suspend(|| {
        writeln!(
            out,
            "seed {seed} (shape {shape}, at-least-once{}): {} fault(s) fired",
            if quiet { ", fault-free run" } else { "" },
            o.fired.len()
        )?;
        for v in &o.violations {
            writeln!(out, "  violation: {v}")?;
        }
        writeln!(
            out,
            "  replay: {}",
            shape_replay(shape, seed, planted, &faults)
        )?;
        io::Result::Ok(())
    })?;
    if !a.no_shrink {
        let class = o.violations[0].class();
        let shrunk =
            search::shrink_schedule(&faults, class, |f| search::replay(make, seed, f).ok());
        bar.suspend(|| -> io::Result<()> {
            match shrunk {
                Some(s) => {
                    writeln!(
                        out,
                        "  shrunk ({} runs) to {} fault(s): {}",
                        s.runs,
                        s.faults.len(),
                        fault::format_schedule(&s.faults)
                    )?;
                    for v in &s.outcome.violations {
                        writeln!(out, "    violation: {v}")?;
                    }
                    writeln!(
                        out,
                        "  shrunk replay: {}",
                        shape_replay(shape, seed, planted, &s.faults)
                    )?;
                }
                None => writeln!(out, "  (could not shrink: the violation did not reproduce)")?,
            }
            Ok(())
        })?;
    }
    Ok((o.delivered, true))
}

/// `acker-sim search`; `given`: the options on the command line that its shape seeds do not
/// take ([`options_a_shape_ignores`]).
fn cmd_search(a: SearchArgs, given: &[String]) -> Result<ExitCode, CliError> {
    if a.sim.planted_bug.as_deref() == Some("list") {
        for b in PlantedBug::ALL.into_iter().filter(|b| b.available()) {
            println!("{}", b.name());
        }
        return Ok(ExitCode::SUCCESS);
    }
    if !a.rate.is_finite() || a.rate < 0.0 {
        return Err(format!("--rate {} must be a finite number >= 0", a.rate).into());
    }
    let fixed: Option<Guarantee> = match &a.guarantee {
        Some(g) => Some(
            g.parse()
                .map_err(|e: acker_sim::ScenarioError| e.to_string())?,
        ),
        None => None,
    };
    if fixed == Some(Guarantee::AtMostOnce) {
        if given.iter().any(|o| o == "--ackers") {
            return Err(CliError::Usage(AT_MOST_ONCE_NO_ACKERS.to_string()));
        }
        if let Some(list) = &a.faults {
            let specs = fault::parse_specs(list).map_err(|e| faults_error(list, e))?;
            if specs.iter().any(|s| s.kind == FaultKind::AckerCrash) {
                return Err(CliError::Usage(format!(
                    "--guarantee at-most-once runs no acker task, so the acker-crash faults of \
                     --faults `{list}` would do nothing in every seed: leave them out"
                )));
            }
        }
    }
    let default_specs = "bolt-exception-before-emit~1/kt,bolt-exception-after-emit~1/kt,spout-crash~1/kt,acker-crash~1/kt,bolt-crash~1/kt,worker-crash~0.5/kt,message-loss~1/kt,partition~0.5/kt";
    let specs: Vec<FaultSpec> = match &a.faults {
        Some(list) => fault::parse_specs(list).map_err(|e| faults_error(list, e))?,
        None => fault::parse_specs(default_specs).map_err(|e| e.to_string())?,
    };
    // Seeds `first_seed ..= last_seed`: all of them exist, or the command is refused.
    let last_seed = match a.seeds.checked_sub(1).map(|n| a.first_seed.checked_add(n)) {
        Some(Some(last)) => last,
        _ => {
            return Err(format!(
                "--first-seed {} and --seeds {} run past the last seed ({})",
                a.first_seed,
                a.seeds,
                u64::MAX
            )
            .into())
        }
    };
    let mut template =
        a.sim
            .scenario(a.first_seed, fixed.unwrap_or(Guarantee::AtLeastOnce), 1000)?;
    check_memory(&mut template)?;
    if fixed.is_some() {
        // Every seed runs under that guarantee: a plant that cannot fire there cannot be found.
        // (Turning through the three guarantees, the plant fires in the seeds that allow it.)
        template.check_plant_can_fire().map_err(|e| e.to_string())?;
    }
    let plan = search::SearchPlan {
        template,
        guarantee: fixed,
        swarm: a.swarm,
        specs,
        rate_per_kilo_tuple: a.rate,
        fault_until_ns: a.sim.fault_until,
    };
    // With --progress-every the lines replace the bar (the two would mix on a terminal).
    let bar = if a.progress_every.is_some() {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new(a.seeds)
    };
    let mut lines = ProgressLines::new(if a.list { None } else { a.progress_every });
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:40} {pos}/{len} seeds, {msg} [{elapsed} / {eta}]",
        )
        .map_err(|e| e.to_string())?,
    );
    bar.set_message("0 violating");
    let start = Instant::now();
    let mut out = io::stdout().lock();
    let mut violating = 0u64;
    let mut messages = 0u64;
    let mut done = 0u64;
    // Runs (with --list: replay lines printed): one a seed, two for a shape seed that also runs
    // fault-free.
    let mut runs = 0u64;
    let shapes = a.swarm && matches!(fixed, None | Some(Guarantee::AtLeastOnce));
    if shapes && !given.is_empty() {
        // Said, not refused: the experiment's seeds of the swarm take them.
        acker_runtime::stderr_line!(
            "acker-sim: warning: {} apply to the swarm's experiment seeds only: its shape seeds \
             run topologies of their own sizes and timings (their replay lines say so by \
             leaving them out)",
            given.join(", ")
        );
    }
    for seed in a.first_seed..=last_seed {
        lines.seed_done(done, a.seeds, violating);
        done += 1;
        let shape = if shapes {
            Shape::for_seed(seed)
        } else {
            Shape::Experiment
        };
        if shape != Shape::Experiment {
            let (delivered, violated, n) = search_shape(&a, shape, seed, &mut out, &bar)?;
            runs += n;
            if !a.list {
                bar.inc(1);
            }
            messages += delivered;
            if violated {
                violating += 1;
                bar.set_message(format!("{violating} violating"));
            }
            continue;
        }
        let sc = plan.scenario(seed).map_err(|e| e.to_string())?;
        let g = sc.guarantee;
        runs += 1;
        if a.list {
            writeln!(out, "{}", search::replay_command(&sc))?;
            continue;
        }
        // An error names its seed and how to replay it alone (second trial: a seed that hit the
        // replay limit ended the search without saying which).
        let o = Sim::run(sc.clone(), None).map_err(|e| {
            format!(
                "seed {seed}: {e} (replay this seed alone: {})",
                search::replay_command(&sc)
            )
        })?;
        messages += o.delivered;
        bar.inc(1);
        if o.ok() {
            continue;
        }
        violating += 1;
        bar.set_message(format!("{violating} violating"));
        bar.suspend(|| {
            writeln!(out, "seed {seed} ({g}): {} fault(s) fired", o.fired.len())?;
            for v in &o.violations {
                writeln!(out, "  violation: {v}")?;
            }
            writeln!(out, "  replay: {}", search::replay_command(&sc))?;
            io::Result::Ok(())
        })?;
        if !a.no_shrink {
            let class = o.violations[0].class();
            let shrunk = search::shrink(&sc, class);
            bar.suspend(|| -> io::Result<()> {
                match shrunk {
                    Some(s) => {
                        writeln!(
                            out,
                            "  shrunk ({} runs) to {} fault(s): {}",
                            s.runs,
                            s.scenario.faults.len(),
                            fault::format_schedule(&s.scenario.faults)
                        )?;
                        for v in &s.outcome.violations {
                            writeln!(out, "    violation: {v}")?;
                        }
                        writeln!(
                            out,
                            "  shrunk replay: {}",
                            search::replay_command(&s.scenario)
                        )?;
                    }
                    None => writeln!(out, "  (could not shrink: the violation did not reproduce)")?,
                }
                Ok(())
            })?;
        }
    }
    bar.finish_and_clear();
    let wall = start.elapsed().as_secs_f64();
    // A swarm's shape seeds that also run fault-free add a run (and a replay line) each.
    let extra = runs - done;
    let swarm = match (a.swarm, extra) {
        (false, _) => String::new(),
        (true, 0) => " (swarm)".to_string(),
        (true, n) if a.list => format!(" (swarm: {n} shape seed(s) also listed fault-free)"),
        (true, n) => format!(" (swarm, {runs} runs: {n} shape seed(s) also ran fault-free)"),
    };
    if a.list {
        writeln!(
            out,
            "listed {runs} replay command(s) for {done} seeds{swarm} (none run)"
        )?;
    } else {
        writeln!(out, "searched {done} seeds{swarm}: {violating} violating")?;
    }
    out.flush()?;
    if !a.list {
        acker_runtime::stderr_line!(
            "acker-sim: {:.2} s, {:.2} M simulated messages/s",
            wall,
            messages as f64 / wall / 1e6
        );
    }
    Ok(if violating == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
