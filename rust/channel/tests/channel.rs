//! The secure channel's two ends on loopback sockets, as ggml RPC's hooks drive them, with
//! certificates a Skulk cluster authority issued (tests/members: two members of one cluster
//! and a stranger from another; test keys only). Each test has a registry of its own.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use rustls::{ClientConfig, ServerConfig};
use skulk_channel::channel::{Channel, Refusal};
use skulk_channel::channel_registry::Registry;
use skulk_channel::tls::{client_config, server_config};
use skulk_channel::TlsFiles;

const LIMIT: Duration = Duration::from_secs(5);

fn member(name: &str) -> (String, TlsFiles) {
    let folder = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/members")
        .join(name);
    let node = std::fs::read_to_string(folder.join("node-id")).unwrap();
    let files = TlsFiles {
        ca_certificate: folder.join("ca.pem"),
        certificate: folder.join("node.pem"),
        private_key: folder.join("node.key"),
    };
    (node.trim().to_owned(), files)
}

fn registry() -> &'static Registry {
    Box::leak(Box::new(Registry::new()))
}

/// A connected pair of loopback sockets: (the client's, the server's).
fn sockets() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (server, _) = listener.accept().unwrap();
    (client, server)
}

/// An open link, with the socket it borrows (kept open until the channel closes).
struct Open {
    channel: Channel,
    socket: TcpStream,
}

impl Open {
    fn close(self) {
        self.channel.close();
        drop(self.socket);
    }
}

type Opened = Result<Open, Refusal>;

/// Both ends' handshakes at once: the server's on a thread of its own.
fn link(
    server: Arc<ServerConfig>,
    server_registry: &'static Registry,
    client: Arc<ClientConfig>,
    node: &str,
    client_registry: &'static Registry,
) -> (Opened, Opened) {
    let (client_socket, server_socket) = sockets();
    let serving = thread::spawn(move || {
        Channel::server(server_socket.as_raw_fd(), server, server_registry, LIMIT).map(|channel| {
            Open {
                channel,
                socket: server_socket,
            }
        })
    });
    let dialled = Channel::client(
        client_socket.as_raw_fd(),
        client,
        node,
        client_registry,
        LIMIT,
    )
    .map(|channel| Open {
        channel,
        socket: client_socket,
    });
    (dialled, serving.join().unwrap())
}

fn members_link(
    server_registry: &'static Registry,
    client_registry: &'static Registry,
) -> (Open, Open) {
    let (serving, serving_files) = member("serving");
    let (_, head_files) = member("head");
    let (client, server) = link(
        server_config(&serving_files).unwrap(),
        server_registry,
        client_config(&head_files).unwrap(),
        &serving,
        client_registry,
    );
    (client.unwrap(), server.unwrap())
}

fn read_exactly(channel: &mut Channel, length: usize) -> Vec<u8> {
    let mut received = vec![0u8; length];
    let mut at = 0;
    while at < length {
        let read = channel.recv(&mut received[at..]).unwrap();
        assert!(read > 0, "the link ended after {at} of {length} bytes");
        at += read;
    }
    received
}

#[test]
fn members_exchange_bytes_both_ways() {
    let (mut client, mut server) = members_link(registry(), registry());
    let payload: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect(); // many records
    let sent = payload.clone();
    let receiving = thread::spawn(move || {
        let got = read_exactly(&mut server.channel, sent.len());
        server.channel.send(&got).unwrap();
        server
    });
    client.channel.send(&payload).unwrap();
    assert_eq!(read_exactly(&mut client.channel, payload.len()), payload);
    let server = receiving.join().unwrap();
    client.close();
    let mut server = server;
    let mut buffer = [0u8; 16];
    assert_eq!(server.channel.recv(&mut buffer).unwrap(), 0, "a clean end");
    server.close();
}

#[test]
fn a_stranger_of_another_cluster_is_refused() {
    let (serving, serving_files) = member("serving");
    let (_, stranger_files) = member("stranger");
    let (client, server) = link(
        server_config(&serving_files).unwrap(),
        registry(),
        client_config(&stranger_files).unwrap(),
        &serving,
        registry(),
    );
    let refusal = server
        .err()
        .expect("the server refuses a foreign CA's certificate");
    assert!(!refusal.quiet);
    assert!(client.is_err(), "nor does the stranger trust the server");
}

#[test]
fn plain_tcp_is_refused_aloud_and_a_silent_probe_quietly() {
    let (_, serving_files) = member("serving");
    let config = server_config(&serving_files).unwrap();
    let (mut plain, server_socket) = sockets();
    plain.write_all(&[0x0e; 65]).unwrap(); // a ggml RPC hello, in the clear
    let refusal = Channel::server(server_socket.as_raw_fd(), config.clone(), registry(), LIMIT)
        .err()
        .expect("plain TCP is refused");
    assert!(!refusal.quiet, "{}", refusal.why);
    let mut reply = Vec::new();
    drop(server_socket);
    let _ = plain.read_to_end(&mut reply);
    assert!(!reply.contains(&0x0e), "nothing of the hello comes back");

    let (probe, server_socket) = sockets();
    drop(probe);
    let refusal = Channel::server(server_socket.as_raw_fd(), config, registry(), LIMIT)
        .err()
        .expect("a probe that sends nothing opens no link");
    assert!(refusal.quiet, "and says nothing of it: {}", refusal.why);
}

#[test]
fn a_client_that_stalls_its_handshake_is_dropped_in_time() {
    let (_, serving_files) = member("serving");
    let (stalling, server_socket) = sockets();
    let started = Instant::now();
    let limit = Duration::from_millis(300);
    let refusal = Channel::server(
        server_socket.as_raw_fd(),
        server_config(&serving_files).unwrap(),
        registry(),
        limit,
    )
    .err()
    .expect("refused");
    let took = started.elapsed();
    assert!(took >= limit && took < limit * 5, "took {took:?}");
    assert!(refusal.why.contains("too long"), "{}", refusal.why);
    drop(stalling);
}

#[test]
fn a_revoked_member_is_refused() {
    let (head, _) = member("head");
    let server_registry = registry();
    server_registry.set_revoked([head]);
    let (serving, serving_files) = member("serving");
    let (_, head_files) = member("head");
    let (_, server) = link(
        server_config(&serving_files).unwrap(),
        server_registry,
        client_config(&head_files).unwrap(),
        &serving,
        registry(),
    );
    assert!(server.is_err());
    assert_eq!(server_registry.open_links(), 0);
}

#[test]
fn a_head_refuses_a_server_whose_certificate_names_another_node() {
    let (_, serving_files) = member("serving");
    let (head, head_files) = member("head"); // where the head thinks the rank is
    let (client, _) = link(
        server_config(&serving_files).unwrap(),
        registry(),
        client_config(&head_files).unwrap(),
        &head,
        registry(),
    );
    assert!(client.is_err());
}

#[test]
fn a_revocation_ends_an_open_link_at_once_and_only_its_own() {
    let (head, _) = member("head");
    let (stranger, _) = member("stranger");
    let server_registry = registry();
    let (mut client, mut server) = members_link(server_registry, registry());
    assert_eq!(server_registry.open_links(), 1);
    assert_eq!(server_registry.set_revoked([stranger.clone()]), 0);
    client.channel.send(b"still").unwrap();
    assert_eq!(read_exactly(&mut server.channel, 5), b"still");
    assert_eq!(server_registry.set_revoked([stranger, head]), 1);
    let mut buffer = [0u8; 16];
    assert!(
        !matches!(server.channel.recv(&mut buffer), Ok(n) if n > 0),
        "the revoked member's link reads nothing more"
    );
    assert!(
        !matches!(client.channel.recv(&mut buffer), Ok(n) if n > 0),
        "and its far end sees the end"
    );
    assert_eq!(server_registry.open_links(), 0);
    server.close();
    client.close();
}

#[test]
fn a_head_ends_its_link_to_a_server_whose_node_is_revoked() {
    let (serving, _) = member("serving");
    let client_registry = registry();
    let (mut client, server) = members_link(registry(), client_registry);
    assert_eq!(client_registry.set_revoked([serving]), 1);
    let mut buffer = [0u8; 16];
    assert!(!matches!(client.channel.recv(&mut buffer), Ok(n) if n > 0));
    assert!(client.channel.send(b"more").is_err() || client.channel.recv(&mut buffer).is_err());
    client.close();
    server.close();
}

#[test]
fn a_server_that_goes_away_ends_the_link_cleanly() {
    let (mut client, server) = members_link(registry(), registry());
    drop(server.socket); // gone without a word (its process killed)
    std::mem::forget(server.channel);
    let mut buffer = [0u8; 16];
    let started = Instant::now();
    let read = client.channel.recv(&mut buffer);
    assert!(!matches!(read, Ok(n) if n > 0), "{read:?}");
    assert!(started.elapsed() < Duration::from_secs(2));
    client.close();
}
