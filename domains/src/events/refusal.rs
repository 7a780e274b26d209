//! How the engine's refusal of an event's content reads: the client's fault (400), shared by
//! the write step and Segment's identity links.

use svc_core::error::Error;
use svc_engine::EngineError;

/// Engine refusals of the event's content are the client's fault.
pub(crate) fn input_error(e: EngineError) -> Error {
    match e {
        EngineError::Invalid { what, detail } => Error::invalid_input(format!("{what}: {detail}")),
        EngineError::NoIdentity => Error::invalid_input(
            "the event names no known customer id and carries no other usable identity key",
        ),
        other => Error::from(other),
    }
}
