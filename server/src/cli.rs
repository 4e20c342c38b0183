//! The `ferry` command line: `ferry node ...` runs a storage node until SIGTERM or SIGINT.

use std::fs;
use std::io::{self, Write as _};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::node::{NodeConfig, RuntimeKind, start_node};
use crate::store::DEFAULT_MIN_PART_SIZE;

/// Ferry: S3 storage node.
#[derive(Debug, Parser)]
#[command(name = "ferry", version, about)]
pub struct Cli {
    /// What to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a storage node: the S3 API over a local store.
    Node(NodeArgs),
}

/// `ferry node` options.
#[derive(Debug, Clone, Args)]
pub struct NodeArgs {
    /// Directory of the store (created if missing).
    #[arg(long, value_name = "DIR")]
    pub data: PathBuf,
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, value_name = "ADDR")]
    pub listen: SocketAddr,
    /// Async runtime: tokio or smol.
    #[arg(long, value_name = "NAME", default_value_t = RuntimeKind::Tokio)]
    pub runtime: RuntimeKind,
    /// Region that request signatures are scoped to.
    #[arg(long, value_name = "REGION", default_value = "us-east-1")]
    pub region: String,
    /// Runtime worker threads (0: one per CPU).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub threads: usize,
    /// Smallest size of every part but the last of a multipart upload.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MIN_PART_SIZE)]
    pub min_part_size: u64,
    /// File with the access key and the secret key, one per line (when the environment has
    /// neither FERRY_ACCESS_KEY/FERRY_SECRET_KEY nor AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY).
    #[arg(long, value_name = "FILE")]
    pub credentials: Option<PathBuf>,
    /// Do not fsync writes (tests and benchmarks only: a crash may lose acknowledged writes).
    #[arg(long)]
    pub no_fsync: bool,
}

/// Where the node's key came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialSource {
    /// `FERRY_ACCESS_KEY` / `FERRY_SECRET_KEY`.
    FerryEnv,
    /// `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY`.
    AwsEnv,
    /// `--credentials FILE`.
    File(PathBuf),
    /// `DIR/credentials`, written by an earlier start.
    Stored(PathBuf),
    /// `DIR/credentials`, generated now.
    Generated(PathBuf),
}

/// The access key and secret a node accepts, and where they came from.
#[derive(Clone, PartialEq, Eq)]
pub struct NodeCredentials {
    /// The access key id.
    pub access_key: String,
    /// The secret access key.
    pub secret_key: String,
    /// Where they came from.
    pub source: CredentialSource,
}

impl std::fmt::Debug for NodeCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeCredentials")
            .field("access_key", &self.access_key)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

/// The name of the generated credentials file in the data directory.
pub const CREDENTIALS_FILE: &str = "credentials";

/// Find the node's credentials: `FERRY_*` variables, else `AWS_*` variables, else `file`, else
/// `data_dir/credentials`, generated (mode 0600) when missing. `env` reads a variable.
pub fn resolve_credentials(
    env: &dyn Fn(&str) -> Option<String>,
    file: Option<&Path>,
    data_dir: &Path,
) -> io::Result<NodeCredentials> {
    let pair = |id: &str, secret: &str| match (env(id), env(secret)) {
        (Some(a), Some(s)) if !a.is_empty() && !s.is_empty() => Some((a, s)),
        _ => None,
    };
    if let Some((access_key, secret_key)) = pair("FERRY_ACCESS_KEY", "FERRY_SECRET_KEY") {
        return Ok(NodeCredentials {
            access_key,
            secret_key,
            source: CredentialSource::FerryEnv,
        });
    }
    if let Some((access_key, secret_key)) = pair("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY") {
        return Ok(NodeCredentials {
            access_key,
            secret_key,
            source: CredentialSource::AwsEnv,
        });
    }
    if let Some(path) = file {
        let (access_key, secret_key) = read_credentials(path)?;
        return Ok(NodeCredentials {
            access_key,
            secret_key,
            source: CredentialSource::File(path.to_owned()),
        });
    }
    let path = data_dir.join(CREDENTIALS_FILE);
    match read_credentials(&path) {
        Ok((access_key, secret_key)) => Ok(NodeCredentials {
            access_key,
            secret_key,
            source: CredentialSource::Stored(path),
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let (access_key, secret_key) = generate_credentials()?;
            write_private(&path, format!("{access_key}\n{secret_key}\n").as_bytes())?;
            Ok(NodeCredentials {
                access_key,
                secret_key,
                source: CredentialSource::Generated(path),
            })
        }
        Err(e) => Err(e),
    }
}

/// Two non-empty lines: the access key, then the secret key.
fn read_credentials(path: &Path) -> io::Result<(String, String)> {
    let text = fs::read_to_string(path)?;
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    match (lines.next(), lines.next()) {
        (Some(a), Some(s)) => Ok((a.to_owned(), s.to_owned())),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{}: expected two lines, the access key and the secret key",
                path.display()
            ),
        )),
    }
}

/// A random access key (20 upper-case letters and digits, as AWS's look) and secret (40
/// letters and digits).
fn generate_credentials() -> io::Result<(String, String)> {
    const UPPER: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    const ANY: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut bytes = [0u8; 60];
    getrandom::fill(&mut bytes).map_err(io::Error::other)?;
    let (a, s) = bytes.split_at(20);
    // 32 and 64 symbols: a byte modulo either is uniform.
    let pick = |set: &[u8], b: &u8| char::from(set[usize::from(*b) % set.len()]);
    let access = a.iter().map(|b| pick(UPPER, b)).collect();
    let secret = s.iter().map(|b| pick(ANY, b)).collect();
    Ok((access, secret))
}

/// Create `path` readable by its owner only, and write `data` durably.
fn write_private(path: &Path, data: &[u8]) -> io::Result<()> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut f = options.open(path)?;
    f.write_all(data)?;
    f.sync_all()
}

/// `ferry node`: start the node, print the ready line, wait for SIGTERM or SIGINT, stop
/// gracefully.
pub fn run_node(args: NodeArgs) -> io::Result<()> {
    // Before anything starts, so that a signal sent as soon as the node is ready stops it
    // gracefully instead of killing the process.
    let mut signals = Signals::new([SIGTERM, SIGINT])?;
    fs::create_dir_all(&args.data)?;
    let creds = resolve_credentials(
        &|name| std::env::var(name).ok(),
        args.credentials.as_deref(),
        &args.data,
    )?;
    if let CredentialSource::Generated(path) = &creds.source {
        // Shown once, on stderr: stdout carries only the ready line.
        eprintln!("generated credentials in {}", path.display());
        eprintln!("access key: {}", creds.access_key);
        eprintln!("secret key: {}", creds.secret_key);
    }
    let mut cfg = NodeConfig::new(&args.data, args.listen, creds.access_key, creds.secret_key);
    cfg.region = args.region;
    cfg.runtime = args.runtime;
    cfg.threads = args.threads;
    cfg.min_part_size = args.min_part_size;
    cfg.fsync = !args.no_fsync;
    let node = start_node(cfg)?;
    {
        let mut out = io::stdout().lock();
        writeln!(out, "ferry node listening on http://{}", node.local_addr())?;
        out.flush()?;
    }
    // Blocks until SIGTERM or SIGINT arrives.
    let _ = signals.forever().next();
    node.stop();
    Ok(())
}

/// The `ferry` program.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Node(args) => run_node(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ferry: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn credentials_come_from_env_then_file_then_data_dir() {
        let dir = tempfile::tempdir().unwrap();
        let both = env(&[
            ("FERRY_ACCESS_KEY", "fa"),
            ("FERRY_SECRET_KEY", "fs"),
            ("AWS_ACCESS_KEY_ID", "aa"),
            ("AWS_SECRET_ACCESS_KEY", "as"),
        ]);
        let c = resolve_credentials(&both, None, dir.path()).unwrap();
        assert_eq!(
            (c.access_key.as_str(), c.source),
            ("fa", CredentialSource::FerryEnv)
        );
        // Half a FERRY pair does not count.
        let aws = env(&[
            ("FERRY_ACCESS_KEY", "fa"),
            ("AWS_ACCESS_KEY_ID", "aa"),
            ("AWS_SECRET_ACCESS_KEY", "as"),
        ]);
        let c = resolve_credentials(&aws, None, dir.path()).unwrap();
        assert_eq!(
            (c.secret_key.as_str(), c.source),
            ("as", CredentialSource::AwsEnv)
        );

        let file = dir.path().join("keys");
        fs::write(&file, "  AKID\n\nSECRET  \n").unwrap();
        let c = resolve_credentials(&env(&[]), Some(&file), dir.path()).unwrap();
        assert_eq!(
            (c.access_key.as_str(), c.secret_key.as_str()),
            ("AKID", "SECRET")
        );
        fs::write(&file, "only one line\n").unwrap();
        let e = resolve_credentials(&env(&[]), Some(&file), dir.path()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(dir.path().join(CREDENTIALS_FILE).metadata().is_err());
    }

    #[test]
    fn generated_credentials_are_private_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let first = resolve_credentials(&env(&[]), None, dir.path()).unwrap();
        let path = dir.path().join(CREDENTIALS_FILE);
        assert_eq!(first.source, CredentialSource::Generated(path.clone()));
        assert_eq!(first.access_key.len(), 20);
        assert_eq!(first.secret_key.len(), 40);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = path.metadata().unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let again = resolve_credentials(&env(&[]), None, dir.path()).unwrap();
        assert_eq!(again.source, CredentialSource::Stored(path));
        assert_eq!(
            (again.access_key, again.secret_key),
            (first.access_key, first.secret_key)
        );
    }

    #[test]
    fn command_line_parses_as_the_contract_says() {
        let cli = Cli::try_parse_from([
            "ferry",
            "node",
            "--data",
            "/tmp/d",
            "--listen",
            "127.0.0.1:0",
            "--runtime",
            "smol",
            "--min-part-size",
            "1024",
        ])
        .unwrap();
        let Command::Node(a) = cli.command;
        assert_eq!(a.runtime, RuntimeKind::Smol);
        assert_eq!(a.min_part_size, 1024);
        assert_eq!(a.region, "us-east-1");
        assert_eq!(a.threads, 0);
        assert!(Cli::try_parse_from(["ferry", "node", "--data", "d", "--listen", "x:1"]).is_err());
        assert!(
            Cli::try_parse_from([
                "ferry",
                "node",
                "--data",
                "d",
                "--listen",
                "127.0.0.1:1",
                "--runtime",
                "glommio"
            ])
            .is_err()
        );
    }
}
