//! TLS for Ferry: rustls configurations on the `ring` provider, and [`TlsConnector`], which
//! opens TLS or plain client connections on any [`NetRuntime`].
//!
//! Every configuration names its crypto provider (ring): the process-wide default is not used,
//! since another crate in the same build may enable a second provider (aws-lc-rs), and rustls
//! then refuses to pick one.

use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use embedded_io::ErrorKind;
use ferry_core::rt::Connector;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig, SignatureScheme};

use crate::NetRuntime;

/// The one protocol Ferry speaks, offered by ALPN on both sides.
const HTTP_1_1: &[u8] = b"http/1.1";

/// The crypto provider of every configuration here.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// A server configuration from a PEM certificate chain (leaf first) and a PEM private key
/// (PKCS#8, PKCS#1 or SEC1).
pub fn server_config(cert_chain_pem: &[u8], key_pem: &[u8]) -> io::Result<Arc<ServerConfig>> {
    let chain = CertificateDer::pem_slice_iter(cert_chain_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(format!("certificate: {e}")))?;
    if chain.is_empty() {
        return Err(invalid("certificate: no PEM CERTIFICATE block".into()));
    }
    let key =
        PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| invalid(format!("private key: {e}")))?;
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| invalid(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| invalid(format!("certificate and key: {e}")))?;
    config.alpn_protocols = vec![HTTP_1_1.to_vec()];
    Ok(Arc::new(config))
}

/// [`server_config`] from files; errors name the file.
pub fn server_config_from_files(cert: &Path, key: &Path) -> io::Result<Arc<ServerConfig>> {
    let read = |p: &Path| {
        std::fs::read(p).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))
    };
    let (cert_pem, key_pem) = (read(cert)?, read(key)?);
    server_config(&cert_pem, &key_pem).map_err(|e| {
        invalid(format!(
            "TLS certificate {} / key {}: {e}",
            cert.display(),
            key.display()
        ))
    })
}

/// A client configuration trusting the webpki roots and the PEM certificates of `ca_pem`; with
/// `insecure`, any certificate is accepted (the handshake is still checked: for self-signed
/// test certificates only).
pub fn client_config(ca_pem: Option<&[u8]>, insecure: bool) -> io::Result<Arc<ClientConfig>> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| invalid(e.to_string()))?;
    let mut config = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider)))
            .with_no_client_auth()
    } else {
        let mut roots = RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        if let Some(pem) = ca_pem {
            let mut added = 0;
            for cert in CertificateDer::pem_slice_iter(pem) {
                let cert = cert.map_err(|e| invalid(format!("CA certificate: {e}")))?;
                roots
                    .add(cert)
                    .map_err(|e| invalid(format!("CA certificate: {e}")))?;
                added += 1;
            }
            if added == 0 {
                return Err(invalid("CA certificate: no PEM CERTIFICATE block".into()));
            }
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    config.alpn_protocols = vec![HTTP_1_1.to_vec()];
    Ok(Arc::new(config))
}

/// The name a client expects in the certificate (and sends as SNI, unless it is an IP
/// address) for the host of a URL: a DNS name, an IPv4 address or a bracketed IPv6 one.
pub fn server_name(host: &str) -> io::Result<ServerName<'static>> {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    ServerName::try_from(bare.to_owned()).map_err(|e| invalid(format!("{host:?}: {e}")))
}

/// Accepts every certificate but still verifies the handshake signatures (`--insecure`).
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Opens client connections: TLS to the addresses given a server name, plain TCP to the rest.
#[derive(Debug, Clone)]
pub struct TlsConnector {
    config: Arc<ClientConfig>,
    /// A few endpoints at most: a list beats a map.
    names: Vec<(SocketAddr, ServerName<'static>)>,
}

impl TlsConnector {
    /// A connector using `config` for TLS; plain TCP until [`TlsConnector::add`] is called.
    pub fn new(config: Arc<ClientConfig>) -> Self {
        Self {
            config,
            names: Vec::new(),
        }
    }

    /// Connect to `addr` with TLS, expecting a certificate for `name`.
    pub fn add(&mut self, addr: SocketAddr, name: ServerName<'static>) {
        self.names.retain(|(a, _)| *a != addr);
        self.names.push((addr, name));
    }

    /// The client configuration.
    pub fn config(&self) -> &Arc<ClientConfig> {
        &self.config
    }

    /// The server name expected at `addr`, if it is a TLS address.
    pub fn name_of(&self, addr: SocketAddr) -> Option<&ServerName<'static>> {
        self.names.iter().find(|(a, _)| *a == addr).map(|(_, n)| n)
    }
}

impl<R: NetRuntime> Connector<R> for TlsConnector {
    async fn connect(&self, rt: &R, addr: SocketAddr) -> Result<R::Stream, ErrorKind> {
        match self.name_of(addr) {
            None => rt.connect(addr).await,
            Some(name) => rt
                .connect_tls(addr, self.config.clone(), name.clone())
                .await
                .map_err(|e| embedded_io::Error::kind(&e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::{ClientConnection, ServerConnection};

    struct Pem {
        cert: String,
        key: String,
    }

    fn self_signed(names: &[&str]) -> Pem {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let ck = rcgen::generate_simple_self_signed(names).unwrap();
        Pem {
            cert: ck.cert.pem(),
            key: ck.signing_key.serialize_pem(),
        }
    }

    /// Run a handshake in memory; the client's or the server's error, if any.
    fn handshake(
        server: Arc<ServerConfig>,
        client: Arc<ClientConfig>,
        name: &str,
    ) -> Result<(), rustls::Error> {
        let mut s = ServerConnection::new(server).unwrap();
        let mut c = ClientConnection::new(client, server_name(name).unwrap()).unwrap();
        for _ in 0..20 {
            let mut wire = Vec::new();
            c.write_tls(&mut wire).unwrap();
            s.read_tls(&mut &wire[..]).unwrap();
            s.process_new_packets()?;
            wire.clear();
            s.write_tls(&mut wire).unwrap();
            c.read_tls(&mut &wire[..]).unwrap();
            c.process_new_packets()?;
            if !c.is_handshaking() && !s.is_handshaking() {
                assert_eq!(c.alpn_protocol(), Some(HTTP_1_1));
                return Ok(());
            }
        }
        panic!("handshake did not finish");
    }

    #[test]
    fn a_trusted_ca_verifies_and_an_unknown_one_does_not() {
        let pem = self_signed(&["localhost", "127.0.0.1"]);
        let server = server_config(pem.cert.as_bytes(), pem.key.as_bytes()).unwrap();
        let trusting = client_config(Some(pem.cert.as_bytes()), false).unwrap();
        handshake(server.clone(), trusting.clone(), "localhost").unwrap();
        handshake(server.clone(), trusting.clone(), "127.0.0.1").unwrap();
        // The certificate does not name this host.
        let err = handshake(server.clone(), trusting, "example.com").unwrap_err();
        assert!(err.to_string().contains("certificate"), "{err}");
        // Only the webpki roots: a self-signed certificate is unknown.
        let err = handshake(
            server.clone(),
            client_config(None, false).unwrap(),
            "localhost",
        )
        .unwrap_err();
        assert!(
            matches!(
                err,
                rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer)
            ),
            "{err}"
        );
        // Insecure accepts it, whatever the name.
        let insecure = client_config(None, true).unwrap();
        handshake(server, insecure, "example.com").unwrap();
    }

    #[test]
    fn bad_pem_is_refused_with_a_reason() {
        let pem = self_signed(&["localhost"]);
        let other = self_signed(&["localhost"]);
        let err = server_config(b"not pem", pem.key.as_bytes()).unwrap_err();
        assert!(err.to_string().contains("no PEM CERTIFICATE"), "{err}");
        let err = server_config(pem.cert.as_bytes(), b"").unwrap_err();
        assert!(err.to_string().starts_with("private key"), "{err}");
        // A key that is not the certificate's.
        let err = server_config(pem.cert.as_bytes(), other.key.as_bytes()).unwrap_err();
        assert!(err.to_string().starts_with("certificate and key"), "{err}");
        let err = client_config(Some(b"nothing here"), false).unwrap_err();
        assert!(err.to_string().contains("CA certificate"), "{err}");
    }

    #[test]
    fn server_names_of_hosts() {
        assert!(matches!(
            server_name("localhost").unwrap(),
            ServerName::DnsName(_)
        ));
        assert!(matches!(
            server_name("127.0.0.1").unwrap(),
            ServerName::IpAddress(_)
        ));
        assert!(matches!(
            server_name("[::1]").unwrap(),
            ServerName::IpAddress(_)
        ));
        assert!(server_name("bad name!").is_err());
    }
}
