//! Members-only ggml RPC with no relay: TLS done inline, inside llama.cpp's own sockets,
//! on its own threads. Skulk's patch to ggml RPC (tools/patches/ggml-rpc-secure-channel
//! .patch) calls these hooks on each connection it makes or accepts; they speak TLS 1.3
//! with the cluster's node certificates (the configs of `tls.rs`) over the connected
//! socket, which ggml keeps owning and closes itself.
//!
//! A head's connection checks the server's certificate names the node the master placed
//! that rank on (`channel_registry::Settings::peers`); a device server admits a client
//! whose certificate the cluster CA issued to a member not revoked, within
//! `HANDSHAKE_TIMEOUT` (its accept loop is single-threaded: a client that stalls must not
//! hold it). A revocation shuts the open links of the revoked node down at once.
//!
//! Per message, a send is one `write_vectored` of its TLS records and a read one `read`
//! of the socket when nothing is buffered: no other thread is woken and no loopback hop
//! crossed, which is what the relays it replaced cost (bench/README.md, "cold wake-ups").

use std::ffi::{c_char, c_int, c_long, c_void, CStr};
use std::io::{self, Read, Write};
use std::mem::ManuallyDrop;
use std::net::TcpStream;
use std::os::fd::{FromRawFd, RawFd};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use std::sync::Arc;

use rustls::{ClientConfig, ClientConnection, Connection, ServerConfig, ServerConnection};

use crate::channel_cpu;
use crate::channel_registry::{self as registry, Peer, Registry, REGISTRY};
use crate::tls::node_name;
use crate::HANDSHAKE_TIMEOUT;

/// Plaintext handed to rustls at a time: its records are written out before the next
/// piece, so a large tensor is never held encrypted whole.
const WRITE_PIECE: usize = 64 * 1024;

/// ggml's socket, borrowed: never closed here. Counts what it read (whether a refused
/// peer said anything at all).
struct Socket(ManuallyDrop<TcpStream>, usize);

impl Socket {
    fn of(fd: RawFd) -> Self {
        // SAFETY: ggml hands over a connected socket it keeps open until after `close`;
        // ManuallyDrop never closes it.
        Socket(ManuallyDrop::new(unsafe { TcpStream::from_raw_fd(fd) }), 0)
    }
}

impl Read for Socket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match channel_cpu::socket_call(|| (&*self.0).read(buf)) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Ok(n) => {
                    self.1 += n;
                    return Ok(n);
                }
                other => return other,
            }
        }
    }
}

impl Write for Socket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        loop {
            match channel_cpu::socket_call(|| (&*self.0).write(buf)) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => return other,
            }
        }
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        loop {
            match channel_cpu::socket_call(|| (&*self.0).write_vectored(bufs)) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => return other,
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One open link: a TLS session over ggml's socket, registered for revocation.
pub struct Channel {
    socket: Socket,
    tls: Connection,
    registry: &'static Registry,
    id: u64,
}

/// Why a connection was refused, and whether to say so (a peer that sent nothing at all,
/// such as a readiness probe, is refused quietly).
#[derive(Debug)]
pub struct Refusal {
    pub why: String,
    pub quiet: bool,
}

impl Refusal {
    fn loud(why: impl Into<String>) -> Self {
        Refusal {
            why: why.into(),
            quiet: false,
        }
    }
}

fn timed_out() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "the TLS handshake took too long")
}

/// Complete the handshake within `limit` (as a whole, not per read). On an error, says
/// whether the peer had sent anything.
fn handshake(
    socket: &mut Socket,
    tls: &mut Connection,
    limit: Duration,
) -> Result<(), (io::Error, bool)> {
    let deadline = Instant::now() + limit;
    let mut exchange = || {
        while tls.is_handshaking() || tls.wants_write() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(timed_out());
            }
            socket.0.set_read_timeout(Some(left))?;
            socket.0.set_write_timeout(Some(left))?;
            tls.complete_io(socket).map_err(|e| match e.kind() {
                io::ErrorKind::WouldBlock => timed_out(),
                _ => e,
            })?;
        }
        socket.0.set_read_timeout(None)?;
        socket.0.set_write_timeout(None)
    };
    let result = exchange();
    result.map_err(|e| (e, socket.1 > 0))
}

impl Channel {
    /// A link whose handshake is done, entered in `registry` (so a revocation of `peer`
    /// can end it).
    fn registered(
        socket: Socket,
        tls: Connection,
        registry: &'static Registry,
        fd: RawFd,
        peer: Peer,
    ) -> Self {
        let id = registry.register(fd, peer);
        Channel {
            socket,
            tls,
            registry,
            id,
        }
    }

    /// A head's link to the device server of `node` on the connected socket `fd`: the
    /// server's certificate must name `node`, which must not be revoked.
    pub fn client(
        fd: RawFd,
        config: Arc<ClientConfig>,
        node: &str,
        registry: &'static Registry,
        limit: Duration,
    ) -> Result<Self, Refusal> {
        let peer = Peer::Server(node.to_owned());
        if registry.is_revoked(&peer) {
            return Err(Refusal::loud(format!("{node} is revoked")));
        }
        let name = node_name(node).map_err(|e| Refusal::loud(e.to_string()))?;
        let tls = ClientConnection::new(config, name).map_err(|e| Refusal::loud(e.to_string()))?;
        let mut socket = Socket::of(fd);
        let mut tls: Connection = tls.into();
        if let Err((error, _)) = handshake(&mut socket, &mut tls, limit) {
            let _ = tls.write_tls(&mut socket); // the alert, if there is one
            return Err(Refusal::loud(format!(
                "the device server of {node}: {error}"
            )));
        }
        Ok(Channel::registered(socket, tls, registry, fd, peer))
    }

    /// A device server's link from the client on the connected socket `fd`: its
    /// certificate must be a member's (the config's verifier), not revoked.
    pub fn server(
        fd: RawFd,
        config: Arc<ServerConfig>,
        registry: &'static Registry,
        limit: Duration,
    ) -> Result<Self, Refusal> {
        let tls = ServerConnection::new(config).map_err(|e| Refusal::loud(e.to_string()))?;
        let mut socket = Socket::of(fd);
        let mut tls: Connection = tls.into();
        if let Err((error, heard)) = handshake(&mut socket, &mut tls, limit) {
            // a client refused by its certificate is told so (an alert) before the end
            let _ = tls.write_tls(&mut socket);
            return Err(Refusal {
                why: format!("a client's handshake failed: {error}"),
                quiet: !heard,
            });
        }
        let certificate = tls
            .peer_certificates()
            .and_then(|chain| chain.first())
            .map(|c| c.clone().into_owned())
            .ok_or_else(|| Refusal::loud("a client presented no certificate"))?;
        let peer = Peer::Client(certificate);
        if registry.is_revoked(&peer) {
            return Err(Refusal::loud("a revoked member was refused"));
        }
        Ok(Channel::registered(socket, tls, registry, fd, peer))
    }

    /// The `open_client` hook's work: `host:port` must be a device server this process
    /// was told of (the node the master placed that rank on).
    fn open_client(fd: RawFd, host: &str, port: u16) -> Result<Self, Refusal> {
        let settings = registry::settings().ok_or_else(|| Refusal::loud("not configured"))?;
        let endpoint = format!("{host}:{port}");
        let node = settings.peers.get(&endpoint).ok_or_else(|| {
            Refusal::loud(format!("{endpoint} is no device server of this instance"))
        })?;
        Channel::client(
            fd,
            settings.client.clone(),
            node,
            &REGISTRY,
            HANDSHAKE_TIMEOUT,
        )
        .map_err(|r| Refusal::loud(format!("{endpoint}: {}", r.why)))
    }

    fn open_server(fd: RawFd) -> Result<Self, Refusal> {
        let settings = registry::settings().ok_or_else(|| Refusal::loud("not configured"))?;
        Channel::server(fd, settings.server.clone(), &REGISTRY, HANDSHAKE_TIMEOUT)
    }

    fn write_out(&mut self) -> io::Result<()> {
        while self.tls.wants_write() {
            self.tls.write_tls(&mut self.socket)?;
        }
        Ok(())
    }

    /// Send all of `data` (its records leave in one write when it fits one piece).
    pub fn send(&mut self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            let piece = &data[..data.len().min(WRITE_PIECE)];
            let taken = self.tls.writer().write(piece)?;
            self.write_out()?;
            if taken == 0 {
                return Err(io::Error::new(io::ErrorKind::WriteZero, "TLS took nothing"));
            }
            data = &data[taken..];
        }
        Ok(())
    }

    /// Receive up to `buf.len()` bytes: how many, or 0 at the end of the link.
    pub fn recv(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.tls.reader().read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            if self.tls.read_tls(&mut self.socket)? == 0 {
                return Ok(0);
            }
            if let Err(error) = self.tls.process_new_packets() {
                let _ = self.write_out(); // the alert, if it can go
                return Err(io::Error::new(io::ErrorKind::InvalidData, error));
            }
            self.write_out()?; // e.g. a key update's answer
        }
    }

    /// Say the end (best effort, briefly) and leave the registry; ggml closes the fd.
    pub fn close(mut self) {
        self.registry.unregister(self.id);
        self.tls.send_close_notify();
        let _ = self
            .socket
            .0
            .set_write_timeout(Some(Duration::from_millis(200)));
        let _ = self.write_out();
    }
}

fn opened(result: Result<Channel, Refusal>) -> *mut c_void {
    match result {
        Ok(channel) => Box::into_raw(Box::new(channel)).cast(),
        Err(refusal) => {
            REGISTRY.count_refusal(refusal.quiet);
            if let (false, Some(settings)) = (refusal.quiet, registry::settings()) {
                (settings.log)(&format!("rpc channel: {}", refusal.why));
            }
            std::ptr::null_mut()
        }
    }
}

/// `open_client` hook: a channel, or NULL to refuse.
unsafe extern "C" fn hook_open_client(fd: c_int, host: *const c_char, port: c_int) -> *mut c_void {
    catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: ggml passes the NUL-terminated host it connected to.
        let host = unsafe { CStr::from_ptr(host) }.to_string_lossy();
        let port = u16::try_from(port).unwrap_or(0);
        opened(Channel::open_client(fd, &host, port))
    }))
    .unwrap_or(std::ptr::null_mut())
}

/// `open_server` hook: a channel, or NULL to refuse this client.
unsafe extern "C" fn hook_open_server(fd: c_int) -> *mut c_void {
    catch_unwind(AssertUnwindSafe(|| opened(Channel::open_server(fd))))
        .unwrap_or(std::ptr::null_mut())
}

/// SAFETY (callers of the hooks below): `channel` is one `open_*` returned and `close`
/// has not taken yet; ggml uses a connection from one thread at a time.
unsafe fn channel_of<'a>(channel: *mut c_void) -> &'a mut Channel {
    unsafe { &mut *channel.cast::<Channel>() }
}

unsafe extern "C" fn hook_send(channel: *mut c_void, buf: *const c_void, len: usize) -> c_long {
    catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: ggml passes `len` readable bytes at `buf`.
        let data = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) };
        match channel_cpu::counted(|| unsafe { channel_of(channel) }.send(data)) {
            Ok(()) => c_long::try_from(len).unwrap_or(c_long::MAX),
            Err(_) => -1,
        }
    }))
    .unwrap_or(-1)
}

unsafe extern "C" fn hook_recv(channel: *mut c_void, buf: *mut c_void, len: usize) -> c_long {
    catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: ggml passes `len` writable bytes at `buf`.
        let data = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len) };
        match channel_cpu::counted(|| unsafe { channel_of(channel) }.recv(data)) {
            Ok(n) => c_long::try_from(n).unwrap_or(-1),
            Err(_) => -1,
        }
    }))
    .unwrap_or(-1)
}

unsafe extern "C" fn hook_close(channel: *mut c_void) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: ggml closes each channel once, and uses it no more.
        let channel = unsafe { Box::from_raw(channel.cast::<Channel>()) };
        channel.close();
    }));
}

/// `struct ggml_rpc_channel` (ggml-rpc.h, as Skulk's patch declares it).
#[repr(C)]
pub struct Hooks {
    pub open_client: unsafe extern "C" fn(c_int, *const c_char, c_int) -> *mut c_void,
    pub open_server: unsafe extern "C" fn(c_int) -> *mut c_void,
    pub send: unsafe extern "C" fn(*mut c_void, *const c_void, usize) -> c_long,
    pub recv: unsafe extern "C" fn(*mut c_void, *mut c_void, usize) -> c_long,
    pub close: unsafe extern "C" fn(*mut c_void),
}

pub static HOOKS: Hooks = Hooks {
    open_client: hook_open_client,
    open_server: hook_open_server,
    send: hook_send,
    recv: hook_recv,
    close: hook_close,
};

/// Hand the hooks to ggml through `ggml_backend_rpc_set_channel` at `setter`.
///
/// # Safety
/// `setter` must be the address of that function in the ggml RPC library this process
/// uses (Python finds it through libllama's handle).
pub unsafe fn install(setter: usize) {
    type Setter = unsafe extern "C" fn(*const Hooks);
    // SAFETY: the caller vouches for the address.
    let set: Setter = unsafe { std::mem::transmute::<usize, Setter>(setter) };
    unsafe { set(&HOOKS) };
}
