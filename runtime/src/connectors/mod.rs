//! Connectors: the shell's edge, where a topology meets real servers. The executors stay pure;
//! the network I/O lives in these user components (a spout and a bolt), which run on the core
//! threads like any other spout or bolt.
//!
//! | module | feature | what it holds |
//! | --- | --- | --- |
//! | [`redis_stream`] | `redis` | the reliable Redis Streams spout (consumer group, `XREADGROUP`/`XACK`, retries counted by the server, dead letters, takeover of idle entries) |
//! | [`postgres_sink`] | `postgres` | the PostgreSQL sink bolt (`word_counts`, batched transactions, exactly-once records) |
//! | [`wordcount`] | both | `acker-run wordcount --redis ... --postgres ...`, `acker-run load`, `acker-run counts` |
//! | [`local`] | both | private `redis-server` and PostgreSQL for tests and demos |
//!
//! Both features are on by default. Loom builds use `--no-default-features` (the PostgreSQL
//! client pulls in tokio, which does not build under `--cfg loom`).

#[cfg(all(feature = "redis", feature = "postgres"))]
pub mod local;
#[cfg(feature = "postgres")]
pub mod postgres_sink;
#[cfg(feature = "redis")]
pub mod redis_stream;
#[cfg(all(feature = "redis", feature = "postgres"))]
pub mod wordcount;

/// A server URL given on the command line that does not parse, found before any connection
/// attempt ([`redis_stream::check_url`], [`postgres_sink::check_url`]). Its `Display` says which
/// option, what is wrong and what a good URL looks like; `acker-run` reports it as a bad
/// argument (exit status 2).
#[cfg(any(feature = "redis", feature = "postgres"))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadUrl {
    /// The option that gave it: `--redis` or `--postgres`.
    pub option: &'static str,
    /// The URL as given (its `Display` hides a password in it: [`redact_password`]).
    pub url: String,
    /// What is wrong with it (e.g. "it has no scheme (it must start with redis://)").
    pub reason: String,
    /// The server it is for: `Redis` or `PostgreSQL`.
    pub server: &'static str,
    /// A good URL (`redis_stream::URL_EXAMPLE`, `postgres_sink::URL_EXAMPLE`).
    pub example: &'static str,
    /// The forms the client accepts, in words.
    pub forms: &'static str,
}

#[cfg(any(feature = "redis", feature = "postgres"))]
impl std::fmt::Display for BadUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {:?} is not a {} URL: {}; give one like {} ({})",
            self.option,
            redact_password(&self.url),
            self.server,
            self.reason,
            self.example,
            self.forms
        )
    }
}

#[cfg(any(feature = "redis", feature = "postgres"))]
impl std::error::Error for BadUrl {}

#[cfg(any(feature = "redis", feature = "postgres"))]
impl From<BadUrl> for crate::cli::CliError {
    fn from(e: BadUrl) -> Self {
        // A malformed URL is a bad argument (found before any connection attempt).
        crate::cli::CliError::Usage(e.to_string())
    }
}

/// `url` as it may be shown in a message: a password in it (`scheme://user:PASSWORD@host...`, a
/// `password=...` query parameter of a URL, or a `password=...` pair of a PostgreSQL key=value
/// string) replaced by `***`; anything else unchanged.
pub fn redact_password(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://") {
        let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(authority_end);
        let authority = match authority.rsplit_once('@') {
            Some((userinfo, host)) => match userinfo.split_once(':') {
                Some((user, _password)) => format!("{user}:***@{host}"),
                None => authority.to_string(),
            },
            None => authority.to_string(),
        };
        return format!("{scheme}://{authority}{}", redact_query_password(tail));
    }
    redact_keyword_value_password(url)
}

/// A PostgreSQL key=value connection string with the value of its `password` keyword replaced by
/// `***`, read as libpq reads it: spaces around `=` are optional, a value is either a run of
/// non-space characters or single-quoted (may hold spaces), and `\` escapes the next character
/// in either. An unterminated quote runs to the end, so a malformed password is hidden whole.
fn redact_keyword_value_password(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.char_indices().peekable();
    while let Some(&(start, c)) = chars.peek() {
        if c.is_whitespace() {
            out.push(c);
            chars.next();
            continue;
        }
        // The keyword: up to whitespace or '='.
        let mut end = start;
        while let Some(&(i, c)) = chars.peek() {
            if c.is_whitespace() || c == '=' {
                break;
            }
            end = i + c.len_utf8();
            chars.next();
        }
        let keyword = &s[start..end];
        out.push_str(keyword);
        // Optional spaces, '=', optional spaces.
        while let Some(&(_, c)) = chars.peek() {
            if !c.is_whitespace() {
                break;
            }
            out.push(c);
            chars.next();
        }
        if chars.peek().map(|&(_, c)| c) != Some('=') {
            continue; // not a keyword = value pair: left as it is
        }
        out.push('=');
        chars.next();
        while let Some(&(_, c)) = chars.peek() {
            if !c.is_whitespace() {
                break;
            }
            out.push(c);
            chars.next();
        }
        // The value: quoted or a run of non-space characters, with backslash escapes.
        let value_start = chars.peek().map_or(s.len(), |&(i, _)| i);
        let quoted = chars.peek().map(|&(_, c)| c) == Some('\'');
        if quoted {
            chars.next();
        }
        let mut value_end = s.len();
        while let Some(&(i, c)) = chars.peek() {
            if c == '\\' {
                chars.next();
                chars.next();
                continue;
            }
            if quoted && c == '\'' {
                chars.next();
                value_end = i + 1;
                break;
            }
            if !quoted && c.is_whitespace() {
                value_end = i;
                break;
            }
            chars.next();
        }
        if keyword == "password" {
            out.push_str("***");
        } else {
            out.push_str(&s[value_start..value_end]);
        }
    }
    out
}

/// A URL's path, query and fragment (`/db?user=u&password=p#f`) with the value of every
/// `password` query parameter replaced by `***`.
fn redact_query_password(tail: &str) -> String {
    let Some(q) = tail.find('?') else {
        return tail.to_string();
    };
    let (path, query) = tail.split_at(q + 1);
    let (query, fragment) = query.split_at(query.find('#').unwrap_or(query.len()));
    let query = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
            _ => pair.to_string(),
        })
        .collect::<Vec<_>>()
        .join("&");
    format!("{path}{query}{fragment}")
}

/// A client's error text as one line for a message: its lines joined with `; `, and a trailing
/// `- Kind` (the Redis client's `Display` appends its error kind, e.g. `- AuthenticationFailed`)
/// left out when `kind` is given.
pub fn one_line_reason(text: &str, kind: Option<&str>) -> String {
    let text = match kind {
        Some(k) => text
            .trim_end()
            .strip_suffix(k)
            .and_then(|t| t.strip_suffix('-').or_else(|| t.strip_suffix("- ")))
            .unwrap_or(text),
        None => text,
    };
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// Least time between two "lost" lines of one [`OutageLog`], ms: an outage that starts sooner
/// after the last one reported is reported only if it is still going on once this much time has
/// passed (a server that flaps every second gives one line per 10 s, not a flood).
pub const OUTAGE_REPORT_GAP_MS: u64 = 10_000;

/// While an outage lasts, a "still down" line every this many ms (the progress lines freeze
/// meanwhile, so this says the worker is alive and still trying).
pub const STILL_DOWN_REPORT_MS: u64 = 60_000;

/// What a connector tells the user on stderr when it loses its server and when the server is
/// back (new-user trial: the progress lines froze during an outage and only the final summary
/// said `errors redis N`). One line when an outage starts (the server, its address with any
/// password redacted by [`redact_password`], the one-line reason, that the connector retries
/// with a capped backoff and what it does meanwhile), a "still down" line every
/// [`STILL_DOWN_REPORT_MS`], and one line when a connection is made again (after how long and
/// how many connection attempts). Rate-limited: a "lost" line comes at most once per
/// [`OUTAGE_REPORT_GAP_MS`]; an outage that ends before its line is due is not reported (and
/// neither is its end), and the next "lost" line says how many such outages it left out.
///
/// Shared by every task talking to one server (the sink's writer threads share one through
/// `postgres_sink::SinkCounters`), so an outage seen by several connections is reported once:
/// it starts at the first failure and ends at the first connection made again. The caller
/// passes the time and prints the returned line; the log reads no clock itself.
#[derive(Debug)]
pub struct OutageLog {
    server: &'static str,
    url: String,
    meanwhile: &'static str,
    state: std::sync::Mutex<OutageState>,
}

#[derive(Debug, Default)]
struct OutageState {
    /// When the current outage started (`None`: connected, or never failed).
    down_since: Option<std::time::Instant>,
    /// Failed connection attempts in the current outage.
    attempts: u64,
    /// Whether the current outage's "lost" line was printed.
    reported: bool,
    /// When the last "lost" or "still down" line was printed.
    last_line: Option<std::time::Instant>,
    /// Outages that ended before their line was due, since the last "lost" line.
    unreported: u64,
    /// The reason the current outage started with.
    reason: String,
    /// The current outage started with a server error reply (e.g. Redis's `OOM` under
    /// `maxmemory` with `noeviction`), not a lost connection.
    refused: bool,
}

impl OutageLog {
    /// A log for `server` (`Redis`, `PostgreSQL`) at `url` (shown redacted), saying what the
    /// connector does `meanwhile` (e.g. "emitting nothing meanwhile").
    pub fn new(server: &'static str, url: &str, meanwhile: &'static str) -> Self {
        Self {
            server,
            url: redact_password(url),
            meanwhile,
            state: std::sync::Mutex::new(OutageState::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, OutageState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A command or a connection attempt (`connect_attempt`) failed at `now` with `reason` (one
    /// line). Returns the line to print, if one is due: the "lost" line of a new outage (or of
    /// one whose line the rate limit held back), or a "still down" line.
    pub fn failed(
        &self,
        now: std::time::Instant,
        reason: &str,
        connect_attempt: bool,
    ) -> Option<String> {
        self.failed_as(now, reason, connect_attempt, false)
    }

    /// As [`failed`](Self::failed) for a command the server answered with an error reply
    /// (`reason`, e.g. Redis's `OOM command not allowed ...`): the connection was up, so a new
    /// outage's line says the server refused a command instead of "lost" (new-user trial: an
    /// `OOM` mid-run read as if Redis had gone). The connector retries as for a lost connection.
    pub fn refused(&self, now: std::time::Instant, reason: &str) -> Option<String> {
        self.failed_as(now, reason, false, true)
    }

    fn failed_as(
        &self,
        now: std::time::Instant,
        reason: &str,
        connect_attempt: bool,
        refused: bool,
    ) -> Option<String> {
        use std::time::Duration;
        let mut s = self.state();
        match s.down_since {
            None => {
                s.down_since = Some(now);
                s.attempts = u64::from(connect_attempt);
                s.reported = false;
                s.reason = reason.to_string();
                s.refused = refused;
            }
            Some(_) => s.attempts += u64::from(connect_attempt),
        }
        let since_line = s.last_line.map(|t| now.saturating_duration_since(t));
        if !s.reported {
            if since_line.is_some_and(|d| d < Duration::from_millis(OUTAGE_REPORT_GAP_MS)) {
                return None;
            }
            s.reported = true;
            s.last_line = Some(now);
            let left_out = left_out(std::mem::take(&mut s.unreported), "outage");
            if s.refused {
                return Some(format!(
                    "acker-run: {} at {} refused a command: {} (the connection was up); \
                     retrying with capped backoff (50 ms doubling to 2 s), {}{left_out}",
                    self.server, self.url, s.reason, self.meanwhile
                ));
            }
            return Some(format!(
                "acker-run: lost {} at {}: {}; reconnecting with capped backoff (50 ms doubling \
                 to 2 s), {}{left_out}",
                self.server, self.url, s.reason, self.meanwhile
            ));
        }
        if since_line.is_some_and(|d| d >= Duration::from_millis(STILL_DOWN_REPORT_MS)) {
            s.last_line = Some(now);
            let down = s
                .down_since
                .map_or(0.0, |t| now.duration_since(t).as_secs_f64());
            return Some(format!(
                "acker-run: {} at {} still down after {down:.0} s ({} connection attempts): {}",
                self.server, self.url, s.attempts, reason
            ));
        }
        None
    }

    /// A connection was made at `now`. Returns the "back" line when the outage it ends was
    /// reported.
    pub fn connected(&self, now: std::time::Instant) -> Option<String> {
        let mut s = self.state();
        let since = s.down_since.take()?;
        let attempts = s.attempts + 1;
        if !s.reported {
            s.unreported += 1;
            return None;
        }
        s.reported = false;
        Some(format!(
            "acker-run: {} at {} is back after {:.1} s ({attempts} connection attempt{}); resuming",
            self.server,
            self.url,
            now.duration_since(since).as_secs_f64(),
            if attempts == 1 { "" } else { "s" }
        ))
    }

    /// Whether an outage is going on (a failure not yet followed by a connection).
    pub fn is_down(&self) -> bool {
        self.state().down_since.is_some()
    }
}

/// The note a rate-limited line adds for the `n` shorter events of kind `what` (`"outage"`,
/// `"pause"`) left out since the last such line: empty for none.
fn left_out(n: u64, what: &str) -> String {
    match n {
        0 => String::new(),
        1 => format!(" (1 shorter {what} since the last report was not reported)"),
        n => format!(" ({n} shorter {what}s since the last report were not reported)"),
    }
}

/// Whether a worker's sink can commit, shared by its sink tasks (which report the outcome of
/// each transaction and connection attempt) and its spout (which consults it before reading):
/// the spout reads no new entry and re-reads no failed one while a sink task cannot commit, so
/// no delivery, which counts toward `--max-retries`, is spent on a tuple tree that cannot
/// complete (new-user trials: a PostgreSQL outage longer than the retries, or sink
/// connections refused with "too many clients", dead-lettered thousands of healthy entries).
/// The spout resumes once every sink task that failed has committed again (a sink task that
/// is down probes the server on its own, with a real transaction, so that the sink recovers
/// while the spout sends it nothing).
///
/// The spout reports a pause on stderr: one line when it starts (at most one such line every
/// [`OUTAGE_REPORT_GAP_MS`]; shorter pauses in between are counted in the next line) and one
/// when that pause ends. The caller passes the time and prints the returned lines; the gate
/// reads no clock itself.
#[derive(Debug, Default)]
pub struct SinkGate {
    /// Sink tasks whose last transaction or connection attempt failed.
    down: std::sync::atomic::AtomicUsize,
    /// Pauses the spout began.
    pauses: std::sync::atomic::AtomicU64,
    /// Whether the spout is in a pause (`state.since` is set): with the gate open and no
    /// pause, [`SinkGate::spout_check`] takes no lock (it runs at every `next_tuple`).
    in_pause: std::sync::atomic::AtomicBool,
    state: std::sync::Mutex<PauseState>,
}

#[derive(Debug, Default)]
struct PauseState {
    /// When the current pause began (`None`: reading).
    since: Option<std::time::Instant>,
    /// Whether the current pause's line was printed.
    reported: bool,
    /// When the last "paused" line was printed.
    last_line: Option<std::time::Instant>,
    /// Pauses since the last "paused" line whose line was held back by the rate limit.
    unreported: u64,
    /// Time spent in pauses that ended, ns.
    paused_ns: u128,
}

impl SinkGate {
    /// A sink task's outcome: `ok` after a commit (or a probe transaction) succeeded, not `ok`
    /// after a transaction or a connection attempt failed. `down` is the task's own state,
    /// kept by the task and updated here, so the gate counts each task once.
    pub fn report(&self, down: &mut bool, ok: bool) {
        use std::sync::atomic::Ordering;
        match (*down, ok) {
            (false, false) => {
                self.down.fetch_add(1, Ordering::SeqCst);
            }
            (true, true) => {
                self.down.fetch_sub(1, Ordering::SeqCst);
            }
            _ => {}
        }
        *down = !ok;
    }

    /// Whether a sink task cannot commit now.
    pub fn is_closed(&self) -> bool {
        self.down.load(std::sync::atomic::Ordering::SeqCst) > 0
    }

    /// The spout's check at `now`: whether it must read nothing (a sink task cannot commit),
    /// and the line to print on stderr, if one is due (a pause beginning, or the end of one
    /// whose beginning was printed).
    pub fn spout_check(&self, now: std::time::Instant) -> (bool, Option<String>) {
        let closed = self.is_closed();
        if !closed && !self.in_pause.load(std::sync::atomic::Ordering::Acquire) {
            return (false, None);
        }
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match (closed, s.since) {
            (true, None) => {
                s.since = Some(now);
                self.in_pause
                    .store(true, std::sync::atomic::Ordering::Release);
                self.pauses
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let gap = std::time::Duration::from_millis(OUTAGE_REPORT_GAP_MS);
                if s.last_line
                    .is_some_and(|t| now.saturating_duration_since(t) < gap)
                {
                    s.reported = false;
                    s.unreported += 1;
                    return (true, None);
                }
                s.reported = true;
                s.last_line = Some(now);
                let left_out = left_out(std::mem::take(&mut s.unreported), "pause");
                (
                    true,
                    Some(format!(
                        "acker-run: spout paused: the sink cannot commit; reading no new entry \
                         and re-reading no failed one until it commits again, so no delivery \
                         counts toward --max-retries meanwhile (trees in flight may still time \
                         out){left_out}"
                    )),
                )
            }
            (true, Some(_)) => (true, None),
            (false, Some(since)) => {
                s.since = None;
                self.in_pause
                    .store(false, std::sync::atomic::Ordering::Release);
                let paused = now.saturating_duration_since(since);
                s.paused_ns += paused.as_nanos();
                let line = std::mem::take(&mut s.reported).then(|| {
                    format!(
                        "acker-run: spout resumed after {:.1} s: the sink commits again",
                        paused.as_secs_f64()
                    )
                });
                (false, line)
            }
            (false, None) => (false, None),
        }
    }

    /// Pauses the spout began so far.
    pub fn pauses(&self) -> u64 {
        self.pauses.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Time the spout spent paused up to `now` (the current pause included), ms.
    pub fn paused_ms(&self, now: std::time::Instant) -> u64 {
        let s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let current = s
            .since
            .map_or(0, |t| now.saturating_duration_since(t).as_nanos());
        u64::try_from((s.paused_ns + current) / 1_000_000).unwrap_or(u64::MAX)
    }

    /// How long the current pause has lasted at `now`, `None` when the spout is reading.
    pub fn paused_for(&self, now: std::time::Instant) -> Option<std::time::Duration> {
        let s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.since.map(|t| now.saturating_duration_since(t))
    }
}

/// Parses a Redis stream entry id `<ms>-<seq>` into its two numbers (`None` for anything else,
/// including numbers past `i64::MAX`).
pub fn parse_entry_id(id: &str) -> Option<(i64, i64)> {
    let (ms, seq) = id.split_once('-')?;
    Some((ms.parse().ok()?, seq.parse().ok()?))
}

/// Whether the server at `addr` answers as `server`: connects (within `timeout`), sends `hello`
/// (named `hello_name` in messages) and waits up to `timeout` for a reply whose first bytes
/// `answers_as` accepts. Used before a client library's own handshake, which waits without a
/// timeout, so that a server that accepts and stays silent (or a port that is not the server's)
/// gives an error instead of a hang, and a server of another protocol (an HTTP server,
/// PostgreSQL at `--redis`, Redis at `--postgres`) gives "did not answer as Redis" instead of
/// the client's raw parse error (new-user trial). The connection is closed afterwards. Errors
/// name what did not happen; the caller adds the address.
#[cfg(any(feature = "redis", feature = "postgres"))]
fn probe_answers(
    addr: impl std::net::ToSocketAddrs,
    hello: &[u8],
    timeout: std::time::Duration,
    (server, hello_name): (&str, &str),
    answers_as: fn(&[u8]) -> bool,
) -> Result<(), String> {
    use std::io::{Read, Write};
    let addrs: Vec<_> = addr
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve the address: {e}"))?
        .collect();
    let mut last = String::from("the host name resolves to no address");
    for a in addrs {
        let mut stream = match std::net::TcpStream::connect_timeout(&a, timeout) {
            Ok(s) => s,
            Err(e) => {
                last = e.to_string();
                continue;
            }
        };
        let secs = timeout.as_secs_f64();
        stream
            .set_read_timeout(Some(timeout))
            .and_then(|()| stream.set_write_timeout(Some(timeout)))
            .and_then(|()| stream.write_all(hello))
            .map_err(|e| format!("{e}"))?;
        let mut reply = [0u8; 48];
        return match stream.read(&mut reply) {
            Ok(n @ 1..) if answers_as(&reply[..n]) => Ok(()),
            Ok(n @ 1..) => Err(format!(
                "the server did not answer as {server}: its reply to {hello_name} began with \
                 {:?} (is this the {server} server's address and port?)",
                String::from_utf8_lossy(&reply[..n])
            )),
            Ok(0) => Err(format!(
                "the server closed the connection without answering {hello_name}: it did not \
                 answer as {server} (is this the {server} server's address and port?)"
            )),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                // Not "did not answer as {server}": a frozen (SIGSTOP) or overloaded server of
                // the right kind is silent the same way (new-user trial: a frozen Redis at start).
                Err(format!(
                    "the server accepted the connection but did not answer {hello_name} within \
                     {secs} s: it may be stopped (SIGSTOP) or overloaded, or it is not {server}, \
                     which answers at once (is this the {server} server's address and port?)"
                ))
            }
            Err(e) => Err(e.to_string()),
        };
    }
    Err(last)
}

#[cfg(all(test, feature = "redis", feature = "postgres"))]
mod tests {
    use super::*;

    #[test]
    fn bad_urls_are_typed_errors_naming_the_option_and_the_fault() {
        let e = redis_stream::check_url("redis//localhost").unwrap_err();
        assert_eq!(e.option, "--redis");
        assert_eq!(e.url, "redis//localhost");
        assert_eq!(e.reason, "it has no scheme (it must start with redis://)");
        let e = redis_stream::check_url("redis://localhost/abc").unwrap_err();
        assert_eq!(e.reason, "Invalid database number");
        let e = postgres_sink::check_url("http://x").unwrap_err();
        assert_eq!(e.option, "--postgres");
        assert_eq!(
            e.reason,
            "its scheme is http:// (postgresql:// or postgres:// are accepted)"
        );
        assert!(e
            .to_string()
            .contains("give one like postgresql://postgres@127.0.0.1:5432/postgres"));
        assert_eq!(redis_stream::check_url("redis://127.0.0.1:6379/0"), Ok(()));
        assert_eq!(
            redact_password("redis://:pw@127.0.0.1:6379/0"),
            "redis://:***@127.0.0.1:6379/0"
        );
        assert_eq!(
            redact_password("postgresql://postgres:secret@127.0.0.1:1/postgres"),
            "postgresql://postgres:***@127.0.0.1:1/postgres"
        );
        assert_eq!(
            redact_password("host=h user=u password=secret dbname=d"),
            "host=h user=u password=*** dbname=d"
        );
        assert_eq!(
            redact_password("redis://127.0.0.1:6379/"),
            "redis://127.0.0.1:6379/"
        );
        // Key=value strings as libpq reads them (final new-user trial: a quoted password with a
        // space showed its second half, one with spaces around '=' showed whole).
        assert_eq!(
            redact_password("host=127.0.0.1 port=1 user=u password='top secret' dbname=d"),
            "host=127.0.0.1 port=1 user=u password=*** dbname=d"
        );
        assert_eq!(
            redact_password("host=127.0.0.1 user=u password = topsecret dbname=d"),
            "host=127.0.0.1 user=u password = *** dbname=d"
        );
        assert_eq!(
            redact_password("password='sec ret' bogus=1"),
            "password=*** bogus=1"
        );
        assert_eq!(
            redact_password(r"user='a b' password='it\'s \\ x' dbname=d"),
            r"user='a b' password=*** dbname=d"
        );
        assert_eq!(
            redact_password(r"password=un\ quoted host=h"),
            "password=*** host=h"
        );
        // An unterminated quote: the rest is the password.
        assert_eq!(
            redact_password("host=h password='no end dbname=d"),
            "host=h password=***"
        );
        assert_eq!(redact_password("password="), "password=***");
        assert_eq!(redact_password("host=h  dbname=d"), "host=h  dbname=d");
        // Query parameters (new-user trial: these were printed in clear).
        assert_eq!(
            redact_password(
                "postgresql://postgres:hunter2@127.0.0.1:1/db?password=hunter3&user=u#frag"
            ),
            "postgresql://postgres:***@127.0.0.1:1/db?password=***&user=u#frag"
        );
        assert_eq!(
            redact_password("postgresql://127.0.0.1:1/db?user=postgres&password=hunter4"),
            "postgresql://127.0.0.1:1/db?user=postgres&password=***"
        );
        assert_eq!(
            redact_password("redis://127.0.0.1:1/?password=hunter6"),
            "redis://127.0.0.1:1/?password=***"
        );
        assert_eq!(
            redact_password("redis://127.0.0.1:1/?passwords=x&db=2"),
            "redis://127.0.0.1:1/?passwords=x&db=2"
        );
        assert_eq!(
            one_line_reason(
                "Password authentication failed- AuthenticationFailed",
                Some("AuthenticationFailed")
            ),
            "Password authentication failed"
        );
        assert_eq!(
            one_line_reason(
                "parse error - ParseError: Parse error at 1\nUnexpected `84`\n",
                None
            ),
            "parse error - ParseError: Parse error at 1; Unexpected `84`"
        );
        assert_eq!(
            postgres_sink::check_url("host=127.0.0.1 user=postgres"),
            Ok(())
        );
    }

    /// A worker's group look-up at start that times out says Redis stopped answering (it
    /// answered the PING just before: new-user trial, Redis frozen a few ms after it), not the
    /// socket's "os error 11" nor "cannot create consumer group" for a group that exists. (An
    /// `OOM` refusal's advice is tested against a real full Redis: `tests/connectors.rs`,
    /// `a_worker_starts_on_a_full_redis_when_its_group_exists`.)
    #[test]
    fn a_group_start_timeout_says_redis_stopped_answering() {
        let timeout = redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::WouldBlock));
        assert_eq!(
            wordcount::group_start_error(&timeout, "lines", "g", "redis://:secret@127.0.0.1:1/"),
            "Redis at redis://:***@127.0.0.1:1/ stopped answering while the worker looked up \
             consumer group g on lines (no reply within 2 s (the connection's read/write \
             timeout)): it answered the start-up PING, so it may be stopped (SIGSTOP) or \
             overloaded; start the worker again once it answers"
        );
    }
}

#[cfg(test)]
mod outage_tests {
    use super::*;
    use std::time::{Duration, Instant};

    const LOST: &str = "acker-run: lost Redis at redis://:***@127.0.0.1:7/: Connection \
                        refused (os error 111); reconnecting with capped backoff (50 ms doubling \
                        to 2 s), doing nothing";

    /// An outage that starts with an error reply (Redis's `OOM`) says the server refused a
    /// command, not that it was lost; connection failures during it keep counting as attempts.
    #[test]
    fn an_outage_started_by_an_error_reply_says_refused() {
        let log = OutageLog::new(
            "Redis",
            "redis://127.0.0.1:7/",
            "emitting nothing meanwhile",
        );
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        assert_eq!(
            log.refused(
                at(10),
                "OOM: command not allowed when used memory > 'maxmemory'"
            )
            .as_deref(),
            Some(
                "acker-run: Redis at redis://127.0.0.1:7/ refused a command: OOM: command not \
                 allowed when used memory > 'maxmemory' (the connection was up); retrying with \
                 capped backoff (50 ms doubling to 2 s), emitting nothing meanwhile"
            )
        );
        assert_eq!(log.failed(at(200), "other", true), None);
        assert!(log
            .connected(at(1_010))
            .is_some_and(|l| l.contains("is back after 1.0 s")));
        // The next outage, a lost connection past the report gap, says "lost" again.
        assert!(log
            .failed(at(20_000), "Connection refused (os error 111)", false)
            .is_some_and(|l| l.starts_with("acker-run: lost Redis at")));
    }

    /// One "lost" line per outage, one "back" line with the time and the attempts, a "still
    /// down" line a minute into a long outage; an outage starting within the report gap of the
    /// last line is held back and, if it ends before its line is due, left out and counted in
    /// the next "lost" line.
    #[test]
    fn outages_are_reported_once_each_and_rate_limited() {
        let log = OutageLog::new("Redis", "redis://:pw@127.0.0.1:7/", "doing nothing");
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let reason = "Connection refused (os error 111)";
        assert_eq!(
            log.connected(at(0)),
            None,
            "a first connection is no outage"
        );
        assert_eq!(log.failed(at(10), reason, false).as_deref(), Some(LOST));
        assert!(log.is_down());
        for i in 0..20 {
            assert_eq!(
                log.failed(at(100 + i * 100), "other", true),
                None,
                "attempt {i}"
            );
        }
        assert_eq!(
            log.connected(at(3_010)).as_deref(),
            Some(
                "acker-run: Redis at redis://:***@127.0.0.1:7/ is back after 3.0 s (21 \
                 connection attempts); resuming"
            )
        );
        assert!(!log.is_down());
        // A flap 1 s later: within the 10 s gap, ends before its line is due: not reported.
        assert_eq!(log.failed(at(4_010), reason, false), None);
        assert_eq!(log.connected(at(4_500)), None);
        // Another one, still down when the gap has passed: reported then, naming the left-out.
        assert_eq!(log.failed(at(6_000), reason, false), None);
        assert_eq!(
            log.failed(at(10_010), "refused", true).as_deref(),
            Some(
                format!("{LOST} (1 shorter outage since the last report was not reported)")
                    .as_str()
            )
        );
        assert_eq!(log.failed(at(69_000), "refused", true), None);
        assert_eq!(
            log.failed(at(70_010), "refused", true).as_deref(),
            Some(
                "acker-run: Redis at redis://:***@127.0.0.1:7/ still down after 64 s (3 \
                 connection attempts): refused"
            )
        );
        assert_eq!(
            log.connected(at(71_000)).as_deref(),
            Some(
                "acker-run: Redis at redis://:***@127.0.0.1:7/ is back after 65.0 s (4 \
                 connection attempts); resuming"
            )
        );
    }
}

#[cfg(test)]
mod gate_tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// The gate closes while any sink task is down (each task counted once, however often it
    /// fails) and opens when all are back; the spout's lines: one at a pause's start, one at its
    /// end, a pause starting within 10 s of the last line held back (no resume line for it)
    /// and counted in the next one; pauses and paused time counted.
    #[test]
    fn the_gate_counts_tasks_once_and_reports_pauses_rate_limited() {
        let gate = SinkGate::default();
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let (mut a, mut b) = (false, false);
        assert_eq!(gate.spout_check(at(0)), (false, None));
        gate.report(&mut a, false);
        gate.report(&mut a, false);
        gate.report(&mut b, false);
        let (paused, line) = gate.spout_check(at(10));
        assert!(paused);
        assert!(line.is_some_and(|l| l.starts_with("acker-run: spout paused: ")));
        gate.report(&mut a, true);
        assert_eq!(gate.spout_check(at(500)), (true, None), "task b still down");
        gate.report(&mut b, true);
        assert_eq!(
            gate.spout_check(at(2_010)),
            (
                false,
                Some("acker-run: spout resumed after 2.0 s: the sink commits again".into())
            )
        );
        // A second pause 1 s later: within the 10 s gap, held back, and so is its end.
        gate.report(&mut a, false);
        assert_eq!(gate.spout_check(at(3_000)), (true, None));
        gate.report(&mut a, true);
        assert_eq!(gate.spout_check(at(3_500)), (false, None));
        // A third, past the gap: reported, naming the one left out.
        gate.report(&mut a, false);
        let (_, line) = gate.spout_check(at(20_000));
        assert!(
            line.is_some_and(
                |l| l.ends_with(" (1 shorter pause since the last report was not reported)")
            ),
            "third pause line"
        );
        assert_eq!(gate.pauses(), 3);
        assert_eq!(gate.paused_ms(at(21_000)), 2_000 + 500 + 1_000);
        assert_eq!(gate.paused_for(at(21_000)), Some(Duration::from_secs(1)));
    }
}
