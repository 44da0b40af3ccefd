//! Members-only links for ggml RPC between Skulk nodes: the bytes of a split llama.cpp model
//! cross here, per token, on threads of their own. Which ports, which certificates and who
//! is revoked are Python's decisions (`skulk.worker.rpc_relay`, `device_links`).

pub mod framing;
pub mod links;
pub mod relay;
pub mod runtime;
pub mod tls;

pub use relay::{forward, serve, Log, Relay, HANDSHAKE_TIMEOUT, READY};
pub use tls::TlsFiles;
