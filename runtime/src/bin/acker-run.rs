//! `acker-run`: runs topologies on the thread-per-core shell.
//!
//! - `acker-run wordcount [--input PATH] [--cores N] [--ackers N] [--max-spout-pending N]
//!   [--timeout-secs S] [--fail-rate P --seed S] [--json]`: word count with guaranteed processing
//!   (built-in deterministic sentences without `--input`). With `--redis URL --stream NAME
//!   --postgres URL [--guarantee G] [--group] [--consumer] [--max-retries] [--claim-after-ms]
//!   [--drain]` it runs on real components instead (`acker_runtime::connectors::wordcount`).
//! - `acker-run load --input FILE --redis URL --stream NAME`: one stream entry per line.
//! - `acker-run counts --postgres URL [--top N] [--json]`: the word counts in PostgreSQL.
//! - `acker-run bench pipeline [--seconds S] [--ackers N] [--cores N]`: spout → identity bolt →
//!   null bolt on integers; acked trees per second.
//! - `acker-run bench wordcount --input PATH [--min-mb M]`: word count on the input repeated to
//!   at least M MB, against a plain single-thread split-and-count loop.
//!
//! Output goes through a locked stdout with `writeln!`; a write error ends the command. Exit
//! status: 0 on success, and also when stdout is a pipe its reader closed early (`| head -1`:
//! the reader asked for no more, so the run ends quietly); 2 on bad arguments, a failed run, or
//! any other stdout write error (e.g. `> /dev/full`), with a one-line message on stderr. No
//! signal handler is installed except by a connector worker and `load`: SIGINT and SIGTERM end
//! any other run at once (a shell reports 130 and 143), while a connector worker that has
//! reached both servers stops cleanly on either and exits 0 (saying so on stderr; a second
//! signal exits at once with 130 or 143), and a load that has begun
//! appending stops between two round trips, says what it appended and exits 130 or 143
//! (`EXIT_STATUS_HELP`, shown under `--help`).

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use acker_runtime::cli::{
    at_least, check_acker_capacity, count_at_least, exit_status_with_usage, CliError,
};
use acker_runtime::shell::{self, RunReport, ShellOptions, MAX_CORES_PER_CPU};
use acker_runtime::wordcount::{self, generate_sentences, plain_count, top_words, Lines};
use acker_runtime::{values, Config, Spout, SpoutOutputCollector, TopologyBuilder};
use clap::{Args, Parser, Subcommand};

/// Lines of the built-in input.
const BUILTIN_LINES: usize = 200_000;

/// The exit statuses, shown under `acker-run --help` and `acker-run wordcount --help` (a macro,
/// so that `concat!` can put it under the word count's own text).
macro_rules! exit_status_help {
    () => {
        "Exit status: 0 on success (also when stdout is a pipe closed early, e.g. `| head -1`: \
the run stops quietly); 2 on bad arguments, a failed run or a stdout write error (e.g. \
`> /dev/full`), with a one-line message on stderr (an argument error clap finds adds the usage \
and a hint); 130 on SIGINT (Ctrl-C) and 143 on SIGTERM, \
as a shell reports a process ended by the signal (128 + its number): no handler is installed, so \
the run ends at once and prints no summary. Except a connector worker (wordcount --redis ... \
--postgres ...) once it has reached both servers: SIGINT and SIGTERM stop it cleanly (it stops \
reading, lets in-flight trees finish or fail, commits, hands back what it did not finish, prints \
its summary) and it exits 0; it says on stderr that it is stopping and how long that may take \
(up to 2 x --timeout-secs for the entries in flight, then about 10 s), and a second SIGINT or \
SIGTERM exits at once with 130 or 143, without a summary: the entries read and not acked stay \
pending in the Redis consumer group and are delivered again (at once to a worker with the same \
--consumer, to others after --claim-after-ms), and exactly-once keeps the counts exact. And \
`acker-run load` once it appends: it stops between two round \
trips, says how many entries it appended and how to resume, and exits 130 or 143."
    };
}
const EXIT_STATUS_HELP: &str = exit_status_help!();

/// The exit statuses of `acker-run counts`, shown under its `--help`.
#[cfg(all(feature = "redis", feature = "postgres"))]
const COUNTS_EXIT_STATUS_HELP: &str = "Exit status: 0 when the counts were printed (an empty \
word_counts table prints zeros); 2 with a one-line message on stderr on bad arguments, a --postgres \
URL that does not parse, a server that cannot be reached, a database without the word_counts \
table (no word count has written there: `no word_counts table in database D at URL`), or a \
stdout write error; 0 also when stdout is a pipe closed early.";

#[derive(Parser)]
#[command(
    name = "acker-run",
    version,
    about = "Run Storm-style topologies with XOR acking on pinned cores",
    after_help = EXIT_STATUS_HELP
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// What `acker-run wordcount --help` says about its summary, its memory and its exit statuses.
const WORDCOUNT_HELP: &str = concat!(
    "\
The summary (and the same figures in --json):
  words: N total, D distinct   the counts, labelled with what they guarantee:
     exact            every line was counted once: words_total equals `wc -w` of the input;
     at-least-once    some trees timed out and were replayed (timed_out > 0): words of an
                      attempt that timed out may have been counted already, so the totals may
                      exceed `wc -w`; the replays are printed beside them;
     at-most-once     with --ackers 0 nothing is tracked or replayed: lines_lost lines whose
                      tree failed were dropped, and their words are missing.
  header             the input's lines holding a word (L) and the pieces (P) they make: a
     line of up to 64 KiB is one piece; a line over 64 KiB is cut at whitespace into pieces of
     at most 64 KiB, each a spout tuple of its own (its own tuple tree), so P may exceed L
     (lines_total and pieces_total in --json). A line that holds no word (empty or only
     whitespace) is not emitted.
  pieces: E emitted, R replayed   pieces emitted once each, and re-emitted after a fail or a
     timeout (lines_emitted and replays in --json: lines_emitted counts pieces).
  trees: A acked, F failed, T timed out   spout-side decisions: completed trees, trees failed
     by a bolt (--fail-rate), trees failed by the message timeout. With --ackers 0
     (at-most-once) trees are not tracked and the summary says so ('trees: not tracked'): the
     spout counts every tree acked as it is emitted (Storm without ackers), so `acked` in
     --json and the lines row of the component table equal the lines emitted, lost lines
     included; lines_lost counts the lost ones.
  elapsed            wall time from start to the end of the drain; pieces/s = trees acked per
     second (a tree is a piece), words/s = words_total per second.
  peak memory        the process's peak resident memory (VmHWM, Linux; peak_rss_mb), read
     once the summary is built (with --json, the whole object, whose top holds the words
     again): the peak of the whole run, its summary included; writing it out streams it.
  complete latency   from the spout's emit of a line to the moment the acker's completion notice
     left for the spout (p50, p99, max over acked trees); 'not measured' with --ackers 0.
  component table    per component, summed over its tasks: emitted = emit calls by user code
     (lines: one per piece emitted or replayed; split: one per word); executed = inputs handed
     to the bolt (__acker: acker messages applied: inits, acks, fails, where consecutive acks
     of one root from one thread arrive merged into one message and count once, so it can be
     below the acks the bolts sent); acked / failed = inputs
     acked or failed by the bolt (lines: trees completed / failed; __acker: trees decided);
     timed out = the spout's timeouts. __acker is the acker tasks.
Progress: when stderr is a terminal, a progress line (pieces acked of the total) appears on it
once a run has lasted a second, and is cleared at the end.
Memory: the input is held once (no per-line index; a file is read into a buffer of its size), a
spout keeps at most 1 MiB of text in flight, and a word over 64 KiB is sent alone as one string
that the split and count bolts share, so the peak stays under 2 x the input size + 200 MB +
about 100 B a distinct word (the counts), whatever the lines look like; peak_rss_mb reports it
(Linux). Measured with `/usr/bin/time -v acker-run wordcount --input FILE --json`: one word of
300 MB, 596 MB; tinyshakespeare repeated to 300 MB, 313 MB; 300 MB of 2,970,298 distinct
100-byte words, 881 MB; of 23,076,920 distinct 12-byte words, 2.94 GB. The memory check before
a run counts the input at 2 x its size with the acker tables (a file by its size, before it
is read; standard input once read, or when its buffer cannot grow) and refuses what does not
fit (exit 2, naming the input, its size, the estimate and the limit); it cannot foresee the
distinct words, so an input of tens of millions of them may still run out of memory.
",
    exit_status_help!()
);

#[derive(Subcommand)]
enum Command {
    /// Word count with guaranteed processing.
    #[command(
        after_help = WORDCOUNT_HELP,
        // clap's own usage line lists the options an error was about as if required
        // (`Usage: acker-run wordcount --input <INPUT>`): every option here is optional.
        override_usage = "acker-run wordcount [--input <PATH>] [OPTIONS]\n       \
                          acker-run wordcount --redis <URL> --stream <NAME> --postgres <URL> [OPTIONS]"
    )]
    Wordcount(Box<WordcountArgs>),
    /// Benchmarks (throughput figures for benches/RESULTS.md).
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Append one Redis stream entry (field `line`) per line holding a word.
    ///
    /// A line is the text up to a newline (a trailing `\r` removed), as `wordcount --input`
    /// reads it; a line that is empty or only whitespace is skipped, as `wordcount --input`
    /// skips it. Prints the entries loaded, the lines read and skipped, and entries/s.
    ///
    /// Load is not idempotent: a second run appends every line again. Stopped part way by
    /// SIGINT or SIGTERM (between two round trips of 1000 entries; exit status 130 or 143) or by
    /// losing Redis (exit status 2), it says on stderr how many entries the server acknowledged,
    /// from which input lines, and how to append the rest once (`tail -n +LINE FILE |
    /// acker-run load --input - ...`).
    #[cfg(all(feature = "redis", feature = "postgres"))]
    Load(ConnectorLoadArgs),
    /// Read the word counts back from PostgreSQL.
    ///
    /// Prints the total, the number of distinct words and the top words of `word_counts`. A
    /// database without that table is an error (exit status 2), not zeros: run `acker-run
    /// wordcount --redis ... --postgres URL` on it first, or check --postgres.
    #[cfg(all(feature = "redis", feature = "postgres"))]
    #[command(after_help = COUNTS_EXIT_STATUS_HELP)]
    Counts(ConnectorCountsArgs),
}

#[cfg(all(feature = "redis", feature = "postgres"))]
#[derive(Args)]
struct ConnectorLoadArgs {
    /// Text file to load (`-` for standard input).
    #[arg(long)]
    input: std::path::PathBuf,
    /// `redis://HOST:PORT/`.
    #[arg(long)]
    redis: String,
    /// Stream key.
    #[arg(long)]
    stream: String,
}

#[cfg(all(feature = "redis", feature = "postgres"))]
#[derive(Args)]
struct ConnectorCountsArgs {
    /// `postgresql://USER@HOST:PORT/DB`.
    #[arg(long)]
    postgres: String,
    /// How many of the most frequent words to print.
    #[arg(long, default_value_t = 10, allow_negative_numbers = true, value_parser = count_at_least::<0>)]
    top: usize,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Clone)]
struct RunArgs {
    /// Threads, one pinned per core (default: every available core). At most 4 x the CPUs of
    /// this process's CPU affinity set (as `taskset` or a cpuset sets it); more than the CPUs
    /// this process may use (`std::thread::available_parallelism`) runs with a warning on stderr: the threads then share CPUs, and each one's spinning and
    /// parking while it waits for input costs the others their CPU time (a new user saw a run
    /// with a small pending window take 25 x longer with --cores 8 on 2 CPUs).
    #[arg(long, allow_negative_numbers = true, value_parser = count_at_least::<0>)]
    cores: Option<usize>,
    /// Acker tasks (0 = at-most-once). `wordcount --guarantee at-most-once` runs with 0: leave
    /// it out there (a nonzero count is refused). Tasks plus ackers may be at most 65535 (task
    /// ids 0 to 65534; the id 65535 is reserved: a component's tasks are a half-open range of
    /// 16-bit ids whose end must fit in one). The built-in topologies also refuse more ackers
    /// than the roots their spouts may keep pending (spout tasks x max spout pending), and
    /// ackers whose tables and park queues (with the spouts' pending sets) need more memory than
    /// the machine has or the process's `ulimit -v` / `ulimit -d` leaves (about 45 KB of address
    /// space an acker task, 1 MiB for the 65536 roots the ackers remember as failed (shared
    /// among them, at least 64 each), plus 33 B a root of
    /// its table, 20 for the table and 13 for its park queue: 3.3 MB an acker at the default
    /// 65536-root table), naming the size, before any task is built.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = count_at_least::<0>)]
    ackers: usize,
    /// Max spout pending: the most trees a spout task keeps pending (emitted, neither acked nor
    /// failed yet). Default 16384 (the runtime's fixed-size pending set,
    /// `DEFAULT_PENDING_CAPACITY`; Storm's default is unbounded, this runtime needs a bound; the
    /// word count's spout also keeps at most 1 MiB of text in flight, which binds first when
    /// the lines average more than 64 bytes). With
    /// `wordcount --redis` the default is 2001 instead: 4 x --read-batch (2000 at the default
    /// 500) trees in flight, whole read batches ahead of the sink's commits while keeping what a
    /// stop hands back or a crash leaves pending small, plus one slot the spout keeps free for
    /// its flush punctuation; there N given here means N trees in flight and N + 1 slots. 1 to
    /// 10000000 (about 180 bytes a tree, preallocated).
    #[arg(long, allow_negative_numbers = true, value_parser = count_at_least::<0>)]
    max_spout_pending: Option<usize>,
    /// Message timeout in seconds, at most 31536000 (one year; 0 turns timeouts off).
    #[arg(long, default_value_t = 30, allow_negative_numbers = true, value_parser = at_least::<0>)]
    timeout_secs: u64,
    /// Topology seed.
    #[arg(long, default_value_t = 42, allow_negative_numbers = true, value_parser = at_least::<0>)]
    seed: u64,
    /// Do not pin the threads to cores (lets the OS move them, e.g. on a shared machine).
    #[arg(long)]
    no_pin: bool,
    /// Run each acker task on the thread of a spout task (inits and notices stay local) instead of
    /// placing every task round-robin.
    #[arg(long)]
    colocate_ackers: bool,
    /// Roots one acker task can hold (default: 4 × all spouts' max spout pending / ackers, at
    /// least 1024).
    #[arg(long, allow_negative_numbers = true, value_parser = count_at_least::<1>)]
    acker_capacity: Option<usize>,
    /// Messages an acker parks while its table is full, 0 to 16777216 (default: max(acker
    /// capacity / 8, 64)). Each acker task preallocates 72 to 104 bytes a message, of which 48
    /// to 64 are written at start (resident at once) and the rest as the queue fills. Measured:
    /// 16777216 took 0.80 GB more peak memory at start (48 B a message) and reserves 1.2 GB an
    /// acker (72 B a message), all resident once the queue is full. Refused with --ackers 0
    /// (no acker parks anything).
    #[arg(long, allow_negative_numbers = true, value_parser = count_at_least::<0>)]
    acker_park_capacity: Option<usize>,
}

#[derive(Args)]
struct WordcountArgs {
    /// UTF-8 text file to count, `-` for standard input (default: built-in deterministic
    /// sentences). Input that is not UTF-8 is refused, naming the offset of the first bad byte.
    #[arg(long, value_name = "PATH")]
    input: Option<std::path::PathBuf>,
    /// Probability that the split bolt fails a line the first time it sees it, 0 to below 1.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    fail_rate: f64,
    /// Print one JSON object instead of the human summary.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    run: RunArgs,
    #[cfg(all(feature = "redis", feature = "postgres"))]
    #[command(flatten)]
    connectors: acker_runtime::connectors::wordcount::ConnectorArgs,
}

/// `bench pipeline --ackers`' help (the shared `RunArgs` text speaks of the word count).
const PIPELINE_ACKERS_HELP: &str = "Acker tasks tracking the pipeline's trees (0 = at-most-once: \
nothing is tracked, the spout counts each tree acked as it emits it, so `trees_acked` is the trees \
emitted). Tasks plus ackers may be at most 65535 (task ids 0 to 65534; the id 65535 is reserved). The topology's spout tasks x max spout pending bound the count (an acker past the \
roots in flight never holds one), and so does memory: about 45 KB of address space an acker \
task, 1 MiB for the 65536 roots the ackers remember as failed (shared among them, at least 64 \
each), plus 33 B a root of its table (20 for the \
table, 13 for its park queue), 3.3 MB an acker at \
the default 65536-root table, refused with the size when more than the machine or the process's \
`ulimit -v` / `ulimit -d` allows.";

/// `bench pipeline --max-spout-pending`' help.
const PIPELINE_PENDING_HELP: &str = "Max spout pending: the most trees the pipeline's spout task \
(`ints`, one integer a tree) keeps pending (emitted, neither acked nor failed yet). Default 16384 \
(the runtime's fixed-size pending set, `DEFAULT_PENDING_CAPACITY`; Storm's default is unbounded, \
this runtime needs a bound). 1 to 10000000.";

/// `bench wordcount --ackers`' help.
const BENCH_WORDCOUNT_ACKERS_HELP: &str = "Acker tasks tracking the benchmark's word-count trees \
(a line and its words; 0 = at-most-once: nothing is tracked or replayed). Tasks plus ackers may \
be at most 65535 (task ids 0 to 65534; the id 65535 is reserved). The topology's spout tasks x max spout pending bound the count (an acker past the \
roots in flight never holds one), and so does memory: about 45 KB of address space an acker \
task, 1 MiB for the 65536 roots the ackers remember as failed (shared among them, at least 64 \
each), plus 33 B a root of its table (20 for the \
table, 13 for its park queue), 3.3 MB an acker at \
the default 65536-root table, refused with the size when more than the machine or the process's \
`ulimit -v` / `ulimit -d` allows.";

/// `bench wordcount --max-spout-pending`' help.
const BENCH_WORDCOUNT_PENDING_HELP: &str = "Max spout pending: the most line trees a spout task \
of the benchmark's word count keeps pending (emitted, neither acked nor failed yet). Default 16384 \
(the runtime's fixed-size pending set, `DEFAULT_PENDING_CAPACITY`; Storm's default is unbounded, \
this runtime needs a bound); the spout also keeps at most 1 MiB of text in flight, which binds \
first when the lines average more than 64 bytes. 1 to 10000000.";

#[derive(Subcommand)]
enum BenchCommand {
    /// spout → identity bolt → null bolt on integer payloads.
    ///
    /// Prints one JSON object: `bench` (`pipeline`), `trees_acked` (trees completed through an acker; with `--ackers 0`
    /// the trees the spout emitted, acked at once), `trees_per_sec` and `trees_per_cpu_s` (per
    /// wall second and per CPU second of the process, from 10 ms ticks: coarse in short runs),
    /// `tuples_through_per_sec` and `null_executed` (tuples the null bolt executed: one a tree
    /// here), `complete_latency_us` (`p50`, `p99`, `max`), `failed`, `timed_out`, `acker_parked`
    /// and `acker_dropped_full` (acker messages parked or dropped on a full acker table),
    /// `cores`, `ackers`, `cpu_s`, `elapsed_s`; with `--vs-acking-off`, `rounds`,
    /// `ratio_acking_on_to_off`, `acking_on_trees_per_sec` and `acking_off_trees_per_sec` (each
    /// `{min, median, max}` over the rounds). With `--local`: `bench` is `pipeline-local` and the
    /// keys are `trees_acked`, `trees_per_sec`, `spout_calls` (`next_tuple` calls),
    /// `bolt_executed` (tuples both bolts executed), `ackers`, `elapsed_s`.
    #[command(
        // As `wordcount`'s: clap's own usage line lists the options an error was about as if
        // required (`Usage: acker-run bench pipeline --seconds <SECONDS>`).
        override_usage = "acker-run bench pipeline [OPTIONS]",
        mut_arg("ackers", |a| a.help(PIPELINE_ACKERS_HELP).long_help(None::<&str>)),
        mut_arg("max_spout_pending", |a| a.help(PIPELINE_PENDING_HELP).long_help(None::<&str>))
    )]
    Pipeline {
        /// How long the spout runs, in seconds: more than 0 and less than 3600. A run that
        /// acked no tree (emitted none with `--ackers 0`) ends with an error (no rate to report).
        #[arg(long, default_value_t = 5.0, allow_negative_numbers = true, value_parser = a_number_of_seconds)]
        seconds: f64,
        /// Run the executors on the single-threaded local shell instead (no rings, no threads):
        /// the executors' own cost per tree. Not with `--cores`, `--no-pin` or
        /// `--colocate-ackers` (one thread, not pinned).
        #[arg(long, conflicts_with_all = ["cores", "no_pin", "colocate_ackers"])]
        local: bool,
        /// Rounds (1 to 1000), each this run with acking (the given `--ackers`, at least 1) and the same with
        /// `--ackers 0`, alternated within the process (the order swaps every round, so that on a
        /// shared machine neither phase gets all the quiet moments): the JSON reports the on ÷
        /// off ratio of trees per second as `ratio_acking_on_to_off: {min, median, max}` over
        /// the rounds, each side's trees per second likewise, and the other figures of the first
        /// acking-on run (`complete_latency_us` is `null` where no tree completed through an
        /// acker). Takes 2 × rounds × `--seconds`. Not with `--local`. A round in which either
        /// side acked no tree ends the run with an error (no ratio to report).
        #[arg(long, value_name = "ROUNDS", allow_negative_numbers = true, value_parser = rounds_1_to_1000)]
        vs_acking_off: Option<usize>,
        /// Accepted for symmetry with `wordcount --json` and `acker-bench compare --json`: the
        /// benchmarks always print one JSON object on stdout.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Word count on the input repeated to at least `--min-mb` MB, against a plain loop.
    ///
    /// Prints one JSON object: `bench` (`wordcount`), `ratio_to_plain_loop` (`{min, median, max}` over the rounds of
    /// the topology's words per second ÷ the plain loop's), `ratio` (the first round's alone),
    /// `plain_words`, `plain_distinct`, `plain_secs`, `plain_words_per_sec`,
    /// `plain_words_per_cpu_s`, `plain_cpu_s` and the same `topology_*` keys (first round; CPU
    /// seconds from 10 ms ticks: the per-CPU-second rate is `null` when its phase's CPU seconds
    /// read 0), `bytes` (the repeated text),
    /// `complete_latency_us` (`p50`, `p99`, `max`), `cores`, `ackers`, `rounds`.
    #[command(
        // New-user trial: clap's usage line showed `--min-mb <MIN_MB>` as if required.
        override_usage = "acker-run bench wordcount --input <PATH> [OPTIONS]",
        mut_arg("ackers", |a| a.help(BENCH_WORDCOUNT_ACKERS_HELP).long_help(None::<&str>)),
        mut_arg("max_spout_pending", |a| {
            a.help(BENCH_WORDCOUNT_PENDING_HELP).long_help(None::<&str>)
        })
    )]
    Wordcount {
        /// Text file to repeat (`-`: standard input), UTF-8, holding at least one word.
        #[arg(long)]
        input: std::path::PathBuf,
        /// Minimum size of the repeated text, MB (1 to 1000000). The run holds the text and the
        /// tuples made from it: about 2.2 × this many MB of memory at its peak, plus about 15 MB
        /// (measured peak resident size: 216 MB at 100, 59 MB at 20; more rounds add little).
        #[arg(long, default_value_t = 100, allow_negative_numbers = true, value_parser = count_at_least::<1>)]
        min_mb: usize,
        /// Rounds (1 to 1000), each the plain loop then the topology over the same text (alternated, so that
        /// on a shared machine no one phase gets all the quiet moments); the JSON reports the
        /// ratio's min, median and max over them as `ratio_to_plain_loop`, and the other figures
        /// of the first round (the JSON's `ratio` is the first round's alone). The text is kept
        /// for every round (see `--min-mb` for the memory).
        #[arg(long, default_value_t = 3, allow_negative_numbers = true, value_parser = rounds_1_to_1000)]
        rounds: usize,
        /// Accepted for symmetry with `wordcount --json` and `acker-bench compare --json`: the
        /// benchmarks always print one JSON object on stdout.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        run: RunArgs,
    },
}

fn config(run: &RunArgs) -> Config {
    Config {
        num_ackers: run.ackers,
        message_timeout_ns: run.timeout_secs.max(1) * 1_000_000_000,
        enable_message_timeouts: run.timeout_secs > 0,
        max_spout_pending: run.max_spout_pending,
        seed: run.seed,
        acker_capacity_roots: run.acker_capacity,
        ..Config::default()
    }
}

/// `topology` planned under the run's flags (config, acker park capacity).
fn plan(
    topology: &acker_runtime::Topology,
    run: &RunArgs,
) -> Result<acker_runtime::Plan, CliError> {
    plan_with(topology, run, None)
}

/// [`plan`], with memory `other` takes besides (see [`acker_runtime::cli::check_acker_count`]).
fn plan_with(
    topology: &acker_runtime::Topology,
    run: &RunArgs,
    other: Option<acker_runtime::cli::Besides<'_>>,
) -> Result<acker_runtime::Plan, CliError> {
    let config = config(run);
    // The config comes from the flags: a refused config is a bad argument.
    let plan = topology
        .plan(&config)
        .map_err(|e| acker_runtime::cli::plan_refused(topology, &config, e))?;
    // Acker tables smaller than the trees the spouts may keep pending would park and drop
    // messages on every round, replaying nearly everything: refuse rather than crawl.
    let spouts = plan
        .tasks()
        .iter()
        .filter(|t| t.kind == acker_runtime::TaskKind::Spout)
        .count();
    check_acker_capacity(&config, spouts).map_err(CliError::Usage)?;
    let plan = match run.acker_park_capacity {
        Some(n) => plan.with_acker_park_capacity(n),
        None => plan,
    };
    acker_runtime::cli::check_acker_count(&plan, spouts, cores(run), other)
        .map_err(CliError::Usage)?;
    Ok(plan)
}

fn cores(run: &RunArgs) -> usize {
    run.cores.unwrap_or_else(|| {
        core_affinity::get_core_ids()
            .map(|v| v.len())
            .unwrap_or(1)
            .max(1)
    })
}

/// CPU seconds (user + system) this process has used so far, from `/proc/self/stat` (Linux;
/// `None` elsewhere). The machine may be shared, so benchmarks report work per CPU second beside
/// wall-clock rates.
fn process_cpu_secs() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    // USER_HZ is 100 on every Linux architecture Rust targets.
    Some((utime + stime) / 100.0)
}

fn cpu_delta(before: Option<f64>) -> Option<f64> {
    Some(process_cpu_secs()? - before?)
}

/// `{p50, p99, max}` of the run's complete latency in µs, or `null` when no tree completed
/// through an acker (`--ackers 0`, or nothing acked): not a measured 0.
fn latency_json(r: &RunReport) -> serde_json::Value {
    if r.complete_latency_ns.is_empty() {
        return serde_json::Value::Null;
    }
    let (p50, p99, max) = percentiles_us(r);
    serde_json::json!({"p50": p50, "p99": p99, "max": max})
}

fn percentiles_us(r: &RunReport) -> (f64, f64, f64) {
    let h = &r.complete_latency_ns;
    if h.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    (
        h.value_at_quantile(0.5) as f64 / 1e3,
        h.value_at_quantile(0.99) as f64 / 1e3,
        h.max() as f64 / 1e3,
    )
}

fn shell_options(run: &RunArgs) -> ShellOptions {
    ShellOptions {
        cores: Some(cores(run)),
        pin_threads: !run.no_pin,
        colocate_ackers: run.colocate_ackers,
        // This program prints the config's warnings itself, as `acker-run: warning: ...`
        // (`cli::say_config_warnings`).
        print_config_warnings: false,
        ..ShellOptions::default()
    }
}

/// Largest `--max-spout-pending` accepted (each pending root costs two slots at the spout and 4
/// roots at the acker): under the library's [`acker_runtime::MAX_PENDING_CAPACITY`], with room for
/// the connector job's one extra slot.
const MAX_PENDING_LIMIT: usize = 10_000_000;
const _: () = assert!(MAX_PENDING_LIMIT < acker_runtime::MAX_PENDING_CAPACITY);
/// Largest `--acker-capacity` accepted: the library's bound, 2 GB of table at 20 bytes a root.
const MAX_ACKER_CAPACITY: usize = acker_runtime::MAX_ACKER_CAPACITY_ROOTS;
/// Largest `--acker-park-capacity` accepted (2^24 messages). Each acker task preallocates its
/// park queue: the 24-byte message, a 4-byte chain link, a 4-byte free-list entry and an 8-byte
/// order entry a message, plus 2 to 4 by-root index slots of 16 bytes (72 to 104 bytes a
/// message; 1.2 GB an acker at this limit). The message, link, free-list entry and the index
/// slots' 8-byte ends are written when the queue is built (48 to 64 bytes a message resident at
/// once; measured with `/usr/bin/time -v`: 16777216 took 803 MB of peak RSS against 17 MB
/// without, 8388609 took 542 MB); the order entries and the index keys (zeroed, so mapped
/// lazily) become resident as the queue fills. The default for the largest `--acker-capacity`
/// is 12.5M, under it.
const MAX_ACKER_PARK_CAPACITY: usize = 1 << 24;
/// Largest `--timeout-secs` accepted (one year).
const MAX_TIMEOUT_SECS: u64 = 365 * 24 * 3600;

/// Refuses run flags out of range, as a bad argument ([`CliError::Usage`]); then warns on stderr
/// when `--cores` exceeds the CPUs this process may use ([`oversubscription_warning`]).
fn check_run(run: &RunArgs) -> Result<(), CliError> {
    check_run_flags(run).map_err(CliError::Usage)?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if let Some(w) = run.cores.and_then(|c| oversubscription_warning(c, cpus)) {
        acker_runtime::stderr_line!("acker-run: warning: {w}");
    }
    Ok(())
}

/// The warning for `--cores cores` on a process that may use `cpus` CPUs, when it asks for more
/// threads than CPUs (said, not refused: a test of many threads on a small machine is
/// legitimate; new-user trial: `--cores 8` on 2 CPUs ran a tiny pending window 25 x slower with
/// no word).
fn oversubscription_warning(cores: usize, cpus: usize) -> Option<String> {
    (cores > cpus).then(|| {
        format!(
            "--cores {cores} is more than the {cpus} CPU(s) this process may use: the {cores} \
             threads will share CPUs, and a thread spinning or parking while it waits for input \
             takes CPU time from the others, so the run may be many times slower than with \
             --cores {cpus}"
        )
    })
}

fn check_run_flags(run: &RunArgs) -> Result<(), String> {
    if run.cores == Some(0) {
        return Err("--cores must be at least 1".to_string());
    }
    if run.ackers == 0 && run.colocate_ackers {
        // As `--acker-capacity` with no ackers: an option that would be ignored (new-user trial).
        return Err(
            "--colocate-ackers was given, but this run has no ackers (at-most-once: nothing is \
             tracked): leave --colocate-ackers out"
                .to_string(),
        );
    }
    if let Some(park) = run.acker_park_capacity.filter(|_| run.ackers == 0) {
        // As `--colocate-ackers`: no acker parks anything (new-user trial: it was ignored).
        return Err(format!(
            "--acker-park-capacity {park} was given, but this run has no ackers (--ackers 0, \
             at-most-once: nothing is tracked): leave --acker-park-capacity out"
        ));
    }
    if run.max_spout_pending == Some(0) {
        return Err("--max-spout-pending must be at least 1".to_string());
    }
    // The CPUs of the affinity set (what `taskset` or a cpuset leaves this process), not the
    // machine's: the message says which (new-user trial: "1 core(s) of this machine" under
    // `taskset -c 0` on a machine of 2).
    let allowed = core_affinity::get_core_ids().map_or(1, |v| v.len()).max(1);
    if let Some(cores) = run.cores.filter(|&c| c > MAX_CORES_PER_CPU * allowed) {
        let machine = match online_cpus() {
            Some(n) => format!("out of the {n} core(s) of this machine"),
            None => "the core(s) of this machine could not be counted".to_string(),
        };
        return Err(format!(
            "--cores {cores} is more than {MAX_CORES_PER_CPU} x the {allowed} CPU(s) this process may use (its CPU \
             affinity set, as `taskset` or a cpuset sets it, {machine}): one thread a core, and a \
             ring per ordered pair of threads"
        ));
    }
    if run.max_spout_pending.is_some_and(|p| p > MAX_PENDING_LIMIT) {
        return Err(format!(
            "--max-spout-pending must be at most {MAX_PENDING_LIMIT}"
        ));
    }
    if run
        .acker_capacity
        .is_some_and(|c| c == 0 || c > MAX_ACKER_CAPACITY)
    {
        return Err(format!(
            "--acker-capacity must be in 1..={MAX_ACKER_CAPACITY} (20 bytes a root)"
        ));
    }
    if let Some(park) = run
        .acker_park_capacity
        .filter(|&p| p > MAX_ACKER_PARK_CAPACITY)
    {
        return Err(format!(
            "--acker-park-capacity must be at most {MAX_ACKER_PARK_CAPACITY} messages (each acker \
             preallocates 72 to 104 bytes a parked message), got {park}"
        ));
    }
    if run.timeout_secs > MAX_TIMEOUT_SECS {
        return Err(format!(
            "--timeout-secs must be at most {MAX_TIMEOUT_SECS} (one year; 0 turns timeouts off)"
        ));
    }
    // Each limit above holds per acker task; every acker preallocates (and clears) its table and
    // park queue, so the product must fit the machine too (50 ackers of 100M roots asked for
    // 100 GB and aborted or woke the OOM killer).
    if let (Some(capacity), Some(total)) = (
        run.acker_capacity,
        acker_runtime::cli::physical_memory_bytes(),
    ) {
        let park = run
            .acker_park_capacity
            .unwrap_or_else(|| acker_runtime::default_acker_park_capacity(capacity));
        let per_acker = (capacity as u128) * 20 + (park as u128) * 104;
        let need = per_acker * run.ackers as u128;
        if need > total as u128 {
            return Err(format!(
                "--ackers {} x (--acker-capacity {capacity} x 20 B + park queue {park} x up to 104 B) needs {:.1} GB preallocated, more than this machine's {:.1} GB of memory",
                run.ackers,
                need as f64 / 1e9,
                total as f64 / 1e9
            ));
        }
    }
    Ok(())
}

/// The machine's online CPUs (`/sys/devices/system/cpu/online`, e.g. `0-3,6`; Linux), whatever
/// this process's affinity set; `None` where that file cannot be read.
fn online_cpus() -> Option<usize> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").ok()?;
    let mut n = 0usize;
    for range in text.trim().split(',') {
        n += match range.split_once('-') {
            Some((a, b)) => b
                .parse::<usize>()
                .ok()?
                .checked_sub(a.parse::<usize>().ok()?)?
                .checked_add(1)?,
            None => {
                range.parse::<usize>().ok()?;
                1
            }
        };
    }
    (n > 0).then_some(n)
}

/// The peak resident memory of this process in MB (`VmHWM`, Linux; `None` elsewhere).
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1000.0)
}

/// A progress line on stderr (pieces acked of the total) while a run goes on, shown only when
/// stderr is a terminal and the run has lasted a second; it disappears when dropped.
struct Progress {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    fn start(stats: std::sync::Arc<wordcount::SpoutStats>, total: u64) -> Self {
        use std::io::IsTerminal;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let thread = io::stderr().is_terminal().then(|| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let t0 = Instant::now();
                while t0.elapsed() < Duration::from_secs(1) {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                let bar = indicatif::ProgressBar::with_draw_target(
                    Some(total),
                    indicatif::ProgressDrawTarget::stderr(),
                )
                .with_elapsed(t0.elapsed());
                if let Ok(style) = indicatif::ProgressStyle::with_template(
                    "{elapsed_precise} {wide_bar} {pos}/{len} pieces acked",
                ) {
                    bar.set_style(style);
                }
                while !stop.load(Ordering::Relaxed) {
                    bar.set_position(stats.acked.load(Ordering::Relaxed));
                    std::thread::sleep(Duration::from_millis(100));
                }
                bar.finish_and_clear();
            })
        });
        Self { stop, thread }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The error for built-in-job options given with the connector options, naming exactly the
/// options of each side that the user gave; `None` when there is no conflict.
#[cfg(all(feature = "redis", feature = "postgres"))]
fn conflicts_with_connectors(args: &WordcountArgs) -> Option<String> {
    let c = &args.connectors;
    let connectors: Vec<&str> = [
        (c.redis.is_some(), "--redis"),
        (c.stream.is_some(), "--stream"),
        (c.postgres.is_some(), "--postgres"),
    ]
    .into_iter()
    .filter_map(|(on, name)| on.then_some(name))
    .collect();
    let (mut given, mut hints) = (Vec::new(), Vec::new());
    if args.input.is_some() {
        given.push("--input");
        hints.push(
            "the connector job reads its lines from the stream: load a file into it with \
             `acker-run load --input FILE --redis URL --stream NAME`",
        );
    }
    if args.fail_rate != 0.0 {
        given.push("--fail-rate");
        hints.push("the connector job's failure injection is --poison-rate");
    }
    if given.is_empty() || connectors.is_empty() {
        return None;
    }
    Some(format!(
        "{} {} not go with {} ({}); leave out {}, or leave out {} to run the built-in job",
        given.join(" and "),
        if given.len() == 1 { "does" } else { "do" },
        connectors.join(", "),
        hints.join("; "),
        given.join(" and "),
        connectors.join(", ")
    ))
}

/// How many times a word count may hold its input text at once: the text, and its words again
/// in the count bolts' maps when they are all distinct or one word is most of it (the spout
/// sends a word over `MAX_PIECE_BYTES` as a shared string that the split and count bolts keep
/// without copying). Reading a regular file holds it once (its size is reserved exactly).
const INPUT_COPIES: u64 = 2;

/// What to change when the input does not fit.
const INPUT_REMEDY: &str = "give a smaller input, or raise the limit";

/// How the memory check names the input `path` of `bytes` bytes (`partial`: the bytes read
/// when its buffer could not grow, the input being longer): the option, and what the memory
/// is for.
fn input_memory_words(path: &std::path::Path, bytes: u64, partial: bool) -> (String, String) {
    let its = if partial { "at least the" } else { "its" };
    (
        format!("--input {}", path.display()),
        format!(
            "{its} {} of text ({bytes} bytes{}), which a word count holds up to \
             {INPUT_COPIES} times (the text, and its words again in the counts when they are \
             all distinct or one word is most of it)",
            acker_runtime::cli::size(bytes),
            if partial {
                ", when room for more could not be allocated"
            } else {
                ""
            }
        ),
    )
}

/// Refuses a word count whose input of `bytes` bytes, held [`INPUT_COPIES`] times, does not fit with
/// the acker tables and pending sets the run's flags ask for ([`plan_with`]), before the text
/// is read (a topology over no text is planned for the check: the tasks do not depend on it).
fn check_input_memory(
    args: &WordcountArgs,
    path: &std::path::Path,
    bytes: u64,
    partial: bool,
) -> Result<(), CliError> {
    let (topology, _) = wordcount::topology(Lines::default(), cores(&args.run), args.fail_rate)
        .map_err(|e| e.to_string())?;
    let (option, what_for) = input_memory_words(path, bytes, partial);
    plan_with(
        &topology,
        &args.run,
        Some(acker_runtime::cli::Besides {
            bytes: bytes.saturating_mul(INPUT_COPIES),
            option: &option,
            what_for: &what_for,
            remedy: INPUT_REMEDY,
            mapped_already: 0,
        }),
    )
    .map(drop)
}

/// `acker-run wordcount`; `ackers_given`: whether `--ackers` was on the command line.
fn wordcount_cmd(args: WordcountArgs, ackers_given: bool) -> Result<(), CliError> {
    // Only the connectors' at-most-once check reads it.
    #[cfg(not(all(feature = "redis", feature = "postgres")))]
    let _ = ackers_given;
    check_run(&args.run)?;
    if !(0.0..1.0).contains(&args.fail_rate) {
        return Err(CliError::Usage(format!(
            "--fail-rate must be in [0, 1), got {}",
            args.fail_rate
        )));
    }
    #[cfg(all(feature = "redis", feature = "postgres"))]
    {
        // Connector options without the connectors would be silently ignored.
        let c = &args.connectors;
        // The options' clap defaults (not `Default`'s zeros).
        #[derive(clap::Parser)]
        struct Defaults {
            #[command(flatten)]
            c: acker_runtime::connectors::wordcount::ConnectorArgs,
        }
        let d = <Defaults as clap::Parser>::parse_from(["acker-run"]).c;
        // Options left at their defaults cannot be told from options not given (a user who
        // spells out a default loses nothing by it being ignored).
        let given: Vec<&str> = [
            (c.guarantee.is_some(), "--guarantee"),
            (c.poison_rate != d.poison_rate, "--poison-rate"),
            (c.group != d.group, "--group"),
            (c.consumer.is_some(), "--consumer"),
            (c.max_retries != d.max_retries, "--max-retries"),
            (c.claim_after_ms.is_some(), "--claim-after-ms"),
            (
                c.retry_initial_ms != d.retry_initial_ms,
                "--retry-initial-ms",
            ),
            (c.retry_max_ms != d.retry_max_ms, "--retry-max-ms"),
            (c.drain, "--drain"),
            (c.read_batch != d.read_batch, "--read-batch"),
            (c.sink_batch != d.sink_batch, "--sink-batch"),
            (c.sink_tasks.is_some(), "--sink-tasks"),
            (c.progress_secs != d.progress_secs, "--progress-secs"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
        if !c.is_active() && !given.is_empty() {
            let verb = if given.len() == 1 { "applies" } else { "apply" };
            let guarantee_note = if c.guarantee.is_some() {
                " (the built-in job's guarantee follows --ackers: 0 is at-most-once)"
            } else {
                ""
            };
            return Err(CliError::Usage(format!(
                "{} only {verb} with --redis URL --stream NAME --postgres URL{guarantee_note}",
                given.join(", ")
            )));
        }
    }
    #[cfg(all(feature = "redis", feature = "postgres"))]
    if args.connectors.is_active() {
        if let Some(e) = conflicts_with_connectors(&args) {
            return Err(CliError::Usage(e));
        }
        // Storm's at-most-once has no acker tasks (the tree is never tracked): a nonzero
        // --ackers with it would be ignored, so it is refused; without --ackers it runs with 0.
        if args.connectors.guarantee
            == Some(acker_runtime::connectors::wordcount::Guarantee::AtMostOnce)
            && ackers_given
            && args.run.ackers > 0
        {
            return Err(CliError::Usage(format!(
                "--guarantee at-most-once runs with no ackers (nothing is tracked), but --ackers {} \
                 was given: leave --ackers out (or give --ackers 0), or choose --guarantee \
                 at-least-once or exactly-once",
                args.run.ackers
            )));
        }
        let n = cores(&args.run);
        return acker_runtime::connectors::wordcount::run(
            &args.connectors,
            config(&args.run),
            shell_options(&args.run),
            n,
            args.json,
            &mut io::stdout().lock(),
        );
    }
    let n = cores(&args.run);
    // The input's memory is checked with the acker tables' before the text is read: a regular
    // file's size is known from its metadata; standard input (or a pipe) is read fallibly and
    // checked once read, or when its buffer could not grow (new-user trial: under a `ulimit -d`
    // too small for the input, the run died of SIGABRT in an allocation).
    let text = match &args.input {
        Some(p) => {
            if let Some(size) = acker_runtime::cli::regular_file_size(p) {
                check_input_memory(&args, p, size, false)?;
            }
            match acker_runtime::cli::read_input(p) {
                Ok(text) => text,
                Err(e @ acker_runtime::cli::ReadError::OutOfMemory { wanted_bytes, .. }) => {
                    // Refused by name as above; the read error itself should the check pass
                    // (the allocation failed for another reason).
                    check_input_memory(&args, p, wanted_bytes, true)?;
                    return Err(CliError::Run(e.to_string()));
                }
                Err(e) => return Err(CliError::Run(e.to_string())),
            }
        }
        None => generate_sentences(BUILTIN_LINES, args.run.seed),
    };
    let input_bytes = text.len() as u64;
    // The text itself, not a copy of it.
    let lines = Lines::from_string(text);
    let (topology, outputs) =
        wordcount::topology(lines.clone(), n, args.fail_rate).map_err(|e| e.to_string())?;
    // Input of unknown size (standard input, a pipe) is checked now that it is read: the text
    // is mapped already (counted in the need, not as the process's own), its second copy not
    // yet.
    let unsized_input = args
        .input
        .as_deref()
        .filter(|p| acker_runtime::cli::regular_file_size(p).is_none());
    let plan = match unsized_input {
        Some(p) => {
            let (option, what_for) = input_memory_words(p, input_bytes, false);
            plan_with(
                &topology,
                &args.run,
                Some(acker_runtime::cli::Besides {
                    bytes: input_bytes.saturating_mul(INPUT_COPIES),
                    option: &option,
                    what_for: &what_for,
                    remedy: INPUT_REMEDY,
                    mapped_already: input_bytes,
                }),
            )?
        }
        None => plan(&topology, &args.run)?,
    };
    let progress = Progress::start(outputs.stats.clone(), lines.pieces() as u64);
    acker_runtime::cli::say_config_warnings("acker-run", plan.config());
    let report = shell::run(&plan, &shell_options(&args.run)).map_err(|e| e.to_string());
    drop(progress);
    let report = report?;
    // The text is no longer needed: freed before the summary is built, so that the summary's
    // copy of a long word (in `--json`'s `top`) does not come on top of it.
    let (lines_total, pieces_total, long_words) = (lines.len(), lines.pieces(), lines.long_words());
    drop((plan, topology, lines));
    let counts: BTreeMap<std::sync::Arc<str>, u64> =
        std::mem::take(&mut *outputs.counts.lock().unwrap_or_else(|p| p.into_inner()));
    let words_total: u64 = counts.values().sum();
    let top = top_words(&counts, 10);
    let spout = report.spout_totals();
    let stats = &outputs.stats;
    let (p50, p99, max) = percentiles_us(&report);
    let elapsed_ms = report.elapsed.as_secs_f64() * 1e3;
    let replays = stats.replays.load(Ordering::Relaxed);
    // At-most-once: a line whose tree failed (at the split bolt) is not replayed.
    let lines_lost = match args.run.ackers {
        0 => report.components.get("split").map_or(0, |c| c.failed),
        _ => 0,
    };
    let guarantee = if args.run.ackers == 0 {
        "at-most-once"
    } else if spout.timed_out > 0 {
        "at-least-once"
    } else {
        "exact"
    };
    let words_exact = lines_lost == 0 && spout.timed_out == 0;
    // Measured over acked trees only: none with zero ackers, and none when no tree was acked
    // (an empty input), where a 0 would read as a measurement.
    let latency_measured = args.run.ackers > 0 && spout.acked > 0;
    let mut out = io::stdout().lock();
    if args.json {
        let mut v = serde_json::json!({
            "lines_total": lines_total,
            "pieces_total": pieces_total,
            "lines_emitted": stats.lines_emitted.load(Ordering::Relaxed),
            "acked": spout.acked,
            "failed": spout.failed,
            "timed_out": spout.timed_out,
            "replays": replays,
            "lines_lost": lines_lost,
            "guarantee": guarantee,
            "words_exact": words_exact,
            "words_total": words_total,
            "distinct_words": counts.len(),
            // Filled below, each word copied once (`json!` copies a value it is given again).
            "top": null,
            "elapsed_ms": elapsed_ms,
            "words_per_sec": words_total as f64 / report.elapsed.as_secs_f64().max(1e-9),
            "complete_latency_us": latency_measured.then(|| serde_json::json!({"p50": p50, "p99": p99, "max": max})),
            // Read below, once the object holds everything.
            "peak_rss_mb": null,
            "cores": report.cores,
            "ackers": args.run.ackers,
            "undecided": report.undecided_roots,
            "components": report.components.iter().map(|(name, c)| (name.clone(), serde_json::json!({
                "emitted": c.emitted,
                "transferred": c.transferred,
                "executed": c.executed,
                "acked": c.acked,
                "failed": c.failed,
                "timed_out": c.timed_out,
                "parked": c.parked,
                "dropped_full": c.dropped_full,
                "orphans_avoided": c.orphans_avoided,
            }))).collect::<serde_json::Map<String, serde_json::Value>>(),
        });
        v["top"] = serde_json::Value::Array(
            top.iter()
                .map(|&(w, c)| {
                    let mut m = serde_json::Map::new();
                    m.insert("word".to_string(), w.into());
                    m.insert("count".to_string(), c.into());
                    serde_json::Value::Object(m)
                })
                .collect(),
        );
        // The peak of the whole run, the summary included: writing it streams the object out
        // without another copy.
        v["peak_rss_mb"] = peak_rss_mb().into();
        acker_runtime::cli::round_json_floats(&mut v);
        writeln!(out, "{v}")?;
    } else {
        let peak_mb = peak_rss_mb();
        writeln!(
            out,
            "word count on {} ({} line{} holding words, {} piece{} of up to {} KiB{}), {} core{}, \
             {} acker(s)",
            args.input
                .as_deref()
                // `-` as the messages name it (new-user trial: the header said `on -`).
                .map(acker_runtime::cli::input_label)
                .unwrap_or_else(|| format!("built-in sentences (seed {})", args.run.seed)),
            lines_total,
            if lines_total == 1 { "" } else { "s" },
            pieces_total,
            if pieces_total == 1 { "" } else { "s" },
            wordcount::MAX_PIECE_BYTES / 1024,
            // A word longer than a piece goes whole (second trial: a 300 MB word was said to be
            // "1 piece of up to 64 KiB").
            match long_words {
                0 => String::new(),
                1 => " but for 1 single word longer than that".to_string(),
                n => format!(" but for {n} single words longer than that"),
            },
            report.cores,
            if report.cores == 1 { "" } else { "s" },
            args.run.ackers
        )?;
        let label = match guarantee {
            "exact" => "exact: every line counted once".to_string(),
            "at-least-once" => format!(
                "at-least-once: {} trees timed out and {replays} replays followed; words of an \
                 attempt that timed out may be counted twice",
                spout.timed_out
            ),
            _ => format!(
                "at-most-once: {lines_lost} pieces lost (failed, not replayed), their words missing"
            ),
        };
        writeln!(
            out,
            "words: {words_total} total, {} distinct ({label})",
            counts.len()
        )?;
        writeln!(out, "top 10:")?;
        for (w, c) in &top {
            writeln!(out, "  {c:>10}  {}", acker_runtime::cli::word_for_text(w))?;
        }
        let trees = if args.run.ackers == 0 {
            // Storm without ackers: the spout acks each tree as it emits it, lost or not.
            format!(
                "not tracked (at-most-once: no acker; the spout counts all {} acked at their \
                 emit, {lines_lost} of them lost)",
                spout.acked
            )
        } else {
            format!(
                "{} acked, {} failed, {} timed out",
                spout.acked, spout.failed, spout.timed_out
            )
        };
        writeln!(
            out,
            "pieces: {} emitted, {} replayed; trees: {trees}",
            stats.lines_emitted.load(Ordering::Relaxed),
            stats.replays.load(Ordering::Relaxed),
        )?;
        writeln!(
            out,
            "elapsed {:.1} ms: {:.0} pieces/s, {:.0} words/s",
            elapsed_ms,
            spout.acked as f64 / report.elapsed.as_secs_f64().max(1e-9),
            words_total as f64 / report.elapsed.as_secs_f64().max(1e-9)
        )?;
        if latency_measured {
            writeln!(
                out,
                "complete latency: p50 {p50:.1} us, p99 {p99:.1} us, max {max:.1} us"
            )?;
        } else {
            writeln!(
                out,
                "complete latency: not measured ({})",
                if args.run.ackers == 0 {
                    "at-most-once: no acker tracks the trees"
                } else {
                    "no tree was acked"
                }
            )?;
        }
        if let Some(mb) = peak_mb {
            writeln!(out, "peak memory: {mb:.0} MB")?;
        }
        writeln!(
            out,
            "{:<10} {:>10} {:>10} {:>10} {:>10} {:>10}",
            "component", "emitted", "executed", "acked", "failed", "timed out"
        )?;
        for (name, c) in &report.components {
            writeln!(
                out,
                "{name:<10} {:>10} {:>10} {:>10} {:>10} {:>10}",
                c.emitted, c.executed, c.acked, c.failed, c.timed_out
            )?;
        }
    }
    out.flush()?;
    Ok(())
}

/// Emits increasing integers forever, tracked by message id.
struct IntSpout(u64);
impl Spout for IntSpout {
    fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
        self.0 += 1;
        let _ = c.emit(values![self.0 as i64], Some(self.0));
    }
}

/// `--seconds`: a plain number of seconds (new-user trial: `--seconds 5ms` said only "invalid
/// float literal", not that the unit is seconds).
fn a_number_of_seconds(s: &str) -> Result<f64, String> {
    s.trim()
        .parse::<f64>()
        .map_err(|_| "expected a number of seconds such as 2.5 (no unit)".to_string())
}

/// A count of benchmark rounds, 1 to 1000 (`--rounds`, `--vs-acking-off`): more would run for
/// hours and keep a ratio a round.
fn rounds_1_to_1000(s: &str) -> Result<usize, String> {
    let n = count_at_least::<1>(s)?;
    if n > 1000 {
        return Err(format!("{n} is more than 1000 rounds"));
    }
    Ok(n)
}

/// `{min, median, max}` of `values` (sorted in place; not empty).
fn min_median_max(values: &mut [f64]) -> serde_json::Value {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let median = if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    };
    serde_json::json!({"min": values[0], "median": median, "max": values[n - 1]})
}

fn pipeline_cmd(
    seconds: f64,
    local: bool,
    vs_acking_off: Option<usize>,
    run: RunArgs,
) -> Result<(), CliError> {
    check_run(&run)?;
    if !(seconds > 0.0 && seconds < 3600.0) {
        return Err(CliError::Usage(format!(
            "--seconds must be in (0, 3600), got {seconds}"
        )));
    }
    let mut b = TopologyBuilder::new();
    b.set_spout("ints", || IntSpout(0), 1).output_fields(&["n"]);
    b.set_basic_bolt("identity", || acker_runtime::bolts::IdentityBolt, 1)
        .shuffle_grouping("ints")
        .output_fields(&["n"]);
    b.set_basic_bolt("null", || acker_runtime::bolts::NullBolt, 1)
        .shuffle_grouping("identity");
    let topology = b.build().map_err(|e| e.to_string())?;
    if let Some(rounds) = vs_acking_off {
        return pipeline_vs_acking_off(&topology, seconds, local, rounds, &run);
    }
    let plan = plan(&topology, &run)?;
    let mut out = io::stdout().lock();
    if local {
        let mut shell = acker_runtime::local::LocalShell::new(&plan).map_err(|e| e.to_string())?;
        let t0 = Instant::now();
        let mut steps = 0u64;
        while t0.elapsed().as_secs_f64() < seconds {
            for _ in 0..1024 {
                shell.step();
            }
            steps += 1024;
        }
        let secs = t0.elapsed().as_secs_f64();
        let spout = shell.counters(acker_runtime::TaskKind::Spout);
        let bolts = shell.counters(acker_runtime::TaskKind::Bolt);
        no_tree_check(spout.acked, seconds, run.ackers, false)?;
        let mut json = serde_json::json!({
            "bench": "pipeline-local",
            "ackers": run.ackers,
            "elapsed_s": secs,
            "spout_calls": steps,
            "trees_acked": spout.acked,
            "trees_per_sec": spout.acked as f64 / secs,
            "bolt_executed": bolts.executed,
        });
        acker_runtime::cli::round_json_floats(&mut json);
        writeln!(out, "{json}")?;
        out.flush()?;
        return Ok(());
    }
    let (mut json, _) = pipeline_threaded(&plan, &run, seconds)?;
    no_tree_check(
        json["trees_acked"].as_u64().unwrap_or(0),
        seconds,
        run.ackers,
        !run.no_pin,
    )?;
    acker_runtime::cli::round_json_floats(&mut json);
    writeln!(out, "{json}")?;
    out.flush()?;
    Ok(())
}

/// A pipeline run that acked no tree has no rate to report: an error (exit 2) naming
/// `--seconds`, as `--vs-acking-off` reports such a round (new-user trial: `--seconds 0.001`
/// exited 0 with `"trees_acked":0,"trees_per_sec":0.0`). With `--ackers 0` the spout counts a
/// tree acked as it emits it, so there it means no tree was emitted. With `pinned` threads the
/// message also names `--no-pin` (new-user trial: on a machine another pinned benchmark was
/// using, 1 run in 20 of `--seconds 0.5 --ackers 0` emitted no tree, none with `--no-pin`).
fn no_tree_check(trees: u64, seconds: f64, ackers: usize, pinned: bool) -> Result<(), CliError> {
    if trees > 0 {
        return Ok(());
    }
    Err(format!(
        "the run of --seconds {seconds} {}: no rate to report (raise --seconds{})",
        if ackers == 0 {
            "emitted no tree"
        } else {
            "acked no tree"
        },
        if pinned { PINNED_HINT } else { "" }
    )
    .into())
}

/// The end of [`no_tree_check`]'s advice (and of `--vs-acking-off`'s) when threads are pinned.
const PINNED_HINT: &str = "; on a machine other programs are busy on, a thread pinned to a \
                           busy CPU may not run at all in a short run: try --no-pin";

/// `bench pipeline --vs-acking-off ROUNDS`: acking on and off alternated in one process.
fn pipeline_vs_acking_off(
    topology: &acker_runtime::Topology,
    seconds: f64,
    local: bool,
    rounds: usize,
    run: &RunArgs,
) -> Result<(), CliError> {
    if local {
        return Err(CliError::Usage(
            "--vs-acking-off runs the threaded shell: leave out --local".to_string(),
        ));
    }
    if run.ackers == 0 {
        return Err(CliError::Usage(
            "--vs-acking-off compares acking on with off: give --ackers 1 or more".to_string(),
        ));
    }
    // The acker options size and place the acking-on run's ackers; the acking-off run has none
    // (kept, `--acker-capacity` refused the off run as an option for ackers it does not have).
    let off_run = RunArgs {
        ackers: 0,
        colocate_ackers: false,
        acker_capacity: None,
        acker_park_capacity: None,
        ..run.clone()
    };
    let runs = [
        (plan(topology, run)?, run),
        (plan(topology, &off_run)?, &off_run),
    ];
    let (mut on_rates, mut off_rates, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let mut first = None;
    for round in 0..rounds {
        let mut rate = [0.0; 2];
        // Even rounds run acking on first, odd rounds acking off first.
        for k in [round % 2, 1 - round % 2] {
            let (json, r) = pipeline_threaded(&runs[k].0, runs[k].1, seconds)?;
            rate[k] = r;
            if k == 0 && first.is_none() {
                first = Some(json);
            }
        }
        on_rates.push(rate[0]);
        off_rates.push(rate[1]);
        if rate[0] == 0.0 || rate[1] == 0.0 {
            return Err(format!(
                "round {} acked no tree with acking {}: no ratio to report (raise --seconds{})",
                round + 1,
                if rate[0] == 0.0 { "on" } else { "off" },
                if run.no_pin { "" } else { PINNED_HINT }
            )
            .into());
        }
        ratios.push(rate[0] / rate[1]);
    }
    let Some(serde_json::Value::Object(mut json)) = first else {
        return Err(CliError::Usage(
            "--vs-acking-off must be at least 1".to_string(),
        ));
    };
    json.insert("rounds".into(), rounds.into());
    json.insert("ratio_acking_on_to_off".into(), min_median_max(&mut ratios));
    json.insert(
        "acking_on_trees_per_sec".into(),
        min_median_max(&mut on_rates),
    );
    json.insert(
        "acking_off_trees_per_sec".into(),
        min_median_max(&mut off_rates),
    );
    let mut out = io::stdout().lock();
    let mut json = serde_json::Value::Object(json);
    acker_runtime::cli::round_json_floats(&mut json);
    writeln!(out, "{json}")?;
    out.flush()?;
    Ok(())
}

/// One threaded run of the pipeline for `seconds`: its JSON summary and trees acked per second
/// (with `--ackers 0`, the trees the spout counted acked at once).
fn pipeline_threaded(
    plan: &acker_runtime::Plan,
    run: &RunArgs,
    seconds: f64,
) -> Result<(serde_json::Value, f64), CliError> {
    acker_runtime::cli::say_config_warnings("acker-run", plan.config());
    let cpu0 = process_cpu_secs();
    let report = shell::run(
        plan,
        &ShellOptions {
            max_duration: Some(Duration::from_secs_f64(seconds)),
            drain_timeout: Some(Duration::from_secs(60)),
            ..shell_options(run)
        },
    )
    .map_err(|e| e.to_string())?;
    let cpu_s = cpu_delta(cpu0);
    let trees = report.spout_totals().acked;
    let null_executed = report
        .components
        .get("null")
        .map(|c| c.executed)
        .unwrap_or(0);
    let secs = report.elapsed.as_secs_f64();
    let json = serde_json::json!({
        "bench": "pipeline",
        "cores": report.cores,
        "ackers": run.ackers,
        "elapsed_s": secs,
        "trees_acked": trees,
        "trees_per_sec": trees as f64 / secs,
        "cpu_s": cpu_s,
        "trees_per_cpu_s": cpu_s.map(|c| trees as f64 / c),
        "null_executed": null_executed,
        "tuples_through_per_sec": null_executed as f64 / secs,
        "failed": report.spout_totals().failed,
        "timed_out": report.spout_totals().timed_out,
        "acker_parked": report.kind_totals(acker_runtime::TaskKind::Acker).parked,
        "acker_dropped_full": report.kind_totals(acker_runtime::TaskKind::Acker).dropped_full,
        "complete_latency_us": latency_json(&report),
    });
    Ok((json, trees as f64 / secs))
}

/// Largest `--min-mb` accepted (1 TB; the repeated text must also fit in memory).
const MAX_MIN_MB: usize = 1_000_000;

fn bench_wordcount_cmd(
    input: std::path::PathBuf,
    min_mb: usize,
    rounds: usize,
    run: RunArgs,
) -> Result<(), CliError> {
    check_run(&run)?;
    if min_mb > MAX_MIN_MB {
        return Err(CliError::Usage(format!(
            "--min-mb must be in 1..={MAX_MIN_MB}, got {min_mb}"
        )));
    }
    // The same reading as `wordcount --input` (`-` is standard input; not UTF-8 names the
    // offset of the first bad byte).
    let base = acker_runtime::cli::read_text(&input)?;
    if base.is_empty() {
        return Err(format!("{} is empty", acker_runtime::cli::input_name(&input)).into());
    }
    if base.split_whitespace().next().is_none() {
        // Neither side would count a word: no ratio to report (it printed `null` with exit 0).
        return Err(format!(
            "{} holds no word (only whitespace): nothing to count",
            acker_runtime::cli::input_name(&input)
        )
        .into());
    }
    // The repeated text is held twice (it and the topology's copy): counted with the ackers'
    // memory before it is built, so that a --min-mb too large for this process is refused by
    // name (new-user trial: `--min-mb 500` under `ulimit -v 600000` died of SIGABRT; `--min-mb
    // 250` was blamed on --ackers / --max-spout-pending).
    let text_bytes = (min_mb as u64)
        .saturating_mul(1_000_000)
        .saturating_add(base.len() as u64);
    {
        let (topology, _) = wordcount::topology(Lines::from_text(&base), cores(&run), 0.0)
            .map_err(|e| e.to_string())?;
        plan_with(
            &topology,
            &run,
            Some(acker_runtime::cli::Besides {
                bytes: text_bytes.saturating_mul(2),
                option: &format!("--min-mb {min_mb}"),
                what_for: &format!(
                    "the input repeated to {}, held twice: the text and the topology's copy",
                    acker_runtime::cli::size(text_bytes)
                ),
                remedy: "lower --min-mb",
                mapped_already: 0,
            }),
        )?;
    }
    let mut text = String::new();
    text.try_reserve(min_mb * 1_000_000 + base.len())
        .map_err(|e| format!("cannot allocate {min_mb} MB for the repeated input: {e}"))?;
    while text.len() < min_mb * 1_000_000 {
        text.push_str(&base);
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    let n = cores(&run);
    let mut ratios = Vec::with_capacity(rounds);
    let mut first = None;
    for _ in 0..rounds {
        // Baseline: plain single-thread split-and-count.
        let cpu0 = process_cpu_secs();
        let t0 = Instant::now();
        let plain = plain_count(&text);
        let plain_secs = t0.elapsed().as_secs_f64();
        let plain_cpu = cpu_delta(cpu0);
        let plain_words: u64 = plain.values().sum();
        let plain_distinct = plain.len();
        drop(plain);

        let lines = Lines::from_text(&text);
        let (topology, outputs) = wordcount::topology(lines, n, 0.0).map_err(|e| e.to_string())?;
        let plan = plan(&topology, &run)?;
        let cpu1 = process_cpu_secs();
        acker_runtime::cli::say_config_warnings("acker-run", plan.config());
        let report = shell::run(&plan, &shell_options(&run)).map_err(|e| e.to_string())?;
        let topo_cpu = cpu_delta(cpu1);
        let counts = outputs.counts.lock().unwrap_or_else(|p| p.into_inner());
        let words: u64 = counts.values().sum();
        let secs = report.elapsed.as_secs_f64();
        ratios.push((words as f64 / secs) / (plain_words as f64 / plain_secs));
        if first.is_none() {
            first = Some((
                plain_secs,
                plain_cpu,
                plain_words,
                plain_distinct,
                counts.len(),
                words,
                secs,
                topo_cpu,
                report,
            ));
        }
    }
    let text_bytes = text.len();
    drop(text);
    let Some((
        plain_secs,
        plain_cpu,
        plain_words,
        plain_distinct,
        topology_distinct,
        words,
        secs,
        topo_cpu,
        report,
    )) = first
    else {
        return Err(CliError::Usage("--rounds must be at least 1".to_string()));
    };
    let ratio_to_plain_loop = min_median_max(&mut ratios);
    let mut out = io::stdout().lock();
    let mut json = serde_json::json!({
            "bench": "wordcount",
            "bytes": text_bytes,
            "cores": report.cores,
            "ackers": run.ackers,
            "plain_words": plain_words,
            "plain_secs": plain_secs,
            "plain_words_per_sec": plain_words as f64 / plain_secs,
            "topology_words": words,
            "topology_distinct": topology_distinct,
            "plain_distinct": plain_distinct,
            "topology_secs": secs,
            "topology_words_per_sec": words as f64 / secs,
            "ratio": (words as f64 / secs) / (plain_words as f64 / plain_secs),
            "rounds": rounds,
            "ratio_to_plain_loop": ratio_to_plain_loop,
            "plain_cpu_s": plain_cpu,
            "topology_cpu_s": topo_cpu,
            "plain_words_per_cpu_s": plain_cpu.map(|c| plain_words as f64 / c),
            "topology_words_per_cpu_s": topo_cpu.map(|c| words as f64 / c),
            "complete_latency_us": latency_json(&report),
    });
    acker_runtime::cli::round_json_floats(&mut json);
    writeln!(out, "{json}")?;
    out.flush()?;
    Ok(())
}

fn main() -> ExitCode {
    use clap::{CommandFactory, FromArgMatches};
    let matches = Cli::command().get_matches();
    // Whether `wordcount --ackers` was given on the command line (not its default of 1):
    // at-most-once runs with no ackers and refuses an explicit nonzero count.
    let ackers_given = matches
        .subcommand_matches("wordcount")
        .and_then(|m| m.value_source("ackers"))
        == Some(clap::parser::ValueSource::CommandLine);
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let r = match cli.command {
        Command::Wordcount(a) => wordcount_cmd(*a, ackers_given),
        Command::Bench(BenchCommand::Pipeline {
            seconds,
            local,
            vs_acking_off,
            json: _,
            run,
        }) => pipeline_cmd(seconds, local, vs_acking_off, run),
        Command::Bench(BenchCommand::Wordcount {
            input,
            min_mb,
            rounds,
            json: _,
            run,
        }) => bench_wordcount_cmd(input, min_mb, rounds, run),
        #[cfg(all(feature = "redis", feature = "postgres"))]
        Command::Load(a) => acker_runtime::connectors::wordcount::load(
            &a.input,
            &a.redis,
            &a.stream,
            &mut io::stdout().lock(),
        ),
        #[cfg(all(feature = "redis", feature = "postgres"))]
        Command::Counts(a) => acker_runtime::connectors::wordcount::counts(
            &a.postgres,
            a.top,
            a.json,
            &mut io::stdout().lock(),
        ),
    };
    // Argument errors found after parsing are printed as clap prints its own, with the usage
    // line of the subcommand that was run.
    let mut path = Vec::new();
    let mut at = &matches;
    while let Some((name, sub)) = at.subcommand() {
        path.push(name);
        at = sub;
    }
    exit_status_with_usage(
        "acker-run",
        Cli::command(),
        &path,
        r.map(|()| ExitCode::SUCCESS),
    )
}
