//! The `ferry` binary as a child process: start it, read its ready line, signal it.

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use super::{ACCESS_KEY, SECRET_KEY};

/// The test key as the binary reads it from its environment.
pub const KEY_ENV: [(&str, &str); 3] = [
    ("FERRY_ACCESS_KEY", ACCESS_KEY),
    ("FERRY_SECRET_KEY", SECRET_KEY),
    ("FERRY_CLUSTER_KEY", super::CLUSTER_KEY),
];

/// An address on 127.0.0.1 free a moment ago, for a listener whose address the process does
/// not print (the admin listener).
pub fn free_port() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
}

/// `ferry ARGS` with only `env` in its environment; stdout and stderr piped.
pub fn spawn_ferry(args: &[&str], env: &[(&str, &str)]) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ferry"));
    cmd.args(args).env_clear();
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ferry")
}

/// A child process killed when dropped: a test that fails before stopping it leaves nothing
/// running.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A `ferry node` process on `data` with `extra` options and only `env` in its environment,
/// its admin listener on a free port: the process, its S3 address and its admin address.
pub fn node_with_admin(
    data: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (Killed, SocketAddr, SocketAddr) {
    let admin = free_port();
    let (data, admin_arg) = (data.to_str().expect("utf-8 path"), admin.to_string());
    let mut args = vec!["node", "--data", data, "--listen", "127.0.0.1:0"];
    args.extend(["--admin-listen", &admin_arg]);
    args.extend_from_slice(extra);
    let mut child = spawn_ferry(&args, env);
    let addr = ready_addr(&mut child, "ferry node listening on http://");
    (Killed(child), addr, admin)
}

/// The address after `prefix` in the first line of stdout; stdout is then drained on a thread
/// (so the process never blocks on a full pipe).
pub fn ready_addr(child: &mut Child, prefix: &str) -> SocketAddr {
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    out.read_line(&mut line).expect("ready line");
    let rest = line
        .strip_prefix(prefix)
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
    let addr = rest
        .split(|c: char| c.is_whitespace())
        .next()
        .unwrap_or_default();
    std::thread::spawn(move || drain(out));
    addr.parse().expect("address")
}

fn drain(mut out: BufReader<ChildStdout>) {
    let mut sink = Vec::new();
    let _ = out.read_to_end(&mut sink);
}

/// Send `sig` (as `kill` takes it: `-TERM`).
pub fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .expect("kill")
        .success();
    assert!(ok);
}

/// Send `sig`, wait for a clean exit, and return stderr.
pub fn stop(mut child: Child, sig: &str) -> String {
    signal(&child, sig);
    let status = child.wait().expect("exit");
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(status.success(), "{status:?}; stderr:\n{stderr}");
    stderr
}

/// A child's stderr, read line by line on a thread as it comes.
pub struct StderrLines {
    lines: Receiver<String>,
    seen: String,
}

impl StderrLines {
    /// Take `child`'s stderr.
    pub fn take(child: &mut Child) -> Self {
        let err = BufReader::new(child.stderr.take().expect("stderr"));
        let (tx, lines) = channel();
        // Ends when the pipe closes (the child exited) or the receiver is gone.
        std::thread::spawn(move || {
            for line in err.lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Self {
            lines,
            seen: String::new(),
        }
    }

    /// Wait (at most 20 s) for a line not read yet that contains `needle`.
    pub fn wait_for(&mut self, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push_str(&line);
                    self.seen.push('\n');
                    if line.contains(needle) {
                        return;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!("no {needle:?} on stderr within 20 s:\n{}", self.seen)
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("stderr closed before {needle:?}:\n{}", self.seen)
                }
            }
        }
    }

    /// Everything read, once the child has exited (its stderr closed).
    pub fn rest(mut self) -> String {
        while let Ok(line) = self.lines.recv() {
            self.seen.push_str(&line);
            self.seen.push('\n');
        }
        self.seen
    }
}
