//! The ceiling of the Redis Streams spout: `XREADGROUP ... COUNT n` + one `XACK` of the batch,
//! in a loop on one connection with no topology, until the stream has no new entry.
//!
//! `cargo run --release -p acker-runtime --example redis_ceiling -- redis://HOST:PORT/ STREAM [BATCH]`
//! reads the whole stream in a fresh consumer group `ceiling-<pid>` and prints entries/s.

use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        return Err("usage: redis_ceiling URL STREAM [BATCH]".into());
    }
    let batch: usize = args.get(3).map_or(Ok(500), |b| b.parse())?;
    let mut con = redis::Client::open(args[1].as_str())?.get_connection()?;
    let group = format!("ceiling-{}", std::process::id());
    redis::cmd("XGROUP")
        .arg("CREATE")
        .arg(&args[2])
        .arg(&group)
        .arg("0")
        .query::<()>(&mut con)?;
    let t0 = Instant::now();
    let mut n = 0usize;
    loop {
        let reply: Option<redis::streams::StreamReadReply> = redis::cmd("XREADGROUP")
            .arg("GROUP")
            .arg(&group)
            .arg("c")
            .arg("COUNT")
            .arg(batch)
            .arg("STREAMS")
            .arg(&args[2])
            .arg(">")
            .query(&mut con)?;
        let ids: Vec<String> = reply
            .map(|r| {
                r.keys
                    .into_iter()
                    .flat_map(|k| k.ids)
                    .map(|e| e.id)
                    .collect()
            })
            .unwrap_or_default();
        if ids.is_empty() {
            break;
        }
        n += ids.len();
        redis::cmd("XACK")
            .arg(&args[2])
            .arg(&group)
            .arg(&ids)
            .query::<i64>(&mut con)?;
    }
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "{n} entries in {secs:.3} s: {:.0} entries/s (XREADGROUP COUNT {batch} + XACK)",
        n as f64 / secs
    );
    redis::cmd("XGROUP")
        .arg("DESTROY")
        .arg(&args[2])
        .arg(&group)
        .query::<i64>(&mut con)?;
    Ok(())
}
