//! The reliability experiment of the seed document (`seeds/003_*`, summarised in DESIGN.md under
//! "Delivery guarantees"): guarantee × fault × injected count on a stream of unique sequential
//! numbers, the relations it found, the table, the JSON rows and the SVG plot.
//!
//! Faults of a row are spread over the input by offset (`kind*count`: the i-th of k fires when
//! the spout first reads offset `i · tuples / (k + 1)`), so each fault strikes a running,
//! saturated topology and the recoveries do not overlap.

use crate::components::Sim;
use crate::engine::{Outcome, RunError};
use crate::fault::{FaultKind, FaultSpec};
use crate::scenario::{Guarantee, Scenario};
use crate::source::SourceModel;
use serde::Serialize;

/// The injected counts of the experiment.
pub const COUNTS: [u32; 4] = [0, 1, 2, 5];

/// One row of the experiment (the keys of `--json`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// The delivery guarantee.
    pub guarantee: String,
    /// The fault kind, or `none`.
    pub fault: String,
    /// Faults that fired.
    pub injected: u64,
    /// Input tuples.
    pub input: u64,
    /// Distinct numbers in the sink's result.
    pub distinct: u64,
    /// Numbers missing from the sink's result.
    pub lost: u64,
    /// Extra records in the sink's result.
    pub duplicates: u64,
    /// The max spout pending configured.
    pub max_spout_pending: u64,
    /// The run's trace hash, as 16 hex digits.
    pub trace_hash: String,
    /// Oracle violations of the run (empty when every oracle held).
    #[serde(skip)]
    pub violations: Vec<String>,
    /// Faults asked for.
    #[serde(skip)]
    pub requested: u64,
}

impl Row {
    /// Loss as a percentage of the input.
    pub fn loss_pct(&self) -> f64 {
        100.0 * self.lost as f64 / self.input.max(1) as f64
    }
}

/// The (guarantee, fault, count) cells of the experiment, in table order: for each guarantee,
/// `none` with 0 faults, then each fault kind of [`FaultKind::EXPERIMENT`] with each count of
/// [`COUNTS`].
pub fn cells() -> Vec<(Guarantee, Option<FaultKind>, u32)> {
    let mut v = Vec::new();
    for g in Guarantee::ALL {
        v.push((g, None, 0));
        for k in FaultKind::EXPERIMENT {
            for c in COUNTS {
                v.push((g, Some(k), c));
            }
        }
    }
    v
}

/// Runs one cell from `base` (its seed, sizes and timing).
///
/// # Errors
/// As [`Sim::run`].
pub fn run_cell(
    base: &Scenario,
    guarantee: Guarantee,
    fault: Option<FaultKind>,
    count: u32,
) -> Result<(Row, Outcome), RunError> {
    let mut sc = base.clone();
    sc.guarantee = guarantee;
    let specs: Vec<FaultSpec> = match fault {
        Some(kind) if count > 0 => vec![FaultSpec {
            kind,
            trigger: None,
            count,
            rate: None,
            target: None,
        }],
        _ => Vec::new(),
    };
    sc.set_fault_specs(&specs, 0).map_err(RunError::Scenario)?;
    let o = Sim::run(sc, None)?;
    let row = Row {
        guarantee: guarantee.to_string(),
        fault: fault.map_or("none".to_string(), |k| k.to_string()),
        injected: o.fired.len() as u64,
        input: o.input,
        distinct: o.distinct,
        lost: o.lost,
        duplicates: o.duplicates,
        max_spout_pending: base.max_spout_pending as u64,
        trace_hash: format!("{:016x}", o.trace_hash),
        violations: o.violations.iter().map(|v| v.to_string()).collect(),
        requested: if fault.is_some() { count as u64 } else { 0 },
    };
    Ok((row, o))
}

/// The fewest input tuples per unit of max spout pending the experiment runs with: the i-th of
/// k faults fires at offset `i · tuples / (k + 1)` (k up to the largest of [`COUNTS`], 5), and the
/// crash relations ("duplicates = max spout pending × crashes") hold only when the spout can fill
/// max spout pending between two faults, so that each fault strikes a saturated topology.
pub const TUPLES_PER_PENDING: u64 = COUNTS[COUNTS.len() - 1] as u64 + 1;

/// Refuses a `base` whose input is too small for its max spout pending (see
/// [`TUPLES_PER_PENDING`]): below it the crash relations would report a violation for a correct
/// simulator (new-user trial: `experiment --tuples 2000` at max spout pending 1000 printed
/// `[FAILS] at-least-once: acker crash → …`). The error names both values and what to change.
pub fn check_saturating(base: &Scenario) -> Result<(), String> {
    let need = TUPLES_PER_PENDING.saturating_mul(base.max_spout_pending as u64);
    if base.tuples < need {
        return Err(format!(
            "--tuples {} is too few for max spout pending {}: the experiment spreads up to {} \
             faults over the input and its crash relations need the spout saturated at each, so \
             --tuples must be at least {} × --max-spout-pending = {} (raise --tuples or lower \
             --max-spout-pending)",
            base.tuples,
            base.max_spout_pending,
            TUPLES_PER_PENDING - 1,
            TUPLES_PER_PENDING,
            need
        ));
    }
    Ok(())
}

/// The restart delay the experiment runs with unless `--restart-delay` is given: 1 ms, a task
/// restarted in place (the real experiment predicts the runtime's task restarts with the same
/// value). The simulator's own default (1 s, a restarted worker process) is longer than the
/// whole run at the experiment's sizes (about 0.2 s of simulated time at 100,000 tuples
/// at-most-once, 12 ms at the smallest input it takes): a crashed bolt never came back, and the
/// at-most-once bolt-crash cell lost everything after the crash (88 % of the input for one
/// crash, new-user trial), so its relation held only trivially. Now it loses the backlog queued
/// at the bolt and what reaches it while down (39 % for one crash at the defaults). Not
/// shorter: an acker must stay down longer than the messages in flight to it take to arrive
/// (the default latency is up to 150 µs) for the acker-crash relation to hold exactly.
pub const RESTART_DELAY_NS: u64 = 1_000_000;

/// Runs every cell, calling `progress` after each.
///
/// # Errors
/// The first [`RunError`].
pub fn run(base: &Scenario, mut progress: impl FnMut(&Row)) -> Result<Vec<Row>, RunError> {
    let mut rows = Vec::new();
    for (g, k, c) in cells() {
        let (row, _) = run_cell(base, g, k, c)?;
        progress(&row);
        rows.push(row);
    }
    Ok(rows)
}

/// One relation of the seed experiment, checked on the rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Relation {
    /// The relation, in words.
    pub text: String,
    /// Whether every row it covers satisfies it.
    pub holds: bool,
    /// What was measured.
    pub detail: String,
}

fn rows_of<'a>(rows: &'a [Row], g: Guarantee, fault: &'a str) -> impl Iterator<Item = &'a Row> {
    rows.iter()
        .filter(move |r| r.guarantee == g.name() && r.fault == fault)
}

/// Checks the relations the seed experiment found (DESIGN.md, "Delivery guarantees") on `rows`
/// of the Kafka source model (the seed's source): [`relations_for`] with [`SourceModel::Kafka`].
pub fn relations(rows: &[Row]) -> Vec<Relation> {
    relations_for(rows, SourceModel::Kafka)
}

/// The spout-crash relation's words for `model`.
pub fn spout_crash_relation(model: SourceModel) -> &'static str {
    match model {
        SourceModel::Kafka => {
            "at-least-once: spout crash → duplicates ≈ max spout pending × crashes (within 25%; \
             kafka: a restarted spout replays everything after the committed offset)"
        }
        SourceModel::Redis => {
            "at-least-once: spout crash → 0 < duplicates ≤ max spout pending × crashes (redis: \
             only the crashed spout's pending entries whose effect reached the sink)"
        }
    }
}

/// Checks the relations the seed experiment found (DESIGN.md, "Delivery guarantees") on `rows`
/// run with the source `model`: the same relations for both models except the spout crash's
/// (see [`spout_crash_relation`]). Relations about faults absent from `rows` hold vacuously.
pub fn relations_for(rows: &[Row], model: SourceModel) -> Vec<Relation> {
    use Guarantee::*;
    let mut v = Vec::new();
    let mut rel = |text: &str, holds: bool, detail: String| {
        v.push(Relation {
            text: text.to_string(),
            holds,
            detail,
        })
    };
    let all_ok = rows.iter().all(|r| r.violations.is_empty());
    let bad: Vec<String> = rows
        .iter()
        .filter(|r| !r.violations.is_empty())
        .map(|r| {
            format!(
                "{}/{}/{}: {}",
                r.guarantee,
                r.fault,
                r.injected,
                r.violations.join("; ")
            )
        })
        .collect();
    rel(
        "every oracle held in every run",
        all_ok,
        if all_ok {
            format!("{} runs", rows.len())
        } else {
            bad.join(" | ")
        },
    );
    let fired_ok = rows.iter().all(|r| r.injected == r.requested);
    rel(
        "every requested fault fired",
        fired_ok,
        format!("{} faults", rows.iter().map(|r| r.injected).sum::<u64>()),
    );
    let amo: Vec<&Row> = rows
        .iter()
        .filter(|r| r.guarantee == AtMostOnce.name())
        .collect();
    let none = rows_of(rows, AtMostOnce, "none").all(|r| r.lost == 0 && r.duplicates == 0);
    rel(
        "at-most-once, no fault: nothing lost, nothing duplicated",
        none,
        String::new(),
    );
    rel(
        "at-most-once never duplicates",
        amo.iter().all(|r| r.duplicates == 0),
        format!(
            "max duplicates {}",
            amo.iter().map(|r| r.duplicates).max().unwrap_or(0)
        ),
    );
    let before: Vec<&Row> = rows_of(rows, AtMostOnce, "bolt-exception-before-emit").collect();
    rel(
        "at-most-once: each bolt exception before emit loses its tuple (lost = exceptions)",
        before.iter().all(|r| r.lost == r.injected),
        before
            .iter()
            .map(|r| format!("{}→{}", r.injected, r.lost))
            .collect::<Vec<_>>()
            .join(" "),
    );
    let crash: Vec<&Row> = rows_of(rows, AtMostOnce, "bolt-crash").collect();
    rel(
        "at-most-once: a bolt crash loses the tuples queued at and sent to the bolt while it is down",
        crash.iter().all(|r| (r.injected == 0) == (r.lost == 0)),
        crash
            .iter()
            .map(|r| format!("{}→{}", r.injected, r.lost))
            .collect::<Vec<_>>()
            .join(" "),
    );
    let alo: Vec<&Row> = rows
        .iter()
        .filter(|r| r.guarantee == AtLeastOnce.name())
        .collect();
    rel(
        "at-least-once never loses",
        alo.iter().all(|r| r.lost == 0),
        format!("max lost {}", alo.iter().map(|r| r.lost).max().unwrap_or(0)),
    );
    let acker: Vec<&Row> = rows_of(rows, AtLeastOnce, "acker-crash").collect();
    rel(
        "at-least-once: acker crash → duplicates = max spout pending × crashes",
        acker
            .iter()
            .all(|r| r.duplicates == r.max_spout_pending * r.injected),
        acker
            .iter()
            .map(|r| format!("{}×{}→{}", r.max_spout_pending, r.injected, r.duplicates))
            .collect::<Vec<_>>()
            .join(" "),
    );
    let spout: Vec<&Row> = rows_of(rows, AtLeastOnce, "spout-crash").collect();
    let about = |r: &&Row| {
        let want = (r.max_spout_pending * r.injected) as f64;
        let got = r.duplicates as f64;
        match model {
            _ if want == 0.0 => got == 0.0,
            SourceModel::Kafka => (got / want - 1.0).abs() <= 0.25,
            SourceModel::Redis => got > 0.0 && got <= want,
        }
    };
    rel(
        spout_crash_relation(model),
        spout.iter().all(about),
        spout
            .iter()
            .map(|r| format!("{}×{}→{}", r.max_spout_pending, r.injected, r.duplicates))
            .collect::<Vec<_>>()
            .join(" "),
    );
    let be: Vec<&Row> = rows_of(rows, AtLeastOnce, "bolt-exception-before-emit").collect();
    rel(
        "at-least-once: bolt exception before emit → 0 duplicates",
        be.iter().all(|r| r.duplicates == 0),
        be.iter()
            .map(|r| format!("{}→{}", r.injected, r.duplicates))
            .collect::<Vec<_>>()
            .join(" "),
    );
    let ae: Vec<&Row> = rows_of(rows, AtLeastOnce, "bolt-exception-after-emit").collect();
    rel(
        "at-least-once: bolt exception after emit → one duplicate per exception",
        ae.iter().all(|r| r.duplicates == r.injected),
        ae.iter()
            .map(|r| format!("{}→{}", r.injected, r.duplicates))
            .collect::<Vec<_>>()
            .join(" "),
    );
    let ml: Vec<&Row> = rows_of(rows, AtLeastOnce, "message-loss").collect();
    rel(
        "at-least-once: a lost message duplicates at most one tuple (a lost ack, init or notice; a lost data tuple is replayed without a duplicate)",
        ml.iter().all(|r| r.duplicates <= r.injected),
        ml.iter()
            .map(|r| format!("{}→{}", r.injected, r.duplicates))
            .collect::<Vec<_>>()
            .join(" "),
    );
    let eo: Vec<&Row> = rows
        .iter()
        .filter(|r| r.guarantee == ExactlyOnce.name())
        .collect();
    rel(
        "exactly-once: 0 lost and 0 duplicates under every fault",
        eo.iter().all(|r| r.lost == 0 && r.duplicates == 0),
        format!(
            "max lost {}, max duplicates {}",
            eo.iter().map(|r| r.lost).max().unwrap_or(0),
            eo.iter().map(|r| r.duplicates).max().unwrap_or(0)
        ),
    );
    v
}

/// Writes `relations` one a line: `[holds]` or `[FAILS]`, the relation, and what was measured
/// in parentheses (the text output of `experiment` and `experiment --real`).
///
/// # Errors
/// The writer's.
pub fn write_relations(
    out: &mut impl std::io::Write,
    relations: &[Relation],
) -> std::io::Result<()> {
    for r in relations {
        writeln!(
            out,
            "  [{}] {}{}",
            if r.holds { "holds" } else { "FAILS" },
            r.text,
            if r.detail.is_empty() {
                String::new()
            } else {
                format!("  ({})", r.detail)
            }
        )?;
    }
    Ok(())
}

/// The exit status of the experiment commands: success when every relation holds; otherwise 1,
/// after naming the relations that fail on stderr (so `--json` runs say which).
pub fn exit_status(relations: &[Relation]) -> std::process::ExitCode {
    let failed: Vec<&str> = relations
        .iter()
        .filter(|r| !r.holds)
        .map(|r| r.text.as_str())
        .collect();
    if failed.is_empty() {
        std::process::ExitCode::SUCCESS
    } else {
        acker_runtime::stderr_line!(
            "acker-sim: relations that do not hold: {}",
            failed.join("; ")
        );
        std::process::ExitCode::from(1)
    }
}

/// The table's column headers.
const TABLE_HEADER: [&str; 8] = [
    "guarantee",
    "fault",
    "faults",
    "in sink",
    "lost",
    "loss %",
    "dup",
    "trace hash",
];

/// One row's cells, in [`TABLE_HEADER`] order.
fn table_cells(r: &Row) -> [String; 8] {
    [
        r.guarantee.clone(),
        r.fault.clone(),
        r.injected.to_string(),
        r.distinct.to_string(),
        r.lost.to_string(),
        format!("{:.3}", r.loss_pct()),
        r.duplicates.to_string(),
        r.trace_hash.clone(),
    ]
}

/// The column widths of the experiment's table, so that its rows can be printed one by one as
/// their runs finish ([`for_input`](Self::for_input)) or all at once ([`format_table`]). At most
/// 100 columns for inputs below a million tuples (the input size and max spout pending, the same
/// in every row, go in the title instead, and in the JSON rows).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableLayout {
    widths: [usize; 8],
}

impl TableLayout {
    /// Widths fitting the rows of an experiment on `tuples` input tuples at `max_spout_pending`,
    /// known before any row runs: the guarantee and fault names, up to [`COUNTS`]' largest
    /// faults, tuples in the sink and lost up to `tuples`, duplicates up to twice max spout
    /// pending per fault (a crash duplicates about max spout pending; a wider count shifts its
    /// row).
    pub fn for_input(tuples: u64, max_spout_pending: u64) -> Self {
        let mut widths = TABLE_HEADER.map(|h| h.chars().count());
        let names = |w: &mut usize, n: &str| *w = (*w).max(n.chars().count());
        for g in Guarantee::ALL {
            names(&mut widths[0], g.name());
        }
        names(&mut widths[1], "none");
        for k in FaultKind::EXPERIMENT {
            names(&mut widths[1], k.name());
        }
        let digits = |n: u64| n.to_string().len();
        widths[2] = widths[2].max(digits(COUNTS[COUNTS.len() - 1] as u64));
        for i in [3, 4] {
            widths[i] = widths[i].max(digits(tuples));
        }
        let most_faults = COUNTS[COUNTS.len() - 1] as u64;
        widths[6] = widths[6].max(digits(max_spout_pending.saturating_mul(2 * most_faults)));
        widths[5] = widths[5].max("100.000".len());
        widths[7] = widths[7].max(16);
        TableLayout { widths }
    }

    /// Widths fitting `rows` exactly.
    pub fn for_rows(rows: &[Row]) -> Self {
        let mut widths = TABLE_HEADER.map(|h| h.chars().count());
        for r in rows {
            for (i, s) in table_cells(r).iter().enumerate() {
                widths[i] = widths[i].max(s.chars().count());
            }
        }
        TableLayout { widths }
    }

    fn line(&self, items: &[&str]) -> String {
        let parts: Vec<String> = items
            .iter()
            .enumerate()
            .map(|(i, s)| {
                if i < 2 {
                    format!("{:<w$}", s, w = self.widths[i])
                } else {
                    format!("{:>w$}", s, w = self.widths[i])
                }
            })
            .collect();
        let mut out = parts.join("  ").trim_end().to_string();
        out.push('\n');
        out
    }

    /// The header line and the rule under it, each ending in a newline.
    pub fn header(&self) -> String {
        let mut out = self.line(&TABLE_HEADER);
        let total: usize = self.widths.iter().sum::<usize>() + 2 * (self.widths.len() - 1);
        out.push_str(&"-".repeat(total));
        out.push('\n');
        out
    }

    /// One row's line, ending in a newline.
    pub fn row(&self, r: &Row) -> String {
        let cells = table_cells(r);
        self.line(&cells.iter().map(String::as_str).collect::<Vec<_>>())
    }
}

/// The table as aligned text, its widths fitting `rows` ([`TableLayout::for_rows`]): at most 100
/// columns for inputs below a million tuples.
pub fn format_table(rows: &[Row]) -> String {
    let layout = TableLayout::for_rows(rows);
    let mut out = layout.header();
    for r in rows {
        out.push_str(&layout.row(r));
    }
    out
}

/// The start of `--json`'s `{"rows": [...]}` when its rows are written one by one as their runs
/// finish: [`json_rows_start`], [`json_row`] for each row, [`json_rows_end`] give the same text
/// as `serde_json::to_string_pretty` of the whole object followed by a newline.
pub fn json_rows_start() -> &'static str {
    "{\n  \"rows\": ["
}

/// One row of `--json`'s streamed `{"rows": [...]}` (`first`: the first row, without a comma
/// before it); see [`json_rows_start`].
///
/// # Errors
/// serde_json's, which a [`Row`] does not cause.
pub fn json_row(r: &Row, first: bool) -> Result<String, serde_json::Error> {
    // Through a `Value`, as `serde_json::json!` puts the rows: its keys sorted.
    let pretty = serde_json::to_string_pretty(&serde_json::to_value(r)?)?;
    let mut out = String::from(if first { "\n" } else { ",\n" });
    let indented: Vec<String> = pretty.lines().map(|l| format!("    {l}")).collect();
    out.push_str(&indented.join("\n"));
    Ok(out)
}

/// The end of `--json`'s streamed `{"rows": [...]}` (`empty`: no row was written) without
/// relations; see [`json_rows_start`] and [`json_end`].
pub fn json_rows_end(empty: bool) -> &'static str {
    if empty {
        "]\n}\n"
    } else {
        "\n  ]\n}\n"
    }
}

/// `relations` as `--json`'s `relations`: a list of `{name, holds, detail}` (the relation in
/// words, whether it holds, what was measured), as the text output's `[holds]` / `[FAILS]`
/// lines say them (new-user trial: the JSON held only the rows).
pub fn relations_json(relations: &[Relation]) -> serde_json::Value {
    serde_json::Value::Array(
        relations
            .iter()
            .map(|r| serde_json::json!({"name": r.text, "holds": r.holds, "detail": r.detail}))
            .collect(),
    )
}

/// The end of `--json`'s streamed object (`empty`: no row was written): the rows' list closed,
/// then `"relations": [...]` ([`relations_json`]); see [`json_rows_start`].
///
/// # Errors
/// serde_json's, which a [`Relation`] does not cause.
pub fn json_end(empty: bool, relations: &[Relation]) -> Result<String, serde_json::Error> {
    let pretty = serde_json::to_string_pretty(&relations_json(relations))?;
    let indented: Vec<String> = pretty.lines().map(|l| format!("  {l}")).collect();
    Ok(format!(
        "{}],\n  \"relations\": {}\n}}\n",
        if empty { "" } else { "\n  " },
        indented.join("\n").trim_start()
    ))
}

/// Whether `path` names something other than a regular file (a device such as `/dev/full`, a
/// FIFO, a directory): written in place, never through a temporary file renamed over it.
fn special_file(path: &std::path::Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file())
}

/// The temporary file beside `path` that [`save_plot`] writes before renaming it to `path`.
fn temp_beside(path: &std::path::Path) -> std::path::PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "plot".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.{}.tmp", std::process::id()))
}

/// Refuses a `--plot` path that cannot be written, before any run, leaving nothing behind: a
/// regular file (or none yet) is checked by creating and removing the temporary file beside it
/// (the file itself is not touched: a run that fails keeps an older plot and makes no empty
/// one); a device or FIFO by opening it for writing.
///
/// # Errors
/// `cannot write --plot PATH: REASON`.
pub fn check_plot_writable(path: &std::path::Path) -> Result<(), String> {
    let bad = |e: std::io::Error| format!("cannot write --plot {}: {e}", path.display());
    if special_file(path) {
        std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(bad)?;
        return Ok(());
    }
    let tmp = temp_beside(path);
    std::fs::File::create(&tmp).map_err(bad)?;
    let _ = std::fs::remove_file(&tmp);
    Ok(())
}

/// Writes a drawn plot to `path` whole or not at all: into the temporary file beside it, then
/// renamed over it, the temporary file removed on any error (new-user trial: a failed run left
/// a 0-byte plot); a device or FIFO is written in place.
///
/// # Errors
/// `cannot write --plot PATH: REASON`, once (plotters' own file backend said "backend error:
/// Drawing backend error: ..." twice over).
pub fn save_plot(path: &std::path::Path, svg: &str) -> Result<(), String> {
    let bad = |e: std::io::Error| format!("cannot write --plot {}: {e}", path.display());
    if special_file(path) {
        return std::fs::write(path, svg).map_err(bad);
    }
    let tmp = temp_beside(path);
    let written = std::fs::write(&tmp, svg).and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(bad(e));
    }
    Ok(())
}

/// Draws lost and duplicated tuples against injected faults, one panel per guarantee and
/// measure, one line per fault kind, on a log scale of value + 1, into an SVG file (plotters'
/// SVG backend; no font library), written whole by [`save_plot`].
///
/// # Errors
/// The message for stderr, naming the file, if it cannot be drawn or written.
pub fn plot_svg(rows: &[Row], path: &std::path::Path) -> Result<(), String> {
    let mut svg = String::new();
    draw_plot(rows, &mut svg).map_err(|e| format!("cannot draw --plot {}: {e}", path.display()))?;
    save_plot(path, &svg)
}

fn draw_plot(rows: &[Row], svg: &mut String) -> Result<(), String> {
    use plotters::prelude::*;
    let root = SVGBackend::with_string(svg, (1500, 800)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let panels = root.split_evenly((2, 3));
    let colors = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
    ];
    for (pi, panel) in panels.iter().enumerate() {
        let g = Guarantee::ALL[pi % 3];
        let dup = pi >= 3;
        let measure = |r: &Row| if dup { r.duplicates } else { r.lost };
        let series: Vec<(FaultKind, Vec<(u32, u64)>)> = FaultKind::EXPERIMENT
            .iter()
            .map(|&k| {
                let pts = rows
                    .iter()
                    .filter(|r| r.guarantee == g.name() && r.fault == k.name())
                    .map(|r| (r.injected as u32, measure(r)))
                    .collect();
                (k, pts)
            })
            .collect();
        let ymax = series
            .iter()
            .flat_map(|(_, p)| p.iter().map(|&(_, y)| y))
            .max()
            .unwrap_or(0);
        let title = format!(
            "{} — {}",
            g.name(),
            if dup { "duplicates" } else { "lost tuples" }
        );
        // Log scale of value + 1, so that 0, 1 and 100 000 all show; the headroom above the data
        // (a factor 300) keeps the legend clear of the lines.
        let top = (ymax as f64 + 1.0) * 300.0;
        let mut chart = ChartBuilder::on(panel)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(30)
            .y_label_area_size(60)
            .build_cartesian_2d(0u32..5u32, (1f64..top).log_scale())
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc("injected faults")
            .y_desc(if dup { "duplicates + 1" } else { "lost + 1" })
            .x_labels(6)
            .y_label_formatter(&|v| format!("{v:.0}"))
            .draw()
            .map_err(|e| e.to_string())?;
        let series: Vec<(FaultKind, Vec<(u32, f64)>)> = series
            .into_iter()
            .map(|(k, p)| (k, p.into_iter().map(|(x, y)| (x, y as f64 + 1.0)).collect()))
            .collect();
        for (i, (k, pts)) in series.into_iter().enumerate() {
            let color = colors[i % colors.len()];
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                .map_err(|e| e.to_string())?
                .label(k.name())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
                });
            chart
                .draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled())))
                .map_err(|e| e.to_string())?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .label_font(("sans-serif", 11))
            .draw()
            .map_err(|e| e.to_string())?;
    }
    root.present().map_err(|e| e.to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(lost: u64, dup: u64) -> Row {
        Row {
            guarantee: "at-least-once".into(),
            fault: "bolt-exception-after-emit".into(),
            injected: 5,
            input: 100_000,
            distinct: 100_000 - lost,
            lost,
            duplicates: dup,
            max_spout_pending: 1000,
            trace_hash: format!("{:016x}", 0xabcdef_u64),
            violations: Vec::new(),
            requested: 5,
        }
    }

    #[test]
    fn streamed_json_is_the_pretty_object() {
        for rows in [
            vec![],
            vec![row(0, 3)],
            vec![row(0, 3), row(12, 0), row(1, 1)],
        ] {
            let mut s = json_rows_start().to_string();
            for (i, r) in rows.iter().enumerate() {
                s.push_str(&json_row(r, i == 0).unwrap());
            }
            s.push_str(json_rows_end(rows.is_empty()));
            let whole =
                serde_json::to_string_pretty(&serde_json::json!({ "rows": rows })).unwrap() + "\n";
            assert_eq!(s, whole);
            // With the relations: the object `{rows, relations}`, rows first.
            let relations = relations(&rows);
            let mut s = json_rows_start().to_string();
            for (i, r) in rows.iter().enumerate() {
                s.push_str(&json_row(r, i == 0).unwrap());
            }
            s.push_str(&json_end(rows.is_empty(), &relations).unwrap());
            let v: serde_json::Value = serde_json::from_str(&s).unwrap();
            assert_eq!(
                v,
                serde_json::json!({ "rows": rows, "relations": relations_json(&relations) })
            );
            assert!(s.ends_with("]\n}\n"), "{s}");
        }
    }

    #[test]
    fn rows_up_to_the_input_size_fit_the_streamed_table() {
        let layout = TableLayout::for_input(999_999, 1000);
        let header = layout.header();
        let rule = header.lines().nth(1).unwrap_or("").len();
        assert!(rule <= 100, "{header}");
        for r in [row(99_999, 0), row(0, 9_999), row(0, 0)] {
            let line = layout.row(&r);
            assert!(line.trim_end().len() <= rule, "{header}{line}");
        }
        let mut long = row(0, 0);
        long.guarantee = "exactly-once".into();
        long.fault = "bolt-exception-before-emit".into();
        assert_eq!(layout.row(&long).trim_end().len(), rule, "{header}");
    }
}
