//! Outputs of a capture that runs for long: the Prometheus metrics endpoint (`metrics` builds
//! the text from the analysis state, `http` serves it), and the NDJSON stream of findings as
//! they first hold and flows as they end (`events`).

pub mod events;
pub mod http;
pub mod metrics;
