//! The messages executors exchange, and the outbox they write them into.
//!
//! Every executor (spout, bolt, acker) is handed one [`Message`] at a time and writes what it wants
//! sent into an [`Outbox`] as [`Envelope`]s addressed by destination task id. A shell (the
//! thread-per-core shell in [`crate::shell`], or the simulator) carries each envelope to the
//! executor of its `dest` task. Four kinds of message exist, as in Storm's executors:
//!
//! | message | from → to | Storm equivalent |
//! | --- | --- | --- |
//! | [`Message::Tuple`] | spout/bolt → bolt | a data tuple on a stream, carrying its anchors (`MessageId`) |
//! | [`Message::Acker`] | spout/bolt → acker | `__ack_init`, `__ack_ack`, `__ack_fail`, `__ack_reset_timeout` |
//! | [`Message::Notice`] | acker → spout | the acker's `Completed` / `Failed` / `Reset` notice for a root |
//! | [`Message::Tick`] | shell → any | `__tick`: time has moved on (timeouts, acker expiry) |
//!
//! Payloads are [`Values`]: up to two [`Value`]s are stored inline, so a tuple of integers or short
//! words allocates nothing.

use std::mem::ManuallyDrop;
use std::sync::Arc;

use acker_core::{AckerMessage, Anchors, RootId, TaskId};
use compact_str::CompactString;
use smallvec::SmallVec;

/// The most trees one tuple may belong to (the `R` of [`acker_core::Anchors`]). An emit anchored
/// to inputs that together belong to more trees is refused with
/// [`acker_core::AnchorError::TooManyRoots`] (Storm has no such bound; real topologies rarely
/// multi-anchor to more than a handful of trees). Three keeps a data tuple at 120 bytes, so the
/// shell's ring slot for it is exactly two cache lines (four made it straddle a third, which
/// measured slower).
pub const MAX_ROOTS: usize = 3;

/// The anchors a data tuple carries: up to [`MAX_ROOTS`] (root id, edge XOR) pairs.
pub type TupleAnchors = Anchors<MAX_ROOTS>;

/// A stream's index among its component's declared output streams (0-based, in declaration order).
pub type StreamId = u16;

/// The name of the stream a plain `emit` goes to (Storm's `Utils.DEFAULT_STREAM_ID`).
pub const DEFAULT_STREAM: &str = "default";

/// The user's message id of a spout tuple (Storm's `Object msgId`; here a `u64`, such as a line
/// number or an offset).
pub type MessageId = u64;

/// One field value of a tuple.
///
/// Equality and hashing (for fields grouping) look at the content: `Str("a")` equals
/// `Shared("a")`.
#[derive(Clone, Debug)]
pub enum Value {
    /// A signed integer.
    Int(i64),
    /// A string, stored inline up to 24 bytes (no allocation for short words).
    Str(CompactString),
    /// A shared, immutable string: cloning it (for several destination tasks) only bumps a
    /// reference count.
    Shared(Arc<str>),
}

impl Value {
    /// The integer, if this is an [`Value::Int`].
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// The text, if this is a [`Value::Str`] or [`Value::Shared`].
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s.as_str()),
            Value::Shared(s) => Some(s),
            Value::Int(_) => None,
        }
    }

    /// Whether the value owns no heap memory: an integer, or a string stored inline (up to 24
    /// bytes). Dropping such a value frees nothing (a received input skips its drop call).
    #[inline]
    pub fn owns_no_heap(&self) -> bool {
        match self {
            Value::Int(_) => true,
            Value::Str(s) => !s.is_heap_allocated(),
            Value::Shared(_) => false,
        }
    }

    /// A fixed 64-bit hash of the content, folded into `h`: the same on every machine and run
    /// (little-endian 8-byte words, the last one zero-padded, multiply-rotate mixing; a type
    /// tag keeps `Int(x)` and a string apart). Used by fields grouping on every emit it routes,
    /// so the last partial word is read with at most two loads instead of a `memcpy` call.
    #[inline]
    pub fn stable_hash(&self, h: u64) -> u64 {
        #[inline]
        fn mix(h: u64, w: u64) -> u64 {
            (h ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29)
        }
        match self {
            Value::Int(i) => mix(mix(h, 1), *i as u64),
            Value::Str(_) | Value::Shared(_) => {
                let bytes = self.as_str().unwrap_or_default().as_bytes();
                let mut h = mix(h, 2 ^ ((bytes.len() as u64) << 8));
                let mut chunks = bytes.chunks_exact(8);
                for c in &mut chunks {
                    h = mix(h, le_word(c));
                }
                let rest = chunks.remainder();
                if !rest.is_empty() {
                    h = mix(h, le_word(rest));
                }
                h
            }
        }
    }
}

/// The little-endian word of `b` (at most 8 bytes), zero-padded: for 4 to 8 bytes two
/// overlapping 4-byte loads, for 1 to 3 bytes the first, middle and last byte (positions that
/// overlap hold the same byte, so OR-ing them is exact); 0 for none.
#[inline]
fn le_word(b: &[u8]) -> u64 {
    let n = b.len();
    let load4 = |at: usize| {
        let mut w = [0u8; 4];
        w.copy_from_slice(&b[at..at + 4]);
        u32::from_le_bytes(w) as u64
    };
    match n {
        4..=8 => load4(0) | (load4(n - 4) << (8 * (n - 4))),
        1..=3 => {
            b[0] as u64 | (b[n / 2] as u64) << (8 * (n / 2)) | (b[n - 1] as u64) << (8 * (n - 1))
        }
        _ => 0,
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Int(_), _) | (_, Value::Int(_)) => false,
            _ => self.as_str() == other.as_str(),
        }
    }
}

impl Eq for Value {}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}
impl From<i32> for Value {
    fn from(v: i32) -> Self {
        Value::Int(v as i64)
    }
}
impl From<u32> for Value {
    fn from(v: u32) -> Self {
        Value::Int(v as i64)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Str(CompactString::new(v))
    }
}
impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Str(CompactString::from(v))
    }
}
impl From<CompactString> for Value {
    fn from(v: CompactString) -> Self {
        Value::Str(v)
    }
}
impl From<Arc<str>> for Value {
    fn from(v: Arc<str>) -> Self {
        Value::Shared(v)
    }
}

/// A tuple's values (Storm's `Values`): two are stored inline, more spill to the heap.
pub type Values = SmallVec<[Value; 2]>;

/// Builds [`Values`] from expressions convertible into [`Value`]:
/// `values![42]`, `values!["word", 1]`.
#[macro_export]
macro_rules! values {
    ($($v:expr),* $(,)?) => {
        $crate::smallvec::smallvec![$($crate::Value::from($v)),*]
    };
}

/// A data tuple in flight: the stream it was emitted on, the task that emitted it, its values and
/// the anchors of this copy (empty when untracked). The default is an empty, untracked tuple on
/// stream 0 from task 0.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tuple {
    /// The stream, as an index among the source component's declared streams.
    pub stream: StreamId,
    /// The task that emitted this copy.
    pub source_task: TaskId,
    /// The values, in the order of the stream's declared fields.
    pub values: Values,
    /// The (root, edge XOR) pairs of this copy; empty for an untracked tuple.
    pub anchors: TupleAnchors,
}

/// What an acker tells a spout task about one of its roots.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Notice {
    /// The tree completed: the spout calls `ack(msg_id)`.
    Completed {
        /// The root id.
        root: RootId,
    },
    /// The tree failed: the spout calls `fail(msg_id)`.
    Failed {
        /// The root id.
        root: RootId,
    },
    /// A bolt asked for more time: the spout restarts the root's timeout.
    Reset {
        /// The root id.
        root: RootId,
    },
}

impl Notice {
    /// The root id the notice is about.
    #[inline]
    pub fn root(&self) -> RootId {
        match *self {
            Notice::Completed { root } | Notice::Failed { root } | Notice::Reset { root } => root,
        }
    }
}

/// One message into an executor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// A data tuple, for a bolt task.
    Tuple(Tuple),
    /// A message into an acker task (init, ack, fail, reset-timeout).
    Acker(AckerMessage),
    /// An acker's decision, for the spout task that emitted the root.
    Notice(Notice),
    /// The clock moved on: spouts time out pending tuples, ackers expire old entries. The time is
    /// the `now_ns` passed with it.
    Tick,
}

impl Message {
    /// Whether this is a control message (acker message, notice or tick) rather than data.
    /// Control messages never wait behind data in a shell that gives them their own lane.
    pub fn is_control(&self) -> bool {
        !matches!(self, Message::Tuple(_))
    }
}

/// A message addressed to a task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope {
    /// The destination task id.
    pub dest: TaskId,
    /// The message.
    pub message: Message,
}

/// Acker messages for the acker tasks on this thread: each such acker's messages of a loop
/// turn, in sending order, in one list, applied as one slice at the next turn's local drain
/// (when the local FIFO would have delivered them as batches) instead of being cut into
/// the shell's acker batches and copied through the local FIFO. Consecutive acks of one root are merged
/// as in a batch (`coalesce_ack` in the shell).
#[derive(Debug, Default)]
pub(crate) struct LocalAcks {
    /// Task id → index into `lists`, or [`NOT_LOCAL`] for a task that is no acker on this
    /// thread.
    slot: Vec<u32>,
    /// (acker task, its messages waiting, oldest first), one entry per acker on this thread.
    pub(crate) lists: Vec<(TaskId, Vec<AckerMessage>)>,
}

/// [`LocalAcks::slot`] of a task that is no acker on this thread.
const NOT_LOCAL: u32 = u32::MAX;

impl LocalAcks {
    /// Lists for `ackers`, the acker tasks on this thread, among task ids `0..tasks`.
    pub(crate) fn new(tasks: usize, ackers: &[TaskId], capacity: usize) -> Self {
        let mut slot = vec![NOT_LOCAL; tasks];
        let mut lists = Vec::with_capacity(ackers.len());
        for (i, &a) in ackers.iter().enumerate() {
            slot[a as usize] = i as u32;
            lists.push((a, Vec::with_capacity(capacity)));
        }
        Self { slot, lists }
    }

    /// Appends `m` to `dest`'s list (merged into its last message if
    /// [`coalesce_ack`](crate::shell::coalesce_ack) allows)
    /// and returns true when `dest` is an acker on this thread; otherwise returns false and
    /// changes nothing.
    #[inline(always)]
    pub(crate) fn push(&mut self, dest: TaskId, m: &AckerMessage) -> bool {
        let s = match self.slot.get(dest as usize) {
            Some(&s) if s != NOT_LOCAL => s,
            _ => return false,
        };
        let list = &mut self.lists[s as usize].1;
        if let Some(last) = list.last_mut() {
            if crate::shell::coalesce_ack(last, m) {
                return true;
            }
        }
        list.push(*m);
        true
    }

    /// [`push`](Self::push) for each of `ms`, in order, with one look-up of `dest`: returns
    /// false and changes nothing when `dest` is no acker on this thread.
    #[inline(always)]
    pub(crate) fn push_all(&mut self, dest: TaskId, ms: &[AckerMessage]) -> bool {
        let s = match self.slot.get(dest as usize) {
            Some(&s) if s != NOT_LOCAL => s,
            _ => return false,
        };
        let list = &mut self.lists[s as usize].1;
        for m in ms {
            if let Some(last) = list.last_mut() {
                if crate::shell::coalesce_ack(last, m) {
                    continue;
                }
            }
            list.push(*m);
        }
        true
    }

    /// Whether no message is waiting.
    pub(crate) fn is_empty(&self) -> bool {
        self.lists.iter().all(|(_, l)| l.is_empty())
    }
}

/// A data tuple on its way to bolt task `dest`: the threaded shell's data-lane element and the
/// entry of an outbox's split-off tuple list. Exactly two cache lines, so a ring slot never
/// straddles a third one, and a move is a few inlined stores (a 144-byte [`Envelope`] is copied
/// by a `memcpy` call).
#[derive(Debug)]
#[repr(align(64))]
pub(crate) struct DataEnv {
    pub(crate) dest: TaskId,
    pub(crate) tuple: Tuple,
}

/// A data tuple for bolt task `dest` on the shell's own thread: the entry of an outbox's local
/// tuple list ([`Outbox::split_off_local_tuples`]), the thread's local data FIFO. The shell
/// delivers a tuple in place (`Executor::handle_tuple_in_place` takes its values and anchors,
/// leaving it owning nothing), so an entry is never dropped: a delivered entry has nothing to
/// drop, and the outbox drops the tuples of the entries it still holds when cleared or dropped
/// (as the shell's FIFO drops those it took from the outbox but has not delivered yet).
#[derive(Debug)]
#[repr(align(64))]
pub(crate) struct LocalEnv {
    pub(crate) dest: TaskId,
    pub(crate) tuple: ManuallyDrop<Tuple>,
}

/// Where an executor writes the messages it wants sent, in order.
///
/// The shell drains it after each call. Its buffer is kept between calls, so once it has grown to
/// the largest burst one call produces, pushing allocates nothing.
///
/// # Envelopes and split-off messages
///
/// By default every message is an [`Envelope`], in one sending order: [`len`](Self::len),
/// [`is_empty`](Self::is_empty), [`as_slice`](Self::as_slice) and [`drain`](Self::drain) all see
/// every message (the simulator and the local shell work this way). A shell may instead have the
/// acker traffic and the tuples kept apart (`split_off_acker_traffic`, crate-internal, used by
/// the thread-per-core shell): data tuples, acker messages and an acker's notices then go to
/// lists of their own and are *not* envelopes. `len`, `is_empty`, `as_slice` and `drain` always describe the
/// envelopes only (the four agree with each other); the split-off messages are counted apart
/// and are dropped by [`clear`](Self::clear) with the envelopes.
#[derive(Debug, Default)]
pub struct Outbox {
    envelopes: Vec<Envelope>,
    /// A bolt's acker messages (ack, fail, reset), in sending order, when split
    /// off ([`split_off_acker_traffic`](Self::split_off_acker_traffic)); empty otherwise.
    acker: Vec<(TaskId, AckerMessage)>,
    /// An acker's notices, in sending order, when split off; empty otherwise.
    notices: Vec<(TaskId, Notice)>,
    /// Data tuples, in sending order, when split off; empty otherwise. With local tuples split
    /// off too, only those for tasks on other threads.
    tuples: Vec<DataEnv>,
    /// Data tuples for the bolt tasks on the shell's own thread, in sending order, when split
    /// off ([`split_off_local_tuples`](Self::split_off_local_tuples)): the shell's local data
    /// FIFO itself, delivered at its next local drain straight from here.
    local_tuples: Vec<LocalEnv>,
    /// Task id → whether its tuples go to `local_tuples` (empty: none do).
    local_tuple_dest: Vec<bool>,
    /// A bolt's acker messages for the acker tasks on the shell's own thread, when split off
    /// and given ([`split_off_acker_traffic`](Self::split_off_acker_traffic)): one list per
    /// acker, applied by the shell straight from here.
    local: LocalAcks,
    split: bool,
    /// `(message id, root)` of every tracked spout emit since the last
    /// [`take_tracked_emits`](Self::take_tracked_emits) or
    /// [`clear_tracked_emits`](Self::clear_tracked_emits), when recording (see
    /// [`record_tracked_emits`](Self::record_tracked_emits)); empty when not recording.
    tracked_emits: Vec<(MessageId, u64)>,
    recording: bool,
}

impl Outbox {
    /// An empty outbox.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty outbox with room for `capacity` envelopes before it grows.
    pub fn with_capacity(capacity: usize) -> Self {
        let mut o = Self::default();
        o.envelopes = Vec::with_capacity(capacity);
        o
    }

    /// From now on a bolt's acker messages ([`push_acker`](Self::push_acker)) and notices
    /// ([`push_notice`](Self::push_notice)) go to lists of their own,
    /// [`acker_messages`](Self::acker_messages) and [`notices`](Self::notices), each in sending
    /// order, instead of among the envelopes: for a shell that sends them on lanes of their own
    /// anyway (the threaded shell), and so never relies on their order relative to the
    /// envelopes. Each then costs a 16- or 24-byte entry instead of an envelope of a whole
    /// [`Message`]. Data tuples go to a list of their own too ([`push_tuple`](Self::push_tuple)),
    /// as 128-byte entries the shell moves into its data lane as they are. Off by default: every
    /// message is an envelope, in one order.
    ///
    /// A bolt's messages for an acker in `local` (the acker tasks running on the shell's own
    /// thread) go to that acker's list in `local` instead ([`local_acks`](Self::local_acks)).
    pub(crate) fn split_off_acker_traffic(&mut self, local: LocalAcks) {
        self.split = true;
        self.local = local;
        self.tuples.reserve(self.envelopes.capacity());
        self.acker.reserve(self.envelopes.capacity());
        self.notices.reserve(self.envelopes.capacity());
    }

    /// Appends a bolt's message for acker task `dest` (ack, fail or reset): an envelope, or an
    /// entry of the split-off list (see
    /// [`split_off_acker_traffic`](Self::split_off_acker_traffic)).
    #[inline(always)]
    pub(crate) fn push_acker(&mut self, dest: TaskId, m: AckerMessage) {
        if self.split {
            if !self.local.push(dest, &m) {
                self.acker.push((dest, m));
            }
        } else {
            self.push(dest, Message::Acker(m));
        }
    }

    /// Appends a data tuple for bolt task `dest`: an envelope, or, when split off, an entry of
    /// the tuple list ([`take_tuples`](Self::take_tuples)), which the threaded shell moves into
    /// its data lane as is. A tuple goes on the data lane and any other message on another, so
    /// only the order among the tuples is kept, as the lanes keep it.
    #[inline(always)]
    pub(crate) fn push_tuple(&mut self, dest: TaskId, tuple: Tuple) {
        if self.split {
            if let Some(true) = self.local_tuple_dest.get(dest as usize) {
                self.local_tuples.push(LocalEnv {
                    dest,
                    tuple: ManuallyDrop::new(tuple),
                });
            } else {
                self.tuples.push(DataEnv { dest, tuple });
            }
        } else {
            self.push(dest, Message::Tuple(tuple));
        }
    }

    /// With acker traffic split off ([`split_off_acker_traffic`](Self::split_off_acker_traffic)),
    /// from now on a tuple for a task `t` with `local[t]` (the bolt tasks on the shell's own
    /// thread) goes to a list of its own, [`local_tuples`](Self::local_tuples), in sending order,
    /// instead of the tuple list the shell routes: the shell delivers that list at its next local
    /// drain, where the routed tuple would have waited in its local FIFO. Only the order among
    /// the tuples for this thread's tasks is kept, as the local FIFO kept it.
    pub(crate) fn split_off_local_tuples(&mut self, local: Vec<bool>) {
        self.local_tuple_dest = local;
        self.local_tuples.reserve(self.envelopes.capacity() * 4);
    }

    /// The tuples for tasks on the shell's thread (see
    /// [`split_off_local_tuples`](Self::split_off_local_tuples)), oldest first; the shell takes
    /// them by swapping in an empty list of its own once it has delivered its last list.
    #[inline]
    pub(crate) fn local_tuples(&mut self) -> &mut Vec<LocalEnv> {
        &mut self.local_tuples
    }

    /// How many tuples for tasks on the shell's thread are waiting.
    #[inline]
    pub(crate) fn local_tuples_len(&self) -> usize {
        self.local_tuples.len()
    }

    /// Removes and yields the split-off tuples, oldest first (none unless split off).
    #[inline]
    pub(crate) fn take_tuples(&mut self) -> std::vec::Drain<'_, DataEnv> {
        self.tuples.drain(..)
    }

    /// The split-off tuple when it is the only one waiting (as after nearly every emit), taken
    /// out; `None`, and nothing taken, otherwise. Cheaper than [`take_tuples`](Self::take_tuples)
    /// for one tuple (no `Drain` to drop).
    #[inline]
    pub(crate) fn take_only_tuple(&mut self) -> Option<DataEnv> {
        if self.tuples.len() == 1 {
            self.tuples.pop()
        } else {
            None
        }
    }

    /// Whether no split-off tuple is waiting.
    #[inline]
    pub(crate) fn no_tuples(&self) -> bool {
        self.tuples.is_empty()
    }

    /// Appends a spout's init for acker task `dest`: when split off and `dest` is an acker on
    /// the shell's thread, into that acker's list ([`local_acks`](Self::local_acks), applied at
    /// the next local drain with the bolts' messages, in sending order); otherwise an envelope,
    /// which the shell sends at once (see
    /// [`split_off_acker_traffic`](Self::split_off_acker_traffic)).
    #[inline]
    pub(crate) fn push_spout_init(&mut self, dest: TaskId, init: AckerMessage) {
        if !(self.split && self.local.push(dest, &init)) {
            self.push(dest, Message::Acker(init));
        }
    }

    /// Appends an acker's notice for spout task `dest`: an envelope, or an entry of the
    /// split-off list (see [`split_off_acker_traffic`](Self::split_off_acker_traffic)).
    #[inline]
    pub(crate) fn push_notice(&mut self, dest: TaskId, n: Notice) {
        if self.split {
            self.notices.push((dest, n));
        } else {
            self.push(dest, Message::Notice(n));
        }
    }

    /// The split-off acker messages waiting, oldest first (empty unless split off).
    #[inline]
    pub(crate) fn acker_messages(&self) -> &[(TaskId, AckerMessage)] {
        &self.acker
    }

    /// The lists of acker messages for the ackers on the shell's thread (see
    /// [`split_off_acker_traffic`](Self::split_off_acker_traffic)); the shell applies and
    /// empties them.
    #[inline]
    pub(crate) fn local_acks(&mut self) -> &mut LocalAcks {
        &mut self.local
    }

    /// The split-off notices waiting, oldest first (empty unless split off).
    #[inline]
    pub(crate) fn notices(&self) -> &[(TaskId, Notice)] {
        &self.notices
    }

    /// Number of split-off acker messages and notices waiting, those in the local ackers'
    /// lists included (0 unless split off); they are not envelopes, so [`len`](Self::len) does
    /// not count them.
    pub(crate) fn split_off_len(&self) -> usize {
        let local: usize = self.local.lists.iter().map(|(_, l)| l.len()).sum();
        self.acker.len() + self.notices.len() + self.tuples.len() + self.local_tuples.len() + local
    }

    /// Whether nothing is waiting to be routed: no envelope, no split-off acker message or
    /// notice. The local ackers' lists ([`local_acks`](Self::local_acks)) are not routed and
    /// not looked at, nor the local tuples ([`local_tuples`](Self::local_tuples));
    /// [`split_off_len`](Self::split_off_len) counts them.
    #[inline]
    pub(crate) fn nothing_waiting(&self) -> bool {
        self.is_empty()
            && self.tuples.is_empty()
            && self.acker.is_empty()
            && self.notices.is_empty()
    }

    /// Starts recording the `(message id, root)` of every tracked emit a spout makes through this
    /// outbox (root 0 for an emit acked at once, with no acker), so that a shell can observe the
    /// emits from outside the spout (the simulator's oracles do). Off by default: recording
    /// costs one push per tracked emit.
    pub fn record_tracked_emits(&mut self) {
        self.recording = true;
    }

    /// Records one tracked emit, if recording (called by the spout's collector).
    #[inline]
    pub fn note_tracked_emit(&mut self, msg_id: MessageId, root: u64) {
        if self.recording {
            self.tracked_emits.push((msg_id, root));
        }
    }

    /// The recorded tracked emits, oldest first (none when not recording), for a shell that
    /// reads them in place and then calls [`clear_tracked_emits`](Self::clear_tracked_emits)
    /// (no `Drain` built and dropped, as [`take_tracked_emits`](Self::take_tracked_emits) does).
    #[inline]
    pub fn tracked_emits(&self) -> &[(MessageId, u64)] {
        &self.tracked_emits
    }

    /// Forgets the recorded tracked emits.
    #[inline]
    pub fn clear_tracked_emits(&mut self) {
        self.tracked_emits.clear();
    }

    /// Removes and yields the recorded tracked emits, oldest first (none when not recording).
    #[inline]
    pub fn take_tracked_emits(&mut self) -> std::vec::Drain<'_, (MessageId, u64)> {
        self.tracked_emits.drain(..)
    }

    /// Appends a message for task `dest`.
    #[inline]
    pub fn push(&mut self, dest: TaskId, message: Message) {
        self.envelopes.push(Envelope { dest, message });
    }

    /// Number of envelopes waiting: what [`as_slice`](Self::as_slice) shows and
    /// [`drain`](Self::drain) yields (split-off messages are not envelopes and not counted).
    #[inline]
    pub fn len(&self) -> usize {
        self.envelopes.len()
    }

    /// Whether no envelope is waiting (`len() == 0`; split-off messages are not envelopes).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.envelopes.is_empty()
    }

    /// The waiting envelopes, oldest first (`len()` of them).
    pub fn as_slice(&self) -> &[Envelope] {
        &self.envelopes
    }

    /// Removes and yields every waiting envelope, oldest first (`len()` of them; the buffer is
    /// kept). Split-off messages stay until [`clear`](Self::clear).
    pub fn drain(&mut self) -> std::vec::Drain<'_, Envelope> {
        self.envelopes.drain(..)
    }

    /// The waiting envelopes, oldest first (`len()` of them), for a shell that moves out only
    /// what each message needs (a control message is a few words; a tuple can be taken with
    /// `mem::replace`, leaving a [`Message::Tick`], which owns nothing to drop) and then calls
    /// [`clear_envelopes`](Self::clear_envelopes): no whole envelope is copied out, as
    /// [`drain`](Self::drain) copies each. After taking messages out this way, clear; do not
    /// [`drain`](Self::drain) or deliver the envelopes (a taken tuple's envelope now holds a
    /// `Tick` addressed to the tuple's destination).
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [Envelope] {
        &mut self.envelopes
    }

    /// Drops every waiting envelope (what [`as_slice`](Self::as_slice) shows); split-off
    /// messages stay until [`clear`](Self::clear).
    #[inline]
    pub fn clear_envelopes(&mut self) {
        self.envelopes.clear();
    }

    /// Drops every waiting envelope, and the split-off acker messages if `acker`, the split-off
    /// notices if `notices` (for a shell that knows which lists its sender can fill).
    #[inline(always)]
    pub(crate) fn clear_envelopes_and(&mut self, acker: bool, notices: bool) {
        self.envelopes.clear();
        if acker {
            self.acker.clear();
        }
        if notices {
            self.notices.clear();
        }
    }

    /// Drops the local tuples (their entries are `ManuallyDrop`: see [`LocalEnv`]).
    fn drop_local_tuples(&mut self) {
        for e in self.local_tuples.drain(..) {
            drop(ManuallyDrop::into_inner(e.tuple));
        }
    }

    /// Drops every waiting envelope and split-off message.
    pub fn clear(&mut self) {
        self.envelopes.clear();
        self.tuples.clear();
        self.drop_local_tuples();
        self.acker.clear();
        self.notices.clear();
        for (_, l) in &mut self.local.lists {
            l.clear();
        }
    }
}

impl Drop for Outbox {
    fn drop(&mut self) {
        self.drop_local_tuples();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hash written out independently (every word, the last one zero-padded, through
    /// `chunks`): fields grouping's task choice, and with it the simulator's pinned traces,
    /// depend on every bit of it.
    fn reference_hash(bytes: &[u8], h: u64) -> u64 {
        fn mix(h: u64, w: u64) -> u64 {
            (h ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29)
        }
        let mut h = mix(h, 2 ^ ((bytes.len() as u64) << 8));
        for c in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            h = mix(h, u64::from_le_bytes(w));
        }
        h
    }

    #[test]
    fn acker_traffic_is_envelopes_unless_split_off_and_len_counts_only_envelopes() {
        let ack = AckerMessage::Ack { root: 5, xor: 9 };
        let fail = AckerMessage::Fail { root: 6 };
        let done = Notice::Completed { root: 8 };
        let tick = Envelope {
            dest: 7,
            message: Message::Tick,
        };
        // Not split (the simulator, the local shell): envelopes, in order with the others.
        let mut o = Outbox::new();
        o.push(7, Message::Tick);
        o.push_acker(3, ack);
        o.push_notice(2, done);
        let all = [
            tick.clone(),
            Envelope {
                dest: 3,
                message: Message::Acker(ack),
            },
            Envelope {
                dest: 2,
                message: Message::Notice(done),
            },
        ];
        assert_eq!(o.as_slice(), &all);
        assert_eq!(o.len(), 3);
        assert_eq!(o.split_off_len(), 0);
        assert!(o.acker_messages().is_empty() && o.notices().is_empty());
        assert_eq!(o.drain().collect::<Vec<_>>(), all);
        assert!(o.is_empty() && o.nothing_waiting());

        // Split (the threaded shell): lists of their own, in sending order. `len`, `is_empty`,
        // `as_slice` and `drain` agree: envelopes only.
        let mut s = Outbox::new();
        s.split_off_acker_traffic(LocalAcks::default());
        s.push_acker(3, ack);
        assert!(s.is_empty(), "an acker message alone is no envelope");
        assert_eq!(s.len(), s.as_slice().len());
        assert!(!s.nothing_waiting(), "but something is waiting");
        s.push(7, Message::Tick);
        s.push_acker(4, fail);
        s.push_notice(2, done);
        assert_eq!(s.as_slice(), std::slice::from_ref(&tick));
        assert_eq!(s.len(), 1);
        assert_eq!(s.len(), s.as_slice().len());
        assert_eq!(s.split_off_len(), 3);
        assert_eq!(s.acker_messages(), &[(3, ack), (4, fail)]);
        assert_eq!(s.notices(), &[(2, done)]);
        assert_eq!(s.drain().collect::<Vec<_>>(), [tick]);
        assert!(s.is_empty());
        assert_eq!(s.split_off_len(), 3, "drain leaves the split-off messages");
        s.clear();
        assert!(s.nothing_waiting());
        assert_eq!(s.split_off_len(), 0);
    }

    #[test]
    fn a_spout_init_skips_the_envelopes_only_for_an_acker_in_the_local_lists() {
        let init = AckerMessage::Init {
            root: 5,
            xor: 9,
            spout_task: 0,
        };
        let ack = AckerMessage::Ack { root: 5, xor: 4 };
        let envelope = |dest| Envelope {
            dest,
            message: Message::Acker(init),
        };
        // Not split: an envelope, whatever the acker.
        let mut o = Outbox::new();
        o.push_spout_init(3, init);
        assert_eq!(o.as_slice(), &[envelope(3)]);
        // Split, acker 3 on this thread (of tasks 0..5), acker 4 not: the init for 3 joins 3's
        // list after the ack sent before it (sending order, no merge across kinds); the one for
        // 4 stays an envelope (the shell sends it at once).
        let mut s = Outbox::new();
        s.split_off_acker_traffic(LocalAcks::new(5, &[3], 4));
        s.push_acker(3, ack);
        s.push_spout_init(3, init);
        s.push_spout_init(4, init);
        assert_eq!(s.as_slice(), &[envelope(4)]);
        assert_eq!(s.local_acks().lists, [(3, vec![ack, init])]);
        assert!(s.acker_messages().is_empty());
        assert_eq!(s.split_off_len(), 2);
        s.clear();
        assert!(s.nothing_waiting() && s.split_off_len() == 0);
    }

    #[test]
    fn tuples_are_envelopes_unless_split_off_then_a_list_in_sending_order() {
        let tuple = |n: i64| Tuple {
            values: crate::values![n],
            ..Tuple::default()
        };
        let ints = |envs: Vec<DataEnv>| -> Vec<(TaskId, i64)> {
            envs.iter()
                .map(|e| (e.dest, e.tuple.values[0].as_int().unwrap()))
                .collect()
        };
        // Not split: envelopes, in order with the others.
        let mut o = Outbox::new();
        o.push_tuple(1, tuple(10));
        o.push(7, Message::Tick);
        assert_eq!(o.len(), 2);
        assert_eq!(o.as_slice()[0].message, Message::Tuple(tuple(10)));
        assert!(o.no_tuples() && o.take_only_tuple().is_none());
        // Split: a list of their own, not envelopes, but waiting and counted apart.
        let mut s = Outbox::new();
        s.split_off_acker_traffic(LocalAcks::default());
        s.push_tuple(1, tuple(10));
        assert!(s.is_empty() && !s.no_tuples() && !s.nothing_waiting());
        assert_eq!(s.split_off_len(), 1);
        // One tuple: taken alone.
        assert_eq!(ints(s.take_only_tuple().into_iter().collect()), [(1, 10)]);
        assert!(s.no_tuples() && s.nothing_waiting());
        // Several: `take_only_tuple` takes none of them, `take_tuples` all, oldest first.
        for (d, n) in [(2, 20), (3, 30), (2, 21)] {
            s.push_tuple(d, tuple(n));
        }
        assert!(s.take_only_tuple().is_none());
        assert_eq!(s.split_off_len(), 3);
        assert_eq!(ints(s.take_tuples().collect()), [(2, 20), (3, 30), (2, 21)]);
        assert!(s.nothing_waiting());
        // `clear` drops them.
        s.push_tuple(4, tuple(40));
        s.clear();
        assert!(s.no_tuples() && s.nothing_waiting() && s.split_off_len() == 0);
    }

    /// With local tuples split off, a tuple for a task marked local goes to the local list,
    /// every other one (unmarked, or beyond the marks) to the routed list, each in sending
    /// order; `split_off_len` counts both, `nothing_waiting` only the routed ones, `clear`
    /// drops both.
    #[test]
    fn local_tuples_are_a_list_of_their_own_in_sending_order() {
        let tuple = |n: i64| Tuple {
            values: crate::values![n],
            ..Tuple::default()
        };
        let ints = |envs: &[DataEnv]| -> Vec<(TaskId, i64)> {
            envs.iter()
                .map(|e| (e.dest, e.tuple.values[0].as_int().unwrap()))
                .collect()
        };
        let mut s = Outbox::new();
        s.split_off_acker_traffic(LocalAcks::default());
        s.split_off_local_tuples(vec![false, true, false, true]);
        for (d, n) in [(1, 10), (2, 20), (3, 30), (1, 11), (9, 90)] {
            s.push_tuple(d, tuple(n));
        }
        let local: Vec<(TaskId, i64)> = s
            .local_tuples()
            .iter()
            .map(|e| (e.dest, e.tuple.values[0].as_int().unwrap()))
            .collect();
        assert_eq!(local, [(1, 10), (3, 30), (1, 11)]);
        assert_eq!(s.local_tuples_len(), 3);
        assert_eq!(s.split_off_len(), 5);
        assert!(s.take_only_tuple().is_none() && !s.nothing_waiting());
        assert_eq!(
            ints(&s.take_tuples().collect::<Vec<_>>()),
            [(2, 20), (9, 90)]
        );
        assert!(s.nothing_waiting() && s.split_off_len() == 3);
        s.clear();
        assert_eq!(s.split_off_len(), 0);
        // Not split: every tuple an envelope, whatever the marks.
        let mut o = Outbox::new();
        o.split_off_local_tuples(vec![true, true]);
        o.push_tuple(1, tuple(10));
        assert_eq!((o.len(), o.local_tuples_len()), (1, 0));
    }

    /// The local tuple list's entries are `ManuallyDrop`: a tuple still in it is dropped when
    /// the outbox is cleared or dropped (its shared value's count goes back).
    #[test]
    fn local_tuples_left_in_the_outbox_are_dropped_with_it() {
        let shared: Arc<str> = Arc::from("a shared value, not stored inline");
        let tuple = || Tuple {
            values: crate::values![shared.clone()],
            ..Tuple::default()
        };
        let mut s = Outbox::new();
        s.split_off_acker_traffic(LocalAcks::default());
        s.split_off_local_tuples(vec![true]);
        s.push_tuple(0, tuple());
        s.push_tuple(0, tuple());
        assert_eq!((s.local_tuples_len(), Arc::strong_count(&shared)), (2, 3));
        s.clear();
        assert_eq!((s.local_tuples_len(), Arc::strong_count(&shared)), (0, 1));
        s.push_tuple(0, tuple());
        assert_eq!(Arc::strong_count(&shared), 2);
        drop(s);
        assert_eq!(Arc::strong_count(&shared), 1);
    }

    #[test]
    fn owns_no_heap_only_for_integers_and_inline_strings() {
        assert!(Value::Int(-3).owns_no_heap());
        assert!(Value::from("").owns_no_heap());
        assert!(Value::from("twenty-four bytes inline").owns_no_heap());
        assert!(!Value::from("twenty-five bytes: a heap").owns_no_heap());
        assert!(Value::from("wherefore").owns_no_heap());
        assert!(!Value::from("a word of more than twenty-four bytes").owns_no_heap());
        assert!(!Value::Shared(Arc::from("a")).owns_no_heap());
    }

    #[test]
    fn string_hash_equals_the_zero_padded_word_hash_at_every_length() {
        let text: Vec<u8> = (0u32..40).map(|i| b'!' + (i * 7 % 94) as u8).collect();
        for n in 0..=text.len() {
            let s = std::str::from_utf8(&text[..n]).unwrap();
            for seed in [0, 0xcbf2_9ce4_8422_2325] {
                let want = reference_hash(s.as_bytes(), seed);
                assert_eq!(Value::from(s).stable_hash(seed), want, "length {n}");
                assert_eq!(
                    Value::Shared(Arc::from(s)).stable_hash(seed),
                    want,
                    "length {n}"
                );
            }
        }
        // Fixed values (a change here changes which task fields grouping picks).
        assert_eq!(Value::from("the").stable_hash(0), 0x52e4_854a_4146_3368);
        assert_eq!(
            Value::from("wherefore").stable_hash(0xcbf2_9ce4_8422_2325),
            0x4a50_eff9_efbf_0332
        );
        assert_eq!(Value::Int(7).stable_hash(0), 0xe1e1_9bde_1717_e0d4);
    }
}
