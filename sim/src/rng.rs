//! Seeded random streams.
//!
//! Every random choice of a run comes from its seed: [`stream`] derives an independent
//! xoshiro256++ generator for each purpose (links, faults, each executor...) from the run's seed
//! and a fixed stream number, so adding draws to one purpose never shifts another's.

use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// The generator every stream uses.
pub type SimRng = Xoshiro256PlusPlus;

/// SplitMix64's finaliser: a fixed bijective mix of 64 bits.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A seed for purpose `stream` of the run seeded with `seed` (fixed on every platform).
#[inline]
pub fn derive_seed(seed: u64, stream: u64) -> u64 {
    mix64(seed ^ mix64(stream.wrapping_add(0x1234_5678_9ABC_DEF1)))
}

/// An independent generator for purpose `stream` of the run seeded with `seed`.
pub fn stream(seed: u64, stream: u64) -> SimRng {
    SimRng::seed_from_u64(derive_seed(seed, stream))
}

/// A uniform draw in `0..n` (Lemire's multiply-shift; `n == 0` gives 0).
#[inline(always)]
pub fn below(rng: &mut SimRng, n: u64) -> u64 {
    ((rng.next_u64() as u128 * n as u128) >> 64) as u64
}

/// A uniform draw in `lo..=hi` (`hi < lo` gives `lo`).
#[inline(always)]
pub fn between(rng: &mut SimRng, lo: u64, hi: u64) -> u64 {
    if hi <= lo {
        lo
    } else {
        match (hi - lo).checked_add(1) {
            Some(n) => lo + below(rng, n),
            // `0..=u64::MAX`: every value (the span `hi - lo + 1` would wrap to 0).
            None => rng.next_u64(),
        }
    }
}

/// A uniform draw in `[0, 1)` with 53 bits of precision.
#[inline]
pub fn unit(rng: &mut SimRng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A draw from the standard exponential distribution (mean 1), via `-ln(u)` with `u` in
/// `(0, 1]`; `f64::ln` gives the same result for the same input in every build of this binary.
pub fn exp_unit(rng: &mut SimRng) -> f64 {
    -(1.0 - unit(rng)).ln()
}

/// The gap to the next event of a Poisson process of `per_sec` events per simulated second, in
/// nanoseconds (at least 1). Uses `f64::ln`, whose result is the same for the same input in every
/// build of this binary.
pub fn exp_gap_ns(rng: &mut SimRng, per_sec: f64) -> u64 {
    let gap_s = exp_unit(rng) / per_sec;
    let ns = gap_s * 1e9;
    if ns.is_finite() && ns < 1.8e19 {
        (ns as u64).max(1)
    } else {
        u64::MAX / 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn between_takes_the_whole_range_without_overflow() {
        // `hi - lo + 1` wraps at the full range (a panic in a debug build until 2026-12-03).
        let mut r = stream(1, 2);
        let draws: Vec<u64> = (0..64).map(|_| between(&mut r, 0, u64::MAX)).collect();
        assert!(draws.iter().any(|&d| d > u64::MAX / 2));
        assert!(draws.iter().any(|&d| d < u64::MAX / 2));
        assert_eq!(between(&mut r, u64::MAX, u64::MAX), u64::MAX);
        assert!(between(&mut r, u64::MAX - 1, u64::MAX) >= u64::MAX - 1);
    }

    #[test]
    fn streams_are_fixed_and_independent() {
        let mut a = stream(7, 1);
        let mut b = stream(7, 1);
        let mut c = stream(7, 2);
        let xa: Vec<u64> = (0..4).map(|_| a.next_u64()).collect();
        let xb: Vec<u64> = (0..4).map(|_| b.next_u64()).collect();
        let xc: Vec<u64> = (0..4).map(|_| c.next_u64()).collect();
        assert_eq!(xa, xb);
        assert_ne!(xa, xc);
    }

    #[test]
    fn bounded_draws_stay_in_range() {
        let mut r = stream(1, 1);
        for _ in 0..1000 {
            assert!(below(&mut r, 10) < 10);
            let x = between(&mut r, 5, 7);
            assert!((5..=7).contains(&x));
            let u = unit(&mut r);
            assert!((0.0..1.0).contains(&u));
        }
        assert_eq!(between(&mut r, 9, 3), 9);
    }
}
