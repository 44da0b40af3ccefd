//! The process's secure channel settings and its open links: what the channel hooks
//! (`channel.rs`) read when llama.cpp opens a connection, and what a revocation acts on.
//!
//! One registry per process: a runner process serves or uses one split instance's links,
//! and ggml RPC takes one set of hooks per process. Python sets it all (`skulk._native`):
//! the TLS configs from the node's trust material, which node each device endpoint must
//! be (the master's placement), and the revocation list, replaced whenever it changes.

use std::collections::{HashMap, HashSet};
use std::mem::ManuallyDrop;
use std::net::{Shutdown, TcpStream};
use std::os::fd::{FromRawFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use rustls::pki_types::CertificateDer;
use rustls::{ClientConfig, ServerConfig};

use crate::tls::{client_config, names_node, server_config, TlsFiles};
use crate::Log;

/// What a channel opened now is made with.
pub struct Settings {
    pub client: Arc<ClientConfig>,
    pub server: Arc<ServerConfig>,
    /// `host:port` of each device server → the node the master placed it on.
    pub peers: HashMap<String, String>,
    pub log: Log,
}

impl Settings {
    pub fn new(
        files: &TlsFiles,
        peers: HashMap<String, String>,
        log: Log,
    ) -> std::io::Result<Self> {
        let mut server = (*server_config(files)?).clone();
        // Nobody resumes a ggml RPC session: no tickets to send after the handshake.
        server.send_tls13_tickets = 0;
        Ok(Settings {
            client: client_config(files)?,
            server: Arc::new(server),
            peers,
            log,
        })
    }
}

/// Whose an open link is, to match against the revocation list.
pub enum Peer {
    /// A client this server admitted: its (verified) certificate.
    Client(CertificateDer<'static>),
    /// The device server a head dialled: the node its certificate names.
    Server(String),
}

impl Peer {
    fn is_revoked(&self, revoked: &HashSet<String>) -> bool {
        match self {
            Peer::Client(certificate) => revoked.iter().any(|node| names_node(certificate, node)),
            Peer::Server(node) => revoked.contains(node),
        }
    }
}

struct OpenLink {
    fd: RawFd,
    peer: Peer,
    ended: bool,
}

#[derive(Default)]
struct Links {
    next_id: u64,
    open: HashMap<u64, OpenLink>,
    revoked: HashSet<String>,
}

static SETTINGS: RwLock<Option<Arc<Settings>>> = RwLock::new(None);

/// The process's registry, which the hooks register their links in.
pub static REGISTRY: Registry = Registry::new();

/// Replace the settings (connections opened from now on use them).
pub fn configure(settings: Settings) {
    *SETTINGS.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(settings));
}

/// The settings, if configured.
pub fn settings() -> Option<Arc<Settings>> {
    SETTINGS.read().unwrap_or_else(|p| p.into_inner()).clone()
}

fn shut(fd: RawFd) {
    // SAFETY: the fd is open (a link is unregistered before ggml closes its fd, under the
    // same lock), and ManuallyDrop leaves it open: only the connection is shut down.
    let stream = ManuallyDrop::new(unsafe { TcpStream::from_raw_fd(fd) });
    let _ = stream.shutdown(Shutdown::Both);
}

/// Open links and the revocation list they are held to.
pub struct Registry {
    links: Mutex<Option<Links>>,
    refused: AtomicU64,
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    pub const fn new() -> Self {
        Registry {
            links: Mutex::new(None),
            refused: AtomicU64::new(0),
        }
    }

    fn with_links<T>(&self, action: impl FnOnce(&mut Links) -> T) -> T {
        // A panic while holding the lock leaves plain data behind: keep going with it.
        let mut guard: MutexGuard<'_, Option<Links>> = self
            .links
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        action(guard.get_or_insert_with(Links::default))
    }

    /// Whether `peer` is on the revocation list now.
    pub fn is_revoked(&self, peer: &Peer) -> bool {
        self.with_links(|links| peer.is_revoked(&links.revoked))
    }

    /// Register an open link on `fd` (which stays open until `unregister`).
    pub fn register(&self, fd: RawFd, peer: Peer) -> u64 {
        self.with_links(|links| {
            links.next_id += 1;
            let id = links.next_id;
            links.open.insert(
                id,
                OpenLink {
                    fd,
                    peer,
                    ended: false,
                },
            );
            id
        })
    }

    /// The link is closing (before its fd closes: a revocation never shuts another's fd).
    pub fn unregister(&self, id: u64) {
        self.with_links(|links| links.open.remove(&id));
    }

    /// Replace the revocation list: links to and from these nodes are refused from now
    /// on, and the open ones are shut down now (their reads and writes fail at once).
    /// Returns how many open links it ended.
    pub fn set_revoked(&self, nodes: impl IntoIterator<Item = String>) -> usize {
        self.with_links(|links| {
            links.revoked = nodes.into_iter().collect();
            let mut ended = 0;
            for link in links.open.values_mut() {
                if !link.ended && link.peer.is_revoked(&links.revoked) {
                    shut(link.fd);
                    link.ended = true;
                    ended += 1;
                }
            }
            ended
        })
    }

    /// Count a refused connection (not a quiet one: a probe that left without a byte).
    pub fn count_refusal(&self, quiet: bool) {
        if !quiet {
            self.refused.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Connections refused so far (quiet ones not counted).
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Links open now (not counting those a revocation ended).
    pub fn open_links(&self) -> usize {
        self.with_links(|links| links.open.values().filter(|link| !link.ended).count())
    }
}
