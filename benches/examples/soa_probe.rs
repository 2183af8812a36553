//! Measuring aid for issue 15's table goal at small windows: what would a structure-of-arrays
//! bucket with an AVX2 compare of its four root ids buy over `AckerTable`'s 20-byte slots?
//!
//! ```text
//! cargo run --release -p acker-benches --example soa_probe -- --windows 1000,100000 --reps 5
//! ```
//!
//! The probe is a sketch, not a table to ship: a two-bucket cuckoo table of the same 20 bytes a
//! slot (a bucket is four root ids, then four ack vals, then four meta words: 80 bytes), hashed
//! as `AckerTable` hashes, with the fast paths of `AckerTable`'s ack and init (the same
//! decisions), each bucket scanned by one `vpcmpeqq` and one `vmovmskpd`. It leaves out what
//! the workload never reaches (expiry, fails, resets, overflow entries, the full table): its
//! figure is an upper bound on what the layout alone would give. For each window it times, in
//! turn, `AckerTable::apply_batch` and the probe on the op stream of `acker-bench compare` (same
//! generator, seed 7, k = 4 acks a tree, tables sized for load 0.8), checks that both report
//! the stream's completions, and prints the median Mops/s of `--reps` repetitions and their
//! ratio. Wall-clock times: run it on an idle machine. Needs AVX2 (exits with a message
//! otherwise).

#[cfg(target_arch = "x86_64")]
mod probe {
    use acker_benches::compare::capacity_for_window;
    use acker_benches::workload::{Workload, WorkloadConfig};
    use acker_core::{AckerMessage, AckerTable, Decision, Slot};
    use clap::Parser;
    use std::time::Instant;

    /// Command-line arguments (see the module docs).
    #[derive(Parser)]
    struct Args {
        /// Windows (roots in flight), comma-separated, each 1 to 10,000,000.
        #[arg(long, value_delimiter = ',', default_values_t = [1000usize, 100_000])]
        windows: Vec<usize>,
        /// Timed messages a window (1,000 to 100,000,000).
        #[arg(long, default_value_t = 8_000_000, value_parser = clap::value_parser!(u64).range(1_000..=100_000_000))]
        ops: u64,
        /// Repetitions per figure; the median is printed (1 to 99).
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=99))]
        reps: u64,
    }

    const HAS_TASK: u32 = 1 << 16;
    const FAILED: u32 = 1 << 17;
    const TASK_MASK: u32 = 0xFFFF;
    const FIB: u64 = 0x9E37_79B9_7F4A_7C15;

    /// Four slots, fields grouped: the four root ids are one 32-byte vector.
    #[derive(Clone, Copy)]
    #[repr(C, align(16))]
    struct Bucket {
        roots: [u64; 4],
        ack_vals: [u64; 4],
        metas: [u32; 4],
    }

    const EMPTY: Bucket = Bucket {
        roots: [0; 4],
        ack_vals: [0; 4],
        metas: [0; 4],
    };

    /// The two buckets of `root` among `nb`, as `AckerTable` computes them.
    #[inline(always)]
    fn buckets_of(root: u64, nb: usize) -> (usize, usize) {
        let p = root.wrapping_mul(FIB) as u128 * nb as u128;
        let b1 = (p >> 64) as usize;
        let b2 = ((p as u64 as u128 * nb as u128) >> 64) as usize;
        if b2 != b1 {
            (b1, b2)
        } else if b1 + 1 < nb {
            (b1, b1 + 1)
        } else {
            (b1, 0)
        }
    }

    struct Probe {
        buckets: Vec<Bucket>,
        len: usize,
        /// The random walk's xorshift state.
        walk: u64,
    }

    impl Probe {
        fn new(slots: usize) -> Self {
            let nb = slots.div_ceil(4).max(2);
            Probe {
                buckets: vec![EMPTY; nb],
                len: 0,
                walk: 0x9E37_79B9_7F4A_7C15,
            }
        }

        /// Bit `k` set when lane `k` of `b` holds `root` (AVX2).
        #[inline(always)]
        fn lanes(b: &Bucket, root: u64) -> u32 {
            use core::arch::x86_64::*;
            // SAFETY: called only from `apply_all_avx2`, which runs only once AVX2 was detected;
            // the load reads the bucket's own 32 bytes of root ids (unaligned load allowed).
            unsafe {
                let v = _mm256_loadu_si256(b.roots.as_ptr().cast());
                let r = _mm256_set1_epi64x(root as i64);
                _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(v, r))) as u32
            }
        }

        #[inline(always)]
        fn ack(&mut self, root: u64, xor: u64) -> Decision {
            let nb = self.buckets.len();
            let (b1, b2) = buckets_of(root, nb);
            let m =
                Self::lanes(&self.buckets[b1], root) | Self::lanes(&self.buckets[b2], root) << 4;
            if m == 0 || root == 0 {
                return self.create_untasked(root, xor, b1, b2);
            }
            let k = m.trailing_zeros() as usize;
            let b = core::hint::select_unpredictable(k < 4, b1, b2);
            let lane = k & 3;
            let bucket = &mut self.buckets[b];
            let ack_val = bucket.ack_vals[lane] ^ xor;
            bucket.ack_vals[lane] = ack_val;
            let meta = bucket.metas[lane];
            if meta & HAS_TASK == 0 {
                return Decision::Pending;
            }
            let spout_task = (meta & TASK_MASK) as u16;
            let d = if ack_val == 0 {
                Decision::Completed { spout_task }
            } else if meta & FAILED != 0 {
                Decision::Failed { spout_task }
            } else {
                return Decision::Pending;
            };
            bucket.roots[lane] = 0;
            bucket.ack_vals[lane] = 0;
            bucket.metas[lane] = 0;
            self.len -= 1;
            d
        }

        #[inline(always)]
        fn init(&mut self, root: u64, xor: u64, task: u16) -> Decision {
            let nb = self.buckets.len();
            let (b1, b2) = buckets_of(root, nb);
            let (x, y) = (&self.buckets[b1], &self.buckets[b2]);
            let present = Self::lanes(x, root) | Self::lanes(y, root);
            let free = Self::lanes(x, 0) | Self::lanes(y, 0) << 4;
            if present != 0 || free == 0 || xor == 0 {
                return self.init_slow(root, xor, task, b1, b2);
            }
            let k = free.trailing_zeros() as usize;
            let b = core::hint::select_unpredictable(k < 4, b1, b2);
            let lane = k & 3;
            let bucket = &mut self.buckets[b];
            bucket.roots[lane] = root;
            bucket.ack_vals[lane] = xor;
            bucket.metas[lane] = HAS_TASK | task as u32;
            self.len += 1;
            Decision::Pending
        }

        /// Where `root` is, as (bucket, lane).
        fn find(&self, root: u64, b1: usize, b2: usize) -> Option<(usize, usize)> {
            for b in [b1, b2] {
                if let Some(l) = self.buckets[b].roots.iter().position(|&r| r == root) {
                    return Some((b, l));
                }
            }
            None
        }

        /// Puts the entry `(root, ack_val, meta)` in a free lane of `b1` or `b2`, or, both full, in
        /// `b1` by a random walk of moves (each evicted resident goes to its other bucket, evicting
        /// one there in turn when that is full too); returns where the entry ended up.
        #[inline(never)]
        fn place(&mut self, entry: (u64, u64, u32), b1: usize, b2: usize) -> (usize, usize) {
            for b in [b1, b2] {
                if let Some(l) = self.buckets[b].roots.iter().position(|&r| r == 0) {
                    let bucket = &mut self.buckets[b];
                    (bucket.roots[l], bucket.ack_vals[l], bucket.metas[l]) = entry;
                    self.len += 1;
                    return (b, l);
                }
            }
            let nb = self.buckets.len();
            let (mut carried, mut b) = (entry, b1);
            for _ in 0..10_000 {
                self.walk = self.walk ^ (self.walk << 13) ^ (self.walk >> 7) ^ (self.walk << 17);
                let l = (self.walk % 4) as usize;
                let bucket = &mut self.buckets[b];
                let evicted = (bucket.roots[l], bucket.ack_vals[l], bucket.metas[l]);
                (bucket.roots[l], bucket.ack_vals[l], bucket.metas[l]) = carried;
                let (c1, c2) = buckets_of(evicted.0, nb);
                b = if c1 == b { c2 } else { c1 };
                if let Some(fl) = self.buckets[b].roots.iter().position(|&r| r == 0) {
                    let dst = &mut self.buckets[b];
                    (dst.roots[fl], dst.ack_vals[fl], dst.metas[fl]) = evicted;
                    self.len += 1;
                    return self.find(entry.0, b1, b2).expect("the entry just placed");
                }
                carried = evicted;
            }
            panic!("soa_probe: no room after 10,000 moves (the probe sizes tables for load 0.8)");
        }

        #[inline(never)]
        fn create_untasked(&mut self, root: u64, xor: u64, b1: usize, b2: usize) -> Decision {
            self.place((root, xor, 0), b1, b2);
            Decision::Pending
        }

        #[inline(never)]
        fn init_slow(&mut self, root: u64, xor: u64, task: u16, b1: usize, b2: usize) -> Decision {
            let (b, l) = match self.find(root, b1, b2) {
                Some(at) => at,
                None => self.place((root, 0, 0), b1, b2),
            };
            let bucket = &mut self.buckets[b];
            bucket.ack_vals[l] ^= xor;
            bucket.metas[l] = (bucket.metas[l] & !TASK_MASK) | HAS_TASK | task as u32;
            if bucket.ack_vals[l] == 0 {
                bucket.roots[l] = 0;
                bucket.metas[l] = 0;
                self.len -= 1;
                return Decision::Completed { spout_task: task };
            }
            Decision::Pending
        }

        /// Applies `messages` in order, counting completions; prefetches both buckets of the
        /// message 8 places ahead in tables of 1 MiB or more, 16 from 8 MiB, as `apply_batch`
        /// does.
        #[target_feature(enable = "avx2,bmi1")]
        fn apply_all_avx2(&mut self, messages: &[AckerMessage]) -> usize {
            let bytes = self.buckets.len() * 80;
            let far = bytes >= 1 << 20;
            let ahead = if bytes >= 8 << 20 { 16 } else { 8 };
            let mut completed = 0;
            for (i, m) in messages.iter().enumerate() {
                if far {
                    if let Some(a) = messages.get(i + ahead) {
                        let (b1, b2) = buckets_of(a.root(), self.buckets.len());
                        for b in [b1, b2] {
                            use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                            // A cache hint only (never faults, reads nothing into the program).
                            let p = core::ptr::from_ref(&self.buckets[b]).cast::<i8>();
                            _mm_prefetch::<_MM_HINT_T0>(p);
                            _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(79));
                        }
                    }
                }
                let d = match *m {
                    AckerMessage::Ack { root, xor } => self.ack(root, xor),
                    AckerMessage::Init {
                        root,
                        xor,
                        spout_task,
                    } => self.init(root, xor, spout_task),
                    _ => Decision::Pending,
                };
                completed += matches!(d, Decision::Completed { .. }) as usize;
            }
            completed
        }
    }

    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }

    pub fn main() {
        let args = Args::parse();
        if !std::arch::is_x86_feature_detected!("avx2")
            || !std::arch::is_x86_feature_detected!("bmi1")
        {
            eprintln!("soa_probe: this CPU has no AVX2/BMI1; the probe needs both");
            std::process::exit(2);
        }
        if let Some(w) = args.windows.iter().find(|w| !(1..=10_000_000).contains(*w)) {
            eprintln!("soa_probe: --windows takes 1 to 10,000,000 (got {w})");
            std::process::exit(2);
        }
        println!("window   acker-core Mops/s   soa-avx2 Mops/s   soa ÷ acker-core");
        for &w in &args.windows {
            let workload = Workload::generate(WorkloadConfig::new(w, args.ops as usize, 7));
            let slots = capacity_for_window(w);
            let (mut ours, mut probe) = (Vec::new(), Vec::new());
            for _ in 0..args.reps {
                let mut table = AckerTable::new(vec![Slot::EMPTY; slots], u64::MAX / 4).unwrap();
                table.apply_batch(&workload.prefill, |_, _| {});
                let mut completed = 0usize;
                let t = Instant::now();
                table.apply_batch(&workload.ops, |_, r| {
                    completed += matches!(r, Ok(Decision::Completed { .. })) as usize
                });
                ours.push(workload.ops.len() as f64 / t.elapsed().as_secs_f64() / 1e6);
                assert_eq!(completed, workload.completions, "acker-core's completions");

                let mut p = Probe::new(slots);
                // SAFETY: AVX2 and BMI1 were detected above.
                unsafe { p.apply_all_avx2(&workload.prefill) };
                let t = Instant::now();
                // SAFETY: as above.
                let completed = unsafe { p.apply_all_avx2(&workload.ops) };
                probe.push(workload.ops.len() as f64 / t.elapsed().as_secs_f64() / 1e6);
                assert_eq!(completed, workload.completions, "the probe's completions");
                assert_eq!(
                    p.len, workload.final_in_flight,
                    "the probe's roots in flight"
                );
            }
            let (a, b) = (median(ours), median(probe));
            println!("{w:>8}   {a:>17.2}   {b:>15.2}   {:>16.2}", b / a);
        }
    }
}

fn main() {
    #[cfg(target_arch = "x86_64")]
    probe::main();
    #[cfg(not(target_arch = "x86_64"))]
    {
        eprintln!("soa_probe: x86_64 only (it measures an AVX2 bucket compare)");
        std::process::exit(2);
    }
}
