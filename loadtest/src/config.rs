//! What a run does: the workload and its options, independent of how they were given.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use ferry_core::s3::sigv4::Credentials;
use serde::{Deserialize, Serialize};

use crate::endpoint::EndpointPolicy;
use crate::size::SizeSpec;

/// The async runtime the client runs on (the server's, so an embedded cluster runs on it too).
pub use ferry_runtime::RuntimeKind;

/// What the workers do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    /// PUT new objects.
    Put,
    /// GET prepared objects (verified).
    Get,
    /// A weighted mix of get, stat, put and delete over a live set of objects.
    Mixed,
    /// DELETE prepared objects, each once.
    Delete,
    /// List prepared objects, page by page.
    List,
    /// HEAD prepared objects.
    Stat,
    /// Multipart uploads.
    Multipart,
}

impl Workload {
    /// Whether objects are put before the measured phase.
    pub fn prepares(self) -> bool {
        matches!(
            self,
            Self::Get | Self::Mixed | Self::Delete | Self::List | Self::Stat
        )
    }

    /// The lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Put => "put",
            Self::Get => "get",
            Self::Mixed => "mixed",
            Self::Delete => "delete",
            Self::List => "list",
            Self::Stat => "stat",
            Self::Multipart => "multipart",
        }
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Weights of the mixed workload (`--mix get=45,stat=30,put=15,delete=10`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MixWeights {
    /// GET weight.
    pub get: u32,
    /// HEAD weight.
    pub stat: u32,
    /// PUT weight.
    pub put: u32,
    /// DELETE weight.
    pub delete: u32,
}

impl Default for MixWeights {
    fn default() -> Self {
        Self {
            get: 45,
            stat: 30,
            put: 15,
            delete: 10,
        }
    }
}

impl MixWeights {
    /// Sum of the weights.
    pub fn total(&self) -> u64 {
        [self.get, self.stat, self.put, self.delete]
            .iter()
            .map(|&w| u64::from(w))
            .sum()
    }
}

impl FromStr for MixWeights {
    type Err = String;

    /// `get=45,stat=30,put=15,delete=10`; names left out get weight 0.
    fn from_str(s: &str) -> Result<Self, String> {
        let mut w = Self {
            get: 0,
            stat: 0,
            put: 0,
            delete: 0,
        };
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, value) = part
                .split_once(['=', ':'])
                .ok_or_else(|| format!("mix entry {part:?} must be NAME=WEIGHT"))?;
            let value: u32 = value
                .trim()
                .parse()
                .map_err(|_| format!("invalid weight in {part:?}"))?;
            match name.trim() {
                "get" => w.get = value,
                "stat" | "head" => w.stat = value,
                "put" => w.put = value,
                "delete" => w.delete = value,
                other => return Err(format!("unknown mix operation {other:?}")),
            }
        }
        if w.total() == 0 {
            return Err("the mix needs a non-zero weight".into());
        }
        Ok(w)
    }
}

impl fmt::Display for MixWeights {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "get={},stat={},put={},delete={}",
            self.get, self.stat, self.put, self.delete
        )
    }
}

/// How progress is shown while running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProgressMode {
    /// A `\r`-updated line on a terminal, plain lines otherwise.
    #[default]
    Auto,
    /// One plain line per second.
    Plain,
    /// Nothing.
    Off,
}

/// Everything a run needs.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    /// What the workers do.
    pub workload: Workload,
    /// Endpoint URLs (`http://host:port`, `https://host:port`).
    pub endpoints: Vec<String>,
    /// How operations are spread over endpoints.
    pub endpoint_policy: EndpointPolicy,
    /// Signing credentials.
    pub credentials: Credentials,
    /// SigV4 region.
    pub region: String,
    /// Bucket name (the base name with `buckets > 1`).
    pub bucket: String,
    /// Number of buckets: `bucket-0` .. `bucket-(N-1)` when more than one.
    pub buckets: u32,
    /// Key prefix.
    pub prefix: String,
    /// Workers (operations in flight).
    pub concurrency: usize,
    /// Object sizes.
    pub size: SizeSpec,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Stop after this many operations.
    pub ops: Option<u64>,
    /// Objects prepared for get/stat/delete/list/mixed.
    pub objects: u64,
    /// Open loop: operations per second on a fixed schedule.
    pub rate: Option<f64>,
    /// Weights of the mixed workload.
    pub mix: MixWeights,
    /// Multipart: parts per upload.
    pub parts: u32,
    /// Multipart: bytes per part.
    pub part_size: u64,
    /// Multipart: parts uploaded at once within one upload.
    pub parts_in_flight: usize,
    /// List: keys per page.
    pub list_max_keys: u32,
    /// Delete what the run created at the end.
    pub cleanup: bool,
    /// Compare GET bodies with the regenerated content.
    pub verify: bool,
    /// Sign body hashes instead of `UNSIGNED-PAYLOAD`.
    pub payload_sha256: bool,
    /// Send `Content-MD5`, check ETags.
    pub md5: bool,
    /// Bodies this long or longer are sent with `Expect: 100-continue`.
    pub expect_continue_from: Option<u64>,
    /// Retries of an object operation after a 503 or a lost connection (see `run::retrying`).
    pub retries: u32,
    /// Runtime.
    pub runtime: RuntimeKind,
    /// Runtime threads (0: one per CPU).
    pub threads: usize,
    /// Fill seed.
    pub seed: u64,
    /// Progress display.
    pub progress: ProgressMode,
    /// `https://` endpoints: accept any certificate (self-signed test ones).
    pub insecure: bool,
    /// `https://` endpoints: also trust the CA certificates of this PEM file.
    pub ca_cert: Option<PathBuf>,
}

/// Retries of an object operation by default: two, three attempts in all, as the AWS SDKs'
/// standard mode makes.
pub const DEFAULT_RETRIES: u32 = 2;

impl LoadConfig {
    /// A configuration with the defaults, for `workload` against `endpoint`.
    pub fn new(workload: Workload, endpoint: impl Into<String>, credentials: Credentials) -> Self {
        Self {
            workload,
            endpoints: vec![endpoint.into()],
            endpoint_policy: EndpointPolicy::RoundRobin,
            credentials,
            region: "us-east-1".into(),
            bucket: "ferry-load".into(),
            buckets: 1,
            prefix: "ferry-load/".into(),
            concurrency: 16,
            size: SizeSpec::Fixed(1 << 20),
            duration: None,
            ops: None,
            objects: 100,
            rate: None,
            mix: MixWeights::default(),
            parts: 4,
            part_size: 5 << 20,
            parts_in_flight: 4,
            list_max_keys: 1000,
            cleanup: true,
            verify: true,
            payload_sha256: false,
            md5: false,
            expect_continue_from: Some(1 << 20),
            retries: DEFAULT_RETRIES,
            runtime: RuntimeKind::Tokio,
            threads: 0,
            seed: 1,
            progress: ProgressMode::Auto,
            insecure: false,
            ca_cert: None,
        }
    }

    /// Check option combinations; the first problem found.
    pub fn validate(&self) -> Result<(), String> {
        if self.endpoints.is_empty() {
            return Err("at least one --endpoint is needed (or --embedded)".into());
        }
        if self.concurrency == 0 {
            return Err("--concurrency must be at least 1".into());
        }
        if self.buckets == 0 {
            return Err("--buckets must be at least 1".into());
        }
        if self.rate.is_some_and(|r| !(r > 0.0 && r.is_finite())) {
            return Err("--rate must be a positive number of operations per second".into());
        }
        if self.workload.prepares() && self.objects == 0 {
            return Err(format!(
                "the {} workload needs --objects of at least 1",
                self.workload
            ));
        }
        if self.workload == Workload::Multipart && (self.parts == 0 || self.parts > 10_000) {
            return Err("--parts must be 1..=10000".into());
        }
        if self.workload == Workload::Multipart && self.part_size == 0 {
            return Err("--part-size must be at least 1 byte".into());
        }
        if self.list_max_keys == 0 || self.list_max_keys > 1000 {
            return Err("--list-max-keys must be 1..=1000".into());
        }
        if self.insecure && self.ca_cert.is_some() {
            return Err("--insecure accepts any certificate: --ca-cert would be ignored".into());
        }
        Ok(())
    }

    /// The bucket names.
    pub fn bucket_names(&self) -> Vec<String> {
        if self.buckets <= 1 {
            vec![self.bucket.clone()]
        } else {
            (0..self.buckets)
                .map(|i| format!("{}-{i}", self.bucket))
                .collect()
        }
    }

    /// The default duration when neither `--duration` nor `--ops` is given.
    pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_parses() {
        assert_eq!(
            "get=45,stat=30,put=15,delete=10".parse(),
            Ok(MixWeights::default())
        );
        let w: MixWeights = "put:1, get=3".parse().unwrap();
        assert_eq!((w.get, w.stat, w.put, w.delete), (3, 0, 1, 0));
        for bad in ["", "get=0", "copy=1", "get", "get=x"] {
            assert!(bad.parse::<MixWeights>().is_err(), "{bad:?}");
        }
        assert_eq!(
            MixWeights::default().to_string().parse(),
            Ok(MixWeights::default())
        );
    }

    #[test]
    fn validation_catches_bad_combinations() {
        let creds = Credentials::new("a", "b");
        let ok = LoadConfig::new(Workload::Get, "http://127.0.0.1:1", creds);
        assert_eq!(ok.validate(), Ok(()));
        let mut c = ok.clone();
        c.objects = 0;
        assert!(c.validate().is_err());
        c.workload = Workload::Put;
        assert_eq!(c.validate(), Ok(()));
        let mut c = ok.clone();
        c.rate = Some(0.0);
        assert!(c.validate().is_err());
        let mut c = ok.clone();
        c.insecure = true;
        assert_eq!(c.validate(), Ok(()));
        c.ca_cert = Some("ca.pem".into());
        assert!(c.validate().unwrap_err().contains("--insecure"));
        let mut c = ok.clone();
        c.buckets = 3;
        assert_eq!(
            c.bucket_names(),
            ["ferry-load-0", "ferry-load-1", "ferry-load-2"]
        );
    }
}
