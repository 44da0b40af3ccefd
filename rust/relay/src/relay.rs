//! The relays: a members-only TLS server in front of a device server on loopback, and the
//! head's loopback forwarder to it.
//!
//! ```text
//! head runner ──TCP──▶ forwarder (head's node, 127.0.0.1:ephemeral)
//!             ══TLS══▶ relay server (serving node, the rank's ring port)
//!             ──TCP──▶ RPC server (serving node, 127.0.0.1:ephemeral)
//! ```
//!
//! Once the relay server has dialled its target it sends one byte (`READY`), so a forwarder
//! never passes on a link whose far end is not there. Nagle is off on every TCP socket
//! (ggml RPC is many small request/response round trips). Without trust material (an
//! `--insecure` cluster) both carry plain TCP.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustls::pki_types::CertificateDer;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{lookup_host, TcpListener, TcpSocket, TcpStream};
use tokio::task::JoinHandle;
use tokio::time::timeout;
use tokio_rustls::{TlsAcceptor, TlsConnector};

use crate::framing::{Framing, HOLD, HOLD_AT_MOST};
use crate::links::{LinkGuard, Links};
use crate::runtime::runtime;
use crate::tls::{client_config, node_name, server_config, TlsFiles};

pub const READY: u8 = 0x01;
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
const CHUNK: usize = 1 << 16;

/// Where a relay says what it refused and why (the node's log).
pub type Log = Arc<dyn Fn(&str) + Send + Sync>;

/// One listening relay. Closing it (or dropping it) stops it and ends its open links.
pub struct Relay {
    pub port: u16,
    refused: Arc<AtomicU64>,
    links: Arc<Links>,
    accepting: Mutex<Option<JoinHandle<()>>>,
}

impl Relay {
    /// Links refused: a revoked or unnamed member, or a far end that never said `READY`.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Replace the revocation list; the open links to a node on it end now.
    pub fn set_revoked(&self, nodes: impl IntoIterator<Item = String>) -> usize {
        self.links.set_revoked(nodes)
    }

    pub fn open_links(&self) -> usize {
        self.links.open_count()
    }

    /// Stop listening (the port is free when this returns) and end every open link.
    pub fn close(&self) {
        self.links.close_all();
        let accepting = self
            .accepting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(task) = accepting {
            task.abort();
            // From a thread of the runtime itself we cannot wait; the listener goes soon.
            if tokio::runtime::Handle::try_current().is_err() {
                let _ = runtime().block_on(task);
            }
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.close();
    }
}

async fn resolve(host: &str, port: u16) -> io::Result<SocketAddr> {
    lookup_host((host, port))
        .await?
        .next()
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("{host} has no address")))
}

async fn bind(host: &str, port: u16) -> io::Result<TcpListener> {
    let address = resolve(host, port).await?;
    let socket = if address.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(address)?;
    socket.listen(1024)
}

async fn dial(host: &str, port: u16) -> io::Result<TcpStream> {
    let address = resolve(host, port).await?;
    let stream = timeout(HANDSHAKE_TIMEOUT, TcpStream::connect(address)).await??;
    stream.set_nodelay(true)?;
    Ok(stream)
}

fn timed_out(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, format!("{what} timed out"))
}

/// Copy until `source` ends, then end `sink`; whole messages of `framing` at a time
/// where they come quickly enough (`framing.rs`).
async fn copy<R, W>(source: &mut R, sink: &mut W, mut framing: Framing) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buffer = vec![0u8; CHUNK];
    let mut held = 0;
    loop {
        let read = if held == 0 {
            source.read(&mut buffer).await?
        } else {
            match timeout(HOLD, source.read(&mut buffer[held..])).await {
                Ok(read) => read?,
                Err(_) => {
                    sink.write_all(&buffer[..held]).await?;
                    sink.flush().await?;
                    held = 0;
                    continue;
                }
            }
        };
        if read == 0 {
            sink.write_all(&buffer[..held]).await?;
            return sink.shutdown().await;
        }
        let whole = framing.advance(&buffer[held..held + read]);
        held += read;
        if whole || held >= HOLD_AT_MOST {
            sink.write_all(&buffer[..held]).await?;
            sink.flush().await?;
            held = 0;
        }
    }
}

/// Carry bytes both ways until either side ends (which ends the other direction too) or
/// the link is closed: commands from `near` (the head's side), replies from `far`.
async fn pump<A, B>(near: A, far: B, link: &LinkGuard) -> io::Result<()>
where
    A: AsyncRead + AsyncWrite,
    B: AsyncRead + AsyncWrite,
{
    let (mut near_read, mut near_write) = tokio::io::split(near);
    let (mut far_read, mut far_write) = tokio::io::split(far);
    tokio::select! {
        ended = copy(&mut near_read, &mut far_write, Framing::commands()) => ended,
        ended = copy(&mut far_read, &mut near_write, Framing::replies()) => ended,
        () = link.closed.notified() => Ok(()),
    }
}

fn start<F, Fut>(listener: TcpListener, handle: F) -> JoinHandle<()>
where
    F: Fn(TcpStream) -> Fut + Send + 'static,
    Fut: Future<Output = io::Result<()>> + Send + 'static,
{
    runtime().spawn(async move {
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    if stream.set_nodelay(true).is_ok() {
                        // A link that fails ends alone; the relay goes on.
                        tokio::spawn(handle(stream));
                    }
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    })
}

struct Shared {
    refused: Arc<AtomicU64>,
    links: Arc<Links>,
    log: Log,
}

impl Shared {
    fn new(revoked: Vec<String>, log: Log) -> Arc<Self> {
        Arc::new(Shared {
            refused: Arc::default(),
            links: Links::new(revoked),
            log,
        })
    }

    fn refuse(&self, why: &str) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        (self.log)(why);
    }

    fn admit(&self, peer: Option<CertificateDer<'static>>) -> Option<LinkGuard> {
        match self.links.admit(peer) {
            Ok(link) => Some(link),
            Err(why) => {
                self.refuse(&format!("refused {why}"));
                None
            }
        }
    }
}

/// Bind `listen`, then accept links with `handle` on the relays' runtime.
fn open<F, Fut>(listen: (&str, u16), shared: &Arc<Shared>, handle: F) -> io::Result<Relay>
where
    F: Fn(TcpStream) -> Fut + Send + 'static,
    Fut: Future<Output = io::Result<()>> + Send + 'static,
{
    let listener = runtime().block_on(bind(listen.0, listen.1))?;
    let port = listener.local_addr()?.port();
    Ok(Relay {
        port,
        refused: shared.refused.clone(),
        links: shared.links.clone(),
        accepting: Mutex::new(Some(start(listener, handle))),
    })
}

/// A relay server on `listen` admitting members (anyone, without `tls`) and carrying each
/// link to `target` on loopback.
pub fn serve(
    listen: (&str, u16),
    target: (String, u16),
    tls: Option<&TlsFiles>,
    revoked: Vec<String>,
    log: Log,
) -> io::Result<Relay> {
    let acceptor = tls.map(server_config).transpose()?.map(TlsAcceptor::from);
    let shared = Shared::new(revoked, log);
    let target = Arc::new(target);
    let state = shared.clone();
    open(listen, &shared, move |stream| {
        let (state, acceptor, target) = (state.clone(), acceptor.clone(), target.clone());
        async move {
            let Some(acceptor) = acceptor else {
                return serve_link(stream, None, &target, &state).await;
            };
            let stream = match timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                Err(_) => return Err(timed_out("a client's TLS handshake")),
                Ok(Err(error)) => {
                    (state.log)(&format!("refused a client certificate: {error}"));
                    return Ok(());
                }
                Ok(Ok(stream)) => stream,
            };
            let peer = stream
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|c| c.first());
            match peer.map(|c| c.clone().into_owned()) {
                None => {
                    state.refuse("refused a client without a certificate");
                    Ok(())
                }
                peer => serve_link(stream, peer, &target, &state).await,
            }
        }
    })
}

async fn serve_link<S>(
    mut near: S,
    peer: Option<CertificateDer<'static>>,
    target: &(String, u16),
    shared: &Shared,
) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let Some(link) = shared.admit(peer) else {
        return Ok(());
    };
    let far = dial(&target.0, target.1).await?;
    near.write_all(&[READY]).await?;
    near.flush().await?;
    pump(near, far, &link).await
}

/// A forwarder on a loopback port carrying each connection to the relay server of `peer_node`
/// at `remote` (TLS needs `peer_node`: the server's certificate must name it).
pub fn forward(
    remote: (String, u16),
    tls: Option<&TlsFiles>,
    peer_node: Option<&str>,
    revoked: Vec<String>,
    log: Log,
) -> io::Result<Relay> {
    let connector = match tls {
        None => None,
        Some(files) => {
            let node = peer_node.ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "a TLS forwarder needs the node it dials",
                )
            })?;
            Some((TlsConnector::from(client_config(files)?), node_name(node)?))
        }
    };
    let shared = Shared::new(revoked, log);
    let remote = Arc::new(remote);
    let state = shared.clone();
    open(("127.0.0.1", 0), &shared, move |near| {
        let (state, connector, remote) = (state.clone(), connector.clone(), remote.clone());
        async move {
            let far = dial(&remote.0, remote.1).await?;
            let Some((connector, name)) = connector else {
                let Some(link) = state.admit(None) else {
                    return Ok(());
                };
                return greet_then_pump(near, far, &link, &remote, &state).await;
            };
            let far = timeout(HANDSHAKE_TIMEOUT, connector.connect(name, far))
                .await
                .map_err(|_| timed_out("the relay's TLS handshake"))??;
            let peer = far.get_ref().1.peer_certificates().and_then(|c| c.first());
            let Some(link) = state.admit(peer.map(|c| c.clone().into_owned())) else {
                return Ok(());
            };
            greet_then_pump(near, far, &link, &remote, &state).await
        }
    })
}

async fn greet_then_pump<S>(
    near: TcpStream,
    mut far: S,
    link: &LinkGuard,
    remote: &(String, u16),
    shared: &Shared,
) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut greeting = [0u8; 1];
    match timeout(HANDSHAKE_TIMEOUT, far.read(&mut greeting)).await {
        Ok(Ok(1)) if greeting[0] == READY => pump(near, far, link).await,
        _ => {
            shared.refuse(&format!(
                "{}:{} did not reach its device server",
                remote.0, remote.1
            ));
            Ok(())
        }
    }
}
