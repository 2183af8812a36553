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

/// Parses a Redis stream entry id `<ms>-<seq>` into its two numbers (`None` for anything else,
/// including numbers past `i64::MAX`).
pub fn parse_entry_id(id: &str) -> Option<(i64, i64)> {
    let (ms, seq) = id.split_once('-')?;
    Some((ms.parse().ok()?, seq.parse().ok()?))
}
