//! TLS for ggml RPC links from the cluster's trust material: the cluster CA's certificate
//! and this node's certificate and key (Ed25519, PEM files written by `skulk.trust`).
//!
//! Both ends present their node certificate and require the other's, TLS 1.3 only, trusting
//! the cluster CA alone. A node certificate names its node as its DNS subject alternative
//! name (`node-…`); a head asks for the node the master placed the rank on as the server
//! name, and a revocation list is matched against the same name.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use rustls::crypto::ring::default_provider;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};

/// Where a node's trust material lies (as `skulk.routing.tls.TlsFiles` says).
#[derive(Clone, Debug)]
pub struct TlsFiles {
    pub ca_certificate: PathBuf,
    pub certificate: PathBuf,
    pub private_key: PathBuf,
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(default_provider())
}

fn invalid(what: &str, error: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("{what}: {error}"))
}

fn roots(files: &TlsFiles) -> io::Result<Arc<RootCertStore>> {
    let ca = CertificateDer::from_pem_file(&files.ca_certificate)
        .map_err(|e| invalid("the cluster CA certificate", e))?;
    let mut roots = RootCertStore::empty();
    roots
        .add(ca)
        .map_err(|e| invalid("the cluster CA certificate", e))?;
    Ok(Arc::new(roots))
}

fn identity(
    files: &TlsFiles,
) -> io::Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)> {
    let certificate = CertificateDer::from_pem_file(&files.certificate)
        .map_err(|e| invalid("the node certificate", e))?;
    let key =
        PrivateKeyDer::from_pem_file(&files.private_key).map_err(|e| invalid("the node key", e))?;
    Ok((vec![certificate], key))
}

/// A device server's side: requires a client certificate the cluster CA issued.
pub fn server_config(files: &TlsFiles) -> io::Result<Arc<ServerConfig>> {
    let provider = provider();
    let verifier = WebPkiClientVerifier::builder_with_provider(roots(files)?, provider.clone())
        .build()
        .map_err(|e| invalid("the client verifier", e))?;
    let (chain, key) = identity(files)?;
    let config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| invalid("TLS 1.3", e))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .map_err(|e| invalid("the node certificate and key", e))?;
    Ok(Arc::new(config))
}

/// A head's side: presents this node's certificate, trusts only the cluster CA and
/// checks the server's certificate names the node it dials (the connection's server name).
pub fn client_config(files: &TlsFiles) -> io::Result<Arc<ClientConfig>> {
    let (chain, key) = identity(files)?;
    let config = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| invalid("TLS 1.3", e))?
        .with_root_certificates(roots(files)?)
        .with_client_auth_cert(chain, key)
        .map_err(|e| invalid("the node certificate and key", e))?;
    Ok(Arc::new(config))
}

/// A node id as a TLS server name (node ids are DNS labels: `node-<hex>`).
pub fn node_name(node: &str) -> io::Result<ServerName<'static>> {
    ServerName::try_from(node.to_owned()).map_err(|e| invalid("a node id", e))
}

/// Whether a (verified) certificate names `node`.
pub fn names_node(certificate: &CertificateDer<'_>, node: &str) -> bool {
    let (Ok(parsed), Ok(name)) = (
        webpki::EndEntityCert::try_from(certificate),
        node_name(node),
    ) else {
        return false;
    };
    parsed.verify_is_valid_for_subject_name(&name).is_ok()
}
