//! Every [`TopologyError`] and [`ConfigError`] variant, from the declarations that cause it.

use acker_runtime::{
    BasicBolt, BasicOutputCollector, Config, ConfigError, FailedException, Input, Spout,
    SpoutOutputCollector, TopologyBuilder, TopologyError,
};

struct S;
impl Spout for S {
    fn next_tuple(&mut self, _c: &mut SpoutOutputCollector<'_>) {}
}
struct B;
impl BasicBolt for B {
    fn execute(
        &mut self,
        _i: &Input,
        _c: &mut BasicOutputCollector<'_, '_>,
    ) -> Result<(), FailedException> {
        Ok(())
    }
}

fn base() -> TopologyBuilder {
    let mut b = TopologyBuilder::new();
    b.set_spout("s", || S, 1)
        .output_fields(&["a", "b"])
        .output_stream("side", &["c"]);
    b
}

#[test]
fn valid_topology_builds_with_task_layout() {
    let mut b = base();
    b.set_basic_bolt("x", || B, 3)
        .fields_grouping("s", &["b", "a"])
        .grouping("s", "side", acker_runtime::Grouping::All);
    let t = b.build().unwrap();
    assert_eq!(t.num_tasks(), 4);
    assert_eq!(t.component_ids(), vec!["s".to_string(), "x".to_string()]);
    assert_eq!(t.stream_fields("s", "side"), Some(vec!["c".to_string()]));
    let plan = t
        .plan(&Config {
            num_ackers: 2,
            ..Config::default()
        })
        .unwrap();
    assert_eq!(plan.acker_tasks(), 4..6);
    assert_eq!(plan.tasks()[5].component, "__acker");
}

#[test]
fn duplicate_component() {
    let mut b = base();
    b.set_basic_bolt("s", || B, 1).shuffle_grouping("s");
    assert_eq!(
        b.build().unwrap_err(),
        TopologyError::DuplicateComponent("s".into())
    );
    let mut b = base();
    b.set_basic_bolt("__acker", || B, 1).shuffle_grouping("s");
    assert_eq!(
        b.build().unwrap_err(),
        TopologyError::DuplicateComponent("__acker".into())
    );
}

#[test]
fn zero_parallelism() {
    let mut b = base();
    b.set_basic_bolt("x", || B, 0).shuffle_grouping("s");
    assert_eq!(
        b.build().unwrap_err(),
        TopologyError::ZeroParallelism("x".into())
    );
}

#[test]
fn unknown_component() {
    let mut b = base();
    b.set_basic_bolt("x", || B, 1).shuffle_grouping("nope");
    assert_eq!(
        b.build().unwrap_err(),
        TopologyError::UnknownComponent {
            bolt: "x".into(),
            source: "nope".into()
        }
    );
}

#[test]
fn unknown_stream() {
    let mut b = base();
    b.set_basic_bolt("x", || B, 1)
        .grouping("s", "missing", acker_runtime::Grouping::Shuffle);
    assert_eq!(
        b.build().unwrap_err(),
        TopologyError::UnknownStream {
            bolt: "x".into(),
            source: "s".into(),
            stream: "missing".into()
        }
    );
    // A bolt that declares no stream cannot be subscribed to.
    let mut b = base();
    b.set_basic_bolt("x", || B, 1).shuffle_grouping("s");
    b.set_basic_bolt("y", || B, 1).shuffle_grouping("x");
    assert_eq!(
        b.build().unwrap_err(),
        TopologyError::UnknownStream {
            bolt: "y".into(),
            source: "x".into(),
            stream: "default".into()
        }
    );
}

#[test]
fn undeclared_field() {
    let mut b = base();
    b.set_basic_bolt("x", || B, 1)
        .fields_grouping("s", &["a", "zz"]);
    assert_eq!(
        b.build().unwrap_err(),
        TopologyError::UndeclaredField {
            bolt: "x".into(),
            source: "s".into(),
            stream: "default".into(),
            field: "zz".into()
        }
    );
    let mut b = base();
    b.set_basic_bolt("x", || B, 1).fields_grouping("s", &[]);
    assert!(matches!(
        b.build().unwrap_err(),
        TopologyError::UndeclaredField { field, .. } if field.is_empty()
    ));
}

#[test]
fn duplicate_stream() {
    let mut b = TopologyBuilder::new();
    b.set_spout("s", || S, 1)
        .output_fields(&["a"])
        .output_stream("default", &["b"]);
    assert_eq!(
        b.build().unwrap_err(),
        TopologyError::DuplicateStream {
            component: "s".into(),
            stream: "default".into()
        }
    );
}

#[test]
fn no_spout() {
    let mut b = TopologyBuilder::new();
    b.set_basic_bolt("x", || B, 1);
    assert_eq!(b.build().unwrap_err(), TopologyError::NoSpout);
}

#[test]
fn too_many_tasks() {
    let mut b = base();
    b.set_basic_bolt("x", || B, 70_000).shuffle_grouping("s");
    assert_eq!(b.build().unwrap_err(), TopologyError::TooManyTasks);
    // Close to the limit, the ackers push it over.
    let mut b = base();
    b.set_basic_bolt("x", || B, 65_000).shuffle_grouping("s");
    let t = b.build().unwrap();
    let e = t.plan(&Config {
        num_ackers: 1000,
        ..Config::default()
    });
    assert_eq!(e.unwrap_err(), ConfigError::TooManyTasks);
}

#[test]
fn config_errors_and_warning() {
    let t = base().build().unwrap();
    let bad = |c: Config| t.plan(&c).unwrap_err();
    assert_eq!(
        bad(Config {
            max_spout_pending: Some(0),
            ..Config::default()
        }),
        ConfigError::ZeroMaxSpoutPending
    );
    assert_eq!(
        bad(Config {
            message_timeout_ns: 0,
            ..Config::default()
        }),
        ConfigError::ZeroTimeout
    );
    assert_eq!(
        bad(Config {
            tick_interval_ns: 0,
            ..Config::default()
        }),
        ConfigError::ZeroTickInterval
    );
    assert_eq!(
        bad(Config {
            acker_capacity_roots: Some(0),
            ..Config::default()
        }),
        ConfigError::ZeroCapacity
    );
    // Ignored since inputs keep their own state (no per-bolt table to size).
    assert!(t
        .plan(&Config {
            max_open_inputs: 0,
            ..Config::default()
        })
        .is_ok());
    // Storm's defaults.
    let d = Config::default();
    assert_eq!(d.message_timeout_ns, 30_000_000_000);
    assert!(d.enable_message_timeouts);
    assert_eq!(d.max_spout_pending, None);
    assert!(d.warnings().is_empty());
    let w = Config {
        enable_message_timeouts: false,
        max_spout_pending: Some(10),
        ..Config::default()
    };
    assert_eq!(w.warnings().len(), 1);
    assert!(w.warnings()[0].contains("timeouts are off"));
    assert!(w.warnings()[0].contains("all 10 slots (max spout pending)"));
    // Also with max spout pending unset (the issue: no warning before).
    let w = Config {
        enable_message_timeouts: false,
        ..Config::default()
    };
    assert_eq!(w.warnings().len(), 1);
    assert!(w.warnings()[0].contains("all 16384 slots (max spout pending, unset: the default cap)"));
    // No acking, nothing pending: no warning.
    let w = Config {
        enable_message_timeouts: false,
        num_ackers: 0,
        ..Config::default()
    };
    assert!(w.warnings().is_empty());
}

/// The task limit at its edge, with exact values (new-user trial: 65,536 tasks were refused
/// while the error said "more than 65536"): `MAX_TASKS` is 65,535 (task ids 0 to 65,534; the id
/// 65,535 is reserved because a component's tasks are a half-open `Range<TaskId>` whose end
/// must fit in a `u16`). 65,535 tasks build and plan, and the last component's range ends at
/// 65,535; 65,536 and 65,537 are refused, by `build` for components and by `plan` when ackers
/// push the total over, each with the message naming the limit and the reserved id.
#[test]
fn the_task_limit_is_65535_and_names_the_reserved_id() {
    assert_eq!(acker_runtime::topology::MAX_TASKS, 65_535);
    let topology = |tasks: usize| {
        let mut b = base();
        b.set_basic_bolt("x", || B, tasks - 1).shuffle_grouping("s");
        b.build()
    };
    let t = topology(65_535).expect("65,535 tasks");
    assert_eq!(t.num_tasks(), 65_535);
    let plan = t
        .plan(&Config {
            num_ackers: 0,
            ..Config::default()
        })
        .expect("65,535 tasks and no acker");
    assert_eq!(plan.tasks().len(), 65_535);
    assert_eq!(plan.tasks().last().map(|t| t.task), Some(65_534));
    for tasks in [65_536, 65_537] {
        let e = topology(tasks).unwrap_err();
        assert_eq!(e, TopologyError::TooManyTasks, "{tasks}");
        assert_eq!(
            e.to_string(),
            "topology has more than 65535 tasks (task ids 0 to 65534; the id 65535 is reserved: \
             a component's tasks are a half-open range of 16-bit task ids whose end must fit in \
             one) or a component with more than 65535 streams"
        );
    }
    // With ackers: 65,534 tasks + 1 acker fit; + 2 or + 3 do not.
    let t = topology(65_534).expect("65,534 tasks");
    let with = |ackers: usize| {
        t.plan(&Config {
            num_ackers: ackers,
            ..Config::default()
        })
    };
    let plan = with(1).expect("65,534 tasks and 1 acker");
    assert_eq!(plan.acker_tasks(), 65_534..65_535);
    for ackers in [2, 3] {
        let e = with(ackers).unwrap_err();
        assert_eq!(e, ConfigError::TooManyTasks, "{ackers}");
        assert_eq!(
            e.to_string(),
            "tasks plus ackers exceed 65535 (task ids 0 to 65534; the id 65535 is reserved: a \
             component's tasks are a half-open range of 16-bit task ids whose end must fit in \
             one)"
        );
    }
}

/// New-user trial: `set_spout("", ..)` built, and so did a stream declaring a field twice
/// (Storm's `Fields` refuses it; a fields grouping on the name would be ambiguous).
#[test]
fn an_empty_component_id_and_a_repeated_field_are_refused() {
    let mut b = TopologyBuilder::new();
    b.set_spout("", || S, 1).output_fields(&["n"]);
    assert_eq!(b.build().unwrap_err(), TopologyError::EmptyComponentId);

    let mut b = TopologyBuilder::new();
    b.set_spout("s", || S, 1)
        .output_fields(&["a"])
        .output_stream("side", &["n", "m", "n"]);
    let e = b.build().unwrap_err();
    assert_eq!(
        e,
        TopologyError::DuplicateField {
            component: "s".into(),
            stream: "side".into(),
            field: "n".into()
        }
    );
    assert_eq!(
        e.to_string(),
        "component \"s\" declares field \"n\" twice on stream \"side\""
    );
}

/// New-user trial: `max_spout_pending: Some(usize::MAX)` (a Storm user's "unbounded") planned,
/// then `shell::run` failed with `Panicked("capacity overflow")` and `LocalShell::new` panicked
/// (2^40) or aborted the process (10^8 under a `ulimit -v`). The bounds are refused at plan time,
/// at exactly the documented limits.
#[test]
fn pending_and_acker_capacities_past_their_bounds_are_refused_at_plan_time() {
    use acker_runtime::{MAX_ACKER_CAPACITY_ROOTS, MAX_PENDING_CAPACITY};
    let t = base().build().unwrap();
    let plan = |c: Config| t.plan(&c);
    for n in [MAX_PENDING_CAPACITY + 1, 1 << 40, usize::MAX] {
        let e = plan(Config {
            max_spout_pending: Some(n),
            ..Config::default()
        })
        .unwrap_err();
        assert_eq!(e, ConfigError::MaxSpoutPendingTooLarge, "{n}");
        assert!(e.to_string().contains("at most 16777216"), "{e}");
    }
    for n in [MAX_ACKER_CAPACITY_ROOTS + 1, usize::MAX] {
        let e = plan(Config {
            acker_capacity_roots: Some(n),
            ..Config::default()
        })
        .unwrap_err();
        assert_eq!(e, ConfigError::AckerCapacityTooLarge, "{n}");
    }
    // The roots an acker remembers as failed: the same bound, refused by name.
    for n in [MAX_ACKER_CAPACITY_ROOTS + 1, usize::MAX] {
        let e = plan(Config {
            acker_recently_failed_roots: Some(n),
            ..Config::default()
        })
        .unwrap_err();
        assert_eq!(e, ConfigError::RecentlyFailedRootsTooLarge, "{n}");
        assert!(
            e.to_string()
                .contains("remembers as failed must be at most 100000000"),
            "{e}"
        );
    }
    for (ackers, n) in [(1, 65_536), (4, 16_384), (2_000, 64)] {
        let p = plan(Config {
            num_ackers: ackers,
            ..Config::default()
        })
        .unwrap();
        assert_eq!(p.recently_failed_capacity(), n, "{ackers} ackers");
    }
    let p = plan(Config {
        acker_recently_failed_roots: Some(0),
        ..Config::default()
    })
    .unwrap();
    assert_eq!(p.recently_failed_capacity(), 0);
    // At the bounds: planned, and the default acker capacity stays within its bound.
    let p = plan(Config {
        max_spout_pending: Some(MAX_PENDING_CAPACITY),
        ..Config::default()
    })
    .unwrap();
    assert_eq!(p.acker_capacity_roots(), 4 * MAX_PENDING_CAPACITY);
    // Three spout tasks at the bound would default to 120M roots an acker: capped.
    let mut b = TopologyBuilder::new();
    b.set_spout("s", || S, 3).output_fields(&["a"]);
    let p = b
        .build()
        .unwrap()
        .plan(&Config {
            max_spout_pending: Some(MAX_PENDING_CAPACITY),
            ..Config::default()
        })
        .unwrap();
    assert_eq!(p.acker_capacity_roots(), MAX_ACKER_CAPACITY_ROOTS);
    assert!(plan(Config {
        acker_capacity_roots: Some(MAX_ACKER_CAPACITY_ROOTS),
        ..Config::default()
    })
    .is_ok());
}
