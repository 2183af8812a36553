//! The op stream every structure is measured on, generated before timing.
//!
//! W roots are in flight. Each tuple tree is an init plus k chained acks: the spout emits one copy
//! with edge id e1 (init xor = e1), bolt j acks its input e_j and emits one copy e_{j+1} anchored
//! to it (ack xor = e_j ⊕ e_{j+1}), the last bolt emits nothing (ack xor = e_k), so the k-th ack
//! completes the tree. The prefill inits W trees; then each step picks one of the W trees
//! uniformly at random (seeded xoshiro256++) and sends its next ack; when that ack completes the
//! tree, a new tree takes its place and its init follows at once, so exactly W roots are in flight
//! after every init (W − 1 between a completing ack and the next init).
//! [`MessageSource`] produces the same stream one message at a time, for the in-loop mode.

use acker_core::{AckerMessage, IdGenerator, RootId, TaskId};
use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// What to generate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkloadConfig {
    /// W: roots in flight (at least 1).
    pub window: usize,
    /// k: acks per tree (at least 1; 0 is read as 1).
    pub acks_per_tree: usize,
    /// Timed messages after the prefill.
    pub ops: usize,
    /// Seed of the whole stream.
    pub seed: u64,
    /// Number of spout tasks the inits name (task ids `0..spout_tasks`, at least 1).
    pub spout_tasks: TaskId,
}

impl WorkloadConfig {
    /// W roots in flight, k = 4 acks per tree, `ops` timed messages, seed `seed`, 8 spout tasks.
    pub fn new(window: usize, ops: usize, seed: u64) -> Self {
        WorkloadConfig {
            window,
            acks_per_tree: 4,
            ops,
            seed,
            spout_tasks: 8,
        }
    }
}

/// A generated op stream.
#[derive(Clone, Debug)]
pub struct Workload {
    /// The configuration it was generated from.
    pub config: WorkloadConfig,
    /// W inits, applied before timing.
    pub prefill: Vec<AckerMessage>,
    /// The timed messages (`config.ops` of them).
    pub ops: Vec<AckerMessage>,
    /// How many messages of `ops` complete a tree (the `Completed` decisions a correct table
    /// returns for them).
    pub completions: usize,
    /// Roots in flight after `ops`.
    pub final_in_flight: usize,
}

#[derive(Clone, Copy)]
struct Tree {
    root: RootId,
    /// The edge id of the copy the next ack acknowledges.
    edge: u64,
    acks_left: usize,
}

/// The op stream of a [`WorkloadConfig`], produced one message at a time (what an engine's
/// message loop does): [`prefill`](Self::prefill) first, then [`next_message`](Self::next_message)
/// or [`fill`](Self::fill) give exactly the timed messages of [`Workload::generate`] (which is
/// built on it), `config.ops` of them.
///
/// Roots are uniform 64-bit ids (acker-core's [`IdGenerator`]), not checked against the live
/// roots: two live roots coincide with a chance below W × trees ÷ 2^64 (under 10^-5 at
/// W = 10M and 40M messages), which the compare tool's outcome check would report.
#[derive(Clone)]
pub struct MessageSource {
    config: WorkloadConfig,
    k: usize,
    tasks: u64,
    ids: IdGenerator,
    pick: Xoshiro256PlusPlus,
    trees: Vec<Tree>,
    emitted: usize,
    /// The init of the tree that replaces a just-completed one, sent next.
    next_init: Option<AckerMessage>,
    completions: usize,
    in_flight: usize,
}

impl MessageSource {
    /// The source of `config`'s stream, with W trees not yet initialised.
    ///
    /// # Panics
    /// If `config.window` is 0 (a benchmark configuration error).
    pub fn new(config: WorkloadConfig) -> Self {
        assert!(config.window > 0, "workload window must be at least 1");
        MessageSource {
            config,
            k: config.acks_per_tree.max(1),
            tasks: config.spout_tasks.max(1) as u64,
            ids: IdGenerator::from_seed(config.seed),
            pick: Xoshiro256PlusPlus::seed_from_u64(config.seed ^ 0x5EED_0F0D_E85A_11CE),
            trees: Vec::with_capacity(config.window),
            emitted: 0,
            next_init: None,
            completions: 0,
            in_flight: 0,
        }
    }

    #[inline]
    fn new_tree(&mut self) -> (Tree, AckerMessage) {
        let root = self.ids.next_id();
        let edge = self.ids.next_id();
        let spout_task = (root % self.tasks) as TaskId;
        (
            Tree {
                root,
                edge,
                acks_left: self.k,
            },
            AckerMessage::Init {
                root,
                xor: edge,
                spout_task,
            },
        )
    }

    /// The W inits applied before timing (call once, first).
    pub fn prefill(&mut self) -> Vec<AckerMessage> {
        let mut prefill = Vec::with_capacity(self.config.window);
        for _ in 0..self.config.window {
            let (t, init) = self.new_tree();
            self.trees.push(t);
            prefill.push(init);
        }
        self.in_flight = self.config.window;
        prefill
    }

    /// The next timed message, `None` after `config.ops` of them.
    #[inline]
    pub fn next_message(&mut self) -> Option<AckerMessage> {
        if self.emitted >= self.config.ops {
            return None;
        }
        self.emitted += 1;
        if let Some(init) = self.next_init.take() {
            return Some(init);
        }
        let i = ((self.pick.next_u64() as u128 * self.trees.len() as u128) >> 64) as usize;
        let next_edge = if self.trees[i].acks_left == 1 {
            0
        } else {
            self.ids.next_id()
        };
        let t = &mut self.trees[i];
        let ack = AckerMessage::Ack {
            root: t.root,
            xor: t.edge ^ next_edge,
        };
        t.edge = next_edge;
        t.acks_left -= 1;
        if t.acks_left == 0 {
            self.completions += 1;
            self.in_flight -= 1;
            if self.emitted < self.config.ops {
                // The completed tree's replacement: its init follows the completing ack.
                let (nt, init) = self.new_tree();
                self.trees[i] = nt;
                self.next_init = Some(init);
                self.in_flight += 1;
            }
        }
        Some(ack)
    }

    /// Writes the next messages into `buf` and returns how many (0 once the stream is done).
    #[inline]
    pub fn fill(&mut self, buf: &mut [AckerMessage]) -> usize {
        for (n, slot) in buf.iter_mut().enumerate() {
            match self.next_message() {
                Some(m) => *slot = m,
                None => return n,
            }
        }
        buf.len()
    }

    /// Messages of the stream that completed a tree so far.
    pub fn completions(&self) -> usize {
        self.completions
    }

    /// Roots in flight after the messages produced so far.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }
}

impl Workload {
    /// Generates the stream of `config` (through [`MessageSource`]).
    ///
    /// # Panics
    /// If `config.window` is 0 (a benchmark configuration error).
    pub fn generate(config: WorkloadConfig) -> Self {
        let mut source = MessageSource::new(config);
        let prefill = source.prefill();
        let mut ops = Vec::with_capacity(config.ops);
        while let Some(m) = source.next_message() {
            ops.push(m);
        }
        Workload {
            config,
            prefill,
            ops,
            completions: source.completions(),
            final_in_flight: source.in_flight(),
        }
    }

    /// The workloads of `threads` threads sharing one table: thread t drives its own W/threads
    /// trees (the first W mod threads threads one more) with `ops/threads` messages and its own
    /// seed, so the threads' roots never overlap (up to a 2^-64 chance per pair of roots).
    pub fn generate_per_thread(config: WorkloadConfig, threads: usize) -> Vec<Workload> {
        let threads = threads.max(1);
        (0..threads)
            .map(|t| {
                let window = config.window / threads + usize::from(t < config.window % threads);
                Workload::generate(WorkloadConfig {
                    window: window.max(1),
                    ops: config.ops / threads,
                    seed: config
                        .seed
                        .wrapping_add((t as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
                    ..config
                })
            })
            .collect()
    }
}
