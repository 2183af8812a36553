//! The router: picks the destination tasks of an emit (the groupings at work), and the acker
//! task of a root.

use acker_core::{acker_index, TaskId};

use crate::message::{Outbox, StreamId, Tuple, TupleAnchors, Values, DEFAULT_STREAM};

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
        // One acker: `acker_index` is 0 for every root (its product's high half with 1 is 0);
        // the hash is skipped.
        if self.count == 1 {
            return Some(self.base);
        }
        acker_index(root, self.count).map(|i| self.base + i as TaskId)
    }
}

pub(crate) struct RouteState {
    pub(crate) kind: RouteKind,
    pub(crate) tasks: Vec<TaskId>,
    pub(crate) local: Vec<TaskId>,
    pub(crate) next: usize,
}

impl RouteState {
    /// How `route` may pick for this subscription when it is its stream's only one: a
    /// [fixed task](Self::fixed_task), the fields hash of one field (a fields grouping on one
    /// field over two or more tasks), or the general path.
    pub(crate) fn fast_route(&self) -> FastRoute {
        if let Some(t) = self.fixed_task() {
            return FastRoute::Task(t);
        }
        match &self.kind {
            RouteKind::Fields(idx) if idx.len() == 1 && !self.tasks.is_empty() => {
                FastRoute::Field {
                    field: idx[0],
                    tasks: self.tasks.clone().into_boxed_slice(),
                }
            }
            _ => FastRoute::General,
        }
    }

    /// The one task this subscription picks for every emit that is not direct, if there is
    /// one: a single destination task (any grouping but direct), or a local-or-shuffle
    /// grouping with one local task. Shuffle's rotation, the fields hash and local-or-shuffle's
    /// rotation all pick that task then, so skipping them picks the same tasks.
    pub(crate) fn fixed_task(&self) -> Option<TaskId> {
        match self.kind {
            RouteKind::Direct => None,
            RouteKind::LocalOrShuffle if !self.local.is_empty() => match self.local[..] {
                [t] => Some(t),
                _ => None,
            },
            _ => match self.tasks[..] {
                [t] => Some(t),
                _ => None,
            },
        }
    }
}

/// A stream's shortcut past the general route loop, for its non-direct emits (see
/// [`RouteState::fast_route`]). Each picks exactly the task the general path picks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum FastRoute {
    /// No shortcut: the stream's route loop.
    General,
    /// Every emit goes to this one task.
    Task(TaskId),
    /// The stream's one subscription is a fields grouping on one field over two or more
    /// tasks: the task is [`fields_index`] of that value's hash over these tasks.
    Field {
        /// The grouping field's index among the stream's fields.
        field: usize,
        /// The subscription's tasks (a copy of its [`RouteState::tasks`]).
        tasks: Box<[TaskId]>,
    },
}

/// A stream's shortcut with the field count its emits must have (checked before the shortcut
/// is taken, so a wrong count still gets the general path's error).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StreamFast {
    pub(crate) field_count: usize,
    pub(crate) route: FastRoute,
}

/// The seed of the fields grouping's hash (the 64-bit FNV offset basis), folded through every
/// grouping field with [`Value::stable_hash`](crate::Value::stable_hash).
pub(crate) const FIELDS_HASH_SEED: u64 = 0xcbf2_9ce4_8422_2325;

/// Which of `n` tasks a fields grouping picks for grouping-field hash `h`: `splitmix64(h)`
/// scaled to `0..n` by a 128-bit multiply (no modulo bias worth naming, no division).
#[inline]
pub(crate) fn fields_index(h: u64, n: usize) -> usize {
    ((splitmix64(h) as u128 * n as u128) >> 64) as usize
}

/// Picks destination tasks for an emit (the groupings at work).
pub(crate) struct Router {
    pub(crate) streams: Vec<Vec<RouteState>>,
    pub(crate) names: Vec<String>,
    pub(crate) field_counts: Vec<usize>,
    /// The id of the `default` stream, looked up once.
    pub(crate) default_stream: Option<StreamId>,
    /// Per stream: the shortcut of its non-direct emits when the stream has a single
    /// subscription ([`RouteState::fast_route`]): one [fixed task](RouteState::fixed_task)
    /// (the common one-to-one edge), so `route` skips the grouping's work, or one field to
    /// hash, so it skips the route loop; [`FastRoute::General`] otherwise.
    pub(crate) fast: Vec<StreamFast>,
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

    /// Fills `dests` with the destination task of every copy. A stream's
    /// [shortcut](StreamFast) is taken inline; everything else (several subscriptions,
    /// direct emits, errors) goes through [`route_general`](Self::route_general).
    #[inline(always)]
    pub(crate) fn route(
        &mut self,
        stream: StreamId,
        values: &Values,
        direct: Option<TaskId>,
        dests: &mut Vec<TaskId>,
    ) -> Result<(), RouteError> {
        dests.clear();
        if direct.is_none() {
            if let Some(f) = self.fast.get(stream as usize) {
                if values.len() == f.field_count {
                    match &f.route {
                        FastRoute::Task(t) => {
                            dests.push(*t);
                            return Ok(());
                        }
                        FastRoute::Field { field, tasks } => {
                            if let Some(v) = values.get(*field) {
                                let h = v.stable_hash(FIELDS_HASH_SEED);
                                if let Some(&t) = tasks.get(fields_index(h, tasks.len())) {
                                    dests.push(t);
                                    return Ok(());
                                }
                            }
                        }
                        FastRoute::General => {}
                    }
                }
            }
        }
        self.route_general(stream, values, direct, dests)
    }

    /// The general path of [`route`](Self::route): every subscription of the stream in turn.
    #[inline(never)]
    fn route_general(
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
                    let mut h = FIELDS_HASH_SEED;
                    for &i in idx {
                        h = values[i].stable_hash(h);
                    }
                    dests.push(r.tasks[fields_index(h, r.tasks.len())]);
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
        out.push_tuple(
            d,
            Tuple {
                stream,
                source_task: task,
                values: values.clone(),
                anchors: anchors_of(i),
            },
        );
    }
    out.push_tuple(
        last,
        Tuple {
            stream,
            source_task: task,
            values,
            anchors: anchors_of(rest.len()),
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values;

    #[test]
    fn the_acker_route_is_acker_index_whatever_the_acker_count() {
        // One acker takes a shortcut past the hash: every root still maps as `acker_index` maps it.
        for count in 0..4 {
            let r = AckerRoute { base: 10, count };
            for i in 0..2_000u64 {
                let root = splitmix64(i) | (i << 63);
                let want = acker_index(root, count).map(|a| 10 + a as TaskId);
                assert_eq!(r.task(root), want, "root {root:#x} of {count} ackers");
            }
            assert_eq!(
                r.task(u64::MAX),
                acker_index(u64::MAX, count).map(|a| 10 + a as TaskId)
            );
        }
    }

    /// A router of one stream of one field whose routes are `routes`, with `fixed` filled as
    /// `Router::new` fills it when `fast` (and left empty, i.e. the general path, otherwise).
    fn router(routes: Vec<RouteState>, fast: bool) -> Router {
        let route = match (&routes[..], fast) {
            ([r], true) => r.fast_route(),
            _ => FastRoute::General,
        };
        let fast = vec![StreamFast {
            field_count: 1,
            route,
        }];
        Router {
            streams: vec![routes],
            names: vec![DEFAULT_STREAM.to_string()],
            field_counts: vec![1],
            default_stream: Some(0),
            fast,
        }
    }

    impl RouteState {
        fn clone_state(&self) -> RouteState {
            state(self.kind.clone(), &self.tasks, &self.local, self.next)
        }
    }

    fn state(kind: RouteKind, tasks: &[TaskId], local: &[TaskId], next: usize) -> RouteState {
        RouteState {
            kind,
            tasks: tasks.to_vec(),
            local: local.to_vec(),
            next,
        }
    }

    /// The tasks 6 emits of words "w0".."w5" go to.
    fn picks(r: &mut Router) -> Vec<TaskId> {
        let mut dests = Vec::new();
        (0..6)
            .map(|i| {
                r.route(0, &values![format!("w{i}")], None, &mut dests)
                    .unwrap();
                assert_eq!(dests.len(), 1, "one copy per emit");
                dests[0]
            })
            .collect()
    }

    #[test]
    fn a_one_field_fields_route_hashes_inline_and_picks_the_general_paths_tasks() {
        // Three tasks, grouping on the only field: the shortcut, not a fixed task.
        let route = state(RouteKind::Fields(vec![0]), &[5, 7, 9], &[], 0);
        assert_eq!(
            route.fast_route(),
            FastRoute::Field {
                field: 0,
                tasks: vec![5, 7, 9].into_boxed_slice()
            }
        );
        let mut general = router(vec![route.clone_state()], false);
        let mut fast = router(vec![route], true);
        let want: Vec<TaskId> = vec![5, 9, 5, 7, 7, 5];
        assert_eq!(picks(&mut fast), want);
        assert_eq!(picks(&mut general), want, "the general path");
        // An integer field, and a word of every length up to 20 bytes (the hash's tail cases).
        let mut dests = Vec::new();
        for v in (0..20)
            .map(|n| values!["abcdefghijklmnopqrstu"[..n].to_string()])
            .chain((-3..4).map(|i: i64| values![i]))
        {
            fast.route(0, &v, None, &mut dests).unwrap();
            let f = dests.clone();
            general.route(0, &v, None, &mut dests).unwrap();
            assert_eq!(f, dests, "{v:?}");
        }
        // Still refuses a wrong field count, and a direct emit takes the general path.
        assert_eq!(
            fast.route(0, &values![1i64, 2i64], None, &mut dests),
            Err(RouteError::FieldCount {
                expected: 1,
                got: 2
            })
        );
        assert_eq!(
            fast.route(0, &values![1i64], Some(7), &mut dests),
            Err(RouteError::NotDirectTarget(7))
        );
        // Grouping on two fields is not the shortcut.
        let two = state(RouteKind::Fields(vec![0, 1]), &[5, 7], &[], 0);
        assert_eq!(two.fast_route(), FastRoute::General);
    }

    #[test]
    fn a_fixed_route_picks_the_groupings_task_and_still_checks_the_fields() {
        let cases = [
            (state(RouteKind::Shuffle, &[7], &[], 0), Some(7), vec![7; 6]),
            (
                state(RouteKind::Fields(vec![0]), &[7], &[], 0),
                Some(7),
                vec![7; 6],
            ),
            (state(RouteKind::Global, &[7], &[], 0), Some(7), vec![7; 6]),
            (state(RouteKind::All, &[7], &[], 0), Some(7), vec![7; 6]),
            (
                state(RouteKind::LocalOrShuffle, &[5, 7, 9], &[7], 1),
                Some(7),
                vec![7; 6],
            ),
            (
                state(RouteKind::LocalOrShuffle, &[7], &[], 0),
                Some(7),
                vec![7; 6],
            ),
            // Not fixed: the grouping's own work picks.
            (
                state(RouteKind::Shuffle, &[5, 7], &[], 1),
                None,
                vec![7, 5, 7, 5, 7, 5],
            ),
            (
                state(RouteKind::LocalOrShuffle, &[5, 7, 9], &[5, 9], 0),
                None,
                vec![5, 9, 5, 9, 5, 9],
            ),
        ];
        for (route, fixed, want) in cases {
            let kind = route.kind.clone();
            assert_eq!(route.fixed_task(), fixed, "{kind:?}");
            let mut general = router(
                vec![state(kind.clone(), &route.tasks, &route.local, route.next)],
                false,
            );
            let mut fast = router(vec![route], true);
            assert_eq!(picks(&mut fast), want, "{kind:?}");
            assert_eq!(picks(&mut general), want, "{kind:?} on the general path");
            let mut dests = vec![1];
            assert_eq!(
                fast.route(0, &values![1i64, 2i64], None, &mut dests),
                Err(RouteError::FieldCount {
                    expected: 1,
                    got: 2
                }),
                "{kind:?}"
            );
        }
        // A direct subscription is never fixed, and a direct emit takes the general path.
        let direct = state(RouteKind::Direct, &[7], &[], 0);
        assert_eq!(direct.fixed_task(), None);
        let mut r = router(vec![direct], true);
        let mut dests = Vec::new();
        assert_eq!(r.route(0, &values![1i64], None, &mut dests), Ok(()));
        assert!(dests.is_empty());
        assert_eq!(r.route(0, &values![1i64], Some(7), &mut dests), Ok(()));
        assert_eq!(dests, [7]);
        assert_eq!(
            r.route(0, &values![1i64], Some(8), &mut dests),
            Err(RouteError::NotDirectTarget(8))
        );
        // Two subscriptions: two copies, not fixed.
        let mut two = router(
            vec![
                state(RouteKind::Shuffle, &[7], &[], 0),
                state(RouteKind::Global, &[3, 4], &[], 0),
            ],
            true,
        );
        assert_eq!(two.route(0, &values![1i64], None, &mut dests), Ok(()));
        assert_eq!(dests, [7, 3]);
    }
}
