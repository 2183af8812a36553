//! A minimal single-threaded shell: one FIFO queue, an injected clock that the caller advances.
//!
//! It runs the same [`Executor`]s as the thread-per-core shell, in a fixed order, so a run is
//! reproducible; tests use it to check executor behaviour without threads. (The seeded simulator
//! `acker-sim` is the full-featured single-threaded shell, with latency, loss and crashes.)

use std::collections::VecDeque;

use acker_core::TaskId;

use crate::api::ExecutorCounters;
use crate::executor::{BuildError, Executor};
use crate::message::{Envelope, Message, Outbox};
use crate::topology::{Placement, Plan, TaskKind};

/// Runs a [`Plan`] on one thread: spouts are polled in task order, every message is delivered
/// in FIFO order, ticks go to every executor when the caller asks.
pub struct LocalShell {
    executors: Vec<Executor>,
    queue: VecDeque<Envelope>,
    outbox: Outbox,
    now_ns: u64,
}

impl LocalShell {
    /// Builds every executor of `plan`, all in worker 0.
    ///
    /// # Errors
    /// As [`Plan::build_executor`].
    pub fn new(plan: &Plan) -> Result<Self, BuildError> {
        let placement = Placement::single(plan.tasks().len());
        Ok(Self {
            executors: plan.build_all(&placement)?,
            queue: VecDeque::new(),
            outbox: Outbox::new(),
            now_ns: 0,
        })
    }

    /// The injected clock, ns.
    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }

    /// Moves the clock forward by `ns` (stopping at `u64::MAX` ns, about 584 years, rather
    /// than wrapping) and sends a tick to every executor (then delivers everything that
    /// follows).
    pub fn advance(&mut self, ns: u64) {
        self.now_ns = self.now_ns.saturating_add(ns);
        for i in 0..self.executors.len() {
            self.executors[i].handle(Message::Tick, self.now_ns, &mut self.outbox);
            self.queue.extend(self.outbox.drain());
        }
        self.drain();
    }

    /// Delivers queued messages until none is left; returns how many were delivered.
    pub fn drain(&mut self) -> usize {
        let mut n = 0;
        while let Some(e) = self.queue.pop_front() {
            n += 1;
            if let Some(x) = self.executors.get_mut(e.dest as usize) {
                x.handle(e.message, self.now_ns, &mut self.outbox);
                self.queue.extend(self.outbox.drain());
            }
        }
        n
    }

    /// Polls every spout's `next_tuple` once (if not throttled), then delivers everything that
    /// follows. Returns how many spouts were called.
    pub fn step(&mut self) -> usize {
        let mut called = 0;
        for i in 0..self.executors.len() {
            if self.executors[i].next_tuple(self.now_ns, &mut self.outbox) {
                called += 1;
            }
            self.queue.extend(self.outbox.drain());
        }
        self.drain();
        called
    }

    /// The executor of `task`.
    pub fn executor(&self, task: TaskId) -> Option<&Executor> {
        self.executors.get(task as usize)
    }

    /// The summed counters of every task of `kind`.
    pub fn counters(&self, kind: TaskKind) -> ExecutorCounters {
        let mut c = ExecutorCounters::default();
        for e in self.executors.iter().filter(|e| e.kind() == kind) {
            c.add(&e.counters());
        }
        c
    }

    /// Calls `close` / `cleanup` on every executor.
    pub fn shutdown(&mut self) {
        for e in &mut self.executors {
            e.shutdown();
        }
    }
}
