//! The liveness bound accounts for link latency: a fault-free run whose throughput is limited by
//! max spout pending and slow links is not reported as unfinished. Found by the `sim_schedule`
//! fuzz target (a false `NotFinished` + `Lost` with the bound of 100 µs per tuple).

use acker_sim::{Guarantee, Scenario, Sim};

const MS: u64 = 1_000_000;

#[test]
fn slow_links_and_one_pending_tuple_finish_within_the_bound() {
    let mut sc = Scenario::new(13837941246414241599, Guarantee::AtLeastOnce);
    sc.tuples = 272;
    sc.max_spout_pending = 1;
    sc.bolts = 2;
    sc.message_timeout_ns = 132 * MS;
    sc.tick_interval_ns = 26_400_000;
    sc.restart_delay_ns = 8_250_000;
    sc.partition_ns = 264 * MS;
    sc.latency_min_ns = 6_496_875;
    sc.latency_max_ns = 12_065_625;
    let outcome = Sim::run(sc, None).unwrap();
    assert!(outcome.ok(), "violations: {:?}", outcome.violations);
    assert_eq!(outcome.lost, 0);
}

#[test]
fn the_bound_grows_with_latency_over_max_spout_pending() {
    let mut sc = Scenario::new(1, Guarantee::AtLeastOnce);
    sc.tuples = 1000;
    sc.max_spout_pending = 1;
    sc.latency_max_ns = 10 * MS;
    let slow = sc.time_limit_ns();
    sc.max_spout_pending = 1000;
    let wide = sc.time_limit_ns();
    // 1000 tuples, one at a time, each at least six 10 ms hops: at least 60 s.
    assert!(slow >= 60_000 * MS, "{slow}");
    assert!(wide < slow);
}
