//! Measuring aid for the shared table's bucket choice (`acker-core/src/shared.rs`, "Probing,
//! overflow and the trade-off"): how often a root's window overflows under steady churn.
//!
//! ```text
//! cargo run --release -p acker-benches --example shared_overflow_churn -- \
//!     --slots 200000 --load 0.6 --steps 4000000
//! ```
//!
//! Fills a `SharedAckerTable` of `--slots` slots with `load × slots` live roots (random ids, each
//! an init with one outstanding edge), then `--steps` times completes a random live root (its
//! last ack) and inits a new random one in its place: the table stays at `--load`. Prints how
//! many of the new roots became overflow entries (`overflow_len()` grew), the most overflow
//! entries live at once, and the share of steps during which at least one was live (while one is,
//! every new root's lookup also scans past its window). Deterministic: a fixed xorshift seed,
//! one thread.

use acker_core::shared::{AtomicU32, AtomicU64, SharedAckerTable, SharedSlots};
use acker_core::Decision;
use clap::Parser;

/// Most slots accepted: 100 M (2 GB of slots plus the live-root list).
const MAX_SLOTS: u64 = 100_000_000;

/// Command-line arguments (see the module docs).
#[derive(Parser)]
struct Args {
    /// Slots in the table (65 to 100,000,000: a bucketed table, at most 2 GB).
    #[arg(long, default_value_t = 200_000, value_parser = clap::value_parser!(u64).range(65..=MAX_SLOTS))]
    slots: u64,
    /// Live roots ÷ slots, kept constant (0.05 to 0.95).
    #[arg(long, default_value_t = 0.5, value_parser = load_in_range)]
    load: f64,
    /// Replacements (one completion and one new root each), at least 1.
    #[arg(long, default_value_t = 4_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    steps: u64,
}

/// clap value parser for `--load`: a number within 0.05..=0.95.
fn load_in_range(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if (0.05..=0.95).contains(&x) => Ok(x),
        _ => Err("must be a number within 0.05..=0.95".to_string()),
    }
}

fn main() -> Result<(), String> {
    let args = Args::parse();
    let n = args.slots as usize;
    let slots = SharedSlots::new(
        (0..n).map(|_| AtomicU64::new(0)).collect::<Vec<_>>(),
        (0..n).map(|_| AtomicU64::new(0)).collect::<Vec<_>>(),
        (0..n).map(|_| AtomicU32::new(0)).collect::<Vec<_>>(),
    )
    .map_err(|e| e.to_string())?;
    // A timeout no tick reaches: nothing expires.
    let table = SharedAckerTable::new(slots, u64::MAX / 4).map_err(|e| e.to_string())?;
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    // xorshift64; root ids are made odd (never 0).
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let live_target = (n as f64 * args.load) as usize;
    let mut live = Vec::with_capacity(live_target);
    for _ in 0..live_target {
        let root = next() | 1;
        table.init(root, 1, 1).map_err(|e| e.to_string())?;
        live.push(root);
    }
    let (mut overflowed, mut most, mut steps_with_one) = (0u64, 0usize, 0u64);
    for _ in 0..args.steps {
        let k = (next() % live.len() as u64) as usize;
        let done = table.ack(live[k], 1).map_err(|e| e.to_string())?;
        if done != (Decision::Completed { spout_task: 1 }) {
            return Err(format!("root {:#x}: {done:?}, not Completed", live[k]));
        }
        let before = table.overflow_len();
        let root = next() | 1;
        table.init(root, 1, 1).map_err(|e| e.to_string())?;
        live[k] = root;
        let now = table.overflow_len();
        overflowed += u64::from(now > before);
        most = most.max(now);
        steps_with_one += u64::from(now > 0);
    }
    println!(
        "slots {n} load {} steps {}: {overflowed} new roots overflowed, at most {most} overflow \
         entries live at once, an overflow entry live during {:.1}% of the steps",
        args.load,
        args.steps,
        100.0 * steps_with_one as f64 / args.steps as f64
    );
    Ok(())
}
