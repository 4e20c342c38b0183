//! moto's S3 server (`moto_server`, from `pip install 'moto[server]'`, which `.ci/run` does):
//! the non-Ferry S3 backend of the re-sign, forwarding and TLS-backend tests. A test that needs
//! it fails, saying so, when it is not installed: it never skips.

use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ferry_core::s3::sigv4::Credentials;
use ferry_server::BackendConfig;
use ferry_server::proxy::{AuthMode, BackendKind};

use super::http::Client;

/// The key the proxy signs with towards moto (moto accepts any: what matters is that the proxy
/// signs with this one, not the client's).
pub const MOTO_KEY: (&str, &str) = ("moto-access", "moto-secret");

/// A `moto_server` child process, killed when dropped.
pub struct Moto {
    child: Child,
    /// Where it listens, on 127.0.0.1.
    pub addr: SocketAddr,
    tls: bool,
}

impl Moto {
    /// A moto serving plain HTTP.
    pub fn start() -> Self {
        Self::spawn(None)
    }

    /// A moto serving HTTPS with the PEM certificate `cert` and its key `key`.
    pub fn start_tls(cert: &Path, key: &Path) -> Self {
        Self::spawn(Some((cert, key)))
    }

    fn spawn(tls: Option<(&Path, &Path)>) -> Self {
        let port = super::process::free_port().port();
        let mut cmd = Command::new("moto_server");
        cmd.args(["-H", "127.0.0.1", "-p", &port.to_string()]);
        if let Some((cert, key)) = tls {
            cmd.arg("-c").arg(cert).arg("-k").arg(key);
        }
        let child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "this test needs moto's S3 server, which did not run ({e}): \
                     pip install 'moto[server]' (as .ci/run does) so that moto_server is on the PATH"
                )
            });
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let mut moto = Self {
            child,
            addr,
            tls: tls.is_some(),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(addr).is_err() {
            if let Some(status) = moto.child.try_wait().expect("moto_server's status") {
                panic!("moto_server exited ({status}) before it listened on {addr}");
            }
            assert!(
                Instant::now() < deadline,
                "moto_server did not listen on {addr} within 60 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        moto
    }

    /// A client of this (plain HTTP) moto, signing with [`MOTO_KEY`].
    pub fn client(&self) -> Client {
        let mut c = Client::connect(self.addr);
        c.credentials = Credentials::new(MOTO_KEY.0, MOTO_KEY.1);
        c
    }

    /// The proxy's configuration of this moto as backend `id`: `kind = s3`, re-signed with
    /// [`MOTO_KEY`]; over HTTPS trusting `ca_cert` for a moto started with
    /// [`Moto::start_tls`].
    pub fn backend(&self, id: &str, ca_cert: Option<&Path>) -> BackendConfig {
        let scheme = if self.tls { "https" } else { "http" };
        let mut b = BackendConfig::new(id, format!("{scheme}://{}", self.addr));
        b.kind = BackendKind::S3;
        b.auth = AuthMode::Resign;
        b.credentials = Some(Credentials::new(MOTO_KEY.0, MOTO_KEY.1));
        b.ca_cert = ca_cert.map(Path::to_path_buf);
        b
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
