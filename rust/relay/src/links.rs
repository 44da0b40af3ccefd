//! A relay's open links and the members it refuses: a link is registered with the
//! certificate its far end presented, and a change of the revocation list closes the links
//! whose certificate names a node now revoked (no restart needed).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use rustls::pki_types::CertificateDer;
use tokio::sync::Notify;

use crate::tls::names_node;

/// One registered link: dropping it takes it out of the registry.
pub struct LinkGuard {
    links: Arc<Links>,
    id: u64,
    /// Notified when the link must end (revoked peer, relay closed).
    pub closed: Arc<Notify>,
}

impl Drop for LinkGuard {
    fn drop(&mut self) {
        self.links.lock().open.remove(&self.id);
    }
}

struct OpenLink {
    peer: Option<CertificateDer<'static>>,
    closed: Arc<Notify>,
}

#[derive(Default)]
struct State {
    next_id: u64,
    open: HashMap<u64, OpenLink>,
    revoked: HashSet<String>,
    shut: bool,
}

#[derive(Default)]
pub struct Links {
    state: Mutex<State>,
}

fn names_any(peer: &CertificateDer<'_>, nodes: &HashSet<String>) -> Option<String> {
    nodes.iter().find(|node| names_node(peer, node)).cloned()
}

impl Links {
    pub fn new(revoked: impl IntoIterator<Item = String>) -> Arc<Self> {
        let links = Links::default();
        links.lock().revoked = revoked.into_iter().collect();
        Arc::new(links)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data behind: keep going with it.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Register a link whose far end presented `peer` (None: plain TCP, or the head's own
    /// loopback side); Err names the revoked node it names, or says the relay is closed.
    pub fn admit(
        self: &Arc<Self>,
        peer: Option<CertificateDer<'static>>,
    ) -> Result<LinkGuard, String> {
        let mut state = self.lock();
        if state.shut {
            return Err("the relay is closed".to_owned());
        }
        if let Some(node) = peer.as_ref().and_then(|p| names_any(p, &state.revoked)) {
            return Err(format!("{node}, which was expelled"));
        }
        let id = state.next_id;
        state.next_id += 1;
        let closed = Arc::new(Notify::new());
        state.open.insert(
            id,
            OpenLink {
                peer,
                closed: closed.clone(),
            },
        );
        Ok(LinkGuard {
            links: self.clone(),
            id,
            closed,
        })
    }

    /// Replace the revocation list; closes the open links to the nodes on it and returns
    /// how many it closed.
    pub fn set_revoked(&self, nodes: impl IntoIterator<Item = String>) -> usize {
        let mut state = self.lock();
        state.revoked = nodes.into_iter().collect();
        let mut closed = 0;
        for link in state.open.values() {
            if link
                .peer
                .as_ref()
                .is_some_and(|p| names_any(p, &state.revoked).is_some())
            {
                link.closed.notify_one();
                closed += 1;
            }
        }
        closed
    }

    /// End every open link and admit no more.
    pub fn close_all(&self) {
        let mut state = self.lock();
        state.shut = true;
        for link in state.open.values() {
            link.closed.notify_one();
        }
    }

    pub fn open_count(&self) -> usize {
        self.lock().open.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_registry_admits_nothing_and_wakes_its_links() {
        let links = Links::new(Vec::new());
        let open = links.admit(None).unwrap();
        assert_eq!(links.open_count(), 1);
        links.close_all();
        assert!(links.admit(None).is_err());
        // The permit is stored: a link that starts waiting only now still ends.
        let woken = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
            .block_on(async {
                tokio::time::timeout(std::time::Duration::from_secs(1), open.closed.notified())
                    .await
                    .is_ok()
            });
        assert!(woken);
        drop(open);
        assert_eq!(links.open_count(), 0);
    }

    #[test]
    fn a_revocation_leaves_links_without_a_certificate_open() {
        let links = Links::new(Vec::new());
        let _plain = links.admit(None).unwrap();
        assert_eq!(links.set_revoked(vec!["node-000000000000".to_owned()]), 0);
        assert_eq!(links.open_count(), 1);
    }
}
