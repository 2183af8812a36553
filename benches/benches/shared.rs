//! criterion suite: acker-core's shared table and its peers (Mutex<hashbrown>, dashmap) at
//! 1 and 2 threads on the compare workload (each thread drives its own W/threads trees).
//!
//! `cargo bench -p acker-benches --bench shared`. Each iteration has every thread apply its next
//! chunk (threads released together by a barrier; the time runs to the last thread's end).

use std::sync::Barrier;
use std::time::{Duration, Instant};

use acker_benches::compare::{shared_capacity_for_window, MESSAGE_TIMEOUT_NS};
use acker_benches::{
    CoreShared, DashMapAcker, MutexHashbrown, SharedAckerStructure, Workload, WorkloadConfig,
};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

const CHUNK_PER_THREAD: usize = 50_000;

fn fresh<S: SharedAckerStructure>(ws: &[Workload]) -> S {
    let window: usize = ws.iter().map(|w| w.config.window).sum();
    let s = S::with_capacity(shared_capacity_for_window(window), MESSAGE_TIMEOUT_NS);
    for w in ws {
        for m in &w.prefill {
            assert!(s.apply(*m).is_ok());
        }
    }
    s
}

/// Every thread applies `ws[t].ops[cursor..cursor + CHUNK_PER_THREAD]`; returns the time from
/// the release to the last thread's end.
fn run_chunk<S: SharedAckerStructure>(table: &S, ws: &[Workload], cursor: usize) -> Duration {
    let barrier = Barrier::new(ws.len());
    let spans: Vec<(Instant, Instant)> = std::thread::scope(|scope| {
        let hs: Vec<_> = ws
            .iter()
            .map(|w| {
                let barrier = &barrier;
                scope.spawn(move || {
                    barrier.wait();
                    let start = Instant::now();
                    let mut errors = 0u64;
                    for m in &w.ops[cursor..cursor + CHUNK_PER_THREAD] {
                        errors += u64::from(table.apply(*m).is_err());
                    }
                    std::hint::black_box(errors);
                    (start, Instant::now())
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let start = spans.iter().map(|s| s.0).min().unwrap();
    let end = spans.iter().map(|s| s.1).max().unwrap();
    end - start
}

fn bench_structure<S: SharedAckerStructure>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    ws: &[Workload],
    window: usize,
) {
    let mut table: S = fresh(ws);
    let mut cursor = 0;
    let id = format!("{}/{}t", S::NAME, ws.len());
    group.bench_function(BenchmarkId::new(id, window), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                if cursor + CHUNK_PER_THREAD > ws[0].ops.len() {
                    table = fresh(ws);
                    cursor = 0;
                }
                total += run_chunk(&table, ws, cursor);
                cursor += CHUNK_PER_THREAD;
            }
            total
        })
    });
}

fn shared(c: &mut Criterion) {
    for window in [1_000, 100_000, 1_000_000] {
        let mut group = c.benchmark_group("shared");
        group.sample_size(10);
        group.measurement_time(Duration::from_secs(3));
        for threads in [1, 2] {
            let ws = Workload::generate_per_thread(
                WorkloadConfig::new(window, threads * 2_000_000.max(4 * window), 7),
                threads,
            );
            group.throughput(Throughput::Elements((threads * CHUNK_PER_THREAD) as u64));
            bench_structure::<CoreShared>(&mut group, &ws, window);
            bench_structure::<MutexHashbrown>(&mut group, &ws, window);
            bench_structure::<DashMapAcker>(&mut group, &ws, window);
        }
        group.finish();
    }
}

criterion_group!(benches, shared);
criterion_main!(benches);
