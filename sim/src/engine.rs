//! The simulator proper: one thread, one event queue, the runtime's executors.
//!
//! Each task of the runtime [`Plan`] is an [`Executor`] built by the runtime itself; the engine
//! only carries [`Envelope`](acker_runtime::Envelope)s between them over simulated links, gives
//! each task a service time per message, feeds ticks, and injects faults:
//!
//! - **Links.** Each ordered pair of workers is one link: a message's latency is drawn uniformly
//!   from the scenario's range (a fixed small latency inside one worker), and a link is FIFO (a
//!   message never arrives before one sent earlier on the same link), while messages on different
//!   links reorder freely. Message loss drops the next message sent between two workers; a
//!   partition drops everything sent between two workers until it heals.
//! - **Tasks.** A task handles one message at a time from its inbox, spending its service time;
//!   a spout with an empty inbox, below max spout pending and with input to read calls
//!   `next_tuple`. Ticks go to spouts and ackers every tick interval.
//! - **Crashes.** A crashed task's executor is dropped with its inbox; messages that arrive while
//!   it is down are lost; after the restart delay it is rebuilt fresh from the plan, from a plan
//!   whose seed is derived from the incarnation (a restarted process draws new random ids).
//!
//! Every executed event is folded into the [`Trace`] hash.

use crate::components::{self, lock, ExceptionPoint, World};
use crate::fault::{Fault, FaultKind, Trigger};
use crate::oracle::{self, Violation};
use crate::queue::EventQueue;
use crate::rng::{self, SimRng};
use crate::scenario::{rng_streams, workers, PlantedBug, Scenario, ScenarioError};
use crate::trace::Trace;
use acker_core::{AckerMessage, TaskId};
use acker_runtime::{
    Executor, ExecutorCounters, Message, Notice, Outbox, Placement, Plan, TaskKind,
};
use std::collections::VecDeque;

/// What one run produced.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The run's seed.
    pub seed: u64,
    /// Input tuples.
    pub input: u64,
    /// Distinct positions in the sink's result.
    pub distinct: u64,
    /// Positions missing from the sink's result.
    pub lost: u64,
    /// Extra records in the sink's result.
    pub duplicates: u64,
    /// Writes the exactly-once state absorbed.
    pub absorbed: u64,
    /// The trace hash.
    pub trace_hash: u64,
    /// Events executed.
    pub events: u64,
    /// Messages delivered to a task.
    pub delivered: u64,
    /// Messages dropped (loss, partition, or a destination that was down).
    pub dropped: u64,
    /// The faults that fired, in order.
    pub fired: Vec<Fault>,
    /// Oracle violations.
    pub violations: Vec<Violation>,
    /// Simulated time at the end.
    pub end_ns: u64,
    /// Spout counters summed over every incarnation.
    pub spout: ExecutorCounters,
    /// Acker counters summed over every task and incarnation.
    pub acker: ExecutorCounters,
    /// Most roots any acker table held.
    pub max_acker_roots: usize,
    /// Most events scheduled at once.
    pub max_queue_len: usize,
}

impl Outcome {
    /// Whether no oracle was violated.
    pub fn ok(&self) -> bool {
        self.violations.is_empty()
    }
}

/// Why a run could not start.
#[derive(Debug)]
pub enum RunError {
    /// The scenario is invalid.
    Scenario(ScenarioError),
    /// The runtime refused the topology (not expected for a valid scenario).
    Runtime(String),
    /// The trace file could not be written.
    Io(std::io::Error),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Scenario(e) => e.fmt(f),
            RunError::Runtime(e) => write!(f, "runtime refused the topology: {e}"),
            RunError::Io(e) => write!(f, "trace file: {e}"),
        }
    }
}

impl std::error::Error for RunError {}

#[derive(Clone, Copy, Debug)]
enum Ev {
    /// The head message of link `l` arrives.
    Link(u16),
    Process {
        task: TaskId,
        inc: u32,
    },
    Tick {
        task: TaskId,
        inc: u32,
    },
    Fault(u32),
    Restart {
        task: TaskId,
    },
    Heal {
        a: u16,
        b: u16,
    },
}

struct InFlight {
    from: TaskId,
    dest: TaskId,
    msg: Message,
}

struct TaskState {
    kind: TaskKind,
    worker: u16,
    exec: Option<Executor>,
    incarnation: u32,
    /// Slab indices of delivered messages waiting to be handled.
    inbox: VecDeque<u32>,
    busy_until: u64,
    scheduled: bool,
    retired: ExecutorCounters,
    service_ns: u64,
    restart_pending: bool,
}

// Trace event codes.
const T_SEND: u64 = 1;
const T_DELIVER: u64 = 2;
const T_DROP: u64 = 3;
const T_FAULT: u64 = 4;
const T_RESTART: u64 = 5;
const T_EMIT: u64 = 6;
const T_TICK: u64 = 7;
const T_HEAL: u64 = 8;

// Drop reasons.
const DROP_LOSS: u64 = 1;
const DROP_PARTITION: u64 = 2;
const DROP_DOWN: u64 = 3;
const DROP_CRASH_INBOX: u64 = 4;

/// One simulation (see the [module docs](self)).
pub struct Sim {
    sc: Scenario,
    world: World,
    plan: Plan,
    placement: Placement,
    tasks: Vec<TaskState>,
    queue: EventQueue<Ev>,
    slab: Vec<Option<InFlight>>,
    free: Vec<u32>,
    link_last: Vec<u64>,
    /// Messages in flight on each link, in arrival order: (arrival time, slab index). Only each
    /// link's head is in the event queue, which keeps the queue a few dozen events long.
    link_queue: Vec<VecDeque<(u64, u32)>>,
    partitioned: Vec<u32>,
    drop_next: u64,
    link_rng: SimRng,
    trace: Trace,
    now: u64,
    out: Outbox,
    offset_faults: VecDeque<u32>,
    fired: Vec<Fault>,
    in_flight: u64,
    queued: u64,
    restarts_pending: u32,
    delivered: u64,
    dropped: u64,
    violations: Vec<Violation>,
    max_acker_roots: usize,
    acker_capacity: usize,
    spout_task: TaskId,
    /// Whether the source had something to emit after the spout's last step (cached so that
    /// scheduling does not lock the log).
    spout_has_input: bool,
    max_queue_len: usize,
    bug_armed: bool,
}

fn msg_words(m: &Message, w: &mut [u64; 16]) -> usize {
    match m {
        Message::Tuple(t) => {
            w[0] = 1 | (t.stream as u64) << 8 | (t.source_task as u64) << 24;
            w[1] = t.values.first().and_then(|v| v.as_int()).unwrap_or(-1) as u64;
            let mut n = 2;
            for &(r, e) in t.anchors.pairs() {
                if n + 2 > w.len() {
                    break;
                }
                w[n] = r;
                w[n + 1] = e;
                n += 2;
            }
            n
        }
        Message::Acker(a) => match *a {
            AckerMessage::Init {
                root,
                xor,
                spout_task,
            } => {
                w[0] = 2 | (spout_task as u64) << 8;
                w[1] = root;
                w[2] = xor;
                3
            }
            AckerMessage::Ack { root, xor } => {
                w[0] = 3;
                w[1] = root;
                w[2] = xor;
                3
            }
            AckerMessage::Fail { root } => {
                w[0] = 4;
                w[1] = root;
                2
            }
            AckerMessage::ResetTimeout { root } => {
                w[0] = 5;
                w[1] = root;
                2
            }
        },
        Message::Notice(n) => match *n {
            Notice::Completed { root } => {
                w[0] = 6;
                w[1] = root;
                2
            }
            Notice::Failed { root } => {
                w[0] = 7;
                w[1] = root;
                2
            }
            Notice::Reset { root } => {
                w[0] = 8;
                w[1] = root;
                2
            }
        },
        Message::Tick => {
            w[0] = 9;
            1
        }
    }
}

impl Sim {
    /// Prepares a run of `sc`, writing a text trace to `trace_out` when given.
    ///
    /// # Errors
    /// [`RunError::Scenario`] for an invalid scenario, [`RunError::Runtime`] if the runtime
    /// refuses the topology.
    pub fn new(sc: Scenario, trace_out: Option<Box<dyn std::io::Write>>) -> Result<Self, RunError> {
        sc.validate().map_err(RunError::Scenario)?;
        let exec_seed = rng::derive_seed(sc.seed, rng_streams::EXECUTORS);
        let (world, plan) = components::build(&sc, exec_seed).map_err(RunError::Runtime)?;
        let infos = plan.tasks().to_vec();
        let worker_of = |info: &acker_runtime::TaskInfo| -> u16 {
            match info.kind {
                TaskKind::Spout => workers::SPOUT,
                TaskKind::Acker => workers::ACKERS,
                TaskKind::Bolt if info.component == components::ids::SINK => workers::SINK,
                TaskKind::Bolt => workers::BOLTS,
            }
        };
        let placement = Placement::from_workers(infos.iter().map(worker_of).collect());
        let tasks = infos
            .iter()
            .map(|info| TaskState {
                kind: info.kind,
                worker: worker_of(info),
                exec: None,
                incarnation: 0,
                inbox: VecDeque::new(),
                busy_until: 0,
                scheduled: false,
                retired: ExecutorCounters::default(),
                service_ns: match info.kind {
                    TaskKind::Spout => sc.spout_ns,
                    TaskKind::Bolt => sc.bolt_ns,
                    TaskKind::Acker => sc.acker_ns,
                },
                restart_pending: false,
            })
            .collect();
        let w = workers::COUNT as usize;
        let acker_capacity = plan.acker_capacity_roots();
        let spout_task = infos
            .iter()
            .find(|i| i.kind == TaskKind::Spout)
            .map_or(0, |i| i.task);
        Ok(Self {
            link_rng: rng::stream(sc.seed, rng_streams::LINKS),
            world,
            plan,
            placement,
            tasks,
            queue: EventQueue::new(),
            slab: Vec::new(),
            free: Vec::new(),
            link_last: vec![0; w * w],
            link_queue: (0..w * w).map(|_| VecDeque::new()).collect(),
            partitioned: vec![0; w * w],
            drop_next: 0,
            trace: Trace::new(trace_out),
            now: 0,
            out: Outbox::with_capacity(16),
            offset_faults: VecDeque::new(),
            fired: Vec::new(),
            in_flight: 0,
            queued: 0,
            restarts_pending: 0,
            delivered: 0,
            dropped: 0,
            violations: Vec::new(),
            max_acker_roots: 0,
            acker_capacity,
            spout_task,
            spout_has_input: true,
            max_queue_len: 0,
            bug_armed: sc.planted_bug == Some(PlantedBug::AckerAcksFirstFailure),
            sc,
        })
    }

    /// Runs `sc` to the end and checks the oracles.
    ///
    /// # Errors
    /// As [`Sim::new`], and [`RunError::Io`] if the trace file could not be written.
    pub fn run(
        sc: Scenario,
        trace_out: Option<Box<dyn std::io::Write>>,
    ) -> Result<Outcome, RunError> {
        let mut sim = Sim::new(sc, trace_out)?;
        let outcome = sim.execute();
        sim.trace.finish().map_err(RunError::Io)?;
        Ok(outcome)
    }

    fn execute(&mut self) -> Outcome {
        // The trace starts with the scenario, so runs that differ only in a setting the messages
        // do not show (the guarantee's sink state, say) still hash differently.
        let sc = &self.sc;
        let header = [
            sc.seed,
            sc.guarantee as u64,
            sc.tuples,
            sc.max_spout_pending as u64,
            sc.message_timeout_ns,
            sc.tick_interval_ns,
            sc.ackers as u64,
            sc.bolts as u64,
            sc.latency_min_ns,
            sc.latency_max_ns,
            sc.local_latency_ns,
            sc.spout_ns,
            sc.bolt_ns,
            sc.acker_ns,
            sc.restart_delay_ns,
            sc.partition_ns,
            sc.planted_bug.map_or(0, |b| b as u64 + 1),
            sc.faults.len() as u64,
        ];
        self.trace.event(&header);
        // Start every task, schedule time-triggered faults, remember offset-triggered ones.
        for t in 0..self.tasks.len() {
            self.start_task(t as TaskId);
        }
        let mut offset_faults: Vec<(u64, u32)> = Vec::new();
        for (i, f) in self.sc.faults.iter().enumerate() {
            match f.trigger {
                Trigger::AtNs(t) => {
                    self.queue.push(t, Ev::Fault(i as u32));
                }
                Trigger::AtOffset(o) => offset_faults.push((o, i as u32)),
            }
        }
        offset_faults.sort();
        self.offset_faults = offset_faults.into_iter().map(|(_, i)| i).collect();
        let limit = self.sc.time_limit_ns();
        let mut finished = false;
        while let Some((t, _seq, ev)) = self.queue.pop() {
            self.max_queue_len = self.max_queue_len.max(self.queue.len() + 1);
            if t > limit {
                break;
            }
            self.now = t;
            match ev {
                Ev::Link(l) => {
                    let q = &mut self.link_queue[l as usize];
                    let head = q.pop_front();
                    if let Some(&(next, _)) = q.front() {
                        self.queue.push(next, Ev::Link(l));
                    }
                    if let Some((_, idx)) = head {
                        self.on_deliver(idx);
                    }
                }
                Ev::Process { task, inc } => self.on_process(task, inc),
                Ev::Tick { task, inc } => self.on_tick(task, inc),
                Ev::Fault(i) => self.fire(i),
                Ev::Restart { task } => self.on_restart(task),
                Ev::Heal { a, b } => {
                    self.trace.event(&[self.now, T_HEAL, a as u64, b as u64]);
                    let w = workers::COUNT as usize;
                    let (a, b) = (a as usize, b as usize);
                    self.partitioned[a * w + b] = self.partitioned[a * w + b].saturating_sub(1);
                    self.partitioned[b * w + a] = self.partitioned[b * w + a].saturating_sub(1);
                }
            }
            if self.in_flight == 0
                && self.queued == 0
                && self.restarts_pending == 0
                && lock(&self.world.log).is_done()
            {
                finished = true;
                break;
            }
        }
        self.finish(finished, limit)
    }

    fn finish(&mut self, finished: bool, limit: u64) -> Outcome {
        let log = lock(&self.world.log);
        let sink = lock(&self.world.sink);
        if !finished {
            self.violations.push(Violation::NotFinished {
                limit_ns: limit,
                uncommitted: log.tuples() - log.committed(),
            });
        }
        let bound = self
            .sc
            .message_timeout_ns
            .saturating_mul(2)
            .saturating_add(self.sc.tick_interval_ns);
        let end = if finished { self.now } else { limit };
        self.violations.extend(oracle::check_end(
            self.sc.guarantee,
            &log,
            &sink,
            bound,
            end,
        ));
        let (distinct, duplicates) = sink.tally();
        let mut spout = ExecutorCounters::default();
        let mut acker = ExecutorCounters::default();
        for t in &self.tasks {
            let mut c = t.retired;
            if let Some(e) = &t.exec {
                c.add(&e.counters());
            }
            match t.kind {
                TaskKind::Spout => spout.add(&c),
                TaskKind::Acker => acker.add(&c),
                TaskKind::Bolt => {}
            }
        }
        Outcome {
            seed: self.sc.seed,
            input: self.sc.tuples,
            distinct,
            lost: self.sc.tuples - distinct,
            duplicates,
            absorbed: sink.absorbed(),
            trace_hash: self.trace.hash(),
            events: self.trace.events(),
            delivered: self.delivered,
            dropped: self.dropped,
            fired: self.fired.clone(),
            violations: self.violations.clone(),
            end_ns: end,
            spout,
            acker,
            max_acker_roots: self.max_acker_roots,
            max_queue_len: self.max_queue_len,
        }
    }

    // ---- tasks ------------------------------------------------------------------------------

    fn build(&self, task: TaskId, incarnation: u32) -> Option<Executor> {
        let reuse = self.sc.planted_bug == Some(PlantedBug::RestartReusesSeed);
        if incarnation == 0 || reuse {
            self.plan.build_executor(task, &self.placement).ok()
        } else {
            let seed = rng::derive_seed(
                rng::derive_seed(self.sc.seed, rng_streams::EXECUTORS),
                ((task as u64) << 32) | incarnation as u64,
            );
            let plan = components::plan(&self.sc, &self.world, seed).ok()?;
            plan.build_executor(task, &self.placement).ok()
        }
    }

    fn start_task(&mut self, task: TaskId) {
        let t = task as usize;
        let inc = self.tasks[t].incarnation;
        if self.tasks[t].kind == TaskKind::Spout {
            lock(&self.world.log).set_now(self.now);
        }
        self.tasks[t].exec = self.build(task, inc);
        if self.tasks[t].kind == TaskKind::Spout {
            self.spout_has_input = !lock(&self.world.log).read_all();
        }
        self.tasks[t].busy_until = self.now;
        if matches!(self.tasks[t].kind, TaskKind::Spout | TaskKind::Acker) {
            self.queue
                .push(self.now + self.sc.tick_interval_ns, Ev::Tick { task, inc });
        }
        self.maybe_schedule(task);
    }

    fn crash_task(&mut self, task: TaskId) {
        let t = task as usize;
        let Some(mut exec) = self.tasks[t].exec.take() else {
            return; // already down
        };
        exec.shutdown();
        let c = exec.counters();
        self.tasks[t].retired.add(&c);
        drop(exec);
        let lost = self.tasks[t].inbox.len() as u64;
        let inbox = std::mem::take(&mut self.tasks[t].inbox);
        for idx in inbox {
            self.slab[idx as usize] = None;
            self.free.push(idx);
        }
        self.queued -= lost;
        self.dropped += lost;
        self.trace
            .event(&[self.now, T_DROP, DROP_CRASH_INBOX, task as u64, lost]);
        self.tasks[t].incarnation += 1;
        self.tasks[t].scheduled = false;
        if !self.tasks[t].restart_pending {
            self.tasks[t].restart_pending = true;
            self.restarts_pending += 1;
            self.queue
                .push(self.now + self.sc.restart_delay_ns, Ev::Restart { task });
        }
    }

    fn on_restart(&mut self, task: TaskId) {
        let t = task as usize;
        self.tasks[t].restart_pending = false;
        self.restarts_pending -= 1;
        self.trace.event(&[
            self.now,
            T_RESTART,
            task as u64,
            self.tasks[t].incarnation as u64,
        ]);
        if self.trace.writing() {
            let (now, inc) = (self.now, self.tasks[t].incarnation);
            self.trace
                .line(format_args!("{now} restart task {task} incarnation {inc}"));
        }
        self.start_task(task);
    }

    fn has_work(&self, task: TaskId) -> bool {
        let st = &self.tasks[task as usize];
        let Some(exec) = &st.exec else { return false };
        if !st.inbox.is_empty() {
            return true;
        }
        st.kind == TaskKind::Spout && self.spout_has_input && exec.can_emit()
    }

    fn maybe_schedule(&mut self, task: TaskId) {
        let t = task as usize;
        if self.tasks[t].scheduled || !self.has_work(task) {
            return;
        }
        let st = &mut self.tasks[t];
        st.scheduled = true;
        let at = st.busy_until.max(self.now);
        let inc = st.incarnation;
        self.queue.push(at, Ev::Process { task, inc });
    }

    fn on_process(&mut self, task: TaskId, inc: u32) {
        let t = task as usize;
        if self.tasks[t].incarnation != inc || self.tasks[t].exec.is_none() {
            return;
        }
        self.tasks[t].scheduled = false;
        let msg = match self.tasks[t].inbox.pop_front() {
            Some(idx) => {
                self.queued -= 1;
                self.take_slab(idx).map(|m| m.msg)
            }
            None => None,
        };
        self.step(task, msg);
    }

    fn take_slab(&mut self, idx: u32) -> Option<InFlight> {
        let item = self.slab[idx as usize].take();
        self.free.push(idx);
        item
    }

    /// One step of a live task: handle `msg`, or (a spout with no message) call `next_tuple`.
    fn step(&mut self, task: TaskId, msg: Option<Message>) {
        let t = task as usize;
        let now = self.now;
        let is_spout = self.tasks[t].kind == TaskKind::Spout;
        if let Some(msg) = msg {
            if is_spout {
                lock(&self.world.log).set_now(now);
            }
            if let Some(exec) = self.tasks[t].exec.as_mut() {
                exec.handle(msg, now, &mut self.out);
            }
        } else if is_spout {
            let emitted = match self.tasks[t].exec.as_mut() {
                Some(exec) => exec.next_tuple(now, &mut self.out),
                None => false,
            };
            if !emitted {
                return;
            }
            self.trace.event(&[now, T_EMIT, task as u64]);
        } else {
            return;
        }
        self.tasks[t].busy_until = now + self.tasks[t].service_ns;
        self.after_step(task);
        if is_spout {
            let newly = {
                let mut log = lock(&self.world.log);
                self.spout_has_input = !log.read_all();
                log.take_newly_read()
            };
            if let Some(o) = newly {
                self.fire_offset_faults(o);
            }
        }
        self.maybe_schedule(task);
    }

    fn on_tick(&mut self, task: TaskId, inc: u32) {
        let t = task as usize;
        if self.tasks[t].incarnation != inc || self.tasks[t].exec.is_none() {
            return;
        }
        self.trace.event(&[self.now, T_TICK, task as u64]);
        if self.tasks[t].kind == TaskKind::Spout {
            lock(&self.world.log).set_now(self.now);
        }
        if let Some(exec) = self.tasks[t].exec.as_mut() {
            exec.handle(Message::Tick, self.now, &mut self.out);
        }
        if self.tasks[t].kind == TaskKind::Spout {
            self.spout_has_input = !lock(&self.world.log).read_all();
        }
        self.after_step(task);
        self.queue
            .push(self.now + self.sc.tick_interval_ns, Ev::Tick { task, inc });
        self.maybe_schedule(task);
    }

    /// Checks the acker oracle, applies the planted bug, and sends the outbox.
    fn after_step(&mut self, task: TaskId) {
        let t = task as usize;
        if self.tasks[t].kind == TaskKind::Acker {
            if let Some(exec) = &self.tasks[t].exec {
                let len = exec.pending_roots();
                self.max_acker_roots = self.max_acker_roots.max(len);
                if len > self.acker_capacity && self.violations.len() < 100 {
                    self.violations.push(Violation::TableOverCapacity {
                        len,
                        capacity: self.acker_capacity,
                    });
                }
            }
        }
        let mut out = std::mem::take(&mut self.out);
        for env in out.drain() {
            let mut msg = env.message;
            if self.bug_armed && self.tasks[t].kind == TaskKind::Acker {
                if let Message::Notice(Notice::Failed { root }) = msg {
                    // The planted bug: report the first failed tree as completed.
                    self.bug_armed = false;
                    msg = Message::Notice(Notice::Completed { root });
                }
            }
            self.send(task, env.dest, msg);
        }
        self.out = out;
    }

    // ---- network ----------------------------------------------------------------------------

    fn send(&mut self, from: TaskId, dest: TaskId, msg: Message) {
        let Some(dst) = self.tasks.get(dest as usize) else {
            self.dropped += 1;
            return;
        };
        let sw = self.tasks[from as usize].worker as usize;
        let dw = dst.worker as usize;
        let w = workers::COUNT as usize;
        let mut words = [0u64; 16];
        let n = msg_words(&msg, &mut words);
        if sw != dw {
            let reason = if self.partitioned[sw * w + dw] > 0 {
                Some(DROP_PARTITION)
            } else if self.drop_next > 0 {
                self.drop_next -= 1;
                Some(DROP_LOSS)
            } else {
                None
            };
            if let Some(reason) = reason {
                self.dropped += 1;
                self.trace
                    .event(&[self.now, T_DROP, reason, (from as u64) << 16 | dest as u64]);
                self.trace.event(&words[..n]);
                if self.trace.writing() {
                    let now = self.now;
                    self.trace
                        .line(format_args!("{now} drop({reason}) {from}->{dest} {msg:?}"));
                }
                return;
            }
        }
        let latency = if sw == dw {
            self.sc.local_latency_ns
        } else {
            rng::between(
                &mut self.link_rng,
                self.sc.latency_min_ns,
                self.sc.latency_max_ns,
            )
        };
        let link = &mut self.link_last[sw * w + dw];
        let arrival = (self.now + latency).max(*link);
        *link = arrival;
        self.trace
            .event(&[self.now, T_SEND, (from as u64) << 16 | dest as u64, arrival]);
        self.trace.event(&words[..n]);
        if self.trace.writing() {
            let now = self.now;
            self.trace.line(format_args!(
                "{now} send {from}->{dest} at {arrival} {msg:?}"
            ));
        }
        let item = InFlight { from, dest, msg };
        let idx = match self.free.pop() {
            Some(i) => {
                self.slab[i as usize] = Some(item);
                i
            }
            None => {
                self.slab.push(Some(item));
                (self.slab.len() - 1) as u32
            }
        };
        self.in_flight += 1;
        let l = sw * w + dw;
        let q = &mut self.link_queue[l];
        q.push_back((arrival, idx));
        if q.len() == 1 {
            self.queue.push(arrival, Ev::Link(l as u16));
        }
    }

    fn on_deliver(&mut self, idx: u32) {
        self.in_flight -= 1;
        let Some((from, dest)) = self.slab[idx as usize].as_ref().map(|m| (m.from, m.dest)) else {
            return;
        };
        let d = dest as usize;
        if self.tasks[d].exec.is_none() {
            let item = self.take_slab(idx);
            self.dropped += 1;
            self.trace.event(&[
                self.now,
                T_DROP,
                DROP_DOWN,
                (from as u64) << 16 | dest as u64,
            ]);
            if self.trace.writing() {
                let now = self.now;
                if let Some(item) = item {
                    self.trace.line(format_args!(
                        "{now} drop(down) {from}->{dest} {:?}",
                        item.msg
                    ));
                }
            }
            return;
        }
        self.delivered += 1;
        self.trace.event(&[self.now, T_DELIVER, dest as u64]);
        let st = &self.tasks[d];
        if !st.scheduled && st.inbox.is_empty() && st.busy_until <= self.now {
            // Idle: handle it now (the same as a process event at this instant, one event less).
            let msg = self.take_slab(idx).map(|m| m.msg);
            self.step(dest, msg);
        } else {
            self.tasks[d].inbox.push_back(idx);
            self.queued += 1;
            self.maybe_schedule(dest);
        }
    }

    // ---- faults -----------------------------------------------------------------------------

    fn fire_offset_faults(&mut self, offset: u64) {
        while let Some(&i) = self.offset_faults.front() {
            match self.sc.faults[i as usize].trigger {
                Trigger::AtOffset(o) if o <= offset => {
                    self.offset_faults.pop_front();
                    self.fire(i);
                }
                _ => break,
            }
        }
    }

    fn fire(&mut self, i: u32) {
        let f = self.sc.faults[i as usize];
        self.fired.push(f);
        self.trace.event(&[
            self.now,
            T_FAULT,
            f.kind.code(),
            f.target as u64,
            f.peer as u64,
        ]);
        if self.trace.writing() {
            let now = self.now;
            self.trace.line(format_args!("{now} fault {f}"));
        }
        let bolt_base = self
            .plan
            .tasks()
            .iter()
            .find(|t| t.component == components::ids::PROCESS)
            .map_or(0, |t| t.task);
        match f.kind {
            FaultKind::SpoutCrash => self.crash_task(self.spout_task),
            FaultKind::AckerCrash => {
                let ackers = self.plan.acker_tasks();
                if !ackers.is_empty() {
                    self.crash_task(ackers.start + f.target);
                }
            }
            FaultKind::BoltCrash => self.crash_task(bolt_base + f.target),
            FaultKind::WorkerCrash => {
                for t in 0..self.tasks.len() {
                    if self.tasks[t].worker == f.target {
                        self.crash_task(t as TaskId);
                    }
                }
            }
            FaultKind::BoltExceptionBeforeEmit => self
                .world
                .bolt_faults
                .arm(f.target as usize, ExceptionPoint::BeforeEmit),
            FaultKind::BoltExceptionAfterEmit => self
                .world
                .bolt_faults
                .arm(f.target as usize, ExceptionPoint::AfterEmit),
            FaultKind::MessageLoss => self.drop_next += 1,
            FaultKind::Partition => {
                let w = workers::COUNT as usize;
                let (a, b) = (f.target as usize, f.peer as usize);
                self.partitioned[a * w + b] += 1;
                self.partitioned[b * w + a] += 1;
                self.queue.push(
                    self.now + self.sc.partition_ns,
                    Ev::Heal {
                        a: f.target,
                        b: f.peer,
                    },
                );
            }
        }
    }
}
