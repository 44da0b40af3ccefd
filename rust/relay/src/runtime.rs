//! The relays' tokio runtime: one worker thread of its own per process (no Python, no GIL),
//! started by the first relay.

use std::sync::OnceLock;

use tokio::runtime::{Builder, Runtime};

static RUNTIME: OnceLock<Runtime> = OnceLock::new();

pub fn runtime() -> &'static Runtime {
    RUNTIME.get_or_init(|| {
        Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("skulk-relays")
            .enable_io()
            .enable_time()
            .build()
            .expect("the relays' runtime could not start")
    })
}
