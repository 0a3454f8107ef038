//! Values in, bytes out: the report's renderers (text, JSON, HTML, plots, the report
//! directory, the correlation's), the Parquet dataset, the `--events` stream, the Prometheus
//! metrics and their HTTP server, the live view and status lines, the annotated copy, and the
//! per-frame printer.

pub mod annotate;
pub mod events;
pub mod live;
pub mod metrics;
pub mod packets;
pub mod parquet;
pub mod report;
