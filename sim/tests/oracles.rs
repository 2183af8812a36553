//! The simulator's oracles judged on hand-made histories (issue 16, mutation campaign `fuzz/mutants.sh
//! --target oracles`): the delivery-guarantee oracles over a sink's result, and the generic spout
//! oracles ([`Watch`]) over emits and callbacks, each with the exact violations a reader of a
//! failed run sees. Runtime: well under a second in release mode.

use acker_runtime::{values, Config, Spout, SpoutOutputCollector, TopologyBuilder};
use acker_sim::oracle::{check_end, Watch};
use acker_sim::source::{CallbackError, SinkStore};
use acker_sim::{Callbacks, Guarantee, Unfinished, Violation};

/// A sink of 5 positions whose result holds position 0 three times, 2 once, 4 twice; 1 and 3
/// never (a plain sink, no de-duplication, so the result is what was written).
fn sink() -> SinkStore {
    let mut s = SinkStore::new(5, false);
    for o in [0, 0, 2, 4, 0, 4] {
        s.write(o);
    }
    s
}

#[test]
fn each_guarantee_checks_what_it_promises_with_counts_and_first_positions() {
    let lost = Violation::Lost { count: 2, first: 1 };
    let dup = Violation::Duplicated { count: 3, first: 0 };
    assert_eq!(
        check_end(Guarantee::AtMostOnce, 5, &sink()),
        std::slice::from_ref(&dup)
    );
    assert_eq!(
        check_end(Guarantee::AtLeastOnce, 5, &sink()),
        std::slice::from_ref(&lost)
    );
    assert_eq!(check_end(Guarantee::ExactlyOnce, 5, &sink()), [lost, dup]);
    // Only positions below `tuples` are judged.
    assert_eq!(
        check_end(Guarantee::ExactlyOnce, 1, &sink()),
        [Violation::Duplicated { count: 2, first: 0 }]
    );
    // Every position once: nothing to report under any guarantee.
    let mut once = SinkStore::new(3, false);
    for o in [2, 0, 1] {
        once.write(o);
    }
    for g in [
        Guarantee::AtMostOnce,
        Guarantee::AtLeastOnce,
        Guarantee::ExactlyOnce,
    ] {
        assert_eq!(check_end(g, 3, &once), []);
    }
    // The first missing position is the smallest one, not the last.
    let mut late = SinkStore::new(4, false);
    late.write(0);
    assert_eq!(
        check_end(Guarantee::AtLeastOnce, 4, &late),
        [Violation::Lost { count: 3, first: 1 }]
    );
    // The first duplicated position is the smallest one written more than once, not the first
    // one written at all (mutation campaign: `c >= 1` for `c > 1` reported position 0 here).
    let mut dup_later = SinkStore::new(3, false);
    for o in [0, 1, 2, 1] {
        dup_later.write(o);
    }
    assert_eq!(
        check_end(Guarantee::ExactlyOnce, 3, &dup_later),
        [Violation::Duplicated { count: 1, first: 1 }]
    );
}

#[test]
fn violations_have_stable_classes_and_messages() {
    let cases = [
        (
            Violation::Lost { count: 2, first: 1 },
            "lost",
            "lost: 2 input(s) never reached the sink (first: #1)",
        ),
        (
            Violation::Duplicated { count: 3, first: 0 },
            "duplicated",
            "duplicated: 3 extra record(s) in the sink (first: #0)",
        ),
        (
            Violation::Callback(CallbackError::Twice { msg_id: 4 }),
            "callback",
            "callback: spout emit 4 got a second ack/fail",
        ),
        (
            Violation::TableOverCapacity {
                len: 9,
                capacity: 8,
            },
            "table-over-capacity",
            "acker table holds 9 roots, capacity 8",
        ),
        (
            Violation::Undecided {
                msg_id: 7,
                emit_ns: 10,
                at_ns: 500,
            },
            "undecided",
            "liveness: emit 7 at 10 ns still undecided at 500 ns",
        ),
        (
            Violation::NotFinished {
                limit_ns: 1000,
                uncommitted: 3,
                unfinished: Unfinished::OffsetsUncommitted,
            },
            "not-finished",
            "liveness: run not finished by its limit 1000 ns (3 offsets uncommitted)",
        ),
        // A user topology counts its tracked emits, not offsets (new-user trial: a user
        // topology's 32 undecided emits were printed as "32 offsets uncommitted").
        (
            Violation::NotFinished {
                limit_ns: 1000,
                uncommitted: 32,
                unfinished: Unfinished::EmitsUndecided,
            },
            "not-finished",
            "liveness: run not finished by its limit 1000 ns (32 tracked emits undecided)",
        ),
        (
            Violation::NotAcked {
                component: "s".into(),
                count: 2,
                first: 5,
            },
            "not-acked",
            "at-least-once: reliable spout `s` never saw 2 message id(s) acked (first: 5)",
        ),
        (
            Violation::FailedWithoutFault {
                component: "s".into(),
                msg_id: 3,
            },
            "failed-without-fault",
            "failed-without-fault: spout `s` got a fail for message id 3 though no fault fired, \
             and its tree never completed (an ack was lost inside the system)",
        ),
        (
            Violation::Invariant {
                name: "sum".into(),
                at_ns: 42,
                message: "off by one".into(),
            },
            "invariant",
            "invariant `sum` violated at 42 ns: off by one",
        ),
    ];
    for (v, class, text) in cases {
        assert_eq!((v.class(), v.to_string()), (class, text.to_string()));
    }
}

struct Idle;
impl Spout for Idle {
    fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
        let _ = c.emit(values![1], Some(1));
    }
}

/// Spout "a" (tasks 0, 1) and spout "b" (task 2); "a" is declared reliable; bound 100 ns.
fn watch() -> Watch {
    let mut b = TopologyBuilder::new();
    b.set_spout("a", || Idle, 2).output_fields(&["n"]);
    b.set_spout("b", || Idle, 1).output_fields(&["n"]);
    let plan = b.build().unwrap().plan(&Config::default()).unwrap();
    Watch::new(&plan, &["a".to_string()], Some(100))
}

fn cb(emits: u32, acks: u32, fails: u32) -> Callbacks {
    Callbacks { emits, acks, fails }
}

#[test]
fn a_decision_exactly_at_the_bound_is_in_time_one_ns_later_is_not() {
    let mut w = watch();
    w.emit(0, 1, 0);
    w.emit(0, 2, 0);
    w.emit(1, 3, 5);
    assert_eq!(w.outstanding(), 3);
    w.callback(0, 1, true, 100); // 100 ns after its emit: at the bound, in time
    assert_eq!(w.outstanding(), 2);
    w.callback(1, 3, true, 105); // also exactly at the bound
    w.callback(0, 2, true, 101); // 101 ns: late
    assert_eq!(w.outstanding(), 0);
    assert_eq!(
        w.check_end(1_000),
        [Violation::Undecided {
            msg_id: 2,
            emit_ns: 0,
            at_ns: 101
        }]
    );
}

#[test]
fn at_the_end_the_oldest_undecided_emit_past_the_bound_is_reported() {
    let mut w = watch();
    w.emit(0, 1, 50);
    w.emit(1, 9, 20);
    w.emit(2, 4, 20); // the oldest with 9, and the smaller id: reported
    w.emit(0, 6, 900); // undecided but within the bound at the end
    let v = w.check_end(1_000);
    assert_eq!(
        v,
        [
            Violation::Undecided {
                msg_id: 4,
                emit_ns: 20,
                at_ns: 1_000
            },
            Violation::NotAcked {
                component: "a".into(),
                count: 3,
                first: 1
            },
        ]
    );
    // Exactly at the bound at the end: not reported.
    let mut w = watch();
    w.emit(2, 4, 900);
    assert_eq!(w.check_end(1_000), []);
}

#[test]
fn replays_of_one_id_are_decided_in_emit_order_and_tasks_of_a_component_add_up() {
    let mut w = watch();
    // Id 7 emitted three times by task 0 before any decision (replays), once by task 1.
    w.emit(0, 7, 0);
    w.emit(0, 7, 40);
    w.emit(0, 7, 60);
    w.emit(1, 7, 0);
    assert_eq!(w.outstanding(), 4);
    w.callback(0, 7, false, 90); // the oldest emit (at 0): in time
    w.callback(0, 7, false, 150); // the emit at 40: 110 ns later, past the bound 100
    assert_eq!(w.outstanding(), 2);
    w.callback(0, 7, true, 160);
    w.callback(1, 7, true, 10);
    w.callback(0, 7, true, 170); // a fourth callback for three emits of task 0
    w.callback(2, 8, false, 180); // task 2 never emitted id 8
    assert_eq!(w.outstanding(), 0);
    assert_eq!(
        w.check_end(200),
        [
            Violation::Undecided {
                msg_id: 7,
                emit_ns: 40,
                at_ns: 150
            },
            Violation::Callback(CallbackError::Twice { msg_id: 7 }),
            Violation::Callback(CallbackError::Unknown { msg_id: 8 }),
        ]
    );
    let all = w.callbacks();
    assert_eq!(all.len(), 2);
    let a = &all["a"];
    assert_eq!((a.len(), a.is_empty()), (1, false));
    assert_eq!(a.get(7), Some(&cb(4, 3, 2)));
    assert_eq!(a.get(8), None);
    assert_eq!(a.iter().collect::<Vec<_>>(), [(7, &cb(4, 3, 2))]);
    assert_eq!(all["b"][8], cb(0, 0, 1));
}

#[test]
fn a_crash_forgets_only_the_crashed_tasks_open_emits() {
    let mut w = watch();
    w.emit(0, 1, 0);
    w.emit(0, 1, 10);
    w.emit(1, 2, 0);
    w.crash(0);
    assert_eq!(w.outstanding(), 1);
    // A callback after the crash for a forgotten emit is a callback with no open emit.
    w.callback(0, 1, true, 20);
    w.crash(2); // nothing open: nothing changes
    w.callback(1, 2, true, 30);
    assert_eq!(w.outstanding(), 0);
    assert_eq!(
        w.check_end(1_000),
        [Violation::Callback(CallbackError::Twice { msg_id: 1 })]
    );
    assert_eq!(w.callbacks()["a"].get(1), Some(&cb(2, 1, 0)));
}

#[test]
fn ids_far_apart_and_in_sequence_are_all_kept() {
    let mut w = watch();
    let ids = [0u64, 4095, 4096, 9_000, 1 << 40, 3];
    for (k, &id) in ids.iter().enumerate() {
        w.emit(0, id, k as u64);
    }
    for &id in &ids {
        w.callback(0, id, true, 50);
    }
    assert_eq!(w.check_end(60), []);
    let a = &w.callbacks()["a"];
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    assert_eq!(a.iter().map(|(id, _)| id).collect::<Vec<_>>(), sorted);
    assert!(a.iter().all(|(_, c)| *c == cb(1, 1, 0)));
}

/// Emits and callbacks for a task that is no spout (a bolt's) are ignored, not counted against any
/// spout, and a spout with no message id has empty callbacks. (Mutation campaign:
/// `SpoutCallbacks::is_empty -> false`.)
#[test]
fn a_task_that_is_no_spout_is_ignored_and_a_quiet_spout_has_no_callbacks() {
    let mut b = TopologyBuilder::new();
    b.set_basic_bolt("x", || acker_runtime::bolts::NullBolt, 2)
        .shuffle_grouping("a");
    b.set_spout("a", || Idle, 1).output_fields(&["n"]);
    let plan = b.build().unwrap().plan(&Config::default()).unwrap();
    let task_of = |component: &str| {
        plan.tasks()
            .iter()
            .find(|t| t.component == component)
            .map(|t| t.task)
            .unwrap()
    };
    let (bolt, spout) = (task_of("x"), task_of("a"));
    let mut w = Watch::new(&plan, &["a".to_string()], Some(100));
    assert!(w.callbacks()["a"].is_empty());
    w.emit(bolt, 1, 0);
    w.callback(bolt, 1, true, 10);
    w.callback(bolt, 2, false, 10);
    assert_eq!(w.outstanding(), 0);
    assert_eq!(
        (w.callbacks()["a"].len(), w.callbacks()["a"].is_empty()),
        (0, true)
    );
    assert_eq!(w.check_end(1_000), []);
    w.emit(spout, 1, 0);
    w.callback(spout, 1, true, 10);
    assert_eq!(
        (w.callbacks()["a"].len(), w.callbacks()["a"].is_empty()),
        (1, false)
    );
    assert_eq!(w.check_end(1_000), []);
    // Message ids are the user's: the largest ones work too (they are kept apart from the
    // small sequential ones; mutation campaign: `i + len` for `i - len` in that choice wrapped
    // round and indexed past the end).
    for id in [u64::MAX, u64::MAX - 1] {
        w.emit(spout, id, 20);
        w.callback(spout, id, true, 30);
    }
    let a = &w.callbacks()["a"];
    assert_eq!(a.len(), 3);
    assert_eq!(a.get(u64::MAX), Some(&cb(1, 1, 0)));
    assert_eq!(a.get(u64::MAX - 1), Some(&cb(1, 1, 0)));
    assert_eq!(w.check_end(1_000), []);
}

/// The callbacks of one message id emitted by two tasks of one component are summed, field by
/// field, whichever task's come first. (Mutation campaign: the merge subtracted the second task's
/// fails.)
#[test]
fn callbacks_of_one_id_on_two_tasks_of_a_component_are_summed() {
    let mut w = watch();
    for (task, at) in [(0, 0), (0, 1), (1, 2), (1, 3)] {
        w.emit(task, 5, at);
    }
    w.callback(0, 5, true, 10);
    w.callback(0, 5, false, 10);
    w.callback(1, 5, false, 10);
    w.callback(1, 5, false, 10);
    assert_eq!(w.callbacks()["a"].get(5), Some(&cb(4, 1, 3)));
}

/// At most 100 callback errors are kept (a spout gone wrong would otherwise fill memory with
/// them); the 101st and later are dropped. (Mutation campaign: `<=` for `<` kept 101.)
#[test]
fn at_most_100_callback_errors_are_kept() {
    let mut w = watch();
    for id in 0..150 {
        w.callback(2, 1_000 + id, true, 0);
    }
    let v = w.check_end(0);
    assert_eq!(v.len(), 100);
    assert_eq!(
        v[99],
        Violation::Callback(CallbackError::Unknown { msg_id: 1_099 })
    );
}
