//! criterion suite: one acker task's table (acker-core, its one-at-a-time path, hashbrown,
//! Storm-style) on the compare workload: W roots in flight (1k, 100k, 1M), init + 4 chained acks
//! per tree, seeded random order, op stream generated before timing.
//!
//! `cargo bench -p acker-benches --bench single_owner` (HTML report in
//! `$CARGO_TARGET_DIR/criterion/report/index.html`). Each iteration applies the next chunk of the
//! stream to a table in steady state; when the stream runs out, a fresh table is prefilled,
//! untimed.

use std::time::{Duration, Instant};

use acker_benches::compare::{capacity_for_window, OneAtATime, MESSAGE_TIMEOUT_NS};
use acker_benches::{AckerStructure, HashbrownAcker, StormStyle, Workload, WorkloadConfig};
use acker_core::{AckerTable, Decision, Slot};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

const CHUNK: usize = 50_000;

fn fresh<S: AckerStructure>(w: &Workload) -> S {
    let mut s = S::with_capacity(capacity_for_window(w.config.window), MESSAGE_TIMEOUT_NS);
    s.apply_all(&w.prefill, |_, r| assert!(r.is_ok()));
    s
}

fn bench_structure<S: AckerStructure>(
    c: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    w: &Workload,
) {
    let mut table: S = fresh(w);
    let mut cursor = 0;
    c.bench_with_input(BenchmarkId::new(S::NAME, w.config.window), w, |b, w| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                if cursor + CHUNK > w.ops.len() {
                    table = fresh(w);
                    cursor = 0;
                }
                let chunk = &w.ops[cursor..cursor + CHUNK];
                let mut completed = 0u64;
                let start = Instant::now();
                table.apply_all(chunk, |_, r| {
                    completed += u64::from(matches!(r, Ok(Decision::Completed { .. })))
                });
                total += start.elapsed();
                std::hint::black_box(completed);
                cursor += CHUNK;
            }
            total
        })
    });
}

fn single_owner(c: &mut Criterion) {
    for window in [1_000, 100_000, 1_000_000] {
        let w = Workload::generate(WorkloadConfig::new(window, 4_000_000.max(4 * window), 7));
        let mut group = c.benchmark_group("single_owner");
        group.throughput(Throughput::Elements(CHUNK as u64));
        group.sample_size(10);
        group.measurement_time(Duration::from_secs(3));
        bench_structure::<AckerTable<Box<[Slot]>>>(&mut group, &w);
        bench_structure::<OneAtATime>(&mut group, &w);
        bench_structure::<HashbrownAcker>(&mut group, &w);
        bench_structure::<StormStyle>(&mut group, &w);
        group.finish();
    }
}

criterion_group!(benches, single_owner);
criterion_main!(benches);
