//! `--metrics`: the server, bound before any work, and the output that feeds it.

use crate::cli::ReportOptions;
use crate::common::error::Error;
use crate::outputs::metrics::http::MetricsServer;
use crate::outputs::metrics::publish::MetricsOutput;

/// Binds the server of `--metrics` (before any work, so that a bad address fails at once) and
/// makes the output that publishes to it. `report_is_whole`: the report covers the whole
/// capture (a file), so its findings are the final ones.
pub(super) fn open_metrics(
    opts: &ReportOptions,
    report_is_whole: bool,
) -> Result<Option<(MetricsServer, Box<MetricsOutput>)>, Error> {
    let Some(cfg) = &opts.metrics else {
        return Ok(None);
    };
    let server = MetricsServer::bind(&cfg.addr)
        .map_err(|e| Error::Usage(format!("--metrics={}: cannot listen there: {e}", cfg.addr)))?;
    stderr_line!("roce-sniff: metrics at http://{}/metrics", server.addr);
    let output = MetricsOutput::new(cfg.max_qps, server.publisher(), report_is_whole)
        .map_err(|e| Error::Live(format!("--metrics: cannot start its thread: {e}")))?;
    Ok(Some((server, Box::new(output))))
}

/// The final figures (published when the capture ended) served until SIGINT or SIGTERM, so
/// that a scrape after the end gets them.
pub(super) fn serve_final(server: &MetricsServer) {
    let stop = crate::common::signals::flag();
    // An earlier Ctrl-C ended the read: the report is out, and so is the wait.
    if stop.swap(false, std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    stderr_line!(
        "roce-sniff: the capture is analysed; serving its final metrics at http://{}/metrics until SIGINT or SIGTERM",
        server.addr
    );
    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
