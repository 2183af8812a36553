//! Private local servers for tests and demos: a `redis-server` and a PostgreSQL cluster, each in
//! its own temporary directory on a free port, stopped (and their directory removed) when the
//! handle drops, also while a failing test unwinds.
//!
//! - [`RedisServer::start`]: `redis-server` from the `PATH` (Debian package `redis-server`),
//!   `appendonly yes`, `appendfsync always` (every write reaches the disk before the reply, so a
//!   killed server loses nothing acknowledged), no RDB snapshots, bound to 127.0.0.1.
//! - [`PostgresServer::start`]: `initdb` and `pg_ctl` from `/usr/lib/postgresql/<version>/bin`
//!   (Debian keeps them off the `PATH`; package `postgresql`) or the `PATH`, `--auth=trust` on
//!   127.0.0.1, the socket in the temporary directory. PostgreSQL refuses to run as root: when
//!   this process is root the server runs as the system user `postgres` through `runuser`.
//!
//! Every wait is bounded ([`START_TIMEOUT`]) and fails saying what it waited for; a missing
//! binary is an error naming the Debian package, never a silent skip.

use std::fmt;
use std::fs;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The longest a server may take to answer after it was started.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a local server could not be started.
#[derive(Debug)]
pub enum LocalServerError {
    /// A binary is missing: install the named Debian package.
    Missing {
        /// The binary looked for.
        binary: String,
        /// The Debian package that holds it.
        package: &'static str,
    },
    /// A command or the server failed: what was done and what came back (log tail included).
    Failed(String),
}

impl fmt::Display for LocalServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LocalServerError::Missing { binary, package } => write!(
                f,
                "{binary} not found: install the Debian package `{package}` \
                 (apt-get update && apt-get install -y {package})"
            ),
            LocalServerError::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for LocalServerError {}

fn failed(m: impl Into<String>) -> LocalServerError {
    LocalServerError::Failed(m.into())
}

/// A fresh empty directory under the system temporary directory, named after `prefix`, the
/// process id and a per-process counter.
fn temp_dir(prefix: &str) -> Result<PathBuf, LocalServerError> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("{prefix}-{}-{n}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir)
        .map_err(|e| failed(format!("cannot create {}: {e}", dir.display())))?;
    Ok(dir)
}

/// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, then released).
fn free_port() -> Result<u16, LocalServerError> {
    let l = TcpListener::bind("127.0.0.1:0")
        .map_err(|e| failed(format!("cannot bind 127.0.0.1:0 to find a free port: {e}")))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| failed(format!("no local address: {e}")))
}

/// `name` found in one of the `PATH` directories.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The last 2000 bytes of a log file, for error messages.
fn log_tail(path: &Path) -> String {
    let s = fs::read_to_string(path).unwrap_or_default();
    let start = s.len().saturating_sub(2000);
    let start = (start..s.len())
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(s.len());
    s[start..].to_string()
}

/// Whether this process runs as root (`Uid:` in `/proc/self/status`; false when unreadable).
fn is_root() -> bool {
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

/// Waits until `addr` accepts a TCP connection and `ready()` holds, at most `timeout`.
fn wait_until(
    what: &str,
    timeout: Duration,
    mut ready: impl FnMut() -> bool,
) -> Result<(), LocalServerError> {
    let t0 = Instant::now();
    loop {
        if ready() {
            return Ok(());
        }
        if t0.elapsed() > timeout {
            return Err(failed(format!(
                "timed out after {timeout:?} waiting for {what}"
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A private `redis-server` (see the module docs). Dropping it kills the server and removes its
/// directory.
pub struct RedisServer {
    dir: PathBuf,
    port: u16,
    child: Option<Child>,
}

impl RedisServer {
    /// Starts a server on a free port in a fresh temporary directory and waits (at most
    /// [`START_TIMEOUT`]) until it answers `PING`.
    ///
    /// # Errors
    /// [`LocalServerError::Missing`] naming the package `redis-server` when the binary is not on
    /// the `PATH`; [`LocalServerError::Failed`] with the server's log when it does not answer.
    pub fn start() -> Result<Self, LocalServerError> {
        let dir = temp_dir("acker-redis")?;
        let mut s = Self {
            dir,
            port: free_port()?,
            child: None,
        };
        s.spawn()?;
        Ok(s)
    }

    fn spawn(&mut self) -> Result<(), LocalServerError> {
        let bin = on_path("redis-server").ok_or(LocalServerError::Missing {
            binary: "redis-server".into(),
            package: "redis-server",
        })?;
        let log = self.dir.join("redis.log");
        let child = Command::new(bin)
            .args(["--port", &self.port.to_string()])
            .args(["--bind", "127.0.0.1"])
            .arg("--dir")
            .arg(&self.dir)
            .args(["--appendonly", "yes", "--appendfsync", "always"])
            .args(["--save", "", "--daemonize", "no"])
            .arg("--logfile")
            .arg(&log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| failed(format!("cannot start redis-server: {e}")))?;
        self.child = Some(child);
        let url = self.url();
        wait_until(
            &format!("redis-server at {url} to answer PING"),
            START_TIMEOUT,
            || {
                redis::Client::open(url.as_str())
                    .and_then(|c| c.get_connection_with_timeout(Duration::from_millis(500)))
                    .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c))
                    .is_ok()
            },
        )
        .map_err(|e| failed(format!("{e}; log:\n{}", log_tail(&log))))
    }

    /// `redis://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// The TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's process id while it runs (for tests that freeze it with SIGSTOP), `None`
    /// after [`kill`](Self::kill).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Kills the server with SIGKILL (a crash: with `appendfsync always` nothing it acknowledged
    /// is lost) and waits for it to exit.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the server again on the same port and directory (after [`kill`](Self::kill)),
    /// replaying its append-only file, and waits until it answers.
    ///
    /// # Errors
    /// As [`start`](Self::start).
    pub fn restart(&mut self) -> Result<(), LocalServerError> {
        self.kill();
        self.spawn()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// A private PostgreSQL cluster (see the module docs). Dropping it stops the server
/// (`pg_ctl stop -m immediate`) and removes its directory.
pub struct PostgresServer {
    dir: PathBuf,
    port: u16,
    bin: PathBuf,
    as_postgres: bool,
    /// `-c name=value` settings given at every start ([`PostgresServer::start_with`]).
    settings: Vec<(String, String)>,
}

/// The directory holding `initdb` and `pg_ctl`: the newest `/usr/lib/postgresql/<version>/bin`,
/// else the `PATH`.
fn postgres_bin_dir() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .ok()
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((v, bin))
        })
        .collect();
    versions.sort();
    versions
        .pop()
        .map(|(_, b)| b)
        .or_else(|| on_path("initdb").and_then(|p| p.parent().map(Path::to_path_buf)))
}

impl PostgresServer {
    /// Creates a cluster with `initdb` in a fresh temporary directory and starts it on a free
    /// port with `pg_ctl start -w` (bounded by [`START_TIMEOUT`]).
    ///
    /// # Errors
    /// [`LocalServerError::Missing`] naming the package `postgresql` when `initdb` is found
    /// nowhere; [`LocalServerError::Failed`] with the command's output or the server log.
    pub fn start() -> Result<Self, LocalServerError> {
        Self::start_with(&[])
    }

    /// As [`start`](Self::start), with server settings given as `-c name=value` at this start
    /// and every restart (e.g. `[("max_connections", "8")]`). A name or value holding
    /// whitespace is refused (they are passed through `pg_ctl -o`, a single string).
    ///
    /// # Errors
    /// As [`start`](Self::start); [`LocalServerError::Failed`] for a setting with whitespace,
    /// or one the server refuses (its log says why).
    pub fn start_with(settings: &[(&str, &str)]) -> Result<Self, LocalServerError> {
        if let Some((k, v)) = settings
            .iter()
            .find(|(k, v)| k.contains(char::is_whitespace) || v.contains(char::is_whitespace))
        {
            return Err(failed(format!(
                "the PostgreSQL setting {k:?} = {v:?} holds whitespace (not supported here)"
            )));
        }
        let bin = postgres_bin_dir().ok_or(LocalServerError::Missing {
            binary: "initdb (PostgreSQL)".into(),
            package: "postgresql",
        })?;
        let as_postgres = is_root();
        let dir = temp_dir("acker-pg")?;
        let s = Self {
            dir,
            port: free_port()?,
            bin,
            as_postgres,
            settings: settings
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        if as_postgres {
            s.run(Command::new("chown").arg("postgres:").arg(&s.dir), "chown")?;
        }
        let data = s.dir.join("data");
        s.run(
            s.pg_command("initdb").arg("-D").arg(&data).args([
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
            ]),
            "initdb",
        )?;
        s.start_server()?;
        Ok(s)
    }

    fn pg_command(&self, tool: &str) -> Command {
        let path = self.bin.join(tool);
        if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(path);
            c
        } else {
            Command::new(path)
        }
    }

    fn run(&self, cmd: &mut Command, what: &str) -> Result<(), LocalServerError> {
        let out = cmd
            .stdin(Stdio::null())
            .output()
            .map_err(|e| failed(format!("cannot run {what}: {e}")))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(failed(format!(
                "{what} failed ({}): {}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )))
        }
    }

    fn start_server(&self) -> Result<(), LocalServerError> {
        let log = self.dir.join("postgres.log");
        let mut opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=on",
            self.port,
            self.dir.display()
        );
        for (k, v) in &self.settings {
            opts.push_str(&format!(" -c {k}={v}"));
        }
        self.run(
            self.pg_command("pg_ctl")
                .arg("-D")
                .arg(self.dir.join("data"))
                .arg("-l")
                .arg(&log)
                .args(["-o", &opts, "-w", "-t"])
                .arg(START_TIMEOUT.as_secs().to_string())
                .arg("start"),
            "pg_ctl start",
        )
        .map_err(|e| failed(format!("{e}; log:\n{}", log_tail(&log))))?;
        let addr = format!("127.0.0.1:{}", self.port);
        let url = self.url();
        wait_until(
            &format!("PostgreSQL at {addr} to answer a query"),
            START_TIMEOUT,
            || {
                TcpStream::connect(&addr).is_ok()
                    && postgres::Client::connect(&url, postgres::NoTls)
                        .and_then(|mut c| c.simple_query("SELECT 1"))
                        .is_ok()
            },
        )
    }

    /// `postgresql://postgres@127.0.0.1:PORT/postgres` (trust authentication).
    pub fn url(&self) -> String {
        format!("postgresql://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// The TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops the server at once (`pg_ctl stop -m immediate`: a crash, recovered from the WAL on
    /// the next start).
    ///
    /// # Errors
    /// [`LocalServerError::Failed`] with `pg_ctl`'s output.
    pub fn stop(&self) -> Result<(), LocalServerError> {
        self.run(
            self.pg_command("pg_ctl")
                .arg("-D")
                .arg(self.dir.join("data"))
                .args(["-m", "immediate", "-w", "-t", "30", "stop"]),
            "pg_ctl stop",
        )
    }

    /// [`stop`](Self::stop), then starts the server again on the same port and data directory.
    ///
    /// # Errors
    /// As [`start`](Self::start).
    pub fn restart(&self) -> Result<(), LocalServerError> {
        self.stop()?;
        self.start_server()
    }

    /// Starts the server again after [`stop`](Self::stop) (an outage of the caller's length),
    /// on the same port and data directory, and waits (at most [`START_TIMEOUT`]) until it
    /// answers a query.
    ///
    /// # Errors
    /// As [`start`](Self::start).
    pub fn start_again(&self) -> Result<(), LocalServerError> {
        self.start_server()
    }
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        let _ = self.stop();
        let _ = fs::remove_dir_all(&self.dir);
    }
}
