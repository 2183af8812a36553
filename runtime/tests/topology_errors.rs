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
