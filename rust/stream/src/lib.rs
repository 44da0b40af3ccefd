//! The byte path of a local stream's tokens. A thread per runner reads the runner's pipe
//! (`relay`); a step's plain token pieces (`frames`) for a stream Python registered as
//! direct are rendered as that stream's server-sent event (`sse`) and written to its
//! socket (`direct`); every other frame is passed on, unchanged and in order, to the
//! pipe the node's event loop reads. Python keeps the request's lifecycle: it registers
//! a stream once its response is under way and takes it back, with the counts and any
//! unsent text, before it writes anything else.

pub mod direct;
pub mod frames;
pub mod relay;
pub mod sse;
