//! Internal (`#[doc(hidden)]`): not part of the library API, and may change with the binaries.
//!
//! What the workspace's command-line programs (`acker-run`, `acker-sim`, `acker-bench`) share:
//! how they end on an error, the clap value parser for whole-number options, the acker-capacity
//! check the word-count jobs share, and reading an
//! `--input` text.
//!
//! Every program exits 0 on success, also when stdout is a pipe its reader closed early
//! (`| head -1`: the reader has what it asked for), and 2 with a message on stderr on bad
//! arguments, a failed run or a stdout write error (e.g. `> /dev/full`). Bad arguments found
//! after parsing ([`CliError::Usage`]) are printed the way clap prints its own
//! ([`exit_status_with_usage`]), so every argument error of a program looks alike. A program may use
//! other statuses of its own for what its run found (`acker-sim`: 1 for a violation).

use std::io;
use std::process::ExitCode;

/// Why a command stopped early.
#[derive(Debug)]
pub enum CliError {
    /// Bad arguments found after clap parsed them (a value out of range, options that do not go
    /// together, a malformed URL): the message, printed like clap's own argument errors by
    /// [`exit_status_with_usage`] (`program: error: ...` by [`exit_status`]).
    Usage(String),
    /// A failed run (a file that cannot be read, a server that cannot be reached, ...): the
    /// message for stderr.
    Run(String),
    /// Writing the results to stdout failed.
    Stdout(io::Error),
    /// The run was stopped by a signal its handler caught (`acker-run load` on SIGINT or
    /// SIGTERM): the message for stderr (what was done before the stop), and the exit status a
    /// shell reports for a process ended by that signal, 128 + its number (130, 143).
    Interrupted {
        /// What was done before the stop, for stderr.
        message: String,
        /// The exit status: 128 + the signal's number.
        status: u8,
    },
}

impl From<String> for CliError {
    fn from(e: String) -> Self {
        CliError::Run(e)
    }
}

impl From<io::Error> for CliError {
    fn from(e: io::Error) -> Self {
        CliError::Stdout(e)
    }
}

/// A refused plan of `topology` under `config` as an argument error (the config comes from the
/// command line); too many tasks names `--ackers` and the largest value this topology allows
/// (new-user trial: `--ackers 100000` got only "tasks plus ackers exceed ..."), and, when it is
/// lower, the bound [`check_acker_count`] sets next, the roots the spouts may keep pending (new-user
/// trial: `--ackers 65535` was told "at most 65530", then 65530 was refused by that bound).
pub fn plan_refused(
    topology: &crate::Topology,
    config: &crate::Config,
    e: crate::ConfigError,
) -> CliError {
    match e {
        crate::ConfigError::TooManyTasks => {
            let ids = crate::topology::MAX_TASKS.saturating_sub(topology.num_tasks());
            let mut message = format!(
                "{e}: this topology has {} task(s), so --ackers may be at most {ids} (got {})",
                topology.num_tasks(),
                config.num_ackers
            );
            // The spout tasks, from the plan without ackers (which has no task id to run out of).
            let spouts = topology
                .plan(&crate::Config {
                    num_ackers: 0,
                    ..config.clone()
                })
                .map(|p| {
                    p.tasks()
                        .iter()
                        .filter(|t| t.kind == crate::TaskKind::Spout)
                        .count()
                });
            if let Ok(spouts) = spouts {
                let pending = config.pending_capacity();
                let roots = spouts.saturating_mul(pending);
                if roots < ids {
                    message.push_str(&format!(
                        "; with these options at most {roots}: the roots the spouts may keep \
                         pending ({spouts} spout task(s) x max spout pending {pending}), since an \
                         acker past them can never hold a root"
                    ));
                }
            }
            CliError::Usage(message)
        }
        e => CliError::Usage(e.to_string()),
    }
}

/// Refuses an acker capacity the run cannot use, as the built-in job does: with ackers, fewer
/// roots in all acker tables than `spout_tasks` × max spout pending (the acker would park and
/// drop messages on every round, and the spout would replay healthy entries until they are
/// dead-lettered); without ackers (at-most-once), any `--acker-capacity` (it would be ignored).
///
/// # Errors
/// The message for stderr, naming the options and what to change.
pub fn check_acker_capacity(config: &crate::Config, spout_tasks: usize) -> Result<(), String> {
    let Some(capacity) = config.acker_capacity_roots else {
        return Ok(());
    };
    if config.num_ackers == 0 {
        return Err(format!(
            "--acker-capacity {capacity} was given, but this run has no ackers (at-most-once: \
             nothing is tracked): leave --acker-capacity out"
        ));
    }
    let pending = spout_tasks.saturating_mul(config.pending_capacity());
    if capacity.saturating_mul(config.num_ackers) < pending {
        return Err(format!(
            "--acker-capacity {capacity} x {} acker(s) holds fewer roots than the spouts may keep \
             pending ({spout_tasks} spout task(s) x max spout pending {}): raise --acker-capacity \
             or lower --max-spout-pending",
            config.num_ackers,
            config.pending_capacity()
        ));
    }
    Ok(())
}

/// As [`exit_status`], but a [`CliError::Usage`] is printed by clap as an argument error of
/// `command`'s subcommand `subcommand` (its names from the top, e.g. `["bench", "pipeline"]`;
/// the top command itself when empty or not found): `error: MESSAGE`, the subcommand's usage
/// line and `For more information, try '--help'.`, exit status 2, exactly as clap reports an
/// argument it refused while parsing.
pub fn exit_status_with_usage(
    program: &str,
    command: clap::Command,
    subcommand: &[&str],
    result: Result<ExitCode, CliError>,
) -> ExitCode {
    match result {
        Err(CliError::Usage(message)) => {
            let mut command = command;
            // Building fills in each subcommand's full name ("acker-run bench pipeline") for
            // its usage line.
            command.build();
            let mut at = command;
            for name in subcommand {
                match at.find_subcommand(name) {
                    Some(sub) => at = sub.clone(),
                    None => break,
                }
            }
            let e = at.error(clap::error::ErrorKind::ValueValidation, message);
            // Printing to stderr can only fail if stderr is gone; the status stays 2.
            let _ = e.print();
            ExitCode::from(2)
        }
        other => exit_status(program, other),
    }
}

/// `eprintln!` that ignores a failed write: a warning or progress line on a stderr that is
/// closed (`2>&1 | head -1`) or full (`2>/dev/full`) is dropped instead of panicking (exit
/// status 101); the command goes on and its stdout and exit status stay as they would be.
#[macro_export]
macro_rules! stderr_line {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::writeln!(::std::io::stderr(), $($arg)*);
    }};
}

/// Prints `config`'s warnings ([`crate::Config::warnings`]) on stderr as `program: warning:
/// ...`, each once in the process (a benchmark's rounds run the same config again), for a
/// program whose shell runs have [`crate::shell::ShellOptions::print_config_warnings`] off (new-user
/// trial: acker-run's "message timeouts are off" warning lacked the `acker-run:` its other
/// warnings have).
pub fn say_config_warnings(program: &str, config: &crate::Config) {
    static SAID: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut said = SAID.lock().unwrap_or_else(|p| p.into_inner());
    for w in config.warnings() {
        if !said.contains(&w) {
            crate::stderr_line!("{program}: warning: {w}");
            said.push(w);
        }
    }
}

/// The exit status for a command's result, after printing `program: error: ...` on stderr for
/// an error: the command's own status on success; 0 for a broken pipe on stdout; 128 + the
/// signal's number for [`CliError::Interrupted`] (`program: MESSAGE`); 2 otherwise.
pub fn exit_status(program: &str, result: Result<ExitCode, CliError>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(CliError::Usage(e)) => {
            crate::stderr_line!("{program}: error: {e}");
            ExitCode::from(2)
        }
        Err(CliError::Stdout(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(CliError::Stdout(e)) => {
            crate::stderr_line!("{program}: error: cannot write to stdout: {e}");
            ExitCode::from(2)
        }
        Err(CliError::Run(e)) => {
            crate::stderr_line!("{program}: error: {e}");
            ExitCode::from(2)
        }
        Err(CliError::Interrupted { message, status }) => {
            crate::stderr_line!("{program}: {message}");
            ExitCode::from(status)
        }
    }
}

/// The items of a comma-separated option value (`acker-sim`'s `--faults`, `--cells`), each
/// trimmed: none for an empty (or all-whitespace) value, and an error for an empty item (`,`,
/// `a,`, `a,,b`), which would otherwise be skipped and read as if fewer items had been given
/// (new-user trial: `--faults ','` ran with no fault at all).
///
/// # Errors
/// A message quoting the list and saying which item is empty.
pub fn list_items(text: &str) -> Result<Vec<&str>, String> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let items: Vec<&str> = text.split(',').map(str::trim).collect();
    match items.iter().position(|s| s.is_empty()) {
        Some(i) => Err(format!(
            "item {} of {} in the comma-separated list `{text}` is empty (no comma before the \
             first item, after the last or next to another)",
            i + 1,
            items.len()
        )),
        None => Ok(items),
    }
}

/// clap value parser for a whole number of at least `MIN`: refuses negative numbers (the options
/// using it also set `allow_negative_numbers`, so `-1` reaches here instead of being read as a
/// flag), fractions and numbers past `u64::MAX` with a message naming the limit.
///
/// # Errors
/// The message clap prints after `invalid value '...' for '--option'`.
pub fn at_least<const MIN: u64>(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if n >= MIN => Ok(n),
        Ok(_) => Err(format!("must be at least {MIN}")),
        Err(e) if *e.kind() == std::num::IntErrorKind::PosOverflow => {
            Err("is too large (more than 2^64 - 1)".to_string())
        }
        Err(_) if s.trim_start().starts_with('-') && MIN == 0 => {
            Err("must not be negative".to_string())
        }
        Err(_) if s.trim_start().starts_with('-') => {
            Err(format!("must not be negative (at least {MIN})"))
        }
        Err(_) if MIN == 0 => Err("must be a whole number".to_string()),
        Err(_) => Err(format!("must be a whole number >= {MIN}")),
    }
}

/// [`at_least`] for `usize` options.
///
/// # Errors
/// As [`at_least`], and a number too large for `usize`.
pub fn count_at_least<const MIN: u64>(s: &str) -> Result<usize, String> {
    let n = at_least::<MIN>(s)?;
    usize::try_from(n).map_err(|_| format!("{n} is too large"))
}

/// The most characters of a word a text summary prints ([`word_for_text`]).
pub const WORD_WIDTH: usize = 40;

/// `word` for a text summary's top-words table: whole when at most [`WORD_WIDTH`] characters,
/// else its first [`WORD_WIDTH`] characters and `… (N chars)` (new-user trial: a 200,000-character
/// word was printed in full). `--json` prints words whole.
pub fn word_for_text(word: &str) -> std::borrow::Cow<'_, str> {
    match word.char_indices().nth(WORD_WIDTH) {
        None => std::borrow::Cow::Borrowed(word),
        Some((cut, _)) => std::borrow::Cow::Owned(format!(
            "{}… ({} chars)",
            &word[..cut],
            word.chars().count()
        )),
    }
}

/// Whether standard input was closed when the process started (new-user trial: `wordcount
/// --input - <&-` counted 0 lines and exited 0). Rust's runtime then opens `/dev/null` on fd 0,
/// read-write (Linux: `O_RDWR`), where a shell's `< /dev/null`, an empty but open input, opens it
/// read-only. `false` where `/proc` cannot tell.
fn stdin_was_closed() -> bool {
    if std::fs::read_link("/proc/self/fd/0").ok().as_deref()
        != Some(std::path::Path::new("/dev/null"))
    {
        return false;
    }
    std::fs::read_to_string("/proc/self/fdinfo/0")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("flags:"))
                .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
        })
        .is_some_and(|flags| flags & 0o3 == 0o2)
}

/// Reads `path` (`-`: standard input) as UTF-8 text, for every command taking `--input`
/// (`acker-run wordcount`, `acker-run load`, `acker-run bench wordcount`): [`read_input`] with
/// its error as a message.
///
/// # Errors
/// The message of [`ReadError`].
pub fn read_text(path: &std::path::Path) -> Result<String, String> {
    read_input(path).map_err(|e| e.to_string())
}

/// Why [`read_input`] could not read an input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadError {
    /// The input cannot be opened or read, is closed standard input, or is not UTF-8: the
    /// message naming it (and the offset of the first bad byte).
    Failed(String),
    /// Memory for the text could not be allocated (e.g. under `ulimit -d`).
    OutOfMemory {
        /// How messages name the input ([`input_name`]).
        name: String,
        /// Bytes read before the allocation failed.
        read_bytes: u64,
        /// Bytes of text the failed allocation was to hold.
        wanted_bytes: u64,
    },
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Failed(m) => f.write_str(m),
            ReadError::OutOfMemory {
                name,
                read_bytes,
                wanted_bytes,
            } => write!(
                f,
                "cannot read {name}: out of memory after {read_bytes} bytes (allocating room \
                 for {wanted_bytes} bytes of text failed)"
            ),
        }
    }
}

/// The size in bytes of `path` from its metadata when it is a regular file; `None` for `-`
/// (standard input) and for anything else (a pipe, a device, a missing file), whose size is
/// known only once read.
pub fn regular_file_size(path: &std::path::Path) -> Option<u64> {
    if is_stdin(path) {
        return None;
    }
    std::fs::metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len())
}

/// Reads `path` (`-`: standard input) as UTF-8 text. The input is checked as it is read, so a
/// file or stream that is not UTF-8 is refused at its first bad byte without being read to its
/// end (new-user trial: `--input /dev/urandom` read until memory ran out). Memory is taken
/// fallibly: a regular file's size is reserved at once, exactly (so the text is held once, not
/// in a buffer up to twice its size); other input grows its buffer by doubling, and by only
/// what it reads when doubling fails; an allocation that fails is an error, not an abort.
///
/// # Errors
/// [`ReadError::Failed`] naming the input when it cannot be read, and the offset of the first
/// bad byte when it is not UTF-8; [`ReadError::OutOfMemory`] when the text's memory could not
/// be allocated.
pub fn read_input(path: &std::path::Path) -> Result<String, ReadError> {
    let stdin = is_stdin(path);
    let name = input_name(path);
    let read = |e: io::Error| ReadError::Failed(format!("cannot read {name}: {e}"));
    if stdin && stdin_was_closed() {
        return Err(ReadError::Failed(
            "--input -: standard input is closed (the program was started with it \
                    closed, e.g. `<&-`): give the text on standard input, or --input PATH"
                .to_string(),
        ));
    }
    let out_of_memory = |read_bytes: usize, wanted_bytes: usize| ReadError::OutOfMemory {
        name: name.clone(),
        read_bytes: read_bytes as u64,
        wanted_bytes: wanted_bytes as u64,
    };
    let mut bytes = Vec::new();
    let mut source: Box<dyn io::Read> = if stdin {
        Box::new(io::stdin().lock())
    } else {
        let file = std::fs::File::open(path).map_err(read)?;
        if let Some(size) = file
            .metadata()
            .ok()
            .filter(|m| m.is_file())
            .and_then(|m| usize::try_from(m.len()).ok())
        {
            bytes
                .try_reserve_exact(size)
                .map_err(|_| out_of_memory(0, size))?;
        }
        Box::new(file)
    };
    // Bytes at the front of `bytes` known to be valid UTF-8 (a character cut by a chunk's end
    // is checked again with the next chunk).
    let mut valid = 0;
    let mut chunk = vec![0u8; 1 << 20];
    loop {
        let n = match source.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(read(e)),
        };
        // Doubling (amortized), else only what this chunk needs: near a limit the text may
        // still fit where a doubled buffer would not.
        if bytes.try_reserve(n).is_err() {
            bytes
                .try_reserve_exact(n)
                .map_err(|_| out_of_memory(bytes.len(), bytes.len().saturating_add(n)))?;
        }
        bytes.extend_from_slice(&chunk[..n]);
        match std::str::from_utf8(&bytes[valid..]) {
            Ok(_) => valid = bytes.len(),
            // Only an incomplete last character (`error_len` None) may be completed by more input.
            Err(e) if e.error_len().is_none() => valid += e.valid_up_to(),
            Err(e) => return Err(not_utf8(&name, valid + e.valid_up_to())),
        }
    }
    bytes.shrink_to_fit();
    String::from_utf8(bytes).map_err(|e| not_utf8(&name, e.utf8_error().valid_up_to()))
}

fn not_utf8(name: &str, offset: usize) -> ReadError {
    ReadError::Failed(format!(
        "{name} is not UTF-8: invalid byte at offset {offset} (0-based)"
    ))
}

/// How messages name an `--input`: `standard input` for `-`, else `input PATH`.
pub fn input_name(path: &std::path::Path) -> String {
    if is_stdin(path) {
        input_label(path)
    } else {
        format!("input {}", path.display())
    }
}

/// How a summary names an `--input`: `standard input` for `-`, else the path as given.
pub fn input_label(path: &std::path::Path) -> String {
    if is_stdin(path) {
        "standard input".to_string()
    } else {
        path.display().to_string()
    }
}

/// Whether an `--input` is `-`, standard input.
fn is_stdin(path: &std::path::Path) -> bool {
    path == std::path::Path::new("-")
}

/// Address space an acker task takes beside its table (20 B a root) and park queue (up to 104 B
/// a message). Measured with `VmPeak`: 16000 ackers of the default 1024-root table and 128-message
/// queue (33.8 KB) peaked at 1.27 GB, about 78 KB each.
pub const ACKER_TASK_BYTES: u64 = 44 * 1024;

/// Address space a spout task's pending set (and what else grows with max spout pending) takes
/// a tree, rounded up from measurement: `bench pipeline --max-spout-pending 10000000` (one acker
/// of 40M roots and a 5M-message park queue, 1.32 GB) died under `ulimit -v` 2.0 GB and ran
/// under 2.3 GB, so 0.7 to 1.0 GB went to the rest.
pub const PENDING_TREE_BYTES: u64 = 64;

/// Memory a run takes besides its acker tables and spout pending sets, for
/// [`check_acker_count`]: how much, for what, and what to change when it does not fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Besides<'a> {
    /// The bytes, beyond what the process maps already.
    pub bytes: u64,
    /// The option (and its value) that takes them, as messages name it: `--min-mb 500`,
    /// `--input big.txt`.
    pub option: &'a str,
    /// What they are for, for the message: `the input repeated to 500.0 MB, held twice: ...`.
    pub what_for: &'a str,
    /// What to change when they do not fit (`lower --min-mb`), when they are most of the need.
    pub remedy: &'a str,
    /// Bytes of [`bytes`](Self::bytes) the process maps already (standard input read before
    /// its size was known): counted in the need, not as the process's own mapping, so that
    /// the message gives the whole need and does not blame the limit on the process itself.
    pub mapped_already: u64,
}

/// Refuses an acker count the run cannot use or hold, before any task is built (new-user trial:
/// `bench wordcount --ackers 65530` asked for about 2.5 GB and under `ulimit -v` died of SIGABRT
/// in an allocation): more ackers than the roots the spouts may keep pending (`spouts` x max
/// spout pending: an acker past them can never hold a root), or acker tables, park queues and
/// spout pending sets that need more memory than this process may have ([`memory_room`]).
/// `other`: memory another option takes besides ([`Besides`]; e.g.
/// `bench wordcount --min-mb`'s text); the message names the option that takes the most.
/// Used by the built-in jobs and the connector job alike, before any task is built or server
/// touched.
///
/// # Errors
/// The message for stderr, naming the options and what to change.
pub fn check_acker_count(
    plan: &crate::Plan,
    spouts: usize,
    cores: usize,
    other: Option<Besides<'_>>,
) -> Result<(), String> {
    let ackers = plan.config().num_ackers;
    let pending = plan.config().pending_capacity();
    let roots = spouts.saturating_mul(pending);
    if ackers > roots {
        return Err(format!(
            "--ackers {ackers} is more than the {roots} root(s) the spouts may keep pending \
             ({spouts} spout task(s) x max spout pending {pending}): an acker past them can never \
             hold a root; give at most {roots}"
        ));
    }
    let (capacity, park, remembered) = if ackers == 0 {
        (0, 0, 0)
    } else {
        (
            plan.acker_capacity_roots(),
            plan.acker_park_capacity(),
            plan.recently_failed_capacity(),
        )
    };
    let recently_failed = crate::park::RecentRoots::bytes_for(remembered);
    let per_acker = (capacity as u64)
        .saturating_mul(20)
        .saturating_add((park as u64).saturating_mul(104))
        .saturating_add(recently_failed as u64)
        .saturating_add(ACKER_TASK_BYTES);
    let pending_sets = (roots as u64).saturating_mul(PENDING_TREE_BYTES);
    let trees = per_acker
        .saturating_mul(ackers as u64)
        .saturating_add(pending_sets);
    let other_bytes = other.map_or(0, |o| o.bytes);
    let need = trees.saturating_add(other_bytes);
    let mapped_already = other.map_or(0, |o| o.mapped_already);
    let Some(bound) = memory_bound_besides(thread_margin(cores), mapped_already) else {
        return Ok(());
    };
    if need <= bound.room {
        return Ok(());
    }
    if let Some(o) = other.filter(|o| o.bytes >= trees) {
        let needs = format!(
            "{} needs about {} of memory for {} ({} with the {ackers} acker task(s) and \
             {spouts} spout pending set(s))",
            o.option,
            size(o.bytes),
            o.what_for,
            size(need),
        );
        return Err(memory_refusal(&bound, need, &needs, o.remedy));
    }
    // Memory besides under 1 KB is left out of the message (a word count's input of a few
    // bytes read "besides 0.0 KB for --input ..."); it is counted all the same.
    let besides = match other {
        Some(Besides {
            bytes,
            option,
            what_for,
            ..
        }) if bytes >= 1000 => {
            format!(" (besides {} for {option}: {what_for})", size(bytes))
        }
        _ => String::new(),
    };
    if ackers == 0 {
        // No acker table: neither --ackers nor a per-acker size has anything to say
        // (new-user trial: `--ackers 0` was told of 0 tables of 45.1 KB and to lower --ackers).
        let needs = format!(
            "--max-spout-pending {pending} needs about {} of memory for {spouts} spout pending \
             set(s) of {pending} trees (no acker task: --ackers 0){besides}",
            size(trees)
        );
        return Err(memory_refusal(
            &bound,
            need,
            &needs,
            "lower --max-spout-pending",
        ));
    }
    let needs = format!(
        "--ackers {ackers} and --max-spout-pending {pending} need about {} of memory: {} \
         for {ackers} acker task(s) (about {} each: a table of {capacity} roots at 20 B, \
         a park queue of {park} messages at up to 104 B, {remembered} roots remembered as \
         failed at up to 24 B and the task) and {} for {spouts} spout pending set(s) of \
         {pending} trees{besides}",
        size(trees),
        size(per_acker.saturating_mul(ackers as u64)),
        size(per_acker),
        size(pending_sets)
    );
    Err(memory_refusal(
        &bound,
        need,
        &needs,
        "lower --ackers or --max-spout-pending (an acker table holds 4 x the trees the spouts \
         may keep pending unless --acker-capacity is given), or --acker-capacity / \
         --acker-park-capacity",
    ))
}

/// `bytes` for a message: KB, MB or GB (decimal), one decimal.
pub fn size(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1e9 {
        format!("{:.1} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else {
        format!("{:.1} KB", b / 1e3)
    }
}

/// The most memory a run of `cores` threads may still take, and what bounds it, for a message:
/// the machine's physical memory, or what is left under this process's address-space or data
/// limit (`ulimit -v`, `ulimit -d`; what is mapped now and a margin for the threads' stacks
/// taken off, both named in the message). `None` when none can be read (Linux only).
pub fn memory_room(cores: usize) -> Option<(u64, String)> {
    memory_bound(thread_margin(cores)).map(|b| (b.room, b.what))
}

/// What [`memory_room`] keeps in reserve for a run of `cores` threads of `acker-run`: under
/// `ulimit -v` (address space) 128 MB and 8.4 MB a thread, for the thread stacks and the
/// allocator's per-thread arenas, which reserve address space long before they use it; under
/// `ulimit -d` (the data segment: heap and private writable mappings, `VmData`) 16 MB and 8.4 MB
/// a thread, for the stacks, since an arena's reservation does not count there until written.
/// (New-user trial: the address-space margin applied to `ulimit -d` as well refused
/// `wordcount --ackers 1` under `ulimit -d 100000`, whose `VmData` peaks at about 27 MB even
/// with `--ackers 100`.)
pub fn thread_margin(cores: usize) -> Margin {
    let stacks = 8_400_000u64.saturating_mul(cores as u64);
    Margin {
        address_space: stacks.saturating_add(128_000_000),
        data: stacks.saturating_add(16_000_000),
    }
}

/// Bytes [`memory_bound`] keeps in reserve under each process limit for what the run maps besides
/// the memory it is checked for (thread stacks, allocator arenas). A plain byte count converts
/// into the same margin under both limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Margin {
    /// Under `ulimit -v` (`Max address space`, measured against `VmSize`), in bytes.
    pub address_space: u64,
    /// Under `ulimit -d` (`Max data size`, measured against `VmData`), in bytes.
    pub data: u64,
}

impl From<u64> for Margin {
    fn from(bytes: u64) -> Self {
        Self {
            address_space: bytes,
            data: bytes,
        }
    }
}

/// A process limit (`ulimit -v` or `ulimit -d`) that bounds the memory a run may still take
/// ([`memory_bound`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessLimit {
    /// The limit, in bytes.
    pub limit: u64,
    /// What the process maps now (`VmSize` or `VmData`), in bytes.
    pub mapped: u64,
    /// The margin kept for the run's threads (stacks, allocator arenas), in bytes.
    pub margin: u64,
    /// The shell command that sets it: `ulimit -v` or `ulimit -d`.
    pub ulimit: &'static str,
}

/// [`memory_room`] with what bounds it: the bytes a run may still take, the message, and the
/// process limit when one is the bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryBound {
    /// The bytes a run may still take.
    pub room: u64,
    /// What bounds them, for a message.
    pub what: String,
    /// The process limit that is the bound (`None`: the machine's memory).
    pub limit: Option<ProcessLimit>,
}

/// The bound of [`memory_room`], keeping `margin` in reserve under each process limit (for
/// thread stacks and allocator arenas: [`thread_margin`] for `acker-run`, less for a program of
/// one thread).
pub fn memory_bound(margin: impl Into<Margin>) -> Option<MemoryBound> {
    memory_bound_besides(margin, 0)
}

/// [`memory_bound`], with `counted` bytes of what the process maps now left out of its mapping
/// (counted in the need instead: text read before its size was known), so that the room
/// includes them.
pub fn memory_bound_besides(margin: impl Into<Margin>, counted: u64) -> Option<MemoryBound> {
    let margin = margin.into();
    let mut bound: Option<MemoryBound> = physical_memory_bytes().map(|b| MemoryBound {
        room: b,
        what: format!("this machine's {} of memory", size(b)),
        limit: None,
    });
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = |key: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(key))?;
        line.split_whitespace()
            .nth(1)?
            .parse::<u64>()
            .ok()?
            .checked_mul(1024)
    };
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let limit = |name: &str| -> Option<u64> {
        let line = limits.lines().find(|l| l.starts_with(name))?;
        // `Max address space  SOFT  HARD  bytes`: the soft limit, `unlimited` or a number.
        line[name.len()..].split_whitespace().next()?.parse().ok()
    };
    for (name, used, ulimit, margin) in [
        (
            "Max address space",
            kib("VmSize:"),
            "ulimit -v",
            margin.address_space,
        ),
        ("Max data size", kib("VmData:"), "ulimit -d", margin.data),
    ] {
        let Some(max) = limit(name) else { continue };
        let mapped = used.unwrap_or(0).saturating_sub(counted);
        let left = max.saturating_sub(mapped).saturating_sub(margin);
        let besides = if counted > 0 {
            format!(" besides the {} counted above", size(counted))
        } else {
            String::new()
        };
        if bound.as_ref().is_none_or(|b| left < b.room) {
            bound = Some(MemoryBound {
                room: left,
                what: format!(
                    "the {} this process may still map under its limit of {} (`{ulimit}`; it \
                     maps {}{besides} already and keeps {} in reserve for thread stacks and \
                     allocator arenas)",
                    size(left),
                    size(max),
                    size(mapped),
                    size(margin)
                ),
                limit: Some(ProcessLimit {
                    limit: max,
                    mapped,
                    margin,
                    ulimit,
                }),
            });
        }
    }
    bound
}

/// Refuses a run that needs about `need` bytes beyond what the process maps now when more than
/// [`memory_bound`]`(margin)` allows: `needs` says what needs them (`--tuples 100000000 needs
/// about 13.0 GB of memory for ...`), `remedy` what to change (`lower --tuples`). When a process
/// limit is the bound and `need` is small next to what the process itself takes under it (what
/// it maps already and the margin for its threads), no option can help: the message says the
/// limit is too low for the process itself and how far to raise it, instead of `remedy`.
///
/// # Errors
/// The one-line message for stderr.
pub fn check_memory(
    need: u64,
    margin: impl Into<Margin>,
    needs: &str,
    remedy: &str,
) -> Result<(), String> {
    let Some(bound) = memory_bound(margin) else {
        return Ok(());
    };
    if need <= bound.room {
        return Ok(());
    }
    Err(memory_refusal(&bound, need, needs, remedy))
}

/// The message of [`check_memory`] (and of [`check_acker_count`]) for `need` bytes over `bound`.
fn memory_refusal(bound: &MemoryBound, need: u64, needs: &str, remedy: &str) -> String {
    match &bound.limit {
        Some(l) if need <= l.mapped.saturating_add(l.margin) => {
            // In KiB, as `ulimit -v` / `-d` take it, rounded up to a whole MiB.
            let at_least = l
                .mapped
                .saturating_add(l.margin)
                .saturating_add(need)
                .div_ceil(1 << 20)
                .saturating_mul(1024);
            format!(
                "{needs}, but the limit of {} (`{}`) is too low for this process itself: it maps \
                 {} already and keeps {} in reserve for thread stacks and allocator arenas, which \
                 leaves {}: raise `{}` to at \
                 least {at_least} (KiB)",
                size(l.limit),
                l.ulimit,
                size(l.mapped),
                size(l.margin),
                size(bound.room),
                l.ulimit
            )
        }
        _ => format!("{needs}, more than {}: {remedy}", bound.what),
    }
}

/// The machine's physical memory in bytes (`MemTotal` of `/proc/meminfo`); `None` where it
/// cannot be read (the per-acker limits still apply).
pub fn physical_memory_bytes() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Rounds every measured float of a JSON summary to a fixed precision, so that it prints
/// without float noise (new-user trial: `plain_cpu_s: 0.049999999999999996`), keys and
/// integers unchanged: seconds (a key ending in `_s` or `_secs` that is not a rate `_per_`) to
/// the microsecond, six decimals; every other float (rates, ratios, latencies, megabytes) to 12
/// significant digits, which keeps relations between them (a median of two, a product of
/// ratios) within a relative 1e-11.
pub fn round_json_floats(v: &mut serde_json::Value) {
    round_floats_under(None, v);
}

fn round_floats_under(key: Option<&str>, v: &mut serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                round_floats_under(Some(k), x);
            }
        }
        // The items of a list are measured as their key says.
        Value::Array(items) => {
            for x in items {
                round_floats_under(key, x);
            }
        }
        Value::Number(n) if n.is_f64() => {
            let Some(x) = n.as_f64() else { return };
            let seconds = key.is_some_and(|k| {
                (k.ends_with("_s") || k.ends_with("_secs")) && !k.contains("_per_")
            });
            let text = if seconds {
                format!("{x:.6}")
            } else {
                format!("{x:.11e}")
            };
            if let Some(r) = text
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
            {
                *n = r;
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_floats_are_rounded_without_noise_and_keys_and_integers_stay() {
        let mut v = serde_json::json!({
            "plain_cpu_s": 0.049999999999999996,
            "elapsed_s": 1.23456789,
            "plain_secs": 2.0000004,
            "trees_per_cpu_s": 123456.78901234567,
            "ratio": {"min": 0.30000000000000004, "median": 1.0, "max": 2.5},
            "words": 17,
            "latency": [0.1 + 0.2, 3.0],
            "none": null,
        });
        round_json_floats(&mut v);
        assert_eq!(
            v.to_string(),
            r#"{"elapsed_s":1.234568,"latency":[0.3,3.0],"none":null,"plain_cpu_s":0.05,"plain_secs":2.0,"ratio":{"max":2.5,"median":1.0,"min":0.3},"trees_per_cpu_s":123456.789012,"words":17}"#
        );
    }

    /// A file read in 1 MiB chunks: characters cut by a chunk's end are whole in the text, and
    /// a bad byte past the first chunk is reported at its offset in the file.
    #[test]
    fn read_text_checks_utf8_across_chunks() {
        let dir = std::env::temp_dir();
        let path = dir.join(format!("acker-read-text-{}.txt", std::process::id()));
        // 'a' then 2-byte characters: every chunk boundary (an even offset) cuts one in two.
        let text: String = std::iter::once('a')
            .chain(std::iter::repeat_n('é', 700_000))
            .collect();
        std::fs::write(&path, &text).unwrap();
        assert_eq!(read_text(&path).as_deref(), Ok(text.as_str()));
        let mut bad = text.clone().into_bytes();
        bad[1_300_002] = 0xFF; // the second byte of the character at 1_300_001, second chunk
        std::fs::write(&path, &bad).unwrap();
        let name = path.display();
        assert_eq!(
            read_text(&path),
            Err(format!(
                "input {name} is not UTF-8: invalid byte at offset 1300001 (0-based)"
            ))
        );
        // Cut at the very end: the last character is incomplete.
        std::fs::write(&path, &text.as_bytes()[..text.len() - 1]).unwrap();
        assert_eq!(
            read_text(&path),
            Err(format!(
                "input {name} is not UTF-8: invalid byte at offset {} (0-based)",
                text.len() - 2
            ))
        );
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn whole_numbers_and_their_refusals() {
        assert_eq!(at_least::<1>(" 7 "), Ok(7));
        assert_eq!(at_least::<1>("0"), Err("must be at least 1".to_string()));
        assert_eq!(
            at_least::<1>("-3"),
            Err("must not be negative (at least 1)".to_string())
        );
        assert_eq!(at_least::<0>("-3"), Err("must not be negative".to_string()));
        assert_eq!(
            at_least::<1>("2.5"),
            Err("must be a whole number >= 1".to_string())
        );
        assert_eq!(
            at_least::<0>("x"),
            Err("must be a whole number".to_string())
        );
        assert_eq!(
            at_least::<0>("18446744073709551616"),
            Err("is too large (more than 2^64 - 1)".to_string())
        );
        assert_eq!(count_at_least::<0>("12"), Ok(12));
    }
}
