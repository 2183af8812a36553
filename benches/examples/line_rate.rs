//! Measuring aid for issue 15's table goals at large windows: how many random 80-byte buckets a
//! second one core can read from a region of a given size, with software prefetch a fixed number
//! of reads ahead (as `AckerTable::apply_batch` does) and without. This is the ceiling of any
//! table whose operation reads one or two random buckets of four 20-byte slots, whatever its code.
//!
//! ```text
//! cargo run --release -p acker-benches --example line_rate -- --mb 25 --reads 20000000
//! ```
//!
//! For each prefetch distance (0 = none, then 4, 8, 16, 32 reads ahead) and each read shape (one
//! bucket; two independent buckets, as an ack or init of `AckerTable` reads), it reads
//! `--reads` pregenerated random bucket positions of a `--mb` MB region (an `AckerTable` at
//! W = 1M holds 25 MB of slots; hashbrown-lean about 50 MB), XORs one word of each bucket's first
//! and last 8 bytes into a sum that is printed (so nothing is optimised away), and prints reads a
//! second, the median of `--reps` repetitions. Deterministic positions (a fixed xoshiro seed);
//! times are wall clock, so run it on an idle machine.

use clap::Parser;
use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::time::Instant;

/// Bytes of a bucket: four 20-byte slots.
const BUCKET_BYTES: usize = 80;

/// Command-line arguments (see the module docs).
#[derive(Parser)]
struct Args {
    /// Size of the region, MB (1 to 4096).
    #[arg(long, default_value_t = 25, value_parser = clap::value_parser!(u64).range(1..=4096))]
    mb: u64,
    /// Reads per measurement (1,000 to 1,000,000,000).
    #[arg(long, default_value_t = 20_000_000, value_parser = clap::value_parser!(u64).range(1_000..=1_000_000_000))]
    reads: u64,
    /// Repetitions per figure; the median is printed (1 to 99).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=99))]
    reps: u64,
}

/// Prefetches the two cache lines an 80-byte bucket at `offset` spans (a hint: never faults).
#[inline(always)]
fn prefetch_bucket(region: &[u64], offset: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let base = region.as_ptr().cast::<i8>();
        // SAFETY: `_mm_prefetch` is a cache hint only: it never faults, reads nothing into the
        // program and writes no memory, whatever the address; `wrapping_add` makes no reference.
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(base.wrapping_add(offset));
            _mm_prefetch::<_MM_HINT_T0>(base.wrapping_add(offset + BUCKET_BYTES - 1));
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (region, offset);
    }
}

/// Reads the first and last word of the bucket at byte `offset`.
#[inline(always)]
fn read_bucket(region: &[u64], offset: usize) -> u64 {
    region[offset / 8] ^ region[(offset + BUCKET_BYTES) / 8 - 1]
}

/// Reads `positions` (byte offsets of buckets, `per_read` of them a read) with prefetch `ahead`
/// reads ahead (0: none); returns reads a second and the checksum.
fn run(region: &[u64], positions: &[usize], per_read: usize, ahead: usize) -> (f64, u64) {
    let reads = positions.len() / per_read;
    let start = Instant::now();
    let mut sum = 0u64;
    for r in 0..reads {
        if ahead > 0 {
            if let Some(next) = positions.get((r + ahead) * per_read..(r + ahead + 1) * per_read) {
                for &p in next {
                    prefetch_bucket(region, p);
                }
            }
        }
        for &p in &positions[r * per_read..(r + 1) * per_read] {
            sum ^= read_bucket(region, p);
        }
    }
    let secs = start.elapsed().as_secs_f64();
    (reads as f64 / secs, sum)
}

fn main() {
    let args = Args::parse();
    let bytes = (args.mb as usize) << 20;
    let buckets = bytes / BUCKET_BYTES;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(15);
    let region: Vec<u64> = (0..bytes / 8).map(|_| rng.next_u64()).collect();
    println!(
        "region {} MB ({} buckets of {} bytes), {} reads a figure, median of {}",
        args.mb, buckets, BUCKET_BYTES, args.reads, args.reps
    );
    println!(
        "{:>12} {:>8} {:>14} {:>14}",
        "shape", "ahead", "Mreads/s", "Mlines/s"
    );
    let mut checksum = 0u64;
    for (shape, per_read) in [("one bucket", 1usize), ("two buckets", 2)] {
        let positions: Vec<usize> = (0..args.reads as usize * per_read)
            .map(|_| (rng.next_u64() % buckets as u64) as usize * BUCKET_BYTES)
            .collect();
        for ahead in [0usize, 4, 8, 16, 32] {
            let mut rates = Vec::new();
            for _ in 0..args.reps {
                let (rate, sum) = run(&region, &positions, per_read, ahead);
                checksum ^= sum;
                rates.push(rate);
            }
            rates.sort_by(f64::total_cmp);
            let median = rates[rates.len() / 2];
            println!(
                "{:>12} {:>8} {:>14.1} {:>14.1}",
                shape,
                ahead,
                median / 1e6,
                median * 2.0 * per_read as f64 / 1e6
            );
        }
    }
    println!("checksum {checksum:016x}");
}
