//! HTTPS for the listeners of `ferry node`, `ferry proxy` and the local cluster: which files
//! hold the certificate and its key (`--tls-cert` / `--tls-key`, `tls_cert` / `tls_key`).

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use ferry_net::rustls::ServerConfig;

/// A PEM certificate chain (leaf first) and the PEM private key of its leaf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain.
    pub cert: PathBuf,
    /// The private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

impl TlsFiles {
    /// The certificate chain in `cert` and its key in `key`.
    pub fn new(cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        Self {
            cert: cert.into(),
            key: key.into(),
        }
    }

    /// Both files, or neither: `what` names the options in the error.
    pub fn pair(
        cert: Option<PathBuf>,
        key: Option<PathBuf>,
        what: &str,
    ) -> Result<Option<Self>, String> {
        match (cert, key) {
            (Some(c), Some(k)) => Ok(Some(Self::new(c, k))),
            (None, None) => Ok(None),
            _ => Err(format!("{what} go together")),
        }
    }

    /// Read both files and check that they make a server configuration.
    pub fn load(&self) -> io::Result<Arc<ServerConfig>> {
        ferry_net::server_config_from_files(&self.cert, &self.key)
    }
}

/// The scheme of a listener's URL.
pub(crate) fn scheme(tls: Option<&TlsFiles>) -> &'static str {
    if tls.is_some() { "https" } else { "http" }
}
