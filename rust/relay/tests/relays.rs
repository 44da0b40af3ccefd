//! The relays end to end on loopback, with certificates a Skulk cluster authority issued
//! (tests/members: two members of one cluster and a stranger from another; test keys only).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use skulk_relay::tls::names_node;
use skulk_relay::{forward, serve, Log, Relay, TlsFiles};

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

/// A stand-in device server: echoes each connection, counting them.
struct Echo {
    port: u16,
    accepted: Arc<AtomicUsize>,
}

fn echo() -> Echo {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    thread::spawn(move || {
        for connection in listener.incoming() {
            let Ok(mut connection) = connection else {
                return;
            };
            count.fetch_add(1, Ordering::SeqCst);
            thread::spawn(move || {
                let mut buffer = [0u8; 4096];
                while let Ok(read) = connection.read(&mut buffer) {
                    if read == 0 || connection.write_all(&buffer[..read]).is_err() {
                        return;
                    }
                }
            });
        }
    });
    Echo { port, accepted }
}

fn quiet() -> Log {
    Arc::new(|_: &str| {})
}

fn recording() -> (Log, Arc<Mutex<Vec<String>>>) {
    let said = Arc::new(Mutex::new(Vec::new()));
    let sink = said.clone();
    (
        Arc::new(move |message: &str| sink.lock().unwrap().push(message.to_owned())),
        said,
    )
}

fn connect(relay: &Relay) -> TcpStream {
    let stream = TcpStream::connect(("127.0.0.1", relay.port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream
}

/// Send `payload` and read back as many bytes, or what came before the end.
fn round_trip(relay: &Relay, payload: &[u8]) -> Vec<u8> {
    let mut stream = connect(relay);
    stream.write_all(payload).unwrap();
    let mut received = Vec::new();
    let mut buffer = [0u8; 65536];
    while received.len() < payload.len() {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(read) => received.extend_from_slice(&buffer[..read]),
        }
    }
    received
}

fn wait_until(condition: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !condition() {
        assert!(Instant::now() < deadline, "not within 5 s");
        thread::sleep(Duration::from_millis(10));
    }
}

fn target(echo: &Echo) -> (String, u16) {
    ("127.0.0.1".to_owned(), echo.port)
}

fn to_relay(relay: &Relay) -> (String, u16) {
    ("127.0.0.1".to_owned(), relay.port)
}

/// A members-only relay server of the "serving" member in front of `target`.
fn serving_relay(target: (String, u16), log: Log) -> Relay {
    let (_, tls) = member("serving");
    serve(("127.0.0.1", 0), target, Some(&tls), vec![], log).unwrap()
}

/// A forwarder of member `who` dialling `relay`, expecting its certificate to name member
/// `expects`.
fn forwarder_as(relay: &Relay, who: &str, expects: &str) -> Relay {
    let (_, tls) = member(who);
    let (node, _) = member(expects);
    forward(to_relay(relay), Some(&tls), Some(&node), vec![], quiet()).unwrap()
}

#[test]
fn a_member_reaches_the_device_server_through_both_relays() {
    let echo = echo();
    let relay = serving_relay(target(&echo), quiet());
    let forwarder = forwarder_as(&relay, "head", "serving");
    let payload: Vec<u8> = (0..=255u8).cycle().take(256_000).collect(); // many TLS records
    assert_eq!(round_trip(&forwarder, &payload), payload);
    assert_eq!(round_trip(&forwarder, b"again"), b"again");
    assert_eq!(relay.refused(), 0);
}

#[test]
fn a_stranger_of_another_cluster_never_reaches_the_server() {
    let echo = echo();
    let (log, said) = recording();
    let relay = serving_relay(target(&echo), log);
    let forwarder = forwarder_as(&relay, "stranger", "serving");
    assert_eq!(round_trip(&forwarder, b"hello"), b"");
    assert_eq!(echo.accepted.load(Ordering::SeqCst), 0);
    wait_until(|| !said.lock().unwrap().is_empty());
}

#[test]
fn a_forwarder_refuses_a_relay_whose_certificate_names_another_node() {
    let echo = echo();
    let relay = serving_relay(target(&echo), quiet());
    // The head's own id stands for a node the master placed the rank on: not the server.
    let forwarder = forwarder_as(&relay, "head", "head");
    assert_eq!(round_trip(&forwarder, b"hello"), b"");
    assert_eq!(echo.accepted.load(Ordering::SeqCst), 0);
}

#[test]
fn plain_tcp_to_a_members_only_relay_gets_no_greeting() {
    let echo = echo();
    let relay = serving_relay(target(&echo), quiet());
    let reply = round_trip(&relay, &[0x0e; 65]);
    assert!(reply.first() != Some(&skulk_relay::READY) && !reply.contains(&0x0e));
    assert_eq!(echo.accepted.load(Ordering::SeqCst), 0);
}

#[test]
fn a_revocation_ends_the_open_link_and_refuses_the_next() {
    let (head, _) = member("head");
    let echo = echo();
    let relay = serving_relay(target(&echo), quiet());
    let forwarder = forwarder_as(&relay, "head", "serving");
    let mut open = connect(&forwarder);
    open.write_all(b"open").unwrap();
    let mut buffer = [0u8; 16];
    assert_eq!(open.read(&mut buffer).unwrap(), 4);
    assert_eq!(relay.set_revoked(vec!["node-000000000000".to_owned()]), 0);
    assert_eq!(relay.set_revoked(vec![head.clone()]), 1);
    assert_eq!(open.read(&mut buffer).unwrap(), 0, "the open link ends");
    wait_until(|| relay.open_links() == 0);
    assert_eq!(round_trip(&forwarder, b"hello"), b"");
    assert_eq!(relay.refused(), 1);
    assert_eq!(echo.accepted.load(Ordering::SeqCst), 1);
}

#[test]
fn a_relay_whose_server_is_gone_ends_the_link() {
    let gone = echo();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let relay = serving_relay(("127.0.0.1".to_owned(), port), quiet());
    let forwarder = forwarder_as(&relay, "head", "serving");
    assert_eq!(round_trip(&forwarder, b"hello"), b"");
    assert_eq!(forwarder.refused(), 1);
    drop(gone);
}

#[test]
fn an_insecure_cluster_relays_plain_tcp_and_close_ends_links() {
    let echo = echo();
    let relay = serve(("127.0.0.1", 0), target(&echo), None, vec![], quiet()).unwrap();
    let forwarder = forward(to_relay(&relay), None, None, vec![], quiet()).unwrap();
    assert_eq!(round_trip(&forwarder, b"hello"), b"hello");
    let mut open = connect(&forwarder);
    open.write_all(b"open").unwrap();
    let mut buffer = [0u8; 16];
    assert_eq!(open.read(&mut buffer).unwrap(), 4);
    relay.close();
    assert_eq!(open.read(&mut buffer).unwrap(), 0);
    TcpListener::bind(("127.0.0.1", relay.port)).expect("the relay's port is free again");
}

#[test]
fn a_tls_forwarder_needs_the_node_it_dials() {
    let (_head, head_tls) = member("head");
    let error = forward(
        ("127.0.0.1".to_owned(), 1),
        Some(&head_tls),
        None,
        vec![],
        quiet(),
    );
    assert!(error.is_err());
}

#[test]
fn a_certificate_names_its_node_only() {
    let (head, head_tls) = member("head");
    let (serving, _) = member("serving");
    let certificate = CertificateDer::from_pem_file(&head_tls.certificate).unwrap();
    assert!(names_node(&certificate, &head));
    assert!(!names_node(&certificate, &serving));
    assert!(!names_node(&certificate, "not a node id"));
}
