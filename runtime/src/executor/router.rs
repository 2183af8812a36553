//! The router: picks the destination tasks of an emit (the groupings at work), and the acker
//! task of a root.

use acker_core::{acker_index, TaskId};

use crate::message::{Message, Outbox, StreamId, Tuple, TupleAnchors, Values, DEFAULT_STREAM};

/// How one subscription picks destination tasks, with field names resolved to indices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum RouteKind {
    Shuffle,
    Fields(Vec<usize>),
    All,
    Global,
    LocalOrShuffle,
    Direct,
}

/// Why an emit could not be routed (becomes an [`EmitError`](crate::EmitError)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum RouteError {
    UnknownStream(String),
    UnknownStreamId(StreamId),
    FieldCount { expected: usize, got: usize },
    NotDirectTarget(TaskId),
}

pub(crate) fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Which acker task owns a root (none with 0 ackers).
#[derive(Clone, Copy, Debug)]
pub(crate) struct AckerRoute {
    pub(crate) base: TaskId,
    pub(crate) count: usize,
}

impl AckerRoute {
    #[inline]
    pub(crate) fn task(&self, root: u64) -> Option<TaskId> {
        acker_index(root, self.count).map(|i| self.base + i as TaskId)
    }
}

pub(crate) struct RouteState {
    pub(crate) kind: RouteKind,
    pub(crate) tasks: Vec<TaskId>,
    pub(crate) local: Vec<TaskId>,
    pub(crate) next: usize,
}

/// Picks destination tasks for an emit (the groupings at work).
pub(crate) struct Router {
    pub(crate) streams: Vec<Vec<RouteState>>,
    pub(crate) names: Vec<String>,
    pub(crate) field_counts: Vec<usize>,
    /// The id of the `default` stream, looked up once.
    pub(crate) default_stream: Option<StreamId>,
}

impl Router {
    #[inline]
    pub(crate) fn default_stream(&self) -> Result<StreamId, RouteError> {
        self.default_stream
            .ok_or_else(|| RouteError::UnknownStream(DEFAULT_STREAM.to_string()))
    }

    pub(crate) fn stream_id(&self, name: &str) -> Result<StreamId, RouteError> {
        self.names
            .iter()
            .position(|s| s == name)
            .map(|i| i as StreamId)
            .ok_or_else(|| RouteError::UnknownStream(name.to_string()))
    }

    /// Fills `dests` with the destination task of every copy.
    pub(crate) fn route(
        &mut self,
        stream: StreamId,
        values: &Values,
        direct: Option<TaskId>,
        dests: &mut Vec<TaskId>,
    ) -> Result<(), RouteError> {
        dests.clear();
        let s = stream as usize;
        let Some(routes) = self.streams.get_mut(s) else {
            return Err(RouteError::UnknownStreamId(stream));
        };
        let expected = self.field_counts[s];
        if values.len() != expected {
            return Err(RouteError::FieldCount {
                expected,
                got: values.len(),
            });
        }
        if let Some(target) = direct {
            for r in routes.iter() {
                if r.kind == RouteKind::Direct && r.tasks.contains(&target) {
                    dests.push(target);
                }
            }
            if dests.is_empty() {
                return Err(RouteError::NotDirectTarget(target));
            }
            return Ok(());
        }
        for r in routes.iter_mut() {
            match &r.kind {
                RouteKind::Shuffle => {
                    dests.push(r.tasks[r.next]);
                    r.next = if r.next + 1 == r.tasks.len() {
                        0
                    } else {
                        r.next + 1
                    };
                }
                RouteKind::LocalOrShuffle => {
                    let pool = if r.local.is_empty() {
                        &r.tasks
                    } else {
                        &r.local
                    };
                    let i = r.next % pool.len();
                    dests.push(pool[i]);
                    r.next = (i + 1) % pool.len();
                }
                RouteKind::Fields(idx) => {
                    let mut h = 0xcbf2_9ce4_8422_2325u64;
                    for &i in idx {
                        h = values[i].stable_hash(h);
                    }
                    let n = r.tasks.len() as u64;
                    let i = ((splitmix64(h) as u128 * n as u128) >> 64) as usize;
                    dests.push(r.tasks[i]);
                }
                RouteKind::All => dests.extend_from_slice(&r.tasks),
                RouteKind::Global => dests.push(r.tasks[0]),
                RouteKind::Direct => {}
            }
        }
        Ok(())
    }
}

/// Pushes one copy of `values` per destination, the last one moving `values`.
#[inline]
pub(crate) fn push_copies(
    out: &mut Outbox,
    dests: &[TaskId],
    stream: StreamId,
    task: TaskId,
    values: Values,
    mut anchors_of: impl FnMut(usize) -> TupleAnchors,
) {
    // Clones for all but the last copy, which takes `values` itself (moving it, rather than
    // leaving an empty `Values` behind, saves a drop call per emit).
    let Some((&last, rest)) = dests.split_last() else {
        return;
    };
    for (i, &d) in rest.iter().enumerate() {
        out.push(
            d,
            Message::Tuple(Tuple {
                stream,
                source_task: task,
                values: values.clone(),
                anchors: anchors_of(i),
            }),
        );
    }
    out.push(
        last,
        Message::Tuple(Tuple {
            stream,
            source_task: task,
            values,
            anchors: anchors_of(rest.len()),
        }),
    );
}
