//! The `ferry-load` command line.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::builder::TypedValueParser;
use clap::{Args, Parser, Subcommand};
use ferry_core::s3::sigv4::Credentials;

use crate::agents::agent::AgentOptions;
use crate::agents::coordinator::{CoordinatorOptions, OnAgentLoss, coordinate};
use crate::agents::wire::Token;
use crate::autoterm::AutotermSpec;
use crate::client::{ClientOptions, S3Client};
use crate::config::{LoadConfig, MixWeights, ProgressMode, RuntimeKind, Workload};
use crate::embedded::{EmbeddedOptions, embedded_cluster};
use crate::endpoint::{Endpoint, EndpointPolicy};
use crate::report::RunReport;
use crate::size::{SizeSpec, parse_bytes};

/// An exact S3 load tester: verified payloads, HDR latencies, open-loop schedules.
#[derive(Debug, Parser)]
#[command(name = "ferry-load", version)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// PUT new objects.
    Put(LoadArgs),
    /// GET prepared objects, verifying every byte.
    Get(LoadArgs),
    /// A weighted mix of get, stat, put and delete (--mix).
    Mixed(LoadArgs),
    /// DELETE prepared objects, each once.
    Delete(LoadArgs),
    /// List prepared objects page by page.
    List(LoadArgs),
    /// HEAD prepared objects.
    Stat(LoadArgs),
    /// Multipart uploads (--parts, --part-size, --parts-in-flight).
    Multipart(LoadArgs),
    /// Compare runs side by side (from --json): `compare A.json B.json`, or several runs a
    /// side, `compare A1.json A2.json ... -- B1.json B2.json ...`: medians ± spread, the
    /// change and a Mann-Whitney U p-value (`~`: not significant at 5%).
    Compare {
        /// The baseline runs (or, without `--`, the baseline run and the run compared with it).
        #[arg(required = true)]
        a: Vec<PathBuf>,
        /// After `--`: the runs compared with the baseline.
        #[arg(last = true)]
        b: Vec<PathBuf>,
    },
    /// Plot a run's throughput and p99 over time as SVG.
    Plot {
        /// The run (from --json).
        input: PathBuf,
        /// The SVG to write.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Merge runs (e.g. from several client machines) into one report.
    Merge {
        /// The runs.
        #[arg(required = true, num_args = 2..)]
        inputs: Vec<PathBuf>,
        /// The merged JSON to write.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Print a presigned GET URL (for tools such as wrk).
    Presign(PresignArgs),
    /// Wait for a coordinator (`ferry-load <workload> --agents ...`) and run its load.
    Agent(AgentArgs),
    /// The same workload against two endpoints (a proxy and what it fronts) in alternating
    /// rounds: throughput and latency of each, and their ratio.
    Overhead(OverheadArgs),
}

/// Options of `overhead`.
#[derive(Debug, Clone, Args)]
pub struct OverheadArgs {
    /// The endpoint loaded directly (what the other one fronts).
    #[arg(long, value_name = "URL")]
    pub direct: String,
    /// The endpoint in front of it (a proxy).
    #[arg(long, value_name = "URL")]
    pub via: String,
    /// The workload of every round.
    #[arg(long, value_enum, default_value_t = Workload::Get)]
    pub workload: Workload,
    /// Rounds on each endpoint, alternating (each of --duration or --ops).
    #[arg(long, default_value_t = 3)]
    pub rounds: u32,
    #[command(flatten)]
    pub load: LoadArgs,
}

/// Options of `agent`.
#[derive(Debug, Clone, Args)]
pub struct AgentArgs {
    /// Address to listen on for a coordinator (port 7761 if none is given).
    #[arg(long, default_value = "0.0.0.0:7761")]
    pub listen: String,
    /// The shared token (at least 16 bytes; else FERRY_LOAD_TOKEN).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Write each run's own report here as JSON (`<run>-agent<N>.json`).
    #[arg(long, value_name = "DIR")]
    pub json_dir: Option<PathBuf>,
    /// How long the coordinator may stay silent before the run is stopped (it sends a
    /// heartbeat every second).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Test hook: pretend this machine's clock is this many milliseconds ahead.
    #[arg(long, hide = true, default_value_t = 0, allow_negative_numbers = true)]
    pub clock_skew_ms: i64,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    if let Ok(secs) = s.parse::<f64>()
        && secs.is_finite()
        && secs >= 0.0
    {
        return Ok(Duration::from_secs_f64(secs));
    }
    humantime::parse_duration(s).map_err(|e| format!("invalid duration {s:?}: {e}"))
}

/// Where to send requests and how to sign them.
#[derive(Debug, Clone, Args)]
pub struct TargetArgs {
    /// S3 endpoint URL, http://host:port or https://host:port (repeat for several).
    #[arg(long = "endpoint", value_name = "URL")]
    pub endpoints: Vec<String>,
    /// How operations are spread over endpoints.
    #[arg(long, value_enum, default_value_t = EndpointPolicy::RoundRobin)]
    pub endpoint_policy: EndpointPolicy,
    /// Access key id (else FERRY_ACCESS_KEY, else AWS_ACCESS_KEY_ID).
    #[arg(long)]
    pub access_key: Option<String>,
    /// Secret key (else FERRY_SECRET_KEY, else AWS_SECRET_ACCESS_KEY).
    #[arg(long)]
    pub secret_key: Option<String>,
    /// SigV4 region (else AWS_REGION, else us-east-1).
    #[arg(long)]
    pub region: Option<String>,
    /// https endpoints: accept any certificate (self-signed test ones).
    #[arg(long, conflicts_with = "ca_cert")]
    pub insecure: bool,
    /// https endpoints: also trust the CA certificates of this PEM file (besides the webpki
    /// roots).
    #[arg(long, value_name = "FILE")]
    pub ca_cert: Option<PathBuf>,
    /// Bucket (created if missing; the base name with --buckets).
    #[arg(long, default_value = "ferry-load")]
    pub bucket: String,
}

/// Options of the load workloads.
#[derive(Debug, Clone, Args)]
pub struct LoadArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Spread objects over N buckets: BUCKET-0 .. BUCKET-(N-1).
    #[arg(long, default_value_t = 1)]
    pub buckets: u32,
    /// Key prefix.
    #[arg(long, default_value = "ferry-load/")]
    pub prefix: String,
    /// Operations in flight (workers).
    #[arg(short, long, default_value_t = 16)]
    pub concurrency: usize,
    /// Object size: fixed (1MiB), log-uniform (4KiB..64MiB) or weighted (4KiB:50,1MiB:50).
    #[arg(long, default_value = "1MiB")]
    pub size: SizeSpec,
    /// Run this long (30s, 5m); 10s when neither this nor --ops is given.
    #[arg(short, long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Stop after this many operations.
    #[arg(long)]
    pub ops: Option<u64>,
    /// Objects prepared for get, stat, delete, list and mixed.
    #[arg(long, default_value_t = 100)]
    pub objects: u64,
    /// Open loop: start operations on a fixed schedule of this many per second; latency is
    /// measured from each scheduled start (corrected for coordinated omission).
    #[arg(long, value_name = "OPS")]
    pub rate: Option<f64>,
    /// Stop once throughput is stable: every fifth of the last WINDOW within TOLERANCE percent
    /// of the window's mean (default 10s,7.5); --duration then bounds the run (15m if not
    /// given). Works with --agents (decided on the merged throughput).
    #[arg(
        long,
        value_name = "WINDOW,TOLERANCE",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = ""
    )]
    pub autoterm: Option<AutotermSpec>,
    /// Mixed workload weights.
    #[arg(long, default_value = "get=45,stat=30,put=15,delete=10")]
    pub mix: MixWeights,
    /// Multipart: parts per upload.
    #[arg(long, default_value_t = 4)]
    pub parts: u32,
    /// Multipart: bytes per part.
    #[arg(long, default_value = "5MiB", value_parser = parse_bytes)]
    pub part_size: u64,
    /// Multipart: parts uploaded at once within an upload.
    #[arg(long, default_value_t = 4)]
    pub parts_in_flight: usize,
    /// List: keys per page (1..=1000).
    #[arg(long, default_value_t = 1000)]
    pub list_max_keys: u32,
    /// Delete the objects the run created at the end (the default).
    #[arg(long, overrides_with = "keep_data")]
    pub cleanup: bool,
    /// Keep the objects the run created.
    #[arg(long, overrides_with = "cleanup")]
    pub keep_data: bool,
    /// Do not compare GET bodies with the expected content.
    #[arg(long)]
    pub no_verify: bool,
    /// Send Content-MD5 and check single-part ETags against it.
    #[arg(long)]
    pub md5: bool,
    /// Retries of an object operation (PUT, GET, HEAD, DELETE) that was throttled (503
    /// SlowDown, 429, ...) or lost its connection, after an exponential backoff with jitter as
    /// the AWS SDKs do (100 ms doubling, at most 2 s); counted apart from failures. 0: none.
    #[arg(long, visible_alias = "retry", default_value_t = crate::config::DEFAULT_RETRIES, value_name = "N")]
    pub retries: u32,
    /// Sign each body's SHA-256 instead of UNSIGNED-PAYLOAD.
    #[arg(long)]
    pub payload_sha256: bool,
    /// Send bodies of at least this size with Expect: 100-continue ("off" to never).
    #[arg(long, default_value = "1MiB")]
    pub expect_continue: String,
    /// Runtime of the client.
    #[arg(long, value_parser = runtime_parser(), default_value_t = RuntimeKind::Tokio)]
    pub runtime: RuntimeKind,
    /// Runtime threads (0: one per CPU).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Seed of the generated content and of the random choices.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write the whole report (histograms included) as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the per-second time series as CSV.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Start an in-process cluster in a temporary directory and load it.
    #[arg(long)]
    pub embedded: bool,
    /// fsync writes in the embedded cluster.
    #[arg(long)]
    pub embedded_fsync: bool,
    /// No progress display.
    #[arg(short, long)]
    pub quiet: bool,
    /// Coordinate these agents (`ferry-load agent`) instead of loading the endpoints from
    /// here: HOST[:PORT],... (port 7761 by default). Each agent runs --concurrency workers;
    /// --ops, --objects and --rate are shared out among them.
    #[arg(long, value_delimiter = ',', value_name = "HOST:PORT,...")]
    pub agents: Vec<String>,
    /// With --agents: the shared token (at least 16 bytes; else FERRY_LOAD_TOKEN).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// With --agents: refuse to start when an agent's clock is further off than this.
    #[arg(long, default_value = "50ms", value_parser = parse_duration)]
    pub max_clock_offset: Duration,
    /// With --agents: what an agent lost mid-run does (the run ends either way with a
    /// report, exit status 2).
    #[arg(long, value_enum, default_value_t = OnAgentLoss::Stop)]
    pub on_agent_loss: OnAgentLoss,
    /// With --agents: how long an agent may stay silent before it counts as lost (agents send
    /// a heartbeat every second).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub agent_timeout: Duration,
}

/// Options of `presign`.
#[derive(Debug, Clone, Args)]
pub struct PresignArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// The object key.
    #[arg(long)]
    pub key: String,
    /// Validity in seconds (at most a week).
    #[arg(long, default_value_t = 3600)]
    pub expires: u64,
}

fn env(names: &[&str]) -> Option<String> {
    names
        .iter()
        .find_map(|n| std::env::var(n).ok().filter(|v| !v.is_empty()))
}

impl TargetArgs {
    fn credentials(&self, embedded: bool) -> Result<Credentials, String> {
        let access = self
            .access_key
            .clone()
            .or_else(|| env(&["FERRY_ACCESS_KEY", "AWS_ACCESS_KEY_ID"]));
        let secret = self
            .secret_key
            .clone()
            .or_else(|| env(&["FERRY_SECRET_KEY", "AWS_SECRET_ACCESS_KEY"]));
        match (access, secret) {
            (Some(a), Some(s)) => Ok(Credentials::new(a, s)),
            (None, None) if embedded => Ok(Credentials::new(
                crate::embedded::EMBEDDED_ACCESS_KEY,
                crate::embedded::EMBEDDED_SECRET_KEY,
            )),
            _ => Err(
                "credentials needed: --access-key/--secret-key, FERRY_ACCESS_KEY/FERRY_SECRET_KEY \
                 or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY"
                    .into(),
            ),
        }
    }

    fn region(&self) -> String {
        self.region
            .clone()
            .or_else(|| env(&["AWS_REGION", "AWS_DEFAULT_REGION"]))
            .unwrap_or_else(|| "us-east-1".into())
    }
}

impl LoadArgs {
    /// The run configuration these options describe.
    pub fn config(&self, workload: Workload) -> Result<LoadConfig, String> {
        let t = &self.target;
        let credentials = t.credentials(self.embedded)?;
        let mut cfg = LoadConfig::new(workload, String::new(), credentials);
        cfg.endpoints = t.endpoints.clone();
        cfg.endpoint_policy = t.endpoint_policy;
        cfg.region = t.region();
        cfg.bucket = t.bucket.clone();
        cfg.buckets = self.buckets;
        cfg.prefix = self.prefix.clone();
        cfg.concurrency = self.concurrency;
        cfg.size = self.size.clone();
        cfg.duration = self.duration;
        cfg.ops = self.ops;
        cfg.objects = self.objects;
        cfg.rate = self.rate;
        cfg.autoterm = self.autoterm;
        cfg.mix = self.mix;
        cfg.parts = self.parts;
        cfg.part_size = self.part_size;
        cfg.parts_in_flight = self.parts_in_flight;
        cfg.list_max_keys = self.list_max_keys;
        cfg.cleanup = !self.keep_data;
        cfg.verify = !self.no_verify;
        cfg.md5 = self.md5;
        cfg.retries = self.retries;
        cfg.payload_sha256 = self.payload_sha256;
        cfg.expect_continue_from = match self.expect_continue.as_str() {
            "off" | "never" => None,
            s => Some(parse_bytes(s)?),
        };
        cfg.runtime = self.runtime;
        cfg.threads = self.threads;
        cfg.seed = self.seed;
        cfg.insecure = t.insecure;
        cfg.ca_cert.clone_from(&t.ca_cert);
        cfg.progress = if self.quiet {
            ProgressMode::Off
        } else {
            ProgressMode::Auto
        };
        Ok(cfg)
    }
}

fn read_report(path: &Path) -> Result<RunReport, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    serde_json::from_str(&text)
        .map_err(|e| format!("{}: not a ferry-load report: {e}", path.display()))
}

fn write_file(path: &Path, contents: &str) -> Result<(), String> {
    std::fs::write(path, contents).map_err(|e| format!("writing {}: {e}", path.display()))
}

/// The agents' token: from `file`, else `FERRY_LOAD_TOKEN`.
fn token(file: Option<&Path>) -> Result<Token, String> {
    match (file, env(&["FERRY_LOAD_TOKEN"])) {
        (Some(f), _) => Token::read(f),
        (None, Some(t)) => Token::new(t.as_bytes()).map_err(|e| format!("FERRY_LOAD_TOKEN: {e}")),
        (None, None) => Err(
            "agents need a shared token: --token-file FILE (or FERRY_LOAD_TOKEN) on the \
             coordinator and on every agent"
                .into(),
        ),
    }
}

/// Run a load workload: embedded cluster if asked (or agents), the run, the summary and the
/// files. `Ok(true)` when every operation succeeded.
pub fn load(workload: Workload, args: &LoadArgs) -> Result<bool, String> {
    let mut cfg = args.config(workload)?;
    if !args.agents.is_empty() {
        if args.embedded {
            return Err(
                "--embedded runs the cluster in this process, which agents cannot reach: \
                 start one they can (`ferry`, `ferry node`) and give its --endpoint"
                    .into(),
            );
        }
        let opts = CoordinatorOptions {
            agents: args.agents.clone(),
            token: token(args.token_file.as_deref())?,
            max_clock_offset: args.max_clock_offset,
            on_loss: args.on_agent_loss,
            timeout: args.agent_timeout,
        };
        // The results are shown as soon as they are in; the agents' cleanup comes after.
        let mut shown = None;
        let report = coordinate(cfg, &opts, |r| {
            print!("{}", r.summary());
            let _ = std::io::Write::flush(&mut std::io::stdout());
            shown = Some(r.notes.len());
        })?;
        match shown {
            Some(notes) => print!("{}", report.summary_tail(notes)),
            None => print!("{}", report.summary()),
        }
        return write_files(&report, args);
    }
    let cluster = if args.embedded {
        let opts = EmbeddedOptions {
            runtime: cfg.runtime,
            threads: cfg.threads,
            access_key: cfg.credentials.access_key_id.clone(),
            secret_key: cfg.credentials.secret_access_key.clone(),
            region: cfg.region.clone(),
            fsync: args.embedded_fsync,
            ..EmbeddedOptions::default()
        };
        let c =
            embedded_cluster(&opts).map_err(|e| format!("starting the embedded cluster: {e}"))?;
        cfg.endpoints = c.endpoints().to_vec();
        eprintln!(
            "embedded cluster at {} (data in {})",
            cfg.endpoints.join(" "),
            c.data_dir().display()
        );
        Some(c)
    } else {
        None
    };
    let report = crate::run::run_with(cfg, cluster.is_some())?;
    if let Some(c) = cluster {
        c.stop();
    }
    finish(&report, args)
}

/// The end of a run: the summary, the JSON and CSV files; whether everything succeeded.
fn finish(report: &RunReport, args: &LoadArgs) -> Result<bool, String> {
    print!("{}", report.summary());
    write_files(report, args)
}

/// The JSON and CSV files of a run; whether everything succeeded.
fn write_files(report: &RunReport, args: &LoadArgs) -> Result<bool, String> {
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(report).map_err(|e| e.to_string())?;
        write_file(path, &json)?;
    }
    if let Some(path) = &args.csv {
        write_file(path, &report.series_csv())?;
    }
    Ok(report.all_succeeded())
}

/// `overhead`: the rounds, the table, the JSON.
fn overhead(args: &OverheadArgs) -> Result<bool, String> {
    let l = &args.load;
    if !l.target.endpoints.is_empty() || l.embedded || !l.agents.is_empty() || l.csv.is_some() {
        return Err(
            "overhead takes its endpoints from --direct and --via (no --endpoint, --embedded, \
             --agents or --csv)"
                .into(),
        );
    }
    let mut cfg = l.config(args.workload)?;
    cfg.endpoints = vec![args.direct.clone()];
    cfg.validate()?;
    let report =
        crate::overhead::overhead(&cfg, &args.direct, &args.via, args.rounds, |r, url| {
            if cfg.progress != ProgressMode::Off {
                eprintln!("round {r}/{}: {url}", args.rounds);
            }
        })?;
    print!("{}", report.table());
    if let Some(path) = &l.json {
        let json = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        write_file(path, &json)?;
    }
    Ok(report.all_succeeded())
}

fn presign(args: &PresignArgs) -> Result<String, String> {
    let t = &args.target;
    let url = t.endpoints.first().ok_or("presign needs an --endpoint")?;
    let endpoint = Endpoint::parse(url)?;
    let opts = ClientOptions {
        credentials: t.credentials(false)?,
        region: t.region(),
        payload_sha256: false,
        md5: false,
        verify: false,
        expect_continue_from: None,
        seed: 0,
        sizes: None,
    };
    let (bucket, key, expires) = (t.bucket.clone(), args.key.clone(), args.expires);
    // Nothing is sent: the TLS configuration is never used.
    let tls = ferry_net::client_config(None, true).map_err(|e| e.to_string())?;
    // The client needs a runtime for its clock.
    ferry_tokio::block_on_threads(1, |rt| async move {
        S3Client::new(rt, vec![endpoint], EndpointPolicy::RoundRobin, opts, tls)
            .presign_get(&bucket, &key, expires)
    })
    .map_err(|e| e.to_string())?
}

/// `--runtime NAME`: a name from [`RuntimeKind::ALL`], listed in the help and in errors.
fn runtime_parser() -> impl TypedValueParser<Value = RuntimeKind> {
    clap::builder::PossibleValuesParser::new(RuntimeKind::ALL.map(RuntimeKind::as_str))
        .try_map(|name| name.parse::<RuntimeKind>())
}

/// Parse the command line and run; the process exit code (1: could not run, 2: operations
/// failed).
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let out = match &cli.command {
        Command::Put(a) => load(Workload::Put, a),
        Command::Get(a) => load(Workload::Get, a),
        Command::Mixed(a) => load(Workload::Mixed, a),
        Command::Delete(a) => load(Workload::Delete, a),
        Command::List(a) => load(Workload::List, a),
        Command::Stat(a) => load(Workload::Stat, a),
        Command::Multipart(a) => load(Workload::Multipart, a),
        Command::Compare { a, b } => (|| {
            let (a, b) = match (a.as_slice(), b.is_empty()) {
                ([one, other], true) => (vec![one.clone()], vec![other.clone()]),
                (_, true) => {
                    return Err(
                        "compare takes two runs (A.json B.json), or the runs of each side \
                         apart: A1.json A2.json ... -- B1.json B2.json ..."
                            .to_owned(),
                    );
                }
                _ => (a.clone(), b.clone()),
            };
            let read = |paths: &[PathBuf]| -> Result<Vec<RunReport>, String> {
                paths.iter().map(|p| read_report(p)).collect()
            };
            let names = |paths: &[PathBuf]| -> Vec<String> {
                paths.iter().map(|p| p.display().to_string()).collect()
            };
            print!(
                "{}",
                crate::compare::compare_sets(&read(&a)?, &read(&b)?, &names(&a), &names(&b))
            );
            Ok(true)
        })(),
        Command::Plot { input, output } => read_report(input).and_then(|r| {
            write_file(output, &crate::plot::svg(&r))?;
            Ok(true)
        }),
        Command::Merge { inputs, output } => (|| {
            let mut merged = read_report(&inputs[0])?;
            for p in &inputs[1..] {
                merged.merge(&read_report(p)?)?;
            }
            let json = serde_json::to_string_pretty(&merged).map_err(|e| e.to_string())?;
            write_file(output, &json)?;
            print!("{}", merged.summary());
            Ok(true)
        })(),
        Command::Presign(a) => presign(a).map(|url| {
            println!("{url}");
            true
        }),
        Command::Overhead(a) => overhead(a),
        Command::Agent(a) => (|| {
            let opts = AgentOptions {
                token: token(a.token_file.as_deref())?,
                json_dir: a.json_dir.clone(),
                timeout: a.timeout,
                clock_skew_ns: a.clock_skew_ms.saturating_mul(1_000_000),
            };
            crate::agents::agent::listen(&a.listen, opts).map(|()| true)
        })(),
    };
    match out {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(2),
        Err(e) => {
            eprintln!("ferry-load: {e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Cli {
        Cli::try_parse_from(std::iter::once("ferry-load").chain(args.iter().copied())).unwrap()
    }

    #[test]
    fn the_example_command_line() {
        let cli = parse(&[
            "put",
            "--endpoint",
            "http://127.0.0.1:7001",
            "--size",
            "1MiB",
            "--concurrency",
            "16",
            "--duration",
            "30s",
            "--access-key",
            "a",
            "--secret-key",
            "s",
        ]);
        let Command::Put(args) = cli.command else {
            panic!("not put")
        };
        let cfg = args.config(Workload::Put).unwrap();
        assert_eq!(cfg.endpoints, ["http://127.0.0.1:7001"]);
        assert_eq!(cfg.size, SizeSpec::Fixed(1 << 20));
        assert_eq!(cfg.concurrency, 16);
        assert_eq!(cfg.duration, Some(Duration::from_secs(30)));
        assert!(cfg.cleanup && cfg.verify);
        assert_eq!(cfg.credentials, Credentials::new("a", "s"));
    }

    #[test]
    fn options_map_to_the_config() {
        let cli = parse(&[
            "mixed",
            "--endpoint",
            "http://a:1",
            "--endpoint",
            "http://b:2",
            "--endpoint-policy",
            "least-busy",
            "--access-key",
            "a",
            "--secret-key",
            "s",
            "--mix",
            "get=1,put=1",
            "--rate",
            "250",
            "--ops",
            "1000",
            "--keep-data",
            "--no-verify",
            "--md5",
            "--payload-sha256",
            "--expect-continue",
            "off",
            "--runtime",
            "smol",
            "--size",
            "4KiB:50,1MiB:50",
            "--part-size",
            "8MiB",
            "-d",
            "1.5",
        ]);
        let Command::Mixed(args) = cli.command else {
            panic!("not mixed")
        };
        let cfg = args.config(Workload::Mixed).unwrap();
        assert_eq!(cfg.endpoints.len(), 2);
        assert_eq!(cfg.endpoint_policy, EndpointPolicy::LeastBusy);
        assert_eq!((cfg.mix.get, cfg.mix.put, cfg.mix.stat), (1, 1, 0));
        assert_eq!((cfg.rate, cfg.ops), (Some(250.0), Some(1000)));
        assert!(!cfg.cleanup && !cfg.verify && cfg.md5 && cfg.payload_sha256);
        assert_eq!(cfg.expect_continue_from, None);
        assert_eq!(cfg.runtime, RuntimeKind::Smol);
        assert_eq!(cfg.part_size, 8 << 20);
        assert_eq!(cfg.duration, Some(Duration::from_millis(1500)));
    }

    #[test]
    fn autoterm_takes_an_optional_value() {
        let cfg = |args: &[&str]| {
            let Command::Put(a) = parse(args).command else {
                panic!("not put")
            };
            a.config(Workload::Put).unwrap()
        };
        let base = ["put", "--embedded"];
        assert_eq!(cfg(&base).autoterm, None);
        let with = |extra: &str| cfg(&[base[0], base[1], extra]).autoterm;
        assert_eq!(with("--autoterm"), Some(AutotermSpec::default()));
        let s = with("--autoterm=30s,5").unwrap();
        assert_eq!((s.window.as_secs(), s.tolerance_pct), (30, 5.0));
        assert_eq!(
            cfg(&base).duration_limit(),
            Some(LoadConfig::DEFAULT_DURATION)
        );
        let c = cfg(&[base[0], base[1], "--autoterm"]);
        assert_eq!(c.duration_limit(), Some(AutotermSpec::DEFAULT_CAP));
        let argv = ["ferry-load", "put", "--autoterm=1s"];
        assert!(Cli::try_parse_from(argv).is_err());
    }

    #[test]
    fn embedded_runs_need_no_credentials() {
        let cli = parse(&["get", "--embedded"]);
        let Command::Get(args) = cli.command else {
            panic!("not get")
        };
        let cfg = args.config(Workload::Get).unwrap();
        assert_eq!(
            cfg.credentials.access_key_id,
            crate::embedded::EMBEDDED_ACCESS_KEY
        );
    }

    #[test]
    fn bad_values_are_refused() {
        for args in [
            &["put", "--size", "lots"][..],
            &["put", "--duration", "soon"],
            &["mixed", "--mix", "copy=1"],
            &["put", "--runtime", "async-std"],
            &["put", "--endpoint-policy", "random"],
        ] {
            let argv = std::iter::once("ferry-load").chain(args.iter().copied());
            assert!(Cli::try_parse_from(argv).is_err(), "{args:?}");
        }
    }
}
