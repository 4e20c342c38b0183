//! What a run does: the workload and its options, independent of how they were given.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use ferry_core::s3::sigv4::Credentials;
use serde::{Deserialize, Serialize};

use crate::autoterm::AutotermSpec;
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

/// One agent's part of a run across machines: its own object ids, its own random streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Share {
    /// This agent's place, `0..count`.
    pub index: u32,
    /// Agents in the run.
    pub count: u32,
}

impl Share {
    /// Object ids per share: share `i` uses `i * SPAN ..`, so no two agents write one key.
    pub const SPAN: u64 = 1 << 40;
    /// Most agents one run may have (shares of [`Share::SPAN`] ids fill the 64-bit ids).
    pub const MAX_COUNT: u32 = 1 << 16;

    /// The first object id of the share.
    pub fn id_base(self) -> u64 {
        u64::from(self.index) * Self::SPAN
    }

    /// This share's part of `total` (operations, objects): an equal split, the remainder to
    /// the first shares.
    pub fn part_of(self, total: u64) -> u64 {
        let n = u64::from(self.count.max(1));
        total / n + u64::from(u64::from(self.index) < total % n)
    }
}

/// Everything a run needs.
///
/// It serialises (the credentials and CA certificates included, the local paths and the
/// progress display left out) to travel from a coordinator to its agents.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadConfig {
    /// What the workers do.
    pub workload: Workload,
    /// Endpoint URLs (`http://host:port`, `https://host:port`).
    pub endpoints: Vec<String>,
    /// How operations are spread over endpoints.
    pub endpoint_policy: EndpointPolicy,
    /// Signing credentials.
    #[serde(with = "wire_credentials")]
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
    #[serde(with = "wire_runtime")]
    pub runtime: RuntimeKind,
    /// Runtime threads (0: one per CPU).
    pub threads: usize,
    /// Fill seed.
    pub seed: u64,
    /// Progress display.
    #[serde(skip)]
    pub progress: ProgressMode,
    /// `https://` endpoints: accept any certificate (self-signed test ones).
    pub insecure: bool,
    /// `https://` endpoints: also trust the CA certificates of this PEM file.
    #[serde(skip)]
    pub ca_cert: Option<PathBuf>,
    /// The CA certificates themselves (PEM), when they came with the configuration from a
    /// coordinator rather than from a file here; used instead of `ca_cert`.
    #[serde(default)]
    pub ca_pem: Option<String>,
    /// This agent's share of a run across machines (`None`: the whole run is ours).
    #[serde(default)]
    pub share: Option<Share>,
    /// `--autoterm`: stop once throughput is stable.
    #[serde(default)]
    pub autoterm: Option<AutotermSpec>,
}

/// [`Credentials`] as a pair of strings.
mod wire_credentials {
    use super::Credentials;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<S: Serializer>(c: &Credentials, s: S) -> Result<S::Ok, S::Error> {
        (&c.access_key_id, &c.secret_access_key).serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Credentials, D::Error> {
        let (a, k) = <(String, String)>::deserialize(d)?;
        Ok(Credentials::new(a, k))
    }
}

/// [`RuntimeKind`] by its name.
mod wire_runtime {
    use super::RuntimeKind;
    use serde::{Deserialize, Deserializer, Serializer, de::Error as _};

    pub(super) fn serialize<S: Serializer>(r: &RuntimeKind, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(r.as_str())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<RuntimeKind, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(D::Error::custom)
    }
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
            ca_pem: None,
            share: None,
            autoterm: None,
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
        if self.insecure && (self.ca_cert.is_some() || self.ca_pem.is_some()) {
            return Err("--insecure accepts any certificate: --ca-cert would be ignored".into());
        }
        if let Some(s) = self.share
            && (s.count == 0 || s.count > Share::MAX_COUNT || s.index >= s.count)
        {
            return Err(format!(
                "share {} of {} agents is not a share",
                s.index, s.count
            ));
        }
        Ok(())
    }

    /// The first object id of this run (of its share, across machines).
    pub fn id_base(&self) -> u64 {
        self.share.map_or(0, Share::id_base)
    }

    /// How long the run goes when nothing says: 10 s, or [`AutotermSpec::DEFAULT_CAP`] with
    /// `--autoterm` (which ends it sooner).
    pub fn duration_limit(&self) -> Option<Duration> {
        match (self.duration, self.ops) {
            (None, None) if self.autoterm.is_some() => Some(AutotermSpec::DEFAULT_CAP),
            (None, None) => Some(Self::DEFAULT_DURATION),
            (d, _) => d,
        }
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
        c.share = Some(Share { index: 3, count: 3 });
        assert!(c.validate().is_err());
        c.share = Some(Share { index: 2, count: 3 });
        assert_eq!(c.validate(), Ok(()));
        assert_eq!(c.id_base(), 2 << 40);
        let mut c = ok.clone();
        c.buckets = 3;
        assert_eq!(
            c.bucket_names(),
            ["ferry-load-0", "ferry-load-1", "ferry-load-2"]
        );
    }

    #[test]
    fn shares_split_totals() {
        let parts: Vec<u64> = (0..3)
            .map(|index| Share { index, count: 3 }.part_of(10))
            .collect();
        assert_eq!(parts, [4, 3, 3]);
        assert_eq!(Share { index: 4, count: 5 }.part_of(3), 0);
        assert_eq!(Share { index: 0, count: 1 }.part_of(7), 7);
    }

    #[test]
    fn configurations_travel() {
        let mut c = LoadConfig::new(
            Workload::Mixed,
            "https://s3.example:443",
            Credentials::new("ak", "sk"),
        );
        c.runtime = RuntimeKind::Smol;
        c.size = "4KiB:1,1MiB:3".parse().unwrap();
        c.duration = Some(Duration::from_millis(2500));
        c.share = Some(Share { index: 1, count: 2 });
        c.ca_cert = Some("here.pem".into());
        c.ca_pem = Some("-----BEGIN CERTIFICATE-----".into());
        c.autoterm = Some(AutotermSpec::default());
        let json = serde_json::to_string(&c).unwrap();
        let back: LoadConfig = serde_json::from_str(&json).unwrap();
        assert_eq!(back.credentials, c.credentials);
        assert_eq!(back.runtime, RuntimeKind::Smol);
        assert_eq!((back.size, back.duration), (c.size, c.duration));
        assert_eq!((back.share, back.autoterm), (c.share, c.autoterm));
        assert_eq!(back.ca_pem, c.ca_pem);
        assert_eq!(back.ca_cert, None, "a local path means nothing elsewhere");
    }
}
