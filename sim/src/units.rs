//! Parsing and printing simulated durations (`250ns`, `30us`, `2ms`, `1.5s`; a bare number is
//! nanoseconds to [`parse_duration_ns`], but every duration of the command line, and every fault
//! time, must name its unit: [`require_unit`]).

/// The longest duration any option takes: 1,000,000 s of simulated time (about 11.6 days), for
/// every duration of [`SimOptions`](crate::SimOptions), [`Scenario`](crate::Scenario) and the
/// command line (latencies, service times, restart delay, partition, outage, message timeout,
/// tick, time limit, `--fault-until`, ...). A longer one is refused before anything runs
/// ([`crate::RunError::BadOption`], [`crate::ScenarioError::DurationTooLong`], or the command
/// line's `is longer than the longest duration taken` message). Far above any useful run (the
/// simulator's defaults are at most 30 s), and far below `u64::MAX` ns (about 584 years): a sum
/// of 18,000 such durations still fits in a `u64`, so the engine's time arithmetic (every
/// `now + duration` saturates at `u64::MAX` besides, meaning "never within the run") cannot wrap.
pub const MAX_DURATION_NS: u64 = 1_000_000 * 1_000_000_000;

/// [`MAX_DURATION_NS`] as the command line writes it.
pub const MAX_DURATION_TEXT: &str = "1000000s";

/// `Err` naming `what` and the bound when `ns` is above [`MAX_DURATION_NS`].
///
/// # Errors
/// `` {what} {ns} is longer than the longest duration taken, 1000000s (about 11.6 days) ``.
pub fn check_max_duration(what: &str, ns: u64) -> Result<(), String> {
    if ns > MAX_DURATION_NS {
        return Err(format!(
            "{what} {} is longer than the longest duration taken, {MAX_DURATION_TEXT} (about \
             11.6 days of simulated time)",
            format_ns(ns)
        ));
    }
    Ok(())
}

/// The units a duration takes, for the message of [`require_unit`].
pub const DURATION_UNITS: &str = "a duration needs one of the units ns, us, ms, s";

/// Refuses a bare number other than 0 (`30`, which could mean seconds as well as nanoseconds),
/// naming it and the units a duration takes; `0` may go without one.
///
/// # Errors
/// `` `30` has no unit; a duration needs one of the units ns, us, ms, s (e.g. 30s or 30ms) ``.
pub fn require_unit(s: &str) -> Result<(), String> {
    let t = s.trim();
    if !t.is_empty() && t.parse::<f64>().is_ok_and(|v| v != 0.0) {
        return Err(format!(
            "`{t}` has no unit; {DURATION_UNITS} (e.g. {t}s or {t}ms)"
        ));
    }
    Ok(())
}

/// Parses a duration into nanoseconds.
///
/// # Errors
/// A message naming the text when it is not a non-negative number with an optional unit `ns`,
/// `us`, `ms` or `s`, or when it overflows `u64` nanoseconds.
pub fn parse_duration_ns(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (num, mult) = if let Some(n) = t.strip_suffix("ns") {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix("us") {
        (n, 1e3)
    } else if let Some(n) = t.strip_suffix("ms") {
        (n, 1e6)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1e9)
    } else {
        (t, 1.0)
    };
    if num.is_empty() || num.starts_with('-') || num.starts_with('+') {
        return Err(format!(
            "`{text}` is not a duration (e.g. 250ns, 30us, 2ms, 1.5s)"
        ));
    }
    if mult == 1.0 {
        if let Ok(n) = num.parse::<u64>() {
            return Ok(n);
        }
    }
    let v: f64 = num
        .parse()
        .map_err(|_| format!("`{text}` is not a duration (e.g. 250ns, 30us, 2ms, 1.5s)"))?;
    let ns = (v * mult).round();
    if !ns.is_finite() || ns < 0.0 || ns > u64::MAX as f64 / 2.0 {
        return Err(format!("duration `{text}` is out of range"));
    }
    Ok(ns as u64)
}

/// Prints nanoseconds exactly, in the largest unit that divides them (`1500ms`, `2s`, `7ns`),
/// so [`parse_duration_ns`] reads it back to the same value.
pub fn format_ns(ns: u64) -> String {
    if ns == 0 {
        "0ns".into()
    } else if ns.is_multiple_of(1_000_000_000) {
        format!("{}s", ns / 1_000_000_000)
    } else if ns.is_multiple_of(1_000_000) {
        format!("{}ms", ns / 1_000_000)
    } else if ns.is_multiple_of(1_000) {
        format!("{}us", ns / 1_000)
    } else {
        format!("{ns}ns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse_duration_ns("250"), Ok(250));
        assert_eq!(parse_duration_ns("250ns"), Ok(250));
        assert_eq!(parse_duration_ns("30us"), Ok(30_000));
        assert_eq!(parse_duration_ns("2ms"), Ok(2_000_000));
        assert_eq!(parse_duration_ns("1.5s"), Ok(1_500_000_000));
        assert!(parse_duration_ns("-1s").is_err());
        assert!(parse_duration_ns("abc").is_err());
        assert!(parse_duration_ns("").is_err());
    }

    #[test]
    fn formats_round_trip() {
        for ns in [0, 7, 1_000, 1_500_000, 2_000_000_000, 123_456_789] {
            assert_eq!(parse_duration_ns(&format_ns(ns)), Ok(ns));
        }
    }
}
