//! A word count topology written with the runtime's public API, simulated under swarm faults.
//!
//! A reliable spout over a list of lines (message id = line number; it re-emits a line on fail
//! and keeps the set of acked lines outside the process, as a Kafka consumer keeps its offsets),
//! a split bolt, and a count bolt (fields grouping on the word) that writes into an idempotent
//! store keyed by (line, position). Every seed of 0..200 runs under its own swarm of faults; the
//! user invariant is the exact word counts at the end, and "never more than the exact count"
//! after every event.
//!
//! Run with `cargo run -p acker-sim --release --example simulate_wordcount [SEEDS]`. The
//! `wordcount` module below is also the topology of `sim/tests/user_topology.rs`.

#[allow(dead_code)]
pub mod wordcount {
    use acker_runtime::{
        values, BasicBolt, BasicOutputCollector, Bolt, Config, FailedException, Input, MessageId,
        OutputCollector, Spout, SpoutOutputCollector, Topology, TopologyBuilder, TopologyContext,
    };
    use acker_sim::{RunError, SimOptions, Simulation};
    use std::collections::{BTreeMap, BTreeSet, VecDeque};
    use std::sync::{Arc, Mutex};

    /// The lines every run counts.
    pub const LINES: [&str; 12] = [
        "the quick brown fox",
        "jumps over the lazy dog",
        "the dog sleeps",
        "a fox is quick",
        "over and over again",
        "the end of the line",
        "lazy days and quick nights",
        "brown is the colour of the fox",
        "again the dog",
        "quick quick quick",
        "one more line",
        "the last line of the input",
    ];

    /// The exact counts of `lines`.
    pub fn expected(lines: &[&str]) -> BTreeMap<String, u64> {
        let mut m = BTreeMap::new();
        for l in lines {
            for w in l.split_whitespace() {
                *m.entry(w.to_string()).or_insert(0) += 1;
            }
        }
        m
    }

    /// The outside world: the spout's durable acked set and the count store.
    #[derive(Default)]
    pub struct Store {
        /// Lines acked (the spout's committed state, survives a crash).
        pub acked: BTreeSet<u64>,
        /// (line, position) keys applied to the counts.
        pub applied: BTreeSet<(u64, u64)>,
        /// The counts.
        pub counts: BTreeMap<String, u64>,
    }

    fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        m.lock().unwrap_or_else(|e| e.into_inner())
    }

    struct LinesSpout {
        lines: Vec<&'static str>,
        store: Arc<Mutex<Store>>,
        todo: VecDeque<u64>,
    }

    impl Spout for LinesSpout {
        fn open(&mut self, _context: &TopologyContext) {
            let acked = &lock(&self.store).acked;
            self.todo = (0..self.lines.len() as u64)
                .filter(|i| !acked.contains(i))
                .collect();
        }
        fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
            let Some(id) = self.todo.pop_front() else {
                return;
            };
            if c.emit(values![self.lines[id as usize], id as i64], Some(id))
                .is_err()
            {
                self.todo.push_front(id);
            }
        }
        fn ack(&mut self, msg_id: MessageId) {
            lock(&self.store).acked.insert(msg_id);
        }
        fn fail(&mut self, msg_id: MessageId) {
            self.todo.push_back(msg_id);
        }
        fn is_done(&self) -> bool {
            lock(&self.store).acked.len() == self.lines.len()
        }
    }

    struct Split;

    impl BasicBolt for Split {
        fn execute(
            &mut self,
            input: &Input,
            c: &mut BasicOutputCollector<'_, '_>,
        ) -> Result<(), FailedException> {
            let line = input.values()[0].as_str().unwrap_or("");
            let line_no = input.values()[1].as_int().unwrap_or(-1);
            for (pos, w) in line.split_whitespace().enumerate() {
                c.emit(values![w, line_no * 1000 + pos as i64])
                    .map_err(|e| FailedException::new(e.to_string()))?;
            }
            Ok(())
        }
    }

    /// The broken split bolt: acks its input before emitting (so the words leave untracked).
    struct AckFirstSplit;

    impl Bolt for AckFirstSplit {
        fn execute(&mut self, input: Input, c: &mut OutputCollector<'_>) {
            let line = input.values()[0].as_str().unwrap_or("").to_string();
            let line_no = input.values()[1].as_int().unwrap_or(-1);
            let _ = c.ack(input);
            for (pos, w) in line.split_whitespace().enumerate() {
                let _ = c.emit(&[], values![w, line_no * 1000 + pos as i64]);
            }
        }
    }

    struct Count {
        store: Arc<Mutex<Store>>,
    }

    impl BasicBolt for Count {
        fn execute(
            &mut self,
            input: &Input,
            _c: &mut BasicOutputCollector<'_, '_>,
        ) -> Result<(), FailedException> {
            let word = input.values()[0].as_str().unwrap_or("").to_string();
            let key = input.values()[1].as_int().unwrap_or(-1) as u64;
            let mut s = lock(&self.store);
            if s.applied.insert((key / 1000, key % 1000)) {
                *s.counts.entry(word).or_insert(0) += 1;
            }
            Ok(())
        }
    }

    /// The word count topology over [`LINES`] and its store; `broken` uses the split bolt that
    /// acks before emitting.
    pub fn topology(broken: bool) -> (Topology, Arc<Mutex<Store>>) {
        let store = Arc::new(Mutex::new(Store::default()));
        let mut b = TopologyBuilder::new();
        let s = store.clone();
        b.set_spout(
            "lines",
            move || LinesSpout {
                lines: LINES.to_vec(),
                store: s.clone(),
                todo: VecDeque::new(),
            },
            1,
        )
        .output_fields(&["line", "n"]);
        if broken {
            b.set_bolt("split", || AckFirstSplit, 2)
                .shuffle_grouping("lines")
                .output_fields(&["word", "key"]);
        } else {
            b.set_basic_bolt("split", || Split, 2)
                .shuffle_grouping("lines")
                .output_fields(&["word", "key"]);
        }
        let s = store.clone();
        b.set_basic_bolt("count", move || Count { store: s.clone() }, 2)
            .fields_grouping("split", &["word"])
            .output_fields(&["word", "count"]);
        (b.build().expect("a valid topology"), store)
    }

    /// The run config: 2 ackers, T = 2 s, ticks every 100 ms, max spout pending 4.
    pub fn config() -> Config {
        Config {
            num_ackers: 2,
            message_timeout_ns: 2_000_000_000,
            tick_interval_ns: 100_000_000,
            max_spout_pending: Some(4),
            ..Config::default()
        }
    }

    /// The simulation of seed `seed`: swarm faults at `per_kilo` faults per thousand emits, the
    /// exact counts as an end invariant and "no count above the exact one" after every event.
    ///
    /// # Errors
    /// As [`Simulation::set_swarm_faults`].
    pub fn simulation(seed: u64, broken: bool, per_kilo: f64) -> Result<Simulation, RunError> {
        let (topology, store) = topology(broken);
        let mut opts = SimOptions::new(seed);
        opts.input_len = LINES.len() as u64;
        opts.restart_delay_ns = 50_000_000;
        opts.partition_ns = 200_000_000;
        opts.reliable_spouts = vec!["lines".to_string()];
        let mut sim = Simulation::new(&topology, &config(), opts);
        sim.set_swarm_faults(per_kilo)?;
        let want = expected(&LINES);
        let s = store.clone();
        sim.invariant("exact word counts", move || {
            let got = &lock(&s).counts;
            if *got == want {
                Ok(())
            } else {
                let diff: Vec<String> = want
                    .iter()
                    .filter(|(w, n)| got.get(*w) != Some(n))
                    .map(|(w, n)| format!("{w}: {} want {n}", got.get(w).copied().unwrap_or(0)))
                    .collect();
                Err(diff.join(", "))
            }
        });
        let want = expected(&LINES);
        sim.invariant_every_event("no count above the exact one", move || {
            let s = lock(&store);
            match s
                .counts
                .iter()
                .find(|(w, n)| want.get(*w).is_none_or(|m| *n > m))
            {
                Some((w, n)) => Err(format!("{w}: {n}")),
                None => Ok(()),
            }
        });
        Ok(sim)
    }
}

#[allow(dead_code)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seeds: u64 = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(200);
    let (mut faults, mut delivered) = (0, 0);
    for seed in 0..seeds {
        let o = wordcount::simulation(seed, false, 200.0)?.run()?;
        if !o.ok() {
            return Err(format!("seed {seed}: {:?}", o.violations).into());
        }
        faults += o.fired.len();
        delivered += o.delivered;
    }
    println!(
        "{seeds} seeds, {faults} faults fired, {delivered} messages delivered: every count exact"
    );
    let found =
        acker_sim::search::search(0..seeds, |seed| wordcount::simulation(seed, true, 200.0))?;
    match found {
        Some(f) => {
            let s = f.shrunk.ok_or("the violation did not replay")?;
            let sim = wordcount::simulation(f.seed, true, 200.0)?;
            println!(
                "broken split bolt: seed {} violates `{}`; shrunk to {}",
                f.seed,
                f.outcome.violations[0],
                sim.format_schedule(&s.faults)?
            );
        }
        None => println!("broken split bolt: not caught in {seeds} seeds"),
    }
    Ok(())
}
