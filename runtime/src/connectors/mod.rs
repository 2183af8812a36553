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
    /// The URL as given.
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
            self.option, self.url, self.server, self.reason, self.example, self.forms
        )
    }
}

#[cfg(any(feature = "redis", feature = "postgres"))]
impl std::error::Error for BadUrl {}

#[cfg(any(feature = "redis", feature = "postgres"))]
impl From<BadUrl> for crate::cli::CliError {
    fn from(e: BadUrl) -> Self {
        crate::cli::CliError::Run(e.to_string())
    }
}

/// `url` as it may be shown in a message: a password in it (`scheme://user:PASSWORD@host...`,
/// or a `password=...` pair of a PostgreSQL key=value string) replaced by `***`; anything else
/// unchanged.
pub fn redact_password(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://") {
        let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(authority_end);
        if let Some((userinfo, host)) = authority.rsplit_once('@') {
            if let Some((user, _password)) = userinfo.split_once(':') {
                return format!("{scheme}://{user}:***@{host}{tail}");
            }
        }
        return url.to_string();
    }
    url.split(' ')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if key.trim() == "password" => format!("{key}=***"),
            _ => pair.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
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

/// Parses a Redis stream entry id `<ms>-<seq>` into its two numbers (`None` for anything else,
/// including numbers past `i64::MAX`).
pub fn parse_entry_id(id: &str) -> Option<(i64, i64)> {
    let (ms, seq) = id.split_once('-')?;
    Some((ms.parse().ok()?, seq.parse().ok()?))
}

/// Whether the server at `addr` answers: connects (within `timeout`), sends `hello` and waits
/// up to `timeout` for at least one byte back. Used before a client library's own handshake,
/// which waits without a timeout, so that a server that accepts and stays silent (or a port
/// that is not the server's) gives an error instead of a hang. The connection is closed
/// afterwards. Errors name what did not happen; the caller adds the address.
#[cfg(any(feature = "redis", feature = "postgres"))]
fn probe_answers(
    addr: impl std::net::ToSocketAddrs,
    hello: &[u8],
    timeout: std::time::Duration,
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
        let mut byte = [0u8; 1];
        return match stream.read(&mut byte) {
            Ok(1..) => Ok(()),
            Ok(0) => Err(
                "the server closed the connection without answering (is this the right port?)"
                    .into(),
            ),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                Err(format!(
                    "the server accepted the connection but did not answer within {secs} s"
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
}
