//! The op stream every structure is measured on, generated before timing.
//!
//! W roots are in flight. Each tuple tree is an init plus k chained acks: the spout emits one copy
//! with edge id e1 (init xor = e1), bolt j acks its input e_j and emits one copy e_{j+1} anchored
//! to it (ack xor = e_j ⊕ e_{j+1}), the last bolt emits nothing (ack xor = e_k), so the k-th ack
//! completes the tree. The prefill inits W trees; then each step picks one of the W trees
//! uniformly at random (seeded xoshiro256++) and sends its next ack; when that ack completes the
//! tree, a new tree takes its place and its init follows at once, so exactly W roots are in flight
//! after every init (W − 1 between a completing ack and the next init).

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

impl Workload {
    /// Generates the stream of `config`.
    ///
    /// # Panics
    /// If `config.window` is 0 (a benchmark configuration error).
    pub fn generate(config: WorkloadConfig) -> Self {
        assert!(config.window > 0, "workload window must be at least 1");
        let k = config.acks_per_tree.max(1);
        let tasks = config.spout_tasks.max(1) as u64;
        let mut ids = IdGenerator::from_seed(config.seed);
        let mut pick = Xoshiro256PlusPlus::seed_from_u64(config.seed ^ 0x5EED_0F0D_E85A_11CE);
        let mut live: hashbrown::HashSet<RootId> = hashbrown::HashSet::with_capacity(config.window);
        let new_tree = |ids: &mut IdGenerator, live: &mut hashbrown::HashSet<RootId>| {
            let root = loop {
                let r = ids.next_id();
                if live.insert(r) {
                    break r;
                }
            };
            let edge = ids.next_id();
            let spout_task = (root % tasks) as TaskId;
            (
                Tree {
                    root,
                    edge,
                    acks_left: k,
                },
                AckerMessage::Init {
                    root,
                    xor: edge,
                    spout_task,
                },
            )
        };
        let mut trees = Vec::with_capacity(config.window);
        let mut prefill = Vec::with_capacity(config.window);
        for _ in 0..config.window {
            let (t, init) = new_tree(&mut ids, &mut live);
            trees.push(t);
            prefill.push(init);
        }
        let mut ops = Vec::with_capacity(config.ops);
        let mut completions = 0;
        let mut in_flight = config.window;
        while ops.len() < config.ops {
            let i = ((pick.next_u64() as u128 * config.window as u128) >> 64) as usize;
            let t = &mut trees[i];
            let next_edge = if t.acks_left == 1 { 0 } else { ids.next_id() };
            ops.push(AckerMessage::Ack {
                root: t.root,
                xor: t.edge ^ next_edge,
            });
            t.edge = next_edge;
            t.acks_left -= 1;
            if t.acks_left == 0 {
                completions += 1;
                live.remove(&t.root);
                in_flight -= 1;
                if ops.len() < config.ops {
                    // The completed tree's replacement: its init follows the completing ack.
                    let (nt, init) = new_tree(&mut ids, &mut live);
                    trees[i] = nt;
                    ops.push(init);
                    in_flight += 1;
                }
            }
        }
        Workload {
            config,
            prefill,
            ops,
            completions,
            final_in_flight: in_flight,
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
