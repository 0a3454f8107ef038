//! Outputs of a capture that runs for long: the Prometheus metrics endpoint (`metrics` builds
//! the text from the analysis state, `http` serves it).

pub mod http;
pub mod metrics;
