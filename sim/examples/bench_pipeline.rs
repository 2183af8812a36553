//! The built-in experiment's workload written as a user topology: a spout emitting `0..N` with
//! message ids (acked ids counted outside the process), a pass-through bolt and a sink bolt,
//! 1 acker, max spout pending 1000, T = 30 s, the experiment's timing and placement (one worker
//! per component). Compare with `acker-sim run --seed 1 --tuples N` (same message count per
//! tuple: 6) for the cost per simulated message of a user topology; see `benches/RESULTS.md`.
//!
//! `cargo run -p acker-sim --release --example bench_pipeline [N]` (default 200000).

use acker_runtime::{
    values, BasicBolt, BasicOutputCollector, Config, FailedException, Input, MessageId, Spout,
    SpoutOutputCollector, TopologyBuilder,
};
use acker_sim::{SimOptions, Simulation};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

struct Numbers {
    n: u64,
    next: u64,
    replay: Vec<u64>,
    acked: Arc<AtomicU64>,
}

impl Spout for Numbers {
    fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
        let id = match self.replay.pop() {
            Some(id) => id,
            None if self.next < self.n => {
                self.next += 1;
                self.next - 1
            }
            None => return,
        };
        if c.emit(values![id as i64], Some(id)).is_err() {
            self.replay.push(id);
        }
    }
    fn ack(&mut self, _id: MessageId) {
        self.acked.fetch_add(1, Ordering::Relaxed);
    }
    fn fail(&mut self, id: MessageId) {
        self.replay.push(id);
    }
    fn is_done(&self) -> bool {
        self.acked.load(Ordering::Relaxed) >= self.n
    }
}

struct Pass;

impl BasicBolt for Pass {
    fn execute(
        &mut self,
        input: &Input,
        c: &mut BasicOutputCollector<'_, '_>,
    ) -> Result<(), FailedException> {
        let v = input.values()[0].as_int().unwrap_or(-1);
        c.emit(values![v])
            .map_err(|e| FailedException::new(e.to_string()))?;
        Ok(())
    }
}

struct Sink(Arc<AtomicU64>);

impl BasicBolt for Sink {
    fn execute(
        &mut self,
        _input: &Input,
        _c: &mut BasicOutputCollector<'_, '_>,
    ) -> Result<(), FailedException> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: u64 = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(200_000);
    let (acked, written) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let mut b = TopologyBuilder::new();
    let a = acked.clone();
    b.set_spout(
        "source",
        move || Numbers {
            n,
            next: 0,
            replay: Vec::new(),
            acked: a.clone(),
        },
        1,
    )
    .output_fields(&["n"]);
    b.set_basic_bolt("process", || Pass, 1)
        .shuffle_grouping("source")
        .output_fields(&["n"]);
    let w = written.clone();
    b.set_basic_bolt("sink", move || Sink(w.clone()), 1)
        .global_grouping("process")
        .output_fields(&["n"]);
    let topology = b.build()?;
    let config = Config {
        max_spout_pending: Some(1000),
        ..Config::default()
    };
    let mut opts = SimOptions::new(1);
    opts.input_len = n;
    let o = Simulation::new(&topology, &config, opts).run()?;
    println!(
        "{} messages delivered, {} events, {} written, verdict {}",
        o.delivered,
        o.events,
        written.load(Ordering::Relaxed),
        if o.ok() { "ok" } else { "VIOLATION" }
    );
    Ok(())
}
