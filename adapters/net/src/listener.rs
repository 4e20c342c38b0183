//! [`NetListener`]: a listening TCP socket of any adapter, serving plain TCP or TLS.

use std::net::SocketAddr;
use std::sync::Arc;

use embedded_io::ErrorKind;
use ferry_core::rt::Listener;
use futures_rustls::TlsStream;
use rustls::ServerConfig;

use crate::{Adapter, NetStream, kind};

/// A listening socket of the adapter `A`, serving plain TCP or TLS.
#[derive(Debug)]
pub struct NetListener<A: Adapter> {
    tcp: A::TcpListener,
    tls: Option<Arc<ServerConfig>>,
}

impl<A: Adapter> NetListener<A> {
    /// Listen on `addr`: with TLS if `tls` is given, plain TCP otherwise.
    pub async fn bind(
        adapter: &A,
        addr: SocketAddr,
        tls: Option<Arc<ServerConfig>>,
    ) -> Result<Self, ErrorKind> {
        let tcp = adapter.bind_tcp(addr).await.map_err(kind)?;
        Ok(Self { tcp, tls })
    }
}

/// A connection accepted by a [`NetListener`], before its TLS handshake if it has one.
#[derive(Debug)]
pub struct NetAccepted<A: Adapter> {
    tcp: A::Socket,
    tls: Option<Arc<ServerConfig>>,
}

impl<A: Adapter> Listener for NetListener<A> {
    type Stream = NetStream<A>;
    type Accepted = NetAccepted<A>;

    async fn accept(&self) -> Result<(NetAccepted<A>, SocketAddr), ErrorKind> {
        let (tcp, peer) = A::accept_tcp(&self.tcp).await.map_err(kind)?;
        let tls = self.tls.clone();
        Ok((NetAccepted { tcp, tls }, peer))
    }

    async fn establish(accepted: NetAccepted<A>) -> Result<NetStream<A>, ErrorKind> {
        let Some(config) = accepted.tls else {
            return Ok(NetStream::tcp(accepted.tcp));
        };
        let tls = futures_rustls::TlsAcceptor::from(config)
            .accept(accepted.tcp)
            .await
            .map_err(kind)?;
        Ok(NetStream::tls(TlsStream::Server(tls)))
    }

    fn local_addr(&self) -> Result<SocketAddr, ErrorKind> {
        A::listener_addr(&self.tcp).map_err(kind)
    }
}
