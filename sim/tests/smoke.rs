use acker_sim::{Guarantee, Scenario, Sim};

#[test]
fn smoke() {
    for g in Guarantee::ALL {
        let mut sc = Scenario::new(1, g);
        sc.tuples = 5000;
        sc.max_spout_pending = 100;
        for spec in [
            "",
            "acker-crash*2",
            "spout-crash*2",
            "bolt-exception-after-emit*5",
            "bolt-exception-before-emit*5",
            "bolt-crash*2",
            "message-loss*5",
        ] {
            let specs = acker_sim::fault::parse_specs(spec).unwrap();
            sc.set_fault_specs(&specs, 1_000_000_000).unwrap();
            let o = Sim::run(sc.clone(), None).unwrap();
            println!("{g} {spec:30} distinct {} lost {} dups {} events {} end {} fired {} viol {:?} spout {:?}", o.distinct, o.lost, o.duplicates, o.events, o.end_ns, o.fired.len(), o.violations, o.spout);
        }
    }
}
