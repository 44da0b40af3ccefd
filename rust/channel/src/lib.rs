//! Members-only links for ggml RPC between Skulk nodes, inline in llama.cpp's own sockets:
//! the hooks Skulk's patch to ggml RPC calls on each connection (`channel`) speak TLS 1.3
//! with the cluster's node certificates (`tls`), on llama.cpp's own threads. Which
//! certificates, which node each device server must be and who is revoked are Python's
//! decisions (`skulk.worker.rpc_channel`, `device_links`), handed over through
//! `channel_registry`.

#[cfg(unix)]
pub mod channel;
#[cfg(unix)]
pub mod channel_cpu;
#[cfg(unix)]
pub mod channel_registry;
pub mod tls;

use std::sync::Arc;
use std::time::Duration;

pub use tls::TlsFiles;

/// How long a peer has to complete its TLS handshake: a device server's accept loop is
/// single-threaded, and a client that stalls must not hold it.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the channel says what it refused and why (the runner's log).
pub type Log = Arc<dyn Fn(&str) + Send + Sync>;
