//! What the channel's own work costs, when asked (bench/llama_rpc.py): the CPU time of
//! the threads inside its send and recv hooks (TLS and the socket calls themselves, which
//! a plain TCP link pays too; time blocked waiting for bytes is not CPU time). Off by
//! default: then a hook pays one relaxed load.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static MEASURING: AtomicBool = AtomicBool::new(false);
static CPU_NS: AtomicU64 = AtomicU64::new(0);
static SOCKET_NS: AtomicU64 = AtomicU64::new(0);
static CALLS: AtomicU64 = AtomicU64::new(0);

/// Start (or stop) measuring.
pub fn measure(on: bool) {
    MEASURING.store(on, Ordering::Relaxed);
}

/// CPU nanoseconds spent inside the hooks while measuring, the part of it in the socket
/// calls (what a plain TCP link pays too), and how many hook calls.
pub fn spent() -> (u64, u64, u64) {
    (
        CPU_NS.load(Ordering::Relaxed),
        SOCKET_NS.load(Ordering::Relaxed),
        CALLS.load(Ordering::Relaxed),
    )
}

fn thread_cpu_ns() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    u64::try_from(now.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(now.tv_nsec).unwrap_or(0)
}

fn timed<T>(into: &AtomicU64, work: impl FnOnce() -> T) -> T {
    if !MEASURING.load(Ordering::Relaxed) {
        return work();
    }
    let started = thread_cpu_ns();
    let result = work();
    into.fetch_add(thread_cpu_ns().saturating_sub(started), Ordering::Relaxed);
    result
}

/// Run a hook's `work`, counting its thread's CPU time when measuring.
pub fn counted<T>(work: impl FnOnce() -> T) -> T {
    if MEASURING.load(Ordering::Relaxed) {
        CALLS.fetch_add(1, Ordering::Relaxed);
    }
    timed(&CPU_NS, work)
}

/// Run a socket call inside a hook, counting its CPU time apart when measuring.
pub fn socket_call<T>(work: impl FnOnce() -> T) -> T {
    timed(&SOCKET_NS, work)
}
